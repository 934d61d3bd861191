//! `import snapshot --source glue:DB.T` and `add-files --from glue:DB.T` (ops-import's Glue
//! source) on moto: a Hive table as Spark and Hive leave them — lower-cased Glue columns over
//! mixed-case files, INT96 timestamps, partitions outside the table location, a NULL
//! partition, a value with a slash — snapshotted into an Iceberg table that PyIceberg reads
//! with the rows pyarrow reads from the partitions' files.

use std::collections::BTreeMap;

use ops_core::Error;
use ops_import::add_files::AddFilesBuilder;
use ops_import::migrate::MigrateBuilder;
use ops_import::snapshot::SnapshotBuilder;
use ops_tests::hive::*;
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::Moto;
use serde_json::{Value, json};

use crate::common::*;

/// moto (S3 bucket `lake`, Glue database `hive`) and the props of a Glue catalog on it.
fn hive_on_moto() -> (Moto, BTreeMap<String, String>) {
    init_tracing();
    let (moto, p) = glue_on_moto();
    hive_database(&moto);
    (moto, p)
}

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
    sales_table(p, &moto)?;
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
    let us: Vec<String> = m
        .add
        .files
        .to_vec()?
        .into_iter()
        .filter(|f| f.path.contains("archive"))
        .map(|f| f.partition)
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
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "hudi",
            "TableType": "EXTERNAL_TABLE", "StorageDescriptor": storage("s3://lake/hive/h/",
                "org.apache.hudi.hadoop.HoodieParquetInputFormat", PARQUET_SERDE),
            "Parameters": {"spark.sql.sources.provider": "hudi"}}}),
    );
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "projected",
            "TableType": "EXTERNAL_TABLE",
            "StorageDescriptor": storage("s3://lake/hive/p/", PARQUET_IN, PARQUET_SERDE),
            "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            "Parameters": {"projection.enabled": "true"}}}),
    );
    for (source, why) in [
        ("glue:hive.hudi", "is a hudi table"),
        ("glue:hive.projected", "partition projection"),
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

/// Whether Glue holds `hive.{name}`, and how many partitions it lists.
async fn glue_state(
    glue: &ops_import::glue::GlueClient,
    name: &str,
) -> anyhow::Result<Option<(bool, usize)>> {
    let Some(t) = glue.get_table("hive", name).await? else {
        return Ok(None);
    };
    let partitions = glue.get_partitions("hive", name).await?.len();
    Ok(Some((ops_import::glue::is_iceberg(&t), partitions)))
}

/// `import migrate` of the Hive table `hive.sales` on Glue: the same name turns into an
/// Iceberg table at the same location that PyIceberg reads with every row pyarrow reads from
/// the partitions (one of them outside the location); the Hive definition is kept as the
/// backup `sales_backup_` with its five partitions, the original's partition entries are
/// gone, `migrated=true` and `gc.enabled=false` while the backup shares the files. Run again,
/// it says so and changes nothing; with `--drop-backup` the backup goes and `gc.enabled`
/// comes back.
#[tokio::test(flavor = "multi_thread")]
async fn a_glue_hive_table_is_migrated_in_place() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    let want = expected(p, &moto, &SALES);
    let handle = open("lake", p).await?;
    let glue = ops_import::glue::GlueClient::of(&handle).await?;

    let (table, m) = MigrateBuilder::new(&handle, "hive", "sales").await?;
    assert!(!m.already_migrated && m.add.files.len() == 5, "{m:?}");
    assert_eq!(m.partition_columns, ["region"]);
    assert_eq!(m.partitions_removed, 5);
    assert!(
        m.metadata_location
            .as_deref()
            .is_some_and(|l| l.starts_with("s3://lake/hive/sales/metadata/")),
        "{m:?}"
    );
    assert_eq!(table_property(&table, "migrated"), Some("true"));
    assert_eq!(table_property(&table, "gc.enabled"), Some("false"));
    assert_eq!(glue_state(&glue, "sales").await?, Some((true, 0)));
    assert_eq!(glue_state(&glue, "sales_backup_").await?, Some((false, 5)));
    assert_eq!(read(p, "hive.sales")?, want);
    // While the backup shares the files, expiry deletes none, and says how that ends.
    let err = ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(
        &handle,
        iceberg::TableIdent::from_strs(["hive", "sales"])?,
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("gc.enabled=false") && err.contains("--drop-backup"),
        "{err}"
    );

    let (_, again) = MigrateBuilder::new(&handle, "hive", "sales").await?;
    assert!(again.already_migrated && !again.backup_dropped, "{again:?}");
    assert_eq!(glue_state(&glue, "sales_backup_").await?, Some((false, 5)));

    let (table, dropped) = MigrateBuilder::new(&handle, "hive", "sales")
        .drop_backup(true)
        .await?;
    assert!(
        dropped.already_migrated && dropped.backup_dropped,
        "{dropped:?}"
    );
    assert_eq!(glue_state(&glue, "sales_backup_").await?, None);
    assert_eq!(table_property(&table, "gc.enabled"), Some("true"));
    assert_eq!(read(p, "hive.sales")?, want);
    Ok(())
}

/// A migration that fails (a file whose `id` is text where Glue says bigint) restores the
/// Hive table: it is still Hive with its partitions, no backup is left, and nothing was
/// written under its location's `metadata/`. A backup name taken by another table is refused
/// before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_migration_leaves_the_hive_table_as_it_was() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    pyiceberg(
        "lake",
        p,
        &format!(
            "{}import pyarrow as pa, pyarrow.parquet as pq\n\
             pq.write_table(pa.table({{'id': ['x']}}), 'lake/hive/sales/region=eu/bad.parquet', \
                            filesystem=fs)\n\
             emit(None)",
            s3fs(&moto)
        ),
    )?;
    let handle = open("lake", p).await?;
    let glue = ops_import::glue::GlueClient::of(&handle).await?;
    let err = MigrateBuilder::new(&handle, "hive", "sales")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("the migration went through"))?;
    assert!(err.to_string().contains("bad.parquet"), "{err}");
    assert_eq!(glue_state(&glue, "sales").await?, Some((false, 5)));
    assert_eq!(glue_state(&glue, "sales_backup_").await?, None);
    let left = pyiceberg(
        "lake",
        p,
        &format!(
            "{}import pyarrow.fs as pafs\n\
             emit([i.path for i in fs.get_file_info(pafs.FileSelector('lake/hive/sales/metadata', \
                   allow_not_found=True, recursive=True))])",
            s3fs(&moto)
        ),
    )?;
    assert_eq!(left, json!([]));

    glue_table(&moto, "taken", false);
    let err = MigrateBuilder::new(&handle, "hive", "sales")
        .backup_name("taken")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("the migration went through"))?;
    assert!(
        err.to_string().contains("not a backup of hive.sales"),
        "{err}"
    );
    assert_eq!(glue_state(&glue, "sales").await?, Some((false, 5)));
    Ok(())
}

/// The swap's answer lost: Glue applies the `UpdateTable`, and every attempt is answered 503
/// (a gateway whose upstream broke after the request was handled). The migration sees the
/// table swapped and finishes — it used to take the error for a refusal and "restore",
/// deleting the backup and the staged metadata the Iceberg table now pointed at.
#[tokio::test(flavor = "multi_thread")]
async fn a_migration_whose_swap_answer_is_lost_finishes() -> TestResult {
    use ops_tests::proxy::{Fault, FaultProxy};

    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    let want = expected(p, &moto, &SALES);
    let proxy = FaultProxy::start(moto.server.port);
    proxy.add(
        "POST",
        "x-amz-target:AWSGlue.UpdateTable",
        Fault::ForwardThenUnavailable,
        10,
    );
    let mut through_proxy = p.clone();
    through_proxy.insert("glue.endpoint".into(), proxy.url());
    let handle = open("lake", &through_proxy).await?;
    let (_, m) = MigrateBuilder::new(&handle, "hive", "sales").await?;
    assert!(!m.already_migrated && m.add.files.len() == 5, "{m:?}");
    let answered_503 = proxy
        .seen()
        .iter()
        .filter(|s| s.fault == Some(Fault::ForwardThenUnavailable))
        .count();
    assert!(answered_503 >= 1, "the fault was not applied");
    let glue = ops_import::glue::GlueClient::of(&open("lake", p).await?).await?;
    assert_eq!(glue_state(&glue, "sales").await?, Some((true, 0)));
    assert_eq!(glue_state(&glue, "sales_backup_").await?, Some((false, 5)));
    assert_eq!(read(p, "hive.sales")?, want);
    Ok(())
}

/// An unpartitioned Hive table migrates too: the stage's metadata, written under the table's
/// own location, is not taken for one of its data files (it was, and every such migration
/// failed reading a JSON file as Parquet).
#[tokio::test(flavor = "multi_thread")]
async fn an_unpartitioned_hive_table_is_migrated() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    glue_table(&moto, "flat", false);
    hive_file(p, &moto, "hive/flat/a.parquet", &[1, 2])?;
    hive_file(p, &moto, "hive/flat/b.parquet", &[3])?;
    let mut want = expected(p, &moto, &[("hive/flat", None)]);
    for r in want.as_array_mut().into_iter().flatten() {
        if let Some(o) = r.as_object_mut() {
            o.remove("region");
        }
    }
    let handle = open("lake", p).await?;
    let (_, m) = MigrateBuilder::new(&handle, "hive", "flat").await?;
    assert_eq!(m.add.files.len(), 2, "{m:?}");
    assert_eq!(m.add.hidden, 0, "{m:?}");
    assert_eq!(read(p, "hive.flat")?, want);
    Ok(())
}

/// A partition added to the Hive table while it is being migrated (Glue's VersionId does not
/// move with partition calls, so the swap's guard would not see it) stops the migration
/// before the swap: the Hive table keeps every partition, the new one too, and no backup is
/// left; run again, the migration takes the new partition's rows as well.
#[tokio::test(flavor = "multi_thread")]
async fn a_partition_added_during_a_migration_stops_it() -> TestResult {
    use ops_tests::proxy::{Fault, FaultProxy};

    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    // The late partition's file exists from the start (outside the table's location, so
    // only the partition added below makes it part of the table).
    hive_file(p, &moto, "late/ap.parquet", &[8])?;
    let proxy = FaultProxy::start(moto.server.port);
    // The backup's creation waits: the partition lands meanwhile.
    proxy.add(
        "POST",
        "x-amz-target:AWSGlue.CreateTable",
        Fault::Stall(std::time::Duration::from_secs(5)),
        1,
    );
    let mut through_proxy = p.clone();
    through_proxy.insert("glue.endpoint".into(), proxy.url());
    let handle = open("lake", &through_proxy).await?;
    let migration =
        tokio::spawn(async move { MigrateBuilder::new(&handle, "hive", "sales").await });
    // Added once the backup's creation is held (the proxy records a request before it stalls
    // it), not after a fixed time: on a loaded machine the migration may not have listed the
    // partitions yet after any given time, and would then migrate the late one too.
    let held = std::time::Instant::now();
    while !proxy.seen().iter().any(|s| s.fault.is_some()) {
        anyhow::ensure!(
            held.elapsed() < std::time::Duration::from_secs(120) && !migration.is_finished(),
            "the migration never reached the backup's creation"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    glue_partition(&moto, "sales", "ap", "s3://lake/late/");
    let err = migration
        .await?
        .err()
        .ok_or_else(|| anyhow::anyhow!("the migration went through"))?;
    assert!(err.to_string().contains("partitions changed"), "{err}");
    let glue = ops_import::glue::GlueClient::of(&open("lake", p).await?).await?;
    assert_eq!(glue_state(&glue, "sales").await?, Some((false, 6)));
    assert_eq!(glue_state(&glue, "sales_backup_").await?, None);

    let handle = open("lake", p).await?;
    let (_, m) = MigrateBuilder::new(&handle, "hive", "sales").await?;
    assert_eq!(m.add.files.len(), 6, "{m:?}");
    let parts: Vec<(&str, Option<&str>)> = SALES
        .iter()
        .copied()
        .chain([("late", Some("ap"))])
        .collect();
    assert_eq!(read(p, "hive.sales")?, expected(p, &moto, &parts));
    Ok(())
}

/// The copy path's staged table follows its Glue source: a partition dropped from Glue (its
/// files left in S3, as Hive leaves them) is staged anew without it, instead of copied from the
/// staged table's old list (a new-user trial copied the dropped partition's rows).
#[tokio::test(flavor = "multi_thread")]
async fn a_staged_glue_source_follows_a_dropped_partition() -> TestResult {
    use ops_import::staged::StageBuilder;

    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    let handle = open("lake", p).await?;
    let dir = tempfile::tempdir()?;
    let stage = || StageBuilder::new(&handle, vec!["glue:hive.sales".to_string()], dir.path());
    let first = stage().open().await?;
    assert!(first.created && first.added == 5, "{}", first.added);
    moto.glue(
        "BatchDeletePartition",
        &json!({"DatabaseName": "hive", "TableName": "sales",
                "PartitionsToDelete": [{"Values": ["us"]}]}),
    );
    let again = stage().open().await?;
    assert!(again.created && again.added == 4, "{}", again.added);
    let unchanged = stage().open().await?;
    assert!(!unchanged.created && unchanged.added == 0);
    Ok(())
}

/// Two runs of one migration: a backup another run made (here: on another host, just now) is
/// left alone and the second run refused, not deleted as a stopped run's would be (a new-user
/// trial's second process deleted the first's backup). A backup is no table to migrate.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_migration_leaves_the_first_ones_backup_alone() -> TestResult {
    let (moto, p) = hive_on_moto();
    let p = &p;
    sales_table(p, &moto)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis();
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "hive", "TableInput": {"Name": "sales_backup_",
            "TableType": "EXTERNAL_TABLE",
            "StorageDescriptor": storage("s3://lake/hive/sales/", PARQUET_IN, PARQUET_SERDE),
            "PartitionKeys": [{"Name": "region", "Type": "string"}],
            "Parameters": {"iceberg-ops.backup-of": "hive.sales",
                           "iceberg-ops.backup-run": format!("elsewhere:1:{now}")}}}),
    );
    let handle = open("lake", p).await?;
    let glue = ops_import::glue::GlueClient::of(&handle).await?;
    let err = MigrateBuilder::new(&handle, "hive", "sales")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("the second run went through"))?;
    assert!(err.to_string().contains("may be running"), "{err}");
    assert_eq!(glue_state(&glue, "sales").await?, Some((false, 5)));
    assert!(glue_state(&glue, "sales_backup_").await?.is_some());
    let err = MigrateBuilder::new(&handle, "hive", "sales_backup_")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a backup was migrated"))?;
    assert!(
        err.to_string().contains("is the backup of hive.sales"),
        "{err}"
    );
    Ok(())
}
