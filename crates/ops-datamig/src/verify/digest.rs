//! `partition_hash` and `sample`: both sides streamed, every row (the projected destination
//! columns) encoded canonically with arrow's row format and hashed (xxh3-128).
//!
//! - `partition_hash`: per destination partition (any transform, computed from the row) the
//!   count and the wrapping sum of the row hashes form an order-independent digest. Memory is
//!   one entry per partition, never a table.
//! - `sample`: on each side the `sample_size` rows with the smallest row hashes (a bottom-k
//!   sketch): the same rows are chosen on both sides whatever the read order.

use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{Schema, SchemaRef};
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::spec::PartitionSpecRef;
use iceberg::table::Table;
use iceberg::transform::{BoxedTransformFunction, create_transform_function};
use ops_reconcile::ReconciliationPlan;
use twox_hash::XxHash3_128;

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
    spec: PartitionSpecRef,
    /// (column index in `target`, transform, partition field name)
    partition: Vec<(usize, BoxedTransformFunction, String)>,
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
            let column = schema
                .field_by_id(f.source_id)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            let index = target.index_of(&column).map_err(|_| {
                MigrationError::InvalidInput(format!(
                    "partition source column '{column}' of the destination is not among the \
                     migrated columns; partition_hash cannot place source rows — use row_count \
                     or sample"
                ))
            })?;
            partition.push((
                index,
                create_transform_function(&f.transform)?,
                f.name.clone(),
            ));
        }
        Ok(Self {
            target,
            spec,
            partition,
        })
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
        Ok(RowConverter::new(
            self.target
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?)
    }

    /// xxh3-128 of every row's canonical encoding.
    fn row_hashes(&self, converter: &RowConverter, batch: &RecordBatch) -> Result<Vec<u128>> {
        let rows = converter.convert_columns(batch.columns())?;
        Ok(rows
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
            let values: Vec<ArrayRef> = self
                .partition
                .iter()
                .map(|(i, t, _)| t.transform(batch.column(*i).clone()))
                .collect::<iceberg::Result<_>>()?;
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
        if self.spec.fields().is_empty() {
            return "<unpartitioned>".into();
        }
        self.partition
            .iter()
            .zip(formatters)
            .map(|((_, _, name), f)| format!("{name}={}", f.value(row)))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The `k` rows with the smallest hashes (and how many rows were seen).
    pub(super) async fn bottom_k(
        &self,
        mut stream: BoxStream<'static, Result<RecordBatch>>,
        k: usize,
    ) -> Result<(Vec<(u128, Vec<u8>)>, u64)> {
        let converter = self.converter()?;
        let mut heap: BinaryHeap<(u128, Vec<u8>)> = BinaryHeap::new();
        let mut seen = 0u64;
        while let Some(batch) = stream.next().await {
            let batch = self.select(&batch?)?;
            let rows = converter.convert_columns(batch.columns())?;
            for r in rows.iter() {
                seen += 1;
                let h = XxHash3_128::oneshot(r.as_ref());
                if heap.len() < k {
                    heap.push((h, r.as_ref().to_vec()));
                } else if heap.peek().is_some_and(|top| h < top.0) {
                    heap.pop();
                    heap.push((h, r.as_ref().to_vec()));
                }
            }
        }
        Ok((heap.into_sorted_vec(), seen))
    }
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

pub(super) fn compare_samples(
    (a, src_rows): (Vec<(u128, Vec<u8>)>, u64),
    (b, dst_rows): (Vec<(u128, Vec<u8>)>, u64),
    k: usize,
    result: &mut VerificationResult,
) {
    result.source_count = Some(src_rows);
    result.dest_count = Some(dst_rows);
    let compared = (k as u64).min(src_rows).min(dst_rows);
    result.sample_size = Some(compared);
    let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    result.matches = differing == 0;
    if differing > 0 {
        result.details.push(format!(
            "{differing} of the {} sampled row(s) (smallest row hashes) differ between source \
             ({src_rows} rows) and destination ({dst_rows} rows)",
            a.len().max(b.len())
        ));
    }
}
