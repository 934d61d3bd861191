//! Identity-partition values of files that lack the column (issue 31, review hazard 1): a Hive
//! file registered as Spark's `migrate`/`add_files` registers it — in `dt=2024-01-01/`, without
//! a `dt` column, its manifest entry's partition tuple holding the value — reads `dt` from the
//! tuple on every path (Java's `PartitionUtil.constantsMap`), as PyIceberg reads it: scans,
//! compaction, copy-on-write delete, upsert, migrate-data (local run and the plan/task/commit
//! steps the cluster runs), verify. iceberg 0.10.1's planner passes no partition spec to its
//! reader, which then reads NULL.
//!
//! The table has `schema.name-mapping.default` (as PyIceberg's and Spark's `add_files` set it),
//! which every whole-file read carries to iceberg's reader (`delete::WholeFileReads`, iceberg's
//! planner where delete files apply). One Hive file has
//! no field ids (read through the name mapping by iceberg's reader), one has them (read page by
//! page by the migration's own reader).

use std::collections::BTreeMap;

use iceberg::TableIdent;
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_datamig::{CopyMode, DataMigrator, VerifyMethod, WriteMode};
use ops_maintenance::compact::CompactBuilder;
use serde_json::{Value, json};

use crate::common::*;

const NS: &str = "hive";

/// Python for the tables below: the imports, `create`, and `register_hive_file`, which registers a
/// file as Spark registers a Hive file: the partition from its folder (`value`), the rest from
/// its footer (PyIceberg's own `add_files` would infer the partition from the footer).
const HIVE_PY: &str = r#"
import os
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType, DoubleType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
from pyiceberg.io.pyarrow import (
    compute_statistics_plan, data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record
from pyiceberg.table import TableProperties

def create(ns, name, fields):
    # Optional columns `fields` (name, type), partitioned by identity of the second.
    if (ns,) not in catalog.list_namespaces():
        catalog.create_namespace(ns)
    schema = Schema(*[NestedField(i + 1, n, t, required=False) for i, (n, t) in enumerate(fields)])
    spec = PartitionSpec(PartitionField(
        source_id=2, field_id=1000, transform=IdentityTransform(), name=fields[1][0]))
    return catalog.create_table(f'{ns}.{name}', schema=schema, partition_spec=spec)

def register_hive_file(append, t, md, path, value):
    inp = t.io.new_input(path)
    with inp.open() as f:
        footer = pq.read_metadata(f)
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=footer,
        stats_columns=compute_statistics_plan(md.schema(), md.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(md.schema()))
    append.append_data_file(DataFile.from_args(
        content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
        partition=Record(value), file_size_in_bytes=len(inp), sort_order_id=None,
        spec_id=md.default_spec_id, equality_ids=None, key_metadata=None,
        **stats.to_serialized_dict()))
"#;

/// `hive.<name>` (id long, dt string, v string) partitioned by identity(dt), made by PyIceberg:
/// two appended rows, then two Hive files without `dt` registered under dt=2024-01-01 (one
/// without field ids, one with), the table given a name mapping as `add_files` gives it.
fn hive_table(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Value> {
    let code = format!(
        r#"
{HIVE_PY}
t = create('{NS}', '{name}', [('id', LongType()), ('dt', StringType()), ('v', StringType())])
t.append(pa.table({{'id': pa.array([1, 2], pa.int64()), 'dt': ['2024-01-02', '2024-01-01'], 'v': ['a', 'b']}}))
t = catalog.load_table('{NS}.{name}')

def hive_file(n, table):
    path = t.location() + f'/data/dt=2024-01-01/hive-{{n:05d}}.parquet'
    local = path.removeprefix('file://')
    os.makedirs(os.path.dirname(local), exist_ok=True)
    pq.write_table(table, local)
    return path

plain = hive_file(0, pa.table({{'id': pa.array([10, 11, 12], pa.int64()), 'v': ['x', 'y', 'z']}}))
with_ids = hive_file(1, pa.Table.from_arrays(
    [pa.array([20, 21], pa.int64()), pa.array(['p', 'q'])],
    schema=pa.schema([
        pa.field('id', pa.int64(), metadata={{'PARQUET:field_id': '1'}}),
        pa.field('v', pa.string(), metadata={{'PARQUET:field_id': '3'}})])))

with t.transaction() as tx:
    md = tx.table_metadata
    if md.name_mapping() is None:
        tx.set_properties(**{{TableProperties.DEFAULT_NAME_MAPPING: md.schema().name_mapping.model_dump_json()}})
    with tx.update_snapshot().fast_append() as append:
        for path in [plain, with_ids]:
            register_hive_file(append, t, md, path, '2024-01-01')
emit(rows(catalog.load_table('{NS}.{name}')))
"#
    );
    ops_tests::oracle::pyiceberg("c", p, &code)
}

/// Every row of the table [`hive_table`] makes, `dt` included.
fn expected() -> Vec<Value> {
    let mut rows = vec![
        json!({"id": 1, "dt": "2024-01-02", "v": "a"}),
        json!({"id": 2, "dt": "2024-01-01", "v": "b"}),
        json!({"id": 10, "dt": "2024-01-01", "v": "x"}),
        json!({"id": 11, "dt": "2024-01-01", "v": "y"}),
        json!({"id": 12, "dt": "2024-01-01", "v": "z"}),
        json!({"id": 20, "dt": "2024-01-01", "v": "p"}),
        json!({"id": 21, "dt": "2024-01-01", "v": "q"}),
    ];
    sort_rows(&mut rows);
    rows
}

/// PyIceberg: `hive.<name>`'s rows (sorted) and the partition value of each live data file.
fn py_view(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<(Vec<Value>, Vec<Value>)> {
    let out = ops_tests::oracle::pyiceberg(
        "c",
        p,
        &format!(
            "t = catalog.load_table('{NS}.{name}')\n\
             emit({{'rows': rows(t), \
                    'partitions': sorted(str(f.file.partition[0]) for f in t.scan().plan_files())}})"
        ),
    )?;
    let mut rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut rows);
    let partitions = out["partitions"].as_array().cloned().unwrap_or_default();
    Ok((rows, partitions))
}

fn ident(name: &str) -> anyhow::Result<TableIdent> {
    Ok(TableIdent::from_strs([NS, name])?)
}

/// No file of `partitions` (PyIceberg's view) is in `dt=null`.
fn none_null(partitions: &[Value], what: &str) {
    assert!(
        partitions.iter().all(|p| p != &json!("None")),
        "{what}: rows landed in dt=null: {partitions:?}"
    );
}

async fn setup() -> anyhow::Result<(SqlCatalog, CatalogHandle)> {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    Ok((db, handle))
}

/// PyIceberg, the oracle, reads `dt` from the partition tuple; so does our scan.
#[tokio::test(flavor = "multi_thread")]
async fn a_hive_file_reads_its_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    let py = hive_table(&db.props, "events")?;
    let mut py = py.as_array().cloned().unwrap_or_default();
    sort_rows(&mut py);
    assert_eq!(py, expected(), "PyIceberg's own reading");
    let table = handle.catalog().load_table(&ident("events")?).await?;
    assert_eq!(scan_json(&table).await?, expected());
    Ok(())
}

/// Compaction rewrites dt=2024-01-01's three files (an appended one, the two Hive files) into
/// one file of that partition.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_keeps_the_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "cmp")?;
    let (_, m) = CompactBuilder::new(&handle, ident("cmp")?)
        .min_input_files(2)
        .await?;
    assert_eq!(m.input_files(), 3, "{m:?}");
    let (rows, partitions) = py_view(&db.props, "cmp")?;
    assert_eq!(rows, expected());
    none_null(&partitions, "compaction");
    assert_eq!(partitions, vec![json!("2024-01-01"), json!("2024-01-02")]);
    Ok(())
}

/// A copy-on-write delete that rewrites each Hive file keeps the other rows' `dt`.
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_rewriting_the_file_keeps_the_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "del")?;
    DeleteBuilder::new(&handle, ident("del")?)
        .with_filter_text("id = 11 OR id = 21")
        .await?;
    let (rows, partitions) = py_view(&db.props, "del")?;
    let want: Vec<Value> = expected()
        .into_iter()
        .filter(|r| r["id"] != json!(11) && r["id"] != json!(21))
        .collect();
    assert_eq!(rows, want);
    none_null(&partitions, "delete");
    Ok(())
}

/// An upsert into the table rewrites the Hive files holding its keys; the rows it keeps keep
/// `dt`, and finding the stored keys reads them with it.
#[tokio::test(flavor = "multi_thread")]
async fn an_upsert_into_the_table_keeps_the_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "up")?;
    ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            "src = catalog.load_table('{NS}.up')\n\
             t = catalog.create_table('{NS}.changes', schema=src.schema(), partition_spec=src.spec())\n\
             t.append(pa.table({{'id': pa.array([11, 20], pa.int64()), \
                                'dt': ['2024-01-01', '2024-01-01'], 'v': ['Y', 'P']}}))\n\
             emit(1)"
        ),
    )?;
    DataMigrator::new(&handle, ident("changes")?, &handle, ident("up")?)
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .run()
        .await?;
    let (rows, partitions) = py_view(&db.props, "up")?;
    let mut want: Vec<Value> = expected()
        .into_iter()
        .map(|mut r| {
            match r["id"].as_i64() {
                Some(11) => r["v"] = json!("Y"),
                Some(20) => r["v"] = json!("P"),
                _ => {}
            }
            r
        })
        .collect();
    sort_rows(&mut want);
    assert_eq!(rows, want);
    none_null(&partitions, "upsert");
    Ok(())
}

/// migrate-data copies the rows with `dt` in every copy mode that reads them (the Hive files
/// lack field ids or sit under a name mapping, so `files` and `reference` refuse the table).
#[tokio::test(flavor = "multi_thread")]
async fn migrate_data_keeps_the_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "events")?;
    for (dest, mode) in [("auto", CopyMode::Auto), ("rewrite", CopyMode::Rewrite)] {
        DataMigrator::new(&handle, ident("events")?, &handle, ident(dest)?)
            .create_dest(true)
            .copy_mode(mode)
            .run()
            .await?;
        let (rows, partitions) = py_view(&db.props, dest)?;
        assert_eq!(rows, expected(), "copy mode {}", mode.as_str());
        none_null(&partitions, mode.as_str());
    }
    Ok(())
}

/// The plan, its tasks and their commit: the steps `migrate-data --cluster` distributes (and
/// `migrate-data run-task` / `commit` run).
#[tokio::test(flavor = "multi_thread")]
async fn a_planned_migrations_tasks_keep_the_partition_value() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "events")?;
    let plan = DataMigrator::new(&handle, ident("events")?, &handle, ident("planned")?)
        .create_dest(true)
        .batch_rows(3)
        .plan()
        .await?;
    let mut outputs = Vec::new();
    for t in &plan.tasks {
        outputs.push(plan.execute_task(&handle, &handle, t.id).await?);
    }
    plan.commit(&handle, &handle, outputs, None).await?;
    let (rows, partitions) = py_view(&db.props, "planned")?;
    assert_eq!(rows, expected(), "plan, tasks, commit");
    none_null(&partitions, "plan, tasks, commit");
    Ok(())
}

/// `verify` of the table against PyIceberg's own copy of it agrees, by partition digests and by
/// sample.
#[tokio::test(flavor = "multi_thread")]
async fn verify_agrees_with_pyicebergs_copy() -> TestResult {
    let (db, handle) = setup().await?;
    hive_table(&db.props, "events")?;
    ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            "src = catalog.load_table('{NS}.events')\n\
             t = catalog.create_table('{NS}.oracle', schema=src.schema(), partition_spec=src.spec())\n\
             t.append(src.scan().to_arrow())\n\
             emit(1)"
        ),
    )?;
    let migrator = DataMigrator::new(&handle, ident("events")?, &handle, ident("oracle")?);
    for method in [VerifyMethod::PartitionHash, VerifyMethod::Sample] {
        let v = migrator.verify(method, 100).await?;
        assert!(v.matches, "{}: {v:?}", method.as_str());
    }
    Ok(())
}

/// `hive.<name>` (id long, d double) partitioned by identity(d), made by PyIceberg: two Hive
/// files without `d` registered under d=0.0 and two under d=-0.0 (Java keeps the two apart,
/// `Double.equals`). Each file's rows read `d` from its own tuple.
fn signed_zero_table(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Value> {
    float_partition_table(
        p,
        name,
        "[('pos', 0.0), ('neg', -0.0), ('pos', 0.0), ('neg', -0.0)]",
    )
}

/// [`signed_zero_table`] with the files `folders_values` names (a Python list of (folder,
/// partition value)): file `n` holds ids `10n` and `10n + 1`.
fn float_partition_table(
    p: &BTreeMap<String, String>,
    name: &str,
    folders_values: &str,
) -> anyhow::Result<Value> {
    let code = format!(
        r#"
{HIVE_PY}
t = create('{NS}', '{name}', [('id', LongType()), ('d', DoubleType())])
with t.transaction() as tx:
    md = tx.table_metadata
    tx.set_properties(**{{TableProperties.DEFAULT_NAME_MAPPING: md.schema().name_mapping.model_dump_json()}})
t = catalog.load_table('{NS}.{name}')
md = t.metadata
with t.transaction() as tx:
    with tx.update_snapshot().fast_append() as append:
        for n, (folder, value) in enumerate({folders_values}):
            path = t.location() + f'/data/{{folder}}/hive-{{n:05d}}.parquet'
            local = path.removeprefix('file://')
            os.makedirs(os.path.dirname(local), exist_ok=True)
            pq.write_table(pa.table({{'id': pa.array([10 * n, 10 * n + 1], pa.int64())}}), local)
            register_hive_file(append, t, md, path, value)
emit(1)
"#
    );
    ops_tests::oracle::pyiceberg("c", p, &code)
}

/// PyIceberg: each row of `hive.<name>` as `[id, d, sign of d]`, sorted (JSON's numbers would
/// compare -0.0 equal to 0.0).
fn signed_rows(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        "c",
        p,
        &format!(
            "import math\n\
             t = catalog.load_table('{NS}.{name}').scan().to_arrow()\n\
             emit(sorted([i, d, math.copysign(1.0, d)] for i, d in zip(t['id'].to_pylist(), t['d'].to_pylist())))"
        ),
    )
}

/// PyIceberg: the rows of `hive.<name>`'s live files by the sign of their partition tuple's
/// `d` (`{"-1.0": rows, "1.0": rows}`), each file's own `d` checked to be its label's.
fn rows_by_label(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        "c",
        p,
        &format!(
            r#"
import math
import pyarrow.parquet as pq
t = catalog.load_table('{NS}.{name}')
out = {{}}
for task in t.scan().plan_files():
    label = str(math.copysign(1.0, task.file.partition[0]))
    with t.io.new_input(task.file.file_path).open() as f:
        d = pq.read_table(f).column('d').to_pylist()
    assert all(str(math.copysign(1.0, v)) == label for v in d), (label, d)
    out[label] = out.get(label, 0) + task.file.record_count
emit(out)
"#
        ),
    )
}

/// A replace of partition d=0.0 keeps d=-0.0's files (Java's `PartitionSet` keeps the two
/// apart): iceberg's `Struct` calls them equal, and the replace removed both.
#[tokio::test(flavor = "multi_thread")]
async fn replacing_the_zero_partition_keeps_the_negative_zero_one() -> TestResult {
    let (db, handle) = setup().await?;
    signed_zero_table(&db.props, "replace")?;
    let table = handle.catalog().load_table(&ident("replace")?).await?;
    let arrow = ops_core::write::table_arrow_schema(&table)?;
    let rows = arrow_array::RecordBatch::try_new(
        arrow,
        vec![
            std::sync::Arc::new(arrow_array::Int64Array::from(vec![100])),
            std::sync::Arc::new(arrow_array::Float64Array::from(vec![0.0])),
        ],
    )?;
    let written = ops_core::write::write_files(&table, futures::stream::iter([Ok(rows)])).await?;
    ops_core::ops::replace_partitions::ReplacePartitionsBuilder::new(&handle, ident("replace")?)
        .add_written(written)
        .await?;
    assert_eq!(
        signed_rows(&db.props, "replace")?,
        json!([
            [10, -0.0, -1.0],
            [11, -0.0, -1.0],
            [30, -0.0, -1.0],
            [31, -0.0, -1.0],
            [100, 0.0, 1.0]
        ])
    );
    Ok(())
}

/// Planned files of two partitions that `Struct` calls equal (-0.0 and 0.0) keep their own
/// tuples: a migration's planned read and compaction's candidates share a tuple between files
/// only when it is equal bit for bit, or the -0.0 files' rows would be read as 0.0.
#[tokio::test(flavor = "multi_thread")]
async fn signed_zero_partitions_keep_their_sign() -> TestResult {
    let (db, handle) = setup().await?;
    signed_zero_table(&db.props, "zeros")?;
    let expected = json!([
        [0, 0.0, 1.0],
        [1, 0.0, 1.0],
        [10, -0.0, -1.0],
        [11, -0.0, -1.0],
        [20, 0.0, 1.0],
        [21, 0.0, 1.0],
        [30, -0.0, -1.0],
        [31, -0.0, -1.0]
    ]);
    assert_eq!(
        signed_rows(&db.props, "zeros")?,
        expected,
        "PyIceberg's own reading"
    );
    DataMigrator::new(&handle, ident("zeros")?, &handle, ident("zeros_copy")?)
        .create_dest(true)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert_eq!(
        signed_rows(&db.props, "zeros_copy")?,
        expected,
        "migrate-data"
    );
    // The writer kept the two partitions' rows in files of their own.
    let by_label = json!({"1.0": 4, "-1.0": 4});
    assert_eq!(
        rows_by_label(&db.props, "zeros_copy")?,
        by_label,
        "migrate-data"
    );
    let (_, m) = CompactBuilder::new(&handle, ident("zeros")?)
        .min_input_files(2)
        .await?;
    assert_eq!(m.input_files(), 4, "{m:?}");
    assert_eq!(signed_rows(&db.props, "zeros")?, expected, "compaction");
    assert_eq!(rows_by_label(&db.props, "zeros")?, by_label, "compaction");
    Ok(())
}

/// An equality delete applies to the files of its own partition as Java's `DeleteFileIndex`
/// tells partitions apart (`Double.compareTo`): `-0.0` and `0.0` are two, every NaN is one.
/// iceberg's index keyed deletes by `Struct`, where `-0.0` equals `0.0`, and applied a delete
/// filed under either zero to the other's files too, deleting rows no delete names. Checked on
/// our scan, a migration's rewrite (PyIceberg reads the copy) and a compaction's rewrite.
#[tokio::test(flavor = "multi_thread")]
async fn an_equality_delete_applies_to_its_own_zero_or_nan_partition_only() -> TestResult {
    use iceberg::spec::{Literal, Struct};
    let (db, handle) = setup().await?;
    // ids 0,1 and 20,21 under d=0.0; 10,11 and 30,31 under d=-0.0; 40,41 under the standard NaN.
    float_partition_table(
        &db.props,
        "eqdel",
        "[('pos', 0.0), ('neg', -0.0), ('pos', 0.0), ('neg', -0.0), ('nan', float('nan'))]",
    )?;
    let mut table = handle.catalog().load_table(&ident("eqdel")?).await?;
    let other_nan = f64::from_bits(0xfff8_0000_0000_0001);
    for (d, ids) in [
        (-0.0, &[0, 10, 20][..]),
        (0.0, &[1, 11]),
        (other_nan, &[40]),
    ] {
        let partition = Struct::from_iter([Some(Literal::double(d))]);
        table =
            crate::commit_layer::commit_equality_delete(&handle, &table, partition, ids).await?;
    }
    // Deleted: 10 (under -0.0), 1 (under 0.0), 40 (a NaN of other bits is the same partition).
    let kept = vec![0, 11, 20, 21, 30, 31, 41];
    let ids = |rows: Vec<Value>| -> Vec<i64> {
        let mut ids: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
        ids.sort_unstable();
        ids
    };
    let table = handle.catalog().load_table(&ident("eqdel")?).await?;
    assert_eq!(ids(scan_json(&table).await?), kept, "scan");
    DataMigrator::new(&handle, ident("eqdel")?, &handle, ident("eqdel_copy")?)
        .create_dest(true)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    let copied = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            "import math\n\
             t = catalog.load_table('{NS}.eqdel_copy').scan().to_arrow()\n\
             emit(sorted([i, str(d), math.copysign(1.0, d)] for i, d in zip(t['id'].to_pylist(), t['d'].to_pylist())))"
        ),
    )?;
    assert_eq!(
        copied,
        json!([
            [0, "0.0", 1.0],
            [11, "-0.0", -1.0],
            [20, "0.0", 1.0],
            [21, "0.0", 1.0],
            [30, "-0.0", -1.0],
            [31, "-0.0", -1.0],
            [41, "nan", 1.0]
        ]),
        "migrate-data, read by PyIceberg"
    );
    let (_, m) = CompactBuilder::new(&handle, ident("eqdel")?)
        .min_input_files(1)
        .await?;
    assert_eq!(m.input_files(), 5, "{m:?}");
    let table = handle.catalog().load_table(&ident("eqdel")?).await?;
    assert_eq!(ids(scan_json(&table).await?), kept, "compaction");
    Ok(())
}
