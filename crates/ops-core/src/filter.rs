//! Row filters as operators type them: `region = 'eu' AND (qty >= 10 OR note IS NULL)`.
//!
//! Everything PyIceberg's filter strings take, parsed by `sqlparser`'s expression parser
//! (keywords case-insensitive):
//!
//! ```text
//! condition := column op literal | literal op column        op: = == != <> < <= > >=
//!            | column [NOT] IN (literal, ...)
//!            | column [NOT] BETWEEN literal AND literal
//!            | column [NOT] LIKE 'prefix%'                 (no % → equality; \% is a literal %)
//!            | column IS [NOT] NULL | column IS [NOT] NaN
//!            | true | false
//! filter    := condition, combined with NOT, AND, OR and parentheses
//! column    := name | "quoted name" | struct.field          (e.g. "order total", address.city)
//! literal   := 'string' | integer | decimal number | true | false
//! ```
//!
//! Literals are typed by the column they are compared with (dates as `'2026-01-31'`), so a
//! mistyped value is reported with the column's type, before anything is read.

mod sql;

use iceberg::expr::Predicate;
use iceberg::spec::Schema;

use crate::Result;

/// Parses `text` into a predicate over `schema`'s columns (nested struct fields as
/// `address.city`).
pub fn parse_filter(text: &str, schema: &Schema) -> Result<Predicate> {
    parse_filter_at(text, schema, schema)
}

/// Parses `text`, naming columns as in `schema` (the table's current one), into a predicate
/// over `read_schema` (the schema of the snapshot being scanned, which iceberg 0.10.1 binds
/// filters to): columns are matched by field id, so a renamed column is found under its old
/// name. A column the read schema lacks is an error.
pub fn parse_filter_at(text: &str, schema: &Schema, read_schema: &Schema) -> Result<Predicate> {
    sql::parse(text, schema, read_schema)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::expr::Reference;
    use iceberg::spec::{Datum, ListType, NestedField, PrimitiveType, StructType, Type};
    use proptest::prelude::*;

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn p(t: PrimitiveType) -> Type {
        Type::Primitive(t)
    }

    fn schema() -> Schema {
        let address = Type::Struct(StructType::new(vec![
            Arc::new(NestedField::optional(11, "city", p(PrimitiveType::String))),
            Arc::new(NestedField::optional(12, "zip", p(PrimitiveType::Int))),
        ]));
        let tags = Type::List(ListType::new(Arc::new(NestedField::list_element(
            14,
            p(PrimitiveType::String),
            false,
        ))));
        Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(1, "id", p(PrimitiveType::Long))),
                Arc::new(NestedField::optional(2, "region", p(PrimitiveType::String))),
                Arc::new(NestedField::optional(3, "qty", p(PrimitiveType::Int))),
                Arc::new(NestedField::optional(4, "day", p(PrimitiveType::Date))),
                Arc::new(NestedField::optional(
                    5,
                    "order total",
                    p(PrimitiveType::Double),
                )),
                Arc::new(NestedField::optional(6, "score", p(PrimitiveType::Float))),
                Arc::new(NestedField::optional(
                    7,
                    "price",
                    p(PrimitiveType::Decimal {
                        precision: 10,
                        scale: 2,
                    }),
                )),
                Arc::new(NestedField::optional(8, "ts", p(PrimitiveType::Timestamp))),
                Arc::new(NestedField::optional(9, "flag", p(PrimitiveType::Boolean))),
                Arc::new(NestedField::optional(10, "address", address)),
                Arc::new(NestedField::optional(13, "tags", tags)),
                Arc::new(NestedField::optional(
                    15,
                    "at",
                    p(PrimitiveType::Timestamptz),
                )),
            ])
            .build()
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("test schema: {e}"))
    }

    fn parse(s: &str) -> Result<Predicate> {
        parse_filter(s, &schema())
    }

    fn err(s: &str) -> String {
        match parse(s) {
            Ok(p) => format!("parsed as {p}"),
            Err(e) => e.to_string(),
        }
    }

    fn r(name: &str) -> Reference {
        Reference::new(name)
    }

    #[test]
    fn comparisons_both_ways_round() -> TestResult {
        let dec = |v: &str| -> std::result::Result<Datum, iceberg::Error> {
            Datum::decimal_from_str(v)?.to(&p(PrimitiveType::Decimal {
                precision: 10,
                scale: 2,
            }))
        };
        let cases: Vec<(&str, Predicate)> = vec![
            ("id = 3", r("id").equal_to(Datum::long(3))),
            ("id == 3", r("id").equal_to(Datum::long(3))),
            ("id != 3", r("id").not_equal_to(Datum::long(3))),
            ("id <> 3", r("id").not_equal_to(Datum::long(3))),
            ("qty < 5", r("qty").less_than(Datum::int(5))),
            ("qty <= -5", r("qty").less_than_or_equal_to(Datum::int(-5))),
            ("qty > +5", r("qty").greater_than(Datum::int(5))),
            ("qty >= 5", r("qty").greater_than_or_equal_to(Datum::int(5))),
            // A literal on the left reads as PyIceberg reads it.
            ("5 < qty", r("qty").greater_than(Datum::int(5))),
            ("5 >= qty", r("qty").less_than_or_equal_to(Datum::int(5))),
            ("'eu' = region", r("region").equal_to(Datum::string("eu"))),
            (
                "region = 'it''s'",
                r("region").equal_to(Datum::string("it's")),
            ),
            (
                "day = '2026-01-31'",
                r("day").equal_to(Datum::date_from_str("2026-01-31")?),
            ),
            (
                "day = DATE '2026-01-31'",
                r("day").equal_to(Datum::date_from_str("2026-01-31")?),
            ),
            (
                "ts >= '2026-01-31T10:00:00'",
                r("ts").greater_than_or_equal_to(Datum::timestamp_from_str("2026-01-31T10:00:00")?),
            ),
            // Seconds are optional, as in Java's ISO_LOCAL_DATE_TIME and ISO_DATE_TIME.
            (
                "ts >= '2026-01-31T10:00'",
                r("ts").greater_than_or_equal_to(Datum::timestamp_from_str("2026-01-31T10:00:00")?),
            ),
            (
                "at < '2026-01-31T10:00+02:00'",
                r("at").less_than(Datum::timestamptz_from_str("2026-01-31T08:00:00Z")?),
            ),
            (
                "at < '2026-01-31T10:00Z'",
                r("at").less_than(Datum::timestamptz_from_str("2026-01-31T10:00:00+00:00")?),
            ),
            ("score > 1.5", r("score").greater_than(Datum::float(1.5))),
            (
                "\"order total\" > 10",
                r("order total").greater_than(Datum::double(10.0)),
            ),
            ("price = 12.5", r("price").equal_to(dec("12.50")?)),
            ("price > -3", r("price").greater_than(dec("-3.00")?)),
            ("price < '0.25'", r("price").less_than(dec("0.25")?)),
            ("flag = true", r("flag").equal_to(Datum::bool(true))),
            ("qty = '7'", r("qty").equal_to(Datum::int(7))),
            (
                "address.city = 'Oslo'",
                r("address.city").equal_to(Datum::string("Oslo")),
            ),
            (
                "\"address\".\"zip\" = 1",
                r("address.zip").equal_to(Datum::int(1)),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text)?, want, "{text}");
        }
        Ok(())
    }

    #[test]
    fn set_null_nan_between_and_like_forms() -> TestResult {
        let cases: Vec<(&str, Predicate)> = vec![
            ("id IN (1, 2, 3)", r("id").is_in([1, 2, 3].map(Datum::long))),
            ("id not in (1)", r("id").is_not_in([Datum::long(1)])),
            (
                "region IN ('eu', 'us')",
                r("region").is_in(["eu", "us"].map(Datum::string)),
            ),
            ("region IS NULL", r("region").is_null()),
            ("region is not null", r("region").is_not_null()),
            ("score IS NaN", r("score").is_nan()),
            ("\"order total\" IS NOT nan", r("order total").is_not_nan()),
            (
                "qty BETWEEN 1 AND 5",
                r("qty")
                    .greater_than_or_equal_to(Datum::int(1))
                    .and(r("qty").less_than_or_equal_to(Datum::int(5))),
            ),
            (
                "qty NOT BETWEEN 1 AND 5",
                r("qty")
                    .less_than(Datum::int(1))
                    .or(r("qty").greater_than(Datum::int(5))),
            ),
            (
                "region LIKE 'eu%'",
                r("region").starts_with(Datum::string("eu")),
            ),
            (
                "region NOT LIKE 'eu%'",
                r("region").not_starts_with(Datum::string("eu")),
            ),
            (
                "region LIKE 'eu'",
                r("region").equal_to(Datum::string("eu")),
            ),
            (
                "region NOT LIKE 'eu'",
                r("region").not_equal_to(Datum::string("eu")),
            ),
            (
                "region LIKE '50\\%%'",
                r("region").starts_with(Datum::string("50%")),
            ),
            (
                "region LIKE 'a_b%'",
                r("region").starts_with(Datum::string("a_b")),
            ),
            ("true", Predicate::AlwaysTrue),
            ("FALSE", Predicate::AlwaysFalse),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text)?, want, "{text}");
        }
        Ok(())
    }

    #[test]
    fn boolean_structure_and_precedence() -> TestResult {
        let eu = || r("region").equal_to(Datum::string("eu"));
        let q = || r("qty").greater_than_or_equal_to(Datum::int(10));
        let n = || r("day").is_null();
        assert_eq!(
            parse("region = 'eu' AND (qty >= 10 OR day IS NULL)")?,
            eu().and(q().or(n()))
        );
        // AND binds tighter than OR.
        assert_eq!(
            parse("region = 'eu' and qty >= 10 or day is null")?,
            eu().and(q()).or(n())
        );
        assert_eq!(parse("NOT region = 'eu'")?, !eu());
        assert_eq!(parse("not (region = 'eu' or qty >= 10)")?, !(eu().or(q())));
        assert_eq!(parse("((region = 'eu'))")?, eu());
        Ok(())
    }

    #[test]
    fn renamed_columns_resolve_by_field_id() -> TestResult {
        let old = schema();
        let current = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(1, "order_id", p(PrimitiveType::Long))),
                Arc::new(NestedField::optional(
                    10,
                    "addr",
                    Type::Struct(StructType::new(vec![Arc::new(NestedField::optional(
                        11,
                        "town",
                        p(PrimitiveType::String),
                    ))])),
                )),
                Arc::new(NestedField::optional(50, "added", p(PrimitiveType::Long))),
                Arc::new(NestedField::required(51, "must", p(PrimitiveType::Long))),
                Arc::new(NestedField::optional(
                    52,
                    "blob",
                    p(PrimitiveType::Fixed(4)),
                )),
            ])
            .build()?;
        assert_eq!(
            parse_filter_at("order_id = 3", &current, &old)?,
            r("id").equal_to(Datum::long(3))
        );
        assert_eq!(
            parse_filter_at("addr.town LIKE 'O%'", &current, &old)?,
            r("address.city").starts_with(Datum::string("O"))
        );
        // A column added since is NULL in every row of the snapshot read (as Java and PyIceberg
        // read it): each condition on it is the constant it is for NULL, an unknown one the
        // constant that keeps the same rows under its NOTs.
        let at = |text: &str| parse_filter_at(text, &current, &old);
        let (yes, no) = (Predicate::AlwaysTrue, Predicate::AlwaysFalse);
        assert_eq!(at("added IS NULL")?, yes);
        assert_eq!(at("added IS NOT NULL")?, no);
        assert_eq!(at("added = 1")?, no);
        assert_eq!(at("added NOT IN (1, 2)")?, no);
        assert_eq!(at("NOT (added = 1)")?, !yes.clone());
        assert_eq!(at("NOT NOT (added < 1)")?, !!no.clone());
        assert_eq!(
            at("NOT (added = 1 AND order_id = 3)")?,
            !(yes.clone().and(r("id").equal_to(Datum::long(3))))
        );
        assert_eq!(
            at("added = 1 OR order_id = 3")?,
            no.clone().or(r("id").equal_to(Datum::long(3)))
        );
        // A required one is never NULL to Java's binder.
        assert_eq!(at("must IS NULL")?, no);
        assert_eq!(at("NOT must IS NOT NULL")?, !yes.clone());
        // Literals are still checked against the column's type.
        let e = at("added = 'x'")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("not a valid long value for column 'added'"),
            "{e}"
        );
        let e = at("blob = 'abcd'")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("cannot compare binary or fixed columns"), "{e}");
        assert_eq!(at("blob IS NULL")?, yes);
        Ok(())
    }

    #[test]
    fn errors_name_the_column_construct_or_literal() {
        let cases = [
            (
                "nope = 1",
                "no column 'nope' (columns: id, region, qty, day, order total, score, price, ts, flag, address, tags, at)",
            ),
            ("Region = 'eu'", "did you mean 'region'?"),
            (
                "address.town = 'x'",
                "no field 'town' in 'address' (fields: city, zip)",
            ),
            ("region.x = 'x'", "'region' is not a struct"),
            ("address = 1", "'address' is a struct column"),
            ("tags.element = 'x'", "inside the list or map 'tags'"),
            ("id = 'x'", "'x' is not a valid long value for column 'id'"),
            ("qty = 1.5", "1.5 is not a valid int value for column 'qty'"),
            ("score = 1e39", "beyond the largest float"),
            (
                "day = '31/01/2026'",
                "'31/01/2026' is not a valid date value for column 'day'; write a date as \
                 '2026-01-31'",
            ),
            (
                "ts < '2026-01-01 00:04:06'",
                "not a valid timestamp value for column 'ts'; write a timestamp as \
                 '2026-01-31T09:30:00'",
            ),
            ("ts < '2026-01-01'", "a 'T' between date and time"),
            (
                "id = X'6b3d76'",
                "X'6b3d76' is a binary literal: a filter cannot compare binary or fixed columns \
                 with a value yet",
            ),
            (
                "region = 5",
                "5 is not a valid string value for column 'region'",
            ),
            (
                "price = 1.234",
                "1.234 is not a valid decimal(10, 2) value for column 'price': it has digits \
                 beyond the 2 decimal place(s)",
            ),
            (
                "price IN (1, '0.001')",
                "'0.001' is not a valid decimal(10, 2) value for column 'price'",
            ),
            ("price = '1.2.3'", "is not a valid decimal(10, 2) value"),
            ("price = '1e'", "is not a valid decimal(10, 2) value"),
            (
                "id IN (1, 'a')",
                "'a' is not a valid long value for column 'id'",
            ),
            ("qty BETWEEN 1 AND 'z'", "'z' is not a valid int value"),
            ("region = NULL", "use IS NULL"),
            ("region LIKE '%eu'", "only a prefix match"),
            ("region LIKE 'e%u%'", "only a prefix match"),
            (
                "qty LIKE '1%'",
                "LIKE applies to string columns; 'qty' is int",
            ),
            ("region ILIKE 'eu%'", "ILIKE"),
            (
                "qty IS NaN",
                "IS NaN applies to float and double columns; 'qty' is int",
            ),
            ("score IS UNKNOWN", "IS UNKNOWN is not supported"),
            ("qty = qty", "compares two columns"),
            ("1 = 1", "names no column"),
            ("qty + 1 > 2", "unsupported construct"),
            ("upper(region) = 'EU'", "unsupported construct"),
            ("qty", "unsupported construct"),
            ("5", "alone is not a condition"),
            ("region = 'eu' AND", "the end of the filter"),
            ("(id = 1", "the end of the filter"),
            ("region = 'eu", "nterminated"),
            ("id = 1 2", "unexpected '2' after a complete condition"),
            ("", "the filter is empty"),
            ("id = 1; DROP TABLE t", "unexpected ';'"),
            ("qty IN (SELECT 1)", "unsupported construct"),
        ];
        for (text, want) in cases {
            let got = err(text);
            assert!(got.contains(want), "{text:?}: expected …{want}…, got {got}");
            assert!(got.contains(&format!("filter '{text}'")), "{got}");
        }
    }

    #[test]
    fn columns_named_like_sql_keywords() -> TestResult {
        let names = [
            "date",
            "timestamp",
            "time",
            "order",
            "user",
            "year",
            "value",
            "key",
            "select",
            "from",
            "where",
            "group",
            "interval",
            "case",
            "end",
            "current_date",
            "table",
        ];
        let schema = Schema::builder()
            .with_fields(names.iter().enumerate().map(|(i, n)| {
                Arc::new(NestedField::optional(
                    i as i32 + 1,
                    *n,
                    p(PrimitiveType::Long),
                ))
            }))
            .build()?;
        let mut failed = Vec::new();
        for n in names {
            for text in [
                format!("{n} = 1"),
                format!("{n} IS NULL"),
                format!("1 < {n} AND {n} IN (2, 3)"),
            ] {
                if let Err(e) = parse_filter(&text, &schema) {
                    failed.push(format!("{text}: {e}"));
                }
            }
        }
        assert!(failed.is_empty(), "{failed:#?}");
        Ok(())
    }

    fn dec(unscaled: i128, precision: u32, scale: u32) -> Datum {
        Datum::try_from_bytes(
            &unscaled.to_be_bytes(),
            PrimitiveType::Decimal { precision, scale },
        )
        .unwrap_or_else(|e| panic!("decimal: {e}"))
    }

    /// A decimal literal is rescaled to the column's scale exactly (`0` is `0.00`, `1.5` is
    /// `1.50`); one with digits beyond the scale is refused (above); one with more digits
    /// than the precision lies beyond every value of the column.
    #[test]
    fn decimal_literals_take_the_columns_scale_exactly() -> TestResult {
        let price = |unscaled| dec(unscaled, 10, 2);
        let max = 9_999_999_999;
        let cases: Vec<(&str, Predicate)> = vec![
            ("price < 0", r("price").less_than(price(0))),
            ("price < -0", r("price").less_than(price(0))),
            ("price < 0.0", r("price").less_than(price(0))),
            ("price = 1.5", r("price").equal_to(price(150))),
            ("price = 1.500", r("price").equal_to(price(150))),
            ("price = '1.5'", r("price").equal_to(price(150))),
            ("price = -0.5", r("price").equal_to(price(-50))),
            ("price = .5", r("price").equal_to(price(50))),
            ("price = 1e2", r("price").equal_to(price(10_000))),
            ("price = 125E-2", r("price").equal_to(price(125))),
            ("price = 00012.30", r("price").equal_to(price(1230))),
            ("price = 99999999.99", r("price").equal_to(price(max))),
            (
                "price BETWEEN 0 AND 1.5",
                r("price")
                    .greater_than_or_equal_to(price(0))
                    .and(r("price").less_than_or_equal_to(price(150))),
            ),
            (
                "price IN (1, 2.5)",
                r("price").is_in([price(100), price(250)]),
            ),
            // Precision overflow: beyond every value, compared as SQL compares numbers.
            (
                "price < 100000000",
                r("price").less_than_or_equal_to(price(max)),
            ),
            ("price = 123456789.5", r("price").greater_than(price(max))),
            (
                "price >= -100000000",
                r("price").greater_than_or_equal_to(price(-max)),
            ),
            ("price = 1e30", r("price").greater_than(price(max))),
            ("price IN (1, 100000000)", r("price").is_in([price(100)])),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text)?, want, "{text}");
        }
        Ok(())
    }

    /// An integer beyond the column type's range never equals a value of it: compared as SQL
    /// compares numbers of different widths, so a NULL stays unknown (PyIceberg's AlwaysTrue
    /// would also select it).
    #[test]
    fn integers_beyond_the_columns_type() -> TestResult {
        let (max, min) = (Datum::int(i32::MAX), Datum::int(i32::MIN));
        let q = || r("qty");
        let cases: Vec<(&str, Predicate)> = vec![
            ("qty = 99999999999", q().greater_than(max.clone())),
            ("qty > 99999999999", q().greater_than(max.clone())),
            ("qty >= 2147483648", q().greater_than(max.clone())),
            (
                "qty >= 2147483647",
                q().greater_than_or_equal_to(max.clone()),
            ),
            ("qty < 99999999999", q().less_than_or_equal_to(max.clone())),
            ("qty != 99999999999", q().less_than_or_equal_to(max.clone())),
            ("NOT qty = 99999999999", !q().greater_than(max.clone())),
            ("qty = -2147483649", q().less_than(min.clone())),
            (
                "qty > -2147483649",
                q().greater_than_or_equal_to(min.clone()),
            ),
            ("qty < '-99999999999'", q().less_than(min.clone())),
            ("99999999999 > qty", q().less_than_or_equal_to(max.clone())),
            ("qty IN (1, 99999999999)", q().is_in([Datum::int(1)])),
            ("qty IN (99999999999)", q().greater_than(max.clone())),
            (
                "qty NOT IN (-99999999999)",
                q().greater_than_or_equal_to(min.clone()),
            ),
            (
                "qty BETWEEN 5 AND 99999999999",
                q().greater_than_or_equal_to(Datum::int(5))
                    .and(q().less_than_or_equal_to(max.clone())),
            ),
            (
                "id > 99999999999999999999999999999999999999999",
                r("id").greater_than(Datum::long(i64::MAX)),
            ),
            (
                "id = -9223372036854775809",
                r("id").less_than(Datum::long(i64::MIN)),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text)?, want, "{text}");
        }
        Ok(())
    }

    /// Literals take the column's type in the snapshot read (what iceberg binds them to), not
    /// its current one: `int` before a widening to `long`, `float` before `double`,
    /// `decimal(9, 2)` before `decimal(12, 2)`.
    #[test]
    fn literals_take_the_type_of_the_snapshot_read() -> TestResult {
        let old = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::optional(3, "qty", p(PrimitiveType::Int))),
                Arc::new(NestedField::optional(6, "score", p(PrimitiveType::Float))),
                Arc::new(NestedField::optional(
                    7,
                    "price",
                    p(PrimitiveType::Decimal {
                        precision: 9,
                        scale: 2,
                    }),
                )),
            ])
            .build()?;
        let current = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::optional(3, "qty", p(PrimitiveType::Long))),
                Arc::new(NestedField::optional(6, "score", p(PrimitiveType::Double))),
                Arc::new(NestedField::optional(
                    7,
                    "price",
                    p(PrimitiveType::Decimal {
                        precision: 12,
                        scale: 2,
                    }),
                )),
            ])
            .build()?;
        let cases: Vec<(&str, Predicate)> = vec![
            (
                "qty >= 10",
                r("qty").greater_than_or_equal_to(Datum::int(10)),
            ),
            (
                "qty >= 8589934592",
                r("qty").greater_than(Datum::int(i32::MAX)),
            ),
            ("score > 1.5", r("score").greater_than(Datum::float(1.5))),
            ("price = 1.5", r("price").equal_to(dec(150, 9, 2))),
            (
                "price > 1234567890.12",
                r("price").greater_than(dec(999_999_999, 9, 2)),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_filter_at(text, &current, &old)?, want, "{text}");
        }
        let e = parse_filter_at("qty = 'x'", &current, &old)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("'x' is not a valid int value for column 'qty' (its type in the snapshot read; it is long now)"),
            "{e}"
        );
        Ok(())
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}id = 1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(err(&deep).contains("nested more than"), "{}", err(&deep));
        let nots = format!("{}id = 1", "NOT ".repeat(5000));
        assert!(parse(&nots).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any text: an Ok or an Err, never a panic.
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,80}") {
            let _ = parse(&s);
        }

        /// Filter-shaped token soup: still never a panic, and an error says which filter.
        #[test]
        fn token_soup_never_panics(parts in proptest::collection::vec(prop_oneof![
            Just("id"), Just("region"), Just("\"order total\""), Just("address.city"), Just("score"),
            Just("="), Just("<>"), Just("<="), Just("AND"), Just("OR"), Just("NOT"), Just("IN"),
            Just("("), Just(")"), Just(","), Just("'eu'"), Just("'eu%'"), Just("3"), Just("-2.5"),
            Just("IS"), Just("NULL"), Just("NaN"), Just("LIKE"), Just("BETWEEN"), Just("true"),
            Just("'"), Just("\""), Just(";"), Just("\\"), Just("%"),
        ], 0..14)) {
            let text = parts.join(" ");
            if let Err(e) = parse(&text) {
                prop_assert!(e.to_string().contains("filter '"), "{}", e);
            }
        }
    }
}
