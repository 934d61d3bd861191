//! Iceberg types as people read them, for reports and messages.

/// A column's type as a reader writes it: `struct<a: int, b: list<string>>`,
/// `map<string, long>` (iceberg's own display leaves out the fields of nested types). Walked
/// with an explicit stack: no recursion over the nesting.
pub fn type_text(ty: &iceberg::spec::Type) -> String {
    use iceberg::spec::Type;
    enum Step<'a> {
        Type(&'a Type),
        Text(String),
    }
    let mut out = String::new();
    let mut stack = vec![Step::Type(ty)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(t) => out.push_str(&t),
            Step::Type(Type::Primitive(p)) => out.push_str(&p.to_string()),
            Step::Type(Type::List(l)) => {
                out.push_str("list<");
                stack.push(Step::Text(">".into()));
                stack.push(Step::Type(&l.element_field.field_type));
            }
            Step::Type(Type::Map(m)) => {
                out.push_str("map<");
                stack.push(Step::Text(">".into()));
                stack.push(Step::Type(&m.value_field.field_type));
                stack.push(Step::Text(", ".into()));
                stack.push(Step::Type(&m.key_field.field_type));
            }
            Step::Type(Type::Struct(st)) => {
                out.push_str("struct<");
                stack.push(Step::Text(">".into()));
                for (i, f) in st.fields().iter().enumerate().rev() {
                    stack.push(Step::Type(&f.field_type));
                    let sep = if i == 0 { "" } else { ", " };
                    stack.push(Step::Text(format!("{sep}{}: ", f.name)));
                }
            }
        }
    }
    out
}

/// A schema's top-level columns, `name: type` each, in order.
pub fn columns_text(schema: &iceberg::spec::Schema) -> Vec<String> {
    schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name, type_text(&f.field_type)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_types_print_their_fields() -> iceberg::Result<()> {
        use iceberg::spec::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};
        let s = Type::Struct(StructType::new(vec![
            NestedField::optional(1, "a", Type::Primitive(PrimitiveType::Int)).into(),
            NestedField::optional(
                2,
                "b",
                Type::List(ListType::new(
                    NestedField::list_element(3, Type::Primitive(PrimitiveType::String), false)
                        .into(),
                )),
            )
            .into(),
            NestedField::optional(
                4,
                "m",
                Type::Map(MapType::new(
                    NestedField::map_key_element(5, Type::Primitive(PrimitiveType::String)).into(),
                    NestedField::map_value_element(6, Type::Primitive(PrimitiveType::Long), false)
                        .into(),
                )),
            )
            .into(),
        ]));
        assert_eq!(
            type_text(&s),
            "struct<a: int, b: list<string>, m: map<string, long>>"
        );
        Ok(())
    }
}
