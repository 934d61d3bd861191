//! The physical node: one partition per task; executing a partition runs the task.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};

use arrow_array::{RecordBatch, StringArray, UInt64Array};
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use ops_core::CatalogFactory;
use ops_datamig::TaskOutput;

use crate::error::{ClusterError, Result};
use crate::node::output_schema;
use crate::outputs::{
    Found, claim_attempt, read_compaction_output, read_output, write_compaction_output,
    write_output,
};
use crate::plan_store::{JobKind, StoredPlan, load_compaction, load_plan};
use ops_maintenance::compact::job::CompactionOutput;

/// Runs tasks of a migration plan, one per partition: reads the task's source files, writes
/// the destination's data files, writes the [`TaskOutput`] under the job's prefix and yields it
/// as one row (`task`, `output`). Nothing is committed here.
pub struct MigrationTasksExec {
    plan: StoredPlan,
    tasks: Vec<usize>,
    factory: Option<Arc<CatalogFactory>>,
    properties: Arc<PlanProperties>,
    /// Why partitions failed, for [`crate::engine`] to report to Ballista as it should (the
    /// shuffle writer between this node and Ballista turns every error into a string).
    failures: Arc<Mutex<HashMap<usize, TaskFailure>>>,
}

/// Why a task failed where it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFailure {
    /// A later attempt may succeed (see [`crate::transient`]): Ballista should run it again.
    pub transient: bool,
    /// The error, naming the task, the job and the executor.
    pub message: String,
}

/// How this process names itself in task errors (set by [`set_executor_name`]).
static EXECUTOR_NAME: RwLock<Option<String>> = RwLock::new(None);

/// Names this executor in the errors of the tasks it runs: its address, then also its id once
/// Ballista made one.
pub fn set_executor_name(name: impl Into<String>) {
    *EXECUTOR_NAME.write().unwrap_or_else(|e| e.into_inner()) = Some(name.into());
}

fn executor_name() -> String {
    EXECUTOR_NAME
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| format!("process {}", std::process::id()))
}

impl MigrationTasksExec {
    /// Tasks `tasks` of `plan`; `factory` opens the catalogs where the tasks execute (`None`
    /// on a process that only plans, such as the scheduler).
    pub fn new(plan: StoredPlan, tasks: Vec<usize>, factory: Option<Arc<CatalogFactory>>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(output_schema()),
            Partitioning::UnknownPartitioning(tasks.len()),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            plan,
            tasks,
            factory,
            properties,
            failures: Arc::default(),
        }
    }

    /// Why partition `partition` failed here, once (the record is removed).
    pub fn take_failure(&self, partition: usize) -> Option<TaskFailure> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&partition)
    }

    /// Where the plan is.
    pub fn plan(&self) -> &StoredPlan {
        &self.plan
    }

    /// The task ids, in partition order.
    pub fn tasks(&self) -> &[usize] {
        &self.tasks
    }
}

impl fmt::Debug for MigrationTasksExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MigrationTasksExec")
            .field("job_id", &self.plan.job_id)
            .field("tasks", &self.tasks)
            .finish()
    }
}

impl DisplayAs for MigrationTasksExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "MigrationTasksExec: job={} tasks={}",
            self.plan.job_id,
            self.tasks.len()
        )
    }
}

impl ExecutionPlan for MigrationTasksExec {
    fn name(&self) -> &str {
        "MigrationTasksExec"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "MigrationTasksExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> datafusion::error::Result<SendableRecordBatchStream> {
        let task = *self.tasks.get(partition).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "MigrationTasksExec has {} partitions, not {}",
                self.tasks.len(),
                partition + 1
            ))
        })?;
        let plan = self.plan.clone();
        let factory = self.factory.clone();
        let failures = self.failures.clone();
        let fut = async move {
            let out = match run_task(&plan, factory.as_deref(), task).await {
                Ok(out) => out,
                Err(e) => {
                    let transient = crate::transient::is_transient(&e);
                    let what = match plan.kind {
                        JobKind::Migration => "migration",
                        JobKind::Compaction => "compaction",
                    };
                    let message = format!(
                        "task {task} of {what} job {} failed on executor {}{}: {e}",
                        plan.job_id,
                        executor_name(),
                        if transient { " (transient)" } else { "" }
                    );
                    tracing::warn!(task, job = %plan.job_id, transient, error = %e, "task failed");
                    failures.lock().unwrap_or_else(|e| e.into_inner()).insert(
                        partition,
                        TaskFailure {
                            transient,
                            message: message.clone(),
                        },
                    );
                    return Err(DataFusionError::External(message.into()));
                }
            };
            let json = out;
            RecordBatch::try_new(
                output_schema(),
                vec![
                    Arc::new(UInt64Array::from(vec![task as u64])),
                    Arc::new(StringArray::from(vec![json])),
                ],
            )
            .map_err(DataFusionError::from)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            output_schema(),
            futures::stream::once(fut),
        )))
    }
}

/// Executes one task where it runs: the catalogs are this process's, the output goes under the
/// job's prefix before it is reported.
async fn run_task(
    stored: &StoredPlan,
    factory: Option<&CatalogFactory>,
    task: usize,
) -> Result<String> {
    let json = match stored.kind {
        JobKind::Migration => {
            let out = run_migration_task(stored, factory, task).await?;
            serde_json::to_string(&out)
        }
        JobKind::Compaction => {
            let out = run_compaction_task(stored, factory, task).await?;
            serde_json::to_string(&out)
        }
    };
    json.map_err(|e| ClusterError::Storage(format!("encode the output of task {task}: {e}")))
}

/// Rewrites one group of a compaction job, under a folder of its own attempt, and writes its
/// output beside the job's plan (as a migration task does: see [`run_migration_task`]).
async fn run_compaction_task(
    stored: &StoredPlan,
    factory: Option<&CatalogFactory>,
    task: usize,
) -> Result<CompactionOutput> {
    let handle = open_catalog(executor_catalogs(factory)?, &stored.dest_catalog).await?;
    let table = load_named_table(&handle, stored, "load").await?;
    if let Some(out) = reused(
        read_compaction_output(&table, &stored.job_id, task).await?,
        stored,
        task,
    ) {
        return Ok(out);
    }
    ensure_open(&table, stored, task).await?;
    let job = load_compaction(&table, stored).await?;
    let folder = start_attempt(&table, stored, task).await?;
    let out = match job.execute_task(&handle, task, &folder).await {
        Ok(out) => out,
        Err(e) => {
            let failure = ClusterError::Catalog {
                what: format!("rewrite group {task} of compaction job {}", stored.job_id),
                source: Box::new(e),
            };
            // A transient failure fails the task, which Ballista runs again. Any other is this
            // group's alone: reported in its output, so the job's other groups still run (a
            // failed task would fail the whole Ballista job), as Java's partial progress
            // reports a failed group and commits the rest.
            if crate::transient::is_transient(&failure) {
                return Err(failure);
            }
            tracing::warn!(task, job = %stored.job_id, error = %failure, "compaction group failed");
            remove_attempt(&table, &folder, task).await;
            CompactionOutput::failed(
                &stored.job_id,
                task,
                format!("{failure} (executor {})", executor_name()),
            )
        }
    };
    end_attempt(&table, stored, &folder, task).await?;
    write_compaction_output(&table, &out).await?;
    tracing::info!(task, job = %stored.job_id, files = out.files.len(), "task output written");
    Ok(out)
}

/// Executes one migration task (see [`run_task`]).
async fn run_migration_task(
    stored: &StoredPlan,
    factory: Option<&CatalogFactory>,
    task: usize,
) -> Result<TaskOutput> {
    let factory = executor_catalogs(factory)?;
    // The destination first: the plan is in its storage.
    let dest = open_catalog(factory, &stored.dest_catalog).await?;
    let dest_table = load_named_table(&dest, stored, "load destination").await?;
    let plan = load_plan(&dest_table, stored).await?;
    let source = if plan.source.catalog == stored.dest_catalog {
        dest.clone()
    } else {
        open_catalog(factory, &plan.source.catalog).await?
    };
    if let Some(out) = reused(
        read_output(&dest_table, &plan.job_id, task).await?,
        stored,
        task,
    ) {
        return Ok(out);
    }
    ensure_open(&dest_table, stored, task).await?;
    let folder = start_attempt(&dest_table, stored, task).await?;
    let out = plan
        .execute_task_in(&source, &dest, task, Some(&folder))
        .await?;
    end_attempt(&dest_table, stored, &folder, task).await?;
    write_output(&dest_table, &out).await?;
    tracing::info!(task, job = %plan.job_id, batches = out.batches.len(), "task output written");
    Ok(out)
}

/// The catalogs this process runs tasks with (an `iceberg-ops cluster executor`'s).
fn executor_catalogs(factory: Option<&CatalogFactory>) -> Result<&CatalogFactory> {
    factory.ok_or_else(|| {
        invalid(
            "this process was not given catalogs to run tasks with (it is not an \
             `iceberg-ops cluster executor`)",
        )
    })
}

/// Catalog `name` as this executor's configuration defines it.
async fn open_catalog(factory: &CatalogFactory, name: &str) -> Result<ops_core::CatalogHandle> {
    factory.open(name).await.map_err(|e| ClusterError::Catalog {
        what: format!("open catalog '{name}' on this executor"),
        source: Box::new(e),
    })
}

/// The table the stored plan is kept beside (`what`: how a failure to load it is described).
async fn load_named_table(
    handle: &ops_core::CatalogHandle,
    stored: &StoredPlan,
    what: &str,
) -> Result<iceberg::table::Table> {
    let ident = iceberg::TableIdent::from_strs(stored.dest_table.split('.'))
        .map_err(|e| invalid(format!("the plan names table '{}': {e}", stored.dest_table)))?;
    handle
        .catalog()
        .load_table(&ident)
        .await
        .map_err(crate::error::io_failed(format!(
            "{what} {}",
            stored.dest_table
        )))
}

/// The output of an earlier attempt of the task, if it got as far as writing one: that output
/// is the task's; writing the files again would leave the first attempt's as orphans.
fn reused<T>(found: Found<T>, stored: &StoredPlan, task: usize) -> Option<T> {
    match found {
        Found::Output(out) => {
            tracing::info!(task, job = %stored.job_id, "task output already written; reused");
            Some(out)
        }
        Found::Absent => None,
        Found::Unreadable(why) => {
            tracing::warn!(task, %why, "an unreadable output of an earlier attempt is replaced");
            None
        }
    }
}

/// Refuses to start an attempt of a job whose client is done with it (it committed another
/// attempt of every task and removed the job's prefix, plan included, or it abandoned the
/// job): the plan may still be in this process's cache, not in the store.
async fn ensure_open(
    table: &iceberg::table::Table,
    stored: &StoredPlan,
    task: usize,
) -> Result<()> {
    if job_open(table, stored).await? {
        Ok(())
    } else {
        Err(job_over(stored, task))
    }
}

/// Claims an attempt of the task: the folder every file it writes goes under, so a lost one's
/// files are deleted by prefix.
async fn start_attempt(
    table: &iceberg::table::Table,
    stored: &StoredPlan,
    task: usize,
) -> Result<String> {
    let folder = claim_attempt(table, &stored.job_id, task).await?;
    // Tests play a long task (longer than the scheduler's --executor-timeout); debug builds only.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("ICEBERG_OPS_TEST_TASK_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    Ok(folder)
}

/// Before an attempt's output is written: the job may have ended while it ran (a task taken
/// for lost and run again, or the task of a job its client cancelled or abandoned). Nothing
/// would ever commit its files, so they go now instead of waiting for `remove-orphans`.
/// (Only when the plan is known to be gone: a failure to look keeps the files and writes the
/// output — the work is done, and a committer that is waiting needs it.)
async fn end_attempt(
    table: &iceberg::table::Table,
    stored: &StoredPlan,
    folder: &str,
    task: usize,
) -> Result<()> {
    let open = job_open(table, stored).await.unwrap_or_else(|e| {
        tracing::warn!(task, error = %e, "could not tell whether the job is still open; its output is written");
        true
    });
    if open {
        return Ok(());
    }
    remove_attempt(table, folder, task).await;
    Err(job_over(stored, task))
}

/// Deletes the files of this attempt (its own folder; logged, never an error).
async fn remove_attempt(table: &iceberg::table::Table, folder: &str, task: usize) {
    let prefix = format!("{folder}/");
    if let Err(d) = table.file_io().delete_prefix(&prefix).await {
        tracing::warn!(task, folder = %prefix, error = %d, "the attempt's files were not removed");
    }
}

/// Whether `stored`'s plan is still in the destination's store: the client removes it with the
/// job's outputs once every task's output is committed.
async fn job_open(dest: &iceberg::table::Table, stored: &StoredPlan) -> Result<bool> {
    dest.file_io()
        .exists(&stored.path)
        .await
        .map_err(crate::error::io_failed(format!("look for {}", stored.path)))
}

/// The error of a task of a job that is over.
fn job_over(stored: &StoredPlan, task: usize) -> ClusterError {
    invalid(format!(
        "job {} is over (its plan {} is gone: its client committed every task and cleaned up): \
         task {task} is not run again",
        stored.job_id, stored.path
    ))
}

fn invalid(m: impl Into<String>) -> ClusterError {
    ClusterError::InvalidInput(m.into())
}
