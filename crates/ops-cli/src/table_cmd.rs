//! `iceberg-ops table ...`: inspect a table and undo a bad change.

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use iceberg::spec::{NestedField, Type};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableIdent};
use ops_core::CatalogFactory;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::rollback::RollbackBuilder;
use ops_maintenance::compact::{CompactBuilder, CompactMetrics};
use ops_maintenance::expire_snapshots::{ExpireMetrics, ExpireSnapshotsBuilder};
use ops_maintenance::remove_dangling_deletes::RemoveDanglingDeletesBuilder;
use ops_maintenance::remove_orphans::{OrphanMetrics, RemoveOrphansBuilder};
use ops_maintenance::sort::SortSpec;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Target {
    /// Table as NAMESPACE.TABLE (nested namespaces: a.b.TABLE).
    table: String,
    /// Catalog holding it.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the tables of a namespace, or of every namespace (nested ones too) when NS is omitted.
    List {
        /// Namespace, e.g. sales or a.b; every namespace when omitted.
        #[arg(value_name = "NS")]
        namespace: Option<String>,
        /// Catalog to list.
        #[arg(long, default_value_t = crate::invocation::default_catalog())]
        catalog: String,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// List snapshots: id, parent, sequence number, time, operation and summary; `*` marks main.
    Snapshots {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Show the current schema with field ids, and the partition spec.
    Schema {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Delete the rows where a filter is TRUE (copy-on-write, one commit). Rows where it is
    /// NULL are kept, as in SQL.
    Delete {
        #[command(flatten)]
        target: Target,
        /// The rows to delete, e.g. "region = 'eu' AND qty > 5".
        #[arg(long = "where", value_name = "EXPR")]
        filter: String,
        /// Plan and print what would be deleted, without writing anything.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Move main back to an ancestor snapshot (one commit; nothing is deleted).
    Rollback {
        #[command(flatten)]
        target: Target,
        /// The snapshot to return to; must be an ancestor of the current one.
        #[arg(long = "to", value_name = "SNAPSHOT_ID", allow_negative_numbers = true)]
        to: i64,
    },
    /// Make any snapshot of the table main's current one, ancestor or not (one commit; nothing
    /// is deleted): Java's `ManageSnapshots.setCurrentSnapshot`.
    SetCurrentSnapshot {
        #[command(flatten)]
        target: Target,
        /// The snapshot main should point at.
        #[arg(long = "to", value_name = "SNAPSHOT_ID", allow_negative_numbers = true)]
        to: i64,
    },
    /// Remove old snapshots from the metadata (one commit), then delete the manifest lists,
    /// manifests and data/delete files no remaining snapshot references. Branches and tags keep
    /// what they need; the table's history.expire.* properties give the defaults.
    ExpireSnapshots {
        #[command(flatten)]
        target: Target,
        /// Expire snapshots older than this: RFC 3339 (2026-01-31T00:00:00Z), a date
        /// (2026-01-31, midnight UTC), milliseconds since the epoch, or an age (7d, 12h).
        /// Default: now minus history.expire.max-snapshot-age-ms (5 days); the output says
        /// which applied.
        #[arg(long, value_name = "TS")]
        older_than: Option<String>,
        /// Keep at least this many snapshots of every branch (default:
        /// history.expire.min-snapshots-to-keep, 1).
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        retain_last: Option<usize>,
        /// Expire this snapshot (repeatable), even within a branch's history; without
        /// --older-than, no other snapshot expires. Branch and tag heads are kept.
        #[arg(long = "snapshot-id", value_name = "ID", allow_negative_numbers = true)]
        snapshot_ids: Vec<i64>,
        /// Change the metadata only; delete no file (required on a gc.enabled=false table).
        #[arg(long)]
        keep_files: bool,
        /// Print what would be expired and deleted; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Proceed although an unfinished migration job marks the table.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Rewrite each partition's small files (under 75% of the target size), and files with
    /// position deletes, into files near the target size: one `replace` snapshot. The rows and
    /// their data sequence number are kept; a concurrent append is kept, a concurrent delete of
    /// a rewritten file aborts.
    #[command(group(clap::ArgGroup::new("commits_as_they_land")
        .args(["partial_progress", "cluster"]).multiple(true)))]
    Compact {
        #[command(flatten)]
        target: Target,
        /// Only the files that may hold rows matching this, e.g. "day >= '2026-01-01'".
        #[arg(long = "where", value_name = "EXPR")]
        filter: Option<String>,
        /// The size to aim at (default: write.target-file-size-bytes, 512 MiB).
        #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
        target_file_size: Option<u64>,
        /// Rewrite a partition only when it has at least this many small files (or a file with
        /// deletes).
        #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = ops_maintenance::compact::DEFAULT_MIN_INPUT_FILES)]
        min_input_files: usize,
        /// Commit the partition groups as they are rewritten, in up to --max-commits `replace`
        /// snapshots: a long job lands as it goes, and a commit that fails is reported while
        /// the others land. Default: one commit for the whole job.
        #[arg(long)]
        partial_progress: bool,
        /// With --partial-progress or --cluster, at most this many commits (Java's default 10).
        #[arg(long, value_name = "N", allow_negative_numbers = true, requires = "commits_as_they_land",
              default_value_t = ops_maintenance::compact::DEFAULT_MAX_COMMITS)]
        max_commits: usize,
        /// Also rewrite the files of older partition specs, whatever their size, into the
        /// table's current spec (default: left as they are, and counted).
        #[arg(long)]
        to_current_spec: bool,
        /// Sort each group's rows by the table's sort order (Spark's `strategy => 'sort'`).
        #[arg(long, conflicts_with = "sort_by")]
        sort: bool,
        /// Sort each group's rows by these columns or transforms of them:
        /// "col [ASC|DESC] [NULLS FIRST|LAST], ..." with Spark's transforms, e.g.
        /// "bucket(16, id), days(ts) DESC" (nulls first when ascending, last when descending,
        /// as Iceberg defaults).
        #[arg(long, value_name = "COLUMNS")]
        sort_by: Option<String>,
        /// Bytes of rows the sorts hold in memory (shared by the groups rewritten at once, one
        /// per core) before they spill sorted runs to temporary files under TMPDIR.
        #[arg(long, value_name = "BYTES")]
        sort_memory: Option<usize>,
        /// With --sort/--sort-by, the most input bytes sorted together (Java's
        /// max-file-group-size-bytes, default 100 GiB): a partition up to this size becomes
        /// files of consecutive key ranges. A value below the target file size counts as the
        /// target (a group is never smaller than one output file).
        #[arg(long, value_name = "BYTES")]
        max_file_group_size: Option<u64>,
        /// Print the groups that would be rewritten; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Proceed although an unfinished migration job marks the table.
        #[arg(long)]
        force: bool,
        /// Rewrite the groups as tasks on a Ballista cluster (`iceberg-ops cluster scheduler`
        /// and executors configured with the same catalog name): the groups are committed as
        /// they land, as --partial-progress commits them (up to --max-commits commits), and a
        /// group that fails is reported while the others land (`cluster` feature).
        #[arg(long, value_name = "df://HOST:PORT")]
        cluster: Option<String>,
        /// With --cluster: give up when no group has landed for this many seconds (default
        /// 3600; 0 waits for ever) — Ballista keeps a job queued while no executor is there.
        /// The groups that landed stay committed; run the command again for the rest.
        #[arg(long, value_name = "SECS", requires = "cluster")]
        stall_timeout: Option<u64>,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Delete files under the table's location that no metadata file in its log references and
    /// that are older than --older-than. Nothing outside the table location is touched.
    RemoveOrphans {
        #[command(flatten)]
        target: Target,
        /// Only files last modified longer ago than this: 3d, 12h, 90m, 3600s, 23h59m, or before a
        /// point in time (2026-01-31T00:00:00Z, 2026-01-31). Default 3d; under 24h needs
        /// --force (Spark's floor: a long write, e.g. `compact --sort`, commits hours after
        /// writing its files).
        #[arg(long, value_name = "DURATION", default_value = "3d")]
        older_than: String,
        /// List the orphans; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Accept a threshold under 24 hours (never a table an unfinished migration marks:
        /// `table abandon-migration` first, if the job is abandoned).
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Judge a table (or each table of a namespace, or --all) from its metadata: file sizes
    /// against the target, delete files, snapshots past retention, manifests, partition skew,
    /// unfinished migrations; Amoro's 0-100 score, and the command for each problem.
    Health(crate::maintain_cmd::HealthArgs),
    /// Remove delete files that can no longer apply to any live data file (one `replace`
    /// snapshot; rows unchanged): Java's remove-dangling-deletes.
    RemoveDanglingDeletes {
        #[command(flatten)]
        target: Target,
        /// List them; commit nothing.
        #[arg(long)]
        dry_run: bool,
        /// Proceed although an unfinished migration job marks the table.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Remove the running-migration marker of a job you have abandoned (one that will never be
    /// resumed or committed), so expiry and orphan cleanup accept the table again. Lists the
    /// markers when given neither --job nor --all.
    AbandonMigration {
        #[command(flatten)]
        target: Target,
        /// The job whose marker to remove (as the maintenance refusal names it).
        #[arg(long, value_name = "JOB_ID", conflicts_with = "all")]
        job: Option<String>,
        /// Remove every job's marker.
        #[arg(long)]
        all: bool,
    },
}

/// `--older-than` of expire-snapshots as milliseconds since the epoch: a timestamp (RFC 3339, a
/// date, or milliseconds since the epoch), or an age before now with its unit (3d, 12h), the
/// form remove-orphans takes.
pub fn parse_timestamp_ms(s: &str) -> anyhow::Result<i64> {
    let t = s.trim();
    if let Ok(ms) = t.parse::<i64>() {
        return Ok(ms);
    }
    if let Some(ms) = parse_point_in_time(t) {
        return Ok(ms);
    }
    if let Some(age) = ops_maintenance::policy::age(t) {
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        return Ok(chrono::Utc::now().timestamp_millis().saturating_sub(age_ms));
    }
    bail!(
        "--older-than '{s}' is neither a timestamp (RFC 3339 2026-01-31T00:00:00Z, a date \
         2026-01-31, or milliseconds since the epoch) nor an age before now (5d, 12h, 90m, 3600s, \
         23h59m)"
    )
}

/// `--older-than` of remove-orphans: an age (a number with a unit s, m, h or d), or a point in
/// time (RFC 3339 or a date), the form expire-snapshots takes. A bare number is refused: to
/// expire-snapshots it means milliseconds since the epoch, so it would mean two things.
pub fn parse_duration(s: &str) -> anyhow::Result<std::time::Duration> {
    let t = s.trim();
    if t.parse::<u64>().is_ok() {
        bail!(
            "--older-than '{s}' has no unit: write an age ({t}s, {t}m, {t}h or {t}d) or a point \
             in time (2026-01-31T00:00:00Z, 2026-01-31)"
        );
    }
    if let Some(age) = ops_maintenance::policy::age(t) {
        return Ok(age);
    }
    if let Some(ms) = parse_point_in_time(t) {
        let age_ms = chrono::Utc::now().timestamp_millis() - ms;
        if age_ms < 0 {
            bail!("--older-than '{s}' is in the future: name a point in the past, or an age (3d)");
        }
        return Ok(std::time::Duration::from_millis(age_ms.unsigned_abs()));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if split > 0 && t[split..].chars().all(char::is_alphabetic) {
        bail!(
            "--older-than '{s}': unknown unit '{}' (use s, m, h or d)",
            &t[split..]
        );
    }
    bail!(
        "--older-than '{s}' is neither an age (3d, 12h, 90m, 3600s, 23h59m) nor a point in time (RFC 3339 \
         2026-01-31T00:00:00Z or a date 2026-01-31)"
    )
}

/// An RFC 3339 timestamp or a date (midnight UTC), as milliseconds since the epoch.
fn parse_point_in_time(t: &str) -> Option<i64> {
    if let Ok(ts) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(ts.timestamp_millis());
    }
    let d = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?;
    Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

pub fn parse_ident(s: &str) -> anyhow::Result<TableIdent> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        bail!("'{s}' is not NAMESPACE.TABLE (e.g. sales.orders)");
    }
    Ok(TableIdent::from_strs(parts)?)
}

async fn load(
    factory: &CatalogFactory,
    target: &Target,
) -> anyhow::Result<(ops_core::CatalogHandle, Table)> {
    let ident = parse_ident(&target.table)?;
    let handle = factory.open(&target.catalog).await?;
    let table = match handle.catalog().load_table(&ident).await {
        Ok(t) => t,
        // PyIceberg given a relative `warehouse` stores relative metadata locations, which
        // name no file without the directory PyIceberg ran in (absolute plain paths load).
        Err(e) if e.to_string().contains("relative URL without a base") => {
            return Err(anyhow::Error::new(e).context(format!(
                "cannot load {} from catalog '{}': its metadata location is a relative path, \
                 as PyIceberg records when the catalog's `warehouse` is one; iceberg-ops reads \
                 absolute paths and URIs. Give the catalog's warehouse as an absolute path or \
                 file:///… (in .pyiceberg.yaml too) for the tables PyIceberg creates",
                target.table, target.catalog
            )));
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "cannot load {} from catalog '{}' (--catalog; `iceberg-ops table list \
                 --catalog {}` lists its tables)",
                target.table, target.catalog, target.catalog
            )));
        }
    };
    Ok((handle, table))
}

pub async fn run(factory: &CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::List {
            namespace,
            catalog,
            output,
        } => list_tables(factory, namespace.as_deref(), &catalog, output).await?,
        Command::Health(args) => crate::maintain_cmd::run_health(factory, args).await?,
        Command::RemoveDanglingDeletes {
            target,
            dry_run,
            force,
            output,
        } => {
            let (handle, table) = load(factory, &target).await?;
            let (_, m) = RemoveDanglingDeletesBuilder::new(&handle, table.identifier().clone())
                .dry_run(dry_run)
                .force(force)
                .await?;
            let value = json!({
                "table": target.table,
                "dry_run": m.dry_run,
                "delete_files": m.delete_files,
                "removed": m.removed,
                "snapshot_id": m.snapshot_id,
            });
            show(&value, output, print_dangling)?;
        }
        Command::Snapshots { target, output } => {
            let (_, table) = load(factory, &target).await?;
            show(&snapshots_json(&table)?, output, print_snapshots)?;
        }
        Command::Schema { target, output } => {
            let (_, table) = load(factory, &target).await?;
            show(&schema_json(&table), output, print_schema)?;
        }
        Command::Delete {
            target,
            filter,
            dry_run,
            output,
        } => {
            let (handle, table) = load(factory, &target).await?;
            let builder = DeleteBuilder::new(&handle, table.identifier().clone())
                .with_filter_text(filter.clone());
            let (snapshot, preview) = if dry_run {
                (None, builder.dry_run().await?)
            } else {
                let (_, m, preview) = builder.execute_with_report().await?;
                ((m.snapshot_id != 0).then_some(m.snapshot_id), preview)
            };
            let value = json!({
                "table": target.table,
                "filter": filter,
                "dry_run": dry_run,
                "snapshot_id": snapshot,
                "deleted_rows": preview.deleted_rows,
                "dropped_files": preview.dropped_files,
                "rewritten_files": preview.rewritten_files,
            });
            show(&value, output, print_delete)?;
        }
        Command::Rollback { target, to } => move_main(factory, &target, to, true).await?,
        Command::SetCurrentSnapshot { target, to } => {
            move_main(factory, &target, to, false).await?
        }
        Command::ExpireSnapshots {
            target,
            older_than,
            retain_last,
            snapshot_ids,
            keep_files,
            dry_run,
            force,
            output,
        } => {
            let older_than = older_than.as_deref().map(parse_timestamp_ms).transpose()?;
            // Loaded here for the error that names the catalog and how to list its tables.
            let (handle, table) = load(factory, &target).await?;
            let ident = table.identifier().clone();
            let mut builder = ExpireSnapshotsBuilder::new(&handle, ident)
                .keep_files(keep_files)
                .dry_run(dry_run)
                .force(force);
            if let Some(ts) = older_than {
                builder = builder.older_than_ms(ts);
            }
            if let Some(n) = retain_last {
                builder = builder.retain_last(n);
            }
            if !snapshot_ids.is_empty() {
                builder = builder.snapshot_ids(snapshot_ids);
            }
            let location = table.metadata().location().to_string();
            let (_, m) = builder.await?;
            show(
                &expire_json(&target.table, &location, &m),
                output,
                print_expire,
            )?;
            if let Some(why) = &m.cleanup_skipped {
                bail!(
                    "the snapshots were expired, but their files were not deleted: {why}. \
                     `iceberg-ops table remove-orphans {}` removes them later",
                    target.table
                );
            }
            if !m.failed_deletes.is_empty() {
                bail!(
                    "{} file(s) could not be deleted (listed above); `iceberg-ops table \
                     remove-orphans {}` removes them later",
                    m.failed_deletes.len(),
                    target.table
                );
            }
        }
        Command::AbandonMigration { target, job, all } => {
            // Loaded here for the error that names the catalog and how to list its tables.
            let (handle, table) = load(factory, &target).await?;
            let ident = table.identifier().clone();
            let running: Vec<String> = ops_core::ops::markers::running_migrations(table.metadata())
                .into_iter()
                .map(|(j, _)| j.to_string())
                .collect();
            let chosen: Vec<String> = match (&job, all) {
                (Some(j), _) if !running.contains(j) => bail!(
                    "{} carries no marker of job '{j}'; its markers: {}",
                    target.table,
                    if running.is_empty() {
                        "none".to_string()
                    } else {
                        running.join(", ")
                    }
                ),
                (Some(j), _) => vec![j.clone()],
                (None, true) => running.clone(),
                (None, false) => {
                    for (j, started) in ops_core::ops::markers::running_migrations(table.metadata())
                    {
                        println!("{j}  started {started}");
                    }
                    if running.is_empty() {
                        println!("{}: no unfinished migration marks it", target.table);
                    }
                    return Ok(());
                }
            };
            for j in &chosen {
                ops_core::ops::markers::clear_running_marker(&handle, &ident, j).await?;
                println!("{}: marker of job {j} removed", target.table);
            }
        }
        Command::Compact {
            target,
            filter,
            target_file_size,
            min_input_files,
            partial_progress,
            max_commits,
            to_current_spec,
            sort,
            sort_by,
            sort_memory,
            max_file_group_size,
            dry_run,
            force,
            cluster,
            stall_timeout,
            output,
        } => {
            // Loaded here for the error that names the catalog and how to list its tables.
            let (handle, table) = load(factory, &target).await?;
            let ident = table.identifier().clone();
            let mut builder = CompactBuilder::new(&handle, ident)
                .min_input_files(min_input_files)
                .partial_progress(partial_progress)
                .max_commits(max_commits)
                .to_current_spec(to_current_spec)
                .dry_run(dry_run)
                .force(force);
            if sort {
                builder = builder.sort(SortSpec::TableOrder);
            } else if let Some(columns) = sort_by {
                builder = builder.sort(SortSpec::parse_columns(&columns)?);
            } else if sort_memory.is_some() {
                bail!("--sort-memory applies to a sorting compaction: add --sort or --sort-by");
            } else if max_file_group_size.is_some() {
                bail!(
                    "--max-file-group-size applies to a sorting compaction (bin-pack groups are \
                     of the target size): add --sort or --sort-by, or use --target-file-size"
                );
            }
            if let Some(bytes) = sort_memory {
                builder = builder.sort_memory(bytes);
            }
            if let Some(bytes) = max_file_group_size {
                builder = builder.max_file_group_size(bytes);
            }
            if let Some(f) = &filter {
                builder = builder.with_filter_text(f.clone());
            }
            if let Some(t) = target_file_size {
                builder = builder.target_file_size(t);
            }
            let (_, m) = match &cluster {
                Some(url) => {
                    compact_on_cluster(url, builder, &target.catalog, stall_timeout).await?
                }
                None => builder.await?,
            };
            let report = CompactReport::of(&target.table, &m, min_input_files);
            let filter_text = filter.as_deref();
            match output {
                // Written as it is serialized: a plan of a million files is not copied first.
                Output::Json => crate::report::print_json(&report)?,
                Output::Text => print_compact(&report, filter_text),
            }
            if !m.failed_groups.is_empty() {
                let landed = m.groups.iter().filter(|g| !g.failed).count();
                bail!(
                    "{} of {} group(s) failed and were not committed (listed above, with why); \
                     {}. Once the cause is fixed, run the command again to compact what is left",
                    m.groups.iter().filter(|g| g.failed).count(),
                    m.groups.len(),
                    if landed == 0 {
                        "none landed".to_string()
                    } else {
                        format!("the other {landed} landed")
                    }
                );
            }
        }
        Command::RemoveOrphans {
            target,
            older_than,
            dry_run,
            force,
            output,
        } => {
            let age = parse_duration(&older_than)?;
            // Said here in the user's own terms (a point in time is an age to the library).
            if age < ops_maintenance::remove_orphans::MIN_OLDER_THAN && !force && !dry_run {
                bail!(
                    "--older-than {older_than} is under 24 hours ago: a file a running writer \
                     has not committed yet would be deleted as an orphan (a sorted compaction or \
                     a migration writes for hours before its commit). Pass --force if nothing \
                     writes to {}, or --dry-run to see what it would delete",
                    target.table
                );
            }
            let cutoff = chrono::Duration::from_std(age)
                .ok()
                .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
                .map_or_else(|| "the earliest time".to_string(), |t| t.to_rfc3339());
            // Loaded here for the error that names the catalog and how to list its tables.
            let (handle, table) = load(factory, &target).await?;
            let ident = table.identifier().clone();
            let m = RemoveOrphansBuilder::new(&handle, ident)
                .older_than(age)
                .dry_run(dry_run)
                .force(force)
                .await?;
            let mut v = orphans_json(&target.table, &m);
            v["older_than"] = json!(cutoff);
            show(&v, output, print_orphans)?;
            if !m.failed_deletes.is_empty() {
                bail!("{} orphan(s) could not be deleted", m.failed_deletes.len());
            }
        }
    }
    Ok(())
}

/// `table compact --cluster`: the groups rewritten by the cluster's executors.
#[cfg(feature = "cluster")]
async fn compact_on_cluster(
    url: &str,
    builder: CompactBuilder,
    catalog: &str,
    stall_timeout: Option<u64>,
) -> anyhow::Result<(iceberg::table::Table, CompactMetrics)> {
    let mut runner = ops_ballista::ClusterRunner::new(url)?
        .progress(|task, landed, total| {
            tracing::info!(
                group = task,
                landed,
                total,
                "compaction group rewritten on the cluster"
            );
        })
        .interrupt(crate::interrupt::on_signal());
    if let Some(secs) = stall_timeout {
        runner = runner.stall_timeout((secs > 0).then(|| std::time::Duration::from_secs(secs)));
    }
    Ok(runner.compact(builder, catalog).await?)
}

#[cfg(not(feature = "cluster"))]
async fn compact_on_cluster(
    _url: &str,
    _builder: CompactBuilder,
    _catalog: &str,
    _stall_timeout: Option<u64>,
) -> anyhow::Result<(iceberg::table::Table, CompactMetrics)> {
    Err(crate::cluster_cmd::not_built())
}

/// `table compact`'s report: the library's metrics borrowed, with the totals and the settings
/// a reader needs.
#[derive(serde::Serialize)]
struct CompactReport<'a> {
    table: &'a str,
    dry_run: bool,
    snapshot_id: Option<i64>,
    target_file_size: u64,
    min_input_files: usize,
    input_files: usize,
    input_bytes: u64,
    output_files: usize,
    output_bytes: u64,
    groups: Vec<CompactGroupReport<'a>>,
    skipped_equality_delete_files: &'a [String],
    skipped_other_spec_files: usize,
    skipped_widened_delete_files: &'a [String],
    skipped_duplicate_files: &'a [String],
    removed_dangling_delete_files: &'a [String],
    snapshot_ids: &'a [i64],
    sort_order: Option<&'a str>,
    sort_order_id: Option<i64>,
    failed_groups: Vec<FailedGroupReport<'a>>,
}

#[derive(serde::Serialize)]
struct CompactGroupReport<'a> {
    spec_id: i32,
    partition: &'a str,
    input_files: &'a [ops_core::file_path::FilePath],
    input_bytes: u64,
    input_rows: u64,
    files_with_deletes: usize,
    failed: bool,
    output_files: &'a [String],
    output_bytes: u64,
    output_rows: u64,
}

#[derive(serde::Serialize)]
struct FailedGroupReport<'a> {
    partition: &'a str,
    error: &'a str,
}

impl<'a> CompactReport<'a> {
    fn of(table: &'a str, m: &'a CompactMetrics, min_input_files: usize) -> Self {
        Self {
            table,
            dry_run: m.dry_run,
            snapshot_id: m.snapshot_id,
            target_file_size: m.target_file_size,
            min_input_files,
            input_files: m.input_files(),
            input_bytes: m.input_bytes(),
            output_files: m.output_files(),
            output_bytes: m.output_bytes(),
            groups: m
                .groups
                .iter()
                .map(|g| CompactGroupReport {
                    spec_id: g.spec_id,
                    partition: &g.partition,
                    input_files: &g.input_files,
                    input_bytes: g.input_bytes,
                    input_rows: g.input_rows,
                    files_with_deletes: g.files_with_deletes,
                    failed: g.failed,
                    output_files: &g.output_files,
                    output_bytes: g.output_bytes,
                    output_rows: g.output_rows,
                })
                .collect(),
            skipped_equality_delete_files: &m.skipped_equality_delete_files,
            skipped_other_spec_files: m.skipped_other_spec_files,
            skipped_widened_delete_files: &m.skipped_widened_delete_files,
            skipped_duplicate_files: &m.skipped_duplicate_files,
            removed_dangling_delete_files: &m.removed_dangling_delete_files,
            snapshot_ids: &m.snapshot_ids,
            sort_order: m.sort_order.as_deref(),
            sort_order_id: m.sort_order_id,
            failed_groups: m
                .failed_groups
                .iter()
                .map(|f| FailedGroupReport {
                    partition: &f.partition,
                    error: &f.error,
                })
                .collect(),
        }
    }
}

/// What `table compact` says when no group qualifies: the rule, and the filter when one
/// narrowed the files (a `--where` that selects nothing reads otherwise as a table in order).
fn nothing_to_compact(r: &CompactReport<'_>, filter: Option<&str>) -> String {
    let among = filter.map_or_else(String::new, |f| {
        format!(" among the files --where '{f}' selects")
    });
    format!(
        "{}: nothing to compact{among} (a partition is rewritten when it holds at least \
         --min-input-files {} files of the current spec smaller than 75% of the target size {} \
         bytes, or one with position or equality deletes; a group of one such file without \
         deletes is left alone)",
        r.table, r.min_input_files, r.target_file_size
    )
}

/// The text report, read from the typed report (not from its JSON: a plan of a million files
/// would be copied into a `Value` per path only to count them).
fn print_compact(r: &CompactReport<'_>, filter: Option<&str>) {
    let groups = &r.groups;
    let table = r.table;
    if groups.is_empty() {
        println!("{}", nothing_to_compact(r, filter));
    } else if r.dry_run {
        println!(
            "{table}: would rewrite {} file(s), {} bytes, in {} group(s) (target {} bytes)",
            r.input_files,
            r.input_bytes,
            groups.len(),
            r.target_file_size
        );
    } else {
        let snapshots: Vec<String> = r.snapshot_ids.iter().map(i64::to_string).collect();
        let failed = groups.iter().filter(|g| g.failed).count();
        println!(
            "{table}: rewrote {} file(s), {} bytes, into {} file(s), {} bytes, in {} group(s); \
             snapshot {}",
            r.input_files,
            r.input_bytes,
            r.output_files,
            r.output_bytes,
            groups.len() - failed,
            if snapshots.is_empty() {
                "none".to_string()
            } else {
                snapshots.join(", ")
            }
        );
    }
    if let (Some(order), false) = (r.sort_order, groups.is_empty()) {
        let id = match r.sort_order_id {
            Some(id) => format!(" (the table's sort order {id})"),
            None => " (none of the table's sort orders: files not marked sorted)".to_string(),
        };
        println!("  sorted by {order}{id}");
    }
    for g in groups {
        println!(
            "  {}: {} file(s), {} bytes, {} row(s){}{}",
            if g.partition.is_empty() {
                "(unpartitioned)"
            } else {
                g.partition
            },
            g.input_files.len(),
            g.input_bytes,
            g.input_rows,
            if g.files_with_deletes > 0 {
                format!(", {} with deletes", g.files_with_deletes)
            } else {
                String::new()
            },
            if r.dry_run {
                String::new()
            } else {
                format!(
                    " -> {} file(s), {} bytes",
                    g.output_files.len(),
                    g.output_bytes
                )
            }
        );
    }
    for f in &r.failed_groups {
        let partition = if f.partition.is_empty() {
            "(unpartitioned)"
        } else {
            f.partition
        };
        println!(
            "  FAILED {partition}: {} (nothing of it committed)",
            f.error
        );
    }
    let dangling = r.removed_dangling_delete_files.len();
    if dangling > 0 {
        println!(
            "  removed {dangling} delete file(s) that no longer apply to any live file (dangling)"
        );
    }
    let eq = r.skipped_equality_delete_files.len();
    if eq > 0 {
        println!(
            "  {eq} file(s) left as they are: equality deletes iceberg-ops cannot apply \
             (a nested or dropped column, a format other than Parquet; the log names the \
             reason) apply to them (compact them with the engine that wrote the deletes)"
        );
    }
    let other = r.skipped_other_spec_files;
    if other > 0 {
        println!(
            "  {other} file(s) of an older partition spec left as they are (--to-current-spec \
             rewrites them into the current one)"
        );
    }
    let widened = r.skipped_widened_delete_files.len();
    if widened > 0 {
        println!(
            "  {widened} file(s) with delete files and partition values written before their \
             column was widened left as they are (compact them with the engine that wrote the \
             deletes)"
        );
    }
    let duplicate = r.skipped_duplicate_files.len();
    if duplicate > 0 {
        println!(
            "  {duplicate} file(s) listed more than once left as they are: a commit removes \
             every entry of a file, and theirs differ in partition or spec, do not all qualify, \
             or share the table with delete files (the log names each file)"
        );
    }
}

fn expire_json(table: &str, location: &str, m: &ExpireMetrics) -> Value {
    json!({
        "table": table,
        "location": location,
        "deleted_outside_location": m.deleted_outside_location,
        "dry_run": m.dry_run,
        "kept_files": m.kept_files,
        "expired_snapshots": m.expired_snapshots,
        "removed_refs": m.removed_refs,
        "retained_snapshots": m.retained_snapshots,
        "deleted_data_files": m.deleted_data_files,
        "deleted_manifests": m.deleted_manifests,
        "deleted_manifest_lists": m.deleted_manifest_lists,
        "deleted_statistics_files": m.deleted_statistics_files,
        "failed_deletes": m.failed_deletes,
        "cleanup_skipped": m.cleanup_skipped,
        "older_than_ms": m.rule.older_than_ms,
        "older_than_from": m.rule.older_than_from,
        "retain_last": m.rule.retain_last,
        "retain_last_from": m.rule.retain_last_from,
        "snapshot_ids": m.rule.snapshot_ids,
        "not_expired": m.not_expired.iter().map(|(id, why)| json!({"snapshot_id": id, "why": why})).collect::<Vec<_>>(),
    })
}

fn print_expire(v: &Value) {
    let dry = v["dry_run"] == json!(true);
    let n = |k: &str| v[k].as_array().map_or(0, Vec::len);
    let older_than = v["older_than_ms"]
        .as_i64()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| v["older_than_ms"].to_string(), |t| t.to_rfc3339());
    println!(
        "{}: {} {} snapshot(s), {} retained{}",
        v["table"].as_str().unwrap_or_default(),
        if dry { "would expire" } else { "expired" },
        n("expired_snapshots"),
        v["retained_snapshots"],
        if n("removed_refs") > 0 {
            format!(
                "; refs past their max-ref-age-ms removed: {}",
                v["removed_refs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    );
    // Said every time: without options the cutoff is the table's (5 days by default), and an
    // expiry that removes nothing otherwise looks broken.
    let named = n("snapshot_ids");
    if named > 0 && v["older_than_ms"].as_i64() == Some(i64::MIN) {
        println!(
            "  rule: the {named} snapshot(s) named, no age cutoff; branch and tag heads are kept"
        );
    } else if named > 0 {
        println!(
            "  rule: the {named} snapshot(s) named, and snapshots older than {older_than} ({}), \
             keeping at least {} per branch ({})",
            v["older_than_from"].as_str().unwrap_or_default(),
            v["retain_last"],
            v["retain_last_from"].as_str().unwrap_or_default()
        );
    } else {
        println!(
            "  rule: snapshots older than {older_than} ({}), keeping at least {} per branch ({}); \
         refs with their own retention follow it",
            v["older_than_from"].as_str().unwrap_or_default(),
            v["retain_last"],
            v["retain_last_from"].as_str().unwrap_or_default()
        );
    }
    for k in v["not_expired"].as_array().into_iter().flatten() {
        println!(
            "  snapshot {} not expired: {}",
            k["snapshot_id"],
            k["why"].as_str().unwrap_or_default()
        );
    }
    if v["kept_files"] == json!(true) {
        println!("  files kept (--keep-files)");
        return;
    }
    let verb = if dry { "would delete" } else { "deleted" };
    println!(
        "  {verb} {} data/delete file(s), {} manifest(s), {} manifest list(s), {} statistics \
         file(s)",
        n("deleted_data_files"),
        n("deleted_manifests"),
        n("deleted_manifest_lists"),
        n("deleted_statistics_files")
    );
    let outside = n("deleted_outside_location");
    if outside > 0 {
        println!(
            "  {outside} of the data files {} outside the table location {} (files registered \
             where they lay, e.g. by add_files, which only expired snapshots used; Java's \
             expiry deletes them too; --keep-files keeps every file):",
            if dry { "lie" } else { "lay" },
            v["location"].as_str().unwrap_or_default()
        );
        for f in v["deleted_outside_location"]
            .as_array()
            .into_iter()
            .flatten()
            .take(10)
        {
            println!("    {}", f.as_str().unwrap_or_default());
        }
        if outside > 10 {
            println!(
                "    ... and {} more (--output json lists them)",
                outside - 10
            );
        }
    }
    for f in v["failed_deletes"].as_array().into_iter().flatten() {
        println!("  could not delete {}", f.as_str().unwrap_or_default());
    }
}

fn orphans_json(table: &str, m: &OrphanMetrics) -> Value {
    json!({
        "table": table,
        "dry_run": m.dry_run,
        "listed": m.listed,
        "reachable": m.reachable,
        "orphans": m.orphans,
        "too_young": m.too_young,
        "failed_deletes": m.failed_deletes,
        "other_tables": m.other_tables,
        "hidden": m.hidden,
        "hidden_examples": m.hidden_examples,
    })
}

fn print_orphans(v: &Value) {
    let dry = v["dry_run"] == json!(true);
    let n = |k: &str| v[k].as_array().map_or(0, Vec::len);
    println!(
        "{}: {} file(s) listed, {} reachable; {} {} orphan(s) last modified before {}, kept {} \
         younger",
        v["table"].as_str().unwrap_or_default(),
        v["listed"],
        v["reachable"],
        if dry { "would delete" } else { "deleted" },
        n("orphans"),
        v["older_than"].as_str().unwrap_or("the threshold"),
        n("too_young")
    );
    for f in v["orphans"].as_array().into_iter().flatten() {
        println!("  {}", f.as_str().unwrap_or_default());
    }
    for f in v["failed_deletes"].as_array().into_iter().flatten() {
        println!("  could not delete {}", f.as_str().unwrap_or_default());
    }
    for d in v["other_tables"].as_array().into_iter().flatten() {
        println!(
            "  skipped {} (another table's location: its files are not this table's)",
            d.as_str().unwrap_or_default()
        );
    }
    let hidden = v["hidden"].as_u64().unwrap_or_default();
    if hidden > 0 {
        let examples: Vec<&str> = v["hidden_examples"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        println!(
            "  left alone {hidden} hidden entr(ies) (a path segment starting with `_` or `.`, as \
             Java's hidden-path filter: never judged, never deleted), e.g. {}",
            examples.join(", ")
        );
    }
}

/// `table list`: the given namespace's tables, or every namespace's (walked breadth-first with
/// a queue, as namespaces nest to any depth).
async fn list_tables(
    factory: &CatalogFactory,
    namespace: Option<&str>,
    catalog: &str,
    output: Output,
) -> anyhow::Result<()> {
    let handle = factory.open(catalog).await?;
    let cat = handle.catalog();
    let namespaces: Vec<NamespaceIdent> = match namespace {
        Some(ns) => {
            let parts: Vec<&str> = ns.split('.').collect();
            if parts.iter().any(|p| p.is_empty()) {
                bail!("'{ns}' is not a namespace (e.g. sales or a.b)");
            }
            let ident = NamespaceIdent::from_strs(parts)?;
            if !cat.namespace_exists(&ident).await? {
                bail!(
                    "catalog '{catalog}' has no namespace '{ns}' (`iceberg-ops catalog check \
                     {catalog}` lists them)"
                );
            }
            vec![ident]
        }
        None => crate::maintain_cmd::namespaces_under(&handle, None).await?,
    };
    let mut tables: Vec<String> = Vec::new();
    for ns in &namespaces {
        let mut names: Vec<String> = cat
            .list_tables(ns)
            .await
            .with_context(|| format!("list the tables of {}", ns.join(".")))?
            .into_iter()
            .map(|t| format!("{}.{}", t.namespace().join("."), t.name()))
            .collect();
        names.sort();
        tables.extend(names);
    }
    match output {
        Output::Json => crate::report::print_json(&tables)?,
        Output::Text if tables.is_empty() => {
            let scope = namespace.map_or("any namespace".to_string(), |n| format!("'{n}'"));
            println!("no tables in {scope} of catalog '{catalog}'");
        }
        Output::Text => {
            for t in &tables {
                println!("{t}");
            }
        }
    }
    Ok(())
}

/// `table rollback` (an ancestor only) and `table set-current-snapshot` (any snapshot).
async fn move_main(
    factory: &CatalogFactory,
    target: &Target,
    to: i64,
    ancestor_only: bool,
) -> anyhow::Result<()> {
    let (handle, table) = load(factory, target).await?;
    let ident = table.identifier().clone();
    let (_, m) = if ancestor_only {
        RollbackBuilder::to_snapshot(&handle, ident, to).await?
    } else {
        RollbackBuilder::set_current_snapshot(&handle, ident, to).await?
    };
    match m.from {
        Some(from) if from == to => println!("{}: main is already at {to}", target.table),
        from => println!(
            "{}: main moved from {} to {to}",
            target.table,
            from.map_or("(none)".to_string(), |f| f.to_string())
        ),
    }
    Ok(())
}

fn print_delete(v: &Value) {
    let verb = if v["dry_run"] == json!(true) {
        "would delete"
    } else {
        "deleted"
    };
    println!(
        "{}: {verb} {} row(s) where {}",
        v["table"].as_str().unwrap_or_default(),
        v["deleted_rows"],
        v["filter"].as_str().unwrap_or_default()
    );
    for (label, key) in [
        ("dropped", "dropped_files"),
        ("rewritten", "rewritten_files"),
    ] {
        for f in v[key].as_array().into_iter().flatten() {
            println!("  {label:<9} {}", f.as_str().unwrap_or_default());
        }
    }
    match v["snapshot_id"].as_i64() {
        Some(id) => println!("  snapshot {id}"),
        None if v["dry_run"] == json!(true) => println!("  (dry run: nothing written)"),
        None => println!("  nothing matched: no commit"),
    }
}

/// Prints `value` as pretty JSON, or as text through `text`.
fn print_dangling(v: &Value) {
    let table = v["table"].as_str().unwrap_or_default();
    let removed = v["removed"].as_array().map_or(0, Vec::len);
    let total = v["delete_files"].as_u64().unwrap_or(0);
    if removed == 0 {
        println!("{table}: none of its {total} delete file(s) dangles; nothing to remove");
        return;
    }
    let verb = if v["dry_run"].as_bool() == Some(true) {
        "would be removed"
    } else {
        "removed"
    };
    println!(
        "{table}: {removed} of {total} delete file(s) apply to no live data file and {verb}{}",
        v["snapshot_id"]
            .as_i64()
            .map_or_else(String::new, |id| format!(" (snapshot {id})"))
    );
    for p in v["removed"].as_array().into_iter().flatten() {
        println!("  {}", p.as_str().unwrap_or_default());
    }
}

fn show(value: &Value, output: Output, text: fn(&Value)) -> anyhow::Result<()> {
    match output {
        Output::Json => crate::report::print_json(value)?,
        Output::Text => text(value),
    }
    Ok(())
}

/// The branches and tags of `md` by the snapshot they point at, each as `{"name", "type"}`,
/// sorted by name. iceberg 0.10.1 keeps the refs private; its serialized metadata carries them
/// (for v1 tables too, with the vendored fix).
fn refs_by_snapshot(
    md: &iceberg::spec::TableMetadata,
) -> anyhow::Result<std::collections::BTreeMap<i64, Vec<Value>>> {
    let doc = serde_json::to_value(md)?;
    let mut out: std::collections::BTreeMap<i64, Vec<Value>> = std::collections::BTreeMap::new();
    let mut refs: Vec<(&String, &Value)> = doc["refs"]
        .as_object()
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    refs.sort_by(|a, b| a.0.cmp(b.0));
    for (name, r) in refs {
        if let Some(id) = r["snapshot-id"].as_i64() {
            out.entry(id)
                .or_default()
                .push(json!({"name": name, "type": r["type"].as_str().unwrap_or("branch")}));
        }
    }
    Ok(out)
}

fn snapshots_json(table: &Table) -> anyhow::Result<Value> {
    let md = table.metadata();
    let current = md.current_snapshot_id();
    let refs = refs_by_snapshot(md)?;
    let mut snaps: Vec<_> = md.snapshots().collect();
    snaps.sort_by_key(|s| (s.sequence_number(), s.timestamp_ms()));
    Ok(Value::Array(
        snaps
            .iter()
            .map(|s| {
                let summary: serde_json::Map<String, Value> = s
                    .summary()
                    .additional_properties
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                json!({
                    "snapshot_id": s.snapshot_id(),
                    "parent_id": s.parent_snapshot_id(),
                    "sequence_number": s.sequence_number(),
                    "timestamp_ms": s.timestamp_ms(),
                    "timestamp": s.timestamp().map(|t| t.to_rfc3339()).unwrap_or_default(),
                    "operation": s.summary().operation.as_str(),
                    "current": Some(s.snapshot_id()) == current,
                    "refs": refs.get(&s.snapshot_id()).cloned().unwrap_or_default(),
                    "summary": summary,
                })
            })
            .collect(),
    ))
}

fn print_snapshots(snapshots: &Value) {
    let list = snapshots.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        println!("no snapshots");
        return;
    }
    for s in list {
        let mark = if s["current"] == json!(true) {
            "*"
        } else {
            " "
        };
        let refs: Vec<String> = s["refs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let name = r["name"].as_str().unwrap_or_default();
                match r["type"].as_str() {
                    Some("tag") => format!("tag {name}"),
                    _ => name.to_string(),
                }
            })
            .collect();
        println!(
            "{mark} {}  parent {}  seq {}  {}  {}{}",
            s["snapshot_id"],
            s["parent_id"],
            s["sequence_number"],
            s["timestamp"].as_str().unwrap_or_default(),
            s["operation"].as_str().unwrap_or_default(),
            if refs.is_empty() {
                String::new()
            } else {
                format!("  [{}]", refs.join(", "))
            }
        );
        if let Some(summary) = s["summary"].as_object() {
            let mut keys: Vec<&String> = summary.keys().collect();
            keys.sort();
            let line: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", summary[*k].as_str().unwrap_or_default()))
                .collect();
            println!("      {}", line.join(" "));
        }
    }
}

// `field_json` and `print_fields` recurse once per nesting level of the schema; that depth is
// bounded by serde_json's recursion limit (128), which every table's metadata went through when
// it was loaded, so it cannot exhaust the stack.
fn field_json(f: &NestedField) -> Value {
    let children: Vec<Value> = match f.field_type.as_ref() {
        Type::Struct(s) => s.fields().iter().map(|c| field_json(c)).collect(),
        Type::List(l) => vec![field_json(&l.element_field)],
        Type::Map(m) => vec![field_json(&m.key_field), field_json(&m.value_field)],
        Type::Primitive(_) => Vec::new(),
    };
    let mut v = json!({
        "id": f.id,
        "name": f.name,
        "type": ops_core::display::type_text(&f.field_type),
        "required": f.required,
    });
    if let Some(doc) = &f.doc {
        v["doc"] = json!(doc);
    }
    if !children.is_empty() {
        v["fields"] = Value::Array(children);
    }
    v
}

fn schema_json(table: &Table) -> Value {
    let md = table.metadata();
    let schema = md.current_schema();
    let spec = md.default_partition_spec();
    json!({
        "schema_id": schema.schema_id(),
        "identifier_field_ids": schema.identifier_field_ids().collect::<Vec<_>>(),
        "identifier_fields": schema
            .identifier_field_ids()
            .map(|id| schema.name_by_field_id(id).map_or_else(|| id.to_string(), str::to_string))
            .collect::<Vec<_>>(),
        "fields": schema.as_struct().fields().iter().map(|f| field_json(f)).collect::<Vec<_>>(),
        "partition_spec": {
            "spec_id": spec.spec_id(),
            "fields": spec.fields().iter().map(|f| json!({
                "field_id": f.field_id,
                "source_id": f.source_id,
                "name": f.name,
                "transform": f.transform.to_string(),
            })).collect::<Vec<_>>(),
        },
    })
}

fn print_fields(fields: &[Value], depth: usize) {
    for f in fields {
        let required = if f["required"] == json!(true) {
            " required"
        } else {
            ""
        };
        let doc = f["doc"]
            .as_str()
            .map(|d| format!("  -- {d}"))
            .unwrap_or_default();
        println!(
            "{:indent$}{:>4}  {}: {}{required}{doc}",
            "",
            f["id"].as_i64().unwrap_or_default(),
            f["name"].as_str().unwrap_or_default(),
            f["type"].as_str().unwrap_or_default(),
            indent = depth * 2
        );
        if let Some(children) = f["fields"].as_array() {
            print_fields(children, depth + 1);
        }
    }
}

/// `identifier fields: id (1), name (2)`: by name, as the operator writes them, with the ids the
/// field lines show.
fn identifier_line(schema: &Value) -> String {
    let ids = schema["identifier_field_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names = schema["identifier_fields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if ids.is_empty() {
        return "identifier fields: (none)".to_string();
    }
    let shown: Vec<String> = ids
        .iter()
        .zip(names.iter())
        .map(|(id, name)| format!("{} ({id})", name.as_str().unwrap_or_default()))
        .collect();
    format!("identifier fields: {}", shown.join(", "))
}

fn print_schema(schema: &Value) {
    println!("schema {} (field id, name: type)", schema["schema_id"]);
    print_fields(
        schema["fields"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        1,
    );
    println!("{}", identifier_line(schema));
    let spec = &schema["partition_spec"];
    let fields = spec["fields"].as_array().cloned().unwrap_or_default();
    if fields.is_empty() {
        println!("partition spec {}: unpartitioned", spec["spec_id"]);
    } else {
        println!("partition spec {}:", spec["spec_id"]);
        for f in fields {
            println!(
                "  {:>4}  {} = {}(source {})",
                f["field_id"].as_i64().unwrap_or_default(),
                f["name"].as_str().unwrap_or_default(),
                f["transform"].as_str().unwrap_or_default(),
                f["source_id"]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use iceberg::spec::{ListType, MapType, PrimitiveType, Schema, StructType};
    use std::sync::Arc;

    /// A `--where` that selects no file to compact is named, so an empty result does not read
    /// as a table in order.
    #[test]
    fn nothing_to_compact_names_the_filter() {
        let m = CompactMetrics {
            target_file_size: 100,
            ..CompactMetrics::default()
        };
        let v = CompactReport::of("db.t", &m, 5);
        let plain = nothing_to_compact(&v, None);
        assert!(
            plain.starts_with("db.t: nothing to compact (a partition"),
            "{plain}"
        );
        assert!(plain.contains("position or equality deletes"), "{plain}");
        let filtered = nothing_to_compact(&v, Some("region = 'zz'"));
        assert!(
            filtered.starts_with(
                "db.t: nothing to compact among the files --where 'region = 'zz'' selects ("
            ),
            "{filtered}"
        );
    }

    #[test]
    fn older_than_parses_timestamps_and_durations() -> anyhow::Result<()> {
        assert_eq!(parse_timestamp_ms("1700000000000")?, 1_700_000_000_000);
        assert_eq!(parse_timestamp_ms("1970-01-02")?, 86_400_000);
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:01+00:00")?, 1000);
        assert!(parse_timestamp_ms("yesterday").is_err());
        assert_eq!(parse_duration("3d")?.as_secs(), 3 * 86_400);
        assert_eq!(parse_duration("90m")?.as_secs(), 5400);
        assert!(
            parse_duration("3600")
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
        assert_eq!(parse_duration("3600s")?.as_secs(), 3600);
        // Parts add up, with or without spaces between them.
        assert_eq!(parse_duration("23h59m")?.as_secs(), 23 * 3600 + 59 * 60);
        assert_eq!(parse_duration("1d 12h")?.as_secs(), 36 * 3600);
        assert_eq!(parse_duration("1h30m15s")?.as_secs(), 5415);
        assert!(parse_duration("1h30").is_err());
        assert!(parse_duration("1h3w").is_err());
        assert!(
            parse_duration("3w")
                .unwrap_err()
                .to_string()
                .contains("unknown unit 'w'")
        );
        assert!(parse_duration("h").is_err());
        // Each command takes the other's form too: an age for expiry, a point for orphans.
        let now = chrono::Utc::now().timestamp_millis();
        let five_days_ago = parse_timestamp_ms("5d")?;
        assert!(
            (now - 5 * 86_400_000 - five_days_ago).abs() < 60_000,
            "{five_days_ago}"
        );
        let since_epoch = parse_duration("1970-01-02")?.as_millis() as i64;
        assert!(
            (now - 86_400_000 - since_epoch).abs() < 60_000,
            "{since_epoch}"
        );
        assert!(
            parse_duration("2999-01-01")
                .unwrap_err()
                .to_string()
                .contains("future")
        );
        Ok(())
    }

    /// `table snapshots` names the branches and tags pointing at each snapshot.
    #[tokio::test]
    async fn snapshots_list_their_branches_and_tags() -> anyhow::Result<()> {
        let metadata: iceberg::spec::TableMetadata = serde_json::from_value(json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "memory:///t",
            "last-sequence-number": 2,
            "last-updated-ms": 1_700_000_000_000_i64,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"}]}],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {},
            "current-snapshot-id": 2,
            "snapshots": [
                {"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1_700_000_000_000_i64,
                 "manifest-list": "memory:///t/m1.avro", "summary": {"operation": "append"}},
                {"snapshot-id": 2, "parent-snapshot-id": 1, "sequence-number": 2,
                 "timestamp-ms": 1_700_000_001_000_i64, "manifest-list": "memory:///t/m2.avro",
                 "summary": {"operation": "append"}}
            ],
            "refs": {
                "main": {"snapshot-id": 2, "type": "branch"},
                "audit": {"snapshot-id": 1, "type": "branch"},
                "v1": {"snapshot-id": 1, "type": "tag"}
            },
            "snapshot-log": [],
            "metadata-log": []
        }))?;
        let table = Table::builder()
            .metadata(metadata)
            .identifier(iceberg::TableIdent::from_strs(["ns", "t"])?)
            .file_io(iceberg::io::FileIO::new_with_memory())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?;
        let v = snapshots_json(&table)?;
        assert_eq!(
            v[0]["refs"],
            json!([{"name": "audit", "type": "branch"}, {"name": "v1", "type": "tag"}]),
            "{v}"
        );
        assert_eq!(
            v[1]["refs"],
            json!([{"name": "main", "type": "branch"}]),
            "{v}"
        );
        Ok(())
    }

    fn nested_schema() -> Schema {
        let geo = StructType::new(vec![
            Arc::new(NestedField::optional(
                4,
                "lat",
                Type::Primitive(PrimitiveType::Double),
            )),
            Arc::new(NestedField::optional(
                5,
                "lon",
                Type::Primitive(PrimitiveType::Double),
            )),
        ]);
        let address = StructType::new(vec![
            Arc::new(NestedField::optional(
                3,
                "city",
                Type::Primitive(PrimitiveType::String),
            )),
            Arc::new(NestedField::optional(6, "geo", Type::Struct(geo))),
        ]);
        let tags = ListType::new(Arc::new(NestedField::list_element(
            8,
            Type::Primitive(PrimitiveType::String),
            true,
        )));
        let attrs = MapType::new(
            Arc::new(NestedField::map_key_element(
                10,
                Type::Primitive(PrimitiveType::String),
            )),
            Arc::new(NestedField::map_value_element(
                11,
                Type::Primitive(PrimitiveType::Int),
                false,
            )),
        );
        match Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::required(
                    2,
                    "name",
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::optional(7, "address", Type::Struct(address))),
                Arc::new(NestedField::optional(9, "tags", Type::List(tags))),
                Arc::new(NestedField::optional(12, "attrs", Type::Map(attrs))),
            ])
            .with_identifier_field_ids(vec![2, 1])
            .build()
        {
            Ok(s) => s,
            Err(e) => panic!("test schema: {e}"),
        }
    }

    #[test]
    fn nested_types_read_as_written() {
        let schema = nested_schema();
        let ty = |name: &str| match schema.field_by_name(name) {
            Some(f) => ops_core::display::type_text(&f.field_type),
            None => panic!("no {name}"),
        };
        assert_eq!(
            ty("address"),
            "struct<city: string, geo: struct<lat: double, lon: double>>"
        );
        assert_eq!(ty("tags"), "list<string>");
        assert_eq!(ty("attrs"), "map<string, int>");
        assert_eq!(ty("id"), "long");
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let mut ty = Type::Primitive(PrimitiveType::Int);
        for id in 0..20_000 {
            ty = Type::List(ListType::new(Arc::new(NestedField::list_element(
                id, ty, false,
            ))));
        }
        let text = ops_core::display::type_text(&ty);
        assert!(text.starts_with("list<list<"));
        assert_eq!(text.matches('<').count(), 20_000);
        // Drop it without recursing through 20,000 levels on the test thread's stack either.
        let mut ty = ty;
        while let Type::List(l) = ty {
            ty = match Arc::try_unwrap(l.element_field) {
                Ok(f) => *f.field_type,
                Err(_) => break,
            };
        }
    }

    #[test]
    fn identifier_fields_by_name() {
        let schema = nested_schema();
        let value = json!({
            "identifier_field_ids": schema.identifier_field_ids().collect::<Vec<_>>(),
            "identifier_fields": schema
                .identifier_field_ids()
                .filter_map(|id| schema.name_by_field_id(id).map(str::to_string))
                .collect::<Vec<_>>(),
        });
        let line = identifier_line(&value);
        assert!(line.contains("name (2)"), "{line}");
        assert!(line.contains("id (1)"), "{line}");
    }
}
