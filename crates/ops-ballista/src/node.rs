//! The logical node: a migration plan's tasks, as the client submits them.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan, UserDefinedLogicalNodeCore};

use crate::plan_store::StoredPlan;

/// Column of the output rows: the task's id.
pub const TASK_COLUMN: &str = "task";
/// Column of the output rows: the task's [`ops_datamig::TaskOutput`] as JSON.
pub const OUTPUT_COLUMN: &str = "output";

/// The Arrow schema of what a task yields: one row, its id and its output.
pub fn output_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        Arc::new(Schema::new(vec![
            Field::new(TASK_COLUMN, DataType::UInt64, false),
            Field::new(OUTPUT_COLUMN, DataType::Utf8, false),
        ]))
    });
    SCHEMA.clone()
}

/// The tasks of a migration plan to execute, one partition each.
///
/// Identity (equality, hash, order) is the plan's job id and the task ids: two nodes of the same
/// job and tasks do the same work.
#[derive(Clone)]
pub struct MigrationTasksNode {
    /// Where the plan is (every task's files are in it; executors run only theirs).
    pub plan: StoredPlan,
    /// The ids of the tasks to run, in partition order.
    pub tasks: Vec<usize>,
    schema: DFSchemaRef,
}

impl MigrationTasksNode {
    /// The node running `tasks` of `plan`.
    pub fn new(plan: StoredPlan, tasks: Vec<usize>) -> Result<Self, DataFusionError> {
        let schema = Arc::new(DFSchema::try_from(output_schema().as_ref().clone())?);
        Ok(Self {
            plan,
            tasks,
            schema,
        })
    }

    /// As a logical plan to submit.
    pub fn into_logical_plan(self) -> LogicalPlan {
        LogicalPlan::Extension(Extension {
            node: Arc::new(self),
        })
    }

    fn key(&self) -> (&str, &[usize]) {
        (self.plan.job_id.as_str(), self.tasks.as_slice())
    }
}

impl fmt::Debug for MigrationTasksNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MigrationTasksNode")
            .field("job_id", &self.plan.job_id)
            .field("tasks", &self.tasks)
            .finish()
    }
}

impl PartialEq for MigrationTasksNode {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for MigrationTasksNode {}

impl PartialOrd for MigrationTasksNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.key().cmp(&other.key()))
    }
}

impl Hash for MigrationTasksNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl UserDefinedLogicalNodeCore for MigrationTasksNode {
    fn name(&self) -> &str {
        "MigrationTasks"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        Vec::new()
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "MigrationTasks: job={} tasks={}",
            self.plan.job_id,
            self.tasks.len()
        )
    }

    fn with_exprs_and_inputs(
        &self,
        exprs: Vec<Expr>,
        inputs: Vec<LogicalPlan>,
    ) -> datafusion::error::Result<Self> {
        if !exprs.is_empty() || !inputs.is_empty() {
            return Err(DataFusionError::Internal(
                "MigrationTasks has no expressions and no inputs".into(),
            ));
        }
        Ok(self.clone())
    }
}
