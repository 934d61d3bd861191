//! Commit cost as a table's history grows: N small appends to one table in the embedded SQLite
//! catalog, printing the time of commits around 10, 100, ... N and of a scan's planning.
//!
//!     cargo run --release -p ops-core --example bench_commits -- [N] [--no-merge]
//!
//! (N defaults to 1000; `--no-merge` sets `commit.manifest-merge.enabled=false` for comparison.)
//!
//! Prints one JSON line per checkpoint: the commit number, the mean commit time over the ten
//! commits ending there (ms), the manifests in the current manifest list, and plan_files time
//! (ms). Without manifest merging the list grows by one manifest per commit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use futures::TryStreamExt;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::{NamespaceIdent, TableCreation};
use ops_core::catalog::{CatalogConfig, CatalogDefinition};
use ops_core::ops::append::AppendBuilder;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let props: BTreeMap<String, String> = [
        ("type".to_string(), "sql".to_string()),
        (
            "uri".into(),
            format!("sqlite:///{}/catalog.db", dir.path().display()),
        ),
        (
            "warehouse".into(),
            format!("file://{}/wh", dir.path().display()),
        ),
    ]
    .into();
    let mut config = CatalogConfig::empty();
    config.insert(CatalogDefinition::inline("bench", props));
    let handle = ops_core::CatalogFactory::new(config).open("bench").await?;
    let ns = NamespaceIdent::new("bench".into());
    handle
        .catalog()
        .create_namespace(&ns, HashMap::new())
        .await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .build()?;
    let table = handle
        .catalog()
        .create_table(
            &ns,
            TableCreation::builder()
                .name("t".into())
                .schema(schema)
                .build(),
        )
        .await?;
    let ident = table.identifier().clone();
    if std::env::args().any(|a| a == "--no-merge") {
        ops_core::ops::properties::PropertiesBuilder::new(&handle, ident.clone())
            .set("commit.manifest-merge.enabled", "false")
            .await?;
    }
    let table = handle.catalog().load_table(&ident).await?;
    let arrow = ops_core::write::table_arrow_schema(&table)?;
    let mut times = Vec::with_capacity(n);
    let mut table = table;
    let checkpoints: Vec<usize> = [10, 100, 250, 500, 750, 1000, 2000, 5000]
        .into_iter()
        .filter(|c| *c <= n)
        .chain(std::iter::once(n))
        .collect();
    for i in 1..=n {
        let batch = RecordBatch::try_new(
            arrow.clone(),
            vec![
                Arc::new(Int64Array::from(vec![i as i64])),
                Arc::new(StringArray::from(vec![Some("eu")])),
            ],
        )?;
        let files =
            ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
        let started = Instant::now();
        let (t, _) = AppendBuilder::new(&handle, ident.clone())
            .add_written(files)
            .await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        table = t;
        if checkpoints.contains(&i) {
            let window = &times[i.saturating_sub(10)..i];
            let mean = window.iter().sum::<f64>() / window.len() as f64;
            let snap = table.metadata().current_snapshot().cloned().unwrap();
            let manifests = table
                .manifest_list_reader(&snap)
                .load()
                .await?
                .entries()
                .len();
            let planned = Instant::now();
            let tasks: Vec<_> = table
                .scan()
                .select_all()
                .build()?
                .plan_files()
                .await?
                .try_collect()
                .await?;
            let plan_ms = planned.elapsed().as_secs_f64() * 1000.0;
            println!(
                "{{\"commit\": {i}, \"mean_commit_ms_last10\": {mean:.2}, \"manifests\": {manifests}, \"plan_files_ms\": {plan_ms:.2}, \"files\": {}}}",
                tasks.len()
            );
        }
    }
    Ok(())
}
