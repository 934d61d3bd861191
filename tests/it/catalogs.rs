//! Each catalog kind, built by the factory: create a namespace and a partitioned table,
//! fast-append Arrow data, scan it back, and (where PyIceberg supports the kind) have PyIceberg
//! read the same rows and snapshot summary from the same catalog.

use std::collections::BTreeMap;

use ops_core::{CatalogFactory, CatalogKind};
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::{Moto, PG_PASSWORD, PG_PASSWORD_IN_URI, Postgres, Rustberg};

use crate::common::*;

fn assert_pyiceberg_sees_sample(
    name: &str,
    props: &BTreeMap<String, String>,
    ns: &str,
) -> TestResult {
    let (rows, desc) = pyiceberg_orders(name, props, ns)?;
    assert_eq!(rows, orders_json(SAMPLE), "PyIceberg read different rows");
    let snapshots = desc["snapshots"].as_array().cloned().unwrap_or_default();
    assert_eq!(snapshots.len(), 1, "{desc}");
    let summary = &snapshots[0]["summary"];
    assert_eq!(summary["iceberg-ops.test"], "roundtrip", "{desc}");
    assert_eq!(summary["added-records"], "5", "{desc}");
    assert_eq!(desc["spec"][0]["transform"], "identity", "{desc}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn embedded_default_sqlite_needs_no_config() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let factory =
        CatalogFactory::new(ops_core::catalog::CatalogConfig::empty()).with_base_dir(dir.path());
    let handle = factory.open("sqlite").await?;
    assert_eq!(handle.kind(), CatalogKind::Sql);
    write_and_read_back(&handle, "quick").await?;
    let db = dir.path().join(".iceberg-ops/catalog.db");
    assert!(db.is_file(), "embedded catalog database missing");
    assert!(
        dir.path()
            .join(".iceberg-ops/warehouse/quick/orders/metadata")
            .is_dir()
    );

    // PyIceberg opens the same database under the same catalog name.
    let py = props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}", db.display())),
        (
            "warehouse",
            &format!("file://{}/.iceberg-ops/warehouse", dir.path().display()),
        ),
    ]);
    assert_pyiceberg_sees_sample("sqlite", &py, "quick")
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_catalog_is_shared_with_pyiceberg_both_ways() -> TestResult {
    // Our side creates the catalog tables first, as an operator's first command would.
    shared_with_pyiceberg_both_ways(&SqlCatalog::sqlite()?.props, false).await
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_catalog_is_shared_with_pyiceberg_both_ways() -> TestResult {
    // PyIceberg creates the catalog tables, as in a deployment PyIceberg set up; we use them.
    let db = SqlCatalog::postgres()?;
    shared_with_pyiceberg_both_ways(&db.props, true).await
}

async fn shared_with_pyiceberg_both_ways(
    p: &BTreeMap<String, String>,
    pyiceberg_first: bool,
) -> TestResult {
    let ours_first = match pyiceberg_first {
        false => Some(open("shared", p).await?),
        true => None,
    };
    // PyIceberg writes; we read.
    pyiceberg(
        "shared",
        p,
        "catalog.create_namespace('py')\n\
         schema = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('amount', pa.int32())])\n\
         t = catalog.create_table('py.orders', schema=schema)\n\
         t.append(pa.table({'id': [7, 8], 'region': ['us', None], 'amount': [70, None]}, schema=schema))\n\
         emit(True)",
    )?;
    let handle = match ours_first {
        Some(handle) => handle,
        None => open("shared", p).await?,
    };
    let table = handle
        .catalog()
        .load_table(&iceberg::TableIdent::from_strs(["py", "orders"])?)
        .await?;
    let want = [(7, Some("us"), Some(70)), (8, None, None)];
    assert_eq!(scan_json(&table).await?, orders_json(&want));

    // We append to PyIceberg's table; PyIceberg reads both appends.
    let batch = orders_batch(&table, &[(9, Some("eu"), Some(90))])?;
    ops_core::append::append(
        &handle,
        &table,
        futures::stream::iter([Ok(batch)]),
        Default::default(),
    )
    .await?;
    let out = pyiceberg("shared", p, "emit(rows(catalog.load_table('py.orders')))")?;
    let mut got = out.as_array().cloned().unwrap_or_default();
    sort_rows(&mut got);
    let all = [
        (7, Some("us"), Some(70)),
        (8, None, None),
        (9, Some("eu"), Some(90)),
    ];
    assert_eq!(got, orders_json(&all));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn sql_catalog_on_postgres() -> TestResult {
    let db = SqlCatalog::postgres()?;
    let handle = open("pg", &db.props).await?;
    assert_eq!(handle.kind(), CatalogKind::Sql);
    write_and_read_back(&handle, "pgns").await?;
    assert_pyiceberg_sees_sample("pg", &db.props, "pgns")
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_errors_name_the_catalog_and_never_print_the_password() -> TestResult {
    init_tracing();
    let pg = Postgres::start();
    let uri = pg.create_database("iceberg");
    let dir = tempfile::tempdir()?;
    let wh = format!("file://{}/wh", dir.path().display());
    let wrong = "wr0ng%2Fpa55";
    for (uri, says) in [
        (
            uri.replace(PG_PASSWORD_IN_URI, wrong),
            "password authentication failed for user \"postgres\"",
        ),
        (
            uri.replace("/iceberg", "/nosuchdb"),
            "database \"nosuchdb\" does not exist",
        ),
    ] {
        let err = open(
            "pgerr",
            &props(&[("type", "sql"), ("uri", &uri), ("warehouse", &wh)]),
        )
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
        assert!(
            err.contains("catalog 'pgerr' (sql)") && err.contains(says),
            "{err}"
        );
        for secret in [PG_PASSWORD, PG_PASSWORD_IN_URI, wrong, "wr0ng/pa55"] {
            assert!(!err.contains(secret), "the password is printed: {err}");
        }
    }
    Ok(())
}

/// sqlx's pool retries a refused connection until its 30 s acquire timeout and then says only
/// "pool timed out": a server that is not there must be a prompt error saying where we looked.
#[tokio::test(flavor = "multi_thread")]
async fn unreachable_postgres_is_a_prompt_error_naming_the_address() -> TestResult {
    init_tracing();
    let port = ops_tests::servers::free_port();
    let dir = tempfile::tempdir()?;
    let p = props(&[
        ("type", "sql"),
        (
            "uri",
            &format!("postgresql://postgres:s3cret@127.0.0.1:{port}/iceberg"),
        ),
        ("warehouse", &format!("file://{}/wh", dir.path().display())),
    ]);
    let started = std::time::Instant::now();
    let err = open("down", &p)
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "{took:?}: {err}");
    assert!(
        err.contains("catalog 'down' (sql)")
            && err.contains(&format!("127.0.0.1:{port}"))
            && err.contains("refused"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
    Ok(())
}

/// Managed PostgreSQL (RDS, Cloud SQL, Azure) wants TLS: `sslmode=require`, or `verify-full`
/// with the provider's CA in `sslrootcert`. This server takes TCP connections over TLS only, so
/// a client that fell back to plain text fails instead of passing.
#[tokio::test(flavor = "multi_thread")]
async fn sql_catalog_on_postgres_over_tls() -> TestResult {
    init_tracing();
    let pg = Postgres::start_tls();
    let base = pg.create_database("iceberg");
    let ca = pg
        .ca_cert()
        .ok_or_else(|| anyhow::anyhow!("no CA"))?
        .display()
        .to_string();
    let dir = tempfile::tempdir()?;
    let wh = format!("file://{}/wh", dir.path().display());
    let with = |query: &str| {
        props(&[
            ("type", "sql"),
            ("uri", &format!("{base}?{query}")),
            ("warehouse", &wh),
        ])
    };
    let verified = with(&format!("sslmode=verify-full&sslrootcert={ca}"));
    // PyIceberg (libpq) writes over a verified connection: the server's TLS is sound.
    pyiceberg(
        "tls",
        &verified,
        "catalog.create_namespace('py')\n\
         schema = pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('amount', pa.int32())])\n\
         t = catalog.create_table('py.orders', schema=schema)\n\
         t.append(pa.table({'id': [7, 8], 'region': ['us', None], 'amount': [70, None]}, schema=schema))\n\
         emit(True)",
    )?;
    // require: encrypted, the certificate unchecked (what managed services document first).
    let handle = open("tls", &with("sslmode=require")).await?;
    write_and_read_back(&handle, "ours").await?;
    assert_pyiceberg_sees_sample("tls", &verified, "ours")?;
    // verify-full with the CA: the same catalog.
    let handle = open("tls", &verified).await?;
    let table = handle
        .catalog()
        .load_table(&iceberg::TableIdent::from_strs(["py", "orders"])?)
        .await?;
    let want = [(7, Some("us"), Some(70)), (8, None, None)];
    assert_eq!(scan_json(&table).await?, orders_json(&want));
    // verify-full without the CA (it is in no trust store) is refused; so is plain text.
    for (query, says) in [
        ("sslmode=verify-full", ""),
        ("sslmode=disable", "no encryption"),
    ] {
        let err = open("tls", &with(query))
            .await
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(
            err.contains("catalog 'tls' (sql)") && err.contains(says),
            "{query}: {err}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_catalog_on_rustberg() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("rest", &p).await?;
    assert_eq!(handle.kind(), CatalogKind::Rest);
    let table = write_and_read_back(&handle, "restns").await?;
    assert!(
        table
            .metadata()
            .location()
            .starts_with(&rustberg.warehouse()),
        "table location {} is outside rustberg's warehouse",
        table.metadata().location()
    );
    assert_pyiceberg_sees_sample("rest", &p, "restns")
}

#[tokio::test(flavor = "multi_thread")]
async fn glue_catalog_on_moto() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    let handle = open("glue", &p).await?;
    assert_eq!(handle.kind(), CatalogKind::Glue);
    let table = write_and_read_back(&handle, "gluens").await?;
    assert!(
        table
            .metadata()
            .location()
            .starts_with("s3://lake/warehouse")
    );
    assert_pyiceberg_sees_sample("glue", &p, "gluens")
}

#[tokio::test(flavor = "multi_thread")]
async fn s3tables_catalog_on_moto() -> TestResult {
    init_tracing();
    let (_moto, p) = s3tables_on_moto("tables");
    let handle = open("s3t", &p).await?;
    assert_eq!(handle.kind(), CatalogKind::S3Tables);
    let table = write_and_read_back(&handle, "s3tns").await?;
    assert!(
        table.metadata().location().starts_with("s3://"),
        "{}",
        table.metadata().location()
    );
    // PyIceberg 0.12 reaches S3 Tables only through AWS's REST endpoint, which moto lacks, so
    // the oracle here is a second, independent load of the table through the catalog.
    let again = open("s3t", &p).await?;
    let reloaded = again.catalog().load_table(table.identifier()).await?;
    assert_eq!(scan_json(&reloaded).await?, orders_json(SAMPLE));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_catalog() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = props(&[
        ("type", "in-memory"),
        ("warehouse", &dir.path().display().to_string()),
    ]);
    let handle = open("mem", &p).await?;
    assert_eq!(handle.kind(), CatalogKind::Memory);
    // The catalog opens and creates tables; appends are refused clearly (iceberg keeps its
    // commit API private, so ops-core commits only to catalogs whose pointer it can swap).
    let table = create_orders(&handle, "memns").await?;
    let batch = orders_batch(&table, SAMPLE)?;
    let err = ops_core::append::append(
        &handle,
        &table,
        futures::stream::iter([Ok(batch)]),
        Default::default(),
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("use the embedded 'sqlite' catalog"), "{err}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn moto_reset_forgets_state() -> TestResult {
    let moto = Moto::start();
    moto.create_table_bucket("once");
    moto.reset();
    // Without the reset a second bucket of the same name would conflict.
    let arn = moto.create_table_bucket("once");
    assert!(arn.ends_with("bucket/once"), "{arn}");
    Ok(())
}

/// A catalog whose `warehouse` PyIceberg was given as a plain path: PyIceberg records plain
/// paths (metadata, table location, data files), and a file `add_files` is handed without a
/// scheme stays plain too. iceberg-ops loads, reads, appends to, deletes from and compacts such
/// a table, PyIceberg reads every commit, and no file of it counts as an orphan. (iceberg
/// 0.10.1's FileIO refused every plain path: "relative URL without a base".)
#[tokio::test(flavor = "multi_thread")]
async fn a_table_pyiceberg_made_of_plain_paths() -> TestResult {
    use ops_core::ops::append::AppendBuilder;
    use ops_core::ops::delete::DeleteBuilder;
    let db = SqlCatalog::sqlite()?;
    let dir = db.dir.path().display().to_string();
    let mut plain = db.props.clone();
    plain.insert("warehouse".into(), format!("{dir}/wh"));
    let made = pyiceberg(
        "c",
        &plain,
        &format!(
            "import pyarrow as pa, pyarrow.parquet as pq\n\
             schema = pa.schema([pa.field('id', pa.int64(), nullable=False), \
                                 pa.field('region', pa.string()), pa.field('amount', pa.int32())])\n\
             catalog.create_namespace('plain')\n\
             t = catalog.create_table('plain.orders', schema=schema)\n\
             t.append(pa.table({{'id': [1, 2], 'region': ['eu', 'us'], 'amount': [1, 2]}}, schema=schema))\n\
             pq.write_table(pa.table({{'id': [3], 'region': ['eu'], 'amount': [3]}}, schema=schema), \
                            '{dir}/extra.parquet')\n\
             t.add_files(['{dir}/extra.parquet'])\n\
             t = catalog.load_table('plain.orders')\n\
             emit({{'metadata': t.metadata_location, \
                    'files': sorted(f.file.file_path for f in t.scan().plan_files())}})"
        ),
    )?;
    let plain_path = |v: &serde_json::Value| v.as_str().is_some_and(|s| s.starts_with('/'));
    assert!(plain_path(&made["metadata"]), "{made}");
    assert!(
        made["files"]
            .as_array()
            .is_some_and(|f| f.len() == 2 && f.iter().all(plain_path)),
        "{made}"
    );

    let handle = open("c", &db.props).await?;
    let ident = iceberg::TableIdent::from_strs(["plain", "orders"])?;
    let table = handle.catalog().load_table(&ident).await?;
    let ids = |rows: Vec<serde_json::Value>| -> Vec<i64> {
        let mut v: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ids(scan_json(&table).await?), [1, 2, 3]);
    let batch = orders_batch(&table, &[(4, Some("eu"), Some(4))])?;
    let files =
        ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)])).await?;
    assert!(
        files.iter().all(|f| f.file_path().starts_with(&dir)),
        "{files:?}"
    );
    AppendBuilder::new(&handle, ident.clone())
        .with_files(files)
        .await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 2")
        .await?;
    let (table, m) = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(m.snapshot_id.is_some(), "{m:?}");
    assert_eq!(ids(scan_json(&table).await?), [1, 3, 4]);
    let read = pyiceberg(
        "c",
        &plain,
        "t = catalog.load_table('plain.orders')\n\
         emit(sorted(r['id'] for r in rows(t)))",
    )?;
    assert_eq!(read, serde_json::json!([1, 3, 4]));

    let orphans = ops_maintenance::remove_orphans::RemoveOrphansBuilder::new(&handle, ident)
        .older_than(std::time::Duration::ZERO)
        .dry_run(true)
        .await?;
    // Every file is still reached by some snapshot (none expired): PyIceberg's plain paths
    // and the listing's name the same files.
    assert!(orphans.orphans.is_empty(), "{orphans:?}");
    assert!(orphans.reachable >= 3, "{orphans:?}");
    Ok(())
}
