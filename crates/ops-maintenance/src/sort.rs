//! Sorts a stream of record batches by Iceberg sort fields in bounded memory (compaction's
//! `--sort`, Java's `SortDataRewriter` without Spark's shuffle).
//!
//! 1. Rows are buffered until they take [`Sorter::memory`] bytes (Arrow buffers plus their
//!    `arrow_row` keys).
//! 2. A full buffer is sorted (stable, so equal keys keep their input order) and spilled to an
//!    anonymous temporary Arrow IPC file (`TMPDIR`; the OS removes it when it is closed, a
//!    crash included).
//! 3. At the end the spilled runs and the last buffer are merged k-way. A merge holds one batch
//!    of each run, so it opens at most as many runs as the memory holds batches of (2 to
//!    [`MAX_OPEN_RUNS`]); past that, runs are merged level by level (that many runs of one
//!    level into one of the next), so open files and memory stay bounded and each row is
//!    rewritten once per level. A stream that fits in memory is sorted there and never touches
//!    disk.
//!
//! Keys are compared as `arrow_row` encodes them: by the transformed value, each field
//! ascending or descending with NULLs first or last as the sort field says; floats in IEEE total
//! order (`-NaN < -inf < … < inf < NaN`), strings and binaries by their bytes. A field nested in
//! structs is NULL where any parent is.

use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{SchemaRef, SortOptions};
use arrow_select::interleave::interleave_record_batch;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use iceberg::spec::{NullOrder, SortDirection, SortOrder, TableMetadata, Transform};
use iceberg::transform::{BoxedTransformFunction, create_transform_function};

use ops_core::{Error, Result};

/// Most runs merged at once (fewer when the memory holds fewer of their batches); more are
/// first merged into one run, level by level (bounded open files and memory).
pub const MAX_OPEN_RUNS: usize = 64;

/// Rows per batch the sorter emits.
const OUTPUT_ROWS: usize = 8192;

/// One sort field: a column by field id, the transform whose result is compared, and the order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    /// Field id of the source column (nested columns too).
    pub field_id: i32,
    /// Compared on `transform(column)`.
    pub transform: Transform,
    /// Largest first.
    pub descending: bool,
    /// NULLs before every value.
    pub nulls_first: bool,
}

impl SortKey {
    /// The keys of an Iceberg sort order.
    pub fn of_order(order: &SortOrder) -> Vec<SortKey> {
        order
            .fields
            .iter()
            .map(|f| SortKey {
                field_id: f.source_id,
                transform: f.transform,
                descending: f.direction == SortDirection::Descending,
                nulls_first: f.null_order == NullOrder::First,
            })
            .collect()
    }
}

/// What to sort by: the table's default sort order, or columns named by the user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SortSpec {
    /// The table's default sort order (Java's `sort` strategy without `sort-order`).
    TableOrder,
    /// These columns or transforms of them, in order (Java's `sort-order` option, z-order
    /// aside).
    Columns(Vec<SortColumn>),
}

/// A column, or a transform of one, to sort by.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SortColumn {
    /// Its name in the current schema (`a.b` inside structs).
    pub name: String,
    /// Compared on `transform(column)` (`Identity`: the column itself).
    pub transform: Transform,
    /// Largest first.
    pub descending: bool,
    /// NULLs before every value.
    pub nulls_first: bool,
}

/// A [`SortSpec`] resolved against a table's current schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSort {
    /// The keys, by field id.
    pub keys: Vec<SortKey>,
    /// The table sort order these keys are (written as the files' `sort_order_id`), if any.
    pub order_id: Option<i64>,
    /// As a user reads it: `id ASC NULLS FIRST, bucket[4](name) DESC NULLS LAST`.
    pub description: String,
}

impl SortSpec {
    /// Parses `term [ASC|DESC] [NULLS FIRST|NULLS LAST], ...` (SQL's `ORDER BY` list, as
    /// Spark's `rewrite_data_files` takes its `sort_order`), where a term is a column (`a.b`
    /// inside structs) or a transform of one in Spark's words: `bucket(16, id)`,
    /// `truncate(4, name)` (or `truncate(name, 4)`), `years(ts)`, `months(ts)`, `days(ts)`,
    /// `hours(ts)` (also `year`, `month`, `day`/`date`, `hour`/`date_hour`) and `identity(c)`.
    /// The null order defaults as Iceberg's does: first when ascending, last when descending.
    pub fn parse_columns(text: &str) -> Result<SortSpec> {
        let usage = "expected `col [ASC|DESC] [NULLS FIRST|NULLS LAST], ...`, a column \
                     or a transform of one such as `bucket(16, id)` or `days(ts)`";
        let mut columns = Vec::new();
        for part in split_outside_parens(text)? {
            let part = part.trim();
            if part.is_empty() {
                return Err(Error::InvalidInput(format!(
                    "sort order '{text}' has an empty column: {usage}"
                )));
            }
            // The term ends at its closing parenthesis, or at the first space.
            let (term, rest) = match part.find('(') {
                Some(open) if !part[..open].trim().contains(char::is_whitespace) => {
                    let close = part.rfind(')').ok_or_else(|| {
                        Error::InvalidInput(format!(
                            "sort order '{text}': '{part}' has no closing parenthesis"
                        ))
                    })?;
                    part.split_at(close + 1)
                }
                _ => part.split_at(part.find(char::is_whitespace).unwrap_or(part.len())),
            };
            let (name, transform) = parse_term(term.trim(), text)?;
            let upper: Vec<String> = rest
                .split_whitespace()
                .map(|w| w.to_ascii_uppercase())
                .collect();
            let words: Vec<&str> = upper.iter().map(String::as_str).collect();
            let (descending, nulls) = match words.as_slice() {
                [] | ["ASC"] => (false, None),
                ["DESC"] => (true, None),
                ["NULLS", n] | ["ASC", "NULLS", n] => (false, Some(*n)),
                ["DESC", "NULLS", n] => (true, Some(*n)),
                _ => {
                    return Err(Error::InvalidInput(format!(
                        "sort order '{text}': cannot read '{part}': {usage}"
                    )));
                }
            };
            let nulls_first = match nulls {
                None => !descending,
                Some("FIRST") => true,
                Some("LAST") => false,
                Some(other) => {
                    return Err(Error::InvalidInput(format!(
                        "sort order '{text}': NULLS {other} is neither FIRST nor LAST"
                    )));
                }
            };
            columns.push(SortColumn {
                name,
                transform,
                descending,
                nulls_first,
            });
        }
        Ok(SortSpec::Columns(columns))
    }

    /// The keys of this sort on `md`'s current schema; `table` names the table in errors.
    pub fn resolve(&self, md: &TableMetadata, table: &str) -> Result<ResolvedSort> {
        let schema = md.current_schema();
        let keys = match self {
            SortSpec::TableOrder => {
                let order = md.default_sort_order();
                if order.is_unsorted() {
                    return Err(Error::InvalidInput(format!(
                        "{table} has no sort order to sort by: give the columns with \
                         --sort-by 'col [ASC|DESC], ...' (or give the table a sort order, e.g. with \
                         Spark's `ALTER TABLE ... WRITE ORDERED BY`)"
                    )));
                }
                SortKey::of_order(order)
            }
            SortSpec::Columns(columns) => {
                let mut keys = Vec::with_capacity(columns.len());
                for c in columns {
                    let field = schema.field_by_name(&c.name).ok_or_else(|| {
                        // The columns it has, as `--where` lists them, and the one meant when
                        // only the case differs.
                        let fields = schema.as_struct().fields();
                        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                        let hint = fields
                            .iter()
                            .find(|f| f.name.eq_ignore_ascii_case(&c.name))
                            .map(|f| {
                                format!("; did you mean '{}'? (names are case-sensitive)", f.name)
                            })
                            .unwrap_or_default();
                        Error::InvalidInput(format!(
                            "cannot sort {table} by '{}': no such column (columns: {}){hint}",
                            c.name,
                            names.join(", ")
                        ))
                    })?;
                    if !field.field_type.is_primitive() {
                        return Err(Error::InvalidInput(format!(
                            "cannot sort {table} by '{}': it is {}, not a primitive column",
                            c.name,
                            nested_kind(&c.name, &field.field_type)
                        )));
                    }
                    if let Err(e) = c.transform.result_type(&field.field_type) {
                        return Err(Error::InvalidInput(format!(
                            "cannot sort {table} by {}({}): the transform does not apply to \
                             its type {}: {}",
                            c.transform,
                            c.name,
                            field.field_type,
                            e.message()
                        )));
                    }
                    keys.push(SortKey {
                        field_id: field.id,
                        transform: c.transform,
                        descending: c.descending,
                        nulls_first: c.nulls_first,
                    });
                }
                keys
            }
        };
        // Refused here, by name, rather than in the first group to sort (after others wrote
        // files): a transform iceberg defines for the type but whose arrow function does not
        // evaluate it yet (0.10.1: `hour` of nanosecond timestamps).
        for k in &keys {
            if let Some(field) = schema.field_by_id(k.field_id) {
                evaluable(k.transform, &field.field_type).map_err(|e| {
                    Error::InvalidInput(format!(
                        "cannot sort {table} by {}({}): {e}",
                        k.transform,
                        schema
                            .name_by_field_id(k.field_id)
                            .unwrap_or(field.name.as_str())
                    ))
                })?;
            }
        }
        // A file is marked with an order only when it is one of the table's (Java's
        // `outputSortOrderId`): readers may rely on what the id says.
        // The default order first, when it is the one (several orders may have equal fields).
        let default = md.default_sort_order();
        let order_id = std::iter::once(default.as_ref())
            .chain(md.sort_orders_iter().map(|o| o.as_ref()))
            .find(|o| !o.is_unsorted() && SortKey::of_order(o) == keys)
            .map(|o| o.order_id);
        let description = keys
            .iter()
            .map(|k| {
                let name = schema
                    .name_by_field_id(k.field_id)
                    .map_or_else(|| format!("field {}", k.field_id), str::to_string);
                let column = match k.transform {
                    Transform::Identity => name,
                    t => format!("{t}({name})"),
                };
                format!(
                    "{column} {} NULLS {}",
                    if k.descending { "DESC" } else { "ASC" },
                    if k.nulls_first { "FIRST" } else { "LAST" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        Ok(ResolvedSort {
            keys,
            order_id,
            description,
        })
    }
}

/// Whether iceberg's arrow function of `transform` evaluates a column of type `ty` (tried on
/// an empty array of the type the reader produces); why not, in words.
fn evaluable(transform: Transform, ty: &iceberg::spec::Type) -> std::result::Result<(), String> {
    let arrow = iceberg::arrow::type_to_arrow_type(ty).map_err(|e| e.to_string())?;
    let function = create_transform_function(&transform).map_err(|e| e.to_string())?;
    function
        .transform(arrow_array::new_empty_array(&arrow))
        .map(|_| ())
        .map_err(|e| {
            format!(
                "iceberg's {transform} transform does not evaluate {ty} columns yet ({e}); sort by \
                 the column itself or another transform"
            )
        })
}

/// `text` split at its commas outside parentheses (a transform's arguments stay together).
fn split_outside_parens(text: &str) -> Result<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "sort order '{text}' closes a parenthesis it never opened"
                    ))
                })?;
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(Error::InvalidInput(format!(
            "sort order '{text}' leaves a parenthesis open"
        )));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// A sort term: a column, or `name(args)` in Spark's transform words (Iceberg's
/// `Spark3Util.toIcebergTerm`), the width of `bucket`/`truncate` on either side of the column.
fn parse_term(term: &str, text: &str) -> Result<(String, Transform)> {
    let Some(open) = term.find('(') else {
        return Ok((term.to_string(), Transform::Identity));
    };
    let name = term[..open].trim().to_ascii_lowercase();
    let inner = term[open + 1..]
        .strip_suffix(')')
        .unwrap_or(&term[open + 1..]);
    let args: Vec<&str> = inner.split(',').map(str::trim).collect();
    let bad = |why: String| {
        Error::InvalidInput(if text.trim() == term.trim() {
            format!("sort order '{term}' {why}")
        } else {
            format!("sort order '{text}': '{term}' {why}")
        })
    };
    let one_column = |args: &[&str]| match args {
        [c] if !c.is_empty() && !c.contains(['(', ')']) => Ok(c.to_string()),
        _ => Err(bad("takes one column".to_string())),
    };
    // `bucket(16, id)` or `bucket(id, 16)`: the number is the width, the other the column.
    let width_and_column = |args: &[&str]| -> Result<(u32, String)> {
        // Java's widths are `int`s.
        let width = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|w| *w > 0 && i32::try_from(*w).is_ok())
        };
        let parsed = match args {
            [a, b] => match (width(a), width(b)) {
                (Some(w), None) if !b.is_empty() => Some((w, b.to_string())),
                (None, Some(w)) if !a.is_empty() => Some((w, a.to_string())),
                _ => None,
            },
            _ => None,
        };
        parsed.ok_or_else(|| bad("takes a width (a whole number above 0) and a column".to_string()))
    };
    Ok(match name.as_str() {
        "identity" => (one_column(&args)?, Transform::Identity),
        "bucket" => {
            let (n, c) = width_and_column(&args)?;
            (c, Transform::Bucket(n))
        }
        "truncate" => {
            let (w, c) = width_and_column(&args)?;
            (c, Transform::Truncate(w))
        }
        "year" | "years" => (one_column(&args)?, Transform::Year),
        "month" | "months" => (one_column(&args)?, Transform::Month),
        "day" | "days" | "date" => (one_column(&args)?, Transform::Day),
        "hour" | "hours" | "date_hour" => (one_column(&args)?, Transform::Hour),
        "zorder" => {
            return Err(bad(
                "is a z-order, which compaction does not write yet: sort by columns or transforms"
                    .to_string(),
            ));
        }
        _ => {
            return Err(bad(
                "is not a transform: use bucket(N, col), truncate(W, col), years(col), \
                 months(col), days(col), hours(col) or identity(col)"
                    .to_string(),
            ));
        }
    })
}

/// A nested type in words, for an error: iceberg's `Display` runs a struct's field types
/// together (`struct<intstring>`). A struct names its fields, the first as the way out.
fn nested_kind(name: &str, t: &iceberg::spec::Type) -> String {
    use iceberg::spec::Type;
    match t {
        Type::Struct(st) => {
            let fields: Vec<&str> = st.fields().iter().map(|f| f.name.as_str()).collect();
            match fields.first() {
                Some(first) => format!(
                    "a struct of {} (sort by a field of it, e.g. '{name}.{first}')",
                    fields.join(", ")
                ),
                None => "an empty struct".to_string(),
            }
        }
        Type::List(_) => "a list".to_string(),
        Type::Map(_) => "a map".to_string(),
        Type::Primitive(p) => p.to_string(),
    }
}

/// Sorts batches of one schema by [`SortKey`]s (see the module docs).
pub struct Sorter {
    schema: SchemaRef,
    keys: Vec<SortKey>,
    transforms: Vec<BoxedTransformFunction>,
    converter: RowConverter,
    memory: usize,
}

impl std::fmt::Debug for Sorter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorter")
            .field("keys", &self.keys)
            .field("memory", &self.memory)
            .finish_non_exhaustive()
    }
}

impl Sorter {
    /// A sorter of batches with `schema` (field ids in `PARQUET:field_id` metadata) that holds
    /// about `memory` bytes of rows before it spills.
    ///
    /// A key whose field is not a column of `schema` (or lies in a list or map), or whose
    /// transform does not apply to its type, is an [`Error::InvalidInput`] naming it.
    pub fn new(schema: SchemaRef, keys: Vec<SortKey>, memory: usize) -> Result<Self> {
        if keys.is_empty() {
            return Err(Error::InvalidInput(
                "a sort needs at least one field".into(),
            ));
        }
        let empty = RecordBatch::new_empty(schema.clone());
        let mut transforms = Vec::with_capacity(keys.len());
        let mut fields = Vec::with_capacity(keys.len());
        for key in &keys {
            let column =
                ops_core::eval::column_by_field_id(&empty, key.field_id)?.ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "sort field id {} is not a column of the table outside lists and maps",
                        key.field_id
                    ))
                })?;
            let transform = create_transform_function(&key.transform)?;
            let transformed = transform.transform(column.clone()).map_err(|e| {
                Error::InvalidInput(format!(
                    "cannot sort by {}(field id {}) of type {}: {e}",
                    key.transform,
                    key.field_id,
                    column.data_type()
                ))
            })?;
            fields.push(SortField::new_with_options(
                transformed.data_type().clone(),
                SortOptions {
                    descending: key.descending,
                    nulls_first: key.nulls_first,
                },
            ));
            transforms.push(transform);
        }
        Ok(Self {
            schema,
            keys,
            transforms,
            converter: RowConverter::new(fields)?,
            memory: memory.max(1),
        })
    }

    /// Bytes of rows held before a run is spilled.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// Sorts `input` (read to its end first) into a stream of sorted batches.
    pub async fn sort<S>(self, mut input: S) -> Result<BoxStream<'static, Result<RecordBatch>>>
    where
        S: Stream<Item = Result<RecordBatch>> + Unpin,
    {
        let sorter = Arc::new(self);
        let mut buffer = Buffer::default();
        // Spilled runs with their merge level: `fan_in` runs of one level are merged into one
        // of the next (each row is rewritten once per level, not once per spill).
        let mut runs: Vec<(u32, Run)> = Vec::new();
        let mut fan_in = MAX_OPEN_RUNS;
        while let Some(batch) = input.next().await {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let rows = sorter.rows(&batch)?;
            buffer.bytes += batch.get_array_memory_size() + rows.size();
            buffer.rows_held += batch.num_rows();
            buffer.batches.push(batch);
            buffer.rows.push(rows);
            if buffer.bytes >= sorter.memory {
                // A merge holds one batch of each run: as many runs as fit in the memory.
                let row_bytes = buffer.bytes / buffer.rows_held.max(1);
                fan_in = (sorter.memory / (row_bytes * OUTPUT_ROWS).max(1)).clamp(2, MAX_OPEN_RUNS);
                let full = std::mem::take(&mut buffer);
                let s = sorter.clone();
                let run = blocking(move || s.spill(full.into_run())).await?;
                runs.push((0, run));
                while let Some(level) = full_level(&runs, fan_in) {
                    let group: Vec<Run> =
                        runs.drain(runs.len() - fan_in..).map(|(_, r)| r).collect();
                    let s = sorter.clone();
                    runs.push((level + 1, blocking(move || s.spill_merged(group)).await?));
                }
            }
        }
        let last = blocking(move || Ok(buffer.into_run())).await?;
        if runs.is_empty() {
            // Everything fitted in memory: emit the one run as it is.
            return Ok(run_stream(last));
        }
        runs.push((0, last));
        // The final merge opens at most `fan_in` runs: the newest (smallest) are merged first.
        while runs.len() > fan_in {
            let group: Vec<Run> = runs.drain(runs.len() - fan_in..).map(|(_, r)| r).collect();
            let s = sorter.clone();
            runs.push((u32::MAX, blocking(move || s.spill_merged(group)).await?));
        }
        let runs: Vec<Run> = runs.into_iter().map(|(_, r)| r).collect();
        tracing::debug!(runs = runs.len(), "merging spilled sort runs");
        let merge = blocking({
            let s = sorter.clone();
            move || Merge::new(s, runs)
        })
        .await?;
        Ok(futures::stream::try_unfold(merge, |merge| async move {
            let (merge, next) = blocking(move || {
                let mut merge = merge;
                let next = merge.next_batch()?;
                Ok((merge, next))
            })
            .await?;
            Ok(next.map(|b| (b, merge)))
        })
        .boxed())
    }

    /// The sort keys of `batch`'s rows.
    fn rows(&self, batch: &RecordBatch) -> Result<Rows> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.keys.len());
        for (key, transform) in self.keys.iter().zip(&self.transforms) {
            let column =
                ops_core::eval::column_by_field_id(batch, key.field_id)?.ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "sort field id {} is missing from a batch",
                        key.field_id
                    ))
                })?;
            columns.push(transform.transform(column)?);
        }
        Ok(self.converter.convert_columns(&columns)?)
    }

    /// Writes `run` to an anonymous temporary file and returns it as a run read back from there.
    fn spill(&self, mut run: Run) -> Result<Run> {
        let file = tempfile::tempfile().map_err(|e| io_error("a temporary sort file", e))?;
        let rows = {
            let writer = file
                .try_clone()
                .map_err(|e| io_error("a temporary sort file", e))?;
            let mut writer = FileWriter::try_new(BufWriter::new(writer), &self.schema)?;
            let mut rows = 0;
            while let Some(batch) = run.next_batch()? {
                rows += batch.num_rows();
                writer.write(&batch)?;
            }
            writer.finish()?;
            rows
        };
        drop(run);
        let mut file = file;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| io_error("a temporary sort file", e))?;
        tracing::debug!(rows, "sort run spilled");
        Ok(Run::Spilled(FileReader::try_new(
            BufReader::new(file),
            None,
        )?))
    }

    /// Merges `runs` into one spilled run.
    fn spill_merged(self: &Arc<Self>, runs: Vec<Run>) -> Result<Run> {
        let merge = Merge::new(self.clone(), runs)?;
        self.spill(Run::Merged(Box::new(merge)))
    }
}

/// Rows buffered before they are sorted.
#[derive(Default)]
struct Buffer {
    batches: Vec<RecordBatch>,
    rows: Vec<Rows>,
    bytes: usize,
    rows_held: usize,
}

/// The level of the newest `fan_in` runs when they are all of one level (then they are merged).
fn full_level(runs: &[(u32, Run)], fan_in: usize) -> Option<u32> {
    let tail = runs.get(runs.len().checked_sub(fan_in)?..)?;
    let level = tail.last()?.0;
    tail.iter().all(|(l, _)| *l == level).then_some(level)
}

impl Buffer {
    /// The buffer as a sorted run: its rows' positions in key order (stable).
    fn into_run(self) -> Run {
        let rows = self.rows;
        let mut order: Vec<(usize, usize)> = rows
            .iter()
            .enumerate()
            .flat_map(|(b, r)| (0..r.num_rows()).map(move |i| (b, i)))
            .collect();
        order.sort_by(|&(ab, ai), &(bb, bi)| rows[ab].row(ai).cmp(&rows[bb].row(bi)));
        Run::Memory {
            batches: self.batches,
            order,
            next: 0,
        }
    }
}

/// A sorted sequence of rows.
enum Run {
    /// Buffered batches and the order of their rows.
    Memory {
        batches: Vec<RecordBatch>,
        order: Vec<(usize, usize)>,
        next: usize,
    },
    /// A run written to a temporary file, read back a batch at a time.
    Spilled(FileReader<BufReader<File>>),
    /// Runs merged on the fly (only while being spilled as one).
    Merged(Box<Merge>),
}

impl Run {
    /// The run's next rows, in order, or `None` at its end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self {
            Run::Memory {
                batches,
                order,
                next,
            } => {
                if *next >= order.len() {
                    return Ok(None);
                }
                let end = (*next + OUTPUT_ROWS).min(order.len());
                let refs: Vec<&RecordBatch> = batches.iter().collect();
                let batch = interleave_record_batch(&refs, &order[*next..end])?;
                *next = end;
                Ok(Some(batch))
            }
            Run::Spilled(reader) => loop {
                match reader.next() {
                    None => return Ok(None),
                    Some(batch) => {
                        let batch = batch?;
                        if batch.num_rows() > 0 {
                            return Ok(Some(batch));
                        }
                    }
                }
            },
            Run::Merged(merge) => merge.next_batch(),
        }
    }
}

/// The whole of one run as a stream.
fn run_stream(run: Run) -> BoxStream<'static, Result<RecordBatch>> {
    futures::stream::unfold(run, |mut run| async move {
        run.next_batch().transpose().map(|batch| (batch, run))
    })
    .boxed()
}

/// The current batch of one run being merged.
struct Cursor {
    batch: RecordBatch,
    rows: Rows,
    pos: usize,
}

/// A k-way merge of sorted runs: a binary heap of run indices, ordered by each run's current
/// row (ties by run index, so rows of earlier runs come first and the sort stays stable).
struct Merge {
    sorter: Arc<Sorter>,
    runs: Vec<Run>,
    cursors: Vec<Option<Cursor>>,
    heap: Vec<usize>,
}

impl Merge {
    fn new(sorter: Arc<Sorter>, mut runs: Vec<Run>) -> Result<Self> {
        let mut cursors = Vec::with_capacity(runs.len());
        let mut heap = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter_mut().enumerate() {
            let cursor = match run.next_batch()? {
                Some(batch) => {
                    heap.push(i);
                    Some(Cursor {
                        rows: sorter.rows(&batch)?,
                        batch,
                        pos: 0,
                    })
                }
                None => None,
            };
            cursors.push(cursor);
        }
        let mut merge = Self {
            sorter,
            runs,
            cursors,
            heap,
        };
        for i in (0..merge.heap.len() / 2).rev() {
            merge.sift_down(i);
        }
        Ok(merge)
    }

    /// Whether run `a`'s current row sorts before run `b`'s.
    fn before(&self, a: usize, b: usize) -> bool {
        match (&self.cursors[a], &self.cursors[b]) {
            (Some(x), Some(y)) => match x.rows.row(x.pos).cmp(&y.rows.row(y.pos)) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => a < b,
            },
            // Exhausted runs are never in the heap.
            _ => a < b,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.before(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < n && self.before(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// Up to [`OUTPUT_ROWS`] next rows in order, or `None` once every run is done. A batch
    /// ends early where a run's current batch does (the output is taken from the current
    /// batches).
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(OUTPUT_ROWS);
        let mut exhausted = None;
        while picks.len() < OUTPUT_ROWS {
            let Some(&top) = self.heap.first() else {
                break;
            };
            let Some(cursor) = self.cursors[top].as_mut() else {
                break;
            };
            picks.push((top, cursor.pos));
            cursor.pos += 1;
            if cursor.pos == cursor.batch.num_rows() {
                exhausted = Some(top);
                break;
            }
            self.sift_down(0);
        }
        if picks.is_empty() {
            return Ok(None);
        }
        // Runs without a cursor are never picked; any batch stands in for them.
        let placeholder = &picks_batch(&self.cursors, picks[0].0)?;
        let refs: Vec<&RecordBatch> = self
            .cursors
            .iter()
            .map(|c| c.as_ref().map_or(placeholder, |c| &c.batch))
            .collect();
        let out = interleave_record_batch(&refs, &picks)?;
        if let Some(run) = exhausted {
            match self.runs[run].next_batch()? {
                Some(batch) => {
                    self.cursors[run] = Some(Cursor {
                        rows: self.sorter.rows(&batch)?,
                        batch,
                        pos: 0,
                    });
                    self.sift_down(0);
                }
                None => {
                    self.cursors[run] = None;
                    self.heap.swap_remove(0);
                    if !self.heap.is_empty() {
                        self.sift_down(0);
                    }
                }
            }
        }
        Ok(Some(out))
    }
}

fn picks_batch(cursors: &[Option<Cursor>], run: usize) -> Result<RecordBatch> {
    cursors
        .get(run)
        .and_then(Option::as_ref)
        .map(|c| c.batch.clone())
        .ok_or_else(|| Error::InvalidInput("sort merge lost its current batch".into()))
}

/// Runs `f` on tokio's blocking pool (sorting, spilling and merging are CPU and file work).
async fn blocking<T, F>(f: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::InvalidInput(format!("the sort stopped: {e}")))?
}

fn io_error(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: std::env::temp_dir().join(what),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, StringArray, StructArray};
    use arrow_schema::{DataType, Field, Fields, Schema};
    use proptest::prelude::*;

    use super::*;

    fn column(name: &str, transform: Transform, descending: bool, nulls_first: bool) -> SortColumn {
        SortColumn {
            name: name.to_string(),
            transform,
            descending,
            nulls_first,
        }
    }

    /// Spark's transform words, the width on either side of the column; commas inside a
    /// transform do not split the list.
    #[test]
    fn sort_terms_take_sparks_transforms() -> Result<()> {
        let spec = SortSpec::parse_columns(
            "bucket(16, id) DESC, truncate(name, 4), days(ts) NULLS LAST, s.a, \
             Hours( ts ) desc nulls first, identity(x), year(d), months(d), date_hour(ts), date(ts)",
        )?;
        assert_eq!(
            spec,
            SortSpec::Columns(vec![
                column("id", Transform::Bucket(16), true, false),
                column("name", Transform::Truncate(4), false, true),
                column("ts", Transform::Day, false, false),
                column("s.a", Transform::Identity, false, true),
                column("ts", Transform::Hour, true, true),
                column("x", Transform::Identity, false, true),
                column("d", Transform::Year, false, true),
                column("d", Transform::Month, false, true),
                column("ts", Transform::Hour, false, true),
                column("ts", Transform::Day, false, true),
            ])
        );
        Ok(())
    }

    /// Each malformed term is named with what it lacks.
    #[test]
    fn malformed_sort_terms_say_what_is_wrong() {
        for (text, want) in [
            ("bucket(id)", "takes a width"),
            ("bucket(0, id)", "takes a width"),
            ("truncate(4, 5)", "takes a width"),
            ("days(a, b)", "takes one column"),
            ("days()", "takes one column"),
            ("zorder(a, b)", "z-order"),
            ("frob(a)", "is not a transform"),
            ("bucket(4, id", "leaves a parenthesis open"),
            ("id)", "closes a parenthesis it never opened"),
            ("id,", "has an empty column"),
            ("bucket(4, id) sideways", "cannot read"),
        ] {
            let err = SortSpec::parse_columns(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    /// A transform iceberg defines for a type but whose arrow function does not evaluate it
    /// is found out before any group is sorted.
    #[test]
    fn transforms_are_tried_on_the_columns_type() {
        use iceberg::spec::{PrimitiveType, Type};
        let binary = Type::Primitive(PrimitiveType::Binary);
        assert!(evaluable(Transform::Bucket(4), &binary).is_ok());
        // Patched in the vendored iceberg (its truncate did not take the `LargeBinary` the
        // reader makes).
        assert!(evaluable(Transform::Truncate(3), &binary).is_ok());
        assert!(evaluable(Transform::Day, &Type::Primitive(PrimitiveType::Timestamp)).is_ok());
        let err = evaluable(
            Transform::Hour,
            &Type::Primitive(PrimitiveType::TimestampNs),
        )
        .err()
        .unwrap_or_default();
        assert!(
            err.contains("does not evaluate timestamp_ns columns yet"),
            "{err}"
        );
    }

    /// A struct column in an error names its fields, not their types run together.
    #[test]
    fn a_nested_column_is_described_in_words() {
        use iceberg::spec::{NestedField, PrimitiveType, StructType, Type};
        let st = Type::Struct(StructType::new(vec![
            NestedField::optional(2, "a", Type::Primitive(PrimitiveType::Int)).into(),
            NestedField::optional(3, "b", Type::Primitive(PrimitiveType::String)).into(),
        ]));
        assert_eq!(
            nested_kind("s", &st),
            "a struct of a, b (sort by a field of it, e.g. 's.a')"
        );
    }

    fn field(name: &str, ty: DataType, id: i32) -> Field {
        Field::new(name, ty, true).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    }

    fn schema() -> SchemaRef {
        let inner = Fields::from(vec![field("v", DataType::Int64, 4)]);
        Arc::new(Schema::new(vec![
            field("a", DataType::Int64, 1),
            field("b", DataType::Utf8, 2),
            field("s", DataType::Struct(inner), 3),
        ]))
    }

    /// Batches of `rows` (a, b, s.v with s NULL where `parent_null`), `per` rows each.
    fn batches(rows: &[Row], per: usize) -> Vec<RecordBatch> {
        let schema = schema();
        rows.chunks(per.max(1))
            .map(|chunk| {
                let a = Int64Array::from(chunk.iter().map(|r| r.0).collect::<Vec<_>>());
                let b = StringArray::from(chunk.iter().map(|r| r.1.clone()).collect::<Vec<_>>());
                let v = Int64Array::from(chunk.iter().map(|r| r.2).collect::<Vec<_>>());
                let nulls = arrow_buffer::NullBuffer::from(
                    chunk.iter().map(|r| !r.3).collect::<Vec<bool>>(),
                );
                let DataType::Struct(fields) = schema.field(2).data_type().clone() else {
                    unreachable!()
                };
                let s = StructArray::new(fields, vec![Arc::new(v) as ArrayRef], Some(nulls));
                RecordBatch::try_new(schema.clone(), vec![Arc::new(a), Arc::new(b), Arc::new(s)])
                    .expect("batch")
            })
            .collect()
    }

    async fn sorted(
        input: Vec<RecordBatch>,
        keys: Vec<SortKey>,
        memory: usize,
    ) -> Vec<RecordBatch> {
        let sorter = Sorter::new(schema(), keys, memory).expect("sorter");
        let stream = futures::stream::iter(input.into_iter().map(Ok));
        sorter
            .sort(stream)
            .await
            .expect("sort")
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<_>>>()
            .expect("batches")
    }

    fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
        let mut out = Vec::new();
        for b in batches {
            let a = b.column(0).as_primitive::<Int64Type>();
            let s = b.column(1).as_string::<i32>();
            let st = b.column(2).as_struct();
            let v = st.column(0).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                out.push((
                    a.is_valid(i).then(|| a.value(i)),
                    s.is_valid(i).then(|| s.value(i).to_string()),
                    v.is_valid(i).then(|| v.value(i)),
                    st.is_null(i),
                ));
            }
        }
        out
    }

    fn key(field_id: i32, descending: bool, nulls_first: bool) -> SortKey {
        SortKey {
            field_id,
            transform: Transform::Identity,
            descending,
            nulls_first,
        }
    }

    type Row = (Option<i64>, Option<String>, Option<i64>, bool);

    /// The reference: a stable sort of the rows by the same keys.
    fn expected(mut rows: Vec<Row>, keys: &[SortKey]) -> Vec<Row> {
        rows.sort_by(|x, y| {
            for k in keys {
                let o = match k.field_id {
                    1 => cmp_opt(x.0, y.0, k),
                    2 => cmp_opt(x.1.clone(), y.1.clone(), k),
                    // s.v: NULL where the parent is.
                    4 => cmp_opt(
                        (!x.3).then_some(x.2).flatten(),
                        (!y.3).then_some(y.2).flatten(),
                        k,
                    ),
                    _ => std::cmp::Ordering::Equal,
                };
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        rows
    }

    fn cmp_opt<T: Ord>(x: Option<T>, y: Option<T>, k: &SortKey) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match (x, y) {
            (None, None) => Equal,
            (None, Some(_)) => {
                if k.nulls_first {
                    Less
                } else {
                    Greater
                }
            }
            (Some(_), None) => {
                if k.nulls_first {
                    Greater
                } else {
                    Less
                }
            }
            (Some(a), Some(b)) => {
                if k.descending {
                    b.cmp(&a)
                } else {
                    a.cmp(&b)
                }
            }
        }
    }

    fn row_strategy() -> impl Strategy<Value = Row> {
        (
            proptest::option::of(-5i64..5),
            proptest::option::of("[a-c]{0,2}"),
            proptest::option::of(-3i64..3),
            any::<bool>(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Spilled or not, merged in one pass or two, the output is the stable sort of the
        /// input by the keys: nothing lost, nothing duplicated, NULL parents making NULL keys.
        #[test]
        fn an_external_sort_is_the_stable_sort_of_its_input(
            rows in proptest::collection::vec(row_strategy(), 0..300),
            per in 1usize..40,
            memory in prop_oneof![Just(1usize), 1usize..20_000, Just(usize::MAX)],
            desc in any::<[bool; 3]>(),
            nulls in any::<[bool; 3]>(),
            order in 0usize..3,
        ) {
            let fields = [[1, 2, 4], [4, 1, 2], [2, 4, 1]][order];
            let keys: Vec<SortKey> = (0..3).map(|i| key(fields[i], desc[i], nulls[i])).collect();
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().expect("rt");
            let out = runtime.block_on(sorted(batches(&rows, per), keys.clone(), memory));
            // Each row's parent-null flag and child value travel together.
            let got = rows_of(&out);
            let want = expected(rows.clone(), &keys);
            let strip = |r: &Row| (r.0, r.1.clone(), (!r.3).then_some(r.2).flatten(), r.3);
            prop_assert_eq!(got.iter().map(strip).collect::<Vec<_>>(), want.iter().map(strip).collect::<Vec<_>>());
        }
    }

    /// More spilled runs than may be open at once are merged in two passes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn more_runs_than_may_be_open_are_merged_in_passes() {
        let rows: Vec<Row> = (0..(MAX_OPEN_RUNS as i64 * 3))
            .map(|i| (Some((i * 7919) % 1000), None, None, false))
            .collect();
        let out = sorted(batches(&rows, 1), vec![key(1, false, true)], 1).await;
        let got: Vec<i64> = rows_of(&out).iter().filter_map(|r| r.0).collect();
        let mut want: Vec<i64> = rows.iter().filter_map(|r| r.0).collect();
        want.sort();
        assert_eq!(got, want);
    }

    /// A transform's result is compared (bucket, truncate), and a key the schema lacks is
    /// refused by id.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn transforms_are_compared_and_unknown_fields_refused() {
        let rows: Vec<Row> = ["ba", "ab", "bb", "aa"]
            .iter()
            .enumerate()
            .map(|(i, s)| (Some(i as i64), Some(s.to_string()), None, false))
            .collect();
        let truncate = SortKey {
            field_id: 2,
            transform: Transform::Truncate(1),
            descending: false,
            nulls_first: true,
        };
        let out = sorted(batches(&rows, 2), vec![truncate], 1).await;
        let got: Vec<String> = rows_of(&out).into_iter().filter_map(|r| r.1).collect();
        // By first letter only; equal keys keep their input order.
        assert_eq!(got, ["ab", "aa", "ba", "bb"]);
        let err = Sorter::new(schema(), vec![key(99, false, true)], 1).expect_err("unknown");
        assert!(err.to_string().contains("field id 99"), "{err}");
        let bucket = SortKey {
            field_id: 1,
            transform: Transform::Bucket(4),
            descending: false,
            nulls_first: true,
        };
        assert!(Sorter::new(schema(), vec![bucket], 1).is_ok());
    }
}
