use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::CheckpointError;

/// The only file-format version this build reads and writes.
pub const CHECKPOINT_VERSION: u32 = 1;

/// The identity of the migration job that started a checkpoint: a JSON object (source and
/// destination table UUIDs, row filter, batch size, write mode, ...), compared as a whole on
/// resume.
pub type JobIdentity = serde_json::Map<String, serde_json::Value>;

/// The contents of a version-1 checkpoint file.
///
/// ```json
/// {
///   "version": 1,
///   "source_snapshot_id": 12345,
///   "last_committed_batch": 42,
///   "dest_snapshot_ids": [98765, 98766],
///   "completed": false,
///   "started_at": "2026-05-05T10:30:00Z",
///   "job": {"batch_rows": 50000, "write_mode": "append"}
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointState {
    /// File-format version; always [`CHECKPOINT_VERSION`].
    pub version: u32,
    /// Source snapshot the migration reads; `None` if the source had no snapshot.
    pub source_snapshot_id: Option<i64>,
    /// Index of the last committed batch; `None` before the first commit.
    pub last_committed_batch: Option<u64>,
    /// Every destination snapshot the committed batches created, in commit order.
    pub dest_snapshot_ids: Vec<i64>,
    /// True once the migration finished.
    pub completed: bool,
    /// ISO 8601 UTC time of the most recent fresh start.
    pub started_at: Option<String>,
    /// The job's identity; absent or `null` when the caller recorded none.
    #[serde(default)]
    pub job: Option<JobIdentity>,
}

impl CheckpointState {
    /// A fresh state, started now.
    pub fn fresh(source_snapshot_id: Option<i64>, job: Option<JobIdentity>) -> Self {
        Self {
            version: CHECKPOINT_VERSION,
            source_snapshot_id,
            last_committed_batch: None,
            dest_snapshot_ids: Vec::new(),
            completed: false,
            started_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            job,
        }
    }

    /// Parses a checkpoint file's bytes; `path` is only for error messages.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, CheckpointError> {
        let corrupt = |reason: String| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| corrupt(format!("not valid JSON: {e}")))?;
        let object = value
            .as_object()
            .ok_or_else(|| corrupt("the top level is not a JSON object".into()))?;
        // Another tool's checkpoint (a migration's `job` is an object) is not corrupt: its
        // advice to delete it would lose that job's progress.
        if let Some(job) = object.get("job").and_then(|j| j.as_str()) {
            return Err(CheckpointError::OtherJob {
                path: path.to_path_buf(),
                job: job.to_string(),
            });
        }
        // Check the version before the shape, so a future format is reported as such rather
        // than as corruption.
        match object.get("version") {
            None => return Err(corrupt("it has no \"version\" field".into())),
            Some(v) if v.as_u64() == Some(u64::from(CHECKPOINT_VERSION)) => {}
            Some(v) => {
                return Err(CheckpointError::UnsupportedVersion {
                    path: path.to_path_buf(),
                    found: v.to_string(),
                    supported: CHECKPOINT_VERSION,
                });
            }
        }
        let state: CheckpointState =
            serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
        state.validate().map_err(corrupt)?;
        Ok(state)
    }

    /// Internal consistency: a committed batch implies the bookkeeping that goes with it.
    fn validate(&self) -> Result<(), String> {
        if self.last_committed_batch.is_none() && !self.dest_snapshot_ids.is_empty() {
            return Err("it lists destination snapshots but no committed batch".into());
        }
        if let Some(ts) = &self.started_at
            && chrono::DateTime::parse_from_rfc3339(ts).is_err()
        {
            return Err(format!("started_at '{ts}' is not an ISO 8601 timestamp"));
        }
        Ok(())
    }

    /// The JSON written to disk.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising plain data cannot fail; fall back to compact output defensively.
        let mut bytes = serde_json::to_vec_pretty(self)
            .or_else(|_| serde_json::to_vec(self))
            .unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}
