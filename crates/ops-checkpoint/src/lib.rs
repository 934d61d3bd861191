//! # ops-checkpoint: resumable progress for data migrations
//!
//! A [`CheckpointStore`] persists per-batch progress of a data migration to a JSON file, so a
//! crashed [DataMigrator] restarts after the last committed batch instead of from scratch.
//!
//! - The file format (version 1) is the Python iceberg-ops format, field for field: see
//!   [`CheckpointState`].
//! - Every write is atomic: `<path>.tmp` is written, flushed and fsync-ed, renamed over the live
//!   file, and the directory is fsync-ed, so a crash leaves either the old or the new file. A
//!   write that fails after its rename still leaves the store holding what the file holds, and
//!   repeating the failed `mark_committed` call is an idempotent retry (no doubled snapshot ids).
//! - Unlike the Python store, two runs cannot share a file: a store takes an advisory lock on
//!   `<path>.lock` the first time it touches disk and holds it until dropped; a second store
//!   fails fast with [`CheckpointError::Locked`].
//! - A corrupt, unreadable or unsupported-version file is a [`CheckpointError`] naming the path
//!   and the remedy; nothing here panics on file contents.
//!
//! ```
//! # fn main() -> Result<(), ops_checkpoint::CheckpointError> {
//! # let dir = tempfile::tempdir().map_err(|e| ops_checkpoint::CheckpointError::Write {
//! #     path: ".".into(), source: e })?;
//! use ops_checkpoint::CheckpointStore;
//! let mut store = CheckpointStore::new(dir.path().join("migrate.json"));
//! store.start(Some(12345), None)?;
//! for batch in 0..3u64 {
//!     if store.is_committed(batch)? {
//!         continue;
//!     }
//!     let dest_snapshot = 1000 + batch as i64; // the commit of this batch
//!     store.mark_committed(batch, &[dest_snapshot])?;
//! }
//! store.mark_completed()?;
//! assert_eq!(store.last_committed()?, Some(2));
//! # Ok(()) }
//! ```
//!
//! [DataMigrator]: https://docs.rs/ops-datamig
#![deny(missing_docs)]

mod error;
mod state;
mod store;

pub use error::CheckpointError;
pub use state::{CHECKPOINT_VERSION, CheckpointState, JobIdentity};
pub use store::CheckpointStore;
