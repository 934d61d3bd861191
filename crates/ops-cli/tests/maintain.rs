//! `iceberg-ops table health` and `iceberg-ops maintain` from the command line, on tables
//! PyIceberg wrote: the histogram drawn on a terminal (a pseudo-terminal) and not in a pipe,
//! the JSON report stable (a snapshot with the byte counts and times masked), the exit code of
//! a run where one table fails, and a table whose lease another live run holds left alone.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn iceberg_ops(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iceberg-ops"))
        .arg("--config")
        .arg(home.join("config.yaml"))
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .output()
        .expect("run iceberg-ops")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A SQLite catalog `lake` under `home` with `ns.small` (six appends of ten rows into one
/// partition: six small files) and `ns.other` (the same), written by PyIceberg.
fn lake(home: &Path) -> BTreeMap<String, String> {
    let p: BTreeMap<String, String> = [
        ("type", "sql".to_string()),
        ("uri", format!("sqlite:///{}/catalog.db", home.display())),
        ("warehouse", format!("file://{}/wh", home.display())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut yaml = String::from("catalog:\n  lake:\n");
    for (k, v) in &p {
        yaml.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    std::fs::write(home.join("config.yaml"), yaml).expect("write config");
    ops_tests::oracle::pyiceberg(
        "lake",
        &p,
        "from pyiceberg.partitioning import PartitionSpec, PartitionField\n\
         from pyiceberg.transforms import IdentityTransform\n\
         from pyiceberg.schema import Schema\n\
         from pyiceberg.types import NestedField, LongType, StringType\n\
         catalog.create_namespace('ns')\n\
         schema = Schema(NestedField(1, 'id', LongType(), required=False), NestedField(2, 'region', StringType(), required=False))\n\
         spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name='region'))\n\
         for name in ['other', 'small']:\n\
         \x20   t = catalog.create_table(f'ns.{name}', schema=schema, partition_spec=spec, properties={'write.target-file-size-bytes': '1048576'})\n\
         \x20   for i in range(6):\n\
         \x20       t.append(pa.table({'id': pa.array(range(i * 10, i * 10 + 10), pa.int64()), 'region': ['eu'] * 10}))\n\
         emit(True)",
    )
    .expect("PyIceberg writes the tables");
    p
}

/// Masks what differs between runs and machines: bytes, times, paths, the histogram's ranges
/// and the score's fractions (they follow the bytes).
fn masked(v: &Value, key: &str) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), masked(x, k))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| masked(x, key)).collect()),
        _ if key.ends_with("bytes")
            || key.ends_with("_ms")
            || key.ends_with("_hours")
            || key == "location"
            || key == "rule"
            || key == "ratio"
            || key == "detail"
            || key == "expirable"
            || key == "sources" =>
        {
            Value::String("<masked>".into())
        }
        Value::Number(n) if n.is_f64() => Value::String("<number>".into()),
        other => other.clone(),
    }
}

#[test]
fn health_json_is_stable_and_the_histogram_is_drawn_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    lake(home.path());
    let out = iceberg_ops(
        home.path(),
        &[
            "table",
            "health",
            "ns.small",
            "--catalog",
            "lake",
            "--output",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    // The temporary home is masked: the fix command names its config file.
    let home_text = home.path().display().to_string();
    let report: Value =
        serde_json::from_str(&String::from_utf8_lossy(&out.stdout).replace(&home_text, "<home>"))
            .unwrap();
    assert_eq!(report["data"]["files"], 6);
    assert_eq!(report["due"]["compact_partitions"], 1);
    assert_eq!(
        report["problems"][0]["fix"],
        "iceberg-ops table compact ns.small --config <home>/config.yaml --catalog lake"
    );
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/health.json");
    let got = serde_json::to_string_pretty(&masked(&report, "")).unwrap() + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &got).unwrap();
    }
    let want = std::fs::read_to_string(&snapshot).unwrap_or_default();
    assert_eq!(
        got,
        want,
        "the health JSON changed: if on purpose, rerun with UPDATE_SNAPSHOTS=1 and commit {}",
        snapshot.display()
    );

    // Piped: no histogram.
    let piped = iceberg_ops(
        home.path(),
        &["table", "health", "ns.small", "--catalog", "lake"],
    );
    let piped_text = String::from_utf8_lossy(&piped.stdout).to_string();
    assert!(piped.status.success(), "{}", text(&piped));
    assert!(piped_text.contains("small-files"), "{piped_text}");
    assert!(!piped_text.contains("file sizes"), "{piped_text}");
    // On a terminal: the histogram, its bars and the class of each range.
    let cmd = format!(
        "{} --config {} table health ns.small --catalog lake",
        env!("CARGO_BIN_EXE_iceberg-ops"),
        home.path().join("config.yaml").display()
    );
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(home.path())
        .env("HOME", home.path())
        .output()
        .expect("run script(1) for a pseudo-terminal");
    let tty_text = String::from_utf8_lossy(&tty.stdout).to_string();
    assert!(tty.status.success(), "{}", text(&tty));
    assert!(tty_text.contains("file sizes"), "{tty_text}");
    let bar = tty_text
        .lines()
        .find(|l| l.contains('#') && l.contains("fragment"))
        .unwrap_or_else(|| panic!("no histogram bar: {tty_text}"));
    assert!(bar.trim_end().ends_with("fragment"), "{bar}");
}

#[test]
fn a_failing_table_fails_the_run_and_the_others_are_maintained() {
    let home = tempfile::tempdir().unwrap();
    let p = lake(home.path());
    // One data file of ns.other gone from storage: its compaction cannot read it.
    let lost = ops_tests::oracle::pyiceberg(
        "lake",
        &p,
        "emit(next(iter(catalog.load_table('ns.other').inspect.files().to_pylist()))['file_path'])",
    )
    .unwrap();
    let lost = lost
        .as_str()
        .unwrap()
        .trim_start_matches("file://")
        .to_string();
    std::fs::remove_file(&lost).unwrap();
    let state = home.path().join("state.json");
    let state_arg = state.display().to_string();
    let out = iceberg_ops(
        home.path(),
        &[
            "maintain",
            "ns",
            "--catalog",
            "lake",
            "--state",
            &state_arg,
            "--output",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcome = |t: &str| {
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["table"] == t)
            .map(|x| x["outcome"].clone())
    };
    assert_eq!(
        outcome("ns.other"),
        Some(Value::from("failed")),
        "{report:#}"
    );
    assert_eq!(
        outcome("ns.small"),
        Some(Value::from("maintained")),
        "{report:#}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 table(s) failed: ns.other"), "{stderr}");
    // ns.small's orphan cleanup ran too (never run before) and was recorded.
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let small = recorded["orphans"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.starts_with("lake@") && k.ends_with("/ns.small"));
    assert!(small.is_some_and(|(_, v)| v.is_i64()), "{recorded}");
}

#[test]
fn a_table_another_live_run_holds_is_left_to_it() {
    let home = tempfile::tempdir().unwrap();
    lake(home.path());
    let state_path = home.path().join("state.json");
    let state_arg = state_path.display().to_string();
    // A first run records ns.small's state key (and maintains both tables).
    let first = iceberg_ops(
        home.path(),
        &["maintain", "ns", "--catalog", "lake", "--state", &state_arg],
    );
    assert!(first.status.success(), "{}", text(&first));
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    let key = recorded["orphans"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.ends_with("/ns.small"))
        .cloned()
        .unwrap();
    // Orphan cleanup due again on both: their last runs forgotten.
    std::fs::write(&state_path, "{}").unwrap();
    // This process holds ns.small's lease, as a live run would.
    let state = ops_maintenance::maintain::State::at(&state_path).unwrap();
    let lease = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(state.lease_path(&key))
        .unwrap();
    lease.lock().unwrap();
    let out = iceberg_ops(
        home.path(),
        &["maintain", "ns", "--catalog", "lake", "--state", &state_arg],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout.contains("ns.small: skipped") && stdout.contains("holds this table's lease"),
        "{stdout}"
    );
    assert!(stdout.contains("ns.other: maintained"), "{stdout}");
    // Once the holder lets go (or ends), the next run takes it.
    drop(lease);
    let out = iceberg_ops(
        home.path(),
        &["maintain", "ns", "--catalog", "lake", "--state", &state_arg],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("ns.small: maintained"), "{}", text(&out));
}
