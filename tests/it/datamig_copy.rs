//! The DataMigrator's file-copy fast path (`ops_datamig::route_files` / `copy_files`) on the
//! embedded SQLite catalog, destination contents confirmed by PyIceberg.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray};
use iceberg::spec::{
    DataContentType, DataFileBuilder, DataFileFormat, Datum, ManifestListWriter,
    ManifestWriterBuilder, NestedField, PrimitiveType, Schema, Struct, Transform, Type,
    UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent, TableRequirement, TableUpdate};
use ops_core::CatalogHandle;
use ops_core::commit::TableChange;
use ops_core::ops::append::AppendBuilder;
use ops_datamig::{CopyMode, FileRoute, FileRouting, MigrationError, WriteMode, copy_files};
use ops_reconcile::{MissingInSource, ReconciliationPlan, SchemaReconciler};
use serde_json::{Value, json};

use crate::common::*;

/// (id, region, amount, price as unscaled cents, ts in µs).
type Row = (
    i64,
    Option<&'static str>,
    Option<i32>,
    Option<i128>,
    Option<i64>,
);

const REGIONS: [Option<&str>; 4] = [Some("us"), Some("eu"), Some("apac"), None];

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

/// `n` rows over four partitions (one NULL), with NULLs in every other column too.
fn rows(n: i64) -> Vec<Row> {
    (0..n)
        .map(|i| {
            (
                i,
                REGIONS[(i % 4) as usize],
                (i % 5 != 2).then_some(i as i32 * 10),
                (i % 6 != 1).then_some(i128::from(i) * 1234 + 5),
                (i % 7 != 3).then_some(1_700_000_000_000_000 + i * 3_600_000_000),
            )
        })
        .collect()
}

/// `ns.events` (id long required, region string, <amount> <amount_type>, price decimal(10,2),
/// ts timestamp, extra...) partitioned by identity(region), ids 1.. in order.
async fn create(
    handle: &CatalogHandle,
    ns: &str,
    amount: (&str, PrimitiveType),
    extra: &[&str],
) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let nsi = NamespaceIdent::new(ns.to_string());
    catalog.create_namespace(&nsi, HashMap::new()).await?;
    let mut fields = vec![
        NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
        NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
        NestedField::optional(3, amount.0, Type::Primitive(amount.1)).into(),
        NestedField::optional(
            4,
            "price",
            Type::Primitive(PrimitiveType::Decimal {
                precision: 10,
                scale: 2,
            }),
        )
        .into(),
        NestedField::optional(5, "ts", Type::Primitive(PrimitiveType::Timestamp)).into(),
    ];
    for (i, name) in extra.iter().enumerate() {
        fields.push(
            NestedField::optional(6 + i as i32, *name, Type::Primitive(PrimitiveType::Long)).into(),
        );
    }
    let schema = Schema::builder().with_fields(fields).build()?;
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "region", Transform::Identity)?
        .build();
    Ok(catalog
        .create_table(
            &nsi,
            TableCreation::builder()
                .name("events".into())
                .schema(schema)
                .partition_spec(spec)
                .build(),
        )
        .await?)
}

fn batch(table: &Table, rows: &[Row]) -> anyhow::Result<RecordBatch> {
    let schema = ops_core::write::table_arrow_schema(table)?;
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(
                Decimal128Array::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())
                    .with_precision_and_scale(10, 2)?,
            ),
            Arc::new(arrow_array::TimestampMicrosecondArray::from(
                rows.iter().map(|r| r.4).collect::<Vec<_>>(),
            )),
        ],
    )?)
}

/// src.events holding `data` in two appends (two files per partition).
async fn source(handle: &CatalogHandle, data: &[Row]) -> anyhow::Result<Table> {
    let mut table = create(handle, "src", ("amount", PrimitiveType::Int), &[]).await?;
    let (first, second) = data.split_at(data.len() / 2);
    for part in [first, second] {
        let b = batch(&table, part)?;
        let w = ops_core::write::write_files(&table, futures::stream::iter([Ok(b)])).await?;
        table = AppendBuilder::new(handle, table.identifier().clone())
            .add_written(w)
            .await?
            .0;
    }
    Ok(table)
}

/// dst.events: `amount` renamed to `total` and widened to long, same ids and spec.
async fn dest(handle: &CatalogHandle) -> anyhow::Result<Table> {
    create(handle, "dst", ("total", PrimitiveType::Long), &[]).await
}

/// A source of `n` rows and an empty destination in a fresh SQLite catalog, with the plan that
/// renames `amount` to `total`: the setup the routing tests share.
struct Renamed {
    /// Holds the catalog and warehouse: dropped, they are deleted.
    dir: tempfile::TempDir,
    py: BTreeMap<String, String>,
    handle: CatalogHandle,
    src: Table,
    dst: Table,
    plan: ReconciliationPlan,
}

async fn renamed_pair(n: i64) -> anyhow::Result<Renamed> {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = source(&handle, &rows(n)).await?;
    let dst = dest(&handle).await?;
    let plan = plan_of(&src, &dst, renamed())?;
    Ok(Renamed {
        dir,
        py,
        handle,
        src,
        dst,
        plan,
    })
}

fn plan_of(
    source: &Table,
    dest: &Table,
    r: SchemaReconciler,
) -> anyhow::Result<ReconciliationPlan> {
    Ok(r.compute_plan(
        source.metadata().current_schema(),
        dest.metadata().current_schema(),
    )?)
}

fn renamed() -> SchemaReconciler {
    SchemaReconciler::new().rename("amount", "total")
}

fn filter(source: &Table, text: &str) -> anyhow::Result<iceberg::expr::Predicate> {
    Ok(ops_core::filter::parse_filter(
        text,
        source.metadata().current_schema(),
    )?)
}

async fn route(
    source: &Table,
    dest: &Table,
    plan: &ReconciliationPlan,
    row_filter: Option<&iceberg::expr::Predicate>,
    mode: CopyMode,
) -> Result<FileRouting, MigrationError> {
    let snapshot = source
        .metadata()
        .current_snapshot_id()
        .ok_or_else(|| MigrationError::InvalidInput("source has no snapshot".into()))?;
    ops_datamig::route_files(
        source,
        snapshot,
        dest,
        plan,
        row_filter,
        WriteMode::Append,
        mode,
    )
    .await
}

/// PyIceberg's rows of `table` with an optional row filter, sorted.
fn py_rows(
    py: &BTreeMap<String, String>,
    table: &str,
    row_filter: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let scan = match row_filter {
        Some(f) => format!("t.scan(row_filter={f:?})"),
        None => "t.scan()".to_string(),
    };
    let out = ops_tests::oracle::pyiceberg(
        "lake",
        py,
        &format!(
            "t = catalog.load_table('{table}')\n\
             emit(sorted({scan}.to_arrow().to_pylist(), \
             key=lambda r: json.dumps(r, sort_keys=True, default=str)))"
        ),
    )?;
    let mut r = out.as_array().cloned().unwrap_or_default();
    sort_rows(&mut r);
    Ok(r)
}

/// Source rows as the destination shows them: `amount` renamed to `total`.
fn as_dest(rows: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .into_iter()
        .map(|mut r| {
            if let Some(o) = r.as_object_mut() {
                let amount = o.remove("amount").unwrap_or(Value::Null);
                o.insert("total".into(), amount);
            }
            r
        })
        .collect();
    sort_rows(&mut out);
    out
}

/// Each routed file's `region` partition (from its `region=` path segment: a rewritten or
/// skipped file keeps no manifest entry to read it from) and route.
fn routes(routing: &FileRouting) -> Vec<(Option<String>, FileRoute)> {
    routing
        .files
        .iter()
        .map(|f| {
            let region = f
                .routed
                .path
                .dir()
                .split('/')
                .find_map(|seg| seg.strip_prefix("region="))
                .filter(|v| *v != "null")
                .map(str::to_string);
            (region, f.routed.route)
        })
        .collect()
}

/// A routed file that is not copied keeps no manifest entry (a plan of a million rewritten
/// files would hold them all), while a copied one keeps its entry with every metric: they go
/// into the destination.
#[tokio::test(flavor = "multi_thread")]
async fn only_copied_files_keep_their_manifest_entries_in_the_routing() -> TestResult {
    let f = renamed_pair(30).await?;
    let (src, dst, plan) = (&f.src, &f.dst, &f.plan);

    let copied = route(src, dst, plan, None, CopyMode::Auto).await?;
    assert_eq!(copied.count(FileRoute::Copy), 8, "{:?}", copied.report());
    assert!(copied.files.iter().all(|f| f.data_file.is_some()));
    for f in copied.data_files(FileRoute::Copy) {
        assert!(!f.value_counts().is_empty(), "{}", f.file_path());
        assert!(!f.lower_bounds().is_empty(), "{}", f.file_path());
    }
    let rewritten = route(src, dst, plan, None, CopyMode::Rewrite).await?;
    assert_eq!(rewritten.count(FileRoute::Rewrite), 8);
    for f in &rewritten.files {
        assert!(f.data_file.is_none(), "{} kept its entry", f.routed.path);
        // What the plan needs of it is still there.
        assert!(f.routed.record_count > 0 && f.routed.file_size_in_bytes > 0);
    }
    assert!(rewritten.data_files(FileRoute::Rewrite).is_empty());
    // Such a file handed to a copy anyway is refused, naming it, before anything is written.
    let planned = rewritten.planned(FileRoute::Rewrite);
    let err = copy_files(src, dst, &planned[..1], FileRoute::Copy)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a file without its entry was copied"))?
        .to_string();
    assert!(
        err.contains(&planned[0].routed.path.to_path_string())
            && err.contains("without its manifest entry"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn copied_files_read_the_same_in_pyiceberg_with_renamed_and_widened_columns() -> TestResult {
    let f = renamed_pair(30).await?;
    let (py, handle, src, dst, plan) = (&f.py, &f.handle, &f.src, &f.dst, &f.plan);

    let routing = route(src, dst, plan, None, CopyMode::Auto).await?;
    assert_eq!(routing.ineligible, None);
    assert_eq!(routing.files.len(), 8, "{:?}", routing.report());
    assert_eq!(routing.count(FileRoute::Copy), 8, "{:?}", routing.report());
    let report = serde_json::to_value(routing.report())?;
    assert_eq!(report[0]["route"], json!("copy"), "{report}");
    assert!(
        report[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("same field ids")),
        "{report}"
    );

    let planned = routing.planned(FileRoute::Copy);
    let files = routing.data_files(FileRoute::Copy);
    let written = copy_files(src, dst, &planned, FileRoute::Copy).await?;
    assert_eq!(written.spec_id, dst.metadata().default_partition_spec_id());
    assert_eq!(written.record_count(), 30);
    let data_dir = format!("{}/data/", dst.metadata().location());
    for (from, to) in files.iter().zip(&written.files) {
        assert!(to.file_path().starts_with(&data_dir), "{}", to.file_path());
        assert_ne!(to.file_path(), from.file_path());
        // The partition directory is kept; the bytes are the source's.
        let part = from.file_path().rsplit('/').nth(1).unwrap_or_default();
        assert_eq!(to.file_path().rsplit('/').nth(1), Some(part));
        let (a, b) = (
            std::fs::read(from.file_path().trim_start_matches("file://"))?,
            std::fs::read(to.file_path().trim_start_matches("file://"))?,
        );
        assert_eq!(a, b);
        assert_eq!(to.file_size_in_bytes(), a.len() as u64);
        assert_eq!(to.record_count(), from.record_count());
        assert_eq!(to.null_value_counts(), from.null_value_counts());
        // The int bounds of the widened column are longs now; the others are unchanged.
        if let Some(lower) = to.lower_bounds().get(&3) {
            assert_eq!(lower.data_type(), &PrimitiveType::Long);
        }
        assert_eq!(to.lower_bounds().get(&4), from.lower_bounds().get(&4));
    }
    AppendBuilder::new(handle, TableIdent::from_strs(["dst", "events"])?)
        .add_written(written)
        .await?;

    // PyIceberg reads the destination as the source, renamed and widened; filters on the
    // widened, decimal and timestamp columns prune with the copied bounds and agree too.
    let want = as_dest(py_rows(py, "src.events", None)?);
    assert_eq!(want.len(), 30);
    assert_eq!(py_rows(py, "dst.events", None)?, want);
    for (src_filter, dst_filter) in [
        ("amount >= 150", "total >= 150"),
        ("price < 100.00", "price < 100.00"),
        ("ts >= '2023-11-15T00:00:00'", "ts >= '2023-11-15T00:00:00'"),
    ] {
        let want = as_dest(py_rows(py, "src.events", Some(src_filter))?);
        assert!(!want.is_empty() && want.len() < 30, "{src_filter}");
        assert_eq!(
            py_rows(py, "dst.events", Some(dst_filter))?,
            want,
            "{dst_filter}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partition_filter_copies_matching_files_and_a_data_filter_rewrites() -> TestResult {
    let f = renamed_pair(30).await?;
    let (py, handle, src, dst, plan) = (&f.py, &f.handle, &f.src, &f.dst, &f.plan);

    // `region <> 'apac'` is unknown for the NULL partition: skipped, as the rewrite drops it.
    let f = filter(src, "region <> 'apac'")?;
    let routing = route(src, dst, plan, Some(&f), CopyMode::Auto).await?;
    let mut got = routes(&routing);
    got.sort_by_key(|(r, _)| r.clone());
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        got,
        vec![
            (None, FileRoute::Skip),
            (None, FileRoute::Skip),
            (s("apac"), FileRoute::Skip),
            (s("apac"), FileRoute::Skip),
            (s("eu"), FileRoute::Copy),
            (s("eu"), FileRoute::Copy),
            (s("us"), FileRoute::Copy),
            (s("us"), FileRoute::Copy),
        ]
    );
    let skipped = routing
        .files
        .iter()
        .find(|f| f.routed.route == FileRoute::Skip)
        .map(|f| f.routed.reason.clone())
        .unwrap_or_default();
    assert!(skipped.contains("excludes every row"), "{skipped}");

    let written = copy_files(src, dst, &routing.planned(FileRoute::Copy), FileRoute::Copy).await?;
    AppendBuilder::new(handle, TableIdent::from_strs(["dst", "events"])?)
        .add_written(written)
        .await?;
    let want = as_dest(py_rows(
        py,
        "src.events",
        Some("region == 'us' or region == 'eu'"),
    )?);
    assert_eq!(want.len(), 16);
    assert_eq!(py_rows(py, "dst.events", None)?, want);

    // A filter on a data column cannot be decided from partition values.
    let f = filter(src, "amount > 100")?;
    let routing = route(src, dst, plan, Some(&f), CopyMode::Auto).await?;
    assert_eq!(
        routing.count(FileRoute::Rewrite),
        8,
        "{:?}",
        routing.report()
    );
    let reason = &routing.files[0].routed.reason;
    assert!(
        reason.contains("non-partition column") && reason.contains("`amount`"),
        "{reason}"
    );
    assert_eq!(routing.rewrite_paths().len(), 8);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_position_delete_sends_its_file_to_rewrite() -> TestResult {
    let f = renamed_pair(30).await?;
    let (handle, src, dst, plan) = (&f.handle, &f.src, &f.dst, &f.plan);
    let before = route(src, dst, plan, None, CopyMode::Auto).await?;
    let target = before
        .files
        .iter()
        .filter_map(|f| f.data_file.as_deref())
        .find(|d| {
            d.partition().iter().next().flatten() == Some(&iceberg::spec::Literal::string("eu"))
        })
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no eu file"))?;
    let src =
        commit_position_delete(handle, src, target.file_path(), target.partition().clone()).await?;

    let routing = route(&src, dst, plan, None, CopyMode::Files).await?;
    for f in &routing.files {
        if f.routed.path.is(target.file_path()) {
            assert_eq!(f.routed.route, FileRoute::Rewrite);
            assert!(
                f.routed.reason.contains("position delete"),
                "{}",
                f.routed.reason
            );
        } else {
            assert_eq!(f.routed.route, FileRoute::Copy, "{:?}", f.routed);
        }
    }
    assert_eq!(routing.count(FileRoute::Copy), 7);

    // A filter that excludes the file's partition skips it: its deletes do not matter.
    let f = filter(&src, "region = 'us'")?;
    let routing = route(&src, dst, plan, Some(&f), CopyMode::Auto).await?;
    let routed = routing
        .files
        .iter()
        .find(|f| f.routed.path.is(target.file_path()))
        .map(|f| f.routed.route);
    assert_eq!(routed, Some(FileRoute::Skip));
    assert_eq!(routing.count(FileRoute::Copy), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn files_mode_refuses_an_ineligible_plan_that_auto_rewrites() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = source(&handle, &rows(12)).await?;
    // The destination has one more column, which the plan fills with NULLs.
    let dst = create(&handle, "dst", ("total", PrimitiveType::Long), &["note"]).await?;
    let plan = plan_of(
        &src,
        &dst,
        renamed().on_missing_in_source(MissingInSource::Null),
    )?;

    for mode in [CopyMode::Files, CopyMode::Reference] {
        let err = route(&src, &dst, &plan, None, mode).await.err();
        let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            matches!(err, Some(MigrationError::InvalidInput(_)))
                && msg.contains("`note`")
                && msg.contains("null-filled")
                && msg.contains("--copy-mode auto"),
            "{mode}: {msg}"
        );
    }
    let routing = route(&src, &dst, &plan, None, CopyMode::Auto).await?;
    assert!(routing.ineligible.is_some());
    assert_eq!(routing.count(FileRoute::Rewrite), routing.files.len());
    assert!(routing.files[0].routed.reason.contains("null-filled"));

    // A non-append write mode is a table-level refusal too; rewrite mode routes everything.
    let dst2 = dest_in(&handle, "dst2").await?;
    let plan2 = plan_of(&src, &dst2, renamed())?;
    let snapshot = src.metadata().current_snapshot_id().unwrap_or_default();
    let err = ops_datamig::route_files(
        &src,
        snapshot,
        &dst2,
        &plan2,
        None,
        WriteMode::Upsert,
        CopyMode::Files,
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("write mode upsert"), "{err}");
    let routing = route(&src, &dst2, &plan2, None, CopyMode::Rewrite).await?;
    assert_eq!(routing.count(FileRoute::Rewrite), routing.files.len());
    assert!(
        routing.files[0]
            .routed
            .reason
            .contains("--copy-mode rewrite")
    );
    Ok(())
}

async fn dest_in(handle: &CatalogHandle, ns: &str) -> anyhow::Result<Table> {
    create(handle, ns, ("total", PrimitiveType::Long), &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_mode_commits_the_source_paths() -> TestResult {
    let f = renamed_pair(20).await?;
    let (py, handle, src, dst, plan) = (&f.py, &f.handle, &f.src, &f.dst, &f.plan);
    let routing = route(src, dst, plan, None, CopyMode::Reference).await?;
    assert_eq!(routing.count(FileRoute::Reference), 8);
    let files = routing.data_files(FileRoute::Reference);
    let written = copy_files(
        src,
        dst,
        &routing.planned(FileRoute::Reference),
        FileRoute::Reference,
    )
    .await?;
    let paths = |f: &[iceberg::spec::DataFile]| {
        f.iter()
            .map(|f| f.file_path().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&written.files), paths(&files));
    AppendBuilder::new(handle, TableIdent::from_strs(["dst", "events"])?)
        .add_written(written)
        .await?;
    let want = as_dest(py_rows(py, "src.events", None)?);
    assert_eq!(py_rows(py, "dst.events", None)?, want);
    // Nothing was written under the destination's data directory.
    let data = f.dir.path().join("wh/dst/events/data");
    assert!(!data.exists() || std::fs::read_dir(&data)?.next().is_none());
    Ok(())
}

/// Commits a position delete of row 0 of `data_path` as Spark merge-on-read would (the
/// approach of commit_layer.rs).
async fn commit_position_delete(
    handle: &CatalogHandle,
    table: &Table,
    data_path: &str,
    partition: Struct,
) -> anyhow::Result<Table> {
    use arrow_schema::{DataType, Field, Schema as ArrowSchema};
    let field = |name: &str, id: i32, t: DataType| {
        Field::new(name, t, false).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    };
    let schema = Arc::new(ArrowSchema::new(vec![
        field("file_path", 2147483546, DataType::Utf8),
        field("pos", 2147483545, DataType::Int64),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![data_path])),
            Arc::new(Int64Array::from(vec![0i64])),
        ],
    )?;
    let md = table.metadata();
    let loc = md.location();
    let path = format!("{loc}/data/pos-delete-{}.parquet", uuid_like());
    let mut buf = Vec::new();
    {
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None)?;
        w.write(&batch)?;
        w.close()?;
    }
    let size = buf.len() as u64;
    table.file_io().new_output(&path)?.write(buf.into()).await?;
    let spec = md.default_partition_spec().clone();
    let delete = DataFileBuilder::default()
        .content(DataContentType::PositionDeletes)
        .file_path(path)
        .file_format(DataFileFormat::Parquet)
        .partition(partition)
        .partition_spec_id(spec.spec_id())
        .record_count(1)
        .file_size_in_bytes(size)
        // As Spark writes them: the one data file this delete names.
        .lower_bounds(HashMap::from([(2147483546, Datum::string(data_path))]))
        .upper_bounds(HashMap::from([(2147483546, Datum::string(data_path))]))
        .build()?;
    let snapshot_id = 424242i64 + md.snapshots().count() as i64;
    let seq = md.next_sequence_number();
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
    let parent = md
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
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
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_copy_leaves_no_file_behind() -> TestResult {
    let f = renamed_pair(20).await?;
    let (src, dst, plan) = (&f.src, &f.dst, &f.plan);
    let routing = route(src, dst, plan, None, CopyMode::Files).await?;
    let files = routing.data_files(FileRoute::Copy);
    // One source file vanished (e.g. expired under the migration): the copies of the others,
    // done or under way, are removed again.
    let gone = files[files.len() / 2].file_path().to_string();
    std::fs::remove_file(gone.trim_start_matches("file://"))?;
    let err = copy_files(src, dst, &routing.planned(FileRoute::Copy), FileRoute::Copy)
        .await
        .err();
    assert!(err.is_some());
    let mut left = Vec::new();
    let data = f.dir.path().join("wh/dst/events/data");
    if data.exists() {
        for part in std::fs::read_dir(&data)? {
            for f in std::fs::read_dir(part?.path())? {
                left.push(f?.path());
            }
        }
    }
    assert!(left.is_empty(), "{left:?}");
    Ok(())
}

/// A file added without Parquet field ids (as `add_files` does, here with no name mapping left
/// to resolve it) is read by position: routing finds it from its footer and rewrites it, so the
/// destination never holds a file other readers cannot resolve.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_without_field_ids_is_rewritten_not_copied() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let py = sqlite(dir.path());
    let handle = open("lake", &py).await?;
    let src = source(&handle, &rows(20)).await?;
    let want = as_dest(py_rows(&py, "src.events", None)?);
    assert_eq!(want.len(), 20);

    let extra: Vec<Row> = (100..106)
        .map(|i| {
            (
                i,
                Some("eu"),
                Some(i as i32),
                Some(i128::from(i) * 100),
                Some(1_700_000_000_000_000),
            )
        })
        .collect();
    let with_ids = batch(&src, &extra)?;
    let bare = Arc::new(arrow_schema::Schema::new(
        with_ids
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_metadata(HashMap::new()))
            .collect::<Vec<_>>(),
    ));
    let no_ids = RecordBatch::try_new(bare.clone(), with_ids.columns().to_vec())?;
    let mut buf = Vec::new();
    {
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, bare, None)?;
        w.write(&no_ids)?;
        w.close()?;
    }
    let md = src.metadata();
    let path = format!(
        "{}/data/region=eu/no-ids-{}.parquet",
        md.location(),
        uuid_like()
    );
    let size = buf.len() as u64;
    src.file_io().new_output(&path)?.write(buf.into()).await?;
    let spec_id = md.default_partition_spec_id();
    let added = DataFileBuilder::default()
        .content(DataContentType::Data)
        .file_path(path.clone())
        .file_format(DataFileFormat::Parquet)
        .partition(Struct::from_iter([Some(iceberg::spec::Literal::string(
            "eu",
        ))]))
        .partition_spec_id(spec_id)
        .record_count(extra.len() as u64)
        .file_size_in_bytes(size)
        .build()?;
    let src = AppendBuilder::new(&handle, src.identifier().clone())
        .add_written(ops_core::write::WrittenFiles {
            spec_id,
            files: vec![added],
        })
        .await?
        .0;
    let dst = dest(&handle).await?;
    let plan = plan_of(&src, &dst, renamed())?;

    let routing = route(&src, &dst, &plan, None, CopyMode::Files).await?;
    assert_eq!(routing.files.len(), 9);
    for f in &routing.files {
        if f.routed.path.is(&path) {
            assert_eq!(f.routed.route, FileRoute::Rewrite);
            assert!(
                f.routed.reason.contains("no field id") && f.routed.reason.contains("`id`"),
                "{}",
                f.routed.reason
            );
        } else {
            assert_eq!(f.routed.route, FileRoute::Copy, "{:?}", f.routed);
        }
    }

    let result = ops_datamig::DataMigrator::new(
        &handle,
        src.identifier().clone(),
        &handle,
        dst.identifier().clone(),
    )
    .schema_reconciler(renamed())
    .run()
    .await?;
    assert_eq!((result.files_copied, result.files_rewritten), (8, 1));
    // PyIceberg cannot resolve a file without ids in a table without a name mapping: reading
    // the destination at all shows none was copied.
    let got = py_rows(&py, "dst.events", None)?;
    let (old, new): (Vec<Value>, Vec<Value>) = got
        .into_iter()
        .partition(|r| r["id"].as_i64().is_some_and(|id| id < 100));
    assert_eq!(old, want);
    let new: Vec<(Option<i64>, Option<&str>, Option<i64>)> = new
        .iter()
        .map(|r| (r["id"].as_i64(), r["region"].as_str(), r["total"].as_i64()))
        .collect();
    let mut new = new;
    new.sort();
    assert_eq!(
        new,
        (100..106)
            .map(|i| (Some(i), Some("eu"), Some(i)))
            .collect::<Vec<_>>()
    );
    Ok(())
}
