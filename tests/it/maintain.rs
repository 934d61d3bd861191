//! `maintain` (issue 35) on a namespace of ten tables, each built to need one kind of care or
//! none, or to be left alone: exactly the due work runs, PyIceberg reads the same rows
//! everywhere, a second run commits nothing, a writer racing a compaction loses no row; on
//! SQLite, REST and Glue (moto), and an S3 Tables table (moto) left to the service.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use iceberg::TableIdent;
use iceberg::spec::Transform;
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::markers::mark_running_marker;
use ops_maintenance::BeforeCommitHook;
use ops_maintenance::maintain::{
    MaintainBuilder, MaintainReport, State, TableOutcome, TableRun, TaskStatus, state_key,
};
use serde_json::Value;

use crate::commit_layer::{commit_position_delete, commit_spark_position_delete};
use crate::common::*;
use crate::health::{append, orders_table, rows};

const MIB: (&str, &str) = ("write.target-file-size-bytes", "1048576");

fn region(r: &str) -> iceberg::spec::Struct {
    iceberg::spec::Struct::from_iter([Some(iceberg::spec::Literal::string(r))])
}

async fn first_path(
    handle: &CatalogHandle,
    ident: &TableIdent,
    region: &str,
) -> anyhow::Result<String> {
    let table = handle.catalog().load_table(ident).await?;
    let cache = ops_core::ops::ManifestCache::new(&table);
    ops_core::ops::live_data_files(&table, &cache)
        .await?
        .into_iter()
        .find(|f| {
            f.file.partition().fields().first().cloned().flatten()
                == Some(iceberg::spec::Literal::string(region))
        })
        .map(|f| f.file.file_path().to_string())
        .ok_or_else(|| anyhow::anyhow!("no file of {region} in {ident}"))
}

fn local(path: &str) -> PathBuf {
    PathBuf::from(path.strip_prefix("file://").unwrap_or(path))
}

/// A file under `dir` last modified `age` ago.
fn aged_file(path: &std::path::Path, age: Duration) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, b"not referenced by any metadata")?;
    let f = std::fs::File::options().write(true).open(path)?;
    f.set_modified(SystemTime::now() - age)?;
    Ok(())
}

/// The ten tables of namespace `ns`, by what they need.
struct Ten {
    tables: Vec<TableIdent>,
    old_orphan: PathBuf,
    young_orphan: PathBuf,
}

async fn ten_tables(handle: &CatalogHandle, ns: &str) -> anyhow::Result<Ten> {
    let mut tables = Vec::new();
    // 1: small files.
    let t = orders_table(handle, ns, "t01_small", &[MIB]).await?;
    for i in 0..6 {
        append(handle, &t, &rows(i * 10, 10, "eu")).await?;
    }
    tables.push(t);
    // 2: healthy.
    let t = orders_table(handle, ns, "t02_healthy", &[MIB]).await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    tables.push(t);
    // 3: position deletes past 20%.
    let t = orders_table(handle, ns, "t03_deletes", &[MIB]).await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    let path = first_path(handle, &t, "eu").await?;
    let table = handle.catalog().load_table(&t).await?;
    commit_spark_position_delete(handle, &table, &path, region("eu"), &[1, 2, 3]).await?;
    tables.push(t);
    // 4: snapshots past retention.
    let t = orders_table(
        handle,
        ns,
        "t04_expiry",
        &[MIB, ("history.expire.max-snapshot-age-ms", "1")],
    )
    .await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    append(handle, &t, &rows(10, 10, "eu")).await?;
    tables.push(t);
    // 5: a dangling delete.
    let t = orders_table(handle, ns, "t05_dangling", &[MIB]).await?;
    append(
        handle,
        &t,
        &[rows(0, 10, "eu"), rows(10, 10, "us")].concat(),
    )
    .await?;
    let us = first_path(handle, &t, "us").await?;
    let table = handle.catalog().load_table(&t).await?;
    commit_position_delete(handle, &table, &us, region("us"), &[0]).await?;
    DeleteBuilder::new(handle, t.clone())
        .with_filter_text("region = 'us'")
        .await?;
    tables.push(t);
    // 6: small files, but an unfinished migration writes to it.
    let t = orders_table(handle, ns, "t06_migrating", &[MIB]).await?;
    for i in 0..6 {
        append(handle, &t, &rows(i * 10, 10, "eu")).await?;
    }
    mark_running_marker(handle, &t, "job-1").await?;
    tables.push(t);
    // 7: a reference copy (gc.enabled=false, as an import's snapshot), snapshots past retention.
    let t = orders_table(
        handle,
        ns,
        "t07_reference",
        &[
            MIB,
            ("gc.enabled", "false"),
            ("history.expire.max-snapshot-age-ms", "1"),
        ],
    )
    .await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    append(handle, &t, &rows(10, 10, "eu")).await?;
    tables.push(t);
    // 8: small files, maintenance switched off.
    let t = orders_table(
        handle,
        ns,
        "t08_disabled",
        &[MIB, ("iceberg-ops.maintain.enabled", "false")],
    )
    .await?;
    for i in 0..6 {
        append(handle, &t, &rows(i * 10, 10, "eu")).await?;
    }
    tables.push(t);
    // 9: files of an older spec (reported by health; not maintenance's to change).
    let t = orders_table(handle, ns, "t09_old_spec", &[MIB]).await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    EvolveSpecBuilder::new(handle, t.clone())
        .add_field("amount", Transform::Bucket(4), None)
        .await?;
    tables.push(t);
    // 10: orphan files, one old, one young.
    let t = orders_table(handle, ns, "t10_orphans", &[MIB]).await?;
    append(handle, &t, &rows(0, 10, "eu")).await?;
    let table = handle.catalog().load_table(&t).await?;
    let data = local(table.metadata().location()).join("data");
    let old_orphan = data.join("region=eu/00000-orphan-old.parquet");
    let young_orphan = data.join("region=eu/00000-orphan-young.parquet");
    aged_file(&old_orphan, Duration::from_secs(10 * 86_400))?;
    aged_file(&young_orphan, Duration::from_secs(3600))?;
    tables.push(t);
    tokio::time::sleep(Duration::from_millis(5)).await;
    Ok(Ten {
        tables,
        old_orphan,
        young_orphan,
    })
}

/// Rows of every table of `ns` as PyIceberg reads them.
fn py_rows(name: &str, p: &BTreeMap<String, String>, ns: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        name,
        p,
        &format!(
            "out = {{}}\n\
             for ident in sorted(catalog.list_tables('{ns}')):\n\
             \x20   out['.'.join(ident)] = rows(catalog.load_table(ident))\n\
             emit(out)"
        ),
    )
}

/// Each table's current snapshot id.
async fn heads(
    handle: &CatalogHandle,
    tables: &[TableIdent],
) -> anyhow::Result<HashMap<String, Option<i64>>> {
    let mut out = HashMap::new();
    for t in tables {
        let table = handle.catalog().load_table(t).await?;
        out.insert(t.to_string(), table.metadata().current_snapshot_id());
    }
    Ok(out)
}

/// (table, outcome, [(task, status)]) of a report.
type Summary = (String, TableOutcome, Vec<(String, TaskStatus)>);

fn summary(r: &MaintainReport) -> Vec<Summary> {
    r.tables
        .iter()
        .map(|t: &TableRun| {
            (
                t.table.rsplit('.').next().unwrap_or_default().to_string(),
                t.outcome,
                t.tasks.iter().map(|k| (k.task.clone(), k.status)).collect(),
            )
        })
        .collect()
}

fn task(name: &str, status: TaskStatus) -> (String, TaskStatus) {
    (name.to_string(), status)
}

/// The state file with every table's orphan cleanup just run, but `except`'s.
async fn fresh_state(
    dir: &std::path::Path,
    handle: &CatalogHandle,
    tables: &[TableIdent],
    except: &str,
) -> anyhow::Result<PathBuf> {
    let path = dir.join("maintain-state.json");
    let state = State::at(&path)?;
    let now = ops_core::run_mark::now_ms();
    for t in tables.iter().filter(|t| t.name() != except) {
        state.record_orphans(&state_key(handle, t), now).await?;
    }
    Ok(path)
}

async fn maintain_ten(
    handle: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let ns = "m";
    let ten = ten_tables(handle, ns).await?;
    let state_dir = tempfile::tempdir()?;
    let state = fresh_state(state_dir.path(), handle, &ten.tables, "t10_orphans").await?;
    let rows_before = py_rows(name, p, ns)?;
    let heads_before = heads(handle, &ten.tables).await?;

    use TableOutcome as O;
    use TaskStatus as S;
    // A dry run: the plan, nothing written.
    let dry = MaintainBuilder::new(handle, ten.tables.clone(), State::at(&state)?)
        .dry_run(true)
        .concurrency(3)
        .await?;
    let planned = vec![
        (
            "t01_small".into(),
            O::Planned,
            vec![task("compact", S::Planned)],
        ),
        ("t02_healthy".into(), O::NothingDue, vec![]),
        (
            "t03_deletes".into(),
            O::Planned,
            vec![task("compact", S::Planned)],
        ),
        (
            "t04_expiry".into(),
            O::Planned,
            vec![task("expire-snapshots", S::Planned)],
        ),
        (
            "t05_dangling".into(),
            O::Planned,
            vec![task("remove-dangling-deletes", S::Planned)],
        ),
        ("t06_migrating".into(), O::Skipped, vec![]),
        (
            "t07_reference".into(),
            O::Skipped,
            vec![task("expire-snapshots", S::Skipped)],
        ),
        ("t08_disabled".into(), O::Skipped, vec![]),
        ("t09_old_spec".into(), O::NothingDue, vec![]),
        (
            "t10_orphans".into(),
            O::Planned,
            vec![task("remove-orphans", S::Planned)],
        ),
    ];
    assert_eq!(summary(&dry), planned, "{dry:#?}");
    assert_eq!(heads(handle, &ten.tables).await?, heads_before);
    assert!(ten.old_orphan.exists());

    // The run: exactly the due work.
    let report = MaintainBuilder::new(handle, ten.tables.clone(), State::at(&state)?)
        .concurrency(3)
        .await?;
    let done = vec![
        (
            "t01_small".into(),
            O::Maintained,
            vec![task("compact", S::Done)],
        ),
        ("t02_healthy".into(), O::NothingDue, vec![]),
        (
            "t03_deletes".into(),
            O::Maintained,
            vec![task("compact", S::Done)],
        ),
        (
            "t04_expiry".into(),
            O::Maintained,
            vec![task("expire-snapshots", S::Done)],
        ),
        (
            "t05_dangling".into(),
            O::Maintained,
            vec![task("remove-dangling-deletes", S::Done)],
        ),
        ("t06_migrating".into(), O::Skipped, vec![]),
        (
            "t07_reference".into(),
            O::Skipped,
            vec![task("expire-snapshots", S::Skipped)],
        ),
        ("t08_disabled".into(), O::Skipped, vec![]),
        ("t09_old_spec".into(), O::NothingDue, vec![]),
        (
            "t10_orphans".into(),
            O::Maintained,
            vec![task("remove-orphans", S::Done)],
        ),
    ];
    assert_eq!(summary(&report), done, "{report:#?}");
    assert!(!report.any_failed());
    let by_name = |n: &str| {
        report
            .tables
            .iter()
            .find(|t| t.table.ends_with(n))
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("{n} missing"))
    };
    let small = by_name("t01_small")?;
    let (before, after) = (
        small.before.unwrap_or_default(),
        small.after.unwrap_or_default(),
    );
    assert_eq!((before.data_files, after.data_files), (6, 1), "{small:?}");
    let dangling = by_name("t05_dangling")?;
    assert_eq!(
        dangling.after.map(|a| a.delete_files),
        Some(0),
        "{dangling:?}"
    );
    assert!(
        by_name("t06_migrating")?
            .reason
            .unwrap_or_default()
            .contains("job-1")
    );
    assert!(
        by_name("t08_disabled")?
            .reason
            .unwrap_or_default()
            .contains("iceberg-ops.maintain.enabled=false")
    );
    assert!(!ten.old_orphan.exists(), "the old orphan was deleted");
    assert!(
        ten.young_orphan.exists(),
        "a file under 3 days old is never deleted"
    );
    let expiry = by_name("t04_expiry")?;
    assert_eq!(
        (
            expiry.before.map(|b| b.snapshots),
            expiry.after.map(|a| a.snapshots)
        ),
        (Some(2), Some(1))
    );
    // The reference copy keeps its snapshots: none of its files may be deleted.
    let reference = handle.catalog().load_table(&ten.tables[6]).await?;
    assert_eq!(reference.metadata().snapshots().count(), 2);

    // Rows as PyIceberg reads them: unchanged everywhere.
    assert_eq!(py_rows(name, p, ns)?, rows_before);

    // A second run right after: nothing due, nothing committed.
    let heads_after = heads(handle, &ten.tables).await?;
    let again = MaintainBuilder::new(handle, ten.tables.clone(), State::at(&state)?)
        .concurrency(3)
        .await?;
    for t in &again.tables {
        assert!(
            matches!(t.outcome, O::NothingDue | O::Skipped)
                && t.tasks.iter().all(|k| k.status == S::Skipped),
            "a second run did work: {t:#?}"
        );
    }
    assert_eq!(heads(handle, &ten.tables).await?, heads_after);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn maintain_ten_tables_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    maintain_ten(&handle, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn maintain_ten_tables_on_rest() -> TestResult {
    init_tracing();
    let rustberg = ops_tests::servers::Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("r", &p).await?;
    maintain_ten(&handle, "r", &p).await
}

/// A writer appending while `maintain` compacts: the compaction rebases onto the append and
/// every row of both is there.
#[tokio::test(flavor = "multi_thread")]
async fn a_writer_racing_maintain_loses_no_row() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let t = orders_table(&handle, "race", "orders", &[MIB]).await?;
    for i in 0..6 {
        append(&handle, &t, &rows(i * 10, 10, "eu")).await?;
    }
    let dir = tempfile::tempdir()?;
    let state = fresh_state(dir.path(), &handle, std::slice::from_ref(&t), "").await?;
    let (h, ident) = (handle.clone(), t.clone());
    let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let once = fired.clone();
    let hook: BeforeCommitHook = Arc::new(move || {
        let (h, ident, once) = (h.clone(), ident.clone(), once.clone());
        Box::pin(async move {
            if !once.swap(true, std::sync::atomic::Ordering::SeqCst) {
                let _ = append(&h, &ident, &rows(1000, 10, "eu")).await;
            }
        })
    });
    let report = MaintainBuilder::new(&handle, vec![t.clone()], State::at(&state)?)
        .before_commit(hook)
        .await?;
    assert!(fired.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(
        summary(&report)[0].2,
        vec![task("compact", TaskStatus::Done)],
        "{report:#?}"
    );
    let got = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "emit(sorted(r['id'] for r in rows(catalog.load_table('race.orders'))))",
    )?;
    let want: Vec<i64> = (0..60).chain(1000..1010).collect();
    assert_eq!(got, serde_json::json!(want));
    Ok(())
}

/// A table whose compaction fails (a data file gone from storage) fails alone: the others are
/// maintained, and the report says which failed and why.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_table_leaves_the_others_done() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let mut tables = Vec::new();
    for name in ["a", "broken", "c"] {
        let t = orders_table(&handle, "fail", name, &[MIB]).await?;
        for i in 0..6 {
            append(&handle, &t, &rows(i * 10, 10, "eu")).await?;
        }
        tables.push(t);
    }
    let lost = first_path(&handle, &tables[1], "eu").await?;
    std::fs::remove_file(local(&lost))?;
    let dir = tempfile::tempdir()?;
    let state = fresh_state(dir.path(), &handle, &tables, "").await?;
    let report = MaintainBuilder::new(&handle, tables.clone(), State::at(&state)?)
        .concurrency(2)
        .await?;
    let outcomes: Vec<(String, TableOutcome)> = summary(&report)
        .into_iter()
        .map(|(t, o, _)| (t, o))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("a".into(), TableOutcome::Maintained),
            ("broken".into(), TableOutcome::Failed),
            ("c".into(), TableOutcome::Maintained),
        ],
        "{report:#?}"
    );
    assert!(report.any_failed());
    let broken = &report.tables[1];
    assert!(
        broken.tasks[0].status == TaskStatus::Failed
            && broken.reason.as_deref() == Some("compact failed"),
        "{broken:#?}"
    );
    Ok(())
}

/// Glue (moto): health and maintain work on its tables; an S3 Tables table (moto) is left to
/// the service, saying so.
#[tokio::test(flavor = "multi_thread")]
async fn maintain_on_glue_and_s3_tables() -> TestResult {
    init_tracing();
    let (_moto, p) = ops_tests::servers::glue_on_moto();
    let handle = open("g", &p).await?;
    let t = orders_table(&handle, "gm", "orders", &[MIB]).await?;
    for i in 0..6 {
        append(&handle, &t, &rows(i * 10, 10, "eu")).await?;
    }
    let before =
        ops_tests::oracle::pyiceberg("g", &p, "emit(rows(catalog.load_table('gm.orders')))")?;
    let h = crate::health::health(&handle, &t).await?;
    assert_eq!(h.due.compact_partitions, 1, "{h:?}");
    let dir = tempfile::tempdir()?;
    let state = fresh_state(dir.path(), &handle, std::slice::from_ref(&t), "").await?;
    let report = MaintainBuilder::new(&handle, vec![t.clone()], State::at(&state)?).await?;
    assert_eq!(
        summary(&report)[0].2,
        vec![task("compact", TaskStatus::Done)],
        "{report:#?}"
    );
    let after =
        ops_tests::oracle::pyiceberg("g", &p, "emit(rows(catalog.load_table('gm.orders')))")?;
    assert_eq!(before, after);
    let again = MaintainBuilder::new(&handle, vec![t.clone()], State::at(&state)?).await?;
    assert_eq!(
        again.tables[0].outcome,
        TableOutcome::NothingDue,
        "{again:#?}"
    );

    // S3 Tables.
    let (_s3t, sp) = s3tables_on_moto("maintained");
    let s3 = open("s3t", &sp).await?;
    let st = orders_table(&s3, "sm", "orders", &[]).await?;
    append(&s3, &st, &rows(0, 10, "eu")).await?;
    let report = MaintainBuilder::new(&s3, vec![st.clone()], State::at(&state)?).await?;
    assert_eq!(
        report.tables[0].outcome,
        TableOutcome::Skipped,
        "{report:#?}"
    );
    assert!(
        report.tables[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("S3 Tables"),
        "{report:#?}"
    );
    Ok(())
}

/// Maintains `t`: `first` then the expiry its commit made due, in one run; a second run finds
/// nothing due.
async fn first_then_expiry_then_nothing_due(
    handle: &CatalogHandle,
    t: &TableIdent,
    first: &str,
) -> TestResult {
    let dir = tempfile::tempdir()?;
    let state = fresh_state(dir.path(), handle, std::slice::from_ref(t), "").await?;
    let report = MaintainBuilder::new(handle, vec![t.clone()], State::at(&state)?).await?;
    assert_eq!(
        summary(&report)[0].2,
        vec![
            task(first, TaskStatus::Done),
            task("expire-snapshots", TaskStatus::Done)
        ],
        "{report:#?}"
    );
    let again = MaintainBuilder::new(handle, vec![t.clone()], State::at(&state)?).await?;
    assert_eq!(
        again.tables[0].outcome,
        TableOutcome::NothingDue,
        "{again:#?}"
    );
    Ok(())
}

/// A compaction's commit can make the snapshot it replaced expirable at once (a retention of
/// a second): the same run expires it, and a second run finds nothing to do.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_is_judged_again_after_a_compaction() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let t = orders_table(
        &handle,
        "again",
        "orders",
        &[MIB, ("history.expire.max-snapshot-age-ms", "1000")],
    )
    .await?;
    // Six files in one snapshot: compaction is due, expiry is not (one snapshot, kept).
    let table = handle.catalog().load_table(&t).await?;
    let mut files = Vec::new();
    for i in 0..6 {
        let batch = orders_batch(&table, &rows(i * 10, 10, "eu"))?;
        files.extend(
            ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)])).await?,
        );
    }
    ops_core::ops::append::AppendBuilder::new(&handle, t.clone())
        .with_files(files)
        .await?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let h = crate::health::health(&handle, &t).await?;
    assert!(!h.due.expire && h.due.compact_partitions == 1, "{h:?}");
    first_then_expiry_then_nothing_due(&handle, &t, "compact").await
}

/// So can the commit of a dangling delete removal (fuzzer seed 107139, generator 2: the
/// table's one snapshot, replaced by that commit, was expired only by the next run). Here: a
/// Spark position delete naming a file the table never had, the history expired to that one
/// snapshot, a retention of a second.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_is_judged_again_after_a_dangling_delete_removal() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let t = orders_table(
        &handle,
        "again",
        "dangling",
        &[MIB, ("history.expire.max-snapshot-age-ms", "1000")],
    )
    .await?;
    append(&handle, &t, &rows(0, 10, "eu")).await?;
    let table = handle.catalog().load_table(&t).await?;
    let location = table
        .metadata()
        .location()
        .trim_end_matches('/')
        .to_string();
    let nowhere = format!("{location}/data/region=eu/never-written.parquet");
    commit_spark_position_delete(&handle, &table, &nowhere, region("eu"), &[0]).await?;
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)?
        .as_millis() as i64;
    ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, t.clone())
        .older_than_ms(now_ms + 1)
        .retain_last(1)
        .force(true)
        .await?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let h = crate::health::health(&handle, &t).await?;
    assert!(
        !h.due.expire && h.due.dangling_deletes && h.due.compact_partitions == 0,
        "{h:?}"
    );
    first_then_expiry_then_nothing_due(&handle, &t, "remove-dangling-deletes").await
}

/// Work a compaction leaves for a second pass is done in the same run: a position delete
/// without `file_path` bounds that only the rewrite made dangle (its outputs came after it),
/// and files of an older spec rewritten group by group into the current one. A second run
/// commits nothing.
#[tokio::test(flavor = "multi_thread")]
async fn one_run_leaves_nothing_due() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    // An unbounded position delete of 3 rows of 20 in one partition's two files.
    let pos = orders_table(&handle, "once", "pos", &[MIB]).await?;
    append(&handle, &pos, &rows(0, 10, "eu")).await?;
    append(&handle, &pos, &rows(10, 10, "eu")).await?;
    let path = first_path(&handle, &pos, "eu").await?;
    let table = handle.catalog().load_table(&pos).await?;
    commit_position_delete(&handle, &table, &path, region("eu"), &[0, 1, 2, 3, 4]).await?;
    // Small files of five regions under an older spec, then a bucket field added.
    let spec = orders_table(&handle, "once", "spec", &[MIB]).await?;
    for (i, r) in ["eu", "us", "ap", "sa", "af"].into_iter().enumerate() {
        append(&handle, &spec, &rows(i as i64 * 10, 10, r)).await?;
    }
    EvolveSpecBuilder::new(&handle, spec.clone())
        .add_field("amount", Transform::Bucket(2), None)
        .await?;
    let before = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "emit({t: rows(catalog.load_table('once.' + t)) for t in ['pos', 'spec']})",
    )?;
    let policy = ops_maintenance::policy::Policy::parse(
        "[defaults]\nmin-input-files = 2\nrewrite-old-spec-files = true\n",
        "test",
    )?;
    let dir = tempfile::tempdir()?;
    let tables = vec![pos.clone(), spec.clone()];
    let state = fresh_state(dir.path(), &handle, &tables, "").await?;
    let report = MaintainBuilder::new(&handle, tables.clone(), State::at(&state)?)
        .policy(policy.clone())
        .await?;
    for t in &report.tables {
        assert_eq!(t.outcome, TableOutcome::Maintained, "{report:#?}");
    }
    let pos_after = crate::health::health(&handle, &pos).await?;
    assert_eq!(
        (pos_after.deletes.position.files, pos_after.data.files),
        (0, 1),
        "{:?} {:?}",
        pos_after.deletes,
        pos_after.data
    );
    let spec_after = crate::health::health(&handle, &spec).await?;
    assert_eq!(spec_after.data.other_spec.files, 0, "{:?}", spec_after.data);
    let after = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "emit({t: rows(catalog.load_table('once.' + t)) for t in ['pos', 'spec']})",
    )?;
    assert_eq!(after, before);
    let heads_after = heads(&handle, &tables).await?;
    let again = MaintainBuilder::new(&handle, tables.clone(), State::at(&state)?)
        .policy(policy)
        .await?;
    for t in &again.tables {
        assert_eq!(t.outcome, TableOutcome::NothingDue, "{again:#?}");
    }
    assert_eq!(heads(&handle, &tables).await?, heads_after);
    Ok(())
}

/// Told to stop (the CLI's SIGINT or SIGTERM) before the run: no table is touched, each is
/// reported skipped as interrupted; told to stop after the first table's compaction (the hook
/// between its plan and its commit), that compaction lands and the table's other due work and
/// the tables after it are not started.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_maintain_starts_nothing_more() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let ten = ten_tables(&handle, "stop").await?;
    let dir = tempfile::tempdir()?;
    let state = fresh_state(dir.path(), &handle, &ten.tables, "").await?;
    let heads_before = heads(&handle, &ten.tables).await?;
    let (tx, rx) = tokio::sync::watch::channel(true);
    let report = MaintainBuilder::new(&handle, ten.tables.clone(), State::at(&state)?)
        .stop_on(rx)
        .await?;
    for t in &report.tables {
        assert_eq!(t.outcome, TableOutcome::Skipped, "{t:?}");
        assert_eq!(t.reason.as_deref(), Some("interrupted before it started"));
    }
    assert_eq!(heads(&handle, &ten.tables).await?, heads_before);
    drop(tx);

    // Stopped while the first due table compacts (one table at a time).
    let (tx, rx) = tokio::sync::watch::channel(false);
    let tx = Arc::new(tx);
    let hook: ops_maintenance::BeforeCommitHook = {
        let tx = tx.clone();
        Arc::new(move || {
            let tx = tx.clone();
            Box::pin(async move {
                let _ = tx.send(true);
            })
        })
    };
    let report = MaintainBuilder::new(&handle, ten.tables.clone(), State::at(&state)?)
        .stop_on(rx)
        .before_commit(hook)
        .await?;
    let ran: Vec<&str> = report
        .tables
        .iter()
        .filter(|t| t.tasks.iter().any(|k| k.status == TaskStatus::Done))
        .map(|t| t.table.as_str())
        .collect();
    assert_eq!(ran.len(), 1, "{report:#?}");
    let after: Vec<&str> = report
        .tables
        .iter()
        .filter(|t| t.reason.as_deref() == Some("interrupted before it started"))
        .map(|t| t.table.as_str())
        .collect();
    assert!(!after.is_empty(), "{report:#?}");
    Ok(())
}
