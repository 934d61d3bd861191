//! Plan: what a migration will do, decided before a byte is written.
//!
//! 1. [`row_predicate`]: the row filter parsed against the pinned snapshot's schema.
//! 2. [`reconcile`]: the reconciliation plan mapping source columns onto the destination's.
//! 3. [`read`]: the pinned snapshot planned into file-scan tasks in a fixed order.
//! 4. [`route`]: each live source file copied, referenced, rewritten or skipped
//!    ([`eligibility`] of the tables, the filter [`decide`]d from partition values).
//! 5. [`job`]: the tasks — runs of files cut into numbered batches — and the serializable
//!    [`MigrationPlan`](job::MigrationPlan) a distributed run hands to other processes.

pub(crate) mod decide;
pub(crate) mod eligibility;
pub mod job;
pub(crate) mod read;
pub(crate) mod route;

use iceberg::expr::Predicate;
use iceberg::spec::{Schema, SchemaRef};
use iceberg::table::Table;
use ops_reconcile::{ReconciliationPlan, SchemaReconciler};

use crate::{Result, RowFilter, WriteMode};

/// The schema of the snapshot being read (the source's current one without a snapshot, or for
/// a snapshot that records none): a migration plans, filters and reads by it, so a column the
/// source dropped, renamed or widened after that snapshot changes nothing in what it moves.
pub(crate) fn pinned_schema(source: &Table, snapshot: Option<i64>) -> SchemaRef {
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
    let read_schema = &pinned_schema(source, snapshot);
    Ok(match row_filter {
        None => None,
        // Columns are named as in the snapshot read; a name it does not have is looked up in
        // the current schema (a column renamed since is found under its new name too).
        Some(RowFilter::Expression(text)) => Some(
            match ops_core::filter::parse_filter_at(text, read_schema, read_schema) {
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
