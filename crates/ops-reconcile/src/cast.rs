//! Primitive casts that are safe the way pyarrow's default cast is: a value the cast would
//! change (a fraction cut off, an integer rounded to the nearest double, a decimal rounded to a
//! smaller scale, nanoseconds dropped, a time of day dropped) is an error naming it, unless the
//! reconciler opted into lossy casts.
//!
//! Arrow's own cast cannot do this: `safe: true` turns failures into nulls and `safe: false`
//! errors on overflow and parse failures but changes values silently. So a cast whose types allow
//! a change is followed by the cast back to the source type, and any value that does not come
//! back unchanged is reported.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_cast::{CastOptions, cast_with_options};
use arrow_schema::{ArrowError, DataType, TimeUnit};

use crate::ReconcileError;

/// What a cast may do to values that arrive intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CastMode {
    /// A value the cast would change is an error naming the column and the value (default; as
    /// pyarrow's `safe=True`).
    #[default]
    Safe,
    /// Values may change: fractions are truncated, doubles and decimals rounded, timestamps
    /// floored to the coarser unit. Set through `SchemaReconciler::allow_lossy_casts`.
    AllowLossy,
}

/// How a primitive cast treats values, decided from the types alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CastKind {
    /// Every value converts unchanged (or the cast fails on it, e.g. overflow).
    Exact,
    /// Values are parsed or narrowed; some may fail, none change.
    DataDependent(&'static str),
    /// Some values may change; checked per value unless lossy casts are allowed.
    Lossy(&'static str),
}

fn int_width(t: &DataType) -> Option<(u8, bool)> {
    use DataType::*;
    Some(match t {
        Int8 => (8, true),
        Int16 => (16, true),
        Int32 => (32, true),
        Int64 => (64, true),
        UInt8 => (8, false),
        UInt16 => (16, false),
        UInt32 => (32, false),
        UInt64 => (64, false),
        _ => return None,
    })
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

fn unit_multiple(u: &TimeUnit) -> i64 {
    match u {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

/// Decimal digits needed for any integer of `bits` width.
fn int_digits(bits: u8) -> u8 {
    match bits {
        8 => 3,
        16 => 5,
        32 => 10,
        _ => 20,
    }
}

/// The Arrow types that hold the same Iceberg value: they differ in offset width or layout only.
fn same_representation(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let strings = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let bytes = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    (strings(from) && strings(to)) || (bytes(from) && bytes(to))
}

/// Classifies a primitive (non-nested) cast.
pub(crate) fn cast_kind(from: &DataType, to: &DataType) -> CastKind {
    use DataType::*;
    if let Dictionary(_, values) = from
        && !matches!(to, Dictionary(_, _))
    {
        // Decoding a dictionary is lossless; what follows is the cast of its values.
        return cast_kind(values, to);
    }
    if from == to
        || matches!(from, Null)
        || matches!(to, Utf8 | LargeUtf8 | Utf8View)
        || same_representation(from, to)
    {
        return CastKind::Exact;
    }
    if is_text(from) {
        return CastKind::DataDependent(
            "is data-dependent: values that do not parse fail the batch",
        );
    }
    if let (Some((fw, fs)), Some((tw, ts))) = (int_width(from), int_width(to)) {
        let widens = (fs == ts && tw >= fw) || (!fs && ts && tw > fw);
        return if widens {
            CastKind::Exact
        } else {
            CastKind::DataDependent("narrows: out-of-range values fail the batch")
        };
    }
    match (from, to) {
        (Boolean, t) if int_width(t).is_some() || is_float(t) => CastKind::Exact,
        (Float16, Float32 | Float64) | (Float32, Float64) => CastKind::Exact,
        (f, Float32) if int_width(f).is_some_and(|(w, _)| w <= 16) => CastKind::Exact,
        (f, Float64) if int_width(f).is_some_and(|(w, _)| w <= 32) => CastKind::Exact,
        (f, Float16 | Float32 | Float64) if int_width(f).is_some() => {
            CastKind::Lossy("may round large integers to the nearest float")
        }
        (f, t) if is_float(f) && is_float(t) => CastKind::Lossy("narrows: precision is lost"),
        (f, t) if is_float(f) && int_width(t).is_some() => {
            CastKind::Lossy("truncates fractions; out-of-range values fail the batch")
        }
        (f, Decimal128(p, s) | Decimal256(p, s))
            if int_width(f).is_some_and(|(w, _)| {
                i16::from(int_digits(w)) <= i16::from(*p) - i16::from(*s)
            }) =>
        {
            CastKind::Exact
        }
        (
            Decimal32(p1, s1) | Decimal64(p1, s1) | Decimal128(p1, s1) | Decimal256(p1, s1),
            Decimal32(p2, s2) | Decimal64(p2, s2) | Decimal128(p2, s2) | Decimal256(p2, s2),
        ) => {
            if s2 >= s1 && i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1) {
                CastKind::Exact
            } else if s2 >= s1 {
                CastKind::DataDependent("reduces precision: values that do not fit fail the batch")
            } else {
                CastKind::Lossy("reduces the scale: values are rounded")
            }
        }
        (Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..), _)
        | (_, Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..)) => {
            CastKind::Lossy("may round values between decimal and other numbers")
        }
        (Timestamp(u1, _), Timestamp(u2, _)) => {
            if unit_multiple(u2) >= unit_multiple(u1) {
                CastKind::Exact
            } else {
                CastKind::Lossy("coarsens the timestamp unit: sub-unit precision is lost")
            }
        }
        (Timestamp(..), Date32 | Date64) => CastKind::Lossy("drops the time of day"),
        (Date32, Date64 | Timestamp(..)) => CastKind::Exact,
        (Time32(u1) | Time64(u1), Time32(u2) | Time64(u2)) => {
            if unit_multiple(u2) >= unit_multiple(u1) {
                CastKind::Exact
            } else {
                CastKind::Lossy("coarsens the time unit: sub-unit precision is lost")
            }
        }
        _ => CastKind::Lossy("may change values"),
    }
}

/// Casts a primitive array to `to` under `mode`; `column` names the value in errors.
pub(crate) fn cast_primitive(
    array: &ArrayRef,
    to: &DataType,
    column: &str,
    mode: CastMode,
) -> Result<ArrayRef, ReconcileError> {
    let from = array.data_type();
    let cast_error = |message: String, value: Option<String>| ReconcileError::Cast {
        column: column.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        value,
        message,
    };
    let converted = match mode {
        CastMode::Safe => strict_cast(array, to),
        CastMode::AllowLossy => lossy_cast(array, to),
    }
    .map_err(|e| cast_error(e.to_string(), first_failing_value(array, to)))?;
    if mode == CastMode::Safe {
        // Text is checked by reading it again; a lossy typed cast by casting back.
        let (changed, what) = if is_string(from) {
            (
                first_changed_from_text(array, to, &converted),
                "reading the text",
            )
        } else if matches!(cast_kind(from, to), CastKind::Lossy(_)) {
            (first_changed(array, &converted), "the cast")
        } else {
            (Ok(None), "")
        };
        let changed = changed.map_err(|e| {
            cast_error(
                format!(
                    "the cast may change values and they cannot be checked ({e}); set \
                     allow_lossy_casts(true) on the reconciler to accept changed values"
                ),
                None,
            )
        })?;
        if let Some(i) = changed {
            return Err(cast_error(
                format!(
                    "{what} would change the value to {}; transform the column first, or \
                     set allow_lossy_casts(true) on the reconciler to accept changed values",
                    display(&converted, i).unwrap_or_else(|| "null".into())
                ),
                display(array, i),
            ));
        }
    }
    Ok(converted)
}

fn strict_cast(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(array, to, &strict)
}

/// Arrow's cast, except that coarsening a timestamp floors it: arrow divides toward zero, which
/// moves an instant before 1970 forward in time.
fn lossy_cast(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    match (array.data_type(), to) {
        (DataType::Timestamp(u1, tz), DataType::Timestamp(u2, _))
            if unit_multiple(u1) > unit_multiple(u2) =>
        {
            let divisor = unit_multiple(u1) / unit_multiple(u2);
            let raw = strict_cast(array, &DataType::Int64)?;
            let floored: Int64Array = raw
                .as_primitive::<Int64Type>()
                .unary(|v| v.div_euclid(divisor));
            let same_zone = DataType::Timestamp(*u2, tz.clone());
            let rescaled = strict_cast(&(Arc::new(floored) as ArrayRef), &same_zone)?;
            strict_cast(&rescaled, to)
        }
        _ => strict_cast(array, to),
    }
}

/// The first valid value of `original` that does not survive the cast back from `converted`.
fn first_changed(original: &ArrayRef, converted: &ArrayRef) -> Result<Option<usize>, ArrowError> {
    // Safe here: a value that cannot go back is a changed one, seen as a null.
    let back = cast_with_options(converted, original.data_type(), &CastOptions::default())?;
    if is_float(original.data_type()) {
        // Numeric equality: -0.0 comes back as 0.0 from an integer and is unchanged; NaN stays
        // NaN through a float cast.
        let a = cast_with_options(original, &DataType::Float64, &CastOptions::default())?;
        let b = cast_with_options(&back, &DataType::Float64, &CastOptions::default())?;
        let (a, b) = (
            a.as_primitive::<arrow_array::types::Float64Type>(),
            b.as_primitive::<arrow_array::types::Float64Type>(),
        );
        return Ok((0..a.len()).find(|&i| {
            a.is_valid(i)
                && (b.is_null(i) || {
                    let (x, y) = (a.value(i), b.value(i));
                    !(x == y || (x.is_nan() && y.is_nan()))
                })
        }));
    }
    let distinct: BooleanArray = arrow_ord::cmp::distinct(original, &back)?;
    Ok((0..original.len()).find(|&i| original.is_valid(i) && distinct.value(i)))
}

fn is_string(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_string(values),
        _ => false,
    }
}

/// The first text of `original` (strings) whose parse into `converted` changed its value, as
/// pyarrow's safe cast refuses it, judged from the text itself (arrow-rs reads each of these
/// without an error):
/// - into a date: a time of day other than midnight, or a zone (arrow converts to UTC first);
/// - into a timestamp or time: nonzero digits finer than the unit (arrow keeps at most nine
///   and drops the rest), or a second of 60 (arrow rolls it over);
/// - into a timestamp without zone: a zone, an offset or a name (pyarrow: "expected no zone
///   offset"; arrow converts to UTC);
/// - into a decimal: nonzero digits finer than the scale (arrow rounds), or no digit at all
///   (arrow reads `''`, `'-'` and `'.'` as 0).
///
/// A float takes any number, infinity for one beyond its range, as pyarrow's cast does.
fn first_changed_from_text(
    original: &ArrayRef,
    to: &DataType,
    converted: &ArrayRef,
) -> Result<Option<usize>, ArrowError> {
    use DataType::*;
    let unit_digits = |u: &TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    };
    match to {
        Date32 | Date64 => first_text(original, converted, |t| {
            let time = TextTime::of(t, true);
            time.zone || time.off_midnight
        }),
        Timestamp(unit, zone) => {
            let digits = unit_digits(unit);
            let naive = zone.is_none();
            first_text(original, converted, |t| {
                let time = TextTime::of(t, true);
                time.finer_than(digits) || time.leap_second || (naive && time.zone)
            })
        }
        Time32(unit) | Time64(unit) => {
            let digits = unit_digits(unit);
            first_text(original, converted, |t| {
                let time = TextTime::of(t, false);
                time.finer_than(digits) || time.leap_second
            })
        }
        Decimal32(_, scale) | Decimal64(_, scale) | Decimal128(_, scale) | Decimal256(_, scale) => {
            first_text(original, converted, |t| decimal_text_rounds(t, *scale))
        }
        _ => Ok(None),
    }
}

/// The first row whose text (valid, and read into a valid `converted` value) `changed` holds
/// for; the text is read where it lies (a dictionary's values once decoded).
fn first_text(
    original: &ArrayRef,
    converted: &ArrayRef,
    mut changed: impl FnMut(&str) -> bool,
) -> Result<Option<usize>, ArrowError> {
    fn find<'a>(
        values: impl Iterator<Item = Option<&'a str>>,
        converted: &ArrayRef,
        changed: &mut impl FnMut(&str) -> bool,
    ) -> Option<usize> {
        values
            .enumerate()
            .find(|(i, v)| converted.is_valid(*i) && v.is_some_and(&mut *changed))
            .map(|(i, _)| i)
    }
    Ok(match original.data_type() {
        DataType::Utf8 => find(original.as_string::<i32>().iter(), converted, &mut changed),
        DataType::LargeUtf8 => find(original.as_string::<i64>().iter(), converted, &mut changed),
        DataType::Utf8View => find(original.as_string_view().iter(), converted, &mut changed),
        _ => {
            let text = cast_with_options(original, &DataType::LargeUtf8, &CastOptions::default())?;
            find(text.as_string::<i64>().iter(), converted, &mut changed)
        }
    })
}

/// What a date, date-time or time text says beyond its date, read from the text (see
/// [`first_changed_from_text`]).
#[derive(Debug, Default, PartialEq, Eq)]
struct TextTime<'a> {
    /// Its fraction of a second's digits.
    fraction: &'a str,
    /// A time of day other than midnight.
    off_midnight: bool,
    /// A second of 60 (or more).
    leap_second: bool,
    /// Anything after the time of day: `Z`, an offset, a zone name.
    zone: bool,
}

impl<'a> TextTime<'a> {
    /// `text` read as a time of day (`dated`: after a date and `T` or a space, as arrow's
    /// date-times are written; else the whole text).
    fn of(text: &'a str, dated: bool) -> Self {
        let t = text.trim();
        let time = if dated {
            // The date's own hyphens come before the separator.
            match t
                .char_indices()
                .skip(8)
                .find(|(_, c)| matches!(c, 'T' | 't' | ' '))
            {
                Some((sep, _)) => t[sep + 1..].trim_start(),
                None => return Self::default(),
            }
        } else {
            t
        };
        let clock_len = time
            .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
            .unwrap_or(time.len());
        let (clock, rest) = time.split_at(clock_len);
        let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
        let fraction = fraction.trim_end_matches(':');
        let second = hms.split(':').nth(2).and_then(|s| s.parse::<u32>().ok());
        Self {
            fraction,
            off_midnight: hms
                .chars()
                .chain(fraction.chars())
                .any(|c| c.is_ascii_digit() && c != '0'),
            leap_second: second.is_some_and(|s| s >= 60),
            zone: !rest.trim().is_empty(),
        }
    }

    /// True when a nonzero digit lies past the first `digits` of the fraction.
    fn finer_than(&self, digits: usize) -> bool {
        self.fraction
            .chars()
            .skip(digits)
            .any(|c| c.is_ascii_digit() && c != '0')
    }
}

/// True when reading the decimal text at `scale` changes it: nonzero digits finer than the
/// scale (`1.005` at scale 2, `5e-3` at 2; not `1.50` or `510e-3`), or no digit at all
/// (arrow reads `''`, `'-'` and `'.'` as 0).
fn decimal_text_rounds(text: &str, scale: i8) -> bool {
    let t = text.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => match t[i + 1..].parse::<i64>() {
            Ok(e) => (&t[..i], e),
            // Not a number arrow reads: its cast fails on it already.
            Err(_) => return false,
        },
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = int.len() + frac.len();
    if digits == 0 {
        return true;
    }
    let trailing_zeros = int
        .chars()
        .chain(frac.chars())
        .rev()
        .take_while(|c| *c == '0')
        .count();
    if trailing_zeros == digits {
        return false; // zero
    }
    let finest = (frac.len() as i64)
        .saturating_sub(exponent)
        .saturating_sub(trailing_zeros as i64);
    finest > i64::from(scale)
}

fn display(array: &ArrayRef, i: usize) -> Option<String> {
    if array.is_null(i) {
        return None;
    }
    let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default()).ok()?;
    Some(formatter.value(i).to_string())
}

/// The first non-null value that a lenient cast turns into null.
fn first_failing_value(array: &ArrayRef, to: &DataType) -> Option<String> {
    let lenient = cast_with_options(array, to, &CastOptions::default()).ok()?;
    let index = (0..array.len()).find(|&i| array.is_valid(i) && lenient.is_null(i))?;
    display(array, index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReconciliationPlan, SchemaReconciler, project_batch};
    use arrow_array::types::{
        Date32Type, Decimal128Type, Float64Type, Int64Type, TimestampMicrosecondType,
    };
    use arrow_array::{
        Date32Array, Decimal128Array, Float32Array, Float64Array, RecordBatch, StructArray,
        TimestampMicrosecondArray, TimestampNanosecondArray,
    };
    use arrow_schema::{Field, Fields, Schema};
    use proptest::prelude::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn plan(
        from: &DataType,
        to: &DataType,
        lossy: bool,
    ) -> Result<ReconciliationPlan, ReconcileError> {
        let src = Schema::new(vec![Field::new("v", from.clone(), true)]);
        let dst = Schema::new(vec![Field::new("v", to.clone(), true)]);
        SchemaReconciler::new()
            .allow_lossy_casts(lossy)
            .compute_plan(&src, &dst)
    }

    /// Projects `array` (column `v`) to `to`, safely or lossily.
    fn project(array: ArrayRef, to: &DataType, lossy: bool) -> Result<ArrayRef, ReconcileError> {
        let plan = plan(array.data_type(), to, lossy)?;
        let schema = Schema::new(vec![Field::new("v", array.data_type().clone(), true)]);
        let batch = RecordBatch::try_new(Arc::new(schema), vec![array])?;
        Ok(project_batch(&batch, &plan)?.column(0).clone())
    }

    /// Asserts a safe cast fails on `value` in column `column`, saying how to accept it.
    fn assert_refused(result: Result<ArrayRef, ReconcileError>, column: &str, value: &str) {
        match result {
            Err(e @ ReconcileError::Cast { .. }) => {
                let msg = e.to_string();
                let ReconcileError::Cast {
                    column: c,
                    value: v,
                    ..
                } = e
                else {
                    unreachable!()
                };
                assert_eq!(c, column, "{msg}");
                assert_eq!(v.as_deref(), Some(value), "{msg}");
                assert!(msg.contains("allow_lossy_casts"), "{msg}");
            }
            other => panic!("expected a cast error for {value}, got {other:?}"),
        }
    }

    /// Text read into a type that cannot hold it unchanged is refused as pyarrow's safe cast
    /// refuses it (found by a new-user trial: `migrate-data` into an existing destination
    /// stored these silently, and `verify` matched); text that reads exactly passes; with
    /// lossy casts allowed every one is read as arrow reads it.
    #[test]
    fn text_whose_reading_changes_its_value_is_refused() -> TestResult {
        use arrow_array::StringArray;
        let us = DataType::Timestamp(TimeUnit::Microsecond, None);
        let us_utc = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let refused: &[(&str, DataType)] = &[
            ("2020-01-01T10:00:00", DataType::Date32),
            ("2020-01-01T22:00:00-05:00", DataType::Date32),
            ("2020-01-01T10:00:00.123456789", us.clone()),
            ("2020-01-01T10:00:00.123456789", us_utc.clone()),
            ("2020-01-01T10:00:00+05:00", us.clone()),
            ("2020-01-01T10:00:00Z", us.clone()),
            (
                "10:00:00.123456789",
                DataType::Time64(TimeUnit::Microsecond),
            ),
            ("1.005", DataType::Decimal128(10, 2)),
            ("1.999", DataType::Decimal128(10, 2)),
            ("-0.001", DataType::Decimal128(10, 2)),
            ("", DataType::Decimal128(10, 2)),
            ("2020-01-01 00:00:00Z", DataType::Date32),
            ("2020-01-01T19:00:00-05:00", DataType::Date32),
            ("1500-01-01T10:00:00", DataType::Date32),
            ("9999-12-31 23:59:59.9999999", us.clone()),
            ("2016-12-31T23:59:60", us.clone()),
            (
                "2020-01-01T10:00:00.1234567891",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
            ),
        ];
        for (text, to) in refused {
            let a: ArrayRef = Arc::new(StringArray::from(vec![Some("0"), None, Some(*text)]));
            let a = if matches!(to, DataType::Date32 | DataType::Timestamp(..)) {
                Arc::new(StringArray::from(vec![
                    Some("2020-01-02"),
                    None,
                    Some(*text),
                ]))
            } else if matches!(to, DataType::Time64(_)) {
                Arc::new(StringArray::from(vec![Some("01:02:03"), None, Some(*text)]))
            } else {
                a
            };
            assert_refused(project(a.clone(), to, false), "v", text);
            let lossy = project(a, to, true)?;
            assert_eq!(lossy.null_count(), 1, "{text} as {to}");
        }
        let exact: &[(&[&str], DataType)] = &[
            (
                &[
                    "2020-01-01",
                    "2020-01-01T00:00:00",
                    "2020-01-01 00:00:00.000",
                ],
                DataType::Date32,
            ),
            (
                &["2020-01-01T10:00:00.123456", "2020-01-01 10:00:00"],
                us.clone(),
            ),
            (
                &["2020-01-01T10:00:00.123456789+05:00"],
                DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into())),
            ),
            (
                &["2020-01-01T10:00:00+05:00", "2020-01-01T10:00:00.5Z"],
                us_utc,
            ),
            (
                &["10:00:00.123456", "10:00:00", "10:00:00.123456000"],
                DataType::Time64(TimeUnit::Microsecond),
            ),
            (&["3600", "01:00:00"], DataType::Time32(TimeUnit::Second)),
            (&["1.50", "-2", "0.00", "100"], DataType::Decimal128(10, 2)),
            (
                &["1e300", "1e400", "-inf", "Infinity", "NaN", "0.1"],
                DataType::Float64,
            ),
        ];
        for (texts, to) in exact {
            let a: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
            let got = project(a, to, false).map_err(|e| format!("{texts:?} as {to}: {e}"))?;
            assert_eq!(got.null_count(), 0, "{texts:?} as {to}");
        }
        Ok(())
    }

    #[test]
    fn the_time_of_a_text_is_read_from_the_text() {
        let t = TextTime::of("2020-01-01T10:00:00.1234567891 Europe/Paris", true);
        assert_eq!(t.fraction, "1234567891");
        assert!(t.off_midnight && t.zone && !t.leap_second);
        assert!(t.finer_than(9) && t.finer_than(6));
        let t = TextTime::of("2020-01-01 00:00:00.000", true);
        assert!(!t.off_midnight && !t.zone && !t.finer_than(0));
        assert!(TextTime::of("23:59:60", false).leap_second);
        assert!(TextTime::of("2020-01-01T00:00:00-05:00", true).zone);
        assert!(TextTime::of("2020-01-01T00:00+0500", true).zone);
        assert_eq!(TextTime::of("2020-01-01", true), TextTime::default());
        assert_eq!(TextTime::of("-0001-01-01", true), TextTime::default());
        assert!(!TextTime::of("3600", false).finer_than(0));
        // Multi-byte text never splits a character.
        assert!(TextTime::of("2020-01-01Tä", true).zone);
        assert!(TextTime::of("ääääääääää T1", true).zone);
    }

    #[test]
    fn decimal_texts_round_only_past_the_scale() {
        for (text, scale, rounds) in [
            ("1.005", 2, true),
            ("1.000", 2, false),
            ("+12.340", 2, false),
            ("5e-3", 2, true),
            ("5E-2", 2, false),
            ("510e-3", 2, false),
            ("0.000", 0, false),
            ("1.5", 0, true),
            ("15e-1", 0, true),
            ("150e-1", 0, false),
            ("12e3", -2, false),
            ("1x", 2, false),
            ("", 2, true),
            ("-", 2, true),
            (".", 2, true),
        ] {
            assert_eq!(
                decimal_text_rounds(text, scale),
                rounds,
                "{text} at {scale}"
            );
        }
    }

    #[test]
    fn float_to_int_with_a_fraction_is_refused() -> TestResult {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.0),
            None,
            Some(-0.0),
            Some(2.5),
        ]));
        assert_refused(project(a.clone(), &DataType::Int64, false), "v", "2.5");
        let whole: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None, Some(-0.0)]));
        let out = project(whole, &DataType::Int64, false)?;
        let got: Vec<Option<i64>> = out.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(got, vec![Some(1), None, Some(0)]);
        let lossy = project(a, &DataType::Int64, true)?;
        assert_eq!(lossy.as_primitive::<Int64Type>().value(3), 2);
        let nan: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
        assert!(project(nan, &DataType::Int64, false).is_err());
        Ok(())
    }

    #[test]
    fn int64_to_double_above_2_pow_53_is_refused() -> TestResult {
        let exact = 1i64 << 53;
        let a: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![
            exact,
            -exact,
            exact + 1,
        ]));
        assert_refused(
            project(a.clone(), &DataType::Float64, false),
            "v",
            "9007199254740993",
        );
        let ok: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![
            exact,
            -exact,
            i64::from(i32::MAX),
        ]));
        let out = project(ok, &DataType::Float64, false)?;
        assert_eq!(
            out.as_primitive::<Float64Type>().value(0),
            9007199254740992.0
        );
        assert!(project(a, &DataType::Float64, true).is_ok());
        Ok(())
    }

    #[test]
    fn decimal_scale_reduction_that_rounds_is_refused() -> TestResult {
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(1230), None, Some(1234)])
                .with_precision_and_scale(10, 3)?,
        );
        assert_refused(
            project(a.clone(), &DataType::Decimal128(10, 2), false),
            "v",
            "1.234",
        );
        let ok: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(1230), Some(-50)]).with_precision_and_scale(10, 3)?,
        );
        let out = project(ok, &DataType::Decimal128(10, 2), false)?;
        let got: Vec<Option<i128>> = out.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(got, vec![Some(123), Some(-5)]);
        assert!(project(a, &DataType::Decimal128(10, 2), true).is_ok());
        Ok(())
    }

    #[test]
    fn timestamp_ns_to_us_dropping_nanoseconds_is_refused_and_floors_when_allowed() -> TestResult {
        let us = DataType::Timestamp(TimeUnit::Microsecond, None);
        let a: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![2_000, 1_000_001]));
        assert_refused(project(a, &us, false), "v", "1970-01-01T00:00:00.001000001");
        // Before 1970, arrow divides toward zero (later in time); the lossy cast floors.
        let before: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![-1, -1_500, 1_500]));
        assert_refused(
            project(before.clone(), &us, false),
            "v",
            "1969-12-31T23:59:59.999999999",
        );
        let out = project(before, &us, true)?;
        let got: Vec<Option<i64>> = out
            .as_primitive::<TimestampMicrosecondType>()
            .iter()
            .collect();
        assert_eq!(got, vec![Some(-1), Some(-2), Some(1)]);
        // With a zone too.
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let zoned: ArrayRef =
            Arc::new(TimestampNanosecondArray::from(vec![-1]).with_timezone("+00:00"));
        let out = project(zoned, &utc, true)?;
        assert_eq!(out.as_primitive::<TimestampMicrosecondType>().value(0), -1);
        assert_eq!(out.data_type(), &utc);
        Ok(())
    }

    #[test]
    fn timestamp_to_date_with_a_time_of_day_is_refused() -> TestResult {
        const DAY: i64 = 86_400_000_000;
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![DAY, -DAY, DAY + 1]));
        assert_refused(
            project(a.clone(), &DataType::Date32, false),
            "v",
            "1970-01-02T00:00:00.000001",
        );
        let ok: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![DAY, -DAY]));
        let out = project(ok, &DataType::Date32, false)?;
        assert_eq!(
            out.as_primitive::<Date32Type>().values().to_vec(),
            vec![1, -1]
        );
        // Allowed, a time before 1970 lands on the day it is in.
        let before: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![-1]));
        let out = project(before, &DataType::Date32, true)?;
        assert_eq!(out.as_primitive::<Date32Type>().value(0), -1);
        let _ = Date32Array::from(vec![0]);
        Ok(())
    }

    #[test]
    fn a_nested_lossy_value_names_its_path() -> TestResult {
        let fields = |t: DataType| Fields::from(vec![Field::new("x", t, true)]);
        let from = DataType::Struct(fields(DataType::Float32));
        let to = DataType::Struct(fields(DataType::Int32));
        let s = StructArray::try_new(
            fields(DataType::Float32),
            vec![Arc::new(Float32Array::from(vec![1.0, 1.25]))],
            None,
        )?;
        assert_refused(project(Arc::new(s), &to, false), "v.x", "1.25");
        let p = plan(&from, &to, false)?;
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("'v.x'") && w.contains("lossy")),
            "{:?}",
            p.warnings
        );
        Ok(())
    }

    #[test]
    fn the_plan_warns_for_every_lossy_cast_in_both_modes() -> TestResult {
        let ts = |u| DataType::Timestamp(u, None);
        let cases = [
            (DataType::Float64, DataType::Int64),
            (DataType::Int64, DataType::Float64),
            (DataType::Decimal128(10, 3), DataType::Decimal128(10, 2)),
            (ts(TimeUnit::Nanosecond), ts(TimeUnit::Microsecond)),
            (ts(TimeUnit::Microsecond), DataType::Date32),
            (DataType::Float64, DataType::Float32),
        ];
        for (from, to) in cases {
            for lossy in [false, true] {
                let p = plan(&from, &to, lossy)?;
                let want = if lossy {
                    "allow_lossy_casts is on"
                } else {
                    "fails the batch"
                };
                assert!(
                    p.warnings
                        .iter()
                        .any(|w| w.contains("lossy") && w.contains(want)),
                    "{from} → {to} (lossy {lossy}): {:?}",
                    p.warnings
                );
                let mode = if lossy {
                    CastMode::AllowLossy
                } else {
                    CastMode::Safe
                };
                assert_eq!(p.projections[0].cast_mode, mode);
            }
        }
        // Exact widenings warn about nothing.
        for (from, to) in [
            (DataType::Int32, DataType::Int64),
            (DataType::Int32, DataType::Float64),
            (DataType::Float32, DataType::Float64),
            (DataType::Decimal128(9, 2), DataType::Decimal128(18, 4)),
            (ts(TimeUnit::Microsecond), ts(TimeUnit::Nanosecond)),
            (DataType::Date32, ts(TimeUnit::Microsecond)),
        ] {
            assert!(
                plan(&from, &to, false)?.warnings.is_empty(),
                "{from} → {to}"
            );
        }
        Ok(())
    }

    /// Casts `array` to `to` and back; true when some value changed or failed.
    fn lossy_round_trip_changes(array: &ArrayRef, to: &DataType) -> bool {
        match lossy_cast(array, to) {
            Err(_) => true,
            Ok(c) => first_changed(array, &c).map_or(true, |i| i.is_some()),
        }
    }

    /// The property: a safe projection either succeeds and every value round-trips exactly, or
    /// fails with a cast error, and then some value really does not survive the cast.
    fn check_safe(array: ArrayRef, to: DataType) -> Result<(), TestCaseError> {
        let from = array.data_type().clone();
        match project(array.clone(), &to, false) {
            Ok(out) => {
                prop_assert_eq!(out.data_type(), &to);
                let back =
                    strict_cast(&out, &from).map_err(|e| TestCaseError::fail(e.to_string()))?;
                if is_float(&from) {
                    let (a, b) = (
                        array.as_primitive::<Float64Type>(),
                        back.as_primitive::<Float64Type>(),
                    );
                    for i in 0..a.len() {
                        prop_assert_eq!(a.is_null(i), b.is_null(i));
                        if a.is_valid(i) {
                            let (x, y) = (a.value(i), b.value(i));
                            prop_assert!(
                                x == y || (x.is_nan() && y.is_nan()),
                                "{} came back as {}",
                                x,
                                y
                            );
                        }
                    }
                } else {
                    prop_assert_eq!(&back, &array);
                }
            }
            Err(ReconcileError::Cast { .. }) => {
                prop_assert!(
                    lossy_round_trip_changes(&array, &to),
                    "refused although nothing changes"
                );
            }
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
        Ok(())
    }

    fn opt<T: std::fmt::Debug + Clone>(
        s: impl Strategy<Value = T>,
    ) -> impl Strategy<Value = Vec<Option<T>>> {
        proptest::collection::vec(proptest::option::of(s), 0..40)
    }

    proptest! {
        #[test]
        fn float_to_int_round_trips_or_errors(v in opt(prop_oneof![
            (-1e6f64..1e6).prop_map(f64::trunc), -1e20f64..1e20, any::<f64>()
        ])) {
            check_safe(Arc::new(Float64Array::from(v)), DataType::Int64)?;
        }

        #[test]
        fn int64_to_double_round_trips_or_errors(v in opt(prop_oneof![
            -(1i64 << 53)..=(1i64 << 53), any::<i64>()
        ])) {
            check_safe(Arc::new(arrow_array::Int64Array::from(v)), DataType::Float64)?;
        }

        #[test]
        fn double_to_float_round_trips_or_errors(v in opt(prop_oneof![
            any::<f32>().prop_map(f64::from), any::<f64>()
        ])) {
            check_safe(Arc::new(Float64Array::from(v)), DataType::Float32)?;
        }

        #[test]
        fn decimal_rescale_round_trips_or_errors(v in opt(prop_oneof![
            (-99_999_999i128..99_999_999).prop_map(|x| x * 100), -9_999_999_999i128..9_999_999_999
        ])) {
            let a = Decimal128Array::from(v).with_precision_and_scale(10, 4)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            check_safe(Arc::new(a), DataType::Decimal128(10, 2))?;
        }

        #[test]
        fn timestamp_coarsening_round_trips_or_errors(v in opt(prop_oneof![
            (-1_000_000_000_000i64..1_000_000_000_000).prop_map(|x| x * 1_000), any::<i64>()
        ])) {
            check_safe(Arc::new(TimestampNanosecondArray::from(v)), DataType::Timestamp(TimeUnit::Microsecond, None))?;
        }

        #[test]
        fn timestamp_to_date_round_trips_or_errors(v in opt(prop_oneof![
            (-100_000i64..100_000).prop_map(|d| d * 86_400_000_000), -10_000_000_000_000_000i64..10_000_000_000_000_000
        ])) {
            check_safe(Arc::new(TimestampMicrosecondArray::from(v)), DataType::Date32)?;
        }

        #[test]
        fn int_narrowing_round_trips_or_errors(v in opt(any::<i64>())) {
            check_safe(Arc::new(arrow_array::Int64Array::from(v)), DataType::Int32)?;
        }
    }
}
