//! Delete files under a table's location that no metadata references (Java's
//! `DeleteOrphanFiles`).
//!
//! 1. Refuse an S3 Tables table, a `gc.enabled=false` table (its location may hold another
//!    table's files), a table an unfinished migration writes to (its uncommitted outputs wait
//!    there) unless forced, a threshold under 24 hours unless forced (Spark's
//!    `remove_orphan_files` floor: a file a running writer has not committed yet must not be
//!    taken for an orphan, and a sorted compaction or a migration writes for hours before its
//!    commit), and a table whose current metadata file or location the catalog did not say
//!    (that file would be taken for an orphan; there would be nothing to list).
//! 2. Collect everything reachable from the current metadata (the table as loaded) and from
//!    every metadata file still in its log: those metadata files, manifest lists, manifests,
//!    data and delete files (any entry status), statistics files, and `version-hint.text`.
//! 3. List the table location (a local directory, or an S3 prefix through OpenDAL with the
//!    table's FileIO properties) and delete each file that is not reachable and was last
//!    modified before the threshold. Hidden paths (Java's `PartitionAwareHiddenPathFilter`) and
//!    a nested table's directory are not listed. A reachable path whose scheme or authority
//!    differs from the listed one is an error, as Java's `prefix-mismatch-mode=ERROR`: the same
//!    file named two ways must not be deleted as an orphan. `s3a://` and `s3n://` are `s3://`
//!    there, as Java's default `equal_schemes`. Nothing outside the table location is ever
//!    listed (`<location>/`, so not a sibling `<location>_x`), so nothing outside it is deleted.

mod listing;
pub(crate) mod location;
mod reachable;

use std::collections::HashSet;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use iceberg::TableIdent;
use iceberg::table::Table;

use crate::guards;
use location::Location;
use ops_core::ops::markers;
use ops_core::{CatalogHandle, Error, Result};
use reachable::{Reached, reachable_files};

/// Java's default `olderThan`: three days.
pub const DEFAULT_OLDER_THAN: Duration = Duration::from_secs(3 * 24 * 3600);

/// The shortest threshold accepted without `force`: 24 hours, as Spark's `remove_orphan_files`
/// procedure requires ("Cannot remove orphan files with an interval less than 24 hours").
pub const MIN_OLDER_THAN: Duration = Duration::from_secs(24 * 3600);

/// What an orphan cleanup found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanMetrics {
    /// Files listed under the table location.
    pub listed: usize,
    /// Of those, reachable from the metadata.
    pub reachable: usize,
    /// Unreachable files old enough to delete: deleted, or for a dry run, to be deleted.
    pub orphans: Vec<String>,
    /// Unreachable files younger than the threshold, kept.
    pub too_young: Vec<String>,
    /// Orphans that could not be deleted.
    pub failed_deletes: Vec<String>,
    /// Directories under the table location that hold another table (a `metadata/` directory
    /// with a `*.metadata.json`), not listed: their files belong to that table.
    pub other_tables: Vec<String>,
    /// Hidden entries left alone, as Java's hidden-path filter leaves them: a path segment
    /// below the location starting with `_` (not a `_col=value` partition folder of the
    /// table) or `.` — a folder counts once, an object key once each. Never judged, so an
    /// orphan among them is never deleted, nor counted in `listed`.
    pub hidden: usize,
    /// The first few of them.
    pub hidden_examples: Vec<String>,
    /// Nothing was deleted.
    pub dry_run: bool,
}

/// Removes orphan files of one table (see the module docs).
#[must_use = "a RemoveOrphansBuilder does nothing until awaited"]
pub struct RemoveOrphansBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    older_than: Duration,
    dry_run: bool,
    force: bool,
}

impl RemoveOrphansBuilder {
    /// An orphan cleanup of `ident` with the default threshold (3 days).
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            older_than: DEFAULT_OLDER_THAN,
            dry_run: false,
            force: false,
        }
    }

    /// Deletes only orphans last modified longer ago than this.
    pub fn older_than(mut self, age: Duration) -> Self {
        self.older_than = age;
        self
    }

    /// Lists what would be deleted, deleting nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Accepts a threshold under 24 hours. Never a table an unfinished migration marks: its
    /// task outputs wait there as unreferenced files, and a cleanup run for the threshold must
    /// not delete them as a side effect (remove an abandoned job's marker with
    /// [`ops_core::ops::markers::clear_running_marker`] first).
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    async fn execute(self) -> Result<OrphanMetrics> {
        guards::refuse_self_maintained(&self.handle, &self.ident, "orphan file removal").await?;
        // A dry run deletes nothing: it may look at younger files without `force`.
        if self.older_than < MIN_OLDER_THAN && !self.force && !self.dry_run {
            return Err(Error::InvalidInput(format!(
                "--older-than {}s is under 24 hours: a file a running writer has not committed \
                 yet would be deleted as an orphan (a sorted compaction or a migration writes \
                 for hours before its commit). Pass --force if nothing writes to {}, or look \
                 first with a dry run",
                self.older_than.as_secs(),
                self.ident
            )));
        }
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        let md = table.metadata();
        refuse_unknown_location(&table, &self.ident)?;
        guards::refuse_running_migration(&self.ident, md, None, "removing orphans")?;
        if !markers::gc_enabled(md) {
            return Err(guards::gc_disabled_error(
                &self.ident,
                "orphan cleanup",
                false,
            ));
        }
        let location = Location::parse(md.location())?;
        let cutoff = SystemTime::now()
            .checked_sub(self.older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);

        let reachable = reachable_files(&table, &location).await?;

        let underscored: HashSet<String> = md
            .partition_specs_iter()
            .flat_map(|spec| spec.fields().iter().map(|f| f.name.clone()))
            .filter(|n| n.starts_with('_'))
            .collect();
        let mut metrics = OrphanMetrics {
            dry_run: self.dry_run,
            ..Default::default()
        };
        let mut mismatches = Vec::new();
        // Each listed file is judged as it is listed: neither the listing nor the referenced
        // paths are held as strings (only the orphans found).
        let left_out = listing::list(
            &location,
            table.file_io().config().props(),
            underscored,
            |file| {
                metrics.listed += 1;
                match reachable.reached(&file.path) {
                    Reached::Yes => {
                        metrics.reachable += 1;
                        return Ok(());
                    }
                    Reached::Elsewhere(original) => {
                        mismatches.push(format!("{} (referenced as {original})", file.url));
                        return Ok(());
                    }
                    Reached::No => {}
                }
                if file.path.ends_with("/version-hint.text") {
                    metrics.reachable += 1;
                } else if file.modified >= cutoff {
                    metrics.too_young.push(file.url);
                } else {
                    metrics.orphans.push(file.url);
                }
                Ok(())
            },
        )
        .await?;
        metrics.other_tables = left_out.other_tables;
        metrics.hidden = left_out.hidden;
        metrics.hidden_examples = left_out.hidden_examples;
        for dir in &metrics.other_tables {
            tracing::warn!(
                table = %self.ident,
                dir = %dir,
                "skipping a directory under the table location that holds another table's metadata"
            );
        }
        if !mismatches.is_empty() {
            mismatches.sort();
            return Err(Error::InvalidInput(format!(
                "{}: {} file(s) under {} are referenced with a different scheme or authority \
                 (prefix mismatch; Java's prefix-mismatch-mode=ERROR), so no file was deleted: {}",
                self.ident,
                mismatches.len(),
                md.location(),
                mismatches.join(", ")
            )));
        }
        metrics.orphans.sort();
        metrics.too_young.sort();
        refuse_shared_location(&table, &self.ident, &metrics).await?;
        if self.dry_run {
            return Ok(metrics);
        }
        (_, metrics.failed_deletes) =
            crate::guards::delete_files(table.file_io(), metrics.orphans.clone(), "an orphan")
                .await;
        tracing::info!(
            table = %self.ident,
            orphans = metrics.orphans.len(),
            failed = metrics.failed_deletes.len(),
            "orphan files removed"
        );
        Ok(metrics)
    }
}

impl IntoFuture for RemoveOrphansBuilder {
    type Output = Result<OrphanMetrics>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// Refuses a table whose current metadata file the catalog did not name (some REST servers
/// answer a load without `metadata-location`): that file, the newest under `metadata/`, would
/// be taken for an orphan and deleted, and the table could not be loaded again. Also a table
/// whose metadata has no location: there is nothing to list.
fn refuse_unknown_location(table: &Table, ident: &TableIdent) -> Result<()> {
    if table.metadata().location().trim().is_empty() {
        return Err(Error::InvalidInput(format!(
            "{ident}: the table's metadata has no location, so there is no directory to look \
             for orphans in; no file was deleted"
        )));
    }
    if table.metadata_location().is_none() {
        return Err(Error::InvalidInput(format!(
            "{ident}: the catalog did not say where the table's current metadata file is (its \
             answer had no metadata-location), so that file cannot be told from an orphan and \
             would be deleted; no file was deleted. Run orphan cleanup through a catalog that \
             returns the metadata location"
        )));
    }
    Ok(())
}

/// Refuses when an unreferenced `*.metadata.json` under the location belongs to another table
/// (another `table-uuid`): two tables were created at one location, and every file of the other
/// would look like an orphan of this one. An unreferenced metadata file of this table (pruned
/// from the log by `write.metadata.previous-versions-max`) is an ordinary orphan.
async fn refuse_shared_location(
    table: &Table,
    ident: &TableIdent,
    metrics: &OrphanMetrics,
) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Uuid {
        #[serde(rename = "table-uuid")]
        uuid: String,
    }
    let own = table.metadata().uuid().to_string();
    let candidates = metrics
        .orphans
        .iter()
        .chain(&metrics.too_young)
        .filter(|f| f.ends_with(".metadata.json"));
    for file in candidates {
        let read = async {
            let bytes = table.file_io().new_input(file)?.read().await?;
            Ok::<_, iceberg::Error>(bytes)
        };
        let uuid = match read.await {
            Ok(bytes) => serde_json::from_slice::<Uuid>(&bytes).map(|u| u.uuid).ok(),
            Err(e) => {
                tracing::warn!(file = %file, error = %e, "cannot read an unreferenced metadata file");
                None
            }
        };
        // Unreadable or compressed: nothing says it is another table's; it is listed as usual.
        if let Some(uuid) = uuid.filter(|u| !u.eq_ignore_ascii_case(&own)) {
            return Err(Error::InvalidInput(format!(
                "{ident}: {file} is the metadata of another table (table-uuid {uuid}; this one is \
                 {own}): two tables share the location {}, and the other's files would be deleted \
                 as orphans of this one. No file was deleted. If that table is still in use, give \
                 one of them its own location. If it is gone — dropped without purge, or purged \
                 while a commit that was killed or failed had left a metadata file no log lists \
                 (a purge deletes only what the metadata names), then created again under the \
                 same name — delete that table's leftover files yourself (its metadata files \
                 name table-uuid {uuid}) and run this again",
                table.metadata().location()
            )));
        }
    }
    Ok(())
}
