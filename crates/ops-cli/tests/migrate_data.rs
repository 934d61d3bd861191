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

/// `mode` is a write mode, or `append_copy`: append by file copy (`--copy-mode auto`) from a
/// source of many small files (copies take milliseconds each, so a few large files would
/// finish before most kills); plain `append` forces `--copy-mode rewrite`.
fn crash_trials(mode: &str) {
    let mut seed = 0x5eed ^ mode.len() as u64;
    // Kill windows cover a run (a copy run takes about a third of a rewrite's time).
    let (mode, copy_mode, source, mut window_ms) = match mode {
        "append_copy" => ("append", "auto", "crash.src", 350),
        "append" => ("append", "rewrite", "quickstart.orders", 900),
        m => (m, "auto", "quickstart.orders", 900),
    };
    let mut kills = 0;
    // Kills that left committed batches behind an unfinished checkpoint.
    let mut mid_run = 0;
    // Trials whose job was over before the re-run (finished before a kill, or killed after
    // its checkpoint's mark).
    let mut over = 0;
    // TRIALS trials, then more (up to as many again) only while fewer than three kills have
    // landed between commits: how many do depends on how fast this machine runs a job (a
    // committer grouping waiting batches finishes sooner), and every trial is checked alike.
    for trial in 0..TRIALS * 2 {
        if trial >= TRIALS && mid_run >= 3 {
            break;
        }
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        ok(&run(cwd, &["quickstart", "--rows", ROWS]), "quickstart");
        if source == "crash.src" {
            // 1,000-row batches over five regions: 300 files of 200 rows.
            let args = [
                "migrate-data",
                "--source",
                "quickstart.orders",
                "--dest",
                source,
                "--create-dest",
                "--copy-mode",
                "rewrite",
                "--batch-rows",
                "1000",
            ];
            ok(&run(cwd, &args), "write a source of many files");
        }
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
            source,
            "--dest",
            dest,
            "--batch-rows",
            "3000",
            "--write-mode",
            mode,
            "--checkpoint",
            "job.json",
            "--copy-mode",
            copy_mode,
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
            let delay = Duration::from_millis(next(&mut seed) % window_ms);
            if run_and_kill(cwd, &args, delay) {
                kills += 1;
                let committed =
                    checkpoint(cwd).is_some_and(|v| !v["last_committed_batch"].is_null());
                if committed
                    && checkpoint(cwd).is_some_and(|v| v["completed"] != serde_json::json!(true))
                {
                    mid_run += 1;
                } else if !committed {
                    // Killed before its first commit: on a loaded machine a run starts slower
                    // than the window assumes, so later kills come later.
                    window_ms = (window_ms * 3 / 2).min(20_000);
                }
            } else {
                // Finished before the kill: later kills come sooner.
                window_ms = (window_ms * 2 / 3).max(50);
            }
        }
        // Whatever the last kill left — nothing, some batches, every batch, a completed job
        // (killed after its last commit, or finished before the kill) — the same command ends
        // in exit 0 (issue 31: a completed checkpoint was refused, every time).
        let completed = checkpoint(cwd).is_some_and(|v| v["completed"] == serde_json::json!(true));
        let out = run(cwd, &args);
        ok(
            &out,
            &format!("{mode} trial {trial}: the same command again"),
        );
        if completed {
            over += 1;
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("is complete in") && text.contains("nothing to commit"),
                "{mode} trial {trial}: {text}"
            );
        }
        let mut verify = vec![
            "verify",
            "--source",
            source,
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
    eprintln!(
        "{mode}: {kills} kills, {mid_run} after some batches were committed; {over} re-run(s) \
         found the job over"
    );
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
fn append_by_file_copy_survives_kills_at_random_points() {
    crash_trials("append_copy");
}

#[test]
fn overwrite_partition_survives_kills_at_random_points() {
    crash_trials("overwrite_partition");
}

#[test]
fn upsert_survives_kills_at_random_points() {
    crash_trials("upsert");
}

/// `--plan-only`, then each task in a process of its own (last task first), then `commit`:
/// the destination equals the source, its batches are committed in batch order, and a second
/// `commit` of the same outputs writes nothing.
#[test]
fn planned_tasks_run_in_other_processes_and_commit_in_batch_order() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "20000"]), "quickstart");
    let mapping = [
        "--column-mapping",
        "order_total=total_amount",
        "--type-coercion",
        "qty=long",
    ];
    let mut args = vec![
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "planned.orders",
        "--create-dest",
        "--batch-rows",
        "1500",
        "--plan-only",
        "--output",
        "json",
    ];
    args.extend(mapping);
    let out = run(cwd, &args);
    ok(&out, "plan");
    std::fs::write(cwd.join("plan.json"), &out.stdout).unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = plan["tasks"].as_array().unwrap().len();
    assert!(tasks >= 2, "{plan}");
    let batches = plan["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["max_batches"].as_u64().unwrap())
        .sum::<u64>();

    // Nothing is committed by planning or by running tasks.
    let snapshots = |cwd: &Path| -> Vec<serde_json::Value> {
        let out = run(
            cwd,
            &["table", "snapshots", "planned.orders", "--output", "json"],
        );
        ok(&out, "snapshots");
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
    };
    assert!(snapshots(cwd).is_empty());
    let mut outputs = Vec::new();
    for task in (0..tasks).rev() {
        let file = format!("task-{task}.json");
        let t = task.to_string();
        ok(
            &run(
                cwd,
                &[
                    "migrate-data",
                    "run-task",
                    "--plan",
                    "plan.json",
                    "--task",
                    &t,
                    "--out",
                    &file,
                ],
            ),
            &format!("run-task {task}"),
        );
        outputs.push(file);
    }
    assert!(snapshots(cwd).is_empty());
    // A task the plan does not have names the ids it does have, inclusive.
    let out = run(
        cwd,
        &[
            "migrate-data",
            "run-task",
            "--plan",
            "plan.json",
            "--task",
            "99",
            "--out",
            "x.json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("it has tasks 0 to {}", tasks - 1))
            || (tasks == 1 && stderr.contains("its only task is 0")),
        "{stderr}"
    );

    // A missing output is refused before anything is committed.
    let out = run(
        cwd,
        &["migrate-data", "commit", "--plan", "plan.json", &outputs[0]],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no output for task"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(snapshots(cwd).is_empty());

    let mut commit = vec!["migrate-data", "commit", "--plan", "plan.json"];
    commit.extend(outputs.iter().map(String::as_str));
    commit.extend(["--output", "json"]);
    let out = run(cwd, &commit);
    ok(&out, "commit");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["rows_moved"], 20000);
    assert_eq!(result["batches_committed"].as_u64(), Some(batches));
    // The files' routes, from the plan (new-user finding: a commit reported none).
    let routed: u64 = ["files_copied", "files_referenced", "files_rewritten"]
        .iter()
        .filter_map(|k| result[*k].as_u64())
        .sum();
    assert!(routed > 0 && result["copy_mode"] == "auto", "{result}");

    // One commit per batch, tagged, in batch order.
    let history = snapshots(cwd);
    let tagged: Vec<u64> = history
        .iter()
        .filter_map(|s| s["summary"]["iceberg-ops.migration-batch"].as_str())
        .map(|b| b.parse().unwrap())
        .collect();
    assert_eq!(tagged, (0..batches).collect::<Vec<_>>(), "{history:?}");

    // Running the commit step again finds the job complete instead of committing it twice.
    let out = run(cwd, &commit);
    ok(&out, "second commit");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["already_complete"], true, "{again}");
    assert_eq!(snapshots(cwd).len(), history.len());

    let mut verify = vec![
        "verify",
        "--source",
        "quickstart.orders",
        "--dest",
        "planned.orders",
        "--method",
        "partition_hash",
    ];
    verify.extend(mapping);
    let out = run(cwd, &verify);
    ok(&out, "verify");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("source 20000 rows, destination 20000 rows"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A plan printed as text is a preview and leaves no marker; a JSON plan marks its destination
/// until committed, maintenance refuses it naming the job, and `table abandon-migration`
/// removes the marker of a plan that will never be committed.
#[test]
fn an_abandoned_plan_can_be_unmarked() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "100"]), "quickstart");
    let plan = |output: &str| {
        run(
            cwd,
            &[
                "migrate-data",
                "--source",
                "quickstart.orders",
                "--dest",
                "abandoned.orders",
                "--create-dest",
                "--plan-only",
                "--output",
                output,
            ],
        )
    };
    let markers = |cwd: &Path| {
        let out = run(cwd, &["table", "abandon-migration", "abandoned.orders"]);
        ok(&out, "list markers");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = plan("text");
    ok(&text, "text plan");
    // Planning created the destination (so its tasks write files in its layout): said, not
    // done silently.
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains(
            "note      planning created the destination abandoned.orders (catalog 'sqlite') \
             (create_dest)"
        ),
        "{stdout}"
    );
    assert!(
        markers(cwd).contains("no unfinished migration"),
        "{}",
        markers(cwd)
    );
    let out = plan("json");
    ok(&out, "json plan");
    let json = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
    let job = json["job_id"].as_str().unwrap().to_string();
    assert_eq!(json.get("notes"), None, "the destination existed: {json}");
    assert!(markers(cwd).contains(&job), "{}", markers(cwd));
    let expire = run(cwd, &["table", "expire-snapshots", "abandoned.orders"]);
    assert!(!expire.status.success());
    let stderr = String::from_utf8_lossy(&expire.stderr);
    assert!(
        stderr.contains(&job) && stderr.contains("abandon-migration"),
        "{stderr}"
    );
    let wrong = run(
        cwd,
        &[
            "table",
            "abandon-migration",
            "abandoned.orders",
            "--job",
            "nope",
        ],
    );
    assert!(!wrong.status.success());
    ok(
        &run(
            cwd,
            &[
                "table",
                "abandon-migration",
                "abandoned.orders",
                "--job",
                &job,
            ],
        ),
        "abandon",
    );
    assert!(
        markers(cwd).contains("no unfinished migration"),
        "{}",
        markers(cwd)
    );
    ok(
        &run(cwd, &["table", "expire-snapshots", "abandoned.orders"]),
        "expire after abandoning",
    );
}

/// A planned job with `--compact --expire-job-snapshots`, committed, then committed again (a
/// retry after a lost response, a pipeline step run twice): the second commit writes nothing
/// and succeeds, saying the job is complete — with the same checkpoint and without one (then
/// the destination's trace says so: the job's compaction in the history).
#[test]
fn committing_a_completed_job_again_succeeds_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "3000"]), "quickstart");
    let out = run(
        cwd,
        &[
            "migrate-data",
            "--source",
            "quickstart.orders",
            "--dest",
            "done.orders",
            "--create-dest",
            "--batch-rows",
            "1000",
            "--compact",
            "--expire-job-snapshots",
            "--plan-only",
            "--output",
            "json",
        ],
    );
    ok(&out, "plan");
    std::fs::write(cwd.join("plan.json"), &out.stdout).unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = plan["tasks"].as_array().unwrap().len();
    let mut commit = vec![
        "migrate-data".to_string(),
        "commit".into(),
        "--plan".into(),
        "plan.json".into(),
    ];
    for task in 0..tasks {
        let file = format!("task-{task}.json");
        let t = task.to_string();
        ok(
            &run(
                cwd,
                &[
                    "migrate-data",
                    "run-task",
                    "--plan",
                    "plan.json",
                    "--task",
                    &t,
                    "--out",
                    &file,
                ],
            ),
            "run-task",
        );
        commit.push(file);
    }
    let with_checkpoint = |json: bool| {
        let mut c = commit.clone();
        c.extend(["--checkpoint".into(), "commit.ckpt".into()]);
        if json {
            c.extend(["--output".into(), "json".into()]);
        }
        c
    };
    let args = with_checkpoint(false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(cwd, &args), "first commit");
    let snapshots = || {
        let out = run(
            cwd,
            &["table", "snapshots", "done.orders", "--output", "json"],
        );
        ok(&out, "snapshots");
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
    };
    let after_first = snapshots();
    assert_eq!(
        after_first.len(),
        1,
        "compacted, batches expired: {after_first:?}"
    );

    let args = with_checkpoint(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(cwd, &args);
    ok(&out, "second commit with the checkpoint");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["already_complete"], true, "{again}");
    assert!(
        again["detail"].as_str().unwrap().contains("is complete in"),
        "{again}"
    );
    let args: Vec<&str> = commit.iter().map(String::as_str).collect();
    let out = run(cwd, &args);
    ok(&out, "second commit without a checkpoint");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("is complete in") && text.contains("nothing to commit"),
        "{text}"
    );
    assert_eq!(
        snapshots(),
        after_first,
        "the repeated commits wrote nothing"
    );
}

/// The test-only failpoint variable (crates/ops-datamig/src/failpoint.rs; debug builds only).
const ABORT_AT: &str = "ICEBERG_OPS_TEST_ABORT_AT";

/// Runs `args` with the failpoint `point` armed: the process must abort there.
fn run_aborted_at(cwd: &Path, args: &[&str], point: &str) {
    let out = cmd(cwd, args).env(ABORT_AT, point).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(&format!("test failpoint {point}: aborting")),
        "want an abort at {point}: {}\n{stderr}",
        out.status
    );
}

/// Every row once: partition_hash (an exact per-partition multiset digest) and the counts.
fn every_row_once(cwd: &Path, dest: &str, rows: &str, what: &str) {
    let out = run(
        cwd,
        &[
            "verify",
            "--source",
            "quickstart.orders",
            "--dest",
            dest,
            "--method",
            "partition_hash",
        ],
    );
    ok(&out, &format!("{what}: partition_hash"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("source {rows} rows, destination {rows} rows")),
        "{what}: {text}"
    );
}

/// Issue 31, failure 3: a local `--checkpoint` job stopped at each point between its durable
/// steps — after a batch's commit (first, middle and last batch) before its checkpoint entry,
/// after every batch before the completion record, after the completion record before the
/// checkpoint's mark, after the mark — then the same command: exit 0 every time, with the
/// verification it asks for, and every row once. Where the job was already over, the re-run
/// says so (`already_complete`), naming the source snapshot the job read (still the current
/// one here). The command: an upsert into a destination it creates.
#[test]
fn a_job_stopped_at_any_point_reruns_to_exit_0_with_every_row_once() {
    let rows = "6000";
    let upsert = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "fp.orders",
        "--write-mode",
        "upsert",
        "--upsert-keys",
        "id",
        "--batch-rows",
        "2000",
        "--create-dest",
        "--checkpoint",
        "ck.json",
    ];
    // Three batches: 0, 1 and 2 (the last).
    let cases: &[(&str, bool)] = &[
        ("after-commit:0", false),
        ("after-commit:1", false),
        ("after-commit:2", false),
        ("after-batches", false),
        ("after-completion-record", true),
        ("after-checkpoint-completed", true),
    ];
    for &(point, over) in cases {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        ok(&run(cwd, &["quickstart", "--rows", rows]), "quickstart");
        run_aborted_at(cwd, &upsert, point);
        let mut again = upsert.to_vec();
        again.extend(["--verify", "row_count", "--output", "json"]);
        let out = run(cwd, &again);
        ok(&out, &format!("{point}: the same command again"));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["verification"]["matches"], true, "{point}: {report}");
        if over {
            assert_eq!(report["already_complete"], true, "{point}: {report}");
            assert_eq!(report["source_changed"], false, "{point}: {report}");
            let detail = report["detail"].as_str().unwrap_or_default();
            assert!(
                detail.contains("still the source's current snapshot")
                    && !detail.contains("--where true")
                    && !detail.contains("rollback"),
                "{point}: {detail}"
            );
        } else {
            assert!(report["already_complete"].is_null(), "{point}: {report}");
        }
        let ck: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cwd.join("ck.json")).unwrap()).unwrap();
        assert_eq!(ck["completed"], true, "{point}: {ck}");
        every_row_once(cwd, "fp.orders", rows, point);
        // Once more: over, whatever stopped the first run.
        let out = run(cwd, &again);
        ok(&out, &format!("{point}: a third run"));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["already_complete"], true, "{point}: {report}");
    }
}

/// An append with `--compact --expire-job-snapshots` stopped after its completion record (its
/// compaction not run) and after its checkpoint's mark (its expiry not run): the same command
/// reports the job complete and finishes what was left, and says so; a third run has nothing
/// left. A job over whose source moved on names both snapshots and says a new append job
/// would copy every row again.
#[test]
fn a_rerun_of_a_completed_job_finishes_its_compaction_and_expiry_and_names_the_source_snapshots() {
    let rows = "3000";
    let args = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "fin.orders",
        "--batch-rows",
        "1000",
        "--copy-mode",
        "rewrite",
        "--create-dest",
        "--compact",
        "--expire-job-snapshots",
        "--checkpoint",
        "ck.json",
    ];
    let snapshots = |cwd: &Path| {
        let out = run(
            cwd,
            &["table", "snapshots", "fin.orders", "--output", "json"],
        );
        ok(&out, "snapshots");
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
    };
    for (point, left) in [
        (
            "after-completion-record",
            "compaction, left undone, ran now",
        ),
        ("after-checkpoint-completed", "snapshot expiry, left undone"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        ok(&run(cwd, &["quickstart", "--rows", rows]), "quickstart");
        run_aborted_at(cwd, &args, point);
        let mut again = args.to_vec();
        again.extend(["--output", "json"]);
        let out = run(cwd, &again);
        ok(&out, &format!("{point}: the same command again"));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["already_complete"], true, "{point}: {report}");
        let detail = report["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(left), "{point}: {detail}");
        // Compacted, and every snapshot of the job but the table's current one expired.
        let history = snapshots(cwd);
        assert_eq!(history.len(), 1, "{point}: {history:?}");
        every_row_once(cwd, "fin.orders", rows, point);
        let out = run(cwd, &again);
        ok(&out, &format!("{point}: a third run"));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let detail = report["detail"].as_str().unwrap_or_default();
        assert!(
            report["already_complete"] == true && !detail.contains("left undone"),
            "{point}: {report}"
        );
        assert_eq!(
            snapshots(cwd),
            history,
            "{point}: the third run wrote nothing"
        );

        if point == "after-checkpoint-completed" {
            // The source moves on (one row deleted): the re-run still succeeds, verifying at
            // the snapshot the job read, but names that snapshot and the current one, and
            // does not pretend the change was copied.
            ok(
                &run(
                    cwd,
                    &["table", "delete", "quickstart.orders", "--where", "id = 7"],
                ),
                "a change to the source",
            );
            let mut verified = again.clone();
            verified.extend(["--verify", "row_count"]);
            let out = run(cwd, &verified);
            ok(&out, "after the source moved on");
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let detail = report["detail"].as_str().unwrap_or_default();
            assert!(
                report["already_complete"] == true
                    && report["source_changed"] == true
                    && report["source_snapshot_id"] != report["source_current_snapshot_id"]
                    && report["verification"]["matches"] == true
                    && detail.contains("not in the destination")
                    && detail.contains("copies every row again"),
                "{report}"
            );
        }
    }
}

/// The gap the previous stop left (docs/datamig.md, "Limitations"): a local `--checkpoint` job
/// stopped after its completion record but before its checkpoint's mark, whose snapshots were
/// then expired (the record lets maintenance at the table again): two compactions make the
/// job's last batch neither current nor the current snapshot's parent, and the expiry removes
/// every snapshot but the current one. The same command reports the job complete, from its
/// completion record, instead of refusing it as "rolled back, or expired".
#[test]
fn a_job_stopped_before_its_checkpoint_mark_then_expired_is_reported_complete() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "3000"]), "quickstart");
    let args = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "gap.orders",
        "--batch-rows",
        "200",
        "--copy-mode",
        "rewrite",
        "--create-dest",
        "--checkpoint",
        "ck.json",
    ];
    run_aborted_at(cwd, &args, "after-completion-record");
    // Five 600-row source files, one per region, in 200-row batches: three files a region.
    for only in [&["--where", "region = 'eu'"][..], &[]] {
        let mut compact = vec!["table", "compact", "gap.orders", "--min-input-files", "2"];
        compact.extend(only);
        ok(&run(cwd, &compact), "compact");
    }
    ok(
        &run(
            cwd,
            &[
                "table",
                "expire-snapshots",
                "gap.orders",
                "--older-than",
                "2099-01-01",
            ],
        ),
        "expire",
    );
    let out = run(
        cwd,
        &["table", "snapshots", "gap.orders", "--output", "json"],
    );
    ok(&out, "snapshots");
    let left: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        left.len() == 1 && left[0]["operation"] == "replace",
        "only the second compaction is left: {left:?}"
    );
    let mut again = args.to_vec();
    again.extend(["--verify", "row_count", "--output", "json"]);
    let out = run(cwd, &again);
    ok(&out, "the same command again");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let detail = report["detail"].as_str().unwrap_or_default();
    assert!(
        report["already_complete"] == true
            && report["verification"]["matches"] == true
            && detail.contains("completion record"),
        "{report}"
    );
    let ck: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cwd.join("ck.json")).unwrap()).unwrap();
    assert_eq!(ck["completed"], true, "{ck}");
    every_row_once(cwd, "gap.orders", "3000", "gap");
}

/// The current snapshot of `table`, from `table snapshots`.
fn current_snapshot(cwd: &Path, table: &str) -> i64 {
    let out = run(cwd, &["table", "snapshots", table, "--output", "json"]);
    ok(&out, "snapshots");
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    list.iter()
        .find(|s| s["current"] == true)
        .and_then(|s| s["snapshot_id"].as_i64())
        .unwrap_or_else(|| panic!("{table} has no current snapshot: {list:?}"))
}

/// Issue 31, item 3, the resume path: a local `--checkpoint` upsert stopped mid-job (after a
/// batch's commit) and after its last batch (before the completion record), then rows appended
/// to the source, then the same command: exit 0, resuming at the snapshot the job is pinned
/// to, and the report names that snapshot and the source's current one and says the new rows
/// are not copied — in JSON (`source_current_snapshot_id`, `source_changed`, as for a job found
/// complete) and as a warning in text. Before, a resume said nothing of the source.
#[test]
fn a_resume_after_rows_were_added_to_the_source_names_both_snapshots() {
    let rows = "6000";
    let upsert = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "rs.orders",
        "--write-mode",
        "upsert",
        "--upsert-keys",
        "id",
        "--batch-rows",
        "2000",
        "--create-dest",
        "--checkpoint",
        "ck.json",
    ];
    // Three batches: 0, 1 and 2 (the last).
    for point in ["after-commit:1", "after-batches"] {
        for output in ["json", "text"] {
            let what = format!("{point}, {output}");
            let dir = tempfile::tempdir().unwrap();
            let cwd = dir.path();
            ok(&run(cwd, &["quickstart", "--rows", rows]), "quickstart");
            // Five rows to append to the source later, in its own schema.
            ok(
                &run(
                    cwd,
                    &[
                        "migrate-data",
                        "--source",
                        "quickstart.orders",
                        "--dest",
                        "side.orders",
                        "--create-dest",
                        "--copy-mode",
                        "rewrite",
                        "--row-filter",
                        "id < 5",
                    ],
                ),
                "the rows to append",
            );
            run_aborted_at(cwd, &upsert, point);
            let ck: serde_json::Value =
                serde_json::from_slice(&std::fs::read(cwd.join("ck.json")).unwrap()).unwrap();
            let pinned = ck["source_snapshot_id"].as_i64().unwrap();
            ok(
                &run(
                    cwd,
                    &[
                        "migrate-data",
                        "--source",
                        "side.orders",
                        "--dest",
                        "quickstart.orders",
                        "--copy-mode",
                        "rewrite",
                    ],
                ),
                "rows appended to the source",
            );
            let current = current_snapshot(cwd, "quickstart.orders");
            assert_ne!(pinned, current, "{what}");
            let mut again = upsert.to_vec();
            again.extend(["--verify", "row_count", "--output", output]);
            let out = run(cwd, &again);
            ok(&out, &format!("{what}: the same command again"));
            let stdout = String::from_utf8_lossy(&out.stdout);
            if output == "json" {
                let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert!(
                    report["already_complete"].is_null()
                        && report["source_snapshot_id"] == pinned
                        && report["source_current_snapshot_id"] == current
                        && report["source_changed"] == true
                        && report["verification"]["matches"] == true,
                    "{what}: {report}"
                );
            } else {
                let warning = stdout
                    .lines()
                    .find(|l| l.starts_with("warning   It read quickstart.orders"))
                    .unwrap_or_else(|| panic!("{what}: no warning about the source:\n{stdout}"));
                assert!(
                    warning.contains(&format!("at snapshot {pinned}, but the source's current snapshot is now {current}"))
                        && warning.contains("changes committed to the source since are not in the destination, and this job does not copy them"),
                    "{what}: {warning}"
                );
            }
            // The job copied its pinned snapshot, every row once; the new rows are not copied.
            every_row_once_at(cwd, "rs.orders", pinned, rows, &what);
        }
    }
}

/// A first run whose source did not move reports the snapshot it pinned as still current.
#[test]
fn a_first_run_reports_its_pinned_source_snapshot_as_current() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "3000"]), "quickstart");
    let current = current_snapshot(cwd, "quickstart.orders");
    let args = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "first.orders",
        "--create-dest",
        "--output",
        "json",
    ];
    let out = run(cwd, &args);
    ok(&out, "a first run");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["source_snapshot_id"] == current
            && report["source_current_snapshot_id"] == current
            && report["source_changed"] == false,
        "{report}"
    );
}

/// An append with `--expire-job-snapshots` into a destination that had a snapshot: the undo
/// advice names `table set-current-snapshot`, since the expiry broke the parent chain that
/// `table rollback` (ancestors only) follows — and the advice, run as printed, works.
#[test]
fn the_undo_advice_after_an_expiry_is_set_current_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "3000"]), "quickstart");
    let base = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "undo.orders",
        "--copy-mode",
        "rewrite",
        "--batch-rows",
        "1000",
    ];
    let mut first = base.to_vec();
    first.extend(["--create-dest", "--row-filter", "id < 10"]);
    ok(&run(cwd, &first), "a destination with a snapshot");
    let before = current_snapshot(cwd, "undo.orders");
    let mut second = base.to_vec();
    second.extend(["--row-filter", "id >= 10", "--expire-job-snapshots"]);
    let out = run(cwd, &second);
    ok(&out, "an append expiring its snapshots");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Run as printed: it names the catalog (the default one here).
    let undo = format!(
        "undo      iceberg-ops table set-current-snapshot undo.orders --catalog {} --to {before}",
        ops_core::catalog::EMBEDDED_DEFAULT
    );
    assert!(
        stdout.lines().any(|l| l == undo) && !stdout.contains("table rollback"),
        "{stdout}"
    );
    // rollback refuses it; the advice as printed restores the destination.
    let rollback = run(
        cwd,
        &[
            "table",
            "rollback",
            "undo.orders",
            "--to",
            &before.to_string(),
        ],
    );
    assert!(!rollback.status.success(), "rollback after the expiry");
    let advice: Vec<&str> = undo
        .trim_start_matches("undo      iceberg-ops ")
        .split(' ')
        .collect();
    ok(&run(cwd, &advice), "the undo advice");
    assert_eq!(current_snapshot(cwd, "undo.orders"), before);
}

/// [`every_row_once`] against the source at `snapshot` — and the source's current rows, which
/// hold five more (appended after the job pinned `snapshot`), are not all in `dest`.
fn every_row_once_at(cwd: &Path, dest: &str, snapshot: i64, rows: &str, what: &str) {
    let verify = |at: Option<String>| {
        let mut args = vec![
            "verify".to_string(),
            "--source".into(),
            "quickstart.orders".into(),
            "--dest".into(),
            dest.into(),
            "--method".into(),
            "partition_hash".into(),
        ];
        if let Some(at) = at {
            args.extend(["--source-snapshot".into(), at]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(cwd, &args)
    };
    let out = verify(Some(snapshot.to_string()));
    ok(
        &out,
        &format!("{what}: partition_hash at the pinned snapshot"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("source {rows} rows, destination {rows} rows")),
        "{what}: {text}"
    );
    let out = verify(None);
    let text = String::from_utf8_lossy(&out.stdout);
    let more = rows.parse::<u64>().unwrap() + 5;
    assert!(
        !out.status.success() && text.contains(&format!("source {more} rows")),
        "{what}: the appended rows are not copied: {text}"
    );
}

/// An upsert run again changes no row and commits nothing: it prints no undo line (there is
/// nothing to undo; it printed the rollback of the first run's snapshots).
#[test]
fn an_upsert_that_changes_nothing_prints_no_undo_line() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "500"]), "quickstart");
    let upsert = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "up.orders",
        "--write-mode",
        "upsert",
        "--upsert-keys",
        "id",
    ];
    let mut first = upsert.to_vec();
    first.extend(["--create-dest", "--row-filter", "id < 100"]);
    ok(&run(cwd, &first), "a destination with some of the rows");
    let out = run(cwd, &upsert);
    ok(&out, "an upsert adding the others");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("undo      iceberg-ops table rollback"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(cwd, &upsert);
    ok(&out, "the same upsert again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("upsert    0 inserted, 0 updated") && !stdout.contains("undo"),
        "{stdout}"
    );
}

/// The commands a warning quotes between backticks, each as its arguments (`iceberg-ops`
/// dropped).
fn quoted_commands(text: &str) -> Vec<Vec<String>> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|c| c.strip_prefix("iceberg-ops "))
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// `args` run with `--dry-run` (it must succeed): its stderr and the commands it quotes.
fn dry_run_advice(cwd: &Path, args: &[&str], what: &str) -> (String, Vec<Vec<String>>) {
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let out = run(cwd, &dry);
    ok(&out, &format!("{what}: a dry run"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let advice = quoted_commands(&stderr);
    (stderr, advice)
}

/// A job without a checkpoint killed after a commit leaves its marker and its committed rows.
/// The same command run again warns that those rows would be added a second time and says how
/// to undo them: emptying the table a killed first job created, rolling back to the snapshot
/// before a later one. Following the advice, the run moves every row once and warns no more.
#[test]
fn a_rerun_beside_a_killed_job_warns_and_its_advice_leaves_every_row_once() {
    let rows = "6000";
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", rows]), "quickstart");
    let append = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "k.orders",
        "--batch-rows",
        "2000",
        "--create-dest",
    ];
    for (case, undo) in [("first job", "delete"), ("later job", "rollback")] {
        if case == "later job" {
            // A finished job first, then the killed one: the table has a snapshot before it.
            ok(&run(cwd, &append), "a finished job");
            let out = run(cwd, &["table", "delete", "k.orders", "--where", "true"]);
            ok(&out, "emptied");
        }
        run_aborted_at(cwd, &append, "after-commit:0");
        let (stderr, advice) = dry_run_advice(cwd, &append, case);
        assert!(
            stderr.contains("carries the marker of unfinished migration job")
                && stderr.contains("which committed 1 snapshot(s)")
                && stderr.contains("this append adds its committed rows a second time"),
            "{case}: {stderr}"
        );
        assert_eq!(advice.len(), 2, "{case}: {stderr}");
        assert_eq!(advice[0][1], undo, "{case}: {stderr}");
        assert_eq!(advice[1][1], "abandon-migration", "{case}: {stderr}");
        for command in &advice {
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            ok(&run(cwd, &args), &format!("{case}: {args:?}"));
        }
        let out = run(cwd, &append);
        ok(&out, &format!("{case}: the run after the undo"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("unfinished migration job"),
            "{case}: {stderr}"
        );
        every_row_once(cwd, "k.orders", rows, case);
    }
    // Another writer committed after the killed job started: a rollback would undo its commit
    // too, so none is advised.
    run_aborted_at(cwd, &append, "after-commit:0");
    ok(
        &run(cwd, &["table", "delete", "k.orders", "--where", "id = 1"]),
        "another writer",
    );
    let (stderr, advice) = dry_run_advice(cwd, &append, "another writer");
    assert!(
        stderr.contains("1 other snapshot(s) were committed since it started"),
        "{stderr}"
    );
    assert!(
        advice.iter().all(|c| c[1] == "abandon-migration"),
        "{stderr}"
    );
    // A killed upsert, and the upsert run again: it writes over the killed job's rows, so only
    // the marker is left to clear.
    let into = |dest: &'static str| {
        let mut args = append.to_vec();
        args[4] = dest;
        args
    };
    // An empty table first, so the upsert's first batch inserts rows (and commits).
    let mut empty = into("u.orders");
    empty.extend(["--row-filter", "id < 0"]);
    ok(&run(cwd, &empty), "u.orders");
    let mut upsert = into("u.orders");
    upsert.extend(["--write-mode", "upsert", "--upsert-keys", "id"]);
    run_aborted_at(cwd, &upsert, "after-commit:0");
    let (stderr, advice) = dry_run_advice(cwd, &upsert, "an upsert");
    assert!(
        stderr.contains("This run writes over its rows (upsert), adding none twice")
            && !stderr.contains("a second time"),
        "{stderr}"
    );
    assert_eq!(advice.len(), 1, "{stderr}");
    assert_eq!(advice[0][1], "abandon-migration", "{stderr}");
    let args: Vec<&str> = advice[0].iter().map(String::as_str).collect();
    ok(&run(cwd, &args), "abandon");
    ok(&run(cwd, &upsert), "the upsert");
    every_row_once(cwd, "u.orders", rows, "upsert");
    // A job with a checkpoint is its own: its dry run (which does not take the checkpoint up)
    // and its resume do not warn of it.
    let mut checkpointed = into("c.orders");
    checkpointed.extend(["--checkpoint", "c.json"]);
    run_aborted_at(cwd, &checkpointed, "after-commit:0");
    let (stderr, _) = dry_run_advice(cwd, &checkpointed, "checkpointed");
    assert!(!stderr.contains("unfinished migration job"), "{stderr}");
    let out = run(cwd, &checkpointed);
    ok(&out, "the resume");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("unfinished migration job"), "{stderr}");
    every_row_once(cwd, "c.orders", rows, "resumed");
    // The killed job's snapshot expired (forced past its marker) under a later one: main's
    // history no longer shows what it committed, so no rollback is advised.
    let expired = into("e.orders");
    run_aborted_at(cwd, &expired, "after-commit:0");
    let job_snapshot = current_snapshot(cwd, "e.orders");
    ok(
        &run(cwd, &["table", "delete", "e.orders", "--where", "true"]),
        "a later writer",
    );
    let id = job_snapshot.to_string();
    let args = [
        "table",
        "expire-snapshots",
        "e.orders",
        "--snapshot-id",
        &id,
        "--force",
        "--keep-files",
    ];
    ok(&run(cwd, &args), "expired");
    let (stderr, advice) = dry_run_advice(cwd, &expired, "after the expiry");
    assert!(
        stderr.contains("no longer reaches back to before it") && stderr.contains("by hand"),
        "{stderr}"
    );
    assert!(
        advice.iter().all(|c| c[1] == "abandon-migration"),
        "{stderr}"
    );
}

/// A copy from files outside Iceberg reports its source by the paths it was given (the summary
/// read `migrated   → imp.t`, its source blank).
#[test]
fn a_copy_from_paths_names_them_in_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let src = cwd.join("src");
    let props = std::collections::BTreeMap::from([
        ("type".to_string(), "sql".to_string()),
        (
            "uri".to_string(),
            format!("sqlite:///{}/py.db", cwd.display()),
        ),
        (
            "warehouse".to_string(),
            format!("file://{}/pywh", cwd.display()),
        ),
    ]);
    ops_tests::oracle::pyiceberg(
        "py",
        &props,
        &format!(
            "import os, pyarrow.parquet as pq\n\
             os.makedirs('{0}')\n\
             pq.write_table(pa.table({{'id': [1, 2, 3]}}), '{0}/a.parquet')\n\
             emit(None)",
            src.display()
        ),
    )
    .unwrap();
    let src = src.display().to_string();
    let out = run(
        cwd,
        &[
            "migrate-data",
            "--source-path",
            &src,
            "--dest",
            "imp.t",
            "--create-dest",
        ],
    );
    ok(&out, "copy from paths");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("migrated  {src} → imp.t: 3 rows")),
        "{stdout}"
    );
}

/// Ctrl-C (SIGINT) during a local run, after some batches were committed: the run exits at
/// once with the shell's code, 130, saying what stays in the destination and how to go on;
/// the same command then resumes, every row once. Without the handler the signal's default
/// ends the process silently (no exit code, only the last progress line).
#[test]
fn an_interrupted_run_says_what_stays_and_the_same_command_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", ROWS]), "quickstart");
    let args = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "int.orders",
        "--create-dest",
        "--copy-mode",
        "rewrite",
        "--batch-rows",
        "1000",
        "--checkpoint",
        "job.json",
    ];
    let mut child = cmd(cwd, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn iceberg-ops");
    let deadline = Instant::now() + Duration::from_secs(300);
    while checkpoint(cwd).is_none_or(|v| v["last_committed_batch"].is_null()) {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before a batch was committed"
        );
        assert!(Instant::now() < deadline, "no batch committed in 300 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let signal = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(signal.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        checkpoint(cwd).is_some_and(|v| v["completed"] != serde_json::json!(true)),
        "the run finished before the signal reached it: {stderr}"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted. The batches committed so far stay in int.orders")
            && stderr.contains("the checkpoint job.json records them")
            && stderr.contains("run the same command again to resume"),
        "{stderr}"
    );
    ok(&run(cwd, &args), "the same command again");
    every_row_once(cwd, "int.orders", ROWS, "after the interrupted run");
}

/// An append run again without a checkpoint is a new job and adds every row a second time (as
/// the seed's `run()` does): the second run warns, naming the completed job that appended the
/// same rows. An append of other rows (another row filter) is not warned of, nor the first.
#[test]
fn a_repeated_append_without_a_checkpoint_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    ok(&run(cwd, &["quickstart", "--rows", "6000"]), "quickstart");
    let args = [
        "migrate-data",
        "--source",
        "quickstart.orders",
        "--dest",
        "rep.orders",
        "--create-dest",
        "--batch-rows",
        "2000",
    ];
    const WARNING: &str = "may already hold rows this append adds: job ";
    let first = run(cwd, &args);
    ok(&first, "the first append");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(!stderr.contains(WARNING), "{stderr}");

    let second = run(cwd, &args);
    ok(&second, "the same append again");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(WARNING) && stderr.contains("(this run's snapshot)"),
        "{stderr}"
    );

    let mut filtered = args.to_vec();
    filtered.extend(["--row-filter", "id < 100"]);
    let other = run(cwd, &filtered);
    ok(&other, "an append of other rows");
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(!stderr.contains(WARNING), "{stderr}");
    // The same filter spelled another way reads the same rows.
    let mut respelled = args.to_vec();
    respelled.extend(["--row-filter", "id<100"]);
    let again = run(cwd, &respelled);
    ok(&again, "the filtered append again");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains(WARNING), "{stderr}");
}
