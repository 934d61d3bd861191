//! # ops-datamig: streaming, resumable Iceberg-to-Iceberg data migration
//!
//! The DataMigrator reads a source table at a pinned snapshot, projects every batch through an
//! `ops_reconcile::SchemaReconciler` plan, writes it to the destination through ops-core's table
//! operations (append, upsert, partition overwrite) one commit per batch, and records progress
//! in an `ops_checkpoint::CheckpointStore` so a crashed run resumes after its last committed
//! batch. `verify` compares source and destination.
//!
//! This crate is laid down with the workspace; the migrator arrives with its own issue, once the
//! table operations it stands on exist in ops-core.
#![deny(missing_docs)]
