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
    /// Planning, rewriting or committing a compaction failed.
    #[error(transparent)]
    Table(#[from] ops_core::Error),
    /// The destination's storage: something wrong with what is stored there.
    #[error("{0}")]
    Storage(String),
    /// A storage or catalog request failed (the cause is kept, so a transient failure can be
    /// told from a permanent one: see [`crate::transient`]).
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`write <path>`).
        what: String,
        /// Why it failed.
        #[source]
        source: Box<iceberg::Error>,
    },
    /// A catalog could not be opened where the task runs.
    #[error("{what}: {source}")]
    Catalog {
        /// Which catalog, where.
        what: String,
        /// Why.
        #[source]
        source: Box<ops_core::Error>,
    },
    /// Ballista's processes.
    #[error("Ballista: {0}")]
    Ballista(String),
    /// The client was told to stop (SIGINT, SIGTERM) while the job ran.
    #[error(
        "interrupted: the cluster job was cancelled and the files of groups not committed were \
         removed; the groups already committed stay. Run the same command again to compact what \
         is left"
    )]
    Interrupted,
}

/// Maps a storage failure to [`ClusterError::Io`] saying what was being done.
pub(crate) fn io_failed(what: impl Into<String>) -> impl FnOnce(iceberg::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Io {
        what,
        source: Box::new(source),
    }
}

/// `Result` of this crate.
pub type Result<T, E = ClusterError> = std::result::Result<T, E>;
