//! Upsert at scale and by shape: composite keys of every key type (1–4 columns), a 100k-row
//! two-column-key chunk (once a stack overflow), a racing writer touching a chunk's keys,
//! `on_duplicate_keys last` across commits and within a file, map columns, and the corpus `keys`
//! table against PyIceberg's own `Table.upsert` on a twin. PyIceberg reads every result.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogHandle;
use ops_datamig::{DataMigrator, MigrationError, OnDuplicateKeys, WriteMode};
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

fn py(catalog: &BTreeMap<String, String>, code: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg("lake", catalog, code)
}

fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| r.to_string());
    rows
}

fn rows_of(v: &Value) -> Vec<Value> {
    sorted(v.as_array().cloned().unwrap_or_default())
}

/// `ns.name(<key columns> required, v string)`, unpartitioned; key columns `k0`, `k1`, ...
async fn keyed(
    handle: &CatalogHandle,
    ns: &str,
    name: &str,
    types: &[PrimitiveType],
) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let namespace = NamespaceIdent::new(ns.into());
    if !catalog.namespace_exists(&namespace).await? {
        catalog.create_namespace(&namespace, HashMap::new()).await?;
    }
    let mut fields: Vec<_> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            NestedField::required(i as i32 + 1, format!("k{i}"), Type::Primitive(t.clone())).into()
        })
        .collect();
    fields.push(
        NestedField::optional(
            types.len() as i32 + 1,
            "v",
            Type::Primitive(PrimitiveType::String),
        )
        .into(),
    );
    let schema = Schema::builder().with_fields(fields).build()?;
    Ok(catalog
        .create_table(
            &namespace,
            TableCreation::builder()
                .name(name.into())
                .schema(schema)
                .build(),
        )
        .await?)
}

/// Appends one file of `keys` (one array per key column, cast to the table's types) and `v`.
async fn append(
    handle: &CatalogHandle,
    table: &Table,
    keys: Vec<ArrayRef>,
    v: Vec<String>,
) -> anyhow::Result<()> {
    let target = ops_core::write::table_arrow_schema(table)?;
    let mut columns = Vec::new();
    for (k, field) in keys.iter().zip(target.fields()) {
        columns.push(arrow_cast::cast(k, field.data_type())?);
    }
    columns.push(arrow_cast::cast(
        &(Arc::new(StringArray::from(v)) as ArrayRef),
        target.field(keys.len()).data_type(),
    )?);
    let batch = RecordBatch::try_new(target, columns)?;
    ops_core::append::append(
        handle,
        table,
        futures::stream::iter([Ok(batch)]),
        HashMap::new(),
    )
    .await?;
    Ok(())
}

fn upsert(handle: &CatalogHandle, src: [&str; 2], dst: [&str; 2], keys: &[&str]) -> DataMigrator {
    DataMigrator::new(
        handle,
        TableIdent::from_strs(src).expect("static names"),
        handle,
        TableIdent::from_strs(dst).expect("static names"),
    )
    .write_mode(WriteMode::Upsert)
    .upsert_keys(keys.iter().copied())
}

/// Five distinct values of `ty` (two for boolean) at `rows`, as an Arrow array.
fn values(ty: &PrimitiveType, rows: &[usize]) -> anyhow::Result<ArrayRef> {
    fn pick<T: Copy>(v: &[T], rows: &[usize]) -> Vec<T> {
        rows.iter().map(|&r| v[r % v.len()]).collect()
    }
    const MICROS: [i64; 5] = [
        1_700_000_000_000_000,
        1_700_000_000_000_001,
        -1,
        0,
        1_800_000_000_123_456,
    ];
    const FIXED: [[u8; 16]; 5] = [[1; 16], [2; 16], [0; 16], [0xff; 16], [7; 16]];
    Ok(match ty {
        PrimitiveType::Boolean => {
            Arc::new(arrow_array::BooleanArray::from(pick(&[false, true], rows)))
        }
        PrimitiveType::Int => Arc::new(arrow_array::Int32Array::from(pick(
            &[3, -1, 0, i32::MAX, 7],
            rows,
        ))),
        PrimitiveType::Long => {
            Arc::new(Int64Array::from(pick(&[3, -1, 0, i64::MIN, 1 << 40], rows)))
        }
        PrimitiveType::Float => Arc::new(arrow_array::Float32Array::from(pick(
            &[1.5, -2.25, 0.0, 1e30, 3.0],
            rows,
        ))),
        PrimitiveType::Double => Arc::new(arrow_array::Float64Array::from(pick(
            &[1.5, -2.25, 0.0, 1e300, 3.0],
            rows,
        ))),
        PrimitiveType::Decimal { precision, scale } => Arc::new(
            arrow_array::Decimal128Array::from(pick(&[150i128, -150, 1, 99_999_999, 0], rows))
                .with_precision_and_scale(*precision as u8, *scale as i8)?,
        ),
        PrimitiveType::Date => Arc::new(arrow_array::Date32Array::from(pick(
            &[0, -1, 19_000, 20_000, 1],
            rows,
        ))),
        PrimitiveType::Time => Arc::new(arrow_array::Time64MicrosecondArray::from(pick(
            &[0, 3_600_000_000, 1, 86_399_999_999, 5],
            rows,
        ))),
        PrimitiveType::Timestamp => Arc::new(arrow_array::TimestampMicrosecondArray::from(pick(
            &MICROS, rows,
        ))),
        PrimitiveType::Timestamptz => Arc::new(
            arrow_array::TimestampMicrosecondArray::from(pick(&MICROS, rows))
                .with_timezone("+00:00"),
        ),
        PrimitiveType::String => {
            Arc::new(StringArray::from(pick(&["a", "", "é", "zz", "b"], rows)))
        }
        PrimitiveType::Uuid | PrimitiveType::Fixed(_) => Arc::new(
            arrow_array::FixedSizeBinaryArray::try_from_iter(pick(&FIXED, rows).into_iter())?,
        ),
        PrimitiveType::Binary => {
            let v: [&[u8]; 5] = [b"a", b"\x00\xff", b"", b"abc", b"zz"];
            Arc::new(arrow_array::LargeBinaryArray::from(pick(&v, rows)))
        }
        other => anyhow::bail!("no test values for {other}"),
    })
}

/// Every key type, in 1 to 4 key columns (boolean from 2, with a long beside it: it has two
/// values). The source holds keys K0..K3, the destination K0 (same row), K1 (another value)
/// and K4; after the upsert the destination holds the source's rows and its K4 row (PyIceberg
/// reads both), one update and two inserts; a second run changes nothing. Column `j` of row `r`
/// holds value `(r + j) mod 5` of its type, so every key column takes part in the key.
#[tokio::test(flavor = "multi_thread")]
async fn composite_keys_of_every_type_upsert_in_one_to_four_columns() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let types = [
        PrimitiveType::Boolean,
        PrimitiveType::Int,
        PrimitiveType::Long,
        PrimitiveType::Float,
        PrimitiveType::Double,
        PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        },
        PrimitiveType::Date,
        PrimitiveType::Time,
        PrimitiveType::Timestamp,
        PrimitiveType::Timestamptz,
        PrimitiveType::String,
        PrimitiveType::Uuid,
        PrimitiveType::Fixed(16),
        PrimitiveType::Binary,
    ];
    let mut names = Vec::new();
    for (t, ty) in types.iter().enumerate() {
        for n in 1..=4usize {
            let cols: Vec<PrimitiveType> = if *ty == PrimitiveType::Boolean {
                if n == 1 {
                    continue;
                }
                (0..n)
                    .map(|j| {
                        if j % 2 == 0 {
                            PrimitiveType::Boolean
                        } else {
                            PrimitiveType::Long
                        }
                    })
                    .collect()
            } else {
                vec![ty.clone(); n]
            };
            let name = format!("t{t}_{n}");
            let src = keyed(&handle, "src", &name, &cols).await?;
            let dst = keyed(&handle, "dst", &name, &cols).await?;
            let key_cols = |rows: &[usize]| -> anyhow::Result<Vec<ArrayRef>> {
                cols.iter()
                    .enumerate()
                    .map(|(j, c)| {
                        let shifted: Vec<usize> = rows.iter().map(|r| r + j).collect();
                        values(c, &shifted)
                    })
                    .collect()
            };
            append(
                &handle,
                &src,
                key_cols(&[0, 1, 2, 3])?,
                vec!["s0".into(), "s1".into(), "s2".into(), "s3".into()],
            )
            .await?;
            append(
                &handle,
                &dst,
                key_cols(&[0, 1, 4])?,
                vec!["s0".into(), "old".into(), "kept".into()],
            )
            .await?;
            names.push((name, n));
        }
    }
    let list = serde_json::to_string(&names.iter().map(|(n, _)| n).collect::<Vec<_>>())?;
    let before = py(
        &cat,
        &format!(
            "emit({{n: {{'src': rows(catalog.load_table('src.' + n)), 'kept': [r for r in \
             rows(catalog.load_table('dst.' + n)) if r['v'] == 'kept']}} for n in {list}}})"
        ),
    )?;
    for (name, n) in &names {
        let keys: Vec<String> = (0..*n).map(|j| format!("k{j}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let run = || {
            upsert(
                &handle,
                ["src", name.as_str()],
                ["dst", name.as_str()],
                &keys,
            )
            .batch_rows(3)
        };
        let result = run().run().await?;
        assert_eq!(
            (result.rows_inserted, result.rows_updated),
            (Some(2), Some(1)),
            "{name}"
        );
        let again = run().run().await?;
        assert_eq!(
            (again.rows_inserted, again.rows_updated),
            (Some(0), Some(0)),
            "{name} again"
        );
    }
    let after = py(
        &cat,
        &format!("emit({{n: rows(catalog.load_table('dst.' + n)) for n in {list}}})"),
    )?;
    for (name, _) in &names {
        let mut want = rows_of(&before[name]["src"]);
        want.extend(rows_of(&before[name]["kept"]));
        assert_eq!(rows_of(&after[name]), sorted(want), "{name}");
    }
    Ok(())
}

/// Two long key columns, 100,000 source rows into 50,000, one 50,000-row chunk at a time: the
/// key predicate used to nest one level per key and overflowed the stack (the process aborted).
#[tokio::test(flavor = "multi_thread")]
async fn a_two_column_key_upserts_100k_rows_into_50k() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let types = [PrimitiveType::Long, PrimitiveType::Long];
    let src = keyed(&handle, "src", "big", &types).await?;
    let dst = keyed(&handle, "dst", "big", &types).await?;
    let cols = |range: std::ops::Range<i64>| -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from_iter_values(
                range.clone().map(|i| i % 1000),
            )),
            Arc::new(Int64Array::from_iter_values(range.map(|i| i / 1000))),
        ]
    };
    append(
        &handle,
        &src,
        cols(0..100_000),
        (0..100_000).map(|i| format!("s{i}")).collect(),
    )
    .await?;
    // Even rows equal the source's, odd ones differ.
    append(
        &handle,
        &dst,
        cols(0..50_000),
        (0..50_000)
            .map(|i| {
                if i % 2 == 0 {
                    format!("s{i}")
                } else {
                    format!("d{i}")
                }
            })
            .collect(),
    )
    .await?;
    let result = upsert(&handle, ["src", "big"], ["dst", "big"], &["k0", "k1"])
        .batch_rows(50_000)
        .run()
        .await?;
    assert_eq!(
        (result.rows_inserted, result.rows_updated),
        (Some(50_000), Some(25_000))
    );
    let out = py(
        &cat,
        "t = catalog.load_table('dst.big').scan().to_arrow()\n\
         v = t.column('v').to_pylist()\n\
         keys = set(zip(t.column('k0').to_pylist(), t.column('k1').to_pylist()))\n\
         emit({'rows': t.num_rows, 'keys': len(keys), 'from_source': sum(1 for x in v if x.startswith('s'))})",
    )?;
    assert_eq!(
        out,
        json!({"rows": 100_000, "keys": 100_000, "from_source": 100_000})
    );
    Ok(())
}

/// A writer that adds a row with one of a chunk's keys after the upsert's view of the
/// destination and before its commit makes that commit a conflict (Java's
/// `MergingSnapshotProducer` with the keys as its conflict filter); a row with a key far from
/// the chunk's does not. The racer writes between two chunks: the committer's view of the
/// destination is the one its last commit returned.
#[tokio::test(flavor = "multi_thread")]
async fn a_racing_writer_adding_one_of_the_chunks_keys_is_a_conflict() -> TestResult {
    init_tracing();
    for (racer_key, conflict) in [((7i64, "b"), true), ((9_999, "zzz"), false)] {
        let dir = tempfile::tempdir()?;
        let cat = sqlite(dir.path());
        let handle = open("lake", &cat).await?;
        let types = [PrimitiveType::Long, PrimitiveType::String];
        let src = keyed(&handle, "src", "race", &types).await?;
        keyed(&handle, "dst", "race", &types).await?;
        // Chunk 0: keys 0..5; chunk 1: keys 5..10 (tenant "b").
        append(
            &handle,
            &src,
            vec![
                Arc::new(Int64Array::from_iter_values(0..10)),
                Arc::new(StringArray::from_iter_values(
                    (0..10).map(|i| if i < 5 { "a" } else { "b" }),
                )),
            ],
            (0..10).map(|i| format!("s{i}")).collect(),
        )
        .await?;
        let raced = Arc::new(AtomicBool::new(false));
        let (h, r) = (handle.clone(), raced.clone());
        let rt = tokio::runtime::Handle::current();
        let result = upsert(&handle, ["src", "race"], ["dst", "race"], &["k0", "k1"])
            .batch_rows(5)
            .progress(move |_, _| {
                if r.swap(true, Ordering::SeqCst) {
                    return;
                }
                tokio::task::block_in_place(|| {
                    rt.block_on(async {
                        let t = h
                            .catalog()
                            .load_table(&TableIdent::from_strs(["dst", "race"])?)
                            .await?;
                        append(
                            &h,
                            &t,
                            vec![
                                Arc::new(Int64Array::from(vec![racer_key.0])),
                                Arc::new(StringArray::from(vec![racer_key.1])),
                            ],
                            vec!["racer".into()],
                        )
                        .await
                    })
                })
                .expect("the racer's append");
            })
            .run()
            .await;
        assert!(raced.load(Ordering::SeqCst));
        if conflict {
            let err = result.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("conflict"), "{err}");
            // Chunk 0 and the racer's row are in; chunk 1 is not.
            let out = py(&cat, "emit(len(rows(catalog.load_table('dst.race'))))")?;
            assert_eq!(out, json!(6));
        } else {
            let result = result?;
            assert_eq!(result.rows_inserted, Some(10));
            let out = py(&cat, "emit(len(rows(catalog.load_table('dst.race'))))")?;
            assert_eq!(out, json!(11));
        }
    }
    Ok(())
}

/// `on_duplicate_keys last`: for each key, the row that comes last in the source's order —
/// highest data sequence number, then file order, then row order — wins, whether the repeats
/// fall in one chunk or several; `error` (the default) refuses a chunk holding a key twice.
/// The source is written by PyIceberg, one commit per file, and the expected rows are built
/// in Python from the commits in order.
#[tokio::test(flavor = "multi_thread")]
async fn duplicate_keys_keep_the_last_row_in_source_order() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let want = py(
        &cat,
        "from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType\n\
         s = Schema(NestedField(1, 'k0', LongType(), required=True), \
                    NestedField(2, 'k1', StringType(), required=True), \
                    NestedField(3, 'v', StringType()))\n\
         catalog.create_namespace('src')\n\
         catalog.create_namespace('dst')\n\
         src = catalog.create_table('src.dups', schema=s)\n\
         commits = [\n\
           [(1, 'a', 'c1r0'), (2, 'a', 'c1r1'), (1, 'a', 'c1r2')],\n\
           [(1, 'a', 'c2r0'), (3, 'b', 'c2r1')],\n\
           [(2, 'a', 'c3r0'), (3, 'b', 'c3r1'), (3, 'b', 'c3r2')],\n\
           [(4, 'x', 'c4r0')],\n\
           [(5, 'y', 'c5r0'), (5, 'y', 'c5r1')],\n\
         ]\n\
         sa = s.as_arrow()\n\
         for c in commits: src.append(pa.Table.from_pylist([{'k0': k, 'k1': t, 'v': v} for k, t, v in c], schema=sa))\n\
         seed = [{'k0': 1, 'k1': 'a', 'v': 'old'}, {'k0': 9, 'k1': 'z', 'v': 'kept'}]\n\
         for n in ['one', 'many', 'err']: catalog.create_table('dst.' + n, schema=s).append(pa.Table.from_pylist(seed, schema=sa))\n\
         last = {(k, t): {'k0': k, 'k1': t, 'v': v} for c in commits for k, t, v in c}\n\
         last.setdefault((9, 'z'), seed[1])\n\
         emit(sorted(last.values(), key=lambda r: json.dumps(r, sort_keys=True)))",
    )?;
    let want = rows_of(&want);
    assert_eq!(want.len(), 6);
    // One chunk (repeats within it), and one file per chunk (repeats across chunks).
    for (dst, batch_rows) in [("one", 1_000), ("many", 1)] {
        let result = upsert(&handle, ["src", "dups"], ["dst", dst], &["k0", "k1"])
            .on_duplicate_keys(OnDuplicateKeys::Last)
            .batch_rows(batch_rows)
            .run()
            .await?;
        assert!(result.rows_inserted.is_some());
        let got = py(
            &cat,
            &format!("emit(rows(catalog.load_table('dst.{dst}')))"),
        )?;
        assert_eq!(rows_of(&got), want, "batch_rows {batch_rows}");
    }
    let err = upsert(&handle, ["src", "dups"], ["dst", "err"], &["k0", "k1"])
        .batch_rows(1_000)
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("twice") && err.contains("--on-duplicate-keys last"),
        "{err}"
    );
    // `last` belongs to upserts only.
    let err = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["src", "dups"])?,
        &handle,
        TableIdent::from_strs(["dst", "err"])?,
    )
    .on_duplicate_keys(OnDuplicateKeys::Last)
    .run()
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("on_duplicate_keys"), "{err}");
    Ok(())
}

/// A table with a map column upserts (arrow's row format has no maps: rows are compared with
/// maps as their entries sorted by key, so a map written in another entry order is the same).
#[tokio::test(flavor = "multi_thread")]
async fn a_table_with_a_map_column_upserts() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let want = py(
        &cat,
        "from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType, MapType\n\
         s = Schema(NestedField(1, 'k', LongType(), required=True), \
                    NestedField(2, 'm', MapType(3, StringType(), 4, LongType(), value_required=False)), \
                    NestedField(5, 'v', StringType()))\n\
         catalog.create_namespace('src')\n\
         catalog.create_namespace('dst')\n\
         ts, td = catalog.create_table('src.m', schema=s), catalog.create_table('dst.m', schema=s)\n\
         sa = ts.schema().as_arrow()\n\
         src = [{'k': 1, 'm': [('a', 1), ('b', 2)], 'v': 'x'}, {'k': 2, 'm': [('c', 3)], 'v': 'y'}, \
                {'k': 3, 'm': None, 'v': 'z'}, {'k': 4, 'm': [], 'v': 'w'}]\n\
         dst = [{'k': 1, 'm': [('b', 2), ('a', 1)], 'v': 'x'}, {'k': 2, 'm': [('c', 4)], 'v': 'y'}, \
                {'k': 4, 'm': [], 'v': 'w'}, {'k': 5, 'm': [('q', None)], 'v': 'kept'}]\n\
         ts.append(pa.Table.from_pylist(src, schema=sa))\n\
         td.append(pa.Table.from_pylist(dst, schema=sa))\n\
         emit(rows(catalog.load_table('src.m')) + [r for r in rows(catalog.load_table('dst.m')) if r['v'] == 'kept'])",
    )?;
    let result = upsert(&handle, ["src", "m"], ["dst", "m"], &["k"])
        .run()
        .await?;
    // k=1: the same entries in another order, unchanged; k=2 updated; k=3 inserted.
    assert_eq!(
        (result.rows_inserted, result.rows_updated),
        (Some(1), Some(1))
    );
    let got = py(&cat, "emit(rows(catalog.load_table('dst.m')))")?;
    // PyIceberg reads k=1 in the order the destination stored it; compare by entries.
    let canon = |rows: Vec<Value>| -> Vec<Value> {
        sorted(
            rows.into_iter()
                .map(|mut r| {
                    if let Some(m) = r.get_mut("m").and_then(Value::as_array_mut) {
                        m.sort_by_key(|e| e.to_string());
                    }
                    r
                })
                .collect(),
        )
    };
    assert_eq!(canon(rows_of(&got)), canon(rows_of(&want)));
    Ok(())
}

/// The corpus `keys` table (composite key tenant, id, day; 100 keys of the first file repeated
/// in a later one) upserts with `on_duplicate_keys last` as PyIceberg's `Table.upsert` does on
/// a twin fed the source's files in commit order; with the default the chunk is refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_keys_table_upserts_like_pyiceberg() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    // `keys` of /work/shared/corpus/make_corpus.py (n = 3,000), as it writes it.
    py(
        &cat,
        "import datetime as dt\n\
         from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, StringType, LongType, DateType, DoubleType\n\
         n = 3000\n\
         s = Schema(NestedField(1, 'tenant', StringType(), required=True), NestedField(2, 'id', LongType(), required=True), \
                    NestedField(3, 'day', DateType(), required=True), NestedField(4, 'v', StringType()), \
                    NestedField(5, 'amount', DoubleType()), identifier_field_ids=[1, 2, 3])\n\
         catalog.create_namespace('corpus')\n\
         t = catalog.create_table('corpus.keys', schema=s)\n\
         sa = t.schema().as_arrow()\n\
         half = n // 2\n\
         base = dt.date(2026, 1, 1)\n\
         t.append(pa.Table.from_pylist([{'tenant': f't{i % 7}', 'id': i // 7, 'day': base + dt.timedelta(days=i % 3), \
                    'v': f'first{i}', 'amount': i * 1.5} for i in range(half)], schema=sa))\n\
         t.append(pa.Table.from_pylist([{'tenant': f't{i % 7}', 'id': i // 7, 'day': base + dt.timedelta(days=i % 3), \
                    'v': f'second{i}', 'amount': -i * 1.5} for i in list(range(half, n)) + list(range(0, 700, 7))], schema=sa))\n\
         emit(0)",
    )?;
    let handle = open("lake", &cat).await?;
    // Both destinations start with some of the keys under other values, and one key of their
    // own; the twin takes the source's files one PyIceberg upsert each, oldest commit first.
    py(
        &cat,
        "import pyarrow.parquet as pq\n\
         import datetime as dt\n\
         src = catalog.load_table('corpus.keys')\n\
         sa = src.schema().as_arrow()\n\
         seed = [{'tenant': f't{i % 7}', 'id': i // 7, 'day': dt.date(2026, 1, 1) + dt.timedelta(days=i % 3), \
                  'v': f'seed{i}', 'amount': 0.5} for i in range(0, 3000, 5)]\n\
         seed.append({'tenant': 'own', 'id': -1, 'day': dt.date(2020, 1, 1), 'v': 'own', 'amount': None})\n\
         for n in ['ours', 'twin', 'err']: catalog.create_table('corpus.' + n, schema=src.schema()).append(pa.Table.from_pylist(seed, schema=sa))\n\
         twin = catalog.load_table('corpus.twin')\n\
         entries = src.inspect.entries().to_pylist()\n\
         files = sorted((e['sequence_number'], e['data_file']['file_path']) for e in entries if e['status'] != 2)\n\
         for _, path in files: twin.upsert(pq.read_table(path.removeprefix('file://')).select(sa.names).cast(sa), join_cols=['tenant', 'id', 'day'])\n\
         emit(len(files))",
    )?;
    let result = upsert(
        &handle,
        ["corpus", "keys"],
        ["corpus", "ours"],
        &["tenant", "id", "day"],
    )
    .on_duplicate_keys(OnDuplicateKeys::Last)
    .run()
    .await?;
    assert!(result.rows_updated.unwrap_or(0) > 0);
    let out = py(
        &cat,
        "emit({'ours': rows(catalog.load_table('corpus.ours')), 'twin': rows(catalog.load_table('corpus.twin'))})",
    )?;
    assert_eq!(rows_of(&out["ours"]), rows_of(&out["twin"]));
    let err = upsert(
        &handle,
        ["corpus", "keys"],
        ["corpus", "err"],
        &["tenant", "id", "day"],
    )
    .run()
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("twice"), "{err}");
    Ok(())
}

/// A key column renamed after the destination's last data commit (a rename makes no snapshot,
/// so the snapshot's schema still has the old name): the upsert finds the stored rows by the
/// key's new name. Once failed planning the key lookup ("Field id not found in schema").
/// PyIceberg 0.12's own `Table.upsert` fails here too (its key scan yields batches under the
/// snapshot's old names: `KeyError: 'Field "id" does not exist in schema'`), so the expected
/// rows are written out and PyIceberg reads the result.
#[tokio::test(flavor = "multi_thread")]
async fn upsert_after_a_key_column_rename_without_a_data_commit_finds_the_stored_rows() -> TestResult
{
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    py(
        &cat,
        "from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType\n\
         s = Schema(NestedField(1, 'k0', LongType(), required=True), \
                    NestedField(2, 'k1', StringType(), required=True), \
                    NestedField(3, 'v', StringType()))\n\
         catalog.create_namespace('src')\n\
         catalog.create_namespace('dst')\n\
         seed = [{'k0': 1, 'k1': 'a', 'v': 'same'}, {'k0': 2, 'k1': 'a', 'v': 'old'}, \
                 {'k0': 3, 'k1': 'b', 'v': 'kept'}]\n\
         t = catalog.create_table('dst.ours', schema=s)\n\
         t.append(pa.Table.from_pylist(seed, schema=s.as_arrow()))\n\
         with t.update_schema() as u:\n\
         \x20   u.rename_column('k0', 'id')\n\
         \x20   u.rename_column('k1', 'region')\n\
         renamed = catalog.load_table('dst.ours').schema()\n\
         src = catalog.create_table('src.t', schema=renamed)\n\
         src.append(pa.Table.from_pylist([{'id': 1, 'region': 'a', 'v': 'same'}, \
                    {'id': 2, 'region': 'a', 'v': 'new'}, {'id': 4, 'region': 'c', 'v': 'added'}], \
                    schema=renamed.as_arrow()))\n\
         emit(0)",
    )?;
    let handle = open("lake", &cat).await?;
    let result = upsert(&handle, ["src", "t"], ["dst", "ours"], &["id", "region"])
        .run()
        .await?;
    assert_eq!(
        (result.rows_inserted, result.rows_updated),
        (Some(1), Some(1))
    );
    let got = py(&cat, "emit(rows(catalog.load_table('dst.ours')))")?;
    let want = json!([
        {"id": 1, "region": "a", "v": "same"},
        {"id": 2, "region": "a", "v": "new"},
        {"id": 3, "region": "b", "v": "kept"},
        {"id": 4, "region": "c", "v": "added"},
    ]);
    assert_eq!(rows_of(&got), rows_of(&want));
    Ok(())
}

/// A key the destination already holds in more than one row is refused, as PyIceberg 0.12's
/// `Table.upsert` refuses it ("Target table has duplicate rows, aborting upsert") — here
/// whatever the destination's file layout: PyIceberg checks one Arrow batch at a time, so
/// duplicates in two files are healed, kept or written twice depending on which files differ.
/// Once the upsert decided "unchanged" from one of the stored rows and left the stale one.
/// The chunk commits nothing; `on_duplicate_keys` (the source's duplicates) changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_held_twice_by_the_destination_is_refused_like_pyiceberg() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    // Each destination: (name, files of (k, v)); the source holds k=1 'src' and k=7 'new'.
    let theirs = py(
        &cat,
        "from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType\n\
         s = Schema(NestedField(1, 'k', LongType(), required=True), NestedField(2, 'v', StringType()))\n\
         sa = s.as_arrow()\n\
         catalog.create_namespace('src')\n\
         catalog.create_namespace('dst')\n\
         src = catalog.create_table('src.t', schema=s)\n\
         src.append(pa.Table.from_pylist([{'k': 1, 'v': 'src'}, {'k': 7, 'v': 'new'}], schema=sa))\n\
         cases = {'one_file': [[(1, 'src'), (1, 'stale'), (2, 'x')]], \
                  'stale_second': [[(1, 'src'), (2, 'x')], [(1, 'stale')]], \
                  'stale_first': [[(1, 'stale')], [(1, 'src'), (2, 'x')]], \
                  'both_equal': [[(1, 'src')], [(1, 'src')]]}\n\
         for n, files in cases.items():\n\
         \x20   t = catalog.create_table('dst.' + n, schema=s)\n\
         \x20   for f in files: t.append(pa.Table.from_pylist([{'k': k, 'v': v} for k, v in f], schema=sa))\n\
         twin = catalog.create_table('dst.twin', schema=s)\n\
         twin.append(pa.Table.from_pylist([{'k': 1, 'v': 'src'}, {'k': 1, 'v': 'stale'}], schema=sa))\n\
         try:\n\
         \x20   twin.upsert(src.scan().to_arrow(), join_cols=['k'])\n\
         \x20   emit('no error')\n\
         except ValueError as e:\n\
         \x20   emit(str(e))",
    )?;
    assert_eq!(
        theirs,
        json!("Target table has duplicate rows, aborting upsert")
    );
    let handle = open("lake", &cat).await?;
    for dst in ["one_file", "stale_second", "stale_first", "both_equal"] {
        let before = py(
            &cat,
            &format!(
                "t = catalog.load_table('dst.{dst}')\nemit([rows(t), len(t.metadata.snapshots)])"
            ),
        )?;
        for duplicates in [OnDuplicateKeys::Error, OnDuplicateKeys::Last] {
            let err = upsert(&handle, ["src", "t"], ["dst", dst], &["k"])
                .on_duplicate_keys(duplicates)
                .run()
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("destination") && err.contains("(1)") && err.contains("table delete"),
                "{dst}, {duplicates:?}: {err}"
            );
        }
        let after = py(
            &cat,
            &format!(
                "t = catalog.load_table('dst.{dst}')\nemit([rows(t), len(t.metadata.snapshots)])"
            ),
        )?;
        assert_eq!(before, after, "{dst}: the destination changed");
    }
    Ok(())
}

/// Every key of a chunk the destination holds twice is named at once, with one delete that
/// resolves them all: running that delete, then the upsert again, succeeds. The refusal named
/// the first key only, so a destination with many took one run per key.
#[tokio::test(flavor = "multi_thread")]
async fn every_key_held_twice_by_the_destination_is_named_with_its_delete() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    py(
        &cat,
        "from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType\n\
         s = Schema(NestedField(1, 'k', LongType(), required=True), NestedField(2, 'r', StringType(), required=True), NestedField(3, 'v', StringType()))\n\
         sa = s.as_arrow()\n\
         catalog.create_namespace('src')\n\
         catalog.create_namespace('dst')\n\
         src = catalog.create_table('src.t', schema=s)\n\
         src.append(pa.Table.from_pylist([{'k': k, 'r': r, 'v': 'new'} for k, r in [(1, \"o'b\"), (2, 'a'), (7, 'a'), (9, 'a')]], schema=sa))\n\
         t = catalog.create_table('dst.t', schema=s)\n\
         t.append(pa.Table.from_pylist([{'k': k, 'r': r, 'v': 'old'} for k, r in [(1, \"o'b\"), (1, \"o'b\"), (2, 'a'), (7, 'a'), (7, 'a'), (7, 'a')]], schema=sa))\n\
         emit(1)",
    )?;
    let handle = open("lake", &cat).await?;
    let err = upsert(&handle, ["src", "t"], ["dst", "t"], &["k", "r"])
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("upsert keys (k, r) = (1, o'b), (7, a) are each held by more than one row"),
        "{err}"
    );
    let delete = "(k = 1 AND r = 'o''b') OR (k = 7 AND r = 'a')";
    assert!(
        err.contains(&format!("table delete dst.t --where \"{delete}\")")),
        "{err}"
    );
    ops_core::ops::delete::DeleteBuilder::new(&handle, TableIdent::from_strs(["dst", "t"])?)
        .with_filter_text(delete)
        .await?;
    upsert(&handle, ["src", "t"], ["dst", "t"], &["k", "r"])
        .run()
        .await?;
    let got = py(&cat, "emit(rows(catalog.load_table('dst.t')))")?;
    let want = json!([
        {"k": 1, "r": "o'b", "v": "new"},
        {"k": 2, "r": "a", "v": "new"},
        {"k": 7, "r": "a", "v": "new"},
        {"k": 9, "r": "a", "v": "new"},
    ]);
    assert_eq!(rows_of(&got), rows_of(&want));
    Ok(())
}

// ---------------------------------------------- `on_duplicate_keys last` across batches

/// A change feed: four commits of `src.cdc(k long, v string)` repeating keys across commits
/// (and one within a commit); `seed` is what the destinations hold before the upsert, `final`
/// each key's last row in commit order (the seed's for a key the source never holds).
const CDC: &str = "from pyiceberg.schema import Schema\n\
from pyiceberg.types import NestedField, LongType, StringType\n\
s = Schema(NestedField(1, 'k', LongType(), required=True), NestedField(2, 'v', StringType()))\n\
sa = s.as_arrow()\n\
commits = [[(k, f'c1-{k}') for k in range(40)],\n\
           [(k, f'c2-{k}') for k in range(0, 40, 2)] + [(0, 'c2b-0')],\n\
           [(k, f'c3-{k}') for k in list(range(0, 40, 3)) + list(range(40, 50))],\n\
           [(k, f'c4-{k}') for k in range(0, 50, 5)]]\n\
seed = [{'k': k, 'v': f'old-{k}'} for k in range(0, 60, 4)]\n\
last = {r['k']: r for r in seed}\n\
for c in commits:\n\
\x20   for k, v in c: last[k] = {'k': k, 'v': v}\n\
final = sorted(last.values(), key=lambda r: json.dumps(r, sort_keys=True))\n";

/// Writes the feed's source and the named destinations (seeded); emits `final`.
fn cdc_setup(catalog: &BTreeMap<String, String>, dests: &[&str]) -> anyhow::Result<Value> {
    let names = dests
        .iter()
        .map(|d| format!("'{d}'"))
        .collect::<Vec<_>>()
        .join(", ");
    py(
        catalog,
        &format!(
            "{CDC}catalog.create_namespace('src')\n\
             catalog.create_namespace('dst')\n\
             src = catalog.create_table('src.cdc', schema=s)\n\
             for c in commits: src.append(pa.Table.from_pylist([{{'k': k, 'v': v}} for k, v in c], schema=sa))\n\
             for n in [{names}]: catalog.create_table('dst.' + n, schema=s).append(pa.Table.from_pylist(seed, schema=sa))\n\
             emit(final)"
        ),
    )
}

/// Python: `audit(t, key_cols, before, final)` reads every snapshot of `t` but `before` (the
/// destination's state before the job) with PyIceberg and lists what breaks the rule of
/// `on_duplicate_keys last`: each key shows its row of `before` or its row of `final`, once,
/// and a key `before` holds is never missing.
const AUDIT: &str = concat!(
    "def audit(t, key_cols, before, final):\n",
    "    key = lambda r: json.dumps([r[c] for c in key_cols])\n",
    "    whole = lambda r: json.dumps(r, sort_keys=True)\n",
    "    old = rows(t, before) if before is not None else []\n",
    "    allowed = {}\n",
    "    for r in old + final: allowed.setdefault(key(r), set()).add(whole(r))\n",
    "    bad = []\n",
    "    for snap in t.snapshots():\n",
    "        if snap.snapshot_id == before: continue\n",
    "        seen = set()\n",
    "        for r in rows(t, snap.snapshot_id):\n",
    "            if key(r) in seen: bad.append([snap.snapshot_id, 'twice', r])\n",
    "            seen.add(key(r))\n",
    "            if whole(r) not in allowed.get(key(r), ()): bad.append([snap.snapshot_id, 'value', r])\n",
    "        gone = [key(r) for r in old if key(r) not in seen]\n",
    "        if gone: bad.append([snap.snapshot_id, 'missing', gone[:3]])\n",
    "    return bad[:10]\n",
);

/// The job's commits on `dst.<name>` as (snapshot id, batch index), oldest first.
fn job_commits(catalog: &BTreeMap<String, String>, name: &str) -> anyhow::Result<Vec<(i64, u64)>> {
    let out = py(
        catalog,
        &format!(
            "t = catalog.load_table('dst.{name}')\n\
             emit([[s.snapshot_id, int(s.summary.additional_properties['iceberg-ops.migration-batch'])] \
                   for s in t.snapshots() if s.summary and 'iceberg-ops.migration-batch' in s.summary.additional_properties])"
        ),
    )?;
    Ok(out
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|p| Some((p[0].as_i64()?, p[1].as_u64()?)))
        .collect())
}

/// `on_duplicate_keys last` with keys repeated across batches: every snapshot the job commits
/// shows each key with its old destination row or the source's last one — never a row a later
/// batch supersedes — and running the same upsert again commits nothing. Once batch 1 wrote a
/// key's older row and batch 2 its last one, so a snapshot between them showed the older row
/// and every re-run wrote both again.
#[tokio::test(flavor = "multi_thread")]
async fn a_last_upsert_never_commits_a_superseded_row_and_a_rerun_is_a_no_op() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let want = rows_of(&cdc_setup(&cat, &["cdc"])?);
    let handle = open("lake", &cat).await?;
    let before = py(
        &cat,
        "emit(catalog.load_table('dst.cdc').metadata.current_snapshot_id)",
    )?;
    let job = || {
        upsert(&handle, ["src", "cdc"], ["dst", "cdc"], &["k"])
            .on_duplicate_keys(OnDuplicateKeys::Last)
            .batch_rows(9)
    };
    let first = job().run().await?;
    assert!(first.new_snapshots.len() > 2, "{:?}", first.new_snapshots);
    let out = py(
        &cat,
        &format!(
            "{AUDIT}{CDC}t = catalog.load_table('dst.cdc')\n\
             emit({{'bad': audit(t, ['k'], {before}, final), 'rows': rows(t)}})"
        ),
    )?;
    assert_eq!(out["bad"], json!([]), "snapshots showing a superseded row");
    assert_eq!(rows_of(&out["rows"]), want);
    // Each key written once: inserted + updated = the keys the source changes.
    assert_eq!(
        first.rows_inserted.unwrap_or(0) + first.rows_updated.unwrap_or(0),
        want.iter()
            .filter(|r| !r["v"].as_str().unwrap_or("").starts_with("old-"))
            .count() as u64
    );

    let again = job().run().await?;
    assert!(
        again.new_snapshots.is_empty(),
        "a re-run committed {:?}",
        again.new_snapshots
    );
    assert_eq!(
        (again.rows_inserted, again.rows_updated),
        (Some(0), Some(0))
    );
    let out = py(&cat, "emit(rows(catalog.load_table('dst.cdc')))")?;
    assert_eq!(rows_of(&out), want);
    Ok(())
}

/// A `last` upsert stopped after some batches (as a kill leaves it: committed and checkpointed,
/// or committed and not yet checkpointed) and resumed from its checkpoint makes the same
/// decisions as the uninterrupted run — the same batches commit, the same final table — and
/// no snapshot of either shows a superseded row. The key pre-pass reads the pinned snapshot,
/// so the resumed run finds each key's last batch where the first run did.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_last_upsert_makes_the_same_decisions() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let want = rows_of(&cdc_setup(&cat, &["cdc"])?);
    let handle = open("lake", &cat).await?;
    let before = py(
        &cat,
        "emit(catalog.load_table('dst.cdc').metadata.current_snapshot_id)",
    )?;
    let checkpoint = dir.path().join("cp.json");
    let job = || {
        upsert(&handle, ["src", "cdc"], ["dst", "cdc"], &["k"])
            .on_duplicate_keys(OnDuplicateKeys::Last)
            .batch_rows(9)
            .checkpoint(&checkpoint)
    };
    job().run().await?;
    let full = job_commits(&cat, "cdc")?;
    assert!(full.len() >= 4, "{full:?}");
    let edit = |last: u64, ids: &[i64]| -> anyhow::Result<()> {
        let mut v: Value = serde_json::from_slice(&std::fs::read(&checkpoint)?)?;
        v["completed"] = json!(false);
        v["last_committed_batch"] = json!(last);
        v["dest_snapshot_ids"] = json!(ids);
        std::fs::write(&checkpoint, serde_json::to_vec_pretty(&v)?)?;
        Ok(())
    };
    let ident = TableIdent::from_strs(["dst", "cdc"])?;

    // Killed after the second commit, before the third: the resume commits the rest again.
    ops_core::ops::rollback::RollbackBuilder::to_snapshot(&handle, ident.clone(), full[1].0)
        .await?;
    edit(full[1].1, &[full[0].0, full[1].0])?;
    let resumed = job().run().await?;
    let again = job_commits(&cat, "cdc")?;
    let batches = |c: &[(i64, u64)]| c.iter().map(|(_, b)| *b).collect::<Vec<_>>();
    // The full run's commits, then the resumed run's: the batches after the second again.
    assert_eq!(resumed.new_snapshots.len(), full.len() - 2);
    assert_eq!(batches(&again[full.len()..]), batches(&full[2..]));

    // Killed after the third commit landed but before its checkpoint: recorded, and the rest
    // committed again.
    let landed_at = again[full.len()].0;
    ops_core::ops::rollback::RollbackBuilder::to_snapshot(&handle, ident.clone(), landed_at)
        .await?;
    edit(full[1].1, &[full[0].0, full[1].0])?;
    let resumed = job().run().await?;
    assert_eq!(resumed.new_snapshots.len(), full.len() - 3);
    let third = job_commits(&cat, "cdc")?;
    assert_eq!(batches(&third[full.len() * 2 - 2..]), batches(&full[3..]));

    let out = py(
        &cat,
        &format!(
            "{AUDIT}{CDC}t = catalog.load_table('dst.cdc')\n\
             emit({{'bad': audit(t, ['k'], {before}, final), 'rows': rows(t)}})"
        ),
    )?;
    assert_eq!(out["bad"], json!([]), "snapshots showing a superseded row");
    assert_eq!(rows_of(&out["rows"]), want, "the same final table");
    Ok(())
}

/// The corpus `keys` table as `make_corpus.py` writes it (20,000 rows; 100 keys of the first
/// file repeated at the end of the second) upserted with `on_duplicate_keys last` in batches of
/// 7,000, so a repeated key's two rows fall in different batches: the result holds each key's
/// last row in commit order, no snapshot of the job shows a key's first row, and a re-run
/// commits nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_keys_table_in_7000_row_batches_never_shows_a_superseded_row() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let out = std::process::Command::new(ops_tests::tools::python())
        .arg(crate::corpus::corpus_script()?)
        .arg("--warehouse")
        .arg(dir.path())
        .args(["--rows", "20000", "--only", "keys"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "make_corpus.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cat = props(&[
        ("type", "sql"),
        (
            "uri",
            &format!("sqlite:///{}/catalog.db", dir.path().display()),
        ),
        (
            "warehouse",
            &format!("file://{}/warehouse", dir.path().display()),
        ),
    ]);
    let corpus = |code: &str| ops_tests::oracle::pyiceberg("corpus", &cat, code);
    // The destination starts with a fifth of the keys under other values. The expected table
    // is built by PyIceberg from the source's files read in commit order, each key's later row
    // replacing its earlier one (PyIceberg's `Table.upsert` fed 10,000-row files builds a
    // filter per row and is too slow for a test).
    let before = corpus(
        "import pyarrow.parquet as pq\n\
         src = catalog.load_table('corpus.keys')\n\
         sa = src.schema().as_arrow()\n\
         key = lambda r: (r['tenant'], r['id'], r['day'])\n\
         seed = list({key(r): r for r in src.scan().to_arrow().to_pylist()}.values())[::5]\n\
         for r in seed: r['v'] = 'seed'\n\
         catalog.create_table('corpus.ours', schema=src.schema()).append(pa.Table.from_pylist(seed, schema=sa))\n\
         last = {key(r): r for r in seed}\n\
         entries = src.inspect.entries().to_pylist()\n\
         files = sorted((e['sequence_number'], e['data_file']['file_path']) for e in entries if e['status'] != 2)\n\
         for _, path in files:\n\
         \x20   for r in pq.read_table(path.removeprefix('file://')).select(sa.names).cast(sa).to_pylist(): last[key(r)] = r\n\
         catalog.create_table('corpus.want', schema=src.schema()).append(pa.Table.from_pylist(list(last.values()), schema=sa))\n\
         emit(catalog.load_table('corpus.ours').metadata.current_snapshot_id)",
    )?;
    let handle = open("corpus", &cat).await?;
    let job = || {
        DataMigrator::new(
            &handle,
            TableIdent::from_strs(["corpus", "keys"]).expect("static names"),
            &handle,
            TableIdent::from_strs(["corpus", "ours"]).expect("static names"),
        )
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["tenant", "id", "day"])
        .on_duplicate_keys(OnDuplicateKeys::Last)
        .batch_rows(7_000)
    };
    let first = job().run().await?;
    assert!(first.new_snapshots.len() >= 2, "{:?}", first.new_snapshots);
    let out = corpus(&format!(
        "{AUDIT}t = catalog.load_table('corpus.ours')\n\
         want = rows(catalog.load_table('corpus.want'))\n\
         emit({{'bad': audit(t, ['tenant', 'id', 'day'], {before}, want), 'ours': rows(t), 'want': want}})"
    ))?;
    assert_eq!(out["bad"], json!([]), "snapshots showing a superseded row");
    assert_eq!(rows_of(&out["ours"]), rows_of(&out["want"]));
    let again = job().run().await?;
    assert!(
        again.new_snapshots.is_empty(),
        "a re-run committed {:?}",
        again.new_snapshots
    );
    Ok(())
}

/// `on_duplicate_keys error` (the default) refuses a key the source repeats across batches,
/// not only within one, and before anything is written: once each batch committed as it came,
/// so the later batch won, a snapshot in between showed the earlier row, and which row won
/// depended on `batch_rows`. The error names the key, both batches and the fix.
#[tokio::test(flavor = "multi_thread")]
async fn error_refuses_a_key_repeated_across_batches_before_any_write() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let src = keyed(&handle, "src", "across", &[PrimitiveType::Long]).await?;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Two files, key 7 once in each: with batch_rows 2 the batches are [1 2] [3 7] [5 7] [8].
    append(
        &handle,
        &src,
        vec![Arc::new(Int64Array::from(vec![1, 2, 3, 7]))],
        strings(&["a1", "a2", "a3", "a7"]),
    )
    .await?;
    let src = handle.catalog().load_table(src.identifier()).await?;
    append(
        &handle,
        &src,
        vec![Arc::new(Int64Array::from(vec![5, 7, 8]))],
        strings(&["b5", "b7", "b8"]),
    )
    .await?;
    let dst = keyed(&handle, "dst", "across", &[PrimitiveType::Long]).await?;
    append(
        &handle,
        &dst,
        vec![Arc::new(Int64Array::from(vec![100]))],
        strings(&["old"]),
    )
    .await?;
    let current = || async {
        let t = handle
            .catalog()
            .load_table(&TableIdent::from_strs(["dst", "across"])?)
            .await?;
        anyhow::Ok((
            t.metadata().current_snapshot_id(),
            t.metadata().snapshots().count(),
        ))
    };
    let before = current().await?;
    let refused = upsert(&handle, ["src", "across"], ["dst", "across"], &["k0"])
        .batch_rows(2)
        .run()
        .await
        .err();
    let err = refused.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("key (7)")
            && err.contains("batches 1 and 2")
            && err.contains("--on-duplicate-keys last"),
        "{err}"
    );
    // Reported as the write pass reports a batch's failure: the batch, and that none was
    // committed (the CLI's resume and rollback advice hangs on this variant).
    assert!(
        matches!(refused, Some(MigrationError::Batch { batch: 2, .. }))
            && err.starts_with("batch 2 failed: ")
            && err.ends_with("no batch was committed"),
        "{err}"
    );
    assert_eq!(current().await?, before, "the refused upsert committed");
    // `last` takes the same source: the second file's row of key 7 wins.
    upsert(&handle, ["src", "across"], ["dst", "across"], &["k0"])
        .on_duplicate_keys(OnDuplicateKeys::Last)
        .batch_rows(2)
        .run()
        .await?;
    let got = py(&cat, "emit(rows(catalog.load_table('dst.across')))")?;
    let v7 = rows_of(&got)
        .into_iter()
        .find(|r| r["k0"] == json!(7))
        .map(|r| r["v"].clone());
    assert_eq!(v7, Some(json!("b7")));
    Ok(())
}

/// Two files of `ns.name(k0 long, v string)`, as a source whose key `7` is in both: the first
/// holds `first` (keys, values), the second `second`.
async fn two_files(
    handle: &CatalogHandle,
    ns: &str,
    name: &str,
    first: (&[i64], &[&str]),
    second: (&[i64], &[&str]),
) -> anyhow::Result<()> {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let t = keyed(handle, ns, name, &[PrimitiveType::Long]).await?;
    append(
        handle,
        &t,
        vec![Arc::new(Int64Array::from(first.0.to_vec()))],
        strings(first.1),
    )
    .await?;
    let t = handle.catalog().load_table(t.identifier()).await?;
    append(
        handle,
        &t,
        vec![Arc::new(Int64Array::from(second.0.to_vec()))],
        strings(second.1),
    )
    .await?;
    Ok(())
}

/// The destination's metadata file and snapshot count.
async fn state_of(handle: &CatalogHandle, ident: [&str; 2]) -> anyhow::Result<(String, usize)> {
    let t = handle
        .catalog()
        .load_table(&TableIdent::from_strs(ident)?)
        .await?;
    Ok((
        t.metadata_location().unwrap_or_default().to_string(),
        t.metadata().snapshots().count(),
    ))
}

/// `k0 -> v` of `ns.name` as PyIceberg reads it.
fn values_by_key(cat: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Vec<(i64, Value)>> {
    let got = py(cat, &format!("emit(rows(catalog.load_table('{table}')))"))?;
    let mut out: Vec<(i64, Value)> = rows_of(&got)
        .into_iter()
        .map(|r| (r["k0"].as_i64().unwrap_or(i64::MIN), r["v"].clone()))
        .collect();
    out.sort_by_key(|(k, _)| *k);
    Ok(out)
}

/// A refused upsert writes nothing at all: the key pre-pass runs before the destination's
/// schema is evolved (here a source column auto-added) and before the checkpoint is started.
/// Once the refusal came after both, so the destination had a new column and the checkpoint
/// held the job's identity — and the same command with `--on-duplicate-keys last` was then
/// refused as a different job. Now it simply runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_upsert_writes_no_schema_and_no_checkpoint_so_last_then_runs() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    // The source has a column `extra` the destination lacks (auto-added by the run).
    let namespace = NamespaceIdent::new("src".into());
    handle
        .catalog()
        .create_namespace(&namespace, HashMap::new())
        .await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "k0", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "v", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(3, "extra", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .build()?;
    let mut src = handle
        .catalog()
        .create_table(
            &namespace,
            TableCreation::builder()
                .name("evolve".into())
                .schema(schema)
                .build(),
        )
        .await?;
    // Key 7 in both files: with batch_rows 2 the batches are [1 7] [3 7].
    for (keys, v) in [([1i64, 7], ["a1", "a7"]), ([3, 7], ["b3", "b7"])] {
        let target = ops_core::write::table_arrow_schema(&src)?;
        let batch = RecordBatch::try_new(
            target,
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(StringArray::from(v.to_vec())),
                Arc::new(StringArray::from(vec!["x"; 2])),
            ],
        )?;
        ops_core::append::append(
            &handle,
            &src,
            futures::stream::iter([Ok(batch)]),
            HashMap::new(),
        )
        .await?;
        src = handle.catalog().load_table(src.identifier()).await?;
    }
    let dst = keyed(&handle, "dst", "evolve", &[PrimitiveType::Long]).await?;
    append(
        &handle,
        &dst,
        vec![Arc::new(Int64Array::from(vec![100]))],
        vec!["old".into()],
    )
    .await?;
    let ckpt = dir.path().join("job.ckpt");
    let auto_add = || SchemaReconciler {
        on_missing_in_dest: MissingInDest::AutoAdd,
        ..SchemaReconciler::default()
    };
    let before = state_of(&handle, ["dst", "evolve"]).await?;
    let err = upsert(&handle, ["src", "evolve"], ["dst", "evolve"], &["k0"])
        .schema_reconciler(auto_add())
        .batch_rows(2)
        .checkpoint(&ckpt)
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("key (7)"), "{err}");
    assert_eq!(
        state_of(&handle, ["dst", "evolve"]).await?,
        before,
        "the refused upsert changed the destination's metadata"
    );
    assert!(!ckpt.exists(), "the refused upsert started the checkpoint");
    upsert(&handle, ["src", "evolve"], ["dst", "evolve"], &["k0"])
        .schema_reconciler(auto_add())
        .on_duplicate_keys(OnDuplicateKeys::Last)
        .batch_rows(2)
        .checkpoint(&ckpt)
        .run()
        .await?;
    let got = values_by_key(&cat, "dst.evolve")?;
    assert_eq!(
        got,
        vec![
            (1, json!("a1")),
            (3, json!("b3")),
            (7, json!("b7")),
            (100, json!("old"))
        ]
    );
    Ok(())
}

/// `--dry-run` runs the key pre-pass (it only reads) and reports the refusal the run would
/// meet; once a dry run skipped it and reported success.
#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_reports_a_key_repeated_across_batches() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    two_files(
        &handle,
        "src",
        "dry",
        (&[1, 7], &["a1", "a7"]),
        (&[3, 7], &["b3", "b7"]),
    )
    .await?;
    keyed(&handle, "dst", "dry", &[PrimitiveType::Long]).await?;
    let before = state_of(&handle, ["dst", "dry"]).await?;
    let err = upsert(&handle, ["src", "dry"], ["dst", "dry"], &["k0"])
        .batch_rows(2)
        .dry_run(true)
        .run()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("key (7)") && err.contains("batches 0 and 1"),
        "{err}"
    );
    assert_eq!(state_of(&handle, ["dst", "dry"]).await?, before);
    // The same dry run with `last` passes.
    let r = upsert(&handle, ["src", "dry"], ["dst", "dry"], &["k0"])
        .batch_rows(2)
        .on_duplicate_keys(OnDuplicateKeys::Last)
        .dry_run(true)
        .run()
        .await?;
    assert!(r.dry_run);
    Ok(())
}

/// The pre-pass reads only the key columns and what decides the rows: with a row filter on a
/// non-key column its rows and batch numbers stay the write pass's, so `last` keeps the right
/// row. Here the filter drops the second file's last row of key 7: batches [1 7a] [3 7b] [5],
/// so batch 1 holds 7's last row (read unfiltered, the pass would place it in batch 2, which
/// the write pass filters out, and key 7 would be written by no batch).
#[tokio::test(flavor = "multi_thread")]
async fn last_with_a_filter_on_a_non_key_column_keeps_the_right_row() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    two_files(
        &handle,
        "src",
        "filtered",
        (&[1, 7, 3], &["a1", "a7", "a3"]),
        (&[7, 5, 7], &["b7", "b5", "skip"]),
    )
    .await?;
    keyed(&handle, "dst", "filtered", &[PrimitiveType::Long]).await?;
    upsert(&handle, ["src", "filtered"], ["dst", "filtered"], &["k0"])
        .row_filter("v <> 'skip'")
        .on_duplicate_keys(OnDuplicateKeys::Last)
        .batch_rows(2)
        .run()
        .await?;
    assert_eq!(
        values_by_key(&cat, "dst.filtered")?,
        vec![
            (1, json!("a1")),
            (3, json!("a3")),
            (5, json!("b5")),
            (7, json!("b7"))
        ]
    );
    Ok(())
}

/// A NaN key is refused as the batch refuses it — "is NaN", naming its row and batch — by the
/// pre-pass, under both rules, before anything is written. Once a NaN repeated across batches
/// was called a repeated key ("holds key (NaN) twice, in batches 1 and 2"), as if a NaN once
/// were fine; and under `last` batch 0 committed before batch 1 refused its NaN.
#[tokio::test(flavor = "multi_thread")]
async fn a_nan_key_is_refused_as_nan_before_any_write() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let src = keyed(&handle, "src", "nan", &[PrimitiveType::Double]).await?;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // With batch_rows 2: [1 2] [3 NaN] [NaN 5].
    append(
        &handle,
        &src,
        vec![Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, f64::NAN]))],
        strings(&["a1", "a2", "a3", "an"]),
    )
    .await?;
    let src = handle.catalog().load_table(src.identifier()).await?;
    append(
        &handle,
        &src,
        vec![Arc::new(Float64Array::from(vec![f64::NAN, 5.0]))],
        strings(&["bn", "b5"]),
    )
    .await?;
    keyed(&handle, "dst", "nan", &[PrimitiveType::Double]).await?;
    let before = state_of(&handle, ["dst", "nan"]).await?;
    for rule in [OnDuplicateKeys::Error, OnDuplicateKeys::Last] {
        let err = upsert(&handle, ["src", "nan"], ["dst", "nan"], &["k0"])
            .on_duplicate_keys(rule)
            .batch_rows(2)
            .run()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("batch 1 failed: upsert key 'k0' is NaN in row 1 of batch 1")
                && !err.contains("twice")
                && err.ends_with("no batch was committed"),
            "{rule:?}: {err}"
        );
        assert_eq!(state_of(&handle, ["dst", "nan"]).await?, before, "{rule:?}");
    }
    Ok(())
}

/// The only live data file of `table`.
async fn only_data_file(table: &Table) -> anyhow::Result<String> {
    let mut paths: Vec<String> = crate::compact::live_files(table)
        .await?
        .iter()
        .map(|(f, _)| f.file_path().to_string())
        .collect();
    anyhow::ensure!(paths.len() == 1, "{paths:?}");
    Ok(paths.remove(0))
}

/// The key pre-pass reads the rows the write pass reads, with the delete files of another
/// engine applied: keys repeated only by rows deleted by position or by equality are no
/// duplicates, so the default rule (`error`) upserts. (A pre-pass that read the files without
/// their deletes would refuse keys 3 and 7.)
#[tokio::test(flavor = "multi_thread")]
async fn the_key_pre_pass_applies_position_and_equality_deletes() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let src = keyed(&handle, "src", "del", &[PrimitiveType::Long]).await?;
    append(
        &handle,
        &src,
        vec![Arc::new(Int64Array::from(vec![1, 3, 7]))],
        strings(&["a1", "a3", "a7"]),
    )
    .await?;
    let src = handle.catalog().load_table(src.identifier()).await?;
    let first = only_data_file(&src).await?;
    // Key 7 of the first file deleted by position, key 3 by an equality delete committed
    // before the second file (so it deletes the first file's 3 only).
    let src = crate::commit_layer::commit_position_delete(
        &handle,
        &src,
        &first,
        iceberg::spec::Struct::empty(),
        &[2],
    )
    .await?;
    let src = crate::commit_layer::commit_equality_delete(
        &handle,
        &src,
        iceberg::spec::Struct::empty(),
        &[3],
    )
    .await?;
    append(
        &handle,
        &src,
        vec![Arc::new(Int64Array::from(vec![5, 7, 3]))],
        strings(&["b5", "b7", "b3"]),
    )
    .await?;
    // (PyIceberg 0.12 cannot read equality deletes: the source's live rows, by the spec.)
    let live = json!([
        {"k0": 1, "v": "a1"},
        {"k0": 3, "v": "b3"},
        {"k0": 5, "v": "b5"},
        {"k0": 7, "v": "b7"},
    ]);
    let dst = keyed(&handle, "dst", "del", &[PrimitiveType::Long]).await?;
    append(
        &handle,
        &dst,
        vec![Arc::new(Int64Array::from(vec![7]))],
        strings(&["old"]),
    )
    .await?;
    for batch_rows in [2, 100] {
        upsert(&handle, ["src", "del"], ["dst", "del"], &["k0"])
            .batch_rows(batch_rows)
            .run()
            .await?;
        let got = py(&cat, "emit(rows(catalog.load_table('dst.del')))")?;
        assert_eq!(rows_of(&got), rows_of(&live), "batch_rows {batch_rows}");
    }
    Ok(())
}

/// A key that does not follow the destination's layout (every file's `id` bounds overlap every
/// chunk) is matched through the job's index of the destination's keys by file, which reads
/// each file's keys as stored — a row deleted by position is still in the index. The deleted
/// key's file is read, the key is not found there and is inserted; the job's own rewrites are
/// found in later chunks. PyIceberg reads the result.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_across_every_file_upserts_through_the_key_index_past_a_deleted_row() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let cat = sqlite(dir.path());
    let handle = open("lake", &cat).await?;
    let strings = |v: &str, n: usize| vec![v.to_string(); n];
    let src = keyed(&handle, "src", "idx", &[PrimitiveType::Long]).await?;
    append(
        &handle,
        &src,
        vec![Arc::new(Int64Array::from(vec![1, 4, 7, 10, 13]))],
        strings("s", 5),
    )
    .await?;
    let dst = keyed(&handle, "dst", "idx", &[PrimitiveType::Long]).await?;
    for (ids, v) in [
        (vec![0, 3, 6, 9, 12], "a"),
        (vec![1, 4, 7, 10], "b"),
        (vec![2, 5, 8, 11, 13], "c"),
    ] {
        let n = ids.len();
        let table = handle.catalog().load_table(dst.identifier()).await?;
        append(
            &handle,
            &table,
            vec![Arc::new(Int64Array::from(ids))],
            strings(v, n),
        )
        .await?;
    }
    // Key 4 (position 1 of the `b` file) deleted by position.
    let table = handle.catalog().load_table(dst.identifier()).await?;
    let b_file = crate::compact::live_files(&table)
        .await?
        .into_iter()
        .map(|(f, _)| f)
        .find(|f| f.record_count() == 4)
        .map(|f| f.file_path().to_string());
    let b_file = b_file.ok_or_else(|| anyhow::anyhow!("no 4-row file"))?;
    crate::commit_layer::commit_position_delete(
        &handle,
        &table,
        &b_file,
        iceberg::spec::Struct::empty(),
        &[1],
    )
    .await?;
    let report = upsert(&handle, ["src", "idx"], ["dst", "idx"], &["k0"])
        .batch_rows(2)
        .run()
        .await?;
    assert_eq!(
        (report.rows_inserted, report.rows_updated),
        (Some(1), Some(4))
    );
    let mut want: Vec<Value> = Vec::new();
    for k in 0..14i64 {
        let v = match k {
            1 | 4 | 7 | 10 | 13 => "s",
            _ if k % 3 == 0 => "a",
            _ => "c",
        };
        want.push(json!({"k0": k, "v": v}));
    }
    let got = py(&cat, "emit(rows(catalog.load_table('dst.idx')))")?;
    assert_eq!(rows_of(&got), rows_of(&Value::Array(want)));
    Ok(())
}
