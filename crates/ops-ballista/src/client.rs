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
use std::time::{Duration, Instant};

use ballista::prelude::SessionContextExt;
use ballista_core::config::BALLISTA_CLIENT_PULL;
use ballista_core::execution_plans::DistributedQueryExec;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::CancelJobParams;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::utils::create_grpc_client_endpoint;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use datafusion_proto::protobuf::LogicalPlanNode;
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
use crate::plan_store::{StoredPlan, store_plan};
use crate::process::session_config;

/// How long a job whose outputs are all committed may still run before its files are cleaned
/// up anyway (an attempt of a task taken for lost may still be writing; it ends within its
/// task's time).
pub(crate) const JOB_END_WAIT: Duration = Duration::from_secs(300);

/// How often the client says which task it still waits for, while none lands.
pub(crate) const STALL_WARN_EVERY: Duration = Duration::from_secs(60);

/// How long cancelling the Ballista job may take before the client gives up on it.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(15);

/// Default of [`ClusterRunner::stall_timeout`]: an hour without the next task's output.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Called when a task's output lands: (task id, tasks landed so far, tasks in the plan).
pub type TaskProgress = Arc<dyn Fn(usize, usize, usize) + Send + Sync>;

/// Runs a [`MigrationPlan`] on a Ballista cluster (see module docs).
#[derive(Clone)]
pub struct ClusterRunner {
    url: String,
    pub(crate) poll: Duration,
    checkpoint: Option<PathBuf>,
    pub(crate) progress: Option<TaskProgress>,
    pub(crate) stall: Option<Duration>,
    /// Turns true when the client is told to stop (see [`Self::interrupt`]).
    pub(crate) interrupt: Option<tokio::sync::watch::Receiver<bool>>,
}

impl std::fmt::Debug for ClusterRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterRunner")
            .field("url", &self.url)
            .field("poll", &self.poll)
            .field("checkpoint", &self.checkpoint)
            .field("stall", &self.stall)
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
            stall: Some(DEFAULT_STALL_TIMEOUT),
            interrupt: None,
        })
    }

    /// Whether the scheduler accepts connections (within 10 s): ask before planning, so a
    /// wrong `--cluster` address creates no destination and marks no job.
    pub async fn reachable(&self) -> Result<()> {
        let addr = self.url.trim_start_matches("df://").to_string();
        let unreachable = |why: String| ClusterError::Scheduler {
            url: self.url.clone(),
            message: format!(
                "cannot be reached ({why}); nothing was planned or written. Start one \
                 (`iceberg-ops cluster scheduler --bind HOST:PORT`) or correct --cluster"
            ),
        };
        match tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect(addr.as_str()),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable("no answer within 10 s".into())),
        }
    }

    /// Gives up when the next task's output has not landed for this long (default an hour;
    /// `None` waits for ever). Ballista keeps a job whose executors are all gone queued, and
    /// its client waits with it: without a limit a migration whose cluster lost every executor
    /// never ends. What landed before stays committed, and the same job resumes.
    pub fn stall_timeout(mut self, limit: Option<Duration>) -> Self {
        self.stall = limit;
        self
    }

    /// Stops at the next safe point (never inside a commit) once `stop` turns true, and
    /// cancels the job: a compaction removes the files of the groups not committed
    /// ([`ClusterError::Interrupted`]); a migration keeps its checkpoint, so the same command
    /// resumes it. The CLI turns it on at SIGINT or SIGTERM.
    pub fn interrupt(mut self, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        self.interrupt = Some(stop);
        self
    }

    /// Whether the client was told to stop.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|r| *r.borrow())
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
        // A job that is over (a run killed after its last commit) runs no task again.
        if let Some(done) = plan
            .finished(source, dest, self.checkpoint.as_deref())
            .await?
        {
            return Err(done.into());
        }
        let (job, ballista_plan) = self.submit(plan, &dest_table).await?;
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
            stall: self.stall,
            later_landed: std::collections::BTreeSet::new(),
            read_failures: 0,
            waiting_since: Instant::now(),
            warned: Instant::now(),
            interrupt: self.interrupt.clone(),
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
                // Nothing more is committed: stop following the job, and stop the job itself
                // (a job queued for lack of executors would otherwise run when they come,
                // writing files nobody commits).
                if let Some(job) = job {
                    job.abort();
                    self.cancel(&ballista_plan).await;
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

    /// Asks the scheduler to cancel the Ballista job `ballista_plan` submitted (logged, never
    /// an error: the caller is already failing).
    pub(crate) async fn cancel(&self, ballista_plan: &Arc<dyn ExecutionPlan>) {
        let Some(job_id) = ballista_job_id(ballista_plan) else {
            tracing::warn!(
                scheduler = %self.url,
                plan = %datafusion::physical_plan::displayable(ballista_plan.as_ref()).one_line(),
                "the Ballista job was not accepted yet, so it is not cancelled"
            );
            return;
        };
        let url = format!("http://{}", self.url.trim_start_matches("df://"));
        // Bounded: the client is already failing, and a scheduler that does not answer must
        // not keep it from saying why.
        let cancelled = tokio::time::timeout(CANCEL_TIMEOUT, async {
            let channel = create_grpc_client_endpoint(url.clone(), None)
                .map_err(|e| e.to_string())?
                .connect()
                .await
                .map_err(|e| e.to_string())?;
            SchedulerGrpcClient::new(channel)
                .cancel_job(CancelJobParams {
                    job_id: job_id.clone(),
                })
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the scheduler did not answer within {}s",
                CANCEL_TIMEOUT.as_secs()
            ))
        });
        match cancelled {
            // Ballista drops the job's queued tasks; in pull mode it cannot reach the executors
            // to stop running ones, which finish and write files nothing will commit.
            Ok(_) => tracing::info!(
                ballista_job = %job_id,
                "the Ballista job was cancelled: its queued tasks will not run (tasks already \
                 running finish; files nothing commits are collected at the end of the next \
                 run of this job, or by `iceberg-ops table remove-orphans`)"
            ),
            Err(e) => tracing::warn!(
                ballista_job = %job_id,
                scheduler = %self.url,
                error = %e,
                "the Ballista job could not be cancelled: it may still run its tasks (their \
                 files are collected by `iceberg-ops table remove-orphans`)"
            ),
        }
    }

    /// Submits the job; the handle ends when Ballista reports it finished. Also returns
    /// Ballista's plan of the job, which knows its id once the scheduler accepted it.
    async fn submit(
        &self,
        plan: &MigrationPlan,
        dest: &Table,
    ) -> Result<(JoinHandle<Result<(), String>>, Arc<dyn ExecutionPlan>)> {
        // The tasks carry where the plan is, not the plan (see crate::plan_store).
        let stored = store_plan(dest, plan).await?;
        self.submit_stored(stored, &format!("iceberg-ops migration {}", plan.job_id))
            .await
    }

    /// Submits every task of the plan `stored` names as one Ballista job called `name` (see
    /// [`Self::submit`]).
    pub(crate) async fn submit_stored(
        &self,
        stored: StoredPlan,
        name: &str,
    ) -> Result<(JoinHandle<Result<(), String>>, Arc<dyn ExecutionPlan>)> {
        let (job_id, tasks) = (stored.job_id.clone(), stored.tasks);
        // Pull tracking: the scheduler answers the submission with the job's id at once (push
        // tracking learns it from the first status update, which a job queued for lack of
        // executors never sends), so a stalled job can be cancelled.
        let config = session_config()
            .with_ballista_job_name(name)
            .set_bool(BALLISTA_CLIENT_PULL, true);
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
        let node = MigrationTasksNode::new(stored, (0..tasks).collect()).map_err(scheduler)?;
        let df = ctx
            .execute_logical_plan(node.into_logical_plan())
            .await
            .map_err(scheduler)?;
        let task_ctx = df.task_ctx();
        let ballista_plan = df.create_physical_plan().await.map_err(scheduler)?;
        let url = self.url.clone();
        tracing::info!(job = %job_id, tasks, scheduler = %url, "submitted");
        let running = ballista_plan.clone();
        Ok((
            tokio::spawn(async move {
                datafusion::physical_plan::collect(running, Arc::new(task_ctx))
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("{e} (scheduler {url})"))
            }),
            ballista_plan,
        ))
    }
}

/// The id the scheduler gave the job `plan` submits (its `DistributedQueryExec`, which
/// DataFusion's optimizer may have wrapped), once the scheduler accepted it.
fn ballista_job_id(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
    let mut node = Arc::clone(plan);
    loop {
        if let Some(d) = node
            .as_any()
            .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
        {
            return d.job_id();
        }
        let next = Arc::clone(node.children().first()?);
        node = next;
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
    /// Give up after this long without the next output (and without new outputs of the
    /// tasks after it).
    stall: Option<Duration>,
    /// Tasks after the next one whose outputs were seen when the stall limit was reached.
    later_landed: std::collections::BTreeSet<usize>,
    /// Transient failures to read the next output in a row.
    read_failures: u32,
    /// Since the last output landed (or the job was submitted).
    waiting_since: Instant,
    /// When the client last said what it waits for.
    warned: Instant,
    /// Turns true when the client is told to stop ([`ClusterRunner::interrupt`]).
    interrupt: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Watcher {
    async fn next_output(&mut self) -> Option<Result<TaskOutput, MigrationError>> {
        let task = self.next;
        if task >= self.plan.tasks.len() {
            return None;
        }
        loop {
            // The committer asks for the next output between commits: told to stop, it stops
            // here, and the runner cancels the job. What landed stays committed and the same
            // command resumes the job.
            if self.interrupt.as_ref().is_some_and(|r| *r.borrow()) {
                self.next = self.plan.tasks.len();
                return Some(Err(MigrationError::InvalidInput(format!(
                    "interrupted before task {task} was committed: the batches committed stay, \
                     and the same command resumes the job"
                ))));
            }
            let found = match read_output(&self.dest, &self.plan.job_id, task).await {
                Ok(f) => {
                    self.read_failures = 0;
                    f
                }
                // A storage hiccup while polling is polled through: the output is read again
                // at the next poll. Only a lasting or permanent failure ends the commit (and,
                // with it, the job).
                Err(e)
                    if crate::transient::is_transient(&e)
                        && self.read_failures < MAX_READ_FAILURES =>
                {
                    self.read_failures += 1;
                    tracing::warn!(
                        task,
                        error = %e,
                        attempt = self.read_failures,
                        "reading the task's output failed; reading it again"
                    );
                    // Backing off, doubling from half a second up to 30 s: the ten attempts
                    // ride out about two and a half minutes of an object store's outage.
                    let backoff = Duration::from_millis(500)
                        .saturating_mul(1 << (self.read_failures - 1).min(6))
                        .min(Duration::from_secs(30));
                    tokio::time::sleep(self.poll.max(backoff)).await;
                    continue;
                }
                Err(e) => return Some(Err(MigrationError::InvalidInput(e.to_string()))),
            };
            let why_missing = match found {
                Found::Output(out) => {
                    tracing::info!(task, batches = out.batches.len(), "task output landed");
                    self.next += 1;
                    // Tasks up to this one are no longer "later" ones.
                    self.later_landed = self.later_landed.split_off(&self.next);
                    self.waiting_since = Instant::now();
                    self.warned = self.waiting_since;
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
                continue;
            }
            let waited = self.waiting_since.elapsed();
            if let Some(limit) = self.stall
                && waited >= limit
                && !self.later_tasks_progressed(task).await
            {
                self.next = self.plan.tasks.len();
                return Some(Err(MigrationError::InvalidInput(format!(
                    "no output of task {task} for {}s, nor of any later task (--stall-timeout; \
                     0 waits forever): the cluster has no executor left, or none can run the \
                     task; see the executors' logs, start executors (`iceberg-ops cluster \
                     executor --scheduler HOST:PORT`) and run the same command to resume, with \
                     a longer --stall-timeout if the task is only slow",
                    waited.as_secs()
                ))));
            }
            if self.warned.elapsed() >= STALL_WARN_EVERY {
                self.warned = Instant::now();
                tracing::warn!(
                    task,
                    waited_s = waited.as_secs(),
                    "still waiting for the task's output: is an executor running? (Ballista \
                     keeps the job queued until one is)"
                );
            }
        }
    }
}

/// Later tasks whose outputs are looked for when the next task stalls (those not seen yet).
const LATER_PROBED: usize = 64;

/// Transient failures to read the next output in a row before the commit gives up.
const MAX_READ_FAILURES: u32 = 10;

impl Watcher {
    /// Whether an output of a task after `task` landed since this was last asked (the cluster
    /// is busy, only `task` is slow): then the stall clock starts again. Looks at the first
    /// [`LATER_PROBED`] later tasks not seen yet, so progress shows however far the cluster
    /// got past the slow task.
    async fn later_tasks_progressed(&mut self, task: usize) -> bool {
        let unseen: Vec<usize> = (task + 1..self.plan.tasks.len())
            .filter(|t| !self.later_landed.contains(t))
            .take(LATER_PROBED)
            .collect();
        let mut landed = 0;
        for later in unseen {
            if let Ok(Found::Output(_)) = read_output(&self.dest, &self.plan.job_id, later).await {
                self.later_landed.insert(later);
                landed += 1;
            }
        }
        if landed > 0 {
            tracing::info!(
                task,
                later_outputs = self.later_landed.len(),
                "the next task is slow, but later ones land: still waiting"
            );
            self.waiting_since = Instant::now();
        }
        landed > 0
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
