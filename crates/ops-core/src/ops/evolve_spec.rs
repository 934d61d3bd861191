//! Partition spec evolution: add, remove and rename partition fields in one new default spec.
//!
//! 1. Load the table and copy its default spec.
//! 2. Apply the changes, validating each: the source column exists and the transform applies
//!    to its type; no duplicate (source, transform); names unique and not shadowing another
//!    column. A v1 table keeps a removed field as `void` under its name (v1 specs cannot drop
//!    fields); a `void` field gives its name up (`<name>_<field id>`) only to a field added or
//!    renamed to it, as Java's `BaseUpdatePartitionSpec` and PyIceberg do.
//! 3. Commit `AddSpec` + `SetDefaultSpec`, guarded by the default spec id and the last assigned
//!    partition id. Existing files keep their spec; new writes use the new one. In v2 the field
//!    id of a (source, transform) seen in an earlier spec is reused; in v1 new fields take the
//!    next ids (Java's `recycleOrCreatePartitionField`).

use std::collections::{HashMap, HashSet};
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

/// The new default spec: Java's `BaseUpdatePartitionSpec`. Changes are collected (removals by
/// field id, renames by old name, additions) and applied to the current default spec at once:
/// kept fields keep their ids (renamed where asked), removed ones are dropped — or, in a v1
/// table, kept as `void` under their name, since v1 specs cannot drop fields — and additions
/// come last.
fn evolve(md: &TableMetadata, changes: &[Change]) -> Result<UnboundPartitionSpec> {
    let schema = md.current_schema();
    let v1 = md.format_version() == FormatVersion::V1;
    let spec = md.default_partition_spec();
    let by_name = |name: &str| spec.fields().iter().find(|f| f.name == name);
    let invalid = |m: String| Error::InvalidInput(m);
    let mut deletes: HashSet<i32> = HashSet::new();
    let mut renames: HashMap<String, String> = HashMap::new();
    let mut adds: Vec<UnboundPartitionField> = Vec::new();
    // A v1 table's new fields take the next ids in order, as Java's v1 does: iceberg would reuse
    // the id a (column, transform) had in an older spec, which a v1 spec's sequential ids may
    // already give to another field (v2 reuses them, as Java's v2 does).
    let mut last_id = md.last_partition_id();
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
                if adds
                    .iter()
                    .any(|f| f.source_id == field.id && f.transform == *transform)
                {
                    return Err(invalid(format!(
                        "{transform}({column}) is added twice in one change"
                    )));
                }
                if let Some(existing) = spec
                    .fields()
                    .iter()
                    .find(|f| f.source_id == field.id && f.transform == *transform)
                {
                    if deletes.remove(&existing.field_id) {
                        // Removed, then added again in the same change: the field stays, as
                        // Java's `rewriteDeleteAndAddField` keeps it (renamed if asked).
                        if let Some(name) = name.as_ref().filter(|n| **n != existing.name) {
                            renames.insert(existing.name.clone(), name.clone());
                        }
                        continue;
                    }
                    return Err(invalid(format!(
                        "the table is already partitioned by {transform}({column})"
                    )));
                }
                let name = name
                    .clone()
                    .unwrap_or_else(|| default_name(column, transform));
                if adds.iter().any(|f| f.name == name) {
                    return Err(invalid(format!(
                        "a partition field is already named '{name}'"
                    )));
                }
                if *transform != Transform::Identity && schema.field_by_name(&name).is_some() {
                    return Err(invalid(format!(
                        "partition field name '{name}' would shadow the column of that name; pick another"
                    )));
                }
                if let Some(existing) = by_name(&name) {
                    // A `void` field (or one removed now, which a v1 table keeps as `void`)
                    // gives way: it is renamed `<name>_<field id>`, as Java and PyIceberg do.
                    if existing.transform == Transform::Void || deletes.contains(&existing.field_id)
                    {
                        renames.insert(
                            existing.name.clone(),
                            format!("{}_{}", existing.name, existing.field_id),
                        );
                    } else {
                        return Err(invalid(format!(
                            "a partition field is already named '{name}'"
                        )));
                    }
                }
                let field_id = if v1 {
                    last_id += 1;
                    Some(last_id)
                } else {
                    None
                };
                adds.push(UnboundPartitionField {
                    source_id: field.id,
                    field_id,
                    name,
                    transform: *transform,
                });
            }
            Change::Remove(name) => {
                if adds.iter().any(|f| &f.name == name) {
                    return Err(invalid(format!(
                        "cannot remove partition field '{name}': it is added in the same change"
                    )));
                }
                if renames.contains_key(name) {
                    return Err(invalid(format!(
                        "cannot rename and remove partition field '{name}' in one change"
                    )));
                }
                let field =
                    by_name(name).ok_or_else(|| invalid(format!("no partition field '{name}'")))?;
                deletes.insert(field.field_id);
            }
            Change::Rename(from, to) => {
                if adds.iter().any(|f| &f.name == from) {
                    return Err(invalid(format!(
                        "cannot rename partition field '{from}': it is added in the same change"
                    )));
                }
                let field =
                    by_name(from).ok_or_else(|| invalid(format!("no partition field '{from}'")))?;
                if deletes.contains(&field.field_id) {
                    return Err(invalid(format!(
                        "cannot remove and rename partition field '{from}' in one change"
                    )));
                }
                if let Some(existing) = by_name(to).filter(|e| e.field_id != field.field_id) {
                    if existing.transform != Transform::Void {
                        return Err(invalid(format!(
                            "a partition field is already named '{to}'"
                        )));
                    }
                    // A `void` field gives way, as when a field is added under its name.
                    renames.insert(
                        existing.name.clone(),
                        format!("{}_{}", existing.name, existing.field_id),
                    );
                }
                if adds.iter().any(|f| &f.name == to) {
                    return Err(invalid(format!(
                        "a partition field is already named '{to}'"
                    )));
                }
                renames.insert(from.clone(), to.clone());
            }
        }
    }
    let mut fields = Vec::with_capacity(spec.fields().len() + adds.len());
    for f in spec.fields() {
        let name = renames.get(&f.name).unwrap_or(&f.name).clone();
        let transform = if !deletes.contains(&f.field_id) {
            f.transform
        } else if v1 {
            Transform::Void
        } else {
            continue;
        };
        fields.push(UnboundPartitionField {
            source_id: f.source_id,
            field_id: Some(f.field_id),
            name,
            transform,
        });
    }
    let evolved = |e: iceberg::Error| {
        invalid(format!(
            "the evolved partition spec is invalid: {}",
            e.message()
        ))
    };
    // As Java's `BaseUpdatePartitionSpec`: the fields added are checked against each other
    // (two time transforms of one column conflict); the spec's own fields are kept as they
    // are, redundant or not (PyIceberg makes `year(d)` beside `month(d)`, which Java reads).
    UnboundPartitionSpec::builder()
        .add_partition_fields(adds.iter().cloned())
        .map_err(evolved)?;
    fields.extend(adds);
    Ok(UnboundPartitionSpec::builder()
        .add_existing_partition_fields(fields)
        .map_err(evolved)?
        .build())
}

impl IntoFuture for EvolveSpecBuilder {
    type Output = Result<Table>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use iceberg::spec::{
        NestedField, PrimitiveType, Schema, SortOrder, TableMetadataBuilder, Type,
    };

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    /// A spec's fields as (field id, name, transform).
    type Fields = Vec<(i32, String, Transform)>;

    /// (id long, p string, q string), partitioned by identity(p), in `version`.
    fn table(version: FormatVersion) -> std::result::Result<TableMetadata, iceberg::Error> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "p", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::optional(3, "q", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "p", Transform::Identity)?
            .build();
        Ok(TableMetadataBuilder::new(
            schema,
            spec,
            SortOrder::unsorted_order(),
            "file:///wh/t".to_string(),
            version,
            HashMap::new(),
        )?
        .build()?
        .metadata)
    }

    /// `md` with `changes` committed as `execute` commits them; the new default spec's fields
    /// as (field id, name, transform).
    fn evolved(
        md: TableMetadata,
        changes: &[Change],
    ) -> std::result::Result<(TableMetadata, Fields), Box<dyn std::error::Error>> {
        let spec = evolve(&md, changes)?;
        let md = TableMetadataBuilder::new_from_metadata(md, None)
            .add_partition_spec(spec)?
            .set_default_partition_spec(-1)?
            .build()?
            .metadata;
        let fields = md
            .default_partition_spec()
            .fields()
            .iter()
            .map(|f| (f.field_id, f.name.clone(), f.transform))
            .collect();
        Ok((md, fields))
    }

    fn add(column: &str, transform: Transform) -> Change {
        Change::Add {
            column: column.to_string(),
            transform,
            name: None,
        }
    }

    fn remove(name: &str) -> Change {
        Change::Remove(name.to_string())
    }

    /// Java's and PyIceberg's v1 removal: the field stays as `void` under its name (the
    /// column's), and the spec binds (iceberg 0.10.1 refused a `void` field named as a column).
    #[test]
    fn v1_keeps_a_removed_field_as_void_under_its_name() -> TestResult {
        let (md, fields) = evolved(table(FormatVersion::V1)?, &[remove("p")])?;
        assert_eq!(fields, vec![(1000, "p".to_string(), Transform::Void)]);
        let (md, fields) = evolved(md, &[add("q", Transform::Identity)])?;
        assert_eq!(
            fields,
            vec![
                (1000, "p".to_string(), Transform::Void),
                (1001, "q".to_string(), Transform::Identity),
            ]
        );
        // Any later commit rebinds the default spec to the schema; it must still bind.
        let md = TableMetadataBuilder::new_from_metadata(md, None)
            .set_properties(HashMap::from([("k".to_string(), "v".to_string())]))?
            .build()?
            .metadata;
        // Adding p back takes the next id; the `void` field gives its name up.
        let (_, fields) = evolved(md, &[add("p", Transform::Identity)])?;
        assert_eq!(
            fields,
            vec![
                (1000, "p_1000".to_string(), Transform::Void),
                (1001, "q".to_string(), Transform::Identity),
                (1002, "p".to_string(), Transform::Identity),
            ]
        );
        Ok(())
    }

    /// Removed and added again in one change, a field stays as it was; renaming to a `void`
    /// field's name moves that field aside; v2 drops a removed field.
    #[test]
    fn removals_renames_and_versions() -> TestResult {
        let (_, fields) = evolved(
            table(FormatVersion::V1)?,
            &[remove("p"), add("p", Transform::Identity)],
        )?;
        assert_eq!(fields, vec![(1000, "p".to_string(), Transform::Identity)]);

        // A removed bucket field stays as `void` "b"; renaming p to "b" moves it aside.
        let (md, _) = evolved(
            table(FormatVersion::V1)?,
            &[Change::Add {
                column: "id".into(),
                transform: Transform::Bucket(4),
                name: Some("b".into()),
            }],
        )?;
        let (md, _) = evolved(md, &[remove("b")])?;
        let (_, fields) = evolved(md, &[Change::Rename("p".into(), "b".into())])?;
        assert_eq!(
            fields,
            vec![
                (1000, "b".to_string(), Transform::Identity),
                (1001, "b_1001".to_string(), Transform::Void),
            ]
        );

        let (_, fields) = evolved(
            table(FormatVersion::V2)?,
            &[remove("p"), add("q", Transform::Identity)],
        )?;
        assert_eq!(fields, vec![(1001, "q".to_string(), Transform::Identity)]);

        let err = evolve(
            &table(FormatVersion::V1)?,
            &[Change::Rename("p".into(), "x".into()), remove("p")],
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("cannot rename and remove"), "{err}");
        Ok(())
    }

    /// Two removed fields of one column are two `void` fields of it: a spec Java writes
    /// (identity and bucket of one column, both removed), which must still bind.
    #[test]
    fn two_void_fields_of_one_column_bind() -> TestResult {
        let (md, _) = evolved(
            table(FormatVersion::V1)?,
            &[Change::Add {
                column: "p".into(),
                transform: Transform::Bucket(4),
                name: Some("p_b".into()),
            }],
        )?;
        let (md, fields) = evolved(md, &[remove("p"), remove("p_b")])?;
        assert_eq!(
            fields,
            vec![
                (1000, "p".to_string(), Transform::Void),
                (1001, "p_b".to_string(), Transform::Void),
            ]
        );
        TableMetadataBuilder::new_from_metadata(md, None).build()?;
        Ok(())
    }
}
