//! Executing one task of a [`MigrationPlan`] in any process: read its source files, write the
//! destination's data files, return them as a [`TaskOutput`] — committing nothing.
//!
//! This is the execute half of the seam a distributed engine uses: `DataMigrator::plan` (or
//! `iceberg-ops migrate-data --plan-only`) writes the plan, any process runs
//! [`MigrationPlan::execute_task`] (`migrate-data run-task`) and ships the output back to the one
//! process that commits them all (`commit::outputs`).
//!
//! 1. Re-check that the tables are the planned ones (UUIDs, schema and spec ids), so a plan
//!    cannot write files in a layout the destination no longer has.
//! 2. Re-derive the reconciliation, the row filter, the planned read and, for a copy task, the
//!    routes — exactly as the planning process did.
//! 3. Run one worker on the task and turn its written files into JSON; on any failure delete
//!    the files it wrote.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ops_core::CatalogHandle;

use super::worker::{Payload, TaskContext, WorkerMsg};
use crate::plan::job::{BatchOutput, MigrationPlan, PLAN_FORMAT, TaskOutput, files_to_json};
use crate::plan::read::PlannedRead;
use crate::plan::route::route_planned;
use crate::{FileRoute, MigrationError, MigrationResult, Result, WriteMode};

impl MigrationPlan {
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
        let (source_ref, dest_ref) = self.table_refs(source, dest)?;
        let (source_table, dest_table) = self.tables(&source_ref, &dest_ref, true).await?;
        let plan = crate::plan::reconcile(
            &self.reconciler,
            self.write_mode,
            &crate::plan::pinned_schema(&source_table, self.source_snapshot_id),
            dest_table.metadata().current_schema(),
        )?;
        let predicate = crate::plan::row_predicate(
            self.row_filter.as_ref(),
            &source_table,
            self.source_snapshot_id,
        )?;
        let read = PlannedRead::plan(&source_table, self.source_snapshot_id, predicate.clone())
            .await?
            .in_schema(crate::plan::pinned_schema(
                &source_table,
                self.source_snapshot_id,
            ));
        let whole_files = if task.route == FileRoute::Rewrite {
            HashMap::new()
        } else {
            let mut scratch = MigrationResult::default();
            route_planned(
                &source_table,
                self.source_snapshot_id,
                &dest_table,
                &plan,
                predicate.as_ref(),
                &read,
                self.write_mode,
                self.copy_mode,
                &mut scratch,
            )
            .await?
        };
        let by_path = super::worker::index_files(&read);
        let ctx = Arc::new(TaskContext {
            source: source_table,
            dest: dest_table.clone(),
            read,
            plan,
            batch_rows: self.batch_rows,
            read_batch_size: super::read_batch_size(self.batch_rows),
            mode: self.write_mode,
            resume_from: 0,
            landed: Default::default(),
            cancel: AtomicBool::new(false),
            by_path,
            whole_files,
            prepare_manifests: false,
        });
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let worker = tokio::spawn(super::worker::run_worker(ctx, vec![task], tx));
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
                super::worker::discard(&dest_table, work.payload).await;
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
}
