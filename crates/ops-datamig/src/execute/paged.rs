//! Reads one Parquet data file a page at a time, so a worker's memory is bounded by its batch
//! and the file's pages, not by the file's row groups.
//!
//! iceberg 0.10.1's reader (arrow's async reader underneath) fetches every projected column
//! chunk of a row group before it decodes the first row. PyIceberg writes row groups of up to a
//! million rows, Spark of 128 MB, so a worker holds a whole row group's compressed columns and
//! peak memory follows the source's file layout whatever `batch_rows` says. arrow's synchronous
//! reader pulls each page from a [`ChunkReader`] only when it decodes it; here that reader is
//! backed by ranged reads of the table's `FileIO`, runs on a blocking thread, and hands its
//! batches over through a one-slot channel.
//!
//! Local files are always read this way (a page read is a system call). On object stores a
//! page costs two sequential requests (header, then data), so only row groups larger than
//! [`REMOTE_PAGED_FROM`] are; smaller ones go to iceberg's reader, which fetches them whole in
//! a few parallel requests.
//!
//! Files this path does not cover are left to iceberg's reader (the caller falls back when
//! [`open`] returns `None`): no Parquet field ids (name mapping or position fallback), INT96
//! timestamps, position deletes, a task over part of a file, and a projected column missing
//! from the file whose value is not NULL (an `initial-default`). Identity-partition values are
//! not read from the file: their columns are filled with the file's partition values, whether
//! the file has them or not ([`ops_core::partition_constants`], as iceberg's reader does).

use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, FieldRef, Fields, SchemaRef};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::io::{FileIO, FileRead};
use iceberg::scan::FileScanTask;
use iceberg::spec::DataFileFormat;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::Type as PhysicalType;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};
use tokio::sync::{mpsc, oneshot};

use crate::{MigrationError, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// How much a page-header read fetches at once; a header is usually under a hundred bytes.
const HEADER_READ_AHEAD: u64 = 16 * 1024;

/// Opens `task`'s file for a paged read of the top-level columns of `read_schema` (by field id),
/// in batches of `batch_size` rows. The batches carry the file's own column names, types and
/// field ids — except that strings and binaries come as the read schema's flavour of them
/// ([`read_types`]); the caller maps them onto the read schema by field id.
///
/// `None`: this file needs iceberg's reader (see the module docs).
pub(crate) async fn open(
    file_io: &FileIO,
    task: &FileScanTask,
    read_schema: &SchemaRef,
    batch_size: usize,
) -> Result<Option<BoxStream<'static, Result<RecordBatch>>>> {
    if task.data_file_format != DataFileFormat::Parquet
        || !task.deletes.is_empty()
        || task.start != 0
        || task.length != task.file_size_in_bytes
        || task.file_size_in_bytes == 0
    {
        return Ok(None);
    }
    // Identity-partition values, filled in below rather than read from the file.
    let constants = ops_core::partition_constants::constants(task);
    let wanted: Vec<i32> = read_schema
        .fields()
        .iter()
        .filter_map(|f| field_id(f))
        .filter(|id| !constants.iter().any(|c| c.field_id == *id))
        .collect();
    // Columns a file may lack whose value is not NULL: a column with an `initial-default`
    // takes the default.
    let not_null_if_missing: HashSet<i32> = wanted
        .iter()
        .filter(|id| {
            task.schema
                .field_by_id(**id)
                .is_some_and(|f| f.initial_default.is_some())
        })
        .copied()
        .collect();
    let source = match local_source(&task.data_file_path, task.file_size_in_bytes)? {
        Some(source) => source,
        None => Source::Remote {
            handle: tokio::runtime::Handle::current(),
            reader: Arc::from(file_io.new_input(&task.data_file_path)?.reader().await?),
        },
    };
    // A page read from a local file is a system call; from an object store, a request.
    let limit = matches!(source, Source::Remote { .. }).then_some(REMOTE_PAGED_FROM);
    let ranged = Arc::new(Ranged {
        source,
        len: task.file_size_in_bytes,
        path: task.data_file_path.clone(),
        failure: std::sync::Mutex::new(None),
    });
    let file = RangedFile(ranged.clone());
    let path = task.data_file_path.clone();
    let handle = tokio::runtime::Handle::current();
    let (ready_tx, ready_rx) = oneshot::channel::<Result<bool>>();
    let (tx, rx) = mpsc::channel::<Result<RecordBatch>>(1);
    let read_types = read_schema.clone();
    let producer = tokio::task::spawn_blocking(move || {
        let prepared = prepare(
            file,
            &wanted,
            &not_null_if_missing,
            Some(&read_types),
            limit,
            batch_size,
        );
        let mut reader = match prepared.map_err(|e| caused(e, ranged.take_failure())) {
            Ok(Some(reader)) => {
                let _ = ready_tx.send(Ok(true));
                reader
            }
            Ok(None) => {
                let _ = ready_tx.send(Ok(false));
                return;
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        loop {
            // The slot is taken before the batch is decoded, so at most two batches of this
            // file are alive: the one the worker is writing and the one decoded into the slot.
            let Ok(permit) = handle.block_on(tx.reserve()) else {
                return; // the reader was dropped (the run stopped): stop reading
            };
            let Some(batch) = reader.next() else { return };
            let item = batch.map_err(|e| caused(parquet_error(&path, e), ranged.take_failure()));
            let failed = item.is_err();
            permit.send(item);
            if failed {
                return;
            }
        }
    });
    match ready_rx.await {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => return Ok(None),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(ended(producer.await, &task.data_file_path)),
    }
    let file = task.data_file_path.clone();
    let read_schema = read_schema.clone();
    // After the last batch, the producer's outcome: a panic there must not read as the end of
    // the file, or the rest of its rows would be silently missing.
    let stream = futures::stream::unfold(
        (rx, Some(producer), file),
        |(mut rx, producer, file)| async move {
            if let Some(item) = rx.recv().await {
                return Some((item, (rx, producer, file)));
            }
            let producer = producer?;
            match producer.await {
                Ok(()) => None,
                Err(e) => Some((Err(ended(Err(e), &file)), (rx, None, file))),
            }
        },
    );
    let stream = stream.map(move |batch| {
        batch.and_then(|b| {
            ops_core::partition_constants::fill(&b, &constants, &read_schema)
                .map_err(MigrationError::from)
        })
    });
    Ok(Some(stream.boxed()))
}

fn ended(outcome: std::result::Result<(), tokio::task::JoinError>, path: &str) -> MigrationError {
    let why = match outcome {
        Ok(()) => "stopped without an error".to_string(),
        Err(e) => e.to_string(),
    };
    MigrationError::from(iceberg::Error::new(
        iceberg::ErrorKind::Unexpected,
        format!("the reader of {path} failed: {why}"),
    ))
}

/// Reads the footer and builds the page-streaming reader, or `None` when the file needs
/// iceberg's reader. With `remote_limit`, a file whose row groups all fit in it is also left to
/// iceberg's reader, which fetches a row group's columns in a few parallel requests where this
/// reader makes two sequential ones per page. With `read_schema`, string and binary columns
/// are decoded as the type it gives them ([`read_types`]).
fn prepare(
    file: RangedFile,
    wanted: &[i32],
    not_null_if_missing: &HashSet<i32>,
    read_schema: Option<&SchemaRef>,
    remote_limit: Option<u64>,
    batch_size: usize,
) -> Result<Option<parquet::arrow::arrow_reader::ParquetRecordBatchReader>> {
    let path = file.0.path.clone();
    let failed = |e: ParquetError| parquet_error(&path, e);
    let mut metadata =
        ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(failed)?;
    if let Some(schema) = read_schema.and_then(|r| read_types(metadata.schema(), r)) {
        // A hint the reader cannot take leaves the file's own types (the projection casts).
        match ArrowReaderMetadata::try_new(
            metadata.metadata().clone(),
            ArrowReaderOptions::new().with_schema(Arc::new(schema)),
        ) {
            Ok(hinted) => metadata = hinted,
            Err(e) => tracing::debug!(%path, error = %e, "string types as the file has them"),
        }
    }
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata);
    let arrow = builder.schema().clone();
    if !arrow.fields().iter().all(|f| has_ids(f)) {
        return Ok(None);
    }
    if builder
        .parquet_schema()
        .columns()
        .iter()
        .any(|c| c.physical_type() == PhysicalType::INT96)
    {
        return Ok(None);
    }
    let mut roots = Vec::new();
    for id in wanted {
        match arrow.fields().iter().position(|f| field_id(f) == Some(*id)) {
            Some(i) => roots.push(i),
            None if not_null_if_missing.contains(id) => return Ok(None),
            // Written before the column existed: the projection fills it with NULLs.
            None => {}
        }
    }
    roots.sort_unstable();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    if let Some(limit) = remote_limit {
        let largest = builder
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| {
                rg.columns()
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask.leaf_included(*i))
                    .map(|(_, c)| c.compressed_size().max(0) as u64)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        if largest <= limit {
            return Ok(None);
        }
    }
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_size.max(1))
        .build()
        .map_err(failed)?;
    Ok(Some(reader))
}

/// The file's Arrow schema with each string or binary column (nested ones included) of the
/// flavour `read` gives the same field id, or `None` when every column already has it.
///
/// PyIceberg stores an Arrow schema of `large_string`s in its files and iceberg reads `string`:
/// read as the file says, every string of every batch was decoded with 64-bit offsets and then
/// copied into 32-bit ones by the projection (4% of a migration's CPU in `perf`). The Parquet
/// reader decodes a byte array into any of the flavours directly.
fn read_types(
    file: &arrow_schema::Schema,
    read: &arrow_schema::Schema,
) -> Option<arrow_schema::Schema> {
    let fields = retype_children(file.fields(), read.fields())?;
    Some(arrow_schema::Schema::new_with_metadata(
        fields,
        file.metadata().clone(),
    ))
}

/// `file`'s children with [`retype`] applied to each, matched to `read`'s by field id.
fn retype_children(file: &Fields, read: &Fields) -> Option<Fields> {
    let mut changed = false;
    let out: Vec<FieldRef> = file
        .iter()
        .map(|f| {
            let wanted = field_id(f).and_then(|id| read.iter().find(|r| field_id(r) == Some(id)));
            match wanted.and_then(|r| retype(f, r)) {
                Some(n) => {
                    changed = true;
                    Arc::new(n)
                }
                None => f.clone(),
            }
        })
        .collect();
    changed.then(|| out.into())
}

/// `file` with the byte-array flavour of `read` (string or binary: plain, large or view), or
/// `None` when nothing in it changes. Nesting follows the schema, not the data.
fn retype(file: &Field, read: &Field) -> Option<Field> {
    let strings =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let binaries = |t: &DataType| {
        matches!(
            t,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        )
    };
    let to = match (file.data_type(), read.data_type()) {
        (f, r) if f == r => return None,
        (f, r) if (strings(f) && strings(r)) || (binaries(f) && binaries(r)) => r.clone(),
        (DataType::Struct(fc), DataType::Struct(rc)) => DataType::Struct(retype_children(fc, rc)?),
        (DataType::List(fe), DataType::List(re) | DataType::LargeList(re)) => {
            DataType::List(Arc::new(retype(fe, re)?))
        }
        (DataType::LargeList(fe), DataType::List(re) | DataType::LargeList(re)) => {
            DataType::LargeList(Arc::new(retype(fe, re)?))
        }
        (DataType::Map(fe, sorted), DataType::Map(re, _)) => {
            DataType::Map(Arc::new(retype(fe, re)?), *sorted)
        }
        _ => return None,
    };
    Some(file.clone().with_data_type(to))
}

/// Row groups (of the projected columns) up to this size are read from object stores by
/// iceberg's reader, whole; larger ones page by page.
const REMOTE_PAGED_FROM: u64 = 64 * 1024 * 1024;

/// `err` with the read failure behind it as its cause (see [`Ranged::failure`]).
fn caused(err: MigrationError, cause: Option<iceberg::Error>) -> MigrationError {
    match (err, cause) {
        (MigrationError::Iceberg(e), Some(cause)) if std::error::Error::source(&*e).is_none() => {
            MigrationError::from((*e).with_source(cause))
        }
        (err, _) => err,
    }
}

fn parquet_error(path: &str, e: impl std::fmt::Display) -> MigrationError {
    let e = e.to_string();
    // arrow-rs decodes a string or binary column into 32-bit offsets: more than 2 GiB of one
    // column in the rows read at once overflows them. Fewer rows at once is the way out.
    let hint = if e.contains("index overflow decoding byte array") {
        let most = super::MAX_READ_ROWS;
        format!(
            "; a string or binary column holds more than 2 GiB in the rows read at once (at \
             most {most}, fewer when --batch-rows is smaller): pass a --batch-rows \
             (batch_rows) below {most} that keeps a batch of that column under 2 GiB, e.g. \
             --batch-rows 1000"
        )
    } else {
        String::new()
    };
    MigrationError::from(iceberg::Error::new(
        iceberg::ErrorKind::DataInvalid,
        format!("reading the Parquet file {path}: {e}{hint}"),
    ))
}

fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// Every field, nested ones included, carries a field id.
fn has_ids(f: &Field) -> bool {
    if field_id(f).is_none() {
        return false;
    }
    match f.data_type() {
        DataType::Struct(children) => children.iter().all(|c| has_ids(c)),
        DataType::List(c) | DataType::LargeList(c) | DataType::FixedSizeList(c, _) => has_ids(c),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => kv.iter().all(|c| has_ids(c)),
            _ => false,
        },
        _ => true,
    }
}

/// One file of a `FileIO`, read by byte range from a blocking thread.
struct Ranged {
    source: Source,
    len: u64,
    path: String,
    /// The last read that failed, kept whole: the Parquet reader passes it on as text only,
    /// and whether it may succeed later (a 503, a timeout) is in the error, not the text.
    failure: std::sync::Mutex<Option<iceberg::Error>>,
}

enum Source {
    /// A local file, read with positioned reads: a page costs one system call, with no trip
    /// through the runtime (opendal's local reads hop to another blocking thread each).
    #[cfg(unix)]
    Local(std::fs::File),
    /// Any `FileIO`, read by range from the blocking thread.
    Remote {
        handle: tokio::runtime::Handle,
        reader: Arc<dyn FileRead>,
    },
}

/// The local file at `path` (`/...`, `file:/...` or `file:///...`, taken literally as the
/// `FileIO` takes them), opened and checked against the size its manifest records; `None` for
/// other paths.
#[cfg(unix)]
fn local_source(path: &str, size: u64) -> Result<Option<Source>> {
    let local = path
        .strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path);
    if !local.starts_with('/') {
        return Ok(None);
    }
    let failed = |why: String| {
        MigrationError::from(iceberg::Error::new(
            iceberg::ErrorKind::DataInvalid,
            format!("reading the data file {path}: {why}"),
        ))
    };
    let file = std::fs::File::open(local).map_err(|e| failed(e.to_string()))?;
    let actual = file.metadata().map_err(|e| failed(e.to_string()))?.len();
    if actual != size {
        return Err(failed(format!(
            "it has {actual} bytes where the table's manifest records {size}; the file was \
             replaced or truncated after it was committed"
        )));
    }
    Ok(Some(Source::Local(file)))
}

#[cfg(not(unix))]
fn local_source(_path: &str, _size: u64) -> Result<Option<Source>> {
    Ok(None)
}

impl Ranged {
    fn fetch(&self, start: u64, length: u64) -> parquet::errors::Result<Bytes> {
        let end = start.saturating_add(length);
        if end > self.len {
            return Err(ParquetError::EOF(format!(
                "{}: reading bytes {start}..{end} of a {}-byte file",
                self.path, self.len
            )));
        }
        match &self.source {
            #[cfg(unix)]
            Source::Local(file) => {
                use std::os::unix::fs::FileExt;
                let mut buffer = vec![0u8; (end - start) as usize];
                file.read_exact_at(&mut buffer, start)
                    .map_err(|e| ParquetError::External(Box::new(e)))?;
                Ok(Bytes::from(buffer))
            }
            Source::Remote { handle, reader } => {
                handle.block_on(reader.read(start..end)).map_err(|e| {
                    let text = ParquetError::General(e.to_string());
                    *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    text
                })
            }
        }
    }

    /// The read failure behind the reader's last error, if a read failed.
    fn take_failure(&self) -> Option<iceberg::Error> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

#[derive(Clone)]
struct RangedFile(Arc<Ranged>);

impl Length for RangedFile {
    fn len(&self) -> u64 {
        self.0.len
    }
}

impl ChunkReader for RangedFile {
    type T = RangedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<RangedRead> {
        Ok(RangedRead {
            file: self.0.clone(),
            next: start,
            buffer: Bytes::new(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.0.fetch(start, length as u64)
    }
}

/// A reader from an offset on, fetching a little at a time (it reads page headers; page data
/// goes through `get_bytes`).
struct RangedRead {
    file: Arc<Ranged>,
    next: u64,
    buffer: Bytes,
}

impl Read for RangedRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buffer.is_empty() {
            let left = self.file.len.saturating_sub(self.next);
            if left == 0 || out.is_empty() {
                return Ok(0);
            }
            let n = left.min(HEADER_READ_AHEAD);
            self.buffer = self
                .file
                .fetch(self.next, n)
                .map_err(std::io::Error::other)?;
            self.next += n;
        }
        let n = out.len().min(self.buffer.len());
        out[..n].copy_from_slice(&self.buffer[..n]);
        self.buffer = self.buffer.slice(n..);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ops::Range;
    use std::sync::Mutex;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::Schema;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use super::*;

    /// An offset overflow (more than 2 GiB of one string column in the rows read at once)
    /// says how to read fewer rows at once; other read errors carry no such advice.
    #[test]
    fn an_offset_overflow_advises_a_smaller_batch() {
        let overflow = parquet_error(
            "s3://b/f.parquet",
            "Parquet error: index overflow decoding byte array",
        )
        .to_string();
        assert!(
            overflow.contains("s3://b/f.parquet") && overflow.contains("--batch-rows 1000"),
            "{overflow}"
        );
        let other = parquet_error("s3://b/f.parquet", "Parquet error: EOF").to_string();
        assert!(!other.contains("--batch-rows"), "{other}");
    }

    type TestResult = std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

    /// Records the size of every range read.
    struct Recording {
        inner: Box<dyn FileRead>,
        sizes: Mutex<Vec<u64>>,
    }

    #[async_trait::async_trait]
    impl FileRead for Recording {
        async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
            if let Ok(mut sizes) = self.sizes.lock() {
                sizes.push(range.end - range.start);
            }
            self.inner.read(range).await
        }
    }

    fn field(name: &str, t: DataType, id: Option<i32>) -> Field {
        let f = Field::new(name, t, true);
        match id {
            Some(id) => f.with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())])),
            None => f,
        }
    }

    /// One row group of `rows` rows in pages of about 5,000 rows: (id long #1, name string #2).
    fn write(
        path: &std::path::Path,
        rows: i64,
        ids: bool,
    ) -> std::result::Result<u64, Box<dyn std::error::Error + Send + Sync>> {
        let schema = Arc::new(Schema::new(vec![
            field("id", DataType::Int64, ids.then_some(1)),
            field("name", DataType::Utf8, ids.then_some(2)),
        ]));
        let props = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(5_000)
            .set_max_row_group_row_count(Some(rows as usize))
            .build();
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(path)?, schema.clone(), Some(props))?;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("row {i}")),
        ));
        writer.write(&RecordBatch::try_new(schema, vec![ids, names])?)?;
        let meta = writer.close()?;
        assert_eq!(meta.row_groups().len(), 1);
        Ok(meta.row_groups()[0].columns()[0].compressed_size() as u64)
    }

    async fn ranged(
        path: &std::path::Path,
    ) -> std::result::Result<(RangedFile, Arc<Recording>), Box<dyn std::error::Error + Send + Sync>>
    {
        let io = iceberg::io::FileIO::new_with_fs();
        let path = path.display().to_string();
        let input = io.new_input(&path)?;
        let len = input.metadata().await?.size;
        let recording = Arc::new(Recording {
            inner: input.reader().await?,
            sizes: Mutex::new(Vec::new()),
        });
        let file = RangedFile(Arc::new(Ranged {
            source: Source::Remote {
                handle: tokio::runtime::Handle::current(),
                reader: recording.clone(),
            },
            len,
            path,
            failure: Mutex::new(None),
        }));
        Ok((file, recording))
    }

    /// Fails every read after the first `ok` with a retryable error (a throttled store).
    struct Failing {
        inner: Box<dyn FileRead>,
        ok: Mutex<usize>,
    }

    #[async_trait::async_trait]
    impl FileRead for Failing {
        async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
            let left = self.ok.lock().map(|mut n| {
                let left = *n;
                *n = n.saturating_sub(1);
                left
            });
            if left.unwrap_or(0) == 0 {
                return Err(
                    iceberg::Error::new(iceberg::ErrorKind::Unexpected, "503 SlowDown")
                        .with_retryable(true),
                );
            }
            self.inner.read(range).await
        }
    }

    /// A read failing mid-file reaches the caller as the cause of the error, not only as the
    /// Parquet reader's text: whether another attempt may succeed (a 503, a timeout) is told
    /// from it (ops-ballista's `transient`).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_failed_read_is_the_cause_of_the_error() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("big.parquet");
        write(&path, 200_000, true)?;
        let io = iceberg::io::FileIO::new_with_fs();
        let name = path.display().to_string();
        let input = io.new_input(&name)?;
        let len = input.metadata().await?.size;
        let ranged = Arc::new(Ranged {
            source: Source::Remote {
                handle: tokio::runtime::Handle::current(),
                reader: Arc::new(Failing {
                    inner: input.reader().await?,
                    ok: Mutex::new(6),
                }),
            },
            len,
            path: name.clone(),
            failure: Mutex::new(None),
        });
        let file = RangedFile(ranged.clone());
        let err = tokio::task::spawn_blocking(move || -> Option<MigrationError> {
            let reader = match prepare(file, &[1, 2], &HashSet::new(), None, None, 8_192) {
                Ok(Some(r)) => r,
                Ok(None) => return None,
                Err(e) => return Some(caused(e, ranged.take_failure())),
            };
            for batch in reader {
                if let Err(e) = batch {
                    return Some(caused(parquet_error(&name, e), ranged.take_failure()));
                }
            }
            None
        })
        .await?
        .ok_or("the read did not fail")?;
        assert!(err.to_string().contains("503 SlowDown"), "{err}");
        let cause = std::error::Error::source(&err)
            .and_then(|c| c.downcast_ref::<iceberg::Error>())
            .ok_or_else(|| format!("no iceberg error behind {err:?}"))?;
        assert!(cause.retryable(), "{cause:?}");
        Ok(())
    }

    /// A file whose stored Arrow schema says `large_string` (PyIceberg's) is decoded as the read
    /// schema's `string`, top-level and nested, by field id: the same values, no cast after.
    #[tokio::test(flavor = "multi_thread")]
    async fn strings_are_decoded_as_the_read_schema_wants() -> TestResult {
        use arrow_array::{LargeStringArray, ListArray, StructArray};
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("large.parquet");
        let child = |t: DataType| Arc::new(field("city", t, Some(4)));
        let item = |t: DataType| Arc::new(field("element", t, Some(6)));
        // The same columns with strings of type `t`.
        let schema = |t: DataType| {
            Arc::new(Schema::new(vec![
                field("id", DataType::Int64, Some(1)),
                field("name", t.clone(), Some(2)),
                field(
                    "address",
                    DataType::Struct(vec![child(t.clone())].into()),
                    Some(3),
                ),
                field("tags", DataType::List(item(t)), Some(5)),
            ]))
        };
        let file_schema = schema(DataType::LargeUtf8);
        let names = ["a", "bb", "ccc"];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(LargeStringArray::from(names.to_vec())),
            Arc::new(StructArray::new(
                vec![child(DataType::LargeUtf8)].into(),
                vec![Arc::new(LargeStringArray::from(vec!["x", "y", "z"])) as ArrayRef],
                None,
            )),
            Arc::new(ListArray::new(
                item(DataType::LargeUtf8),
                arrow_buffer::OffsetBuffer::from_lengths([1, 0, 2]),
                Arc::new(LargeStringArray::from(vec!["t1", "t2", "t3"])),
                None,
            )),
        ];
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&path)?, file_schema.clone(), None)?;
        writer.write(&RecordBatch::try_new(file_schema, columns)?)?;
        writer.close()?;
        // The read schema as iceberg gives it: `string`s, and `long` where the file has `long`.
        let read: SchemaRef = schema(DataType::Utf8);
        let (file, _) = ranged(&path).await?;
        let batches = tokio::task::spawn_blocking(move || -> Result<Vec<RecordBatch>> {
            let reader = prepare(
                file,
                &[1, 2, 3, 5],
                &HashSet::new(),
                Some(&read),
                None,
                1_000,
            )?
            .ok_or_else(|| MigrationError::InvalidInput("not paged".into()))?;
            reader
                .map(|b| b.map_err(|e| MigrationError::InvalidInput(e.to_string())))
                .collect()
        })
        .await??;
        let batch = batches.first().ok_or("no batch")?;
        assert_eq!(batch.column(1).data_type(), &DataType::Utf8);
        let got: Vec<&str> = batch
            .column(1)
            .as_string::<i32>()
            .iter()
            .flatten()
            .collect();
        assert_eq!(got, names);
        let address = batch.column(2).as_struct();
        assert_eq!(address.column(0).data_type(), &DataType::Utf8);
        assert_eq!(address.column(0).as_string::<i32>().value(2), "z");
        let tags = batch.column(3).as_list::<i32>();
        assert_eq!(tags.values().data_type(), &DataType::Utf8);
        assert_eq!(tags.value(2).as_string::<i32>().value(1), "t3");
        // A column of another kind keeps the file's type: the projection judges it.
        let long = field("n", DataType::Int64, Some(9));
        assert!(retype(&long, &field("n", DataType::Int32, Some(9))).is_none());
        Ok(())
    }

    /// A row group is read a page at a time: no read is anywhere near a column chunk's size,
    /// and every row comes back once, in order.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_row_group_is_read_a_page_at_a_time() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("big.parquet");
        let rows = 200_000;
        let chunk = write(&path, rows, true)?;
        let (file, recording) = ranged(&path).await?;
        let (count, sum) = tokio::task::spawn_blocking(move || -> Result<(i64, i64)> {
            let reader = prepare(file, &[1, 2], &HashSet::new(), None, None, 8_192)?
                .ok_or_else(|| MigrationError::InvalidInput("not paged".into()))?;
            let (mut count, mut sum) = (0i64, 0i64);
            for batch in reader {
                let batch = batch.map_err(|e| MigrationError::InvalidInput(e.to_string()))?;
                assert_eq!(batch.num_columns(), 2);
                let ids = batch.column(0).as_primitive::<Int64Type>();
                for v in ids.values() {
                    assert_eq!(*v, count, "rows out of order");
                    count += 1;
                    sum += v;
                }
            }
            Ok((count, sum))
        })
        .await??;
        assert_eq!(count, rows);
        assert_eq!(sum, rows * (rows - 1) / 2);
        let largest = recording
            .sizes
            .lock()
            .map(|s| s.iter().copied().max().unwrap_or(0))
            .unwrap_or(0);
        assert!(
            largest * 8 < chunk,
            "largest read {largest} bytes against a {chunk}-byte column chunk"
        );
        Ok(())
    }

    /// Only the wanted columns are read; files the paged path does not cover are left to
    /// iceberg's reader.
    #[tokio::test(flavor = "multi_thread")]
    async fn projects_by_field_id_and_leaves_other_files_to_iceberg() -> TestResult {
        let dir = tempfile::tempdir()?;
        let with_ids = dir.path().join("ids.parquet");
        let without = dir.path().join("no-ids.parquet");
        write(&with_ids, 10_000, true)?;
        write(&without, 10_000, false)?;

        let (file, _) = ranged(&with_ids).await?;
        let names = tokio::task::spawn_blocking(move || -> Result<Vec<String>> {
            let mut reader = prepare(file, &[2, 7], &HashSet::new(), None, None, 1_000)?
                .ok_or_else(|| MigrationError::InvalidInput("not paged".into()))?;
            let batch = reader
                .next()
                .ok_or_else(|| MigrationError::InvalidInput("no batch".into()))?
                .map_err(|e| MigrationError::InvalidInput(e.to_string()))?;
            Ok(batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect())
        })
        .await??;
        // Field 7 is missing: the caller's projection fills it with NULLs.
        assert_eq!(names, vec!["name".to_string()]);

        // Missing, but an identity partition's source column: its value is the partition's.
        let (file, _) = ranged(&with_ids).await?;
        let constant = tokio::task::spawn_blocking(move || {
            prepare(file, &[1, 7], &HashSet::from([7]), None, None, 1_000).map(|r| r.is_none())
        })
        .await??;
        assert!(constant);

        // On an object store, row groups that fit the limit are left to iceberg's reader.
        let (file, _) = ranged(&with_ids).await?;
        let small = tokio::task::spawn_blocking(move || {
            prepare(file, &[1, 2], &HashSet::new(), None, Some(u64::MAX), 1_000)
                .map(|r| r.is_none())
        })
        .await??;
        assert!(small);
        let (file, _) = ranged(&with_ids).await?;
        let large = tokio::task::spawn_blocking(move || {
            prepare(file, &[1, 2], &HashSet::new(), None, Some(0), 1_000).map(|r| r.is_some())
        })
        .await??;
        assert!(large);

        // No field ids: name mapping or position fallback, which iceberg's reader does.
        let (file, _) = ranged(&without).await?;
        let no_ids = tokio::task::spawn_blocking(move || {
            prepare(file, &[1], &HashSet::new(), None, None, 1_000).map(|r| r.is_none())
        })
        .await??;
        assert!(no_ids);
        Ok(())
    }

    /// `open` on a current-thread runtime (as `#[tokio::test]` and single-threaded services
    /// run it): the blocking reader's ranged reads must not wait on the runtime's own thread.
    #[tokio::test(flavor = "current_thread")]
    async fn open_streams_a_file_on_a_current_thread_runtime() -> TestResult {
        use iceberg::spec::{NestedField, PrimitiveType, Type};
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f.parquet");
        write(&path, 30_000, true)?;
        let size = std::fs::metadata(&path)?.len();
        let schema = Arc::new(
            iceberg::spec::Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
                ])
                .build()?,
        );
        let read_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema)?);
        let task = FileScanTask::builder()
            .with_file_size_in_bytes(size)
            .with_start(0)
            .with_length(size)
            .with_data_file_path(format!("file://{}", path.display()))
            .with_data_file_format(DataFileFormat::Parquet)
            .with_schema(schema)
            .with_project_field_ids(vec![1, 2])
            .with_case_sensitive(true)
            .build();
        let io = iceberg::io::FileIO::new_with_fs();
        let mut stream = open(&io, &task, &read_schema, 4_096)
            .await?
            .ok_or("not paged")?;
        let mut rows = 0;
        while let Some(batch) = stream.next().await {
            rows += batch?.num_rows();
        }
        assert_eq!(rows, 30_000);
        Ok(())
    }

    /// The `FileIO` branch on a current-thread runtime: ranged reads are awaited from the
    /// blocking thread while the runtime's one thread waits on the batches.
    #[tokio::test(flavor = "current_thread")]
    async fn open_streams_through_file_io_on_a_current_thread_runtime() -> TestResult {
        use iceberg::spec::{NestedField, PrimitiveType, Type};
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f.parquet");
        write(&path, 20_000, true)?;
        let bytes = std::fs::read(&path)?;
        let io = iceberg::io::FileIO::new_with_memory();
        let location = "memory://bucket/t/data/f.parquet";
        io.new_output(location)?
            .write(Bytes::from(bytes.clone()))
            .await?;
        let schema = Arc::new(
            iceberg::spec::Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                ])
                .build()?,
        );
        let read_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema)?);
        let task = FileScanTask::builder()
            .with_file_size_in_bytes(bytes.len() as u64)
            .with_start(0)
            .with_length(bytes.len() as u64)
            .with_data_file_path(location.to_string())
            .with_data_file_format(DataFileFormat::Parquet)
            .with_schema(schema)
            .with_project_field_ids(vec![1])
            .with_case_sensitive(true)
            .build();
        // A small row group on an object store is left to iceberg's reader...
        assert!(open(&io, &task, &read_schema, 4_096).await?.is_none());
        // ...a large one is read page by page (the limit lowered through `prepare` directly).
        let file = RangedFile(Arc::new(Ranged {
            source: Source::Remote {
                handle: tokio::runtime::Handle::current(),
                reader: Arc::from(io.new_input(location)?.reader().await?),
            },
            len: bytes.len() as u64,
            path: location.to_string(),
            failure: Mutex::new(None),
        }));
        let rows = tokio::task::spawn_blocking(move || -> Result<usize> {
            let reader = prepare(file, &[1], &HashSet::new(), None, Some(0), 4_096)?
                .ok_or_else(|| MigrationError::InvalidInput("not paged".into()))?;
            let mut rows = 0;
            for batch in reader {
                rows += batch
                    .map_err(|e| MigrationError::InvalidInput(e.to_string()))?
                    .num_rows();
            }
            Ok(rows)
        })
        .await??;
        assert_eq!(rows, 20_000);
        Ok(())
    }

    /// Local paths in every spelling are opened directly; a missing file, or one whose size is
    /// not the manifest's, is an error naming it.
    #[cfg(unix)]
    #[test]
    fn local_paths_are_opened_and_checked() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f.parquet");
        write(&path, 1_000, true)?;
        let len = std::fs::metadata(&path)?.len();
        let plain = path.display().to_string();
        for spelling in [
            plain.clone(),
            format!("file:{plain}"),
            format!("file://{plain}"),
        ] {
            assert!(matches!(
                local_source(&spelling, len)?,
                Some(Source::Local(_))
            ));
        }
        assert!(local_source("s3://bucket/f.parquet", len)?.is_none());
        assert!(local_source("memory://bucket/f.parquet", len)?.is_none());
        let missing = local_source(&format!("{plain}.gone"), len)
            .err()
            .ok_or("no error")?;
        assert!(missing.to_string().contains(".gone"), "{missing}");
        let resized = local_source(&plain, len + 1).err().ok_or("no error")?;
        assert!(
            resized.to_string().contains("manifest records"),
            "{resized}"
        );
        Ok(())
    }
}
