//! Whether a data file may hold a row a filter selects, from its column statistics, for files
//! written under any of the column's types.
//!
//! iceberg 0.10.1 decodes a data file's bounds with the schema of the manifest that lists it, so
//! a file written while `qty` was `int` has `int` bounds after `qty` became `long` (and `float`
//! bounds after a `float`→`double` widening). Its `Datum` comparisons across two types answer
//! "no order", which its metrics evaluators take as "no row can match": every file written
//! before the widening is pruned and its rows silently lost. Here a bound and a literal of two
//! types one column can hold over its history (int/long, float/double, decimals of one scale and
//! different precision) are compared as numbers, and anything that still cannot be compared
//! keeps the file.

use std::cmp::Ordering;

use iceberg::expr::{BoundPredicate, PredicateOperator};
use iceberg::spec::{DataFile, Datum, PrimitiveLiteral, PrimitiveType};

/// Whether `file`'s column statistics allow a row where `predicate` is TRUE (inclusive: true
/// when statistics are missing or cannot be compared). `predicate` must have no `NOT` left
/// (`rewrite_not`).
pub fn may_match(predicate: &BoundPredicate, file: &DataFile) -> bool {
    match predicate {
        BoundPredicate::AlwaysTrue => true,
        BoundPredicate::AlwaysFalse => false,
        BoundPredicate::And(e) => {
            let [l, r] = e.inputs();
            may_match(l, file) && may_match(r, file)
        }
        BoundPredicate::Or(e) => {
            let [l, r] = e.inputs();
            may_match(l, file) || may_match(r, file)
        }
        BoundPredicate::Not(_) => true,
        BoundPredicate::Unary(e) => {
            let id = e.term().field().id;
            let nulls = file.null_value_counts().get(&id).copied();
            let values = file.value_counts().get(&id).copied();
            match e.op() {
                PredicateOperator::IsNull => nulls != Some(0),
                PredicateOperator::NotNull => {
                    !matches!((nulls, values), (Some(n), Some(v)) if n == v)
                }
                PredicateOperator::IsNan => file.nan_value_counts().get(&id).copied() != Some(0),
                _ => true,
            }
        }
        BoundPredicate::Binary(e) => {
            let id = e.term().field().id;
            // Only NULLs: every comparison is unknown, and so is its negation (Java's
            // `containsNullsOnly`).
            if nulls_only(file, id) {
                return false;
            }
            // Bounds exclude NaN: a file that may hold NaN may hold rows any comparison's
            // negation matches.
            if file.nan_value_counts().get(&id).is_some_and(|n| *n > 0)
                || (is_floating(e.literal()) && !file.nan_value_counts().contains_key(&id))
            {
                return true;
            }
            let lower = file.lower_bounds().get(&id);
            let upper = file.upper_bounds().get(&id);
            let lit = e.literal();
            // A missing bound or one that cannot be ordered against the literal allows a row.
            let allows = |bound: Option<&Datum>, ok: fn(Ordering) -> bool| {
                bound.is_none_or(|b| compare(b, lit).is_none_or(ok))
            };
            match e.op() {
                PredicateOperator::LessThan => allows(lower, Ordering::is_lt),
                PredicateOperator::LessThanOrEq => allows(lower, Ordering::is_le),
                PredicateOperator::GreaterThan => allows(upper, Ordering::is_gt),
                PredicateOperator::GreaterThanOrEq => allows(upper, Ordering::is_ge),
                PredicateOperator::Eq => {
                    allows(lower, Ordering::is_le) && allows(upper, Ordering::is_ge)
                }
                _ => true,
            }
        }
        BoundPredicate::Set(e) => {
            let id = e.term().field().id;
            if nulls_only(file, id) {
                return false;
            }
            let lower = file.lower_bounds().get(&id);
            let upper = file.upper_bounds().get(&id);
            match e.op() {
                PredicateOperator::In => e.literals().iter().any(|lit| {
                    lower.is_none_or(|l| compare(l, lit).is_none_or(Ordering::is_le))
                        && upper.is_none_or(|u| compare(u, lit).is_none_or(Ordering::is_ge))
                }),
                _ => true,
            }
        }
    }
}

/// The file's statistics say every value of column `id` is NULL (a file without the column has
/// no counts for it and is not pruned here).
fn nulls_only(file: &DataFile, id: i32) -> bool {
    matches!(
        (file.null_value_counts().get(&id), file.value_counts().get(&id)),
        (Some(n), Some(v)) if n == v
    )
}

fn is_floating(d: &Datum) -> bool {
    matches!(d.data_type(), PrimitiveType::Float | PrimitiveType::Double)
}

/// A number as the widest type its column can be promoted to.
enum Wide {
    Integer(i64),
    Floating(f64),
}

fn widen(d: &Datum) -> Option<Wide> {
    Some(match (d.data_type(), d.literal()) {
        (PrimitiveType::Int, PrimitiveLiteral::Int(v)) => Wide::Integer(i64::from(*v)),
        (PrimitiveType::Long, PrimitiveLiteral::Long(v)) => Wide::Integer(*v),
        (PrimitiveType::Float, PrimitiveLiteral::Float(v)) => Wide::Floating(f64::from(v.0)),
        (PrimitiveType::Double, PrimitiveLiteral::Double(v)) => Wide::Floating(v.0),
        _ => return None,
    })
}

/// Orders two values of one column that may have been written under two of its types (a bound
/// of a file written before `int`→`long` against a `long` literal): `int`/`long` as integers,
/// `float`/`double` as IEEE numbers (so -0.0 equals 0.0, as the row filter says, and NaN has no
/// order), decimals by value whatever their precision; otherwise iceberg's own order, `None`
/// when it has none.
pub fn compare(a: &Datum, b: &Datum) -> Option<Ordering> {
    match (widen(a), widen(b)) {
        (Some(Wide::Integer(x)), Some(Wide::Integer(y))) => Some(x.cmp(&y)),
        (Some(Wide::Floating(x)), Some(Wide::Floating(y))) => x.partial_cmp(&y),
        (Some(_), Some(_)) => None,
        _ => a.partial_cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use iceberg::expr::{Bind, Predicate, Reference};
    use iceberg::spec::{
        DataContentType, DataFileBuilder, DataFileFormat, NestedField, Schema, Struct, Type,
    };

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn schema() -> Arc<Schema> {
        let p = |t| Type::Primitive(t);
        Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "qty", p(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "score", p(PrimitiveType::Double)).into(),
                    NestedField::optional(
                        3,
                        "price",
                        p(PrimitiveType::Decimal {
                            precision: 12,
                            scale: 2,
                        }),
                    )
                    .into(),
                ])
                .build()
                .unwrap_or_else(|e| panic!("schema: {e}")),
        )
    }

    /// A file written while qty was int, score float and price decimal(9,2): its bounds have
    /// those types, as iceberg decodes them from the manifest it was listed in.
    fn old_file() -> DataFile {
        let dec = |m: i128| {
            Datum::try_from_bytes(
                &m.to_be_bytes(),
                PrimitiveType::Decimal {
                    precision: 9,
                    scale: 2,
                },
            )
            .unwrap_or_else(|e| panic!("decimal: {e}"))
        };
        DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_path("old.parquet".into())
            .file_format(DataFileFormat::Parquet)
            .partition(Struct::empty())
            .record_count(10)
            .file_size_in_bytes(100)
            .null_value_counts(HashMap::from([(1, 0), (2, 0), (3, 0)]))
            .value_counts(HashMap::from([(1, 10), (2, 10), (3, 10)]))
            .nan_value_counts(HashMap::from([(2, 0)]))
            .lower_bounds(HashMap::from([
                (1, Datum::int(0)),
                (2, Datum::float(-0.0)),
                (3, dec(100)),
            ]))
            .upper_bounds(HashMap::from([
                (1, Datum::int(999)),
                (2, Datum::float(2.5)),
                (3, dec(9_999)),
            ]))
            .build()
            .unwrap_or_else(|e| panic!("file: {e}"))
    }

    fn may(p: Predicate) -> bool {
        let bound = p
            .bind(schema(), true)
            .unwrap_or_else(|e| panic!("bind: {e}"))
            .rewrite_not();
        may_match(&bound, &old_file())
    }

    #[test]
    fn bounds_of_a_narrower_type_prune_exactly() -> TestResult {
        let qty = || Reference::new("qty");
        let score = || Reference::new("score");
        let price = || Reference::new("price");
        // A decimal(12, 2) literal from its unscaled value.
        let dec = |unscaled: i128| {
            Datum::try_from_bytes(
                &unscaled.to_be_bytes(),
                PrimitiveType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            )
        };
        // (predicate, may the old file hold a matching row)
        let cases = vec![
            (qty().greater_than_or_equal_to(Datum::long(10)), true),
            (qty().greater_than_or_equal_to(Datum::long(999)), true),
            (qty().greater_than(Datum::long(999)), false),
            (qty().less_than(Datum::long(0)), false),
            (qty().less_than_or_equal_to(Datum::long(0)), true),
            (qty().equal_to(Datum::long(1_i64 << 40)), false),
            (qty().equal_to(Datum::long(5)), true),
            (
                qty().is_in([Datum::long(-3), Datum::long(1_i64 << 40)]),
                false,
            ),
            (qty().is_in([Datum::long(-3), Datum::long(7)]), true),
            (!qty().less_than(Datum::long(1000)), false),
            (score().greater_than(Datum::double(2.5)), false),
            (score().greater_than(Datum::double(2.4)), true),
            // -0.0 equals 0.0: a lower bound of -0.0 allows no row below 0.0, but allows 0.0.
            (score().less_than(Datum::double(0.0)), false),
            (score().less_than_or_equal_to(Datum::double(0.0)), true),
            (price().less_than(dec(0)?), false),
            (price().greater_than(dec(9_999)?), false),
            (price().greater_than(dec(9_998)?), true),
            (price().equal_to(dec(100)?), true),
        ];
        for (p, want) in cases {
            assert_eq!(may(p.clone()), want, "{p}");
        }
        Ok(())
    }

    /// A file whose column holds only NULLs has no row where a comparison on it, an `IN` or a
    /// negated comparison is TRUE; `IS NULL` and a comparison on another column keep it.
    #[test]
    fn a_column_of_only_nulls_matches_no_comparison() {
        let file = DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_path("nulls.parquet".into())
            .file_format(DataFileFormat::Parquet)
            .partition(Struct::empty())
            .record_count(10)
            .file_size_in_bytes(100)
            .null_value_counts(HashMap::from([(1, 10), (2, 0)]))
            .value_counts(HashMap::from([(1, 10), (2, 10)]))
            .nan_value_counts(HashMap::from([(2, 0)]))
            .upper_bounds(HashMap::from([(2, Datum::float(2.5))]))
            .build()
            .unwrap_or_else(|e| panic!("file: {e}"));
        let qty = || Reference::new("qty");
        let on = |p: Predicate| {
            let bound = p
                .bind(schema(), true)
                .unwrap_or_else(|e| panic!("bind: {e}"))
                .rewrite_not();
            may_match(&bound, &file)
        };
        for p in [
            qty().equal_to(Datum::long(5)),
            qty().less_than(Datum::long(5)),
            qty().greater_than_or_equal_to(Datum::long(5)),
            qty().is_in([Datum::long(1), Datum::long(2)]),
            !qty().less_than(Datum::long(5)),
        ] {
            assert!(!on(p.clone()), "{p}");
        }
        assert!(on(qty().is_null()));
        assert!(on(Reference::new("score").less_than(Datum::double(1.0))));
    }

    #[test]
    fn incomparable_values_keep_the_file() {
        // A string literal against int bounds (never produced by binding, but never pruned).
        assert_eq!(compare(&Datum::int(1), &Datum::string("1")), None);
        assert_eq!(compare(&Datum::int(1), &Datum::double(1.0)), None);
        assert_eq!(compare(&Datum::double(f64::NAN), &Datum::float(1.0)), None);
        assert_eq!(
            compare(&Datum::float(1.5), &Datum::double(1.5)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&Datum::long(i64::MAX), &Datum::int(i32::MAX)),
            Some(Ordering::Greater)
        );
    }
}
