//! A migration plan's tasks, or a compaction's groups, on an Apache DataFusion Ballista cluster.
//!
//! The only crate of the workspace that depends on Ballista and DataFusion (behind ops-cli's
//! `cluster` feature, so the default build does not grow).
//!
//! - [`MigrationTasksNode`] (logical) and [`MigrationTasksExec`] (physical): a plan's tasks as
//!   a DataFusion plan with one partition per task. Executing a partition runs the task with
//!   ops-datamig's executor ([`ops_datamig::MigrationPlan::execute_task`]), writes its
//!   [`ops_datamig::TaskOutput`] durably under the job's prefix in the destination's storage
//!   ([`outputs`]) and yields it as one row.
//! - [`codec`]: the logical and physical extension codecs, carrying [`CLUSTER_FORMAT`]; a
//!   process of another format refuses the task with an error naming both. Tasks carry where
//!   the plan is ([`plan_store`]), not the plan.
//! - [`process`]: Ballista's scheduler and executor processes with those codecs and the planner;
//!   the executors run [`engine`], which reports a task's transient failures ([`transient`]) so
//!   that Ballista runs the task again.
//! - [`client`]: submits the tasks and commits their outputs in batch order as they land, with
//!   ops-datamig's committer.
//! - [`compaction`]: `table compact --cluster` — a compaction's groups as the tasks of a job
//!   of the same machinery ([`plan_store::JobKind::Compaction`]): each task rewrites one group
//!   under its attempt's folder, and the client commits each group as it lands, validated as a
//!   local compaction is (ops-maintenance's `compact::job`).

pub mod client;
pub mod codec;
pub mod compaction;
pub mod engine;
pub mod error;
pub mod exec;
pub mod heartbeat;
pub mod node;
pub mod outputs;
pub mod plan_store;
pub mod process;
pub mod transient;

pub use client::{ClusterRunner, TaskProgress};
pub use codec::{CLUSTER_FORMAT, MigrationLogicalCodec, MigrationPhysicalCodec};
pub use error::ClusterError;
pub use exec::MigrationTasksExec;
pub use node::MigrationTasksNode;
pub use process::{ExecutorOptions, SchedulerOptions, run_executor, run_scheduler};
