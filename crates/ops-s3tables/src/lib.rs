//! # ops-s3tables: the Amazon S3 Tables table-migration API, safely
//!
//! Amazon S3 Tables migrates a Glue Data Catalog Hive/Parquet table into a table bucket through
//! six operations. This crate owns that concept:
//!
//! - [`S3TablesClient`] — typed StartTableMigration, GetTableMigration, ListTableMigrations,
//!   UpdateTableMigration, SyncTableMigration and CompleteTableMigration (plus GetTable and
//!   GetTableMetadataLocation) with the service model's routes, success codes, wire names and
//!   shapes ([`model`]; enums keep values they do not know), over HTTPS (rustls) with connect
//!   and read timeouts, SigV4 via `aws-sigv4` with the standard AWS credential chain behind
//!   its identity cache, typed [`Error`]s, retries with jittered backoff and `Retry-After`
//!   (Start, Sync and Update look the migration up before resending), and paging through
//!   empty pages.
//! - [`service_model`] — the service model itself, read at run time: the emulator validates
//!   with it and the conformance tests hold [`model`] against it, shape by shape.
//! - [`review`] — reads the table compatibility report (CSV) a plan wrote and classifies each
//!   column's type change (lossless, widened, converted, incompatible, unsupported); what it
//!   does not recognise fails closed.
//! - [`MigrationGuard`] — the operator runbook as code: start with review on, wait with backoff
//!   and a stuck limit that grows with the table, review before approve (data loss and
//!   converted columns confirmed by name, invalid findings mean cancel, a missing report means
//!   cannot verify), sync only when nothing runs, complete only when the table's latest
//!   migration succeeded and row counts match (Parquet footers read by range), then check
//!   `managedByService` is cleared; [`recovery_advice`] says what to do after a fail or
//!   cancel.
//! - [`emulator`] — a local service (binary `s3tables-emulator`) that serves the operations
//!   over HTTPS, verifies SigV4 signatures, validates requests against the model and really
//!   migrates against moto (Glue + S3 → S3 Tables), for tests and local trials.
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
#[cfg(test)]
mod conformance_tests;
pub mod emulator;
mod error;
pub mod guard;
pub mod http_server;
pub mod model;
pub mod review;
pub mod service_model;
mod sign;
pub mod source;

pub use client::{
    HttpSettings, RetryPolicy, S3TablesClient, TableRef, default_endpoint, http_client,
};
pub use error::{Error, Result};
pub use guard::{Confirmation, GuardError, MigrationGuard, WaitPolicy, recovery_advice};
pub use sign::Signer;
