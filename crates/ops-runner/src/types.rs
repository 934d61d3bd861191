//! Iceberg type names as migration files write them: `long`, `decimal(12,2)`, `timestamptz`,
//! `fixed[16]`, `struct<id: long not null, name: string>`, `list<string>`, `map<string, long>`.
//!
//! Nested field ids are placeholders; table creation and schema evolution assign real ones.

use std::sync::Arc;

use iceberg::spec::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};

/// Parses an Iceberg type name (see the module docs).
pub fn parse_type(text: &str) -> Result<Type, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        next_id: 1,
    };
    let ty = p.ty()?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(format!(
            "unexpected '{}' after the type in '{text}'",
            &text[p.pos..]
        ));
    }
    Ok(ty)
}

/// Parses a primitive type name (for widening).
pub fn parse_primitive(text: &str) -> Result<PrimitiveType, String> {
    match parse_type(text)? {
        Type::Primitive(p) => Ok(p),
        _ => Err(format!("'{text}' is not a primitive type")),
    }
}

/// Writes `ty` back in the syntax [`parse_type`] reads.
pub fn type_name(ty: &Type) -> String {
    match ty {
        Type::Primitive(PrimitiveType::Decimal { precision, scale }) => {
            format!("decimal({precision},{scale})")
        }
        Type::Primitive(PrimitiveType::Fixed(n)) => format!("fixed[{n}]"),
        Type::Primitive(p) => p.to_string(),
        Type::Struct(s) => {
            let fields: Vec<String> = s
                .fields()
                .iter()
                .map(|f| {
                    let req = if f.required { " not null" } else { "" };
                    format!("{}: {}{req}", f.name, type_name(&f.field_type))
                })
                .collect();
            format!("struct<{}>", fields.join(", "))
        }
        Type::List(l) => format!("list<{}>", type_name(&l.element_field.field_type)),
        Type::Map(m) => format!(
            "map<{}, {}>",
            type_name(&m.key_field.field_type),
            type_name(&m.value_field.field_type)
        ),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    next_id: i32,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn word(&mut self) -> String {
        self.ws();
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
        {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8, context: &str) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{}' in {context}", c as char))
        }
    }

    fn number(&mut self, context: &str) -> Result<u32, String> {
        let w = self.word();
        w.parse()
            .map_err(|_| format!("expected a number in {context}, found '{w}'"))
    }

    fn id(&mut self) -> i32 {
        self.next_id += 1;
        self.next_id
    }

    fn ty(&mut self) -> Result<Type, String> {
        let name = self.word().to_ascii_lowercase();
        let p = match name.as_str() {
            "boolean" | "bool" => PrimitiveType::Boolean,
            "int" | "integer" => PrimitiveType::Int,
            "long" | "bigint" => PrimitiveType::Long,
            "float" => PrimitiveType::Float,
            "double" => PrimitiveType::Double,
            "date" => PrimitiveType::Date,
            "time" => PrimitiveType::Time,
            "timestamp" => PrimitiveType::Timestamp,
            "timestamptz" => PrimitiveType::Timestamptz,
            "timestamp_ns" => PrimitiveType::TimestampNs,
            "timestamptz_ns" => PrimitiveType::TimestamptzNs,
            "string" => PrimitiveType::String,
            "uuid" => PrimitiveType::Uuid,
            "binary" => PrimitiveType::Binary,
            "decimal" => {
                self.expect(b'(', "decimal(P,S)")?;
                let precision = self.number("decimal(P,S)")?;
                self.expect(b',', "decimal(P,S)")?;
                let scale = self.number("decimal(P,S)")?;
                self.expect(b')', "decimal(P,S)")?;
                if precision == 0 || precision > 38 || scale > precision {
                    return Err(format!(
                        "decimal({precision},{scale}) is invalid: precision 1-38, scale at most \
                         the precision"
                    ));
                }
                PrimitiveType::Decimal { precision, scale }
            }
            "fixed" => {
                let close = if self.eat(b'[') {
                    b']'
                } else {
                    self.expect(b'(', "fixed[L]")?;
                    b')'
                };
                let n = self.number("fixed[L]")?;
                self.expect(close, "fixed[L]")?;
                PrimitiveType::Fixed(u64::from(n))
            }
            "struct" => return self.struct_type(),
            "list" => {
                self.expect(b'<', "list<T>")?;
                let id = self.id();
                let (element, required) = self.field_type()?;
                self.expect(b'>', "list<T>")?;
                return Ok(Type::List(ListType::new(Arc::new(
                    NestedField::list_element(id, element, required),
                ))));
            }
            "map" => {
                self.expect(b'<', "map<K, V>")?;
                let key_id = self.id();
                let key = self.ty()?;
                self.expect(b',', "map<K, V>")?;
                let value_id = self.id();
                let (value, required) = self.field_type()?;
                self.expect(b'>', "map<K, V>")?;
                return Ok(Type::Map(MapType::new(
                    Arc::new(NestedField::map_key_element(key_id, key)),
                    Arc::new(NestedField::map_value_element(value_id, value, required)),
                )));
            }
            "" => {
                return Err(match self.s.get(self.pos) {
                    Some(c) => format!("expected a type name, found '{}'", *c as char),
                    None => "expected a type name".to_string(),
                });
            }
            other => {
                return Err(format!(
                    "unknown type '{other}'; use an Iceberg type name: boolean, int, long, \
                     float, double, decimal(P,S), date, time, timestamp, timestamptz, \
                     timestamp_ns, timestamptz_ns, string, uuid, fixed[L], binary, \
                     struct<...>, list<...>, map<...>"
                ));
            }
        };
        Ok(Type::Primitive(p))
    }

    /// A type optionally followed by `not null`.
    fn field_type(&mut self) -> Result<(Type, bool), String> {
        let ty = self.ty()?;
        let save = self.pos;
        if self.word().eq_ignore_ascii_case("not") {
            if !self.word().eq_ignore_ascii_case("null") {
                return Err("expected 'not null'".to_string());
            }
            return Ok((ty, true));
        }
        self.pos = save;
        Ok((ty, false))
    }

    fn struct_type(&mut self) -> Result<Type, String> {
        self.expect(b'<', "struct<name: type, ...>")?;
        let mut fields = Vec::new();
        if !self.eat(b'>') {
            loop {
                let name = self.word();
                if name.is_empty() {
                    return Err("expected a field name in struct<name: type, ...>".to_string());
                }
                self.expect(b':', "struct<name: type, ...>")?;
                let id = self.id();
                let (ty, required) = self.field_type()?;
                fields.push(Arc::new(NestedField::new(id, name, ty, required)));
                if self.eat(b'>') {
                    break;
                }
                self.expect(b',', "struct<name: type, ...>")?;
            }
        }
        Ok(Type::Struct(StructType::new(fields)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [
            "long",
            "decimal(12,2)",
            "timestamptz",
            "fixed[16]",
            "struct<id: long not null, name: string>",
            "list<string>",
            "map<string, list<struct<a: int>>>",
        ] {
            assert_eq!(type_name(&parse_type(t).unwrap()), t);
        }
        assert_eq!(
            parse_type("DECIMAL( 9 , 3 )").unwrap(),
            Type::Primitive(PrimitiveType::Decimal {
                precision: 9,
                scale: 3
            })
        );
    }

    #[test]
    fn bad_names_say_why() {
        assert!(
            parse_type("lnog")
                .unwrap_err()
                .contains("unknown type 'lnog'")
        );
        assert!(
            parse_type("decimal(12)")
                .unwrap_err()
                .contains("decimal(P,S)")
        );
        assert!(parse_type("decimal(40,2)").unwrap_err().contains("1-38"));
        assert!(parse_type("list<string").unwrap_err().contains("'>'"));
        assert!(parse_type("long x").unwrap_err().contains("unexpected"));
        assert!(parse_primitive("list<int>").is_err());
    }
}
