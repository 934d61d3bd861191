//! Format-version-1 tables (issue 31, failures 2 and 4), written by PyIceberg and read back by it.
//!
//! - Tags and branches survive every command that commits, on v1 and v2 tables, on SQLite, Glue
//!   and REST; a REST server that cannot keep a v1 table's refs gets no commit at all.
//! - A v1 table whose partition field was removed (kept as `void` under the column's name) takes
//!   every maintenance, delete, upsert and migration path.
//! - Old v1 metadata whose partition field ids restart at 1000 in each spec is read, written,
//!   compacted and copied by spec.

use std::collections::BTreeMap;
use std::time::Duration;

use iceberg::TableIdent;
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_schema::EvolveSchemaBuilder;
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::rollback::RollbackBuilder;
use ops_datamig::{DataMigrator, WriteMode};
use ops_maintenance::compact::CompactBuilder;
use ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder;
use ops_maintenance::remove_orphans::RemoveOrphansBuilder;
use ops_tests::oracle::pyiceberg;
use ops_tests::servers::Rustberg;
use serde_json::{Value, json};

use crate::common::*;

/// 2099-01-01: every snapshot is older.
const FAR_FUTURE_MS: i64 = 4_070_908_800_000;

/// A ref as compared: (name, "tag" or "branch", snapshot id).
type Refs = BTreeMap<String, (String, i64)>;

/// The refs in `table`'s metadata file, read as JSON (not through iceberg's parser).
async fn refs_on_file(table: &Table) -> anyhow::Result<Refs> {
    let location = table
        .metadata_location()
        .ok_or_else(|| anyhow::anyhow!("{} has no metadata location", table.identifier()))?;
    let bytes = table.file_io().new_input(location)?.read().await?;
    let doc: Value = serde_json::from_slice(&bytes)?;
    Ok(refs_from_json(&doc["refs"]))
}

fn refs_from_json(refs: &Value) -> Refs {
    refs.as_object()
        .into_iter()
        .flatten()
        .map(|(name, r)| {
            (
                name.clone(),
                (
                    r["type"].as_str().unwrap_or_default().to_string(),
                    r["snapshot-id"].as_i64().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// The refs of `want` other than `main` are all in the table's current metadata file, at the
/// same snapshots, and iceberg reads them too.
async fn assert_refs_kept(
    handle: &CatalogHandle,
    ident: &TableIdent,
    want: &Refs,
    after: &str,
) -> anyhow::Result<Table> {
    let table = handle.catalog().load_table(ident).await?;
    let on_file = refs_on_file(&table).await?;
    for (name, (kind, id)) in want.iter().filter(|(n, _)| *n != "main") {
        assert_eq!(
            on_file.get(name),
            Some(&(kind.clone(), *id)),
            "{ident}: after {after} the metadata file has refs {on_file:?}, want {name} ({kind} at {id})"
        );
        assert_eq!(
            table
                .metadata()
                .snapshot_for_ref(name)
                .map(|s| s.snapshot_id()),
            Some(*id),
            "{ident}: after {after} iceberg does not read {name}"
        );
    }
    Ok(table)
}

/// PyIceberg's view of each table: its refs, its rows, and the rows at each ref.
fn pyiceberg_refs(
    name: &str,
    p: &BTreeMap<String, String>,
    tables: &[&str],
) -> anyhow::Result<Value> {
    let code = format!(
        "out = {{}}\n\
         for name in {tables:?}:\n\
         \x20   t = catalog.load_table(name)\n\
         \x20   refs = {{k: {{'type': str(r.snapshot_ref_type.value), 'snapshot-id': r.snapshot_id}} \
                     for k, r in t.metadata.refs.items()}}\n\
         \x20   out[name] = {{'refs': refs, 'rows': rows(t), \
                    'at': {{k: rows(t, r.snapshot_id) for k, r in t.metadata.refs.items() if k != 'main'}}}}\n\
         emit(out)"
    );
    pyiceberg(name, p, &code)
}

/// The PyIceberg set-up both catalogs share: in `r`, `t1` (format version 1, unless
/// `v1_elsewhere` names the catalog to make it in) and `t2` (version 2), each (id long, region
/// string) partitioned by region: an append S1, a tag `audit` and a branch `b1` at S1, then an
/// overwrite and three appends on main and one append on `b1`; and `src`, `src2` (v2) to
/// migrate from. `v1_elsewhere` makes `t1` in that SQL catalog (same warehouse) and registers it.
fn setup_code(v1_elsewhere: Option<&BTreeMap<String, String>>) -> String {
    let make_v1 = match v1_elsewhere {
        None => "make(catalog, 'r.t1', '1')".to_string(),
        Some(side) => format!(
            "from pyiceberg.catalog import load_catalog\n\
             side = load_catalog('side', **{})\n\
             side.create_namespace('r')\n\
             t = make(side, 'r.t1', '1')\n\
             catalog.register_table('r.t1', t.metadata_location)",
            serde_json::to_string(side).unwrap_or_default()
        ),
    };
    format!(
        "import pyarrow as pa\n\
         catalog.create_namespace('r')\n\
         schema = pa.schema([('id', pa.int64()), ('region', pa.string())])\n\
         def df(ids, region):\n\
         \x20   return pa.table({{'id': ids, 'region': [region] * len(ids)}}, schema=schema)\n\
         def make(cat, name, version):\n\
         \x20   t = cat.create_table(name, schema=schema, properties={{'format-version': version}})\n\
         \x20   with t.update_spec() as u:\n\
         \x20       u.add_identity('region')\n\
         \x20   t.append(pa.concat_tables([df([1], 'eu'), df([2], 'us')]))\n\
         \x20   s1 = t.metadata.current_snapshot_id\n\
         \x20   t.overwrite(df([3], 'eu'))\n\
         \x20   t.append(df([4], 'us'))\n\
         \x20   t.append(df([5], 'us'))\n\
         \x20   t.append(df([6], 'eu'))\n\
         \x20   t.manage_snapshots().create_tag(s1, 'audit').create_branch(s1, 'b1').commit()\n\
         \x20   t.append(df([7], 'ap'), branch='b1')\n\
         \x20   return t\n\
         {make_v1}\n\
         make(catalog, 'r.t2', '2')\n\
         for name, ids in (('r.src', [100, 101]), ('r.src2', [100, 102])):\n\
         \x20   s = catalog.create_table(name, schema=schema)\n\
         \x20   s.append(df(ids, 'src'))\n\
         emit('ok')"
    )
}

/// Every command that commits, on `r.t1` and `r.t2`: each keeps every ref where it was, and
/// PyIceberg reads each ref as before; expiry far in the future keeps the files the refs read.
async fn refs_survive_every_commit(
    handle: &CatalogHandle,
    name: &str,
    p: &BTreeMap<String, String>,
) -> TestResult {
    let before = pyiceberg_refs(name, p, &["r.t1", "r.t2"])?;
    for t in ["t1", "t2"] {
        let ident = TableIdent::from_strs(["r", t])?;
        let full = format!("r.{t}");
        let want = refs_from_json(&before[&full]["refs"]);
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            vec!["audit", "b1", "main"],
            "{full}: PyIceberg made {before}"
        );
        let (_, m) = CompactBuilder::new(handle, ident.clone())
            .min_input_files(2)
            .await?;
        assert!(m.snapshot_id.is_some(), "{full}: nothing compacted: {m:?}");
        assert_refs_kept(handle, &ident, &want, "compact").await?;

        DeleteBuilder::new(handle, ident.clone())
            .with_filter_text("id = 4")
            .await?;
        assert_refs_kept(handle, &ident, &want, "delete").await?;

        DataMigrator::new(
            handle,
            TableIdent::from_strs(["r", "src"])?,
            handle,
            ident.clone(),
        )
        .run()
        .await?;
        assert_refs_kept(handle, &ident, &want, "migrate-data").await?;

        DataMigrator::new(
            handle,
            TableIdent::from_strs(["r", "src2"])?,
            handle,
            ident.clone(),
        )
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .run()
        .await?;
        let table = assert_refs_kept(handle, &ident, &want, "upsert").await?;

        let head = table
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
        let parent = head
            .parent_snapshot_id()
            .ok_or_else(|| anyhow::anyhow!("no parent"))?;
        let head = head.snapshot_id();
        RollbackBuilder::to_snapshot(handle, ident.clone(), parent).await?;
        assert_refs_kept(handle, &ident, &want, "rollback").await?;
        RollbackBuilder::set_current_snapshot(handle, ident.clone(), head).await?;
        assert_refs_kept(handle, &ident, &want, "set-current-snapshot").await?;

        EvolveSchemaBuilder::new(handle, ident.clone())
            .add_column(
                "note",
                iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::String),
            )
            .await?;
        assert_refs_kept(handle, &ident, &want, "evolve-schema").await?;
        EvolveSpecBuilder::new(handle, ident.clone())
            .add_field("id", iceberg::spec::Transform::Bucket(4), None)
            .await?;
        assert_refs_kept(handle, &ident, &want, "evolve-spec").await?;

        let (_, m) = ExpireSnapshotsBuilder::new(handle, ident.clone())
            .older_than_ms(FAR_FUTURE_MS)
            .retain_last(1)
            .await?;
        for (r, (_, id)) in &want {
            if r != "main" {
                assert!(
                    !m.expired_snapshots.contains(id),
                    "{full}: expiry removed {r}'s snapshot {id}: {m:?}"
                );
            }
        }
        assert!(
            !m.expired_snapshots.is_empty(),
            "{full}: nothing expired: {m:?}"
        );
        let table = assert_refs_kept(handle, &ident, &want, "expire-snapshots").await?;
        // Every file a ref reads is still there.
        for r in want.keys() {
            let snapshot = table
                .metadata()
                .snapshot_for_ref(r)
                .ok_or_else(|| anyhow::anyhow!("{full}: no {r}"))?;
            for mf in table.manifest_list_reader(snapshot).load().await?.entries() {
                assert!(table.file_io().exists(&mf.manifest_path).await?);
                for e in mf.load_manifest(table.file_io()).await?.entries() {
                    if e.is_alive() {
                        let f = e.data_file().file_path();
                        assert!(
                            table.file_io().exists(f).await?,
                            "{full}: expiry deleted {f}, which {r} reads"
                        );
                    }
                }
            }
        }
    }
    let after = pyiceberg_refs(name, p, &["r.t1", "r.t2"])?;
    for t in ["r.t1", "r.t2"] {
        let (b, a) = (&before[t], &after[t]);
        for r in ["audit", "b1"] {
            assert_eq!(a["refs"][r], b["refs"][r], "{t}: {r} moved: {a}");
            assert_eq!(a["at"][r], b["at"][r], "{t}: {r} reads differently");
        }
        let ids: Vec<i64> = a["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["id"].as_i64())
            .collect();
        let mut ids = ids;
        ids.sort_unstable();
        assert_eq!(ids, vec![3, 5, 6, 100, 101, 102], "{t}: main reads {a}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn refs_survive_every_commit_on_sqlite() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    pyiceberg("c", &db.props, &setup_code(None))?;
    let handle = open("c", &db.props).await?;
    refs_survive_every_commit(&handle, "c", &db.props).await
}

#[tokio::test(flavor = "multi_thread")]
async fn refs_survive_every_commit_on_glue() -> TestResult {
    init_tracing();
    let (_moto, p) = glue_on_moto();
    pyiceberg("glue", &p, &setup_code(None))?;
    let handle = open("glue", &p).await?;
    refs_survive_every_commit(&handle, "glue", &p).await
}

/// rustberg 0.3 (iceberg-rust 0.10.1) keeps a v2 table's refs but reads v1 metadata without
/// them, so it writes every next version without them: every command keeps the v2 table's
/// refs, and on the v1 table (made by PyIceberg in a SQL catalog, registered in rustberg) every
/// command that commits is refused before anything is committed, naming the refs.
#[tokio::test(flavor = "multi_thread")]
async fn refs_survive_every_commit_on_rest() -> TestResult {
    init_tracing();
    let rustberg = Rustberg::start();
    let p = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
    let dir = tempfile::tempdir()?;
    let side = props(&[
        ("type", "sql"),
        (
            "uri",
            &format!("sqlite:///{}/side.db", dir.path().display()),
        ),
        ("warehouse", &rustberg.warehouse()),
    ]);
    pyiceberg("c", &p, &setup_code(Some(&side)))?;
    let handle = open("c", &p).await?;
    let ident = TableIdent::from_strs(["r", "t1"])?;
    let before = handle.catalog().load_table(&ident).await?;
    let want = refs_on_file(&before).await?;
    assert!(
        want.contains_key("audit") && want.contains_key("b1"),
        "{want:?}"
    );
    let refused = |what: &str, e: Option<ops_core::Error>| -> TestResult {
        let msg = e.map(|e| e.to_string()).ok_or_else(|| {
            anyhow::anyhow!("{what} committed to a v1 table through a server that drops its refs")
        })?;
        assert!(
            msg.contains("audit (tag at snapshot") && msg.contains("b1 (branch at snapshot"),
            "{what}: {msg}"
        );
        Ok(())
    };
    refused(
        "compact",
        CompactBuilder::new(&handle, ident.clone())
            .min_input_files(2)
            .await
            .err(),
    )?;
    refused(
        "delete",
        DeleteBuilder::new(&handle, ident.clone())
            .with_filter_text("id = 4")
            .await
            .err(),
    )?;
    refused(
        "expire-snapshots",
        ExpireSnapshotsBuilder::new(&handle, ident.clone())
            .older_than_ms(FAR_FUTURE_MS)
            .retain_last(1)
            .await
            .err(),
    )?;
    refused(
        "rollback",
        RollbackBuilder::to_snapshot(
            &handle,
            ident.clone(),
            before
                .metadata()
                .current_snapshot()
                .and_then(|s| s.parent_snapshot_id())
                .ok_or_else(|| anyhow::anyhow!("no parent"))?,
        )
        .await
        .err(),
    )?;
    let migrated = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["r", "src"])?,
        &handle,
        ident.clone(),
    )
    .run()
    .await;
    let msg = migrated
        .err()
        .map(|e| e.to_string())
        .ok_or_else(|| anyhow::anyhow!("migrate-data committed to the v1 table"))?;
    assert!(msg.contains("audit (tag at snapshot"), "{msg}");
    let after = handle.catalog().load_table(&ident).await?;
    assert_eq!(
        after.metadata_location(),
        before.metadata_location(),
        "a refused command moved the table"
    );
    assert_eq!(refs_on_file(&after).await?, want);

    // The v2 table keeps its refs through every command.
    let before = pyiceberg_refs("c", &p, &["r.t2"])?;
    let ident = TableIdent::from_strs(["r", "t2"])?;
    let want = refs_from_json(&before["r.t2"]["refs"]);
    CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 4")
        .await?;
    DataMigrator::new(
        &handle,
        TableIdent::from_strs(["r", "src"])?,
        &handle,
        ident.clone(),
    )
    .run()
    .await?;
    ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(FAR_FUTURE_MS)
        .retain_last(1)
        .await?;
    assert_refs_kept(&handle, &ident, &want, "every command").await?;
    let after = pyiceberg_refs("c", &p, &["r.t2"])?;
    for r in ["audit", "b1"] {
        assert_eq!(after["r.t2"]["refs"][r], before["r.t2"]["refs"][r]);
        assert_eq!(after["r.t2"]["at"][r], before["r.t2"]["at"][r]);
    }
    Ok(())
}

/// Row ids of `rows`, sorted.
fn ids(rows: &[Value]) -> Vec<i64> {
    let mut out: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
    out.sort_unstable();
    out
}

/// PyIceberg's rows of each table in `tables`, by name.
fn pyiceberg_rows(
    name: &str,
    p: &BTreeMap<String, String>,
    tables: &[&str],
) -> anyhow::Result<BTreeMap<String, Vec<Value>>> {
    let out = pyiceberg(
        name,
        p,
        &format!("emit({{n: rows(catalog.load_table(n)) for n in {tables:?}}})"),
    )?;
    Ok(tables
        .iter()
        .map(|t| {
            let mut rows = out[*t].as_array().cloned().unwrap_or_default();
            sort_rows(&mut rows);
            (t.to_string(), rows)
        })
        .collect())
}

/// PyIceberg's v1 shape of failure 2: (id long, p string, q string), identity(p); an append;
/// `remove_field("p")` (v1 keeps it as `void` named `p`); an append; `add_identity("q")`; an
/// append. Every maintenance, delete, upsert and migration path works on it, and PyIceberg reads
/// the results with the rows each should have.
#[tokio::test(flavor = "multi_thread")]
async fn a_v1_table_whose_partition_field_was_removed() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let p = &db.props;
    pyiceberg(
        "c",
        p,
        "import pyarrow as pa\n\
         catalog.create_namespace('v')\n\
         schema = pa.schema([('id', pa.int64()), ('p', pa.string()), ('q', pa.string())])\n\
         def df(ids, p, q):\n\
         \x20   return pa.table({'id': ids, 'p': [p] * len(ids), 'q': [q] * len(ids)}, schema=schema)\n\
         t = catalog.create_table('v.t', schema=schema, properties={'format-version': '1'})\n\
         with t.update_spec() as u:\n\
         \x20   u.add_identity('p')\n\
         t.append(pa.concat_tables([df([1, 2], 'a', 'x'), df([3], 'b', 'y')]))\n\
         with t.update_spec() as u:\n\
         \x20   u.remove_field('p')\n\
         t.append(df([4, 5], 'a', 'x'))\n\
         with t.update_spec() as u:\n\
         \x20   u.add_identity('q')\n\
         t.append(df([6], 'c', 'x'))\n\
         t.append(df([7, 8], 'c', 'y'))\n\
         t.append(df([9], 'd', 'x'))\n\
         for name, ids in (('v.src', [100, 101]), ('v.up', [1, 102])):\n\
         \x20   s = catalog.create_table(name, schema=schema)\n\
         \x20   s.append(df(ids, 'u', 'x'))\n\
         spec = [(f.name, str(f.transform)) for f in t.spec().fields]\n\
         emit({'spec': spec, 'version': t.metadata.format_version})",
    )?;
    let handle = open("c", p).await?;
    let ident = TableIdent::from_strs(["v", "t"])?;
    let table = handle.catalog().load_table(&ident).await?;
    let spec: Vec<(String, String)> = table
        .metadata()
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| (f.name.clone(), f.transform.to_string()))
        .collect();
    assert_eq!(
        spec,
        vec![("p".into(), "void".into()), ("q".into(), "identity".into())]
    );
    let mut want: Vec<i64> = (1..=9).collect();
    let ours = |t: &Table| {
        let t = t.clone();
        async move { anyhow::Ok(ids(&scan_json(&t).await?)) }
    };

    // The current spec's q=x files, then every file of the older specs into the current one.
    let (table, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert_eq!((m.input_files(), m.output_files()), (2, 1), "{m:?}");
    assert_eq!(ours(&table).await?, want, "compact");
    let (table, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .to_current_spec(true)
        .await?;
    assert_eq!(m.input_files(), 3, "{m:?}");
    assert_eq!(ours(&table).await?, want, "compact into the current spec");

    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 2 OR id = 7")
        .await?;
    want.retain(|i| *i != 2 && *i != 7);
    assert_eq!(
        ours(&handle.catalog().load_table(&ident).await?).await?,
        want,
        "delete"
    );

    DataMigrator::new(
        &handle,
        TableIdent::from_strs(["v", "src"])?,
        &handle,
        ident.clone(),
    )
    .run()
    .await?;
    want.extend([100, 101]);
    want.sort_unstable();
    DataMigrator::new(
        &handle,
        TableIdent::from_strs(["v", "up"])?,
        &handle,
        ident.clone(),
    )
    .write_mode(WriteMode::Upsert)
    .upsert_keys(["id"])
    .run()
    .await?;
    want.push(102);
    want.sort_unstable();
    assert_eq!(
        ours(&handle.catalog().load_table(&ident).await?).await?,
        want,
        "upsert"
    );

    let (table, m) = ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(FAR_FUTURE_MS)
        .retain_last(1)
        .await?;
    assert!(!m.expired_snapshots.is_empty(), "{m:?}");
    assert_eq!(ours(&table).await?, want, "expire-snapshots");
    let o = RemoveOrphansBuilder::new(&handle, ident.clone())
        .older_than(Duration::from_secs(3 * 24 * 3600))
        .await?;
    assert!(o.orphans.is_empty(), "{o:?}");

    // A copy into a new table: the source's spec without its `void` field, the same rows.
    let at_copy = scan_json(&handle.catalog().load_table(&ident).await?).await?;
    DataMigrator::new(
        &handle,
        ident.clone(),
        &handle,
        TableIdent::from_strs(["v", "dst"])?,
    )
    .create_dest(true)
    .run()
    .await?;
    let dst = handle
        .catalog()
        .load_table(&TableIdent::from_strs(["v", "dst"])?)
        .await?;
    let dst_spec: Vec<String> = dst
        .metadata()
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| format!("{}({})", f.transform, f.name))
        .collect();
    assert_eq!(dst_spec, vec!["identity(q)".to_string()]);

    // Removing q as well leaves an all-`void` spec, which still takes a delete's rewrite.
    EvolveSpecBuilder::new(&handle, ident.clone())
        .remove_field("q")
        .await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("id = 8")
        .await?;
    want.retain(|i| *i != 8);

    let read = pyiceberg_rows("c", p, &["v.t", "v.dst"])?;
    assert_eq!(ids(&read["v.t"]), want, "PyIceberg reads the table");
    assert_eq!(read["v.dst"], at_copy, "PyIceberg reads the copy");
    let row1 = read["v.t"]
        .iter()
        .find(|r| r["id"] == json!(1))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        row1,
        json!({"id": 1, "p": "u", "q": "x"}),
        "the upsert's row"
    );
    Ok(())
}

/// A v1 table whose partition field was removed (spec `[void(p), identity(q)]`) copied file by
/// file into a new table (`create_dest` leaves the `void` field out: `[identity(q)]`): a `void`
/// field is always NULL and shapes no path, so the files of that spec are copied (or
/// referenced) whole under `files`, `auto` and `reference`, and only the file of the older
/// `identity(p)` spec is rewritten. The reverse (a source without the `void` field into the v1
/// table) copies with a NULL put in. A check that refuses a file copy refuses before the
/// destination is created. PyIceberg reads every copy with the source's rows and partitions.
#[tokio::test(flavor = "multi_thread")]
async fn a_v1_table_whose_partition_field_was_removed_is_copied_file_by_file() -> TestResult {
    use ops_datamig::CopyMode;
    let db = SqlCatalog::sqlite()?;
    let p = &db.props;
    pyiceberg(
        "c",
        p,
        "import pyarrow as pa\n\
         catalog.create_namespace('v')\n\
         schema = pa.schema([('id', pa.int64()), ('p', pa.string()), ('q', pa.string())])\n\
         def df(ids, p, q):\n\
         \x20   return pa.table({'id': ids, 'p': [p] * len(ids), 'q': [q] * len(ids)}, schema=schema)\n\
         t = catalog.create_table('v.t', schema=schema, properties={'format-version': '1'})\n\
         with t.update_spec() as u:\n\
         \x20   u.add_identity('p')\n\
         t.append(df([1, 2], 'a', 'x'))\n\
         with t.update_spec() as u:\n\
         \x20   u.remove_field('p')\n\
         with t.update_spec() as u:\n\
         \x20   u.add_identity('q')\n\
         t.append(pa.concat_tables([df([3], 'a', 'x'), df([4, 5], 'b', 'y')]))\n\
         f = catalog.create_table('v.flat', schema=schema)\n\
         with f.update_spec() as u:\n\
         \x20   u.add_identity('q')\n\
         f.append(pa.concat_tables([df([10], 'c', 'x'), df([11], 'c', 'z')]))\n\
         emit({'spec': [str(x.transform) for x in t.spec().fields]})",
    )?;
    let handle = open("c", p).await?;
    let t = TableIdent::from_strs(["v", "t"])?;
    // PyIceberg's view: rows, and each data file's partition tuple and record count.
    let files_of = |tables: &[&str]| {
        pyiceberg(
            "c",
            p,
            &format!(
                "emit({{n: {{'rows': rows(catalog.load_table(n)), 'files': sorted(\
                 [[f['partition'], f['record_count']] \
                 for f in catalog.load_table(n).inspect.files().to_pylist()], \
                 key=lambda f: json.dumps(f, sort_keys=True))}} \
                 for n in {tables:?}}})"
            ),
        )
    };

    // A refused file copy (an upsert never copies files) leaves no destination behind.
    let refused = DataMigrator::new(
        &handle,
        t.clone(),
        &handle,
        TableIdent::from_strs(["v", "up"])?,
    )
    .create_dest(true)
    .copy_mode(CopyMode::Files)
    .write_mode(WriteMode::Upsert)
    .upsert_keys(["id"])
    .run()
    .await;
    let err = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("only append copies files"), "{err}");
    assert!(
        !handle
            .catalog()
            .table_exists(&TableIdent::from_strs(["v", "up"])?)
            .await?,
        "the refused copy created its destination"
    );

    for (name, mode) in [
        ("files", CopyMode::Files),
        ("auto", CopyMode::Auto),
        ("ref", CopyMode::Reference),
    ] {
        let dest = TableIdent::from_strs(["v", name])?;
        let r = DataMigrator::new(&handle, t.clone(), &handle, dest.clone())
            .create_dest(true)
            .copy_mode(mode)
            .run()
            .await?;
        let shared = match mode {
            CopyMode::Reference => r.files_referenced,
            _ => r.files_copied,
        };
        // The two files of the current spec whole; the one of identity(p) through the plan.
        assert_eq!((shared, r.files_rewritten), (2, 1), "{name}: {:?}", r.files);
        let dst = handle.catalog().load_table(&dest).await?;
        let spec: Vec<String> = dst
            .metadata()
            .default_partition_spec()
            .fields()
            .iter()
            .map(|f| format!("{}({})", f.transform, f.name))
            .collect();
        assert_eq!(spec, vec!["identity(q)".to_string()], "{name}");
    }
    let read = files_of(&["v.t", "v.files", "v.auto", "v.ref"])?;
    for name in ["v.files", "v.auto", "v.ref"] {
        assert_eq!(read[name]["rows"], read["v.t"]["rows"], "{name}");
        assert_eq!(
            read[name]["files"],
            json!([[{"q": "x"}, 1], [{"q": "x"}, 2], [{"q": "y"}, 2]]),
            "{name}"
        );
    }

    // The reverse: [identity(q)] into the v1 table's [void(p), identity(q)], a NULL put in.
    let r = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["v", "flat"])?,
        &handle,
        t.clone(),
    )
    .copy_mode(CopyMode::Files)
    .run()
    .await?;
    assert_eq!((r.files_copied, r.files_rewritten), (2, 0), "{:?}", r.files);
    let read = files_of(&["v.t"])?;
    let ids_read = ids(read["v.t"]["rows"]
        .as_array()
        .map_or(&[][..], Vec::as_slice));
    assert_eq!(ids_read, vec![1, 2, 3, 4, 5, 10, 11]);
    let tuples: Vec<Value> = read["v.t"]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f[0].clone())
        .collect();
    for q in ["x", "z"] {
        let want = json!({"p": null, "q": q});
        assert!(tuples.contains(&want), "{want} in {tuples:?}");
    }
    Ok(())
}

/// Old Java v1 metadata (hand-made here: PyIceberg cannot make it) numbered each spec's
/// partition fields from 1000, so field 1000 is `identity(p)` in spec 0 and `identity(q)` in
/// spec 1. Writing, compacting, deleting, upserting, expiring and copying it work spec by spec:
/// a file of one spec is never read, grouped or pruned by the other's field 1000.
#[tokio::test(flavor = "multi_thread")]
async fn v1_metadata_whose_partition_field_ids_restart_per_spec() -> TestResult {
    let db = SqlCatalog::sqlite()?;
    let p = &db.props;
    let sqlite = db.dir.path().join("catalog.db");
    pyiceberg(
        "c",
        p,
        &format!(
            "import json, sqlite3, time, uuid\n\
             import pyarrow as pa\n\
             from pyiceberg.partitioning import PartitionSpec, PartitionField\n\
             from pyiceberg.transforms import IdentityTransform\n\
             catalog.create_namespace('o')\n\
             schema = pa.schema([('id', pa.int64()), ('p', pa.string()), ('q', pa.string())])\n\
             def df(rows):\n\
             \x20   return pa.table({{'id': [r[0] for r in rows], 'p': [r[1] for r in rows], \
                                       'q': [r[2] for r in rows]}}, schema=schema)\n\
             t = catalog.create_table('o.t', schema=schema, properties={{'format-version': '1'}})\n\
             with t.update_spec() as u:\n\
             \x20   u.add_identity('p')\n\
             t.append(df([(1, 'a', 'x'), (2, 'a', 'y')]))\n\
             t.append(df([(3, 'a', 'x'), (4, 'b', 'y')]))\n\
             for name, rows in (('o.src', [(10, 'a', 'a'), (11, 'b', 'a'), (12, 'a', 'b')]),\n\
             \x20                  ('o.src2', [(13, 'b', 'a'), (14, 'a', 'b')]),\n\
             \x20                  ('o.up', [(4, 'a', 'z'), (15, 'b', 'b')])):\n\
             \x20   catalog.create_table(name, schema=schema).append(df(rows))\n\
             t = catalog.load_table('o.t')\n\
             loc = t.metadata_location\n\
             doc = json.load(open(loc[len('file://'):]))\n\
             last = max(s['spec-id'] for s in doc['partition-specs'])\n\
             fields = [{{'source-id': 3, 'field-id': 1000, 'transform': 'identity', 'name': 'q'}}]\n\
             doc['partition-specs'].append({{'spec-id': last + 1, 'fields': fields}})\n\
             doc['default-spec-id'] = last + 1\n\
             doc['partition-spec'] = fields\n\
             doc['last-partition-id'] = 1000\n\
             doc['metadata-log'] = doc.get('metadata-log', []) + \
                 [{{'metadata-file': loc, 'timestamp-ms': doc['last-updated-ms']}}]\n\
             doc['last-updated-ms'] = int(time.time() * 1000)\n\
             new = loc.rsplit('/', 1)[0] + '/00099-' + str(uuid.uuid4()) + '.metadata.json'\n\
             json.dump(doc, open(new[len('file://'):], 'w'))\n\
             db = sqlite3.connect({sqlite:?})\n\
             db.execute(\"update iceberg_tables set metadata_location = ?, previous_metadata_location = ? \
                         where table_namespace = 'o' and table_name = 't'\", (new, loc))\n\
             db.commit()\n\
             emit([s['fields'] for s in doc['partition-specs']])",
            sqlite = sqlite.display().to_string()
        ),
    )?;
    let handle = open("c", p).await?;
    let ident = TableIdent::from_strs(["o", "t"])?;
    let table = handle.catalog().load_table(&ident).await?;
    let ids_of_specs: Vec<Vec<(i32, String)>> = {
        let mut specs: Vec<_> = table.metadata().partition_specs_iter().collect();
        specs.sort_by_key(|s| s.spec_id());
        specs
            .iter()
            .map(|s| {
                s.fields()
                    .iter()
                    .map(|f| (f.field_id, f.name.clone()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        ids_of_specs.last(),
        Some(&vec![(1000, "q".to_string())]),
        "{ids_of_specs:?}"
    );
    assert!(ids_of_specs.contains(&vec![(1000, "p".to_string())]));

    // Files of the new spec: partitioned by q under the same field id.
    for src in ["src", "src2"] {
        DataMigrator::new(
            &handle,
            TableIdent::from_strs(["o", src])?,
            &handle,
            ident.clone(),
        )
        .run()
        .await?;
    }
    let row = |id: i64, p: &str, q: &str| json!({"id": id, "p": p, "q": q});
    let mut want = vec![
        row(1, "a", "x"),
        row(2, "a", "y"),
        row(3, "a", "x"),
        row(4, "b", "y"),
        row(10, "a", "a"),
        row(11, "b", "a"),
        row(12, "a", "b"),
        row(13, "b", "a"),
        row(14, "a", "b"),
    ];
    let check = |want: &[Value], what: &'static str| {
        let mut want = want.to_vec();
        sort_rows(&mut want);
        let handle = handle.clone();
        let ident = ident.clone();
        async move {
            let got = scan_json(&handle.catalog().load_table(&ident).await?).await?;
            assert_eq!(got, want, "after {what}");
            anyhow::Ok(())
        }
    };
    check(&want, "the appends under the new spec").await?;

    // The current spec's files; then the old spec's, whose p=a files share the tuple ("a" in
    // field 1000) of the current spec's q=a: they are rewritten by p into q's partitions.
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .await?;
    assert_eq!((m.input_files(), m.output_files()), (4, 2), "{m:?}");
    check(&want, "compact").await?;
    let (_, m) = CompactBuilder::new(&handle, ident.clone())
        .min_input_files(2)
        .to_current_spec(true)
        .await?;
    assert_eq!(m.input_files(), 3, "{m:?}");
    check(&want, "compact into the current spec").await?;

    // Each file is pruned by its own spec: `p = 'a'` must not take spec 1's q=a files, and
    // `q = 'x'` must not skip the q=x rows of spec 0's files.
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("p = 'a'")
        .await?;
    want.retain(|r| r["p"] != "a");
    check(&want, "delete p = 'a'").await?;
    DeleteBuilder::new(&handle, ident.clone())
        .with_filter_text("q = 'y'")
        .await?;
    want.retain(|r| r["q"] != "y");
    check(&want, "delete q = 'y'").await?;

    DataMigrator::new(
        &handle,
        TableIdent::from_strs(["o", "up"])?,
        &handle,
        ident.clone(),
    )
    .write_mode(WriteMode::Upsert)
    .upsert_keys(["id"])
    .run()
    .await?;
    want.retain(|r| r["id"] != 4);
    want.extend([row(4, "a", "z"), row(15, "b", "b")]);
    check(&want, "upsert").await?;

    ExpireSnapshotsBuilder::new(&handle, ident.clone())
        .older_than_ms(FAR_FUTURE_MS)
        .retain_last(1)
        .await?;
    check(&want, "expire-snapshots").await?;

    DataMigrator::new(
        &handle,
        ident.clone(),
        &handle,
        TableIdent::from_strs(["o", "dst"])?,
    )
    .create_dest(true)
    .run()
    .await?;
    let read = pyiceberg_rows("c", p, &["o.dst"])?;
    let mut sorted = want.clone();
    sort_rows(&mut sorted);
    assert_eq!(read["o.dst"], sorted, "PyIceberg reads the copy");
    Ok(())
}
