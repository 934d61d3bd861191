//! The planned read: a pinned snapshot planned into file-scan tasks in a fixed order.
//!
//! iceberg's own `TableScan::to_arrow` reads files concurrently and yields batches in whatever
//! order they finish, so batch `k` of one run need not hold the rows of batch `k` of the next.
//! A resumable migration numbers its batches, so here the tasks are sorted by file path (and
//! read one file after the other, see `execute::read`).
//!
//! 1. Refuse the hazard of a partition column widened after files were written (iceberg's
//!    planner would miss the deletes that apply to the older files).
//! 2. Plan the snapshot's files with the row filter (`ops_core::scan::plan_files_stream_named`,
//!    which prunes files written under a column's older type correctly) task by task, keeping
//!    of each task only what differs from file to file ([`ReadFile`]: path, range, counts,
//!    partition, deletes) and what the tasks share once ([`TaskCommon`]: format, schema,
//!    projection, row filter, spec, name mapping, case sensitivity) — a million planned files hold a tenth of a GB, not the
//!    half a GB their tasks would. Then sort the files by path and offset.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use iceberg::expr::{BoundPredicate, Predicate};
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::{DataFileFormat, NameMapping, PartitionSpec, SchemaRef, Struct};
use iceberg::table::Table;

use ops_core::file_path::{FilePath, FilePathMap, FilePaths};
use ops_core::partition_tuples::PartitionTuples;

use crate::{MigrationError, Result};

/// One planned file: what its file-scan task holds that differs from file to file. The rest is
/// its [`TaskCommon`], shared; [`ReadFile::into_task`] puts the two together again.
#[derive(Debug, Clone)]
pub(crate) struct ReadFile {
    /// The data file's path (its directory shared with the read's other files).
    pub path: FilePath,
    /// Its size in bytes, from the manifest entry.
    pub file_size: u64,
    /// The byte range read.
    pub start: u64,
    pub length: u64,
    /// Rows in the file, per the manifest (whole files only).
    pub record_count: Option<u64>,
    /// The manifest entry's partition tuple (one copy per partition, shared by its files).
    pub partition: Option<Arc<Struct>>,
    /// The delete files that may apply to it.
    pub deletes: Box<[FileScanTaskDeleteFile]>,
    /// What its task shares with the others.
    common: Arc<TaskCommon>,
}

impl ReadFile {
    /// True when the task reads the whole file.
    pub fn whole(&self) -> bool {
        self.start == 0 && self.length == self.file_size
    }

    /// Its file-scan task.
    pub fn into_task(self) -> FileScanTask {
        let common = self.common.clone();
        common.task(self)
    }
}

/// What the file-scan tasks of a read share: one schema, projection, row filter and name
/// mapping per planned read, one per partition spec (see [`ReadFile`]).
#[derive(Debug, Clone)]
pub(crate) struct TaskCommon {
    format: DataFileFormat,
    schema: SchemaRef,
    project_field_ids: Vec<i32>,
    predicate: Option<BoundPredicate>,
    partition_spec: Option<Arc<PartitionSpec>>,
    name_mapping: Option<Arc<NameMapping>>,
    case_sensitive: bool,
}

impl TaskCommon {
    fn of(t: &FileScanTask) -> Self {
        Self {
            format: t.data_file_format,
            schema: t.schema.clone(),
            project_field_ids: t.project_field_ids.clone(),
            predicate: t.predicate.clone(),
            partition_spec: t.partition_spec.clone(),
            name_mapping: t.name_mapping.clone(),
            case_sensitive: t.case_sensitive,
        }
    }

    /// True when `t` shares all of this (pointers compared first: the planner hands every
    /// task clones of the same `Arc`s).
    fn matches(&self, t: &FileScanTask) -> bool {
        fn same<T: PartialEq>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                (None, None) => true,
                _ => false,
            }
        }
        self.format == t.data_file_format
            && self.case_sensitive == t.case_sensitive
            && (Arc::ptr_eq(&self.schema, &t.schema) || self.schema == t.schema)
            && self.project_field_ids == t.project_field_ids
            && same(&self.partition_spec, &t.partition_spec)
            && same(&self.name_mapping, &t.name_mapping)
            && self.predicate == t.predicate
    }

    fn task(&self, f: ReadFile) -> FileScanTask {
        FileScanTask {
            file_size_in_bytes: f.file_size,
            start: f.start,
            length: f.length,
            record_count: f.record_count,
            data_file_path: f.path.to_path_string(),
            data_file_format: self.format,
            schema: self.schema.clone(),
            project_field_ids: self.project_field_ids.clone(),
            predicate: self.predicate.clone(),
            deletes: f.deletes.into_vec(),
            partition: f.partition.map(Arc::unwrap_or_clone),
            partition_spec: self.partition_spec.clone(),
            name_mapping: self.name_mapping.clone(),
            case_sensitive: self.case_sensitive,
        }
    }
}

/// The [`TaskCommon`]s of a read, each kept once, and the directories and partition tuples of
/// its files: a table has far fewer of them than files.
#[derive(Default)]
struct Commons {
    commons: Vec<Arc<TaskCommon>>,
    paths: FilePaths,
    partitions: PartitionTuples,
}

impl Commons {
    /// `t` as a [`ReadFile`] pointing at its common part.
    fn file(&mut self, t: FileScanTask) -> ReadFile {
        let common = match self.commons.iter().find(|c| c.matches(&t)) {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(TaskCommon::of(&t));
                self.commons.push(c.clone());
                c
            }
        };
        ReadFile {
            path: self.paths.path(&t.data_file_path),
            file_size: t.file_size_in_bytes,
            start: t.start,
            length: t.length,
            record_count: t.record_count,
            partition: t.partition.map(|p| self.partitions.share(p)),
            deletes: t.deletes.into_boxed_slice(),
            common,
        }
    }
}

/// The planned read of one table at one snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRead {
    /// The snapshot read (`None`: the table has no snapshot, nothing to read).
    pub snapshot_id: Option<i64>,
    /// The planned files in read order (shared: a stream of the read holds the list, not a
    /// copy of it).
    pub files: Arc<Vec<ReadFile>>,
    /// True when a row filter is applied.
    pub filtered: bool,
    /// The schema batches come out in (`None`: the table's current one); a migration's
    /// source read uses the pinned snapshot's.
    pub target: Option<iceberg::spec::SchemaRef>,
    /// Only these top-level columns (field ids) are decoded, plus those the row filter and
    /// the equality deletes need, so the read yields the very same rows in the same order
    /// with fewer columns (`None`: every column). See [`PlannedRead::only_columns`].
    pub columns: Option<Vec<i32>>,
}

impl PlannedRead {
    /// Batches come out in `schema` instead of the table's current schema.
    pub fn in_schema(mut self, schema: iceberg::spec::SchemaRef) -> Self {
        self.target = Some(schema);
        self
    }

    /// The same rows, in the same order, with only the top-level columns `ids` (and the ones
    /// the row filter and equality deletes read, which decide the rows) decoded: the upsert's
    /// key pre-pass numbers rows exactly as the full read does.
    pub fn only_columns(mut self, ids: Vec<i32>) -> Self {
        self.columns = Some(ids);
        self
    }

    /// Plans `table` at `snapshot_id` with `filter`.
    pub async fn plan(
        table: &Table,
        snapshot_id: Option<i64>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let Some(id) = snapshot_id else {
            return Ok(Self {
                snapshot_id: None,
                files: Arc::new(Vec::new()),
                filtered: filter.is_some(),
                target: None,
                columns: None,
            });
        };
        let filtered = filter.is_some();
        refuse_widened_hazards(table, id).await?;
        // ops-core's planning: iceberg's planner alone would prune every file written before
        // a filtered column was widened (it compares `int` bounds with a `long` literal).
        // The filter names columns as the snapshot's own schema does (`plan::row_predicate`).
        let names = crate::plan::snapshot_own_schema(table, Some(id));
        // iceberg's planner attaches an all-`void` spec's equality deletes to the files of its
        // own tuple of NULLs only; they apply to every older file.
        let globals = ops_core::equality_deletes::GlobalDeletes::load(table, id).await?;
        // Room for every live file at once: growing the list by doubling would copy it, and
        // would hold the old and the new list together at the peak. Pages reserved for files
        // a filter prunes are never touched, so they cost no memory.
        let mut files = Vec::new();
        // A count a corrupt manifest list inflates must not abort the process: without the
        // room, the list grows as it goes.
        if files
            .try_reserve_exact(live_files_upper_bound(table, id).await?)
            .is_err()
        {
            tracing::debug!(table = %table.identifier(), "planning without reserved room");
        }
        let mut commons = Commons::default();
        let mut tasks =
            ops_core::scan::plan_files_stream_named(table, id, filter.as_ref(), &names).await?;
        while let Some(mut t) = tasks.try_next().await? {
            if let Some(g) = &globals {
                g.attach(&t.data_file_path, &mut t.deletes)?;
            }
            files.push(commons.file(t));
        }
        files.sort_unstable_by(|a: &ReadFile, b: &ReadFile| {
            (&a.path, a.start).cmp(&(&b.path, b.start))
        });
        Ok(Self {
            snapshot_id: Some(id),
            files: Arc::new(files),
            filtered,
            target: None,
            columns: None,
        })
    }

    /// A read of `tasks` as they are, in their order (for tests of what consumes a read).
    #[cfg(test)]
    pub fn of_tasks(snapshot_id: Option<i64>, tasks: Vec<FileScanTask>) -> Self {
        let mut commons = Commons::default();
        Self {
            snapshot_id,
            files: Arc::new(tasks.into_iter().map(|t| commons.file(t)).collect()),
            filtered: false,
            target: None,
            columns: None,
        }
    }

    /// A whole-file task of `path` over an empty schema, nothing else set: the task the tests
    /// of what consumes a read build reads of.
    #[cfg(test)]
    pub fn bare_task(path: &str, size: u64, record_count: Option<u64>) -> FileScanTask {
        FileScanTask {
            file_size_in_bytes: size,
            start: 0,
            length: size,
            record_count,
            data_file_path: path.to_string(),
            data_file_format: DataFileFormat::Parquet,
            schema: Arc::new(
                iceberg::spec::Schema::builder()
                    .build()
                    .unwrap_or_else(|e| panic!("an empty schema: {e}")),
            ),
            project_field_ids: vec![],
            predicate: None,
            deletes: vec![],
            partition: None,
            partition_spec: None,
            name_mapping: None,
            case_sensitive: true,
        }
    }

    /// The file-scan tasks of this read's files, in order, made one at a time.
    pub fn tasks(&self) -> impl Iterator<Item = FileScanTask> + Send + 'static {
        let files = self.files.clone();
        (0..files.len()).filter_map(move |i| files.get(i).cloned().map(ReadFile::into_task))
    }

    /// The row filter the tasks carry, bound to the snapshot's schema.
    pub fn predicate(&self) -> Option<&BoundPredicate> {
        self.files.iter().find_map(|f| f.common.predicate.as_ref())
    }

    /// True when some task has delete files to apply.
    pub fn has_deletes(&self) -> bool {
        self.files.iter().any(|t| !t.deletes.is_empty())
    }

    /// The exact row count from manifests alone: known when no filter and no delete file
    /// applies and every task covers a whole file.
    pub fn exact_rows(&self) -> Option<u64> {
        if self.filtered || self.has_deletes() {
            return None;
        }
        self.files
            .iter()
            .map(|t| t.record_count)
            .sum::<Option<u64>>()
    }

    /// Orders the tasks by the data sequence number of their file, then by path and offset:
    /// an upsert's source order, where a later row of a key wins (a file written by a later
    /// commit holds the newer rows of a change-capture feed). Deterministic, so a resume
    /// replays the same order.
    pub async fn order_by_sequence_number(&mut self, table: &Table) -> Result<()> {
        let Some(snapshot) = self
            .snapshot_id
            .and_then(|id| table.metadata().snapshot_by_id(id).cloned())
        else {
            return Ok(());
        };
        let list = table.manifest_list_reader(&snapshot).load().await?;
        // The read's own paths, found by the entries' strings: no path is made again.
        // (0 for a file the manifests do not list, which cannot be planned: the sort stays
        // total anyway.)
        let mut sequence: FilePathMap<i64> = FilePathMap::new();
        for f in self.files.iter() {
            sequence.entry_or_insert_with(f.path.clone(), || 0);
        }
        for mf in list.entries() {
            if mf.content != iceberg::spec::ManifestContentType::Data {
                continue;
            }
            let mut entries = std::pin::pin!(ops_core::manifests::entries(table.file_io(), mf));
            while let Some(entry) = futures::TryStreamExt::try_next(&mut entries).await? {
                if entry.is_alive()
                    && let Some(seq) = sequence.get_str_mut(entry.file_path())
                {
                    *seq = entry.sequence_number().unwrap_or(mf.sequence_number);
                }
            }
        }
        let seq = |path: &FilePath| sequence.get(path).copied().unwrap_or(0);
        Arc::make_mut(&mut self.files).sort_by(|a, b| {
            (seq(&a.path), &a.path, a.start).cmp(&(seq(&b.path), &b.path, b.start))
        });
        Ok(())
    }

    /// The same read restricted to `files` (a subset of this read's files).
    pub fn with_files(&self, files: Vec<ReadFile>) -> Self {
        Self {
            snapshot_id: self.snapshot_id,
            files: Arc::new(files),
            filtered: self.filtered,
            target: self.target.clone(),
            columns: self.columns.clone(),
        }
    }
}

/// Where each planned file of a read is in its list, by path. A read in path order (every
/// planned read is, until an upsert orders it by sequence number) is searched in place; only
/// another order needs a map, which at a million files is some 50 MB of buckets.
#[derive(Debug)]
pub(crate) enum FileIndex {
    /// The files are sorted by path and offset: binary search.
    Sorted,
    /// Any other order: each path's position.
    Map(HashMap<FilePath, usize>),
}

impl FileIndex {
    /// The index of `read`'s files.
    pub fn of(read: &PlannedRead) -> Self {
        let files = &read.files;
        if files.is_sorted_by(|a, b| (&a.path, a.start) <= (&b.path, b.start)) {
            return Self::Sorted;
        }
        Self::Map(
            files
                .iter()
                .enumerate()
                .map(|(i, t)| (t.path.clone(), i))
                .collect(),
        )
    }

    /// The planned file of `path` in `read` (the last one, should the manifests list a path
    /// twice, as the map keeps it).
    pub fn get<'a>(&self, read: &'a PlannedRead, path: &FilePath) -> Option<&'a ReadFile> {
        let files = &read.files;
        match self {
            Self::Sorted => files
                .partition_point(|f| f.path <= *path)
                .checked_sub(1)
                .and_then(|i| files.get(i))
                .filter(|f| f.path == *path),
            Self::Map(m) => m.get(path).and_then(|i| files.get(*i)),
        }
    }
}

/// Live data files a snapshot's manifest list counts (added and existing, per manifest): no
/// plan of it holds more. 0 when a manifest does not say.
async fn live_files_upper_bound(table: &Table, snapshot_id: i64) -> Result<usize> {
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(0);
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut n = 0u64;
    for mf in list.entries() {
        if mf.content != iceberg::spec::ManifestContentType::Data {
            continue;
        }
        match (mf.added_files_count, mf.existing_files_count) {
            (Some(a), Some(e)) => n += u64::from(a) + u64::from(e),
            _ => return Ok(0),
        }
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Field ids of partition source columns whose type differs between two of the table's schemas
/// (an `int` widened to `long`, ...), with their current names.
fn widened_partition_sources(table: &Table) -> Vec<(i32, String)> {
    let md = table.metadata();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for spec in md.partition_specs_iter() {
        for pf in spec.fields() {
            if !seen.insert(pf.source_id) {
                continue;
            }
            let mut types = md
                .schemas_iter()
                .filter_map(|s| s.field_by_id(pf.source_id))
                .map(|f| f.field_type.to_string());
            let Some(first) = types.next() else { continue };
            if types.any(|t| t != first) {
                let name = md
                    .current_schema()
                    .name_by_field_id(pf.source_id)
                    .unwrap_or("?")
                    .to_string();
                out.push((pf.source_id, name));
            }
        }
    }
    out
}

/// iceberg 0.10.1 reads a partition value written before its source column was widened with
/// the old type, so its planner never matches delete files written after the widening to such
/// a file — deleted rows would come back. Refused here, naming the column. (A row filter on
/// such a column is planned by ops-core, which compares across the column's types.)
async fn refuse_widened_hazards(table: &Table, snapshot_id: i64) -> Result<()> {
    let widened = widened_partition_sources(table);
    if widened.is_empty() {
        return Ok(());
    }
    let names = widened
        .iter()
        .map(|(_, n)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let missing = ops_core::ops::files_missing_deletes(table, snapshot_id).await?;
    if let Some(first) = missing.first() {
        return Err(MigrationError::InvalidInput(format!(
            "{} has delete files and partition column(s) {names} widened since some files \
             were written; iceberg 0.10.1 cannot match those deletes to {} older file(s) (e.g. \
             {first}), so deleted rows would come back — rewrite (compact) the source's data \
             files with the engine that wrote the deletes before migrating it",
            table.identifier(),
            missing.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use iceberg::scan::FileScanTaskDeleteFile;
    use iceberg::spec::{
        DataContentType, Literal, NestedField, PrimitiveType, Schema, Transform, Type,
        UnboundPartitionField,
    };

    use super::*;

    /// A read in path order is searched in place, another order through a map, and both find
    /// the same file for a path: the last one, should the manifests list a path twice.
    #[test]
    fn a_file_is_found_by_path_in_any_order() {
        let read = |paths: &[(&str, u64)]| {
            PlannedRead::of_tasks(
                Some(1),
                paths
                    .iter()
                    .map(|(p, size)| PlannedRead::bare_task(p, *size, Some(1)))
                    .collect(),
            )
        };
        let sorted = read(&[("a", 1), ("b", 2), ("b", 3), ("c", 4)]);
        let shuffled = read(&[("c", 4), ("b", 2), ("a", 1), ("b", 3)]);
        let (by_search, by_map) = (FileIndex::of(&sorted), FileIndex::of(&shuffled));
        assert!(matches!(by_search, FileIndex::Sorted));
        assert!(matches!(by_map, FileIndex::Map(_)));
        for (index, read) in [(&by_search, &sorted), (&by_map, &shuffled)] {
            let size = |p: &str| index.get(read, &FilePath::new(p)).map(|f| f.file_size);
            assert_eq!(size("a"), Some(1));
            assert_eq!(size("b"), Some(3));
            assert_eq!(size("c"), Some(4));
            assert_eq!(size(""), None);
            assert_eq!(size("bb"), None);
            assert_eq!(size("d"), None);
        }
    }

    fn task(
        path: &str,
        schema: &SchemaRef,
        spec: Option<&Arc<PartitionSpec>>,
        deletes: Vec<FileScanTaskDeleteFile>,
    ) -> FileScanTask {
        FileScanTask {
            schema: schema.clone(),
            project_field_ids: vec![1],
            deletes,
            partition: spec.map(|_| Struct::from_iter([Some(Literal::string(path))])),
            partition_spec: spec.cloned(),
            ..PlannedRead::bare_task(path, 100, Some(7))
        }
    }

    fn schema_and_specs() -> Option<(SchemaRef, Arc<PartitionSpec>, Arc<PartitionSpec>)> {
        let schema = Schema::builder()
            .with_fields([
                NestedField::optional(1, "r", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .ok()?;
        let spec = |id: i32| {
            PartitionSpec::builder(schema.clone())
                .with_spec_id(id)
                .add_unbound_field(UnboundPartitionField {
                    source_id: 1,
                    field_id: Some(1000),
                    name: "r".into(),
                    transform: Transform::Identity,
                })
                .and_then(|b| b.build())
                .ok()
                .map(Arc::new)
        };
        Some((Arc::new(schema.clone()), spec(0)?, spec(1)?))
    }

    /// A planned read keeps one copy of what tasks share and gives every task back whole:
    /// its own spec, partition and deletes, the shared schema and projection.
    #[test]
    fn files_give_back_the_tasks_they_were_planned_from() {
        let Some((schema, s0, s1)) = schema_and_specs() else {
            panic!("test schema")
        };
        let delete = FileScanTaskDeleteFile {
            file_path: "d.parquet".into(),
            file_size_in_bytes: 10,
            file_type: DataContentType::PositionDeletes,
            partition_spec_id: 0,
            equality_ids: None,
        };
        let tasks = vec![
            task("a", &schema, Some(&s0), vec![]),
            task("b", &schema, Some(&s1), vec![delete]),
            task("c", &schema, Some(&s0), vec![]),
            task("d", &schema, None, vec![]),
        ];
        let read = PlannedRead::of_tasks(Some(1), tasks.clone());
        assert_eq!(read.tasks().collect::<Vec<_>>(), tasks);
        // Three kinds of task (spec 0, spec 1, no spec); files of one kind share one part.
        let mut commons: Vec<*const TaskCommon> =
            read.files.iter().map(|f| Arc::as_ptr(&f.common)).collect();
        assert!(std::ptr::eq(commons[0], commons[2]));
        commons.sort();
        commons.dedup();
        assert_eq!(commons.len(), 3);
        assert!(read.has_deletes());
        assert_eq!(read.exact_rows(), None);
        let subset = read.with_files(vec![read.files[2].clone()]);
        assert_eq!(subset.tasks().collect::<Vec<_>>(), vec![tasks[2].clone()]);
        assert_eq!(subset.exact_rows(), Some(7));
    }
}
