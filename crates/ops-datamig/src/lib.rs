//! # ops-datamig: streaming, resumable Iceberg-to-Iceberg data migration
//!
//! A [`DataMigrator`] reads a source table at a pinned snapshot, projects every batch through an
//! `ops_reconcile::SchemaReconciler` plan, writes it to the destination through ops-core's table
//! operations one commit per batch (append, copy-on-write upsert, or overwrite_partition), and records progress in an
//! `ops_checkpoint::CheckpointStore` so a crashed run resumes after its last committed batch.
//! [`DataMigrator::verify`] then compares source and destination ([`VerificationResult`]).
//!
//! - Pre-flight runs every check before the destination is touched; a dry run runs the checks
//!   and reads the source through the plan, writing nothing ([`MigrationResult::estimated_rows`]).
//! - Every snapshot a batch creates carries `iceberg-ops.migration-job` and
//!   `iceberg-ops.migration-batch` in its summary; a resume records a batch that landed before a
//!   crash instead of writing it twice, and refuses a destination rolled back under the
//!   checkpoint, naming [`MigrationResult::dest_snapshot_before`] as the rollback target.
//! - Memory is bounded by a few chunks of `batch_rows` rows, not by source file sizes; the
//!   reader (decode, project) and the writer (encode, commit) run on separate tasks.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use iceberg::TableIdent;
//! use ops_datamig::{DataMigrator, VerifyMethod};
//! use ops_reconcile::SchemaReconciler;
//!
//! let lake = ops_core::CatalogFactory::build("sqlite").await?;
//! let mut migrator = DataMigrator::new(
//!     &lake, TableIdent::from_strs(["sales", "orders"])?,
//!     &lake, TableIdent::from_strs(["sales", "orders_v2"])?,
//! )
//! .schema_reconciler(SchemaReconciler::new().rename("order_total", "total_amount"))
//! .row_filter("region = 'eu'")
//! .checkpoint("/tmp/orders.json");
//! let result = migrator.run().await?;
//! println!("{} rows in {} commits", result.rows_moved, result.new_snapshots.len());
//! assert!(migrator.verify(VerifyMethod::RowCount, 100).await?.matches);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod committer;
mod copy;
mod error;
pub mod job;
mod migrator;
mod paged;
mod read;
mod remote;
mod types;
mod upsert;
mod verify;
mod worker;

pub use copy::{
    COPY_CHUNK_BYTES, FileRoute, FileRouting, PlannedFile, RoutedFile, copy_files, route_files,
    table_eligibility,
};
pub use error::{MigrationError, Result};
pub use job::{BatchOutput, MigrationPlan, MigrationTask, TableLocator, TaskOutput};
pub use migrator::{
    DEFAULT_BATCH_ROWS, DataMigrator, MIGRATION_BATCH_PROPERTY, MIGRATION_JOB_PROPERTY, Progress,
};
pub use types::{
    CopyMode, MigrationResult, PartitionStrategy, RowFilter, VerificationResult, VerifyMethod,
    WriteMode,
};
