//! Delete files under a table's location that no metadata references (Java's
//! `DeleteOrphanFiles`).
//!
//! 1. Refuse an S3 Tables table, a `gc.enabled=false` table (its location may hold another
//!    table's files), a table an unfinished migration writes to (its uncommitted outputs wait
//!    there) unless forced, and a threshold under an hour unless forced (a file a running writer
//!    has not committed yet must not be taken for an orphan).
//! 2. Collect everything reachable from the current metadata and from every metadata file still
//!    in its log: those metadata files, manifest lists, manifests, data and delete files (any
//!    entry status), statistics files, and `version-hint.text`.
//! 3. List the table location and delete each file that is not reachable and was last modified
//!    before the threshold. A reachable path whose scheme or authority differs from the listed
//!    one (`s3://` vs `s3a://`) is an error, as Java's `prefix-mismatch-mode=ERROR`: the same
//!    file named two ways must not be deleted as an orphan. Nothing outside the table location
//!    is ever listed, so nothing outside it is deleted.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use futures::{StreamExt, TryStreamExt};
use iceberg::TableIdent;
use iceberg::spec::TableMetadata;
use iceberg::table::Table;

use super::maintenance;
use crate::{CatalogHandle, Error, Result};

/// Java's default `olderThan`: three days.
pub const DEFAULT_OLDER_THAN: Duration = Duration::from_secs(3 * 24 * 3600);

/// The shortest threshold accepted without `force`.
pub const MIN_OLDER_THAN: Duration = Duration::from_secs(3600);

const READ_CONCURRENCY: usize = 8;

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

    /// Accepts a threshold under an hour. Never a table an unfinished migration marks: its
    /// task outputs wait there as unreferenced files, and a cleanup run for the threshold must
    /// not delete them as a side effect (remove an abandoned job's marker with
    /// [`super::maintenance::clear_running_marker`] first).
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    async fn execute(self) -> Result<OrphanMetrics> {
        maintenance::refuse_self_maintained(&self.handle, &self.ident, "orphan file removal")
            .await?;
        if self.older_than < MIN_OLDER_THAN && !self.force {
            return Err(Error::InvalidInput(format!(
                "--older-than {}s is under an hour: a file a running writer has not committed \
                 yet would be deleted as an orphan. Pass --force if nothing writes to {}",
                self.older_than.as_secs(),
                self.ident
            )));
        }
        let table = crate::commit::load_current(&self.handle, &self.ident).await?;
        let md = table.metadata();
        maintenance::refuse_running_migration(&self.ident, md, None, "removing orphans")?;
        if !maintenance::gc_enabled(md) {
            return Err(maintenance::gc_disabled_error(
                &self.ident,
                "orphan cleanup",
                false,
            ));
        }
        let location = Location::parse(md.location())?;
        let root = location.local_dir().ok_or_else(|| {
            Error::InvalidInput(format!(
                "{}: listing {} is not supported yet (only local file system locations); \
                 no file was deleted",
                self.ident,
                md.location()
            ))
        })?;
        let cutoff = SystemTime::now()
            .checked_sub(self.older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);

        let reachable = reachable_files(&table).await?;
        // Reachable paths keyed by their path part, to find the same file named two ways.
        let mut by_path: HashMap<String, Vec<&Location>> = HashMap::new();
        for loc in &reachable {
            by_path.entry(loc.path.clone()).or_default().push(loc);
        }

        // Java's PartitionAwareHiddenPathFilter: a partition field named `_x` makes `_x=…`
        // directories ordinary ones.
        let underscored: HashSet<String> = md
            .partition_specs_iter()
            .flat_map(|spec| spec.fields().iter().map(|f| f.name.clone()))
            .filter(|n| n.starts_with('_'))
            .collect();
        let (listed, other_tables) = list_files(&root, underscored).await?;
        for dir in &other_tables {
            tracing::warn!(
                table = %self.ident,
                dir = %dir.display(),
                "skipping a directory under the table location that holds another table's metadata"
            );
        }
        let mut metrics = OrphanMetrics {
            listed: listed.len(),
            dry_run: self.dry_run,
            other_tables: other_tables
                .iter()
                .map(|d| location.url_for(&d.to_string_lossy()))
                .collect(),
            ..Default::default()
        };
        let mut mismatches = Vec::new();
        for (file, modified) in listed {
            let path = file.to_string_lossy().to_string();
            let found = by_path.get(&path);
            match found {
                Some(locs)
                    if locs.iter().any(|l| {
                        l.scheme == location.scheme && l.authority == location.authority
                    }) =>
                {
                    metrics.reachable += 1;
                    continue;
                }
                Some(locs) => {
                    mismatches.push(format!("{path} (referenced as {})", locs[0].original));
                    continue;
                }
                None => {}
            }
            if file.file_name().is_some_and(|n| n == "version-hint.text") {
                metrics.reachable += 1;
                continue;
            }
            let url = location.url_for(&path);
            if modified >= cutoff {
                metrics.too_young.push(url);
            } else {
                metrics.orphans.push(url);
            }
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
            super::maintenance::delete_files(table.file_io(), metrics.orphans.clone(), "an orphan")
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

/// A location split into scheme, authority and path, so `file:/x`, `file:///x` and `/x` compare
/// equal and `s3://b/x` and `s3a://b/x` do not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Location {
    scheme: String,
    authority: String,
    path: String,
    original: String,
}

impl Location {
    fn parse(s: &str) -> Result<Self> {
        let original = s.to_string();
        let (scheme, rest) = match s.split_once(':') {
            Some((scheme, rest))
                if !scheme.is_empty()
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (scheme.to_ascii_lowercase(), rest)
            }
            _ => ("file".to_string(), s),
        };
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => match after.find('/') {
                Some(i) => (after[..i].to_string(), after[i..].to_string()),
                None => (after.to_string(), "/".to_string()),
            },
            None => (String::new(), rest.to_string()),
        };
        let mut path = path;
        while path.contains("//") {
            path = path.replace("//", "/");
        }
        let path = path.trim_end_matches('/').to_string();
        // A local path with `.` or `..` segments names the same file as its resolved form, and
        // the listing yields resolved paths: unresolved, a referenced file would look orphaned.
        // (An object store key is literal: `a/../b` is a key of its own there.)
        let path = if scheme == "file" {
            resolve_dots(&path)
        } else {
            path
        };
        if scheme == "file" && !authority.is_empty() && authority != "localhost" {
            return Err(Error::InvalidInput(format!(
                "'{s}' names a file on host '{authority}', which iceberg-ops cannot list"
            )));
        }
        let authority = if scheme == "file" {
            String::new()
        } else {
            authority
        };
        Ok(Self {
            scheme,
            authority,
            path,
            original,
        })
    }

    fn local_dir(&self) -> Option<PathBuf> {
        (self.scheme == "file").then(|| PathBuf::from(&self.path))
    }

    /// The path `listed` (under this location) as the table's own paths spell it.
    fn url_for(&self, listed: &str) -> String {
        if self.original.starts_with("file://") {
            format!("file://{listed}")
        } else if self.original.starts_with("file:") {
            format!("file:{listed}")
        } else {
            listed.to_string()
        }
    }
}

/// `path` with its `.` and `..` segments resolved lexically (a `..` at the root stays at the
/// root, as the file system has it).
fn resolve_dots(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !absolute {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Every file the table's metadata log and current metadata reach.
async fn reachable_files(table: &Table) -> Result<HashSet<Location>> {
    let md = table.metadata();
    let mut out: HashSet<String> = HashSet::new();
    let mut versions: Vec<(String, Option<TableMetadata>)> = Vec::new();
    if let Some(current) = table.metadata_location() {
        out.insert(current.to_string());
        versions.push((current.to_string(), Some(md.clone())));
    }
    for log in md.metadata_log() {
        out.insert(log.metadata_file.clone());
        match TableMetadata::read_from(table.file_io(), &log.metadata_file).await {
            Ok(old) => versions.push((log.metadata_file.clone(), Some(old))),
            // A log entry whose file is gone references nothing that still exists.
            Err(e) if !table.file_io().exists(&log.metadata_file).await? => {
                tracing::debug!(file = %log.metadata_file, error = %e, "a metadata file in the log is gone");
            }
            // One that exists but cannot be read may reference files nothing else does:
            // taking them for orphans would delete live data.
            Err(e) => {
                return Err(Error::InvalidInput(format!(
                    "metadata file {} in the table's metadata log exists but cannot be read                      ({e}); the files it references cannot be told from orphans, so no file                      was deleted. Fix or remove that file, then run again",
                    log.metadata_file
                )));
            }
        }
    }
    let mut lists_seen: HashSet<String> = HashSet::new();
    // Manifests by path, and whether the current metadata reaches them. Older metadata files
    // still name snapshots that expiry removed, and their manifest lists and manifests may be
    // gone: missing there is fine, missing from the current metadata is a broken table.
    let mut manifests: HashMap<String, (iceberg::spec::ManifestFile, bool)> = HashMap::new();
    for (index, (location, version)) in versions.into_iter().enumerate() {
        let Some(version) = version else { continue };
        let current = index == 0;
        for s in version.statistics_iter() {
            out.insert(s.statistics_path.clone());
        }
        for s in version.partition_statistics_iter() {
            out.insert(s.statistics_path.clone());
        }
        let snapshots: Vec<_> = version
            .snapshots()
            .filter(|s| !s.manifest_list().is_empty())
            .filter(|s| lists_seen.insert(s.manifest_list().to_string()))
            .cloned()
            .collect();
        if snapshots.is_empty() {
            continue;
        }
        let reader = Table::builder()
            .identifier(table.identifier().clone())
            .metadata(version)
            .metadata_location(location)
            .file_io(table.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?;
        for s in snapshots {
            out.insert(s.manifest_list().to_string());
            let list = match reader.manifest_list_reader(&s).load().await {
                Ok(list) => list,
                Err(e) if !current && !table.file_io().exists(s.manifest_list()).await? => {
                    tracing::debug!(list = %s.manifest_list(), error = %e, "an expired snapshot's manifest list is gone");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            for mf in list.entries() {
                let entry = manifests
                    .entry(mf.manifest_path.clone())
                    .or_insert_with(|| (mf.clone(), current));
                entry.1 |= current;
            }
        }
    }
    out.extend(manifests.keys().cloned());
    let io = table.file_io().clone();
    let files: Vec<Vec<String>> = futures::stream::iter(manifests.into_values())
        .map(|(mf, current)| {
            let io = io.clone();
            async move {
                let manifest = match mf.load_manifest(&io).await {
                    Ok(m) => m,
                    Err(e) if !current && !io.exists(&mf.manifest_path).await? => {
                        tracing::debug!(manifest = %mf.manifest_path, error = %e, "an expired snapshot's manifest is gone");
                        return Ok(Vec::new());
                    }
                    Err(e) => return Err(Error::from(e)),
                };
                Ok::<_, Error>(
                    manifest
                        .entries()
                        .iter()
                        .map(|e| e.data_file().file_path().to_string())
                        .collect(),
                )
            }
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    out.extend(files.into_iter().flatten());
    out.iter().map(|p| Location::parse(p)).collect()
}

/// Whether an entry named `name` under the table location is hidden, as Java's
/// `PartitionAwareHiddenPathFilter` decides: a name starting with `_` or `.` (Hadoop's
/// `_SUCCESS` and `_temporary`, `.crc` checksums, editors' and sync tools' files) is neither
/// listed nor deleted — except a directory `<field>=<value>` of a partition field whose name
/// itself starts with `_` (`underscored`).
fn hidden(name: &str, is_dir: bool, underscored: &HashSet<String>) -> bool {
    if !(name.starts_with('_') || name.starts_with('.')) {
        return false;
    }
    let partition_dir = is_dir
        && name
            .split_once('=')
            .is_some_and(|(field, _)| underscored.contains(field));
    !partition_dir
}

/// Every regular file under `root` with its modification time, walked without recursion, and
/// the directories below `root` skipped because they hold another table (a table whose location
/// is nested in this one's, e.g. `db/t` and `db/t/child`): its files are not this table's
/// orphans. Hidden entries ([`hidden`]) are not listed, nor anything below a hidden
/// directory.
async fn list_files(
    root: &Path,
    underscored: HashSet<String>,
) -> Result<(Vec<(PathBuf, SystemTime)>, Vec<PathBuf>)> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let io_err = |path: &Path, e: std::io::Error| {
            Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
        };
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        if !root.exists() {
            return Ok((out, skipped));
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            if dir != root && holds_table(&dir).map_err(|e| io_err(&dir, e))? {
                skipped.push(dir);
                continue;
            }
            for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
                let entry = entry.map_err(|e| io_err(&dir, e))?;
                let kind = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
                if hidden(
                    &entry.file_name().to_string_lossy(),
                    kind.is_dir(),
                    &underscored,
                ) {
                    tracing::debug!(path = %entry.path().display(), "hidden: not listed");
                    continue;
                }
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    let modified = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .map_err(|e| io_err(&entry.path(), e))?;
                    out.push((entry.path(), modified));
                }
                // Symbolic links are neither followed nor deleted: they may point outside.
            }
        }
        skipped.sort();
        Ok((out, skipped))
    })
    .await
    .map_err(|e| Error::InvalidInput(format!("listing the table location failed: {e}")))?
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
                 one of them its own location; if it was dropped (a table dropped without purge \
                 and created again under the same name leaves its files there), delete its \
                 metadata files yourself and run this again",
                table.metadata().location()
            )));
        }
    }
    Ok(())
}

/// Whether `dir` is a table's location: it has a `metadata` directory holding a
/// `*.metadata.json` file.
fn holds_table(dir: &Path) -> std::io::Result<bool> {
    let metadata = dir.join("metadata");
    if !metadata.is_dir() {
        return Ok(false);
    }
    for entry in std::fs::read_dir(&metadata)? {
        if entry?
            .file_name()
            .to_string_lossy()
            .ends_with(".metadata.json")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(s: &str) -> Location {
        Location::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn hidden_names_are_javas_except_underscored_partition_directories() {
        let underscored: HashSet<String> = ["_region".to_string()].into();
        for (name, dir, want) in [
            ("_SUCCESS", false, true),
            (".part-0.parquet.crc", false, true),
            ("_temporary", true, true),
            (".hidden", true, true),
            ("_region=eu", true, false),
            // Only as a directory, and only of the table's own underscored fields.
            ("_region=eu", false, true),
            ("_other=eu", true, true),
            ("region=eu", true, false),
            ("00000-0-a.parquet", false, false),
        ] {
            assert_eq!(hidden(name, dir, &underscored), want, "{name} dir={dir}");
        }
    }

    #[test]
    fn local_spellings_are_one_location_and_s3a_is_not_s3() {
        let a = loc("file:///tmp/w/t/data/a.parquet");
        let b = loc("file:/tmp/w/t/data/a.parquet");
        let c = loc("/tmp/w/t/data/a.parquet");
        assert_eq!(
            (a.scheme.as_str(), a.path.as_str()),
            ("file", "/tmp/w/t/data/a.parquet")
        );
        assert_eq!(
            (&a.scheme, &a.authority, &a.path),
            (&b.scheme, &b.authority, &b.path)
        );
        assert_eq!(
            (&a.scheme, &a.authority, &a.path),
            (&c.scheme, &c.authority, &c.path)
        );
        let s3 = loc("s3://bucket/t/data/a.parquet");
        let s3a = loc("s3a://bucket/t/data/a.parquet");
        assert_eq!(s3.path, s3a.path);
        assert_ne!(s3.scheme, s3a.scheme);
        assert_eq!(s3.authority, "bucket");
        assert!(s3.local_dir().is_none());
        assert!(Location::parse("file://otherhost/x").is_err());
    }

    #[test]
    fn dot_segments_of_local_paths_resolve_and_object_keys_stay_literal() {
        assert_eq!(
            loc("file:///w/t/./data/../data/a.parquet").path,
            "/w/t/data/a.parquet"
        );
        assert_eq!(loc("/w/t/data/./a.parquet").path, "/w/t/data/a.parquet");
        assert_eq!(loc("file:///../w/a").path, "/w/a");
        assert_eq!(loc("s3://b/t/../a").path, "/t/../a");
    }

    #[tokio::test]
    async fn a_table_nested_in_the_location_is_not_listed() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::InvalidInput(e.to_string()))?;
        let root = dir.path().join("t");
        let io = |e: std::io::Error| Error::InvalidInput(e.to_string());
        std::fs::create_dir_all(root.join("metadata")).map_err(io)?;
        std::fs::create_dir_all(root.join("data/region=us")).map_err(io)?;
        std::fs::create_dir_all(root.join("child/metadata")).map_err(io)?;
        std::fs::create_dir_all(root.join("child/data")).map_err(io)?;
        std::fs::create_dir_all(root.join("notatable/metadata")).map_err(io)?;
        for f in [
            "metadata/00000-a.metadata.json",
            "data/region=us/a.parquet",
            "child/metadata/00000-b.metadata.json",
            "child/data/b.parquet",
            "notatable/metadata/x.avro",
        ] {
            std::fs::write(root.join(f), b"x").map_err(io)?;
        }
        let (files, skipped) = list_files(&root, HashSet::new()).await?;
        let mut names: Vec<String> = files
            .iter()
            .map(|(p, _)| {
                p.strip_prefix(&root)
                    .map_or(String::new(), |p| p.display().to_string())
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "data/region=us/a.parquet",
                "metadata/00000-a.metadata.json",
                "notatable/metadata/x.avro"
            ]
        );
        assert_eq!(skipped, vec![root.join("child")]);
        Ok(())
    }
}
