//! # ops-s3tables: the Amazon S3 Tables table-migration API, safely
//!
//! Amazon S3 Tables migrates a Glue Data Catalog Hive/Parquet table into a table bucket through
//! six operations. This crate owns that concept:
//!
//! - [`S3TablesClient`] — typed StartTableMigration, GetTableMigration, ListTableMigrations,
//!   UpdateTableMigration, SyncTableMigration and CompleteTableMigration (plus GetTable and
//!   GetTableMetadataLocation) with the service model's routes, success codes and shapes
//!   ([`model`]), SigV4 via `aws-sigv4` with the standard AWS credential chain, typed
//!   [`Error`]s, retries with backoff for 429/5xx, and paging through empty pages.
//! - [`review`] — reads the table compatibility report (CSV) a plan wrote and classifies each
//!   column's type change (lossless, widened, converted, incompatible, unsupported).
//! - [`MigrationGuard`] — the operator runbook as code: start with review on, wait with backoff
//!   and a stuck limit, review before approve (data loss needs explicit confirmation, invalid
//!   findings mean cancel), sync only when nothing runs, complete only a `succeeded` migration
//!   after row-count parity, then check `managedByService` is cleared; [`recovery_advice`]
//!   says what to do after a fail or cancel.
//! - [`emulator`] — a local service (binary `s3tables-emulator`) that serves the operations and
//!   really migrates against moto (Glue + S3 → S3 Tables), for tests and local trials.
//!
//! ```no_run
//! # async fn demo() -> ops_s3tables::Result<()> {
//! let client = ops_s3tables::S3TablesClient::from_env(None, None).await?;
//! let m = client.get_table_migration(Some("mig-1"), None).await?;
//! println!("{} {}", m.migration_id, m.state);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod aws;
mod client;
pub mod emulator;
mod error;
pub mod guard;
pub mod http_server;
pub mod model;
pub mod review;
mod sign;
pub mod source;

pub use client::{RetryPolicy, S3TablesClient, TableRef, default_endpoint};
pub use error::{Error, Result};
pub use guard::{GuardError, MigrationGuard, WaitPolicy, recovery_advice};
pub use sign::Signer;
