//! `DataMigrator::verify`: does the destination hold what the source (filtered, pinned) holds?
//!
//! - `row_count` — source rows against destination rows, from the manifests' record counts;
//!   a file is read only where delete files apply to it or the row filter cannot be decided for
//!   the whole file from its identity-partition values (evaluated with SQL's three-valued logic;
//!   a filter on another column, a value written before a widening, or floating point leave it
//!   to the read).
//! - `partition_hash` — both sides are streamed; every row (the projected destination columns)
//!   is encoded canonically with arrow's row format and hashed (xxh3-128); per destination
//!   partition (any transform, computed from the row) the count and the wrapping sum of the row
//!   hashes form an order-independent digest. Memory is one entry per partition, never a table.
//! - `sample` — on each side the `sample_size` distinct rows with the smallest row hashes and
//!   their multiplicities (a bottom-k sketch, streamed): the same rows are chosen on both sides
//!   whatever the read order, so a large identical copy never reports a false mismatch. Each
//!   side's row count and the sum of all its row hashes are compared too, so a duplicated,
//!   missing or changed row outside the sample is never reported as a match.
//!
//! Rows are hashed in a canonical form: a map as its entries sorted by key, every NaN alike
//! (-0.0 and 0.0 differ).
//!
//! Caveat (the seed's): the source is compared with the destination's whole current state.
//! Rows the destination held before the migration, upserts and partition overwrites make the
//! sides differ by design; interpret the result accordingly.

mod canonical;
mod count;
mod digest;

use ops_reconcile::SchemaReconciler;

use self::count::rows;
use self::digest::{Compared, compare_partitions, compare_samples};
use crate::plan::read::PlannedRead;
use crate::plan::{reconcile, row_predicate};
use crate::types::TableRef;
use crate::{MigrationError, Result, RowFilter, VerificationResult, VerifyMethod, WriteMode};

/// What a verification compares: the migrator's tables and settings.
pub(crate) struct Sides<'a> {
    pub source: &'a TableRef,
    pub dest: &'a TableRef,
    /// The source snapshot to read (`None`: the source's current one).
    pub snapshot: Option<i64>,
    pub row_filter: Option<&'a RowFilter>,
    pub reconciler: &'a SchemaReconciler,
    pub write_mode: WriteMode,
}

/// Runs `method` (see the module docs).
pub(crate) async fn verify(
    m: Sides<'_>,
    method: VerifyMethod,
    sample_size: usize,
) -> Result<VerificationResult> {
    if method == VerifyMethod::Sample && sample_size == 0 {
        return Err(MigrationError::InvalidInput(
            "sample_size must be at least 1 for method sample".into(),
        ));
    }
    let source = m.source.load().await?;
    let dest = m.dest.load().await?;
    let snapshot = m
        .snapshot
        .or_else(|| source.metadata().current_snapshot_id());
    let predicate = row_predicate(m.row_filter, &source, snapshot)?;
    let source_schema = crate::plan::pinned_schema(&source, snapshot);
    let mut result = VerificationResult {
        method,
        matches: false,
        source_count: None,
        dest_count: None,
        sample_size: None,
        mismatched_partitions: Vec::new(),
        details: Vec::new(),
    };
    match method {
        VerifyMethod::RowCount => {
            // Unfiltered and without live deletes, counted from the manifests as they are read:
            // no plan of a million tasks is held.
            let s = rows(&source, snapshot, predicate.as_ref()).await?;
            let d = rows(&dest, dest.metadata().current_snapshot_id(), None).await?;
            result.source_count = Some(s);
            result.dest_count = Some(d);
            result.matches = s == d;
            if s != d {
                let filtered = if predicate.is_some() {
                    "after filter, "
                } else {
                    ""
                };
                result.details.push(format!(
                    "source has {s} row(s) ({filtered}at snapshot {}), destination has {d}",
                    snapshot.map_or("none".into(), |s| s.to_string())
                ));
            }
        }
        VerifyMethod::PartitionHash | VerifyMethod::Sample => {
            let plan = reconcile(
                m.reconciler,
                m.write_mode,
                &source_schema,
                dest.metadata().current_schema(),
            )?;
            let src_read = PlannedRead::plan(&source, snapshot, predicate.clone())
                .await?
                .in_schema(source_schema.clone());
            let dst_read =
                PlannedRead::plan(&dest, dest.metadata().current_snapshot_id(), None).await?;
            let side = Compared::new(&plan, &dest)?;
            let src = side.source_stream(src_read.stream(&source, 65_536)?, plan.clone());
            let dst = side.dest_stream(dst_read.stream(&dest, 65_536)?);
            if method == VerifyMethod::PartitionHash {
                let a = side.partition_digests(src).await?;
                let b = side.partition_digests(dst).await?;
                compare_partitions(&a, &b, &mut result);
            } else {
                let a = side.sample(src, sample_size).await?;
                let b = side.sample(dst, sample_size).await?;
                compare_samples(&a, &b, sample_size, &mut result);
            }
        }
    }
    Ok(result)
}
