//! Executing one task of a [`MigrationPlan`] in any process: read its source files, write the
//! destination's data files, return them as a [`TaskOutput`] — committing nothing.
//!
//! This is the execute half of the seam a distributed engine uses: `DataMigrator::plan` (or
//! `iceberg-ops migrate-data --plan-only`) writes the plan, any process runs
//! [`MigrationPlan::execute_task`] (`migrate-data run-task`) and ships the output back to the one
//! process that commits them all (`commit::outputs`).
//!
//! 1. Re-check that the tables are the planned ones (UUIDs, schema and spec ids), so a plan
//!    cannot write files in a layout the destination no longer has.
//! 2. Re-derive the reconciliation, the row filter, the planned read and, for a copy task, the
//!    routes — exactly as the planning process did.
//! 3. Run one worker on the task and turn its written files into JSON; on any failure delete
//!    the files it wrote.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ops_core::CatalogHandle;

use super::worker::{Payload, TaskContext, WorkerMsg};
use crate::plan::job::{BatchOutput, MigrationPlan, PLAN_FORMAT, TaskOutput, files_to_json};
use crate::plan::read::PlannedRead;
use crate::plan::route::route_planned;
use crate::{FileRoute, MigrationError, MigrationResult, Result, WriteMode};

impl MigrationPlan {
    /// Executes task `id`: reads its source files, writes the destination's data files and
    /// returns them, committing nothing. `source` and `dest` are the plan's catalogs, opened by
    /// the caller (the plan names them).
    pub async fn execute_task(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        id: usize,
    ) -> Result<TaskOutput> {
        self.execute_task_in(source, dest, id, None).await
    }

    /// [`Self::execute_task`], writing the data files under `data_location` (with the
    /// partition folders below it) instead of the destination's data location. A distributed
    /// engine gives each attempt of a task its own folder: the files of an attempt that was
    /// lost (its executor died) are then one prefix that no committed output names, which the
    /// engine deletes at the end of the job.
    pub async fn execute_task_in(
        &self,
        source: &CatalogHandle,
        dest: &CatalogHandle,
        id: usize,
        data_location: Option<&str>,
    ) -> Result<TaskOutput> {
        let task = self.task(id)?.clone();
        if self.write_mode == WriteMode::Upsert {
            return Err(MigrationError::InvalidInput(
                "an upsert plan has no tasks to run elsewhere; run it with `migrate-data`".into(),
            ));
        }
        let (source_ref, dest_ref) = self.table_refs(source, dest)?;
        let (source_table, dest_table) = self.tables(&source_ref, &dest_ref, true).await?;
        let dest_table = match data_location {
            Some(location) => with_data_location(&dest_table, location)?,
            None => dest_table,
        };
        let plan = crate::plan::reconcile(
            &self.reconciler,
            self.write_mode,
            &crate::plan::pinned_schema(&source_table, self.source_snapshot_id),
            dest_table.metadata().current_schema(),
        )?;
        let predicate = crate::plan::row_predicate(
            self.row_filter.as_ref(),
            &source_table,
            self.source_snapshot_id,
        )?;
        let read = PlannedRead::plan(&source_table, self.source_snapshot_id, predicate.clone())
            .await?
            .in_schema(crate::plan::pinned_schema(
                &source_table,
                self.source_snapshot_id,
            ));
        let whole_files = if task.route == FileRoute::Rewrite {
            HashMap::new()
        } else {
            let mut scratch = MigrationResult::default();
            route_planned(
                &source_table,
                self.source_snapshot_id,
                &dest_table,
                &plan,
                predicate.as_ref(),
                &read,
                self.write_mode,
                self.copy_mode,
                (&mut scratch, false),
            )
            .await?
        };
        let by_path = crate::plan::read::FileIndex::of(&read);
        let ctx = Arc::new(TaskContext {
            source: source_table,
            dest: dest_table.clone(),
            read,
            plan,
            batch_rows: self.batch_rows,
            read_batch_size: super::read_batch_size(self.batch_rows),
            mode: self.write_mode,
            resume_from: 0,
            landed: Default::default(),
            cancel: AtomicBool::new(false),
            by_path,
            whole_files,
            prepare_manifests: false,
        });
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let worker = tokio::spawn(super::worker::run_worker(ctx, vec![task], tx));
        let mut written = Vec::new();
        let mut failure = None;
        while let Some(msg) = rx.recv().await {
            match msg {
                Ok(WorkerMsg::Batch(work)) => written.push(work),
                Ok(WorkerMsg::TaskDone(_)) => {}
                Err(e) => failure = Some(e),
            }
        }
        if let Err(join) = worker.await {
            failure.get_or_insert(MigrationError::InvalidInput(format!(
                "the worker of task {id} failed: {join}"
            )));
        }
        let mut batches = Vec::with_capacity(written.len());
        if failure.is_none() {
            for work in &written {
                let (Payload::Written(w) | Payload::Referenced(w)) = &work.payload else {
                    continue;
                };
                match files_to_json(&dest_table, w.spec_id, &w.files) {
                    Ok(files) => batches.push(BatchOutput {
                        index: work.index,
                        rows: work.rows,
                        bytes: work.bytes,
                        spec_id: w.spec_id,
                        files,
                        referenced: matches!(work.payload, Payload::Referenced(_)),
                    }),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = failure {
            // Nothing of this task will be committed: the files it wrote are garbage.
            for work in written {
                super::worker::discard(&dest_table, work.payload).await;
            }
            return Err(e);
        }
        tracing::info!(task = id, batches = batches.len(), "task executed");
        Ok(TaskOutput {
            format: PLAN_FORMAT,
            job_id: self.job_id.clone(),
            task: id,
            batches,
        })
    }
}

/// `dest` as this process sees it, writing its data files under `location` (Iceberg's
/// `write.data.path`, which the writers' location generator reads); nothing is committed.
fn with_data_location(
    dest: &iceberg::table::Table,
    location: &str,
) -> Result<iceberg::table::Table> {
    let metadata =
        iceberg::spec::TableMetadataBuilder::new_from_metadata(dest.metadata().clone(), None)
            .set_properties(HashMap::from([(
                WRITE_DATA_PATH.to_string(),
                location.trim_end_matches('/').to_string(),
            )]))?
            .build()?
            .metadata;
    let mut builder = iceberg::table::Table::builder()
        .identifier(dest.identifier().clone())
        .file_io(dest.file_io().clone())
        .metadata(metadata)
        .runtime(iceberg::Runtime::try_current()?);
    if let Some(l) = dest.metadata_location() {
        builder = builder.metadata_location(l);
    }
    Ok(builder.build()?)
}

/// Iceberg's table property naming where data files are written.
pub const WRITE_DATA_PATH: &str = ops_core::location::WRITE_DATA_PATH;

/// Where `table` writes its data files, as Java's location providers decide
/// ([`ops_core::location::DataLocations`]): `write.data.path`, the older
/// `write.folder-storage.path`, or `<location>/data`.
pub fn data_location(table: &iceberg::table::Table) -> Result<String> {
    Ok(
        ops_core::location::DataLocations::for_table(table.metadata())?
            .data_location()
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn data_files_go_under_the_given_location() -> Result<()> {
        use iceberg::spec::{NestedField, PrimitiveType, Schema, TableMetadataBuilder, Type};
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        let md = TableMetadataBuilder::new(
            schema,
            iceberg::spec::PartitionSpec::unpartition_spec(),
            iceberg::spec::SortOrder::unsorted_order(),
            "memory:///wh/t".to_string(),
            iceberg::spec::FormatVersion::V2,
            HashMap::new(),
        )?
        .build()?
        .metadata;
        let table = iceberg::table::Table::builder()
            .identifier(iceberg::TableIdent::from_strs(["ns", "t"])?)
            .file_io(iceberg::io::FileIO::new_with_memory())
            .metadata(md)
            .runtime(iceberg::Runtime::try_current()?)
            .build()?;
        assert_eq!(data_location(&table)?, "memory:///wh/t/data");
        let moved = with_data_location(&table, "memory:///wh/t/data/job-1/task-000002-0/")?;
        assert_eq!(
            data_location(&moved)?,
            "memory:///wh/t/data/job-1/task-000002-0"
        );
        let batch = arrow_array::RecordBatch::try_new(
            ops_core::write::table_arrow_schema(&moved)?,
            vec![std::sync::Arc::new(arrow_array::Int64Array::from(vec![
                1, 2,
            ]))],
        )
        .map_err(|e| MigrationError::InvalidInput(e.to_string()))?;
        let written =
            ops_core::write::write_files(&moved, futures::stream::iter([Ok(batch)])).await?;
        assert_eq!(written.files.len(), 1);
        let path = written.files[0].file_path();
        assert!(
            path.starts_with("memory:///wh/t/data/job-1/task-000002-0/"),
            "{path}"
        );
        Ok(())
    }
}
