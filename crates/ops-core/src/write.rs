//! Arrow batches → Parquet data files laid out by the table's partition spec.
//!
//! 1. Re-stamp each batch with the Arrow schema derived from the table's current Iceberg schema,
//!    so the Parquet files carry field ids (readers match columns by id, not name).
//! 2. Split rows by the default partition spec (any transform).
//! 3. Write through a fan-out of rolling Parquet writers honouring
//!    `write.target-file-size-bytes` and `write.parquet.compression-codec`.
//!
//! The files are not committed: hand them to an operation (append, overwrite, ...).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use futures::{Stream, StreamExt};
use iceberg::arrow::{RecordBatchPartitionSplitter, schema_to_arrow_schema};
use iceberg::spec::{DataFile, DataFileFormat};
use iceberg::table::Table;
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::partitioning::PartitioningWriter;
use iceberg::writer::partitioning::fanout_writer::FanoutWriter;
use iceberg::writer::partitioning::unpartitioned_writer::UnpartitionedWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::{Error, Result};

const COMPRESSION_CODEC: &str = "write.parquet.compression-codec";

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

/// Writes `batches` as data files of `table` (not committed), under its default partition spec.
///
/// Each batch must have the table's columns, by name and in order, with the table's types; a
/// mismatch is an [`Error::InvalidInput`] naming the column.
pub async fn write_data_files<S>(table: &Table, batches: S) -> Result<Vec<DataFile>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let metadata = table.metadata();
    let schema = metadata.current_schema().clone();
    let arrow_schema = table_arrow_schema(table)?;
    let properties = metadata.table_properties()?;
    let location = DefaultLocationGenerator::new(metadata)?;
    let names = DefaultFileNameGenerator::new(
        uuid::Uuid::now_v7().to_string(),
        None,
        DataFileFormat::Parquet,
    );
    let parquet =
        ParquetWriterBuilder::new(writer_properties(metadata.properties())?, schema.clone());
    let rolling = RollingFileWriterBuilder::new(
        parquet,
        properties.write_target_file_size_bytes,
        table.file_io().clone(),
        location,
        names,
    );
    let writer = DataFileWriterBuilder::new(rolling);
    let spec = metadata.default_partition_spec().clone();
    let mut batches = batches;
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
    let mut fanout = FanoutWriter::new(writer);
    let splitter = RecordBatchPartitionSplitter::try_new_with_computed_values(schema, spec)?;
    while let Some(batch) = batches.next().await {
        let batch = conform(&batch?, &arrow_schema)?;
        if batch.num_rows() == 0 {
            continue;
        }
        for (key, part) in splitter.split(&batch)? {
            fanout.write(key, part).await?;
        }
    }
    Ok(fanout.close().await?)
}

/// Gives `batch` the table's Arrow schema (field ids), checking names and types column by column.
pub fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let got = batch.schema();
    if got.fields().len() != target.fields().len() {
        let names = |s: &arrow_schema::Schema| {
            s.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::InvalidInput(format!(
            "batch has columns [{}] but the table has [{}]",
            names(&got),
            names(target)
        )));
    }
    for (g, t) in got.fields().iter().zip(target.fields()) {
        if g.name() != t.name() || !same_type(g.data_type(), t.data_type()) {
            return Err(Error::InvalidInput(format!(
                "batch column '{}' ({}) does not match table column '{}' ({})",
                g.name(),
                g.data_type(),
                t.name(),
                t.data_type()
            )));
        }
        if !g.is_nullable() || t.is_nullable() {
            continue;
        }
        let column = batch.column_by_name(g.name());
        if column.is_some_and(|c| c.null_count() > 0) {
            return Err(Error::InvalidInput(format!(
                "column '{}' is required but the batch has nulls in it",
                t.name()
            )));
        }
    }
    Ok(RecordBatch::try_new(
        target.clone(),
        batch.columns().to_vec(),
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
) -> Result<WriterProperties> {
    // PyIceberg and Java default to zstd; parquet-rs would write uncompressed.
    let codec = table_properties
        .get(COMPRESSION_CODEC)
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_else(|| "zstd".to_string());
    let compression = match codec.as_str() {
        "zstd" => Compression::ZSTD(ZstdLevel::default()),
        "snappy" => Compression::SNAPPY,
        "uncompressed" | "none" => Compression::UNCOMPRESSED,
        other => {
            return Err(Error::InvalidInput(format!(
                "table property {COMPRESSION_CODEC}='{other}' is not supported by iceberg-ops; \
                 use zstd, snappy or uncompressed"
            )));
        }
    };
    Ok(WriterProperties::builder()
        .set_compression(compression)
        .build())
}
