//! Upsert one chunk: copy-on-write, one commit, unchanged rows untouched.
//!
//! 1. Refuse a chunk holding a key twice (earlier chunks stay committed).
//! 2. Read the destination rows with the chunk's keys (a key predicate pushed into the scan) at
//!    the current snapshot `S`, and classify every chunk row: new key → insert; same key and
//!    same values → unchanged (not written); same key, other values → update.
//! 3. One `OverwriteBuilder` commit: delete the updated keys' rows (copy-on-write
//!    `overwrite_filter`), add the inserted and updated rows, validated from `S` with the chunk's
//!    keys as the conflict filter — a concurrent writer touching those keys is a conflict, not a
//!    silent lost update. Nothing to write → no commit.
//!
//! Keys: any primitive column but `time` (iceberg 0.10.1's reader cannot filter on it) —
//! boolean, int, long, float, double, decimal, date, timestamp(tz)(_ns), string, uuid, fixed,
//! binary. A NULL key is refused, as the seed's PyIceberg `Table.upsert` refuses it; so are NaN
//! and -0.0 float keys, which a key filter cannot match one-to-one.

use std::collections::HashMap;
use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType};
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::ops::overwrite::OverwriteBuilder;

use crate::{MigrationError, Result};

/// What one chunk's upsert did.
pub(crate) struct UpsertOutcome {
    pub table: Option<Table>,
    pub snapshot: Option<i64>,
    pub inserted: u64,
    pub updated: u64,
}

pub(crate) async fn upsert_chunk(
    handle: &CatalogHandle,
    ident: &TableIdent,
    dest: &Table,
    keys: &[String],
    batches: &[RecordBatch],
    properties: HashMap<String, String>,
) -> Result<UpsertOutcome> {
    let target = ops_core::write::table_arrow_schema(dest)?;
    let conformed = batches
        .iter()
        .map(|b| ops_core::write::conform(b, &target))
        .collect::<ops_core::Result<Vec<_>>>()?;
    let batch = arrow_select::concat::concat_batches(&target, &conformed)?;
    let key_idx: Vec<usize> = keys
        .iter()
        .map(|k| {
            target.index_of(k).map_err(|_| {
                MigrationError::InvalidInput(format!(
                    "upsert key '{k}' is not a destination column"
                ))
            })
        })
        .collect::<Result<_>>()?;
    let key_converter = converter(key_idx.iter().map(|&i| batch.column(i).data_type()))?;
    let row_converter = converter(batch.columns().iter().map(|c| c.data_type()))?;
    let key_cols: Vec<ArrayRef> = key_idx.iter().map(|&i| batch.column(i).clone()).collect();
    let schema = dest.metadata().current_schema();
    let mut key_datums = Vec::with_capacity(keys.len());
    for (k, col) in keys.iter().zip(&key_cols) {
        // As the seed's PyIceberg `Table.upsert` (which fails on a None key literal): a NULL key
        // cannot be matched by the key filter, so it is refused rather than guessed at.
        if col.null_count() > 0 {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key column '{k}' holds {} null value(s) in this batch; upsert keys must \
                 be set (a NULL key matches no row) — filter them out (row_filter \
                 \"{k} IS NOT NULL\") or migrate those rows with write_mode append",
                col.null_count()
            )));
        }
        let ty = schema
            .field_by_name(k)
            .and_then(|f| f.field_type.as_primitive_type())
            .ok_or_else(|| {
                MigrationError::InvalidInput(format!(
                    "upsert key '{k}' is not a primitive column of the destination; keys must \
                     be primitive columns"
                ))
            })?;
        key_datums.push(datums(col, ty, k)?);
    }
    let chunk_keys = key_converter.convert_columns(&key_cols)?;
    let chunk_rows = row_converter.convert_columns(batch.columns())?;
    let mut first_row: HashMap<Vec<u8>, usize> = HashMap::new();
    for i in 0..batch.num_rows() {
        if let Some(&j) = first_row.get(chunk_keys.row(i).as_ref()) {
            return Err(MigrationError::InvalidInput(format!(
                "upsert batch holds key ({}) twice (rows {j} and {i} of the batch); \
                 deduplicate the source on the upsert keys",
                describe_key(&key_cols, i)
            )));
        }
        first_row.insert(chunk_keys.row(i).as_ref().to_vec(), i);
    }

    let all_keys = key_predicate(keys, &key_datums, 0..batch.num_rows());
    let since = dest.metadata().current_snapshot_id();
    let mut existing: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    if since.is_some() {
        // The key range, not the key list: iceberg's reader tests an `IN` list one literal at a
        // time for every row (minutes for a 50,000-key chunk); a range prunes files by their
        // bounds just as well and costs two comparisons a row. Rows are matched exactly below.
        let range = key_range(keys, &key_datums);
        let mut stream = ops_core::scan::scan_filtered(dest, since, Some(range)).await?;
        while let Some(b) = stream.next().await {
            let b = ops_core::write::conform(&b?, &target)?;
            let kc: Vec<ArrayRef> = key_idx.iter().map(|&i| b.column(i).clone()).collect();
            let ks = key_converter.convert_columns(&kc)?;
            let rs = row_converter.convert_columns(b.columns())?;
            for i in 0..b.num_rows() {
                let key = ks.row(i);
                if first_row.contains_key(key.as_ref()) {
                    existing.insert(key.as_ref().to_vec(), rs.row(i).as_ref().to_vec());
                }
            }
        }
    }
    let mut write: Vec<u32> = Vec::new();
    let mut updated: Vec<usize> = Vec::new();
    let mut inserted = 0u64;
    for i in 0..batch.num_rows() {
        match existing.get(chunk_keys.row(i).as_ref()) {
            None => {
                inserted += 1;
                write.push(i as u32);
            }
            Some(row) if row.as_slice() == chunk_rows.row(i).as_ref() => {}
            Some(_) => {
                updated.push(i);
                write.push(i as u32);
            }
        }
    }
    if write.is_empty() {
        return Ok(UpsertOutcome {
            table: None,
            snapshot: None,
            inserted: 0,
            updated: 0,
        });
    }
    let rows = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(write))?;
    let written = ops_core::write::write_files(dest, futures::stream::iter([Ok(rows)])).await?;
    let mut builder = OverwriteBuilder::new(handle, ident.clone())
        .add_written(written)
        .validate_from_snapshot(since)
        .conflict_detection_filter(all_keys)
        .with_properties(properties);
    if !updated.is_empty() {
        builder =
            builder.overwrite_filter(key_predicate(keys, &key_datums, updated.iter().copied()));
    }
    let (table, metrics) = builder.await?;
    Ok(UpsertOutcome {
        table: Some(table),
        snapshot: Some(metrics.snapshot_id),
        inserted,
        updated: updated.len() as u64,
    })
}

fn converter<'a>(types: impl Iterator<Item = &'a DataType>) -> Result<RowConverter> {
    Ok(RowConverter::new(
        types.map(|t| SortField::new(t.clone())).collect(),
    )?)
}

fn describe_key(cols: &[ArrayRef], row: usize) -> String {
    let options = FormatOptions::default().with_null("null");
    cols.iter()
        .map(|c| {
            ArrayFormatter::try_new(c.as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The key values of `col` (no nulls: refused before) as Iceberg literals of the key column's
/// type `ty`, for the key filter.
///
/// Float and double keys: NaN is refused (it equals nothing under IEEE comparison, so its row
/// could never be found again and every run would insert it anew), and so is -0.0 (equal to 0.0
/// under IEEE comparison — the overwrite filter's — but a different key to arrow's row format),
/// so each key value has one meaning.
fn datums(col: &ArrayRef, ty: &PrimitiveType, name: &str) -> Result<Vec<Datum>> {
    let rows = col.len();
    let unsupported = || {
        MigrationError::InvalidInput(format!(
            "upsert key '{name}' has type {ty} (Arrow {}), which upsert keys do not support; use \
             a boolean, int, long, float, double, decimal, date, timestamp, timestamptz, string, \
             uuid, fixed or binary column",
            col.data_type()
        ))
    };
    let as_i64 = |col: &ArrayRef| -> Result<Vec<i64>> {
        let raw = arrow_cast::cast(col, &DataType::Int64)?;
        Ok(raw.as_primitive::<Int64Type>().values().to_vec())
    };
    let float_check = |v: f64, row: usize| -> Result<()> {
        if v.is_nan() || (v == 0.0 && v.is_sign_negative()) {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key '{name}' is {} in row {row} of this batch; a NaN or -0.0 float key \
                 cannot be matched reliably (NaN equals nothing, -0.0 equals 0.0 in a filter) \
                 — clean the key or filter those rows out",
                if v.is_nan() { "NaN" } else { "-0.0" }
            )));
        }
        Ok(())
    };
    Ok(match (ty, col.data_type()) {
        (PrimitiveType::Boolean, DataType::Boolean) => {
            let a = col.as_boolean();
            (0..rows).map(|r| Datum::bool(a.value(r))).collect()
        }
        (PrimitiveType::Int, DataType::Int32) => {
            let a = col.as_primitive::<Int32Type>();
            (0..rows).map(|r| Datum::int(a.value(r))).collect()
        }
        (PrimitiveType::Date, DataType::Date32) => {
            let a = col.as_primitive::<Date32Type>();
            (0..rows).map(|r| Datum::date(a.value(r))).collect()
        }
        (PrimitiveType::Long, DataType::Int64) => {
            let a = col.as_primitive::<Int64Type>();
            (0..rows).map(|r| Datum::long(a.value(r))).collect()
        }
        (PrimitiveType::Float, DataType::Float32) => {
            let a = col.as_primitive::<Float32Type>();
            (0..rows)
                .map(|r| {
                    float_check(f64::from(a.value(r)), r)?;
                    Ok(Datum::float(a.value(r)))
                })
                .collect::<Result<_>>()?
        }
        (PrimitiveType::Double, DataType::Float64) => {
            let a = col.as_primitive::<Float64Type>();
            (0..rows)
                .map(|r| {
                    float_check(a.value(r), r)?;
                    Ok(Datum::double(a.value(r)))
                })
                .collect::<Result<_>>()?
        }
        (PrimitiveType::Decimal { .. }, DataType::Decimal128(..)) => {
            let a = col.as_primitive::<Decimal128Type>();
            (0..rows)
                .map(|r| Datum::try_from_bytes(&a.value(r).to_be_bytes(), ty.clone()))
                .collect::<iceberg::Result<_>>()?
        }
        // iceberg 0.10.1's reader cannot turn a time literal into an Arrow filter (it panics),
        // and the key lookup is such a filter.
        (PrimitiveType::Time, _) => {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key '{name}' has type time, which iceberg 0.10.1 cannot filter on; use \
                 a long key (microseconds since midnight) or another key column"
            )));
        }
        (
            PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs,
            DataType::Timestamp(..),
        ) => as_i64(col)?
            .into_iter()
            .map(|v| Datum::try_from_bytes(&v.to_le_bytes(), ty.clone()))
            .collect::<iceberg::Result<_>>()?,
        (PrimitiveType::String, DataType::Utf8) => {
            let a = col.as_string::<i32>();
            (0..rows).map(|r| Datum::string(a.value(r))).collect()
        }
        (PrimitiveType::String, DataType::LargeUtf8) => {
            let a = col.as_string::<i64>();
            (0..rows).map(|r| Datum::string(a.value(r))).collect()
        }
        (PrimitiveType::Uuid | PrimitiveType::Fixed(_), DataType::FixedSizeBinary(_)) => {
            let a = col.as_fixed_size_binary();
            (0..rows)
                .map(|r| Datum::try_from_bytes(a.value(r), ty.clone()))
                .collect::<iceberg::Result<_>>()?
        }
        (PrimitiveType::Binary, DataType::LargeBinary) => {
            let a = col.as_binary::<i64>();
            (0..rows)
                .map(|r| Datum::binary(a.value(r).iter().copied()))
                .collect()
        }
        (PrimitiveType::Binary, DataType::Binary) => {
            let a = col.as_binary::<i32>();
            (0..rows)
                .map(|r| Datum::binary(a.value(r).iter().copied()))
                .collect()
        }
        _ => return Err(unsupported()),
    })
}

/// Rows whose keys are those of `rows` (`datums`: one vector of key values per key column).
/// `min <= k AND k <= max` for every key column whose values are ordered (all of them but
/// mixed or unordered literals, which are left unbounded).
fn key_range(keys: &[String], datums: &[Vec<Datum>]) -> Predicate {
    let mut out = Predicate::AlwaysTrue;
    for (k, col) in keys.iter().zip(datums) {
        let mut bounds: Option<(&Datum, &Datum)> = None;
        let mut ordered = true;
        for d in col {
            bounds = match bounds {
                None => Some((d, d)),
                Some((lo, hi)) => match (d.partial_cmp(lo), d.partial_cmp(hi)) {
                    (Some(a), Some(b)) => Some((
                        if a.is_lt() { d } else { lo },
                        if b.is_gt() { d } else { hi },
                    )),
                    _ => {
                        ordered = false;
                        break;
                    }
                },
            };
        }
        if let (true, Some((lo, hi))) = (ordered, bounds) {
            let range = Reference::new(k.clone())
                .greater_than_or_equal_to(lo.clone())
                .and(Reference::new(k.clone()).less_than_or_equal_to(hi.clone()));
            out = match out {
                Predicate::AlwaysTrue => range,
                p => p.and(range),
            };
        }
    }
    out
}

fn key_predicate(
    keys: &[String],
    datums: &[Vec<Datum>],
    rows: impl Iterator<Item = usize>,
) -> Predicate {
    let rows: Vec<usize> = rows.collect();
    if let ([key], [col]) = (keys, datums) {
        let mut seen = HashSet::new();
        let mut values = Vec::with_capacity(rows.len());
        for r in rows {
            if let Some(d) = col.get(r)
                && seen.insert(d.literal().clone())
            {
                values.push(d.clone());
            }
        }
        return Reference::new(key.clone()).is_in(values);
    }
    let mut out: Option<Predicate> = None;
    for r in rows {
        let mut conj: Option<Predicate> = None;
        for (k, c) in keys.iter().zip(datums) {
            let Some(d) = c.get(r) else { continue };
            let eq = Reference::new(k.clone()).equal_to(d.clone());
            conj = Some(match conj {
                None => eq,
                Some(p) => p.and(eq),
            });
        }
        if let Some(c) = conj {
            out = Some(match out {
                None => c,
                Some(p) => p.or(c),
            });
        }
    }
    out.unwrap_or(Predicate::AlwaysFalse)
}
