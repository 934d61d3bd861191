//! # ops-runner: versioned schema migrations for Iceberg tables
//!
//! The MigrationRunner resolves ordered, checksummed migrations (a directory of
//! `NNNN_description.toml` files, or Rust `Migration` implementations), compares them with the
//! MigrationHistory — an Iceberg table, `_iceberg_ops.migration_history` — and applies upgrades
//! and downgrades through ops-core's schema and partition evolution (status, plan, migrate,
//! rollback, stamp, history).
//!
//! This crate is laid down with the workspace; the runner arrives with its own issue.
#![deny(missing_docs)]
