//! The source read: a pinned snapshot planned into file-scan tasks, read in a fixed order.
//!
//! iceberg's own `TableScan::to_arrow` reads files concurrently and yields batches in whatever
//! order they finish, so batch `k` of one run need not hold the rows of batch `k` of the next.
//! A resumable migration numbers its batches, so here the tasks are sorted by file path and read
//! one file after the other, each batch mapped onto the table's current schema by field id
//! (renamed and widened columns, added columns as nulls).
//!
//! Delete files written by other engines:
//! - position deletes are applied by iceberg's reader;
//! - equality deletes are applied here. iceberg 0.10.1 turns a deleted key `k = 5` into the row
//!   filter `k != 5`, which is NULL — so "drop" — for every row whose `k` is NULL, losing rows
//!   no delete names. The spec matches equality deletes with null-safe equality (a NULL key is
//!   deleted only by a NULL in the delete file), so the keys of each equality delete file are
//!   loaded once (cached per read), encoded with arrow's row format (where NULL equals NULL and
//!   nothing else), and every batch of the data files it applies to is anti-joined against them.
//!   Which delete files apply to which data file (partition, sequence numbers: strictly newer
//!   for equality, newer or equal for position deletes) is still iceberg's planning.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{ArrowReader, ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::expr::Predicate;
use iceberg::io::FileIO;
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::{DataContentType, DataFileFormat, Schema};
use iceberg::table::Table;
use tokio::sync::Mutex;

use crate::{MigrationError, Result, paged};

const FIELD_ID: &str = "PARQUET:field_id";

/// The planned read of one table at one snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRead {
    /// The snapshot read (`None`: the table has no snapshot, nothing to read).
    pub snapshot_id: Option<i64>,
    /// File-scan tasks in read order.
    pub tasks: Vec<FileScanTask>,
    /// True when a row filter is applied.
    pub filtered: bool,
}

impl PlannedRead {
    /// Plans `table` at `snapshot_id` with `filter`.
    pub async fn plan(
        table: &Table,
        snapshot_id: Option<i64>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let Some(id) = snapshot_id else {
            return Ok(Self {
                snapshot_id: None,
                tasks: Vec::new(),
                filtered: filter.is_some(),
            });
        };
        let filtered = filter.is_some();
        refuse_widened_hazards(table, id, filter.as_ref()).await?;
        let mut builder = table.scan().snapshot_id(id).select_all();
        if let Some(f) = filter {
            builder = builder.with_filter(f);
        }
        let mut tasks: Vec<FileScanTask> =
            builder.build()?.plan_files().await?.try_collect().await?;
        tasks.sort_by(|a, b| {
            (a.data_file_path.as_str(), a.start).cmp(&(b.data_file_path.as_str(), b.start))
        });
        Ok(Self {
            snapshot_id: Some(id),
            tasks,
            filtered,
        })
    }

    /// True when some task has delete files to apply.
    pub fn has_deletes(&self) -> bool {
        self.tasks.iter().any(|t| !t.deletes.is_empty())
    }

    /// The exact row count from manifests alone: known when no filter and no delete file
    /// applies and every task covers a whole file.
    pub fn exact_rows(&self) -> Option<u64> {
        if self.filtered || self.has_deletes() {
            return None;
        }
        self.tasks
            .iter()
            .map(|t| t.record_count)
            .sum::<Option<u64>>()
    }

    /// The same read restricted to `tasks` (a subset of this read's tasks).
    pub fn with_tasks(&self, tasks: Vec<FileScanTask>) -> Self {
        Self {
            snapshot_id: self.snapshot_id,
            tasks,
            filtered: self.filtered,
        }
    }

    /// Streams the planned rows in task order, in `table`'s current schema.
    pub fn stream(
        &self,
        table: &Table,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Some(id) = self.snapshot_id else {
            return Ok(futures::stream::empty().boxed());
        };
        let md = table.metadata();
        let snapshot = md.snapshot_by_id(id).ok_or_else(|| {
            MigrationError::InvalidInput(format!("{} has no snapshot {id}", table.identifier()))
        })?;
        let read_schema = snapshot
            .schema_id()
            .and_then(|sid| md.schema_by_id(sid))
            .unwrap_or_else(|| md.current_schema())
            .clone();
        let read_arrow = Arc::new(schema_to_arrow_schema(&read_schema)?);
        let target = ops_core::write::table_arrow_schema(table)?;
        let runtime = iceberg::Runtime::try_current()?;
        let reader = ArrowReaderBuilder::new(table.file_io().clone(), runtime)
            .with_data_file_concurrency_limit(1)
            .with_batch_size(batch_size.max(1))
            .build();
        let deletes = Arc::new(EqualityDeletes {
            reader: reader.clone(),
            file_io: table.file_io().clone(),
            schema: md.current_schema().clone(),
            target: target.clone(),
            table: table.identifier().to_string(),
            loaded: Mutex::new(HashMap::new()),
        });
        // The row filter is applied here rather than by iceberg's reader, which takes a
        // column a file predates as matching `<` and `<=` (it keeps the file's rows) and
        // orders NaN above every number; here a NULL — a missing column included — makes a
        // comparison unknown and the row is not read, NaN compares as IEEE 754 says and -0.0
        // equals 0.0, as SQL engines and pyarrow do (docs/datamig.md, "Row filters").
        let filter = self
            .tasks
            .iter()
            .find_map(|t| t.predicate.clone())
            .map(|p| Arc::new(ops_core::eval::Evaluator::new(p)));
        let file_io = table.file_io().clone();
        let batch_size = batch_size.max(1);
        let stream = futures::stream::iter(self.tasks.clone().into_iter().map(Ok))
            .and_then(move |task| {
                let deletes = deletes.clone();
                async move { deletes.split(task).await }
            })
            .and_then(move |(mut task, keys)| {
                let reader = reader.clone();
                let file_io = file_io.clone();
                let read_arrow = read_arrow.clone();
                let target = target.clone();
                let filter = filter.clone();
                async move {
                    task.predicate = None;
                    let batches =
                        match paged::open(&file_io, &task, &read_arrow, batch_size).await? {
                            Some(batches) => batches,
                            None => {
                                let one = futures::stream::iter([Ok(task)]).boxed();
                                reader
                                    .read(one)?
                                    .stream()
                                    .map_err(MigrationError::from)
                                    .boxed()
                            }
                        };
                    Ok(batches.and_then(move |batch| {
                        futures::future::ready(convert(
                            &batch,
                            &read_arrow,
                            &target,
                            filter.as_deref(),
                            &keys,
                        ))
                    }))
                }
            })
            .try_flatten()
            .try_filter(|b| futures::future::ready(b.num_rows() > 0));
        Ok(stream.boxed())
    }
}

/// One batch as read from a file (by iceberg's reader or [`paged`]) mapped onto the read
/// schema by field id, filtered, mapped onto `target`, without equality-deleted rows.
fn convert(
    batch: &RecordBatch,
    read_arrow: &SchemaRef,
    target: &SchemaRef,
    filter: Option<&ops_core::eval::Evaluator>,
    keys: &[Arc<EqualityKeys>],
) -> Result<RecordBatch> {
    let mut read = ops_core::scan::project_by_field_id(batch, read_arrow, read_arrow)?;
    if let Some(filter) = filter {
        // A NULL (unknown) is not TRUE: arrow's filter drops it.
        let keep = filter.evaluate(&read)?;
        if keep.true_count() < read.num_rows() {
            read = arrow_select::filter::filter_record_batch(&read, &keep)?;
        }
    }
    let out = ops_core::scan::project_by_field_id(&read, read_arrow, target)?;
    anti_join(out, keys)
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

/// Field ids a predicate refers to, by name in `schema`.
fn referenced_ids(p: &Predicate, schema: &Schema, out: &mut HashSet<i32>) {
    let mut name = |n: &str| {
        if let Some(f) = schema.field_by_name(n) {
            out.insert(f.id);
        }
    };
    match p {
        Predicate::AlwaysTrue | Predicate::AlwaysFalse => {}
        Predicate::And(e) | Predicate::Or(e) => {
            for i in e.inputs() {
                referenced_ids(i, schema, out);
            }
        }
        Predicate::Not(e) => {
            for i in e.inputs() {
                referenced_ids(i, schema, out);
            }
        }
        Predicate::Unary(e) => name(e.term().name()),
        Predicate::Binary(e) => name(e.term().name()),
        Predicate::Set(e) => name(e.term().name()),
    }
}

/// iceberg 0.10.1 reads a partition value written before its source column was widened with
/// the old type, so its planner (a) never matches such a file against a filter on that column
/// — the file is pruned and its rows lost — and (b) never matches delete files written after
/// the widening to it — deleted rows come back. Both are refused here, naming the column.
async fn refuse_widened_hazards(
    table: &Table,
    snapshot_id: i64,
    filter: Option<&Predicate>,
) -> Result<()> {
    let widened = widened_partition_sources(table);
    if widened.is_empty() {
        return Ok(());
    }
    let md = table.metadata();
    let names = widened
        .iter()
        .map(|(_, n)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(f) = filter {
        let schema = md
            .snapshot_by_id(snapshot_id)
            .and_then(|s| s.schema_id())
            .and_then(|id| md.schema_by_id(id))
            .unwrap_or_else(|| md.current_schema());
        let mut ids = HashSet::new();
        referenced_ids(f, schema, &mut ids);
        if widened.iter().any(|(id, _)| ids.contains(id)) {
            return Err(MigrationError::InvalidInput(format!(
                "the row filter of {} uses partition column(s) {names}, widened since some \
                 files were written; iceberg 0.10.1 would skip those files (their partition \
                 values keep the old type), losing their rows — filter on another column, or \
                 rewrite the source's old files first",
                table.identifier()
            )));
        }
    }
    if let Some(snapshot) = md.snapshot_by_id(snapshot_id) {
        let list = table.manifest_list_reader(snapshot).load().await?;
        let has_deletes = list.entries().iter().any(|m| {
            m.content == iceberg::spec::ManifestContentType::Deletes
                && (m.added_files_count.unwrap_or(1) > 0 || m.existing_files_count.unwrap_or(1) > 0)
        });
        if has_deletes {
            return Err(MigrationError::InvalidInput(format!(
                "{} has delete files and partition column(s) {names} widened since some files \
                 were written; iceberg 0.10.1 cannot match those deletes to the older files, so \
                 deleted rows would come back — rewrite (compact) the source's data files \
                 before migrating it",
                table.identifier()
            )));
        }
    }
    Ok(())
}

/// The keys of one equality delete file, in the current schema's types.
struct EqualityKeys {
    /// Column index in the current-schema batch of each equality field.
    columns: Vec<usize>,
    converter: RowConverter,
    keys: HashSet<Box<[u8]>>,
}

/// Loads (once per read) the equality delete files the tasks reference.
struct EqualityDeletes {
    reader: ArrowReader,
    file_io: FileIO,
    schema: iceberg::spec::SchemaRef,
    target: SchemaRef,
    table: String,
    loaded: Mutex<HashMap<String, Arc<EqualityKeys>>>,
}

impl EqualityDeletes {
    /// `task` without its equality deletes (left to iceberg's reader: position deletes) and
    /// the keys those equality deletes remove.
    async fn split(
        &self,
        mut task: FileScanTask,
    ) -> Result<(FileScanTask, Vec<Arc<EqualityKeys>>)> {
        let (equality, rest): (Vec<_>, Vec<_>) = task
            .deletes
            .into_iter()
            .partition(|d| d.file_type == DataContentType::EqualityDeletes);
        task.deletes = rest;
        let mut keys = Vec::with_capacity(equality.len());
        for delete in &equality {
            keys.push(self.keys(delete).await?);
        }
        Ok((task, keys))
    }

    async fn keys(&self, delete: &FileScanTaskDeleteFile) -> Result<Arc<EqualityKeys>> {
        let mut loaded = self.loaded.lock().await;
        if let Some(k) = loaded.get(&delete.file_path) {
            return Ok(k.clone());
        }
        let keys = Arc::new(self.load(delete).await?);
        loaded.insert(delete.file_path.clone(), keys.clone());
        Ok(keys)
    }

    async fn load(&self, delete: &FileScanTaskDeleteFile) -> Result<EqualityKeys> {
        let unsupported = |why: String| {
            MigrationError::InvalidInput(format!(
                "{}: equality delete file {} {why}; rewrite the table's deletes (e.g. Spark's \
                 rewrite_data_files) before migrating it",
                self.table, delete.file_path
            ))
        };
        let ids = delete
            .equality_ids
            .clone()
            .filter(|ids| !ids.is_empty())
            .ok_or_else(|| unsupported("lists no equality field ids".into()))?;
        let mut fields = Vec::with_capacity(ids.len());
        let mut columns = Vec::with_capacity(ids.len());
        for id in &ids {
            // Only top-level key columns: a nested key would need its parent's nulls too.
            let field = self
                .schema
                .as_struct()
                .fields()
                .iter()
                .find(|f| f.id == *id)
                .ok_or_else(|| {
                    unsupported(format!(
                        "keys on field id {id}, which is not a top-level column of the current \
                         schema"
                    ))
                })?;
            let mut field = field.as_ref().clone();
            // The delete file may hold a NULL key (it deletes the NULL-key rows).
            field.required = false;
            fields.push(Arc::new(field));
            let column = self
                .target
                .fields()
                .iter()
                .position(|f| f.metadata().get(FIELD_ID) == Some(&id.to_string()))
                .ok_or_else(|| {
                    unsupported(format!("keys on field id {id}, which the read cannot find"))
                })?;
            columns.push(column);
        }
        let key_schema = Arc::new(Schema::builder().with_fields(fields).build()?);
        let types: Vec<_> = columns
            .iter()
            .map(|&i| self.target.field(i).data_type().clone())
            .collect();
        let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
        let size = match delete.file_size_in_bytes {
            0 => {
                self.file_io
                    .new_input(&delete.file_path)?
                    .metadata()
                    .await?
                    .size
            }
            n => n,
        };
        let task = FileScanTask::builder()
            .with_file_size_in_bytes(size)
            .with_start(0)
            .with_length(size)
            .with_data_file_path(delete.file_path.clone())
            .with_data_file_format(DataFileFormat::Parquet)
            .with_schema(key_schema)
            .with_project_field_ids(ids.clone())
            .with_case_sensitive(true)
            .build();
        let mut stream = self
            .reader
            .clone()
            .read(futures::stream::iter([Ok(task)]).boxed())?
            .stream();
        let mut keys = HashSet::new();
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let cols = batch
                .columns()
                .iter()
                .zip(&types)
                .map(|(c, t)| {
                    if c.data_type() == t {
                        Ok(c.clone())
                    } else {
                        arrow_cast::cast(c, t)
                    }
                })
                .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
            let rows = converter.convert_columns(&cols)?;
            keys.extend(rows.iter().map(|r| Box::<[u8]>::from(r.as_ref())));
        }
        tracing::debug!(
            table = %self.table,
            file = %delete.file_path,
            keys = keys.len(),
            "loaded equality delete keys"
        );
        Ok(EqualityKeys {
            columns,
            converter,
            keys,
        })
    }
}

/// `batch` without the rows whose key some equality delete file holds (null-safe equality).
fn anti_join(batch: RecordBatch, deletes: &[Arc<EqualityKeys>]) -> Result<RecordBatch> {
    if deletes.is_empty() || batch.num_rows() == 0 {
        return Ok(batch);
    }
    let mut keep = vec![true; batch.num_rows()];
    for d in deletes {
        let cols: Vec<ArrayRef> = d.columns.iter().map(|&i| batch.column(i).clone()).collect();
        let rows = d.converter.convert_columns(&cols)?;
        for (i, k) in keep.iter_mut().enumerate() {
            if *k && d.keys.contains(rows.row(i).as_ref()) {
                *k = false;
            }
        }
    }
    if keep.iter().all(|k| *k) {
        return Ok(batch);
    }
    Ok(arrow_select::filter::filter_record_batch(
        &batch,
        &BooleanArray::from(keep),
    )?)
}
