//! `iceberg-ops migrate-data` and `iceberg-ops verify`: the DataMigrator from the shell.
//!
//! Arguments parse in two stages: raw clap values, then a validated [`DataMigrator`]. On a
//! terminal, progress is an indicatif bar (rows, rows/s, ETA when the total is known from
//! manifests); otherwise a plain line at most every two seconds on stderr.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::ValueEnum;
use iceberg::spec::Type;
use ops_core::CatalogFactory;
use ops_datamig::{
    DataMigrator, MigrationError, MigrationPlan, MigrationResult, TaskOutput, VerificationResult,
    VerifyMethod, WriteMode,
};
use ops_reconcile::{MissingInDest, MissingInSource, SchemaReconciler};
use serde_json::Value;

use crate::table_cmd::{Output, parse_ident};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnMissingInSource {
    Error,
    Skip,
    Null,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnMissingInDest {
    Error,
    #[value(name = "auto_add", alias = "auto-add")]
    AutoAdd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Append,
    Upsert,
    #[value(name = "overwrite_partition", alias = "overwrite-partition")]
    OverwritePartition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Duplicates {
    Error,
    Last,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Method {
    #[value(name = "row_count", alias = "row-count")]
    RowCount,
    #[value(name = "partition_hash", alias = "partition-hash")]
    PartitionHash,
    Sample,
}

impl From<Method> for VerifyMethod {
    fn from(m: Method) -> Self {
        match m {
            Method::RowCount => VerifyMethod::RowCount,
            Method::PartitionHash => VerifyMethod::PartitionHash,
            Method::Sample => VerifyMethod::Sample,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CopyMode {
    Auto,
    Rewrite,
    Files,
    Reference,
}

/// What both commands share: the two tables, how rows map and which rows.
#[derive(Debug, clap::Args)]
pub struct Job {
    /// Source table as NAMESPACE.TABLE, or a Glue Hive table as glue:DATABASE.TABLE (read
    /// through --source-catalog, a Glue catalog).
    #[arg(long, required_unless_present = "source_path")]
    source: Option<String>,
    /// Source: Parquet files outside Iceberg (folders, files, globs; local, file:// or s3://,
    /// read with --source-catalog's s3.* properties). Staged as an Iceberg table under
    /// ./.iceberg-ops/import-sources/ (files left in place), refreshed with new files each run.
    #[arg(long = "source-path", num_args = 1.., value_name = "PATH", conflicts_with = "source")]
    source_path: Vec<String>,
    /// Destination table as NAMESPACE.TABLE.
    #[arg(long, required = true)]
    dest: Option<String>,
    /// Catalog of the source. Also spelled `--catalog`, as the `table` commands spell it: the
    /// destination's catalog is the source's unless --dest-catalog names another.
    #[arg(long, visible_alias = "catalog", default_value_t = crate::invocation::default_catalog())]
    source_catalog: String,
    /// Catalog of the destination (default: the source's).
    #[arg(long)]
    dest_catalog: Option<String>,
    /// Rename: SOURCE_COLUMN=DEST_COLUMN (repeatable).
    #[arg(long = "column-mapping", value_name = "SRC=DEST")]
    column_mapping: Vec<String>,
    /// Cast a destination column: COLUMN=TYPE (long, double, decimal(12,2), ...; repeatable).
    #[arg(long = "type-coercion", value_name = "COL=TYPE")]
    type_coercion: Vec<String>,
    /// Destination columns with no source column.
    #[arg(long, value_enum, default_value_t = OnMissingInSource::Error)]
    on_missing_in_source: OnMissingInSource,
    /// Source columns with no destination column.
    #[arg(long, value_enum, default_value_t = OnMissingInDest::Error)]
    on_missing_in_dest: OnMissingInDest,
    /// Only rows matching this filter, e.g. "region = 'eu' and qty > 5" (`--where`, as
    /// `table compact` and `table delete` spell it, works too).
    #[arg(long, value_name = "EXPR", visible_alias = "where")]
    row_filter: Option<String>,
    /// Read the source at this snapshot (default: current).
    #[arg(long, value_name = "ID")]
    source_snapshot: Option<i64>,
}

/// `migrate-data`: run a migration, or one step of a planned one.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    flatten_help = true
)]
pub struct MigrateDataCommand {
    #[command(subcommand)]
    step: Option<Step>,
    #[command(flatten)]
    run: MigrateArgs,
}

/// The steps of a planned migration, for running tasks in other processes.
#[derive(Debug, clap::Subcommand)]
pub enum Step {
    /// Execute one task of a plan (from `migrate-data --plan-only --output json`): write its
    /// data files and print them as JSON; nothing is committed.
    RunTask(RunTaskArgs),
    /// Commit the outputs of every task of a plan, in batch order (safe to run again).
    Commit(CommitArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunTaskArgs {
    /// The plan file.
    #[arg(long, value_name = "PATH")]
    plan: PathBuf,
    /// The task to execute (its `id` in the plan).
    #[arg(long, value_name = "N")]
    task: usize,
    /// Write the task output here instead of stdout.
    #[arg(long = "out", value_name = "PATH")]
    out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// The plan file.
    #[arg(long, value_name = "PATH")]
    plan: PathBuf,
    /// Task outputs written by `run-task`, one per task.
    #[arg(required = true, value_name = "OUTPUT")]
    outputs: Vec<PathBuf>,
    /// Record progress in this checkpoint file.
    #[arg(long, value_name = "PATH")]
    checkpoint: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    job: Job,
    /// Rows per destination commit.
    #[arg(long, default_value_t = ops_datamig::DEFAULT_BATCH_ROWS)]
    batch_rows: usize,
    /// How each chunk is written.
    #[arg(long, value_enum, default_value_t = Mode::Append)]
    write_mode: Mode,
    /// Key columns for upsert, comma-separated.
    #[arg(long, value_delimiter = ',')]
    upsert_keys: Option<Vec<String>>,
    /// Upsert: a key the source repeats (in one batch or across batches) is an error before
    /// anything is written, or the row that comes last in the source's order wins (highest
    /// data sequence number, then file order, then row order). Both rules first read the
    /// source's key columns once (a pre-pass, also under --dry-run; memory grows with the
    /// distinct keys).
    #[arg(long, value_enum, default_value_t = Duplicates::Error)]
    on_duplicate_keys: Duplicates,
    /// Checkpoint file: progress is recorded there and an existing one is resumed.
    #[arg(long, value_name = "PATH")]
    checkpoint: Option<PathBuf>,
    /// Run every check and read the source through the plan, writing nothing.
    #[arg(long)]
    dry_run: bool,
    /// Create the destination when it does not exist: the source's schema with the renames and
    /// coercions (field ids kept) and the source's partition spec, in format version 2 (Java's
    /// and PyIceberg's default) whatever the source's: a v1 source gets a v2 copy.
    #[arg(long)]
    create_dest: bool,
    /// auto: copy source data files whole where the schemas differ only by renames and
    /// promotions (same field ids, same spec, append, no deletes, filter decided by partition),
    /// rewrite the rest; rewrite: decode and re-encode every row; files: copy, refusing when
    /// the tables do not allow it (a file that cannot be copied while the tables can — a
    /// delete file applies, another spec, no field ids — is still rewritten, and the report
    /// says why); reference: like files, but the destination shares the source's files
    /// instead of copies.
    #[arg(long, value_enum, default_value_t = CopyMode::Auto)]
    copy_mode: CopyMode,
    /// Only plan: run the pre-flight (adding columns, creating the destination) and print the
    /// tasks for `migrate-data run-task` and `migrate-data commit`.
    #[arg(long)]
    plan_only: bool,
    /// Local workers reading and writing in parallel (default: one per core).
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Once every batch has landed, compact the files this job wrote into files of the
    /// destination's target size (one more `replace` commit; the rest of the table is left as
    /// it is). A re-run with the same --checkpoint after a crash compacts again. With
    /// --plan-only the plan records it and `migrate-data commit` compacts; with --cluster the
    /// client does, after the last output.
    #[arg(long)]
    compact: bool,
    /// Once the job is complete, expire its own snapshots (one per batch, and the compaction's)
    /// but the table's current one, and delete the files only they referenced. Snapshots of
    /// other writers and branch or tag heads are kept; a gc.enabled=false destination (a
    /// reference copy) keeps its files. With --plan-only the plan records it and
    /// `migrate-data commit` expires; with --cluster the client does.
    #[arg(long)]
    expire_job_snapshots: bool,
    /// Run the tasks on a Ballista cluster (`iceberg-ops cluster scheduler` and executors):
    /// plan here, commit here in batch order as the executors' outputs land.
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
    /// With --cluster: give up when the next task's output has not landed for this many
    /// seconds (default 3600; 0 waits for ever) — Ballista keeps a job queued while no
    /// executor is there. What landed stays committed; the same command resumes.
    #[arg(long, value_name = "SECS")]
    stall_timeout: Option<u64>,
    /// Verify the destination after migrating.
    #[arg(long, value_enum)]
    verify: Option<Method>,
    /// Rows compared by --verify sample.
    #[arg(long, default_value_t = 100)]
    sample_size: usize,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    job: Job,
    /// Which check.
    #[arg(long, value_enum, default_value_t = Method::RowCount)]
    method: Method,
    /// Rows compared by the sample method.
    #[arg(long, default_value_t = 100)]
    sample_size: usize,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

impl Job {
    fn source(&self) -> &str {
        self.source.as_deref().unwrap_or_default()
    }

    /// The source as the user named it, for reports: the table, or the `--source-path` names.
    fn source_named(&self) -> String {
        match &self.source {
            Some(s) => s.clone(),
            None => self.source_path.join(" "),
        }
    }

    /// The names of a source outside Iceberg (`--source-path`, or `--source glue:…`), staged
    /// before the job reads it; `None` for an Iceberg source.
    fn outside_iceberg(&self) -> Option<Vec<String>> {
        if !self.source_path.is_empty() {
            return Some(self.source_path.clone());
        }
        self.source
            .as_ref()
            .filter(|s| s.starts_with(ops_import::glue::GLUE_PREFIX))
            .map(|s| vec![s.clone()])
    }

    fn dest(&self) -> &str {
        self.dest.as_deref().unwrap_or_default()
    }
}

fn reconciler(job: &Job) -> anyhow::Result<SchemaReconciler> {
    let mut r = SchemaReconciler::new()
        .on_missing_in_source(match job.on_missing_in_source {
            OnMissingInSource::Error => MissingInSource::Error,
            OnMissingInSource::Skip => MissingInSource::Skip,
            OnMissingInSource::Null => MissingInSource::Null,
        })
        .on_missing_in_dest(match job.on_missing_in_dest {
            OnMissingInDest::Error => MissingInDest::Error,
            OnMissingInDest::AutoAdd => MissingInDest::AutoAdd,
        });
    for m in &job.column_mapping {
        let (src, dst) = split_pair(m, "--column-mapping", "SOURCE=DEST")?;
        r = r.rename(src, dst);
    }
    for c in &job.type_coercion {
        let (col, ty) = split_pair(c, "--type-coercion", "COLUMN=TYPE")?;
        let parsed: Type = serde_json::from_value(Value::String(ty.to_string())).map_err(|_| {
            anyhow::anyhow!(
                "--type-coercion {c}: '{ty}' is not an Iceberg type (int, long, float, double, \
                 decimal(P,S), string, date, timestamp, timestamptz, boolean, binary, uuid)"
            )
        })?;
        r = r.coerce(col, parsed);
    }
    Ok(r)
}

fn split_pair<'a>(s: &'a str, flag: &str, shape: &str) -> anyhow::Result<(&'a str, &'a str)> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => Ok((a.trim(), b.trim())),
        _ => bail!("{flag} '{s}' is not {shape}"),
    }
}

async fn migrator(factory: &CatalogFactory, job: &Job) -> anyhow::Result<DataMigrator> {
    let source_catalog = factory
        .open(&job.source_catalog)
        .await
        .with_context(|| format!("open source catalog '{}'", job.source_catalog))?;
    let dest_name = job.dest_catalog.as_deref().unwrap_or(&job.source_catalog);
    let dest_catalog = if dest_name == job.source_catalog {
        source_catalog.clone()
    } else {
        factory
            .open(dest_name)
            .await
            .with_context(|| format!("open destination catalog '{dest_name}'"))?
    };
    let (source_catalog, source_ident) = match job.outside_iceberg() {
        Some(names) => {
            let staged = stage_source(&source_catalog, &job.source_catalog, names).await?;
            (staged.handle, staged.ident)
        }
        None => (source_catalog, parse_ident(job.source())?),
    };
    let mut m = DataMigrator::new(
        &source_catalog,
        source_ident,
        &dest_catalog,
        parse_ident(job.dest())?,
    )
    .schema_reconciler(reconciler(job)?);
    if let Some(f) = &job.row_filter {
        m = m.row_filter(f.as_str());
    }
    if let Some(id) = job.source_snapshot {
        m = m.source_snapshot(id);
    }
    Ok(m)
}

/// A source outside Iceberg staged as an Iceberg table (ops-import's `staged`), in a folder
/// beside the embedded catalog keyed by the names and the catalog read with: a re-run (a
/// resumed job) reads the same table, with the files that arrived since.
async fn stage_source(
    io_from: &ops_core::CatalogHandle,
    catalog: &str,
    names: Vec<String>,
) -> anyhow::Result<ops_import::staged::StagedSource> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (catalog, &names).hash(&mut h);
    let dir = std::env::current_dir()?
        .join(".iceberg-ops")
        .join("import-sources")
        .join(format!("{:016x}", h.finish()));
    let staged = ops_import::staged::StageBuilder::new(io_from, names.clone(), &dir)
        .open()
        .await
        .with_context(|| format!("stage the source {}", names.join(", ")))?;
    eprintln!(
        "source    {} staged as an Iceberg table in {} ({} file(s) {})",
        names.join(", "),
        dir.display(),
        staged.added,
        if staged.created {
            "found"
        } else {
            "new since the last run"
        }
    );
    Ok(staged)
}

pub async fn run_migrate_data(
    factory: &CatalogFactory,
    cmd: MigrateDataCommand,
) -> anyhow::Result<()> {
    match cmd.step {
        Some(Step::RunTask(a)) => run_task(factory, a).await,
        Some(Step::Commit(a)) => commit(factory, a).await,
        None => {
            let hint = FlagHint::of(&cmd.run.job);
            run_migrate(factory, cmd.run)
                .await
                .map_err(|e| hint.apply(e))
        }
    }
}

/// Which flag named the catalog a missing table was looked up in, so the error can say it.
struct FlagHint {
    source: String,
    source_catalog: String,
    dest: String,
    dest_catalog: String,
}

impl FlagHint {
    fn of(job: &Job) -> Self {
        FlagHint {
            source: job.source().to_string(),
            source_catalog: job.source_catalog.clone(),
            dest: job.dest().to_string(),
            dest_catalog: job
                .dest_catalog
                .clone()
                .unwrap_or_else(|| job.source_catalog.clone()),
        }
    }

    /// `cannot load table T (catalog 'c')`, ops-datamig's wording for a table the catalog does
    /// not have, gains the flag to change. A table found but not loadable (a partition spec
    /// iceberg refuses, a metadata file gone) is `cannot read table`: its cause says what is
    /// wrong, not its name.
    fn apply(&self, err: anyhow::Error) -> anyhow::Error {
        let text = crate::report::error_chain(&err);
        let flag = if text.contains(&format!(
            "cannot load table {} (catalog '{}')",
            self.source, self.source_catalog
        )) {
            Some(("--source-catalog", &self.source_catalog))
        } else if text.contains(&format!(
            "cannot load table {} (catalog '{}')",
            self.dest, self.dest_catalog
        )) {
            Some(("--dest-catalog", &self.dest_catalog))
        } else {
            None
        };
        match flag {
            // Said after the cause, flattened: as context it would come first.
            Some((flag, catalog)) => anyhow::anyhow!(
                "{text}; check the table name, and that catalog '{catalog}' ({flag}) is the one \
                 that holds it ({} lists its tables)",
                crate::invocation::table_list_command(catalog)
            ),
            None => err,
        }
    }
}

fn read_plan(path: &std::path::Path) -> anyhow::Result<MigrationPlan> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the plan {}", path.display()))?;
    MigrationPlan::from_json(&text).with_context(|| format!("plan {}", path.display()))
}

async fn plan_catalogs(
    factory: &CatalogFactory,
    plan: &MigrationPlan,
) -> anyhow::Result<(ops_core::CatalogHandle, ops_core::CatalogHandle)> {
    let source = factory
        .open(&plan.source.catalog)
        .await
        .with_context(|| format!("open source catalog '{}'", plan.source.catalog))?;
    let dest = if plan.dest.catalog == plan.source.catalog {
        source.clone()
    } else {
        factory
            .open(&plan.dest.catalog)
            .await
            .with_context(|| format!("open destination catalog '{}'", plan.dest.catalog))?
    };
    Ok((source, dest))
}

async fn run_task(factory: &CatalogFactory, a: RunTaskArgs) -> anyhow::Result<()> {
    let plan = read_plan(&a.plan)?;
    let (source, dest) = plan_catalogs(factory, &plan).await?;
    let out = plan.execute_task(&source, &dest, a.task).await?;
    let json = serde_json::to_string(&out)?;
    match &a.out {
        Some(path) => {
            // Written whole, then renamed: a crash never leaves half an output to commit.
            let mut tmp = path.clone().into_os_string();
            tmp.push(format!(".tmp-{}", std::process::id()));
            let tmp = PathBuf::from(tmp);
            std::fs::write(&tmp, json).with_context(|| format!("write {}", tmp.display()))?;
            std::fs::rename(&tmp, path).with_context(|| format!("write {}", path.display()))?;
        }
        None => println!("{json}"),
    }
    Ok(())
}

/// A job found complete ([`MigrationError::AlreadyComplete`]), reported as the success it is,
/// with its verification when one ran (one JSON document either way); a mismatch fails.
fn report_already_complete(
    output: Output,
    job_id: &str,
    e: &MigrationError,
    verification: Option<&VerificationResult>,
) -> anyhow::Result<()> {
    let (expiry, source) = match e {
        MigrationError::AlreadyComplete {
            expiry,
            source_snapshots,
            ..
        } => (expiry.clone(), source_snapshots.clone()),
        _ => (None, None),
    };
    print_report(
        output,
        || {
            let mut v = serde_json::json!({
                "job_id": job_id,
                "already_complete": true,
                "detail": e.to_string(),
                "expiry": expiry,
            });
            // What the job read against where the source is now: an orchestrator retrying the
            // task sees that rows committed to the source since were not copied.
            if let (Some(obj), Some(src)) = (v.as_object_mut(), &source) {
                obj.insert(
                    "source_snapshot_id".into(),
                    serde_json::json!(src.read_snapshot_id),
                );
                obj.insert(
                    "source_current_snapshot_id".into(),
                    serde_json::json!(src.current_snapshot_id),
                );
                obj.insert("source_changed".into(), serde_json::json!(src.changed()));
            }
            v
        },
        || println!("{e}"),
        verification,
    )
}

/// Prints a report as `--output` asks — `json()` as one JSON document holding the
/// verification too, or `text()` followed by the verification — and fails when the
/// verification found a mismatch.
///
/// The document is written as it is serialized: a run's report lists every file it routed,
/// and building it as a `serde_json::Value` first would hold a map per file (86 MB at 100k
/// files) beside the result itself.
fn print_report<T: serde::Serialize>(
    output: Output,
    json: impl FnOnce() -> T,
    text: impl FnOnce(),
    verification: Option<&VerificationResult>,
) -> anyhow::Result<()> {
    /// The report with its verification as one more key.
    #[derive(serde::Serialize)]
    struct Report<'a, T> {
        #[serde(flatten)]
        report: T,
        #[serde(skip_serializing_if = "Option::is_none")]
        verification: Option<&'a VerificationResult>,
    }
    match output {
        Output::Json => crate::report::print_json(&Report {
            report: json(),
            verification,
        })?,
        Output::Text => {
            text();
            if let Some(v) = verification {
                print_verification(v);
            }
        }
    }
    if verification.is_some_and(|v| !v.matches) {
        bail!("verification failed: the destination does not match the source");
    }
    Ok(())
}

async fn commit(factory: &CatalogFactory, a: CommitArgs) -> anyhow::Result<()> {
    let plan = read_plan(&a.plan)?;
    let mut outputs = Vec::new();
    for path in &a.outputs {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("read the task output {}", path.display()))?;
        outputs.push(
            TaskOutput::from_json(&text)
                .with_context(|| format!("task output {}", path.display()))?,
        );
    }
    let (source, dest) = plan_catalogs(factory, &plan).await?;
    let result = match plan.commit(&source, &dest, outputs, a.checkpoint).await {
        Ok(r) => r,
        // Committing is idempotent: a repeated commit (a retry after a lost response, a
        // pipeline step run twice) finds the job done and succeeds without writing.
        Err(e @ MigrationError::AlreadyComplete { .. }) => {
            return report_already_complete(a.output, &plan.job_id, &e, None);
        }
        Err(e) => return Err(e.into()),
    };
    match a.output {
        Output::Json => crate::report::print_json(&result)?,
        Output::Text => {
            println!(
                "committed {} → {}: {} rows in {} commit(s); {} batch(es) were already in the \
                 destination",
                plan.source.table,
                plan.dest.table,
                result.rows_moved,
                result.new_snapshots.len(),
                result.batches_skipped + result.batches_landed
            );
            print_source_snapshots(&result);
            print_job_finish(&result);
        }
    }
    Ok(())
}

async fn run_migrate(factory: &CatalogFactory, args: MigrateArgs) -> anyhow::Result<()> {
    if args.job.outside_iceberg().is_some() && (args.cluster.is_some() || args.plan_only) {
        bail!(
            "a source outside Iceberg (--source-path, --source glue:) is staged in this \
             process's folder, which other processes do not see: run the copy here, without \
             --plan-only or --cluster"
        );
    }
    let mut m = migrator(factory, &args.job)
        .await?
        .batch_rows(args.batch_rows)
        .write_mode(match args.write_mode {
            Mode::Append => WriteMode::Append,
            Mode::Upsert => WriteMode::Upsert,
            Mode::OverwritePartition => WriteMode::OverwritePartition,
        })
        .dry_run(args.dry_run)
        .create_dest(args.create_dest)
        .copy_mode(match args.copy_mode {
            CopyMode::Auto => ops_datamig::CopyMode::Auto,
            CopyMode::Rewrite => ops_datamig::CopyMode::Rewrite,
            CopyMode::Files => ops_datamig::CopyMode::Files,
            CopyMode::Reference => ops_datamig::CopyMode::Reference,
        });
    m = m.on_duplicate_keys(match args.on_duplicate_keys {
        Duplicates::Error => ops_datamig::OnDuplicateKeys::Error,
        Duplicates::Last => ops_datamig::OnDuplicateKeys::Last,
    });
    if let Some(keys) = &args.upsert_keys {
        m = m.upsert_keys(keys.clone());
    }
    m = m.compact(args.compact);
    m = m.expire_job_snapshots(args.expire_job_snapshots);
    if let Some(url) = &args.cluster {
        if args.plan_only || args.dry_run || args.workers.is_some() {
            bail!(
                "--cluster runs the tasks on the cluster's executors: --plan-only, --dry-run \
                 and --workers do not apply"
            );
        }
        return run_on_cluster(factory, url, m, &args).await;
    }
    if args.stall_timeout.is_some() {
        bail!("--stall-timeout applies to --cluster runs only");
    }
    if let Some(path) = &args.checkpoint {
        m = m.checkpoint(path);
    }
    if let Some(n) = args.workers {
        m = m.workers(n);
    }
    if args.plan_only {
        if args.verify.is_some() || args.workers.is_some() {
            bail!(
                "--plan-only writes no data, so --verify and --workers do not apply; verify \
                 after `migrate-data commit`"
            );
        }
        let plan = m.plan().await?;
        match args.output {
            Output::Json => crate::report::print_json(&plan)?,
            Output::Text => {
                println!(
                    "plan      {} → {}: job {}, {} task(s), source snapshot {}",
                    plan.source.table,
                    plan.dest.table,
                    plan.job_id,
                    plan.tasks.len(),
                    plan.source_snapshot_id
                        .map_or("none".to_string(), |s| s.to_string())
                );
                for t in &plan.tasks {
                    println!(
                        "task {:>4}  batches {}..{}  {} file(s){}",
                        t.id,
                        t.batches().start,
                        t.batches().end,
                        t.files.len(),
                        t.record_count
                            .map_or(String::new(), |r| format!(", {r} rows"))
                    );
                }
                for note in &plan.notes {
                    println!("note      {note}");
                }
                // A plan printed as text cannot be committed: it must not keep maintenance off
                // the destination.
                let (_, dest) = plan_catalogs(factory, &plan).await?;
                let ident = crate::table_cmd::parse_ident(&plan.dest.table)?;
                ops_core::ops::markers::clear_running_marker(&dest, &ident, &plan.job_id).await?;
                println!(
                    "next      this plan is a preview: to run it elsewhere, make it again with \
                     --output json, then run-task each task and commit"
                );
            }
        }
        return Ok(());
    }
    // A job killed after its last commit is over: the same command says so and succeeds, with
    // the verification it asks for, as `migrate-data commit` and --cluster do (the library's
    // `run` refuses a completed checkpoint, as the seed's CheckpointError does).
    match m.finished().await? {
        Some(done @ MigrationError::AlreadyComplete { .. }) => {
            let verification = match args.verify {
                Some(method) => Some(m.verify(method.into(), args.sample_size).await?),
                None => None,
            };
            let job_id = match &done {
                MigrationError::AlreadyComplete { job_id, .. } => job_id.clone(),
                _ => String::new(),
            };
            return report_already_complete(args.output, &job_id, &done, verification.as_ref());
        }
        // Finishing what the stopped run left undone failed (its compaction, say).
        Some(e) => return Err(e.into()),
        None => {}
    }
    let on_signal =
        (!args.dry_run).then(|| crate::interrupt::exit_on_signal(interrupted_message(&args)));
    let reporter = Reporter::new(args.output == Output::Text || !std::io::stderr().is_terminal());
    let progress = reporter.clone_handle();
    m = m.progress(move |done, total| progress.update(done, total));
    let result = m.run().await;
    reporter.finish();
    let result = result?;
    if let Some(message) = on_signal
        && let Ok(mut message) = message.lock()
    {
        *message = format!(
            "iceberg-ops: interrupted after the job completed: every batch is committed{}",
            if args.verify.is_some() {
                "; its verification did not finish (run `iceberg-ops verify`)"
            } else {
                ""
            }
        );
    }
    let verification = match args.verify {
        Some(method) if !args.dry_run => Some(m.verify(method.into(), args.sample_size).await?),
        _ => None,
    };
    report_run(&args, &result, verification.as_ref())
}

/// What an interrupted local run says as it exits: what stays in the destination, and how to
/// go on (see docs/datamig.md, Resume).
fn interrupted_message(args: &MigrateArgs) -> String {
    let job = &args.job;
    let dest = format!(
        "{} (catalog '{}')",
        job.dest(),
        job.dest_catalog.as_deref().unwrap_or(&job.source_catalog)
    );
    match &args.checkpoint {
        Some(path) => format!(
            "iceberg-ops: interrupted. The batches committed so far stay in {dest} and the \
             checkpoint {} records them: run the same command again to resume after them",
            path.display()
        ),
        None => {
            let again = match args.write_mode {
                Mode::Append => {
                    "a new job, which would append the rows of those batches a second time"
                }
                Mode::Upsert | Mode::OverwritePartition => {
                    "a new job, which writes the same rows over them"
                }
            };
            format!(
                "iceberg-ops: interrupted. The batches committed so far stay in {dest}, and, once \
                 it started writing, this job's running marker. Without --checkpoint the same \
                 command starts {again}: its warning names this job and what to do first. Give \
                 --checkpoint PATH for a run that can resume"
            )
        }
    }
}

/// Prints a run's result (and its verification) as `--output` asks; a mismatch fails.
fn report_run(
    args: &MigrateArgs,
    result: &MigrationResult,
    verification: Option<&VerificationResult>,
) -> anyhow::Result<()> {
    print_report(
        args.output,
        || result,
        || print_result(&args.job, result),
        verification,
    )
}

#[cfg(feature = "cluster")]
async fn run_on_cluster(
    factory: &CatalogFactory,
    url: &str,
    mut m: DataMigrator,
    args: &MigrateArgs,
) -> anyhow::Result<()> {
    let mut runner =
        ops_ballista::ClusterRunner::new(url)?.interrupt(crate::interrupt::on_signal());
    if let Some(secs) = args.stall_timeout {
        runner = runner.stall_timeout((secs > 0).then(|| std::time::Duration::from_secs(secs)));
    }
    // Without a checkpoint the same command would plan a new job, and commit again every batch
    // the failed one had committed.
    let Some(checkpoint) = args.checkpoint.clone() else {
        bail!(
            "--cluster needs --checkpoint PATH: a cluster job that fails (an executor lost, the \
             client stopped) resumes from it, and its plan is kept beside it (PATH.plan.json)"
        );
    };
    runner = runner.checkpoint(&checkpoint);
    let plan_path = cluster_plan_path(&checkpoint);
    let plan = match stored_cluster_job(factory, &checkpoint, &plan_path, args).await? {
        // The same command after a failure resumes that job (its committed batches skipped,
        // its tasks' outputs reused) instead of planning a new job that would commit the same
        // rows again; a job that is over is found so by the runner before any task is
        // submitted, and said so, as `migrate-data commit` does.
        StoredJob::Resume(plan) => {
            eprintln!(
                "resuming job {} planned in {}",
                plan.job_id,
                plan_path.display()
            );
            *plan
        }
        StoredJob::New => {
            // Asked before planning creates the destination and marks the job.
            runner.reachable().await?;
            let plan = m.plan().await?;
            // The plan first, then its checkpoint: a plan without its checkpoint is stale
            // (`stored_cluster_job`), so a stop between the two leaves nothing that resumes
            // the wrong job.
            let mut tmp = plan_path.clone().into_os_string();
            tmp.push(format!(".tmp-{}", std::process::id()));
            let tmp = PathBuf::from(tmp);
            std::fs::write(&tmp, serde_json::to_string(&plan)?)
                .with_context(|| format!("write {}", tmp.display()))?;
            std::fs::rename(&tmp, &plan_path)
                .with_context(|| format!("write {}", plan_path.display()))?;
            plan.start_checkpoint(&checkpoint)?;
            plan
        }
    };
    eprintln!(
        "cluster   {url}: job {}, {} task(s)",
        plan.job_id,
        plan.tasks.len()
    );
    runner = runner.progress(|task, landed, total| {
        eprintln!("task {task} done ({landed}/{total} landed)");
    });
    let (source, dest) = plan_catalogs(factory, &plan).await?;
    let outcome = match runner.run(&plan, &source, &dest).await {
        Ok(r) => Ok(r),
        // Over already (a run killed after its last commit): a success, as for `commit`.
        Err(ops_ballista::ClusterError::Migration(e @ MigrationError::AlreadyComplete { .. })) => {
            Err(e)
        }
        Err(e) => return Err(e.into()),
    };
    // Verify what the job read, even if the source moved on since.
    if let Some(id) = plan.source_snapshot_id {
        m = m.source_snapshot(id);
    }
    let verification = match args.verify {
        Some(method) => Some(m.verify(method.into(), args.sample_size).await?),
        None => None,
    };
    match outcome {
        Ok(result) => report_run(args, &result, verification.as_ref()),
        Err(done) => {
            report_already_complete(args.output, &plan.job_id, &done, verification.as_ref())
        }
    }
}

/// Where a cluster job keeps its plan: beside its checkpoint, `PATH.plan.json`.
#[cfg(feature = "cluster")]
fn cluster_plan_path(checkpoint: &std::path::Path) -> PathBuf {
    let mut path = checkpoint.as_os_str().to_owned();
    path.push(".plan.json");
    PathBuf::from(path)
}

/// What a `--cluster` run finds of its job on disk.
#[cfg(feature = "cluster")]
enum StoredJob {
    /// The job its checkpoint and plan record: run (or report) it.
    Resume(Box<MigrationPlan>),
    /// No job to resume: plan one.
    New,
}

/// The job `checkpoint` and its plan (`plan_path`) record, for a `--cluster` run.
///
/// The checkpoint is the job's one piece of state the operator sees, deletes or keeps; the plan
/// beside it is only what the checkpoint's job needs to run (kept out of the checkpoint, which
/// is rewritten after every batch, because a plan lists every source file: megabytes for a
/// large table). A plan belongs to a job only while that job's checkpoint is there:
/// - a plan without a checkpoint is stale — the operator deleted the checkpoint to start
///   afresh (as our messages advise), or the run that planned it stopped before starting its
///   checkpoint, before any task ran — and a new job is planned;
/// - a plan whose destination is gone (dropped, or dropped and created again: another UUID)
///   cannot be resumed; with `--create-dest` its checkpoint is removed and a new job planned,
///   otherwise the run stops saying so;
/// - a checkpoint without its plan, or with another job's plan, is refused, unless nothing of
///   its job was committed (then a new job is planned).
#[cfg(feature = "cluster")]
async fn stored_cluster_job(
    factory: &CatalogFactory,
    checkpoint: &std::path::Path,
    plan_path: &std::path::Path,
    args: &MigrateArgs,
) -> anyhow::Result<StoredJob> {
    let (ck, pp) = (checkpoint.display(), plan_path.display());
    let state = {
        // Dropped at the end of the block: the runner takes the checkpoint's lock later.
        let mut store = ops_checkpoint::CheckpointStore::new(checkpoint);
        if store.exists() { store.state()? } else { None }
    };
    let plan = if plan_path.exists() {
        Some(read_plan(plan_path)?)
    } else {
        None
    };
    let Some(state) = state else {
        if let Some(plan) = plan {
            eprintln!(
                "ignoring {pp}: it holds the plan of job {}, whose checkpoint {ck} is gone \
                 (deleted to start afresh, or never started); planning a new job",
                plan.job_id
            );
        }
        return Ok(StoredJob::New);
    };
    let job = state.job.clone().unwrap_or_default();
    let job_id = job
        .get("job_id")
        .and_then(Value::as_str)
        .unwrap_or("none recorded")
        .to_string();
    let committed = state.last_committed_batch.map_or(0, |b| b + 1);
    let Some(plan) = plan else {
        if state.completed {
            bail!(
                "the checkpoint {ck} records a completed migration (job {job_id}): the job is \
                 done. To copy the source again as a new job, delete it or pass a new \
                 --checkpoint path{}",
                if args.write_mode == Mode::Append {
                    " (appending, that copies every row once more)"
                } else {
                    ""
                }
            );
        }
        if job.get("plan") != Some(&Value::Bool(true)) {
            bail!(
                "{ck} is the checkpoint of a local run (job {job_id}), not of a cluster job: \
                 finish that job without --cluster, or give this one its own --checkpoint path"
            );
        }
        if committed == 0 {
            eprintln!(
                "ignoring {ck}: it started cluster job {job_id}, whose plan {pp} is gone, and \
                 none of its batches was committed; planning a new job"
            );
            remove_checkpoint(checkpoint)?;
            return Ok(StoredJob::New);
        }
        bail!(
            "{ck} records cluster job {job_id} with {committed} batch(es) committed, but its \
             plan {pp} is gone: the job cannot be resumed without it. Put the plan back, or \
             delete {ck} to copy the source as a new job{}",
            undo_advice(args, &job)
        );
    };
    if job_id != plan.job_id {
        if committed == 0 && !state.completed {
            eprintln!(
                "ignoring {ck}: it started job {job_id}, but {pp} holds the plan of job {}, and \
                 none of its batches was committed; planning a new job",
                plan.job_id
            );
            remove_checkpoint(checkpoint)?;
            return Ok(StoredJob::New);
        }
        bail!(
            "{ck} records job {job_id}, but {pp} holds the plan of another job ({}): the \
             checkpoint's job cannot be resumed without its own plan. Give this run a new \
             --checkpoint path",
            plan.job_id
        );
    }
    // Filters are compared as parsed (`qty>5` is `qty > 5`) where the source still parses
    // them; as text otherwise.
    let (source, dest) = plan_catalogs(factory, &plan).await?;
    let source_schema = source
        .catalog()
        .load_table(&parse_ident(&plan.source.table)?)
        .await
        .ok()
        .map(|t| t.metadata().current_schema().clone());
    same_job(&plan, args, source_schema.as_deref()).with_context(|| {
        format!(
            "{pp} holds the plan of job {} with other settings; finish that job with its own \
             settings, or remove {pp} and the checkpoint to start anew",
            plan.job_id
        )
    })?;
    // The planned destination must still be the table the job writes.
    let ident = parse_ident(&plan.dest.table)?;
    let gone = if !dest.catalog().table_exists(&ident).await? {
        Some(format!(
            "the destination {} (catalog '{}') of job {}, planned in {pp}, no longer exists",
            plan.dest.table, plan.dest.catalog, plan.job_id
        ))
    } else {
        let table = dest.catalog().load_table(&ident).await?;
        let uuid = table.metadata().uuid().to_string();
        (uuid != plan.dest_uuid).then(|| {
            format!(
                "the destination {} (catalog '{}') is no longer the table job {} was planned \
                 for in {pp} (UUID {} then, {uuid} now: it was dropped and created again)",
                plan.dest.table, plan.dest.catalog, plan.job_id, plan.dest_uuid
            )
        })
    };
    let Some(gone) = gone else {
        return Ok(StoredJob::Resume(Box::new(plan)));
    };
    if !args.create_dest {
        bail!(
            "{gone}, so the job cannot be resumed. Pass --create-dest to plan a new job \
             (creating the destination if it is missing), or delete {ck} and {pp}"
        );
    }
    // Nothing the checkpoint records is in any table any more: it goes, and a new job starts.
    eprintln!("{gone}; planning a new job (--create-dest), replacing {ck} and {pp}");
    remove_checkpoint(checkpoint)?;
    Ok(StoredJob::New)
}

/// Removes a checkpoint found stale, before a new job's plan replaces its job's: a stop in
/// between then leaves a plan without a checkpoint, which the next run ignores.
#[cfg(feature = "cluster")]
fn remove_checkpoint(checkpoint: &std::path::Path) -> anyhow::Result<()> {
    std::fs::remove_file(checkpoint)
        .with_context(|| format!("remove the stale checkpoint {}", checkpoint.display()))
}

/// What to undo before a new job copies the rows a checkpoint's job committed again: only an
/// append writes them twice.
#[cfg(feature = "cluster")]
fn undo_advice(args: &MigrateArgs, job: &ops_checkpoint::JobIdentity) -> String {
    if args.write_mode != Mode::Append {
        return String::new();
    }
    let dest = format!(
        "{} --catalog {}",
        args.job.dest(),
        args.job
            .dest_catalog
            .as_deref()
            .unwrap_or(&args.job.source_catalog)
    );
    match job.get("dest_snapshot_before").and_then(Value::as_i64) {
        Some(id) => format!(
            ", after rolling the destination back to snapshot {id} (`iceberg-ops table \
             rollback {dest} --to {id}`), or a new job appends the committed rows again"
        ),
        None => format!(
            ", after emptying the destination, which had no snapshot before the job \
             (`iceberg-ops table delete {dest} --where true`), or a new job appends the \
             committed rows again"
        ),
    }
}

/// Whether `plan` is the job these arguments describe (tables, batch size, modes, filter,
/// reconciler).
#[cfg(feature = "cluster")]
fn same_job(
    plan: &MigrationPlan,
    args: &MigrateArgs,
    source_schema: Option<&iceberg::spec::Schema>,
) -> anyhow::Result<()> {
    let job = &args.job;
    let dest_catalog = job.dest_catalog.as_deref().unwrap_or(&job.source_catalog);
    let differs = |what: &str, planned: String, now: String| -> anyhow::Result<()> {
        if planned != now {
            bail!("{what}: planned {planned}, now {now}");
        }
        Ok(())
    };
    differs(
        "source",
        format!("{}.{}", plan.source.catalog, plan.source.table),
        format!("{}.{}", job.source_catalog, parse_ident(job.source())?),
    )?;
    differs(
        "destination",
        format!("{}.{}", plan.dest.catalog, plan.dest.table),
        format!("{dest_catalog}.{}", parse_ident(job.dest())?),
    )?;
    differs(
        "--batch-rows",
        plan.batch_rows.to_string(),
        args.batch_rows.to_string(),
    )?;
    differs(
        "--compact",
        plan.compact.to_string(),
        args.compact.to_string(),
    )?;
    differs(
        "--expire-job-snapshots",
        plan.expire_job_snapshots.to_string(),
        args.expire_job_snapshots.to_string(),
    )?;
    let write_mode = match args.write_mode {
        Mode::Append => WriteMode::Append,
        Mode::Upsert => WriteMode::Upsert,
        Mode::OverwritePartition => WriteMode::OverwritePartition,
    };
    differs(
        "--write-mode",
        format!("{:?}", plan.write_mode),
        format!("{write_mode:?}"),
    )?;
    let copy_mode = match args.copy_mode {
        CopyMode::Auto => ops_datamig::CopyMode::Auto,
        CopyMode::Rewrite => ops_datamig::CopyMode::Rewrite,
        CopyMode::Files => ops_datamig::CopyMode::Files,
        CopyMode::Reference => ops_datamig::CopyMode::Reference,
    };
    differs(
        "--copy-mode",
        format!("{:?}", plan.copy_mode),
        format!("{copy_mode:?}"),
    )?;
    let normal = |text: String| -> String {
        source_schema
            .and_then(|schema| ops_core::filter::parse_filter(&text, schema).ok())
            .map_or(text, |p| p.to_string())
    };
    differs(
        "--row-filter",
        format!(
            "{:?}",
            plan.row_filter.as_ref().map(|f| normal(f.describe()))
        ),
        format!("{:?}", job.row_filter.clone().map(normal)),
    )?;
    differs(
        "column mappings and coercions",
        serde_json::to_string(&plan.reconciler)?,
        serde_json::to_string(&reconciler(job)?)?,
    )?;
    Ok(())
}

#[cfg(not(feature = "cluster"))]
async fn run_on_cluster(
    _factory: &CatalogFactory,
    _url: &str,
    _m: DataMigrator,
    _args: &MigrateArgs,
) -> anyhow::Result<()> {
    Err(crate::cluster_cmd::not_built())
}

pub async fn run_verify(factory: &CatalogFactory, args: VerifyArgs) -> anyhow::Result<()> {
    let hint = FlagHint::of(&args.job);
    let m = migrator(factory, &args.job).await?;
    let v = m
        .verify(args.method.into(), args.sample_size)
        .await
        .map_err(|e| hint.apply(anyhow::Error::new(e)))?;
    match args.output {
        Output::Json => crate::report::print_json(&v)?,
        Output::Text => print_verification(&v),
    }
    if !v.matches {
        bail!("verification failed: the destination does not match the source");
    }
    Ok(())
}

/// The source snapshot the job is pinned to against the source's current one (the wording of
/// a job found complete): a warning when the source moved on, since a resumed job does not
/// copy the rows committed since.
fn print_source_snapshots(r: &MigrationResult) {
    if let Some(s) = &r.source_snapshots {
        if s.changed() {
            println!("warning   {s}");
        } else {
            println!("source    {s}");
        }
    }
}

/// What ran after the last batch: the job's compaction and snapshot expiry.
fn print_job_finish(r: &MigrationResult) {
    if let Some(c) = &r.compaction {
        match c.snapshot_id {
            Some(s) => println!(
                "compacted {} file(s) the job wrote into {} (snapshot {s})",
                c.input_files, c.output_files
            ),
            None => println!("compacted nothing: the job's files need no compaction"),
        }
    }
    if let Some(x) = &r.expiry {
        println!(
            "expired   {} snapshot(s) of the job; {}",
            x.expired_snapshots.len(),
            if x.kept_files {
                "files kept (gc.enabled=false)".to_string()
            } else {
                format!(
                    "deleted {} data file(s), {} manifest(s) and lists",
                    x.deleted_data_files, x.deleted_manifests
                )
            }
        );
        if let Some(why) = &x.cleanup_skipped {
            println!("          files not deleted: {why}");
        }
    }
}

fn print_result(job: &Job, r: &MigrationResult) {
    let rate = r.rows_moved as f64 / r.duration_seconds.max(1e-9);
    if r.dry_run {
        println!(
            "dry run   {} → {}: would move {} rows ({} bytes in memory); nothing written",
            job.source_named(),
            job.dest(),
            r.estimated_rows.unwrap_or(0),
            r.estimated_bytes.unwrap_or(0)
        );
    } else {
        println!(
            "migrated  {} → {}: {} rows in {} commit(s), {:.2}s ({rate:.0} rows/s)",
            job.source_named(),
            job.dest(),
            r.rows_moved,
            r.new_snapshots.len(),
            r.duration_seconds
        );
        if r.batches_skipped + r.batches_landed > 0 {
            println!(
                "resumed   {} batch(es) were already in the destination{}",
                r.batches_skipped + r.batches_landed,
                match r.batches_landed {
                    0 => String::new(),
                    n => format!(
                        " ({n} committed by the interrupted run but not checkpointed: found by \
                         their snapshot tags, not written again)"
                    ),
                }
            );
        }
        print_source_snapshots(r);
        // A job that committed nothing (an upsert that changed no row, and no earlier run of
        // it landed a batch) has nothing to undo.
        let committed = !r.new_snapshots.is_empty() || r.batches_skipped + r.batches_landed > 0;
        if let Some(before) = r.dest_snapshot_before.filter(|_| committed) {
            // Once the job's snapshots are expired, the current snapshot's parent is gone:
            // `before` is no longer reachable as an ancestor, and rollback (ancestors only)
            // refuses it; set-current-snapshot takes any snapshot the table still has.
            let undo = match &r.expiry {
                Some(x) if !x.expired_snapshots.is_empty() => "set-current-snapshot",
                _ => "rollback",
            };
            // The catalog is named: without it the command would look in the default one.
            println!(
                "undo      iceberg-ops table {undo} {} --catalog {} --to {before}",
                job.dest(),
                job.dest_catalog.as_deref().unwrap_or(&job.source_catalog)
            );
        }
        if let (Some(i), Some(u)) = (r.rows_inserted, r.rows_updated) {
            println!("upsert    {i} inserted, {u} updated");
        }
        print_job_finish(r);
    }
    if !r.schema_changes.is_empty() {
        println!("schema    added {}", r.schema_changes.join(", "));
    }
    print_routes(r);
    if let Some(p) = &r.plan {
        for w in &p.warnings {
            println!("warning   {w}");
        }
    }
    if let Some(path) = &r.checkpoint_path {
        println!("checkpoint {}", path.display());
    }
}

/// The files line of a run's report: how many source files took each route.
fn routes_line(r: &MigrationResult) -> String {
    // "1 copied" reads as done; a dry run says it would be.
    let lead = if r.dry_run { "would be " } else { "" };
    // An upsert reads every source file and writes only the rows that change: "N rewritten"
    // after one that changed nothing read as if it had written them.
    if r.rows_inserted.is_some() {
        return format!(
            "files     {lead}{} read and merged by key (an upsert writes only the rows that \
             change)",
            r.files_rewritten
        );
    }
    // Skipped files (no row to move) are counted too: the line adds up to the source's files.
    let skipped = r
        .files
        .iter()
        .filter(|f| f.route == ops_datamig::FileRoute::Skip)
        .count();
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    format!(
        "files     {lead}{} copied, {} referenced, {} rewritten{skipped} (--copy-mode {})",
        r.files_copied, r.files_referenced, r.files_rewritten, r.copy_mode
    )
}

/// Which path the files took, with each distinct reason once.
fn print_routes(r: &MigrationResult) {
    if r.files.is_empty() {
        return;
    }
    println!("{}", routes_line(r));
    let mut reasons: std::collections::BTreeMap<(String, &str), usize> = Default::default();
    for f in &r.files {
        *reasons
            .entry((f.route.to_string(), &*f.reason))
            .or_default() += 1;
    }
    for ((route, reason), n) in reasons {
        println!("          {n} × {route}: {reason}");
    }
    if r.files_referenced > 0 {
        println!(
            "note      the destination shares {} data file(s) with the source: expiring or \
             cleaning either table can remove files the other still reads",
            r.files_referenced
        );
    }
}

fn print_verification(v: &VerificationResult) {
    let verdict = if v.matches { "match" } else { "MISMATCH" };
    let counts = match (v.source_count, v.dest_count) {
        (Some(s), Some(d)) => format!(": source {s} rows, destination {d} rows"),
        _ => String::new(),
    };
    println!("verify    {} {verdict}{counts}", v.method);
    if let Some(n) = v.sample_size {
        // The sample is taken on each side (the rows with the smallest hashes), so the rows
        // that differ can be up to twice as many.
        println!("          up to {n} row(s) sampled on each side and compared");
    }
    for d in &v.details {
        println!("          {d}");
    }
}

/// Progress on stderr: a bar on a terminal, throttled plain lines otherwise.
struct Reporter {
    inner: std::sync::Arc<ReporterInner>,
}

struct ReporterInner {
    bar: Option<indicatif::ProgressBar>,
    plain: bool,
    last: Mutex<Option<Instant>>,
    started: Instant,
}

impl Reporter {
    fn new(plain_allowed: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = terminal.then(|| {
            let bar = indicatif::ProgressBar::new(0);
            let style = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows \
                 ({per_sec}, ETA {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Self {
            inner: std::sync::Arc::new(ReporterInner {
                bar,
                plain: !terminal && plain_allowed,
                last: Mutex::new(None),
                started: Instant::now(),
            }),
        }
    }

    fn clone_handle(&self) -> std::sync::Arc<ReporterInner> {
        self.inner.clone()
    }

    fn finish(&self) {
        if let Some(bar) = &self.inner.bar {
            bar.finish_and_clear();
        }
    }
}

impl ReporterInner {
    fn update(&self, done: u64, total: Option<u64>) {
        if let Some(bar) = &self.bar {
            match total {
                Some(t) => bar.set_length(t),
                None => bar.set_length(done),
            }
            bar.set_position(done);
            return;
        }
        if !self.plain {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if last.is_some_and(|l| now.duration_since(l) < Duration::from_secs(2))
            && total != Some(done)
        {
            return;
        }
        *last = Some(now);
        let secs = now.duration_since(self.started).as_secs_f64().max(1e-9);
        let total = total.map_or("?".to_string(), |t| t.to_string());
        eprintln!(
            "progress  {done}/{total} rows ({:.0} rows/s)",
            done as f64 / secs
        );
    }
}

#[cfg(all(test, feature = "cluster"))]
mod tests {
    use super::*;
    use clap::Parser;
    use iceberg::spec::{NestedField, PrimitiveType, Schema};
    use ops_datamig::RowFilter;

    /// A missing table's error names the flag of the catalog it was looked up in; a table the
    /// catalog found but could not load keeps its cause alone, not a hint to check its name.
    #[test]
    fn only_a_missing_table_gets_the_hint_to_check_its_name() {
        let hint = FlagHint {
            source: "src.orders".into(),
            source_catalog: "lake".into(),
            dest: "dst.orders".into(),
            dest_catalog: "warehouse".into(),
        };
        let missing = hint.apply(anyhow::anyhow!(
            "cannot load table dst.orders (catalog 'warehouse'): TableNotFound => No such table: \
             dst.orders"
        ));
        let text = format!("{missing:#}");
        assert!(text.contains("--dest-catalog"), "{text}");
        assert!(text.contains("check the table name"), "{text}");
        assert!(text.contains("`iceberg-ops table list"), "{text}");
        let invalid = hint.apply(anyhow::anyhow!(
            "cannot read table src.orders (catalog 'lake'): DataInvalid => float is not a valid \
             input type of bucket transform"
        ));
        let text = format!("{invalid:#}");
        assert!(text.contains("bucket transform"), "{text}");
        assert!(!text.contains("check the table name"), "{text}");
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: MigrateArgs,
    }

    fn args(filter: &str) -> anyhow::Result<MigrateArgs> {
        Ok(Cli::try_parse_from([
            "migrate-data",
            "--source-catalog",
            "lake",
            "--source",
            "src.orders",
            "--dest",
            "dst.orders",
            "--batch-rows",
            "10",
            "--row-filter",
            filter,
        ])?
        .args)
    }

    /// `--where` is `--row-filter`, as `table compact` and `table delete` spell the filter (a
    /// new user's first try was refused as an unknown argument).
    #[test]
    fn where_is_the_row_filter() -> anyhow::Result<()> {
        let a = Cli::try_parse_from([
            "migrate-data",
            "--source",
            "src.orders",
            "--dest",
            "dst.orders",
            "--where",
            "id < 5",
        ])?
        .args;
        assert_eq!(a.job.row_filter.as_deref(), Some("id < 5"));
        Ok(())
    }

    /// `--catalog`, as the `table` commands take it, names the catalog of both tables (a new
    /// user's first try was refused, with a tip pointing at `--dest-catalog`).
    #[test]
    fn catalog_names_the_catalog_of_both_tables() -> anyhow::Result<()> {
        let a = Cli::try_parse_from([
            "migrate-data",
            "--catalog",
            "lake",
            "--source",
            "src.orders",
            "--dest",
            "dst.orders",
        ])?
        .args;
        assert_eq!(a.job.source_catalog, "lake");
        assert_eq!(a.job.dest_catalog, None);
        // Beside --source-catalog it would name the source's twice.
        assert!(
            Cli::try_parse_from([
                "migrate-data",
                "--catalog",
                "lake",
                "--source-catalog",
                "other",
                "--source",
                "a.b",
                "--dest",
                "c.d",
            ])
            .is_err()
        );
        Ok(())
    }

    fn plan(filter: &str, a: &MigrateArgs) -> anyhow::Result<MigrationPlan> {
        Ok(MigrationPlan {
            reconciler: reconciler(&a.job)?,
            row_filter: Some(RowFilter::Expression(filter.into())),
            tasks: Vec::new(),
            ..MigrationPlan::example()
        })
    }

    #[test]
    fn a_resume_compares_filters_as_parsed() -> anyhow::Result<()> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "qty", Type::Primitive(PrimitiveType::Int)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let now = args("qty>5 AND region='eu'")?;
        let planned = plan("qty > 5 and region = 'eu'", &now)?;
        same_job(&planned, &now, Some(&schema))?;
        // Another filter is another job, parsed or not.
        let other = args("qty > 6 and region = 'eu'")?;
        let err = same_job(&planned, &other, Some(&schema))
            .err()
            .ok_or_else(|| anyhow::anyhow!("another filter was taken for the same job"))?;
        assert!(err.to_string().contains("--row-filter"), "{err}");
        // Without the schema (the source gone), only the same text is the same job.
        assert!(same_job(&planned, &now, None).is_err());
        same_job(&planned, &args("qty > 5 and region = 'eu'")?, None)?;
        Ok(())
    }
}

#[cfg(test)]
mod report_tests {
    use super::*;

    #[test]
    fn an_upsert_reports_files_read_not_rewritten() {
        let mut r = MigrationResult {
            files_rewritten: 3,
            ..Default::default()
        };
        assert!(
            routes_line(&r).contains("3 rewritten"),
            "{}",
            routes_line(&r)
        );
        assert!(!routes_line(&r).contains("skipped"), "{}", routes_line(&r));
        // A skipped file is counted, so the line adds up to the source's files.
        r.files = vec![ops_datamig::RoutedFile {
            path: "s3://b/f.parquet".into(),
            route: ops_datamig::FileRoute::Skip,
            reason: "no row can match the row filter".into(),
            record_count: 1,
            file_size_in_bytes: 1,
        }];
        assert!(
            routes_line(&r).contains("3 rewritten, 1 skipped"),
            "{}",
            routes_line(&r)
        );
        r.rows_inserted = Some(0);
        r.rows_updated = Some(0);
        let line = routes_line(&r);
        assert!(
            line.contains("3 read and merged by key") && !line.contains("rewritten"),
            "{line}"
        );
        r.dry_run = true;
        assert!(
            routes_line(&r).contains("would be 3 read"),
            "{}",
            routes_line(&r)
        );
    }
}
