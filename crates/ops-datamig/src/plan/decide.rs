//! Deciding a row filter for a whole file from its partition values: every row passes, none
//! does, or it depends on the row (see [`decide`]).
//!
//! Routing uses the verdict: a file whose rows all pass can be copied, one none of whose rows
//! pass is skipped, and any other file is rewritten through the row filter.

use std::cmp::Ordering;
use std::sync::Arc;

use iceberg::expr::{Bind, BoundPredicate, BoundReference, Predicate, PredicateOperator};
use iceberg::spec::{
    Datum, Literal, NestedField, PartitionSpec, PrimitiveLiteral, PrimitiveType, Schema, SchemaRef,
    Struct, Transform,
};

/// What a filter does to every row of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every row passes.
    Every,
    /// No row passes (each is false or unknown).
    NoRow,
    /// Depends on the row; why.
    Undecided(String),
}

/// One file's partition, as a filter sees it.
#[derive(Clone)]
pub(super) struct View<'a> {
    spec: &'a PartitionSpec,
    partition: &'a Struct,
    /// The partition tuple as a schema (partition field ids and names) to bind projections of
    /// non-identity transforms to; `None` when it cannot be built.
    partition_schema: Option<SchemaRef>,
    /// True while evaluating a predicate projected onto the partition: references are
    /// partition fields, not source columns.
    projected: bool,
}

impl<'a> View<'a> {
    pub(super) fn new(spec: &'a PartitionSpec, partition: &'a Struct, schema: &Schema) -> Self {
        let partition_schema = spec.partition_type(schema).ok().and_then(|t| {
            Schema::builder()
                .with_fields(t.fields().iter().cloned())
                .build()
                .ok()
                .map(Arc::new)
        });
        Self {
            spec,
            partition,
            partition_schema,
            projected: false,
        }
    }
}

/// The filter's verdict for a file from its partition tuple alone.
///
/// A reference to an identity-partitioned column is a constant within the file (every row
/// holds the partition value), so the predicate has one value for all its rows. A column under
/// another transform (day, bucket, truncate, ...) is decided through iceberg's projections of
/// the leaf onto that partition field: the strict projection true means every row passes, the
/// inclusive projection false means none does (the scan the rewrite path uses prunes such files
/// the same way). Leaves follow the semantics of iceberg's Arrow reader, which rewrites the
/// rows of the other files: after `rewrite_not`, a comparison, `IN`, `NOT IN` or `starts_with`
/// on a NULL does not pass. Floating-point values are left undecided (NaN ordering).
pub(super) fn decide(filter: &BoundPredicate, view: &View<'_>) -> Verdict {
    match filter {
        BoundPredicate::AlwaysTrue => Verdict::Every,
        BoundPredicate::AlwaysFalse => Verdict::NoRow,
        BoundPredicate::And(e) => {
            let [l, r] = e.inputs();
            match (decide(l, view), decide(r, view)) {
                (Verdict::NoRow, _) | (_, Verdict::NoRow) => Verdict::NoRow,
                (Verdict::Every, Verdict::Every) => Verdict::Every,
                (Verdict::Undecided(w), _) | (_, Verdict::Undecided(w)) => Verdict::Undecided(w),
            }
        }
        BoundPredicate::Or(e) => {
            let [l, r] = e.inputs();
            match (decide(l, view), decide(r, view)) {
                (Verdict::Every, _) | (_, Verdict::Every) => Verdict::Every,
                (Verdict::NoRow, Verdict::NoRow) => Verdict::NoRow,
                (Verdict::Undecided(w), _) | (_, Verdict::Undecided(w)) => Verdict::Undecided(w),
            }
        }
        // rewrite_not leaves no NOT; a NOT over an unknown value is unknown, not its negation.
        BoundPredicate::Not(_) => Verdict::Undecided("a negation".to_string()),
        BoundPredicate::Unary(e) => leaf(e.term(), filter, view, |value| match e.op() {
            PredicateOperator::IsNull => Some(value.is_none()),
            PredicateOperator::NotNull => Some(value.is_some()),
            _ => None,
        }),
        BoundPredicate::Binary(e) => leaf(e.term(), filter, view, |value| {
            // A comparison or starts_with on NULL is NULL, and `not(NULL)` too: no row passes.
            let Some(value) = value else {
                return Some(false);
            };
            let literal = e.literal().literal();
            let ord = compare(value, literal);
            match e.op() {
                PredicateOperator::LessThan => ord.map(Ordering::is_lt),
                PredicateOperator::LessThanOrEq => ord.map(Ordering::is_le),
                PredicateOperator::GreaterThan => ord.map(Ordering::is_gt),
                PredicateOperator::GreaterThanOrEq => ord.map(Ordering::is_ge),
                PredicateOperator::Eq => ord.map(Ordering::is_eq),
                PredicateOperator::NotEq => ord.map(Ordering::is_ne),
                PredicateOperator::StartsWith => starts_with(value, literal),
                PredicateOperator::NotStartsWith => starts_with(value, literal).map(|b| !b),
                _ => None,
            }
        }),
        BoundPredicate::Set(e) => {
            let empty = e.literals().is_empty();
            leaf(e.term(), filter, view, |value| {
                let Some(value) = value else {
                    // iceberg's reader: NOT IN () keeps a NULL, anything else drops it.
                    return Some(e.op() == PredicateOperator::NotIn && empty);
                };
                let mut any = false;
                for l in e.literals() {
                    any |= compare(value, l.literal())?.is_eq();
                }
                match e.op() {
                    PredicateOperator::In => Some(any),
                    PredicateOperator::NotIn => Some(!any),
                    _ => None,
                }
            })
        }
    }
}

/// Evaluates the leaf `predicate` on `term`'s value in the partition tuple: `eval` gets the
/// value (`None` for NULL) and returns whether the rows pass, or `None` when it cannot tell.
fn leaf(
    term: &BoundReference,
    predicate: &BoundPredicate,
    view: &View<'_>,
    eval: impl FnOnce(Option<&PrimitiveLiteral>) -> Option<bool>,
) -> Verdict {
    let field = term.field();
    let index = if view.projected {
        view.spec
            .fields()
            .iter()
            .position(|p| p.field_id == field.id)
    } else {
        view.spec
            .fields()
            .iter()
            .position(|p| p.source_id == field.id && p.transform == Transform::Identity)
    };
    let Some(index) = index else {
        return if view.projected {
            Verdict::Undecided(format!("partition field `{}` not found", field.name))
        } else {
            project(field, predicate, view)
        };
    };
    if matches!(
        field.field_type.as_primitive_type(),
        Some(PrimitiveType::Float | PrimitiveType::Double) | None
    ) {
        return Verdict::Undecided(format!(
            "column `{}` is floating point (NaN ordering is left to the reader)",
            field.name
        ));
    }
    let value = match view.partition.fields().get(index) {
        Some(Some(Literal::Primitive(p))) => Some(p),
        Some(None) => None,
        _ => {
            return Verdict::Undecided(format!(
                "the partition value of `{}` is missing",
                field.name
            ));
        }
    };
    match eval(value) {
        Some(true) => Verdict::Every,
        Some(false) => Verdict::NoRow,
        None => Verdict::Undecided(format!(
            "the filter on `{}` cannot be evaluated on its partition value",
            field.name
        )),
    }
}

/// Decides a leaf on a column partitioned by non-identity transforms through iceberg's strict
/// and inclusive projections onto each such partition field.
fn project(field: &NestedField, predicate: &BoundPredicate, view: &View<'_>) -> Verdict {
    let fields: Vec<_> = view
        .spec
        .fields()
        .iter()
        .filter(|p| p.source_id == field.id && p.transform != Transform::Void)
        .collect();
    if fields.is_empty() {
        return Verdict::Undecided(format!(
            "it reads column `{}`, which is not a partition column (filter on a \
             non-partition column)",
            field.name
        ));
    }
    // Java's truncate[W] of an int or long within W of the type's minimum wraps to near its
    // maximum (`v - (((v % W) + W) % W)`), and files carry that value as Java writes it, so
    // neither projection can speak for the file's rows.
    let integer = matches!(
        field.field_type.as_primitive_type(),
        Some(PrimitiveType::Int | PrimitiveType::Long)
    );
    if let Some(schema) = &view.partition_schema {
        let on_partition = View {
            partition_schema: None,
            projected: true,
            ..view.clone()
        };
        let verdict = |p: iceberg::Result<Option<Predicate>>| {
            let bound = p.ok().flatten()?.bind(schema.clone(), true).ok()?;
            Some(decide(&bound, &on_partition))
        };
        // iceberg 0.10.1's truncate projections of string predicates compare the literal's byte
        // length with the width, which counts characters: past ASCII they can claim every or no
        // row wrongly (`starts_with 'éa'` under truncate(3) prunes partition `éab`).
        let multibyte = string_literals(predicate).any(|s| !s.is_ascii());
        for pf in &fields {
            let truncate = matches!(pf.transform, Transform::Truncate(_));
            if truncate && (multibyte || integer) {
                continue;
            }
            if verdict(pf.transform.strict_project(&pf.name, predicate)) == Some(Verdict::Every) {
                return Verdict::Every;
            }
            if verdict(pf.transform.project(&pf.name, predicate)) == Some(Verdict::NoRow) {
                return Verdict::NoRow;
            }
        }
    }
    let transforms: Vec<String> = fields
        .iter()
        .map(|p| format!("{}({})", p.transform, field.name))
        .collect();
    let truncate = fields
        .iter()
        .any(|p| matches!(p.transform, Transform::Truncate(_)));
    Verdict::Undecided(format!(
        "the filter on `{}` depends on the row within the file's {} partition{}",
        field.name,
        transforms.join(", "),
        if truncate && string_literals(predicate).any(|s| !s.is_ascii()) {
            " (a non-ASCII string literal is not projected through truncate)"
        } else if truncate && integer {
            " (an integer truncate wraps near the type's minimum, so its value bounds nothing)"
        } else {
            ""
        }
    ))
}

/// The string literals of a leaf predicate.
fn string_literals(predicate: &BoundPredicate) -> impl Iterator<Item = &str> {
    let literals: Vec<&Datum> = match predicate {
        BoundPredicate::Binary(e) => vec![e.literal()],
        BoundPredicate::Set(e) => e.literals().iter().collect(),
        _ => Vec::new(),
    };
    literals.into_iter().filter_map(|d| match d.literal() {
        PrimitiveLiteral::String(s) => Some(s.as_str()),
        _ => None,
    })
}

/// Orders a partition value against a predicate literal of the column's type (a value written
/// before an `int`→`long` widening compares as a long).
fn compare(a: &PrimitiveLiteral, b: &PrimitiveLiteral) -> Option<Ordering> {
    use PrimitiveLiteral as L;
    Some(match (a, b) {
        (L::Boolean(x), L::Boolean(y)) => x.cmp(y),
        (L::Int(x), L::Int(y)) => x.cmp(y),
        (L::Long(x), L::Long(y)) => x.cmp(y),
        (L::Int(x), L::Long(y)) => i64::from(*x).cmp(y),
        (L::Long(x), L::Int(y)) => x.cmp(&i64::from(*y)),
        (L::String(x), L::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (L::Binary(x), L::Binary(y)) => x.cmp(y),
        (L::Int128(x), L::Int128(y)) => x.cmp(y),
        (L::UInt128(x), L::UInt128(y)) => x.cmp(y),
        _ => return None,
    })
}

fn starts_with(a: &PrimitiveLiteral, prefix: &PrimitiveLiteral) -> Option<bool> {
    match (a, prefix) {
        (PrimitiveLiteral::String(x), PrimitiveLiteral::String(p)) => {
            Some(x.starts_with(p.as_str()))
        }
        (PrimitiveLiteral::Binary(x), PrimitiveLiteral::Binary(p)) => Some(x.starts_with(p)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use iceberg::expr::Reference;
    use iceberg::spec::Type;

    use super::*;
    use crate::testing::{long, orders, region, schema, spec};

    fn verdict(filter: Predicate, partition: Option<&str>) -> Verdict {
        let s = orders();
        let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
        let spec = spec(&s, 2, Transform::Identity);
        let part = region(partition);
        decide(&bound, &View::new(&spec, &part, &s))
    }

    #[test]
    fn identity_partition_filters_are_decided_per_file() {
        let eu = || Reference::new("region").equal_to(Datum::string("eu"));
        assert_eq!(verdict(eu(), Some("eu")), Verdict::Every);
        assert_eq!(verdict(eu(), Some("us")), Verdict::NoRow);
        // NULL = 'eu' is unknown: the rewrite path drops such rows too.
        assert_eq!(verdict(eu(), None), Verdict::NoRow);
        assert_eq!(verdict(eu().negate(), None), Verdict::NoRow);
        assert_eq!(verdict(eu().negate(), Some("us")), Verdict::Every);
        assert_eq!(
            verdict(Reference::new("region").is_null(), None),
            Verdict::Every
        );
        assert_eq!(
            verdict(Reference::new("region").is_not_null(), None),
            Verdict::NoRow
        );
        let set = |op_in: bool| {
            let r = Reference::new("region");
            let v = [Datum::string("eu"), Datum::string("apac")];
            if op_in { r.is_in(v) } else { r.is_not_in(v) }
        };
        assert_eq!(verdict(set(true), Some("apac")), Verdict::Every);
        assert_eq!(verdict(set(false), Some("apac")), Verdict::NoRow);
        assert_eq!(verdict(set(false), Some("us")), Verdict::Every);
        assert_eq!(verdict(set(false), None), Verdict::NoRow);
        assert_eq!(
            verdict(
                Reference::new("region").starts_with(Datum::string("ap")),
                Some("apac")
            ),
            Verdict::Every
        );
    }

    #[test]
    fn a_filter_on_a_data_column_is_undecided_unless_the_partition_settles_it() {
        let amount = || Reference::new("amount").greater_than(Datum::int(5));
        let eu = || Reference::new("region").equal_to(Datum::string("eu"));
        match verdict(amount(), Some("eu")) {
            Verdict::Undecided(why) => {
                assert!(
                    why.contains("`amount`") && why.contains("non-partition"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            verdict(eu().and(amount()), Some("eu")),
            Verdict::Undecided(_)
        ));
        assert_eq!(verdict(eu().and(amount()), Some("us")), Verdict::NoRow);
        assert_eq!(verdict(eu().or(amount()), Some("eu")), Verdict::Every);
        assert!(matches!(
            verdict(eu().or(amount()), Some("us")),
            Verdict::Undecided(_)
        ));
    }

    #[test]
    fn a_non_identity_transform_is_undecided() {
        let s = orders();
        let bound = Reference::new("amount")
            .equal_to(Datum::int(5))
            .bind(s.clone(), true)
            .unwrap();
        let bucket = spec(&s, 3, Transform::Bucket(8));
        // `amount = 5` holds in no row of the seven buckets 5 does not hash to, and is not
        // decided for the one it does.
        let verdicts: Vec<Verdict> = (0..8)
            .map(|b| {
                let p = Struct::from_iter([Some(Literal::int(b))]);
                decide(&bound, &View::new(&bucket, &p, &s))
            })
            .collect();
        let undecided = verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Undecided(_)))
            .count();
        let none = verdicts.iter().filter(|v| **v == Verdict::NoRow).count();
        assert_eq!((undecided, none), (1, 7), "{verdicts:?}");
    }

    #[test]
    fn a_day_partition_decides_a_range_through_iceberg_projections() {
        let s = schema(vec![NestedField::optional(
            1,
            "ts",
            Type::Primitive(PrimitiveType::Timestamp),
        )]);
        let day = spec(&s, 1, Transform::Day);
        const DAY_US: i64 = 86_400_000_000;
        let jan1 = 19_723; // 2024-01-01 in days since the epoch
        let at = |filter: Predicate, d: Option<i32>| {
            let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
            let part = Struct::from_iter([d.map(Literal::date)]);
            decide(&bound, &View::new(&day, &part, &s))
        };
        let from =
            |us: i64| Reference::new("ts").greater_than_or_equal_to(Datum::timestamp_micros(us));
        let midnight = i64::from(jan1 + 1) * DAY_US; // 2024-01-02T00:00
        assert_eq!(at(from(midnight), Some(jan1 + 1)), Verdict::Every);
        assert_eq!(at(from(midnight), Some(jan1 + 5)), Verdict::Every);
        assert_eq!(at(from(midnight), Some(jan1)), Verdict::NoRow);
        assert_eq!(at(from(midnight), None), Verdict::NoRow);
        let noon = midnight + DAY_US / 2;
        assert!(matches!(
            at(from(noon), Some(jan1 + 1)),
            Verdict::Undecided(w) if w.contains("day(ts)")
        ));
        assert_eq!(at(from(noon), Some(jan1 + 2)), Verdict::Every);
        assert_eq!(at(from(noon).negate(), Some(jan1 + 2)), Verdict::NoRow);
    }

    #[test]
    fn a_partition_value_written_before_widening_compares_as_long() {
        let s = schema(vec![long(1, "day")]);
        let bound = Reference::new("day")
            .greater_than_or_equal_to(Datum::long(10))
            .bind(s.clone(), true)
            .unwrap();
        let spec = spec(&s, 1, Transform::Identity);
        let at = |v: i32| {
            let part = Struct::from_iter([Some(Literal::int(v))]);
            decide(&bound, &View::new(&spec, &part, &s))
        };
        assert_eq!(at(10), Verdict::Every);
        assert_eq!(at(9), Verdict::NoRow);
    }

    #[test]
    fn a_non_ascii_string_through_truncate_is_left_undecided() {
        let s = orders();
        let truncate = spec(&s, 2, Transform::Truncate(3));
        let at = |filter: Predicate, p: &str| {
            let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
            let part = region(Some(p));
            decide(&bound, &View::new(&truncate, &part, &s))
        };
        let prefix = |v: &str| Reference::new("region").starts_with(Datum::string(v));
        // Rows such as `éabc` start with `éa` (3 bytes, 2 characters): iceberg's projection
        // would call partition `éab` empty of matches and skip it.
        match at(prefix("éa"), "éab") {
            Verdict::Undecided(why) => assert!(why.contains("non-ASCII"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            at(prefix("éa").negate(), "éab"),
            Verdict::Undecided(_)
        ));
        // ASCII literals are still decided.
        assert_eq!(at(prefix("ab"), "abc"), Verdict::Every);
        assert_eq!(at(prefix("ab"), "xyz"), Verdict::NoRow);
    }

    #[test]
    fn an_integer_truncate_is_left_undecided() {
        // Java's truncate[10] of i32::MIN + 1 wraps to 2147483646: that file's partition says
        // `x > 100` of every row and `x <= 751` of none, and both are wrong for that row.
        let s = schema(vec![NestedField::optional(
            1,
            "x",
            Type::Primitive(PrimitiveType::Int),
        )]);
        let truncate = spec(&s, 1, Transform::Truncate(10));
        let at = |filter: Predicate, v: i32| {
            let bound = filter.bind(s.clone(), true).unwrap().rewrite_not();
            let part = Struct::from_iter([Some(Literal::int(v))]);
            decide(&bound, &View::new(&truncate, &part, &s))
        };
        let x = || Reference::new("x");
        for filter in [
            x().greater_than(Datum::int(100)),
            x().less_than_or_equal_to(Datum::int(751)),
        ] {
            match at(filter, 2_147_483_646) {
                Verdict::Undecided(why) => assert!(why.contains("wraps"), "{why}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
