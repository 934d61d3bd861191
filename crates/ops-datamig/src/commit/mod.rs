//! Commit: batches reach the destination in batch order, one catalog commit per batch, tagged
//! with the job and batch, each checkpointed.
//!
//! 1. [`committer`]: the single committer takes each batch's written (or referenced) files, or
//!    an upsert's rows, in index order — whichever worker produced them — and commits, records
//!    (landed before a crash) or counts (before the resume point) it.
//! 2. [`upsert`]: an upsert batch is computed against the destination's keys at commit time
//!    (copy-on-write, one overwrite commit), reading only the destination files that
//!    [`dest_keys`], the job's index of the destination's keys by file, says may hold them.
//! 3. [`history`]: the tags the commits carry, read back to find landed batches and rollbacks.
//! 4. [`finish`]: after the last batch, the job's own compaction and snapshot expiry.
//! 5. [`outputs`]: the commit step of a plan executed elsewhere feeds the task outputs to the
//!    same committer.

pub(crate) mod committer;
mod dest_keys;
pub(crate) mod finish;
pub(crate) mod history;
mod outputs;
pub(crate) mod upsert;
