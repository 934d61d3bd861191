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
//!   stored is a superset of what it holds under any deletes it has now or gains later, and a
//!   data file never changes — an entry stays true for the whole job. Files written since
//!   (this job's or another writer's) are indexed when a scan first names them.
//! - Memory: 8 bytes per indexed row, at most [`MAX_HASHES`] (32 MiB). The files a chunk's
//!   commit rewrote leave the index with it. When the next file would pass the limit, the
//!   entries of files the current chunk's scan does not name are dropped first; if it still
//!   would, that file is read whole by the chunk, as without the index.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
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

/// The index (see the module docs).
#[derive(Default)]
pub(crate) struct DestKeys {
    /// The encoder of the key columns' types; a chunk of other types starts the index afresh.
    encoder: Option<(Vec<DataType>, Arc<KeyEncoder>)>,
    /// Each indexed file's distinct key hashes, sorted.
    files: HashMap<String, Box<[u64]>>,
    held: usize,
}

impl DestKeys {
    /// Each row's key hash, in row order, for the key columns `cols` (one array per key
    /// column, in the table's current types).
    pub(crate) fn row_hashes(&mut self, cols: &[ArrayRef]) -> Result<Vec<u64>> {
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type().clone()).collect();
        let encoder = match &self.encoder {
            Some((t, e)) if *t == types => e.clone(),
            _ => {
                // Hashes of another encoding compare with nothing: start afresh.
                *self = Self::default();
                let e = Arc::new(KeyEncoder::new(types.clone())?);
                self.encoder = Some((types, e.clone()));
                e
            }
        };
        hash_rows(&encoder, cols)
    }

    /// Indexes every file `scan` names that is not yet indexed (reading its key columns,
    /// `key_ids` in the table's current schema), then leaves out of `scan` the files that
    /// cannot hold one of `keys` (sorted, distinct hashes from [`Self::row_hashes`]).
    pub(crate) async fn prune(
        &mut self,
        scan: &mut PlannedScan,
        key_ids: &[i32],
        keys: &[u64],
    ) -> Result<()> {
        let Some((_, encoder)) = self.encoder.clone() else {
            return Ok(());
        };
        let named: HashSet<String> = scan.files().map(str::to_string).collect();
        let missing: Vec<String> = named
            .iter()
            .filter(|p| !self.files.contains_key(*p))
            .cloned()
            .collect();
        // Each read owns what it holds, boxed: a future borrowing the scan, or built by a
        // closure over the read's stream, is not provably `Send` to the compiler.
        let indexed_now = missing.len();
        let reads: Vec<BoxFuture<'static, Result<Indexed>>> = missing
            .into_iter()
            .map(|path| {
                let read = scan.read_columns(&path, key_ids);
                let encoder = encoder.clone();
                async move {
                    let mut hashes = Vec::new();
                    let mut batches = read?;
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
        let mut full = false;
        while let Some(read) = reads.next().await {
            let (path, hashes) = read?;
            if full {
                continue;
            }
            if self.held + hashes.len() > MAX_HASHES {
                // Files this chunk does not name first: the job's replaced ones among them.
                self.files.retain(|p, _| named.contains(p));
                self.held = self.files.values().map(|h| h.len()).sum();
            }
            if self.held + hashes.len() > MAX_HASHES {
                full = true;
                tracing::debug!(
                    held = self.held,
                    "upsert key index full: further files are read whole"
                );
                continue;
            }
            self.held += hashes.len();
            self.files.insert(path, hashes);
        }
        drop(reads);
        let before = named.len();
        scan.retain_files(|path| self.may_hold(path, keys));
        tracing::debug!(
            files = before,
            may_hold = scan.files().collect::<HashSet<_>>().len(),
            indexed_now,
            held = self.held,
            "destination files pruned by the key index"
        );
        Ok(())
    }

    /// Drops the entries of `paths` (files the job's commit replaced).
    pub(crate) fn forget<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) {
        for path in paths {
            if let Some(held) = self.files.remove(path) {
                self.held -= held.len();
            }
        }
    }

    /// Whether the file at `path` may hold one of `keys` (sorted, distinct hashes): true for a
    /// file not indexed.
    pub(crate) fn may_hold(&self, path: &str, keys: &[u64]) -> bool {
        self.files
            .get(path)
            .is_none_or(|held| intersect(held, keys))
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
