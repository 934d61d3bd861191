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
use iceberg::spec::Schema;
use iceberg::table::Table;
use ops_reconcile::{ReconciliationPlan, SchemaReconciler};

use crate::{Result, RowFilter, WriteMode};

/// The row filter as a predicate over the snapshot being read.
pub(crate) fn row_predicate(
    row_filter: Option<&RowFilter>,
    source: &Table,
    snapshot: Option<i64>,
) -> Result<Option<Predicate>> {
    let md = source.metadata();
    let read_schema = snapshot
        .and_then(|id| md.snapshot_by_id(id))
        .and_then(|s| s.schema_id())
        .and_then(|id| md.schema_by_id(id))
        .unwrap_or_else(|| md.current_schema());
    Ok(match row_filter {
        None => None,
        Some(RowFilter::Expression(text)) => Some(ops_core::filter::parse_filter_at(
            text,
            md.current_schema(),
            read_schema,
        )?),
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
