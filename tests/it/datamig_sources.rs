//! DataMigrator sources written by other engines (position and equality delete files, renamed
//! and widened columns), `verify` row counts from manifests, and upsert key types. Expected
//! rows are computed independently in the test; destinations are read back by PyIceberg.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, ManifestListWriter,
    ManifestWriterBuilder, NestedField, PrimitiveType, Schema, Struct, Type,
};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent, TableRequirement, TableUpdate};
use ops_core::CatalogHandle;
use ops_core::commit::TableChange;
use ops_datamig::{DataMigrator, VerifyMethod};
use serde_json::{Value, json};

use crate::common::*;

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

fn pyiceberg_rows(py: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Vec<Value>> {
    let out = ops_tests::oracle::pyiceberg(
        "lake",
        py,
        &format!("emit({{'rows': rows(catalog.load_table('{table}'))}})"),
    )?;
    let mut r = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut r);
    Ok(r)
}

fn field_meta(name: &str, id: i32, t: arrow_schema::DataType) -> arrow_schema::Field {
    arrow_schema::Field::new(name, t, true).with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

/// (id, k, v): one row of src.events.
type Event = (i64, Option<i64>, Option<&'static str>);

/// src.events(id long required, k int, v string), unpartitioned.
async fn create_events(handle: &CatalogHandle) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let ns = NamespaceIdent::new("src".into());
    catalog.create_namespace(&ns, HashMap::new()).await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "k", Type::Primitive(PrimitiveType::Int)).into(),
            NestedField::optional(3, "v", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .build()?;
    Ok(catalog
        .create_table(
            &ns,
            TableCreation::builder()
                .name("events".into())
                .schema(schema)
                .build(),
        )
        .await?)
}

/// One data file of `rows` in the table's current schema (k int or long).
async fn data_file(table: &Table, rows: &[Event]) -> anyhow::Result<DataFile> {
    let schema = ops_core::write::table_arrow_schema(table)?;
    let k: ArrayRef = match schema.field(1).data_type() {
        arrow_schema::DataType::Int32 => Arc::new(Int32Array::from(
            rows.iter()
                .map(|r| r.1.map(|x| x as i32))
                .collect::<Vec<_>>(),
        )),
        _ => Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        )),
    };
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            k,
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )?;
    let mut files =
        ops_core::write::write_data_files(table, futures::stream::iter([Ok(batch)])).await?;
    anyhow::ensure!(
        files.len() == 1,
        "expected one data file, got {}",
        files.len()
    );
    Ok(files.remove(0))
}

async fn write_parquet(table: &Table, batch: &RecordBatch) -> anyhow::Result<(String, u64)> {
    let path = format!(
        "{}/data/delete-{}.parquet",
        table.metadata().location(),
        uuid_like()
    );
    let mut buf = Vec::new();
    {
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None)?;
        w.write(batch)?;
        w.close()?;
    }
    let size = buf.len() as u64;
    table.file_io().new_output(&path)?.write(buf.into()).await?;
    Ok((path, size))
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

/// A position delete file (spec schema: file_path 2147483546, pos 2147483545), sorted.
async fn position_delete(table: &Table, mut at: Vec<(String, i64)>) -> anyhow::Result<DataFile> {
    at.sort();
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        field_meta("file_path", 2147483546, arrow_schema::DataType::Utf8),
        field_meta("pos", 2147483545, arrow_schema::DataType::Int64),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(
                at.iter().map(|a| a.0.as_str()).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(at.iter().map(|a| a.1).collect::<Vec<_>>())),
        ],
    )?;
    let (path, size) = write_parquet(table, &batch).await?;
    Ok(DataFileBuilder::default()
        .content(DataContentType::PositionDeletes)
        .file_path(path)
        .file_format(DataFileFormat::Parquet)
        .partition(Struct::empty())
        .partition_spec_id(table.metadata().default_partition_spec_id())
        .record_count(at.len() as u64)
        .file_size_in_bytes(size)
        .build()?)
}

/// An equality delete file on the columns `keys` (name, field id, values).
async fn equality_delete(
    table: &Table,
    keys: Vec<(&str, i32, ArrayRef)>,
) -> anyhow::Result<DataFile> {
    let schema = Arc::new(arrow_schema::Schema::new(
        keys.iter()
            .map(|(name, id, values)| field_meta(name, *id, values.data_type().clone()))
            .collect::<Vec<_>>(),
    ));
    let ids: Vec<i32> = keys.iter().map(|k| k.1).collect();
    let rows = keys.first().map_or(0, |k| k.2.len());
    let batch = RecordBatch::try_new(schema, keys.into_iter().map(|k| k.2).collect())?;
    let (path, size) = write_parquet(table, &batch).await?;
    Ok(DataFileBuilder::default()
        .content(DataContentType::EqualityDeletes)
        .equality_ids(Some(ids))
        .file_path(path)
        .file_format(DataFileFormat::Parquet)
        .partition(Struct::empty())
        .partition_spec_id(table.metadata().default_partition_spec_id())
        .record_count(rows as u64)
        .file_size_in_bytes(size)
        .build()?)
}

/// Commits `data` and `deletes` in one snapshot as another engine would (a data manifest and
/// a delete manifest added to the parent's), returning the table and the snapshot's sequence
/// number.
async fn commit(
    handle: &CatalogHandle,
    table: &Table,
    data: Vec<DataFile>,
    deletes: Vec<DataFile>,
) -> anyhow::Result<(Table, i64)> {
    let md = table.metadata();
    let spec = md.default_partition_spec().clone();
    let snapshot_id = 515_000 + md.snapshots().count() as i64;
    let seq = md.next_sequence_number();
    let loc = md.location();
    let mut manifests = match md.current_snapshot() {
        Some(parent) => table
            .manifest_list_reader(parent)
            .load()
            .await?
            .entries()
            .to_vec(),
        None => Vec::new(),
    };
    for (i, (files, deletes)) in [(data, false), (deletes, true)].into_iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        let path = format!("{loc}/metadata/hand-{snapshot_id}-m{i}.avro");
        let builder = ManifestWriterBuilder::new(
            table.file_io().new_output(&path)?,
            Some(snapshot_id),
            md.current_schema().clone(),
            spec.as_ref().clone(),
        );
        let mut writer = if deletes {
            builder.build_v2_deletes()
        } else {
            builder.build_v2_data()
        };
        for f in files {
            writer.add_file(f, seq)?;
        }
        manifests.push(writer.write_manifest_file().await?);
    }
    let parent = md.current_snapshot_id();
    let list_path = format!("{loc}/metadata/snap-{snapshot_id}-hand.avro");
    let mut list = ManifestListWriter::v2(
        table.file_io().new_output(&list_path)?.writer().await?,
        snapshot_id,
        parent,
        seq,
    );
    list.add_manifests(manifests.into_iter())?;
    list.close().await?;
    let snapshot = iceberg::spec::Snapshot::builder()
        .with_snapshot_id(snapshot_id)
        .with_parent_snapshot_id(parent)
        .with_sequence_number(seq)
        .with_timestamp_ms(md.last_updated_ms() + 1)
        .with_manifest_list(list_path)
        .with_summary(iceberg::spec::Summary {
            operation: iceberg::spec::Operation::Overwrite,
            additional_properties: HashMap::new(),
        })
        .with_schema_id(md.current_schema_id())
        .build();
    let change = TableChange {
        requirements: vec![TableRequirement::RefSnapshotIdMatch {
            r#ref: "main".into(),
            snapshot_id: parent,
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
    Ok((ops_core::commit::commit(handle, table, change).await?, seq))
}

/// The reference model of the spec's delete rules, independent of any reader: a row goes when
/// a position delete with sequence number >= its file's names its (file, position), or an
/// equality delete with a strictly greater sequence number holds its value (NULL equals NULL).
#[derive(Default)]
struct Model {
    /// (row, data file index, position in file, data sequence number)
    rows: Vec<(Event, usize, i64, i64)>,
    /// (sequence number, data file index, position)
    pos: Vec<(i64, usize, i64)>,
    /// (sequence number, columns (1 = k, 2 = v), key as JSON values)
    eq: Vec<(i64, Vec<usize>, Vec<Value>)>,
}

impl Model {
    fn add_file(&mut self, file: usize, seq: i64, rows: &[Event]) {
        for (i, r) in rows.iter().enumerate() {
            self.rows.push((*r, file, i as i64, seq));
        }
    }

    fn surviving(&self) -> Vec<Event> {
        self.rows
            .iter()
            .filter(|(r, file, at, seq)| {
                let by_pos = self
                    .pos
                    .iter()
                    .any(|(s, f, p)| s >= seq && f == file && p == at);
                let by_eq = self.eq.iter().any(|(s, cols, key)| {
                    let value: Vec<Value> = cols
                        .iter()
                        .map(|c| if *c == 1 { json!(r.1) } else { json!(r.2) })
                        .collect();
                    s > seq && *key == value
                });
                !by_pos && !by_eq
            })
            .map(|(r, ..)| *r)
            .collect()
    }
}

fn events_json(rows: &[Event], key: &str) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .iter()
        .map(|(id, k, v)| json!({"id": id, key: k, "v": v}))
        .collect();
    sort_rows(&mut out);
    out
}

/// Item 1: a source carrying both position and equality delete files (written by hand, as
/// Spark or Flink would) migrates to exactly the rows the spec's delete rules leave: equality
/// deletes match NULL only to NULL, apply to strictly older data (sequence numbers), position
/// deletes to data of the same commit too; the equality key column renamed and widened
/// afterwards is still matched by field id. Row-count and partition-hash verification agree,
/// and the row count reads only files that have deletes.
#[tokio::test(flavor = "multi_thread")]
async fn a_source_with_position_and_equality_deletes_migrates_the_surviving_rows() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let table = create_events(&handle).await?;
    let mut model = Model::default();

    let a: &[Event] = &[
        (1, Some(5), Some("a")),
        (2, None, Some("b")),
        (3, Some(7), Some("c")),
        (4, Some(5), None),
        (5, None, None),
        (6, Some(8), Some("gone")),
        (7, Some(9), Some("d")),
        (8, Some(10), Some("e")),
    ];
    let b: &[Event] = &[
        (9, Some(5), Some("f")),
        (10, None, Some("g")),
        (11, Some(12), Some("h")),
    ];
    let fa = data_file(&table, a).await?;
    let (table, seq) = commit(&handle, &table, vec![fa.clone()], vec![]).await?;
    model.add_file(0, seq, a);
    let fb = data_file(&table, b).await?;
    let (table, seq) = commit(&handle, &table, vec![fb.clone()], vec![]).await?;
    model.add_file(1, seq, b);

    // One position delete file over both files, and an equality delete of k = 5.
    let pos = position_delete(
        &table,
        vec![
            (fa.file_path().to_string(), 6),
            (fb.file_path().to_string(), 2),
        ],
    )
    .await?;
    let eq_k = equality_delete(
        &table,
        vec![("k", 2, Arc::new(Int32Array::from(vec![5])) as ArrayRef)],
    )
    .await?;
    let (table, seq) = commit(&handle, &table, vec![], vec![pos, eq_k]).await?;
    model.pos.extend([(seq, 0, 6), (seq, 1, 2)]);
    model.eq.push((seq, vec![1], vec![json!(5)]));

    // Appended after the equality delete: its k = 5 row stays.
    let c: &[Event] = &[
        (12, Some(5), Some("i")),
        (13, None, None),
        (14, Some(14), Some("j")),
    ];
    let fc = data_file(&table, c).await?;
    let (table, seq) = commit(&handle, &table, vec![fc], vec![]).await?;
    model.add_file(2, seq, c);

    // One commit adds file D, a position delete on D (same sequence number: applies) and an
    // equality delete of v IS NULL / v = 'gone' (same sequence number: not applied to D).
    let d: &[Event] = &[
        (15, Some(15), None),
        (16, Some(16), Some("k")),
        (17, Some(5), Some("gone")),
    ];
    let fd = data_file(&table, d).await?;
    let pos_d = position_delete(&table, vec![(fd.file_path().to_string(), 1)]).await?;
    let eq_v = equality_delete(
        &table,
        vec![(
            "v",
            3,
            Arc::new(StringArray::from(vec![None, Some("gone")])) as ArrayRef,
        )],
    )
    .await?;
    // A two-column equality delete: (k, v) = (NULL, 'b') and (7, NULL); only id 2 matches both
    // columns null-safely (id 3 has k = 7 but v = 'c').
    let eq_kv = equality_delete(
        &table,
        vec![
            (
                "k",
                2,
                Arc::new(Int32Array::from(vec![None, Some(7)])) as ArrayRef,
            ),
            (
                "v",
                3,
                Arc::new(StringArray::from(vec![Some("b"), None])) as ArrayRef,
            ),
        ],
    )
    .await?;
    let (_, seq) = commit(&handle, &table, vec![fd], vec![pos_d, eq_v, eq_kv]).await?;
    model.add_file(3, seq, d);
    model.pos.push((seq, 3, 1));
    model.eq.push((seq, vec![2], vec![Value::Null]));
    model.eq.push((seq, vec![2], vec![json!("gone")]));
    model
        .eq
        .push((seq, vec![1, 2], vec![Value::Null, json!("b")]));
    model
        .eq
        .push((seq, vec![1, 2], vec![json!(7), Value::Null]));

    // The equality key column is renamed and widened (int -> long) after its deletes.
    let src_ident = TableIdent::from_strs(["src", "events"])?;
    ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(&handle, src_ident.clone())
        .rename_column("k", "key")
        .widen_column("key", PrimitiveType::Long)
        .await?;
    let table = handle.catalog().load_table(&src_ident).await?;
    let e: &[Event] = &[(18, Some(5), None), (19, None, Some("m"))];
    let fe = data_file(&table, e).await?;
    let (_table, seq) = commit(&handle, &table, vec![fe.clone()], vec![]).await?;
    model.add_file(4, seq, e);

    let want = model.surviving();
    // The model itself: NULL keys survive k = 5, later files keep k = 5, same-commit position
    // delete applies.
    let ids: Vec<i64> = want.iter().map(|r| r.0).collect();
    assert_eq!(ids, vec![3, 8, 10, 12, 14, 15, 17, 18, 19]);

    let mut m = DataMigrator::new(
        &handle,
        src_ident.clone(),
        &handle,
        TableIdent::from_strs(["dst", "events"])?,
    )
    .create_dest(true)
    .batch_rows(4);
    handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("dst".into()), HashMap::new())
        .await?;
    let result = m.run().await?;
    assert_eq!(result.rows_moved, want.len() as u64);
    assert_eq!(
        pyiceberg_rows(&py, "dst.events")?,
        events_json(&want, "key")
    );

    let hash = m.verify(VerifyMethod::PartitionHash, 10).await?;
    assert!(hash.matches, "{:?}", hash.details);
    let count = m.verify(VerifyMethod::RowCount, 10).await?;
    assert!(count.matches, "{:?}", count.details);
    assert_eq!(count.source_count, hash.source_count);
    assert_eq!(count.source_count, Some(want.len() as u64));

    // No delete applies to file E: the row count takes its rows from the manifest and never
    // opens it (it is gone from disk now), while files with deletes are still read.
    std::fs::remove_file(fe.file_path().trim_start_matches("file://"))?;
    let count = m.verify(VerifyMethod::RowCount, 10).await?;
    assert!(count.matches, "{:?}", count.details);
    assert_eq!(count.source_count, Some(want.len() as u64));
    Ok(())
}

/// An equality delete of an all-`void` spec (a v1 table whose partition field was dropped, then
/// upgraded to v2, as Flink writes them) applies to every older file whatever its partition —
/// Java's `PartitionSpec.isUnpartitioned` — though iceberg 0.10.1's planner attaches it only to
/// the files of that spec's tuple of NULLs. The copy drops the rows it deletes (NULL-safe: a
/// NULL amount survives `amount = 2`) and keeps a row appended after it; PyIceberg reads the
/// destination, and verify agrees.
#[tokio::test(flavor = "multi_thread")]
async fn an_all_void_spec_equality_delete_applies_to_every_partition() -> TestResult {
    use iceberg::spec::{FormatVersion, Literal, Transform, UnboundPartitionSpec};
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let ns = NamespaceIdent::new("src".into());
    handle
        .catalog()
        .create_namespace(&ns, HashMap::new())
        .await?;
    let orders = create_orders(&handle, "tmp").await?;
    let table = handle
        .catalog()
        .create_table(
            &ns,
            TableCreation::builder()
                .name("orders".into())
                .schema(orders.metadata().current_schema().as_ref().clone())
                .partition_spec(
                    UnboundPartitionSpec::builder()
                        .add_partition_field(2, "region", Transform::Identity)?
                        .build(),
                )
                .format_version(FormatVersion::V1)
                .build(),
        )
        .await?;
    let ident = table.identifier().clone();
    let rows: &[(i64, Option<&str>, Option<i32>)] = &[
        (1, Some("eu"), Some(1)),
        (2, Some("eu"), Some(2)),
        (3, Some("eu"), None),
        (4, Some("us"), Some(2)),
        (5, Some("us"), Some(5)),
    ];
    ops_core::ops::append::AppendBuilder::new(&handle, ident.clone())
        .add_written(crate::commit_layer::orders_files(&table, rows).await?)
        .await?;
    // v1 keeps a dropped partition field as `void`; then the table moves to v2.
    ops_core::ops::evolve_spec::EvolveSpecBuilder::new(&handle, ident.clone())
        .remove_field("region")
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    let table = ops_core::commit::commit(
        &handle,
        &table,
        TableChange {
            requirements: vec![],
            updates: vec![TableUpdate::UpgradeFormatVersion {
                format_version: FormatVersion::V2,
            }],
            ..Default::default()
        },
    )
    .await?;
    let spec = table.metadata().default_partition_spec();
    assert!(
        !spec.fields().is_empty() && spec.fields().iter().all(|f| f.transform == Transform::Void),
        "{spec:?}"
    );
    let null_tuple = Struct::from_iter([None::<Literal>]);
    let table = crate::commit_layer::commit_equality_delete_on(
        &handle,
        &table,
        null_tuple,
        ("amount", 3),
        Arc::new(Int32Array::from(vec![Some(2)])),
    )
    .await?;
    ops_core::ops::append::AppendBuilder::new(&handle, ident.clone())
        .add_written(crate::commit_layer::orders_files(&table, &[(6, Some("eu"), Some(2))]).await?)
        .await?;

    handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("dst".into()), HashMap::new())
        .await?;
    let mut m = DataMigrator::new(
        &handle,
        ident.clone(),
        &handle,
        TableIdent::from_strs(["dst", "orders"])?,
    )
    .create_dest(true);
    let result = m.run().await?;
    let got: Vec<i64> = pyiceberg_rows(&py, "dst.orders")?
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    let mut got = got;
    got.sort_unstable();
    assert_eq!(got, vec![1, 3, 5, 6], "{result:?}");
    assert_eq!(result.rows_moved, 4);
    let hash = m.verify(VerifyMethod::PartitionHash, 10).await?;
    assert!(hash.matches, "{:?}", hash.details);
    Ok(())
}

/// `src.orders` (unpartitioned): ids 1–5 with amounts 1, 2, NULL, 2, 5; an equality delete on
/// `amount` of 2 and NULL (NULL-safe: it takes ids 2, 3 and 4); then `amount` dropped, and with
/// `append_after`, id 6 appended (a file without `amount`, newer than the delete). A drop
/// commits no snapshot: without the append, the head snapshot's schema still has `amount`.
async fn orders_with_a_dropped_key(
    handle: &CatalogHandle,
    append_after: bool,
) -> anyhow::Result<TableIdent> {
    let table = create_orders_with_spec(
        handle,
        "src",
        iceberg::spec::UnboundPartitionSpec::builder().build(),
    )
    .await?;
    let ident = table.identifier().clone();
    let rows: &[(i64, Option<&str>, Option<i32>)] = &[
        (1, Some("eu"), Some(1)),
        (2, Some("eu"), Some(2)),
        (3, Some("us"), None),
        (4, Some("us"), Some(2)),
        (5, Some("eu"), Some(5)),
    ];
    ops_core::ops::append::AppendBuilder::new(handle, ident.clone())
        .add_written(crate::commit_layer::orders_files(&table, rows).await?)
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    crate::commit_layer::commit_equality_delete_on(
        handle,
        &table,
        Struct::empty(),
        ("amount", 3),
        Arc::new(Int32Array::from(vec![Some(2), None])),
    )
    .await?;
    ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(handle, ident.clone())
        .drop_column("amount")
        .await?;
    if append_after {
        let table = handle.catalog().load_table(&ident).await?;
        let batch = RecordBatch::try_new(
            Arc::new(iceberg::arrow::schema_to_arrow_schema(
                table.metadata().current_schema(),
            )?),
            vec![
                Arc::new(Int64Array::from(vec![6])),
                Arc::new(StringArray::from(vec![Some("eu")])),
            ],
        )?;
        ops_core::ops::append::AppendBuilder::new(handle, ident.clone())
            .add_written(
                ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?,
            )
            .await?;
    }
    handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("dst".into()), HashMap::new())
        .await?;
    Ok(ident)
}

/// The ids PyIceberg reads from `table` (a copy: PyIceberg cannot read equality deletes).
fn sorted_ids(py: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Vec<i64>> {
    let mut got: Vec<i64> = pyiceberg_rows(py, table)?
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    got.sort_unstable();
    Ok(got)
}

/// Copies `src` into a new `dst.<name>` and returns the ids PyIceberg reads there.
async fn copied_ids(
    handle: &CatalogHandle,
    py: &BTreeMap<String, String>,
    src: &TableIdent,
    name: &str,
) -> anyhow::Result<Vec<i64>> {
    let mut m = DataMigrator::new(
        handle,
        src.clone(),
        handle,
        TableIdent::from_strs(["dst", name])?,
    )
    .create_dest(true);
    m.run().await?;
    let hash = m.verify(VerifyMethod::PartitionHash, 10).await?;
    anyhow::ensure!(hash.matches, "{:?}", hash.details);
    sorted_ids(py, &format!("dst.{name}"))
}

/// An equality delete keyed on a column dropped since it was written (fuzzer seeds 400002 and
/// 400430): Java 1.10 fails to read such a table, apache/iceberg#15268 reads the key from the
/// data files by its field id, as here. A copy keeps the rows the delete leaves and the row
/// appended after the drop, verify agrees, and a copy-on-write delete rewrites the file
/// without bringing deleted rows back. Before, each was refused ("not a top-level column of
/// the current schema").
#[tokio::test(flavor = "multi_thread")]
async fn an_equality_delete_on_a_dropped_column_still_deletes() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = orders_with_a_dropped_key(&handle, true).await?;
    assert_eq!(copied_ids(&handle, &py, &src, "copy").await?, vec![1, 5, 6]);
    // A copy-on-write delete of id 5 rewrites the first file: ids 2, 3, 4 stay deleted.
    ops_core::ops::delete::DeleteBuilder::new(&handle, src.clone())
        .with_filter_text("id = 5")
        .await?;
    assert_eq!(
        copied_ids(&handle, &py, &src, "after_delete").await?,
        vec![1, 6]
    );
    Ok(())
}

/// The same with no commit after the drop (the head snapshot's schema still has the key, the
/// current one does not: the review of the first version found it still refused), and an
/// upsert into that table that adds `amount` back, whose read of the destination applies the
/// delete: id 1 updated, id 7 inserted, ids 2, 3 and 4 not brought back.
#[tokio::test(flavor = "multi_thread")]
async fn an_equality_delete_on_a_column_just_dropped_still_deletes() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = orders_with_a_dropped_key(&handle, false).await?;
    assert_eq!(copied_ids(&handle, &py, &src, "copy").await?, vec![1, 5]);

    let changes = create_orders_with_spec(
        &handle,
        "chg",
        iceberg::spec::UnboundPartitionSpec::builder().build(),
    )
    .await?;
    ops_core::ops::append::AppendBuilder::new(&handle, changes.identifier().clone())
        .add_written(
            crate::commit_layer::orders_files(
                &changes,
                &[(1, Some("us"), Some(10)), (7, Some("eu"), Some(70))],
            )
            .await?,
        )
        .await?;
    DataMigrator::new(&handle, changes.identifier().clone(), &handle, src.clone())
        .write_mode(ops_datamig::WriteMode::Upsert)
        .upsert_keys(["id"])
        // `amount` added back: a new column of the same name (a new field id), which the
        // dropped key, read under a name of its own, does not collide with.
        .schema_reconciler(
            ops_reconcile::SchemaReconciler::new()
                .on_missing_in_dest(ops_reconcile::MissingInDest::AutoAdd),
        )
        .run()
        .await?;
    assert_eq!(
        copied_ids(&handle, &py, &src, "after_upsert").await?,
        vec![1, 5, 7]
    );
    Ok(())
}

/// Compaction applies an equality delete keyed on a column dropped since (the key read from the
/// data files by its field id), with and without a commit after the drop: both files rewritten
/// into one, ids 2, 3 and 4 not brought back, nothing left out. Before, it left the file the
/// delete applies to out (`skipped_equality_delete_files`).
#[tokio::test(flavor = "multi_thread")]
async fn compaction_applies_an_equality_delete_on_a_dropped_column() -> TestResult {
    init_tracing();
    for (append_after, expected) in [(true, vec![1, 5, 6]), (false, vec![1, 5])] {
        let dir = tempfile::tempdir()?;
        let py = sqlite(dir.path());
        let handle = open("lake", &py).await?;
        let src = orders_with_a_dropped_key(&handle, append_after).await?;
        let (table, m) = ops_maintenance::compact::CompactBuilder::new(&handle, src.clone())
            .min_input_files(1)
            .await?;
        assert!(
            m.skipped_equality_delete_files.is_empty(),
            "append_after {append_after}: {m:?}"
        );
        assert!(
            m.snapshot_id.is_some(),
            "append_after {append_after}: {m:?}"
        );
        assert_eq!(
            data_paths(&table).await?.len(),
            1,
            "append_after {append_after}"
        );
        assert_eq!(
            copied_ids(&handle, &py, &src, "compacted").await?,
            expected,
            "append_after {append_after}"
        );
    }
    Ok(())
}

/// Data file paths of `table`'s current snapshot.
async fn data_paths(table: &Table) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let Some(snap) = table.metadata().current_snapshot() else {
        return Ok(out);
    };
    let list = table.manifest_list_reader(snap).load().await?;
    for mf in list.entries() {
        let m = mf.load_manifest(table.file_io()).await?;
        for e in m.entries() {
            if e.is_alive() {
                out.push(e.data_file().file_path().to_string());
            }
        }
    }
    Ok(out)
}

/// Item 2: `verify(RowCount)` with a row filter on an identity-partition column counts from the
/// manifests: with every source data file gone from disk it still answers, and correctly.
/// A filter on another column must read, so it fails there.
#[tokio::test(flavor = "multi_thread")]
async fn row_count_decides_a_partition_filter_from_manifests() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    let src = create_orders(&handle, "src").await?;
    let data: &[(i64, Option<&str>, Option<i32>)] = &[
        (1, Some("eu"), Some(10)),
        (2, Some("eu"), Some(20)),
        (3, Some("us"), Some(30)),
        (4, None, Some(40)),
        (5, Some("eu"), None),
        (6, None, Some(60)),
    ];
    let (src, _) = ops_core::append::append(
        &handle,
        &src,
        futures::stream::iter([Ok(orders_batch(&src, data)?)]),
        HashMap::new(),
    )
    .await?;
    handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("dst".into()), HashMap::new())
        .await?;
    let migrator = |filter: &str| -> anyhow::Result<DataMigrator> {
        Ok(DataMigrator::new(
            &handle,
            TableIdent::from_strs(["src", "orders"])?,
            &handle,
            TableIdent::from_strs(["dst", "orders"])?,
        )
        .row_filter(filter)
        .create_dest(true))
    };
    let mut m = migrator("region = 'eu'")?;
    assert_eq!(m.run().await?.rows_moved, 3);

    for path in data_paths(&src).await? {
        std::fs::remove_file(path.trim_start_matches("file://"))?;
    }
    let count = m.verify(VerifyMethod::RowCount, 10).await?;
    assert!(count.matches, "{:?}", count.details);
    assert_eq!((count.source_count, count.dest_count), (Some(3), Some(3)));

    // IS NULL on the partition column: the NULL partition's rows (2), still from manifests.
    let count = migrator("region IS NULL")?
        .verify(VerifyMethod::RowCount, 10)
        .await?;
    assert_eq!(count.source_count, Some(2));
    let count = migrator("region IN ('eu', 'us') AND NOT region = 'us'")?
        .verify(VerifyMethod::RowCount, 10)
        .await?;
    assert_eq!(count.source_count, Some(3));

    // A filter on a non-partition column cannot be decided per file: it reads, and fails here.
    let err = migrator("amount > 15")?
        .verify(VerifyMethod::RowCount, 10)
        .await
        .err();
    assert!(err.is_some(), "a filter on amount must read the files");
    Ok(())
}

/// `ns.keyed(k <ty> (required unless `nullable_key`), v string)`, unpartitioned.
async fn keyed_table(
    handle: &CatalogHandle,
    ns: &str,
    ty: PrimitiveType,
    nullable_key: bool,
) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let namespace = NamespaceIdent::new(ns.into());
    if !catalog.namespace_exists(&namespace).await? {
        catalog.create_namespace(&namespace, HashMap::new()).await?;
    }
    let k = if nullable_key {
        NestedField::optional(1, "k", Type::Primitive(ty))
    } else {
        NestedField::required(1, "k", Type::Primitive(ty))
    };
    let schema = Schema::builder()
        .with_fields(vec![
            k.into(),
            NestedField::optional(2, "v", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .build()?;
    Ok(catalog
        .create_table(
            &namespace,
            TableCreation::builder()
                .name("keyed".into())
                .schema(schema)
                .build(),
        )
        .await?)
}

async fn append_keyed(
    handle: &CatalogHandle,
    table: &Table,
    keys: ArrayRef,
    values: &[&str],
) -> anyhow::Result<()> {
    let batch = RecordBatch::try_new(
        ops_core::write::table_arrow_schema(table)?,
        vec![keys, Arc::new(StringArray::from(values.to_vec()))],
    )?;
    ops_core::append::append(
        handle,
        table,
        futures::stream::iter([Ok(batch)]),
        HashMap::new(),
    )
    .await?;
    Ok(())
}

/// Upsert keyed by a column of type `ty`; `keys(rows)` builds the key column of five distinct
/// values K0..K4 at `rows`. The
/// source holds K0..K3; the destination K0 (same row), K1 (other value) and K4. Expected
/// (PyIceberg reads both sides): the source's rows plus the destination's K4 row, with one
/// update, two inserts, and a second run that changes nothing.
async fn upsert_by_key_type(
    ty: PrimitiveType,
    keys: impl Fn(&[usize]) -> anyhow::Result<ArrayRef>,
) -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = keyed_table(&handle, "src", ty.clone(), false).await?;
    let dst = keyed_table(&handle, "dst", ty, false).await?;
    append_keyed(
        &handle,
        &src,
        keys(&[0, 1, 2, 3])?,
        &["s0", "s1", "s2", "s3"],
    )
    .await?;
    append_keyed(&handle, &dst, keys(&[0, 1, 4])?, &["s0", "old", "kept"]).await?;
    let kept: Vec<Value> = pyiceberg_rows(&py, "dst.keyed")?
        .into_iter()
        .filter(|r| r["v"] == json!("kept"))
        .collect();
    let mut want = pyiceberg_rows(&py, "src.keyed")?;
    want.extend(kept);
    sort_rows(&mut want);

    let upsert = || -> anyhow::Result<DataMigrator> {
        Ok(DataMigrator::new(
            &handle,
            TableIdent::from_strs(["src", "keyed"])?,
            &handle,
            TableIdent::from_strs(["dst", "keyed"])?,
        )
        .write_mode(ops_datamig::WriteMode::Upsert)
        .upsert_keys(["k"])
        .batch_rows(3))
    };
    let result = upsert()?.run().await?;
    assert_eq!(
        (result.rows_inserted, result.rows_updated),
        (Some(2), Some(1))
    );
    assert_eq!(pyiceberg_rows(&py, "dst.keyed")?, want);
    let again = upsert()?.run().await?;
    assert_eq!(
        (again.rows_inserted, again.rows_updated),
        (Some(0), Some(0))
    );
    assert_eq!(pyiceberg_rows(&py, "dst.keyed")?, want);
    Ok(())
}

fn pick<T: Copy>(values: &[T], rows: &[usize]) -> Vec<T> {
    rows.iter().map(|&r| values[r]).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_decimal_key() -> TestResult {
    let values = [150i128, -150, 1, 99_999_999, 0];
    upsert_by_key_type(
        PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        },
        |rows| {
            Ok(Arc::new(
                arrow_array::Decimal128Array::from(pick(&values, rows))
                    .with_precision_and_scale(10, 2)?,
            ))
        },
    )
    .await
}

const MICROS: [i64; 5] = [
    1_700_000_000_000_000,
    1_700_000_000_000_001,
    -1,
    0,
    1_800_000_000_123_456,
];

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_timestamp_key() -> TestResult {
    upsert_by_key_type(PrimitiveType::Timestamp, |rows| {
        Ok(Arc::new(arrow_array::TimestampMicrosecondArray::from(
            pick(&MICROS, rows),
        )))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_timestamptz_key() -> TestResult {
    upsert_by_key_type(PrimitiveType::Timestamptz, |rows| {
        Ok(Arc::new(
            arrow_array::TimestampMicrosecondArray::from(pick(&MICROS, rows))
                .with_timezone("+00:00"),
        ))
    })
    .await
}

/// A time key upserts: the key lookup is no longer a filter holding time literals (which
/// iceberg 0.10.1's reader panics on), the key set matches them.
#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_time_key() -> TestResult {
    let values = [0i64, 3_600_000_000, 1, 86_399_999_999, 5];
    upsert_by_key_type(PrimitiveType::Time, |rows| {
        Ok(Arc::new(arrow_array::Time64MicrosecondArray::from(pick(
            &values, rows,
        ))))
    })
    .await
}

const FIXED: [[u8; 16]; 5] = [[1; 16], [2; 16], [0; 16], [0xff; 16], [7; 16]];

fn fixed16(rows: &[usize]) -> anyhow::Result<ArrayRef> {
    Ok(Arc::new(arrow_array::FixedSizeBinaryArray::try_from_iter(
        pick(&FIXED, rows).into_iter(),
    )?))
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_uuid_key() -> TestResult {
    upsert_by_key_type(PrimitiveType::Uuid, fixed16).await
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_fixed_key() -> TestResult {
    upsert_by_key_type(PrimitiveType::Fixed(16), fixed16).await
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_binary_key() -> TestResult {
    let values: [&[u8]; 5] = [b"a", b"\x00\xff", b"", b"abc", b"zz"];
    upsert_by_key_type(PrimitiveType::Binary, |rows| {
        Ok(Arc::new(arrow_array::LargeBinaryArray::from(pick(
            &values, rows,
        ))))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn upsert_by_double_key_and_nan_is_refused() -> TestResult {
    let values = [1.5f64, -2.25, 0.0, 1e300, 3.0];
    upsert_by_key_type(PrimitiveType::Double, |rows| {
        Ok(Arc::new(arrow_array::Float64Array::from(pick(
            &values, rows,
        ))))
    })
    .await?;

    let dir = tempfile::tempdir()?;
    let handle = open("lake", &sqlite(dir.path())).await?;
    let src = keyed_table(&handle, "src", PrimitiveType::Double, false).await?;
    keyed_table(&handle, "dst", PrimitiveType::Double, false).await?;
    let keys = arrow_array::Float64Array::from(vec![1.0, f64::NAN]);
    append_keyed(&handle, &src, Arc::new(keys), &["a", "b"]).await?;
    let err = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["src", "keyed"])?,
        &handle,
        TableIdent::from_strs(["dst", "keyed"])?,
    )
    .write_mode(ops_datamig::WriteMode::Upsert)
    .upsert_keys(["k"])
    .run()
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("NaN"), "{err}");
    Ok(())
}

/// A NULL upsert key is refused as the seed's PyIceberg `Table.upsert` refuses it (it raises
/// on the None key literal): nothing is written, and the error says how to proceed.
#[tokio::test(flavor = "multi_thread")]
async fn upsert_refuses_a_null_key_like_pyiceberg() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = keyed_table(&handle, "src", PrimitiveType::Long, true).await?;
    let dst = keyed_table(&handle, "dst", PrimitiveType::Long, true).await?;
    append_keyed(
        &handle,
        &src,
        Arc::new(Int64Array::from(vec![Some(1), None])),
        &["a", "b"],
    )
    .await?;
    append_keyed(
        &handle,
        &dst,
        Arc::new(Int64Array::from(vec![None::<i64>])),
        &["held"],
    )
    .await?;
    let before = pyiceberg_rows(&py, "dst.keyed")?;
    let err = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["src", "keyed"])?,
        &handle,
        TableIdent::from_strs(["dst", "keyed"])?,
    )
    .write_mode(ops_datamig::WriteMode::Upsert)
    .upsert_keys(["k"])
    .run()
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("null value") && err.contains("k IS NOT NULL"),
        "{err}"
    );
    assert_eq!(pyiceberg_rows(&py, "dst.keyed")?, before);

    // PyIceberg itself on the same data: its upsert raises too.
    let out = ops_tests::oracle::pyiceberg(
        "lake",
        &py,
        "t = catalog.load_table('dst.keyed')\n\
         df = catalog.load_table('src.keyed').scan().to_arrow()\n\
         try:\n    t.upsert(df, join_cols=['k'])\n    emit('ok')\n\
         except Exception as e:\n    emit(type(e).__name__)",
    )?;
    assert_ne!(out, json!("ok"));
    Ok(())
}
