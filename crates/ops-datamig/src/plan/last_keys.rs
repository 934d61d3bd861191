//! The key pre-pass of an upsert: which batch holds each key's last row
//! (`on_duplicate_keys last`), or, under `error`, the refusal of a key the source holds more
//! than once — in one batch or across batches — before anything is written (committing batch
//! by batch would otherwise let the later batch win, so the outcome would depend on
//! `batch_rows`).
//!
//! An upsert commits batch by batch. A key repeated across batches would otherwise be written
//! by each of them in turn: batch 1 commits the older row, batch 2 the newer one — so a
//! snapshot between them shows a value that is not the source's last, and re-running the same
//! upsert writes the older row back (and the newer one again) instead of changing nothing.
//!
//! So before the first commit the source's planned read is streamed once, in the very order
//! the batches are cut (highest data sequence number last, then planned file order, then row
//! position: `PlannedRead::order_by_sequence_number` and `worker::cut_batches`), and for each
//! key only its encoded bytes and the index of the last batch holding it are kept. Each batch
//! then upserts only the rows whose key it holds last (the last of them within the batch, see
//! `commit::upsert`); a key's earlier rows are dropped. Every committed snapshot therefore shows
//! each key with its old destination value or the source's final one, never an intermediate.
//!
//! - Memory: one entry per distinct key (its row-encoded bytes plus about 60 bytes), not per
//!   row; the count and an estimate are logged.
//! - Resume: the pass reads the pinned snapshot's planned read, so it is deterministic and a
//!   resumed job makes the same decisions. Rows of batches before the resume point are read
//!   (they place the later batches' rows) but not recorded: a key whose last batch is before the
//!   resume point occurs in no later batch, and for a key that does, its last batch is the
//!   same whether the earlier rows are counted or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use futures::StreamExt;
use ops_core::keys::KeyEncoder;

use crate::execute::worker::TaskContext;
use crate::plan::job::MigrationTask;
use crate::{FileRoute, MigrationError, OnDuplicateKeys, Result};

/// Each key's last batch (see the module docs).
pub(crate) struct LastBatches {
    encoder: Arc<KeyEncoder>,
    /// The key columns, looked up by name in each batch.
    keys: Vec<String>,
    last: HashMap<Box<[u8]>, u64>,
}

impl std::fmt::Debug for LastBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LastBatches")
            .field("keys", &self.last.len())
            .finish_non_exhaustive()
    }
}

impl LastBatches {
    /// Reads the source's rows of `tasks` in batch order (up to `workers` tasks at once) and
    /// records each key's last batch at or after the context's resume point. With `rule`
    /// `Error`, a key seen a second time (in another batch or the same one) is refused, naming
    /// the key and both batches, before anything is written.
    pub async fn scan(
        ctx: &Arc<TaskContext>,
        tasks: &[MigrationTask],
        keys: &[String],
        workers: usize,
        rule: OnDuplicateKeys,
    ) -> Result<Self> {
        let started = std::time::Instant::now();
        let target = ops_core::write::table_arrow_schema(&ctx.dest)?;
        let key_idx = keys
            .iter()
            .map(|k| {
                target.index_of(k).map_err(|_| {
                    MigrationError::InvalidInput(format!(
                        "upsert key '{k}' is not a destination column"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let types = key_idx
            .iter()
            .map(|&i| target.field(i).data_type().clone())
            .collect();
        let encoder = Arc::new(KeyEncoder::new(types)?);
        let last: Arc<Mutex<HashMap<Box<[u8]>, u64>>> = Arc::default();
        // Owned tasks and a JoinSet: no closure borrowing across an await (which makes the
        // migrator's future fail `Send` for callers that spawn it), and dropping the set on an
        // error aborts the tasks still reading.
        let mut todo = tasks
            .iter()
            .filter(|t| t.route == FileRoute::Rewrite && !ctx.fully_resumed(t))
            .cloned()
            .collect::<Vec<_>>()
            .into_iter();
        let mut running = tokio::task::JoinSet::new();
        let mut rows = 0u64;
        loop {
            while running.len() < workers.max(1) {
                let Some(task) = todo.next() else { break };
                let (ctx, encoder, last, target, key_idx) = (
                    Arc::clone(ctx),
                    Arc::clone(&encoder),
                    Arc::clone(&last),
                    target.clone(),
                    key_idx.clone(),
                );
                running.spawn(async move {
                    scan_task(&ctx, &task, &encoder, &last, &target, &key_idx, rule).await
                });
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            rows += joined.map_err(|join| {
                MigrationError::InvalidInput(format!("the upsert key pre-pass failed: {join}"))
            })??;
        }
        let last = std::mem::take(&mut *last.lock().map_err(|_| {
            MigrationError::InvalidInput("internal: a key pre-pass task panicked".into())
        })?);
        // The keys' bytes plus, per key, the map entry (boxed slice, batch index), its control
        // byte and the allocation's overhead: about 60 bytes.
        let bytes: usize = last.keys().map(|k| k.len() + 60).sum();
        tracing::info!(
            rows,
            distinct_keys = last.len(),
            approx_mib = bytes / (1 << 20),
            secs = started.elapsed().as_secs_f64(),
            on_duplicate_keys = rule.as_str(),
            "upsert key pre-pass: each key's last batch"
        );
        Ok(Self {
            encoder,
            keys: keys.to_vec(),
            last,
        })
    }

    /// For each row of `batch` (in the destination's Arrow schema, as the upsert conforms it),
    /// whether batch `index` holds its key's last row. A key the pre-pass never saw is an
    /// error: the batch would not be the one the pass read.
    pub fn held_last(&self, index: u64, batch: &RecordBatch) -> Result<BooleanArray> {
        // By name: the upsert conforms each batch to the destination as reloaded after every
        // commit, whose columns another writer may have moved or dropped since the pass.
        let cols: Vec<ArrayRef> = self
            .keys
            .iter()
            .map(|k| {
                batch.column_by_name(k).cloned().ok_or_else(|| {
                    MigrationError::InvalidInput(format!(
                        "upsert batch {index}: the destination no longer has the key column \
                         '{k}' (changed by another writer during the job)"
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let rows = self.encoder.encode(&cols)?;
        (0..rows.num_rows())
            .map(|i| match self.last.get(rows.row(i).as_ref()) {
                Some(&last) => Ok(Some(last == index)),
                None => Err(MigrationError::InvalidInput(format!(
                    "upsert batch {index}: row {i}'s key was not seen by the key pre-pass over \
                     the pinned source snapshot; the source read changed under the job — run \
                     it again"
                ))),
            })
            .collect()
    }
}

/// The refusal of a key the source holds twice under `on_duplicate_keys error`: committing
/// the batches as they come would let the later batch win, so the outcome would depend on
/// `batch_rows` and a re-run would write the earlier row back before the later one.
fn repeated_key(cols: &[ArrayRef], row: usize, a: u64, b: u64, batch_rows: u64) -> MigrationError {
    let key = crate::commit::upsert::describe_key(cols, row);
    let (first, second) = (a.min(b), a.max(b));
    let place = if first == second {
        format!("twice in batch {first}")
    } else {
        format!("twice, in batches {first} and {second} (batch_rows {batch_rows})")
    };
    MigrationError::InvalidInput(format!(
        "upsert source holds key ({key}) {place}; with --on-duplicate-keys error (the default) \
         every key must occur once in the source, and nothing was written — keep the last row \
         of each key with --on-duplicate-keys last, or deduplicate the source on the upsert keys"
    ))
}

/// One task's rows, numbered as `worker::cut_batches` numbers them: row `n` of the task is in
/// batch `first_batch + n / batch_rows`. Returns the rows read.
async fn scan_task(
    ctx: &TaskContext,
    task: &MigrationTask,
    encoder: &KeyEncoder,
    last: &Mutex<HashMap<Box<[u8]>, u64>>,
    target: &SchemaRef,
    key_idx: &[usize],
    rule: OnDuplicateKeys,
) -> Result<u64> {
    let files = task
        .files
        .iter()
        .map(|path| {
            ctx.by_path
                .get(path.as_str())
                .and_then(|i| ctx.read.tasks.get(*i))
                .cloned()
                .ok_or_else(|| {
                    MigrationError::InvalidInput(format!(
                        "task {} reads {path}, which the source snapshot no longer plans; \
                         re-plan the migration",
                        task.id
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut stream = ctx
        .read
        .with_tasks(files)
        .stream(&ctx.source, ctx.read_batch_size)?;
    let batch_rows = ctx.batch_rows.max(1) as u64;
    let mut n = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let len = batch.num_rows() as u64;
        let first = n;
        n += len;
        // Wholly before the resume point: only counted.
        if len == 0 || task.first_batch + (n - 1) / batch_rows < ctx.resume_from {
            continue;
        }
        let projected = ops_reconcile::project_batch(&batch, &ctx.plan)?;
        let conformed = ops_core::write::conform(&projected, target)?;
        let cols: Vec<ArrayRef> = key_idx
            .iter()
            .map(|&i| conformed.column(i).clone())
            .collect();
        let rows = encoder.encode(&cols)?;
        let mut map = last.lock().map_err(|_| {
            MigrationError::InvalidInput("internal: a key pre-pass task panicked".into())
        })?;
        for i in 0..rows.num_rows() {
            let index = task.first_batch + (first + i as u64) / batch_rows;
            if index < ctx.resume_from {
                continue;
            }
            // A NULL key is the batch's to refuse, with its own message (it matches no row).
            if rule == OnDuplicateKeys::Error && cols.iter().any(|c| c.is_null(i)) {
                continue;
            }
            let key = rows.row(i);
            match map.get_mut(key.as_ref()) {
                Some(at) if rule == OnDuplicateKeys::Error => {
                    return Err(repeated_key(&cols, i, *at, index, batch_rows));
                }
                Some(at) => *at = (*at).max(index),
                None => {
                    map.insert(key.as_ref().into(), index);
                }
            }
        }
    }
    Ok(n)
}
