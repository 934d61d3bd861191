//! Eligibility: the table-level conditions under which a source's data files can be shared
//! with the destination at all (copied or referenced instead of rewritten).
//!
//! Append mode; format version 1 or 2 on both sides; no name mapping on the source; a
//! reconciliation plan of renames and reader promotions only, every field (nested too) keeping
//! its id; the source's assigned field ids within the destination's; the same partition layout.
//! [`table_eligibility`] names the first condition that fails.

use std::collections::BTreeSet;

use iceberg::spec::{FormatVersion, NestedField, PartitionSpec, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use ops_reconcile::ReconciliationPlan;

use crate::WriteMode;

/// The table property that makes readers resolve columns by name for files without field ids.
const NAME_MAPPING_PROPERTY: &str = "schema.name-mapping.default";

/// The table-level conditions of a file copy: `Err` names the first one that fails.
pub fn table_eligibility(
    source: &Table,
    source_schema: &Schema,
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
    plan_is_evolution(plan, source_schema, dmd.current_schema())?;
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
pub(crate) fn is_promotion(from: &PrimitiveType, to: &PrimitiveType) -> bool {
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
pub(super) fn same_layout(a: &PartitionSpec, b: &PartitionSpec) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.source_id == y.source_id && x.transform == y.transform)
}

pub(super) fn describe_spec(spec: &PartitionSpec) -> String {
    spec.fields()
        .iter()
        .map(|f| format!("{}({})", f.transform, f.source_id))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use ops_reconcile::{MissingInSource, SchemaReconciler};

    use super::*;
    use crate::testing::{long, orders, schema};

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
}
