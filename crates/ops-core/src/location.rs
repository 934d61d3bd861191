//! Where a new data file goes: Java's `LocationProviders`, so every writer of ours places files
//! where Java would, and never outside the table's data location.
//!
//! iceberg 0.10.1's `DefaultLocationGenerator` joins partition names and values raw
//! (`PartitionSpec::partition_to_path`), so a row value decided where the process wrote: `a/b`
//! became two folders, `#` started a URI fragment for every reader that parses locations as URIs
//! (PyIceberg could no longer read the table), and `../../x` wrote outside the table. Here:
//!
//! - **the partition path** is Java's `PartitionSpec.partitionToPath`: `name=value` per field,
//!   both URL-encoded as `java.net.URLEncoder.encode(s, UTF-8)` does (letters, digits and
//!   `.-*_` kept, space as `+`, every other byte `%XX`), the value being the transform's
//!   `toHumanString` ([`human_string`]; `null` for a NULL);
//! - **the default layout** (`LocationProviders.DefaultLocationProvider`):
//!   `<data location>/<partition path>/<file>`, the data location being `write.data.path`, else
//!   the older `write.folder-storage.path`, else `<table location>/data`;
//! - **the object-storage layout** (`write.object-storage.enabled=true`,
//!   `ObjectStoreLocationProvider` as of Java 1.7): `<data location>/<entropy>/[<context>/]…`,
//!   the entropy being the low 20 bits of the murmur3 (x86, 32-bit, seed 0) hash of the
//!   file's relative path as binary digits in folders of 4, 4, 4 and 8
//!   (`1010/0110/1100/10011101`); `write.object-storage.partitioned-paths=false` drops the
//!   partition path and joins the last 8 digits to the file name with `-`; a data location
//!   outside the table location adds `<parent>/<table>` of the table location as context; the
//!   deprecated `write.object-storage.path` is read between `write.data.path` and
//!   `write.folder-storage.path`, as Java 1.7 and 1.8 do (Java 1.9 refuses both deprecated
//!   properties; we keep writing where older writers of such a table did). A table at the top of
//!   a bucket (`s3://b/t`) gets the context `t` where Hadoop's `Path` gives Java `/t` and a
//!   doubled slash;
//! - an unpartitioned spec (no fields, or every field `void`) gives no partition path, as Java's
//!   writers call the provider without a partition then.
//!
//! Every path is checked to stay inside the data location before a writer opens it
//! ([`DataLocations::path`]). With the escaping above no value can leave it, so the check is a
//! second line that refuses, naming the partition value, rather than trusting the encoder.
//!
//! PyIceberg 0.12 (`PartitionKey.to_path`) differs from Java, which is the reference here:
//! it quotes with `urllib.parse.quote_plus`, which keeps `~` and encodes `*` (Java: the
//! opposite); its value texts are Python's (`nan`, `inf`, `1e+20` where Java writes `NaN`,
//! `Infinity`, `1.0E20`), and times and timestamps go through `isoformat`, which prints six
//! fraction digits (`00:00:01.500000`, `…T00:00:00.500000+00:00`) where Java prints `00:00:01.500`
//! (`LocalTime.toString`) and `…T00:00:00.5+00:00` (`ISO_LOCAL_DATE_TIME`). Java before 1.7
//! printed timestamps with `toString` (no zero seconds, fractions in groups of three, `Z` for
//! UTC); current Java prints as here. Floats and doubles print as JDK 19 and later do (the
//! shortest decimal); JDK 17 and older print more digits for some doubles and for about one
//! float in five (`1.34225E8` as `1.34224992E8`), so a float partition's folder names depend on
//! the JVM that wrote them. Files keep whatever path their writer chose, so tables written by
//! both read the same; only the folder names of new files differ.

use std::fmt::Write as _;

use base64::Engine as _;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeDelta, Timelike};
use iceberg::spec::{
    Literal, PartitionKey, PartitionSpec, PrimitiveLiteral, PrimitiveType, Struct, StructType,
    TableMetadata, Transform, Type,
};

use crate::{Error, Result};

/// Table property: where data files go (Java's `TableProperties.WRITE_DATA_LOCATION`).
pub const WRITE_DATA_PATH: &str = "write.data.path";
/// Table property: the older name of [`WRITE_DATA_PATH`], still read by Java.
pub const WRITE_FOLDER_STORAGE_PATH: &str = "write.folder-storage.path";
/// Table property: the deprecated data location of the object-storage layout.
pub const OBJECT_STORE_PATH: &str = "write.object-storage.path";
/// Table property: the object-storage layout on (`true`) or off (default).
pub const OBJECT_STORE_ENABLED: &str = "write.object-storage.enabled";
/// Table property: whether the object-storage layout keeps partition folders (default `true`).
pub const OBJECT_STORE_PARTITIONED_PATHS: &str = "write.object-storage.partitioned-paths";
/// Table property naming a Java `LocationProvider` class, which only a JVM can run.
pub const LOCATION_PROVIDER_IMPL: &str = "write.location-provider.impl";

/// Bits of the murmur3 hash kept as entropy, and how they are cut into folders (Java's
/// `HASH_BINARY_STRING_BITS`, `ENTROPY_DIR_LENGTH`, `ENTROPY_DIR_DEPTH`).
const HASH_BITS: usize = 20;
const ENTROPY_DIR_LENGTH: usize = 4;
const ENTROPY_DIR_DEPTH: usize = 3;

/// Where a table's new data files go (Java's `LocationProviders.locationsFor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLocations {
    /// The folder every new data file goes under, without a trailing `/`.
    data_location: String,
    layout: Layout,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// `<data>/<partition path>/<file>`.
    Default,
    /// `<data>/<entropy>/[<context>/]<partition path>/<file>`.
    ObjectStore {
        /// `<parent>/<table>` of the table location, when the data location is outside it.
        context: Option<String>,
        /// `write.object-storage.partitioned-paths`.
        partitioned_paths: bool,
    },
}

impl DataLocations {
    /// The layout `metadata`'s properties ask for.
    ///
    /// A `write.location-provider.impl` names Java code this process cannot run: refused
    /// rather than writing where that class would not.
    pub fn for_table(metadata: &TableMetadata) -> Result<Self> {
        Self::new(metadata.location(), metadata.properties())
    }

    /// [`Self::for_table`] from a table location and its properties.
    pub fn new(
        table_location: &str,
        properties: &std::collections::HashMap<String, String>,
    ) -> Result<Self> {
        let table_location = table_location.trim_end_matches('/');
        if let Some(class) = properties.get(LOCATION_PROVIDER_IMPL) {
            return Err(Error::InvalidInput(format!(
                "the table at {table_location} names a Java location provider \
                 ({LOCATION_PROVIDER_IMPL}={class}), which iceberg-ops cannot run: remove the \
                 property to write with Iceberg's default layout, or set \
                 {OBJECT_STORE_ENABLED}=true for the object-storage layout"
            )));
        }
        let object_store = flag(properties, OBJECT_STORE_ENABLED, false);
        let configured = properties
            .get(WRITE_DATA_PATH)
            .or_else(|| {
                object_store
                    .then(|| properties.get(OBJECT_STORE_PATH))
                    .flatten()
            })
            .or_else(|| properties.get(WRITE_FOLDER_STORAGE_PATH));
        let data_location = match configured {
            Some(l) => l.trim_end_matches('/').to_string(),
            None => format!("{table_location}/data"),
        };
        if data_location.is_empty() {
            return Err(Error::InvalidInput(format!(
                "the table at {table_location} has an empty data location ({WRITE_DATA_PATH}): \
                 set it to a folder, or remove it to write under {table_location}/data"
            )));
        }
        let layout = if object_store {
            // Java compares the strings: a data location merely starting with the table
            // location's text counts as inside it.
            let context = if data_location.starts_with(table_location) {
                None
            } else {
                match path_context(table_location) {
                    c if c.is_empty() => {
                        return Err(Error::InvalidInput(format!(
                            "the table at {table_location} has no folder name to put beside \
                             its data in {data_location} ({OBJECT_STORE_ENABLED}): give the \
                             table a location below the bucket, or a {WRITE_DATA_PATH} inside \
                             it"
                        )));
                    }
                    c => Some(c),
                }
            };
            Layout::ObjectStore {
                context,
                partitioned_paths: flag(properties, OBJECT_STORE_PARTITIONED_PATHS, true),
            }
        } else {
            Layout::Default
        };
        Ok(Self {
            data_location,
            layout,
        })
    }

    /// The folder every new data file goes under, without a trailing `/`.
    pub fn data_location(&self) -> &str {
        &self.data_location
    }

    /// The location of a new data file named `file_name` in partition `partition` (`None`, or a
    /// key of an unpartitioned spec, for no partition path).
    ///
    /// Refused, naming the partition value, if the result would not lie inside the data
    /// location; nothing has been written then.
    pub fn path(&self, partition: Option<&PartitionKey>, file_name: &str) -> Result<String> {
        let partition_path = match partition {
            Some(key) if !key.spec().is_unpartitioned() => Some(partition_to_path(
                key.spec(),
                &key.spec().partition_type(key.schema())?,
                key.data(),
            )?),
            _ => None,
        };
        let path = self.join(partition_path.as_deref(), file_name);
        self.check_inside(&path, partition)?;
        Ok(path)
    }

    fn join(&self, partition_path: Option<&str>, file_name: &str) -> String {
        let data = &self.data_location;
        match (&self.layout, partition_path) {
            (Layout::Default, Some(p)) => format!("{data}/{p}/{file_name}"),
            (Layout::Default, None) => format!("{data}/{file_name}"),
            (
                Layout::ObjectStore {
                    context,
                    partitioned_paths,
                },
                partition_path,
            ) => {
                let relative = match (partition_path, partitioned_paths) {
                    (Some(p), true) => format!("{p}/{file_name}"),
                    _ => file_name.to_string(),
                };
                let hash = entropy_dirs(&relative);
                match (context, partitioned_paths) {
                    (Some(c), _) => format!("{data}/{hash}/{c}/{relative}"),
                    (None, true) => format!("{data}/{hash}/{relative}"),
                    // Without partition folders the last part of the entropy joins the name.
                    (None, false) => format!("{data}/{hash}-{relative}"),
                }
            }
        }
    }

    /// Refuses `path` unless it names a file strictly below the data location: no empty, `.`
    /// or `..` segment after it (a reader or an object store would resolve those elsewhere).
    fn check_inside(&self, path: &str, partition: Option<&PartitionKey>) -> Result<()> {
        let inside = path
            .strip_prefix(&self.data_location)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| {
                rest.split('/')
                    .all(|segment| !matches!(segment, "" | "." | ".."))
            });
        if inside {
            return Ok(());
        }
        let values = partition
            .map(|k| {
                let types = k.spec().partition_type(k.schema()).ok();
                k.spec()
                    .fields()
                    .iter()
                    .zip(k.data().iter())
                    .enumerate()
                    .map(|(i, (f, v))| {
                        let text = types
                            .as_ref()
                            .and_then(|t| t.fields().get(i))
                            .and_then(|t| human_string(&f.transform, &t.field_type, v).ok())
                            .unwrap_or_else(|| format!("{v:?}"));
                        format!("{}={text:?}", f.name)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|| "none".to_string());
        Err(Error::InvalidInput(format!(
            "refusing to write a data file at {path}: it is not inside the table's data \
             location {} (partition values: {values}); nothing was written for it",
            self.data_location
        )))
    }
}

/// A boolean table property as Java's `PropertyUtil.propertyAsBoolean` reads it
/// (`Boolean.parseBoolean`: `true` in any case is true, anything else false).
fn flag(properties: &std::collections::HashMap<String, String>, key: &str, default: bool) -> bool {
    properties
        .get(key)
        .map_or(default, |v| v.eq_ignore_ascii_case("true"))
}

/// `<parent name>/<name>` of a table location (Java's `pathContext`, through Hadoop's `Path`).
fn path_context(table_location: &str) -> String {
    // Hadoop's `Path` drops a scheme and authority; the names are the last two segments.
    let path = match table_location.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p),
        None => table_location,
    };
    let mut names = path.rsplit('/').filter(|s| !s.is_empty());
    match (names.next(), names.next()) {
        (Some(name), Some(parent)) => format!("{parent}/{name}"),
        (Some(name), None) => name.to_string(),
        _ => String::new(),
    }
}

/// The entropy folders of the object-storage layout for `relative` (Java's `computeHash` and
/// `dirsFromHash`).
pub fn entropy_dirs(relative: &str) -> String {
    let hash = murmur3::murmur3_32(&mut relative.as_bytes(), 0).unwrap_or(0);
    // Java sets the top bit so `toBinaryString` keeps leading zeros, then keeps the last 20.
    let bits = format!("{:032b}", hash | 0x8000_0000);
    let bits = &bits[bits.len() - HASH_BITS..];
    let mut out = String::with_capacity(HASH_BITS + ENTROPY_DIR_DEPTH);
    for depth in 0..ENTROPY_DIR_DEPTH {
        if depth > 0 {
            out.push('/');
        }
        out.push_str(&bits[depth * ENTROPY_DIR_LENGTH..(depth + 1) * ENTROPY_DIR_LENGTH]);
    }
    out.push('/');
    out.push_str(&bits[ENTROPY_DIR_DEPTH * ENTROPY_DIR_LENGTH..]);
    out
}

/// Java's `PartitionSpec.partitionToPath`: `name=value` per field joined by `/`, both escaped
/// by [`url_encode`], the value being [`human_string`]. `partition_type` is the spec's
/// partition type (the result type of each field).
pub fn partition_to_path(
    spec: &PartitionSpec,
    partition_type: &StructType,
    data: &Struct,
) -> Result<String> {
    let fields = spec.fields();
    let types = partition_type.fields();
    if fields.len() != data.fields().len() || fields.len() != types.len() {
        return Err(Error::InvalidInput(format!(
            "a partition tuple of {} values does not fit spec {} ({} fields)",
            data.fields().len(),
            spec.spec_id(),
            fields.len()
        )));
    }
    let mut out = String::new();
    for (i, ((field, value), ty)) in fields.iter().zip(data.iter()).zip(types).enumerate() {
        if i > 0 {
            out.push('/');
        }
        let text = human_string(&field.transform, &ty.field_type, value).map_err(|why| {
            Error::InvalidInput(format!(
                "partition field '{}' of spec {}: {why}",
                field.name,
                spec.spec_id()
            ))
        })?;
        url_encode_into(&mut out, &field.name);
        out.push('=');
        url_encode_into(&mut out, &text);
    }
    Ok(out)
}

/// `java.net.URLEncoder.encode(text, "UTF-8")`.
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    url_encode_into(&mut out, text);
    out
}

fn url_encode_into(out: &mut String, text: &str) {
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
}

/// Java's `Transform.toHumanString(type, value)` for a partition value of result type
/// `result_type` (`null` for a NULL); the error says what did not fit.
pub fn human_string(
    transform: &Transform,
    result_type: &Type,
    value: Option<&Literal>,
) -> std::result::Result<String, String> {
    let Some(value) = value else {
        return Ok("null".to_string());
    };
    if *transform == Transform::Void {
        return Ok("null".to_string());
    }
    let Literal::Primitive(value) = value else {
        return Err(format!(
            "a partition value must be primitive, not {value:?}"
        ));
    };
    let mismatch = || {
        format!(
            "value {value:?} does not fit {result_type} ({transform}), or lies outside the \
             years -262143 to 262142 this process can print"
        )
    };
    match (transform, value) {
        (Transform::Year, PrimitiveLiteral::Int(years)) => {
            Ok(format!("{:04}", 1970_i64 + i64::from(*years)))
        }
        (Transform::Month, PrimitiveLiteral::Int(months)) => {
            let months = i64::from(*months);
            Ok(format!(
                "{:04}-{:02}",
                1970 + months.div_euclid(12),
                1 + months.rem_euclid(12)
            ))
        }
        (Transform::Day, PrimitiveLiteral::Int(days)) => human_day(*days).ok_or_else(mismatch),
        (Transform::Hour, PrimitiveLiteral::Int(hours)) => {
            let time = DateTime::UNIX_EPOCH
                .naive_utc()
                .checked_add_signed(TimeDelta::try_hours(i64::from(*hours)).ok_or_else(mismatch)?)
                .ok_or_else(mismatch)?;
            Ok(format!(
                "{:04}-{:02}-{:02}-{:02}",
                time.year(),
                time.month(),
                time.day(),
                time.hour()
            ))
        }
        (Transform::Bucket(_), PrimitiveLiteral::Int(n)) => Ok(n.to_string()),
        (Transform::Identity | Transform::Truncate(_), value) => {
            let Type::Primitive(ty) = result_type else {
                return Err(mismatch());
            };
            identity_string(ty, value).ok_or_else(mismatch)
        }
        _ => Err(mismatch()),
    }
}

/// Java's `Identity.toHumanString` (also what `Truncate` prints) for a value of type `ty`.
fn identity_string(ty: &PrimitiveType, value: &PrimitiveLiteral) -> Option<String> {
    use PrimitiveLiteral as L;
    use PrimitiveType as T;
    Some(match (ty, value) {
        (T::Boolean, L::Boolean(b)) => b.to_string(),
        (T::Int, L::Int(n)) => n.to_string(),
        (T::Long, L::Long(n)) => n.to_string(),
        (T::Float, L::Float(f)) => java_float(f.0),
        (T::Double, L::Double(f)) => java_double(f.0),
        (T::Decimal { scale, .. }, L::Int128(unscaled)) => big_decimal(*unscaled, *scale),
        (T::Date, L::Int(days)) => human_day(*days)?,
        (T::Time, L::Long(micros)) => local_time_string(*micros)?,
        (T::Timestamp, L::Long(micros)) => iso_timestamp(micros_to_datetime(*micros)?),
        (T::Timestamptz, L::Long(micros)) => {
            format!("{}+00:00", iso_timestamp(micros_to_datetime(*micros)?))
        }
        (T::TimestampNs, L::Long(nanos)) => iso_timestamp(nanos_to_datetime(*nanos)),
        (T::TimestamptzNs, L::Long(nanos)) => {
            format!("{}+00:00", iso_timestamp(nanos_to_datetime(*nanos)))
        }
        (T::String, L::String(s)) => s.clone(),
        (T::Uuid, L::UInt128(v)) => uuid::Uuid::from_u128(*v).hyphenated().to_string(),
        (T::Fixed(_) | T::Binary, L::Binary(b)) => {
            base64::engine::general_purpose::STANDARD.encode(b)
        }
        _ => return None,
    })
}

/// Java's `TransformUtil.humanDay`: `%04d-%02d-%02d` of the day `days` after 1970-01-01.
fn human_day(days: i32) -> Option<String> {
    let day = NaiveDate::from_ymd_opt(1970, 1, 1)?
        .checked_add_signed(TimeDelta::try_days(i64::from(days))?)?;
    Some(format!(
        "{:04}-{:02}-{:02}",
        day.year(),
        day.month(),
        day.day()
    ))
}

fn micros_to_datetime(micros: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc())
}

fn nanos_to_datetime(nanos: i64) -> NaiveDateTime {
    DateTime::from_timestamp_nanos(nanos).naive_utc()
}

/// `DateTimeFormatter.ISO_LOCAL_DATE_TIME`: the year padded to 4 digits (`+` past 9999, `-`
/// before year 0), seconds always, and only the fraction digits needed.
fn iso_timestamp(t: NaiveDateTime) -> String {
    let year = t.year();
    let mut out = if year > 9999 {
        format!("+{year}")
    } else if year < 0 {
        format!("-{:04}", -i64::from(year))
    } else {
        format!("{year:04}")
    };
    let _ = write!(
        out,
        "-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let nanos = t.nanosecond();
    if nanos > 0 {
        let digits = format!("{nanos:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

/// `LocalTime.toString()` (Java's `TransformUtil.humanTime`): `HH:mm`, seconds only when
/// there are seconds or a fraction, the fraction in groups of three digits.
fn local_time_string(micros: i64) -> Option<String> {
    if !(0..86_400_000_000).contains(&micros) {
        return None;
    }
    let seconds = micros / 1_000_000;
    let nanos = (micros % 1_000_000) * 1_000;
    let mut out = format!("{:02}:{:02}", seconds / 3600, seconds / 60 % 60);
    if seconds % 60 > 0 || nanos > 0 {
        let _ = write!(out, ":{:02}", seconds % 60);
    }
    if nanos > 0 {
        if nanos % 1_000_000 == 0 {
            let _ = write!(out, ".{:03}", nanos / 1_000_000);
        } else if nanos % 1_000 == 0 {
            let _ = write!(out, ".{:06}", nanos / 1_000);
        } else {
            let _ = write!(out, ".{nanos:09}");
        }
    }
    Some(out)
}

/// `BigDecimal.toString()` of `unscaled × 10^-scale`: plain unless the adjusted exponent is
/// below -6, then scientific (`1E-10`, `-1.5E-8`, `0E-10`).
fn big_decimal(unscaled: i128, scale: u32) -> String {
    let coefficient = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = i64::from(scale);
    let digits = coefficient.len() as i64;
    let adjusted = digits - 1 - scale;
    if adjusted >= -6 {
        if scale == 0 {
            return format!("{sign}{coefficient}");
        }
        if digits > scale {
            let (int, frac) = coefficient.split_at((digits - scale) as usize);
            return format!("{sign}{int}.{frac}");
        }
        let zeros = "0".repeat((scale - digits) as usize);
        return format!("{sign}0.{zeros}{coefficient}");
    }
    let (first, rest) = coefficient.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    let exp_sign = if adjusted >= 0 { "+" } else { "-" };
    format!("{sign}{first}{point}{rest}E{exp_sign}{}", adjusted.abs())
}

/// `Double.toString` of JDK 19 and later, the shortest decimal that rounds to the value (the
/// expected texts in the tests were printed by a JVM). JDK 17 and older printed one more digit
/// for a few values (`1.0E23` as `9.999999999999999E22`, JDK-4511638); tables written by those
/// JVMs name such partitions differently, which only changes where new files go.
fn java_double(v: f64) -> String {
    java_floating(
        v.is_nan(),
        v.is_infinite(),
        v.is_sign_negative(),
        v == 0.0,
        format!("{v:e}"),
        || {
            let two = format!("{v:.1e}");
            (two.parse::<f64>().ok() == Some(v)).then_some(two)
        },
    )
}

/// `Float.toString` (JDK 19 and later).
fn java_float(v: f32) -> String {
    java_floating(
        v.is_nan(),
        v.is_infinite(),
        v.is_sign_negative(),
        v == 0.0,
        format!("{v:e}"),
        || {
            let two = format!("{v:.1e}");
            (two.parse::<f32>().ok() == Some(v)).then_some(two)
        },
    )
}

/// Java's rendering of a floating-point value whose shortest round-tripping digits are
/// `shortest` (Rust's `{:e}`). Java picks the shortest decimal that rounds to the value, but
/// where that has one digit it takes the closest of the one- and two-digit ones
/// (`Double.MIN_VALUE` is `4.9E-324`, not `5E-324`): `two_digits` is the correctly rounded
/// two-digit decimal if it rounds back to the value. Then plain notation for a decimal exponent
/// from -3 to 6, else `d.dddE<n>`.
fn java_floating(
    nan: bool,
    infinite: bool,
    negative: bool,
    zero: bool,
    shortest: String,
    two_digits: impl FnOnce() -> Option<String>,
) -> String {
    if nan {
        return "NaN".to_string();
    }
    let sign = if negative { "-" } else { "" };
    if infinite {
        return format!("{sign}Infinity");
    }
    if zero {
        return format!("{sign}0.0");
    }
    let mut text = shortest;
    let (mantissa, _) = split_scientific(&text);
    if mantissa.trim_start_matches('-').len() == 1
        && let Some(two) = two_digits()
    {
        text = two;
    }
    let (mantissa, exponent) = split_scientific(&text);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = match digits.trim_end_matches('0') {
        "" => "0".to_string(),
        d => d.to_string(),
    };
    if (-3..=6).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            let (int, frac) = if digits.len() > int_len {
                (digits[..int_len].to_string(), digits[int_len..].to_string())
            } else {
                (
                    format!("{digits}{}", "0".repeat(int_len - digits.len())),
                    "0".to_string(),
                )
            };
            return format!("{sign}{int}.{frac}");
        }
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() { "0" } else { rest };
    format!("{sign}{first}.{rest}E{exponent}")
}

/// `-1.25e-3` → (`-1.25`, -3).
fn split_scientific(text: &str) -> (&str, i32) {
    match text.split_once('e') {
        Some((m, e)) => (m, e.parse().unwrap_or(0)),
        None => (text, 0),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use iceberg::spec::{NestedField, Schema, UnboundPartitionField};

    use super::*;

    #[test]
    fn url_encoding_is_javas() {
        assert_eq!(url_encode("a/b"), "a%2Fb");
        assert_eq!(url_encode("sp ace"), "sp+ace");
        assert_eq!(url_encode("#?&"), "%23%3F%26");
        assert_eq!(url_encode("50%"), "50%25");
        assert_eq!(url_encode("ü"), "%C3%BC");
        assert_eq!(url_encode("a%2Fb"), "a%252Fb");
        assert_eq!(url_encode(".."), "..");
        assert_eq!(url_encode(""), "");
        // URLEncoder keeps `*` and encodes `~` (quote_plus does the opposite).
        assert_eq!(url_encode("*~+=._-"), "*%7E%2B%3D._-");
        // As a JVM's URLEncoder.encode(s, "UTF-8") printed it.
        assert_eq!(
            url_encode("a/b sp#?&50%ü*~+=._-"),
            "a%2Fb+sp%23%3F%2650%25%C3%BC*%7E%2B%3D._-"
        );
    }

    #[test]
    fn doubles_print_as_java() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (1e20, "1.0E20"),
            (1e7, "1.0E7"),
            (9_999_999.0, "9999999.0"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (123.456, "123.456"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (f64::MAX, "1.7976931348623157E308"),
            (4.9e-324, "4.9E-324"),
            (-1.5e-10, "-1.5E-10"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-5, "1.0E-5"),
            (2e22, "2.0E22"),
            (123_456_789.123, "1.23456789123E8"),
        ];
        for &(v, java) in cases {
            assert_eq!(java_double(v), java, "{v:e}");
        }
        assert_eq!(java_float(1.1), "1.1");
        assert_eq!(java_float(f32::MAX), "3.4028235E38");
        assert_eq!(java_float(1.4e-45), "1.4E-45");
        assert_eq!(java_float(100.0), "100.0");
        assert_eq!(java_float(0.3), "0.3");
        assert_eq!(java_float(1e10), "1.0E10");
        assert_eq!(java_float(1.2345), "1.2345");
        assert_eq!(java_float(1e-4), "1.0E-4");
        // JDK 19 and later print the shortest decimal (JDK-4511638): JDK 17 printed
        // 9.999999999999999E22 here.
        assert_eq!(java_double(1e23), "1.0E23");
    }

    #[test]
    fn decimals_print_as_big_decimal() {
        assert_eq!(big_decimal(12345, 2), "123.45");
        assert_eq!(big_decimal(-12345, 2), "-123.45");
        assert_eq!(big_decimal(5, 3), "0.005");
        assert_eq!(big_decimal(0, 2), "0.00");
        assert_eq!(big_decimal(0, 10), "0E-10");
        assert_eq!(big_decimal(1, 10), "1E-10");
        assert_eq!(big_decimal(-15, 9), "-1.5E-8");
        assert_eq!(big_decimal(1, 6), "0.000001");
        assert_eq!(big_decimal(7, 0), "7");
        let max = 10_i128.pow(38) - 1;
        assert_eq!(
            big_decimal(max, 38),
            "0.99999999999999999999999999999999999999"
        );
        assert_eq!(big_decimal(-max, 0), format!("-{max}"));
    }

    #[test]
    fn times_print_as_java() {
        assert_eq!(human_day(0).as_deref(), Some("1970-01-01"));
        assert_eq!(human_day(-719_162).as_deref(), Some("0001-01-01"));
        assert_eq!(human_day(2_932_896).as_deref(), Some("9999-12-31"));
        assert_eq!(local_time_string(0).as_deref(), Some("00:00"));
        assert_eq!(local_time_string(61_000_000).as_deref(), Some("00:01:01"));
        assert_eq!(
            local_time_string(1_500_000).as_deref(),
            Some("00:00:01.500")
        );
        assert_eq!(local_time_string(1).as_deref(), Some("00:00:00.000001"));
        assert_eq!(
            local_time_string(3_723_000_000).as_deref(),
            Some("01:02:03")
        );
        let ts = |micros| iso_timestamp(micros_to_datetime(micros).unwrap_or_default());
        assert_eq!(ts(0), "1970-01-01T00:00:00");
        assert_eq!(ts(500_000), "1970-01-01T00:00:00.5");
        assert_eq!(ts(-1), "1969-12-31T23:59:59.999999");
        assert_eq!(ts(-62_135_596_800_000_000), "0001-01-01T00:00:00");
        assert_eq!(ts(253_402_300_799_999_999), "9999-12-31T23:59:59.999999");
        assert_eq!(ts(123_456_789), "1970-01-01T00:02:03.456789");
        let ty = Type::Primitive(PrimitiveType::Timestamptz);
        let v = Literal::timestamp(1_000_000);
        assert_eq!(
            human_string(&Transform::Identity, &ty, Some(&v)).as_deref(),
            Ok("1970-01-01T00:00:01+00:00")
        );
        let int = Type::Primitive(PrimitiveType::Int);
        let month = |m| human_string(&Transform::Month, &int, Some(&Literal::int(m)));
        assert_eq!(month(-1).as_deref(), Ok("1969-12"));
        assert_eq!(month(0).as_deref(), Ok("1970-01"));
        let year = human_string(&Transform::Year, &int, Some(&Literal::int(-1969)));
        assert_eq!(year.as_deref(), Ok("0001"));
        let hour = human_string(&Transform::Hour, &int, Some(&Literal::int(-1)));
        assert_eq!(hour.as_deref(), Ok("1969-12-31-23"));
        assert_eq!(
            human_string(&Transform::Void, &int, Some(&Literal::int(3))).as_deref(),
            Ok("null")
        );
        assert_eq!(
            human_string(&Transform::Identity, &int, None).as_deref(),
            Ok("null")
        );
    }

    #[test]
    fn entropy_matches_javas_murmur3() {
        // Guava's murmur3_32_fixed of "" is 0, of "a" is 0x3c2569b2 (the reference vectors of
        // MurmurHash3_x86_32, seed 0).
        assert_eq!(entropy_dirs(""), "0000/0000/0000/00000000");
        // 0x3c2569b2: low 20 bits 0x569b2 = 0101 0110 1001 1011 0010.
        assert_eq!(entropy_dirs("a"), "0101/0110/1001/10110010");
    }

    fn key(values: Vec<Option<Literal>>) -> PartitionKey {
        let schema = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "p", Type::Primitive(PrimitiveType::String)).into(),
                    NestedField::optional(2, "n a/me", Type::Primitive(PrimitiveType::Long)).into(),
                ])
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let spec = PartitionSpec::builder(schema.clone())
            .add_unbound_field(
                UnboundPartitionField::builder()
                    .source_id(1)
                    .name("p".to_string())
                    .transform(Transform::Identity)
                    .build(),
            )
            .and_then(|b| {
                b.add_unbound_field(
                    UnboundPartitionField::builder()
                        .source_id(2)
                        .name("b/k".to_string())
                        .transform(Transform::Bucket(4))
                        .build(),
                )
            })
            .and_then(|b| b.build())
            .unwrap_or_else(|e| panic!("{e}"));
        PartitionKey::new(spec, schema, Struct::from_iter(values))
    }

    #[test]
    fn default_layout_escapes_names_and_values() -> Result<()> {
        let locations = DataLocations::new("s3://b/wh/t/", &HashMap::new())?;
        let k = key(vec![
            Some(Literal::string("../../x")),
            Some(Literal::int(3)),
        ]);
        assert_eq!(
            locations.path(Some(&k), "f.parquet")?,
            "s3://b/wh/t/data/p=..%2F..%2Fx/b%2Fk=3/f.parquet"
        );
        let k = key(vec![None, None]);
        assert_eq!(
            locations.path(Some(&k), "f.parquet")?,
            "s3://b/wh/t/data/p=null/b%2Fk=null/f.parquet"
        );
        assert_eq!(
            locations.path(None, "f.parquet")?,
            "s3://b/wh/t/data/f.parquet"
        );
        let moved = DataLocations::new(
            "s3://b/wh/t",
            &HashMap::from([(
                WRITE_FOLDER_STORAGE_PATH.to_string(),
                "s3://o/d/".to_string(),
            )]),
        )?;
        assert_eq!(moved.data_location(), "s3://o/d");
        let both = DataLocations::new(
            "s3://b/wh/t",
            &HashMap::from([
                (
                    WRITE_FOLDER_STORAGE_PATH.to_string(),
                    "s3://o/d".to_string(),
                ),
                (WRITE_DATA_PATH.to_string(), "s3://n/d".to_string()),
            ]),
        )?;
        assert_eq!(both.data_location(), "s3://n/d");
        Ok(())
    }

    #[test]
    fn object_storage_layout_is_javas() -> Result<()> {
        let props = HashMap::from([(OBJECT_STORE_ENABLED.to_string(), "true".to_string())]);
        let locations = DataLocations::new("s3://b/wh/db/t", &props)?;
        let k = key(vec![Some(Literal::string("a b")), Some(Literal::int(1))]);
        let relative = "p=a+b/b%2Fk=1/f.parquet";
        assert_eq!(
            locations.path(Some(&k), "f.parquet")?,
            format!("s3://b/wh/db/t/data/{}/{relative}", entropy_dirs(relative))
        );
        let mut props = props;
        props.insert(
            OBJECT_STORE_PARTITIONED_PATHS.to_string(),
            "false".to_string(),
        );
        let flat = DataLocations::new("s3://b/wh/db/t", &props)?;
        assert_eq!(
            flat.path(Some(&k), "f.parquet")?,
            format!(
                "s3://b/wh/db/t/data/{}-f.parquet",
                entropy_dirs("f.parquet")
            )
        );
        props.insert(WRITE_DATA_PATH.to_string(), "s3://other/x".to_string());
        let outside = DataLocations::new("s3://b/wh/db/t", &props)?;
        assert_eq!(
            outside.path(None, "f.parquet")?,
            format!("s3://other/x/{}/db/t/f.parquet", entropy_dirs("f.parquet"))
        );
        Ok(())
    }

    #[test]
    fn a_path_outside_the_data_location_is_refused() -> Result<()> {
        let locations = DataLocations::new("/wh/t", &HashMap::new())?;
        let k = key(vec![Some(Literal::string("x")), Some(Literal::int(1))]);
        for bad in [
            "/wh/t/data/../x/f",
            "/wh/t/data//f",
            "/wh/t/datax/f",
            "/wh/t/data/./f",
        ] {
            let err = locations.check_inside(bad, Some(&k));
            assert!(
                matches!(&err, Err(Error::InvalidInput(m)) if m.contains("p=\"x\"")),
                "{bad}: {err:?}"
            );
        }
        locations.check_inside("/wh/t/data/p=..%2Fx/f", Some(&k))?;
        let custom = DataLocations::new(
            "/wh/t",
            &HashMap::from([(LOCATION_PROVIDER_IMPL.to_string(), "a.B".to_string())]),
        );
        assert!(matches!(custom, Err(Error::InvalidInput(m)) if m.contains("a.B")));
        Ok(())
    }
}
