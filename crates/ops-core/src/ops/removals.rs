//! The paths a snapshot removes, found by path and numbered: the producer looks every
//! manifest entry up and notes which removals it met, in one flag per path.
//!
//! A compaction removes a million files in one commit. As two hash sets of shared paths — the
//! removals and the ones met — that was about 70 MiB of tables at a million paths (16-byte
//! pointers in 2 Mi buckets, twice). Here the paths stay in one vector (the plan's
//! [`FilePath`]s, not copies) and a table of 4-byte positions finds them: about 27 MiB, and the flags a
//! further byte per path.

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::file_path::{FilePath, FilePaths, IntoFilePath};

/// Distinct paths, each with its position (see the module docs).
#[derive(Default)]
pub(crate) struct Removals {
    paths: Vec<FilePath>,
    /// Positions in `paths`, by the hash of the path.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// The directories of paths given as strings, each kept once.
    dirs: FilePaths,
}

impl Removals {
    /// Adds the paths not held yet.
    pub(crate) fn extend(&mut self, paths: impl IntoIterator<Item = impl IntoFilePath>) {
        let paths = paths.into_iter();
        let (more, _) = paths.size_hint();
        self.paths.reserve(more);
        let hasher = &self.hasher;
        self.index
            .reserve(more, |&i| self.paths[i as usize].hash_with(hasher));
        for path in paths {
            let path = path.into_file_path(&mut self.dirs);
            let hash = path.hash_with(&self.hasher);
            if self
                .index
                .find(hash, |&i| self.paths[i as usize] == path)
                .is_some()
            {
                continue;
            }
            // Four billion paths would need 32 GiB of pointers first.
            let at = self.paths.len() as u32;
            self.paths.push(path);
            let (paths, hasher) = (&self.paths, &self.hasher);
            self.index
                .insert_unique(hash, at, |&i| paths[i as usize].hash_with(hasher));
        }
    }

    /// The position of `path`, if held.
    pub(crate) fn position(&self, path: &str) -> Option<usize> {
        let hash = FilePath::hash_str(&self.hasher, path);
        self.index
            .find(hash, |&i| self.paths[i as usize].is(path))
            .map(|&i| i as usize)
    }

    pub(crate) fn contains(&self, path: &str) -> bool {
        self.position(path).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.paths.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The paths whose flag in `met` (by position) is not set.
    pub(crate) fn unmet<'s>(&'s self, met: &'s [bool]) -> impl Iterator<Item = &'s FilePath> {
        debug_assert_eq!(met.len(), self.paths.len());
        self.paths
            .iter()
            .zip(met)
            .filter(|(_, met)| !**met)
            .map(|(p, _)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_held_once_and_found_by_position() {
        let mut set = Removals::default();
        set.extend(["a", "b", "a"].map(FilePath::from));
        set.extend(["c", "b"].map(FilePath::from));
        assert_eq!(set.len(), 3);
        assert_eq!(
            ["a", "b", "c", "d"].map(|p| set.position(p)),
            [Some(0), Some(1), Some(2), None]
        );
        let met = [true, false, false];
        assert_eq!(
            set.unmet(&met).collect::<Vec<_>>(),
            ["b", "c"].map(FilePath::from).each_ref()
        );
        assert!(set.contains("b") && !set.contains("") && !Removals::default().contains("a"));
    }
}
