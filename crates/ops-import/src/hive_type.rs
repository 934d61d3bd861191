//! Hive column types (as Glue and the Hive metastore record them: `bigint`, `decimal(10,2)`,
//! `array<struct<a:int,b:string>>`) as Arrow types, the way Spark reads a Hive table:
//! `tinyint` and `smallint` widen to `int`, `char(n)` and `varchar(n)` are strings, `timestamp`
//! is a microsecond timestamp with time zone (Spark's `TimestampType`, which Iceberg's Spark
//! conversion maps to `timestamptz`). `uniontype` and `interval` types have no Iceberg type
//! and are refused, naming the column.
//!
//! The parser is a loop over a stack of open `array<`, `map<` and `struct<` types, not a
//! recursion; types nested deeper than [`MAX_DEPTH`] are refused, since Arrow's and Iceberg's
//! own conversions (and dropping the type) recurse over the nesting.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use ops_core::{Error, Result};

/// The deepest nesting of `array<`, `map<` and `struct<` a column may have (Hive's parser
/// stops long before; Glue allows 128 KiB type strings).
pub const MAX_DEPTH: usize = 100;

/// The Arrow type of Hive type `hive` of column `column` (for messages).
pub fn arrow_type(column: &str, hive: &str) -> Result<DataType> {
    let bad = |why: String| {
        Error::InvalidInput(format!(
            "column `{column}` has Hive type `{hive}`, which {why}"
        ))
    };
    let tokens = tokenize(hive);
    let mut at = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    loop {
        // A type starts here.
        let Some(Token::Word(word)) = tokens.get(at) else {
            return Err(bad(format!("is not a type (at token {})", at + 1)));
        };
        at += 1;
        let word = word.to_ascii_lowercase();
        let mut value = match word.as_str() {
            "array" | "map" | "struct" => {
                expect(&tokens, &mut at, &Token::Open)
                    .map_err(|t| bad(format!("needs `<` after {word}, not {t}")))?;
                let open = match word.as_str() {
                    "array" => Open::Array,
                    "map" => Open::Map(None),
                    _ => {
                        let name = field_name(&tokens, &mut at).map_err(&bad)?;
                        Open::Struct(Vec::new(), name)
                    }
                };
                stack.push(open);
                if stack.len() > MAX_DEPTH {
                    return Err(bad(format!("nests deeper than {MAX_DEPTH} levels")));
                }
                continue;
            }
            _ => {
                let args = numbers(&tokens, &mut at).map_err(&bad)?;
                primitive(&word, &args).map_err(&bad)?
            }
        };
        // Close what this type completes.
        loop {
            match stack.pop() {
                None => {
                    return match tokens.get(at) {
                        None => Ok(value),
                        Some(t) => Err(bad(format!("has {t} after its end"))),
                    };
                }
                Some(Open::Array) => {
                    expect(&tokens, &mut at, &Token::Close)
                        .map_err(|t| bad(format!("needs `>` to close array<, not {t}")))?;
                    value = DataType::List(Arc::new(Field::new("element", value, true)));
                }
                Some(Open::Map(None)) => {
                    expect(&tokens, &mut at, &Token::Comma)
                        .map_err(|t| bad(format!("needs `,` after a map's key type, not {t}")))?;
                    stack.push(Open::Map(Some(value)));
                    break;
                }
                Some(Open::Map(Some(key))) => {
                    expect(&tokens, &mut at, &Token::Close)
                        .map_err(|t| bad(format!("needs `>` to close map<, not {t}")))?;
                    let entries = Field::new(
                        "key_value",
                        DataType::Struct(Fields::from(vec![
                            Field::new("key", key, false),
                            Field::new("value", value, true),
                        ])),
                        false,
                    );
                    value = DataType::Map(Arc::new(entries), false);
                }
                Some(Open::Struct(mut fields, name)) => {
                    fields.push(Field::new(name, value, true));
                    match tokens.get(at) {
                        Some(Token::Comma) => {
                            at += 1;
                            let name = field_name(&tokens, &mut at).map_err(&bad)?;
                            stack.push(Open::Struct(fields, name));
                            break;
                        }
                        Some(Token::Close) => {
                            at += 1;
                            value = DataType::Struct(Fields::from(fields));
                        }
                        t => {
                            return Err(bad(format!(
                                "needs `,` or `>` in struct<, not {}",
                                t.map_or_else(|| "its end".to_string(), ToString::to_string)
                            )));
                        }
                    }
                }
            }
        }
    }
}

/// A nested type opened and not yet closed.
enum Open {
    Array,
    /// With its key type once read.
    Map(Option<DataType>),
    /// The fields read so far and the name of the one being read.
    Struct(Vec<Field>, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Open,
    Close,
    Comma,
    Colon,
    LParen,
    RParen,
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Word(w) => write!(f, "`{w}`"),
            Token::Open => f.write_str("`<`"),
            Token::Close => f.write_str("`>`"),
            Token::Comma => f.write_str("`,`"),
            Token::Colon => f.write_str("`:`"),
            Token::LParen => f.write_str("`(`"),
            Token::RParen => f.write_str("`)`"),
        }
    }
}

fn tokenize(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in s.chars() {
        if quoted {
            // A back-quoted struct field name: anything up to the closing quote.
            if c == '`' {
                quoted = false;
            } else {
                word.push(c);
            }
            continue;
        }
        let token = match c {
            '<' => Some(Token::Open),
            '>' => Some(Token::Close),
            ',' => Some(Token::Comma),
            ':' => Some(Token::Colon),
            '(' => Some(Token::LParen),
            ')' => Some(Token::RParen),
            '`' => {
                quoted = true;
                None
            }
            c if c.is_whitespace() => None,
            c => {
                word.push(c);
                continue;
            }
        };
        if !word.is_empty() {
            out.push(Token::Word(std::mem::take(&mut word)));
        }
        out.extend(token);
    }
    if !word.is_empty() {
        out.push(Token::Word(word));
    }
    out
}

/// Consumes `want`, or returns what is there instead (for the message).
fn expect(tokens: &[Token], at: &mut usize, want: &Token) -> std::result::Result<(), String> {
    match tokens.get(*at) {
        Some(t) if t == want => {
            *at += 1;
            Ok(())
        }
        Some(t) => Err(t.to_string()),
        None => Err("its end".into()),
    }
}

/// A struct field's `name:`.
fn field_name(tokens: &[Token], at: &mut usize) -> std::result::Result<String, String> {
    let Some(Token::Word(name)) = tokens.get(*at) else {
        return Err("needs a field name in struct<".into());
    };
    *at += 1;
    expect(tokens, at, &Token::Colon)
        .map_err(|t| format!("needs `:` after struct field `{name}`, not {t}"))?;
    Ok(name.clone())
}

/// `(n)` or `(p,s)` after a primitive type, if there.
fn numbers(tokens: &[Token], at: &mut usize) -> std::result::Result<Vec<u32>, String> {
    let mut out = Vec::new();
    if tokens.get(*at) != Some(&Token::LParen) {
        return Ok(out);
    }
    *at += 1;
    loop {
        match tokens.get(*at) {
            Some(Token::Word(w)) => {
                out.push(
                    w.parse()
                        .map_err(|_| format!("has `{w}` where a number belongs"))?,
                );
                *at += 1;
            }
            t => {
                return Err(format!(
                    "needs a number in (…), not {}",
                    t.map_or_else(|| "its end".to_string(), ToString::to_string)
                ));
            }
        }
        match tokens.get(*at) {
            Some(Token::Comma) => *at += 1,
            Some(Token::RParen) => {
                *at += 1;
                return Ok(out);
            }
            _ => return Err("has an unclosed `(`".into()),
        }
    }
}

fn primitive(word: &str, args: &[u32]) -> std::result::Result<DataType, String> {
    Ok(match word {
        "boolean" => DataType::Boolean,
        "tinyint" | "smallint" | "int" | "integer" => DataType::Int32,
        "bigint" => DataType::Int64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "string" | "varchar" | "char" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
        "decimal" | "numeric" => {
            // Hive's default precision and scale are (10, 0).
            let precision = args.first().copied().unwrap_or(10);
            let scale = args.get(1).copied().unwrap_or(0);
            if !(1..=38).contains(&precision) || scale > precision {
                return Err(
                    "is no decimal Iceberg can hold (precision 1 to 38, scale at most \
                            the precision)"
                        .into(),
                );
            }
            let p = u8::try_from(precision).map_err(|_| "has too large a precision")?;
            let s = i8::try_from(scale).map_err(|_| "has too large a scale")?;
            DataType::Decimal128(p, s)
        }
        "uniontype" => return Err("has no Iceberg type (a union)".into()),
        other => return Err(format!("is not a Hive type Iceberg can hold (`{other}`)")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DataType {
        match arrow_type("c", s) {
            Ok(t) => t,
            Err(e) => panic!("{s}: {e}"),
        }
    }

    #[test]
    fn primitives_as_spark_reads_them() {
        assert_eq!(t("smallint"), DataType::Int32);
        assert_eq!(t("BIGINT"), DataType::Int64);
        assert_eq!(t("varchar(20)"), DataType::Utf8);
        assert_eq!(t("char(3)"), DataType::Utf8);
        assert_eq!(t("decimal(12, 2)"), DataType::Decimal128(12, 2));
        assert_eq!(t("decimal"), DataType::Decimal128(10, 0));
        assert_eq!(
            t("timestamp"),
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
        );
    }

    #[test]
    fn nested_types() {
        let ty = t("array<struct<a:int,`b c`:map<string,array<bigint>>>>");
        let DataType::List(item) = ty else {
            panic!("a list: {ty:?}")
        };
        let DataType::Struct(fields) = item.data_type() else {
            panic!("a struct: {item:?}")
        };
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[1].name(), "b c");
        let DataType::Map(entries, _) = fields[1].data_type() else {
            panic!("a map: {:?}", fields[1])
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!("entries")
        };
        assert_eq!(kv[0].data_type(), &DataType::Utf8);
        assert!(matches!(kv[1].data_type(), DataType::List(_)));
    }

    #[test]
    fn nesting_is_bounded_without_recursion() {
        let nested = |depth: usize| format!("{}int{}", "array<".repeat(depth), ">".repeat(depth));
        let mut ty = t(&nested(MAX_DEPTH));
        let mut seen = 0;
        while let DataType::List(item) = ty {
            ty = item.data_type().clone();
            seen += 1;
        }
        assert_eq!(seen, MAX_DEPTH);
        // Far deeper than any stack would take: refused by the loop, not overflowed.
        let e = arrow_type("c", &nested(1_000_000))
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("deeper than")));
    }

    #[test]
    fn bad_types_name_the_column() {
        for bad in [
            "uniontype<int,string>",
            "array<int",
            "map<string>",
            "struct<a int>",
            "decimal(40,2)",
            "int int",
            "interval",
            "",
        ] {
            let e = arrow_type("col_x", bad).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|m| m.contains("col_x")),
                "{bad}: {e:?}"
            );
        }
    }
}
