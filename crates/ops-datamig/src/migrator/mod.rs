//! The `DataMigrator`: the builder, and `run` wiring the phases together.
//!
//! 1. Pre-flight, no writes ([`preflight`], [`resume`]): load both tables (the same table by
//!    UUID is refused), resolve the source snapshot (checkpoint → explicit → current), validate
//!    a resumed checkpoint (not completed, same job settings, source snapshot still there and
//!    agreeing with an explicit one, checkpointed batches still in the destination's history),
//!    parse the row filter, compute the reconciliation plan and check the write mode's
//!    prerequisites; plan the read and route the files ([`crate::plan`]); for an upsert,
//!    the key pre-pass over the source ([`crate::plan::last_keys`], also under dry run).
//! 2. Pre-flight writes: auto-added and widened columns in one schema commit, then the
//!    checkpoint's fresh start (with the job identity, its id and `dest_snapshot_before`).
//! 3. Stream ([`local`]): workers read the pinned snapshot in a fixed file order, cut it into
//!    chunks of exactly `batch_rows` rows, project and write them ([`crate::execute`]), while
//!    this task commits them in order — one commit per chunk, tagged `iceberg-ops.migration-job`
//!    / `iceberg-ops.migration-batch` — then marks the checkpoint and reports progress
//!    ([`crate::commit`]).
//! 4. Post-flight: mark the checkpoint completed. [`DataMigrator::verify`] then compares the
//!    tables ([`crate::verify`]).
//!
//! On resume, a batch that landed in the destination but was not checkpointed (a crash between
//! commit and checkpoint) is found by its summary tags and recorded instead of written again.

mod local;
mod preflight;
mod resume;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use iceberg::TableIdent;
use iceberg::expr::Predicate;
use iceberg::spec::Schema;
use iceberg::table::Table;
use ops_checkpoint::{CheckpointState, CheckpointStore};
use ops_core::CatalogHandle;
use ops_reconcile::{ReconciliationPlan, SchemaReconciler};
use serde_json::json;

use self::resume::resumed;
use crate::FileRoute;
use crate::commit::committer::{Committer, CommitterSetup};
use crate::commit::finish::{compact_job, expire_job};
use crate::commit::history::landed_batches;
use crate::execute::worker::TaskContext;
use crate::plan::job::{MigrationPlan, PLAN_FORMAT, TableLocator, layout_fingerprint, split_tasks};
use crate::plan::last_keys::{KeyScan, LastBatches};
use crate::plan::read::PlannedRead;
use crate::plan::route::{route_planned, routes_of};
use crate::types::TableRef;
use crate::{
    CopyMode, MigrationError, MigrationResult, OnDuplicateKeys, PartitionStrategy, Progress,
    Result, RowFilter, VerificationResult, VerifyMethod, WriteMode,
};

/// The default `batch_rows`.
pub const DEFAULT_BATCH_ROWS: usize = 50_000;

/// What `run_or_plan` ended with.
enum Outcome {
    Ran(Box<MigrationResult>),
    Planned(Box<MigrationPlan>),
}

/// Streaming, schema-reconciling, resumable Iceberg-to-Iceberg migrator (see the module docs).
#[must_use = "a DataMigrator does nothing until run"]
pub struct DataMigrator {
    source: TableRef,
    dest: TableRef,
    reconciler: SchemaReconciler,
    partition_strategy: PartitionStrategy,
    row_filter: Option<RowFilter>,
    source_snapshot: Option<i64>,
    batch_rows: usize,
    write_mode: WriteMode,
    upsert_keys: Option<Vec<String>>,
    on_duplicate_keys: OnDuplicateKeys,
    checkpoint: Option<PathBuf>,
    progress: Option<Progress>,
    stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    dry_run: bool,
    create_dest: bool,
    /// Local workers executing tasks (default: one per core).
    workers: Option<usize>,
    copy_mode: CopyMode,
    /// Compact the files the job wrote once its last batch landed.
    compact: bool,
    expire_job_snapshots: bool,
    /// The snapshot the last `run` read; `verify` reads the source there.
    last_source_snapshot: Option<i64>,
    /// Set when `create_dest` could not keep the source's field ids (the catalog's server
    /// assigns them): why files whose ids differ are rewritten, said on each such file.
    ids_renumbered: Option<String>,
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
            .field("on_duplicate_keys", &self.on_duplicate_keys)
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
            on_duplicate_keys: OnDuplicateKeys::Error,
            checkpoint: None,
            progress: None,
            stop: None,
            dry_run: false,
            create_dest: false,
            workers: None,
            copy_mode: CopyMode::Auto,
            compact: false,
            expire_job_snapshots: false,
            last_source_snapshot: None,
            ids_renumbered: None,
        }
    }

    /// Once every batch has landed, compacts the files the job wrote (its batch snapshots'
    /// files, not the rest of the destination) with [`ops_maintenance::compact::CompactBuilder`]
    /// (a partition with two or more of them is rewritten): one more `replace` commit, its summary tagged `iceberg-ops.compacted-job` = the job id.
    /// The checkpoint is marked completed only after it, so the same run after a crash during
    /// the compaction finds every batch landed and compacts again.
    pub fn compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Once the checkpoint is completed, expires the job's own snapshots (each batch's, and its
    /// compaction's) but the table's current one, with
    /// [`ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::snapshot_ids`]: one metadata
    /// commit, then the files only they referenced are deleted (the small files a compaction
    /// replaced, the batches' manifests). Snapshots of other writers, older snapshots and
    /// branch or tag heads are kept. On a `gc.enabled=false` destination (a reference copy)
    /// only the metadata changes. Not before completion: a resume finds its landed batches by
    /// these snapshots.
    pub fn expire_job_snapshots(mut self, expire: bool) -> Self {
        self.expire_job_snapshots = expire;
        self
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

    /// Read the source at this snapshot (default: its current one when `run` starts). An older
    /// snapshot is planned, filtered and read in its own schema; the table's head in the
    /// current one (see `plan::pinned_schema`).
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

    /// What an upsert does with a key the source repeats, in one chunk or across chunks:
    /// refuse it before anything is written (the default) or keep the row that comes last in
    /// the source's order (see [`OnDuplicateKeys`]).
    pub fn on_duplicate_keys(mut self, rule: OnDuplicateKeys) -> Self {
        self.on_duplicate_keys = rule;
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

    /// Stops the run once `flag` is set: it is read before each commit and before the job is
    /// marked complete, and the run then ends with [`MigrationError::Stopped`] — the batches
    /// committed so far stay (in the checkpoint too), the ones written but not committed are
    /// deleted, and the same job run again resumes. For a caller whose `progress` callback
    /// can fail (the Python binding: an exception in it stops the run at once, as the seed's
    /// loop would, instead of after the next few commits).
    pub fn stop_when(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }

    /// [`MigrationError::Stopped`] when [`Self::stop_when`]'s flag is set.
    pub(crate) fn check_stop(&self, committed_batches: u64) -> Result<()> {
        match &self.stop {
            Some(flag) if flag.load(std::sync::atomic::Ordering::SeqCst) => {
                Err(MigrationError::Stopped { committed_batches })
            }
            _ => Ok(()),
        }
    }

    /// Create the destination when it does not exist: the schema the source is read in (see
    /// [`Self::source_snapshot`]) with the reconciler's renames and coercions (field ids kept
    /// where the catalog lets ops-core write the first metadata) and the source's partition
    /// spec.
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

    /// Runs the migration (see the module docs).
    pub async fn run(&mut self) -> Result<MigrationResult> {
        match self.run_or_plan(false).await? {
            Outcome::Ran(mut result) => {
                if !result.dry_run {
                    // A resumed job reads the snapshot its first run pinned: the caller must
                    // hear of rows committed to the source since, which it does not copy.
                    result.source_snapshots = self
                        .source
                        .pinned_against_current(result.source_snapshot_id, self.write_mode)
                        .await;
                }
                Ok(*result)
            }
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
        // Column defaults are not applied (read as NULL, written as NULL for a column the
        // source lacks): refused on both sides before a destination, a checkpoint or anything
        // else is made.
        ops_core::scan::refuse_column_defaults(&source)?;
        let mut dest_created = false;
        if !self
            .dest
            .handle
            .catalog()
            .table_exists(&self.dest.ident)
            .await?
        {
            if let Some(result) = self.create_destination(started, &source).await? {
                return Ok(Outcome::Ran(Box::new(result)));
            }
            dest_created = true;
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
        ops_core::scan::refuse_column_defaults(&dest)?;

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
        // A dry run does not take its checkpoint up, but the job the checkpoint names is its
        // own, not another.
        let checkpoint_job = match (&self.checkpoint, &resume) {
            // Peeked: no lock taken, nothing created (the job may be running).
            (Some(path), None) if self.dry_run => CheckpointStore::peek(path)
                .ok()
                .flatten()
                .and_then(|s| s.job)
                .and_then(|j| j.get("job_id").and_then(|v| v.as_str()).map(str::to_string)),
            _ => None,
        };
        let mut warnings = warn_of_other_jobs(
            &dest,
            &self.dest,
            [Some(job_id.as_str()), checkpoint_job.as_deref()],
            self.write_mode,
        );

        // Everything follows the pinned snapshot's schema, not the source's current one.
        let source_schema = crate::plan::pinned_schema(&source, snapshot_id);
        if let Some(state) = &resume {
            self.check_source_schema(state, &source, snapshot_id, &source_schema)?;
        }
        let predicate = self.predicate(&source, snapshot_id)?;
        // The filter as parsed: spelled another way, the same filter reads the same rows.
        let read_identity = crate::commit::history::read_identity(
            &source.metadata().uuid().to_string(),
            predicate.as_ref().map(|p| p.to_string()).as_deref(),
        );
        if resume.is_none() && self.write_mode == WriteMode::Append {
            warnings.extend(self.warn_of_repeated_append(
                &source,
                &dest,
                &read_identity,
                snapshot_id,
                [Some(job_id.as_str()), checkpoint_job.as_deref()],
            ));
        }
        let mut plan = self.compute_plan_for(&source_schema, dest.metadata().current_schema())?;
        self.check_write_mode(&plan, Some(&dest))?;

        let mut result = MigrationResult {
            dry_run: self.dry_run,
            warnings,
            checkpoint_path: store.as_ref().map(|s| s.path().to_path_buf()),
            source_snapshot_id: snapshot_id,
            copy_mode: self.copy_mode,
            ..MigrationResult::default()
        };
        let mut read = PlannedRead::plan(&source, snapshot_id, predicate.clone())
            .await?
            .in_schema(source_schema.clone());
        if self.write_mode == WriteMode::Upsert {
            // A later row of a key wins: newer commits' files after older ones.
            read.order_by_sequence_number(&source).await?;
        }
        let total = read.exact_rows();
        self.last_source_snapshot = snapshot_id;
        let mut whole = route_planned(
            &source,
            snapshot_id,
            &dest,
            &plan,
            predicate.as_ref(),
            &read,
            self.write_mode,
            self.copy_mode,
            (&mut result, !plan_only),
        )
        .await?;

        self.note_renumbered(&mut result);
        let resume_from = resume
            .as_ref()
            .and_then(|s| s.last_committed_batch)
            .map_or(0, |b| b + 1);
        // The upsert's key pre-pass only reads, so it runs before anything is written (the
        // destination's schema, the checkpoint's start, gc.enabled) and under --dry-run too:
        // a refused upsert leaves no trace, and a dry run meets the refusal the run would.
        let last_batches = if self.write_mode == WriteMode::Upsert && !plan_only {
            Some(
                self.key_prepass(&source, &read, &plan, &whole, resume_from)
                    .await?,
            )
        } else {
            None
        };
        if self.dry_run {
            return Ok(Outcome::Ran(Box::new(
                self.dry_run_read(started, &source, &read, plan, result)
                    .await?,
            )));
        }

        // Pre-flight writes: schema first, then the checkpoint.
        if !plan.auto_add_columns.is_empty()
            || !plan.auto_add_nested_columns.is_empty()
            || !plan.widen_columns.is_empty()
        {
            let table = self.evolve_destination(&plan, &mut result).await?;
            dest = table;
            plan = self.compute_plan_for(&source_schema, dest.metadata().current_schema())?;
            whole = route_planned(
                &source,
                snapshot_id,
                &dest,
                &plan,
                predicate.as_ref(),
                &read,
                self.write_mode,
                self.copy_mode,
                (&mut result, !plan_only),
            )
            .await?;
            self.note_renumbered(&mut result);
        }
        if plan_only {
            // Maintenance keeps off the destination until the plan's outputs are committed:
            // they wait as files under the table location that no snapshot references yet.
            dest = ops_core::ops::markers::mark_running_marker(
                &self.dest.handle,
                &self.dest.ident,
                &job_id,
            )
            .await?;
            let tasks = split_tasks(&read, self.batch_rows, &routes_of(&whole, self.copy_mode));
            let md = dest.metadata();
            return Ok(Outcome::Planned(Box::new(MigrationPlan {
                format: PLAN_FORMAT,
                job_id,
                source: locator(&self.source),
                dest: locator(&self.dest),
                source_uuid: source.metadata().uuid().to_string(),
                dest_uuid: md.uuid().to_string(),
                source_snapshot_id: snapshot_id,
                source_schema_id: source_schema.schema_id(),
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
                notes: self.plan_notes(dest_created, &result),
                compact: self.compact,
                expire_job_snapshots: self.expire_job_snapshots,
            })));
        }
        if let Some(table) = self
            .disable_gc_for_references(&dest, result.files_referenced)
            .await?
        {
            dest = table;
        }
        let tasks = split_tasks(&read, self.batch_rows, &routes_of(&whole, self.copy_mode));
        // Batch numbers come from the task layout (which files, which route, how many batches
        // each): a resume must see the very same layout, or it would skip rows or repeat them.
        let layout = layout_fingerprint(&tasks, read.filtered);
        if let Some(state) = &resume {
            self.check_layout(state, &layout, dest_snapshot_before)?;
        }
        let mut job = settings;
        job.insert("job_id".into(), json!(job_id));
        job.insert("source_schema_id".into(), json!(source_schema.schema_id()));
        job.insert("dest_snapshot_before".into(), json!(dest_snapshot_before));
        job.insert("task_layout".into(), json!(layout));
        if let (Some(s), None) = (&mut store, &resume) {
            s.start(snapshot_id, Some(job))?;
        }
        result.job_id = Some(job_id.clone());
        result.dest_snapshot_before = dest_snapshot_before;

        let landed = if resume.is_some() {
            landed_batches(&dest, &job_id, resume_from)
        } else {
            BTreeMap::new()
        };
        // Tasks wholly before the resume point are not read again.
        let (resumed_batches, resumed_rows) = resumed(&tasks, resume_from, total.is_some());
        // Maintenance keeps off the destination until the job completes: a resume finds its
        // landed batches by their tags in the snapshot history, which expiry would remove.
        // Marked just before the first batch can land, so an earlier failure leaves no marker.
        // An upsert's rows reach the committer unwritten: it marks the table before its first
        // write, so a run that changes nothing writes no metadata at all.
        let mark_lazily = self.write_mode == WriteMode::Upsert;
        if !mark_lazily {
            dest = ops_core::ops::markers::mark_running_marker(
                &self.dest.handle,
                &self.dest.ident,
                &job_id,
            )
            .await?;
        }
        let checkpointed = store.is_some();
        let committer = Committer::new(CommitterSetup {
            handle: self.dest.handle.clone(),
            ident: self.dest.ident.clone(),
            dest_name: self.dest.describe(),
            mode: self.write_mode,
            job_id: job_id.clone(),
            read_identity: Some((read_identity, snapshot_id)),
            upsert_keys: self.upsert_keys.clone().unwrap_or_default(),
            on_duplicate_keys: self.on_duplicate_keys,
            dest: dest.clone(),
            dest_snapshot_before,
            store: store.take(),
            landed: landed.clone(),
            progress: self.progress.clone(),
            total,
            resumed_batches,
            resumed_rows,
            resume_from,
            mark_lazily,
        })
        .await;
        let mut committer = match committer {
            Ok(c) => c,
            Err(e) => {
                if !checkpointed {
                    self.clear_marker_after_failure(&job_id).await;
                }
                return Err(e);
            }
        };
        let by_path = crate::plan::read::FileIndex::of(&read);
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
            prepare_manifests: true,
        });
        // The same task layout as the pre-pass read (an upsert rewrites every file, whatever
        // the destination's schema), so its batch numbers are these.
        if let (Some(last), OnDuplicateKeys::Last) = (last_batches, self.on_duplicate_keys) {
            committer.set_last_batches(Arc::new(last));
        }
        let outcome = self.execute_locally(&ctx, &tasks, &mut committer).await;
        // Whether the table carries this job's marker: set here, by the committer, or by an
        // earlier run of the job. Without one, nothing was written and nothing is recorded.
        let marked = !mark_lazily
            || committer.marked()
            || committer
                .dest
                .metadata()
                .properties()
                .contains_key(&ops_core::ops::markers::running_job_key(&job_id));
        let mut store = committer.store.take();
        committer.finish(&mut result);
        if outcome.is_err() && !checkpointed && marked {
            self.clear_marker_after_failure(&job_id).await;
        }
        outcome?;
        // Stopped after the last commit: not marked complete, so a re-run resumes (and finds
        // every batch landed) instead of refusing a completed checkpoint.
        self.check_stop(result.batches_committed + result.batches_skipped)?;
        crate::failpoint::hit(crate::failpoint::AFTER_BATCHES);
        // Every batch has landed: the marker gives way to the job's completion record. A
        // failure to record it must not turn the run into a failure (a re-run without a
        // checkpoint would append every row again). An upsert that changed nothing set no
        // marker and commits no record: a re-run changes nothing again.
        if !marked {
            tracing::info!(job = %job_id, "the upsert changed no row: no snapshot, no metadata written");
        } else if let Err(e) = ops_core::ops::markers::complete_running_marker(
            &self.dest.handle,
            &self.dest.ident,
            &job_id,
        )
        .await
        {
            tracing::warn!(
                job = %job_id,
                error = %e,
                "the migration finished but its marker could not be removed; remove it with \
                 `iceberg-ops table abandon-migration` (expiry and orphan cleanup refuse the \
                 table until then)"
            );
        }
        crate::failpoint::hit(crate::failpoint::AFTER_COMPLETION_RECORD);
        if self.compact {
            result.compaction = Some(compact_job(&self.dest, &job_id).await?);
        }
        if let Some(s) = &mut store {
            s.mark_completed()?;
        }
        crate::failpoint::hit(crate::failpoint::AFTER_CHECKPOINT_COMPLETED);
        if self.expire_job_snapshots {
            result.expiry = Some(expire_job(&self.dest, &job_id).await?);
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

    /// Removes the marker of a job run without a checkpoint that failed: nothing can resume it,
    /// so its marker would only keep orphan cleanup from collecting the files it left.
    async fn clear_marker_after_failure(&self, job_id: &str) {
        if let Err(e) = ops_core::ops::markers::clear_running_marker(
            &self.dest.handle,
            &self.dest.ident,
            job_id,
        )
        .await
        {
            tracing::warn!(job = %job_id, error = %e, "could not remove the failed job's marker");
        }
    }

    /// Post-migration consistency check (see [`crate::verify`]).
    pub async fn verify(
        &self,
        method: VerifyMethod,
        sample_size: usize,
    ) -> Result<VerificationResult> {
        let sides = crate::verify::Sides {
            source: &self.source,
            dest: &self.dest,
            snapshot: self.source_snapshot.or(self.last_source_snapshot),
            row_filter: self.row_filter.as_ref(),
            reconciler: &self.reconciler,
            write_mode: self.write_mode,
        };
        crate::verify::verify(sides, method, sample_size).await
    }

    /// What a plan's reader should know that its tasks do not say: above all what planning
    /// already wrote to the destination (a plan that is never run leaves it so).
    fn plan_notes(&self, dest_created: bool, result: &MigrationResult) -> Vec<String> {
        let mut notes = Vec::new();
        if dest_created {
            notes.push(format!(
                "planning created the destination {} (create_dest), so the tasks write files \
                 in its layout; drop it if the plan is not run",
                self.dest.describe()
            ));
        }
        if !result.schema_changes.is_empty() {
            notes.push(format!(
                "planning evolved the destination's schema ({} added or widened), so the \
                 tasks write files in it",
                result.schema_changes.join(", ")
            ));
        }
        notes.extend(self.ids_renumbered.iter().cloned());
        notes
    }

    /// Says on each file that is rewritten for want of equal field ids why the ids differ,
    /// when `create_dest` could not keep them.
    fn note_renumbered(&self, result: &mut MigrationResult) {
        let Some(note) = &self.ids_renumbered else {
            return;
        };
        let mut reasons = crate::plan::route::Reasons::default();
        for f in &mut result.files {
            if f.route == FileRoute::Rewrite && f.reason.starts_with("the tables do not allow") {
                f.reason = reasons.get(format!("{}; {note}", f.reason));
            }
        }
    }

    fn read_batch_size(&self) -> usize {
        crate::execute::read_batch_size(self.batch_rows)
    }

    /// The upsert's key pre-pass ([`LastBatches`]): each key's last batch, or the refusal of a
    /// repeated, NULL or NaN key. A failure tied to a batch is reported as the write pass
    /// reports one (`batch N failed: ...`), with the batches committed before the run.
    async fn key_prepass(
        &self,
        source: &Table,
        read: &PlannedRead,
        plan: &ReconciliationPlan,
        whole: &HashMap<ops_core::file_path::FilePath, crate::plan::route::PlannedFile>,
        resume_from: u64,
    ) -> Result<LastBatches> {
        let tasks = split_tasks(read, self.batch_rows, &routes_of(whole, self.copy_mode));
        let workers = self
            .workers
            .unwrap_or_else(crate::execute::worker::default_workers)
            .clamp(1, tasks.len().max(1));
        let keys = self.upsert_keys.clone().unwrap_or_default();
        LastBatches::scan(KeyScan {
            source,
            read,
            plan,
            tasks: &tasks,
            keys: &keys,
            batch_rows: self.batch_rows,
            read_batch_size: self.read_batch_size(),
            resume_from,
            workers,
            rule: self.on_duplicate_keys,
        })
        .await
        .map_err(|f| match f.batch {
            Some(batch) => self.batch_error(batch, resume_from, *f.error),
            None => *f.error,
        })
    }

    fn batch_error(&self, batch: u64, committed: u64, e: MigrationError) -> MigrationError {
        MigrationError::Batch {
            batch,
            committed_batches: committed,
            checkpoint: self.checkpoint.clone().filter(|_| !self.dry_run),
            write_mode: self.write_mode,
            tagged_rerun: false,
            source: Box::new(e),
        }
    }

    /// The row filter as a predicate over the snapshot being read.
    fn predicate(&self, source: &Table, snapshot: Option<i64>) -> Result<Option<Predicate>> {
        crate::plan::row_predicate(self.row_filter.as_ref(), source, snapshot)
    }

    fn compute_plan_for(&self, src: &Schema, dst: &Schema) -> Result<ReconciliationPlan> {
        crate::plan::reconcile(&self.reconciler, self.write_mode, src, dst)
    }
}

/// `table` as a plan names it, for a process that opens its own catalogs.
fn locator(table: &TableRef) -> TableLocator {
    TableLocator {
        catalog: table.handle.name().to_string(),
        table: table.ident.to_string(),
    }
}

impl DataMigrator {
    /// Warns when `dest` may hold rows this append is about to add: a completed job of its
    /// current history (not this run's, nor a dry run's checkpoint's: `own`) read the same
    /// source table with the same row filter (`read_identity`) at this run's snapshot or one
    /// before it in the source's history, whose rows this run reads again. Run again without
    /// that job's checkpoint, an append is a new job and adds those rows a second time, as the
    /// seed's `run()` does; a warning, not a refusal, since appending rows twice can be meant.
    fn warn_of_repeated_append(
        &self,
        source: &Table,
        dest: &Table,
        read_identity: &str,
        snapshot_id: Option<i64>,
        own: [Option<&str>; 2],
    ) -> Vec<String> {
        let mut out = Vec::new();
        let Some(snapshot) = snapshot_id else {
            return out;
        };
        let md = source.metadata();
        for done in crate::commit::history::completed_jobs_reading(dest, read_identity) {
            if own.contains(&Some(done.job)) {
                continue;
            }
            let Some(read) = done.source_snapshot else {
                continue;
            };
            let relation = if read == snapshot {
                "this run's snapshot".to_string()
            } else if ops_core::ops::rollback::ancestors(md, Some(snapshot)).contains(&read) {
                format!(
                    "an ancestor of this run's snapshot {snapshot}, so its rows are among this run's"
                )
            } else {
                continue;
            };
            let filter = match &self.row_filter {
                Some(f) => format!(" with the row filter {}", f.describe()),
                None => String::new(),
            };
            let message = format!(
                "{} may already hold rows this append adds: job {}, completed {}, wrote the rows \
                 of {} at snapshot {read} ({relation}){filter}. This run is a new job, so it \
                 appends them again unless they were deleted since; stop it unless that is \
                 meant (a job run with --checkpoint is reported complete when run again, and \
                 writes nothing)",
                self.dest.describe(),
                done.job,
                done.at,
                self.source.describe()
            );
            tracing::warn!("{message}");
            out.push(message);
        }
        out
    }
}

/// What a killed job's marker means for an append run beside it (see [`warn_of_other_jobs`]).
const KILLED: &str = "If it was killed without a --checkpoint (one with a checkpoint resumes \
                      with it), this append adds its committed rows a second time: stop this \
                      run and undo the killed job first.";

/// Warns of (and returns, for the result) every unfinished migration job marking `dest` other
/// than its `own` (this run's, a dry run's checkpoint's): another job is
/// writing to it, or one was killed. A killed job's committed batches stay in the table, so an
/// append run again as a new job (without the killed one's checkpoint) adds its rows a second
/// time — the warning names what the job committed and how to undo it first. An upsert or a
/// partition overwrite writes over the job's rows instead: only the stale marker is left.
fn warn_of_other_jobs(
    dest: &Table,
    dest_ref: &crate::types::TableRef,
    own: [Option<&str>; 2],
    mode: WriteMode,
) -> Vec<String> {
    let mut out = Vec::new();
    let md = dest.metadata();
    for (other, since) in ops_core::ops::markers::running_migrations(md) {
        if own.contains(&Some(other)) {
            continue;
        }
        let ours = |s: &iceberg::spec::Snapshot| {
            s.summary()
                .additional_properties
                .get(crate::commit::history::MIGRATION_JOB_PROPERTY)
                .is_some_and(|j| j == other)
        };
        // Main's history, newest first: the job's snapshots, where the table stood before the
        // oldest of them, and how many other snapshots came after that (a rollback would undo
        // them too).
        let head = md.current_snapshot_id();
        let history: Vec<i64> = head
            .into_iter()
            .chain(ops_core::ops::rollback::ancestors(md, head))
            .collect();
        // Whether main's history ends at an expired snapshot: the job may have committed more
        // than it shows, and the snapshot before it may be gone.
        let cut = history
            .last()
            .is_some_and(|id| md.snapshot_by_id(*id).is_none());
        let mut committed = 0usize;
        let mut before = None;
        let mut others = 0usize;
        let mut others_after = 0usize;
        for s in history.iter().filter_map(|id| md.snapshot_by_id(*id)) {
            if ours(s) {
                committed += 1;
                before = Some(s.parent_snapshot_id());
                others_after = others;
            } else {
                others += 1;
            }
        }
        let table = dest_ref.cli_args();
        let abandon = format!("`iceberg-ops table abandon-migration {table} --job {other}`");
        let by_hand = format!(
            "remove its rows by hand (its snapshots carry `{}={other}` in their summary)",
            crate::commit::history::MIGRATION_JOB_PROPERTY
        );
        let writes_over = format!(
            " This run writes over its rows ({}), adding none twice; once it is known to be \
             gone, {abandon} clears its marker.",
            mode.as_str()
        );
        let advice = match (before, mode) {
            // Main's history was expired past the job's start: what it committed is not all
            // in view, and no snapshot from before it is left to roll back to.
            (_, WriteMode::Append) if cut => format!(
                " {KILLED} Main's history no longer reaches back to before it (expired): \
                 {by_hand}, then {abandon}, then run again."
            ),
            (_, _) if cut => writes_over,
            (None, _) => format!(
                " It committed nothing: once it is known to be gone, {abandon} clears its marker."
            ),
            (Some(_), WriteMode::Upsert | WriteMode::OverwritePartition) => writes_over,
            (Some(_), WriteMode::Append) if others_after > 0 => format!(
                " {KILLED} {others_after} other snapshot(s) were committed since it started, \
                 which a rollback to before it would undo too: {by_hand}, then {abandon}, then \
                 run again."
            ),
            (Some(Some(id)), WriteMode::Append) => format!(
                " {KILLED} `iceberg-ops table rollback {table} --to {id}` undoes it (and this \
                 run, once it has committed), then {abandon}, then run again."
            ),
            (Some(None), WriteMode::Append) => format!(
                " {KILLED} The table had no snapshot before it: `iceberg-ops table delete \
                 {table} --where true` empties it (this run's rows too, once committed), then \
                 {abandon}, then run again."
            ),
        };
        let message = format!(
            "{} carries the marker of unfinished migration job {other} (started {since}), \
             which committed {committed} snapshot(s) to it: another job is writing to it, or \
             that one was killed.{advice}",
            dest_ref.describe()
        );
        tracing::warn!("{message}");
        out.push(message);
    }
    out
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
