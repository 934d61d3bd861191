//! `iceberg-ops verify` on the issue-15 repro: a 1,000-row source and a destination holding the
//! same rows plus one duplicated row never match, whatever the method or the sample size.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn run(cwd: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
    c.args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env_remove("PYICEBERG_HOME");
    for (k, _) in std::env::vars() {
        if k.starts_with("PYICEBERG_") {
            c.env_remove(k);
        }
    }
    c.output().expect("run iceberg-ops")
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn verify(cwd: &Path, method: &str, size: &str) -> (Output, serde_json::Value) {
    let out = run(
        cwd,
        &[
            "verify",
            "--source",
            "quickstart.orders",
            "--dest",
            "dup.orders",
            "--method",
            method,
            "--sample-size",
            size,
            "--output",
            "json",
        ],
    );
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify {method} {size}: {e}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

#[test]
fn a_duplicated_row_is_never_a_match() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "1000"]), "quickstart");
    let copy = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "dup.orders",
        "--create-dest",
    ];
    ok(&run(cwd, &copy), "copy");
    for method in ["row_count", "partition_hash", "sample"] {
        let (out, v) = verify(cwd, method, "100");
        ok(&out, &format!("verify {method} of the copy"));
        assert_eq!(v["matches"], serde_json::json!(true), "{method}: {v}");
    }
    // One row appended again (another job: its own filter).
    let again = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "dup.orders",
        "--row-filter",
        "id = 500",
    ];
    ok(&run(cwd, &again), "append a duplicate");
    for (method, size) in [
        ("sample", "10"),
        ("sample", "50"),
        ("sample", "100"),
        ("sample", "200"),
        ("sample", "5000"),
        ("partition_hash", "100"),
        ("row_count", "100"),
    ] {
        let (out, v) = verify(cwd, method, size);
        assert!(!out.status.success(), "{method} {size}: exit 0 on {v}");
        assert_eq!(
            v["matches"],
            serde_json::json!(false),
            "{method} {size}: {v}"
        );
        if method != "partition_hash" {
            assert_eq!(v["source_count"], serde_json::json!(1000), "{v}");
            assert_eq!(v["dest_count"], serde_json::json!(1001), "{v}");
        }
    }
}
