//! `iceberg-ops migrate-data` killed at many points: after resuming, the destination equals the
//! source exactly (checked with `iceberg-ops verify --method partition_hash`, an exact
//! per-partition multiset digest, and row_count).

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TRIALS: u64 = 20;
const ROWS: &str = "60000";

fn cmd(cwd: &Path, args: &[&str]) -> Command {
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
    c
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    cmd(cwd, args).output().expect("run iceberg-ops")
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `args` and SIGKILLs it after `delay` unless it finished; true if it was killed.
fn run_and_kill(cwd: &Path, args: &[&str], delay: Duration) -> bool {
    let mut child = cmd(cwd, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn iceberg-ops");
    let deadline = Instant::now() + delay;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return false;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn checkpoint(cwd: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(cwd.join("job.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// A small deterministic generator, so a failing trial can be replayed.
fn next(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn crash_trials(mode: &str) {
    let mut seed = 0x5eed ^ mode.len() as u64;
    let mut kills = 0;
    // Kills that left committed batches behind an unfinished checkpoint.
    let mut mid_run = 0;
    for trial in 0..TRIALS {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        ok(&run(cwd, &["quickstart", "--rows", ROWS]), "quickstart");
        let dest = match mode {
            // quickstart.orders_v2 already holds a full copy: every partition gets replaced.
            "overwrite_partition" => "quickstart.orders_v2",
            _ => "crash.orders",
        };
        let mapping = [
            "--column-mapping",
            "order_total=total_amount",
            "--type-coercion",
            "qty=long",
        ];
        if mode == "upsert" {
            // The destination starts with a third of the rows.
            let mut args = vec![
                "migrate-data",
                "--source",
                "quickstart.orders",
                "--dest",
                dest,
                "--create-dest",
                "--row-filter",
                "id < 20000",
            ];
            args.extend(mapping);
            ok(&run(cwd, &args), "seed the upsert destination");
        }
        let mut args = vec![
            "migrate-data",
            "--source",
            "quickstart.orders",
            "--dest",
            dest,
            "--batch-rows",
            "3000",
            "--write-mode",
            mode,
            "--checkpoint",
            "job.json",
        ];
        args.extend(mapping);
        if mode == "upsert" {
            args.extend(["--upsert-keys", "id"]);
        }
        if mode == "append" {
            args.push("--create-dest");
        }
        // Up to three kills at pseudo-random points, then a run to completion.
        for _ in 0..1 + next(&mut seed) % 3 {
            let delay = Duration::from_millis(next(&mut seed) % 900);
            if run_and_kill(cwd, &args, delay) {
                kills += 1;
                if checkpoint(cwd).is_some_and(|v| {
                    !v["last_committed_batch"].is_null()
                        && v["completed"] != serde_json::json!(true)
                }) {
                    mid_run += 1;
                }
            }
        }
        // A run that finished before its kill completed the checkpoint; another would be
        // refused as a completed job.
        let completed = checkpoint(cwd).is_some_and(|v| v["completed"] == serde_json::json!(true));
        if !completed {
            ok(&run(cwd, &args), &format!("{mode} trial {trial}: resume"));
        }
        let mut verify = vec![
            "verify",
            "--source",
            "quickstart.orders",
            "--dest",
            dest,
            "--method",
            "partition_hash",
        ];
        verify.extend(mapping);
        let out = run(cwd, &verify);
        ok(&out, &format!("{mode} trial {trial}: partition_hash"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("source {ROWS} rows, destination {ROWS} rows")),
            "{mode} trial {trial}: {text}"
        );
    }
    eprintln!("{mode}: {kills} kills, {mid_run} after some batches were committed");
    assert!(
        mid_run >= 3,
        "{mode}: only {mid_run} of {kills} kills landed between commits; widen the kill window"
    );
}

#[test]
fn append_survives_kills_at_random_points() {
    crash_trials("append");
}

#[test]
fn overwrite_partition_survives_kills_at_random_points() {
    crash_trials("overwrite_partition");
}

#[test]
fn upsert_survives_kills_at_random_points() {
    crash_trials("upsert");
}
