//! The crate-wide error type.

use std::path::PathBuf;

/// Result alias used throughout ops-datamig.
pub type Result<T, E = MigrationError> = std::result::Result<T, E>;

/// Everything a migration or a verification can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrationError {
    /// A setting is invalid (the seed's `ValueError`); nothing was written.
    #[error("{0}")]
    InvalidInput(String),

    /// The reconciler cannot map the source schema onto the destination; nothing was written.
    #[error(transparent)]
    Plan(#[from] ops_reconcile::ReconcileError),

    /// The checkpoint file cannot be used (corrupt, unreadable, locked, ...).
    #[error(transparent)]
    Checkpoint(#[from] ops_checkpoint::CheckpointError),

    /// An existing checkpoint cannot be resumed (the seed's `CheckpointError` refusals); raised
    /// before any destination write.
    #[error(
        "cannot resume from checkpoint {}: {reason}{}",
        path.display(),
        rollback_hint(*committed_batches, *rollback_to)
    )]
    Resume {
        /// The checkpoint file.
        path: PathBuf,
        /// Why it cannot be resumed, and what to do.
        reason: String,
        /// Batches the checkpoint records as committed.
        committed_batches: u64,
        /// The destination snapshot before the job wrote anything (`dest_snapshot_before`).
        rollback_to: Option<i64>,
    },

    /// A batch failed mid-stream; every earlier batch is committed (and checkpointed).
    #[error(
        "batch {batch} failed: {source}; {}",
        match (committed_batches, checkpoint) {
            (0, _) => "no batch was committed".to_string(),
            (n, Some(p)) => format!(
                "the {n} batch(es) before it stay committed and checkpointed in {}: fix the cause \
                 and run again with the same checkpoint to resume", p.display()),
            (n, None) => format!(
                "the {n} batch(es) before it stay committed; without a checkpoint a re-run \
                 appends them again"),
        }
    )]
    Batch {
        /// Index of the failing batch.
        batch: u64,
        /// Batches committed before it (by this run and earlier ones).
        committed_batches: u64,
        /// The checkpoint, when one is used.
        checkpoint: Option<PathBuf>,
        /// What went wrong.
        #[source]
        source: Box<MigrationError>,
    },

    /// A table operation, catalog or read failed.
    #[error(transparent)]
    Core(#[from] ops_core::Error),

    /// The iceberg crate failed while planning or reading.
    #[error(transparent)]
    Iceberg(Box<iceberg::Error>),

    /// Arrow rejected a batch.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl From<iceberg::Error> for MigrationError {
    fn from(e: iceberg::Error) -> Self {
        MigrationError::Iceberg(Box::new(e))
    }
}

fn rollback_hint(committed: u64, rollback_to: Option<i64>) -> String {
    if committed == 0 {
        return String::new();
    }
    let target = match rollback_to {
        Some(id) => format!("snapshot {id}"),
        None => "its empty state (it had no snapshot before the job)".to_string(),
    };
    format!(
        ". {committed} batch(es) of this job are already committed: roll the destination back \
         to {target} (iceberg-ops table rollback) before resetting the checkpoint, or a re-run \
         writes those rows again"
    )
}
