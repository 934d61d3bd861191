//! The commit layer's guarantees: no row lost or resurrected under NULLs, concurrency and
//! evolution; files committed under their own spec; retention kept; no orphans; manifests
//! merged. Data-loss cases are checked by PyIceberg reading the rows.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use iceberg::TableIdent;
use iceberg::expr::Reference;
use iceberg::spec::{
    DataContentType, DataFileBuilder, DataFileFormat, Datum, FormatVersion, ManifestListWriter,
    ManifestWriterBuilder, PrimitiveType, Struct, Transform, Type,
};
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};
use ops_core::commit::TableChange;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_schema::EvolveSchemaBuilder;
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::overwrite::OverwriteBuilder;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::ops::replace_partitions::ReplacePartitionsBuilder;
use ops_core::{CatalogHandle, Error};
use ops_tests::oracle::pyiceberg;
use serde_json::{Value, json};

use crate::common::*;

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn table_dir(table: &Table) -> std::path::PathBuf {
    table
        .metadata()
        .location()
        .trim_start_matches("file://")
        .into()
}

pub(crate) async fn orders_files(
    table: &Table,
    rows: &[(i64, Option<&str>, Option<i32>)],
) -> anyhow::Result<ops_core::write::WrittenFiles> {
    let batch = orders_batch(table, rows)?;
    Ok(ops_core::write::write_files(table, futures::stream::iter([Ok(batch)])).await?)
}

fn py_ids(name: &str, p: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
    pyiceberg(
        name,
        p,
        &format!("emit(sorted(r['id'] for r in rows(catalog.load_table('{table}'))))"),
    )
}

/// Item 1: a row is deleted only where the filter is TRUE. Twin tables written by PyIceberg
/// (NULLs in every filtered column, files that predate a column, a file whose statistics span
/// the filter) are deleted from by us and by PyIceberg's own `Table.delete`: the rows left
/// must be the same.
#[tokio::test(flavor = "multi_thread")]
async fn delete_keeps_null_and_unknown_rows_like_pyiceberg() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("tv", &p).await?;
    let filters = [
        "region = 'eu'",
        "NOT region = 'eu'",
        "x > 5",
        "note = 'n1'",
        "region != 'eu' AND x < 3",
        "x IS NULL OR region = 'us'",
    ];
    let setup = format!(
        r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType, IntegerType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
catalog.create_namespace('tv')
schema = Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'region', StringType()), NestedField(3, 'x', IntegerType()))
regions = ['eu', 'us', None]
first = pa.table({{'id': list(range(300)), 'region': [regions[i % 3] for i in range(300)], 'x': [None if i % 7 == 0 else i % 11 for i in range(300)]}}, schema=pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('x', pa.int32())]))
stats = pa.table({{'id': [1000, 1001, 1002], 'region': ['us', None, 'eu'], 'x': [10, None, 20]}}, schema=first.schema)
for i in range({n}):
    for side in ('ours', 'theirs'):
        t = catalog.create_table(f'tv.{{side}}{{i}}', schema=schema, partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'region')) if i % 2 == 0 else PartitionSpec())
        t.append(first)
        t.append(stats)
        with t.update_schema() as u:
            u.add_column('note', StringType())
        t = catalog.load_table(f'tv.{{side}}{{i}}')
        t.append(pa.table({{'id': [2000, 2001, 2002], 'region': ['eu', None, 'us'], 'x': [1, 2, None], 'note': ['n1', None, 'n2']}}, schema=pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('region', pa.string()), pa.field('x', pa.int32()), pa.field('note', pa.string())])))
filters = {filters:?}
for i, f in enumerate(filters):
    catalog.load_table(f'tv.theirs{{i}}').delete(f)
emit('ok')
"#,
        n = filters.len(),
        filters = filters
    );
    pyiceberg("tv", &p, &setup)?;
    for (i, f) in filters.iter().enumerate() {
        let ident = TableIdent::from_strs(["tv", &format!("ours{i}")])?;
        DeleteBuilder::new(&handle, ident)
            .with_filter_text(*f)
            .await?;
    }
    // The expected rows by SQL's three-valued logic, computed independently of both tools.
    let check = format!(
        r#"
def t_eq(a, b): return None if a is None else a == b
def t_ne(a, b): return None if a is None else a != b
def t_gt(a, b): return None if a is None else a > b
def t_lt(a, b): return None if a is None else a < b
def t_not(a): return None if a is None else not a
def t_and(a, b):
    if a is False or b is False: return False
    return None if a is None or b is None else True
def t_or(a, b):
    if a is True or b is True: return True
    return None if a is None or b is None else False
sql = [
    lambda r: t_eq(r['region'], 'eu'),
    lambda r: t_not(t_eq(r['region'], 'eu')),
    lambda r: t_gt(r['x'], 5),
    lambda r: t_eq(r.get('note'), 'n1'),
    lambda r: t_and(t_ne(r['region'], 'eu'), t_lt(r['x'], 3)),
    lambda r: t_or(r['x'] is None, t_eq(r['region'], 'us')),
]
source = rows(catalog.load_table('tv.theirs0'), catalog.load_table('tv.theirs0').metadata.snapshots[2].snapshot_id)
out = []
for i in range({n}):
    a = sorted(r['id'] for r in rows(catalog.load_table(f'tv.ours{{i}}')))
    b = sorted(r['id'] for r in rows(catalog.load_table(f'tv.theirs{{i}}')))
    want = sorted(r['id'] for r in source if sql[i](r) is not True)
    out.append({{'ours': a, 'theirs': b, 'want': want}})
emit(out)
"#,
        n = filters.len()
    );
    let out = pyiceberg("tv", &p, &check)?;
    for (i, f) in filters.iter().enumerate() {
        let (ours, theirs, want) = (&out[i]["ours"], &out[i]["theirs"], &out[i]["want"]);
        assert_eq!(
            ours, want,
            "filter {f}: we deleted a row where it is not TRUE, or kept one where it is"
        );
        // PyIceberg 0.12 agrees, except in two places where it departs from SQL:
        // - its partition-level shortcut evaluates `NULL != 'eu'` as Python's `None != 'eu'`
        //   (true), so it drops the whole NULL-region file, deleting a row SQL keeps;
        // - its complementary filter keeps every row where any column the filter names without
        //   an IS NULL is NULL, so `x IS NULL OR region = 'us'` keeps rows with x NULL and
        //   region NULL, for which the filter is TRUE.
        if !f.contains("!=") && !f.contains("IS NULL OR") {
            assert_eq!(
                ours, theirs,
                "filter {f}: rows left differ from PyIceberg's"
            );
        }
    }
    // The report's example: 300 rows, a third in 'eu' — 200 (+ the later files) remain.
    let left = out[0]["ours"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(left, 200 + 2 + 2, "{}", out[0]);
    Ok(())
}

/// Item 3: an overwrite validated from the snapshot its caller read refuses to commit over a
/// concurrent append of rows its decision depends on; replace-partitions refuses to delete
/// rows another writer just appended to its partition. Nothing is lost or duplicated.
#[tokio::test(flavor = "multi_thread")]
async fn validation_starts_at_the_callers_snapshot() -> TestResult {
    validation_from_the_callers_snapshot(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn validation_starts_at_the_callers_snapshot_on_postgres() -> TestResult {
    validation_from_the_callers_snapshot(SqlCatalog::postgres()?).await
}

async fn validation_from_the_callers_snapshot(db: SqlCatalog) -> TestResult {
    let p = db.props.clone();
    let handle = open("vf", &p).await?;
    let table = create_orders(&handle, "vf").await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(1)), (2, Some("us"), Some(2))],
            )
            .await?,
        )
        .await?;
    let read_at = table.metadata().current_snapshot_id();

    // An "upsert" of key 3 read the table at `read_at` (no key 3) ...
    let upsert = orders_files(&table, &[(3, Some("eu"), Some(30))]).await?;
    // ... while another writer appended key 3.
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(3, Some("eu"), Some(31))]).await?)
        .await?;
    let err = OverwriteBuilder::new(&handle, ident.clone())
        .add_written(upsert)
        .validate_from_snapshot(read_at)
        .conflict_detection_filter(Reference::new("id").is_in([Datum::long(3)]))
        .await
        .err();
    assert!(matches!(err, Some(Error::CommitConflict { .. })), "{err:?}");
    assert_eq!(py_ids("vf", &p, "vf.orders")?, json!([1, 2, 3]));

    // A concurrent append of a key the filter does not cover is rebased onto.
    let table = handle.catalog().load_table(&ident).await?;
    let read_at = table.metadata().current_snapshot_id();
    let upsert = orders_files(&table, &[(4, Some("eu"), Some(40))]).await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(5, Some("us"), Some(50))]).await?)
        .await?;
    OverwriteBuilder::new(&handle, ident.clone())
        .add_written(upsert)
        .validate_from_snapshot(read_at)
        .conflict_detection_filter(Reference::new("id").is_in([Datum::long(4)]))
        .await?;
    assert_eq!(py_ids("vf", &p, "vf.orders")?, json!([1, 2, 3, 4, 5]));

    // Replace-partitions read at `read_at`; an append to 'us' lands; the replace must refuse.
    let table = handle.catalog().load_table(&ident).await?;
    let read_at = table.metadata().current_snapshot_id();
    let replacement = orders_files(&table, &[(20, Some("us"), Some(0))]).await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(6, Some("us"), Some(60))]).await?)
        .await?;
    let err = ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(replacement)
        .validate_from_snapshot(read_at)
        .await
        .err();
    assert!(matches!(err, Some(Error::CommitConflict { .. })), "{err:?}");
    assert_eq!(py_ids("vf", &p, "vf.orders")?, json!([1, 2, 3, 4, 5, 6]));

    // A snapshot the table no longer descends from is a conflict too.
    let err = OverwriteBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(7, Some("eu"), None)]).await?)
        .validate_from_snapshot(Some(12345))
        .await
        .err();
    assert!(
        matches!(&err, Some(Error::CommitConflict { detail, .. }) if detail.contains("no longer descends")),
        "{err:?}"
    );
    Ok(())
}

/// Item 4: files are committed under the spec they were written with, even when the spec
/// changed in between; files whose spec cannot be known and does not fit are a conflict, not
/// a panic.
#[tokio::test(flavor = "multi_thread")]
async fn files_are_committed_under_the_spec_they_were_written_with() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("sp", &p).await?;
    let table = create_orders(&handle, "sp").await?;
    let ident = table.identifier().clone();
    let written = orders_files(
        &table,
        &[(1, Some("eu"), Some(1)), (2, Some("us"), Some(2))],
    )
    .await?;
    let unlabelled = orders_files(&table, &[(3, Some("eu"), Some(3))])
        .await?
        .files;
    // The spec gains a field between writing and committing.
    EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("id", Transform::Bucket(4), None)
        .await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(written)
        .await?;
    let out = pyiceberg(
        "sp",
        &p,
        r#"
t = catalog.load_table('sp.orders')
files = t.inspect.files().to_pylist()
emit({'ids': sorted(r['id'] for r in rows(t)), 'specs': sorted(f['spec_id'] for f in files), 'eu': sorted(r['id'] for r in t.scan(row_filter="region == 'eu'").to_arrow().to_pylist())})
"#,
    )?;
    assert_eq!(out["ids"], json!([1, 2]));
    assert_eq!(out["specs"], json!([0, 0]));
    assert_eq!(out["eu"], json!([1]));
    // Without the spec id, the builder assumes the current spec (1): the tuple does not fit.
    let err = AppendBuilder::new(&handle, ident.clone())
        .with_files(unlabelled)
        .await
        .err();
    assert!(
        matches!(&err, Some(Error::CommitConflict { detail, .. }) if detail.contains("does not fit partition spec")),
        "{err:?}"
    );
    Ok(())
}

/// Item 5: after widening a partition source column, old `int` partitions and new `long` ones
/// are the same partition to replace-partitions, overwrite and delete.
#[tokio::test(flavor = "multi_thread")]
async fn widened_partition_source_column_still_matches_old_partitions() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("wd", &p).await?;
    let table = create_orders(&handle, "wd").await?;
    let ident = table.identifier().clone();
    EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("amount", Transform::Identity, None)
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(10)), (2, Some("eu"), Some(20))],
            )
            .await?,
        )
        .await?;
    EvolveSchemaBuilder::new(&handle, ident.clone())
        .widen_column("amount", PrimitiveType::Long)
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    // Our scan reads the int-partitioned files in the widened schema (iceberg's reader alone
    // fails on the int partition constant).
    let rows = scan_json(&table).await?;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["amount"], json!(10), "{rows:?}");
    let batch = {
        use arrow_array::{Int64Array, RecordBatch, StringArray};
        RecordBatch::try_new(
            ops_core::write::table_arrow_schema(&table)?,
            vec![
                Arc::new(Int64Array::from(vec![3])),
                Arc::new(StringArray::from(vec![Some("eu")])),
                Arc::new(Int64Array::from(vec![Some(10)])),
            ],
        )?
    };
    let files = ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
    ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(files)
        .await?;
    assert_eq!(py_ids("wd", &p, "wd.orders")?, json!([2, 3]));
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("amount = 20")
        .await?;
    assert_eq!(py_ids("wd", &p, "wd.orders")?, json!([3]));
    // A column an older spec still uses cannot be dropped.
    EvolveSpecBuilder::new(&handle, ident.clone())
        .remove_field("amount")
        .await?;
    let err = EvolveSchemaBuilder::new(&handle, ident.clone())
        .drop_column("amount")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("partition"), "{err}");
    Ok(())
}

/// Item 6: a commit keeps `main`'s retention settings.
#[tokio::test(flavor = "multi_thread")]
async fn commits_keep_main_retention() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("rt", &p).await?;
    let table = create_orders(&handle, "rt").await?;
    let ident = table.identifier().clone();
    let (table, first) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(1, Some("eu"), Some(1))]).await?)
        .await?;
    let change = TableChange {
        requirements: vec![],
        updates: vec![TableUpdate::SetSnapshotRef {
            ref_name: "main".into(),
            reference: iceberg::spec::SnapshotReference::new(
                first.snapshot_id,
                iceberg::spec::SnapshotRetention::branch(
                    Some(7),
                    Some(86_400_000),
                    Some(604_800_000),
                ),
            ),
        }],
        ..Default::default()
    };
    let table = ops_core::commit::commit(&handle, &table, change).await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(2, Some("us"), Some(2))]).await?)
        .await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 1")
        .await?;
    let out = pyiceberg(
        "rt",
        &p,
        "r = catalog.load_table('rt.orders').metadata.refs['main']\nemit([r.min_snapshots_to_keep, r.max_snapshot_age_ms, r.max_ref_age_ms])",
    )?;
    assert_eq!(out, json!([7, 86_400_000, 604_800_000]));
    Ok(())
}

/// Item 7: v3 tables are refused by every operation, before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn v3_tables_are_refused() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("v3", &p).await?;
    let table = create_orders(&handle, "v3").await?;
    let ident = table.identifier().clone();
    let change = TableChange {
        requirements: vec![],
        updates: vec![TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V3,
        }],
        ..Default::default()
    };
    let table = ops_core::commit::commit(&handle, &table, change).await?;
    let before = files_under(&table_dir(&table));
    let files = orders_files(&table, &[(1, Some("eu"), Some(1))]).await;
    let refusals = [
        AppendBuilder::new(&handle, ident.clone())
            .with_files(files.map(|f| f.files).unwrap_or_default())
            .await
            .err(),
        EvolveSchemaBuilder::new(&handle, ident.clone())
            .add_column("note", Type::Primitive(PrimitiveType::String))
            .await
            .err(),
        PropertiesBuilder::new(&handle, ident.clone())
            .set("a", "b")
            .await
            .err(),
    ];
    for r in refusals {
        let msg = r.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("v3"), "{msg}");
    }
    let after: Vec<String> = files_under(&table_dir(&table))
        .into_iter()
        .filter(|f| !f.contains("/data/"))
        .collect();
    let before: Vec<String> = before
        .into_iter()
        .filter(|f| !f.contains("/data/"))
        .collect();
    assert_eq!(before, after, "a refused operation wrote metadata");
    Ok(())
}

/// Item 9: a lost attempt leaves nothing behind — not its manifests, manifest list, metadata
/// file, nor the data files it rewrote.
#[tokio::test(flavor = "multi_thread")]
async fn refused_attempts_leave_no_orphans() -> TestResult {
    refused_attempts(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_attempts_leave_no_orphans_on_postgres() -> TestResult {
    refused_attempts(SqlCatalog::postgres()?).await
}

async fn refused_attempts(db: SqlCatalog) -> TestResult {
    let p = db.props.clone();
    let handle = open("or", &p).await?;
    let table = create_orders(&handle, "or").await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(1)), (2, Some("eu"), Some(2))],
            )
            .await?,
        )
        .await?;
    let read_at = table.metadata().current_snapshot_id();
    let mine = orders_files(&table, &[(9, Some("eu"), Some(9))]).await?;
    // Another writer adds a row the overwrite's filter covers.
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(1, Some("eu"), Some(100))]).await?)
        .await?;
    let before = files_under(&table_dir(&table));
    // The overwrite rewrites a file (deleting id 1) and then fails validation.
    let err = OverwriteBuilder::new(&handle, ident.clone())
        .overwrite_filter_text("id = 1")
        .add_written(mine.clone())
        .validate_from_snapshot(read_at)
        .await
        .err();
    assert!(matches!(err, Some(Error::CommitConflict { .. })), "{err:?}");
    assert_eq!(
        files_under(&table_dir(&table)),
        before,
        "orphans left behind"
    );
    // The caller's own files are the caller's: still there.
    for f in &mine.files {
        assert!(std::path::Path::new(f.file_path().trim_start_matches("file://")).exists());
    }
    Ok(())
}

/// Item 9: `write.metadata.path` places new metadata, and with
/// `write.metadata.delete-after-commit.enabled` old metadata files beyond
/// `write.metadata.previous-versions-max` are removed.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_path_and_delete_after_commit_are_honoured() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("md", &p).await?;
    let table = create_orders(&handle, "md").await?;
    let ident = table.identifier().clone();
    let meta_dir = dir.path().join("meta-elsewhere");
    PropertiesBuilder::new(&handle, ident.clone())
        .set(
            "write.metadata.path",
            format!("file://{}", meta_dir.display()),
        )
        .set("write.metadata.delete-after-commit.enabled", "true")
        .set("write.metadata.previous-versions-max", "2")
        .await?;
    for i in 0..5 {
        let table = handle.catalog().load_table(&ident).await?;
        AppendBuilder::new(&handle, ident.clone())
            .add_written(orders_files(&table, &[(i, Some("eu"), None)]).await?)
            .await?;
    }
    let table = handle.catalog().load_table(&ident).await?;
    assert!(
        table
            .metadata_location()
            .is_some_and(|l| l.contains("meta-elsewhere")),
        "{:?}",
        table.metadata_location()
    );
    let json: Vec<String> = files_under(&meta_dir)
        .into_iter()
        .filter(|f| f.ends_with(".metadata.json"))
        .collect();
    assert_eq!(json.len(), 3, "current + 2 previous: {json:?}");
    assert_eq!(py_ids("md", &p, "md.orders")?, json!([0, 1, 2, 3, 4]));
    Ok(())
}

/// Item 8: small manifests are merged per `commit.manifest.min-count-to-merge`, and readers see
/// every row.
#[tokio::test(flavor = "multi_thread")]
async fn manifests_are_merged() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("mm", &p).await?;
    let table = create_orders(&handle, "mm").await?;
    let ident = table.identifier().clone();
    PropertiesBuilder::new(&handle, ident.clone())
        .set("commit.manifest.min-count-to-merge", "5")
        .await?;
    let mut counts = Vec::new();
    for i in 0..12 {
        let table = handle.catalog().load_table(&ident).await?;
        let region = if i % 2 == 0 { "eu" } else { "us" };
        let (table, _) = AppendBuilder::new(&handle, ident.clone())
            .add_written(orders_files(&table, &[(i, Some(region), Some(i as i32))]).await?)
            .await?;
        let snap = table.metadata().current_snapshot().cloned();
        let list = table
            .manifest_list_reader(snap.as_ref().expect("a snapshot"))
            .load()
            .await?;
        counts.push(list.entries().len());
    }
    assert!(counts.iter().all(|&c| c <= 5), "{counts:?}");
    // Replace one partition after merging: its rows go, the other partition's stay.
    let table = handle.catalog().load_table(&ident).await?;
    ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(100, Some("eu"), None)]).await?)
        .await?;
    assert_eq!(
        py_ids("mm", &p, "mm.orders")?,
        json!([1, 3, 5, 7, 9, 11, 100])
    );
    Ok(())
}

/// Writes a position delete file against `data_path` (row positions `positions`) and commits
/// it as another engine (Spark merge-on-read) would.
pub(crate) async fn commit_position_delete(
    handle: &CatalogHandle,
    table: &Table,
    data_path: &str,
    partition: Struct,
    positions: &[i64],
) -> anyhow::Result<Table> {
    commit_delete_file(handle, table, partition, Some((data_path, positions)), &[]).await
}

/// [`commit_position_delete`] with the `file_path` bounds Spark writes (lower = upper =
/// `data_path`), which let readers attach it to that file only.
pub(crate) async fn commit_spark_position_delete(
    handle: &CatalogHandle,
    table: &Table,
    data_path: &str,
    partition: Struct,
    positions: &[i64],
) -> anyhow::Result<Table> {
    commit_delete_file_with(
        handle,
        table,
        partition,
        Some((data_path, positions)),
        &[],
        true,
    )
    .await
}

/// Commits an equality delete file on field 1 (`id`) for `ids`, as another engine would.
pub(crate) async fn commit_equality_delete(
    handle: &CatalogHandle,
    table: &Table,
    partition: Struct,
    ids: &[i64],
) -> anyhow::Result<Table> {
    commit_delete_file(handle, table, partition, None, ids).await
}

/// Commits an equality delete file on one column (`name`, field id `field_id`) whose rows are
/// `values` (NULLs included), as another engine would.
pub(crate) async fn commit_equality_delete_on(
    handle: &CatalogHandle,
    table: &Table,
    partition: Struct,
    (name, field_id): (&str, i32),
    values: arrow_array::ArrayRef,
) -> anyhow::Result<Table> {
    commit_delete_file_rows(
        handle,
        table,
        partition,
        DeleteRows::Equality {
            name,
            field_id,
            values,
        },
        false,
    )
    .await
}

/// What a delete file holds: positions in one data file, or equality rows of one column.
enum DeleteRows<'a> {
    Positions(&'a str, &'a [i64]),
    Equality {
        name: &'a str,
        field_id: i32,
        values: arrow_array::ArrayRef,
    },
}

/// Commits one delete file as another engine would: position deletes against `data_path`
/// when given, else equality deletes on `id` for `ids`.
async fn commit_delete_file(
    handle: &CatalogHandle,
    table: &Table,
    partition: Struct,
    position: Option<(&str, &[i64])>,
    ids: &[i64],
) -> anyhow::Result<Table> {
    commit_delete_file_with(handle, table, partition, position, ids, false).await
}

/// [`commit_delete_file`], with a position delete's `file_path` bounds when `path_bounds`.
async fn commit_delete_file_with(
    handle: &CatalogHandle,
    table: &Table,
    partition: Struct,
    position: Option<(&str, &[i64])>,
    ids: &[i64],
    path_bounds: bool,
) -> anyhow::Result<Table> {
    let rows = match position {
        Some((data_path, positions)) => DeleteRows::Positions(data_path, positions),
        None => DeleteRows::Equality {
            name: "id",
            field_id: 1,
            values: Arc::new(arrow_array::Int64Array::from(ids.to_vec())),
        },
    };
    commit_delete_file_rows(handle, table, partition, rows, path_bounds).await
}

/// Writes and commits one delete file holding `rows`.
async fn commit_delete_file_rows(
    handle: &CatalogHandle,
    table: &Table,
    partition: Struct,
    rows: DeleteRows<'_>,
    path_bounds: bool,
) -> anyhow::Result<Table> {
    use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let field = |name: &str, id: i32, t: DataType, nullable: bool| {
        Field::new(name, t, nullable).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    };
    let position = match &rows {
        DeleteRows::Positions(data_path, positions) => Some((*data_path, *positions)),
        DeleteRows::Equality { .. } => None,
    };
    let (schema, batch, content, rows, equality_ids) = match rows {
        DeleteRows::Positions(data_path, positions) => {
            let schema = Arc::new(Schema::new(vec![
                field("file_path", 2147483546, DataType::Utf8, false),
                field("pos", 2147483545, DataType::Int64, false),
            ]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(vec![data_path; positions.len()])),
                    Arc::new(Int64Array::from(positions.to_vec())),
                ],
            )?;
            (
                schema,
                batch,
                DataContentType::PositionDeletes,
                positions.len(),
                None,
            )
        }
        DeleteRows::Equality {
            name,
            field_id,
            values,
        } => {
            let schema = Arc::new(Schema::new(vec![field(
                name,
                field_id,
                values.data_type().clone(),
                values.null_count() > 0,
            )]));
            let n = values.len();
            let batch = RecordBatch::try_new(schema.clone(), vec![values])?;
            (
                schema,
                batch,
                DataContentType::EqualityDeletes,
                n,
                Some(vec![field_id]),
            )
        }
    };
    let path = format!(
        "{}/data/pos-delete-{}.parquet",
        table.metadata().location(),
        uuid_like()
    );
    let mut buf = Vec::new();
    {
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None)?;
        w.write(&batch)?;
        w.close()?;
    }
    let size = buf.len() as u64;
    table.file_io().new_output(&path)?.write(buf.into()).await?;
    let md = table.metadata();
    let spec = md.default_partition_spec().clone();
    let mut builder = DataFileBuilder::default();
    builder
        .content(content)
        .equality_ids(equality_ids)
        .file_path(path)
        .file_format(DataFileFormat::Parquet)
        .partition(partition)
        .partition_spec_id(spec.spec_id())
        .record_count(rows as u64)
        .file_size_in_bytes(size);
    if let (true, Some((data_path, _))) = (path_bounds, position) {
        let bound = HashMap::from([(2147483546, iceberg::spec::Datum::string(data_path))]);
        builder.lower_bounds(bound.clone()).upper_bounds(bound);
    }
    let delete = builder.build()?;
    let snapshot_id = 424242i64 + md.snapshots().count() as i64;
    let seq = md.next_sequence_number();
    let loc = md.location();
    let manifest_path = format!("{loc}/metadata/pos-delete-{snapshot_id}.avro");
    let mut writer = ManifestWriterBuilder::new(
        table.file_io().new_output(&manifest_path)?,
        Some(snapshot_id),
        md.current_schema().clone(),
        spec.as_ref().clone(),
    )
    .build_v2_deletes();
    writer.add_file(delete, seq)?;
    let manifest = writer.write_manifest_file().await?;
    let parent = md.current_snapshot().expect("a snapshot");
    let mut manifests: Vec<_> = table
        .manifest_list_reader(parent)
        .load()
        .await?
        .entries()
        .to_vec();
    manifests.push(manifest);
    let list_path = format!("{loc}/metadata/snap-{snapshot_id}-pos-delete.avro");
    let mut list = ManifestListWriter::v2(
        table.file_io().new_output(&list_path)?.writer().await?,
        snapshot_id,
        Some(parent.snapshot_id()),
        seq,
    );
    list.add_manifests(manifests.into_iter())?;
    list.close().await?;
    let snapshot = iceberg::spec::Snapshot::builder()
        .with_snapshot_id(snapshot_id)
        .with_parent_snapshot_id(Some(parent.snapshot_id()))
        .with_sequence_number(seq)
        .with_timestamp_ms(md.last_updated_ms() + 1)
        .with_manifest_list(list_path)
        .with_summary(iceberg::spec::Summary {
            operation: iceberg::spec::Operation::Delete,
            additional_properties: HashMap::new(),
        })
        .with_schema_id(md.current_schema_id())
        .build();
    let change = TableChange {
        requirements: vec![TableRequirement::RefSnapshotIdMatch {
            r#ref: "main".into(),
            snapshot_id: Some(parent.snapshot_id()),
        }],
        updates: vec![
            TableUpdate::AddSnapshot { snapshot },
            TableUpdate::SetSnapshotRef {
                ref_name: "main".into(),
                reference: iceberg::spec::SnapshotReference::new(
                    snapshot_id,
                    iceberg::spec::SnapshotRetention::branch(None, None, None),
                ),
            },
        ],
        ..Default::default()
    };
    Ok(ops_core::commit::commit(handle, table, change).await?)
}

fn uuid_like() -> String {
    format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// Item 2: another engine's row deletes never come back. A delete rewrites a file with its
/// position deletes applied; an overwrite that read before a concurrent position delete
/// against the file it rewrites is refused.
#[tokio::test(flavor = "multi_thread")]
async fn another_engines_row_deletes_do_not_come_back() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("pd", &p).await?;
    let table = create_orders(&handle, "pd").await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[
                    (1, Some("eu"), Some(1)),
                    (2, Some("eu"), Some(2)),
                    (3, Some("eu"), Some(3)),
                ],
            )
            .await?,
        )
        .await?;
    let read_at = table.metadata().current_snapshot_id();
    let live = {
        let snap = table.metadata().current_snapshot().expect("a snapshot");
        let list = table.manifest_list_reader(snap).load().await?;
        let m = list.entries()[0].load_manifest(table.file_io()).await?;
        m.entries()[0].data_file().clone()
    };
    // "Spark" deletes row 1 (id 2) by position.
    let table = commit_position_delete(
        &handle,
        &table,
        live.file_path(),
        live.partition().clone(),
        &[1],
    )
    .await?;
    assert_eq!(py_ids("pd", &p, "pd.orders")?, json!([1, 3]));
    // An overwrite that rewrote the file from what it read before the delete: refused.
    let rewrite = orders_files(
        &table,
        &[
            (1, Some("eu"), Some(1)),
            (2, Some("eu"), Some(2)),
            (3, Some("eu"), Some(30)),
        ],
    )
    .await?;
    let err = OverwriteBuilder::new(&handle, ident.clone())
        .remove_files([live.file_path().to_string()])
        .add_written(rewrite)
        .validate_from_snapshot(read_at)
        .await
        .err();
    assert!(matches!(err, Some(Error::CommitConflict { .. })), "{err:?}");
    assert_eq!(py_ids("pd", &p, "pd.orders")?, json!([1, 3]));
    // Our delete rewrites the file with the position delete applied: id 2 stays gone.
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 3")
        .await?;
    assert_eq!(py_ids("pd", &p, "pd.orders")?, json!([1]));
    Ok(())
}

/// Item 11: an in-memory SQLite catalog is refused clearly (the commit's own connection would
/// see another, empty database); sort-order changes assert the order they replace.
#[tokio::test(flavor = "multi_thread")]
async fn in_memory_sqlite_is_refused_clearly() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = props(&[
        ("type", "sql"),
        ("uri", "sqlite:///:memory:"),
        ("warehouse", &format!("file://{}/wh", dir.path().display())),
    ]);
    let handle = open("memsql", &p).await?;
    let table = create_orders(&handle, "ms").await?;
    let err = AppendBuilder::new(&handle, table.identifier().clone())
        .add_written(orders_files(&table, &[(1, Some("eu"), None)]).await?)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("in-memory SQLite"), "{err}");
    assert!(err.contains("sqlite:///path/to/catalog.db"), "{err}");
    Ok(())
}

/// A copy-on-write rewrite applies another engine's equality deletes as Java does, NULL equal
/// to NULL: the rewritten file holds neither the rows they deleted nor loses the row whose
/// equality column is NULL (iceberg 0.10.1's reader, applying `amount != 3`, would drop it).
/// Files removed explicitly by an overwrite are not also rewritten by its filter (no
/// duplicated rows).
#[tokio::test(flavor = "multi_thread")]
async fn rewrites_apply_equality_deletes_and_explicit_removals_are_not_rewritten() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("eq", &p).await?;
    let table = create_orders(&handle, "eq").await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(1)), (2, Some("eu"), Some(2))],
            )
            .await?,
        )
        .await?;
    let live = {
        let snap = table.metadata().current_snapshot().expect("a snapshot");
        let list = table.manifest_list_reader(snap).load().await?;
        let m = list.entries()[0].load_manifest(table.file_io()).await?;
        m.entries()[0].data_file().clone()
    };
    // Explicit removal of the file plus a filter matching one of its rows: the replacement
    // given by the caller is all that remains.
    let (table, _) = OverwriteBuilder::new(&handle, ident.clone())
        .remove_files([live.file_path().to_string()])
        .overwrite_filter_text("id = 1")
        .add_written(
            orders_files(
                &table,
                &[
                    (2, Some("eu"), Some(20)),
                    (3, Some("eu"), Some(3)),
                    (4, Some("eu"), None),
                ],
            )
            .await?,
        )
        .await?;
    assert_eq!(py_ids("eq", &p, "eq.orders")?, json!([2, 3, 4]));

    commit_equality_delete_on(
        &handle,
        &table,
        live.partition().clone(),
        ("amount", 3),
        Arc::new(arrow_array::Int32Array::from(vec![Some(3)])),
    )
    .await?;
    let (table, m) = DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("amount = 20")
        .await?;
    // Id 3 is deleted already, id 2 by the filter: only id 4 is written again.
    assert_eq!(m.added_records, 1, "{m:?}");
    // The rewritten file is newer than the delete, which applies to it no more: iceberg's
    // reader, which would misapply it, reads it as written.
    let ids: Vec<i64> = scan_json(&table)
        .await?
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    assert_eq!(
        ids,
        vec![4],
        "id 3 deleted by the equality delete, NULL-amount id 4 kept"
    );
    Ok(())
}

/// `NS.orders` in the SQLite catalog of `p` (named NS) with one eu file of `rows`, appended.
/// Returns the handle, the table and the file.
async fn orders_with_one_file(
    p: &BTreeMap<String, String>,
    ns: &str,
    rows: &[(i64, Option<&str>, Option<i32>)],
) -> anyhow::Result<(CatalogHandle, Table, iceberg::spec::DataFile)> {
    let handle = open(ns, p).await?;
    let table = create_orders(&handle, ns).await?;
    let written = orders_files(&table, rows).await?;
    let file = written.files[0].clone();
    let (table, _) = AppendBuilder::new(&handle, table.identifier().clone())
        .add_written(written)
        .await?;
    Ok((handle, table, file))
}

/// `eq.orders` on SQLite in `dir` with one eu file of `rows`, then an equality delete of the
/// eu rows whose amount is 2. Returns the handle, the table and the file.
async fn orders_with_an_equality_delete(
    dir: &std::path::Path,
    rows: &[(i64, Option<&str>, Option<i32>)],
) -> anyhow::Result<(CatalogHandle, Table, iceberg::spec::DataFile)> {
    let (handle, table, file) = orders_with_one_file(&sqlite(dir), "eq", rows).await?;
    let table = commit_equality_delete_on(
        &handle,
        &table,
        file.partition().clone(),
        ("amount", 3),
        Arc::new(arrow_array::Int32Array::from(vec![Some(2)])),
    )
    .await?;
    Ok((handle, table, file))
}

/// The ids our scan reads from `table`, sorted.
async fn scanned_ids(table: &Table) -> anyhow::Result<Vec<i64>> {
    let mut ids: Vec<i64> = scan_json(table)
        .await?
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// A file listed twice with an equality delete committed between its two additions: the
/// delete applies to the older entry only (its data sequence number is lower). A delete by
/// filter rewrites the file from both entries, each with its own deletes; pooled, the newer
/// entry's row 5 was deleted too.
#[tokio::test(flavor = "multi_thread")]
async fn a_rewrite_applies_each_entrys_own_equality_deletes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (handle, table, file) = orders_with_an_equality_delete(
        dir.path(),
        &[(1, Some("eu"), Some(1)), (5, Some("eu"), Some(2))],
    )
    .await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .with_base(table)
        .with_files([file])
        .await?;
    assert_eq!(scanned_ids(&table).await?, [1, 1, 5]);
    let (table, _) = DeleteBuilder::new(&handle, ident)
        .with_filter_text("id = 1")
        .await?;
    assert_eq!(scanned_ids(&table).await?, [5]);
    Ok(())
}

/// A file listed twice in a table without delete files: a delete by filter reads it from both
/// entries (a task each), so the rows it keeps stay twice, as PyIceberg read them before. The
/// tasks were keyed by path, one entry's replacing the other's, and a copy of every kept row
/// was lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_from_a_file_listed_twice_keeps_both_copies_of_the_rest() -> TestResult {
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let (handle, table, file) = orders_with_one_file(
        &p,
        "tw",
        &[(1, Some("eu"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    let ident = table.identifier().clone();
    AppendBuilder::new(&handle, ident.clone())
        .with_base(table)
        .with_files([file])
        .await?;
    assert_eq!(py_ids("tw", &p, "tw.orders")?, json!([1, 1, 2, 2]));
    DeleteBuilder::new(&handle, ident)
        .with_filter_text("id = 1")
        .await?;
    assert_eq!(py_ids("tw", &p, "tw.orders")?, json!([2, 2]));
    Ok(())
}

/// A position delete applies to the scan tasks the planner attached it to, not to every task
/// of its data file's path: a file listed again after the delete (a newer entry, which Java's
/// `DeleteFileIndex` leaves it off) keeps every row. iceberg 0.10.1's reader merged the
/// positions per path once loaded, so a task read after the delete's was cut too, whichever
/// entry it read. (PyIceberg 0.12 keys its position deletes by path too: no oracle here.)
#[tokio::test(flavor = "multi_thread")]
async fn a_position_delete_applies_only_to_the_entries_it_was_planned_for() -> TestResult {
    use futures::{StreamExt, TryStreamExt};
    let dir = tempfile::tempdir()?;
    let (handle, table, file) = orders_with_one_file(
        &sqlite(dir.path()),
        "pd",
        &[(1, Some("eu"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    let ident = table.identifier().clone();
    let table = commit_position_delete(
        &handle,
        &table,
        file.file_path(),
        file.partition().clone(),
        &[0],
    )
    .await?;
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .with_base(table)
        .with_files([file])
        .await?;
    // The task the delete is attached to first, then the other, through one reader (its
    // clones share what they loaded): the order that cut the newer entry.
    let snapshot = table.metadata().current_snapshot_id().unwrap_or_default();
    let mut tasks = ops_core::scan::plan_files(&table, snapshot, None).await?;
    tasks.sort_by_key(|t| t.deletes.is_empty());
    assert_eq!(
        tasks.iter().map(|t| t.deletes.len()).collect::<Vec<_>>(),
        [1, 0]
    );
    let reader = iceberg::arrow::ArrowReaderBuilder::new(
        table.file_io().clone(),
        iceberg::Runtime::try_current()?,
    )
    .build();
    let mut rows = Vec::new();
    for task in tasks {
        let batches: Vec<arrow_array::RecordBatch> = reader
            .clone()
            .read(futures::stream::iter([Ok(task)]).boxed())?
            .stream()
            .try_collect()
            .await?;
        rows.push(batches.iter().map(|b| b.num_rows()).sum::<usize>());
    }
    assert_eq!(
        rows,
        [1, 2],
        "the newer entry lost the row deleted from the older one"
    );
    // Through our scan and a delete, as users read and write it.
    assert_eq!(scanned_ids(&table).await?, [1, 2, 2]);
    let (table, _) = DeleteBuilder::new(&handle, ident)
        .with_filter_text("id = 2")
        .await?;
    assert_eq!(scanned_ids(&table).await?, [1]);
    Ok(())
}

/// Our scan (upserts read the destination through it, the migration history its rows)
/// applies equality deletes NULL equal to NULL, as Java does: a row whose equality column is
/// NULL is not deleted by `amount = 2` (iceberg 0.10.1's reader, applying `amount != 2`,
/// dropped it).
#[tokio::test(flavor = "multi_thread")]
async fn the_scan_keeps_a_null_key_under_an_equality_delete() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_, table, _) = orders_with_an_equality_delete(
        dir.path(),
        &[
            (1, Some("eu"), Some(2)),
            (2, Some("eu"), None),
            (3, Some("eu"), Some(3)),
        ],
    )
    .await?;
    assert_eq!(scanned_ids(&table).await?, [2, 3]);
    Ok(())
}

/// The manifests of `table`'s current snapshot.
async fn current_manifests(table: &Table) -> anyhow::Result<Vec<iceberg::spec::ManifestFile>> {
    let snap = table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    Ok(table
        .manifest_list_reader(snap)
        .load()
        .await?
        .entries()
        .to_vec())
}

/// Delete manifests are merged too, by their own merge manager with the same properties (as
/// Java's `MergingSnapshotProducer`), never into a data manifest; the merged entries keep
/// their sequence numbers, so every delete still applies (PyIceberg reads the rows).
#[tokio::test(flavor = "multi_thread")]
async fn delete_manifests_are_merged_apart_from_data_manifests() -> TestResult {
    use iceberg::spec::ManifestContentType;
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("dmm", &p).await?;
    let table = create_orders(&handle, "dmm").await?;
    let ident = table.identifier().clone();
    PropertiesBuilder::new(&handle, ident.clone())
        .set("commit.manifest.min-count-to-merge", "3")
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    let rows: Vec<(i64, Option<&str>, Option<i32>)> =
        (1..=4).map(|i| (i, Some("eu"), Some(i as i32))).collect();
    let (mut table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &rows).await?)
        .await?;
    let live = {
        let m = current_manifests(&table).await?[0]
            .load_manifest(table.file_io())
            .await?;
        m.entries()[0].data_file().clone()
    };
    // "Spark" deletes rows 0, 1 and 2 (ids 1, 2, 3) in three commits: three delete manifests.
    for pos in [0, 1, 2] {
        table = commit_position_delete(
            &handle,
            &table,
            live.file_path(),
            live.partition().clone(),
            &[pos],
        )
        .await?;
    }
    let before = current_manifests(&table).await?;
    assert_eq!(
        before
            .iter()
            .filter(|m| m.content == ManifestContentType::Deletes)
            .count(),
        3
    );
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(5, Some("us"), Some(5))]).await?)
        .await?;
    let after = current_manifests(&table).await?;
    let deletes: Vec<_> = after
        .iter()
        .filter(|m| m.content == ManifestContentType::Deletes)
        .collect();
    assert_eq!(deletes.len(), 1, "{after:?}");
    assert_eq!(deletes[0].existing_files_count, Some(3), "{after:?}");
    // Data and delete files never share a manifest.
    for mf in &after {
        let m = mf.load_manifest(table.file_io()).await?;
        for e in m.entries() {
            let is_data = e.data_file().content_type() == DataContentType::Data;
            assert_eq!(is_data, mf.content == ManifestContentType::Data, "{mf:?}");
        }
    }
    assert_eq!(py_ids("dmm", &p, "dmm.orders")?, json!([4, 5]));
    Ok(())
}

/// Replace-partitions keeps files of another spec outside the partitions it replaces (Java's
/// `BaseReplacePartitions` never touches other specs) instead of refusing them, and validation
/// ignores other-spec changes that cannot lie in a replaced partition while still refusing one
/// that may.
#[tokio::test(flavor = "multi_thread")]
async fn replace_partitions_keeps_other_spec_files_it_does_not_replace() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("rpo", &p).await?;
    let table = create_orders(&handle, "rpo").await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(1)), (2, Some("us"), Some(2))],
            )
            .await?,
        )
        .await?;
    // Written under spec 0 (identity(region)), committed after the spec gains bucket(id).
    let late_us = orders_files(&table, &[(3, Some("us"), Some(3))]).await?;
    let late_apac = orders_files(&table, &[(4, Some("apac"), Some(4))]).await?;
    EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("id", Transform::Bucket(4), None)
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    let read_at = table.metadata().current_snapshot_id();
    let apac = orders_files(&table, &[(10, Some("apac"), Some(10))]).await?;
    // Another writer adds an old-spec file to 'us' after our read.
    AppendBuilder::new(&handle, ident.clone())
        .add_written(late_us)
        .await?;
    // Replacing 'apac' under the new spec: the old-spec eu/us files cannot be in it.
    ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(apac)
        .validate_from_snapshot(read_at)
        .await?;
    assert_eq!(py_ids("rpo", &p, "rpo.orders")?, json!([1, 2, 3, 10]));
    // Same spec, same partition (apac, bucket(10)): replaced as before.
    let table = handle.catalog().load_table(&ident).await?;
    ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(10, Some("apac"), Some(11))]).await?)
        .await?;
    assert_eq!(py_ids("rpo", &p, "rpo.orders")?, json!([1, 2, 3, 10]));
    // An old-spec file lands in 'apac' after our read: its rows may lie in the partition we
    // replace, so the replace is refused and nothing changes.
    let table = handle.catalog().load_table(&ident).await?;
    let read_at = table.metadata().current_snapshot_id();
    let apac = orders_files(&table, &[(12, Some("apac"), Some(12))]).await?;
    AppendBuilder::new(&handle, ident.clone())
        .add_written(late_apac)
        .await?;
    let err = ReplacePartitionsBuilder::new(&handle, ident.clone())
        .add_written(apac)
        .validate_from_snapshot(read_at)
        .await
        .err();
    assert!(err.is_some(), "a replace over a possibly-overlapping file");
    assert_eq!(py_ids("rpo", &p, "rpo.orders")?, json!([1, 2, 3, 4, 10]));
    Ok(())
}

/// A v1 manifest list may leave out the file and row counts (they are optional in v1): the
/// snapshot summary's totals then come from the manifests' entries, not from zeros.
#[tokio::test(flavor = "multi_thread")]
async fn v1_manifest_lists_without_counts_keep_summary_totals() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("v1c", &p).await?;
    let ns = iceberg::NamespaceIdent::new("v1c".into());
    handle
        .catalog()
        .create_namespace(&ns, HashMap::new())
        .await?;
    let orders = create_orders(&handle, "v1tmp").await?;
    let table = handle
        .catalog()
        .create_table(
            &ns,
            iceberg::TableCreation::builder()
                .name("orders".into())
                .schema(orders.metadata().current_schema().as_ref().clone())
                .format_version(FormatVersion::V1)
                .build(),
        )
        .await?;
    let ident = table.identifier().clone();
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(
            orders_files(
                &table,
                &[(1, Some("eu"), Some(1)), (2, Some("us"), Some(2))],
            )
            .await?,
        )
        .await?;
    // Rewrite the snapshot's manifest list as an old v1 writer would: no counts.
    let snap = table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    let manifests: Vec<_> = current_manifests(&table)
        .await?
        .into_iter()
        .map(|mut m| {
            m.added_files_count = None;
            m.existing_files_count = None;
            m.deleted_files_count = None;
            m.added_rows_count = None;
            m.existing_rows_count = None;
            m.deleted_rows_count = None;
            m
        })
        .collect();
    let mut list = ManifestListWriter::v1(
        table
            .file_io()
            .new_output(snap.manifest_list())?
            .writer()
            .await?,
        snap.snapshot_id(),
        snap.parent_snapshot_id(),
    );
    list.add_manifests(manifests.into_iter())?;
    list.close().await?;
    let reread = current_manifests(&table).await?;
    assert!(reread.iter().all(|m| m.added_rows_count.is_none()));

    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(3, Some("eu"), Some(3))]).await?)
        .await?;
    let summary = &table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?
        .summary()
        .additional_properties;
    assert_eq!(
        summary.get("total-data-files").map(String::as_str),
        Some("2"),
        "{summary:?}"
    );
    assert_eq!(
        summary.get("total-records").map(String::as_str),
        Some("3"),
        "{summary:?}"
    );
    let out = pyiceberg(
        "v1c",
        &p,
        "t = catalog.load_table('v1c.orders')\ns = t.current_snapshot().summary\nemit({'ids': sorted(r['id'] for r in rows(t)), 'files': s['total-data-files'], 'records': s['total-records']})",
    )?;
    assert_eq!(out, json!({"ids": [1, 2, 3], "files": "2", "records": "3"}));
    Ok(())
}

/// An append that starts from a table version the caller holds (`with_base`, which skips
/// loading and parsing the metadata) commits on the current table when that version is stale:
/// the other writer's commit is kept, and no orphaned files are left by the refused attempt.
#[tokio::test(flavor = "multi_thread")]
async fn an_append_from_a_stale_base_reloads_and_keeps_other_commits() -> TestResult {
    append_from_a_stale_base(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_append_from_a_stale_base_reloads_and_keeps_other_commits_on_postgres() -> TestResult {
    append_from_a_stale_base(SqlCatalog::postgres()?).await
}

async fn append_from_a_stale_base(db: SqlCatalog) -> TestResult {
    let p = db.props.clone();
    let handle = open("sb", &p).await?;
    let table = create_orders(&handle, "sb").await?;
    let ident = table.identifier().clone();
    let (stale, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(1, Some("eu"), Some(1))]).await?)
        .await?;
    // Another writer commits; `stale` no longer is the current version.
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&stale, &[(2, Some("us"), Some(2))]).await?)
        .await?;
    let (fresh, m) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&stale, &[(3, Some("eu"), Some(3))]).await?)
        .with_base(stale.clone())
        .await?;
    assert_eq!(fresh.metadata().current_snapshot_id(), Some(m.snapshot_id));
    assert_eq!(fresh.metadata().snapshots().len(), 3);
    assert_eq!(py_ids("sb", &p, "sb.orders")?, json!([1, 2, 3]));
    // Every metadata file and manifest left is referenced: the refused attempt's are gone.
    let listed = files_under(&table_dir(&fresh).join("metadata"));
    let json = listed
        .iter()
        .filter(|f| f.ends_with(".metadata.json"))
        .count();
    assert_eq!(json, 4, "create + three commits: {listed:?}");
    // Starting from the current version needs no reload and commits as usual.
    let (newest, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&fresh, &[(4, Some("us"), Some(4))]).await?)
        .with_base(fresh.clone())
        .await?;
    assert_eq!(newest.metadata().snapshots().len(), 4);
    assert_eq!(py_ids("sb", &p, "sb.orders")?, json!([1, 2, 3, 4]));
    Ok(())
}

/// Manifest merging groups by partition spec only, as Java does: manifests written under
/// different schemas (a column renamed between appends) are merged together as long as they
/// type the partition alike.
#[tokio::test(flavor = "multi_thread")]
async fn manifests_of_different_schemas_are_merged() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("ms", &p).await?;
    let table = create_orders(&handle, "ms").await?;
    let ident = table.identifier().clone();
    PropertiesBuilder::new(&handle, ident.clone())
        .set("commit.manifest.min-count-to-merge", "4")
        .await?;
    for (i, rename) in [
        (1, Some(("amount", "a1"))),
        (2, Some(("a1", "a2"))),
        (3, None),
    ] {
        let table = handle.catalog().load_table(&ident).await?;
        AppendBuilder::new(&handle, ident.clone())
            .add_written(orders_files(&table, &[(i, Some("eu"), Some(i as i32))]).await?)
            .await?;
        if let Some((from, to)) = rename {
            EvolveSchemaBuilder::new(&handle, ident.clone())
                .rename_column(from, to)
                .await?;
        }
    }
    let table = handle.catalog().load_table(&ident).await?;
    let before = current_manifests(&table).await?;
    assert_eq!(before.len(), 3, "{before:?}");
    let (table, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(4, Some("us"), Some(4))]).await?)
        .await?;
    let after = current_manifests(&table).await?;
    assert_eq!(after.len(), 2, "the three old manifests merged: {after:?}");
    assert_eq!(py_ids("ms", &p, "ms.orders")?, json!([1, 2, 3, 4]));
    Ok(())
}

/// A reload finds the version this process committed last without reading the metadata file
/// again, but only while the catalog still points at it: another engine's commit in between is
/// loaded, and the next commit keeps its rows.
#[tokio::test(flavor = "multi_thread")]
async fn a_reload_reuses_our_last_commit_only_while_it_is_current() -> TestResult {
    reload_reuses_our_last_commit(SqlCatalog::sqlite()?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_reuses_our_last_commit_only_while_it_is_current_on_postgres() -> TestResult {
    reload_reuses_our_last_commit(SqlCatalog::postgres()?).await
}

async fn reload_reuses_our_last_commit(db: SqlCatalog) -> TestResult {
    let p = db.props.clone();
    let handle = open("rl", &p).await?;
    let table = create_orders(&handle, "rl").await?;
    let ident = table.identifier().clone();
    let (ours, _) = AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&table, &[(1, Some("eu"), Some(1))]).await?)
        .await?;
    let again = ops_core::commit::load_current(&handle, &ident).await?;
    assert!(std::sync::Arc::ptr_eq(
        &ours.metadata_ref(),
        &again.metadata_ref()
    ));
    // PyIceberg commits: the pointer moves, the reload reads its version.
    pyiceberg(
        "rl",
        &p,
        "import pyarrow as pa\n\
         t = catalog.load_table('rl.orders')\n\
         t.append(pa.table({'id': pa.array([2], pa.int64()), 'region': ['us'], \
         'amount': pa.array([2], pa.int32())}, schema=t.schema().as_arrow()))\n\
         emit({})",
    )?;
    let theirs = ops_core::commit::load_current(&handle, &ident).await?;
    assert_ne!(theirs.metadata_location(), ours.metadata_location());
    assert_eq!(theirs.metadata().snapshots().len(), 2);
    AppendBuilder::new(&handle, ident.clone())
        .add_written(orders_files(&theirs, &[(3, Some("eu"), Some(3))]).await?)
        .await?;
    assert_eq!(py_ids("rl", &p, "rl.orders")?, json!([1, 2, 3]));
    Ok(())
}

/// A write that fails part-way leaves no file behind. iceberg's writers keep the files they
/// rolled over (closed) and the ones they had begun; nothing would ever reference them.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_write_leaves_no_file() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("fw", &sqlite(dir.path())).await?;
    let table = create_orders(&handle, "fw").await?;
    let ident = table.identifier().clone();
    // One-byte files: every batch rolls each partition's file over, so some are closed.
    let table = PropertiesBuilder::new(&handle, ident)
        .set("write.target-file-size-bytes", "1")
        .await?;
    let rows = |base: i64| -> Vec<(i64, Option<&'static str>, Option<i32>)> {
        (base..base + 4)
            .map(|i| (i, Some(if i % 2 == 0 { "eu" } else { "us" }), Some(1)))
            .collect()
    };
    let data = table_dir(&table).join("data");

    // Control: the same rows without the failure are written as files.
    let ok = [
        orders_batch(&table, &rows(0))?,
        orders_batch(&table, &rows(4))?,
    ];
    let written =
        ops_core::write::write_data_files(&table, futures::stream::iter(ok.map(Ok))).await?;
    assert!(written.len() >= 4, "{written:?}");
    assert_eq!(files_under(&data).len(), written.len());
    for f in &written {
        std::fs::remove_file(f.file_path().trim_start_matches("file://"))?;
    }

    let failing = futures::stream::iter([
        Ok(orders_batch(&table, &rows(0))?),
        Ok(orders_batch(&table, &rows(4))?),
        Err(Error::InvalidInput("the source failed".into())),
    ]);
    let err = ops_core::write::write_data_files(&table, failing)
        .await
        .expect_err("the source's error");
    assert!(err.to_string().contains("the source failed"), "{err}");
    assert_eq!(files_under(&data), Vec::<String>::new());
    Ok(())
}

/// The metadata lists snapshots in commit order, as Java and PyIceberg write it (a reader's
/// `snapshots()[-1]` is the newest): four PyIceberg appends, then our delete and append, on a
/// v1 and a v2 table. iceberg 0.10.1 wrote them in its hash map's order (a new-user trial saw
/// sequence numbers `[4, 5, 1, 3, 2]`).
#[tokio::test(flavor = "multi_thread")]
async fn snapshots_are_listed_in_commit_order() -> TestResult {
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("c", &p).await?;
    for version in [1, 2] {
        pyiceberg(
            "c",
            &p,
            &format!(
                "from pyiceberg.schema import Schema\n\
                 from pyiceberg.types import NestedField, LongType\n\
                 if ('ord',) not in catalog.list_namespaces():\n    catalog.create_namespace('ord')\n\
                 t = catalog.create_table('ord.v{version}', schema=Schema(NestedField(1, 'id', LongType(), required=False)), properties={{'format-version': '{version}'}})\n\
                 for i in range(4):\n    t.append(pa.table({{'id': pa.array([i], pa.int64())}}))\n\
                 emit(1)"
            ),
        )?;
        let ident = TableIdent::from_strs(["ord", &format!("v{version}")])?;
        DeleteBuilder::new(&handle, ident.clone())
            .with_filter_text("id = 1")
            .await?;
        let out = pyiceberg(
            "c",
            &p,
            &format!(
                "t = catalog.load_table('ord.v{version}')\n\
                 emit({{'ids': [s.snapshot_id for s in t.snapshots()], \
                        'times': [s.timestamp_ms for s in t.snapshots()], \
                        'current': t.current_snapshot().snapshot_id, \
                        'log': [e.snapshot_id for e in t.metadata.snapshot_log]}})"
            ),
        )?;
        // The snapshot log is in commit order by definition.
        assert_eq!(out["ids"], out["log"], "v{version}: {out}");
        let ids = out["ids"].as_array().cloned().unwrap_or_default();
        assert_eq!(ids.len(), 5, "v{version}: {out}");
        assert_eq!(ids.last(), Some(&out["current"]), "v{version}: {out}");
    }
    Ok(())
}
