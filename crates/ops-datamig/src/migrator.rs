//! The `DataMigrator`: settings, pre-flight, the streaming loop and resume.
//!
//! 1. Pre-flight, no writes: load both tables (the same table by UUID is refused), resolve the
//!    source snapshot (checkpoint → explicit → current), validate a resumed checkpoint (not
//!    completed, same job settings, source snapshot still there and agreeing with an explicit
//!    one, checkpointed batches still in the destination's history), parse the row filter,
//!    compute the reconciliation plan and check the write mode's prerequisites.
//! 2. Pre-flight writes: auto-added and widened columns in one schema commit, then the
//!    checkpoint's fresh start (with the job identity, its id and `dest_snapshot_before`).
//! 3. Stream: a reader task reads the pinned snapshot in a fixed file order, cuts it into chunks
//!    of exactly `batch_rows` rows and projects them, while this task encodes, writes and
//!    commits the previous chunk — one commit per chunk, tagged `iceberg-ops.migration-job` /
//!    `iceberg-ops.migration-batch` — then marks the checkpoint and reports progress.
//! 4. Post-flight: mark the checkpoint completed.
//!
//! On resume, a batch that landed in the destination but was not checkpointed (a crash between
//! commit and checkpoint) is found by its summary tags and recorded instead of written again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::StreamExt;
use iceberg::expr::Predicate;
use iceberg::spec::{DataFile, ManifestContentType, Schema, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{TableCreation, TableIdent};
use ops_checkpoint::{CheckpointState, CheckpointStore, JobIdentity};
use ops_core::CatalogHandle;
use ops_core::ops::evolve_schema::EvolveSchemaBuilder;
use ops_reconcile::{MissingInDest, MissingInSource, ReconciliationPlan, SchemaReconciler};
use serde_json::{Value, json};

use crate::committer::{Committer, CommitterSetup};
use crate::job::{MigrationPlan, MigrationTask};
use crate::read::PlannedRead;
use crate::worker::{TaskContext, WorkerMsg};
use crate::{
    CopyMode, FileRoute, MigrationError, MigrationResult, PartitionStrategy, Result, RowFilter,
    VerificationResult, VerifyMethod, WriteMode,
};

/// Summary key holding the job id on every snapshot a batch creates.
pub const MIGRATION_JOB_PROPERTY: &str = "iceberg-ops.migration-job";
/// Summary key holding the batch index on every snapshot a batch creates.
pub const MIGRATION_BATCH_PROPERTY: &str = "iceberg-ops.migration-batch";
/// The default `batch_rows`.
pub const DEFAULT_BATCH_ROWS: usize = 50_000;

/// `progress(rows_done, rows_total_or_none)`, called after each committed batch.
pub type Progress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// A table in a catalog.
#[derive(Clone)]
pub(crate) struct TableRef {
    pub handle: CatalogHandle,
    pub ident: TableIdent,
}

impl TableRef {
    pub(crate) fn describe(&self) -> String {
        format!("{} (catalog '{}')", self.ident, self.handle.name())
    }

    fn locator(&self) -> crate::job::TableLocator {
        crate::job::TableLocator {
            catalog: self.handle.name().to_string(),
            table: self.ident.to_string(),
        }
    }

    pub(crate) async fn load(&self) -> Result<Table> {
        self.handle
            .catalog()
            .load_table(&self.ident)
            .await
            .map_err(|e| {
                MigrationError::InvalidInput(format!("cannot load table {}: {e}", self.describe()))
            })
    }
}

/// What `run_or_plan` ended with.
enum Outcome {
    Ran(Box<MigrationResult>),
    Planned(Box<MigrationPlan>),
}

/// Streaming, schema-reconciling, resumable Iceberg-to-Iceberg migrator (see the module docs).
#[must_use = "a DataMigrator does nothing until run"]
pub struct DataMigrator {
    pub(crate) source: TableRef,
    pub(crate) dest: TableRef,
    pub(crate) reconciler: SchemaReconciler,
    partition_strategy: PartitionStrategy,
    pub(crate) row_filter: Option<RowFilter>,
    pub(crate) source_snapshot: Option<i64>,
    batch_rows: usize,
    write_mode: WriteMode,
    upsert_keys: Option<Vec<String>>,
    checkpoint: Option<PathBuf>,
    progress: Option<Progress>,
    dry_run: bool,
    create_dest: bool,
    /// Local workers executing tasks (default: one per core).
    workers: Option<usize>,
    copy_mode: CopyMode,
    /// The snapshot the last `run` read; `verify` reads the source there.
    pub(crate) last_source_snapshot: Option<i64>,
}

impl std::fmt::Debug for DataMigrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataMigrator")
            .field("source", &self.source.describe())
            .field("dest", &self.dest.describe())
            .field("reconciler", &self.reconciler)
            .field("row_filter", &self.row_filter)
            .field("source_snapshot", &self.source_snapshot)
            .field("batch_rows", &self.batch_rows)
            .field("write_mode", &self.write_mode)
            .field("upsert_keys", &self.upsert_keys)
            .field("checkpoint", &self.checkpoint)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

impl DataMigrator {
    /// A migration of `source` (in `source_catalog`) into `dest` (in `dest_catalog`), with the
    /// seed's defaults: strict reconciler, PRESERVE, no filter, current snapshot, 50,000 rows
    /// per batch, append, no checkpoint.
    pub fn new(
        source_catalog: &CatalogHandle,
        source: TableIdent,
        dest_catalog: &CatalogHandle,
        dest: TableIdent,
    ) -> Self {
        Self {
            source: TableRef {
                handle: source_catalog.clone(),
                ident: source,
            },
            dest: TableRef {
                handle: dest_catalog.clone(),
                ident: dest,
            },
            reconciler: SchemaReconciler::new(),
            partition_strategy: PartitionStrategy::Preserve,
            row_filter: None,
            source_snapshot: None,
            batch_rows: DEFAULT_BATCH_ROWS,
            write_mode: WriteMode::Append,
            upsert_keys: None,
            checkpoint: None,
            progress: None,
            dry_run: false,
            create_dest: false,
            workers: None,
            copy_mode: CopyMode::Auto,
            last_source_snapshot: None,
        }
    }

    /// How source columns map onto destination columns (renames, coercions, policies).
    pub fn schema_reconciler(mut self, reconciler: SchemaReconciler) -> Self {
        self.reconciler = reconciler;
        self
    }

    /// How the destination's partition spec is treated (only PRESERVE).
    pub fn partition_strategy(mut self, strategy: PartitionStrategy) -> Self {
        self.partition_strategy = strategy;
        self
    }

    /// Only source rows matching `filter` are migrated.
    pub fn row_filter(mut self, filter: impl Into<RowFilter>) -> Self {
        self.row_filter = Some(filter.into());
        self
    }

    /// Read the source at this snapshot (default: its current one when `run` starts).
    pub fn source_snapshot(mut self, snapshot_id: i64) -> Self {
        self.source_snapshot = Some(snapshot_id);
        self
    }

    /// Rows per destination commit (default 50,000; 0 is rejected).
    pub fn batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows;
        self
    }

    /// How each chunk is written.
    pub fn write_mode(mut self, mode: WriteMode) -> Self {
        self.write_mode = mode;
        self
    }

    /// The key columns of an upsert (destination names); required for upsert only.
    pub fn upsert_keys(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.upsert_keys = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Record progress in the checkpoint file at `path`; an existing file is resumed.
    pub fn checkpoint(mut self, path: impl Into<PathBuf>) -> Self {
        self.checkpoint = Some(path.into());
        self
    }

    /// Called as `progress(rows_done, rows_total_or_none)` after each committed batch.
    pub fn progress(mut self, f: impl Fn(u64, Option<u64>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Create the destination when it does not exist: the source's current schema with the
    /// reconciler's renames and coercions (field ids kept) and the source's partition spec.
    pub fn create_dest(mut self, create: bool) -> Self {
        self.create_dest = create;
        self
    }

    /// Local workers reading, projecting and writing tasks in parallel (default: one per
    /// core; 0 is rejected). Commits stay in batch order whatever the number.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// Whether source data files may be copied whole instead of rewritten (default
    /// [`CopyMode::Auto`]: copy every file the fast path can take; see [`crate::route_files`]).
    pub fn copy_mode(mut self, mode: CopyMode) -> Self {
        self.copy_mode = mode;
        self
    }

    /// Run every check and read the source through the reconciler, writing nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Checks the settings alone (the seed's constructor `ValueError`s).
    fn validate_settings(&self) -> Result<()> {
        if self.workers == Some(0) {
            return Err(MigrationError::InvalidInput(
                "workers must be at least 1 (default: one per core)".into(),
            ));
        }
        if self.batch_rows == 0 {
            return Err(MigrationError::InvalidInput(
                "batch_rows must be at least 1 (default 50,000)".into(),
            ));
        }
        let PartitionStrategy::Preserve = self.partition_strategy;
        match (&self.upsert_keys, self.write_mode) {
            (None, WriteMode::Upsert) => {
                return Err(MigrationError::InvalidInput(
                    "write_mode upsert needs upsert_keys: the destination columns that identify \
                     a row (--upsert-keys k1,k2)"
                        .into(),
                ));
            }
            (Some(_), mode) if mode != WriteMode::Upsert => {
                return Err(MigrationError::InvalidInput(format!(
                    "upsert_keys are only used by write_mode upsert, not {mode}; drop them or \
                     set write_mode upsert"
                )));
            }
            (Some(keys), _) => {
                if keys.is_empty() {
                    return Err(MigrationError::InvalidInput(
                        "upsert_keys is empty; name at least one key column".into(),
                    ));
                }
                let mut seen = HashSet::new();
                for k in keys {
                    if k.trim().is_empty() {
                        return Err(MigrationError::InvalidInput(
                            "upsert_keys holds a blank name; list column names only".into(),
                        ));
                    }
                    if !seen.insert(k.as_str()) {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{k}' is listed twice"
                        )));
                    }
                }
            }
            (None, _) => {}
        }
        Ok(())
    }

    /// The settings a resumed run must share with the run that started the checkpoint.
    fn job_settings(&self, source: &Table, dest: &Table) -> JobIdentity {
        let reconciler = &self.reconciler;
        let coercions: BTreeMap<&String, String> = reconciler
            .type_coercions
            .iter()
            .map(|(k, t)| (k, t.to_string()))
            .collect();
        let settings = json!({
            "source_table": self.source.ident.to_string(),
            "dest_table": self.dest.ident.to_string(),
            "source_table_uuid": source.metadata().uuid().to_string(),
            "dest_table_uuid": dest.metadata().uuid().to_string(),
            "row_filter": self.row_filter.as_ref().map(RowFilter::describe),
            "batch_rows": self.batch_rows,
            "write_mode": self.write_mode.as_str(),
            "copy_mode": self.copy_mode.as_str(),
            "upsert_keys": self.upsert_keys,
            "partition_strategy": "preserve",
            "reconciler": {
                "column_mapping": reconciler.column_mapping,
                "type_coercions": coercions,
                "on_missing_in_source": missing_in_source(reconciler.on_missing_in_source),
                "on_missing_in_dest": missing_in_dest(reconciler.on_missing_in_dest),
            },
        });
        match settings {
            Value::Object(m) => m,
            _ => JobIdentity::new(),
        }
    }

    /// Runs the migration (see the module docs).
    pub async fn run(&mut self) -> Result<MigrationResult> {
        match self.run_or_plan(false).await? {
            Outcome::Ran(result) => Ok(*result),
            Outcome::Planned(_) => Err(MigrationError::InvalidInput(
                "internal: a run returned a plan".into(),
            )),
        }
    }

    /// Pre-flight, including its writes (columns added, the destination created), then the
    /// task list instead of executing it: hand the plan's tasks to
    /// [`MigrationPlan::execute_task`] in any process and the outputs to
    /// [`MigrationPlan::commit`]. Checkpoint and dry run settings are refused here — the
    /// committer takes the checkpoint.
    pub async fn plan(&mut self) -> Result<MigrationPlan> {
        if self.dry_run || self.checkpoint.is_some() {
            return Err(MigrationError::InvalidInput(
                "a plan is made without dry_run and without a checkpoint: pass the checkpoint \
                 to the commit step (`iceberg-ops migrate-data commit --checkpoint PATH`)"
                    .into(),
            ));
        }
        if self.write_mode == WriteMode::Upsert {
            return Err(MigrationError::InvalidInput(
                "write_mode upsert cannot be planned for other processes: each batch reads the \
                 destination's keys at commit time; run it with `migrate-data` directly"
                    .into(),
            ));
        }
        match self.run_or_plan(true).await? {
            Outcome::Planned(plan) => Ok(*plan),
            Outcome::Ran(_) => Err(MigrationError::InvalidInput(
                "the destination does not exist; planning needs create_dest to create it".into(),
            )),
        }
    }

    async fn run_or_plan(&mut self, plan_only: bool) -> Result<Outcome> {
        let started = Instant::now();
        self.validate_settings()?;
        let source = self.source.load().await?;
        if !self
            .dest
            .handle
            .catalog()
            .table_exists(&self.dest.ident)
            .await?
            && let Some(result) = self.create_destination(started, &source).await?
        {
            return Ok(Outcome::Ran(Box::new(result)));
        }
        let mut dest = self.dest.load().await?;
        if source.metadata().uuid() == dest.metadata().uuid() {
            return Err(MigrationError::InvalidInput(format!(
                "source {} and destination {} are the same table (UUID {}); migrate into a \
                 different table",
                self.source.describe(),
                self.dest.describe(),
                source.metadata().uuid()
            )));
        }

        // A dry run ignores the checkpoint.
        let mut store = match (&self.checkpoint, self.dry_run) {
            (Some(path), false) => Some(CheckpointStore::new(path)),
            _ => None,
        };
        let resume: Option<CheckpointState> = match &mut store {
            Some(s) if s.exists() => s.state()?,
            _ => None,
        };
        let settings = self.job_settings(&source, &dest);

        let (snapshot_id, job_id, dest_snapshot_before) = match &resume {
            Some(state) => self.validate_resume(state, &settings, &source, &dest)?,
            None => {
                let snapshot_id = match self.source_snapshot {
                    Some(id) => {
                        if source.metadata().snapshot_by_id(id).is_none() {
                            return Err(MigrationError::InvalidInput(format!(
                                "source {} has no snapshot {id}; list them with `iceberg-ops \
                                 table snapshots`",
                                self.source.describe()
                            )));
                        }
                        Some(id)
                    }
                    None => source.metadata().current_snapshot_id(),
                };
                (
                    snapshot_id,
                    uuid::Uuid::new_v4().to_string(),
                    dest.metadata().current_snapshot_id(),
                )
            }
        };
        let predicate = self.predicate(&source, snapshot_id)?;
        let mut plan = self.compute_plan(&source, &dest)?;
        self.check_write_mode(&plan, Some(&dest))?;

        let mut result = MigrationResult {
            dry_run: self.dry_run,
            checkpoint_path: store.as_ref().map(|s| s.path().to_path_buf()),
            source_snapshot_id: snapshot_id,
            ..MigrationResult::default()
        };
        let read = PlannedRead::plan(&source, snapshot_id, predicate.clone()).await?;
        let total = read.exact_rows();
        self.last_source_snapshot = snapshot_id;
        result.copy_mode = self.copy_mode;
        let mut whole = self
            .route(
                &source,
                snapshot_id,
                &dest,
                &plan,
                predicate.as_ref(),
                &read,
                &mut result,
            )
            .await?;

        if self.dry_run {
            return Ok(Outcome::Ran(Box::new(
                self.dry_run_read(started, &source, &read, plan, result)
                    .await?,
            )));
        }

        // Pre-flight writes: schema first, then the checkpoint.
        if !plan.auto_add_columns.is_empty() || !plan.widen_columns.is_empty() {
            let mut evolve = EvolveSchemaBuilder::new(&self.dest.handle, self.dest.ident.clone());
            for (name, ty) in &plan.auto_add_columns {
                evolve = evolve.add_column(name.clone(), ty.clone());
                result.schema_changes.push(name.clone());
            }
            for (name, _, to) in &plan.widen_columns {
                if let Type::Primitive(p) = to {
                    evolve = evolve.widen_column(name.clone(), p.clone());
                }
            }
            let (table, _) = evolve.await?;
            tracing::info!(dest = %self.dest.ident, added = ?result.schema_changes, "destination schema evolved");
            dest = table;
            plan = self.compute_plan(&source, &dest)?;
            whole = self
                .route(
                    &source,
                    snapshot_id,
                    &dest,
                    &plan,
                    predicate.as_ref(),
                    &read,
                    &mut result,
                )
                .await?;
        }
        if plan_only {
            let tasks =
                crate::job::split_tasks(&read, self.batch_rows, &routes_of(&whole, self.copy_mode));
            let md = dest.metadata();
            return Ok(Outcome::Planned(Box::new(MigrationPlan {
                format: crate::job::PLAN_FORMAT,
                job_id,
                source: self.source.locator(),
                dest: self.dest.locator(),
                source_uuid: source.metadata().uuid().to_string(),
                dest_uuid: md.uuid().to_string(),
                source_snapshot_id: snapshot_id,
                source_schema_id: source.metadata().current_schema_id(),
                dest_schema_id: md.current_schema_id(),
                dest_spec_id: md.default_partition_spec_id(),
                dest_snapshot_before,
                reconciler: self.reconciler.clone(),
                row_filter: self.row_filter.clone(),
                batch_rows: self.batch_rows,
                write_mode: self.write_mode,
                copy_mode: self.copy_mode,
                total_rows: total,
                tasks,
            })));
        }
        let tasks =
            crate::job::split_tasks(&read, self.batch_rows, &routes_of(&whole, self.copy_mode));
        // Batch numbers come from the task layout (which files, which route, how many batches
        // each): a resume must see the very same layout, or it would skip rows or repeat them.
        let layout = crate::job::layout_fingerprint(&tasks, read.filtered);
        if let Some(state) = &resume {
            let had = state
                .job
                .as_ref()
                .and_then(|j| j.get("task_layout"))
                .and_then(Value::as_str);
            if had != Some(layout.as_str()) {
                return Err(MigrationError::Resume {
                    path: self.checkpoint.clone().unwrap_or_default(),
                    reason: "the source files would be cut into other batches than the \
                             checkpointed run cut them (the source or destination schema, \
                             partition spec or copy eligibility changed since, or the run was \
                             checkpointed by a version that decided the row filter's NULLs and \
                             NaNs differently); resuming would skip or repeat rows"
                        .into(),
                    committed_batches: state.last_committed_batch.map_or(0, |b| b + 1),
                    rollback_to: dest_snapshot_before,
                });
            }
        }
        let mut job = settings;
        job.insert("job_id".into(), json!(job_id));
        job.insert("dest_snapshot_before".into(), json!(dest_snapshot_before));
        job.insert("task_layout".into(), json!(layout));
        if let (Some(s), None) = (&mut store, &resume) {
            s.start(snapshot_id, Some(job))?;
        }
        result.job_id = Some(job_id.clone());
        result.dest_snapshot_before = dest_snapshot_before;

        let resume_from = resume
            .as_ref()
            .and_then(|s| s.last_committed_batch)
            .map_or(0, |b| b + 1);
        let landed = if resume.is_some() {
            landed_batches(&dest, &job_id, resume_from)
        } else {
            BTreeMap::new()
        };
        // Tasks wholly before the resume point are not read again; their rows count as done
        // when the manifests tell them exactly.
        let exact = total.is_some();
        let (resumed_batches, resumed_rows) = tasks
            .iter()
            .filter(|t| t.batches().end <= resume_from)
            .fold((0u64, 0u64), |(b, r), t| {
                let rows = if exact {
                    t.record_count.unwrap_or(0)
                } else {
                    0
                };
                (b + t.max_batches, r + rows)
            });
        let mut committer = Committer::new(CommitterSetup {
            handle: self.dest.handle.clone(),
            ident: self.dest.ident.clone(),
            dest_name: self.dest.describe(),
            mode: self.write_mode,
            job_id: job_id.clone(),
            upsert_keys: self.upsert_keys.clone().unwrap_or_default(),
            dest: dest.clone(),
            dest_snapshot_before,
            store: store.take(),
            landed: landed.clone(),
            progress: self.progress.clone(),
            total,
            resumed_batches,
            resumed_rows,
            resume_from,
        })
        .await?;
        let by_path = crate::worker::index_files(&read);
        let ctx = Arc::new(TaskContext {
            source: source.clone(),
            dest,
            read,
            plan: plan.clone(),
            batch_rows: self.batch_rows,
            read_batch_size: self.read_batch_size(),
            mode: self.write_mode,
            resume_from,
            landed: landed.keys().copied().collect(),
            cancel: AtomicBool::new(false),
            by_path,
            whole_files: whole,
        });
        let outcome = self.execute_locally(&ctx, &tasks, &mut committer).await;
        let mut store = committer.store.take();
        committer.finish(&mut result);
        outcome?;
        if let Some(s) = &mut store {
            s.mark_completed()?;
        }
        result.plan = Some(plan);
        result.duration_seconds = started.elapsed().as_secs_f64();
        tracing::info!(
            rows = result.rows_moved,
            commits = result.new_snapshots.len(),
            secs = result.duration_seconds,
            "migration finished"
        );
        Ok(Outcome::Ran(Box::new(result)))
    }

    /// Routes every live source file (copy, reference, rewrite or skip) and reports it in
    /// `result`; returns the files to copy or reference, by path.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn route(
        &self,
        source: &Table,
        snapshot_id: Option<i64>,
        dest: &Table,
        plan: &ReconciliationPlan,
        predicate: Option<&Predicate>,
        read: &PlannedRead,
        result: &mut MigrationResult,
    ) -> Result<HashMap<String, DataFile>> {
        let Some(id) = snapshot_id else {
            return Ok(HashMap::new());
        };
        let routing = crate::copy::route_files(
            source,
            id,
            dest,
            plan,
            predicate,
            self.write_mode,
            self.copy_mode,
        )
        .await?;
        let planned: HashSet<&str> = read
            .tasks
            .iter()
            .map(|t| t.data_file_path.as_str())
            .collect();
        let mut whole = HashMap::new();
        result.files.clear();
        result.files_copied = 0;
        result.files_referenced = 0;
        result.files_rewritten = 0;
        for f in routing.files {
            let mut routed = f.routed;
            // The scan planner also prunes by column statistics: such a file has no row to move.
            if routed.route != FileRoute::Skip && !planned.contains(routed.path.as_str()) {
                routed.route = FileRoute::Skip;
                routed.reason = "no row can match the row filter (manifest statistics)".into();
            }
            match routed.route {
                FileRoute::Copy => result.files_copied += 1,
                FileRoute::Reference => result.files_referenced += 1,
                FileRoute::Rewrite => result.files_rewritten += 1,
                FileRoute::Skip => {}
            }
            if matches!(routed.route, FileRoute::Copy | FileRoute::Reference) {
                whole.insert(routed.path.clone(), f.data_file);
            }
            result.files.push(routed);
        }
        // Which route each file took is part of the task layout a resume must reproduce.
        let routes = result
            .files
            .iter()
            .filter(|f| whole.contains_key(&f.path))
            .count();
        tracing::info!(
            copied = result.files_copied,
            referenced = result.files_referenced,
            rewritten = result.files_rewritten,
            whole = routes,
            "source files routed"
        );
        Ok(whole)
    }

    /// The default executor: workers (one per core) execute the tasks, this task commits.
    async fn execute_locally(
        &self,
        ctx: &Arc<TaskContext>,
        tasks: &[MigrationTask],
        committer: &mut Committer,
    ) -> Result<()> {
        let workers = self
            .workers
            .unwrap_or_else(crate::worker::default_workers)
            .clamp(1, tasks.len().max(1));
        let mut receivers = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        // How far a worker may run ahead of the committer. The committer takes a task's batches
        // in order from the one worker that has it, so with one batch of run-ahead the other
        // worker idled through most of each task. Written batches wait as files on disk (a
        // failed run deletes the ones never committed), so a worker may finish its whole task;
        // an upsert's batches wait as rows in memory, so one.
        let ahead = if self.write_mode == WriteMode::Upsert {
            1
        } else {
            // Plus the task's closing message.
            tasks
                .iter()
                .map(|t| t.max_batches)
                .max()
                .unwrap_or(1)
                .clamp(1, 16) as usize
                + 1
        };
        for share in crate::worker::deal(tasks, workers) {
            let (tx, rx) = tokio::sync::mpsc::channel(ahead);
            receivers.push(rx);
            handles.push(tokio::spawn(crate::worker::run_worker(
                Arc::clone(ctx),
                share,
                tx,
            )));
        }
        let outcome = async {
            for task in tasks {
                if ctx.fully_resumed(task) {
                    continue;
                }
                let rx = &mut receivers[task.id % workers];
                loop {
                    let msg = match rx.recv().await {
                        Some(Ok(m)) => m,
                        Some(Err(e)) => {
                            return Err(self.batch_error(
                                committer.next_batch(),
                                committer.batches_done,
                                e,
                            ));
                        }
                        None => {
                            return Err(MigrationError::InvalidInput(format!(
                                "the worker executing task {} stopped without a result",
                                task.id
                            )));
                        }
                    };
                    match msg {
                        WorkerMsg::TaskDone(id) if id == task.id => break,
                        WorkerMsg::TaskDone(id) => {
                            return Err(MigrationError::InvalidInput(format!(
                                "internal: task {id} finished while task {} was expected",
                                task.id
                            )));
                        }
                        WorkerMsg::Batch(work) => {
                            let index = work.index;
                            let done = committer.batches_done;
                            committer
                                .handle(work)
                                .await
                                .map_err(|e| self.batch_error(index, done, e))?;
                        }
                    }
                }
            }
            Ok(())
        }
        .await;
        if outcome.is_err() {
            // Stop the workers and delete the files they wrote that will never be committed.
            ctx.cancel.store(true, Ordering::SeqCst);
            for rx in &mut receivers {
                while let Some(msg) = rx.recv().await {
                    if let Ok(WorkerMsg::Batch(work)) = msg {
                        crate::worker::discard(&ctx.dest, work.payload).await;
                    }
                }
            }
        }
        drop(receivers);
        for h in handles {
            if let Err(join) = h.await
                && outcome.is_ok()
            {
                return Err(MigrationError::InvalidInput(format!(
                    "a migration worker failed: {join}"
                )));
            }
        }
        outcome
    }

    /// Reads the planned source through `plan`, counting what a run would write.
    async fn dry_run_read(
        &self,
        started: Instant,
        source: &Table,
        read: &PlannedRead,
        plan: ReconciliationPlan,
        mut result: MigrationResult,
    ) -> Result<MigrationResult> {
        let mut rows = 0u64;
        let mut bytes = 0u64;
        let mut stream = read.stream(source, self.read_batch_size())?;
        while let Some(batch) = stream.next().await {
            let projected = ops_reconcile::project_batch(&batch?, &plan)?;
            rows += projected.num_rows() as u64;
            bytes += projected.get_array_memory_size() as u64;
        }
        if let Some(p) = &self.progress {
            p(rows, Some(rows));
        }
        result.dry_run = true;
        result.estimated_rows = Some(rows);
        result.estimated_bytes = Some(bytes);
        result.plan = Some(plan);
        result.duration_seconds = started.elapsed().as_secs_f64();
        Ok(result)
    }

    /// The destination does not exist: with `create_dest`, check everything against the schema
    /// it would get, then create it (a dry run only reports). `Some` is a finished dry run.
    async fn create_destination(
        &self,
        started: Instant,
        source: &Table,
    ) -> Result<Option<MigrationResult>> {
        if !self.create_dest {
            return Err(MigrationError::InvalidInput(format!(
                "destination {} does not exist; create it first, or set create_dest \
                 (--create-dest) to create it from the reconciled source schema and the \
                 source's partition spec",
                self.dest.describe()
            )));
        }
        let (schema, spec) = self.dest_layout(source)?;
        let snapshot = match self.source_snapshot {
            Some(id) if source.metadata().snapshot_by_id(id).is_none() => {
                return Err(MigrationError::InvalidInput(format!(
                    "source {} has no snapshot {id}",
                    self.source.describe()
                )));
            }
            Some(id) => Some(id),
            None => source.metadata().current_snapshot_id(),
        };
        let predicate = self.predicate(source, snapshot)?;
        let plan = self.compute_plan_for(source.metadata().current_schema(), &schema)?;
        self.check_write_mode(&plan, None)?;
        if self.dry_run {
            let read = PlannedRead::plan(source, snapshot, predicate).await?;
            let result = MigrationResult {
                source_snapshot_id: snapshot,
                ..MigrationResult::default()
            };
            return Ok(Some(
                self.dry_run_read(started, source, &read, plan, result)
                    .await?,
            ));
        }
        if let Some(path) = &self.checkpoint
            && path.is_file()
        {
            return Err(MigrationError::Resume {
                path: path.clone(),
                reason: format!(
                    "the destination {} it was writing no longer exists; delete the checkpoint \
                     to start over",
                    self.dest.describe()
                ),
                committed_batches: 0,
                rollback_to: None,
            });
        }
        let catalog = self.dest.handle.catalog();
        let ns = self.dest.ident.namespace();
        if !catalog.namespace_exists(ns).await? {
            catalog.create_namespace(ns, HashMap::new()).await?;
        }
        let table = catalog
            .create_table(
                ns,
                TableCreation::builder()
                    .name(self.dest.ident.name().to_string())
                    .schema(schema)
                    .partition_spec(spec)
                    .build(),
            )
            .await?;
        tracing::info!(dest = %table.identifier(), "destination created (create_dest)");
        Ok(None)
    }

    /// The schema `create_dest` gives the destination: the source's current schema with the
    /// reconciler's renames and coercions, every field keeping its id; and the source's
    /// partition spec.
    fn dest_layout(&self, source: &Table) -> Result<(Schema, UnboundPartitionSpec)> {
        let md = source.metadata();
        let current = md.current_schema();
        let mut fields = Vec::new();
        for f in current.as_struct().fields() {
            let mut f = (**f).clone();
            if let Some(to) = self.reconciler.column_mapping.get(&f.name) {
                f.name = to.clone();
            }
            if let Some(ty) = self.reconciler.type_coercions.get(&f.name) {
                if !ops_reconcile::is_legal_promotion(&f.field_type, ty) {
                    return Err(MigrationError::InvalidInput(format!(
                        "type_coercions['{}'] = {ty} is not a legal Iceberg promotion of the \
                         source type {}; create_dest can only widen (int→long, \
                         float→double, decimal precision up)",
                        f.name, f.field_type
                    )));
                }
                *f.field_type = ty.clone();
            }
            fields.push(Arc::new(f));
        }
        let schema = Schema::builder()
            .with_schema_id(0)
            .with_fields(fields)
            .with_identifier_field_ids(current.identifier_field_ids())
            .build()?;
        let source_spec = md.default_partition_spec();
        let mut spec = UnboundPartitionSpec::builder();
        for pf in source_spec.fields() {
            spec = spec.add_partition_field(pf.source_id, pf.name.clone(), pf.transform)?;
        }
        Ok((schema, spec.build()))
    }

    /// Post-migration consistency check (see [`crate::verify`]).
    pub async fn verify(
        &self,
        method: VerifyMethod,
        sample_size: usize,
    ) -> Result<VerificationResult> {
        crate::verify::verify(self, method, sample_size).await
    }

    pub(crate) fn read_batch_size(&self) -> usize {
        self.batch_rows.clamp(1, 65_536)
    }

    pub(crate) fn batch_error(
        &self,
        batch: u64,
        committed: u64,
        e: MigrationError,
    ) -> MigrationError {
        MigrationError::Batch {
            batch,
            committed_batches: committed,
            checkpoint: self.checkpoint.clone().filter(|_| !self.dry_run),
            source: Box::new(e),
        }
    }

    /// The row filter as a predicate over the snapshot being read.
    pub(crate) fn predicate(
        &self,
        source: &Table,
        snapshot: Option<i64>,
    ) -> Result<Option<Predicate>> {
        let md = source.metadata();
        let read_schema = snapshot
            .and_then(|id| md.snapshot_by_id(id))
            .and_then(|s| s.schema_id())
            .and_then(|id| md.schema_by_id(id))
            .unwrap_or_else(|| md.current_schema());
        Ok(match &self.row_filter {
            None => None,
            Some(RowFilter::Expression(text)) => Some(ops_core::filter::parse_filter_at(
                text,
                md.current_schema(),
                read_schema,
            )?),
            Some(RowFilter::Predicate(p)) => Some(p.clone()),
        })
    }

    pub(crate) fn compute_plan(&self, source: &Table, dest: &Table) -> Result<ReconciliationPlan> {
        self.compute_plan_for(
            source.metadata().current_schema(),
            dest.metadata().current_schema(),
        )
    }

    fn compute_plan_for(&self, src: &Schema, dst: &Schema) -> Result<ReconciliationPlan> {
        Ok(if self.write_mode == WriteMode::Upsert {
            self.reconciler.compute_upsert_plan(src, dst)?
        } else {
            self.reconciler.compute_plan(src, dst)?
        })
    }

    fn check_write_mode(&self, plan: &ReconciliationPlan, dest: Option<&Table>) -> Result<()> {
        if let Some(keys) = &self.upsert_keys {
            for key in keys {
                match plan.projections.iter().find(|p| &p.dest_name == key) {
                    None => {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{key}' is not a column of the projected destination \
                             schema ({})",
                            plan.projections
                                .iter()
                                .map(|p| p.dest_name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Some(p) if p.fill_with_null || p.source_name.is_none() => {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{key}' has no source column (it would be filled with \
                             null); map a source column to it with column_mapping"
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
        if self.write_mode == WriteMode::Upsert
            && dest
                .is_some_and(|d| d.metadata().format_version() == iceberg::spec::FormatVersion::V3)
        {
            return Err(MigrationError::InvalidInput(format!(
                "destination {} is an Iceberg v3 table; ops-core writes v1 and v2 tables",
                self.dest.describe()
            )));
        }
        Ok(())
    }

    /// Validates a checkpoint to resume; returns (source snapshot, job id, dest_snapshot_before).
    fn validate_resume(
        &self,
        state: &CheckpointState,
        settings: &JobIdentity,
        source: &Table,
        dest: &Table,
    ) -> Result<(Option<i64>, String, Option<i64>)> {
        let committed = state.last_committed_batch.map_or(0, |b| b + 1);
        let rollback_to = state
            .job
            .as_ref()
            .and_then(|j| j.get("dest_snapshot_before"))
            .and_then(Value::as_i64);
        let refuse = |reason: String| MigrationError::Resume {
            path: self.checkpoint.clone().unwrap_or_default(),
            reason,
            committed_batches: committed,
            rollback_to,
        };
        if state.completed {
            return Err(refuse(
                "it records a completed migration; delete the file (or call \
                 CheckpointStore::reset()) to run the job again"
                    .into(),
            ));
        }
        let Some(job) = &state.job else {
            return Err(refuse(
                "it records no job identity, so it cannot be matched to these settings; \
                 delete it to start over"
                    .into(),
            ));
        };
        let mut differences = Vec::new();
        for (key, want) in settings {
            let had = job.get(key).unwrap_or(&Value::Null);
            if had != want {
                differences.push(format!("{key}: checkpoint has {had}, this run has {want}"));
            }
        }
        if !differences.is_empty() {
            return Err(refuse(format!(
                "it was started with different settings ({}); run with the original settings, \
                 or give this job its own checkpoint file",
                differences.join("; ")
            )));
        }
        let Some(job_id) = job.get("job_id").and_then(Value::as_str) else {
            return Err(refuse(
                "its job has no job_id; delete it to start over".into(),
            ));
        };
        let snapshot = state.source_snapshot_id;
        if let Some(explicit) = self.source_snapshot
            && Some(explicit) != snapshot
        {
            return Err(refuse(format!(
                "it reads source snapshot {}, but source_snapshot {explicit} was given; drop \
                 the explicit snapshot to resume",
                snapshot.map_or("none".to_string(), |s| s.to_string())
            )));
        }
        if let Some(id) = snapshot
            && source.metadata().snapshot_by_id(id).is_none()
        {
            return Err(refuse(format!(
                "source snapshot {id} it reads no longer exists in {} (expired?)",
                self.source.describe()
            )));
        }
        if let Some(missing) = rolled_back(dest, &state.dest_snapshot_ids) {
            return Err(refuse(format!(
                "the destination's current history no longer holds snapshot {missing} of a \
                 checkpointed batch (it was rolled back); resuming would skip rows that are no \
                 longer there"
            )));
        }
        Ok((snapshot, job_id.to_string(), rollback_to))
    }
}

fn missing_in_source(p: MissingInSource) -> &'static str {
    match p {
        MissingInSource::Error => "error",
        MissingInSource::Skip => "skip",
        MissingInSource::Null => "null",
    }
}

fn missing_in_dest(p: MissingInDest) -> &'static str {
    match p {
        MissingInDest::Error => "error",
        MissingInDest::AutoAdd => "auto_add",
    }
}

/// Batches of `job_id` at or after `from` found in `dest`'s current history, with their
/// snapshots in commit order.
pub(crate) fn landed_batches(dest: &Table, job_id: &str, from: u64) -> BTreeMap<u64, Vec<i64>> {
    let md = dest.metadata();
    let mut out: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    let mut snapshots = history(dest);
    snapshots.reverse();
    for id in snapshots {
        let Some(s) = md.snapshot_by_id(id) else {
            continue;
        };
        let props = &s.summary().additional_properties;
        if props.get(MIGRATION_JOB_PROPERTY).map(String::as_str) != Some(job_id) {
            continue;
        }
        if let Some(batch) = props
            .get(MIGRATION_BATCH_PROPERTY)
            .and_then(|b| b.parse::<u64>().ok())
            && batch >= from
        {
            out.entry(batch).or_default().push(id);
        }
    }
    out
}

/// The route of every file copied or referenced whole.
pub(crate) fn routes_of(
    whole: &HashMap<String, DataFile>,
    mode: CopyMode,
) -> HashMap<String, FileRoute> {
    let route = match mode {
        CopyMode::Reference => FileRoute::Reference,
        _ => FileRoute::Copy,
    };
    whole.keys().map(|p| (p.clone(), route)).collect()
}

/// The first of `checkpointed` snapshots no longer in `dest`'s current history (it was rolled
/// back): a resume from that checkpoint would skip rows that are gone.
pub(crate) fn rolled_back(dest: &Table, checkpointed: &[i64]) -> Option<i64> {
    let history: HashSet<i64> = history(dest).into_iter().collect();
    checkpointed.iter().copied().find(|s| !history.contains(s))
}

/// The destination's current snapshot and its ancestors, newest first.
fn history(table: &Table) -> Vec<i64> {
    let md = table.metadata();
    let current = md.current_snapshot_id();
    let mut out: Vec<i64> = current.into_iter().collect();
    out.extend(ops_core::ops::rollback::ancestors(md, current));
    out
}

/// Live data files of `table` at `snapshot_id`, with their partition spec ids.
pub(crate) async fn live_files(
    table: &Table,
    snapshot_id: Option<i64>,
) -> Result<Vec<(DataFile, i32)>> {
    let Some(id) = snapshot_id else {
        return Ok(Vec::new());
    };
    let Some(snapshot) = table.metadata().snapshot_by_id(id) else {
        return Ok(Vec::new());
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for mf in list.entries() {
        if mf.content != ManifestContentType::Data {
            continue;
        }
        let manifest = mf.load_manifest(table.file_io()).await?;
        for entry in manifest.entries() {
            if entry.is_alive() {
                out.push((entry.data_file().clone(), mf.partition_spec_id));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_modes_and_methods_parse_the_seed_spellings() {
        assert_eq!(WriteMode::Upsert.as_str(), "upsert");
        assert!("nope".parse::<WriteMode>().is_err());
        assert_eq!(
            "overwrite_partition".parse::<WriteMode>().ok(),
            Some(WriteMode::OverwritePartition)
        );
        assert!("bogus".parse::<VerifyMethod>().is_err());
    }
}
