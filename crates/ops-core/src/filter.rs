//! Row filters as operators type them: `region = 'eu' AND (qty >= 10 OR note IS NULL)`.
//!
//! Grammar (keywords case-insensitive):
//!
//! ```text
//! expr    := and ( OR and )*
//! and     := not ( AND not )*
//! not     := NOT not | primary
//! primary := '(' expr ')' | column op literal | column IS [NOT] NULL
//!          | column [NOT] IN '(' literal (',' literal)* ')'
//! op      := = | == | != | <> | < | <= | > | >=
//! literal := 'string' | integer | decimal number | true | false
//! ```
//!
//! Literals are typed by the column they are compared with (dates as `'2026-01-31'`), so a
//! mistyped value is reported with the column's type, before anything is read.

use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType, Schema, Type};

use crate::{Error, Result};

/// Parses `text` into a predicate over `schema`'s top-level columns.
pub fn parse_filter(text: &str, schema: &Schema) -> Result<Predicate> {
    parse_filter_at(text, schema, schema)
}

/// Parses `text`, naming columns as in `schema` (the table's current one), into a predicate
/// over `read_schema` (the schema of the snapshot being scanned, which iceberg 0.10.1 binds
/// filters to): columns are matched by field id, so a renamed column is found under its old
/// name. A column the read schema lacks is an error.
pub fn parse_filter_at(text: &str, schema: &Schema, read_schema: &Schema) -> Result<Predicate> {
    let tokens = tokenize(text)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        schema,
        read_schema,
        text,
    };
    let predicate = p.expr()?;
    if let Some(t) = p.tokens.get(p.pos) {
        return Err(p.error(&format!("unexpected '{}'", t.text())));
    }
    Ok(predicate)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Num(String),
    Op(String),
    LParen,
    RParen,
    Comma,
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Ident(s) | Token::Num(s) | Token::Op(s) => s.clone(),
            Token::Str(s) => format!("'{s}'"),
            Token::LParen => "(".into(),
            Token::RParen => ")".into(),
            Token::Comma => ",".into(),
        }
    }

    fn is_keyword(&self, kw: &str) -> bool {
        matches!(self, Token::Ident(s) if s.eq_ignore_ascii_case(kw))
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let bad = |m: String| Error::InvalidInput(format!("filter '{text}': {m}"));
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Token::LParen);
                i += 1;
            }
            ')' => {
                out.push(Token::RParen);
                i += 1;
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(bad("unterminated string".into())),
                        // '' inside a string is a quote, as in SQL.
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            s.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(ch) => {
                            s.push(*ch);
                            i += 1;
                        }
                    }
                }
                out.push(Token::Str(s));
            }
            '=' | '!' | '<' | '>' => {
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                let op = if ["==", "!=", "<>", "<=", ">="].contains(&two.as_str()) {
                    two
                } else if c == '!' {
                    return Err(bad("'!' must be followed by '='".into()));
                } else {
                    c.to_string()
                };
                i += op.len();
                out.push(Token::Op(op));
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Num(chars[start..i].iter().collect()));
            }
            c if c.is_alphabetic() || c == '_' || c == '"' || c == '`' => {
                if c == '"' || c == '`' {
                    // A quoted column name.
                    let close = c;
                    let start = i + 1;
                    i = start;
                    while i < chars.len() && chars[i] != close {
                        i += 1;
                    }
                    if i >= chars.len() {
                        return Err(bad("unterminated quoted column name".into()));
                    }
                    out.push(Token::Ident(chars[start..i].iter().collect()));
                    i += 1;
                } else {
                    let start = i;
                    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                    out.push(Token::Ident(chars[start..i].iter().collect()));
                }
            }
            other => return Err(bad(format!("unexpected character '{other}'"))),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    schema: &'a Schema,
    read_schema: &'a Schema,
    text: &'a str,
}

impl Parser<'_> {
    fn error(&self, m: &str) -> Error {
        Error::InvalidInput(format!("filter '{}': {m}", self.text))
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_keyword(kw)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Result<Predicate> {
        let mut left = self.and()?;
        while self.eat_keyword("or") {
            left = left.or(self.and()?);
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Predicate> {
        let mut left = self.not()?;
        while self.eat_keyword("and") {
            left = left.and(self.not()?);
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Predicate> {
        if self.eat_keyword("not") {
            return Ok(!self.not()?);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Predicate> {
        match self.next() {
            Some(Token::LParen) => {
                let e = self.expr()?;
                match self.next() {
                    Some(Token::RParen) => Ok(e),
                    _ => Err(self.error("missing ')'")),
                }
            }
            Some(Token::Ident(column)) => self.comparison(column),
            Some(t) => Err(self.error(&format!("expected a column name, found '{}'", t.text()))),
            None => Err(self.error("unexpected end")),
        }
    }

    fn comparison(&mut self, column: String) -> Result<Predicate> {
        let field = self.schema.field_by_name(&column).ok_or_else(|| {
            let names: Vec<&str> = self
                .schema
                .as_struct()
                .fields()
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            self.error(&format!(
                "no column '{column}' (columns: {})",
                names.join(", ")
            ))
        })?;
        let Type::Primitive(ty) = field.field_type.as_ref() else {
            return Err(self.error(&format!("'{column}' is not a primitive column")));
        };
        let ty = ty.clone();
        let read_name = self
            .read_schema
            .field_by_id(field.id)
            .map(|f| f.name.clone())
            .ok_or_else(|| {
                self.error(&format!(
                    "column '{column}' was added after the snapshot being read, whose rows \
                     have no value for it"
                ))
            })?;
        let reference = Reference::new(read_name);
        if self.eat_keyword("is") {
            let negate = self.eat_keyword("not");
            if !self.eat_keyword("null") {
                return Err(self.error("expected NULL after IS"));
            }
            return Ok(if negate {
                reference.is_not_null()
            } else {
                reference.is_null()
            });
        }
        let negate_in = self.eat_keyword("not");
        if self.eat_keyword("in") {
            if self.next() != Some(Token::LParen) {
                return Err(self.error("expected '(' after IN"));
            }
            let mut values = Vec::new();
            loop {
                let tok = self.next();
                values.push(self.literal(tok, &column, &ty)?);
                match self.next() {
                    Some(Token::Comma) => continue,
                    Some(Token::RParen) => break,
                    _ => return Err(self.error("expected ',' or ')' in the IN list")),
                }
            }
            return Ok(if negate_in {
                reference.is_not_in(values)
            } else {
                reference.is_in(values)
            });
        }
        if negate_in {
            return Err(self.error("expected IN after NOT"));
        }
        let op = match self.next() {
            Some(Token::Op(op)) => op,
            other => {
                return Err(self.error(&format!(
                    "expected an operator after '{column}', found {}",
                    other.map_or("the end".to_string(), |t| format!("'{}'", t.text()))
                )));
            }
        };
        let tok = self.next();
        let value = self.literal(tok, &column, &ty)?;
        Ok(match op.as_str() {
            "=" | "==" => reference.equal_to(value),
            "!=" | "<>" => reference.not_equal_to(value),
            "<" => reference.less_than(value),
            "<=" => reference.less_than_or_equal_to(value),
            ">" => reference.greater_than(value),
            ">=" => reference.greater_than_or_equal_to(value),
            other => return Err(self.error(&format!("unknown operator '{other}'"))),
        })
    }

    fn literal(&self, tok: Option<Token>, column: &str, ty: &PrimitiveType) -> Result<Datum> {
        let mismatch = |v: &str| {
            self.error(&format!(
                "{v} is not a valid {ty} value for column '{column}'"
            ))
        };
        let tok = tok.ok_or_else(|| self.error("expected a value"))?;
        let raw = match &tok {
            Token::Str(s) | Token::Num(s) => s.clone(),
            Token::Ident(s)
                if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") =>
            {
                s.to_ascii_lowercase()
            }
            other => return Err(self.error(&format!("expected a value, found '{}'", other.text()))),
        };
        let quoted = matches!(tok, Token::Str(_));
        let datum = match ty {
            PrimitiveType::Boolean if !quoted => raw.parse::<bool>().map(Datum::bool).ok(),
            PrimitiveType::Int if !quoted => raw.parse::<i32>().map(Datum::int).ok(),
            PrimitiveType::Long if !quoted => raw.parse::<i64>().map(Datum::long).ok(),
            PrimitiveType::Float if !quoted => raw.parse::<f32>().map(Datum::float).ok(),
            PrimitiveType::Double if !quoted => raw.parse::<f64>().map(Datum::double).ok(),
            PrimitiveType::String if quoted => Some(Datum::string(raw.clone())),
            PrimitiveType::Date if quoted => Datum::date_from_str(&raw).ok(),
            PrimitiveType::Timestamp if quoted => Datum::timestamp_from_str(&raw).ok(),
            PrimitiveType::Timestamptz if quoted => Datum::timestamptz_from_str(&raw).ok(),
            PrimitiveType::Decimal { precision, scale } if !quoted => {
                Datum::decimal_from_str(&raw).ok().and_then(|d| {
                    d.to(&Type::Primitive(PrimitiveType::Decimal {
                        precision: *precision,
                        scale: *scale,
                    }))
                    .ok()
                })
            }
            _ => None,
        };
        datum.ok_or_else(|| mismatch(&tok.text()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::spec::NestedField;

    use super::*;

    fn schema() -> Schema {
        Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    2,
                    "region",
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::optional(
                    3,
                    "qty",
                    Type::Primitive(PrimitiveType::Int),
                )),
                Arc::new(NestedField::optional(
                    4,
                    "day",
                    Type::Primitive(PrimitiveType::Date),
                )),
            ])
            .build()
            .unwrap()
    }

    fn parse(s: &str) -> String {
        parse_filter(s, &schema())
            .map(|p| p.to_string())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn parses_precedence_and_forms() {
        let p = parse("region = 'eu' AND (qty >= 10 OR day IS NULL)");
        assert!(p.contains("region = \"eu\""), "{p}");
        assert!(p.contains("qty >= 10"), "{p}");
        assert!(p.contains("day IS NULL"), "{p}");
        assert!(parse("id IN (1, 2, 3)").contains("IN"));
        assert!(
            parse("NOT id <> 5").starts_with("NOT"),
            "{}",
            parse("NOT id <> 5")
        );
        assert!(parse("region = 'it''s'").contains("it's"));
        assert!(parse("day = '2026-01-31'").contains("day ="));
        assert!(!parse("id != 3 or region is not null").starts_with("ERR"));
    }

    #[test]
    fn renamed_columns_resolve_by_field_id() {
        let old = schema();
        let current = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    "order_id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    5,
                    "added",
                    Type::Primitive(PrimitiveType::Long),
                )),
            ])
            .build()
            .unwrap();
        let p = parse_filter_at("order_id = 3", &current, &old)
            .unwrap()
            .to_string();
        assert!(p.contains("id = 3") && !p.contains("order_id"), "{p}");
        let e = parse_filter_at("added = 1", &current, &old)
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().contains("added after the snapshot"));
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(parse("nope = 1").contains("no column 'nope' (columns: id, region, qty, day)"));
        assert!(parse("id = 'x'").contains("'x' is not a valid long value for column 'id'"));
        assert!(parse("qty = 99999999999").contains("not a valid int"));
        assert!(parse("region = 'eu' AND").contains("unexpected end"));
        assert!(parse("(id = 1").contains("missing ')'"));
        assert!(parse("region = 'eu").contains("unterminated string"));
        assert!(parse("id = 1 2").contains("unexpected '2'"));
        assert!(parse("day = '31/01/2026'").contains("not a valid date"));
    }
}
