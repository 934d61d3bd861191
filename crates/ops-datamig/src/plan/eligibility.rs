//! Eligibility: the table-level conditions under which a source's data files can be shared
//! with the destination at all (copied or referenced instead of rewritten).
//!
//! Append mode; format version 1 or 2 on both sides; no name mapping on the source; a
//! reconciliation plan of renames and reader promotions only, every field (nested too) keeping
//! its id; the source's assigned field ids within the destination's; the same partition layout
//! (`void` fields aside).
//! [`table_eligibility`] names the first condition that fails.

use std::collections::BTreeSet;

use iceberg::spec::{
    FormatVersion, NestedField, PartitionSpec, PrimitiveType, Schema, TableMetadata, Transform,
    Type,
};
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
    let dmd = dest.metadata();
    eligibility(
        source.metadata(),
        source_schema,
        &DestLayout {
            format_version: dmd.format_version(),
            schema: dmd.current_schema(),
            last_column_id: dmd.last_column_id(),
            spec: dmd.default_partition_spec(),
        },
        plan,
        write_mode,
    )
}

/// What the table-level conditions read of a destination: an existing table's, or the one
/// `create_dest` would create (so a failing condition is found before it is).
pub(crate) struct DestLayout<'a> {
    pub format_version: FormatVersion,
    pub schema: &'a Schema,
    pub last_column_id: i32,
    pub spec: &'a PartitionSpec,
}

/// [`table_eligibility`] against a destination's layout.
pub(crate) fn eligibility(
    smd: &TableMetadata,
    source_schema: &Schema,
    dest: &DestLayout<'_>,
    plan: &ReconciliationPlan,
    write_mode: WriteMode,
) -> std::result::Result<(), String> {
    if write_mode != WriteMode::Append {
        return Err(format!(
            "write mode {write_mode} rewrites destination rows; only append copies files"
        ));
    }
    for (side, version) in [
        ("source", smd.format_version()),
        ("destination", dest.format_version),
    ] {
        if matches!(version, FormatVersion::V1 | FormatVersion::V2) {
            continue;
        }
        return Err(format!(
            "the {side} is format version {} (only versions 1 and 2 are copied)",
            version as u8
        ));
    }
    if smd.properties().contains_key(NAME_MAPPING_PROPERTY) {
        return Err(format!(
            "the source has {NAME_MAPPING_PROPERTY}, so some of its files may lack field ids"
        ));
    }
    plan_is_evolution(plan, source_schema, dest.schema)?;
    if smd.last_column_id() > dest.last_column_id {
        return Err(format!(
            "the source has assigned field ids up to {} but the destination's last-column-id is \
             {}: a column added to the destination later could take an id whose old values \
             copied files still hold",
            smd.last_column_id(),
            dest.last_column_id
        ));
    }
    let (sspec, dspec) = (smd.default_partition_spec(), dest.spec);
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

/// Same partition layout: the same source columns and transforms in the same order, `void`
/// fields aside (spec ids and partition field names may differ). See [`partition_map`].
pub(crate) fn same_layout(a: &PartitionSpec, b: &PartitionSpec) -> bool {
    partition_map(a, b).is_some()
}

/// How a partition tuple of `source` becomes one of `dest`: for each destination field, the
/// position of the source field whose value it takes, or `None` for a destination `void`
/// field (always NULL). `None` when the layouts differ.
///
/// A `void` field is what format version 1 keeps of a removed partition field: its value is
/// always NULL and it shapes no path (Java's `PartitionSpec.isPartitioned` ignores it), so two
/// specs whose other fields match in order lay files out the same way.
pub(crate) fn partition_map(
    source: &PartitionSpec,
    dest: &PartitionSpec,
) -> Option<Vec<Option<usize>>> {
    let mut live = source
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.transform != Transform::Void);
    let mut map = Vec::with_capacity(dest.fields().len());
    for d in dest.fields() {
        if d.transform == Transform::Void {
            map.push(None);
            continue;
        }
        let (i, s) = live.next()?;
        if s.source_id != d.source_id || s.transform != d.transform {
            return None;
        }
        map.push(Some(i));
    }
    live.next().is_none().then_some(map)
}

pub(crate) fn describe_spec(spec: &PartitionSpec) -> String {
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
    fn void_fields_are_left_out_of_the_layout() {
        use iceberg::spec::UnboundPartitionSpec;
        let s = orders();
        // (source column, transform) per field, in order.
        let spec = |fields: &[(i32, Transform)]| {
            let mut b = UnboundPartitionSpec::builder();
            for (i, (source, t)) in fields.iter().enumerate() {
                b = b.add_partition_field(*source, format!("f{i}"), *t).unwrap();
            }
            b.build().bind(s.clone()).unwrap()
        };
        let (void, id) = (Transform::Void, Transform::Identity);
        let v1_removed = spec(&[(2, void), (1, id)]);
        let plain = spec(&[(1, id)]);
        // The source's void value is dropped; a destination void field takes a NULL.
        assert_eq!(partition_map(&v1_removed, &plain), Some(vec![Some(1)]));
        assert_eq!(
            partition_map(&plain, &v1_removed),
            Some(vec![None, Some(0)])
        );
        assert_eq!(
            partition_map(&spec(&[(1, id), (2, void)]), &v1_removed),
            Some(vec![None, Some(0)])
        );
        // All void: unpartitioned.
        assert_eq!(partition_map(&spec(&[(2, void)]), &spec(&[])), Some(vec![]));
        // Other fields, another order or another transform differ.
        let two = spec(&[(1, id), (2, id)]);
        assert_eq!(partition_map(&two, &spec(&[(2, id), (1, id)])), None);
        assert_eq!(partition_map(&two, &plain), None);
        assert_eq!(partition_map(&plain, &two), None);
        assert_eq!(
            partition_map(&v1_removed, &spec(&[(1, Transform::Bucket(4))])),
            None
        );
        assert!(!same_layout(&v1_removed, &spec(&[(2, id)])));
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
