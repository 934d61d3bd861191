//! `import add-files` (ops-import): Hive-style trees pyarrow writes, registered in place and
//! read back by PyIceberg with the rows pyarrow.dataset reads from the folder.

use std::collections::BTreeMap;

use ops_core::Error;
use ops_import::add_files::AddFilesBuilder;
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::{AWS_KEY, AWS_REGION, AWS_SECRET};
use serde_json::{Value, json};

use crate::common::*;

/// A Hive-style tree under `root`: `region=` folders pyarrow writes (URI-escaped values: a
/// space, `+`, `ü`, `a/b`, `50%`, NULL as `__HIVE_DEFAULT_PARTITION__`), one folder Hive
/// spells with a literal `+` and space, and the hidden files a Spark job leaves beside them.
/// The files hold `id` and `amount`, not `region` (Hive's layout).
fn hive_tree(name: &str, p: &BTreeMap<String, String>, root: &str) -> anyhow::Result<()> {
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             t = pa.table({{'id': pa.array([1, 2, 3, 4, 5, 6, 7], pa.int64()), \
                            'region': ['eu', 'eu', 'a b', 'x+y', 'ü', 'a/b', None], \
                            'amount': pa.array([10, 20, 30, 40, 50, 60, 70], pa.int32())}})\n\
             pq.write_to_dataset(t, '{root}', partition_cols=['region'])\n\
             os.makedirs('{root}/region=50%25')\n\
             pq.write_table(pa.table({{'id': pa.array([8], pa.int64()), \
                                       'amount': pa.array([80], pa.int32())}}), \
                            '{root}/region=50%25/part-0.parquet')\n\
             os.makedirs('{root}/region=c+d e')\n\
             pq.write_table(pa.table({{'id': pa.array([9], pa.int64()), \
                                       'amount': pa.array([None], pa.int32())}}), \
                            '{root}/region=c+d e/part-0.parquet')\n\
             open('{root}/_SUCCESS', 'w').close()\n\
             open('{root}/region=eu/.part.crc', 'w').close()\n\
             os.makedirs('{root}/_temporary/0')\n\
             pq.write_table(t, '{root}/_temporary/0/part-9.parquet')\n\
             emit(None)"
        ),
    )?;
    Ok(())
}

/// The rows pyarrow.dataset reads from `root` with Hive partitioning (the orders columns),
/// sorted like ours.
fn dataset_rows(name: &str, p: &BTreeMap<String, String>, root: &str) -> anyhow::Result<Value> {
    dataset_columns(name, p, root, &["id", "region", "amount"])
}

/// [`dataset_rows`] of `columns`.
fn dataset_columns(
    name: &str,
    p: &BTreeMap<String, String>,
    root: &str,
    columns: &[&str],
) -> anyhow::Result<Value> {
    let mut rows = pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow.dataset as ds\n\
             d = ds.dataset('{root}', format='parquet', \
                            partitioning=ds.partitioning(flavor='hive'), \
                            exclude_invalid_files=False, ignore_prefixes=['_', '.'])\n\
             emit(d.to_table().select({columns:?}).to_pylist())"
        ),
    )?;
    if let Some(r) = rows.as_array_mut() {
        sort_rows(r);
    }
    Ok(rows)
}

fn py_rows(name: &str, p: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
    let mut rows = pyiceberg(
        name,
        p,
        &format!("emit(rows(catalog.load_table('{table}')))"),
    )?;
    if let Some(r) = rows.as_array_mut() {
        sort_rows(r);
    }
    Ok(rows)
}

/// The tree added to `ns.orders` (partitioned by identity(region)): PyIceberg reads the rows
/// pyarrow.dataset reads from the folder, every special value decoded, NULL from
/// `__HIVE_DEFAULT_PARTITION__`; hidden files skipped; the name mapping created; a dry run
/// writes nothing; adding again is refused as a duplicate; a partition filter adds one folder.
#[tokio::test(flavor = "multi_thread")]
async fn a_hive_tree_pyarrow_wrote_is_added_in_place() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    hive_tree(name, p, &root)?;
    let want = dataset_rows(name, p, &root)?;
    assert_eq!(want.as_array().map(Vec::len), Some(9), "{want}");

    let handle = open(name, p).await?;
    let table = create_orders(&handle, "imp").await?;
    let ident = table.identifier().clone();

    let (_, dry) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .dry_run(true)
        .await?;
    // Eight files (pyarrow wrote eu's two rows into one) of nine rows.
    assert_eq!(dry.files.len(), 8, "{dry:?}");
    assert_eq!(
        dry.files
            .to_vec()?
            .iter()
            .map(|f| f.record_count)
            .sum::<u64>(),
        9
    );
    assert_eq!(dry.hidden, 3, "_SUCCESS, .part.crc, _temporary: {dry:?}");
    assert!(dry.name_mapping_created);
    let parts: std::collections::BTreeSet<String> = dry
        .files
        .to_vec()?
        .into_iter()
        .map(|f| f.partition)
        .collect();
    for want in [
        "region=a b",
        "region=x+y",
        "region=ü",
        "region=a/b",
        "region=50%",
        "region=c+d e",
        "region=null",
    ] {
        assert!(parts.contains(want), "{want} in {parts:?}");
    }
    let unchanged = handle.catalog().load_table(&ident).await?;
    assert!(unchanged.metadata().current_snapshot().is_none());

    let (table, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await?;
    assert!(m.snapshot_id.is_some());
    assert!(
        table
            .metadata()
            .properties()
            .contains_key("schema.name-mapping.default")
    );
    let got = py_rows(name, p, "imp.orders")?;
    assert_eq!(got, want);
    let summary = pyiceberg(
        name,
        p,
        "s = catalog.load_table('imp.orders').current_snapshot()\n\
         emit({'op': s.summary.operation.value, 'files': s.summary['added-data-files'], \
               'by': s.summary['iceberg-ops.operation']})",
    )?;
    assert_eq!(
        summary,
        json!({"op": "append", "files": "8", "by": "add-files"})
    );

    // Again: every file is in the table already.
    let err = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await
        .err();
    assert!(
        matches!(&err, Some(Error::InvalidInput(m)) if m.contains("already in") && m.contains("--allow-duplicate-files")),
        "{err:?}"
    );
    // Named twice.
    let file = &m.files.to_vec()?[0].path;
    let err = AddFilesBuilder::new(&handle, ident.clone())
        .from([file.clone(), file.clone()])
        .await
        .err();
    assert!(
        matches!(&err, Some(Error::InvalidInput(m)) if m.contains("named twice")),
        "{err:?}"
    );

    // A second table, one folder by the partition filter.
    let orders2 = create_orders(&handle, "imp2").await?;
    let (_, m) = AddFilesBuilder::new(&handle, orders2.identifier().clone())
        .from([root.clone()])
        .partition_filter("region", "ü")
        .await?;
    assert_eq!(m.files.len(), 1);
    assert_eq!(m.filtered_out, 7);
    // A filter selecting nothing names values the folders hold, and its own value decoded.
    let err = AddFilesBuilder::new(&handle, orders2.identifier().clone())
        .from([root.clone()])
        .partition_filter("region", "a%20b")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("the folders hold")
            && err.contains("region=eu")
            && err.contains("region=null")
            && err.contains("as the folders read: region=a b, not region=a%20b"),
        "{err}"
    );
    let got = py_rows(name, p, "imp2.orders")?;
    assert_eq!(got, json!([{"id": 5, "region": "ü", "amount": 50}]));
    Ok(())
}

/// Files whose rows disagree with their folder, or span partitions, or lack a required
/// column, or hold a column of another type are refused, naming the file and both values;
/// nothing is committed. A file with its partition column and no folder is placed by its
/// statistics.
#[tokio::test(flavor = "multi_thread")]
async fn files_that_do_not_fit_are_refused_and_statistics_place_the_rest() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let dir = db.dir.path().display().to_string();
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             def w(path, cols):\n\
             \x20   os.makedirs(os.path.dirname(path), exist_ok=True)\n\
             \x20   pq.write_table(pa.table(cols), path)\n\
             i = lambda v: pa.array(v, pa.int64())\n\
             a = lambda v: pa.array(v, pa.int32())\n\
             w('{dir}/wrong/region=eu/f.parquet', {{'id': i([1]), 'region': ['us'], 'amount': a([1])}})\n\
             w('{dir}/span/f.parquet', {{'id': i([1, 2]), 'region': ['eu', 'us'], 'amount': a([1, 2])}})\n\
             w('{dir}/noid/region=eu/f.parquet', {{'amount': a([1])}})\n\
             w('{dir}/type/region=eu/f.parquet', {{'id': ['x'], 'amount': a([1])}})\n\
             w('{dir}/stats/f.parquet', {{'id': i([3, 4]), 'region': ['us', 'us'], 'amount': a([3, 4])}})\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let table = create_orders(&handle, "bad").await?;
    let ident = table.identifier().clone();
    let refused = |case: &str| {
        let (handle, ident) = (handle.clone(), ident.clone());
        let from = format!("{dir}/{case}");
        async move {
            AddFilesBuilder::new(&handle, ident)
                .from([from])
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        }
    };
    let e = refused("wrong").await;
    assert!(
        e.contains("region=eu") && e.contains("region=us") && e.contains("f.parquet"),
        "{e}"
    );
    let e = refused("span").await;
    assert!(
        e.contains("more than one partition") && e.contains("eu") && e.contains("us"),
        "{e}"
    );
    let e = refused("noid").await;
    assert!(e.contains("required field `id`"), "{e}");
    let e = refused("type").await;
    assert!(e.contains("`id`") && e.contains("long"), "{e}");
    let t = handle.catalog().load_table(&ident).await?;
    assert!(
        t.metadata().current_snapshot().is_none(),
        "nothing committed"
    );

    let (_, m) = AddFilesBuilder::new(&handle, ident)
        .from([format!("{dir}/stats")])
        .await?;
    assert_eq!(m.files.to_vec()?[0].partition, "region=us");
    assert_eq!(
        py_rows(name, p, "bad.orders")?,
        json!([
            {"id": 3, "region": "us", "amount": 3},
            {"id": 4, "region": "us", "amount": 4}
        ])
    );
    Ok(())
}

/// The same from S3 (moto) into a Glue table: a Hive tree pyarrow writes under
/// `s3://lake/src` (with a `_SUCCESS` beside it) is listed through the table's own S3
/// properties and added; PyIceberg reads the rows pyarrow.dataset reads from the bucket. A
/// glob, and a single object, name files too.
#[tokio::test(flavor = "multi_thread")]
async fn a_hive_tree_on_s3_is_added_to_a_glue_table() -> TestResult {
    init_tracing();
    let (moto, p) = glue_on_moto();
    let p = &p;
    let endpoint = moto.endpoint();
    let fs = format!(
        "import pyarrow.fs as pafs\n\
         fs = pafs.S3FileSystem(endpoint_override='{endpoint}', access_key='{AWS_KEY}', \
                                secret_key='{AWS_SECRET}', region='{AWS_REGION}', scheme='http')\n"
    );
    pyiceberg(
        "lake",
        p,
        &format!(
            "{fs}import pyarrow as pa, pyarrow.parquet as pq\n\
             t = pa.table({{'id': pa.array([1, 2, 3, 4], pa.int64()), \
                            'region': ['eu', 'us', 'a b', None], \
                            'amount': pa.array([10, 20, 30, 40], pa.int32())}})\n\
             pq.write_to_dataset(t, 'lake/src', partition_cols=['region'], filesystem=fs)\n\
             with fs.open_output_stream('lake/src/_SUCCESS') as f: pass\n\
             emit(None)"
        ),
    )?;
    let mut want = pyiceberg(
        "lake",
        p,
        &format!(
            "{fs}import pyarrow.dataset as ds\n\
             d = ds.dataset('lake/src', filesystem=fs, format='parquet', \
                            partitioning=ds.partitioning(flavor='hive'), \
                            ignore_prefixes=['_', '.'])\n\
             emit(d.to_table().select(['id', 'region', 'amount']).to_pylist())"
        ),
    )?;
    if let Some(r) = want.as_array_mut() {
        sort_rows(r);
    }
    assert_eq!(want.as_array().map(Vec::len), Some(4), "{want}");

    let handle = open("lake", p).await?;
    let table = create_orders(&handle, "imp").await?;
    let ident = table.identifier().clone();
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from(["s3://lake/src"])
        .await?;
    assert_eq!(m.files.len(), 4, "{m:?}");
    assert_eq!(m.hidden, 1, "_SUCCESS: {m:?}");
    assert!(
        m.files
            .to_vec()?
            .iter()
            .all(|f| f.path.starts_with("s3://lake/src/region=")),
        "{m:?}"
    );
    assert_eq!(py_rows("lake", p, "imp.orders")?, want);

    // A glob and a single object, into a second table.
    let second = create_orders(&handle, "imp2").await?;
    let eu = m
        .files
        .to_vec()?
        .iter()
        .find(|f| f.partition == "region=eu")
        .map(|f| f.path.clone())
        .ok_or_else(|| anyhow::anyhow!("the eu file"))?;
    let (_, m2) = AddFilesBuilder::new(&handle, second.identifier().clone())
        .from(["s3://lake/src/region=u*/*.parquet".to_string(), eu])
        .dry_run(true)
        .await?;
    let parts: Vec<String> = m2
        .files
        .to_vec()?
        .into_iter()
        .map(|f| f.partition)
        .collect();
    assert_eq!(parts, ["region=us", "region=eu"], "{m2:?}");
    Ok(())
}

/// `batch_files` commits as it goes, and a job that fails part way resumes from its
/// checkpoint: the files its first run committed are skipped, not refused, and the rest added
/// once. Without the checkpoint, the re-run is refused as a duplicate.
#[tokio::test(flavor = "multi_thread")]
async fn a_batched_job_that_failed_part_way_resumes_from_its_checkpoint() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    hive_tree(name, p, &root)?;
    let want = dataset_rows(name, p, &root)?;
    // A file that is no Parquet, sorted after the others: the first run stops there.
    let bad = format!("{root}/region=zz");
    std::fs::create_dir_all(&bad)?;
    std::fs::write(format!("{bad}/bad.parquet"), b"not parquet at all")?;
    let checkpoint = db.dir.path().join("job.json");

    let handle = open(name, p).await?;
    let ident = create_orders(&handle, "bat").await?.identifier().clone();
    let job = || {
        AddFilesBuilder::new(&handle, ident.clone())
            .from([root.clone()])
            .batch_files(3)
            .checkpoint(&checkpoint)
    };
    let err = job().await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("bad.parquet") && err.contains("not a Parquet file"),
        "{err}"
    );
    // It says what was committed before and how to go on.
    assert!(
        err.contains("batch(es) were committed before this") && err.contains("--checkpoint"),
        "{err}"
    );
    assert!(checkpoint.exists());
    let committed = handle
        .catalog()
        .load_table(&ident)
        .await?
        .metadata()
        .snapshots()
        .count();
    assert_eq!(
        committed, 2,
        "two batches of three landed before the bad file"
    );

    std::fs::remove_dir_all(&bad)?;
    // Without the checkpoint: the committed files are duplicates.
    let err = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("already in"), "{err}");
    // A dry run with it shows what resuming adds, and writes nothing (the checkpoint stays);
    // the folder spelled another way is the same job.
    let (_, dry) = AddFilesBuilder::new(&handle, ident.clone())
        .from([format!("file://{root}/")])
        .batch_files(3)
        .checkpoint(&checkpoint)
        .dry_run(true)
        .await?;
    assert_eq!((dry.already_added, dry.files.len()), (6, 2), "{dry:?}");
    assert!(checkpoint.exists());
    // With it: the job finishes.
    let (_, m) = job().await?;
    assert_eq!(m.already_added, 6, "{m:?}");
    assert_eq!(m.files.len(), 2, "{m:?}");
    assert!(
        !checkpoint.exists(),
        "a finished job removes its checkpoint"
    );
    assert_eq!(py_rows(name, p, "bat.orders")?, want);
    Ok(())
}

/// Shapes a new-user trial and a review found accepted with lost or wrong rows, now refused
/// with the reason, nothing committed: a bucket or truncate partition whose source column the
/// files lack (it would read as NULL), a folder naming a column of an unpartitioned table the
/// files lack, field ids that contradict the names (swapped columns), a column the table lacks
/// (PyIceberg could not read the table), NULLs in a required column, `id` and `ID` both, a
/// struct field only its name's case or position would match, a folder value a bucket's
/// statistics cannot check but the rows contradict, a file without statistics under another
/// value's folder. And the folders that now count: the partition folder named itself, a key
/// in another case, the source column's name for a renamed identity field.
#[tokio::test(flavor = "multi_thread")]
async fn shapes_that_lost_rows_are_refused_and_folders_count_wherever_they_are() -> TestResult {
    use iceberg::spec::{Transform, UnboundPartitionSpec};
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let dir = db.dir.path().display().to_string();
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             def w(path, t, **kw):\n\
             \x20   os.makedirs(os.path.dirname(path), exist_ok=True)\n\
             \x20   pq.write_table(t, path, **kw)\n\
             def f(name, ty, fid=None, nullable=True):\n\
             \x20   md = {{b'PARQUET:field_id': str(fid).encode()}} if fid else None\n\
             \x20   return pa.field(name, ty, nullable=nullable, metadata=md)\n\
             i, a = pa.int64(), pa.int32()\n\
             plain = pa.schema([f('id', i), f('amount', a)])\n\
             w('{dir}/hive/region=eu/f.parquet', pa.table({{'id': [1, 2], 'amount': [1, 2]}}, schema=plain))\n\
             swapped = pa.schema([f('id', i, 1), f('region', pa.string(), 3), f('amount', pa.string(), 2)])\n\
             w('{dir}/swapped/f.parquet', pa.table({{'id': [1], 'region': ['eu'], 'amount': ['x']}}, schema=swapped))\n\
             w('{dir}/extra/region=eu/f.parquet', pa.table({{'id': [1], 'amount': pa.array([1], a), 'extra': [5]}}))\n\
             w('{dir}/nulls/region=eu/f.parquet', pa.table({{'id': pa.array([1, None], i), 'amount': pa.array([1, 2], a)}}))\n\
             w('{dir}/twice/region=eu/f.parquet', pa.table({{'id': pa.array([1], i), 'ID': pa.array([2], i)}}))\n\
             w('{dir}/bucket/id_bucket=0/f.parquet', pa.table({{'id': pa.array(range(50), i), 'region': ['eu'] * 50, 'amount': pa.array(range(50), a)}}))\n\
             req = pa.schema([f('id', i, nullable=False), f('region', pa.string()), f('amount', a)])\n\
             w('{dir}/nostats/region=eu/f.parquet', pa.table({{'id': [1], 'region': ['us'], 'amount': [1]}}, schema=req), write_statistics=False)\n\
             w('{dir}/named/region=ap/f.parquet', pa.table({{'id': [7], 'amount': [7]}}, schema=plain))\n\
             w('{dir}/case/REGION=sa/f.parquet', pa.table({{'id': [8], 'amount': [8]}}, schema=plain))\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let refused = |ident: iceberg::TableIdent, from: String| {
        let handle = handle.clone();
        async move {
            AddFilesBuilder::new(&handle, ident)
                .from([from])
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        }
    };
    // bucket(4, region) over files without `region`.
    let bucketed = create_orders_with_spec(
        &handle,
        "bk",
        UnboundPartitionSpec::builder()
            .add_partition_field(2, "region_bucket", Transform::Bucket(4))?
            .build(),
    )
    .await?
    .identifier()
    .clone();
    let e = refused(bucketed.clone(), format!("{dir}/hive")).await;
    assert!(
        e.contains("no column `region`") && e.contains("bucket[4]"),
        "{e}"
    );
    // Unpartitioned, a `region=` folder over files without `region`.
    let flat = create_orders_with_spec(&handle, "flat", UnboundPartitionSpec::builder().build())
        .await?
        .identifier()
        .clone();
    let e = refused(flat.clone(), format!("{dir}/hive")).await;
    assert!(
        e.contains("region=eu") && e.contains("not partitioned by"),
        "{e}"
    );
    // Ids that swap two columns.
    let e = refused(flat.clone(), format!("{dir}/swapped")).await;
    assert!(
        e.contains("carries field id 3") && e.contains("swapped"),
        "{e}"
    );
    // Identity(region) tables.
    let by_region = create_orders(&handle, "reg").await?.identifier().clone();
    let e = refused(by_region.clone(), format!("{dir}/extra")).await;
    assert!(
        e.contains("`extra`") && e.contains("not in the table"),
        "{e}"
    );
    let e = refused(by_region.clone(), format!("{dir}/nulls")).await;
    assert!(e.contains("1 NULL") && e.contains("required"), "{e}");
    let e = refused(by_region.clone(), format!("{dir}/twice")).await;
    assert!(e.contains("`ID`") && e.contains("not in the table"), "{e}");
    let e = refused(by_region.clone(), format!("{dir}/nostats")).await;
    assert!(e.contains("region=eu") && e.contains("region=us"), "{e}");
    // bucket(4, id) named by a folder the 50 ids contradict (statistics cannot tell).
    let by_id = create_orders_with_spec(
        &handle,
        "bid",
        UnboundPartitionSpec::builder()
            .add_partition_field(1, "id_bucket", Transform::Bucket(4))?
            .build(),
    )
    .await?
    .identifier()
    .clone();
    let e = refused(by_id, format!("{dir}/bucket")).await;
    assert!(
        e.contains("id_bucket=0") && e.contains("a row's `id`"),
        "{e}"
    );
    for ident in [&bucketed, &flat, &by_region] {
        let t = handle.catalog().load_table(ident).await?;
        assert!(
            t.metadata().current_snapshot().is_none(),
            "{ident}: nothing committed"
        );
    }

    // The partition folder named itself; a key in upper case.
    let (_, m) = AddFilesBuilder::new(&handle, by_region.clone())
        .from([format!("{dir}/named/region=ap"), format!("{dir}/case")])
        .await?;
    let parts: Vec<String> = m.files.to_vec()?.into_iter().map(|f| f.partition).collect();
    assert_eq!(parts, ["region=ap", "region=sa"], "{m:?}");
    // An identity field renamed from its column: `region=` folders still name it.
    let renamed = create_orders_with_spec(
        &handle,
        "ren",
        UnboundPartitionSpec::builder()
            .add_partition_field(2, "r", Transform::Identity)?
            .build(),
    )
    .await?
    .identifier()
    .clone();
    let (_, m) = AddFilesBuilder::new(&handle, renamed)
        .from([format!("{dir}/named")])
        .await?;
    assert_eq!(m.files.to_vec()?[0].partition, "r=ap");
    assert_eq!(
        py_rows(name, p, "ren.orders")?,
        json!([{"id": 7, "region": "ap", "amount": 7}])
    );
    Ok(())
}

/// Two imports of the same files at once: the second commit finds the first's snapshot added
/// them and is refused (the duplicate check is repeated at commit time), so no row is read
/// twice. Deterministically: an append told what it checked against refuses a file another
/// writer added since.
#[tokio::test(flavor = "multi_thread")]
async fn an_append_refuses_files_another_writer_added_since_it_checked() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let handle = open(name, p).await?;
    let table = create_orders(&handle, "race").await?;
    let ident = table.identifier().clone();
    let files = ops_core::write::write_data_files(
        &table,
        futures::stream::iter([Ok(orders_batch(&table, &[(1, Some("eu"), Some(1))])?)]),
    )
    .await?;
    let checked_at = table.metadata().current_snapshot_id();
    ops_core::ops::append::AppendBuilder::new(&handle, ident.clone())
        .with_files(files.clone())
        .await?;
    let err = ops_core::ops::append::AppendBuilder::new(&handle, ident.clone())
        .with_files(files)
        .refuse_readded_since(checked_at)
        .await
        .err();
    assert!(
        matches!(&err, Some(Error::CommitConflict { detail, .. }) if detail.contains("read twice")),
        "{err:?}"
    );

    let root = format!("{}/src", db.dir.path().display());
    hive_tree(name, p, &root)?;
    let target = create_orders_with_spec(
        &handle,
        "both",
        iceberg::spec::UnboundPartitionSpec::builder()
            .add_partition_field(2, "region", iceberg::spec::Transform::Identity)?
            .build(),
    )
    .await?
    .identifier()
    .clone();
    let run = || {
        AddFilesBuilder::new(&handle, target.clone())
            .from([root.clone()])
            .into_future()
    };
    let (a, b) = tokio::join!(run(), run());
    assert_eq!(
        [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "exactly one import lands: {:?} / {:?}",
        a.err(),
        b.err()
    );
    assert_eq!(
        py_rows(name, p, "both.orders")?,
        dataset_rows(name, p, &root)?
    );
    Ok(())
}

/// `snapshot`: a new table over pyarrow's Hive tree, left in place — its schema the files'
/// columns plus `region` (a string: its values are no numbers or dates) and `n` (an int),
/// identity partitions in folder order, `gc.enabled=false` so expiry and orphan cleanup refuse
/// to delete the source's files; PyIceberg reads the rows pyarrow.dataset reads. Then a file
/// arrives in the folder and one goes: `add_files --new-only` adds the new one and names the
/// gone one.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_over_a_hive_tree_then_new_files_only() -> TestResult {
    use ops_import::snapshot::SnapshotBuilder;
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow as pa, pyarrow.parquet as pq\n\
             t = pa.table({{'id': pa.array([1, 2, 3, 4], pa.int64()), \
                            'region': ['eu', 'eu', 'us', 'a b'], 'n': [1, 2, 1, 1], \
                            'amount': pa.array([10, 20, 30, 40], pa.int32())}})\n\
             pq.write_to_dataset(t, '{root}', partition_cols=['region', 'n'])\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = iceberg::TableIdent::from_strs(["snap", "orders"])?;
    let (none, dry) = SnapshotBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .dry_run(true)
        .await?;
    assert!(none.is_none());
    assert_eq!(dry.partition_columns, ["region", "n"]);
    assert_eq!(
        dry.columns,
        ["id: long", "amount: int", "region: string", "n: int"]
    );
    assert!(!handle.catalog().table_exists(&ident).await?);

    let (table, m) = SnapshotBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await?;
    let table = table.ok_or_else(|| anyhow::anyhow!("a table"))?;
    assert_eq!(m.add.files.len(), 4);
    assert_eq!(table_property(&table, "gc.enabled"), Some("false"));
    assert_eq!(
        py_rows(name, p, "snap.orders")?,
        dataset_columns(name, p, &root, &["id", "amount", "region", "n"])?
    );
    // The source's files are not the table's to delete.
    let err = ops_maintenance::remove_orphans::RemoveOrphansBuilder::new(&handle, ident.clone())
        .dry_run(false)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("gc.enabled"), "{err}");
    let err =
        ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(&handle, ident.clone())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
    assert!(err.contains("gc.enabled"), "{err}");
    // Again into the same table: refused, it exists.
    let err = SnapshotBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("exists already"), "{err}");

    // One file arrives, one goes.
    let gone = m
        .add
        .files
        .to_vec()?
        .iter()
        .find(|f| f.partition == "region=us/n=1")
        .map(|f| f.path.clone())
        .ok_or_else(|| anyhow::anyhow!("the us file"))?;
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             os.makedirs('{root}/region=ap/n=7')\n\
             pq.write_table(pa.table({{'id': pa.array([5], pa.int64()), \
                                       'amount': pa.array([50], pa.int32())}}), \
                            '{root}/region=ap/n=7/new.parquet')\n\
             emit(None)"
        ),
    )?;
    std::fs::remove_file(gone.trim_start_matches("file://"))?;
    // Limited to another partition, the run does not judge the gone file (nor would
    // --remove-missing remove it).
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .partition_filter("region", "ap")
        .dry_run(true)
        .await?;
    assert_eq!(m.files.len(), 1, "{m:?}");
    assert!(m.disappeared.is_empty(), "{m:?}");
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .await?;
    assert_eq!(m.files.len(), 1, "{m:?}");
    assert_eq!(m.files.to_vec()?[0].partition, "region=ap/n=7");
    assert_eq!(m.already_added, 3);
    assert_eq!(m.disappeared, [gone]);
    // Nothing new: nothing committed.
    let (t, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .await?;
    assert!(m.files.is_empty() && m.snapshot_id.is_none(), "{m:?}");
    assert_eq!(t.metadata().snapshots().count(), 2);
    // --remove-missing: the gone file leaves the table, whose reads work again (they failed
    // on the missing file, and no other command could drop its entry).
    let (t, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .remove_missing(true)
        .await?;
    assert_eq!((m.removed_missing, m.disappeared.len()), (1, 1), "{m:?}");
    assert_eq!(t.metadata().snapshots().count(), 3);
    assert_eq!(
        py_rows(name, p, "snap.orders")?,
        dataset_columns(name, p, &root, &["id", "amount", "region", "n"])?
    );
    // A file rewritten in place since it was added: refused, not skipped (the table's
    // statistics describe its old contents).
    let changed = a_live_file_of(&t).await?;
    pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow as pa, pyarrow.parquet as pq\n\
             pq.write_table(pa.table({{'id': pa.array([9, 10, 11], pa.int64()), \
                                       'amount': pa.array([9, 10, 11], pa.int32())}}), \
                            '{}')\n\
             emit(None)",
            changed.trim_start_matches("file://")
        ),
    )?;
    let err = AddFilesBuilder::new(&handle, t.identifier().clone())
        .from([changed
            .rsplit_once('/')
            .map_or(changed.clone(), |(d, _)| d.to_string())])
        .new_only(true)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("has changed since it was added"), "{err}");
    Ok(())
}

/// A data file of `table`'s current snapshot.
async fn a_live_file_of(table: &iceberg::table::Table) -> anyhow::Result<String> {
    let snapshot = table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    let list = table.manifest_list_reader(snapshot).load().await?;
    for mf in list.entries() {
        for e in mf.load_manifest(table.file_io()).await?.entries() {
            if e.is_alive() {
                return Ok(e.data_file().file_path().to_string());
            }
        }
    }
    anyhow::bail!("no live file")
}

/// On a REST catalog (rustberg): `snapshot` creates the table over pyarrow's Hive tree and adds
/// its files, `add-files` adds them to a table the server holds, and the copy path copies them
/// into a new one; PyIceberg, through the same server, reads the rows pyarrow.dataset reads.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_on_a_rest_catalog() -> TestResult {
    init_tracing();
    let rustberg = ops_tests::servers::Rustberg::start();
    let p = &props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let dir = tempfile::tempdir()?;
    let root = format!("{}/src", dir.path().display());
    hive_tree("c", p, &root)?;
    let handle = open("c", p).await?;
    let ident = iceberg::TableIdent::from_strs(["rest_snap", "orders"])?;
    let (_, m) = ops_import::snapshot::SnapshotBuilder::new(&handle, ident)
        .from([root.clone()])
        .await?;
    assert_eq!(m.partition_columns, ["region"]);
    assert_eq!(m.add.files.len(), 8, "{m:?}");
    let want = dataset_columns("c", p, &root, &["id", "amount", "region"])?;
    assert_eq!(py_rows("c", p, "rest_snap.orders")?, want);

    // add-files into a table the REST catalog holds, and the copy path into it.
    let table = create_orders(&handle, "rest_add").await?;
    let (_, m) = AddFilesBuilder::new(&handle, table.identifier().clone())
        .from([root.clone()])
        .await?;
    assert_eq!(m.files.len(), 8, "{m:?}");
    assert_eq!(py_rows("c", p, "rest_add.orders")?, want);
    copy_tree(
        &handle,
        &root,
        &dir.path().join("staged"),
        "rest_copy.orders",
    )
    .await?;
    assert_eq!(py_rows("c", p, "rest_copy.orders")?, renamed(want));
    Ok(())
}

/// Spark's INT96 timestamps (no annotation: read as a timestamp without a zone) in a table
/// whose column is `timestamptz` (a snapshot infers it so, as Spark's timestamps are
/// instants): our reader used to leave the column out of its projection, so a compaction, a
/// delete or a copy rewrote every value as NULL (a new-user trial). PyIceberg reads the
/// values before and after.
#[tokio::test(flavor = "multi_thread")]
async fn int96_timestamps_survive_compaction_of_an_imported_table() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import os, datetime as dt, pyarrow as pa, pyarrow.parquet as pq\n\
             os.makedirs('{root}')\n\
             for k in range(5):\n\
             \x20   pq.write_table(pa.table({{'x': pa.array([2 * k, 2 * k + 1], pa.int64()), \
                                 't': pa.array([dt.datetime(2024, 1, 1, 10 + k)] * 2, \
                                               pa.timestamp('us'))}}), \
                                f'{root}/f{{k}}.parquet', use_deprecated_int96_timestamps=True)\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = iceberg::TableIdent::from_strs(["i96", "t"])?;
    let (_, m) = ops_import::snapshot::SnapshotBuilder::new(&handle, ident.clone())
        .from([root])
        .await?;
    assert!(m.columns.contains(&"t: timestamptz".to_string()), "{m:?}");
    let read = || {
        pyiceberg(
            name,
            p,
            "t = catalog.load_table('i96.t').scan().to_arrow()\n\
             emit(sorted(str(v) for v in t['t'].to_pylist()))",
        )
    };
    let before = read()?;
    assert!(
        before
            .as_array()
            .is_some_and(|v| v.len() == 10 && !v.contains(&json!("None"))),
        "{before}"
    );
    let (_, c) = ops_maintenance::compact::CompactBuilder::new(&handle, ident)
        .min_input_files(2)
        .await?;
    assert!(c.snapshot_id.is_some(), "{c:?}");
    assert_eq!(read()?, before);
    Ok(())
}

/// `root` staged under `stage_dir` and copied by the migrator into the new table `dest` (of
/// `handle`'s catalog) with `amount` renamed `total`, every row (the Hive tree's nine), checked
/// by `verify`'s `row_count` and `partition_hash`.
async fn copy_tree(
    handle: &ops_core::CatalogHandle,
    root: &str,
    stage_dir: &std::path::Path,
    dest: &str,
) -> anyhow::Result<ops_import::staged::StagedSource> {
    use ops_datamig::{DataMigrator, VerifyMethod};
    use ops_reconcile::SchemaReconciler;

    let staged = ops_import::staged::StageBuilder::new(handle, vec![root.to_string()], stage_dir)
        .open()
        .await?;
    assert!(staged.created && staged.added == 8, "{}", staged.added);
    let dest = iceberg::TableIdent::from_strs(dest.split('.'))?;
    let migrator = || {
        DataMigrator::new(&staged.handle, staged.ident.clone(), handle, dest.clone())
            .schema_reconciler(SchemaReconciler::new().rename("amount", "total"))
    };
    let result = migrator().create_dest(true).run().await?;
    assert_eq!(result.rows_moved, 9, "{result:?}");
    for method in [VerifyMethod::RowCount, VerifyMethod::PartitionHash] {
        let v = migrator().verify(method, 10).await?;
        assert!(v.matches, "{method:?}: {v:?}");
    }
    Ok(staged)
}

/// `rows` with `amount` renamed `total`, sorted.
fn renamed(mut rows: Value) -> Value {
    for r in rows.as_array_mut().into_iter().flatten() {
        if let Some(o) = r.as_object_mut()
            && let Some(v) = o.remove("amount")
        {
            o.insert("total".into(), v);
        }
    }
    if let Some(r) = rows.as_array_mut() {
        sort_rows(r);
    }
    rows
}

/// The copy path over a folder (`migrate-data --source-path`): the Hive tree staged as an
/// Iceberg table (files in place) and copied by the migrator into a new table with a rename;
/// `verify` by `row_count` and `partition_hash` matches, and PyIceberg reads the copy with the
/// rows pyarrow.dataset reads from the folder. Staged again, the table is reused with the file
/// that arrived since; a file gone from the folder is refused, naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_hive_tree_is_copied_through_the_migrator() -> TestResult {
    use ops_import::staged::StageBuilder;

    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    hive_tree(name, p, &root)?;
    let handle = open(name, p).await?;
    let stage_dir = db.dir.path().join("staged");
    let staged = copy_tree(&handle, &root, &stage_dir, "copy.orders").await?;
    let want = renamed(dataset_rows(name, p, &root)?);
    assert_eq!(py_rows(name, p, "copy.orders")?, want);

    // The folder grows: staged again, the same table gains the new file.
    pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow as pa, pyarrow.parquet as pq\n\
             pq.write_table(pa.table({{'id': pa.array([10], pa.int64()), \
                                       'amount': pa.array([100], pa.int32())}}), \
                            '{root}/region=eu/late.parquet')\n\
             emit(None)"
        ),
    )?;
    let again = StageBuilder::new(&handle, vec![root.clone()], &stage_dir)
        .open()
        .await?;
    assert!(!again.created && again.added == 1, "{}", again.added);
    assert_eq!(
        again.table.metadata().uuid(),
        staged.table.metadata().uuid()
    );

    std::fs::remove_file(format!("{root}/region=eu/late.parquet"))?;
    let err = StageBuilder::new(&handle, vec![root.clone()], &stage_dir)
        .open()
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a source with a file gone was staged"))?;
    assert!(err.to_string().contains("late.parquet"), "{err}");
    Ok(())
}

/// Millisecond timestamps (pandas' `coerce_timestamps='ms'`, old writers) in imported files:
/// iceberg's reader refused every such file ("Unsupported Arrow data type: Timestamp(ms)"), so
/// a delete, a compaction or a copy of the table failed (a new-user trial). Now each keeps
/// every value, as PyIceberg reads them.
#[tokio::test(flavor = "multi_thread")]
async fn millisecond_timestamps_survive_delete_compaction_and_copy() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import os, datetime as dt, pyarrow as pa, pyarrow.parquet as pq\n\
             os.makedirs('{root}')\n\
             for k in range(4):\n\
             \x20   pq.write_table(pa.table({{'x': pa.array([2 * k, 2 * k + 1], pa.int64()), \
                                 't': pa.array([dt.datetime(2024, 1, 1, 10 + k, 0, 0, 123000)] * 2, \
                                               pa.timestamp('ms'))}}), \
                                f'{root}/f{{k}}.parquet')\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = iceberg::TableIdent::from_strs(["ms", "t"])?;
    ops_import::snapshot::SnapshotBuilder::new(&handle, ident.clone())
        .from([root])
        .await?;
    let read = |table: &str| {
        pyiceberg(
            name,
            p,
            &format!(
                "t = catalog.load_table('{table}').scan().to_arrow()\n\
                 emit(sorted(str(v) for v in t['t'].to_pylist()))"
            ),
        )
    };
    let before = read("ms.t")?;
    assert!(
        before.as_array().is_some_and(|v| v.len() == 8
            && v.iter()
                .all(|s| s.as_str().is_some_and(|s| s.ends_with(".123000")))),
        "{before}"
    );
    ops_core::ops::delete::DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("x = 0")
        .await?;
    let (_, c) = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(c.snapshot_id.is_some(), "{c:?}");
    let after = read("ms.t")?;
    let mut want = before.as_array().cloned().unwrap_or_default();
    want.remove(0);
    assert_eq!(after, Value::Array(want.clone()));
    let result = ops_datamig::DataMigrator::new(
        &handle,
        ident,
        &handle,
        iceberg::TableIdent::from_strs(["ms", "copy"])?,
    )
    .create_dest(true)
    .run()
    .await?;
    assert_eq!(result.rows_moved, 7, "{result:?}");
    assert_eq!(read("ms.copy")?, Value::Array(want));
    Ok(())
}

/// Decimal and UUID columns of files pyarrow wrote get bounds as Java writes them — a decimal
/// stored as INT32, and a UUID — and a decimal stored as 11 bytes of two's complement none
/// (writers have ordered those statistics wrongly): PyIceberg decodes each file's values from
/// the manifest, filters that prune by them return exactly the rows pyarrow holds, and a UUID
/// filter plans only the file whose bounds hold it. (PyIceberg's
/// `inspect.files()` cannot show a UUID bound, nor can pyarrow compare UUIDs to filter rows.)
#[tokio::test(flavor = "multi_thread")]
async fn decimal_and_uuid_columns_get_their_bounds() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import os, uuid, decimal as D, pyarrow as pa, pyarrow.parquet as pq\n\
             from pyiceberg.schema import Schema\n\
             from pyiceberg.types import NestedField, DecimalType, UUIDType, LongType\n\
             os.makedirs('{root}')\n\
             def w(k, d1, d2, u):\n\
             \x20   pq.write_table(pa.table({{\
                 'id': pa.array([2 * k, 2 * k + 1], pa.int64()), \
                 'd1': pa.array([D.Decimal(x) for x in d1], pa.decimal128(9, 2)), \
                 'd2': pa.array([D.Decimal(x) for x in d2], pa.decimal128(25, 3)), \
                 'u': pa.array([uuid.UUID(int=x).bytes for x in u], pa.uuid())}}), \
                 f'{root}/f{{k}}.parquet', store_decimal_as_integer=True)\n\
             w(0, ['-1.23', '4.56'], ['-2.000', '12345678901234567890.123'], [5, 2 ** 127])\n\
             w(1, ['7.00', '9.99'], ['5.500', '6.250'], [3, 4])\n\
             catalog.create_namespace('dec')\n\
             catalog.create_table('dec.t', Schema(\
                 NestedField(1, 'id', LongType()), \
                 NestedField(2, 'd1', DecimalType(9, 2)), \
                 NestedField(3, 'd2', DecimalType(25, 3)), \
                 NestedField(4, 'u', UUIDType())))\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = iceberg::TableIdent::from_strs(["dec", "t"])?;
    let (_, m) = AddFilesBuilder::new(&handle, ident).from([root]).await?;
    assert_eq!(m.files.len(), 2, "{m:?}");
    let got = pyiceberg(
        name,
        p,
        "import os, uuid\n\
         from pyiceberg.conversions import from_bytes\n\
         t = catalog.load_table('dec.t')\n\
         types = {f.field_id: f.field_type for f in t.schema().fields}\n\
         files = [e.data_file for m in t.current_snapshot().manifests(t.io) \
                  for e in m.fetch_manifest_entry(t.io)]\n\
         def text(v):\n\
         \x20   return str(uuid.UUID(bytes=v)) if isinstance(v, bytes) else str(v)\n\
         bounds = sorted([text(from_bytes(types[i], b[i])) if i in b else None \
                          for i in (2, 3, 4) \
                          for b in (f.lower_bounds, f.upper_bounds)] for f in files)\n\
         def ids(f):\n\
         \x20   return sorted(t.scan(row_filter=f).to_arrow()['id'].to_pylist())\n\
         emit({'bounds': bounds, \
               'd1': ids('d1 > 4.50'), 'd2': ids('d2 >= 6.250'), \
               'u': sorted(os.path.basename(f.file.file_path) for f in \
                           t.scan(row_filter=\"u = '00000000-0000-0000-0000-000000000003'\")\
                            .plan_files())})",
    )?;
    assert_eq!(
        got,
        json!({
            "bounds": [
                ["-1.23", "4.56", null, null,
                 "00000000-0000-0000-0000-000000000005", "80000000-0000-0000-0000-000000000000"],
                ["7.00", "9.99", null, null,
                 "00000000-0000-0000-0000-000000000003", "00000000-0000-0000-0000-000000000004"],
            ],
            "d1": [1, 2, 3],
            "d2": [1, 3],
            "u": ["f1.parquet"],
        })
    );
    Ok(())
}

/// What the trial of 2026-12-07 imported and PyIceberg then could not scan at all:
/// - a snapshot typed a column pyarrow annotates as a UUID (top level, in a struct, in a
///   list) `fixed[16]`, where Java's `ParquetSchemaUtil` reads `uuid` ("Cannot promote uuid to
///   fixed[16]");
/// - a timestamp whose stored Arrow schema names a zone other than UTC, and a path with `#`:
///   both refused, naming the file, before a table is made (PyIceberg's `add_files` refuses
///   the zone; its FileIO reads `#` as a URL fragment).
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_types_uuids_and_refuses_files_pyiceberg_could_not_open() -> TestResult {
    use ops_import::snapshot::SnapshotBuilder;
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let dir = db.dir.path().display().to_string();
    pyiceberg(
        name,
        p,
        &format!(
            "import os, uuid, datetime as dt, pyarrow as pa, pyarrow.parquet as pq\n\
             for d in ['uuid', 'zoned', 'hash/k=a#1']: os.makedirs('{dir}/' + d)\n\
             u = lambda i: uuid.UUID(int=i).bytes\n\
             uuids = lambda v: pa.ExtensionArray.from_storage(pa.uuid(), pa.array(v, pa.binary(16)))\n\
             pq.write_table(pa.table({{\
                 'id': pa.array([1, 2], pa.int64()), \
                 'u': pa.array([u(1), None], pa.uuid()), \
                 's': pa.StructArray.from_arrays([uuids([u(2), None])], names=['v'], \
                     mask=pa.array([False, True])), \
                 'l': pa.ListArray.from_arrays(pa.array([0, 2, 2], pa.int32()), \
                     uuids([u(3), None]))}}), \
                 '{dir}/uuid/a.parquet')\n\
             pq.write_table(pa.table({{'ts': pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)], \
                 pa.timestamp('us', tz='America/New_York'))}}), '{dir}/zoned/a.parquet')\n\
             pq.write_table(pa.table({{'id': [1]}}), '{dir}/hash/k=a#1/a.parquet')\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = |t: &str| iceberg::TableIdent::from_strs(["imp", t]);
    SnapshotBuilder::new(&handle, ident("uuids")?)
        .from([format!("{dir}/uuid")])
        .await?;
    let got = pyiceberg(
        name,
        p,
        "import uuid\n\
         t = catalog.load_table('imp.uuids')\n\
         h = lambda v: v if v is None else v.hex if isinstance(v, uuid.UUID) else v.hex()\n\
         emit({'schema': [str(f.field_type) for f in t.schema().fields], \
               'rows': [[r['id'], h(r['u']), r['s'] and h(r['s']['v']), [h(v) for v in r['l']]] \
                        for r in sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r['id'])]})",
    )?;
    let hex = |i: u32| format!("{i:032x}");
    assert_eq!(
        got,
        json!({
            "schema": ["long", "uuid", "struct<5: v: optional uuid>", "list<uuid>"],
            "rows": [[1, hex(1), hex(2), [hex(3), null]], [2, null, null, []]],
        })
    );
    for (t, from, says) in [
        (
            "zoned",
            format!("{dir}/zoned"),
            "is a timestamp in zone America/New_York",
        ),
        ("hash", format!("{dir}/hash"), "has `#` in its path"),
    ] {
        let e = SnapshotBuilder::new(&handle, ident(t)?)
            .from([from])
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(says), "{t}: {e}");
        assert!(!handle.catalog().table_exists(&ident(t)?).await?, "{t}");
    }
    Ok(())
}

/// A snapshot killed after making its table and before adding the files left the table empty;
/// running it again said only "exists already" (the trial of 2026-12-07). The leftover (its
/// marker, no snapshot) is made anew; a table without the marker, or with snapshots, is still
/// refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_stopped_before_its_files_were_added_runs_again() -> TestResult {
    use ops_import::snapshot::{SNAPSHOT_OF, SnapshotBuilder};
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             os.makedirs('{root}')\n\
             pq.write_table(pa.table({{'id': pa.array([1, 2], pa.int64())}}), '{root}/a.parquet')\n\
             from pyiceberg.schema import Schema\n\
             from pyiceberg.types import NestedField, LongType\n\
             catalog.create_namespace('snap')\n\
             s = Schema(NestedField(1, 'id', LongType()))\n\
             catalog.create_table('snap.left', s, properties={{'{SNAPSHOT_OF}': '[\"x\"]', 'gc.enabled': 'false'}})\n\
             catalog.create_table('snap.theirs', s)\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = |t: &str| iceberg::TableIdent::from_strs(["snap", t]);
    let (table, _) = SnapshotBuilder::new(&handle, ident("left")?)
        .from([root.clone()])
        .await?;
    let table = table.ok_or_else(|| anyhow::anyhow!("a table"))?;
    assert_eq!(table.metadata().snapshots().count(), 1);
    assert_eq!(
        py_rows(name, p, "snap.left")?,
        json!([{"id": 1}, {"id": 2}])
    );
    for t in ["left", "theirs"] {
        let e = SnapshotBuilder::new(&handle, ident(t)?)
            .from([root.clone()])
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("exists already"), "{t}: {e}");
    }
    Ok(())
}

/// Files compaction rewrote stay in their folder until expiry: added again — the cron job's
/// `--new-only` run after a compaction, or a plain re-run — they would read their rows twice
/// (a new-user trial: 30 rows became 61). A plain run is refused naming one; `--new-only`
/// skips them and adds only the file that arrived since, every row once.
#[tokio::test(flavor = "multi_thread")]
async fn files_a_compaction_rewrote_are_not_added_again() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let (name, p) = ("c", &db.props);
    let root = format!("{}/src", db.dir.path().display());
    pyiceberg(
        name,
        p,
        &format!(
            "import os, pyarrow as pa, pyarrow.parquet as pq\n\
             os.makedirs('{root}')\n\
             for k in range(4):\n\
             \x20   pq.write_table(pa.table({{'id': pa.array([2 * k, 2 * k + 1], pa.int64())}}), \
                                f'{root}/f{{k}}.parquet')\n\
             emit(None)"
        ),
    )?;
    let handle = open(name, p).await?;
    let ident = iceberg::TableIdent::from_strs(["cmp", "t"])?;
    ops_import::snapshot::SnapshotBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await?;
    let (_, c) = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(c.snapshot_id.is_some(), "{c:?}");
    let ids = || -> anyhow::Result<Value> {
        pyiceberg(
            name,
            p,
            "emit(sorted(catalog.load_table('cmp.t').scan().to_arrow()['id'].to_pylist()))",
        )
    };
    assert_eq!(ids()?, json!([0, 1, 2, 3, 4, 5, 6, 7]));

    let err = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("was in") && err.contains("history removed it") && err.contains("f0"),
        "{err}"
    );
    // f4 arrives, and f1 is rewritten in place (its size differs: new contents, as a Hive
    // INSERT OVERWRITE reusing the name): both are added, the three others skipped.
    pyiceberg(
        name,
        p,
        &format!(
            "import pyarrow as pa, pyarrow.parquet as pq\n\
             pq.write_table(pa.table({{'id': pa.array([8], pa.int64())}}), '{root}/f4.parquet')\n\
             pq.write_table(pa.table({{'id': pa.array([100, 101, 102], pa.int64())}}), \
                            '{root}/f1.parquet')\n\
             emit(None)"
        ),
    )?;
    let before = handle.catalog().load_table(&ident).await?;
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .await?;
    assert_eq!((m.files.len(), m.removed_before), (2, 3), "{m:?}");
    let mut added: Vec<String> = m.files.to_vec()?.into_iter().map(|f| f.path).collect();
    added.sort();
    assert_eq!(
        added,
        [
            format!("file://{root}/f1.parquet"),
            format!("file://{root}/f4.parquet")
        ]
    );
    let rows = json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 101, 102]);
    assert_eq!(ids()?, rows);
    // That commit compacted, then both rolled back: a removal off the table's history says
    // nothing (f1 and f4 are added again, not skipped as removed).
    let (_, c) = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(c.snapshot_id.is_some(), "{c:?}");
    let previous = before
        .metadata()
        .current_snapshot_id()
        .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
    ops_core::ops::rollback::RollbackBuilder::to_snapshot(&handle, ident.clone(), previous).await?;
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .await?;
    assert_eq!((m.files.len(), m.removed_before), (2, 3), "{m:?}");
    assert_eq!(ids()?, rows);
    // Compacted again: f1 has now been removed twice, at its old size and at its new one. The
    // last removal's size is the one compared: every file is skipped.
    let (_, c) = ops_maintenance::compact::CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert!(c.snapshot_id.is_some(), "{c:?}");
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([root.clone()])
        .new_only(true)
        .await?;
    assert_eq!((m.files.len(), m.removed_before), (0, 5), "{m:?}");
    assert_eq!(ids()?, rows);
    // --allow-duplicate-files adds them anyway, as it says.
    let (_, m) = AddFilesBuilder::new(&handle, ident.clone())
        .from([format!("{root}/f0.parquet")])
        .allow_duplicate_files(true)
        .await?;
    assert_eq!(m.files.len(), 1, "{m:?}");
    assert_eq!(
        ids()?,
        json!([0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 100, 101, 102])
    );
    Ok(())
}
