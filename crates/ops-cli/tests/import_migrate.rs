//! A Glue Hive table brought into Iceberg from the command line: `iceberg-ops import migrate
//! --source glue:DB.T` stopped at each of its steps by a test failpoint (an abort, as a
//! SIGKILL landing there would) — the Glue name always holds the Hive table or the whole
//! Iceberg table, never neither, and the same command run again finishes the migration — and
//! `migrate-data --source glue:DB.T`, the copy path, then `verify` against the Hive table.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use ops_import::migrate::points;
use ops_tests::hive::{SALES, expected, hive_database, read, sales_table};
use ops_tests::servers::{Moto, glue_on_moto};
use serde_json::Value;

/// Runs `iceberg-ops --config <home>/config.yaml import migrate ...`, with the failpoint
/// `abort_at` armed when given.
fn migrate(home: &Path, extra: &[&str], abort_at: Option<&str>) -> Output {
    let args = [
        &[
            "import",
            "migrate",
            "--source",
            "glue:hive.sales",
            "--catalog",
            "lake",
        ][..],
        extra,
    ]
    .concat();
    iceberg_ops(home, &args, abort_at)
}

/// Runs `iceberg-ops --config <home>/config.yaml ARGS`, with the failpoint `abort_at` armed
/// when given.
fn iceberg_ops(home: &Path, args: &[&str], abort_at: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
    cmd.arg("--config")
        .arg(home.join("config.yaml"))
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .env_remove(ops_core::failpoint::ABORT_AT_ENV);
    if let Some(point) = abort_at {
        cmd.env(ops_core::failpoint::ABORT_AT_ENV, point);
    }
    cmd.output().expect("run iceberg-ops")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn config(home: &Path, props: &BTreeMap<String, String>) {
    let mut yaml = String::from("catalog:\n  lake:\n");
    for (k, v) in props {
        yaml.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    std::fs::write(home.join("config.yaml"), yaml).expect("write config");
}

/// moto with the Hive table `hive.sales`, its Glue catalog's properties, the rows pyarrow
/// reads from its partitions, and a home folder whose config.yaml names the catalog `lake`.
fn hive_sales() -> (Moto, BTreeMap<String, String>, Value, tempfile::TempDir) {
    let (moto, p) = glue_on_moto();
    hive_database(&moto);
    sales_table(&p, &moto).expect("the Hive table");
    let want: Value = expected(&p, &moto, &SALES);
    let home = tempfile::tempdir().expect("home");
    config(home.path(), &p);
    (moto, p, want, home)
}

/// What Glue holds under `hive.name` (catalog properties `p`): `None`, or (Iceberg?,
/// partition entries).
fn glue_state(p: &BTreeMap<String, String>, name: &str) -> Option<(bool, usize)> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut config = ops_core::catalog::CatalogConfig::empty();
        config.insert(ops_core::catalog::CatalogDefinition::inline(
            "lake",
            p.clone(),
        ));
        let handle = ops_core::CatalogFactory::new(config)
            .open("lake")
            .await
            .expect("open");
        let glue = ops_import::glue::GlueClient::of(&handle)
            .await
            .expect("glue");
        let t = glue.get_table("hive", name).await.expect("GetTable")?;
        let n = glue
            .get_partitions("hive", name)
            .await
            .expect("GetPartitions")
            .len();
        Some((ops_import::glue::is_iceberg(&t), n))
    })
}

/// The migration stopped after the backup, before the swap and after it: each time the name
/// holds the Hive table (all its partitions) or the Iceberg table (every row, as PyIceberg
/// reads it); the command run again exits 0 with the Iceberg table, the backup holding the
/// Hive definition once.
#[test]
fn a_migration_stopped_at_any_step_leaves_one_table_and_reruns_to_the_end() {
    for point in [
        points::AFTER_BACKUP,
        points::BEFORE_SWAP,
        points::AFTER_SWAP,
    ] {
        let (_moto, p, want, home) = hive_sales();

        let out = migrate(home.path(), &[], Some(point));
        assert!(
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr)
                    .contains(&format!("test failpoint {point}: aborting")),
            "want an abort at {point}: {}",
            text(&out)
        );
        match glue_state(&p, "sales") {
            Some((false, 5)) => assert_ne!(point, points::AFTER_SWAP, "still Hive after the swap"),
            Some((true, _)) => {
                assert_eq!(point, points::AFTER_SWAP, "Iceberg before the swap");
                assert_eq!(read(&p, "hive.sales").expect("PyIceberg reads it"), want);
            }
            other => panic!("{point}: the name holds {other:?}"),
        }

        let out = migrate(home.path(), &["--output", "json"], None);
        assert!(out.status.success(), "{point}: {}", text(&out));
        let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        assert_eq!(
            report["already_migrated"],
            Value::Bool(point == points::AFTER_SWAP),
            "{point}: {report}"
        );
        assert_eq!(glue_state(&p, "sales"), Some((true, 0)), "{point}");
        assert_eq!(glue_state(&p, "sales_backup_"), Some((false, 5)), "{point}");
        assert_eq!(
            read(&p, "hive.sales").expect("PyIceberg reads it"),
            want,
            "{point}"
        );
    }
}

/// The copy path: `migrate-data --source glue:hive.sales` stages the Hive table as an Iceberg
/// table (files in place) and copies it into a new table with a rename, checkpointed; `verify`
/// against the same source finds every row by `row_count` and `partition_hash`; PyIceberg
/// reads the copy with the rows pyarrow reads from the partitions. A second run resumes the
/// finished job (nothing copied twice), reusing the staged table.
#[test]
fn migrate_data_copies_a_glue_hive_table_and_verify_checks_it() {
    let (_moto, p, want, home) = hive_sales();
    let sides = [
        "--source",
        "glue:hive.sales",
        "--source-catalog",
        "lake",
        "--dest",
        "hive.sales_copy",
    ];
    let copy = [
        &["migrate-data"][..],
        &sides,
        &["--create-dest", "--checkpoint", "copy.ckpt"],
    ]
    .concat();
    let copied = |says: &str| {
        let out = iceberg_ops(home.path(), &copy, None);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stderr).contains(says),
            "{}",
            text(&out)
        );
        assert_eq!(
            read(&p, "hive.sales_copy").expect("PyIceberg reads it"),
            want
        );
    };
    copied("5 file(s) found");
    for method in ["row_count", "partition_hash"] {
        let verify = [&["verify"][..], &sides, &["--method", method]].concat();
        let out = iceberg_ops(home.path(), &verify, None);
        assert!(out.status.success(), "{method}: {}", text(&out));
    }
    copied("0 file(s) new since the last run");
    let refused = iceberg_ops(home.path(), &[&copy[..], &["--plan-only"]].concat(), None);
    assert!(
        !refused.status.success()
            && String::from_utf8_lossy(&refused.stderr).contains("without --plan-only"),
        "{}",
        text(&refused)
    );
}
