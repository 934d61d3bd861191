//! Remove delete files no live data file can take any more, in one `replace` snapshot (Java's
//! `RemoveDanglingDeletesSparkAction`, which commits a `RewriteFiles` of delete files only).
//!
//! 1. Refuse an S3 Tables table and a table an unfinished migration writes to (unless forced).
//! 2. On each attempt's base: stream the delete manifests, keeping the live delete files (they
//!    are few next to the data files); then stream the data manifests, keeping only the data
//!    files of partitions that hold a delete file, and the one with the lowest sequence number
//!    (enough to judge a global equality delete). Which are dangling is decided as compaction
//!    decides it (`crate::dangling_deletes`): sequence numbers, partitions and a position
//!    delete's `file_path` bounds.
//! 3. Commit their removal. A concurrent commit makes the attempt plan again on the new base: a
//!    rewrite that kept an old data sequence number may have made a delete file apply again.
//!    Removing a delete file changes no row a reader sees, and no file is deleted here (expiry
//!    deletes them once no snapshot references them).

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::TableIdent;
use iceberg::spec::Operation;
use iceberg::table::Table;
use ops_core::ops::live_deletes::{LiveDelete, referenced_path};
use ops_core::ops::producer::{SnapshotProducer, commit_snapshot_from};
use ops_core::ops::{
    LiveFile, ManifestCache, PartitionKey, each_live_data_file, each_live_delete_file,
};
use ops_core::{CatalogHandle, Result};

use crate::dangling_deletes::dangling;
use crate::guards;

/// What a removal did (or would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DanglingMetrics {
    /// The delete files removed from the table's live state, sorted.
    pub removed: Vec<String>,
    /// Live delete files looked at.
    pub delete_files: usize,
    /// The snapshot committed (`None`: nothing dangled, or a dry run).
    pub snapshot_id: Option<i64>,
    /// Nothing was committed.
    pub dry_run: bool,
}

/// Removes the dangling delete files of one table (see the module docs).
#[must_use = "a RemoveDanglingDeletesBuilder does nothing until awaited"]
pub struct RemoveDanglingDeletesBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    dry_run: bool,
    force: bool,
}

impl RemoveDanglingDeletesBuilder {
    /// A removal on `ident`.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            dry_run: false,
            force: false,
        }
    }

    /// Reports what dangles, committing nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Proceeds even though an unfinished migration job marks the table.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    async fn execute(self) -> Result<(Table, DanglingMetrics)> {
        guards::refuse_self_maintained(&self.handle, &self.ident, "dangling delete removal")
            .await?;
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        guards::refuse_running_migration(
            &self.ident,
            table.metadata(),
            Some(self.force),
            "removing dangling deletes",
        )?;
        if self.dry_run {
            let cache = ManifestCache::new(&table);
            let (removed, delete_files) = plan(&table, &cache).await?;
            return Ok((
                table,
                DanglingMetrics {
                    removed,
                    delete_files,
                    dry_run: true,
                    ..DanglingMetrics::default()
                },
            ));
        }
        let last: std::sync::Mutex<(Vec<String>, usize)> = std::sync::Mutex::new((Vec::new(), 0));
        let this = &self;
        let last_ref = &last;
        let (table, metrics) =
            commit_snapshot_from(&self.handle, &self.ident, Some(table), |base| async move {
                guards::refuse_running_migration(
                    &this.ident,
                    base.metadata(),
                    Some(this.force),
                    "removing dangling deletes",
                )?;
                let cache = ManifestCache::new(&base);
                let (removed, delete_files) = plan(&base, &cache).await?;
                *last_ref.lock().unwrap_or_else(|p| p.into_inner()) =
                    (removed.clone(), delete_files);
                if removed.is_empty() {
                    return Ok(None);
                }
                let properties = HashMap::from([(
                    ops_core::ops::OPERATION_PROPERTY.to_string(),
                    "remove-dangling-deletes".to_string(),
                )]);
                let produced = SnapshotProducer::new(&base, &cache, Operation::Replace)
                    .remove_delete_paths(removed)
                    .properties(properties)
                    .produce()
                    .await?;
                Ok(Some(produced))
            })
            .await?;
        let (removed, delete_files) =
            std::mem::take(&mut *last.lock().unwrap_or_else(|p| p.into_inner()));
        let snapshot_id = (!removed.is_empty()).then_some(metrics.snapshot_id);
        if !removed.is_empty() {
            tracing::info!(table = %self.ident, removed = removed.len(), "dangling delete files removed");
        }
        Ok((
            table,
            DanglingMetrics {
                removed,
                delete_files,
                snapshot_id,
                dry_run: false,
            },
        ))
    }
}

impl IntoFuture for RemoveDanglingDeletesBuilder {
    type Output = Result<(Table, DanglingMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// The dangling delete files of `table`'s current snapshot, and how many delete files it has.
async fn plan(table: &Table, cache: &ManifestCache) -> Result<(Vec<String>, usize)> {
    let md = table.metadata();
    let Some(snapshot) = md.current_snapshot() else {
        return Ok((Vec::new(), 0));
    };
    let mut deletes: Vec<LiveDelete> = Vec::new();
    each_live_delete_file(snapshot, cache, |live| {
        deletes.push(LiveDelete {
            file: live.file,
            spec_id: live.spec_id,
            sequence_number: live.sequence_number,
            file_sequence_number: live.file_sequence_number,
        });
        Ok(())
    })
    .await?;
    if deletes.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let touched: HashSet<PartitionKey> = deletes.iter().map(LiveDelete::key).collect();
    // A file-scoped position delete is kept while the file it names is live with a sequence
    // number it applies to, in whatever partition (Java indexes them by that path).
    let mut scoped: HashMap<String, Vec<(usize, bool)>> = HashMap::new();
    for (i, d) in deletes.iter().enumerate() {
        if let Some(path) = referenced_path(&d.file) {
            scoped.entry(path).or_default().push((i, false));
        }
    }
    let mut kept: Vec<LiveFile> = Vec::new();
    let mut oldest: Option<LiveFile> = None;
    each_live_data_file(snapshot, cache, |live| {
        if let Some(entries) = scoped.get_mut(live.file.file_path()) {
            for (i, referenced) in entries.iter_mut() {
                if deletes.get(*i).is_some_and(|d| {
                    live.sequence_number <= d.sequence_number
                        && live.file_sequence_number <= d.file_sequence_number
                }) {
                    *referenced = true;
                }
            }
        }
        if oldest
            .as_ref()
            .is_none_or(|o| live.sequence_number < o.sequence_number)
        {
            oldest = Some(live.clone());
        }
        if touched.contains(&live.key()) {
            kept.push(live);
        }
        Ok(())
    })
    .await?;
    kept.extend(oldest);
    let still_named: HashSet<&str> = scoped
        .values()
        .flatten()
        .filter(|(_, referenced)| *referenced)
        .filter_map(|(i, _)| deletes.get(*i).map(|d| d.file.file_path()))
        .collect();
    let mut removed = dangling(&deletes, &kept, &touched, |spec| {
        crate::compact::unpartitioned(md, spec)
    });
    removed.retain(|p| !still_named.contains(p.as_str()));
    Ok((removed, deletes.len()))
}
