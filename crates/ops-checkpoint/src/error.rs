use std::path::PathBuf;

/// A checkpoint file cannot be used. Every message names the file and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The file is not a valid checkpoint (bad JSON, missing or mistyped field).
    #[error(
        "checkpoint {} is corrupt ({reason}); delete it, or pass a new --checkpoint path, to \
         start the migration over",
        path.display()
    )]
    Corrupt {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The file exists but could not be read.
    #[error(
        "checkpoint {} cannot be read: {source}; check its permissions, or delete it to start over",
        path.display()
    )]
    Unreadable {
        /// The checkpoint file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The file holds the progress of another kind of job (`iceberg-ops import add-files`
    /// writes `"job": "add-files"`), not of a migration.
    #[error(
        "checkpoint {} holds the progress of an `iceberg-ops import {job}` job, not of a \
         migration: give this migration another --checkpoint path (keep this file to resume \
         that {job} job with it)",
        path.display()
    )]
    OtherJob {
        /// The checkpoint file.
        path: PathBuf,
        /// The kind of job it says it belongs to.
        job: String,
    },

    /// The file was written by a different format version.
    #[error(
        "checkpoint {} has format version {found}, but this build reads only version {supported}; \
         finish the migration with the iceberg-ops version that wrote it, or delete the file to \
         start over",
        path.display()
    )]
    UnsupportedVersion {
        /// The checkpoint file.
        path: PathBuf,
        /// The version found in the file.
        found: String,
        /// The version this build reads.
        supported: u32,
    },

    /// The checkpoint (or its temporary file, or its directory) could not be written.
    #[error(
        "checkpoint {} cannot be written: {source}; check that its directory is writable and the \
         disk is not full",
        path.display()
    )]
    Write {
        /// The file that failed.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// Another store (in this or another process) is using the same checkpoint file.
    #[error(
        "checkpoint {} is in use by another migration run (lock {} is held); wait for that run \
         to finish, or give this run its own checkpoint file",
        path.display(),
        lock_path.display()
    )]
    Locked {
        /// The checkpoint file.
        path: PathBuf,
        /// The lock file.
        lock_path: PathBuf,
    },

    /// `mark_committed` was called with a batch index not after the last committed one.
    #[error(
        "checkpoint {}: batch {batch} cannot be marked committed after batch {last}; batches are \
         committed in strictly increasing order",
        path.display()
    )]
    OutOfOrder {
        /// The checkpoint file.
        path: PathBuf,
        /// The batch index given.
        batch: u64,
        /// The last committed batch.
        last: u64,
    },
}
