//! Errors of the cluster runner.

use thiserror::Error;

/// Why a cluster run failed.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// A setting or a URL is wrong.
    #[error("{0}")]
    InvalidInput(String),
    /// The scheduler could not be reached, or refused the job.
    #[error("Ballista scheduler {url}: {message}")]
    Scheduler {
        /// The `df://HOST:PORT` URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The cluster job failed (a task failed more often than Ballista retries it, ...).
    #[error("cluster job failed: {0}")]
    Job(String),
    /// Planning, executing or committing the migration failed.
    #[error(transparent)]
    Migration(#[from] ops_datamig::MigrationError),
    /// The destination's storage.
    #[error("{0}")]
    Storage(String),
    /// Ballista's processes.
    #[error("Ballista: {0}")]
    Ballista(String),
}

/// `Result` of this crate.
pub type Result<T, E = ClusterError> = std::result::Result<T, E>;
