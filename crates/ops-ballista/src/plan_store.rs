//! The plan a cluster job runs, stored once beside its outputs; tasks carry only where it is.
//!
//! Ballista sends every task the whole plan of its stage, and a migration plan lists every
//! source file of every task (a 20,000-file source plans to 1.8 MB of JSON): sent with each
//! task, a plan of a few hundred thousand files passes gRPC's 16 MiB message limit, and the
//! scheduler would send it once per task. So the client writes the plan to
//! `<job prefix>/plan-<digest>.json` in the destination's storage before it submits, and the
//! tasks carry a [`StoredPlan`] — the destination, the path, the plan's SHA-256 and its number
//! of tasks, a few hundred bytes whatever the plan's size. An executor reads each job's plan
//! once and keeps the last few; a plan whose digest differs (replaced while the job ran) is
//! refused.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use iceberg::table::Table;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use ops_datamig::MigrationPlan;
use ops_datamig::job::PLAN_FORMAT;
use ops_maintenance::compact::job::CompactionJob;

use crate::error::{ClusterError, Result, io_failed};
use crate::outputs::job_prefix;

/// What a job's tasks do.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum JobKind {
    /// Each task copies a run of a migration's source files ([`MigrationPlan`]).
    #[default]
    Migration,
    /// Each task rewrites one compaction group
    /// ([`ops_maintenance::compact::job::CompactionJob`]).
    Compaction,
}

/// Where a job's plan is, as its tasks carry it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StoredPlan {
    /// What the tasks do.
    #[serde(default)]
    pub kind: JobKind,
    /// The plan's job id.
    pub job_id: String,
    /// The destination's catalog (as the executors' configuration names it).
    pub dest_catalog: String,
    /// The destination table, `NS.T`: the plan is in its storage.
    pub dest_table: String,
    /// The plan's JSON.
    pub path: String,
    /// SHA-256 of that JSON, in hex.
    pub sha256: String,
    /// How many tasks the plan has.
    pub tasks: usize,
}

/// Writes `plan` under its job's prefix in `dest`'s storage (`dest` is the plan's destination).
pub async fn store_plan(dest: &Table, plan: &MigrationPlan) -> Result<StoredPlan> {
    let json = serde_json::to_vec(plan).map_err(|e| {
        ClusterError::Storage(format!("encode the plan of job {}: {e}", plan.job_id))
    })?;
    let (path, sha256) = store_json(dest, &plan.job_id, json).await?;
    Ok(StoredPlan {
        kind: JobKind::Migration,
        job_id: plan.job_id.clone(),
        dest_catalog: plan.dest.catalog.clone(),
        dest_table: plan.dest.table.clone(),
        path,
        sha256,
        tasks: plan.tasks.len(),
    })
}

/// Writes compaction `job` under its job's prefix in its table's storage (`table`).
pub async fn store_compaction(table: &Table, job: &CompactionJob) -> Result<StoredPlan> {
    let json = serde_json::to_vec(job)
        .map_err(|e| ClusterError::Storage(format!("encode compaction job {}: {e}", job.job_id)))?;
    let (path, sha256) = store_json(table, &job.job_id, json).await?;
    Ok(StoredPlan {
        kind: JobKind::Compaction,
        job_id: job.job_id.clone(),
        dest_catalog: job.catalog.clone(),
        dest_table: job.table.clone(),
        path,
        sha256,
        tasks: job.groups.len(),
    })
}

/// Writes a plan's `json` under job `job_id`'s prefix; returns its path and digest.
async fn store_json(dest: &Table, job_id: &str, json: Vec<u8>) -> Result<(String, String)> {
    let sha256 = hex(&Sha256::digest(&json));
    let path = format!("{}plan-{}.json", job_prefix(dest, job_id), &sha256[..16]);
    // A resumed job stores the same plan at the same path: left as it is, since executors of
    // the earlier attempt may be reading it (a file system overwrites in place).
    if !already_stored(dest, &path, &sha256).await {
        dest.file_io()
            .new_output(&path)
            .map_err(io_failed(format!("write {path}")))?
            .write(Bytes::from(json))
            .await
            .map_err(io_failed(format!("write {path}")))?;
    }
    Ok((path, sha256))
}

/// The compaction job `stored` names, read through its table's storage (`table`), if it is
/// the one the job was submitted with.
pub async fn load_compaction(table: &Table, stored: &StoredPlan) -> Result<CompactionJob> {
    let path = &stored.path;
    let bytes = read_stored(table, stored).await?;
    check_digest(stored, &bytes)?;
    let job = CompactionJob::from_json(&bytes)
        .map_err(|e| ClusterError::InvalidInput(format!("the plan at {path}: {e}")))?;
    if job.job_id != stored.job_id || job.groups.len() != stored.tasks {
        return Err(ClusterError::Storage(format!(
            "the plan at {path} is compaction job {} with {} groups, not job {} with {}",
            job.job_id,
            job.groups.len(),
            stored.job_id,
            stored.tasks
        )));
    }
    Ok(job)
}

/// The bytes at the path `stored` names, read through `table`'s storage.
async fn read_stored(table: &Table, stored: &StoredPlan) -> Result<Bytes> {
    let path = &stored.path;
    table
        .file_io()
        .new_input(path)
        .map_err(io_failed(format!("read the plan {path}")))?
        .read()
        .await
        .map_err(io_failed(format!("read the plan {path}")))
}

/// Refuses `bytes` unless they are the plan `stored` names.
fn check_digest(stored: &StoredPlan, bytes: &[u8]) -> Result<()> {
    let actual = hex(&Sha256::digest(bytes));
    if actual != stored.sha256 {
        return Err(ClusterError::Storage(format!(
            "the plan at {} is not the one job {} was submitted with (SHA-256 {actual},              expected {}): it was replaced while the job ran; run the job again from its client",
            stored.path, stored.job_id, stored.sha256
        )));
    }
    Ok(())
}

/// Whether `path` holds bytes of digest `sha256` (anything unreadable is written again).
async fn already_stored(dest: &Table, path: &str, sha256: &str) -> bool {
    let io = dest.file_io();
    if !io.exists(path).await.unwrap_or(false) {
        return false;
    }
    let Ok(input) = io.new_input(path) else {
        return false;
    };
    match input.read().await {
        Ok(bytes) => hex(&Sha256::digest(&bytes)) == sha256,
        Err(_) => false,
    }
}

/// Plans this process read lately, newest last.
static PLANS: Mutex<Vec<(StoredPlan, Arc<MigrationPlan>)>> = Mutex::new(Vec::new());
/// Plans kept: an executor runs the tasks of one job, or a few at once.
const KEPT: usize = 4;

/// The plan `stored` names, read through `dest`'s storage (the table it names) or kept from an
/// earlier task of the job.
pub async fn load_plan(dest: &Table, stored: &StoredPlan) -> Result<Arc<MigrationPlan>> {
    if let Some(plan) = kept(stored) {
        return Ok(plan);
    }
    let bytes = read_stored(dest, stored).await?;
    let plan = check(stored, &bytes)?;
    let plan = Arc::new(plan);
    let mut plans = PLANS.lock().unwrap_or_else(|e| e.into_inner());
    plans.retain(|(s, _)| s != stored);
    plans.push((stored.clone(), plan.clone()));
    if plans.len() > KEPT {
        plans.remove(0);
    }
    Ok(plan)
}

fn kept(stored: &StoredPlan) -> Option<Arc<MigrationPlan>> {
    PLANS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(s, _)| s == stored)
        .map(|(_, p)| p.clone())
}

/// The plan in `bytes`, if it is the one `stored` names.
fn check(stored: &StoredPlan, bytes: &[u8]) -> Result<MigrationPlan> {
    let path = &stored.path;
    check_digest(stored, bytes)?;
    let mut plan: MigrationPlan = serde_json::from_slice(bytes)
        .map_err(|e| ClusterError::Storage(format!("the plan at {path} is unreadable: {e}")))?;
    plan.share_paths();
    if plan.format != PLAN_FORMAT {
        return Err(ClusterError::InvalidInput(format!(
            "the plan at {path} is in plan format {}, but this process reads format \
             {PLAN_FORMAT}: run the same iceberg-ops version on the client and every executor",
            plan.format
        )));
    }
    if plan.job_id != stored.job_id || plan.tasks.len() != stored.tasks {
        return Err(ClusterError::Storage(format!(
            "the plan at {path} is job {} with {} tasks, not job {} with {}",
            plan.job_id,
            plan.tasks.len(),
            stored.job_id,
            stored.tasks
        )));
    }
    Ok(plan)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(plan: &MigrationPlan, json: &[u8]) -> StoredPlan {
        StoredPlan {
            kind: JobKind::Migration,
            job_id: plan.job_id.clone(),
            dest_catalog: plan.dest.catalog.clone(),
            dest_table: plan.dest.table.clone(),
            path: "s3://b/t/iceberg-ops-jobs/job-1/plan-0.json".into(),
            sha256: hex(&Sha256::digest(json)),
            tasks: plan.tasks.len(),
        }
    }

    #[test]
    fn the_plan_read_back_is_the_one_stored() -> Result<()> {
        let plan = MigrationPlan::example();
        let json = serde_json::to_vec(&plan).map_err(|e| ClusterError::Storage(e.to_string()))?;
        let back = check(&stored(&plan, &json), &json)?;
        assert_eq!(back.tasks, plan.tasks);
        Ok(())
    }

    #[test]
    fn a_replaced_or_foreign_plan_is_refused() -> Result<()> {
        let plan = MigrationPlan::example();
        let json = serde_json::to_vec(&plan).map_err(|e| ClusterError::Storage(e.to_string()))?;
        let s = stored(&plan, &json);
        let mut other = plan.clone();
        other.batch_rows += 1;
        let replaced =
            serde_json::to_vec(&other).map_err(|e| ClusterError::Storage(e.to_string()))?;
        let err = check(&s, &replaced)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("replaced while the job ran"), "{err}");
        let mut foreign = s.clone();
        foreign.job_id = "job-2".into();
        let err = check(&foreign, &json)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("not job job-2"), "{err}");
        Ok(())
    }
}
