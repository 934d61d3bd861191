//! Step 5 of an import: a file's column metrics from its footer.
//!
//! Counts and bounds are gathered per matched column over the row groups, as Java's
//! `ParquetUtil.fileMetrics` does, then cut to the table's metrics modes
//! (`write.metadata.metrics.default`, default `truncate(16)`, and
//! `write.metadata.metrics.column.<name>`; `none`, `counts`, `truncate(N)`, `full`). A column
//! gets bounds only when every row group has statistics for it, it is not inside a list or map,
//! and its values convert without loss: timestamps by their unit (`MILLIS` scaled to micros),
//! unsigned integers as unsigned, INT32 and INT64 decimals as their unscaled values when the
//! file's scale is the column's and the value fits its precision, UUIDs as their 16 bytes;
//! none for INT96 (Java ignores their statistics too), for byte-array decimals (writers have
//! ordered their two's complement wrongly for years), for statistics in the deprecated fields
//! of byte arrays (old writers ordered them by signed bytes), for other byte arrays whose
//! order is not bytewise (float16, intervals), and where a bound is NaN. A bound left out only
//! costs pruning; a wrong one would hide rows.

use std::collections::HashMap;

use iceberg::spec::{Datum, PrimitiveType, Schema, Type};
use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

use crate::columns::Matched;

/// A column's statistics over the whole file, before any metrics mode.
#[derive(Debug, Clone, Default)]
pub struct ColumnStats {
    /// Compressed bytes.
    pub size: u64,
    /// Values, NULLs included.
    pub values: u64,
    /// NULLs, when every row group says.
    pub nulls: Option<u64>,
    /// The smallest value, when known.
    pub lower: Option<Datum>,
    /// The largest value, when known.
    pub upper: Option<Datum>,
    /// Whether `lower` and `upper` are the values themselves (not truncated by the writer):
    /// only then do they decide a partition.
    pub exact: bool,
}

/// The statistics of every matched column, by field id.
pub fn column_stats(meta: &ParquetMetaData, matched: &[Matched]) -> HashMap<i32, ColumnStats> {
    let mut out: HashMap<i32, ColumnStats> = HashMap::new();
    for m in matched {
        let col = meta.file_metadata().schema_descr().column(m.column);
        let mut s = ColumnStats {
            nulls: Some(0),
            exact: true,
            ..Default::default()
        };
        let mut bounds_ok = !m.repeated;
        for rg in meta.row_groups() {
            let Some(chunk) = rg.columns().get(m.column) else {
                bounds_ok = false;
                continue;
            };
            s.size += u64::try_from(chunk.compressed_size()).unwrap_or(0);
            s.values += u64::try_from(chunk.num_values()).unwrap_or(0);
            let stats = chunk.statistics();
            s.nulls = match (s.nulls, stats.and_then(Statistics::null_count_opt)) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            if !bounds_ok {
                continue;
            }
            let Some(stats) = stats else {
                bounds_ok = false;
                continue;
            };
            if rg.num_rows() > 0 && stats.null_count_opt() == Some(chunk.num_values() as u64) {
                // Only NULLs here: no bounds to add.
                continue;
            }
            let (Some(lo), Some(hi)) = (
                datum(&m.ty, &col, stats, Side::Lower),
                datum(&m.ty, &col, stats, Side::Upper),
            ) else {
                bounds_ok = false;
                continue;
            };
            s.exact &= stats.min_is_exact() && stats.max_is_exact();
            s.lower = Some(match s.lower.take() {
                Some(l) if l <= lo => l,
                _ => lo,
            });
            s.upper = Some(match s.upper.take() {
                Some(u) if u >= hi => u,
                _ => hi,
            });
        }
        if !bounds_ok {
            s.lower = None;
            s.upper = None;
        }
        out.insert(m.field_id, s);
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Lower,
    Upper,
}

/// A row group's min or max of `col` as a value of `ty` (see the module docs for when none).
fn datum(
    ty: &PrimitiveType,
    col: &parquet::schema::types::ColumnDescriptor,
    stats: &Statistics,
    side: Side,
) -> Option<Datum> {
    use PrimitiveType as P;
    let lower = side == Side::Lower;
    // Byte arrays ordered by the old signed comparison (files of old writers): no bounds.
    let logical = crate::columns::logical(col);
    let unsigned = matches!(
        logical,
        Some(LogicalType::Integer {
            is_signed: false,
            ..
        })
    );
    // Byte arrays ordered by the old signed comparison (files of old writers), or holding a
    // value whose order is not its bytes' (a decimal's two's complement, a float16, an
    // interval): no bounds.
    let bytewise = !stats.is_min_max_deprecated()
        && matches!(
            logical,
            None | Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
        );
    let bytes = || {
        if lower {
            stats.min_bytes_opt()
        } else {
            stats.max_bytes_opt()
        }
    };
    macro_rules! pick {
        ($s:expr) => {
            if lower { $s.min_opt() } else { $s.max_opt() }
        };
    }
    match (ty, stats) {
        (P::Boolean, Statistics::Boolean(s)) => pick!(s).map(|v| Datum::bool(*v)),
        (P::Int, Statistics::Int32(s)) => pick!(s).map(|v| Datum::int(*v)),
        // An unsigned 32-bit column's statistics are its bit patterns, ordered unsigned.
        (P::Long, Statistics::Int32(s)) if unsigned => {
            pick!(s).map(|v| Datum::long(i64::from(*v as u32)))
        }
        (P::Long, Statistics::Int32(s)) => pick!(s).map(|v| Datum::long(i64::from(*v))),
        (P::Long, Statistics::Int64(s)) => pick!(s).map(|v| Datum::long(*v)),
        (P::Float, Statistics::Float(s)) => {
            pick!(s).filter(|v| !v.is_nan()).map(|v| Datum::float(*v))
        }
        (P::Double, Statistics::Float(s)) => pick!(s)
            .filter(|v| !v.is_nan())
            .map(|v| Datum::double(f64::from(*v))),
        (P::Double, Statistics::Double(s)) => {
            pick!(s).filter(|v| !v.is_nan()).map(|v| Datum::double(*v))
        }
        (P::Date, Statistics::Int32(s)) => pick!(s).map(|v| Datum::date(*v)),
        (P::Time, Statistics::Int64(s)) => pick!(s).and_then(|v| Datum::time_micros(*v).ok()),
        (P::Timestamp | P::Timestamptz, Statistics::Int64(s)) => {
            let micros = match &logical {
                Some(LogicalType::Timestamp {
                    unit: TimeUnit::MICROS,
                    ..
                }) => pick!(s).copied(),
                Some(LogicalType::Timestamp {
                    unit: TimeUnit::MILLIS,
                    ..
                }) => pick!(s).and_then(|v| v.checked_mul(1000)),
                _ => None,
            }?;
            Some(if *ty == P::Timestamp {
                Datum::timestamp_micros(micros)
            } else {
                Datum::timestamptz_micros(micros)
            })
        }
        (P::String, Statistics::ByteArray(_)) if bytewise => {
            bytes().and_then(|b| std::str::from_utf8(b).ok().map(Datum::string))
        }
        (P::Binary, Statistics::ByteArray(_) | Statistics::FixedLenByteArray(_)) if bytewise => {
            bytes().map(|b| Datum::binary(b.iter().copied()))
        }
        (P::Fixed(_), Statistics::FixedLenByteArray(_)) if bytewise => {
            bytes().map(|b| Datum::fixed(b.iter().copied()))
        }
        // The unscaled value of an INT32 or INT64 decimal, when the file's scale is the
        // column's (another scale is another number). Byte-array decimals get none: their
        // statistics are two's complement that writers have ordered wrongly for years, in the
        // current statistics fields too (Arrow C++ before 4.0 byte by byte as signed chars,
        // PARQUET-1655; arrow-rs unsigned, and across lengths, arrow-rs#1532, #10860, #11073;
        // parquet-go and polars unsigned), and a bound narrower than the data hides rows.
        (P::Decimal { precision, scale }, Statistics::Int32(_) | Statistics::Int64(_))
            if matches!(
                logical,
                Some(LogicalType::Decimal { scale: s, precision: p })
                    if i64::from(s) == i64::from(*scale) && p >= 1 && p as u32 <= *precision
            ) =>
        {
            let unscaled = match stats {
                Statistics::Int32(s) => pick!(s).map(|v| i128::from(*v)),
                Statistics::Int64(s) => pick!(s).map(|v| i128::from(*v)),
                _ => None,
            }?;
            decimal(unscaled, *precision, ty)
        }
        // Sixteen bytes (a cut statistic is not one), ordered bytewise (unsigned) by Parquet
        // as by Iceberg; a row group whose minimum is above its maximum says its writer
        // ordered them otherwise.
        (P::Uuid, Statistics::FixedLenByteArray(s))
            if !stats.is_min_max_deprecated()
                && matches!(logical, Some(LogicalType::Uuid))
                && s.min_bytes_opt()
                    .zip(s.max_bytes_opt())
                    .is_some_and(|(lo, hi)| lo.len() == 16 && hi.len() == 16 && lo <= hi) =>
        {
            bytes().and_then(|b| Datum::try_from_bytes(b, P::Uuid).ok())
        }
        _ => None,
    }
}

/// A decimal bound of column type `ty` (of `precision` digits) from its unscaled value; none
/// for a value of more digits than the column holds (writers do not stop one): the manifest
/// keeps the bytes a value of the precision needs, so a longer one would be cut into another
/// number.
fn decimal(unscaled: i128, precision: u32, ty: &PrimitiveType) -> Option<Datum> {
    let limit = 10i128.checked_pow(precision)?;
    if unscaled.checked_abs()? >= limit {
        return None;
    }
    Datum::try_from_bytes(&unscaled.to_be_bytes(), ty.clone()).ok()
}

/// A column's metrics mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsMode {
    /// Nothing.
    None,
    /// Counts and sizes, no bounds.
    Counts,
    /// Bounds cut to this many characters (strings) or bytes (binary).
    Truncate(usize),
    /// Bounds as they are.
    Full,
}

impl MetricsMode {
    fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "none" => Some(Self::None),
            "counts" => Some(Self::Counts),
            "full" => Some(Self::Full),
            _ => s
                .strip_prefix("truncate(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.trim().parse().ok())
                .filter(|n| *n > 0)
                .map(Self::Truncate),
        }
    }
}

/// The table's metrics modes, by field id, as Java's `MetricsConfig` reads them.
#[derive(Debug, Clone)]
pub struct MetricsConfig {
    default: MetricsMode,
    /// Leaf fields beyond the first `max-inferred-column-defaults` get `none` when the default
    /// is not set explicitly.
    limited: Option<std::collections::HashSet<i32>>,
    columns: HashMap<i32, MetricsMode>,
}

const DEFAULT_KEY: &str = "write.metadata.metrics.default";
const COLUMN_PREFIX: &str = "write.metadata.metrics.column.";
const MAX_INFERRED_KEY: &str = "write.metadata.metrics.max-inferred-column-defaults";

impl MetricsConfig {
    /// From the table's properties; a mode that does not parse is refused, naming the key.
    pub fn of(schema: &Schema, properties: &HashMap<String, String>) -> ops_core::Result<Self> {
        // A mode that does not parse falls back to the default, as Java's `MetricsConfig`
        // logs and does.
        let parsed = |key: &str, value: &str| {
            let mode = MetricsMode::parse(value);
            if mode.is_none() {
                tracing::warn!(
                    key,
                    value,
                    "table property is no metrics mode (none, counts, truncate(N), full): \
                     using truncate(16)"
                );
            }
            mode.unwrap_or(MetricsMode::Truncate(16))
        };
        let (default, limited) = match properties.get(DEFAULT_KEY) {
            Some(v) => (parsed(DEFAULT_KEY, v), None),
            None => {
                let max: usize = properties
                    .get(MAX_INFERRED_KEY)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(100);
                // Java counts top-level columns and keeps every field of the first `max`.
                let top = schema.as_struct().fields();
                let limited =
                    (top.len() > max).then(|| top.iter().take(max).flat_map(field_ids).collect());
                (MetricsMode::Truncate(16), limited)
            }
        };
        let mut columns = HashMap::new();
        for (k, v) in properties {
            if let Some(name) = k.strip_prefix(COLUMN_PREFIX) {
                let mode = parsed(k, v);
                if let Some(f) = schema.field_by_name(name) {
                    columns.insert(f.id, mode);
                }
            }
        }
        Ok(Self {
            default,
            limited,
            columns,
        })
    }

    /// The mode of field `id`.
    pub fn mode(&self, id: i32) -> MetricsMode {
        if let Some(m) = self.columns.get(&id) {
            return *m;
        }
        match &self.limited {
            Some(first) if !first.contains(&id) => MetricsMode::None,
            _ => self.default,
        }
    }
}

/// The ids of `field` and every field inside it (walked with a stack, not recursion).
fn field_ids(field: &iceberg::spec::NestedFieldRef) -> Vec<i32> {
    let mut out = Vec::new();
    let mut stack: Vec<(i32, &Type)> = vec![(field.id, field.field_type.as_ref())];
    while let Some((id, ty)) = stack.pop() {
        out.push(id);
        match ty {
            Type::Primitive(_) => {}
            Type::Struct(s) => {
                stack.extend(s.fields().iter().map(|f| (f.id, f.field_type.as_ref())))
            }
            Type::List(l) => stack.push((l.element_field.id, l.element_field.field_type.as_ref())),
            Type::Map(m) => {
                stack.push((m.value_field.id, m.value_field.field_type.as_ref()));
                stack.push((m.key_field.id, m.key_field.field_type.as_ref()));
            }
        }
    }
    out
}

/// What a data file records of its columns under `config`.
#[derive(Debug, Default)]
pub struct FileMetrics {
    /// Compressed bytes per field.
    pub column_sizes: HashMap<i32, u64>,
    /// Values per field.
    pub value_counts: HashMap<i32, u64>,
    /// NULLs per field.
    pub null_value_counts: HashMap<i32, u64>,
    /// Lower bounds.
    pub lower_bounds: HashMap<i32, Datum>,
    /// Upper bounds.
    pub upper_bounds: HashMap<i32, Datum>,
}

/// `stats` cut to `config`'s modes.
pub fn file_metrics(stats: &HashMap<i32, ColumnStats>, config: &MetricsConfig) -> FileMetrics {
    let mut out = FileMetrics::default();
    for (&id, s) in stats {
        let mode = config.mode(id);
        if mode == MetricsMode::None {
            continue;
        }
        out.column_sizes.insert(id, s.size);
        out.value_counts.insert(id, s.values);
        if let Some(n) = s.nulls {
            out.null_value_counts.insert(id, n);
        }
        let cut = match mode {
            MetricsMode::Full => None,
            MetricsMode::Truncate(n) => Some(n),
            _ => continue,
        };
        if let Some(l) = s.lower.as_ref().and_then(|l| truncate(l, cut, Side::Lower)) {
            out.lower_bounds.insert(id, l);
        }
        if let Some(u) = s.upper.as_ref().and_then(|u| truncate(u, cut, Side::Upper)) {
            out.upper_bounds.insert(id, u);
        }
    }
    out
}

/// A bound cut to `n` characters or bytes, as Java's `UnicodeUtil`/`BinaryUtil` cut them: a
/// lower bound is cut; an upper bound is cut and its last character (byte) incremented, or
/// dropped when none can be.
fn truncate(d: &Datum, n: Option<usize>, side: Side) -> Option<Datum> {
    use iceberg::spec::PrimitiveLiteral as L;
    let Some(n) = n else { return Some(d.clone()) };
    match (d.data_type(), d.literal()) {
        (PrimitiveType::String, L::String(s)) => {
            let chars: Vec<char> = s.chars().collect();
            if chars.len() <= n {
                return Some(d.clone());
            }
            let mut cut: Vec<char> = chars[..n].to_vec();
            if side == Side::Lower {
                return Some(Datum::string(cut.into_iter().collect::<String>()));
            }
            while let Some(last) = cut.pop() {
                let mut next = u32::from(last) + 1;
                if (0xD800..=0xDFFF).contains(&next) {
                    next = 0xE000;
                }
                if let Some(c) = char::from_u32(next) {
                    cut.push(c);
                    return Some(Datum::string(cut.into_iter().collect::<String>()));
                }
            }
            None
        }
        (PrimitiveType::Binary, L::Binary(b)) => {
            if b.len() <= n {
                return Some(d.clone());
            }
            let mut cut = b[..n].to_vec();
            if side == Side::Lower {
                return Some(Datum::binary(cut));
            }
            while let Some(last) = cut.pop() {
                if last < u8::MAX {
                    cut.push(last + 1);
                    return Some(Datum::binary(cut));
                }
            }
            None
        }
        _ => Some(d.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decimal bounds are the unscaled values, as Iceberg writes them (big-endian two's
    /// complement, the fewest bytes for the precision), from INT32 and INT64 columns; none for
    /// byte-array decimals, another scale, or a value wider than the precision. UUID bounds are
    /// their bytes; none from statistics ordered otherwise or cut.
    #[test]
    fn decimal_and_uuid_bounds_are_their_values() {
        use parquet::data_type::{ByteArray, FixedLenByteArray};
        use parquet::schema::parser::parse_message_type;
        use parquet::schema::types::SchemaDescriptor;
        let schema = parse_message_type(
            "message m {
                required int32 a (DECIMAL(9, 2));
                required int64 b (DECIMAL(18, 2));
                required fixed_len_byte_array(9) c (DECIMAL(20, 2));
                required binary d (DECIMAL(20, 2));
                required fixed_len_byte_array(16) u (UUID);
            }",
        )
        .map(|t| SchemaDescriptor::new(std::sync::Arc::new(t)));
        let Ok(schema) = schema else {
            panic!("the test schema parses");
        };
        let col = |i: usize| schema.column(i);
        let dec = |p: u32, s: u32| PrimitiveType::Decimal {
            precision: p,
            scale: s,
        };
        let bound = |ty: &PrimitiveType, i: usize, stats: &Statistics, side: Side| {
            datum(ty, &col(i), stats, side).map(|d| d.to_bytes().map(|b| b.to_vec()).ok())
        };
        // -1.23 and 4.56 as unscaled -123 and 456.
        let ints = Statistics::int32(Some(-123), Some(456), None, Some(0), false);
        let want_lo = Datum::try_from_bytes(&(-123i128).to_be_bytes(), dec(9, 2))
            .and_then(|d| d.to_bytes())
            .map(|b| b.to_vec())
            .ok();
        assert_eq!(
            bound(&dec(9, 2), 0, &ints, Side::Lower),
            Some(want_lo.clone())
        );
        assert_eq!(want_lo, Some(vec![0x85]));
        // A wider column of the same scale takes it; another scale does not.
        assert!(bound(&dec(12, 2), 0, &ints, Side::Upper).is_some());
        assert_eq!(bound(&dec(9, 3), 0, &ints, Side::Upper), None);
        let longs = Statistics::int64(Some(-5), Some(1 << 40), None, Some(0), false);
        assert!(bound(&dec(18, 2), 1, &longs, Side::Upper).is_some());
        // Nine bytes of two's complement: -2 and 2^56.
        let neg =
            FixedLenByteArray::from(vec![0xff; 8].into_iter().chain([0xfe]).collect::<Vec<u8>>());
        let big = FixedLenByteArray::from(vec![0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let fixed = Statistics::fixed_len_byte_array(
            Some(neg.clone()),
            Some(big.clone()),
            None,
            Some(0),
            false,
        );
        // Byte-array decimals: none, however their statistics are stored.
        assert_eq!(datum(&dec(20, 2), &col(2), &fixed, Side::Lower), None);
        let binary = Statistics::byte_array(
            Some(ByteArray::from(vec![0xffu8, 0x85])),
            Some(ByteArray::from(vec![0x01u8, 0xc8])),
            None,
            Some(0),
            false,
        );
        assert_eq!(datum(&dec(20, 2), &col(3), &binary, Side::Upper), None);
        // A value of more digits than the column's precision (a writer let it through):
        // none, where the manifest's bytes for 5 digits would have made it another number.
        let wide = Statistics::int64(Some(0), Some(1 << 32), None, Some(0), false);
        assert!(bound(&dec(18, 2), 1, &wide, Side::Upper).is_some());
        assert_eq!(bound(&dec(5, 2), 1, &wide, Side::Upper), None);
        let id: Vec<u8> = (1..=16).collect();
        let uuids = Statistics::fixed_len_byte_array(
            Some(FixedLenByteArray::from(id.clone())),
            Some(FixedLenByteArray::from(id.clone())),
            None,
            Some(0),
            false,
        );
        assert_eq!(
            datum(&PrimitiveType::Uuid, &col(4), &uuids, Side::Lower)
                .and_then(|d| d.to_bytes().ok())
                .map(|b| b.to_vec()),
            Some(id.clone())
        );
        // A minimum above the maximum (a writer ordering them otherwise), or a cut one: none.
        let high: Vec<u8> = std::iter::repeat_n(0x90, 16).collect();
        let reversed = Statistics::fixed_len_byte_array(
            Some(FixedLenByteArray::from(high)),
            Some(FixedLenByteArray::from(id.clone())),
            None,
            Some(0),
            false,
        );
        assert_eq!(
            datum(&PrimitiveType::Uuid, &col(4), &reversed, Side::Lower),
            None
        );
        let cut = Statistics::fixed_len_byte_array(
            Some(FixedLenByteArray::from(id[..8].to_vec())),
            Some(FixedLenByteArray::from(id)),
            None,
            Some(0),
            false,
        );
        assert_eq!(
            datum(&PrimitiveType::Uuid, &col(4), &cut, Side::Upper),
            None
        );
    }

    #[test]
    fn modes_parse_and_bounds_truncate_as_java() {
        assert_eq!(
            MetricsMode::parse("truncate(16)"),
            Some(MetricsMode::Truncate(16))
        );
        assert_eq!(MetricsMode::parse(" Full "), Some(MetricsMode::Full));
        assert_eq!(MetricsMode::parse("truncate(0)"), None);
        assert_eq!(MetricsMode::parse("some"), None);
        let s = Datum::string("abcdef");
        assert_eq!(
            truncate(&s, Some(3), Side::Lower),
            Some(Datum::string("abc"))
        );
        assert_eq!(
            truncate(&s, Some(3), Side::Upper),
            Some(Datum::string("abd"))
        );
        assert_eq!(truncate(&s, Some(10), Side::Upper), Some(s.clone()));
        let top = Datum::string(format!("a{}{}", char::MAX, char::MAX));
        assert_eq!(
            truncate(&top, Some(2), Side::Upper),
            Some(Datum::string("b"))
        );
        let b = Datum::binary(vec![1u8, 0xFF, 0xFF, 7]);
        assert_eq!(
            truncate(&b, Some(3), Side::Upper),
            Some(Datum::binary(vec![2u8]))
        );
        assert_eq!(
            truncate(&Datum::binary(vec![0xFFu8, 0xFF, 1]), Some(2), Side::Upper),
            None
        );
    }
}
