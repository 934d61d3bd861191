//! The crate-wide error type.

use std::path::PathBuf;

use crate::types::WriteMode;

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
        if *job_done {
            String::new()
        } else {
            rollback_hint(dest, *committed_batches, *rollback_to, *write_mode)
        }
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
        /// The destination as CLI commands name it (`NS.T --catalog C`), for the advice.
        dest: String,
        /// The job's write mode: only an append writes the committed batches' rows twice when
        /// it is run again as a new job, so only then is undoing them advised.
        write_mode: WriteMode,
        /// The job completed: nothing needs to run again, so nothing needs undoing either.
        job_done: bool,
    },

    /// A batch failed mid-stream; every earlier batch is committed (and checkpointed).
    #[error(
        "batch {batch} failed: {source}; {}",
        match (committed_batches, checkpoint) {
            (0, _) => "no batch was committed".to_string(),
            (n, Some(p)) => format!(
                "the {n} batch(es) before it stay committed and checkpointed in {}: fix the cause \
                 and run again with the same checkpoint to resume", p.display()),
            (n, None) if *tagged_rerun => format!(
                "the {n} batch(es) before it stay committed; the same command run again finds \
                 them by their snapshot tags and commits the rest"),
            (n, None) => format!(
                "the {n} batch(es) before it stay committed; without a checkpoint a re-run {}",
                match write_mode {
                    WriteMode::Append => "appends them again (their rows twice)",
                    WriteMode::Upsert => "upserts them again (by key: no row twice, the work redone)",
                    WriteMode::OverwritePartition =>
                        "replaces their partitions again (no row twice, the work redone)",
                }),
        }
    )]
    Batch {
        /// Index of the failing batch.
        batch: u64,
        /// Batches committed before it (by this run and earlier ones).
        committed_batches: u64,
        /// The checkpoint, when one is used.
        checkpoint: Option<PathBuf>,
        /// The job's write mode: what a re-run without a checkpoint does to the batches before.
        write_mode: WriteMode,
        /// A re-run keeps the job id and finds the committed batches by their tags (committing
        /// a saved plan's outputs), whatever the checkpoint.
        tagged_rerun: bool,
        /// What went wrong.
        #[source]
        source: Box<MigrationError>,
    },

    /// The plan's job already completed in the destination: nothing was committed, and nothing
    /// needs to be (a repeated `migrate-data commit`, e.g. after a lost response). Callers that
    /// commit idempotently treat it as success. What an earlier commit left undone after
    /// completing (killed before it, say) is done first: the checkpoint is marked completed,
    /// and the job's snapshots are expired when the plan asks for it.
    #[error("job {job_id} is complete in {dest} ({why}): nothing to commit{note}{read}",
            note = expiry_note(.expiry.as_deref()),
            read = source_snapshots.as_ref().map_or_else(String::new, |s| format!(". {s}")))]
    AlreadyComplete {
        /// The plan's job.
        job_id: String,
        /// The destination as CLI commands name it.
        dest: String,
        /// What says it completed.
        why: String,
        /// The job's snapshots expired now (`expire_job_snapshots`) because an earlier commit
        /// completed the job but stopped before expiring them.
        expiry: Option<Box<crate::JobExpiry>>,
        /// The source snapshot the job read and the source's current one (`None` when the
        /// source could not be loaded): a re-run does not copy rows committed since. (Not
        /// `source`: thiserror takes a field of that name for the error's cause.)
        source_snapshots: Option<Box<crate::CompletedSource>>,
    },

    /// The caller asked the run to stop ([`crate::DataMigrator::stop_when`]): every batch
    /// committed before it is in the destination and the checkpoint, and the job is not
    /// marked complete, so the same job run again resumes after them.
    #[error(
        "the run was stopped after {committed_batches} committed batch(es); run the same job \
         again (with the same checkpoint) to resume"
    )]
    Stopped {
        /// Batches committed (this run and earlier ones).
        committed_batches: u64,
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

fn rollback_hint(
    dest: &str,
    committed: u64,
    rollback_to: Option<i64>,
    write_mode: WriteMode,
) -> String {
    if committed == 0 {
        return String::new();
    }
    // Run again as a new job, an upsert or a partition overwrite writes the same rows over
    // themselves: nothing to undo first.
    match write_mode {
        WriteMode::Append => {}
        WriteMode::Upsert => {
            return format!(
                ". {committed} batch(es) of this job are already committed; a new job (the \
                 checkpoint file deleted) upserts them again by key, no row twice"
            );
        }
        WriteMode::OverwritePartition => {
            return format!(
                ". {committed} batch(es) of this job are already committed; a new job (the \
                 checkpoint file deleted) replaces their partitions again, no row twice"
            );
        }
    }
    // Said as the commands an operator runs, on the job's destination.
    let undo = match rollback_to {
        Some(id) => format!(
            "roll the destination back to snapshot {id} (`iceberg-ops table rollback {dest} \
             --to {id}`)"
        ),
        None => format!(
            "empty the destination, which had no snapshot before the job (`iceberg-ops table \
             delete {dest} --where true`)"
        ),
    };
    format!(
        ". {committed} batch(es) of this job are already committed: {undo} before deleting the \
         checkpoint file, or a re-run writes those rows again"
    )
}

/// The end of [`MigrationError::AlreadyComplete`]'s message: the expiry it finished, if any.
fn expiry_note(expiry: Option<&crate::JobExpiry>) -> String {
    match expiry {
        None => String::new(),
        Some(e) => format!(
            "; the job's snapshot expiry, left undone by an earlier commit, ran now: {} \
             snapshot(s) expired, {}",
            e.expired_snapshots.len(),
            if e.kept_files {
                "files kept (gc.enabled=false)".to_string()
            } else {
                format!("{} data file(s) deleted", e.deleted_data_files)
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice is what a CLI user can run: commands, a file to delete; not a library call.
    #[test]
    fn resume_refusals_say_what_the_cli_user_does() {
        let err = MigrationError::Resume {
            path: PathBuf::from("/x/job.ckpt"),
            reason: "it was started with different settings".into(),
            committed_batches: 3,
            rollback_to: Some(42),
            dest: "db.orders --catalog prod".into(),
            write_mode: WriteMode::Append,
            job_done: false,
        }
        .to_string();
        assert!(
            err.contains("`iceberg-ops table rollback db.orders --catalog prod --to 42`"),
            "{err}"
        );
        assert!(err.contains("before deleting the checkpoint file"), "{err}");
        assert!(!err.contains("reset"), "{err}");
        let err = MigrationError::Resume {
            path: PathBuf::from("/x/job.ckpt"),
            reason: "r".into(),
            committed_batches: 1,
            rollback_to: None,
            dest: "db.orders --catalog prod".into(),
            write_mode: WriteMode::Append,
            job_done: false,
        }
        .to_string();
        assert!(
            err.contains("`iceberg-ops table delete db.orders --catalog prod --where true`"),
            "{err}"
        );
        let corrupt = ops_checkpoint::CheckpointError::Corrupt {
            path: PathBuf::from("/x/job.ckpt"),
            reason: "bad JSON".into(),
        }
        .to_string();
        assert!(corrupt.contains("new --checkpoint path"), "{corrupt}");
        assert!(!corrupt.contains("CheckpointStore"), "{corrupt}");
    }

    /// Undoing the committed batches is advised only where a new job would write their rows
    /// twice: an append that did not complete (issue 31: a completed upsert was told to empty
    /// its destination).
    #[test]
    fn resume_refusals_advise_undoing_only_what_a_rerun_would_duplicate() {
        let say = |write_mode, job_done| {
            MigrationError::Resume {
                path: PathBuf::from("/x/job.ckpt"),
                reason: "r".into(),
                committed_batches: 120,
                rollback_to: None,
                dest: "db.orders --catalog prod".into(),
                write_mode,
                job_done,
            }
            .to_string()
        };
        assert!(say(WriteMode::Append, false).contains("--where true"));
        for (mode, done) in [
            (WriteMode::Append, true),
            (WriteMode::Upsert, false),
            (WriteMode::Upsert, true),
            (WriteMode::OverwritePartition, false),
        ] {
            let err = say(mode, done);
            assert!(
                !err.contains("--where true") && !err.contains("rollback"),
                "{mode} done={done}: {err}"
            );
        }
        assert!(say(WriteMode::Upsert, false).contains("no row twice"));
    }

    /// A failed batch without a checkpoint says what a re-run does in the job's mode: only an
    /// append writes the committed rows twice.
    #[test]
    fn batch_errors_say_what_a_rerun_does_in_each_mode() {
        let say = |write_mode| {
            MigrationError::Batch {
                batch: 3,
                committed_batches: 3,
                checkpoint: None,
                write_mode,
                tagged_rerun: false,
                source: Box::new(MigrationError::InvalidInput("boom".into())),
            }
            .to_string()
        };
        let append = say(WriteMode::Append);
        assert!(append.contains("appends them again"), "{append}");
        let upsert = say(WriteMode::Upsert);
        assert!(upsert.contains("upserts them again"), "{upsert}");
        assert!(!upsert.contains("appends"), "{upsert}");
        let overwrite = say(WriteMode::OverwritePartition);
        assert!(
            overwrite.contains("replaces their partitions again"),
            "{overwrite}"
        );
        assert!(!overwrite.contains("appends"), "{overwrite}");
        let commit = MigrationError::Batch {
            batch: 3,
            committed_batches: 3,
            checkpoint: None,
            write_mode: WriteMode::Append,
            tagged_rerun: true,
            source: Box::new(MigrationError::InvalidInput("boom".into())),
        }
        .to_string();
        assert!(
            commit.contains("finds them by their snapshot tags"),
            "{commit}"
        );
        assert!(!commit.contains("appends"), "{commit}");
    }
}
