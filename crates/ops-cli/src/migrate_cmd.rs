//! `iceberg-ops migrate|rollback|status|plan|stamp|history|validate|new` and
//! `migrate repair|baseline`: versioned schema migrations for one namespace, through ops-runner.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use ops_core::CatalogFactory;
use ops_runner::{MigrationRunner, PlannedStep, RollbackOptions, RollbackTo, Target};

use crate::report::print_json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Common {
    /// Catalog holding the namespace and the history table.
    #[arg(long, default_value_t = crate::invocation::default_catalog())]
    catalog: String,
    /// The namespace whose tables the migrations manage.
    #[arg(long)]
    namespace: String,
    /// Namespace of the migration history table.
    #[arg(long, default_value = ops_runner::DEFAULT_META_NAMESPACE)]
    meta_namespace: String,
    /// Directory of NNNN_<description>.toml files (its <namespace>/ subdirectory when present).
    #[arg(long, default_value = "./migrations")]
    migrations_dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// `migrate` applies pending migrations; its subcommands maintain the history.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MigrateArgs {
    #[command(subcommand)]
    action: Option<MigrateAction>,
    // Optional only so that a subcommand can stand alone; without one, --namespace is required.
    #[command(flatten)]
    common: Option<Common>,
    /// Last version to apply (1-4 digits).
    #[arg(long)]
    target: Option<String>,
    /// Print the Iceberg changes each step would make; change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum MigrateAction {
    /// Repair the history (Flyway's repair): remove the rows of failed attempts, so those
    /// versions are pending again (operations a failed attempt landed stay in the tables: undo
    /// them first, or `rollback` the failed version instead), and record each applied file's
    /// current checksum and description, accepting files edited since they were applied.
    Repair {
        #[command(flatten)]
        common: Common,
    },
    /// Adopt a namespace whose tables already exist (Flyway's baseline): record VERSION as
    /// its baseline, so `migrate` ignores every migration up to and including it and
    /// `rollback` never goes below it. Refused when the namespace already has history.
    Baseline {
        #[command(flatten)]
        common: Common,
        /// The version the existing tables correspond to (1-4 digits).
        #[arg(long, default_value = "1")]
        version: String,
        /// Description recorded with the baseline.
        #[arg(long, default_value = "<< iceberg-ops baseline >>")]
        description: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Apply pending migrations (up to --target); `migrate repair` and `migrate baseline`
    /// maintain the history.
    Migrate(MigrateArgs),
    /// Roll back applied migrations, highest first (--steps, default 1, or --target). Undoes
    /// what was applied: refuses a version whose file changed since (--force), and a derived
    /// drop of a table that holds rows (--allow-destructive).
    Rollback {
        #[command(flatten)]
        common: Common,
        /// Number of migrations to undo.
        #[arg(long, conflicts_with = "target")]
        steps: Option<usize>,
        /// Undo every applied version above this one (0 undoes all).
        #[arg(long)]
        target: Option<String>,
        /// Print the Iceberg changes each step would make; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Roll back with today's file even when it changed since it was applied (its
        /// checksum differs from the recorded one): the downgrade then follows what the file
        /// says now, not what was applied.
        #[arg(long)]
        force: bool,
        /// Let a downgrade derived from create_table drop a table that holds rows, with its
        /// data (a written drop_table needs `allow_destructive = true` in its file instead).
        #[arg(long)]
        allow_destructive: bool,
    },
    /// Show every migration's state: [applied] [pending] [rolled_back] [FAILED].
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// Show the pending migrations (up to --target) and their changes; writes nothing.
    Plan {
        #[command(flatten)]
        common: Common,
        /// Last version to show.
        #[arg(long)]
        target: Option<String>,
    },
    /// Mark migrations up to --target applied without running them.
    Stamp {
        #[command(flatten)]
        common: Common,
        /// Last version to stamp.
        #[arg(long)]
        target: Option<String>,
    },
    /// Show each version's latest recorded status.
    History {
        #[command(flatten)]
        common: Common,
    },
    /// Report applied migrations whose file changed since, or is missing.
    Validate {
        #[command(flatten)]
        common: Common,
    },
    /// Write the next numbered migration file.
    New {
        #[command(flatten)]
        common: Common,
        /// What the migration does (becomes the file name).
        description: String,
        /// A desired table definition: write the operations that turn the live table into it.
        #[arg(long, value_name = "DESIRED_TOML")]
        from: Option<PathBuf>,
    },
}

fn runner(handle: &ops_core::CatalogHandle, c: &Common) -> MigrationRunner {
    MigrationRunner::new(handle, c.namespace.clone())
        .meta_namespace(&c.meta_namespace)
        .migrations_dir(Some(&c.migrations_dir))
}

fn print_steps(steps: &[PlannedStep], verb: &str, output: Output) -> anyhow::Result<()> {
    if output == Output::Json {
        return print_json(&steps);
    }
    if steps.is_empty() {
        println!("nothing to {verb}");
    }
    for s in steps {
        println!("{verb} {}  {}", s.version, s.description);
        for c in &s.changes {
            println!("    {c}");
        }
    }
    Ok(())
}

fn print_versions(versions: &[String], done: &str, output: Output) -> anyhow::Result<()> {
    if output == Output::Json {
        return print_json(&serde_json::json!({ done: versions }));
    }
    if versions.is_empty() {
        println!("nothing {done}");
    } else {
        println!("{done}: {}", versions.join(", "));
    }
    Ok(())
}

pub async fn run(factory: &CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Migrate(MigrateArgs {
            action: Some(action),
            ..
        }) => migrate_action(factory, action).await,
        Command::Migrate(MigrateArgs {
            action: None,
            common: Some(common),
            target,
            dry_run,
        }) => {
            let handle = factory.open(&common.catalog).await?;
            let r = runner(&handle, &common);
            let target = target.map(Target::from);
            if dry_run {
                return print_steps(&r.plan(target).await?, "would apply", common.output);
            }
            print_versions(&r.migrate(target).await?, "applied", common.output)
        }
        Command::Migrate(MigrateArgs {
            action: None,
            common: None,
            ..
        }) => bail!("migrate needs --namespace (see `iceberg-ops migrate --help`)"),
        Command::Rollback {
            common,
            steps,
            target,
            dry_run,
            force,
            allow_destructive,
        } => {
            let handle = factory.open(&common.catalog).await?;
            let r = runner(&handle, &common);
            let to = match target {
                Some(t) => RollbackTo::Target(t.into()),
                None => RollbackTo::Steps(steps.unwrap_or(1)),
            };
            let options = RollbackOptions {
                force,
                allow_destructive,
            };
            if dry_run {
                return print_steps(
                    &r.plan_rollback_with(to, options).await?,
                    "would roll back",
                    common.output,
                );
            }
            print_versions(
                &r.rollback_with(to, options).await?,
                "rolled back",
                common.output,
            )
        }
        Command::Status { common } => {
            let handle = factory.open(&common.catalog).await?;
            let entries = runner(&handle, &common).status().await?;
            if common.output == Output::Json {
                return print_json(&entries);
            }
            if entries.is_empty() {
                println!("no migrations for namespace {}", common.namespace);
            }
            for e in entries {
                println!("{e}");
            }
            Ok(())
        }
        Command::Plan { common, target } => {
            let handle = factory.open(&common.catalog).await?;
            let steps = runner(&handle, &common)
                .plan(target.map(Target::from))
                .await?;
            print_steps(&steps, "apply", common.output)
        }
        Command::Stamp { common, target } => {
            let handle = factory.open(&common.catalog).await?;
            let done = runner(&handle, &common)
                .stamp(target.map(Target::from))
                .await?;
            print_versions(&done, "stamped", common.output)
        }
        Command::History { common } => {
            let handle = factory.open(&common.catalog).await?;
            let rows = runner(&handle, &common).history().await?;
            if common.output == Output::Json {
                return print_json(&rows);
            }
            if rows.is_empty() {
                println!("no history for namespace {}", common.namespace);
            }
            for r in rows {
                print!(
                    "{}  {:<12} {}  {}",
                    r.version,
                    r.status.as_str(),
                    r.applied_at,
                    r.description.unwrap_or_default()
                );
                match r.error {
                    Some(e) => println!("  {e}"),
                    None => println!(),
                }
            }
            Ok(())
        }
        Command::Validate { common } => {
            let handle = factory.open(&common.catalog).await?;
            let issues = runner(&handle, &common).validate().await?;
            if common.output == Output::Json {
                print_json(&issues)?;
            } else if issues.is_empty() {
                println!("every applied migration matches its file");
            } else {
                for i in &issues {
                    println!("{i}");
                }
            }
            if !issues.is_empty() {
                bail!("{} applied migration(s) changed or missing", issues.len());
            }
            Ok(())
        }
        Command::New {
            common,
            description,
            from,
        } => new_file(factory, &common, &description, from.as_deref()).await,
    }
}

async fn migrate_action(factory: &CatalogFactory, action: MigrateAction) -> anyhow::Result<()> {
    match action {
        MigrateAction::Repair { common } => {
            let handle = factory.open(&common.catalog).await?;
            let report = runner(&handle, &common).repair().await?;
            if common.output == Output::Json {
                return print_json(&report);
            }
            if report.cleared.is_empty() && report.realigned.is_empty() {
                println!("nothing to repair");
            }
            for c in &report.cleared {
                print!(
                    "cleared failed {}  {}",
                    c.version,
                    c.error.as_deref().unwrap_or("")
                );
                if c.operations_landed > 0 {
                    print!(
                        "  ({} operation(s) of its attempt landed and stay: `migrate` runs it \
                         from its first operation)",
                        c.operations_landed
                    );
                }
                println!();
            }
            for r in &report.realigned {
                println!(
                    "realigned {}  checksum {} -> {}{}",
                    r.version,
                    r.recorded.as_deref().unwrap_or("(none)"),
                    r.current,
                    r.description_was
                        .as_ref()
                        .map(|d| format!(" (description was {d:?})"))
                        .unwrap_or_default()
                );
            }
            Ok(())
        }
        MigrateAction::Baseline {
            common,
            version,
            description,
        } => {
            let handle = factory.open(&common.catalog).await?;
            let r = runner(&handle, &common);
            let target = Target::from(version);
            let normalized = target.normalized()?;
            let written = r.baseline(Some(target), Some(&description)).await?;
            if common.output == Output::Json {
                return print_json(
                    &serde_json::json!({ "baseline": normalized, "recorded": written }),
                );
            }
            if written {
                println!(
                    "baselined namespace {} at {normalized}: migrate ignores versions up to it",
                    common.namespace
                );
            } else {
                println!(
                    "namespace {} is already baselined at {normalized}",
                    common.namespace
                );
            }
            Ok(())
        }
    }
}

async fn new_file(
    factory: &CatalogFactory,
    common: &Common,
    description: &str,
    from: Option<&Path>,
) -> anyhow::Result<()> {
    let slug: String = description
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let slug = slug.trim_matches('_').to_string();
    if slug.is_empty() {
        bail!("the description '{description}' has no letters or digits to name the file by");
    }
    let dir = ops_runner::source::migrations_dir_for(&common.migrations_dir, &common.namespace);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let next = ops_runner::source::next_version(&dir)?;
    let path = dir.join(format!("{next}_{slug}.toml"));
    let (text, destructive, notes) = match from {
        None => (
            ops_runner::file::template(&next, description),
            Vec::new(),
            Vec::new(),
        ),
        Some(desired) => {
            let handle = factory.open(&common.catalog).await?;
            let text = std::fs::read_to_string(desired)
                .with_context(|| format!("read {}", desired.display()))?;
            let ns = iceberg::NamespaceIdent::new(common.namespace.clone());
            let diff = ops_runner::autogen::diff_against_live(
                &handle,
                &ns,
                &text,
                desired,
                &next,
                description,
            )
            .await?;
            let notes: Vec<String> = diff
                .unsupported
                .iter()
                .map(|u| format!("NOT GENERATED: {u}"))
                .chain(diff.kept.iter().map(|k| format!("KEPT: {k}")))
                .collect();
            (diff.text, diff.destructive, notes)
        }
    };
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    println!("wrote {}", path.display());
    for d in destructive {
        println!("  DESTRUCTIVE: {d} (review, then set allow_destructive = true)");
    }
    for n in notes {
        println!("  {n}");
    }
    Ok(())
}

const QUICKSTART_CREATE: &str = r#"description = "create customers"

[[upgrade]]
op = "create_table"
table = "customers"
identifier_fields = ["id"]
columns = [
  { name = "id", type = "long", required = true },
  { name = "name", type = "string" },
  { name = "score", type = "int" },
  { name = "balance", type = "decimal(10,2)" },
]
"#;

const QUICKSTART_EVOLVE: &str = r#"description = "rename name, widen score"

[[upgrade]]
op = "rename_column"
table = "customers"
column = "name"
to = "full_name"

[[upgrade]]
op = "widen_column"
table = "customers"
column = "score"
type = "long"

[[downgrade]]
op = "rename_column"
table = "customers"
column = "full_name"
to = "name"
"#;

/// quickstart's schema migrations: writes two sample files under
/// `.iceberg-ops/migrations/<namespace>/` (kept if they exist) and applies them.
pub async fn quickstart_migrations(
    handle: &ops_core::CatalogHandle,
    namespace: &str,
) -> anyhow::Result<()> {
    let base = Path::new(ops_core::catalog::EMBEDDED_DIR).join("migrations");
    let dir = base.join(namespace);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    for (name, text) in [
        ("0001_create_customers.toml", QUICKSTART_CREATE),
        ("0002_rename_and_widen.toml", QUICKSTART_EVOLVE),
    ] {
        let path = dir.join(name);
        if !path.exists() {
            std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
        }
    }
    let runner = MigrationRunner::new(handle, namespace).migrations_dir(Some(&base));
    let applied = runner.migrate(None).await?;
    for entry in runner.status().await? {
        println!("schema    {entry}");
    }
    if applied.is_empty() {
        println!("schema    migrations in {}: already applied", dir.display());
    } else {
        println!(
            "schema    applied {} from {} (history: {})",
            applied.join(", "),
            dir.display(),
            runner.history_store().table_ident()
        );
    }
    Ok(())
}
