//! Compaction: rewrite each partition's small files (and files with delete files applied to
//! them) into files near the target size, in one `replace` snapshot — Java's
//! `RewriteDataFilesAction` with its bin-pack planner and `BaseRewriteFiles`.
//!
//! 1. Refuse an S3 Tables table (it compacts its own tables) and a table an unfinished migration
//!    writes to (unless forced).
//! 2. Plan on the current snapshot: its live data files of the default partition spec (files of
//!    older specs stay as they are unless [`CompactBuilder::to_current_spec`]: then each of them
//!    is rewritten into the current spec, whatever its size), limited by `where` to the files whose statistics and partition allow a
//!    matching row, grouped by partition. A file is a candidate when it is smaller than 75% of
//!    the target (`write.target-file-size-bytes`, 512 MiB, or [`CompactBuilder::target_file_size`])
//!    or has delete files applied to it (a position delete only where its `file_path` bounds
//!    allow the file's path, as Java's `DeleteFileIndex` checks and iceberg 0.10.1's planner
//!    does not). A partition is rewritten when it holds at least
//!    `min_input_files` (5) candidates or a candidate with deletes; its candidates are bin-packed
//!    (largest first, first fit) into groups of at most the target size (sorting: the
//!    partition whole, up to [`CompactBuilder::max_file_group_size`]), and a group of one file
//!    without deletes is left alone (rewriting it alone gains nothing).
//!    The manifests stream by and only candidates are kept, as the few fields of their entries
//!    compaction uses (`CandidateFile`); where no delete file applies, a candidate's scan task
//!    is built only when its group is rewritten.
//! 3. Stream each group's rows (position and equality deletes applied, in the current schema)
//!    into new files of the same partition, rolling at the target size. Equality deletes are
//!    applied by [`ops_core::equality_deletes`] with Java's NULL-equals-NULL matching (iceberg's
//!    reader turns them into `col != v`, which drops rows whose column is NULL); an equality
//!    delete of an unpartitioned spec applies to every older file, whatever its partition. A
//!    file whose equality deletes name a nested or dropped column is left out and reported.
//!    With [`CompactBuilder::sort`] (Java's sort strategy), each group's rows are sorted first —
//!    by the table's sort order or the columns given — in bounded memory ([`crate::sort`]), and
//!    the outputs carry the table sort order they follow as their `sort_order_id`. A group's
//!    outputs roll at the target size, so a partition's files hold consecutive key ranges.
//! 4. Commit one `replace` snapshot removing the inputs and adding the outputs. The outputs keep
//!    the data sequence number of the snapshot the plan read (Java's
//!    `use-starting-sequence-number`), so an equality delete committed later still applies to
//!    the rewritten rows. The delete files of the rewritten partitions that apply to no live file
//!    once it lands go in the same commit (`crate::dangling_deletes`). Validated as `RewriteFiles` is against every commit since that
//!    snapshot: one that removed an input, or added a delete file that may apply to one (its
//!    partition, or a global one), is a conflict — nothing is committed and the new files are
//!    deleted; a concurrent append is rebased onto.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::{StreamExt, TryStreamExt};
use iceberg::TableIdent;
use iceberg::arrow::{ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::expr::{Bind, Predicate};
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::{
    DataContentType, DataFile, Literal, ManifestContentType, Operation, PartitionSpec,
    PrimitiveLiteral, PrimitiveType, SnapshotRef, Struct, StructType, Transform, Type,
};
use iceberg::table::Table;

use ops_core::equality_deletes::{EqualityDeletes, EqualityKeys};
use ops_core::file_path::{FilePath, FilePathMap, FilePathSet, FilePaths};
use ops_core::ops::delete::{RowFilter, WholeFileReads, read_schema, refuse_unsafe_rewrite, tasks};
use ops_core::ops::live_deletes::{LiveDelete, live_delete_files_of};
use ops_core::ops::producer::{ConflictCheck, SnapshotProducer, changes_of, commit_snapshot_from};
use ops_core::ops::{
    LiveEntry, LiveFile, ManifestCache, PartitionKey, UnmatchedDeletes, each_live_data_file,
    spec_by_id,
};
use ops_core::partition_tuples::PartitionTuples;
use ops_core::prune::may_match;
use ops_core::{CatalogHandle, Error, Result};

use crate::BeforeCommitHook;
use crate::dangling_deletes::DanglingScan;
use crate::guards;
use crate::sort::{ResolvedSort, SortSpec, Sorter};

pub mod job;

/// Runs a compaction elsewhere than in this process: ops-ballista's cluster runner, for
/// `maintain --cluster` (this crate cannot name it: it stands above).
pub type CompactRunner = Arc<
    dyn Fn(CompactBuilder) -> Pin<Box<dyn Future<Output = Result<(Table, CompactMetrics)>> + Send>>
        + Send
        + Sync,
>;

/// Java's `min-input-files` default.
pub const DEFAULT_MIN_INPUT_FILES: usize = 5;

/// Java's `partial-progress.max-commits` default.
pub const DEFAULT_MAX_COMMITS: usize = 10;

/// Bytes of rows a sorting rewrite holds before it spills a sorted run to disk.
pub const DEFAULT_SORT_MEMORY: usize = 128 * 1024 * 1024;

/// Java's `max-file-group-size-bytes` default (100 GiB): the most input bytes one sorting
/// rewrite takes.
pub const DEFAULT_MAX_FILE_GROUP_SIZE: u64 = 100 * 1024 * 1024 * 1024;

/// Java's `min-file-size-bytes` default: 75% of the target.
const MIN_FILE_SIZE_RATIO: f64 = 0.75;

/// One group of files rewritten together (all of one partition).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactGroup {
    /// The partition spec of the group's files.
    pub spec_id: i32,
    /// The partition, as a path (`region=eu`); empty for an unpartitioned table.
    pub partition: String,
    /// The files rewritten (each path shared with the plan, its directory with the other
    /// files': a dry run's report of a million files holds each once).
    pub input_files: Vec<FilePath>,
    /// Their size in bytes.
    pub input_bytes: u64,
    /// Their record counts (before deletes).
    pub input_rows: u64,
    /// How many of them had delete files applied.
    pub files_with_deletes: usize,
    /// With partial progress: its commit failed, nothing of it landed (its outputs are empty).
    pub failed: bool,
    /// The files written (empty on a dry run).
    pub output_files: Vec<String>,
    /// Their size in bytes.
    pub output_bytes: u64,
    /// The rows written (deletes applied; 0 on a dry run).
    pub output_rows: u64,
}

/// What a compaction did (or, for a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactMetrics {
    /// The groups rewritten.
    pub groups: Vec<CompactGroup>,
    /// The target file size used.
    pub target_file_size: u64,
    /// The (last) `replace` snapshot committed (`None`: nothing to do, or a dry run).
    pub snapshot_id: Option<i64>,
    /// Nothing was written or committed.
    pub dry_run: bool,
    /// Files left out because equality delete files apply to them that cannot be applied
    /// here (an equality column nested, or dropped since); the rest are applied.
    pub skipped_equality_delete_files: Vec<String>,
    /// Live data files of an older partition spec, left out.
    pub skipped_other_spec_files: usize,
    /// Files left out because a delete file of their partition stores the partition value in
    /// another form (before or after a widening of its source column): iceberg's reader would
    /// not apply it to them.
    pub skipped_widened_delete_files: Vec<String>,
    /// Files listed more than once (added twice) left out: their entries differ (in spec,
    /// partition or size), only some of them qualify, or the table has delete files. A commit
    /// removes a file by path, every entry of it, so a rewrite must read them all alike.
    pub skipped_duplicate_files: Vec<String>,
    /// Delete files the rewrite left applying to no live data file, removed in the same commit
    /// (Java's remove-dangling-deletes; see `crate::dangling_deletes`). Not known on a dry
    /// run: the rewritten files' paths decide it.
    pub removed_dangling_delete_files: Vec<String>,
    /// Every `replace` snapshot committed, in order: one, or one per group with
    /// [`CompactBuilder::partial_progress`].
    pub snapshot_ids: Vec<i64>,
    /// With [`CompactBuilder::partial_progress`], the groups whose rewrite or commit failed
    /// (nothing of them was committed; the other groups were).
    pub failed_groups: Vec<FailedGroup>,
    /// With [`CompactBuilder::sort`]: the order the rewritten rows were sorted in.
    pub sort_order: Option<String>,
    /// With [`CompactBuilder::sort`]: the table sort order written as the outputs'
    /// `sort_order_id` (`None` when the columns given are none of the table's orders).
    pub sort_order_id: Option<i64>,
}

/// A commit that failed under [`CompactBuilder::partial_progress`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailedGroup {
    /// The partitions of its groups, as in [`CompactGroup::partition`], comma-separated.
    pub partition: String,
    /// Why.
    pub error: String,
}

impl CompactMetrics {
    /// Files removed (or to be), failed groups apart.
    pub fn input_files(&self) -> usize {
        self.done().map(|g| g.input_files.len()).sum()
    }
    /// Bytes of the files removed, failed groups apart.
    pub fn input_bytes(&self) -> u64 {
        self.done().map(|g| g.input_bytes).sum()
    }
    fn done(&self) -> impl Iterator<Item = &CompactGroup> {
        self.groups.iter().filter(|g| !g.failed)
    }
    /// Files added.
    pub fn output_files(&self) -> usize {
        self.groups.iter().map(|g| g.output_files.len()).sum()
    }
    /// Bytes of the files added.
    pub fn output_bytes(&self) -> u64 {
        self.groups.iter().map(|g| g.output_bytes).sum()
    }
}

/// Compacts one table (see the module docs).
#[must_use = "a CompactBuilder does nothing until awaited"]
pub struct CompactBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    filter: Option<RowFilter>,
    target_file_size: Option<u64>,
    min_input_files: usize,
    dry_run: bool,
    force: bool,
    partial_progress: bool,
    max_commits: usize,
    to_current_spec: bool,
    /// Only the files these snapshots added (`None`: every file).
    added_by: Option<Vec<i64>>,
    properties: HashMap<String, String>,
    before_commit: Option<BeforeCommitHook>,
    sort: Option<SortSpec>,
    sort_memory: usize,
    max_file_group_size: u64,
    /// Exactly these files, as one group per partition whatever their sizes (a group planned
    /// by another process, rewritten by a cluster task: [`job`]).
    only_paths: Option<Arc<std::collections::HashSet<String>>>,
}

/// A candidate's manifest entry, slimmed to what compaction reads, groups and matches deletes
/// by (its commit removes files by path): the entry's `DataFile` is over half a KiB even
/// without its column metrics, this a sixth of that.
#[derive(Debug, Clone)]
struct CandidateFile {
    /// Its directory shared with the other candidates' (see [`Shared`]).
    path: FilePath,
    size: u64,
    records: u64,
    format: iceberg::spec::DataFileFormat,
    /// Shared by the candidates of a partition (see [`Shared`]).
    partition: Arc<iceberg::spec::Struct>,
    spec_id: i32,
    /// Its data sequence number: which equality deletes apply to it.
    sequence_number: i64,
}

impl CandidateFile {
    fn of(live: &LiveFile, shared: &mut Shared) -> Self {
        Self {
            path: shared.paths.path(live.file.file_path()),
            size: live.file.file_size_in_bytes(),
            records: live.file.record_count(),
            format: live.file.file_format(),
            partition: shared.partitions.shared(live.file.partition()),
            spec_id: live.spec_id,
            sequence_number: live.sequence_number,
        }
    }
}

/// What the candidates share: a table has far fewer partitions and directories than files.
#[derive(Default)]
struct Shared {
    partitions: PartitionTuples,
    paths: FilePaths,
}

impl LiveEntry for CandidateFile {
    fn path(&self) -> Cow<'_, str> {
        Cow::Owned(self.path.to_path_string())
    }
    fn file_size(&self) -> u64 {
        self.size
    }
    fn record_count(&self) -> u64 {
        self.records
    }
    fn file_format(&self) -> iceberg::spec::DataFileFormat {
        self.format
    }
    fn partition(&self) -> &iceberg::spec::Struct {
        &self.partition
    }
    fn spec_id(&self) -> i32 {
        self.spec_id
    }
}

/// A file considered, with its scan tasks (delete files attached).
struct Candidate {
    /// The file (what compaction needs of its manifest entry).
    live: CandidateFile,
    /// How it is read, when the plan says: `None` when its group reads whole files
    /// ([`Planned::whole_file_reads`]; its one task is made as the group's rewrite reads it) —
    /// boxed, so the million candidates of a table of small files do not each carry two empty
    /// lists.
    reads: Option<Box<Reads>>,
    has_deletes: bool,
}

/// A candidate's planned reads.
struct Reads {
    /// Its scan tasks, position deletes attached.
    tasks: Vec<FileScanTask>,
    /// The equality delete files that apply to it (applied by [`rewrite_group`]).
    equality: Vec<FileScanTaskDeleteFile>,
}

impl Reads {
    /// `None` for no tasks and no equality deletes.
    fn of(tasks: Vec<FileScanTask>, equality: Vec<FileScanTaskDeleteFile>) -> Option<Box<Self>> {
        (!tasks.is_empty() || !equality.is_empty()).then(|| Box::new(Self { tasks, equality }))
    }
}

impl Candidate {
    /// A file considered, before its reads are planned.
    fn planned(live: CandidateFile) -> Self {
        Self {
            live,
            reads: None,
            has_deletes: false,
        }
    }

    fn tasks(&self) -> &[FileScanTask] {
        self.reads.as_ref().map_or(&[], |r| &r.tasks)
    }

    fn equality(&self) -> &[FileScanTaskDeleteFile] {
        self.reads.as_ref().map_or(&[], |r| &r.equality)
    }

    fn into_reads(self) -> (Vec<FileScanTask>, Vec<FileScanTaskDeleteFile>) {
        self.reads
            .map_or_else(Default::default, |r| (r.tasks, r.equality))
    }
}

/// One planned group.
struct Planned {
    key: PartitionKey,
    partition: String,
    files: Vec<Candidate>,
    /// How the plan reads its files whole, when no delete file applies (the candidates then
    /// carry no tasks): the read schema and name mapping of the table as planned, whichever
    /// table a later group of a partial-progress run is rewritten on.
    whole_file_reads: Option<Arc<WholeFileReads>>,
}

impl CompactBuilder {
    /// A compaction of `ident` with Java's defaults.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            filter: None,
            target_file_size: None,
            min_input_files: DEFAULT_MIN_INPUT_FILES,
            dry_run: false,
            force: false,
            partial_progress: false,
            max_commits: DEFAULT_MAX_COMMITS,
            to_current_spec: false,
            added_by: None,
            properties: HashMap::new(),
            before_commit: None,
            sort: None,
            sort_memory: DEFAULT_SORT_MEMORY,
            max_file_group_size: DEFAULT_MAX_FILE_GROUP_SIZE,
            only_paths: None,
        }
    }

    /// Commits the groups as they are rewritten, in up to [`Self::max_commits`] `replace`
    /// snapshots of equal numbers of groups (Java's `partial-progress.enabled`): a long job
    /// lands as it goes, and a commit that fails (a conflict, an unreadable file) is reported in
    /// [`CompactMetrics::failed_groups`] while the others land. A commit whose outcome is
    /// unknown stops the job with that error. Without it the job is one commit, and any failure
    /// commits nothing.
    pub fn partial_progress(mut self, enabled: bool) -> Self {
        self.partial_progress = enabled;
        self
    }

    /// With [`Self::partial_progress`], at most this many commits (Java's
    /// `partial-progress.max-commits`, default 10).
    pub fn max_commits(mut self, n: usize) -> Self {
        self.max_commits = n;
        self
    }

    /// Also rewrites the live files of older partition specs, whatever their size, into the
    /// table's current spec (grouped by their old partition; their rows are laid out by the
    /// current one). Without it they are left as they are and counted
    /// ([`CompactMetrics::skipped_other_spec_files`]).
    pub fn to_current_spec(mut self, enabled: bool) -> Self {
        self.to_current_spec = enabled;
        self
    }

    /// Considers only the live files these snapshots added (e.g. a migration job's batches, so
    /// its compaction leaves the rest of the table as it is). Snapshots the table no longer
    /// has add nothing.
    pub fn only_files_added_by(mut self, snapshot_ids: impl IntoIterator<Item = i64>) -> Self {
        self.added_by = Some(snapshot_ids.into_iter().collect());
        self
    }

    /// Sorts each group's rows (Java's sort strategy): by the table's sort order
    /// ([`SortSpec::TableOrder`]; refused when it has none) or by the columns given.
    pub fn sort(mut self, sort: SortSpec) -> Self {
        self.sort = Some(sort);
        self
    }

    /// Bytes of rows a sorting rewrite holds in memory before it spills a sorted run to a
    /// temporary file (default [`DEFAULT_SORT_MEMORY`]).
    pub fn sort_memory(mut self, bytes: usize) -> Self {
        self.sort_memory = bytes;
        self
    }

    /// With [`Self::sort`], the most input bytes one group takes (Java's
    /// `max-file-group-size-bytes`, default [`DEFAULT_MAX_FILE_GROUP_SIZE`]): a partition's
    /// files up to this size are sorted together, so its outputs hold non-overlapping key
    /// ranges; a larger partition is split into groups of about this size.
    pub fn max_file_group_size(mut self, bytes: u64) -> Self {
        self.max_file_group_size = bytes;
        self
    }

    /// Considers only the files that may hold rows matching `filter` (columns named as in the
    /// table's current schema); every row of such a file is rewritten.
    pub fn with_filter(mut self, filter: Predicate) -> Self {
        self.filter = Some(RowFilter::Predicate(filter));
        self
    }

    /// As [`Self::with_filter`], from filter text (see [`ops_core::filter`]).
    pub fn with_filter_text(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(RowFilter::Text(filter.into()));
        self
    }

    /// The size to aim at instead of `write.target-file-size-bytes`.
    pub fn target_file_size(mut self, bytes: u64) -> Self {
        self.target_file_size = Some(bytes);
        self
    }

    /// How many candidates a partition needs to be rewritten (default 5).
    pub fn min_input_files(mut self, n: usize) -> Self {
        self.min_input_files = n;
        self
    }

    /// Plans and reports, writing and committing nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Proceeds even though an unfinished migration job marks the table.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    /// Runs `hook` after the rewrite, before the commit (for tests that race a writer).
    #[doc(hidden)]
    pub fn before_commit(mut self, hook: BeforeCommitHook) -> Self {
        self.before_commit = Some(hook);
        self
    }

    /// Plans the compaction (every check done, nothing written): its groups can then be
    /// rewritten elsewhere and committed one by one ([`PreparedCompaction`]).
    pub async fn prepare(self) -> Result<PreparedCompaction> {
        guards::refuse_self_maintained(&self.handle, &self.ident, "compaction").await?;
        if self.max_commits == 0 {
            return Err(Error::InvalidInput(
                "--max-commits must be at least 1".into(),
            ));
        }
        if self.min_input_files == 0 {
            return Err(Error::InvalidInput(
                "--min-input-files must be at least 1".into(),
            ));
        }
        if self.max_file_group_size == 0 {
            return Err(Error::InvalidInput(
                "--max-file-group-size must be at least 1 byte".into(),
            ));
        }
        if self.target_file_size == Some(0) {
            return Err(Error::InvalidInput(
                "--target-file-size must be at least 1 byte".into(),
            ));
        }
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        ops_core::commit::refuse_v3(&table)?;
        guards::refuse_running_migration(
            &self.ident,
            table.metadata(),
            Some(self.force),
            "compacting",
        )?;
        let target = match self.target_file_size {
            Some(t) => t,
            None => {
                table
                    .metadata()
                    .table_properties()?
                    .write_target_file_size_bytes as u64
            }
        };
        let sort = match &self.sort {
            Some(spec) => Some(spec.resolve(table.metadata(), &self.ident.to_string())?),
            None => None,
        };
        let mut metrics = CompactMetrics {
            target_file_size: target,
            dry_run: self.dry_run,
            sort_order: sort.as_ref().map(|s| s.description.clone()),
            sort_order_id: sort.as_ref().and_then(|s| s.order_id),
            ..Default::default()
        };
        let Some(start) = table.metadata().current_snapshot().cloned() else {
            return Ok(PreparedCompaction {
                builder: self,
                current: table,
                start: None,
                groups: Vec::new(),
                metrics,
                target,
                sort,
            });
        };
        let cache = ManifestCache::new(&table);
        let groups = self.plan(&table, &cache, target, &mut metrics).await?;
        metrics.groups = groups
            .iter()
            .map(|g| CompactGroup {
                spec_id: g.key.0,
                partition: g.partition.clone(),
                input_files: g.files.iter().map(|c| c.live.path.clone()).collect(),
                input_bytes: g.files.iter().map(|c| c.live.size).sum(),
                input_rows: g.files.iter().map(|c| c.live.records).sum(),
                files_with_deletes: g.files.iter().filter(|c| c.has_deletes).count(),
                ..Default::default()
            })
            .collect();
        Ok(PreparedCompaction {
            builder: self,
            current: table,
            start: Some(start),
            groups: groups.into_iter().map(Some).collect(),
            metrics,
            target,
            sort,
        })
    }

    async fn execute(self) -> Result<(Table, CompactMetrics)> {
        let prepared = self.prepare().await?;
        let PreparedCompaction {
            builder: this,
            current: table,
            start,
            groups,
            metrics,
            target,
            sort,
        } = prepared;
        let groups: Vec<Planned> = groups.into_iter().flatten().collect();
        let Some(start) = start else {
            return Ok((table, metrics));
        };
        if this.dry_run || groups.is_empty() {
            return Ok((table, metrics));
        }
        this.run_groups(table, start, groups, metrics, target, sort)
            .await
    }

    /// Rewrites `groups` here and commits them (see [`Self::partial_progress`]).
    async fn run_groups(
        self,
        table: Table,
        start: SnapshotRef,
        groups: Vec<Planned>,
        mut metrics: CompactMetrics,
        target: u64,
        sort: Option<ResolvedSort>,
    ) -> Result<(Table, CompactMetrics)> {
        // One commit for the whole job, or (`partial_progress`) as Java does, the groups in
        // at most `max_commits` commits of equal size: then a commit that fails is reported
        // and the others still land.
        let per_commit = if self.partial_progress {
            groups.len().div_ceil(self.max_commits.max(1))
        } else {
            groups.len()
        };
        let mut units: Vec<Vec<Planned>> = Vec::new();
        for g in groups {
            match units.last_mut() {
                Some(u) if u.len() < per_commit => u.push(g),
                _ => units.push(vec![g]),
            }
        }
        let mut current = table;
        let mut first = 0;
        for unit in units {
            let reports = first..first + unit.len();
            first = reports.end;
            let partitions: Vec<String> = unit.iter().map(|g| g.partition.clone()).collect();
            match self
                .rewrite_and_commit(
                    current.clone(),
                    &start,
                    unit,
                    &mut metrics.groups[reports.clone()],
                    target,
                    sort.as_ref(),
                )
                .await
            {
                Ok((table, snapshot_id, dangling)) => {
                    current = table;
                    metrics.snapshot_ids.push(snapshot_id);
                    metrics.removed_dangling_delete_files.extend(dangling);
                }
                // A commit whose outcome is unknown may have landed: stop, and say so.
                Err(e)
                    if self.partial_progress && !matches!(e, Error::CommitStateUnknown { .. }) =>
                {
                    tracing::warn!(table = %self.ident, error = %e, "a compaction group failed");
                    for report in &mut metrics.groups[reports] {
                        report.failed = true;
                        report.output_files.clear();
                        report.output_bytes = 0;
                        report.output_rows = 0;
                    }
                    metrics.failed_groups.push(FailedGroup {
                        partition: partitions.join(", "),
                        error: e.to_string(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        metrics.snapshot_id = metrics.snapshot_ids.last().copied();
        metrics.removed_dangling_delete_files.sort();
        tracing::info!(
            table = %self.ident,
            groups = metrics.groups.len(),
            commits = metrics.snapshot_ids.len(),
            failed = metrics.failed_groups.len(),
            removed = metrics.input_files(),
            added = metrics.output_files(),
            "compacted"
        );
        Ok((current, metrics))
    }

    /// Rewrites `groups` and commits them as one `replace` snapshot on top of `table` (validated
    /// against every commit since `start`, their data keeping `start`'s sequence number); fills
    /// in the groups' `reports`. Returns the table, the snapshot and the dangling delete files
    /// the commit removed. On failure nothing of it is left behind.
    async fn rewrite_and_commit(
        &self,
        table: Table,
        start: &SnapshotRef,
        groups: Vec<Planned>,
        reports: &mut [CompactGroup],
        target: u64,
        sort: Option<&ResolvedSort>,
    ) -> Result<(Table, i64, Vec<String>)> {
        let default_spec = table.metadata().default_partition_spec_id();
        let inputs: Vec<Input> = groups
            .iter()
            .flat_map(|g| {
                let key = Arc::new(g.key.clone());
                g.files
                    .iter()
                    .map(move |c| (c.live.path.clone(), key.clone()))
            })
            .collect();
        // Rewrite the groups, as many at once as there are cores (each is one stream of
        // decode, project and encode: a core's work); on any failure, remove what was written.
        // After a failure the groups already running are awaited, not dropped (a writer dropped
        // mid-file would leave its file behind), and those not started yet skip their work.
        let mut written: Vec<(i32, DataFile)> = Vec::new();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The sort memory is shared by the groups sorted at once (one per core, or fewer when
        // there are fewer groups: a sort takes a partition whole, often one group).
        let at_once = workers.min(groups.len()).max(1);
        let sorting = sort.map(|s| (s.clone(), (self.sort_memory / at_once).max(1)));
        // Set on the first failure: groups not started yet then skip their work.
        let stop = Arc::new(AtomicBool::new(false));
        // Equality delete keys, each file read once for the job (a global delete applies to
        // every group).
        let equality = Arc::new(EqualityDeletes::for_read(
            &table,
            ops_core::write::table_arrow_schema(&table)?,
            ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::try_current()?)
                .build(),
            groups
                .iter()
                .flat_map(|g| g.files.iter().flat_map(|c| c.equality())),
        )?);
        let mut running = futures::stream::iter(groups.into_iter().map(|g| {
            let (table, sorting, stop, equality) = (
                table.clone(),
                sorting.clone(),
                stop.clone(),
                equality.clone(),
            );
            tokio::spawn(async move {
                if stop.load(Ordering::SeqCst) {
                    return Ok(None);
                }
                let sorting = sorting.as_ref().map(|(s, m)| (s, *m));
                let files = rewrite_group(&table, g, target, sorting, &equality).await;
                if files.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                files.map(Some)
            })
        }))
        .buffered(workers);
        let mut failed: Option<Error> = None;
        let mut index = 0;
        while let Some(done) = running.next().await {
            let group = index;
            index += 1;
            let files = match done {
                Ok(Ok(Some(files))) => files,
                Ok(Ok(None)) => continue,
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                    continue;
                }
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    failed.get_or_insert(Error::InvalidInput(format!(
                        "a compaction group stopped: {e}"
                    )));
                    continue;
                }
            };
            if let Some(report) = reports.get_mut(group) {
                report.output_rows = files.iter().map(DataFile::record_count).sum();
                report.output_bytes = files.iter().map(DataFile::file_size_in_bytes).sum();
                report.output_files = files.iter().map(|f| f.file_path().to_string()).collect();
            }
            // The writer lays rows out by the current spec, whatever the inputs' spec.
            written.extend(files.into_iter().map(|f| (default_spec, f)));
        }
        drop(running);
        let rewrite = match failed {
            Some(e) => Err(e),
            None => Ok(()),
        };
        let outputs: Vec<String> = written
            .iter()
            .map(|(_, f)| f.file_path().to_string())
            .collect();
        if let Err(e) = rewrite {
            ops_core::commit::delete_quietly(table.file_io(), &outputs).await;
            return Err(e);
        }
        self.commit_rewritten(table, start, inputs, written)
            .await
            .map_err(|f| f.error)
    }

    /// Commits the files `written` (by spec) in place of `inputs` as one `replace` snapshot on
    /// top of `table`, validated against every commit since `start`, their data keeping
    /// `start`'s sequence number. Returns the table, the snapshot and the dangling delete files
    /// the commit removed. When the commit is refused (or never reached the catalog) the
    /// written files are deleted; otherwise the failure says it may have landed.
    async fn commit_rewritten(
        &self,
        table: Table,
        start: &SnapshotRef,
        inputs: Vec<Input>,
        written: Vec<(i32, DataFile)>,
    ) -> std::result::Result<(Table, i64, Vec<String>), CommitFailure> {
        let refused = |error: Error| CommitFailure {
            error,
            may_have_landed: false,
        };
        let io = table.file_io().clone();
        let outputs: Vec<String> = written
            .iter()
            .map(|(_, f)| f.file_path().to_string())
            .collect();
        if let Some(hook) = &self.before_commit {
            hook().await;
        }
        // A rewrite (a sorted one above all) may take hours before this commit: an orphan
        // cleanup run meanwhile with a short threshold, or a lifecycle rule, may have deleted
        // its files, and a commit referencing them would make the table unreadable.
        let files: Vec<DataFile> = written.iter().map(|(_, f)| f.clone()).collect();
        if let Some(altered) = ops_core::ops::outputs::first_altered(table.file_io(), &files).await
        {
            ops_core::commit::delete_quietly(table.file_io(), &outputs).await;
            let what = altered.describe("the compaction");
            return Err(refused(Error::InvalidInput(format!(
                "{}: the compaction's output {what}, so nothing was committed and the table is \
                 as it was (its other outputs were removed). Something deleted files under the \
                 table location while the compaction wrote, e.g. remove-orphans with a short \
                 --older-than; run the compaction again",
                self.ident
            ))));
        }

        let data_seq = start.sequence_number();
        let since = Some(start.snapshot_id());
        // Set once an attempt reached the catalog: a failure after that may have landed.
        let committing = AtomicBool::new(false);
        // The dangling delete files of the last attempt (decided on each attempt's base).
        let dropped: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let this = &self;
        let committed = commit_snapshot_from(&self.handle, &self.ident, Some(table), |base| {
            committing.store(false, Ordering::SeqCst);
            let (inputs, written, committing, dropped) = (&inputs, &written, &committing, &dropped);
            async move {
                guards::refuse_running_migration(
                    &this.ident,
                    base.metadata(),
                    Some(this.force),
                    "compacting",
                )?;
                let cache = ManifestCache::new(&base);
                // Only commits since the snapshot the plan read can conflict: with none (the
                // usual case) the sets of every input's path, two more copies of a million
                // paths, are not built.
                if base.metadata().current_snapshot_id() != since {
                    let check = ConflictCheck {
                        since,
                        removed: inputs.iter().map(|(p, _)| p.to_path_string()).collect(),
                        removed_partitions: inputs.iter().map(|(_, k)| (**k).clone()).collect(),
                        removed_as_read: inputs.iter().map(|(p, _)| p.to_path_string()).collect(),
                        ..ConflictCheck::default()
                    };
                    check.validate(&base, &cache).await?;
                }
                let dangling = dangling_after(&base, &cache, inputs, written, data_seq).await?;
                *dropped.lock().unwrap_or_else(|p| p.into_inner()) = dangling.clone();
                let mut properties = this.properties.clone();
                properties.insert(
                    ops_core::ops::OPERATION_PROPERTY.to_string(),
                    "compact".to_string(),
                );
                let produced = SnapshotProducer::new(&base, &cache, Operation::Replace)
                    .remove_paths(inputs.iter().map(|(p, _)| p.clone()))
                    .remove_delete_paths(dangling)
                    .add_files_by_spec(written.iter().cloned())
                    .data_sequence_number(Some(data_seq))
                    .properties(properties)
                    .produce()
                    .await?;
                committing.store(true, Ordering::SeqCst);
                Ok(Some(produced))
            }
        })
        .await;
        match committed {
            Ok((table, snapshot)) => {
                let dangling =
                    std::mem::take(&mut *dropped.lock().unwrap_or_else(|p| p.into_inner()));
                Ok((table, snapshot.snapshot_id, dangling))
            }
            Err(e) => {
                let refused = matches!(e, Error::CommitConflict { .. } | Error::InvalidInput(_));
                let may_have_landed = !refused && committing.load(Ordering::SeqCst);
                if !may_have_landed {
                    ops_core::commit::delete_quietly(&io, &outputs).await;
                }
                Err(CommitFailure {
                    error: e,
                    may_have_landed,
                })
            }
        }
    }

    async fn plan(
        &self,
        table: &Table,
        cache: &ManifestCache,
        target: u64,
        metrics: &mut CompactMetrics,
    ) -> Result<Vec<Planned>> {
        ops_core::scan::refuse_column_defaults(table)?;
        let md = table.metadata();
        let default_spec = md.default_partition_spec_id();
        let pruning = match &self.filter {
            Some(f) => Some(
                f.resolve(table)?
                    .bind(Arc::new(read_schema(table).clone()), true)?
                    .rewrite_not(),
            ),
            None => None,
        };
        let exact = self.only_paths.is_some();
        let allowed: Option<std::collections::HashSet<String>> = match &self.added_by {
            None if exact => self.only_paths.as_deref().cloned(),
            None => None,
            Some(ids) => {
                let mut paths = std::collections::HashSet::new();
                for id in ids {
                    if md.snapshot_by_id(*id).is_none() {
                        continue;
                    }
                    let changes = changes_of(table, cache, *id).await?;
                    paths.extend(
                        changes
                            .added
                            .into_iter()
                            .map(|f| f.file.file_path().to_string()),
                    );
                }
                Some(paths)
            }
        };
        let scanned = match (&self.filter, md.current_snapshot()) {
            (Some(f), Some(snapshot)) => {
                partition_matches(table, snapshot.snapshot_id(), f.resolve(table)?).await
            }
            _ => None,
        };
        let Some(snapshot) = md.current_snapshot() else {
            return Ok(Vec::new());
        };
        let manifests = cache.manifest_list(snapshot).await?;
        let has_delete_manifests = manifests
            .iter()
            .any(|m| m.content == ManifestContentType::Deletes);
        // The live data files the manifest list counts: the most there can be candidates, so
        // their list is made once at that size (pages never written cost nothing) instead of
        // grown by doubling, which holds both copies while it grows.
        let most = manifests
            .iter()
            .filter(|m| m.content == ManifestContentType::Data)
            .map(|m| {
                m.added_files_count
                    .zip(m.existing_files_count)
                    .map_or(0, |(a, e)| u64::from(a) + u64::from(e))
            })
            .sum::<u64>();
        drop(manifests);
        let min_size = (target as f64 * MIN_FILE_SIZE_RATIO) as u64;
        // The manifests stream by and only candidates are kept, as what compaction needs of
        // their entries ([`CandidateFile`]; the column metrics were used above to prune): a
        // table of a million files plans in the memory of the files it will rewrite. Without
        // delete files, a file of the default spec at least `min_size` big is no candidate
        // whatever else holds.
        let mut considered: Vec<Candidate> =
            Vec::with_capacity(usize::try_from(most).unwrap_or(0).min(1 << 22));
        let mut left_out = LeftOut::default();
        let mut shared = Shared::default();
        each_live_data_file(snapshot, cache, |live| {
            let candidate = (|| {
                if allowed
                    .as_ref()
                    .is_some_and(|a| !a.contains(live.file.file_path()))
                {
                    return false;
                }
                if exact {
                    return true;
                }
                if live.spec_id != default_spec && !self.to_current_spec {
                    metrics.skipped_other_spec_files += 1;
                    return false;
                }
                if pruning.as_ref().is_some_and(|p| !may_match(p, &live.file)) {
                    return false;
                }
                if scanned
                    .as_ref()
                    .is_some_and(|s| !s.contains(live.file.file_path()))
                {
                    return false;
                }
                has_delete_manifests
                    || live.spec_id != default_spec
                    || live.file.file_size_in_bytes() < min_size
            })();
            if candidate {
                considered.push(Candidate::planned(CandidateFile::of(&live, &mut shared)));
            } else {
                left_out.add(live.file.file_path());
            }
            Ok(())
        })
        .await?;
        if considered.is_empty() {
            return Ok(Vec::new());
        }
        if u32::try_from(considered.len()).is_err() {
            // The plan numbers candidates with 32 bits (`cut_in_place`).
            return Err(Error::InvalidInput(format!(
                "{} has {} files to compact, more than one plan takes (4,294,967,295): compact \
                 part of it at a time (table compact --where)",
                table.identifier(),
                considered.len()
            )));
        }
        // Sorted by path, so plans (and reports) are stable. A file listed twice (added twice,
        // as `add_files` with `check_duplicate_files=False` does) stays twice: every reader
        // reads its rows twice, so its group reads it twice, and the commit removes both
        // entries by path — as Java's RewriteDataFiles plans a task per entry and removes by
        // path. Read once, a copy of its rows was lost.
        // (Unstable, with every field that tells entries apart: a stable sort takes a buffer of
        // half the list; entries equal in all of them are interchangeable.)
        if !considered.is_sorted_by(|a, b| a.live.path <= b.live.path) {
            considered.sort_unstable_by(|a, b| {
                let key = |c: &Candidate| {
                    (
                        c.live.sequence_number,
                        c.live.spec_id,
                        c.live.size,
                        c.live.records,
                    )
                };
                a.live
                    .path
                    .cmp(&b.live.path)
                    .then_with(|| key(a).cmp(&key(b)))
            });
        }
        let mut considered = whole_listings(
            snapshot,
            cache,
            considered,
            &left_out,
            has_delete_manifests,
            &mut metrics.skipped_duplicate_files,
        )
        .await?;
        if considered.is_empty() {
            return Ok(Vec::new());
        }
        let unmatched = UnmatchedDeletes::load(table, cache).await?;
        // A position delete attached only because the planner compares partitions and sequence
        // numbers, whose `file_path` bounds exclude the file, gives no reason to rewrite it.
        let deletes: HashMap<String, LiveDelete> = if has_delete_manifests {
            live_delete_files_of(snapshot, cache)
                .await?
                .into_iter()
                .map(|d| (d.file.file_path().to_string(), d))
                .collect()
        } else {
            HashMap::new()
        };
        // Equality deletes of an unpartitioned spec apply to every file older than they are,
        // but iceberg 0.10.1's planner attaches one of an all-`void` spec (a tuple of NULLs, not
        // an empty one) only to files of that tuple: they are attached here to every file
        // older than they are.
        let global_equality = ops_core::equality_deletes::global_deletes(md, deletes.values());
        // The rows a rewrite reads: equality deletes must name columns of them.
        let target_arrow = ops_core::write::table_arrow_schema(table)?;
        // Where every file's task is the whole file, it is built when its group is rewritten
        // (`rewrite_group`), not held for every candidate here.
        let whole_file_reads = WholeFileReads::of(table, has_delete_manifests)?.map(Arc::new);
        let whole_files = whole_file_reads.is_some();
        let mut file_tasks = if whole_files {
            Default::default()
        } else {
            tasks(
                table,
                snapshot.snapshot_id(),
                considered.iter().map(|c| &c.live),
                has_delete_manifests,
            )
            .await?
        };
        // Each spec's partition names (files of older specs are here with `to_current_spec`).
        let mut specs = HashMap::new();
        for id in considered.iter().map(|c| c.live.spec_id) {
            if let std::collections::hash_map::Entry::Vacant(e) = specs.entry(id) {
                let spec = spec_by_id(table, id)?;
                let types = spec.partition_type(md.current_schema()).ok();
                e.insert((spec, types));
            }
        }
        // The candidates are judged where they are (`retain_mut`: a million of them are not
        // copied into a second list), each kept one noting its partition's index.
        // Partitions keyed by the partition tuple itself (canonical across a widening of its
        // source column): two partitions that merely print alike (NULL and the string "null")
        // stay apart, so each group's conflict check names its own partition.
        let mut index: HashMap<PartitionKey, u32> = HashMap::new();
        let mut names: Vec<(PartitionKey, String)> = Vec::new();
        let mut part_of: Vec<u32> = Vec::new();
        // One string the paths are spelled into in turn, not one each.
        let mut path_buf = String::new();
        considered.retain_mut(|c| {
            let live = &c.live;
            let path = live.path.write_into(&mut path_buf);
            let t = if whole_files {
                Vec::new()
            } else {
                match file_tasks.remove(path) {
                    Some(t) => t,
                    // Every row of it is deleted, or the planner left it out: nothing to read.
                    None => return false,
                }
            };
            // The equality deletes that apply to it: applied by the rewrite itself
            // ([`ops_core::equality_deletes`]), not by iceberg's reader, which would drop rows whose
            // equality column is NULL.
            let mut t = t;
            let mut equality: Vec<FileScanTaskDeleteFile> = Vec::new();
            for task in &mut t {
                let (eq, other): (Vec<_>, Vec<_>) = std::mem::take(&mut task.deletes)
                    .into_iter()
                    .partition(|d| d.file_type == DataContentType::EqualityDeletes);
                task.deletes = other;
                equality.extend(eq);
            }
            equality.extend(
                global_equality
                    .iter()
                    .filter(|(seq, _)| live.sequence_number < *seq)
                    .map(|(_, f)| f.clone()),
            );
            equality.sort_by(|a, b| a.file_path.cmp(&b.file_path));
            equality.dedup_by(|a, b| a.file_path == b.file_path);
            // iceberg's reader (and so the key loader) reads Parquet delete files only.
            let other_format = equality.iter().find_map(|d| {
                deletes
                    .get(&d.file_path)
                    .filter(|l| l.file.file_format() != iceberg::spec::DataFileFormat::Parquet)
                    .map(|l| {
                        format!(
                            "equality delete file {} is {:?}, not Parquet",
                            d.file_path,
                            l.file.file_format()
                        )
                    })
            });
            if let Some(why) = other_format
                .or_else(|| ops_core::equality_deletes::unsupported(md, &target_arrow, &equality))
            {
                tracing::warn!(table = %table.identifier(), file = %path, reason = %why,
                    "left out of compaction: its equality deletes cannot be applied");
                metrics.skipped_equality_delete_files.push(path.to_string());
                return false;
            }
            if unmatched.misses(live) {
                // A delete file of its partition holds the value in another form (before or
                // after a widening of the source column): iceberg's reader would not apply it,
                // so rewriting the file could bring deleted rows back. Left as it is, the rest
                // of the table still compacts. (Checked whether or not the planner attached a
                // delete: the missed ones are exactly those it did not.)
                metrics.skipped_widened_delete_files.push(path.to_string());
                return false;
            }
            let has_deletes = !equality.is_empty()
                || t.iter().any(|t| {
                    t.deletes.iter().any(|d| {
                        deletes
                            .get(&d.file_path)
                            .is_none_or(|live| live.may_reference(path))
                    })
                });
            // A file of an older spec is rewritten whatever its size (`to_current_spec`).
            let other_spec = live.spec_id != default_spec;
            if !has_deletes && !other_spec && live.size >= min_size && !exact {
                return false;
            }
            let key = live.partition_key();
            let at = match index.get(&key) {
                Some(at) => *at,
                None => {
                    let name = specs.get(&live.spec_id).map_or_else(String::new, |(s, t)| {
                        partition_name(s, t.as_ref(), &live.partition)
                    });
                    let name = if other_spec {
                        format!("{name} (spec {})", live.spec_id)
                    } else {
                        name
                    };
                    let at = names.len() as u32;
                    names.push((key.clone(), name));
                    index.insert(key, at);
                    at
                }
            };
            part_of.push(at);
            c.reads = Reads::of(t, equality);
            c.has_deletes = has_deletes;
            true
        });
        drop(index);
        let partitions = by_partition(considered, &part_of, names);
        // In order of partition name, then first path: plans (and reports) are stable.
        let mut partitions = partitions;
        partitions.sort_by(|(_, (a, fa)), (_, (b, fb))| {
            let first = |c: &[Candidate]| c.first().map(|c| c.live.path.clone());
            a.cmp(b).then_with(|| first(fa).cmp(&first(fb)))
        });
        let mut planned = Vec::new();
        for (key, (partition, candidates)) in partitions {
            if exact {
                // A group planned elsewhere: its files as they are, one group.
                for c in candidates.iter().filter(|c| !c.tasks().is_empty()) {
                    refuse_unsafe_rewrite(table, &c.live.path.to_path_string(), c.tasks(), false)?;
                }
                planned.push(Planned {
                    key,
                    partition,
                    files: candidates,
                    whole_file_reads: whole_file_reads.clone(),
                });
                continue;
            }
            let any_deletes = candidates.iter().any(|c| c.has_deletes);
            let other_spec = key.0 != default_spec;
            if candidates.len() < self.min_input_files && !any_deletes && !other_spec {
                continue;
            }
            // Bin-pack groups are of the target size: each makes about one file, and they are
            // rewritten in parallel. A sort takes the partition whole (up to Java's 100 GiB
            // group size) and rolls its outputs at the target size, so the partition's files
            // follow each other in key order instead of each group's overlapping the next's.
            let group_size = if self.sort.is_some() {
                self.max_file_group_size.max(target)
            } else {
                target
            };
            for bin in bin_pack(candidates, group_size) {
                if bin.len() == 1 && !bin[0].has_deletes && !other_spec {
                    continue;
                }
                // (Only tasks can hold what it refuses: a whole-file read has none planned.)
                for c in bin.iter().filter(|c| !c.tasks().is_empty()) {
                    refuse_unsafe_rewrite(table, &c.live.path.to_path_string(), c.tasks(), false)?;
                }
                planned.push(Planned {
                    key: key.clone(),
                    partition: partition.clone(),
                    files: bin,
                    whole_file_reads: whole_file_reads.clone(),
                });
            }
        }
        Ok(planned)
    }
}

/// Why [`CompactBuilder::commit_rewritten`] did not commit.
struct CommitFailure {
    error: Error,
    /// The catalog was reached and may have taken the commit (the files are kept).
    may_have_landed: bool,
}

/// A group's files as another process rewrote them, to commit with
/// [`PreparedCompaction::commit_groups`].
#[derive(Debug)]
pub struct RewrittenGroup {
    /// The group's index in the plan.
    pub group: usize,
    /// The partition spec the files are laid out by.
    pub spec_id: i32,
    /// The files.
    pub files: Vec<DataFile>,
}

/// A compaction planned by [`CompactBuilder::prepare`]: its groups, each rewritten elsewhere
/// (a cluster task: [`job`]) and committed here as its files land
/// ([`Self::commit_group`]), one `replace` snapshot per group with the validation of a local
/// compaction. [`Self::finish`] gives the table and the report.
pub struct PreparedCompaction {
    builder: CompactBuilder,
    current: Table,
    /// The snapshot planned on (`None`: the table is empty).
    start: Option<SnapshotRef>,
    /// The groups, each taken when it is committed or failed.
    groups: Vec<Option<Planned>>,
    metrics: CompactMetrics,
    target: u64,
    sort: Option<ResolvedSort>,
}

impl std::fmt::Debug for PreparedCompaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCompaction")
            .field("table", &self.builder.ident)
            .field("groups", &self.groups.len())
            .finish_non_exhaustive()
    }
}

impl PreparedCompaction {
    /// The report so far (before any commit: the plan).
    pub fn metrics(&self) -> &CompactMetrics {
        &self.metrics
    }

    /// The table as last loaded or committed.
    pub fn table(&self) -> &Table {
        &self.current
    }

    /// Whether the builder asked for a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.builder.dry_run
    }

    /// How many groups the plan has.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The group's files as a task of a job another process runs (see [`job::CompactionJob`]);
    /// `None` when there is nothing to rewrite.
    pub fn job(&self, job_id: &str, catalog: &str) -> Result<Option<job::CompactionJob>> {
        let Some(start) = &self.start else {
            return Ok(None);
        };
        if self.groups.is_empty() {
            return Ok(None);
        }
        Ok(Some(job::CompactionJob {
            format: job::JOB_FORMAT,
            job_id: job_id.to_string(),
            catalog: catalog.to_string(),
            table: self.builder.ident.to_string(),
            table_uuid: self.current.metadata().uuid().to_string(),
            start_snapshot_id: start.snapshot_id(),
            target_file_size: self.target,
            to_current_spec: self.builder.to_current_spec,
            // As the user gave it: each task resolves it against the table itself.
            sort: self.builder.sort.clone(),
            sort_memory: self.builder.sort_memory,
            groups: self
                .metrics
                .groups
                .iter()
                .map(|g| job::CompactionTask {
                    partition: g.partition.clone(),
                    files: g.input_files.iter().map(|p| p.to_path_string()).collect(),
                })
                .collect(),
        }))
    }

    /// How many groups one commit takes: Java's partial progress, the groups in at most
    /// [`CompactBuilder::max_commits`] commits of equal size.
    pub fn groups_per_commit(&self) -> usize {
        self.groups
            .len()
            .div_ceil(self.builder.max_commits.max(1))
            .max(1)
    }

    /// Group `group` as reports name it: its partition, or `(unpartitioned)`.
    pub fn group_name(&self, group: usize) -> String {
        match self.metrics.groups.get(group) {
            Some(g) if g.partition.is_empty() => format!("group {group} (unpartitioned)"),
            Some(g) => format!("group {group} ({})", g.partition),
            None => format!("group {group}"),
        }
    }

    /// The table as the catalog has it now.
    pub async fn reload(&self) -> Result<Table> {
        ops_core::commit::load_current(&self.builder.handle, &self.builder.ident).await
    }

    /// [`Self::commit_groups`] of one group.
    pub async fn commit_group(
        &mut self,
        group: usize,
        spec_id: i32,
        files: Vec<DataFile>,
    ) -> Result<Option<i64>> {
        self.commit_groups(vec![RewrittenGroup {
            group,
            spec_id,
            files,
        }])
        .await
    }

    /// Commits the rewritten `groups` in place of their inputs as one `replace` snapshot.
    /// `Ok(Some(snapshot))` when it landed; `Ok(None)` when it was refused (a conflict with a
    /// commit since the plan, an input gone) or never reached the catalog: the groups are
    /// reported failed and their files are deleted. An error is a commit that may have landed
    /// (its files are kept), or a group not in the plan.
    pub async fn commit_groups(&mut self, groups: Vec<RewrittenGroup>) -> Result<Option<i64>> {
        let Some(start) = self.start.clone() else {
            return Err(Error::InvalidInput(
                "the compaction planned nothing to commit".into(),
            ));
        };
        let mut inputs: Vec<Input> = Vec::new();
        let mut written: Vec<(i32, DataFile)> = Vec::new();
        let mut ids = Vec::with_capacity(groups.len());
        for g in groups {
            let planned = self
                .groups
                .get_mut(g.group)
                .and_then(Option::take)
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "group {} is not a group of this compaction, or was committed already",
                        g.group
                    ))
                })?;
            let key = Arc::new(planned.key.clone());
            inputs.extend(
                planned
                    .files
                    .iter()
                    .map(|c| (c.live.path.clone(), key.clone())),
            );
            if let Some(r) = self.metrics.groups.get_mut(g.group) {
                r.output_rows = g.files.iter().map(DataFile::record_count).sum();
                r.output_bytes = g.files.iter().map(DataFile::file_size_in_bytes).sum();
                r.output_files = g.files.iter().map(|f| f.file_path().to_string()).collect();
            }
            written.extend(g.files.into_iter().map(|f| (g.spec_id, f)));
            ids.push(g.group);
        }
        if ids.is_empty() {
            return Ok(None);
        }
        match self
            .builder
            .commit_rewritten(self.current.clone(), &start, inputs, written)
            .await
        {
            Ok((table, snapshot, dangling)) => {
                self.current = table;
                self.metrics.snapshot_ids.push(snapshot);
                self.metrics.snapshot_id = Some(snapshot);
                self.metrics.removed_dangling_delete_files.extend(dangling);
                Ok(Some(snapshot))
            }
            Err(f) if f.may_have_landed => Err(f.error),
            Err(f) => {
                tracing::warn!(table = %self.builder.ident, groups = ?ids, error = %f.error,
                    "compaction groups were not committed");
                for group in ids {
                    self.fail_group(group, f.error.to_string());
                }
                Ok(None)
            }
        }
    }

    /// Reports group `group` failed (its task failed, or its job ended without it).
    pub fn fail_group(&mut self, group: usize, error: String) {
        if let Some(slot) = self.groups.get_mut(group) {
            slot.take();
        }
        if let Some(r) = self.metrics.groups.get_mut(group) {
            r.failed = true;
            r.output_files.clear();
            r.output_bytes = 0;
            r.output_rows = 0;
            self.metrics.failed_groups.push(FailedGroup {
                partition: r.partition.clone(),
                error,
            });
        }
    }

    /// The table and the report (groups neither committed nor failed are reported failed).
    pub fn finish(mut self) -> (Table, CompactMetrics) {
        if !self.builder.dry_run {
            for group in 0..self.groups.len() {
                if self.groups[group].is_some() {
                    self.fail_group(group, "not rewritten".into());
                }
            }
        }
        self.metrics.removed_dangling_delete_files.sort();
        (self.current, self.metrics)
    }
}

/// The candidates (`considered`, sorted by path) a commit can remove by path without losing
/// rows: a file listed once, or a file listed more than once whose every live entry is a
/// candidate, all alike (spec, partition, size: then they land in one group, see
/// [`bin_pack`], and that group reads each of them), in a table without delete files (the
/// planner keys a file's scan tasks and its deletes by path, so its entries could not be told
/// apart). The commit removes every entry of a path, so a group holding only some of them
/// would drop the others' rows; such a file is left out and named in `skipped`.
///
/// `left_out` marks the paths of the entries that are not candidates: when no candidate's
/// path is marked, none has an entry outside the candidates; otherwise the manifests are read
/// once more, counting only the candidates' paths (memory of the candidates, not of the
/// table).
async fn whole_listings(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    considered: Vec<Candidate>,
    left_out: &LeftOut,
    has_delete_manifests: bool,
    skipped: &mut Vec<String>,
) -> Result<Vec<Candidate>> {
    let listed_more_than_once = considered
        .windows(2)
        .any(|w| w[0].live.path == w[1].live.path);
    let maybe_left_out = considered
        .iter()
        .any(|c| left_out.may_hold_path(&c.live.path));
    if !listed_more_than_once && !maybe_left_out {
        return Ok(considered);
    }
    let mut totals: FilePathMap<usize> = FilePathMap::new();
    if !maybe_left_out {
        for c in &considered {
            *totals.entry_or_insert_with(c.live.path.clone(), || 0) += 1;
        }
    } else {
        for c in &considered {
            totals.entry_or_insert_with(c.live.path.clone(), || 0);
        }
        each_live_data_file(snapshot, cache, |live| {
            if let Some(n) = totals.get_str_mut(live.file.file_path()) {
                *n += 1;
            }
            Ok(())
        })
        .await?;
    }
    let mut kept = Vec::with_capacity(considered.len());
    let mut run: Vec<Candidate> = Vec::new();
    let mut entries = considered.into_iter().peekable();
    while let Some(c) = entries.next() {
        let last = entries.peek().is_none_or(|n| n.live.path != c.live.path);
        run.push(c);
        if !last {
            continue;
        }
        let total = totals.get(&run[0].live.path).copied().unwrap_or(0);
        let alike = run.iter().all(|e| {
            e.live.spec_id == run[0].live.spec_id
                && e.live.size == run[0].live.size
                && e.live.partition_key() == run[0].live.partition_key()
        });
        if total <= 1 || (run.len() == total && alike && !has_delete_manifests) {
            kept.append(&mut run);
        } else {
            tracing::warn!(file = %run[0].live.path, entries = total, candidates = run.len(),
                "left out of compaction: listed more than once, and its entries cannot be \
                 rewritten together");
            skipped.push(run[0].live.path.to_path_string());
            run.clear();
        }
    }
    Ok(kept)
}

/// The data files a scan of `snapshot_id` filtered by `filter` plans: those whose partition
/// (through its spec's transforms: `bucket(4, id)` for `id = 5`) and column metrics may hold a
/// matching row — Java plans a filtered compaction through such a scan. `None` when iceberg
/// cannot plan it: the statistics alone then choose. It only ever narrows that choice (a file
/// it leaves out is not rewritten, its rows unchanged), so where iceberg 0.10.1's pruning is
/// stricter than it should be, no row is lost.
async fn partition_matches(
    table: &Table,
    snapshot_id: i64,
    filter: Predicate,
) -> Option<std::collections::HashSet<String>> {
    // iceberg binds the filter by name to the snapshot's schema, the candidates use the current
    // one: after a rename the same name may be another column there.
    let md = table.metadata();
    let schema_then = md.snapshot_by_id(snapshot_id).and_then(|s| s.schema_id());
    if schema_then.is_some_and(|id| id != md.current_schema_id()) {
        tracing::warn!(
            table = %table.identifier(),
            "the table's schema changed since its current snapshot: the filter prunes by column \
             statistics only, not through the partitions"
        );
        return None;
    }
    let planned = async {
        table
            .scan()
            .snapshot_id(snapshot_id)
            .with_filter(filter)
            .select_all()
            .build()?
            .plan_files()
            .await?
            .map_ok(|t| t.data_file_path)
            .try_collect::<std::collections::HashSet<String>>()
            .await
    }
    .await;
    match planned {
        Ok(paths) => Some(paths),
        Err(e) => {
            tracing::warn!(
                table = %table.identifier(),
                error = %e,
                "the filter could not be planned through the partitions; the column \
                 statistics alone choose the files"
            );
            None
        }
    }
}

/// The delete files of the partitions the rewrite touches that apply to no live data file once
/// it lands: `base`'s live data files without `inputs`, plus `written` at `data_seq`.
async fn dangling_after(
    base: &Table,
    cache: &ManifestCache,
    inputs: &[Input],
    written: &[(i32, DataFile)],
    data_seq: i64,
) -> Result<Vec<String>> {
    let Some(snapshot) = base.metadata().current_snapshot() else {
        return Ok(Vec::new());
    };
    let deletes = live_delete_files_of(snapshot, cache).await?;
    if deletes.is_empty() {
        return Ok(Vec::new());
    }
    let mut touched = std::collections::HashSet::new();
    for (_, k) in inputs {
        if !touched.contains(&**k) {
            touched.insert((**k).clone());
        }
    }
    let md = base.metadata();
    let mut scan = DanglingScan::new(&deletes, &touched, |spec_id| unpartitioned(md, spec_id));
    if scan.is_empty() {
        return Ok(Vec::new());
    }
    // The live files as they will be once the commit lands, streamed: a table of a million
    // files is weighed without holding them.
    let removed: FilePathSet = inputs.iter().map(|(p, _)| p.clone()).collect();
    each_live_data_file(snapshot, cache, |f| {
        if !removed.contains_str(f.file.file_path()) {
            scan.see(&f);
        }
        Ok(())
    })
    .await?;
    // Added by this commit, after every delete file there is: no position delete names them.
    for (spec_id, f) in written {
        scan.see(&LiveFile {
            file: f.clone(),
            spec_id: *spec_id,
            sequence_number: data_seq,
            file_sequence_number: i64::MAX,
        });
    }
    Ok(scan.finish())
}

/// Whether spec `spec_id` is unpartitioned as Java's `PartitionSpec.isUnpartitioned` has it: no
/// fields, or `void` ones only (a v1 table whose partition fields were dropped). An equality
/// delete of such a spec applies to every partition of every spec. Unknown specs count as
/// unpartitioned: their deletes are weighed against every file, kept more often.
pub(crate) fn unpartitioned(md: &iceberg::spec::TableMetadata, spec_id: i32) -> bool {
    md.partition_spec_by_id(spec_id)
        .is_none_or(|s| s.fields().iter().all(|f| f.transform == Transform::Void))
}

/// `field=value/...` for reports, each value as Java's `Transform.toHumanString` prints it: the
/// form of its folder in a file path (`ops_core::location::human_string`), so a report names
/// `d=-0.0` and `ts_hour=2026-02-06-09` as the table's folders do. iceberg's
/// `partition_to_path` panics on a value written before a widening of its source column (an
/// `int` under what is now a `long`); this shows such a value promoted, and any other mismatch
/// in its raw form.
pub(crate) fn partition_name(
    spec: &PartitionSpec,
    types: Option<&StructType>,
    value: &Struct,
) -> String {
    if spec.fields().is_empty() {
        return String::new();
    }
    spec.fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let shown = match value.fields().get(i).and_then(Option::as_ref) {
                None => "null".to_string(),
                Some(v) => {
                    let ty = types
                        .and_then(|t| t.fields().get(i))
                        .map(|f| &*f.field_type);
                    human_label(field.transform, ty, v)
                }
            };
            format!("{}={shown}", field.name)
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// One partition value of result type `ty` as Java prints it (see [`partition_name`]); its
/// raw form when it fits no type Java could print it as (a mismatch, or a date beyond the
/// years this process can show). A value written before its column was widened (an `int`
/// under a `long`, a `float` under a `double`) prints promoted, as Java reads it under the
/// current type and as a rewrite's new folder names it: a `float` 0.1 is
/// `0.10000000149011612`, apart from a `double` 0.1's partition.
fn human_label(transform: Transform, ty: Option<&Type>, value: &Literal) -> String {
    use PrimitiveLiteral as L;
    let raw = || format!("{value:?}");
    // An unknown transform prints its value as identity does (Java's `UnknownTransform`).
    let transform = match transform {
        Transform::Unknown => Transform::Identity,
        t => t,
    };
    let promoted = match (ty, value) {
        (Some(Type::Primitive(PrimitiveType::Long)), Literal::Primitive(L::Int(i))) => {
            Literal::long(i64::from(*i))
        }
        (Some(Type::Primitive(PrimitiveType::Double)), Literal::Primitive(L::Float(f))) => {
            Literal::double(f64::from(f.0))
        }
        _ => value.clone(),
    };
    let own;
    let ty = match ty {
        Some(ty) => ty,
        // Without the partition type (a spec whose source column the schema lacks), only the
        // transforms whose result is an `int` whatever the column print.
        None => match transform {
            Transform::Year
            | Transform::Month
            | Transform::Day
            | Transform::Hour
            | Transform::Bucket(_) => {
                own = Type::Primitive(PrimitiveType::Int);
                &own
            }
            _ => return raw(),
        },
    };
    ops_core::location::human_string(&transform, ty, Some(&promoted)).unwrap_or_else(|_| raw())
}

/// The paths of the live entries compaction left out, as a fixed bitmap of their hashes (1
/// MiB whatever the table's size): a path not marked has no entry outside the candidates; one
/// marked may (or shares a bit), and is counted exactly by a second read of the manifests.
struct LeftOut {
    bits: Vec<u64>,
}

impl Default for LeftOut {
    fn default() -> Self {
        Self {
            bits: vec![0; Self::WORDS],
        }
    }
}

impl LeftOut {
    const WORDS: usize = 1 << 17;

    const HASHER: std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher> =
        std::hash::BuildHasherDefault::new();

    fn bit(path: &str) -> (usize, u64) {
        Self::bit_of(FilePath::hash_str(&Self::HASHER, path))
    }

    fn bit_of(h: u64) -> (usize, u64) {
        let bit = (h as usize) % (Self::WORDS * 64);
        (bit / 64, 1u64 << (bit % 64))
    }

    fn add(&mut self, path: &str) {
        let (word, mask) = Self::bit(path);
        self.bits[word] |= mask;
    }

    /// Whether `path` may have been added (as a string: the same hash).
    fn may_hold_path(&self, path: &FilePath) -> bool {
        let (word, mask) = Self::bit_of(path.hash_with(&Self::HASHER));
        self.bits[word] & mask != 0
    }
}

/// `candidates` (in path order) cut into their partitions (`part_of`: each one's index in
/// `names`), each partition's in path order — in place: the list is ordered by partition where
/// it is and cut from the end, largest partition first in memory so each cut-off partition is
/// copied into the space the ones after it left. One partition (a table of small files not
/// partitioned) is the list itself.
fn by_partition(
    mut candidates: Vec<Candidate>,
    part_of: &[u32],
    names: Vec<(PartitionKey, String)>,
) -> Vec<(PartitionKey, (String, Vec<Candidate>))> {
    if names.len() <= 1 {
        return names
            .into_iter()
            .map(|(key, name)| (key, (name, std::mem::take(&mut candidates))))
            .collect();
    }
    let mut counts = vec![0usize; names.len()];
    for &p in part_of {
        counts[p as usize] += 1;
    }
    let places: Vec<(u32, u32)> = part_of
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i as u32))
        .collect();
    let mut parts = cut_in_place(candidates, &places, &counts);
    names
        .into_iter()
        .enumerate()
        .map(|(i, (key, name))| (key, (name, std::mem::take(&mut parts[i]))))
        .collect()
}

/// `items` cut into `counts.len()` lists, item `i` into list `places[i].0`, each list in the
/// order of `places[i].1` — moved into that order where they are (each swap puts one item in
/// its place), laid out largest list first, and cut from the end, each list shrunk off in
/// turn: the smallest is copied out first and each later one into the space the lists after
/// it left, so the items are held about once, not twice.
fn cut_in_place<T>(mut items: Vec<T>, places: &[(u32, u32)], counts: &[usize]) -> Vec<Vec<T>> {
    let mut layout: Vec<usize> = (0..counts.len()).collect();
    layout.sort_by_key(|&b| std::cmp::Reverse(counts[b]));
    let mut position = vec![0u32; counts.len()];
    for (at, &list) in layout.iter().enumerate() {
        position[list] = at as u32;
    }
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let (list, within) = places[i as usize];
        (position[list as usize], within, i)
    });
    let mut dest = vec![0u32; items.len()];
    for (to, &from) in order.iter().enumerate() {
        dest[from as usize] = to as u32;
    }
    drop(order);
    for i in 0..items.len() {
        while dest[i] as usize != i {
            let j = dest[i] as usize;
            items.swap(i, j);
            dest.swap(i, j);
        }
    }
    drop(dest);
    let mut lists: Vec<Vec<T>> = (0..counts.len()).map(|_| Vec::new()).collect();
    for &list in layout.iter().skip(1).rev() {
        let tail = items.split_off(items.len() - counts[list]);
        items.shrink_to_fit();
        lists[list] = tail;
    }
    if let Some(&first) = layout.first() {
        lists[first] = items;
    }
    lists
}

/// First-fit decreasing: the largest file first into the first group it fits, groups of at
/// most `limit` bytes (a file larger than the limit alone in its group). The entries of a file
/// listed twice go into one group as one: a commit removes a file by path, every entry of it,
/// so a group must re-add the rows of every entry it removes.
fn bin_pack(mut files: Vec<Candidate>, limit: u64) -> Vec<Vec<Candidate>> {
    if files.is_empty() {
        return Vec::new();
    }
    // A partition's candidates come sorted by path; sorting again would take a buffer of half
    // of them.
    if !files.is_sorted_by(|a, b| a.live.path <= b.live.path) {
        files.sort_by(|a, b| a.live.path.cmp(&b.live.path));
    }
    // Units: runs of one path (the entries of a file listed twice go whole into one bin), as
    // (bytes, first index, entries) — not a vector each: a million candidates would be a
    // million allocations beside them.
    let mut units: Vec<(u64, usize, usize)> = Vec::new();
    for (i, c) in files.iter().enumerate() {
        match units.last_mut() {
            Some((size, first, len)) if files[*first].live.path == c.live.path => {
                *size = size.saturating_add(c.live.size);
                *len += 1;
            }
            _ => units.push((c.live.size, i, 1)),
        }
    }
    // Largest first (equal sizes in path order), each into the first bin it fits.
    let mut by_size: Vec<usize> = (0..units.len()).collect();
    by_size.sort_by_key(|&u| std::cmp::Reverse(units[u].0));
    let mut used: Vec<u64> = Vec::new();
    // Each candidate's place: its bin, and its unit's rank in that order (a bin lists its
    // units in the order they went in).
    let mut place: Vec<(u32, u32)> = vec![(0, 0); files.len()];
    for (rank, &u) in by_size.iter().enumerate() {
        let (size, first, len) = units[u];
        let bin = match used.iter().position(|b| b.saturating_add(size) <= limit) {
            Some(b) => {
                used[b] += size;
                b
            }
            None => {
                used.push(size);
                used.len() - 1
            }
        };
        for p in place.iter_mut().skip(first).take(len) {
            *p = (bin as u32, rank as u32);
        }
    }
    drop((units, by_size));
    let mut counts = vec![0usize; used.len()];
    for (bin, _) in &place {
        counts[*bin as usize] += 1;
    }
    cut_in_place(files, &place, &counts)
}

/// Streams a group's rows (deletes applied; sorted when `sort` says so, in at most its bytes of
/// memory) into new files of its partition.
async fn rewrite_group(
    table: &Table,
    group: Planned,
    target: u64,
    sort: Option<(&ResolvedSort, usize)>,
    deletes: &Arc<EqualityDeletes>,
) -> Result<Vec<DataFile>> {
    let mut group = group;
    // The rows of each part are read as one stream (the reader overlaps its files' reads).
    let mut parts: Vec<Part> = Vec::new();
    let read_schema = if let Some(reads) = group.whole_file_reads.clone() {
        // No delete file applies anywhere: every file is read whole, by a task made as the
        // reader asks for it — a group of a million small files does not hold a million tasks
        // (a few hundred bytes each) besides its candidates, which go as their tasks are made.
        let Some(first) = group.files.first() else {
            return Ok(Vec::new());
        };
        let schema = reads.task(table, &first.live)?.schema;
        let table = table.clone();
        let files = std::mem::take(&mut group.files);
        let tasks = futures::stream::iter(files.into_iter().map(move |c| {
            reads
                .task(&table, &c.live)
                .map_err(|e| iceberg::Error::new(iceberg::ErrorKind::Unexpected, e.to_string()))
        }))
        .boxed();
        parts.push(Part {
            tasks,
            keys: Vec::new(),
        });
        Arc::new(schema_to_arrow_schema(&schema)?)
    } else {
        let Some(first) = group.files.iter().flat_map(|c| c.tasks().first()).next() else {
            return Ok(Vec::new());
        };
        // With the key columns of equality deletes dropped since, which the files with such
        // deletes read too (`widen_task`); the others read them as NULL.
        let read_schema = deletes.widen(&Arc::new(schema_to_arrow_schema(&first.schema)?))?;
        // Files without equality deletes are read as one stream; each file with them by
        // itself, its rows filtered by the deletes that apply to it. Each delete file is read
        // once for the job (`deletes` caches them).
        let (plain, with_equality): (Vec<Candidate>, Vec<Candidate>) =
            std::mem::take(&mut group.files)
                .into_iter()
                .partition(|c| c.equality().is_empty());
        let plain: Vec<FileScanTask> = plain.into_iter().flat_map(|c| c.into_reads().0).collect();
        if !plain.is_empty() {
            parts.push(Part {
                tasks: futures::stream::iter(plain.into_iter().map(Ok)).boxed(),
                keys: Vec::new(),
            });
        }
        for c in with_equality {
            let (mut tasks, equality) = c.into_reads();
            for task in &mut tasks {
                deletes.widen_task(task)?;
            }
            let mut keys = Vec::with_capacity(equality.len());
            for d in &equality {
                keys.push(deletes.keys(d).await?);
            }
            parts.push(Part {
                tasks: futures::stream::iter(tasks.into_iter().map(Ok)).boxed(),
                keys,
            });
        }
        read_schema
    };
    let sort_schema = ops_core::write::table_arrow_schema(table)?;
    let reader =
        ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::try_current()?).build();
    let rows = Arc::new(AtomicU64::new(0));
    let rows_c = rows.clone();
    let deletes = deletes.clone();
    let batches = futures::stream::iter(parts)
        .map(move |Part { tasks, keys }| {
            let (read_schema, deletes, rows) =
                (read_schema.clone(), deletes.clone(), rows_c.clone());
            let stream = match reader.clone().read(
                tasks
                    .and_then(|t| async move { ops_core::partition_constants::for_reader(t) })
                    .boxed(),
            ) {
                Ok(s) => s.stream().map_err(Error::from).boxed(),
                Err(e) => futures::stream::once(async move { Err(Error::from(e)) }).boxed(),
            };
            stream.map(move |b| {
                let b = deletes.apply(&b?, &read_schema, &keys)?;
                rows.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
                Ok(b)
            })
        })
        .flatten();
    let target = usize::try_from(target).unwrap_or(usize::MAX);
    let files = match sort {
        None => {
            ops_core::write::write_data_files_sized(table, Box::pin(batches), Some(target)).await?
        }
        Some((sort, memory)) => {
            let sorter = Sorter::new(sort_schema, sort.keys.clone(), memory)?;
            let sorted = sorter.sort(Box::pin(batches)).await?;
            let files =
                ops_core::write::write_data_files_sized(table, sorted, Some(target)).await?;
            match sort.order_id.and_then(|id| i32::try_from(id).ok()) {
                Some(id) => {
                    let spec_id = table.metadata().default_partition_spec_id();
                    let marked: Result<Vec<DataFile>> = files
                        .iter()
                        .map(|f| with_sort_order_id(f, spec_id, id))
                        .collect();
                    match marked {
                        Ok(marked) => marked,
                        Err(e) => {
                            let paths: Vec<String> =
                                files.iter().map(|f| f.file_path().to_string()).collect();
                            ops_core::commit::delete_quietly(table.file_io(), &paths).await;
                            return Err(e);
                        }
                    }
                }
                None => files,
            }
        }
    };
    tracing::debug!(
        table = %table.identifier(),
        partition = %group.partition,
        rows = rows.load(Ordering::Relaxed),
        files = files.len(),
        "group rewritten"
    );
    Ok(files)
}

/// A file a compaction removes and its partition: the plan's own path, and one partition key
/// per group (a million inputs do not each copy their path and partition tuple).
type Input = (FilePath, Arc<PartitionKey>);

/// One part of a group's rewrite: its scan tasks, made as the reader asks for them, and the
/// equality deletes its rows are filtered by.
struct Part {
    tasks: futures::stream::BoxStream<'static, iceberg::Result<FileScanTask>>,
    keys: Vec<Arc<EqualityKeys>>,
}

/// `file` marked as sorted by table sort order `order_id` (iceberg's writer leaves it unset).
fn with_sort_order_id(file: &DataFile, spec_id: i32, order_id: i32) -> Result<DataFile> {
    let mut b = ops_core::write::data_file_builder(file, spec_id);
    b.sort_order_id(order_id);
    b.build().map_err(|e| {
        Error::InvalidInput(format!(
            "cannot mark {} with sort order {order_id}: {e}",
            file.file_path()
        ))
    })
}

impl IntoFuture for CompactBuilder {
    type Output = Result<(Table, CompactMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{NestedField, Schema};

    use super::*;

    /// Cutting a list in place gives each item to its list, in its order there, whatever the
    /// lists' sizes and the items' order.
    #[test]
    fn a_list_cut_in_place_keeps_every_item_once_in_order() {
        for n in [0usize, 1, 2, 7, 100, 1000] {
            for lists in [1usize, 2, 3, 5] {
                // Item i goes to list (i * 7 + i / 3) % lists, ordered there by descending i.
                let places: Vec<(u32, u32)> = (0..n)
                    .map(|i| (((i * 7 + i / 3) % lists) as u32, (n - i) as u32))
                    .collect();
                let mut counts = vec![0usize; lists];
                for (l, _) in &places {
                    counts[*l as usize] += 1;
                }
                let items: Vec<usize> = (0..n).collect();
                let cut = cut_in_place(items, &places, &counts);
                for (l, list) in cut.iter().enumerate() {
                    let mut want: Vec<usize> =
                        (0..n).filter(|&i| places[i].0 as usize == l).collect();
                    want.reverse();
                    assert_eq!(list, &want, "n {n}, lists {lists}, list {l}");
                }
            }
        }
    }

    /// The entries of a file listed twice are packed into one group, whatever the sizes
    /// around them: a group's commit removes both, so it must read both.
    #[test]
    fn the_entries_of_a_file_listed_twice_share_a_group() {
        let c = |path: &str, size: u64| Candidate {
            live: CandidateFile {
                path: FilePath::new(path),
                size,
                records: 1,
                format: iceberg::spec::DataFileFormat::Parquet,
                partition: Arc::new(Struct::empty()),
                spec_id: 0,
                sequence_number: 1,
            },
            reads: None,
            has_deletes: false,
        };
        // Packed file by file (largest first), the two `dup` entries of 60 went to different
        // groups of 100: 60 + 40, 60 + 30.
        let bins = bin_pack(
            vec![c("dup", 60), c("a", 40), c("dup", 60), c("b", 30)],
            100,
        );
        let with_dup: Vec<usize> = bins
            .iter()
            .map(|b| b.iter().filter(|c| c.live.path == "dup").count())
            .filter(|n| *n > 0)
            .collect();
        assert_eq!(
            with_dup,
            [2],
            "{:?}",
            bins.iter()
                .map(|b| b
                    .iter()
                    .map(|c| c.live.path.to_string())
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
        assert_eq!(bins.iter().map(Vec::len).sum::<usize>(), 4);
        // Unique paths pack as before: largest first, first fit.
        let bins = bin_pack(vec![c("a", 40), c("b", 70), c("c", 30)], 100);
        let paths: Vec<Vec<String>> = bins
            .iter()
            .map(|b| b.iter().map(|c| c.live.path.to_string()).collect())
            .collect();
        assert_eq!(paths, [vec!["b", "c"], vec!["a"]]);
    }

    /// Labels read as Java's `Transform.toHumanString` prints each value: time transforms as
    /// dates and hours, doubles as `Double.toString`, an unknown transform as identity; without
    /// the partition type, only what prints from an `int` alone.
    #[test]
    fn partition_values_are_named_as_java_names_them() {
        let at = |t: Transform, n: i32| human_label(t, None, &Literal::int(n));
        assert_eq!(at(Transform::Year, 9), "1979");
        assert_eq!(at(Transform::Month, 625), "2022-02");
        assert_eq!(at(Transform::Month, -1), "1969-12");
        assert_eq!(at(Transform::Hour, 491_769), "2026-02-06-09");
        assert_eq!(at(Transform::Day, 3), "1970-01-04");
        assert_eq!(at(Transform::Bucket(16), 3), "3");
        // Doubles as Java's `Double.toString`: the folder `d=-0.0` is reported as such.
        let double = Type::Primitive(PrimitiveType::Double);
        let d = |v: f64| human_label(Transform::Identity, Some(&double), &Literal::double(v));
        assert_eq!(d(-0.0), "-0.0");
        assert_eq!(d(0.0), "0.0");
        assert_eq!(d(1e20), "1.0E20");
        assert_eq!(d(f64::NAN), "NaN");
        assert_eq!(d(f64::NEG_INFINITY), "-Infinity");
        // Written before the widening: printed promoted, apart from a double 0.1.
        let f = human_label(Transform::Identity, Some(&double), &Literal::float(0.1));
        assert_eq!(f, "0.10000000149011612");
        assert_ne!(f, d(0.1));
        // No partition type: time transforms and buckets print, identity shows the value raw.
        let raw = human_label(Transform::Identity, None, &Literal::int(20_480));
        assert_eq!(raw, format!("{:?}", Literal::int(20_480)));
        let s = Type::Primitive(PrimitiveType::String);
        let unknown = human_label(Transform::Unknown, Some(&s), &Literal::string("x"));
        assert_eq!(unknown, "x");
    }

    /// A partition written before its source column was widened keeps its `int`/`float`
    /// value; the report shows it as its promoted value instead of panicking, and NULL apart
    /// from the string "null".
    #[test]
    fn partition_names_of_values_written_before_a_widening() -> Result<()> {
        let schema = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "qty", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "score", Type::Primitive(PrimitiveType::Double))
                        .into(),
                    NestedField::optional(3, "s", Type::Primitive(PrimitiveType::String)).into(),
                ])
                .build()?,
        );
        let spec = PartitionSpec::builder(schema.clone())
            .add_partition_field("qty", "qty", Transform::Identity)?
            .add_partition_field("score", "score", Transform::Identity)?
            .add_partition_field("s", "s", Transform::Identity)?
            .build()?;
        let types = spec.partition_type(&schema)?;
        let old = Struct::from_iter([
            Some(Literal::int(7)),
            Some(Literal::float(0.5)),
            Some(Literal::string("null")),
        ]);
        let new = Struct::from_iter([Some(Literal::long(7)), Some(Literal::double(0.5)), None]);
        assert_eq!(
            partition_name(&spec, Some(&types), &old),
            "qty=7/score=0.5/s=null"
        );
        assert_eq!(
            partition_name(&spec, Some(&types), &new),
            "qty=7/score=0.5/s=null"
        );
        // Names may coincide; the groups are keyed by the canonical tuple, which does not.
        let key = ops_core::ops::canonical_partition;
        assert_ne!(key(&old), key(&new));
        assert_eq!(
            key(&old),
            key(&Struct::from_iter([
                Some(Literal::long(7)),
                Some(Literal::double(0.5)),
                Some(Literal::string("null")),
            ]))
        );
        // A value of no fitting type is shown raw, never a panic.
        let odd = Struct::from_iter([Some(Literal::string("x")), None, None]);
        assert!(partition_name(&spec, Some(&types), &odd).starts_with("qty="));
        // Dates and times this process cannot show are shown raw too.
        for (ty, v) in [
            (PrimitiveType::Date, Literal::date(i32::MAX)),
            (
                PrimitiveType::Time,
                Literal::Primitive(PrimitiveLiteral::Long(-1)),
            ),
            (PrimitiveType::Timestamp, Literal::timestamp(i64::MIN)),
            (PrimitiveType::Timestamptz, Literal::timestamptz(i64::MAX)),
        ] {
            let ty = Type::Primitive(ty);
            assert_eq!(
                human_label(Transform::Identity, Some(&ty), &v),
                format!("{v:?}")
            );
        }
        let date = Type::Primitive(PrimitiveType::Date);
        assert_eq!(
            human_label(Transform::Identity, Some(&date), &Literal::date(0)),
            "1970-01-01"
        );
        Ok(())
    }
}
