//! Routing: how each source data file reaches the destination — copied byte for byte,
//! referenced in place, rewritten through the plan, or skipped.
//!
//! A Parquet data file is read by field id, so when the destination differs from the source only
//! in what Iceberg's own schema evolution expresses (renames, `int`→`long`, `float`→`double`,
//! wider decimals) and every field keeps its id, the destination reads the source's bytes exactly
//! as the reconciliation plan would have produced them.
//!
//! 1. [`route_files`] checks the table-level conditions ([`table_eligibility`]): append mode,
//!    a plan of renames and promotions only, equal field ids (nested too), the same partition
//!    spec, no name mapping, format version ≤ 2 on both sides. Any failure sends every file to
//!    [`FileRoute::Rewrite`] (or is an error for [`CopyMode::Files`] / [`CopyMode::Reference`]).
//! 2. It reads the pinned snapshot's manifests and decides per live data file: Parquet only,
//!    written under the shared spec, no delete file that could apply, and the row filter decided
//!    from the file's partition values (identity columns directly, other transforms through
//!    iceberg's strict and inclusive projections; see `decide`) — true for every row (copy), for
//!    none (skip the file), or depending on the row (rewrite). A file that would be copied or
//!    referenced has its Parquet footer read (one ranged read) to confirm every top-level column
//!    carries a field id; one added without them (e.g. by `add_files`) is rewritten. The data
//!    manifests stream by as they are routed (the footers read a few at once meanwhile), and a
//!    file not copied or referenced keeps no manifest entry, only its route.
//! 3. [`route_planned`] reconciles the routes with the planned read (a file the scan pruned by
//!    its statistics is skipped) and reports them in the [`MigrationResult`].
//!
//! Executing a copy or reference route is [`copy_files`](crate::copy_files)'s (execute phase).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use iceberg::expr::{Bind, BoundPredicate, Predicate};
use iceberg::io::FileIO;
use iceberg::spec::{
    DataContentType, DataFile, DataFileFormat, ManifestContentType, PartitionSpec, Schema, Struct,
};
use iceberg::table::Table;
use ops_core::file_path::{FilePath, FilePaths};
use ops_core::ops::canonical_partition;
use ops_reconcile::ReconciliationPlan;

use super::decide::{Verdict, View, decide};
use super::eligibility::{describe_spec, same_layout, table_eligibility};
use super::read::PlannedRead;
use super::snapshot_of;
use crate::{CopyMode, FileRoute, MigrationError, MigrationResult, Result, RoutedFile, WriteMode};

/// Footers checked for field ids at once by [`route_files`].
const FOOTER_CONCURRENCY: usize = 8;

/// Bytes read from the end of a file to find its footer in one request (a larger footer
/// takes a second).
const FOOTER_GUESS_BYTES: u64 = 64 * 1024;

/// The reasons of a routing, one copy of each: most files of a table share a handful of
/// sentences, so each file holds a pointer to its reason, not its own copy.
#[derive(Debug, Default)]
pub(crate) struct Reasons(HashSet<Arc<str>>);

impl Reasons {
    /// The shared copy of `reason`.
    pub(crate) fn get(&mut self, reason: String) -> Arc<str> {
        if let Some(shared) = self.0.get(reason.as_str()) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(reason);
        self.0.insert(shared.clone());
        shared
    }
}

/// A routed file with the manifest entry it came from.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// The route and reason.
    pub routed: RoutedFile,
    /// The source manifest entry's data file (path, partition, metrics), for a file copied or
    /// referenced only: it goes with its metrics into the destination. `None` for a file
    /// rewritten or skipped, whose route needs no more than [`RoutedFile`] says — a routing of
    /// a million rewritten files does not hold a million entries (about half a KiB each).
    pub data_file: Option<Box<DataFile>>,
    /// The source partition spec the file was written under.
    pub spec_id: i32,
}

/// Every live data file of a source snapshot with its route, sorted by path.
#[derive(Debug, Clone)]
pub struct FileRouting {
    /// The mode the routes were decided under.
    pub copy_mode: CopyMode,
    /// Why no file can be copied (a table-level condition failed); `None` when files may be.
    pub ineligible: Option<String>,
    /// One entry per live data file.
    pub files: Vec<PlannedFile>,
}

impl FileRouting {
    /// The report: one [`RoutedFile`] per source file.
    pub fn report(&self) -> Vec<RoutedFile> {
        self.files.iter().map(|f| f.routed.clone()).collect()
    }

    /// The data files routed to `route`, in path order (only copied and referenced files keep
    /// theirs, see [`PlannedFile::data_file`]).
    pub fn data_files(&self, route: FileRoute) -> Vec<DataFile> {
        self.routed_to(route)
            .filter_map(|f| f.data_file.as_deref().cloned())
            .collect()
    }

    /// The files routed to `route` with their source specs, in path order (hand Copy/Reference
    /// ones to [`copy_files`](crate::copy_files)).
    pub fn planned(&self, route: FileRoute) -> Vec<PlannedFile> {
        self.routed_to(route).cloned().collect()
    }

    /// Paths of the files to read through the plan (restrict the scan's tasks to these).
    pub fn rewrite_paths(&self) -> BTreeSet<String> {
        self.routed_to(FileRoute::Rewrite)
            .map(|f| f.routed.path.to_path_string())
            .collect()
    }

    /// Number of files per route.
    pub fn count(&self, route: FileRoute) -> usize {
        self.routed_to(route).count()
    }

    /// The files routed to `route`, in path order.
    fn routed_to(&self, route: FileRoute) -> impl Iterator<Item = &PlannedFile> {
        self.files.iter().filter(move |f| f.routed.route == route)
    }
}

/// Decides the route of every live data file of `source` at `snapshot_id` (see the module docs).
///
/// `row_filter` is the migrator's unbound filter (names of the snapshot's schema). Under
/// [`CopyMode::Files`] and [`CopyMode::Reference`] a failed table-level condition is a
/// [`MigrationError::InvalidInput`] naming it; per-file conditions (a delete applies, the filter
/// is undecidable) still route that file to [`FileRoute::Rewrite`].
pub async fn route_files(
    source: &Table,
    snapshot_id: i64,
    dest: &Table,
    plan: &ReconciliationPlan,
    row_filter: Option<&Predicate>,
    write_mode: WriteMode,
    copy_mode: CopyMode,
) -> Result<FileRouting> {
    let snapshot = snapshot_of(source, snapshot_id)?;
    let ineligible = copy_ineligibility((source, dest), snapshot, (plan, write_mode, copy_mode))?;
    let mut files = Vec::new();
    route_sharing(
        (source, dest),
        snapshot,
        (row_filter, copy_mode, ineligible.as_deref()),
        &SharedPaths::default(),
        &mut |f| files.push(f),
    )
    .await?;
    files.sort_by(|a, b| a.routed.path.cmp(&b.routed.path));
    Ok(FileRouting {
        copy_mode,
        ineligible,
        files,
    })
}

/// The paths of a planned read, to hand out its copy of a path instead of a new one: a
/// routing of a million files then holds no path of its own. A path the read does not plan is
/// made with its directory shared with the others it made.
#[derive(Debug, Default)]
pub(crate) struct SharedPaths<'a> {
    paths: Vec<&'a FilePath>,
    others: std::sync::Mutex<FilePaths>,
}

impl<'a> SharedPaths<'a> {
    /// The paths of `read`'s files.
    pub(crate) fn of(read: &'a PlannedRead) -> Self {
        let mut paths: Vec<&FilePath> = read.files.iter().map(|f| &f.path).collect();
        // Already in path order but for an upsert's read (in sequence-number order).
        if !paths.is_sorted() {
            paths.sort_unstable();
        }
        paths.dedup();
        Self {
            paths,
            others: Default::default(),
        }
    }

    /// True when the read plans `path`.
    fn contains(&self, path: &FilePath) -> bool {
        self.paths.binary_search(&path).is_ok()
    }

    /// The shared copy of `path`, or a new one when the read does not plan it.
    fn get(&self, path: &str) -> FilePath {
        match self.paths.binary_search_by(|p| p.cmp_str(path)) {
            Ok(i) => self.paths[i].clone(),
            Err(_) => self
                .others
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .path(path),
        }
    }
}

/// [`route_files`] of `snapshot`, given why no file can be copied (`ineligible`, from
/// [`copy_ineligibility`]), each path shared with `paths` where it has it, handing each routed
/// file to `sink` as soon as its route is final (a file to copy once its footer is checked),
/// in no set order: a caller keeps what it needs of a million files, not a list of them.
async fn route_sharing(
    (source, dest): (&Table, &Table),
    snapshot: &iceberg::spec::SnapshotRef,
    (row_filter, copy_mode, ineligible): (Option<&Predicate>, CopyMode, Option<&str>),
    paths: &SharedPaths<'_>,
    sink: Sink<'_>,
) -> Result<()> {
    let md = source.metadata();
    let filter = match row_filter {
        Some(p) => {
            let schema = snapshot.schema(md)?;
            Some((p.clone().bind(schema.clone(), true)?.rewrite_not(), schema))
        }
        None => None,
    };

    let list = source.manifest_list_reader(snapshot).load().await?;
    let deletes = live_entries(source, &list, ManifestContentType::Deletes).await?;
    let deletes = DeleteIndex::new(deletes, |id| {
        // An unknown spec is taken as global: a delete that might apply sends files to rewrite.
        md.partition_spec_by_id(id)
            .is_none_or(|s| s.is_unpartitioned())
    });
    let dest_spec = dest.metadata().default_partition_spec().clone();
    let copy_route = match copy_mode {
        CopyMode::Reference => FileRoute::Reference,
        _ => FileRoute::Copy,
    };
    // The data manifests stream by: each file is routed as it comes and handed to the sink,
    // the footer of one to be copied is checked meanwhile (a few at once) and it is handed over
    // once checked; a file that is not copied or referenced carries only its route, not its
    // manifest entry (only a copy carries the entry over).
    let mut routed = 0usize;
    let mut reasons = Reasons::default();
    let mut footers = FooterChecks::new(source.file_io());
    for mf in list.entries() {
        if mf.content != ManifestContentType::Data {
            continue;
        }
        let mut entries = std::pin::pin!(ops_core::manifests::entries(source.file_io(), mf));
        while let Some(entry) = entries.try_next().await? {
            if !entry.is_alive() {
                continue;
            }
            let entry = Entry {
                file: entry.data_file().clone(),
                spec_id: mf.partition_spec_id,
                sequence_number: entry.sequence_number().unwrap_or(mf.sequence_number),
            };
            let planned = route_entry(
                source,
                entry,
                &dest_spec,
                filter.as_ref().map(|(p, s)| (p, s.as_ref())),
                &deletes,
                (copy_mode, ineligible, copy_route),
                (&mut reasons, paths),
            );
            routed += 1;
            if matches!(planned.routed.route, FileRoute::Copy | FileRoute::Reference) {
                footers.check(planned, &mut reasons, sink).await?;
            } else {
                sink(planned);
            }
        }
    }
    footers.finish(&mut reasons, sink).await?;
    tracing::debug!(
        source = %source.identifier(),
        files = routed,
        ineligible = ?ineligible,
        "routed source files"
    );
    Ok(())
}

/// Why no file of `source` at `snapshot` can be copied to `dest` (a table-level condition
/// fails; see [`table_eligibility`]), `None` when files may be, or never under `--copy-mode
/// rewrite`. A failed condition is an error under `--copy-mode files` and `reference`.
fn copy_ineligibility(
    (source, dest): (&Table, &Table),
    snapshot: &iceberg::spec::SnapshotRef,
    (plan, write_mode, copy_mode): (&ReconciliationPlan, WriteMode, CopyMode),
) -> Result<Option<String>> {
    let ineligible = match copy_mode {
        CopyMode::Rewrite => None,
        _ => table_eligibility(
            source,
            snapshot.schema(source.metadata())?.as_ref(),
            dest,
            plan,
            write_mode,
        )
        .err(),
    };
    if let (Some(reason), CopyMode::Files | CopyMode::Reference) = (&ineligible, copy_mode) {
        return Err(copy_refused(
            copy_mode,
            source.identifier(),
            dest.identifier(),
            reason,
        ));
    }
    Ok(ineligible)
}

/// Why a file goes to rewrite when every file does: the mode asks it, or the tables allow no
/// copy.
fn rewrite_reason(ineligible: Option<&str>) -> String {
    match ineligible {
        None => "--copy-mode rewrite decodes and re-encodes every file".to_string(),
        Some(reason) => format!("the tables do not allow a file copy: {reason}"),
    }
}

/// Routes one live data entry: `modes` is the copy mode, why the tables allow no copy (if
/// they do not) and the route a copyable file takes. A file not copied or referenced keeps no
/// manifest entry.
fn route_entry(
    source: &Table,
    entry: Entry,
    dest_spec: &PartitionSpec,
    filter: Option<(&BoundPredicate, &Schema)>,
    deletes: &DeleteIndex,
    (copy_mode, ineligible, copy_route): (CopyMode, Option<&str>, FileRoute),
    (reasons, paths): (&mut Reasons, &SharedPaths<'_>),
) -> PlannedFile {
    let (route, reason) = if copy_mode == CopyMode::Rewrite || ineligible.is_some() {
        (FileRoute::Rewrite, rewrite_reason(ineligible))
    } else {
        route_one(source, &entry, dest_spec, filter, deletes, copy_route)
    };
    let data_file = entry.file;
    let routed = RoutedFile {
        path: paths.get(data_file.file_path()),
        route,
        reason: reasons.get(reason),
        record_count: data_file.record_count(),
        file_size_in_bytes: data_file.file_size_in_bytes(),
    };
    PlannedFile {
        data_file: matches!(route, FileRoute::Copy | FileRoute::Reference)
            .then(|| Box::new(data_file)),
        routed,
        spec_id: entry.spec_id,
    }
}

/// The refusal of `--copy-mode files` or `reference` when a table-level condition fails.
pub(crate) fn copy_refused(
    copy_mode: CopyMode,
    source: &iceberg::TableIdent,
    dest: &iceberg::TableIdent,
    reason: &str,
) -> MigrationError {
    let verb = match copy_mode {
        CopyMode::Reference => "referenced from",
        _ => "copied to",
    };
    MigrationError::InvalidInput(format!(
        "--copy-mode {copy_mode}: the files of {source} cannot be {verb} {dest}: {reason}; use \
         --copy-mode auto (copy when possible, else rewrite) or --copy-mode rewrite"
    ))
}

/// Where a routing hands each file once its route is final (see [`route_sharing`]).
type Sink<'s> = &'s mut (dyn FnMut(PlannedFile) + Send);

/// Sends to rewrite each file routed to copy or reference whose Parquet footer lacks a field
/// id for a top-level column: such a file (added without a name mapping, e.g. by
/// `add_files`) is read by position or not at all, so its bytes cannot be shared. Footers are
/// read [`FOOTER_CONCURRENCY`] at once while routing goes on; a file waits here until its
/// footer is checked, then goes to the sink.
struct FooterChecks {
    io: FileIO,
    /// Spawned, so the reads go on while the manifests are decoded; aborted when dropped (an
    /// error ends the routing).
    pending: tokio::task::JoinSet<(usize, Result<Option<String>>)>,
    /// The files whose footers are being checked, by check number.
    waiting: HashMap<usize, PlannedFile>,
    next: usize,
}

impl FooterChecks {
    fn new(io: &FileIO) -> Self {
        Self {
            io: io.clone(),
            pending: tokio::task::JoinSet::new(),
            waiting: HashMap::new(),
            next: 0,
        }
    }

    /// Starts checking `file` (once [`FOOTER_CONCURRENCY`] are under way, first settles one
    /// of those).
    async fn check(
        &mut self,
        file: PlannedFile,
        reasons: &mut Reasons,
        sink: Sink<'_>,
    ) -> Result<()> {
        if self.pending.len() >= FOOTER_CONCURRENCY
            && let Some(done) = self.pending.join_next().await
        {
            self.settle(done, reasons, sink)?;
        }
        let (io, path, size) = (
            self.io.clone(),
            file.routed.path.clone(),
            file.routed.file_size_in_bytes,
        );
        let index = self.next;
        self.next += 1;
        self.waiting.insert(index, file);
        self.pending.spawn(async move {
            (
                index,
                missing_field_ids(&io, &path.to_path_string(), size).await,
            )
        });
        Ok(())
    }

    /// Settles every check still under way.
    async fn finish(mut self, reasons: &mut Reasons, sink: Sink<'_>) -> Result<()> {
        while let Some(done) = self.pending.join_next().await {
            self.settle(done, reasons, sink)?;
        }
        Ok(())
    }

    /// Applies a footer check: a file whose footer lacks field ids is rewritten, and keeps no
    /// manifest entry.
    fn settle(
        &mut self,
        done: std::result::Result<(usize, Result<Option<String>>), tokio::task::JoinError>,
        reasons: &mut Reasons,
        sink: Sink<'_>,
    ) -> Result<()> {
        let (index, verdict) = done.map_err(|e| {
            MigrationError::from(iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("a Parquet footer check stopped: {e}"),
            ))
        })?;
        let verdict = verdict?;
        if let Some(mut f) = self.waiting.remove(&index) {
            if let Some(why) = verdict {
                f.routed.route = FileRoute::Rewrite;
                f.routed.reason = reasons.get(why);
                f.data_file = None;
            }
            sink(f);
        }
        Ok(())
    }
}

/// Why the Parquet file at `path` (`size` bytes, from its manifest entry) cannot be copied for
/// want of field ids, read from its footer alone; `None` when every top-level column has one.
async fn missing_field_ids(io: &FileIO, path: &str, size: u64) -> Result<Option<String>> {
    const TAIL: u64 = 8;
    if size < TAIL + 4 {
        return Ok(Some(format!(
            "its manifest size ({size} bytes) is too small for a Parquet file"
        )));
    }
    let reader = io.new_input(path)?.reader().await?;
    let guess = size.min(FOOTER_GUESS_BYTES);
    let tail = reader.read(size - guess..size).await?;
    let Some(end) = tail.len().checked_sub(TAIL as usize) else {
        return Ok(Some("its footer could not be read".to_string()));
    };
    match &tail[end + 4..] {
        b"PAR1" => {}
        b"PARE" => {
            return Ok(Some(
                "its Parquet footer is encrypted, so its field ids cannot be checked".to_string(),
            ));
        }
        _ => {
            return Ok(Some(
                "it does not end in the Parquet magic bytes (not a Parquet file, or its \
                 manifest size is wrong)"
                    .to_string(),
            ));
        }
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&tail[end..end + 4]);
    let len = u64::from(u32::from_le_bytes(len));
    if len + TAIL > size {
        return Ok(Some(format!(
            "its footer claims {len} bytes, more than the file holds"
        )));
    }
    let owned;
    // The tail read may come back short of `guess`: only what it holds counts.
    let footer = if len + TAIL <= tail.len() as u64 {
        &tail[end - len as usize..end]
    } else {
        owned = reader.read(size - TAIL - len..size - TAIL).await?;
        &owned[..]
    };
    Ok(match top_level_field_ids(footer) {
        None => Some("its Parquet footer could not be decoded".to_string()),
        Some(columns) => {
            let missing: Vec<&str> = columns
                .iter()
                .filter(|(_, id)| id.is_none())
                .map(|(name, _)| name.as_str())
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "its Parquet schema has no field id for column(s) {} (a file added without \
                     field ids, e.g. by add_files, is read by position or name, not by id)",
                    missing
                        .iter()
                        .take(5)
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        }
    })
}

/// The top-level columns of a Parquet footer (`FileMetaData`) with their field ids; `None` when
/// it cannot be decoded. Only the schema is decoded.
fn top_level_field_ids(footer: &[u8]) -> Option<Vec<(String, Option<i32>)>> {
    let schema = parquet::file::metadata::ParquetMetaDataReader::decode_schema(footer).ok()?;
    Some(
        schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| {
                let info = f.get_basic_info();
                (info.name().to_string(), info.has_id().then(|| info.id()))
            })
            .collect(),
    )
}

/// A live manifest entry with the facts routing needs.
struct Entry {
    file: DataFile,
    spec_id: i32,
    sequence_number: i64,
}

/// The live entries of `list`'s manifests of `content`.
async fn live_entries(
    table: &Table,
    list: &iceberg::spec::ManifestList,
    content: ManifestContentType,
) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for mf in list.entries() {
        if mf.content != content {
            continue;
        }
        let mut entries = std::pin::pin!(ops_core::manifests::entries(table.file_io(), mf));
        while let Some(entry) = entries.try_next().await? {
            if entry.is_alive() {
                out.push(Entry {
                    file: entry.data_file().clone(),
                    spec_id: mf.partition_spec_id,
                    sequence_number: entry.sequence_number().unwrap_or(mf.sequence_number),
                });
            }
        }
    }
    Ok(out)
}

/// Delete files by the partition they can apply to.
struct DeleteIndex {
    /// Position and partitioned equality deletes, by (spec id, canonical partition).
    by_partition: HashMap<(i32, Struct), Vec<Entry>>,
    /// Equality deletes of an unpartitioned spec: they apply to every partition.
    global: Vec<Entry>,
}

impl DeleteIndex {
    /// `unpartitioned(spec_id)`: whether the spec has no field or only `void` ones (Java's
    /// `PartitionSpec.isUnpartitioned()`): a spec whose fields were all dropped in format
    /// version 1 still writes a tuple of NULLs, yet its equality deletes apply everywhere.
    fn new(deletes: Vec<Entry>, unpartitioned: impl Fn(i32) -> bool) -> Self {
        let mut index = Self {
            by_partition: HashMap::new(),
            global: Vec::new(),
        };
        for d in deletes {
            let global = d.file.content_type() == DataContentType::EqualityDeletes
                && (d.file.partition().fields().is_empty() || unpartitioned(d.spec_id));
            if global {
                index.global.push(d);
            } else {
                let key = (d.spec_id, canonical_partition(d.file.partition()));
                index.by_partition.entry(key).or_default().push(d);
            }
        }
        index
    }

    /// The first delete file that may apply to `data`: its partition and sequence number allow
    /// it, and for a position delete its `file_path` bounds (compared as
    /// `ops_core::ops::live_deletes::may_reference` compares them: Java writes them in UTF-16
    /// order, so a path is outside only when UTF-16 and byte order both say so).
    fn applying(&self, data: &Entry) -> Option<&Entry> {
        let key = (data.spec_id, canonical_partition(data.file.partition()));
        let path = data.file.file_path();
        self.by_partition
            .get(&key)
            .into_iter()
            .flatten()
            .chain(self.global.iter())
            .find(|d| match d.file.content_type() {
                DataContentType::PositionDeletes => {
                    d.sequence_number >= data.sequence_number
                        && d.file
                            .referenced_data_file()
                            .is_none_or(|referenced| referenced == path)
                        && ops_core::ops::live_deletes::may_reference(&d.file, path)
                }
                DataContentType::EqualityDeletes => d.sequence_number > data.sequence_number,
                DataContentType::Data => false,
            })
    }
}

fn route_one(
    source: &Table,
    entry: &Entry,
    dest_spec: &PartitionSpec,
    filter: Option<(&BoundPredicate, &Schema)>,
    deletes: &DeleteIndex,
    copy_route: FileRoute,
) -> (FileRoute, String) {
    let f = &entry.file;
    let spec = source.metadata().partition_spec_by_id(entry.spec_id);
    // The filter first: a file none of whose rows pass is skipped whatever else holds (the
    // rewrite path's scan prunes it too).
    let verdict = match (filter, spec) {
        (Some((filter, schema)), Some(spec)) => {
            Some(decide(filter, &View::new(spec, f.partition(), schema)))
        }
        _ => None,
    };
    if verdict == Some(Verdict::NoRow) {
        return (
            FileRoute::Skip,
            "the row filter excludes every row of its partition".to_string(),
        );
    }
    if f.file_format() != DataFileFormat::Parquet {
        return (
            FileRoute::Rewrite,
            format!("a {} file (only Parquet files are copied)", f.file_format()),
        );
    }
    let Some(spec) = spec else {
        return (
            FileRoute::Rewrite,
            format!(
                "written under partition spec {}, which the source metadata lacks",
                entry.spec_id
            ),
        );
    };
    if !same_layout(spec, dest_spec) {
        return (
            FileRoute::Rewrite,
            format!(
                "written under source partition spec {} [{}], not the destination's [{}]",
                entry.spec_id,
                describe_spec(spec),
                describe_spec(dest_spec)
            ),
        );
    }
    if let Some(d) = deletes.applying(entry) {
        let kind = match d.file.content_type() {
            DataContentType::EqualityDeletes => "an equality",
            _ => "a position",
        };
        return (
            FileRoute::Rewrite,
            format!(
                "{kind} delete file applies to it ({}); its remaining rows are rewritten",
                d.file.file_path()
            ),
        );
    }
    let base = "same field ids and partition layout, no delete file applies";
    match verdict {
        None => (copy_route, format!("{base}, no row filter")),
        Some(Verdict::Undecided(why)) => (
            FileRoute::Rewrite,
            format!("the row filter is not decided by the partition values: {why}"),
        ),
        Some(_) => (
            copy_route,
            format!("{base}; the row filter holds for every row of its partition"),
        ),
    }
}

/// Routes every live source file (copy, reference, rewrite or skip) with [`route_files`] and
/// counts the routes in `result` (and lists each file there when `result.files` is to be
/// reported: not for a plan, whose tasks say it, nor for one task of it); returns the files
/// to copy or reference, by path.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn route_planned(
    source: &Table,
    snapshot_id: Option<i64>,
    dest: &Table,
    plan: &ReconciliationPlan,
    predicate: Option<&Predicate>,
    read: &PlannedRead,
    write_mode: WriteMode,
    copy_mode: CopyMode,
    (result, report): (&mut MigrationResult, bool),
) -> Result<HashMap<FilePath, PlannedFile>> {
    let Some(id) = snapshot_id else {
        return Ok(HashMap::new());
    };
    result.files.clear();
    result.files_copied = 0;
    result.files_referenced = 0;
    result.files_rewritten = 0;
    let snapshot = snapshot_of(source, id)?;
    let ineligible = copy_ineligibility((source, dest), snapshot, (plan, write_mode, copy_mode))?;
    if (copy_mode == CopyMode::Rewrite || ineligible.is_some())
        && routes_from_read(read, ineligible.as_deref(), (result, report))
    {
        tracing::info!(
            rewritten = result.files_rewritten,
            "source files routed (every file rewritten, routes from the planned read)"
        );
        return Ok(HashMap::new());
    }
    let planned = SharedPaths::of(read);
    let mut whole = HashMap::new();
    let mut routes = 0usize;
    let pruned: Arc<str> = Arc::from("no row can match the row filter (manifest statistics)");
    // Each file is counted (and listed, when reported) as it is routed: no list of every file's
    // route is held besides the report.
    let mut take = |mut f: PlannedFile| {
        let routed = &mut f.routed;
        // The scan planner also prunes by column statistics: such a file has no row to move.
        if routed.route != FileRoute::Skip && !planned.contains(&routed.path) {
            routed.route = FileRoute::Skip;
            routed.reason = pruned.clone();
            f.data_file = None;
        }
        let routed = &f.routed;
        match routed.route {
            FileRoute::Copy => result.files_copied += 1,
            FileRoute::Reference => result.files_referenced += 1,
            FileRoute::Rewrite => result.files_rewritten += 1,
            FileRoute::Skip => {}
        }
        if report {
            result.files.push(routed.clone());
        }
        if matches!(routed.route, FileRoute::Copy | FileRoute::Reference) {
            routes += 1;
            whole.insert(routed.path.clone(), f);
        }
    };
    route_sharing(
        (source, dest),
        snapshot,
        (predicate, copy_mode, ineligible.as_deref()),
        &planned,
        &mut take,
    )
    .await?;
    // Reported in path order (whatever order the routing handed them over in).
    result.files.sort_by(|a, b| a.path.cmp(&b.path));
    // Which route each file took is part of the task layout a resume must reproduce.
    tracing::info!(
        copied = result.files_copied,
        referenced = result.files_referenced,
        rewritten = result.files_rewritten,
        whole = routes,
        "source files routed"
    );
    Ok(whole)
}

/// Routes every file to rewrite from the planned read alone, when it can tell every route:
/// each file it plans is rewritten and any other live file skipped, so without a row filter
/// (the read plans every live file) or without a report (a skipped file is not counted) the
/// manifests need not be decoded a second time — at a million files, that decode is most of
/// a plan's time. False (nothing counted) when it cannot: a filtered read whose skipped files
/// are to be reported, or a file read in parts.
///
/// `read` is the whole planned read (every caller's is): a read narrowed to some files
/// ([`PlannedRead::with_files`]) is not filtered, yet does not plan every live file.
fn routes_from_read(
    read: &PlannedRead,
    ineligible: Option<&str>,
    (result, report): (&mut MigrationResult, bool),
) -> bool {
    if (report && read.filtered)
        || !read
            .files
            .iter()
            .all(|f| f.whole() && f.record_count.is_some())
    {
        return false;
    }
    // One whole-file task per live entry (a path listed live twice is read, and counted,
    // twice, as the manifests' routing counts it).
    result.files_rewritten = read.files.len() as u64;
    if report {
        let reason: Arc<str> = Arc::from(rewrite_reason(ineligible));
        result.files.reserve_exact(read.files.len());
        for f in read.files.iter() {
            result.files.push(RoutedFile {
                path: f.path.clone(),
                route: FileRoute::Rewrite,
                reason: reason.clone(),
                record_count: f.record_count.unwrap_or_default(),
                file_size_in_bytes: f.file_size,
            });
        }
        result.files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    true
}

/// The route of every file copied or referenced whole.
pub(crate) fn routes_of(
    whole: &HashMap<FilePath, PlannedFile>,
    mode: CopyMode,
) -> HashMap<FilePath, FileRoute> {
    let route = match mode {
        CopyMode::Reference => FileRoute::Reference,
        _ => FileRoute::Copy,
    };
    whole.keys().map(|p| (p.clone(), route)).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::spec::{DataFileBuilder, Datum, Transform};
    use ops_core::ops::live_deletes::DELETE_FILE_PATH_ID;

    use super::*;
    use crate::testing::{orders, region, spec};

    /// A routing hands out the planned read's copy of each path it plans (one allocation per
    /// path for the whole plan), and a fresh one for a file the read does not plan.
    #[test]
    fn routed_paths_are_the_read_s_own() {
        let task = |p: &str| PlannedRead::bare_task(p, 1, Some(1));
        // Out of path order, as an upsert's read is.
        let read = PlannedRead::of_tasks(Some(1), vec![task("s3://b/z"), task("s3://b/a")]);
        let paths = SharedPaths::of(&read);
        for f in read.files.iter() {
            let path = f.path.to_path_string();
            assert!(FilePath::ptr_eq(&paths.get(&path), &f.path), "{path}");
            assert!(paths.contains(&f.path));
        }
        // Files of one directory share it.
        assert!(FilePath::shares_dir(
            &read.files[0].path,
            &read.files[1].path
        ));
        assert!(!paths.contains(&FilePath::new("s3://b/m")));
        assert_eq!(paths.get("s3://b/m").to_path_string(), "s3://b/m");
    }

    /// A table `ns.<name>` in a SQLite catalog under `dir` with one appended file per batch of
    /// ids, and the catalog.
    async fn table_of_files(
        dir: &std::path::Path,
        name: &str,
        batches: &[&[i64]],
    ) -> std::result::Result<(ops_core::CatalogHandle, Table), Box<dyn std::error::Error>> {
        use arrow_array::{Int64Array, RecordBatch};
        let (handle, mut table) = crate::testing::id_table(dir, name).await?;
        for ids in batches {
            let batch = RecordBatch::try_new(
                ops_core::write::table_arrow_schema(&table)?,
                vec![Arc::new(Int64Array::from(ids.to_vec()))],
            )?;
            let written =
                ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
            table = ops_core::ops::append::AppendBuilder::new(&handle, table.identifier().clone())
                .add_written(written)
                .await?
                .0;
        }
        Ok((handle, table))
    }

    /// When every file is rewritten, the routes come from the planned read alone — the same
    /// routes the manifests give, without decoding them again (here: with them gone) — unless
    /// a filtered read's skipped files are to be reported, which only the manifests list.
    #[tokio::test(flavor = "multi_thread")]
    async fn routes_to_rewrite_come_from_the_read()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (_, source) = table_of_files(dir.path(), "src", &[&[1, 2], &[3], &[4, 5, 6]]).await?;
        let (_, dest) = table_of_files(dir.path(), "dst", &[]).await?;
        let id = source.metadata().current_snapshot_id();
        let schema = source.metadata().current_schema();
        let plan = ops_reconcile::SchemaReconciler::new().compute_plan(schema, schema)?;
        let read = PlannedRead::plan(&source, id, None).await?;
        let route = |read: &PlannedRead, filter: Option<Predicate>, report: bool| {
            let (source, dest, plan, read) =
                (source.clone(), dest.clone(), plan.clone(), read.clone());
            async move {
                let mut result = MigrationResult::default();
                let whole = route_planned(
                    &source,
                    id,
                    &dest,
                    &plan,
                    filter.as_ref(),
                    &read,
                    WriteMode::Append,
                    CopyMode::Rewrite,
                    (&mut result, report),
                )
                .await?;
                Ok::<_, MigrationError>((whole.len(), result))
            }
        };
        let (whole, fast) = route(&read, None, true).await?;
        assert_eq!((whole, fast.files_rewritten, fast.files.len()), (0, 3, 3));
        // The manifests' own routes, each decoded from its entry.
        let slow = route_files(
            &source,
            id.ok_or("no snapshot")?,
            &dest,
            &plan,
            None,
            WriteMode::Append,
            CopyMode::Rewrite,
        )
        .await?
        .report();
        assert_eq!(format!("{:?}", fast.files), format!("{slow:?}"));

        // Without its data manifests the routes still come from the read...
        let snapshot = source.metadata().current_snapshot().ok_or("no snapshot")?;
        let list = source.manifest_list_reader(snapshot).load().await?;
        for mf in list.entries() {
            source.file_io().delete(&mf.manifest_path).await?;
        }
        let (_, again) = route(&read, None, true).await?;
        assert_eq!(format!("{:?}", again.files), format!("{slow:?}"));
        let (_, counted) = route(&read, None, false).await?;
        assert_eq!((counted.files_rewritten, counted.files.len()), (3, 0));
        // ...but a filtered read's report lists the files it skips, which only they name.
        let filter = Predicate::Binary(iceberg::expr::BinaryExpression::new(
            iceberg::expr::PredicateOperator::GreaterThan,
            iceberg::expr::Reference::new("id"),
            iceberg::spec::Datum::long(2),
        ));
        let filtered = read.clone();
        let filtered = PlannedRead {
            filtered: true,
            ..filtered
        };
        assert!(route(&filtered, Some(filter.clone()), true).await.is_err());
        let (_, plan_only) = route(&filtered, Some(filter), false).await?;
        assert_eq!(plan_only.files_rewritten, 3);
        Ok(())
    }

    fn entry(content: DataContentType, path: &str, part: &str, seq: i64) -> Entry {
        Entry {
            file: DataFileBuilder::default()
                .content(content)
                .file_path(path.to_string())
                .file_format(DataFileFormat::Parquet)
                .partition(region(Some(part)))
                .record_count(1)
                .file_size_in_bytes(1)
                .equality_ids((content == DataContentType::EqualityDeletes).then(|| vec![1]))
                .build()
                .unwrap(),
            spec_id: 0,
            sequence_number: seq,
        }
    }

    #[test]
    fn deletes_apply_by_partition_and_sequence_number() {
        let data = entry(DataContentType::Data, "d/eu.parquet", "eu", 2);
        let pos = |part, seq| entry(DataContentType::PositionDeletes, "pos", part, seq);
        let eq = |part, seq| entry(DataContentType::EqualityDeletes, "eq", part, seq);
        let applies = |d: Entry| {
            DeleteIndex::new(vec![d], |_| false)
                .applying(&data)
                .is_some()
        };
        // A position delete of the same commit applies, an older one cannot.
        assert!(applies(pos("eu", 2)));
        assert!(!applies(pos("eu", 1)));
        assert!(!applies(pos("us", 3)));
        // An equality delete applies only to strictly older data.
        assert!(!applies(eq("eu", 2)));
        assert!(applies(eq("eu", 3)));
        let mut global = eq("eu", 3);
        global.file = DataFileBuilder::default()
            .content(DataContentType::EqualityDeletes)
            .file_path("eq-global".to_string())
            .file_format(DataFileFormat::Parquet)
            .record_count(1)
            .file_size_in_bytes(1)
            .equality_ids(Some(vec![1]))
            .build()
            .unwrap();
        assert!(applies(global));
        let mut other_file = pos("eu", 3);
        other_file.file = DataFileBuilder::default()
            .content(DataContentType::PositionDeletes)
            .file_path("pos".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(region(Some("eu")))
            .record_count(1)
            .file_size_in_bytes(1)
            .referenced_data_file(Some("d/us.parquet".to_string()))
            .build()
            .unwrap();
        assert!(!applies(other_file));
        // file_path bounds naming another file rule it out; bounds around this one do not.
        let bounded = |lo: &str, hi: &str| {
            let mut d = pos("eu", 3);
            d.file = DataFileBuilder::default()
                .content(DataContentType::PositionDeletes)
                .file_path("pos".to_string())
                .file_format(DataFileFormat::Parquet)
                .partition(region(Some("eu")))
                .record_count(1)
                .file_size_in_bytes(1)
                .lower_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(lo))]))
                .upper_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(hi))]))
                .build()
                .unwrap();
            d
        };
        assert!(!applies(bounded("d/other.parquet", "d/other.parquet")));
        assert!(applies(bounded("d/eu.parquet", "d/eu.parquet")));
        assert!(applies(bounded("d/a", "d/z")));
    }

    #[test]
    fn file_path_bounds_compare_as_java_writes_them() {
        // Java orders paths by UTF-16 code units: `d/` + U+10000 (a surrogate pair from
        // 0xD800) sorts before `d/` + U+E000, so a delete file naming both has them as its
        // lower and upper bounds. By bytes the first sorts after that upper bound: the delete
        // was thought not to apply, and the file was copied with its deleted rows.
        let data = entry(DataContentType::Data, "d/\u{10000}", "eu", 2);
        let mut d = entry(DataContentType::PositionDeletes, "pos", "eu", 3);
        d.file = DataFileBuilder::default()
            .content(DataContentType::PositionDeletes)
            .file_path("pos".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(region(Some("eu")))
            .record_count(2)
            .file_size_in_bytes(1)
            .lower_bounds(HashMap::from([(
                DELETE_FILE_PATH_ID,
                Datum::string("d/\u{10000}"),
            )]))
            .upper_bounds(HashMap::from([(
                DELETE_FILE_PATH_ID,
                Datum::string("d/\u{E000}"),
            )]))
            .build()
            .unwrap();
        assert!(
            DeleteIndex::new(vec![d], |_| false)
                .applying(&data)
                .is_some()
        );
    }

    #[test]
    fn an_equality_delete_under_an_all_void_spec_is_global() {
        let s = orders();
        let specs = HashMap::from([
            (0, spec(&s, 2, Transform::Identity)),
            (1, spec(&s, 2, Transform::Void)),
        ]);
        let data = entry(DataContentType::Data, "d/eu.parquet", "eu", 2);
        // Written after the region field was dropped (format version 1 keeps it as void): its
        // tuple is one NULL, yet it deletes from every partition.
        let mut eq = entry(DataContentType::EqualityDeletes, "eq", "eu", 3);
        eq.spec_id = 1;
        eq.file = DataFileBuilder::default()
            .content(DataContentType::EqualityDeletes)
            .file_path("eq-void".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(region(None))
            .partition_spec_id(1)
            .record_count(1)
            .file_size_in_bytes(1)
            .equality_ids(Some(vec![1]))
            .build()
            .unwrap();
        let index = DeleteIndex::new(vec![eq], |id| {
            specs.get(&id).is_none_or(|s| s.is_unpartitioned())
        });
        assert!(index.applying(&data).is_some());
    }

    /// An empty Parquet file of `fields` at `path`, returning its size.
    async fn parquet_file(io: &FileIO, path: &str, fields: Vec<arrow_schema::Field>) -> u64 {
        let schema = Arc::new(arrow_schema::Schema::new(fields));
        let batch = arrow_array::RecordBatch::new_empty(schema.clone());
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let size = buf.len() as u64;
        io.new_output(path)
            .unwrap()
            .write(buf.into())
            .await
            .unwrap();
        size
    }

    fn with_id(f: arrow_schema::Field, id: i32) -> arrow_schema::Field {
        f.with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    }

    #[tokio::test]
    async fn a_file_without_field_ids_is_found_from_its_footer() {
        use arrow_schema::{DataType, Field, Fields};
        let io = FileIO::new_with_memory();
        // Nested groups Iceberg writes without ids (a list's repeated `list`) do not count.
        let nested = |ids: bool| {
            let id = |f: Field, n| if ids { with_id(f, n) } else { f };
            vec![
                id(Field::new("id", DataType::Int64, true), 1),
                id(
                    Field::new(
                        "tags",
                        DataType::List(Arc::new(id(
                            Field::new("element", DataType::Utf8, true),
                            5,
                        ))),
                        true,
                    ),
                    2,
                ),
                id(
                    Field::new(
                        "point",
                        DataType::Struct(Fields::from(vec![
                            id(Field::new("x", DataType::Float64, true), 6),
                            id(Field::new("ok", DataType::Boolean, true), 7),
                        ])),
                        true,
                    ),
                    3,
                ),
                id(Field::new("note", DataType::Utf8, true), 4),
            ]
        };
        let with = "memory:///t/with.parquet";
        let size = parquet_file(&io, with, nested(true)).await;
        assert_eq!(missing_field_ids(&io, with, size).await.unwrap(), None);

        let without = "memory:///t/without.parquet";
        let size = parquet_file(&io, without, nested(false)).await;
        let why = missing_field_ids(&io, without, size).await.unwrap();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("`id`") && w.contains("`point`")),
            "{why:?}"
        );

        // One column without an id among ones with; a footer larger than the first read.
        let mut wide: Vec<Field> = (0..3000)
            .map(|i| {
                with_id(
                    Field::new(format!("column_{i:0>40}"), DataType::Int32, true),
                    i + 1,
                )
            })
            .collect();
        wide.push(Field::new("added", DataType::Int32, true));
        let path = "memory:///t/wide.parquet";
        let size = parquet_file(&io, path, wide).await;
        assert!(size > FOOTER_GUESS_BYTES, "{size}");
        let why = missing_field_ids(&io, path, size).await.unwrap();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("`added`") && !w.contains("column_")),
            "{why:?}"
        );

        // Not Parquet, or a size the manifest got wrong.
        let junk = "memory:///t/junk.parquet";
        io.new_output(junk)
            .unwrap()
            .write(vec![0u8; 64].into())
            .await
            .unwrap();
        assert!(missing_field_ids(&io, junk, 64).await.unwrap().is_some());
        assert!(missing_field_ids(&io, with, 4).await.unwrap().is_some());
    }

    /// The migrator spawns it on tokio tasks.
    #[allow(dead_code)]
    fn futures_are_send(a: &Table, b: &Table, p: &ReconciliationPlan) {
        fn send<T: Send>(_: T) {}
        send(route_files(
            a,
            1,
            b,
            p,
            None,
            WriteMode::Append,
            CopyMode::Auto,
        ));
    }

    #[test]
    fn copy_mode_parses_and_prints() {
        for m in [
            CopyMode::Auto,
            CopyMode::Rewrite,
            CopyMode::Files,
            CopyMode::Reference,
        ] {
            assert_eq!(m.to_string().parse::<CopyMode>().unwrap(), m);
        }
        let err = "copy".parse::<CopyMode>().unwrap_err().to_string();
        assert!(err.contains("auto, rewrite, files or reference"), "{err}");
        assert_eq!(serde_json::to_string(&FileRoute::Copy).unwrap(), "\"copy\"");
    }
}
