//! Plan: what a migration will do, decided before a byte is written.
//!
//! 1. [`row_predicate`]: the row filter parsed against the pinned snapshot's schema.
//! 2. [`reconcile`]: the reconciliation plan mapping source columns onto the destination's.
//! 3. [`read`]: the pinned snapshot planned into file-scan tasks in a fixed order.
//! 4. [`route`]: each live source file copied, referenced, rewritten or skipped
//!    ([`eligibility`] of the tables, the filter [`decide`]d from partition values).
//! 5. [`job`]: the tasks — runs of files cut into numbered batches — and the serializable
//!    [`MigrationPlan`](job::MigrationPlan) a distributed run hands to other processes.
//! 6. [`last_keys`]: for an upsert, a pre-pass over the source finding the batch that holds
//!    each key's last row (`on_duplicate_keys last`) or refusing a repeated key (`error`).

pub(crate) mod decide;
pub(crate) mod eligibility;
pub mod job;
pub(crate) mod last_keys;
pub(crate) mod read;
pub(crate) mod route;

use iceberg::expr::Predicate;
use iceberg::spec::{Schema, SchemaRef};
use iceberg::table::Table;
use ops_reconcile::{ReconciliationPlan, SchemaReconciler};

use crate::{Result, RowFilter, WriteMode};

/// The schema a migration plans, filters and reads by: an older snapshot's own schema, so a
/// column the source dropped, renamed or widened after that snapshot changes nothing in what
/// it moves; for the table's head (or no snapshot, or a snapshot that records none) the
/// current schema, as Java reads a branch's head and PyIceberg an unpinned scan: a rename or
/// a widening makes no snapshot, and the user names columns as the table has them now.
/// The same rule as ops-core's scans and their filters (`ops_core::scan::naming_schema`).
pub(crate) fn pinned_schema(source: &Table, snapshot: Option<i64>) -> SchemaRef {
    ops_core::scan::naming_schema(source, snapshot)
}

/// The schema `snapshot` records (the current one without): what iceberg's planner binds a
/// scan's filter to, so the filter handed to it must name columns as this schema does.
pub(crate) fn snapshot_own_schema(source: &Table, snapshot: Option<i64>) -> SchemaRef {
    let md = source.metadata();
    snapshot
        .and_then(|id| md.snapshot_by_id(id))
        .and_then(|s| s.schema_id())
        .and_then(|id| md.schema_by_id(id))
        .unwrap_or_else(|| md.current_schema())
        .clone()
}

/// The row filter as a predicate over the snapshot being read.
pub(crate) fn row_predicate(
    row_filter: Option<&RowFilter>,
    source: &Table,
    snapshot: Option<i64>,
) -> Result<Option<Predicate>> {
    let md = source.metadata();
    let named = &pinned_schema(source, snapshot);
    let read_schema = &snapshot_own_schema(source, snapshot);
    Ok(match row_filter {
        None => None,
        // Columns are named as in the schema the migration reads by; a name it does not have is
        // looked up in the current schema (a column renamed since is found under its new name
        // too). Either way the predicate names them as the snapshot's own schema does.
        Some(RowFilter::Expression(text)) => Some(
            match ops_core::filter::parse_filter_at(text, named, read_schema) {
                Ok(p) => p,
                Err(pinned_err) => {
                    ops_core::filter::parse_filter_at(text, md.current_schema(), read_schema)
                        .map_err(|_| pinned_err)?
                }
            },
        ),
        Some(RowFilter::Predicate(p)) => Some(p.clone()),
    })
}

/// How `src` columns map onto `dst` columns for `mode` (an upsert keeps its keys).
pub(crate) fn reconcile(
    reconciler: &SchemaReconciler,
    mode: WriteMode,
    src: &Schema,
    dst: &Schema,
) -> Result<ReconciliationPlan> {
    Ok(if mode == WriteMode::Upsert {
        reconciler.compute_upsert_plan(src, dst)?
    } else {
        reconciler.compute_plan(src, dst)?
    })
}

/// `source`'s snapshot `snapshot_id`, or an error naming both.
pub(crate) fn snapshot_of(source: &Table, snapshot_id: i64) -> Result<&iceberg::spec::SnapshotRef> {
    source
        .metadata()
        .snapshot_by_id(snapshot_id)
        .ok_or_else(|| {
            crate::MigrationError::InvalidInput(format!(
                "{} has no snapshot {snapshot_id}",
                source.identifier()
            ))
        })
}
