//! `iceberg-ops cluster scheduler|executor`: Apache Ballista's processes with iceberg-ops'
//! codecs, for `migrate-data`, `table compact` and `maintain` with `--cluster df://HOST:PORT`
//! (the `cluster` cargo feature).
//!
//! Ballista's traffic is plaintext and unauthenticated and executors hold the catalogs'
//! credentials: both bind to 127.0.0.1 unless told otherwise; a cluster must live in a network
//! only its operators reach.

use std::net::SocketAddr;
use std::path::PathBuf;

use ops_core::CatalogFactory;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run a Ballista scheduler that schedules migration and compaction tasks.
    Scheduler(SchedulerArgs),
    /// Run a Ballista executor that runs migration and compaction tasks with this host's
    /// catalog configuration (.pyiceberg.yaml, PYICEBERG_CATALOG__*).
    Executor(ExecutorArgs),
}

// Without the `cluster` feature the arguments are parsed (so `--help` is the same) but unused.
#[derive(Debug, clap::Args)]
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub struct SchedulerArgs {
    /// Address to listen on. Keep it private: Ballista's gRPC is unauthenticated.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50050")]
    bind: SocketAddr,
    /// Host name clients and executors reach the scheduler by (default: the bind address).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor is dead and its tasks run again.
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    executor_timeout: u64,
    /// Attempts of one task before the job fails.
    #[arg(long, value_name = "N", default_value_t = 4)]
    task_max_failures: usize,
}

#[derive(Debug, clap::Args)]
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub struct ExecutorArgs {
    /// The scheduler, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    scheduler: String,
    /// Tasks run at once (default: one per core).
    #[arg(long, value_name = "N")]
    concurrent_tasks: Option<usize>,
    /// Address to listen on. Keep it private: Ballista's Flight is unauthenticated.
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
    bind: String,
    /// Host name the scheduler reaches this executor by (default: the bind address).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// Arrow Flight port.
    #[arg(long, value_name = "PORT", default_value_t = 50051)]
    port: u16,
    /// gRPC port.
    #[arg(long, value_name = "PORT", default_value_t = 50052)]
    grpc_port: u16,
    /// Ballista's working directory (default: a new one under the system's temp directory).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Seconds between heartbeats to the scheduler.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    heartbeat: u64,
}

#[cfg(feature = "cluster")]
pub async fn run(factory: CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    use anyhow::Context as _;
    match cmd {
        Command::Scheduler(a) => ops_ballista::run_scheduler(ops_ballista::SchedulerOptions {
            bind: a.bind,
            external_host: a.external_host,
            executor_timeout_seconds: a.executor_timeout,
            task_max_failures: a.task_max_failures,
        })
        .await
        .context("cluster scheduler"),
        Command::Executor(a) => {
            let (host, port) = a
                .scheduler
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
                .with_context(|| format!("--scheduler {}: expected HOST:PORT", a.scheduler))?;
            let mut opts = ops_ballista::ExecutorOptions {
                scheduler_host: host,
                scheduler_port: port,
                bind_host: a.bind,
                external_host: a.external_host,
                port: a.port,
                grpc_port: a.grpc_port,
                work_dir: a.work_dir,
                heartbeat_seconds: a.heartbeat,
                ..Default::default()
            };
            if let Some(n) = a.concurrent_tasks {
                opts.concurrent_tasks = n;
            }
            ops_ballista::run_executor(opts, factory)
                .await
                .context("cluster executor")
        }
    }
}

#[cfg(not(feature = "cluster"))]
pub async fn run(_factory: CatalogFactory, _cmd: Command) -> anyhow::Result<()> {
    Err(not_built())
}

/// The error of a cluster command in a build without the `cluster` feature.
#[cfg(not(feature = "cluster"))]
pub fn not_built() -> anyhow::Error {
    anyhow::anyhow!(
        "this iceberg-ops was built without Ballista; build it with `cargo build --release -p \
         ops-cli --features cluster`"
    )
}
