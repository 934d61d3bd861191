//! `MigrationRunner`: discovers, applies and rolls back migrations for one namespace.
//!
//! Runners for different namespaces share the catalog and the history table and track state
//! independently through its `namespace` column. Concurrent runs for one namespace are not
//! guarded: two `migrate` runs can both execute an upgrade; the second to record history gets
//! [`ConcurrentMigrationError`] and history keeps one row per `(version, namespace)`. Run one job
//! per namespace at a time (a CI concurrency group) or put an external lock in front.
//!
//! `migrate`:
//! 1. Resolve the migrations (errors: missing directory, unloadable file, duplicate version)
//!    and check the target; nothing is written before this succeeds.
//! 2. Read history; the pending versions are the discovered ones not `applied`, up to the
//!    target, ascending.
//! 3. For each: `pre_upgrade`, `upgrade`, `post_upgrade`. A conflict with a concurrent commit is
//!    [`ConcurrentMigrationError`] and nothing is recorded; any other failure is recorded as
//!    `failed` with `<Type>: <message>` and the run stops.
//! 4. Record `applied`, then re-read history: if another runner's changes for this namespace
//!    appear, [`ConcurrentMigrationError`] (this version stays applied).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iceberg::NamespaceIdent;
use ops_core::CatalogHandle;
use serde::Serialize;

use crate::history::{DEFAULT_META_NAMESPACE, HistoryRow, MigrationHistory, Status};
use crate::source::{Resolved, resolve};
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
}

impl State {
    /// The seed's legend: `[applied]`, `[pending]`, `[rolled_back]`, `[FAILED]`.
    pub fn legend(self) -> &'static str {
        match self {
            State::Applied => "[applied]",
            State::Pending => "[pending]",
            State::RolledBack => "[rolled_back]",
            State::Failed => "[FAILED]",
        }
    }

    fn of(status: Option<Status>) -> Self {
        match status {
            Some(Status::Applied) => State::Applied,
            Some(Status::RolledBack) => State::RolledBack,
            Some(Status::Failed) => State::Failed,
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
}

impl std::fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValidationIssue::Changed {
                version, source, ..
            } => write!(
                f,
                "{version}: {source} changed since it was applied (checksum differs)"
            ),
            ValidationIssue::Missing {
                version,
                description,
            } => write!(
                f,
                "{version}: applied ({}) but its migration file is missing",
                description.as_deref().unwrap_or("no description")
            ),
        }
    }
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

    fn check_target(
        &self,
        target: Option<&Target>,
        discovered: &[Resolved],
    ) -> Result<Option<String>> {
        let Some(t) = target else {
            return Ok(None);
        };
        let v = t.normalized()?;
        if !discovered.iter().any(|r| r.version == v) {
            return Err(RunnerError::UnknownTarget {
                target: v,
                what: "discovered",
                known: known(discovered.iter().map(|r| r.version.as_str())),
            });
        }
        Ok(Some(v))
    }

    /// Every discovered migration with its state, plus history rows whose migration is not
    /// discovered (`file_missing`). Writes nothing.
    pub async fn status(&self) -> Result<Vec<StatusEntry>> {
        let discovered = self.discover()?;
        let rows = self.history.get_all(&self.namespace).await?;
        let by_version: BTreeMap<&str, &HistoryRow> =
            rows.iter().map(|r| (r.version.as_str(), r)).collect();
        let mut out: Vec<StatusEntry> = discovered
            .iter()
            .map(|r| {
                let row = by_version.get(r.version.as_str());
                StatusEntry {
                    version: r.version.clone(),
                    description: r.migration.description().to_string(),
                    state: State::of(row.map(|h| h.status)),
                    file_missing: false,
                    applied_at: row.map(|h| h.applied_at.clone()),
                    error: row.and_then(|h| h.error.clone()),
                }
            })
            .collect();
        for row in &rows {
            if !discovered.iter().any(|r| r.version == row.version) {
                out.push(StatusEntry {
                    version: row.version.clone(),
                    description: row.description.clone().unwrap_or_default(),
                    state: State::of(Some(row.status)),
                    file_missing: true,
                    applied_at: Some(row.applied_at.clone()),
                    error: row.error.clone(),
                });
            }
        }
        out.sort_by(|a, b| a.version.cmp(&b.version));
        Ok(out)
    }

    /// The pending migrations up to `target` (inclusive) and the changes each would make.
    /// Writes nothing, creates nothing.
    pub async fn plan(&self, target: Option<Target>) -> Result<Vec<PlannedStep>> {
        let discovered = self.discover()?;
        let target = self.check_target(target.as_ref(), &discovered)?;
        let applied = self.history.get_applied_versions(&self.namespace).await?;
        let ctx = self.context();
        Ok(pending(&discovered, &applied, target.as_deref())
            .map(|r| PlannedStep {
                version: r.version.clone(),
                description: r.migration.description().to_string(),
                changes: r.migration.describe_upgrade(&ctx),
            })
            .collect())
    }

    /// Applies every pending migration up to `target` (all when `None`), ascending; returns the
    /// versions applied. See the module docs for failures and concurrency.
    pub async fn migrate(&self, target: Option<Target>) -> Result<Vec<String>> {
        let discovered = self.discover()?;
        let target = self.check_target(target.as_ref(), &discovered)?;
        let rows = self.history.get_all(&self.namespace).await?;
        let mut expected = states(&rows);
        let applied: std::collections::BTreeSet<String> = rows
            .iter()
            .filter(|r| r.status == Status::Applied)
            .map(|r| r.version.clone())
            .collect();
        let ctx = self.context();
        let mut done = Vec::new();
        for r in pending(&discovered, &applied, target.as_deref()) {
            let m = &r.migration;
            tracing::info!(version = %r.version, description = m.description(), "upgrading");
            let outcome = async {
                m.pre_upgrade(&ctx).await?;
                m.upgrade(&ctx).await?;
                m.post_upgrade(&ctx).await
            }
            .await;
            let checksum = m.checksum();
            if let Err(e) = outcome {
                return Err(self.upgrade_failed(r, e, checksum.as_deref()).await);
            }
            self.history
                .record_applied(
                    &r.version,
                    &self.namespace,
                    m.description(),
                    checksum.as_deref(),
                )
                .await?;
            expected.insert(r.version.clone(), Status::Applied);
            done.push(r.version.clone());
            self.check_no_other_runner(&expected).await?;
        }
        Ok(done)
    }

    async fn upgrade_failed(
        &self,
        r: &Resolved,
        e: StepError,
        checksum: Option<&str>,
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
        if let Err(record_error) = self
            .history
            .record_failed(
                &r.version,
                &self.namespace,
                m.description(),
                &message,
                checksum,
            )
            .await
        {
            tracing::warn!(
                version = %r.version,
                error = %record_error,
                "could not record the failure in migration history"
            );
        }
        RunnerError::MigrationFailed {
            version: r.version.clone(),
            description: m.description().to_string(),
            message,
        }
    }

    /// Re-reads history: any difference from what this run expects is another runner's work.
    async fn check_no_other_runner(&self, expected: &BTreeMap<String, Status>) -> Result<()> {
        let now = states(&self.history.get_all(&self.namespace).await?);
        if &now == expected {
            return Ok(());
        }
        let mut diffs = Vec::new();
        for (v, s) in &now {
            if expected.get(v) != Some(s) {
                diffs.push(format!("{v} is {s}"));
            }
        }
        for v in expected.keys() {
            if !now.contains_key(v) {
                diffs.push(format!("{v} disappeared"));
            }
        }
        Err(ConcurrentMigrationError(format!(
            "another runner recorded history for namespace '{}' during this run ({}); stopping",
            self.namespace,
            diffs.join(", ")
        ))
        .into())
    }

    fn rollback_versions(
        &self,
        to: &RollbackTo,
        discovered: &[Resolved],
        rows: &[HistoryRow],
    ) -> Result<Vec<String>> {
        let mut applied: Vec<String> = rows
            .iter()
            .filter(|r| r.status == Status::Applied)
            .map(|r| r.version.clone())
            .collect();
        applied.sort_by(|a, b| b.cmp(a));
        Ok(match to {
            RollbackTo::Steps(n) => applied.into_iter().take(*n).collect(),
            RollbackTo::Target(t) => {
                let v = t.normalized()?;
                applied.into_iter().filter(|a| *a > v).collect::<Vec<_>>()
            }
        })
        .and_then(|versions: Vec<String>| {
            let missing: Vec<&str> = versions
                .iter()
                .filter(|v| !discovered.iter().any(|r| &r.version == *v))
                .map(String::as_str)
                .collect();
            if missing.is_empty() {
                Ok(versions)
            } else {
                Err(RunnerError::MissingMigration {
                    versions: missing.join(", "),
                })
            }
        })
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

    /// Checks that a rollback target names a discovered or applied version (or `0000`).
    fn check_rollback_target(
        &self,
        to: &RollbackTo,
        discovered: &[Resolved],
        rows: &[HistoryRow],
    ) -> Result<()> {
        let RollbackTo::Target(t) = to else {
            return Ok(());
        };
        let v = t.normalized()?;
        let applied = rows.iter().filter(|r| r.status == Status::Applied);
        if v == "0000"
            || discovered.iter().any(|r| r.version == v)
            || applied.clone().any(|r| r.version == v)
        {
            return Ok(());
        }
        Err(RunnerError::UnknownTarget {
            target: v,
            what: "discovered or applied",
            known: known(
                discovered
                    .iter()
                    .map(|r| r.version.as_str())
                    .chain(applied.map(|r| r.version.as_str())),
            ),
        })
    }

    /// What `rollback(to)` would undo, highest version first, with each downgrade's changes.
    /// Writes nothing.
    pub async fn plan_rollback(&self, to: RollbackTo) -> Result<Vec<PlannedStep>> {
        let discovered = self.discover()?;
        self.check_rollback_args(&to)?;
        let rows = self.history.get_all(&self.namespace).await?;
        self.check_rollback_target(&to, &discovered, &rows)?;
        let versions = self.rollback_versions(&to, &discovered, &rows)?;
        let ctx = self.context();
        versions
            .iter()
            .filter_map(|v| discovered.iter().find(|r| &r.version == v))
            .map(|r| {
                let changes = r.migration.describe_downgrade(&ctx).map_err(|e| {
                    RunnerError::NotImplemented {
                        version: r.version.clone(),
                        reason: e.to_string(),
                    }
                })?;
                Ok(PlannedStep {
                    version: r.version.clone(),
                    description: r.migration.description().to_string(),
                    changes,
                })
            })
            .collect()
    }

    /// Rolls back applied migrations, highest version first; returns the versions rolled back.
    /// Every migration to undo must be discovered and have a downgrade, checked before any
    /// downgrade runs.
    pub async fn rollback(&self, to: RollbackTo) -> Result<Vec<String>> {
        let steps = self.plan_rollback(to).await?;
        let discovered = self.discover()?;
        let mut expected = states(&self.history.get_all(&self.namespace).await?);
        let ctx = self.context();
        let mut done = Vec::new();
        for step in steps {
            let Some(r) = discovered.iter().find(|r| r.version == step.version) else {
                return Err(RunnerError::MissingMigration {
                    versions: step.version,
                });
            };
            let m = &r.migration;
            tracing::info!(version = %r.version, description = m.description(), "downgrading");
            if let Err(e) = m.downgrade(&ctx).await {
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
            self.history
                .record_rolled_back(
                    &r.version,
                    &self.namespace,
                    m.description(),
                    m.checksum().as_deref(),
                )
                .await?;
            expected.insert(r.version.clone(), Status::RolledBack);
            done.push(r.version.clone());
            self.check_no_other_runner(&expected).await?;
        }
        Ok(done)
    }

    /// Marks every migration up to `target` (all when `None`) whose status is not `applied` as
    /// applied, without running anything; returns the versions stamped. Idempotent.
    pub async fn stamp(&self, target: Option<Target>) -> Result<Vec<String>> {
        let discovered = self.discover()?;
        let target = self.check_target(target.as_ref(), &discovered)?;
        let applied = self.history.get_applied_versions(&self.namespace).await?;
        let mut done = Vec::new();
        for r in pending(&discovered, &applied, target.as_deref()) {
            self.history
                .record_applied(
                    &r.version,
                    &self.namespace,
                    r.migration.description(),
                    r.migration.checksum().as_deref(),
                )
                .await?;
            done.push(r.version.clone());
        }
        Ok(done)
    }

    /// Each version's latest recorded row, ascending.
    pub async fn history(&self) -> Result<Vec<HistoryRow>> {
        self.history.get_all(&self.namespace).await
    }

    /// Applied versions whose migration changed since it was applied (checksums differ) or is
    /// no longer discovered. Writes nothing.
    pub async fn validate(&self) -> Result<Vec<ValidationIssue>> {
        let discovered = self.discover()?;
        let rows = self.history.get_all(&self.namespace).await?;
        let mut issues = Vec::new();
        for row in rows.iter().filter(|r| r.status == Status::Applied) {
            match discovered.iter().find(|r| r.version == row.version) {
                None => issues.push(ValidationIssue::Missing {
                    version: row.version.clone(),
                    description: row.description.clone(),
                }),
                Some(r) => {
                    if let (Some(recorded), Some(current)) = (&row.checksum, r.migration.checksum())
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
            }
        }
        Ok(issues)
    }
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

fn states(rows: &[HistoryRow]) -> BTreeMap<String, Status> {
    rows.iter().map(|r| (r.version.clone(), r.status)).collect()
}

fn pending<'a>(
    discovered: &'a [Resolved],
    applied: &'a std::collections::BTreeSet<String>,
    target: Option<&'a str>,
) -> impl Iterator<Item = &'a Resolved> + 'a {
    discovered
        .iter()
        .filter(move |r| !applied.contains(&r.version))
        .filter(move |r| target.is_none_or(|t| r.version.as_str() <= t))
}
