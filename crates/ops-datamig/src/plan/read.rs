//! The planned read: a pinned snapshot planned into file-scan tasks in a fixed order.
//!
//! iceberg's own `TableScan::to_arrow` reads files concurrently and yields batches in whatever
//! order they finish, so batch `k` of one run need not hold the rows of batch `k` of the next.
//! A resumable migration numbers its batches, so here the tasks are sorted by file path (and
//! read one file after the other, see `execute::read`).
//!
//! 1. Refuse the hazard of a partition column widened after files were written (iceberg's
//!    planner would miss the deletes that apply to the older files).
//! 2. Plan the snapshot's files with the row filter (`ops_core::scan::plan_files`, which prunes
//!    files written under a column's older type correctly), then sort the tasks by path and
//!    offset.

use std::collections::{HashMap, HashSet};

use iceberg::expr::Predicate;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;

use crate::{MigrationError, Result};

/// The planned read of one table at one snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRead {
    /// The snapshot read (`None`: the table has no snapshot, nothing to read).
    pub snapshot_id: Option<i64>,
    /// File-scan tasks in read order.
    pub tasks: Vec<FileScanTask>,
    /// True when a row filter is applied.
    pub filtered: bool,
    /// The schema batches come out in (`None`: the table's current one); a migration's
    /// source read uses the pinned snapshot's.
    pub target: Option<iceberg::spec::SchemaRef>,
    /// Only these top-level columns (field ids) are decoded, plus those the row filter and
    /// the equality deletes need, so the read yields the very same rows in the same order
    /// with fewer columns (`None`: every column). See [`PlannedRead::only_columns`].
    pub columns: Option<Vec<i32>>,
}

impl PlannedRead {
    /// Batches come out in `schema` instead of the table's current schema.
    pub fn in_schema(mut self, schema: iceberg::spec::SchemaRef) -> Self {
        self.target = Some(schema);
        self
    }

    /// The same rows, in the same order, with only the top-level columns `ids` (and the ones
    /// the row filter and equality deletes read, which decide the rows) decoded: the upsert's
    /// key pre-pass numbers rows exactly as the full read does.
    pub fn only_columns(mut self, ids: Vec<i32>) -> Self {
        self.columns = Some(ids);
        self
    }

    /// Plans `table` at `snapshot_id` with `filter`.
    pub async fn plan(
        table: &Table,
        snapshot_id: Option<i64>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let Some(id) = snapshot_id else {
            return Ok(Self {
                snapshot_id: None,
                tasks: Vec::new(),
                filtered: filter.is_some(),
                target: None,
                columns: None,
            });
        };
        let filtered = filter.is_some();
        refuse_widened_hazards(table, id).await?;
        // ops-core's planning: iceberg's planner alone would prune every file written before
        // a filtered column was widened (it compares `int` bounds with a `long` literal).
        // The filter names columns as the snapshot's own schema does (`plan::row_predicate`).
        let names = crate::plan::snapshot_own_schema(table, Some(id));
        let mut tasks =
            ops_core::scan::plan_files_named(table, id, filter.as_ref(), &names).await?;
        tasks.sort_by(|a, b| {
            (a.data_file_path.as_str(), a.start).cmp(&(b.data_file_path.as_str(), b.start))
        });
        // iceberg's planner attaches an all-`void` spec's equality deletes to the files of its
        // own tuple of NULLs only; they apply to every older file.
        ops_core::equality_deletes::attach_global_deletes(table, id, &mut tasks).await?;
        Ok(Self {
            snapshot_id: Some(id),
            tasks,
            filtered,
            target: None,
            columns: None,
        })
    }

    /// True when some task has delete files to apply.
    pub fn has_deletes(&self) -> bool {
        self.tasks.iter().any(|t| !t.deletes.is_empty())
    }

    /// The exact row count from manifests alone: known when no filter and no delete file
    /// applies and every task covers a whole file.
    pub fn exact_rows(&self) -> Option<u64> {
        if self.filtered || self.has_deletes() {
            return None;
        }
        self.tasks
            .iter()
            .map(|t| t.record_count)
            .sum::<Option<u64>>()
    }

    /// Orders the tasks by the data sequence number of their file, then by path and offset:
    /// an upsert's source order, where a later row of a key wins (a file written by a later
    /// commit holds the newer rows of a change-capture feed). Deterministic, so a resume
    /// replays the same order.
    pub async fn order_by_sequence_number(&mut self, table: &Table) -> Result<()> {
        let Some(snapshot) = self
            .snapshot_id
            .and_then(|id| table.metadata().snapshot_by_id(id).cloned())
        else {
            return Ok(());
        };
        let list = table.manifest_list_reader(&snapshot).load().await?;
        let mut sequence: HashMap<String, i64> = HashMap::new();
        for mf in list.entries() {
            if mf.content != iceberg::spec::ManifestContentType::Data {
                continue;
            }
            let mut entries = std::pin::pin!(ops_core::manifests::entries(table.file_io(), mf));
            while let Some(entry) = futures::TryStreamExt::try_next(&mut entries).await? {
                if entry.is_alive() {
                    sequence.insert(
                        entry.file_path().to_string(),
                        entry.sequence_number().unwrap_or(mf.sequence_number),
                    );
                }
            }
        }
        // A file the manifests do not list cannot be planned; 0 keeps the sort total anyway.
        let seq = |path: &str| sequence.get(path).copied().unwrap_or(0);
        self.tasks.sort_by(|a, b| {
            (seq(&a.data_file_path), a.data_file_path.as_str(), a.start).cmp(&(
                seq(&b.data_file_path),
                b.data_file_path.as_str(),
                b.start,
            ))
        });
        Ok(())
    }

    /// The same read restricted to `tasks` (a subset of this read's tasks).
    pub fn with_tasks(&self, tasks: Vec<FileScanTask>) -> Self {
        Self {
            snapshot_id: self.snapshot_id,
            tasks,
            filtered: self.filtered,
            target: self.target.clone(),
            columns: self.columns.clone(),
        }
    }
}

/// Field ids of partition source columns whose type differs between two of the table's schemas
/// (an `int` widened to `long`, ...), with their current names.
fn widened_partition_sources(table: &Table) -> Vec<(i32, String)> {
    let md = table.metadata();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for spec in md.partition_specs_iter() {
        for pf in spec.fields() {
            if !seen.insert(pf.source_id) {
                continue;
            }
            let mut types = md
                .schemas_iter()
                .filter_map(|s| s.field_by_id(pf.source_id))
                .map(|f| f.field_type.to_string());
            let Some(first) = types.next() else { continue };
            if types.any(|t| t != first) {
                let name = md
                    .current_schema()
                    .name_by_field_id(pf.source_id)
                    .unwrap_or("?")
                    .to_string();
                out.push((pf.source_id, name));
            }
        }
    }
    out
}

/// iceberg 0.10.1 reads a partition value written before its source column was widened with
/// the old type, so its planner never matches delete files written after the widening to such
/// a file — deleted rows would come back. Refused here, naming the column. (A row filter on
/// such a column is planned by ops-core, which compares across the column's types.)
async fn refuse_widened_hazards(table: &Table, snapshot_id: i64) -> Result<()> {
    let widened = widened_partition_sources(table);
    if widened.is_empty() {
        return Ok(());
    }
    let names = widened
        .iter()
        .map(|(_, n)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let missing = ops_core::ops::files_missing_deletes(table, snapshot_id).await?;
    if let Some(first) = missing.first() {
        return Err(MigrationError::InvalidInput(format!(
            "{} has delete files and partition column(s) {names} widened since some files \
             were written; iceberg 0.10.1 cannot match those deletes to {} older file(s) (e.g. \
             {first}), so deleted rows would come back — rewrite (compact) the source's data \
             files with the engine that wrote the deletes before migrating it",
            table.identifier(),
            missing.len()
        )));
    }
    Ok(())
}
