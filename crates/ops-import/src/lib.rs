//! # ops-import: existing Parquet files into Apache Iceberg tables
//!
//! It owns one concept: **import** — making files written outside Iceberg (a Hive table's
//! folders, a `key=value/` tree a Spark or pyarrow job left behind) part of an Iceberg table
//! without rewriting them, as Java's `add_files` procedure and `TableMigrationUtil` do, but
//! without Spark and on any catalog ops-core opens. It stands on ops-core (catalogs, the append
//! commit); nothing else depends on it.
//!
//! The pipeline of [`add_files`], one module a step:
//!
//! | module | step |
//! |---|---|
//! | [`source`] | the files named: single files, folder trees, globs, local or S3; hidden paths skipped by Hadoop's convention |
//! | [`hive_path`] | `key=value` folder segments, unescaped as Hive does |
//! | [`footer`] | each file's Parquet footer, read from its tail only |
//! | [`columns`] | the file's columns matched to the table's fields (by field id, or through the name mapping), refused where they do not fit or are missing |
//! | [`readers`] | files the table's other readers could not open refused (a `#` or `?` in the path, a timestamp zone other than UTC) |
//! | [`metrics`] | column metrics from the footer under the table's `write.metadata.metrics.*` modes |
//! | [`partition`] | the partition tuple: from the path, checked against the statistics (or the column itself), or from the statistics |
//! | [`add_files`] | the operation: duplicates refused (again at commit time), one `append` commit or resumable batches |
//! | [`snapshot`] | a new table over the files (schema and identity partitions inferred, `gc.enabled=false`), then `add_files` |
//!
//! The lists that grow with the files (the files named, the report of those added) leave
//! memory for a temporary file past a few thousand ([`spill`]); the duplicate checks keep
//! 128-bit path hashes. An import of a million files holds about what one of 100,000 does.
//!
//! ```no_run
//! # async fn demo() -> ops_core::Result<()> {
//! use ops_import::add_files::AddFilesBuilder;
//!
//! let handle = ops_core::CatalogFactory::build("sqlite").await?;
//! let ident = iceberg::TableIdent::from_strs(["sales", "orders"])?;
//! let (_table, metrics) = AddFilesBuilder::new(&handle, ident)
//!     .from(["/data/orders"])
//!     .await?;
//! println!("{} files added", metrics.files.len());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod add_files;
pub mod columns;
pub mod footer;
pub mod glue;
pub mod hive_path;
pub mod hive_type;
pub mod metrics;
pub mod migrate;
pub mod partition;
pub mod readers;
pub mod snapshot;
pub mod source;
pub mod spill;
pub mod staged;
