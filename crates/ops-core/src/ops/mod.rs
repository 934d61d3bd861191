//! Table operations the official crate lacks, each exactly one catalog commit.
//!
//! Every operation is a builder created from a [`CatalogHandle`] and a table identifier; awaiting
//! it loads the table, validates, writes what it must (manifests, a manifest list, a schema) and
//! commits through [`crate::commit`], retrying on a concurrent change only when its validation
//! shows no overlap. Each resolves to the new table and metrics.
//!
//! | module | operation | snapshot operation |
//! |---|---|---|
//! | [`append`] | add data files, with caller summary properties | `append` |
//! | [`overwrite`] | remove given data files and add new ones | `overwrite` |
//! | [`replace_partitions`] | dynamic partition overwrite | `overwrite` |
//! | [`compact`] | rewrite small files (and files with deletes) into target-size ones | `replace` |
//! | [`delete`] | delete rows matching a filter, copy-on-write | `delete` / `overwrite` |
//! | [`rollback`] | move `main` back to an ancestor, or to any snapshot | — |
//! | [`evolve_schema`] | add, drop, rename, widen, make optional, doc, move, identifier fields | — |
//! | [`evolve_spec`] | add, remove, rename partition fields | — |
//! | [`sort_order`] | replace the default sort order | — |
//! | [`properties`] | set and remove table properties | — |
//! | [`expire_snapshots`] | remove old snapshots, then the files only they referenced | — |
//! | [`remove_orphans`] | delete files under the location no metadata references | (no commit) |
//!
//! [`maintenance`] holds what the last two check first (S3 Tables, `gc.enabled`, a running
//! migration's marker) and the marker functions a migration calls; [`outputs`] checks that
//! files written long before their commit are still there (compaction, a migration's task
//! outputs).
//!
//! [`CatalogHandle`]: crate::CatalogHandle

pub mod append;
pub mod compact;
pub(crate) mod dangling_deletes;
pub mod delete;
pub mod evolve_schema;
pub mod evolve_spec;
pub mod expire_snapshots;
pub mod maintenance;
pub mod outputs;
pub mod overwrite;
pub mod properties;
pub mod remove_orphans;
pub mod replace_partitions;
pub mod rollback;
pub(crate) mod snapshot;
pub mod sort_order;
pub(crate) mod validate;

pub(crate) use snapshot::fit_literal as snapshot_fit_literal;
pub use snapshot::{PreparedManifest, SnapshotMetrics, canonical_partition, files_missing_deletes};

/// `iceberg-ops.*` snapshot summary keys written by the operations.
pub const OPERATION_PROPERTY: &str = "iceberg-ops.operation";
