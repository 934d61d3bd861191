//! The file-copy fast path: source data files copied byte for byte (or referenced in place)
//! instead of decoded, projected and re-encoded.
//!
//! A Parquet data file is read by field id, so when the destination differs from the source only
//! in what Iceberg's own schema evolution expresses (renames, `int`→`long`, `float`→`double`,
//! wider decimals) and every field keeps its id, the destination reads the source's bytes exactly
//! as the reconciliation plan would have produced them.
//!
//! 1. [`route_files`] checks the table-level conditions ([`table_eligibility`]): append mode,
//!    a plan of renames and promotions only, equal field ids (nested too), the same partition
//!    spec, no name mapping, format version ≤ 2 on both sides. Any failure sends every file to
//!    [`FileRoute::Rewrite`] (or is an error for [`CopyMode::Files`] / [`CopyMode::Reference`]).
//! 2. It reads the pinned snapshot's manifests and decides per live data file: Parquet only,
//!    written under the shared spec, no delete file that could apply, and the row filter decided
//!    from the file's partition values (identity columns directly, other transforms through
//!    iceberg's strict and inclusive projections) — true for every row (copy), for none (skip the
//!    file), or depending on the row (rewrite). A file that would be copied or referenced has
//!    its Parquet footer read (one ranged read) to confirm every top-level column carries a
//!    field id; one added without them (e.g. by `add_files`) is rewritten.
//! 3. [`copy_files`] copies (ranged reads of [`COPY_CHUNK_BYTES`], never a whole file in memory)
//!    into the destination's data location, or references the source path, and builds each
//!    [`DataFile`] from the source manifest entry's metrics, with the partition tuple and bounds
//!    typed for the destination. The caller commits them (e.g. `AppendBuilder::add_written`),
//!    one group of whole files per batch.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use iceberg::expr::{Bind, BoundPredicate, BoundReference, Predicate, PredicateOperator};
use iceberg::io::FileIO;
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, Datum, FormatVersion, Literal,
    ManifestContentType, NestedField, PartitionKey, PartitionSpec, PrimitiveLiteral, PrimitiveType,
    Schema, SchemaRef, Struct, Transform, Type,
};
use iceberg::table::Table;
use iceberg::writer::file_writer::location_generator::{
    DefaultLocationGenerator, LocationGenerator,
};
use ops_core::ops::canonical_partition;
use ops_core::write::WrittenFiles;
use ops_reconcile::ReconciliationPlan;
use serde::{Deserialize, Serialize};

use crate::{CopyMode, MigrationError, Result, WriteMode};

/// Bytes read and written per request when copying a file.
pub const COPY_CHUNK_BYTES: u64 = 4 * 1024 * 1024;

/// Files copied at once by [`copy_files`] (memory: this many chunks in flight).
const COPY_CONCURRENCY: usize = 4;

/// Footers checked for field ids at once by [`route_files`].
const FOOTER_CONCURRENCY: usize = 8;

/// Bytes read from the end of a file to find its footer in one request (a larger footer
/// takes a second).
const FOOTER_GUESS_BYTES: u64 = 64 * 1024;

/// The table property that makes readers resolve columns by name for files without field ids.
const NAME_MAPPING_PROPERTY: &str = "schema.name-mapping.default";

/// How one source data file reaches the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileRoute {
    /// Read, projected through the plan and written as new files.
    Rewrite,
    /// Bytes copied to a new file under the destination's data location.
    Copy,
    /// Committed to the destination at its source path (the tables share the file).
    Reference,
    /// Not moved: the row filter excludes every row of the file's partition.
    Skip,
}

impl FileRoute {
    /// `rewrite`, `copy`, `reference` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileRoute::Rewrite => "rewrite",
            FileRoute::Copy => "copy",
            FileRoute::Reference => "reference",
            FileRoute::Skip => "skip",
        }
    }
}

impl fmt::Display for FileRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The route of one source data file and why: what a result and a dry run report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedFile {
    /// The source data file.
    pub path: String,
    /// Where it goes.
    pub route: FileRoute,
    /// Why, in words.
    pub reason: String,
    /// Rows in the file (from its manifest entry; before deletes and the filter).
    pub record_count: u64,
    /// Bytes of the file.
    pub file_size_in_bytes: u64,
}

/// A routed file with the manifest entry it came from.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// The route and reason.
    pub routed: RoutedFile,
    /// The source manifest entry's data file (path, partition, metrics).
    pub data_file: DataFile,
    /// The source partition spec the file was written under.
    pub spec_id: i32,
}

/// Every live data file of a source snapshot with its route, sorted by path.
#[derive(Debug, Clone)]
pub struct FileRouting {
    /// The mode the routes were decided under.
    pub copy_mode: CopyMode,
    /// Why no file can be copied (a table-level condition failed); `None` when files may be.
    pub ineligible: Option<String>,
    /// One entry per live data file.
    pub files: Vec<PlannedFile>,
}

impl FileRouting {
    /// The report: one [`RoutedFile`] per source file.
    pub fn report(&self) -> Vec<RoutedFile> {
        self.files.iter().map(|f| f.routed.clone()).collect()
    }

    /// The data files routed to `route`, in path order (hand Copy/Reference ones to
    /// [`copy_files`]).
    pub fn data_files(&self, route: FileRoute) -> Vec<DataFile> {
        self.files
            .iter()
            .filter(|f| f.routed.route == route)
            .map(|f| f.data_file.clone())
            .collect()
    }

    /// Paths of the files to read through the plan (restrict the scan's tasks to these).
    pub fn rewrite_paths(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter(|f| f.routed.route == FileRoute::Rewrite)
            .map(|f| f.routed.path.clone())
            .collect()
    }

    /// Number of files per route.
    pub fn count(&self, route: FileRoute) -> usize {
        self.files
            .iter()
            .filter(|f| f.routed.route == route)
            .count()
    }
}

/// Decides the route of every live data file of `source` at `snapshot_id` (see the module docs).
///
/// `row_filter` is the migrator's unbound filter (names of the snapshot's schema). Under
/// [`CopyMode::Files`] and [`CopyMode::Reference`] a failed table-level condition is a
/// [`MigrationError::InvalidInput`] naming it; per-file conditions (a delete applies, the filter
/// is undecidable) still route that file to [`FileRoute::Rewrite`].
pub async fn route_files(
    source: &Table,
    snapshot_id: i64,
    dest: &Table,
    plan: &ReconciliationPlan,
    row_filter: Option<&Predicate>,
    write_mode: WriteMode,
    copy_mode: CopyMode,
) -> Result<FileRouting> {
    let md = source.metadata();
    let snapshot = md.snapshot_by_id(snapshot_id).ok_or_else(|| {
        MigrationError::InvalidInput(format!(
            "{} has no snapshot {snapshot_id}",
            source.identifier()
        ))
    })?;
    let ineligible = match copy_mode {
        CopyMode::Rewrite => None,
        _ => table_eligibility(source, dest, plan, write_mode).err(),
    };
    if let (Some(reason), CopyMode::Files | CopyMode::Reference) = (&ineligible, copy_mode) {
        return Err(MigrationError::InvalidInput(format!(
            "--copy-mode {copy_mode}: the files of {} cannot be copied to {}: {reason}; use \
             --copy-mode auto (copy when possible, else rewrite) or --copy-mode rewrite",
            source.identifier(),
            dest.identifier()
        )));
    }
    let filter = match row_filter {
        Some(p) => {
            let schema = snapshot.schema(md)?;
            Some((p.clone().bind(schema.clone(), true)?.rewrite_not(), schema))
        }
        None => None,
    };

    let (data, deletes) = live_entries(source, snapshot).await?;
    let deletes = DeleteIndex::new(deletes, |id| {
        // An unknown spec is taken as global: a delete that might apply sends files to rewrite.
        md.partition_spec_by_id(id)
            .is_none_or(|s| s.is_unpartitioned())
    });
    let dest_spec = dest.metadata().default_partition_spec().clone();
    let copy_route = match copy_mode {
        CopyMode::Reference => FileRoute::Reference,
        _ => FileRoute::Copy,
    };
    let mut files = Vec::with_capacity(data.len());
    for entry in data {
        let (route, reason) = if copy_mode == CopyMode::Rewrite {
            (
                FileRoute::Rewrite,
                "--copy-mode rewrite decodes and re-encodes every file".to_string(),
            )
        } else if let Some(reason) = &ineligible {
            (
                FileRoute::Rewrite,
                format!("the tables do not allow a file copy: {reason}"),
            )
        } else {
            let filter = filter.as_ref().map(|(p, s)| (p, s.as_ref()));
            route_one(source, &entry, &dest_spec, filter, &deletes, copy_route)
        };
        let f = &entry.file;
        files.push(PlannedFile {
            routed: RoutedFile {
                path: f.file_path().to_string(),
                route,
                reason,
                record_count: f.record_count(),
                file_size_in_bytes: f.file_size_in_bytes(),
            },
            data_file: entry.file,
            spec_id: entry.spec_id,
        });
    }
    check_field_ids(source.file_io(), &mut files).await?;
    files.sort_by(|a, b| a.routed.path.cmp(&b.routed.path));
    tracing::debug!(
        source = %source.identifier(),
        files = files.len(),
        ineligible = ?ineligible,
        "routed source files"
    );
    Ok(FileRouting {
        copy_mode,
        ineligible,
        files,
    })
}

/// Sends to rewrite each file routed to copy or reference whose Parquet footer lacks a field
/// id for a top-level column: such a file (added without a name mapping, e.g. by
/// `add_files`) is read by position or not at all, so its bytes cannot be shared.
async fn check_field_ids(io: &FileIO, files: &mut [PlannedFile]) -> Result<()> {
    let mut verdicts = Vec::new();
    let mut pending = futures::stream::FuturesUnordered::new();
    for (i, f) in files.iter().enumerate() {
        if !matches!(f.routed.route, FileRoute::Copy | FileRoute::Reference) {
            continue;
        }
        if pending.len() >= FOOTER_CONCURRENCY
            && let Some(r) = pending.next().await
        {
            verdicts.push(r);
        }
        pending.push(footer_verdict(io, i, &f.routed));
    }
    while let Some(r) = pending.next().await {
        verdicts.push(r);
    }
    drop(pending);
    for (i, verdict) in verdicts {
        if let Some(why) = verdict? {
            files[i].routed.route = FileRoute::Rewrite;
            files[i].routed.reason = why;
        }
    }
    Ok(())
}

async fn footer_verdict(
    io: &FileIO,
    index: usize,
    file: &RoutedFile,
) -> (usize, Result<Option<String>>) {
    let verdict = missing_field_ids(io, &file.path, file.file_size_in_bytes).await;
    (index, verdict)
}

/// Why the Parquet file at `path` (`size` bytes, from its manifest entry) cannot be copied for
/// want of field ids, read from its footer alone; `None` when every top-level column has one.
async fn missing_field_ids(io: &FileIO, path: &str, size: u64) -> Result<Option<String>> {
    const TAIL: u64 = 8;
    if size < TAIL + 4 {
        return Ok(Some(format!(
            "its manifest size ({size} bytes) is too small for a Parquet file"
        )));
    }
    let reader = io.new_input(path)?.reader().await?;
    let guess = size.min(FOOTER_GUESS_BYTES);
    let tail = reader.read(size - guess..size).await?;
    let Some(end) = tail.len().checked_sub(TAIL as usize) else {
        return Ok(Some("its footer could not be read".to_string()));
    };
    match &tail[end + 4..] {
        b"PAR1" => {}
        b"PARE" => {
            return Ok(Some(
                "its Parquet footer is encrypted, so its field ids cannot be checked".to_string(),
            ));
        }
        _ => {
            return Ok(Some(
                "it does not end in the Parquet magic bytes (not a Parquet file, or its \
                 manifest size is wrong)"
                    .to_string(),
            ));
        }
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&tail[end..end + 4]);
    let len = u64::from(u32::from_le_bytes(len));
    if len + TAIL > size {
        return Ok(Some(format!(
            "its footer claims {len} bytes, more than the file holds"
        )));
    }
    let owned;
    // The tail read may come back short of `guess`: only what it holds counts.
    let footer = if len + TAIL <= tail.len() as u64 {
        &tail[end - len as usize..end]
    } else {
        owned = reader.read(size - TAIL - len..size - TAIL).await?;
        &owned[..]
    };
    Ok(match top_level_field_ids(footer) {
        None => Some("its Parquet footer could not be decoded".to_string()),
        Some(columns) => {
            let missing: Vec<&str> = columns
                .iter()
                .filter(|(_, id)| id.is_none())
                .map(|(name, _)| name.as_str())
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "its Parquet schema has no field id for column(s) {} (a file added without \
                     field ids, e.g. by add_files, is read by position or name, not by id)",
                    missing
                        .iter()
                        .take(5)
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        }
    })
}

/// The top-level columns of a Parquet footer (`FileMetaData`) with their field ids; `None` when
/// it cannot be decoded. Only the schema is decoded.
fn top_level_field_ids(footer: &[u8]) -> Option<Vec<(String, Option<i32>)>> {
    let schema = parquet::file::metadata::ParquetMetaDataReader::decode_schema(footer).ok()?;
    Some(
        schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| {
                let info = f.get_basic_info();
                (info.name().to_string(), info.has_id().then(|| info.id()))
            })
            .collect(),
    )
}

/// The table-level conditions of a file copy: `Err` names the first one that fails.
pub fn table_eligibility(
    source: &Table,
    dest: &Table,
    plan: &ReconciliationPlan,
    write_mode: WriteMode,
) -> std::result::Result<(), String> {
    if write_mode != WriteMode::Append {
        return Err(format!(
            "write mode {write_mode} rewrites destination rows; only append copies files"
        ));
    }
    let (smd, dmd) = (source.metadata(), dest.metadata());
    for (side, md) in [("source", smd), ("destination", dmd)] {
        if matches!(md.format_version(), FormatVersion::V1 | FormatVersion::V2) {
            continue;
        }
        return Err(format!(
            "the {side} is format version {} (only versions 1 and 2 are copied)",
            md.format_version() as u8
        ));
    }
    if smd.properties().contains_key(NAME_MAPPING_PROPERTY) {
        return Err(format!(
            "the source has {NAME_MAPPING_PROPERTY}, so some of its files may lack field ids"
        ));
    }
    plan_is_evolution(plan, smd.current_schema(), dmd.current_schema())?;
    if smd.last_column_id() > dmd.last_column_id() {
        return Err(format!(
            "the source has assigned field ids up to {} but the destination's last-column-id is \
             {}: a column added to the destination later could take an id whose old values \
             copied files still hold",
            smd.last_column_id(),
            dmd.last_column_id()
        ));
    }
    let (sspec, dspec) = (smd.default_partition_spec(), dmd.default_partition_spec());
    if !same_layout(sspec, dspec) {
        return Err(format!(
            "the partition specs differ (source [{}], destination [{}])",
            describe_spec(sspec),
            describe_spec(dspec)
        ));
    }
    Ok(())
}

/// Whether `plan` only renames and promotes, every destination field keeping its source id.
fn plan_is_evolution(
    plan: &ReconciliationPlan,
    source: &Schema,
    dest: &Schema,
) -> std::result::Result<(), String> {
    if let Some((name, _)) = plan.auto_add_columns.first() {
        return Err(format!("the plan adds column `{name}` to the destination"));
    }
    if let Some((parent, name, _)) = plan.auto_add_nested_columns.first() {
        return Err(format!(
            "the plan adds field `{parent}.{name}` to the destination"
        ));
    }
    if let Some((name, from, to)) = plan.widen_columns.first() {
        return Err(format!(
            "the plan widens destination column `{name}` ({from} → {to}) before writing"
        ));
    }
    let dest_fields = dest.as_struct().fields();
    let source_fields = source.as_struct().fields();
    if plan.projections.len() != dest_fields.len() {
        return Err(format!(
            "the plan writes {} of the destination's {} columns (a column it leaves out would \
             read as null)",
            plan.projections.len(),
            dest_fields.len()
        ));
    }
    let mut mapped = BTreeSet::new();
    for p in &plan.projections {
        let source_name = match (&p.source_name, p.fill_with_null) {
            (Some(s), false) => s,
            _ => {
                return Err(format!(
                    "destination column `{}` has no source column and would be null-filled",
                    p.dest_name
                ));
            }
        };
        let s = source
            .as_struct()
            .field_by_name(source_name)
            .ok_or_else(|| {
                format!("the plan reads `{source_name}`, which the source schema lacks")
            })?;
        let d = dest
            .as_struct()
            .field_by_name(&p.dest_name)
            .ok_or_else(|| {
                format!(
                    "the plan writes `{}`, which the destination schema lacks",
                    p.dest_name
                )
            })?;
        same_field(s, d, &p.dest_name)?;
        mapped.insert(s.id);
    }
    if let Some(s) = source_fields.iter().find(|f| !mapped.contains(&f.id)) {
        return Err(format!("source column `{}` is not mapped", s.name));
    }
    Ok(())
}

/// `dest` reads `source`'s values by field id exactly as the plan projects them.
fn same_field(
    source: &NestedField,
    dest: &NestedField,
    path: &str,
) -> std::result::Result<(), String> {
    if source.id != dest.id {
        return Err(format!(
            "`{path}` has field id {} in the destination but {} in the source (create the \
             destination with the source's ids, e.g. --create-dest)",
            dest.id, source.id
        ));
    }
    if dest.required && !source.required {
        return Err(format!(
            "`{path}` is required in the destination but optional in the source"
        ));
    }
    match (source.field_type.as_ref(), dest.field_type.as_ref()) {
        (Type::Primitive(s), Type::Primitive(d)) => {
            if s == d || is_promotion(s, d) {
                Ok(())
            } else {
                Err(format!(
                    "`{path}` changes type {s} → {d}, which is not an Iceberg type promotion"
                ))
            }
        }
        (Type::Struct(s), Type::Struct(d)) => {
            if s.fields().len() != d.fields().len() {
                return Err(format!(
                    "struct `{path}` has {} fields in the source and {} in the destination",
                    s.fields().len(),
                    d.fields().len()
                ));
            }
            for df in d.fields() {
                let sf = s.field_by_id(df.id).ok_or_else(|| {
                    format!(
                        "`{path}.{}` (field id {}) has no source field with that id",
                        df.name, df.id
                    )
                })?;
                // The plan matches nested fields by name; a nested rename is not what it does.
                if sf.name != df.name {
                    return Err(format!(
                        "`{path}.{}` is `{}` in the source (nested renames are rewritten)",
                        df.name, sf.name
                    ));
                }
                same_field(sf, df, &format!("{path}.{}", df.name))?;
            }
            Ok(())
        }
        (Type::List(s), Type::List(d)) => same_field(
            &s.element_field,
            &d.element_field,
            &format!("{path}.element"),
        ),
        (Type::Map(s), Type::Map(d)) => {
            same_field(&s.key_field, &d.key_field, &format!("{path}.key"))?;
            same_field(&s.value_field, &d.value_field, &format!("{path}.value"))
        }
        (s, d) => Err(format!("`{path}` changes type {s} → {d}")),
    }
}

/// The promotions an Iceberg reader applies to a file's values (format versions 1 and 2).
fn is_promotion(from: &PrimitiveType, to: &PrimitiveType) -> bool {
    match (from, to) {
        (PrimitiveType::Int, PrimitiveType::Long) => true,
        (PrimitiveType::Float, PrimitiveType::Double) => true,
        (
            PrimitiveType::Decimal {
                precision: p1,
                scale: s1,
            },
            PrimitiveType::Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s1 == s2 && p2 >= p1,
        _ => false,
    }
}

/// Same partition layout: the same source columns and transforms in the same order (spec ids
/// and partition field names may differ).
fn same_layout(a: &PartitionSpec, b: &PartitionSpec) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.source_id == y.source_id && x.transform == y.transform)
}

fn describe_spec(spec: &PartitionSpec) -> String {
    spec.fields()
        .iter()
        .map(|f| format!("{}({})", f.transform, f.source_id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A live manifest entry with the facts routing needs.
struct Entry {
    file: DataFile,
    spec_id: i32,
    sequence_number: i64,
}

/// Live data and delete entries of `snapshot`.
async fn live_entries(
    table: &Table,
    snapshot: &iceberg::spec::SnapshotRef,
) -> Result<(Vec<Entry>, Vec<Entry>)> {
    let list = table.manifest_list_reader(snapshot).load().await?;
    let (mut data, mut deletes) = (Vec::new(), Vec::new());
    for mf in list.entries() {
        let manifest = mf.load_manifest(table.file_io()).await?;
        for entry in manifest.entries() {
            if !entry.is_alive() {
                continue;
            }
            let e = Entry {
                file: entry.data_file().clone(),
                spec_id: mf.partition_spec_id,
                sequence_number: entry.sequence_number().unwrap_or(mf.sequence_number),
            };
            match mf.content {
                ManifestContentType::Data => data.push(e),
                ManifestContentType::Deletes => deletes.push(e),
            }
        }
    }
    Ok((data, deletes))
}

/// Delete files by the partition they can apply to.
struct DeleteIndex {
    /// Position and partitioned equality deletes, by (spec id, canonical partition).
    by_partition: HashMap<(i32, Struct), Vec<Entry>>,
    /// Equality deletes of an unpartitioned spec: they apply to every partition.
    global: Vec<Entry>,
}

impl DeleteIndex {
    /// `unpartitioned(spec_id)`: whether the spec has no field or only `void` ones (Java's
    /// `PartitionSpec.isUnpartitioned()`): a spec whose fields were all dropped in format
    /// version 1 still writes a tuple of NULLs, yet its equality deletes apply everywhere.
    fn new(deletes: Vec<Entry>, unpartitioned: impl Fn(i32) -> bool) -> Self {
        let mut index = Self {
            by_partition: HashMap::new(),
            global: Vec::new(),
        };
        for d in deletes {
            let global = d.file.content_type() == DataContentType::EqualityDeletes
                && (d.file.partition().fields().is_empty() || unpartitioned(d.spec_id));
            if global {
                index.global.push(d);
            } else {
                let key = (d.spec_id, canonical_partition(d.file.partition()));
                index.by_partition.entry(key).or_default().push(d);
            }
        }
        index
    }

    /// The first delete file that may apply to `data` (conservatively: bounds on
    /// `file_path` are not consulted).
    fn applying(&self, data: &Entry) -> Option<&Entry> {
        let key = (data.spec_id, canonical_partition(data.file.partition()));
        let path = data.file.file_path();
        self.by_partition
            .get(&key)
            .into_iter()
            .flatten()
            .chain(self.global.iter())
            .find(|d| match d.file.content_type() {
                DataContentType::PositionDeletes => {
                    d.sequence_number >= data.sequence_number
                        && d.file
                            .referenced_data_file()
                            .is_none_or(|referenced| referenced == path)
                        && path_within_bounds(&d.file, path)
                }
                DataContentType::EqualityDeletes => d.sequence_number > data.sequence_number,
                DataContentType::Data => false,
            })
    }
}

/// The reserved field id of a position delete's `file_path` column.
const DELETE_FILE_PATH_ID: i32 = 2147483546;

/// Whether a position delete's `file_path` bounds (written by Spark and Java, which is how a
/// delete file naming one data file is told apart from its partition's others) admit `path`.
/// Missing bounds admit every path; truncated ones still bracket it.
fn path_within_bounds(delete: &DataFile, path: &str) -> bool {
    let bound = |m: &HashMap<i32, Datum>| match m.get(&DELETE_FILE_PATH_ID).map(Datum::literal) {
        Some(PrimitiveLiteral::String(s)) => Some(s.clone()),
        _ => None,
    };
    bound(delete.lower_bounds()).is_none_or(|l| l.as_str() <= path)
        && bound(delete.upper_bounds()).is_none_or(|u| path <= u.as_str())
}

fn route_one(
    source: &Table,
    entry: &Entry,
    dest_spec: &PartitionSpec,
    filter: Option<(&BoundPredicate, &Schema)>,
    deletes: &DeleteIndex,
    copy_route: FileRoute,
) -> (FileRoute, String) {
    let f = &entry.file;
    let spec = source.metadata().partition_spec_by_id(entry.spec_id);
    // The filter first: a file none of whose rows pass is skipped whatever else holds (the
    // rewrite path's scan prunes it too).
    let verdict = match (filter, spec) {
        (Some((filter, schema)), Some(spec)) => {
            Some(decide(filter, &View::new(spec, f.partition(), schema)))
        }
        _ => None,
    };
    if verdict == Some(Verdict::NoRow) {
        return (
            FileRoute::Skip,
            "the row filter excludes every row of its partition".to_string(),
        );
    }
    if f.file_format() != DataFileFormat::Parquet {
        return (
            FileRoute::Rewrite,
            format!("a {} file (only Parquet files are copied)", f.file_format()),
        );
    }
    let Some(spec) = spec else {
        return (
            FileRoute::Rewrite,
            format!(
                "written under partition spec {}, which the source metadata lacks",
                entry.spec_id
            ),
        );
    };
    if !same_layout(spec, dest_spec) {
        return (
            FileRoute::Rewrite,
            format!(
                "written under source partition spec {} [{}], not the destination's [{}]",
                entry.spec_id,
                describe_spec(spec),
                describe_spec(dest_spec)
            ),
        );
    }
    if let Some(d) = deletes.applying(entry) {
        let kind = match d.file.content_type() {
            DataContentType::EqualityDeletes => "an equality",
            _ => "a position",
        };
        return (
            FileRoute::Rewrite,
            format!(
                "{kind} delete file applies to it ({}); its remaining rows are rewritten",
                d.file.file_path()
            ),
        );
    }
    let base = "same field ids and partition spec, no delete file applies";
    match verdict {
        None => (copy_route, format!("{base}, no row filter")),
        Some(Verdict::Undecided(why)) => (
            FileRoute::Rewrite,
            format!("the row filter is not decided by the partition values: {why}"),
        ),
        Some(_) => (
            copy_route,
            format!("{base}; the row filter holds for every row of its partition"),
        ),
    }
}

/// What a filter does to every row of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Every row passes.
    Every,
    /// No row passes (each is false or unknown).
    NoRow,
    /// Depends on the row; why.
    Undecided(String),
}

/// One file's partition, as a filter sees it.
#[derive(Clone)]
struct View<'a> {
    spec: &'a PartitionSpec,
    partition: &'a Struct,
    /// The partition tuple as a schema (partition field ids and names) to bind projections of
    /// non-identity transforms to; `None` when it cannot be built.
    partition_schema: Option<SchemaRef>,
    /// True while evaluating a predicate projected onto the partition: references are
    /// partition fields, not source columns.
    projected: bool,
}

impl<'a> View<'a> {
    fn new(spec: &'a PartitionSpec, partition: &'a Struct, schema: &Schema) -> Self {
        let partition_schema = spec.partition_type(schema).ok().and_then(|t| {
            Schema::builder()
                .with_fields(t.fields().iter().cloned())
                .build()
                .ok()
                .map(Arc::new)
        });
        Self {
            spec,
            partition,
            partition_schema,
            projected: false,
        }
    }
}

/// The filter's verdict for a file from its partition tuple alone.
///
/// A reference to an identity-partitioned column is a constant within the file (every row
/// holds the partition value), so the predicate has one value for all its rows. A column under
/// another transform (day, bucket, truncate, ...) is decided through iceberg's projections of
/// the leaf onto that partition field: the strict projection true means every row passes, the
/// inclusive projection false means none does (the scan the rewrite path uses prunes such files
/// the same way). Leaves follow the semantics of iceberg's Arrow reader, which rewrites the
/// rows of the other files: after `rewrite_not`, a comparison, `IN`, `NOT IN` or `starts_with`
/// on a NULL does not pass. Floating-point values are left undecided (NaN ordering).
fn decide(filter: &BoundPredicate, view: &View<'_>) -> Verdict {
    match filter {
        BoundPredicate::AlwaysTrue => Verdict::Every,
        BoundPredicate::AlwaysFalse => Verdict::NoRow,
        BoundPredicate::And(e) => {
            let [l, r] = e.inputs();
            match (decide(l, view), decide(r, view)) {
                (Verdict::NoRow, _) | (_, Verdict::NoRow) => Verdict::NoRow,
                (Verdict::Every, Verdict::Every) => Verdict::Every,
                (Verdict::Undecided(w), _) | (_, Verdict::Undecided(w)) => Verdict::Undecided(w),
            }
        }
        BoundPredicate::Or(e) => {
            let [l, r] = e.inputs();
            match (decide(l, view), decide(r, view)) {
                (Verdict::Every, _) | (_, Verdict::Every) => Verdict::Every,
                (Verdict::NoRow, Verdict::NoRow) => Verdict::NoRow,
                (Verdict::Undecided(w), _) | (_, Verdict::Undecided(w)) => Verdict::Undecided(w),
            }
        }
        // rewrite_not leaves no NOT; a NOT over an unknown value is unknown, not its negation.
        BoundPredicate::Not(_) => Verdict::Undecided("a negation".to_string()),
        BoundPredicate::Unary(e) => leaf(e.term(), filter, view, |value| match e.op() {
            PredicateOperator::IsNull => Some(value.is_none()),
            PredicateOperator::NotNull => Some(value.is_some()),
            _ => None,
        }),
        BoundPredicate::Binary(e) => leaf(e.term(), filter, view, |value| {
            // A comparison or starts_with on NULL is NULL, and `not(NULL)` too: no row passes.
            let Some(value) = value else {
                return Some(false);
            };
            let literal = e.literal().literal();
            let ord = compare(value, literal);
            match e.op() {
                PredicateOperator::LessThan => ord.map(Ordering::is_lt),
                PredicateOperator::LessThanOrEq => ord.map(Ordering::is_le),
                PredicateOperator::GreaterThan => ord.map(Ordering::is_gt),
                PredicateOperator::GreaterThanOrEq => ord.map(Ordering::is_ge),
                PredicateOperator::Eq => ord.map(Ordering::is_eq),
                PredicateOperator::NotEq => ord.map(Ordering::is_ne),
                PredicateOperator::StartsWith => starts_with(value, literal),
                PredicateOperator::NotStartsWith => starts_with(value, literal).map(|b| !b),
                _ => None,
            }
        }),
        BoundPredicate::Set(e) => {
            let empty = e.literals().is_empty();
            leaf(e.term(), filter, view, |value| {
                let Some(value) = value else {
                    // iceberg's reader: NOT IN () keeps a NULL, anything else drops it.
                    return Some(e.op() == PredicateOperator::NotIn && empty);
                };
                let mut any = false;
                for l in e.literals() {
                    any |= compare(value, l.literal())?.is_eq();
                }
                match e.op() {
                    PredicateOperator::In => Some(any),
                    PredicateOperator::NotIn => Some(!any),
                    _ => None,
                }
            })
        }
    }
}

/// Evaluates the leaf `predicate` on `term`'s value in the partition tuple: `eval` gets the
/// value (`None` for NULL) and returns whether the rows pass, or `None` when it cannot tell.
fn leaf(
    term: &BoundReference,
    predicate: &BoundPredicate,
    view: &View<'_>,
    eval: impl FnOnce(Option<&PrimitiveLiteral>) -> Option<bool>,
) -> Verdict {
    let field = term.field();
    let index = if view.projected {
        view.spec
            .fields()
            .iter()
            .position(|p| p.field_id == field.id)
    } else {
        view.spec
            .fields()
            .iter()
            .position(|p| p.source_id == field.id && p.transform == Transform::Identity)
    };
    let Some(index) = index else {
        return if view.projected {
            Verdict::Undecided(format!("partition field `{}` not found", field.name))
        } else {
            project(field, predicate, view)
        };
    };
    if matches!(
        field.field_type.as_primitive_type(),
        Some(PrimitiveType::Float | PrimitiveType::Double) | None
    ) {
        return Verdict::Undecided(format!(
            "column `{}` is floating point (NaN ordering is left to the reader)",
            field.name
        ));
    }
    let value = match view.partition.fields().get(index) {
        Some(Some(Literal::Primitive(p))) => Some(p),
        Some(None) => None,
        _ => {
            return Verdict::Undecided(format!(
                "the partition value of `{}` is missing",
                field.name
            ));
        }
    };
    match eval(value) {
        Some(true) => Verdict::Every,
        Some(false) => Verdict::NoRow,
        None => Verdict::Undecided(format!(
            "the filter on `{}` cannot be evaluated on its partition value",
            field.name
        )),
    }
}

/// Decides a leaf on a column partitioned by non-identity transforms through iceberg's strict
/// and inclusive projections onto each such partition field.
fn project(field: &NestedField, predicate: &BoundPredicate, view: &View<'_>) -> Verdict {
    let fields: Vec<_> = view
        .spec
        .fields()
        .iter()
        .filter(|p| p.source_id == field.id && p.transform != Transform::Void)
        .collect();
    if fields.is_empty() {
        return Verdict::Undecided(format!(
            "it reads column `{}`, which is not a partition column (filter on a \
             non-partition column)",
            field.name
        ));
    }
    if let Some(schema) = &view.partition_schema {
        let on_partition = View {
            partition_schema: None,
            projected: true,
            ..view.clone()
        };
        let verdict = |p: iceberg::Result<Option<Predicate>>| {
            let bound = p.ok().flatten()?.bind(schema.clone(), true).ok()?;
            Some(decide(&bound, &on_partition))
        };
        // iceberg 0.10.1's truncate projections of string predicates compare the literal's byte
        // length with the width, which counts characters: past ASCII they can claim every or no
        // row wrongly (`starts_with 'éa'` under truncate(3) prunes partition `éab`).
        let multibyte = string_literals(predicate).any(|s| !s.is_ascii());
        for pf in &fields {
            if multibyte && matches!(pf.transform, Transform::Truncate(_)) {
                continue;
            }
            if verdict(pf.transform.strict_project(&pf.name, predicate)) == Some(Verdict::Every) {
                return Verdict::Every;
            }
            if verdict(pf.transform.project(&pf.name, predicate)) == Some(Verdict::NoRow) {
                return Verdict::NoRow;
            }
        }
    }
    let transforms: Vec<String> = fields
        .iter()
        .map(|p| format!("{}({})", p.transform, field.name))
        .collect();
    let truncated = string_literals(predicate).any(|s| !s.is_ascii())
        && fields
            .iter()
            .any(|p| matches!(p.transform, Transform::Truncate(_)));
    Verdict::Undecided(format!(
        "the filter on `{}` depends on the row within the file's {} partition{}",
        field.name,
        transforms.join(", "),
        if truncated {
            " (a non-ASCII string literal is not projected through truncate)"
        } else {
            ""
        }
    ))
}

/// The string literals of a leaf predicate.
fn string_literals(predicate: &BoundPredicate) -> impl Iterator<Item = &str> {
    let literals: Vec<&Datum> = match predicate {
        BoundPredicate::Binary(e) => vec![e.literal()],
        BoundPredicate::Set(e) => e.literals().iter().collect(),
        _ => Vec::new(),
    };
    literals.into_iter().filter_map(|d| match d.literal() {
        PrimitiveLiteral::String(s) => Some(s.as_str()),
        _ => None,
    })
}

/// Orders a partition value against a predicate literal of the column's type (a value written
/// before an `int`→`long` widening compares as a long).
fn compare(a: &PrimitiveLiteral, b: &PrimitiveLiteral) -> Option<Ordering> {
    use PrimitiveLiteral as L;
    Some(match (a, b) {
        (L::Boolean(x), L::Boolean(y)) => x.cmp(y),
        (L::Int(x), L::Int(y)) => x.cmp(y),
        (L::Long(x), L::Long(y)) => x.cmp(y),
        (L::Int(x), L::Long(y)) => i64::from(*x).cmp(y),
        (L::Long(x), L::Int(y)) => x.cmp(&i64::from(*y)),
        (L::String(x), L::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (L::Binary(x), L::Binary(y)) => x.cmp(y),
        (L::Int128(x), L::Int128(y)) => x.cmp(y),
        (L::UInt128(x), L::UInt128(y)) => x.cmp(y),
        _ => return None,
    })
}

fn starts_with(a: &PrimitiveLiteral, prefix: &PrimitiveLiteral) -> Option<bool> {
    match (a, prefix) {
        (PrimitiveLiteral::String(x), PrimitiveLiteral::String(p)) => {
            Some(x.starts_with(p.as_str()))
        }
        (PrimitiveLiteral::Binary(x), PrimitiveLiteral::Binary(p)) => Some(x.starts_with(p)),
        _ => None,
    }
}

/// Copies (`FileRoute::Copy`) or references (`FileRoute::Reference`) source data files into
/// `dest`, returning them ready to commit under the destination's default spec.
///
/// Copies stream [`COPY_CHUNK_BYTES`] at a time, a few files at once. If any copy fails, every
/// file this call wrote is deleted (best effort) and the first error is returned.
pub async fn copy_files(
    source: &Table,
    dest: &Table,
    files: &[DataFile],
    route: FileRoute,
) -> Result<WrittenFiles> {
    if !matches!(route, FileRoute::Copy | FileRoute::Reference) {
        return Err(MigrationError::InvalidInput(format!(
            "copy_files takes files routed to copy or reference, not {route}"
        )));
    }
    let target = CopyTarget::new(source, dest)?;
    // A plain queue of calls rather than `stream::iter(..).map(closure).buffered(..)`: the
    // closure's higher-ranked lifetimes make the future not provably `Send` for `tokio::spawn`
    // (rust-lang/rust#102211).
    let mut results: Vec<Result<DataFile>> = Vec::with_capacity(files.len());
    let mut pending = futures::stream::FuturesOrdered::new();
    for file in files {
        if pending.len() >= COPY_CONCURRENCY
            && let Some(r) = pending.next().await
        {
            results.push(r);
        }
        pending.push_back(target.one(source, dest, file, route));
    }
    while let Some(r) = pending.next().await {
        results.push(r);
    }
    let mut out = Vec::with_capacity(results.len());
    let mut first_error = None;
    for r in results {
        match r {
            Ok(f) => out.push(f),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        if route == FileRoute::Copy {
            for f in &out {
                remove_quietly(dest.file_io(), f.file_path()).await;
            }
        }
        return Err(e);
    }
    Ok(WrittenFiles {
        spec_id: target.spec.spec_id(),
        files: out,
    })
}

/// The destination facts every copied file needs.
struct CopyTarget {
    spec: PartitionSpec,
    schema: iceberg::spec::SchemaRef,
    partition_types: Vec<Option<PrimitiveType>>,
    locations: DefaultLocationGenerator,
    /// Source sort order id → the id the destination keeps for it (same fields).
    sort_orders: HashMap<i64, i32>,
}

impl CopyTarget {
    fn new(source: &Table, dest: &Table) -> Result<Self> {
        let md = dest.metadata();
        let spec = md.default_partition_spec().as_ref().clone();
        let schema = md.current_schema().clone();
        let partition_types = spec
            .partition_type(&schema)?
            .fields()
            .iter()
            .map(|f| f.field_type.as_primitive_type().cloned())
            .collect();
        let mut sort_orders = HashMap::new();
        for order in source.metadata().sort_orders_iter() {
            if let Some(same) = md.sort_order_by_id(order.order_id)
                && same.fields == order.fields
            {
                sort_orders.insert(order.order_id, same.order_id as i32);
            }
        }
        Ok(Self {
            spec,
            schema,
            partition_types,
            locations: DefaultLocationGenerator::new(md)?,
            sort_orders,
        })
    }

    async fn one(
        &self,
        source: &Table,
        dest: &Table,
        file: &DataFile,
        route: FileRoute,
    ) -> Result<DataFile> {
        let partition = self.partition(file)?;
        let (path, copied) = match route {
            FileRoute::Reference => (file.file_path().to_string(), false),
            _ => {
                let key = (!self.spec.is_unpartitioned()).then(|| {
                    PartitionKey::new(self.spec.clone(), self.schema.clone(), partition.clone())
                });
                let name = format!("{}-copy.parquet", uuid::Uuid::now_v7());
                let to = self.locations.generate_location(key.as_ref(), &name);
                if let Err(e) = stream_copy(source, dest, file, &to).await {
                    remove_quietly(dest.file_io(), &to).await;
                    return Err(e);
                }
                (to, true)
            }
        };
        let described = self.describe(file, path.clone(), partition);
        keep_if_described(dest.file_io(), copied.then_some(path.as_str()), described).await
    }

    /// The destination's entry for `file` at `path`.
    fn describe(&self, file: &DataFile, path: String, partition: Struct) -> Result<DataFile> {
        let mut b = DataFileBuilder::default();
        b.content(DataContentType::Data)
            .file_path(path)
            .file_format(DataFileFormat::Parquet)
            .partition(partition)
            .partition_spec_id(self.spec.spec_id())
            .record_count(file.record_count())
            .file_size_in_bytes(file.file_size_in_bytes())
            .column_sizes(self.known(file.column_sizes()))
            .value_counts(self.known(file.value_counts()))
            .null_value_counts(self.known(file.null_value_counts()))
            .nan_value_counts(self.known(file.nan_value_counts()))
            .lower_bounds(self.bounds(file.lower_bounds()))
            .upper_bounds(self.bounds(file.upper_bounds()))
            .key_metadata(file.key_metadata().map(<[u8]>::to_vec))
            .split_offsets(file.split_offsets().map(<[i64]>::to_vec));
        if let Some(id) = file
            .sort_order_id()
            .and_then(|id| self.sort_orders.get(&i64::from(id)))
        {
            b.sort_order_id(*id);
        }
        b.build().map_err(|e| {
            MigrationError::InvalidInput(format!(
                "cannot describe the copy of {}: {e}",
                file.file_path()
            ))
        })
    }

    /// The source partition tuple typed as the destination's (same layout, checked when
    /// routing; a widened identity/truncate column turns `int` into `long`).
    fn partition(&self, file: &DataFile) -> Result<Struct> {
        let values = file.partition();
        if values.fields().len() != self.partition_types.len() {
            return Err(MigrationError::InvalidInput(format!(
                "{} has {} partition values but the destination spec has {} fields; route \
                 files with route_files before copying",
                file.file_path(),
                values.fields().len(),
                self.partition_types.len()
            )));
        }
        values
            .iter()
            .zip(&self.partition_types)
            .map(|(v, want)| match (v, want) {
                (None, _) => Ok(None),
                (Some(Literal::Primitive(p)), Some(want)) => fit(p, want)
                    .map(|p| Some(Literal::Primitive(p)))
                    .ok_or_else(|| {
                        MigrationError::InvalidInput(format!(
                            "partition value {p:?} of {} does not fit the destination's {want}",
                            file.file_path()
                        ))
                    }),
                (Some(other), _) => Err(MigrationError::InvalidInput(format!(
                    "partition value {other:?} of {} is not a primitive",
                    file.file_path()
                ))),
            })
            .collect()
    }

    /// Metrics of field ids the destination schema has (a dropped column's are left out).
    fn known(&self, m: &HashMap<i32, u64>) -> HashMap<i32, u64> {
        m.iter()
            .filter(|(id, _)| self.schema.field_by_id(**id).is_some())
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Bounds re-typed to the destination field's type: an `int` bound of a column now `long`
    /// is rewritten as a long, so every reader decodes 8 bytes (iceberg-rust also reads 4, but
    /// not every engine does). A bound that cannot be re-typed is dropped: bounds are optional.
    fn bounds(&self, m: &HashMap<i32, Datum>) -> HashMap<i32, Datum> {
        m.iter()
            .filter_map(|(id, d)| {
                let want = self
                    .schema
                    .field_by_id(*id)?
                    .field_type
                    .as_primitive_type()?;
                let widened = widen(d, want);
                if widened.is_none() {
                    tracing::debug!(field_id = id, bound = %d, to = %want, "dropping a bound");
                }
                Some((*id, widened?))
            })
            .collect()
    }
}

/// `p` as a value of `want`: unchanged, or promoted `int`→`long` / `float`→`double`.
fn fit(p: &PrimitiveLiteral, want: &PrimitiveType) -> Option<PrimitiveLiteral> {
    use PrimitiveLiteral as L;
    use PrimitiveType as T;
    Some(match (p, want) {
        (L::Int(i), T::Long) => L::Long(i64::from(*i)),
        (L::Float(f), T::Double) => L::Double(f64::from(f.0).into()),
        (L::Boolean(_), T::Boolean)
        | (L::Int(_), T::Int | T::Date)
        | (
            L::Long(_),
            T::Long | T::Time | T::Timestamp | T::Timestamptz | T::TimestampNs | T::TimestamptzNs,
        )
        | (L::Float(_), T::Float)
        | (L::Double(_), T::Double)
        | (L::String(_), T::String)
        | (L::Binary(_), T::Binary | T::Fixed(_))
        | (L::Int128(_), T::Decimal { .. })
        | (L::UInt128(_), T::Uuid) => p.clone(),
        _ => return None,
    })
}

/// `d` as a datum of `want` (identity or a promotion).
fn widen(d: &Datum, want: &PrimitiveType) -> Option<Datum> {
    if d.data_type() == want {
        return Some(d.clone());
    }
    match (d.literal(), want) {
        (PrimitiveLiteral::Float(f), PrimitiveType::Double) => Some(Datum::double(f64::from(f.0))),
        _ if is_promotion(d.data_type(), want) => d
            .clone()
            .to(&Type::Primitive(want.clone()))
            .ok()
            .filter(|w| w.data_type() == want),
        _ => None,
    }
}

/// Streams the bytes of `file` from the source's storage to `to` in the destination's.
async fn stream_copy(source: &Table, dest: &Table, file: &DataFile, to: &str) -> Result<()> {
    let from = file.file_path();
    let size = file.file_size_in_bytes();
    let input = source.file_io().new_input(from)?;
    // The manifest's size is what the copy's entry will claim: a file of another size would
    // be copied short or described wrongly.
    let actual = input.metadata().await?.size;
    if actual != size {
        return Err(MigrationError::InvalidInput(format!(
            "{from} is {actual} bytes but its manifest entry says {size}; rewrite it \
             (--copy-mode rewrite) or repair the source"
        )));
    }
    let reader = input.reader().await?;
    let mut writer = dest.file_io().new_output(to)?.writer().await?;
    let mut offset = 0u64;
    while offset < size {
        let end = (offset + COPY_CHUNK_BYTES).min(size);
        let chunk = reader.read(offset..end).await?;
        if chunk.len() as u64 != end - offset {
            return Err(MigrationError::InvalidInput(format!(
                "{from}: read {} bytes at offset {offset}, expected {}",
                chunk.len(),
                end - offset
            )));
        }
        writer.write(chunk).await?;
        offset = end;
    }
    writer.close().await?;
    tracing::debug!(from, to, bytes = size, "copied data file");
    Ok(())
}

/// `described` as the result of a copy to `copied` (`None` for a reference), deleting the copy
/// when it could not be described: no entry will ever name it, so it would be an orphan.
async fn keep_if_described(
    io: &FileIO,
    copied: Option<&str>,
    described: Result<DataFile>,
) -> Result<DataFile> {
    if described.is_err()
        && let Some(path) = copied
    {
        remove_quietly(io, path).await;
    }
    described
}

async fn remove_quietly(io: &FileIO, path: &str) {
    if let Err(e) = io.delete(path).await {
        tracing::warn!(path, error = %e, "could not delete a partial copy; remove it by hand");
    }
}

#[cfg(test)]
mod tests {
    use iceberg::expr::Reference;
    use iceberg::spec::{SchemaRef, UnboundPartitionSpec};
    use ops_reconcile::{MissingInSource, SchemaReconciler};

    use super::*;

    fn long(id: i32, name: &str) -> NestedField {
        NestedField::optional(id, name, Type::Primitive(PrimitiveType::Long))
    }

    fn schema(fields: Vec<NestedField>) -> SchemaRef {
        Arc::new(
            Schema::builder()
                .with_fields(fields.into_iter().map(Arc::new))
                .build()
                .unwrap(),
        )
    }

    /// orders(id long required, region string, amount int).
    fn orders() -> SchemaRef {
        schema(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)),
            NestedField::optional(3, "amount", Type::Primitive(PrimitiveType::Int)),
        ])
    }

    fn spec(schema: &SchemaRef, source_id: i32, transform: Transform) -> PartitionSpec {
        UnboundPartitionSpec::builder()
            .add_partition_field(source_id, "p", transform)
            .unwrap()
            .build()
            .bind(schema.clone())
            .unwrap()
    }

    fn region(v: Option<&str>) -> Struct {
        Struct::from_iter([v.map(Literal::string)])
    }

    fn verdict(filter: Predicate, partition: Option<&str>) -> Verdict {
        let s = orders();
        let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
        let spec = spec(&s, 2, Transform::Identity);
        let part = region(partition);
        decide(&bound, &View::new(&spec, &part, &s))
    }

    #[test]
    fn identity_partition_filters_are_decided_per_file() {
        let eu = || Reference::new("region").equal_to(Datum::string("eu"));
        assert_eq!(verdict(eu(), Some("eu")), Verdict::Every);
        assert_eq!(verdict(eu(), Some("us")), Verdict::NoRow);
        // NULL = 'eu' is unknown: the rewrite path drops such rows too.
        assert_eq!(verdict(eu(), None), Verdict::NoRow);
        assert_eq!(verdict(eu().negate(), None), Verdict::NoRow);
        assert_eq!(verdict(eu().negate(), Some("us")), Verdict::Every);
        assert_eq!(
            verdict(Reference::new("region").is_null(), None),
            Verdict::Every
        );
        assert_eq!(
            verdict(Reference::new("region").is_not_null(), None),
            Verdict::NoRow
        );
        let set = |op_in: bool| {
            let r = Reference::new("region");
            let v = [Datum::string("eu"), Datum::string("apac")];
            if op_in { r.is_in(v) } else { r.is_not_in(v) }
        };
        assert_eq!(verdict(set(true), Some("apac")), Verdict::Every);
        assert_eq!(verdict(set(false), Some("apac")), Verdict::NoRow);
        assert_eq!(verdict(set(false), Some("us")), Verdict::Every);
        assert_eq!(verdict(set(false), None), Verdict::NoRow);
        assert_eq!(
            verdict(
                Reference::new("region").starts_with(Datum::string("ap")),
                Some("apac")
            ),
            Verdict::Every
        );
    }

    #[test]
    fn a_filter_on_a_data_column_is_undecided_unless_the_partition_settles_it() {
        let amount = || Reference::new("amount").greater_than(Datum::int(5));
        let eu = || Reference::new("region").equal_to(Datum::string("eu"));
        match verdict(amount(), Some("eu")) {
            Verdict::Undecided(why) => {
                assert!(
                    why.contains("`amount`") && why.contains("non-partition"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            verdict(eu().and(amount()), Some("eu")),
            Verdict::Undecided(_)
        ));
        assert_eq!(verdict(eu().and(amount()), Some("us")), Verdict::NoRow);
        assert_eq!(verdict(eu().or(amount()), Some("eu")), Verdict::Every);
        assert!(matches!(
            verdict(eu().or(amount()), Some("us")),
            Verdict::Undecided(_)
        ));
    }

    #[test]
    fn a_non_identity_transform_is_undecided() {
        let s = orders();
        let bound = Reference::new("amount")
            .equal_to(Datum::int(5))
            .bind(s.clone(), true)
            .unwrap();
        let bucket = spec(&s, 3, Transform::Bucket(8));
        // `amount = 5` holds in no row of the seven buckets 5 does not hash to, and is not
        // decided for the one it does.
        let verdicts: Vec<Verdict> = (0..8)
            .map(|b| {
                let p = Struct::from_iter([Some(Literal::int(b))]);
                decide(&bound, &View::new(&bucket, &p, &s))
            })
            .collect();
        let undecided = verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Undecided(_)))
            .count();
        let none = verdicts.iter().filter(|v| **v == Verdict::NoRow).count();
        assert_eq!((undecided, none), (1, 7), "{verdicts:?}");
    }

    #[test]
    fn a_day_partition_decides_a_range_through_iceberg_projections() {
        let s = schema(vec![NestedField::optional(
            1,
            "ts",
            Type::Primitive(PrimitiveType::Timestamp),
        )]);
        let day = spec(&s, 1, Transform::Day);
        const DAY_US: i64 = 86_400_000_000;
        let jan1 = 19_723; // 2024-01-01 in days since the epoch
        let at = |filter: Predicate, d: Option<i32>| {
            let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
            let part = Struct::from_iter([d.map(Literal::date)]);
            decide(&bound, &View::new(&day, &part, &s))
        };
        let from =
            |us: i64| Reference::new("ts").greater_than_or_equal_to(Datum::timestamp_micros(us));
        let midnight = i64::from(jan1 + 1) * DAY_US; // 2024-01-02T00:00
        assert_eq!(at(from(midnight), Some(jan1 + 1)), Verdict::Every);
        assert_eq!(at(from(midnight), Some(jan1 + 5)), Verdict::Every);
        assert_eq!(at(from(midnight), Some(jan1)), Verdict::NoRow);
        assert_eq!(at(from(midnight), None), Verdict::NoRow);
        let noon = midnight + DAY_US / 2;
        assert!(matches!(
            at(from(noon), Some(jan1 + 1)),
            Verdict::Undecided(w) if w.contains("day(ts)")
        ));
        assert_eq!(at(from(noon), Some(jan1 + 2)), Verdict::Every);
        assert_eq!(at(from(noon).negate(), Some(jan1 + 2)), Verdict::NoRow);
    }

    #[test]
    fn a_partition_value_written_before_widening_compares_as_long() {
        let s = schema(vec![long(1, "day")]);
        let bound = Reference::new("day")
            .greater_than_or_equal_to(Datum::long(10))
            .bind(s.clone(), true)
            .unwrap();
        let spec = spec(&s, 1, Transform::Identity);
        let at = |v: i32| {
            let part = Struct::from_iter([Some(Literal::int(v))]);
            decide(&bound, &View::new(&spec, &part, &s))
        };
        assert_eq!(at(10), Verdict::Every);
        assert_eq!(at(9), Verdict::NoRow);
    }

    fn plan_for(source: &Schema, dest: &Schema, r: SchemaReconciler) -> ReconciliationPlan {
        r.compute_plan(source, dest).unwrap()
    }

    #[test]
    fn renames_and_promotions_with_the_same_ids_are_an_evolution() {
        let src = orders();
        let dst = schema(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)),
            long(3, "total"),
        ]);
        let plan = plan_for(
            &src,
            &dst,
            SchemaReconciler::new().rename("amount", "total"),
        );
        assert_eq!(plan_is_evolution(&plan, &src, &dst), Ok(()));
    }

    #[test]
    fn another_field_id_a_null_fill_or_a_nullability_change_is_not() {
        let src = orders();
        let other_id = schema(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)),
            long(7, "total"),
        ]);
        let plan = plan_for(
            &src,
            &other_id,
            SchemaReconciler::new().rename("amount", "total"),
        );
        let err = plan_is_evolution(&plan, &src, &other_id).unwrap_err();
        assert!(
            err.contains("`total` has field id 7") && err.contains("3"),
            "{err}"
        );

        let extra = schema(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)),
            NestedField::optional(3, "amount", Type::Primitive(PrimitiveType::Int)),
            long(4, "note"),
        ]);
        let plan = plan_for(
            &src,
            &extra,
            SchemaReconciler::new().on_missing_in_source(MissingInSource::Null),
        );
        let err = plan_is_evolution(&plan, &src, &extra).unwrap_err();
        assert!(
            err.contains("`note`") && err.contains("null-filled"),
            "{err}"
        );

        let required = schema(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
            NestedField::required(2, "region", Type::Primitive(PrimitiveType::String)),
            NestedField::optional(3, "amount", Type::Primitive(PrimitiveType::Int)),
        ]);
        let s = src.as_struct().field_by_id(2).unwrap();
        let d = required.as_struct().field_by_id(2).unwrap();
        let err = same_field(s, d, "region").unwrap_err();
        assert!(err.contains("required"), "{err}");
    }

    #[test]
    fn only_reader_promotions_count() {
        use PrimitiveType as T;
        let dec = |precision, scale| T::Decimal { precision, scale };
        assert!(is_promotion(&T::Int, &T::Long));
        assert!(is_promotion(&T::Float, &T::Double));
        assert!(is_promotion(&dec(10, 2), &dec(12, 2)));
        assert!(!is_promotion(&dec(10, 2), &dec(12, 3)));
        assert!(!is_promotion(&T::Long, &T::Int));
        assert!(!is_promotion(&T::Int, &T::String));
        assert!(!is_promotion(&T::Date, &T::Timestamp));
    }

    #[test]
    fn bounds_and_partition_values_are_retyped_for_a_widened_column() {
        assert_eq!(
            widen(&Datum::int(7), &PrimitiveType::Long),
            Some(Datum::long(7))
        );
        assert_eq!(
            widen(&Datum::float(1.5), &PrimitiveType::Double),
            Some(Datum::double(1.5))
        );
        let narrow = PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        };
        // 12.34: unscaled 1234, big-endian.
        let d = Datum::try_from_bytes(&[0x04, 0xD2], narrow).unwrap();
        let wide = PrimitiveType::Decimal {
            precision: 20,
            scale: 2,
        };
        let w = widen(&d, &wide).unwrap();
        assert_eq!((w.data_type(), w.literal()), (&wide, d.literal()));
        assert_eq!(widen(&Datum::long(7), &PrimitiveType::Int), None);
        assert_eq!(
            fit(&PrimitiveLiteral::Int(3), &PrimitiveType::Long),
            Some(PrimitiveLiteral::Long(3))
        );
        assert_eq!(fit(&PrimitiveLiteral::Long(3), &PrimitiveType::Int), None);
    }

    fn entry(content: DataContentType, path: &str, part: &str, seq: i64) -> Entry {
        Entry {
            file: DataFileBuilder::default()
                .content(content)
                .file_path(path.to_string())
                .file_format(DataFileFormat::Parquet)
                .partition(region(Some(part)))
                .record_count(1)
                .file_size_in_bytes(1)
                .equality_ids((content == DataContentType::EqualityDeletes).then(|| vec![1]))
                .build()
                .unwrap(),
            spec_id: 0,
            sequence_number: seq,
        }
    }

    #[test]
    fn deletes_apply_by_partition_and_sequence_number() {
        let data = entry(DataContentType::Data, "d/eu.parquet", "eu", 2);
        let pos = |part, seq| entry(DataContentType::PositionDeletes, "pos", part, seq);
        let eq = |part, seq| entry(DataContentType::EqualityDeletes, "eq", part, seq);
        let applies = |d: Entry| {
            DeleteIndex::new(vec![d], |_| false)
                .applying(&data)
                .is_some()
        };
        // A position delete of the same commit applies, an older one cannot.
        assert!(applies(pos("eu", 2)));
        assert!(!applies(pos("eu", 1)));
        assert!(!applies(pos("us", 3)));
        // An equality delete applies only to strictly older data.
        assert!(!applies(eq("eu", 2)));
        assert!(applies(eq("eu", 3)));
        let mut global = eq("eu", 3);
        global.file = DataFileBuilder::default()
            .content(DataContentType::EqualityDeletes)
            .file_path("eq-global".to_string())
            .file_format(DataFileFormat::Parquet)
            .record_count(1)
            .file_size_in_bytes(1)
            .equality_ids(Some(vec![1]))
            .build()
            .unwrap();
        assert!(applies(global));
        let mut other_file = pos("eu", 3);
        other_file.file = DataFileBuilder::default()
            .content(DataContentType::PositionDeletes)
            .file_path("pos".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(region(Some("eu")))
            .record_count(1)
            .file_size_in_bytes(1)
            .referenced_data_file(Some("d/us.parquet".to_string()))
            .build()
            .unwrap();
        assert!(!applies(other_file));
        // file_path bounds naming another file rule it out; bounds around this one do not.
        let bounded = |lo: &str, hi: &str| {
            let mut d = pos("eu", 3);
            d.file = DataFileBuilder::default()
                .content(DataContentType::PositionDeletes)
                .file_path("pos".to_string())
                .file_format(DataFileFormat::Parquet)
                .partition(region(Some("eu")))
                .record_count(1)
                .file_size_in_bytes(1)
                .lower_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(lo))]))
                .upper_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(hi))]))
                .build()
                .unwrap();
            d
        };
        assert!(!applies(bounded("d/other.parquet", "d/other.parquet")));
        assert!(applies(bounded("d/eu.parquet", "d/eu.parquet")));
        assert!(applies(bounded("d/a", "d/z")));
    }

    #[test]
    fn an_equality_delete_under_an_all_void_spec_is_global() {
        let s = orders();
        let specs = HashMap::from([
            (0, spec(&s, 2, Transform::Identity)),
            (1, spec(&s, 2, Transform::Void)),
        ]);
        let data = entry(DataContentType::Data, "d/eu.parquet", "eu", 2);
        // Written after the region field was dropped (format version 1 keeps it as void): its
        // tuple is one NULL, yet it deletes from every partition.
        let mut eq = entry(DataContentType::EqualityDeletes, "eq", "eu", 3);
        eq.spec_id = 1;
        eq.file = DataFileBuilder::default()
            .content(DataContentType::EqualityDeletes)
            .file_path("eq-void".to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(region(None))
            .partition_spec_id(1)
            .record_count(1)
            .file_size_in_bytes(1)
            .equality_ids(Some(vec![1]))
            .build()
            .unwrap();
        let index = DeleteIndex::new(vec![eq], |id| {
            specs.get(&id).is_none_or(|s| s.is_unpartitioned())
        });
        assert!(index.applying(&data).is_some());
    }

    #[test]
    fn a_non_ascii_string_through_truncate_is_left_undecided() {
        let s = orders();
        let truncate = spec(&s, 2, Transform::Truncate(3));
        let at = |filter: Predicate, p: &str| {
            let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
            let part = region(Some(p));
            decide(&bound, &View::new(&truncate, &part, &s))
        };
        let prefix = |v: &str| Reference::new("region").starts_with(Datum::string(v));
        // Rows such as `éabc` start with `éa` (3 bytes, 2 characters): iceberg's projection
        // would call partition `éab` empty of matches and skip it.
        match at(prefix("éa"), "éab") {
            Verdict::Undecided(why) => assert!(why.contains("non-ASCII"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            at(prefix("éa").negate(), "éab"),
            Verdict::Undecided(_)
        ));
        // ASCII literals are still decided.
        assert_eq!(at(prefix("ab"), "abc"), Verdict::Every);
        assert_eq!(at(prefix("ab"), "xyz"), Verdict::NoRow);
    }

    #[tokio::test]
    async fn a_copy_that_cannot_be_described_is_deleted() {
        let io = FileIO::new_with_memory();
        let path = "memory:///wh/dst/data/x-copy.parquet";
        io.new_output(path)
            .unwrap()
            .write(vec![1u8, 2, 3].into())
            .await
            .unwrap();
        let failed = || Err(MigrationError::InvalidInput("no entry".into()));
        // A reference is the source's file: never deleted.
        assert!(keep_if_described(&io, None, failed()).await.is_err());
        assert!(io.exists(path).await.unwrap());
        assert!(keep_if_described(&io, Some(path), failed()).await.is_err());
        assert!(!io.exists(path).await.unwrap());
    }

    #[tokio::test]
    async fn discard_never_deletes_outside_the_destination() {
        let s = orders();
        let md = iceberg::spec::TableMetadataBuilder::new(
            s.as_ref().clone(),
            UnboundPartitionSpec::builder().build(),
            iceberg::spec::SortOrder::unsorted_order(),
            "memory:///wh/dst/events".to_string(),
            FormatVersion::V2,
            HashMap::new(),
        )
        .unwrap()
        .build()
        .unwrap()
        .metadata;
        let io = FileIO::new_with_memory();
        let dest = Table::builder()
            .metadata(md)
            .identifier(iceberg::TableIdent::from_strs(["dst", "events"]).unwrap())
            .file_io(io.clone())
            .runtime(iceberg::Runtime::current())
            .build()
            .unwrap();
        let ours = "memory:///wh/dst/events/data/a-copy.parquet";
        // A referenced source file, and one under a sibling whose name extends the location.
        let theirs = "memory:///wh/src/events/data/a.parquet";
        let sibling = "memory:///wh/dst/events2/data/a.parquet";
        let mut files = Vec::new();
        for path in [ours, theirs, sibling] {
            io.new_output(path)
                .unwrap()
                .write(vec![1u8].into())
                .await
                .unwrap();
            files.push(
                DataFileBuilder::default()
                    .content(DataContentType::Data)
                    .file_path(path.to_string())
                    .file_format(DataFileFormat::Parquet)
                    .record_count(1)
                    .file_size_in_bytes(1)
                    .build()
                    .unwrap(),
            );
        }
        let payload = crate::worker::Payload::Written(WrittenFiles { spec_id: 0, files });
        crate::worker::discard(&dest, payload).await;
        assert!(!io.exists(ours).await.unwrap());
        assert!(io.exists(theirs).await.unwrap());
        assert!(io.exists(sibling).await.unwrap());
    }

    /// An empty Parquet file of `fields` at `path`, returning its size.
    async fn parquet_file(io: &FileIO, path: &str, fields: Vec<arrow_schema::Field>) -> u64 {
        let schema = Arc::new(arrow_schema::Schema::new(fields));
        let batch = arrow_array::RecordBatch::new_empty(schema.clone());
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let size = buf.len() as u64;
        io.new_output(path)
            .unwrap()
            .write(buf.into())
            .await
            .unwrap();
        size
    }

    fn with_id(f: arrow_schema::Field, id: i32) -> arrow_schema::Field {
        f.with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    }

    #[tokio::test]
    async fn a_file_without_field_ids_is_found_from_its_footer() {
        use arrow_schema::{DataType, Field, Fields};
        let io = FileIO::new_with_memory();
        // Nested groups Iceberg writes without ids (a list's repeated `list`) do not count.
        let nested = |ids: bool| {
            let id = |f: Field, n| if ids { with_id(f, n) } else { f };
            vec![
                id(Field::new("id", DataType::Int64, true), 1),
                id(
                    Field::new(
                        "tags",
                        DataType::List(Arc::new(id(
                            Field::new("element", DataType::Utf8, true),
                            5,
                        ))),
                        true,
                    ),
                    2,
                ),
                id(
                    Field::new(
                        "point",
                        DataType::Struct(Fields::from(vec![
                            id(Field::new("x", DataType::Float64, true), 6),
                            id(Field::new("ok", DataType::Boolean, true), 7),
                        ])),
                        true,
                    ),
                    3,
                ),
                id(Field::new("note", DataType::Utf8, true), 4),
            ]
        };
        let with = "memory:///t/with.parquet";
        let size = parquet_file(&io, with, nested(true)).await;
        assert_eq!(missing_field_ids(&io, with, size).await.unwrap(), None);

        let without = "memory:///t/without.parquet";
        let size = parquet_file(&io, without, nested(false)).await;
        let why = missing_field_ids(&io, without, size).await.unwrap();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("`id`") && w.contains("`point`")),
            "{why:?}"
        );

        // One column without an id among ones with; a footer larger than the first read.
        let mut wide: Vec<Field> = (0..3000)
            .map(|i| {
                with_id(
                    Field::new(format!("column_{i:0>40}"), DataType::Int32, true),
                    i + 1,
                )
            })
            .collect();
        wide.push(Field::new("added", DataType::Int32, true));
        let path = "memory:///t/wide.parquet";
        let size = parquet_file(&io, path, wide).await;
        assert!(size > FOOTER_GUESS_BYTES, "{size}");
        let why = missing_field_ids(&io, path, size).await.unwrap();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("`added`") && !w.contains("column_")),
            "{why:?}"
        );

        // Not Parquet, or a size the manifest got wrong.
        let junk = "memory:///t/junk.parquet";
        io.new_output(junk)
            .unwrap()
            .write(vec![0u8; 64].into())
            .await
            .unwrap();
        assert!(missing_field_ids(&io, junk, 64).await.unwrap().is_some());
        assert!(missing_field_ids(&io, with, 4).await.unwrap().is_some());
    }

    /// The migrator spawns these on tokio tasks.
    #[allow(dead_code)]
    fn futures_are_send(a: &Table, b: &Table, f: &[DataFile], p: &ReconciliationPlan) {
        fn send<T: Send>(_: T) {}
        send(copy_files(a, b, f, FileRoute::Copy));
        send(route_files(
            a,
            1,
            b,
            p,
            None,
            WriteMode::Append,
            CopyMode::Auto,
        ));
    }

    #[test]
    fn copy_mode_parses_and_prints() {
        for m in [
            CopyMode::Auto,
            CopyMode::Rewrite,
            CopyMode::Files,
            CopyMode::Reference,
        ] {
            assert_eq!(m.to_string().parse::<CopyMode>().unwrap(), m);
        }
        let err = "copy".parse::<CopyMode>().unwrap_err().to_string();
        assert!(err.contains("auto, rewrite, files or reference"), "{err}");
        assert_eq!(serde_json::to_string(&FileRoute::Copy).unwrap(), "\"copy\"");
    }
}
