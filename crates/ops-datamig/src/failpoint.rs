//! Test-only failpoints: the process aborts at a named point of a job, as a SIGKILL landing
//! exactly there would, so the tests can stop a run between two of its durable steps (a
//! batch's commit and its checkpoint entry, the last batch and the completion record, ...)
//! instead of hoping a random kill lands there.
//!
//! `ICEBERG_OPS_TEST_ABORT_AT=<point>` names the point ([`ops_core::failpoint`]). It is honoured by debug builds only
//! (release builds, which users run, never read it; `ICEBERG_OPS_TEST_ENCODE_CLUSTER_FORMAT` in
//! ops-ballista follows the same rule), and only when its value is exactly one of the points
//! below, so neither a release binary nor a stray value can abort a real migration. Before
//! aborting, the process prints `iceberg-ops: test failpoint <point>: aborting` on stderr, so a
//! test tells its failpoint from any other crash.
//!
//! The points, in the order a local `--checkpoint` run passes them:
//!
//! - `after-commit:<N>`: batch N's destination commit landed, its checkpoint entry is not
//!   written yet (also in `migrate-data commit` and `--cluster`, which share the committer);
//! - `after-batches`: every batch is committed and checkpointed; the job's completion record is
//!   not set yet (its running marker is still on the destination);
//! - `after-completion-record`: the completion record replaced the running marker; the job's
//!   compaction (`--compact`) and the checkpoint's completed mark are not done yet;
//! - `after-checkpoint-completed`: the checkpoint is marked completed; the job's snapshot expiry
//!   (`--expire-job-snapshots`) and the report are not done yet.

/// Every batch is committed and checkpointed, before the completion record.
pub(crate) const AFTER_BATCHES: &str = "after-batches";
/// The completion record is set, before the compaction and the checkpoint's completed mark.
pub(crate) const AFTER_COMPLETION_RECORD: &str = "after-completion-record";
/// The checkpoint is marked completed, before the job's expiry and the report.
pub(crate) const AFTER_CHECKPOINT_COMPLETED: &str = "after-checkpoint-completed";

pub(crate) use ops_core::failpoint::hit;
use ops_core::failpoint::{abort, armed};

/// Aborts the process if the tests asked for `after-commit:<index>` and `index` is one of
/// `batches` (a series commits several batches at once).
pub(crate) fn after_commit(batches: impl IntoIterator<Item = u64>) {
    let Some(armed) = armed() else {
        return;
    };
    let Some(n) = armed
        .strip_prefix("after-commit:")
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return;
    };
    if batches.into_iter().any(|b| b == n) {
        abort(armed);
    }
}
