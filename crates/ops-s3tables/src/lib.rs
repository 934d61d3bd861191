//! # ops-s3tables: the Amazon S3 Tables table-migration API, safely
//!
//! A typed client for StartTableMigration, UpdateTableMigration, SyncTableMigration,
//! GetTableMigration, CompleteTableMigration and ListTableMigrations (SigV4, retries, paging),
//! and a guard that encodes the operator runbook — review the compatibility reports, approve,
//! wait, sync, check parity, complete — so no step can be skipped.
//!
//! This crate is laid down with the workspace; the client arrives with its own issue.
#![deny(missing_docs)]
