//! Integration tests against real servers (one binary keeps link time down).

mod catalogs;
#[cfg(feature = "cluster")]
mod cluster;
mod commit_layer;
mod common;
mod compact;
mod corpus;
mod datamig;
mod datamig_copy;
mod datamig_migrator;
mod datamig_nested;
mod datamig_sources;
mod datamig_stream;
mod datamig_upsert;
mod filters;
mod filters_evolved;
mod fuzz;
mod health;
mod import;
mod import_glue;
mod maintain;
mod maintenance;
mod nested_evolution;
mod ops;
mod partition_constants;
mod partition_paths;
mod rest_tls;
mod rest_vended;
mod runner;
mod runner_recovery;
mod s3tables_migration;
mod v1_tables;
mod verify;
