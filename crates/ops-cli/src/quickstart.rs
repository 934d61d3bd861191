//! `iceberg-ops quickstart`: a sample source table in the embedded catalog.
//!
//! Creates `quickstart.orders` (the benchmark's shape: 8 columns, identity(region) partitions),
//! streams deterministic rows into it in one append, migrates it with the DataMigrator into
//! `quickstart.orders_v2` (a rename and a widening) and verifies the copy, and reports what it
//! did. Re-running reports the existing table; `--reset` drops and recreates both.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use arrow_array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::DataType;
use futures::StreamExt;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogFactory;

const NAMESPACE: &str = "quickstart";
const TABLE: &str = "orders";
/// The migrated copy: `order_total` renamed to `total_amount`, `qty` widened to long.
const COPY: &str = "orders_v2";
const REGIONS: [&str; 5] = ["eu", "us", "apac", "latam", "mea"];
const BATCH_ROWS: u64 = 50_000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Catalog to create the table in.
    #[arg(long, default_value = ops_core::catalog::EMBEDDED_DEFAULT)]
    catalog: String,
    /// Rows to generate.
    #[arg(long, default_value_t = 100_000)]
    rows: u64,
    /// Drop and recreate the table if it already exists.
    #[arg(long)]
    reset: bool,
}

pub async fn run(factory: &CatalogFactory, args: Args) -> anyhow::Result<()> {
    let handle = factory.open(&args.catalog).await?;
    let catalog = handle.catalog();
    println!(
        "catalog   {} ({}, from {})",
        handle.name(),
        handle.kind(),
        handle.settings().origin()
    );
    let ns = NamespaceIdent::new(NAMESPACE.to_string());
    let ident = TableIdent::new(ns.clone(), TABLE.to_string());
    if !catalog.namespace_exists(&ns).await? {
        catalog.create_namespace(&ns, HashMap::new()).await?;
        println!("namespace {NAMESPACE}: created");
    }
    if catalog.table_exists(&ident).await? {
        if !args.reset {
            let reset = if args.catalog == ops_core::catalog::EMBEDDED_DEFAULT {
                "iceberg-ops quickstart --reset".to_string()
            } else {
                format!("iceberg-ops quickstart --catalog {} --reset", args.catalog)
            };
            // An earlier run that failed half-way (e.g. its metadata write) leaves a table the
            // catalog lists but cannot load.
            let table = catalog.load_table(&ident).await.map_err(|e| {
                anyhow::anyhow!(
                    "{NAMESPACE}.{TABLE} exists but cannot be loaded ({e}); `{reset}` drops and \
                     recreates it"
                )
            })?;
            println!(
                "table     {NAMESPACE}.{TABLE}: already exists, left as it is (`{reset}` drops \
                 and recreates the sample tables)"
            );
            report(&table);
            next_steps(&handle);
            return Ok(());
        }
        drop_sample(&handle, &ident).await?;
        println!("table     {NAMESPACE}.{TABLE}: dropped (--reset)");
        let copy = TableIdent::new(ns.clone(), COPY.to_string());
        if catalog.table_exists(&copy).await? {
            drop_sample(&handle, &copy).await?;
        }
    }

    let table = catalog
        .create_table(
            &ns,
            TableCreation::builder()
                .name(TABLE.to_string())
                .schema(schema()?)
                .partition_spec(
                    UnboundPartitionSpec::builder()
                        .add_partition_field(2, "region", Transform::Identity)?
                        .build(),
                )
                .build(),
        )
        .await
        .context("create the sample table")?;
    println!(
        "table     {NAMESPACE}.{TABLE}: created at {}",
        table.metadata().location()
    );

    let started = Instant::now();
    let arrow_schema = ops_core::write::table_arrow_schema(&table)?;
    let total = args.rows;
    let batches =
        futures::stream::iter((0..total).step_by(BATCH_ROWS as usize)).map(move |start| {
            let n = BATCH_ROWS.min(total - start);
            sample_batch(&arrow_schema, start, n)
        });
    let properties = HashMap::from([("iceberg-ops.quickstart".to_string(), "true".to_string())]);
    let (table, metrics) =
        ops_core::append::append(&handle, &table, Box::pin(batches), properties).await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "append    {} rows in {} data files, one commit, {:.2}s ({:.0} rows/s)",
        metrics.added_records,
        metrics.added_files,
        secs,
        metrics.added_records as f64 / secs.max(1e-9)
    );
    report(&table);
    crate::migrate_cmd::quickstart_migrations(&handle, NAMESPACE).await?;
    migrate_copy(&handle, &ns, &ident).await?;
    next_steps(&handle);
    Ok(())
}

/// What to run next, and the catalog definition PyIceberg needs to read the same tables: the
/// embedded catalog exists in no file, so `load_catalog('sqlite')` fails ("URI missing")
/// until the user writes it down.
fn next_steps(handle: &ops_core::CatalogHandle) {
    let name = handle.name();
    let flag = if name == ops_core::catalog::EMBEDDED_DEFAULT {
        String::new()
    } else {
        format!(" --catalog {name}")
    };
    println!();
    println!("next: `iceberg-ops table list {NAMESPACE}{flag}` lists the sample tables;");
    println!("      `iceberg-ops table schema {NAMESPACE}.{COPY}{flag}` shows the migrated copy.");
    let settings = handle.settings();
    match settings.origin() {
        ops_core::catalog::Origin::EmbeddedDefault => {
            println!(
                "      PyIceberg (with SQLAlchemy: pip install 'pyiceberg[sql-sqlite]') reads them \
                 with this in ~/.pyiceberg.yaml or ./.pyiceberg.yaml:"
            );
            println!("{}", pyiceberg_yaml(name, settings));
            println!(
                "      then: load_catalog('{name}').load_table('{NAMESPACE}.{TABLE}').scan().to_arrow()"
            );
        }
        origin => println!(
            "      PyIceberg reads them through catalog '{name}' as defined in {origin}: \
             load_catalog('{name}').load_table('{NAMESPACE}.{TABLE}')"
        ),
    }
}

/// The embedded catalog's definition in PyIceberg's format.
fn pyiceberg_yaml(name: &str, settings: &ops_core::catalog::CatalogSettings) -> String {
    let mut lines = vec![
        "        catalog:".to_string(),
        format!("          {name}:"),
        "            type: sql".to_string(),
    ];
    for key in ["uri", "warehouse"] {
        if let Some(v) = settings.property(key) {
            lines.push(format!("            {key}: {v}"));
        }
    }
    lines.join("\n")
}

/// Migrates the sample table into `orders_v2` (rename + widen) and verifies the copy.
async fn migrate_copy(
    handle: &ops_core::CatalogHandle,
    ns: &NamespaceIdent,
    source: &TableIdent,
) -> anyhow::Result<()> {
    let catalog = handle.catalog();
    let copy = TableIdent::new(ns.clone(), COPY.to_string());
    if catalog.table_exists(&copy).await? {
        catalog.drop_table(&copy).await?;
    }
    let mut fields: Vec<NestedField> = schema()?
        .as_struct()
        .fields()
        .iter()
        .map(|f| (**f).clone())
        .collect();
    for f in &mut fields {
        if f.name == "order_total" {
            f.name = "total_amount".into();
        }
        if f.name == "qty" {
            *f.field_type = Type::Primitive(PrimitiveType::Long);
        }
    }
    let dest_schema = Schema::builder()
        .with_fields(fields.into_iter().map(Arc::new))
        .build()?;
    catalog
        .create_table(
            ns,
            TableCreation::builder()
                .name(COPY.to_string())
                .schema(dest_schema)
                .partition_spec(
                    UnboundPartitionSpec::builder()
                        .add_partition_field(2, "region", Transform::Identity)?
                        .build(),
                )
                .build(),
        )
        .await
        .context("create the migration destination")?;
    let mut migrator = ops_datamig::DataMigrator::new(handle, source.clone(), handle, copy)
        .schema_reconciler(
            ops_reconcile::SchemaReconciler::new()
                .rename("order_total", "total_amount")
                .coerce("qty", Type::Primitive(PrimitiveType::Long)),
        )
        .batch_rows(BATCH_ROWS as usize);
    let result = migrator.run().await.context("migrate the sample table")?;
    println!(
        "migrate   {NAMESPACE}.{TABLE} → {NAMESPACE}.{COPY} (order_total→total_amount, \
         qty int→long): {} rows in {} commit(s), {:.2}s; {} file(s) copied whole, {} rewritten",
        result.rows_moved,
        result.new_snapshots.len(),
        result.duration_seconds,
        result.files_copied,
        result.files_rewritten
    );
    for method in [
        ops_datamig::VerifyMethod::RowCount,
        ops_datamig::VerifyMethod::PartitionHash,
    ] {
        let v = migrator.verify(method, 100).await?;
        let verdict = if v.matches { "match" } else { "MISMATCH" };
        println!(
            "verify    {method}: {verdict} ({} source rows, {} destination rows)",
            v.source_count.unwrap_or(0),
            v.dest_count.unwrap_or(0)
        );
        if !v.matches {
            anyhow::bail!("the migrated copy does not match: {}", v.details.join("; "));
        }
    }
    Ok(())
}

fn report(table: &Table) {
    let md = table.metadata();
    match md.current_snapshot() {
        Some(s) => {
            let get = |k: &str| {
                s.summary()
                    .additional_properties
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| "?".into())
            };
            println!(
                "snapshot  {} ({:?}): {} rows in {} files",
                s.snapshot_id(),
                s.summary().operation,
                get("total-records"),
                get("total-data-files")
            );
        }
        None => println!("snapshot  none (empty table)"),
    }
    println!("schema    {}", describe_schema(md.current_schema()));
    println!("partition {}", {
        let spec = md.default_partition_spec();
        spec.fields()
            .iter()
            .map(|f| format!("{}({})", f.transform, f.name))
            .collect::<Vec<_>>()
            .join(", ")
    });
}

fn describe_schema(schema: &Schema) -> String {
    schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| {
            format!(
                "{}:{}{}",
                f.name,
                f.field_type,
                if f.required { "!" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn schema() -> anyhow::Result<Schema> {
    let p = |t| Type::Primitive(t);
    Ok(Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", p(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", p(PrimitiveType::String)).into(),
            NestedField::optional(3, "event_ts", p(PrimitiveType::Timestamptz)).into(),
            NestedField::optional(4, "qty", p(PrimitiveType::Int)).into(),
            NestedField::optional(5, "price", p(PrimitiveType::Double)).into(),
            NestedField::optional(
                6,
                "order_total",
                p(PrimitiveType::Decimal {
                    precision: 12,
                    scale: 2,
                }),
            )
            .into(),
            NestedField::optional(7, "note", p(PrimitiveType::String)).into(),
            NestedField::optional(8, "flag", p(PrimitiveType::Boolean)).into(),
        ])
        .build()?)
}

/// Rows `start..start + n`, with the same formulas as the benchmark's `gen_source.py`.
fn sample_batch(
    schema: &arrow_schema::SchemaRef,
    start: u64,
    n: u64,
) -> ops_core::Result<RecordBatch> {
    let ids: Vec<i64> = (start..start + n).map(|i| i as i64).collect();
    let event_ts = TimestampMicrosecondArray::from(
        ids.iter()
            .map(|i| 1_700_000_000_000_000 + i * 1_000_003)
            .collect::<Vec<_>>(),
    );
    // Iceberg's timestamptz is microseconds in UTC; take the zone spelling from the schema.
    let event_ts = match schema.field(2).data_type() {
        DataType::Timestamp(_, Some(zone)) => event_ts.with_timezone(zone.clone()),
        _ => event_ts,
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(StringArray::from_iter_values(
            ids.iter().map(|i| REGIONS[(*i % 5) as usize]),
        )),
        Arc::new(event_ts),
        Arc::new(Int32Array::from_iter_values(
            ids.iter().map(|i| (i * 7 % 1000) as i32),
        )),
        Arc::new(Float64Array::from_iter_values(
            ids.iter().map(|i| (i % 9973) as f64 / 7.0),
        )),
        Arc::new(
            Decimal128Array::from_iter_values(ids.iter().map(|i| i128::from(i % 10_000_000)))
                .with_precision_and_scale(12, 2)?,
        ),
        Arc::new(StringArray::from_iter(
            ids.iter()
                .map(|i| (i % 11 != 0).then(|| format!("note-{}", i % 50_000))),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|i| Some(i % 3 == 0)),
        )),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Drops a sample table: S3 Tables supports only purging (the service deletes the files).
async fn drop_sample(handle: &ops_core::CatalogHandle, ident: &TableIdent) -> anyhow::Result<()> {
    if handle.kind() == ops_core::CatalogKind::S3Tables {
        handle.catalog().purge_table(ident).await?;
    } else {
        handle.catalog().drop_table(ident).await?;
    }
    Ok(())
}
