//! The `iceberg-ops` binary as an operator runs it.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn iceberg_ops(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env_remove("PYICEBERG_HOME");
    for (k, _) in std::env::vars() {
        if k.starts_with("PYICEBERG_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run iceberg-ops")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn quickstart_creates_the_sample_table_then_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = iceberg_ops(dir.path(), &["quickstart", "--rows", "12345"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("sqlite (sql, from the embedded default)"),
        "{stdout}"
    );
    assert!(stdout.contains("12345 rows in 5 data files"), "{stdout}");
    assert!(stdout.contains("12345 rows in 5 files"), "{stdout}");
    assert!(dir.path().join(".iceberg-ops/catalog.db").is_file());

    // The PyIceberg definition of the embedded catalog, to paste: it is in no file.
    let db = dir.path().join(".iceberg-ops/catalog.db");
    assert!(
        stdout.contains(&format!("            uri: sqlite:///{}", db.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("          sqlite:\n            type: sql"),
        "{stdout}"
    );
    assert!(stdout.contains("warehouse: file://"), "{stdout}");

    // The tables are listed, per namespace or all of them.
    // Every namespace: the migration history table too; one namespace: only its tables.
    let everything = [
        "_iceberg_ops.migration_history",
        "quickstart.customers",
        "quickstart.orders",
        "quickstart.orders_v2",
    ];
    for (args, expected) in [
        (&["table", "list"][..], &everything[..]),
        (&["table", "list", "quickstart"][..], &everything[1..]),
    ] {
        let (listed, stderr) = text(&iceberg_ops(dir.path(), args, &[]));
        assert_eq!(listed.lines().collect::<Vec<_>>(), expected, "{stderr}");
    }
    let missing = iceberg_ops(dir.path(), &["table", "list", "nope"], &[]);
    let (_, stderr) = text(&missing);
    assert!(!missing.status.success());
    assert!(stderr.contains("no namespace 'nope'"), "{stderr}");

    let again = iceberg_ops(dir.path(), &["quickstart"], &[]);
    let (stdout, stderr) = text(&again);
    assert!(again.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("already exists"), "{stdout}");
    assert!(
        stdout.contains("`iceberg-ops quickstart --reset`"),
        "{stdout}"
    );
    assert!(stdout.contains("type: sql"), "{stdout}");
    assert!(stdout.contains("12345 rows"), "{stdout}");

    let reset = iceberg_ops(dir.path(), &["quickstart", "--reset", "--rows", "10"], &[]);
    let (stdout, _) = text(&reset);
    assert!(
        stdout.contains("dropped (--reset)") && stdout.contains("10 rows in 5 files"),
        "{stdout}"
    );
}

#[test]
fn unknown_catalog_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = iceberg_ops(dir.path(), &["catalog", "check", "prod"], &[]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("catalog 'prod' is not defined"), "{stderr}");
    assert!(stderr.contains(".pyiceberg.yaml"), "{stderr}");
    assert!(stderr.contains("PYICEBERG_CATALOG__PROD__"), "{stderr}");
}

#[test]
fn config_file_errors_name_catalog_key_and_file_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ops.yaml");
    std::fs::write(
        &cfg,
        "catalog:\n  lake:\n    type: glue\n    glue.secret-access-key: HUNTER2\n  weird:\n    type: hive\n",
    )
    .unwrap();
    let cfg_arg = cfg.display().to_string();
    let out = iceberg_ops(
        dir.path(),
        &["--config", &cfg_arg, "catalog", "check", "lake"],
        &[],
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("catalog 'lake'") && stderr.contains("'warehouse'"),
        "{stderr}"
    );
    assert!(stderr.contains("ops.yaml"), "{stderr}");
    assert!(!stderr.contains("HUNTER2"), "{stderr}");

    let out = iceberg_ops(
        dir.path(),
        &["--config", &cfg_arg, "catalog", "check", "weird"],
        &[],
    );
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("type 'hive'") && stderr.contains("sql, rest, glue, s3tables, memory"),
        "{stderr}"
    );

    let out = iceberg_ops(dir.path(), &["--config", &cfg_arg, "catalog", "list"], &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("glue.secret-access-key = ***") && !stdout.contains("HUNTER2"),
        "{stdout}"
    );
}

#[test]
fn environment_variables_define_a_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("env.db");
    let uri = format!("sqlite:///{}", db.display());
    let wh = dir.path().join("wh").display().to_string();
    let out = iceberg_ops(
        dir.path(),
        &["quickstart", "--catalog", "from-env", "--rows", "7"],
        &[
            ("PYICEBERG_CATALOG__FROM_ENV__URI", &uri),
            ("PYICEBERG_CATALOG__FROM_ENV__WAREHOUSE", &wh),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("from-env (sql, from PYICEBERG_CATALOG__* environment variables)"),
        "{stdout}"
    );
    assert!(db.is_file());
}

/// Without `--catalog`, a command opens the catalog PyIceberg's `load_catalog()` opens without
/// a name (`default-catalog` in `.pyiceberg.yaml`): the tables a user makes there are found by
/// both. They landed in the embedded catalog under the working directory, where PyIceberg never
/// looks. `--help` shows the default; quickstart keeps its own (the embedded one).
#[test]
fn the_configured_default_catalog_is_used_without_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lake.db");
    std::fs::write(
        dir.path().join(".pyiceberg.yaml"),
        format!(
            "default-catalog: lake\ncatalog:\n  lake:\n    type: sql\n    uri: sqlite:///{}\n    warehouse: file://{}/wh\n",
            db.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let out = iceberg_ops(
        dir.path(),
        &["quickstart", "--catalog", "lake", "--rows", "3"],
        &[],
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let out = iceberg_ops(dir.path(), &["table", "list"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("quickstart.orders"), "{stdout}");
    assert!(
        !dir.path().join(".iceberg-ops/catalog.db").exists(),
        "the embedded catalog was made"
    );
    let (help, _) = text(&iceberg_ops(dir.path(), &["table", "list", "--help"], &[]));
    assert!(help.contains("[default: lake]"), "{help}");
}

#[test]
fn missing_config_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = iceberg_ops(
        dir.path(),
        &["--config", "nope.yaml", "catalog", "list"],
        &[],
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("nope.yaml"), "{stderr}");
}

/// Appends one row (id 999999, other columns null) to quickstart.orders in `dir`'s embedded
/// catalog; returns the new snapshot id.
fn append_one_row(dir: &Path) -> i64 {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, new_null_array};
    use ops_core::ops::append::AppendBuilder;

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let factory = ops_core::CatalogFactory::new(ops_core::catalog::CatalogConfig::empty())
            .with_base_dir(dir);
        let handle = factory.open("sqlite").await.unwrap();
        let ident = iceberg::TableIdent::from_strs(["quickstart", "orders"]).unwrap();
        let table = handle.catalog().load_table(&ident).await.unwrap();
        let schema = ops_core::write::table_arrow_schema(&table).unwrap();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| {
                if f.name() == "id" {
                    Arc::new(Int64Array::from(vec![999_999])) as ArrayRef
                } else {
                    new_null_array(f.data_type(), 1)
                }
            })
            .collect();
        let batch = RecordBatch::try_new(schema, columns).unwrap();
        let files = ops_core::write::write_data_files(&table, futures::stream::iter([Ok(batch)]))
            .await
            .unwrap();
        let (_, m) = AppendBuilder::new(&handle, ident)
            .with_files(files)
            .await
            .unwrap();
        m.snapshot_id
    })
}

/// After expiry, a refused rollback names only ancestors the table still has (it named the
/// expired parent, which `rollback --to` then said the table lacks); a negative count or id
/// is refused as a bad value, not with clap's advice to write `-- -1`.
#[test]
fn a_refused_rollback_names_only_kept_ancestors_and_negative_values_are_bad_values() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        iceberg_ops(dir.path(), &["quickstart", "--rows", "10"], &[])
            .status
            .success()
    );
    let run = |args: &[&str]| text(&iceberg_ops(dir.path(), args, &[]));
    let (stdout, _) = run(&[
        "table",
        "snapshots",
        "quickstart.orders",
        "--output",
        "json",
    ]);
    let snaps: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let first = snaps[0]["snapshot_id"].as_i64().unwrap().to_string();
    let second = append_one_row(dir.path()).to_string();
    let third = append_one_row(dir.path()).to_string();
    let t = "quickstart.orders";
    let (_, stderr) = run(&["table", "rollback", t, "--to", &second]);
    assert!(stderr.is_empty(), "{stderr}");
    let (_, stderr) = run(&["table", "expire-snapshots", t, "--snapshot-id", &first]);
    assert!(stderr.is_empty(), "{stderr}");
    let (_, stderr) = run(&["table", "rollback", t, "--to", &third]);
    assert!(
        stderr.contains("ancestors (newest first): (none)") && !stderr.contains(&first),
        "{stderr}"
    );
    for args in [
        ["table", "expire-snapshots", t, "--retain-last", "-1"],
        ["table", "rollback", t, "--to", "-5"],
    ] {
        let (_, stderr) = run(&args);
        assert!(!stderr.contains("use '-- -"), "{stderr}");
    }
    let (_, stderr) = run(&["table", "expire-snapshots", t, "--retain-last", "-1"]);
    assert!(
        stderr.contains("invalid value '-1' for '--retain-last"),
        "{stderr}"
    );
    let (_, stderr) = run(&["table", "rollback", t, "--to", "-5"]);
    assert!(stderr.contains("has no snapshot -5"), "{stderr}");
}

#[test]
fn table_snapshots_schema_and_rollback() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        iceberg_ops(dir.path(), &["quickstart", "--rows", "100"], &[])
            .status
            .success()
    );
    let second = append_one_row(dir.path());

    let out = iceberg_ops(
        dir.path(),
        &[
            "table",
            "snapshots",
            "quickstart.orders",
            "--output",
            "json",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let snaps: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let snaps = snaps.as_array().unwrap();
    assert_eq!(snaps.len(), 2, "{stdout}");
    let first = snaps[0]["snapshot_id"].as_i64().unwrap();
    assert_eq!(snaps[1]["snapshot_id"].as_i64(), Some(second));
    assert_eq!(snaps[1]["current"], true);
    assert_eq!(snaps[1]["parent_id"].as_i64(), Some(first));
    assert_eq!(snaps[0]["summary"]["iceberg-ops.quickstart"], "true");
    assert_eq!(snaps[1]["summary"]["total-records"], "101");

    let out = iceberg_ops(
        dir.path(),
        &["table", "snapshots", "quickstart.orders"],
        &[],
    );
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!("* {second}  parent {first}")),
        "{stdout}"
    );

    let out = iceberg_ops(dir.path(), &["table", "schema", "quickstart.orders"], &[]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("1  id: long required"), "{stdout}");
    assert!(
        stdout.contains("   6  order_total: decimal(12, 2)"),
        "{stdout}"
    );
    assert!(stdout.contains("region = identity(source 2)"), "{stdout}");

    let first_s = first.to_string();
    let out = iceberg_ops(
        dir.path(),
        &["table", "rollback", "quickstart.orders", "--to", &first_s],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("main moved from {second} to {first}")),
        "{stdout}"
    );

    // The newer snapshot is no longer an ancestor: refused, naming what is.
    let second_s = second.to_string();
    let out = iceberg_ops(
        dir.path(),
        &["table", "rollback", "quickstart.orders", "--to", &second_s],
        &[],
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("is not an ancestor"), "{stderr}");
    assert!(
        stderr.contains("ancestors (newest first): (none)"),
        "{stderr}"
    );
    // The advice is a command the CLI has, and it moves main forward again.
    assert!(
        stderr.contains("`iceberg-ops table set-current-snapshot`"),
        "{stderr}"
    );
    let out = iceberg_ops(
        dir.path(),
        &[
            "table",
            "set-current-snapshot",
            "quickstart.orders",
            "--to",
            &second_s,
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("main moved from {first} to {second}")),
        "{stdout}"
    );

    let out = iceberg_ops(dir.path(), &["table", "schema", "orders"], &[]);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("'orders' is not NAMESPACE.TABLE"),
        "{stderr}"
    );
}

#[test]
fn table_delete_dry_run_then_delete() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        iceberg_ops(dir.path(), &["quickstart", "--rows", "100"], &[])
            .status
            .success()
    );
    let snapshots = |dir: &Path| -> usize {
        let out = iceberg_ops(
            dir,
            &[
                "table",
                "snapshots",
                "quickstart.orders",
                "--output",
                "json",
            ],
            &[],
        );
        let v: serde_json::Value = serde_json::from_str(&text(&out).0).unwrap();
        v.as_array().unwrap().len()
    };
    let before = snapshots(dir.path());
    let delete = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "table",
            "delete",
            "quickstart.orders",
            "--where",
            "region = 'eu'",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = iceberg_ops(dir.path(), &args, &[]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let dry = delete(&["--dry-run"]);
    let rows = dry["deleted_rows"].as_u64().unwrap();
    assert!(rows > 0, "{dry}");
    assert!(
        !dry["dropped_files"].as_array().unwrap().is_empty(),
        "{dry}"
    );
    assert!(dry["snapshot_id"].is_null());
    assert_eq!(snapshots(dir.path()), before, "a dry run wrote a snapshot");

    let done = delete(&[]);
    assert_eq!(done["deleted_rows"].as_u64(), Some(rows), "{done}");
    assert_eq!(done["dropped_files"], dry["dropped_files"]);
    assert!(done["snapshot_id"].as_i64().is_some());
    assert_eq!(snapshots(dir.path()), before + 1);

    // Nothing left to match: no commit.
    let again = iceberg_ops(
        dir.path(),
        &[
            "table",
            "delete",
            "quickstart.orders",
            "--where",
            "region = 'eu'",
        ],
        &[],
    );
    let (stdout, _) = text(&again);
    assert!(stdout.contains("deleted 0 row(s)"), "{stdout}");
    assert!(stdout.contains("nothing matched: no commit"), "{stdout}");
    assert_eq!(snapshots(dir.path()), before + 1);
}

/// `table compact --sort-by` takes Spark's transforms; a transform that does not apply to its
/// column, one without its width, and `--max-file-group-size` without a sort are refused by
/// name, with nothing written.
#[test]
fn compact_sorts_by_transforms_and_refuses_what_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        iceberg_ops(dir.path(), &["quickstart", "--rows", "100"], &[])
            .status
            .success()
    );
    let compact = |extra: &[&str]| -> Output {
        let mut args = vec!["table", "compact", "quickstart.orders", "--output", "json"];
        args.extend_from_slice(extra);
        iceberg_ops(dir.path(), &args, &[])
    };
    let refused = |extra: &[&str], want: &str| {
        let out = compact(extra);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{extra:?}: {stdout}");
        assert!(stderr.contains(want), "{extra:?}: {stderr}");
    };
    refused(
        &["--max-file-group-size", "1000"],
        "--max-file-group-size applies to a sorting compaction",
    );
    refused(
        &["--sort-by", "days(id)"],
        "does not apply to its type long",
    );
    refused(&["--sort-by", "bucket(id)"], "takes a width");
    refused(&["--sort-by", "zorder(id, qty)"], "z-order");

    let out = compact(&[
        "--sort-by",
        "bucket(4, id) DESC, truncate(region, 1), days(event_ts) NULLS LAST",
        "--min-input-files",
        "1",
        "--dry-run",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["sort_order"],
        serde_json::json!(
            "bucket[4](id) DESC NULLS LAST, truncate[1](region) ASC NULLS FIRST, \
             day(event_ts) ASC NULLS LAST"
        ),
        "{v}"
    );
}

fn create_table_file(table: &str) -> String {
    format!(
        "[[upgrade]]\nop = \"create_table\"\ntable = \"{table}\"\ncolumns = [{{ name = \"id\", type = \"long\", required = true }}]\n"
    )
}

#[test]
fn schema_migration_repair_baseline_and_rollback_options() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mig = cwd.join("migrations");
    std::fs::create_dir_all(&mig).unwrap();

    // The help says what each option does.
    let (help, _) = text(&iceberg_ops(cwd, &["rollback", "--help"], &[]));
    assert!(
        help.contains("--force") && help.contains("changed since it was applied"),
        "{help}"
    );
    assert!(
        help.contains("--allow-destructive") && help.contains("holds rows"),
        "{help}"
    );
    let (help, _) = text(&iceberg_ops(cwd, &["migrate", "--help"], &[]));
    assert!(
        help.contains("repair") && help.contains("baseline") && help.contains("--namespace"),
        "{help}"
    );
    let (help, _) = text(&iceberg_ops(cwd, &["migrate", "repair", "--help"], &[]));
    assert!(help.contains("failed attempts"), "{help}");
    let (help, _) = text(&iceberg_ops(cwd, &["migrate", "baseline", "--help"], &[]));
    assert!(
        help.contains("--version") && help.contains("already exist"),
        "{help}"
    );

    std::fs::write(
        mig.join("0001_create_orders.toml"),
        create_table_file("orders"),
    )
    .unwrap();
    std::fs::write(
        mig.join("0002_create_orders_v2.toml"),
        create_table_file("orders_v2"),
    )
    .unwrap();
    let out = iceberg_ops(cwd, &["migrate", "--namespace", "sales"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("applied: 0001, 0002"), "{stdout}");

    // 0002 edited after it was applied: rollback refuses, naming both checksums.
    let applied = ops_runner::file::checksum(create_table_file("orders_v2").as_bytes());
    let edited = create_table_file("orders");
    std::fs::write(mig.join("0002_create_orders_v2.toml"), &edited).unwrap();
    let current = ops_runner::file::checksum(edited.as_bytes());
    let out = iceberg_ops(cwd, &["rollback", "--namespace", "sales"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("0002") && stderr.contains(&applied) && stderr.contains(&current),
        "{stderr}"
    );
    assert!(stderr.contains("--force"), "{stderr}");
    // --force runs today's file: its derived downgrade drops `orders` (empty, so allowed).
    let out = iceberg_ops(
        cwd,
        &["rollback", "--namespace", "sales", "--force", "--dry-run"],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("drop table sales.orders "), "{stdout}");
    let out = iceberg_ops(cwd, &["validate", "--namespace", "sales"], &[]);
    assert!(!out.status.success());

    // repair accepts the edit; a failed attempt is cleared.
    std::fs::write(
        mig.join("0003_bad.toml"),
        "[[upgrade]]\nop = \"rename_column\"\ntable = \"orders\"\ncolumn = \"nope\"\nto = \"x\"\n",
    )
    .unwrap();
    let out = iceberg_ops(cwd, &["migrate", "--namespace", "sales"], &[]);
    assert!(!out.status.success());
    let out = iceberg_ops(cwd, &["migrate", "repair", "--namespace", "sales"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("cleared failed 0003"), "{stdout}");
    assert!(
        stdout.contains(&format!("realigned 0002  checksum {applied} -> {current}")),
        "{stdout}"
    );
    let out = iceberg_ops(cwd, &["status", "--namespace", "sales"], &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!("{:<13} 0003", "[pending]")),
        "{stdout}"
    );
    std::fs::remove_file(mig.join("0003_bad.toml")).unwrap();
    let out = iceberg_ops(cwd, &["validate", "--namespace", "sales"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // baseline adopts another namespace (flat layout: the same files) at 0001.
    let out = iceberg_ops(
        cwd,
        &[
            "migrate",
            "baseline",
            "--namespace",
            "finance",
            "--version",
            "1",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("baselined namespace finance at 0001"),
        "{stdout}"
    );
    let out = iceberg_ops(cwd, &["status", "--namespace", "finance"], &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!("{:<13} 0001", "[baseline]"))
            && stdout.contains(&format!("{:<13} 0002", "[pending]")),
        "{stdout}"
    );
    let out = iceberg_ops(
        cwd,
        &[
            "migrate",
            "baseline",
            "--namespace",
            "finance",
            "--version",
            "2",
        ],
        &[],
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("already has rows"), "{stderr}");
}

#[test]
fn new_from_writes_a_migration_that_applies() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mig = cwd.join("migrations");
    std::fs::create_dir_all(&mig).unwrap();
    std::fs::write(
        mig.join("0001_create_events.toml"),
        "[[upgrade]]\nop = \"create_table\"\ntable = \"events\"\ncolumns = [\n  \
         { name = \"id\", type = \"long\", required = true },\n  { name = \"old\", type = \"string\" },\n  \
         { name = \"region\", type = \"string\" },\n]\npartition = [{ column = \"old\" }]\n",
    )
    .unwrap();
    let out = iceberg_ops(cwd, &["migrate", "--namespace", "sales"], &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    // Without `old`, partitioned by region.
    std::fs::write(
        cwd.join("desired.toml"),
        "table = \"events\"\ncolumns = [\n  { name = \"id\", type = \"long\", required = true },\n  \
         { name = \"region\", type = \"string\" },\n]\npartition = [{ column = \"region\" }]\n",
    )
    .unwrap();
    let out = iceberg_ops(
        cwd,
        &[
            "new",
            "repartition",
            "--namespace",
            "sales",
            "--from",
            "desired.toml",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("NOT GENERATED: drop_column events.old") && stdout.contains("spec 0"),
        "{stdout}"
    );
    let file = std::fs::read_to_string(mig.join("0002_repartition.toml")).unwrap();
    assert!(
        file.contains("# NOT GENERATED: drop_column events.old"),
        "{file}"
    );
    let out = iceberg_ops(cwd, &["migrate", "--namespace", "sales"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("applied: 0002"), "{stdout}");
    let out = iceberg_ops(cwd, &["table", "schema", "sales.events"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("partition spec 1:")
            && stdout.contains("region = identity(source 3)")
            && !stdout.contains("old = identity"),
        "{stdout}"
    );
}

/// `import add-files`: a copy of one of quickstart.orders' data files, put under a `region=`
/// folder of its own, is listed with its partition and rows by a dry run (nothing written),
/// then added; adding it again is refused as a duplicate, naming the way around.
#[test]
fn import_add_files_dry_run_then_add_then_refuse_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let out = iceberg_ops(dir.path(), &["quickstart", "--rows", "1000"], &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    let data = dir
        .path()
        .join(".iceberg-ops/warehouse/quickstart/orders/data");
    // A file of one region: its folder name says which.
    let mut stack = vec![data.clone()];
    let mut found = None;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") && found.is_none() {
                found = Some(p);
            }
        }
    }
    let file = found.expect("a data file");
    let folder = file
        .parent()
        .and_then(|p| p.file_name())
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(folder.starts_with("region="), "{folder}");
    let extra = dir.path().join("extra").join(&folder);
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::copy(&file, extra.join("copy.parquet")).unwrap();
    std::fs::write(dir.path().join("extra/_SUCCESS"), b"").unwrap();

    let args = [
        "import",
        "add-files",
        "--table",
        "quickstart.orders",
        "--from",
        "extra",
    ];
    let dry = iceberg_ops(dir.path(), &[&args[..], &["--dry-run"]].concat(), &[]);
    let (stdout, stderr) = text(&dry);
    assert!(dry.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("copy.parquet"), "{stdout}");
    assert!(stdout.contains(&folder), "{stdout}");
    assert!(stdout.contains("would add 1 file(s)"), "{stdout}");
    assert!(stdout.contains("1 hidden"), "{stdout}");

    let added = iceberg_ops(
        dir.path(),
        &[&args[..], &["--output", "json"]].concat(),
        &[],
    );
    let (stdout, stderr) = text(&added);
    assert!(added.status.success(), "{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["added_files"], 1, "{v}");
    assert!(v["snapshot_id"].is_i64(), "{v}");

    let again = iceberg_ops(dir.path(), &args, &[]);
    let (_, stderr) = text(&again);
    assert!(!again.status.success());
    assert!(
        stderr.contains("already in") && stderr.contains("--allow-duplicate-files"),
        "{stderr}"
    );

    // A table that is not there: the catalog named, how to list it, how to create one.
    let missing = iceberg_ops(
        dir.path(),
        &[
            "import",
            "add-files",
            "--table",
            "quickstart.nope",
            "--from",
            "extra",
        ],
        &[],
    );
    let (_, stderr) = text(&missing);
    assert!(!missing.status.success());
    assert!(
        stderr.contains("catalog 'sqlite' has no table quickstart.nope")
            && stderr.contains("`iceberg-ops table list` lists its tables")
            && stderr.contains("import snapshot --source-path PATH --dest quickstart.nope"),
        "{stderr}"
    );
}
