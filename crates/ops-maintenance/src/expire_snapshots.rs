//! Expire old snapshots, then delete the files only they referenced (Java's `ExpireSnapshots`
//! with `ReachableFileCleanup`).
//!
//! 1. Refuse an S3 Tables table (it expires its own snapshots), a table an unfinished migration
//!    writes to (unless forced), and a `gc.enabled=false` table unless the files are kept.
//! 2. Choose the snapshots with iceberg's own `Transaction::expire_snapshots` (Java's
//!    `RemoveSnapshots` selection: `--older-than` or `history.expire.max-snapshot-age-ms`, at
//!    least `--retain-last` or `history.expire.min-snapshots-to-keep` per branch, each ref's own
//!    retention, refs older than their `max-ref-age-ms` dropped, every ref head kept). Its updates
//!    are committed through [`ops_core::commit`], guarded by the table's uuid and by every ref still
//!    pointing where it did when planned: a concurrent commit makes the attempt a conflict, and
//!    the selection is made again on the new base, so the other writer's snapshot is never lost.
//! 3. Only once the commit has landed: read the manifest lists of the expired snapshots and of
//!    every snapshot the committed table retains, and delete the manifest lists, manifests and
//!    data/delete files that no retained snapshot references (files are deleted first, manifest
//!    lists last, so an interrupted cleanup leaves nothing a retained snapshot needs missing).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::TryStreamExt;
use iceberg::spec::{SnapshotRef, TableMetadata};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{
    Catalog, Namespace, NamespaceIdent, TableCommit, TableCreation, TableIdent, TableRequirement,
    TableUpdate,
};

use crate::BeforeCommitHook;
use crate::guards;
use crate::path_set::PathSet;
use ops_core::commit::{TableChange, commit_with_retry};
use ops_core::ops::markers;
use ops_core::{CatalogHandle, Error, Result};

/// What an expiry did (or, for a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpireMetrics {
    /// The snapshots removed from the metadata, ascending.
    pub expired_snapshots: Vec<i64>,
    /// Branches and tags dropped because they outlived their `max-ref-age-ms`.
    pub removed_refs: Vec<String>,
    /// Snapshots the table keeps.
    pub retained_snapshots: usize,
    /// Data and delete files deleted.
    pub deleted_data_files: Vec<String>,
    /// Those of [`Self::deleted_data_files`] outside the table's location and its data location
    /// (`write.data.path`): files registered where they lay (`add_files`), which only expired
    /// snapshots used. Java's expiry deletes them too; reports list them apart, since they are
    /// no files the table wrote.
    pub deleted_outside_location: Vec<String>,
    /// Manifests deleted.
    pub deleted_manifests: Vec<String>,
    /// Manifest lists deleted.
    pub deleted_manifest_lists: Vec<String>,
    /// Statistics files (Puffin table statistics and partition statistics) of expired
    /// snapshots that the table no longer lists, deleted.
    pub deleted_statistics_files: Vec<String>,
    /// Files that were due for deletion but could not be deleted (logged; an orphan cleanup
    /// removes them later).
    pub failed_deletes: Vec<String>,
    /// Nothing was committed or deleted.
    pub dry_run: bool,
    /// Files were kept on purpose (`keep_files`).
    pub kept_files: bool,
    /// The snapshots were expired but their files were not cleaned up, and why (the commit had
    /// landed when this happened: an orphan cleanup collects the files later).
    pub cleanup_skipped: Option<String>,
    /// The rule the snapshots were chosen by (refs with their own retention apart).
    pub rule: ExpiryRule,
    /// Snapshots named to expire (`snapshot_ids`) that were not, and why, ascending.
    pub not_expired: Vec<(i64, String)>,
}

/// The age and count an expiry chose by, and where each came from: users who pass neither
/// option get the table's `history.expire.*` defaults, and need to see which.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpiryRule {
    /// Snapshots older than this (ms since the epoch) expire.
    pub older_than_ms: i64,
    /// `--older-than`, or the property (with its default) the cutoff was computed from.
    pub older_than_from: String,
    /// At least this many snapshots of every branch are kept.
    pub retain_last: usize,
    /// `--retain-last`, or the property (with its default) the count came from.
    pub retain_last_from: String,
    /// Snapshots named to expire (Java's `expireSnapshotId`), ascending; with them and no
    /// `--older-than` there is no age cutoff.
    pub snapshot_ids: Vec<i64>,
}

impl ExpiryRule {
    /// The rule for `md` now: the builder's options, else the table's properties or their
    /// defaults (what iceberg's action would use).
    fn of(
        md: &TableMetadata,
        older_than_ms: Option<i64>,
        retain_last: Option<usize>,
        snapshot_ids: Option<&[i64]>,
    ) -> Result<Self> {
        use iceberg::spec::TableProperties as P;
        // Only these two: the other properties are iceberg's to parse (it reads `gc.enabled`
        // more strictly than Java, which is why planning drops that one).
        fn number<T: std::str::FromStr>(md: &TableMetadata, key: &str, default: T) -> Result<T> {
            match md.properties().get(key) {
                None => Ok(default),
                Some(v) => v.trim().parse().map_err(|_| {
                    Error::InvalidInput(format!(
                        "the table property {key}={v} is not a whole number; set it to one \
                         (e.g. ALTER TABLE ... SET TBLPROPERTIES) or remove it (`table \
                         expire-snapshots` also takes --older-than and --retain-last)"
                    ))
                }),
            }
        }
        let max_age: i64 = number(
            md,
            P::PROPERTY_MAX_SNAPSHOT_AGE_MS,
            P::PROPERTY_MAX_SNAPSHOT_AGE_MS_DEFAULT,
        )?;
        let min_keep: usize = number(
            md,
            P::PROPERTY_MIN_SNAPSHOTS_TO_KEEP,
            P::PROPERTY_MIN_SNAPSHOTS_TO_KEEP_DEFAULT,
        )?;
        let origin = |key: &str, default: &str| match md.properties().get(key) {
            Some(v) => format!("{key}={v}"),
            None => format!("{key} unset, default {default}"),
        };
        let (older_than_ms, older_than_from) = match (older_than_ms, snapshot_ids) {
            (Some(ts), _) => (ts, "--older-than".to_string()),
            // Named snapshots alone: nothing expires by age (iceberg's action would apply the
            // table's cutoff too, as Java's does).
            (None, Some(_)) => (
                i64::MIN,
                "no age cutoff: only the snapshots named".to_string(),
            ),
            (None, None) => (
                chrono::Utc::now()
                    .timestamp_millis()
                    .saturating_sub(max_age),
                format!(
                    "now minus {}",
                    origin(P::PROPERTY_MAX_SNAPSHOT_AGE_MS, "5 days")
                ),
            ),
        };
        let (retain_last, retain_last_from) = match retain_last {
            Some(n) => (n, "--retain-last".to_string()),
            None => (min_keep, origin(P::PROPERTY_MIN_SNAPSHOTS_TO_KEEP, "1")),
        };
        let mut snapshot_ids = snapshot_ids.map(<[i64]>::to_vec).unwrap_or_default();
        snapshot_ids.sort_unstable();
        snapshot_ids.dedup();
        Ok(Self {
            older_than_ms,
            older_than_from,
            retain_last,
            retain_last_from,
            snapshot_ids,
        })
    }
}

/// What an expiry would remove from `table` now, chosen as [`ExpireSnapshotsBuilder`] chooses
/// (iceberg's selection; no manifest is read): `older_than_ms` and `retain_last` where given,
/// else the table's `history.expire.*` or their defaults.
pub(crate) struct DueExpiry {
    pub expired: Vec<i64>,
    pub removed_refs: Vec<String>,
    pub rule: ExpiryRule,
}

/// See [`DueExpiry`].
pub(crate) async fn due(
    handle: &CatalogHandle,
    table: &Table,
    older_than_ms: Option<i64>,
    retain_last: Option<usize>,
) -> Result<DueExpiry> {
    let mut builder = ExpireSnapshotsBuilder::new(handle, table.identifier().clone());
    builder.older_than_ms = older_than_ms;
    builder.retain_last = retain_last;
    let planned = builder.plan(table).await?;
    Ok(DueExpiry {
        expired: planned.expired,
        removed_refs: planned.removed_refs,
        rule: planned.rule,
    })
}

/// Expires snapshots of one table (see the module docs).
#[must_use = "an ExpireSnapshotsBuilder does nothing until awaited"]
pub struct ExpireSnapshotsBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    older_than_ms: Option<i64>,
    retain_last: Option<usize>,
    snapshot_ids: Option<Vec<i64>>,
    keep_files: bool,
    dry_run: bool,
    force: bool,
    before_commit: Option<BeforeCommitHook>,
}

/// The selection made on one base.
#[derive(Clone)]
struct Planned {
    base: Table,
    expired: Vec<i64>,
    removed_refs: Vec<String>,
    rule: ExpiryRule,
}

impl ExpireSnapshotsBuilder {
    /// An expiry of `ident` with the table's `history.expire.*` defaults.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            older_than_ms: None,
            retain_last: None,
            snapshot_ids: None,
            keep_files: false,
            dry_run: false,
            force: false,
            before_commit: None,
        }
    }

    /// Expires snapshots older than this timestamp (ms since the epoch) instead of
    /// `now - history.expire.max-snapshot-age-ms`.
    pub fn older_than_ms(mut self, ts_ms: i64) -> Self {
        self.older_than_ms = Some(ts_ms);
        self
    }

    /// Keeps at least this many snapshots of every branch (at least 1) instead of
    /// `history.expire.min-snapshots-to-keep`.
    pub fn retain_last(mut self, n: usize) -> Self {
        self.retain_last = Some(n);
        self
    }

    /// Expires these snapshots (Java's `expireSnapshotId`; a migration's intermediate ones),
    /// even where they are ancestors of a branch. Without [`Self::older_than_ms`] no other
    /// snapshot expires by age. The head of a branch or tag is never expired (kept, not an
    /// error); ids the table does not have are ignored.
    pub fn snapshot_ids(mut self, ids: impl IntoIterator<Item = i64>) -> Self {
        self.snapshot_ids.get_or_insert_with(Vec::new).extend(ids);
        self
    }

    /// Removes the snapshots from the metadata but deletes no file (the only mode allowed on a
    /// `gc.enabled=false` table).
    pub fn keep_files(mut self, keep: bool) -> Self {
        self.keep_files = keep;
        self
    }

    /// Plans and reports, committing and deleting nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Proceeds even though an unfinished migration job marks the table.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Runs `hook` after each plan, before its commit (for tests that race a writer).
    #[doc(hidden)]
    pub fn before_commit(mut self, hook: BeforeCommitHook) -> Self {
        self.before_commit = Some(hook);
        self
    }

    async fn execute(self) -> Result<(Table, ExpireMetrics)> {
        guards::refuse_self_maintained(&self.handle, &self.ident, "snapshot expiry").await?;
        if self.retain_last == Some(0) {
            return Err(Error::InvalidInput(
                "--retain-last must be at least 1: every branch keeps its head".into(),
            ));
        }
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        self.check(table.metadata())?;
        if self.dry_run {
            let planned = self.plan(&table).await?;
            let retained: Vec<SnapshotRef> = table
                .metadata()
                .snapshots()
                .filter(|s| !planned.expired.contains(&s.snapshot_id()))
                .cloned()
                .collect();
            let mut metrics = ExpireMetrics {
                retained_snapshots: retained.len(),
                expired_snapshots: planned.expired.clone(),
                removed_refs: planned.removed_refs.clone(),
                dry_run: true,
                kept_files: self.keep_files,
                rule: planned.rule.clone(),
                not_expired: not_expired(table.metadata(), &planned.rule, &planned.expired),
                ..Default::default()
            };
            if !self.keep_files {
                let cleanup = unreferenced(&table, &planned.expired, &table, &retained).await?;
                cleanup.report(&mut metrics);
                metrics.deleted_outside_location = outside_location(
                    table.metadata().location(),
                    table.metadata().properties(),
                    &metrics.deleted_data_files,
                );
            }
            return Ok((table, metrics));
        }

        let last: Arc<Mutex<Option<Planned>>> = Arc::new(Mutex::new(None));
        let this = &self;
        let committed = commit_with_retry(&self.handle, &self.ident, |base| {
            let last = last.clone();
            async move {
                this.check(base.metadata())?;
                let planned = this.plan(&base).await?;
                let change = change_for(&planned);
                if change.is_some()
                    && let Some(hook) = &this.before_commit
                {
                    hook().await;
                }
                *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(planned);
                Ok(change)
            }
        })
        .await?;
        let planned = last.lock().unwrap_or_else(|p| p.into_inner()).take();
        let rule = match &planned {
            Some(p) => p.rule.clone(),
            None => ExpiryRule::of(
                committed.metadata(),
                self.older_than_ms,
                self.retain_last,
                self.snapshot_ids.as_deref(),
            )?,
        };
        let Some(planned) = planned.filter(|p| !p.expired.is_empty() || !p.removed_refs.is_empty())
        else {
            let retained_snapshots = committed.metadata().snapshots().count();
            let not_expired = not_expired(committed.metadata(), &rule, &[]);
            return Ok((
                committed,
                ExpireMetrics {
                    retained_snapshots,
                    kept_files: self.keep_files,
                    rule,
                    not_expired,
                    ..Default::default()
                },
            ));
        };
        let retained: Vec<SnapshotRef> = committed.metadata().snapshots().cloned().collect();
        let mut metrics = ExpireMetrics {
            retained_snapshots: retained.len(),
            expired_snapshots: planned.expired.clone(),
            removed_refs: planned.removed_refs.clone(),
            kept_files: self.keep_files,
            rule: planned.rule.clone(),
            not_expired: not_expired(planned.base.metadata(), &planned.rule, &planned.expired),
            ..Default::default()
        };
        tracing::info!(
            table = %self.ident,
            expired = planned.expired.len(),
            retained = retained.len(),
            "snapshots expired"
        );
        if self.keep_files {
            return Ok((committed, metrics));
        }
        // The commit landed, so from here nothing is an error: the snapshots are gone either
        // way, and an orphan cleanup collects whatever files stay.
        // A REST server applies the removal to its own latest metadata, which may have gained
        // gc.enabled=false or a running migration since the plan: check what was committed.
        if let Err(e) = self.check(committed.metadata()) {
            tracing::warn!(table = %self.ident, error = %e, "expired snapshots' files kept");
            metrics.cleanup_skipped = Some(e.to_string());
            return Ok((committed, metrics));
        }
        // What no retained snapshot references can go.
        match unreferenced(&planned.base, &planned.expired, &committed, &retained).await {
            Ok(cleanup) => {
                cleanup.delete(committed.file_io(), &mut metrics).await;
                let md = committed.metadata();
                metrics.deleted_outside_location =
                    outside_location(md.location(), md.properties(), &metrics.deleted_data_files);
            }
            Err(e) => {
                tracing::warn!(table = %self.ident, error = %e, "expired snapshots' files not cleaned up");
                metrics.cleanup_skipped = Some(format!(
                    "the files the expired snapshots referenced could not be determined: {e}"
                ));
            }
        }
        Ok((committed, metrics))
    }

    fn check(&self, md: &TableMetadata) -> Result<()> {
        guards::refuse_running_migration(&self.ident, md, Some(self.force), "expiring snapshots")?;
        if !self.keep_files && !markers::gc_enabled(md) {
            return Err(guards::gc_disabled_error(
                &self.ident,
                "snapshot expiry",
                true,
            ));
        }
        Ok(())
    }

    /// iceberg's selection on `base`.
    async fn plan(&self, base: &Table) -> Result<Planned> {
        // iceberg's action refuses a gc.enabled=false table outright (Java's RemoveSnapshots
        // does too); keeping the files was asked for, so plan on a copy without the property.
        let planning = if markers::gc_enabled(base.metadata()) {
            base.clone()
        } else {
            without_gc_property(base)?
        };
        // The rule is passed explicitly so the report names exactly the cutoff that was used
        // (iceberg computes the same defaults, and each ref's own retention still overrides).
        let rule = ExpiryRule::of(
            base.metadata(),
            self.older_than_ms,
            self.retain_last,
            self.snapshot_ids.as_deref(),
        )?;
        let tx = Transaction::new(&planning);
        let mut action = tx
            .expire_snapshots()
            .expire_older_than_ms(rule.older_than_ms)
            .retain_last(rule.retain_last.max(1));
        if let Some(ids) = &self.snapshot_ids {
            // iceberg refuses a named ref head outright; such a snapshot is simply kept.
            let md = base.metadata();
            let mut heads: std::collections::HashSet<i64> =
                ref_heads(md).into_iter().map(|(_, id)| id).collect();
            heads.extend(md.current_snapshot_id());
            action = action.expire_snapshot_ids(
                ids.iter()
                    .copied()
                    .filter(|id| !heads.contains(id) && md.snapshot_by_id(*id).is_some()),
            );
        }
        let tx = action.apply(tx)?;
        let capture = Capture::new(planning);
        tx.commit(&capture).await.map_err(|e| {
            Error::InvalidInput(format!("cannot expire snapshots of {}: {e}", self.ident))
        })?;
        let updates = capture.updates();
        let mut expired = Vec::new();
        let mut removed_refs = Vec::new();
        for u in updates {
            match u {
                TableUpdate::RemoveSnapshots { snapshot_ids } => expired.extend(snapshot_ids),
                TableUpdate::RemoveSnapshotRef { ref_name } => removed_refs.push(ref_name),
                _ => {}
            }
        }
        if let (Some(named), None) = (&self.snapshot_ids, self.older_than_ms) {
            // Named snapshots alone: iceberg's selection still applies each branch's own
            // max-snapshot-age-ms and drops refs past their max-ref-age-ms; none of that was
            // asked for.
            expired.retain(|id| named.contains(id));
            removed_refs.clear();
        }
        expired.sort_unstable();
        Ok(Planned {
            base: base.clone(),
            expired,
            removed_refs,
            rule,
        })
    }
}

/// The snapshots `rule` names that are not among `expired`, each with the reason, as `md` says.
fn not_expired(md: &TableMetadata, rule: &ExpiryRule, expired: &[i64]) -> Vec<(i64, String)> {
    let heads = ref_heads(md);
    rule.snapshot_ids
        .iter()
        .filter(|id| !expired.contains(id))
        .map(|&id| {
            let mut refs: Vec<&str> = heads
                .iter()
                .filter(|(_, head)| *head == id)
                .map(|(name, _)| name.as_str())
                .collect();
            refs.sort_unstable();
            let why = if md.snapshot_by_id(id).is_none() {
                "the table has no such snapshot".to_string()
            } else if !refs.is_empty() {
                format!("the head of {}", refs.join(", "))
            } else if md.current_snapshot_id() == Some(id) {
                "the table's current snapshot".to_string()
            } else {
                "a branch or tag still needs it (its retention keeps it)".to_string()
            };
            (id, why)
        })
        .collect()
}

/// The commit for `planned`, or `None` when nothing expires.
fn change_for(planned: &Planned) -> Option<TableChange> {
    if planned.expired.is_empty() && planned.removed_refs.is_empty() {
        return None;
    }
    let md = planned.base.metadata();
    let mut requirements = vec![TableRequirement::UuidMatch { uuid: md.uuid() }];
    // Every ref must still be where it was planned: a writer that moved one (or committed to
    // main) may have made an expiring snapshot an ancestor it needs; re-plan on its result.
    let refs = ref_heads(md);
    for (name, id) in &refs {
        requirements.push(TableRequirement::RefSnapshotIdMatch {
            r#ref: name.clone(),
            snapshot_id: Some(*id),
        });
    }
    if !refs.iter().any(|(n, _)| n == iceberg::spec::MAIN_BRANCH) {
        requirements.push(TableRequirement::RefSnapshotIdMatch {
            r#ref: iceberg::spec::MAIN_BRANCH.to_string(),
            snapshot_id: None,
        });
    }
    let mut updates: Vec<TableUpdate> = planned
        .removed_refs
        .iter()
        .map(|r| TableUpdate::RemoveSnapshotRef {
            ref_name: r.clone(),
        })
        .collect();
    if !planned.expired.is_empty() {
        updates.push(TableUpdate::RemoveSnapshots {
            snapshot_ids: planned.expired.clone(),
        });
    }
    for id in &planned.expired {
        if md.statistics_for_snapshot(*id).is_some() {
            updates.push(TableUpdate::RemoveStatistics { snapshot_id: *id });
        }
        if md.partition_statistics_for_snapshot(*id).is_some() {
            updates.push(TableUpdate::RemovePartitionStatistics { snapshot_id: *id });
        }
    }
    Some(TableChange {
        requirements,
        updates,
        ..Default::default()
    })
}

/// Every ref and its snapshot, by name. iceberg 0.10.1 keeps the refs map private; its
/// serialised form is public (one serialisation per plan, off the per-commit path).
pub(crate) fn ref_heads(md: &TableMetadata) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = serde_json::to_value(md)
        .ok()
        .and_then(|v| v.get("refs").cloned())
        .and_then(|r| {
            serde_json::from_value::<HashMap<String, iceberg::spec::SnapshotReference>>(r).ok()
        })
        .map(|refs| refs.into_iter().map(|(n, r)| (n, r.snapshot_id)).collect())
        .unwrap_or_default();
    // A v1 table's serialised form has no refs, yet its main branch is its current snapshot
    // (iceberg builds that ref when it reads v1 metadata): without it the commit would require
    // main to be absent and conflict every time.
    if !out.iter().any(|(n, _)| n == iceberg::spec::MAIN_BRANCH)
        && let Some(current) = md.snapshot_for_ref(iceberg::spec::MAIN_BRANCH)
    {
        out.push((
            iceberg::spec::MAIN_BRANCH.to_string(),
            current.snapshot_id(),
        ));
    }
    out.sort();
    out
}

fn without_gc_property(base: &Table) -> Result<Table> {
    let md = base
        .metadata()
        .clone()
        .into_builder(None)
        .remove_properties(&[markers::GC_ENABLED.to_string()])?
        .build()?
        .metadata;
    Ok(Table::builder()
        .identifier(base.identifier().clone())
        .metadata(md)
        .metadata_location(base.metadata_location_result()?.to_string())
        .file_io(base.file_io().clone())
        .runtime(iceberg::Runtime::try_current()?)
        .build()?)
}

/// Files referenced only by expired snapshots.
/// The `files` outside the table `location` and its data location (`properties`'
/// `write.data.path`, ...), compared as orphan cleanup compares paths (`file:/x`, `file:///x`
/// and `/x` one place; `s3a://` the same as `s3://`).
fn outside_location(
    location: &str,
    properties: &HashMap<String, String>,
    files: &[String],
) -> Vec<String> {
    use crate::remove_orphans::location::Location;
    let data = ops_core::location::DataLocations::new(location, properties)
        .ok()
        .map(|d| d.data_location().to_string());
    let roots: Vec<Location> = std::iter::once(location.to_string())
        .chain(data)
        .filter_map(|l| Location::parse(&l).ok())
        .collect();
    files
        .iter()
        .filter(|f| {
            let Ok(file) = Location::parse(f) else {
                return true;
            };
            !roots.iter().any(|root| {
                let prefix = format!("{}/", root.path.trim_end_matches('/'));
                root.same_file_system(&file) && file.path.starts_with(&prefix)
            })
        })
        .cloned()
        .collect()
}

#[derive(Debug, Default)]
struct Cleanup {
    data_files: BTreeSet<String>,
    manifests: BTreeSet<String>,
    manifest_lists: BTreeSet<String>,
    statistics: BTreeSet<String>,
}

impl Cleanup {
    fn report(self, m: &mut ExpireMetrics) {
        m.deleted_data_files = self.data_files.into_iter().collect();
        m.deleted_manifests = self.manifests.into_iter().collect();
        m.deleted_manifest_lists = self.manifest_lists.into_iter().collect();
        m.deleted_statistics_files = self.statistics.into_iter().collect();
    }

    /// Deletes data/delete files, then manifests, then manifest lists.
    async fn delete(self, io: &iceberg::io::FileIO, m: &mut ExpireMetrics) {
        use crate::guards::delete_files;
        const WHAT: &str = "an expired file";
        // In this order, so a failure part-way never leaves a manifest naming a deleted file
        // while the manifest list naming that manifest is gone.
        let (data_files, mut failed) = delete_files(io, self.data_files, WHAT).await;
        let (manifests, f) = delete_files(io, self.manifests, WHAT).await;
        failed.extend(f);
        let (manifest_lists, f) = delete_files(io, self.manifest_lists, WHAT).await;
        failed.extend(f);
        let (statistics, f) = delete_files(io, self.statistics, WHAT).await;
        failed.extend(f);
        m.deleted_statistics_files = statistics;
        failed.sort();
        m.deleted_data_files = data_files;
        m.deleted_manifests = manifests;
        m.deleted_manifest_lists = manifest_lists;
        m.failed_deletes = failed;
    }
}

/// What the `expired` snapshots of `base` reference and none of `retained` (snapshots of
/// `current`) does: Java's `ReachableFileCleanup`.
async fn unreferenced(
    base: &Table,
    expired: &[i64],
    current: &Table,
    retained: &[SnapshotRef],
) -> Result<Cleanup> {
    let expired_snapshots: Vec<SnapshotRef> = expired
        .iter()
        .filter_map(|id| base.metadata().snapshot_by_id(*id).cloned())
        .collect();
    let retained_lists: HashSet<&str> = retained.iter().map(|s| s.manifest_list()).collect();
    let mut cleanup = Cleanup {
        statistics: expired_statistics(base.metadata(), expired, current.metadata()),
        ..Default::default()
    };
    // Manifests (path -> one ManifestFile to read) of the expired snapshots.
    let mut expired_manifests: HashMap<String, iceberg::spec::ManifestFile> = HashMap::new();
    for s in &expired_snapshots {
        if s.manifest_list().is_empty() || retained_lists.contains(s.manifest_list()) {
            continue;
        }
        cleanup.manifest_lists.insert(s.manifest_list().to_string());
        for mf in base.manifest_list_reader(s).load().await?.entries() {
            expired_manifests
                .entry(mf.manifest_path.clone())
                .or_insert_with(|| mf.clone());
        }
    }
    let mut retained_manifests: HashMap<String, iceberg::spec::ManifestFile> = HashMap::new();
    for s in retained {
        if s.manifest_list().is_empty() {
            continue;
        }
        for mf in current.manifest_list_reader(s).load().await?.entries() {
            retained_manifests
                .entry(mf.manifest_path.clone())
                .or_insert_with(|| mf.clone());
        }
    }
    let to_delete: Vec<iceberg::spec::ManifestFile> = expired_manifests
        .into_iter()
        .filter(|(p, _)| !retained_manifests.contains_key(p))
        .map(|(_, mf)| mf)
        .collect();
    if to_delete.is_empty() {
        return Ok(cleanup);
    }
    cleanup.manifests = to_delete.iter().map(|m| m.manifest_path.clone()).collect();
    // A live file of any retained manifest is kept (held as path hashes, 8 bytes a file:
    // the retained manifests of a big table list every one of its files); the live files of
    // the manifests going away that are not kept are deleted.
    let mut kept = PathSet::default();
    let mut retained_paths = std::pin::pin!(live_paths(
        current.file_io(),
        retained_manifests.into_values().collect(),
    ));
    while let Some(path) = retained_paths.try_next().await? {
        kept.insert(&path);
    }
    let kept = kept.seal();
    let mut candidates = std::pin::pin!(live_paths(base.file_io(), to_delete));
    while let Some(path) = candidates.try_next().await? {
        if !kept.contains(&path) {
            cleanup.data_files.insert(path);
        }
    }
    Ok(cleanup)
}

/// Statistics files (table and partition statistics) of the `expired` snapshots of `base` that
/// no snapshot `current` keeps lists: Java's `FileCleanupStrategy.expiredStatisticsFiles`. (A
/// dry run passes `base` as `current`, whose entries for expired snapshots are not kept.)
fn expired_statistics(
    base: &TableMetadata,
    expired: &[i64],
    current: &TableMetadata,
) -> BTreeSet<String> {
    let expired: HashSet<i64> = expired.iter().copied().collect();
    let stats = |md: &TableMetadata| -> Vec<(i64, String)> {
        md.statistics_iter()
            .map(|s| (s.snapshot_id, s.statistics_path.clone()))
            .chain(
                md.partition_statistics_iter()
                    .map(|s| (s.snapshot_id, s.statistics_path.clone())),
            )
            .collect()
    };
    let kept: HashSet<String> = stats(current)
        .into_iter()
        .filter(|(id, _)| !expired.contains(id))
        .map(|(_, p)| p)
        .collect();
    stats(base)
        .into_iter()
        .filter(|(id, p)| expired.contains(id) && !kept.contains(p))
        .map(|(_, p)| p)
        .collect()
}

/// The paths of the live (added or existing) entries of `manifests`, streamed as the
/// manifests are read (a few at a time, entry by entry).
fn live_paths(
    io: &iceberg::io::FileIO,
    manifests: Vec<iceberg::spec::ManifestFile>,
) -> impl futures::Stream<Item = Result<String>> + Send + use<> {
    ops_core::manifests::entries_of_all(io, manifests).try_filter_map(|e| async move {
        Ok(e.is_alive().then(|| e.data_file().file_path().to_string()))
    })
}

impl IntoFuture for ExpireSnapshotsBuilder {
    type Output = Result<(Table, ExpireMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// A catalog that serves one table and records the commit iceberg's transaction makes, so the
/// official action's selection can be committed through [`ops_core::commit`] (iceberg keeps the
/// action's own `commit` crate-private).
#[derive(Debug)]
struct Capture {
    table: Table,
    commit: Mutex<Option<TableCommit>>,
}

impl Capture {
    fn new(table: Table) -> Self {
        Self {
            table,
            commit: Mutex::new(None),
        }
    }

    fn updates(&self) -> Vec<TableUpdate> {
        self.commit
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .map(|c| c.take_updates())
            .unwrap_or_default()
    }

    fn unsupported<T>() -> iceberg::Result<T> {
        Err(iceberg::Error::new(
            iceberg::ErrorKind::FeatureUnsupported,
            "planning-only catalog",
        ))
    }
}

#[async_trait]
impl Catalog for Capture {
    async fn list_namespaces(
        &self,
        _parent: Option<&NamespaceIdent>,
    ) -> iceberg::Result<Vec<NamespaceIdent>> {
        Self::unsupported()
    }
    async fn create_namespace(
        &self,
        _namespace: &NamespaceIdent,
        _properties: HashMap<String, String>,
    ) -> iceberg::Result<Namespace> {
        Self::unsupported()
    }
    async fn get_namespace(&self, _namespace: &NamespaceIdent) -> iceberg::Result<Namespace> {
        Self::unsupported()
    }
    async fn namespace_exists(&self, _namespace: &NamespaceIdent) -> iceberg::Result<bool> {
        Self::unsupported()
    }
    async fn update_namespace(
        &self,
        _namespace: &NamespaceIdent,
        _properties: HashMap<String, String>,
    ) -> iceberg::Result<()> {
        Self::unsupported()
    }
    async fn drop_namespace(&self, _namespace: &NamespaceIdent) -> iceberg::Result<()> {
        Self::unsupported()
    }
    async fn list_tables(&self, _namespace: &NamespaceIdent) -> iceberg::Result<Vec<TableIdent>> {
        Self::unsupported()
    }
    async fn create_table(
        &self,
        _namespace: &NamespaceIdent,
        _creation: TableCreation,
    ) -> iceberg::Result<Table> {
        Self::unsupported()
    }
    async fn load_table(&self, _table: &TableIdent) -> iceberg::Result<Table> {
        Ok(self.table.clone())
    }
    async fn drop_table(&self, _table: &TableIdent) -> iceberg::Result<()> {
        Self::unsupported()
    }
    async fn purge_table(&self, _table: &TableIdent) -> iceberg::Result<()> {
        Self::unsupported()
    }
    async fn table_exists(&self, _table: &TableIdent) -> iceberg::Result<bool> {
        Ok(true)
    }
    async fn rename_table(&self, _src: &TableIdent, _dest: &TableIdent) -> iceberg::Result<()> {
        Self::unsupported()
    }
    async fn register_table(
        &self,
        _table: &TableIdent,
        _metadata_location: String,
    ) -> iceberg::Result<Table> {
        Self::unsupported()
    }
    async fn update_table(&self, commit: TableCommit) -> iceberg::Result<Table> {
        *self.commit.lock().unwrap_or_else(|p| p.into_inner()) = Some(commit);
        Ok(self.table.clone())
    }
}

#[cfg(test)]
mod outside_tests {
    use super::*;

    /// Data files outside the table location are said apart, compared as orphan cleanup
    /// compares paths; the table's own data location (`write.data.path`) is inside, and so is
    /// another spelling of the location (`file:/`, a plain path, `s3a://`).
    #[test]
    fn files_outside_the_table_and_its_data_location_are_named() {
        let files = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none = HashMap::new();
        assert_eq!(
            outside_location(
                "file:///wh/t/",
                &none,
                &files(&[
                    "file:///wh/t/data/a.parquet",
                    "file:/wh/t/data/b.parquet",
                    "/wh/t/data/c.parquet",
                    "file:///ext/orders/d.parquet",
                    "file:///wh/t2/data/e.parquet",
                ])
            ),
            files(&[
                "file:///ext/orders/d.parquet",
                "file:///wh/t2/data/e.parquet"
            ])
        );
        let moved = HashMap::from([(
            ops_core::location::WRITE_DATA_PATH.to_string(),
            "s3://b/data".to_string(),
        )]);
        assert_eq!(
            outside_location(
                "s3://b/t",
                &moved,
                &files(&[
                    "s3://b/data/x.parquet",
                    "s3a://b/t/data/y.parquet",
                    "s3://other/t/data/z.parquet",
                ])
            ),
            files(&["s3://other/t/data/z.parquet"])
        );
    }
}
