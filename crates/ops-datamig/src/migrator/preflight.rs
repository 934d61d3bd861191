//! Pre-flight: every check a run makes before the destination is touched, and the writes it
//! makes before the first batch.
//!
//! 1. The settings alone ([`DataMigrator::validate_settings`], the seed's constructor errors).
//! 2. A missing destination: refused, or with `create_dest` checked against the schema it would
//!    get and created (the source's schema with the reconciler's renames and coercions, field ids
//!    kept, and the source's partition spec).
//! 3. The write mode's prerequisites on the reconciliation plan (upsert keys, format version).
//! 4. A dry run stops here, reading the source through the plan and counting what a run would
//!    write.
//! 5. The plan's auto-added columns (nested fields too) and widened columns, in one schema
//!    commit.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use iceberg::TableCreation;
use iceberg::spec::{Schema, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use ops_core::ops::evolve_schema::EvolveSchemaBuilder;
use ops_reconcile::ReconciliationPlan;

use super::DataMigrator;
use crate::plan::eligibility::{DestLayout, eligibility};
use crate::plan::read::PlannedRead;
use crate::{
    CopyMode, MigrationError, MigrationResult, OnDuplicateKeys, PartitionStrategy, Result,
    WriteMode,
};

impl DataMigrator {
    /// Checks the settings alone (the seed's constructor `ValueError`s).
    pub(super) fn validate_settings(&self) -> Result<()> {
        if self.workers == Some(0) {
            return Err(MigrationError::InvalidInput(
                "workers must be at least 1 (default: one per core)".into(),
            ));
        }
        if self.batch_rows == 0 {
            return Err(MigrationError::InvalidInput(
                "batch_rows must be at least 1 (default 50,000)".into(),
            ));
        }
        let PartitionStrategy::Preserve = self.partition_strategy;
        match (&self.upsert_keys, self.write_mode) {
            (None, WriteMode::Upsert) => {
                return Err(MigrationError::InvalidInput(
                    "write_mode upsert needs upsert_keys: the destination columns that identify \
                     a row (--upsert-keys k1,k2)"
                        .into(),
                ));
            }
            (Some(_), mode) if mode != WriteMode::Upsert => {
                return Err(MigrationError::InvalidInput(format!(
                    "upsert_keys are only used by write_mode upsert, not {mode}; drop them or \
                     set write_mode upsert"
                )));
            }
            (Some(keys), _) => {
                if keys.is_empty() {
                    return Err(MigrationError::InvalidInput(
                        "upsert_keys is empty; name at least one key column".into(),
                    ));
                }
                let mut seen = HashSet::new();
                for k in keys {
                    if k.trim().is_empty() {
                        return Err(MigrationError::InvalidInput(
                            "upsert_keys holds a blank name; list column names only".into(),
                        ));
                    }
                    if !seen.insert(k.as_str()) {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{k}' is listed twice"
                        )));
                    }
                }
            }
            (None, _) => {}
        }
        if self.on_duplicate_keys != OnDuplicateKeys::Error && self.write_mode != WriteMode::Upsert
        {
            return Err(MigrationError::InvalidInput(format!(
                "on_duplicate_keys is only used by write_mode upsert, not {}; drop it or set \
                 write_mode upsert",
                self.write_mode
            )));
        }
        Ok(())
    }

    pub(super) fn check_write_mode(
        &self,
        plan: &ReconciliationPlan,
        dest: Option<&Table>,
    ) -> Result<()> {
        if let Some(keys) = &self.upsert_keys {
            for key in keys {
                match plan.projections.iter().find(|p| &p.dest_name == key) {
                    None => {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{key}' is not a column of the projected destination \
                             schema ({})",
                            plan.projections
                                .iter()
                                .map(|p| p.dest_name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Some(p) if p.fill_with_null || p.source_name.is_none() => {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{key}' has no source column (it would be filled with \
                             null); map a source column to it with column_mapping"
                        )));
                    }
                    // Refused here, before the key pre-pass reads the source: a list, map
                    // or struct cannot be compared as a key (PyIceberg's upsert refuses them).
                    Some(p) if p.dest_arrow_type.is_nested() => {
                        return Err(MigrationError::InvalidInput(format!(
                            "upsert key '{key}' is a {} column; keys must be primitive columns \
                             (a nested field cannot be a key either)",
                            match p.dest_arrow_type {
                                arrow_schema::DataType::Struct(_) => "struct",
                                arrow_schema::DataType::Map(_, _) => "map",
                                _ => "list",
                            }
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
        if let Some(d) = dest
            && d.metadata().default_partition_spec().is_unpartitioned()
        {
            self.refuse_unpartitioned_overwrite()?;
        }
        if self.write_mode == WriteMode::Upsert
            && dest
                .is_some_and(|d| d.metadata().format_version() == iceberg::spec::FormatVersion::V3)
        {
            return Err(MigrationError::InvalidInput(format!(
                "destination {} is an Iceberg v3 table; ops-core writes v1 and v2 tables",
                self.dest.describe()
            )));
        }
        Ok(())
    }

    /// overwrite_partition replaces the destination partitions the source writes; an
    /// unpartitioned destination has one partition, so every row of it would be replaced by
    /// the source's — a truncate-and-load nobody asked for by that name. Refused, as PyIceberg's
    /// `dynamic_partition_overwrite` refuses an unpartitioned table.
    fn refuse_unpartitioned_overwrite(&self) -> Result<()> {
        if self.write_mode != WriteMode::OverwritePartition {
            return Ok(());
        }
        Err(MigrationError::InvalidInput(format!(
            "destination {} is unpartitioned, so overwrite_partition would replace the whole \
             table; use append, upsert with keys, or delete its rows first (`iceberg-ops \
             table delete`) and append",
            self.dest.describe()
        )))
    }

    /// Reads the planned source through `plan`, counting what a run would write.
    pub(super) async fn dry_run_read(
        &self,
        started: Instant,
        source: &Table,
        read: &PlannedRead,
        plan: ReconciliationPlan,
        mut result: MigrationResult,
    ) -> Result<MigrationResult> {
        let mut rows = 0u64;
        let mut bytes = 0u64;
        let mut stream = read.stream(source, self.read_batch_size())?;
        while let Some(batch) = stream.next().await {
            let projected = ops_reconcile::project_batch(&batch?, &plan)?;
            rows += projected.num_rows() as u64;
            bytes += crate::nbytes::arrow_bytes(&projected);
        }
        if let Some(p) = &self.progress {
            p(rows, Some(rows));
        }
        result.dry_run = true;
        result.estimated_rows = Some(rows);
        result.estimated_bytes = Some(bytes);
        result.plan = Some(plan);
        result.duration_seconds = started.elapsed().as_secs_f64();
        Ok(result)
    }

    /// The destination does not exist: with `create_dest`, check everything against the schema
    /// it would get, then create it (a dry run only reports). `Some` is a finished dry run.
    pub(super) async fn create_destination(
        &mut self,
        started: Instant,
        source: &Table,
    ) -> Result<Option<MigrationResult>> {
        if !self.create_dest {
            return Err(MigrationError::InvalidInput(format!(
                "destination {} does not exist; create it first, or set create_dest \
                 (--create-dest) to create it from the reconciled source schema and the \
                 source's partition spec",
                self.dest.describe()
            )));
        }
        let snapshot = match self.source_snapshot {
            Some(id) if source.metadata().snapshot_by_id(id).is_none() => {
                return Err(MigrationError::InvalidInput(format!(
                    "source {} has no snapshot {id}",
                    self.source.describe()
                )));
            }
            Some(id) => Some(id),
            None => source.metadata().current_snapshot_id(),
        };
        let pinned = crate::plan::pinned_schema(source, snapshot);
        let (schema, spec) = self.dest_layout(source, &pinned)?;
        let predicate = self.predicate(source, snapshot)?;
        let plan = self.compute_plan_for(&pinned, &schema)?;
        self.check_write_mode(&plan, None)?;
        if source
            .metadata()
            .default_partition_spec()
            .is_unpartitioned()
        {
            self.refuse_unpartitioned_overwrite()?;
        }
        // --copy-mode files/reference refuses a table-level condition that fails: checked on
        // the table create_dest would make, so the refusal comes before it is made (and a dry
        // run meets it too).
        if matches!(self.copy_mode, CopyMode::Files | CopyMode::Reference) {
            let bound = spec.clone().rebind(Arc::new(schema.clone()))?;
            let would_be = DestLayout {
                format_version: iceberg::spec::FormatVersion::V2,
                schema: &schema,
                last_column_id: source
                    .metadata()
                    .last_column_id()
                    .max(schema.highest_field_id()),
                spec: &bound,
            };
            if let Err(reason) = eligibility(
                source.metadata(),
                &pinned,
                &would_be,
                &plan,
                self.write_mode,
            ) {
                return Err(crate::plan::route::copy_refused(
                    self.copy_mode,
                    source.identifier(),
                    &self.dest.ident,
                    &reason,
                ));
            }
        }
        if self.dry_run {
            let read = PlannedRead::plan(source, snapshot, predicate)
                .await?
                .in_schema(pinned.clone());
            // The mode asked for, not the default's: files are routed against the destination,
            // which does not exist yet, so no file has a route to report.
            let result = MigrationResult {
                source_snapshot_id: snapshot,
                copy_mode: self.copy_mode,
                ..MigrationResult::default()
            };
            return Ok(Some(
                self.dry_run_read(started, source, &read, plan, result)
                    .await?,
            ));
        }
        if let Some(path) = &self.checkpoint
            && path.is_file()
        {
            return Err(MigrationError::Resume {
                path: path.clone(),
                reason: format!(
                    "the destination {} it was writing no longer exists; delete the checkpoint \
                     to start over",
                    self.dest.describe()
                ),
                committed_batches: 0,
                rollback_to: None,
                dest: self.dest.cli_args(),
                write_mode: self.write_mode,
                job_done: false,
            });
        }
        let catalog = self.dest.handle.catalog();
        let ns = self.dest.ident.namespace();
        if !catalog.namespace_exists(ns).await? {
            catalog.create_namespace(ns, HashMap::new()).await?;
        }
        let table = catalog
            .create_table(
                ns,
                TableCreation::builder()
                    .name(self.dest.ident.name().to_string())
                    .schema(schema.clone())
                    .partition_spec(spec.clone())
                    .build(),
            )
            .await?;
        // iceberg numbered the new table's fields afresh; give them back the source's ids
        // (nested too) so its files can be copied, where ops-core writes the metadata itself.
        let kept = ops_core::commit::keep_field_ids(
            &self.dest.handle,
            &table,
            &schema,
            &spec,
            source.metadata().last_column_id(),
        )
        .await?;
        // A server that numbers fields afresh often numbers them exactly as the source did
        // (1..n in order): then nothing differs, and saying it does contradicts the routes
        // ("same field ids").
        if kept.is_none() && !same_field_ids(&schema, table.metadata().current_schema()) {
            let note = format!(
                "the destination was created on a {} catalog, whose server assigns new field \
                 ids (create_dest cannot keep the source's), so files whose ids differ are \
                 rewritten",
                self.dest.handle.settings().kind()
            );
            tracing::warn!(dest = %table.identifier(), "{note}");
            self.ids_renumbered = Some(note);
        }
        tracing::info!(dest = %table.identifier(), ids_kept = kept.is_some(), "destination created (create_dest)");
        Ok(None)
    }

    /// The schema `create_dest` gives the destination: the schema of the snapshot read
    /// (`pinned`) with the reconciler's renames and coercions, every field keeping its id; and
    /// the source's partition spec (the fields whose source column `pinned` has, but for `void`
    /// ones).
    fn dest_layout(
        &self,
        source: &Table,
        pinned: &Schema,
    ) -> Result<(Schema, UnboundPartitionSpec)> {
        let md = source.metadata();
        let current = pinned;
        let mut fields = Vec::new();
        for f in current.as_struct().fields() {
            let mut f = (**f).clone();
            if let Some(to) = self.reconciler.column_mapping.get(&f.name) {
                f.name = to.clone();
            }
            if let Some(ty) = self.reconciler.type_coercions.get(&f.name) {
                if !ops_reconcile::is_legal_promotion(&f.field_type, ty) {
                    return Err(MigrationError::InvalidInput(format!(
                        "type_coercions['{}'] = {ty} is not a legal Iceberg promotion of the \
                         source type {}; create_dest can only widen (int→long, \
                         float→double, decimal precision up)",
                        f.name, f.field_type
                    )));
                }
                *f.field_type = ty.clone();
            }
            fields.push(Arc::new(f));
        }
        let schema = Schema::builder()
            .with_schema_id(0)
            .with_fields(fields)
            .with_identifier_field_ids(current.identifier_field_ids())
            .build()?;
        // The source's partition field ids too: a copied file's manifest entry carries its
        // partition tuple by those ids. `void` fields are left out: they are what a v1 table
        // keeps of a removed field (always NULL, often under its column's name, which a new
        // table's catalog may refuse), and the destination is a new table that never had them.
        // Kept as the source has them, not checked anew for redundant fields: a spec PyIceberg
        // made with `year(d)` and `month(d)` is copied, as Java copies one.
        let spec: UnboundPartitionSpec = md
            .default_partition_spec()
            .as_ref()
            .clone()
            .into_unbound()
            .retain_fields(|pf| {
                pf.transform != iceberg::spec::Transform::Void
                    && pinned.field_by_id(pf.source_id).is_some()
            });
        Ok((schema, spec))
    }

    /// Pre-flight write: a destination that will reference the source's data files
    /// (`CopyMode::Reference`) gets `gc.enabled=false` before the first of them lands, as Spark's
    /// `snapshot` procedure does, so snapshot expiry and orphan cleanup never delete a file the
    /// source still reads. Returns the updated destination, or `None` when nothing changed.
    pub(super) async fn disable_gc_for_references(
        &self,
        dest: &Table,
        files_referenced: u64,
    ) -> Result<Option<Table>> {
        if files_referenced == 0 || !ops_core::ops::markers::gc_enabled(dest.metadata()) {
            return Ok(None);
        }
        tracing::info!(
            dest = %self.dest.describe(),
            files_referenced,
            "the destination shares the source's files: setting gc.enabled=false"
        );
        let table = ops_core::ops::properties::PropertiesBuilder::new(
            &self.dest.handle,
            self.dest.ident.clone(),
        )
        .set(ops_core::ops::markers::GC_ENABLED, "false")
        .await?;
        Ok(Some(table))
    }

    /// Pre-flight write: the plan's auto-added and widened columns in one schema commit,
    /// recorded in `result`; returns the evolved destination.
    pub(super) async fn evolve_destination(
        &self,
        plan: &ReconciliationPlan,
        result: &mut MigrationResult,
    ) -> Result<Table> {
        let mut evolve = EvolveSchemaBuilder::new(&self.dest.handle, self.dest.ident.clone());
        for (name, ty) in &plan.auto_add_columns {
            evolve = evolve.add_column(name.clone(), ty.clone());
            result.schema_changes.push(name.clone());
        }
        // Nested fields a destination struct lacks, in the same commit (the writer projects
        // source values into them by the plan made against the evolved schema).
        for (parent, name, ty) in &plan.auto_add_nested_columns {
            evolve =
                evolve.add_nested_column(Some(parent.as_str()), name.clone(), ty.clone(), None);
            result.schema_changes.push(format!("{parent}.{name}"));
        }
        for (name, _, to) in &plan.widen_columns {
            if let Type::Primitive(p) = to {
                evolve = evolve.widen_column(name.clone(), p.clone());
                result.schema_changes.push(name.clone());
            }
        }
        let (table, _) = evolve.await?;
        tracing::info!(dest = %self.dest.ident, added = ?result.schema_changes, "destination schema evolved");
        Ok(table)
    }
}

/// Whether `created` gives every field of `wanted` (nested too, by full name) the same id.
fn same_field_ids(wanted: &Schema, created: &Schema) -> bool {
    let ids = wanted.field_id_to_name_map();
    ids.len() == created.field_id_to_name_map().len()
        && ids
            .iter()
            .all(|(id, name)| created.field_id_by_name(name) == Some(*id))
}

#[cfg(test)]
mod ids_tests {
    use super::*;
    use iceberg::spec::{NestedField, PrimitiveType};

    fn schema(ids: [i32; 2]) -> Option<Schema> {
        Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    ids[0],
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    ids[1],
                    "v",
                    Type::Primitive(PrimitiveType::String),
                )),
            ])
            .build()
            .ok()
    }

    #[test]
    fn renumbering_is_reported_only_when_ids_differ() {
        let (Some(a), Some(same), Some(other)) = (schema([1, 2]), schema([1, 2]), schema([2, 1]))
        else {
            panic!("schemas");
        };
        assert!(same_field_ids(&a, &same));
        assert!(!same_field_ids(&a, &other));
    }
}
