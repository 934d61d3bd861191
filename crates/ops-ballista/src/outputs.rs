//! Task outputs under the job's prefix in the destination's storage.
//!
//! Ballista hands a job's results to its client only once the whole job has succeeded, and a
//! failed job returns none. So a task's output does not travel only through Ballista: the
//! executor writes it to `<destination location>/iceberg-ops-jobs/<job id>/task-<id>.json`
//! through the destination's `FileIO` (the same store and credentials the data files use), and
//! the committer reads it from there as soon as it lands. A retried task finds its output there
//! and returns it instead of writing its files again.

use std::collections::HashSet;

use bytes::Bytes;
use iceberg::table::Table;

use ops_datamig::TaskOutput;
use ops_maintenance::compact::job::CompactionOutput;

use crate::error::{ClusterError, Result, io_failed};

/// The folder under a table's location that holds the jobs' outputs.
pub const JOBS_DIR: &str = "iceberg-ops-jobs";

/// The prefix of a job's outputs (ends with `/`).
pub fn job_prefix(dest: &Table, job_id: &str) -> String {
    let location = dest.metadata().location().trim_end_matches('/');
    format!("{location}/{JOBS_DIR}/{job_id}/")
}

/// Where task `task`'s output is written.
pub fn output_path(dest: &Table, job_id: &str, task: usize) -> String {
    format!("{}task-{task:06}.json", job_prefix(dest, job_id))
}

/// What reading an output found.
#[derive(Debug)]
pub enum Found<T = TaskOutput> {
    /// The output, of this job.
    Output(T),
    /// No output yet.
    Absent,
    /// A file that does not parse: still being written, or damaged. Why, in words.
    Unreadable(String),
}

/// Writes `out` (one object: a store's PUT is atomic, so a reader sees all of it or nothing).
pub async fn write_output(dest: &Table, out: &TaskOutput) -> Result<()> {
    write_json(dest, &out.job_id, out.task, out).await
}

/// Writes compaction task output `out` (as [`write_output`]).
pub async fn write_compaction_output(table: &Table, out: &CompactionOutput) -> Result<()> {
    write_json(table, &out.job_id, out.task, out).await
}

/// Writes `out` as task `task`'s output of job `job_id`, in one object.
async fn write_json(
    table: &Table,
    job_id: &str,
    task: usize,
    out: &impl serde::Serialize,
) -> Result<()> {
    let path = output_path(table, job_id, task);
    let json = serde_json::to_vec(out)
        .map_err(|e| ClusterError::Storage(format!("encode the output of task {task}: {e}")))?;
    table
        .file_io()
        .new_output(&path)
        .map_err(io_failed(format!("write {path}")))?
        .write(Bytes::from(json))
        .await
        .map_err(io_failed(format!("write {path}")))
}

/// The text at `path`: `None` when absent, `Err(why)` when not UTF-8.
async fn read_text(dest: &Table, path: &str) -> Result<Option<Result<String, String>>> {
    let io = dest.file_io();
    let exists = io
        .exists(path)
        .await
        .map_err(io_failed(format!("look for {path}")))?;
    if !exists {
        return Ok(None);
    }
    let bytes = io
        .new_input(path)
        .map_err(io_failed(format!("read {path}")))?
        .read()
        .await
        .map_err(io_failed(format!("read {path}")))?;
    Ok(Some(
        String::from_utf8(bytes.to_vec()).map_err(|e| format!("{path} is not UTF-8: {e}")),
    ))
}

/// Reads task `task`'s output of compaction job `job_id`, if it is there.
pub async fn read_compaction_output(
    table: &Table,
    job_id: &str,
    task: usize,
) -> Result<Found<CompactionOutput>> {
    read_parsed(table, job_id, task, |text| {
        CompactionOutput::from_json(text)
            .map(|out| (out.job_id.clone(), out.task, out))
            .map_err(|e| e.to_string())
    })
    .await
}

/// Reads task `task`'s output of job `job_id`, if it is there.
pub async fn read_output(dest: &Table, job_id: &str, task: usize) -> Result<Found> {
    read_parsed(dest, job_id, task, |text| {
        TaskOutput::from_json(text)
            .map(|out| (out.job_id.clone(), out.task, out))
            .map_err(|e| e.to_string())
    })
    .await
}

/// Reads task `task`'s output of job `job_id` with `parse` (the output, with the job and task
/// it names); an output of another task or job is an error.
async fn read_parsed<T>(
    table: &Table,
    job_id: &str,
    task: usize,
    parse: impl FnOnce(&str) -> std::result::Result<(String, usize, T), String>,
) -> Result<Found<T>> {
    let path = output_path(table, job_id, task);
    let text = match read_text(table, &path).await? {
        None => return Ok(Found::Absent),
        Some(Err(why)) => return Ok(Found::Unreadable(why)),
        Some(Ok(t)) => t,
    };
    match parse(&text) {
        Ok((job, t, out)) if job == job_id && t == task => Ok(Found::Output(out)),
        Ok((job, t, _)) => Err(ClusterError::Storage(format!(
            "{path} holds the output of task {t} of job {job}, not task {task} of job {job_id}"
        ))),
        Err(e) => Ok(Found::Unreadable(format!("{path}: {e}"))),
    }
}

/// Most attempts of one task looked for: Ballista gives up on a task long before.
const MAX_ATTEMPTS: usize = 1000;

/// Where the marker of attempt `attempt` of task `task` is written.
fn attempt_path(dest: &Table, job_id: &str, task: usize, attempt: usize) -> String {
    format!(
        "{}attempts/task-{task:06}-{attempt}",
        job_prefix(dest, job_id)
    )
}

/// Starts an attempt of task `task`: claims the first attempt number without a marker, writes
/// its marker (holding the attempt's data folder) and returns that folder, under the
/// destination's data location: `<data>/iceberg-ops-<job>/task-<task>-<attempt>-<claim>`. Every file
/// the attempt writes goes below it, so the files of an attempt that was lost (its executor
/// died) are one prefix, deleted at the end of the job ([`remove_lost_attempts`]).
///
/// The marker is written before any data file. The folder's name ends with a suffix of this
/// claim alone (the time and the process), so two attempts claiming the same number at the same
/// instant (only a task rerun while its first attempt is still starting) never share a folder:
/// an attempt that deletes its own folder (its job is over, or its group failed for good)
/// cannot delete the files of another that was committed. The marker names the last claim; the
/// other's files, if nothing commits them, are left for `remove-orphans`.
pub async fn claim_attempt(dest: &Table, job_id: &str, task: usize) -> Result<String> {
    let io = dest.file_io();
    for attempt in 0..MAX_ATTEMPTS {
        let marker = attempt_path(dest, job_id, task, attempt);
        let exists = io
            .exists(&marker)
            .await
            .map_err(io_failed(format!("look for {marker}")))?;
        if exists {
            continue;
        }
        let claim = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let folder = format!(
            "{}/iceberg-ops-{job_id}/task-{task:06}-{attempt}-{claim:x}{:x}",
            ops_datamig::data_location(dest)?,
            std::process::id()
        );
        io.new_output(&marker)
            .map_err(io_failed(format!("write {marker}")))?
            .write(Bytes::from(folder.clone()))
            .await
            .map_err(io_failed(format!("write {marker}")))?;
        return Ok(folder);
    }
    Err(ClusterError::Storage(format!(
        "task {task} of job {job_id} has {MAX_ATTEMPTS} attempts already"
    )))
}

/// The attempt folders (`…/iceberg-ops-<job>/task-<task>-<attempt>-<claim>`) holding a data file that
/// any snapshot of `dest` references — live, replaced or deleted since, in whichever manifest
/// written since the job began (`before`: the destination's snapshot before the job). This is
/// the destination's own record of what was committed: an output file read now may be that of
/// another attempt of the same task that finished later (two attempts of one task run at once
/// when its executor was taken for lost while it still ran), and a later compaction or expiry
/// may have replaced the job's files while another writer's snapshot still holds them.
pub async fn committed_attempt_folders(
    dest: &Table,
    job_id: &str,
    before: Option<i64>,
) -> Result<HashSet<String>> {
    let md = dest.metadata();
    let io = dest.file_io();
    // Manifests that can hold the job's files were written by the job's commits or later ones.
    // A v1 table numbers every snapshot and manifest 0: there every manifest is read (were
    // they skipped, the committed attempts would be taken for lost and their files deleted).
    let since = match md.format_version() {
        iceberg::spec::FormatVersion::V1 => i64::MIN,
        _ => before
            .and_then(|id| md.snapshot_by_id(id))
            .map_or(i64::MIN, |s| s.sequence_number()),
    };
    let marker = format!("/iceberg-ops-{job_id}/");
    let mut manifests_seen = HashSet::new();
    let mut folders = HashSet::new();
    for snapshot in md.snapshots().filter(|s| s.sequence_number() > since) {
        let list = dest
            .manifest_list_reader(snapshot)
            .load()
            .await
            .map_err(|e| {
                ClusterError::Storage(format!(
                    "read a manifest list of {job_id}'s destination: {e}"
                ))
            })?;
        for mf in list.entries() {
            if mf.sequence_number <= since || !manifests_seen.insert(mf.manifest_path.clone()) {
                continue;
            }
            let manifest = mf
                .load_manifest(io)
                .await
                .map_err(|e| ClusterError::Storage(format!("read {}: {e}", mf.manifest_path)))?;
            for entry in manifest.entries() {
                if let Some(folder) = attempt_folder(entry.data_file().file_path(), &marker) {
                    folders.insert(folder);
                }
            }
        }
    }
    Ok(folders)
}

/// Whether `folder` is one [`claim_attempt`] makes for attempt `attempt` of task `task` of job
/// `job_id` (`…/iceberg-ops-<job>/task-<task>-<attempt>-<claim>`, or without the claim as
/// earlier versions named it).
fn is_attempt_folder(folder: &str, job_id: &str, task: usize, attempt: usize) -> bool {
    let Some((parent, name)) = folder.rsplit_once('/') else {
        return false;
    };
    let stem = format!("task-{task:06}-{attempt}");
    parent.ends_with(&format!("/iceberg-ops-{job_id}"))
        && (name == stem
            || name
                .strip_prefix(&stem)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|claim| {
                    !claim.is_empty() && claim.chars().all(|c| c.is_ascii_hexdigit())
                }))
}

/// The attempt folder of a data file written under `marker` (`/iceberg-ops-<job>/`).
fn attempt_folder(path: &str, marker: &str) -> Option<String> {
    let start = path.find(marker)? + marker.len();
    let end = path[start..].find('/')? + start;
    Some(path[..end].to_string())
}

/// Deletes the data folders of task `task`'s attempts that hold no committed file
/// (`committed`: [`committed_attempt_folders`]). Returns the folders deleted.
pub async fn remove_lost_attempts(
    dest: &Table,
    job_id: &str,
    task: usize,
    committed: &HashSet<String>,
) -> Result<Vec<String>> {
    let io = dest.file_io();
    let mut removed = Vec::new();
    for attempt in 0..MAX_ATTEMPTS {
        let marker = attempt_path(dest, job_id, task, attempt);
        let exists = io
            .exists(&marker)
            .await
            .map_err(io_failed(format!("look for {marker}")))?;
        if !exists {
            break;
        }
        let bytes = io
            .new_input(&marker)
            .map_err(io_failed(format!("read {marker}")))?
            .read()
            .await
            .map_err(io_failed(format!("read {marker}")))?;
        let folder = String::from_utf8_lossy(&bytes)
            .trim_end_matches('/')
            .to_string();
        if !is_attempt_folder(&folder, job_id, task, attempt) {
            // Not a folder this job made: never delete it.
            return Err(ClusterError::Storage(format!(
                "{marker} names {folder}, not a data folder of attempt {attempt} of task {task}"
            )));
        }
        if committed.contains(&folder) {
            continue;
        }
        let prefix = format!("{folder}/");
        io.delete_prefix(&prefix)
            .await
            .map_err(|e| ClusterError::Storage(format!("remove {prefix}: {e}")))?;
        tracing::info!(task, attempt, folder = %prefix, "removed the files of a lost attempt");
        removed.push(prefix);
    }
    Ok(removed)
}

/// Removes the job's outputs (after its last batch is committed).
pub async fn remove_outputs(dest: &Table, job_id: &str) -> Result<()> {
    let prefix = job_prefix(dest, job_id);
    dest.file_io()
        .delete_prefix(&prefix)
        .await
        .map_err(|e| ClusterError::Storage(format!("remove {prefix}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::attempt_folder;

    #[test]
    fn only_folders_an_attempt_claims_are_taken_for_one() {
        use super::is_attempt_folder;
        let ok = |f: &str| is_attempt_folder(f, "j1", 3, 1);
        assert!(ok(
            "s3://b/t/data/iceberg-ops-j1/task-000003-1-18eea9d6ac8f09a853a4"
        ));
        assert!(ok("s3://b/t/data/iceberg-ops-j1/task-000003-1"));
        assert!(!ok("s3://b/t/data/iceberg-ops-j1/task-000003-10"));
        assert!(!ok("s3://b/t/data/iceberg-ops-j1/task-000003-1-"));
        assert!(!ok("s3://b/t/data/iceberg-ops-j1/task-000003-1-x/../.."));
        assert!(!ok("s3://b/t/data/iceberg-ops-j2/task-000003-1-ab"));
        assert!(!ok("s3://b/t/data/region=eu"));
    }

    #[test]
    fn a_data_file_names_its_attempt_folder() {
        let m = "/iceberg-ops-j1/";
        assert_eq!(
            attempt_folder(
                "s3://b/t/data/iceberg-ops-j1/task-000003-1/region=eu/f.parquet",
                m
            )
            .as_deref(),
            Some("s3://b/t/data/iceberg-ops-j1/task-000003-1")
        );
        assert_eq!(
            attempt_folder("s3://b/t/data/iceberg-ops-j2/task-000003-1/f.parquet", m),
            None
        );
        assert_eq!(
            attempt_folder("s3://b/t/data/iceberg-ops-j1/f.parquet", m),
            None
        );
    }
}
