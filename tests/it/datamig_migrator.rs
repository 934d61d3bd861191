//! DataMigrator planning and pre-flight on tables users bring (issue 15's review list):
//! `create_dest` keeping field ids, the pinned snapshot's schema, overwrite_partition's
//! validation from the job's start and its refusal of an unpartitioned destination, nested
//! `auto_add`. Tables are written by PyIceberg and read back by it.

use std::collections::BTreeMap;

use iceberg::TableIdent;
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::ops::rollback::RollbackBuilder;
use ops_datamig::{CopyMode, DataMigrator, MigrationError, WriteMode};
use ops_reconcile::{MissingInDest, SchemaReconciler};
use serde_json::{Value, json};

use crate::common::*;

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

fn ident(name: &str) -> anyhow::Result<TableIdent> {
    let (ns, t) = name.split_once('.').unwrap_or(("default", name));
    Ok(TableIdent::from_strs([ns, t])?)
}

/// Runs PyIceberg `code` (with `catalog`, `pa`, `rows`, `emit` in scope, plus PyIceberg's
/// types) and returns what it emitted.
fn py(props: &BTreeMap<String, String>, code: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        "lake",
        props,
        &format!(
            "from pyiceberg.schema import Schema\n\
             from pyiceberg.types import *\n\
             from pyiceberg.partitioning import PartitionSpec, PartitionField\n\
             from pyiceberg.transforms import IdentityTransform\n\
             try:\n    catalog.create_namespace('src')\nexcept Exception:\n    pass\n\
             {code}\n"
        ),
    )
}

/// PyIceberg's rows of `table` (at `snapshot`, else current), sorted.
fn py_rows(
    props: &BTreeMap<String, String>,
    table: &str,
    snapshot: Option<i64>,
) -> anyhow::Result<Vec<Value>> {
    let snap = snapshot.map_or("None".to_string(), |s| s.to_string());
    let out = py(
        props,
        &format!("emit(rows(catalog.load_table('{table}'), {snap}))"),
    )?;
    Ok(out.as_array().cloned().unwrap_or_default())
}

async fn load(handle: &CatalogHandle, name: &str) -> anyhow::Result<Table> {
    Ok(handle.catalog().load_table(&ident(name)?).await?)
}

/// Every field path (nested too) of the table's current schema with its id.
fn ids(table: &Table) -> BTreeMap<String, i32> {
    let schema = table.metadata().current_schema();
    schema
        .field_id_to_name_map()
        .iter()
        .map(|(id, name)| (name.clone(), *id))
        .collect()
}

/// src.events as the corpus's `evolved` is shaped: a struct column, then a column added after
/// the first file and moved first (so a fresh numbering would give it id 1), a nested field
/// added, two files, partitioned by region.
const EVENTS: &str = "
s = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()),
           NestedField(3, 'info', StructType(NestedField(4, 'city', StringType()))))
t = catalog.create_table('src.events', schema=s,
                         partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'region')))
t.append(pa.Table.from_pylist([{'id': i, 'region': ['eu', 'us'][i % 2], 'info': {'city': f'c{i}'}}
                               for i in range(6)], schema=t.schema().as_arrow()))
with t.update_schema() as up:
    up.add_column('note', StringType())
    up.add_column(('info', 'zip'), IntegerType())
    up.move_first('note')
t = catalog.load_table('src.events')
t.append(pa.Table.from_pylist([{'id': i, 'region': 'eu', 'note': f'n{i}', 'info': {'city': f'c{i}', 'zip': i}}
                               for i in range(6, 9)], schema=t.schema().as_arrow()))
emit(None)
";

#[tokio::test(flavor = "multi_thread")]
async fn create_dest_keeps_the_source_field_ids_so_files_are_copied() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    py(&props, EVENTS)?;
    let handle = open("lake", &props).await?;
    let result = DataMigrator::new(&handle, ident("src.events")?, &handle, ident("dst.events")?)
        .create_dest(true)
        .copy_mode(CopyMode::Auto)
        .run()
        .await?;
    let (src, dst) = (
        load(&handle, "src.events").await?,
        load(&handle, "dst.events").await?,
    );
    assert_eq!(
        ids(&dst),
        ids(&src),
        "every field (nested too) keeps its source id"
    );
    assert!(dst.metadata().last_column_id() >= src.metadata().last_column_id());
    let (sspec, dspec) = (
        src.metadata().default_partition_spec(),
        dst.metadata().default_partition_spec(),
    );
    assert_eq!(dspec.fields().len(), 1);
    assert_eq!(
        (dspec.fields()[0].source_id, dspec.fields()[0].field_id),
        (sspec.fields()[0].source_id, sspec.fields()[0].field_id)
    );
    assert_eq!(
        (result.files_copied, result.files_rewritten),
        (3, 0),
        "the files are copied, not rewritten: {:?}",
        result.files
    );
    assert_eq!(
        py_rows(&props, "dst.events", None)?,
        py_rows(&props, "src.events", None)?
    );
    Ok(())
}

/// src.t (id, region, legacy) with two appends, then `legacy` dropped and `extra` added.
const DROPPED: &str = "
s = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()),
           NestedField(3, 'legacy', StringType()))
t = catalog.create_table('src.t', schema=s)
for part in (range(0, 6), range(6, 12)):
    t.append(pa.Table.from_pylist([{'id': i, 'region': ['eu', 'us'][i % 2], 'legacy': f'old{i}'}
                                   for i in part], schema=t.schema().as_arrow()))
pinned = catalog.load_table('src.t').metadata.current_snapshot_id
emit(pinned)
";

const DROP_LEGACY: &str = "
t = catalog.load_table('src.t')
with t.update_schema() as up:
    up.delete_column('legacy')
    up.add_column('extra', LongType())
t = catalog.load_table('src.t')
# A commit after the change: the pinned snapshot is no longer the head (the head is read in
# the current schema, as Java and PyIceberg read it).
t.append(pa.Table.from_pylist([{'id': 100, 'region': 'eu', 'extra': 1}],
                              schema=t.schema().as_arrow()))
emit(None)
";

#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_snapshot_is_planned_filtered_and_read_in_its_own_schema() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    let pinned = py(&props, DROPPED)?
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    py(&props, DROP_LEGACY)?;
    let handle = open("lake", &props).await?;
    let result = DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
        .create_dest(true)
        .source_snapshot(pinned)
        .row_filter("legacy <> 'old3'")
        .run()
        .await?;
    assert_eq!(result.rows_moved, 11);
    let dst = load(&handle, "dst.t").await?;
    let names: Vec<String> = dst
        .metadata()
        .current_schema()
        .as_struct()
        .fields()
        .iter()
        .map(|f| f.name.clone())
        .collect();
    assert_eq!(
        names,
        ["id", "region", "legacy"],
        "the pinned snapshot's columns"
    );
    let mut want = py_rows(&props, "src.t", Some(pinned))?;
    want.retain(|r| r["legacy"] != json!("old3"));
    assert_eq!(py_rows(&props, "dst.t", None)?, want);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resume_after_a_source_column_drop_reads_the_pinned_schema() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    let pinned = py(&props, DROPPED)?
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    let handle = open("lake", &props).await?;
    let checkpoint = dir.path().join("cp.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(
            DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
                .create_dest(true)
                .copy_mode(CopyMode::Rewrite)
                .batch_rows(4)
                .checkpoint(&checkpoint),
        )
    };
    let first = job()?.run().await?;
    let snaps = first.new_snapshots.clone();
    // Two files of 6 rows, 4 rows a batch.
    assert_eq!(snaps.len(), 4);
    let edit = |f: &dyn Fn(&mut Value)| -> anyhow::Result<()> {
        let mut v: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
        f(&mut v);
        std::fs::write(&checkpoint, serde_json::to_vec_pretty(&v)?)?;
        Ok(())
    };
    let cp: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    assert!(cp["job"]["source_schema_id"].is_i64(), "{cp}");

    // A crash after batch 0, then the source drops `legacy`: the resume reads the pinned
    // snapshot in its own schema, so the rest of the rows keep their `legacy` values.
    RollbackBuilder::to_snapshot(&handle, ident("dst.t")?, snaps[0]).await?;
    let crashed = |v: &mut Value| {
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(0);
        v["dest_snapshot_ids"] = json!([snaps[0]]);
    };
    edit(&crashed)?;
    py(&props, DROP_LEGACY)?;

    // A checkpoint of an older version, without the schema id: the source's schema changed
    // since the pinned snapshot, so it cannot be checked and is refused, saying why.
    let saved = std::fs::read(&checkpoint)?;
    edit(&|v| {
        if let Some(job) = v["job"].as_object_mut() {
            job.remove("source_schema_id");
        }
    })?;
    let err = job()?.run().await.err();
    assert!(
        matches!(&err, Some(MigrationError::Resume { reason, .. })
            if reason.contains("older iceberg-ops") && reason.contains("schema")),
        "{err:?}"
    );
    std::fs::write(&checkpoint, saved)?;

    let resumed = job()?.run().await?;
    assert_eq!(resumed.rows_moved, 8);
    assert_eq!(
        py_rows(&props, "dst.t", None)?,
        py_rows(&props, "src.t", Some(pinned))?,
        "no NULLs for the dropped column"
    );
    Ok(())
}

/// src.in (id, region) holding 6 `eu` rows; dst.in partitioned by region holding 2 old `eu`
/// rows and 1 `us` row.
const OVERWRITE: &str = "
s = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()))
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'region'))
src = catalog.create_table('src.in', schema=s, partition_spec=spec)
src.append(pa.Table.from_pylist([{'id': i, 'region': 'eu'} for i in range(6)], schema=src.schema().as_arrow()))
try:
    catalog.create_namespace('dst')
except Exception:
    pass
dst = catalog.create_table('dst.in', schema=s, partition_spec=spec)
dst.append(pa.Table.from_pylist([{'id': 100, 'region': 'eu'}, {'id': 101, 'region': 'eu'},
                                 {'id': 200, 'region': 'us'}], schema=dst.schema().as_arrow()))
emit(None)
";

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_partition_validates_from_the_jobs_start() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    py(&props, OVERWRITE)?;
    let handle = open("lake", &props).await?;
    let checkpoint = dir.path().join("cp.json");
    let job = || -> anyhow::Result<DataMigrator> {
        Ok(
            DataMigrator::new(&handle, ident("src.in")?, &handle, ident("dst.in")?)
                .write_mode(WriteMode::OverwritePartition)
                .batch_rows(2)
                .checkpoint(&checkpoint),
        )
    };
    let first = job()?.run().await?;
    let snaps = first.new_snapshots.clone();
    assert_eq!(snaps.len(), 3);
    let after = py_rows(&props, "dst.in", None)?;
    assert_eq!(after.len(), 7, "6 new eu rows and the us row: {after:?}");

    // A crash after batch 0 (which replaced `eu`); then another writer adds a row to `eu`.
    // Batch 1 writes `eu` again: Java's ReplacePartitions validated from the job's start
    // refuses the job rather than keep or drop that row unasked.
    RollbackBuilder::to_snapshot(&handle, ident("dst.in")?, snaps[0]).await?;
    let mut v: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
    v["completed"] = json!(false);
    v["last_committed_batch"] = json!(0);
    v["dest_snapshot_ids"] = json!([snaps[0]]);
    std::fs::write(&checkpoint, serde_json::to_vec_pretty(&v)?)?;
    py(
        &props,
        "t = catalog.load_table('dst.in')\n\
         t.append(pa.Table.from_pylist([{'id': 300, 'region': 'eu'}], schema=t.schema().as_arrow()))\n\
         emit(None)",
    )?;
    let before = py_rows(&props, "dst.in", None)?;
    let err = job()?.run().await.err();
    let chain = err
        .as_ref()
        .map(|e| {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(c) = src {
                s.push_str(&format!(": {c}"));
                src = c.source();
            }
            s
        })
        .unwrap_or_default();
    assert!(
        chain.contains("another writer added") && chain.contains("conflicts"),
        "{err:?}"
    );
    assert_eq!(
        py_rows(&props, "dst.in", None)?,
        before,
        "nothing was committed"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn overwrite_partition_refuses_an_unpartitioned_destination() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    py(
        &props,
        "s = Schema(NestedField(1, 'id', LongType(), required=True))\n\
         for name in ('src.a', 'src.b'):\n    \
             t = catalog.create_table(name, schema=s)\n    \
             t.append(pa.Table.from_pylist([{'id': 1}], schema=t.schema().as_arrow()))\n\
         emit(None)",
    )?;
    let handle = open("lake", &props).await?;
    let before = load(&handle, "src.b")
        .await?
        .metadata()
        .current_snapshot_id();
    let err = DataMigrator::new(&handle, ident("src.a")?, &handle, ident("src.b")?)
        .write_mode(WriteMode::OverwritePartition)
        .run()
        .await
        .err();
    assert!(
        matches!(&err, Some(MigrationError::InvalidInput(m))
            if m.contains("unpartitioned") && m.contains("src.b")),
        "{err:?}"
    );
    assert_eq!(
        load(&handle, "src.b")
            .await?
            .metadata()
            .current_snapshot_id(),
        before
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn nested_auto_add_adds_the_field_then_writes_its_values() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let props = sqlite(dir.path());
    py(
        &props,
        "src = catalog.create_table('src.n', schema=Schema(
             NestedField(1, 'id', LongType(), required=True),
             NestedField(2, 'info', StructType(NestedField(3, 'city', StringType()),
                                               NestedField(4, 'zip', IntegerType())))))
src.append(pa.Table.from_pylist([{'id': i, 'info': {'city': f'c{i}', 'zip': i * 10}} for i in range(5)],
                                schema=src.schema().as_arrow()))
catalog.create_namespace('dst')
catalog.create_table('dst.n', schema=Schema(
    NestedField(1, 'id', LongType(), required=True),
    NestedField(2, 'info', StructType(NestedField(3, 'city', StringType())))))
emit(None)",
    )?;
    let handle = open("lake", &props).await?;
    let before = load(&handle, "dst.n").await?.metadata().current_schema_id();
    let result = DataMigrator::new(&handle, ident("src.n")?, &handle, ident("dst.n")?)
        .schema_reconciler(SchemaReconciler::new().on_missing_in_dest(MissingInDest::AutoAdd))
        .run()
        .await?;
    assert_eq!(result.rows_moved, 5);
    assert_eq!(result.schema_changes, vec!["info.zip".to_string()]);
    let dst = load(&handle, "dst.n").await?;
    assert_eq!(
        dst.metadata().schemas_iter().count(),
        2,
        "one schema commit"
    );
    assert_ne!(dst.metadata().current_schema_id(), before);
    assert!(
        dst.metadata()
            .current_schema()
            .field_by_name("info.zip")
            .is_some()
    );
    let got = py_rows(&props, "dst.n", None)?;
    let want: Vec<Value> = (0..5)
        .map(|i| json!({"id": i, "info": {"city": format!("c{i}"), "zip": i * 10}}))
        .collect();
    assert_eq!(got, want);
    Ok(())
}
