//! `iceberg-ops table health` and `iceberg-ops maintain`: judge tables, and care for them.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, bail};
use iceberg::{NamespaceIdent, TableIdent};
use ops_core::{CatalogFactory, CatalogHandle};
use ops_maintenance::health::{HealthBuilder, TableHealth, human_bytes};
use ops_maintenance::maintain::{MaintainBuilder, MaintainReport, State, TableOutcome, TaskStatus};
use ops_maintenance::policy::Policy;
use serde_json::json;

use crate::table_cmd::Output;

/// `table health` arguments.
#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// Tables (NS.T), or namespaces (NS: their tables and their nested namespaces'); a name
    /// that is both is taken as the table.
    #[arg(
        value_name = "NS.T | NS",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    targets: Vec<String>,
    /// Every table of the catalog.
    #[arg(long)]
    all: bool,
    /// Catalog holding it.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
    /// A TOML policy file giving thresholds per namespace (see docs/maintenance.md).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Partitions listed in text output (the lowest scores); JSON lists them all.
    #[arg(long, default_value_t = 10)]
    partitions: usize,
    /// JSON: one table named gives its report (an object); namespaces or --all give an array
    /// of reports (and `{"table", "error"}` for a table that could not be judged).
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// `maintain` arguments.
#[derive(Debug, clap::Args)]
pub struct MaintainArgs {
    /// Namespaces to maintain (their tables and their nested namespaces'), or tables (NS.T).
    #[arg(
        value_name = "NS",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    targets: Vec<String>,
    /// Every table of the catalog.
    #[arg(long)]
    all: bool,
    /// Catalog holding them.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
    /// A TOML policy file giving thresholds per namespace (see docs/maintenance.md).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Report what is due; commit, delete and record nothing.
    #[arg(long)]
    dry_run: bool,
    /// Tables maintained at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    concurrency: usize,
    /// Rewrite the compactions' groups as tasks on a Ballista cluster (`iceberg-ops cluster
    /// scheduler` and executors configured with the same catalog name), the groups committed
    /// as they land, in up to 10 commits (`cluster` feature).
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
    /// With --cluster: a compaction gives up when none of its groups has landed for this many
    /// seconds (default 3600; 0 waits for ever); the groups that landed stay committed.
    #[arg(long, value_name = "SECS", requires = "cluster")]
    stall_timeout: Option<u64>,
    /// Where orphan cleanup's last-run times and the tables' leases are kept
    /// (default: ~/.cache/iceberg-ops/maintain-state.json).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// `maintain --cluster`: compactions run by ops-ballista's runner on the cluster at `url`.
#[cfg(feature = "cluster")]
async fn cluster_compactions(
    url: &str,
    catalog: &str,
    stall_timeout: Option<u64>,
) -> anyhow::Result<ops_maintenance::compact::CompactRunner> {
    let mut runner =
        ops_ballista::ClusterRunner::new(url)?.interrupt(crate::interrupt::on_signal());
    if let Some(secs) = stall_timeout {
        runner = runner.stall_timeout((secs > 0).then(|| std::time::Duration::from_secs(secs)));
    }
    // Asked once, before any table: a wrong address is one error, not one per table.
    runner.reachable().await?;
    let catalog = catalog.to_string();
    Ok(std::sync::Arc::new(move |builder| {
        let (runner, catalog) = (runner.clone(), catalog.clone());
        Box::pin(async move {
            runner
                .compact(builder, &catalog)
                .await
                .map_err(|e| match e {
                    ops_ballista::ClusterError::Table(e) => e,
                    other => ops_core::Error::InvalidInput(other.to_string()),
                })
        })
    }))
}

#[cfg(not(feature = "cluster"))]
async fn cluster_compactions(
    _url: &str,
    _catalog: &str,
    _stall_timeout: Option<u64>,
) -> anyhow::Result<ops_maintenance::compact::CompactRunner> {
    Err(crate::cluster_cmd::not_built())
}

fn read_policy(path: Option<&PathBuf>) -> anyhow::Result<Policy> {
    let Some(path) = path else {
        return Ok(Policy::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the policy file {}", path.display()))?;
    Ok(Policy::parse(&text, &path.display().to_string())?)
}

/// Every namespace under `root` (itself included), or every namespace of the catalog, walked
/// breadth-first with a queue (namespaces nest to any depth).
pub(crate) async fn namespaces_under(
    handle: &CatalogHandle,
    root: Option<&NamespaceIdent>,
) -> anyhow::Result<Vec<NamespaceIdent>> {
    let cat = handle.catalog();
    let mut seen = std::collections::BTreeSet::new();
    let mut queue: std::collections::VecDeque<NamespaceIdent> = match root {
        Some(ns) => vec![ns.clone()].into(),
        None => cat.list_namespaces(None).await?.into(),
    };
    while let Some(ns) = queue.pop_front() {
        if !seen.insert(ns.clone().inner()) {
            continue;
        }
        queue.extend(cat.list_namespaces(Some(&ns)).await?);
    }
    Ok(seen
        .into_iter()
        .map(NamespaceIdent::from_vec)
        .collect::<Result<_, _>>()?)
}

/// The tables a target names: a table, or a namespace's tables (nested ones too), or with
/// `all` every table of the catalog; sorted.
async fn resolve_tables(
    handle: &CatalogHandle,
    catalog: &str,
    targets: &[String],
    all: bool,
) -> anyhow::Result<Vec<TableIdent>> {
    let cat = handle.catalog();
    let mut namespaces: Vec<NamespaceIdent> = Vec::new();
    let mut tables: std::collections::BTreeSet<TableIdent> = std::collections::BTreeSet::new();
    if all {
        namespaces = namespaces_under(handle, None).await?;
    }
    for target in targets {
        let parts: Vec<&str> = target.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            bail!("'{target}' is neither a namespace (sales, a.b) nor a table (sales.orders)");
        }
        if parts.len() >= 2 {
            let ident = TableIdent::from_strs(&parts)?;
            if cat.table_exists(&ident).await.unwrap_or(false) {
                tables.insert(ident);
                continue;
            }
        }
        let ns = NamespaceIdent::from_strs(&parts)?;
        if !cat.namespace_exists(&ns).await.unwrap_or(false) {
            bail!(
                "catalog '{catalog}' has neither a table nor a namespace '{target}' ({} lists \
                 its tables)",
                crate::invocation::table_list_command(catalog)
            );
        }
        namespaces.extend(namespaces_under(handle, Some(&ns)).await?);
    }
    for ns in &namespaces {
        let listed = cat
            .list_tables(ns)
            .await
            .with_context(|| format!("list the tables of {}", ns.join(".")))?;
        tables.extend(listed);
    }
    Ok(tables.into_iter().collect())
}

pub async fn run_health(factory: &CatalogFactory, args: HealthArgs) -> anyhow::Result<()> {
    let policy = read_policy(args.policy.as_ref())?;
    let handle = factory.open(&args.catalog).await?;
    let tables = resolve_tables(&handle, &args.catalog, &args.targets, args.all).await?;
    // One table named: its report, or its error. Many: each, and the failures listed.
    let single = !args.all
        && tables.len() == 1
        && args.targets.len() == 1
        && args.targets[0] == tables[0].to_string();
    let mut reports: Vec<(String, Result<TableHealth, String>)> = Vec::new();
    for ident in &tables {
        let result = HealthBuilder::new(&handle, ident.clone())
            .policy(policy.clone())
            .command_args(crate::invocation::command_args(&args.catalog))
            .await;
        match result {
            Ok(h) => reports.push((ident.to_string(), Ok(h))),
            Err(e) if single => {
                return Err(anyhow::Error::new(e).context(format!("cannot judge {ident}")));
            }
            Err(e) => reports.push((ident.to_string(), Err(e.to_string()))),
        }
    }
    match args.output {
        Output::Json if single => {
            if let Some((_, Ok(h))) = reports.first() {
                crate::report::print_json(h)?;
            }
        }
        Output::Json => {
            let values: Vec<serde_json::Value> = reports
                .iter()
                .map(|(table, r)| match r {
                    Ok(h) => serde_json::to_value(h).unwrap_or_default(),
                    Err(e) => json!({ "table": table, "error": e }),
                })
                .collect();
            crate::report::print_json(&values)?;
        }
        Output::Text => {
            if tables.is_empty() {
                println!("no tables to judge");
            }
            let terminal = std::io::stdout().is_terminal();
            for (i, (table, r)) in reports.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                match r {
                    Ok(h) => print_health(h, args.partitions, terminal),
                    Err(e) => println!("{table}: cannot be judged: {e}"),
                }
            }
            if reports.len() > 1 {
                let needing = reports
                    .iter()
                    .filter(|(_, r)| r.as_ref().is_ok_and(|h| !h.problems.is_empty()))
                    .count();
                println!(
                    "\n{} table(s): {needing} need care, {} could not be judged",
                    reports.len(),
                    reports.iter().filter(|(_, r)| r.is_err()).count()
                );
            }
        }
    }
    let failed = reports.iter().filter(|(_, r)| r.is_err()).count();
    if failed > 0 {
        bail!("{failed} table(s) could not be judged (listed above)");
    }
    Ok(())
}

fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn print_health(h: &TableHealth, partitions: usize, terminal: bool) {
    let t = &h.thresholds;
    let s = &h.score;
    // The score weighs the effect on reads (Amoro's, dampened for small partitions); what is
    // due is the problems list.
    println!(
        "{}: {}; score {}/100 (small files {}/40, equality deletes {}/40, position deletes {}/20)",
        h.table,
        if h.problems.is_empty() {
            "nothing needs doing".to_string()
        } else {
            format!("needs care ({} problem(s), below)", h.problems.len())
        },
        s.score,
        s.small_files,
        s.equality_deletes,
        s.position_deletes
    );
    println!(
        "  target file size {} ({}); fragments up to {}, undersized below {}",
        human_bytes(t.target_file_size),
        t.sources
            .get("target_file_size")
            .map_or("default", String::as_str),
        human_bytes(t.fragment_size),
        human_bytes(t.min_file_size)
    );
    let d = &h.data;
    println!(
        "data files   {} ({}, {} rows, mean {})",
        count(d.files),
        human_bytes(d.bytes),
        count(d.records),
        human_bytes(d.mean_bytes)
    );
    for (name, c) in [
        ("fragments", d.fragments),
        ("undersized", d.undersized),
        ("well-sized", d.well_sized),
    ] {
        println!(
            "  {name:<11}{:>9}  {}",
            count(c.files),
            human_bytes(c.bytes)
        );
    }
    if d.other_spec.files > 0 {
        println!(
            "  {:<11}{:>9}  {} (of an older partition spec)",
            "older spec",
            count(d.other_spec.files),
            human_bytes(d.other_spec.bytes)
        );
    }
    let del = &h.deletes;
    println!(
        "deletes      position {} file(s), {} record(s) ({:.2}% of rows); equality {} file(s), \
         {} record(s) ({:.2}%); dangling {}",
        count(del.position.files),
        count(del.position.records),
        del.position.ratio * 100.0,
        count(del.equality.files),
        count(del.equality.records),
        del.equality.ratio * 100.0,
        count(del.dangling_files)
    );
    let with_data = if h.data_partition_count == h.partition_count {
        String::new()
    } else {
        format!(" ({} holding data files)", count(h.data_partition_count))
    };
    match &h.skew {
        Some(k) => println!(
            "partitions   {}{with_data}; the largest ({}) holds {}, {:.1}x the median {}",
            count(h.partition_count),
            if k.largest.is_empty() {
                "unpartitioned"
            } else {
                &k.largest
            },
            human_bytes(k.largest_bytes),
            k.ratio,
            human_bytes(k.median_bytes)
        ),
        None => println!("partitions   {}{with_data}", count(h.partition_count)),
    }
    let sn = &h.snapshots;
    match sn.oldest_age_hours {
        Some(age) => println!(
            "snapshots    {} ({} ref(s); the oldest {age:.1} hours old); {} past retention: {}",
            count(sn.count),
            sn.refs,
            sn.expirable.len(),
            sn.rule
        ),
        None => println!("snapshots    none (the table holds no data yet)"),
    }
    let m = &h.manifests;
    println!(
        "manifests    {} data, {} delete; {} entries ({:.1} per manifest), {}",
        m.data,
        m.delete,
        count(m.entries),
        m.mean_entries,
        human_bytes(m.bytes)
    );
    let md = &h.metadata;
    println!(
        "metadata     {}; log {} of {} kept{}",
        md.bytes
            .map_or_else(|| "size unknown".to_string(), human_bytes),
        md.log_length,
        md.previous_versions_max,
        if md.delete_after_commit {
            ", older files deleted"
        } else {
            " (write.metadata.delete-after-commit.enabled is off: older files stay)"
        }
    );
    let mk = &h.markers;
    println!(
        "markers      gc.enabled={}{}{}{}",
        mk.gc_enabled,
        if mk.running_migrations.is_empty() {
            "; no unfinished migration".to_string()
        } else {
            format!(
                "; unfinished migration(s): {}",
                mk.running_migrations
                    .iter()
                    .map(|(j, s)| format!("{j} (started {s})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if mk.s3_tables {
            "; S3 Tables maintains it"
        } else {
            ""
        },
        if mk.maintain_enabled {
            ""
        } else {
            "; iceberg-ops.maintain.enabled=false"
        }
    );
    if terminal && !h.size_histogram.is_empty() {
        println!("file sizes");
        print_histogram(h);
    }
    let worst: Vec<_> = h
        .partitions
        .iter()
        .filter(|p| p.score.score < 100 || p.compaction_due)
        .take(partitions)
        .collect();
    if !worst.is_empty() {
        println!("partitions needing care (lowest score first)");
        for p in worst {
            println!(
                "  {:<30} score {:>3}  files {} (fragments {}, undersized {})  deletes: \
                 position {}, equality {}{}",
                if p.partition.is_empty() {
                    "(unpartitioned)"
                } else {
                    &p.partition
                },
                p.score.score,
                count(p.data_files),
                count(p.fragments),
                count(p.undersized),
                count(p.position_delete_records),
                count(p.equality_delete_records),
                if p.compaction_due {
                    "  compaction due"
                } else {
                    ""
                }
            );
        }
    }
    println!(
        "orphan files not judged: health reads metadata only (`maintain` looks for them on its \
         own interval; `table remove-orphans --dry-run` lists them)"
    );
    if !h.problems.is_empty() {
        println!("needs");
        let mut shown: Vec<&str> = Vec::new();
        for p in &h.problems {
            println!("  {}: {}", p.kind, p.detail);
            // One command fixes several problems (compaction: small files and deletes).
            if shown.contains(&p.fix.as_str()) {
                println!("    fix: the same command as above");
            } else {
                println!("    fix: {}", p.fix);
                shown.push(&p.fix);
            }
        }
    }
}

/// The file-size distribution as bars, with the fragment and undersized bounds marked.
fn print_histogram(h: &TableHealth) {
    const WIDTH: u64 = 40;
    let most = h
        .size_histogram
        .iter()
        .map(|b| b.files)
        .max()
        .unwrap_or(0)
        .max(1);
    let t = &h.thresholds;
    for b in &h.size_histogram {
        let len = if b.files == 0 {
            0
        } else {
            (b.files * WIDTH).div_ceil(most).max(1)
        };
        let class = if b.max_bytes <= t.fragment_size {
            "fragment"
        } else if b.max_bytes < t.min_file_size {
            "undersized"
        } else if b.min_bytes >= t.min_file_size {
            "well-sized"
        } else {
            "mixed"
        };
        println!(
            "  {:>10} - {:<10} {:<40} {:>9}  {class}",
            human_bytes(b.min_bytes),
            human_bytes(b.max_bytes),
            "#".repeat(len as usize),
            count(b.files)
        );
    }
}

fn default_state() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".iceberg-ops"));
    base.join("iceberg-ops").join("maintain-state.json")
}

pub async fn run_maintain(factory: &CatalogFactory, args: MaintainArgs) -> anyhow::Result<()> {
    let policy = read_policy(args.policy.as_ref())?;
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let handle = factory.open(&args.catalog).await?;
    let tables = resolve_tables(&handle, &args.catalog, &args.targets, args.all).await?;
    let state = State::at(args.state.clone().unwrap_or_else(default_state))?;
    let mut builder = MaintainBuilder::new(&handle, tables, state)
        .stop_on(crate::interrupt::on_signal())
        .policy(policy)
        .dry_run(args.dry_run)
        .concurrency(args.concurrency)
        .command_args(crate::invocation::command_args(&args.catalog));
    // A dry run plans its compactions here: the cluster is not asked.
    if let Some(url) = args.cluster.as_deref().filter(|_| !args.dry_run) {
        builder = builder
            .compact_with(cluster_compactions(url, &args.catalog, args.stall_timeout).await?);
    }
    let report = builder.await?;
    match args.output {
        Output::Json => crate::report::print_json(&report)?,
        Output::Text => print_maintain(&report),
    }
    let failed: Vec<&str> = report
        .tables
        .iter()
        .filter(|t| t.outcome == TableOutcome::Failed)
        .map(|t| t.table.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} table(s) failed: {} (the report above says why, and what became of the others)",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

fn print_maintain(r: &MaintainReport) {
    if r.tables.is_empty() {
        println!("no tables to maintain");
        return;
    }
    for t in &r.tables {
        let outcome = match t.outcome {
            TableOutcome::Maintained => "maintained",
            TableOutcome::NothingDue => "nothing due",
            TableOutcome::Planned => "due (dry run)",
            TableOutcome::Skipped => "skipped",
            TableOutcome::Failed => "FAILED",
        };
        print!("{}: {outcome}", t.table);
        if let Some(score) = t.score_before {
            print!(" (score {score})");
        }
        match &t.reason {
            Some(why) => println!(": {why}"),
            None => println!(),
        }
        for task in &t.tasks {
            let status = match task.status {
                TaskStatus::Done => "done",
                TaskStatus::NothingToDo => "nothing to do",
                TaskStatus::Planned => "would run",
                TaskStatus::Skipped => "skipped",
                TaskStatus::Failed => "FAILED",
            };
            println!("  {} [{status}]: {}", task.task, task.detail);
        }
        if let (Some(b), Some(a)) = (&t.before, &t.after) {
            println!(
                "  before: {} data file(s), {} delete file(s), {}, {} snapshot(s); after: {} \
                 data file(s), {} delete file(s), {}, {} snapshot(s)",
                count(b.data_files),
                count(b.delete_files),
                human_bytes(b.bytes),
                b.snapshots,
                count(a.data_files),
                count(a.delete_files),
                human_bytes(a.bytes),
                a.snapshots
            );
        }
    }
    let by = |o: TableOutcome| r.tables.iter().filter(|t| t.outcome == o).count();
    println!(
        "{} table(s): {} maintained, {} nothing due, {} skipped, {} failed{}",
        r.tables.len(),
        by(TableOutcome::Maintained),
        by(TableOutcome::NothingDue),
        by(TableOutcome::Skipped),
        by(TableOutcome::Failed),
        if r.dry_run {
            format!(
                ", {} due (dry run: nothing written)",
                by(TableOutcome::Planned)
            )
        } else {
            String::new()
        }
    );
}
