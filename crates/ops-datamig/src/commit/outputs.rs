//! Committing the [`TaskOutput`]s of a [`MigrationPlan`] executed in other processes: one
//! process, every output, one commit per batch in batch order.
//!
//! This is the commit half of the seam a distributed engine uses (`execute::task` is the other):
//! one process runs [`MigrationPlan::commit`] (`migrate-data commit`) with every task's output.
//!
//! 1. Re-check that the destination is the planned one (UUID, schema and spec ids).
//! 2. Check the outputs: this plan's job, each task once, every task present, batches within
//!    their task's range.
//! 3. Resume or start the checkpoint, if one is given (refusing one of another job, a completed
//!    one, or one whose batches were rolled back).
//! 4. Hand the batches to the [`Committer`] in order. Committing is idempotent: batches of the
//!    job already in the destination's history are recorded, not committed again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use futures::StreamExt;
use ops_checkpoint::CheckpointStore;
use ops_core::CatalogHandle;
use ops_core::write::WrittenFiles;
use serde_json::json;

use super::committer::{Committer, CommitterSetup};
use super::finish::{Completed, already_complete, compact_job, expire_job};
use super::history::{
    expired_batch, has_snapshots_of, job_over, job_rolled_back, landed_batches, rolled_back,
    rolled_back_reason,
};
use crate::execute::worker::{BatchWork, Payload};
use crate::plan::job::{MigrationPlan, TaskOutput, files_from_json};
use crate::{FileRoute, MigrationError, MigrationResult, OnDuplicateKeys, Result};

impl MigrationPlan {
    /// Commits the outputs of every task in batch order, one commit per batch, tagged with the
    /// job and batch. Batches of this job already in the destination are recorded, not
    /// committed again, so a failed or interrupted commit step can simply be run again. With a
    /// checkpoint, progress is recorded there as a local run does.
    pub async fn commit(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        outputs: Vec<TaskOutput>,
        checkpoint: Option<PathBuf>,
    ) -> Result<MigrationResult> {
        let mut by_task: BTreeMap<usize, TaskOutput> = BTreeMap::new();
        for out in outputs {
            self.check_output(&out)?;
            if by_task.insert(out.task, out).is_some() {
                return Err(MigrationError::InvalidInput(
                    "two outputs are given for the same task; give each task's output once".into(),
                ));
            }
        }
        let missing: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| !by_task.contains_key(&t.id))
            .map(|t| t.id.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(MigrationError::InvalidInput(format!(
                "no output for task(s) {}; run them (`migrate-data run-task --task N`) first",
                missing.join(", ")
            )));
        }
        let outputs = futures::stream::iter(by_task.into_values().map(Ok));
        self.commit_stream(source, dest, outputs, checkpoint).await
    }

    /// Commits outputs as they arrive: `outputs` yields every task's output once, in task
    /// order (task 0 first), for instance as a cluster's executors finish them. Each output's
    /// batches are committed before the next output is awaited, so a long job commits as it
    /// goes. An error from the stream stops the commit: the batches before it stay committed
    /// (and checkpointed), the error is a [`MigrationError::Batch`] naming the first batch of
    /// the task that has no output, and running again with the same checkpoint resumes.
    pub async fn commit_stream<S>(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        outputs: S,
        checkpoint: Option<PathBuf>,
    ) -> Result<MigrationResult>
    where
        S: futures::Stream<Item = Result<TaskOutput>>,
    {
        let started = Instant::now();
        let (source_ref, dest_ref) = self.table_refs(source, dest)?;
        let mut store = checkpoint.as_ref().map(CheckpointStore::new);
        // Whether the job is over is decided from the destination (the same table: its UUID)
        // and the checkpoint alone, before the plan's staleness checks: a job that completed
        // stays complete whatever happened to its source or the destination's schema since,
        // and a retry must say so rather than advise a new plan (which would copy every row
        // again).
        if let Some(done) = self
            .finished_in(&source_ref, &dest_ref, store.as_mut())
            .await?
        {
            return Err(done);
        }
        let (_, dest_table) = self.tables(&source_ref, &dest_ref, false).await?;
        // (A checkpoint of another job, or one whose batches were rolled back, was refused by
        // `finished_in`.)
        if let Some(s) = &mut store
            && s.state()?.is_none()
        {
            s.start(self.source_snapshot_id, Some(self.checkpoint_identity()))?;
        }
        // As a local run does (migrator::preflight::disable_gc_for_references): a destination
        // about to share the source's files must not let expiry or orphan cleanup delete them.
        // The outputs arrive one by one, so the plan's routes say it before the first commit
        // (only a `reference` task's batches are referenced).
        let mut dest_table = dest_table;
        if self.tasks.iter().any(|t| t.route == FileRoute::Reference)
            && ops_core::ops::markers::gc_enabled(dest_table.metadata())
        {
            tracing::info!(
                dest = %dest_ref.describe(),
                "the destination shares the source's files: setting gc.enabled=false"
            );
            dest_table = ops_core::ops::properties::PropertiesBuilder::new(
                &dest_ref.handle,
                dest_ref.ident.clone(),
            )
            .set(ops_core::ops::markers::GC_ENABLED, "false")
            .await?;
        }
        let last_checkpointed = match &mut store {
            Some(s) => s.last_committed()?,
            None => None,
        };
        let landed = landed_batches(&dest_table, &self.job_id, 0);
        let mut committer = Committer::new(CommitterSetup {
            handle: dest_ref.handle.clone(),
            ident: dest_ref.ident.clone(),
            dest_name: dest_ref.describe(),
            mode: self.write_mode,
            job_id: self.job_id.clone(),
            // A plan's job runs with its plan (and its commit step is idempotent): a repeat is
            // planned afresh, and the warning of a repeated append is the local run's.
            read_identity: None,
            upsert_keys: Vec::new(),
            on_duplicate_keys: OnDuplicateKeys::Error,
            dest: dest_table.clone(),
            dest_snapshot_before: self.dest_snapshot_before,
            store,
            landed: landed.clone(),
            progress: None,
            total: self.total_rows,
            resumed_batches: 0,
            resumed_rows: 0,
            resume_from: 0,
            // A plan's outputs are files its tasks wrote: the plan marked the table.
            mark_lazily: false,
        })
        .await?;
        // The files' routes as the plan's tasks carry them (a local run reports them from its
        // routing; files no row of which passes the filter are in no task).
        let routed = |route: FileRoute| -> u64 {
            self.tasks
                .iter()
                .filter(|t| t.route == route)
                .map(|t| t.files.len() as u64)
                .sum()
        };
        let mut result = MigrationResult {
            copy_mode: self.copy_mode,
            files_copied: routed(FileRoute::Copy),
            files_referenced: routed(FileRoute::Reference),
            files_rewritten: routed(FileRoute::Rewrite),
            source_snapshot_id: self.source_snapshot_id,
            job_id: Some(self.job_id.clone()),
            dest_snapshot_before: self.dest_snapshot_before,
            checkpoint_path: checkpoint.clone(),
            ..MigrationResult::default()
        };
        let mut files_committed = 0usize;
        let mut checkpointed = 0u64;
        let mut next_task = 0usize;
        let outcome: Result<()> = async {
            let mut outputs = std::pin::pin!(outputs);
            while let Some(out) = outputs.next().await {
                let first_batch = self.tasks.get(next_task).map_or(0, |t| t.first_batch);
                let out = out.map_err(|e| MigrationError::Batch {
                    batch: first_batch,
                    committed_batches: committer.batches_done,
                    checkpoint: checkpoint.clone(),
                    write_mode: self.write_mode,
                    tagged_rerun: true,
                    source: Box::new(e),
                })?;
                self.check_output(&out)?;
                if out.task != next_task {
                    return Err(MigrationError::InvalidInput(format!(
                        "the output of task {} came where task {next_task}'s was expected; \
                         outputs are committed in task order",
                        out.task
                    )));
                }
                next_task += 1;
                for b in out.batches {
                    let checkpointed_here = last_checkpointed.is_some_and(|l| b.index <= l);
                    // Absent from the history while a later batch of the job is there: it
                    // landed (batches land in order) and its snapshot was expired since, by
                    // another engine's expiry (this job's own runs only once it completed).
                    let expired = !checkpointed_here && expired_batch(&landed, b.index);
                    if expired {
                        tracing::info!(
                            batch = b.index,
                            "the batch's snapshot was expired, but a later batch of the job \
                             landed: it is not committed again"
                        );
                    }
                    let payload = if landed.contains_key(&b.index) || checkpointed_here || expired {
                        Payload::Landed
                    } else {
                        let files = files_from_json(&dest_table, &b)?;
                        check_present(&dest_table, &files, b.index).await?;
                        files_committed += files.len();
                        let w = WrittenFiles {
                            spec_id: b.spec_id,
                            files,
                        };
                        if b.referenced {
                            Payload::Referenced(w)
                        } else {
                            Payload::Written(w)
                        }
                    };
                    let index = b.index;
                    let done = committer.batches_done;
                    let work = BatchWork {
                        index,
                        rows: b.rows,
                        bytes: b.bytes,
                        payload,
                        manifest: None,
                    };
                    if last_checkpointed.is_some_and(|l| index <= l) {
                        // Already checkpointed: the store must not see it again.
                        checkpointed += 1;
                        continue;
                    }
                    committer
                        .handle(work)
                        .await
                        .map_err(|e| MigrationError::Batch {
                            batch: index,
                            committed_batches: done,
                            checkpoint: checkpoint.clone(),
                            write_mode: self.write_mode,
                            tagged_rerun: true,
                            source: Box::new(e),
                        })?;
                }
            }
            if next_task < self.tasks.len() {
                return Err(MigrationError::InvalidInput(format!(
                    "the outputs ended after {next_task} of {} tasks; run the rest and commit \
                     again",
                    self.tasks.len()
                )));
            }
            Ok(())
        }
        .await;
        let mut store = committer.store.take();
        committer.finish(&mut result);
        result.batches_skipped += checkpointed;
        outcome?;
        // The plan's job is complete: maintenance may touch the destination again, and a
        // repeated commit finds the job's completion record.
        ops_core::ops::markers::complete_running_marker(
            &dest_ref.handle,
            &dest_ref.ident,
            &self.job_id,
        )
        .await?;
        if self.compact {
            result.compaction = Some(compact_job(&dest_ref, &self.job_id).await?);
        }
        if let Some(s) = &mut store {
            s.mark_completed()?;
        }
        if self.expire_job_snapshots {
            result.expiry = Some(expire_job(&dest_ref, &self.job_id).await?);
        }
        // The plan's snapshot against the source's now: rows committed since are not copied.
        result.source_snapshots = source_ref
            .pinned_against_current(self.source_snapshot_id, self.write_mode)
            .await;
        result.duration_seconds = started.elapsed().as_secs_f64();
        tracing::info!(
            job = %self.job_id,
            batches = result.batches_committed,
            files = files_committed,
            "plan committed"
        );
        Ok(result)
    }
}

impl MigrationPlan {
    /// Whether the job is over in its destination, decided as [`Self::commit_stream`] does
    /// before it reads any output: if so, what a commit killed after completing the job left
    /// undone is finished, and the [`MigrationError::AlreadyComplete`] saying so is returned —
    /// for a scheduler to ask before it runs any task.
    pub async fn finished(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        checkpoint: Option<&std::path::Path>,
    ) -> Result<Option<MigrationError>> {
        let (source_ref, dest_ref) = self.table_refs(source, dest)?;
        let mut store = checkpoint.map(CheckpointStore::new);
        self.finished_in(&source_ref, &dest_ref, store.as_mut())
            .await
    }

    /// [`Self::finished`] on the destination `dest_ref` (the plan's table: its UUID). Refuses,
    /// before any output is read or task run, a checkpoint of another job, a checkpoint whose
    /// batches are no longer in the destination's history, and a job that is neither running
    /// nor completed there (abandoned).
    async fn finished_in(
        &self,
        source_ref: &crate::types::TableRef,
        dest_ref: &crate::types::TableRef,
        mut store: Option<&mut CheckpointStore>,
    ) -> Result<Option<MigrationError>> {
        let dest = dest_ref.load().await?;
        if dest.metadata().uuid().to_string() != self.dest_uuid {
            // Another table of that name: the staleness checks refuse it.
            return Ok(None);
        }
        let state = match store.as_deref_mut() {
            Some(s) => s.state()?,
            None => None,
        };
        let path = store.as_deref().map(|s| s.path().to_path_buf());
        let refuse = |reason: String| MigrationError::Resume {
            path: path.clone().unwrap_or_default(),
            reason,
            committed_batches: state
                .as_ref()
                .and_then(|s| s.last_committed_batch)
                .map_or(0, |b| b + 1),
            rollback_to: self.dest_snapshot_before,
            dest: dest_ref.cli_args(),
            write_mode: self.write_mode,
            job_done: false,
        };
        if let Some(state) = &state {
            let job = state
                .job
                .as_ref()
                .and_then(|j| j.get("job_id"))
                .and_then(|v| v.as_str());
            if job != Some(self.job_id.as_str()) {
                // Another job's progress: left as it is (never marked completed for this job),
                // and none of its counts or advice apply to this one.
                return Err(MigrationError::InvalidInput(format!(
                    "checkpoint {} records another job ({}), not this plan's job {}: nothing \
                     was committed and the checkpoint is unchanged. Give the commit step its \
                     own checkpoint file (a new path)",
                    path.as_deref()
                        .map_or_else(String::new, |p| p.display().to_string()),
                    job.unwrap_or("none recorded"),
                    self.job_id
                )));
            }
        }
        // Rolled back past the job's newest snapshot: whatever the table says of its
        // completion, its rows are not all there.
        let rolled = job_rolled_back(&dest, &self.job_id);
        if let Some(why) = job_over(&dest, &self.job_id, state.as_ref(), path.as_deref()) {
            // What the job read against where the source is now; a source that cannot be
            // loaded (dropped since) does not make a completed job less complete.
            let source = source_ref
                .pinned_against_current(self.source_snapshot_id, self.write_mode)
                .await;
            let done = Completed {
                dest_ref,
                dest: &dest,
                job_id: &self.job_id,
                compact: self.compact,
                expire: self.expire_job_snapshots,
                why,
                source,
            };
            return Ok(Some(
                already_complete(done, store, || {
                    (self.source_snapshot_id, self.checkpoint_identity())
                })
                .await,
            ));
        }
        let progress = state
            .as_ref()
            .is_some_and(|s| !s.dest_snapshot_ids.is_empty());
        if let (false, Some(id)) = (progress, rolled) {
            // (With a checkpoint of its progress, that checkpoint decides below.)
            return Err(refuse(format!(
                "the destination's current history no longer holds snapshot {id} of job {}, \
                 which the table still keeps: it was rolled back past the job, so its rows are \
                 not all there, and which of its batches are cannot be told without its \
                 checkpoint",
                self.job_id
            )));
        }
        if let Some(state) = &state
            && let Some(missing) = rolled_back(&dest, &state.dest_snapshot_ids)
        {
            return Err(refuse(rolled_back_reason(missing, "committing")));
        }
        let marker = ops_core::ops::markers::running_job_key(&self.job_id);
        let recorded =
            ops_core::ops::markers::completed_at(dest.metadata(), &self.job_id).is_some();
        // (Recorded but rolled back, with a checkpoint the history agrees with: it resumes.)
        if !recorded && !dest.metadata().properties().contains_key(&marker) {
            // Whether some of the job's rows are in the table decides what is safe to advise.
            let next = if has_snapshots_of(&dest, &self.job_id) {
                format!(
                    "Snapshots of the job are in the destination: it completed before \
                     iceberg-ops recorded completions (or its record was pruned), or was \
                     abandoned part-way. Nothing was committed. A new plan would copy those \
                     rows again: check the destination (`iceberg-ops verify`), and roll it back \
                     to {} before copying anew",
                    self.dest_snapshot_before
                        .map_or("its state before the job (it was empty)".to_string(), |s| {
                            format!("snapshot {s}")
                        })
                )
            } else {
                "No batch of it is in the destination and nothing was committed. To copy the \
                 source as a new job, make a new plan (`migrate-data --plan-only`)"
                    .to_string()
            };
            return Err(MigrationError::InvalidInput(format!(
                "{} carries neither the running marker of job {job} ({marker}) nor its \
                 completion record: the job was abandoned (`iceberg-ops table \
                 abandon-migration`), or its record was pruned after {kept} later jobs \
                 completed. {next}",
                dest_ref.describe(),
                job = self.job_id,
                kept = ops_core::ops::markers::COMPLETED_JOBS_KEPT,
            )));
        }
        Ok(None)
    }

    /// Starts the checkpoint at `path` for this plan's job, nothing committed yet (as
    /// [`Self::commit_stream`] does when it finds none), overwriting whatever the file held. A
    /// client keeping the plan in a file of its own starts the checkpoint as soon as the plan
    /// is written, so that the checkpoint, the job's state, names the plan's job from then on.
    pub fn start_checkpoint(&self, path: &std::path::Path) -> Result<()> {
        CheckpointStore::new(path)
            .start(self.source_snapshot_id, Some(self.checkpoint_identity()))?;
        Ok(())
    }

    /// The checkpoint identity of this plan's job.
    fn checkpoint_identity(&self) -> ops_checkpoint::JobIdentity {
        let mut job = ops_checkpoint::JobIdentity::new();
        job.insert("job_id".into(), json!(self.job_id));
        job.insert(
            "dest_snapshot_before".into(),
            json!(self.dest_snapshot_before),
        );
        job.insert("plan".into(), json!(true));
        job
    }

    /// An output of this plan's job, of one of its tasks, with batches in the task's range.
    fn check_output(&self, out: &TaskOutput) -> Result<()> {
        if out.job_id != self.job_id {
            return Err(MigrationError::InvalidInput(format!(
                "the output of task {} belongs to job {}, not this plan's job {}",
                out.task, out.job_id, self.job_id
            )));
        }
        let task = self.task(out.task)?;
        let range = task.batches();
        if let Some(b) = out.batches.iter().find(|b| !range.contains(&b.index)) {
            return Err(MigrationError::InvalidInput(format!(
                "the output of task {} holds batch {}, outside the task's batches {}..{}",
                out.task, b.index, range.start, range.end
            )));
        }
        Ok(())
    }
}

/// Refuses a batch whose files are gone or changed since its task wrote them (an orphan cleanup
/// forced past the job's marker, a lifecycle rule): committed, they would make the table
/// unreadable.
async fn check_present(
    dest: &iceberg::table::Table,
    files: &[iceberg::spec::DataFile],
    batch: u64,
) -> Result<()> {
    let Some(altered) = ops_core::ops::outputs::first_altered(dest.file_io(), files).await else {
        return Ok(());
    };
    let what = altered.describe("its task");
    Err(MigrationError::InvalidInput(format!(
        "batch {batch}: {what}; nothing of this batch was committed. Run its task again \
         (`migrate-data run-task`) and commit with the new output"
    )))
}
