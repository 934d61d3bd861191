//! `partition_hash` and `sample`: both sides streamed, every row (the projected destination
//! columns) encoded canonically with arrow's row format and hashed (xxh3-128).
//!
//! - `partition_hash`: per destination partition (any transform, computed from the row) the
//!   count and the wrapping sum of the row hashes form an order-independent digest. Memory is
//!   one entry per partition, never a table.
//! - `sample`: on each side the `sample_size` distinct rows with the smallest row hashes (a
//!   bottom-k sketch) with how many times each occurs: the same rows are chosen on both sides
//!   whatever the read order. A sketch of hashes cannot see everything by itself (a duplicated
//!   row hashes like its original, a changed row outside the sketch is not in it), so each side's
//!   row count and the wrapping sum of all its row hashes (the whole-table digest
//!   `partition_hash` keeps per partition) are compared too: both are free, every row is streamed
//!   and hashed anyway. Rows with different counts never match.
//!
//! Rows are encoded after [`super::canonical`] (maps as sorted entry lists, one NaN).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, make_array};
use arrow_buffer::NullBuffer;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, Fields, Schema, SchemaRef};
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::table::Table;
use iceberg::transform::{BoxedTransformFunction, create_transform_function};
use ops_reconcile::ReconciliationPlan;
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use twox_hash::XxHash3_128;

use super::canonical;
use crate::{MigrationError, Result, VerificationResult};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Digest {
    label: String,
    rows: u64,
    sum: u128,
}

/// The columns both sides are compared on and how a row's partition is computed.
pub(super) struct Compared {
    target: SchemaRef,
    partitioned: bool,
    /// (path of child indexes to the source column in `target`, through structs; transform;
    /// partition field name)
    partition: Vec<(Vec<usize>, BoxedTransformFunction, String)>,
}

impl Compared {
    pub(super) fn new(plan: &ReconciliationPlan, dest: &Table) -> Result<Self> {
        let full = ops_core::write::table_arrow_schema(dest)?;
        let names: Vec<&str> = plan
            .projections
            .iter()
            .map(|p| p.dest_name.as_str())
            .filter(|n| full.field_with_name(n).is_ok())
            .collect();
        let fields: Vec<_> = names
            .iter()
            .filter_map(|n| full.field_with_name(n).ok().cloned())
            .collect();
        let target = Arc::new(Schema::new(fields));
        let md = dest.metadata();
        let spec = md.default_partition_spec().clone();
        let schema = md.current_schema();
        let mut partition = Vec::new();
        for f in spec.fields() {
            // The source column may sit inside a struct (`address.city`): found by field id, so
            // a renamed parent does not matter.
            let path = path_of(target.fields(), f.source_id).ok_or_else(|| {
                let column = schema
                    .name_by_field_id(f.source_id)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("field id {}", f.source_id));
                MigrationError::InvalidInput(format!(
                    "partition source column '{column}' of the destination is not among the \
                     migrated columns; partition_hash cannot place source rows — use row_count \
                     or sample"
                ))
            })?;
            partition.push((
                path,
                create_transform_function(&f.transform)?,
                f.name.clone(),
            ));
        }
        Ok(Self::with_partition(
            target,
            !spec.fields().is_empty(),
            partition,
        ))
    }

    fn with_partition(
        target: SchemaRef,
        partitioned: bool,
        partition: Vec<(Vec<usize>, BoxedTransformFunction, String)>,
    ) -> Self {
        Self {
            target,
            partitioned,
            partition,
        }
    }

    fn select(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut columns = Vec::with_capacity(self.target.fields().len());
        for f in self.target.fields() {
            let c = batch.column_by_name(f.name()).ok_or_else(|| {
                MigrationError::InvalidInput(format!("compared column '{}' is missing", f.name()))
            })?;
            columns.push(c.clone());
        }
        let names = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(
                self.target
                    .fields()
                    .iter()
                    .zip(&columns)
                    .map(|(f, c)| {
                        arrow_schema::Field::new(f.name(), c.data_type().clone(), f.is_nullable())
                    })
                    .collect::<Vec<_>>(),
            )),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        Ok(ops_core::write::conform(&names, &self.target)?)
    }

    pub(super) fn source_stream(
        &self,
        stream: BoxStream<'static, Result<RecordBatch>>,
        plan: ReconciliationPlan,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        stream
            .map(move |b| Ok(ops_reconcile::project_batch(&b?, &plan)?))
            .boxed()
    }

    pub(super) fn dest_stream(
        &self,
        stream: BoxStream<'static, Result<RecordBatch>>,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        stream
    }

    fn converter(&self) -> Result<RowConverter> {
        canonical::converter(self.target.fields().iter().map(|f| f.data_type()))
    }

    /// Every row's canonical encoding.
    fn rows(&self, converter: &RowConverter, batch: &RecordBatch) -> Result<Rows> {
        let columns = batch
            .columns()
            .iter()
            .map(canonical::canonical)
            .collect::<Result<Vec<_>>>()?;
        Ok(converter.convert_columns(&columns)?)
    }

    /// xxh3-128 of every row's canonical encoding.
    fn row_hashes(&self, converter: &RowConverter, batch: &RecordBatch) -> Result<Vec<u128>> {
        Ok(self
            .rows(converter, batch)?
            .iter()
            .map(|r| XxHash3_128::oneshot(r.as_ref()))
            .collect())
    }

    pub(super) async fn partition_digests(
        &self,
        mut stream: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<BTreeMap<Vec<u8>, Digest>> {
        let converter = self.converter()?;
        let mut out: BTreeMap<Vec<u8>, Digest> = BTreeMap::new();
        while let Some(batch) = stream.next().await {
            let batch = self.select(&batch?)?;
            let hashes = self.row_hashes(&converter, &batch)?;
            // Partition values as Java tells partitions apart (`Double.compareTo`, by
            // `doubleToLongBits`): every NaN is one partition whatever its bits, `-0.0` and
            // `0.0` are two. A file copied whole keeps its tuple's NaN for every row of an
            // identity column, while the source's rows may carry NaNs of other bits: grouped
            // by bits, the two sides would differ.
            let values: Vec<ArrayRef> = self
                .partition
                .iter()
                .map(|(path, t, _)| canonical::one_nan(&t.transform(nested_column(&batch, path)?)?))
                .collect::<Result<_>>()?;
            let key_converter = RowConverter::new(
                values
                    .iter()
                    .map(|v| SortField::new(v.data_type().clone()))
                    .collect(),
            )?;
            let keys = key_converter.convert_columns(&values)?;
            let options = FormatOptions::default().with_null("null");
            let formatters: Vec<ArrayFormatter<'_>> = values
                .iter()
                .map(|v| ArrayFormatter::try_new(v.as_ref(), &options))
                .collect::<std::result::Result<_, _>>()?;
            for (row, h) in hashes.iter().enumerate() {
                // arrow-row encodes no rows for zero columns: an unpartitioned table is one key.
                let key = if values.is_empty() {
                    Vec::new()
                } else {
                    keys.row(row).as_ref().to_vec()
                };
                let entry = out.entry(key).or_insert_with(|| Digest {
                    label: self.label(&formatters, row),
                    ..Digest::default()
                });
                entry.rows += 1;
                entry.sum = entry.sum.wrapping_add(*h);
            }
        }
        Ok(out)
    }

    fn label(&self, formatters: &[ArrayFormatter<'_>], row: usize) -> String {
        if !self.partitioned {
            return "<unpartitioned>".into();
        }
        self.partition
            .iter()
            .zip(formatters)
            .map(|((_, _, name), f)| format!("{name}={}", f.value(row)))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// One side's row count, whole-table digest and its `k` distinct rows with the smallest
    /// hashes, each with how many times it occurs.
    pub(super) async fn sample(
        &self,
        mut stream: BoxStream<'static, Result<RecordBatch>>,
        k: usize,
    ) -> Result<Sample> {
        let converter = self.converter()?;
        let mut out = Sample::default();
        while let Some(batch) = stream.next().await {
            let batch = self.select(&batch?)?;
            for r in self.rows(&converter, &batch)?.iter() {
                let h = XxHash3_128::oneshot(r.as_ref());
                out.add(h, r.as_ref(), k);
            }
        }
        Ok(out)
    }
}

/// What `sample` keeps of one side (see the module docs).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Sample {
    rows: u64,
    sum: u128,
    /// Row hash → (occurrences, the row's encoding).
    smallest: BTreeMap<u128, (u64, Vec<u8>)>,
}

impl Sample {
    fn add(&mut self, h: u128, row: &[u8], k: usize) {
        self.rows += 1;
        self.sum = self.sum.wrapping_add(h);
        if let Some(e) = self.smallest.get_mut(&h) {
            e.0 += 1;
        } else if self.smallest.len() < k {
            self.smallest.insert(h, (1, row.to_vec()));
        } else if self
            .smallest
            .last_key_value()
            .is_some_and(|(top, _)| h < *top)
        {
            self.smallest.insert(h, (1, row.to_vec()));
            self.smallest.pop_last();
        }
    }
}

/// Child indexes from `fields` down to the field with Iceberg id `id`, through structs only (a
/// partition source is never inside a list or a map); `None` when no compared column holds it.
fn path_of(fields: &Fields, id: i32) -> Option<Vec<usize>> {
    let id = id.to_string();
    // Depth-first with an explicit stack: (fields, path to them).
    let mut stack: Vec<(&Fields, Vec<usize>)> = vec![(fields, Vec::new())];
    while let Some((fields, prefix)) = stack.pop() {
        for (i, f) in fields.iter().enumerate() {
            let mut path = prefix.clone();
            path.push(i);
            if f.metadata().get(PARQUET_FIELD_ID_META_KEY) == Some(&id) {
                return Some(path);
            }
            if let DataType::Struct(children) = f.data_type() {
                stack.push((children, path));
            }
        }
    }
    None
}

/// The column at `path` (see [`path_of`]); a field of a NULL struct is NULL.
fn nested_column(batch: &RecordBatch, path: &[usize]) -> Result<ArrayRef> {
    let mut steps = path.iter();
    let missing = || MigrationError::InvalidInput(format!("no column at {path:?}"));
    let mut column = batch
        .columns()
        .get(*steps.next().ok_or_else(missing)?)
        .ok_or_else(missing)?
        .clone();
    for i in steps {
        let parent = column.as_struct_opt().ok_or_else(missing)?;
        let child = parent.columns().get(*i).ok_or_else(missing)?;
        let nulls = NullBuffer::union(parent.nulls(), child.nulls());
        column = make_array(child.to_data().into_builder().nulls(nulls).build()?);
    }
    Ok(column)
}

pub(super) fn compare_partitions(
    src: &BTreeMap<Vec<u8>, Digest>,
    dst: &BTreeMap<Vec<u8>, Digest>,
    result: &mut VerificationResult,
) {
    result.source_count = Some(src.values().map(|d| d.rows).sum());
    result.dest_count = Some(dst.values().map(|d| d.rows).sum());
    for (key, a) in src {
        match dst.get(key) {
            None => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {} has {} row(s) in the source and none in the destination",
                    a.label, a.rows
                ));
            }
            Some(b) if a.rows != b.rows => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {}: {} row(s) in the source, {} in the destination",
                    a.label, a.rows, b.rows
                ));
            }
            Some(b) if a.sum != b.sum => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {}: same row count ({}) but different contents",
                    a.label, a.rows
                ));
            }
            Some(_) => {}
        }
    }
    for (key, b) in dst {
        if !src.contains_key(key) {
            result.mismatched_partitions.push(b.label.clone());
            result.details.push(format!(
                "partition {} has {} row(s) in the destination and none in the source",
                b.label, b.rows
            ));
        }
    }
    result.matches = result.mismatched_partitions.is_empty();
}

pub(super) fn compare_samples(a: &Sample, b: &Sample, k: usize, result: &mut VerificationResult) {
    result.source_count = Some(a.rows);
    result.dest_count = Some(b.rows);
    result.sample_size = Some((k as u64).min(a.rows).min(b.rows));
    if a.rows != b.rows {
        result.details.push(format!(
            "source has {} row(s), destination has {}",
            a.rows, b.rows
        ));
    }
    // Sampled rows present on one side only, or with other multiplicities (a duplicate).
    let differing = a
        .smallest
        .iter()
        .filter(|(h, e)| b.smallest.get(h) != Some(e))
        .count()
        + b.smallest
            .keys()
            .filter(|h| !a.smallest.contains_key(h))
            .count();
    if differing > 0 {
        result.details.push(format!(
            "{differing} of the sampled distinct row(s) (smallest row hashes, at most {k} a side) \
             differ in presence or in how often they occur"
        ));
    } else if a.rows == b.rows && a.sum != b.sum {
        result.details.push(format!(
            "the {} sampled row(s) agree, but the digest of all rows differs: rows outside the \
             sample differ (partition_hash names their partitions)",
            a.smallest.len()
        ));
    }
    result.matches = a.rows == b.rows && a.sum == b.sum && differing == 0;
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{Float64Array, Int64Array, StringArray, StructArray};
    use arrow_schema::Field;
    use futures::stream;

    use super::*;
    use crate::VerifyMethod;

    fn id(f: Field, id: i32) -> Field {
        f.with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            id(Field::new("id", DataType::Int64, false), 1),
            id(Field::new("name", DataType::Utf8, true), 2),
            id(Field::new("x", DataType::Float64, true), 3),
        ]))
    }

    type Row = (i64, Option<String>, Option<f64>);

    fn rows(n: i64) -> Vec<Row> {
        (0..n)
            .map(|i| (i, Some(format!("n{}", i % 17)), Some(i as f64 / 4.0)))
            .collect()
    }

    fn batch(rows: &[Row]) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1.clone()))),
                Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.2))),
            ],
        )
        .expect("batch")
    }

    fn side(batches: Vec<RecordBatch>) -> BoxStream<'static, Result<RecordBatch>> {
        stream::iter(batches.into_iter().map(Ok)).boxed()
    }

    async fn sample(src: Vec<RecordBatch>, dst: Vec<RecordBatch>, k: usize) -> VerificationResult {
        let target = src[0].schema();
        let c = Compared::with_partition(target, false, Vec::new());
        let a = c.sample(side(src), k).await.expect("source");
        let b = c.sample(side(dst), k).await.expect("dest");
        let mut result = VerificationResult {
            method: VerifyMethod::Sample,
            matches: false,
            source_count: None,
            dest_count: None,
            sample_size: None,
            mismatched_partitions: Vec::new(),
            details: Vec::new(),
        };
        compare_samples(&a, &b, k, &mut result);
        result
    }

    /// Source of 1,000 rows in two batches; the destination `edit`ed from it, in another order.
    async fn sample_after(edit: impl Fn(&mut Vec<Row>), k: usize) -> VerificationResult {
        let src = rows(1000);
        let mut dst = src.clone();
        edit(&mut dst);
        dst.reverse();
        let (a, b) = src.split_at(400);
        let (c, d) = dst.split_at(dst.len() / 3);
        sample(vec![batch(a), batch(b)], vec![batch(c), batch(d)], k).await
    }

    #[tokio::test]
    async fn sample_matches_an_identical_copy_in_any_order() {
        for k in [1, 10, 1000, 5000] {
            let v = sample_after(|_| {}, k).await;
            assert!(v.matches, "{k}: {v:?}");
            assert_eq!((v.source_count, v.dest_count), (Some(1000), Some(1000)));
            assert_eq!(v.sample_size, Some(k.min(1000) as u64));
        }
    }

    #[tokio::test]
    async fn sample_never_matches_a_copy_that_differs_whatever_the_sample_size() {
        type Edit = Box<dyn Fn(&mut Vec<Row>)>;
        let edits: Vec<(&str, Edit)> = vec![
            (
                "a duplicated row",
                Box::new(|r: &mut Vec<Row>| r.push(r[500].clone())),
            ),
            (
                "a missing row",
                Box::new(|r: &mut Vec<Row>| drop(r.remove(777))),
            ),
            (
                "a row duplicated, another missing",
                Box::new(|r: &mut Vec<Row>| {
                    r.push(r[3].clone());
                    r.remove(900);
                }),
            ),
            (
                "one column changed",
                Box::new(|r: &mut Vec<Row>| r[321].1 = Some("x".into())),
            ),
            (
                "a value made NULL",
                Box::new(|r: &mut Vec<Row>| r[654].2 = None),
            ),
            (
                "0.0 made -0.0",
                Box::new(|r: &mut Vec<Row>| r[0].2 = Some(-0.0)),
            ),
        ];
        for (what, edit) in edits {
            for k in [10, 50, 100, 200, 2000] {
                let v = sample_after(&edit, k).await;
                assert!(!v.matches, "{what}, sample {k}: {v:?}");
                assert!(!v.details.is_empty(), "{what}: {v:?}");
            }
        }
    }

    #[tokio::test]
    async fn nan_matches_nan_whatever_its_payload() {
        let payload = f64::from_bits(f64::NAN.to_bits() | 7);
        let mut src = rows(10);
        src[4].2 = Some(f64::NAN);
        let mut dst = src.clone();
        dst[4].2 = Some(payload);
        let v = sample(vec![batch(&src)], vec![batch(&dst)], 3).await;
        assert!(v.matches, "{v:?}");
    }

    /// Rows partitioned by identity(x): the source's NaNs carry two bit patterns, the
    /// destination's one (a copied file's rows read their identity column from its tuple).
    /// Both are one NaN partition, as Java has them; `-0.0` and `0.0` stay two.
    #[tokio::test]
    async fn partition_hash_groups_every_nan_as_one_partition() {
        let other_nan = f64::from_bits(f64::NAN.to_bits() | (1 << 63));
        assert!(other_nan.is_nan());
        let mut src = rows(12);
        src[3].2 = Some(f64::NAN);
        src[4].2 = Some(other_nan);
        src[5].2 = Some(-0.0);
        src[6].2 = Some(0.0);
        let mut dst = src.clone();
        dst[4].2 = Some(f64::NAN);
        let c = Compared::with_partition(
            schema(),
            true,
            vec![(
                vec![2],
                create_transform_function(&iceberg::spec::Transform::Identity).expect("t"),
                "x".into(),
            )],
        );
        let a = c
            .partition_digests(side(vec![batch(&src)]))
            .await
            .expect("source");
        let b = c
            .partition_digests(side(vec![batch(&dst)]))
            .await
            .expect("dest");
        let rows_of = |d: &BTreeMap<Vec<u8>, Digest>, label: &str| {
            d.values()
                .filter(|d| d.label == label)
                .map(|d| d.rows)
                .collect::<Vec<_>>()
        };
        assert_eq!(rows_of(&a, "x=NaN"), vec![2], "{a:?}");
        assert_eq!(rows_of(&a, "x=-0.0"), vec![1], "{a:?}");
        // Row 0 holds 0.0 as well.
        assert_eq!(rows_of(&a, "x=0.0"), vec![2], "{a:?}");
        assert_eq!(a, b);
    }

    /// A map<string, list<long>> column (the corpus's), one map per row.
    fn map_batch(maps: &[Vec<(&str, i64)>]) -> RecordBatch {
        let mut b = MapBuilder::new(
            None,
            StringBuilder::new(),
            ListBuilder::new(Int64Builder::new()),
        );
        for m in maps {
            for (k, v) in m {
                b.keys().append_value(k);
                b.values().values().append_value(*v);
                b.values().append(true);
            }
            b.append(true).expect("map");
        }
        let m = b.finish();
        let schema = Arc::new(Schema::new(vec![id(
            Field::new("m", m.data_type().clone(), true),
            1,
        )]));
        RecordBatch::try_new(schema, vec![Arc::new(m)]).expect("batch")
    }

    #[tokio::test]
    async fn map_columns_compare_by_their_entries() {
        let src = map_batch(&[vec![("a", 1), ("b", 2)], vec![("c", 3)]]);
        let reordered = map_batch(&[vec![("c", 3)], vec![("b", 2), ("a", 1)]]);
        let changed = map_batch(&[vec![("a", 1), ("b", 5)], vec![("c", 3)]]);
        assert!(sample(vec![src.clone()], vec![reordered], 1).await.matches);
        assert!(!sample(vec![src], vec![changed], 1).await.matches);
    }

    #[tokio::test]
    async fn a_field_inside_a_struct_partitions_rows_and_a_null_struct_gives_null() {
        let city = id(Field::new("city", DataType::Utf8, true), 5);
        let address = StructArray::try_new(
            vec![city.clone()].into(),
            vec![Arc::new(StringArray::from(vec!["paris", "oslo", "paris"])) as ArrayRef],
            Some(NullBuffer::from(vec![true, true, false])),
        )
        .expect("struct");
        let schema = Arc::new(Schema::new(vec![
            id(Field::new("id", DataType::Int64, false), 1),
            id(Field::new("address", address.data_type().clone(), true), 4),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![1, 2, 3])), Arc::new(address)],
        )
        .expect("batch");
        let path = path_of(schema.fields(), 5).expect("path");
        assert_eq!(path, vec![1, 0]);
        let c = Compared::with_partition(
            schema,
            true,
            vec![(
                path,
                create_transform_function(&iceberg::spec::Transform::Identity).expect("t"),
                "address.city".into(),
            )],
        );
        let digests = c.partition_digests(side(vec![b])).await.expect("digests");
        let mut labels: Vec<(String, u64)> = digests
            .values()
            .map(|d| (d.label.clone(), d.rows))
            .collect();
        labels.sort();
        assert_eq!(
            labels,
            vec![
                ("address.city=null".to_string(), 1),
                ("address.city=oslo".to_string(), 1),
                ("address.city=paris".to_string(), 1),
            ]
        );
    }
}
