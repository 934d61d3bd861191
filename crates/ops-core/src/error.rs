//! The crate-wide error type.

use std::path::PathBuf;

use crate::catalog::ConfigError;

/// Result alias used throughout ops-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything ops-core can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A catalog definition is missing or invalid; nothing was connected.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// The catalog was defined correctly but could not be reached or loaded.
    #[error("catalog '{catalog}' ({kind}) could not be opened: {source}")]
    CatalogOpen {
        /// Catalog name as configured.
        catalog: String,
        /// Catalog kind, e.g. `sql`.
        kind: String,
        /// The underlying iceberg error.
        #[source]
        source: Box<iceberg::Error>,
    },

    /// A local directory or file the embedded catalog needs could not be created.
    #[error("could not prepare '{}': {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The table changed under the commit (another writer committed first, or a requirement no
    /// longer holds) and the operation could not be rebased onto it.
    #[error("commit to {table} conflicts with a concurrent change: {detail}")]
    CommitConflict {
        /// The table.
        table: String,
        /// What conflicted.
        detail: String,
    },

    /// A commit may or may not have landed: its connection failed after the request was sent,
    /// the catalog answered 5xx, or a repeated request was refused (a 409 after a 503 may mean
    /// the first attempt landed). The files it wrote are kept, since the table may reference
    /// them; reload the table to see (Java's `CommitStateUnknownException`).
    #[error(
        "commit to {table}: its outcome is unknown ({detail}); the files it wrote are kept; reload the table before trying again"
    )]
    CommitStateUnknown {
        /// The table.
        table: String,
        /// Why it is unknown.
        detail: String,
    },

    /// The catalog service refused or failed a request.
    #[error("catalog '{catalog}': {message}")]
    Catalog {
        /// Catalog name.
        catalog: String,
        /// What went wrong (never includes secrets).
        message: String,
    },

    /// An error reported by the iceberg crate while reading or writing a table.
    #[error(transparent)]
    Iceberg(Box<iceberg::Error>),

    /// Arrow rejected a batch (wrong schema, bad cast, ...).
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),

    /// The caller asked for something the table cannot do, named in the message.
    #[error("{0}")]
    InvalidInput(String),
}

impl From<iceberg::Error> for Error {
    fn from(e: iceberg::Error) -> Self {
        Error::Iceberg(Box::new(e))
    }
}
