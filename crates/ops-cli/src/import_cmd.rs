//! `iceberg-ops import`: bring existing Parquet files into Iceberg tables (ops-import).

use clap::Subcommand;
use ops_core::CatalogFactory;
use ops_import::add_files::{AddFilesBuilder, AddFilesMetrics, AddedFile};
use ops_import::spill::Spilled;

use crate::migrate_cmd::Output;
use crate::report::print_json;
use crate::table_cmd::parse_ident;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Register existing Parquet files in a table, in place (nothing rewritten), in one commit.
    /// Partitions come from `key=value` folders (checked against the files' statistics) or
    /// from the statistics; files without field ids are read through the table's name mapping.
    AddFiles(AddFilesArgs),
    /// Create a new table over existing Parquet files, left in place: schema from the files'
    /// union, identity partitions from their `key=value` folders, `gc.enabled=false` (expiry
    /// and orphan cleanup never delete the source's files). `add-files --new-only` later adds
    /// what arrived since.
    Snapshot(SnapshotArgs),
    /// Replace a Glue Hive table by an Iceberg table of the same name over the same files (Glue
    /// catalogs): its definition and partitions are copied to a backup, the Iceberg table is
    /// staged, then one UpdateTable guarded by the table's VersionId swaps it in. A failure
    /// restores the Hive table; a stopped run, run again, finishes.
    Migrate(MigrateArgs),
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The Hive table, as glue:DATABASE.TABLE.
    #[arg(long, value_name = "glue:DATABASE.TABLE")]
    source: String,
    /// The Glue catalog holding it (a catalog of type glue in your config).
    #[arg(long)]
    catalog: String,
    /// The backup's name (default: TABLE_backup_, as Java's migrate names it).
    #[arg(long, value_name = "NAME")]
    backup_name: Option<String>,
    /// Drop the backup once the table is migrated (gc.enabled is then set back to true).
    #[arg(long)]
    drop_backup: bool,
    /// Footers read at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("src").required(true).args(["source_path", "source"])))]
pub struct SnapshotArgs {
    /// The source: folders, files or globs (local paths, file:// or s3:// URIs).
    #[arg(long = "source-path", num_args = 1.., value_name = "PATH")]
    source_path: Vec<String>,
    /// The source: a Glue Hive table, as glue:DATABASE.TABLE (schema from its columns,
    /// partition columns from its partition keys, files from its partitions' locations).
    #[arg(long, value_name = "glue:DATABASE.TABLE")]
    source: Option<String>,
    /// The Glue catalog (a catalog of type glue in your config) a glue: source is read
    /// through; default: --catalog, when it is a Glue catalog.
    #[arg(long, value_name = "NAME")]
    source_catalog: Option<String>,
    /// The new table, as NAMESPACE.TABLE (the namespace is created when missing).
    #[arg(long)]
    dest: String,
    /// Catalog to create it in.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
    /// Print the schema and partition columns it would create; create nothing.
    #[arg(long)]
    dry_run: bool,
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

#[derive(Debug, clap::Args)]
pub struct AddFilesArgs {
    /// Table as NAMESPACE.TABLE.
    #[arg(long)]
    table: String,
    /// Catalog holding it.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
    /// Files, folders (their trees) or globs (`*`, `?`, `**`): local paths, file:// or s3://
    /// URIs; or a Glue Hive table, glue:DATABASE.TABLE (its partitions' files, with their
    /// partition values).
    #[arg(long = "from", required = true, num_args = 1.., value_name = "PATH")]
    from: Vec<String>,
    /// The Glue catalog (a catalog of type glue in your config) glue: names are read through;
    /// default: --catalog, when it is a Glue catalog.
    #[arg(long, value_name = "NAME")]
    source_catalog: Option<String>,
    /// Only files under this `key=value` folder (repeatable: all must hold). `k=null` is the
    /// NULL folder (`__HIVE_DEFAULT_PARTITION__`); `k="null"`, quoted, a folder of the text null.
    #[arg(long = "partition-filter", value_name = "KEY=VALUE")]
    partition_filter: Vec<String>,
    /// Add files the table already lists or that are named twice (their rows are read twice).
    #[arg(long)]
    allow_duplicate_files: bool,
    /// Print every file with its partition and rows; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Footers read at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Commit every N files (one append each) instead of all at once.
    #[arg(long, value_name = "N")]
    batch_files: Option<usize>,
    /// Add only the files the table does not list yet (skip the others), and report files it
    /// lists under the folders named that are gone.
    #[arg(long)]
    new_only: bool,
    /// With --new-only: remove from the table the files it lists under the folders named that
    /// are gone (their rows leave the table; while listed, every read of the table fails).
    #[arg(long, requires = "new_only")]
    remove_missing: bool,
    /// Record the job's committed batches here; run again with it after a failure to resume
    /// (files the earlier run committed are skipped). Removed when the job completes.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub async fn run(factory: &CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::AddFiles(args) => add_files(factory, args).await,
        Command::Snapshot(args) => snapshot(factory, args).await,
        Command::Migrate(args) => migrate(factory, args).await,
    }
}

async fn migrate(factory: &CatalogFactory, args: MigrateArgs) -> anyhow::Result<()> {
    let Some(parsed) = ops_import::glue::parse_name(&args.source) else {
        anyhow::bail!(
            "--source '{}' is not glue:DATABASE.TABLE (import migrate replaces Glue Hive tables)",
            args.source
        );
    };
    let (database, table) = parsed?;
    let handle = factory.open(&args.catalog).await?;
    let mut builder = ops_import::migrate::MigrateBuilder::new(&handle, database, table)
        .drop_backup(args.drop_backup)
        .concurrency(args.concurrency);
    if let Some(name) = &args.backup_name {
        builder = builder.backup_name(name);
    }
    let (_, m) = builder.await?;
    if args.output == Output::Json {
        return print_json(&serde_json::json!({
            "table": m.table,
            "backup": m.backup,
            "backup_dropped": m.backup_dropped,
            "backup_kept": m.backup_kept,
            "already_migrated": m.already_migrated,
            "metadata_location": m.metadata_location,
            "columns": m.columns,
            "partition_columns": m.partition_columns,
            "added_files": m.add.files.len(),
            "added_records": m.add.records,
            "snapshot_id": m.add.snapshot_id,
            "partitions_removed": m.partitions_removed,
            "partitions_left": m.partitions_left,
            "partitions_not_migrated": m.partitions_not_migrated,
        }));
    }
    if m.already_migrated {
        println!("{} was migrated by an earlier run", m.table);
    } else {
        let rows = m.add.records;
        println!(
            "migrated {} to Iceberg in place: {} file(s), {rows} rows (metadata {})",
            m.table,
            m.add.files.len(),
            m.metadata_location.as_deref().unwrap_or("-")
        );
        for c in &m.columns {
            println!("  {c}");
        }
        if !m.partition_columns.is_empty() {
            println!(
                "  partitioned by identity({})",
                m.partition_columns.join(", ")
            );
        }
    }
    if !m.partitions_not_migrated.is_empty() {
        println!(
            "  warning: {} partition(s) were added to the Hive table during the migration and \
             are not in the Iceberg table: {:?}; add their files with import add-files",
            m.partitions_not_migrated.len(),
            m.partitions_not_migrated
        );
    }
    if m.partitions_left > 0 {
        println!(
            "  {} old Hive partition entr(ies) could not be removed from Glue (harmless; run \
             the migration again to remove them)",
            m.partitions_left
        );
    }
    if m.backup_dropped {
        println!("  backup {} dropped; gc.enabled=true", m.backup);
    } else if !m.backup_kept {
        println!(
            "  no backup {} (dropped by an earlier run, or made under another --backup-name)",
            m.backup
        );
    } else {
        println!(
            "  the Hive definition is kept as {} (gc.enabled=false while it shares the files; \
             --drop-backup drops it)",
            m.backup
        );
    }
    Ok(())
}

async fn snapshot(factory: &CatalogFactory, args: SnapshotArgs) -> anyhow::Result<()> {
    let ident = parse_ident(&args.dest)?;
    let handle = factory.open(&args.catalog).await?;
    let source = match &args.source {
        Some(name) => {
            if !name.starts_with(ops_import::glue::GLUE_PREFIX) {
                anyhow::bail!(
                    "--source '{name}' is not glue:DATABASE.TABLE; give folders or files with \
                     --source-path"
                );
            }
            vec![name.clone()]
        }
        None => args.source_path.clone(),
    };
    let mut builder = ops_import::snapshot::SnapshotBuilder::new(&handle, ident)
        .from(source)
        .dry_run(args.dry_run);
    if let Some(glue) = glue_client(factory, args.source_catalog.as_deref()).await? {
        builder = builder.glue(glue);
    }
    let (_, m) = builder.await?;
    if args.output == Output::Json {
        return print_json(&serde_json::json!({
            "table": args.dest,
            "dry_run": args.dry_run,
            "columns": m.columns,
            "partition_columns": m.partition_columns,
            "files": m.files,
            "added_files": m.add.files.len(),
            "added_records": m.add.records,
            "snapshot_id": m.add.snapshot_id,
        }));
    }
    let verb = if args.dry_run {
        "would create"
    } else {
        "created"
    };
    println!(
        "{verb} {} (gc.enabled=false: the files stay the source's) over {} file(s)",
        args.dest, m.files
    );
    for c in &m.columns {
        println!("  {c}");
    }
    if !m.partition_columns.is_empty() {
        println!(
            "  partitioned by identity({})",
            m.partition_columns.join(", ")
        );
    }
    if !args.dry_run {
        print_text(&args.dest, &m.add)?;
    }
    Ok(())
}

async fn add_files(factory: &CatalogFactory, args: AddFilesArgs) -> anyhow::Result<()> {
    let ident = parse_ident(&args.table)?;
    let handle = factory.open(&args.catalog).await?;
    // Said here, where the catalog's name is known: the builder's error names only the table.
    if !handle.catalog().table_exists(&ident).await.unwrap_or(true) {
        let catalog_args = crate::invocation::command_args(&args.catalog);
        anyhow::bail!(
            "catalog '{}' has no table {} (--catalog; {} lists its tables): add-files adds to \
             an existing table; `iceberg-ops import snapshot --source-path PATH --dest {}{}` \
             creates one over the files",
            args.catalog,
            args.table,
            crate::invocation::table_list_command(&args.catalog),
            args.table,
            if catalog_args.is_empty() {
                String::new()
            } else {
                format!(" {catalog_args}")
            }
        );
    }
    let mut builder = AddFilesBuilder::new(&handle, ident)
        .from(args.from)
        .allow_duplicate_files(args.allow_duplicate_files)
        .dry_run(args.dry_run)
        .concurrency(args.concurrency)
        .new_only(args.new_only)
        .remove_missing(args.remove_missing);
    if let Some(n) = args.batch_files {
        builder = builder.batch_files(n);
    }
    if let Some(glue) = glue_client(factory, args.source_catalog.as_deref()).await? {
        builder = builder.glue(glue);
    }
    if let Some(path) = &args.checkpoint {
        builder = builder.checkpoint(path);
    }
    for f in &args.partition_filter {
        let Some((k, v)) = f.split_once('=') else {
            anyhow::bail!("--partition-filter '{f}' is not KEY=VALUE (e.g. dt=2024-01-01)");
        };
        builder = builder.partition_filter(k, v);
    }
    let (_, m) = builder.await?;
    match args.output {
        Output::Json => print_json(&report(&args.table, &m)),
        Output::Text => print_text(&args.table, &m),
    }
}

/// The Glue a `--source-catalog` names (`None`: not given; the destination's catalog is used
/// when it is a Glue catalog).
async fn glue_client(
    factory: &CatalogFactory,
    name: Option<&str>,
) -> anyhow::Result<Option<ops_import::glue::GlueClient>> {
    let Some(name) = name else {
        return Ok(None);
    };
    let handle = factory.open(name).await?;
    Ok(Some(ops_import::glue::GlueClient::of(&handle).await?))
}

#[derive(serde::Serialize)]
struct Report<'a> {
    table: &'a str,
    dry_run: bool,
    snapshot_id: Option<i64>,
    snapshot_ids: &'a [i64],
    already_added: usize,
    removed_before: usize,
    removed_before_example: Option<&'a str>,
    disappeared: &'a [String],
    removed_missing: usize,
    added_files: usize,
    added_records: u64,
    hidden_skipped: usize,
    filtered_out: usize,
    name_mapping_created: bool,
    name_mapping_extended: bool,
    files: FileReports<'a>,
}

/// The report's files, serialized as they are read back (a million would not fit as a list
/// of values).
struct FileReports<'a>(&'a Spilled<AddedFile>);

impl serde::Serialize for FileReports<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for f in self.0.iter() {
            let f = f.map_err(S::Error::custom)?;
            seq.serialize_element(&FileReport {
                path: &f.path,
                partition: &f.partition,
                record_count: f.record_count,
                size: f.size,
            })?;
        }
        seq.end()
    }
}

#[derive(serde::Serialize)]
struct FileReport<'a> {
    path: &'a str,
    partition: &'a str,
    record_count: u64,
    size: u64,
}

fn report<'a>(table: &'a str, m: &'a AddFilesMetrics) -> Report<'a> {
    Report {
        table,
        dry_run: m.dry_run,
        snapshot_id: m.snapshot_id,
        snapshot_ids: &m.snapshot_ids,
        already_added: m.already_added,
        removed_before: m.removed_before,
        removed_before_example: m.removed_before_example.as_deref(),
        disappeared: &m.disappeared,
        removed_missing: m.removed_missing,
        added_files: m.files.len(),
        added_records: m.records,
        hidden_skipped: m.hidden,
        filtered_out: m.filtered_out,
        name_mapping_created: m.name_mapping_created,
        name_mapping_extended: m.name_mapping_extended,
        files: FileReports(&m.files),
    }
}

fn print_text(table: &str, m: &AddFilesMetrics) -> anyhow::Result<()> {
    let rows = m.records;
    if m.dry_run {
        for f in m.files.iter() {
            let f = f?;
            let partition = if f.partition.is_empty() {
                String::new()
            } else {
                format!("  {}", f.partition)
            };
            println!("{}{partition}  {} rows", f.path, f.record_count);
        }
        println!(
            "dry run: would add {} file(s), {rows} rows, to {table}; nothing written",
            m.files.len()
        );
    } else if m.snapshot_ids.is_empty() {
        println!("nothing new to add to {table}");
    } else if m.snapshot_ids.len() > 1 {
        println!(
            "added {} file(s), {rows} rows, to {table} in {} snapshots (last {})",
            m.files.len(),
            m.snapshot_ids.len(),
            m.snapshot_id
                .map_or_else(|| "-".to_string(), |s| s.to_string())
        );
    } else {
        println!(
            "added {} file(s), {rows} rows, to {table} in snapshot {}",
            m.files.len(),
            m.snapshot_id
                .map_or_else(|| "-".to_string(), |s| s.to_string())
        );
    }
    if m.already_added > 0 {
        println!(
            "  {} file(s) the table lists already skipped",
            m.already_added
        );
    }
    if m.removed_before > 0 {
        println!(
            "  {} file(s) the table held before and a later commit removed (a compaction that \
             rewrote them, or a delete) skipped, e.g. {}: their rows are in the table in another \
             form, or were deleted on purpose",
            m.removed_before,
            m.removed_before_example.as_deref().unwrap_or("-")
        );
    }
    if !m.disappeared.is_empty() {
        if m.removed_missing > 0 {
            println!(
                "  {} file(s) the table listed are gone from the folders named; removed from the \
                 table (their rows with them):",
                m.removed_missing
            );
        } else {
            println!(
                "  {} file(s) the table lists are gone from the folders named (every read of the \
                 table fails while it lists them{}):",
                m.disappeared.len(),
                if m.dry_run {
                    "; without --dry-run, --remove-missing removes them"
                } else {
                    "; --remove-missing removes them"
                }
            );
        }
        for d in &m.disappeared {
            println!("    {d}");
        }
    }
    if m.hidden > 0 {
        println!(
            "  {} hidden entr(ies) skipped (names starting with _ or .)",
            m.hidden
        );
    }
    if m.filtered_out > 0 {
        println!(
            "  {} file(s) left out by --partition-filter",
            m.filtered_out
        );
    }
    if m.name_mapping_created {
        println!(
            "  {}, so readers find the columns of files without field ids",
            if m.dry_run {
                "the table has no name mapping: one would be created from its schema"
            } else {
                "the table had no name mapping: one was created from its schema"
            }
        );
    } else if m.name_mapping_extended {
        println!(
            "  the files' spellings of column names {} to the name mapping",
            if m.dry_run {
                "would be added"
            } else {
                "were added"
            }
        );
    }
    Ok(())
}
