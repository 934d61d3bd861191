//! Catalogs: PyIceberg-compatible definitions → connected iceberg catalogs.
//!
//! [`CatalogFactory::build`] is the entry point; `sqlite` needs no configuration (the embedded
//! default under `./.iceberg-ops/`).

mod config;
mod factory;
pub mod redact;
pub mod rest;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub use config::{CatalogConfig, CatalogDefinition, ConfigSources, Origin, PYICEBERG_YAML};
pub use factory::{
    CatalogFactory, CatalogHandle, CatalogSettings, EMBEDDED_DEFAULT, EMBEDDED_DIR, open_settings,
    prepare_embedded, settings_for,
};

/// The catalog implementations iceberg-ops can operate on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogKind {
    /// iceberg-catalog-sql on SQLite or PostgreSQL (PyIceberg's `sql`).
    Sql,
    /// An Iceberg REST catalog.
    Rest,
    /// AWS Glue Data Catalog.
    Glue,
    /// Amazon S3 Tables.
    S3Tables,
    /// iceberg's in-process memory catalog (PyIceberg's `in-memory`).
    Memory,
}

impl CatalogKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [CatalogKind; 5] = [
        CatalogKind::Sql,
        CatalogKind::Rest,
        CatalogKind::Glue,
        CatalogKind::S3Tables,
        CatalogKind::Memory,
    ];
}

impl fmt::Display for CatalogKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CatalogKind::Sql => "sql",
            CatalogKind::Rest => "rest",
            CatalogKind::Glue => "glue",
            CatalogKind::S3Tables => "s3tables",
            CatalogKind::Memory => "memory",
        })
    }
}

impl FromStr for CatalogKind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sql" => Ok(CatalogKind::Sql),
            "rest" => Ok(CatalogKind::Rest),
            "glue" => Ok(CatalogKind::Glue),
            "s3tables" | "s3-tables" => Ok(CatalogKind::S3Tables),
            "memory" | "in-memory" => Ok(CatalogKind::Memory),
            _ => Err(()),
        }
    }
}

/// A catalog definition is missing or invalid. Messages name the catalog, the key and where the
/// definition came from; secret values never appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No definition of that name anywhere.
    #[error(
        "catalog '{name}' is not defined (looked in: {searched}). Define it under `catalog:` in \
         .pyiceberg.yaml, pass --config FILE, or set PYICEBERG_CATALOG__{env_name}__TYPE and \
         __URI; the name 'sqlite' needs no definition (embedded default)"
    )]
    CatalogNotFound {
        /// The name asked for.
        name: String,
        /// Places that were searched.
        searched: String,
        /// The name as it appears in environment variables.
        env_name: String,
    },
    /// `type` names no supported kind.
    #[error(
        "catalog '{catalog}' (from {origin}) has type '{kind}', which iceberg-ops does not \
         support; use one of sql, rest, glue, s3tables, memory"
    )]
    UnknownKind {
        /// Catalog name.
        catalog: String,
        /// The type given.
        kind: String,
        /// Where the definition came from.
        origin: String,
    },
    /// A required key is absent.
    #[error("catalog '{catalog}' (from {origin}) is missing '{key}': {hint}")]
    MissingKey {
        /// Catalog name.
        catalog: String,
        /// The missing key.
        key: String,
        /// Where the definition came from.
        origin: String,
        /// What to put there.
        hint: String,
    },
    /// A key's value cannot be used.
    #[error("catalog '{catalog}' (from {origin}) has an invalid '{key}': {reason}")]
    InvalidValue {
        /// Catalog name.
        catalog: String,
        /// The offending key.
        key: String,
        /// Where the definition came from.
        origin: String,
        /// Why, and what would work.
        reason: String,
    },
    /// A configuration file could not be read or parsed.
    #[error("cannot read catalog configuration {}: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Parser or OS message.
        reason: String,
    },
}
