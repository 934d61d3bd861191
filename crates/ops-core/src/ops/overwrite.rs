//! Remove data files, or the rows matching a filter, and add new files, in one `overwrite`
//! snapshot: the building block of upserts and of PyIceberg's `overwrite(df, overwrite_filter)`.
//!
//! 1. Load the table. The snapshot the caller read at is `validate_from_snapshot` (default:
//!    the snapshot this builder first loads).
//! 2. With an overwrite filter, plan a copy-on-write delete of the rows where it is TRUE (see
//!    [`super::delete`]); with keys to delete ([`OverwriteBuilder::delete_keys`]), of the rows
//!    whose key is in the [`KeySet`]: the files it drops or rewrites join the files to remove.
//! 3. Validate every snapshot committed since the caller's read ([`super::validate`]): no data
//!    file added that may match the conflict detection filter or key set (default: the
//!    overwrite filter or the keys to delete; with none, any file added in a touched partition
//!    — those of the removed and added files), no file the overwrite depends on removed, no
//!    delete file that may apply to a rewritten file. A failure is a conflict and nothing is
//!    written.
//!
//! Keys, not predicates, for an upsert: a predicate naming many composite keys is an `OR` of
//! `AND`s as deep as the keys are many; a [`KeySet`] is matched by hash and judged against file
//! statistics key by key (see [`crate::keys`]), linear in the keys.
//! 4. Produce a snapshot that marks the removed files DELETED and adds the new ones under the
//!    spec they were written with. A concurrent commit that passes validation is rebased onto.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use iceberg::TableIdent;
use iceberg::expr::{Bind, Predicate};
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;

use super::delete::{DeleteTarget, RowFilter, plan_delete_among, read_schema};
use super::snapshot::{
    ManifestCache, PartitionKey, SnapshotMetrics, SnapshotProducer, canonical_partition,
    commit_snapshot, live_data_files,
};
use super::validate::ConflictCheck;
use crate::keys::KeySet;
use crate::write::WrittenFiles;
use crate::{CatalogHandle, Error, Result};

/// Overwrites data files (see the module docs).
#[must_use = "an OverwriteBuilder does nothing until awaited"]
pub struct OverwriteBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    remove: Vec<String>,
    /// Files to add, with the spec they were written under (`None`: the default spec when
    /// this builder first loads the table).
    add: Vec<(Option<i32>, DataFile)>,
    overwrite_filter: Option<RowFilter>,
    delete_keys: Option<Arc<KeySet>>,
    /// The only files at `validate_from` that may hold one of `delete_keys` (the caller read
    /// them); `None`: every file whose statistics allow a key.
    keys_within: Option<Arc<HashSet<String>>>,
    validate_from: Option<Option<i64>>,
    conflict_filter: Option<RowFilter>,
    conflict_keys: Option<Arc<KeySet>>,
    properties: HashMap<String, String>,
}

/// Facts fixed at the first attempt.
#[derive(Clone, Copy)]
struct First {
    since: Option<i64>,
    default_spec: i32,
}

impl OverwriteBuilder {
    /// An overwrite of `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            remove: Vec::new(),
            add: Vec::new(),
            overwrite_filter: None,
            delete_keys: None,
            keys_within: None,
            validate_from: None,
            conflict_filter: None,
            conflict_keys: None,
            properties: HashMap::new(),
        }
    }

    /// Data files to remove, by path (as listed in the table's manifests).
    pub fn remove_files(mut self, paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.remove.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Data files to add, written under the table's default spec as this builder first loads
    /// it; prefer [`Self::add_written`], which knows the spec.
    pub fn add_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.add.extend(files.into_iter().map(|f| (None, f)));
        self
    }

    /// Data files to add, with the spec they were written under.
    pub fn add_written(mut self, written: WrittenFiles) -> Self {
        let spec = written.spec_id;
        self.add
            .extend(written.files.into_iter().map(|f| (Some(spec), f)));
        self
    }

    /// Also delete the rows where `filter` is TRUE (copy-on-write), in the same snapshot. The
    /// filter names columns as the table's current schema does (a renamed column is matched
    /// by field id).
    pub fn overwrite_filter(mut self, filter: Predicate) -> Self {
        self.overwrite_filter = Some(RowFilter::Predicate(filter));
        self
    }

    /// As [`Self::overwrite_filter`], from filter text (see [`crate::filter`]).
    pub fn overwrite_filter_text(mut self, filter: impl Into<String>) -> Self {
        self.overwrite_filter = Some(RowFilter::Text(filter.into()));
        self
    }

    /// Also delete (copy-on-write, in the same snapshot) the rows whose values in the key
    /// columns are one of `keys`' keys; the columns are top-level columns named as in the
    /// table's current schema. Only files whose statistics allow one of the keys are read
    /// (see [`KeySet::may_match`]). Not combined with an overwrite filter.
    pub fn delete_keys(mut self, keys: Arc<KeySet>) -> Self {
        self.delete_keys = Some(keys);
        self
    }

    /// The only data files that may hold one of [`Self::delete_keys`]' keys at
    /// [`Self::validate_from_snapshot`], by path: the caller read the others and found none
    /// there (an upsert, from its index of the destination's keys). The delete then reads and
    /// rewrites only these. When another commit landed since, the list no longer describes the
    /// table and every file the statistics allow is read, as without it; so too without
    /// [`Self::validate_from_snapshot`], which names the snapshot the list describes.
    pub fn delete_keys_within(mut self, paths: HashSet<String>) -> Self {
        self.keys_within = Some(Arc::new(paths));
        self
    }

    /// The snapshot the caller read at (Java's `validateFromSnapshot`); `None` if the table was
    /// empty. Every commit after it is validated against this overwrite.
    pub fn validate_from_snapshot(mut self, snapshot_id: Option<i64>) -> Self {
        self.validate_from = Some(snapshot_id);
        self
    }

    /// The rows the caller's decision depends on: a commit since
    /// [`Self::validate_from_snapshot`] that added or removed files that may hold such rows
    /// makes this overwrite a conflict. Defaults to the overwrite filter.
    pub fn conflict_detection_filter(mut self, filter: Predicate) -> Self {
        self.conflict_filter = Some(RowFilter::Predicate(filter));
        self
    }

    /// The rows the caller's decision depends on, as keys (an upsert's: every key it read,
    /// inserted or updated): a commit since [`Self::validate_from_snapshot`] that added or
    /// removed a data file whose statistics allow one of them — or a delete file that may
    /// apply to one — makes this overwrite a conflict. Java's `MergingSnapshotProducer` with
    /// the keys as its conflict detection filter; with [`Self::conflict_detection_filter`]
    /// too, either one is enough for a conflict. Defaults to the keys to delete.
    pub fn conflict_detection_keys(mut self, keys: Arc<KeySet>) -> Self {
        self.conflict_keys = Some(keys);
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        if self.overwrite_filter.is_some() && self.delete_keys.is_some() {
            return Err(Error::InvalidInput(
                "an overwrite deletes rows by a filter or by keys, not both".to_string(),
            ));
        }
        if self.remove.is_empty()
            && self.add.is_empty()
            && self.overwrite_filter.is_none()
            && self.delete_keys.is_none()
        {
            let table = self.handle.catalog().load_table(&self.ident).await?;
            return Ok((table, SnapshotMetrics::default()));
        }
        let unique: HashSet<&String> = self.remove.iter().collect();
        if unique.len() != self.remove.len() {
            return Err(Error::InvalidInput(
                "a file to remove is listed twice".to_string(),
            ));
        }
        let first: Mutex<Option<First>> = Mutex::new(None);
        let this = Arc::new(self);
        let handle = this.handle.clone();
        let ident = this.ident.clone();
        commit_snapshot(&handle, &ident, |base| {
            let this = this.clone();
            let first = &first;
            async move { this.plan(base, first).await }
        })
        .await
    }

    async fn plan(
        &self,
        base: Table,
        first: &Mutex<Option<First>>,
    ) -> Result<Option<super::snapshot::Produced>> {
        let md = base.metadata();
        let recorded = {
            let mut guard = first.lock().unwrap_or_else(|p| p.into_inner());
            *guard.get_or_insert(First {
                since: self.validate_from.unwrap_or(md.current_snapshot_id()),
                default_spec: md.default_partition_spec_id(),
            })
        };
        let cache = ManifestCache::new(&base);
        let add: Vec<(i32, DataFile)> = self
            .add
            .iter()
            .map(|(spec, f)| (spec.unwrap_or(recorded.default_spec), f.clone()))
            .collect();

        let mut removed: Vec<String> = self.remove.clone();
        let mut rewrites = WrittenFiles::default();
        let overwrite_filter = self
            .overwrite_filter
            .as_ref()
            .map(|f| f.resolve(&base))
            .transpose()?;
        let delete = match (&overwrite_filter, &self.delete_keys) {
            (Some(filter), _) => Some(DeleteTarget::Filter(filter.clone())),
            (None, Some(keys)) => Some(DeleteTarget::Keys(keys.clone())),
            (None, None) => None,
        };
        // Files removed explicitly go whole; rewriting them too would duplicate rows.
        let whole: HashSet<&str> = self.remove.iter().map(String::as_str).collect();
        let within = self.keys_within.as_ref().filter(|_| {
            // Only for the snapshot the caller read, and named (`validate_from_snapshot`).
            self.delete_keys.is_some()
                && self.validate_from.is_some()
                && md.current_snapshot_id() == recorded.since
        });
        if let Some(target) = delete
            && let Some(plan) = plan_delete_among(&base, &cache, target, true, &|path| {
                !whole.contains(path) && within.is_none_or(|w| w.contains(path))
            })
            .await?
        {
            removed.extend(plan.removed.iter().cloned());
            rewrites = plan.added;
        }
        let rewrite_paths: Vec<String> = rewrites
            .files
            .iter()
            .map(|f| f.file_path().to_string())
            .collect();
        let result = async {
            let wanted: HashSet<&String> = removed.iter().collect();
            let mut check = ConflictCheck {
                since: recorded.since,
                ..ConflictCheck::default()
            };
            if !removed.is_empty() {
                for f in live_data_files(&base, &cache).await? {
                    if wanted.contains(&f.file.file_path().to_string()) {
                        check.removed_partitions.insert(f.key());
                        check.removed.insert(f.file.file_path().to_string());
                    }
                }
            }
            let (conflict_filter, conflict_keys) =
                match (&self.conflict_filter, &self.conflict_keys) {
                    (None, None) => (overwrite_filter.clone(), self.delete_keys.clone()),
                    (f, k) => (f.as_ref().map(|f| f.resolve(&base)).transpose()?, k.clone()),
                };
            if let Some(keys) = conflict_keys {
                let ids = keys.field_ids(base.metadata().current_schema())?;
                check.keys = Some((keys, ids));
            }
            if conflict_filter.is_none() && check.keys.is_none() {
                // Without a filter saying which rows the caller's decision read, any file added
                // where this overwrite removes or writes is presumed to matter.
                check.partitions = check.removed_partitions.clone();
                check
                    .partitions
                    .extend(add.iter().map(|(spec, f)| -> PartitionKey {
                        (*spec, canonical_partition(f.partition()))
                    }));
            }
            check.filter = conflict_filter
                .map(|p| p.bind(Arc::new(read_schema(&base).clone()), true))
                .transpose()?;
            check.validate(&base, &cache).await?;
            SnapshotProducer::new(&base, &cache, Operation::Overwrite)
                .remove_paths(removed)
                .add_files_by_spec(add)
                .add_files(rewrites.spec_id, rewrites.files)
                .properties(self.properties.clone())
                .produce()
                .await
        }
        .await;
        match result {
            Ok(mut produced) => {
                produced.change.written.extend(rewrite_paths);
                Ok(Some(produced))
            }
            Err(e) => {
                crate::commit::delete_quietly(base.file_io(), &rewrite_paths).await;
                Err(e)
            }
        }
    }
}

impl IntoFuture for OverwriteBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    use super::*;
    use crate::ops::delete::tests::table_with_two_files;

    async fn ids(table: &Table) -> anyhow::Result<Vec<i64>> {
        let batches: Vec<_> = crate::scan::scan(table, None).await?.try_collect().await?;
        let mut ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                let col = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>();
                col.map(|c| c.values().to_vec()).unwrap_or_default()
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn keys(ids: Vec<i64>) -> anyhow::Result<Arc<KeySet>> {
        Ok(Arc::new(KeySet::new(
            ["id"],
            vec![Arc::new(arrow_array::Int64Array::from(ids))],
        )?))
    }

    /// The files a caller lists are the only ones a delete by keys reads: key 3 of the file it
    /// leaves out stays (the caller vouched that file held none). Once another commit lands
    /// after the snapshot the list describes, the list is set aside and every file the
    /// statistics allow is read again.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_delete_by_keys_reads_only_the_files_listed_until_another_commit_lands()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = table_with_two_files(dir.path()).await?;
        let ident = table.identifier().clone();
        let live = live_data_files(&table, &ManifestCache::new(&table)).await?;
        assert_eq!(ids(&table).await?, vec![1, 2, 3, 4]);
        // The file that holds 2, found by its stored ids: the one listed.
        let mut scan = crate::scan::plan_scan(&table, None, None)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
        let mut holding_two = None;
        for (path, read) in scan.read_columns(&[1], |_| true)? {
            let cols: Vec<_> = read.try_collect().await?;
            let col = cols[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>();
            if col.is_some_and(|c| c.values().contains(&2)) {
                holding_two = Some(path);
            }
        }
        let holding_two = holding_two.ok_or_else(|| anyhow::anyhow!("no file holds 2"))?;
        // Without `validate_from_snapshot` the list describes no snapshot: set aside.
        let (table, _) = OverwriteBuilder::new(&handle, ident.clone())
            .delete_keys(keys(vec![4])?)
            .delete_keys_within([holding_two.clone()].into())
            .await?;
        assert_eq!(ids(&table).await?, vec![1, 2, 3]);
        let (table, _) = OverwriteBuilder::new(&handle, ident.clone())
            .delete_keys(keys(vec![2, 3])?)
            .delete_keys_within([holding_two.clone()].into())
            .validate_from_snapshot(table.metadata().current_snapshot_id())
            .await?;
        assert_eq!(ids(&table).await?, vec![1, 3]);

        // Another commit (a file of id 5) after the snapshot read: the list (none) is set
        // aside and key 3 is deleted where it is.
        let read_at = table.metadata().current_snapshot_id();
        let batch = arrow_array::RecordBatch::try_new(
            crate::write::table_arrow_schema(&table)?,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![5])),
                Arc::new(arrow_array::StringArray::from(vec![Some("us")])),
            ],
        )?;
        let written = crate::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
        crate::ops::append::AppendBuilder::new(&handle, ident.clone())
            .add_written(written)
            .await?;
        let (table, _) = OverwriteBuilder::new(&handle, ident.clone())
            .delete_keys(keys(vec![3])?)
            .delete_keys_within(HashSet::new())
            .validate_from_snapshot(read_at)
            .await?;
        assert_eq!(ids(&table).await?, vec![1, 5]);

        // A file left out of the scan is not read, for its columns either; a column the
        // table lacks is refused.
        scan.retain_files(|t| t.data_file_path == holding_two);
        assert_eq!(scan.files().count(), 1);
        assert_eq!(live.len(), 2);
        assert!(
            scan.read_columns(&[1], |t| t.data_file_path != holding_two)?
                .is_empty()
        );
        let err = scan
            .read_columns(&[99], |_| true)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("not all top-level columns")));
        let rows: Vec<_> = scan.read()?.try_collect().await?;
        assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
        Ok(())
    }
}
