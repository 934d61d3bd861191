//! Upsert one chunk: copy-on-write, one commit, unchanged rows untouched.
//!
//! 1. A key held twice in the chunk: refused (`on_duplicate_keys error`, earlier chunks stay
//!    committed), or the last row of each key in the chunk's (the source's) order is kept
//!    (`last`) — and, with `last`, a row whose key a later chunk holds again is dropped
//!    ([`LastBatches`], the source's key pre-pass), so a key is written once, by the chunk
//!    holding its final row.
//! 2. Read the destination rows with the chunk's keys at the current snapshot `S` — the scan is
//!    pruned by a flat per-column predicate ([`KeySet::pruning_predicate`]: `IN` or range), then
//!    by the job's index of the destination's keys by file ([`DestKeys`]), the
//!    rows it reads are matched exactly by the chunk's [`KeySet`] (row-encoded keys in a hash
//!    table, one probe per row) — and classify every chunk row: new key → insert; same key and
//!    same values → unchanged (not written); same key, other values → update.
//! 3. One `OverwriteBuilder` commit: delete the updated keys' rows (copy-on-write,
//!    [`OverwriteBuilder::delete_keys`], in the files read that the index says may hold one),
//!    add the inserted and updated rows, validated from `S`
//!    with the chunk's keys as the conflict detection keys — a concurrent writer adding or
//!    removing a file that may hold one of them is a conflict, not a silent lost update (Java's
//!    `MergingSnapshotProducer` with the keys as its filter). Nothing to write → no commit.
//!
//! Nothing here builds a predicate per key: a predicate naming every key is an `OR` of `AND`s
//! as deep as the chunk is long, which overflowed the stack at 100,000 two-column keys.
//!
//! Keys: any primitive column — boolean, int, long, float, double, decimal, date, time,
//! timestamp(tz)(_ns), string, uuid, fixed, binary. A NULL key is refused, as the seed's
//! PyIceberg `Table.upsert` refuses it, and so is a NaN float key (it equals nothing, so its row
//! would be inserted again on every run); `-0.0` and `0.0` are one key. Rows are compared with
//! arrow's row format, map columns included ([`ops_core::rows`]).

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::keys::KeySet;
use ops_core::ops::overwrite::OverwriteBuilder;

use super::dest_keys::DestKeys;
use crate::plan::last_keys::LastBatches;
use crate::{MigrationError, OnDuplicateKeys, Result};

/// What one chunk's upsert did.
pub(crate) struct UpsertOutcome {
    pub table: Option<Table>,
    pub snapshot: Option<i64>,
    pub inserted: u64,
    pub updated: u64,
    /// Destination files the chunk read to match its keys.
    pub files_read: usize,
}

/// How a chunk treats the source's repeated keys.
pub(crate) struct Duplicates<'a> {
    pub rule: OnDuplicateKeys,
    /// With `last`: the chunk's index and each key's last chunk (the key pre-pass).
    pub last: Option<(u64, &'a LastBatches)>,
}

// The committer's state, passed piecewise: a struct would be built for this one call.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn upsert_chunk(
    handle: &CatalogHandle,
    ident: &TableIdent,
    dest: &Table,
    keys: &[String],
    duplicates: Duplicates<'_>,
    batches: &[RecordBatch],
    index: &mut DestKeys,
    properties: HashMap<String, String>,
    before_write: impl AsyncFnOnce() -> Result<()>,
) -> Result<UpsertOutcome> {
    let target = ops_core::write::table_arrow_schema(dest)?;
    let conformed = batches
        .iter()
        .map(|b| ops_core::write::conform(b, &target))
        .collect::<ops_core::Result<Vec<_>>>()?;
    let batch = arrow_select::concat::concat_batches(&target, &conformed)?;
    let schema = dest.metadata().current_schema();
    let mut key_idx = Vec::with_capacity(keys.len());
    for k in keys {
        let i = target.index_of(k).map_err(|_| {
            MigrationError::InvalidInput(format!("upsert key '{k}' is not a destination column"))
        })?;
        if schema
            .field_by_name(k)
            .and_then(|f| f.field_type.as_primitive_type())
            .is_none()
        {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key '{k}' is not a primitive column of the destination; keys must be \
                 primitive columns"
            )));
        }
        let col = batch.column(i);
        // As the seed's PyIceberg `Table.upsert` (which fails on a None key literal): a NULL key
        // matches no row, so it is refused rather than guessed at.
        if col.null_count() > 0 {
            let what = format!("{} null value(s) in this batch", col.null_count());
            return Err(null_key(k, &what));
        }
        if let Some(row) = nan_row(col, 0) {
            return Err(nan_key(k, &format!("row {row} of this batch")));
        }
        key_idx.push(i);
    }
    let key_cols = |b: &RecordBatch| -> Vec<ArrayRef> {
        key_idx.iter().map(|&i| b.column(i).clone()).collect()
    };
    // A key that a later batch holds again is that batch's to write: its row here is dropped,
    // so no snapshot shows a value of the key other than its old one or the source's last.
    let batch = match duplicates.last {
        Some((index, last)) => {
            let keep = last.held_last(index, &batch)?;
            if keep.true_count() == batch.num_rows() {
                batch
            } else {
                tracing::debug!(
                    batch = index,
                    superseded = batch.num_rows() - keep.true_count(),
                    "rows whose key a later batch holds again left out"
                );
                arrow_select::filter::filter_record_batch(&batch, &keep)?
            }
        }
        None => batch,
    };
    if batch.num_rows() == 0 {
        return Ok(UpsertOutcome {
            table: None,
            snapshot: None,
            inserted: 0,
            updated: 0,
            files_read: 0,
        });
    }
    let mut chunk_keys = KeySet::new(keys.iter().cloned(), key_cols(&batch))?;
    let mut positions = chunk_keys.positions(&key_cols(&batch))?;
    let mut batch = batch;
    if chunk_keys.len() < batch.num_rows() {
        let keep = distinct_rows(
            &positions,
            chunk_keys.len(),
            duplicates.rule,
            &batch,
            &key_idx,
        )?;
        batch = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(keep))?;
        // Re-indexed so that a key's position is its row in the deduplicated chunk.
        chunk_keys = KeySet::new(keys.iter().cloned(), key_cols(&batch))?;
        positions = chunk_keys.positions(&key_cols(&batch))?;
    }

    let since = dest.metadata().current_snapshot_id();
    // Each row's key hash, for the index of the destination's keys by file.
    let hashes = index.row_hashes(&chunk_keys.field_ids(schema)?, &key_cols(&batch))?;
    // The destination files read (their tasks): those that may hold a chunk key.
    let mut read_files: Vec<iceberg::scan::FileScanTask> = Vec::new();
    // The encoded destination row of each chunk key found there, by key position.
    let mut existing: Vec<Option<Box<[u8]>>> = vec![None; chunk_keys.len()];
    let planned = match since {
        Some(_) => {
            let pruning = chunk_keys.pruning_predicate(dest);
            ops_core::scan::plan_scan(dest, since, Some(pruning)).await?
        }
        None => None,
    };
    if let Some(mut scan) = planned {
        let converter = ops_core::rows::converter(target.fields().iter().map(|f| f.data_type()))?;
        index.prune(&mut scan, &sorted(hashes.clone())).await?;
        read_files = scan.files().cloned().collect();
        let mut stream = scan.read()?;
        let mut twice = HeldTwice::default();
        while let Some(b) = stream.next().await {
            let b = ops_core::write::conform(&b?, &target)?;
            let found = chunk_keys.positions(&key_cols(&b))?;
            let mask: BooleanArray = found.iter().map(|p| Some(p.is_some())).collect();
            if mask.true_count() == 0 {
                continue;
            }
            let hits = arrow_select::filter::filter_record_batch(&b, &mask)?;
            let rows = ops_core::rows::convert(&converter, hits.columns())?;
            for (r, pos) in found.into_iter().flatten().enumerate() {
                let slot = &mut existing[pos as usize];
                if slot.is_some() {
                    // Every such key of the chunk is named at once: one re-run per key would
                    // re-read the destination each time.
                    twice.add(pos, keys, &key_cols(&hits), r);
                    continue;
                }
                *slot = Some(rows.row(r).as_ref().into());
            }
        }
        if let Some(e) = twice.refusal(keys, ident) {
            return Err(e);
        }
    }
    let mut write: Vec<u32> = Vec::new();
    let mut updated: Vec<u32> = Vec::new();
    let mut inserted = 0u64;
    let mut chunk_rows = None;
    for (i, pos) in positions.iter().enumerate() {
        let Some(pos) = pos else {
            return Err(MigrationError::InvalidInput(format!(
                "upsert row {i} of this batch lost its key while being matched; please report"
            )));
        };
        match &existing[*pos as usize] {
            None => {
                inserted += 1;
                write.push(i as u32);
            }
            Some(stored) => {
                // Encoded only when some key exists in the destination.
                if chunk_rows.is_none() {
                    let converter =
                        ops_core::rows::converter(target.fields().iter().map(|f| f.data_type()))?;
                    chunk_rows = Some(ops_core::rows::convert(&converter, batch.columns())?);
                }
                let same = chunk_rows
                    .as_ref()
                    .is_some_and(|rows| rows.row(i).as_ref() == &**stored);
                if !same {
                    updated.push(i as u32);
                    write.push(i as u32);
                }
            }
        }
    }
    if write.is_empty() {
        return Ok(UpsertOutcome {
            table: None,
            snapshot: None,
            inserted: 0,
            updated: 0,
            files_read: distinct_paths(&read_files),
        });
    }
    let files_read = distinct_paths(&read_files);
    let rows = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(write))?;
    before_write().await?;
    let written = ops_core::write::write_files(dest, futures::stream::iter([Ok(rows)])).await?;
    let mut builder = OverwriteBuilder::new(handle, ident.clone())
        .add_written(written)
        .validate_from_snapshot(since)
        .conflict_detection_keys(std::sync::Arc::new(chunk_keys))
        .with_properties(properties);
    let updated_count = updated.len() as u64;
    let mut rewritten = HashSet::new();
    if !updated.is_empty() {
        let take = UInt32Array::from(updated);
        let cols = key_cols(&batch)
            .iter()
            .map(|c| arrow_select::take::take(c.as_ref(), &take, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        // Only the files read that may hold an updated key: the others hold none of them.
        let updated_hashes = sorted(take.values().iter().map(|&i| hashes[i as usize]).collect());
        let within: HashSet<String> = read_files
            .iter()
            .filter(|t| index.may_hold(t, &updated_hashes))
            .map(|t| t.data_file_path.clone())
            .collect();
        builder = builder
            .delete_keys(std::sync::Arc::new(KeySet::new(
                keys.iter().cloned(),
                cols,
            )?))
            .delete_keys_within(within.clone());
        // The files rewritten leave the table: their entries would only hold memory (one
        // that stays is indexed again when a scan next names it).
        rewritten = within;
    }
    let (table, metrics) = builder.await?;
    index.forget(&rewritten);
    Ok(UpsertOutcome {
        table: Some(table),
        snapshot: Some(metrics.snapshot_id),
        inserted,
        updated: updated_count,
        files_read,
    })
}

/// How many files `tasks` read (a file listed twice has two tasks).
fn distinct_paths(tasks: &[iceberg::scan::FileScanTask]) -> usize {
    tasks
        .iter()
        .map(|t| t.data_file_path.as_str())
        .collect::<HashSet<_>>()
        .len()
}

/// `hashes` sorted, each once.
fn sorted(mut hashes: Vec<u64>) -> Vec<u64> {
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// The rows of a chunk to keep, one per key, in chunk order: with `Error`, a key held twice is
/// refused; with `Last`, each key's last row is kept. `positions`: each row's key position
/// among `distinct` keys.
fn distinct_rows(
    positions: &[Option<u32>],
    distinct: usize,
    duplicates: OnDuplicateKeys,
    batch: &RecordBatch,
    key_idx: &[usize],
) -> Result<Vec<u32>> {
    let mut last: Vec<Option<u32>> = vec![None; distinct];
    for (i, pos) in positions.iter().enumerate() {
        let Some(pos) = pos else { continue };
        let slot = &mut last[*pos as usize];
        if let (OnDuplicateKeys::Error, Some(j)) = (duplicates, *slot) {
            let cols: Vec<ArrayRef> = key_idx.iter().map(|&k| batch.column(k).clone()).collect();
            return Err(MigrationError::InvalidInput(format!(
                "upsert batch holds key ({}) twice (rows {j} and {i} of the batch); deduplicate \
                 the source on the upsert keys, or keep the last row of each key with \
                 --on-duplicate-keys last",
                describe_key(&cols, i)
            )));
        }
        *slot = Some(i as u32);
    }
    let mut keep: Vec<u32> = last.into_iter().flatten().collect();
    keep.sort_unstable();
    Ok(keep)
}

/// The chunk's keys the destination holds in more than one row. Refused, as PyIceberg 0.12's
/// `Table.upsert` refuses it ("Target table has duplicate rows, aborting upsert"): which of
/// the stored rows the source's row replaces, and whether an equal one makes the key
/// unchanged, would be a guess. PyIceberg checks one Arrow batch at a time, so it refuses
/// duplicates read together and, for duplicates in two files, keeps them, collapses them or
/// writes the source's row twice depending on which files differ; here the refusal does not
/// depend on the layout. `on_duplicate_keys` is about the source's duplicates, not these.
/// The refusal names every such key of the chunk (the first [`HeldTwice::SHOWN`] by value) and
/// the delete that resolves them.
struct HeldTwice {
    /// Chunk key positions seen twice (a key held thrice is one key).
    positions: HashSet<u32>,
    /// The first keys' values, as `(a, b)`, and their SQL conditions.
    shown: Vec<(String, String)>,
    /// Whether a filter can match every key column (not binary or fixed).
    comparable: bool,
}

impl Default for HeldTwice {
    fn default() -> Self {
        Self {
            positions: HashSet::new(),
            shown: Vec::new(),
            comparable: true,
        }
    }
}

/// `s` inside a shell's double quotes: `"`, `$`, `` ` `` and `\` escaped.
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '"' | '$' | '`' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl HeldTwice {
    const SHOWN: usize = 10;

    fn add(&mut self, pos: u32, keys: &[String], cols: &[ArrayRef], row: usize) {
        if !self.positions.insert(pos) || self.shown.len() >= Self::SHOWN {
            return;
        }
        // 16 bytes are taken for a uuid, which a filter matches by its text (a `fixed[16]` key,
        // rarer, then gets a delete the filter refuses, naming why).
        self.comparable &= cols.iter().all(|c| {
            !matches!(
                c.data_type(),
                arrow_schema::DataType::Binary
                    | arrow_schema::DataType::LargeBinary
                    | arrow_schema::DataType::BinaryView
            ) && !matches!(c.data_type(), arrow_schema::DataType::FixedSizeBinary(n) if *n != 16)
        });
        let condition = keys
            .iter()
            .zip(cols)
            .map(|(k, c)| {
                let options = FormatOptions::default();
                let literal = ArrayFormatter::try_new(c.as_ref(), &options)
                    .map(|f| f.value(row).to_string())
                    .unwrap_or_default();
                if c.data_type().is_numeric()
                    || matches!(c.data_type(), arrow_schema::DataType::Boolean)
                {
                    format!("{k} = {literal}")
                } else {
                    format!("{k} = '{}'", literal.replace('\'', "''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" AND ");
        self.shown.push((describe_key(cols, row), condition));
    }

    fn refusal(&self, keys: &[String], ident: &TableIdent) -> Option<MigrationError> {
        let count = self.positions.len();
        if count == 0 {
            return None;
        }
        let values = self
            .shown
            .iter()
            .map(|(v, _)| format!("({v})"))
            .collect::<Vec<_>>()
            .join(", ");
        let more = match count - self.shown.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let (subject, verb, them) = if count == 1 {
            ("key", "is", "the key's rows")
        } else {
            ("keys", "are each", "those keys' rows")
        };
        // A filter cannot compare binary or fixed values yet: no delete to suggest then.
        let fix = if self.comparable {
            let condition = match self.shown.as_slice() {
                [(_, c)] => c.clone(),
                shown => shown
                    .iter()
                    .map(|(_, c)| format!("({c})"))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            };
            format!(
                "iceberg-ops table delete {ident} --where \"{}\"{}",
                double_quoted(&condition),
                if more.is_empty() {
                    ""
                } else {
                    ", then the rest"
                }
            )
        } else {
            "a filter cannot match binary keys yet: delete the extra rows with another tool"
                .to_string()
        };
        Some(MigrationError::InvalidInput(format!(
            "upsert {subject} ({}) = {values}{more} {verb} held by more than one row of the \
             destination {ident}, so which row the source's replaces is ambiguous (PyIceberg's \
             upsert refuses it too); the chunk was not committed (earlier chunks stay \
             committed). Remove {them} ({fix}) and re-run: the upsert then inserts the source's \
             rows",
            keys.join(", "),
        )))
    }
}

/// The refusal of a NULL key (`what`: how many, where). As the seed's PyIceberg
/// `Table.upsert` (which fails on a None key literal): a NULL key matches no row, so it is
/// refused rather than guessed at. Said by the chunk and, before anything is written, by the
/// key pre-pass.
pub(crate) fn null_key(k: &str, what: &str) -> MigrationError {
    MigrationError::InvalidInput(format!(
        "upsert key column '{k}' holds {what}; upsert keys must be set (a NULL key matches no \
         row) — filter them out (row_filter \"{k} IS NOT NULL\") or migrate those rows with \
         write_mode append"
    ))
}

/// The refusal of a NaN key (`place`: its row and batch). NaN equals nothing, itself
/// included, so the row would be inserted again on every run, and a NaN repeated is neither
/// one key nor two: refused wherever it occurs, once or more, by the chunk and, before
/// anything is written, by the key pre-pass.
pub(crate) fn nan_key(k: &str, place: &str) -> MigrationError {
    MigrationError::InvalidInput(format!(
        "upsert key '{k}' is NaN in {place}; a NaN key equals no row (not even another NaN), \
         so it would be inserted again on every run — clean the key or filter those rows out"
    ))
}

/// The first row of `col` at or after `from` holding NaN, if it is a float column.
pub(crate) fn nan_row(col: &ArrayRef, from: usize) -> Option<usize> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    match col.data_type() {
        arrow_schema::DataType::Float32 => col
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .skip(from)
            .position(|v| v.is_nan())
            .map(|i| i + from),
        arrow_schema::DataType::Float64 => col
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .skip(from)
            .position(|v| v.is_nan())
            .map(|i| i + from),
        _ => None,
    }
}

pub(crate) fn describe_key(cols: &[ArrayRef], row: usize) -> String {
    let options = FormatOptions::default().with_null("null");
    cols.iter()
        .map(|c| {
            ArrayFormatter::try_new(c.as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{BinaryArray, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// The refusal of keys held twice: one key or several, a delete quoted for the shell's
    /// double quotes, none suggested for a binary key (a filter cannot match one yet), a key
    /// held thrice counted once, and the keys past the first ten counted.
    #[test]
    fn keys_held_twice_are_named_with_a_delete_the_shell_takes() {
        let ident = TableIdent::from_strs(["d", "t"]).unwrap_or_else(|e| panic!("{e}"));
        let keys = vec!["k".to_string()];
        let text = |t: &HeldTwice| {
            t.refusal(&keys, &ident)
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["a\"$`b", "c"]));
        let mut one = HeldTwice::default();
        one.add(0, &keys, std::slice::from_ref(&strings), 0);
        one.add(0, &keys, std::slice::from_ref(&strings), 0);
        let e = text(&one);
        assert!(
            e.contains("upsert key (k) = (a\"$`b) is held by more than one row"),
            "{e}"
        );
        assert!(
            e.contains(r#"table delete d.t --where "k = 'a\"\$\`b'")"#),
            "{e}"
        );
        let ints: ArrayRef = Arc::new(Int64Array::from((0..12).collect::<Vec<i64>>()));
        let mut many = HeldTwice::default();
        for row in 0..12 {
            many.add(row as u32, &keys, std::slice::from_ref(&ints), row);
        }
        let e = text(&many);
        assert!(e.contains("(9) and 2 more are each held"), "{e}");
        assert!(
            e.contains("(k = 0) OR (k = 1)") && e.contains(", then the rest"),
            "{e}"
        );
        let bytes: ArrayRef = Arc::new(BinaryArray::from(vec![b"x".as_ref()]));
        let mut binary = HeldTwice::default();
        binary.add(0, &keys, std::slice::from_ref(&bytes), 0);
        let e = text(&binary);
        assert!(
            e.contains("a filter cannot match binary keys yet") && !e.contains("--where"),
            "{e}"
        );
        assert!(HeldTwice::default().refusal(&keys, &ident).is_none());
    }

    fn chunk() -> (RecordBatch, Vec<Option<u32>>, usize) {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Int64, false),
                Field::new("t", DataType::Utf8, false),
                Field::new("v", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 1, 3, 2, 1])),
                Arc::new(StringArray::from(vec!["a", "a", "a", "a", "b", "a"])),
                Arc::new(StringArray::from(vec!["r0", "r1", "r2", "r3", "r4", "r5"])),
            ],
        )
        .unwrap();
        let keys = KeySet::new(
            ["k", "t"],
            vec![batch.column(0).clone(), batch.column(1).clone()],
        )
        .unwrap();
        let positions = keys
            .positions(&[batch.column(0).clone(), batch.column(1).clone()])
            .unwrap();
        (batch, positions, keys.len())
    }

    #[test]
    fn the_last_row_of_each_key_is_kept_in_chunk_order() {
        let (batch, positions, distinct) = chunk();
        assert_eq!(distinct, 4);
        let keep = distinct_rows(&positions, distinct, OnDuplicateKeys::Last, &batch, &[0, 1]);
        // (1,a): rows 0, 2, 5 → 5; (2,a): 1; (3,a): 3; (2,b): 4.
        assert_eq!(keep.unwrap(), vec![1, 3, 4, 5]);
    }

    /// Rows `(id, v)` in the table's Arrow schema.
    fn rows(table: &Table, ids: &[i64], v: &str) -> RecordBatch {
        let target = ops_core::write::table_arrow_schema(table).unwrap();
        RecordBatch::try_new(
            target,
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(vec![v; ids.len()])),
            ],
        )
        .unwrap()
    }

    /// `ns.t(id long required, v string)` in a SQLite catalog under `dir`.
    async fn id_v_table(dir: &std::path::Path) -> (ops_core::CatalogHandle, Table) {
        use iceberg::spec::{NestedField, PrimitiveType, Type};
        crate::testing::new_table(
            dir,
            "t",
            vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
                NestedField::optional(2, "v", Type::Primitive(PrimitiveType::String)),
            ],
        )
        .await
        .unwrap()
    }

    /// `batch` appended to `table` as one file; the table after it.
    async fn appended(
        handle: &ops_core::CatalogHandle,
        table: &Table,
        batch: RecordBatch,
    ) -> Table {
        ops_core::append::append(
            handle,
            table,
            futures::stream::iter([Ok(batch)]),
            HashMap::new(),
        )
        .await
        .unwrap();
        handle
            .catalog()
            .load_table(table.identifier())
            .await
            .unwrap()
    }

    async fn chunk_of(
        handle: &ops_core::CatalogHandle,
        table: &Table,
        index: &mut DestKeys,
        batch: RecordBatch,
    ) -> UpsertOutcome {
        upsert_chunk(
            handle,
            table.identifier(),
            table,
            &["id".to_string()],
            Duplicates {
                rule: OnDuplicateKeys::Error,
                last: None,
            },
            &[batch],
            index,
            HashMap::new(),
            async || Ok(()),
        )
        .await
        .unwrap()
    }

    /// Three files whose `id` bounds all overlap (ids ≡ 0, 1, 2 mod 3): their statistics allow
    /// every chunk's keys, so without the index every chunk read all of them, and its delete
    /// read and rewrote each one. With it a chunk reads only the files holding one of its keys
    /// — the job's own rewrites among them, indexed when first named — and the rows are right.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_chunk_reads_only_the_files_that_hold_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        let (handle, mut table) = id_v_table(dir.path()).await;
        for m in 0..3 {
            let ids: Vec<i64> = (0..30).filter(|i| i % 3 == m).collect();
            let batch = rows(&table, &ids, "old");
            table = appended(&handle, &table, batch).await;
        }
        let mut index = DestKeys::default();
        // Keys of the second file only (and a new one): one file read of three.
        let first = chunk_of(
            &handle,
            &table,
            &mut index,
            rows(&table, &[1, 4, 28, 100], "new"),
        )
        .await;
        assert_eq!((first.files_read, first.inserted, first.updated), (1, 1, 3));
        let table = first.table.unwrap();
        // The second file's rewrite (never indexed yet) and the third file: two of four, the
        // first chunk's new file left out though its bounds (1..100) allow 7 and 8.
        let second = chunk_of(&handle, &table, &mut index, rows(&table, &[7, 8], "newer")).await;
        assert_eq!(
            (second.files_read, second.inserted, second.updated),
            (2, 0, 2)
        );
        let table = second.table.unwrap();
        // A chunk whose keys are all stored unchanged reads their file and commits nothing.
        let same = chunk_of(&handle, &table, &mut index, rows(&table, &[0, 3], "old")).await;
        assert_eq!((same.files_read, same.snapshot), (1, None));

        let mut got: Vec<(i64, String)> = Vec::new();
        let mut stream = ops_core::scan::scan(&table, None).await.unwrap();
        while let Some(b) = stream.next().await {
            let b = b.unwrap();
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let vs = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            got.extend((0..b.num_rows()).map(|i| (ids.value(i), vs.value(i).to_string())));
        }
        got.sort();
        let mut want: Vec<(i64, String)> = (0..30).map(|i| (i, "old".to_string())).collect();
        want.push((100, "old".into()));
        for (id, v) in [
            (1, "new"),
            (4, "new"),
            (28, "new"),
            (100, "new"),
            (7, "newer"),
            (8, "newer"),
        ] {
            want.retain(|(i, _)| *i != id);
            want.push((id, v.to_string()));
        }
        want.retain(|(i, v)| !(*i == 100 && v == "old"));
        want.sort();
        assert_eq!(got, want);
    }

    /// An index of at most 15 hashes, three files of 10, 12 and 14 rows whose bounds all
    /// overlap: the 10-row file is indexed (a file fits by its row count, decided before it is
    /// read), the other two do not fit and are read whole, as without the index; the rows
    /// come out right and the index never holds more than its limit.
    #[tokio::test(flavor = "multi_thread")]
    async fn files_past_the_index_limit_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (handle, mut table) = id_v_table(dir.path()).await;
        for (m, n) in [(0, 10), (1, 12), (2, 14)] {
            let ids: Vec<i64> = (0..n).map(|i| 3 * i + m).collect();
            table = appended(&handle, &table, rows(&table, &ids, "old")).await;
        }
        let mut index = DestKeys::with_limit(15);
        // Key 2 is in the 14-row file: the 10-row file is indexed and left out.
        let first = chunk_of(&handle, &table, &mut index, rows(&table, &[2], "new")).await;
        assert_eq!((first.files_read, first.updated), (2, 1));
        assert_eq!(index.held(), 10);
        let table = first.table.unwrap();
        // Key 6 is in the indexed file: read, with the two that still do not fit (the 12-row
        // file and the 14-row file's 13-row rewrite), weighed again.
        let second = chunk_of(&handle, &table, &mut index, rows(&table, &[6], "new")).await;
        assert_eq!((second.files_read, second.updated), (3, 1));
        // The indexed file was rewritten by that commit: its entry left with it.
        assert_eq!(index.held(), 0);
        let table = second.table.unwrap();
        let batches: Vec<RecordBatch> =
            futures::TryStreamExt::try_collect(ops_core::scan::scan(&table, None).await.unwrap())
                .await
                .unwrap();
        let new: usize = batches
            .iter()
            .map(|b| {
                let v = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
                (0..b.num_rows()).filter(|&i| v.value(i) == "new").count()
            })
            .sum();
        let all: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!((all, new), (36, 2));
    }

    /// The index knows its hashes by the key's field ids: after `id` is dropped and `x`
    /// renamed `id` between two chunks (no snapshot: a metadata change), a file indexed by the
    /// old `id`'s values must not be pruned for the new one's. Without that, key 8 — stored in
    /// `x` of a file the first chunk indexed — was not found and was inserted a second time.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_key_renamed_onto_another_column_between_chunks_is_found() {
        use iceberg::spec::{NestedField, PrimitiveType, Type};
        let long =
            |id, name: &str| NestedField::optional(id, name, Type::Primitive(PrimitiveType::Long));
        let dir = tempfile::tempdir().unwrap();
        let (handle, table) = crate::testing::new_table(
            dir.path(),
            "t",
            vec![
                long(1, "id"),
                long(2, "x"),
                NestedField::optional(3, "v", Type::Primitive(PrimitiveType::String)),
            ],
        )
        .await
        .unwrap();
        let batch = |table: &Table, cols: Vec<ArrayRef>| {
            RecordBatch::try_new(ops_core::write::table_arrow_schema(table).unwrap(), cols).unwrap()
        };
        let ids = |v: Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let strs = |v: Vec<&str>| -> ArrayRef { Arc::new(StringArray::from(v)) };
        // One file: ids 0 and 5 (bounds that allow key 1), x 8 and 9.
        let stored = batch(
            &table,
            vec![ids(vec![0, 5]), ids(vec![8, 9]), strs(vec!["a", "b"])],
        );
        let table = appended(&handle, &table, stored).await;
        let mut index = DestKeys::default();
        let first = chunk_of(
            &handle,
            &table,
            &mut index,
            batch(&table, vec![ids(vec![1]), ids(vec![1]), strs(vec!["new"])]),
        )
        .await;
        // The stored file was named and indexed (its ids hold no 1), then left out.
        assert_eq!((first.files_read, first.inserted), (0, 1));
        let (table, _) = ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(
            &handle,
            table.identifier().clone(),
        )
        .drop_column("id")
        .rename_column("x", "id")
        .await
        .unwrap();
        let second = chunk_of(
            &handle,
            &table,
            &mut index,
            batch(&table, vec![ids(vec![8]), strs(vec!["z"])]),
        )
        .await;
        assert_eq!(
            (second.files_read, second.inserted, second.updated),
            (1, 0, 1)
        );
    }

    #[test]
    fn a_repeated_key_is_an_error_naming_it_and_its_rows() {
        let (batch, positions, distinct) = chunk();
        let err = distinct_rows(
            &positions,
            distinct,
            OnDuplicateKeys::Error,
            &batch,
            &[0, 1],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("key (1, a) twice (rows 0 and 2"), "{err}");
        assert!(err.contains("--on-duplicate-keys last"), "{err}");
    }
}
