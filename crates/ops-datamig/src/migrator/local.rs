//! The local executor: workers (one per core) execute the tasks, this task commits.
//!
//! 1. Deal the tasks round-robin to the workers, each with a bounded channel to the committer.
//! 2. Take each task's messages from the worker that has it, in task order, and hand every
//!    batch to the committer — so commits stay in batch order whichever worker ran ahead.
//! 3. On failure, cancel the workers and delete the files they wrote that will never be
//!    committed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::DataMigrator;
use crate::commit::committer::Committer;
use crate::execute::worker::{TaskContext, WorkerMsg};
use crate::plan::job::MigrationTask;
use crate::{MigrationError, Result, WriteMode};

impl DataMigrator {
    /// The default executor: workers (one per core) execute the tasks, this task commits.
    pub(super) async fn execute_locally(
        &self,
        ctx: &Arc<TaskContext>,
        tasks: &[MigrationTask],
        committer: &mut Committer,
    ) -> Result<()> {
        let workers = self
            .workers
            .unwrap_or_else(crate::execute::worker::default_workers)
            .clamp(1, tasks.len().max(1));
        let mut receivers = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        // How far a worker may run ahead of the committer. The committer takes a task's batches
        // in order from the one worker that has it, so with one batch of run-ahead the other
        // worker idled through most of each task. Written batches wait as files on disk (a
        // failed run deletes the ones never committed), so a worker may finish its whole task;
        // an upsert's batches wait as rows in memory, so one.
        let ahead = if self.write_mode == WriteMode::Upsert {
            1
        } else {
            // Plus the task's closing message.
            tasks
                .iter()
                .map(|t| t.max_batches)
                .max()
                .unwrap_or(1)
                .clamp(1, 16) as usize
                + 1
        };
        for share in crate::execute::worker::deal(tasks, workers) {
            let (tx, rx) = tokio::sync::mpsc::channel(ahead);
            receivers.push(rx);
            handles.push(tokio::spawn(crate::execute::worker::run_worker(
                Arc::clone(ctx),
                share,
                tx,
            )));
        }
        let outcome = async {
            for task in tasks {
                if ctx.fully_resumed(task) {
                    continue;
                }
                let rx = &mut receivers[task.id % workers];
                loop {
                    let msg = match rx.recv().await {
                        Some(Ok(m)) => m,
                        Some(Err(e)) => {
                            return Err(self.batch_error(
                                committer.next_batch(),
                                committer.batches_done,
                                e,
                            ));
                        }
                        None => {
                            return Err(MigrationError::InvalidInput(format!(
                                "the worker executing task {} stopped without a result",
                                task.id
                            )));
                        }
                    };
                    match msg {
                        WorkerMsg::TaskDone(id) if id == task.id => break,
                        WorkerMsg::TaskDone(id) => {
                            return Err(MigrationError::InvalidInput(format!(
                                "internal: task {id} finished while task {} was expected",
                                task.id
                            )));
                        }
                        WorkerMsg::Batch(work) => {
                            let index = work.index;
                            let done = committer.batches_done;
                            committer
                                .handle(work)
                                .await
                                .map_err(|e| self.batch_error(index, done, e))?;
                        }
                    }
                }
            }
            Ok(())
        }
        .await;
        if outcome.is_err() {
            // Stop the workers and delete the files they wrote that will never be committed.
            ctx.cancel.store(true, Ordering::SeqCst);
            for rx in &mut receivers {
                while let Some(msg) = rx.recv().await {
                    if let Ok(WorkerMsg::Batch(work)) = msg {
                        crate::execute::worker::discard(&ctx.dest, work.payload).await;
                    }
                }
            }
        }
        drop(receivers);
        for h in handles {
            if let Err(join) = h.await
                && outcome.is_ok()
            {
                return Err(MigrationError::InvalidInput(format!(
                    "a migration worker failed: {join}"
                )));
            }
        }
        outcome
    }
}
