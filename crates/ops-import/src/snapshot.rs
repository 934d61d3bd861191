//! `snapshot`: a new Iceberg table over existing Parquet files, left where they are — Spark's
//! `snapshot` procedure for a folder of Parquet files, on any catalog.
//!
//! 1. The files are named as for [`crate::add_files`] and their footers read.
//! 2. The schema is the union of theirs, by name (the first spelling kept), every column
//!    optional: `int` and `long` widen to `long`, `float` and `double` to `double`, timestamps
//!    of any unit are microsecond timestamps; other differences are refused, naming both files.
//!    Files carrying Iceberg field ids belong to an Iceberg table already and are refused.
//! 3. The `key=value` folders below the named folder are the partition columns, in their
//!    order (every file must have the same keys), typed from their values as Spark infers them
//!    (`int`, then `long`, then `date`, else `string`), unless the files hold the column; the
//!    spec is identity over them.
//! 4. The table is created with `gc.enabled=false`, as Spark's `snapshot` does: the files stay
//!    the source's, and expiry and orphan cleanup never delete them. Then the files are added
//!    ([`crate::add_files::AddFilesBuilder`]); if that fails, the new table is dropped again.
//!
//! A Glue Hive table (`glue:DATABASE.TABLE`, [`crate::glue`]) is a source too: the schema is
//! then its columns' (Hive types as Spark reads them), the partition columns its partition
//! keys, and its files those under its partitions' locations, wherever they are.
//!
//! A later `add_files` with [`crate::add_files::AddFilesBuilder::new_only`] adds what arrived
//! in the folder (or the Glue table) since.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use futures::TryStreamExt;
use iceberg::spec::{Datum, Transform, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{TableCreation, TableIdent};
use ops_core::{CatalogHandle, Error, Result};

use crate::add_files::{AddFilesBuilder, AddFilesMetrics};
use crate::columns::has_field_ids;
use crate::glue::GlueClient;
use crate::hive_path::segments;
use crate::source::expand;

/// What a snapshot made (or, on a dry run, would make).
#[derive(Debug, Default)]
pub struct SnapshotMetrics {
    /// The new table's columns, `name: type`.
    pub columns: Vec<String>,
    /// Its partition columns (identity).
    pub partition_columns: Vec<String>,
    /// The files added (on a dry run: found).
    pub add: AddFilesMetrics,
    /// Files found (a dry run reads their footers, adds nothing).
    pub files: usize,
}

/// Creates a table over existing files (see the module docs).
#[must_use = "a SnapshotBuilder does nothing until awaited"]
pub struct SnapshotBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    from: Vec<String>,
    properties: HashMap<String, String>,
    dry_run: bool,
    concurrency: usize,
    glue: Option<GlueClient>,
}

impl SnapshotBuilder {
    /// A snapshot into the new table `ident` of `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            from: Vec::new(),
            properties: HashMap::new(),
            dry_run: false,
            concurrency: 8,
            glue: None,
        }
    }

    /// The Glue catalog a `glue:DATABASE.TABLE` source is read through (default: the new
    /// table's catalog, when it is a Glue catalog).
    pub fn glue(mut self, glue: GlueClient) -> Self {
        self.glue = Some(glue);
        self
    }

    /// Folders, files or globs of the source (see [`crate::source`]), or one Glue table
    /// (`glue:DATABASE.TABLE`): the schema is then its columns', the partition columns its
    /// partition keys, and the files its partitions' ([`crate::glue`]).
    pub fn from<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.from.extend(names.into_iter().map(Into::into));
        self
    }

    /// More table properties (`gc.enabled=false` is always set).
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    /// Infers and reports the table, creating nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The table exists: a snapshot killed after making it and before adding its files left it
    /// empty (its marker set, no snapshot, nothing of it anyone wrote), and is dropped to be made
    /// anew; any other table is refused.
    async fn drop_own_leftover(&self) -> Result<()> {
        let table = self.handle.catalog().load_table(&self.ident).await?;
        let md = table.metadata();
        if md.properties().contains_key(SNAPSHOT_OF) && md.snapshots().next().is_none() {
            tracing::warn!(table = %self.ident,
                "an earlier snapshot stopped before adding its files left the table empty: made anew");
            self.handle.catalog().drop_table(&self.ident).await?;
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "{} exists already; a snapshot creates its table (add files to an existing table \
             with import add-files)",
            self.ident
        )))
    }

    async fn execute(self) -> Result<(Option<Table>, SnapshotMetrics)> {
        if self.from.is_empty() {
            return Err(Error::InvalidInput(
                "snapshot needs a source: a folder, files or a glob (--source-path)".into(),
            ));
        }
        if self.handle.catalog().table_exists(&self.ident).await? {
            self.drop_own_leftover().await?;
        }
        let io = self.handle.file_io();
        let props: HashMap<String, String> = io.config().props().clone();
        let glue_names: Vec<&String> = self
            .from
            .iter()
            .filter(|n| n.starts_with(crate::glue::GLUE_PREFIX))
            .collect();
        // Arrow has no UUID type (without its extension metadata, which the footers' schemas
        // lack here): such a column is a 16-byte fixed until the schema is made.
        let (fields, keys, files, uuids) = match (glue_names.as_slice(), self.from.len()) {
            ([], _) => self.infer_from_files(&io, &props).await?,
            ([name], 1) => {
                let (fields, keys, files) = self.infer_from_glue(name, &props).await?;
                (fields, keys, files, HashSet::new())
            }
            _ => {
                return Err(Error::InvalidInput(
                    "a snapshot of a Glue table takes that one table as its source (no other \
                     names beside it)"
                        .into(),
                ));
            }
        };
        let arrow = ArrowSchema::new(fields);
        let schema = with_uuids(
            iceberg::arrow::arrow_schema_to_schema_auto_assign_ids(&arrow)?,
            &uuids,
        )?;
        let mut spec = UnboundPartitionSpec::builder();
        let mut partition_columns = Vec::new();
        for k in &keys {
            let Some(field) = crate::columns::column_named(&schema, k) else {
                continue;
            };
            spec = spec.add_partition_field(field.id, field.name.clone(), Transform::Identity)?;
            partition_columns.push(field.name.clone());
        }
        let mut metrics = SnapshotMetrics {
            columns: ops_core::display::columns_text(&schema),
            partition_columns,
            files,
            ..Default::default()
        };
        if self.dry_run {
            return Ok((None, metrics));
        }
        let namespace = self.ident.namespace().clone();
        if !self.handle.catalog().namespace_exists(&namespace).await? {
            self.handle
                .catalog()
                .create_namespace(&namespace, HashMap::new())
                .await?;
        }
        let mut properties = self.properties.clone();
        properties.insert(
            ops_core::ops::markers::GC_ENABLED.to_string(),
            "false".into(),
        );
        properties.insert(
            SNAPSHOT_OF.to_string(),
            serde_json::to_string(&self.from).unwrap_or_default(),
        );
        self.handle
            .catalog()
            .create_table(
                &namespace,
                TableCreation::builder()
                    .name(self.ident.name().to_string())
                    .schema(schema)
                    .partition_spec(spec.build())
                    .properties(properties)
                    .build(),
            )
            .await?;
        if files == 0 {
            // A Glue table without files (no partition written yet): an empty table.
            let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
            return Ok((Some(table), metrics));
        }
        let mut add = AddFilesBuilder::new(&self.handle, self.ident.clone())
            .from(self.from.clone())
            .concurrency(self.concurrency);
        if let Some(glue) = &self.glue {
            add = add.glue(glue.clone());
        }
        match add.await {
            Ok((table, add)) => {
                metrics.add = add;
                Ok((Some(table), metrics))
            }
            Err(e) => {
                // Nothing of the snapshot is left: the table is dropped (its files are the
                // source's and stay; `drop_table` deletes no data file).
                if let Err(drop) = self.handle.catalog().drop_table(&self.ident).await {
                    tracing::warn!(table = %self.ident, error = %drop,
                        "could not drop the table of a failed snapshot");
                }
                Err(e)
            }
        }
    }

    /// The schema's fields, the partition columns and the file count of a folder source: the
    /// union of the footers, the `key=value` folders (see the module docs).
    async fn infer_from_files(
        &self,
        io: &iceberg::io::FileIO,
        props: &HashMap<String, String>,
    ) -> Result<(Vec<Field>, Vec<String>, usize, HashSet<String>)> {
        let any = HashSet::from([crate::source::ANY_PARTITION_COLUMN.to_string()]);
        let expanded = expand(&self.from, &any, props).await?;
        if expanded.files.is_empty() {
            return Err(Error::InvalidInput(format!(
                "no Parquet file under {}",
                self.from.join(", ")
            )));
        }
        let files = expanded.files.len();
        let mut footers = std::pin::pin!(crate::footer::read_many(
            io,
            expanded.files.into_iter(),
            self.concurrency
        ));
        let mut union = Union::default();
        let mut keys: Option<(Vec<String>, String)> = None;
        let mut values: HashMap<String, Inferred> = HashMap::new();
        while let Some((f, meta)) = footers.try_next().await? {
            // Refused before the table is made, as the add would refuse them after.
            crate::readers::refuse_unreadable(&f.path, &meta)?;
            let descr = meta.file_metadata().schema_descr();
            if has_field_ids(descr) {
                return Err(Error::InvalidInput(format!(
                    "{} carries Iceberg field ids: it belongs to an Iceberg table already. \
                     Add it to a table of that schema with import add-files",
                    f.path
                )));
            }
            for col in descr.columns() {
                if let Some(parquet::basic::LogicalType::Timestamp {
                    unit: parquet::basic::TimeUnit::NANOS,
                    ..
                }) = col.logical_type_ref()
                {
                    return Err(Error::InvalidInput(format!(
                        "column `{}` of {} holds nanosecond timestamps, which an Iceberg v2 \
                         table cannot hold (pandas writes them by default): write the files \
                         with coerce_timestamps='us'",
                        col.path().parts().join("."),
                        f.path
                    )));
                }
            }
            let arrow = parquet::arrow::parquet_to_arrow_schema(descr, None)
                .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", f.path)))?;
            if let Some(null) = arrow
                .fields()
                .iter()
                .find(|c| c.data_type() == &DataType::Null)
            {
                return Err(Error::InvalidInput(format!(
                    "column `{}` of {} has no type (all NULL, written from an untyped column): \
                     give it a type when writing the file",
                    null.name(),
                    f.path
                )));
            }
            union.add(&f.path, &arrow)?;
            union.uuids.extend(uuid_columns(descr));
            let below = f.relative.get(f.below..).unwrap_or("");
            let folders = segments(below);
            let these: Vec<String> = folders.iter().map(|(k, _)| k.clone()).collect();
            match &keys {
                None => keys = Some((these, f.path.clone())),
                Some((first, at)) => {
                    let same = first.len() == these.len()
                        && first
                            .iter()
                            .zip(&these)
                            .all(|(a, b)| a.eq_ignore_ascii_case(b));
                    if !same {
                        return Err(Error::InvalidInput(format!(
                            "{} lies under partition folders {:?}, but {at} under {:?}: a \
                             snapshot's files share their partition columns",
                            f.path, these, first
                        )));
                    }
                }
            }
            for (k, v) in folders {
                let entry = values.entry(k.to_lowercase()).or_default();
                if let Some(v) = v {
                    entry.see(&v);
                }
            }
        }
        let keys = keys.map(|(k, _)| k).unwrap_or_default();
        let mut fields = union.fields;
        for k in &keys {
            if fields.iter().any(|f| f.name().eq_ignore_ascii_case(k)) {
                continue;
            }
            let ty = values
                .get(&k.to_lowercase())
                .map_or(DataType::Utf8, Inferred::data_type);
            fields.push(Field::new(k, ty, true));
        }
        Ok((fields, keys, files, union.uuids))
    }

    /// The same of a Glue table: its columns and partition keys (Hive types), its partitions'
    /// files (counted; the add reads their footers and refuses those that do not fit).
    async fn infer_from_glue(
        &self,
        name: &str,
        props: &HashMap<String, String>,
    ) -> Result<(Vec<Field>, Vec<String>, usize)> {
        let Some(parsed) = crate::glue::parse_name(name) else {
            return Err(Error::InvalidInput(format!("{name} names no Glue table")));
        };
        let (database, table) = parsed?;
        let client = match &self.glue {
            Some(c) => c.clone(),
            None => GlueClient::of(&self.handle).await.map_err(|e| {
                Error::InvalidInput(format!(
                    "{name} names a Glue table, read through a Glue catalog: give one with \
                     --source-catalog ({e})"
                ))
            })?,
        };
        let glue = client.read(&database, &table).await?;
        let fields = glue.fields()?;
        let keys = glue.partition_keys.iter().map(|(k, _)| k.clone()).collect();
        let files = glue.files(&HashSet::new(), props).await?.files.len();
        Ok((fields, keys, files))
    }
}

/// The table property a snapshot sets on the table it makes: its sources, as JSON. A table
/// with it and no snapshot is the leftover of a snapshot stopped before its files were added.
pub const SNAPSHOT_OF: &str = "iceberg-ops.import.snapshot-of";

/// The union of the files' schemas, by name.
#[derive(Default)]
struct Union {
    fields: Vec<Field>,
    /// The file each column was first seen in, for messages.
    first: HashMap<String, String>,
    /// The dotted names of the columns some file annotates as UUIDs ([`uuid_columns`]).
    uuids: HashSet<String>,
}

impl Union {
    fn add(&mut self, path: &str, schema: &ArrowSchema) -> Result<()> {
        let mut seen: HashMap<String, &str> = HashMap::new();
        for field in schema.fields() {
            let ty = normalized(field.data_type());
            let key = field.name().to_lowercase();
            if let Some(other) = seen.insert(key.clone(), field.name()) {
                return Err(Error::InvalidInput(format!(
                    "{path} has columns `{other}` and `{}`, whose names differ only in case: \
                     a table's name mapping (as Hive and Glue) cannot tell them apart; rename \
                     one of them",
                    field.name()
                )));
            }
            // A type Iceberg has no counterpart for is refused here, naming the column and
            // the file, rather than when the union's schema is made.
            let one = ArrowSchema::new(vec![Field::new(field.name(), ty.clone(), true)]);
            if let Err(e) = iceberg::arrow::arrow_schema_to_schema_auto_assign_ids(&one) {
                return Err(Error::InvalidInput(format!(
                    "column `{}` of {path} is {}, which no Iceberg type holds ({}): write it \
                     as a type Iceberg has (a signed integer, time in microseconds, ...)",
                    field.name(),
                    field.data_type(),
                    e.message()
                )));
            }
            match self
                .fields
                .iter_mut()
                .find(|f| f.name().to_lowercase() == key)
            {
                None => {
                    self.fields
                        .push(Field::new(field.name(), ty, true).with_metadata(HashMap::new()));
                    self.first.insert(key, path.to_string());
                }
                Some(existing) => {
                    let widened = match (existing.data_type(), &ty) {
                        (a, b) if a == b => None,
                        (DataType::Int32, DataType::Int64) => Some(DataType::Int64),
                        (DataType::Int64, DataType::Int32) => None,
                        (DataType::Float32, DataType::Float64) => Some(DataType::Float64),
                        (DataType::Float64, DataType::Float32) => None,
                        (a, b) => {
                            return Err(Error::InvalidInput(format!(
                                "column `{}` is {a} in {} but {b} in {path}: a snapshot's \
                                 files must agree on each column's type (int and long, float \
                                 and double widen)",
                                field.name(),
                                self.first.get(&key).map_or("another file", String::as_str)
                            )));
                        }
                    };
                    if let Some(t) = widened {
                        *existing = Field::new(existing.name(), t, true);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A file's column type as the table will hold it: timestamps in microseconds (INT96, the
/// milliseconds of old writers), everything else as it is.
fn normalized(ty: &DataType) -> DataType {
    match ty {
        DataType::Timestamp(TimeUnit::Second | TimeUnit::Millisecond, tz) => {
            DataType::Timestamp(TimeUnit::Microsecond, tz.clone())
        }
        // INT96 (Spark, Hive) reads as nanoseconds; the values are microsecond-exact.
        DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
            DataType::Timestamp(TimeUnit::Microsecond, tz.clone().or(Some(Arc::from("UTC"))))
        }
        other => other.clone(),
    }
}

/// The dotted names (the top-level part lower-cased, as the union matches columns across files;
/// nested names as written, which the union requires to agree; a list's element `element`, a
/// map's key and value `key` and `value`, as Iceberg names them) of the columns of `descr`
/// annotated as UUIDs, which Java's
/// `ParquetSchemaUtil` reads as Iceberg `uuid`: a table made with `fixed[16]` for them could
/// not be scanned by PyIceberg ("Cannot promote uuid to fixed[16]").
fn uuid_columns(descr: &parquet::schema::types::SchemaDescriptor) -> Vec<String> {
    use parquet::basic::{ConvertedType, LogicalType};
    use parquet::schema::types::Type;
    let mut out = Vec::new();
    let mut pending: Vec<(&Type, String)> = descr
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| (f.as_ref(), f.name().to_lowercase()))
        .collect();
    while let Some((ty, name)) = pending.pop() {
        let info = ty.get_basic_info();
        if !ty.is_group() {
            if info.logical_type_ref() == Some(&LogicalType::Uuid) {
                out.push(name);
            }
            continue;
        }
        let fields = ty.get_fields();
        let list = matches!(info.logical_type_ref(), Some(LogicalType::List))
            || info.converted_type() == ConvertedType::LIST;
        let map = matches!(info.logical_type_ref(), Some(LogicalType::Map))
            || matches!(
                info.converted_type(),
                ConvertedType::MAP | ConvertedType::MAP_KEY_VALUE
            );
        match (list, map, fields.first()) {
            (true, _, Some(repeated)) => {
                // Three levels (`list.element`), or two: the repeated field is the element
                // when it is a primitive, a group of several fields, or a one-field group
                // named `array` or `<list>_tuple` (Parquet's backward-compatibility rules, as
                // Java's `ParquetSchemaUtil` and arrow-rs apply them).
                let legacy =
                    repeated.name() == "array" || repeated.name() == format!("{}_tuple", ty.name());
                let element = match repeated.get_fields() {
                    [one] if repeated.is_group() && !legacy => one.as_ref(),
                    _ => repeated.as_ref(),
                };
                pending.push((element, format!("{name}.element")));
            }
            (_, true, Some(entries)) if entries.is_group() => {
                for (child, part) in entries.get_fields().iter().zip(["key", "value"]) {
                    pending.push((child.as_ref(), format!("{name}.{part}")));
                }
            }
            _ => pending.extend(
                fields
                    .iter()
                    .map(|f| (f.as_ref(), format!("{name}.{}", f.name()))),
            ),
        }
    }
    out
}

/// `schema` with the `fixed[16]` columns named in `uuids` ([`uuid_columns`]) made `uuid`. The
/// schema's JSON form is edited: iceberg has no builder that replaces a nested field's type.
fn with_uuids(
    schema: iceberg::spec::Schema,
    uuids: &HashSet<String>,
) -> Result<iceberg::spec::Schema> {
    use serde_json::Value;
    if uuids.is_empty() {
        return Ok(schema);
    }
    let invalid = |e: serde_json::Error| Error::InvalidInput(format!("the inferred schema: {e}"));
    let mut json = serde_json::to_value(&schema).map_err(invalid)?;
    // (a JSON pointer to a type, the dotted name of its column)
    let mut pending: Vec<(String, String)> = vec![(String::new(), String::new())];
    while let Some((at, name)) = pending.pop() {
        let join = |part: &str| {
            if name.is_empty() {
                part.to_lowercase()
            } else {
                format!("{name}.{part}")
            }
        };
        let Some(ty) = json.pointer_mut(&at) else {
            continue;
        };
        match ty {
            Value::String(t) if t == "fixed[16]" && uuids.contains(&name) => {
                *t = "uuid".to_string();
            }
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("struct") => {
                    let fields = o.get("fields").and_then(Value::as_array);
                    for (i, f) in fields.into_iter().flatten().enumerate() {
                        let part = f.get("name").and_then(Value::as_str).unwrap_or_default();
                        pending.push((format!("{at}/fields/{i}/type"), join(part)));
                    }
                }
                Some("list") => pending.push((format!("{at}/element"), join("element"))),
                Some("map") => {
                    pending.push((format!("{at}/key"), join("key")));
                    pending.push((format!("{at}/value"), join("value")));
                }
                _ => {}
            },
            _ => {}
        }
    }
    serde_json::from_value(json).map_err(invalid)
}

/// What a partition folder's values are, as Spark infers a partition column's type.
#[derive(Debug)]
struct Inferred {
    int: bool,
    long: bool,
    date: bool,
}

impl Default for Inferred {
    fn default() -> Self {
        Self {
            int: true,
            long: true,
            date: true,
        }
    }
}

impl Inferred {
    fn see(&mut self, v: &str) {
        self.int &= v.parse::<i32>().is_ok();
        self.long &= v.parse::<i64>().is_ok();
        self.date &= v.len() == 10 && Datum::date_from_str(v).is_ok();
    }

    fn data_type(&self) -> DataType {
        if self.int {
            DataType::Int32
        } else if self.long {
            DataType::Int64
        } else if self.date {
            DataType::Date32
        } else {
            DataType::Utf8
        }
    }
}

impl IntoFuture for SnapshotBuilder {
    type Output = Result<(Option<Table>, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(fields: Vec<(&str, DataType)>) -> ArrowSchema {
        ArrowSchema::new(
            fields
                .into_iter()
                .map(|(n, t)| Field::new(n, t, true))
                .collect::<Vec<_>>(),
        )
    }

    fn refusal(fields: Vec<(&str, DataType)>) -> String {
        Union::default()
            .add("/d/a.parquet", &schema(fields))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// What the union cannot hold is refused naming the file and the column, before the table
    /// is made: a type without an Iceberg counterpart (it failed naming neither), two columns
    /// of one file whose names differ only in case (the add then advised changing the table's
    /// schema, of a table being created).
    #[test]
    fn a_column_no_table_can_hold_is_named_with_its_file() {
        let e = refusal(vec![("t32", DataType::Time32(TimeUnit::Millisecond))]);
        assert!(
            e.contains("column `t32` of /d/a.parquet is Time32(ms)"),
            "{e}"
        );
        let e = refusal(vec![("u", DataType::UInt64)]);
        assert!(e.contains("column `u` of /d/a.parquet is UInt64"), "{e}");
        let e = refusal(vec![("id", DataType::Int64), ("ID", DataType::Int64)]);
        assert!(
            e.contains("/d/a.parquet has columns `id` and `ID`, whose names differ only in case"),
            "{e}"
        );
        assert_eq!(
            refusal(vec![("id", DataType::Int64), ("n", DataType::UInt32)]),
            ""
        );
    }

    /// A UUID annotation is found at every depth and named as Iceberg names the column, and the
    /// schema made from Arrow's 16-byte fixed takes `uuid` there only.
    #[test]
    fn uuid_columns_are_typed_uuid_at_every_depth() -> Result<()> {
        use parquet::basic::{LogicalType, Repetition, Type as Physical};
        use parquet::schema::types::{SchemaDescriptor, Type};
        let uuid = |name: &str| {
            Type::primitive_type_builder(name, Physical::FIXED_LEN_BYTE_ARRAY)
                .with_length(16)
                .with_logical_type(Some(LogicalType::Uuid))
                .with_repetition(Repetition::OPTIONAL)
                .build()
                .map(Arc::new)
        };
        let group = |name: &str, logical: Option<LogicalType>, rep, fields| {
            Type::group_type_builder(name)
                .with_logical_type(logical)
                .with_repetition(rep)
                .with_fields(fields)
                .build()
                .map(Arc::new)
        };
        let plain = |name: &str| {
            Type::primitive_type_builder(name, Physical::FIXED_LEN_BYTE_ARRAY)
                .with_length(16)
                .with_repetition(Repetition::OPTIONAL)
                .build()
                .map(Arc::new)
        };
        let to = |e: parquet::errors::ParquetError| Error::InvalidInput(e.to_string());
        let root = Type::group_type_builder("schema")
            .with_fields(vec![
                uuid("U").map_err(to)?,
                plain("f").map_err(to)?,
                // A nested field spelled as another but for case is not a UUID.
                group(
                    "s",
                    None,
                    Repetition::OPTIONAL,
                    vec![uuid("v").map_err(to)?, plain("V").map_err(to)?],
                )
                .map_err(to)?,
                group(
                    "l",
                    Some(LogicalType::List),
                    Repetition::OPTIONAL,
                    vec![
                        group(
                            "list",
                            None,
                            Repetition::REPEATED,
                            vec![uuid("element").map_err(to)?],
                        )
                        .map_err(to)?,
                    ],
                )
                .map_err(to)?,
            ])
            .build()
            .map_err(to)?;
        let descr = SchemaDescriptor::new(Arc::new(root));
        let mut names = uuid_columns(&descr);
        names.sort();
        assert_eq!(names, ["l.element", "s.v", "u"]);
        let arrow = parquet::arrow::parquet_to_arrow_schema(&descr, None).map_err(to)?;
        let schema = with_uuids(
            iceberg::arrow::arrow_schema_to_schema_auto_assign_ids(&arrow)?,
            &names.into_iter().collect(),
        )?;
        let types: Vec<String> = schema
            .as_struct()
            .fields()
            .iter()
            .map(|f| f.field_type.to_string())
            .collect();
        assert_eq!(types[0], "uuid");
        assert_eq!(types[1], "fixed(16)");
        assert_eq!(
            types[2], "struct<uuidfixed(16)>",
            "iceberg prints a struct's fields unseparated"
        );
        let element =
            schema
                .as_struct()
                .fields()
                .get(3)
                .and_then(|f| match f.field_type.as_ref() {
                    iceberg::spec::Type::List(l) => Some(l.element_field.field_type.to_string()),
                    _ => None,
                });
        assert_eq!(element.as_deref(), Some("uuid"));
        Ok(())
    }
}
