//! Step 2 of orphan cleanup: every file the table's metadata still reaches.
//!
//! Kept as hashes of their paths ([`PathSet`], 8 bytes a file), the manifests read entry by
//! entry ([`ops_core::manifests`]) and the metadata log one file at a time, so a table of a
//! million files is compared with its listing in memory that does not grow with its files.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::spec::{ManifestFile, TableMetadata};
use iceberg::table::Table;

use super::location::Location;
use crate::path_set::{PathSet, SealedPathSet, path_hash};
use ops_core::{Error, Result};

/// What the table's metadata reaches under the table location (only files there are listed),
/// by path (as [`Location::path`] normalises it, and also cut at a `?` or `#`, as Java
/// compares them), ready for lookups ([`Reachable::reached`]).
#[derive(Debug)]
pub(super) struct Reachable {
    /// Paths referenced on the table location's file system.
    same: SealedPathSet,
    /// Paths under the table location referenced on another file system (scheme or
    /// authority) only, with the first spelling seen: a listed file with such a path is one
    /// file named two ways. Rare, so kept as strings for the error message.
    elsewhere: HashMap<u64, String>,
}

/// [`Reachable`] being collected.
#[derive(Debug, Default)]
struct Collecting {
    same: PathSet,
    elsewhere: HashMap<u64, String>,
}

/// Whether a listed path is referenced.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reached<'a> {
    /// Referenced on the table location's file system.
    Yes,
    /// Referenced with another scheme or authority, spelled so.
    Elsewhere(&'a str),
    /// Not referenced.
    No,
}

impl Collecting {
    fn add(&mut self, table_location: &Location, path: &str) -> Result<()> {
        let loc = Location::parse(path)?;
        let cut = loc
            .path
            .find(['?', '#'])
            .map(|i| &loc.path[..i])
            .filter(|cut| cut.len() > 1);
        // Files outside the table location are never listed, so never looked up: a table whose
        // files `add_files` registered in place elsewhere costs nothing here.
        let root = table_location.path.trim_end_matches('/');
        let under = |p: &str| {
            p.len() > root.len() && p.starts_with(root) && p[root.len()..].starts_with('/')
        };
        for key in std::iter::once(loc.path.as_str())
            .chain(cut)
            .filter(|k| under(k))
        {
            if loc.same_file_system(table_location) {
                self.same.insert(key);
            } else {
                self.elsewhere
                    .entry(path_hash(key))
                    .or_insert_with(|| loc.original.clone());
            }
        }
        Ok(())
    }

    fn seal(self) -> Reachable {
        Reachable {
            same: self.same.seal(),
            elsewhere: self.elsewhere,
        }
    }
}

impl Reachable {
    /// Whether the listed file at `path` ([`Location::path`]) is referenced.
    pub(super) fn reached(&self, path: &str) -> Reached<'_> {
        let hash = path_hash(path);
        if self.same.contains_hash(hash) {
            Reached::Yes
        } else if let Some(original) = self.elsewhere.get(&hash) {
            Reached::Elsewhere(original)
        } else {
            Reached::No
        }
    }
}

/// Every file the table's metadata log and current metadata reach. The current metadata is
/// the table's own (as loaded), whether or not the catalog said where its file is: some REST
/// servers leave `metadata-location` out, and its snapshots' files are live all the same.
/// (Its file is reachable only when named; the caller refuses to run without it.)
pub(super) async fn reachable_files(table: &Table, location: &Location) -> Result<Reachable> {
    let md = table.metadata();
    let mut out = Collecting::default();
    let current = table.metadata_location().map(str::to_string);
    if let Some(current) = &current {
        out.add(location, current)?;
    }
    let mut lists_seen: HashSet<String> = HashSet::new();
    // Manifests by path, and whether the current metadata reaches them. Older metadata files
    // still name snapshots that expiry removed, and their manifest lists and manifests may be
    // gone: missing there is fine, missing from the current metadata is a broken table.
    let mut manifests: HashMap<String, (iceberg::spec::ManifestFile, bool)> = HashMap::new();
    // The current metadata first, then each file of the log, read and dropped one at a time.
    let log: Vec<String> = md
        .metadata_log()
        .iter()
        .map(|l| l.metadata_file.clone())
        .collect();
    let versions = std::iter::once(None).chain(log.into_iter().map(Some));
    for logged in versions {
        let is_current = logged.is_none();
        let (version_location, version) = match logged {
            None => (current.clone(), md.clone()),
            Some(file) => {
                out.add(location, &file)?;
                match TableMetadata::read_from(table.file_io(), &file).await {
                    Ok(old) => (Some(file), old),
                    // A log entry whose file is gone references nothing that still exists.
                    Err(e) if !table.file_io().exists(&file).await? => {
                        tracing::debug!(file = %file, error = %e, "a metadata file in the log is gone");
                        continue;
                    }
                    // One that exists but cannot be read may reference files nothing else
                    // does: taking them for orphans would delete live data.
                    Err(e) => {
                        return Err(Error::InvalidInput(format!(
                            "metadata file {file} in the table's metadata log exists but cannot \
                             be read ({e}); the files it references cannot be told from orphans, \
                             so no file was deleted. Fix or remove that file, then run again"
                        )));
                    }
                }
            }
        };
        for s in version.statistics_iter() {
            out.add(location, &s.statistics_path)?;
        }
        for s in version.partition_statistics_iter() {
            out.add(location, &s.statistics_path)?;
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
        let mut reader = Table::builder()
            .identifier(table.identifier().clone())
            .metadata(version)
            .file_io(table.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?);
        if let Some(version_location) = version_location {
            reader = reader.metadata_location(version_location);
        }
        let reader = reader.build()?;
        for s in snapshots {
            out.add(location, s.manifest_list())?;
            let list = match reader.manifest_list_reader(&s).load().await {
                Ok(list) => list,
                Err(e) if !table.file_io().exists(s.manifest_list()).await? => {
                    if is_current {
                        return Err(gone_meanwhile(s.manifest_list(), &e.to_string()));
                    }
                    tracing::debug!(list = %s.manifest_list(), error = %e, "an expired snapshot's manifest list is gone");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            for mf in list.entries() {
                let entry = manifests
                    .entry(mf.manifest_path.clone())
                    .or_insert_with(|| (mf.clone(), is_current));
                entry.1 |= is_current;
            }
        }
    }
    for path in manifests.keys() {
        out.add(location, path)?;
    }
    let io = table.file_io().clone();
    let mut paths = futures::stream::iter(manifests.into_values())
        .map(|(mf, current)| Box::pin(file_paths(io.clone(), mf, current)))
        .flatten_unordered(ops_core::manifests::READ_CONCURRENCY);
    while let Some(path) = paths.try_next().await? {
        out.add(location, &path)?;
    }
    let out = out.seal();
    tracing::debug!(
        paths = out.same.len(),
        "files under the table location its metadata reaches"
    );
    Ok(out)
}

/// The paths of the files `mf` lists, any entry status, as it is read. A manifest an expired
/// snapshot named that is gone (`current` false) lists nothing; gone from the current
/// metadata, the table is broken and that is an error.
fn file_paths(
    io: FileIO,
    mf: ManifestFile,
    current: bool,
) -> impl futures::Stream<Item = Result<String>> + Send {
    let entries = Box::pin(ops_core::manifests::entries(&io, &mf));
    futures::stream::unfold(Some((entries, io, mf)), move |state| async move {
        let (mut entries, io, mf) = state?;
        match entries.try_next().await {
            Ok(Some(e)) => {
                let path = e.data_file().file_path().to_string();
                Some((Ok(path), Some((entries, io, mf))))
            }
            Ok(None) => None,
            Err(e) => match io.exists(&mf.manifest_path).await {
                Ok(false) if !current => {
                    tracing::debug!(manifest = %mf.manifest_path, error = %e, "an expired snapshot's manifest is gone");
                    None
                }
                Ok(false) => Some((Err(gone_meanwhile(&mf.manifest_path, &e.to_string())), None)),
                Ok(true) => Some((Err(e), None)),
                Err(exists) => Some((Err(exists.into()), None)),
            },
        }
    })
}

/// A file the table's current metadata listed when this run read it is gone: most likely
/// another command (an expiry, a compaction) committed and deleted it meanwhile. Nothing has
/// been deleted yet: the reachable set is complete before any deletion.
fn gone_meanwhile(path: &str, error: &str) -> Error {
    Error::InvalidInput(format!(
        "{path}, which the table's metadata listed when this run read it, is gone ({error}): \
         another command (an expiry, a compaction) most likely changed the table meanwhile; \
         nothing was deleted: run remove-orphans again once it has finished (if the file is \
         gone for good, the table's reads fail too)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table loaded without its metadata location (a REST server leaving `metadata-location`
    /// out): its current snapshot's manifest list, manifests and data files are reachable all
    /// the same.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_loaded_metadata_is_reachable_without_its_location() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (table, snapshot) = crate::test_support::appended(dir.path(), vec![1, 2]).await?;
        let manifests = table.manifest_list_reader(&snapshot).load().await?;
        let mut live = vec![snapshot.manifest_list().to_string()];
        for mf in manifests.entries() {
            live.push(mf.manifest_path.clone());
            for e in mf.load_manifest(table.file_io()).await?.entries() {
                live.push(e.data_file().file_path().to_string());
            }
        }
        let unlocated = Table::builder()
            .identifier(table.identifier().clone())
            .metadata(table.metadata_ref())
            .file_io(table.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?;
        assert_eq!(unlocated.metadata_location(), None);
        let location = Location::parse(table.metadata().location())?;
        let reachable = reachable_files(&unlocated, &location).await?;
        for path in live {
            assert_eq!(
                reachable.reached(&Location::parse(&path)?.path),
                Reached::Yes,
                "{path} is not reachable"
            );
        }
        assert_eq!(
            reachable.reached(&format!("{}/data/other.parquet", location.path)),
            Reached::No
        );
        let elsewhere = format!("s3://bucket{}/data/x.parquet", location.path);
        let mut with_elsewhere = Collecting::default();
        with_elsewhere.add(&location, &elsewhere)?;
        let with_elsewhere = with_elsewhere.seal();
        assert_eq!(
            with_elsewhere.reached(&format!("{}/data/x.parquet", location.path)),
            Reached::Elsewhere(elsewhere.as_str())
        );
        Ok(())
    }

    /// A manifest or manifest list the current metadata lists, deleted while the reachable set
    /// is read (an expiry or a compaction racing the cleanup): named, with what to do and
    /// that nothing was deleted, not a raw I/O error.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_current_file_gone_meanwhile_is_named_with_a_rerun() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (table, snapshot) = crate::test_support::appended(dir.path(), vec![1, 2]).await?;
        let location = Location::parse(table.metadata().location())?;
        let manifests = table.manifest_list_reader(&snapshot).load().await?;
        let manifest = manifests
            .entries()
            .first()
            .map(|m| m.manifest_path.clone())
            .ok_or_else(|| anyhow::anyhow!("no manifest"))?;
        for gone in [manifest, snapshot.manifest_list().to_string()] {
            table.file_io().delete(&gone).await?;
            let e = reachable_files(&table, &location)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains(&format!("{gone}, which the table's metadata listed"))
                    && e.contains("nothing was deleted"),
                "{e}"
            );
        }
        Ok(())
    }
}
