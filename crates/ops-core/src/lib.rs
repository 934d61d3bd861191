//! # ops-core: catalogs and table operations for Apache Iceberg
//!
//! The layer every iceberg-ops crate but ops-reconcile and ops-checkpoint stands on (it uses
//! ops-reconcile's field-id Arrow conversion for scans). It owns two concepts:
//!
//! - **catalogs** — [`CatalogFactory::build`] turns a catalog name into a connected
//!   [`iceberg::Catalog`] using PyIceberg-compatible configuration (`.pyiceberg.yaml`,
//!   `PYICEBERG_CATALOG__*` variables, or an explicit file). Kinds: `sql` (SQLite, PostgreSQL),
//!   `rest`, `glue`, `s3tables`, `memory`. The name `sqlite` needs no configuration: it is the
//!   embedded default under `./.iceberg-ops/`.
//! - **data in and out of tables** — [`write::write_data_files`] lays Arrow batches out as
//!   Parquet files by the table's partition spec, [`append::append`] commits them (through
//!   [`ops::append::AppendBuilder`], the one append path), and
//!   [`scan::scan`] streams a table back as Arrow batches; [`equality_deletes`] applies
//!   other engines' equality deletes to rows read for a copy or a rewrite (null-safe, as Java).
//!
//! ```no_run
//! # async fn demo() -> ops_core::Result<()> {
//! let handle = ops_core::CatalogFactory::build("sqlite").await?;
//! for ns in handle.catalog().list_namespaces(None).await? {
//!     println!("{ns:?}");
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod append;
pub mod catalog;
pub mod commit;
pub mod display;
pub mod equality_deletes;
mod error;
pub mod eval;
#[doc(hidden)]
pub mod failpoint;
pub mod file_path;
pub mod filter;
pub mod http;
pub mod keys;
pub mod location;
pub mod manifests;
pub mod object_store;
pub mod ops;
pub mod partition_constants;
pub mod partition_tuples;
pub mod prune;
pub mod rows;
pub mod run_mark;
pub mod scan;
pub mod storage;
pub mod write;

pub use catalog::{CatalogFactory, CatalogHandle, CatalogKind, CatalogSettings, ConfigError};
pub use error::{Error, Result};

/// Re-exported so callers use the exact iceberg version ops-core was built against.
pub use iceberg;
