//! Delete the rows matching a filter, copy-on-write: readable by every reader, PyIceberg
//! included (no delete files are written).
//!
//! 1. Plan a scan of the current snapshot with the filter: the data files that may hold
//!    matching rows (partition and column statistics prune the rest).
//! 2. Read each candidate with the negated filter — its rows to keep — and stream them into new
//!    data files under the current schema and spec:
//!    - every row kept → the file is untouched (the rewrite is discarded);
//!    - no row kept → the file is dropped;
//!    - otherwise → the file is replaced by its rewrite.
//! 3. One snapshot (`delete` when files are only dropped, `overwrite` when some are rewritten).
//!    On a concurrent commit the whole plan is redone on the new base, so rows another writer
//!    added that match the filter are deleted too, and no commit of theirs is lost.

use std::collections::{BTreeMap, HashMap};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use iceberg::TableIdent;
use iceberg::arrow::{ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::expr::Predicate;
use iceberg::scan::FileScanTask;
use iceberg::spec::Operation;
use iceberg::table::Table;

use super::snapshot::{SnapshotMetrics, SnapshotProducer, commit_snapshot};
use crate::{CatalogHandle, Error, Result};

/// Deletes matching rows (see the module docs).
#[must_use = "a DeleteBuilder does nothing until awaited"]
pub struct DeleteBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    filter: Option<Filter>,
    properties: HashMap<String, String>,
}

#[derive(Clone)]
enum Filter {
    Predicate(Predicate),
    Text(String),
}

impl DeleteBuilder {
    /// A delete on `ident` in `handle`'s catalog; set the rows with [`Self::with_filter`].
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            filter: None,
            properties: HashMap::new(),
        }
    }

    /// The rows to delete, as a predicate naming columns as in the current snapshot's schema.
    pub fn with_filter(mut self, filter: Predicate) -> Self {
        self.filter = Some(Filter::Predicate(filter));
        self
    }

    /// The rows to delete, as text naming columns as in the table's current schema (see
    /// [`crate::filter`]); a renamed column is matched by field id.
    pub fn with_filter_text(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(Filter::Text(filter.into()));
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        let filter = self.filter.ok_or_else(|| {
            Error::InvalidInput("a delete needs a filter; to empty a table, filter on a condition that is always true, e.g. 'id IS NOT NULL OR id IS NULL'".into())
        })?;
        commit_snapshot(&self.handle, &self.ident, |base| {
            let filter = filter.clone();
            let properties = self.properties.clone();
            async move {
                let filter = match filter {
                    Filter::Predicate(p) => p,
                    Filter::Text(text) => {
                        let md = base.metadata();
                        let read_schema = md
                            .current_snapshot()
                            .and_then(|s| s.schema_id())
                            .and_then(|id| md.schema_by_id(id))
                            .unwrap_or_else(|| md.current_schema());
                        crate::filter::parse_filter_at(&text, md.current_schema(), read_schema)?
                    }
                };
                let Some(plan) = plan_delete(&base, filter).await? else {
                    return Ok(None);
                };
                let operation = if plan.added.is_empty() {
                    Operation::Delete
                } else {
                    Operation::Overwrite
                };
                let produced = SnapshotProducer::new(&base, operation)
                    .remove_paths(plan.removed)
                    .add_files(plan.added)
                    .properties(properties)
                    .produce()
                    .await?;
                Ok(Some(produced))
            }
        })
        .await
    }
}

struct DeletePlan {
    removed: Vec<String>,
    added: Vec<iceberg::spec::DataFile>,
}

async fn tasks(
    table: &Table,
    snapshot_id: i64,
    filter: Predicate,
) -> Result<BTreeMap<String, Vec<FileScanTask>>> {
    let tasks: Vec<FileScanTask> = table
        .scan()
        .snapshot_id(snapshot_id)
        .select_all()
        .with_filter(filter)
        .build()?
        .plan_files()
        .await?
        .try_collect()
        .await?;
    let mut by_file: BTreeMap<String, Vec<FileScanTask>> = BTreeMap::new();
    for t in tasks {
        by_file.entry(t.data_file_path.clone()).or_default().push(t);
    }
    Ok(by_file)
}

async fn plan_delete(table: &Table, filter: Predicate) -> Result<Option<DeletePlan>> {
    let Some(snapshot_id) = table.metadata().current_snapshot_id() else {
        return Ok(None);
    };
    let candidates = tasks(table, snapshot_id, filter.clone()).await?;
    if candidates.is_empty() {
        return Ok(None);
    }
    let mut keep = tasks(table, snapshot_id, !filter).await?;
    let target = crate::write::table_arrow_schema(table)?;
    let reader =
        ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::try_current()?).build();
    let mut plan = DeletePlan {
        removed: Vec::new(),
        added: Vec::new(),
    };
    for (path, candidate_tasks) in candidates {
        let record_count: Option<u64> = candidate_tasks.first().and_then(|t| t.record_count);
        let has_deletes = candidate_tasks.iter().any(|t| !t.deletes.is_empty());
        let Some(kept_tasks) = keep.remove(&path) else {
            // Statistics prove no row survives: drop the file whole.
            plan.removed.push(path);
            continue;
        };
        let read_schema = Arc::new(schema_to_arrow_schema(&kept_tasks[0].schema)?);
        let kept_rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = kept_rows.clone();
        let target_schema = target.clone();
        let batches = reader
            .clone()
            .read(futures::stream::iter(kept_tasks.into_iter().map(Ok)).boxed())?
            .stream()
            .map_err(Error::from)
            .map(move |b| {
                let b = b?;
                counter.fetch_add(b.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
                crate::scan::project_by_field_id(&b, &read_schema, &target_schema)
            });
        let written = crate::write::write_data_files(table, Box::pin(batches)).await?;
        let kept = kept_rows.load(std::sync::atomic::Ordering::Relaxed);
        if Some(kept) == record_count && !has_deletes {
            // Nothing in this file matched: keep it, discard the rewrite.
            for f in &written {
                let _ = table.file_io().delete(f.file_path()).await;
            }
            continue;
        }
        plan.removed.push(path);
        plan.added.extend(written);
    }
    if plan.removed.is_empty() {
        return Ok(None);
    }
    Ok(Some(plan))
}

impl IntoFuture for DeleteBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
