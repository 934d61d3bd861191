//! `table compact --cluster`: a compaction's groups as tasks on a Ballista cluster.
//!
//! The client plans (ops-maintenance's [`CompactBuilder::prepare`]), writes the plan beside
//! the table's other job files ([`crate::plan_store::store_compaction`]) and submits one task
//! per group. Each task rewrites its group under its attempt's own folder and writes its output
//! (the files, not committed) under the job's prefix. The client commits the groups as their
//! outputs land, in whatever order, in Java's partial-progress batches (at most
//! `--max-commits` commits, default 10), each one `replace` snapshot validated as a local
//! compaction's is ([`ops_maintenance::compact::PreparedCompaction::commit_groups`]): a commit
//! that conflicts with one since the plan fails its groups, whose files are deleted, and the
//! others still land; a group whose task fails for good says so in its output and fails
//! alone. When the job is over, the folders of attempts that no snapshot references
//! (an executor lost mid-task, a refused group) are deleted, then the job's files.

use std::collections::BTreeSet;
use std::time::Instant;

use iceberg::table::Table;

use ops_maintenance::compact::{
    CompactBuilder, CompactMetrics, PreparedCompaction, RewrittenGroup,
};

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
        if self.interrupted() {
            return Err(ClusterError::Interrupted);
        }
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
        let plan_path = stored.path.clone();
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
            commit_failed: false,
        };
        let watched = watch.commit_as_they_land().await;
        let Watch {
            prepared,
            job,
            table,
            commit_failed,
            ..
        } = watch;
        if let Err(e) = watched {
            // Nothing more is committed: stop the job (a queued job would otherwise run when
            // executors come, writing files nobody commits).
            if let Some(job) = job {
                job.abort();
                self.cancel(&ballista_plan).await;
            }
            // A commit that may have landed keeps every file (its own may be the table's now);
            // otherwise the job is closed and what no snapshot holds is removed.
            if !commit_failed {
                abandon(&prepared, &table, &plan_path, &job_id, start, groups).await;
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
        if let Err(e) = clean_up(&prepared, &table, &job_id, start, groups).await {
            tracing::warn!(job = %job_id, error = %e, "the files of lost attempts or the job's \
                outputs were not all removed (`iceberg-ops table remove-orphans` collects them \
                once they are old enough)");
        }
        Ok(prepared.finish())
    }
}

/// Closes a job the client stops following: removes its plan (a task not started yet then
/// refuses to run, and one still running deletes its own files when it ends: see
/// `exec::run_compaction_task`), then the folders of attempts no snapshot references and the
/// job's outputs. Logged, never an error: the caller is already failing.
async fn abandon(
    prepared: &PreparedCompaction,
    table: &Table,
    plan_path: &str,
    job_id: &str,
    start: i64,
    groups: usize,
) {
    if let Err(e) = table.file_io().delete(plan_path).await {
        tracing::warn!(job = %job_id, error = %e, "the job's plan was not removed: tasks still \
            queued may run (`iceberg-ops table remove-orphans` collects their files)");
        return;
    }
    if let Err(e) = clean_up(prepared, table, job_id, start, groups).await {
        tracing::warn!(job = %job_id, error = %e, "the files of groups not committed were not \
            all removed (`iceberg-ops table remove-orphans` collects them once they are old \
            enough)");
    }
}

/// Deletes the folders of every attempt whose files no snapshot since `start` references, then
/// the job's outputs (under `table`, the table as planned). What is referenced is read from the
/// catalog again (not this process's view: a commit whose answer was lost may be there all the
/// same), and nothing is deleted when that read misses a snapshot this job committed: a stale
/// read (a catalog behind a cache) would take committed folders for lost.
async fn clean_up(
    prepared: &PreparedCompaction,
    table: &Table,
    job_id: &str,
    start: i64,
    groups: usize,
) -> Result<()> {
    let current = prepared.reload().await?;
    let md = current.metadata();
    if let Some(missing) = prepared
        .metrics()
        .snapshot_ids
        .iter()
        .find(|id| md.snapshot_by_id(**id).is_none())
    {
        return Err(ClusterError::Storage(format!(
            "the table as read again lacks snapshot {missing}, which this job committed (a \
             stale read, or an expiry since): no attempt folder is deleted"
        )));
    }
    let committed = committed_attempt_folders(&current, job_id, Some(start)).await?;
    for task in 0..groups {
        let folders = remove_lost_attempts(&current, job_id, task, &committed).await?;
        if !folders.is_empty() {
            tracing::info!(task, ?folders, "files of lost attempts removed");
        }
    }
    remove_outputs(table, job_id).await
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
    /// A commit failed in a way that may have landed: nothing of the job is deleted.
    commit_failed: bool,
}

impl Watch<'_> {
    /// Commits `batch` (nothing when empty); a failure that may have landed is remembered, so
    /// nothing of the job is deleted.
    async fn commit(&mut self, batch: Vec<RewrittenGroup>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let groups: Vec<usize> = batch.iter().map(|g| g.group).collect();
        match self.prepared.commit_groups(batch).await {
            Ok(committed) => {
                tracing::info!(?groups, snapshot = ?committed, "compaction groups committed");
                Ok(())
            }
            Err(e) => {
                self.commit_failed = true;
                Err(e.into())
            }
        }
    }

    /// Commits the groups as their outputs land, in Java's partial-progress batches (at most
    /// `max_commits` commits of equal numbers of groups), until none is pending. Groups whose
    /// task failed for good, or that the job ends without, are reported failed; an error is a
    /// commit that may have landed, a storage that keeps failing, or a stall.
    async fn commit_as_they_land(&mut self) -> Result<()> {
        let total = self.pending.len();
        let per_commit = self.prepared.groups_per_commit();
        let mut landed: Vec<RewrittenGroup> = Vec::new();
        let mut read_failures = 0u32;
        let mut waiting_since = Instant::now();
        let mut warned = Instant::now();
        loop {
            // Checked here, between commits (at least every poll interval), never inside one.
            // What landed is committed first.
            if self.runner.interrupted() {
                self.commit(std::mem::take(&mut landed)).await?;
                return Err(ClusterError::Interrupted);
            }
            let mut new = 0;
            let mut read_failed = false;
            for task in self.pending.clone() {
                let found = match read_compaction_output(&self.table, self.job_id, task).await {
                    Ok(f) => f,
                    Err(e)
                        if crate::transient::is_transient(&e)
                            && read_failures < MAX_READ_FAILURES =>
                    {
                        read_failures += 1;
                        read_failed = true;
                        tracing::warn!(task, error = %e, attempt = read_failures,
                            "reading a group's output failed; reading it again");
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let Found::Output(out) = found else {
                    continue;
                };
                self.pending.remove(&task);
                new += 1;
                if let Some(p) = &self.runner.progress {
                    p(task, total - self.pending.len(), total);
                }
                if let Some(error) = out.error {
                    self.prepared.fail_group(task, error);
                    continue;
                }
                match out.data_files(self.prepared.table()) {
                    Ok(files) => landed.push(RewrittenGroup {
                        group: task,
                        spec_id: out.spec_id,
                        files,
                    }),
                    Err(e) => {
                        let paths = out.file_paths();
                        ops_core::commit::delete_quietly(self.table.file_io(), &paths).await;
                        self.prepared.fail_group(task, e.to_string());
                    }
                }
            }
            if !read_failed {
                read_failures = 0;
            }
            // A full batch as soon as it is there; the last one once nothing is pending.
            while landed.len() >= per_commit || (self.pending.is_empty() && !landed.is_empty()) {
                let batch: Vec<RewrittenGroup> =
                    landed.drain(..landed.len().min(per_commit)).collect();
                self.commit(batch).await?;
            }
            if self.pending.is_empty() {
                return Ok(());
            }
            if new > 0 {
                waiting_since = Instant::now();
                warned = waiting_since;
                continue;
            }
            if read_failed {
                // Backing off, doubling from half a second up to 30 s (as the migration
                // client does): the attempts ride out minutes of an object store's outage.
                let backoff = std::time::Duration::from_millis(500)
                    .saturating_mul(1 << read_failures.saturating_sub(1).min(6))
                    .min(std::time::Duration::from_secs(30));
                tokio::time::sleep(self.runner.poll.max(backoff)).await;
                continue;
            }
            if let Some(done) = &self.job_result {
                // The job is over and every output was read: what has not landed will not.
                let why = match done {
                    Err(e) => {
                        format!("the cluster job failed before this group was rewritten: {e}")
                    }
                    Ok(()) => "the cluster job finished without this group's output".to_string(),
                };
                for task in std::mem::take(&mut self.pending) {
                    self.prepared.fail_group(task, why.clone());
                }
                // The groups that landed are committed at the top of the loop.
                continue;
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
                // What landed is committed before giving up.
                self.commit(std::mem::take(&mut landed)).await?;
                return Err(ClusterError::Job(format!(
                    "no compaction group landed for {}s ({} of {total} still running): the \
                     cluster has no executor left, or none can run the tasks. The groups that \
                     landed are committed; run the compaction again",
                    waited.as_secs(),
                    self.pending.len()
                )));
            }
            if warned.elapsed() >= STALL_WARN_EVERY {
                warned = Instant::now();
                let first: Vec<String> = self
                    .pending
                    .iter()
                    .take(5)
                    .map(|g| self.prepared.group_name(*g))
                    .collect();
                tracing::warn!(
                    pending = self.pending.len(),
                    groups = %first.join(", "),
                    waited_s = waited.as_secs(),
                    "still waiting for compaction groups: Ballista keeps a job queued until an \
                     executor takes its tasks, and runs a lost executor's tasks again only after \
                     the scheduler's --executor-timeout"
                );
            }
        }
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
