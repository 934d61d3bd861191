//! The executors' execution engine: Ballista's own, with task failures reported as what they
//! are.
//!
//! Ballista runs each task inside its shuffle writer, which turns any error of the plan below
//! it into `DataFusionError::Execution(text)`; the executor reports that as an execution error,
//! which fails the whole job at once — retries (`--task-max-failures`) are kept for I/O errors
//! and lost executors. A migration task that met a timeout or a 503 would end the job where a
//! second attempt succeeds. So the stage executor of a plan holding [`MigrationTasksExec`] asks
//! that node why the partition failed ([`MigrationTasksExec::take_failure`]) and reports a
//! transient failure as an I/O error, which Ballista retries on another attempt, and a
//! permanent one as an execution error naming the task, the job and the executor.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use ballista_core::serde::protobuf::ShuffleWritePartition;
use ballista_executor::execution_engine::{
    DefaultExecutionEngine, ExecutionEngine, QueryStageExecutor,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::prelude::SessionConfig;

use crate::exec::{MigrationTasksExec, TaskFailure};

/// Ballista's default engine, whose stages of migration tasks report failures by kind.
/// (Without Ballista's client pool, which only its shuffle readers use; a migration's stage has
/// none.)
#[derive(Default)]
pub struct MigrationExecutionEngine {
    inner: DefaultExecutionEngine,
}

impl ExecutionEngine for MigrationExecutionEngine {
    fn create_query_stage_exec(
        &self,
        job_id: String,
        stage_id: usize,
        partition_id: usize,
        plan: Arc<dyn ExecutionPlan>,
        work_dir: &str,
        config: &SessionConfig,
    ) -> Result<Arc<dyn QueryStageExecutor>> {
        let tasks = find_tasks(&plan);
        let inner = self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            partition_id,
            plan,
            work_dir,
            config,
        )?;
        Ok(match tasks {
            Some(tasks) => Arc::new(MigrationStageExec { inner, tasks }),
            None => inner,
        })
    }
}

/// The [`MigrationTasksExec`] a stage's plan runs, below its shuffle writer and whatever
/// operators DataFusion put between — provided every one of them keeps the node's partitions
/// (one per task), for the stage's input partition to be the node's: that is what
/// [`MigrationTasksExec::take_failure`] is asked by. Any other shape is left to Ballista as is.
fn find_tasks(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let mut path = Vec::new();
    let mut node = Arc::clone(plan.children().first()?);
    loop {
        if let Some(tasks) = node.as_any().downcast_ref::<MigrationTasksExec>() {
            let partitions = tasks.tasks().len();
            let kept = path.iter().all(|p: &Arc<dyn ExecutionPlan>| {
                p.properties().output_partitioning().partition_count() == partitions
            });
            return kept.then_some(node);
        }
        let next = Arc::clone(node.children().first()?);
        path.push(node);
        node = next;
    }
}

/// A stage of migration tasks: Ballista's stage executor, and the node to ask why a task failed.
#[derive(Debug)]
struct MigrationStageExec {
    inner: Arc<dyn QueryStageExecutor>,
    tasks: Arc<dyn ExecutionPlan>,
}

impl fmt::Display for MigrationStageExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait]
impl QueryStageExecutor for MigrationStageExec {
    async fn execute_query_stage(
        &self,
        input_partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<Vec<ShuffleWritePartition>> {
        let result = self
            .inner
            .execute_query_stage(input_partition, context)
            .await;
        result.map_err(|e| {
            let failure = self
                .tasks
                .as_any()
                .downcast_ref::<MigrationTasksExec>()
                .and_then(|t| t.take_failure(input_partition));
            match failure {
                Some(f) => reported(f),
                None => e,
            }
        })
    }

    fn collect_plan_metrics(&self) -> Vec<MetricsSet> {
        self.inner.collect_plan_metrics()
    }
}

/// The error Ballista's executor turns into the failure `f` is: an I/O error is retried.
fn reported(f: TaskFailure) -> DataFusionError {
    if f.transient {
        DataFusionError::IoError(std::io::Error::other(f.message))
    } else {
        DataFusionError::Execution(f.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ballista_core::error::BallistaError;
    use ballista_core::serde::protobuf::FailedTask;

    /// What Ballista 53's executor makes of each kind: the scheduler retries a failure only
    /// when it is `retryable` and `count_to_failures` (then up to `--task-max-failures`).
    #[test]
    fn transient_failures_reach_the_scheduler_as_retryable() {
        let failed = |transient| {
            FailedTask::from(BallistaError::from(reported(TaskFailure {
                transient,
                message: "task 3 of migration job j failed on executor e: boom".into(),
            })))
        };
        let transient = failed(true);
        assert!(
            transient.retryable && transient.count_to_failures,
            "{transient:?}"
        );
        assert!(
            transient.error.contains("task 3 of migration job j"),
            "{transient:?}"
        );
        let permanent = failed(false);
        assert!(!permanent.retryable, "{permanent:?}");
        assert!(permanent.error.contains("on executor e"), "{permanent:?}");
    }
}
