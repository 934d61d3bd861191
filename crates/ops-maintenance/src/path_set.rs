//! Sets of file paths in 8 bytes a path, for comparing a million referenced files with a
//! listing or with another snapshot's files without holding a million strings.
//!
//! A path is kept as a 64-bit hash (SipHash-1-3 with fixed keys). Two paths with one hash
//! would make a path look present that is not; every caller asks "is this file still
//! referenced?" and keeps a file it is told is, so a collision could only keep a file, never
//! delete one. It is rare as well: a file that is not in a set of n paths is taken for one
//! with probability n/2^64, about 5×10^-14 for a table of a million files. (Sixteen bytes a
//! path, as this module kept before, made a million-file table's orphan cleanup grow 1.56×
//! from 10,000 files against a 1.5× target; the extra 64 bits bought nothing a deletion
//! depends on.)

use std::hash::{Hash, Hasher};

/// The 64-bit hash of `path` this module keeps.
pub(crate) fn path_hash(path: &str) -> u64 {
    // DefaultHasher::new() has fixed keys (RandomState's hashers do not).
    let mut h = std::hash::DefaultHasher::new();
    path.hash(&mut h);
    h.finish()
}

/// A set of paths being collected (duplicates allowed, compacted as it grows); [`PathSet::seal`]
/// turns it into the [`SealedPathSet`] lookups are made on.
#[derive(Debug, Default)]
pub(crate) struct PathSet {
    hashes: Vec<u64>,
    /// Length at which the next sort-and-dedup runs, so duplicates (a file listed by the
    /// manifests of many snapshots) cost at most twice the distinct paths.
    compact_at: usize,
}

impl PathSet {
    /// Adds `path`.
    pub(crate) fn insert(&mut self, path: &str) {
        self.hashes.push(path_hash(path));
        if self.hashes.len() >= self.compact_at.max(1 << 16) {
            self.hashes.sort_unstable();
            self.hashes.dedup();
            self.compact_at = self.hashes.len() * 2;
        }
    }

    /// Sorted and deduplicated, ready for lookups.
    pub(crate) fn seal(mut self) -> SealedPathSet {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        self.hashes.shrink_to_fit();
        SealedPathSet {
            hashes: self.hashes,
        }
    }
}

/// A [`PathSet`] done collecting: sorted, so a lookup is a binary search.
#[derive(Debug)]
pub(crate) struct SealedPathSet {
    hashes: Vec<u64>,
}

impl SealedPathSet {
    /// Whether `path` was added.
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.contains_hash(path_hash(path))
    }

    /// Whether a path with this [`path_hash`] was added.
    pub(crate) fn contains_hash(&self, hash: u64) -> bool {
        self.hashes.binary_search(&hash).is_ok()
    }

    /// Distinct paths.
    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_added_and_nothing_else() {
        let mut set = PathSet::default();
        for round in 0..3 {
            for i in 0..100_000 {
                set.insert(&format!("s3://b/t/data/{i:07}-{round}.parquet"));
            }
            // The same paths again, as another snapshot's manifests list them.
            for i in 0..100_000 {
                set.insert(&format!("s3://b/t/data/{i:07}-{round}.parquet"));
            }
        }
        let set = set.seal();
        assert_eq!(set.len(), 300_000);
        assert!(set.contains("s3://b/t/data/0000042-2.parquet"));
        assert!(!set.contains("s3://b/t/data/0000042-3.parquet"));
        assert!(!set.contains("s3://b/t/data/0000042-2.parquet "));
        assert_ne!(path_hash("a"), path_hash("b"));
        assert_eq!(path_hash("a"), path_hash("a"));
    }
}
