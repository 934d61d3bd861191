//! `iceberg-ops catalog ...`

use clap::Subcommand;
use ops_core::CatalogFactory;
use ops_core::catalog::redact::display_value;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List configured catalogs (secrets masked), plus the embedded default.
    List,
    /// Connect to a catalog and list its namespaces.
    Check {
        /// Catalog name.
        #[arg(default_value_t = crate::invocation::default_catalog())]
        name: String,
    },
}

pub async fn run(factory: &CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::List => {
            let mut names: Vec<String> = factory.config().names().map(str::to_string).collect();
            if !names
                .iter()
                .any(|n| n == ops_core::catalog::EMBEDDED_DEFAULT)
            {
                names.push(ops_core::catalog::EMBEDDED_DEFAULT.to_string());
            }
            for name in names {
                match factory.resolve(&name) {
                    Ok(s) => println!("{name}  ({}, from {})", s.kind(), s.origin()),
                    Err(e) => println!("{name}  (invalid: {e})"),
                }
                if let Some(def) = factory.config().get(&name) {
                    for (k, v) in &def.properties {
                        println!("    {k} = {}", display_value(k, v));
                    }
                }
            }
            Ok(())
        }
        Command::Check { name } => {
            let handle = factory.open(&name).await?;
            let namespaces = handle.catalog().list_namespaces(None).await?;
            println!(
                "catalog '{}' ({}, from {}) is reachable; {} namespace(s)",
                handle.name(),
                handle.kind(),
                handle.settings().origin(),
                namespaces.len()
            );
            for ns in namespaces {
                println!("  {}", ns.join("."));
            }
            Ok(())
        }
    }
}
