//! The fixture of this crate's unit tests that need a real table (ops-core's own is private to
//! its tests): `ns.t (id long, region string)` in a fresh SQLite catalog, as ops-core's append
//! tests build it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation};
use ops_core::CatalogHandle;
use ops_core::catalog::{CatalogConfig, CatalogDefinition};

/// `ns.t (id long, region string)` in a fresh SQLite catalog under `dir`.
pub(crate) async fn table(dir: &std::path::Path) -> anyhow::Result<(CatalogHandle, Table)> {
    let props: BTreeMap<String, String> = [
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
    handle
        .catalog()
        .create_namespace(&ns, HashMap::new())
        .await?;
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .build()?;
    let table = handle
        .catalog()
        .create_table(
            &ns,
            TableCreation::builder()
                .name("t".into())
                .schema(schema)
                .build(),
        )
        .await?;
    Ok((handle, table))
}

/// Rows `ids` of [`table`], all in region `eu`.
pub(crate) fn batch(table: &Table, ids: Vec<i64>) -> anyhow::Result<RecordBatch> {
    let n = ids.len();
    Ok(RecordBatch::try_new(
        ops_core::write::table_arrow_schema(table)?,
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(vec![Some("eu"); n])),
        ],
    )?)
}

/// [`table`] with rows `ids` appended in one commit, and that commit's snapshot.
pub(crate) async fn appended(
    dir: &std::path::Path,
    ids: Vec<i64>,
) -> anyhow::Result<(Table, iceberg::spec::SnapshotRef)> {
    let (handle, table) = table(dir).await?;
    let rows = batch(&table, ids)?;
    let (table, _) = ops_core::append::append(
        &handle,
        &table,
        futures::stream::iter([Ok(rows)]),
        HashMap::new(),
    )
    .await?;
    let snapshot = table
        .metadata()
        .current_snapshot()
        .ok_or_else(|| anyhow::anyhow!("no snapshot"))?
        .clone();
    Ok((table, snapshot))
}
