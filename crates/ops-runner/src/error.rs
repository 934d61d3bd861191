//! The crate's error type: one variant per seed exception, with the thing at fault named.

use std::path::PathBuf;

/// Result alias used throughout ops-runner.
pub type Result<T, E = RunnerError> = std::result::Result<T, E>;

/// Another process changed the migration history during a run (the seed's
/// `ConcurrentMigrationError`).
///
/// Concurrent runs for one namespace are not prevented, only detected when history is written:
/// the losing run gets this error and its status is not recorded. Run migrations for a namespace
/// from one job at a time (a CI concurrency group) or put an external lock in front.
#[derive(Debug, Clone, thiserror::Error)]
#[error("ConcurrentMigrationError: {0}")]
pub struct ConcurrentMigrationError(pub String);

/// Everything the runner and history can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// A version or target is not 1–4 decimal digits (the seed's `ValueError`).
    #[error("invalid migration version '{value}': expected 1-4 decimal digits such as 2 or 0002")]
    InvalidVersion {
        /// What was given.
        value: String,
    },
    /// A target names no discovered (or, for rollback, applied) migration.
    #[error("target {target} names no {what} migration; known versions: {known}")]
    UnknownTarget {
        /// The normalised target.
        target: String,
        /// `discovered` or `discovered or applied`.
        what: &'static str,
        /// The versions that would be accepted.
        known: String,
    },
    /// Other invalid arguments (`steps` below 1, ...), nothing was done.
    #[error("{0}")]
    InvalidArgument(String),
    /// The migrations directory does not exist (the seed's `FileNotFoundError`).
    #[error(
        "migrations directory {} does not exist; create it or pass --migrations-dir",
        .0.display()
    )]
    DirectoryNotFound(PathBuf),
    /// A migration file cannot be read or parsed; names the file, and the line and field when
    /// known.
    #[error("cannot load migration {}: {message}", file.display())]
    Load {
        /// The file.
        file: PathBuf,
        /// What is wrong, with line and field.
        message: String,
    },
    /// Two migrations declare the same version.
    #[error("duplicate migration version {version}: {first} and {second}")]
    DuplicateVersion {
        /// The version.
        version: String,
        /// One source.
        first: String,
        /// The other.
        second: String,
    },
    /// A migration failed; the failure was recorded as `failed` (the seed's `RuntimeError`).
    #[error("migration {version} ({description}) failed: {message}")]
    MigrationFailed {
        /// The version.
        version: String,
        /// Its description.
        description: String,
        /// `<Type>: <message>`, as recorded.
        message: String,
    },
    /// A downgrade failed.
    #[error("rollback of {version} ({description}) failed: {message}")]
    RollbackFailed {
        /// The version.
        version: String,
        /// Its description.
        description: String,
        /// `<Type>: <message>`.
        message: String,
    },
    /// A migration has no downgrade and none can be derived (the seed's `NotImplementedError`).
    #[error("migration {version} cannot be rolled back: {reason}")]
    NotImplemented {
        /// The version.
        version: String,
        /// Why (the irreversible operation), and the fix.
        reason: String,
    },
    /// Applied migrations to undo have no file any more; nothing was rolled back.
    #[error(
        "cannot roll back: the migration file of version(s) {versions} is missing; restore it \
         before rolling back"
    )]
    MissingMigration {
        /// The versions, comma-separated.
        versions: String,
    },
    /// A version to roll back changed since it was applied: its file's checksum differs from the
    /// one recorded. Nothing was rolled back.
    #[error(
        "cannot roll back {version}: {migration} changed since it was applied (checksum when \
         applied {recorded}, now {current}); a rollback undoes what was applied, so restore the \
         file as it was, or pass --force to run today's file anyway (`migrate repair` records \
         today's checksum)"
    )]
    ChecksumMismatch {
        /// The version.
        version: String,
        /// Where the migration is.
        migration: String,
        /// The checksum recorded when it was applied.
        recorded: String,
        /// The file's checksum now.
        current: String,
    },
    /// A migration failed after some of its operations landed, and those operations changed in
    /// its file since: resuming (or undoing) them from today's file would guess.
    #[error(
        "migration {version} failed after {landed} of its operations landed, and those \
         operations changed in {migration} since (checksum of the landed operations then \
         {recorded}, now {current}); restore them as they were (fix only what comes after \
         them), or undo them by hand and run `migrate repair` to clear the failure"
    )]
    LandedChanged {
        /// The version.
        version: String,
        /// How many operations landed.
        landed: usize,
        /// Where the migration is.
        migration: String,
        /// The landed operations' checksum then.
        recorded: String,
        /// Their checksum now.
        current: String,
    },
    /// A derived downgrade would drop a table that holds rows, and the command did not allow it.
    #[error(
        "rollback of {version} would drop table {table}, which holds {rows} row(s) (the derived \
         inverse of its create_table); pass --allow-destructive to drop it with its data, or \
         write a [[downgrade]] in the file. Nothing was rolled back"
    )]
    DestructiveRollback {
        /// The version.
        version: String,
        /// The table.
        table: String,
        /// Its rows (live data files' records).
        rows: u64,
    },
    /// A derived downgrade would drop a column that holds values, and the command did not
    /// allow it.
    #[error(
        "rollback of {version} would drop column {column} of {table}, which {} (the derived \
         inverse of its add_column); pass --allow-destructive to drop it with its data, or \
         write a [[downgrade]] in the file. Nothing was rolled back",
        match values {
            Some(n) => format!("holds {n} non-null value(s)"),
            None => "may hold values (data files without column metrics)".to_string(),
        }
    )]
    DestructiveColumnRollback {
        /// The version.
        version: String,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// Its non-null values per the data files' metrics (`None`: unknown).
        values: Option<u64>,
    },
    /// A migration of the Python iceberg-ops (`NNNN_<description>.py`) that iceberg-ops would
    /// have to run.
    #[error(
        "cannot {action} {version}: it is a migration of the Python iceberg-ops ({}), which \
         iceberg-ops does not run; {action} it with the Python tool{hint}",
        file.display()
    )]
    PythonMigration {
        /// The version.
        version: String,
        /// The `.py` file.
        file: PathBuf,
        /// `apply` or `roll back`.
        action: &'static str,
        /// What else to do, or nothing.
        hint: String,
    },
    /// Another process changed history or a migrated table concurrently.
    #[error(transparent)]
    Concurrent(#[from] ConcurrentMigrationError),
    /// The catalog or a table operation failed.
    #[error(transparent)]
    Core(#[from] ops_core::Error),
    /// The history table holds something this version of iceberg-ops cannot read.
    #[error("migration history table {table}: {message}")]
    History {
        /// The history table.
        table: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl From<iceberg::Error> for RunnerError {
    fn from(e: iceberg::Error) -> Self {
        RunnerError::Core(ops_core::Error::from(e))
    }
}

/// What a migration step (upgrade, downgrade, hooks) fails with. Its [`StepError::kind`] is the
/// `<Type>` of the `<Type>: <message>` recorded in history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// A table operation failed.
    #[error(transparent)]
    Core(#[from] ops_core::Error),
    /// The step refuses to run (an unsafe or impossible operation), named in the message.
    #[error("{0}")]
    Invalid(String),
    /// The step has no implementation (a downgrade that was not written).
    #[error("{0}")]
    NotImplemented(String),
    /// Any other error from a code migration.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
    /// An exception raised by a migration written in another language (a Python migration
    /// file's hook), already in the `<Type>: <message>` form history records, its type the
    /// exception's own (`ValueError: ...`), as the seed records a failure.
    #[error("{0}")]
    Raised(String),
}

impl From<iceberg::Error> for StepError {
    fn from(e: iceberg::Error) -> Self {
        StepError::Core(ops_core::Error::from(e))
    }
}

impl StepError {
    /// The error's type name, as recorded in history (`CommitConflict`, `Iceberg`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            StepError::Core(e) => match e {
                ops_core::Error::Config(_) => "ConfigError",
                ops_core::Error::CatalogOpen { .. } => "CatalogOpen",
                ops_core::Error::Io { .. } => "IoError",
                ops_core::Error::CommitConflict { .. } => "CommitConflict",
                ops_core::Error::CommitStateUnknown { .. } => "CommitStateUnknown",
                ops_core::Error::Catalog { .. } => "CatalogError",
                ops_core::Error::Iceberg(_) => "IcebergError",
                ops_core::Error::Arrow(_) => "ArrowError",
                ops_core::Error::InvalidInput(_) => "InvalidInput",
                _ => "Error",
            },
            StepError::Invalid(_) => "InvalidMigration",
            StepError::NotImplemented(_) => "NotImplemented",
            StepError::Other(_) | StepError::Raised(_) => "Error",
        }
    }

    /// `<Type>: <message>`.
    pub fn record(&self) -> String {
        match self {
            StepError::Raised(record) => record.clone(),
            _ => format!("{}: {self}", self.kind()),
        }
    }

    /// Whether the step lost a race against a concurrent commit.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            StepError::Core(ops_core::Error::CommitConflict { .. })
        )
    }
}
