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

/// At most this many waiting batches commit as one series: a conflict redoes the whole series.
const MAX_GROUP: usize = 32;

/// The committer's time spent committing, and in how many rounds.
#[derive(Default)]
struct Tally {
    committing: std::time::Duration,
    rounds: u64,
}

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
        // Where the committer's time goes: committing, or waiting for a worker's next batch
        // (logged at the end; the figures the pipeline is tuned by).
        let mut tally = Tally::default();
        let mut waiting = std::time::Duration::ZERO;
        let started = std::time::Instant::now();
        let outcome = async {
            // Tasks in order, each from the worker that has it. A batch is committed as soon as
            // nothing else is waiting; batches that are all waiting (the committer fell behind)
            // are taken together, across tasks, and committed as one series.
            let mut order = tasks.iter().filter(|t| !ctx.fully_resumed(t));
            let mut current = order.next();
            let mut pending: Vec<crate::execute::worker::BatchWork> = Vec::new();
            while let Some(task) = current {
                let rx = &mut receivers[task.id % workers];
                let received = if pending.is_empty() {
                    let asked = std::time::Instant::now();
                    let r = rx.recv().await;
                    waiting += asked.elapsed();
                    r
                } else if pending.len() >= MAX_GROUP {
                    self.flush(&mut pending, &mut *committer, &mut tally)
                        .await?;
                    continue;
                } else {
                    match rx.try_recv() {
                        Ok(m) => Some(m),
                        Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                            self.flush(&mut pending, &mut *committer, &mut tally)
                                .await?;
                            continue;
                        }
                        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => None,
                    }
                };
                let msg = match received {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => {
                        // The batches before the failure still commit, as they would have one
                        // by one.
                        self.flush(&mut pending, &mut *committer, &mut tally)
                            .await?;
                        return Err(self.batch_error(
                            committer.next_batch(),
                            committer.batches_done,
                            e,
                        ));
                    }
                    None => {
                        self.flush(&mut pending, &mut *committer, &mut tally)
                            .await?;
                        return Err(MigrationError::InvalidInput(format!(
                            "the worker executing task {} stopped without a result",
                            task.id
                        )));
                    }
                };
                match msg {
                    WorkerMsg::TaskDone(id) if id == task.id => current = order.next(),
                    WorkerMsg::TaskDone(id) => {
                        self.flush(&mut pending, &mut *committer, &mut tally)
                            .await?;
                        return Err(MigrationError::InvalidInput(format!(
                            "internal: task {id} finished while task {} was expected",
                            task.id
                        )));
                    }
                    WorkerMsg::Batch(work) => pending.push(work),
                }
            }
            self.flush(&mut pending, &mut *committer, &mut tally).await
        }
        .await;
        tracing::info!(
            workers,
            batches = committer.batches_done,
            elapsed_ms = started.elapsed().as_millis() as u64,
            commit_rounds = tally.rounds,
            committing_ms = tally.committing.as_millis() as u64,
            waiting_for_workers_ms = waiting.as_millis() as u64,
            "local execution: the committer's time"
        );
        if outcome.is_err() {
            // Stop the workers and delete the files they wrote that will never be committed.
            ctx.cancel.store(true, Ordering::SeqCst);
            for rx in &mut receivers {
                while let Some(msg) = rx.recv().await {
                    if let Ok(WorkerMsg::Batch(work)) = msg {
                        work.discard(&ctx.dest).await;
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

    /// Commits the batches waiting in `pending` (see [`Committer::handle_group`]).
    async fn flush(
        &self,
        pending: &mut Vec<crate::execute::worker::BatchWork>,
        committer: &mut Committer,
        tally: &mut Tally,
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        if let Err(stopped) = self.check_stop(committer.batches_done) {
            for work in pending.drain(..) {
                work.discard(&committer.dest).await;
            }
            return Err(stopped);
        }
        let begun = std::time::Instant::now();
        let handled = committer.handle_group(std::mem::take(pending)).await;
        tally.committing += begun.elapsed();
        tally.rounds += 1;
        // Counted after the group: the batches of it that landed before the failure are
        // committed, and the error must say so (a re-run without a checkpoint adds them twice).
        handled.map_err(|(index, e)| self.batch_error(index, committer.batches_done, e))
    }
}
