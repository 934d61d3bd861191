//! Planning: Glue column types → Iceberg types and their transformation class, under the
//! destination schema and migration policies; the rows of the table compatibility report.
//!
//! The destination schema is read from the request as the emulator decoded it from the model
//! (an `IcebergSchemaV2` value keyed by member names), not through the client's types.

use iceberg::spec::{PrimitiveType, Type};
use serde_json::{Value, json};

use crate::review::{TransformationClass as C, csv_field};

/// `unmatchedSourceFieldsPolicy`: leave unmatched source columns out.
pub const DROP: &str = "drop";
/// `incompatibleValuesPolicy`: write null where the type cannot hold the value.
pub const SET_NULL: &str = "setNull";
/// Either policy's default.
pub const FAIL: &str = "fail";

/// One destination column and how its values are produced.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedColumn {
    /// Field ID in the destination.
    pub id: i32,
    /// Name.
    pub name: String,
    /// Iceberg type.
    pub ty: Type,
    /// Required.
    pub required: bool,
    /// Whether it is a partition column (value from the partition, not the file).
    pub partition: bool,
    /// Written null for every row (`setNull`).
    pub set_null: bool,
}

/// A finding row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `invalid` or `informational`.
    pub finding_type: &'static str,
    /// Category.
    pub category: &'static str,
    /// Subcategory.
    pub subcategory: String,
    /// Details JSON.
    pub details: serde_json::Value,
}

/// The table-level plan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TablePlan {
    /// Destination columns in order.
    pub columns: Vec<PlannedColumn>,
    /// Report rows.
    pub rows: Vec<Row>,
}

impl TablePlan {
    /// Invalid rows.
    pub fn invalid(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.finding_type == "invalid")
            .count()
    }

    /// The report as CSV.
    pub fn csv(&self) -> String {
        let mut s = String::from("finding_type,finding_category,finding_subcategory,details\n");
        for r in &self.rows {
            s.push_str(&format!(
                "{},{},{},{}\n",
                r.finding_type,
                r.category,
                csv_field(&r.subcategory),
                csv_field(&r.details.to_string())
            ));
        }
        s
    }
}

/// The Iceberg type a Glue type migrates to by default, and the class of that change.
pub fn glue_to_iceberg(glue: &str) -> Option<(Type, C)> {
    let g = glue.trim().to_ascii_lowercase();
    let p = |t| Some((Type::Primitive(t), C::Lossless));
    let (base, args) = match g.split_once('(') {
        Some((b, a)) => (b.trim(), a.trim_end_matches(')')),
        None => (g.as_str(), ""),
    };
    match base {
        "boolean" => p(PrimitiveType::Boolean),
        "tinyint" | "smallint" => Some((Type::Primitive(PrimitiveType::Int), C::Widened)),
        "int" | "integer" => p(PrimitiveType::Int),
        "bigint" => p(PrimitiveType::Long),
        "float" => p(PrimitiveType::Float),
        "double" => p(PrimitiveType::Double),
        "string" => p(PrimitiveType::String),
        "varchar" => Some((Type::Primitive(PrimitiveType::String), C::Widened)),
        "char" => Some((Type::Primitive(PrimitiveType::String), C::Converted)),
        "binary" => p(PrimitiveType::Binary),
        "date" => p(PrimitiveType::Date),
        // Hive timestamps (often Parquet INT96, nanoseconds) become microsecond timestamptz.
        "timestamp" => Some((Type::Primitive(PrimitiveType::Timestamptz), C::Converted)),
        "decimal" => {
            let mut it = args.split(',').map(|s| s.trim().parse::<u32>());
            let precision = it.next().and_then(|r| r.ok()).unwrap_or(10);
            let scale = it.next().and_then(|r| r.ok()).unwrap_or(0);
            p(PrimitiveType::Decimal { precision, scale })
        }
        _ => None,
    }
}

/// Class of changing `from` (the default for the Glue type) to a destination type `to`.
pub fn change_class(from: &Type, to: &Type, default_class: C) -> C {
    use PrimitiveType as P;
    if from == to {
        return default_class;
    }
    match (from, to) {
        (Type::Primitive(a), Type::Primitive(b)) => match (a, b) {
            (P::Int, P::Long) | (P::Float, P::Double) => C::Widened,
            (
                P::Decimal {
                    precision: p1,
                    scale: s1,
                },
                P::Decimal {
                    precision: p2,
                    scale: s2,
                },
            ) if s1 == s2 && p2 >= p1 => C::Widened,
            (_, P::String) if !matches!(a, P::Binary) => C::Converted,
            _ => C::Incompatible,
        },
        _ => C::Unsupported,
    }
}

/// Checks that every field of a destination schema (`IcebergSchemaV2`) has an Iceberg type
/// this emulator reads; the message names the first that has not (StartTableMigration answers
/// it with 400 rather than guessing a type).
pub fn check_schema_types(schema: &Value) -> Result<(), String> {
    for f in schema["fields"].as_array().into_iter().flatten() {
        if serde_json::from_value::<Type>(f["type"].clone()).is_err() {
            return Err(format!(
                "destinationTable.schema field '{}' has type {} which is not an Iceberg type",
                f["name"].as_str().unwrap_or("?"),
                f["type"]
            ));
        }
    }
    Ok(())
}

/// Plans the destination columns from the Glue columns and partition keys (`(name, type)`),
/// an optional destination schema (`IcebergSchemaV2`, member names) and the policies
/// (`unmatchedSourceFieldsPolicy`, `incompatibleValuesPolicy` values).
pub fn plan_table(
    columns: &[(String, String)],
    partition_keys: &[(String, String)],
    schema: Option<&Value>,
    unmatched: &str,
    incompatible: &str,
) -> TablePlan {
    let mut plan = TablePlan::default();
    let mut next_id = 1;
    let all = columns
        .iter()
        .map(|c| (c, false))
        .chain(partition_keys.iter().map(|c| (c, true)));
    for ((name, glue_type), partition) in all {
        let detail = |dest: Option<String>, policy: &str, outcome: &str| {
            json!({"fieldPath": name, "glueType": glue_type, "destinationType": dest,
                   "partitionColumn": partition, "policy": policy, "outcome": outcome})
        };
        let Some((default_ty, default_class)) = glue_to_iceberg(glue_type) else {
            let drop = unmatched == DROP && !partition;
            plan.rows.push(Row {
                finding_type: if drop { "informational" } else { "invalid" },
                category: "metadata",
                subcategory: "schemaTransformation.unsupported".into(),
                details: detail(None, unmatched, if drop { "dropped" } else { "failed" }),
            });
            continue;
        };
        let dest = match schema {
            None => Some((next_id, default_ty.clone(), false)),
            Some(s) => s["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| {
                    f["name"]
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
                .map(|f| {
                    let ty = serde_json::from_value::<Type>(f["type"].clone()).ok();
                    (
                        f["id"].as_i64().unwrap_or_default() as i32,
                        ty.unwrap_or(Type::Primitive(PrimitiveType::Binary)),
                        f["required"].as_bool().unwrap_or(false),
                    )
                }),
        };
        next_id += 1;
        let Some((id, ty, required)) = dest else {
            let drop = unmatched == DROP && !partition;
            plan.rows.push(Row {
                finding_type: if drop { "informational" } else { "invalid" },
                category: "metadata",
                subcategory: "unmatchedSourceField".into(),
                details: detail(None, unmatched, if drop { "dropped" } else { "failed" }),
            });
            continue;
        };
        let class = change_class(&default_ty, &ty, default_class);
        let dest_name = Some(ty.to_string());
        let mut set_null = false;
        let (finding_type, outcome, policy) = match class {
            C::Incompatible if incompatible == SET_NULL && !required => {
                set_null = true;
                ("informational", "setNull", incompatible)
            }
            C::Incompatible | C::Unsupported => ("invalid", "failed", incompatible),
            _ => ("informational", "migrated", "none"),
        };
        plan.rows.push(Row {
            finding_type,
            category: "metadata",
            subcategory: format!(
                "schemaTransformation.{}",
                class.label().to_ascii_lowercase()
            ),
            details: detail(dest_name, policy, outcome),
        });
        plan.columns.push(PlannedColumn {
            id,
            name: name.clone(),
            ty,
            required,
            partition,
            set_null,
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn inferred_schema_classifies_glue_types() {
        assert!(
            check_schema_types(&json!({"fields": [{"id": 1, "name": "a", "type": "int"}]})).is_ok()
        );
        let bad =
            check_schema_types(&json!({"fields": [{"id": 1, "name": "a", "type": "integr"}]}));
        assert!(bad.is_err_and(|e| e.contains("'a'")));
        let plan = plan_table(
            &cols(&[("id", "bigint"), ("qty", "smallint"), ("code", "char(3)")]),
            &cols(&[("region", "string")]),
            None,
            FAIL,
            FAIL,
        );
        let subs: Vec<_> = plan.rows.iter().map(|r| r.subcategory.as_str()).collect();
        assert_eq!(
            subs,
            [
                "schemaTransformation.lossless",
                "schemaTransformation.widened",
                "schemaTransformation.converted",
                "schemaTransformation.lossless"
            ]
        );
        assert_eq!(plan.invalid(), 0);
        assert!(plan.columns[3].partition);
    }

    #[test]
    fn narrowing_is_incompatible_and_set_null_applies_column_wide() {
        let schema = json!({"type": "struct",
            "fields": [{"id": 1, "name": "big", "type": "int", "required": false}]});
        let fail = plan_table(&cols(&[("big", "bigint")]), &[], Some(&schema), FAIL, FAIL);
        assert_eq!(fail.invalid(), 1);
        let set_null = plan_table(
            &cols(&[("big", "bigint"), ("extra", "int")]),
            &[],
            Some(&schema),
            DROP,
            SET_NULL,
        );
        assert_eq!(set_null.invalid(), 0);
        assert!(set_null.columns[0].set_null);
        let outcomes: Vec<_> = set_null
            .rows
            .iter()
            .map(|r| {
                r.details["outcome"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(outcomes, ["setNull", "dropped"]);
    }
}
