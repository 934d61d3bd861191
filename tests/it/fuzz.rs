//! The differential table fuzzer's fixed seeds (`tests/fuzz/seeds.txt`, `seeds-mor.txt`): for each seed PyIceberg
//! writes a table (random schema, spec, values and history), the `iceberg-ops` binary of this
//! build runs 2–3 of its paths on it and PyIceberg judges the outcome (`tests/fuzz`,
//! docs/testing.md "The table fuzzer"). A failure lists every failing seed with its problem and
//! the command that reruns (and shrinks) it.
//!
//! Needs `iceberg-ops` built next to this test binary (`cargo build -p ops-cli`; `cargo test
//! --workspace` builds it), or its path in `ICEBERG_OPS_BIN`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::common::TestResult;

/// The `iceberg-ops` binary this build made (target/debug/deps/it-HASH → target/debug).
fn binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("ICEBERG_OPS_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("iceberg-ops"))
        .context("locate target/debug")?;
    if !bin.exists() {
        bail!(
            "{} is missing: build it with `cargo build -p ops-cli` (or set ICEBERG_OPS_BIN)",
            bin.display()
        );
    }
    Ok(bin)
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// One line per failing path of the report: seed, path, what went wrong, how to rerun it.
fn failures(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let generator = report["generator"].as_i64().unwrap_or_default();
    for case in report["cases"].as_array().into_iter().flatten() {
        let seed = &case["seed"];
        for path in case["paths"].as_array().into_iter().flatten() {
            let status = path["status"].as_str().unwrap_or_default();
            if status != "fail" && status != "error" {
                continue;
            }
            let problem = path["problems"][0].as_str().unwrap_or_default();
            let problem: String = problem.chars().take(600).collect();
            out.push(format!(
                "seed {seed}: {} {status} ({}): {problem}\n    rerun: scripts/fuzz-tables --seed {seed} \
                 --cases 1 --generator {generator}",
                path["path"].as_str().unwrap_or_default(),
                path["kind"].as_str().unwrap_or_default(),
            ));
        }
    }
    out
}

#[test]
fn fixed_seeds() -> TestResult {
    run_seeds("seeds.txt")
}

/// Generator 2's seeds of merge-on-read tables: position and equality delete files
/// (`tests/fuzz/seeds-mor.txt`).
#[test]
fn merge_on_read_seeds() -> TestResult {
    run_seeds("seeds-mor.txt")
}

/// Generator 3's seeds of the `import` path: the case's rows as a Hive tree, imported
/// (`tests/fuzz/seeds-import.txt`; that path only: the others run as generator 2's).
#[test]
fn import_seeds() -> TestResult {
    run_seeds_of("seeds-import.txt", Some("import"))
}

/// The seeds of shapes found but not fixed yet (`tests/fuzz/known.txt`).
#[test]
#[ignore = "shapes the fuzzer found that are not fixed yet: tests/fuzz/known.txt"]
fn known_failures() -> TestResult {
    run_seeds("known.txt")
}

fn run_seeds(file: &str) -> TestResult {
    run_seeds_of(file, None)
}

/// Runs the seeds of `file`, only path `only` of each case when given.
fn run_seeds_of(file: &str, only: Option<&str>) -> TestResult {
    let bin = binary()?;
    let dir = tempfile::Builder::new()
        .prefix("fuzz-tables-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let report = dir.path().join("report.json");
    let started = std::time::Instant::now();
    let out = Command::new(ops_tests::tools::python())
        .arg(fuzz_dir().join("fuzz_tables.py"))
        .arg("--binary")
        .arg(&bin)
        .arg("--seeds-file")
        .arg(fuzz_dir().join(file))
        .args(["--no-shrink", "--quiet", "--work"])
        .arg(dir.path().join("work"))
        .args(only.map(|p| ["--paths", p]).into_iter().flatten())
        .arg("--report")
        .arg(&report)
        .output()
        .context("run tests/fuzz/fuzz_tables.py")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "fuzz_tables.py ran in {:.0}s:\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    let text = std::fs::read_to_string(&report).with_context(|| {
        format!(
            "fuzz_tables.py wrote no report ({}):\n{stderr}\n{stdout}",
            out.status
        )
    })?;
    let report: Value = serde_json::from_str(&text)?;
    let failed = failures(&report);
    if !failed.is_empty() {
        bail!(
            "{} path run(s) of the fixed fuzz seeds failed (tests/fuzz/{file}; the case \
             directories are kept under {}):\n{}",
            failed.len(),
            dir.keep().display(),
            failed.join("\n")
        );
    }
    if !out.status.success() {
        bail!(
            "fuzz_tables.py failed ({}):\n{stderr}\n{stdout}",
            out.status
        );
    }
    let cases = report["cases"].as_array().map_or(0, Vec::len);
    anyhow::ensure!(cases > 0, "the fixed seeds ran no case:\n{stdout}");
    Ok(())
}
