//! Executing a [`MigrationTask`]: read its files, cut batches, project, write — never commit.
//!
//! A reader task decodes the task's files in plan order, cuts the rows into batches of exactly
//! `batch_rows` (the last of the task may be shorter) and projects them; the worker streams each
//! batch's pieces straight into a Parquet writer, so a batch is never held whole in memory and
//! decoding overlaps encoding. Upserts are the exception: their rows go to the committer, which
//! must read the destination's keys at commit time.
//!
//! Batches before the resume point are read (their boundaries depend on the rows) but neither
//! projected nor written; batches found already committed by an earlier, crashed run are reported
//! as landed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::RecordBatch;
use futures::StreamExt;
use iceberg::table::Table;
use ops_core::file_path::FilePath;
use ops_core::write::WrittenFiles;
use ops_reconcile::ReconciliationPlan;
use tokio::sync::mpsc;

use crate::plan::job::MigrationTask;
use crate::plan::read::{FileIndex, PlannedRead, ReadFile};
use crate::{FileRoute, MigrationError, Result, WriteMode};

/// What a worker hands the committer for one batch.
pub(crate) enum Payload {
    /// Data files written, to commit.
    Written(WrittenFiles),
    /// Source data files the destination will reference in place: never deleted here.
    Referenced(WrittenFiles),
    /// Rows to upsert.
    Rows(Vec<RecordBatch>),
    /// Already committed by an earlier run: record it.
    Landed,
    /// Before the resume point: committed and checkpointed earlier.
    Skipped,
}

/// One batch, ready for the committer.
pub(crate) struct BatchWork {
    pub index: u64,
    pub rows: u64,
    pub bytes: u64,
    pub payload: Payload,
    /// The manifest of a written batch's files, written by the worker for the committer's
    /// append (local appends only): one file less to write on the committer's serial path.
    pub manifest: Option<ops_core::ops::PreparedManifest>,
}

impl BatchWork {
    /// Deletes what this batch wrote (see [`discard`]) and its prepared manifest.
    pub async fn discard(self, dest: &Table) {
        if let Some(m) = &self.manifest {
            m.discard(dest).await;
        }
        discard(dest, self.payload).await;
    }
}

/// A worker's messages, per task in order: its batches, then `TaskDone`.
// A batch is most messages, and a channel of at most a task's batches holds them: boxing each
// would add an allocation per batch to save the size of the rare `TaskDone`.
#[allow(clippy::large_enum_variant)]
pub(crate) enum WorkerMsg {
    Batch(BatchWork),
    TaskDone(usize),
}

/// Everything a worker needs, shared by all workers of a run.
pub(crate) struct TaskContext {
    pub source: Table,
    pub dest: Table,
    pub read: PlannedRead,
    pub plan: ReconciliationPlan,
    pub batch_rows: usize,
    pub read_batch_size: usize,
    pub mode: WriteMode,
    /// Batches below this index were committed by an earlier run.
    pub resume_from: u64,
    /// Batches at or above `resume_from` that an earlier run committed without checkpointing.
    pub landed: BTreeSet<u64>,
    /// Set by the committer when it fails: stop writing.
    pub cancel: AtomicBool,
    /// Source data files of copy and reference tasks, by path, as their manifests hold them.
    pub whole_files: HashMap<FilePath, crate::plan::route::PlannedFile>,
    /// Where each planned file is in `read.files`.
    pub by_path: FileIndex,
    /// Appends: write each batch's manifest beside its data (for a committer in this process;
    /// a task output carries only data files).
    pub prepare_manifests: bool,
}

impl TaskContext {
    /// True when every batch of `task` was committed before the resume point: nothing to read.
    pub fn fully_resumed(&self, task: &MigrationTask) -> bool {
        task.batches().end <= self.resume_from
    }

    fn scan_files(&self, task: &MigrationTask) -> Result<Vec<ReadFile>> {
        task.files
            .iter()
            .map(|path| {
                self.by_path.get(&self.read, path).cloned().ok_or_else(|| {
                    MigrationError::InvalidInput(format!(
                        "task {} reads {path}, which the source snapshot no longer plans \
                             (the row filter or the source changed since planning); re-plan \
                             the migration",
                        task.id
                    ))
                })
            })
            .collect()
    }
}

/// Runs `tasks` in order, sending their batches to `out`. Stops quietly when the committer has
/// gone or cancelled; deletes files it wrote that the committer will never see.
pub(crate) async fn run_worker(
    ctx: Arc<TaskContext>,
    tasks: Vec<MigrationTask>,
    out: mpsc::Sender<Result<WorkerMsg>>,
) {
    for task in tasks {
        if ctx.fully_resumed(&task) {
            continue;
        }
        match execute(&ctx, &task, &out).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = out.send(Err(e)).await;
                return;
            }
        }
        if out.send(Ok(WorkerMsg::TaskDone(task.id))).await.is_err() {
            return;
        }
    }
}

/// A piece of the task's row stream.
enum Piece {
    /// Projected rows of batch `index` (only for batches to write).
    Rows(u64, RecordBatch),
    /// Batch `index` ends here with `rows` rows.
    End(u64, u64),
}

/// Sends one batch to the committer; `false` (after discarding its files) when the committer
/// is gone or has cancelled.
async fn send(ctx: &TaskContext, out: mpsc::Sender<Result<WorkerMsg>>, work: BatchWork) -> bool {
    if ctx.cancel.load(Ordering::SeqCst) {
        work.discard(&ctx.dest).await;
        return false;
    }
    if let Err(mpsc::error::SendError(msg)) = out.send(Ok(WorkerMsg::Batch(work))).await {
        if let Ok(WorkerMsg::Batch(work)) = msg {
            work.discard(&ctx.dest).await;
        }
        return false;
    }
    true
}

/// Executes a copy or reference task: its files, whole, are its one batch.
async fn execute_whole(
    ctx: &TaskContext,
    task: &MigrationTask,
    out: &mpsc::Sender<Result<WorkerMsg>>,
) -> Result<bool> {
    let index = task.first_batch;
    let files = task
        .files
        .iter()
        .map(|path| {
            ctx.whole_files.get(path).cloned().ok_or_else(|| {
                MigrationError::InvalidInput(format!(
                    "task {} copies {path}, which the source snapshot no longer routes to a \
                     copy (its schema, spec or deletes changed since planning); re-plan the \
                     migration",
                    task.id
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let rows = files.iter().map(|f| f.routed.record_count).sum();
    let bytes = files.iter().map(|f| f.routed.file_size_in_bytes).sum();
    let payload = if index < ctx.resume_from {
        Payload::Skipped
    } else if ctx.landed.contains(&index) {
        Payload::Landed
    } else if ctx.cancel.load(Ordering::SeqCst) {
        return Ok(false);
    } else {
        // On a task of its own: the copy's borrowed futures are then checked against owned
        // tables, which keeps this worker's future `Send`.
        let (source, dest, route) = (ctx.source.clone(), ctx.dest.clone(), task.route);
        let copied = files.clone();
        let written =
            tokio::spawn(
                async move { super::copy::copy_files(&source, &dest, &copied, route).await },
            )
            .await
            .map_err(|join| {
                MigrationError::InvalidInput(format!("the copy of task {} failed: {join}", task.id))
            })??;
        match task.route {
            FileRoute::Reference => Payload::Referenced(written),
            _ => Payload::Written(written),
        }
    };
    Ok(send(
        ctx,
        out.clone(),
        BatchWork {
            index,
            rows,
            bytes,
            payload,
            manifest: None,
        },
    )
    .await)
}

/// Executes one task; `Ok(false)` when the committer is gone.
async fn execute(
    ctx: &Arc<TaskContext>,
    task: &MigrationTask,
    out: &mpsc::Sender<Result<WorkerMsg>>,
) -> Result<bool> {
    if task.route != FileRoute::Rewrite {
        return execute_whole(ctx, task, out).await;
    }
    let read = ctx.read.with_files(ctx.scan_files(task)?);
    let stream = read.stream(&ctx.source, ctx.read_batch_size)?;
    let (ptx, mut prx) = mpsc::channel::<Result<Piece>>(2);
    let reader = tokio::spawn(cut_batches(
        stream,
        Cut {
            plan: ctx.plan.clone(),
            batch_rows: ctx.batch_rows,
            resume_from: ctx.resume_from,
            landed: ctx.landed.clone(),
            first_index: task.first_batch,
            end_index: task.batches().end,
            task: task.id,
        },
        ptx,
    ));

    let mut current: Option<OpenBatch> = None;
    // The batch before, being closed and sent while this one is read and written.
    let mut closing: Option<Closing> = None;
    let mut rows_acc: Vec<RecordBatch> = Vec::new();
    let mut bytes = 0u64;
    let outcome = async {
        while let Some(piece) = prx.recv().await {
            match piece? {
                Piece::Rows(index, batch) => {
                    bytes += crate::nbytes::arrow_bytes(&batch);
                    if ctx.mode == WriteMode::Upsert {
                        rows_acc.push(batch);
                        continue;
                    }
                    let open = match &mut current {
                        Some(open) => open,
                        None => current.insert(OpenBatch::start(&ctx.dest, index)),
                    };
                    if open.tx.send(batch).await.is_err() {
                        // The writer stopped early: its error comes out of `finish`.
                        if let Some(open) = current.take() {
                            let w = open.finish().await?;
                            discard(&ctx.dest, Payload::Written(w)).await;
                        }
                        return Err(MigrationError::InvalidInput(format!(
                            "internal: the Parquet writer of batch {index} stopped before its \
                             rows were all written"
                        )));
                    }
                }
                Piece::End(index, rows) => {
                    // Batches leave in order, and at most one is being closed at a time.
                    if let Some(before) = closing.take()
                        && !before.sent().await?
                    {
                        return Ok(false);
                    }
                    let bytes = std::mem::take(&mut bytes);
                    let payload = if index < ctx.resume_from {
                        Payload::Skipped
                    } else if ctx.landed.contains(&index) {
                        Payload::Landed
                    } else if ctx.mode == WriteMode::Upsert {
                        Payload::Rows(std::mem::take(&mut rows_acc))
                    } else {
                        closing =
                            Some(Closing::start(ctx, current.take(), index, rows, bytes, out));
                        continue;
                    };
                    let work = BatchWork {
                        index,
                        rows,
                        bytes,
                        payload,
                        manifest: None,
                    };
                    if !send(ctx, out.clone(), work).await {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }
    .await;
    // The last batch (or, stopped early, the one being closed) is sent or discarded before the
    // task ends. Its failure comes first: it is the earlier batch's, the one the committer
    // waits for.
    let outcome = match (outcome, closing.take()) {
        (outcome, None) => outcome,
        (Ok(done), Some(last)) => last.sent().await.map(|sent| done && sent),
        (Err(later), Some(last)) => match last.sent().await {
            Err(first) => {
                tracing::warn!(error = %later, "a later batch failed too");
                Err(first)
            }
            Ok(_) => Err(later),
        },
    };
    if let Some(open) = current.take()
        && let Ok(w) = open.finish().await
    {
        discard(&ctx.dest, Payload::Written(w)).await;
    }
    drop(prx);
    match reader.await {
        Ok(Ok(())) => outcome,
        Ok(Err(e)) => outcome.and(Err(e)),
        Err(join) => outcome.and(Err(MigrationError::InvalidInput(format!(
            "the source reader of task {} failed: {join}",
            task.id
        )))),
    }
}

/// A written batch being closed and sent on a task of its own, so the worker reads and writes
/// the next batch meanwhile.
///
/// Closing is the row group's last pages, the footer, the file's `fsync`, and for an append
/// the batch's manifest with its own `fsync`: awaited in line, each worker's pipeline stalled
/// on it once a batch (about 100 times a worker at 10M rows in batches of 50,000). The last
/// batch of a task is awaited before the task is reported done, so a task of one batch gains
/// nothing.
struct Closing(tokio::task::JoinHandle<Result<bool>>);

impl Closing {
    fn start(
        ctx: &Arc<TaskContext>,
        open: Option<OpenBatch>,
        index: u64,
        rows: u64,
        bytes: u64,
        out: &mpsc::Sender<Result<WorkerMsg>>,
    ) -> Self {
        let (ctx, out) = (ctx.clone(), out.clone());
        Self(tokio::spawn(async move {
            let work = close(&ctx, open, index, rows, bytes).await?;
            Ok(send(&ctx, out, work).await)
        }))
    }

    /// Whether the batch reached the committer (`false`: the committer is gone and the batch's
    /// files were deleted).
    async fn sent(self) -> Result<bool> {
        match self.0.await {
            Ok(r) => r,
            Err(join) => Err(MigrationError::InvalidInput(format!(
                "closing a written batch failed: {join}"
            ))),
        }
    }
}

/// The batch `open` wrote, its file finished and, for an append, its manifest written.
async fn close(
    ctx: &TaskContext,
    open: Option<OpenBatch>,
    index: u64,
    rows: u64,
    bytes: u64,
) -> Result<BatchWork> {
    let mut manifest = None;
    let payload = match open {
        Some(open) => {
            let written = open.finish().await?;
            if ctx.prepare_manifests && ctx.mode == WriteMode::Append {
                // Written here, in parallel with the other worker and the committer, instead
                // of on the committer's serial path.
                match ops_core::ops::PreparedManifest::write(&ctx.dest, &written).await {
                    Ok(m) => manifest = m,
                    Err(e) => {
                        discard(&ctx.dest, Payload::Written(written)).await;
                        return Err(e.into());
                    }
                }
            }
            Payload::Written(written)
        }
        None => Payload::Written(WrittenFiles {
            spec_id: ctx.dest.metadata().default_partition_spec_id(),
            files: Vec::new(),
        }),
    };
    Ok(BatchWork {
        index,
        rows,
        bytes,
        payload,
        manifest,
    })
}

/// A batch being written: its pieces flow through `tx` into a Parquet writer task.
struct OpenBatch {
    tx: mpsc::Sender<RecordBatch>,
    writer: tokio::task::JoinHandle<Result<WrittenFiles>>,
}

impl OpenBatch {
    fn start(dest: &Table, index: u64) -> Self {
        let (tx, rx) = mpsc::channel::<RecordBatch>(2);
        let dest = dest.clone();
        let writer = tokio::spawn(async move {
            let pieces = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|b| (Ok(b), rx))
            })
            .boxed();
            tracing::debug!(batch = index, "writing batch");
            ops_core::write::write_files(&dest, pieces)
                .await
                .map_err(MigrationError::from)
        });
        Self { tx, writer }
    }

    async fn finish(self) -> Result<WrittenFiles> {
        drop(self.tx);
        match self.writer.await {
            Ok(r) => r,
            Err(join) => Err(MigrationError::InvalidInput(format!(
                "the Parquet writer task failed: {join}"
            ))),
        }
    }
}

/// Deletes the files of a batch that will not be committed (never a referenced source file).
///
/// Only paths under the destination's location are deleted: a referenced source file that
/// reaches here as `Written` (its flag lost on the way) must survive.
pub(crate) async fn discard(dest: &Table, payload: Payload) {
    if let Payload::Written(w) = payload {
        let root = format!("{}/", dest.metadata().location().trim_end_matches('/'));
        for f in &w.files {
            let path = f.file_path();
            if !path.starts_with(&root) {
                tracing::warn!(
                    path,
                    location = %root,
                    "not deleting an uncommitted file outside the destination's location"
                );
                continue;
            }
            if let Err(e) = dest.file_io().delete(path).await {
                tracing::warn!(path, error = %e, "cannot delete an uncommitted data file");
            }
        }
    }
}

/// How a task's rows are cut into batches.
struct Cut {
    plan: ReconciliationPlan,
    batch_rows: usize,
    resume_from: u64,
    landed: BTreeSet<u64>,
    first_index: u64,
    /// The first index of the next task: the manifests' record counts bound this task's rows.
    end_index: u64,
    task: usize,
}

/// Cuts `stream` into batches of `batch_rows` rows numbered from `first_index`, projecting the
/// rows of batches to write.
async fn cut_batches(
    mut stream: futures::stream::BoxStream<'static, Result<RecordBatch>>,
    cut: Cut,
    tx: mpsc::Sender<Result<Piece>>,
) -> Result<()> {
    let batch_rows = cut.batch_rows.max(1);
    let mut index = cut.first_index;
    let mut in_batch = 0usize;
    let wanted = |index: u64| index >= cut.resume_from && !cut.landed.contains(&index);
    while let Some(batch) = stream.next().await {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return Ok(());
            }
        };
        let mut offset = 0usize;
        while offset < batch.num_rows() {
            if let Err(e) = within_task(cut.task, index, cut.end_index) {
                let _ = tx.send(Err(e)).await;
                return Ok(());
            }
            let take = (batch_rows - in_batch).min(batch.num_rows() - offset);
            if wanted(index) {
                let projected = ops_reconcile::project_batch(&batch.slice(offset, take), &cut.plan)
                    .map_err(MigrationError::from);
                let failed = projected.is_err();
                let msg = projected.map(|b| Piece::Rows(index, b));
                if tx.send(msg).await.is_err() || failed {
                    return Ok(());
                }
            }
            in_batch += take;
            offset += take;
            if in_batch == batch_rows {
                if tx
                    .send(Ok(Piece::End(index, in_batch as u64)))
                    .await
                    .is_err()
                {
                    return Ok(());
                }
                in_batch = 0;
                index += 1;
            }
        }
    }
    if in_batch > 0 {
        let _ = tx.send(Ok(Piece::End(index, in_batch as u64))).await;
    }
    Ok(())
}

/// Refuses batch `index` of task `task` when it is past `end_index`, the task's batches as its
/// files' manifest record counts give them: the rows would be numbered as the next task's.
/// Shared by the write pass and the upsert's key pre-pass, which must number rows alike.
pub(crate) fn within_task(task: usize, index: u64, end_index: u64) -> Result<()> {
    if index < end_index {
        return Ok(());
    }
    Err(MigrationError::InvalidInput(format!(
        "task {task} yields more rows than its files' manifest record counts allow (batch \
         {index} would belong to the next task); the source's manifests are wrong — rewrite \
         its data files before migrating"
    )))
}

/// How many workers run by default: one per core.
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Tasks dealt round-robin to `workers` workers: task `i` goes to worker `i % workers`, which is
/// also where the committer looks for its batches.
pub(crate) fn deal(tasks: &[MigrationTask], workers: usize) -> Vec<Vec<MigrationTask>> {
    let workers = workers.max(1);
    let mut out = vec![Vec::new(); workers];
    for t in tasks {
        out[t.id % workers].push(t.clone());
    }
    out
}
