//! Shared fixtures: a small partitioned table, rows as JSON, catalog set-up per kind.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use futures::TryStreamExt;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation};
use ops_core::catalog::{CatalogConfig, CatalogDefinition};
use ops_core::{CatalogFactory, CatalogHandle};
use serde_json::{Value, json};

pub type TestResult = anyhow::Result<()>;

pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}

/// Opens a catalog from inline PyIceberg-style properties through the factory.
pub async fn open(name: &str, props: &BTreeMap<String, String>) -> anyhow::Result<CatalogHandle> {
    let mut config = CatalogConfig::empty();
    config.insert(CatalogDefinition::inline(name, props.clone()));
    Ok(CatalogFactory::new(config).open(name).await?)
}

pub fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A table property's value.
pub fn table_property<'a>(table: &'a Table, key: &str) -> Option<&'a str> {
    table.metadata().properties().get(key).map(String::as_str)
}

/// orders(id long required, region string, amount int), partitioned by identity(region).
pub async fn create_orders(handle: &CatalogHandle, ns: &str) -> anyhow::Result<Table> {
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "region", Transform::Identity)?
        .build();
    create_orders_with_spec(handle, ns, spec).await
}

/// `NS.orders` (id long required, region string, amount int) partitioned by `spec` (fields
/// on those columns: ids 1, 2, 3), in a new namespace NS.
pub async fn create_orders_with_spec(
    handle: &CatalogHandle,
    ns: &str,
    spec: UnboundPartitionSpec,
) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let ns = NamespaceIdent::new(ns.to_string());
    catalog.create_namespace(&ns, HashMap::new()).await?;
    let schema = orders_schema()?;
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

/// The orders schema: id long required, region string, amount int (field ids 1, 2, 3).
pub fn orders_schema() -> anyhow::Result<Schema> {
    Ok(Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(3, "amount", Type::Primitive(PrimitiveType::Int)).into(),
        ])
        .build()?)
}

/// Appends orders `rows` to `ident` in one commit (one file per partition): its snapshot.
pub async fn append_orders(
    handle: &CatalogHandle,
    ident: &iceberg::TableIdent,
    rows: &[(i64, Option<&str>, Option<i32>)],
) -> anyhow::Result<i64> {
    let table = handle.catalog().load_table(ident).await?;
    let batch = orders_batch(&table, rows)?;
    let files =
        ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)])).await?;
    let (_, m) = ops_core::ops::append::AppendBuilder::new(handle, ident.clone())
        .with_files(files)
        .await?;
    Ok(m.snapshot_id)
}

pub fn orders_batch(
    table: &Table,
    rows: &[(i64, Option<&str>, Option<i32>)],
) -> anyhow::Result<RecordBatch> {
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
        ],
    )?)
}

pub fn orders_json(rows: &[(i64, Option<&str>, Option<i32>)]) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .iter()
        .map(|(id, region, amount)| json!({"id": id, "region": region, "amount": amount}))
        .collect();
    sort_rows(&mut out);
    out
}

pub fn sort_rows(rows: &mut [Value]) {
    rows.sort_by_key(|r| r.to_string());
}

/// Every row of `table` (current snapshot) as JSON objects, sorted.
pub async fn scan_json(table: &Table) -> anyhow::Result<Vec<Value>> {
    let batches: Vec<RecordBatch> = ops_core::scan::scan(table, None)
        .await?
        .try_collect()
        .await?;
    let mut out = Vec::new();
    for batch in &batches {
        for i in 0..batch.num_rows() {
            let mut row = serde_json::Map::new();
            for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
                row.insert(field.name().clone(), cell(column.as_ref(), i));
            }
            out.push(Value::Object(row));
        }
    }
    sort_rows(&mut out);
    Ok(out)
}

fn cell(column: &dyn Array, i: usize) -> Value {
    if column.is_null(i) {
        return Value::Null;
    }
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        json!(a.value(i))
    } else if let Some(a) = any.downcast_ref::<Int32Array>() {
        json!(a.value(i))
    } else if let Some(a) = any.downcast_ref::<StringArray>() {
        json!(a.value(i))
    } else if let Some(a) = any.downcast_ref::<arrow_array::StructArray>() {
        let fields = a.fields();
        let mut obj = serde_json::Map::new();
        for (f, c) in fields.iter().zip(a.columns()) {
            obj.insert(f.name().clone(), cell(c.as_ref(), i));
        }
        Value::Object(obj)
    } else {
        json!(format!("<{}>", column.data_type()))
    }
}

/// PyIceberg's view of `ns.orders`: {"rows": [...], "desc": {...}}.
pub fn pyiceberg_orders(
    name: &str,
    props: &BTreeMap<String, String>,
    ns: &str,
) -> anyhow::Result<(Vec<Value>, Value)> {
    let code = format!(
        "t = catalog.load_table('{ns}.orders')\nemit({{'rows': rows(t), 'desc': describe(t)}})"
    );
    let out = ops_tests::oracle::pyiceberg(name, props, &code)?;
    let mut rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut rows);
    Ok((rows, out["desc"].clone()))
}

pub const SAMPLE: &[(i64, Option<&str>, Option<i32>)] = &[
    (1, Some("us"), Some(10)),
    (2, Some("eu"), Some(20)),
    (3, Some("us"), None),
    (4, Some("apac"), Some(40)),
    (5, None, Some(50)),
];

/// Creates ns.orders, appends SAMPLE with a snapshot property, scans it back and checks it.
pub async fn write_and_read_back(handle: &CatalogHandle, ns: &str) -> anyhow::Result<Table> {
    let table = create_orders(handle, ns).await?;
    let batch = orders_batch(&table, SAMPLE)?;
    let props = HashMap::from([("iceberg-ops.test".to_string(), "roundtrip".to_string())]);
    let (table, metrics) =
        ops_core::append::append(handle, &table, futures::stream::iter([Ok(batch)]), props).await?;
    assert_eq!(metrics.added_records, SAMPLE.len() as u64);
    // One file per partition value: us, eu, apac, null.
    assert_eq!(metrics.added_files, 4);

    let reloaded = handle.catalog().load_table(table.identifier()).await?;
    let snapshot = reloaded
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot after append"))?;
    assert_eq!(Some(snapshot.snapshot_id()), metrics.snapshot_id);
    assert_eq!(
        snapshot
            .summary()
            .additional_properties
            .get("iceberg-ops.test")
            .map(String::as_str),
        Some("roundtrip")
    );
    assert_eq!(scan_json(&reloaded).await?, orders_json(SAMPLE));
    Ok(reloaded)
}

pub use ops_tests::servers::aws_props;

pub use ops_tests::servers::glue_on_moto;

/// moto with table bucket `bucket` and S3 Tables properties for it (keep the Moto alive).
pub fn s3tables_on_moto(bucket: &str) -> (ops_tests::servers::Moto, BTreeMap<String, String>) {
    let moto = ops_tests::servers::Moto::start();
    let arn = moto.create_table_bucket(bucket);
    let endpoint = moto.endpoint();
    let p = aws_props(
        &moto,
        &[
            ("type", "s3tables"),
            ("s3tables.table-bucket-arn", &arn),
            ("s3tables.endpoint", &endpoint),
        ],
    );
    (moto, p)
}

/// A `sql` catalog for one test: its properties (the same for us and for PyIceberg) and what
/// keeps its database alive. Tests that hold for any SQL catalog run on both backends.
pub struct SqlCatalog {
    /// `type = sql`, `uri`, `warehouse = file://<dir>/wh`.
    pub props: BTreeMap<String, String>,
    /// Scratch directory: the warehouse, the SQLite file, anything else the test writes.
    pub dir: tempfile::TempDir,
    _postgres: Option<ops_tests::servers::Postgres>,
}

impl SqlCatalog {
    /// The catalog in `<dir>/catalog.db`.
    pub fn sqlite() -> anyhow::Result<Self> {
        init_tracing();
        let dir = tempfile::tempdir()?;
        let props = props(&[
            ("type", "sql"),
            (
                "uri",
                &format!("sqlite:///{}/catalog.db", dir.path().display()),
            ),
            ("warehouse", &format!("file://{}/wh", dir.path().display())),
        ]);
        Ok(Self {
            props,
            dir,
            _postgres: None,
        })
    }

    /// The catalog in a fresh database on a PostgreSQL started for this test.
    pub fn postgres() -> anyhow::Result<Self> {
        init_tracing();
        let dir = tempfile::tempdir()?;
        let pg = ops_tests::servers::Postgres::start();
        let props = props(&[
            ("type", "sql"),
            ("uri", &pg.create_database("iceberg")),
            ("warehouse", &format!("file://{}/wh", dir.path().display())),
        ]);
        Ok(Self {
            props,
            dir,
            _postgres: Some(pg),
        })
    }
}
