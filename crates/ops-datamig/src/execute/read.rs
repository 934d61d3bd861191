//! Reading a planned read: its tasks one file after the other, each batch mapped onto the
//! table's current schema by field id (renamed and widened columns, added columns as nulls),
//! the row filter applied row by row, equality-deleted rows removed.
//!
//! 1. Each task's equality deletes are split off and their keys loaded (once per read).
//! 2. The file is read page by page ([`paged`]) where it can be, else by iceberg's reader
//!    (which applies position deletes); either way its identity-partition values are read as
//!    constants ([`ops_core::partition_constants`]).
//! 3. Every batch is mapped onto the current schema, filtered, and anti-joined against the keys.
//!
//! Delete files written by other engines:
//! - position deletes are applied by iceberg's reader;
//! - equality deletes by [`ops_core::equality_deletes`] (null-safe, as Java: iceberg 0.10.1
//!   would lose the rows whose key is NULL), each delete file's keys loaded once per read and
//!   every batch of the data files it applies to anti-joined against them. Which delete files
//!   apply to which data file (partition, sequence numbers: strictly newer for equality, newer
//!   or equal for position deletes) is still iceberg's planning.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{ArrowReaderBuilder, schema_to_arrow_schema};
use iceberg::spec::DataContentType;
use iceberg::table::Table;
use ops_core::equality_deletes::{EqualityDeletes, EqualityKeys};

use super::paged;
use crate::plan::read::PlannedRead;
use crate::{MigrationError, Result};

const FIELD_ID: &str = "PARQUET:field_id";

impl PlannedRead {
    /// Streams the planned rows in task order, in `table`'s current schema (or the one set
    /// with [`PlannedRead::in_schema`]).
    pub fn stream(
        &self,
        table: &Table,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Some(id) = self.snapshot_id else {
            return Ok(futures::stream::empty().boxed());
        };
        let md = table.metadata();
        let snapshot = crate::plan::snapshot_of(table, id)?;
        let read_schema = snapshot
            .schema_id()
            .and_then(|sid| md.schema_by_id(sid))
            .unwrap_or_else(|| md.current_schema())
            .clone();
        let mut read_arrow = Arc::new(schema_to_arrow_schema(&read_schema)?);
        let mut target = match &self.target {
            Some(schema) => Arc::new(schema_to_arrow_schema(schema)?),
            None => ops_core::write::table_arrow_schema(table)?,
        };
        // A projected read decodes fewer columns but must drop exactly the rows the full read
        // drops: the row filter's and the equality deletes' columns are read too.
        let keep = self
            .columns
            .as_ref()
            .map(|ids| Arc::new(decisive_columns(ids, self, &read_arrow)));
        if let Some(keep) = &keep {
            read_arrow = narrow(&read_arrow, keep);
            target = narrow(&target, keep);
        }
        let runtime = iceberg::Runtime::try_current()?;
        let reader = ArrowReaderBuilder::new(table.file_io().clone(), runtime)
            .with_data_file_concurrency_limit(1)
            .with_batch_size(batch_size.max(1))
            .build();
        // Equality delete keys on columns dropped since the deletes were written are read
        // from the data files by field id, after the target's and the read's own columns.
        let deletes = Arc::new(EqualityDeletes::for_read(
            table,
            target,
            reader.clone(),
            self.files.iter().flat_map(|f| f.deletes.iter()),
        )?);
        let read_arrow = deletes.widen(&read_arrow)?;
        // The row filter is applied here rather than by iceberg's reader, which takes a
        // column a file predates as matching `<` and `<=` (it keeps the file's rows) and
        // orders NaN above every number; here a NULL — a missing column included — makes a
        // comparison unknown and the row is not read, NaN compares as IEEE 754 says and -0.0
        // equals 0.0, as SQL engines and pyarrow do (docs/datamig.md, "Row filters").
        let filter = self
            .predicate()
            .cloned()
            .map(|p| Arc::new(ops_core::eval::Evaluator::new(p)));
        let file_io = table.file_io().clone();
        let batch_size = batch_size.max(1);
        let deletes_c = deletes.clone();
        let stream = futures::stream::iter(self.tasks().map(Ok))
            .and_then(move |task| {
                let deletes = deletes.clone();
                async move { deletes.split(task).await.map_err(MigrationError::from) }
            })
            .and_then(move |(mut task, keys)| {
                let reader = reader.clone();
                let file_io = file_io.clone();
                let read_arrow = read_arrow.clone();
                let filter = filter.clone();
                let keep = keep.clone();
                let deletes = deletes_c.clone();
                async move {
                    task.predicate = None;
                    if let Some(keep) = &keep {
                        // The dropped key columns `split` added are among `keep` (every
                        // equality delete's key is).
                        task.project_field_ids.retain(|id| keep.contains(id));
                    }
                    let batches =
                        match paged::open(&file_io, &task, &read_arrow, batch_size).await? {
                            Some(batches) => batches,
                            None => {
                                // Identity-partition values are read as constants.
                                let task = ops_core::partition_constants::for_reader(task)?;
                                let one = futures::stream::iter([Ok(task)]).boxed();
                                reader
                                    .read(one)?
                                    .stream()
                                    .map_err(MigrationError::from)
                                    .boxed()
                            }
                        };
                    Ok(batches.and_then(move |batch| {
                        futures::future::ready(convert(
                            &batch,
                            &read_arrow,
                            &deletes,
                            filter.as_deref(),
                            &keys,
                        ))
                    }))
                }
            })
            .try_flatten()
            .try_filter(|b| futures::future::ready(b.num_rows() > 0));
        Ok(stream.boxed())
    }
}

/// The top-level columns (field ids) a read projected to `ids` decodes: `ids`, every column
/// holding a field the row filter names (a struct's child keeps the struct), and every
/// equality delete's key column — the columns that decide which rows the read yields.
fn decisive_columns(ids: &[i32], read: &PlannedRead, read_arrow: &SchemaRef) -> HashSet<i32> {
    let mut keep: HashSet<i32> = ids.iter().copied().collect();
    if let Some(predicate) = read.predicate() {
        let named = predicate_field_ids(predicate);
        for field in read_arrow.fields() {
            if let Some(id) = field_id(field)
                && subtree_field_ids(field).iter().any(|f| named.contains(f))
            {
                keep.insert(id);
            }
        }
    }
    for task in read.files.iter() {
        for delete in task.deletes.iter() {
            if delete.file_type == DataContentType::EqualityDeletes {
                keep.extend(delete.equality_ids.iter().flatten().copied());
            }
        }
    }
    keep
}

/// `schema` with only the top-level fields whose field id is in `keep`.
fn narrow(schema: &SchemaRef, keep: &HashSet<i32>) -> SchemaRef {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .filter(|f| field_id(f).is_some_and(|id| keep.contains(&id)))
        .cloned()
        .collect();
    Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

fn field_id(field: &arrow_schema::Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// The field ids of `field` and everything nested in it (walked with a stack, not recursion).
fn subtree_field_ids(field: &arrow_schema::Field) -> Vec<i32> {
    use arrow_schema::DataType;
    let mut out = Vec::new();
    let mut stack = vec![field];
    while let Some(f) = stack.pop() {
        out.extend(field_id(f));
        match f.data_type() {
            DataType::Struct(children) => stack.extend(children.iter().map(|c| c.as_ref())),
            DataType::List(c)
            | DataType::LargeList(c)
            | DataType::FixedSizeList(c, _)
            | DataType::Map(c, _) => stack.push(c.as_ref()),
            _ => {}
        }
    }
    out
}

/// The field ids a bound predicate names (walked with a stack, not recursion).
fn predicate_field_ids(predicate: &iceberg::expr::BoundPredicate) -> HashSet<i32> {
    use iceberg::expr::BoundPredicate as P;
    let mut out = HashSet::new();
    let mut stack = vec![predicate];
    while let Some(p) = stack.pop() {
        match p {
            P::AlwaysTrue | P::AlwaysFalse => {}
            P::And(e) | P::Or(e) => stack.extend(e.inputs()),
            P::Not(e) => stack.extend(e.inputs()),
            P::Unary(e) => {
                out.insert(e.term().field().id);
            }
            P::Binary(e) => {
                out.insert(e.term().field().id);
            }
            P::Set(e) => {
                out.insert(e.term().field().id);
            }
        }
    }
    out
}

/// One batch as read from a file (by iceberg's reader or [`paged`]) mapped onto the read
/// schema by field id, filtered, mapped onto the target (`deletes`' widened one), without the
/// rows `keys` delete, cut back to the target's own columns.
fn convert(
    batch: &RecordBatch,
    read_arrow: &SchemaRef,
    deletes: &EqualityDeletes,
    filter: Option<&ops_core::eval::Evaluator>,
    keys: &[Arc<EqualityKeys>],
) -> Result<RecordBatch> {
    let mut read = ops_core::scan::project_by_field_id(batch, read_arrow, read_arrow)?;
    if let Some(filter) = filter {
        // A NULL (unknown) is not TRUE: arrow's filter drops it.
        let keep = filter.evaluate(&read)?;
        if keep.true_count() < read.num_rows() {
            read = arrow_select::filter::filter_record_batch(&read, &keep)?;
        }
    }
    Ok(deletes.apply(&read, read_arrow, keys)?)
}
