//! Executing a [`MigrationPlan`] from other processes: one task at a time, then one commit step.
//!
//! This is the seam a distributed engine uses: `DataMigrator::plan` (or `iceberg-ops
//! migrate-data --plan-only`) writes the plan, any process runs
//! [`MigrationPlan::execute_task`] (`migrate-data run-task`) and ships the [`TaskOutput`] back,
//! and one process runs [`MigrationPlan::commit`] (`migrate-data commit`) with every output.
//! Each step re-checks that the tables are the ones planned (UUIDs, schema and spec ids), so a
//! plan cannot write files in a layout the destination no longer has. Committing is idempotent:
//! batches of the job already in the destination's history are recorded, not committed again.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use iceberg::table::Table;
use ops_checkpoint::CheckpointStore;
use ops_core::CatalogHandle;
use ops_core::write::WrittenFiles;
use serde_json::json;

use crate::committer::{Committer, CommitterSetup};
use crate::job::{
    BatchOutput, MigrationPlan, PLAN_FORMAT, TaskOutput, files_from_json, files_to_json,
};
use crate::migrator::landed_batches;
use crate::read::PlannedRead;
use crate::worker::{BatchWork, Payload, TaskContext, WorkerMsg};
use crate::{DataMigrator, FileRoute, MigrationError, MigrationResult, Result, WriteMode};

impl MigrationPlan {
    /// The migrator this plan was made by, on the given catalogs.
    fn migrator(&self, source: &CatalogHandle, dest: &CatalogHandle) -> Result<DataMigrator> {
        let ident = |t: &str| {
            iceberg::TableIdent::from_strs(t.split('.')).map_err(|e| {
                MigrationError::InvalidInput(format!("the plan names table '{t}': {e}"))
            })
        };
        let mut m = DataMigrator::new(
            source,
            ident(&self.source.table)?,
            dest,
            ident(&self.dest.table)?,
        )
        .schema_reconciler(self.reconciler.clone())
        .batch_rows(self.batch_rows)
        .write_mode(self.write_mode)
        .copy_mode(self.copy_mode);
        if let Some(f) = &self.row_filter {
            m = m.row_filter(f.clone());
        }
        if let Some(id) = self.source_snapshot_id {
            m = m.source_snapshot(id);
        }
        Ok(m)
    }

    /// Loads both tables and checks they are still the planned ones, in the planned layout.
    /// The commit step needs only the destination (`check_source` false).
    async fn tables(&self, m: &DataMigrator, check_source: bool) -> Result<(Table, Table)> {
        let source = m.source.load().await?;
        let dest = m.dest.load().await?;
        let before = self
            .dest_snapshot_before
            .map_or("its state before the job".to_string(), |s| {
                format!("snapshot {s}")
            });
        let stale = |what: String| {
            MigrationError::InvalidInput(format!(
                "{what} since the plan was made; make a new plan (`migrate-data --plan-only`) — \
                 if batches of job {} were already committed, first roll the destination back \
                 to {before}, or the new job commits those rows again",
                self.job_id
            ))
        };
        if check_source && source.metadata().uuid().to_string() != self.source_uuid {
            return Err(stale(format!(
                "source {} is another table (UUID {})",
                m.source.describe(),
                source.metadata().uuid()
            )));
        }
        if dest.metadata().uuid().to_string() != self.dest_uuid {
            return Err(stale(format!(
                "destination {} is another table (UUID {})",
                m.dest.describe(),
                dest.metadata().uuid()
            )));
        }
        if check_source && source.metadata().current_schema_id() != self.source_schema_id {
            return Err(stale(format!(
                "the schema of source {} changed (schema {} → {})",
                m.source.describe(),
                self.source_schema_id,
                source.metadata().current_schema_id()
            )));
        }
        let md = dest.metadata();
        if md.current_schema_id() != self.dest_schema_id
            || md.default_partition_spec_id() != self.dest_spec_id
        {
            return Err(stale(format!(
                "the schema or partition spec of destination {} changed (schema {} → {}, spec \
                 {} → {})",
                m.dest.describe(),
                self.dest_schema_id,
                md.current_schema_id(),
                self.dest_spec_id,
                md.default_partition_spec_id()
            )));
        }
        Ok((source, dest))
    }

    /// Executes task `id`: reads its source files, writes the destination's data files and
    /// returns them, committing nothing. `source` and `dest` are the plan's catalogs, opened by
    /// the caller (the plan names them).
    pub async fn execute_task(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        id: usize,
    ) -> Result<TaskOutput> {
        let task = self.task(id)?.clone();
        if self.write_mode == WriteMode::Upsert {
            return Err(MigrationError::InvalidInput(
                "an upsert plan has no tasks to run elsewhere; run it with `migrate-data`".into(),
            ));
        }
        let m = self.migrator(source, dest)?;
        let (source_table, dest_table) = self.tables(&m, true).await?;
        let plan = m.compute_plan(&source_table, &dest_table)?;
        let predicate = m.predicate(&source_table, self.source_snapshot_id)?;
        let read =
            PlannedRead::plan(&source_table, self.source_snapshot_id, predicate.clone()).await?;
        let whole_files = if task.route == FileRoute::Rewrite {
            HashMap::new()
        } else {
            let mut scratch = MigrationResult::default();
            m.route(
                &source_table,
                self.source_snapshot_id,
                &dest_table,
                &plan,
                predicate.as_ref(),
                &read,
                &mut scratch,
            )
            .await?
        };
        let by_path = crate::worker::index_files(&read);
        let ctx = Arc::new(TaskContext {
            source: source_table,
            dest: dest_table.clone(),
            read,
            plan,
            batch_rows: self.batch_rows,
            read_batch_size: m.read_batch_size(),
            mode: self.write_mode,
            resume_from: 0,
            landed: Default::default(),
            cancel: AtomicBool::new(false),
            by_path,
            whole_files,
        });
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let worker = tokio::spawn(crate::worker::run_worker(ctx, vec![task], tx));
        let mut written = Vec::new();
        let mut failure = None;
        while let Some(msg) = rx.recv().await {
            match msg {
                Ok(WorkerMsg::Batch(work)) => written.push(work),
                Ok(WorkerMsg::TaskDone(_)) => {}
                Err(e) => failure = Some(e),
            }
        }
        if let Err(join) = worker.await {
            failure.get_or_insert(MigrationError::InvalidInput(format!(
                "the worker of task {id} failed: {join}"
            )));
        }
        let mut batches = Vec::with_capacity(written.len());
        if failure.is_none() {
            for work in &written {
                let (Payload::Written(w) | Payload::Referenced(w)) = &work.payload else {
                    continue;
                };
                match files_to_json(&dest_table, w.spec_id, &w.files) {
                    Ok(files) => batches.push(BatchOutput {
                        index: work.index,
                        rows: work.rows,
                        bytes: work.bytes,
                        spec_id: w.spec_id,
                        files,
                        referenced: matches!(work.payload, Payload::Referenced(_)),
                    }),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = failure {
            // Nothing of this task will be committed: the files it wrote are garbage.
            for work in written {
                crate::worker::discard(&dest_table, work.payload).await;
            }
            return Err(e);
        }
        tracing::info!(task = id, batches = batches.len(), "task executed");
        Ok(TaskOutput {
            format: PLAN_FORMAT,
            job_id: self.job_id.clone(),
            task: id,
            batches,
        })
    }

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
        let started = Instant::now();
        let m = self.migrator(source, dest)?;
        let (_, dest_table) = self.tables(&m, false).await?;
        let mut by_task: BTreeMap<usize, TaskOutput> = BTreeMap::new();
        for out in outputs {
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

        let mut store = checkpoint.as_ref().map(CheckpointStore::new);
        if let Some(s) = &mut store {
            match s.state()? {
                Some(state) => {
                    let committed = state.last_committed_batch.map_or(0, |b| b + 1);
                    let refuse = |reason: String| MigrationError::Resume {
                        path: s.path().to_path_buf(),
                        reason,
                        committed_batches: committed,
                        rollback_to: self.dest_snapshot_before,
                    };
                    if state.completed {
                        return Err(refuse(
                            "it records a completed commit of this plan; delete it to commit \
                             again"
                                .into(),
                        ));
                    }
                    if let Some(missing) =
                        crate::migrator::rolled_back(&dest_table, &state.dest_snapshot_ids)
                    {
                        return Err(refuse(format!(
                            "the destination's current history no longer holds snapshot \
                             {missing} of a checkpointed batch (it was rolled back); \
                             committing would skip rows that are no longer there"
                        )));
                    }
                    let job = state
                        .job
                        .as_ref()
                        .and_then(|j| j.get("job_id"))
                        .and_then(|v| v.as_str());
                    if job != Some(self.job_id.as_str()) {
                        return Err(MigrationError::Resume {
                            path: s.path().to_path_buf(),
                            reason: format!(
                                "it records another job, not this plan's job {}; give the \
                                 commit step its own checkpoint file",
                                self.job_id
                            ),
                            committed_batches: state.last_committed_batch.map_or(0, |b| b + 1),
                            rollback_to: self.dest_snapshot_before,
                        });
                    }
                }
                None => {
                    let mut job = ops_checkpoint::JobIdentity::new();
                    job.insert("job_id".into(), json!(self.job_id));
                    job.insert(
                        "dest_snapshot_before".into(),
                        json!(self.dest_snapshot_before),
                    );
                    job.insert("plan".into(), json!(true));
                    s.start(self.source_snapshot_id, Some(job))?;
                }
            }
        }
        let last_checkpointed = match &mut store {
            Some(s) => s.last_committed()?,
            None => None,
        };
        let landed = landed_batches(&dest_table, &self.job_id, 0);
        let mut committer = Committer::new(CommitterSetup {
            handle: m.dest.handle.clone(),
            ident: m.dest.ident.clone(),
            dest_name: m.dest.describe(),
            mode: self.write_mode,
            job_id: self.job_id.clone(),
            upsert_keys: Vec::new(),
            dest: dest_table.clone(),
            dest_snapshot_before: self.dest_snapshot_before,
            store,
            landed: landed.clone(),
            progress: None,
            total: self.total_rows,
            resumed_batches: 0,
            resumed_rows: 0,
            resume_from: 0,
        })
        .await?;
        let mut result = MigrationResult {
            source_snapshot_id: self.source_snapshot_id,
            job_id: Some(self.job_id.clone()),
            dest_snapshot_before: self.dest_snapshot_before,
            checkpoint_path: checkpoint.clone(),
            ..MigrationResult::default()
        };
        let mut files_committed = 0usize;
        let mut checkpointed = 0u64;
        let outcome: Result<()> = async {
            for out in by_task.into_values() {
                for b in out.batches {
                    let payload = if landed.contains_key(&b.index)
                        || last_checkpointed.is_some_and(|l| b.index <= l)
                    {
                        Payload::Landed
                    } else {
                        let files = files_from_json(&dest_table, &b)?;
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
                    };
                    if last_checkpointed.is_some_and(|l| index <= l) {
                        // Already checkpointed: the store must not see it again.
                        checkpointed += 1;
                        continue;
                    }
                    committer
                        .handle(work)
                        .await
                        .map_err(|e| m.batch_error(index, done, e))?;
                }
            }
            Ok(())
        }
        .await;
        let mut store = committer.store.take();
        committer.finish(&mut result);
        result.batches_skipped += checkpointed;
        outcome?;
        if let Some(s) = &mut store {
            s.mark_completed()?;
        }
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
