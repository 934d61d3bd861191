//! The physical node: one partition per task; executing a partition runs the task.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

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
use ops_datamig::{MigrationPlan, TaskOutput};

use crate::error::{ClusterError, Result};
use crate::node::output_schema;
use crate::outputs::{Found, claim_attempt, read_output, write_output};

/// Runs tasks of a [`MigrationPlan`], one per partition: reads the task's source files, writes
/// the destination's data files, writes the [`TaskOutput`] under the job's prefix and yields it
/// as one row (`task`, `output`). Nothing is committed here.
pub struct MigrationTasksExec {
    plan: Arc<MigrationPlan>,
    tasks: Vec<usize>,
    factory: Option<Arc<CatalogFactory>>,
    properties: Arc<PlanProperties>,
}

impl MigrationTasksExec {
    /// Tasks `tasks` of `plan`; `factory` opens the catalogs where the tasks execute (`None`
    /// on a process that only plans, such as the scheduler).
    pub fn new(
        plan: Arc<MigrationPlan>,
        tasks: Vec<usize>,
        factory: Option<Arc<CatalogFactory>>,
    ) -> Self {
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
        }
    }

    /// The plan.
    pub fn plan(&self) -> &MigrationPlan {
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
        let job = plan.job_id.clone();
        let fut = async move {
            let out = run_task(&plan, factory.as_deref(), task)
                .await
                .map_err(|e| {
                    DataFusionError::External(
                        format!("task {task} of migration job {job}: {e}").into(),
                    )
                })?;
            let json =
                serde_json::to_string(&out).map_err(|e| DataFusionError::External(Box::new(e)))?;
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
    plan: &MigrationPlan,
    factory: Option<&CatalogFactory>,
    task: usize,
) -> Result<TaskOutput> {
    let factory = factory.ok_or_else(|| {
        invalid(
            "this process was not given catalogs to run tasks with (it is not an \
             `iceberg-ops cluster executor`)",
        )
    })?;
    let open = |name: String| async move {
        factory
            .open(&name)
            .await
            .map_err(|e| invalid(format!("open catalog '{name}' on this executor: {e}")))
    };
    let source = open(plan.source.catalog.clone()).await?;
    let dest = if plan.dest.catalog == plan.source.catalog {
        source.clone()
    } else {
        open(plan.dest.catalog.clone()).await?
    };
    let ident = iceberg::TableIdent::from_strs(plan.dest.table.split('.'))
        .map_err(|e| invalid(format!("the plan names table '{}': {e}", plan.dest.table)))?;
    let dest_table = dest
        .catalog()
        .load_table(&ident)
        .await
        .map_err(|e| invalid(format!("load destination {}: {e}", plan.dest.table)))?;
    // A retried task whose first attempt got as far as writing its output: that output is the
    // task's; writing the files again would leave the first attempt's as orphans.
    match read_output(&dest_table, &plan.job_id, task).await? {
        Found::Output(out) => {
            tracing::info!(task, job = %plan.job_id, "task output already written; reused");
            return Ok(out);
        }
        Found::Absent => {}
        Found::Unreadable(why) => {
            tracing::warn!(task, %why, "an unreadable output of an earlier attempt is replaced");
        }
    }
    // Each attempt writes under a folder of its own: a lost one's files are deleted by prefix.
    let folder = claim_attempt(&dest_table, &plan.job_id, task).await?;
    // Tests play a long task (longer than the scheduler's --executor-timeout); debug builds only.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("ICEBERG_OPS_TEST_TASK_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let out = plan
        .execute_task_in(&source, &dest, task, Some(&folder))
        .await?;
    write_output(&dest_table, &out).await?;
    tracing::info!(task, job = %plan.job_id, batches = out.batches.len(), "task output written");
    Ok(out)
}

fn invalid(m: impl Into<String>) -> ClusterError {
    ClusterError::InvalidInput(m.into())
}
