//! Append Arrow batches to a table in one fast-append commit.
//!
//! This uses iceberg's own `fast_append` transaction, which retries on a stale base with the
//! table's `commit.retry.*` settings; the snapshot summary carries the caller's properties
//! (e.g. `iceberg-ops.migration-job`).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use futures::Stream;
use iceberg::Catalog;
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};

use crate::Result;

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
/// Returns the reloaded table and metrics; with no rows, nothing is committed.
pub async fn append<S>(
    catalog: &dyn Catalog,
    table: &Table,
    batches: S,
    snapshot_properties: HashMap<String, String>,
) -> Result<(Table, AppendMetrics)>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let files = crate::write::write_data_files(table, batches).await?;
    if files.is_empty() {
        return Ok((table.clone(), AppendMetrics::default()));
    }
    let metrics = AppendMetrics {
        snapshot_id: None,
        added_files: files.len(),
        added_records: files.iter().map(|f| f.record_count()).sum(),
    };
    let tx = Transaction::new(table);
    let tx = tx
        .fast_append()
        .set_snapshot_properties(snapshot_properties)
        .add_data_files(files)
        .apply(tx)?;
    let table = tx.commit(catalog).await?;
    let snapshot_id = table.metadata().current_snapshot_id();
    tracing::info!(table = %table.identifier(), ?snapshot_id, files = metrics.added_files,
        records = metrics.added_records, "appended");
    Ok((
        table,
        AppendMetrics {
            snapshot_id,
            ..metrics
        },
    ))
}
