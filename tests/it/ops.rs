//! ops-core table operations on real catalogs, checked by PyIceberg.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::IntoFuture;

use iceberg::TableIdent;
use iceberg::spec::{PrimitiveType, Transform, Type};
use iceberg::table::Table;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_schema::{EvolveSchemaBuilder, Position};
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::overwrite::OverwriteBuilder;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::ops::replace_partitions::ReplacePartitionsBuilder;
use ops_core::ops::rollback::RollbackBuilder;
use ops_core::ops::sort_order::SortOrderBuilder;
use ops_core::{CatalogHandle, Error};
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::Rustberg;
use serde_json::{Value, json};

use crate::common::*;

type Row = (i64, Option<&'static str>, Option<i32>);

/// Data files for `rows`, written under the table's current schema and spec.
async fn files(table: &Table, rows: &[Row]) -> anyhow::Result<Vec<iceberg::spec::DataFile>> {
    let batch = orders_batch(table, rows)?;
    Ok(ops_core::write::write_data_files(table, futures::stream::iter([Ok(batch)])).await?)
}

/// Paths of the live data files of `table` whose rows have `region`.
async fn files_of_region(table: &Table, region: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let snapshot = table.metadata().current_snapshot().expect("a snapshot");
    let list = table.manifest_list_reader(snapshot).load().await?;
    for mf in list.entries() {
        for e in mf.load_manifest(table.file_io()).await?.entries() {
            let matches = e
                .data_file()
                .partition()
                .iter()
                .next()
                .flatten()
                .is_some_and(|v| format!("{v:?}").contains(&format!("\"{region}\"")));
            if e.is_alive() && matches {
                out.push(e.data_file().file_path().to_string());
            }
        }
    }
    Ok(out)
}

fn summary_of(desc: &Value, snapshot_id: i64) -> Value {
    desc["snapshots"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == json!(snapshot_id)).cloned())
        .unwrap_or(Value::Null)
}

fn metadata_files(table: &Table) -> usize {
    let dir = table
        .metadata()
        .location()
        .trim_start_matches("file://")
        .to_string()
        + "/metadata";
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Every operation, each checked by PyIceberg through the same catalog.
async fn every_operation(
    handle: &CatalogHandle,
    name: &str,
    py: &BTreeMap<String, String>,
    ns: &str,
) -> TestResult {
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();

    // append with caller properties
    let (table, m) = AppendBuilder::new(handle, ident.clone())
        .with_files(files(&table, SAMPLE).await?)
        .with_properties(HashMap::from([(
            "iceberg-ops.migration-job".into(),
            "job-1".into(),
        )]))
        .await?;
    let s_append = m.snapshot_id;
    let (rows, desc) = pyiceberg_orders(name, py, ns)?;
    assert_eq!(rows, orders_json(SAMPLE));
    let sum = &summary_of(&desc, s_append)["summary"];
    assert_eq!(sum["iceberg-ops.migration-job"], "job-1", "{desc}");
    assert_eq!(sum["added-records"], "5");
    assert_eq!(sum["total-records"], "5");
    assert_eq!(sum["total-data-files"], "4");
    assert_eq!(summary_of(&desc, s_append)["operation"], "Operation.APPEND");

    // overwrite files: replace the eu file with two rows
    let eu = files_of_region(&table, "eu").await?;
    assert_eq!(eu.len(), 1);
    let new_eu: &[Row] = &[(2, Some("eu"), Some(200)), (6, Some("eu"), Some(60))];
    let (table, m) = OverwriteBuilder::new(handle, ident.clone())
        .remove_files(eu)
        .add_files(files(&table, new_eu).await?)
        .await?;
    assert_eq!(
        (m.removed_files, m.removed_records, m.added_records),
        (1, 1, 2)
    );
    let after_overwrite: Vec<Row> = vec![
        (1, Some("us"), Some(10)),
        (2, Some("eu"), Some(200)),
        (3, Some("us"), None),
        (4, Some("apac"), Some(40)),
        (5, None, Some(50)),
        (6, Some("eu"), Some(60)),
    ];
    let (rows, desc) = pyiceberg_orders(name, py, ns)?;
    assert_eq!(rows, orders_json(&after_overwrite));
    let snap = summary_of(&desc, m.snapshot_id);
    assert_eq!(snap["operation"], "Operation.OVERWRITE", "{desc}");
    assert_eq!(snap["summary"]["deleted-records"], "1");
    assert_eq!(snap["summary"]["deleted-data-files"], "1");
    assert_eq!(snap["summary"]["total-records"], "6");
    // 4 files - the eu file + one new eu file
    assert_eq!(snap["summary"]["total-data-files"], "4");
    assert_eq!(scan_json(&table).await?, orders_json(&after_overwrite));

    // replace partitions: us is replaced wholesale by one row
    let (table, m) = ReplacePartitionsBuilder::new(handle, ident.clone())
        .add_files(files(&table, &[(10, Some("us"), Some(1000))]).await?)
        .await?;
    assert_eq!(m.removed_records, 2);
    let after_replace: Vec<Row> = vec![
        (2, Some("eu"), Some(200)),
        (4, Some("apac"), Some(40)),
        (5, None, Some(50)),
        (6, Some("eu"), Some(60)),
        (10, Some("us"), Some(1000)),
    ];
    let (rows, desc) = pyiceberg_orders(name, py, ns)?;
    assert_eq!(rows, orders_json(&after_replace));
    let snap = summary_of(&desc, m.snapshot_id);
    assert_eq!(snap["summary"]["replace-partitions"], "true");
    assert_eq!(snap["summary"]["total-records"], "5");

    // an illegal schema change is refused and writes nothing
    let before = table.metadata_location().map(str::to_string);
    let files_before = metadata_files(&table);
    let err = EvolveSchemaBuilder::new(handle, ident.clone())
        .add_column("note", Type::Primitive(PrimitiveType::String))
        .widen_column("id", PrimitiveType::Int)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("cannot change 'id' from long to int"), "{err}");
    let err = EvolveSchemaBuilder::new(handle, ident.clone())
        .drop_column("region")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("partition field 'region'"), "{err}");
    let reloaded = handle.catalog().load_table(&ident).await?;
    assert_eq!(reloaded.metadata_location().map(str::to_string), before);
    if table.metadata().location().starts_with("file://") {
        assert_eq!(
            metadata_files(&reloaded),
            files_before,
            "an illegal change wrote files"
        );
    }

    // schema evolution: rename + widen + add + doc + move, by field id
    let (table, sm) = EvolveSchemaBuilder::new(handle, ident.clone())
        .rename_column("amount", "total_amount")
        .widen_column("total_amount", PrimitiveType::Long)
        .add_column("note", Type::Primitive(PrimitiveType::String))
        .update_doc("id", "order id")
        .move_column("note", Position::After("id".into()))
        .set_identifier_fields(["id"])
        .await?;
    assert_eq!(sm.added, vec![("note".to_string(), 4)]);
    let out = pyiceberg(
        name,
        py,
        &format!(
            "t = catalog.load_table('{ns}.orders')\nemit({{'rows': rows(t), 'desc': describe(t), 'ids': list(t.schema().identifier_field_ids)}})"
        ),
    )?;
    let schema: Vec<(i64, String, String)> = out["desc"]["schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_i64().unwrap(),
                f["name"].as_str().unwrap().to_string(),
                f["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        schema,
        vec![
            (1, "id".into(), "long".into()),
            (4, "note".into(), "string".into()),
            (2, "region".into(), "string".into()),
            (3, "total_amount".into(), "long".into()),
        ]
    );
    assert_eq!(out["ids"], json!([1]));
    let renamed = |rows: &[Row]| -> Vec<Value> {
        let mut v: Vec<Value> = rows
            .iter()
            .map(|(id, r, a)| json!({"id": id, "note": null, "region": r, "total_amount": a}))
            .collect();
        sort_rows(&mut v);
        v
    };
    let mut py_rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut py_rows);
    assert_eq!(py_rows, renamed(&after_replace));
    // Our own scan projects old files to the current schema by field id.
    assert_eq!(scan_json(&table).await?, renamed(&after_replace));

    // properties
    let table = PropertiesBuilder::new(handle, ident.clone())
        .set("owner", "data-eng")
        .await?;
    assert_eq!(
        table
            .metadata()
            .properties()
            .get("owner")
            .map(String::as_str),
        Some("data-eng")
    );
    let props = pyiceberg(
        name,
        py,
        &format!("emit(dict(catalog.load_table('{ns}.orders').properties))"),
    )?;
    assert_eq!(props["owner"], "data-eng");

    // rollback to a non-ancestor is refused, naming the ancestors
    let current = table.metadata().current_snapshot_id().unwrap();
    let err = RollbackBuilder::to_snapshot(handle, ident.clone(), 12345)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("has no snapshot 12345"), "{err}");
    let (_, rb) = RollbackBuilder::to_snapshot(handle, ident.clone(), s_append).await?;
    assert_eq!((rb.from, rb.to), (Some(current), s_append));
    let err = RollbackBuilder::to_snapshot(handle, ident.clone(), current)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("is not an ancestor") && err.contains("set-current-snapshot"),
        "{err}"
    );
    let out = pyiceberg(
        name,
        py,
        &format!(
            "t = catalog.load_table('{ns}.orders')\nemit({{'rows': rows(t), 'current': t.metadata.current_snapshot_id}})"
        ),
    )?;
    assert_eq!(out["current"], json!(s_append));
    let mut py_rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut py_rows);
    assert_eq!(py_rows, renamed(SAMPLE));
    // and forward again
    let (table, _) = RollbackBuilder::set_current_snapshot(handle, ident.clone(), current).await?;
    assert_eq!(table.metadata().current_snapshot_id(), Some(current));
    assert_eq!(scan_json(&table).await?, renamed(&after_replace));

    // partition spec evolution: add bucket(4, id), rename it; duplicates are refused
    let err = EvolveSpecBuilder::new(handle, ident.clone())
        .add_field("region", Transform::Identity, None)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("already partitioned by identity(region)"),
        "{err}"
    );
    EvolveSpecBuilder::new(handle, ident.clone())
        .add_field("id", Transform::Bucket(4), None)
        .await?;
    let table = EvolveSpecBuilder::new(handle, ident.clone())
        .rename_field("id_bucket_4", "idb")
        .await?;
    let row = json!({"id": 30, "note": "after spec change", "region": "eu", "total_amount": 300});
    let batch = batch_from_json(&table, std::slice::from_ref(&row))?;
    let data =
        ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)])).await?;
    AppendBuilder::new(handle, ident.clone())
        .with_files(data)
        .await?;
    // sort order
    SortOrderBuilder::new(handle, ident.clone())
        .desc("id")
        .await?;
    let out = pyiceberg(
        name,
        py,
        &format!(
            "t = catalog.load_table('{ns}.orders')\nemit({{'desc': describe(t), 'rows': rows(t), 'sort': [(f.source_id, str(f.direction)) for f in t.sort_order().fields]}})"
        ),
    )?;
    let spec: Vec<(String, String)> = out["desc"]["spec"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["transform"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        spec,
        vec![
            ("region".into(), "identity".into()),
            ("idb".into(), "bucket[4]".into())
        ]
    );
    assert_eq!(out["sort"], json!([[1, "DESC"]]), "{}", out["sort"]);
    let mut want = renamed(&after_replace);
    want.push(row);
    sort_rows(&mut want);
    let mut py_rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut py_rows);
    assert_eq!(py_rows, want);
    // remove the field again: a new default spec without it
    let table = EvolveSpecBuilder::new(handle, ident.clone())
        .remove_field("idb")
        .await?;
    assert_eq!(table.metadata().default_partition_spec().fields().len(), 1);
    assert_eq!(scan_json(&table).await?, want);
    Ok(())
}

fn sqlite_props(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_on_sqlite() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite_props(dir.path());
    let handle = open("ops", &p).await?;
    every_operation(&handle, "ops", &p, "sq").await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_on_postgres() -> TestResult {
    let db = SqlCatalog::postgres()?;
    let handle = open("ops", &db.props).await?;
    every_operation(&handle, "ops", &db.props, "pg").await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("rest", &p).await?;
    every_operation(&handle, "rest", &p, "rs").await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_on_rest_over_https_with_oauth2() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let ca = ops_tests::tls::TestCa::new(dir.path(), "ops");
    // Tokens live 20 s: a long run renews them on the way.
    let issuer = ops_tests::issuer::Issuer::start(ops_tests::issuer::IssuerOptions {
        lifetime: std::time::Duration::from_secs(20),
        tls: Some(ca.server("issuer")),
        ..Default::default()
    });
    let rustberg = Rustberg::start();
    let gateway = issuer.gateway(rustberg.server.port, &ca.server("gateway"), "rustberg");
    let p = props(&[
        ("type", "rest"),
        ("uri", &gateway.uri()),
        ("ssl.cabundle", &ca.ca_pem.display().to_string()),
        ("credential", &issuer.credential()),
        ("oauth2-server-uri", &issuer.token_url()),
    ]);
    let handle = open("secure", &p).await?;
    every_operation(&handle, "secure", &p, "rs").await?;
    assert!(gateway.passed() > 0);
    Ok(())
}

/// Append, overwrite and rollback through the AWS catalogs; PyIceberg checks Glue.
async fn aws_basics(
    handle: &CatalogHandle,
    ns: &str,
    check: impl Fn(&[Row]) -> TestResult,
) -> TestResult {
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    let (table, m) = AppendBuilder::new(handle, ident.clone())
        .with_files(files(&table, SAMPLE).await?)
        .await?;
    let first = m.snapshot_id;
    check(SAMPLE)?;
    let eu = files_of_region(&table, "eu").await?;
    let (table, _) = OverwriteBuilder::new(handle, ident.clone())
        .remove_files(eu)
        .add_files(files(&table, &[(2, Some("eu"), Some(21))]).await?)
        .await?;
    let overwritten: Vec<Row> = SAMPLE
        .iter()
        .map(|r| {
            if r.0 == 2 {
                (2, Some("eu"), Some(21))
            } else {
                *r
            }
        })
        .collect();
    check(&overwritten)?;
    assert_eq!(scan_json(&table).await?, orders_json(&overwritten));
    RollbackBuilder::to_snapshot(handle, ident.clone(), first).await?;
    check(SAMPLE)?;
    let reloaded = handle.catalog().load_table(&ident).await?;
    assert_eq!(reloaded.metadata().current_snapshot_id(), Some(first));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn append_overwrite_rollback_on_glue() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    let handle = open("glue", &p).await?;
    aws_basics(&handle, "g", |rows| {
        let (got, _) = pyiceberg_orders("glue", &p, "g")?;
        assert_eq!(got, orders_json(rows));
        Ok(())
    })
    .await
}

/// iceberg-catalog-glue 0.10.1 refuses a table with a `timestamptz` column ("Conversion from
/// Timestamptz is not supported"), so no such Glue table could be created or committed to; the
/// patched copy (vendor/README.md) describes the column to Glue as `timestamp`, as PyIceberg
/// does. Created by us, appended to by PyIceberg, committed to by us again, read by PyIceberg.
#[tokio::test(flavor = "multi_thread")]
async fn a_timestamptz_column_on_glue() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    let handle = open("glue", &p).await?;
    let ns = iceberg::NamespaceIdent::new("tz".into());
    handle
        .catalog()
        .create_namespace(&ns, HashMap::new())
        .await?;
    let schema = iceberg::spec::Schema::builder()
        .with_fields(vec![
            iceberg::spec::NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long))
                .into(),
            iceberg::spec::NestedField::optional(
                2,
                "at",
                Type::Primitive(PrimitiveType::Timestamptz),
            )
            .into(),
        ])
        .build()?;
    let creation = iceberg::TableCreation::builder()
        .name("events".into())
        .schema(schema)
        .build();
    handle.catalog().create_table(&ns, creation).await?;
    let ident = TableIdent::from_strs(["tz", "events"])?;
    pyiceberg(
        "glue",
        &p,
        "import datetime as dt\n\
         t = catalog.load_table('tz.events')\n\
         at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)\n\
         t.append(pa.table({'id': [1, 2], 'at': [at, None]}, schema=t.schema().as_arrow()))\n\
         emit(True)",
    )?;
    PropertiesBuilder::new(&handle, ident.clone())
        .set("owner", "ops")
        .await?;
    let out = pyiceberg(
        "glue",
        &p,
        "t = catalog.load_table('tz.events')\n\
         g = catalog.glue.get_table(DatabaseName='tz', Name='events')['Table']\n\
         emit({'rows': t.scan().to_arrow().num_rows, 'owner': t.properties.get('owner'), \
               'types': {c['Name']: c['Type'] for c in g['StorageDescriptor']['Columns']}})",
    )?;
    assert_eq!(out["rows"], 2, "{out}");
    assert_eq!(out["owner"], "ops", "{out}");
    assert_eq!(out["types"]["at"], "timestamp", "{out}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn append_overwrite_rollback_on_s3tables() -> TestResult {
    init_tracing();
    let (_moto, p) = s3tables_on_moto("tables-ops");
    let handle = open("s3t", &p).await?;
    // PyIceberg cannot reach S3 Tables without AWS's REST endpoint; a second, independent
    // handle reloads the table through the catalog instead.
    let reader = open("s3t", &p).await?;
    let ident = TableIdent::from_strs(["t", "orders"])?;
    let check = |rows: &[Row]| -> TestResult {
        let want = orders_json(rows);
        let reader = reader.clone();
        let ident = ident.clone();
        let got = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()?.block_on(async {
                let t = reader.catalog().load_table(&ident).await?;
                scan_json(&t).await
            })
        })
        .join()
        .map_err(|_| anyhow::anyhow!("reader thread panicked"))??;
        assert_eq!(got, want);
        Ok(())
    };
    aws_basics(&handle, "t", check).await
}

/// Two writers on separate handles append concurrently; every commit must survive.
async fn racing_appends(a: &CatalogHandle, b: &CatalogHandle, ns: &str) -> TestResult {
    let table = create_orders(a, ns).await?;
    let ident = table.identifier().clone();
    PropertiesBuilder::new(a, ident.clone())
        .set("commit.retry.num-retries", "50")
        .set("commit.retry.min-wait-ms", "5")
        .set("commit.retry.max-wait-ms", "200")
        .await?;
    const PER_WRITER: i64 = 8;
    let writer = |handle: CatalogHandle, base_id: i64| {
        let ident = ident.clone();
        async move {
            let mut committed = Vec::new();
            for i in 0..PER_WRITER {
                let table = handle.catalog().load_table(&ident).await?;
                let id = base_id + i;
                let f = files(&table, &[(id, Some("us"), Some(id as i32))]).await?;
                let (_, m) = AppendBuilder::new(&handle, ident.clone())
                    .with_files(f)
                    .await?;
                committed.push(m.snapshot_id);
            }
            anyhow::Ok(committed)
        }
    };
    let (ra, rb) = tokio::join!(
        tokio::spawn(writer(a.clone(), 1000)),
        tokio::spawn(writer(b.clone(), 2000))
    );
    let mut snapshots = ra??;
    snapshots.extend(rb??);
    let table = a.catalog().load_table(&ident).await?;
    let rows = scan_json(&table).await?;
    let ids: HashSet<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
    let want: HashSet<i64> = (0..PER_WRITER).flat_map(|i| [1000 + i, 2000 + i]).collect();
    assert_eq!(ids, want, "a racing commit was lost");
    assert_eq!(rows.len(), want.len(), "a racing commit was duplicated");
    // Every committed snapshot is in main's history.
    let history: HashSet<i64> = std::iter::successors(table.metadata().current_snapshot(), |s| {
        s.parent_snapshot_id()
            .and_then(|p| table.metadata().snapshot_by_id(p))
    })
    .map(|s| s.snapshot_id())
    .collect();
    for s in snapshots {
        assert!(
            history.contains(&s),
            "snapshot {s} is not in main's history"
        );
    }
    let total = table
        .metadata()
        .current_snapshot()
        .unwrap()
        .summary()
        .additional_properties["total-records"]
        .clone();
    assert_eq!(total, (2 * PER_WRITER).to_string());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_writers_on_sqlite() -> TestResult {
    racing_writers_on_sql(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_writers_on_postgres() -> TestResult {
    racing_writers_on_sql(SqlCatalog::postgres()?).await
}

async fn racing_writers_on_sql(db: SqlCatalog) -> TestResult {
    let p = &db.props;
    let (a, b) = (open("race", p).await?, open("race", p).await?);
    for round in 0..3 {
        racing_appends(&a, &b, &format!("r{round}")).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_writers_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let (a, b) = (open("race", &p).await?, open("race", &p).await?);
    racing_appends(&a, &b, "r0").await
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_writers_on_s3tables() -> TestResult {
    init_tracing();
    let (_moto, p) = s3tables_on_moto("race");
    let (a, b) = (open("race", &p).await?, open("race", &p).await?);
    racing_appends(&a, &b, "r0").await
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_racing_an_append_to_its_partition_never_loses_the_append() -> TestResult {
    overwrite_racing_an_append(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_racing_an_append_to_its_partition_on_postgres() -> TestResult {
    overwrite_racing_an_append(SqlCatalog::postgres()?).await
}

async fn overwrite_racing_an_append(db: SqlCatalog) -> TestResult {
    let p = &db.props;
    let (a, b) = (open("c", p).await?, open("c", p).await?);
    let (mut landed, mut refused) = (0, 0);
    for round in 0..10 {
        let table = create_orders(&a, &format!("c{round}")).await?;
        let ident = table.identifier().clone();
        let (table, _) = AppendBuilder::new(&a, ident.clone())
            .with_files(files(&table, SAMPLE).await?)
            .await?;
        let eu = files_of_region(&table, "eu").await?;
        let replacement = files(&table, &[(2, Some("eu"), Some(0))]).await?;
        let appended = files(&table, &[(7, Some("eu"), Some(7))]).await?;
        let append = AppendBuilder::new(&a, ident.clone()).with_files(appended);
        let overwrite = OverwriteBuilder::new(&b, ident.clone())
            .remove_files(eu)
            .add_files(replacement);
        let (ra, rb) = tokio::join!(
            tokio::spawn(append.into_future()),
            tokio::spawn(overwrite.into_future())
        );
        ra??;
        match rb? {
            Ok(_) => landed += 1,
            Err(Error::CommitConflict { .. }) => refused += 1,
            Err(e) => return Err(e.into()),
        }
        let rows = scan_json(&a.catalog().load_table(&ident).await?).await?;
        assert!(
            rows.iter().any(|r| r["id"] == json!(7)),
            "round {round}: the append was lost: {rows:?}"
        );
        let twos: Vec<&Value> = rows.iter().filter(|r| r["id"] == json!(2)).collect();
        assert_eq!(twos.len(), 1, "round {round}: {rows:?}");
    }
    eprintln!("overwrite landed {landed} times, refused as a conflict {refused} times");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn glue_commit_sends_version_id_and_a_refusal_is_a_conflict() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    let real = open("glue", &p).await?;
    let table = create_orders(&real, "gv").await?;
    let location = table.metadata_location().unwrap_or_default().to_string();
    let data = files(&table, SAMPLE).await?;

    // Same catalog, but Glue answers come from the fake; data and metadata stay on moto's S3.
    let fake = ops_tests::fake_glue::FakeGlue::start("gv", "orders", &location, "7");
    let mut p2 = p.clone();
    p2.insert("glue.endpoint".into(), fake.url.clone());
    let handle = open("glue", &p2).await?;
    PropertiesBuilder::new(&real, table.identifier().clone())
        .set("commit.retry.num-retries", "2")
        .set("commit.retry.min-wait-ms", "10")
        .await?;
    let result = AppendBuilder::new(&handle, table.identifier().clone())
        .with_files(data)
        .await;
    assert!(
        matches!(result, Err(Error::CommitConflict { ref detail, .. }) if detail.contains("VersionId 7")),
        "{:?}",
        result.err()
    );
    let updates = fake.updates.lock().map(|u| u.clone()).unwrap_or_default();
    assert!(!updates.is_empty(), "no UpdateTable reached Glue");
    for body in &updates {
        let v: Value = serde_json::from_str(body)?;
        assert_eq!(v["VersionId"], "7", "{body}");
        assert_eq!(v["DatabaseName"], "gv");
        assert_eq!(
            v["TableInput"]["Parameters"]["previous_metadata_location"],
            json!(location)
        );
    }

    // A table without a VersionId cannot be swapped safely: refused, nothing sent.
    let bare = ops_tests::fake_glue::FakeGlue::start("gv", "orders", &location, "");
    let mut p3 = p.clone();
    p3.insert("glue.endpoint".into(), bare.url.clone());
    let handle = open("glue", &p3).await?;
    let err = AppendBuilder::new(&handle, table.identifier().clone())
        .with_files(files(&table, SAMPLE).await?)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("no VersionId"), "{err}");
    assert!(bare.updates.lock().map(|u| u.is_empty()).unwrap_or(false));
    Ok(())
}

/// A batch for `table`'s current schema from JSON rows (long, int and string columns).
fn batch_from_json(table: &Table, rows: &[Value]) -> anyhow::Result<arrow_array::RecordBatch> {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};
    use arrow_schema::DataType;
    let schema = ops_core::write::table_arrow_schema(table)?;
    let mut columns: Vec<ArrayRef> = Vec::new();
    for f in schema.fields() {
        let cells = rows.iter().map(|r| &r[f.name().as_str()]);
        columns.push(match f.data_type() {
            DataType::Int64 => Arc::new(cells.map(Value::as_i64).collect::<Int64Array>()),
            DataType::Int32 => Arc::new(
                cells
                    .map(|v| v.as_i64().map(|x| x as i32))
                    .collect::<Int32Array>(),
            ),
            DataType::Utf8 => Arc::new(cells.map(Value::as_str).collect::<StringArray>()),
            other => anyhow::bail!("batch_from_json: unsupported type {other}"),
        });
    }
    Ok(arrow_array::RecordBatch::try_new(schema, columns)?)
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_written_by_pyiceberg_are_operated_on_correctly() -> TestResult {
    tables_written_by_pyiceberg(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_written_by_pyiceberg_are_operated_on_correctly_on_postgres() -> TestResult {
    tables_written_by_pyiceberg(SqlCatalog::postgres()?).await
}

async fn tables_written_by_pyiceberg(db: SqlCatalog) -> TestResult {
    let p = db.props.clone();
    let handle = open("py", &p).await?;
    // PyIceberg: partitioned by (region, bucket(4, id)), two appends, then the schema evolves
    // (rename, add), the spec drops the bucket field, a third append lands under the new spec,
    // and a copy-on-write delete rewrites a file.
    let out = pyiceberg(
        "py",
        &p,
        r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType, IntegerType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform, BucketTransform
catalog.create_namespace('pw')
schema = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()), NestedField(3, 'amount', IntegerType()))
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'region'), PartitionField(1, 1001, BucketTransform(4), 'id_bucket'))
t = catalog.create_table('pw.orders', schema=schema, partition_spec=spec)
arrow = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('amount', pa.int32())])
t.append(pa.table({'id': [1, 2, 3], 'region': ['us', 'eu', 'us'], 'amount': [10, 20, 30]}, schema=arrow))
t.append(pa.table({'id': [4, 5], 'region': ['eu', 'apac'], 'amount': [40, 50]}, schema=arrow))
first = t.metadata.current_snapshot_id
with t.update_schema() as u:
    u.rename_column('amount', 'amt')
    u.add_column('note', StringType())
with t.update_spec() as u:
    u.remove_field('id_bucket')
t = catalog.load_table('pw.orders')
arrow2 = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('amt', pa.int32()), pa.field('note', pa.string())])
t.append(pa.table({'id': [6, 7], 'region': ['eu', 'us'], 'amt': [60, 70], 'note': ['six', 'seven']}, schema=arrow2))
t.delete('id == 3')
t = catalog.load_table('pw.orders')
emit({'first': first, 'rows': rows(t), 'desc': describe(t)})
"#,
    )?;
    let first = out["first"].as_i64().unwrap();
    let ident = TableIdent::from_strs(["pw", "orders"])?;
    let table = handle.catalog().load_table(&ident).await?;
    // Our projected scan agrees with PyIceberg on its own table.
    let mut py_rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut py_rows);
    assert_eq!(scan_json(&table).await?, py_rows);
    assert_eq!(py_rows.len(), 6, "{py_rows:?}");

    // Replace partition eu: old-spec files (region, bucket) project exactly onto (region).
    let new_eu = batch_from_json(
        &table,
        &[json!({"id": 20, "region": "eu", "amt": 200, "note": "new"})],
    )?;
    let data =
        ops_core::write::write_data_files(&table, futures::stream::iter([Ok(new_eu)])).await?;
    let (table, m) = ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_files(data)
        .await?;
    assert_eq!(
        m.removed_records, 3,
        "eu had ids 2, 4 (old spec) and 6 (new spec)"
    );
    let expect = |ids: &[i64]| -> Vec<i64> { ids.to_vec() };
    let py = pyiceberg(
        "py",
        &p,
        "emit(sorted(r['id'] for r in rows(catalog.load_table('pw.orders'))))",
    )?;
    assert_eq!(py, json!(expect(&[1, 5, 7, 20])));
    assert_eq!(
        scan_json(&table)
            .await?
            .iter()
            .filter_map(|r| r["id"].as_i64())
            .collect::<HashSet<_>>(),
        [1, 5, 7, 20].into_iter().collect()
    );

    // Overwrite the file PyIceberg rewrote for its delete (us, ids 1 after deleting 3).
    let us = files_of_region(&table, "us").await?;
    assert_eq!(
        us.len(),
        2,
        "the rewritten old-spec us file and the new-spec us file"
    );
    let one = batch_from_json(
        &table,
        &[json!({"id": 1, "region": "us", "amt": 11, "note": "fixed"})],
    )?;
    let data = ops_core::write::write_data_files(&table, futures::stream::iter([Ok(one)])).await?;
    OverwriteBuilder::new(&handle, ident.clone())
        .remove_files(us)
        .add_files(data)
        .await?;
    let py = pyiceberg("py", &p, "emit(rows(catalog.load_table('pw.orders')))")?;
    let mut got = py.as_array().cloned().unwrap_or_default();
    sort_rows(&mut got);
    let mut want = vec![
        json!({"id": 1, "region": "us", "amt": 11, "note": "fixed"}),
        json!({"id": 5, "region": "apac", "amt": 50, "note": null}),
        json!({"id": 20, "region": "eu", "amt": 200, "note": "new"}),
    ];
    sort_rows(&mut want);
    assert_eq!(got, want);

    // Roll back to PyIceberg's second append: its rows, read in the current schema.
    RollbackBuilder::to_snapshot(&handle, ident.clone(), first).await?;
    let py = pyiceberg(
        "py",
        &p,
        "emit(sorted(r['id'] for r in rows(catalog.load_table('pw.orders'))))",
    )?;
    assert_eq!(py, json!([1, 2, 3, 4, 5]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn replace_partitions_refuses_files_whose_old_spec_cannot_decide() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite_props(dir.path());
    let handle = open("py", &p).await?;
    // identity(region) first, then bucket(id) added: an old file may straddle new partitions.
    pyiceberg(
        "py",
        &p,
        r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType, IntegerType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import BucketTransform, IdentityTransform
catalog.create_namespace('ev')
schema = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()), NestedField(3, 'amount', IntegerType()))
arrow = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('amount', pa.int32())])
t = catalog.create_table('ev.orders', schema=schema, partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'region')))
t.append(pa.table({'id': [1, 2], 'region': ['eu', 'eu'], 'amount': [1, 2]}, schema=arrow))
with t.update_spec() as u:
    u.add_field('id', BucketTransform(4), 'id_bucket')
emit(True)
"#,
    )?;
    let ident = TableIdent::from_strs(["ev", "orders"])?;
    let table = handle.catalog().load_table(&ident).await?;
    let before = table.metadata_location().map(str::to_string);
    let data = files(&table, &[(9, Some("eu"), Some(9))]).await?;
    let err = ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_files(data)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("cannot tell which of its rows"), "{err}");
    let after = handle.catalog().load_table(&ident).await?;
    assert_eq!(after.metadata_location().map(str::to_string), before);
    Ok(())
}

async fn deletes(
    handle: &CatalogHandle,
    name: &str,
    py: &BTreeMap<String, String>,
    ns: &str,
) -> TestResult {
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    let (_, first) = AppendBuilder::new(handle, ident.clone())
        .with_files(files(&table, SAMPLE).await?)
        .await?;
    let py_ids = || -> anyhow::Result<Value> {
        pyiceberg(
            name,
            py,
            &format!("emit(sorted(r['id'] for r in rows(catalog.load_table('{ns}.orders'))))"),
        )
    };

    // A whole partition matches: its file is dropped, nothing rewritten.
    let (_, m) = DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("region = 'apac'")
        .await?;
    assert_eq!(
        (m.removed_files, m.added_files, m.removed_records),
        (1, 0, 1)
    );
    assert_eq!(py_ids()?, json!([1, 2, 3, 5]));
    let (_, desc) = pyiceberg_orders(name, py, ns)?;
    let snap = summary_of(&desc, m.snapshot_id);
    assert_eq!(snap["operation"], "Operation.DELETE", "{desc}");
    assert_eq!(snap["summary"]["total-records"], "4");

    // Part of a file matches: it is rewritten without the row.
    let (_, m) = DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("id = 3")
        .await?;
    assert_eq!(
        (
            m.removed_files,
            m.added_files,
            m.removed_records,
            m.added_records
        ),
        (1, 1, 2, 1)
    );
    assert_eq!(py_ids()?, json!([1, 2, 5]));

    // Nothing matches: no commit.
    let before = handle
        .catalog()
        .load_table(&ident)
        .await?
        .metadata()
        .current_snapshot_id();
    let (table, m) = DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("id = 999")
        .await?;
    assert_eq!(m.removed_files, 0);
    assert_eq!(table.metadata().current_snapshot_id(), before);

    // A bad filter is refused before anything happens.
    let err = DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("amount = 'x'")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("'x' is not a valid int value for column 'amount'"),
        "{err}"
    );

    // After a rename, the new name finds the old column by field id.
    EvolveSchemaBuilder::new(handle, ident.clone())
        .rename_column("amount", "total")
        .await?;
    DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("total IS NULL OR total >= 50")
        .await?;
    assert_eq!(py_ids()?, json!([1, 2]));

    // Rolling back restores every deleted row: the deletes were ordinary snapshots.
    RollbackBuilder::to_snapshot(handle, ident.clone(), first.snapshot_id).await?;
    assert_eq!(py_ids()?, json!([1, 2, 3, 4, 5]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_rows_on_sqlite() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite_props(dir.path());
    let handle = open("del", &p).await?;
    deletes(&handle, "del", &p, "d").await
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_rows_on_postgres() -> TestResult {
    let db = SqlCatalog::postgres()?;
    let handle = open("del", &db.props).await?;
    deletes(&handle, "del", &db.props, "d").await
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_rows_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("rest", &p).await?;
    deletes(&handle, "rest", &p, "d").await
}

#[tokio::test(flavor = "multi_thread")]
async fn nested_schema_evolution_is_read_by_pyiceberg() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite_props(dir.path());
    let handle = open("nest", &p).await?;
    pyiceberg(
        "nest",
        &p,
        r#"
catalog.create_namespace('n')
addr = pa.struct([pa.field('street', pa.string()), pa.field('city', pa.string())])
arrow = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('address', addr)])
t = catalog.create_table('n.people', schema=arrow)
t.append(pa.table({'id': [1, 2], 'address': [{'street': 'Main', 'city': 'Oslo'}, None]}, schema=arrow))
emit(True)
"#,
    )?;
    let ident = TableIdent::from_strs(["n", "people"])?;
    let (table, sm) = EvolveSchemaBuilder::new(&handle, ident.clone())
        .add_nested_column(
            Some("address"),
            "zip",
            Type::Primitive(PrimitiveType::String),
            Some("postal code"),
        )
        .rename_column("address.city", "town")
        .move_column("address.zip", Position::First)
        .await?;
    assert_eq!(sm.added.len(), 1);
    let out = pyiceberg(
        "nest",
        &p,
        "t = catalog.load_table('n.people')\nemit({'rows': rows(t), 'schema': str(t.schema())})",
    )?;
    let schema = out["schema"].as_str().unwrap_or_default();
    assert!(
        schema.contains("zip: optional string (postal code)"),
        "{schema}"
    );
    assert!(schema.contains("town: optional string"), "{schema}");
    let mut want = vec![
        json!({"address": {"street": "Main", "town": "Oslo", "zip": null}, "id": 1}),
        json!({"address": null, "id": 2}),
    ];
    sort_rows(&mut want);
    let mut got = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut got);
    assert_eq!(got, want);
    // Our scan reads PyIceberg's files through the nested rename by field id.
    let ours = scan_json(&table).await?;
    assert_eq!(ours, want);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_catalog_refuses_ops_commits_without_writing_metadata() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = props(&[
        ("type", "in-memory"),
        ("warehouse", &dir.path().display().to_string()),
    ]);
    let handle = open("mem", &p).await?;
    let table = create_orders(&handle, "m").await?;
    let before = metadata_files(&table);
    let err = AppendBuilder::new(&handle, table.identifier().clone())
        .with_files(files(&table, SAMPLE).await?)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("memory catalog") && err.contains("'sqlite'"),
        "{err}"
    );
    assert_eq!(
        metadata_files(&table),
        before,
        "a refused commit left a metadata file"
    );
    Ok(())
}
