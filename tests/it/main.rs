//! Integration tests against real servers (one binary keeps link time down).

mod catalogs;
mod commit_layer;
mod common;
mod datamig;
mod datamig_copy;
mod datamig_sources;
mod filters;
mod filters_evolved;
mod ops;
mod runner;
mod s3tables_migration;
