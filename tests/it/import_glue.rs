//! `import snapshot --source glue:DB.T` and `add-files --from glue:DB.T` (ops-import's Glue
//! source) on moto: a Hive table as Spark and Hive leave them — lower-cased Glue columns over
//! mixed-case files, INT96 timestamps, partitions outside the table location, a NULL
//! partition, a value with a slash — snapshotted into an Iceberg table that PyIceberg reads
//! with the rows pyarrow reads from the partitions' files.

use std::collections::BTreeMap;

use ops_core::Error;
use ops_import::add_files::AddFilesBuilder;
use ops_import::snapshot::SnapshotBuilder;
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::{AWS_KEY, AWS_REGION, AWS_SECRET, Moto};
use serde_json::{Value, json};

use crate::common::*;

const PARQUET_IN: &str = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
const PARQUET_SERDE: &str = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";

/// Python that opens moto's S3 as `fs` (pyarrow).
fn s3fs(moto: &Moto) -> String {
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
fn hive_file(p: &BTreeMap<String, String>, moto: &Moto, key: &str, ids: &[i64]) -> TestResult {
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

fn storage(location: &str, input: &str, serde: &str) -> Value {
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
fn glue_table(moto: &Moto, name: &str, partitioned: bool) {
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

fn glue_partition(moto: &Moto, table: &str, value: &str, location: &str) {
    moto.glue(
        "CreatePartition",
        &json!({"DatabaseName": "hive", "TableName": table, "PartitionInput": {
            "Values": [value],
            "StorageDescriptor": storage(location, PARQUET_IN, PARQUET_SERDE)}}),
    );
}

/// The rows pyarrow reads from `s3://lake/{location}` (each partition's files, with its
/// value), in the table's column names and the oracle's value forms, sorted.
fn expected(p: &BTreeMap<String, String>, moto: &Moto, parts: &[(&str, Option<&str>)]) -> Value {
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

/// moto (S3 bucket `lake`, Glue database `hive`) and the props of a Glue catalog on it.
fn hive_on_moto() -> (Moto, BTreeMap<String, String>) {
    init_tracing();
    let (moto, p) = glue_on_moto();
    moto.glue(
        "CreateDatabase",
        &json!({"DatabaseInput": {"Name": "hive"}}),
    );
    (moto, p)
}

/// Rows PyIceberg reads from `table`, in the same forms, sorted.
fn read(p: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
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
const SALES: [(&str, Option<&str>); 4] = [
    ("hive/sales/region=eu", Some("eu")),
    ("archive/2023/region=xx", Some("us")),
    ("hive/sales/region=a%2Fb", Some("a/b")),
    ("hive/sales/region=__HIVE_DEFAULT_PARTITION__", None),
];

/// A partitioned Glue Hive table — one partition outside the table's location, a NULL
/// partition, a value with a slash, a `_SUCCESS` marker — snapshotted into an Iceberg table in
/// the same Glue catalog: its schema is Glue's (Hive types as Spark reads them; the files'
/// mixed-case column found through the name mapping), its partitions Glue's values, whatever
/// the paths say; `gc.enabled=false`. Then a new partition and a new file in an old one are
/// added with `--new-only`, and nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn a_glue_hive_table_is_snapshotted_in_place_and_grows() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    glue_table(&moto, "sales", true);
    hive_file(p, &moto, "hive/sales/region=eu/part-0.parquet", &[1, 2])?;
    hive_file(p, &moto, "hive/sales/region=eu/part-1.parquet", &[3])?;
    moto.put_object("lake", "hive/sales/region=eu/_SUCCESS", b"");
    // Outside the table's location, under a path that names another region.
    hive_file(p, &moto, "archive/2023/region=xx/us.parquet", &[4, 5])?;
    hive_file(p, &moto, "hive/sales/region=a%2Fb/part-0.parquet", &[6])?;
    hive_file(
        p,
        &moto,
        "hive/sales/region=__HIVE_DEFAULT_PARTITION__/part-0.parquet",
        &[7],
    )?;
    glue_partition(&moto, "sales", "eu", "s3://lake/hive/sales/region=eu");
    glue_partition(&moto, "sales", "us", "s3://lake/archive/2023/region=xx/");
    glue_partition(&moto, "sales", "a/b", "s3://lake/hive/sales/region=a%2Fb/");
    glue_partition(
        &moto,
        "sales",
        "__HIVE_DEFAULT_PARTITION__",
        "s3://lake/hive/sales/region=__HIVE_DEFAULT_PARTITION__/",
    );
    // A partition Glue knows but nobody wrote yet: no files, no error.
    glue_partition(
        &moto,
        "sales",
        "empty",
        "s3://lake/hive/sales/region=empty/",
    );
    let want = expected(p, &moto, &SALES);
    assert_eq!(want.as_array().map(Vec::len), Some(7), "{want}");

    let handle = open("lake", p).await?;
    let ident = iceberg::TableIdent::from_strs(["imp", "sales"])?;
    let (none, dry) = SnapshotBuilder::new(&handle, ident.clone())
        .from(["glue:hive.sales"])
        .dry_run(true)
        .await?;
    assert!(none.is_none() && dry.files == 5, "{dry:?}");
    assert_eq!(
        dry.columns,
        [
            "id: long",
            "amount: int",
            "qty: int",
            "ts: timestamptz",
            "region: string"
        ],
        "{dry:?}"
    );
    assert!(!handle.catalog().table_exists(&ident).await?);

    let (table, m) = SnapshotBuilder::new(&handle, ident.clone())
        .from(["glue:hive.sales"])
        .await?;
    let table = table.ok_or_else(|| anyhow::anyhow!("a table"))?;
    assert_eq!(m.partition_columns, ["region"]);
    assert_eq!(m.add.files.len(), 5, "{m:?}");
    assert_eq!(m.add.hidden, 1, "_SUCCESS: {m:?}");
    assert_eq!(table_property(&table, "gc.enabled"), Some("false"));
    let us: Vec<&str> = m
        .add
        .files
        .iter()
        .filter(|f| f.path.contains("archive"))
        .map(|f| f.partition.as_str())
        .collect();
    assert_eq!(us, ["region=us"], "{m:?}");
    assert_eq!(read(p, "imp.sales")?, want);

    // The Hive job writes on: a new file in eu and a new partition (outside again).
    hive_file(p, &moto, "hive/sales/region=eu/part-2.parquet", &[8])?;
    hive_file(p, &moto, "elsewhere/ap/data.parquet", &[9, 10])?;
    glue_partition(&moto, "sales", "ap", "s3://lake/elsewhere/ap");
    let (_, grown) = AddFilesBuilder::new(&handle, ident.clone())
        .from(["glue:hive.sales"])
        .new_only(true)
        .await?;
    assert_eq!(grown.files.len(), 2, "{grown:?}");
    assert_eq!(grown.already_added, 5, "{grown:?}");
    let grown_parts: Vec<(&str, Option<&str>)> = SALES
        .iter()
        .copied()
        .chain([("elsewhere/ap", Some("ap"))])
        .collect();
    let want = expected(p, &moto, &grown_parts);
    assert_eq!(want.as_array().map(Vec::len), Some(10), "{want}");
    assert_eq!(read(p, "imp.sales")?, want);
    Ok(())
}

/// An unpartitioned Glue table snapshots into an unpartitioned table; bucketed, text and view
/// tables, and an unknown table, are refused naming why, creating nothing.
#[tokio::test(flavor = "multi_thread")]
async fn glue_tables_that_cannot_be_taken_in_place_are_refused() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    glue_table(&moto, "flat", false);
    hive_file(p, &moto, "hive/flat/a.parquet", &[1, 2])?;
    hive_file(p, &moto, "hive/flat/sub/b.parquet", &[3])?;
    let handle = open("lake", p).await?;
    let ident = iceberg::TableIdent::from_strs(["imp", "flat"])?;
    let (_, m) = SnapshotBuilder::new(&handle, ident)
        .from(["glue:hive.flat"])
        .await?;
    assert!(
        m.partition_columns.is_empty() && m.add.files.len() == 2,
        "{m:?}"
    );
    let want = expected(p, &moto, &[("hive/flat", None)]);
    let mut want = want.as_array().cloned().unwrap_or_default();
    for r in &mut want {
        if let Some(o) = r.as_object_mut() {
            o.remove("region");
        }
    }
    assert_eq!(read(p, "imp.flat")?, Value::Array(want));

    let mut bucketed = storage("s3://lake/hive/b/", PARQUET_IN, PARQUET_SERDE);
    bucketed["NumberOfBuckets"] = json!(4);
    bucketed["BucketColumns"] = json!(["id"]);
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "bucketed",
            "TableType": "EXTERNAL_TABLE", "StorageDescriptor": bucketed}}),
    );
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "text",
            "TableType": "EXTERNAL_TABLE", "StorageDescriptor": storage("s3://lake/hive/t/",
                "org.apache.hadoop.mapred.TextInputFormat",
                "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe")}}),
    );
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "v",
            "TableType": "VIRTUAL_VIEW", "ViewOriginalText": "select 1",
            "StorageDescriptor": storage("", PARQUET_IN, PARQUET_SERDE)}}),
    );
    for (source, why) in [
        ("glue:hive.bucketed", "bucketed (4 buckets by id)"),
        ("glue:hive.text", "not stored as Parquet"),
        ("glue:hive.v", "is a view"),
        ("glue:hive.nope", "no such table"),
        ("glue:hive", "is not glue:DATABASE.TABLE"),
    ] {
        let ident = iceberg::TableIdent::from_strs(["imp", "refused"])?;
        let err = SnapshotBuilder::new(&handle, ident.clone())
            .from([source])
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("{source} was taken"))?;
        assert!(
            matches!(err, Error::InvalidInput(_)) && err.to_string().contains(why),
            "{source}: {err}"
        );
        assert!(!handle.catalog().table_exists(&ident).await?, "{source}");
    }
    Ok(())
}
