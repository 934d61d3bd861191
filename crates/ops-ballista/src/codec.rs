//! Logical and physical extension codecs for [`MigrationTasksNode`] and [`MigrationTasksExec`].
//!
//! Encoded tasks are `MAGIC`, the format as a little-endian `u32`, then the JSON of where the
//! plan is ([`StoredPlan`]: the plan itself stays in the destination's storage, see
//! [`crate::plan_store`]) and the task ids. Every other node goes to Ballista's own codecs unchanged (their protobuf never
//! starts with `MAGIC`: its first byte is a field tag, and `i` is not one Ballista uses). A
//! process reading another format refuses the task with an error naming both versions, so a
//! cluster of mixed iceberg-ops versions fails loudly instead of running tasks it misreads.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use serde::{Deserialize, Serialize};

use ops_core::CatalogFactory;

use crate::exec::MigrationTasksExec;
use crate::node::MigrationTasksNode;
use crate::plan_store::StoredPlan;

/// Version of the encoded tasks. Bump it whenever the encoding or what a task means changes.
/// (2: tasks carry where the plan is stored, not the plan; 3: and what kind of job it is —
/// a migration or a compaction.)
pub const CLUSTER_FORMAT: u32 = 3;

/// Marks bytes as encoded tasks of iceberg-ops.
const MAGIC: &[u8] = b"iceberg-ops/tasks\0";

#[derive(Serialize, Deserialize)]
struct Envelope {
    plan: StoredPlan,
    tasks: Vec<usize>,
}

/// Makes a process encode its tasks in another format, so the tests can run a real client or
/// scheduler that speaks like another iceberg-ops version. Decoding is not affected.
const TEST_FORMAT_ENV: &str = "ICEBERG_OPS_TEST_ENCODE_CLUSTER_FORMAT";

/// The format this process encodes in: [`CLUSTER_FORMAT`], unless the tests' variable says
/// otherwise in a debug build (release builds ignore it).
fn encoding_format() -> u32 {
    if !cfg!(debug_assertions) {
        return CLUSTER_FORMAT;
    }
    static FORMAT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *FORMAT.get_or_init(|| {
        std::env::var(TEST_FORMAT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CLUSTER_FORMAT)
    })
}

/// Encodes `tasks` of `plan` as [`CLUSTER_FORMAT`].
pub fn encode_tasks(
    plan: &StoredPlan,
    tasks: &[usize],
    buf: &mut Vec<u8>,
) -> Result<(), DataFusionError> {
    encode_tasks_as(encoding_format(), plan, tasks, buf)
}

/// Encodes as the given format: only tests use another one.
#[doc(hidden)]
pub fn encode_tasks_as(
    format: u32,
    plan: &StoredPlan,
    tasks: &[usize],
    buf: &mut Vec<u8>,
) -> Result<(), DataFusionError> {
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&format.to_le_bytes());
    #[derive(Serialize)]
    struct EnvelopeRef<'a> {
        plan: &'a StoredPlan,
        tasks: &'a [usize],
    }
    serde_json::to_writer(&mut *buf, &EnvelopeRef { plan, tasks })
        .map_err(|e| DataFusionError::Internal(format!("encode migration tasks: {e}")))
}

/// `Some((plan, tasks))` when `buf` holds encoded tasks, an error when they are of another
/// format or unreadable, `None` when `buf` is another codec's.
pub fn decode_tasks(buf: &[u8]) -> Option<Result<(StoredPlan, Vec<usize>), DataFusionError>> {
    let rest = buf.strip_prefix(MAGIC)?;
    Some(decode_envelope(rest))
}

fn decode_envelope(rest: &[u8]) -> Result<(StoredPlan, Vec<usize>), DataFusionError> {
    let (version, json) = rest.split_first_chunk::<4>().ok_or_else(|| {
        DataFusionError::Plan("encoded migration tasks are truncated (no format version)".into())
    })?;
    let version = u32::from_le_bytes(*version);
    if version != CLUSTER_FORMAT {
        return Err(DataFusionError::Plan(format!(
            "these migration tasks were encoded in iceberg-ops cluster format {version}, but this \
             process reads format {CLUSTER_FORMAT}: run the same iceberg-ops version on the \
             client, the scheduler and every executor"
        )));
    }
    let env: Envelope = serde_json::from_slice(json)
        .map_err(|e| DataFusionError::Plan(format!("unreadable migration tasks: {e}")))?;
    if let Some(bad) = env.tasks.iter().find(|&&t| t >= env.plan.tasks) {
        return Err(DataFusionError::Plan(format!(
            "the encoded tasks name task {bad}, but the plan has {} tasks",
            env.plan.tasks
        )));
    }
    Ok((env.plan, env.tasks))
}

/// Ballista's logical codec, plus [`MigrationTasksNode`]. The client and the scheduler use it.
#[derive(Debug, Default)]
pub struct MigrationLogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for MigrationLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> datafusion::error::Result<Extension> {
        match decode_tasks(buf) {
            Some(decoded) => {
                let (plan, tasks) = decoded?;
                let node = MigrationTasksNode::new(plan, tasks)?;
                Ok(Extension {
                    node: Arc::new(node),
                })
            }
            None => self.inner.try_decode(buf, inputs, ctx),
        }
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> datafusion::error::Result<()> {
        match node.node.as_any().downcast_ref::<MigrationTasksNode>() {
            Some(n) => encode_tasks(&n.plan, &n.tasks, buf),
            None => self.inner.try_encode(node, buf),
        }
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        self.inner
            .try_decode_table_provider(buf, table_ref, schema, ctx)
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> datafusion::error::Result<()> {
        self.inner.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> datafusion::error::Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> datafusion::error::Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }
}

/// Ballista's physical codec, plus [`MigrationTasksExec`]. The scheduler encodes with it; the
/// executors decode, and give the decoded tasks their catalogs (`factory`: the executor's
/// `.pyiceberg.yaml` / `PYICEBERG_CATALOG__*`, never the client's — tasks carry no secrets).
#[derive(Debug, Default)]
pub struct MigrationPhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
    factory: Option<Arc<CatalogFactory>>,
}

impl MigrationPhysicalCodec {
    /// A codec whose decoded tasks open their catalogs through `factory` (an executor's).
    pub fn with_catalogs(factory: Arc<CatalogFactory>) -> Self {
        Self {
            inner: BallistaPhysicalExtensionCodec::default(),
            factory: Some(factory),
        }
    }
}

impl PhysicalExtensionCodec for MigrationPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        match decode_tasks(buf) {
            Some(decoded) => {
                let (plan, tasks) = decoded?;
                Ok(Arc::new(MigrationTasksExec::new(
                    plan,
                    tasks,
                    self.factory.clone(),
                )))
            }
            None => self.inner.try_decode(buf, inputs, ctx),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
    ) -> datafusion::error::Result<()> {
        match node.as_any().downcast_ref::<MigrationTasksExec>() {
            Some(exec) => encode_tasks(exec.plan(), exec.tasks(), buf),
            None => self.inner.try_encode(node, buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> StoredPlan {
        StoredPlan {
            kind: crate::plan_store::JobKind::Migration,
            job_id: "job-1".into(),
            dest_catalog: "lake".into(),
            dest_table: "db.t".into(),
            path: "s3://b/db/t/iceberg-ops-jobs/job-1/plan-0123456789abcdef.json".into(),
            sha256: "0123456789abcdef".repeat(4),
            tasks: 2,
        }
    }

    fn ctx() -> TaskContext {
        TaskContext::default()
    }

    #[test]
    fn physical_tasks_round_trip() -> datafusion::error::Result<()> {
        let codec = MigrationPhysicalCodec::default();
        let exec: Arc<dyn ExecutionPlan> =
            Arc::new(MigrationTasksExec::new(plan(), vec![1, 0], None));
        let mut buf = Vec::new();
        codec.try_encode(exec, &mut buf)?;
        let back = codec.try_decode(&buf, &[], &ctx())?;
        let back = back
            .as_any()
            .downcast_ref::<MigrationTasksExec>()
            .ok_or_else(|| DataFusionError::Internal("not a MigrationTasksExec".into()))?;
        assert_eq!(back.tasks(), &[1, 0]);
        assert_eq!(back.plan(), &plan());
        assert_eq!(back.properties().output_partitioning().partition_count(), 2);
        Ok(())
    }

    #[test]
    fn logical_tasks_round_trip() -> datafusion::error::Result<()> {
        let codec = MigrationLogicalCodec::default();
        let node = MigrationTasksNode::new(plan(), vec![0, 1])?;
        let ext = Extension {
            node: Arc::new(node.clone()),
        };
        let mut buf = Vec::new();
        codec.try_encode(&ext, &mut buf)?;
        let back = codec.try_decode(&buf, &[], &ctx())?;
        let back = back
            .node
            .as_any()
            .downcast_ref::<MigrationTasksNode>()
            .ok_or_else(|| DataFusionError::Internal("not a MigrationTasksNode".into()))?;
        assert_eq!(back, &node);
        Ok(())
    }

    #[test]
    fn another_format_is_refused_naming_both() -> datafusion::error::Result<()> {
        let mut buf = Vec::new();
        encode_tasks_as(CLUSTER_FORMAT + 1, &plan(), &[0], &mut buf)?;
        for err in [
            MigrationPhysicalCodec::default()
                .try_decode(&buf, &[], &ctx())
                .err()
                .map(|e| e.to_string()),
            MigrationLogicalCodec::default()
                .try_decode(&buf, &[], &ctx())
                .err()
                .map(|e| e.to_string()),
        ] {
            let err = err.ok_or_else(|| {
                DataFusionError::Internal("tasks of another format were accepted".into())
            })?;
            assert!(
                err.contains(&format!("cluster format {}", CLUSTER_FORMAT + 1))
                    && err.contains(&format!("reads format {CLUSTER_FORMAT}"))
                    && err.contains("same iceberg-ops version"),
                "{err}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_task_outside_the_plan_is_refused() -> datafusion::error::Result<()> {
        let mut buf = Vec::new();
        encode_tasks(&plan(), &[5], &mut buf)?;
        let err = MigrationPhysicalCodec::default()
            .try_decode(&buf, &[], &ctx())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("task 5") && err.contains("2 tasks"), "{err}");
        Ok(())
    }

    #[test]
    fn other_nodes_go_to_ballistas_codec() {
        // Bytes that are not ours reach Ballista's codec (which cannot read these).
        let err = MigrationPhysicalCodec::default()
            .try_decode(b"\xff\xff", &[], &ctx())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("migration"), "{err}");
    }
}
