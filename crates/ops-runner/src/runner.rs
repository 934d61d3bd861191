//! `MigrationRunner`: discovers, applies and rolls back migrations for one namespace.
//!
//! Runners for different namespaces share the catalog and the history table and track state
//! independently through its `namespace` column. Concurrent runs for one namespace are not
//! guarded: two `migrate` runs can both execute an upgrade; the second to record history gets
//! [`ConcurrentMigrationError`] and history keeps one row per `(version, namespace)`. Run one job
//! per namespace at a time (a CI concurrency group) or put an external lock in front.
//!
//! Every command reads history once, decides from that read, and validates each history write
//! against it (the snapshot travels with the command, never with the runner, so clones of a
//! runner are independent runners). After each write it re-reads history: any change for this
//! namespace it did not make is another runner's, and the command stops with
//! [`ConcurrentMigrationError`].
//!
//! `migrate`:
//! 1. Resolve the migrations (errors: missing directory, unloadable file, duplicate version)
//!    and check the target; nothing is written before this succeeds.
//! 2. Read history; the pending versions are the discovered ones not `applied`, above the
//!    baseline, up to the target, ascending. A pending Python migration (`NNNN_*.py`) before a
//!    version to apply stops the run before anything runs.
//! 3. For each: `pre_upgrade`, `upgrade` (a file's operations, resuming after those a failed
//!    attempt landed), `post_upgrade`. A conflict with a concurrent commit is
//!    [`ConcurrentMigrationError`] and nothing is recorded. Any other failure re-reads history
//!    first: if another runner recorded something meanwhile, the failure is most likely its
//!    change seen from here, so it is [`ConcurrentMigrationError`] and nothing is recorded;
//!    otherwise it is recorded as `failed` with `<Type>: <message>` and how many operations
//!    landed, and the run stops.
//! 4. Record `applied`, then re-read history: if another runner's changes for this namespace
//!    appear, [`ConcurrentMigrationError`] (this version stays applied). If the write itself
//!    meets another runner's `failed` row for this version (it failed on the change this run
//!    made), the row becomes `applied` and the run stops with [`ConcurrentMigrationError`].
//!
//! `rollback` undoes what was applied: it refuses a version whose file changed since (checksum,
//! unless forced), one whose derived downgrade would drop a table holding rows (unless allowed),
//! and checks every version's file and downgrade before any downgrade runs. A `failed` version
//! whose operations partly landed is undone by inverting those operations.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iceberg::NamespaceIdent;
use iceberg::spec::ManifestContentType;
use ops_core::CatalogHandle;
use serde::Serialize;

use crate::file::{derived_downgrade, operations_checksum};
use crate::history::{
    DEFAULT_META_NAMESPACE, Entry, HistoryRead, HistoryRow, MigrationHistory, Status,
};
use crate::operation::{Operation, Progress, apply, apply_from};
use crate::source::{Resolved, python_migrations, resolve};
use crate::{
    ConcurrentMigrationError, Migration, MigrationContext, Result, RunnerError, StepError, Target,
};

/// A version's state as `status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Recorded as applied.
    Applied,
    /// Discovered, never applied.
    Pending,
    /// Recorded as rolled back.
    RolledBack,
    /// Recorded as failed.
    Failed,
    /// The namespace's baseline (`migrate baseline`).
    Baseline,
    /// At or below the baseline and never applied: `migrate` ignores it.
    BelowBaseline,
}

impl State {
    /// The seed's legend: `[applied]`, `[pending]`, `[rolled_back]`, `[FAILED]`; and
    /// Flyway's `[baseline]`, `[below_baseline]`.
    pub fn legend(self) -> &'static str {
        match self {
            State::Applied => "[applied]",
            State::Pending => "[pending]",
            State::RolledBack => "[rolled_back]",
            State::Failed => "[FAILED]",
            State::Baseline => "[baseline]",
            State::BelowBaseline => "[below_baseline]",
        }
    }

    fn of(row: Option<&HistoryRow>) -> Self {
        match row {
            Some(r) if r.is_baseline() => State::Baseline,
            Some(r) => match r.status {
                Status::Applied => State::Applied,
                Status::RolledBack => State::RolledBack,
                Status::Failed => State::Failed,
            },
            None => State::Pending,
        }
    }
}

/// One line of `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusEntry {
    /// Version.
    pub version: String,
    /// Description (from the migration, else from history).
    pub description: String,
    /// State.
    pub state: State,
    /// History has the version but no migration is discovered for it.
    pub file_missing: bool,
    /// The version is a migration of the Python iceberg-ops (this `.py` file), which iceberg-ops
    /// does not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python_file: Option<String>,
    /// For a failed version: how many of its operations landed (`migrate` resumes after them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations_landed: Option<usize>,
    /// When the state was recorded.
    pub applied_at: Option<String>,
    /// The recorded error of a failed version.
    pub error: Option<String>,
}

impl std::fmt::Display for StatusEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<13} {}  {}",
            self.state.legend(),
            self.version,
            self.description
        )?;
        if self.file_missing {
            f.write_str("  (migration file missing)")?;
        }
        if let Some(p) = &self.python_file {
            write!(f, "  (Python migration {p})")?;
        }
        if let Some(n) = self.operations_landed.filter(|n| *n > 0) {
            write!(
                f,
                "  ({n} operation(s) landed; `migrate` resumes after them)"
            )?;
        }
        if let Some(e) = &self.error {
            write!(f, "  {e}")?;
        }
        Ok(())
    }
}

/// A step `plan`, `migrate --dry-run` or `rollback --dry-run` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedStep {
    /// Version.
    pub version: String,
    /// Description.
    pub description: String,
    /// The Iceberg changes the step makes, one per line.
    pub changes: Vec<String>,
}

/// What `rollback` undoes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollbackTo {
    /// The last `n` applied versions (at least 1).
    Steps(usize),
    /// Every applied version above this one (`0` undoes all).
    Target(Target),
}

/// What a rollback may do beyond undoing exactly what was applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RollbackOptions {
    /// Run today's file even when its checksum differs from the one recorded when it was
    /// applied (the downgrade then follows what the file says now).
    pub force: bool,
    /// Let a derived downgrade drop a table that holds rows (a written `drop_table` needs
    /// `allow_destructive` in its file instead).
    pub allow_destructive: bool,
}

/// A problem `validate` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum ValidationIssue {
    /// An applied version's migration changed since it was applied.
    Changed {
        /// Version.
        version: String,
        /// Where the migration is.
        source: String,
        /// Checksum recorded when applied.
        recorded: String,
        /// Checksum now.
        current: String,
    },
    /// An applied version's migration is no longer discovered.
    Missing {
        /// Version.
        version: String,
        /// Recorded description.
        description: Option<String>,
    },
    /// A version's last attempt failed.
    Failed {
        /// Version.
        version: String,
        /// The recorded error.
        error: Option<String>,
        /// How many of its operations landed.
        operations_landed: usize,
    },
}

impl std::fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValidationIssue::Changed {
                version,
                source,
                recorded,
                current,
            } => write!(
                f,
                "{version}: {source} changed since it was applied (checksum {recorded} when \
                 applied, {current} now); restore it, or run `migrate repair` to accept it"
            ),
            ValidationIssue::Missing {
                version,
                description,
            } => write!(
                f,
                "{version}: applied ({}) but its migration file is missing",
                description.as_deref().unwrap_or("no description")
            ),
            ValidationIssue::Failed {
                version,
                error,
                operations_landed,
            } => {
                write!(
                    f,
                    "{version}: failed ({})",
                    error.as_deref().unwrap_or("no error recorded")
                )?;
                if *operations_landed > 0 {
                    write!(
                        f,
                        "; {operations_landed} operation(s) landed: fix the file and `migrate` \
                         to resume after them, `rollback` to undo them, or `migrate repair` to \
                         clear the failure"
                    )
                } else {
                    f.write_str("; fix the file and `migrate`, or `migrate repair` to clear it")
                }
            }
        }
    }
}

/// A failed attempt `repair` cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClearedFailure {
    /// Version (pending again).
    pub version: String,
    /// The error it had recorded.
    pub error: Option<String>,
    /// How many of its operations had landed: they stay in the tables, and a later `migrate`
    /// runs the migration from its first operation.
    pub operations_landed: usize,
}

/// An applied version whose recorded checksum or description `repair` aligned with its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Realigned {
    /// Version.
    pub version: String,
    /// The checksum recorded before (`None`: none was, e.g. a row of the Python iceberg-ops).
    pub recorded: Option<String>,
    /// The file's checksum, now recorded.
    pub current: String,
    /// The description recorded before, when it differed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description_was: Option<String>,
}

/// What `repair` changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// Failed attempts removed from history.
    pub cleared: Vec<ClearedFailure>,
    /// Applied versions realigned with their files.
    pub realigned: Vec<Realigned>,
}

/// Orchestrates discovery, application and rollback of migrations for one namespace (see the
/// module docs).
#[derive(Clone)]
pub struct MigrationRunner {
    handle: CatalogHandle,
    namespace: String,
    history: MigrationHistory,
    migrations_dir: Option<PathBuf>,
    code: Vec<Arc<dyn Migration>>,
}

impl std::fmt::Debug for MigrationRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationRunner")
            .field("catalog", &self.handle.name())
            .field("namespace", &self.namespace)
            .field("history", self.history.table_ident())
            .field("migrations_dir", &self.migrations_dir)
            .field("code_migrations", &self.code.len())
            .finish()
    }
}

/// The migrations a command works with: ours (files and code) and the Python tool's files.
struct Catalogue {
    discovered: Vec<Resolved>,
    python: BTreeMap<String, PathBuf>,
}

impl Catalogue {
    fn get(&self, version: &str) -> Option<&Resolved> {
        self.discovered.iter().find(|r| r.version == version)
    }

    /// A Python migration of `version` that no migration of ours replaces.
    fn python(&self, version: &str) -> Option<&PathBuf> {
        if self.get(version).is_some() {
            return None;
        }
        self.python.get(version)
    }
}

/// A version `migrate` would apply, in order.
enum Pending<'a> {
    Ours(&'a Resolved),
    Python(&'a str, &'a Path),
}

/// One command's view of history: the snapshot its decisions were read at, which its writes
/// validate from, and the states it expects.
struct Session {
    since: Option<i64>,
    expected: BTreeMap<String, Status>,
    /// The rows as the command first read them.
    first: HistoryRead,
}

impl Session {
    fn new(read: &HistoryRead) -> Self {
        Self {
            since: read.snapshot,
            expected: read.states(),
            first: read.clone(),
        }
    }
}

/// What rollback runs for one version, decided and checked before any downgrade runs.
struct Undo<'a> {
    resolved: &'a Resolved,
    /// The operations to apply (declarative migrations); `None`: the migration's `downgrade`.
    ops: Option<Vec<Operation>>,
    changes: Vec<String>,
}

fn diffs(now: &BTreeMap<String, Status>, expected: &BTreeMap<String, Status>) -> String {
    let mut out = Vec::new();
    for (v, s) in now {
        if expected.get(v) != Some(s) {
            out.push(format!("{v} is {s}"));
        }
    }
    for v in expected.keys() {
        if !now.contains_key(v) {
            out.push(format!("{v} disappeared"));
        }
    }
    out.join(", ")
}

impl MigrationRunner {
    /// A runner for `namespace` in `handle`'s catalog, with history in `_iceberg_ops` and
    /// migration files in `./migrations`.
    pub fn new(handle: &CatalogHandle, namespace: impl Into<String>) -> Self {
        Self {
            handle: handle.clone(),
            namespace: namespace.into(),
            history: MigrationHistory::new(handle, DEFAULT_META_NAMESPACE),
            migrations_dir: Some(PathBuf::from("./migrations")),
            code: Vec::new(),
        }
    }

    /// Keeps history in `meta_namespace` (should hold no user tables).
    pub fn meta_namespace(mut self, meta_namespace: &str) -> Self {
        self.history = MigrationHistory::new(&self.handle, meta_namespace);
        self
    }

    /// Reads migration files from `dir` (or `dir/<namespace>` when that exists); `None` uses
    /// only registered code migrations.
    pub fn migrations_dir(mut self, dir: Option<impl AsRef<Path>>) -> Self {
        self.migrations_dir = dir.map(|d| d.as_ref().to_path_buf());
        self
    }

    /// Adds a code migration beside the files.
    pub fn register(mut self, migration: Arc<dyn Migration>) -> Self {
        self.code.push(migration);
        self
    }

    /// The history store.
    pub fn history_store(&self) -> &MigrationHistory {
        &self.history
    }

    /// The managed namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn context(&self) -> MigrationContext {
        let ns = NamespaceIdent::from_strs(self.namespace.split('.'))
            .unwrap_or_else(|_| NamespaceIdent::new(self.namespace.clone()));
        MigrationContext::new(self.handle.clone(), ns)
    }

    /// The resolved migrations, ascending.
    pub fn discover(&self) -> Result<Vec<Resolved>> {
        resolve(self.migrations_dir.as_deref(), &self.namespace, &self.code)
    }

    fn catalogue(&self) -> Result<Catalogue> {
        Ok(Catalogue {
            discovered: self.discover()?,
            python: python_migrations(self.migrations_dir.as_deref(), &self.namespace)?,
        })
    }

    fn check_target(&self, target: Option<&Target>, cat: &Catalogue) -> Result<Option<String>> {
        let Some(t) = target else {
            return Ok(None);
        };
        let v = t.normalized()?;
        if cat.get(&v).is_none() && cat.python(&v).is_none() {
            return Err(RunnerError::UnknownTarget {
                target: v,
                what: "discovered",
                known: known(
                    cat.discovered
                        .iter()
                        .map(|r| r.version.as_str())
                        .chain(cat.python.keys().map(String::as_str)),
                ),
            });
        }
        Ok(Some(v))
    }

    /// Every discovered migration with its state, plus history rows whose migration is not
    /// discovered (`file_missing`). Writes nothing.
    pub async fn status(&self) -> Result<Vec<StatusEntry>> {
        let cat = self.catalogue()?;
        let read = self.history.read(&self.namespace).await?;
        let floor = read.baseline().map(|b| b.version.clone());
        let below = |v: &str| floor.as_deref().is_some_and(|f| v <= f);
        let entry = |version: &str, description: String, row: Option<&HistoryRow>| {
            let mut state = State::of(row);
            if row.is_none() && below(version) {
                state = State::BelowBaseline;
            }
            StatusEntry {
                version: version.to_string(),
                description,
                state,
                file_missing: false,
                python_file: None,
                operations_landed: row.map(HistoryRow::operations_landed).filter(|n| *n > 0),
                applied_at: row.map(|h| h.applied_at.clone()),
                error: row.and_then(|h| h.error.clone()),
            }
        };
        let mut out: Vec<StatusEntry> = cat
            .discovered
            .iter()
            .map(|r| {
                entry(
                    &r.version,
                    r.migration.description().to_string(),
                    read.row(&r.version),
                )
            })
            .collect();
        for (version, path) in &cat.python {
            if cat.get(version).is_some() {
                continue;
            }
            let row = read.row(version);
            let description = row.and_then(|r| r.description.clone()).unwrap_or_else(|| {
                path.file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.split_once('_'))
                    .map(|(_, d)| d.replace('_', " "))
                    .unwrap_or_default()
            });
            let mut e = entry(version, description, row);
            e.python_file = path.file_name().map(|n| n.to_string_lossy().to_string());
            out.push(e);
        }
        for row in &read.rows {
            if cat.get(&row.version).is_none() && cat.python(&row.version).is_none() {
                let mut e = entry(
                    &row.version,
                    row.description.clone().unwrap_or_default(),
                    Some(row),
                );
                e.file_missing = !row.is_baseline();
                out.push(e);
            }
        }
        out.sort_by(|a, b| a.version.cmp(&b.version));
        Ok(out)
    }

    /// The versions `migrate` would apply up to `target`, ascending (ours and the Python
    /// tool's), from one history read.
    fn pending<'a>(
        &self,
        cat: &'a Catalogue,
        read: &HistoryRead,
        target: Option<&str>,
    ) -> Vec<Pending<'a>> {
        let floor = read.baseline().map(|b| b.version.clone());
        let wanted = |v: &str| {
            read.row(v).is_none_or(|r| r.status != Status::Applied)
                && floor.as_deref().is_none_or(|f| v > f)
                && target.is_none_or(|t| v <= t)
        };
        let mut out: Vec<(&str, Pending<'a>)> = cat
            .discovered
            .iter()
            .filter(|r| wanted(&r.version))
            .map(|r| (r.version.as_str(), Pending::Ours(r)))
            .collect();
        for (v, path) in &cat.python {
            if cat.get(v).is_none() && wanted(v) {
                out.push((v.as_str(), Pending::Python(v.as_str(), path.as_path())));
            }
        }
        out.sort_by(|a, b| a.0.cmp(b.0));
        out.into_iter().map(|(_, p)| p).collect()
    }

    /// Where a declarative migration's upgrade resumes: after the operations a failed attempt
    /// landed, when they are unchanged in the file.
    fn resume_point(&self, r: &Resolved, row: Option<&HistoryRow>) -> Result<Progress> {
        let (Some(ops), Some(row)) = (r.migration.operations(), row) else {
            return Ok(Progress::default());
        };
        let landed = row.operations_landed();
        if landed == 0 {
            return Ok(Progress::default());
        }
        let current = operations_checksum(&ops[..landed.min(ops.len())]);
        let recorded = row.details.landed_checksum.clone().unwrap_or_default();
        if landed > ops.len() || current != recorded {
            return Err(RunnerError::LandedChanged {
                version: r.version.clone(),
                landed,
                migration: r.migration.source(),
                recorded,
                current,
            });
        }
        Ok(Progress {
            landed,
            earlier_properties: row.details.earlier_properties.clone(),
        })
    }

    /// The pending migrations up to `target` (inclusive) and the changes each would make.
    /// Writes nothing, creates nothing.
    pub async fn plan(&self, target: Option<Target>) -> Result<Vec<PlannedStep>> {
        let cat = self.catalogue()?;
        let target = self.check_target(target.as_ref(), &cat)?;
        let read = self.history.read(&self.namespace).await?;
        let ctx = self.context();
        let mut steps = Vec::new();
        for p in self.pending(&cat, &read, target.as_deref()) {
            steps.push(match p {
                Pending::Ours(r) => {
                    let from = self.resume_point(r, read.row(&r.version))?;
                    let mut changes = match r.migration.operations() {
                        Some(ops) => ops[from.landed..]
                            .iter()
                            .map(|o| o.describe(&ctx))
                            .collect(),
                        None => r.migration.describe_upgrade(&ctx),
                    };
                    if from.landed > 0 {
                        changes.insert(
                            0,
                            format!(
                                "resumes after the {} operation(s) its failed attempt landed",
                                from.landed
                            ),
                        );
                    }
                    PlannedStep {
                        version: r.version.clone(),
                        description: r.migration.description().to_string(),
                        changes,
                    }
                }
                Pending::Python(v, path) => PlannedStep {
                    version: v.to_string(),
                    description: path.display().to_string(),
                    changes: vec![
                        "a migration of the Python iceberg-ops: apply it with the Python tool"
                            .to_string(),
                    ],
                },
            });
        }
        Ok(steps)
    }

    /// Applies every pending migration up to `target` (all when `None`), ascending; returns the
    /// versions applied. See the module docs for failures and concurrency.
    pub async fn migrate(&self, target: Option<Target>) -> Result<Vec<String>> {
        let cat = self.catalogue()?;
        let target = self.check_target(target.as_ref(), &cat)?;
        let read = self.history.read(&self.namespace).await?;
        let mut plan = self.pending(&cat, &read, target.as_deref());
        // A Python migration cannot be skipped: ours after it would run out of order.
        if let Some(i) = plan.iter().position(|p| matches!(p, Pending::Python(..))) {
            if let Pending::Python(v, path) = &plan[i]
                && plan[i..].iter().any(|p| matches!(p, Pending::Ours(_)))
            {
                return Err(RunnerError::PythonMigration {
                    version: v.to_string(),
                    file: path.to_path_buf(),
                    action: "apply",
                    hint: ", then run `migrate` again (later versions depend on it)".into(),
                });
            }
            plan.truncate(i);
        }
        // Every resume point is checked before anything runs.
        let mut resume = BTreeMap::new();
        for p in &plan {
            if let Pending::Ours(r) = p {
                resume.insert(
                    r.version.clone(),
                    self.resume_point(r, read.row(&r.version))?,
                );
            }
        }
        let mut session = Session::new(&read);
        let ctx = self.context();
        let mut done = Vec::new();
        for p in plan {
            let Pending::Ours(r) = p else { break };
            let m = &r.migration;
            let mut progress = resume.remove(&r.version).unwrap_or_default();
            let ops = m.operations();
            if progress.landed > 0 {
                tracing::info!(version = %r.version, landed = progress.landed,
                    "resuming after the operations a failed attempt landed");
            }
            tracing::info!(version = %r.version, description = m.description(), "upgrading");
            let outcome = async {
                m.pre_upgrade(&ctx).await?;
                match ops {
                    Some(ops) => apply_from(ops, &ctx, &mut progress).await?,
                    None => m.upgrade(&ctx).await?,
                }
                m.post_upgrade(&ctx).await
            }
            .await;
            let mut entry = Entry::new(&r.version, m.description(), Status::Applied);
            entry.checksum = m.checksum();
            entry.details.earlier_properties = progress.earlier_properties.clone();
            if let Err(e) = outcome {
                if let Some(ops) = ops
                    && progress.landed > 0
                {
                    entry.details.operations_landed = Some(progress.landed);
                    entry.details.landed_checksum =
                        Some(operations_checksum(&ops[..progress.landed]));
                }
                return Err(self.upgrade_failed(&mut session, r, e, entry).await);
            }
            self.record_upgrade(&mut session, entry).await?;
            done.push(r.version.clone());
        }
        Ok(done)
    }

    /// Writes `entry` (validated from the session's read), then re-reads history and stops if
    /// another runner changed this namespace meanwhile.
    async fn record(&self, session: &mut Session, entry: &Entry) -> Result<()> {
        self.history
            .write(&self.namespace, entry, session.since)
            .await?;
        session.expected.insert(entry.version.clone(), entry.status);
        self.check_no_other_runner(session).await.map(|_| ())
    }

    /// Records an upgrade that landed. If the write meets another runner's `failed` row for
    /// this version, that runner failed on the change this run made: the row becomes `applied`
    /// and the run stops with [`ConcurrentMigrationError`].
    async fn record_upgrade(&self, session: &mut Session, entry: Entry) -> Result<()> {
        let conflict = match self.record(session, &entry).await {
            Err(RunnerError::Concurrent(c)) => c,
            other => return other,
        };
        let now = self.history.read(&self.namespace).await?;
        // A `failed` row written after this command's read (not the one it resumed from).
        let Some(theirs) = now
            .row(&entry.version)
            .filter(|r| r.status == Status::Failed && session.first.row(&r.version) != Some(*r))
        else {
            return Err(conflict.into());
        };
        let error = theirs.error.clone().unwrap_or_default();
        self.history
            .write(&self.namespace, &entry, now.snapshot)
            .await?;
        Err(ConcurrentMigrationError(format!(
            "another runner recorded {} of namespace '{}' as failed ({error}) while this run \
             applied it; its failure came from the change this run made, so {} is now recorded \
             as applied. Stopping: run one migration job per namespace at a time",
            entry.version, self.namespace, entry.version
        ))
        .into())
    }

    async fn upgrade_failed(
        &self,
        session: &mut Session,
        r: &Resolved,
        e: StepError,
        mut entry: Entry,
    ) -> RunnerError {
        let m = &r.migration;
        if e.is_conflict() {
            return ConcurrentMigrationError(format!(
                "migration {} ({}) conflicted with a concurrent commit: {e}; nothing was \
                 recorded",
                r.version,
                m.description()
            ))
            .into();
        }
        let message = e.record();
        tracing::debug!(version = %r.version, error = ?e, "upgrade failed");
        // A failure while another runner works on this namespace is most likely that runner's
        // change seen from here (its rename made ours fail): recording it would stop every
        // later run at a migration that in fact landed.
        match self.history.read(&self.namespace).await {
            Ok(now) if now.states() != session.expected => {
                return ConcurrentMigrationError(format!(
                    "another runner recorded history for namespace '{}' while {} was upgrading \
                     ({}); this run's attempt failed ({message}), most likely on the change the \
                     other runner made, and was not recorded",
                    self.namespace,
                    r.version,
                    diffs(&now.states(), &session.expected)
                ))
                .into();
            }
            Ok(_) => {}
            Err(read_error) => tracing::warn!(error = %read_error,
                "could not re-read migration history before recording the failure"),
        }
        entry.status = Status::Failed;
        entry.error = Some(message.clone());
        match self
            .history
            .write(&self.namespace, &entry, session.since)
            .await
        {
            Ok(_) => {}
            // Another runner changed this version's row after our read: its outcome stands.
            Err(RunnerError::Concurrent(c)) => {
                return ConcurrentMigrationError(format!(
                    "{}; this run's attempt at {} failed ({message})",
                    c.0, r.version
                ))
                .into();
            }
            Err(record_error) => tracing::warn!(
                version = %r.version,
                error = %record_error,
                "could not record the failure in migration history"
            ),
        }
        RunnerError::MigrationFailed {
            version: r.version.clone(),
            description: m.description().to_string(),
            message,
        }
    }

    /// Re-reads history: any difference from what this command expects is another runner's
    /// work. Moves the session to the new read.
    async fn check_no_other_runner(&self, session: &mut Session) -> Result<HistoryRead> {
        let now = self.history.read(&self.namespace).await?;
        if now.states() != session.expected {
            return Err(ConcurrentMigrationError(format!(
                "another runner recorded history for namespace '{}' during this run ({}); \
                 stopping",
                self.namespace,
                diffs(&now.states(), &session.expected)
            ))
            .into());
        }
        session.since = now.snapshot;
        Ok(now)
    }

    fn check_rollback_args(&self, to: &RollbackTo) -> Result<()> {
        match to {
            RollbackTo::Steps(n) if *n < 1 => Err(RunnerError::InvalidArgument(format!(
                "steps must be at least 1 (got {n})"
            ))),
            RollbackTo::Steps(_) => Ok(()),
            RollbackTo::Target(t) => t.normalized().map(|_| ()),
        }
    }

    /// The versions `rollback(to)` undoes, highest first: applied ones and failed ones whose
    /// operations partly landed, above the baseline.
    fn rollback_versions(
        &self,
        to: &RollbackTo,
        cat: &Catalogue,
        read: &HistoryRead,
    ) -> Result<Vec<HistoryRow>> {
        let floor = read.baseline().map(|b| b.version.clone());
        if let RollbackTo::Target(t) = to {
            let v = t.normalized()?;
            let applied = read.rows.iter().filter(|r| r.status == Status::Applied);
            if v != "0000"
                && cat.get(&v).is_none()
                && cat.python(&v).is_none()
                && !applied.clone().any(|r| r.version == v)
            {
                return Err(RunnerError::UnknownTarget {
                    target: v,
                    what: "discovered or applied",
                    known: known(
                        cat.discovered
                            .iter()
                            .map(|r| r.version.as_str())
                            .chain(applied.map(|r| r.version.as_str())),
                    ),
                });
            }
            if let Some(f) = &floor
                && &v < f
            {
                return Err(RunnerError::InvalidArgument(format!(
                    "cannot roll back below the baseline {f} of namespace '{}' (target {v}); \
                     the lowest target is {f}",
                    self.namespace
                )));
            }
        }
        let mut undoable: Vec<HistoryRow> = read
            .rows
            .iter()
            .filter(|r| !r.is_baseline())
            .filter(|r| floor.as_deref().is_none_or(|f| r.version.as_str() > f))
            .filter(|r| {
                r.status == Status::Applied
                    || (r.status == Status::Failed && r.operations_landed() > 0)
            })
            .cloned()
            .collect();
        undoable.sort_by(|a, b| b.version.cmp(&a.version));
        Ok(match to {
            RollbackTo::Steps(n) => {
                if let Some(f) = &floor
                    && *n > undoable.len()
                {
                    return Err(RunnerError::InvalidArgument(format!(
                        "cannot roll back {n} migration(s) of namespace '{}': only {} lie above \
                         its baseline {f}, which cannot be rolled back",
                        self.namespace,
                        undoable.len()
                    )));
                }
                undoable.into_iter().take(*n).collect()
            }
            RollbackTo::Target(t) => {
                let v = t.normalized()?;
                undoable.into_iter().filter(|a| a.version > v).collect()
            }
        })
    }

    /// Decides and checks everything `rollback(to)` will run, from one history read, before
    /// anything runs.
    async fn plan_undo<'a>(
        &self,
        to: &RollbackTo,
        options: RollbackOptions,
        cat: &'a Catalogue,
        read: &HistoryRead,
    ) -> Result<Vec<Undo<'a>>> {
        let rows = self.rollback_versions(to, cat, read)?;
        let mut missing = Vec::new();
        for row in &rows {
            if cat.get(&row.version).is_some() {
                continue;
            }
            if let Some(path) = cat.python(&row.version) {
                return Err(RunnerError::PythonMigration {
                    version: row.version.clone(),
                    file: path.clone(),
                    action: "roll back",
                    hint: String::new(),
                });
            }
            missing.push(row.version.as_str());
        }
        if !missing.is_empty() {
            return Err(RunnerError::MissingMigration {
                versions: missing.join(", "),
            });
        }
        let ctx = self.context();
        let mut undos = Vec::new();
        for row in &rows {
            let Some(r) = cat.get(&row.version) else {
                continue;
            };
            let m = &r.migration;
            let not_implemented = |reason: String| RunnerError::NotImplemented {
                version: r.version.clone(),
                reason,
            };
            let landed = row.operations_landed();
            let (ops, derived) = match m.operations() {
                Some(upgrade) if row.status == Status::Failed => {
                    // Undo what landed, whatever the file says after it.
                    let current = operations_checksum(&upgrade[..landed.min(upgrade.len())]);
                    let recorded = row.details.landed_checksum.clone().unwrap_or_default();
                    if !options.force && (landed > upgrade.len() || current != recorded) {
                        return Err(RunnerError::LandedChanged {
                            version: r.version.clone(),
                            landed,
                            migration: m.source(),
                            recorded,
                            current,
                        });
                    }
                    let landed_ops = &upgrade[..landed.min(upgrade.len())];
                    let ops = derived_downgrade(landed_ops, &row.details.earlier_properties)
                        .map_err(|e| {
                            not_implemented(format!(
                                "its failed attempt landed {landed} operation(s) and {e}; or \
                                 finish it with `migrate`, then roll it back"
                            ))
                        })?;
                    (Some(ops), true)
                }
                Some(upgrade) => {
                    self.check_checksum(r, row, options)?;
                    match m.written_downgrade() {
                        Some(written) => (Some(written.to_vec()), false),
                        None => (
                            Some(
                                derived_downgrade(upgrade, &row.details.earlier_properties)
                                    .map_err(not_implemented)?,
                            ),
                            true,
                        ),
                    }
                }
                None => {
                    self.check_checksum(r, row, options)?;
                    (None, false)
                }
            };
            let changes = match &ops {
                Some(ops) => ops.iter().map(|o| o.describe(&ctx)).collect(),
                None => m.describe_downgrade(&ctx).map_err(|e| match e {
                    StepError::NotImplemented(reason) => not_implemented(reason),
                    other => not_implemented(other.to_string()),
                })?,
            };
            if derived
                && !options.allow_destructive
                && let Some(ops) = &ops
            {
                for op in ops {
                    match op {
                        Operation::DropTable { table } => {
                            let ident = ctx.table(table);
                            if let Some(rows) = table_rows(&self.handle, &ident).await?
                                && rows > 0
                            {
                                return Err(RunnerError::DestructiveRollback {
                                    version: r.version.clone(),
                                    table: ident.to_string(),
                                    rows,
                                });
                            }
                        }
                        Operation::DropColumn { table, column } => {
                            let ident = ctx.table(table);
                            let values = column_values(&self.handle, &ident, column).await?;
                            if let Some(values) = values
                                && values != Some(0)
                            {
                                return Err(RunnerError::DestructiveColumnRollback {
                                    version: r.version.clone(),
                                    table: ident.to_string(),
                                    column: column.clone(),
                                    values,
                                });
                            }
                        }
                        _ => {}
                    }
                }
            }
            undos.push(Undo {
                resolved: r,
                ops,
                changes,
            });
        }
        Ok(undos)
    }

    fn check_checksum(
        &self,
        r: &Resolved,
        row: &HistoryRow,
        options: RollbackOptions,
    ) -> Result<()> {
        // No recorded checksum (the Python tool, code migrations): nothing to compare.
        if let (Some(recorded), Some(current)) = (&row.checksum, r.migration.checksum())
            && recorded != &current
        {
            if options.force {
                tracing::warn!(version = %r.version, %recorded, %current,
                    "rolling back with today's file, which changed since it was applied (--force)");
                return Ok(());
            }
            return Err(RunnerError::ChecksumMismatch {
                version: r.version.clone(),
                migration: r.migration.source(),
                recorded: recorded.clone(),
                current,
            });
        }
        Ok(())
    }

    /// What `rollback(to)` would undo, highest version first, with each downgrade's changes.
    /// Writes nothing.
    pub async fn plan_rollback(&self, to: RollbackTo) -> Result<Vec<PlannedStep>> {
        self.plan_rollback_with(to, RollbackOptions::default())
            .await
    }

    /// As [`Self::plan_rollback`], with `options`.
    pub async fn plan_rollback_with(
        &self,
        to: RollbackTo,
        options: RollbackOptions,
    ) -> Result<Vec<PlannedStep>> {
        let cat = self.catalogue()?;
        self.check_rollback_args(&to)?;
        let read = self.history.read(&self.namespace).await?;
        Ok(self
            .plan_undo(&to, options, &cat, &read)
            .await?
            .into_iter()
            .map(|u| PlannedStep {
                version: u.resolved.version.clone(),
                description: u.resolved.migration.description().to_string(),
                changes: u.changes,
            })
            .collect())
    }

    /// Rolls back applied migrations, highest version first; returns the versions rolled back.
    /// Refuses, before any downgrade runs, a version whose file changed since it was applied, a
    /// derived downgrade that would drop a table holding rows, and a version without its file
    /// or a downgrade.
    pub async fn rollback(&self, to: RollbackTo) -> Result<Vec<String>> {
        self.rollback_with(to, RollbackOptions::default()).await
    }

    /// As [`Self::rollback`], with `options` (`--force`, `--allow-destructive`).
    pub async fn rollback_with(
        &self,
        to: RollbackTo,
        options: RollbackOptions,
    ) -> Result<Vec<String>> {
        let cat = self.catalogue()?;
        self.check_rollback_args(&to)?;
        let read = self.history.read(&self.namespace).await?;
        let undos = self.plan_undo(&to, options, &cat, &read).await?;
        let mut session = Session::new(&read);
        let ctx = self.context();
        let mut done = Vec::new();
        for u in undos {
            let r = u.resolved;
            let m = &r.migration;
            tracing::info!(version = %r.version, description = m.description(), "downgrading");
            let outcome = match &u.ops {
                Some(ops) => apply(ops, &ctx).await,
                None => m.downgrade(&ctx).await,
            };
            if let Err(e) = outcome {
                return Err(match e {
                    e if e.is_conflict() => ConcurrentMigrationError(format!(
                        "rollback of {} conflicted with a concurrent commit: {e}",
                        r.version
                    ))
                    .into(),
                    StepError::NotImplemented(reason) => RunnerError::NotImplemented {
                        version: r.version.clone(),
                        reason,
                    },
                    e => RunnerError::RollbackFailed {
                        version: r.version.clone(),
                        description: m.description().to_string(),
                        message: e.record(),
                    },
                });
            }
            let mut entry = Entry::new(&r.version, m.description(), Status::RolledBack);
            entry.checksum = m.checksum();
            self.record(&mut session, &entry).await?;
            done.push(r.version.clone());
        }
        Ok(done)
    }

    /// Marks every migration up to `target` (all when `None`) whose status is not `applied` as
    /// applied, without running anything; returns the versions stamped. Idempotent.
    pub async fn stamp(&self, target: Option<Target>) -> Result<Vec<String>> {
        let cat = self.catalogue()?;
        let target = self.check_target(target.as_ref(), &cat)?;
        let read = self.history.read(&self.namespace).await?;
        let plan = self.pending(&cat, &read, target.as_deref());
        let mut session = Session::new(&read);
        let mut done = Vec::new();
        for p in plan {
            let Pending::Ours(r) = p else { continue };
            let mut entry = Entry::new(&r.version, r.migration.description(), Status::Applied);
            entry.checksum = r.migration.checksum();
            self.record(&mut session, &entry).await?;
            done.push(r.version.clone());
        }
        Ok(done)
    }

    /// Flyway's `baseline`: adopts a namespace whose tables exist already by recording
    /// `version` (default `0001`) as its baseline; `migrate` then ignores every migration up to
    /// and including it, and `rollback` never goes below it. Refused when the namespace already
    /// has history (other than this same baseline, which makes it a no-op). Returns whether a
    /// row was written.
    pub async fn baseline(
        &self,
        version: Option<Target>,
        description: Option<&str>,
    ) -> Result<bool> {
        let version = match version {
            Some(t) => t.normalized()?,
            None => "0001".to_string(),
        };
        let read = self.history.read(&self.namespace).await?;
        if let [only] = read.rows.as_slice()
            && only.is_baseline()
            && only.version == version
        {
            return Ok(false);
        }
        if !read.rows.is_empty() {
            let rows: Vec<String> = read
                .rows
                .iter()
                .map(|r| format!("{} {}", r.version, r.status))
                .collect();
            return Err(RunnerError::InvalidArgument(format!(
                "cannot baseline namespace '{}' at {version}: its migration history already has \
                 rows ({}); baseline adopts a namespace no migration has run on (use `stamp` to \
                 mark versions applied)",
                self.namespace,
                rows.join(", ")
            )));
        }
        let mut entry = Entry::new(
            &version,
            description.unwrap_or("<< iceberg-ops baseline >>"),
            Status::Applied,
        );
        entry.details.baseline = true;
        let mut session = Session::new(&read);
        self.record(&mut session, &entry).await?;
        Ok(true)
    }

    /// Flyway's `repair`: removes the rows of failed attempts (the versions become pending;
    /// operations that landed stay in the tables) and aligns the recorded checksum and
    /// description of every applied version with its file. Rows whose file is missing are left
    /// alone.
    pub async fn repair(&self) -> Result<RepairReport> {
        let cat = self.catalogue()?;
        let read = self.history.read(&self.namespace).await?;
        let mut session = Session::new(&read);
        let mut report = RepairReport::default();
        for row in &read.rows {
            match row.status {
                Status::Failed => {
                    self.history
                        .remove(&self.namespace, &row.version, session.since)
                        .await?;
                    session.expected.remove(&row.version);
                    self.check_no_other_runner(&mut session).await?;
                    report.cleared.push(ClearedFailure {
                        version: row.version.clone(),
                        error: row.error.clone(),
                        operations_landed: row.operations_landed(),
                    });
                }
                Status::Applied if !row.is_baseline() => {
                    let Some(r) = cat.get(&row.version) else {
                        continue;
                    };
                    let Some(current) = r.migration.checksum() else {
                        continue;
                    };
                    let description = r.migration.description();
                    let description_was = (row.description.as_deref() != Some(description))
                        .then(|| row.description.clone().unwrap_or_default());
                    if row.checksum.as_deref() == Some(current.as_str())
                        && description_was.is_none()
                    {
                        continue;
                    }
                    let mut entry = Entry::new(&row.version, description, Status::Applied);
                    entry.checksum = Some(current.clone());
                    entry.details = row.details.clone();
                    entry.applied_at = Some(row.applied_at.clone());
                    self.record(&mut session, &entry).await?;
                    report.realigned.push(Realigned {
                        version: row.version.clone(),
                        recorded: row.checksum.clone(),
                        current,
                        description_was,
                    });
                }
                _ => {}
            }
        }
        Ok(report)
    }

    /// Each version's latest recorded row, ascending.
    pub async fn history(&self) -> Result<Vec<HistoryRow>> {
        Ok(self.history.read(&self.namespace).await?.rows)
    }

    /// Flyway's `validate`: applied versions whose migration changed since (checksums differ)
    /// or is no longer discovered, and failed attempts. Rows without a recorded checksum (the
    /// Python tool writes none) have nothing to compare; migrations of the Python tool and the
    /// baseline need no file. Writes nothing.
    pub async fn validate(&self) -> Result<Vec<ValidationIssue>> {
        let cat = self.catalogue()?;
        let read = self.history.read(&self.namespace).await?;
        let mut issues = Vec::new();
        for row in read.rows.iter().filter(|r| !r.is_baseline()) {
            match row.status {
                Status::Failed => issues.push(ValidationIssue::Failed {
                    version: row.version.clone(),
                    error: row.error.clone(),
                    operations_landed: row.operations_landed(),
                }),
                Status::Applied => match cat.get(&row.version) {
                    None if cat.python(&row.version).is_some() => {}
                    None => issues.push(ValidationIssue::Missing {
                        version: row.version.clone(),
                        description: row.description.clone(),
                    }),
                    Some(r) => {
                        if let (Some(recorded), Some(current)) =
                            (&row.checksum, r.migration.checksum())
                            && recorded != &current
                        {
                            issues.push(ValidationIssue::Changed {
                                version: row.version.clone(),
                                source: r.migration.source(),
                                recorded: recorded.clone(),
                                current,
                            });
                        }
                    }
                },
                Status::RolledBack => {}
            }
        }
        Ok(issues)
    }
}

/// How many rows `ident`'s live data files hold (`None`: the table does not exist). Reads the
/// manifest list, and a manifest only when the list has no counts for it (v1).
async fn table_rows(handle: &CatalogHandle, ident: &iceberg::TableIdent) -> Result<Option<u64>> {
    if !handle.catalog().table_exists(ident).await? {
        return Ok(None);
    }
    let table = handle.catalog().load_table(ident).await?;
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(Some(0));
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut rows = 0u64;
    for manifest in list.entries() {
        if manifest.content != ManifestContentType::Data {
            continue;
        }
        match (manifest.added_rows_count, manifest.existing_rows_count) {
            (Some(a), Some(e)) => rows += a + e,
            _ => {
                let m = manifest.load_manifest(table.file_io()).await?;
                rows += m
                    .entries()
                    .iter()
                    .filter(|e| e.is_alive())
                    .map(|e| e.record_count())
                    .sum::<u64>();
            }
        }
    }
    Ok(Some(rows))
}

/// How many non-null values `column` of `ident` holds, from its live data files' column
/// metrics: `None` when the table or column does not exist (the downgrade reports that),
/// `Some(None)` when a data file with rows has no metrics to tell.
async fn column_values(
    handle: &CatalogHandle,
    ident: &iceberg::TableIdent,
    column: &str,
) -> Result<Option<Option<u64>>> {
    if !handle.catalog().table_exists(ident).await? {
        return Ok(None);
    }
    let table = handle.catalog().load_table(ident).await?;
    let md = table.metadata();
    let Some(field) = md.current_schema().field_by_name(column) else {
        return Ok(None);
    };
    // Parquet keeps metrics per leaf; an explicit stack, as nesting depth is user data.
    let mut leaves = Vec::new();
    let mut stack = vec![field.clone()];
    while let Some(f) = stack.pop() {
        match f.field_type.as_ref() {
            iceberg::spec::Type::Primitive(_) => leaves.push(f.id),
            iceberg::spec::Type::Struct(s) => stack.extend(s.fields().iter().cloned()),
            iceberg::spec::Type::List(l) => stack.push(l.element_field.clone()),
            iceberg::spec::Type::Map(m) => {
                stack.push(m.key_field.clone());
                stack.push(m.value_field.clone());
            }
        }
    }
    let Some(snapshot) = md.current_snapshot() else {
        return Ok(Some(Some(0)));
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut values = 0u64;
    for manifest in list.entries() {
        if manifest.content != ManifestContentType::Data {
            continue;
        }
        let m = manifest.load_manifest(table.file_io()).await?;
        for entry in m.entries().iter().filter(|e| e.is_alive()) {
            let file = entry.data_file();
            if file.record_count() == 0 {
                continue;
            }
            // A file added under a schema without the column cannot hold its values.
            let written_with_column = entry
                .snapshot_id()
                .and_then(|id| md.snapshot_by_id(id))
                .and_then(|s| s.schema_id())
                .and_then(|id| md.schema_by_id(id))
                .is_none_or(|schema| schema.field_by_id(field.id).is_some());
            if !written_with_column {
                continue;
            }
            for leaf in &leaves {
                match file.value_counts().get(leaf) {
                    Some(count) => {
                        let nulls = file.null_value_counts().get(leaf).copied().unwrap_or(0);
                        values += count.saturating_sub(nulls);
                    }
                    // No metrics for it: nothing tells whether the file has values.
                    None => return Ok(Some(None)),
                }
            }
        }
    }
    Ok(Some(Some(values)))
}

fn known<'a>(versions: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = versions.collect();
    v.sort();
    v.dedup();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}
