//! The key pre-pass of an upsert, run before anything is written (before the destination's
//! schema is evolved and before a checkpoint is started, under `--dry-run` too): which batch
//! holds each key's last row (`on_duplicate_keys last`), or, under `error`, the refusal of a
//! key the source holds more than once — in one batch or across batches (committing batch by
//! batch would otherwise let the later batch win, so the outcome would depend on
//! `batch_rows`). A NULL or NaN key, which every batch refuses, is refused here too, naming its
//! batch, so such a run writes nothing either.
//!
//! An upsert commits batch by batch. A key repeated across batches would otherwise be written
//! by each of them in turn: batch 1 commits the older row, batch 2 the newer one — so a
//! snapshot between them shows a value that is not the source's last, and re-running the same
//! upsert writes the older row back (and the newer one again) instead of changing nothing.
//!
//! So before the first write the source's planned read is streamed once, in the very order
//! the batches are cut (highest data sequence number last, then planned file order, then row
//! position: `PlannedRead::order_by_sequence_number` and `worker::cut_batches`). The read
//! decodes only the key columns plus the columns that decide which rows the read yields (the
//! row filter's and the equality deletes', [`PlannedRead::only_columns`]), so its rows and
//! their batch numbers are the write pass's. Each batch then upserts only the rows whose key it
//! holds last (the last of them within the batch, see `commit::upsert`); a key's earlier rows
//! are dropped. Every committed snapshot therefore shows each key with its old destination
//! value or the source's final one, never an intermediate.
//!
//! - Memory: one entry per distinct key, not per row. `last` keeps each key's row-encoded
//!   bytes plus about 60 bytes (the batches look keys up exactly); `error` keeps a 128-bit
//!   hash of the encoded key and its first batch (about 40 bytes a key whatever the key's
//!   width). A hash seen twice is confirmed on the rows themselves (the two batches are read
//!   again) before anything is refused; were it a collision, the pass runs again keeping the
//!   encoded keys. The count and an estimate are logged.
//! - Resume: the pass reads the pinned snapshot's planned read, so it is deterministic and a
//!   resumed job makes the same decisions. Rows of batches before the resume point are read
//!   (they place the later batches' rows) but not recorded: a key whose last batch is before the
//!   resume point occurs in no later batch, and for a key that does, its last batch is the
//!   same whether the earlier rows are counted or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use futures::StreamExt;
use iceberg::table::Table;
use ops_core::keys::KeyEncoder;
use ops_reconcile::ReconciliationPlan;
use twox_hash::XxHash3_128;

use crate::plan::job::MigrationTask;
use crate::plan::read::{FileIndex, PlannedRead};
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

/// What the pre-pass reads: the migration's planned source read and its batch layout.
pub(crate) struct KeyScan<'a> {
    pub source: &'a Table,
    /// The planned read, in the upsert's order (by data sequence number).
    pub read: &'a PlannedRead,
    /// The reconciliation plan: which source column feeds each key, cast how.
    pub plan: &'a ReconciliationPlan,
    pub tasks: &'a [MigrationTask],
    /// The key columns (destination names).
    pub keys: &'a [String],
    pub batch_rows: usize,
    pub read_batch_size: usize,
    /// Batches below this index were committed by an earlier run.
    pub resume_from: u64,
    pub workers: usize,
    pub rule: OnDuplicateKeys,
}

/// A pre-pass failure and the batch it concerns (`None`: not one batch's), so the caller
/// reports it as the write pass reports a batch's failure.
#[derive(Debug)]
pub(crate) struct ScanFailure {
    pub batch: Option<u64>,
    /// Boxed: a `Result` carrying it stays small.
    pub error: Box<MigrationError>,
}

impl From<MigrationError> for ScanFailure {
    fn from(error: MigrationError) -> Self {
        Self {
            batch: None,
            error: Box::new(error),
        }
    }
}

impl From<ops_core::Error> for ScanFailure {
    fn from(e: ops_core::Error) -> Self {
        MigrationError::from(e).into()
    }
}

/// Keys seen so far: exact encoded keys (`last`, or `error` after a hash collision), or their
/// 128-bit hashes (`error`).
enum Seen {
    Exact(HashMap<Box<[u8]>, u64>),
    Hashed(HashMap<u128, u64>),
}

impl Seen {
    fn len(&self) -> usize {
        match self {
            Seen::Exact(m) => m.len(),
            Seen::Hashed(m) => m.len(),
        }
    }

    fn approx_bytes(&self) -> usize {
        match self {
            // The keys' bytes plus, per key, the map entry (boxed slice, batch index), its
            // control byte and the allocation's overhead: about 60 bytes.
            Seen::Exact(m) => m.keys().map(|k| k.len() + 60).sum(),
            // A (u128, u64) entry padded to 32 bytes and its control byte, for every bucket:
            // the table has capacity * 8/7 of them, and doubles as it grows.
            Seen::Hashed(m) => m.capacity() * 38,
        }
    }
}

/// A key that a second row seems to repeat, to be confirmed on the rows.
struct Suspect {
    key: Box<[u8]>,
    batches: (u64, u64),
}

/// How one task's scan ended early.
enum Stop {
    Failed(ScanFailure),
    /// A hashed key seen twice (`error`): a duplicate, unless the hashes collide.
    Suspect(Suspect),
}

impl From<ScanFailure> for Stop {
    fn from(f: ScanFailure) -> Self {
        Stop::Failed(f)
    }
}

/// What every task of one pass shares.
struct Shared {
    source: Table,
    read: PlannedRead,
    by_path: FileIndex,
    /// The plan reduced to the key columns.
    plan: ReconciliationPlan,
    keys: Vec<String>,
    /// The keys' types, as the projection casts them.
    types: Vec<arrow_schema::DataType>,
    encoder: KeyEncoder,
    batch_rows: u64,
    read_batch_size: usize,
    resume_from: u64,
    rule: OnDuplicateKeys,
    seen: Mutex<Seen>,
}

impl LastBatches {
    /// Reads the source's key columns of `scan.tasks` in batch order (up to `scan.workers`
    /// tasks at once) and records each key's last batch at or after the resume point. With
    /// `rule` `Error`, a key seen a second time (in another batch or the same one) is refused,
    /// naming the key and both batches. A NULL or NaN key is refused under either rule.
    pub async fn scan(scan: KeyScan<'_>) -> Result<Self, ScanFailure> {
        let started = std::time::Instant::now();
        let shared = Arc::new(shared(&scan, scan.rule == OnDuplicateKeys::Error)?);
        let rows = match run(&shared, &scan).await? {
            Ok(rows) => rows,
            Err(suspect) => {
                if let Some(refusal) = confirm(&shared, &scan, &suspect).await? {
                    return Err(refusal);
                }
                // Two keys with one 128-bit hash: never refused on that alone. Run again
                // keeping the encoded keys, which compares them exactly.
                tracing::warn!(
                    batches = ?suspect.batches,
                    "upsert key pre-pass: two different keys share a 128-bit hash; reading \
                     again with exact keys"
                );
                let exact = Arc::new(shared_exact(&scan)?);
                match run(&exact, &scan).await? {
                    Ok(rows) => return Ok(finish(&exact, &scan, rows, started)?),
                    Err(_) => {
                        return Err(MigrationError::InvalidInput(
                            "internal: the exact key pre-pass reported a hash collision".into(),
                        )
                        .into());
                    }
                }
            }
        };
        Ok(finish(&shared, &scan, rows, started)?)
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
        // The encoder casts a column whose type the destination changed since the pass
        // (a widened key): the pass ran before the destination's schema was evolved.
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

/// The pass's shared state; `hashed`: keep 128-bit hashes (`error`) instead of the keys.
fn shared(scan: &KeyScan<'_>, hashed: bool) -> Result<Shared> {
    // Only the key columns are projected and decoded.
    let mut plan = scan.plan.clone();
    plan.projections
        .retain(|p| scan.keys.iter().any(|k| k == &p.dest_name));
    plan.auto_add_columns.clear();
    plan.auto_add_nested_columns.clear();
    plan.widen_columns.clear();
    plan.warnings.clear();
    plan.dest_arrow_schema = Arc::new(arrow_schema::Schema::new(
        plan.projections
            .iter()
            .map(|p| p.dest_field.clone())
            .collect::<Vec<_>>(),
    ));
    let source_schema = scan
        .read
        .target
        .clone()
        .unwrap_or_else(|| scan.source.metadata().current_schema().clone());
    let mut types = Vec::with_capacity(scan.keys.len());
    let mut ids = Vec::with_capacity(scan.keys.len());
    for k in scan.keys {
        let p = plan
            .projections
            .iter()
            .find(|p| &p.dest_name == k)
            .ok_or_else(|| {
                MigrationError::InvalidInput(format!(
                    "upsert key '{k}' is not a column of the projected destination schema"
                ))
            })?;
        let source = p.source_name.as_deref().ok_or_else(|| {
            MigrationError::InvalidInput(format!(
                "upsert key '{k}' has no source column (it would be filled with null); map a \
                 source column to it with column_mapping"
            ))
        })?;
        let field = source_schema
            .as_struct()
            .fields()
            .iter()
            .find(|f| f.name == source)
            .ok_or_else(|| {
                MigrationError::InvalidInput(format!(
                    "upsert key '{k}': source column '{source}' is not a top-level column of \
                     the source snapshot's schema"
                ))
            })?;
        ids.push(field.id);
        types.push(p.dest_field.data_type().clone());
    }
    let read = scan.read.clone().only_columns(ids);
    Ok(Shared {
        source: scan.source.clone(),
        by_path: FileIndex::of(&read),
        read,
        plan,
        keys: scan.keys.to_vec(),
        encoder: KeyEncoder::new(types.clone())?,
        types,
        batch_rows: scan.batch_rows.max(1) as u64,
        read_batch_size: scan.read_batch_size,
        resume_from: scan.resume_from,
        rule: scan.rule,
        seen: Mutex::new(if hashed {
            Seen::Hashed(HashMap::new())
        } else {
            Seen::Exact(HashMap::new())
        }),
    })
}

fn shared_exact(scan: &KeyScan<'_>) -> Result<Shared> {
    shared(scan, false)
}

/// Runs the pass over every task still to write; `Err(suspect)`: a hashed key seen twice.
async fn run(
    shared: &Arc<Shared>,
    scan: &KeyScan<'_>,
) -> Result<std::result::Result<u64, Suspect>, ScanFailure> {
    // Owned tasks and a JoinSet: no closure borrowing across an await (which makes the
    // migrator's future fail `Send` for callers that spawn it), and dropping the set on an
    // error aborts the tasks still reading.
    let mut todo = scan
        .tasks
        .iter()
        .filter(|t| t.route == FileRoute::Rewrite && t.batches().end > scan.resume_from)
        .cloned()
        .collect::<Vec<_>>()
        .into_iter();
    let mut running = tokio::task::JoinSet::new();
    let mut rows = 0u64;
    // Tasks run in parallel, so the first stop to arrive need not be the earliest: once one
    // stops, no task is started and the running ones finish, and the stop at the lowest batch
    // is reported — the same one whatever the timing.
    let mut stops: Vec<Stop> = Vec::new();
    loop {
        while stops.is_empty() && running.len() < scan.workers.max(1) {
            let Some(task) = todo.next() else { break };
            let shared = Arc::clone(shared);
            running.spawn(async move { scan_task(&shared, &task, None).await });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let joined = joined.map_err(|join| {
            MigrationError::InvalidInput(format!("the upsert key pre-pass failed: {join}"))
        })?;
        match joined {
            Ok(scanned) => rows += scanned.rows,
            Err(stop) => stops.push(stop),
        }
    }
    let at = |s: &Stop| match s {
        Stop::Failed(f) => f.batch.unwrap_or(0),
        Stop::Suspect(s) => s.batches.0.max(s.batches.1),
    };
    match stops.into_iter().min_by_key(at) {
        None => Ok(Ok(rows)),
        Some(Stop::Failed(f)) => Err(f),
        Some(Stop::Suspect(s)) => Ok(Err(s)),
    }
}

/// Logs the pass and keeps what the batches need (`last`).
fn finish(
    shared: &Shared,
    scan: &KeyScan<'_>,
    rows: u64,
    started: std::time::Instant,
) -> Result<LastBatches> {
    let seen = std::mem::replace(
        &mut *shared.seen.lock().map_err(|_| {
            MigrationError::InvalidInput("internal: a key pre-pass task panicked".into())
        })?,
        Seen::Exact(HashMap::new()),
    );
    tracing::info!(
        rows,
        distinct_keys = seen.len(),
        approx_mib = seen.approx_bytes() / (1 << 20),
        secs = started.elapsed().as_secs_f64(),
        on_duplicate_keys = scan.rule.as_str(),
        key_columns = %scan.keys.join(", "),
        "upsert key pre-pass (key columns and the filter's read): each key's last batch"
    );
    let last = match seen {
        Seen::Exact(m) if scan.rule == OnDuplicateKeys::Last => m,
        _ => HashMap::new(),
    };
    Ok(LastBatches {
        encoder: Arc::new(KeyEncoder::new(shared.types.clone())?),
        keys: scan.keys.to_vec(),
        last,
    })
}

/// Whether the suspect key really occurs twice: its two batches are read again and their
/// rows' encoded keys compared. `Some`: the refusal.
async fn confirm(
    shared: &Arc<Shared>,
    scan: &KeyScan<'_>,
    suspect: &Suspect,
) -> Result<Option<ScanFailure>, ScanFailure> {
    let (a, b) = (
        suspect.batches.0.min(suspect.batches.1),
        suspect.batches.0.max(suspect.batches.1),
    );
    let mut found: Vec<(u64, Vec<ArrayRef>, usize)> = Vec::new();
    for task in scan
        .tasks
        .iter()
        .filter(|t| t.batches().contains(&a) || t.batches().contains(&b))
    {
        let look = Look {
            key: &suspect.key,
            batches: (a, b),
        };
        match scan_task(shared, task, Some(&look)).await {
            Ok(scanned) => found.extend(scanned.matches),
            Err(Stop::Failed(f)) => return Err(f),
            Err(Stop::Suspect(_)) => {}
        }
    }
    let in_a = found.iter().filter(|(i, _, _)| *i == a).count();
    let in_b = found.iter().filter(|(i, _, _)| *i == b).count();
    let (first, second) = if a != b && in_a > 0 && in_b > 0 {
        (a, b)
    } else if in_a > 1 {
        (a, a)
    } else if in_b > 1 {
        (b, b)
    } else {
        return Ok(None);
    };
    let Some((_, cols, row)) = found.iter().find(|(i, _, _)| *i == second) else {
        return Ok(None);
    };
    Ok(Some(ScanFailure {
        batch: Some(second),
        error: Box::new(repeated_key(cols, *row, first, second, shared.batch_rows)),
    }))
}

/// A confirmation read: the rows of `batches` whose encoded key is `key`.
struct Look<'a> {
    key: &'a [u8],
    batches: (u64, u64),
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

/// One task's scan: the rows read and, for a confirmation read, the rows holding its key
/// (batch, the key's columns, the row in them).
struct Scanned {
    rows: u64,
    matches: Vec<(u64, Vec<ArrayRef>, usize)>,
}

fn fail(batch: u64, error: impl Into<MigrationError>) -> Stop {
    Stop::Failed(ScanFailure {
        batch: Some(batch),
        error: Box::new(error.into()),
    })
}

/// One task's rows, numbered as `worker::cut_batches` numbers them: row `n` of the task is in
/// batch `first_batch + n / batch_rows`. With `look`, only the rows of its batches holding
/// its key are collected and nothing is recorded.
async fn scan_task(
    shared: &Shared,
    task: &MigrationTask,
    look: Option<&Look<'_>>,
) -> Result<Scanned, Stop> {
    let files = task
        .files
        .iter()
        .map(|path| {
            shared
                .by_path
                .get(&shared.read, path)
                .cloned()
                .ok_or_else(|| {
                    MigrationError::InvalidInput(format!(
                        "task {} reads {path}, which the source snapshot no longer plans; \
                         re-plan the migration",
                        task.id
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()
        .map_err(ScanFailure::from)?;
    let mut stream = shared
        .read
        .with_files(files)
        .stream(&shared.source, shared.read_batch_size)
        .map_err(ScanFailure::from)?;
    let batch_rows = shared.batch_rows;
    let end = task.batches().end;
    let mut n = 0u64;
    let mut matches = Vec::new();
    while let Some(batch) = stream.next().await {
        // A read failure belongs to the batch of the next row.
        let batch = batch.map_err(|e| fail(task.first_batch + n / batch_rows, e))?;
        let len = batch.num_rows() as u64;
        if len == 0 {
            continue;
        }
        let first = n;
        n += len;
        let at = task.first_batch + first / batch_rows;
        let last_index = task.first_batch + (n - 1) / batch_rows;
        crate::execute::worker::within_task(task.id, last_index, end)
            .map_err(|e| fail(last_index.min(end), e))?;
        // Wholly before the resume point (or, confirming, outside the two batches): only
        // counted.
        if last_index < shared.resume_from {
            continue;
        }
        if let Some(look) = look
            && (last_index < look.batches.0 || at > look.batches.1)
        {
            continue;
        }
        let index_of = |i: usize| task.first_batch + (first + i as u64) / batch_rows;
        // The first row at or after the resume point.
        let start = (shared.resume_from.saturating_sub(task.first_batch) * batch_rows)
            .saturating_sub(first)
            .min(len) as usize;
        let projected = ops_reconcile::project_batch(&batch, &shared.plan)
            .map_err(|e| fail(index_of(start), e))?;
        let cols: Vec<ArrayRef> = shared
            .keys
            .iter()
            .map(|k| {
                projected.column_by_name(k).cloned().ok_or_else(|| {
                    fail(
                        at,
                        MigrationError::InvalidInput(format!(
                            "internal: the key pre-pass projected no column '{k}'"
                        )),
                    )
                })
            })
            .collect::<Result<_, Stop>>()?;
        // A NULL or NaN key is refused as every batch refuses it, naming its batch: here,
        // before anything is written.
        for (k, col) in shared.keys.iter().zip(&cols) {
            let row_of = |i: usize| ((first + i as u64) % batch_rows) as usize;
            if col.null_count() > 0
                && let Some(i) = (start..col.len()).find(|&i| col.is_null(i))
            {
                let place = format!("a null value in row {} of batch {}", row_of(i), index_of(i));
                return Err(fail(
                    index_of(i),
                    crate::commit::upsert::null_key(k, &place),
                ));
            }
            if let Some(i) = crate::commit::upsert::nan_row(col, start) {
                let place = format!("row {} of batch {}", row_of(i), index_of(i));
                return Err(fail(index_of(i), crate::commit::upsert::nan_key(k, &place)));
            }
        }
        let rows = shared.encoder.encode(&cols).map_err(|e| fail(at, e))?;
        if let Some(look) = look {
            for i in start..rows.num_rows() {
                let index = index_of(i);
                if (index == look.batches.0 || index == look.batches.1)
                    && rows.row(i).as_ref() == look.key
                {
                    matches.push((index, cols.iter().map(|c| c.slice(i, 1)).collect(), 0));
                }
            }
            continue;
        }
        let mut seen = shared.seen.lock().map_err(|_| {
            ScanFailure::from(MigrationError::InvalidInput(
                "internal: a key pre-pass task panicked".into(),
            ))
        })?;
        for i in start..rows.num_rows() {
            let index = index_of(i);
            let key = rows.row(i);
            match &mut *seen {
                Seen::Exact(map) => match map.get_mut(key.as_ref()) {
                    Some(at) if shared.rule == OnDuplicateKeys::Error => {
                        let (a, b) = (*at, index);
                        return Err(fail(a.max(b), repeated_key(&cols, i, a, b, batch_rows)));
                    }
                    Some(at) => *at = (*at).max(index),
                    None => {
                        map.insert(key.as_ref().into(), index);
                    }
                },
                Seen::Hashed(map) => {
                    let hash = XxHash3_128::oneshot(key.as_ref());
                    if let Some(&at) = map.get(&hash) {
                        return Err(Stop::Suspect(Suspect {
                            key: key.as_ref().into(),
                            batches: (at, index),
                        }));
                    }
                    map.insert(hash, index);
                }
            }
        }
    }
    Ok(Scanned { rows: n, matches })
}
