//! The declarative operations a migration file lists, how each is applied through ops-core, how
//! it is described for `--dry-run`, and which can be inverted when no downgrade is written.
//!
//! Consecutive column operations on one table are one schema commit, consecutive partition
//! operations one spec commit, consecutive property operations one properties commit: a file
//! that renames and widens a column in one step lands as one new schema.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use iceberg::spec::{
    FormatVersion, ListType, MapType, NestedField, NullOrder, Schema, SortDirection, SortField,
    SortOrder, StructType, Transform, Type, UnboundPartitionSpec,
};
use iceberg::{TableCreation, TableIdent};
use ops_core::ops::evolve_schema::{EvolveSchemaBuilder, Position};
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::ops::sort_order::SortOrderBuilder;
use serde::{Deserialize, Serialize};

use crate::types::{parse_primitive, parse_type};
use crate::{MigrationContext, StepError};

/// A table property value; TOML numbers and booleans are written as their text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PropertyValue {
    /// A string.
    Text(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl fmt::Display for PropertyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyValue::Text(s) => f.write_str(s),
            PropertyValue::Int(i) => write!(f, "{i}"),
            PropertyValue::Float(x) => write!(f, "{x}"),
            PropertyValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// A column of a new table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnDef {
    /// Column name.
    pub name: String,
    /// Iceberg type name (`long`, `decimal(12,2)`, `struct<...>`, ...).
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether values are required (default: optional).
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Column doc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
}

/// A partition field: a transform of a source column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionDef {
    /// Source column.
    pub column: String,
    /// `identity` (default), `bucket[N]`, `truncate[W]`, `year`, `month`, `day`, `hour`, `void`.
    #[serde(default = "identity")]
    pub transform: String,
    /// Partition field name (default: PyIceberg's, e.g. `id_bucket_16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A sort field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SortDef {
    /// Source column.
    pub column: String,
    /// Transform (default `identity`).
    #[serde(default = "identity")]
    pub transform: String,
    /// `asc` (default) or `desc`.
    #[serde(default = "asc")]
    pub direction: String,
    /// `first` or `last` (default: first for asc, last for desc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nulls: Option<String>,
}

fn identity() -> String {
    "identity".to_string()
}

fn asc() -> String {
    "asc".to_string()
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One declarative change, as written in a migration file (`op = "..."`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Operation {
    /// Create a table.
    CreateTable {
        /// Table name in the managed namespace.
        table: String,
        /// Columns in order.
        columns: Vec<ColumnDef>,
        /// Partition fields.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        partition: Vec<PartitionDef>,
        /// Sort order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sort_order: Vec<SortDef>,
        /// Identifier fields (row key).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        identifier_fields: Vec<String>,
        /// Table properties.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        properties: BTreeMap<String, PropertyValue>,
        /// Format version, 1–3 (default 2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format_version: Option<u8>,
    },
    /// Drop a table (destructive).
    DropTable {
        /// Table name.
        table: String,
    },
    /// Rename a table within the namespace.
    RenameTable {
        /// Table name.
        table: String,
        /// New name.
        to: String,
    },
    /// Add an optional column (a dotted path adds inside a struct).
    AddColumn {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
        /// Iceberg type name.
        #[serde(rename = "type")]
        ty: String,
        /// Column doc.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        doc: Option<String>,
    },
    /// Drop a column (destructive).
    DropColumn {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
    },
    /// Rename a column (its field id, and so its data, stays).
    RenameColumn {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
        /// New leaf name.
        to: String,
    },
    /// Widen a column's type (int→long, float→double, decimal precision up).
    WidenColumn {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
        /// The wider type.
        #[serde(rename = "type")]
        ty: String,
    },
    /// Make a required column optional.
    MakeOptional {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
    },
    /// Set a column's doc.
    SetDoc {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
        /// The doc.
        doc: String,
    },
    /// Move a column within its struct: exactly one of `first`, `before`, `after`.
    MoveColumn {
        /// Table name.
        table: String,
        /// Column path.
        column: String,
        /// Move to the front.
        #[serde(default, skip_serializing_if = "is_false")]
        first: bool,
        /// Move before this sibling (full path).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<String>,
        /// Move after this sibling (full path).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
    /// Replace the identifier fields.
    SetIdentifierFields {
        /// Table name.
        table: String,
        /// Column paths.
        columns: Vec<String>,
    },
    /// Add a partition field.
    AddPartitionField {
        /// Table name.
        table: String,
        /// Source column.
        column: String,
        /// Transform (default `identity`).
        #[serde(default = "identity")]
        transform: String,
        /// Partition field name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Remove a partition field by name.
    RemovePartitionField {
        /// Table name.
        table: String,
        /// Partition field name.
        name: String,
    },
    /// Replace the default sort order (no fields: unsorted).
    ReplaceSortOrder {
        /// Table name.
        table: String,
        /// Sort fields.
        #[serde(default)]
        fields: Vec<SortDef>,
    },
    /// Set table properties.
    SetProperties {
        /// Table name.
        table: String,
        /// Keys and values.
        properties: BTreeMap<String, PropertyValue>,
    },
    /// Remove table properties.
    RemoveProperties {
        /// Table name.
        table: String,
        /// Keys.
        keys: Vec<String>,
    },
}

/// Which commit an operation joins.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Group {
    Schema,
    Spec,
    Properties,
    Alone,
}

impl Operation {
    /// The `op` name.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::CreateTable { .. } => "create_table",
            Operation::DropTable { .. } => "drop_table",
            Operation::RenameTable { .. } => "rename_table",
            Operation::AddColumn { .. } => "add_column",
            Operation::DropColumn { .. } => "drop_column",
            Operation::RenameColumn { .. } => "rename_column",
            Operation::WidenColumn { .. } => "widen_column",
            Operation::MakeOptional { .. } => "make_optional",
            Operation::SetDoc { .. } => "set_doc",
            Operation::MoveColumn { .. } => "move_column",
            Operation::SetIdentifierFields { .. } => "set_identifier_fields",
            Operation::AddPartitionField { .. } => "add_partition_field",
            Operation::RemovePartitionField { .. } => "remove_partition_field",
            Operation::ReplaceSortOrder { .. } => "replace_sort_order",
            Operation::SetProperties { .. } => "set_properties",
            Operation::RemoveProperties { .. } => "remove_properties",
        }
    }

    /// The table the operation changes.
    pub fn table(&self) -> &str {
        match self {
            Operation::CreateTable { table, .. }
            | Operation::DropTable { table }
            | Operation::RenameTable { table, .. }
            | Operation::AddColumn { table, .. }
            | Operation::DropColumn { table, .. }
            | Operation::RenameColumn { table, .. }
            | Operation::WidenColumn { table, .. }
            | Operation::MakeOptional { table, .. }
            | Operation::SetDoc { table, .. }
            | Operation::MoveColumn { table, .. }
            | Operation::SetIdentifierFields { table, .. }
            | Operation::AddPartitionField { table, .. }
            | Operation::RemovePartitionField { table, .. }
            | Operation::ReplaceSortOrder { table, .. }
            | Operation::SetProperties { table, .. }
            | Operation::RemoveProperties { table, .. } => table,
        }
    }

    /// Whether the operation destroys data (refused unless the file allows it).
    pub fn is_destructive(&self) -> bool {
        matches!(
            self,
            Operation::DropTable { .. } | Operation::DropColumn { .. }
        )
    }

    fn group(&self) -> Group {
        match self {
            Operation::AddColumn { .. }
            | Operation::DropColumn { .. }
            | Operation::RenameColumn { .. }
            | Operation::WidenColumn { .. }
            | Operation::MakeOptional { .. }
            | Operation::SetDoc { .. }
            | Operation::MoveColumn { .. }
            | Operation::SetIdentifierFields { .. } => Group::Schema,
            Operation::AddPartitionField { .. } | Operation::RemovePartitionField { .. } => {
                Group::Spec
            }
            Operation::SetProperties { .. } | Operation::RemoveProperties { .. } => {
                Group::Properties
            }
            _ => Group::Alone,
        }
    }

    /// Checks what can be checked without the catalog (names, types, transforms); the error
    /// names the offending field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let name_ok = |field: &'static str, v: &str| {
            if v.is_empty() || v.contains('.') {
                Err((field, format!("'{v}' is not a valid table name")))
            } else {
                Ok(())
            }
        };
        name_ok("table", self.table())?;
        match self {
            Operation::CreateTable {
                columns,
                partition,
                sort_order,
                format_version,
                identifier_fields,
                ..
            } => {
                if columns.is_empty() {
                    return Err(("columns", "a table needs at least one column".into()));
                }
                for c in columns {
                    parse_type(&c.ty).map_err(|e| ("type", format!("column '{}': {e}", c.name)))?;
                }
                for p in partition {
                    transform(&p.transform).map_err(|e| ("transform", e))?;
                }
                for s in sort_order {
                    sort_field_parts(s).map_err(|e| ("sort_order", e))?;
                }
                if let Some(v) = format_version
                    && !(1..=3).contains(v)
                {
                    return Err(("format_version", format!("{v} is not 1, 2 or 3")));
                }
                build_schema(columns, identifier_fields).map_err(|e| ("columns", e))?;
            }
            Operation::RenameTable { to, .. } => name_ok("to", to)?,
            Operation::AddColumn { ty, .. } => {
                parse_type(ty).map_err(|e| ("type", e))?;
            }
            Operation::WidenColumn { ty, .. } => {
                parse_primitive(ty).map_err(|e| ("type", e))?;
            }
            Operation::RenameColumn { to, .. } if to.is_empty() || to.contains('.') => {
                return Err((
                    "to",
                    format!("'{to}' is not a column name (give the new leaf name only)"),
                ));
            }
            Operation::MoveColumn {
                first,
                before,
                after,
                ..
            } => {
                let n = usize::from(*first)
                    + usize::from(before.is_some())
                    + usize::from(after.is_some());
                if n != 1 {
                    return Err((
                        "first",
                        "give exactly one of first = true, before = \"col\", after = \"col\""
                            .into(),
                    ));
                }
            }
            Operation::AddPartitionField { transform: t, .. } => {
                transform(t).map_err(|e| ("transform", e))?;
            }
            Operation::ReplaceSortOrder { fields, .. } => {
                for s in fields {
                    sort_field_parts(s).map_err(|e| ("fields", e))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The property keys this operation sets or removes (none for other operations).
    pub fn property_keys(&self) -> Vec<String> {
        match self {
            Operation::SetProperties { properties, .. } => properties.keys().cloned().collect(),
            Operation::RemoveProperties { keys, .. } => keys.clone(),
            _ => Vec::new(),
        }
    }

    /// The operations that undo this one, given the values its property keys had before it ran
    /// (`earlier`, recorded by the runner when it applied the operation), or why there are
    /// none. Setting properties is undone by restoring the earlier values and removing the keys
    /// that were absent; without recorded values it has no inverse, since removing the keys
    /// would lose whatever they held before.
    pub fn inverse_with(
        &self,
        earlier: Option<&BTreeMap<String, Option<String>>>,
    ) -> Result<Vec<Operation>, String> {
        let restore = |table: &String, earlier: &BTreeMap<String, Option<String>>| {
            let set: BTreeMap<String, PropertyValue> = earlier
                .iter()
                .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), PropertyValue::Text(v))))
                .collect();
            let remove: Vec<String> = earlier
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k.clone())
                .collect();
            let mut ops = Vec::new();
            if !remove.is_empty() {
                ops.push(Operation::RemoveProperties {
                    table: table.clone(),
                    keys: remove,
                });
            }
            if !set.is_empty() {
                ops.push(Operation::SetProperties {
                    table: table.clone(),
                    properties: set,
                });
            }
            ops
        };
        match self {
            Operation::SetProperties { table, properties } => {
                let Some(earlier) = earlier.filter(|e| e.keys().eq(properties.keys())) else {
                    return Err(format!(
                        "set_properties on table '{table}' has no automatic inverse here: the \
                         earlier values of [{}] were not recorded when it was applied (by an \
                         older iceberg-ops, or the file changed since); write a [[downgrade]] \
                         list in the file",
                        properties.keys().cloned().collect::<Vec<_>>().join(", ")
                    ));
                };
                Ok(restore(table, earlier))
            }
            Operation::RemoveProperties { table, keys } => {
                let mut sorted = keys.clone();
                sorted.sort();
                sorted.dedup();
                let Some(earlier) = earlier.filter(|e| e.keys().eq(sorted.iter())) else {
                    return Err(format!(
                        "remove_properties on table '{table}' has no automatic inverse here: the \
                         removed values of [{}] were not recorded; write a [[downgrade]] list \
                         in the file",
                        keys.join(", ")
                    ));
                };
                // Keys that were absent stay absent: restore only what was there.
                let held: BTreeMap<String, Option<String>> = earlier
                    .iter()
                    .filter(|(_, v)| v.is_some())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Ok(restore(table, &held))
            }
            other => other.inverse().map(|op| vec![op]),
        }
    }

    /// The operation that undoes this one without any recorded state, or why there is none.
    pub fn inverse(&self) -> Result<Operation, String> {
        Ok(match self {
            Operation::CreateTable { table, .. } => Operation::DropTable {
                table: table.clone(),
            },
            Operation::RenameTable { table, to } => Operation::RenameTable {
                table: to.clone(),
                to: table.clone(),
            },
            Operation::AddColumn { table, column, .. } => Operation::DropColumn {
                table: table.clone(),
                column: column.clone(),
            },
            Operation::RenameColumn { table, column, to } => {
                let (parent, leaf) = match column.rsplit_once('.') {
                    Some((p, l)) => (format!("{p}."), l),
                    None => (String::new(), column.as_str()),
                };
                Operation::RenameColumn {
                    table: table.clone(),
                    column: format!("{parent}{to}"),
                    to: leaf.to_string(),
                }
            }
            Operation::AddPartitionField {
                table,
                column,
                transform: t,
                name,
            } => Operation::RemovePartitionField {
                table: table.clone(),
                name: match name {
                    Some(n) => n.clone(),
                    None => default_partition_name(column, &transform(t)?),
                },
            },
            other => {
                return Err(format!(
                    "{} on table '{}' has no automatic inverse; write a [[downgrade]] list in the \
                     file",
                    other.name(),
                    other.table()
                ));
            }
        })
    }

    /// The Iceberg change this operation makes, in words, for `--dry-run`.
    pub fn describe(&self, ctx: &MigrationContext) -> String {
        let t = qualified(ctx, self.table());
        match self {
            Operation::CreateTable {
                columns,
                partition,
                sort_order,
                identifier_fields,
                properties,
                format_version,
                ..
            } => {
                let cols: Vec<String> = columns
                    .iter()
                    .map(|c| {
                        let req = if c.required { " not null" } else { "" };
                        format!("{} {}{req}", c.name, c.ty)
                    })
                    .collect();
                let mut s = format!(
                    "create table {t} ({}), format v{}",
                    cols.join(", "),
                    format_version.unwrap_or(2)
                );
                if !partition.is_empty() {
                    let p: Vec<String> = partition
                        .iter()
                        .map(|p| format!("{}({})", p.transform, p.column))
                        .collect();
                    s += &format!(", partitioned by [{}]", p.join(", "));
                }
                if !sort_order.is_empty() {
                    s += &format!(", sorted by [{}]", sort_text(sort_order));
                }
                if !identifier_fields.is_empty() {
                    s += &format!(", identifier fields [{}]", identifier_fields.join(", "));
                }
                if !properties.is_empty() {
                    s += &format!(", properties {}", props_text(properties));
                }
                s
            }
            Operation::DropTable { .. } => format!("drop table {t} (its data is no longer listed)"),
            Operation::RenameTable { to, .. } => {
                format!("rename table {t} to {}", qualified(ctx, to))
            }
            Operation::AddColumn { column, ty, .. } => {
                format!("{t}: new schema adds optional column {column} {ty} (new field id)")
            }
            Operation::DropColumn { column, .. } => {
                format!("{t}: new schema drops column {column} (its data is no longer read)")
            }
            Operation::RenameColumn { column, to, .. } => {
                format!("{t}: new schema renames column {column} to {to} (field id kept)")
            }
            Operation::WidenColumn { column, ty, .. } => {
                format!("{t}: new schema widens column {column} to {ty}")
            }
            Operation::MakeOptional { column, .. } => {
                format!("{t}: new schema makes column {column} optional")
            }
            Operation::SetDoc { column, doc, .. } => {
                format!("{t}: new schema sets the doc of {column} to {doc:?}")
            }
            Operation::MoveColumn {
                column,
                first,
                before,
                after,
                ..
            } => {
                let place = match (first, before, after) {
                    (true, _, _) => "first".to_string(),
                    (_, Some(b), _) => format!("before {b}"),
                    (_, _, Some(a)) => format!("after {a}"),
                    _ => "nowhere".to_string(),
                };
                format!("{t}: new schema moves column {column} {place}")
            }
            Operation::SetIdentifierFields { columns, .. } => {
                format!(
                    "{t}: new schema sets identifier fields [{}]",
                    columns.join(", ")
                )
            }
            Operation::AddPartitionField {
                column,
                transform,
                name,
                ..
            } => {
                let named = name
                    .as_ref()
                    .map(|n| format!(" named {n}"))
                    .unwrap_or_default();
                format!("{t}: new default partition spec adds {transform}({column}){named}")
            }
            Operation::RemovePartitionField { name, .. } => {
                format!("{t}: new default partition spec removes partition field {name}")
            }
            Operation::ReplaceSortOrder { fields, .. } => {
                if fields.is_empty() {
                    format!("{t}: default sort order becomes unsorted")
                } else {
                    format!("{t}: default sort order becomes [{}]", sort_text(fields))
                }
            }
            Operation::SetProperties { properties, .. } => {
                format!("{t}: set properties {}", props_text(properties))
            }
            Operation::RemoveProperties { keys, .. } => {
                format!("{t}: remove properties [{}]", keys.join(", "))
            }
        }
    }
}

fn qualified(ctx: &MigrationContext, table: &str) -> String {
    format!("{}.{table}", ctx.namespace().to_url_string())
}

fn sort_text(fields: &[SortDef]) -> String {
    fields
        .iter()
        .map(|f| {
            let col = if f.transform == "identity" {
                f.column.clone()
            } else {
                format!("{}({})", f.transform, f.column)
            };
            match &f.nulls {
                Some(n) => format!("{col} {} nulls {n}", f.direction),
                None => format!("{col} {}", f.direction),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn props_text(props: &BTreeMap<String, PropertyValue>) -> String {
    let kv: Vec<String> = props.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", kv.join(", "))
}

fn transform(text: &str) -> Result<Transform, String> {
    let t = Transform::from_str(text.trim()).map_err(|_| {
        format!(
            "unknown transform '{text}'; use identity, bucket[N], truncate[W], year, month, day, \
             hour or void"
        )
    })?;
    if t == Transform::Unknown {
        return Err(format!("transform '{text}' cannot be written"));
    }
    Ok(t)
}

fn sort_field_parts(s: &SortDef) -> Result<(Transform, SortDirection, NullOrder), String> {
    let t = transform(&s.transform)?;
    let direction = match s.direction.to_ascii_lowercase().as_str() {
        "asc" | "ascending" => SortDirection::Ascending,
        "desc" | "descending" => SortDirection::Descending,
        other => return Err(format!("direction '{other}' is not asc or desc")),
    };
    let nulls = match s.nulls.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None if direction == SortDirection::Ascending => NullOrder::First,
        None => NullOrder::Last,
        Some("first") => NullOrder::First,
        Some("last") => NullOrder::Last,
        Some(other) => return Err(format!("nulls '{other}' is not first or last")),
    };
    Ok((t, direction, nulls))
}

/// PyIceberg's default partition field name.
pub(crate) fn default_partition_name(column: &str, transform: &Transform) -> String {
    match transform {
        Transform::Identity => column.to_string(),
        Transform::Bucket(n) => format!("{column}_bucket_{n}"),
        Transform::Truncate(w) => format!("{column}_trunc_{w}"),
        Transform::Year => format!("{column}_year"),
        Transform::Month => format!("{column}_month"),
        Transform::Day => format!("{column}_day"),
        Transform::Hour => format!("{column}_hour"),
        Transform::Void => format!("{column}_null"),
        Transform::Unknown => format!("{column}_unknown"),
    }
}

/// Gives every field of `ty` a fresh id from `next`.
fn renumber(ty: &Type, next: &mut i32) -> Type {
    let field = |f: &NestedField, next: &mut i32| {
        let id = *next;
        *next += 1;
        let mut n = NestedField::new(id, &f.name, renumber(&f.field_type, next), f.required);
        n.doc = f.doc.clone();
        Arc::new(n)
    };
    match ty {
        Type::Primitive(_) => ty.clone(),
        Type::Struct(s) => Type::Struct(StructType::new(
            s.fields().iter().map(|f| field(f, next)).collect(),
        )),
        Type::List(l) => Type::List(ListType::new(field(&l.element_field, next))),
        Type::Map(m) => {
            let k = field(&m.key_field, next);
            let v = field(&m.value_field, next);
            Type::Map(MapType::new(k, v))
        }
    }
}

/// The schema of a new table (ids 1.. in column order, nested ids after their column).
pub(crate) fn build_schema(columns: &[ColumnDef], identifier: &[String]) -> Result<Schema, String> {
    let mut next = 1;
    let mut fields = Vec::with_capacity(columns.len());
    for c in columns {
        let ty = parse_type(&c.ty).map_err(|e| format!("column '{}': {e}", c.name))?;
        let id = next;
        next += 1;
        let ty = renumber(&ty, &mut next);
        let mut f = NestedField::new(id, &c.name, ty, c.required);
        f.doc = c.doc.clone();
        fields.push(Arc::new(f));
    }
    let schema = Schema::builder()
        .with_fields(fields)
        .build()
        .map_err(|e| e.message().to_string())?;
    let ids = identifier
        .iter()
        .map(|name| {
            schema
                .field_by_name(name)
                .map(|f| f.id)
                .ok_or_else(|| format!("identifier field '{name}' is not a column"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ids.is_empty() {
        return Ok(schema);
    }
    schema
        .into_builder()
        .with_identifier_field_ids(ids)
        .build()
        .map_err(|e| e.message().to_string())
}

fn invalid(msg: String) -> StepError {
    StepError::Invalid(msg)
}

async fn create_table(ctx: &MigrationContext, op: &Operation) -> Result<(), StepError> {
    let Operation::CreateTable {
        table,
        columns,
        partition,
        sort_order,
        identifier_fields,
        properties,
        format_version,
    } = op
    else {
        return Ok(());
    };
    let schema = build_schema(columns, identifier_fields)
        .map_err(|e| invalid(format!("create_table {table}: {e}")))?;
    let source = |column: &str| {
        schema.field_by_name(column).map(|f| f.id).ok_or_else(|| {
            invalid(format!(
                "create_table {table}: no column '{column}' to partition or sort by"
            ))
        })
    };
    let mut spec = UnboundPartitionSpec::builder();
    for p in partition {
        let t = transform(&p.transform).map_err(invalid)?;
        let name = p
            .name
            .clone()
            .unwrap_or_else(|| default_partition_name(&p.column, &t));
        spec = spec.add_partition_field(source(&p.column)?, name, t)?;
    }
    let mut order = SortOrder::builder();
    for s in sort_order {
        let (t, direction, null_order) = sort_field_parts(s).map_err(invalid)?;
        order.with_sort_field(SortField {
            source_id: source(&s.column)?,
            transform: t,
            direction,
            null_order,
        });
    }
    let version = match format_version.unwrap_or(2) {
        1 => FormatVersion::V1,
        3 => FormatVersion::V3,
        _ => FormatVersion::V2,
    };
    let props: HashMap<String, String> = properties
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    let mut creation = TableCreation::builder()
        .name(table.clone())
        .schema(schema.clone())
        .partition_spec(spec.build())
        .properties(props)
        .format_version(version)
        .build();
    if !sort_order.is_empty() {
        creation.sort_order = Some(order.with_order_id(1).build(&schema)?);
    }
    // The runner manages the namespace: its first table brings it into being.
    if !ctx.catalog().namespace_exists(ctx.namespace()).await? {
        if let Err(e) = ctx
            .catalog()
            .create_namespace(ctx.namespace(), HashMap::new())
            .await
            && !ctx.catalog().namespace_exists(ctx.namespace()).await?
        {
            return Err(e.into());
        }
        tracing::info!(namespace = %ctx.namespace().to_url_string(), "created");
    }
    ctx.catalog()
        .create_table(ctx.namespace(), creation)
        .await?;
    Ok(())
}

fn schema_change(b: EvolveSchemaBuilder, op: &Operation) -> Result<EvolveSchemaBuilder, StepError> {
    Ok(match op {
        Operation::AddColumn {
            column, ty, doc, ..
        } => {
            let ty = parse_type(ty).map_err(invalid)?;
            match column.rsplit_once('.') {
                Some((parent, leaf)) => b.add_nested_column(Some(parent), leaf, ty, doc.as_deref()),
                None => b.add_nested_column(None, column, ty, doc.as_deref()),
            }
        }
        Operation::DropColumn { column, .. } => b.drop_column(column),
        Operation::RenameColumn { column, to, .. } => b.rename_column(column, to),
        Operation::WidenColumn { column, ty, .. } => {
            b.widen_column(column, parse_primitive(ty).map_err(invalid)?)
        }
        Operation::MakeOptional { column, .. } => b.make_optional(column),
        Operation::SetDoc { column, doc, .. } => b.update_doc(column, doc),
        Operation::MoveColumn {
            column,
            first,
            before,
            after,
            ..
        } => {
            let pos = match (first, before, after) {
                (true, _, _) => Position::First,
                (_, Some(b), _) => Position::Before(b.clone()),
                (_, _, Some(a)) => Position::After(a.clone()),
                _ => return Err(invalid(format!("move_column {column}: no position"))),
            };
            b.move_column(column, pos)
        }
        Operation::SetIdentifierFields { columns, .. } => b.set_identifier_fields(columns.clone()),
        _ => b,
    })
}

/// What applying a list of operations recorded, for history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// How many operations of the list have committed (counted from its start, so a resumed
    /// run starts with the count of the earlier attempt).
    pub landed: usize,
    /// The values the keys of each property operation had before it ran, by operation index.
    pub earlier_properties: BTreeMap<usize, BTreeMap<String, Option<String>>>,
}

/// Applies `ops` in order (see the module docs for how they group into commits).
pub async fn apply(ops: &[Operation], ctx: &MigrationContext) -> Result<(), StepError> {
    apply_from(ops, ctx, &mut Progress::default()).await
}

/// Applies `ops[progress.landed..]` in order, counting each commit's operations into
/// `progress.landed` as it lands and recording the earlier values of changed properties. On an
/// error, `progress` says what landed before it.
pub async fn apply_from(
    ops: &[Operation],
    ctx: &MigrationContext,
    progress: &mut Progress,
) -> Result<(), StepError> {
    let mut i = progress.landed;
    while i < ops.len() {
        let op = &ops[i];
        let group = op.group();
        let mut end = i + 1;
        if group != Group::Alone {
            while end < ops.len() && ops[end].group() == group && ops[end].table() == op.table() {
                end += 1;
            }
        }
        let run = &ops[i..end];
        let ident = ctx.table(op.table());
        tracing::info!(table = %ident, ops = run.len(), first = op.name(), "applying");
        match group {
            Group::Schema => {
                let mut b = EvolveSchemaBuilder::new(ctx.handle(), ident);
                for o in run {
                    b = schema_change(b, o)?;
                }
                b.await?;
            }
            Group::Spec => {
                let mut b = EvolveSpecBuilder::new(ctx.handle(), ident);
                for o in run {
                    b = match o {
                        Operation::AddPartitionField {
                            column,
                            transform: t,
                            name,
                            ..
                        } => b.add_field(column, transform(t).map_err(invalid)?, name.as_deref()),
                        Operation::RemovePartitionField { name, .. } => b.remove_field(name),
                        _ => b,
                    };
                }
                b.await?;
            }
            Group::Properties => {
                // What each key held before, so a derived downgrade can put it back.
                let table = ctx.catalog().load_table(&ident).await?;
                let mut current: BTreeMap<String, String> = table
                    .metadata()
                    .properties()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut earlier = BTreeMap::new();
                let mut b = PropertiesBuilder::new(ctx.handle(), ident);
                for (offset, o) in run.iter().enumerate() {
                    let before: BTreeMap<String, Option<String>> = o
                        .property_keys()
                        .into_iter()
                        .map(|k| {
                            let v = current.get(&k).cloned();
                            (k, v)
                        })
                        .collect();
                    earlier.insert(i + offset, before);
                    match o {
                        Operation::SetProperties { properties, .. } => {
                            for (k, v) in properties {
                                b = b.set(k, v.to_string());
                                current.insert(k.clone(), v.to_string());
                            }
                        }
                        Operation::RemoveProperties { keys, .. } => {
                            for k in keys {
                                b = b.remove(k);
                                current.remove(k);
                            }
                        }
                        _ => {}
                    }
                }
                b.await?;
                progress.earlier_properties.extend(earlier);
            }
            Group::Alone => apply_one(op, &ident, ctx).await?,
        }
        i = end;
        progress.landed = end;
    }
    Ok(())
}

async fn apply_one(
    op: &Operation,
    ident: &TableIdent,
    ctx: &MigrationContext,
) -> Result<(), StepError> {
    match op {
        Operation::CreateTable { .. } => create_table(ctx, op).await,
        Operation::DropTable { .. } => Ok(ctx.catalog().drop_table(ident).await?),
        Operation::RenameTable { to, .. } => {
            Ok(ctx.catalog().rename_table(ident, &ctx.table(to)).await?)
        }
        Operation::ReplaceSortOrder { fields, .. } => {
            let mut b = SortOrderBuilder::new(ctx.handle(), ident.clone());
            for f in fields {
                let (t, direction, nulls) = sort_field_parts(f).map_err(invalid)?;
                b = b.by(&f.column, t, direction, nulls);
            }
            b.await?;
            Ok(())
        }
        other => Err(invalid(format!(
            "{} cannot run on its own (internal grouping error)",
            other.name()
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn inverses_undo_reversible_operations() {
        let rename = Operation::RenameColumn {
            table: "t".into(),
            column: "address.city".into(),
            to: "town".into(),
        };
        assert_eq!(
            rename.inverse().unwrap(),
            Operation::RenameColumn {
                table: "t".into(),
                column: "address.town".into(),
                to: "city".into()
            }
        );
        let add = Operation::AddPartitionField {
            table: "t".into(),
            column: "id".into(),
            transform: "bucket[16]".into(),
            name: None,
        };
        assert_eq!(
            add.inverse().unwrap(),
            Operation::RemovePartitionField {
                table: "t".into(),
                name: "id_bucket_16".into()
            }
        );
        let drop = Operation::DropColumn {
            table: "t".into(),
            column: "x".into(),
        };
        assert!(drop.inverse().unwrap_err().contains("[[downgrade]]"));
        assert!(drop.is_destructive());
    }

    #[test]
    fn property_inverses_restore_the_recorded_values() {
        let set = Operation::SetProperties {
            table: "t".into(),
            properties: BTreeMap::from([
                ("owner".to_string(), PropertyValue::Text("b".into())),
                ("stage".to_string(), PropertyValue::Int(2)),
            ]),
        };
        let earlier = BTreeMap::from([
            ("owner".to_string(), Some("a".to_string())),
            ("stage".to_string(), None),
        ]);
        assert_eq!(
            set.inverse_with(Some(&earlier)).unwrap(),
            vec![
                Operation::RemoveProperties {
                    table: "t".into(),
                    keys: vec!["stage".into()]
                },
                Operation::SetProperties {
                    table: "t".into(),
                    properties: BTreeMap::from([(
                        "owner".to_string(),
                        PropertyValue::Text("a".into())
                    )]),
                },
            ]
        );
        // Without recorded values (or values of other keys) there is no inverse: removing the
        // keys would lose what they held.
        assert!(
            set.inverse_with(None)
                .unwrap_err()
                .contains("[[downgrade]]")
        );
        let other = BTreeMap::from([("owner".to_string(), None)]);
        assert!(set.inverse_with(Some(&other)).is_err());

        let remove = Operation::RemoveProperties {
            table: "t".into(),
            keys: vec!["owner".into(), "gone".into()],
        };
        let earlier = BTreeMap::from([
            ("owner".to_string(), Some("a".to_string())),
            ("gone".to_string(), None),
        ]);
        assert_eq!(
            remove.inverse_with(Some(&earlier)).unwrap(),
            vec![Operation::SetProperties {
                table: "t".into(),
                properties: BTreeMap::from([(
                    "owner".to_string(),
                    PropertyValue::Text("a".into())
                )]),
            }]
        );
        assert!(remove.inverse().is_err());
    }

    #[test]
    fn schemas_get_unique_ids_and_identifier_fields() {
        let cols = vec![
            ColumnDef {
                name: "id".into(),
                ty: "long".into(),
                required: true,
                doc: None,
            },
            ColumnDef {
                name: "tags".into(),
                ty: "map<string, struct<a: int, b: list<long>>>".into(),
                required: false,
                doc: Some("labels".into()),
            },
            ColumnDef {
                name: "amount".into(),
                ty: "decimal(12,2)".into(),
                required: false,
                doc: None,
            },
        ];
        let s = build_schema(&cols, &["id".into()]).unwrap();
        assert_eq!(s.identifier_field_ids().collect::<Vec<_>>(), vec![1]);
        assert_eq!(s.field_by_name("amount").unwrap().id, 8);
        assert_eq!(
            s.field_by_name("tags").unwrap().doc.as_deref(),
            Some("labels")
        );
        assert!(
            build_schema(&cols, &["nope".into()])
                .unwrap_err()
                .contains("'nope'")
        );
    }
}
