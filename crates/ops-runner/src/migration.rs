//! The `Migration` trait: one versioned step, written as a TOML file or as Rust code.

use std::sync::Arc;

use async_trait::async_trait;
use iceberg::{Catalog, NamespaceIdent, TableIdent};
use ops_core::CatalogHandle;

use crate::StepError;
use crate::operation::Operation;

/// What a migration step gets to work with: the catalog and the namespace the runner manages.
#[derive(Debug, Clone)]
pub struct MigrationContext {
    handle: CatalogHandle,
    namespace: NamespaceIdent,
}

impl MigrationContext {
    /// A context for `namespace` in `handle`'s catalog.
    pub fn new(handle: CatalogHandle, namespace: NamespaceIdent) -> Self {
        Self { handle, namespace }
    }

    /// The catalog handle, for ops-core's table operations.
    pub fn handle(&self) -> &CatalogHandle {
        &self.handle
    }

    /// The iceberg catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        self.handle.catalog()
    }

    /// The namespace the runner manages.
    pub fn namespace(&self) -> &NamespaceIdent {
        &self.namespace
    }

    /// `name` inside the managed namespace.
    pub fn table(&self, name: &str) -> TableIdent {
        TableIdent::new(self.namespace.clone(), name.to_string())
    }
}

/// One versioned migration. File migrations implement it from their TOML; services implement it
/// in code and register it beside the files ([`crate::MigrationRunner::register`]).
///
/// Concurrent runs for one namespace are not guarded (see the runner), so `upgrade` should be
/// idempotent.
#[async_trait]
pub trait Migration: Send + Sync {
    /// The version, 1–4 digits (normalised to `NNNN` by the runner).
    fn version(&self) -> &str;

    /// A human-readable summary, stored in history.
    fn description(&self) -> &str;

    /// A checksum of the migration's definition, stored in history so `validate` can report a
    /// changed migration; `None` when there is nothing to compare (code migrations).
    fn checksum(&self) -> Option<String> {
        None
    }

    /// Where the migration comes from, for messages (a file path, or `code`).
    fn source(&self) -> String {
        "code".to_string()
    }

    /// The upgrade as a list of declarative operations, when it is one (file migrations). The
    /// runner then applies them itself: it records how many landed when one fails (a later
    /// `migrate` resumes after them, `rollback` undoes them) and the property values a derived
    /// downgrade restores. `None` (code migrations): the runner calls `upgrade`.
    fn operations(&self) -> Option<&[Operation]> {
        None
    }

    /// The written downgrade of a declarative migration (`None`: derived from the upgrade).
    fn written_downgrade(&self) -> Option<&[Operation]> {
        None
    }

    /// The changes `upgrade` makes, one line each, for `--dry-run`.
    fn describe_upgrade(&self, ctx: &MigrationContext) -> Vec<String> {
        let _ = ctx;
        vec!["runs code (no declarative description)".to_string()]
    }

    /// The changes `downgrade` makes, or why there is no downgrade.
    fn describe_downgrade(&self, ctx: &MigrationContext) -> Result<Vec<String>, StepError> {
        let _ = ctx;
        Ok(vec!["runs code (no declarative description)".to_string()])
    }

    /// Runs before `upgrade`.
    async fn pre_upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        let _ = ctx;
        Ok(())
    }

    /// Applies the migration.
    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError>;

    /// Runs after a successful `upgrade`.
    async fn post_upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        let _ = ctx;
        Ok(())
    }

    /// Undoes the migration; by default there is none ([`StepError::NotImplemented`]).
    async fn downgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        let _ = ctx;
        Err(StepError::NotImplemented(format!(
            "migration {} has no downgrade",
            self.version()
        )))
    }
}
