//! The source of a migration: a Glue Hive table's Parquet objects (table location plus every
//! partition location, skipping what Hive hides) and their row counts from Parquet footers,
//! read with ranged GETs of the file's tail only.

use bytes::Bytes;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
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
            let relative = object
                .key
                .strip_prefix(prefix.as_str())
                .unwrap_or(&object.key);
            if is_hidden(relative) || object.size == 0 {
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

/// Whether a path below a table or partition location is one Hive skips: any component that
/// starts with `_` or `.` (Hive's hidden-file filter, applied at every directory level), such as
/// `_SUCCESS`, `.part-0.crc`, `_temporary/` or `.hive-staging_hive_.../` of an unfinished
/// insert.
pub fn is_hidden(relative: &str) -> bool {
    relative
        .split('/')
        .filter(|c| !c.is_empty())
        .any(|c| c.starts_with('_') || c.starts_with('.'))
}

/// Reads an object in full.
pub async fn read_object(aws: &AwsRest, o: &SourceObject) -> Result<Bytes> {
    aws.get_object(&o.bucket, &o.object.key)
        .await?
        .ok_or_else(|| Error::Config(format!("s3://{}/{} disappeared", o.bucket, o.object.key)))
}

/// How much of a file's tail the first ranged GET asks for: most footers fit, so one request
/// per file is the rule and a second one the exception.
const TAIL_GUESS: u64 = 64 * 1024;

/// Rows in a Parquet object, from its footer: a ranged GET of the tail (and one more for a
/// footer longer than the guess), never the whole object.
pub async fn footer_rows(aws: &AwsRest, o: &SourceObject) -> Result<i64> {
    let (bucket, key, size) = (&o.bucket, &o.object.key, o.object.size);
    let not_parquet =
        |why: &str| Error::Config(format!("s3://{bucket}/{key} is not Parquet: {why}"));
    if size < 12 {
        return Err(not_parquet("shorter than a Parquet header and footer"));
    }
    let gone = || Error::Config(format!("s3://{bucket}/{key} disappeared"));
    let tail_len = size.min(TAIL_GUESS);
    let tail = aws
        .get_range(bucket, key, size - tail_len, size - 1)
        .await?
        .ok_or_else(gone)?;
    let n = tail.len();
    let last8: [u8; 8] = tail[n - 8..]
        .try_into()
        .map_err(|_| not_parquet("short read"))?;
    let footer = FooterTail::try_from(last8).map_err(|e| not_parquet(&e.to_string()))?;
    let len = footer.metadata_length() as u64;
    if len + 8 > size {
        return Err(not_parquet("footer longer than the file"));
    }
    let metadata = if len + 8 <= n as u64 {
        tail.slice(n - 8 - len as usize..n - 8)
    } else {
        aws.get_range(bucket, key, size - 8 - len, size - 9)
            .await?
            .ok_or_else(gone)?
    };
    let meta = ParquetMetaDataReader::decode_metadata(&metadata)
        .map_err(|e| not_parquet(&e.to_string()))?;
    Ok(meta.file_metadata().num_rows())
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
        rows += footer_rows(aws, &o).await?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use aws_credential_types::Credentials;
    use parquet::arrow::ArrowWriter;
    use serde_json::json;

    use super::*;
    use crate::Signer;
    use crate::http_server::{Request, Response, serve};

    fn parquet(rows: i64) -> anyhow::Result<Vec<u8>> {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let batch = RecordBatch::try_from_iter([("id", ids)])?;
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None)?;
        w.write(&batch)?;
        w.close()?;
        Ok(out)
    }

    /// GETs of objects: key, Range header, bytes sent.
    type Gets = Arc<Mutex<Vec<(String, Option<String>, usize)>>>;

    /// S3 (listing, ranged GETs) and Glue (GetTable, GetPartitions) for table `db.t` over
    /// `s3://lake/t/` partitioned by `region`.
    fn fake(objects: Vec<(String, Vec<u8>)>, gets: Gets) -> impl Fn(Request) -> Response {
        move |req: Request| {
            if let Some(target) = req.header("x-amz-target") {
                return match target {
                    "AWSGlue.GetTable" => Response::json(
                        200,
                        &json!({"Table": {"Name": "t",
                            "PartitionKeys": [{"Name": "region", "Type": "string"}],
                            "StorageDescriptor": {"Location": "s3://lake/t/"}}}),
                    ),
                    _ => Response::json(
                        200,
                        &json!({"Partitions": [{"Values": ["us"],
                            "StorageDescriptor": {"Location": "s3://lake/t/region=us"}}]}),
                    ),
                };
            }
            let key = req.segments[1..].join("/");
            if req.query("list-type") == Some("2") {
                let prefix = req.query("prefix").unwrap_or_default();
                let contents: String = objects
                    .iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(k, b)| {
                        format!(
                            "<Contents><Key>{k}</Key><ETag>\"e\"</ETag><Size>{}</Size></Contents>",
                            b.len()
                        )
                    })
                    .collect();
                let mut r = Response::empty(200);
                r.body = format!(
                    "<ListBucketResult><IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"
                )
                .into_bytes();
                return r;
            }
            let Some((_, body)) = objects.iter().find(|(k, _)| *k == key) else {
                return Response::empty(404);
            };
            let range = req.header("range").map(str::to_string);
            let mut r = Response::empty(200);
            r.body = body.clone();
            if let Some((a, b)) = range
                .as_deref()
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.split_once('-'))
                && let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>())
            {
                r.status = 206;
                r.body = body[a..=b.min(body.len() - 1)].to_vec();
            }
            gets.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((key, range, r.body.len()));
            r
        }
    }

    #[tokio::test]
    async fn parity_reads_footers_by_range_and_skips_what_hive_hides() -> anyhow::Result<()> {
        let data = parquet(200_000)?;
        assert!(data.len() as u64 > 2 * TAIL_GUESS, "{}", data.len());
        let objects = vec![
            ("t/region=us/part-0.parquet".to_string(), data.clone()),
            (
                "t/region=us/.hive-staging_hive_2026-11-04/-ext-10000/part-0.parquet".into(),
                data.clone(),
            ),
            (
                "t/region=us/_temporary/0/part-1.parquet".into(),
                data.clone(),
            ),
            ("t/region=us/_SUCCESS".into(), Vec::new()),
            ("t/region=us/.part-0.parquet.crc".into(), b"crc".to_vec()),
        ];
        let gets: Gets = Arc::default();
        let handler = fake(objects, gets.clone());
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |req| {
            let r = handler(req);
            async move { r }
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3");
        let url = format!("http://{addr}");
        let aws = AwsRest::new(&signer, &url, &url)?;
        assert_eq!(source_row_count(&aws, "db", "t").await?, 200_000);
        let gets = gets.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert!(
            gets.iter()
                .all(|(k, _, _)| k == "t/region=us/part-0.parquet"),
            "only the visible object is read: {gets:?}"
        );
        assert!(gets.iter().all(|(_, r, _)| r.is_some()), "{gets:?}");
        let sent: usize = gets.iter().map(|(_, _, n)| n).sum();
        assert!(sent < data.len() / 2, "{sent} of {} bytes read", data.len());
        Ok(())
    }

    #[test]
    fn hidden_components_at_any_level() {
        assert!(is_hidden("_SUCCESS"));
        assert!(is_hidden(".hive-staging_hive_x/-ext-10000/part-0.parquet"));
        assert!(is_hidden("sub/_temporary/0/part"));
        assert!(!is_hidden("part-0.parquet"));
        assert!(!is_hidden("sub/part-0_x.parquet"));
    }
}
