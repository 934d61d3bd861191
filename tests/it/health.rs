//! Table health (issue 35): the numbers checked against PyIceberg's `inspect` tables on every
//! corpus table, and each threshold crossed alone on a table built to cross it, with the
//! command the report names actually clearing it.

use std::collections::{BTreeMap, HashMap};

use iceberg::spec::{Literal, Struct, Transform, UnboundPartitionSpec};
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::markers::mark_running_marker;
use ops_core::ops::properties::PropertiesBuilder;
use ops_maintenance::compact::CompactBuilder;
use ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder;
use ops_maintenance::health::{HealthBuilder, TableHealth};
use ops_maintenance::policy::Policy;
use ops_maintenance::remove_dangling_deletes::RemoveDanglingDeletesBuilder;
use serde_json::{Value, json};

use crate::commit_layer::{
    commit_equality_delete, commit_position_delete, commit_spark_position_delete,
};
use crate::common::*;

pub(crate) type Row = (i64, Option<&'static str>, Option<i32>);

/// `ns.name`, the orders schema partitioned by region, with `properties`, in namespace `ns`
/// (created when missing).
pub(crate) async fn orders_table(
    handle: &CatalogHandle,
    ns: &str,
    name: &str,
    properties: &[(&str, &str)],
) -> anyhow::Result<TableIdent> {
    let catalog = handle.catalog();
    let namespace = NamespaceIdent::new(ns.to_string());
    if !catalog.namespace_exists(&namespace).await? {
        catalog.create_namespace(&namespace, HashMap::new()).await?;
    }
    let schema = orders_schema()?;
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "region", Transform::Identity)?
        .build();
    catalog
        .create_table(
            &namespace,
            TableCreation::builder()
                .name(name.into())
                .schema(schema)
                .partition_spec(spec)
                .properties(
                    properties
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect::<HashMap<String, String>>(),
                )
                .build(),
        )
        .await?;
    Ok(TableIdent::new(namespace, name.to_string()))
}

/// Appends `rows` in one commit (one file per region).
pub(crate) async fn append(
    handle: &CatalogHandle,
    ident: &TableIdent,
    rows: &[Row],
) -> anyhow::Result<i64> {
    append_orders(handle, ident, rows).await
}

/// `n` rows of `region` from id `from`.
pub(crate) fn rows(from: i64, n: i64, region: &'static str) -> Vec<Row> {
    (from..from + n)
        .map(|i| (i, Some(region), Some(i as i32)))
        .collect()
}

pub(crate) async fn health(
    handle: &CatalogHandle,
    ident: &TableIdent,
) -> anyhow::Result<TableHealth> {
    Ok(HealthBuilder::new(handle, ident.clone()).await?)
}

fn kinds(h: &TableHealth) -> Vec<&str> {
    h.problems.iter().map(|p| p.kind.as_str()).collect()
}

/// The live data file paths of `ident` in `region`.
async fn paths_in(
    handle: &CatalogHandle,
    ident: &TableIdent,
    region: &str,
) -> anyhow::Result<Vec<String>> {
    let table = handle.catalog().load_table(ident).await?;
    let cache = ops_core::ops::ManifestCache::new(&table);
    let files = ops_core::ops::live_data_files(&table, &cache).await?;
    Ok(files
        .into_iter()
        .filter(|f| {
            f.file.partition().fields().first().cloned().flatten() == Some(Literal::string(region))
        })
        .map(|f| f.file.file_path().to_string())
        .collect())
}

fn region(r: &str) -> Struct {
    Struct::from_iter([Some(Literal::string(r))])
}

/// What PyIceberg's `inspect` tables say of `ns.t`, in the report's terms (size classes by the
/// report's own thresholds).
fn inspected(
    name: &str,
    p: &BTreeMap<String, String>,
    table: &str,
    fragment: u64,
    min_size: u64,
) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg(
        name,
        p,
        &format!(
            "t = catalog.load_table('{table}')\n\
             files = []\n\
             if t.current_snapshot():\n\
             \x20   try:\n\
             \x20       files = t.inspect.files().to_pylist()\n\
             \x20   except Exception:\n\
             \x20       # PyIceberg 0.12's inspect.files() cannot build its readable metrics of a\n\
             \x20       # uuid column (ArrowNotImplementedError: extension): its manifest reader then.\n\
             \x20       for m in t.current_snapshot().manifests(t.io):\n\
             \x20           for e in m.fetch_manifest_entry(t.io, discard_deleted=True):\n\
             \x20               d = e.data_file\n\
             \x20               spec = t.metadata.specs()[d.spec_id]\n\
             \x20               files.append({{'content': int(d.content), 'spec_id': d.spec_id,\n\
             \x20                   'partition': {{f.name: d.partition[i] for i, f in enumerate(spec.fields)}},\n\
             \x20                   'file_size_in_bytes': d.file_size_in_bytes, 'record_count': d.record_count}})\n\
             out = {{'data': {{'files': 0, 'bytes': 0, 'records': 0, 'fragments': 0, 'undersized': 0, 'well_sized': 0}},\n\
                    'position': {{'files': 0, 'records': 0}}, 'equality': {{'files': 0, 'records': 0}}}}\n\
             parts = {{}}\n\
             for f in files:\n\
             \x20   key = (f['spec_id'], json.dumps(f.get('partition') or {{}}, sort_keys=True, default=str))\n\
             \x20   p = parts.setdefault(key, [f['spec_id'], 0, 0, 0, 0, 0])\n\
             \x20   size, n = f['file_size_in_bytes'], f['record_count']\n\
             \x20   if f['content'] == 0:\n\
             \x20       d = out['data']; d['files'] += 1; d['bytes'] += size; d['records'] += n\n\
             \x20       d['fragments' if size <= {fragment} else 'undersized' if size < {min_size} else 'well_sized'] += 1\n\
             \x20       p[1] += 1; p[2] += size; p[3] += n\n\
             \x20   elif f['content'] == 1:\n\
             \x20       out['position']['files'] += 1; out['position']['records'] += n; p[4] += n\n\
             \x20   else:\n\
             \x20       out['equality']['files'] += 1; out['equality']['records'] += n; p[5] += n\n\
             out['partitions'] = sorted(parts.values())\n\
             out['snapshots'] = len(t.inspect.snapshots())\n\
             m = t.inspect.manifests().to_pylist() if t.current_snapshot() else []\n\
             out['manifests'] = {{'data': sum(1 for x in m if x['content'] == 0), 'delete': sum(1 for x in m if x['content'] == 1),\n\
             \x20   'entries': sum(x['added_data_files_count'] + x['existing_data_files_count'] + x['added_delete_files_count'] + x['existing_delete_files_count'] for x in m),\n\
             \x20   'bytes': sum(x['length'] for x in m)}}\n\
             emit(out)"
        ),
    )
}

/// The same numbers from our report.
fn ours(h: &TableHealth) -> Value {
    let mut parts: Vec<Value> = h
        .partitions
        .iter()
        .map(|p| {
            json!([
                p.spec_id,
                p.data_files,
                p.data_bytes,
                p.data_records,
                p.position_delete_records,
                p.equality_delete_records
            ])
        })
        .collect();
    parts.sort_by_key(|v| v.to_string());
    let mut py_order = parts.clone();
    // Python sorts lists element-wise; numbers compare as numbers.
    py_order.sort_by(|a, b| {
        let key = |v: &Value| -> Vec<u64> {
            v.as_array()
                .map(|a| a.iter().map(|x| x.as_u64().unwrap_or(0)).collect())
                .unwrap_or_default()
        };
        key(a).cmp(&key(b))
    });
    json!({
        "data": {
            "files": h.data.files, "bytes": h.data.bytes, "records": h.data.records,
            "fragments": h.data.fragments.files, "undersized": h.data.undersized.files,
            "well_sized": h.data.well_sized.files,
        },
        "position": {"files": h.deletes.position.files, "records": h.deletes.position.records},
        "equality": {"files": h.deletes.equality.files, "records": h.deletes.equality.records},
        "partitions": py_order,
        "snapshots": h.snapshots.count,
        "manifests": {
            "data": h.manifests.data, "delete": h.manifests.delete,
            "entries": h.manifests.entries, "bytes": h.manifests.bytes,
        },
    })
}

/// `h`'s numbers are PyIceberg's (catalog `c` of `p`).
fn agrees(p: &BTreeMap<String, String>, h: &TableHealth) -> anyhow::Result<()> {
    let t = &h.thresholds;
    let want = inspected("c", p, &h.table, t.fragment_size, t.min_file_size)?;
    let got = ours(h);
    anyhow::ensure!(
        got == want,
        "{}:\n  ours      {got}\n  pyiceberg {want}",
        h.table
    );
    Ok(())
}

/// Every corpus table judged with a small target (so every size class is met), each number
/// checked against PyIceberg's `inspect.files()`, `inspect.snapshots()` and
/// `inspect.manifests()`.
#[tokio::test(flavor = "multi_thread")]
async fn health_matches_pyiceberg_inspect_on_every_corpus_table() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let (p, handle, tables) = crate::corpus::private_corpus(dir.path(), 1000).await?;
    let policy = Policy::parse("[defaults]\ntarget-file-size-bytes = 16384\n", "test")?;
    let mut problems = Vec::new();
    let mut classes = [0u64; 3];
    for ident in tables {
        let h = HealthBuilder::new(&handle, ident.clone())
            .policy(policy.clone())
            .await?;
        let t = &h.thresholds;
        let want = inspected(
            "corpus",
            &p,
            &ident.to_string(),
            t.fragment_size,
            t.min_file_size,
        )?;
        let got = ours(&h);
        if got != want {
            problems.push(format!("{ident}:\n  ours     {got}\n  pyiceberg {want}"));
        }
        classes[0] += h.data.fragments.files;
        classes[1] += h.data.undersized.files;
        classes[2] += h.data.well_sized.files;
        assert!(h.score.score <= 100, "{h:?}");
        let histogram: u64 = h.size_histogram.iter().map(|b| b.files).sum();
        assert_eq!(
            histogram, h.data.files,
            "{ident}: the histogram holds every file"
        );
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        classes.iter().all(|n| *n > 0),
        "the corpus meets every size class at a 16 KiB target: {classes:?}"
    );
    Ok(())
}

/// Each threshold crossed alone, on a table built to cross it: the one problem named, with
/// its command, and that command (run through the library) clearing it.
#[tokio::test(flavor = "multi_thread")]
async fn each_threshold_crossed_alone() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let handle = open("c", &db.props).await?;
    let mib = [("write.target-file-size-bytes", "1048576")];

    // A healthy table: one file.
    let ok = orders_table(&handle, "th", "healthy", &mib).await?;
    append(&handle, &ok, &rows(0, 10, "eu")).await?;
    let h = health(&handle, &ok).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);
    assert_eq!((h.score.score, h.due.compact_partitions), (100, 0));

    // Small files: four is under min-input-files (5), five is not.
    let small = orders_table(&handle, "th", "small", &mib).await?;
    for i in 0..4 {
        append(&handle, &small, &rows(i * 10, 10, "eu")).await?;
    }
    let h = health(&handle, &small).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);
    assert_eq!(h.data.fragments.files, 4);
    append(&handle, &small, &rows(40, 10, "eu")).await?;
    append(&handle, &small, &rows(50, 10, "us")).await?;
    let h = health(&handle, &small).await?;
    assert_eq!(kinds(&h), vec!["small-files"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    assert_eq!(h.problems[0].fix, "iceberg-ops table compact th.small");
    assert_eq!(h.due.compact_partitions, 1, "only region=eu holds five");
    let eu = h
        .partitions
        .iter()
        .find(|p| p.partition == "region=eu")
        .ok_or_else(|| anyhow::anyhow!("no eu partition: {h:?}"))?;
    assert!(eu.compaction_due && eu.fragments == 5, "{eu:?}");
    CompactBuilder::new(&handle, small.clone()).await?;
    let h = health(&handle, &small).await?;
    assert!(
        h.problems.is_empty(),
        "compaction cleared it: {:?}",
        h.problems
    );

    // Small files that cannot share a file: the two smallest together pass the target.
    let apart = orders_table(&handle, "th", "apart", &[]).await?;
    for i in 0..6 {
        append(&handle, &apart, &rows(i * 10, 10, "eu")).await?;
    }
    let h = health(&handle, &apart).await?;
    let sizes: Vec<u64> = h
        .size_histogram
        .iter()
        .filter(|b| b.files > 0)
        .map(|b| b.max_bytes)
        .collect();
    let table = handle.catalog().load_table(&apart).await?;
    let cache = ops_core::ops::ManifestCache::new(&table);
    let mut file_sizes: Vec<u64> = ops_core::ops::live_data_files(&table, &cache)
        .await?
        .iter()
        .map(|f| f.file.file_size_in_bytes())
        .collect();
    file_sizes.sort_unstable();
    let (min, max) = (file_sizes[0], file_sizes[file_sizes.len() - 1]);
    // Undersized (below 75% of the target) yet no two fit in one target-size file.
    let target = min + file_sizes[1] - 1;
    anyhow::ensure!(
        (target as f64 * 0.75) as u64 > max,
        "files too uneven for this case: {file_sizes:?} {sizes:?}"
    );
    PropertiesBuilder::new(&handle, apart.clone())
        .set("write.target-file-size-bytes", target.to_string())
        .await?;
    let h = health(&handle, &apart).await?;
    assert_eq!(h.data.undersized.files, 6, "{:?}", h.data);
    agrees(&db.props, &h)?;
    assert!(
        h.problems.is_empty(),
        "compaction would not pack them: {:?}",
        h.problems
    );
    let (_, m) = CompactBuilder::new(&handle, apart.clone())
        .dry_run(true)
        .await?;
    assert_eq!(m.input_files(), 0, "and indeed it does not: {m:?}");

    // Position deletes past 20% of a partition's rows (and not before).
    let pos = orders_table(&handle, "th", "pos", &mib).await?;
    append(&handle, &pos, &rows(0, 10, "eu")).await?;
    let path = paths_in(&handle, &pos, "eu").await?.remove(0);
    let table = handle.catalog().load_table(&pos).await?;
    commit_spark_position_delete(&handle, &table, &path, region("eu"), &[0, 1]).await?;
    let h = health(&handle, &pos).await?;
    assert!(
        h.problems.is_empty(),
        "2 of 10 is not past 20%: {:?}",
        h.problems
    );
    assert_eq!(h.deletes.position.records, 2);
    let table = handle.catalog().load_table(&pos).await?;
    commit_spark_position_delete(&handle, &table, &path, region("eu"), &[2]).await?;
    let h = health(&handle, &pos).await?;
    assert_eq!(kinds(&h), vec!["deletes"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    CompactBuilder::new(&handle, pos.clone()).await?;
    let h = health(&handle, &pos).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);
    // Spark's deletes name their file in their bounds, so once it is rewritten they dangle
    // and go in the same commit.
    assert_eq!(h.deletes.position.files, 0, "compaction dropped them");

    // Equality deletes past 10%.
    let eq = orders_table(&handle, "th", "eq", &mib).await?;
    append(&handle, &eq, &rows(0, 10, "eu")).await?;
    let table = handle.catalog().load_table(&eq).await?;
    commit_equality_delete(&handle, &table, region("eu"), &[3, 4]).await?;
    let h = health(&handle, &eq).await?;
    assert_eq!(kinds(&h), vec!["deletes"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    CompactBuilder::new(&handle, eq.clone()).await?;
    let h = health(&handle, &eq).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);

    // Snapshots past retention.
    let old = orders_table(
        &handle,
        "th",
        "old",
        &[("history.expire.max-snapshot-age-ms", "1")],
    )
    .await?;
    append(&handle, &old, &rows(0, 10, "eu")).await?;
    append(&handle, &old, &rows(10, 10, "eu")).await?;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let h = health(&handle, &old).await?;
    assert_eq!(kinds(&h), vec!["snapshots"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    assert_eq!(h.snapshots.expirable.len(), 1);
    assert_eq!(
        h.problems[0].fix,
        "iceberg-ops table expire-snapshots th.old"
    );
    ExpireSnapshotsBuilder::new(&handle, old.clone()).await?;
    let h = health(&handle, &old).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);

    // A dangling delete: its partition's data files deleted whole.
    let dangling = orders_table(&handle, "th", "dangling", &mib).await?;
    append(
        &handle,
        &dangling,
        &[rows(0, 10, "eu"), rows(10, 10, "us")].concat(),
    )
    .await?;
    let us = paths_in(&handle, &dangling, "us").await?.remove(0);
    let table = handle.catalog().load_table(&dangling).await?;
    commit_position_delete(&handle, &table, &us, region("us"), &[0]).await?;
    DeleteBuilder::new(&handle, dangling.clone())
        .with_filter_text("region = 'us'")
        .await?;
    let h = health(&handle, &dangling).await?;
    assert_eq!(kinds(&h), vec!["dangling-deletes"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    assert_eq!(
        h.problems[0].fix,
        "iceberg-ops table remove-dangling-deletes th.dangling"
    );
    let (_, m) = RemoveDanglingDeletesBuilder::new(&handle, dangling.clone()).await?;
    assert_eq!(m.removed.len(), 1, "{m:?}");
    let h = health(&handle, &dangling).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);
    assert_eq!(h.deletes.position.files, 0);

    // A Spark delete scoped to one file (its `file_path` bounds name it) dangles once that
    // file is rewritten, although its partition still holds older data it could apply to by
    // sequence number: judged by the file it names, and removed.
    let scoped = orders_table(&handle, "th", "scoped", &mib).await?;
    append(&handle, &scoped, &rows(0, 10, "eu")).await?;
    let named = paths_in(&handle, &scoped, "eu").await?.remove(0);
    append(&handle, &scoped, &rows(10, 10, "eu")).await?;
    let table = handle.catalog().load_table(&scoped).await?;
    commit_spark_position_delete(&handle, &table, &named, region("eu"), &[0]).await?;
    let h = health(&handle, &scoped).await?;
    assert_eq!(h.deletes.dangling_files, 0, "it applies: {:?}", h.deletes);
    // Copy-on-write rewrites the named file (ids 0-9) without id 1; the other stays.
    DeleteBuilder::new(&handle, scoped.clone())
        .with_filter_text("id = 1")
        .await?;
    let h = health(&handle, &scoped).await?;
    assert_eq!(
        (h.deletes.dangling_files, kinds(&h)),
        (1, vec!["dangling-deletes"]),
        "{:?}",
        h.deletes
    );
    let (_, m) = RemoveDanglingDeletesBuilder::new(&handle, scoped.clone()).await?;
    assert_eq!(m.removed.len(), 1, "{m:?}");
    let rows_left = ops_tests::oracle::pyiceberg(
        "c",
        &db.props,
        "emit(len(rows(catalog.load_table('th.scoped'))))",
    )?;
    assert_eq!(
        rows_left,
        json!(18),
        "20 rows, one deleted by position, one by the filter"
    );

    // Files of an older spec.
    let spec = orders_table(&handle, "th", "spec", &mib).await?;
    append(&handle, &spec, &rows(0, 10, "eu")).await?;
    EvolveSpecBuilder::new(&handle, spec.clone())
        .add_field("amount", Transform::Bucket(4), None)
        .await?;
    let h = health(&handle, &spec).await?;
    assert_eq!(kinds(&h), vec!["old-spec-files"], "{:?}", h.problems);
    agrees(&db.props, &h)?;
    assert_eq!(
        h.problems[0].fix,
        "iceberg-ops table compact th.spec --to-current-spec"
    );
    CompactBuilder::new(&handle, spec.clone())
        .to_current_spec(true)
        .await?;
    let h = health(&handle, &spec).await?;
    assert!(h.problems.is_empty(), "{:?}", h.problems);

    // An unfinished migration.
    let marked = orders_table(&handle, "th", "marked", &mib).await?;
    append(&handle, &marked, &rows(0, 10, "eu")).await?;
    mark_running_marker(&handle, &marked, "job-7").await?;
    let h = health(&handle, &marked).await?;
    assert_eq!(kinds(&h), vec!["unfinished-migration"], "{:?}", h.problems);
    assert!(
        h.problems[0]
            .fix
            .contains("iceberg-ops table abandon-migration th.marked --job job-7"),
        "{:?}",
        h.problems
    );

    // The compacted small-file table, as PyIceberg counts it.
    agrees(&db.props, &health(&handle, &small).await?)?;
    Ok(())
}
