//! `migrate-data --cluster`: a Ballista scheduler and two executors as separate processes on
//! 127.0.0.1, each with its own working directory and HOME (its own `.pyiceberg.yaml`), against
//! a Glue catalog and an S3 warehouse in moto — nothing a task needs is on the client's disk.
//!
//! Needs `iceberg-ops` built with the `cluster` feature next to this test binary
//! (`cargo build -p ops-cli --features cluster`), or its path in `ICEBERG_OPS_BIN`.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::common::{
    TestResult, create_orders, glue_on_moto, init_tracing, open, orders_batch, pyiceberg_orders,
    sort_rows,
};
use crate::corpus::{expect_equal, key_of, py_list, py_str};
use ops_tests::servers::free_port;

/// The `iceberg-ops` binary with the `cluster` feature.
fn binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("ICEBERG_OPS_BIN") {
        return Ok(PathBuf::from(p));
    }
    // target/debug/deps/it-HASH → target/debug/iceberg-ops
    let exe = std::env::current_exe()?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("iceberg-ops"))
        .context("locate target/debug")?;
    if !bin.exists() {
        bail!(
            "{} is missing: build it with `cargo build -p ops-cli --features cluster` (or set \
             ICEBERG_OPS_BIN)",
            bin.display()
        );
    }
    Ok(bin)
}

/// A process of the test with its own directory (its HOME and working directory), killed on
/// drop; its output goes to `<dir>/log`.
struct Proc {
    name: String,
    child: Child,
    dir: PathBuf,
}

impl Proc {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Waits until `port` accepts connections (the process must still be running).
    fn wait_for_port(&mut self, port: u16) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before listening:\n{}",
                    self.name,
                    self.log()
                );
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("{} did not listen on {port}:\n{}", self.name, self.log())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The catalog `lake` as a `.pyiceberg.yaml`.
fn write_config(home: &Path, props: &BTreeMap<String, String>) -> anyhow::Result<()> {
    let mut yaml = String::from("catalog:\n  lake:\n");
    for (k, v) in props {
        yaml.push_str(&format!("    {k}: {}\n", serde_json::to_string(v)?));
    }
    std::fs::write(home.join(".pyiceberg.yaml"), yaml)?;
    Ok(())
}

/// A command of the binary in `dir` (HOME, working directory, config), with nothing of the
/// test's environment but PATH.
fn command(bin: &Path, dir: &Path, props: &BTreeMap<String, String>) -> anyhow::Result<Command> {
    std::fs::create_dir_all(dir)?;
    write_config(dir, props)?;
    let log = std::fs::File::create(dir.join("log"))?;
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("PYICEBERG_HOME", dir)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env(
            "RUST_LOG",
            "info,iceberg=warn,ballista=warn,datafusion=warn",
        )
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    Ok(cmd)
}

struct Cluster {
    scheduler_port: u16,
    scheduler: Proc,
    executors: Vec<Proc>,
}

/// A scheduler and `n` executors of one task slot each, each in its own directory under `root`.
fn start_cluster(
    bin: &Path,
    root: &Path,
    props: &BTreeMap<String, String>,
    n: usize,
) -> anyhow::Result<Cluster> {
    start_cluster_with(bin, root, props, n, &[], &[], None)
}

/// [`start_cluster`] with `scheduler_env` added to the scheduler's environment and
/// `executor_env` to the executors', and the executors' catalog `executor_props` when given.
fn start_cluster_with(
    bin: &Path,
    root: &Path,
    props: &BTreeMap<String, String>,
    n: usize,
    scheduler_env: &[(&str, &str)],
    executor_env: &[(&str, &str)],
    executor_props: Option<&BTreeMap<String, String>>,
) -> anyhow::Result<Cluster> {
    let scheduler_port = free_port();
    let dir = root.join("scheduler");
    let mut cmd = command(bin, &dir, props)?;
    cmd.envs(scheduler_env.iter().copied());
    cmd.args(["cluster", "scheduler", "--bind"])
        .arg(format!("127.0.0.1:{scheduler_port}"))
        .args(["--executor-timeout", "5"]);
    let mut scheduler = Proc {
        name: "scheduler".into(),
        child: cmd.spawn().context("start the scheduler")?,
        dir,
    };
    scheduler.wait_for_port(scheduler_port)?;
    let cluster = Cluster {
        scheduler_port,
        scheduler,
        executors: Vec::new(),
    };
    add_executors(bin, root, props, cluster, n, executor_env, executor_props)
}

/// `cluster` with `n` more executors of one task slot each (`executor-<i>` under `root`).
fn start_cluster_executors(
    bin: &Path,
    root: &Path,
    props: &BTreeMap<String, String>,
    cluster: Cluster,
    n: usize,
) -> anyhow::Result<Cluster> {
    add_executors(bin, root, props, cluster, n, &[], None)
}

fn add_executors(
    bin: &Path,
    root: &Path,
    props: &BTreeMap<String, String>,
    mut cluster: Cluster,
    n: usize,
    executor_env: &[(&str, &str)],
    executor_props: Option<&BTreeMap<String, String>>,
) -> anyhow::Result<Cluster> {
    let scheduler_port = cluster.scheduler_port;
    let first = cluster.executors.len();
    for i in first..first + n {
        let (port, grpc) = (free_port(), free_port());
        let dir = root.join(format!("executor-{i}"));
        let mut cmd = command(bin, &dir, executor_props.unwrap_or(props))?;
        cmd.envs(executor_env.iter().copied());
        cmd.args(["cluster", "executor", "--scheduler"])
            .arg(format!("127.0.0.1:{scheduler_port}"))
            .args(["--concurrent-tasks", "1", "--heartbeat", "1"])
            .args([
                "--port",
                &port.to_string(),
                "--grpc-port",
                &grpc.to_string(),
            ])
            .arg("--work-dir")
            .arg(dir.join("work"));
        let mut p = Proc {
            name: format!("executor {i}"),
            child: cmd.spawn().context("start an executor")?,
            dir,
        };
        // Pull mode (see ops_ballista::process): the executor serves Flight, not gRPC.
        p.wait_for_port(port)?;
        cluster.executors.push(p);
    }
    Ok(cluster)
}

/// `migrate-data` of `src.orders` into `dst.orders` (created) through the scheduler at `port`,
/// in batches of `batch_rows`, checkpointed in `client_dir/checkpoint`, its output piped; the
/// caller adds the rest.
fn orders_through(
    bin: &Path,
    client_dir: &Path,
    props: &BTreeMap<String, String>,
    port: u16,
    batch_rows: usize,
    checkpoint: &str,
) -> anyhow::Result<Command> {
    let mut cmd = command(bin, client_dir, props)?;
    cmd.args(["migrate-data", "--source-catalog", "lake"])
        .args([
            "--source",
            "src.orders",
            "--dest",
            "dst.orders",
            "--create-dest",
        ])
        .arg("--batch-rows")
        .arg(batch_rows.to_string())
        .arg("--checkpoint")
        .arg(client_dir.join(checkpoint))
        .arg("--cluster")
        .arg(format!("df://127.0.0.1:{port}"))
        .stdout(Stdio::piped());
    Ok(cmd)
}

/// Tasks the executors' logs say they executed.
fn tasks_executed(cluster: &Cluster) -> usize {
    cluster
        .executors
        .iter()
        .map(|e| e.log().matches("task output written").count())
        .sum()
}

#[test]
fn migrate_through_a_ballista_cluster() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;

    // The source: six appends of 20 rows over three regions, so many small files.
    let rt = tokio::runtime::Runtime::new()?;
    let rows = make_source(&rt, &props, 6)?;

    let cluster = start_cluster(&bin, root.path(), &props, 2)?;
    let client_dir = root.path().join("client");
    // The client command, as JSON, and its log; run twice below.
    let migrate = || -> anyhow::Result<(std::process::Output, String)> {
        let out = orders_through(
            &bin,
            &client_dir,
            &props,
            cluster.scheduler_port,
            25,
            "job.json",
        )?
        .args(["--output", "json"])
        .output()?;
        Ok((out, std::fs::read_to_string(client_dir.join("log"))?))
    };
    let (out, client_log) = migrate()?;
    if !out.status.success() {
        bail!(
            "migrate-data --cluster failed ({}):\n{client_log}\n--- scheduler:\n{}\n--- \
             executor 0:\n{}\n--- executor 1:\n{}",
            out.status,
            cluster.scheduler.log(),
            cluster.executors[0].log(),
            cluster.executors[1].log()
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(&stdout)
        .with_context(|| format!("the result:\n{stdout}\n{client_log}"))?;
    assert_eq!(result["rows_moved"], rows.len() as u64, "{client_log}");

    // PyIceberg reads every source row exactly once.
    let (got, desc) = pyiceberg_orders("lake", &props, "dst")?;
    let mut want = crate::common::orders_json(&rows);
    sort_rows(&mut want);
    assert_eq!(got, want);

    // One snapshot per batch, committed in batch order and tagged with the job.
    let snapshots = desc["snapshots"].as_array().context("snapshots")?;
    let batches: Vec<u64> = snapshots
        .iter()
        .map(|s| {
            s["summary"]["iceberg-ops.migration-batch"]
                .as_str()
                .and_then(|b| b.parse().ok())
                .context("a snapshot without its batch tag")
        })
        .collect::<anyhow::Result<_>>()?;
    assert!(batches.len() >= 2, "{batches:?}");
    assert_eq!(batches, (0..batches.len() as u64).collect::<Vec<_>>());
    assert_eq!(result["batches_committed"], batches.len() as u64);

    // Each task ran once, on the executors (not the client), and its output was removed.
    let executed = tasks_executed(&cluster);
    assert!(executed >= 2, "executors ran {executed} task(s)");
    assert!(
        !client_log.contains("task output written"),
        "the client ran a task itself"
    );
    let job_id = result["job_id"].as_str().context("job id")?.to_string();
    let leftover = rt.block_on(async {
        let handle = open("lake", &props).await?;
        let t = handle
            .catalog()
            .load_table(&iceberg::TableIdent::from_strs(["dst", "orders"])?)
            .await?;
        let path = format!(
            "{}/iceberg-ops-jobs/{job_id}/task-000000.json",
            t.metadata().location().trim_end_matches('/')
        );
        anyhow::Ok(t.file_io().exists(&path).await?)
    })?;
    assert!(!leftover, "the job's outputs were left behind");

    // The same command again: the job is complete, which it says and succeeds, submitting no
    // task and committing nothing.
    let (again, again_log) = migrate()?;
    assert!(again.status.success(), "{again_log}");
    let said: Value = serde_json::from_slice(&again.stdout)
        .with_context(|| format!("{}\n{again_log}", String::from_utf8_lossy(&again.stdout)))?;
    assert_eq!(said["already_complete"], json!(true), "{said}");
    assert_eq!(said["job_id"], json!(job_id), "{said}");
    assert_eq!(tasks_executed(&cluster), executed, "a task ran again");
    let (_, desc_again) = pyiceberg_orders("lake", &props, "dst")?;
    assert_eq!(
        desc_again["snapshots"], desc["snapshots"],
        "something was committed"
    );
    Ok(())
}

/// Rows per corpus table written into moto for the cluster (several batches per table).
const CORPUS_ROWS: usize = 3000;
/// The benchmark table through the cluster: rows, and appends (each one file per region).
const BENCH_ROWS: usize = 100_000;
const BENCH_FILES: usize = 4;

/// Every corpus table (`make_corpus.py` and `corpus_extra.py`) and the benchmark table
/// (`gen_source.py`), written by PyIceberg into moto's S3 warehouse, through the cluster:
/// `--verify partition_hash` matches and PyIceberg reads from each destination exactly the
/// source's rows, values and schema (`corpus_oracle.copy_verdict`).
#[test]
fn every_corpus_table_and_the_benchmark_table_through_the_cluster() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let scripts = [
        crate::corpus::corpus_script()?,
        ops_tests::tools::py_script("corpus_extra.py"),
    ];
    let scripts: Vec<String> = scripts.iter().map(|p| p.display().to_string()).collect();
    let gen_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/gen_source.py");
    let started = Instant::now();
    let staged = ops_tests::oracle::pyiceberg(
        "lake",
        &props,
        &format!(
            "import corpus_anywhere as ca\n\
             emit({{'corpus': ca.corpus(catalog, json.loads({scripts}), {CORPUS_ROWS}), \
             'bench': ca.bench(catalog, {gen}, {BENCH_ROWS}, {BENCH_FILES})}})",
            scripts = py_str(&serde_json::to_string(&scripts)?)?,
            gen = py_str(&gen_source.display().to_string())?,
        ),
    )?;
    eprintln!(
        "corpus and benchmark table written to moto in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    // (source, destination, key, rows per batch)
    let mut tables: Vec<(String, String, &[&str], usize)> = Vec::new();
    for t in staged["corpus"].as_array().context("corpus tables")? {
        let t = t.as_str().context("a table name")?;
        tables.push((format!("corpus.{t}"), format!("dst.{t}"), key_of(t)?, 700));
    }
    tables.push((
        "bench.orders".into(),
        "dst.bench_orders".into(),
        &["id"],
        BENCH_ROWS / 6,
    ));
    anyhow::ensure!(tables.len() >= 16, "staged: {staged}");

    let cluster = start_cluster(&bin, root.path(), &props, 2)?;
    let client_dir = root.path().join("client");
    let mut failures = Vec::new();
    for (source, dest, key, batch_rows) in &tables {
        let started = Instant::now();
        let checkpoint = client_dir.join(format!("{}.json", dest.replace('.', "_")));
        let mut cmd = command(&bin, &client_dir, &props)?;
        cmd.args([
            "migrate-data",
            "--source-catalog",
            "lake",
            "--source",
            source,
        ])
        .args(["--dest", dest, "--create-dest", "--batch-rows"])
        .arg(batch_rows.to_string())
        .args([
            "--verify",
            "partition_hash",
            "--output",
            "json",
            "--checkpoint",
        ])
        .arg(&checkpoint)
        .arg("--cluster")
        .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port));
        let out = cmd.stdout(Stdio::piped()).output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let log = std::fs::read_to_string(client_dir.join("log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            failures.push(format!(
                "{source}: migrate-data --cluster failed ({}): {stdout}\n{}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
            continue;
        }
        let result: Value =
            serde_json::from_str(&stdout).with_context(|| format!("{source}: {stdout}"))?;
        if result["verification"]["matches"] != Value::Bool(true) {
            failures.push(format!(
                "{source}: verify partition_hash: {}",
                result["verification"]
            ));
        }
        let verdict = ops_tests::oracle::pyiceberg(
            "lake",
            &props,
            &format!(
                "import corpus_oracle as co\nemit(co.copy_verdict(catalog, {s}, {d}, None, {k}))",
                s = py_str(source)?,
                d = py_str(dest)?,
                k = py_list(key)?
            ),
        )?;
        if let Err(e) = expect_equal(source, &verdict, &result.to_string()) {
            failures.push(format!("{e:#}"));
        }
        eprintln!(
            "{source}: {} rows in {} batch(es), {:.1}s",
            result["rows_moved"],
            result["batches_committed"],
            started.elapsed().as_secs_f64()
        );
    }
    anyhow::ensure!(
        failures.is_empty(),
        "{} of {} tables:\n{}\n--- scheduler:\n{}",
        failures.len(),
        tables.len(),
        failures.join("\n\n"),
        cluster.scheduler.log()
    );
    Ok(())
}

/// `log` without its ANSI colour sequences (`ESC [ ... m`).
fn without_colours(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A row of `orders`: id, region, amount.
type Row = (i64, Option<&'static str>, Option<i32>);

/// src.orders with `appends` appends of 20 rows; returns the rows.
fn make_source(
    rt: &tokio::runtime::Runtime,
    props: &BTreeMap<String, String>,
    appends: i64,
) -> anyhow::Result<Vec<Row>> {
    make_source_of(rt, props, appends, 20)
}

/// src.orders with `appends` appends of `rows` rows over three regions; returns the rows.
fn make_source_of(
    rt: &tokio::runtime::Runtime,
    props: &BTreeMap<String, String>,
    appends: i64,
    rows_each: i64,
) -> anyhow::Result<Vec<Row>> {
    make_source_in(
        rt,
        props,
        appends,
        rows_each,
        iceberg::spec::FormatVersion::V2,
    )
}

/// [`make_source_of`] in table format `format`.
fn make_source_in(
    rt: &tokio::runtime::Runtime,
    props: &BTreeMap<String, String>,
    appends: i64,
    rows_each: i64,
    format: iceberg::spec::FormatVersion,
) -> anyhow::Result<Vec<Row>> {
    rt.block_on(async {
        let handle = open("lake", props).await?;
        let mut table = if format == iceberg::spec::FormatVersion::V2 {
            create_orders(&handle, "src").await?
        } else {
            let ns = iceberg::NamespaceIdent::new("src".into());
            handle
                .catalog()
                .create_namespace(&ns, Default::default())
                .await?;
            let spec = iceberg::spec::UnboundPartitionSpec::builder()
                .add_partition_field(2, "region", iceberg::spec::Transform::Identity)?
                .build();
            handle
                .catalog()
                .create_table(
                    &ns,
                    iceberg::TableCreation::builder()
                        .name("orders".into())
                        .schema(crate::common::orders_schema()?)
                        .partition_spec(spec)
                        .format_version(format)
                        .build(),
                )
                .await?
        };
        let mut rows = Vec::new();
        for chunk in 0..appends {
            let part: Vec<_> = (0..rows_each)
                .map(|i| {
                    let id = chunk * rows_each + i;
                    let region = ["us", "eu", "apac"][(id % 3) as usize];
                    (id, Some(region), Some(id as i32 * 10))
                })
                .collect();
            let batch = orders_batch(&table, &part)?;
            table = ops_core::append::append(
                &handle,
                &table,
                futures::stream::iter([Ok(batch)]),
                Default::default(),
            )
            .await?
            .0;
            rows.extend(part);
        }
        anyhow::Ok(rows)
    })
}

#[test]
fn a_scheduler_that_is_not_there_is_a_clear_error_and_commits_nothing() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    make_source(&rt, &props, 2)?;
    let port = free_port();
    let client_dir = root.path().join("client");
    let mut cmd = command(&bin, &client_dir, &props)?;
    cmd.args(["migrate-data", "--source-catalog", "lake"])
        .args([
            "--source",
            "src.orders",
            "--dest",
            "dst.orders",
            "--create-dest",
        ])
        .args(["--batch-rows", "25"])
        .arg("--checkpoint")
        .arg(client_dir.join("job.json"))
        .arg("--cluster")
        .arg(format!("df://127.0.0.1:{port}"));
    let started = Instant::now();
    let status = cmd.status()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(!status.success(), "{log}");
    // The error itself (the last line, after the progress lines that also name the URL).
    let error = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert!(
        error.contains(&format!("127.0.0.1:{port}")),
        "the error names the scheduler:\n{log}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
    // Asked before planning: the destination was not even created (new-user finding: it was
    // created and marked as a running job, which kept maintenance off it).
    assert!(error.contains("cannot be reached"), "{log}");
    let created = rt.block_on(async {
        let handle = open("lake", &props).await?;
        let ident = iceberg::TableIdent::from_strs(["dst", "orders"])?;
        anyhow::Ok(handle.catalog().table_exists(&ident).await?)
    })?;
    assert!(!created, "{log}");
    Ok(())
}

/// Issue 31, failure 5: the plan a `--cluster` job keeps beside its checkpoint
/// (`PATH.plan.json`) does not outlive the checkpoint. The client writes the plan before it
/// contacts the cluster, so no Ballista is needed: a job is completed here as the client
/// completes one (planned, its tasks run, its outputs committed with `migrate-data commit
/// --checkpoint PATH`: the same plan file and checkpoint), and the scheduler the `--cluster`
/// command names is not there.
/// 1. The same command finds the job complete (exit 0) without reaching the cluster.
/// 2. The operator drops the destination and deletes the checkpoint, as our messages advise for
///    a fresh start: the stale plan is ignored and a new job is planned (it reaches for the
///    scheduler first; before the fix: "resuming job ..." then "load destination ...: No such
///    table", every time).
/// 3. The checkpoint kept, the destination dropped: refused, saying exactly that, without
///    `--create-dest`; with it, the stale checkpoint goes and a new job is planned.
#[test]
fn a_cluster_jobs_plan_does_not_outlive_its_checkpoint_or_its_destination() -> TestResult {
    let bin = binary()?;
    let db = crate::common::SqlCatalog::sqlite()?;
    let props = db.props.clone();
    let rt = tokio::runtime::Runtime::new()?;
    make_source(&rt, &props, 2)?;
    let dir = db.dir.path().join("client");
    let port = free_port();
    let log = |dir: &Path| std::fs::read_to_string(dir.join("log")).unwrap_or_default();
    // `iceberg-ops ARGS` in `dir`: its exit status, its stdout, and the log of its stderr.
    let cli = |args: &[&str]| -> anyhow::Result<(bool, Vec<u8>, String)> {
        let out = command(&bin, &dir, &props)?
            .args(args)
            .stdout(Stdio::piped())
            .output()?;
        Ok((out.status.success(), out.stdout, log(&dir)))
    };
    let job = [
        "migrate-data",
        "--source-catalog",
        "lake",
        "--source",
        "src.orders",
        "--dest",
        "dst.orders",
        "--batch-rows",
        "25",
    ];
    let cluster = format!("df://127.0.0.1:{port}");
    // The `--cluster` command: its exit status, and its stdout followed by its stderr.
    let on_cluster = |create_dest: bool| -> anyhow::Result<(bool, String)> {
        let mut args = job.to_vec();
        args.extend(["--checkpoint", "ck.json", "--cluster", &cluster]);
        if create_dest {
            args.push("--create-dest");
        }
        let (ok, stdout, log) = cli(&args)?;
        Ok((ok, format!("{}{log}", String::from_utf8_lossy(&stdout))))
    };
    let complete_a_job = || -> anyhow::Result<()> {
        let mut plan = job.to_vec();
        plan.extend(["--create-dest", "--plan-only", "--output", "json"]);
        let (ok, stdout, log) = cli(&plan)?;
        anyhow::ensure!(ok, "plan: {log}");
        std::fs::write(dir.join("ck.json.plan.json"), &stdout)?;
        let tasks = serde_json::from_slice::<Value>(&stdout)?["tasks"]
            .as_array()
            .map_or(0, Vec::len);
        let mut commit = vec![
            "migrate-data".to_string(),
            "commit".into(),
            "--plan".into(),
            "ck.json.plan.json".into(),
            "--checkpoint".into(),
            "ck.json".into(),
        ];
        for task in 0..tasks {
            let out = format!("task-{task}.json");
            let t = task.to_string();
            let (ok, _, log) = cli(&[
                "migrate-data",
                "run-task",
                "--plan",
                "ck.json.plan.json",
                "--task",
                &t,
                "--out",
                &out,
            ])?;
            anyhow::ensure!(ok, "run-task {task}: {log}");
            commit.push(out);
        }
        let commit: Vec<&str> = commit.iter().map(String::as_str).collect();
        let (ok, _, log) = cli(&commit)?;
        anyhow::ensure!(ok, "commit: {log}");
        Ok(())
    };
    let dest = iceberg::TableIdent::from_strs(["dst", "orders"])?;
    let drop_dest = || {
        rt.block_on(async {
            let handle = open("lake", &props).await?;
            handle.catalog().drop_table(&dest).await?;
            anyhow::Ok(())
        })
    };
    let dest_exists = || {
        rt.block_on(async {
            let handle = open("lake", &props).await?;
            anyhow::Ok(handle.catalog().table_exists(&dest).await?)
        })
    };

    complete_a_job()?;
    // 1. Complete: said so, exit 0, no scheduler needed.
    let (ok, log) = on_cluster(true)?;
    assert!(ok && log.contains("is complete in"), "{log}");

    // 2. The destination dropped and the checkpoint deleted: a fresh start.
    drop_dest()?;
    std::fs::remove_file(dir.join("ck.json"))?;
    let (ok, log) = on_cluster(true)?;
    assert!(!ok, "{log}");
    assert!(
        !log.contains("resuming job") && !log.contains("No such table"),
        "the stale plan was resumed:\n{log}"
    );
    assert!(
        log.contains("ignoring") && log.contains("ck.json.plan.json") && log.contains("is gone"),
        "{log}"
    );
    assert!(log.contains("cannot be reached"), "{log}");
    assert!(
        !dest_exists()?,
        "nothing planned without the scheduler: {log}"
    );

    // 3. The checkpoint kept, the destination dropped.
    complete_a_job()?;
    drop_dest()?;
    let (ok, log) = on_cluster(false)?;
    assert!(!ok, "{log}");
    assert!(
        log.contains("dst.orders")
            && log.contains("no longer exists")
            && log.contains("--create-dest"),
        "{log}"
    );
    assert!(
        dir.join("ck.json").exists(),
        "refused: the checkpoint stays"
    );
    let (ok, log) = on_cluster(true)?;
    assert!(!ok, "{log}");
    assert!(
        log.contains("no longer exists") && log.contains("planning a new job"),
        "{log}"
    );
    assert!(log.contains("cannot be reached"), "{log}");
    assert!(!dir.join("ck.json").exists(), "the stale checkpoint went");
    // The plan left (stale now, without its checkpoint) is ignored by the next run.
    let (ok, log) = on_cluster(true)?;
    assert!(!ok && log.contains("ignoring"), "{log}");
    Ok(())
}

/// A cluster without executors: Ballista keeps the job queued, and the client gives up after
/// `--stall-timeout` with an error saying what to do, having committed nothing, and cancels the
/// job. Once executors run, the same command resumes the job and commits every row once, with
/// no file left over.
#[test]
fn a_cluster_without_executors_stalls_out_and_the_same_command_resumes() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    let rows = make_source(&rt, &props, 3)?;
    let cluster = start_cluster(&bin, root.path(), &props, 0)?;
    let port = cluster.scheduler_port;
    let client_dir = root.path().join("client");
    let run = |extra: &[&str]| -> anyhow::Result<(std::process::ExitStatus, String, Vec<u8>)> {
        let mut child = orders_through(&bin, &client_dir, &props, port, 25, "job.json")?
            .args(["--output", "json"])
            .args(extra)
            .spawn()?;
        // Without a stall timeout the client would wait for ever: do not let the test.
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if child.try_wait()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                child.kill()?;
                bail!("migrate-data --cluster still waits after 180 s");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let out = child.wait_with_output()?;
        let log = std::fs::read_to_string(client_dir.join("log"))?;
        Ok((out.status, log, out.stdout))
    };
    let started = Instant::now();
    let (status, log, _) = run(&["--stall-timeout", "3"])?;
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("no output of task 0 for 3s") && log.contains("iceberg-ops cluster executor"),
        "the error says what happened and what to do:\n{log}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let (committed, _) = pyiceberg_orders("lake", &props, "dst")?;
    assert!(committed.is_empty(), "{committed:?}");
    // The client cancelled the queued job: it will not run when executors come (checked
    // below: no file but the resumed run's).
    assert!(
        without_colours(&log).contains("the Ballista job was cancelled"),
        "{log}"
    );

    // Told to stop (SIGINT) while it waits: it says so, cancels the queued job and commits
    // nothing.
    let mut child = orders_through(&bin, &client_dir, &props, port, 25, "job.json")?.spawn()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(client_dir.join("log"))?.contains("submitted")
        && child.try_wait()?.is_none()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Once the scheduler has accepted the job (it answers with the job's id at once).
    std::thread::sleep(Duration::from_secs(1));
    let status = interrupt(&mut child, &client_dir)?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("interrupted before task 0 was committed")
            && without_colours(&log).contains("the Ballista job was cancelled"),
        "{log}"
    );
    let (committed, _) = pyiceberg_orders("lake", &props, "dst")?;
    assert!(committed.is_empty(), "{committed:?}");

    // Executors join (the jobs cancelled above, were they still queued, may now run too: their
    // tasks' outputs are the same job's and are reused, never committed twice).
    let cluster = start_cluster_executors(&bin, root.path(), &props, cluster, 2)?;
    let (status, log, stdout) = run(&[])?;
    assert!(
        status.success(),
        "{log}\n--- scheduler:\n{}",
        cluster.scheduler.log()
    );
    let result: Value = serde_json::from_slice(&stdout)?;
    assert_eq!(result["rows_moved"], rows.len() as u64, "{log}");
    let (got, _) = pyiceberg_orders("lake", &props, "dst")?;
    let mut want = crate::common::orders_json(&rows);
    sort_rows(&mut want);
    assert_eq!(got, want, "every source row exactly once");
    let (stored, live) = data_files(&rt, &moto, &props, "dst")?;
    assert_eq!(stored, live, "files no snapshot references are left");
    // The cancelled job ran none of its tasks when the executors came (the scheduler would
    // have given them its tasks first): every task executed is one the resumed run committed.
    // (A task of it that ran would log its output written, or reused by the resumed run's.)
    let landed = without_colours(&log).matches("task output landed").count();
    assert!(landed > 0, "{log}");
    let executed: usize = cluster
        .executors
        .iter()
        .map(|e| {
            let log = e.log();
            log.matches("task output written").count()
                + log.matches("task output already written").count()
        })
        .sum();
    assert_eq!(executed, landed, "{log}");
    Ok(())
}

/// The data files under the destination's location, and those its current snapshot holds.
fn data_files(
    rt: &tokio::runtime::Runtime,
    moto: &ops_tests::servers::Moto,
    props: &BTreeMap<String, String>,
    ns: &str,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (location, mut live) = rt.block_on(async {
        use futures::TryStreamExt;
        let handle = open("lake", props).await?;
        let t = handle
            .catalog()
            .load_table(&iceberg::TableIdent::from_strs([ns, "orders"])?)
            .await?;
        let live: Vec<String> = t
            .scan()
            .build()?
            .plan_files()
            .await?
            .map_ok(|task| task.data_file_path)
            .try_collect()
            .await?;
        anyhow::Ok((
            t.metadata().location().trim_end_matches('/').to_string(),
            live,
        ))
    })?;
    let prefix = location
        .strip_prefix("s3://lake/")
        .with_context(|| format!("{location} is not in bucket lake"))?;
    let mut stored: Vec<String> = moto
        .list_objects("lake", &format!("{prefix}/data/"))
        .into_iter()
        .map(|k| format!("s3://lake/{k}"))
        .collect();
    stored.sort();
    live.sort();
    Ok((stored, live))
}

/// Kill trials per run: 3 in the suite, `ICEBERG_OPS_KILL_TRIALS` (scripts/cluster-kill-trials
/// runs 10).
fn kill_trials() -> anyhow::Result<u32> {
    match std::env::var("ICEBERG_OPS_KILL_TRIALS") {
        Err(_) => Ok(3),
        Ok(n) => n.parse().ok().filter(|&n| n > 0).with_context(|| {
            format!("ICEBERG_OPS_KILL_TRIALS={n}: give a number of trials, 1 or more")
        }),
    }
}

/// kill -9 of one executor in the middle of a job, three times at random points: the job
/// finishes after Ballista reruns the lost tasks (or the same command resumes it), every source
/// row is in the destination exactly once, the batches are committed once each in order, and no
/// data file is left that the destination does not hold.
#[test]
fn an_executor_killed_mid_job_loses_and_duplicates_no_row() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let rt = tokio::runtime::Runtime::new()?;
    // Tasks of ten batches (a file of about 200 rows each, batches of 20): an executor killed
    // mid-task has written some of a task's files and not its output.
    let rows = make_source_of(&rt, &props, 6, 600)?;
    let mut want = crate::common::orders_json(&rows);
    sort_rows(&mut want);
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        | 1;
    let mut random = move |n: u64| {
        // xorshift: a different kill point each run, printed for a rerun.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut mid_job = 0;
    for trial in 0..kill_trials()? {
        let root = tempfile::tempdir()?;
        let mut cluster = start_cluster(&bin, root.path(), &props, 2)?;
        let ns = format!("dst{trial}");
        let client_dir = root.path().join("client");
        let migrate = |cluster: &Cluster| -> anyhow::Result<Command> {
            let mut cmd = command(&bin, &client_dir, &props)?;
            cmd.args(["migrate-data", "--source-catalog", "lake"])
                .args(["--source", "src.orders", "--dest"])
                .arg(format!("{ns}.orders"))
                .args(["--create-dest", "--batch-rows", "20", "--output", "json"])
                .args(["--copy-mode", "rewrite"])
                .arg("--checkpoint")
                .arg(client_dir.join("job.json"))
                .arg("--cluster")
                .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port))
                .stdout(Stdio::piped());
            Ok(cmd)
        };
        let mut client = migrate(&cluster)?.spawn()?;
        let after = 1 + random(3) as usize;
        let victim = random(2) as usize;
        let deadline = Instant::now() + Duration::from_secs(120);
        while tasks_executed(&cluster) < after
            && client.try_wait()?.is_none()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Then somewhere inside the next tasks.
        std::thread::sleep(Duration::from_millis(random(1500)));
        let killed_mid_job = client.try_wait()?.is_none();
        mid_job += u32::from(killed_mid_job);
        cluster.executors[victim].child.kill()?;
        cluster.executors[victim].child.wait()?;
        eprintln!(
            "trial {trial}: executor {victim} killed after {} task(s); mid-job: {killed_mid_job}",
            tasks_executed(&cluster)
        );
        // A job that never ends (tasks of the lost executor never rerun) is a failure, not a hang.
        let deadline = Instant::now() + Duration::from_secs(240);
        while client.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if client.try_wait()?.is_none() {
            let _ = client.kill();
            let _ = client.wait();
            bail!(
                "trial {trial}: the job did not end within 240 s of executor {victim}'s death:\n{}\n\
                 --- scheduler:\n{}",
                std::fs::read_to_string(client_dir.join("log"))?,
                cluster.scheduler.log()
            );
        }
        let first = client.wait_with_output()?;
        let mut runs = vec![first.status.success()];
        if !first.status.success() {
            // The same command resumes the job on the executor left.
            let again = migrate(&cluster)?.output()?;
            runs.push(again.status.success());
            let log = std::fs::read_to_string(client_dir.join("log"))?;
            if !again.status.success() {
                bail!(
                    "trial {trial}: the resumed job failed too:\n{log}\n--- scheduler:\n{}",
                    cluster.scheduler.log()
                );
            }
        }
        let log = std::fs::read_to_string(client_dir.join("log"))?;
        eprintln!(
            "trial {trial}: runs {runs:?}, lost attempts' folders removed: {}, tasks rerun: {}",
            log.matches("removed the files of a lost attempt").count(),
            cluster
                .executors
                .iter()
                .map(|e| e.log().matches("task output already written").count())
                .sum::<usize>()
        );
        let (got, desc) = pyiceberg_orders("lake", &props, &ns)?;
        assert_eq!(got.len(), want.len(), "trial {trial}: rows {runs:?}");
        assert_eq!(got, want, "trial {trial}");
        let batches: Vec<u64> = desc["snapshots"]
            .as_array()
            .context("snapshots")?
            .iter()
            .filter_map(|s| {
                s["summary"]["iceberg-ops.migration-batch"]
                    .as_str()
                    .and_then(|b| b.parse().ok())
            })
            .collect();
        assert_eq!(
            batches,
            (0..batches.len() as u64).collect::<Vec<_>>(),
            "trial {trial}"
        );
        let (stored, live) = data_files(&rt, &moto, &props, &ns)?;
        // The listing sees the table's own files (else "no orphan" would prove nothing).
        assert!(
            !live.is_empty() && live.iter().all(|f| stored.contains(f)),
            "trial {trial}: the listing misses live files: {} listed, {} live",
            stored.len(),
            live.len()
        );
        let orphans: Vec<&String> = stored.iter().filter(|f| !live.contains(f)).collect();
        assert!(
            orphans.is_empty(),
            "trial {trial}: {} orphan data file(s) left: {orphans:?}",
            orphans.len()
        );
    }
    // A kill after the job had ended would prove nothing.
    assert!(
        mid_job > 0,
        "no trial killed an executor in the middle of its job"
    );
    Ok(())
}

/// A task whose storage fails transiently — the executors reach S3 through a proxy that answers
/// 503 to the PUT of task 0's output for longer than opendal's own retries last — is run again
/// by Ballista (the failure is reported as retryable) and the job succeeds: every row once, the
/// failed attempt's data files removed. A permanent failure is not retried (see
/// `a_vanished_source_file_is_a_clear_error_and_commits_nothing`).
#[test]
fn a_transient_storage_failure_is_retried_by_ballista() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    let rows = make_source(&rt, &props, 4)?;
    let proxy = ops_tests::proxy::FaultProxy::start(moto.server.port);
    let mut executor_props = props.clone();
    executor_props.insert("s3.endpoint".into(), proxy.url());
    // iceberg-storage-opendal tries a request 4 times (opendal's RetryLayer: 3 retries): the
    // first attempt of task 0 fails for good when writing its output, the second finds S3 well.
    proxy.add(
        "PUT",
        "/task-000000.json",
        ops_tests::proxy::Fault::Unavailable,
        4,
    );
    let cluster = start_cluster_with(
        &bin,
        root.path(),
        &props,
        2,
        &[],
        &[],
        Some(&executor_props),
    )?;
    let client_dir = root.path().join("client");
    let out = orders_through(
        &bin,
        &client_dir,
        &props,
        cluster.scheduler_port,
        25,
        "job.json",
    )?
    .args(["--output", "json"])
    .output()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    let executors = format!(
        "--- executor 0:\n{}\n--- executor 1:\n{}",
        cluster.executors[0].log(),
        cluster.executors[1].log()
    );
    assert!(
        out.status.success(),
        "{log}\n--- scheduler:\n{}\n{executors}",
        cluster.scheduler.log()
    );
    let faults = proxy.seen().iter().filter(|s| s.fault.is_some()).count();
    assert_eq!(faults, 4, "the proxy's 503s");
    // The executor said why task 0 failed, and that it is worth another attempt.
    let plain = without_colours(&executors);
    assert!(
        plain.contains("task failed") && plain.contains("transient=true"),
        "{plain}"
    );
    let result: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(result["rows_moved"], rows.len() as u64, "{log}");
    let (got, _) = pyiceberg_orders("lake", &props, "dst")?;
    let mut want = crate::common::orders_json(&rows);
    sort_rows(&mut want);
    assert_eq!(got, want, "every source row exactly once");
    // The failed attempt's files (written before its output's PUT failed) are gone.
    let (stored, live) = data_files(&rt, &moto, &props, "dst")?;
    assert_eq!(stored, live, "files no snapshot references are left");
    Ok(())
}

/// Tasks longer than the scheduler's --executor-timeout on executors whose only slot they
/// fill: Ballista's pull-mode executor polls (its only sign of life) only with a free slot, so
/// without heartbeats of our own the scheduler takes both for lost and runs the tasks again.
/// Each task runs once, the job succeeds, every row once.
#[test]
fn tasks_longer_than_the_executor_timeout_run_once() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    let rows = make_source(&rt, &props, 2)?;
    // executor-timeout 5 s (start_cluster), heartbeats every second, tasks of 9 s.
    let cluster = start_cluster_with(
        &bin,
        root.path(),
        &props,
        2,
        &[],
        &[("ICEBERG_OPS_TEST_TASK_DELAY_MS", "9000")],
        None,
    )?;
    let client_dir = root.path().join("client");
    let out = orders_through(
        &bin,
        &client_dir,
        &props,
        cluster.scheduler_port,
        20,
        "job.json",
    )?
    .args(["--output", "json"])
    .output()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(
        out.status.success(),
        "{log}\n--- scheduler:\n{}",
        cluster.scheduler.log()
    );
    let tasks: usize = log
        .lines()
        .find_map(|l| {
            l.split(" task(s)")
                .next()?
                .rsplit(", ")
                .next()?
                .parse()
                .ok()
        })
        .context("the client names the job's tasks")?;
    assert!(tasks >= 2, "{log}");
    // The scheduler took no executor for lost (Ballista's warning, forwarded to its log), and
    // no task was started again (a rerun after the first attempt's output landed reuses it).
    let scheduler = cluster.scheduler.log();
    assert!(
        !scheduler.contains("heartbeat timed out"),
        "an executor was taken for lost:\n{scheduler}\n--- executor 0:\n{}\n--- executor 1:\n{}",
        cluster.executors[0].log(),
        cluster.executors[1].log()
    );
    let reused: usize = cluster
        .executors
        .iter()
        .map(|e| e.log().matches("task output already written").count())
        .sum();
    assert_eq!(
        tasks_executed(&cluster) + reused,
        tasks,
        "a task ran twice:\n{log}\n--- executor 0:\n{}\n--- executor 1:\n{}",
        cluster.executors[0].log(),
        cluster.executors[1].log()
    );
    let (got, _) = pyiceberg_orders("lake", &props, "dst")?;
    let mut want = crate::common::orders_json(&rows);
    sort_rows(&mut want);
    assert_eq!(got, want);
    Ok(())
}

/// A source data file deleted after planning: the task fails on the executors (after Ballista's
/// retries), the error names the task and the missing file, and nothing is committed.
#[test]
fn a_vanished_source_file_is_a_clear_error_and_commits_nothing() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    make_source(&rt, &props, 1)?;
    let cluster = start_cluster(&bin, root.path(), &props, 2)?;
    let client_dir = root.path().join("client");
    let migrate = || -> anyhow::Result<Command> {
        let mut cmd = command(&bin, &client_dir, &props)?;
        cmd.args(["migrate-data", "--source-catalog", "lake"])
            .args(["--source", "src.orders", "--dest", "dst.orders"])
            .args([
                "--create-dest",
                "--batch-rows",
                "1000",
                "--copy-mode",
                "rewrite",
            ])
            .arg("--checkpoint")
            .arg(client_dir.join("job.json"))
            .arg("--cluster")
            .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port));
        Ok(cmd)
    };
    // Planning reads the manifests, not the data files: the job is planned and submitted.
    let gone = rt.block_on(async {
        use futures::TryStreamExt;
        let handle = open("lake", &props).await?;
        let t = handle
            .catalog()
            .load_table(&iceberg::TableIdent::from_strs(["src", "orders"])?)
            .await?;
        let files: Vec<String> = t
            .scan()
            .build()?
            .plan_files()
            .await?
            .map_ok(|task| task.data_file_path)
            .try_collect()
            .await?;
        let gone = files.first().context("the source has no file")?.clone();
        t.file_io().delete(&gone).await?;
        anyhow::Ok(gone)
    })?;
    let status = migrate()?.status()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(!status.success(), "{log}");
    assert!(log.contains("task 0"), "the error names the task:\n{log}");
    let name = gone.rsplit('/').next().unwrap_or(&gone);
    assert!(
        log.contains(name),
        "the error names the missing file {gone}:\n{log}"
    );
    let (rows, desc) = pyiceberg_orders("lake", &props, "dst")?;
    assert!(rows.is_empty(), "{rows:?}");
    assert!(
        desc["snapshots"].as_array().is_none_or(|s| s.is_empty()),
        "{desc}"
    );
    Ok(())
}

/// Tasks encoded by another iceberg-ops version, played by real processes that encode in cluster
/// format 99 (`ICEBERG_OPS_TEST_ENCODE_CLUSTER_FORMAT`): a client's are refused by the scheduler,
/// a scheduler's by the executors. Each is a clear error naming both formats, and nothing is
/// committed.
#[test]
fn tasks_of_another_format_version_are_refused_and_commit_nothing() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    make_source(&rt, &props, 2)?;
    const ENV: &str = "ICEBERG_OPS_TEST_ENCODE_CLUSTER_FORMAT";
    let cluster = start_cluster_with(&bin, root.path(), &props, 2, &[(ENV, "99")], &[], None)?;
    let client_dir = root.path().join("client");
    for (who, client_format) in [("the scheduler", Some("99")), ("the executors", None)] {
        let checkpoint = format!("job-{}.json", client_format.unwrap_or("1"));
        let mut cmd = orders_through(
            &bin,
            &client_dir,
            &props,
            cluster.scheduler_port,
            1000,
            &checkpoint,
        )?;
        if let Some(f) = client_format {
            cmd.env(ENV, f);
        }
        let status = cmd.output()?.status;
        let log = std::fs::read_to_string(client_dir.join("log"))?;
        assert!(!status.success(), "{who} ran tasks of format 99:\n{log}");
        // Which process refused: the scheduler parses the client's plan; the executors the
        // scheduler's tasks.
        let refused = match client_format {
            Some(_) => cluster.scheduler.log().contains("cluster format 99"),
            None => cluster
                .executors
                .iter()
                .any(|e| e.log().contains("cluster format 99")),
        };
        assert!(
            refused,
            "{who} did not log the refusal:\nscheduler:\n{}\nexecutors:\n{}\n{}",
            cluster.scheduler.log(),
            cluster.executors[0].log(),
            cluster.executors[1].log()
        );
        assert!(
            log.contains("encoded in iceberg-ops cluster format 99")
                && log.contains("but this process reads format ")
                && log.contains("same iceberg-ops version"),
            "{who}: the error names both formats and the fix:\n{log}"
        );
        let (rows, desc) = pyiceberg_orders("lake", &props, "dst")?;
        assert!(rows.is_empty(), "{who}: {rows:?}");
        assert!(
            desc["snapshots"].as_array().is_none_or(|s| s.is_empty()),
            "{who}: {desc}"
        );
    }
    assert_eq!(tasks_executed(&cluster), 0, "no task ran");
    Ok(())
}

/// Every data file some snapshot of `ns.orders` references, and every object under its
/// location in the bucket (sorted).
fn referenced_and_stored(
    rt: &tokio::runtime::Runtime,
    moto: &ops_tests::servers::Moto,
    props: &BTreeMap<String, String>,
    ns: &str,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (location, mut referenced) = rt.block_on(async {
        use futures::TryStreamExt;
        let handle = open("lake", props).await?;
        let t = handle
            .catalog()
            .load_table(&iceberg::TableIdent::from_strs([ns, "orders"])?)
            .await?;
        let mut referenced = std::collections::BTreeSet::new();
        for s in t.metadata().snapshots() {
            let files: Vec<String> = t
                .scan()
                .snapshot_id(s.snapshot_id())
                .build()?
                .plan_files()
                .await?
                .map_ok(|task| task.data_file_path)
                .try_collect()
                .await?;
            referenced.extend(files);
        }
        anyhow::Ok((
            t.metadata().location().trim_end_matches('/').to_string(),
            referenced.into_iter().collect::<Vec<_>>(),
        ))
    })?;
    let prefix = location
        .strip_prefix("s3://lake/")
        .with_context(|| format!("{location} is not in bucket lake"))?;
    let mut stored: Vec<String> = moto
        .list_objects("lake", &format!("{prefix}/"))
        .into_iter()
        .map(|k| format!("s3://lake/{k}"))
        .collect();
    stored.sort();
    referenced.sort();
    Ok((stored, referenced))
}

/// `table compact --cluster`: 48 small files in three partitions, compacted in groups of a few
/// files by two executors, one killed with SIGKILL in the middle of the job. Ballista runs the
/// lost group again on the other executor (or the same command, run again, compacts what is
/// left); every group is committed as its output lands, validated as a local compaction is.
/// PyIceberg reads the same rows before and after, the table has fewer files, and nothing is
/// left under its location that no snapshot references: the lost attempt's files and the job's
/// own files are removed.
#[test]
fn a_compaction_on_the_cluster_survives_an_executor_killed_mid_job() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let rt = tokio::runtime::Runtime::new()?;
    make_source_of(&rt, &props, 16, 30)?;
    let (want, _) = pyiceberg_orders("lake", &props, "src")?;
    let files_before = data_files(&rt, &moto, &props, "src")?.1.len();
    let root = tempfile::tempdir()?;
    // Each group takes a second and a half: the kill lands inside one.
    let mut cluster = start_cluster_with(
        &bin,
        root.path(),
        &props,
        2,
        &[],
        &[("ICEBERG_OPS_TEST_TASK_DELAY_MS", "1500")],
        None,
    )?;
    let client_dir = root.path().join("client");
    let compact = |cluster: &Cluster| -> anyhow::Result<Command> {
        let mut cmd = command(&bin, &client_dir, &props)?;
        // Files of about 1 KB: groups of about four.
        cmd.args(["table", "compact", "src.orders", "--catalog", "lake"])
            .args(["--target-file-size", "5000", "--min-input-files", "2"])
            .args(["--output", "json", "--cluster"])
            .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port))
            .stdout(Stdio::piped());
        Ok(cmd)
    };
    let mut client = compact(&cluster)?.spawn()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while tasks_executed(&cluster) < 1 && client.try_wait()?.is_none() && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        client.try_wait()?.is_none(),
        "the job ended before the kill:\n{}",
        std::fs::read_to_string(client_dir.join("log"))?
    );
    cluster.executors[1].child.kill()?;
    cluster.executors[1].child.wait()?;
    let deadline = Instant::now() + Duration::from_secs(240);
    while client.try_wait()?.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if client.try_wait()?.is_none() {
        let _ = client.kill();
        let _ = client.wait();
        bail!(
            "the compaction did not end within 240 s of the kill:\n{}\n--- scheduler:\n{}",
            std::fs::read_to_string(client_dir.join("log"))?,
            cluster.scheduler.log()
        );
    }
    let first = client.wait_with_output()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    let report: Value = serde_json::from_slice(&first.stdout)
        .with_context(|| format!("the report is not JSON:\n{log}"))?;
    let groups = report["groups"].as_array().map_or(0, Vec::len);
    assert!(groups >= 6, "{groups} groups planned: {report}");
    if !first.status.success() {
        // A group the job ended without: the same command compacts what is left.
        let again = compact(&cluster)?.output()?;
        assert!(
            again.status.success(),
            "the second run failed:\n{}",
            std::fs::read_to_string(client_dir.join("log"))?
        );
    }
    eprintln!(
        "groups {groups}; lost attempts' folders removed: {}; executor 0 ran {} task(s)",
        log.matches("removed the files of a lost attempt").count(),
        cluster.executors[0]
            .log()
            .matches("task output written")
            .count()
    );
    let (got, _) = pyiceberg_orders("lake", &props, "src")?;
    assert_eq!(got, want, "PyIceberg reads other rows after the compaction");
    let files_after = data_files(&rt, &moto, &props, "src")?.1.len();
    assert!(
        files_after * 2 < files_before,
        "{files_before} files before, {files_after} after"
    );
    let (stored, referenced) = referenced_and_stored(&rt, &moto, &props, "src")?;
    assert!(
        referenced.iter().all(|f| stored.contains(f)),
        "the listing misses referenced files"
    );
    nothing_unreferenced(&stored, &referenced);
    Ok(())
}

/// No data file among `stored` that no snapshot references (`referenced`), and no file of a
/// job: what [`referenced_and_stored`] lists after a cluster compaction.
fn nothing_unreferenced(stored: &[String], referenced: &[String]) {
    let orphans: Vec<&String> = stored
        .iter()
        .filter(|k| k.ends_with(".parquet") && !referenced.contains(k))
        .collect();
    assert!(orphans.is_empty(), "orphan data files left: {orphans:?}");
    let jobs: Vec<&String> = stored
        .iter()
        .filter(|k| k.contains("/iceberg-ops-jobs/"))
        .collect();
    assert!(jobs.is_empty(), "the job's files are left: {jobs:?}");
}

/// `maintain --cluster` on a v1 table (every sequence number 0: the clean-up must still find
/// the committed attempts, or it deletes the files it just committed): the compaction that is
/// due runs as tasks on the cluster, PyIceberg reads the same rows, and a second run finds
/// nothing due.
#[test]
fn maintain_compacts_a_v1_table_on_the_cluster() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (_moto, props) = glue_on_moto();
    let rt = tokio::runtime::Runtime::new()?;
    make_source_in(&rt, &props, 8, 20, iceberg::spec::FormatVersion::V1)?;
    let (want, _) = pyiceberg_orders("lake", &props, "src")?;
    let root = tempfile::tempdir()?;
    let cluster = start_cluster(&bin, root.path(), &props, 1)?;
    let client_dir = root.path().join("client");
    let maintain = || -> anyhow::Result<std::process::Output> {
        let mut cmd = command(&bin, &client_dir, &props)?;
        cmd.args(["maintain", "src", "--catalog", "lake", "--output", "json"])
            .arg("--state")
            .arg(client_dir.join("state.json"))
            .arg("--cluster")
            .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port))
            .stdout(Stdio::piped());
        Ok(cmd.output()?)
    };
    let first = maintain()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(first.status.success(), "{log}");
    let report: Value = serde_json::from_slice(&first.stdout)?;
    let compact = &report["tables"][0]["tasks"]
        .as_array()
        .context("tasks")?
        .iter()
        .find(|t| t["task"] == "compact")
        .cloned()
        .with_context(|| format!("no compaction ran: {report}"))?;
    assert_eq!(compact["status"], "done", "{report}");
    assert!(
        tasks_executed(&cluster) >= 3,
        "the executor ran {} task(s):\n{log}",
        tasks_executed(&cluster)
    );
    let (got, _) = pyiceberg_orders("lake", &props, "src")?;
    assert_eq!(got, want);
    let second = maintain()?;
    assert!(second.status.success());
    let report: Value = serde_json::from_slice(&second.stdout)?;
    let ran: Vec<&Value> = report["tables"][0]["tasks"]
        .as_array()
        .context("tasks")?
        .iter()
        .filter(|t| t["status"] == "done")
        .collect();
    assert!(ran.is_empty(), "the second run did work: {report}");
    Ok(())
}

/// A group whose task fails for good (an input file deleted from the store behind the table's
/// back) fails alone: its task reports the failure in its output instead of failing the Ballista
/// job, the other groups are committed, the command exits non-zero naming the group and the
/// missing file, and the failed attempt leaves no file.
#[test]
fn a_compaction_group_that_fails_for_good_fails_alone() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let rt = tokio::runtime::Runtime::new()?;
    make_source_of(&rt, &props, 6, 30)?;
    // One eu input gone (planning reads manifests, not data files: the group is planned).
    let gone = rt.block_on(async {
        use futures::TryStreamExt;
        let handle = open("lake", &props).await?;
        let t = handle
            .catalog()
            .load_table(&iceberg::TableIdent::from_strs(["src", "orders"])?)
            .await?;
        let files: Vec<String> = t
            .scan()
            .build()?
            .plan_files()
            .await?
            .map_ok(|task| task.data_file_path)
            .try_collect()
            .await?;
        let gone = files
            .into_iter()
            .find(|f| f.contains("region=eu"))
            .context("no eu file")?;
        t.file_io().delete(&gone).await?;
        anyhow::Ok(gone)
    })?;
    let root = tempfile::tempdir()?;
    let cluster = start_cluster(&bin, root.path(), &props, 2)?;
    let client_dir = root.path().join("client");
    let mut cmd = command(&bin, &client_dir, &props)?;
    cmd.args(["table", "compact", "src.orders", "--catalog", "lake"])
        .args(["--min-input-files", "2", "--output", "json", "--cluster"])
        .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port))
        .stdout(Stdio::piped());
    let out = cmd.output()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(
        !out.status.success(),
        "a failed group must fail the command:\n{log}"
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("the report is not JSON:\n{log}"))?;
    let failed = report["failed_groups"]
        .as_array()
        .context("failed_groups")?;
    assert_eq!(failed.len(), 1, "{report}");
    assert_eq!(failed[0]["partition"], "region=eu", "{report}");
    let name = gone.rsplit('/').next().unwrap_or_default();
    assert!(
        failed[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains(name)),
        "the error does not name {name}: {report}"
    );
    // Told by the task's own output (naming its executor), not by a failed Ballista job.
    assert!(
        failed[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("(executor ") && !e.contains("cluster job failed")),
        "{report}"
    );
    assert!(log.contains("of 3 group(s) failed"), "{log}");
    // us and apac became one file each; eu is as it was (less the file deleted behind it).
    let (_, live) = data_files(&rt, &moto, &props, "src")?;
    let per = |region: &str| live.iter().filter(|f| f.contains(region)).count();
    assert_eq!((per("region=us"), per("region=apac")), (1, 1), "{live:?}");
    assert_eq!(per("region=eu"), 6, "{live:?}");
    // Nothing under the location that no snapshot references (the replaced inputs are
    // still the older snapshots'): the failed attempt's folder and the job's files are gone.
    let (stored, referenced) = referenced_and_stored(&rt, &moto, &props, "src")?;
    nothing_unreferenced(&stored, &referenced);
    Ok(())
}

/// With no executor, `table compact --cluster` gives up after `--stall-timeout` and, told to
/// stop (SIGINT) while it waits, stops: either way the Ballista job is cancelled and nothing of
/// it is left in the store (its plan and outputs removed), so executors that come later write
/// nothing, and the table reads as before.
#[test]
fn a_compaction_without_executors_stalls_out_or_stops_on_sigint_leaving_nothing() -> TestResult {
    init_tracing();
    let bin = binary()?;
    let (moto, props) = glue_on_moto();
    let rt = tokio::runtime::Runtime::new()?;
    make_source_of(&rt, &props, 6, 20)?;
    let (want, _) = pyiceberg_orders("lake", &props, "src")?;
    let root = tempfile::tempdir()?;
    let cluster = start_cluster(&bin, root.path(), &props, 0)?;
    let client_dir = root.path().join("client");
    let compact = |extra: &[&str]| -> anyhow::Result<Command> {
        let mut cmd = command(&bin, &client_dir, &props)?;
        cmd.args(["table", "compact", "src.orders", "--catalog", "lake"])
            .args(["--min-input-files", "2", "--cluster"])
            .arg(format!("df://127.0.0.1:{}", cluster.scheduler_port))
            .args(extra);
        Ok(cmd)
    };
    let job_files = || -> Vec<String> {
        moto.list_objects("lake", "warehouse/src.db/orders/")
            .into_iter()
            .filter(|k| k.contains("iceberg-ops-jobs/") || k.contains("/iceberg-ops-compact-"))
            .collect()
    };
    let out = compact(&["--stall-timeout", "3"])?.output()?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(!out.status.success(), "{log}");
    assert!(log.contains("no compaction group landed for 3s"), "{log}");
    assert!(job_files().is_empty(), "left: {:?}", job_files());

    let mut client = compact(&[])?.spawn()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !job_files().iter().any(|k| k.contains("/plan-")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        job_files().iter().any(|k| k.contains("/plan-")),
        "no plan stored:\n{}",
        std::fs::read_to_string(client_dir.join("log"))?
    );
    let status = interrupt(&mut client, &client_dir)?;
    let log = std::fs::read_to_string(client_dir.join("log"))?;
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("interrupted: the cluster job was cancelled"),
        "{log}"
    );
    assert!(job_files().is_empty(), "left: {:?}", job_files());
    // An executor that comes now finds nothing to run.
    let cluster = start_cluster_executors(&bin, root.path(), &props, cluster, 1)?;
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        job_files().is_empty(),
        "written after the stop: {:?}",
        job_files()
    );
    assert_eq!(tasks_executed(&cluster), 0);
    let (got, _) = pyiceberg_orders("lake", &props, "src")?;
    assert_eq!(got, want);
    Ok(())
}

/// Sends SIGINT to `child` (a client whose log is `<dir>/log`) and waits up to a minute for it
/// to end; its exit status.
fn interrupt(
    child: &mut std::process::Child,
    dir: &Path,
) -> anyhow::Result<std::process::ExitStatus> {
    let signalled = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    anyhow::ensure!(signalled.success(), "kill -INT failed");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    bail!(
        "the client did not stop within 60 s of SIGINT:\n{}",
        std::fs::read_to_string(dir.join("log"))?
    )
}
