//! The source of a migration: a Glue Hive table's Parquet objects (table location plus every
//! partition location) and their row counts from Parquet footers.

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;

use crate::aws::{AwsRest, S3Object, split_s3_uri};
use crate::{Error, Result};

/// One source object with the partition values it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceObject {
    /// Bucket.
    pub bucket: String,
    /// The object.
    pub object: S3Object,
    /// Partition column → value (from the Glue partition, in partition-key order).
    pub partition: Vec<(String, String)>,
}

/// The Glue table's objects: under each partition's location (partitioned) or the table's.
pub async fn source_objects(
    aws: &AwsRest,
    table: &Value,
    partitions: &[Value],
) -> Result<Vec<SourceObject>> {
    let keys: Vec<String> = table["PartitionKeys"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k["Name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut locations: Vec<(String, Vec<(String, String)>)> = Vec::new();
    if keys.is_empty() {
        if let Some(loc) = table["StorageDescriptor"]["Location"].as_str() {
            locations.push((loc.to_string(), Vec::new()));
        }
    } else {
        for p in partitions {
            let values: Vec<String> = p["Values"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(loc) = p["StorageDescriptor"]["Location"].as_str() {
                locations.push((loc.to_string(), keys.iter().cloned().zip(values).collect()));
            }
        }
    }
    let mut out = Vec::new();
    for (loc, partition) in locations {
        let (bucket, prefix) = split_s3_uri(&loc)
            .ok_or_else(|| Error::Config(format!("location '{loc}' is not an s3:// URI")))?;
        let prefix = if prefix.is_empty() || prefix.ends_with('/') {
            prefix
        } else {
            format!("{prefix}/")
        };
        for object in aws.list_objects(&bucket, &prefix).await? {
            let name = object.key.rsplit('/').next().unwrap_or_default();
            // Hive and Spark leave markers (`_SUCCESS`, `.crc`) beside the data.
            if name.starts_with('_') || name.starts_with('.') || object.size == 0 {
                continue;
            }
            out.push(SourceObject {
                bucket: bucket.clone(),
                object,
                partition: partition.clone(),
            });
        }
    }
    out.sort_by(|a, b| a.object.key.cmp(&b.object.key));
    Ok(out)
}

/// Reads an object in full.
pub async fn read_object(aws: &AwsRest, o: &SourceObject) -> Result<Bytes> {
    aws.get_object(&o.bucket, &o.object.key)
        .await?
        .ok_or_else(|| Error::Config(format!("s3://{}/{} disappeared", o.bucket, o.object.key)))
}

/// Rows in a Parquet file, from its footer.
pub fn parquet_rows(bytes: Bytes) -> Result<i64> {
    let reader = SerializedFileReader::new(bytes)
        .map_err(|e| Error::Config(format!("not a Parquet file: {e}")))?;
    Ok(reader.metadata().file_metadata().num_rows())
}

/// Source rows of a Glue table: the sum of its objects' Parquet footers.
pub async fn source_row_count(aws: &AwsRest, database: &str, table: &str) -> Result<i64> {
    let t = aws
        .glue_table(database, table)
        .await?
        .ok_or_else(|| Error::Config(format!("Glue table {database}.{table} not found")))?;
    let parts = aws.glue_partitions(database, table).await?;
    let mut rows = 0;
    for o in source_objects(aws, &t, &parts).await? {
        rows += parquet_rows(read_object(aws, &o).await?)?;
    }
    Ok(rows)
}
