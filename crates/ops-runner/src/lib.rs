//! # ops-runner: versioned schema migrations for Iceberg tables
//!
//! The [`MigrationRunner`] discovers, applies and rolls back migrations for one namespace of a
//! catalog: `status`, `plan`, `migrate`, `rollback`, `stamp`, `history` (and `validate`). What
//! has been applied lives in the [`MigrationHistory`], a real Iceberg table,
//! `_iceberg_ops.migration_history`, with one row per `(version, namespace)`; runners for other
//! namespaces share it. Flyway's `repair` and `baseline` maintain it; a rollback undoes what was
//! applied (it refuses a file that changed since, unless forced).
//!
//! Migrations are declarative `NNNN_<description>.toml` files (see [`file`]) — an ordered list
//! of upgrade operations covering the Iceberg schema lifecycle and an optional downgrade — or
//! Rust types implementing [`Migration`], registered beside the files. Versions are 1–4 digits,
//! normalised by [`normalize_version`].
//!
//! ```no_run
//! # async fn demo() -> ops_runner::Result<()> {
//! use ops_runner::{MigrationRunner, RollbackTo};
//! let handle = ops_core::CatalogFactory::build("sqlite").await?;
//! let runner = MigrationRunner::new(&handle, "sales").migrations_dir(Some("./migrations"));
//! for entry in runner.status().await? {
//!     println!("{entry}");
//! }
//! runner.migrate(Some("0002".into())).await?;
//! runner.rollback(RollbackTo::Steps(1)).await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod autogen;
mod error;
pub mod file;
mod history;
mod migration;
pub mod operation;
mod runner;
pub mod source;
pub mod types;
mod version;

pub use error::{ConcurrentMigrationError, Result, RunnerError, StepError};
pub use file::{FileMigration, MigrationFile};
pub use history::{
    DEFAULT_META_NAMESPACE, DETAILS_COLUMN, Details, Entry, HISTORY_TABLE, HistoryRead, HistoryRow,
    MAX_ERROR_CHARS, MigrationHistory, Status, history_schema,
};
pub use migration::{Migration, MigrationContext};
pub use operation::Operation;
pub use runner::{
    ClearedFailure, MigrationRunner, PlannedStep, Realigned, RepairReport, RollbackOptions,
    RollbackTo, State, StatusEntry, ValidationIssue,
};
pub use version::{Target, normalize_version};
