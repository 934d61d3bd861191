//! Dynamic partition overwrite: the new files replace every row in the partitions they cover.
//!
//! 1. The partitions to replace are those of the new files under the spec they were written
//!    with (any transform: identity, bucket, truncate, year/month/day/hour).
//! 2. Live files of that spec in those partitions are removed (values compared after
//!    promotion, so an `int` partition written before the source column became `long`
//!    matches). Files of other specs are kept, as Java's `BaseReplacePartitions` keeps them,
//!    except where their partition places every row in a replaced partition (every field of
//!    the new files' spec also exists in theirs with the same source and transform): those are
//!    removed too, as PyIceberg's dynamic overwrite does, so no replaced row survives. A file
//!    whose spec cannot tell (it lacks a field) is refused, naming it, only if its known fields
//!    put it possibly in a replaced partition; elsewhere it is simply kept.
//! 3. Validate every snapshot since the caller's read (`validate_from_snapshot`, default the
//!    first load): no file added to or removed from a replaced partition, no delete file there
//!    ([`super::validate`]); otherwise a conflict.
//! 4. One `overwrite` snapshot, with `replace-partitions=true` in its summary.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;

use iceberg::TableIdent;
use iceberg::spec::{DataFile, Operation, PartitionSpec};
use iceberg::table::Table;

use super::snapshot::{
    LiveFile, ManifestCache, Overlap, PartitionKey, SnapshotMetrics, SnapshotProducer,
    canonical_partition, commit_snapshot, live_data_files, overlap, spec_by_id,
};
use super::validate::ConflictCheck;
use crate::write::WrittenFiles;
use crate::{CatalogHandle, Error, Result};

/// Replaces partitions (see the module docs).
#[must_use = "a ReplacePartitionsBuilder does nothing until awaited"]
pub struct ReplacePartitionsBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    add: Vec<(Option<i32>, DataFile)>,
    validate_from: Option<Option<i64>>,
    properties: HashMap<String, String>,
}

impl ReplacePartitionsBuilder {
    /// A partition replacement on `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            add: Vec::new(),
            validate_from: None,
            properties: HashMap::new(),
        }
    }

    /// The new data files (written under the table's default spec as this builder first loads
    /// it); prefer [`Self::add_written`].
    pub fn add_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.add.extend(files.into_iter().map(|f| (None, f)));
        self
    }

    /// The new data files, with the spec they were written under.
    pub fn add_written(mut self, written: WrittenFiles) -> Self {
        let spec = written.spec_id;
        self.add
            .extend(written.files.into_iter().map(|f| (Some(spec), f)));
        self
    }

    /// The snapshot the caller read at (Java's `validateFromSnapshot`); `None` if the table was
    /// empty. A file added to, or removed from, a replaced partition since is a conflict.
    pub fn validate_from_snapshot(mut self, snapshot_id: Option<i64>) -> Self {
        self.validate_from = Some(snapshot_id);
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        // (snapshot validated from, default spec), fixed at the first attempt.
        let first: Mutex<Option<(Option<i64>, i32)>> = Mutex::new(None);
        commit_snapshot(&self.handle, &self.ident, |base| {
            let (since, default_spec) = *first
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert((
                    self.validate_from
                        .unwrap_or(base.metadata().current_snapshot_id()),
                    base.metadata().default_partition_spec_id(),
                ));
            let add: Vec<(i32, DataFile)> = self
                .add
                .iter()
                .map(|(s, f)| (s.unwrap_or(default_spec), f.clone()))
                .collect();
            let mut properties = self.properties.clone();
            async move {
                if add.is_empty() {
                    return Ok(None);
                }
                let cache = ManifestCache::new(&base);
                let touched: HashSet<PartitionKey> = add
                    .iter()
                    .map(|(spec, f)| (*spec, canonical_partition(f.partition())))
                    .collect();
                let specs: HashSet<i32> = add.iter().map(|(s, _)| *s).collect();
                let mut victims = Vec::new();
                let mut removed_partitions = HashSet::new();
                for spec_id in specs {
                    let spec = spec_by_id(&base, spec_id)?;
                    for f in files_in_partitions(&base, &cache, &spec, &touched).await? {
                        removed_partitions.insert(f.key());
                        if !victims.contains(&f.file.file_path().to_string()) {
                            victims.push(f.file.file_path().to_string());
                        }
                    }
                }
                let check = ConflictCheck {
                    since,
                    filter: None,
                    keys: None,
                    partitions: touched,
                    removed: victims.iter().cloned().collect(),
                    removed_partitions,
                    // Its victims are whatever the touched partitions hold on this attempt's
                    // base: an append since `since` into one is a conflict of its own.
                    removed_as_read: HashSet::new(),
                };
                check.validate(&base, &cache).await?;
                properties.insert("replace-partitions".into(), "true".into());
                let produced = SnapshotProducer::new(&base, &cache, Operation::Overwrite)
                    .remove_paths(victims)
                    .add_files_by_spec(add)
                    .properties(properties)
                    .produce()
                    .await?;
                Ok(Some(produced))
            }
        })
        .await
    }
}

/// The live files whose rows all lie in `touched` partitions of `target` (compared after
/// promotion, so values written before a widening of the source column match). A file of
/// another spec is kept unless its partition places it in a touched partition; one whose spec
/// cannot tell (it lacks a field `target` partitions by) but might lie there is refused.
async fn files_in_partitions(
    table: &Table,
    cache: &ManifestCache,
    target: &PartitionSpec,
    touched: &HashSet<PartitionKey>,
) -> Result<Vec<LiveFile>> {
    let touched: HashSet<PartitionKey> = touched
        .iter()
        .filter(|(spec, _)| *spec == target.spec_id())
        .cloned()
        .collect();
    let mut out = Vec::new();
    for live in live_data_files(table, cache).await? {
        let LiveFile { file, spec_id, .. } = &live;
        match overlap(table, *spec_id, file.partition(), &touched)? {
            Overlap::No => {}
            Overlap::Yes => out.push(live),
            Overlap::Unknown => {
                return Err(Error::InvalidInput(format!(
                    "{} holds {} under partition spec {spec_id}, which cannot tell which of its \
                     rows belong to the partitions being replaced (the spec gained a field \
                     since); rewrite that data under the current spec first, or use overwrite",
                    table.identifier(),
                    file.file_path()
                )));
            }
        }
    }
    Ok(out)
}

impl IntoFuture for ReplacePartitionsBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
