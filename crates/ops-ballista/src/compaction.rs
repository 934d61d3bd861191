//! `table compact --cluster`: a compaction's groups as tasks on a Ballista cluster.
//!
//! The client plans (ops-maintenance's [`CompactBuilder::prepare`]), writes the plan beside
//! the table's other job files ([`crate::plan_store::store_compaction`]) and submits one task
//! per group. Each task rewrites its group under its attempt's own folder and writes its output
//! (the files, not committed) under the job's prefix. The client commits each group as its
//! output lands, in whatever order they land, as one `replace` snapshot validated as a local
//! compaction's is ([`ops_maintenance::compact::PreparedCompaction::commit_group`]): a group
//! that conflicts with a commit since the plan is reported failed and its files deleted, the
//! others still land. When the job is over, the folders of attempts that no snapshot references
//! (an executor lost mid-task, a refused group) are deleted, then the job's files.

use std::collections::BTreeSet;
use std::time::Instant;

use iceberg::table::Table;

use ops_maintenance::compact::{CompactBuilder, CompactMetrics, PreparedCompaction};

use crate::client::{ClusterRunner, JOB_END_WAIT, STALL_WARN_EVERY};
use crate::error::{ClusterError, Result};
use crate::outputs::{
    Found, committed_attempt_folders, read_compaction_output, remove_lost_attempts, remove_outputs,
};
use crate::plan_store::store_compaction;

/// Transient failures to read outputs in a row before the client gives up.
const MAX_READ_FAILURES: u32 = 10;

impl ClusterRunner {
    /// Runs the compaction `builder` describes with its groups rewritten on the cluster (see
    /// module docs). `catalog` is the table's catalog as the executors' configuration names
    /// it. A dry run plans here and submits nothing.
    pub async fn compact(
        &self,
        builder: CompactBuilder,
        catalog: &str,
    ) -> Result<(Table, CompactMetrics)> {
        let prepared = builder.prepare().await?;
        if prepared.is_dry_run() {
            return Ok(prepared.finish());
        }
        let job_id = new_job_id();
        let Some(job) = prepared.job(&job_id, catalog)? else {
            return Ok(prepared.finish());
        };
        let start = job.start_snapshot_id;
        let groups = job.groups.len();
        let table = prepared.table().clone();
        self.reachable().await?;
        let stored = store_compaction(&table, &job).await?;
        let (running, ballista_plan) = self
            .submit_stored(stored, &format!("iceberg-ops compaction {job_id}"))
            .await?;
        let mut watch = Watch {
            runner: self,
            job_id: &job_id,
            table,
            prepared,
            pending: (0..groups).collect(),
            job: Some(running),
            job_result: None,
        };
        let watched = watch.commit_as_they_land().await;
        let Watch {
            prepared,
            job,
            table,
            ..
        } = watch;
        if let Err(e) = watched {
            // Nothing more is committed: stop the job (a queued job would otherwise run when
            // executors come, writing files nobody commits).
            if let Some(job) = job {
                job.abort();
                self.cancel(&ballista_plan).await;
            }
            return Err(e);
        }
        // A task taken for lost may still be running somewhere: its files go only once the
        // job is over.
        if let Some(job) = job
            && tokio::time::timeout(JOB_END_WAIT, job).await.is_err()
        {
            tracing::warn!(job = %job_id, "the cluster job still runs {}s after its last group \
                was committed: the files of lost attempts are left (`iceberg-ops table \
                remove-orphans` collects them once they are old enough)", JOB_END_WAIT.as_secs());
            return Ok(prepared.finish());
        }
        let current = prepared.table().clone();
        match clean_up(&current, &job_id, start, groups).await {
            Ok(()) => {
                if let Err(e) = remove_outputs(&table, &job_id).await {
                    tracing::warn!(job = %job_id, error = %e, "the job's outputs were not removed");
                }
            }
            Err(e) => tracing::warn!(job = %job_id, error = %e,
                "the files of lost attempts were not removed; the job's outputs are kept"),
        }
        Ok(prepared.finish())
    }
}

/// Deletes the folders of every attempt whose files no snapshot since `start` references.
async fn clean_up(table: &Table, job_id: &str, start: i64, groups: usize) -> Result<()> {
    let committed = committed_attempt_folders(table, job_id, Some(start)).await?;
    for task in 0..groups {
        let folders = remove_lost_attempts(table, job_id, task, &committed).await?;
        if !folders.is_empty() {
            tracing::info!(task, ?folders, "files of lost attempts removed");
        }
    }
    Ok(())
}

/// A job id no other job of the table has: the time and this process.
fn new_job_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("compact-{nanos:x}-{:x}", std::process::id())
}

/// The client's side of a running job.
struct Watch<'a> {
    runner: &'a ClusterRunner,
    job_id: &'a str,
    /// The table as planned (where the outputs are).
    table: Table,
    prepared: PreparedCompaction,
    /// Groups without an output yet.
    pending: BTreeSet<usize>,
    job: Option<tokio::task::JoinHandle<Result<(), String>>>,
    job_result: Option<Result<(), String>>,
}

impl Watch<'_> {
    /// Commits each group as its output lands, until none is pending. Groups the job ends
    /// without, or that stall past the runner's limit, are reported failed; an error is a
    /// commit whose outcome is unknown or a storage that keeps failing.
    async fn commit_as_they_land(&mut self) -> Result<()> {
        let total = self.pending.len();
        let mut read_failures = 0u32;
        let mut waiting_since = Instant::now();
        let mut warned = Instant::now();
        while !self.pending.is_empty() {
            let mut landed = 0;
            for task in self.pending.clone() {
                let found = match read_compaction_output(&self.table, self.job_id, task).await {
                    Ok(f) => {
                        read_failures = 0;
                        f
                    }
                    Err(e)
                        if crate::transient::is_transient(&e)
                            && read_failures < MAX_READ_FAILURES =>
                    {
                        read_failures += 1;
                        tracing::warn!(task, error = %e, "reading a group's output failed; reading it again");
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let Found::Output(out) = found else {
                    continue;
                };
                self.pending.remove(&task);
                landed += 1;
                if let Some(p) = &self.runner.progress {
                    p(task, total - self.pending.len(), total);
                }
                let files = match out.data_files(self.prepared.table()) {
                    Ok(f) => f,
                    Err(e) => {
                        let paths = out.file_paths();
                        ops_core::commit::delete_quietly(self.table.file_io(), &paths).await;
                        self.prepared.fail_group(task, e.to_string());
                        continue;
                    }
                };
                let committed = self.prepared.commit_group(task, out.spec_id, files).await?;
                tracing::info!(task, snapshot = ?committed, "compaction group landed");
            }
            if self.pending.is_empty() {
                break;
            }
            if landed > 0 {
                waiting_since = Instant::now();
                warned = waiting_since;
                continue;
            }
            if let Some(done) = &self.job_result {
                // The job is over: what has not landed will not.
                let why = match done {
                    Err(e) => {
                        format!("the cluster job failed before this group was rewritten: {e}")
                    }
                    Ok(()) => "the cluster job finished without this group's output".to_string(),
                };
                for task in std::mem::take(&mut self.pending) {
                    self.prepared.fail_group(task, why.clone());
                }
                break;
            }
            let joined = match self.job.as_mut() {
                Some(job) => tokio::select! {
                    joined = job => Some(joined),
                    () = tokio::time::sleep(self.runner.poll) => None,
                },
                None => {
                    tokio::time::sleep(self.runner.poll).await;
                    None
                }
            };
            if let Some(joined) = joined {
                self.job = None;
                self.job_result = Some(match joined {
                    Ok(r) => r,
                    Err(e) => Err(format!("the job's client task failed: {e}")),
                });
                continue;
            }
            let waited = waiting_since.elapsed();
            if let Some(limit) = self.runner.stall
                && waited >= limit
            {
                return Err(ClusterError::Job(format!(
                    "no compaction group landed for {}s ({} of {total} still running; \
                     --stall-timeout): the cluster has no executor left, or none can run the \
                     tasks. The groups that landed are committed; run the compaction again",
                    waited.as_secs(),
                    self.pending.len()
                )));
            }
            if warned.elapsed() >= STALL_WARN_EVERY {
                warned = Instant::now();
                tracing::warn!(
                    pending = self.pending.len(),
                    waited_s = waited.as_secs(),
                    "still waiting for compaction groups: is an executor running? (Ballista \
                     keeps the job queued until one is)"
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn job_ids_are_ones_a_folder_can_take() {
        let id = super::new_job_id();
        assert!(id.starts_with("compact-"));
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{id}"
        );
        assert!(id.len() <= 64, "{id}");
    }
}
