//! A Glue Hive table of Parquet files in moto, as Spark and Hive leave them, for the import
//! tests (ops-import's Glue source and `migrate`): lower-cased Glue columns over mixed-case
//! files, INT96 timestamps, partitions outside the table location, a NULL partition, a value
//! with a slash; and the rows pyarrow reads from its partitions' files.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::oracle::pyiceberg;
use crate::servers::{AWS_KEY, AWS_REGION, AWS_SECRET, Moto};

type TestResult = anyhow::Result<()>;

fn sort_rows(rows: &mut [Value]) {
    rows.sort_by_key(|r| r.to_string());
}

/// Creates Glue database `hive` (the tables below live in it).
pub fn hive_database(moto: &Moto) {
    moto.glue(
        "CreateDatabase",
        &json!({"DatabaseInput": {"Name": "hive"}}),
    );
}

pub const PARQUET_IN: &str = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
pub const PARQUET_SERDE: &str = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";

/// Python that opens moto's S3 as `fs` (pyarrow).
pub fn s3fs(moto: &Moto) -> String {
    format!(
        "import pyarrow.fs as pafs\n\
         fs = pafs.S3FileSystem(endpoint_override='{}', access_key='{AWS_KEY}', \
                                secret_key='{AWS_SECRET}', region='{AWS_REGION}', scheme='http')\n",
        moto.endpoint()
    )
}

/// Writes one Parquet file of rows `ids` to `s3://lake/{key}` as a Hive job does: columns
/// `id` (long), `Amount` (int, mixed case as Spark keeps it; Glue lower-cases it), `qty`
/// (int16, Hive `smallint`) and `ts` (INT96), no partition column.
pub fn hive_file(p: &BTreeMap<String, String>, moto: &Moto, key: &str, ids: &[i64]) -> TestResult {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    let ids = ids.join(", ");
    pyiceberg(
        "lake",
        p,
        &format!(
            "{}import datetime as dt, pyarrow as pa, pyarrow.parquet as pq\n\
             ids = [{ids}]\n\
             t = pa.table({{'id': pa.array(ids, pa.int64()), \
                            'Amount': pa.array([10 * i for i in ids], pa.int32()), \
                            'qty': pa.array([i % 3 for i in ids], pa.int16()), \
                            'ts': pa.array([dt.datetime(2024, 1, 1, i % 24) for i in ids], \
                                           pa.timestamp('us'))}})\n\
             pq.write_table(t, 'lake/{key}', filesystem=fs, use_deprecated_int96_timestamps=True)\n\
             emit(None)",
            s3fs(moto)
        ),
    )?;
    Ok(())
}

pub fn storage(location: &str, input: &str, serde: &str) -> Value {
    json!({
        "Columns": [
            {"Name": "id", "Type": "bigint"},
            {"Name": "amount", "Type": "int"},
            {"Name": "qty", "Type": "smallint"},
            {"Name": "ts", "Type": "timestamp"}
        ],
        "Location": location,
        "InputFormat": input,
        "SerdeInfo": {"SerializationLibrary": serde}
    })
}

/// Glue table `hive.{name}` at `s3://lake/hive/{name}/`, partitioned by `region` when
/// `partitioned`.
pub fn glue_table(moto: &Moto, name: &str, partitioned: bool) {
    let keys = if partitioned {
        json!([{"Name": "region", "Type": "string"}])
    } else {
        json!([])
    };
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {
            "Name": name, "TableType": "EXTERNAL_TABLE",
            "StorageDescriptor": storage(&format!("s3://lake/hive/{name}/"), PARQUET_IN, PARQUET_SERDE),
            "PartitionKeys": keys,
            "Parameters": {"classification": "parquet"}}}),
    );
}

pub fn glue_partition(moto: &Moto, table: &str, value: &str, location: &str) {
    moto.glue(
        "CreatePartition",
        &json!({"DatabaseName": "hive", "TableName": table, "PartitionInput": {
            "Values": [value],
            "StorageDescriptor": storage(location, PARQUET_IN, PARQUET_SERDE)}}),
    );
}

/// The rows pyarrow reads from `s3://lake/{location}` (each partition's files, with its
/// value), in the table's column names and the oracle's value forms, sorted.
pub fn expected(
    p: &BTreeMap<String, String>,
    moto: &Moto,
    parts: &[(&str, Option<&str>)],
) -> Value {
    let parts: Vec<String> = parts
        .iter()
        .map(|(loc, v)| {
            format!(
                "('{loc}', {})",
                v.map_or("None".into(), |v| format!("'{v}'"))
            )
        })
        .collect();
    let mut rows = pyiceberg(
        "lake",
        p,
        &format!(
            "{}import pyarrow.dataset as ds\n\
             out = []\n\
             for loc, region in [{}]:\n\
             \x20   d = ds.dataset('lake/' + loc, filesystem=fs, format='parquet', \
                                    ignore_prefixes=['_', '.'])\n\
             \x20   for r in d.to_table().to_pylist():\n\
             \x20       row = {{'id': r['id'], 'amount': r['Amount'], 'qty': r['qty'], \
                                'ts': r['ts']}}\n\
             \x20       if region is not False: row['region'] = region\n\
             \x20       out.append(row)\n\
             emit(out)",
            s3fs(moto),
            parts.join(", ")
        ),
    )
    .unwrap_or(Value::Null);
    if let Some(r) = rows.as_array_mut() {
        sort_rows(r);
    }
    rows
}

/// Rows PyIceberg reads from `table`, in the same forms, sorted.
pub fn read(p: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
    let mut rows = pyiceberg(
        "lake",
        p,
        &format!(
            "out = []\n\
             for r in catalog.load_table('{table}').scan().to_arrow().to_pylist():\n\
             \x20   r['ts'] = r['ts'].replace(tzinfo=None)\n\
             \x20   out.append(r)\n\
             emit(out)"
        ),
    )?;
    if let Some(r) = rows.as_array_mut() {
        sort_rows(r);
    }
    Ok(rows)
}

/// `hive.sales`'s partitions: where their files are, and their values.
pub const SALES: [(&str, Option<&str>); 4] = [
    ("hive/sales/region=eu", Some("eu")),
    ("archive/2023/region=xx", Some("us")),
    ("hive/sales/region=a%2Fb", Some("a/b")),
    ("hive/sales/region=__HIVE_DEFAULT_PARTITION__", None),
];

/// `hive.sales` (database [`hive_database`]), partitioned by `region`: seven rows in the
/// partitions of [`SALES`], a `_SUCCESS` marker beside them, and a partition Glue knows that
/// nobody wrote (no files).
pub fn sales_table(p: &BTreeMap<String, String>, moto: &Moto) -> TestResult {
    glue_table(moto, "sales", true);
    hive_file(p, moto, "hive/sales/region=eu/part-0.parquet", &[1, 2])?;
    hive_file(p, moto, "hive/sales/region=eu/part-1.parquet", &[3])?;
    moto.put_object("lake", "hive/sales/region=eu/_SUCCESS", b"");
    // Outside the table's location, under a path that names another region.
    hive_file(p, moto, "archive/2023/region=xx/us.parquet", &[4, 5])?;
    hive_file(p, moto, "hive/sales/region=a%2Fb/part-0.parquet", &[6])?;
    hive_file(
        p,
        moto,
        "hive/sales/region=__HIVE_DEFAULT_PARTITION__/part-0.parquet",
        &[7],
    )?;
    glue_partition(moto, "sales", "eu", "s3://lake/hive/sales/region=eu");
    glue_partition(moto, "sales", "us", "s3://lake/archive/2023/region=xx/");
    glue_partition(moto, "sales", "a/b", "s3://lake/hive/sales/region=a%2Fb/");
    glue_partition(
        moto,
        "sales",
        "__HIVE_DEFAULT_PARTITION__",
        "s3://lake/hive/sales/region=__HIVE_DEFAULT_PARTITION__/",
    );
    // A partition Glue knows but nobody wrote yet: no files, no error.
    glue_partition(moto, "sales", "empty", "s3://lake/hive/sales/region=empty/");
    Ok(())
}
