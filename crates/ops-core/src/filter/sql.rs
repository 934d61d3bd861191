//! Row filters parsed by `sqlparser`'s expression parser, then typed and resolved against the
//! table's schema here.
//!
//! sqlparser knows SQL, not Iceberg: it has no `IS NaN`, so `IS [NOT] NaN` is rewritten to
//! `IS [NOT] UNKNOWN` on the token stream (a real `IS UNKNOWN` is refused first), and every
//! construct it accepts that a row filter has no meaning for is refused by name.

use std::collections::HashSet;

use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, NestedFieldRef, PrimitiveType, Schema, Type};
use sqlparser::ast::{BinaryOperator, Expr, InTarget, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::{Error, Result};

/// Deep enough for any filter a person writes; deeper input is refused, never a stack overflow.
const RECURSION_LIMIT: usize = 64;

const FORMS: &str = "a filter is conditions on columns (=, !=, <>, <, <=, >, >=, [NOT] IN (...), \
                     [NOT] BETWEEN .. AND .., [NOT] LIKE 'prefix%', IS [NOT] NULL, IS [NOT] NaN) \
                     joined by AND, OR, NOT and parentheses";

/// Parses `text`, naming columns as in `schema`, into a predicate over `read_schema`.
pub(super) fn parse(text: &str, schema: &Schema, read_schema: &Schema) -> Result<Predicate> {
    let cx = Context {
        text,
        schema,
        read_schema,
    };
    if text.trim().is_empty() {
        return Err(cx.error("the filter is empty; write a condition such as region = 'eu'"));
    }
    let dialect = GenericDialect {};
    let mut tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| cx.error(&e.to_string()))?;
    rewrite_nan(&mut tokens).map_err(|m| cx.error(&m))?;
    quote_column_words(&mut tokens, schema);
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens);
    let expr = parser
        .parse_expr()
        .map_err(|e| cx.error(&parser_message(&e)))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(cx.error(&format!(
            "unexpected '{}' after a complete condition (join conditions with AND or OR)",
            next.token
        )));
    }
    cx.predicate(&expr, false)
}

fn parser_message(e: &ParserError) -> String {
    match e {
        ParserError::RecursionLimitExceeded => {
            format!("nested more than {RECURSION_LIMIT} levels deep; simplify the filter")
        }
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => {
            m.replace("found: EOF", "found the end of the filter")
        }
    }
}

fn is_word(t: &Token, kw: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == kw && w.quote_style.is_none())
}

/// `IS [NOT] NaN` → `IS [NOT] UNKNOWN`, after refusing a literal `IS [NOT] UNKNOWN`.
fn rewrite_nan(tokens: &mut [TokenWithSpan]) -> std::result::Result<(), String> {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    for (n, &i) in significant.iter().enumerate() {
        if !is_word(&tokens[i].token, Keyword::IS) {
            continue;
        }
        let mut k = n + 1;
        if significant
            .get(k)
            .is_some_and(|&j| is_word(&tokens[j].token, Keyword::NOT))
        {
            k += 1;
        }
        let Some(&j) = significant.get(k) else {
            continue;
        };
        match &tokens[j].token {
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::UNKNOWN => {
                return Err(format!("IS UNKNOWN is not supported; {FORMS}"));
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("nan") => {
                tokens[j].token = Token::make_keyword("UNKNOWN");
            }
            _ => {}
        }
    }
    Ok(())
}

/// The grammar's own words, never taken for a column of the same name.
const GRAMMAR: [Keyword; 12] = [
    Keyword::AND,
    Keyword::OR,
    Keyword::NOT,
    Keyword::IN,
    Keyword::IS,
    Keyword::NULL,
    Keyword::LIKE,
    Keyword::ILIKE,
    Keyword::BETWEEN,
    Keyword::TRUE,
    Keyword::FALSE,
    Keyword::UNKNOWN,
];

/// Marks a bare word that is exactly a field name of the schema as a quoted identifier, so
/// columns named `user`, `interval` or `current_date` parse as columns, as PyIceberg reads them,
/// instead of as SQL's special forms. A word followed by a string (`DATE '2026-01-31'`) stays a
/// typed literal.
fn quote_column_words(tokens: &mut [TokenWithSpan], schema: &Schema) {
    fn collect<'a>(fields: &'a [NestedFieldRef], out: &mut HashSet<&'a str>) {
        for f in fields {
            out.insert(f.name.as_str());
            if let Type::Struct(s) = f.field_type.as_ref() {
                collect(s.fields(), out);
            }
        }
    }
    let mut names = HashSet::new();
    collect(schema.as_struct().fields(), &mut names);
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    for (n, &i) in significant.iter().enumerate() {
        let Token::Word(w) = &tokens[i].token else {
            continue;
        };
        let next_is_string = significant
            .get(n + 1)
            .is_some_and(|&j| matches!(tokens[j].token, Token::SingleQuotedString(_)));
        if w.quote_style.is_none()
            && w.keyword != Keyword::NoKeyword
            && !GRAMMAR.contains(&w.keyword)
            && !next_is_string
            && names.contains(w.value.as_str())
        {
            tokens[i].token = Token::make_word(&w.value, Some('"'));
        }
    }
}

struct Context<'a> {
    text: &'a str,
    schema: &'a Schema,
    read_schema: &'a Schema,
}

/// A filtered column: how the read schema names it, and its type there for typing literals.
struct Column {
    name: String,
    reference: Reference,
    ty: PrimitiveType,
    /// Said after the type in messages when the current schema's type differs.
    ty_note: String,
    /// The column was added after the snapshot read was written, so it is NULL in every row
    /// of that snapshot (Java and PyIceberg read it so): `reference` names it as the table
    /// does now and is never bound, and `ty` is its current type, which literals are checked
    /// against.
    absent: bool,
    /// The field is required: Java's binder decides IS [NOT] NULL of it without reading.
    required: bool,
}

/// A literal as written: its text and whether it was quoted.
struct Lit {
    raw: String,
    quoted: bool,
}

impl Lit {
    fn shown(&self) -> String {
        if self.quoted {
            format!("'{}'", self.raw)
        } else {
            self.raw.clone()
        }
    }
}

impl Context<'_> {
    fn error(&self, m: &str) -> Error {
        Error::InvalidInput(format!("filter '{}': {m}", self.text))
    }

    fn unsupported(&self, e: &Expr) -> Error {
        self.error(&format!("unsupported construct '{e}'; {FORMS}"))
    }

    /// `e` as a predicate; `negated`: `e` sits under an odd number of NOTs (see
    /// [`Self::on_absent_column`]).
    fn predicate(&self, e: &Expr, negated: bool) -> Result<Predicate> {
        match e {
            Expr::Nested(inner) => self.predicate(inner, negated),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => Ok(!self.predicate(expr, !negated)?),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => Ok(self
                .predicate(left, negated)?
                .and(self.predicate(right, negated)?)),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => Ok(self
                .predicate(left, negated)?
                .or(self.predicate(right, negated)?)),
            Expr::Value(v) => match &v.value {
                Value::Boolean(true) => Ok(Predicate::AlwaysTrue),
                Value::Boolean(false) => Ok(Predicate::AlwaysFalse),
                _ => Err(self.error(&format!(
                    "the value {v} alone is not a condition; compare a column with it"
                ))),
            },
            leaf => {
                let predicate = self.leaf(leaf)?;
                self.on_absent_column(leaf, predicate, negated)
            }
        }
    }

    /// A condition on a column added after the snapshot read (NULL in every row of it) as the
    /// constant it is for every row, under SQL's three-valued logic: `IS NULL` is TRUE, `IS
    /// NOT NULL` FALSE, any other condition (a comparison, IN, LIKE, IS NaN) unknown. An
    /// unknown leaf is replaced by the constant that keeps the same rows: with its NOTs pushed
    /// down to it the filter is monotone, and a row is kept only where the filter is TRUE,
    /// which an unknown leaf never makes it but a FALSE one does not prevent either (Kleene:
    /// a formula TRUE with an unknown input is TRUE for every value of it) — so FALSE where
    /// the leaf sits under an even number of NOTs and TRUE under an odd one. Java and
    /// PyIceberg read such a column as NULL; refusing the filter, as before, stopped a copy of
    /// any table whose newest column had no snapshot yet.
    fn on_absent_column(
        &self,
        leaf: &Expr,
        predicate: Predicate,
        negated: bool,
    ) -> Result<Predicate> {
        let column = match leaf {
            Expr::IsNull(c) | Expr::IsNotNull(c) | Expr::IsUnknown(c) | Expr::IsNotUnknown(c) => {
                c.as_ref()
            }
            Expr::In { expr, .. } | Expr::Between { expr, .. } | Expr::Like { expr, .. } => {
                expr.as_ref()
            }
            Expr::BinaryOp { left, .. } if is_column(left) => left.as_ref(),
            Expr::BinaryOp { right, .. } => right.as_ref(),
            _ => return Ok(predicate),
        };
        let column = self.column(column)?;
        if !column.absent {
            return Ok(predicate);
        }
        // A required column (added with allow_incompatible_changes) is never NULL to Java's
        // binder (`UnboundPredicate.bindUnaryOperation`), whatever the files hold.
        Ok(match leaf {
            Expr::IsNull(_) if column.required => Predicate::AlwaysFalse,
            Expr::IsNotNull(_) if column.required => Predicate::AlwaysTrue,
            Expr::IsNull(_) => Predicate::AlwaysTrue,
            Expr::IsNotNull(_) => Predicate::AlwaysFalse,
            _ if negated => Predicate::AlwaysTrue,
            _ => Predicate::AlwaysFalse,
        })
    }

    /// A condition on one column.
    fn leaf(&self, e: &Expr) -> Result<Predicate> {
        match e {
            Expr::BinaryOp { left, op, right } => self.comparison(e, left, op, right),
            Expr::IsNull(c) => Ok(self.column(c)?.reference.is_null()),
            Expr::IsNotNull(c) => Ok(self.column(c)?.reference.is_not_null()),
            Expr::IsUnknown(c) => Ok(self.nan_column(c)?.reference.is_nan()),
            Expr::IsNotUnknown(c) => Ok(self.nan_column(c)?.reference.is_not_nan()),
            Expr::In {
                expr,
                target: InTarget::List(list),
                negated,
                global: false,
            } => {
                let col = self.column(expr)?;
                let mut values = Vec::with_capacity(list.len());
                // A literal beyond the column type's range equals no value of it.
                let mut beyond = None;
                for v in list {
                    match self.typed(v, &col)? {
                        Typed::Value(d) => values.push(d),
                        other => beyond = Some(other),
                    }
                }
                let reference = col.reference;
                Ok(match (values.is_empty(), beyond) {
                    // Every literal out of range: `x IN (..)` is `x = <one of them>`.
                    (true, Some(b)) => {
                        compare(reference, if *negated { Cmp::Ne } else { Cmp::Eq }, b)
                    }
                    _ if *negated => reference.is_not_in(values),
                    _ => reference.is_in(values),
                })
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let col = self.column(expr)?;
                let (low, high) = (self.typed(low, &col)?, self.typed(high, &col)?);
                let r = col.reference;
                Ok(if *negated {
                    compare(r.clone(), Cmp::Lt, low).or(compare(r, Cmp::Gt, high))
                } else {
                    compare(r.clone(), Cmp::Ge, low).and(compare(r, Cmp::Le, high))
                })
            }
            Expr::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => self.like(expr, pattern, *negated),
            Expr::Like { .. } => Err(self.error(
                "LIKE takes one quoted pattern without ESCAPE or ANY; escape a literal % as \\%",
            )),
            Expr::ILike { .. } => Err(self.error(
                "ILIKE (case-insensitive) is not supported; use LIKE 'prefix%', which is \
                 case-sensitive",
            )),
            other => Err(self.unsupported(other)),
        }
    }

    fn comparison(
        &self,
        whole: &Expr,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
    ) -> Result<Predicate> {
        use BinaryOperator::*;
        if !matches!(op, Eq | NotEq | Lt | LtEq | Gt | GtEq) {
            return Err(self.unsupported(whole));
        }
        // `5 < qty` reads as `qty > 5`, as PyIceberg reads it.
        let (column, value, op) = match (is_column(left), is_column(right)) {
            (true, false) => (left, right, op.clone()),
            (false, true) => {
                let flipped = match op {
                    Lt => Gt,
                    LtEq => GtEq,
                    Gt => Lt,
                    GtEq => LtEq,
                    other => other.clone(),
                };
                (right, left, flipped)
            }
            (true, true) => {
                return Err(self.error(&format!(
                    "'{whole}' compares two columns; a filter compares a column with a value"
                )));
            }
            (false, false) if self.literal(left).is_ok() && self.literal(right).is_ok() => {
                return Err(self.error(&format!(
                    "'{whole}' names no column; a filter compares a column with a value"
                )));
            }
            (false, false) => return Err(self.unsupported(whole)),
        };
        let col = self.column(column)?;
        let value = self.typed(value, &col)?;
        let op = match op {
            Eq => Cmp::Eq,
            NotEq => Cmp::Ne,
            Lt => Cmp::Lt,
            LtEq => Cmp::Le,
            Gt => Cmp::Gt,
            _ => Cmp::Ge,
        };
        Ok(compare(col.reference, op, value))
    }

    /// PyIceberg's LIKE: a trailing `%` is a prefix match, no `%` is equality, `\%` is a
    /// literal percent sign, and a `%` anywhere else is refused.
    fn like(&self, expr: &Expr, pattern: &Expr, negated: bool) -> Result<Predicate> {
        let col = self.column(expr)?;
        if col.ty != PrimitiveType::String {
            return Err(self.error(&format!(
                "LIKE applies to string columns; '{}' is {}",
                col.name, col.ty
            )));
        }
        let lit = self.literal(pattern)?;
        if !lit.quoted {
            return Err(self.error(&format!(
                "LIKE takes a quoted pattern such as 'eu%', found {}",
                lit.shown()
            )));
        }
        let chars: Vec<char> = lit.raw.chars().collect();
        let mut text = String::new();
        let mut prefix = false;
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '\\' if chars.get(i + 1) == Some(&'%') => {
                    text.push('%');
                    i += 2;
                    continue;
                }
                '%' if i + 1 == chars.len() => prefix = true,
                '%' => {
                    return Err(self.error(&format!(
                        "LIKE {} has a '%' before the end; only a prefix match ('abc%') is \
                         supported; escape a literal % as \\%",
                        lit.shown()
                    )));
                }
                c => text.push(c),
            }
            i += 1;
        }
        let datum = Datum::string(text);
        Ok(match (prefix, negated) {
            (true, false) => col.reference.starts_with(datum),
            (true, true) => col.reference.not_starts_with(datum),
            (false, false) => col.reference.equal_to(datum),
            (false, true) => col.reference.not_equal_to(datum),
        })
    }

    fn nan_column(&self, e: &Expr) -> Result<Column> {
        let col = self.column(e)?;
        if !matches!(col.ty, PrimitiveType::Float | PrimitiveType::Double) {
            return Err(self.error(&format!(
                "IS NaN applies to float and double columns; '{}' is {}",
                col.name, col.ty
            )));
        }
        Ok(col)
    }

    /// Resolves a column expression by walking struct fields, then finds the same field id in
    /// the read schema.
    fn column(&self, e: &Expr) -> Result<Column> {
        let segments: Vec<String> = match e {
            Expr::Identifier(i) => vec![i.value.clone()],
            Expr::CompoundIdentifier(parts) => parts.iter().map(|i| i.value.clone()).collect(),
            Expr::Nested(inner) => return self.column(inner),
            other => {
                return Err(self.error(&format!(
                    "expected a column name, found '{other}' (quote names with spaces as \
                     \"order total\")"
                )));
            }
        };
        let full = segments.join(".");
        let mut fields: &[NestedFieldRef] = self.schema.as_struct().fields();
        let mut found: Option<&NestedFieldRef> = None;
        for (depth, seg) in segments.iter().enumerate() {
            let here = segments[..depth].join(".");
            let field = fields.iter().find(|f| &f.name == seg).ok_or_else(|| {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                let hint = fields
                    .iter()
                    .find(|f| f.name.eq_ignore_ascii_case(seg))
                    .map(|f| format!("; did you mean '{}'? (names are case-sensitive)", f.name))
                    .unwrap_or_default();
                if depth == 0 {
                    self.error(&format!(
                        "no column '{seg}' (columns: {}){hint}",
                        names.join(", ")
                    ))
                } else {
                    self.error(&format!(
                        "no field '{seg}' in '{here}' (fields: {}){hint}",
                        names.join(", ")
                    ))
                }
            })?;
            if depth + 1 < segments.len() {
                fields = match field.field_type.as_ref() {
                    Type::Struct(s) => s.fields(),
                    Type::List(_) | Type::Map(_) => {
                        return Err(self.error(&format!(
                            "'{full}' is inside the list or map '{}', whose elements cannot be \
                             filtered",
                            field.name
                        )));
                    }
                    Type::Primitive(_) => {
                        return Err(self.error(&format!(
                            "'{}' is not a struct, so '{full}' names nothing",
                            segments[..=depth].join(".")
                        )));
                    }
                };
            }
            found = Some(field);
        }
        let field = found.ok_or_else(|| self.error("expected a column name"))?;
        let Type::Primitive(ty) = field.field_type.as_ref() else {
            return Err(self.error(&format!(
                "'{full}' is a {} column; filters compare primitive columns (name a nested \
                 field as '{full}.field')",
                kind(&field.field_type)
            )));
        };
        let added_later = || {
            self.error(&format!(
                "column '{full}' was added after the snapshot being read, whose rows have no \
                 value for it"
            ))
        };
        let Some(read_name) = self.read_schema.name_by_field_id(field.id) else {
            return Ok(Column {
                reference: Reference::new(full.clone()),
                name: full,
                ty: ty.clone(),
                ty_note: String::new(),
                absent: true,
                required: field.required,
            });
        };
        let read_name = read_name.to_string();
        // Literals take the type the snapshot read has (iceberg binds the filter to it and
        // converts each literal to it): `int` for a column widened to `long` since.
        let read_ty = match self
            .read_schema
            .field_by_id(field.id)
            .map(|f| f.field_type.as_ref())
        {
            Some(Type::Primitive(t)) => t.clone(),
            _ => return Err(added_later()),
        };
        let ty_note = if &read_ty == ty {
            String::new()
        } else {
            format!(" (its type in the snapshot read; it is {ty} now)")
        };
        Ok(Column {
            name: full,
            reference: Reference::new(read_name),
            ty: read_ty,
            ty_note,
            absent: false,
            required: field.required,
        })
    }

    fn literal(&self, e: &Expr) -> Result<Lit> {
        let bad = || {
            self.error(&format!(
                "expected a literal value, found '{e}' (quote strings and dates: 'eu', \
                 '2026-01-31')"
            ))
        };
        match e {
            Expr::Value(v) => {
                match &v.value {
                    Value::Number(n, _) => Ok(Lit {
                        raw: n.to_string(),
                        quoted: false,
                    }),
                    Value::SingleQuotedString(s) => Ok(Lit {
                        raw: s.clone(),
                        quoted: true,
                    }),
                    Value::Boolean(b) => Ok(Lit {
                        raw: b.to_string(),
                        quoted: false,
                    }),
                    Value::Null => Err(self
                        .error("NULL is not a value to compare with; use IS NULL or IS NOT NULL")),
                    Value::HexStringLiteral(_) => Err(self.error(&format!(
                        "{e} is a binary literal: a filter cannot compare binary or fixed \
                         columns with a value yet; only IS NULL and IS NOT NULL apply to them"
                    ))),
                    _ => Err(bad()),
                }
            }
            Expr::UnaryOp {
                op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
                expr,
            } => match expr.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::Number(n, _) => {
                        let sign = if *op == UnaryOperator::Minus { "-" } else { "" };
                        Ok(Lit {
                            raw: format!("{sign}{n}"),
                            quoted: false,
                        })
                    }
                    _ => Err(bad()),
                },
                _ => Err(bad()),
            },
            // DATE '2026-01-31', TIMESTAMP '...': the column types the value anyway.
            Expr::TypedString(t) => match &t.value.value {
                Value::SingleQuotedString(s) => Ok(Lit {
                    raw: s.clone(),
                    quoted: true,
                }),
                _ => Err(bad()),
            },
            Expr::Nested(inner) => self.literal(inner),
            _ => Err(bad()),
        }
    }

    /// A literal typed by the column it is compared with.
    fn typed(&self, e: &Expr, col: &Column) -> Result<Typed> {
        let lit = self.literal(e)?;
        let raw = lit.raw.as_str();
        let numeric = !lit.quoted;
        let invalid = |why: &str| {
            self.error(&format!(
                "{} is not a valid {} value for column '{}'{}{why}",
                lit.shown(),
                col.ty,
                col.name,
                col.ty_note
            ))
        };
        let datum = match &col.ty {
            PrimitiveType::Boolean => match raw.to_ascii_lowercase().as_str() {
                "true" => Some(Datum::bool(true)),
                "false" => Some(Datum::bool(false)),
                _ => None,
            },
            // Quoted numbers are accepted, as PyIceberg converts string literals.
            PrimitiveType::Int => {
                let int = |v: i64| i32::try_from(v).ok().map(Datum::int);
                return integer(raw, i32::MIN.into(), i32::MAX.into(), int)
                    .ok_or_else(|| invalid(""));
            }
            PrimitiveType::Long => {
                return integer(raw, i64::MIN, i64::MAX, |v| Some(Datum::long(v)))
                    .ok_or_else(|| invalid(""));
            }
            PrimitiveType::Float => match raw.trim().parse::<f32>() {
                Ok(v) if v.is_infinite() && !names_infinity(raw) => {
                    return Err(invalid(&format!(
                        ": beyond the largest float ({:e})",
                        f32::MAX
                    )));
                }
                Ok(v) => Some(Datum::float(v)),
                Err(_) => None,
            },
            PrimitiveType::Double => match raw.trim().parse::<f64>() {
                Ok(v) if v.is_infinite() && !names_infinity(raw) => {
                    return Err(invalid(&format!(
                        ": beyond the largest double ({:e})",
                        f64::MAX
                    )));
                }
                Ok(v) => Some(Datum::double(v)),
                Err(_) => None,
            },
            PrimitiveType::Decimal { precision, scale } => {
                let decimal = |unscaled: i128| {
                    Datum::try_from_bytes(&unscaled.to_be_bytes(), col.ty.clone()).ok()
                };
                // The largest value the column holds, unscaled: 10^precision - 1.
                let max =
                    (0..*precision).fold(0i128, |m, _| m.saturating_mul(10).saturating_add(9));
                let typed = match decimal_unscaled(raw, *precision, *scale) {
                    Ok(v) => decimal(v).map(Typed::Value),
                    Err(DecimalError::NotANumber) => None,
                    Err(DecimalError::Scale) => {
                        return Err(invalid(&format!(
                            ": it has digits beyond the {scale} decimal place(s) the column \
                             keeps, so it cannot be compared exactly; write it with at most \
                             {scale}"
                        )));
                    }
                    // Beyond every value the column holds, as an integer beyond an int column.
                    Err(DecimalError::Precision { negative: false }) => {
                        decimal(max).map(Typed::AboveMax)
                    }
                    Err(DecimalError::Precision { negative: true }) => {
                        decimal(-max).map(Typed::BelowMin)
                    }
                };
                return typed.ok_or_else(|| invalid(""));
            }
            PrimitiveType::String if !numeric => Some(Datum::string(raw)),
            PrimitiveType::Date if !numeric => Datum::date_from_str(raw).ok(),
            PrimitiveType::Time if !numeric => Datum::time_from_str(raw).ok(),
            // Java parses these with ISO_LOCAL_DATE_TIME and ISO_DATE_TIME, where seconds are
            // optional; chrono's `FromStr` wants them.
            PrimitiveType::Timestamp if !numeric => {
                Datum::timestamp_from_str(raw).ok().or_else(|| {
                    chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M")
                        .ok()
                        .map(Datum::timestamp_from_datetime)
                })
            }
            PrimitiveType::Timestamptz if !numeric => {
                Datum::timestamptz_from_str(raw).ok().or_else(|| {
                    let offset = match raw.strip_suffix(['Z', 'z']) {
                        Some(head) => format!("{head}+00:00"),
                        None => raw.to_string(),
                    };
                    chrono::DateTime::parse_from_str(&offset, "%Y-%m-%dT%H:%M%:z")
                        .ok()
                        .map(Datum::timestamptz_from_datetime)
                })
            }
            PrimitiveType::Uuid if !numeric => Datum::uuid_from_str(raw).ok(),
            PrimitiveType::Binary | PrimitiveType::Fixed(_) => {
                return Err(invalid(
                    ": a filter cannot compare binary or fixed columns with a value yet; \
                     only IS NULL and IS NOT NULL apply to them",
                ));
            }
            _ => None,
        };
        // How to write a value of the type, for the types whose literals have a form to keep.
        let form = match &col.ty {
            PrimitiveType::Date => "; write a date as '2026-01-31'",
            PrimitiveType::Time => {
                "; write a time as '09:30:00' (a fraction up to '.123456' optional)"
            }
            PrimitiveType::Timestamp => {
                "; write a timestamp as '2026-01-31T09:30:00' (ISO 8601: a 'T' between date and \
                 time; seconds, and a fraction up to '.123456', optional)"
            }
            PrimitiveType::Timestamptz => {
                "; write a timestamp with its zone offset, as '2026-01-31T09:30:00+00:00' or \
                 '2026-01-31T09:30:00Z' (seconds, and a fraction up to '.123456', optional)"
            }
            PrimitiveType::Uuid => "; write a UUID as '123e4567-e89b-12d3-a456-426614174000'",
            PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs => {
                ": a filter cannot compare nanosecond timestamps with a value yet; only IS \
                 NULL and IS NOT NULL apply to them"
            }
            _ => "",
        };
        datum.map(Typed::Value).ok_or_else(|| invalid(form))
    }
}

/// A literal typed by its column.
enum Typed {
    /// A value of the column's type.
    Value(Datum),
    /// A number above every value of the column's type (an integer beyond `int`, a decimal
    /// with more digits than its precision); holds the type's largest value.
    AboveMax(Datum),
    /// A number below every value of the column's type; holds the type's smallest value.
    BelowMin(Datum),
}

/// A comparison operator.
#[derive(Clone, Copy)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `r op value`. A literal beyond the column type's range is compared exactly as SQL compares
/// numbers of different types: `qty < 99999999999` on an `int` column holds for every
/// non-NULL `qty` and is unknown for a NULL one, so it becomes `qty <= 2147483647`, and
/// `qty = 99999999999`, never true, becomes `qty > 2147483647`. (PyIceberg makes them
/// `AlwaysTrue`/`AlwaysFalse`, which also selects, or under NOT drops, the NULL rows.)
fn compare(r: Reference, op: Cmp, value: Typed) -> Predicate {
    match value {
        Typed::Value(d) => match op {
            Cmp::Eq => r.equal_to(d),
            Cmp::Ne => r.not_equal_to(d),
            Cmp::Lt => r.less_than(d),
            Cmp::Le => r.less_than_or_equal_to(d),
            Cmp::Gt => r.greater_than(d),
            Cmp::Ge => r.greater_than_or_equal_to(d),
        },
        Typed::AboveMax(max) => match op {
            Cmp::Eq | Cmp::Gt | Cmp::Ge => r.greater_than(max),
            Cmp::Ne | Cmp::Lt | Cmp::Le => r.less_than_or_equal_to(max),
        },
        Typed::BelowMin(min) => match op {
            Cmp::Eq | Cmp::Lt | Cmp::Le => r.less_than(min),
            Cmp::Ne | Cmp::Gt | Cmp::Ge => r.greater_than_or_equal_to(min),
        },
    }
}

/// An integer literal for a column whose values lie in `min..=max`, as `make` builds them;
/// `None` when `raw` is not an integer.
fn integer(raw: &str, min: i64, max: i64, make: impl Fn(i64) -> Option<Datum>) -> Option<Typed> {
    let t = raw.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let negative = t.starts_with('-');
    Some(match t.parse::<i128>() {
        Ok(v) if v > i128::from(max) => Typed::AboveMax(make(max)?),
        Ok(v) if v < i128::from(min) => Typed::BelowMin(make(min)?),
        Ok(v) => Typed::Value(make(i64::try_from(v).ok()?)?),
        // More digits than an i128 holds.
        Err(_) if negative => Typed::BelowMin(make(min)?),
        Err(_) => Typed::AboveMax(make(max)?),
    })
}

fn names_infinity(raw: &str) -> bool {
    let t = raw.trim().trim_start_matches(['+', '-']);
    t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity")
}

/// Why a literal is not a value of a decimal column.
#[derive(Debug, PartialEq, Eq)]
enum DecimalError {
    NotANumber,
    /// A non-zero digit beyond the column's scale.
    Scale,
    /// More digits than the column's precision: beyond its largest (or smallest) value.
    Precision {
        negative: bool,
    },
}

/// `raw` (`-12.5`, `'0'`, `1.50`, `1e3`) as the unscaled value of a `decimal(precision, scale)`,
/// exactly: `1.5` at scale 2 is 150, `1.500` too; `1.234` at scale 2 has no exact value.
fn decimal_unscaled(
    raw: &str,
    precision: u32,
    scale: u32,
) -> std::result::Result<i128, DecimalError> {
    let t = raw.trim();
    let (negative, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().map_err(|_| DecimalError::NotANumber)?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(DecimalError::NotANumber);
    }
    // The value is digits × 10^shift at the column's scale.
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let frac_len = i64::try_from(frac.len()).map_err(|_| DecimalError::NotANumber)?;
    let mut shift = i64::from(exponent) - frac_len + i64::from(scale);
    while shift < 0 && digits.last() == Some(&0) {
        digits.pop();
        shift += 1;
    }
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let digits = &digits[first..];
    if digits.is_empty() {
        return Ok(0);
    }
    if shift < 0 {
        return Err(DecimalError::Scale);
    }
    let len = i64::try_from(digits.len()).map_err(|_| DecimalError::Precision { negative })?;
    if len + shift > i64::from(precision) {
        return Err(DecimalError::Precision { negative });
    }
    // At most `precision` (≤ 38) digits: fits an i128.
    let mut value: i128 = 0;
    for &d in digits {
        value = value * 10 + i128::from(d);
    }
    for _ in 0..shift {
        value *= 10;
    }
    Ok(if negative { -value } else { value })
}

fn is_column(e: &Expr) -> bool {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
        Expr::Nested(inner) => is_column(inner),
        _ => false,
    }
}

fn kind(t: &Type) -> &'static str {
    match t {
        Type::Struct(_) => "struct",
        Type::List(_) => "list",
        Type::Map(_) => "map",
        Type::Primitive(_) => "primitive",
    }
}
