//! `maintain`: give each table the care that is due, unattended — what Glue's optimizer,
//! S3 Tables and Amoro decide for their tables, for tables of any catalog, from cron.
//!
//! For each table, several at once, one failing without stopping the others:
//! 1. Load it and judge it ([`crate::health`], with its thresholds from its properties and the
//!    policy). Skip, saying why, a table an unfinished migration writes to, an S3 Tables table
//!    (the service maintains it), a table with `iceberg-ops.maintain.enabled=false`, and one
//!    whose lease another run holds ([`state`]).
//! 2. Run what is due, in this order, judged again after each task that committed (its commit
//!    may make the snapshot it replaced expirable at once): compaction (a partition past the
//!    small-file or delete thresholds), dangling delete removal, snapshot expiry (snapshots past retention), orphan
//!    cleanup (its interval passed since the last run the state file records; files younger
//!    than `orphan-older-than`, at least 3 days, are never deleted). A `gc.enabled=false`
//!    table gets no task that deletes files (expiry, orphan cleanup).
//! 3. Report each task, and files and bytes before and after.
//!
//! Whether work is due is read from the table itself, so a second run right after the first
//! finds nothing due and commits nothing.

pub mod state;

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::table::Table;
use ops_core::{CatalogHandle, Result};
use serde::Serialize;

use crate::BeforeCommitHook;
use crate::compact::{CompactBuilder, CompactRunner};
use crate::expire_snapshots::ExpireSnapshotsBuilder;
use crate::health::{TableHealth, age_text, health_of};
use crate::policy::{Policy, Thresholds};
use crate::remove_dangling_deletes::RemoveDanglingDeletesBuilder;
use crate::remove_orphans::RemoveOrphansBuilder;
pub use state::State;

/// The most compaction passes one run makes on a table (see `MaintainBuilder::table`).
const MAX_COMPACTION_PASSES: usize = 3;

/// A table's size as its current snapshot's summary totals say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// Live data files.
    pub data_files: u64,
    /// Live delete files.
    pub delete_files: u64,
    /// Bytes of the live files.
    pub bytes: u64,
    /// Snapshots in the metadata.
    pub snapshots: u64,
}

impl Footprint {
    fn of(table: &Table) -> Self {
        let md = table.metadata();
        let total = |key: &str| {
            md.current_snapshot()
                .and_then(|s| s.summary().additional_properties.get(key))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Self {
            data_files: total("total-data-files"),
            delete_files: total("total-delete-files"),
            bytes: total("total-files-size"),
            snapshots: md.snapshots().count() as u64,
        }
    }
}

/// What became of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStatus {
    /// It ran and committed (or deleted) something.
    Done,
    /// It ran and found nothing to do after all.
    NothingToDo,
    /// A dry run: it would run.
    Planned,
    /// It is due but was not run (the reason says why).
    Skipped,
    /// It failed (the reason says how); the table's other tasks still ran.
    Failed,
}

/// One task on one table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRun {
    /// `compact`, `remove-dangling-deletes`, `expire-snapshots`, `remove-orphans`.
    pub task: String,
    /// What became of it.
    pub status: TaskStatus,
    /// Why it was due, and what it did (or why not).
    pub detail: String,
    /// The snapshot it committed.
    pub snapshot_id: Option<i64>,
    /// Files it removed from the table's live state, or deleted.
    pub files_removed: u64,
    /// Files it added.
    pub files_added: u64,
}

impl TaskRun {
    /// Folds a later pass of the same task into this one.
    fn absorb(&mut self, later: TaskRun) {
        if later.status == TaskStatus::Failed || later.status == TaskStatus::Done {
            self.status = later.status;
        }
        self.files_removed += later.files_removed;
        self.files_added += later.files_added;
        if later.snapshot_id.is_some() {
            self.snapshot_id = later.snapshot_id;
        }
        self.detail = format!("{}; then {}", self.detail, later.detail);
    }
}

/// What became of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableOutcome {
    /// Every due task ran.
    Maintained,
    /// Nothing was due.
    NothingDue,
    /// A dry run planned its due tasks.
    Planned,
    /// Left alone (the reason says why).
    Skipped,
    /// It or one of its tasks failed.
    Failed,
}

/// One table's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableRun {
    /// `NS.T`.
    pub table: String,
    /// What became of it.
    pub outcome: TableOutcome,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// Its score before.
    pub score_before: Option<u32>,
    /// The tasks that were due.
    pub tasks: Vec<TaskRun>,
    /// Its size before.
    pub before: Option<Footprint>,
    /// Its size after (when a task committed).
    pub after: Option<Footprint>,
}

impl TableRun {
    fn new(table: String) -> Self {
        Self {
            table,
            outcome: TableOutcome::NothingDue,
            reason: None,
            score_before: None,
            tasks: Vec::new(),
            before: None,
            after: None,
        }
    }
}

/// The key of `ident` of `handle`'s catalog in the state file and its lease:
/// `NAME@FINGERPRINT/NS.T`, the fingerprint a hash of the catalog's type, URI and warehouse, so
/// two configurations naming different catalogs alike do not share a table's state.
pub fn state_key(handle: &CatalogHandle, ident: &TableIdent) -> String {
    let settings = handle.settings();
    let identity: Vec<&str> = ["type", "uri", "warehouse", "table_bucket_arn"]
        .iter()
        .map(|k| settings.iceberg_property(k).unwrap_or(""))
        .collect();
    let fingerprint = identity
        .join("\u{1f}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{}@{:08x}/{ident}", handle.name(), fingerprint >> 32)
}

/// A whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MaintainReport {
    /// Each table, by name.
    pub tables: Vec<TableRun>,
    /// Nothing was written.
    pub dry_run: bool,
    /// The state file used.
    pub state: String,
}

impl MaintainReport {
    /// Whether any table failed.
    pub fn any_failed(&self) -> bool {
        self.tables
            .iter()
            .any(|t| t.outcome == TableOutcome::Failed)
    }
}

/// Maintains tables (see the module docs).
#[must_use = "a MaintainBuilder does nothing until awaited"]
pub struct MaintainBuilder {
    handle: CatalogHandle,
    tables: Vec<TableIdent>,
    policy: Policy,
    dry_run: bool,
    concurrency: usize,
    state: Arc<State>,
    command_args: String,
    before_commit: Option<BeforeCommitHook>,
    compact_runner: Option<CompactRunner>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
}

impl MaintainBuilder {
    /// Maintains `tables` of `handle`, keeping orphan cleanup times and leases in `state`.
    pub fn new(handle: &CatalogHandle, tables: Vec<TableIdent>, state: State) -> Self {
        Self {
            handle: handle.clone(),
            tables,
            policy: Policy::default(),
            dry_run: false,
            concurrency: 1,
            state: Arc::new(state),
            command_args: String::new(),
            before_commit: None,
            compact_runner: None,
            stop: None,
        }
    }

    /// Thresholds for tables without their own properties.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Plans and reports; writes nothing (no commit, no delete, no state).
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Tables maintained at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// What the commands the report names pass after the table name (see
    /// [`crate::health::HealthBuilder::command_args`]).
    pub fn command_args(mut self, args: impl Into<String>) -> Self {
        self.command_args = args.into();
        self
    }

    /// Runs `hook` between each compaction's plan and its commit (for tests that race a
    /// writer).
    #[doc(hidden)]
    pub fn before_commit(mut self, hook: BeforeCommitHook) -> Self {
        self.before_commit = Some(hook);
        self
    }

    /// Runs the compactions with `runner` instead of in this process (`maintain --cluster`:
    /// ops-ballista rewrites the groups on a Ballista cluster).
    pub fn compact_with(mut self, runner: CompactRunner) -> Self {
        self.compact_runner = Some(runner);
        self
    }

    /// Starts no more work once `stop` turns true (the CLI turns it on at SIGINT or SIGTERM):
    /// tables not started are skipped and a table's remaining tasks are skipped, saying so; what
    /// runs finishes (a cluster compaction stops at its next commit).
    pub fn stop_on(mut self, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        self.stop = Some(stop);
        self
    }

    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|r| *r.borrow())
    }

    async fn execute(self) -> Result<MaintainReport> {
        let this = Arc::new(self);
        let mut tables: Vec<TableRun> = futures::stream::iter(this.tables.clone())
            .map(|ident| {
                let this = this.clone();
                let name = ident.to_string();
                // Each table in a task of its own: a panic in one is that table's failure.
                async move {
                    match tokio::spawn(async move { this.table(ident).await }).await {
                        Ok(run) => run,
                        Err(e) => TableRun {
                            outcome: TableOutcome::Failed,
                            reason: Some(format!("its maintenance stopped: {e}")),
                            ..TableRun::new(name)
                        },
                    }
                }
            })
            .buffer_unordered(this.concurrency)
            .collect()
            .await;
        tables.sort_by(|a, b| a.table.cmp(&b.table));
        Ok(MaintainReport {
            tables,
            dry_run: this.dry_run,
            state: this.state.path().display().to_string(),
        })
    }

    async fn table(&self, ident: TableIdent) -> TableRun {
        let mut run = TableRun::new(ident.to_string());
        if self.stopped() {
            run.outcome = TableOutcome::Skipped;
            run.reason = Some("interrupted before it started".into());
            return run;
        }
        let failed = |mut run: TableRun, e: String| {
            run.outcome = TableOutcome::Failed;
            run.reason = Some(e);
            run
        };
        let table = match ops_core::commit::load_current(&self.handle, &ident).await {
            Ok(t) => t,
            Err(e) => return failed(run, e.to_string()),
        };
        run.before = Some(Footprint::of(&table));
        let namespace: Vec<String> = ident.namespace().iter().cloned().collect();
        let thresholds = match Thresholds::of(table.metadata(), &namespace, &self.policy) {
            Ok(t) => t,
            Err(e) => return failed(run, e.to_string()),
        };
        // What keeps the table out is read from its metadata before any manifest.
        if let Some(why) = skip_reason(&self.handle, &table, &thresholds) {
            run.outcome = TableOutcome::Skipped;
            run.reason = Some(why);
            return run;
        }
        let health = match health_of(&self.handle, &table, &self.policy, &self.command_args).await {
            Ok(h) => h,
            Err(e) => return failed(run, e.to_string()),
        };
        run.score_before = Some(health.score.score);
        let key = state_key(&self.handle, &ident);
        let orphans_due = match self.orphans_due(&key, &thresholds).await {
            Ok(d) => d,
            Err(e) => return failed(run, e.to_string()),
        };
        let compaction_due = health.due.compact_partitions > 0 || health.due.rewrite_old_spec_files;
        let anything_due = compaction_due
            || health.due.dangling_deletes
            || health.due.expire
            || orphans_due.is_some();
        if !anything_due {
            return run;
        }
        // Only a run that will act takes the lease (a dry run writes nothing either way).
        let (_lease, orphans_due) = if self.dry_run {
            (None, orphans_due)
        } else {
            match self.state.lease(&key).await {
                // Judged again under the lease: a run that held it may have just cleaned up.
                Ok(Ok(lease)) => match self.orphans_due(&key, &thresholds).await {
                    Ok(due) => (Some(lease), due),
                    Err(e) => return failed(run, e.to_string()),
                },
                Ok(Err(held)) => {
                    run.outcome = TableOutcome::Skipped;
                    run.reason = Some(held);
                    return run;
                }
                Err(e) => return failed(run, e.to_string()),
            }
        };

        // Compaction first, judged again after each pass (up to MAX_COMPACTION_PASSES): a pass
        // can leave work a second one finds (files of older specs rewritten group by group
        // into one partition, outputs smaller than their inputs under a tight target, a
        // position delete only the rewrite made dangle), and a run should leave nothing due.
        let mut health = health;
        if compaction_due {
            let mut passes = 0;
            loop {
                let task = self.compact(&ident, &thresholds, &health).await;
                passes += 1;
                let done = task.status == TaskStatus::Done;
                match run.tasks.iter_mut().find(|t| t.task == "compact") {
                    Some(first) => first.absorb(task),
                    None => run.tasks.push(task),
                }
                if !done || self.dry_run || self.stopped() {
                    break;
                }
                // What the compaction left (its commit may also make the snapshot it replaced
                // expirable at once, under a short `max-snapshot-age`).
                health = match self.health_now(&ident).await {
                    Ok(h) => h,
                    Err(e) => return failed(run, e.to_string()),
                };
                let again = health.due.compact_partitions > 0 || health.due.rewrite_old_spec_files;
                if !again || passes >= MAX_COMPACTION_PASSES {
                    break;
                }
            }
        }
        let interrupted = "interrupted: not started";
        if health.due.dangling_deletes {
            let task = if self.stopped() {
                skipped("remove-dangling-deletes", interrupted)
            } else {
                self.dangling(&ident, &health).await
            };
            let done = task.status == TaskStatus::Done;
            run.tasks.push(task);
            // Its commit replaces the head, which a short `max-snapshot-age` may make
            // expirable at once: judged again, or the next run would find it due.
            if done && !self.dry_run {
                health = match self.health_now(&ident).await {
                    Ok(h) => h,
                    Err(e) => return failed(run, e.to_string()),
                };
            }
        }
        if health.due.expire {
            run.tasks.push(if self.stopped() {
                skipped("expire-snapshots", interrupted)
            } else {
                self.expire(&ident, &thresholds, &health).await
            });
        }
        if let Some(why) = orphans_due {
            run.tasks.push(if self.stopped() {
                skipped("remove-orphans", interrupted)
            } else {
                self.orphans(&ident, &key, &thresholds, &health, why).await
            });
        }

        let statuses: Vec<TaskStatus> = run.tasks.iter().map(|t| t.status).collect();
        run.outcome = if statuses.contains(&TaskStatus::Failed) {
            let failed: Vec<String> = run
                .tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Failed)
                .map(|t| t.task.clone())
                .collect();
            run.reason = Some(format!("{} failed", failed.join(", ")));
            TableOutcome::Failed
        } else if !statuses.is_empty() && statuses.iter().all(|s| *s == TaskStatus::Skipped) {
            // Only the tasks that delete files are skipped, and only on a gc.enabled=false
            // table: said once here, each task says what it would have done.
            run.reason = Some(
                "gc.enabled=false: maintain deletes none of its files, so its due expiry and \
                 orphan cleanup are left"
                    .to_string(),
            );
            TableOutcome::Skipped
        } else if self.dry_run {
            TableOutcome::Planned
        } else if statuses.contains(&TaskStatus::Done) {
            TableOutcome::Maintained
        } else {
            TableOutcome::NothingDue
        };
        if statuses.contains(&TaskStatus::Done)
            && let Ok(after) = ops_core::commit::load_current(&self.handle, &ident).await
        {
            run.after = Some(Footprint::of(&after));
        }
        run
    }

    /// Why orphan cleanup is due now, if it is.
    async fn orphans_due(&self, key: &str, t: &Thresholds) -> Result<Option<String>> {
        let now = ops_core::run_mark::now_ms();
        Ok(match self.state.orphans_last_run(key).await? {
            None => Some("never run by maintain".to_string()),
            Some(last) if now.saturating_sub(last) >= t.orphan_interval_ms => Some(format!(
                "last run {} ago (interval {})",
                rough_age(now.saturating_sub(last)),
                age_text(t.orphan_interval_ms)
            )),
            Some(_) => None,
        })
    }

    async fn compact(&self, ident: &TableIdent, t: &Thresholds, health: &TableHealth) -> TaskRun {
        let mut reasons = Vec::new();
        if health.due.compact_partitions > 0 {
            reasons.push(format!(
                "{} partition(s) past the small-file or delete thresholds",
                health.due.compact_partitions
            ));
        }
        if health.due.rewrite_old_spec_files {
            reasons.push(format!(
                "{} file(s) of older partition specs (rewrite-old-spec-files)",
                health.data.other_spec.files
            ));
        }
        let why = reasons.join(", ");
        let mut builder = CompactBuilder::new(&self.handle, ident.clone())
            .target_file_size(t.target_file_size)
            .min_input_files(t.min_input_files)
            .to_current_spec(t.rewrite_old_spec_files)
            .dry_run(self.dry_run);
        if let Some(hook) = &self.before_commit {
            builder = builder.before_commit(hook.clone());
        }
        let result = match &self.compact_runner {
            Some(run) => run(builder).await,
            None => builder.await,
        };
        match result {
            // Groups committed one by one (a cluster's): one that failed fails the task, the
            // others stay committed.
            Ok((_, m)) if !m.failed_groups.is_empty() => {
                let mut task = self.task(
                    "compact",
                    &why,
                    m.snapshot_id,
                    m.input_files() as u64,
                    m.output_files() as u64,
                );
                task.status = TaskStatus::Failed;
                task.detail = format!(
                    "{why}: {} of {} group(s) failed ({}); the {} other(s) were committed",
                    m.failed_groups.len(),
                    m.groups.len(),
                    m.failed_groups
                        .iter()
                        .map(|g| format!("{}: {}", g.partition, g.error))
                        .collect::<Vec<_>>()
                        .join("; "),
                    m.groups.iter().filter(|g| !g.failed).count()
                );
                task
            }
            Ok((_, m)) => {
                let files_removed = m.input_files() as u64;
                let mut task = self.task("compact", &why, m.snapshot_id, files_removed, 0);
                task.files_added = m.output_files() as u64;
                task.detail = format!(
                    "{why}: {} file(s) of {} {} {} file(s) of {}",
                    m.input_files(),
                    crate::health::human_bytes(m.input_bytes()),
                    if self.dry_run {
                        "would become"
                    } else {
                        "became"
                    },
                    if self.dry_run {
                        "fewer".to_string()
                    } else {
                        m.output_files().to_string()
                    },
                    if self.dry_run {
                        "about the target size".to_string()
                    } else {
                        crate::health::human_bytes(m.output_bytes())
                    },
                );
                if files_removed == 0 {
                    task.status = TaskStatus::NothingToDo;
                    task.detail = format!("{why}, but no group of files qualified");
                }
                task
            }
            Err(e) => failed_task("compact", &why, e),
        }
    }

    /// The table's health as it stands now: judged again after a task of this run committed.
    async fn health_now(&self, ident: &TableIdent) -> ops_core::Result<TableHealth> {
        let reloaded = ops_core::commit::load_current(&self.handle, ident).await?;
        health_of(&self.handle, &reloaded, &self.policy, &self.command_args).await
    }

    async fn dangling(&self, ident: &TableIdent, health: &TableHealth) -> TaskRun {
        let why = format!(
            "{} delete file(s) apply to no live data file",
            health.deletes.dangling_files
        );
        match RemoveDanglingDeletesBuilder::new(&self.handle, ident.clone())
            .dry_run(self.dry_run)
            .await
        {
            Ok((_, m)) => {
                let mut task = self.task(
                    "remove-dangling-deletes",
                    &why,
                    m.snapshot_id,
                    m.removed.len() as u64,
                    0,
                );
                if m.removed.is_empty() {
                    task.status = TaskStatus::NothingToDo;
                }
                task
            }
            Err(e) => failed_task("remove-dangling-deletes", &why, e),
        }
    }

    async fn expire(&self, ident: &TableIdent, t: &Thresholds, health: &TableHealth) -> TaskRun {
        let why = format!(
            "{} snapshot(s) past retention ({})",
            health.snapshots.expirable.len(),
            health.snapshots.rule
        );
        if !health.markers.gc_enabled {
            return skipped(
                "expire-snapshots",
                &format!(
                    "{why}; gc.enabled=false, so maintain deletes none of its files (expire by \
                     hand with `iceberg-ops table expire-snapshots {ident}{} --keep-files`)",
                    if self.command_args.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", self.command_args)
                    }
                ),
            );
        }
        let mut builder =
            ExpireSnapshotsBuilder::new(&self.handle, ident.clone()).dry_run(self.dry_run);
        if let Some(age) = t.snapshot_max_age_ms {
            builder = builder.older_than_ms(ops_core::run_mark::now_ms().saturating_sub(age));
        }
        if let Some(n) = t.min_snapshots_to_keep {
            builder = builder.retain_last(n);
        }
        match builder.await {
            Ok((_, m)) => {
                let removed = (m.deleted_data_files.len()
                    + m.deleted_manifests.len()
                    + m.deleted_manifest_lists.len()) as u64;
                let mut task = self.task("expire-snapshots", &why, None, removed, 0);
                task.detail = format!(
                    "{why}: {} snapshot(s) {}expired, {} file(s) {}deleted",
                    m.expired_snapshots.len(),
                    if self.dry_run { "to be " } else { "" },
                    removed,
                    if self.dry_run { "to be " } else { "" },
                );
                if m.expired_snapshots.is_empty() && m.removed_refs.is_empty() {
                    task.status = TaskStatus::NothingToDo;
                }
                task
            }
            Err(e) => failed_task("expire-snapshots", &why, e),
        }
    }

    async fn orphans(
        &self,
        ident: &TableIdent,
        key: &str,
        t: &Thresholds,
        health: &TableHealth,
        why: String,
    ) -> TaskRun {
        if !health.markers.gc_enabled {
            return skipped(
                "remove-orphans",
                "gc.enabled=false: its location may hold files of another table (an import's \
                 source files, a kept backup), so maintain deletes nothing there",
            );
        }
        let older_than = t.orphan_older_than_ms.max(crate::policy::MIN_ORPHAN_AGE_MS);
        let started = ops_core::run_mark::now_ms();
        let result = RemoveOrphansBuilder::new(&self.handle, ident.clone())
            .older_than(Duration::from_millis(older_than.unsigned_abs()))
            .dry_run(self.dry_run)
            .await;
        match result {
            Ok(m) => {
                if !self.dry_run
                    && let Err(e) = self.state.record_orphans(key, started).await
                {
                    return failed_task("remove-orphans", &why, e);
                }
                let mut task = self.task(
                    "remove-orphans",
                    &why,
                    None,
                    (m.orphans.len() - m.failed_deletes.len().min(m.orphans.len())) as u64,
                    0,
                );
                task.detail = format!(
                    "{why}: {} file(s) listed, {} orphan(s) older than {} {}deleted, {} younger \
                     kept",
                    m.listed,
                    m.orphans.len(),
                    age_text(older_than),
                    if self.dry_run { "to be " } else { "" },
                    m.too_young.len()
                );
                if m.orphans.is_empty() && !self.dry_run {
                    // It ran (and its time is recorded), deleting nothing.
                    task.status = TaskStatus::Done;
                }
                task
            }
            Err(e) => failed_task("remove-orphans", &why, e),
        }
    }

    fn task(
        &self,
        name: &str,
        why: &str,
        snapshot_id: Option<i64>,
        files_removed: u64,
        files_added: u64,
    ) -> TaskRun {
        TaskRun {
            task: name.to_string(),
            status: if self.dry_run {
                TaskStatus::Planned
            } else {
                TaskStatus::Done
            },
            detail: why.to_string(),
            snapshot_id,
            files_removed,
            files_added,
        }
    }
}

impl IntoFuture for MaintainBuilder {
    type Output = Result<MaintainReport>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// Why a table is left alone entirely, if it is (read from its metadata alone).
fn skip_reason(handle: &CatalogHandle, table: &Table, t: &Thresholds) -> Option<String> {
    let md = table.metadata();
    if handle.settings().kind() == ops_core::CatalogKind::S3Tables {
        return Some(
            "an S3 Tables table: the service compacts it, expires its snapshots and removes \
             unreferenced files (see `aws s3tables get-table-maintenance-configuration`)"
                .to_string(),
        );
    }
    if !t.enabled {
        return Some("iceberg-ops.maintain.enabled=false".to_string());
    }
    if let Some((job, since)) = ops_core::ops::markers::running_migrations(md).first() {
        return Some(format!(
            "unfinished migration job '{job}' (started {since}) writes to it; maintained once \
             it finishes (or `iceberg-ops table abandon-migration {} --job {job}`)",
            table.identifier()
        ));
    }
    if md.format_version() == iceberg::spec::FormatVersion::V3 {
        return Some(
            "an Iceberg v3 table: iceberg-ops rewrites only v1 and v2 tables (v3 row lineage \
             and column defaults would not be preserved)"
                .to_string(),
        );
    }
    None
}

fn failed_task(name: &str, why: &str, e: ops_core::Error) -> TaskRun {
    tracing::warn!(task = name, error = %e, "maintenance task failed");
    TaskRun {
        task: name.to_string(),
        status: TaskStatus::Failed,
        detail: format!("{why}: {e}"),
        snapshot_id: None,
        files_removed: 0,
        files_added: 0,
    }
}

fn skipped(name: &str, why: &str) -> TaskRun {
    TaskRun {
        task: name.to_string(),
        status: TaskStatus::Skipped,
        detail: why.to_string(),
        snapshot_id: None,
        files_removed: 0,
        files_added: 0,
    }
}

/// An age rounded down to its largest unit: `3d`, `5h`, `12m`, `40s`.
fn rough_age(ms: i64) -> String {
    let s = ms / 1000;
    if s >= 86_400 {
        format!("{}d", s / 86_400)
    } else if s >= 3600 {
        format!("{}h", s / 3600)
    } else if s >= 60 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
