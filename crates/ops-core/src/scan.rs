//! Read a table at any snapshot as a stream of Arrow batches in its current schema.
//!
//! iceberg 0.10.1's `TableScan` reads with the schema of the snapshot it scans, so after a
//! rename the old name comes back, and after a widening the old type. [`scan`] maps every batch
//! onto the table's current schema by field id: renamed columns take their new names, widened
//! ones are cast, columns added since are null, dropped ones disappear. Delete files are applied
//! by iceberg's reader.
//!
//! A row filter ([`scan_filtered`], [`plan_files`]) prunes files and is then evaluated on every
//! row with SQL's three-valued logic ([`crate::eval`]). File pruning goes through iceberg's
//! planner only for conditions it decides correctly: it decodes a data file's bounds and
//! partition values with the schema of the manifest listing the file, so after `int`→`long`
//! (or `float`→`double`) it compares `int` bounds with a `long` literal, finds no order and
//! prunes the file — every row written before the widening would be lost. Conditions on such
//! columns are left out of what iceberg's planner sees and decided here from the files' statistics
//! with comparisons across the column's types ([`crate::prune`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, new_null_array};
use arrow_schema::{Field, SchemaRef};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::expr::{Bind, BoundPredicate, Predicate};
use iceberg::scan::FileScanTask;
use iceberg::spec::{ManifestContentType, PrimitiveType, Schema, TableMetadata, Transform, Type};
use iceberg::table::Table;

use crate::{Error, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// Streams every row of `table` at `snapshot_id` (the current snapshot when `None`), in the
/// table's current schema; an empty table yields no batches.
pub async fn scan(
    table: &Table,
    snapshot_id: Option<i64>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    scan_filtered(table, snapshot_id, None).await
}

/// As [`scan`], keeping only rows where `filter` is TRUE (column names as of the scanned
/// snapshot; a comparison with NULL, or with a column a file predates, is unknown and the row
/// is not kept).
pub async fn scan_filtered(
    table: &Table,
    snapshot_id: Option<i64>,
    filter: Option<Predicate>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let md = table.metadata();
    let snapshot_id = snapshot_id.or_else(|| md.current_snapshot_id());
    let Some(snapshot_id) = snapshot_id else {
        return Ok(futures::stream::empty().boxed());
    };
    let read_schema = snapshot_schema(table, snapshot_id)?;
    let read_arrow = Arc::new(iceberg::arrow::schema_to_arrow_schema(&read_schema)?);
    let target = crate::write::table_arrow_schema(table)?;
    let tasks = plan_files(table, snapshot_id, filter.as_ref()).await?;
    let evaluator = tasks
        .iter()
        .find_map(|t| t.predicate.clone())
        .map(|p| Arc::new(crate::eval::Evaluator::new(p)));
    let tasks = futures::stream::iter(tasks.into_iter().map(|mut t| {
        // The filter is evaluated below: iceberg's reader would keep the rows of a file that
        // lacks the filtered column for `<` and `<=`, and order NaN above every number.
        t.predicate = None;
        // iceberg's reader uses identity-partition values as constants and fails on a value
        // written before its source column was widened: read those columns from the file.
        let fits = match (&t.partition_spec, &t.partition) {
            (Some(spec), Some(value)) => {
                crate::ops::snapshot_partition_fits(spec, value, &t.schema)
            }
            _ => true,
        };
        if !fits {
            t.partition = None;
            t.partition_spec = None;
        }
        Ok(t)
    }))
    .boxed();
    let reader = iceberg::arrow::ArrowReaderBuilder::new(
        table.file_io().clone(),
        iceberg::Runtime::try_current()?,
    )
    .build();
    let stream = reader.read(tasks)?.stream();
    Ok(stream
        .map_err(Error::from)
        .and_then(move |batch| {
            let filtered = filter_batch(&batch, &read_arrow, evaluator.as_deref())
                .and_then(|b| project_by_field_id(&b, &read_arrow, &target));
            futures::future::ready(filtered)
        })
        .try_filter(|b| futures::future::ready(b.num_rows() > 0))
        .boxed())
}

/// `batch` (as read with `read_schema`) without the rows where `filter` is not TRUE, mapped
/// onto `read_schema` by field id.
fn filter_batch(
    batch: &RecordBatch,
    read_schema: &SchemaRef,
    filter: Option<&crate::eval::Evaluator>,
) -> Result<RecordBatch> {
    let Some(filter) = filter else {
        return Ok(batch.clone());
    };
    let read = project_by_field_id(batch, read_schema, read_schema)?;
    // A NULL (unknown) is not TRUE: arrow's filter drops it.
    let keep = filter.evaluate(&read)?;
    if keep.true_count() == read.num_rows() {
        return Ok(read);
    }
    Ok(arrow_select::filter::filter_record_batch(&read, &keep)?)
}

/// The schema `snapshot_id` of `table` was written with (the current one when unrecorded).
fn snapshot_schema(table: &Table, snapshot_id: i64) -> Result<Arc<Schema>> {
    let md = table.metadata();
    let snapshot = md.snapshot_by_id(snapshot_id).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{} has no snapshot {snapshot_id}",
            table.identifier()
        ))
    })?;
    Ok(snapshot
        .schema_id()
        .and_then(|id| md.schema_by_id(id))
        .unwrap_or_else(|| md.current_schema())
        .clone())
}

/// The file-scan tasks (delete files attached) of `table` at `snapshot_id`, without the files
/// whose statistics or partition values rule out a row where `filter` is TRUE. `filter` names
/// columns as the snapshot's schema does; each task carries it bound to that schema as
/// `predicate`, for the caller to evaluate on the rows ([`crate::eval`]) — clear it before
/// handing a task to iceberg's reader, whose row filter does not follow SQL's logic.
///
/// Every condition iceberg's planner would decide with values of another type than the
/// literal's (see the module docs) is decided here instead, from the files' statistics.
pub async fn plan_files(
    table: &Table,
    snapshot_id: i64,
    filter: Option<&Predicate>,
) -> Result<Vec<FileScanTask>> {
    let read_schema = snapshot_schema(table, snapshot_id)?;
    let builder = table.scan().snapshot_id(snapshot_id).select_all();
    let Some(filter) = filter else {
        return Ok(builder.build()?.plan_files().await?.try_collect().await?);
    };
    let bound = filter.bind(read_schema.clone(), true)?;
    let (planner, left_out) = planner_filter(filter, &read_schema, table.metadata());
    tracing::debug!(
        table = %table.identifier(),
        %filter,
        planner = %planner,
        left_out,
        "planning a filtered scan"
    );
    let mut tasks: Vec<FileScanTask> = builder
        .with_filter(planner)
        .build()?
        .plan_files()
        .await?
        .try_collect()
        .await?;
    if left_out {
        let pruned = pruned_files(table, snapshot_id, &bound.clone().rewrite_not()).await?;
        tasks.retain(|t| !pruned.contains(&t.data_file_path));
    }
    for t in &mut tasks {
        t.predicate = Some(bound.clone());
    }
    Ok(tasks)
}

/// The live data files of `snapshot_id` whose statistics allow no row where `pruning` (no
/// `NOT` left) is TRUE.
async fn pruned_files(
    table: &Table,
    snapshot_id: i64,
    pruning: &BoundPredicate,
) -> Result<HashSet<String>> {
    let mut pruned = HashSet::new();
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(pruned);
    };
    let cache = crate::ops::snapshot::ManifestCache::new(table);
    for mf in cache.manifest_list(snapshot).await?.iter() {
        if mf.content != ManifestContentType::Data {
            continue;
        }
        let manifest = cache.load(mf).await?;
        for entry in manifest.entries() {
            if entry.is_alive() && !crate::prune::may_match(pruning, entry.data_file()) {
                pruned.insert(entry.data_file().file_path().to_string());
            }
        }
    }
    Ok(pruned)
}

/// What iceberg's planner may prune by: the top-level `AND` terms of `filter` whose every column
/// it compares correctly, and whether any term was left out. Leaving out a term of an `AND`
/// only keeps more files, whatever the term holds.
///
/// A column is left to [`crate::prune`] when iceberg would compare it across types: its type
/// differs in another schema of the table (files written then have bounds and partition
/// values of that type), a literal has another type than the column's in the read schema, or
/// it is the source of a `truncate` partition field over a decimal (iceberg 0.10.1's
/// projection of a decimal literal through truncate yields a decimal of another scale, which
/// it then fails to bind, aborting the plan).
fn planner_filter(
    filter: &Predicate,
    read_schema: &Schema,
    md: &TableMetadata,
) -> (Predicate, bool) {
    let mut kept = Predicate::AlwaysTrue;
    let mut left_out = false;
    let mut terms = vec![filter];
    while let Some(term) = terms.pop() {
        if let Predicate::And(e) = term {
            let [l, r] = e.inputs();
            terms.push(r);
            terms.push(l);
            continue;
        }
        if trusted(term, read_schema, md) {
            kept = kept.and(term.clone());
        } else {
            left_out = true;
        }
    }
    (kept, left_out)
}

/// Whether iceberg's planner decides every leaf of `p` with values of the literal's type.
fn trusted(p: &Predicate, read_schema: &Schema, md: &TableMetadata) -> bool {
    let mut stack = vec![p];
    while let Some(p) = stack.pop() {
        let (name, literals): (&str, Vec<&iceberg::spec::Datum>) = match p {
            Predicate::AlwaysTrue | Predicate::AlwaysFalse => continue,
            Predicate::And(e) | Predicate::Or(e) => {
                stack.extend(e.inputs());
                continue;
            }
            Predicate::Not(e) => {
                stack.extend(e.inputs());
                continue;
            }
            Predicate::Unary(e) => (e.term().name(), Vec::new()),
            Predicate::Binary(e) => (e.term().name(), vec![e.literal()]),
            Predicate::Set(e) => (e.term().name(), e.literals().iter().collect()),
        };
        let Some(field) = read_schema.field_by_name(name) else {
            return false;
        };
        let Type::Primitive(ty) = field.field_type.as_ref() else {
            return false;
        };
        let one_type = md
            .schemas_iter()
            .filter_map(|s| s.field_by_id(field.id))
            .all(|f| f.field_type.as_ref() == field.field_type.as_ref());
        let literals_fit = literals.iter().all(|l| l.data_type() == ty);
        let decimal_truncate = matches!(ty, PrimitiveType::Decimal { .. })
            && md.partition_specs_iter().any(|spec| {
                spec.fields().iter().any(|pf| {
                    pf.source_id == field.id && matches!(pf.transform, Transform::Truncate(_))
                })
            });
        // iceberg 0.10.1's planner rewrites `NOT (d < x)` to `d >= x` and prunes on bounds that
        // leave NaN out, so a file holding NaN (for which the NOT is TRUE) would be dropped;
        // `prune::may_match` keeps files with NaN and the row evaluator decides.
        let floating = matches!(ty, PrimitiveType::Float | PrimitiveType::Double);
        if !one_type || !literals_fit || decimal_truncate || floating {
            return false;
        }
    }
    true
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// Maps `batch` (read with `read_schema`) onto `target` by field id.
pub fn project_by_field_id(
    batch: &RecordBatch,
    read_schema: &SchemaRef,
    target: &SchemaRef,
) -> Result<RecordBatch> {
    // The reader may drop field metadata; fall back to the read schema's ids by name.
    let read_ids: HashMap<&str, i32> = read_schema
        .fields()
        .iter()
        .filter_map(|f| field_id(f).map(|id| (f.name().as_str(), id)))
        .collect();
    let by_id: HashMap<i32, usize> = batch
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            field_id(f)
                .or_else(|| read_ids.get(f.name().as_str()).copied())
                .map(|id| (id, i))
        })
        .collect();
    let rows = batch.num_rows();
    let mut columns = Vec::with_capacity(target.fields().len());
    for tf in target.fields() {
        let column = match field_id(tf).and_then(|id| by_id.get(&id)) {
            Some(&i) => ops_reconcile::convert_array(
                batch.column(i),
                tf.data_type(),
                tf.name(),
                ops_reconcile::ChildMatch::ByFieldId,
            )
            .map_err(|e| Error::InvalidInput(format!("reading {}: {e}", tf.name())))?,
            None => new_null_array(tf.data_type(), rows),
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &options,
    )?)
}
