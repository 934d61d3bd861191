//! The job's trace in the destination's history: every snapshot a batch creates is tagged with
//! the job id and batch index, so a resume or a repeated commit step finds the batches that
//! landed, and notices a destination rolled back under its checkpoint.

use std::collections::BTreeMap;

use iceberg::spec::{DataFile, ManifestContentType};
use iceberg::table::Table;

use crate::Result;

/// Summary key holding the job id on every snapshot a batch creates.
pub const MIGRATION_JOB_PROPERTY: &str = "iceberg-ops.migration-job";
/// Summary key holding the batch index on every snapshot a batch creates.
pub const MIGRATION_BATCH_PROPERTY: &str = "iceberg-ops.migration-batch";
/// Summary keys holding, on every snapshot a local run's batch creates, what the job read: the
/// source and row filter as an opaque digest ([`read_identity`]), and the source snapshot. A
/// later append of the same rows as a new job is warned of.
pub const MIGRATION_READ_PROPERTY: &str = "iceberg-ops.migration-read";
pub const MIGRATION_SOURCE_SNAPSHOT_PROPERTY: &str = "iceberg-ops.migration-source-snapshot";
/// Summary key holding the job id on the compaction a job ran on its own files
/// (`DataMigrator::compact`); it is no batch, so it carries neither key above.
pub const COMPACTED_JOB_PROPERTY: &str = "iceberg-ops.compacted-job";

/// Batches of `job_id` at or after `from` found in `dest`'s current history, with their
/// snapshots in commit order.
pub(crate) fn landed_batches(dest: &Table, job_id: &str, from: u64) -> BTreeMap<u64, Vec<i64>> {
    let md = dest.metadata();
    let mut out: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    let mut snapshots = history(dest);
    snapshots.reverse();
    for id in snapshots {
        let Some(s) = md.snapshot_by_id(id) else {
            continue;
        };
        let props = &s.summary().additional_properties;
        if props.get(MIGRATION_JOB_PROPERTY).map(String::as_str) != Some(job_id) {
            continue;
        }
        if let Some(batch) = props
            .get(MIGRATION_BATCH_PROPERTY)
            .and_then(|b| b.parse::<u64>().ok())
            && batch >= from
        {
            out.entry(batch).or_default().push(id);
        }
    }
    out
}

/// Whether `snapshot` is the compaction `job_id` ran on its own files.
pub(crate) fn is_compaction_of(snapshot: &iceberg::spec::Snapshot, job_id: &str) -> bool {
    snapshot
        .summary()
        .additional_properties
        .get(COMPACTED_JOB_PROPERTY)
        .map(String::as_str)
        == Some(job_id)
}

/// Why `job_id` must not be committed again, if its compaction is in `dest`'s history: a job
/// compacts only after its last batch landed.
pub(crate) fn completed_trace(dest: &Table, job_id: &str) -> Option<String> {
    let md = dest.metadata();
    for id in history(dest) {
        let Some(s) = md.snapshot_by_id(id) else {
            continue;
        };
        if is_compaction_of(s, job_id) {
            return Some(format!("its compaction (snapshot {id}) is in the history"));
        }
    }
    None
}

/// Whether batch `batch` of a job, absent from the destination's history, landed and had its
/// snapshot expired since: a later batch of the job is there (`landed`), and batches land in
/// order. Asked only about a batch an output holds: batch numbers have gaps where a task
/// yields fewer batches than its range (a filter or delete files dropped rows), and such a gap
/// says nothing.
pub(crate) fn expired_batch(landed: &BTreeMap<u64, Vec<i64>>, batch: u64) -> bool {
    !landed.contains_key(&batch) && landed.range(batch.saturating_add(1)..).next().is_some()
}

/// Whether `snapshot` is `dest`'s current snapshot or one of its ancestors.
fn in_history(dest: &Table, snapshot: i64) -> bool {
    history(dest).contains(&snapshot)
}

/// The newest of `checkpointed` snapshots when it is no longer in `dest`'s current history
/// (rolled back, or expired after later commits): a resume from that checkpoint would skip rows
/// that may be gone. Only the newest is asked: batches land in order on one history, so while
/// it is there every earlier one was too, and an earlier one missing was expired (an expiry
/// forced past the job's marker), its rows still in the table.
pub(crate) fn rolled_back(dest: &Table, checkpointed: &[i64]) -> Option<i64> {
    checkpointed
        .last()
        .copied()
        .filter(|s| !in_history(dest, *s))
}

/// Why a checkpoint whose newest snapshot `missing` is gone ([`rolled_back`]) cannot be
/// resumed by `doing` ("committing", "resuming").
pub(crate) fn rolled_back_reason(missing: i64, doing: &str) -> String {
    format!(
        "the destination's current history no longer holds snapshot {missing}, the newest \
         checkpointed batch's (it was rolled back, or expired after later commits); {doing} \
         would skip rows that may no longer be there"
    )
}

/// The newest snapshot of `job_id` (a batch or its compaction) when the table still holds it
/// but its current history does not: the destination was rolled back past the job, whose rows
/// are then not (all) there, whatever its completion record says. A snapshot expired since is
/// gone from the metadata altogether and says nothing.
pub(crate) fn job_rolled_back(dest: &Table, job_id: &str) -> Option<i64> {
    let md = dest.metadata();
    let newest = md
        .snapshots()
        .filter(|s| of_job(s, job_id))
        .max_by_key(|s| s.sequence_number())?;
    let id = newest.snapshot_id();
    (!in_history(dest, id)).then_some(id)
}

/// Why `job_id` is over in `dest`, if it is: its checkpoint (`state`, which the caller made
/// sure is this job's) marked completed with its newest snapshot still in the history (not
/// rolled back since; the earlier ones, its ancestors, may be gone only because the job's own
/// expiry removed them); its completion record on the destination (set when its last batch
/// landed, so every snapshot of it may have been expired since and it is still not run or
/// committed twice); or its compaction in the history (it runs after the last batch). The last
/// two count only while the job was not rolled back past ([`job_rolled_back`] is `None`).
pub(crate) fn job_over(
    dest: &Table,
    job_id: &str,
    state: Option<&ops_checkpoint::CheckpointState>,
    path: Option<&std::path::Path>,
) -> Option<String> {
    if let Some(state) = state
        && state.completed
        && rolled_back(dest, &state.dest_snapshot_ids).is_none()
    {
        return Some(format!(
            "checkpoint {} records its completion",
            path.map_or_else(String::new, |p| p.display().to_string())
        ));
    }
    // The record and the compaction say the job completed, not that its rows are still
    // there: only while the job's newest snapshot was not rolled back.
    if job_rolled_back(dest, job_id).is_some() {
        return None;
    }
    if let Some(at) = ops_core::ops::markers::completed_at(dest.metadata(), job_id) {
        return Some(format!(
            "its completion record ({}) says it completed at {at}",
            ops_core::ops::markers::completed_job_key(job_id)
        ));
    }
    completed_trace(dest, job_id)
}

/// Whether the destination holds any snapshot of `job_id` (a batch or its compaction), in its
/// history or not.
pub(crate) fn has_snapshots_of(dest: &Table, job_id: &str) -> bool {
    dest.metadata().snapshots().any(|s| of_job(s, job_id))
}

/// Whether `snapshot` is a batch of `job_id` or its compaction.
fn of_job(snapshot: &iceberg::spec::Snapshot, job_id: &str) -> bool {
    snapshot
        .summary()
        .additional_properties
        .get(MIGRATION_JOB_PROPERTY)
        .map(String::as_str)
        == Some(job_id)
        || is_compaction_of(snapshot, job_id)
}

/// The destination's current snapshot and its ancestors, newest first.
fn history(table: &Table) -> Vec<i64> {
    let md = table.metadata();
    let current = md.current_snapshot_id();
    let mut out: Vec<i64> = current.into_iter().collect();
    out.extend(ops_core::ops::rollback::ancestors(md, current));
    out
}

/// What a job reads, as an opaque digest: the source table (its uuid) and the row filter (as
/// parsed: spelled differently, the same filter is the same digest). Two jobs of one digest
/// read the same rows at the same source snapshot, whatever their batch size, copy mode or
/// column mapping; the snapshot is kept beside it.
pub(crate) fn read_identity(source_uuid: &str, row_filter: Option<&str>) -> String {
    let mut h = twox_hash::XxHash3_128::new();
    h.write(source_uuid.as_bytes());
    h.write(b"|");
    if let Some(f) = row_filter {
        h.write(f.as_bytes());
    }
    format!("{:032x}", h.finish_128())
}

/// A completed job of a destination's history that read what a digest names.
#[derive(Debug)]
pub(crate) struct CompletedRead<'a> {
    pub job: &'a str,
    /// When it completed (its completion record's value).
    pub at: &'a str,
    /// The source snapshot it read (`None`: the source had none).
    pub source_snapshot: Option<i64>,
}

/// The completed jobs of `dest`'s current history that read what `identity` names
/// ([`read_identity`]), newest first.
pub(crate) fn completed_jobs_reading<'a>(
    dest: &'a Table,
    identity: &str,
) -> Vec<CompletedRead<'a>> {
    let md = dest.metadata();
    let mut out: Vec<CompletedRead<'a>> = Vec::new();
    for id in history(dest) {
        let Some(s) = md.snapshot_by_id(id) else {
            continue;
        };
        let props = &s.summary().additional_properties;
        if props.get(MIGRATION_READ_PROPERTY).map(String::as_str) != Some(identity) {
            continue;
        }
        let Some(job) = props.get(MIGRATION_JOB_PROPERTY) else {
            continue;
        };
        if out.iter().any(|r| r.job == job) {
            continue;
        }
        if let Some(at) = ops_core::ops::markers::completed_at(md, job) {
            out.push(CompletedRead {
                job: job.as_str(),
                at,
                source_snapshot: props
                    .get(MIGRATION_SOURCE_SNAPSHOT_PROPERTY)
                    .and_then(|v| v.parse().ok()),
            });
        }
    }
    out
}

/// Live data files of `table` at `snapshot_id`, with their partition spec ids.
pub(crate) async fn live_files(
    table: &Table,
    snapshot_id: Option<i64>,
) -> Result<Vec<(DataFile, i32)>> {
    let Some(id) = snapshot_id else {
        return Ok(Vec::new());
    };
    let Some(snapshot) = table.metadata().snapshot_by_id(id) else {
        return Ok(Vec::new());
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for mf in list.entries() {
        if mf.content != ManifestContentType::Data {
            continue;
        }
        let manifest = mf.load_manifest(table.file_io()).await?;
        for entry in manifest.entries() {
            if entry.is_alive() {
                out.push((entry.data_file().clone(), mf.partition_spec_id));
            }
        }
    }
    Ok(out)
}
