//! Arrow batches → Parquet data files laid out by the table's partition spec.
//!
//! 1. Re-stamp each batch with the Arrow schema derived from the table's current Iceberg schema,
//!    so the Parquet files carry field ids (readers match columns by id, not name).
//! 2. Split rows by the default partition spec (any transform).
//! 3. Write through a fan-out of rolling Parquet writers honouring
//!    `write.target-file-size-bytes` and `write.parquet.compression-codec`.
//!
//! The files are not committed: hand them to an operation (append, overwrite, ...).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow_arith::boolean::{and, not};
use arrow_array::{
    Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, Scalar, StructArray,
    new_null_array,
};
use arrow_ord::cmp::not_distinct;
use arrow_schema::{DataType, SchemaRef};
use arrow_select::filter::filter_record_batch;
use futures::{Stream, StreamExt};
use iceberg::arrow::{
    PartitionValueCalculator, RecordBatchPartitionSplitter, arrow_struct_to_literal,
    schema_to_arrow_schema,
};
use iceberg::spec::{
    DataFile, DataFileFormat, Literal, PartitionKey, PartitionSpecRef,
    SchemaRef as IcebergSchemaRef, Struct, StructType,
};
use iceberg::table::Table;
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, LocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::partitioning::unpartitioned_writer::UnpartitionedWriter;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::location::DataLocations;
use crate::ops::canonical_partition;
use crate::{Error, Result};

// Iceberg's `write.parquet.*` table properties, with Java's defaults (the row limit is
// PyIceberg's `write.parquet.row-group-limit`, which Java lacks).
const COMPRESSION_CODEC: &str = "write.parquet.compression-codec";
const COMPRESSION_LEVEL: &str = "write.parquet.compression-level";
const ROW_GROUP_BYTES: &str = "write.parquet.row-group-size-bytes";
const DEFAULT_ROW_GROUP_BYTES: usize = 128 * 1024 * 1024;
const ROW_GROUP_ROWS: &str = "write.parquet.row-group-limit";
const DEFAULT_ROW_GROUP_ROWS: usize = 1024 * 1024;
const PAGE_BYTES: &str = "write.parquet.page-size-bytes";
const DEFAULT_PAGE_BYTES: usize = 1024 * 1024;
const PAGE_ROWS: &str = "write.parquet.page-row-limit";
const DEFAULT_PAGE_ROWS: usize = 20_000;
const DICT_BYTES: &str = "write.parquet.dict-size-bytes";
const DEFAULT_DICT_BYTES: usize = 2 * 1024 * 1024;

/// The Arrow schema (with `PARQUET:field_id` metadata) of the table's current schema.
pub fn table_arrow_schema(table: &Table) -> Result<SchemaRef> {
    Ok(Arc::new(schema_to_arrow_schema(
        table.metadata().current_schema(),
    )?))
}

/// Data files and the partition spec they were laid out by: an operation commits them under that
/// spec, or refuses with a conflict if the table no longer has it.
#[derive(Debug, Clone, Default)]
pub struct WrittenFiles {
    /// The partition spec the files' partition tuples belong to.
    pub spec_id: i32,
    /// The files, not yet committed.
    pub files: Vec<DataFile>,
}

impl WrittenFiles {
    /// Rows in all the files.
    pub fn record_count(&self) -> u64 {
        self.files.iter().map(DataFile::record_count).sum()
    }

    /// Bytes in all the files.
    pub fn size_in_bytes(&self) -> u64 {
        self.files.iter().map(DataFile::file_size_in_bytes).sum()
    }
}

/// [`write_data_files`], also reporting the partition spec the files were written under.
pub async fn write_files<S>(table: &Table, batches: S) -> Result<WrittenFiles>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let spec_id = table.metadata().default_partition_spec_id();
    let files = write_data_files(table, batches).await?;
    Ok(WrittenFiles { spec_id, files })
}

/// A builder holding every field of `file`, to build a copy with some of them changed (iceberg
/// 0.10.1's `DataFile` has no setters): the sort order a sorting rewrite followed, the spec
/// and partition a file is listed under again. `spec_id`: the spec it is written under (the
/// `DataFile` keeps it but does not say it).
pub fn data_file_builder(file: &DataFile, spec_id: i32) -> iceberg::spec::DataFileBuilder {
    let mut b = iceberg::spec::DataFileBuilder::default();
    b.content(file.content_type())
        .file_path(file.file_path().to_string())
        .file_format(file.file_format())
        .partition(file.partition().clone())
        .partition_spec_id(spec_id)
        .record_count(file.record_count())
        .file_size_in_bytes(file.file_size_in_bytes())
        .column_sizes(file.column_sizes().clone())
        .value_counts(file.value_counts().clone())
        .null_value_counts(file.null_value_counts().clone())
        .nan_value_counts(file.nan_value_counts().clone())
        .lower_bounds(file.lower_bounds().clone())
        .upper_bounds(file.upper_bounds().clone())
        .key_metadata(file.key_metadata().map(<[u8]>::to_vec))
        .split_offsets(file.split_offsets().map(<[i64]>::to_vec))
        .equality_ids(file.equality_ids())
        .first_row_id(file.first_row_id())
        .referenced_data_file(file.referenced_data_file())
        .content_offset(file.content_offset())
        .content_size_in_bytes(file.content_size_in_bytes());
    if let Some(id) = file.sort_order_id() {
        b.sort_order_id(id);
    }
    b
}

/// Writes `batches` as data files of `table` (not committed), under its default partition spec.
///
/// Each batch must have the table's columns, by name and in order, with the table's types; a
/// mismatch is an [`Error::InvalidInput`] naming the column.
pub async fn write_data_files<S>(table: &Table, batches: S) -> Result<Vec<DataFile>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    // Boxed: the writer's future is large, and upserts of deeply nested tables await it deep
    // in their own; inline, the extra layer overflowed a 2 MiB thread stack in debug builds.
    Box::pin(write_data_files_sized(table, batches, None)).await
}

/// [`write_data_files`], rolling to a new file at `target_file_size` bytes instead of the
/// table's `write.target-file-size-bytes` when given (compaction's `--target-file-size`).
pub async fn write_data_files_sized<S>(
    table: &Table,
    batches: S,
    target_file_size: Option<usize>,
) -> Result<Vec<DataFile>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let location = RecordingLocations::new(DataLocations::for_table(table.metadata())?);
    let written = location.generated.clone();
    let refused = location.refused.clone();
    let mut result = Box::pin(write_rows(table, batches, target_file_size, location)).await;
    if result.is_ok()
        && let Some(why) = lock_refusal(&refused).take()
    {
        result = Err(Error::InvalidInput(why));
    }
    if result.is_err() {
        // The writers are dropped by now. Files they had rolled over (closed) or begun are
        // referenced by nothing: a failed write leaves no file behind.
        let paths = std::mem::take(&mut *lock(&written));
        crate::commit::delete_quietly(table.file_io(), &paths).await;
    }
    result
}

async fn write_rows<S>(
    table: &Table,
    batches: S,
    target_file_size: Option<usize>,
    location: RecordingLocations,
) -> Result<Vec<DataFile>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let metadata = table.metadata();
    let schema = metadata.current_schema().clone();
    let arrow_schema = table_arrow_schema(table)?;
    let properties = metadata.table_properties()?;
    let names = DefaultFileNameGenerator::new(
        uuid::Uuid::now_v7().to_string(),
        None,
        DataFileFormat::Parquet,
    );
    let mut batches = batches;
    // The first rows decide which columns get a dictionary (see `plain_columns`).
    let first = loop {
        match batches.next().await {
            None => return Ok(Vec::new()),
            Some(batch) => {
                let batch = conform(&batch?, &arrow_schema)?;
                if batch.num_rows() > 0 {
                    break batch;
                }
            }
        }
    };
    let parquet = ParquetWriterBuilder::new(
        writer_properties(metadata.properties(), Some(&first))?,
        schema.clone(),
    );
    let checked = location.clone();
    let rolling = RollingFileWriterBuilder::new(
        parquet,
        target_file_size.unwrap_or(properties.write_target_file_size_bytes),
        table.file_io().clone(),
        location,
        names,
    );
    let writer = DataFileWriterBuilder::new(rolling);
    let spec = metadata.default_partition_spec().clone();
    let mut batches = futures::stream::iter([Ok(first)]).chain(batches);
    if spec.is_unpartitioned() && !spec.fields().is_empty() {
        // An all-`void` spec (a v1 table's dropped partition fields) still has fields: its
        // files carry a tuple of NULLs, one per field, as Java writes them (iceberg's
        // unpartitioned writer would give them none, which the commit refuses).
        let nulls = iceberg::spec::Struct::from_iter(spec.fields().iter().map(|_| None));
        let key = PartitionKey::new(spec.as_ref().clone(), schema.clone(), nulls);
        let mut fanout = Fanout::new(writer);
        while let Some(batch) = batches.next().await {
            let batch = conform(&batch?, &arrow_schema)?;
            if batch.num_rows() > 0 {
                fanout.write(key.clone(), batch).await?;
            }
        }
        return fanout.close().await;
    }
    if spec.is_unpartitioned() {
        // iceberg's splitter refuses unpartitioned specs; one writer takes every row.
        let mut out = UnpartitionedWriter::new(writer);
        while let Some(batch) = batches.next().await {
            let batch = conform(&batch?, &arrow_schema)?;
            if batch.num_rows() > 0 {
                out.write(batch).await?;
            }
        }
        return Ok(out.close().await?);
    }
    let mut fanout = Fanout::new(writer);
    let splitter = PartitionSplitter::try_new(schema, spec)?;
    while let Some(batch) = batches.next().await {
        let batch = conform(&batch?, &arrow_schema)?;
        if batch.num_rows() == 0 {
            continue;
        }
        for (key, part) in splitter.split(&batch)? {
            checked.check(&key)?;
            fanout.write(key, part).await?;
        }
    }
    fanout.close().await
}

/// iceberg's `FanoutWriter` (a writer per partition, all open until the end), with partitions
/// told apart as Java tells them. iceberg keys its writers by the partition `Struct`, which
/// compares floats as `OrderedFloat` does (`-0.0 == 0.0`): the rows of `d=-0.0` and `d=0.0`
/// went into one file labelled with whichever came first, and a reader taking `d` from the
/// label read the others with the wrong sign. The writers are keyed by the tuple in the form
/// every partition comparison uses ([`canonical_partition`]: `-0.0` apart from `0.0`, every NaN
/// one, as Java's `Double.equals`).
struct Fanout<B: IcebergWriterBuilder> {
    builder: B,
    writers: HashMap<Struct, B::R>,
}

impl<B: IcebergWriterBuilder> Fanout<B> {
    fn new(builder: B) -> Self {
        Self {
            builder,
            writers: HashMap::new(),
        }
    }

    async fn write(&mut self, key: PartitionKey, batch: RecordBatch) -> Result<()> {
        let writer = match self.writers.entry(canonical_partition(key.data())) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.builder.build(Some(key)).await?)
            }
        };
        Ok(writer.write(batch).await?)
    }

    async fn close(self) -> Result<Vec<DataFile>> {
        let mut out = Vec::new();
        for (_, mut writer) in self.writers {
            out.extend(writer.close().await?);
        }
        Ok(out)
    }
}

/// A location generator that places files as Java does ([`DataLocations`]) and remembers every
/// location it handed out, so a failed write can delete the files its writers created
/// (iceberg's writers leave them on error).
#[derive(Clone)]
struct RecordingLocations {
    inner: Arc<DataLocations>,
    generated: Arc<Mutex<Vec<String>>>,
    /// Why a location was refused. iceberg's generator cannot fail, and every partition is
    /// checked before its rows reach a writer (`check`), so this only guards that check.
    refused: Arc<Mutex<Option<String>>>,
}

impl RecordingLocations {
    fn new(inner: DataLocations) -> Self {
        Self {
            inner: Arc::new(inner),
            generated: Arc::default(),
            refused: Arc::default(),
        }
    }

    /// Refuses a partition whose files would not lie inside the data location, before any
    /// of its rows are written.
    fn check(&self, key: &PartitionKey) -> Result<()> {
        self.inner.path(Some(key), "check").map(drop)
    }
}

impl LocationGenerator for RecordingLocations {
    fn generate_location(&self, partition_key: Option<&PartitionKey>, file_name: &str) -> String {
        let location = match self.inner.path(partition_key, file_name) {
            Ok(location) => location,
            Err(e) => {
                // Written at the data location's top instead, then deleted with the failed
                // write; never outside the table.
                lock_refusal(&self.refused).get_or_insert_with(|| e.to_string());
                format!("{}/refused-{file_name}", self.inner.data_location())
            }
        };
        lock(&self.generated).push(location.clone());
        location
    }
}

fn lock_refusal(m: &Mutex<Option<String>>) -> std::sync::MutexGuard<'_, Option<String>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The list stays usable even if a thread panicked while holding it (it only ever grows).
fn lock(m: &Mutex<Vec<String>>) -> std::sync::MutexGuard<'_, Vec<String>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Most batches span few partitions.
const MAX_VECTOR_GROUPS: usize = 32;

/// Splits batches by the partition spec.
///
/// iceberg's `RecordBatchPartitionSplitter` turns every row's partition tuple into an Iceberg
/// `Struct` and hashes it: over a third of a migration's CPU in `perf` (10M rows, identity
/// partitions). Batches rarely span many partitions, so this takes one partition per pass — the
/// rows whose transformed values equal the first unassigned row's, found by vectorised
/// null-safe comparisons — and builds the Iceberg key from that one row. A batch spanning more
/// than [`MAX_VECTOR_GROUPS`] partitions goes to iceberg's splitter, whose cost does not grow
/// with the number of partitions, and so do all later batches of the write.
struct PartitionSplitter {
    /// Set once a batch spanned too many partitions.
    many: AtomicBool,
    calculator: PartitionValueCalculator,
    /// A partition field is a float or double (iceberg's splitter cannot tell -0.0 from 0.0).
    has_floats: bool,
    partition_type: StructType,
    spec: PartitionSpecRef,
    schema: IcebergSchemaRef,
    fallback: RecordBatchPartitionSplitter,
}

impl PartitionSplitter {
    fn try_new(schema: IcebergSchemaRef, spec: PartitionSpecRef) -> Result<Self> {
        let partition_type = spec.partition_type(&schema)?;
        let has_floats = partition_type.fields().iter().any(|f| {
            matches!(
                *f.field_type,
                iceberg::spec::Type::Primitive(
                    iceberg::spec::PrimitiveType::Float | iceberg::spec::PrimitiveType::Double
                )
            )
        });
        Ok(Self {
            has_floats,
            many: AtomicBool::new(false),
            calculator: PartitionValueCalculator::try_new(&spec, &schema)?,
            partition_type,
            fallback: RecordBatchPartitionSplitter::try_new_with_computed_values(
                schema.clone(),
                spec.clone(),
            )?,
            spec,
            schema,
        })
    }

    fn split(&self, batch: &RecordBatch) -> Result<Vec<(PartitionKey, RecordBatch)>> {
        if !self.many.load(Ordering::Relaxed) {
            if let Some(groups) = self.split_vectorised(batch, Some(MAX_VECTOR_GROUPS))? {
                return Ok(groups);
            }
            self.many.store(true, Ordering::Relaxed);
        }
        let groups = self.fallback.split(batch)?;
        if !self.has_floats {
            return Ok(groups);
        }
        // iceberg's splitter groups rows by their `Struct`, where `-0.0 == 0.0`: each group
        // is split again by the values' bits (arrow compares floats bit for bit), so the two
        // partitions stay apart (see `Fanout`).
        let mut out = Vec::with_capacity(groups.len());
        for (key, part) in groups {
            match self.split_vectorised(&part, None)? {
                Some(exact) => out.extend(exact),
                None => out.push((key, part)),
            }
        }
        Ok(out)
    }

    /// `batch` split one partition per pass; `None` past `limit` partitions (or when the
    /// partition values are not a struct), for iceberg's splitter to take.
    fn split_vectorised(
        &self,
        batch: &RecordBatch,
        limit: Option<usize>,
    ) -> Result<Option<Vec<(PartitionKey, RecordBatch)>>> {
        let values = self.calculator.calculate(batch)?;
        let Some(columns) = values
            .as_any()
            .downcast_ref::<StructArray>()
            .map(|s| s.columns())
        else {
            return Ok(None);
        };
        // Rows not yet assigned to a partition; `None` while that is every row.
        let mut remaining: Option<BooleanArray> = None;
        let mut first = 0;
        let mut out = Vec::new();
        loop {
            if limit.is_some_and(|limit| out.len() == limit) {
                return Ok(None);
            }
            let mut mask = remaining.clone();
            for column in columns {
                let same = not_distinct(column, &Scalar::new(column.slice(first, 1)))?;
                mask = Some(match mask {
                    Some(m) => and(&m, &same)?,
                    None => same,
                });
            }
            let key = self.key(&values.slice(first, 1))?;
            let Some(mask) = mask else {
                // A spec without fields is unpartitioned and never reaches here.
                return Ok(Some(vec![(key, batch.clone())]));
            };
            if remaining.is_none() && mask.true_count() == batch.num_rows() {
                // The whole batch is one partition: no copy.
                out.push((key, batch.clone()));
                return Ok(Some(out));
            }
            out.push((key, filter_record_batch(batch, &mask)?));
            // Not arrow-arith 58.4's `and_not` (apache/arrow-rs#10697, #10698; fixed by #10699):
            // it pairs each operand's buffer with the other's bit offset and offsets its
            // result again. A mask keeps the offset of a batch cut out of a larger one where
            // `not_distinct` met a NULL (its result is the column's null buffer), so rows were
            // assigned twice or not at all, or the kernel panicked ("offset + len out of
            // bounds").
            let unassigned = not(&mask)?;
            let rest = match &remaining {
                Some(r) => and(r, &unassigned)?,
                None => unassigned,
            };
            match rest.values().set_indices().next() {
                Some(i) => first = i,
                None => return Ok(Some(out)),
            }
            remaining = Some(rest);
        }
    }

    /// The partition key of a one-row partition-values array.
    fn key(&self, row: &ArrayRef) -> Result<PartitionKey> {
        match arrow_struct_to_literal(row, &self.partition_type)?
            .into_iter()
            .next()
            .flatten()
        {
            Some(Literal::Struct(data)) => Ok(PartitionKey::new(
                self.spec.as_ref().clone(),
                self.schema.clone(),
                data,
            )),
            other => Err(Error::InvalidInput(format!(
                "partition values of a row are not a struct: {other:?}"
            ))),
        }
    }
}

/// Gives `batch` the table's Arrow schema (field ids), checking names and types column by column.
///
/// The batch may leave out optional columns, as PyIceberg's append accepts a frame without them
/// (and a reconciler's `on_missing_in_source = skip` does): they are written as nulls, which is
/// what every reader returns for them. The columns the batch has keep the table's order; a
/// required column it lacks is an error naming it.
pub fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let got = batch.schema();
    let names = |s: &arrow_schema::Schema| {
        s.fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mismatch = || {
        Error::InvalidInput(format!(
            "batch has columns [{}] but the table has [{}]",
            names(&got),
            names(target)
        ))
    };
    let mut columns = Vec::with_capacity(target.fields().len());
    let mut next = 0;
    for t in target.fields() {
        let Some(g) = got.fields().get(next).filter(|g| g.name() == t.name()) else {
            if got.fields().iter().any(|g| g.name() == t.name()) {
                // Present, but out of the table's order.
                return Err(mismatch());
            }
            if !t.is_nullable() {
                return Err(Error::InvalidInput(format!(
                    "batch has no column '{}', which the table requires (batch columns: [{}]); \
                     give every row a value for it",
                    t.name(),
                    names(&got)
                )));
            }
            columns.push(new_null_array(t.data_type(), batch.num_rows()));
            continue;
        };
        if !same_type(g.data_type(), t.data_type()) {
            return Err(Error::InvalidInput(format!(
                "batch column '{}' ({}) does not match table column '{}' ({})",
                g.name(),
                g.data_type(),
                t.name(),
                t.data_type()
            )));
        }
        let column = batch.column(next);
        if g.is_nullable() && !t.is_nullable() && column.null_count() > 0 {
            return Err(Error::InvalidInput(format!(
                "column '{}' is required but the batch has nulls in it",
                t.name()
            )));
        }
        columns.push(column.clone());
        next += 1;
    }
    if next != got.fields().len() {
        return Err(mismatch());
    }
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// Equal up to field metadata (ids) of nested children, which the batch may lack.
fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| p.name() == q.name() && same_type(p.data_type(), q.data_type()))
        }
        (DataType::List(x), DataType::List(y))
        | (DataType::LargeList(x), DataType::LargeList(y))
        | (DataType::Map(x, _), DataType::Map(y, _)) => same_type(x.data_type(), y.data_type()),
        _ => a == b,
    }
}

fn writer_properties(
    table_properties: &std::collections::HashMap<String, String>,
    sample: Option<&RecordBatch>,
) -> Result<WriterProperties> {
    // PyIceberg and Java default to zstd; parquet-rs would write uncompressed.
    let codec = table_properties
        .get(COMPRESSION_CODEC)
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_else(|| "zstd".to_string());
    let level = table_properties
        .get(COMPRESSION_LEVEL)
        .map(|v| {
            v.trim().parse::<i32>().map_err(|_| {
                Error::InvalidInput(format!(
                    "table property {COMPRESSION_LEVEL}='{v}' is not an integer"
                ))
            })
        })
        .transpose()?;
    let compression = match (codec.as_str(), level) {
        ("zstd", None) => Compression::ZSTD(ZstdLevel::default()),
        ("zstd", Some(l)) => Compression::ZSTD(ZstdLevel::try_new(l).map_err(|_| {
            Error::InvalidInput(format!(
                "table property {COMPRESSION_LEVEL}='{l}' is out of zstd's range (1 to 22)"
            ))
        })?),
        ("snappy", _) => Compression::SNAPPY,
        ("uncompressed" | "none", _) => Compression::UNCOMPRESSED,
        (other, _) => {
            return Err(Error::InvalidInput(format!(
                "table property {COMPRESSION_CODEC}='{other}' is not supported by iceberg-ops; \
                 use zstd, snappy or uncompressed"
            )));
        }
    };
    let size = |key: &str, default: usize| -> Result<usize> {
        match table_properties.get(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "table property {key}='{v}' is not a positive integer"
                    ))
                }),
        }
    };
    let mut builder = WriterProperties::builder();
    for column in sample.map(plain_columns).unwrap_or_default() {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(column), false);
    }
    Ok(builder
        .set_compression(compression)
        // Every open writer (one per partition in a fan-out) buffers its row group in memory
        // until it is flushed, so these two caps bound a write's memory, whatever the file size.
        .set_max_row_group_bytes(Some(size(ROW_GROUP_BYTES, DEFAULT_ROW_GROUP_BYTES)?))
        .set_max_row_group_row_count(Some(size(ROW_GROUP_ROWS, DEFAULT_ROW_GROUP_ROWS)?))
        .set_data_page_size_limit(size(PAGE_BYTES, DEFAULT_PAGE_BYTES)?)
        .set_data_page_row_count_limit(size(PAGE_ROWS, DEFAULT_PAGE_ROWS)?)
        .set_dictionary_page_size_limit(size(DICT_BYTES, DEFAULT_DICT_BYTES)?)
        .build())
}

/// Rows of the first batch that [`plain_columns`] looks at.
const DICTIONARY_SAMPLE_ROWS: usize = 4096;

/// Top-level columns of `sample` whose first [`DICTIONARY_SAMPLE_ROWS`] rows are mostly distinct.
///
/// parquet-rs dictionary-encodes every column until its dictionary passes the page size limit,
/// so in the small files of a migration batch a column of unique ids, timestamps or amounts is
/// hashed into a dictionary as large as the data, written twice (dictionary page and indices)
/// and compressed twice: a third of the CPU of a 50,000-row-batch migration in `perf`. A column
/// whose sample is more than half distinct is written plain instead; zstd still compresses it.
fn plain_columns(sample: &RecordBatch) -> Vec<String> {
    let rows = sample.num_rows().min(DICTIONARY_SAMPLE_ROWS);
    let schema = sample.schema();
    let mut out = Vec::new();
    for (field, column) in schema.fields().iter().zip(sample.columns()) {
        if field.data_type().is_nested() || rows < 64 {
            continue;
        }
        let head = column.slice(0, rows);
        let present = rows - head.null_count();
        // Types the row format cannot encode keep parquet-rs's default.
        if let Some(distinct) = distinct_values(head)
            && distinct * 2 > present
        {
            out.push(field.name().clone());
        }
    }
    out
}

/// How many distinct values `column` holds (NULL counted as one value); `None` for a type
/// arrow's row format cannot encode. Encoded rows in a hash set: a sort of the sample (what
/// this was) compared strings `n log n` times, 4% of a batch-50,000 migration's CPU in `perf`,
/// as the sample is taken for every batch written.
fn distinct_values(column: ArrayRef) -> Option<usize> {
    let converter =
        arrow_row::RowConverter::new(vec![arrow_row::SortField::new(column.data_type().clone())])
            .ok()?;
    let rows = converter.convert_columns(&[column]).ok()?;
    let mut seen = hashbrown::HashSet::with_capacity(rows.num_rows());
    for row in rows.iter() {
        seen.insert(row);
    }
    Some(seen.len())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `(partition key, ids)` per partition, sorted.
    type Groups = Vec<(String, Vec<i64>)>;

    /// [`Groups`] of a splitter's output.
    fn groups(parts: Vec<(PartitionKey, RecordBatch)>) -> Groups {
        let mut out: Groups = parts
            .into_iter()
            .map(|(key, batch)| {
                let ids = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .map(|a| a.iter().flatten().collect())
                    .unwrap_or_default();
                (format!("{:?}", key.data()), ids)
            })
            .collect();
        out.sort();
        out
    }

    /// A table of the optional columns `fields` (ids from 1), partitioned by identity(d): its
    /// schema, spec and Arrow schema.
    fn partitioned_by_d(
        fields: &[(&str, iceberg::spec::PrimitiveType)],
    ) -> Result<(IcebergSchemaRef, PartitionSpecRef, SchemaRef)> {
        use iceberg::spec::{NestedField, Schema, Transform, Type, UnboundPartitionSpec};
        let schema = Arc::new(
            Schema::builder()
                .with_fields(fields.iter().zip(1..).map(|((name, t), id)| {
                    NestedField::optional(id, *name, Type::Primitive(t.clone())).into()
                }))
                .build()?,
        );
        let d = schema
            .field_by_name("d")
            .ok_or_else(|| Error::InvalidInput("no column d".into()))?
            .id;
        let spec = Arc::new(
            UnboundPartitionSpec::builder()
                .add_partition_field(d, "d", Transform::Identity)?
                .build()
                .bind(schema.clone())?,
        );
        let arrow = Arc::new(schema_to_arrow_schema(&schema)?);
        Ok((schema, spec, arrow))
    }

    /// Splits `ids` (with region `regions[id % len]`, null for "") by identity(region) and
    /// bucket(2, id) with the fast splitter and iceberg's, returning both.
    fn split_both(ids: std::ops::Range<i64>, regions: &[&str]) -> Result<(Groups, Groups)> {
        split_both_from(ids, regions, 0)
    }

    /// [`split_both`] of the batch without its first `skip` rows (a slice: its arrays keep
    /// their offsets, as a batch cut out of a file's does).
    fn split_both_from(
        ids: std::ops::Range<i64>,
        regions: &[&str],
        skip: usize,
    ) -> Result<(Groups, Groups)> {
        use iceberg::spec::{
            NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec,
        };
        let schema = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String))
                        .into(),
                ])
                .build()?,
        );
        let spec = Arc::new(
            UnboundPartitionSpec::builder()
                .add_partition_field(2, "region", Transform::Identity)?
                .add_partition_field(1, "id_bucket", Transform::Bucket(2))?
                .build()
                .bind(schema.clone())?,
        );
        let arrow = Arc::new(schema_to_arrow_schema(&schema)?);
        let region: arrow_array::StringArray = ids
            .clone()
            .map(|i| {
                let r = regions[(i as usize) % regions.len()];
                (!r.is_empty()).then_some(r)
            })
            .collect();
        let batch = RecordBatch::try_new(
            arrow,
            vec![
                Arc::new(arrow_array::Int64Array::from_iter_values(ids)),
                Arc::new(region),
            ],
        )?;
        let batch = batch.slice(skip, batch.num_rows() - skip);
        let splitter = PartitionSplitter::try_new(schema.clone(), spec.clone())?;
        let fast = groups(splitter.split(&batch)?);
        // A second batch takes the same path as the first (the fallback sticks).
        assert_eq!(groups(splitter.split(&batch)?), fast);
        let slow = RecordBatchPartitionSplitter::try_new_with_computed_values(schema, spec)?
            .split(&batch)?;
        Ok((fast, groups(slow)))
    }

    #[test]
    fn splitter_groups_rows_like_icebergs_including_nulls() -> Result<()> {
        let (fast, slow) = split_both(0..1000, &["eu", "us", "", "apac", "latam"])?;
        assert_eq!(fast.len(), 10);
        assert_eq!(fast, slow);
        Ok(())
    }

    /// A batch cut out of a larger one whose first row's partition value is NULL: arrow's
    /// `not_distinct` against a NULL keeps the column's null-buffer offset, which panicked
    /// ("offset + len out of bounds") when the masks were combined.
    #[test]
    fn splitter_takes_a_slice_starting_at_a_null() -> Result<()> {
        for skip in [1, 7, 9, 63, 64, 65, 100] {
            let mut regions = vec!["eu"; 130];
            regions[skip] = "";
            regions[skip + 3] = "";
            let (fast, slow) = split_both_from(0..130, &regions, skip)?;
            assert_eq!(fast, slow, "skip {skip}");
        }
        Ok(())
    }

    /// The same on a `long` identity partition: rows 9.. of a 20-row file whose row 9 is NULL.
    #[test]
    fn splitter_takes_a_long_slice_starting_at_a_null() -> Result<()> {
        use iceberg::spec::PrimitiveType::Long;
        let (schema, spec, arrow) = partitioned_by_d(&[("id", Long), ("d", Long)])?;
        for (rows, null_at) in [(20usize, 9usize), (30, 9), (130, 70), (20, 0)] {
            let d: arrow_array::Int64Array =
                (0..rows).map(|i| (i != null_at).then_some(1)).collect();
            let batch = RecordBatch::try_new(
                arrow.clone(),
                vec![
                    Arc::new(arrow_array::Int64Array::from_iter_values(0..rows as i64)),
                    Arc::new(d),
                ],
            )?;
            let batch = batch.slice(null_at, rows - null_at);
            let splitter = PartitionSplitter::try_new(schema.clone(), spec.clone())?;
            let fast = groups(splitter.split(&batch)?);
            let slow = RecordBatchPartitionSplitter::try_new_with_computed_values(
                schema.clone(),
                spec.clone(),
            )?
            .split(&batch)?;
            assert_eq!(fast, groups(slow), "{rows} rows, NULL at {null_at}");
            assert_eq!(fast.len(), 2, "{rows} rows, NULL at {null_at}");
        }
        Ok(())
    }

    /// `-0.0` and `0.0` are two partitions (Java's `Double.equals`), every NaN one: on the
    /// vectorised path and on iceberg's (whose `Struct` calls the zeros equal).
    #[test]
    fn splitter_keeps_signed_zeros_apart() -> Result<()> {
        let (schema, spec, arrow) =
            partitioned_by_d(&[("d", iceberg::spec::PrimitiveType::Double)])?;
        let other_nan = f64::from_bits(f64::NAN.to_bits() ^ 1);
        let d = arrow_array::Float64Array::from(vec![
            Some(0.0),
            Some(-0.0),
            Some(f64::NAN),
            Some(other_nan),
            None,
            Some(-0.0),
            Some(1.0),
            Some(0.0),
        ]);
        let batch = RecordBatch::try_new(arrow, vec![Arc::new(d)])?;
        for many in [false, true] {
            let splitter = PartitionSplitter::try_new(schema.clone(), spec.clone())?;
            splitter.many.store(many, Ordering::Relaxed);
            // Rows by partition as Java tells partitions apart (`canonical_partition`).
            let partition =
                |v: Option<f64>| canonical_partition(&Struct::from_iter([v.map(Literal::double)]));
            let mut rows_by_partition: HashMap<Struct, usize> = HashMap::new();
            for (key, part) in splitter.split(&batch)? {
                let label = canonical_partition(key.data());
                let d = part
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow_array::Float64Array>()
                    .ok_or_else(|| Error::InvalidInput("not doubles".into()))?;
                for v in d.iter() {
                    assert_eq!(partition(v), label, "many: {many}, a row of {key:?}");
                }
                *rows_by_partition.entry(label).or_default() += part.num_rows();
            }
            let count = |v: f64| rows_by_partition.get(&partition(Some(v))).copied();
            assert_eq!(count(0.0), Some(2), "many: {many}");
            assert_eq!(count(-0.0), Some(2), "many: {many}");
            assert_eq!(count(f64::NAN), Some(2), "many: {many}");
            assert_eq!(count(1.0), Some(1), "many: {many}");
        }
        Ok(())
    }

    #[test]
    fn splitter_agrees_on_a_one_region_batch() -> Result<()> {
        let (fast, slow) = split_both(0..100, &["eu"])?;
        assert_eq!(fast, slow);
        assert_eq!(fast.len(), 2);
        Ok(())
    }

    #[test]
    fn splitter_falls_back_past_many_partitions() -> Result<()> {
        let names: Vec<String> = (0..40).map(|i| format!("r{i}")).collect();
        let regions: Vec<&str> = names.iter().map(String::as_str).collect();
        let (fast, slow) = split_both(0..400, &regions)?;
        assert_eq!(fast.len(), 80);
        assert_eq!(fast, slow);
        Ok(())
    }

    /// The table `id long required, v string, extra long` as Arrow.
    fn three_columns() -> Result<SchemaRef> {
        use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "v", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::optional(3, "extra", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        Ok(Arc::new(schema_to_arrow_schema(&schema)?))
    }

    fn batch_of(columns: &[&str]) -> Result<RecordBatch> {
        let column = |name: &str| -> ArrayRef {
            match name {
                "v" => Arc::new(arrow_array::StringArray::from(vec![Some("a"), None])),
                _ => Arc::new(arrow_array::Int64Array::from(vec![1, 2])),
            }
        };
        Ok(RecordBatch::try_from_iter(
            columns.iter().map(|c| (*c, column(c))),
        )?)
    }

    #[test]
    fn a_batch_without_an_optional_column_is_written_with_nulls_in_it() -> Result<()> {
        let target = three_columns()?;
        let out = conform(&batch_of(&["id", "v"])?, &target)?;
        assert_eq!(out.schema(), target);
        assert_eq!(out.column(2).null_count(), 2);
        let out = conform(&batch_of(&["id", "extra"])?, &target)?;
        assert_eq!(out.column(1).null_count(), 2);
        assert_eq!(out.column(2).null_count(), 0);
        let out = conform(&batch_of(&["id"])?, &target)?;
        assert_eq!(out.num_rows(), 2);
        Ok(())
    }

    #[test]
    fn a_batch_without_a_required_column_or_out_of_order_is_refused() -> Result<()> {
        let target = three_columns()?;
        let err = |columns: &[&str]| -> Result<String> {
            Ok(match conform(&batch_of(columns)?, &target) {
                Err(e) => e.to_string(),
                Ok(_) => String::new(),
            })
        };
        let missing = err(&["v", "extra"])?;
        assert!(
            missing.contains("no column 'id'") && missing.contains("requires"),
            "{missing}"
        );
        for columns in [
            &["id", "extra", "v"][..],
            &["id", "v", "extra", "more"],
            &["id", "w"],
        ] {
            let e = err(columns)?;
            assert!(
                e.contains("but the table has [id, v, extra]"),
                "{columns:?}: {e}"
            );
        }
        Ok(())
    }

    #[test]
    fn defaults_are_zstd_and_bounded_row_groups() -> Result<()> {
        let p = writer_properties(&HashMap::new(), None)?;
        let col = ColumnPath::from("c");
        assert_eq!(p.compression(&col), Compression::ZSTD(ZstdLevel::default()));
        assert_eq!(p.max_row_group_bytes(), Some(DEFAULT_ROW_GROUP_BYTES));
        assert_eq!(p.max_row_group_row_count(), Some(DEFAULT_ROW_GROUP_ROWS));
        assert_eq!(p.data_page_row_count_limit(), DEFAULT_PAGE_ROWS);
        Ok(())
    }

    #[test]
    fn write_parquet_table_properties_are_honoured() -> Result<()> {
        let p = writer_properties(
            &props(&[
                (COMPRESSION_LEVEL, "9"),
                (ROW_GROUP_BYTES, "4096"),
                (ROW_GROUP_ROWS, "1000"),
                (PAGE_BYTES, "2048"),
                (PAGE_ROWS, "100"),
                (DICT_BYTES, "512"),
            ]),
            None,
        )?;
        let col = ColumnPath::from("c");
        let nine = ZstdLevel::try_new(9).map_err(|e| Error::InvalidInput(e.to_string()))?;
        assert_eq!(p.compression(&col), Compression::ZSTD(nine));
        assert_eq!(p.max_row_group_bytes(), Some(4096));
        assert_eq!(p.max_row_group_row_count(), Some(1000));
        assert_eq!(p.data_page_size_limit(), 2048);
        assert_eq!(p.data_page_row_count_limit(), 100);
        assert_eq!(p.dictionary_page_size_limit(), 512);
        Ok(())
    }

    #[test]
    fn mostly_distinct_columns_are_written_without_a_dictionary() -> Result<()> {
        let n = 10_000;
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(arrow_array::Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "qty",
                Arc::new(arrow_array::Int32Array::from_iter_values(
                    (0..n as i32).map(|i| i * 7 % 1000),
                )),
            ),
            (
                "region",
                Arc::new(arrow_array::StringArray::from_iter_values(
                    (0..n).map(|i| ["eu", "us", "apac"][i as usize % 3]),
                )),
            ),
            (
                "note",
                Arc::new(arrow_array::StringArray::from_iter(
                    (0..n).map(|i| (i % 11 != 0).then(|| format!("note-{i}"))),
                )),
            ),
        ])?;
        assert_eq!(plain_columns(&batch), ["id", "note"]);
        let some = Arc::new(arrow_array::Int64Array::from(vec![
            Some(1),
            None,
            None,
            Some(1),
            Some(2),
        ])) as ArrayRef;
        assert_eq!(distinct_values(some), Some(3), "NULL is one value");
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
        let floats = Arc::new(arrow_array::Float64Array::from(vec![
            0.0,
            -0.0,
            0.0,
            f64::NAN,
            f64::NAN,
            other_nan,
        ])) as ArrayRef;
        // As the sort counted them (`total_cmp`): both zeros, and NaNs by their bits.
        assert_eq!(distinct_values(floats), Some(4));
        let dict: arrow_array::DictionaryArray<arrow_array::types::Int32Type> =
            vec!["eu", "us", "eu", "eu"].into_iter().collect();
        assert_eq!(distinct_values(Arc::new(dict)), Some(2), "by value");
        let p = writer_properties(&HashMap::new(), Some(&batch))?;
        assert!(!p.dictionary_enabled(&ColumnPath::from("id")));
        assert!(!p.dictionary_enabled(&ColumnPath::from("note")));
        assert!(p.dictionary_enabled(&ColumnPath::from("qty")));
        assert!(p.dictionary_enabled(&ColumnPath::from("region")));
        Ok(())
    }

    #[test]
    fn bad_write_parquet_values_name_the_property() {
        for (key, value) in [
            (ROW_GROUP_BYTES, "0"),
            (ROW_GROUP_ROWS, "many"),
            (COMPRESSION_LEVEL, "99"),
            (COMPRESSION_CODEC, "brotli"),
        ] {
            let err = writer_properties(&props(&[(key, value)]), None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(key), "{key}={value}: {err}");
        }
    }
}
