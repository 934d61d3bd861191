//! Builds one new snapshot: which data files stay, which go, which arrive.
//!
//! 1. Carry every manifest of the parent snapshot that holds none of the removed files as is.
//! 2. Rewrite each data manifest that does, with that manifest's own schema and spec (so
//!    partition values written before a partition source column was widened keep their type):
//!    live entries stay as EXISTING (keeping their snapshot id and sequence numbers), removed
//!    ones become DELETED.
//! 3. Write one manifest of ADDED files per partition spec the files were written under
//!    (sequence number inherited from the manifest list). A file whose partition tuple does not
//!    fit its spec is a conflict, never a mislabelled entry.
//! 4. Merge small data manifests of one spec once there are `commit.manifest.min-count-to-merge`
//!    of them (Java's `ManifestMergeManager` properties and defaults), so the manifest list and
//!    a scan's planning stay flat as commits accumulate.
//! 5. Write the manifest list; compute the summary (added/deleted counts from the files, totals
//!    from the manifests' live counts and the parent's totals — iceberg keeps its own totals
//!    code private).
//! 6. Return requirements (same table, `main` still at the parent) and updates (add the
//!    snapshot, move `main`, keeping `main`'s retention settings), plus every file written, so a
//!    lost attempt leaves nothing behind.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use iceberg::spec::{
    DataContentType, DataFile, FormatVersion, Literal, MAIN_BRANCH, Manifest, ManifestContentType,
    ManifestEntry, ManifestFile, ManifestListWriter, ManifestStatus, ManifestWriter,
    ManifestWriterBuilder, Operation, PartitionSpec, PartitionSpecRef, PrimitiveLiteral,
    PrimitiveType, SchemaRef, Snapshot, SnapshotRef, SnapshotReference, SnapshotRetention,
    SnapshotSummaryCollector, Struct, Summary, TableMetadata, Type,
};
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};
use uuid::Uuid;

use super::removals::Removals;
use crate::commit::TableChange;
use crate::file_path::{FilePath, IntoFilePath};
use crate::{Error, Result};

/// A data file's identity for partition-level validation: (spec id, partition tuple), the
/// tuple canonicalised by [`canonical_partition`] so values written before and after a
/// widening of the source column compare equal.
pub type PartitionKey = (i32, Struct);

/// A live file of a snapshot, with the manifest facts needed to rewrite or match it.
#[derive(Debug, Clone)]
pub struct LiveFile {
    /// The file as its manifest entry holds it.
    pub file: DataFile,
    /// The partition spec it was written under.
    pub spec_id: i32,
    /// Its data sequence number (0 in a v1 table): which delete files can apply to it.
    pub sequence_number: i64,
    /// The sequence number of the commit that added it (its data sequence number, unless a
    /// rewrite kept an older one; that one when the manifest does not say). A position delete
    /// committed before it cannot name it: the file did not exist when the delete was written.
    pub file_sequence_number: i64,
}

impl LiveFile {
    /// Its partition, canonicalised (see [`PartitionKey`]).
    pub fn key(&self) -> PartitionKey {
        self.partition_key()
    }
}

/// What reading a live data file, grouping it by partition and matching delete files to it
/// need of its manifest entry. [`LiveFile`] (the entry itself) has it, and so does a slimmer
/// form a caller keeps for a million files: a `DataFile` is over half a KiB even without its
/// column metrics.
pub trait LiveEntry {
    /// The data file's path (borrowed where the entry holds it whole).
    fn path(&self) -> std::borrow::Cow<'_, str>;
    /// Its size in bytes.
    fn file_size(&self) -> u64;
    /// Its rows (before deletes).
    fn record_count(&self) -> u64;
    /// Its format.
    fn file_format(&self) -> iceberg::spec::DataFileFormat;
    /// Its partition tuple as the manifest holds it.
    fn partition(&self) -> &Struct;
    /// The partition spec it was written under.
    fn spec_id(&self) -> i32;
    /// Its partition, canonicalised (see [`PartitionKey`]).
    fn partition_key(&self) -> PartitionKey {
        (self.spec_id(), canonical_partition(self.partition()))
    }
}

impl LiveEntry for LiveFile {
    fn path(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self.file.file_path())
    }
    fn file_size(&self) -> u64 {
        self.file.file_size_in_bytes()
    }
    fn record_count(&self) -> u64 {
        self.file.record_count()
    }
    fn file_format(&self) -> iceberg::spec::DataFileFormat {
        self.file.file_format()
    }
    fn partition(&self) -> &Struct {
        self.file.partition()
    }
    fn spec_id(&self) -> i32 {
        self.spec_id
    }
}

/// A partition tuple with `int` values as `long` and `float` as `double`: the only promotions a
/// partition source column can take that change a partition value's Iceberg type
/// (identity/truncate of a widened column). Compare partitions in this form.
///
/// `-0.0` is held as the string `"-0.0"`: `Struct` compares doubles as `OrderedFloat`, where
/// `-0.0 == 0.0`, but Java's `PartitionSet` keeps the two partitions apart (`Double.compare`),
/// and a replace of `d=0.0` must not remove `d=-0.0`'s files. (Every NaN is one value in both.)
/// A field holds one type in every key compared, so the string meets only another `-0.0`.
pub fn canonical_partition(value: &Struct) -> Struct {
    Struct::from_iter(value.iter().map(canonical_value))
}

fn canonical_value(v: Option<&Literal>) -> Option<Literal> {
    v.map(|l| match l {
        Literal::Primitive(PrimitiveLiteral::Int(i)) => Literal::long(i64::from(*i)),
        Literal::Primitive(PrimitiveLiteral::Float(f)) => canonical_double(f64::from(f.0)),
        Literal::Primitive(PrimitiveLiteral::Double(d)) => canonical_double(d.0),
        other => other.clone(),
    })
}

fn canonical_double(d: f64) -> Literal {
    if d == 0.0 && d.is_sign_negative() {
        Literal::string("-0.0")
    } else {
        Literal::double(d)
    }
}

/// Whether a file's rows can lie in any of `partitions` (canonical keys, possibly of other
/// specs than the file's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// None of its rows can.
    No,
    /// All of its rows lie in one of them.
    Yes,
    /// Its spec cannot tell (a partition field it lacks): some rows may.
    Unknown,
}

/// Where `file` (of spec `file_spec`) lies with respect to `partitions`. A key of the file's
/// own spec compares directly; for a key of another spec, the file's partition is projected
/// field by field (same source column and transform): a projected field that differs rules the
/// key out, and a field the file's spec lacks leaves it open.
pub(crate) fn overlap(
    table: &Table,
    file_spec: i32,
    file_partition: &Struct,
    partitions: &HashSet<PartitionKey>,
) -> Result<Overlap> {
    if partitions.contains(&(file_spec, canonical_partition(file_partition))) {
        return Ok(Overlap::Yes);
    }
    let mut result = Overlap::No;
    let mut projections: HashMap<i32, Vec<Option<Option<Literal>>>> = HashMap::new();
    for (spec_id, value) in partitions {
        if *spec_id == file_spec {
            continue;
        }
        let projected = match projections.entry(*spec_id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let old = spec_by_id(table, file_spec)?;
                let target = spec_by_id(table, *spec_id)?;
                let values: Vec<Option<&Literal>> = file_partition.iter().collect();
                let p: Vec<Option<Option<Literal>>> = target
                    .fields()
                    .iter()
                    .map(|field| {
                        old.fields()
                            .iter()
                            .position(|f| {
                                f.source_id == field.source_id && f.transform == field.transform
                            })
                            .and_then(|i| values.get(i).map(|v| canonical_value(*v)))
                    })
                    .collect();
                slot.insert(p)
            }
        };
        let agrees = projected
            .iter()
            .zip(value.iter())
            .all(|(known, v)| match known {
                Some(known) => known.as_ref() == v,
                None => true,
            });
        if agrees {
            if projected.iter().all(Option::is_some) {
                return Ok(Overlap::Yes);
            }
            result = Overlap::Unknown;
        }
    }
    Ok(result)
}

/// What a produced snapshot did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotMetrics {
    /// The new snapshot.
    pub snapshot_id: i64,
    /// Data files added.
    pub added_files: u64,
    /// Data files removed.
    pub removed_files: u64,
    /// Rows in added files.
    pub added_records: u64,
    /// Rows in removed files.
    pub removed_records: u64,
}

/// Manifest lists and manifests of one table version, each held once read: validation and the
/// snapshot producer read through it. Listing a snapshot's live files ([`live_data_files_of`])
/// uses a manifest it holds but streams one it does not, without keeping it, and so does the
/// producer's rewrite of a manifest over 1 MiB that loses files: a
/// manifest of a million files is gigabytes decoded, so such a manifest may be read four times
/// in an attempt (listed; then its metadata, a search for a removed file and its rewrite, in
/// parts of about the target manifest size).
pub struct ManifestCache {
    table: Table,
    loaded: Mutex<HashMap<String, Arc<Manifest>>>,
    lists: Mutex<HashMap<String, Arc<[ManifestFile]>>>,
    lists_read: std::sync::atomic::AtomicUsize,
}

impl ManifestCache {
    /// An empty cache of `table`'s version.
    pub fn new(table: &Table) -> Self {
        Self {
            table: table.clone(),
            loaded: Mutex::new(HashMap::new()),
            lists: Mutex::new(HashMap::new()),
            lists_read: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The manifest `mf` if it was read already.
    pub fn cached(&self, mf: &ManifestFile) -> Option<Arc<Manifest>> {
        lock(&self.loaded).get(&mf.manifest_path).cloned()
    }

    /// The manifest `mf`, read once.
    pub async fn load(&self, mf: &ManifestFile) -> Result<Arc<Manifest>> {
        if let Some(m) = lock(&self.loaded).get(&mf.manifest_path) {
            return Ok(m.clone());
        }
        let manifest = Arc::new(mf.load_manifest(self.table.file_io()).await?);
        lock(&self.loaded).insert(mf.manifest_path.clone(), manifest.clone());
        Ok(manifest)
    }

    /// The manifest list of `snapshot`.
    pub async fn manifest_list(&self, snapshot: &SnapshotRef) -> Result<Arc<[ManifestFile]>> {
        if let Some(l) = lock(&self.lists).get(snapshot.manifest_list()) {
            return Ok(l.clone());
        }
        self.lists_read
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(l) = written_lists::get(snapshot.manifest_list()) {
            lock(&self.lists).insert(snapshot.manifest_list().to_string(), l.clone());
            return Ok(l);
        }
        let list: Arc<[ManifestFile]> = self
            .table
            .manifest_list_reader(snapshot)
            .load()
            .await?
            .consume_entries()
            .into_iter()
            .collect();
        lock(&self.lists).insert(snapshot.manifest_list().to_string(), list.clone());
        Ok(list)
    }

    /// How many manifest lists were fetched (from storage, or as this process wrote them).
    #[cfg(test)]
    pub(crate) fn lists_read(&self) -> usize {
        self.lists_read.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The manifest lists this process wrote last, as a reader reads them back. A migration
/// commits one batch after another, and each commit starts from the list the one before wrote:
/// reading it back from storage cost every commit a read and an Avro decode of a list that
/// grows with the table's manifests. A list is immutable once written and its path is unique
/// (a commit UUID), so what was written is what any later read returns; only v2 lists are
/// kept, whose read-back form is known exactly (`as_read`).
mod written_lists {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use iceberg::spec::{ManifestFile, UNASSIGNED_SEQUENCE_NUMBER};

    /// Lists kept: the newest few, enough for commits of a handful of tables interleaved (more
    /// in tests, where other tests' commits share the process: a test reading its list back
    /// must not find it pushed out).
    const KEPT: usize = if cfg!(test) { 256 } else { 8 };

    /// Manifests a list may have to be kept: the lists of frequent commits are short, and a
    /// long one (a table of thousands of manifests) would hold megabytes for the process's
    /// life to save one read.
    const MOST_MANIFESTS: usize = 4096;

    static LISTS: Mutex<VecDeque<(String, Arc<[ManifestFile]>)>> = Mutex::new(VecDeque::new());

    /// The list written at `path`, if this process wrote it lately.
    pub(super) fn get(path: &str) -> Option<Arc<[ManifestFile]>> {
        super::lock(&LISTS)
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, l)| l.clone())
    }

    /// Keeps the v2 list of `manifests` just written at `path` for `snapshot_id` with
    /// `sequence_number`.
    pub(super) fn remember(
        path: &str,
        manifests: &[ManifestFile],
        snapshot_id: i64,
        sequence_number: i64,
    ) {
        if manifests.len() > MOST_MANIFESTS {
            return;
        }
        let list: Arc<[ManifestFile]> = manifests
            .iter()
            .map(|m| as_read(m.clone(), snapshot_id, sequence_number))
            .collect();
        let mut lists = super::lock(&LISTS);
        if lists.len() == KEPT {
            lists.pop_front();
        }
        lists.push_back((path.to_string(), list));
    }

    /// `m` as iceberg 0.10.1 reads it back from a v2 list written for `snapshot_id` with
    /// `sequence_number`: the writer assigns the unassigned sequence numbers of the snapshot's
    /// own manifests, writes empty key metadata as none, and v2 records no first row id.
    fn as_read(mut m: ManifestFile, snapshot_id: i64, sequence_number: i64) -> ManifestFile {
        if m.added_snapshot_id == snapshot_id {
            if m.sequence_number == UNASSIGNED_SEQUENCE_NUMBER {
                m.sequence_number = sequence_number;
            }
            if m.min_sequence_number == UNASSIGNED_SEQUENCE_NUMBER {
                m.min_sequence_number = sequence_number;
            }
        }
        if m.key_metadata.as_ref().is_some_and(Vec::is_empty) {
            m.key_metadata = None;
        }
        m.first_row_id = None;
        m
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A planned snapshot, ready to commit.
pub struct Produced {
    /// The commit that adds the snapshot.
    pub change: TableChange,
    /// What the snapshot adds and removes.
    pub metrics: SnapshotMetrics,
}

/// Writes one new snapshot of a table — Java's `SnapshotProducer` with `MergingSnapshotProducer`:
/// the added files' manifests, the EXISTING/DELETED rewrites of the manifests removed files
/// were in, the manifest list and summary — ready for [`commit_snapshot_from`].
pub struct SnapshotProducer<'a> {
    table: &'a Table,
    cache: &'a ManifestCache,
    operation: Operation,
    added: Vec<(i32, DataFile)>,
    /// A manifest of added files written ahead of the commit ([`PreparedManifest`]).
    prepared: Option<&'a PreparedManifest>,
    /// Manifests of added files written as they arrived ([`super::streamed`]).
    streamed: Option<&'a super::streamed::StreamedManifests>,
    /// (Shared: a compaction hands over the paths its plan holds, not a copy of each.)
    removed: Removals,
    /// Delete files to remove (delete manifests are read only when this is not empty).
    removed_deletes: Removals,
    properties: HashMap<String, String>,
    /// The data sequence number of the added files; `None`: inherited from the new snapshot.
    data_sequence_number: Option<i64>,
}

/// A manifest of ADDED data files written before the commit, for a snapshot id chosen then:
/// a writer can prepare it beside writing the data, so the commit that takes it writes only the
/// manifest list and the metadata (Java's `AppendFiles.appendManifest` takes a manifest written
/// ahead in the same way). The manifest is exactly the one the commit would have written: same
/// entries, same snapshot id, sequence numbers inherited from the manifest list.
///
/// The commit uses it while the table's current schema, the files' partition spec and the
/// format version are those it was written under and the snapshot id is still free; otherwise
/// the files are added as if handed in alone and the prepared manifest is deleted.
#[derive(Debug, Clone)]
pub struct PreparedManifest {
    snapshot_id: i64,
    schema_id: i32,
    spec_id: i32,
    format: FormatVersion,
    manifest: ManifestFile,
    /// As written into the manifest (partition values fitted to the spec).
    files: Vec<DataFile>,
}

impl PreparedManifest {
    /// Writes the manifest of `written` (files written under spec `written.spec_id` of
    /// `table`'s current schema) for a new snapshot id; `None` when there are no files.
    pub async fn write(
        table: &Table,
        written: &crate::write::WrittenFiles,
    ) -> Result<Option<Self>> {
        if written.files.is_empty() {
            return Ok(None);
        }
        let md = table.metadata();
        let format = md.format_version();
        if format == FormatVersion::V3 {
            return Ok(None);
        }
        let spec = md
            .partition_spec_by_id(written.spec_id)
            .cloned()
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "the files were written under partition spec {} of {}, which it does not have",
                    written.spec_id,
                    table.identifier()
                ))
            })?;
        let schema = md.current_schema().clone();
        let partition_type = spec.partition_type(&schema)?;
        let snapshot_id = new_snapshot_id(table);
        let path = format!("{}/{}-m0.avro", metadata_dir(table), Uuid::now_v7());
        let mut writer = manifest_writer(table, &path, snapshot_id, schema.clone(), &spec)?;
        let mut files = Vec::with_capacity(written.files.len());
        for file in &written.files {
            let file = fit_partition(table, &spec, &partition_type, file.clone())?;
            if file.content_type() != DataContentType::Data {
                return Err(Error::InvalidInput(
                    "only data files can be added by this operation".into(),
                ));
            }
            // A negative sequence number leaves it unset: inherited from the manifest list.
            writer.add_file(file.clone(), -1)?;
            files.push(file);
        }
        let manifest = match writer.write_manifest_file().await {
            Ok(m) => m,
            Err(e) => {
                crate::commit::delete_quietly(table.file_io(), &[path]).await;
                return Err(e.into());
            }
        };
        Ok(Some(Self {
            snapshot_id,
            schema_id: schema.schema_id(),
            spec_id: written.spec_id,
            format,
            manifest,
            files,
        }))
    }

    /// Where the manifest is.
    pub fn path(&self) -> &str {
        &self.manifest.manifest_path
    }

    /// The snapshot id the manifest was written for.
    pub fn snapshot_id(&self) -> i64 {
        self.snapshot_id
    }

    /// The data files it lists.
    pub fn files(&self) -> &[DataFile] {
        &self.files
    }

    /// The partition spec its files were written under.
    pub fn spec_id(&self) -> i32 {
        self.spec_id
    }

    /// Whether a snapshot of `table`'s current version can take it as is.
    fn fits(&self, table: &Table) -> bool {
        still_fits(
            table,
            self.format,
            self.schema_id,
            self.spec_id,
            self.snapshot_id,
        )
    }

    /// Whether a commit holding this manifest already landed in `table` — an attempt whose
    /// answer was lost, retried on a base that now holds it: the snapshot with its id and the
    /// metrics that snapshot had. Java fixes one snapshot id per producer, so a re-applied
    /// append fails "snapshot already exists" rather than adding its files twice; here the
    /// landed attempt is the outcome. A snapshot with its id that does not list the manifest is
    /// not ours: the outcome is unknown, and nothing may be deleted.
    pub(crate) async fn landed_in(&self, table: &Table) -> Result<Option<SnapshotMetrics>> {
        let Some(snapshot) = table.metadata().snapshot_by_id(self.snapshot_id) else {
            return Ok(None);
        };
        let list = ManifestCache::new(table).manifest_list(snapshot).await?;
        if !list.iter().any(|m| m.manifest_path == self.path()) {
            return Err(Error::CommitStateUnknown {
                table: table.identifier().to_string(),
                detail: format!(
                    "snapshot {} exists but does not list the manifest {} that was written for \
                     it",
                    self.snapshot_id,
                    self.path()
                ),
            });
        }
        Ok(Some(SnapshotMetrics {
            snapshot_id: self.snapshot_id,
            added_files: self.files.len() as u64,
            removed_files: 0,
            added_records: self.files.iter().map(|f| f.record_count()).sum(),
            removed_records: 0,
        }))
    }

    /// Deletes the manifest unless a snapshot of `table` was made with it: for a manifest no
    /// commit took.
    pub async fn discard_unless_committed(&self, table: &Table) {
        if table.metadata().snapshot_by_id(self.snapshot_id).is_none() {
            self.discard(table).await;
        }
    }

    /// Deletes the manifest (never the data files): for a manifest no commit will take.
    pub async fn discard(&self, table: &Table) {
        crate::commit::delete_quietly(table.file_io(), &[self.path().to_string()]).await;
    }
}

/// Whether manifests written for `snapshot_id` under `format`, schema `schema_id` and spec
/// `spec_id` can go into a snapshot of `table`'s current version as they are: the same format
/// and schema, the spec still there, the snapshot id still free.
pub(crate) fn still_fits(
    table: &Table,
    format: FormatVersion,
    schema_id: i32,
    spec_id: i32,
    snapshot_id: i64,
) -> bool {
    let md = table.metadata();
    md.format_version() == format
        && md.current_schema_id() == schema_id
        && md.partition_spec_by_id(spec_id).is_some()
        && md.snapshot_by_id(snapshot_id).is_none()
}

impl<'a> SnapshotProducer<'a> {
    /// A producer of an `operation` snapshot on `table`, reading manifests through `cache`.
    pub fn new(table: &'a Table, cache: &'a ManifestCache, operation: Operation) -> Self {
        Self {
            table,
            cache,
            operation,
            added: Vec::new(),
            prepared: None,
            streamed: None,
            removed: Removals::default(),
            removed_deletes: Removals::default(),
            properties: HashMap::new(),
            data_sequence_number: None,
        }
    }

    /// Gives the added files this data sequence number instead of the new snapshot's (their
    /// file sequence number is still the new snapshot's): Java's
    /// `RewriteFiles.dataSequenceNumber`, with which a rewrite keeps the sequence number of the
    /// snapshot it read, so equality deletes committed after that snapshot still apply to the
    /// rewritten rows. Ignored for v1 tables, which have no sequence numbers.
    pub fn data_sequence_number(mut self, seq: Option<i64>) -> Self {
        self.data_sequence_number = seq;
        self
    }

    /// Files written under partition spec `spec_id`.
    pub(crate) fn add_files(
        mut self,
        spec_id: i32,
        files: impl IntoIterator<Item = DataFile>,
    ) -> Self {
        self.added.extend(files.into_iter().map(|f| (spec_id, f)));
        self
    }

    /// Files, each with the spec it was written under.
    pub fn add_files_by_spec(mut self, files: impl IntoIterator<Item = (i32, DataFile)>) -> Self {
        self.added.extend(files);
        self
    }

    /// Added files with their manifest already written: used when it fits the table, else its
    /// files are added like the others.
    pub(crate) fn add_prepared(mut self, prepared: &'a PreparedManifest) -> Self {
        if prepared.fits(self.table) {
            self.prepared = Some(prepared);
        } else {
            self.added
                .extend(prepared.files.iter().map(|f| (prepared.spec_id, f.clone())));
        }
        self
    }

    /// Added files whose manifests were written as they arrived: used as they are when they
    /// fit the table, else read back and added like the others.
    pub(crate) fn add_streamed(mut self, streamed: &'a super::streamed::StreamedManifests) -> Self {
        self.streamed = Some(streamed);
        self
    }

    /// Data files to remove, by path.
    pub fn remove_paths(mut self, paths: impl IntoIterator<Item = impl IntoFilePath>) -> Self {
        self.removed.extend(paths);
        self
    }

    /// Delete files (position or equality) to remove, e.g. those a rewrite left dangling.
    pub fn remove_delete_paths(
        mut self,
        paths: impl IntoIterator<Item = impl IntoFilePath>,
    ) -> Self {
        self.removed_deletes.extend(paths);
        self
    }

    /// Summary properties the snapshot carries besides the totals.
    pub fn properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    /// Writes the manifests and the manifest list: the change to commit and its metrics.
    pub async fn produce(self) -> Result<Produced> {
        let mut written = Vec::new();
        match self.produce_into(&mut written).await {
            Ok(mut p) => {
                p.change.written.extend(written);
                Ok(p)
            }
            Err(e) => {
                crate::commit::delete_quietly(self.table.file_io(), &written).await;
                Err(e)
            }
        }
    }

    async fn produce_into(&self, written: &mut Vec<String>) -> Result<Produced> {
        let table = self.table;
        let md = table.metadata();
        let version = md.format_version();
        if version == FormatVersion::V3 {
            return Err(Error::InvalidInput(format!(
                "{} is an Iceberg v3 table; ops-core writes v1 and v2 tables",
                table.identifier()
            )));
        }
        for (_, f) in &self.added {
            if f.content_type() != DataContentType::Data {
                return Err(Error::InvalidInput(
                    "only data files can be added by this operation".into(),
                ));
            }
        }
        let parent = md.current_snapshot().cloned();
        // Streamed manifests that fit name the snapshot id (a prepared manifest cannot come
        // with them: an append takes one or the other).
        let streamed = self.streamed.filter(|s| s.fits(table));
        let snapshot_id = match (self.prepared, streamed) {
            (Some(p), _) => p.snapshot_id,
            (None, Some(s)) => s.snapshot_id(),
            (None, None) => new_snapshot_id(table),
        };
        // Streamed manifests that no longer fit: their files, read back, are added anew.
        let mut read_back = Vec::new();
        if let Some(s) = self.streamed.filter(|_| streamed.is_none()) {
            read_back = s
                .read_back(table)
                .await?
                .into_iter()
                .map(|f| (s.spec_id(), f))
                .collect();
        }
        let sequence_number = if version == FormatVersion::V1 {
            0
        } else {
            md.next_sequence_number()
        };
        let commit_uuid = Uuid::now_v7();
        let metadata_dir = metadata_dir(table);
        let schema = md.current_schema().clone();
        let mut collector = SnapshotSummaryCollector::default();
        let mut manifests: Vec<ManifestFile> = Vec::new();
        let mut counter = 0usize;
        let mut next_path = || {
            counter += 1;
            format!("{metadata_dir}/{commit_uuid}-m{counter}.avro")
        };
        // Which removals were met, data and delete files, by position in their set.
        let mut found = [
            vec![false; self.removed.len()],
            vec![false; self.removed_deletes.len()],
        ];
        let io = table.file_io();
        let merge_target_bytes = MergePolicy::of(table)?.target_bytes;
        let mut removed_records = 0u64;

        if let Some(parent) = &parent {
            let list = self.cache.manifest_list(parent).await?;
            for mf in list.iter() {
                let (removing, met) = match mf.content {
                    ManifestContentType::Data => (&self.removed, 0),
                    ManifestContentType::Deletes => (&self.removed_deletes, 1),
                };
                if removing.is_empty() || !(mf.has_added_files() || mf.has_existing_files()) {
                    manifests.push(mf.clone());
                    continue;
                }
                // A manifest this attempt already holds is read from memory, and a small one is
                // loaded (one read: a compaction on object storage rewrites many small
                // manifests). A larger one is streamed, never held — a manifest of a million
                // files is gigabytes decoded: read for its metadata, once to find a removed
                // file and once to rewrite it.
                let cached = match self.cache.cached(mf) {
                    Some(m) => Some(m),
                    None if mf.manifest_length <= LOAD_WHOLE_BYTES => {
                        Some(self.cache.load(mf).await?)
                    }
                    None => None,
                };
                let hit = match &cached {
                    Some(m) => m
                        .entries()
                        .iter()
                        .any(|e| e.is_alive() && removing.contains(e.data_file().file_path())),
                    None => {
                        let mut entries = std::pin::pin!(crate::manifests::entries(io, mf));
                        let mut hit = false;
                        while let Some(e) = futures::TryStreamExt::try_next(&mut entries).await? {
                            if e.is_alive() && removing.contains(e.data_file().file_path()) {
                                hit = true;
                                break;
                            }
                        }
                        hit
                    }
                };
                if !hit {
                    manifests.push(mf.clone());
                    continue;
                }
                let (m_schema, m_spec) = match &cached {
                    Some(m) => manifest_schema_and_spec(m),
                    None => {
                        let meta = mf.load_metadata(io).await?;
                        (
                            meta.schema().clone(),
                            Arc::new(meta.partition_spec().clone()),
                        )
                    }
                };
                let mut entries: std::pin::Pin<
                    Box<dyn futures::Stream<Item = Result<ManifestEntry>> + Send>,
                > = match cached {
                    Some(m) => Box::pin(futures::stream::iter(
                        (0..m.entries().len()).map(move |i| Ok(m.entries()[i].as_ref().clone())),
                    )),
                    None => Box::pin(crate::manifests::entries(io, mf)),
                };
                // The writer holds its entries until it writes them: the rewrite rolls to a
                // new manifest every `roll` entries, so its memory is bounded whatever the
                // manifest's size.
                let roll = roll_entries(mf, merge_target_bytes);
                let mut writer = None;
                let mut in_writer = 0usize;
                while let Some(entry) = futures::TryStreamExt::try_next(&mut entries).await? {
                    if !entry.is_alive() {
                        continue;
                    }
                    let w = match &mut writer {
                        Some(w) => w,
                        None => {
                            let path = next_path();
                            let w = manifest_writer_for(
                                table,
                                &path,
                                snapshot_id,
                                m_schema.clone(),
                                &m_spec,
                                mf.content,
                            )?;
                            written.push(path);
                            writer.insert(w)
                        }
                    };
                    let file = entry.data_file().clone();
                    // Inherited from the manifest when the entry has none; 0 would let older
                    // equality deletes apply to the file.
                    let seq = entry.sequence_number().unwrap_or(mf.sequence_number);
                    let file_seq = entry.file_sequence_number.or(Some(seq));
                    if let Some(at) = removing.position(file.file_path()) {
                        found[met][at] = true;
                        if mf.content == ManifestContentType::Data {
                            removed_records += file.record_count();
                        }
                        collector.remove_file(&file, m_schema.clone(), m_spec.clone());
                        w.add_delete_file(file, seq, file_seq)?;
                    } else {
                        let sid = entry.snapshot_id().unwrap_or(mf.added_snapshot_id);
                        w.add_existing_file(file, sid, seq, file_seq)?;
                    }
                    in_writer += 1;
                    if in_writer == roll
                        && let Some(full) = writer.take()
                    {
                        manifests.push(full.write_manifest_file().await?);
                        in_writer = 0;
                    }
                }
                // Kept even when it holds only DELETED entries: it records this snapshot's
                // removals; the next snapshot drops it, as it holds nothing live.
                if let Some(w) = writer {
                    manifests.push(w.write_manifest_file().await?);
                }
            }
        }
        let missing =
            self.removed.unmet(&found[0]).count() + self.removed_deletes.unmet(&found[1]).count();
        if missing > 0 {
            let some: Vec<&FilePath> = (self.removed.unmet(&found[0]))
                .chain(self.removed_deletes.unmet(&found[1]))
                .take(3)
                .collect();
            return Err(Error::CommitConflict {
                table: table.identifier().to_string(),
                detail: format!(
                    "{missing} file(s) to remove are no longer live in the current snapshot \
                     (e.g. {some:?}): a concurrent commit removed them"
                ),
            });
        }
        // Manifests carried from older snapshots that hold nothing live are dropped.
        manifests.retain(|m| {
            m.added_snapshot_id == snapshot_id || m.has_added_files() || m.has_existing_files()
        });

        let merged = merge_manifests(
            table,
            self.cache,
            manifests,
            snapshot_id,
            &mut next_path,
            written,
        )
        .await?;
        let mut manifests = merged;

        let prepared_files = self.prepared.map_or(&[][..], |p| &p.files[..]);
        let added_files = (self.added.len() + prepared_files.len() + read_back.len()) as u64
            + streamed.map_or(0, |s| s.added_files());
        let added_records: u64 = self
            .added
            .iter()
            .chain(&read_back)
            .map(|(_, f)| f)
            .chain(prepared_files)
            .map(DataFile::record_count)
            .sum::<u64>()
            + streamed.map_or(0, |s| s.added_records());
        let mut by_spec: BTreeMap<i32, Vec<DataFile>> = BTreeMap::new();
        for (spec_id, file) in &self.added {
            by_spec.entry(*spec_id).or_default().push(file.clone());
        }
        for (spec_id, file) in read_back {
            by_spec.entry(spec_id).or_default().push(file);
        }
        for (spec_id, files) in by_spec {
            let spec =
                md.partition_spec_by_id(spec_id)
                    .cloned()
                    .ok_or_else(|| Error::CommitConflict {
                        table: table.identifier().to_string(),
                        detail: format!(
                            "the files were written under partition spec {spec_id}, which the \
                         table no longer has"
                        ),
                    })?;
            let partition_type = spec.partition_type(&schema)?;
            let path = next_path();
            let mut writer = manifest_writer(table, &path, snapshot_id, schema.clone(), &spec)?;
            written.push(path);
            for file in files {
                let file = fit_partition(table, &spec, &partition_type, file)?;
                collector.add_file(&file, schema.clone(), spec.clone());
                // A negative sequence number leaves it unset: inherited from the manifest list.
                let seq = match version {
                    FormatVersion::V1 => -1,
                    _ => self.data_sequence_number.unwrap_or(-1),
                };
                writer.add_file(file, seq)?;
            }
            manifests.insert(0, writer.write_manifest_file().await?);
        }
        if let Some(p) = self.prepared {
            // `fits` checked the spec and schema it was written under are the table's.
            let spec = md
                .partition_spec_by_id(p.spec_id)
                .cloned()
                .ok_or_else(|| Error::CommitConflict {
                    table: table.identifier().to_string(),
                    detail: format!(
                        "the files were written under partition spec {}, which the table no                          longer has",
                        p.spec_id
                    ),
                })?;
            for file in &p.files {
                collector.add_file(file, schema.clone(), spec.clone());
            }
            manifests.insert(0, p.manifest.clone());
        }
        if let Some(s) = streamed {
            for (i, m) in s.manifests().iter().enumerate() {
                manifests.insert(i, m.clone());
            }
        }

        let list_path = format!("{metadata_dir}/snap-{snapshot_id}-0-{commit_uuid}.avro");
        let output = table.file_io().new_output(&list_path)?;
        written.push(list_path.clone());
        let parent_id = parent.as_ref().map(|s| s.snapshot_id());
        let mut list = match version {
            FormatVersion::V1 => {
                ManifestListWriter::v1(output.writer().await?, snapshot_id, parent_id)
            }
            _ => ManifestListWriter::v2(
                output.writer().await?,
                snapshot_id,
                parent_id,
                sequence_number,
            ),
        };
        list.add_manifests(manifests.iter().cloned())?;
        list.close().await?;
        if version == FormatVersion::V2 {
            written_lists::remember(&list_path, &manifests, snapshot_id, sequence_number);
        }

        let mut summary = self.properties.clone();
        summary.extend(collector.build());
        if let Some(s) = streamed {
            super::streamed::add_counts(&mut summary, s.summary());
        }
        totals(
            self.cache,
            parent.as_ref().map(|s| s.summary()),
            &manifests,
            &mut summary,
        )
        .await?;
        let snapshot = Snapshot::builder()
            .with_snapshot_id(snapshot_id)
            .with_parent_snapshot_id(parent_id)
            .with_sequence_number(sequence_number)
            .with_timestamp_ms(now_ms(md.last_updated_ms()))
            .with_manifest_list(list_path)
            .with_summary(Summary {
                operation: self.operation.clone(),
                additional_properties: summary,
            })
            .with_schema_id(md.current_schema_id())
            .build();
        // Keep main's retention settings, as Java's SnapshotRef.builderFrom does.
        let retention = retention_for_new_snapshot(md, &snapshot);
        let change = TableChange {
            requirements: vec![
                TableRequirement::UuidMatch { uuid: md.uuid() },
                TableRequirement::RefSnapshotIdMatch {
                    r#ref: MAIN_BRANCH.to_string(),
                    snapshot_id: parent_id,
                },
            ],
            updates: vec![
                TableUpdate::AddSnapshot { snapshot },
                TableUpdate::SetSnapshotRef {
                    ref_name: MAIN_BRANCH.to_string(),
                    reference: SnapshotReference::new(snapshot_id, retention),
                },
            ],
            written: Vec::new(),
        };
        let metrics = SnapshotMetrics {
            snapshot_id,
            added_files,
            removed_files: self.removed.len() as u64,
            added_records,
            removed_records,
        };
        Ok(Produced { change, metrics })
    }
}

/// The retention settings `main` keeps when `snapshot` (new, child of the current one) becomes
/// its head. iceberg 0.10.1 keeps the refs map private, but its metadata builder's
/// `set_branch_snapshot` carries a branch's settings over (as Java's `SnapshotRef.builderFrom`)
/// and reports the resulting ref among its changes. This costs a clone of the metadata (pointers
/// to the snapshots, not copies) instead of serialising every snapshot, which made each commit's
/// cost grow with the table's history.
fn retention_for_new_snapshot(md: &TableMetadata, snapshot: &Snapshot) -> SnapshotRetention {
    md.clone()
        .into_builder(None)
        .set_branch_snapshot(snapshot.clone(), MAIN_BRANCH)
        .and_then(|b| b.build())
        .ok()
        .and_then(|built| {
            built.changes.into_iter().find_map(|u| match u {
                TableUpdate::SetSnapshotRef {
                    ref_name,
                    reference,
                } if ref_name == MAIN_BRANCH => Some(reference.retention),
                _ => None,
            })
        })
        // The builder refused the snapshot; the commit will report why. Read the settings
        // the slow way meanwhile.
        .unwrap_or_else(|| main_retention(md))
}

/// `main`'s retention settings (`min-snapshots-to-keep`, `max-snapshot-age-ms`,
/// `max-ref-age-ms`). iceberg 0.10.1 keeps the refs map private; its serialised form is public
/// (this serialises the whole metadata: use it only off the per-commit path).
pub(crate) fn main_retention(md: &iceberg::spec::TableMetadata) -> SnapshotRetention {
    serde_json::to_value(md)
        .ok()
        .and_then(|v| v.get("refs")?.get(MAIN_BRANCH).cloned())
        .and_then(|r| serde_json::from_value::<SnapshotReference>(r).ok())
        .map(|r| r.retention)
        .unwrap_or_else(|| SnapshotRetention::branch(None, None, None))
}

/// Where new manifests and manifest lists go: `write.metadata.path` or `<location>/metadata`.
pub(crate) fn metadata_dir(table: &Table) -> String {
    let md = table.metadata();
    match md.properties().get("write.metadata.path") {
        Some(p) if !p.trim().is_empty() => p.trim_end_matches('/').to_string(),
        _ => format!("{}/metadata", md.location().trim_end_matches('/')),
    }
}

fn manifest_schema_and_spec(manifest: &Manifest) -> (SchemaRef, PartitionSpecRef) {
    let meta = manifest.metadata();
    (
        meta.schema().clone(),
        Arc::new(meta.partition_spec().clone()),
    )
}

/// `file` with its partition tuple checked against `spec` (and int/float values promoted when
/// the spec's source column was widened since the file was written); a tuple that does not fit
/// is a conflict — the spec changed between writing the file and committing it.
pub(crate) fn fit_partition(
    table: &Table,
    spec: &PartitionSpec,
    partition_type: &iceberg::spec::StructType,
    file: DataFile,
) -> Result<DataFile> {
    let conflict = |why: String| Error::CommitConflict {
        table: table.identifier().to_string(),
        detail: format!(
            "{} does not fit partition spec {}: {why}; the spec changed after the file was \
             written — write it again under the current spec",
            file.file_path(),
            spec.spec_id()
        ),
    };
    let values: Vec<Option<Literal>> = file.partition().iter().map(|v| v.cloned()).collect();
    if values.len() != partition_type.fields().len() {
        return Err(conflict(format!(
            "{} partition value(s) for {} field(s)",
            values.len(),
            partition_type.fields().len()
        )));
    }
    let mut promoted = false;
    for (v, field) in values.into_iter().zip(partition_type.fields()) {
        let Type::Primitive(want) = field.field_type.as_ref() else {
            return Err(conflict(format!("field {} is not primitive", field.name)));
        };
        match v {
            None => {}
            Some(Literal::Primitive(p)) => {
                let (_, changed) = fit_literal(p, want)
                    .ok_or_else(|| conflict(format!("field {} expects {want}", field.name)))?;
                promoted |= changed;
            }
            Some(_) => return Err(conflict(format!("field {} is not primitive", field.name))),
        }
    }
    if !promoted {
        return Ok(file);
    }
    // DataFile's fields are crate-private: rebuild it through its JSON form, written with the
    // partition type its values have and read back with the spec's (int→long, float→double
    // are conversions iceberg's literal serde performs).
    let written_type = iceberg::spec::StructType::new(
        partition_type
            .fields()
            .iter()
            .zip(file.partition().iter())
            .map(|(f, v)| {
                let ty = match v {
                    Some(Literal::Primitive(PrimitiveLiteral::Int(_))) => PrimitiveType::Int,
                    Some(Literal::Primitive(PrimitiveLiteral::Float(_))) => PrimitiveType::Float,
                    _ => return f.clone(),
                };
                Arc::new(iceberg::spec::NestedField::optional(
                    f.id,
                    f.name.clone(),
                    Type::Primitive(ty),
                ))
            })
            .collect(),
    );
    let json = iceberg::spec::serialize_data_file_to_json(file, &written_type, FormatVersion::V2)?;
    Ok(iceberg::spec::deserialize_data_file_from_json(
        &json,
        spec.spec_id(),
        partition_type,
        table.metadata().current_schema(),
    )?)
}

/// `p` as a value of `want`: unchanged, or promoted int→long / float→double.
pub(crate) fn fit_literal(
    p: PrimitiveLiteral,
    want: &PrimitiveType,
) -> Option<(PrimitiveLiteral, bool)> {
    use PrimitiveLiteral as L;
    use PrimitiveType as T;
    Some(match (p, want) {
        (L::Int(i), T::Long) => (L::Long(i64::from(i)), true),
        (L::Float(f), T::Double) => (L::Double(f64::from(f.0).into()), true),
        (p @ L::Boolean(_), T::Boolean) => (p, false),
        (p @ L::Int(_), T::Int | T::Date) => (p, false),
        (
            p @ L::Long(_),
            T::Long | T::Time | T::Timestamp | T::Timestamptz | T::TimestampNs | T::TimestamptzNs,
        ) => (p, false),
        (p @ L::Float(_), T::Float) => (p, false),
        (p @ L::Double(_), T::Double) => (p, false),
        (p @ L::String(_), T::String) => (p, false),
        (p @ L::Binary(_), T::Binary | T::Fixed(_)) => (p, false),
        (p @ L::Int128(_), T::Decimal { .. }) => (p, false),
        (p @ L::UInt128(_), T::Uuid) => (p, false),
        _ => return None,
    })
}

pub(crate) fn manifest_writer(
    table: &Table,
    path: &str,
    snapshot_id: i64,
    schema: SchemaRef,
    spec: &PartitionSpecRef,
) -> Result<ManifestWriter> {
    manifest_writer_for(
        table,
        path,
        snapshot_id,
        schema,
        spec,
        ManifestContentType::Data,
    )
}

fn manifest_writer_for(
    table: &Table,
    path: &str,
    snapshot_id: i64,
    schema: SchemaRef,
    spec: &PartitionSpecRef,
    content: ManifestContentType,
) -> Result<ManifestWriter> {
    let md = table.metadata();
    if content == ManifestContentType::Deletes {
        if md.format_version() == FormatVersion::V1 {
            return Err(Error::InvalidInput(format!(
                "{} is a v1 table but lists a delete manifest; v1 tables cannot hold delete files",
                table.identifier()
            )));
        }
        return Ok(ManifestWriterBuilder::new(
            table.file_io().new_output(path)?,
            Some(snapshot_id),
            schema,
            spec.as_ref().clone(),
        )
        .build_v2_deletes());
    }
    let builder = ManifestWriterBuilder::new(
        table.file_io().new_output(path)?,
        Some(snapshot_id),
        schema,
        spec.as_ref().clone(),
    );
    Ok(match md.format_version() {
        FormatVersion::V1 => builder.build_v1(),
        _ => builder.build_v2_data(),
    })
}

/// Java's defaults for `commit.manifest-merge.enabled`, `commit.manifest.min-count-to-merge`
/// and `commit.manifest.target-size-bytes`.
struct MergePolicy {
    enabled: bool,
    min_count: usize,
    target_bytes: i64,
}

impl MergePolicy {
    fn of(table: &Table) -> Result<Self> {
        let props = table.metadata().properties();
        let parse = |key: &str| -> Result<Option<i64>> {
            props
                .get(key)
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        Error::InvalidInput(format!(
                            "table property {key}='{v}' is not a whole number; fix it with \
                             `iceberg-ops` properties or remove it"
                        ))
                    })
                })
                .transpose()
        };
        let enabled = match props.get("commit.manifest-merge.enabled") {
            None => true,
            Some(v) => !v.trim().eq_ignore_ascii_case("false"),
        };
        Ok(Self {
            enabled,
            min_count: parse("commit.manifest.min-count-to-merge")?
                .unwrap_or(100)
                .max(2) as usize,
            target_bytes: parse("commit.manifest.target-size-bytes")?.unwrap_or(8 * 1024 * 1024),
        })
    }
}

/// Entries one manifest rewritten by a removal holds: about the target manifest size
/// (`commit.manifest.target-size-bytes`) at the entry size of the manifest it rewrites, as
/// Java's `RollingManifestWriter` rolls new manifests at the target size. iceberg's manifest
/// writer holds its entries until it writes them, so without the roll a removal from the one
/// manifest of a million files held every entry of it decoded.
fn roll_entries(mf: &ManifestFile, target_bytes: i64) -> usize {
    let entries: u64 = [
        mf.added_files_count,
        mf.existing_files_count,
        mf.deleted_files_count,
    ]
    .iter()
    .map(|c| c.map_or(0, u64::from))
    .sum();
    let length = u64::try_from(mf.manifest_length).unwrap_or(0);
    let target = u64::try_from(target_bytes).unwrap_or(0);
    if entries == 0 || length == 0 || target == 0 {
        return ROLL_ENTRIES_UNKNOWN;
    }
    let per_entry = (length / entries).max(1);
    usize::try_from(target / per_entry)
        .unwrap_or(usize::MAX)
        .clamp(ROLL_ENTRIES_MIN, ROLL_ENTRIES_MAX)
}

/// The largest manifest a removal loads whole instead of streaming it (some 5,000 entries:
/// tens of MB decoded). None in ops-core's own tests, whose manifests are small: they stream
/// (the tests of the crates above load them).
const LOAD_WHOLE_BYTES: i64 = if cfg!(test) { 0 } else { 1 << 20 };

/// [`roll_entries`] when the manifest list does not tell the manifest's entry count.
const ROLL_ENTRIES_UNKNOWN: usize = 20_000;
/// The fewest entries a rolled manifest holds (a tiny target must not make one per entry).
const ROLL_ENTRIES_MIN: usize = 1_000;
/// The most (entries of a few bytes each must not make one manifest of millions).
const ROLL_ENTRIES_MAX: usize = 100_000;

/// A partition type and the manifests (index in the list, contents) whose entries have it.
type PartitionTypeGroup = (iceberg::spec::StructType, Vec<(usize, Arc<Manifest>)>);

/// Bin-packs the manifests of each spec into manifests of about the target size once a spec
/// has at least `min-count-to-merge` of them — data and delete manifests separately, with the
/// same properties (Java's `MergingSnapshotProducer` keeps a merge manager for each), never one
/// into the other. Merged entries keep their status history: live ones become EXISTING with
/// their snapshot id and sequence numbers (which decide what a delete file applies to), DELETED
/// ones are kept only when this snapshot deleted them.
async fn merge_manifests(
    table: &Table,
    cache: &ManifestCache,
    manifests: Vec<ManifestFile>,
    snapshot_id: i64,
    next_path: &mut impl FnMut() -> String,
    written: &mut Vec<String>,
) -> Result<Vec<ManifestFile>> {
    let policy = MergePolicy::of(table)?;
    if !policy.enabled {
        return Ok(manifests);
    }
    // As in Java, grouped by partition spec only (and content).
    let mut groups: BTreeMap<(bool, i32), Vec<usize>> = BTreeMap::new();
    for (i, m) in manifests.iter().enumerate() {
        let deletes = m.content == ManifestContentType::Deletes;
        groups
            .entry((deletes, m.partition_spec_id))
            .or_default()
            .push(i);
    }
    // The new snapshot's own manifest counts toward the threshold, as in Java.
    let merge_groups: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|g| g.len() + 1 >= policy.min_count)
        .collect();
    if merge_groups.is_empty() {
        return Ok(manifests);
    }
    let mut replaced: HashSet<usize> = HashSet::new();
    let mut out_merged: Vec<ManifestFile> = Vec::new();
    for group in merge_groups {
        // Pack from the oldest, so the newest manifests (the likeliest to change) form the
        // partial bin.
        let mut bins: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut size = 0i64;
        for &i in group.iter().rev() {
            let len = manifests[i].manifest_length;
            if !current.is_empty() && size + len > policy.target_bytes {
                bins.push(std::mem::take(&mut current));
                size = 0;
            }
            current.push(i);
            size += len;
        }
        if !current.is_empty() {
            bins.push(current);
        }
        for bin in bins.into_iter().filter(|b| b.len() > 1) {
            // Manifests written under different schemas share one merged manifest unless they
            // type the partition differently (a partition source column widened since): the
            // entries' partition values must have the type the merged manifest declares.
            let mut by_type: Vec<PartitionTypeGroup> = Vec::new();
            // Read a few at once: a bin is typically `min-count-to-merge` small manifests, one
            // per earlier commit, and reading them one after the other held the commit up.
            let mut loaded: Vec<Arc<Manifest>> = Vec::with_capacity(bin.len());
            for chunk in bin.chunks(crate::manifests::READ_CONCURRENCY) {
                let reads: Vec<_> = chunk.iter().map(|i| cache.load(&manifests[*i])).collect();
                loaded.extend(futures::future::try_join_all(reads).await?);
            }
            for (&i, m) in bin.iter().zip(loaded) {
                let meta = m.metadata();
                let ty = meta.partition_spec().partition_type(meta.schema())?;
                match by_type.iter_mut().find(|(t, _)| *t == ty) {
                    Some((_, members)) => members.push((i, m)),
                    None => by_type.push((ty, vec![(i, m)])),
                }
            }
            for (_, members) in by_type {
                if members.len() < 2 {
                    continue;
                }
                // Declared with the newest of their schemas (Java declares the table's current
                // one); the partition type is the same under each.
                let newest = members
                    .iter()
                    .max_by_key(|(_, m)| m.metadata().schema_id())
                    .map(|(_, m)| m.clone())
                    .ok_or_else(|| Error::InvalidInput("empty manifest bin".into()))?;
                let (schema, spec) = manifest_schema_and_spec(&newest);
                let content = manifests[members[0].0].content;
                let path = next_path();
                let mut writer =
                    manifest_writer_for(table, &path, snapshot_id, schema, &spec, content)?;
                written.push(path);
                for (i, manifest) in &members {
                    let mf = &manifests[*i];
                    for entry in manifest.entries() {
                        let seq = entry.sequence_number().unwrap_or(mf.sequence_number);
                        let file_seq = entry.file_sequence_number.or(Some(seq));
                        let sid = entry.snapshot_id().unwrap_or(mf.added_snapshot_id);
                        let file = entry.data_file().clone();
                        match entry.status() {
                            ManifestStatus::Deleted if sid == snapshot_id => {
                                writer.add_delete_file(file, seq, file_seq)?;
                            }
                            ManifestStatus::Deleted => {}
                            ManifestStatus::Added | ManifestStatus::Existing => {
                                writer.add_existing_file(file, sid, seq, file_seq)?;
                            }
                        }
                    }
                    replaced.insert(*i);
                }
                out_merged.push(writer.write_manifest_file().await?);
            }
        }
    }
    let mut result: Vec<ManifestFile> = manifests
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !replaced.contains(i))
        .map(|(_, m)| m)
        .collect();
    result.extend(out_merged);
    Ok(result)
}

/// The partition spec `spec_id` of `table`, or an error naming it.
pub fn spec_by_id(table: &Table, spec_id: i32) -> Result<PartitionSpecRef> {
    table
        .metadata()
        .partition_spec_by_id(spec_id)
        .cloned()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "{} references partition spec {spec_id}, which its metadata lacks",
                table.identifier()
            ))
        })
}

/// Every live data file of the current snapshot.
pub async fn live_data_files(table: &Table, cache: &ManifestCache) -> Result<Vec<LiveFile>> {
    match table.metadata().current_snapshot() {
        Some(snapshot) => live_data_files_of(snapshot, cache).await,
        None => Ok(Vec::new()),
    }
}

/// Every live data file of `snapshot`.
pub async fn live_data_files_of(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
) -> Result<Vec<LiveFile>> {
    live_files_of(snapshot, cache, ManifestContentType::Data).await
}

/// Every live file of `snapshot` in its manifests of `content` (data, or delete files).
pub(crate) async fn live_files_of(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    content: ManifestContentType,
) -> Result<Vec<LiveFile>> {
    let mut out = Vec::new();
    each_live_file(snapshot, cache, content, |live| {
        out.push(live);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// Hands `visit` each live data file of `snapshot`, manifest by manifest, holding none of
/// them: a planner keeps only the files it wants, and only what it needs of them.
pub async fn each_live_data_file(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    visit: impl FnMut(LiveFile) -> Result<()>,
) -> Result<()> {
    each_live_file(snapshot, cache, ManifestContentType::Data, visit).await
}

/// Hands `visit` each live delete file (position and equality) of `snapshot`, manifest by
/// manifest, holding none of them.
pub async fn each_live_delete_file(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    visit: impl FnMut(LiveFile) -> Result<()>,
) -> Result<()> {
    each_live_file(snapshot, cache, ManifestContentType::Deletes, visit).await
}

async fn each_live_file(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    content: ManifestContentType,
    mut visit: impl FnMut(LiveFile) -> Result<()>,
) -> Result<()> {
    let list = cache.manifest_list(snapshot).await?;
    for mf in list.iter() {
        if mf.content != content {
            continue;
        }
        let live = |entry: &ManifestEntry| {
            let sequence_number = entry.sequence_number().unwrap_or(mf.sequence_number);
            LiveFile {
                file: entry.data_file().clone(),
                spec_id: mf.partition_spec_id,
                sequence_number,
                file_sequence_number: entry.file_sequence_number.unwrap_or(sequence_number),
            }
        };
        // A manifest the cache holds is used; one it does not is streamed, not cached: a
        // manifest of a million files is gigabytes decoded, and only its live files are kept.
        match cache.cached(mf) {
            Some(manifest) => {
                for e in manifest.entries().iter().filter(|e| e.is_alive()) {
                    visit(live(e))?;
                }
            }
            None => {
                let mut entries =
                    std::pin::pin!(crate::manifests::entries(cache.table.file_io(), mf));
                while let Some(entry) = futures::TryStreamExt::try_next(&mut entries).await? {
                    if entry.is_alive() {
                        visit(live(&entry))?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The live delete files of the current snapshot by canonical partition, with the raw tuples
/// they are stored under.
///
/// iceberg 0.10.1's planner attaches a delete file to a data file only when their raw partition
/// tuples are equal (`DeleteFileIndex`; and their zeros' signs agree, vendor/README.md). Where
/// a partition source column was widened, a delete file and a data file of the same partition
/// can hold `int` 7 and `long` 7: the delete is then never attached, and a rewrite of that data
/// file would bring its deleted rows back.
#[derive(Debug, Default)]
pub struct UnmatchedDeletes {
    by_key: HashMap<PartitionKey, HashSet<Struct>>,
}

impl UnmatchedDeletes {
    /// Reads the current snapshot's delete manifests (none read when it has none; the
    /// manifest list comes from `cache`).
    pub async fn load(table: &Table, cache: &ManifestCache) -> Result<Self> {
        match table.metadata().current_snapshot() {
            Some(snapshot) => Self::of(snapshot, cache).await,
            None => Ok(Self::default()),
        }
    }

    async fn of(snapshot: &SnapshotRef, cache: &ManifestCache) -> Result<Self> {
        let mut out = Self::default();
        let list = cache.manifest_list(snapshot).await?;
        for mf in list.iter() {
            if mf.content != ManifestContentType::Deletes {
                continue;
            }
            let manifest = cache.load(mf).await?;
            for entry in manifest.entries() {
                if entry.is_alive() {
                    let raw = entry.data_file().partition();
                    out.by_key
                        .entry((mf.partition_spec_id, canonical_partition(raw)))
                        .or_default()
                        .insert(raw.clone());
                }
            }
        }
        Ok(out)
    }

    /// Whether a live delete file of `file`'s partition is stored under another form of its
    /// partition value, so iceberg's planner would not apply it to `file`.
    pub fn misses(&self, file: &impl LiveEntry) -> bool {
        self.by_key
            .get(&file.partition_key())
            .is_some_and(|raws| raws.iter().any(|r| r != file.partition()))
    }
}

/// The live data files of snapshot `snapshot_id` that a delete file of their partition does not
/// reach in iceberg 0.10.1's planner, because it stores the partition value in another form
/// (before or after a widening of the source column; see [`UnmatchedDeletes`]): read with
/// iceberg's reader, their deleted rows would come back. Empty for a table without such files,
/// e.g. once they were all rewritten after the widening.
pub async fn files_missing_deletes(table: &Table, snapshot_id: i64) -> Result<Vec<String>> {
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(Vec::new());
    };
    let cache = ManifestCache::new(table);
    let deletes = UnmatchedDeletes::of(snapshot, &cache).await?;
    if deletes.by_key.is_empty() {
        // No delete file: the data manifests need not be read.
        return Ok(Vec::new());
    }
    Ok(live_data_files_of(snapshot, &cache)
        .await?
        .into_iter()
        .filter(|f| deletes.misses(f))
        .map(|f| f.file.file_path().to_string())
        .collect())
}

/// What one snapshot changed: files (data or delete) it added, and data files it removed.
pub struct SnapshotChanges {
    /// Files (data or delete) the snapshot added.
    pub added: Vec<LiveFile>,
    /// Data files the snapshot removed.
    pub removed_data: Vec<LiveFile>,
}

/// The entries `snapshot_id` wrote with its own id: ADDED files and DELETED data files.
pub async fn changes_of(
    table: &Table,
    cache: &ManifestCache,
    snapshot_id: i64,
) -> Result<SnapshotChanges> {
    let mut out = SnapshotChanges {
        added: Vec::new(),
        removed_data: Vec::new(),
    };
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(out);
    };
    let list = cache.manifest_list(snapshot).await?;
    for mf in list.iter() {
        // Only manifests this snapshot wrote can hold its entries.
        if mf.added_snapshot_id != snapshot_id {
            continue;
        }
        let manifest = cache.load(mf).await?;
        for entry in manifest.entries() {
            if entry.snapshot_id() != Some(snapshot_id) {
                continue;
            }
            let sequence_number = entry.sequence_number().unwrap_or(mf.sequence_number);
            let live = LiveFile {
                file: entry.data_file().clone(),
                spec_id: mf.partition_spec_id,
                sequence_number,
                file_sequence_number: entry.file_sequence_number.unwrap_or(sequence_number),
            };
            match entry.status() {
                ManifestStatus::Added => out.added.push(live),
                ManifestStatus::Deleted if mf.content == ManifestContentType::Data => {
                    out.removed_data.push(live)
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

pub(crate) fn new_snapshot_id(table: &Table) -> i64 {
    loop {
        let (a, b) = Uuid::new_v4().as_u64_pair();
        let id = ((a ^ b) & (i64::MAX as u64)) as i64;
        if id != 0 && table.metadata().snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

/// Wall-clock milliseconds, never before the table's last update (clocks can step back).
fn now_ms(last_updated_ms: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(last_updated_ms);
    now.max(last_updated_ms + 1)
}

fn get(m: &HashMap<String, String>, k: &str) -> Option<i64> {
    m.get(k).and_then(|v| v.parse().ok())
}

/// total-* figures. Data-file and record totals come from the new manifest list's live counts
/// (exact whatever the parent recorded); the others are the parent's plus this snapshot's delta,
/// and are omitted when the parent has none to build on.
async fn totals(
    cache: &ManifestCache,
    parent: Option<&Summary>,
    manifests: &[ManifestFile],
    summary: &mut HashMap<String, String>,
) -> Result<()> {
    let mut data = (0u64, 0u64);
    let mut deletes = (0u64, 0u64);
    for m in manifests {
        let (files, rows) = live_counts(cache, m).await?;
        let acc = if m.content == ManifestContentType::Data {
            &mut data
        } else {
            &mut deletes
        };
        acc.0 += files;
        acc.1 += rows;
    }
    let ((data_files, records), (delete_files, _)) = (data, deletes);
    summary.insert("total-data-files".into(), data_files.to_string());
    summary.insert("total-records".into(), records.to_string());
    summary.insert("total-delete-files".into(), delete_files.to_string());
    let parent_props = parent.map(|s| &s.additional_properties);
    for (total, added, removed) in [
        ("total-files-size", "added-files-size", "removed-files-size"),
        (
            "total-position-deletes",
            "added-position-deletes",
            "removed-position-deletes",
        ),
        (
            "total-equality-deletes",
            "added-equality-deletes",
            "removed-equality-deletes",
        ),
    ] {
        let base = match parent_props {
            None => Some(0),
            Some(p) => get(p, total),
        };
        if let Some(base) = base {
            let v = base + get(summary, added).unwrap_or(0) - get(summary, removed).unwrap_or(0);
            summary.insert(total.into(), v.max(0).to_string());
        }
    }
    Ok(())
}

/// Live files and rows of a manifest: from the manifest list's counts, or — where a v1 writer
/// left them out (they are optional in v1) — by reading the manifest's entries, as Java's
/// `ManifestFile` readers fall back to.
async fn live_counts(cache: &ManifestCache, m: &ManifestFile) -> Result<(u64, u64)> {
    if let (Some(af), Some(ef), Some(ar), Some(er)) = (
        m.added_files_count,
        m.existing_files_count,
        m.added_rows_count,
        m.existing_rows_count,
    ) {
        return Ok((u64::from(af) + u64::from(ef), ar + er));
    }
    let manifest = cache.load(m).await?;
    Ok(manifest
        .entries()
        .iter()
        .filter(|e| e.is_alive())
        .fold((0, 0), |(f, r), e| {
            (f + 1, r + e.data_file().record_count())
        }))
}

/// Runs `plan` on the current table and commits its snapshot, re-planning on a conflict (see
/// [`crate::commit::commit_with_retry`]); `None` from `plan` means nothing to commit.
pub(crate) async fn commit_snapshot<F, Fut>(
    handle: &crate::CatalogHandle,
    ident: &iceberg::TableIdent,
    plan: F,
) -> Result<(Table, SnapshotMetrics)>
where
    F: FnMut(Table) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Produced>>>,
{
    commit_snapshot_from(handle, ident, None, plan).await
}

/// [`commit_snapshot`], first building on `known` (see
/// [`crate::commit::commit_with_retry_from`]).
pub async fn commit_snapshot_from<F, Fut>(
    handle: &crate::CatalogHandle,
    ident: &iceberg::TableIdent,
    known: Option<Table>,
    mut plan: F,
) -> Result<(Table, SnapshotMetrics)>
where
    F: FnMut(Table) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Produced>>>,
{
    let metrics = std::sync::Mutex::new(SnapshotMetrics::default());
    let table = crate::commit::commit_with_retry_from(handle, ident, known, |base| {
        let planned = plan(base);
        let metrics = &metrics;
        async move {
            let Some(Produced { change, metrics: m }) = planned.await? else {
                return Ok(None);
            };
            *metrics.lock().unwrap_or_else(|p| p.into_inner()) = m;
            Ok(Some(change))
        }
    })
    .await?;
    Ok((
        table,
        metrics.into_inner().unwrap_or_else(|p| p.into_inner()),
    ))
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{Literal, ManifestFile, ManifestList, Struct};

    use super::{canonical_partition, written_lists};

    use crate::ops::append::AppendBuilder;
    use crate::ops::append::tests::{batch, table};
    use crate::ops::properties::PropertiesBuilder;

    /// Partitions compare as Java's `PartitionSet` compares them: `-0.0` apart from `0.0`, every
    /// NaN one, a float equal to the double it widens to.
    #[test]
    fn canonical_partitions_keep_signed_zeros_apart() {
        let key = |l: Literal| canonical_partition(&Struct::from_iter([Some(l), None]));
        assert_ne!(key(Literal::double(-0.0)), key(Literal::double(0.0)));
        assert_eq!(key(Literal::double(-0.0)), key(Literal::float(-0.0)));
        assert_eq!(key(Literal::double(0.0)), key(Literal::float(0.0)));
        assert_eq!(
            key(Literal::double(f64::NAN)),
            key(Literal::float(f32::NAN))
        );
        assert_eq!(key(Literal::double(1.5)), key(Literal::float(1.5)));
        assert_eq!(key(Literal::int(7)), key(Literal::long(7)));
    }

    /// The entries of the manifests `list_path` lists that the snapshot `snapshot_id` wrote,
    /// as (path, status), sorted, with how many such manifests there are.
    async fn rewritten(
        table: &iceberg::table::Table,
        list_path: &str,
        snapshot_id: i64,
    ) -> anyhow::Result<(usize, Vec<(String, iceberg::spec::ManifestStatus)>)> {
        let bytes = table.file_io().new_input(list_path)?.read().await?;
        let list = ManifestList::parse_with_version(&bytes, table.metadata().format_version())?
            .consume_entries();
        let mut manifests = 0;
        let mut entries = Vec::new();
        for mf in list
            .into_iter()
            .filter(|m| m.added_snapshot_id == snapshot_id)
        {
            manifests += 1;
            for e in mf.load_manifest(table.file_io()).await?.entries() {
                entries.push((e.data_file().file_path().to_string(), e.status()));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok((manifests, entries))
    }

    /// Removing files from a manifest rewrites it in manifests of about the target size
    /// (here the fewest entries a rolled manifest takes, 1,000), streamed when the attempt
    /// does not hold it and from memory when it does, with the same entries either way: every
    /// other live file EXISTING, the removed ones DELETED.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_removal_rewrites_a_large_manifest_in_rolled_parts() -> anyhow::Result<()> {
        use iceberg::spec::{
            DataContentType, DataFileBuilder, DataFileFormat, ManifestStatus, Operation, Struct,
        };

        use super::{ManifestCache, SnapshotProducer, commit_snapshot_from};

        let dir = tempfile::tempdir()?;
        let (handle, table) = table(dir.path()).await?;
        let ident = table.identifier().clone();
        let table = PropertiesBuilder::new(&handle, ident.clone())
            .set("commit.manifest.target-size-bytes", "1")
            .await?;
        let path = |i: usize| format!("file://{}/data/f{i:05}.parquet", dir.path().display());
        let files: Vec<(i32, iceberg::spec::DataFile)> = (0..2_500)
            .map(|i| {
                let mut b = DataFileBuilder::default();
                b.content(DataContentType::Data)
                    .file_path(path(i))
                    .file_format(DataFileFormat::Parquet)
                    .partition(Struct::empty())
                    .record_count(1)
                    .file_size_in_bytes(10);
                Ok((0, b.build()?))
            })
            .collect::<anyhow::Result<_>>()?;
        let (table, _) = commit_snapshot_from(&handle, &ident, Some(table), |base| {
            let files = files.clone();
            async move {
                let cache = ManifestCache::new(&base);
                let produced = SnapshotProducer::new(&base, &cache, Operation::Append)
                    .add_files_by_spec(files)
                    .produce()
                    .await?;
                Ok(Some(produced))
            }
        })
        .await?;
        let removed = [path(7), path(1_500), path(2_499)];
        let mut seen = Vec::new();
        for held in [false, true] {
            let cache = ManifestCache::new(&table);
            if held {
                let snapshot = table
                    .metadata()
                    .current_snapshot()
                    .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
                for mf in cache.manifest_list(snapshot).await?.iter() {
                    cache.load(mf).await?;
                }
            }
            let produced = SnapshotProducer::new(&table, &cache, Operation::Delete)
                .remove_paths(removed.iter().cloned())
                .produce()
                .await?;
            assert_eq!(produced.metrics.removed_files, 3);
            let list = produced
                .change
                .updates
                .iter()
                .find_map(|u| match u {
                    iceberg::TableUpdate::AddSnapshot { snapshot } => {
                        Some(snapshot.manifest_list().to_string())
                    }
                    _ => None,
                })
                .ok_or_else(|| anyhow::anyhow!("a snapshot is added"))?;
            let (manifests, entries) =
                rewritten(&table, &list, produced.metrics.snapshot_id).await?;
            assert_eq!(manifests, 3, "held {held}");
            assert_eq!(entries.len(), 2_500, "held {held}");
            let deleted: Vec<&str> = entries
                .iter()
                .filter(|(_, s)| *s == ManifestStatus::Deleted)
                .map(|(p, _)| p.as_str())
                .collect();
            assert_eq!(
                deleted,
                removed.iter().map(String::as_str).collect::<Vec<_>>()
            );
            assert!(
                entries
                    .iter()
                    .all(|(p, s)| *s == ManifestStatus::Existing || removed.contains(p)),
                "held {held}"
            );
            seen.push(entries);
        }
        assert_eq!(seen[0], seen[1]);
        Ok(())
    }

    /// Every v2 manifest list a commit writes is remembered exactly as iceberg reads it back:
    /// the first append's, later ones carrying older manifests, one whose manifests were merged
    /// (EXISTING entries under older sequence numbers), and a prepared manifest's.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_remembered_list_is_the_list_read_back() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = table(dir.path()).await?;
        let ident = table.identifier().clone();
        let mut table = PropertiesBuilder::new(&handle, ident.clone())
            .set("commit.manifest.min-count-to-merge", "3")
            .await?;
        let mut last_manifests = 0;
        for (i, ids) in [vec![1, 2], vec![3], vec![4, 5], vec![6], vec![7]]
            .into_iter()
            .enumerate()
        {
            let written =
                crate::write::write_files(&table, futures::stream::iter([Ok(batch(&table, ids)?)]))
                    .await?;
            let append = AppendBuilder::new(&handle, ident.clone()).with_base(table.clone());
            let append = if i == 4 {
                let prepared = super::PreparedManifest::write(&table, &written)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("files were written"))?;
                append.add_prepared(prepared)
            } else {
                append.add_written(written)
            };
            table = append.await?.0;
            let snapshot = table
                .metadata()
                .current_snapshot()
                .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
            let remembered = written_lists::get(snapshot.manifest_list())
                .ok_or_else(|| anyhow::anyhow!("the list just written is remembered"))?;
            // Parsed here as iceberg's own reader parses it (the operations read lists only
            // through `ManifestCache`, see delete.rs).
            let bytes = table
                .file_io()
                .new_input(snapshot.manifest_list())?
                .read()
                .await?;
            let read: Vec<ManifestFile> =
                ManifestList::parse_with_version(&bytes, table.metadata().format_version())?
                    .consume_entries()
                    .into_iter()
                    .collect();
            assert_eq!(&*remembered, &read[..], "commit {i}");
            last_manifests = read.len();
        }
        // The merge ran: fewer manifests than commits.
        assert!(last_manifests < 5, "{last_manifests} manifests");
        Ok(())
    }
}
