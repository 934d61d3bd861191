//! Step 6 of an import: a file's partition tuple under the table's default spec.
//!
//! For each partition field:
//! - a `key=value` folder names it when `key` is the field's name (the value is the partition
//!   value, as Java's `TableMigrationUtil` reads Hive paths) or its source column's (the value
//!   is a source value, and the transform applies: `id=7` under `bucket(4, id)`);
//!   `__HIVE_DEFAULT_PARTITION__` is NULL;
//! - the file's statistics of the source column check that value wherever they can decide it
//!   (the transform keeps order, or the column holds one value): a file whose rows lie
//!   elsewhere, or span partitions, is refused with both values named;
//! - with no folder, the statistics give it, as PyIceberg's `add_files` takes it: from an
//!   order-keeping transform of equal bounds, NULL when the column is all NULL; a file they
//!   cannot place is refused.
//!
//! Hive files usually lack their partition columns: there the folder alone decides.

use std::collections::HashMap;

use iceberg::spec::{
    Datum, Literal, PartitionSpec, PrimitiveType, Schema, Struct, Transform, Type,
};
use iceberg::transform::create_transform_function;

use crate::hive_path::segments;
use crate::metrics::ColumnStats;
use ops_core::{Error, Result};

/// A file's partition: the tuple, and `name=value` pairs for people.
#[derive(Debug, Clone)]
pub struct FilePartition {
    /// The tuple, in spec order.
    pub tuple: Struct,
    /// `name=value` per field (`null` for NULL).
    pub display: String,
}

/// The partition of the file at `path` (its path below its folder: `relative`) under `spec`.
pub fn partition_of(
    path: &str,
    relative: &str,
    spec: &PartitionSpec,
    schema: &Schema,
    stats: &HashMap<i32, ColumnStats>,
) -> Result<FilePartition> {
    let folders = segments(relative);
    let mut values: Vec<Option<Literal>> = Vec::new();
    let mut display = Vec::new();
    for field in spec.fields() {
        let source = schema.field_by_id(field.source_id).ok_or_else(|| {
            Error::InvalidInput(format!(
                "partition field `{}` names source column {} that the schema lacks",
                field.name, field.source_id
            ))
        })?;
        let Type::Primitive(source_type) = source.field_type.as_ref() else {
            return Err(Error::InvalidInput(format!(
                "partition field `{}`: its source `{}` is not a primitive column",
                field.name, source.name
            )));
        };
        let source_name = schema
            .name_by_field_id(field.source_id)
            .unwrap_or(source.name.as_str())
            .to_string();
        let transform = create_transform_function(&field.transform)?;
        let result_type = match field
            .transform
            .result_type(&Type::Primitive(source_type.clone()))?
        {
            Type::Primitive(p) => p,
            other => {
                return Err(Error::InvalidInput(format!(
                    "partition field `{}` has a {other} result",
                    field.name
                )));
            }
        };
        let apply = |d: &Datum| -> Result<Option<Datum>> { Ok(transform.transform_literal(d)?) };
        // From the folders.
        let by_name = folders.iter().find(|(k, _)| *k == field.name);
        let by_source = folders
            .iter()
            .find(|(k, _)| *k == source_name && field.transform != Transform::Identity);
        let from_path: Option<Option<Datum>> = match (by_name, by_source) {
            (Some((k, v)), _) => Some(match v {
                None => None,
                Some(v) => Some(parse(v, &result_type, &field.transform).ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "{path}: folder {k}={v} is no {result_type} value of partition field \
                         `{}`",
                        field.name
                    ))
                })?),
            }),
            (None, Some((k, v))) => Some(match v {
                None => None,
                Some(v) => {
                    let d = parse(v, source_type, &Transform::Identity).ok_or_else(|| {
                        Error::InvalidInput(format!(
                            "{path}: folder {k}={v} is no {source_type} value of column \
                             `{source_name}`"
                        ))
                    })?;
                    apply(&d)?
                }
            }),
            (None, None) => None,
        };
        // What the statistics decide: Some(Some(v)) one partition value, Some(None) all NULL,
        // None undecided; Err: rows of two partitions.
        let s = stats.get(&field.source_id);
        let decided: Option<Option<Datum>> = match s {
            _ if field.transform == Transform::Void => Some(None),
            Some(s) if s.nulls.is_some_and(|n| n == s.values) && s.values > 0 => Some(None),
            Some(ColumnStats {
                lower: Some(lo),
                upper: Some(hi),
                exact: true,
                nulls,
                ..
            }) if field.transform.preserves_order() || lo == hi => {
                let (tl, th) = (apply(lo)?, apply(hi)?);
                if tl != th {
                    return Err(Error::InvalidInput(format!(
                        "{path} holds rows of more than one partition: `{source_name}` runs \
                         from {lo} to {hi}, so `{}` from {} to {}; a file added in place must \
                         lie in one partition (rewrite it, e.g. with migrate-data)",
                        field.name,
                        show(tl.as_ref()),
                        show(th.as_ref())
                    )));
                }
                if nulls.is_some_and(|n| n > 0) {
                    return Err(Error::InvalidInput(format!(
                        "{path} holds rows of more than one partition: `{source_name}` is NULL \
                         in some rows and {lo} in others"
                    )));
                }
                Some(tl)
            }
            _ => None,
        };
        let value = match (from_path, decided) {
            (Some(p), Some(d)) if p != d => {
                return Err(Error::InvalidInput(format!(
                    "{path}: its folder says {}={} but its rows say {}={} (from the \
                     statistics of `{source_name}`)",
                    field.name,
                    show(p.as_ref()),
                    field.name,
                    show(d.as_ref())
                )));
            }
            (Some(p), _) => p,
            (None, Some(d)) => d,
            (None, None) => {
                let folders = if source_name == field.name {
                    format!("`{}=`", field.name)
                } else {
                    format!("`{}=` or `{source_name}=`", field.name)
                };
                return Err(Error::InvalidInput(format!(
                    "{path}: no {folders} folder in its path, and no statistics of \
                     `{source_name}` that place it: its partition `{}` is unknown; put it \
                     under a {}=value folder",
                    field.name, field.name
                )));
            }
        };
        display.push(format!("{}={}", field.name, show(value.as_ref())));
        values.push(value.map(Literal::from));
    }
    Ok(FilePartition {
        tuple: Struct::from_iter(values),
        display: display.join("/"),
    })
}

/// A partition value as Java's partition paths spell it (`eu`, `2024-01-01`), `null` for NULL.
fn show(d: Option<&Datum>) -> String {
    d.map_or_else(|| "null".to_string(), Datum::to_human_string)
}

/// A folder value as a value of `ty`, the result type of `transform`: the text Hive and
/// Java's partition paths hold (`2024-01-01`, `2024-01-01 10:00:00`, `2024-01` for a month,
/// `2024-01-01-10` for an hour).
fn parse(v: &str, ty: &PrimitiveType, transform: &Transform) -> Option<Datum> {
    use PrimitiveType as P;
    match (transform, ty) {
        (Transform::Year, P::Int) => v.parse::<i32>().ok().map(|y| Datum::int(y - 1970)),
        (Transform::Month, P::Int) => {
            let (y, m) = v.split_once('-')?;
            let (y, m): (i32, i32) = (y.parse().ok()?, m.parse().ok()?);
            (1..=12)
                .contains(&m)
                .then(|| Datum::int((y - 1970) * 12 + m - 1))
        }
        (Transform::Hour, P::Int) => {
            let (date, hour) = v.rsplit_once('-')?;
            let days = match Datum::date_from_str(date).ok()?.literal() {
                iceberg::spec::PrimitiveLiteral::Int(d) => *d,
                _ => return None,
            };
            let h: i32 = hour.parse().ok()?;
            (0..24).contains(&h).then(|| Datum::int(days * 24 + h))
        }
        (_, P::Boolean) => Datum::bool_from_str(v).ok(),
        (_, P::Int) => v.parse::<i32>().ok().map(Datum::int),
        (_, P::Long) => v.parse::<i64>().ok().map(Datum::long),
        (_, P::Float) => v.parse::<f32>().ok().map(Datum::float),
        (_, P::Double) => v.parse::<f64>().ok().map(Datum::double),
        (_, P::Date) => Datum::date_from_str(v).ok(),
        (_, P::Time) => Datum::time_from_str(v).ok(),
        (_, P::Timestamp) => Datum::timestamp_from_str(v.replacen(' ', "T", 1)).ok(),
        (_, P::Timestamptz) => {
            let iso = v.replacen(' ', "T", 1);
            Datum::timestamptz_from_str(&iso)
                .or_else(|_| Datum::timestamptz_from_str(format!("{iso}+00:00")))
                .ok()
        }
        (_, P::String) => Some(Datum::string(v)),
        (_, P::Uuid) => Datum::uuid_from_str(v).ok(),
        (_, P::Decimal { .. }) => Datum::decimal_from_str(v)
            .ok()
            .and_then(|d| d.to(&Type::Primitive(ty.clone())).ok()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_values_parse_as_java_writes_them() {
        assert_eq!(
            parse("2024", &PrimitiveType::Int, &Transform::Year),
            Some(Datum::int(54))
        );
        assert_eq!(
            parse("1970-02", &PrimitiveType::Int, &Transform::Month),
            Some(Datum::int(1))
        );
        assert_eq!(
            parse("1970-01-02-03", &PrimitiveType::Int, &Transform::Hour),
            Some(Datum::int(27))
        );
        assert_eq!(
            parse("1970-01-02", &PrimitiveType::Date, &Transform::Day),
            Some(Datum::date(1))
        );
        assert_eq!(
            parse(
                "1970-01-01 00:00:01",
                &PrimitiveType::Timestamp,
                &Transform::Identity
            ),
            Some(Datum::timestamp_micros(1_000_000))
        );
        assert_eq!(parse("x", &PrimitiveType::Long, &Transform::Identity), None);
        assert_eq!(
            parse("a b+c", &PrimitiveType::String, &Transform::Identity),
            Some(Datum::string("a b+c"))
        );
    }
}
