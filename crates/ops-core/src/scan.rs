//! Read a table at any snapshot as a stream of Arrow batches in its current schema.
//!
//! iceberg 0.10.1's `TableScan` reads with the schema of the snapshot it scans, so after a
//! rename the old name comes back, and after a widening the old type. [`scan`] maps every batch
//! onto the table's current schema by field id: renamed columns take their new names, widened
//! ones are cast, columns added since are null, dropped ones disappear. Delete files are applied
//! by iceberg's reader; an optional row filter is pushed into the scan.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, new_null_array};
use arrow_schema::{Field, SchemaRef};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::expr::Predicate;
use iceberg::table::Table;

use crate::{Error, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// Streams every row of `table` at `snapshot_id` (the current snapshot when `None`), in the
/// table's current schema; an empty table yields no batches.
pub async fn scan(
    table: &Table,
    snapshot_id: Option<i64>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    scan_filtered(table, snapshot_id, None).await
}

/// As [`scan`], keeping only rows that match `filter` (column names as of the scanned
/// snapshot).
pub async fn scan_filtered(
    table: &Table,
    snapshot_id: Option<i64>,
    filter: Option<Predicate>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let md = table.metadata();
    let snapshot_id = snapshot_id.or_else(|| md.current_snapshot_id());
    let Some(snapshot_id) = snapshot_id else {
        return Ok(futures::stream::empty().boxed());
    };
    let snapshot = md.snapshot_by_id(snapshot_id).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{} has no snapshot {snapshot_id}",
            table.identifier()
        ))
    })?;
    let read_schema = snapshot
        .schema_id()
        .and_then(|id| md.schema_by_id(id))
        .unwrap_or_else(|| md.current_schema())
        .clone();
    let read_arrow = Arc::new(iceberg::arrow::schema_to_arrow_schema(&read_schema)?);
    let target = crate::write::table_arrow_schema(table)?;
    let mut builder = table.scan().snapshot_id(snapshot_id).select_all();
    if let Some(filter) = filter {
        builder = builder.with_filter(filter);
    }
    let tasks = builder
        .build()?
        .plan_files()
        .await?
        .map_ok(|mut t| {
            // iceberg's reader uses identity-partition values as constants and fails on a value
            // written before its source column was widened: read those columns from the file.
            let fits = match (&t.partition_spec, &t.partition) {
                (Some(spec), Some(value)) => {
                    crate::ops::snapshot_partition_fits(spec, value, &t.schema)
                }
                _ => true,
            };
            if !fits {
                t.partition = None;
                t.partition_spec = None;
            }
            t
        })
        .boxed();
    let reader = iceberg::arrow::ArrowReaderBuilder::new(
        table.file_io().clone(),
        iceberg::Runtime::try_current()?,
    )
    .build();
    let stream = reader.read(tasks)?.stream();
    Ok(stream
        .map_err(Error::from)
        .and_then(move |batch| {
            let projected = project_by_field_id(&batch, &read_arrow, &target);
            futures::future::ready(projected)
        })
        .boxed())
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// Maps `batch` (read with `read_schema`) onto `target` by field id.
pub fn project_by_field_id(
    batch: &RecordBatch,
    read_schema: &SchemaRef,
    target: &SchemaRef,
) -> Result<RecordBatch> {
    // The reader may drop field metadata; fall back to the read schema's ids by name.
    let read_ids: HashMap<&str, i32> = read_schema
        .fields()
        .iter()
        .filter_map(|f| field_id(f).map(|id| (f.name().as_str(), id)))
        .collect();
    let by_id: HashMap<i32, usize> = batch
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            field_id(f)
                .or_else(|| read_ids.get(f.name().as_str()).copied())
                .map(|id| (id, i))
        })
        .collect();
    let rows = batch.num_rows();
    let mut columns = Vec::with_capacity(target.fields().len());
    for tf in target.fields() {
        let column = match field_id(tf).and_then(|id| by_id.get(&id)) {
            Some(&i) => ops_reconcile::convert_array(
                batch.column(i),
                tf.data_type(),
                tf.name(),
                ops_reconcile::ChildMatch::ByFieldId,
            )
            .map_err(|e| Error::InvalidInput(format!("reading {}: {e}", tf.name())))?,
            None => new_null_array(tf.data_type(), rows),
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &options,
    )?)
}
