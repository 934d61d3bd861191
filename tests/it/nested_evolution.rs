//! Files written before a table's nested fields changed (issue 31, found by the table fuzzer:
//! seeds 10061, 20024, 20089, 90004, 3314, 90017 in `tests/fuzz/seeds.txt`). Java reads each
//! file by field id at every level (`BaseParquetReaders`: one reader per expected struct, a
//! child the file lacks null, children in the expected order; `ApplyNameMapping` assigns ids to
//! struct fields, list elements and map keys and values of a file without ids). iceberg
//! 0.10.1's reader matched only top-level columns by id: a field added to a struct failed every
//! read of the older files ("Incorrect number of arrays for StructArray"), a list, map, time or
//! fixed column added later failed them too ("unexpected target column type"), a struct whose
//! fields were moved was cast by position, and the struct of a file read through a name mapping
//! came back NULL — a copy wrote NULLs where the source had values.
//!
//! The table (PyIceberg): `id long, s struct<a string, z string>, l list<struct<p int>>`, two
//! appended rows (PyIceberg writes `large_list`); a Hive file without field ids (struct and
//! list included) registered by PyIceberg's `add_files`, which gives the table its name
//! mapping; then `s.c list<time>`, `m map<string, struct<x int>>`, `f fixed[3]` and
//! `l.element.q string` added, `s.z` moved before `s.a` (both strings: a positional read swaps
//! them silently), and one more append with every field set. PyIceberg reads the table and
//! every result.

use std::collections::BTreeMap;

use iceberg::TableIdent;
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_datamig::{CopyMode, DataMigrator, WriteMode};
use ops_maintenance::compact::CompactBuilder;
use serde_json::{Value, json};

use crate::common::*;

const NS: &str = "nest";

/// Makes `nest.<name>` as the module doc says; returns PyIceberg's rows of it.
fn evolved_table(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Vec<Value>> {
    let prelude = prelude();
    let code = format!(
        r#"{prelude}
import datetime, os
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import (NestedField, LongType, StringType, StructType, ListType, TimeType,
    MapType, IntegerType, FixedType)

if ('{NS}',) not in catalog.list_namespaces():
    catalog.create_namespace('{NS}')
schema = Schema(
    NestedField(1, 'id', LongType(), required=True),
    NestedField(2, 's', StructType(
        NestedField(3, 'a', StringType(), required=False),
        NestedField(4, 'z', StringType(), required=False)), required=False),
    NestedField(5, 'l', ListType(element_id=6, element_required=False,
        element_type=StructType(NestedField(7, 'p', IntegerType(), required=False))),
        required=False))
t = catalog.create_table('{NS}.{name}', schema=schema)
t.append(pa.Table.from_pylist(
    [{{'id': 1, 's': {{'a': 'a1', 'z': 'z1'}}, 'l': [{{'p': 1}}, None]}},
     {{'id': 2, 's': None, 'l': None}}],
    schema=t.schema().as_arrow()))

# A Hive file: no field ids, the struct included; add_files sets the name mapping.
hive = t.location().removeprefix('file://') + '/data/hive-00000.parquet'
os.makedirs(os.path.dirname(hive), exist_ok=True)
hive_schema = pa.schema([
    pa.field('id', pa.int64(), nullable=False),
    pa.field('s', pa.struct([('a', pa.string()), ('z', pa.string())])),
    pa.field('l', pa.list_(pa.field('element', pa.struct([('p', pa.int32())]))))])
pq.write_table(pa.Table.from_pylist(
    [{{'id': 3, 's': {{'a': 'a3', 'z': 'z3'}}, 'l': [{{'p': 3}}]}},
     {{'id': 4, 's': {{'a': None, 'z': 'z4'}}, 'l': None}}],
    schema=hive_schema), hive)
t.add_files(file_paths=['file://' + hive])

t = catalog.load_table('{NS}.{name}')
with t.update_schema() as u:
    u.add_column(('s', 'c'), ListType(element_id=1, element_type=TimeType(), element_required=False))
    u.add_column('m', MapType(key_id=1, key_type=StringType(), value_id=2,
        value_type=StructType(NestedField(3, 'x', IntegerType(), required=False)),
        value_required=False))
    u.add_column('f', FixedType(3))
    u.add_column(('l', 'element', 'q'), StringType())
with t.update_schema() as u:
    u.move_first('s.z')
t = catalog.load_table('{NS}.{name}')
t.append(pa.Table.from_pylist([{{
    'id': 5,
    's': {{'z': 'z5', 'a': 'a5', 'c': [datetime.time(1, 2, 3), None]}},
    'm': {{'k': {{'x': 7}}}},
    'f': b'abc',
    'l': [{{'p': 5, 'q': 'q5'}}]}}], schema=t.schema().as_arrow()))
emit(rows(catalog.load_table('{NS}.{name}')))
"#
    );
    let out = ops_tests::oracle::pyiceberg("c", p, &code)?;
    Ok(sorted(out))
}

fn sorted(v: Value) -> Vec<Value> {
    let mut rows = v.as_array().cloned().unwrap_or_default();
    sort_rows(&mut rows);
    rows
}

/// Every snippet starts with the fuzzer's correction of apache/iceberg-python#3833: PyIceberg
/// reads (and writes) a NULL `list<struct>` or `map<_, struct>` stored in a file as an empty
/// one, but NULL where the file lacks the column (`tests/fuzz/pyiceberg_fixes.py`).
fn prelude() -> String {
    let fixes = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz");
    format!("import sys\nsys.path.insert(0, {fixes:?})\nimport pyiceberg_fixes\n")
}

/// PyIceberg's rows of `nest.<name>`, sorted.
fn py_rows(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Vec<Value>> {
    let prelude = prelude();
    Ok(sorted(ops_tests::oracle::pyiceberg(
        "c",
        p,
        &format!("{prelude}emit(rows(catalog.load_table('{NS}.{name}')))"),
    )?))
}

fn ident(name: &str) -> anyhow::Result<TableIdent> {
    Ok(TableIdent::from_strs([NS, name])?)
}

async fn setup() -> anyhow::Result<(SqlCatalog, CatalogHandle)> {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    Ok((db, handle))
}

/// The rows PyIceberg reads, as the test means them: the Hive file's struct has its values,
/// the moved fields theirs, the fields added later are NULL in the older rows.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_reads_the_table_as_meant() -> TestResult {
    let (db, _) = setup().await?;
    let rows = evolved_table(&db.props, "t")?;
    let by_id = |id: i64| rows.iter().find(|r| r["id"] == json!(id)).cloned();
    assert_eq!(
        by_id(1).map(|r| r["s"].clone()),
        Some(json!({"z": "z1", "a": "a1", "c": null}))
    );
    assert_eq!(
        by_id(4).map(|r| r["s"].clone()),
        Some(json!({"z": "z4", "a": null, "c": null}))
    );
    assert_eq!(by_id(2).map(|r| r["m"].clone()), Some(Value::Null));
    assert_eq!(
        by_id(1).map(|r| r["l"].clone()),
        Some(json!([{"p": 1, "q": null}, null]))
    );
    assert_eq!(
        by_id(3).map(|r| r["l"].clone()),
        Some(json!([{"p": 3, "q": null}]))
    );
    assert_eq!(rows.len(), 5);
    Ok(())
}

/// A copy in each mode that reads rows (the name mapping rules out a file copy) has
/// PyIceberg's rows of the source.
#[tokio::test(flavor = "multi_thread")]
async fn a_copy_keeps_every_nested_value() -> TestResult {
    let (db, handle) = setup().await?;
    let want = evolved_table(&db.props, "src")?;
    copies_read_as(&db, &handle, "src", &want).await
}

/// Copies `nest.<src>` into new tables `<src>_auto` and `<src>_rewrite` in the two modes that
/// read rows; PyIceberg reads `want` from each.
async fn copies_read_as(
    db: &SqlCatalog,
    handle: &CatalogHandle,
    src: &str,
    want: &[Value],
) -> TestResult {
    for mode in [CopyMode::Auto, CopyMode::Rewrite] {
        let dest = format!("{src}_{}", mode.as_str());
        DataMigrator::new(handle, ident(src)?, handle, ident(&dest)?)
            .create_dest(true)
            .copy_mode(mode)
            .run()
            .await?;
        assert_eq!(
            py_rows(&db.props, &dest)?,
            want,
            "copy mode {}",
            mode.as_str()
        );
    }
    Ok(())
}

/// Compaction rewrites the older files with the rest: rows unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_keeps_every_nested_value() -> TestResult {
    let (db, handle) = setup().await?;
    let want = evolved_table(&db.props, "cmp")?;
    let (_, m) = CompactBuilder::new(&handle, ident("cmp")?)
        .min_input_files(2)
        .await?;
    assert_eq!(m.input_files(), 3, "{m:?}");
    assert_eq!(py_rows(&db.props, "cmp")?, want);
    Ok(())
}

/// A copy-on-write delete filtering on the moved, name-mapped field `s.a` deletes the rows
/// where it holds and rewrites the rest of their files.
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_on_a_moved_nested_field_keeps_the_other_rows() -> TestResult {
    let (db, handle) = setup().await?;
    let all = evolved_table(&db.props, "del")?;
    DeleteBuilder::new(&handle, ident("del")?)
        .with_filter_text("s.a IN ('a1', 'a3') OR s.z = 'z5'")
        .await?;
    let want: Vec<Value> = all
        .into_iter()
        .filter(|r| ![1, 3, 5].contains(&r["id"].as_i64().unwrap_or_default()))
        .collect();
    assert_eq!(py_rows(&db.props, "del")?, want);
    Ok(())
}

/// An upsert replacing rows of the older files (one appended, one imported) and adding one.
#[tokio::test(flavor = "multi_thread")]
async fn an_upsert_into_older_files_keeps_every_nested_value() -> TestResult {
    let (db, handle) = setup().await?;
    let all = evolved_table(&db.props, "up")?;
    let prelude = prelude();
    let changes = sorted(ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            r#"{prelude}
import datetime
src = catalog.load_table('{NS}.up')
t = catalog.create_table('{NS}.changes', schema=src.schema())
t.append(pa.Table.from_pylist([
    {{'id': 1, 's': {{'z': 'Z1', 'a': 'a1', 'c': [datetime.time(4, 5, 6)]}}, 'm': None, 'f': b'xyz', 'l': None}},
    {{'id': 3, 's': {{'z': 'z3', 'a': 'A3', 'c': None}}, 'm': {{'q': None}}, 'f': None, 'l': [{{'p': 33, 'q': None}}]}},
    {{'id': 9, 's': None, 'm': {{'n': {{'x': 1}}}}, 'f': b'new', 'l': []}}], schema=t.schema().as_arrow()))
emit(rows(catalog.load_table('{NS}.changes')))
"#
        ),
    )?);
    DataMigrator::new(&handle, ident("changes")?, &handle, ident("up")?)
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .run()
        .await?;
    let mut want: Vec<Value> = all
        .into_iter()
        .filter(|r| !changes.iter().any(|c| c["id"] == r["id"]))
        .chain(changes.iter().cloned())
        .collect();
    sort_rows(&mut want);
    assert_eq!(py_rows(&db.props, "up")?, want);
    Ok(())
}

/// A column default (PyIceberg 0.12 writes `initial-default` into v2 tables; Java allows
/// defaults only from v3) is refused by every path that reads rows, naming the column: read as
/// NULL, a delete's rewrite, a compaction or a copy would replace the default for good.
#[tokio::test(flavor = "multi_thread")]
async fn a_column_default_is_refused_not_read_as_null() -> TestResult {
    let (db, handle) = setup().await?;
    let before = sorted(ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, IntegerType, StructType
catalog.create_namespace('{NS}')
t = catalog.create_table('{NS}.dflt', schema=Schema(
    NestedField(1, 'id', LongType(), required=True),
    NestedField(2, 's', StructType(NestedField(3, 'a', IntegerType(), required=False)), required=False)))
t.append(pa.Table.from_pylist([{{'id': 1, 's': {{'a': 1}}}}, {{'id': 2, 's': None}}], schema=t.schema().as_arrow()))
with t.update_schema() as u:
    u.add_column(('s', 'd'), IntegerType(), default_value=7)
t = catalog.load_table('{NS}.dflt')
t.append(pa.Table.from_pylist([{{'id': 3, 's': {{'a': 3, 'd': 4}}}}], schema=t.schema().as_arrow()))
emit(rows(catalog.load_table('{NS}.dflt')))
"#
        ),
    )?);
    assert_eq!(
        before[0]["s"],
        json!({"a": 1, "d": 7}),
        "PyIceberg applies it"
    );
    let refused = |e: String| {
        assert!(
            e.contains("column 's.d'") && e.contains("initial-default"),
            "{e}"
        )
    };
    let e = DeleteBuilder::new(&handle, ident("dflt")?)
        .with_filter_text("id = 2")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    refused(e);
    let e = CompactBuilder::new(&handle, ident("dflt")?)
        .min_input_files(2)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    refused(e);
    let e = DataMigrator::new(&handle, ident("dflt")?, &handle, ident("copy")?)
        .create_dest(true)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    refused(e);
    assert!(
        !handle.catalog().table_exists(&ident("copy")?).await?,
        "the refused copy created its destination"
    );
    // As a destination too: an append from a table without the field would write NULL where
    // Java writes the field's default.
    ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        &format!(
            "from pyiceberg.schema import Schema\n\
             from pyiceberg.types import NestedField, LongType\n\
             t = catalog.create_table('{NS}.plain', schema=Schema(NestedField(1, 'id', LongType(), required=True)))\n\
             t.append(pa.Table.from_pylist([{{'id': 9}}], schema=t.schema().as_arrow()))\n\
             emit(1)"
        ),
    )?;
    let e = DataMigrator::new(&handle, ident("plain")?, &handle, ident("dflt")?)
        .schema_reconciler(
            ops_reconcile::SchemaReconciler::new()
                .on_missing_in_source(ops_reconcile::MissingInSource::Null),
        )
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    refused(e);
    assert_eq!(py_rows(&db.props, "dflt")?, before, "nothing changed");
    Ok(())
}

/// A nested column as an upsert key is refused before the source is read (it was accepted, and
/// the key pre-pass then reported "holds key ([]) twice", advising `--on-duplicate-keys`).
#[tokio::test(flavor = "multi_thread")]
async fn a_nested_upsert_key_is_refused_up_front() -> TestResult {
    let (db, handle) = setup().await?;
    let before = evolved_table(&db.props, "keyed")?;
    for (key, kind) in [("l", "list"), ("s", "struct"), ("m", "map")] {
        let e = DataMigrator::new(
            &handle,
            ident("keyed")?,
            &handle,
            ident(&format!("to_{key}"))?,
        )
        .create_dest(true)
        .write_mode(WriteMode::Upsert)
        .upsert_keys([key])
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains(&format!("upsert key '{key}' is a {kind} column")),
            "{e}"
        );
    }
    assert_eq!(py_rows(&db.props, "keyed")?, before);
    Ok(())
}

/// Makes `nest.<name>`: a struct `c1`, a struct `s.n` inside a struct, the struct elements of a
/// list `l`, the struct values of a map `m` and a struct `c2` whose one field is a map, each of
/// whose fields (all of them) was dropped after one file was written, and another added; then
/// a second file. PyIceberg's rows.
fn dropped_fields_table(p: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Vec<Value>> {
    let prelude = prelude();
    Ok(sorted(ops_tests::oracle::pyiceberg(
        "c",
        p,
        &format!(
            r#"{prelude}
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, IntegerType, StringType, StructType, ListType, MapType

if ('{NS}',) not in catalog.list_namespaces():
    catalog.create_namespace('{NS}')
t = catalog.create_table('{NS}.{name}', schema=Schema(
    NestedField(1, 'id', LongType(), required=True),
    NestedField(2, 'c1', StructType(NestedField(3, 'om', LongType(), required=False)), required=False),
    NestedField(4, 's', StructType(NestedField(5, 'a', IntegerType(), required=False),
        NestedField(6, 'n', StructType(NestedField(7, 'b', IntegerType(), required=False)),
            required=False)), required=False),
    NestedField(8, 'l', ListType(element_id=9, element_required=False,
        element_type=StructType(NestedField(10, 'p', IntegerType(), required=False))), required=False),
    NestedField(11, 'm', MapType(key_id=12, key_type=StringType(), value_id=13,
        value_required=False,
        value_type=StructType(NestedField(14, 'x', IntegerType(), required=False))),
        required=False),
    NestedField(15, 'c2', StructType(NestedField(16, 'mm', MapType(key_id=17,
        key_type=StringType(), value_id=18, value_type=IntegerType(), value_required=False),
        required=False)), required=False)))
t.append(pa.Table.from_pylist([
    {{'id': 1, 'c1': {{'om': 1}}, 's': {{'a': 1, 'n': {{'b': 2}}}}, 'l': [{{'p': 1}}, None],
     'm': {{'k': {{'x': 1}}, 'j': None}}, 'c2': {{'mm': {{'a': 1}}}}}},
    {{'id': 2, 'c1': None, 's': None, 'l': None, 'm': None, 'c2': None}},
    {{'id': 3, 'c1': {{'om': None}}, 's': {{'a': None, 'n': None}}, 'l': [], 'm': {{}},
     'c2': {{'mm': None}}}},
    {{'id': 4, 'c1': {{'om': 4}}, 's': {{'a': 4, 'n': {{'b': None}}}}, 'l': [{{'p': None}}],
     'm': {{'k': {{'x': None}}}}, 'c2': {{'mm': {{}}}}}}], schema=t.schema().as_arrow()))
with t.update_schema() as u:
    u.add_column(('c1', 'pc'), IntegerType())
    u.add_column(('s', 'n', 'b2'), IntegerType())
    u.add_column(('l', 'element', 'q'), IntegerType())
    u.add_column(('m', 'value', 'y'), IntegerType())
    u.add_column(('c2', 'pc2'), IntegerType())
with t.update_schema() as u:
    u.delete_column(('c1', 'om'))
    u.delete_column(('s', 'n', 'b'))
    u.delete_column(('l', 'element', 'p'))
    u.delete_column(('m', 'value', 'x'))
    u.delete_column(('c2', 'mm'))
t = catalog.load_table('{NS}.{name}')
t.append(pa.Table.from_pylist([
    {{'id': 9, 'c1': {{'pc': 9}}, 's': {{'a': 9, 'n': {{'b2': 9}}}}, 'l': [{{'q': 9}}],
     'm': {{'k': {{'y': 9}}}}, 'c2': {{'pc2': 9}}}},
    {{'id': 10, 'c1': None, 's': None, 'l': None, 'm': None, 'c2': None}}], schema=t.schema().as_arrow()))
emit(rows(catalog.load_table('{NS}.{name}')))
"#
        ),
    )?))
}

/// A struct whose fields were all dropped still has its value in the files written before
/// (table fuzzer seed 102788): PyIceberg reads `{new: NULL}` at every level, and Java's
/// `PruneColumns` keeps such a struct whole below the top level. iceberg's reader left it out
/// of the file's projection, so it read as NULL: a compaction of those files together with
/// newer ones (the table's schema then the reader's) or a delete rewrote the values as NULL,
/// and a map of such structs failed every read ("Map field must have exactly 2 fields"). `c2`
/// is read through its map (keys and values), which a single leaf would leave half-read.
#[tokio::test(flavor = "multi_thread")]
async fn a_struct_whose_fields_were_all_dropped_keeps_its_value() -> TestResult {
    let (db, handle) = setup().await?;
    let want = dropped_fields_table(&db.props, "drop_cmp")?;
    let by_id = |id: i64| want.iter().find(|r| r["id"] == json!(id)).cloned();
    let fields = |id: i64| {
        by_id(id).map(|r| {
            ["c1", "s", "l", "m", "c2"]
                .iter()
                .map(|c| r[*c].clone())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        fields(1),
        Some(vec![
            json!({"pc": null}),
            json!({"a": 1, "n": {"b2": null}}),
            json!([{"q": null}, null]),
            json!([["k", {"y": null}], ["j", null]]),
            json!({"pc2": null}),
        ]),
        "PyIceberg keeps the structs"
    );
    assert_eq!(
        fields(3),
        Some(vec![
            json!({"pc": null}),
            json!({"a": null, "n": null}),
            json!([]),
            json!([]),
            json!({"pc2": null}),
        ])
    );
    let (_, m) = CompactBuilder::new(&handle, ident("drop_cmp")?)
        .min_input_files(2)
        .await?;
    assert_eq!(m.input_files(), 2, "{m:?}");
    assert_eq!(py_rows(&db.props, "drop_cmp")?, want, "compaction");

    let all = dropped_fields_table(&db.props, "drop_del")?;
    DeleteBuilder::new(&handle, ident("drop_del")?)
        .with_filter_text("id = 2")
        .await?;
    let kept: Vec<Value> = all.into_iter().filter(|r| r["id"] != json!(2)).collect();
    assert_eq!(py_rows(&db.props, "drop_del")?, kept, "delete");

    // Copies read the files written before the drop (the compacted table has none left).
    let want = dropped_fields_table(&db.props, "drop_copy")?;
    copies_read_as(&db, &handle, "drop_copy", &want).await
}
