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

use std::collections::{HashMap, HashSet};

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
    /// Folder values the statistics could not decide although the file holds the source
    /// column (a bucket of a column of several values, a file without statistics): checked by
    /// reading that column ([`verify`]).
    pub unverified: Vec<Unverified>,
}

/// A folder value to check against the file's rows.
#[derive(Debug, Clone)]
pub struct Unverified {
    /// The partition field's name.
    pub field: String,
    /// Its source column.
    pub source_id: i32,
    /// The source column's name.
    pub source_name: String,
    /// Its type.
    pub source_type: PrimitiveType,
    /// The transform.
    pub transform: Transform,
    /// The folder's value (`None`: NULL).
    pub expected: Option<Datum>,
}

/// The partition of the file at `path` (its path without scheme: `relative`) under `spec`.
/// `present`: the table fields the file has a column for (with the structs they lie in).
pub fn partition_of(
    path: &str,
    relative: &str,
    spec: &PartitionSpec,
    schema: &Schema,
    stats: &HashMap<i32, ColumnStats>,
    present: &HashSet<i32>,
) -> Result<FilePartition> {
    let folders = segments(relative);
    let mut values: Vec<Option<Literal>> = Vec::new();
    let mut display = Vec::new();
    let mut unverified = Vec::new();
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
        let derived = !matches!(field.transform, Transform::Identity | Transform::Void);
        if derived && !present.contains(&field.source_id) {
            // Readers fill in an identity partition's column from the partition value; from a
            // bucket, a day or a truncation they cannot, and the column would read as NULL.
            return Err(Error::InvalidInput(format!(
                "{path} has no column `{source_name}`, which partition field `{}` ({}) is \
                 computed from: readers take an identity partition's column from its folder, \
                 but no other transform's, so `{source_name}` would read as NULL. Rewrite the \
                 files with the column (iceberg-ops migrate-data), or add them to a table \
                 partitioned by identity({source_name})",
                field.name, field.transform
            )));
        }
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
        let apply = |d: &Datum| -> Result<Option<Datum>> {
            Ok(transform
                .transform_literal(d)?
                .map(|t| retyped(t, &result_type)))
        };
        // From the folders. The deepest folder of a key wins; keys compare as Hive's do
        // (case-insensitively: Hive lower-cases partition keys).
        let by_name = folders
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(&field.name));
        let by_source = folders
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(&source_name));
        let bad = |k: &str, v: &str, what: String| {
            Error::InvalidInput(format!("{path}: folder {k}={v} is no {what}"))
        };
        // Java's and PyIceberg's partition paths spell NULL `null` (Hive's
        // `__HIVE_DEFAULT_PARTITION__`): NULL where the text is no value of the type; for a
        // string, where the statistics say the rows are NULL (below).
        let null_text = |v: &Option<String>| {
            v.as_deref().is_some_and(|v| v == "null")
                && !matches!(result_type, PrimitiveType::String)
        };
        let from_path: Option<Option<Datum>> = match (by_name, by_source) {
            (Some((k, v)), _) => Some(match v {
                None => None,
                _ if null_text(v) => None,
                Some(v) => {
                    let d = parse(v, &result_type, &field.transform).ok_or_else(|| {
                        bad(
                            k,
                            v,
                            format!("{result_type} value of partition field `{}`", field.name),
                        )
                    })?;
                    // `null` of a string field is Java's NULL or the text: the statistics
                    // decide below, and the text's check waits for them (`truncate(2)` of
                    // the text is `nu`, of NULL nothing).
                    if !(v == "null" && matches!(result_type, PrimitiveType::String)) {
                        check_transform_value(&field.transform, &d, &apply).map_err(|why| {
                            bad(
                                k,
                                v,
                                format!("value of partition field `{}`: {why}", field.name),
                            )
                        })?;
                    }
                    Some(d)
                }
            }),
            (None, Some((k, v))) => Some(match v {
                None => None,
                _ if v.as_deref() == Some("null")
                    && !matches!(source_type, PrimitiveType::String) =>
                {
                    None
                }
                Some(v) => {
                    let d = parse(v, source_type, &Transform::Identity).ok_or_else(|| {
                        let hint = if *source_type == PrimitiveType::Timestamptz {
                            " (a timestamptz folder needs its offset, e.g. \
                             2024-01-01T10:00:00+00:00: a zone-less time is some session's \
                             local time)"
                        } else {
                            ""
                        };
                        bad(
                            k,
                            v,
                            format!("{source_type} value of column `{source_name}`{hint}"),
                        )
                    })?;
                    apply(&d)?
                }
            }),
            (None, None) => None,
        };
        // What the statistics decide: Some(Some(v)) one partition value, Some(None) all NULL,
        // None undecided; Err: rows of two partitions.
        let s = stats.get(&field.source_id);
        let floating = matches!(source_type, PrimitiveType::Float | PrimitiveType::Double);
        let decided: Option<Option<Datum>> = match s {
            _ if field.transform == Transform::Void => Some(None),
            Some(s) if s.nulls.is_some_and(|n| n == s.values) && s.values > 0 => Some(None),
            // Float statistics leave NaN out, and -0.0 equals 0.0: they place no file.
            Some(ColumnStats {
                lower: Some(lo),
                upper: Some(hi),
                exact: true,
                nulls,
                ..
            }) if !floating && (field.transform.preserves_order() || lo == hi) => {
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
                match nulls {
                    Some(0) => Some(tl),
                    Some(_) => {
                        return Err(Error::InvalidInput(format!(
                            "{path} holds rows of more than one partition: `{source_name}` is \
                             NULL in some rows and {lo} in others"
                        )));
                    }
                    // NULLs unknown: the bounds check a folder, they place no file alone.
                    None => {
                        if let Some(p) = &from_path
                            && *p != tl
                        {
                            return Err(mismatch(
                                path,
                                &field.name,
                                p.as_ref(),
                                tl.as_ref(),
                                &source_name,
                            ));
                        }
                        None
                    }
                }
            }
            _ => None,
        };
        let value = match (from_path, decided) {
            // `k=null` over rows the statistics say are NULL: Java's spelling of NULL.
            (Some(Some(p)), Some(None)) if p == Datum::string("null") => None,
            (Some(p), Some(d)) if p != d => {
                return Err(mismatch(
                    path,
                    &field.name,
                    p.as_ref(),
                    d.as_ref(),
                    &source_name,
                ));
            }
            (Some(p), Some(_)) => p,
            (Some(p), None) => {
                if present.contains(&field.source_id) && field.transform != Transform::Void {
                    unverified.push(Unverified {
                        field: field.name.clone(),
                        source_id: field.source_id,
                        source_name: source_name.clone(),
                        source_type: source_type.clone(),
                        transform: field.transform,
                        expected: p.clone(),
                    });
                }
                p
            }
            (None, Some(d)) => d,
            (None, None) => {
                let folders = if source_name.eq_ignore_ascii_case(&field.name) {
                    format!("`{}=`", field.name)
                } else {
                    format!("`{}=` or `{source_name}=`", field.name)
                };
                return Err(Error::InvalidInput(format!(
                    "{path}: no {folders} folder in its path, and no statistics of \
                     `{source_name}` that place it (exact bounds of one partition and no \
                     NULLs, or all NULLs): its partition `{}` is unknown; put it under a \
                     {}=value folder",
                    field.name, field.name
                )));
            }
        };
        if value.as_ref() == Some(&Datum::string("null")) {
            check_transform_value(&field.transform, &Datum::string("null"), &apply).map_err(
                |why| {
                    Error::InvalidInput(format!(
                        "{path}: folder {}=null is no value of partition field `{}` ({why}), \
                         and the file's statistics do not say its rows are NULL",
                        field.name, field.name
                    ))
                },
            )?;
        }
        display.push(format!("{}={}", field.name, show(value.as_ref())));
        values.push(value.map(Literal::from));
    }
    refuse_folder_columns(path, &folders, spec, schema, present)?;
    Ok(FilePartition {
        tuple: Struct::from_iter(values),
        display: display.join("/"),
        unverified,
    })
}

fn mismatch(
    path: &str,
    field: &str,
    folder: Option<&Datum>,
    rows: Option<&Datum>,
    source: &str,
) -> Error {
    Error::InvalidInput(format!(
        "{path}: its folder says {field}={} but its rows say {field}={} (from the statistics of \
         `{source}`)",
        show(folder),
        show(rows)
    ))
}

/// Whether `d`, given as a value of a partition field itself, is one its transform can
/// produce: a bucket below its count, a truncation that truncates to itself.
fn check_transform_value(
    transform: &Transform,
    d: &Datum,
    apply: &dyn Fn(&Datum) -> Result<Option<Datum>>,
) -> std::result::Result<(), String> {
    match transform {
        Transform::Bucket(n) => match d.literal() {
            iceberg::spec::PrimitiveLiteral::Int(b) if *b >= 0 && (*b as u32) < *n => Ok(()),
            _ => Err(format!(
                "a bucket of bucket({n}) is 0 to {}",
                n.saturating_sub(1)
            )),
        },
        Transform::Truncate(w) => match apply(d) {
            Ok(Some(t)) if t == *d => Ok(()),
            _ => Err(format!("truncate({w}) of it is not itself")),
        },
        _ => Ok(()),
    }
}

/// Refuses a `key=value` folder that names a table column the file lacks (case-insensitively,
/// as Hive keys) unless the column is an identity partition's source: readers would read the
/// column as NULL, and the folder's values would be lost (Spark refuses partitioned files for
/// an unpartitioned table).
fn refuse_folder_columns(
    path: &str,
    folders: &[(String, Option<String>)],
    spec: &PartitionSpec,
    schema: &Schema,
    present: &HashSet<i32>,
) -> Result<()> {
    for (k, v) in folders {
        let Some(column) = crate::columns::column_named(schema, k) else {
            continue;
        };
        let identity = spec
            .fields()
            .iter()
            .any(|f| f.source_id == column.id && f.transform == Transform::Identity);
        if !identity && !present.contains(&column.id) {
            return Err(Error::InvalidInput(format!(
                "{path}: its folder {k}={} names the table's column `{}`, which the file lacks \
                 and the table is not partitioned by (identity): the column would read as \
                 NULL and the folder's values be lost. Partition the table by \
                 identity({}) first, or rewrite the files with the column",
                v.as_deref().unwrap_or("null"),
                column.name,
                column.name
            )));
        }
    }
    Ok(())
}

/// Checks the `unverified` folder values of the file at `path` by reading their source
/// columns (`matched` gives each column's index in the file): every row's transformed value
/// must equal the folder's. `meta`: the file's footer, already read.
pub async fn verify(
    io: &iceberg::io::FileIO,
    path: &str,
    meta: std::sync::Arc<parquet::file::metadata::ParquetMetaData>,
    matched: &[crate::columns::Matched],
    unverified: &[Unverified],
) -> Result<()> {
    use futures::TryStreamExt;
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
    for u in unverified {
        let Some(column) = matched.iter().find(|m| m.field_id == u.source_id) else {
            continue;
        };
        let input = io.new_input(path)?;
        let file =
            iceberg::arrow::ArrowFileReader::new(input.metadata().await?, input.reader().await?);
        let reader_meta = ArrowReaderMetadata::try_new(meta.clone(), ArrowReaderOptions::new())
            .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?;
        let mask = ProjectionMask::leaves(meta.file_metadata().schema_descr(), [column.column]);
        let mut batches = ParquetRecordBatchStreamBuilder::new_with_metadata(file, reader_meta)
            .with_projection(mask)
            .build()
            .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?;
        let target = iceberg::arrow::type_to_arrow_type(&Type::Primitive(u.source_type.clone()))?;
        let transform = create_transform_function(&u.transform)?;
        let result = u
            .transform
            .result_type(&Type::Primitive(u.source_type.clone()))?;
        let expected = u.expected.clone().map(Literal::from);
        while let Some(batch) = batches
            .try_next()
            .await
            .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?
        {
            let Some(values) = batch.columns().first() else {
                continue;
            };
            let values = arrow_cast::cast(values, &target)
                .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?;
            let transformed = transform.transform(values)?;
            let literals = iceberg::arrow::arrow_primitive_to_literal(&transformed, &result)?;
            if let Some(found) = literals.into_iter().find(|l| *l != expected) {
                let found = literal_text(found.as_ref());
                return Err(Error::InvalidInput(format!(
                    "{path}: its folder says {}={} but a row's `{}` gives {}={found}; a file \
                     added in place must lie in its folder's partition",
                    u.field,
                    show(u.expected.as_ref()),
                    u.source_name,
                    u.field
                )));
            }
        }
    }
    Ok(())
}

/// A partition value read from a file, for a message.
fn literal_text(l: Option<&Literal>) -> String {
    use iceberg::spec::PrimitiveLiteral as P;
    match l.and_then(Literal::as_primitive_literal) {
        None => "null".to_string(),
        Some(P::Int(v)) => v.to_string(),
        Some(P::Long(v)) => v.to_string(),
        Some(P::String(v)) => v,
        Some(P::Boolean(v)) => v.to_string(),
        Some(other) => format!("{other:?}"),
    }
}

/// A partition value as Java's partition paths spell it (`eu`, `2024-01-01`), `null` for NULL
/// (a string that reads `null` is quoted, to tell them apart).
fn show(d: Option<&Datum>) -> String {
    match d {
        None => "null".to_string(),
        Some(d) if *d == Datum::string("null") => "\"null\"".to_string(),
        Some(d) => d.to_human_string(),
    }
}

/// `d` as a value of `ty`, where iceberg's transform gave it another type with the same value:
/// `truncate` of a decimal answers with precision 38 and scale 0, its unscaled digits kept
/// (so 1.30 would show, and compare, as 130).
fn retyped(d: Datum, ty: &PrimitiveType) -> Datum {
    let (PrimitiveType::Decimal { scale, .. }, iceberg::spec::PrimitiveLiteral::Int128(unscaled)) =
        (ty, d.literal())
    else {
        return d;
    };
    let negative = *unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let scale = *scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    let text = format!(
        "{}{int}{}{frac}",
        if negative { "-" } else { "" },
        if scale > 0 { "." } else { "" }
    );
    Datum::decimal_from_str(text)
        .ok()
        .and_then(|v| v.to(&Type::Primitive(ty.clone())).ok())
        .unwrap_or(d)
}

/// A folder value as a value of `ty`, the result type of `transform`: the text Hive and
/// Java's partition paths hold (`2024-01-01`, `2024-01-01 10:00:00`, `2024-01` for a month,
/// `2024-01-01-10` for an hour).
fn parse(v: &str, ty: &PrimitiveType, transform: &Transform) -> Option<Datum> {
    use PrimitiveType as P;
    if let Some(d) = human_time(v, ty, transform) {
        return Some(d);
    }
    match (transform, ty) {
        // The integer form (years, months, hours since 1970) Iceberg itself stores.
        (Transform::Year | Transform::Month | Transform::Hour, P::Int) => {
            v.parse::<i32>().ok().map(Datum::int)
        }
        (_, P::Boolean) => Datum::bool_from_str(v).ok(),
        (_, P::Int) => v.parse::<i32>().ok().map(Datum::int),
        (_, P::Long) => v.parse::<i64>().ok().map(Datum::long),
        (_, P::Float) => v.parse::<f32>().ok().map(Datum::float),
        (_, P::Double) => v.parse::<f64>().ok().map(Datum::double),
        (_, P::Date) => Datum::date_from_str(v).ok(),
        (_, P::Time) => Datum::time_from_str(v).ok(),
        (_, P::Timestamp) => Datum::timestamp_from_str(iso_timestamp(v)).ok(),
        // Only with its offset: Spark writes a timestamp partition as its session zone's
        // local time, and taking it for UTC would move the rows by hours (Java refuses
        // timestamp partition strings altogether).
        (_, P::Timestamptz) => Datum::timestamptz_from_str(iso_timestamp(v)).ok(),
        (_, P::String) => Some(Datum::string(v)),
        (_, P::Uuid) => Datum::uuid_from_str(v).ok(),
        (_, P::Decimal { scale, .. }) => Datum::decimal_from_str(at_scale(v, *scale)?)
            .ok()
            .and_then(|d| d.to(&Type::Primitive(ty.clone())).ok()),
        _ => None,
    }
}

/// A decimal folder value written with `scale` digits after the point, when that is exact:
/// Hive and Spark write `1.5` or `2` for a `decimal(10,2)` value as readily as `1.50`, and a
/// value needing more digits (`1.555`) is no value of the column. An exponent is read as
/// Java's `BigDecimal` reads it ([`without_exponent`]: its `toString`, which Spark 2's
/// partition paths hold, writes `1E-10` for 0.0000000001); iceberg's own parser would drop a
/// positive one, reading `25e2` as 25.
fn at_scale(v: &str, scale: u32) -> Option<String> {
    let v = without_exponent(v)?;
    let v = v.as_str();
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let (sign, unsigned) = match int.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", int.strip_prefix('+').unwrap_or(int)),
    };
    if (unsigned.is_empty() && frac.is_empty()) || !digits(unsigned) || !digits(frac) {
        return None;
    }
    let int = format!("{sign}{}", if unsigned.is_empty() { "0" } else { unsigned });
    let scale = scale as usize;
    let (kept, dropped) = frac.split_at(frac.len().min(scale));
    if dropped.bytes().any(|b| b != b'0') {
        return None;
    }
    Some(if scale == 0 {
        int.to_string()
    } else {
        format!("{int}.{kept:0<scale$}")
    })
}

/// A decimal's text with its exponent applied (`-1.5E-3` is `-0.0015`, `25e2` is `2500`), as
/// Java's `BigDecimal(String)` reads it; text without one as it is. `None`: an exponent that
/// is no integer, or one that moves the point further than the digits plus 80 places (no
/// decimal Iceberg holds, 38 digits, could have it).
fn without_exponent(v: &str) -> Option<String> {
    let Some(at) = v.find(['e', 'E']) else {
        return Some(v.to_string());
    };
    let (mantissa, exponent) = (&v[..at], &v[at + 1..]);
    let exponent: i32 = exponent.parse().ok()?;
    if exponent.unsigned_abs() as usize > mantissa.len() + 80 {
        return None;
    }
    let (sign, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // The digits, and where the point falls among them once the exponent moves it.
    let digits = format!("{int}{frac}");
    let point = i32::try_from(int.len()).ok()? + exponent;
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    };
    Some(format!("{sign}{plain}"))
}

/// `2024-01-01 10:00:00` (Hive's spelling) as ISO; a date alone as its midnight
/// (`ts=2024-03-01`).
fn iso_timestamp(v: &str) -> String {
    let iso = v.replacen(' ', "T", 1);
    if iso.contains('T') {
        iso
    } else {
        format!("{iso}T00:00:00")
    }
}

/// The human forms of year, month and hour partitions Java's paths hold (`2024`, `2024-01`,
/// `2024-01-01-10`).
fn human_time(v: &str, ty: &PrimitiveType, transform: &Transform) -> Option<Datum> {
    if *ty != PrimitiveType::Int {
        return None;
    }
    match transform {
        Transform::Year if v.len() == 4 => v
            .parse::<i32>()
            .ok()
            .and_then(|y| y.checked_sub(1970))
            .map(Datum::int),
        Transform::Month => {
            let (y, m) = v.split_once('-')?;
            let (y, m): (i32, i32) = (y.parse().ok()?, m.parse().ok()?);
            if !(1..=12).contains(&m) {
                return None;
            }
            y.checked_sub(1970)?
                .checked_mul(12)?
                .checked_add(m - 1)
                .map(Datum::int)
        }
        Transform::Hour => {
            let (date, hour) = v.rsplit_once('-')?;
            let days = match Datum::date_from_str(date).ok()?.literal() {
                iceberg::spec::PrimitiveLiteral::Int(d) => *d,
                _ => return None,
            };
            let h: i32 = hour.parse().ok()?;
            if !(0..24).contains(&h) {
                return None;
            }
            days.checked_mul(24)?.checked_add(h).map(Datum::int)
        }
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
            parse("650", &PrimitiveType::Int, &Transform::Month),
            Some(Datum::int(650))
        );
        // Overflowing text is no value, not a wrapped one.
        assert_eq!(
            parse("2147483647-01", &PrimitiveType::Int, &Transform::Month),
            None
        );
        assert_eq!(
            parse(
                "2024-01-01 10:00:00",
                &PrimitiveType::Timestamptz,
                &Transform::Identity
            ),
            None
        );
        assert!(
            parse(
                "2024-01-01T10:00:00+02:00",
                &PrimitiveType::Timestamptz,
                &Transform::Identity
            )
            .is_some()
        );
        assert_eq!(
            parse(
                "1970-01-02",
                &PrimitiveType::Timestamp,
                &Transform::Identity
            ),
            Some(Datum::timestamp_micros(86_400_000_000))
        );
        assert_eq!(
            parse("a b+c", &PrimitiveType::String, &Transform::Identity),
            Some(Datum::string("a b+c"))
        );
    }

    /// A decimal folder is read at the column's scale when that is exact (`1.5`, `2`, `-0.5`
    /// for `decimal(10,2)`), and is no value of the column when it is not (`1.555`).
    #[test]
    fn decimal_folders_take_the_columns_scale_when_exact() {
        let ty = PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        };
        let text = |v: &str| parse(v, &ty, &Transform::Identity).map(|d| d.to_human_string());
        assert_eq!(text("1.50"), Some("1.50".into()));
        assert_eq!(text("1.5"), Some("1.50".into()));
        assert_eq!(text("2"), Some("2.00".into()));
        assert_eq!(text("-0.5"), Some("-0.50".into()));
        assert_eq!(text("1.500"), Some("1.50".into()));
        assert_eq!(text("1.555"), None);
        assert_eq!(text("x"), None);
        assert_eq!(text("+1.5"), Some("1.50".into()));
        assert_eq!(text(".5"), Some("0.50".into()));
        assert_eq!(text("-.5"), Some("-0.50".into()));
        assert_eq!(text("5."), Some("5.00".into()));
        // An exponent as Java's BigDecimal reads it (its toString writes 1E-10; fuzzer seeds
        // 500051 and 500089); iceberg's parser read 25e2 as 25.
        assert_eq!(text("25e2"), Some("2500.00".into()));
        assert_eq!(text("1E+3"), Some("1000.00".into()));
        assert_eq!(text("-1.5E-1"), Some("-0.15".into()));
        assert_eq!(text("1E-2"), Some("0.01".into()));
        assert_eq!(text("1E-3"), None);
        assert_eq!(text("1.5e0"), Some("1.50".into()));
        assert_eq!(text("1e"), None);
        assert_eq!(text("e5"), None);
        assert_eq!(text("1e2.5"), None);
        assert_eq!(text("1e999"), None);
        // A long mantissa may carry a large exponent (Java reads it; 10 here).
        assert_eq!(
            text(&format!("1{}E-90", "0".repeat(91))),
            Some("10.00".into())
        );
        assert_eq!(text("-"), None);
        let fine = PrimitiveType::Decimal {
            precision: 38,
            scale: 10,
        };
        assert_eq!(
            parse("-1E-10", &fine, &Transform::Identity).map(|d| d.literal().clone()),
            Some(iceberg::spec::PrimitiveLiteral::Int128(-1))
        );
        let whole = PrimitiveType::Decimal {
            precision: 5,
            scale: 0,
        };
        assert_eq!(
            parse("7.0", &whole, &Transform::Identity).map(|d| d.to_human_string()),
            Some("7".into())
        );
    }

    /// Decimal `truncate` folders (the corpus `transforms` table's `amount_trunc=-499.70`)
    /// are values of the field, not refused: iceberg's transform answers with scale 0, which
    /// made each differ from itself. The partition shows as written.
    #[test]
    fn decimal_truncate_folders_are_their_own_truncation() -> Result<()> {
        use iceberg::spec::{NestedField, Type, UnboundPartitionSpec};
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(
                    1,
                    "amount",
                    Type::Primitive(PrimitiveType::Decimal {
                        precision: 10,
                        scale: 2,
                    }),
                )
                .into(),
            ])
            .build()?;
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(1, "amount_trunc", Transform::Truncate(10))?
            .build()
            .bind(schema.clone())?;
        // The file holds the column (no statistics: the folder decides).
        let present = HashSet::from([1]);
        for (folder, shown) in [
            ("amount_trunc=-499.70", "amount_trunc=-499.70"),
            ("amount_trunc=1.30", "amount_trunc=1.30"),
            ("amount_trunc=0.00", "amount_trunc=0.00"),
            ("amount=1.37", "amount_trunc=1.30"),
        ] {
            let relative = format!("t/{folder}/f.parquet");
            let p = partition_of("f", &relative, &spec, &schema, &HashMap::new(), &present)?;
            assert_eq!(p.display, shown, "{folder}");
        }
        let not_truncated = partition_of(
            "f",
            "t/amount_trunc=1.37/f.parquet",
            &spec,
            &schema,
            &HashMap::new(),
            &present,
        );
        assert!(not_truncated.is_err());
        Ok(())
    }

    /// Trees Java and PyIceberg write spell a NULL partition `k=null` (the corpus tables with
    /// NULL partitions): NULL for a type `null` is no value of, and for a string when the
    /// statistics say the rows are NULL; a string column with `null` rows keeps the text.
    #[test]
    fn java_null_folders_are_null() -> Result<()> {
        use crate::metrics::ColumnStats;
        use iceberg::spec::{NestedField, Type, UnboundPartitionSpec};
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "n", Type::Primitive(PrimitiveType::Int)).into(),
                NestedField::optional(2, "city", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(1, "n", Transform::Identity)?
            .add_partition_field(2, "city", Transform::Identity)?
            .build()
            .bind(schema.clone())?;
        let present = HashSet::from([1, 2]);
        let stats = |city: Option<&str>| {
            let n = ColumnStats {
                size: 1,
                values: 2,
                nulls: Some(2),
                lower: None,
                upper: None,
                exact: true,
            };
            let c = ColumnStats {
                size: 1,
                values: 2,
                nulls: Some(if city.is_some() { 0 } else { 2 }),
                lower: city.map(Datum::string),
                upper: city.map(Datum::string),
                exact: true,
            };
            HashMap::from([(1, n), (2, c)])
        };
        let p = partition_of(
            "f",
            "t/n=null/city=null/f.parquet",
            &spec,
            &schema,
            &stats(None),
            &present,
        )?;
        assert_eq!(p.display, "n=null/city=null");
        assert_eq!(p.tuple, Struct::from_iter([None, None]));
        let text = partition_of(
            "f",
            "t/n=null/city=null/f.parquet",
            &spec,
            &schema,
            &stats(Some("null")),
            &present,
        )?;
        assert_eq!(text.display, "n=null/city=\"null\"");
        // Java writes NULL as `null` under a truncating transform too.
        let short = UnboundPartitionSpec::builder()
            .add_partition_field(2, "city_trunc", Transform::Truncate(2))?
            .build()
            .bind(schema.clone())?;
        let p = partition_of(
            "f",
            "t/city_trunc=null/f.parquet",
            &short,
            &schema,
            &stats(None),
            &present,
        )?;
        assert_eq!(p.tuple, Struct::from_iter([None]));
        Ok(())
    }
}
