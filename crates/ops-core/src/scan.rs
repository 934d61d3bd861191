//! Read a table at any snapshot as a stream of Arrow batches in its current schema.
//!
//! iceberg 0.10.1's `TableScan` reads with the schema of the snapshot it scans, so after a
//! rename the old name comes back, and after a widening the old type. [`scan`] maps every batch
//! onto the table's current schema by field id: renamed columns take their new names, widened
//! ones are cast, columns added since are null, dropped ones disappear. Position deletes are
//! applied by iceberg's reader (to each task only those the planner attached to it, a patch of
//! ours: vendor/README.md); equality deletes here, NULL equal to NULL as Java applies them
//! ([`crate::equality_deletes`]; iceberg's reader drops the rows whose key is NULL), with an
//! all-`void` spec's applied to every older file. A table whose equality deletes key on a
//! column that is not a top-level column of the current schema (nested, or dropped since) is
//! refused before any row is read.
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

use crate::equality_deletes::EqualityDeletes;
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

/// As [`scan`], keeping only rows where `filter` is TRUE (columns named as
/// [`naming_schema`] says: as the table has them now when scanning its current snapshot; a
/// comparison with NULL, or with a column a file predates, is unknown and the row is not
/// kept).
pub async fn scan_filtered(
    table: &Table,
    snapshot_id: Option<i64>,
    filter: Option<Predicate>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    match plan_scan(table, snapshot_id, filter).await? {
        Some(plan) => plan.read(),
        None => Ok(futures::stream::empty().boxed()),
    }
}

/// A [`scan_filtered`] planned but not started: its files can be looked at, and some left
/// out, before a row is read — an upsert reads only the files that may hold its keys.
pub struct PlannedScan {
    table: Table,
    tasks: Vec<FileScanTask>,
    /// The snapshot's schema, as iceberg's reader reads it (with the dropped equality delete
    /// key columns it lacks: [`EqualityDeletes::widen`]).
    read_arrow: SchemaRef,
    /// The equality deletes of the tasks, applied to batches of the table's current schema
    /// (its [`EqualityDeletes::target`], as every batch comes out once they are applied).
    deletes: EqualityDeletes,
}

/// Plans [`scan_filtered`]'s read (`None`: the table has no snapshot to read). A table whose
/// equality deletes the reader cannot apply is refused here, before any row is read.
pub async fn plan_scan(
    table: &Table,
    snapshot_id: Option<i64>,
    filter: Option<Predicate>,
) -> Result<Option<PlannedScan>> {
    let md = table.metadata();
    let snapshot_id = snapshot_id.or_else(|| md.current_snapshot_id());
    let Some(snapshot_id) = snapshot_id else {
        return Ok(None);
    };
    let read_schema = snapshot_schema(table, snapshot_id)?;
    let read_arrow = Arc::new(iceberg::arrow::schema_to_arrow_schema(&read_schema)?);
    let target = crate::write::table_arrow_schema(table)?;
    let mut tasks = plan_files(table, snapshot_id, filter.as_ref()).await?;
    // An all-`void` spec's equality deletes apply to every older file; iceberg's planner
    // attaches them to the NULL tuple's files only.
    crate::equality_deletes::attach_global_deletes(table, snapshot_id, &mut tasks).await?;
    let reader = iceberg::arrow::ArrowReaderBuilder::new(
        table.file_io().clone(),
        iceberg::Runtime::try_current()?,
    )
    .build();
    let deletes =
        EqualityDeletes::for_read(table, target, reader, tasks.iter().flat_map(|t| &t.deletes))?;
    let read_arrow = deletes.widen(&read_arrow)?;
    // Refused before the first row, not after the files without them have been streamed.
    if let Some(why) = tasks.iter().find_map(|t| deletes.unsupported(&t.deletes)) {
        return Err(Error::InvalidInput(format!(
            "cannot read {}: {why}; rewrite the table's deletes (e.g. Spark's \
             rewrite_data_files) first",
            table.identifier()
        )));
    }
    Ok(Some(PlannedScan {
        table: table.clone(),
        tasks,
        read_arrow,
        deletes,
    }))
}

impl PlannedScan {
    /// The scan's tasks, one per data file the scan reads (a file listed twice in the table's
    /// manifests has two), in its order.
    pub fn files(&self) -> impl Iterator<Item = &FileScanTask> {
        self.tasks.iter()
    }

    /// Leaves out the files whose task `keep` is false for: their rows are not read.
    pub fn retain_files(&mut self, keep: impl FnMut(&FileScanTask) -> bool) {
        self.tasks.retain(keep);
    }

    /// The top-level columns `field_ids` of each file whose task `pick` is true for, as the
    /// file stores them: no delete file applied, no row filtered out, every row (of every
    /// task of the file: a file listed twice with two partition tuples is read under both).
    /// One stream per file, by path, in the scan's order; columns in the order of
    /// `field_ids`, named and typed as the table's current schema has them (a column the
    /// file predates is NULL). For what a file may hold, whatever deletes it has now or
    /// gains later: deletes only take rows away.
    pub fn read_columns(
        &self,
        field_ids: &[i32],
        pick: impl Fn(&FileScanTask) -> bool,
    ) -> Result<Vec<(String, BoxStream<'static, Result<RecordBatch>>)>> {
        let columns = |schema: &SchemaRef| -> SchemaRef {
            let fields: Vec<_> = field_ids
                .iter()
                .filter_map(|id| {
                    schema
                        .fields()
                        .iter()
                        .find(|f| field_id(f) == Some(*id))
                        .cloned()
                })
                .collect();
            Arc::new(arrow_schema::Schema::new_with_metadata(
                fields,
                schema.metadata().clone(),
            ))
        };
        let read_arrow = columns(&self.read_arrow);
        let target = columns(self.deletes.target());
        if target.fields().len() != field_ids.len() {
            return Err(Error::InvalidInput(format!(
                "columns {field_ids:?} are not all top-level columns of {}",
                self.table.identifier()
            )));
        }
        let mut order: Vec<&str> = Vec::new();
        let mut by_path: HashMap<&str, Vec<FileScanTask>> = HashMap::new();
        for planned in self.tasks.iter().filter(|t| pick(t)) {
            let mut task = planned.clone();
            task.deletes.clear();
            task.predicate = None;
            task.project_field_ids.retain(|id| field_ids.contains(id));
            let task = crate::partition_constants::for_reader(task)?;
            let path = planned.data_file_path.as_str();
            let tasks = by_path.entry(path).or_default();
            if tasks.is_empty() {
                order.push(path);
            }
            tasks.push(task);
        }
        let reader = iceberg::arrow::ArrowReaderBuilder::new(
            self.table.file_io().clone(),
            iceberg::Runtime::try_current()?,
        )
        .build();
        let mut reads = Vec::with_capacity(order.len());
        for path in order {
            let tasks = by_path.remove(path).unwrap_or_default();
            let (read_arrow, target) = (read_arrow.clone(), target.clone());
            let stream = reader
                .clone()
                .read(futures::stream::iter(tasks.into_iter().map(Ok)).boxed())?
                .stream()
                .map(move |b| project_by_field_id(&b?, &read_arrow, &target))
                .boxed();
            reads.push((path.to_string(), stream));
        }
        Ok(reads)
    }

    /// Reads the rows (see [`scan_filtered`]).
    pub fn read(self) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let PlannedScan {
            table,
            tasks,
            read_arrow,
            deletes,
        } = self;
        let evaluator = tasks
            .iter()
            .find_map(|t| t.predicate.clone())
            .map(|p| Arc::new(crate::eval::Evaluator::new(p)));
        let for_reader = |mut t: FileScanTask| {
            // The filter is evaluated below: iceberg's reader would keep the rows of a file
            // that lacks the filtered column for `<` and `<=`, and order NaN above every
            // number.
            t.predicate = None;
            // Identity-partition values are read as constants, in the schema's types.
            crate::partition_constants::for_reader(t)
        };
        let reader = iceberg::arrow::ArrowReaderBuilder::new(
            table.file_io().clone(),
            iceberg::Runtime::try_current()?,
        )
        .build();
        let deletes = Arc::new(deletes);
        let applies = deletes.clone();
        let convert =
            move |batch: iceberg::Result<RecordBatch>,
                  keys: &[Arc<crate::equality_deletes::EqualityKeys>]| {
                let batch = batch?;
                let kept = filter_batch(&batch, &read_arrow, evaluator.as_deref())?;
                applies.apply(&kept, &read_arrow, keys)
            };
        // Equality deletes are applied here, NULL equal to NULL as Java does, not by iceberg's
        // reader (which drops the rows whose equality column is NULL). The files without them
        // are read as one stream, as before (the reader overlaps their reads); each one with
        // them by itself, with its own deletes (a file listed twice has a task per entry).
        let (with_equality, plain): (Vec<FileScanTask>, Vec<FileScanTask>) =
            tasks.into_iter().partition(|t| {
                t.deletes
                    .iter()
                    .any(|d| d.file_type == iceberg::spec::DataContentType::EqualityDeletes)
            });
        let plain_convert = convert.clone();
        let plain = reader
            .clone()
            .read(futures::stream::iter(plain.into_iter().map(for_reader)).boxed())?
            .stream()
            .map(move |b| plain_convert(b, &[]));
        let with_equality = futures::stream::iter(with_equality)
            .then(move |task| {
                let deletes = deletes.clone();
                async move { deletes.split(task).await }
            })
            .map(move |split| {
                let (convert, reader) = (convert.clone(), reader.clone());
                let read = split.and_then(|(task, keys)| {
                    let tasks = futures::stream::once(futures::future::ready(for_reader(task)));
                    Ok((reader.read(tasks.boxed())?.stream(), keys))
                });
                match read {
                    Ok((stream, keys)) => stream.map(move |b| convert(b, &keys)).boxed(),
                    Err(e) => futures::stream::once(futures::future::ready(Err(e))).boxed(),
                }
            })
            // A few files read at once, as the reader overlaps the others' (a table written by
            // an upserting engine has equality deletes on most files).
            .flatten_unordered(Some(4));
        Ok(plain
            .chain(with_equality)
            .try_filter(|b| futures::future::ready(b.num_rows() > 0))
            .boxed())
    }
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

/// The schema a filter on `snapshot_id` of `table` names its columns by: the table's current
/// schema for its current snapshot (or `None`), as Java reads a branch's head and PyIceberg an
/// unpinned scan — a rename or a widening makes no snapshot, and a user names columns as the
/// table has them now; an older snapshot's own schema (Java's `useSnapshot`), so a column
/// dropped or renamed since is named as it was then.
pub fn naming_schema(table: &Table, snapshot_id: Option<i64>) -> Arc<Schema> {
    let md = table.metadata();
    match snapshot_id {
        Some(id) if Some(id) != md.current_snapshot_id() => {
            snapshot_schema(table, id).unwrap_or_else(|_| md.current_schema().clone())
        }
        _ => md.current_schema().clone(),
    }
}

/// `filter`, naming columns as `names` does, with its columns named as the schema
/// `snapshot_id` (the current snapshot when `None`) was written with — the schema iceberg's
/// planner binds a scan's filter to, by name. Columns are matched by field id, so after a
/// rename with no data commit since (the snapshot still has the old name) the new name finds
/// the column. Literals are left as they are: binding converts them to the snapshot's type
/// (`int` for a column widened since).
pub fn to_snapshot_names(
    table: &Table,
    snapshot_id: Option<i64>,
    filter: &Predicate,
    names: &Schema,
) -> Result<Predicate> {
    let md = table.metadata();
    let Some(id) = snapshot_id.or_else(|| md.current_snapshot_id()) else {
        return Ok(filter.clone());
    };
    let to = snapshot_schema(table, id)?;
    if names.schema_id() == to.schema_id() && names.as_struct() == to.as_struct() {
        return Ok(filter.clone());
    }
    rename_columns(filter, names, &to).map_err(|column| {
        Error::InvalidInput(match names.field_id_by_name(&column) {
            Some(_) => format!(
                "filter column '{column}' of {} was added after snapshot {id} was written, \
                 whose rows have no value for it",
                table.identifier()
            ),
            None => format!(
                "filter column '{column}' is not a column of {} (columns are named as the \
                 table has them {})",
                table.identifier(),
                if Some(id) == md.current_snapshot_id() {
                    "now".to_string()
                } else {
                    format!("at snapshot {id}")
                }
            ),
        })
    })
}

/// `filter` with each column named as in `from` renamed to its name in `to` (by field id);
/// `Err(name)`: a column `from` or `to` lacks. Iterative: a filter's depth is the user's.
fn rename_columns(
    filter: &Predicate,
    from: &Schema,
    to: &Schema,
) -> std::result::Result<Predicate, String> {
    use iceberg::expr::{BinaryExpression, Reference, SetExpression, UnaryExpression};
    enum Step<'a> {
        Visit(&'a Predicate),
        And,
        Or,
        Not,
    }
    let rename = |name: &str| -> std::result::Result<Reference, String> {
        from.field_id_by_name(name)
            .and_then(|id| to.name_by_field_id(id))
            .map(Reference::new)
            .ok_or_else(|| name.to_string())
    };
    // Each operator's operands are on `done` when it is popped (they were pushed after it).
    fn pop(done: &mut Vec<Predicate>) -> Predicate {
        done.pop().unwrap_or(Predicate::AlwaysTrue)
    }
    let mut steps = vec![Step::Visit(filter)];
    let mut done: Vec<Predicate> = Vec::new();
    while let Some(step) = steps.pop() {
        match step {
            Step::Visit(p) => match p {
                Predicate::AlwaysTrue | Predicate::AlwaysFalse => done.push(p.clone()),
                Predicate::And(e) | Predicate::Or(e) => {
                    let [l, r] = e.inputs();
                    steps.push(if matches!(p, Predicate::And(_)) {
                        Step::And
                    } else {
                        Step::Or
                    });
                    steps.push(Step::Visit(r));
                    steps.push(Step::Visit(l));
                }
                Predicate::Not(e) => {
                    let [inner] = e.inputs();
                    steps.push(Step::Not);
                    steps.push(Step::Visit(inner));
                }
                Predicate::Unary(e) => done.push(Predicate::Unary(UnaryExpression::new(
                    e.op(),
                    rename(e.term().name())?,
                ))),
                Predicate::Binary(e) => done.push(Predicate::Binary(BinaryExpression::new(
                    e.op(),
                    rename(e.term().name())?,
                    e.literal().clone(),
                ))),
                Predicate::Set(e) => done.push(Predicate::Set(SetExpression::new(
                    e.op(),
                    rename(e.term().name())?,
                    e.literals().clone(),
                ))),
            },
            Step::And | Step::Or => {
                let r = pop(&mut done);
                let l = pop(&mut done);
                done.push(if matches!(step, Step::And) {
                    l.and(r)
                } else {
                    l.or(r)
                });
            }
            Step::Not => {
                let inner = pop(&mut done);
                done.push(!inner);
            }
        }
    }
    Ok(pop(&mut done))
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
/// columns as [`naming_schema`] does (the table's current schema at its current snapshot);
/// they are renamed by field id to the snapshot's own schema ([`to_snapshot_names`]), which
/// iceberg's planner binds to by name. Each task carries the filter bound to that schema as
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
    let names = naming_schema(table, Some(snapshot_id));
    plan_files_named(table, snapshot_id, filter, &names).await
}

/// Refuses a table with a column default (`initial-default` or `write-default`, at any
/// level). Defaults belong to format v3 (Java refuses them before it), but PyIceberg 0.12
/// writes them into v2 tables; a reader must give a file that predates the column its
/// `initial-default`, and iceberg-ops reads such a column as NULL — a copy, delete or
/// compaction would replace the default with NULL for good. Every reading path calls this
/// before it plans.
pub fn refuse_column_defaults(table: &Table) -> Result<()> {
    for schema in table.metadata().schemas_iter() {
        let mut ids: Vec<i32> = schema.field_id_to_fields().keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(field) = schema.field_by_id(id) else {
                continue;
            };
            let default = match (&field.initial_default, &field.write_default) {
                (Some(d), _) => ("initial-default", d),
                (None, Some(d)) => ("write-default", d),
                (None, None) => continue,
            };
            let name = schema.name_by_field_id(id).unwrap_or(field.name.as_str());
            return Err(Error::InvalidInput(format!(
                "column '{name}' of {} has a {} ({:?}): column defaults are an Iceberg v3 \
                 feature (PyIceberg writes them into v2 tables too) that iceberg-ops does not \
                 apply yet; it refuses the table rather than read NULL where the default \
                 applies (use an engine that applies column defaults for this table)",
                table.identifier(),
                default.0,
                default.1
            )));
        }
    }
    Ok(())
}

/// As [`plan_files`], with `filter` naming columns as `names` does (any schema of `table`:
/// the snapshot's own for a filter already named that way).
pub async fn plan_files_named(
    table: &Table,
    snapshot_id: i64,
    filter: Option<&Predicate>,
    names: &Schema,
) -> Result<Vec<FileScanTask>> {
    plan_files_stream_named(table, snapshot_id, filter, names)
        .await?
        .try_collect()
        .await
}

/// As [`plan_files_named`], task by task: a caller that keeps less than a whole task per file
/// plans a table of a million files without holding a million tasks (each over a quarter of
/// a KiB). The tasks come in the planner's order, which is not fixed.
pub async fn plan_files_stream_named(
    table: &Table,
    snapshot_id: i64,
    filter: Option<&Predicate>,
    names: &Schema,
) -> Result<BoxStream<'static, Result<FileScanTask>>> {
    refuse_column_defaults(table)?;
    let read_schema = snapshot_schema(table, snapshot_id)?;
    let builder = table.scan().snapshot_id(snapshot_id).select_all();
    let specs = crate::partition_constants::SpecAttacher::load(table, snapshot_id).await?;
    let Some(filter) = filter else {
        let stream = builder.build()?.plan_files().await?;
        return Ok(stream
            .map(move |t| {
                let mut t = t?;
                specs.attach(&mut t);
                Ok(t)
            })
            .boxed());
    };
    let filter = &to_snapshot_names(table, Some(snapshot_id), filter, names)?;
    let bound = filter.bind(read_schema.clone(), true)?;
    let (planner, left_out) = planner_filter(filter, &read_schema, table.metadata());
    tracing::debug!(
        table = %table.identifier(),
        %filter,
        planner = %planner,
        left_out,
        "planning a filtered scan"
    );
    let pruned = if left_out {
        pruned_files(table, snapshot_id, &bound.clone().rewrite_not()).await?
    } else {
        HashSet::new()
    };
    let stream = builder.with_filter(planner).build()?.plan_files().await?;
    Ok(stream
        .map_err(Error::from)
        .try_filter(move |t| std::future::ready(!pruned.contains(&t.data_file_path)))
        .map_ok(move |mut t| {
            t.predicate = Some(bound.clone());
            specs.attach(&mut t);
            t
        })
        .boxed())
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
        // Decimals: see above. Integers: Java's `truncate[W]` (`v - (((v % W) + W) % W)`)
        // wraps for a value within W of the type's minimum, so such a row's file carries a
        // partition value near the maximum (ours writes it as Java does, to stay
        // compatible), and a projected `x <= 751` would prune the file of `x = MIN`. Such
        // terms are decided from the files' bounds (`prune::may_match`), which wrap nothing.
        let truncated = matches!(
            ty,
            PrimitiveType::Decimal { .. } | PrimitiveType::Int | PrimitiveType::Long
        ) && md.partition_specs_iter().any(|spec| {
            spec.fields().iter().any(|pf| {
                pf.source_id == field.id && matches!(pf.transform, Transform::Truncate(_))
            })
        });
        // iceberg 0.10.1's planner rewrites `NOT (d < x)` to `d >= x` and prunes on bounds that
        // leave NaN out, so a file holding NaN (for which the NOT is TRUE) would be dropped;
        // `prune::may_match` keeps files with NaN and the row evaluator decides.
        let floating = matches!(ty, PrimitiveType::Float | PrimitiveType::Double);
        if !one_type || !literals_fit || truncated || floating {
            return false;
        }
    }
    true
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// An identity-partition constant as iceberg's reader yields it (run-end encoded, timestamps,
/// times and uuids in their storage types `Int64` and `Binary`) as a plain array of `to`'s
/// type; any other column unchanged.
fn decode_constant(column: &arrow_array::ArrayRef, to: &Field) -> Result<arrow_array::ArrayRef> {
    if !matches!(
        column.data_type(),
        arrow_schema::DataType::RunEndEncoded(_, _)
    ) {
        return Ok(column.clone());
    }
    let strict = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(column, to.data_type(), &strict).map_err(|e| {
        Error::InvalidInput(format!(
            "reading {}: its partition value as {}: {e}",
            to.name(),
            to.data_type()
        ))
    })
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
                &decode_constant(batch.column(i), tf)?,
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

#[cfg(test)]
mod tests {
    use iceberg::expr::Reference;
    use iceberg::spec::{Datum, NestedField, StructType};

    use super::*;

    fn schema(id: i32, names: [&str; 3]) -> Schema {
        let address = Type::Struct(StructType::new(vec![Arc::new(NestedField::optional(
            4,
            names[2],
            Type::Primitive(PrimitiveType::String),
        ))]));
        Schema::builder()
            .with_schema_id(id)
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    names[0],
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    2,
                    names[1],
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::optional(3, "address", address)),
            ])
            .build()
            .unwrap_or_else(|e| panic!("test schema: {e}"))
    }

    #[test]
    fn columns_are_renamed_by_field_id_through_every_operator() {
        let now = schema(1, ["id", "region", "town"]);
        let then = schema(0, ["k", "area", "city"]);
        let filter = !(Reference::new("id")
            .greater_than(Datum::long(3))
            .and(Reference::new("address.town").is_null()))
        .or(Reference::new("region").is_in([Datum::string("eu"), Datum::string("us")]));
        let want = !(Reference::new("k")
            .greater_than(Datum::long(3))
            .and(Reference::new("address.city").is_null()))
        .or(Reference::new("area").is_in([Datum::string("eu"), Datum::string("us")]));
        assert_eq!(rename_columns(&filter, &now, &then), Ok(want));
        assert_eq!(
            rename_columns(&Predicate::AlwaysFalse, &now, &then),
            Ok(Predicate::AlwaysFalse)
        );
        // A name the naming schema lacks (here: the old name) is reported, not guessed.
        let old = Reference::new("k").equal_to(Datum::long(1));
        assert_eq!(rename_columns(&old, &now, &then), Err("k".to_string()));
    }

    /// A constant as iceberg's reader yields it — run-end encoded, a timestamp in its storage
    /// type — comes out as the target's plain array.
    #[test]
    fn run_end_encoded_constants_are_decoded_to_the_targets_type() -> crate::Result<()> {
        use arrow_array::{Array, Int32Array, Int64Array, RunArray, TimestampMicrosecondArray};
        use arrow_schema::{DataType, TimeUnit};
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let meta = HashMap::from([(FIELD_ID.to_string(), "7".to_string())]);
        let target = Arc::new(arrow_schema::Schema::new(vec![
            Field::new("at", ts.clone(), true).with_metadata(meta.clone()),
        ]));
        let ree = RunArray::try_new(
            &Int32Array::from(vec![3]),
            &Int64Array::from(vec![1_700_000_000_000_000]),
        )?;
        let batch = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(vec![
                Field::new("at", ree.data_type().clone(), true).with_metadata(meta),
            ])),
            vec![Arc::new(ree)],
        )?;
        let out = project_by_field_id(&batch, &target, &target)?;
        assert_eq!(out.column(0).data_type(), &ts);
        let at = out
            .column(0)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .map(|a| a.values().to_vec());
        assert_eq!(at, Some(vec![1_700_000_000_000_000; 3]));
        Ok(())
    }
}
