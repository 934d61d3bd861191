//! Step 2 of orphan cleanup: every file the table's metadata still reaches.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use iceberg::spec::TableMetadata;
use iceberg::table::Table;

use super::location::Location;
use ops_core::{Error, Result};

const READ_CONCURRENCY: usize = 8;

/// Every file the table's metadata log and current metadata reach. The current metadata is
/// the table's own (as loaded), whether or not the catalog said where its file is: some REST
/// servers leave `metadata-location` out, and its snapshots' files are live all the same.
/// (Its file is reachable only when named; the caller refuses to run without it.)
pub(super) async fn reachable_files(table: &Table) -> Result<HashSet<Location>> {
    let md = table.metadata();
    let mut out: HashSet<String> = HashSet::new();
    let mut versions: Vec<(Option<String>, Option<TableMetadata>)> = Vec::new();
    let current = table.metadata_location().map(str::to_string);
    if let Some(current) = &current {
        out.insert(current.clone());
    }
    versions.push((current, Some(md.clone())));
    for log in md.metadata_log() {
        out.insert(log.metadata_file.clone());
        match TableMetadata::read_from(table.file_io(), &log.metadata_file).await {
            Ok(old) => versions.push((Some(log.metadata_file.clone()), Some(old))),
            // A log entry whose file is gone references nothing that still exists.
            Err(e) if !table.file_io().exists(&log.metadata_file).await? => {
                tracing::debug!(file = %log.metadata_file, error = %e, "a metadata file in the log is gone");
            }
            // One that exists but cannot be read may reference files nothing else does:
            // taking them for orphans would delete live data.
            Err(e) => {
                return Err(Error::InvalidInput(format!(
                    "metadata file {} in the table's metadata log exists but cannot be read \
                     ({e}); the files it references cannot be told from orphans, so no file \
                     was deleted. Fix or remove that file, then run again",
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
        let mut reader = Table::builder()
            .identifier(table.identifier().clone())
            .metadata(version)
            .file_io(table.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?);
        if let Some(location) = location {
            reader = reader.metadata_location(location);
        }
        let reader = reader.build()?;
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A table loaded without its metadata location (a REST server leaving `metadata-location`
    /// out): its current snapshot's manifest list, manifests and data files are reachable all
    /// the same.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_loaded_metadata_is_reachable_without_its_location() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = crate::test_support::table(dir.path()).await?;
        let batch = crate::test_support::batch(&table, vec![1, 2])?;
        let (table, _) = ops_core::append::append(
            &handle,
            &table,
            futures::stream::iter([Ok(batch)]),
            HashMap::new(),
        )
        .await?;
        let snapshot = table
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("no snapshot"))?
            .clone();
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
        let reachable = reachable_files(&unlocated).await?;
        for path in live {
            assert!(
                reachable.contains(&Location::parse(&path)?),
                "{path} is not reachable"
            );
        }
        Ok(())
    }
}
