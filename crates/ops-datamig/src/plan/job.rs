//! Plan → tasks → commits: the serializable shape of a migration.
//!
//! A [`MigrationPlan`] is what pre-flight decided, written down so another process can act on
//! it: the pinned source snapshot, the reconciler, the row filter, the write mode and a list of
//! [`MigrationTask`]s. A task is a run of source files read in the plan's fixed order; it yields
//! the batches `first_batch .. first_batch + max_batches` (fewer when a filter or delete files
//! drop rows), each at most `batch_rows` rows, cut at the same places on every run — which is
//! what lets a checkpoint name a batch and a resume skip it. Executing a task writes data files
//! and returns them as a [`TaskOutput`] without committing; one committer commits the outputs in
//! batch order, so the destination sees the same commits whichever worker wrote the files.
//!
//! Batches never span tasks: a task groups whole files until it holds at least `batch_rows`
//! rows, so a small file does not become a commit of its own, and a large file is a task of its
//! own that yields many batches.

use iceberg::spec::{DataFile, Schema, StructType};
use iceberg::table::Table;
use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use ops_core::CatalogHandle;
use ops_core::file_path::FilePath;
use ops_reconcile::SchemaReconciler;

use super::read::PlannedRead;
use crate::types::TableRef;
use crate::{CopyMode, FileRoute, MigrationError, Result, RowFilter, WriteMode};

/// Version of the plan and task-output JSON; a reader refuses other versions.
pub const PLAN_FORMAT: u32 = 1;

/// A table as a catalog name and `NAMESPACE.TABLE`, for a process that opens its own catalogs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableLocator {
    /// The catalog's name (as configured: `.pyiceberg.yaml`, `PYICEBERG_CATALOG__*`, `--config`).
    pub catalog: String,
    /// `NAMESPACE.TABLE`.
    pub table: String,
}

/// What pre-flight decided, as a list of tasks another process can execute (see module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MigrationPlan {
    /// [`PLAN_FORMAT`].
    pub format: u32,
    /// Tags every snapshot the job commits (`iceberg-ops.migration-job`).
    pub job_id: String,
    /// The source table.
    pub source: TableLocator,
    /// The destination table.
    pub dest: TableLocator,
    /// The source's UUID: executing against another table of the same name is refused.
    pub source_uuid: String,
    /// The destination's UUID.
    pub dest_uuid: String,
    /// The pinned source snapshot (`None`: the source is empty).
    pub source_snapshot_id: Option<i64>,
    /// The source schema the reconciliation was computed from.
    pub source_schema_id: i32,
    /// The destination schema files are written in.
    pub dest_schema_id: i32,
    /// The destination partition spec files are laid out by.
    pub dest_spec_id: i32,
    /// The destination's current snapshot before the job (the rollback target).
    pub dest_snapshot_before: Option<i64>,
    /// How source columns map onto the destination.
    pub reconciler: SchemaReconciler,
    /// The row filter, if any.
    pub row_filter: Option<RowFilter>,
    /// Rows per batch (per commit).
    pub batch_rows: usize,
    /// How batches are committed.
    pub write_mode: WriteMode,
    /// Whether files may be copied instead of rewritten.
    #[serde(default)]
    pub copy_mode: CopyMode,
    /// Rows the tasks yield, when manifests alone tell (no filter, no delete files).
    pub total_rows: Option<u64>,
    /// The tasks, in batch order.
    pub tasks: Vec<MigrationTask>,
    /// What a reader of the plan should know that the tasks do not say (e.g. that the
    /// destination's field ids were assigned anew, so its files are rewritten, not copied).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Once the last batch landed, compact the files the job wrote (`--compact`), before the
    /// checkpoint completes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compact: bool,
    /// Once the job is complete, expire its own snapshots (`--expire-job-snapshots`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expire_job_snapshots: bool,
}

impl MigrationPlan {
    /// A plan of two one-file tasks from `lake`'s `src.orders` to `dst.orders`, batch 10:
    /// for tests of the crates that carry plans.
    #[doc(hidden)]
    pub fn example() -> MigrationPlan {
        MigrationPlan {
            format: PLAN_FORMAT,
            job_id: "job-1".into(),
            source: TableLocator {
                catalog: "lake".into(),
                table: "src.orders".into(),
            },
            dest: TableLocator {
                catalog: "lake".into(),
                table: "dst.orders".into(),
            },
            source_uuid: "u1".into(),
            dest_uuid: "u2".into(),
            source_snapshot_id: Some(7),
            source_schema_id: 0,
            dest_schema_id: 0,
            dest_spec_id: 0,
            dest_snapshot_before: None,
            reconciler: SchemaReconciler::default(),
            row_filter: None,
            batch_rows: 10,
            write_mode: WriteMode::Append,
            copy_mode: CopyMode::Auto,
            total_rows: Some(20),
            tasks: (0..2)
                .map(|id| MigrationTask {
                    id,
                    first_batch: id as u64,
                    max_batches: 1,
                    record_count: Some(10),
                    files: vec![FilePath::new(&format!("s3://b/f{id}.parquet"))],
                    route: FileRoute::Rewrite,
                })
                .collect(),
            notes: Vec::new(),
            compact: false,
            expire_job_snapshots: false,
        }
    }
}

/// A run of source files and the batches it yields (see module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationTask {
    /// Position in [`MigrationPlan::tasks`].
    pub id: usize,
    /// Index of the first batch this task yields.
    pub first_batch: u64,
    /// Upper bound of the batches it yields (exact when no filter or delete file drops rows).
    pub max_batches: u64,
    /// Rows in its files per the manifests (before filters and deletes); `None` if unknown.
    pub record_count: Option<u64>,
    /// Source data files, in read order (each path shared with the planned read).
    pub files: Vec<FilePath>,
    /// How the files reach the destination: rewritten (read, projected, written) in batches of
    /// `batch_rows`, or copied/referenced whole as one batch.
    #[serde(default = "rewrite_route")]
    pub route: FileRoute,
}

fn rewrite_route() -> FileRoute {
    FileRoute::Rewrite
}

impl MigrationTask {
    /// The batch indices this task may yield.
    pub fn batches(&self) -> std::ops::Range<u64> {
        self.first_batch..self.first_batch.saturating_add(self.max_batches)
    }
}

/// The data files a task wrote, per batch, not yet committed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskOutput {
    /// [`PLAN_FORMAT`].
    pub format: u32,
    /// The plan's job id: outputs of another plan are refused.
    pub job_id: String,
    /// The task executed.
    pub task: usize,
    /// Its batches, in order.
    pub batches: Vec<BatchOutput>,
}

/// One batch of a [`TaskOutput`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchOutput {
    /// The batch index.
    pub index: u64,
    /// Rows written.
    pub rows: u64,
    /// Arrow bytes of the rows written.
    pub bytes: u64,
    /// The partition spec the files were laid out by.
    pub spec_id: i32,
    /// The data files, each as Iceberg's JSON form of a `DataFile`.
    pub files: Vec<String>,
    /// True when the files are the source's own, referenced in place: never deleted.
    #[serde(default)]
    pub referenced: bool,
}

impl BatchOutput {
    /// The paths of the batch's data files, read from their JSON (no table needed).
    pub fn file_paths(&self) -> Result<Vec<String>> {
        self.files
            .iter()
            .map(|json| {
                serde_json::from_str::<serde_json::Value>(json)
                    .ok()
                    .and_then(|v| v.get("file_path")?.as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        MigrationError::InvalidInput(format!(
                            "batch {} of the task output holds a data file without a path",
                            self.index
                        ))
                    })
            })
            .collect()
    }
}

/// Cuts the planned read into tasks (see module docs). Files in `whole` (copied or referenced)
/// form tasks of their own, each one batch of whole files; a route change closes a task.
pub(crate) fn split_tasks(
    read: &PlannedRead,
    batch_rows: usize,
    whole: &HashMap<FilePath, FileRoute>,
) -> Vec<MigrationTask> {
    let batch_rows = batch_rows.max(1) as u64;
    // iceberg plans whole files and always knows their record counts; were one unknown, its
    // task would run past its batches, which the reader refuses rather than renumber.
    let mut tasks: Vec<MigrationTask> = Vec::new();
    let mut files: Vec<FilePath> = Vec::new();
    let mut rows = 0u64;
    let mut route = FileRoute::Rewrite;
    let mut next_batch = 0u64;
    let mut close = |files: &mut Vec<FilePath>,
                     rows: &mut u64,
                     route: FileRoute,
                     tasks: &mut Vec<MigrationTask>| {
        if files.is_empty() {
            return;
        }
        let max_batches = match route {
            FileRoute::Rewrite => rows.div_ceil(batch_rows).max(1),
            _ => 1,
        };
        // A task's list grew by doubling: the plan of a million files keeps only what it holds.
        let mut files = std::mem::take(files);
        files.shrink_to_fit();
        tasks.push(MigrationTask {
            id: tasks.len(),
            first_batch: next_batch,
            max_batches,
            record_count: Some(*rows),
            files,
            route,
        });
        next_batch += max_batches;
        *rows = 0;
    };
    for t in read.files.iter() {
        let this = whole.get(&t.path).copied().unwrap_or(FileRoute::Rewrite);
        if this != route {
            close(&mut files, &mut rows, route, &mut tasks);
            route = this;
        }
        files.push(t.path.clone());
        rows += t.record_count.unwrap_or(0);
        if rows >= batch_rows {
            close(&mut files, &mut rows, route, &mut tasks);
        }
    }
    close(&mut files, &mut rows, route, &mut tasks);
    tasks
}

/// A digest of the task layout: first batch, batch count, route and files of every task, and,
/// for a filtered read, how the filter decides rows (a checkpoint of a build that decided NULLs
/// and NaN otherwise numbered its batches over other rows).
pub(crate) fn layout_fingerprint(tasks: &[MigrationTask], filtered: bool) -> String {
    let mut h = twox_hash::XxHash3_128::new();
    if filtered {
        h.write(b"row filter: SQL three-valued logic, IEEE 754 NaN and zeros|");
    }
    for t in tasks {
        h.write(&t.first_batch.to_le_bytes());
        h.write(&t.max_batches.to_le_bytes());
        h.write(t.route.as_str().as_bytes());
        for f in &t.files {
            h.write(&(f.len() as u64).to_le_bytes());
            // The whole path's bytes (a streaming hash: the same digest as one write).
            h.write(f.dir().as_bytes());
            h.write(f.name().as_bytes());
        }
        h.write(b"|");
    }
    format!("{:032x}", h.finish_128())
}

/// Refuses a job id that could not have been made here (a UUID): a job id names folders — the
/// cluster's `iceberg-ops-<job id>/` attempt folders under the data location, the job's prefix
/// its cleanup deletes — so one read from an edited plan or checkpoint (`../x`) must not reach a
/// path outside the table.
pub(crate) fn check_job_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(MigrationError::InvalidInput(format!(
            "job id {id:?} is not one iceberg-ops makes (letters, digits, '-' and '_', at most 64): \
             the plan or checkpoint was edited; plan the job again"
        )))
    }
}

impl MigrationPlan {
    /// Shares the directories of the tasks' paths, each path having been read back on its own
    /// (a plan of a million files read from JSON).
    pub fn share_paths(&mut self) {
        let mut paths = ops_core::file_path::FilePaths::new();
        for f in self.tasks.iter_mut().flat_map(|t| t.files.iter_mut()) {
            *f = paths.share(f);
        }
    }

    /// Reads a plan written by `iceberg-ops migrate-data --plan-only --output json`.
    pub fn from_json(text: &str) -> Result<Self> {
        let mut plan: Self = serde_json::from_str(text).map_err(|e| {
            MigrationError::InvalidInput(format!(
                "not a migration plan (expected the JSON of `migrate-data --plan-only --output \
                 json`): {e}"
            ))
        })?;
        plan.share_paths();
        check_job_id(&plan.job_id)?;
        if plan.format != PLAN_FORMAT {
            return Err(MigrationError::InvalidInput(format!(
                "migration plan format {} is not supported by this build (format {PLAN_FORMAT}); \
                 re-plan with this version",
                plan.format
            )));
        }
        Ok(plan)
    }

    /// The task with id `id`.
    pub fn task(&self, id: usize) -> Result<&MigrationTask> {
        self.tasks.get(id).ok_or_else(|| {
            MigrationError::InvalidInput(match self.tasks.len() {
                0 => format!("the plan has no task {id}; it has no tasks"),
                1 => format!("the plan has no task {id}; its only task is 0"),
                n => format!("the plan has no task {id}; it has tasks 0 to {}", n - 1),
            })
        })
    }
}

impl MigrationPlan {
    /// The plan's source and destination in the given catalogs (the plan names them).
    pub(crate) fn table_refs(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
    ) -> Result<(TableRef, TableRef)> {
        let ident = |t: &str| {
            iceberg::TableIdent::from_strs(t.split('.')).map_err(|e| {
                MigrationError::InvalidInput(format!("the plan names table '{t}': {e}"))
            })
        };
        Ok((
            TableRef {
                handle: source.clone(),
                ident: ident(&self.source.table)?,
            },
            TableRef {
                handle: dest.clone(),
                ident: ident(&self.dest.table)?,
            },
        ))
    }

    /// Loads both tables and checks they are still the planned ones, in the planned layout.
    /// The commit step needs only the destination (`check_source` false).
    pub(crate) async fn tables(
        &self,
        source_ref: &TableRef,
        dest_ref: &TableRef,
        check_source: bool,
    ) -> Result<(Table, Table)> {
        let source = source_ref.load().await?;
        let dest = dest_ref.load().await?;
        let before = self
            .dest_snapshot_before
            .map_or("its state before the job".to_string(), |s| {
                format!("snapshot {s}")
            });
        let stale = |what: String| {
            MigrationError::InvalidInput(format!(
                "{what} since the plan was made; make a new plan (`migrate-data --plan-only`) — \
                 if batches of job {} were already committed, first roll the destination back \
                 to {before}, or the new job commits those rows again",
                self.job_id
            ))
        };
        if check_source && source.metadata().uuid().to_string() != self.source_uuid {
            return Err(stale(format!(
                "source {} is another table (UUID {})",
                source_ref.describe(),
                source.metadata().uuid()
            )));
        }
        if dest.metadata().uuid().to_string() != self.dest_uuid {
            return Err(stale(format!(
                "destination {} is another table (UUID {})",
                dest_ref.describe(),
                dest.metadata().uuid()
            )));
        }
        // The plan reads the pinned snapshot in its own schema: a later schema change of the
        // source does not matter, the snapshot's schema must still be the one planned.
        let pinned = crate::plan::pinned_schema(&source, self.source_snapshot_id).schema_id();
        if check_source && pinned != self.source_schema_id {
            return Err(stale(format!(
                "source {} reads snapshot {:?} in schema {}, but the plan was made for schema {}",
                source_ref.describe(),
                self.source_snapshot_id,
                pinned,
                self.source_schema_id
            )));
        }
        let md = dest.metadata();
        if md.current_schema_id() != self.dest_schema_id
            || md.default_partition_spec_id() != self.dest_spec_id
        {
            return Err(stale(format!(
                "the schema or partition spec of destination {} changed (schema {} → {}, spec \
                 {} → {})",
                dest_ref.describe(),
                self.dest_schema_id,
                md.current_schema_id(),
                self.dest_spec_id,
                md.default_partition_spec_id()
            )));
        }
        Ok((source, dest))
    }
}

impl TaskOutput {
    /// Reads an output written by `iceberg-ops migrate-data run-task`.
    pub fn from_json(text: &str) -> Result<Self> {
        let out: Self = serde_json::from_str(text).map_err(|e| {
            MigrationError::InvalidInput(format!(
                "not a task output (expected the JSON of `migrate-data run-task`): {e}"
            ))
        })?;
        if out.format != PLAN_FORMAT {
            return Err(MigrationError::InvalidInput(format!(
                "task output format {} is not supported by this build (format {PLAN_FORMAT})",
                out.format
            )));
        }
        Ok(out)
    }
}

/// The partition type and schema a destination's files are (de)serialized with.
pub(crate) fn file_codec(dest: &Table, spec_id: i32) -> Result<(StructType, Schema)> {
    let md = dest.metadata();
    let spec = md.partition_spec_by_id(spec_id).ok_or_else(|| {
        MigrationError::InvalidInput(format!(
            "destination {} has no partition spec {spec_id}; re-plan the migration",
            dest.identifier()
        ))
    })?;
    let schema = md.current_schema();
    Ok((spec.partition_type(schema)?, (**schema).clone()))
}

/// `files` in Iceberg's JSON form.
pub(crate) fn files_to_json(dest: &Table, spec_id: i32, files: &[DataFile]) -> Result<Vec<String>> {
    let (partition_type, _) = file_codec(dest, spec_id)?;
    let version = dest.metadata().format_version();
    files
        .iter()
        .map(|f| {
            iceberg::spec::serialize_data_file_to_json(f.clone(), &partition_type, version)
                .map_err(MigrationError::from)
        })
        .collect()
}

/// The data files of a [`BatchOutput`].
pub(crate) fn files_from_json(dest: &Table, batch: &BatchOutput) -> Result<Vec<DataFile>> {
    let (partition_type, schema) = file_codec(dest, batch.spec_id)?;
    batch
        .files
        .iter()
        .map(|json| {
            iceberg::spec::deserialize_data_file_from_json(
                json,
                batch.spec_id,
                &partition_type,
                &schema,
            )
            .map_err(|e| {
                MigrationError::InvalidInput(format!(
                    "batch {} of the task output holds a data file that does not parse: {e}",
                    batch.index
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_job_id_that_could_name_another_folder_is_refused() {
        for bad in ["", "..", "../x", "a/b", "x y", "é", &"a".repeat(65)] {
            assert!(check_job_id(bad).is_err(), "{bad:?}");
        }
        check_job_id(&uuid::Uuid::new_v4().to_string()).unwrap_or_else(|e| panic!("{e}"));
    }
    use super::*;

    fn read_of(counts: &[Option<u64>]) -> PlannedRead {
        let tasks = counts
            .iter()
            .enumerate()
            .map(|(i, c)| PlannedRead::bare_task(&format!("f{i}"), 10, *c))
            .collect();
        PlannedRead::of_tasks(Some(1), tasks)
    }

    #[test]
    fn small_files_group_until_a_batch_is_full_and_large_files_stand_alone() {
        let tasks = split_tasks(
            &read_of(&[Some(30), Some(30), Some(250), Some(10)]),
            50,
            &HashMap::new(),
        );
        let shape: Vec<(u64, u64, usize)> = tasks
            .iter()
            .map(|t| (t.first_batch, t.max_batches, t.files.len()))
            .collect();
        assert_eq!(shape, vec![(0, 2, 2), (2, 5, 1), (7, 1, 1)]);
        assert_eq!(tasks[1].files, vec![FilePath::new("f2")]);
    }

    /// Paths held as directory and name hash as their whole strings did: a checkpoint written
    /// before keeps its layout's fingerprint.
    #[test]
    fn a_layout_fingerprint_hashes_whole_paths() {
        let files = [
            "s3://b/t/data/x=1/f.parquet",
            "f.parquet",
            "s3://b/t/data/g.parquet",
        ];
        let task = MigrationTask {
            id: 0,
            first_batch: 3,
            max_batches: 2,
            record_count: Some(9),
            files: files.iter().map(|f| FilePath::new(f)).collect(),
            route: FileRoute::Rewrite,
        };
        let mut h = twox_hash::XxHash3_128::new();
        h.write(&3u64.to_le_bytes());
        h.write(&2u64.to_le_bytes());
        h.write(b"rewrite");
        for f in files {
            h.write(&(f.len() as u64).to_le_bytes());
            h.write(f.as_bytes());
        }
        h.write(b"|");
        assert_eq!(
            layout_fingerprint(&[task], false),
            format!("{:032x}", h.finish_128())
        );
    }

    #[test]
    fn empty_files_still_make_a_task() {
        let tasks = split_tasks(&read_of(&[Some(0)]), 50, &HashMap::new());
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].max_batches, 1);
    }

    #[test]
    fn copied_files_are_one_batch_per_task_and_a_route_change_closes_a_task() {
        let whole = HashMap::from([
            (FilePath::new("f1"), FileRoute::Copy),
            (FilePath::new("f2"), FileRoute::Copy),
            (FilePath::new("f3"), FileRoute::Copy),
        ]);
        let tasks = split_tasks(
            &read_of(&[Some(30), Some(30), Some(120), Some(10), Some(70)]),
            50,
            &whole,
        );
        let shape: Vec<(u64, u64, Vec<FilePath>, FileRoute)> = tasks
            .iter()
            .map(|t| (t.first_batch, t.max_batches, t.files.clone(), t.route))
            .collect();
        let f = |n: &[&str]| n.iter().map(|s| FilePath::new(s)).collect::<Vec<_>>();
        assert_eq!(
            shape,
            vec![
                (0, 1, f(&["f0"]), FileRoute::Rewrite),
                (1, 1, f(&["f1", "f2"]), FileRoute::Copy),
                (2, 1, f(&["f3"]), FileRoute::Copy),
                (3, 2, f(&["f4"]), FileRoute::Rewrite),
            ]
        );
    }
}
