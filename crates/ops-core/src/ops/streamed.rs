//! Manifests of added data files written while the files are still arriving, for one commit
//! that lists more files than memory should hold (an import of a million files).
//!
//! [`ManifestStream`] takes the files one at a time and rolls a new manifest whenever the
//! current one reaches the table's `commit.manifest.target-size-bytes` (Java's default 8 MB):
//! only one manifest's entries are ever in memory, as Java's `RollingManifestWriter` keeps
//! them. [`StreamedManifests`] is the result, taken by
//! [`crate::ops::append::AppendBuilder::add_streamed`]: the commit then writes only the
//! manifest list and the metadata. What the commit needs of the files besides their manifests
//! is kept as totals (the snapshot summary) and, when asked for, 128-bit hashes of their paths
//! (to refuse a racing writer's add of the same file) — not the files.
//!
//! If the table changed so that the manifests no longer fit (another schema or format
//! version; the snapshot id taken), the commit reads their entries back and adds them the
//! ordinary way: memory then grows with the files, but only on that rare retry.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use iceberg::spec::{
    DataContentType, DataFile, FormatVersion, ManifestFile, ManifestWriter, PartitionSpecRef,
    SchemaRef, SnapshotSummaryCollector, StructType,
};
use iceberg::table::Table;
use uuid::Uuid;

use super::snapshot::{fit_partition, manifest_writer, metadata_dir, new_snapshot_id};
use crate::{Error, Result};

/// Java's `commit.manifest.target-size-bytes` default.
const TARGET_MANIFEST_BYTES: u64 = 8 * 1024 * 1024;
/// Bytes an entry is taken to need in the first manifest, before its written size tells.
const FIRST_ENTRY_GUESS: u64 = 1024;

/// Writes the manifests of added data files as they arrive (see the module docs).
pub struct ManifestStream {
    table: Table,
    schema: SchemaRef,
    spec: PartitionSpecRef,
    partition_type: StructType,
    snapshot_id: i64,
    prefix: String,
    target_bytes: u64,
    roll_at: usize,
    current: Option<(String, ManifestWriter)>,
    in_current: usize,
    manifests: Vec<ManifestFile>,
    written: Vec<String>,
    collector: SnapshotSummaryCollector,
    added_files: u64,
    added_records: u64,
    path_hashes: Option<HashSet<u128>>,
}

impl ManifestStream {
    /// A stream of files written (or found) under partition spec `spec_id` of `table`'s
    /// current schema, for a new snapshot id.
    pub fn new(table: &Table, spec_id: i32) -> Result<Self> {
        let md = table.metadata();
        if md.format_version() == FormatVersion::V3 {
            return Err(Error::InvalidInput(format!(
                "{} is an Iceberg v3 table; ops-core writes v1 and v2 tables",
                table.identifier()
            )));
        }
        let spec = super::snapshot::spec_by_id(table, spec_id)?;
        let schema = md.current_schema().clone();
        let partition_type = spec.partition_type(&schema)?;
        let target_bytes = md
            .properties()
            .get("commit.manifest.target-size-bytes")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|v| *v > 0)
            .unwrap_or(TARGET_MANIFEST_BYTES);
        Ok(Self {
            table: table.clone(),
            schema,
            spec,
            partition_type,
            snapshot_id: new_snapshot_id(table),
            prefix: format!("{}/{}", metadata_dir(table), Uuid::now_v7()),
            target_bytes,
            roll_at: usize::try_from(target_bytes / FIRST_ENTRY_GUESS)
                .unwrap_or(usize::MAX)
                .max(1),
            current: None,
            in_current: 0,
            manifests: Vec::new(),
            written: Vec::new(),
            collector: SnapshotSummaryCollector::default(),
            added_files: 0,
            added_records: 0,
            path_hashes: None,
        })
    }

    /// Keeps a 128-bit hash of every path, so the commit can refuse a file another writer
    /// added meanwhile ([`crate::ops::append::AppendBuilder::refuse_readded_since`]): 16 bytes
    /// a file instead of the file.
    pub fn track_paths(mut self) -> Self {
        self.path_hashes = Some(HashSet::new());
        self
    }

    /// Files added so far.
    pub fn len(&self) -> u64 {
        self.added_files
    }

    /// Whether no file was added yet.
    pub fn is_empty(&self) -> bool {
        self.added_files == 0
    }

    /// Adds a data file (its partition tuple checked against the spec); writes the current
    /// manifest out when it reached the target size.
    pub async fn add(&mut self, file: DataFile) -> Result<()> {
        if file.content_type() != DataContentType::Data {
            return Err(Error::InvalidInput(
                "only data files can be added by this operation".into(),
            ));
        }
        let file = fit_partition(&self.table, &self.spec, &self.partition_type, file)?;
        if let Some(hashes) = &mut self.path_hashes {
            hashes.insert(path_hash(file.file_path()));
        }
        self.collector
            .add_file(&file, self.schema.clone(), self.spec.clone());
        self.added_files += 1;
        self.added_records += file.record_count();
        if self.current.is_none() {
            let path = format!("{}-m{}.avro", self.prefix, self.manifests.len());
            let writer = manifest_writer(
                &self.table,
                &path,
                self.snapshot_id,
                self.schema.clone(),
                &self.spec,
            )?;
            self.written.push(path.clone());
            self.current = Some((path, writer));
        }
        if let Some((_, writer)) = &mut self.current {
            // A negative sequence number leaves it unset: inherited from the manifest list.
            writer.add_file(file, -1)?;
        }
        self.in_current += 1;
        if self.in_current >= self.roll_at {
            self.roll().await?;
        }
        Ok(())
    }

    /// Writes the current manifest out, and sizes the next by its bytes per entry.
    async fn roll(&mut self) -> Result<()> {
        let Some((_, writer)) = self.current.take() else {
            return Ok(());
        };
        let manifest = writer.write_manifest_file().await?;
        let per_entry = (manifest.manifest_length.max(1) as u64) / (self.in_current.max(1) as u64);
        self.roll_at = usize::try_from(self.target_bytes / per_entry.max(1))
            .unwrap_or(usize::MAX)
            .max(1);
        self.in_current = 0;
        self.manifests.push(manifest);
        Ok(())
    }

    /// The manifests, written; `None` when no file was added.
    pub async fn finish(mut self) -> Result<Option<StreamedManifests>> {
        if let Err(e) = self.roll().await {
            self.abort().await;
            return Err(e);
        }
        if self.manifests.is_empty() {
            return Ok(None);
        }
        let md = self.table.metadata();
        Ok(Some(StreamedManifests {
            snapshot_id: self.snapshot_id,
            schema_id: self.schema.schema_id(),
            spec_id: self.spec.spec_id(),
            format: md.format_version(),
            manifests: std::mem::take(&mut self.manifests),
            summary: self.collector.build(),
            added_files: self.added_files,
            added_records: self.added_records,
            path_hashes: self.path_hashes.take(),
            io: self.table.file_io().clone(),
        }))
    }

    /// Deletes what was written (for a stream no commit will take).
    pub async fn abort(self) {
        crate::commit::delete_quietly(self.table.file_io(), &self.written).await;
    }
}

/// The manifests a [`ManifestStream`] wrote, for one `append` commit.
#[derive(Debug, Clone)]
pub struct StreamedManifests {
    snapshot_id: i64,
    schema_id: i32,
    spec_id: i32,
    format: FormatVersion,
    manifests: Vec<ManifestFile>,
    /// The snapshot summary's `added-*` part for these files.
    summary: HashMap<String, String>,
    added_files: u64,
    added_records: u64,
    path_hashes: Option<HashSet<u128>>,
    io: iceberg::io::FileIO,
}

impl StreamedManifests {
    /// The snapshot id the manifests were written for.
    pub fn snapshot_id(&self) -> i64 {
        self.snapshot_id
    }

    /// The partition spec their files are under.
    pub fn spec_id(&self) -> i32 {
        self.spec_id
    }

    /// The manifests.
    pub fn manifests(&self) -> &[ManifestFile] {
        &self.manifests
    }

    /// Data files they list.
    pub fn added_files(&self) -> u64 {
        self.added_files
    }

    /// Rows of those files.
    pub fn added_records(&self) -> u64 {
        self.added_records
    }

    pub(crate) fn summary(&self) -> &HashMap<String, String> {
        &self.summary
    }

    /// Whether their paths were tracked ([`ManifestStream::track_paths`]).
    pub(crate) fn tracks_paths(&self) -> bool {
        self.path_hashes.is_some()
    }

    /// Whether a file at `path` is among them (by its 128-bit hash; `false` when the paths
    /// were not tracked).
    pub(crate) fn may_hold(&self, path: &str) -> bool {
        self.path_hashes
            .as_ref()
            .is_some_and(|h| h.contains(&path_hash(path)))
    }

    /// Whether a snapshot of `table`'s current version can take them as they are.
    pub(crate) fn fits(&self, table: &Table) -> bool {
        super::snapshot::still_fits(
            table,
            self.format,
            self.schema_id,
            self.spec_id,
            self.snapshot_id,
        )
    }

    /// Their files, read back from the manifests: for a table they no longer fit.
    pub(crate) async fn read_back(&self, table: &Table) -> Result<Vec<DataFile>> {
        let mut files = Vec::with_capacity(usize::try_from(self.added_files).unwrap_or(0));
        for mf in &self.manifests {
            let manifest = mf.load_manifest(table.file_io()).await?;
            let (entries, _) = manifest.into_parts();
            files.extend(entries.into_iter().map(|e| e.data_file().clone()));
        }
        Ok(files)
    }

    /// Whether a commit of them already landed in `table` (an attempt whose answer was lost):
    /// the snapshot with their id lists their first manifest. A snapshot with that id that
    /// does not is not ours: the outcome is unknown.
    pub(crate) async fn landed_in(&self, table: &Table) -> Result<bool> {
        let Some(snapshot) = table.metadata().snapshot_by_id(self.snapshot_id) else {
            return Ok(false);
        };
        let list = super::snapshot::ManifestCache::new(table)
            .manifest_list(snapshot)
            .await?;
        let first = self.manifests.first().map(|m| m.manifest_path.as_str());
        if list.iter().any(|m| Some(m.manifest_path.as_str()) == first) {
            return Ok(true);
        }
        Err(Error::CommitStateUnknown {
            table: table.identifier().to_string(),
            detail: format!(
                "snapshot {} exists but does not list the manifests written for it",
                self.snapshot_id
            ),
        })
    }

    /// Deletes the manifests unless a snapshot of `table` was made with them.
    pub async fn discard_unless_committed(&self, table: &Table) {
        if table.metadata().snapshot_by_id(self.snapshot_id).is_none() {
            self.discard().await;
        }
    }

    /// Deletes the manifests (never the data files): for manifests no commit took.
    pub async fn discard(&self) {
        let paths: Vec<String> = self
            .manifests
            .iter()
            .map(|m| m.manifest_path.clone())
            .collect();
        crate::commit::delete_quietly(&self.io, &paths).await;
    }
}

/// 128 bits of SipHash (two keys): a collision among a billion paths has odds of about 1e-21.
/// What sets of paths keep instead of the paths, where a million of them would not fit.
pub fn path_hash(path: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        path.hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// Adds `extra`'s counts (`added-data-files`, `added-records`, …) to `summary`'s: the summary
/// of a snapshot holding streamed manifests beside other changes. Non-numeric entries (per
/// partition, only under `write.summary.partition-limit`) are kept where absent.
pub(crate) fn add_counts(summary: &mut HashMap<String, String>, extra: &HashMap<String, String>) {
    for (k, v) in extra {
        match (
            summary.get(k).and_then(|s| s.parse::<u64>().ok()),
            v.parse::<u64>(),
        ) {
            (Some(a), Ok(b)) => {
                summary.insert(k.clone(), (a + b).to_string());
            }
            _ => {
                summary.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;
    use iceberg::spec::{PrimitiveType, Type};

    use super::*;
    use crate::ops::append::AppendBuilder;
    use crate::ops::append::tests::{batch, table};
    use crate::ops::evolve_schema::EvolveSchemaBuilder;
    use crate::ops::properties::PropertiesBuilder;

    /// Five one-row-pair files, written (not committed) under the table's default spec.
    async fn five_files(t: &Table) -> anyhow::Result<Vec<DataFile>> {
        let mut files = Vec::new();
        for i in 0..5 {
            let b = batch(t, vec![2 * i, 2 * i + 1])?;
            let written = crate::write::write_files(t, futures::stream::iter([Ok(b)])).await?;
            files.extend(written.files);
        }
        Ok(files)
    }

    async fn stream_of(t: &Table, files: &[DataFile]) -> anyhow::Result<StreamedManifests> {
        let mut s = ManifestStream::new(t, t.metadata().default_partition_spec_id())?.track_paths();
        for f in files {
            s.add(f.clone()).await?;
        }
        s.finish()
            .await?
            .ok_or_else(|| anyhow::anyhow!("files were added"))
    }

    /// [`table`], five files written for it and streamed (paths tracked), not committed.
    async fn streamed_fixture() -> anyhow::Result<(
        tempfile::TempDir,
        crate::CatalogHandle,
        Table,
        Vec<DataFile>,
        StreamedManifests,
    )> {
        let dir = tempfile::tempdir()?;
        let (handle, t) = table(dir.path()).await?;
        let files = five_files(&t).await?;
        let streamed = stream_of(&t, &files).await?;
        Ok((dir, handle, t, files, streamed))
    }

    async fn rows(t: &Table) -> anyhow::Result<usize> {
        let batches: Vec<arrow_array::RecordBatch> =
            t.scan().build()?.to_arrow().await?.try_collect().await?;
        Ok(batches.iter().map(|b| b.num_rows()).sum())
    }

    fn summary(t: &Table, key: &str) -> Option<String> {
        t.metadata()
            .current_snapshot()
            .and_then(|s| s.summary().additional_properties.get(key).cloned())
    }

    async fn exists(t: &Table, path: &str) -> anyhow::Result<bool> {
        Ok(t.file_io().exists(path).await?)
    }

    fn paths_of(streamed: &StreamedManifests) -> Vec<String> {
        streamed
            .manifests()
            .iter()
            .map(|m| m.manifest_path.clone())
            .collect()
    }

    async fn assert_gone(t: &Table, paths: &[String]) -> anyhow::Result<()> {
        for path in paths {
            assert!(!exists(t, path).await?, "{path} was left behind");
        }
        Ok(())
    }

    /// [`table`] with a manifest target size of one byte: every file rolls a manifest.
    async fn tiny_manifests(
        dir: &std::path::Path,
    ) -> anyhow::Result<(crate::CatalogHandle, Table)> {
        let (handle, t) = table(dir).await?;
        let t = PropertiesBuilder::new(&handle, t.identifier().clone())
            .set("commit.manifest.target-size-bytes", "1")
            .await?;
        Ok((handle, t))
    }

    /// Under a tiny target size every file rolls a manifest; the commit lists them all under
    /// the stream's snapshot id, and its summary counts what they hold.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_stream_rolls_manifests_that_commit_as_one_snapshot() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, t) = tiny_manifests(dir.path()).await?;
        let files = five_files(&t).await?;
        let streamed = stream_of(&t, &files).await?;
        assert_eq!(streamed.manifests().len(), 5, "one manifest a file");
        let id = streamed.snapshot_id();
        let (t, m) = AppendBuilder::new(&handle, t.identifier().clone())
            .add_streamed(streamed)
            .await?;
        assert_eq!((m.snapshot_id, m.added_files, m.added_records), (id, 5, 10));
        let snapshot = t
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
        assert_eq!(snapshot.snapshot_id(), id);
        let list = super::super::snapshot::ManifestCache::new(&t)
            .manifest_list(snapshot)
            .await?;
        assert_eq!(list.len(), 5);
        assert!(list.iter().all(|m| m.added_snapshot_id == id));
        assert_eq!(summary(&t, "added-data-files").as_deref(), Some("5"));
        assert_eq!(summary(&t, "added-records").as_deref(), Some("10"));
        assert_eq!(summary(&t, "total-records").as_deref(), Some("10"));
        assert_eq!(summary(&t, "total-data-files").as_deref(), Some("5"));
        assert_eq!(rows(&t).await?, 10);
        Ok(())
    }

    /// Manifests streamed before the schema changed no longer fit: their files are read back
    /// and committed under the current schema, and the streamed manifests are deleted.
    #[tokio::test(flavor = "multi_thread")]
    async fn streamed_manifests_that_no_longer_fit_are_read_back() -> anyhow::Result<()> {
        let (_dir, handle, t, _files, streamed) = streamed_fixture().await?;
        let stale = paths_of(&streamed);
        EvolveSchemaBuilder::new(&handle, t.identifier().clone())
            .add_column("note", Type::Primitive(PrimitiveType::String))
            .await?;
        let (t, m) = AppendBuilder::new(&handle, t.identifier().clone())
            .add_streamed(streamed)
            .await?;
        assert_eq!((m.added_files, m.added_records), (5, 10));
        assert_eq!(rows(&t).await?, 10);
        assert_eq!(summary(&t, "added-data-files").as_deref(), Some("5"));
        assert_gone(&t, &stale).await?;
        Ok(())
    }

    /// A retry of a commit that landed (its answer lost) finds it and adds nothing twice.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_streamed_commit_that_landed_is_not_made_twice() -> anyhow::Result<()> {
        let (_dir, handle, t, _files, streamed) = streamed_fixture().await?;
        let (landed, _) = AppendBuilder::new(&handle, t.identifier().clone())
            .add_streamed(streamed.clone())
            .await?;
        let (t2, m) = AppendBuilder::new(&handle, t.identifier().clone())
            .with_base(t)
            .add_streamed(streamed.clone())
            .await?;
        assert_eq!(m.snapshot_id, streamed.snapshot_id());
        assert_eq!(t2.metadata().snapshots().count(), 1);
        assert_eq!(rows(&landed).await?, 10);
        for m in streamed.manifests() {
            assert!(exists(&t2, &m.manifest_path).await?);
        }
        Ok(())
    }

    /// Another writer adding one of the streamed files meanwhile refuses the append (its rows
    /// would be read twice) and leaves no manifest of it behind.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_racing_add_of_a_streamed_file_refuses_the_append() -> anyhow::Result<()> {
        let (_dir, handle, t, files, streamed) = streamed_fixture().await?;
        let paths = paths_of(&streamed);
        AppendBuilder::new(&handle, t.identifier().clone())
            .with_files([files[3].clone()])
            .await?;
        let err = AppendBuilder::new(&handle, t.identifier().clone())
            .add_streamed(streamed)
            .refuse_readded_since(None)
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("the append went through"))?;
        assert!(
            matches!(err, Error::CommitConflict { .. })
                && err.to_string().contains(files[3].file_path()),
            "{err}"
        );
        assert_gone(&t, &paths).await?;
        Ok(())
    }

    /// Without tracked paths the refusal cannot be checked: the append is refused up front.
    #[tokio::test(flavor = "multi_thread")]
    async fn untracked_paths_cannot_be_checked_for_readds() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, t) = table(dir.path()).await?;
        let files = five_files(&t).await?;
        let mut s = ManifestStream::new(&t, t.metadata().default_partition_spec_id())?;
        s.add(files[0].clone()).await?;
        let streamed = s.finish().await?.ok_or_else(|| anyhow::anyhow!("a file"))?;
        let err = AppendBuilder::new(&handle, t.identifier().clone())
            .add_streamed(streamed)
            .refuse_readded_since(None)
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("the append went through"))?;
        assert!(err.to_string().contains("track_paths"), "{err}");
        Ok(())
    }

    /// An aborted stream leaves none of its manifests.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_aborted_stream_leaves_nothing() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (_handle, t) = tiny_manifests(dir.path()).await?;
        let files = five_files(&t).await?;
        let mut s = ManifestStream::new(&t, t.metadata().default_partition_spec_id())?;
        for f in &files {
            s.add(f.clone()).await?;
        }
        let written = s.written.clone();
        assert_eq!(written.len(), 5);
        s.abort().await;
        assert_gone(&t, &written).await?;
        Ok(())
    }
}
