//! Compaction (`ops_maintenance::compact`): rows unchanged per PyIceberg, files fewer, one `replace`
//! snapshot whose files keep the data sequence number of the snapshot the plan read; racing
//! writers; position deletes applied; every corpus table.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iceberg::spec::{DataFile, Literal, ManifestStatus, PrimitiveLiteral};
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement};
use ops_core::commit::{TableChange, commit_metadata_change};
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::markers::mark_running;
use ops_core::ops::sort_order::SortOrderBuilder;
use ops_core::{CatalogHandle, Error};
use ops_maintenance::compact::CompactBuilder;
use ops_maintenance::sort::SortSpec;
use ops_tests::servers::Rustberg;
use serde_json::{Value, json};

use crate::common::*;

type Row = (i64, Option<&'static str>, Option<i32>);
type Hook = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

async fn append(handle: &CatalogHandle, ident: &TableIdent, rows: &[Row]) -> anyhow::Result<i64> {
    append_orders(handle, ident, rows).await
}

/// Live data files of main with their data sequence numbers.
pub(crate) async fn live_files(table: &Table) -> anyhow::Result<Vec<(DataFile, Option<i64>)>> {
    let mut out = Vec::new();
    let Some(snap) = table.metadata().current_snapshot() else {
        return Ok(out);
    };
    for mf in table.manifest_list_reader(snap).load().await?.entries() {
        if mf.content != iceberg::spec::ManifestContentType::Data {
            continue;
        }
        for e in mf.load_manifest(table.file_io()).await?.entries() {
            if e.is_alive() {
                let seq = e.sequence_number();
                let seq = if e.status() == ManifestStatus::Added && seq.is_none() {
                    Some(mf.sequence_number)
                } else {
                    seq
                };
                out.push((e.data_file().clone(), seq));
            }
        }
    }
    Ok(out)
}

fn local(path: &str) -> PathBuf {
    PathBuf::from(
        path.strip_prefix("file://")
            .or_else(|| path.strip_prefix("file:"))
            .unwrap_or(path),
    )
}

/// Parquet files under the table's data directory that no snapshot references (live or
/// removed): what a failed compaction would leave behind. Local warehouses only.
async fn unreferenced_data_files(table: &Table) -> anyhow::Result<Vec<String>> {
    let mut known = HashSet::new();
    for s in table.metadata().snapshots() {
        for mf in table.manifest_list_reader(s).load().await?.entries() {
            for e in mf.load_manifest(table.file_io()).await?.entries() {
                known.insert(local(e.data_file().file_path()));
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![local(table.metadata().location()).join("data")];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") && !known.contains(&p) {
                out.push(p.display().to_string());
            }
        }
    }
    Ok(out)
}

/// PyIceberg: main's rows (sorted), the current snapshot's operation, the data file count.
fn py_state(name: &str, p: &BTreeMap<String, String>, ns: &str) -> anyhow::Result<Value> {
    let mut out = ops_tests::oracle::pyiceberg(
        name,
        p,
        &format!(
            "t = catalog.load_table('{ns}.orders')\n\
             s = t.current_snapshot()\n\
             emit({{'rows': rows(t), 'operation': s.summary.operation.value if s else None, \
                    'files': len(list(t.scan().plan_files())), \
                    'summary': dict(s.summary.additional_properties) if s else None}})"
        ),
    )?;
    if let Some(rows) = out["rows"].as_array_mut() {
        sort_rows(rows);
    }
    Ok(out)
}

fn ids(state: &Value) -> Vec<i64> {
    let mut v: Vec<i64> = state["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    v.sort_unstable();
    v
}

/// Six appends of one small file per region in eu and us, one file in ap: eu and us are
/// compacted (>= 5 small files each), ap is left alone.
/// The ids PyIceberg reads from `table` (`NS.T`), sorted.
fn copied_ids(props: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        "c",
        props,
        &format!("t = catalog.load_table('{table}')\nemit(sorted(r['id'] for r in rows(t)))"),
    )
}

/// A migration's setting: `NS.orders` of [`small_files`] in a fresh SQLite catalog, to be
/// copied to `NS.copy`.
struct CopyJob {
    db: SqlCatalog,
    handle: CatalogHandle,
    source: TableIdent,
    dest: TableIdent,
}

async fn copy_job(ns: &str) -> anyhow::Result<CopyJob> {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let source = small_files(&handle, ns).await?;
    let dest = TableIdent::from_strs([ns, "copy"])?;
    Ok(CopyJob {
        db,
        handle,
        source,
        dest,
    })
}

/// A migrator of `source` to `dest` in one catalog: batches of 3 rows, the destination created.
fn copy_migrator(
    handle: &CatalogHandle,
    source: &TableIdent,
    dest: &TableIdent,
) -> ops_datamig::DataMigrator {
    ops_datamig::DataMigrator::new(handle, source.clone(), handle, dest.clone())
        .batch_rows(3)
        .create_dest(true)
}

impl CopyJob {
    /// The job's migrator (see [`copy_migrator`]).
    fn migrator(&self) -> ops_datamig::DataMigrator {
        copy_migrator(&self.handle, &self.source, &self.dest)
    }

    /// The job planned as `configure` sets its migrator, and its tasks executed here.
    async fn planned(
        &self,
        configure: impl FnOnce(ops_datamig::DataMigrator) -> ops_datamig::DataMigrator,
    ) -> anyhow::Result<(ops_datamig::MigrationPlan, Vec<ops_datamig::TaskOutput>)> {
        let plan = configure(self.migrator()).plan().await?;
        let outputs = run_tasks(&self.handle, &plan).await?;
        Ok((plan, outputs))
    }
}

/// `NS.copy` holds every row of `NS.orders` once, as PyIceberg reads them.
fn every_row_once(props: &BTreeMap<String, String>, ns: &str) -> TestResult {
    let src = py_state("c", props, ns)?;
    let copied = copied_ids(props, &format!("{ns}.copy"))?;
    assert_eq!(copied, json!(ids(&src)), "{ns}.copy");
    Ok(())
}

/// Every task of `plan` executed here, in order: the outputs a commit takes.
async fn run_tasks(
    handle: &CatalogHandle,
    plan: &ops_datamig::MigrationPlan,
) -> anyhow::Result<Vec<ops_datamig::TaskOutput>> {
    let mut outputs = Vec::new();
    for t in &plan.tasks {
        outputs.push(plan.execute_task(handle, handle, t.id).await?);
    }
    Ok(outputs)
}

async fn small_files(handle: &CatalogHandle, ns: &str) -> anyhow::Result<TableIdent> {
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    for i in 0..6i64 {
        append(
            handle,
            &ident,
            &[
                (i * 10, Some("eu"), Some(i as i32)),
                (i * 10 + 1, Some("eu"), None),
                (i * 10 + 2, Some("us"), Some(7)),
            ],
        )
        .await?;
    }
    append(handle, &ident, &[(999, Some("ap"), Some(1))]).await?;
    Ok(ident)
}

/// [`small_files`], with one of its 2-row eu files (a compaction input, for a racing writer).
async fn small_files_and_an_eu_input(
    handle: &CatalogHandle,
    ns: &str,
) -> anyhow::Result<(TableIdent, DataFile)> {
    let ident = small_files(handle, ns).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let (input, _) = live_files(&table)
        .await?
        .into_iter()
        .find(|(f, _)| f.record_count() == 2)
        .ok_or_else(|| anyhow::anyhow!("a 2-row eu file"))?;
    Ok((ident, input))
}

async fn many_small_files(
    handle: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let ns = "cmp";
    let ident = small_files(handle, ns).await?;
    let before = py_state(name, p, ns)?;
    assert_eq!(before["files"], json!(13));
    let start = handle.catalog().load_table(&ident).await?;
    let start_seq = start
        .metadata()
        .current_snapshot()
        .map(|s| s.sequence_number())
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;

    // Dry run: the plan, nothing written.
    let (_, dry) = CompactBuilder::new(handle, ident.clone())
        .dry_run(true)
        .await?;
    assert!(dry.dry_run && dry.snapshot_id.is_none());
    let mut parts: Vec<(&str, usize)> = dry
        .groups
        .iter()
        .map(|g| (g.partition.as_str(), g.input_files.len()))
        .collect();
    parts.sort();
    assert_eq!(parts, vec![("region=eu", 6), ("region=us", 6)], "{dry:?}");
    assert_eq!(dry.input_files(), 12);
    assert_eq!(dry.output_files(), 0);
    // `where` limits the files considered; min-input-files is a per-partition threshold.
    let (_, eu) = CompactBuilder::new(handle, ident.clone())
        .with_filter_text("region = 'eu'")
        .dry_run(true)
        .await?;
    let parts: Vec<&str> = eu.groups.iter().map(|g| g.partition.as_str()).collect();
    assert_eq!(parts, vec!["region=eu"], "{eu:?}");
    let (_, seven) = CompactBuilder::new(handle, ident.clone())
        .min_input_files(7)
        .dry_run(true)
        .await?;
    assert!(seven.groups.is_empty(), "{seven:?}");
    let after_dry = handle.catalog().load_table(&ident).await?;
    assert_eq!(
        after_dry.metadata().current_snapshot_id(),
        start.metadata().current_snapshot_id()
    );
    assert!(unreferenced_data_files(&after_dry).await?.is_empty());

    let (table, m) = CompactBuilder::new(handle, ident.clone()).await?;
    assert_eq!(m.input_files(), 12);
    assert_eq!(m.output_files(), 2, "{m:?}");
    assert_eq!(
        table.metadata().current_snapshot_id(),
        m.snapshot_id,
        "{m:?}"
    );
    let after = py_state(name, p, ns)?;
    assert_eq!(after["rows"], before["rows"], "rows changed");
    assert_eq!(after["operation"], json!("replace"));
    assert_eq!(after["files"], json!(3));
    // The rewritten files keep the data sequence number of the snapshot the plan read.
    let outputs: HashSet<&String> = m.groups.iter().flat_map(|g| &g.output_files).collect();
    let live = live_files(&table).await?;
    assert_eq!(live.len(), 3);
    for (f, seq) in &live {
        if outputs.contains(&f.file_path().to_string()) {
            assert_eq!(*seq, Some(start_seq), "{}", f.file_path());
        }
    }
    let summary = &table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?
        .summary()
        .additional_properties;
    assert_eq!(summary.get("deleted-data-files"), Some(&"12".to_string()));
    assert_eq!(summary.get("total-data-files"), Some(&"3".to_string()));
    assert_eq!(summary.get("total-records"), Some(&"19".to_string()));

    // Again: nothing left to do.
    let (_, again) = CompactBuilder::new(handle, ident.clone()).await?;
    assert!(
        again.groups.is_empty() && again.snapshot_id.is_none(),
        "{again:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_of_many_small_files_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    many_small_files(&handle, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_of_many_small_files_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("c", &p).await?;
    many_small_files(&handle, "c", &p).await
}

/// Each output file's ids in file order, read by pyarrow (the order a reader sees).
fn ids_per_file(
    name: &str,
    p: &BTreeMap<String, String>,
    files: &[String],
) -> anyhow::Result<Vec<Vec<i64>>> {
    let out = ops_tests::oracle::pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow.parquet as pq\n\
             paths = {}\n\
             emit([pq.read_table(p.removeprefix('file://')).column('id').to_pylist() \
                   for p in paths])",
            serde_json::to_string(files)?
        ),
    )?;
    Ok(serde_json::from_value(out)?)
}

/// A data file listed twice (added twice, as PyIceberg's `add_files` does with
/// `check_duplicate_files=False`) is read twice, as every reader reads the table, and its
/// entries go together: compaction keeps every row a reader saw (Java's `RewriteDataFiles`
/// plans a task per entry; its commit removes the files by path). It read the file once and
/// removed both entries, losing a copy of its rows (a new-user trial).
#[tokio::test(flavor = "multi_thread")]
async fn a_file_listed_twice_keeps_both_copies_of_its_rows() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let handle = open(name, p).await?;
    let ns = "cmp";
    let table = create_orders(&handle, ns).await?;
    let ident = table.identifier().clone();
    append(
        &handle,
        &ident,
        &[(1, Some("eu"), Some(1)), (2, Some("eu"), None)],
    )
    .await?;
    let table = handle.catalog().load_table(&ident).await?;
    let twice: Vec<DataFile> = live_files(&table)
        .await?
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    AppendBuilder::new(&handle, ident.clone())
        .with_files(twice)
        .await?;
    append(&handle, &ident, &[(3, Some("eu"), Some(3))]).await?;
    let before = py_state(name, p, ns)?;
    assert_eq!(ids(&before), [1, 1, 2, 2, 3]);

    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(m.snapshot_id.is_some(), "{m:?}");
    let after = py_state(name, p, ns)?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["operation"], json!("replace"));
    Ok(())
}

/// `file` as a manifest entry of another partition (its data unchanged), as an `add_files`
/// under a later spec lists a file again.
fn relisted(
    file: &DataFile,
    spec_id: i32,
    partition: iceberg::spec::Struct,
) -> anyhow::Result<DataFile> {
    let mut b = ops_core::write::data_file_builder(file, spec_id);
    b.partition(partition);
    Ok(b.build()?)
}

/// A file listed under two specs (added again after the partition spec changed): its entry of
/// the current spec qualifies, its other one does not. The commit removes both by path, so
/// rewriting the one would drop the rows of the other: the file is left out and named, and
/// every row stays (a review of the fix above).
#[tokio::test(flavor = "multi_thread")]
async fn a_file_listed_under_two_specs_is_left_alone() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let handle = open(name, p).await?;
    let ns = "specs";
    let table = create_orders(&handle, ns).await?;
    let ident = table.identifier().clone();
    append(&handle, &ident, &[(1, Some("eu"), Some(1))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let (first, _) = live_files(&table)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("the first file"))?;
    let table = ops_core::ops::evolve_spec::EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("amount", iceberg::spec::Transform::Identity, None)
        .await?;
    let spec = table.metadata().default_partition_spec_id();
    let again = relisted(
        &first,
        spec,
        iceberg::spec::Struct::from_iter([Some(Literal::string("eu")), Some(Literal::int(1))]),
    )?;
    AppendBuilder::new(&handle, ident.clone())
        .with_files([again])
        .await?;
    // A second file of the new partition: a group of two small files to compact.
    append(&handle, &ident, &[(2, Some("eu"), Some(1))]).await?;
    let before = py_state(name, p, ns)?;
    assert_eq!(ids(&before), [1, 1, 2]);

    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(1)
        .await?;
    let after = py_state(name, p, ns)?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(
        m.skipped_duplicate_files,
        [first.file_path().to_string()],
        "{m:?}"
    );
    assert!(
        m.groups
            .iter()
            .all(|g| g.input_files.iter().all(|f| !f.is(first.file_path()))),
        "{m:?}"
    );
    // With every entry rewritten together (`to_current_spec`, they still differ in spec and
    // partition): still left out.
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(1)
        .to_current_spec(true)
        .await?;
    assert_eq!(
        m.skipped_duplicate_files,
        [first.file_path().to_string()],
        "{m:?}"
    );
    assert_eq!(py_state(name, p, ns)?["rows"], before["rows"]);
    Ok(())
}

/// A file listed twice in a table with delete files: the planner keys a file's scan tasks and
/// deletes by path, so the equality delete that applies to its older entry only would be
/// applied to both. It is left out and its rows stay, while the file with deletes beside it is
/// still compacted. (PyIceberg does not read equality deletes: our scan is the oracle.)
#[tokio::test(flavor = "multi_thread")]
async fn a_file_listed_twice_beside_delete_files_is_left_alone() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let ident = create_orders(&handle, "twice").await?.identifier().clone();
    append(
        &handle,
        &ident,
        &[(1, Some("eu"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    append(&handle, &ident, &[(4, Some("eu"), Some(4))]).await?;
    append(&handle, &ident, &[(5, Some("eu"), Some(2))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let (five, _) = live_files(&table)
        .await?
        .into_iter()
        .find(|(f, _)| f.lower_bounds().get(&1) == Some(&iceberg::spec::Datum::long(5)))
        .ok_or_else(|| anyhow::anyhow!("the file of id 5"))?;
    // Deletes ids 2 and 5 (amount 2) of the files before it; then the file of id 5 is added
    // again, after the delete: that entry's row stays.
    crate::commit_layer::commit_equality_delete_on(
        &handle,
        &table,
        iceberg::spec::Struct::from_iter([Some(Literal::string("eu"))]),
        ("amount", 3),
        Arc::new(arrow_array::Int32Array::from(vec![Some(2)])),
    )
    .await?;
    AppendBuilder::new(&handle, ident.clone())
        .with_files([five.clone()])
        .await?;
    let before = scan_json(&handle.catalog().load_table(&ident).await?).await?;
    let mut before_ids: Vec<i64> = before.iter().filter_map(|r| r["id"].as_i64()).collect();
    before_ids.sort_unstable();
    assert_eq!(before_ids, [1, 4, 5]);

    let (table, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert_eq!(scan_json(&table).await?, before, "{m:?}");
    assert_eq!(
        m.skipped_duplicate_files,
        [five.file_path().to_string()],
        "{m:?}"
    );
    assert!(
        m.snapshot_id.is_some(),
        "the files with deletes are still compacted: {m:?}"
    );
    Ok(())
}

/// Another writer adds one of the inputs again between the rewrite and the commit: the commit
/// removes files by path, so it would drop the new entry's rows too. A conflict, nothing
/// committed.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_conflicts_with_a_racing_add_of_an_input() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    let (ident, input) = small_files_and_an_eu_input(&a, "readd").await?;
    let (hook, calls) = {
        let (b, ident) = (b.clone(), ident.clone());
        once(move || {
            let (b, ident, input) = (b.clone(), ident.clone(), input.clone());
            async move {
                AppendBuilder::new(&b, ident)
                    .with_files([input])
                    .await
                    .unwrap_or_else(|e| panic!("the racing add failed: {e}"));
            }
        })
    };
    let err = CompactBuilder::new(&a, ident.clone())
        .before_commit(hook)
        .await
        .err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        matches!(&err, Some(Error::CommitConflict { detail, .. }) if detail.contains("again")),
        "{err:?}"
    );
    assert_eq!(ids(&py_state("c", &db.props, "readd")?).len(), 21);
    Ok(())
}

/// `sort`: each group's rows are sorted — by the table's order (refused while it has none)
/// or by the columns given — through spilled runs when memory is short; rows unchanged per
/// PyIceberg; the outputs carry the table order's id only when they follow one of its orders.
#[tokio::test(flavor = "multi_thread")]
async fn sorted_compaction_orders_each_file_and_marks_the_table_order() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let handle = open(name, p).await?;
    let ns = "cmp";
    let ident = small_files(&handle, ns).await?;
    let before = py_state(name, p, ns)?;

    // No table order yet: refused, nothing committed.
    let start = handle.catalog().load_table(&ident).await?;
    let err = CompactBuilder::new(&handle, ident.clone())
        .sort(SortSpec::TableOrder)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("sorted by a missing order"))?;
    assert!(
        err.to_string().contains("has no sort order") && err.to_string().contains("--sort-by"),
        "{err}"
    );
    let unchanged = handle.catalog().load_table(&ident).await?;
    assert_eq!(
        unchanged.metadata().current_snapshot_id(),
        start.metadata().current_snapshot_id()
    );

    let table = SortOrderBuilder::new(&handle, ident.clone())
        .desc("amount")
        .asc("id")
        .await?;
    let order_id = table.metadata().default_sort_order_id();
    // One byte of memory: every batch is a run spilled to disk, merged back.
    let (table, m) = CompactBuilder::new(&handle, ident.clone())
        .sort(SortSpec::TableOrder)
        .sort_memory(1)
        .await?;
    assert_eq!(m.input_files(), 12, "{m:?}");
    assert_eq!(m.sort_order_id, Some(order_id));
    assert_eq!(
        m.sort_order.as_deref(),
        Some("amount DESC NULLS LAST, id ASC NULLS FIRST")
    );
    let after = py_state(name, p, ns)?;
    assert_eq!(after["rows"], before["rows"], "rows changed");
    let mut outputs: Vec<String> = m
        .groups
        .iter()
        .flat_map(|g| g.output_files.clone())
        .collect();
    outputs.sort();
    let mut got = ids_per_file(name, p, &outputs)?;
    got.sort();
    // eu: amounts 5..0 descending, then the NULL amounts by id; us: amount 7 throughout, by id.
    assert_eq!(
        got,
        vec![
            vec![2, 12, 22, 32, 42, 52],
            vec![50, 40, 30, 20, 10, 0, 1, 11, 21, 31, 41, 51]
        ]
    );
    for (f, _) in live_files(&table).await? {
        let expected = if outputs.contains(&f.file_path().to_string()) {
            Some(order_id as i32)
        } else {
            None
        };
        assert_eq!(f.sort_order_id(), expected, "{}", f.file_path());
    }

    // Columns of no table order: sorted, not marked.
    let ns2 = "cmp2";
    let ident2 = small_files(&handle, ns2).await?;
    let (table2, m2) = CompactBuilder::new(&handle, ident2.clone())
        .sort(SortSpec::parse_columns("id desc")?)
        .await?;
    assert_eq!(m2.sort_order_id, None);
    assert_eq!(m2.sort_order.as_deref(), Some("id DESC NULLS LAST"));
    let outputs2: Vec<String> = m2
        .groups
        .iter()
        .flat_map(|g| g.output_files.clone())
        .collect();
    let mut got2 = ids_per_file(name, p, &outputs2)?;
    got2.sort();
    assert_eq!(
        got2,
        vec![
            vec![51, 50, 41, 40, 31, 30, 21, 20, 11, 10, 1, 0],
            vec![52, 42, 32, 22, 12, 2]
        ]
    );
    for (f, _) in live_files(&table2).await? {
        assert_eq!(f.sort_order_id(), None, "{}", f.file_path());
    }
    // A column the table lacks, or a bad order, names itself.
    let err = CompactBuilder::new(&handle, ident2.clone())
        .sort(SortSpec::parse_columns("nope")?)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("sorted by a missing column"))?;
    assert!(
        err.to_string()
            .contains("'nope': no such column (columns: id, "),
        "{err}"
    );
    let err = SortSpec::parse_columns("id sideways")
        .err()
        .ok_or_else(|| anyhow::anyhow!("parsed"))?;
    assert!(
        err.to_string().contains("cannot read 'id sideways'"),
        "{err}"
    );
    Ok(())
}

/// A sort takes a partition whole (Java's `max-file-group-size-bytes`), where bin-pack packs
/// groups of the target size: the partition's outputs hold consecutive key ranges instead of
/// one sorted run per group. `sort_by` takes Spark's transforms; one that does not apply to the
/// column's type is refused by name.
#[tokio::test(flavor = "multi_thread")]
async fn a_sorted_partition_is_sorted_whole() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let handle = open(name, p).await?;
    let ns = "whole";
    let ident = small_files(&handle, ns).await?;
    let before = py_state(name, p, ns)?;
    let table = handle.catalog().load_table(&ident).await?;
    let largest = live_files(&table)
        .await?
        .iter()
        .map(|(f, _)| f.file_size_in_bytes())
        .max()
        .ok_or_else(|| anyhow::anyhow!("no files"))?;
    // Two files fill a target-size group: bin-pack makes three groups of each partition.
    let target = 2 * largest + 1;
    let (_, binpack) = CompactBuilder::new(&handle, ident.clone())
        .target_file_size(target)
        .dry_run(true)
        .await?;
    assert_eq!(binpack.groups.len(), 6, "{binpack:?}");

    let err = CompactBuilder::new(&handle, ident.clone())
        .sort(SortSpec::parse_columns("days(id)")?)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("sorted by days of a long"))?;
    assert!(
        err.to_string().contains("day(id)") && err.to_string().contains("does not apply"),
        "{err}"
    );

    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .target_file_size(target)
        .sort(SortSpec::parse_columns("truncate(20, id) DESC, id")?)
        .await?;
    assert_eq!(
        m.sort_order.as_deref(),
        Some("truncate[20](id) DESC NULLS LAST, id ASC NULLS FIRST")
    );
    let mut parts: Vec<&str> = m.groups.iter().map(|g| g.partition.as_str()).collect();
    parts.sort();
    assert_eq!(parts, vec!["region=eu", "region=us"], "{m:?}");
    let after = py_state(name, p, ns)?;
    assert_eq!(after["rows"], before["rows"], "rows changed");
    // Each partition's files, in the order of their first keys, read as one sorted run.
    let mut runs = Vec::new();
    for g in &m.groups {
        let mut files: Vec<Vec<i64>> = ids_per_file(name, p, &g.output_files)?
            .into_iter()
            .filter(|f| !f.is_empty())
            .collect();
        let key = |id: i64| (std::cmp::Reverse(id - id % 20), id);
        files.sort_by_key(|f| key(f[0]));
        runs.push(files.concat());
    }
    runs.sort();
    assert_eq!(
        runs,
        vec![
            vec![40, 41, 50, 51, 20, 21, 30, 31, 0, 1, 10, 11],
            vec![42, 52, 22, 32, 2, 12],
        ]
    );
    Ok(())
}

/// A hook that runs `f` once, on its first call.
fn once<F, Fut>(f: F) -> (ops_maintenance::BeforeCommitHook, Arc<AtomicUsize>)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let calls = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let c = calls.clone();
    let hook = Arc::new(move || {
        let (f, c) = (f.clone(), c.clone());
        Box::pin(async move {
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                f().await;
            }
        }) as Hook
    });
    (hook, calls)
}

/// An append between the rewrite and the commit is rebased onto: its rows stay.
async fn racing_append(
    a: &CatalogHandle,
    b: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let ns = "race";
    let ident = small_files(a, ns).await?;
    let before = py_state(name, p, ns)?;
    let (hook, calls) = {
        let (b, ident) = (b.clone(), ident.clone());
        once(move || {
            let (b, ident) = (b.clone(), ident.clone());
            async move {
                append(&b, &ident, &[(500, Some("eu"), Some(5))])
                    .await
                    .unwrap_or_else(|e| panic!("the racing append failed: {e}"));
            }
        })
    };
    let (_, m) = CompactBuilder::new(a, ident.clone())
        .before_commit(hook)
        .await?;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(m.input_files(), 12);
    let after = py_state(name, p, ns)?;
    let mut want = ids(&before);
    want.push(500);
    want.sort_unstable();
    assert_eq!(ids(&after), want, "the racing append's row was lost");
    assert_eq!(after["operation"], json!("replace"));
    assert_eq!(after["files"], json!(4));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_rebases_onto_a_racing_append_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    racing_append(&a, &b, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_rebases_onto_a_racing_append_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let (a, b) = (open("c", &p).await?, open("c", &p).await?);
    racing_append(&a, &b, "c", &p).await
}

/// A delete that rewrites one of the inputs between the rewrite and the commit: a conflict,
/// nothing committed, the compaction's files removed.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_conflicts_with_a_racing_delete_of_an_input() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    let ident = small_files(&a, "race").await?;
    let racer: Arc<std::sync::Mutex<Option<i64>>> = Arc::default();
    let (hook, _) = {
        let (b, ident, racer) = (b.clone(), ident.clone(), racer.clone());
        once(move || {
            let (b, ident, racer) = (b.clone(), ident.clone(), racer.clone());
            async move {
                let (t, _) = DeleteBuilder::new(&b, ident)
                    .with_filter_text("id = 20")
                    .await
                    .unwrap_or_else(|e| panic!("the racing delete failed: {e}"));
                *racer.lock().unwrap_or_else(|p| p.into_inner()) =
                    t.metadata().current_snapshot_id();
            }
        })
    };
    let err = CompactBuilder::new(&a, ident.clone())
        .before_commit(hook)
        .await
        .err();
    assert!(matches!(err, Some(Error::CommitConflict { .. })), "{err:?}");
    let table = a.catalog().load_table(&ident).await?;
    let racer = *racer.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(table.metadata().current_snapshot_id(), racer);
    assert_ne!(
        table
            .metadata()
            .current_snapshot()
            .map(|s| s.summary().operation.as_str()),
        Some("replace")
    );
    let left = unreferenced_data_files(&table).await?;
    assert!(left.is_empty(), "the compaction's files stayed: {left:?}");
    let state = py_state("c", &db.props, "race")?;
    assert!(!ids(&state).contains(&20));
    assert_eq!(ids(&state).len(), 18);
    Ok(())
}

/// A cluster task's group whose input a racing delete rewrote after the plan: `commit_group`
/// refuses it (reported failed, its files deleted) and the table keeps the racer's rows; a
/// second group of another partition, rewritten on the same plan, still lands.
#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_group_that_conflicts_is_refused_and_the_others_land() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let ident = small_files(&handle, "racejob").await?;
    // Three `us` files too, so each region is a group.
    for i in 0..3i64 {
        append(&handle, &ident, &[(500 + i, Some("us"), Some(1))]).await?;
    }
    let mut prepared = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .prepare()
        .await?;
    let job = prepared
        .job("job-race", "c")?
        .ok_or_else(|| anyhow::anyhow!("nothing planned"))?;
    let partitions: Vec<&str> = job.groups.iter().map(|g| g.partition.as_str()).collect();
    assert_eq!(partitions, ["region=eu", "region=us"], "{job:?}");
    let location = prepared.table().metadata().location().to_string();
    let mut outputs = Vec::new();
    for task in 0..2 {
        let folder = format!("{location}/data/iceberg-ops-job-race/task-{task:06}-0");
        outputs.push(job.execute_task(&handle, task, &folder).await?);
    }
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 20")
        .await?;
    let eu = &outputs[0];
    let refused = prepared
        .commit_group(0, eu.spec_id, eu.data_files(prepared.table())?)
        .await?;
    assert_eq!(refused, None);
    let us = &outputs[1];
    let landed = prepared
        .commit_group(1, us.spec_id, us.data_files(prepared.table())?)
        .await?;
    assert!(landed.is_some());
    let (table, m) = prepared.finish();
    assert_eq!(m.failed_groups.len(), 1, "{:?}", m.failed_groups);
    assert_eq!(m.failed_groups[0].partition, "region=eu");
    let io = table.file_io();
    for path in eu.file_paths() {
        assert!(
            !io.exists(&path).await?,
            "the refused group's {path} stayed"
        );
    }
    let left = unreferenced_data_files(&table).await?;
    assert!(left.is_empty(), "files left: {left:?}");
    let state = py_state("c", &db.props, "racejob")?;
    assert!(!ids(&state).contains(&20));
    assert_eq!(ids(&state).len(), 21);
    Ok(())
}

/// An output deleted between the rewrite and the commit (an orphan cleanup forced to a short
/// threshold while a long compaction wrote): the compaction fails naming the file, commits
/// nothing and removes its other outputs; the table reads as before.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_whose_output_was_deleted_commits_nothing() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let a = open("c", &db.props).await?;
    let ident = small_files(&a, "gone").await?;
    let before = py_state("c", &db.props, "gone")?;
    let snapshot_before = a
        .catalog()
        .load_table(&ident)
        .await?
        .metadata()
        .current_snapshot_id();
    let deleted: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let (hook, calls) = {
        let (a, ident, deleted) = (a.clone(), ident.clone(), deleted.clone());
        once(move || {
            let (a, ident, deleted) = (a.clone(), ident.clone(), deleted.clone());
            async move {
                let table = a
                    .catalog()
                    .load_table(&ident)
                    .await
                    .unwrap_or_else(|e| panic!("load: {e}"));
                // The compaction's outputs are the data files no snapshot references yet.
                let mut outputs = unreferenced_data_files(&table)
                    .await
                    .unwrap_or_else(|e| panic!("list: {e}"));
                outputs.sort();
                let victim = outputs
                    .pop()
                    .unwrap_or_else(|| panic!("the compaction wrote no file"));
                std::fs::remove_file(&victim).unwrap_or_else(|e| panic!("delete: {e}"));
                *deleted.lock().unwrap_or_else(|p| p.into_inner()) = Some(victim);
            }
        })
    };
    let err = CompactBuilder::new(&a, ident.clone())
        .before_commit(hook)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a compaction whose output was deleted committed"))?;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let victim = deleted
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default();
    let name = victim.rsplit('/').next().unwrap_or_default();
    let text = err.to_string();
    assert!(
        matches!(err, Error::InvalidInput(_)) && text.contains(name) && text.contains("is gone"),
        "{text}"
    );
    let table = a.catalog().load_table(&ident).await?;
    assert_eq!(table.metadata().current_snapshot_id(), snapshot_before);
    let left = unreferenced_data_files(&table).await?;
    assert!(left.is_empty(), "the compaction's files stayed: {left:?}");
    assert_eq!(py_state("c", &db.props, "gone")?, before);
    Ok(())
}

/// With partial progress each group is its own commit: a racing delete that removes an input of
/// the second group (us) while the first (eu) commits fails only the second — reported, its
/// files removed — and the first lands; every row is where PyIceberg expects it.
#[tokio::test(flavor = "multi_thread")]
async fn partial_progress_commits_each_group_and_reports_the_one_that_failed() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    let ident = small_files(&a, "pp").await?;
    let before = py_state("c", &db.props, "pp")?;
    let (hook, calls) = {
        let (b, ident) = (b.clone(), ident.clone());
        once(move || {
            let (b, ident) = (b.clone(), ident.clone());
            async move {
                DeleteBuilder::new(&b, ident)
                    .with_filter_text("id = 2")
                    .await
                    .unwrap_or_else(|e| panic!("the racing delete failed: {e}"));
            }
        })
    };
    let (table, m) = CompactBuilder::new(&a, ident.clone())
        .partial_progress(true)
        .before_commit(hook)
        .await?;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "one hook call per group's commit"
    );
    assert_eq!(m.groups.len(), 2, "{m:?}");
    assert_eq!(m.snapshot_ids.len(), 1, "{m:?}");
    assert_eq!(m.snapshot_id, m.snapshot_ids.first().copied());
    assert_eq!(m.failed_groups.len(), 1, "{m:?}");
    assert_eq!(m.failed_groups[0].partition, "region=us");
    assert!(
        m.failed_groups[0]
            .error
            .contains("conflicts with a concurrent change"),
        "{:?}",
        m.failed_groups[0]
    );
    assert_eq!(m.groups[0].output_files.len(), 1, "{m:?}");
    assert!(m.groups[1].output_files.is_empty(), "{m:?}");
    let left = unreferenced_data_files(&table).await?;
    assert!(left.is_empty(), "the failed group's files stayed: {left:?}");
    let after = py_state("c", &db.props, "pp")?;
    let mut want = ids(&before);
    want.retain(|&i| i != 2);
    assert_eq!(ids(&after), want);
    assert_eq!(after["operation"], json!("replace"));
    // eu compacted into one file; us as the racing delete left it (5); ap untouched.
    assert_eq!(after["files"], json!(7));
    // Without partial progress the same race commits nothing (see
    // compaction_conflicts_with_a_racing_delete_of_an_input); a second run compacts us.
    let (_, m) = CompactBuilder::new(&a, ident.clone())
        .partial_progress(true)
        .await?;
    assert_eq!(m.groups.len(), 1, "{m:?}");
    assert_eq!(m.groups[0].partition, "region=us");
    assert!(m.failed_groups.is_empty(), "{m:?}");
    assert_eq!(ids(&py_state("c", &db.props, "pp")?), want);
    Ok(())
}

/// Files of an older partition spec are left alone and counted by default; with
/// `to_current_spec` each is rewritten into the current spec, however small and few, and the
/// rows are unchanged per PyIceberg.
#[tokio::test(flavor = "multi_thread")]
async fn to_current_spec_rewrites_the_files_of_older_specs() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "spec").await?;
    let ident = table.identifier().clone();
    append(
        &handle,
        &ident,
        &[(1, Some("eu"), Some(1)), (2, Some("us"), Some(2))],
    )
    .await?;
    append(&handle, &ident, &[(3, Some("eu"), Some(3))]).await?;
    ops_core::ops::evolve_spec::EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("id", iceberg::spec::Transform::Bucket(4), None)
        .await?;
    append(&handle, &ident, &[(4, Some("eu"), Some(4))]).await?;
    let before = py_state("c", &db.props, "spec")?;
    let specs = |name: &str| -> anyhow::Result<Value> {
        ops_tests::oracle::pyiceberg(
            name,
            &db.props,
            "t = catalog.load_table('spec.orders')\n\
             emit(sorted(f['spec_id'] for f in t.inspect.files().to_pylist()))",
        )
    };
    assert_eq!(specs("c")?, json!([0, 0, 0, 1]));

    let (_, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert!(m.groups.is_empty(), "{m:?}");
    assert_eq!(m.skipped_other_spec_files, 3);

    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .to_current_spec(true)
        .await?;
    assert_eq!(m.skipped_other_spec_files, 0);
    let parts: Vec<&str> = m.groups.iter().map(|g| g.partition.as_str()).collect();
    assert_eq!(parts, ["region=eu (spec 0)", "region=us (spec 0)"], "{m:?}");
    assert_eq!(m.input_files(), 3, "{m:?}");
    let after = py_state("c", &db.props, "spec")?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["operation"], json!("replace"));
    let now = specs("c")?;
    assert!(
        now.as_array()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|v| v == &json!(1))),
        "every live file is of the current spec: {now}"
    );
    // Files of the current spec are judged as before: nothing more to do.
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .to_current_spec(true)
        .await?;
    assert!(m.groups.is_empty(), "{m:?}");
    Ok(())
}

/// Another engine's position delete against one of the inputs, committed between the rewrite
/// and the commit: a conflict (its row would come back), nothing committed, new files removed.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_conflicts_with_a_racing_position_delete() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    let (ident, input) = small_files_and_an_eu_input(&a, "race").await?;
    let (hook, calls) = {
        let (b, ident) = (b.clone(), ident.clone());
        let (path, partition) = (input.file_path().to_string(), input.partition().clone());
        once(move || {
            let (b, ident, path, partition) =
                (b.clone(), ident.clone(), path.clone(), partition.clone());
            async move {
                let t = b
                    .catalog()
                    .load_table(&ident)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                crate::commit_layer::commit_position_delete(&b, &t, &path, partition, &[0])
                    .await
                    .unwrap_or_else(|e| panic!("the racing position delete failed: {e}"));
            }
        })
    };
    let err = CompactBuilder::new(&a, ident.clone())
        .before_commit(hook)
        .await
        .err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        matches!(&err, Some(Error::CommitConflict { detail, .. }) if detail.contains("delete file")),
        "{err:?}"
    );
    let table = a.catalog().load_table(&ident).await?;
    assert_ne!(
        table
            .metadata()
            .current_snapshot()
            .map(|s| s.summary().operation.as_str()),
        Some("replace")
    );
    let left = unreferenced_data_files(&table).await?;
    assert!(left.is_empty(), "the compaction's files stayed: {left:?}");
    assert_eq!(ids(&py_state("c", &db.props, "race")?).len(), 18);
    Ok(())
}

/// Table `ns.orders` with an eu file of 3 rows (ids 1-3), an eu file of 1 row (id 4), then one
/// file of `more`; returns it with the 3-row file (the one the position-delete tests delete
/// from).
async fn eu_files_with_a_3_row_one(
    handle: &CatalogHandle,
    ns: &str,
    more: &[Row],
) -> anyhow::Result<(TableIdent, Table, DataFile)> {
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    append(
        handle,
        &ident,
        &[
            (1, Some("eu"), Some(1)),
            (2, Some("eu"), Some(2)),
            (3, Some("eu"), None),
        ],
    )
    .await?;
    append(handle, &ident, &[(4, Some("eu"), Some(4))]).await?;
    if !more.is_empty() {
        append(handle, &ident, more).await?;
    }
    let table = handle.catalog().load_table(&ident).await?;
    let (target, _) = live_files(&table)
        .await?
        .into_iter()
        .find(|(f, _)| f.record_count() == 3)
        .ok_or_else(|| anyhow::anyhow!("the 3-row file"))?;
    Ok((ident, table, target))
}

/// Position deletes written by another engine are applied: the deleted rows stay deleted,
/// and a file with deletes makes its partition a candidate below min-input-files.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_applies_position_deletes() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let (ident, table, target) = eu_files_with_a_3_row_one(&handle, "pd", &[]).await?;
    // "Spark" deletes position 1 (id 2).
    crate::commit_layer::commit_position_delete(
        &handle,
        &table,
        target.file_path(),
        target.partition().clone(),
        &[1],
    )
    .await?;
    let before = py_state("c", &db.props, "pd")?;
    assert_eq!(ids(&before), vec![1, 3, 4]);
    let (table, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert_eq!(m.groups.len(), 1, "{m:?}");
    // Both files are in the group; the delete file has no `file_path` bounds, so the planner
    // attaches it to both (as Java's would).
    assert_eq!(m.groups[0].input_files.len(), 2, "{m:?}");
    assert!(m.groups[0].files_with_deletes >= 1, "{m:?}");
    assert_eq!(m.groups[0].output_rows, 3);
    let after = py_state("c", &db.props, "pd")?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["operation"], json!("replace"));
    assert_eq!(live_files(&table).await?.len(), 1);
    // The rewritten file keeps the plan's data sequence number, which the bound-less delete
    // reaches by sequence number; but a position delete names files by path, and the
    // rewritten file was added after it was written: it applies to nothing once both inputs
    // are gone, and goes in the same commit (it used to stay, and make the next compaction
    // rewrite the file once more).
    assert_eq!(m.removed_dangling_delete_files.len(), 1, "{m:?}");
    assert_eq!(
        after["summary"]["total-delete-files"],
        json!("0"),
        "{after}"
    );
    assert_eq!(
        after["summary"]["removed-position-delete-files"],
        json!("1"),
        "{after}"
    );
    // Nothing is left to rewrite.
    let (_, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert!(m.groups.is_empty(), "{m:?}");
    Ok(())
}

/// Equality deletes written by another engine are applied as Java applies them, NULL equal to
/// NULL: a delete row `amount = 2` removes the rows whose amount is 2 and keeps the one whose
/// amount is NULL (iceberg's reader, applying `amount != 2`, would lose it); a delete row
/// `amount = NULL` removes the rows whose amount is NULL. Rows appended after a delete are not
/// deleted by it. Once every file a delete applied to is rewritten it applies to nothing and
/// goes in the same commit, so PyIceberg (which reads no equality deletes) reads the table.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_applies_equality_deletes_null_equal_to_null() -> TestResult {
    use arrow_array::Int32Array;
    use iceberg::spec::Struct;
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "eqd").await?;
    let ident = table.identifier().clone();
    append(
        &handle,
        &ident,
        &[
            (1, Some("eu"), Some(1)),
            (2, Some("eu"), Some(2)),
            (3, Some("eu"), None),
        ],
    )
    .await?;
    append(
        &handle,
        &ident,
        &[
            (4, Some("eu"), Some(2)),
            (5, Some("us"), None),
            (6, Some("us"), Some(6)),
        ],
    )
    .await?;
    let table = handle.catalog().load_table(&ident).await?;
    let part = |region: &str| Struct::from_iter([Some(Literal::string(region))]);
    let table = crate::commit_layer::commit_equality_delete_on(
        &handle,
        &table,
        part("eu"),
        ("amount", 3),
        Arc::new(Int32Array::from(vec![Some(2)])),
    )
    .await?;
    crate::commit_layer::commit_equality_delete_on(
        &handle,
        &table,
        part("us"),
        ("amount", 3),
        Arc::new(Int32Array::from(vec![None::<i32>])),
    )
    .await?;
    append(
        &handle,
        &ident,
        &[(7, Some("eu"), Some(2)), (8, Some("us"), None)],
    )
    .await?;

    let (table, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert!(m.skipped_equality_delete_files.is_empty(), "{m:?}");
    assert_eq!(m.groups.len(), 2, "{m:?}");
    assert_eq!(
        m.groups.iter().map(|g| g.output_rows).sum::<u64>(),
        5,
        "{m:?}"
    );
    assert_eq!(m.removed_dangling_delete_files.len(), 2, "{m:?}");
    assert_eq!(live_files(&table).await?.len(), 2);
    let after = py_state("c", &db.props, "eqd")?;
    assert_eq!(ids(&after), vec![1, 3, 6, 7, 8], "{after}");
    assert_eq!(
        after["summary"]["total-delete-files"],
        json!("0"),
        "{after}"
    );
    assert_eq!(
        after["summary"]["removed-equality-delete-files"],
        json!("2"),
        "{after}"
    );
    Ok(())
}

/// An equality delete of an unpartitioned spec (the table's partition field removed since)
/// applies to every older file, whatever its partition, and to no newer one: with
/// `--to-current-spec` the old spec's files are rewritten without the rows it deletes (NULL
/// amounts kept), a file appended after it keeps its row, and the delete, dangling afterwards,
/// goes in the same commit so PyIceberg reads the table.
#[tokio::test(flavor = "multi_thread")]
async fn a_global_equality_delete_applies_to_every_older_partition() -> TestResult {
    use arrow_array::Int32Array;
    use iceberg::spec::Struct;
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "geq").await?;
    let ident = table.identifier().clone();
    append(
        &handle,
        &ident,
        &[
            (1, Some("eu"), Some(1)),
            (2, Some("eu"), Some(2)),
            (3, Some("eu"), None),
            (4, Some("us"), Some(2)),
        ],
    )
    .await?;
    ops_core::ops::evolve_spec::EvolveSpecBuilder::new(&handle, ident.clone())
        .remove_field("region")
        .await?;
    let table = handle.catalog().load_table(&ident).await?;
    crate::commit_layer::commit_equality_delete_on(
        &handle,
        &table,
        Struct::empty(),
        ("amount", 3),
        Arc::new(Int32Array::from(vec![Some(2)])),
    )
    .await?;
    append(&handle, &ident, &[(5, Some("eu"), Some(2))]).await?;

    let (table, m) = CompactBuilder::new(&handle, ident.clone())
        .to_current_spec(true)
        .await?;
    assert!(m.skipped_equality_delete_files.is_empty(), "{m:?}");
    assert_eq!(m.removed_dangling_delete_files.len(), 1, "{m:?}");
    let after = py_state("c", &db.props, "geq")?;
    assert_eq!(ids(&after), vec![1, 3, 5], "{after}");
    assert_eq!(
        after["summary"]["total-delete-files"],
        json!("0"),
        "{after}"
    );
    assert!(!live_files(&table).await?.is_empty());
    Ok(())
}

/// A position delete written as Spark writes it, with `file_path` bounds naming the one file it
/// deletes from: only that file counts as having deletes, and once it is rewritten the delete
/// applies to nothing and is removed in the compaction's own commit (Java's
/// remove-dangling-deletes); the next compaction has nothing to do. PyIceberg reads the same
/// rows throughout.
#[tokio::test(flavor = "multi_thread")]
async fn compaction_removes_the_position_deletes_it_left_dangling() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let (ident, table, target) =
        eu_files_with_a_3_row_one(&handle, "dd", &[(5, Some("us"), Some(5))]).await?;
    crate::commit_layer::commit_spark_position_delete(
        &handle,
        &table,
        target.file_path(),
        target.partition().clone(),
        &[1],
    )
    .await?;
    let before = py_state("c", &db.props, "dd")?;
    assert_eq!(ids(&before), vec![1, 3, 4, 5]);

    let (table, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert_eq!(m.groups.len(), 1, "{m:?}");
    assert_eq!(m.groups[0].input_files.len(), 2, "{m:?}");
    assert_eq!(
        m.groups[0].files_with_deletes, 1,
        "only the file the bounds name has deletes: {m:?}"
    );
    assert_eq!(m.removed_dangling_delete_files.len(), 1, "{m:?}");
    let after = py_state("c", &db.props, "dd")?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["operation"], json!("replace"));
    assert_eq!(
        after["summary"]["total-delete-files"],
        json!("0"),
        "{after}"
    );
    assert_eq!(
        after["summary"]["removed-position-delete-files"],
        json!("1"),
        "{after}"
    );
    assert_eq!(after["summary"]["total-records"], json!("4"), "{after}");
    // Time travel to before the compaction still applies the delete.
    let old = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "t = catalog.load_table('dd.orders')\n\
         emit(rows(t, t.metadata.snapshots[-2].snapshot_id))",
    )?;
    assert_eq!(old.as_array().map(Vec::len), Some(4), "{old}");
    assert_eq!(live_files(&table).await?.len(), 2);
    let (_, m) = CompactBuilder::new(&handle, ident.clone()).await?;
    assert!(m.groups.is_empty(), "{m:?}");
    Ok(())
}

/// A file whose partition value predates a widening of its column, in a partition with a delete
/// file stored under the widened form (iceberg's planner matches delete files by the raw value,
/// so it would not apply it), is left as it is and reported; the rest of the table, files of
/// the same partition included, is compacted. Before: the file was rewritten without its
/// deletes (the deleted row came back), and the report of an `int` value under a `long` column
/// panicked.
#[tokio::test(flavor = "multi_thread")]
async fn a_widened_partition_file_with_deletes_is_skipped_not_fatal() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, IntegerType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
catalog.create_namespace('wp')
t = catalog.create_table('wp.orders', schema=Schema(NestedField(1, 'id', LongType(), required=True), NestedField(2, 'qty', IntegerType())), partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), 'qty')))
for k in range(3):
    t.append(pa.table({'id': [10 * k + i for i in range(3)], 'qty': [7, 7, 7]}, schema=pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('qty', pa.int32())])))
with t.update_schema() as up:
    up.update_column('qty', LongType())
t = catalog.load_table('wp.orders')
for k in range(3, 5):
    t.append(pa.table({'id': [10 * k + i for i in range(3)], 'qty': [7, 7, 7]}, schema=pa.schema([pa.field('id', pa.int64(), nullable=False), pa.field('qty', pa.int64())])))
emit(True)
"#,
    )?;
    let handle = open("c", &db.props).await?;
    let ident = TableIdent::from_strs(["wp", "orders"])?;
    let table = handle.catalog().load_table(&ident).await?;
    let files = live_files(&table).await?;
    assert_eq!(files.len(), 5);
    let (old, _) = files
        .iter()
        .find(|(f, _)| {
            matches!(
                f.partition().fields().first(),
                Some(Some(Literal::Primitive(PrimitiveLiteral::Int(7))))
            )
        })
        .ok_or_else(|| anyhow::anyhow!("no file with an int partition value: {files:?}"))?;
    // An engine writing after the widening deletes the first row of a file written before it:
    // its delete file holds the partition value as a long.
    crate::commit_layer::commit_position_delete(
        &handle,
        &table,
        old.file_path(),
        iceberg::spec::Struct::from_iter([Some(Literal::long(7))]),
        &[0],
    )
    .await?;
    let before = py_state("c", &db.props, "wp")?;
    assert_eq!(ids(&before).len(), 14);
    // The copy-on-write delete refuses to rewrite such a file as well: iceberg's reader would
    // not apply the delete to it, so the rewrite would bring the deleted row back.
    let refused = DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id IN (1, 11, 21, 31, 41)")
        .await
        .err()
        .ok_or_else(|| {
            anyhow::anyhow!("the delete rewrote a file whose deletes it cannot match")
        })?;
    assert!(
        refused
            .to_string()
            .contains("another form of its partition value"),
        "{refused}"
    );
    assert_eq!(py_state("c", &db.props, "wp")?["rows"], before["rows"]);
    // A migration reading it through iceberg's reader refuses, counting the files the delete
    // misses (the three written before the widening), not merely because deletes exist.
    let refused = ops_datamig::DataMigrator::new(
        &handle,
        ident.clone(),
        &handle,
        TableIdent::from_strs(["wp", "copy"])?,
    )
    .create_dest(true)
    .dry_run(true)
    .run()
    .await
    .err()
    .ok_or_else(|| anyhow::anyhow!("the migration read files whose deletes it cannot match"))?;
    assert!(
        refused.to_string().contains("to 3 older file(s)"),
        "{refused}"
    );
    let (table, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(
        m.skipped_widened_delete_files
            .contains(&old.file_path().to_string()),
        "{m:?}"
    );
    assert_eq!(
        m.input_files() + m.skipped_widened_delete_files.len(),
        5,
        "{m:?}"
    );
    assert!(m.input_files() >= 2 && m.snapshot_id.is_some(), "{m:?}");
    assert!(m.groups.iter().all(|g| g.partition == "qty=7"), "{m:?}");
    let after = py_state("c", &db.props, "wp")?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["operation"], json!("replace"));
    assert_eq!(
        live_files(&table).await?.len(),
        m.skipped_widened_delete_files.len() + m.output_files()
    );
    Ok(())
}

/// An unfinished migration's marker stops compaction unless forced.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_migration_stops_compaction() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let ident = small_files(&handle, "mig").await?;
    commit_metadata_change(&handle, &ident, |md| {
        Ok(mark_running(md, "job-7").map(|u| TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates: vec![u],
            ..Default::default()
        }))
    })
    .await?;
    let err = CompactBuilder::new(&handle, ident.clone())
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("compaction ran under a migration"))?;
    assert!(err.to_string().contains("job-7"), "{err}");
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .force(true)
        .await?;
    assert_eq!(m.input_files(), 12);
    Ok(())
}

/// Every corpus table compacted (a low min-input-files and a small target, so every table
/// has work): PyIceberg reads the same rows before and after.
#[tokio::test(flavor = "multi_thread")]
async fn corpus_tables_survive_compaction() -> TestResult {
    corpus_compaction(false, false).await
}

/// Every corpus table compacted as a cluster compacts it, without the cluster: the plan
/// written down as a `CompactionJob` (read back from its JSON), each group rewritten by
/// `execute_task` under a folder of its own (as an executor does, planning again on the
/// snapshot), last group first, and committed by `commit_group` as it comes — sorted, so the
/// sort travels too. PyIceberg reads the same rows before and after.
#[tokio::test(flavor = "multi_thread")]
async fn corpus_tables_survive_compaction_as_cluster_tasks() -> TestResult {
    corpus_compaction(true, true).await
}

/// The same with every table's rows sorted by all its primitive columns outside lists and
/// maps (every type the corpus has as a sort key, every other one through `bucket`,
/// `truncate` or `day` where it applies; directions and null orders alternating), through
/// spilled runs.
#[tokio::test(flavor = "multi_thread")]
async fn corpus_tables_survive_sorted_compaction() -> TestResult {
    corpus_compaction(true, false).await
}

/// Every primitive column of `table`'s schema outside lists and maps, depth first.
fn sort_columns(table: &Table) -> SortSpec {
    use iceberg::spec::{Transform, Type};
    let schema = table.metadata().current_schema();
    let mut columns = Vec::new();
    let mut stack: Vec<&iceberg::spec::NestedFieldRef> =
        schema.as_struct().fields().iter().rev().collect();
    while let Some(field) = stack.pop() {
        match field.field_type.as_ref() {
            Type::Primitive(_) => {
                if let Some(name) = schema.name_by_field_id(field.id) {
                    let i = columns.len();
                    // Every other column through a transform where one applies (the
                    // corpus's every type through `bucket`, `truncate` and `day`).
                    let ty = field.field_type.as_ref();
                    let transforms = [Transform::Bucket(4), Transform::Truncate(3), Transform::Day];
                    let transform = if i % 2 == 1 {
                        transforms
                            .into_iter()
                            .cycle()
                            .skip(i / 2)
                            .take(3)
                            .find(|t| {
                                // One iceberg's arrow functions evaluate (0.10.1: not
                                // `hour` of nanosecond timestamps; resolve refuses those by
                                // name).
                                t.result_type(ty).is_ok()
                                    && iceberg::arrow::type_to_arrow_type(ty).is_ok_and(|a| {
                                        iceberg::transform::create_transform_function(t)
                                            .and_then(|f| {
                                                f.transform(arrow_array::new_empty_array(&a))
                                            })
                                            .is_ok()
                                    })
                            })
                            .unwrap_or(Transform::Identity)
                    } else {
                        Transform::Identity
                    };
                    columns.push(ops_maintenance::sort::SortColumn {
                        name: name.to_string(),
                        transform,
                        descending: i % 2 == 1,
                        nulls_first: i % 3 == 0,
                    });
                }
            }
            Type::Struct(s) => stack.extend(s.fields().iter().rev()),
            Type::List(_) | Type::Map(_) => {}
        }
    }
    SortSpec::Columns(columns)
}

/// Runs `builder` as a cluster job would, in this process (see
/// `corpus_tables_survive_compaction_as_cluster_tasks`).
async fn compact_as_tasks(
    handle: &CatalogHandle,
    builder: CompactBuilder,
) -> ops_core::Result<(Table, ops_maintenance::compact::CompactMetrics)> {
    use ops_maintenance::compact::job::CompactionJob;
    let mut prepared = builder.prepare().await?;
    let Some(job) = prepared.job("job-test", "corpus")? else {
        return Ok(prepared.finish());
    };
    let job = CompactionJob::from_json(
        &serde_json::to_vec(&job).map_err(|e| ops_core::Error::InvalidInput(e.to_string()))?,
    )?;
    let location = prepared
        .table()
        .metadata()
        .location()
        .trim_end_matches('/')
        .to_string();
    for task in (0..job.groups.len()).rev() {
        let folder = format!("{location}/data/iceberg-ops-job-test/task-{task:06}-0");
        let out = job.execute_task(handle, task, &folder).await?;
        assert!(
            out.file_paths().iter().all(|p| p.starts_with(&folder)),
            "{:?} not under {folder}",
            out.file_paths()
        );
        let files = out.data_files(prepared.table())?;
        let committed = prepared.commit_group(task, out.spec_id, files).await?;
        assert!(
            committed.is_some(),
            "group {task} was refused: {:?}",
            prepared.metrics().failed_groups
        );
    }
    Ok(prepared.finish())
}

async fn corpus_compaction(sort: bool, as_job: bool) -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let (p, handle, tables) = crate::corpus::private_corpus(dir.path(), 1000).await?;
    let read = |t: &str| -> anyhow::Result<Value> {
        ops_tests::oracle::pyiceberg(
            "corpus",
            &p,
            &format!(
                "import hashlib\n\
                 t = catalog.load_table('corpus.{t}')\n\
                 r = t.scan().to_arrow()\n\
                 lines = sorted(json.dumps(x, sort_keys=True, default=str) for x in r.to_pylist())\n\
                 emit({{'n': len(lines), 'digest': hashlib.sha256('\\n'.join(lines).encode()).hexdigest(), \
                        'files': len(list(t.scan().plan_files()))}})"
            ),
        )
    };
    let mut problems = Vec::new();
    let mut compacted = 0;
    for ident in tables {
        let t = ident.name().to_string();
        let before = read(&t)?;
        let mut builder = CompactBuilder::new(&handle, ident.clone())
            .min_input_files(2)
            .target_file_size(64 * 1024 * 1024);
        if sort {
            let table = handle.catalog().load_table(&ident).await?;
            builder = builder.sort(sort_columns(&table)).sort_memory(64 * 1024);
        }
        let result = if as_job {
            compact_as_tasks(&handle, builder).await
        } else {
            builder.await
        };
        let m = match result {
            Ok((_, m)) => m,
            Err(e) => {
                problems.push(format!("{t}: {e}"));
                continue;
            }
        };
        let after = read(&t)?;
        if before["n"] != after["n"] || before["digest"] != after["digest"] {
            problems.push(format!("{t}: rows changed ({before} -> {after})"));
        }
        // Files written before the widening (int/float partition values) and after it
        // (long/double) are of the same twelve partitions: one file each afterwards.
        if t == "widened_partition" && after["files"] != json!(12) {
            problems.push(format!(
                "{t}: want 12 files, one per partition ({before} -> {after})"
            ));
        }
        if m.snapshot_id.is_some() {
            compacted += 1;
            if after["files"].as_u64() >= before["files"].as_u64() {
                problems.push(format!("{t}: files not fewer ({before} -> {after})"));
            }
        }
        eprintln!(
            "{t}: {} group(s), {} -> {} file(s), files {} -> {}, skipped eq {} other-spec {}",
            m.groups.len(),
            m.input_files(),
            m.output_files(),
            before["files"],
            after["files"],
            m.skipped_equality_delete_files.len(),
            m.skipped_other_spec_files
        );
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(compacted >= 1, "no corpus table had anything to compact");
    Ok(())
}

/// `DataMigrator::compact` (`migrate-data --compact`): once the job's last batch lands, the
/// files its batches wrote are compacted in one more commit tagged with the job; files of an
/// earlier job in the same destination are left as they are; PyIceberg reads every row.
#[tokio::test(flavor = "multi_thread")]
async fn a_migration_compacts_the_files_it_wrote() -> TestResult {
    let CopyJob {
        db,
        handle,
        source,
        dest,
    } = copy_job("mig").await?;
    let migrate = |compact: bool| copy_migrator(&handle, &source, &dest).compact(compact);
    let first = migrate(false).run().await?;
    assert!(first.compaction.is_none());
    let table = handle.catalog().load_table(&dest).await?;
    let first_files: HashSet<String> = live_files(&table)
        .await?
        .into_iter()
        .map(|(f, _)| f.file_path().to_string())
        .collect();
    assert!(first_files.len() >= 6, "{first_files:?}");

    let second = migrate(true).run().await?;
    let c = second
        .compaction
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no compaction reported: {second:?}"))?;
    assert!(c.input_files > c.output_files, "{c:?}");
    let table = handle.catalog().load_table(&dest).await?;
    let current = table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    assert_eq!(Some(current.snapshot_id()), c.snapshot_id);
    let props = &current.summary().additional_properties;
    assert_eq!(
        props.get(ops_datamig::COMPACTED_JOB_PROPERTY),
        second.job_id.as_ref()
    );
    assert!(!props.contains_key(ops_datamig::MIGRATION_BATCH_PROPERTY));
    let now: HashSet<String> = live_files(&table)
        .await?
        .into_iter()
        .map(|(f, _)| f.file_path().to_string())
        .collect();
    assert!(
        first_files.is_subset(&now),
        "the earlier job's files were compacted too"
    );
    // eu and us: one file each for the second job; ap (one row) had one file.
    assert_eq!(now.len() - first_files.len(), 3, "{c:?}");
    let src = py_state("c", &db.props, "mig")?;
    let copied = copied_ids(&db.props, "mig.copy")?;
    let mut want: Vec<i64> = ids(&src).into_iter().flat_map(|i| [i, i]).collect();
    want.sort_unstable();
    assert_eq!(copied, json!(want));
    Ok(())
}

/// `expire_job_snapshots`: once the job completed (compacted), its own batch snapshots expire
/// and the small files they alone referenced are deleted; the earlier job's snapshots, a tag's
/// snapshot and the current one are kept; named snapshots expire without the table's age rule.
#[tokio::test(flavor = "multi_thread")]
async fn a_migration_expires_its_own_snapshots() -> TestResult {
    use ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder;
    let CopyJob {
        db,
        handle,
        source,
        dest,
    } = copy_job("exp").await?;
    let migrate = |expire: bool| {
        copy_migrator(&handle, &source, &dest)
            .compact(expire)
            .expire_job_snapshots(expire)
    };
    let first = migrate(false).run().await?;
    assert!(first.expiry.is_none());
    let before = handle.catalog().load_table(&dest).await?;
    let kept: HashSet<i64> = before
        .metadata()
        .snapshots()
        .map(|s| s.snapshot_id())
        .collect();
    assert!(kept.len() >= 6, "{kept:?}");

    let second = migrate(true).run().await?;
    let x = second
        .expiry
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no expiry reported: {second:?}"))?;
    let c = second
        .compaction
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no compaction: {second:?}"))?;
    let mut batches = second.new_snapshots.clone();
    batches.sort_unstable();
    assert_eq!(x.expired_snapshots, batches, "{x:?}");
    assert!(!x.kept_files && x.cleanup_skipped.is_none(), "{x:?}");
    // The compaction replaced the batches' small files: they are deleted, the rest stays.
    assert_eq!(x.deleted_data_files, c.input_files, "{x:?} {c:?}");
    let table = handle.catalog().load_table(&dest).await?;
    let now: HashSet<i64> = table
        .metadata()
        .snapshots()
        .map(|s| s.snapshot_id())
        .collect();
    let mut want = kept.clone();
    want.extend(c.snapshot_id);
    assert_eq!(now, want);
    assert!(unreferenced_data_files(&table).await?.is_empty());
    for (f, _) in live_files(&table).await? {
        assert!(local(f.file_path()).exists(), "{} deleted", f.file_path());
    }
    let src = py_state("c", &db.props, "exp")?;
    let copied = copied_ids(&db.props, "exp.copy")?;
    let mut want_ids: Vec<i64> = ids(&src).into_iter().flat_map(|i| [i, i]).collect();
    want_ids.sort_unstable();
    assert_eq!(copied, json!(want_ids));

    // Named snapshots alone: a tagged one is kept, the other expires, and the table's own
    // age rule (here: everything older than 1 ms) expires nothing else.
    let mut first_job = first.new_snapshots.clone();
    first_job.sort_unstable();
    let (tagged, named) = (first_job[0], first_job[1]);
    let change = TableChange {
        requirements: vec![],
        updates: vec![iceberg::TableUpdate::SetSnapshotRef {
            ref_name: "audit".into(),
            reference: iceberg::spec::SnapshotReference::new(
                tagged,
                iceberg::spec::SnapshotRetention::Tag {
                    max_ref_age_ms: None,
                },
            ),
        }],
        ..Default::default()
    };
    let table = ops_core::commit::commit(&handle, &table, change).await?;
    ops_core::ops::properties::PropertiesBuilder::new(&handle, dest.clone())
        .set("history.expire.max-snapshot-age-ms", "1")
        .await?;
    let count = table.metadata().snapshots().count();
    let absent = 42;
    let (table, m) = ExpireSnapshotsBuilder::new(&handle, dest.clone())
        .snapshot_ids([tagged, named, absent])
        .await?;
    assert_eq!(m.expired_snapshots, vec![named], "{m:?}");
    assert_eq!(m.rule.snapshot_ids, {
        let mut v = vec![tagged, named, absent];
        v.sort_unstable();
        v
    });
    // The named snapshots that stay are reported, each with its reason.
    let mut not_expired = m.not_expired.clone();
    not_expired.sort_unstable();
    let mut want = vec![
        (absent, "the table has no such snapshot".to_string()),
        (tagged, "the head of audit".to_string()),
    ];
    want.sort_unstable();
    assert_eq!(not_expired, want, "{m:?}");
    assert_eq!(table.metadata().snapshots().count(), count - 1);
    assert!(table.metadata().snapshot_by_id(tagged).is_some());
    assert!(m.removed_refs.is_empty(), "{m:?}");
    assert!(table.metadata().snapshot_for_ref("audit").is_some());
    Ok(())
}

/// A plan made with `compact` and `expire_job_snapshots` carries them (through its JSON) to the
/// commit step, which compacts after the last batch and expires the job's batch snapshots once
/// complete: only the compaction's snapshot is left, rows as the source's.
#[tokio::test(flavor = "multi_thread")]
async fn a_planned_job_compacts_and_expires_when_committed() -> TestResult {
    let CopyJob {
        db,
        handle,
        source,
        dest,
    } = copy_job("pln").await?;
    let plan = copy_migrator(&handle, &source, &dest)
        .compact(true)
        .expire_job_snapshots(true)
        .plan()
        .await?;
    let plan: ops_datamig::MigrationPlan = serde_json::from_str(&serde_json::to_string(&plan)?)?;
    assert!(plan.compact && plan.expire_job_snapshots);
    let outputs = run_tasks(&handle, &plan).await?;
    let r = plan.commit(&handle, &handle, outputs.clone(), None).await?;
    // Committing the same outputs again commits nothing: the job's trace says it completed
    // (its batch snapshots expired, a second commit would append them again).
    let again = plan.commit(&handle, &handle, outputs, None).await;
    assert!(
        matches!(
            again,
            Err(ops_datamig::MigrationError::AlreadyComplete { .. })
        ),
        "{again:?}"
    );
    let c = r
        .compaction
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no compaction: {r:?}"))?;
    let x = r
        .expiry
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no expiry: {r:?}"))?;
    assert!(c.input_files > c.output_files, "{c:?}");
    let mut batches = r.new_snapshots.clone();
    batches.sort_unstable();
    assert_eq!(x.expired_snapshots, batches, "{x:?}");
    let table = handle.catalog().load_table(&dest).await?;
    let left: Vec<i64> = table
        .metadata()
        .snapshots()
        .map(|s| s.snapshot_id())
        .collect();
    assert_eq!(left, c.snapshot_id.into_iter().collect::<Vec<_>>());
    assert!(unreferenced_data_files(&table).await?.is_empty());
    every_row_once(&db.props, "pln")?;
    Ok(())
}

/// A commit killed after completing its job but before expiring the job's snapshots (here: the
/// same plan committed first without `expire_job_snapshots`, which leaves the same state): the
/// same commit again, with its checkpoint, finds the job complete, expires the snapshots it
/// left and says so; once more, it has nothing left to do. No row is committed twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_commit_finishes_the_expiry_a_killed_one_left() -> TestResult {
    let job = copy_job("fin").await?;
    let (plan, outputs) = job.planned(|m| m.expire_job_snapshots(true)).await?;
    let CopyJob {
        db, handle, dest, ..
    } = job;
    let dir = tempfile::tempdir()?;
    let checkpoint = dir.path().join("job.ckpt");
    let mut killed = plan.clone();
    killed.expire_job_snapshots = false;
    let r = killed
        .commit(&handle, &handle, outputs.clone(), Some(checkpoint.clone()))
        .await?;
    assert!(r.expiry.is_none() && r.new_snapshots.len() > 1, "{r:?}");
    let before = handle.catalog().load_table(&dest).await?;
    let snapshots_before = before.metadata().snapshots().count();

    let again = plan
        .commit(&handle, &handle, outputs.clone(), Some(checkpoint.clone()))
        .await;
    let Err(ops_datamig::MigrationError::AlreadyComplete {
        expiry: Some(expiry),
        ..
    }) = &again
    else {
        anyhow::bail!("want the job complete with its expiry finished: {again:?}");
    };
    // Every batch's snapshot but the newest (committed last), the trace that the job completed.
    let batches = r.new_snapshots.clone();
    let mut want: Vec<i64> = batches[..batches.len() - 1].to_vec();
    want.sort_unstable();
    assert_eq!(expiry.expired_snapshots, want, "{expiry:?}");
    let message = again
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        message.contains("snapshot expiry, left undone"),
        "{message}"
    );
    let table = handle.catalog().load_table(&dest).await?;
    assert_eq!(
        table.metadata().snapshots().count(),
        snapshots_before - (batches.len() - 1)
    );
    assert!(unreferenced_data_files(&table).await?.is_empty());

    let third = plan
        .commit(&handle, &handle, outputs, Some(checkpoint))
        .await;
    assert!(
        matches!(
            third,
            Err(ops_datamig::MigrationError::AlreadyComplete { expiry: None, .. })
        ),
        "{third:?}"
    );
    every_row_once(&db.props, "fin")?;
    Ok(())
}

/// A commit killed after the job's completion record but before its compaction (here: the
/// same plan committed first without `compact`, which leaves the same state), repeated without
/// a checkpoint: the job is complete, and the repeat runs the compaction it left (review
/// finding: it was skipped for good, and the job's expiry then removed the snapshots by which
/// the job's files are found).
#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_commit_finishes_the_compaction_a_killed_one_left() -> TestResult {
    let job = copy_job("cfin").await?;
    let (plan, outputs) = job.planned(|m| m.compact(true)).await?;
    let CopyJob {
        db, handle, dest, ..
    } = job;
    let mut killed = plan.clone();
    killed.compact = false;
    let r = killed
        .commit(&handle, &handle, outputs.clone(), None)
        .await?;
    assert!(r.compaction.is_none() && r.new_snapshots.len() > 1, "{r:?}");
    let compactions = |t: &Table| {
        t.metadata()
            .snapshots()
            .filter(|s| {
                s.summary()
                    .additional_properties
                    .get("iceberg-ops.compacted-job")
                    == Some(&plan.job_id)
            })
            .count()
    };
    assert_eq!(compactions(&handle.catalog().load_table(&dest).await?), 0);

    let again = plan.commit(&handle, &handle, outputs.clone(), None).await;
    let message = match &again {
        Err(e @ ops_datamig::MigrationError::AlreadyComplete { .. }) => e.to_string(),
        other => anyhow::bail!("want the job complete: {other:?}"),
    };
    assert!(message.contains("completion record"), "{message}");
    assert!(
        message.contains("compaction, left undone, ran now"),
        "{message}"
    );
    let table = handle.catalog().load_table(&dest).await?;
    assert_eq!(compactions(&table), 1);
    // Once more: nothing left to do, no second compaction.
    let third = plan.commit(&handle, &handle, outputs, None).await;
    assert!(
        matches!(
            third,
            Err(ops_datamig::MigrationError::AlreadyComplete { .. })
        ),
        "{third:?}"
    );
    assert_eq!(compactions(&handle.catalog().load_table(&dest).await?), 1);
    every_row_once(&db.props, "cfin")?;
    Ok(())
}

/// A completed job whose destination was then rolled back past its last batch: its completion
/// record is still there, but its rows are not all in the table, so a repeated commit is
/// refused (naming the snapshot) instead of reported complete (review finding).
#[tokio::test(flavor = "multi_thread")]
async fn a_completed_job_rolled_back_since_is_not_reported_complete() -> TestResult {
    let job = copy_job("rb").await?;
    let (plan, outputs) = job.planned(|m| m).await?;
    let CopyJob {
        db, handle, dest, ..
    } = job;
    let r = plan.commit(&handle, &handle, outputs.clone(), None).await?;
    assert!(r.new_snapshots.len() > 1, "{r:?}");
    ops_core::ops::rollback::RollbackBuilder::to_snapshot(
        &handle,
        dest.clone(),
        r.new_snapshots[0],
    )
    .await?;
    let before = py_state("c", &db.props, "rb")?;
    let again = plan.commit(&handle, &handle, outputs, None).await;
    let message = match &again {
        Err(e @ ops_datamig::MigrationError::Resume { .. }) => e.to_string(),
        other => anyhow::bail!("want a refusal: {other:?}"),
    };
    let newest = r.new_snapshots.last().copied().unwrap_or_default();
    assert!(
        message.contains("rolled back past the job") && message.contains(&newest.to_string()),
        "{message}"
    );
    let copied = copied_ids(&db.props, "rb.copy")?;
    assert!(
        copied.as_array().map_or(0, Vec::len) < ids(&before).len(),
        "the rollback left fewer rows: {copied}"
    );
    Ok(())
}

/// A commit given another job's checkpoint is refused before anything is read or written, and
/// leaves that checkpoint as it was (review finding: when this plan's job was over, the other
/// job's checkpoint was marked completed, and that job's next commit skipped its remaining
/// batches). A job abandoned with `table abandon-migration` — no marker, no completion record —
/// is refused too, not reported complete.
#[tokio::test(flavor = "multi_thread")]
async fn a_commit_refuses_another_jobs_checkpoint_and_an_abandoned_job() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let source = small_files(&handle, "ab").await?;
    let plan_of = |name: &str| {
        let dest = TableIdent::from_strs(["ab", name]).unwrap_or_else(|e| panic!("{e}"));
        let mut migrator = copy_migrator(&handle, &source, &dest);
        async move { migrator.plan().await }
    };
    // Job A completes.
    let a = plan_of("a").await?;
    let a_out = run_tasks(&handle, &a).await?;
    a.commit(&handle, &handle, a_out.clone(), None).await?;
    // Job B stops after its first output, checkpointed.
    let b = plan_of("b").await?;
    let b_out = run_tasks(&handle, &b).await?;
    assert!(b_out.len() > 1, "{} tasks", b_out.len());
    let dir = tempfile::tempdir()?;
    let ckpt = dir.path().join("b.ckpt");
    let first: Vec<ops_datamig::Result<ops_datamig::TaskOutput>> = vec![
        Ok(b_out[0].clone()),
        Err(ops_datamig::MigrationError::InvalidInput(
            "executor lost".into(),
        )),
    ];
    let stopped = b
        .commit_stream(
            &handle,
            &handle,
            futures::stream::iter(first),
            Some(ckpt.clone()),
        )
        .await;
    assert!(stopped.is_err(), "{stopped:?}");
    // A's commit with B's checkpoint: refused, B's checkpoint untouched.
    let wrong = a.commit(&handle, &handle, a_out, Some(ckpt.clone())).await;
    match &wrong {
        Err(e @ ops_datamig::MigrationError::InvalidInput(_)) => {
            let message = e.to_string();
            assert!(message.contains("records another job"), "{message}");
            // None of the other job's counts or advice (review finding: "13 batches of this
            // job are already committed: empty the destination").
            assert!(!message.contains("already committed"), "{message}");
        }
        other => anyhow::bail!("want a refusal of B's checkpoint: {other:?}"),
    }
    let state: Value = serde_json::from_str(&std::fs::read_to_string(&ckpt)?)?;
    assert_eq!(state["completed"], json!(false), "{state}");
    // B resumes with its checkpoint and completes: every row once.
    b.commit(&handle, &handle, b_out, Some(ckpt)).await?;
    let src = py_state("c", &db.props, "ab")?;
    for name in ["a", "b"] {
        let copied = ops_tests::oracle::pyiceberg(
            "c",
            &db.props,
            &format!("t = catalog.load_table('ab.{name}')\nemit(sorted(r['id'] for r in rows(t)))"),
        )?;
        assert_eq!(copied, json!(ids(&src)), "ab.{name}");
    }

    // Job C is abandoned before its commit: refused, nothing committed.
    let c = plan_of("c").await?;
    let c_out = run_tasks(&handle, &c).await?;
    let c_ident = TableIdent::from_strs(["ab", "c"])?;
    ops_core::ops::markers::clear_running_marker(&handle, &c_ident, &c.job_id).await?;
    let refused = c.commit(&handle, &handle, c_out, None).await;
    let message = match &refused {
        Err(e @ ops_datamig::MigrationError::InvalidInput(_)) => e.to_string(),
        other => anyhow::bail!("want the abandoned job refused: {other:?}"),
    };
    assert!(message.contains("abandon-migration"), "{message}");
    assert!(
        message.to_lowercase().contains("nothing was committed"),
        "{message}"
    );
    let table = handle.catalog().load_table(&c_ident).await?;
    assert!(table.metadata().current_snapshot().is_none());
    Ok(())
}

/// A filtered job's tasks yield fewer batches than their ranges (gaps in the batch numbers): a
/// commit that stopped part-way and is repeated commits the rest — a gap among the landed
/// batches is no sign that the job completed (review finding: it was taken for expired batches,
/// and the repeated commit reported the job complete with rows missing).
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_job_stopped_part_way_commits_the_rest() -> TestResult {
    let CopyJob {
        db,
        handle,
        source,
        dest,
    } = copy_job("gap").await?;
    let plan = copy_migrator(&handle, &source, &dest)
        .batch_rows(1)
        // Half of each `eu` file matches: the files are rewritten, not copied whole, and each
        // yields fewer batches than its range.
        .row_filter("amount IS NULL")
        .plan()
        .await?;
    let outputs = run_tasks(&handle, &plan).await?;
    let batches: Vec<u64> = outputs
        .iter()
        .flat_map(|o| o.batches.iter().map(|b| b.index))
        .collect();
    assert!(
        batches.windows(2).any(|w| w[1] > w[0] + 1),
        "no gap in the batch numbers: {batches:?} of tasks {:?}",
        plan.tasks
            .iter()
            .map(|t| (t.first_batch, t.max_batches, t.files.len()))
            .collect::<Vec<_>>()
    );
    // The outputs of the first half of the tasks, then the stream fails (an executor lost);
    // the batches it commits have a gap.
    let half = outputs.len() / 2;
    let committed: Vec<u64> = outputs[..half]
        .iter()
        .flat_map(|o| o.batches.iter().map(|b| b.index))
        .collect();
    assert!(
        committed.windows(2).any(|w| w[1] > w[0] + 1),
        "no gap in the first half's batch numbers: {committed:?}"
    );
    let first: Vec<ops_datamig::Result<ops_datamig::TaskOutput>> = outputs[..half]
        .iter()
        .cloned()
        .map(Ok)
        .chain(std::iter::once(Err(
            ops_datamig::MigrationError::InvalidInput("executor lost".into()),
        )))
        .collect();
    let stopped = plan
        .commit_stream(&handle, &handle, futures::stream::iter(first), None)
        .await;
    assert!(stopped.is_err(), "{stopped:?}");
    let r = plan.commit(&handle, &handle, outputs, None).await?;
    assert!(!r.new_snapshots.is_empty(), "{r:?}");
    let src = py_state("c", &db.props, "gap")?;
    let want: Vec<i64> = src["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["amount"].is_null())
        .filter_map(|r| r["id"].as_i64())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let copied = copied_ids(&db.props, "gap.copy")?;
    assert_eq!(copied, json!(want));
    Ok(())
}

/// `where` prunes by partition values too (through the spec's transforms), as Java's filtered
/// scan does: a file of another `bucket(2, id)` partition whose `id` bounds merely span the
/// value is left out, not rewritten with the matching partition's.
#[tokio::test(flavor = "multi_thread")]
async fn a_filter_on_a_bucketed_column_picks_its_partition_only() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "bkt").await?;
    let ident = table.identifier().clone();
    ops_core::ops::evolve_spec::EvolveSpecBuilder::new(&handle, ident.clone())
        .add_field("id", iceberg::spec::Transform::Bucket(2), None)
        .await?;
    // Three appends of ids 1..=12 in region eu: each writes a file per bucket, and each
    // bucket's files span about 1..12 in `id`.
    for _ in 0..3 {
        let rows: Vec<_> = (1..=12i64).map(|id| (id, Some("eu"), Some(1))).collect();
        append(&handle, &ident, &rows).await?;
    }
    let plan = |filter: Option<String>| {
        let mut b = CompactBuilder::new(&handle, ident.clone())
            .min_input_files(2)
            .dry_run(true);
        if let Some(f) = filter {
            b = b.with_filter_text(f);
        }
        b
    };
    let (_, all) = plan(None).await?;
    assert_eq!(all.groups.len(), 2, "one group per bucket: {all:?}");
    for id in 3..=10 {
        let (_, m) = plan(Some(format!("id = {id}"))).await?;
        assert_eq!(m.groups.len(), 1, "id = {id}: {m:?}");
        assert_eq!(m.input_files(), 3, "id = {id}: {m:?}");
    }
    // The compaction itself: the matching bucket's three files become one, the rows stay.
    let before = py_state("c", &db.props, "bkt")?;
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .with_filter_text("id = 5")
        .await?;
    assert_eq!((m.input_files(), m.output_files()), (3, 1), "{m:?}");
    let after = py_state("c", &db.props, "bkt")?;
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["files"], json!(4));
    Ok(())
}

/// A completed job whose every snapshot was expired since (another writer appended, then a
/// routine expiry kept only the current snapshot): committing its outputs again finds no batch
/// of it in the history, yet commits nothing — its completion record, set when it completed,
/// says it is over. Before, every row was appended a second time.
#[tokio::test(flavor = "multi_thread")]
async fn a_completed_job_whose_snapshots_were_all_expired_is_not_committed_again() -> TestResult {
    let job = copy_job("gone").await?;
    let (plan, outputs) = job.planned(|m| m).await?;
    let CopyJob {
        db, handle, dest, ..
    } = job;
    plan.commit(&handle, &handle, outputs.clone(), None).await?;
    append(&handle, &dest, &[(1000, Some("eu"), Some(1))]).await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let (table, _) =
        ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, dest.clone())
            .older_than_ms(now + 1)
            .retain_last(1)
            .await?;
    assert_eq!(table.metadata().snapshots().count(), 1);

    let again = plan.commit(&handle, &handle, outputs, None).await;
    let Err(ops_datamig::MigrationError::AlreadyComplete { why, .. }) = &again else {
        anyhow::bail!("want the job complete: {again:?}");
    };
    assert!(why.contains("completion record"), "{why}");
    let src = py_state("c", &db.props, "gone")?;
    let mut want = ids(&src);
    want.push(1000);
    want.sort_unstable();
    let copied = copied_ids(&db.props, "gone.copy")?;
    assert_eq!(copied, json!(want), "rows committed twice");
    Ok(())
}

/// An unfinished job whose first batches' snapshots another engine expired (forced past its
/// marker): the repeated commit takes a batch missing before a landed one for landed, and
/// commits the rest — each row once.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_job_whose_early_snapshots_were_expired_commits_the_rest_once() -> TestResult {
    stopped_job_with_early_snapshots_expired("early", false).await
}

/// The same with a checkpoint: its earlier batches' snapshots are gone from the history, but
/// its newest is there, so they were expired, not rolled back — the resume goes on (review
/// finding: any checkpointed snapshot missing was refused as a rollback).
#[tokio::test(flavor = "multi_thread")]
async fn a_checkpointed_job_whose_early_snapshots_were_expired_resumes() -> TestResult {
    stopped_job_with_early_snapshots_expired("earlyck", true).await
}

async fn stopped_job_with_early_snapshots_expired(ns: &str, checkpointed: bool) -> TestResult {
    let dir = tempfile::tempdir()?;
    let checkpoint = checkpointed.then(|| dir.path().join("job.ckpt"));
    let job = copy_job(ns).await?;
    let (plan, outputs) = job.planned(|m| m).await?;
    let CopyJob {
        db, handle, dest, ..
    } = job;
    let half = outputs.len() / 2;
    let first: Vec<ops_datamig::Result<ops_datamig::TaskOutput>> = outputs[..half]
        .iter()
        .cloned()
        .map(Ok)
        .chain(std::iter::once(Err(
            ops_datamig::MigrationError::InvalidInput("executor lost".into()),
        )))
        .collect();
    let stopped = plan
        .commit_stream(
            &handle,
            &handle,
            futures::stream::iter(first),
            checkpoint.clone(),
        )
        .await;
    let Err(stopped) = stopped else {
        anyhow::bail!("the stream's failure did not stop the commit");
    };
    let table = handle.catalog().load_table(&dest).await?;
    let mut batch_snapshots: Vec<(i64, i64)> = table
        .metadata()
        .snapshots()
        .filter(|s| {
            s.summary()
                .additional_properties
                .contains_key("iceberg-ops.migration-batch")
        })
        .map(|s| (s.sequence_number(), s.snapshot_id()))
        .collect();
    batch_snapshots.sort_unstable();
    assert!(batch_snapshots.len() >= 2, "{stopped}: {batch_snapshots:?}");
    // Every landed batch's snapshot but the newest goes.
    let early: Vec<i64> = batch_snapshots[..batch_snapshots.len() - 1]
        .iter()
        .map(|(_, id)| *id)
        .collect();
    ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, dest.clone())
        .snapshot_ids(early)
        .force(true)
        .await?;
    plan.commit(&handle, &handle, outputs, checkpoint).await?;
    let src = py_state("c", &db.props, ns)?;
    let copied = copied_ids(&db.props, &format!("{ns}.copy"))?;
    assert_eq!(copied, json!(ids(&src)), "each row once");
    Ok(())
}
