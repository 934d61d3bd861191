//! # ops-datamig: streaming, resumable Iceberg-to-Iceberg data migration
//!
//! A [`DataMigrator`] reads a source table at a pinned snapshot, projects every batch through an
//! `ops_reconcile::SchemaReconciler` plan, writes it to the destination through ops-core's table
//! operations one commit per batch (append, copy-on-write upsert, or overwrite_partition), and records progress in an
//! `ops_checkpoint::CheckpointStore` so a crashed run resumes after its last committed batch.
//! [`DataMigrator::verify`] then compares source and destination ([`VerificationResult`]).
//!
//! The pipeline, one module per phase (data flows down the list, never back up):
//!
//! 1. **Pre-flight** (`migrator`): every check runs before the destination is touched; a dry
//!    run runs the checks and reads the source through the plan, writing nothing
//!    ([`MigrationResult::estimated_rows`]). Auto-added and widened columns are then committed
//!    and the checkpoint started.
//! 2. **Plan** (`plan`): the row filter and the reconciliation plan, the pinned snapshot's
//!    files in a fixed order, each file routed ([`route_files`]: copy, reference, rewrite or
//!    skip), and the files cut into tasks of numbered batches ([`MigrationPlan`], which can be
//!    handed to other processes).
//! 3. **Execute** (`execute`): workers read their tasks' files, cut exactly `batch_rows` rows
//!    per batch, project and write them (or [`copy_files`] whole) — never committing. Memory is
//!    bounded by a few chunks of `batch_rows` rows, not by source file sizes.
//! 4. **Commit** (`commit`): one committer commits the batches in order, one commit per batch
//!    (append, copy-on-write upsert, or overwrite_partition); every snapshot carries
//!    [`MIGRATION_JOB_PROPERTY`] and [`MIGRATION_BATCH_PROPERTY`] in its summary, so a resume
//!    records a batch that landed before a crash instead of writing it twice, and refuses a
//!    destination rolled back under the checkpoint, naming
//!    [`MigrationResult::dest_snapshot_before`] as the rollback target.
//! 5. **Verify** (`verify`): [`DataMigrator::verify`] compares source and destination.
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

mod commit;
mod error;
mod execute;
mod failpoint;
mod migrator;
mod nbytes;
mod plan;
#[cfg(test)]
mod testing;
mod types;
mod verify;

pub use commit::history::{
    COMPACTED_JOB_PROPERTY, MIGRATION_BATCH_PROPERTY, MIGRATION_JOB_PROPERTY,
};
pub use error::{MigrationError, Result};
pub use execute::copy::{COPY_CHUNK_BYTES, copy_files};
pub use execute::task::{WRITE_DATA_PATH, data_location};
pub use migrator::{DEFAULT_BATCH_ROWS, DataMigrator};
pub use plan::eligibility::table_eligibility;
pub use plan::job::{self, BatchOutput, MigrationPlan, MigrationTask, TableLocator, TaskOutput};
pub use plan::route::{FileRouting, PlannedFile, route_files};
pub use types::{
    CompletedSource, CopyMode, FileRoute, JobCompaction, JobExpiry, MigrationResult,
    OnDuplicateKeys, PartitionStrategy, Progress, RoutedFile, RowFilter, VerificationResult,
    VerifyMethod, WriteMode,
};
