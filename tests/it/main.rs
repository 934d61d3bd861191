//! Integration tests against real servers (one binary keeps link time down).

mod catalogs;
mod commit_layer;
mod common;
mod datamig;
mod datamig_copy;
mod datamig_sources;
mod filters;
mod ops;
mod rest_tls;
mod rest_vended;
mod runner;
mod runner_recovery;
mod s3tables_migration;
