//! After the last batch, the job's own maintenance, for a local run and for the commit of a
//! plan run elsewhere alike:
//!
//! 1. [`compact_job`]: compact the files the job wrote — before the checkpoint is marked
//!    completed, so the same command after a crash during it finds every batch landed and
//!    compacts again;
//! 2. [`expire_job`]: expire the job's snapshots — only after completion, since a resume finds
//!    its landed batches by them.

use ops_checkpoint::{CheckpointStore, JobIdentity};

use super::history::{
    COMPACTED_JOB_PROPERTY, MIGRATION_JOB_PROPERTY, completed_trace, is_compaction_of,
    landed_batches,
};
use crate::types::TableRef;
use crate::{CompletedSource, JobCompaction, JobExpiry, MigrationError, Result};

/// A job found over in its destination (`history::job_over` says `why`), as a re-run sees it.
pub(crate) struct Completed<'a> {
    pub dest_ref: &'a TableRef,
    /// The destination as the re-run loaded it.
    pub dest: &'a iceberg::table::Table,
    pub job_id: &'a str,
    /// The re-run asks for the job's compaction / the expiry of its snapshots.
    pub compact: bool,
    pub expire: bool,
    pub why: String,
    /// The source snapshot the job read against the source's current one.
    pub source: Option<CompletedSource>,
}

/// The job is complete in the destination: finishes what a run stopped after completion
/// (killed, or its connection lost) left undone — the compaction when asked for and none of
/// the job's is in the history, the checkpoint's completed mark (`store` holds this job's
/// checkpoint or none; one not started yet is started with `fresh`, the snapshot the job read
/// and its identity), and the expiry of the job's snapshots when asked for, each idempotent —
/// and says so in a [`MigrationError::AlreadyComplete`] (or the error that stopped it).
pub(crate) async fn already_complete(
    c: Completed<'_>,
    store: Option<&mut CheckpointStore>,
    fresh: impl FnOnce() -> (Option<i64>, JobIdentity),
) -> MigrationError {
    let Completed {
        dest_ref,
        dest,
        job_id,
        compact,
        expire,
        mut why,
        source,
    } = c;
    // The compaction runs after the completion record: a run killed between the two left it
    // undone. Its failure is an error, as at the first run (the job's expiry must not run
    // before it: it finds the job's files by its snapshots).
    if compact && completed_trace(dest, job_id).is_none() {
        match compact_job(dest_ref, job_id).await {
            Ok(c) if c.snapshot_id.is_some() => {
                why = format!(
                    "{why}; its compaction, left undone, ran now ({} files into {})",
                    c.input_files, c.output_files
                )
            }
            Ok(_) => {}
            Err(e) => return e,
        }
    }
    if let Some(s) = store {
        let marked = match s.state() {
            Ok(None) => {
                let (snapshot, identity) = fresh();
                s.start(snapshot, Some(identity))
                    .and_then(|()| s.mark_completed())
            }
            Ok(Some(state)) if state.completed => Ok(()),
            Ok(Some(_)) => s.mark_completed(),
            Err(e) => Err(e),
        };
        if let Err(e) = marked {
            return e.into();
        }
    }
    let mut expiry = None;
    if expire {
        match expire_job(dest_ref, job_id).await {
            Ok(e) if !e.expired_snapshots.is_empty() => expiry = Some(Box::new(e)),
            Ok(_) => {}
            // The job is still complete: say so, and why its snapshots stay.
            Err(e) => why = format!("{why}; its snapshots were not expired: {e}"),
        }
    }
    MigrationError::AlreadyComplete {
        job_id: job_id.to_string(),
        dest: dest_ref.describe(),
        why,
        expiry,
        source_snapshots: source.map(Box::new),
    }
}

/// Compacts the live files `job_id`'s batch snapshots added (see [`crate::DataMigrator::compact`]).
pub(crate) async fn compact_job(dest_ref: &TableRef, job_id: &str) -> Result<JobCompaction> {
    let dest = dest_ref.load().await?;
    let snapshots: Vec<i64> = landed_batches(&dest, job_id, 0)
        .into_values()
        .flatten()
        .collect();
    let (_, m) =
        ops_maintenance::compact::CompactBuilder::new(&dest_ref.handle, dest_ref.ident.clone())
            .only_files_added_by(snapshots)
            // A job's batches leave a few small files per partition; two are worth merging.
            .min_input_files(2)
            .with_properties(std::collections::HashMap::from([(
                COMPACTED_JOB_PROPERTY.to_string(),
                job_id.to_string(),
            )]))
            .await
            .map_err(|e| {
                MigrationError::InvalidInput(format!(
                    "every batch of job {job_id} landed in {}, but compacting the files it wrote \
             failed: {e}. The same command (with its --checkpoint) compacts again without \
             writing any batch twice; or compact later with `iceberg-ops table compact {}`",
                    dest_ref.describe(),
                    dest_ref.ident
                ))
            })?;
    tracing::info!(
        job = %job_id,
        input = m.input_files(),
        output = m.output_files(),
        "the job's files compacted"
    );
    Ok(JobCompaction {
        snapshot_id: m.snapshot_id,
        input_files: m.input_files(),
        output_files: m.output_files(),
    })
}

/// Expires `job_id`'s snapshots (see [`crate::DataMigrator::expire_job_snapshots`]).
pub(crate) async fn expire_job(dest_ref: &TableRef, job_id: &str) -> Result<JobExpiry> {
    let dest = dest_ref.load().await?;
    let mut snapshots: Vec<i64> = landed_batches(&dest, job_id, 0)
        .into_values()
        .flatten()
        .collect();
    snapshots.extend(
        dest.metadata()
            .snapshots()
            .filter(|s| is_compaction_of(s, job_id))
            .map(|s| s.snapshot_id()),
    );
    // The job's newest snapshot stays: the history keeps where the job ended (its last batch,
    // or its compaction: the trace `history::completed_trace` finds), as a completed
    // checkpoint names it.
    let md = dest.metadata();
    if let Some(newest) = snapshots
        .iter()
        .copied()
        .max_by_key(|id| md.snapshot_by_id(*id).map(|s| s.sequence_number()))
    {
        snapshots.retain(|id| *id != newest);
    }
    let keep_files = !ops_core::ops::markers::gc_enabled(dest.metadata());
    let (_, m) = ops_maintenance::expire_snapshots::ExpireSnapshotsBuilder::new(
        &dest_ref.handle,
        dest_ref.ident.clone(),
    )
    .snapshot_ids(snapshots.iter().copied())
    .keep_files(keep_files)
    .await
    .map_err(|e| {
        MigrationError::InvalidInput(format!(
            "job {job_id} completed in {}, but expiring its snapshots failed: {e}. Expire \
             them later with `iceberg-ops table expire-snapshots {} --snapshot-id ID ...` \
             (the job's snapshots carry {MIGRATION_JOB_PROPERTY}={job_id} in their summary)",
            dest_ref.describe(),
            dest_ref.ident
        ))
    })?;
    tracing::info!(
        job = %job_id,
        expired = m.expired_snapshots.len(),
        deleted = m.deleted_data_files.len(),
        "the job's snapshots expired"
    );
    Ok(JobExpiry {
        expired_snapshots: m.expired_snapshots,
        deleted_data_files: m.deleted_data_files.len(),
        deleted_manifests: m.deleted_manifests.len() + m.deleted_manifest_lists.len(),
        kept_files: keep_files,
        cleanup_skipped: m.cleanup_skipped,
    })
}
