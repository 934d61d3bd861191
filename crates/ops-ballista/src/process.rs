//! Ballista's scheduler and executor processes, with the migration codecs and planner.
//!
//! Ballista's gRPC and Flight traffic is plaintext and unauthenticated, and an executor runs
//! whatever task it is sent with the catalogs' credentials it holds: both bind to 127.0.0.1
//! unless told otherwise, and a cluster must live in a network only its operators reach.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::extension::{
    SessionConfigExt, ballista_aggregate_functions, ballista_scalar_functions,
    ballista_window_functions,
};
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use datafusion::prelude::SessionConfig;

use ops_core::CatalogFactory;

use crate::codec::{MigrationLogicalCodec, MigrationPhysicalCodec};
use crate::error::{ClusterError, Result};
use crate::exec::MigrationTasksExec;
use crate::node::MigrationTasksNode;

/// Plans [`MigrationTasksNode`] as [`MigrationTasksExec`] (on the scheduler).
#[derive(Debug, Default)]
pub struct MigrationExtensionPlanner;

#[async_trait]
impl ExtensionPlanner for MigrationExtensionPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        _physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session_state: &SessionState,
    ) -> datafusion::error::Result<Option<Arc<dyn ExecutionPlan>>> {
        Ok(node.as_any().downcast_ref::<MigrationTasksNode>().map(|n| {
            Arc::new(MigrationTasksExec::new(
                n.plan.clone(),
                n.tasks.clone(),
                None,
            )) as Arc<dyn ExecutionPlan>
        }))
    }
}

/// DataFusion's planner with [`MigrationExtensionPlanner`].
#[derive(Debug, Default)]
pub struct MigrationQueryPlanner;

#[async_trait]
impl QueryPlanner for MigrationQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &SessionState,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let planners: Vec<Arc<dyn ExtensionPlanner + Send + Sync>> =
            vec![Arc::new(MigrationExtensionPlanner)];
        DefaultPhysicalPlanner::with_extension_planners(planners)
            .create_physical_plan(logical_plan, session_state)
            .await
    }
}

/// The scheduler's session: Ballista's defaults with [`MigrationQueryPlanner`].
pub fn scheduler_session(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    Ok(SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(Arc::new(RuntimeEnvBuilder::new().build()?))
        .with_scalar_functions(ballista_scalar_functions())
        .with_aggregate_functions(ballista_aggregate_functions())
        .with_window_functions(ballista_window_functions())
        .with_query_planner(Arc::new(MigrationQueryPlanner))
        .build())
}

/// The codecs every process and the client use.
pub fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(Arc::new(MigrationLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(MigrationPhysicalCodec::default()))
}

/// How to run a scheduler.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Where to listen (default 127.0.0.1:50050).
    pub bind: SocketAddr,
    /// The host name executors and clients reach it by (default: the bind address's IP).
    pub external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor is dead and its tasks rerun.
    pub executor_timeout_seconds: u64,
    /// Attempts of one task before the job fails.
    pub task_max_failures: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 50050)),
            external_host: None,
            executor_timeout_seconds: 180,
            task_max_failures: 4,
        }
    }
}

/// Runs a Ballista scheduler with the migration codecs and planner until the process ends.
pub async fn run_scheduler(opts: SchedulerOptions) -> Result<()> {
    let config = SchedulerConfig {
        bind_host: opts.bind.ip().to_string(),
        bind_port: opts.bind.port(),
        external_host: opts
            .external_host
            .clone()
            .unwrap_or_else(|| opts.bind.ip().to_string()),
        executor_timeout_seconds: opts.executor_timeout_seconds,
        // A dead executor is looked for at least as often as one can time out.
        expire_dead_executor_interval_seconds: opts.executor_timeout_seconds.clamp(1, 15),
        task_max_failures: opts.task_max_failures,
        // Pull, not Ballista's default push: in push mode the scheduler offers tasks only when
        // a job is submitted or a task reports, so the tasks it takes back from a lost executor
        // wait forever when every other executor is idle by then (seen with Ballista 53: "Reset
        // N tasks ... on lost Executor", then nothing). Polling executors pick them up.
        scheduling_policy: TaskSchedulingPolicy::PullStaged,
        override_config_producer: Some(Arc::new(session_config)),
        override_session_builder: Some(Arc::new(scheduler_session)),
        override_logical_codec: Some(Arc::new(MigrationLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(MigrationPhysicalCodec::default())),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| ClusterError::Ballista(format!("start the scheduler's state: {e}")))?;
    tracing::info!(bind = %opts.bind, "Ballista scheduler for iceberg-ops starting");
    start_server(cluster, opts.bind, Arc::new(config))
        .await
        .map_err(|e| ClusterError::Ballista(format!("scheduler on {}: {e}", opts.bind)))
}

/// How to run an executor.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler's host.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// The address to listen on (default 127.0.0.1).
    pub bind_host: String,
    /// The host name the scheduler and other executors reach this one by.
    pub external_host: Option<String>,
    /// Arrow Flight port (default 50051).
    pub port: u16,
    /// gRPC port (default 50052).
    pub grpc_port: u16,
    /// Tasks run at once (default: one per core).
    pub concurrent_tasks: usize,
    /// Ballista's working directory (its shuffle files; ours are tiny).
    pub work_dir: Option<PathBuf>,
    /// Seconds between heartbeats to the scheduler.
    pub heartbeat_seconds: u64,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        Self {
            scheduler_host: "127.0.0.1".into(),
            scheduler_port: 50050,
            bind_host: "127.0.0.1".into(),
            external_host: None,
            port: 50051,
            grpc_port: 50052,
            concurrent_tasks: std::thread::available_parallelism().map_or(1, |n| n.get()),
            work_dir: None,
            heartbeat_seconds: 60,
        }
    }
}

/// Runs a Ballista executor whose tasks open their catalogs through `catalogs` (this host's
/// `.pyiceberg.yaml` / `PYICEBERG_CATALOG__*`), until the process ends.
pub async fn run_executor(opts: ExecutorOptions, catalogs: CatalogFactory) -> Result<()> {
    if opts.concurrent_tasks == 0 {
        return Err(ClusterError::InvalidInput(
            "--concurrent-tasks must be at least 1".into(),
        ));
    }
    let work_dir = match &opts.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("iceberg-ops-executor-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work_dir).map_err(|e| {
        ClusterError::InvalidInput(format!(
            "create the executor's work directory {}: {e}",
            work_dir.display()
        ))
    })?;
    let work_dir = work_dir.to_str().map(str::to_owned).ok_or_else(|| {
        ClusterError::InvalidInput(format!(
            "the work directory {} is not UTF-8",
            work_dir.display()
        ))
    })?;
    let config = ExecutorProcessConfig {
        bind_host: opts.bind_host.clone(),
        external_host: Some(
            opts.external_host
                .clone()
                .unwrap_or_else(|| opts.bind_host.clone()),
        ),
        port: opts.port,
        grpc_port: opts.grpc_port,
        scheduler_host: opts.scheduler_host.clone(),
        scheduler_port: opts.scheduler_port,
        concurrent_tasks: opts.concurrent_tasks,
        work_dir: Some(work_dir),
        executor_heartbeat_interval_seconds: opts.heartbeat_seconds.max(1),
        // As the scheduler (see run_scheduler): executors poll for tasks.
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        override_config_producer: Some(Arc::new(session_config)),
        override_logical_codec: Some(Arc::new(MigrationLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(MigrationPhysicalCodec::with_catalogs(Arc::new(
            catalogs,
        )))),
        override_execution_engine: Some(Arc::new(
            crate::engine::MigrationExecutionEngine::default(),
        )),
        ..ExecutorProcessConfig::default()
    };
    let address = format!(
        "{}:{}",
        opts.external_host.as_deref().unwrap_or(&opts.bind_host),
        opts.port
    );
    crate::exec::set_executor_name(address.clone());
    tracing::info!(
        scheduler = %format!("{}:{}", opts.scheduler_host, opts.scheduler_port),
        port = opts.port,
        grpc_port = opts.grpc_port,
        "Ballista executor for iceberg-ops starting"
    );
    // Pull mode sends no heartbeat while every slot is busy (see crate::heartbeat).
    crate::heartbeat::start(
        &address,
        &opts.scheduler_host,
        opts.scheduler_port,
        std::time::Duration::from_secs(opts.heartbeat_seconds.max(1)),
    );
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| ClusterError::Ballista(format!("executor: {e}")))
}
