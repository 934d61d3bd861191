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
//! | [`delete`] | delete rows matching a filter, copy-on-write | `delete` / `overwrite` |
//! | [`rollback`] | move `main` back to an ancestor, or to any snapshot | — |
//! | [`evolve_schema`] | add, drop, rename, widen, make optional, doc, move, identifier fields | — |
//! | [`evolve_spec`] | add, remove, rename partition fields | — |
//! | [`sort_order`] | replace the default sort order | — |
//! | [`properties`] | set and remove table properties | — |
//! | [`streamed`] | (for `append`) manifests of added files written as the files arrive | — |
//!
//! Maintenance — compaction, snapshot expiry, orphan cleanup — is the `ops-maintenance` crate
//! above this one, built on the same commit path ([`SnapshotProducer`], [`ConflictCheck`],
//! [`live_deletes`]). What a migration needs of it stays here: [`markers`] holds the table
//! properties maintenance honours (a running migration's marker, `gc.enabled`) and the marker
//! functions a migration calls; [`outputs`] checks that files written long before their commit
//! are still there (a migration's task outputs, compaction's rewritten files).
//!
//! [`CatalogHandle`]: crate::CatalogHandle

pub mod append;
pub mod delete;
pub mod evolve_schema;
pub mod evolve_spec;
pub mod live_deletes;
pub mod markers;
pub mod outputs;
pub mod overwrite;
pub mod properties;
mod removals;
pub mod replace_partitions;
pub mod rollback;
pub(crate) mod snapshot;
pub mod sort_order;
pub mod streamed;
pub(crate) mod validate;

pub(crate) use snapshot::fit_literal as snapshot_fit_literal;
pub use snapshot::{
    LiveEntry, LiveFile, ManifestCache, PartitionKey, PreparedManifest, SnapshotMetrics,
    UnmatchedDeletes, canonical_partition, each_live_data_file, each_live_delete_file,
    files_missing_deletes, live_data_files, live_data_files_of, spec_by_id,
};

/// The snapshot half of the commit seam, for `ops-maintenance` only: compaction builds its
/// `replace` snapshot with ops-core's producer (manifests, manifest list, Java's
/// `MergingSnapshotProducer` validation) and commits it through [`crate::commit`]. Not a
/// stable API: it goes when iceberg-rust ships `RewriteFiles`, and only its users change then
/// (docs/architecture.md, ops-core's `commit` and `ops/`).
#[doc(hidden)]
pub mod producer {
    pub use super::snapshot::{
        Produced, SnapshotChanges, SnapshotProducer, changes_of, commit_snapshot_from,
    };
    pub use super::validate::ConflictCheck;
}

/// `iceberg-ops.*` snapshot summary keys written by the operations.
pub const OPERATION_PROPERTY: &str = "iceberg-ops.operation";
