//! Commit cost as a table's history grows: N small appends to one table in the embedded SQLite
//! catalog, printing the time of commits around 10, 100, ... N and of a scan's planning.
//!
//!     cargo run --release -p ops-maintenance --example bench_commits -- [N] [--no-merge] [--reload] [--expire-to K]
//!
//! With `--expire-to K`, after the N commits the N-K oldest snapshots are expired
//! (`ExpireSnapshotsBuilder`, `--older-than` now, `--retain-last K`, files deleted), printing
//! one line with its time, what it deleted and the process's peak RSS; then ten more commits
//! show the commit cost at K snapshots again.
//!
//! (N defaults to 1000; `--no-merge` sets `commit.manifest-merge.enabled=false` for comparison;
//! `--reload` makes every append load the table itself, as every builder but a `with_base`
//! append does — `ops_core::commit::load_current`: one SQL query, and the metadata this process
//! committed last while the pointer still names it — instead of starting from the version the
//! previous commit returned, `AppendBuilder::with_base`. `load_table_ms` and `json_parse_ms`
//! are what a reload costs after another writer's commit, when the file must be parsed.)
//!
//! Prints one JSON line per checkpoint: the commit number, the mean and the median commit time
//! over the ten commits ending there (ms; the median ignores the commit that merges manifests
//! and scheduling hiccups on a busy machine), the manifests in the current manifest list,
//! plan_files time (ms), and what the history-dependent metadata work costs at that point
//! (see `split`). Without manifest merging the list grows by one manifest per commit.
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
    let reload = std::env::args().any(|a| a == "--reload");
    let args: Vec<String> = std::env::args().collect();
    let expire_to: Option<usize> = args
        .iter()
        .position(|a| a == "--expire-to")
        .and_then(|i| args.get(i + 1))
        .map(|k| k.parse())
        .transpose()?;
    let table = handle.catalog().load_table(&ident).await?;
    let arrow = ops_core::write::table_arrow_schema(&table)?;
    let mut times = Vec::with_capacity(n);
    let mut cpu = Vec::with_capacity(n);
    let mut table = table;
    let mut checkpoints: Vec<usize> = [10, 100, 250, 500, 750, 1000, 2000, 5000]
        .into_iter()
        .filter(|c| *c <= n)
        .chain(std::iter::once(n))
        .collect();
    let total = n + if expire_to.is_some() { 10 } else { 0 };
    checkpoints.push(total);
    for i in 1..=total {
        if let (Some(keep), true) = (expire_to, i == n + 1) {
            table = expire(&handle, &ident, keep).await?;
        }
        let batch = RecordBatch::try_new(
            arrow.clone(),
            vec![
                Arc::new(Int64Array::from(vec![i as i64])),
                Arc::new(StringArray::from(vec![Some("eu")])),
            ],
        )?;
        let files =
            ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
        let cpu_before = cpu_ns();
        let started = Instant::now();
        let mut append = AppendBuilder::new(&handle, ident.clone()).add_written(files);
        if !reload {
            append = append.with_base(table.clone());
        }
        let (t, _) = append.await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        cpu.push(cpu_ns().saturating_sub(cpu_before) as f64 / 1e6);
        table = t;
        if checkpoints.contains(&i) {
            let window = &times[i.saturating_sub(10)..i];
            let mean = window.iter().sum::<f64>() / window.len() as f64;
            let wall_median = median(&times[i.saturating_sub(10)..i]);
            let cpu_median = median(&cpu[i.saturating_sub(10)..i]);
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
            let split = split(&handle, &ident, &table).await?;
            println!(
                "{{\"commit\": {i}, \"mean_commit_ms_last10\": {mean:.2}, \"median_commit_ms_last10\": {wall_median:.2}, \"median_commit_cpu_ms_last10\": {cpu_median:.2}, \"manifests\": {manifests}, \"plan_files_ms\": {plan_ms:.2}, \"files\": {}, {split}}}",
                tasks.len()
            );
        }
    }
    Ok(())
}

/// Expires all but the `keep` newest snapshots; prints what it took.
async fn expire(
    handle: &ops_core::CatalogHandle,
    ident: &iceberg::TableIdent,
    keep: usize,
) -> anyhow::Result<iceberg::table::Table> {
    let started = Instant::now();
    let (table, m) =
        ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(handle, ident.clone())
            .older_than_ms(chrono::Utc::now().timestamp_millis())
            .retain_last(keep)
            .await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"expire\": {}, \"retained\": {}, \"seconds\": {secs:.2}, \"deleted_data_files\": {}, \"deleted_manifests\": {}, \"deleted_manifest_lists\": {}, \"metadata_json_bytes\": {}, \"peak_rss_mb\": {}}}",
        m.expired_snapshots.len(),
        m.retained_snapshots,
        m.deleted_data_files.len(),
        m.deleted_manifests.len(),
        m.deleted_manifest_lists.len(),
        serde_json::to_vec(table.metadata())?.len(),
        peak_rss_mb()
    );
    Ok(table)
}

/// The process's peak resident set (VmHWM), MiB (0 where /proc is not available).
fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// What a commit's unavoidable metadata work costs at this history length, each the mean of
/// ten runs: the catalog's `load_table` (SQL query, read and parse of the metadata JSON), the
/// JSON parse alone, its serialisation (what writing the next version costs before I/O), the
/// JSON's size, and a `serde_json::to_value` of the metadata (how `main`'s retention used to be
/// read on every commit).
async fn split(
    handle: &ops_core::CatalogHandle,
    ident: &iceberg::TableIdent,
    table: &iceberg::table::Table,
) -> anyhow::Result<String> {
    const RUNS: u32 = 10;
    let md = table.metadata();
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..RUNS {
            f();
        }
        t.elapsed().as_secs_f64() * 1000.0 / f64::from(RUNS)
    };
    let bytes = serde_json::to_vec(md)?;
    let serialize_ms = time(&mut || {
        std::hint::black_box(serde_json::to_vec(md).unwrap());
    });
    let parse_ms = time(&mut || {
        std::hint::black_box(
            serde_json::from_slice::<iceberg::spec::TableMetadata>(&bytes).unwrap(),
        );
    });
    let to_value_ms = time(&mut || {
        std::hint::black_box(serde_json::to_value(md).unwrap());
    });
    let t = Instant::now();
    for _ in 0..RUNS {
        std::hint::black_box(handle.catalog().load_table(ident).await?);
    }
    let load_ms = t.elapsed().as_secs_f64() * 1000.0 / f64::from(RUNS);
    Ok(format!(
        "\"metadata_json_bytes\": {}, \"snapshots\": {}, \"load_table_ms\": {load_ms:.2}, \"json_parse_ms\": {parse_ms:.2}, \"json_serialize_ms\": {serialize_ms:.2}, \"json_to_value_ms\": {to_value_ms:.2}",
        bytes.len(),
        md.snapshots().len()
    ))
}

fn median(xs: &[f64]) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    (sorted[(sorted.len() - 1) / 2] + sorted[sorted.len() / 2]) / 2.0
}

/// CPU time this process's threads have run (ns), from /proc/self/task/*/schedstat: on a
/// busy machine wall time mostly measures other processes, CPU time measures the commit's work
/// (0 where /proc is not available).
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
