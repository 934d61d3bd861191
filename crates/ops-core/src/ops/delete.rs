//! Delete the rows matching a filter, copy-on-write: readable by every reader, PyIceberg
//! included (no delete files are written).
//!
//! A row is deleted only where the filter is TRUE — SQL's three-valued logic, as Spark and
//! PyIceberg apply it: a row whose filtered column is NULL, or a row of a file written before
//! the filtered column existed, is kept.
//!
//! 1. The candidates: live data files whose column statistics allow a row where the filter is
//!    TRUE (missing or incomparable statistics — a column the file predates, a value written
//!    before a widening — keep a file in).
//! 2. Read each candidate whole (its delete files applied), in the table's current schema, and
//!    evaluate the filter per row ([`crate::eval`]); stream the rows where it is not TRUE into
//!    new data files under the current schema and spec:
//!    - no row matched → the file is untouched (the rewrite is discarded);
//!    - every row matched → the file is dropped;
//!    - otherwise → the file is replaced by its rewrite.
//! 3. One snapshot (`delete` when files are only dropped, `overwrite` when some are rewritten).
//!    On a concurrent commit the whole plan is redone on the new base, so rows another writer
//!    added that match the filter are deleted too, and no commit of theirs is lost; the
//!    rewrites of the lost attempt are removed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::{StreamExt, TryStreamExt};
use iceberg::TableIdent;
use iceberg::arrow::{ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::expr::{Bind, BoundPredicate, Predicate};
use iceberg::scan::FileScanTask;
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;

use super::snapshot::{
    LiveEntry, LiveFile, ManifestCache, SnapshotMetrics, SnapshotProducer, UnmatchedDeletes,
    commit_snapshot, live_data_files, spec_by_id,
};
use crate::equality_deletes::EqualityDeletes;
use crate::keys::KeySet;
use crate::prune::may_match;
use crate::{CatalogHandle, Error, Result};

/// Deletes matching rows (see the module docs).
#[must_use = "a DeleteBuilder does nothing until awaited"]
pub struct DeleteBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    filter: Option<RowFilter>,
    properties: HashMap<String, String>,
}

/// Rows named by a predicate or by filter text.
#[derive(Clone, Debug)]
pub enum RowFilter {
    /// An iceberg predicate, naming columns as the current schema does.
    Predicate(Predicate),
    /// Filter text ([`crate::filter`]).
    Text(String),
}

impl RowFilter {
    /// The predicate, naming columns as the current snapshot's schema does (what iceberg's
    /// scan planning binds to); given as a predicate or as text, the columns are named as the
    /// table's current schema does (a rename makes no snapshot) and found by field id.
    pub fn resolve(&self, table: &Table) -> Result<Predicate> {
        match self {
            RowFilter::Predicate(p) => {
                crate::scan::to_snapshot_names(table, None, p, table.metadata().current_schema())
            }
            RowFilter::Text(text) => {
                let md = table.metadata();
                crate::filter::parse_filter_at(text, md.current_schema(), read_schema(table))
            }
        }
    }
}

/// The schema a filter over the table's current snapshot is typed by: that snapshot's own
/// schema (the current schema when the table has no snapshot).
pub fn read_schema(table: &Table) -> &iceberg::spec::Schema {
    let md = table.metadata();
    md.current_snapshot()
        .and_then(|s| s.schema_id())
        .and_then(|id| md.schema_by_id(id))
        .map(|s| s.as_ref())
        .unwrap_or_else(|| md.current_schema())
}

impl DeleteBuilder {
    /// A delete on `ident` in `handle`'s catalog; set the rows with [`Self::with_filter`].
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            filter: None,
            properties: HashMap::new(),
        }
    }

    /// The rows to delete, as a predicate naming columns as in the table's current schema (a
    /// renamed column is matched by field id).
    pub fn with_filter(mut self, filter: Predicate) -> Self {
        self.filter = Some(RowFilter::Predicate(filter));
        self
    }

    /// The rows to delete, as text naming columns as in the table's current schema (see
    /// [`crate::filter`]); a renamed column is matched by field id.
    pub fn with_filter_text(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(RowFilter::Text(filter.into()));
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    /// Plans the delete on the current table and reports it without committing anything:
    /// the files that would be dropped or rewritten and the rows that would go.
    pub async fn dry_run(self) -> Result<DeletePreview> {
        let filter = self.filter.ok_or_else(missing_filter)?;
        let table = self.handle.catalog().load_table(&self.ident).await?;
        crate::commit::refuse_v3(&table)?;
        let cache = ManifestCache::new(&table);
        let predicate = filter.resolve(&table)?;
        let plan = plan_delete(&table, &cache, predicate, false).await?;
        Ok(plan.map(|p| p.preview).unwrap_or_default())
    }

    /// Commits the delete and also reports which files were dropped and rewritten and how
    /// many rows went (as planned by the attempt that committed).
    pub async fn execute_with_report(self) -> Result<(Table, SnapshotMetrics, DeletePreview)> {
        let filter = self.filter.ok_or_else(missing_filter)?;
        let report: std::sync::Mutex<DeletePreview> = std::sync::Mutex::default();
        let (table, metrics) = commit_snapshot(&self.handle, &self.ident, |base| {
            let filter = filter.clone();
            let properties = self.properties.clone();
            let report = &report;
            async move {
                let cache = ManifestCache::new(&base);
                let predicate = filter.resolve(&base)?;
                let Some(plan) = plan_delete(&base, &cache, predicate, true).await? else {
                    *report.lock().unwrap_or_else(|p| p.into_inner()) = DeletePreview::default();
                    return Ok(None);
                };
                *report.lock().unwrap_or_else(|p| p.into_inner()) = plan.preview.clone();
                let operation = if plan.added.files.is_empty() {
                    Operation::Delete
                } else {
                    Operation::Overwrite
                };
                let rewrites: Vec<String> = plan.rewritten_paths();
                let produced = SnapshotProducer::new(&base, &cache, operation)
                    .remove_paths(plan.removed)
                    .add_files(plan.added.spec_id, plan.added.files)
                    .properties(properties)
                    .produce()
                    .await;
                match produced {
                    Ok(mut p) => {
                        p.change.written.extend(rewrites);
                        Ok(Some(p))
                    }
                    Err(e) => {
                        crate::commit::delete_quietly(base.file_io(), &rewrites).await;
                        Err(e)
                    }
                }
            }
        })
        .await?;
        let report = report.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok((table, metrics, report))
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        let (table, metrics, _) = self.execute_with_report().await?;
        Ok((table, metrics))
    }
}

fn missing_filter() -> Error {
    Error::InvalidInput("a delete needs a filter; to empty a table, filter on a condition that is always true, e.g. 'id IS NOT NULL OR id IS NULL'".into())
}

/// What a delete would do (a dry run), or did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletePreview {
    /// Files every row of which matches: removed without replacement.
    pub dropped_files: Vec<String>,
    /// Files some rows of which match: replaced by a rewrite of the others.
    pub rewritten_files: Vec<String>,
    /// Rows that match the filter.
    pub deleted_rows: u64,
}

/// The files a delete removes and the rewrites it adds.
pub(crate) struct DeletePlan {
    pub removed: Vec<String>,
    pub added: crate::write::WrittenFiles,
    pub preview: DeletePreview,
}

impl DeletePlan {
    pub(crate) fn rewritten_paths(&self) -> Vec<String> {
        self.added
            .files
            .iter()
            .map(|f| f.file_path().to_string())
            .collect()
    }
}

/// Whole-file scan tasks built from manifest entries, as iceberg's planner builds them for a
/// snapshot without delete files: every column of the table's read schema, the table's name
/// mapping (`schema.name-mapping.default`, for files written without field ids), and the file's
/// spec and tuple, so its identity-partition values are read as constants
/// (`partition_constants::for_reader`). A planner holding many files keeps their entries and
/// builds the tasks only when it reads the files.
pub struct WholeFileReads {
    schema: Arc<iceberg::spec::Schema>,
    ids: Vec<i32>,
    name_mapping: Option<Arc<iceberg::spec::NameMapping>>,
}

impl WholeFileReads {
    /// The reads of `table`'s files; `None` when a delete file may apply to them
    /// (`has_delete_manifests`): iceberg's planner must attach those ([`tasks`]).
    pub fn of(table: &Table, has_delete_manifests: bool) -> Result<Option<Self>> {
        if has_delete_manifests {
            return Ok(None);
        }
        Self::new(table).map(Some)
    }

    /// The reads of `table`'s files, for files the caller knows no delete file applies to.
    fn new(table: &Table) -> Result<Self> {
        let schema = Arc::new(read_schema(table).clone());
        let ids = schema.as_struct().fields().iter().map(|f| f.id).collect();
        let name_mapping = match table
            .metadata()
            .properties()
            .get(iceberg::spec::DEFAULT_SCHEMA_NAME_MAPPING)
        {
            None => None,
            Some(raw) => Some(Arc::new(
                serde_json::from_str::<iceberg::spec::NameMapping>(raw).map_err(|e| {
                    Error::InvalidInput(format!(
                        "{}: table property {} is not a name mapping ({e}); fix or remove it",
                        table.identifier(),
                        iceberg::spec::DEFAULT_SCHEMA_NAME_MAPPING
                    ))
                })?,
            )),
        };
        Ok(Self {
            schema,
            ids,
            name_mapping,
        })
    }

    /// The task reading all of `live`.
    pub fn task(&self, table: &Table, live: &impl LiveEntry) -> Result<FileScanTask> {
        let spec = spec_by_id(table, live.spec_id())?;
        Ok(FileScanTask::builder()
            .with_file_size_in_bytes(live.file_size())
            .with_start(0)
            .with_length(live.file_size())
            .with_record_count(Some(live.record_count()))
            .with_data_file_path(live.path().into_owned())
            .with_data_file_format(live.file_format())
            .with_schema(self.schema.clone())
            .with_project_field_ids(self.ids.clone())
            .with_partition(Some(live.partition().clone()))
            .with_partition_spec(Some(spec))
            .with_name_mapping(self.name_mapping.clone())
            .with_case_sensitive(true)
            .build())
    }
}

/// The scan tasks (delete files attached) of `candidates`, by file.
///
/// Without delete files ([`WholeFileReads`]), tasks are built from the manifests already read
/// (each manifest read once per attempt); otherwise iceberg's planner attaches the delete files
/// — unfiltered, since it decodes partition bounds with the current schema's types and would
/// prune files written before a partition source column was widened.
pub async fn tasks<'a, F: LiveEntry + 'a>(
    table: &Table,
    snapshot_id: i64,
    candidates: impl IntoIterator<Item = &'a F>,
    has_delete_manifests: bool,
) -> Result<BTreeMap<String, Vec<FileScanTask>>> {
    let mut by_file: BTreeMap<String, Vec<FileScanTask>> = BTreeMap::new();
    if let Some(reads) = WholeFileReads::of(table, has_delete_manifests)? {
        // A file listed twice has a task per entry: a reader reads its rows twice.
        for live in candidates {
            by_file
                .entry(live.path().into_owned())
                .or_default()
                .push(reads.task(table, live)?);
        }
        return Ok(by_file);
    }
    // iceberg's planner leaves the spec out of its tasks: each gets its file's, so its
    // identity-partition values are read as constants.
    let wanted: HashMap<String, i32> = candidates
        .into_iter()
        .map(|f| (f.path().into_owned(), f.spec_id()))
        .collect();
    // The planner yields every file of the snapshot: each task is kept or dropped as it
    // comes, so only the candidates' tasks are ever held.
    let mut tasks = table
        .scan()
        .snapshot_id(snapshot_id)
        .select_all()
        .build()?
        .plan_files()
        .await?;
    while let Some(mut t) = tasks.try_next().await? {
        if let Some(&spec_id) = wanted.get(&t.data_file_path) {
            t.partition_spec = Some(spec_by_id(table, spec_id)?);
            // Most files are one task: a vector of one, not of the default four.
            match by_file.entry(t.data_file_path.clone()) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(vec![t]);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().push(t),
            }
        }
    }
    Ok(by_file)
}

/// Refuses to rewrite a file whose delete files iceberg's reader would apply wrongly, so no
/// deleted row comes back and no live row is lost:
/// - equality deletes: iceberg 0.10.1 applies them as `col != v`, which drops rows whose key
///   column is NULL (in an equality delete NULL equals only NULL);
/// - `misses_deletes` ([`UnmatchedDeletes::misses`]): a delete file of its partition is stored
///   under another form of the partition value (written before or after a widening of its
///   source column), which iceberg's planner does not attach to it.
pub fn refuse_unsafe_rewrite(
    table: &Table,
    path: &str,
    tasks: &[FileScanTask],
    misses_deletes: bool,
) -> Result<()> {
    for t in tasks {
        if t.deletes
            .iter()
            .any(|d| d.file_type == iceberg::spec::DataContentType::EqualityDeletes)
        {
            return Err(Error::InvalidInput(format!(
                "{}: {path} has equality delete files, which iceberg-ops cannot yet apply \
                 safely while rewriting it (rows with NULL keys could be lost); compact the \
                 table with the engine that wrote them (e.g. Spark rewrite_data_files) first",
                table.identifier()
            )));
        }
    }
    if misses_deletes {
        return Err(Error::InvalidInput(format!(
            "{}: {path} has delete files stored under another form of its partition value \
             (written before or after its source column was widened), which iceberg-ops cannot \
             match to it reliably; compact the table with the engine that wrote the deletes \
             first",
            table.identifier()
        )));
    }
    Ok(())
}

/// Plans deleting the rows of `table`'s current snapshot where `filter` is TRUE; `None` when no
/// row matches. With `write` false nothing is written: only the preview is filled in.
pub(crate) async fn plan_delete(
    table: &Table,
    cache: &ManifestCache,
    filter: Predicate,
    write: bool,
) -> Result<Option<DeletePlan>> {
    plan_delete_among(table, cache, DeleteTarget::Filter(filter), write, &|_| true).await
}

/// The rows a copy-on-write delete removes: those where a filter is TRUE, or those whose key
/// is in a set ([`crate::keys`]: matched by hash, not by a predicate as large as the set).
#[derive(Clone)]
pub(crate) enum DeleteTarget {
    Filter(Predicate),
    Keys(Arc<KeySet>),
}

/// A [`DeleteTarget`] bound to a table: which files may hold such rows, which rows they are.
enum Matcher {
    Filter {
        /// For file statistics: no `NOT` left.
        pruning: BoundPredicate,
        evaluator: Box<crate::eval::Evaluator>,
    },
    Keys {
        keys: Arc<KeySet>,
        ids: Vec<i32>,
    },
}

impl Matcher {
    fn new(table: &Table, target: DeleteTarget) -> Result<Self> {
        Ok(match target {
            DeleteTarget::Filter(filter) => {
                let bound = filter.bind(Arc::new(read_schema(table).clone()), true)?;
                Matcher::Filter {
                    pruning: bound.clone().rewrite_not(),
                    evaluator: Box::new(crate::eval::Evaluator::new(bound)),
                }
            }
            DeleteTarget::Keys(keys) => {
                let ids = keys.field_ids(table.metadata().current_schema())?;
                Matcher::Keys { keys, ids }
            }
        })
    }

    fn may_match(&self, file: &DataFile) -> bool {
        match self {
            Matcher::Filter { pruning, .. } => may_match(pruning, file),
            Matcher::Keys { keys, ids } => keys.may_match(ids, file),
        }
    }

    /// TRUE for the rows of `batch` (in the table's current schema) to delete.
    fn evaluate(&self, batch: &arrow_array::RecordBatch) -> Result<arrow_array::BooleanArray> {
        match self {
            Matcher::Filter { evaluator, .. } => evaluator.evaluate(batch),
            Matcher::Keys { keys, ids } => keys.matches(ids, batch),
        }
    }
}

/// [`plan_delete`] of only the files for which `consider` is true (an overwrite removes some
/// whole; an upsert knows which files may hold its keys).
pub(crate) async fn plan_delete_among(
    table: &Table,
    cache: &ManifestCache,
    target: DeleteTarget,
    write: bool,
    consider: &(dyn Fn(&str) -> bool + Send + Sync),
) -> Result<Option<DeletePlan>> {
    crate::scan::refuse_column_defaults(table)?;
    let Some(snapshot_id) = table.metadata().current_snapshot_id() else {
        return Ok(None);
    };
    // Files whose column statistics allow a TRUE row (missing or incomparable statistics —
    // a column the file predates, a value written before a widening — count as "may").
    let matcher = Arc::new(Matcher::new(table, target)?);
    let live = live_data_files(table, cache).await?;
    // A file is rewritten from every entry of it or not at all: its commit removes it by
    // path, every entry (a file listed twice whose entries differ in their statistics may
    // match through one of them only).
    let chosen: HashSet<String> = live
        .iter()
        .filter(|f| consider(f.file.file_path()) && matcher.may_match(&f.file))
        .map(|f| f.file.file_path().to_string())
        .collect();
    let candidates: Vec<LiveFile> = live
        .into_iter()
        .filter(|f| chosen.contains(f.file.file_path()))
        .collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    // The list `live_data_files` just read (the cache's copy, not a second read).
    let has_delete_manifests = match table.metadata().current_snapshot() {
        Some(snap) => cache
            .manifest_list(snap)
            .await?
            .iter()
            .any(|m| m.content == iceberg::spec::ManifestContentType::Deletes),
        None => false,
    };
    let unmatched = UnmatchedDeletes::load(table, cache).await?;
    let misses: HashSet<String> = candidates
        .iter()
        .filter(|f| unmatched.misses(*f))
        .map(|f| f.file.file_path().to_string())
        .collect();
    let mut candidates = tasks(table, snapshot_id, &candidates, has_delete_manifests).await?;
    if candidates.is_empty() {
        return Ok(None);
    }
    if has_delete_manifests {
        // An all-`void` spec's equality deletes apply to every older file; iceberg's planner
        // attaches them to the NULL tuple's files only (rewritten without them, a file's
        // deleted rows would come back).
        let mut all: Vec<FileScanTask> = std::mem::take(&mut candidates)
            .into_values()
            .flatten()
            .collect();
        crate::equality_deletes::attach_global_deletes(table, snapshot_id, &mut all).await?;
        for task in all {
            candidates
                .entry(task.data_file_path.clone())
                .or_default()
                .push(task);
        }
    }
    let reader =
        ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::try_current()?).build();
    // Equality deletes are applied here, null-safe, not by iceberg's reader (which would drop
    // the rows whose equality column is NULL); each delete file is read once for the plan.
    // Keys on columns dropped since are read by field id and cut off before the filter and
    // the write.
    let equality = Arc::new(EqualityDeletes::for_read(
        table,
        crate::write::table_arrow_schema(table)?,
        reader.clone(),
        candidates.values().flatten().flat_map(|t| t.deletes.iter()),
    )?);
    let mut plan = DeletePlan {
        removed: Vec::new(),
        added: crate::write::WrittenFiles {
            spec_id: table.metadata().default_partition_spec_id(),
            files: Vec::new(),
        },
        preview: DeletePreview::default(),
    };
    let result = async {
        for (path, planned) in candidates {
            let mut file_tasks = Vec::with_capacity(planned.len());
            let mut task_keys = Vec::with_capacity(planned.len());
            for task in planned {
                let (task, k) = equality.split(task).await?;
                file_tasks.push(task);
                task_keys.push(k);
            }
            refuse_unsafe_rewrite(table, &path, &file_tasks, misses.contains(&path))?;
            let read_schema = Arc::new(schema_to_arrow_schema(&file_tasks[0].schema)?);
            let read = Arc::new(AtomicU64::new(0));
            let kept = Arc::new(AtomicU64::new(0));
            // Each task with its own equality deletes: a file listed twice has a task per
            // entry, and a delete committed between its two additions applies to the older
            // entry only (its data sequence number is lower).
            let reader_c = reader.clone();
            let (read_all, kept_all) = (read.clone(), kept.clone());
            let (equality, matcher) = (equality.clone(), matcher.clone());
            let batches = futures::stream::iter(file_tasks.into_iter().zip(task_keys))
                .map(move |(task, keys)| {
                    let (read_c, kept_c) = (read_all.clone(), kept_all.clone());
                    let (read_schema, equality) = (read_schema.clone(), equality.clone());
                    let matcher = matcher.clone();
                    let task = crate::partition_constants::for_reader(task);
                    let stream = match reader_c
                        .clone()
                        .read(futures::stream::once(async move { task }).boxed())
                    {
                        Ok(s) => s.stream().map_err(Error::from).boxed(),
                        Err(e) => futures::stream::once(async move { Err(Error::from(e)) }).boxed(),
                    };
                    stream.map(move |b| {
                        let b = equality.apply(&b?, &read_schema, &keys)?;
                        let keep = crate::eval::not_true(&matcher.evaluate(&b)?);
                        let out = arrow_select::filter::filter_record_batch(&b, &keep)?;
                        read_c.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
                        kept_c.fetch_add(out.num_rows() as u64, Ordering::Relaxed);
                        Ok(out)
                    })
                })
                .flatten();
            let written: Vec<DataFile> = if write {
                crate::write::write_data_files(table, Box::pin(batches)).await?
            } else {
                let mut batches = Box::pin(batches);
                while let Some(b) = batches.next().await {
                    b?;
                }
                Vec::new()
            };
            let (read, kept) = (read.load(Ordering::Relaxed), kept.load(Ordering::Relaxed));
            if kept == read {
                // Nothing in this file matched: keep it (and its delete files), drop the rewrite.
                let paths: Vec<String> =
                    written.iter().map(|f| f.file_path().to_string()).collect();
                crate::commit::delete_quietly(table.file_io(), &paths).await;
                continue;
            }
            plan.preview.deleted_rows += read - kept;
            if kept == 0 {
                plan.preview.dropped_files.push(path.clone());
            } else {
                plan.preview.rewritten_files.push(path.clone());
            }
            plan.removed.push(path);
            plan.added.files.extend(written);
        }
        Ok::<(), Error>(())
    }
    .await;
    if let Err(e) = result {
        crate::commit::delete_quietly(table.file_io(), &plan.rewritten_paths()).await;
        return Err(e);
    }
    if plan.removed.is_empty() {
        return Ok(None);
    }
    Ok(Some(plan))
}

impl IntoFuture for DeleteBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, HashMap};

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use iceberg::expr::Reference;
    use iceberg::spec::{Datum, NestedField, PrimitiveType, Schema, Type};
    use iceberg::{NamespaceIdent, TableCreation};

    use super::*;
    use crate::catalog::{CatalogConfig, CatalogDefinition};

    /// `ns.t(id long required, region string)` in a SQLite catalog under `dir`, with two
    /// files: ids 1, 2 and ids 3, 4 (regions `eu` and NULL).
    pub(crate) async fn table_with_two_files(
        dir: &std::path::Path,
    ) -> anyhow::Result<(CatalogHandle, Table)> {
        let props: BTreeMap<String, String> = [
            ("type".to_string(), "sql".to_string()),
            (
                "uri".into(),
                format!("sqlite:///{}/catalog.db", dir.display()),
            ),
            ("warehouse".into(), format!("file://{}/wh", dir.display())),
        ]
        .into();
        let mut config = CatalogConfig::empty();
        config.insert(CatalogDefinition::inline("t", props));
        let handle = crate::CatalogFactory::new(config).open("t").await?;
        let ns = NamespaceIdent::new("ns".into());
        handle
            .catalog()
            .create_namespace(&ns, HashMap::new())
            .await?;
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let mut table = handle
            .catalog()
            .create_table(
                &ns,
                TableCreation::builder()
                    .name("t".into())
                    .schema(schema)
                    .build(),
            )
            .await?;
        for ids in [vec![1, 2], vec![3, 4]] {
            let batch = RecordBatch::try_new(
                crate::write::table_arrow_schema(&table)?,
                vec![
                    std::sync::Arc::new(Int64Array::from(ids)),
                    std::sync::Arc::new(StringArray::from(vec![Some("eu"), None])),
                ],
            )?;
            let files =
                crate::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
            table = crate::ops::append::AppendBuilder::new(&handle, table.identifier().clone())
                .add_written(files)
                .await?
                .0;
        }
        Ok((handle, table))
    }

    /// One delete attempt (plan, rewrite, produce the snapshot) reads the manifest list once.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_delete_attempt_reads_the_manifest_list_once() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (_, table) = table_with_two_files(dir.path()).await?;
        let cache = ManifestCache::new(&table);
        let plan = plan_delete(
            &table,
            &cache,
            Reference::new("id").equal_to(Datum::long(1)),
            true,
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("id 1 matches"))?;
        assert_eq!(plan.preview.deleted_rows, 1);
        SnapshotProducer::new(&table, &cache, Operation::Overwrite)
            .remove_paths(plan.removed)
            .add_files(plan.added.spec_id, plan.added.files)
            .produce()
            .await?;
        assert_eq!(cache.lists_read(), 1);
        Ok(())
    }

    /// Manifest lists are read only through the per-attempt cache (which
    /// `a_delete_attempt_reads_the_manifest_list_once` counts); a direct read elsewhere in the
    /// operations would be a second, uncounted read of the same list.
    #[test]
    fn operations_read_manifest_lists_only_through_the_cache() {
        let direct = concat!("manifest_list", "_reader(");
        for (name, src) in [
            ("append.rs", include_str!("append.rs")),
            ("delete.rs", include_str!("delete.rs")),
            ("overwrite.rs", include_str!("overwrite.rs")),
            (
                "replace_partitions.rs",
                include_str!("replace_partitions.rs"),
            ),
            ("validate.rs", include_str!("validate.rs")),
        ] {
            assert!(
                !src.contains(direct),
                "{name} reads a manifest list directly; use ManifestCache::manifest_list"
            );
        }
        let snapshot = include_str!("snapshot.rs");
        assert_eq!(
            snapshot.matches(direct).count(),
            1,
            "snapshot.rs reads manifest lists only in ManifestCache::manifest_list"
        );
    }
}
