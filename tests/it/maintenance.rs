//! Snapshot expiry and orphan cleanup (issue 18) on SQLite and REST, read back by PyIceberg:
//! rows unchanged, the snapshots left, and which files are still on disk.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use iceberg::spec::{SnapshotReference, SnapshotRetention};
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement, TableUpdate};
use ops_core::CatalogHandle;
use ops_core::commit::{TableChange, commit_metadata_change};
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::markers::{MIGRATION_JOB_PROPERTY, mark_running};
use ops_core::ops::properties::PropertiesBuilder;
use ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder;
use ops_maintenance::remove_orphans::RemoveOrphansBuilder;
use ops_tests::servers::Rustberg;
use serde_json::{Value, json};

use crate::common::*;

type Row = (i64, Option<&'static str>, Option<i32>);

async fn append(handle: &CatalogHandle, ident: &TableIdent, rows: &[Row]) -> anyhow::Result<i64> {
    append_orders(handle, ident, rows).await
}

async fn set_ref(
    handle: &CatalogHandle,
    ident: &TableIdent,
    name: &str,
    snapshot_id: i64,
    tag: bool,
) -> anyhow::Result<()> {
    commit_metadata_change(handle, ident, |md| {
        let retention = if tag {
            SnapshotRetention::Tag {
                max_ref_age_ms: None,
            }
        } else {
            SnapshotRetention::branch(None, None, None)
        };
        Ok(Some(TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates: vec![TableUpdate::SetSnapshotRef {
                ref_name: name.to_string(),
                reference: SnapshotReference::new(snapshot_id, retention),
            }],
            ..Default::default()
        }))
    })
    .await?;
    Ok(())
}

async fn drop_ref(handle: &CatalogHandle, ident: &TableIdent, name: &str) -> anyhow::Result<()> {
    commit_metadata_change(handle, ident, |md| {
        Ok(Some(TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates: vec![TableUpdate::RemoveSnapshotRef {
                ref_name: name.to_string(),
            }],
            ..Default::default()
        }))
    })
    .await?;
    Ok(())
}

fn local(path: &str) -> PathBuf {
    PathBuf::from(
        path.strip_prefix("file://")
            .or_else(|| path.strip_prefix("file:"))
            .unwrap_or(path),
    )
}

/// Every file a snapshot of `table` needs: manifest lists, manifests, live data/delete files.
async fn needed_files(table: &Table) -> anyhow::Result<HashSet<String>> {
    let mut out = HashSet::new();
    for s in table.metadata().snapshots() {
        out.insert(s.manifest_list().to_string());
        for mf in table.manifest_list_reader(s).load().await?.entries() {
            out.insert(mf.manifest_path.clone());
            for e in mf.load_manifest(table.file_io()).await?.entries() {
                if e.is_alive() {
                    out.insert(e.data_file().file_path().to_string());
                }
            }
        }
    }
    Ok(out)
}

async fn all_needed_exist(table: &Table) -> TestResult {
    for f in needed_files(table).await? {
        assert!(
            local(&f).exists(),
            "{f} is needed by a retained snapshot but was deleted"
        );
    }
    Ok(())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Rows of main, rows at a snapshot, snapshot ids.
type Oracle = (Vec<Value>, Option<Vec<Value>>, Vec<i64>);

/// PyIceberg: the rows of main, of `snapshot` if given, and the snapshot ids.
fn oracle(
    name: &str,
    p: &BTreeMap<String, String>,
    ns: &str,
    snapshot: Option<i64>,
) -> anyhow::Result<Oracle> {
    let at = snapshot.map_or("None".to_string(), |s| s.to_string());
    let code = format!(
        "t = catalog.load_table('{ns}.orders')\n\
         at = {at}\n\
         emit({{'rows': rows(t), 'at': rows(t, at) if at is not None else None, \
                'snapshots': [s.snapshot_id for s in t.metadata.snapshots]}})"
    );
    let out = ops_tests::oracle::pyiceberg(name, p, &code)?;
    let mut rows = out["rows"].as_array().cloned().unwrap_or_default();
    sort_rows(&mut rows);
    let at = out["at"].as_array().cloned().map(|mut r| {
        sort_rows(&mut r);
        r
    });
    let mut ids: Vec<i64> = out["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    ids.sort_unstable();
    Ok((rows, at, ids))
}

/// Expiry with a tag and a branch holding old snapshots: they keep what they need, the files
/// only expired snapshots referenced are deleted once the refs are gone.
async fn expiry_with_refs(
    handle: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let ns = "exp";
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    let s1 = append(
        handle,
        &ident,
        &[(1, Some("us"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    let s2 = append(handle, &ident, &[(3, Some("us"), Some(3))]).await?;
    let eu_file: Vec<String> = {
        let t = handle.catalog().load_table(&ident).await?;
        needed_files(&t)
            .await?
            .into_iter()
            .filter(|f| f.contains("region=eu") && f.ends_with(".parquet"))
            .collect()
    };
    assert_eq!(eu_file.len(), 1, "{eu_file:?}");
    let eu_file = eu_file[0].clone();
    let _s3 = DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("region = 'eu'")
        .await?;
    let s4 = append(handle, &ident, &[(4, Some("apac"), Some(4))]).await?;
    set_ref(handle, &ident, "t1", s1, true).await?;
    set_ref(handle, &ident, "audit", s2, false).await?;
    let (rows_before, at_s1, ids_before) = oracle(name, p, ns, Some(s1))?;
    assert_eq!(ids_before.len(), 4);

    // Everything older than now may go, but the tag keeps s1 and the branch s2.
    let cutoff = now_ms() + 1;
    let dry = ExpireSnapshotsBuilder::new(handle, ident.clone())
        .older_than_ms(cutoff)
        .retain_last(1)
        .dry_run(true)
        .await?
        .1;
    let (table, m) = ExpireSnapshotsBuilder::new(handle, ident.clone())
        .older_than_ms(cutoff)
        .retain_last(1)
        .await?;
    assert_eq!(
        dry.expired_snapshots, m.expired_snapshots,
        "the dry run planned otherwise"
    );
    assert_eq!(m.expired_snapshots.len(), 1, "{m:?}");
    assert!(!m.expired_snapshots.contains(&s1) && !m.expired_snapshots.contains(&s2));
    assert!(local(&eu_file).exists(), "the tag still reads {eu_file}");
    assert!(m.deleted_data_files.is_empty(), "{m:?}");
    assert_eq!(m.deleted_manifest_lists.len(), 1, "{m:?}");
    all_needed_exist(&table).await?;
    let (rows, at, ids) = oracle(name, p, ns, Some(s1))?;
    assert_eq!(rows, rows_before);
    assert_eq!(at, at_s1, "the tag's snapshot reads differently");
    assert_eq!(ids.len(), 3);

    // Without the refs, s1 and s2 go too, and the eu file nothing retained reads.
    drop_ref(handle, &ident, "t1").await?;
    drop_ref(handle, &ident, "audit").await?;
    let (table, m) = ExpireSnapshotsBuilder::new(handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .await?;
    let mut expired = m.expired_snapshots.clone();
    expired.sort_unstable();
    let mut want = vec![s1, s2];
    want.sort_unstable();
    assert_eq!(expired, want);
    assert_eq!(m.deleted_data_files, vec![eu_file.clone()], "{m:?}");
    assert!(!local(&eu_file).exists());
    for f in m.deleted_manifests.iter().chain(&m.deleted_manifest_lists) {
        assert!(!local(f).exists(), "{f} was reported deleted");
    }
    all_needed_exist(&table).await?;
    let (rows, _, ids) = oracle(name, p, ns, None)?;
    assert_eq!(rows, rows_before, "expiry changed the rows");
    assert_eq!(ids, vec![s4]);
    // Older metadata files in the log still name the expired snapshots, whose manifest lists are
    // gone: orphan cleanup reads past them.
    let o = RemoveOrphansBuilder::new(handle, ident.clone())
        .older_than(Duration::from_secs(24 * 3600))
        .await?;
    assert!(o.orphans.is_empty(), "{o:?}");
    all_needed_exist(&handle.catalog().load_table(&ident).await?).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_keeps_what_branches_and_tags_need_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    expiry_with_refs(&handle, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_keeps_what_branches_and_tags_need_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("c", &p).await?;
    expiry_with_refs(&handle, "c", &p).await
}

/// A writer commits between expiry's plan and its commit: the expiry is re-planned on the
/// writer's result and the writer's snapshot and rows survive.
async fn expiry_racing_a_writer(
    a: &CatalogHandle,
    b: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let ns = "race";
    let table = create_orders(a, ns).await?;
    let ident = table.identifier().clone();
    for i in 0..3 {
        append(a, &ident, &[(i, Some("us"), Some(i as i32))]).await?;
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let racer: Arc<std::sync::Mutex<Option<i64>>> = Arc::default();
    let hook = {
        let (b, ident, calls, racer) = (b.clone(), ident.clone(), calls.clone(), racer.clone());
        Arc::new(move || {
            let (b, ident, calls, racer) = (b.clone(), ident.clone(), calls.clone(), racer.clone());
            Box::pin(async move {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    let id = append(&b, &ident, &[(100, Some("eu"), Some(100))])
                        .await
                        .unwrap_or_else(|e| panic!("the racing append failed: {e}"));
                    *racer.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
                }
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        })
    };
    let (table, m) = ExpireSnapshotsBuilder::new(a, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .before_commit(hook)
        .await?;
    let racer = racer
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .ok_or_else(|| anyhow::anyhow!("the racing writer did not run"))?;
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the expiry was not re-planned"
    );
    assert_eq!(table.metadata().current_snapshot_id(), Some(racer));
    assert!(!m.expired_snapshots.contains(&racer));
    // Re-planned on the writer's result: main's head is now the racer, its parents expire.
    assert_eq!(m.expired_snapshots.len(), 3, "{m:?}");
    all_needed_exist(&table).await?;
    let (rows, _, ids) = oracle(name, p, ns, None)?;
    let got: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
    let mut got = got;
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2, 100], "a row was lost");
    assert_eq!(ids, vec![racer]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_racing_a_writer_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (a, b) = (open("c", &db.props).await?, open("c", &db.props).await?);
    expiry_racing_a_writer(&a, &b, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_racing_a_writer_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let (a, b) = (open("c", &p).await?, open("c", &p).await?);
    expiry_racing_a_writer(&a, &b, "c", &p).await
}

/// gc.enabled=false: nothing deletes a file; --keep-files expires the metadata only.
#[tokio::test(flavor = "multi_thread")]
async fn gc_disabled_table_refuses_file_deletion() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "gc").await?;
    let ident = table.identifier().clone();
    for i in 0..3 {
        append(&handle, &ident, &[(i, Some("us"), Some(1))]).await?;
    }
    PropertiesBuilder::new(&handle, ident.clone())
        .set("gc.enabled", "false")
        .await?;
    let err = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("expiry deleted files of a gc.enabled=false table"))?;
    assert!(
        err.to_string()
            .contains("deleting files may corrupt other tables")
            && err.to_string().contains("--keep-files"),
        "{err}"
    );
    let err = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::ZERO)
        .force(true)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("orphan cleanup ran on a gc.enabled=false table"))?;
    assert!(
        err.to_string()
            .contains("deleting files may corrupt other tables"),
        "{err}"
    );

    let before = needed_files(&handle.catalog().load_table(&ident).await?).await?;
    let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .keep_files(true)
        .await?;
    assert_eq!(m.expired_snapshots.len(), 2);
    assert_eq!(table.metadata().snapshots().count(), 1);
    assert!(m.deleted_data_files.is_empty() && m.deleted_manifest_lists.is_empty());
    for f in before {
        assert!(local(&f).exists(), "--keep-files deleted {f}");
    }
    let (rows, _, ids) = oracle("c", &db.props, "gc", None)?;
    assert_eq!(rows.len(), 3);
    assert_eq!(ids.len(), 1);
    Ok(())
}

/// A migration job's marker stops maintenance unless forced.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_migration_stops_maintenance() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "mig").await?;
    let ident = table.identifier().clone();
    append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    append(&handle, &ident, &[(2, Some("us"), Some(1))]).await?;
    commit_metadata_change(&handle, &ident, |md| {
        Ok(mark_running(md, "job-42").map(|u| TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates: vec![u],
            ..Default::default()
        }))
    })
    .await?;
    let err = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("expiry ran under a migration"))?;
    assert!(err.to_string().contains("job-42"), "{err}");
    let err = RemoveOrphansBuilder::new(&handle, ident.clone())
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("orphan cleanup ran under a migration"))?;
    assert!(err.to_string().contains(MIGRATION_JOB_PROPERTY), "{err}");
    let (_, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .force(true)
        .await?;
    assert_eq!(m.expired_snapshots.len(), 1);
    ops_core::ops::markers::clear_running_marker(&handle, &ident, "job-42").await?;
    let t = handle.catalog().load_table(&ident).await?;
    assert!(ops_core::ops::markers::running_migrations(t.metadata()).is_empty());
    Ok(())
}

fn set_mtime(path: &Path, age: Duration) -> anyhow::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_modified(SystemTime::now() - age)?;
    Ok(())
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Orphan cleanup deletes a killed run's leftovers older than the threshold, keeps a younger
/// file and everything any metadata file in the log reaches, and nothing outside the location.
async fn orphans(handle: &CatalogHandle, name: &str, p: &BTreeMap<String, String>) -> TestResult {
    let ns = "orph";
    let table = create_orders(handle, ns).await?;
    let ident = table.identifier().clone();
    let s1 = append(
        handle,
        &ident,
        &[(1, Some("us"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    DeleteBuilder::new(handle, ident.clone())
        .with_filter_text("region = 'eu'")
        .await?;
    append(handle, &ident, &[(3, Some("apac"), Some(3))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let root = local(table.metadata().location());
    let (rows_before, at_s1, _) = oracle(name, p, ns, Some(s1))?;

    // A killed run's leftovers: a data file and a manifest no metadata references, old.
    let data_dir = root.join("data");
    std::fs::create_dir_all(data_dir.join("region=us"))?;
    let leftover = data_dir.join("region=us/00000-killed-run.parquet");
    std::fs::write(&leftover, b"PAR1 not committed")?;
    let leftover_manifest = root.join("metadata/killed-run-m0.avro");
    std::fs::write(&leftover_manifest, b"not committed")?;
    let young = data_dir.join("region=us/00001-being-written.parquet");
    std::fs::write(&young, b"PAR1 a writer is still at it")?;
    // Hidden files and directories (Java's hidden-path filter): never listed, never deleted.
    let hidden = [
        data_dir.join("_SUCCESS"),
        data_dir.join("region=us/.00000-killed-run.parquet.crc"),
        data_dir.join("_temporary/0/part-0.parquet"),
    ];
    for h in &hidden {
        if let Some(dir) = h.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(h, b"hidden")?;
    }
    // Outside the table location: never touched.
    let outside = root
        .parent()
        .map(|d| d.join("not-this-table.parquet"))
        .unwrap_or_default();
    std::fs::write(&outside, b"someone else's")?;
    // Everything already there is old, so only reachability protects it.
    for f in files_under(&root) {
        if f != young {
            set_mtime(&f, Duration::from_secs(7 * 24 * 3600))?;
        }
    }
    set_mtime(&outside, Duration::from_secs(7 * 24 * 3600))?;

    // Spark's floor: under 24 hours needs --force (a sorted compaction writes for hours
    // before its one commit).
    for short in [60, 23 * 3600] {
        let err = RemoveOrphansBuilder::new(handle, ident.clone())
            .older_than(Duration::from_secs(short))
            .await
            .err()
            .ok_or_else(|| {
                anyhow::anyhow!("a threshold of {short}s was accepted without --force")
            })?;
        assert!(err.to_string().contains("under 24 hours"), "{err}");
        assert!(leftover.exists(), "a refused cleanup deleted a file");
        // A dry run deletes nothing: it may look below the floor.
        RemoveOrphansBuilder::new(handle, ident.clone())
            .older_than(Duration::from_secs(short))
            .dry_run(true)
            .await?;
        assert!(leftover.exists(), "a dry run deleted a file");
    }

    let dry = RemoveOrphansBuilder::new(handle, ident.clone())
        .older_than(Duration::from_secs(24 * 3600))
        .dry_run(true)
        .await?;
    assert!(leftover.exists(), "the dry run deleted a file");
    let m = RemoveOrphansBuilder::new(handle, ident.clone())
        .older_than(Duration::from_secs(24 * 3600))
        .await?;
    assert_eq!(dry.orphans, m.orphans);
    let mut orphans: Vec<PathBuf> = m.orphans.iter().map(|o| local(o)).collect();
    orphans.sort();
    let mut want = vec![leftover.clone(), leftover_manifest.clone()];
    want.sort();
    assert_eq!(orphans, want, "{m:?}");
    assert!(!leftover.exists() && !leftover_manifest.exists());
    assert!(
        young.exists(),
        "a file younger than the threshold was deleted"
    );
    assert_eq!(m.too_young.len(), 1, "{m:?}");
    assert!(
        outside.exists(),
        "a file outside the table location was deleted"
    );
    for h in &hidden {
        assert!(h.exists(), "hidden {} was deleted", h.display());
    }
    // Reported, not judged: `_SUCCESS`, the `.crc` file and the `_temporary/` folder (once).
    assert_eq!(m.hidden, 3, "{m:?}");
    assert_eq!(m.hidden_examples.len(), 3, "{m:?}");
    assert!(
        m.hidden_examples.iter().any(|e| e.ends_with("/_temporary")),
        "{m:?}"
    );
    let table = handle.catalog().load_table(&ident).await?;
    all_needed_exist(&table).await?;
    // Every metadata file in the log is kept, and the old snapshot still reads.
    for log in table.metadata().metadata_log() {
        assert!(
            local(&log.metadata_file).exists(),
            "{} deleted",
            log.metadata_file
        );
    }
    let (rows, at, ids) = oracle(name, p, ns, Some(s1))?;
    assert_eq!(rows, rows_before);
    assert_eq!(at, at_s1);
    assert_eq!(ids.len(), 3);
    Ok(())
}

/// Two tables created at one location: the other table's files are unreferenced by this one,
/// so orphan cleanup refuses (naming the other table's metadata) instead of deleting them; the
/// other table still reads. An unreferenced old metadata file of the table itself stays an
/// ordinary orphan.
#[tokio::test(flavor = "multi_thread")]
async fn orphan_cleanup_refuses_a_location_shared_with_another_table() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let first = create_orders(&handle, "shared").await?;
    let ident = first.identifier().clone();
    append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    // This table's own pruned metadata file: unreferenced, but not another table's.
    let own_old = local(first.metadata_location().unwrap_or_default());
    PropertiesBuilder::new(&handle, ident.clone())
        .set("write.metadata.previous-versions-max", "1")
        .await?;
    append(&handle, &ident, &[(2, Some("eu"), Some(2))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    assert!(
        !table
            .metadata()
            .metadata_log()
            .iter()
            .any(|l| local(&l.metadata_file) == own_old),
        "the first metadata file should have left the log"
    );
    let location = table.metadata().location().to_string();
    let root = local(&location);
    for f in files_under(&root) {
        set_mtime(&f, Duration::from_secs(7 * 24 * 3600))?;
    }
    let m = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::from_secs(24 * 3600))
        .dry_run(true)
        .await?;
    assert!(
        m.orphans.iter().any(|o| local(o) == own_old),
        "the table's own pruned metadata file is an orphan: {m:?}"
    );

    // A second table at the same location.
    let other_ident = TableIdent::from_strs(["shared", "other"])?;
    let other = handle
        .catalog()
        .create_table(
            other_ident.namespace(),
            iceberg::TableCreation::builder()
                .name("other".into())
                .schema(first.metadata().current_schema().as_ref().clone())
                .location(location.clone())
                .build(),
        )
        .await?;
    append(&handle, &other_ident, &[(7, Some("apac"), Some(7))]).await?;
    let other = handle.catalog().load_table(other.identifier()).await?;
    let other_files = files_under(&root).len();
    for f in files_under(&root) {
        set_mtime(&f, Duration::from_secs(7 * 24 * 3600))?;
    }
    for dry_run in [true, false] {
        let err = RemoveOrphansBuilder::new(&handle, ident.clone())
            .older_than(Duration::from_secs(24 * 3600))
            .dry_run(dry_run)
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("a location shared with another table was cleaned"))?;
        let text = err.to_string();
        assert!(
            text.contains("is the metadata of another table")
                && text.contains(&other.metadata().uuid().to_string())
                && text.contains("No file was deleted"),
            "{text}"
        );
    }
    assert_eq!(files_under(&root).len(), other_files, "a file was deleted");
    all_needed_exist(&other).await?;
    let (rows, _, _) = oracle("c", &db.props, "shared", None)?;
    assert_eq!(rows.len(), 2, "{rows:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn orphan_cleanup_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    orphans(&handle, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn orphan_cleanup_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("c", &p).await?;
    orphans(&handle, "c", &p).await
}

/// A REST server that answers a table load without `metadata-location` (the spec makes it
/// optional): the loaded metadata's snapshots are still live, and the current metadata file
/// cannot be told from an orphan, so orphan cleanup refuses, naming the table and why — even
/// forced, with every file old enough — and deletes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn orphan_cleanup_refuses_a_table_loaded_without_its_metadata_location() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let direct = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let handle = open("c", &direct).await?;
    let ns = "nomdl";
    let table = create_orders(&handle, ns).await?;
    let ident = table.identifier().clone();
    append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    append(&handle, &ident, &[(2, Some("eu"), Some(2))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let root = local(table.metadata().location());
    // A table left alone for a week: every file is old, only reachability protects it.
    let mut before = files_under(&root);
    before.sort();
    for f in &before {
        set_mtime(f, Duration::from_secs(7 * 24 * 3600))?;
    }
    let (rows_before, _, _) = oracle("c", &direct, ns, None)?;

    let proxy = ops_tests::proxy::FaultProxy::start(rustberg.server.port);
    proxy.add(
        "GET",
        "/tables/orders",
        ops_tests::proxy::Fault::ForwardWithoutKey("metadata-location".into()),
        usize::MAX,
    );
    let proxied = props(&[("type", "rest"), ("uri", &proxy.url())]);
    let through = open("c", &proxied).await?;
    let loaded = through.catalog().load_table(&ident).await?;
    assert_eq!(
        loaded.metadata_location(),
        None,
        "the proxy kept metadata-location"
    );
    let err = RemoveOrphansBuilder::new(&through, ident.clone())
        .older_than(Duration::ZERO)
        .force(true)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("orphan cleanup ran without the metadata location"))?;
    let text = err.to_string();
    assert!(
        text.contains("metadata-location") && text.contains(&ident.to_string()),
        "{text}"
    );
    let mut after = files_under(&root);
    after.sort();
    assert_eq!(after, before, "orphan cleanup deleted files of the table");
    let (rows, _, _) = oracle("c", &direct, ns, None)?;
    assert_eq!(rows, rows_before);
    Ok(())
}

/// Writes a few bytes at `path` through the table's FileIO (an object no metadata references).
async fn put(io: &iceberg::io::FileIO, path: &str) -> anyhow::Result<()> {
    io.new_output(path)?
        .write(bytes::Bytes::from_static(b"not committed"))
        .await?;
    Ok(())
}

/// Orphan cleanup on an S3 warehouse (Glue on moto): the location is listed by key prefix with
/// the table's own FileIO properties; a killed run's leftovers go once old enough (objects are
/// stamped by the store, so the age is set by the threshold), and everything reachable, hidden
/// (`_SUCCESS`, `_temporary/`, `.crc`), inside a nested table, or in a sibling prefix sharing
/// the location's name (`<location>_backup/`) stays. PyIceberg reads the same rows after.
#[tokio::test(flavor = "multi_thread")]
async fn orphan_cleanup_lists_an_s3_location() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    let handle = open("glue", &p).await?;
    let ns = "orph";
    let table = create_orders(&handle, ns).await?;
    let ident = table.identifier().clone();
    let s1 = append(
        &handle,
        &ident,
        &[(1, Some("us"), Some(1)), (2, Some("eu"), Some(2))],
    )
    .await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("region = 'eu'")
        .await?;
    append(&handle, &ident, &[(3, Some("apac"), Some(3))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let location = table
        .metadata()
        .location()
        .trim_end_matches('/')
        .to_string();
    assert!(location.starts_with("s3://lake/"), "{location}");
    let (rows_before, at_s1, _) = oracle("glue", &p, ns, Some(s1))?;

    let io = table.file_io().clone();
    let leftover = format!("{location}/data/region=us/00000-killed-run.parquet");
    let leftover_manifest = format!("{location}/metadata/killed-run-m0.avro");
    let kept = [
        format!("{location}/data/_SUCCESS"),
        format!("{location}/data/region=us/.00000-killed-run.parquet.crc"),
        format!("{location}/data/_temporary/0/part-0.parquet"),
        format!("{location}_backup/data/region=us/a.parquet"),
        format!("{location}/child/metadata/00000-x.metadata.json"),
        format!("{location}/child/data/b.parquet"),
    ];
    for f in [&leftover, &leftover_manifest].into_iter().chain(&kept) {
        put(&io, f).await?;
    }
    let mut want = vec![leftover.clone(), leftover_manifest.clone()];
    want.sort();

    // Everything was just written: under the 24-hour floor, all of it is too young.
    let young = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::from_secs(24 * 3600))
        .await?;
    assert!(young.orphans.is_empty(), "{young:?}");
    assert_eq!(young.too_young, want, "{young:?}");
    assert_eq!(young.other_tables, [format!("{location}/child")]);

    let dry = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::ZERO)
        .force(true)
        .dry_run(true)
        .await?;
    assert_eq!(dry.orphans, want, "{dry:?}");
    assert!(io.exists(&leftover).await?, "the dry run deleted a file");
    let m = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::ZERO)
        .force(true)
        .await?;
    assert_eq!(m.orphans, want, "{m:?}");
    assert!(m.failed_deletes.is_empty(), "{m:?}");
    // The three hidden keys, each once, reported by their names; the sibling and the nested
    // table's keys are not hidden ones.
    assert_eq!(m.hidden, 3, "{m:?}");
    let mut examples = m.hidden_examples.clone();
    examples.sort();
    let mut hidden_keys = kept[..3].to_vec();
    hidden_keys.sort();
    assert_eq!(examples, hidden_keys, "{m:?}");
    let needed = needed_files(&table).await?;
    assert_eq!(m.reachable, m.listed - want.len(), "{m:?}");
    assert!(m.reachable >= needed.len(), "{m:?} {needed:?}");
    for f in &want {
        assert!(!io.exists(f).await?, "orphan {f} was not deleted");
    }
    for f in &kept {
        assert!(io.exists(f).await?, "{f} was deleted");
    }
    for f in &needed {
        assert!(io.exists(f).await?, "{f} is needed but was deleted");
    }
    let (rows, at, ids) = oracle("glue", &p, ns, Some(s1))?;
    assert_eq!(rows, rows_before);
    assert_eq!(at, at_s1);
    assert_eq!(ids.len(), 3);
    Ok(())
}

/// Expiry then orphan cleanup on every corpus table (`corpus::private_corpus`, generated here,
/// privately: the shared corpus of `corpus.rs` must not lose files): PyIceberg reads the same
/// rows before and after.
#[tokio::test(flavor = "multi_thread")]
async fn corpus_tables_survive_expiry_and_orphan_cleanup() -> TestResult {
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
                        'snapshots': len(t.metadata.snapshots)}})"
            ),
        )
    };
    let mut problems = Vec::new();
    for ident in tables {
        let t = ident.name().to_string();
        let before = read(&t)?;
        let table = handle.catalog().load_table(&ident).await?;
        let root = local(table.metadata().location());
        let stray = root.join("data/stray-from-a-killed-run.parquet");
        std::fs::create_dir_all(root.join("data"))?;
        std::fs::write(&stray, b"leftover")?;
        set_mtime(&stray, Duration::from_secs(4 * 24 * 3600))?;
        let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
            .older_than_ms(now_ms() + 1)
            .retain_last(1)
            .await?;
        all_needed_exist(&table).await?;
        let o = RemoveOrphansBuilder::new(&handle, ident.clone())
            .older_than(Duration::from_secs(24 * 3600))
            .await?;
        all_needed_exist(&handle.catalog().load_table(&ident).await?).await?;
        let after = read(&t)?;
        if before["n"] != after["n"] || before["digest"] != after["digest"] {
            problems.push(format!("{t}: rows changed ({before} -> {after})"));
        }
        if after["snapshots"] != json!(1) {
            problems.push(format!(
                "{t}: {} snapshots left, want 1",
                after["snapshots"]
            ));
        }
        if stray.exists() {
            problems.push(format!("{t}: the stray file survived ({o:?})"));
        }
        eprintln!(
            "{t}: expired {} snapshots, deleted {} data/delete files, {} manifests, {} lists; \
             orphans {:?}",
            m.expired_snapshots.len(),
            m.deleted_data_files.len(),
            m.deleted_manifests.len(),
            m.deleted_manifest_lists.len(),
            o.orphans
        );
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

/// S3 Tables maintains its tables itself: both commands refuse and name the table's
/// maintenance configuration, before touching anything.
#[tokio::test(flavor = "multi_thread")]
async fn s3tables_tables_are_maintained_by_the_service() -> TestResult {
    init_tracing();
    let (_moto, p) = s3tables_on_moto("maint");
    let handle = open("st", &p).await?;
    let table = create_orders(&handle, "st").await?;
    let ident = table.identifier().clone();
    append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    let expire = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .retain_last(1)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("expiry ran on an S3 Tables table"))?;
    let orphans = RemoveOrphansBuilder::new(&handle, ident.clone())
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("orphan cleanup ran on an S3 Tables table"))?;
    let compact = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(1)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("compaction ran on an S3 Tables table"))?;
    for err in [expire, orphans, compact] {
        let msg = err.to_string();
        assert!(
            msg.contains("maintenance configuration")
                && msg.contains("put-table-maintenance-configuration")
                && msg.contains("--name orders"),
            "{msg}"
        );
    }
    let after = handle.catalog().load_table(&ident).await?;
    assert_eq!(after.metadata().snapshots().count(), 1);
    Ok(())
}

/// Without --older-than and --retain-last, the table's history.expire.* properties decide.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_honours_history_expire_properties() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "props").await?;
    let ident = table.identifier().clone();
    for i in 0..4 {
        append(&handle, &ident, &[(i, Some("us"), Some(1))]).await?;
    }
    // The default (5 days) expires nothing made just now, and says it was the default.
    let (_, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone()).await?;
    assert!(m.expired_snapshots.is_empty(), "{m:?}");
    let five_days_ago = now_ms() - 5 * 24 * 3600 * 1000;
    assert!(
        (m.rule.older_than_ms - five_days_ago).abs() < 60_000,
        "{m:?}"
    );
    assert_eq!(
        m.rule.older_than_from,
        "now minus history.expire.max-snapshot-age-ms unset, default 5 days"
    );
    assert_eq!(m.rule.retain_last, 1);
    assert_eq!(
        m.rule.retain_last_from,
        "history.expire.min-snapshots-to-keep unset, default 1"
    );
    PropertiesBuilder::new(&handle, ident.clone())
        .set("history.expire.max-snapshot-age-ms", "1")
        .set("history.expire.min-snapshots-to-keep", "3")
        .await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (_, dry) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .dry_run(true)
        .await?;
    assert_eq!(
        dry.rule.older_than_from,
        "now minus history.expire.max-snapshot-age-ms=1"
    );
    assert_eq!(
        (dry.rule.retain_last, dry.rule.retain_last_from.as_str()),
        (3, "history.expire.min-snapshots-to-keep=3")
    );
    let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone()).await?;
    assert_eq!(m.expired_snapshots.len(), 1, "{m:?}");
    assert_eq!(m.expired_snapshots, dry.expired_snapshots);
    assert_eq!(table.metadata().snapshots().count(), 3);
    // Options name themselves.
    let (_, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(1)
        .retain_last(2)
        .dry_run(true)
        .await?;
    assert_eq!(
        (m.rule.older_than_ms, m.rule.older_than_from.as_str()),
        (1, "--older-than")
    );
    assert_eq!(
        (m.rule.retain_last, m.rule.retain_last_from.as_str()),
        (2, "--retain-last")
    );
    let (rows, _, ids) = oracle("c", &db.props, "props", None)?;
    assert_eq!(rows.len(), 4);
    assert_eq!(ids.len(), 3);
    Ok(())
}

/// Expiry on a format-v1 table (written by PyIceberg): its metadata has no refs of its own, yet
/// the commit must be guarded by main at the current snapshot, not conflict every time.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_on_a_format_v1_table() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "import pyarrow as pa\n\
         catalog.create_namespace('v1')\n\
         t = catalog.create_table('v1.orders', schema=pa.schema([('id', pa.int64())]), \
             properties={'format-version': '1'})\n\
         for i in range(3):\n    t.append(pa.table({'id': [i]}))\n\
         emit({'version': t.metadata.format_version})",
    )?;
    let handle = open("c", &db.props).await?;
    let ident = TableIdent::from_strs(["v1", "orders"])?;
    let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .await?;
    assert_eq!(m.expired_snapshots.len(), 2, "{m:?}");
    assert_eq!(table.metadata().snapshots().count(), 1);
    let (rows, _, ids) = oracle("c", &db.props, "v1", None)?;
    assert_eq!(rows.len(), 3);
    assert_eq!(ids.len(), 1);
    Ok(())
}

/// A metadata file in the log that exists but cannot be read may be the only one naming some
/// files: orphan cleanup refuses rather than deleting them.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_logged_metadata_file_stops_orphan_cleanup() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "unread").await?;
    let ident = table.identifier().clone();
    append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    append(&handle, &ident, &[(2, Some("us"), Some(1))]).await?;
    let table = handle.catalog().load_table(&ident).await?;
    let logged = table
        .metadata()
        .metadata_log()
        .last()
        .map(|e| e.metadata_file.clone())
        .ok_or_else(|| anyhow::anyhow!("no metadata log"))?;
    std::fs::write(local(&logged), b"{ not json")?;
    let before = files_under(&local(table.metadata().location()));
    for f in &before {
        set_mtime(f, Duration::from_secs(10 * 24 * 3600))?;
    }
    let err = RemoveOrphansBuilder::new(&handle, ident.clone())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("cannot be read") && err.contains(&logged),
        "{err}"
    );
    assert_eq!(files_under(&local(table.metadata().location())), before);
    Ok(())
}

/// On REST the server applies an expiry to its own latest metadata: a `gc.enabled=false` set by
/// another client between planning and committing does not conflict (no ref moved), so the
/// committed metadata is checked again and no file is deleted.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_keeps_files_when_gc_was_disabled_while_it_committed() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let (a, b) = (open("c", &p).await?, open("c", &p).await?);
    let table = create_orders(&a, "gcrace").await?;
    let ident = table.identifier().clone();
    for i in 0..3 {
        append(&a, &ident, &[(i, Some("us"), Some(1))]).await?;
    }
    let before = needed_files(&a.catalog().load_table(&ident).await?).await?;
    let calls = Arc::new(AtomicUsize::new(0));
    let hook = {
        let (b, ident, calls) = (b.clone(), ident.clone(), calls.clone());
        Arc::new(move || {
            let (b, ident, calls) = (b.clone(), ident.clone(), calls.clone());
            Box::pin(async move {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    PropertiesBuilder::new(&b, ident.clone())
                        .set("gc.enabled", "false")
                        .await
                        .unwrap_or_else(|e| panic!("the racing property change failed: {e}"));
                }
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        })
    };
    let (table, m) = ExpireSnapshotsBuilder::new(&a, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .before_commit(hook)
        .await?;
    assert_eq!(table_property(&table, "gc.enabled"), Some("false"));
    if !m.expired_snapshots.is_empty() {
        let why = m.cleanup_skipped.clone().unwrap_or_default();
        assert!(why.contains("gc.enabled=false"), "{m:?}");
        assert!(m.deleted_data_files.is_empty() && m.deleted_manifest_lists.is_empty());
    }
    for f in before {
        assert!(
            local(&f).exists(),
            "deleted {f} of a gc.enabled=false table"
        );
    }
    Ok(())
}

/// A statistics file (Puffin) of an expired snapshot is removed from the metadata and deleted,
/// one of a retained snapshot is kept (Java's `expiredStatisticsFiles`).
#[tokio::test(flavor = "multi_thread")]
async fn expiry_deletes_statistics_files_of_expired_snapshots() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let table = create_orders(&handle, "stats").await?;
    let ident = table.identifier().clone();
    let first = append(&handle, &ident, &[(1, Some("us"), Some(1))]).await?;
    let second = append(&handle, &ident, &[(2, Some("us"), Some(1))]).await?;
    let location = table.metadata().location().to_string();
    let mut paths = Vec::new();
    for (snapshot, name) in [(first, "old"), (second, "new")] {
        let path = format!("{location}/metadata/{name}.stats");
        std::fs::write(local(&path), b"PUF1")?;
        let statistics = iceberg::spec::StatisticsFile {
            snapshot_id: snapshot,
            statistics_path: path.clone(),
            file_size_in_bytes: 4,
            file_footer_size_in_bytes: 0,
            key_metadata: None,
            blob_metadata: Vec::new(),
        };
        commit_metadata_change(&handle, &ident, |md| {
            Ok(Some(TableChange {
                requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
                updates: vec![TableUpdate::SetStatistics {
                    statistics: statistics.clone(),
                }],
                ..Default::default()
            }))
        })
        .await?;
        paths.push(path);
    }
    let (_, dry) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .dry_run(true)
        .await?;
    assert_eq!(dry.deleted_statistics_files, vec![paths[0].clone()]);
    let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(now_ms() + 1)
        .retain_last(1)
        .await?;
    assert_eq!(m.expired_snapshots, vec![first]);
    assert_eq!(m.deleted_statistics_files, vec![paths[0].clone()]);
    assert!(
        !local(&paths[0]).exists(),
        "the expired snapshot's statistics file stayed"
    );
    assert!(
        local(&paths[1]).exists(),
        "the retained snapshot's statistics file was deleted"
    );
    let listed: Vec<&str> = table
        .metadata()
        .statistics_iter()
        .map(|s| s.statistics_path.as_str())
        .collect();
    assert_eq!(listed, vec![paths[1].as_str()]);
    Ok(())
}
