//! The source read: a pinned snapshot planned into file-scan tasks, read in a fixed order.
//!
//! iceberg's own `TableScan::to_arrow` reads files concurrently and yields batches in whatever
//! order they finish, so batch `k` of one run need not hold the rows of batch `k` of the next.
//! A resumable migration numbers its batches, so here the tasks are sorted by file path and read
//! one file after the other, each batch mapped onto the table's current schema by field id
//! (renamed and widened columns, added columns as nulls). Delete files attached to a task are
//! applied by iceberg's reader.

use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::expr::Predicate;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;

use crate::{MigrationError, Result};

/// The planned read of one table at one snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRead {
    /// The snapshot read (`None`: the table has no snapshot, nothing to read).
    pub snapshot_id: Option<i64>,
    /// File-scan tasks in read order.
    pub tasks: Vec<FileScanTask>,
    /// True when a row filter is applied.
    pub filtered: bool,
}

impl PlannedRead {
    /// Plans `table` at `snapshot_id` with `filter`.
    pub async fn plan(
        table: &Table,
        snapshot_id: Option<i64>,
        filter: Option<Predicate>,
    ) -> Result<Self> {
        let Some(id) = snapshot_id else {
            return Ok(Self {
                snapshot_id: None,
                tasks: Vec::new(),
                filtered: filter.is_some(),
            });
        };
        let filtered = filter.is_some();
        let mut builder = table.scan().snapshot_id(id).select_all();
        if let Some(f) = filter {
            builder = builder.with_filter(f);
        }
        let mut tasks: Vec<FileScanTask> =
            builder.build()?.plan_files().await?.try_collect().await?;
        tasks.sort_by(|a, b| {
            (a.data_file_path.as_str(), a.start).cmp(&(b.data_file_path.as_str(), b.start))
        });
        Ok(Self {
            snapshot_id: Some(id),
            tasks,
            filtered,
        })
    }

    /// True when some task has delete files to apply.
    pub fn has_deletes(&self) -> bool {
        self.tasks.iter().any(|t| !t.deletes.is_empty())
    }

    /// The exact row count from manifests alone: known when no filter and no delete file
    /// applies and every task covers a whole file.
    pub fn exact_rows(&self) -> Option<u64> {
        if self.filtered || self.has_deletes() {
            return None;
        }
        self.tasks
            .iter()
            .map(|t| t.record_count)
            .sum::<Option<u64>>()
    }

    /// Streams the planned rows in task order, in `table`'s current schema.
    pub fn stream(
        &self,
        table: &Table,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Some(id) = self.snapshot_id else {
            return Ok(futures::stream::empty().boxed());
        };
        let md = table.metadata();
        let snapshot = md.snapshot_by_id(id).ok_or_else(|| {
            MigrationError::InvalidInput(format!("{} has no snapshot {id}", table.identifier()))
        })?;
        let read_schema = snapshot
            .schema_id()
            .and_then(|sid| md.schema_by_id(sid))
            .unwrap_or_else(|| md.current_schema())
            .clone();
        let read_arrow = Arc::new(schema_to_arrow_schema(&read_schema)?);
        let target = ops_core::write::table_arrow_schema(table)?;
        let runtime = iceberg::Runtime::try_current()?;
        let reader = ArrowReaderBuilder::new(table.file_io().clone(), runtime)
            .with_data_file_concurrency_limit(1)
            .with_batch_size(batch_size.max(1))
            .build();
        let tasks = futures::stream::iter(self.tasks.clone().into_iter().map(Ok)).boxed();
        let stream = reader.read(tasks)?.stream();
        Ok(stream
            .map_err(MigrationError::from)
            .and_then(move |batch| {
                let projected = ops_core::scan::project_by_field_id(&batch, &read_arrow, &target)
                    .map_err(MigrationError::from);
                futures::future::ready(projected)
            })
            .boxed())
    }
}
