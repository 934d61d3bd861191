//! `iceberg-ops new --from desired.toml`: compare a desired table definition with the live
//! table and write the operations that get there (as Alembic's autogenerate does).
//!
//! The desired definition has the fields of a `create_table` operation without `op`:
//! `table`, `columns`, `partition`, `sort_order`, `identifier_fields`, `properties`. Columns are
//! matched by name at the top level, so a rename shows as a drop and an add: edit it into a
//! `rename_column` before applying. Destructive operations are listed, and the file keeps
//! `allow_destructive = false` so it will not load until someone has reviewed them. Changes no
//! operation can make (narrowing a type, making a column required, dropping a column an older
//! partition spec still references) are written as comments.
//!
//! The operations are ordered so each one is valid after the ones before it: columns are added,
//! widened and documented first; identifier fields are set before a column leaves them (made
//! optional or dropped); partition fields are removed and added, and the sort order replaced,
//! before the columns they used are dropped; properties come last.
//!
//! `partition`, `sort_order` and `identifier_fields` left out of the definition keep the live
//! ones (the file says so); write them as empty lists to clear them.

use std::collections::BTreeMap;
use std::path::Path;

use iceberg::spec::{NullOrder, PrimitiveType, SortDirection, Type};
use iceberg::{ErrorKind, NamespaceIdent, TableIdent};
use ops_core::CatalogHandle;
use serde::Deserialize;

use crate::file::{MigrationFile, VersionValue};
use crate::operation::{ColumnDef, Operation, PartitionDef, PropertyValue, SortDef};
use crate::types::{parse_type, type_name};
use crate::{Result, RunnerError};

/// A desired table definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesiredTable {
    /// Table name in the namespace.
    pub table: String,
    /// Columns in order.
    pub columns: Vec<ColumnDef>,
    /// Partition fields (absent: keep the live spec; `[]`: unpartitioned).
    #[serde(default)]
    pub partition: Option<Vec<PartitionDef>>,
    /// Sort order (absent: keep the live one; `[]`: unsorted).
    #[serde(default)]
    pub sort_order: Option<Vec<SortDef>>,
    /// Identifier fields (absent: keep the live ones; `[]`: none).
    #[serde(default)]
    pub identifier_fields: Option<Vec<String>>,
    /// Properties the table must have (others are left alone).
    #[serde(default)]
    pub properties: BTreeMap<String, PropertyValue>,
    /// Format version for a new table.
    #[serde(default)]
    pub format_version: Option<u8>,
}

/// The generated migration.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The file text.
    pub text: String,
    /// The operations.
    pub upgrade: Vec<Operation>,
    /// The destructive operations, described.
    pub destructive: Vec<String>,
    /// Changes no operation can make.
    pub unsupported: Vec<String>,
    /// What the definition leaves out and the live table keeps.
    pub kept: Vec<String>,
}

fn promotion(from: &Type, to: &Type) -> bool {
    match (from, to) {
        (Type::Primitive(PrimitiveType::Int), Type::Primitive(PrimitiveType::Long))
        | (Type::Primitive(PrimitiveType::Float), Type::Primitive(PrimitiveType::Double)) => true,
        (
            Type::Primitive(PrimitiveType::Decimal {
                precision: p1,
                scale: s1,
            }),
            Type::Primitive(PrimitiveType::Decimal {
                precision: p2,
                scale: s2,
            }),
        ) => s1 == s2 && p2 >= p1,
        _ => false,
    }
}

/// Compares `desired_text` (from `desired_path`) with the live table in `namespace` and returns
/// migration `version`'s file.
pub async fn diff_against_live(
    handle: &CatalogHandle,
    namespace: &NamespaceIdent,
    desired_text: &str,
    desired_path: &Path,
    version: &str,
    description: &str,
) -> Result<Generated> {
    let desired: DesiredTable = toml::from_str(desired_text).map_err(|e| RunnerError::Load {
        file: desired_path.to_path_buf(),
        message: e.to_string(),
    })?;
    let ident = TableIdent::new(namespace.clone(), desired.table.clone());
    let live = match handle.catalog().load_table(&ident).await {
        Ok(t) => Some(t),
        Err(e)
            if e.kind() == ErrorKind::TableNotFound || e.kind() == ErrorKind::NamespaceNotFound =>
        {
            None
        }
        Err(e) if !handle.catalog().table_exists(&ident).await.unwrap_or(true) => {
            tracing::debug!(error = %e, "table absent");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut g = diff(&desired, live.as_ref().map(|t| t.metadata()))?;
    let create = Operation::CreateTable {
        table: desired.table.clone(),
        columns: desired.columns.clone(),
        partition: desired.partition.clone().unwrap_or_default(),
        sort_order: desired.sort_order.clone().unwrap_or_default(),
        identifier_fields: desired.identifier_fields.clone().unwrap_or_default(),
        properties: desired.properties.clone(),
        format_version: desired.format_version,
    };
    if live.is_none() {
        g.upgrade = vec![create];
    }
    let file = MigrationFile {
        version: Some(VersionValue::Text(version.to_string())),
        description: Some(description.to_string()),
        allow_destructive: false,
        upgrade: g.upgrade.clone(),
        downgrade: None,
    };
    let mut text = format!(
        "# Generated by `iceberg-ops new --from {}` against {}.\n",
        desired_path.display(),
        ident
    );
    if g.upgrade.is_empty() {
        text += "# The live table already matches the desired definition.\n";
    }
    for d in &g.destructive {
        text += &format!("# DESTRUCTIVE: {d}; review, then set allow_destructive = true\n");
    }
    for u in &g.unsupported {
        text += &format!("# NOT GENERATED: {u}\n");
    }
    for k in &g.kept {
        text += &format!("# KEPT: {k}\n");
    }
    text += &file
        .to_toml()
        .map_err(|e| RunnerError::InvalidArgument(e.to_string()))?;
    g.text = text;
    Ok(g)
}

/// One partition field as compared: (name, source column, transform).
type PartKey = (String, String, String);
/// One sort field as compared: (source column, transform, ascending, nulls first).
type SortKey = (String, String, bool, bool);

fn sort_keys(fields: &[SortDef]) -> Vec<SortKey> {
    fields
        .iter()
        .map(|s| {
            let asc = !s.direction.to_ascii_lowercase().starts_with("desc");
            let first = s
                .nulls
                .as_deref()
                .map_or(asc, |n| n.eq_ignore_ascii_case("first"));
            (s.column.clone(), s.transform.clone(), asc, first)
        })
        .collect()
}

/// The operations from `live` (absent: none, the caller creates the table) to `desired`, in an
/// order where each is valid after the previous (see the module docs).
pub fn diff(
    desired: &DesiredTable,
    live: Option<&iceberg::spec::TableMetadata>,
) -> Result<Generated> {
    let mut g = Generated {
        text: String::new(),
        upgrade: Vec::new(),
        destructive: Vec::new(),
        unsupported: Vec::new(),
        kept: Vec::new(),
    };
    let Some(md) = live else {
        return Ok(g);
    };
    let table = desired.table.clone();
    let qualified = |column: &str| format!("{table}.{column}");
    let schema = md.current_schema();
    let invalid = |m: String| RunnerError::InvalidArgument(format!("desired table {table}: {m}"));
    let live_cols = schema.as_struct().fields();

    // 1. Columns added, widened, documented (in the definition's order).
    let mut added: Vec<String> = Vec::new();
    let mut make_optional: Vec<String> = Vec::new();
    for c in &desired.columns {
        let want = parse_type(&c.ty).map_err(|e| invalid(format!("column '{}': {e}", c.name)))?;
        match live_cols.iter().find(|f| f.name == c.name) {
            None => {
                g.upgrade.push(Operation::AddColumn {
                    table: table.clone(),
                    column: c.name.clone(),
                    ty: type_name(&want),
                    doc: c.doc.clone(),
                });
                added.push(c.name.clone());
                if c.required {
                    g.unsupported.push(format!(
                        "column '{}' is added optional (existing rows have no value)",
                        c.name
                    ));
                }
            }
            Some(f) => {
                if type_name(&f.field_type) != type_name(&want) {
                    if promotion(&f.field_type, &want) {
                        g.upgrade.push(Operation::WidenColumn {
                            table: table.clone(),
                            column: c.name.clone(),
                            ty: type_name(&want),
                        });
                    } else {
                        g.unsupported.push(format!(
                            "column '{}' from {} to {}: not an Iceberg promotion",
                            c.name,
                            type_name(&f.field_type),
                            type_name(&want)
                        ));
                    }
                }
                if f.required && !c.required {
                    make_optional.push(c.name.clone());
                } else if !f.required && c.required {
                    g.unsupported.push(format!(
                        "column '{}' cannot become required (existing rows may hold nulls)",
                        c.name
                    ));
                }
                if c.doc.is_some() && c.doc != f.doc {
                    g.upgrade.push(Operation::SetDoc {
                        table: table.clone(),
                        column: c.name.clone(),
                        doc: c.doc.clone().unwrap_or_default(),
                    });
                }
            }
        }
    }

    // 2. Identifier fields, before a column leaves them. They must be required columns: a new
    //    column is added optional, so it cannot be one yet.
    let live_ids: Vec<String> = schema
        .identifier_field_ids()
        .filter_map(|id| schema.name_by_field_id(id).map(str::to_string))
        .collect();
    let want_ids: Vec<String> = match &desired.identifier_fields {
        None => {
            if !live_ids.is_empty() {
                g.kept.push(format!(
                    "the desired definition has no `identifier_fields`; the live identifier \
                     fields [{}] stay (write `identifier_fields = []` to clear them)",
                    live_ids.join(", ")
                ));
            }
            live_ids.clone()
        }
        Some(ids) => ids
            .iter()
            .filter(|id| {
                let new = added.contains(id);
                if new {
                    g.unsupported.push(format!(
                        "identifier field '{id}': the column is new and added optional, and \
                         identifier fields must be required; add it in a later migration once \
                         it can be"
                    ));
                }
                !new
            })
            .cloned()
            .collect(),
    };
    if want_ids != live_ids {
        g.upgrade.push(Operation::SetIdentifierFields {
            table: table.clone(),
            columns: want_ids.clone(),
        });
    }
    for c in make_optional {
        if want_ids.contains(&c) {
            g.unsupported.push(format!(
                "column '{c}' cannot become optional while it is an identifier field"
            ));
        } else {
            g.upgrade.push(Operation::MakeOptional {
                table: table.clone(),
                column: c,
            });
        }
    }

    // 3. Partition fields: removed and added before the columns they used are dropped.
    let spec = md.default_partition_spec();
    let live_parts: Vec<PartKey> = spec
        .fields()
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                schema
                    .name_by_field_id(p.source_id)
                    .unwrap_or_default()
                    .to_string(),
                p.transform.to_string(),
            )
        })
        .collect();
    let want_parts: Vec<PartKey> = match &desired.partition {
        None => {
            if !live_parts.is_empty() {
                g.kept.push(format!(
                    "the desired definition has no `partition`; the live partition spec [{}] \
                     stays (write `partition = []` to remove its fields)",
                    live_parts
                        .iter()
                        .map(|p| format!("{}({})", p.2, p.1))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            live_parts.clone()
        }
        Some(parts) => parts
            .iter()
            .map(|p| {
                let t = p
                    .transform
                    .parse()
                    .unwrap_or(iceberg::spec::Transform::Unknown);
                (
                    p.name
                        .clone()
                        .unwrap_or_else(|| crate::operation::default_partition_name(&p.column, &t)),
                    p.column.clone(),
                    t.to_string(),
                )
            })
            .collect(),
    };
    for lp in &live_parts {
        if !want_parts.contains(lp) {
            g.upgrade.push(Operation::RemovePartitionField {
                table: table.clone(),
                name: lp.0.clone(),
            });
        }
    }
    for wp in &want_parts {
        if !live_parts.contains(wp) {
            g.upgrade.push(Operation::AddPartitionField {
                table: table.clone(),
                column: wp.1.clone(),
                transform: wp.2.clone(),
                name: Some(wp.0.clone()),
            });
        }
    }

    // 4. Sort order, before the columns it used are dropped.
    let live_sort_defs: Vec<SortDef> = md
        .default_sort_order()
        .fields
        .iter()
        .map(|f| SortDef {
            column: schema
                .name_by_field_id(f.source_id)
                .unwrap_or_default()
                .to_string(),
            transform: f.transform.to_string(),
            direction: if f.direction == SortDirection::Ascending {
                "asc".into()
            } else {
                "desc".into()
            },
            nulls: Some(if f.null_order == NullOrder::First {
                "first".into()
            } else {
                "last".into()
            }),
        })
        .collect();
    let live_sort = sort_keys(&live_sort_defs);
    let want_sort_defs = match &desired.sort_order {
        None => {
            if !live_sort.is_empty() {
                g.kept.push(format!(
                    "the desired definition has no `sort_order`; the live sort order [{}] stays \
                     (write `sort_order = []` to make the table unsorted)",
                    live_sort_defs
                        .iter()
                        .map(|s| format!("{} {}", s.column, s.direction))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            live_sort_defs.clone()
        }
        Some(defs) => defs.clone(),
    };
    let want_sort = sort_keys(&want_sort_defs);
    if live_sort != want_sort {
        g.upgrade.push(Operation::ReplaceSortOrder {
            table: table.clone(),
            fields: want_sort_defs.clone(),
        });
    }

    // 5. Columns dropped, once nothing the table keeps uses them. Every partition spec stays in
    //    the table's metadata (files written under it name its source columns), so a column
    //    any spec was derived from can never be dropped.
    for f in live_cols {
        if desired.columns.iter().any(|c| c.name == f.name) {
            continue;
        }
        let mut ids = Vec::new();
        field_ids(f, &mut ids);
        let spec_use = md.partition_specs_iter().find_map(|spec| {
            spec.fields()
                .iter()
                .find(|p| ids.contains(&p.source_id))
                .map(|p| (spec.spec_id(), p.name.clone()))
        });
        let reason = if let Some((spec_id, field)) = spec_use {
            Some(
                if spec_id == md.default_partition_spec_id()
                    && want_parts.iter().any(|p| p.0 == field)
                {
                    format!(
                        "partition field '{field}' of spec {spec_id} is derived from it and the \
                     desired partition keeps it"
                    )
                } else {
                    format!(
                        "partition field '{field}' of spec {spec_id} is derived from it, and a \
                     spec stays in the table's metadata for the files written under it"
                    )
                },
            )
        } else if want_sort.iter().any(|s| {
            schema
                .field_by_name(&s.0)
                .is_some_and(|x| ids.contains(&x.id))
        }) {
            Some("the desired sort order uses it".to_string())
        } else if want_ids.iter().any(|id| {
            schema
                .field_by_name(id)
                .is_some_and(|x| ids.contains(&x.id))
        }) {
            Some(if desired.identifier_fields.is_none() {
                "it is an identifier field (give `identifier_fields` without it)".to_string()
            } else {
                "the desired identifier fields keep it".to_string()
            })
        } else {
            None
        };
        match reason {
            Some(reason) => g.unsupported.push(format!(
                "drop_column {}: {reason}; the column stays",
                qualified(&f.name)
            )),
            None => {
                g.destructive.push(format!(
                    "drop_column {} (its data is no longer read)",
                    qualified(&f.name)
                ));
                g.upgrade.push(Operation::DropColumn {
                    table: table.clone(),
                    column: f.name.clone(),
                });
            }
        }
    }

    // 6. Properties (others are left alone).
    let changed: BTreeMap<String, PropertyValue> = desired
        .properties
        .iter()
        .filter(|(k, v)| md.properties().get(*k) != Some(&v.to_string()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !changed.is_empty() {
        g.upgrade.push(Operation::SetProperties {
            table,
            properties: changed,
        });
    }
    Ok(g)
}

/// `field`'s id and those of everything nested in it.
fn field_ids(field: &iceberg::spec::NestedField, out: &mut Vec<i32>) {
    // An explicit stack: nesting depth comes from user data.
    let mut stack = vec![field];
    while let Some(f) = stack.pop() {
        out.push(f.id);
        match f.field_type.as_ref() {
            Type::Struct(s) => stack.extend(s.fields().iter().map(|x| x.as_ref())),
            Type::List(l) => stack.push(l.element_field.as_ref()),
            Type::Map(m) => {
                stack.push(m.key_field.as_ref());
                stack.push(m.value_field.as_ref());
            }
            Type::Primitive(_) => {}
        }
    }
}
