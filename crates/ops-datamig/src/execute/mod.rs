//! Execute: a task's source files become the destination's data files (or an upsert's rows),
//! batch by batch — never a commit.
//!
//! 1. [`read`]: the planned read is streamed one file after the other ([`paged`] a page at a
//!    time where it can be), mapped onto the source's current schema, filtered row by row, its
//!    equality-deleted rows removed.
//! 2. [`worker`]: the rows are cut into batches of exactly `batch_rows` (per task), projected
//!    through the reconciliation plan and written as Parquet files; a copy or reference task
//!    hands its whole files to [`copy`] instead.
//! 3. Each batch goes to the committer as a `BatchWork`: in this process over a channel, or,
//!    for a plan executed elsewhere, as a task output ([`task`]).

pub(crate) mod copy;
pub(crate) mod paged;
pub(crate) mod read;
pub(crate) mod task;
pub(crate) mod worker;

/// The most rows the source reader decodes at once (see [`read_batch_size`]).
pub(crate) const MAX_READ_ROWS: usize = 16_384;

/// Rows per batch the source reader decodes: the batch size, up to [`MAX_READ_ROWS`].
///
/// A worker holds several decoded pieces at once (the one being decoded and the reader's slot,
/// two projected ones queued for the cutting, two for the Parquet writer, and the closing
/// batch's): at 64 Ki rows of the benchmark table they were a sixth of a 50,000-row
/// migration's peak RSS (115 → 94 MiB at 16 Ki rows, no slower; 8 Ki saved no more).
pub(crate) fn read_batch_size(batch_rows: usize) -> usize {
    batch_rows.clamp(1, MAX_READ_ROWS)
}
