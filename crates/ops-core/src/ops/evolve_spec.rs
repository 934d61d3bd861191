//! Partition spec evolution: add, remove and rename partition fields in one new default spec.
//!
//! 1. Load the table and copy its default spec.
//! 2. Apply the changes, validating each: the source column exists and the transform applies
//!    to its type; no duplicate (source, transform); names unique and not shadowing another
//!    column. A v1 table keeps a removed field as `void` (v1 specs cannot drop fields), renamed
//!    `<name>_<field id>` when its name is a column's (iceberg refuses a `void` field by that name).
//! 3. Commit `AddSpec` + `SetDefaultSpec`, guarded by the default spec id and the last assigned
//!    partition id. Existing files keep their spec; new writes use the new one. Field ids of
//!    a (source, transform) seen in an earlier spec are reused.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::spec::{
    FormatVersion, TableMetadata, Transform, UnboundPartitionField, UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement, TableUpdate};

use crate::commit::{TableChange, commit_metadata_change};
use crate::{CatalogHandle, Error, Result};

#[derive(Debug, Clone)]
enum Change {
    Add {
        column: String,
        transform: Transform,
        name: Option<String>,
    },
    Remove(String),
    Rename(String, String),
}

/// Evolves the default partition spec (see the module docs).
#[must_use = "an EvolveSpecBuilder does nothing until awaited"]
pub struct EvolveSpecBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    changes: Vec<Change>,
}

impl EvolveSpecBuilder {
    /// A spec evolution of `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            changes: Vec::new(),
        }
    }

    /// Partitions by `transform` of top-level column `column`; the field name defaults to
    /// PyIceberg's (`region`, `id_bucket_16`, `name_trunc_4`, `ts_day`, ...).
    pub fn add_field(
        mut self,
        column: impl Into<String>,
        transform: Transform,
        name: Option<&str>,
    ) -> Self {
        self.changes.push(Change::Add {
            column: column.into(),
            transform,
            name: name.map(str::to_string),
        });
        self
    }

    /// Removes the partition field named `name`.
    pub fn remove_field(mut self, name: impl Into<String>) -> Self {
        self.changes.push(Change::Remove(name.into()));
        self
    }

    /// Renames partition field `from` to `to`.
    pub fn rename_field(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.changes.push(Change::Rename(from.into(), to.into()));
        self
    }

    async fn execute(self) -> Result<Table> {
        let changes = self.changes;
        commit_metadata_change(&self.handle, &self.ident, |md| {
            evolve(md, &changes).map(|spec| {
                Some(TableChange {
                    requirements: vec![
                        TableRequirement::UuidMatch { uuid: md.uuid() },
                        TableRequirement::DefaultSpecIdMatch {
                            default_spec_id: md.default_partition_spec_id(),
                        },
                        TableRequirement::LastAssignedPartitionIdMatch {
                            last_assigned_partition_id: md.last_partition_id(),
                        },
                    ],
                    updates: vec![
                        TableUpdate::AddSpec { spec },
                        TableUpdate::SetDefaultSpec { spec_id: -1 },
                    ],
                    ..Default::default()
                })
            })
        })
        .await
    }
}

fn default_name(column: &str, transform: &Transform) -> String {
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

fn evolve(md: &TableMetadata, changes: &[Change]) -> Result<UnboundPartitionSpec> {
    let schema = md.current_schema();
    let v1 = md.format_version() == FormatVersion::V1;
    let mut fields: Vec<UnboundPartitionField> = md
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| UnboundPartitionField {
            source_id: f.source_id,
            field_id: Some(f.field_id),
            name: f.name.clone(),
            transform: f.transform,
        })
        .collect();
    let invalid = |m: String| Error::InvalidInput(m);
    for change in changes {
        match change {
            Change::Add {
                column,
                transform,
                name,
            } => {
                let field = schema
                    .field_by_name(column)
                    .ok_or_else(|| invalid(format!("no column '{column}' to partition by")))?;
                if !field.field_type.is_primitive() {
                    return Err(invalid(format!(
                        "cannot partition by '{column}': it is not a primitive column"
                    )));
                }
                transform.result_type(&field.field_type).map_err(|e| {
                    invalid(format!(
                        "cannot partition by {transform}({column}): {}",
                        e.message()
                    ))
                })?;
                if fields
                    .iter()
                    .any(|f| f.source_id == field.id && f.transform == *transform)
                {
                    return Err(invalid(format!(
                        "the table is already partitioned by {transform}({column})"
                    )));
                }
                let name = name
                    .clone()
                    .unwrap_or_else(|| default_name(column, transform));
                if fields.iter().any(|f| f.name == name) {
                    return Err(invalid(format!(
                        "a partition field is already named '{name}'"
                    )));
                }
                if *transform != Transform::Identity && schema.field_by_name(&name).is_some() {
                    return Err(invalid(format!(
                        "partition field name '{name}' would shadow the column of that name; pick another"
                    )));
                }
                fields.push(UnboundPartitionField {
                    source_id: field.id,
                    field_id: None,
                    name,
                    transform: *transform,
                });
            }
            Change::Remove(name) => {
                let index = fields
                    .iter()
                    .position(|f| &f.name == name)
                    .ok_or_else(|| invalid(format!("no partition field '{name}'")))?;
                if v1 {
                    fields[index].transform = Transform::Void;
                    // A `void` field may not carry a column's name (iceberg checks it, as Java
                    // does for every transform but identity): renamed `<name>_<field id>`, as
                    // Java's `TableMetadata` renames the void fields that would conflict.
                    if schema.field_by_name(name).is_some() {
                        let id = fields[index].field_id.unwrap_or_default();
                        fields[index].name = format!("{name}_{id}");
                    }
                } else {
                    fields.remove(index);
                }
            }
            Change::Rename(from, to) => {
                if fields.iter().any(|f| &f.name == to) {
                    return Err(invalid(format!(
                        "a partition field is already named '{to}'"
                    )));
                }
                let field = fields
                    .iter_mut()
                    .find(|f| &f.name == from)
                    .ok_or_else(|| invalid(format!("no partition field '{from}'")))?;
                field.name = to.clone();
            }
        }
    }
    Ok(UnboundPartitionSpec::builder()
        .add_partition_fields(fields)
        .map_err(|e| {
            invalid(format!(
                "the evolved partition spec is invalid: {}",
                e.message()
            ))
        })?
        .build())
}

impl IntoFuture for EvolveSpecBuilder {
    type Output = Result<Table>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
