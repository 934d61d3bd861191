//! Conflict validation for read-modify-write commits, after Java's `MergingSnapshotProducer`.
//!
//! An operation that decided what to write from what it read at snapshot S (an upsert's keys,
//! a partition it replaces, rows it rewrites) must not commit over a change made after S that
//! its decision did not see. Every snapshot on `main` after S (`validate_from_snapshot`) is
//! checked:
//!
//! - `validateAddedDataFiles`: no data file added in a partition the operation replaces, nor
//!   one whose statistics say it may hold rows matching the conflict detection filter, nor
//!   (beyond Java, whose removal by path would drop it silently) one at a path the operation
//!   removes;
//! - `validateDeletedDataFiles`: no data file the operation removes, or that lies in its
//!   partitions or may match its filter, was removed meanwhile;
//! - `validateNoNewDeletesForDataFiles` / `validateNoConflictingDeleteFiles`: no position or
//!   equality delete file added that may apply to a data file the operation rewrites (its rows
//!   would come back in the rewrite), or that lies in its partitions or may match its filter.
//!
//! A failed check is [`Error::CommitConflict`] and is not retried: the caller's reading is out
//! of date. If `main` no longer descends from S (rolled back), that is a conflict too.

use std::collections::HashSet;
use std::sync::Arc;

use iceberg::expr::BoundPredicate;
use iceberg::spec::{DataContentType, DataFile};
use iceberg::table::Table;

use super::snapshot::{LiveFile, ManifestCache, Overlap, PartitionKey, changes_of, overlap};
use crate::keys::KeySet;
use crate::prune::may_match;
use crate::{Error, Result};

/// What a read-modify-write operation depends on.
#[derive(Default)]
pub struct ConflictCheck {
    /// The snapshot the operation read; `None` when the table was empty.
    pub since: Option<i64>,
    /// Rows the operation's decision depends on (bound to the current schema).
    pub filter: Option<BoundPredicate>,
    /// Rows the operation's decision depends on, by key, with the key columns' field ids
    /// ([`crate::keys`]): a file whose statistics allow one of the keys matters.
    pub keys: Option<(Arc<KeySet>, Vec<i32>)>,
    /// Partitions the operation replaces or writes to, canonicalised.
    pub partitions: HashSet<PartitionKey>,
    /// Data files the operation removes (by path) and their partitions.
    pub removed: HashSet<String>,
    /// The partitions of [`Self::removed`], canonicalised.
    pub removed_partitions: HashSet<PartitionKey>,
    /// Of [`Self::removed`], the files the operation read at [`Self::since`] (compaction's
    /// inputs; not what an operation that re-plans on every attempt finds added since): one
    /// of them added again after `since` is a conflict, since removal by path would take the
    /// new entry too.
    pub removed_as_read: HashSet<String>,
}

impl ConflictCheck {
    /// Checks every snapshot committed to `table` after [`Self::since`] against what the
    /// operation depends on: a conflicting one is [`Error::CommitConflict`].
    pub async fn validate(&self, table: &Table, cache: &ManifestCache) -> Result<()> {
        let md = table.metadata();
        let conflict = |detail: String| Error::CommitConflict {
            table: table.identifier().to_string(),
            detail,
        };
        let filter = self.filter.clone().map(BoundPredicate::rewrite_not);
        let read = |f: &DataFile| {
            filter.as_ref().is_some_and(|p| may_match(p, f))
                || self
                    .keys
                    .as_ref()
                    .is_some_and(|(k, ids)| k.may_match(ids, f))
        };
        // Ancestry first, from metadata alone: what the caller read must still be history.
        let mut between = Vec::new();
        let mut cursor = md.current_snapshot_id();
        while cursor != self.since {
            let Some(id) = cursor else {
                return Err(conflict(format!(
                    "main no longer descends from snapshot {} which this operation read (it \
                     was rolled back or replaced); read the table again",
                    self.since
                        .map_or("(empty table)".to_string(), |s| s.to_string())
                )));
            };
            between.push(id);
            cursor = md.snapshot_by_id(id).and_then(|s| s.parent_snapshot_id());
        }
        for id in between {
            let changes = changes_of(table, cache, id).await?;
            for f in changes.added.iter().chain(&changes.removed_data) {
                if self.partitions.is_empty() || self.specs().contains(&f.spec_id) {
                    continue;
                }
                // Under another spec: a conflict where its partition puts it, or may put it,
                // in a partition this operation touches (Java compares only same-spec
                // partitions, but a replace here also removes other-spec files it can place).
                if overlap(table, f.spec_id, f.file.partition(), &self.partitions)? != Overlap::No {
                    return Err(conflict(format!(
                        "snapshot {id} changed {} under partition spec {}, whose rows may lie \
                         in the partitions this operation replaces",
                        f.file.file_path(),
                        f.spec_id
                    )));
                }
            }
            for f in &changes.added {
                let path = f.file.file_path();
                if f.file.content_type() == DataContentType::Data {
                    if self.partitions.contains(&f.key()) {
                        return Err(conflict(format!(
                            "snapshot {id} added {path} to partition {:?}, which this \
                             operation replaces",
                            f.file.partition()
                        )));
                    }
                    if read(&f.file) {
                        return Err(conflict(format!(
                            "snapshot {id} added {path}, which may hold rows this operation \
                             read (conflict detection filter)"
                        )));
                    }
                    // Removal is by path: the commit would remove the new entry too, and
                    // with it rows this operation never read.
                    if self.removed_as_read.contains(path) {
                        return Err(conflict(format!(
                            "snapshot {id} added {path} again, which this operation removes; \
                             removing it would drop the rows of the new entry too"
                        )));
                    }
                } else if self.delete_applies(f, read(&f.file)) {
                    return Err(conflict(format!(
                        "snapshot {id} added delete file {path}, which may delete rows this \
                         operation read or rewrites; they would come back"
                    )));
                }
            }
            for f in &changes.removed_data {
                let path = f.file.file_path();
                if self.removed.contains(path)
                    || self.partitions.contains(&f.key())
                    || read(&f.file)
                {
                    return Err(conflict(format!(
                        "snapshot {id} removed {path}, which this operation depends on"
                    )));
                }
            }
        }
        Ok(())
    }

    fn specs(&self) -> HashSet<i32> {
        self.partitions.iter().map(|(s, _)| *s).collect()
    }

    /// `read`: whether the delete file's statistics may match the rows this operation read.
    fn delete_applies(&self, delete: &LiveFile, read: bool) -> bool {
        let key = delete.key();
        // A delete file of an unpartitioned spec (an empty tuple, or one of `void` fields only,
        // as Java's `isUnpartitioned` counts it) may apply to any partition. A tuple of NULLs
        // is taken for one too: at worst an extra conflict, never a missed one.
        let global = delete.file.partition().fields().iter().all(Option::is_none);
        (!self.removed.is_empty() && (global || self.removed_partitions.contains(&key)))
            || self.partitions.contains(&key)
            || (global && !self.partitions.is_empty())
            || read
    }
}
