//! Resume: a checkpointed run picks up after its last committed batch, or is refused.
//!
//! 1. The job identity: the settings a resumed run must share with the run that started the
//!    checkpoint ([`DataMigrator::job_settings`]).
//! 2. The checkpoint is validated against them and the tables: not completed, the same
//!    settings, its source snapshot still there (and agreeing with an explicit one), its
//!    batches' snapshots still in the destination's history. A job that is over (completed,
//!    or killed after its completion record) is refused by `run`, as the seed's
//!    `CheckpointError`; [`DataMigrator::finished`], asked first, reports it instead.
//! 3. The pinned snapshot's schema must be the one the checkpointed run read it in.
//! 4. The task layout must be the checkpointed one, or batch numbers would name other rows.
//! 5. Tasks wholly before the resume point are counted, not read; batches that landed after it
//!    without a checkpoint entry are found by their tags (`commit::history`).

use std::collections::BTreeMap;

use iceberg::spec::Schema;
use iceberg::table::Table;
use ops_checkpoint::{CheckpointState, CheckpointStore, JobIdentity};
use ops_reconcile::{MissingInDest, MissingInSource};
use serde_json::{Value, json};

use super::DataMigrator;
use crate::commit::finish::{Completed, already_complete};
use crate::commit::history::{job_over, rolled_back, rolled_back_reason};
use crate::plan::job::MigrationTask;
use crate::{CompletedSource, MigrationError, OnDuplicateKeys, Result, RowFilter, WriteMode};

impl DataMigrator {
    /// The settings a resumed run must share with the run that started the checkpoint.
    pub(super) fn job_settings(&self, source: &Table, dest: &Table) -> JobIdentity {
        let reconciler = &self.reconciler;
        let coercions: BTreeMap<&String, String> = reconciler
            .type_coercions
            .iter()
            .map(|(k, t)| (k, t.to_string()))
            .collect();
        let settings = json!({
            "source_table": self.source.ident.to_string(),
            "dest_table": self.dest.ident.to_string(),
            "source_table_uuid": source.metadata().uuid().to_string(),
            "dest_table_uuid": dest.metadata().uuid().to_string(),
            "row_filter": self.row_filter.as_ref().map(RowFilter::describe),
            "batch_rows": self.batch_rows,
            "write_mode": self.write_mode.as_str(),
            "copy_mode": self.copy_mode.as_str(),
            "upsert_keys": self.upsert_keys,
            "partition_strategy": "preserve",
            "reconciler": {
                "column_mapping": reconciler.column_mapping,
                "type_coercions": coercions,
                "on_missing_in_source": missing_in_source(reconciler.on_missing_in_source),
                "on_missing_in_dest": missing_in_dest(reconciler.on_missing_in_dest),
            },
        });
        match settings {
            Value::Object(mut m) => {
                // Only when not the default: checkpoints from before the setting existed resume.
                if self.on_duplicate_keys != OnDuplicateKeys::Error {
                    m.insert(
                        "on_duplicate_keys".into(),
                        json!(self.on_duplicate_keys.as_str()),
                    );
                }
                m
            }
            _ => JobIdentity::new(),
        }
    }

    /// What differs between the job a checkpoint records and this run's settings (`settings`,
    /// and an explicit source snapshot): empty when this run is that job.
    pub(super) fn job_differences(
        &self,
        state: &CheckpointState,
        job: &JobIdentity,
        settings: &JobIdentity,
    ) -> Vec<String> {
        let mut differences = Vec::new();
        for (key, want) in settings {
            let had = job.get(key).unwrap_or(&Value::Null);
            if had != want {
                differences.push(format!("{key}: checkpoint has {had}, this run has {want}"));
            }
        }
        // Written only when not the default, so a checkpoint's `last` against this run's
        // default does not show in the loop above: its pre-pass would see only the chunks from
        // the resume point on and miss the keys the committed ones hold.
        if let Some(had) = job.get("on_duplicate_keys")
            && !settings.contains_key("on_duplicate_keys")
        {
            differences.push(format!(
                "on_duplicate_keys: checkpoint has {had}, this run has \"{}\"",
                self.on_duplicate_keys.as_str()
            ));
        }
        if let Some(explicit) = self.source_snapshot
            && Some(explicit) != state.source_snapshot_id
        {
            differences.push(format!(
                "source snapshot: checkpoint reads {}, this run asks for {explicit}",
                state
                    .source_snapshot_id
                    .map_or("none".to_string(), |s| s.to_string())
            ));
        }
        differences
    }

    /// Validates a checkpoint to resume; returns (source snapshot, job id, dest_snapshot_before).
    pub(super) fn validate_resume(
        &self,
        state: &CheckpointState,
        settings: &JobIdentity,
        source: &Table,
        dest: &Table,
    ) -> Result<(Option<i64>, String, Option<i64>)> {
        let committed = state.last_committed_batch.map_or(0, |b| b + 1);
        let rollback_to = state
            .job
            .as_ref()
            .and_then(|j| j.get("dest_snapshot_before"))
            .and_then(Value::as_i64);
        // The undo advice names the table the checkpoint's batches went to: not this run's
        // destination when the checkpoint is another destination's.
        let job_dest = state.job.as_ref().and_then(|j| {
            Some((
                j.get("dest_table")?.as_str()?.to_string(),
                j.get("dest_table_uuid")?.as_str()?.to_string(),
            ))
        });
        let (undo_dest, gone) = match job_dest {
            Some((name, uuid)) if uuid != dest.metadata().uuid().to_string() => {
                if name == self.dest.ident.to_string() {
                    // Dropped and made again: the table that holds the batches is gone.
                    (self.dest.cli_args(), Some((name, uuid)))
                } else {
                    (
                        format!("{name} --catalog {}", self.dest.handle.name()),
                        None,
                    )
                }
            }
            _ => (self.dest.cli_args(), None),
        };
        let refuse = |reason: String, job_done: bool| MigrationError::Resume {
            path: self.checkpoint.clone().unwrap_or_default(),
            reason: match &gone {
                Some((name, uuid)) => format!(
                    "{reason}; its batches went to an earlier table named {name} (UUID {uuid}), \
                     which is no longer there"
                ),
                None => reason,
            },
            committed_batches: committed,
            rollback_to,
            dest: undo_dest.clone(),
            write_mode: self.write_mode,
            job_done: job_done || gone.is_some(),
        };
        let differences = match &state.job {
            Some(job) => self.job_differences(state, job, settings),
            None => Vec::new(),
        };
        if state.completed {
            // The checkpoint's job is over: nothing of it needs undoing, whatever this run is.
            if !differences.is_empty() {
                return Err(refuse(
                    format!(
                        "it records a completed migration with other settings ({}); give this \
                         job its own checkpoint file (a new --checkpoint path)",
                        differences.join("; ")
                    ),
                    true,
                ));
            }
            let job_id = state
                .job
                .as_ref()
                .and_then(|j| j.get("job_id"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(missing) = rolled_back(dest, &state.dest_snapshot_ids)
                && job_over(dest, job_id, Some(state), None).is_none()
            {
                return Err(refuse(
                    format!(
                        "it records a completed migration, but the destination's current \
                         history no longer holds snapshot {missing}, the newest checkpointed \
                         batch's (it was rolled back, or expired after later commits): the \
                         job's rows may not all be there any more"
                    ),
                    false,
                ));
            }
            return Err(refuse(
                self.completed_reason("it records a completed migration"),
                true,
            ));
        }
        let Some(job) = &state.job else {
            return Err(refuse(
                "it records no job identity, so it cannot be matched to these settings; \
                 delete it to start over"
                    .into(),
                false,
            ));
        };
        if !differences.is_empty() {
            return Err(refuse(
                format!(
                    "it was started with different settings ({}); run with the original \
                     settings, or give this job its own checkpoint file",
                    differences.join("; ")
                ),
                false,
            ));
        }
        let Some(job_id) = job.get("job_id").and_then(Value::as_str) else {
            return Err(refuse(
                "its job has no job_id; delete it to start over".into(),
                false,
            ));
        };
        if crate::plan::job::check_job_id(job_id).is_err() {
            return Err(refuse(
                format!(
                    "its job id {job_id:?} is not one iceberg-ops makes (the file was edited); \
                     delete it to start over"
                ),
                false,
            ));
        }
        let snapshot = state.source_snapshot_id;
        if let Some(id) = snapshot
            && source.metadata().snapshot_by_id(id).is_none()
        {
            return Err(refuse(
                format!(
                    "source snapshot {id} it reads no longer exists in {} (expired?)",
                    self.source.describe()
                ),
                false,
            ));
        }
        if let Some(missing) = rolled_back(dest, &state.dest_snapshot_ids) {
            // Killed between its completion record and its checkpoint's mark, then its
            // snapshots expired (the record lets maintenance at the table again): the job is
            // over, not rolled back.
            if let Some(why) = job_over(dest, job_id, Some(state), None) {
                return Err(refuse(
                    self.completed_reason(&format!(
                        "the migration it records completed ({why}), though the checkpoint \
                         was not marked so before the run stopped"
                    )),
                    true,
                ));
            }
            return Err(refuse(rolled_back_reason(missing, "resuming"), false));
        }
        Ok((snapshot, job_id.to_string(), rollback_to))
    }

    /// Whether the job this migrator's checkpoint records is over in the destination: for a
    /// caller to ask before [`Self::run`], which refuses a completed checkpoint as the seed's
    /// `CheckpointError` does (the CLI asks, so that a run killed after its last commit and
    /// run again succeeds). The job is over when its checkpoint is marked completed and its
    /// newest batch's snapshot is still in the destination's history, or when the destination
    /// carries the job's completion record (or its compaction) and was not rolled back past
    /// the job since — whatever became of its snapshots.
    ///
    /// If so, finishes what the stopped run left undone — the compaction (with
    /// [`Self::compact`], when none of the job's is in the history), the checkpoint's completed
    /// mark, the expiry of the job's snapshots (with [`Self::expire_job_snapshots`]) — pins
    /// [`Self::verify`] to the source snapshot the job read, and returns the
    /// [`MigrationError::AlreadyComplete`] saying so, with that snapshot and the source's
    /// current one. `None` (run it, or let `run` refuse it) without a checkpoint, under dry
    /// run, when the checkpoint or the destination does not exist, when the checkpoint records
    /// another job (other settings, another table, another explicit source snapshot), and when
    /// the job is not over.
    pub async fn finished(&mut self) -> Result<Option<MigrationError>> {
        let Some(path) = self.checkpoint.clone().filter(|_| !self.dry_run) else {
            return Ok(None);
        };
        let mut store = CheckpointStore::new(&path);
        if !store.exists() {
            return Ok(None);
        }
        let Some(state) = store.state()? else {
            return Ok(None);
        };
        let Some(job) = state.job.clone() else {
            return Ok(None);
        };
        if !self
            .dest
            .handle
            .catalog()
            .table_exists(&self.dest.ident)
            .await?
        {
            return Ok(None);
        }
        let source = self.source.load().await?;
        let dest = self.dest.load().await?;
        let settings = self.job_settings(&source, &dest);
        if !self.job_differences(&state, &job, &settings).is_empty() {
            return Ok(None);
        }
        let Some(job_id) = job.get("job_id").and_then(Value::as_str) else {
            return Ok(None);
        };
        let Some(why) = job_over(&dest, job_id, Some(&state), Some(&path)) else {
            return Ok(None);
        };
        tracing::info!(job = %job_id, %why, "the checkpoint's job is complete");
        self.last_source_snapshot = state.source_snapshot_id;
        let done = Completed {
            dest_ref: &self.dest,
            dest: &dest,
            job_id,
            compact: self.compact,
            expire: self.expire_job_snapshots,
            why,
            source: Some(CompletedSource {
                table: self.source.describe(),
                read_snapshot_id: state.source_snapshot_id,
                current_snapshot_id: source.metadata().current_snapshot_id(),
                write_mode: self.write_mode,
            }),
        };
        let fresh = || (state.source_snapshot_id, job.clone());
        Ok(Some(already_complete(done, Some(&mut store), fresh).await))
    }

    /// The refusal of a completed job (`what` says how it is known): there is nothing to run
    /// again, and the same command run from the CLI reports it complete.
    fn completed_reason(&self, what: &str) -> String {
        let again = match self.write_mode {
            WriteMode::Append => " (appending, that copies every row once more)",
            WriteMode::Upsert | WriteMode::OverwritePartition => "",
        };
        format!(
            "{what}: the job is done, so there is nothing to run again (the `iceberg-ops \
             migrate-data` command given this checkpoint says so and succeeds). To copy the \
             source again as a new job{again}, delete the file or pass a new checkpoint path"
        )
    }

    /// Refuses a resume that would read the source in another schema than the checkpointed run
    /// read it (batches would then carry other columns, e.g. NULLs for a column dropped since).
    /// A checkpoint written before the schema id was recorded planned from the source's schema
    /// of the time: accepted only when that is provably the pinned snapshot's (the source's
    /// current schema is still it).
    pub(super) fn check_source_schema(
        &self,
        state: &CheckpointState,
        source: &Table,
        snapshot: Option<i64>,
        pinned: &Schema,
    ) -> Result<()> {
        let refuse = |reason: String| MigrationError::Resume {
            path: self.checkpoint.clone().unwrap_or_default(),
            reason,
            committed_batches: state.last_committed_batch.map_or(0, |b| b + 1),
            rollback_to: state
                .job
                .as_ref()
                .and_then(|j| j.get("dest_snapshot_before"))
                .and_then(Value::as_i64),
            dest: self.dest.cli_args(),
            write_mode: self.write_mode,
            job_done: false,
        };
        let snapshot = snapshot.map_or("none".to_string(), |s| s.to_string());
        let current = source.metadata().current_schema_id();
        match state.job.as_ref().and_then(|j| j.get("source_schema_id")) {
            Some(had) if had.as_i64() == Some(i64::from(pinned.schema_id())) => Ok(()),
            Some(had) => Err(refuse(format!(
                "it read source snapshot {snapshot} in schema {had}, but that snapshot's schema \
                 is now {}; resuming would write other columns than the committed batches",
                pinned.schema_id()
            ))),
            None if current == pinned.schema_id() => Ok(()),
            None => Err(refuse(format!(
                "it was written by an older iceberg-ops that did not record the source schema \
                 it planned with, and the source's schema changed since snapshot {snapshot} \
                 (schema {} then, {current} now), so it cannot be checked that the rest would \
                 be read in the same columns; roll the destination back to the snapshot before \
                 the job and delete the checkpoint to start over",
                pinned.schema_id()
            ))),
        }
    }

    /// Refuses a resume whose tasks would be cut into other batches than the checkpointed run
    /// cut them: batch numbers come from the task layout.
    pub(super) fn check_layout(
        &self,
        state: &CheckpointState,
        layout: &str,
        dest_snapshot_before: Option<i64>,
    ) -> Result<()> {
        let had = state
            .job
            .as_ref()
            .and_then(|j| j.get("task_layout"))
            .and_then(Value::as_str);
        if had != Some(layout) {
            return Err(MigrationError::Resume {
                path: self.checkpoint.clone().unwrap_or_default(),
                reason: "the source files would be cut into other batches than the \
                         checkpointed run cut them (the source or destination schema, \
                         partition spec or copy eligibility changed since, or the run was \
                         checkpointed by a version that decided the row filter's NULLs and \
                         NaNs differently); resuming would skip or repeat rows"
                    .into(),
                committed_batches: state.last_committed_batch.map_or(0, |b| b + 1),
                rollback_to: dest_snapshot_before,
                dest: self.dest.cli_args(),
                write_mode: self.write_mode,
                job_done: false,
            });
        }
        Ok(())
    }
}

/// Batches and rows of the tasks wholly before `resume_from` (not read again); their rows count
/// as done when the manifests tell them exactly (`exact`).
pub(super) fn resumed(tasks: &[MigrationTask], resume_from: u64, exact: bool) -> (u64, u64) {
    tasks
        .iter()
        .filter(|t| t.batches().end <= resume_from)
        .fold((0u64, 0u64), |(b, r), t| {
            let rows = if exact {
                t.record_count.unwrap_or(0)
            } else {
                0
            };
            (b + t.max_batches, r + rows)
        })
}

fn missing_in_source(p: MissingInSource) -> &'static str {
    match p {
        MissingInSource::Error => "error",
        MissingInSource::Skip => "skip",
        MissingInSource::Null => "null",
    }
}

fn missing_in_dest(p: MissingInDest) -> &'static str {
    match p {
        MissingInDest::Error => "error",
        MissingInDest::AutoAdd => "auto_add",
    }
}
