//! Which destination files may hold which upsert keys, so that a chunk reads and rewrites only
//! those: an index of the destination's keys by file, built as the job's scans name the files.
//!
//! A chunk's keys prune the destination's files by their statistics first
//! ([`ops_core::keys::KeySet::pruning_predicate`]). When the key does not follow the table's
//! layout — an `id` in a table partitioned by `region` — every file's bounds overlap every
//! chunk's keys, so each chunk read every file, and its copy-on-write delete read and wrote
//! every one of them again only to discard the rewrites of the files that held none of its
//! keys (issue 32's single-key upsert, 2.1× the time of a key with `region`).
//!
//! Here each file a chunk's scan names is indexed once: its key columns are read as the file
//! stores them, encoded as the chunk's keys are ([`KeyEncoder`]: arrow's row format) and kept
//! as a sorted list of 64-bit hashes. A file whose list shares no hash with the chunk's keys
//! cannot hold one of them: it is not read, and the delete does not consider it
//! ([`ops_core::ops::overwrite::OverwriteBuilder::delete_keys_within`]). Equal keys hash
//! alike, so a collision costs a needless read, never a missed key.
//!
//! - No delete file is applied to the index's read: deletes only take rows away, so what a file
//!   stored is a superset of what it holds under any deletes it has now or gains later. A data
//!   file is known by its path, size, row count and partition tuple (a path reused for a file
//!   of another size or row count is read again; identity-partition values come from the
//!   tuple), and the index by the key columns' field ids and types: a chunk whose key names
//!   another column (a rename between chunks) starts it afresh. Files written since (this
//!   job's or another writer's) are indexed when a scan first names them.
//! - Memory: 8 bytes per indexed row, at most [`MAX_HASHES`] (32 MiB); a file is indexed only
//!   if its row count fits, decided before it is read. The files a chunk's commit rewrote
//!   leave the index with it. When the files a chunk names would pass the limit, the entries of
//!   files it does not name are dropped first; a file that still does not fit is read whole by
//!   the chunk, as before the index, and weighed again by the next.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use iceberg::scan::FileScanTask;
use iceberg::spec::Struct;
use ops_core::keys::KeyEncoder;
use ops_core::scan::PlannedScan;
use twox_hash::XxHash3_128;

use crate::Result;

/// At most this many hashes are held (8 bytes each).
pub(crate) const MAX_HASHES: usize = 4 << 20;

/// Files indexed at once: each is a read of its key columns.
const CONCURRENCY: usize = 4;

/// A file's path and its sorted, distinct key hashes.
type Indexed = (String, Box<[u64]>);

/// What the index knows a data file by, beside its path: its size and row count — a path
/// alone could name another file later (one removed and another registered at its path by
/// `add_files`; one of the very same size and row count would go unnoticed) — and the
/// partition its entry gives it, whose identity values the reader fills into the key columns
/// (a file listed twice, under two tuples, is indexed from the entry its scan names).
type Identity = (u64, Option<u64>, Option<i32>, Option<Struct>);

fn identity(task: &FileScanTask) -> Identity {
    (
        task.file_size_in_bytes,
        task.record_count,
        task.partition_spec.as_ref().map(|s| s.spec_id()),
        task.partition.clone(),
    )
}

/// The index (see the module docs).
pub(crate) struct DestKeys {
    /// The key columns' field ids and types, and their encoder: a chunk whose key names
    /// another column (a rename between chunks) or type starts the index afresh.
    key: Option<(Vec<i32>, Vec<DataType>, Arc<KeyEncoder>)>,
    /// Each indexed file's identity and distinct key hashes, sorted, by path.
    files: HashMap<String, (Identity, Box<[u64]>)>,
    /// Hashes held, all files together.
    held: usize,
    /// At most this many ([`MAX_HASHES`]; less in tests).
    limit: usize,
}

impl Default for DestKeys {
    fn default() -> Self {
        Self::with_limit(MAX_HASHES)
    }
}

impl DestKeys {
    /// An index holding at most `limit` hashes.
    pub(crate) fn with_limit(limit: usize) -> Self {
        Self {
            key: None,
            files: HashMap::new(),
            held: 0,
            limit,
        }
    }

    /// Each row's key hash, in row order, for the key columns `cols` (one array per key
    /// column, in the table's current types), which are the columns `ids` of the table's
    /// current schema.
    pub(crate) fn row_hashes(&mut self, ids: &[i32], cols: &[ArrayRef]) -> Result<Vec<u64>> {
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type().clone()).collect();
        let encoder = match &self.key {
            Some((i, t, e)) if i == ids && *t == types => e.clone(),
            _ => {
                // Hashes of other columns or of another encoding compare with nothing.
                *self = Self::with_limit(self.limit);
                let e = Arc::new(KeyEncoder::new(types.clone())?);
                self.key = Some((ids.to_vec(), types, e.clone()));
                e
            }
        };
        hash_rows(&encoder, cols)
    }

    /// Indexes every file `scan` names that is not yet indexed (reading the key columns of
    /// [`Self::row_hashes`]), then leaves out of `scan` the files that cannot hold one of
    /// `keys` (sorted, distinct hashes from [`Self::row_hashes`]).
    pub(crate) async fn prune(&mut self, scan: &mut PlannedScan, keys: &[u64]) -> Result<()> {
        let Some((ids, _, encoder)) = self.key.clone() else {
            return Ok(());
        };
        // Each named path with its identity; `None` for a path the scan lists under two
        // (sizes, counts or partitions that differ): which of them a read saw is unknown, so
        // it is not indexed.
        let mut named: HashMap<&str, Option<Identity>> = HashMap::new();
        for t in scan.files() {
            let id = identity(t);
            named
                .entry(t.data_file_path.as_str())
                .and_modify(|one| {
                    if one.as_ref() != Some(&id) {
                        *one = None;
                    }
                })
                .or_insert(Some(id));
        }
        // Files not indexed as they are named, each with the hashes it may bring (its row
        // count); one without a count, or with more rows than the index holds, never fits.
        let mut missing: Vec<(&str, &Identity, u64)> = named
            .iter()
            .filter_map(|(p, id)| id.as_ref().map(|id| (*p, id)))
            .filter(|(p, id)| !self.files.get(*p).is_some_and(|(i, _)| i == *id))
            .filter_map(|(p, id)| {
                id.1.filter(|&rows| rows <= self.limit as u64)
                    .map(|r| (p, id, r))
            })
            .collect();
        // Smallest first, so the most files fit.
        missing.sort_by_key(|(_, _, rows)| *rows);
        let wanted = missing
            .iter()
            .fold(0u64, |n, (_, _, rows)| n.saturating_add(*rows));
        if (self.held as u64).saturating_add(wanted) > self.limit as u64 {
            // Files this chunk does not name go first (those the job replaced among them).
            self.files.retain(|p, _| named.contains_key(p.as_str()));
            self.held = self.files.values().map(|(_, h)| h.len()).sum();
        }
        // Decided again by every chunk, from the row counts alone: a file that does not fit
        // now is read whole by this chunk, not for the index.
        let mut room = self.limit.saturating_sub(self.held) as u64;
        let mut chosen: HashMap<&str, Identity> = HashMap::new();
        for (path, id, rows) in missing {
            if rows <= room {
                room -= rows;
                chosen.insert(path, id.clone());
            }
        }
        let indexed_now = chosen.len();
        // Each read owns what it holds, boxed: a future borrowing the scan, or built by a
        // closure over the read's stream, is not provably `Send` to the compiler.
        let reads: Vec<BoxFuture<'static, Result<Indexed>>> = scan
            .read_columns(&ids, |t| chosen.contains_key(t.data_file_path.as_str()))?
            .into_iter()
            .map(|(path, mut batches)| {
                let encoder = encoder.clone();
                async move {
                    let mut hashes = Vec::new();
                    while let Some(batch) = batches.try_next().await? {
                        hashes.extend(hash_rows(&encoder, batch.columns())?);
                    }
                    hashes.sort_unstable();
                    hashes.dedup();
                    Ok((path, hashes.into_boxed_slice()))
                }
                .boxed()
            })
            .collect();
        let mut reads = futures::stream::iter(reads).buffer_unordered(CONCURRENCY);
        while let Some(read) = reads.next().await {
            let (path, hashes) = read?;
            if let Some(id) = chosen.get(path.as_str()) {
                self.held += hashes.len();
                if let Some((_, old)) = self.files.insert(path, (id.clone(), hashes)) {
                    self.held -= old.len();
                }
            }
        }
        let before = named.len();
        scan.retain_files(|t| self.may_hold(t, keys));
        tracing::debug!(
            files = before,
            may_hold = scan.files().count(),
            indexed_now,
            held = self.held,
            "destination files pruned by the key index"
        );
        Ok(())
    }

    /// Hashes held, all files together.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// Drops the entries of the files at `paths` (files the job's commit replaced).
    pub(crate) fn forget(&mut self, paths: &HashSet<String>) {
        for path in paths {
            if let Some((_, hashes)) = self.files.remove(path) {
                self.held -= hashes.len();
            }
        }
    }

    /// Whether the file of `task` may hold one of `keys` (sorted, distinct hashes): true for a
    /// file not indexed (or indexed as another file at its path).
    pub(crate) fn may_hold(&self, task: &FileScanTask, keys: &[u64]) -> bool {
        match self.files.get(&task.data_file_path) {
            Some((id, held)) if *id == identity(task) => intersect(held, keys),
            _ => true,
        }
    }
}

/// Each row's key hash: its encoded key's low 64 bits of XXH3-128. A NULL key (a file's rows
/// from before the column existed) encodes as arrow's null, which no chunk key does.
fn hash_rows(encoder: &KeyEncoder, cols: &[ArrayRef]) -> Result<Vec<u64>> {
    let rows = encoder.encode(cols)?;
    Ok((0..rows.num_rows())
        .map(|i| XxHash3_128::oneshot(rows.row(i).as_ref()) as u64)
        .collect())
}

/// Whether two sorted lists share a value: the shorter one's values searched in the longer.
fn intersect(a: &[u64], b: &[u64]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut rest = long;
    for v in short {
        match rest.binary_search(v) {
            Ok(_) => return true,
            Err(i) => rest = &rest[i..],
        }
        if rest.is_empty() {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_lists_intersect_only_on_a_shared_value() {
        assert!(intersect(&[1, 5, 9], &[2, 5]));
        assert!(!intersect(&[1, 5, 9], &[2, 6, 10, 12]));
        assert!(!intersect(&[], &[1]));
        assert!(intersect(&[u64::MAX], &[0, u64::MAX]));
    }
}
