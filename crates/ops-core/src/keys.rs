//! Rows named by their key: an exact, flat match for upserts, their deletes and their conflict
//! checks, whatever the number of keys.
//!
//! An upsert names the rows it reads, replaces and depends on by the values of its key columns.
//! As an Iceberg predicate that is an `OR` of one `AND` per key — a tree as deep as the chunk is
//! long, which overflowed the stack at 100,000 two-column keys (binding, cloning and evaluating
//! it recurse) and costs one comparison per key and row. A [`KeySet`] instead holds the distinct
//! keys in arrow's row format in a hash table: a row is one of the keys when its key's encoding
//! is in the table — one probe per row, whatever the number of keys or key columns.
//!
//! Where files must be chosen without reading them, the set answers from statistics:
//! - [`KeySet::pruning_predicate`]: one flat conjunct per key column — the column `IN` its
//!   distinct values when they are at most [`IN_LIST_MAX`], else `min <= col <= max` — TRUE for
//!   every key, to push into a scan (files and row groups are skipped by it; the rows read are
//!   then matched by the set).
//! - [`KeySet::may_match`]: a data file's column bounds against the keys, as Java's inclusive
//!   metrics evaluator judges `OR(AND(col = v, ...), ...)`: the file may hold one of the keys
//!   when some key has every column within the file's bounds (missing or incomparable bounds
//!   allow anything). Deletes by key ([`crate::ops::overwrite::OverwriteBuilder::delete_keys`])
//!   rewrite only such files, and conflict detection
//!   ([`crate::ops::overwrite::OverwriteBuilder::conflict_detection_keys`]) flags a concurrent
//!   commit that added or removed one, as Java's `MergingSnapshotProducer` does with a filter.
//!
//! Equality is SQL's, on values: a NULL key is refused (NULL equals nothing) and so is NaN;
//! `-0.0` equals `0.0` (both are encoded as `0.0`). Key columns are top-level columns named as
//! in the table's current schema; a table column of another Arrow type than the set's (a key
//! column widened since) is cast to the set's type before it is matched.

use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, RecordBatch, Scalar, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;
use hashbrown::{DefaultHashBuilder, HashTable};
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{DataFile, Datum, PrimitiveType, Schema, Type};
use iceberg::table::Table;

use crate::{Error, Result};

/// Up to this many distinct values of a key column, [`KeySet::pruning_predicate`] lists them
/// (`IN`); beyond, it gives their range. iceberg's reader tests an `IN` list one literal at a
/// time for every row it reads, so a long list costs more than the files it prunes.
pub const IN_LIST_MAX: usize = 16;

const FIELD_ID: &str = "PARQUET:field_id";

/// A set of distinct keys over named key columns (see the module docs).
pub struct KeySet {
    names: Vec<String>,
    /// The distinct keys, one array per key column, in first-seen order (floats normalised).
    columns: Vec<ArrayRef>,
    converter: RowConverter,
    rows: Rows,
    /// Positions in `rows`, by the hash of the row's bytes.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("names", &self.names)
            .field("keys", &self.len())
            .finish_non_exhaustive()
    }
}

impl KeySet {
    /// The distinct keys of `columns` (one array per key column named by `names`, all of one
    /// length), in first-seen order. A NULL or NaN key value is an error naming the column.
    pub fn new(
        names: impl IntoIterator<Item = impl Into<String>>,
        columns: Vec<ArrayRef>,
    ) -> Result<Self> {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        if names.is_empty() || names.len() != columns.len() {
            return Err(Error::InvalidInput(format!(
                "a key set needs one array per key column: {} name(s), {} array(s)",
                names.len(),
                columns.len()
            )));
        }
        let len = columns[0].len();
        if len > u32::MAX as usize {
            return Err(Error::InvalidInput(format!(
                "a key set holds at most {} keys, not {len}",
                u32::MAX
            )));
        }
        let mut normalised = Vec::with_capacity(columns.len());
        for (name, column) in names.iter().zip(&columns) {
            if column.len() != len {
                return Err(Error::InvalidInput(format!(
                    "key column '{name}' has {} values, the first key column {len}",
                    column.len()
                )));
            }
            if column.null_count() > 0 {
                return Err(Error::InvalidInput(format!(
                    "key column '{name}' holds {} NULL value(s); a NULL key equals no row",
                    column.null_count()
                )));
            }
            if has_nan(column) {
                return Err(Error::InvalidInput(format!(
                    "key column '{name}' holds NaN; a NaN key equals no row"
                )));
            }
            normalised.push(normalise(column)?);
        }
        let converter = crate::rows::converter(normalised.iter().map(|c| c.data_type()))?;
        let rows = crate::rows::convert(&converter, &normalised)?;
        let hasher = DefaultHashBuilder::default();
        let mut index: HashTable<u32> = HashTable::with_capacity(len);
        let mut first: Vec<u32> = Vec::with_capacity(len);
        for i in 0..len {
            let row = rows.row(i);
            let bytes = row.as_ref();
            let hash = hasher.hash_one(bytes);
            let found = index
                .find(hash, |&j| rows.row(j as usize).as_ref() == bytes)
                .is_some();
            if !found {
                index.insert_unique(hash, i as u32, |&j| {
                    hasher.hash_one(rows.row(j as usize).as_ref())
                });
                first.push(i as u32);
            }
        }
        if first.len() == len {
            return Ok(Self {
                names,
                columns: normalised,
                converter,
                rows,
                index,
                hasher,
            });
        }
        // Duplicates: keep the first of each, then index the distinct keys afresh.
        let take = UInt32Array::from(first);
        let distinct = normalised
            .iter()
            .map(|c| arrow_select::take::take(c.as_ref(), &take, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Self::new(names, distinct)
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.rows.num_rows()
    }

    /// True when the set holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key columns' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The distinct keys, one array per key column, in first-seen order.
    pub fn columns(&self) -> &[ArrayRef] {
        &self.columns
    }

    /// For each row of `columns` (one array per key column, in the set's order), the position
    /// of its key among [`Self::columns`], or `None` when it is not one of them (a NULL or NaN
    /// value is never one). Columns of another type are cast to the set's first.
    pub fn positions(&self, columns: &[ArrayRef]) -> Result<Vec<Option<u32>>> {
        let rows = self.encode(columns)?;
        Ok((0..rows.num_rows())
            .map(|i| self.position(rows.row(i).as_ref()))
            .collect())
    }

    /// For each row of `columns`, whether its key is in the set (see [`Self::positions`]).
    pub fn contains_each(&self, columns: &[ArrayRef]) -> Result<BooleanArray> {
        let rows = self.encode(columns)?;
        Ok((0..rows.num_rows())
            .map(|i| Some(self.position(rows.row(i).as_ref()).is_some()))
            .collect())
    }

    fn position(&self, bytes: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one(bytes);
        self.index
            .find(hash, |&j| self.rows.row(j as usize).as_ref() == bytes)
            .copied()
    }

    fn encode(&self, columns: &[ArrayRef]) -> Result<Rows> {
        if columns.len() != self.columns.len() {
            return Err(Error::InvalidInput(format!(
                "{} key column(s) given for a key set over {}",
                columns.len(),
                self.names.join(", ")
            )));
        }
        let columns = columns
            .iter()
            .zip(&self.columns)
            .map(|(c, want)| {
                let c = if c.data_type() == want.data_type() {
                    c.clone()
                } else {
                    // A value the set's type cannot hold is NULL after the cast: not a key.
                    arrow_cast::cast(c, want.data_type())?
                };
                normalise(&c)
            })
            .collect::<Result<Vec<_>>>()?;
        crate::rows::convert(&self.converter, &columns)
    }

    /// The field ids of the key columns in `schema` (a table's current schema): top-level
    /// columns by name.
    pub fn field_ids(&self, schema: &Schema) -> Result<Vec<i32>> {
        self.names
            .iter()
            .map(|n| {
                schema
                    .as_struct()
                    .field_by_name(n)
                    .map(|f| f.id)
                    .ok_or_else(|| {
                        Error::InvalidInput(format!(
                            "key column '{n}' is not a top-level column of the table's current \
                             schema"
                        ))
                    })
            })
            .collect()
    }

    /// For each row of `batch` (in a table's current schema, columns carrying their field ids
    /// as `PARQUET:field_id` metadata), whether its key — the columns with field ids `ids`,
    /// from [`Self::field_ids`] — is in the set. A key column the batch lacks is NULL: no row
    /// matches.
    pub fn matches(&self, ids: &[i32], batch: &RecordBatch) -> Result<BooleanArray> {
        let schema = batch.schema();
        let mut columns = Vec::with_capacity(ids.len());
        for id in ids {
            let found = schema.fields().iter().position(|f| {
                f.metadata()
                    .get(FIELD_ID)
                    .and_then(|v| v.parse::<i32>().ok())
                    == Some(*id)
            });
            match found {
                Some(i) => columns.push(batch.column(i).clone()),
                None => return Ok(BooleanArray::from(vec![false; batch.num_rows()])),
            }
        }
        self.contains_each(&columns)
    }

    /// A predicate TRUE for every key (see the module docs), to prune the files and row groups
    /// a scan of `table` reads; the rows it reads still have to be matched with the set. One
    /// conjunct per key column, so its depth does not grow with the keys. Columns it cannot
    /// bound safely are left out (left unbounded): `float`/`double` (`-0.0` and `0.0` are one
    /// key, but not one value to iceberg's comparisons), `time` (iceberg 0.10.1's reader cannot
    /// compare a time literal), and a column whose type changed in the table's history
    /// (iceberg 0.10.1 compares the bounds of files written before a widening in their old
    /// type, and would skip such files).
    pub fn pruning_predicate(&self, table: &Table) -> Predicate {
        let md = table.metadata();
        let schema = md.current_schema();
        let mut out = Predicate::AlwaysTrue;
        for (name, column) in self.names.iter().zip(&self.columns) {
            let Some(field) = schema.as_struct().field_by_name(name) else {
                continue;
            };
            let Type::Primitive(ty) = field.field_type.as_ref() else {
                continue;
            };
            if matches!(
                ty,
                PrimitiveType::Float | PrimitiveType::Double | PrimitiveType::Time
            ) {
                continue;
            }
            let stable = md.schemas_iter().all(|s| {
                s.field_by_id(field.id)
                    .is_none_or(|f| f.field_type == field.field_type)
            });
            if !stable {
                continue;
            }
            if let Some(p) = column_predicate(name, column, ty) {
                out = match out {
                    Predicate::AlwaysTrue => p,
                    q => q.and(p),
                };
            }
        }
        out
    }

    /// Whether `file`'s column statistics allow one of the keys (see the module docs); `ids`
    /// are the key columns' field ids ([`Self::field_ids`]). Inclusive: true whenever the
    /// statistics cannot rule the keys out.
    pub fn may_match(&self, ids: &[i32], file: &DataFile) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut mask: Option<BooleanArray> = None;
        for (column, id) in self.columns.iter().zip(ids) {
            let nulls = file.null_value_counts().get(id);
            let values = file.value_counts().get(id);
            if let (Some(n), Some(v)) = (nulls, values)
                && n == v
            {
                // Only NULLs (or no rows) in this column: no key is there.
                return false;
            }
            if matches!(column.data_type(), DataType::Float32 | DataType::Float64) {
                continue;
            }
            let lower = file.lower_bounds().get(id).and_then(|d| bound(d, column));
            let upper = file.upper_bounds().get(id).and_then(|d| bound(d, column));
            let mut col_mask: Option<BooleanArray> = None;
            for (b, lower_bound) in [(lower, true), (upper, false)] {
                let Some(b) = b else { continue };
                let cmp = if lower_bound {
                    arrow_ord::cmp::gt_eq(column, &Scalar::new(b))
                } else {
                    arrow_ord::cmp::lt_eq(column, &Scalar::new(b))
                };
                let Ok(cmp) = cmp else { continue };
                col_mask = Some(match col_mask {
                    None => cmp,
                    Some(m) => match arrow_arith::boolean::and(&m, &cmp) {
                        Ok(m) => m,
                        Err(_) => return true,
                    },
                });
            }
            let Some(col_mask) = col_mask else { continue };
            if col_mask.true_count() == 0 {
                return false;
            }
            mask = Some(match mask {
                None => col_mask,
                Some(m) => match arrow_arith::boolean::and(&m, &col_mask) {
                    Ok(m) => m,
                    Err(_) => return true,
                },
            });
        }
        mask.is_none_or(|m| m.true_count() > 0)
    }
}

/// Key columns encoded as a [`KeySet`] encodes them — arrow's row format, `-0.0` as `0.0`,
/// columns of another type cast to the encoder's first — for a caller that keeps its own map
/// from key to something (an upsert's pre-pass: each key's last batch). A NULL key value
/// encodes (as arrow's row format's null) and so does NaN: such rows are refused by the
/// upsert itself, the encoder does not judge them.
pub struct KeyEncoder {
    types: Vec<DataType>,
    converter: RowConverter,
}

impl std::fmt::Debug for KeyEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEncoder")
            .field("types", &self.types)
            .finish_non_exhaustive()
    }
}

impl KeyEncoder {
    /// An encoder for key columns of these Arrow types, in order.
    pub fn new(types: Vec<DataType>) -> Result<Self> {
        let converter = crate::rows::converter(types.iter())?;
        Ok(Self { types, converter })
    }

    /// The rows of `columns` (one array per key column, in the encoder's order), encoded.
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows> {
        if columns.len() != self.types.len() {
            return Err(Error::InvalidInput(format!(
                "{} key column(s) given to an encoder of {}",
                columns.len(),
                self.types.len()
            )));
        }
        let columns = columns
            .iter()
            .zip(&self.types)
            .map(|(c, want)| {
                let c = if c.data_type() == want {
                    c.clone()
                } else {
                    arrow_cast::cast(c, want)?
                };
                normalise(&c)
            })
            .collect::<Result<Vec<_>>>()?;
        crate::rows::convert(&self.converter, &columns)
    }
}

/// `bound` as a one-element array of `column`'s type, or `None` when it does not convert (an
/// incomparable bound: no constraint).
fn bound(bound: &Datum, column: &ArrayRef) -> Option<ArrayRef> {
    let array = crate::eval::literal_array(bound).ok()?;
    let array = arrow_cast::cast(&array, column.data_type()).ok()?;
    (array.null_count() == 0).then_some(array)
}

fn has_nan(column: &ArrayRef) -> bool {
    match column.data_type() {
        DataType::Float32 => column
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .any(|v| v.is_nan()),
        DataType::Float64 => column
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .any(|v| v.is_nan()),
        _ => false,
    }
}

/// Floats with `-0.0` as `0.0` (adding `+0.0` changes nothing else); other columns unchanged.
fn normalise(column: &ArrayRef) -> Result<ArrayRef> {
    match column.data_type() {
        DataType::Float32 | DataType::Float64 => {
            let zero = Scalar::new(arrow_cast::cast(
                &(Arc::new(Float64Array::from(vec![0.0])) as ArrayRef),
                column.data_type(),
            )?);
            Ok(arrow_arith::numeric::add(column, &zero)?)
        }
        _ => Ok(column.clone()),
    }
}

/// The conjunct for one key column: `IN` its distinct values when few, else its range.
fn column_predicate(name: &str, column: &ArrayRef, ty: &PrimitiveType) -> Option<Predicate> {
    if column.is_empty() {
        return None;
    }
    // Arrow's row order is Iceberg's order for every type handled here (numbers, dates and
    // times by value, strings, binary, fixed and uuid bytewise, false < true).
    let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())]).ok()?;
    let rows = converter
        .convert_columns(std::slice::from_ref(column))
        .ok()?;
    let (mut min, mut max) = (0usize, 0usize);
    let mut distinct: Vec<usize> = Vec::new();
    let mut few = true;
    for i in 0..rows.num_rows() {
        let r = rows.row(i);
        if r < rows.row(min) {
            min = i;
        }
        if r > rows.row(max) {
            max = i;
        }
        if few && !distinct.iter().any(|&j| rows.row(j) == r) {
            distinct.push(i);
            few = distinct.len() <= IN_LIST_MAX;
        }
    }
    let reference = || Reference::new(name.to_string());
    if few {
        let values = distinct
            .iter()
            .map(|&i| datum_at(column, i, ty))
            .collect::<Option<Vec<_>>>()?;
        return Some(reference().is_in(values));
    }
    let lo = datum_at(column, min, ty)?;
    let hi = datum_at(column, max, ty)?;
    Some(
        reference()
            .greater_than_or_equal_to(lo)
            .and(reference().less_than_or_equal_to(hi)),
    )
}

/// The value at `row` of `column` as an Iceberg literal of type `ty`; `None` for a type this
/// does not convert (the column is then left unbounded).
fn datum_at(column: &ArrayRef, row: usize, ty: &PrimitiveType) -> Option<Datum> {
    if column.is_null(row) {
        return None;
    }
    let i64_at = |c: &ArrayRef| -> Option<i64> {
        let raw = arrow_cast::cast(&c.slice(row, 1), &DataType::Int64).ok()?;
        Some(raw.as_primitive::<Int64Type>().value(0))
    };
    Some(match (ty, column.data_type()) {
        (PrimitiveType::Boolean, DataType::Boolean) => Datum::bool(column.as_boolean().value(row)),
        (PrimitiveType::Int, DataType::Int32) => {
            Datum::int(column.as_primitive::<Int32Type>().value(row))
        }
        (PrimitiveType::Long, DataType::Int64) => {
            Datum::long(column.as_primitive::<Int64Type>().value(row))
        }
        (PrimitiveType::Date, DataType::Date32) => {
            Datum::date(column.as_primitive::<Date32Type>().value(row))
        }
        (PrimitiveType::Decimal { .. }, DataType::Decimal128(..)) => Datum::try_from_bytes(
            &column
                .as_primitive::<Decimal128Type>()
                .value(row)
                .to_be_bytes(),
            ty.clone(),
        )
        .ok()?,
        (
            PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs,
            DataType::Timestamp(..),
        ) => Datum::try_from_bytes(&i64_at(column)?.to_le_bytes(), ty.clone()).ok()?,
        (PrimitiveType::String, DataType::Utf8) => {
            Datum::string(column.as_string::<i32>().value(row))
        }
        (PrimitiveType::String, DataType::LargeUtf8) => {
            Datum::string(column.as_string::<i64>().value(row))
        }
        (PrimitiveType::String, DataType::Utf8View) => {
            Datum::string(column.as_string_view().value(row))
        }
        (PrimitiveType::Uuid | PrimitiveType::Fixed(_), DataType::FixedSizeBinary(_)) => {
            Datum::try_from_bytes(column.as_fixed_size_binary().value(row), ty.clone()).ok()?
        }
        (PrimitiveType::Binary, DataType::Binary) => {
            Datum::binary(column.as_binary::<i32>().value(row).iter().copied())
        }
        (PrimitiveType::Binary, DataType::LargeBinary) => {
            Datum::binary(column.as_binary::<i64>().value(row).iter().copied())
        }
        _ => return None,
    })
}

/// The depth of a predicate's tree (for tests: a key predicate must stay flat).
#[cfg(test)]
pub(crate) fn depth(p: &Predicate) -> usize {
    match p {
        Predicate::And(e) | Predicate::Or(e) => {
            1 + e.inputs().iter().map(|i| depth(i)).max().unwrap_or(0)
        }
        Predicate::Not(e) => 1 + e.inputs().iter().map(|i| depth(i)).max().unwrap_or(0),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema as ArrowSchema};
    use iceberg::spec::{DataContentType, DataFileBuilder, DataFileFormat, Struct};

    use super::*;

    /// An encoder gives one key one encoding: `-0.0` as `0.0`, a column of another type cast.
    #[test]
    fn an_encoder_encodes_a_key_as_its_value() {
        let enc = KeyEncoder::new(vec![DataType::Float64, DataType::Int64]).unwrap();
        let rows = enc
            .encode(&[
                Arc::new(Float64Array::from(vec![0.0, -0.0, 1.5])) as ArrayRef,
                Arc::new(arrow_array::Int32Array::from(vec![7, 7, 7])) as ArrayRef,
            ])
            .unwrap();
        assert_eq!(rows.row(0).as_ref(), rows.row(1).as_ref());
        assert_ne!(rows.row(0).as_ref(), rows.row(2).as_ref());
        assert!(
            enc.encode(&[Arc::new(Float64Array::from(vec![0.0])) as ArrayRef])
                .is_err()
        );
    }

    fn set(a: Vec<i64>, b: Vec<&str>) -> KeySet {
        KeySet::new(
            ["a", "b"],
            vec![
                Arc::new(Int64Array::from(a)) as ArrayRef,
                Arc::new(StringArray::from(b)) as ArrayRef,
            ],
        )
        .unwrap()
    }

    #[test]
    fn keys_are_distinct_and_found_by_value_in_any_arrow_type() {
        let s = set(vec![1, 2, 1, 3], vec!["x", "y", "x", "x"]);
        assert_eq!(s.len(), 3);
        let probe_a: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![
            Some(3),
            Some(1),
            None,
            Some(2),
        ]));
        let probe_b: ArrayRef = Arc::new(arrow_array::LargeStringArray::from(vec![
            "x", "x", "x", "x",
        ]));
        assert_eq!(
            s.positions(&[probe_a, probe_b]).unwrap(),
            vec![Some(2), Some(0), None, None]
        );
    }

    #[test]
    fn null_and_nan_keys_are_refused_and_negative_zero_is_zero() {
        let err = KeySet::new(
            ["k"],
            vec![Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef],
        )
        .unwrap_err();
        assert!(err.to_string().contains("'k' holds 1 NULL"), "{err}");
        let err = KeySet::new(
            ["f"],
            vec![Arc::new(Float64Array::from(vec![1.0, f64::NAN])) as ArrayRef],
        )
        .unwrap_err();
        assert!(err.to_string().contains("NaN"), "{err}");
        let s = KeySet::new(
            ["f"],
            vec![Arc::new(Float64Array::from(vec![0.0, 2.5])) as ArrayRef],
        )
        .unwrap();
        let probe: ArrayRef = Arc::new(Float64Array::from(vec![-0.0, f64::NAN, 2.5, 1.0]));
        let got: Vec<Option<bool>> = s.contains_each(&[probe]).unwrap().iter().collect();
        assert_eq!(got, vec![Some(true), Some(false), Some(true), Some(false)]);
    }

    #[test]
    fn a_million_composite_keys_make_a_flat_predicate() {
        let n = 1_000_000i64;
        let a: Vec<i64> = (0..n).collect();
        let b: Vec<String> = (0..n).map(|i| format!("t{}", i % 7)).collect();
        let s = KeySet::new(
            ["a", "b"],
            vec![
                Arc::new(Int64Array::from(a)) as ArrayRef,
                Arc::new(StringArray::from(b)) as ArrayRef,
            ],
        )
        .unwrap();
        assert_eq!(s.len(), n as usize);
        let ty = PrimitiveType::Long;
        let p = column_predicate("a", &s.columns()[0], &ty).unwrap();
        assert_eq!(p.to_string(), "(a >= 0) AND (a <= 999999)");
        let p2 = column_predicate("b", &s.columns()[1], &PrimitiveType::String).unwrap();
        assert!(matches!(p2, Predicate::Set(_)), "{p2}");
        assert!(depth(&p.and(p2)) <= 3);
    }

    fn file(bounds: &[(i32, Datum, Datum)], counts: &[(i32, u64, u64)]) -> DataFile {
        DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_path("f.parquet".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(Struct::empty())
            .record_count(10)
            .file_size_in_bytes(100)
            .lower_bounds(bounds.iter().map(|b| (b.0, b.1.clone())).collect())
            .upper_bounds(bounds.iter().map(|b| (b.0, b.2.clone())).collect())
            .value_counts(counts.iter().map(|c| (c.0, c.1)).collect())
            .null_value_counts(counts.iter().map(|c| (c.0, c.2)).collect())
            .build()
            .unwrap()
    }

    /// A file may hold a key only when one key has every column within the file's bounds: the
    /// per-column ranges alone would say yes for (1, "z") against keys (1, "a") and (9, "z").
    #[test]
    fn files_are_matched_by_whole_keys_within_their_bounds() {
        let s = set(vec![1, 9], vec!["a", "z"]);
        let ids = [1, 2];
        let f = |lo: i64, hi: i64, slo: &str, shi: &str| {
            file(
                &[
                    (1, Datum::long(lo), Datum::long(hi)),
                    (2, Datum::string(slo), Datum::string(shi)),
                ],
                &[],
            )
        };
        assert!(s.may_match(&ids, &f(0, 5, "a", "c")));
        assert!(
            !s.may_match(&ids, &f(0, 5, "m", "z")),
            "(1, a) and (9, z) lie outside"
        );
        assert!(!s.may_match(&ids, &f(2, 8, "a", "z")));
        assert!(s.may_match(&ids, &f(9, 9, "z", "zz")));
        // Bounds written in an older type (int before a widening to long) still compare.
        let widened = file(&[(1, Datum::int(0), Datum::int(5))], &[]);
        assert!(s.may_match(&ids, &widened));
        let widened = file(&[(1, Datum::int(2), Datum::int(5))], &[]);
        assert!(!s.may_match(&ids, &widened));
        // No statistics: anything may be there; a column of NULLs only holds no key.
        assert!(s.may_match(&ids, &file(&[], &[])));
        assert!(!s.may_match(&ids, &file(&[], &[(2, 10, 10)])));
    }

    #[test]
    fn batches_are_matched_by_field_id() {
        let s = set(vec![1, 2], vec!["x", "y"]);
        let field = |name: &str, id: i32, t: DataType| {
            Field::new(name, t, true)
                .with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())]))
        };
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(vec![
                field("renamed_b", 2, DataType::Utf8),
                field("a", 1, DataType::Int64),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["x", "x", "y"])),
                Arc::new(Int64Array::from(vec![1, 2, 2])),
            ],
        )
        .unwrap();
        let got: Vec<Option<bool>> = s.matches(&[1, 2], &batch).unwrap().iter().collect();
        assert_eq!(got, vec![Some(true), Some(false), Some(true)]);
    }
}
