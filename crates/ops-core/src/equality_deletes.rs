//! Equality delete files applied to the rows of the data files they delete from, as Java's
//! `DeleteFilter` applies them — for every read that must yield a table's live rows (a
//! migration's copy, a compaction's rewrite).
//!
//! iceberg 0.10.1's reader turns a deleted key `k = 5` into the row filter `k != 5`, which is
//! NULL — so "drop" — for every row whose `k` is NULL, losing rows no delete names. The spec
//! matches equality deletes with null-safe equality (Java's `StructLikeSet`: a NULL key is
//! deleted only by a NULL in the delete file), so here:
//! 1. [`EqualityDeletes::split`] takes a task's equality deletes off it (iceberg's reader is
//!    left the position deletes) and loads the keys of each delete file once per
//!    [`EqualityDeletes`] (cached), in the current schema's types (a delete written before its
//!    column was widened matches), encoded with arrow's row format, where NULL equals NULL and
//!    nothing else.
//! 2. [`anti_join`] drops the rows of every batch read from that task whose key one of them
//!    holds ([`EqualityDeletes::apply`]).
//!
//! A delete keyed on a column dropped since it was written still deletes, as
//! apache/iceberg#15268 reads it (Java 1.10 fails): [`EqualityDeletes::for_read`] finds such
//! keys among the read's deletes, the read decodes them from the data files by field id as
//! extra columns (widened schemas and tasks), and [`EqualityDeletes::apply`] cuts them off
//! after the anti-join.
//!
//! Which delete files apply to which data file (partition, sequence numbers: strictly newer
//! for equality deletes) is the planner's decision, but for one case it misses:
//! [`attach_global_deletes`] adds the deletes of an all-`void` spec to the files of other
//! partitions, as Java's `DeleteFileIndex` treats them as global.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use futures::StreamExt;
use iceberg::arrow::ArrowReader;
use iceberg::io::FileIO;
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::{
    DataContentType, DataFileFormat, ManifestContentType, NestedFieldRef, Schema, TableMetadata,
    Transform,
};
use iceberg::table::Table;
use tokio::sync::Mutex;

use crate::ops::live_deletes::{LiveDelete, live_delete_files_of};
use crate::ops::snapshot::{ManifestCache, live_data_files_of};
use crate::{Error, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// The keys of one equality delete file, in the current schema's types.
pub struct EqualityKeys {
    /// Column index in the target batch of each equality field.
    columns: Vec<usize>,
    converter: RowConverter,
    keys: HashSet<Box<[u8]>>,
}

impl std::fmt::Debug for EqualityKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EqualityKeys")
            .field("columns", &self.columns)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

/// Loads (once each) the equality delete files of one read (see the module docs).
pub struct EqualityDeletes {
    reader: ArrowReader,
    file_io: FileIO,
    schema: iceberg::spec::SchemaRef,
    /// Key columns dropped from the schema since their deletes were written, which the read
    /// reads by field id anyway ([`dropped_key_fields`], [`EqualityDeletes::for_read`]).
    dropped: Vec<NestedFieldRef>,
    /// The batches the keys are matched in: the read's own columns, then the dropped key
    /// columns it lacks.
    target: SchemaRef,
    /// How many columns of `target` are the read's own ([`EqualityDeletes::apply`] cuts the
    /// rest off).
    width: usize,
    table: String,
    loaded: Mutex<HashMap<String, Arc<EqualityKeys>>>,
}

impl EqualityDeletes {
    /// For batches of `target` (an arrow schema with field ids, the table's current schema or
    /// some of its top-level columns) read from `table` with `reader`, whose equality deletes
    /// are among `deletes` (those of every file the read may read).
    ///
    /// A delete keyed on a column dropped since it was written is applied too, as
    /// apache/iceberg#15268 applies it: the key is read from the data files by its field id
    /// ([`dropped_key_fields`]). So the read's batches carry more columns than `target` until
    /// [`EqualityDeletes::apply`] maps them onto it: the read decodes with
    /// [`EqualityDeletes::widen`]ed schemas and tasks widened by [`EqualityDeletes::split`] (or
    /// [`EqualityDeletes::widen_task`]).
    pub fn for_read<'a>(
        table: &Table,
        target: SchemaRef,
        reader: ArrowReader,
        deletes: impl IntoIterator<Item = &'a FileScanTaskDeleteFile>,
    ) -> Result<Self> {
        let dropped = dropped_key_fields(table.metadata(), deletes);
        let width = target.fields().len();
        let target = target_with_dropped_keys(&target, &dropped)?;
        Ok(Self {
            reader,
            file_io: table.file_io().clone(),
            schema: table.metadata().current_schema().clone(),
            dropped,
            target,
            width,
            table: table.identifier().to_string(),
            loaded: Mutex::new(HashMap::new()),
        })
    }

    /// The schema [`EqualityDeletes::apply`] maps the read's batches onto: the target's
    /// columns, then the dropped key columns it lacks.
    pub fn target(&self) -> &SchemaRef {
        &self.target
    }

    /// `schema` (the schema a read decodes files with) with the dropped key columns it lacks.
    pub fn widen(&self, schema: &SchemaRef) -> Result<SchemaRef> {
        target_with_dropped_keys(schema, &self.dropped)
    }

    /// `task` reading the dropped key columns too: its schema and projection gain those it
    /// lacks. ([`EqualityDeletes::split`] does this itself.)
    pub fn widen_task(&self, task: &mut FileScanTask) -> Result<()> {
        task_with_dropped_keys(task, &self.dropped)
    }

    /// `batch` (read with `read_schema`, widened by [`EqualityDeletes::widen`]) mapped onto
    /// the target by field id, without the rows `deletes` remove, cut back to the read's own
    /// columns.
    pub fn apply(
        &self,
        batch: &RecordBatch,
        read_schema: &SchemaRef,
        deletes: &[Arc<EqualityKeys>],
    ) -> Result<RecordBatch> {
        let batch = crate::scan::project_by_field_id(batch, read_schema, &self.target)?;
        without_dropped_keys(anti_join(batch, deletes)?, self.width)
    }

    /// Why the equality deletes among `deletes` cannot be applied by this read (`None`: they
    /// can) — what [`EqualityDeletes::keys`] would refuse, decided without reading them.
    pub fn unsupported(&self, deletes: &[FileScanTaskDeleteFile]) -> Option<String> {
        key_refusal(&self.schema, &self.dropped, &self.target, deletes)
    }

    /// `task`, widened ([`EqualityDeletes::widen_task`]), without its equality deletes (left
    /// to iceberg's reader: position deletes), and the keys those equality deletes remove.
    pub async fn split(
        &self,
        mut task: FileScanTask,
    ) -> Result<(FileScanTask, Vec<Arc<EqualityKeys>>)> {
        self.widen_task(&mut task)?;
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

    /// The keys of the equality delete file `delete`, read on first use.
    pub async fn keys(&self, delete: &FileScanTaskDeleteFile) -> Result<Arc<EqualityKeys>> {
        let mut loaded = self.loaded.lock().await;
        if let Some(k) = loaded.get(&delete.file_path) {
            return Ok(k.clone());
        }
        let keys = Arc::new(self.load(delete).await?);
        loaded.insert(delete.file_path.clone(), keys.clone());
        Ok(keys)
    }

    async fn load(&self, delete: &FileScanTaskDeleteFile) -> Result<EqualityKeys> {
        let (ids, fields, columns) = key_columns(&self.schema, &self.dropped, &self.target, delete)
            .map_err(|why| {
                Error::InvalidInput(format!(
                    "{}: equality delete file {} {why}; rewrite the table's deletes (e.g. \
                     Spark's rewrite_data_files) first",
                    self.table, delete.file_path
                ))
            })?;
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
            .with_project_field_ids(ids)
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
            let cols: Vec<ArrayRef> = cols.into_iter().map(canonical_nan).collect();
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

/// The equality delete files among `deletes` of a known unpartitioned spec — no fields, or
/// `void` ones only (Java's `PartitionSpec.isUnpartitioned`) — with their data sequence
/// numbers: each applies to every data file with a smaller data sequence number, whatever its
/// partition. (A delete of an unknown spec is not taken for one: applied everywhere, it could
/// delete rows of partitions it never named.)
pub fn global_deletes<'a>(
    md: &TableMetadata,
    deletes: impl IntoIterator<Item = &'a LiveDelete>,
) -> Vec<(i64, FileScanTaskDeleteFile)> {
    deletes
        .into_iter()
        .filter(|d| d.file.content_type() == DataContentType::EqualityDeletes)
        .filter(|d| {
            md.partition_spec_by_id(d.spec_id)
                .is_some_and(|s| s.fields().iter().all(|f| f.transform == Transform::Void))
        })
        .map(|d| {
            let task_file = FileScanTaskDeleteFile::builder()
                .with_file_path(d.file.file_path().to_string())
                .with_file_size_in_bytes(d.file.file_size_in_bytes())
                .with_file_type(DataContentType::EqualityDeletes)
                .with_partition_spec_id(d.spec_id)
                .with_equality_ids(d.file.equality_ids())
                .build();
            (d.sequence_number, task_file)
        })
        .collect()
}

/// Attaches to `tasks` (planned on snapshot `snapshot_id` of `table`) the equality deletes of
/// an unpartitioned spec ([`global_deletes`]) that apply to their data files and that they
/// lack: iceberg 0.10.1's planner attaches one of an all-`void` spec (a v1 table's dropped
/// partition fields, upgraded to v2) only to the files of that spec's tuple of NULLs, so read
/// as planned, the rows it deletes from other partitions would come back.
pub async fn attach_global_deletes(
    table: &Table,
    snapshot_id: i64,
    tasks: &mut [FileScanTask],
) -> Result<()> {
    let Some(globals) = GlobalDeletes::load(table, snapshot_id).await? else {
        return Ok(());
    };
    let mut attached = 0usize;
    for task in tasks.iter_mut() {
        attached += globals.attach(&task.data_file_path, &mut task.deletes)?;
    }
    tracing::debug!(
        table = %table.identifier(),
        attached,
        "global equality deletes attached where the planner left them out"
    );
    Ok(())
}

/// The equality deletes of an unpartitioned spec of a snapshot, with the data sequence number
/// of each live data file, to attach them task by task ([`attach_global_deletes`]).
#[derive(Debug)]
pub struct GlobalDeletes {
    globals: Vec<(i64, FileScanTaskDeleteFile)>,
    /// The lowest and highest data sequence number of each live data file's entries (two
    /// differ only for a file listed more than once).
    sequence: HashMap<String, (i64, i64)>,
}

impl GlobalDeletes {
    /// `None` when the snapshot has no such delete file (the usual case: nothing is read past
    /// the manifest list).
    pub async fn load(table: &Table, snapshot_id: i64) -> Result<Option<Self>> {
        let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
            return Ok(None);
        };
        let cache = ManifestCache::new(table);
        let has_deletes = cache
            .manifest_list(snapshot)
            .await?
            .iter()
            .any(|m| m.content == ManifestContentType::Deletes);
        if !has_deletes {
            return Ok(None);
        }
        let deletes = live_delete_files_of(snapshot, &cache).await?;
        let globals = global_deletes(table.metadata(), &deletes);
        if globals.is_empty() {
            return Ok(None);
        }
        let mut sequence: HashMap<String, (i64, i64)> = HashMap::new();
        for f in live_data_files_of(snapshot, &cache).await? {
            let seq = f.sequence_number;
            sequence
                .entry(f.file.file_path().to_string())
                .and_modify(|(low, high)| {
                    *low = (*low).min(seq);
                    *high = (*high).max(seq);
                })
                .or_insert((seq, seq));
        }
        Ok(Some(Self { globals, sequence }))
    }

    /// Adds to `deletes` (those planned for the data file at `path`) the global deletes that
    /// apply to it and it lacks; returns how many. A file listed more than once, with entries
    /// on both sides of a global delete, is refused: the delete applies to its older entries
    /// only, and a scan task does not say which entry it reads.
    pub fn attach(&self, path: &str, deletes: &mut Vec<FileScanTaskDeleteFile>) -> Result<usize> {
        let Some(&(low, high)) = self.sequence.get(path) else {
            return Ok(0);
        };
        let mut attached = 0;
        for (delete_seq, file) in &self.globals {
            if low < *delete_seq && high >= *delete_seq {
                return Err(Error::InvalidInput(format!(
                    "data file {path} is listed more than once (data sequence numbers {low} \
                     and {high}), and the equality delete file {} (sequence number \
                     {delete_seq}) applies to its older entries only; iceberg-ops cannot tell \
                     its entries apart when reading. Remove the duplicate entry (or compact the \
                     table with the engine that wrote the delete) first",
                    file.file_path
                )));
            }
            if high < *delete_seq && !deletes.iter().any(|d| d.file_path == file.file_path) {
                deletes.push(file.clone());
                attached += 1;
            }
        }
        Ok(attached)
    }
}

/// Why the equality delete files among `deletes` cannot be applied to batches of `target`
/// read from the table of `md` (`None`: they can), their dropped key columns read too, as
/// [`EqualityDeletes::for_read`] reads them — decided without reading them.
pub fn unsupported(
    md: &TableMetadata,
    target: &SchemaRef,
    deletes: &[FileScanTaskDeleteFile],
) -> Option<String> {
    let dropped = dropped_key_fields(md, deletes);
    match target_with_dropped_keys(target, &dropped) {
        Ok(target) => key_refusal(md.current_schema(), &dropped, &target, deletes),
        Err(e) => Some(format!("cannot be read: {e}")),
    }
}

/// Why the equality delete files among `deletes` cannot be applied to batches of `target`
/// read from a table of current schema `schema` (`None`: they can), with `dropped` key
/// columns read too — what [`EqualityDeletes::keys`] would refuse, decided without reading
/// them.
fn key_refusal(
    schema: &Schema,
    dropped: &[NestedFieldRef],
    target: &SchemaRef,
    deletes: &[FileScanTaskDeleteFile],
) -> Option<String> {
    deletes
        .iter()
        .filter(|d| d.file_type == DataContentType::EqualityDeletes)
        .find_map(|d| {
            key_columns(schema, dropped, target, d)
                .err()
                .map(|why| format!("equality delete file {} {why}", d.file_path))
        })
}

/// The equality field ids of a delete file, their fields as the file is read and their column
/// indices in the batches read.
type KeyColumns = (Vec<i32>, Vec<NestedFieldRef>, Vec<usize>);

/// The equality field ids of `delete`, their fields as the delete file is read (optional: it
/// may hold a NULL key, which deletes the NULL-key rows) and their column indices in `target`;
/// or why not. A key column is a top-level column of `schema`, or one of `dropped`.
fn key_columns(
    schema: &Schema,
    dropped: &[NestedFieldRef],
    target: &SchemaRef,
    delete: &FileScanTaskDeleteFile,
) -> std::result::Result<KeyColumns, String> {
    let ids = delete
        .equality_ids
        .clone()
        .filter(|ids| !ids.is_empty())
        .ok_or_else(|| "lists no equality field ids".to_string())?;
    let mut fields = Vec::with_capacity(ids.len());
    let mut columns = Vec::with_capacity(ids.len());
    for id in &ids {
        // Only top-level key columns: a nested key would need its parent's nulls too.
        let field = schema
            .as_struct()
            .fields()
            .iter()
            .chain(dropped)
            .find(|f| f.id == *id)
            .ok_or_else(|| {
                format!(
                    "keys on field id {id}, which is not a top-level column of the current schema"
                )
            })?;
        let mut field = field.as_ref().clone();
        field.required = false;
        fields.push(Arc::new(field));
        let column = target
            .fields()
            .iter()
            .position(|f| f.metadata().get(FIELD_ID) == Some(&id.to_string()))
            .ok_or_else(|| format!("keys on field id {id}, which the read cannot find"))?;
        columns.push(column);
    }
    Ok((ids, fields, columns))
}

/// The key columns of `deletes`' equality deletes that the table's current schema lacks as
/// top-level columns but an older schema of `md` has (dropped since — a drop commits no
/// snapshot, so the snapshot read may still have them): each as the newest such schema
/// defines it, optional (files written after the drop lack it), under a name no column holds
/// (the column's own name may have been taken again). Nested keys are not among them.
fn dropped_key_fields<'a>(
    md: &TableMetadata,
    deletes: impl IntoIterator<Item = &'a FileScanTaskDeleteFile>,
) -> Vec<NestedFieldRef> {
    let read = md.current_schema();
    let mut ids: Vec<i32> = deletes
        .into_iter()
        .filter(|d| d.file_type == DataContentType::EqualityDeletes)
        .flat_map(|d| d.equality_ids.iter().flatten().copied())
        .filter(|id| read.as_struct().fields().iter().all(|f| f.id != *id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut schemas: Vec<&iceberg::spec::SchemaRef> = md.schemas_iter().collect();
    schemas.sort_by_key(|s| std::cmp::Reverse(s.schema_id()));
    ids.into_iter()
        .filter_map(|id| {
            let field = schemas
                .iter()
                .find_map(|s| s.as_struct().fields().iter().find(|f| f.id == id))?;
            let mut field = field.as_ref().clone();
            field.required = false;
            field.name = format!("__iceberg_ops_dropped_key_{id}");
            Some(Arc::new(field))
        })
        .collect()
}

/// `schema` with the arrow fields of `dropped` it lacks (by field id) after its own (a target
/// that applies deletes keyed on them; the batches are cut back to `schema`'s width after the
/// anti-join). A schema that has one already (a snapshot's, read before the drop) keeps its
/// own column.
fn target_with_dropped_keys(schema: &SchemaRef, dropped: &[NestedFieldRef]) -> Result<SchemaRef> {
    let has = |id: i32| {
        schema
            .fields()
            .iter()
            .any(|f| f.metadata().get(FIELD_ID) == Some(&id.to_string()))
    };
    let missing: Vec<NestedFieldRef> = dropped.iter().filter(|f| !has(f.id)).cloned().collect();
    if missing.is_empty() {
        return Ok(schema.clone());
    }
    let extra =
        iceberg::arrow::schema_to_arrow_schema(&Schema::builder().with_fields(missing).build()?)?;
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .chain(extra.fields().iter())
        .cloned()
        .collect();
    Ok(Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// `task` reading the `dropped` key columns too ([`dropped_key_fields`]): its schema and
/// projection gain those it lacks.
fn task_with_dropped_keys(task: &mut FileScanTask, dropped: &[NestedFieldRef]) -> Result<()> {
    if dropped.is_empty() {
        return Ok(());
    }
    // A field the task's schema holds already (a snapshot read before the drop) is not added
    // twice.
    let missing = dropped
        .iter()
        .filter(|f| task.schema.field_by_id(f.id).is_none());
    task.schema = Arc::new(
        Schema::builder()
            .with_schema_id(task.schema.schema_id())
            .with_fields(
                task.schema
                    .as_struct()
                    .fields()
                    .iter()
                    .chain(missing)
                    .cloned(),
            )
            .build()?,
    );
    for f in dropped {
        if !task.project_field_ids.contains(&f.id) {
            task.project_field_ids.push(f.id);
        }
    }
    Ok(())
}

/// `batch` cut to its first `width` columns (dropped key columns read for the anti-join
/// only follow them).
fn without_dropped_keys(batch: RecordBatch, width: usize) -> Result<RecordBatch> {
    if batch.num_columns() <= width {
        return Ok(batch);
    }
    let columns: Vec<usize> = (0..width).collect();
    Ok(batch.project(&columns)?)
}

/// `batch` without the rows whose key some equality delete file holds (null-safe equality).
pub fn anti_join(batch: RecordBatch, deletes: &[Arc<EqualityKeys>]) -> Result<RecordBatch> {
    if deletes.is_empty() || batch.num_rows() == 0 {
        return Ok(batch);
    }
    let mut keep = vec![true; batch.num_rows()];
    for d in deletes {
        let cols: Vec<ArrayRef> = d
            .columns
            .iter()
            .map(|&i| canonical_nan(batch.column(i).clone()))
            .collect();
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

/// `column` with every NaN made the same NaN. Java compares equality delete keys with
/// `Float.compare`/`Double.compare`, where all NaNs are equal; arrow's row format compares
/// bits, where a NaN with another payload or sign (x86's `0.0 / 0.0`) is another value.
fn canonical_nan(column: ArrayRef) -> ArrayRef {
    match column.data_type() {
        DataType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                return Arc::new(
                    a.unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v }),
                );
            }
            column
        }
        DataType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                return Arc::new(
                    a.unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v }),
                );
            }
            column
        }
        _ => column,
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Float64Array};

    use super::*;

    /// A global equality delete applies to the entries older than it: attached to a file all of
    /// whose entries are older, left off one all of whose are newer, and refused for a file
    /// listed twice on both sides of it (a task does not say which entry it reads).
    #[test]
    fn a_global_delete_between_two_entries_of_a_file_is_refused() {
        let delete = FileScanTaskDeleteFile {
            file_path: "file:///t/data/d.parquet".into(),
            file_size_in_bytes: 10,
            file_type: DataContentType::EqualityDeletes,
            partition_spec_id: 1,
            equality_ids: Some(vec![1]),
        };
        let globals = GlobalDeletes {
            globals: vec![(5, delete)],
            sequence: HashMap::from([
                ("old".to_string(), (1, 4)),
                ("new".to_string(), (5, 7)),
                ("twice".to_string(), (3, 6)),
            ]),
        };
        let mut deletes = Vec::new();
        assert_eq!(globals.attach("old", &mut deletes).ok(), Some(1));
        assert_eq!(deletes.len(), 1);
        let mut deletes = Vec::new();
        assert_eq!(globals.attach("new", &mut deletes).ok(), Some(0));
        let err = globals
            .attach("twice", &mut Vec::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("twice")
                && err.contains("listed more than once")
                && err.contains("d.parquet"),
            "{err}"
        );
    }

    #[test]
    fn every_nan_is_one_key_and_nulls_stay() {
        let other_nan = f64::from_bits(0xFFF8_0000_0000_0000);
        assert!(other_nan.is_nan() && other_nan.to_bits() != f64::NAN.to_bits());
        let column: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(other_nan),
            None,
            Some(-0.0),
            Some(f64::NAN),
        ]));
        let out = canonical_nan(column);
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0).to_bits(), f64::NAN.to_bits());
        assert!(out.is_null(1));
        // -0.0 stays itself: Java's Double.compare tells it from 0.0 too.
        assert_eq!(out.value(2).to_bits(), (-0.0f64).to_bits());
        assert_eq!(out.value(3).to_bits(), f64::NAN.to_bits());
    }
}
