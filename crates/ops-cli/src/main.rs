//! `iceberg-ops`: the operator's command line. It parses arguments and prints; every Iceberg
//! operation lives in the library crates.

mod catalog_cmd;
mod cluster_cmd;
mod import_cmd;
mod interrupt;
mod invocation;
mod maintain_cmd;
mod migrate_cmd;
mod migrate_data_cmd;
mod quickstart;
mod report;
mod s3tables_cmd;
mod table_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Operate Apache Iceberg tables: catalogs, schema and data migrations.
#[derive(Debug, Parser)]
#[command(name = "iceberg-ops", version, about)]
struct Cli {
    /// Catalog configuration file (PyIceberg format) instead of the usual .pyiceberg.yaml search.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Log more (repeat for more detail); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a sample table in the embedded catalog (or --catalog) and show what was done.
    Quickstart(quickstart::Args),
    /// Inspect configured catalogs.
    #[command(subcommand)]
    Catalog(catalog_cmd::Command),
    /// Inspect a table, or roll it back.
    #[command(subcommand)]
    Table(table_cmd::Command),
    /// Run the maintenance that is due on every table of namespaces (or --all): compaction,
    /// dangling delete removal, snapshot expiry, orphan cleanup, each when the table's
    /// thresholds say so. Safe to run from cron: a second run finds nothing due.
    Maintain(maintain_cmd::MaintainArgs),
    /// Copy rows from one table into another: streaming, resumable, schema-reconciling.
    MigrateData(migrate_data_cmd::MigrateDataCommand),
    /// Check that a destination holds what the source (filtered, pinned) holds.
    Verify(migrate_data_cmd::VerifyArgs),
    /// Bring existing Parquet files into Iceberg in place: add-files, snapshot.
    #[command(subcommand)]
    Import(import_cmd::Command),
    /// Versioned schema migrations: migrate, rollback, status, plan, stamp, history, validate, new.
    #[command(flatten)]
    Migrations(migrate_cmd::Command),
    /// Migrate a Glue table into S3 Tables safely: start, review, approve, sync, complete.
    #[command(subcommand)]
    S3tables(s3tables_cmd::Command),
    /// Run a Ballista scheduler or executor for `migrate-data`, `table compact` and `maintain`
    /// with --cluster (`cluster` feature).
    #[command(subcommand)]
    Cluster(cluster_cmd::Command),
}

/// jemalloc, configured in `.cargo/config.toml` (builds run inside this repository pick it
/// up; elsewhere jemalloc runs with its defaults unless `_RJEM_MALLOC_CONF` is set): glibc's
/// per-thread arenas kept freed pages, so the migrator's peak RSS was two to three times its
/// live heap.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // `iceberg-ops catalog list | head -1`: a closed pipe ends the process quietly, as it does
    // for other Unix tools. Rust ignores SIGPIPE, so `println!` panics on it instead; restoring
    // the signal needs `unsafe`, which this workspace forbids, so that one panic exits quietly.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    // rustls is built with one provider (aws-lc-rs), installed before any client exists so no
    // library picks another or finds none.
    ops_core::http::install_crypto_provider();
    let cli = Cli::parse();
    init_tracing(cli.verbose, &cli.command);
    // Workers get the main thread's 8 MiB rather than tokio's 2 MiB: an upsert of a deeply
    // nested table awaits the writer's futures deep inside its own, and a debug build (or a
    // future dependency's larger futures) must not overflow where a release build fits.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 * 1024 * 1024)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("iceberg-ops: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("iceberg-ops: {}", report::error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let factory = ops_core::CatalogFactory::from_process(cli.config.as_deref())?;
    if let Some(path) = &cli.config {
        // Commands a report prints (health's fixes) name the same configuration.
        let _ = invocation::CONFIG_FILE.set(path.clone());
    }
    match cli.command {
        Command::Quickstart(args) => quickstart::run(&factory, args).await,
        Command::Catalog(cmd) => catalog_cmd::run(&factory, cmd).await,
        Command::Table(cmd) => table_cmd::run(&factory, cmd).await,
        Command::Maintain(args) => maintain_cmd::run_maintain(&factory, args).await,
        Command::Migrations(cmd) => migrate_cmd::run(&factory, cmd).await,
        Command::MigrateData(cmd) => migrate_data_cmd::run_migrate_data(&factory, cmd).await,
        Command::Verify(args) => migrate_data_cmd::run_verify(&factory, args).await,
        Command::Import(cmd) => import_cmd::run(&factory, cmd).await,
        Command::S3tables(cmd) => s3tables_cmd::run(&factory, cmd).await,
        Command::Cluster(cmd) => cluster_cmd::run(factory, cmd).await,
    }
}

fn init_tracing(verbose: u8, command: &Command) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = log_filter(verbose, std::env::var("RUST_LOG").ok().as_deref());
    let printed = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    // An executor learns its Ballista id from Ballista's INFO record of it (ops_ballista's
    // heartbeat module), whatever the printed level.
    #[cfg(feature = "cluster")]
    let id = matches!(command, Command::Cluster(cluster_cmd::Command::Executor(_))).then(|| {
        ops_ballista::heartbeat::ExecutorIdLayer::new()
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    });
    #[cfg(not(feature = "cluster"))]
    let id: Option<tracing_subscriber::layer::Identity> = {
        let _ = command;
        None
    };
    let _ = tracing_subscriber::registry()
        .with(printed)
        .with(id)
        .try_init();
}

/// `RUST_LOG` if set, else the level `-v`s ask for; either way the request signers stay at
/// INFO or quieter: at DEBUG, reqsign prints the credential provider it was given with the
/// secret access key in clear (`StaticCredentialProvider { secret_access_key: .. }`).
fn log_filter(verbose: u8, rust_log: Option<&str>) -> tracing_subscriber::EnvFilter {
    let default = match verbose {
        0 => "warn",
        1 => "info,iceberg=warn",
        _ => "debug",
    };
    let mut filter = rust_log
        .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    for quiet in ["reqsign=info", "reqsign_core=info", "reqsign_aws_v4=info"] {
        if let Ok(directive) = quiet.parse() {
            filter = filter.add_directive(directive);
        }
    }
    filter
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            // JSON written straight to stdout fails with serde_json's error around the pipe's.
            || e.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    fn debug_enabled(filter: tracing_subscriber::EnvFilter, target: &str) -> bool {
        let subscriber = tracing_subscriber::registry().with(filter);
        tracing::subscriber::with_default(subscriber, || match target {
            "reqsign_core::provide" => {
                tracing::enabled!(target: "reqsign_core::provide", tracing::Level::DEBUG)
            }
            _ => tracing::enabled!(target: "ops_core::catalog", tracing::Level::DEBUG),
        })
    }

    #[test]
    fn signers_never_log_at_debug_whatever_the_verbosity() {
        for (verbose, env) in [(2, None), (0, Some("debug")), (0, Some("trace"))] {
            assert!(!debug_enabled(
                log_filter(verbose, env),
                "reqsign_core::provide"
            ));
            assert!(debug_enabled(log_filter(verbose, env), "ops_core::catalog"));
        }
    }
}
