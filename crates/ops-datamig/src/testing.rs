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

/// A SQLite catalog under `dir` (its warehouse `dir/wh`) and in it a new table `ns.<name>` of
/// one required `long` column `id` (namespace `ns` made when missing, so several tables can
/// share the catalog).
pub(crate) async fn id_table(
    dir: &std::path::Path,
    name: &str,
) -> std::result::Result<(ops_core::CatalogHandle, iceberg::table::Table), Box<dyn std::error::Error>>
{
    new_table(
        dir,
        name,
        vec![NestedField::required(
            1,
            "id",
            Type::Primitive(PrimitiveType::Long),
        )],
    )
    .await
}

/// As [`id_table`], of the columns `fields`, unpartitioned.
pub(crate) async fn new_table(
    dir: &std::path::Path,
    name: &str,
    fields: Vec<NestedField>,
) -> std::result::Result<(ops_core::CatalogHandle, iceberg::table::Table), Box<dyn std::error::Error>>
{
    use iceberg::{NamespaceIdent, TableCreation};
    use ops_core::catalog::{CatalogConfig, CatalogDefinition};
    let props: std::collections::BTreeMap<String, String> = [
        ("type".to_string(), "sql".to_string()),
        (
            "uri".into(),
            format!("sqlite:///{}/catalog.db", dir.display()),
        ),
        ("warehouse".into(), format!("file://{}/wh", dir.display())),
    ]
    .into();
    let mut config = CatalogConfig::empty();
    config.insert(CatalogDefinition::inline("t", props));
    let handle = ops_core::CatalogFactory::new(config).open("t").await?;
    let ns = NamespaceIdent::new("ns".into());
    if !handle.catalog().namespace_exists(&ns).await? {
        handle
            .catalog()
            .create_namespace(&ns, std::collections::HashMap::new())
            .await?;
    }
    let schema = Schema::builder()
        .with_fields(fields.into_iter().map(Arc::new))
        .build()?;
    let table = handle
        .catalog()
        .create_table(
            &ns,
            TableCreation::builder()
                .name(name.into())
                .schema(schema)
                .build(),
        )
        .await?;
    Ok((handle, table))
}
