//! Schemas, specs and partition tuples the unit tests share.

use std::sync::Arc;

use iceberg::spec::{
    Literal, NestedField, PartitionSpec, PrimitiveType, Schema, SchemaRef, Struct, Transform, Type,
    UnboundPartitionSpec,
};

pub(crate) fn long(id: i32, name: &str) -> NestedField {
    NestedField::optional(id, name, Type::Primitive(PrimitiveType::Long))
}

pub(crate) fn schema(fields: Vec<NestedField>) -> SchemaRef {
    Arc::new(
        Schema::builder()
            .with_fields(fields.into_iter().map(Arc::new))
            .build()
            .unwrap(),
    )
}

/// orders(id long required, region string, amount int).
pub(crate) fn orders() -> SchemaRef {
    schema(vec![
        NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)),
        NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)),
        NestedField::optional(3, "amount", Type::Primitive(PrimitiveType::Int)),
    ])
}

pub(crate) fn spec(schema: &SchemaRef, source_id: i32, transform: Transform) -> PartitionSpec {
    UnboundPartitionSpec::builder()
        .add_partition_field(source_id, "p", transform)
        .unwrap()
        .build()
        .bind(schema.clone())
        .unwrap()
}

pub(crate) fn region(v: Option<&str>) -> Struct {
    Struct::from_iter([v.map(Literal::string)])
}
