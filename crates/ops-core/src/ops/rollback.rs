//! Move `main` to another snapshot: back to an ancestor (rollback), or to any snapshot of the
//! table (set current snapshot).
//!
//! 1. Load the table; the target must exist, and for a rollback be an ancestor of the current
//!    snapshot — otherwise the error names the ancestors to choose from.
//! 2. Commit `SetSnapshotRef(main)` guarded by `main` still being at the snapshot seen in
//!    step 1. On a concurrent commit, re-check on the new base and retry.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::spec::{MAIN_BRANCH, SnapshotReference, TableMetadata};
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement, TableUpdate};

use crate::commit::{TableChange, commit_metadata_change};
use crate::{CatalogHandle, Error, Result};

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackMetrics {
    /// `main` before.
    pub from: Option<i64>,
    /// `main` after.
    pub to: i64,
}

/// Moves `main` (see the module docs).
#[must_use = "a RollbackBuilder does nothing until awaited"]
pub struct RollbackBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    target: i64,
    require_ancestor: bool,
}

impl RollbackBuilder {
    /// Rolls `main` back to `snapshot_id`, which must be an ancestor of the current snapshot.
    pub fn to_snapshot(handle: &CatalogHandle, ident: TableIdent, snapshot_id: i64) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            target: snapshot_id,
            require_ancestor: true,
        }
    }

    /// Points `main` at any snapshot of the table (e.g. forward again after a rollback).
    pub fn set_current_snapshot(
        handle: &CatalogHandle,
        ident: TableIdent,
        snapshot_id: i64,
    ) -> Self {
        Self {
            require_ancestor: false,
            ..Self::to_snapshot(handle, ident, snapshot_id)
        }
    }

    async fn execute(self) -> Result<(Table, RollbackMetrics)> {
        let mut from = None;
        let target = self.target;
        let require_ancestor = self.require_ancestor;
        let table = commit_metadata_change(&self.handle, &self.ident, |md| {
            let current = md.current_snapshot_id();
            from = current;
            plan(&self.ident, md, current, target, require_ancestor)
        })
        .await?;
        Ok((table, RollbackMetrics { from, to: target }))
    }
}

fn plan(
    ident: &TableIdent,
    md: &TableMetadata,
    current: Option<i64>,
    target: i64,
    require_ancestor: bool,
) -> Result<Option<TableChange>> {
    if md.snapshot_by_id(target).is_none() {
        let known: Vec<String> = md
            .snapshots()
            .map(|s| s.snapshot_id().to_string())
            .collect();
        return Err(Error::InvalidInput(format!(
            "{ident} has no snapshot {target}; its snapshots are: {}",
            known.join(", ")
        )));
    }
    if current == Some(target) {
        return Ok(None);
    }
    if require_ancestor {
        let ancestors = ancestors(md, current);
        if !ancestors.contains(&target) {
            // Only those the table still has: the last parent id may name an expired one.
            let list: Vec<String> = ancestors
                .iter()
                .filter(|id| md.snapshot_by_id(**id).is_some())
                .map(i64::to_string)
                .collect();
            return Err(Error::InvalidInput(format!(
                "snapshot {target} is not an ancestor of {ident}'s current snapshot {}; \
                 ancestors (newest first): {}. Use `iceberg-ops table set-current-snapshot` to move to it anyway",
                current.map_or("(none)".to_string(), |c| c.to_string()),
                if list.is_empty() {
                    "(none)".to_string()
                } else {
                    list.join(", ")
                }
            )));
        }
    }
    Ok(Some(TableChange {
        requirements: vec![
            TableRequirement::UuidMatch { uuid: md.uuid() },
            TableRequirement::RefSnapshotIdMatch {
                r#ref: MAIN_BRANCH.to_string(),
                snapshot_id: current,
            },
        ],
        updates: vec![TableUpdate::SetSnapshotRef {
            ref_name: MAIN_BRANCH.to_string(),
            reference: SnapshotReference::new(target, super::snapshot::main_retention(md)),
        }],
        ..Default::default()
    }))
}

/// The ancestors of `from` (excluding it), newest first.
pub fn ancestors(md: &TableMetadata, from: Option<i64>) -> Vec<i64> {
    let mut out = Vec::new();
    let mut cursor = from
        .and_then(|id| md.snapshot_by_id(id))
        .and_then(|s| s.parent_snapshot_id());
    while let Some(id) = cursor {
        if out.contains(&id) {
            break; // a malformed cycle must not loop forever
        }
        out.push(id);
        cursor = md.snapshot_by_id(id).and_then(|s| s.parent_snapshot_id());
    }
    out
}

impl IntoFuture for RollbackBuilder {
    type Output = Result<(Table, RollbackMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
