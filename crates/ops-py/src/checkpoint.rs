//! `CheckpointStore`: the Rust checkpoint file ([`ops_checkpoint::CheckpointStore`]) the
//! Python class wraps, so a checkpoint written from Python is the one `migrate-data` resumes.
//!
//! Each write opens the file's store anew and drops it after: the Rust store holds the file's
//! lock for as long as it lives, and the user's `CheckpointStore` object lives beside the
//! `DataMigrator` it is given, whose run takes that lock itself. So the lock guards each write
//! of the Python object, and a whole run of the migrator. Reads take no lock and create
//! nothing ([`CheckpointStore::peek`]): a progress callback or a monitor may read the file of
//! a running migration.

use std::path::PathBuf;

use ops_checkpoint::{CheckpointState, CheckpointStore, JobIdentity};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;

/// The checkpoint at one path; the Python `CheckpointStore` holds one.
#[pyclass(frozen, module = "iceberg_ops._native")]
pub struct NativeCheckpoint {
    path: PathBuf,
}

impl NativeCheckpoint {
    fn read<T>(&self, f: impl FnOnce(Option<CheckpointState>) -> T) -> PyResult<T> {
        CheckpointStore::peek(&self.path)
            .map(f)
            .map_err(errors::checkpoint)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut CheckpointStore) -> Result<T, ops_checkpoint::CheckpointError>,
    ) -> PyResult<T> {
        let mut store = CheckpointStore::new(&self.path);
        f(&mut store).map_err(errors::checkpoint)
    }
}

fn job_from_json(job: Option<&str>) -> PyResult<Option<JobIdentity>> {
    job.map(|text| {
        serde_json::from_str::<JobIdentity>(text).map_err(|e| {
            PyValueError::new_err(format!("job must be a JSON-serialisable dict: {e}"))
        })
    })
    .transpose()
}

#[pymethods]
impl NativeCheckpoint {
    #[new]
    fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The file's path.
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether the file exists.
    fn exists(&self) -> PyResult<bool> {
        self.with(|s| Ok(s.exists()))
    }

    /// A fresh checkpoint (the job as JSON).
    #[pyo3(signature = (source_snapshot_id=None, job=None))]
    fn start(&self, source_snapshot_id: Option<i64>, job: Option<&str>) -> PyResult<()> {
        let job = job_from_json(job)?;
        self.with(|s| s.start(source_snapshot_id, job))
    }

    fn reset(&self) -> PyResult<()> {
        self.with(|s| s.reset())
    }

    fn mark_completed(&self) -> PyResult<()> {
        self.with(|s| s.mark_completed())
    }

    fn is_committed(&self, batch: u64) -> PyResult<bool> {
        self.read(|s| {
            s.and_then(|s| s.last_committed_batch)
                .is_some_and(|last| batch <= last)
        })
    }

    /// Strictly after the last committed batch, as the seed's `mark_committed` (the Rust
    /// store also takes the last batch again, for a retried write).
    fn mark_committed(&self, batch: u64, dest_snapshot_ids: Vec<i64>) -> PyResult<()> {
        self.with(|s| match s.last_committed()? {
            Some(last) if batch <= last => Err(ops_checkpoint::CheckpointError::OutOfOrder {
                path: s.path().to_path_buf(),
                batch,
                last,
            }),
            _ => s.mark_committed(batch, &dest_snapshot_ids),
        })
    }

    fn last_committed(&self) -> PyResult<Option<u64>> {
        self.read(|s| s.and_then(|s| s.last_committed_batch))
    }

    fn source_snapshot_id(&self) -> PyResult<Option<i64>> {
        self.read(|s| s.and_then(|s| s.source_snapshot_id))
    }

    /// The job as JSON.
    fn job(&self) -> PyResult<Option<String>> {
        let job = self.read(|s| s.and_then(|s| s.job))?;
        job.map(|j| {
            serde_json::to_string(&j)
                .map_err(|e| PyValueError::new_err(format!("the job does not serialize: {e}")))
        })
        .transpose()
    }

    fn started_at(&self) -> PyResult<Option<String>> {
        self.read(|s| s.and_then(|s| s.started_at))
    }

    fn completed(&self) -> PyResult<bool> {
        self.read(|s| s.is_some_and(|s| s.completed))
    }

    fn dest_snapshot_ids(&self) -> PyResult<Vec<i64>> {
        self.read(|s| s.map(|s| s.dest_snapshot_ids).unwrap_or_default())
    }
}
