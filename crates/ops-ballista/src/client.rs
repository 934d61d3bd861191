//! The client: submit a plan's tasks to a Ballista cluster and commit their outputs in batch
//! order as they land.
//!
//! Ballista's client polls until the whole job has succeeded and only then fetches results, and
//! a failed job returns none. So the committer does not wait for Ballista's results: it watches
//! the job's prefix for the next task's output ([`crate::outputs`]) and commits its batches as
//! soon as it is there, with ops-datamig's committer ([`MigrationPlan::commit_stream`]: in batch
//! order, tagged, checkpointed). A failed job leaves every task that finished before the failure
//! committed, in order, up to the first task without an output.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use iceberg::table::Table;
use tokio::task::JoinHandle;

use ops_core::CatalogHandle;
use ops_datamig::{MigrationError, MigrationPlan, MigrationResult, TaskOutput};

use crate::error::{ClusterError, Result};
use crate::node::MigrationTasksNode;
use crate::outputs::{
    Found, committed_attempt_folders, output_path, read_output, remove_lost_attempts,
    remove_outputs,
};
use crate::process::session_config;

/// How long a job whose outputs are all committed may still run before its files are cleaned
/// up anyway (an attempt of a task taken for lost may still be writing; it ends within its
/// task's time).
const JOB_END_WAIT: Duration = Duration::from_secs(300);

/// Called when a task's output lands: (task id, tasks landed so far, tasks in the plan).
pub type TaskProgress = Arc<dyn Fn(usize, usize, usize) + Send + Sync>;

/// Runs a [`MigrationPlan`] on a Ballista cluster (see module docs).
#[derive(Clone)]
pub struct ClusterRunner {
    url: String,
    poll: Duration,
    checkpoint: Option<PathBuf>,
    progress: Option<TaskProgress>,
}

impl std::fmt::Debug for ClusterRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterRunner")
            .field("url", &self.url)
            .field("poll", &self.poll)
            .field("checkpoint", &self.checkpoint)
            .finish_non_exhaustive()
    }
}

impl ClusterRunner {
    /// A runner submitting to the scheduler at `url` (`df://HOST:PORT`).
    pub fn new(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("df://").ok_or_else(|| {
            ClusterError::InvalidInput(format!(
                "--cluster takes a Ballista scheduler as df://HOST:PORT, not '{url}'"
            ))
        })?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| {
            ClusterError::InvalidInput(format!(
                "--cluster {url}: give the scheduler's port (df://HOST:PORT)"
            ))
        })?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(ClusterError::InvalidInput(format!(
                "--cluster {url}: expected df://HOST:PORT with a port number"
            )));
        }
        Ok(Self {
            url: url.to_string(),
            poll: Duration::from_millis(500),
            checkpoint: None,
            progress: None,
        })
    }

    /// How often the job's prefix is looked at for the next output (default 500 ms).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// Record progress in this checkpoint file (as `migrate-data commit --checkpoint`).
    pub fn checkpoint(mut self, path: impl Into<PathBuf>) -> Self {
        self.checkpoint = Some(path.into());
        self
    }

    /// Calls `f(task, landed, total)` as each task's output lands (before it is committed).
    pub fn progress(mut self, f: impl Fn(usize, usize, usize) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Submits every task of `plan` as one Ballista job and commits the outputs in batch order
    /// as they land. `source` and `dest` are the plan's catalogs on this host (the executors
    /// open their own).
    pub async fn run(
        &self,
        plan: &MigrationPlan,
        source: &CatalogHandle,
        dest: &CatalogHandle,
    ) -> Result<MigrationResult> {
        let ident = iceberg::TableIdent::from_strs(plan.dest.table.split('.')).map_err(|e| {
            ClusterError::InvalidInput(format!("the plan names table '{}': {e}", plan.dest.table))
        })?;
        let dest_table = dest.catalog().load_table(&ident).await.map_err(|e| {
            ClusterError::InvalidInput(format!("load destination {}: {e}", plan.dest.table))
        })?;
        if plan.tasks.is_empty() {
            return Ok(plan
                .commit(source, dest, Vec::new(), self.checkpoint.clone())
                .await?);
        }
        let job = self.submit(plan).await?;
        let left: JobSlot = Arc::default();
        let watcher = Watcher {
            left: left.clone(),
            plan: plan.clone(),
            dest: dest_table.clone(),
            next: 0,
            job: Some(job),
            job_result: None,
            poll: self.poll,
            progress: self.progress.clone(),
        };
        let outputs = futures::stream::unfold(watcher, |mut w| async move {
            let item = w.next_output().await?;
            Some((item, w))
        });
        let committed = plan
            .commit_stream(source, dest, outputs, self.checkpoint.clone())
            .await;
        let job = left.lock().unwrap_or_else(|e| e.into_inner()).take();
        let result = match committed {
            Ok(r) => r,
            Err(e) => {
                // Nothing more is committed: stop following the job.
                if let Some(job) = job {
                    job.abort();
                }
                return Err(e.into());
            }
        };
        // Every task's output is committed. The Ballista job may still run an attempt of a
        // task whose executor was taken for lost: its files are only deleted once it ended.
        if let Some(job) = job
            && tokio::time::timeout(JOB_END_WAIT, job).await.is_err()
        {
            tracing::warn!(
                job = %plan.job_id,
                "the cluster job still runs {}s after its last output was committed: the files \
                 of lost attempts and the outputs are left (`iceberg-ops table remove-orphans` \
                 collects them once they are old enough)",
                JOB_END_WAIT.as_secs()
            );
            return Ok(result);
        }
        // What the destination's snapshots reference is what was committed; every other
        // attempt's folder holds orphans. Before the outputs go: the attempt markers are kept
        // beside them.
        let orphans_left = match self.remove_lost_attempts(plan, dest, &ident).await {
            Ok(()) => false,
            Err(e) => {
                tracing::warn!(job = %plan.job_id, error = %e, "the files of lost attempts were not removed");
                true
            }
        };
        if orphans_left {
            // The markers say where the orphans are: keep them (and the outputs) for a look.
            tracing::warn!(job = %plan.job_id, "the job's outputs are kept: some orphans remain");
            return Ok(result);
        }
        // Everything is committed: the outputs have served their purpose.
        if let Err(e) = remove_outputs(&dest_table, &plan.job_id).await {
            tracing::warn!(job = %plan.job_id, error = %e, "the job's outputs were not removed");
        }
        Ok(result)
    }

    /// Deletes, task by task, the folders of attempts whose files no snapshot references.
    async fn remove_lost_attempts(
        &self,
        plan: &MigrationPlan,
        dest: &CatalogHandle,
        ident: &iceberg::TableIdent,
    ) -> Result<()> {
        let table = dest.catalog().load_table(ident).await.map_err(|e| {
            ClusterError::Storage(format!("reload destination {}: {e}", plan.dest.table))
        })?;
        let committed =
            committed_attempt_folders(&table, &plan.job_id, plan.dest_snapshot_before).await?;
        for task in &plan.tasks {
            let folders = remove_lost_attempts(&table, &plan.job_id, task.id, &committed).await?;
            if !folders.is_empty() {
                tracing::info!(task = task.id, ?folders, "files of lost attempts removed");
            }
        }
        Ok(())
    }

    /// Submits the job; the handle ends when Ballista reports it finished.
    async fn submit(&self, plan: &MigrationPlan) -> Result<JoinHandle<Result<(), String>>> {
        let config = session_config()
            .with_ballista_job_name(&format!("iceberg-ops migration {}", plan.job_id));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        let scheduler = |e: datafusion::error::DataFusionError| ClusterError::Scheduler {
            url: self.url.clone(),
            message: e.to_string(),
        };
        let ctx = SessionContext::remote_with_state(&self.url, state)
            .await
            .map_err(scheduler)?;
        let node = MigrationTasksNode::new(Arc::new(plan.clone()), (0..plan.tasks.len()).collect())
            .map_err(scheduler)?;
        let df = ctx
            .execute_logical_plan(node.into_logical_plan())
            .await
            .map_err(scheduler)?;
        let url = self.url.clone();
        tracing::info!(job = %plan.job_id, tasks = plan.tasks.len(), scheduler = %url, "submitted");
        Ok(tokio::spawn(async move {
            df.collect()
                .await
                .map(|_| ())
                .map_err(|e| format!("{e} (scheduler {url})"))
        }))
    }
}

/// The Ballista job's client task, handed back by the watcher when the commit is done with it.
type JobSlot = Arc<std::sync::Mutex<Option<JoinHandle<Result<(), String>>>>>;

/// Yields the outputs in task order as they land under the job's prefix.
struct Watcher {
    left: JobSlot,
    plan: MigrationPlan,
    dest: Table,
    next: usize,
    job: Option<JoinHandle<Result<(), String>>>,
    job_result: Option<Result<(), String>>,
    poll: Duration,
    progress: Option<TaskProgress>,
}

impl Watcher {
    async fn next_output(&mut self) -> Option<Result<TaskOutput, MigrationError>> {
        let task = self.next;
        if task >= self.plan.tasks.len() {
            return None;
        }
        loop {
            let found = match read_output(&self.dest, &self.plan.job_id, task).await {
                Ok(f) => f,
                Err(e) => return Some(Err(MigrationError::InvalidInput(e.to_string()))),
            };
            let why_missing = match found {
                Found::Output(out) => {
                    tracing::info!(task, batches = out.batches.len(), "task output landed");
                    self.next += 1;
                    if let Some(p) = &self.progress {
                        p(task, self.next, self.plan.tasks.len());
                    }
                    return Some(Ok(out));
                }
                Found::Absent => "no output".to_string(),
                Found::Unreadable(why) => why,
            };
            if let Some(done) = &self.job_result {
                // The job is over and this task's output is not there: nothing after it can
                // be committed.
                self.next = self.plan.tasks.len();
                let path = output_path(&self.dest, &self.plan.job_id, task);
                return Some(Err(MigrationError::InvalidInput(match done {
                    Err(e) => format!("the cluster job failed before task {task} finished: {e}"),
                    Ok(()) => format!(
                        "the cluster job finished but task {task} left {why_missing} at {path}"
                    ),
                })));
            }
            let joined = match self.job.as_mut() {
                Some(job) => tokio::select! {
                    joined = job => Some(joined),
                    () = tokio::time::sleep(self.poll) => None,
                },
                None => {
                    tokio::time::sleep(self.poll).await;
                    None
                }
            };
            if let Some(joined) = joined {
                self.job = None;
                self.job_result = Some(match joined {
                    Ok(r) => r,
                    Err(e) => Err(format!("the job's client task failed: {e}")),
                });
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // The commit stopped (or finished): the runner waits for the job or stops it.
        if let Some(job) = self.job.take() {
            *self.left.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        }
    }
}
