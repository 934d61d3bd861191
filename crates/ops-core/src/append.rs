//! Append Arrow batches to a table in one commit: [`crate::write::write_files`] then
//! [`crate::ops::append::AppendBuilder`], the one append path (retries, manifest merging,
//! summary properties such as `iceberg-ops.migration-job`).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use futures::Stream;
use iceberg::table::Table;

use crate::ops::append::AppendBuilder;
use crate::{CatalogHandle, Result};

/// What an append did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppendMetrics {
    /// The snapshot the commit created; `None` when there was nothing to append.
    pub snapshot_id: Option<i64>,
    /// Data files added.
    pub added_files: usize,
    /// Rows added.
    pub added_records: u64,
}

/// Writes `batches` and commits them as one snapshot with `snapshot_properties` in its summary.
/// Returns the table after the commit and metrics; with no rows, nothing is committed. The
/// memory catalog cannot take commits (use the embedded `sqlite` catalog).
pub async fn append<S>(
    handle: &CatalogHandle,
    table: &Table,
    batches: S,
    snapshot_properties: HashMap<String, String>,
) -> Result<(Table, AppendMetrics)>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let written = crate::write::write_files(table, batches).await?;
    if written.files.is_empty() {
        return Ok((table.clone(), AppendMetrics::default()));
    }
    let added_files = written.files.len();
    let added_records = written.record_count();
    let (table, m) = AppendBuilder::new(handle, table.identifier().clone())
        .add_written(written)
        .with_properties(snapshot_properties)
        .await?;
    tracing::info!(table = %table.identifier(), snapshot_id = m.snapshot_id, files = added_files,
        records = added_records, "appended");
    Ok((
        table,
        AppendMetrics {
            snapshot_id: Some(m.snapshot_id),
            added_files,
            added_records,
        },
    ))
}
