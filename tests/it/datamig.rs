//! DataMigrator on the embedded SQLite catalog, destination contents confirmed by PyIceberg.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use iceberg::spec::{NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogHandle;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::markers::running_migrations;
use ops_core::ops::rollback::RollbackBuilder;
use ops_datamig::{
    CopyMode, DataMigrator, MIGRATION_BATCH_PROPERTY, MIGRATION_JOB_PROPERTY, MigrationError,
    RowFilter, VerifyMethod, WriteMode,
};
use ops_maintenance::remove_orphans::RemoveOrphansBuilder;
use ops_reconcile::SchemaReconciler;
use serde_json::{Value, json};

use crate::common::*;

type Row = (i64, Option<&'static str>, Option<i32>);
/// (rows_done, rows_total_or_none) as the progress callback saw them.
type ProgressCall = (u64, Option<u64>);

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

const REGIONS: [&str; 3] = ["us", "eu", "apac"];

/// `n` rows: id i, region cycling, amount i * 10 (null every 7th row when `nulls`).
fn rows(n: i64, nulls: bool) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let amount = (!(nulls && i % 7 == 3)).then_some(i as i32 * 10);
            (i, Some(REGIONS[(i % 3) as usize]), amount)
        })
        .collect()
}

/// src.orders holding `data` in two appends (so two snapshots).
async fn source(handle: &CatalogHandle, data: &[Row]) -> anyhow::Result<Table> {
    let table = create_orders(handle, "src").await?;
    let (first, second) = data.split_at(data.len() / 2);
    let mut table = table;
    for part in [first, second] {
        let batch = orders_batch(&table, part)?;
        let files =
            ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)])).await?;
        table = AppendBuilder::new(handle, table.identifier().clone())
            .with_files(files)
            .await?
            .0;
    }
    Ok(table)
}

/// `ns.orders` as (id long required, region string, total <total>), identity(region).
async fn dest(handle: &CatalogHandle, ns: &str, total: PrimitiveType) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let ns = NamespaceIdent::new(ns.to_string());
    catalog.create_namespace(&ns, HashMap::new()).await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(3, "total", Type::Primitive(total)).into(),
        ])
        .build()?;
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "region", Transform::Identity)?
        .build();
    Ok(catalog
        .create_table(
            &ns,
            TableCreation::builder()
                .name("orders".into())
                .schema(schema)
                .partition_spec(spec)
                .build(),
        )
        .await?)
}

fn ident(ns: &str) -> anyhow::Result<TableIdent> {
    Ok(TableIdent::from_strs([ns, "orders"])?)
}

fn total_json(data: &[Row]) -> Vec<Value> {
    let mut out: Vec<Value> = data
        .iter()
        .map(|(id, region, amount)| json!({"id": id, "region": region, "total": amount}))
        .collect();
    sort_rows(&mut out);
    out
}

fn pyiceberg_rows(
    py: &BTreeMap<String, String>,
    table: &str,
) -> anyhow::Result<(Vec<Value>, Value)> {
    let out = ops_tests::oracle::pyiceberg(
        "lake",
        py,
        &format!(
            "t = catalog.load_table('{table}')\nemit({{'rows': rows(t), 'desc': describe(t)}})"
        ),
    )?;
    let mut r = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut r);
    Ok((r, out["desc"].clone()))
}

async fn current(handle: &CatalogHandle, ns: &str) -> anyhow::Result<Option<i64>> {
    Ok(handle
        .catalog()
        .load_table(&ident(ns)?)
        .await?
        .metadata()
        .current_snapshot_id())
}

fn migrator(handle: &CatalogHandle) -> anyhow::Result<DataMigrator> {
    Ok(
        DataMigrator::new(handle, ident("src")?, handle, ident("dst")?)
            .schema_reconciler(SchemaReconciler::new().rename("amount", "total")),
    )
}

fn edit_checkpoint(path: &std::path::Path, f: impl FnOnce(&mut Value)) -> anyhow::Result<()> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path)?)?;
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v)?)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn append_with_rename_widen_and_filter_then_verify() -> TestResult {
    append_rename_widen_filter_verify(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn append_with_rename_widen_and_filter_then_verify_on_postgres() -> TestResult {
    append_rename_widen_filter_verify(SqlCatalog::postgres()?).await
}

async fn append_rename_widen_filter_verify(db: SqlCatalog) -> TestResult {
    let (dir, py) = (&db.dir, db.props.clone());
    let handle = open("lake", &py).await?;
    let data = rows(23, true);
    source(&handle, &data).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let checkpoint = dir.path().join("job.json");
    let calls: Arc<Mutex<Vec<ProgressCall>>> = Arc::default();
    let seen = calls.clone();
    // Rewrite: this test is about cutting batches (a file copy would move whole files).
    let mut m = migrator(&handle)?
        .copy_mode(CopyMode::Rewrite)
        .row_filter("region <> 'apac'")
        .batch_rows(5)
        .checkpoint(&checkpoint)
        .progress(move |done, total| seen.lock().map(|mut v| v.push((done, total))).unwrap_or(()));
    let result = m.run().await?;
    let want: Vec<Row> = data
        .iter()
        .filter(|r| r.1 != Some("apac"))
        .copied()
        .collect();
    assert_eq!(result.rows_moved, want.len() as u64);
    assert_eq!(result.new_snapshots.len(), want.len().div_ceil(5));
    assert_eq!(result.dest_snapshot_before, None);
    assert!(!result.dry_run && result.bytes_moved > 0);
    assert_eq!(
        calls
            .lock()
            .map(|v| v.last().map(|c| c.0))
            .unwrap_or_default(),
        Some(want.len() as u64)
    );

    // PyIceberg reads the same rows, and every snapshot carries the job and its batch index.
    let (got, desc) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&want));
    let job = result.job_id.clone().unwrap_or_default();
    for (i, id) in result.new_snapshots.iter().enumerate() {
        let snap = desc["snapshots"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["id"] == json!(id)).cloned())
            .unwrap_or(Value::Null);
        assert_eq!(
            snap["summary"][MIGRATION_JOB_PROPERTY],
            json!(job),
            "{desc}"
        );
        assert_eq!(
            snap["summary"][MIGRATION_BATCH_PROPERTY],
            json!(i.to_string())
        );
    }
    let cp: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    assert_eq!(cp["completed"], true);
    assert_eq!(
        cp["last_committed_batch"],
        json!(result.new_snapshots.len() - 1)
    );
    assert_eq!(cp["dest_snapshot_ids"], json!(result.new_snapshots));

    for method in [
        VerifyMethod::RowCount,
        VerifyMethod::PartitionHash,
        VerifyMethod::Sample,
    ] {
        let v = m.verify(method, 3).await?;
        assert!(v.matches, "{method}: {v:?}");
        assert_eq!(v.source_count, Some(want.len() as u64), "{method}");
    }
    let v = m.verify(VerifyMethod::Sample, 1000).await?;
    assert!(
        v.matches && v.sample_size == Some(want.len() as u64),
        "{v:?}"
    );

    // A completed checkpoint is not run again.
    let err = m.run().await.err();
    assert!(
        matches!(&err, Some(MigrationError::Resume { reason, .. }) if reason.contains("completed")),
        "{err:?}"
    );

    // One changed row: every method notices, partition_hash names its partition.
    let dst = handle.catalog().load_table(&ident("dst")?).await?;
    let extra = {
        let schema = ops_core::write::table_arrow_schema(&dst)?;
        arrow_array::RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![1000])),
                Arc::new(arrow_array::StringArray::from(vec!["eu"])),
                Arc::new(arrow_array::Int64Array::from(vec![1])),
            ],
        )?
    };
    let files = ops_core::write::write_data_files(&dst, futures::stream::iter([Ok(extra)])).await?;
    AppendBuilder::new(&handle, ident("dst")?)
        .with_files(files)
        .await?;
    let v = m.verify(VerifyMethod::RowCount, 1).await?;
    assert!(
        !v.matches && v.dest_count == Some(want.len() as u64 + 1),
        "{v:?}"
    );
    let v = m.verify(VerifyMethod::PartitionHash, 1).await?;
    assert!(!v.matches, "{v:?}");
    assert_eq!(v.mismatched_partitions, vec!["region=eu".to_string()]);
    let v = m.verify(VerifyMethod::Sample, 1000).await?;
    assert!(!v.matches, "{v:?}");
    Ok(())
}

/// Two migrations append into one table at once, each through a catalog handle of its own as two
/// `migrate-data` processes would: their commits race, and every batch of both lands exactly
/// once, tagged with its job, with the catalog's default retry settings.
#[tokio::test(flavor = "multi_thread")]
async fn two_migrations_appending_into_one_table_at_once_lose_nothing() -> TestResult {
    two_migrations_into_one_table(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_migrations_appending_into_one_table_at_once_on_postgres() -> TestResult {
    two_migrations_into_one_table(SqlCatalog::postgres()?).await
}

async fn two_migrations_into_one_table(db: SqlCatalog) -> TestResult {
    let (dir, py) = (&db.dir, db.props.clone());
    let setup = open("lake", &py).await?;
    let data = rows(30, true);
    source(&setup, &data).await?;
    dest(&setup, "dst", PrimitiveType::Long).await?;
    let job = |filter: &'static str, checkpoint: std::path::PathBuf| {
        let py = py.clone();
        async move {
            let handle = open("lake", &py).await?;
            let result = migrator(&handle)?
                .copy_mode(CopyMode::Rewrite)
                .row_filter(filter)
                .batch_rows(2)
                .checkpoint(&checkpoint)
                .run()
                .await?;
            anyhow::Ok(result)
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(job("region = 'us'", dir.path().join("a.json"))),
        tokio::spawn(job("region <> 'us'", dir.path().join("b.json")))
    );
    let (a, b) = (a??, b??);
    assert_eq!(a.rows_moved + b.rows_moved, data.len() as u64);
    let (got, desc) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&data), "a row was lost or duplicated");
    let snapshots = desc["snapshots"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        snapshots.len(),
        a.new_snapshots.len() + b.new_snapshots.len(),
        "{desc}"
    );
    for result in [&a, &b] {
        let job = result.job_id.clone().unwrap_or_default();
        for id in &result.new_snapshots {
            let snap = snapshots.iter().find(|s| s["id"] == json!(id));
            assert_eq!(
                snap.map(|s| s["summary"][MIGRATION_JOB_PROPERTY].clone()),
                Some(json!(job)),
                "snapshot {id} of job {job}: {desc}"
            );
        }
        let cp_path = result.checkpoint_path.clone().unwrap_or_default();
        let cp: Value = serde_json::from_slice(&std::fs::read(&cp_path)?)?;
        assert_eq!(cp["completed"], true, "{}", cp_path.display());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_before_any_write() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    source(&handle, &rows(6, false)).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let checkpoint = dir.path().join("cp.json");
    let cases: Vec<(DataMigrator, &str)> = vec![
        (migrator(&handle)?.batch_rows(0), "batch_rows"),
        (
            migrator(&handle)?.write_mode(WriteMode::Upsert),
            "needs upsert_keys",
        ),
        (
            migrator(&handle)?.upsert_keys(["id"]),
            "only used by write_mode upsert",
        ),
        (
            migrator(&handle)?
                .write_mode(WriteMode::Upsert)
                .upsert_keys(["id", "id"]),
            "listed twice",
        ),
        (
            migrator(&handle)?
                .write_mode(WriteMode::Upsert)
                .upsert_keys([" "]),
            "blank",
        ),
        (
            migrator(&handle)?
                .write_mode(WriteMode::Upsert)
                .upsert_keys(["nope"]),
            "upsert key 'nope'",
        ),
        (
            DataMigrator::new(&handle, ident("src")?, &handle, ident("src")?),
            "same table",
        ),
        (
            DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?)
                .schema_reconciler(SchemaReconciler::new().rename("ghost", "total")),
            "'ghost' names no source column",
        ),
        (
            DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?),
            "has no source column",
        ),
        (migrator(&handle)?.row_filter("nope = 1"), "nope"),
        (migrator(&handle)?.source_snapshot(42), "no snapshot 42"),
        (
            migrator(&handle)?.row_filter(RowFilter::Expression("id >".into())),
            "filter",
        ),
    ];
    for (m, expect) in cases {
        let err = m.checkpoint(&checkpoint).run().await.err();
        let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains(expect), "expected '{expect}', got {err:?}");
        assert_eq!(
            current(&handle, "dst").await?,
            None,
            "{expect}: nothing written"
        );
        assert!(!checkpoint.exists(), "{expect}: no checkpoint started");
    }
    Ok(())
}

/// A table the catalog does not have is "cannot load" (the CLI then names the catalog's flag);
/// one it has whose metadata cannot be read is "cannot read", with the cause, not a hint to
/// check the name.
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_table_and_an_unreadable_one_are_told_apart() -> TestResult {
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    let src = source(&handle, &rows(6, false)).await?;
    let run = |source: &str| -> anyhow::Result<DataMigrator> {
        Ok(DataMigrator::new(&handle, ident(source)?, &handle, ident("dst")?).create_dest(true))
    };
    let missing = run("nope")?.run().await.err().map(|e| e.to_string());
    assert!(
        missing
            .as_deref()
            .is_some_and(|m| m.contains("cannot load table nope.orders (catalog 'lake')")),
        "{missing:?}"
    );
    let metadata = src
        .metadata_location()
        .and_then(|l| l.strip_prefix("file://").map(str::to_string))
        .unwrap_or_default();
    std::fs::remove_file(&metadata)?;
    let unreadable = run("src")?.run().await.err().map(|e| e.to_string());
    assert!(
        unreadable
            .as_deref()
            .is_some_and(|m| m.contains("cannot read table src.orders (catalog 'lake')")),
        "{unreadable:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_reads_through_the_plan_and_writes_nothing() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    source(&handle, &rows(10, false)).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let checkpoint = dir.path().join("cp.json");
    let result = migrator(&handle)?
        .dry_run(true)
        .checkpoint(&checkpoint)
        .row_filter("id >= 4")
        .run()
        .await?;
    assert!(result.dry_run);
    assert_eq!(result.estimated_rows, Some(6));
    assert!(result.estimated_bytes.unwrap_or(0) > 0);
    assert!(result.new_snapshots.is_empty() && result.rows_moved == 0);
    assert_eq!(current(&handle, "dst").await?, None);
    assert!(!checkpoint.exists());
    Ok(())
}

/// `bytes_moved` counts the rows of each chunk written (a batch cut out of a larger read batch
/// counts its own rows, as the dry run's estimate does), and a widened column is a schema change.
#[tokio::test(flavor = "multi_thread")]
async fn counters_count_written_bytes_and_widened_columns() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    source(&handle, &rows(1000, true)).await?;
    dest(&handle, "dst", PrimitiveType::Int).await?;
    let job = |dry: bool| -> anyhow::Result<DataMigrator> {
        Ok(
            DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?)
                .schema_reconciler(
                    SchemaReconciler::new()
                        .rename("amount", "total")
                        .coerce("total", Type::Primitive(PrimitiveType::Long)),
                )
                .copy_mode(CopyMode::Rewrite)
                .batch_rows(100)
                .dry_run(dry),
        )
    };
    let estimate = job(true)?.run().await?;
    let estimated = estimate.estimated_bytes.unwrap_or_default();
    let result = job(false)?.run().await?;
    assert_eq!(result.rows_moved, 1000);
    assert_eq!(result.schema_changes, vec!["total".to_string()]);
    // Ten 100-row chunks cut from two 500-row reads: within a few bytes of the estimate
    // (bitmaps and offsets per chunk), not five times it.
    assert!(
        result.bytes_moved > 0 && result.bytes_moved.abs_diff(estimated) * 20 < estimated,
        "bytes_moved {} against an estimate of {estimated}",
        result.bytes_moved
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_records_landed_batches_and_refuses_a_rolled_back_destination() -> TestResult {
    resume_after_crashes(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_records_landed_batches_and_refuses_a_rolled_back_destination_on_postgres()
-> TestResult {
    resume_after_crashes(SqlCatalog::postgres()?).await
}

/// Issue 31, failure 3, in the library: a job stopped between its completion record and its
/// checkpoint's mark (played by unmarking the checkpoint of a finished job), whose snapshots
/// were then expired after two commits of another writer (so its last batch is neither the
/// current snapshot nor its parent). `run` refuses it as the completed job it is (the seed's
/// `CheckpointError`), advising no undoing, instead of as a rolled-back destination;
/// `finished` reports it complete from its completion record and marks the checkpoint.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_over_whose_snapshots_were_expired_is_reported_complete() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("lake", &db.props).await?;
    source(&handle, &rows(12, false)).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let checkpoint = db.dir.path().join("cp.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .copy_mode(CopyMode::Rewrite)
            .batch_rows(4)
            .checkpoint(&checkpoint))
    };
    let first = job()?.run().await?;
    assert!(first.new_snapshots.len() > 1, "{first:?}");
    edit_checkpoint(&checkpoint, |v| v["completed"] = json!(false))?;
    for id in [1000, 1001] {
        let dst = handle.catalog().load_table(&ident("dst")?).await?;
        let batch = arrow_array::RecordBatch::try_new(
            ops_core::write::table_arrow_schema(&dst)?,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![id])),
                Arc::new(arrow_array::StringArray::from(vec!["eu"])),
                Arc::new(arrow_array::Int64Array::from(vec![1])),
            ],
        )?;
        let files =
            ops_core::write::write_data_files(&dst, futures::stream::iter([Ok(batch)])).await?;
        AppendBuilder::new(&handle, ident("dst")?)
            .with_files(files)
            .await?;
    }
    // Every snapshot but the current one (the first append's too: its parent id names the
    // job's last batch, which would still count as in the history).
    let dst = handle.catalog().load_table(&ident("dst")?).await?;
    let md = dst.metadata();
    let older: Vec<i64> = md
        .snapshots()
        .map(|s| s.snapshot_id())
        .filter(|id| Some(*id) != md.current_snapshot_id())
        .collect();
    ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, ident("dst")?)
        .snapshot_ids(older)
        .await?;

    let err = job()?.run().await.err();
    let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(
        matches!(&err, Some(MigrationError::Resume { job_done: true, .. }))
            && msg.contains("completion record")
            && msg.contains("the job is done")
            && !msg.contains("rolled back")
            && !msg.contains("--where true"),
        "{msg}"
    );
    let done = job()?.finished().await?;
    let Some(MigrationError::AlreadyComplete {
        why,
        source_snapshots: Some(source),
        ..
    }) = &done
    else {
        anyhow::bail!("want the job complete: {done:?}");
    };
    assert!(why.contains("completion record"), "{why}");
    assert!(
        !source.changed() && source.read_snapshot_id == first.source_snapshot_id,
        "{source:?}"
    );
    let cp: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    assert_eq!(cp["completed"], true, "{cp}");
    // Marked now: `run` refuses it as any completed checkpoint, `finished` still reports it.
    assert!(matches!(
        job()?.run().await,
        Err(MigrationError::Resume { job_done: true, .. })
    ));
    assert!(matches!(
        job()?.finished().await?,
        Some(MigrationError::AlreadyComplete { .. })
    ));
    Ok(())
}

async fn resume_after_crashes(db: SqlCatalog) -> TestResult {
    let (dir, py) = (&db.dir, db.props.clone());
    let handle = open("lake", &py).await?;
    let data = rows(13, false);
    source(&handle, &data).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let checkpoint = dir.path().join("cp.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .copy_mode(CopyMode::Rewrite)
            .batch_rows(4)
            .checkpoint(&checkpoint))
    };
    let first = job()?.run().await?;
    let snaps = first.new_snapshots.clone();
    assert_eq!(snaps.len(), 4);

    // Crash after every batch landed but only batch 0 was checkpointed: the rest are found by
    // their summary tags and recorded, not written again.
    edit_checkpoint(&checkpoint, |v| {
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(0);
        v["dest_snapshot_ids"] = json!([snaps[0]]);
    })?;
    let again = job()?.run().await?;
    // Batch 0 skipped (checkpointed); 1-3 recorded as landed, not "skipped".
    assert_eq!(
        (
            again.rows_moved,
            again.batches_skipped,
            again.batches_committed,
            again.batches_landed
        ),
        (0, 1, 3, 3)
    );
    assert!(again.new_snapshots.is_empty());
    assert_eq!(current(&handle, "dst").await?, Some(snaps[3]));
    let cp: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    assert_eq!(cp["dest_snapshot_ids"], json!(snaps));
    assert_eq!(cp["completed"], true);

    // Crash after batch 1: batches 2 and 3 never landed. The resume writes exactly them.
    RollbackBuilder::to_snapshot(&handle, ident("dst")?, snaps[1]).await?;
    edit_checkpoint(&checkpoint, |v| {
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(1);
        v["dest_snapshot_ids"] = json!([snaps[0], snaps[1]]);
    })?;
    let resumed = job()?.run().await?;
    assert_eq!(resumed.rows_moved, 5);
    assert_eq!(resumed.batches_landed, 0);
    assert_eq!(resumed.new_snapshots.len(), 2);
    assert_eq!(resumed.dest_snapshot_before, None);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&data), "no row lost or duplicated");

    // The destination rolled back under the checkpoint: refused, naming the rollback target.
    RollbackBuilder::to_snapshot(&handle, ident("dst")?, snaps[0]).await?;
    edit_checkpoint(&checkpoint, |v| v["completed"] = json!(false))?;
    let err = job()?.run().await.err();
    let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        matches!(err, Some(MigrationError::Resume { .. }))
            && msg.contains("rolled back")
            && msg.contains("empty the destination, which had no snapshot before the job"),
        "{msg}"
    );
    assert_eq!(
        current(&handle, "dst").await?,
        Some(snaps[0]),
        "nothing written"
    );

    // Different settings: refused, naming the setting.
    RollbackBuilder::set_current_snapshot(&handle, ident("dst")?, snaps[1]).await?;
    edit_checkpoint(&checkpoint, |v| {
        v["last_committed_batch"] = json!(1);
        v["dest_snapshot_ids"] = json!([snaps[0], snaps[1]]);
    })?;
    let err = migrator(&handle)?
        .batch_rows(5)
        .checkpoint(&checkpoint)
        .run()
        .await
        .err();
    let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("different settings") && msg.contains("batch_rows"),
        "{msg}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_partition_replaces_on_first_touch_then_adds() -> TestResult {
    overwrite_partition(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_partition_replaces_on_first_touch_then_adds_on_postgres() -> TestResult {
    overwrite_partition(SqlCatalog::postgres()?).await
}

async fn overwrite_partition(db: SqlCatalog) -> TestResult {
    let py = db.props.clone();
    let handle = open("lake", &py).await?;
    let data = rows(18, false);
    source(&handle, &data).await?;
    let dst = dest(&handle, "dst", PrimitiveType::Long).await?;
    // The destination already holds eu and us rows.
    let before = {
        let schema = ops_core::write::table_arrow_schema(&dst)?;
        arrow_array::RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![900, 901])),
                Arc::new(arrow_array::StringArray::from(vec!["eu", "us"])),
                Arc::new(arrow_array::Int64Array::from(vec![1, 2])),
            ],
        )?
    };
    let files =
        ops_core::write::write_data_files(&dst, futures::stream::iter([Ok(before)])).await?;
    AppendBuilder::new(&handle, ident("dst")?)
        .with_files(files)
        .await?;

    let result = migrator(&handle)?
        .write_mode(WriteMode::OverwritePartition)
        .row_filter("region = 'eu'")
        .batch_rows(2)
        .run()
        .await?;
    let eu: Vec<Row> = data.iter().filter(|r| r.1 == Some("eu")).copied().collect();
    // Batches do not span tasks: each of the two source appends holds 3 eu rows in a file of
    // its own, and each file yields batches of 2 + 1 rows.
    assert_eq!(eu.len(), 6);
    assert_eq!(result.new_snapshots.len(), 4);
    assert_eq!(result.batches_committed, 4);
    let mut want = total_json(&eu);
    want.push(json!({"id": 901, "region": "us", "total": 2}));
    sort_rows(&mut want);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, want);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_error_mid_stream_keeps_committed_batches_resumable() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    // total is required in the destination; one source row has a null amount.
    let data: Vec<Row> = (0..9)
        .map(|i| (i, Some("eu"), (i != 7).then_some(i as i32)))
        .collect();
    source(&handle, &data).await?;
    let catalog = handle.catalog();
    let ns = NamespaceIdent::new("dst".to_string());
    catalog.create_namespace(&ns, HashMap::new()).await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::required(3, "total", Type::Primitive(PrimitiveType::Int)).into(),
        ])
        .build()?;
    catalog
        .create_table(
            &ns,
            TableCreation::builder()
                .name("orders".into())
                .schema(schema)
                .build(),
        )
        .await?;
    let checkpoint = dir.path().join("cp.json");
    let err = migrator(&handle)?
        .batch_rows(2)
        .checkpoint(&checkpoint)
        .run()
        .await
        .err();
    let Some(MigrationError::Batch {
        batch,
        committed_batches,
        ..
    }) = &err
    else {
        anyhow::bail!("expected a batch error, got {err:?}");
    };
    assert_eq!(batch, committed_batches);
    let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("'total'") && msg.contains("required"), "{msg}");
    let cp: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    let committed = cp["dest_snapshot_ids"].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(committed, *committed_batches);
    let dst = catalog.load_table(&ident("dst")?).await?;
    assert_eq!(scan_json(&dst).await?.len() as u64, committed * 2);
    Ok(())
}

fn dest_batch(
    table: &Table,
    rows: &[(i64, &str, i64)],
) -> anyhow::Result<arrow_array::RecordBatch> {
    Ok(arrow_array::RecordBatch::try_new(
        ops_core::write::table_arrow_schema(table)?,
        vec![
            Arc::new(arrow_array::Int64Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(arrow_array::StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(arrow_array::Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )?)
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_inserts_updates_and_leaves_unchanged_rows_alone() -> TestResult {
    upsert(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_inserts_updates_and_leaves_unchanged_rows_alone_on_postgres() -> TestResult {
    upsert(SqlCatalog::postgres()?).await
}

async fn upsert(db: SqlCatalog) -> TestResult {
    let py = db.props.clone();
    let handle = open("lake", &py).await?;
    let data = rows(12, false);
    source(&handle, &data).await?;
    let dst = dest(&handle, "dst", PrimitiveType::Long).await?;
    // ids 0-2 as in the source, 3-5 with other totals; 6-11 are new.
    let held: Vec<(i64, &str, i64)> = data[..6]
        .iter()
        .map(|r| {
            let total = if r.0 < 3 {
                i64::from(r.2.unwrap_or(0))
            } else {
                999
            };
            (r.0, r.1.unwrap_or(""), total)
        })
        .collect();
    let files = ops_core::write::write_data_files(
        &dst,
        futures::stream::iter([Ok(dest_batch(&dst, &held)?)]),
    )
    .await?;
    AppendBuilder::new(&handle, ident("dst")?)
        .with_files(files)
        .await?;

    let upsert = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .write_mode(WriteMode::Upsert)
            .upsert_keys(["id"])
            .batch_rows(4))
    };
    let result = upsert()?.run().await?;
    assert_eq!(
        (result.rows_inserted, result.rows_updated),
        (Some(6), Some(3))
    );
    // One commit per chunk at most: the chunk holding only unchanged rows commits nothing.
    assert!(
        result.new_snapshots.len() <= 3,
        "{:?}",
        result.new_snapshots
    );
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&data));
    // The marker its first write set gave way to the completion record.
    let done = handle.catalog().load_table(&ident("dst")?).await?;
    let job = result.job_id.clone().unwrap_or_default();
    assert!(ops_core::ops::markers::completed_at(done.metadata(), &job).is_some());
    assert!(ops_core::ops::markers::running_migrations(done.metadata()).is_empty());

    // Again: nothing changed, nothing committed — not even a metadata file (issue 32: the
    // running marker and the completion record each wrote one).
    let before = current(&handle, "dst").await?;
    let location = |t: iceberg::table::Table| t.metadata_location().map(str::to_string);
    let metadata_before = location(handle.catalog().load_table(&ident("dst")?).await?);
    let again = upsert()?.run().await?;
    assert_eq!(
        (again.rows_inserted, again.rows_updated),
        (Some(0), Some(0))
    );
    assert!(again.new_snapshots.is_empty());
    assert_eq!(current(&handle, "dst").await?, before);
    let after = handle.catalog().load_table(&ident("dst")?).await?;
    assert!(
        ops_core::ops::markers::running_migrations(after.metadata()).is_empty(),
        "{:?}",
        after.metadata().properties()
    );
    assert_eq!(location(after), metadata_before);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_refuses_a_duplicate_key_inside_a_chunk() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    let mut data = rows(6, false);
    data.push((4, Some("us"), Some(1)));
    source(&handle, &data).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let err = migrator(&handle)?
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .batch_rows(100)
        .run()
        .await
        .err();
    let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        // Refused by the key pre-pass, before any batch is written, as batch 0's failure.
        matches!(err, Some(MigrationError::Batch { batch: 0, .. }))
            && msg.contains("key (4) twice")
            && msg.contains("no batch was committed"),
        "{msg}"
    );
    assert_eq!(current(&handle, "dst").await?, None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn create_dest_builds_the_reconciled_table_with_source_ids_and_spec() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let data = rows(9, true);
    source(&handle, &data).await?;
    let m = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .schema_reconciler(
                SchemaReconciler::new()
                    .rename("amount", "total")
                    .coerce("total", Type::Primitive(PrimitiveType::Long)),
            )
            .batch_rows(4))
    };
    let err = m()?.run().await.err();
    let msg = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("does not exist") && msg.contains("create_dest"),
        "{msg}"
    );
    let dry = m()?.create_dest(true).dry_run(true).run().await?;
    assert_eq!(dry.estimated_rows, Some(9));
    // The dry run reports the copy mode it was given, not the default.
    let dry_rewrite = m()?
        .create_dest(true)
        .dry_run(true)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert_eq!(dry_rewrite.copy_mode, CopyMode::Rewrite);
    assert!(
        !handle.catalog().table_exists(&ident("dst")?).await?,
        "a dry run creates nothing"
    );

    let mut run = m()?.create_dest(true);
    let result = run.run().await?;
    assert_eq!(result.rows_moved, 9);
    let (got, desc) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&data));
    assert_eq!(
        desc["schema"],
        json!([
            {"id": 1, "name": "id", "type": "long", "required": true},
            {"id": 2, "name": "region", "type": "string", "required": false},
            {"id": 3, "name": "total", "type": "long", "required": false},
        ])
    );
    assert_eq!(desc["spec"][0]["source_id"], 2);
    assert!(run.verify(VerifyMethod::PartitionHash, 10).await?.matches);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_renamed_and_widened_after_writing_is_read_by_field_id() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let data = rows(10, true);
    // Both source files are written as (amount int); then the column becomes (qty long).
    source(&handle, &data).await?;
    ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(&handle, ident("src")?)
        .rename_column("amount", "qty")
        .widen_column("qty", PrimitiveType::Long)
        .await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let mut m = DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?)
        .schema_reconciler(SchemaReconciler::new().rename("qty", "total"))
        .row_filter("qty >= 30")
        .batch_rows(3);
    let result = m.run().await?;
    let want: Vec<Row> = data
        .iter()
        .filter(|r| r.2.is_some_and(|a| a >= 30))
        .copied()
        .collect();
    assert_eq!(result.rows_moved, want.len() as u64);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&want));
    assert!(m.verify(VerifyMethod::PartitionHash, 10).await?.matches);
    Ok(())
}

/// The default copy mode moves whole files when the destination differs only by a rename and a
/// widening with the same field ids: PyIceberg reads the copy as the rows the rewrite would
/// have written, a partition filter skips files, a dry run reports the routes, a resume after a
/// crash records copied batches instead of copying again, and reference mode shares the
/// source's paths.
#[tokio::test(flavor = "multi_thread")]
async fn auto_copies_whole_files_and_resumes_without_copying_twice() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let data = rows(23, true);
    let src = source(&handle, &data).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let want: Vec<Row> = data
        .iter()
        .filter(|r| r.1 != Some("apac"))
        .copied()
        .collect();

    // Dry run: the routes, nothing written.
    let dry = migrator(&handle)?
        .row_filter("region <> 'apac'")
        .dry_run(true)
        .run()
        .await?;
    assert_eq!(
        (dry.files_copied, dry.files_rewritten),
        (4, 0),
        "{:?}",
        dry.files
    );
    assert_eq!(dry.files.len(), 6);
    assert_eq!(
        dry.files
            .iter()
            .filter(|f| f.route == ops_datamig::FileRoute::Skip)
            .count(),
        2
    );
    assert_eq!(current(&handle, "dst").await?, None);

    let checkpoint = dir.path().join("copy.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .row_filter("region <> 'apac'")
            .batch_rows(4)
            .checkpoint(&checkpoint))
    };
    let first = job()?.run().await?;
    assert_eq!((first.files_copied, first.files_rewritten), (4, 0));
    assert_eq!(first.rows_moved, want.len() as u64);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&want));
    let source_paths: HashSet<String> = ops_datamig_live_paths(&src).await?;
    let dst = handle.catalog().load_table(&ident("dst")?).await?;
    let copied = ops_datamig_live_paths(&dst).await?;
    assert_eq!(copied.len(), 4);
    assert!(
        copied.is_disjoint(&source_paths),
        "copies get paths of their own"
    );
    assert!(
        copied
            .iter()
            .all(|p| p.starts_with(dst.metadata().location())),
        "{copied:?}"
    );

    // Crash after the first copy batch was checkpointed: the rest landed and are recorded.
    let snaps = first.new_snapshots.clone();
    assert!(snaps.len() >= 2, "{snaps:?}");
    edit_checkpoint(&checkpoint, |v| {
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(0);
        v["dest_snapshot_ids"] = json!([snaps[0]]);
    })?;
    let again = job()?.run().await?;
    assert!(again.new_snapshots.is_empty());
    assert_eq!(again.rows_moved, 0);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&want), "nothing copied twice");

    // Reference: the destination's files are the source's.
    dest(&handle, "refd", PrimitiveType::Long).await?;
    let referenced = DataMigrator::new(&handle, ident("src")?, &handle, ident("refd")?)
        .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
        .copy_mode(CopyMode::Reference)
        .run()
        .await?;
    assert_eq!(referenced.files_referenced, 6);
    let refd = handle.catalog().load_table(&ident("refd")?).await?;
    // The job marked the destination before its first batch landed and unmarked it at the end.
    assert!(
        running_migrations(refd.metadata()).is_empty(),
        "marker left"
    );
    let job = referenced.job_id.clone().unwrap_or_default();
    let marked_batches = marked_snapshots(&refd, &job).await?;
    assert!(
        !marked_batches.is_empty() && marked_batches.iter().all(|(_, marked)| *marked),
        "a batch landed without the job's marker: {marked_batches:?}"
    );
    assert_eq!(ops_datamig_live_paths(&refd).await?, source_paths);
    let (got, _) = pyiceberg_rows(&py, "refd.orders")?;
    assert_eq!(got, total_json(&data));
    // It shares the source's files: gc.enabled=false, so expiry deletes none of them.
    assert_eq!(
        refd.metadata()
            .properties()
            .get("gc.enabled")
            .map(String::as_str),
        Some("false")
    );
    let dst_now = handle.catalog().load_table(&ident("dst")?).await?;
    assert_eq!(dst_now.metadata().properties().get("gc.enabled"), None);
    let err =
        ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, ident("refd")?)
            .retain_last(1)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
    assert!(
        err.contains("deleting files may corrupt other tables"),
        "{err}"
    );
    // The same through a plan, its tasks and the commit of their outputs (`--plan-only`,
    // `run-task`, `commit`): the destination shares the source's files all the same.
    dest(&handle, "refp", PrimitiveType::Long).await?;
    let plan = DataMigrator::new(&handle, ident("src")?, &handle, ident("refp")?)
        .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
        .copy_mode(CopyMode::Reference)
        .plan()
        .await?;
    // Until the plan's outputs are committed, maintenance keeps off the destination: the
    // tasks' outputs wait there as files no snapshot references.
    let planned = handle.catalog().load_table(&ident("refp")?).await?;
    assert_eq!(
        running_migrations(planned.metadata())
            .into_iter()
            .map(|(j, _)| j.to_string())
            .collect::<Vec<_>>(),
        vec![plan.job_id.clone()]
    );
    let err = RemoveOrphansBuilder::new(&handle, ident("refp")?)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains(&plan.job_id), "{err}");
    let mut outputs = Vec::new();
    for t in &plan.tasks {
        outputs.push(plan.execute_task(&handle, &handle, t.id).await?);
    }
    plan.commit(&handle, &handle, outputs, None).await?;
    assert_eq!(
        ops_datamig_live_paths(&handle.catalog().load_table(&ident("refp")?).await?).await?,
        source_paths
    );
    let refp = handle.catalog().load_table(&ident("refp")?).await?;
    assert!(
        running_migrations(refp.metadata()).is_empty(),
        "marker left"
    );
    assert_eq!(
        refp.metadata()
            .properties()
            .get("gc.enabled")
            .map(String::as_str),
        Some("false")
    );

    // Files mode where the tables do not allow a copy: refused before any write.
    dest(&handle, "ups", PrimitiveType::Long).await?;
    let err = DataMigrator::new(&handle, ident("src")?, &handle, ident("ups")?)
        .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .copy_mode(CopyMode::Files)
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("--copy-mode files"), "{err}");
    assert_eq!(current(&handle, "ups").await?, None);
    Ok(())
}

/// Expiring an earlier, completed job's snapshots does not hide a later job's landed batches
/// from that job's resume (issue 18): the resume walks main's history from its head, and the
/// later job's batches are newer than anything expired.
#[tokio::test(flavor = "multi_thread")]
async fn a_resume_finds_its_batches_after_an_earlier_jobs_snapshots_expired() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let data = rows(23, true);
    source(&handle, &data).await?;
    dest(&handle, "dst", PrimitiveType::Long).await?;
    let earlier = migrator(&handle)?
        .row_filter("region = 'apac'")
        .batch_rows(2)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert!(
        earlier.new_snapshots.len() >= 2,
        "{:?}",
        earlier.new_snapshots
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let (_, expired) =
        ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, ident("dst")?)
            .older_than_ms(now + 1)
            .retain_last(1)
            .await?;
    assert_eq!(
        expired.expired_snapshots.len(),
        earlier.new_snapshots.len() - 1
    );

    let checkpoint = dir.path().join("later.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(migrator(&handle)?
            .row_filter("region <> 'apac'")
            .batch_rows(4)
            .copy_mode(CopyMode::Rewrite)
            .checkpoint(&checkpoint))
    };
    let later = job()?.run().await?;
    let snaps = later.new_snapshots.clone();
    assert!(snaps.len() >= 2, "{snaps:?}");
    // Killed after its first batch was checkpointed: the rest landed but are not recorded.
    edit_checkpoint(&checkpoint, |v| {
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(0);
        v["dest_snapshot_ids"] = json!([snaps[0]]);
    })?;
    let again = job()?.run().await?;
    assert!(again.new_snapshots.is_empty(), "{:?}", again.new_snapshots);
    assert_eq!(again.rows_moved, 0);
    let (got, _) = pyiceberg_rows(&py, "dst.orders")?;
    assert_eq!(got, total_json(&data), "every row exactly once");
    Ok(())
}

/// Paths of the live data files of `table`'s current snapshot.
async fn ops_datamig_live_paths(table: &Table) -> anyhow::Result<HashSet<String>> {
    let mut out = HashSet::new();
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(out);
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    for mf in list.entries() {
        let manifest = mf.load_manifest(table.file_io()).await?;
        for e in manifest.entries() {
            if e.is_alive() {
                out.insert(e.data_file().file_path().to_string());
            }
        }
    }
    Ok(out)
}

/// A partition column widened after files were written: iceberg 0.10.1's planner would prune
/// the older files under a filter on that column (their partition values and bounds keep the
/// old type, and it finds no order between an `int` and a `long`); ops-core plans that
/// condition itself, so the filter migrates the matching rows of old and new files alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_filter_on_a_widened_partition_column_keeps_the_older_files_rows() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let catalog = handle.catalog();
    let layout = |day: PrimitiveType| -> anyhow::Result<(Schema, UnboundPartitionSpec)> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "day", Type::Primitive(day)).into(),
            ])
            .build()?;
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "day", Transform::Identity)?
            .build();
        Ok((schema, spec))
    };
    for (ns, day) in [("wsrc", PrimitiveType::Int), ("wdst", PrimitiveType::Long)] {
        let ns = NamespaceIdent::new(ns.to_string());
        catalog.create_namespace(&ns, HashMap::new()).await?;
        let (schema, spec) = layout(day)?;
        catalog
            .create_table(
                &ns,
                TableCreation::builder()
                    .name("orders".into())
                    .schema(schema)
                    .partition_spec(spec)
                    .build(),
            )
            .await?;
    }
    let append = |ids: Vec<i64>, day: arrow_array::ArrayRef| {
        let handle = handle.clone();
        async move {
            let table = handle.catalog().load_table(&ident("wsrc")?).await?;
            let batch = arrow_array::RecordBatch::try_new(
                ops_core::write::table_arrow_schema(&table)?,
                vec![Arc::new(arrow_array::Int64Array::from(ids)), day],
            )?;
            let files =
                ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)]))
                    .await?;
            AppendBuilder::new(&handle, ident("wsrc")?)
                .with_files(files)
                .await?;
            anyhow::Ok(())
        }
    };
    append(
        vec![1, 2, 3],
        Arc::new(arrow_array::Int32Array::from(vec![4, 5, 5])),
    )
    .await?;
    ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(&handle, ident("wsrc")?)
        .widen_column("day", PrimitiveType::Long)
        .await?;
    append(
        vec![4, 5],
        Arc::new(arrow_array::Int64Array::from(vec![5, 6])),
    )
    .await?;

    let migrator = || -> anyhow::Result<DataMigrator> {
        Ok(DataMigrator::new(
            &handle,
            ident("wsrc")?,
            &handle,
            ident("wdst")?,
        ))
    };
    // Ids 2 and 3 were written while `day` was int, 4 after.
    let result = migrator()?.row_filter("day >= 5").run().await?;
    assert_eq!(result.rows_moved, 4);
    let (got, _) = pyiceberg_rows(&py, "wdst.orders")?;
    let ids: Vec<i64> = got.iter().filter_map(|r| r["id"].as_i64()).collect();
    assert_eq!(ids, vec![2, 3, 4, 5]);
    Ok(())
}

/// A row filter keeps a row only where it is TRUE (SQL's three-valued logic): a column a file
/// predates reads as NULL, so no comparison on it holds; NaN compares as IEEE 754 says (only
/// `!=` holds) and -0.0 equals 0.0. The oracle is PyIceberg's own filter expression
/// (`expression_to_pyarrow`, evaluated by pyarrow with three-valued logic) over PyIceberg's
/// read of the whole table. iceberg 0.10.1's reader kept the rows of files without the column
/// for `<` and `<=` and ordered NaN above every number. PyIceberg's *scan* differs for columns
/// a file lacks: it keeps those rows for `!=` and `NOT IN` (Python's `None != 'x'`), while it
/// drops the same rows when the column exists and holds NULL; this follows SQL and Spark.
#[tokio::test(flavor = "multi_thread")]
async fn row_filters_decide_nulls_missing_columns_and_nan_with_sql_logic() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    // PyIceberg writes the source: a file of (id, price) with NaN and NULL prices, then `note`
    // is added and a second file has notes, NULL among them.
    let setup = r#"
import math
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, DoubleType, StringType
catalog.create_namespace('src')
t = catalog.create_table('src.orders', Schema(
    NestedField(1, 'id', LongType(), required=False),
    NestedField(2, 'price', DoubleType(), required=False)))
t.append(pa.table({'id': pa.array([1, 2, 3, 4], pa.int64()),
                   'price': pa.array([1.0, float('nan'), None, 3.0], pa.float64())}))
with t.update_schema() as u:
    u.add_column('note', StringType())
t = catalog.load_table('src.orders')
t.append(pa.table({'id': pa.array([5, 6, 7, 8, 9], pa.int64()),
                   'price': pa.array([float('nan'), 2.0, 5.0, None, -0.0], pa.float64()),
                   'note': pa.array(['a', 'x', None, 'z', 'b'], pa.string())}))
emit({})
"#;
    ops_tests::oracle::pyiceberg("lake", &py, setup)?;
    let handle = open("lake", &py).await?;
    let filters = [
        "note < 'm'",
        "note <> 'x'",
        "note is null",
        "not (note = 'x')",
        "price > 1.5",
        "price <> 2.0",
        "price <= 5.0 and note <> 'z'",
        "price = 0.0",
        "price < 0.0",
        // NOT of a comparison that is FALSE for NaN is TRUE: the file holding NaN with upper
        // bound 3.0 must not be pruned (iceberg's planner rewrites this to `price >= 4.0`).
        "not (price < 4.0)",
        "not (price > 1.0 and price < 4.0)",
    ];
    for (i, filter) in filters.iter().enumerate() {
        let dst = format!("dst{i}");
        let result = DataMigrator::new(&handle, ident("src")?, &handle, {
            let ns = NamespaceIdent::new(dst.clone());
            handle
                .catalog()
                .create_namespace(&ns, HashMap::new())
                .await?;
            TableIdent::new(ns, "orders".into())
        })
        .row_filter(*filter)
        .create_dest(true)
        .batch_rows(2)
        .run()
        .await?;
        let code = format!(
            "from pyiceberg.expressions.parser import parse\n\
             from pyiceberg.expressions.visitors import bind\n\
             from pyiceberg.io.pyarrow import expression_to_pyarrow\n\
             t = catalog.load_table('src.orders')\n\
             expr = expression_to_pyarrow(bind(t.schema(), parse({filter:?}), case_sensitive=True))\n\
             src = t.scan().to_arrow().filter(expr)\n\
             dst = catalog.load_table('{dst}.orders').scan().to_arrow()\n\
             emit({{'src': sorted(src['id'].to_pylist()), 'dst': sorted(dst['id'].to_pylist())}})"
        );
        let out = ops_tests::oracle::pyiceberg("lake", &py, &code)?;
        assert_eq!(out["dst"], out["src"], "filter {filter}");
        assert_eq!(
            result.rows_moved,
            out["src"].as_array().map_or(0, |a| a.len()) as u64,
            "filter {filter}"
        );
    }
    Ok(())
}

/// For each snapshot `job` committed, whether the table metadata that first held it carried the
/// job's running marker (read back from the metadata log's files).
async fn marked_snapshots(table: &Table, job: &str) -> anyhow::Result<Vec<(i64, bool)>> {
    let key = ops_core::ops::markers::running_job_key(job);
    let mut files: Vec<String> = table
        .metadata()
        .metadata_log()
        .iter()
        .map(|e| e.metadata_file.clone())
        .collect();
    files.extend(table.metadata_location().map(str::to_string));
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in files {
        let bytes = table.file_io().new_input(&f)?.read().await?;
        let md: iceberg::spec::TableMetadata = serde_json::from_slice(&bytes)?;
        for snap in md.snapshots() {
            let of_job = snap
                .summary()
                .additional_properties
                .get(MIGRATION_JOB_PROPERTY)
                .is_some_and(|j| j == job);
            if of_job && seen.insert(snap.snapshot_id()) {
                out.push((snap.snapshot_id(), md.properties().contains_key(&key)));
            }
        }
    }
    Ok(out)
}

/// A run that fails after its first batches landed: without a checkpoint nothing can resume it,
/// so it removes its own marker (orphan cleanup may then collect what it left); with one, the
/// marker stays for the resume.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_keeps_its_marker_only_when_it_can_resume() -> TestResult {
    for with_checkpoint in [false, true] {
        let dir = tempfile::tempdir()?;
        let handle = open("lake", &sqlite(dir.path())).await?;
        let src = source(&handle, &rows(60, false)).await?;
        let files: Vec<String> = ops_datamig_live_paths(&src).await?.into_iter().collect();
        assert!(files.len() >= 4, "{files:?}");
        dest(&handle, "dst", PrimitiveType::Long).await?;
        // After the first batch lands, the files not yet read vanish.
        let mut m = DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?)
            .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
            .copy_mode(CopyMode::Rewrite)
            .batch_rows(5)
            .workers(1)
            .progress(move |done, _| {
                if done > 0 {
                    for f in &files {
                        let _ = std::fs::remove_file(f.trim_start_matches("file://"));
                    }
                }
            });
        if with_checkpoint {
            m = m.checkpoint(dir.path().join("ck.json"));
        }
        let err =
            m.run().await.err().ok_or_else(|| {
                anyhow::anyhow!("checkpoint {with_checkpoint}: the run succeeded")
            })?;
        let table = handle.catalog().load_table(&ident("dst")?).await?;
        assert!(
            table.metadata().current_snapshot_id().is_some(),
            "no batch landed before the failure ({err})"
        );
        let marked = !running_migrations(table.metadata()).is_empty();
        assert_eq!(
            marked, with_checkpoint,
            "checkpoint {with_checkpoint}: {err}"
        );
    }
    Ok(())
}

/// A task output whose file was deleted after the task wrote it (an orphan cleanup, a lifecycle
/// rule) is refused by `commit`, naming the file, instead of committing a table that cannot be
/// read.
#[tokio::test(flavor = "multi_thread")]
async fn commit_refuses_a_task_output_whose_file_is_gone() -> TestResult {
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    source(&handle, &rows(30, false)).await?;
    dest(&handle, "gone", PrimitiveType::Long).await?;
    let plan = DataMigrator::new(&handle, ident("src")?, &handle, ident("gone")?)
        .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
        .copy_mode(CopyMode::Rewrite)
        .plan()
        .await?;
    let mut outputs = Vec::new();
    for t in &plan.tasks {
        outputs.push(plan.execute_task(&handle, &handle, t.id).await?);
    }
    let written = serde_json::to_value(&outputs)?;
    let path = written
        .as_array()
        .and_then(|o| o.first())
        .and_then(|o| o["batches"][0]["files"][0].as_str())
        .and_then(|f| serde_json::from_str::<Value>(f).ok())
        .and_then(|f| f["file_path"].as_str().map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("no file in {written}"))?;
    std::fs::remove_file(path.trim_start_matches("file://"))?;
    let err = plan
        .commit(&handle, &handle, outputs, None)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("is gone") && err.contains(&path), "{err}");
    let table = handle.catalog().load_table(&ident("gone")?).await?;
    assert_eq!(
        table.metadata().current_snapshot_id(),
        None,
        "a batch was committed"
    );
    Ok(())
}

/// A checkpoint of a `last` upsert is not resumed under the default rule: its key pre-pass would
/// see only the chunks from the resume point on and miss the keys committed ones hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_resume_keeps_the_duplicate_key_rule() -> TestResult {
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    let src = source(&handle, &rows(60, false)).await?;
    let files: Vec<String> = ops_datamig_live_paths(&src).await?.into_iter().collect();
    dest(&handle, "dup", PrimitiveType::Long).await?;
    let ckpt = dir.path().join("ck.json");
    let job = |rule: ops_datamig::OnDuplicateKeys| -> anyhow::Result<DataMigrator> {
        Ok(
            DataMigrator::new(&handle, ident("src")?, &handle, ident("dup")?)
                .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
                .write_mode(WriteMode::Upsert)
                .upsert_keys(["id"])
                .on_duplicate_keys(rule)
                .batch_rows(5)
                .workers(1)
                .checkpoint(&ckpt),
        )
    };
    // Interrupted after its first batch: the files not yet read vanish.
    let doomed = files.clone();
    let first = job(ops_datamig::OnDuplicateKeys::Last)?
        .progress(move |done, _| {
            if done > 0 {
                for f in &doomed {
                    let _ = std::fs::remove_file(f.trim_start_matches("file://"));
                }
            }
        })
        .run()
        .await;
    assert!(first.is_err(), "the interrupted run succeeded");
    let err = job(ops_datamig::OnDuplicateKeys::Error)?
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("on_duplicate_keys"), "{err}");
    Ok(())
}
