//! # ops-maintenance: table maintenance for Apache Iceberg
//!
//! It owns one concept: **maintenance** — rewriting and removing the files of a table that
//! other writers filled, without changing its rows: compaction, snapshot expiry, orphan file
//! cleanup and dangling delete removal (Java's `RewriteDataFiles`, `ExpireSnapshots`,
//! `DeleteOrphanFiles`, `RemoveDanglingDeletes`) — and judging when a table needs them
//! (`health`, Amoro's evaluator) and giving it what is due, unattended (`maintain`). It stands on
//! ops-core (catalogs, the commit path, scans and writes); ops-core knows nothing of it, so a
//! service that embeds only table operations does not compile the maintenance planner.
//! ops-datamig does depend on it: a migration can compact and expire its own job's snapshots.
//!
//! Each operation is a builder created from an [`ops_core::CatalogHandle`] and a table
//! identifier, awaited as ops-core's operations are, and resolving to the new table and metrics.
//! Every one runs the same pipeline: refuse what it must not touch (`guards`), plan on the
//! current snapshot, write or delete, then commit through ops-core (retrying only where its
//! validation shows no overlap).
//!
//! | module | operation | snapshot operation |
//! |---|---|---|
//! | `guards` | the checks every operation runs first: S3 Tables, `gc.enabled`, a running migration's marker; deleting garbage files | — |
//! | [`compact`] | rewrite small files (and files with deletes) into target-size ones | `replace` |
//! | [`sort`] | compaction's bounded-memory sort (`--sort-by`, the table's sort order) | — |
//! | `dangling_deletes` | delete files no live data file needs any more, dropped in compaction's commit | — |
//! | [`expire_snapshots`] | remove old snapshots, then the files only they referenced | — |
//! | [`remove_orphans`] | delete files under the location no metadata references | (no commit) |
//! | [`remove_dangling_deletes`] | delete files no live data file can take any more | `replace` |
//! | [`policy`] | the thresholds a table is judged by (properties, a policy file, defaults) | — |
//! | [`health`] | what a table needs, from its metadata, with a score and a command per problem | (reads only) |
//! | [`maintain`] | the due operations on many tables, with a state file and leases | (theirs) |
//!
//! The markers these operations honour (a running migration's, `gc.enabled`) are written by
//! migrations, so they live in ops-core ([`ops_core::ops::markers`]), as does the check that
//! files written long before their commit are still there ([`ops_core::ops::outputs`]).
//!
//! ```no_run
//! # async fn demo() -> ops_core::Result<()> {
//! use ops_maintenance::compact::CompactBuilder;
//!
//! let handle = ops_core::CatalogFactory::build("sqlite").await?;
//! let ident = iceberg::TableIdent::from_strs(["sales", "orders"])?;
//! let (_table, metrics) = CompactBuilder::new(&handle, ident).await?;
//! println!("{} files into {}", metrics.input_files(), metrics.output_files());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub mod compact;
pub(crate) mod dangling_deletes;
pub mod expire_snapshots;
pub(crate) mod guards;
pub mod health;
pub mod maintain;
pub(crate) mod path_set;
pub mod policy;
pub mod remove_dangling_deletes;
pub mod remove_orphans;
pub mod sort;

#[cfg(test)]
pub(crate) mod test_support;

/// Called between an operation's planning and its commit (compaction and expiry take one;
/// tests race a writer there).
pub type BeforeCommitHook =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static>;
