//! `DataMigrator::verify` on a table partitioned by fields inside a struct whose parent the
//! migration renames (issue 15 item 5): every method matches the copy and none matches it with a
//! row duplicated or missing.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::DataType;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogHandle;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::delete::DeleteBuilder;
use ops_datamig::{CopyMode, DataMigrator, VerifyMethod};
use ops_reconcile::SchemaReconciler;

use crate::common::*;

/// `ns.people`: id long, `parent` struct<city string, zip int>; partitioned by the struct's
/// fields (identity(city), and bucket(4, zip) too when `bucket`).
async fn people(
    handle: &CatalogHandle,
    ns: &str,
    parent: &str,
    bucket: bool,
) -> anyhow::Result<Table> {
    let catalog = handle.catalog();
    let namespace = NamespaceIdent::new(ns.to_string());
    catalog.create_namespace(&namespace, HashMap::new()).await?;
    let address = Type::Struct(iceberg::spec::StructType::new(vec![
        NestedField::optional(3, "city", Type::Primitive(PrimitiveType::String)).into(),
        NestedField::optional(4, "zip", Type::Primitive(PrimitiveType::Int)).into(),
    ]));
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, parent, address).into(),
        ])
        .build()?;
    let mut spec =
        UnboundPartitionSpec::builder().add_partition_field(3, "city", Transform::Identity)?;
    if bucket {
        spec = spec.add_partition_field(4, "zip_bucket", Transform::Bucket(4))?;
    }
    Ok(catalog
        .create_table(
            &namespace,
            TableCreation::builder()
                .name("people".into())
                .schema(schema)
                .partition_spec(spec.build())
                .build(),
        )
        .await?)
}

/// Rows `ids` of `table` (a NULL struct every 11th row, a NULL city every 7th).
async fn append(handle: &CatalogHandle, table: &Table, ids: &[i64]) -> anyhow::Result<()> {
    let schema = ops_core::write::table_arrow_schema(table)?;
    let DataType::Struct(fields) = schema.field(1).data_type().clone() else {
        anyhow::bail!("not a struct");
    };
    let cities: StringArray = ids
        .iter()
        .map(|i| (i % 7 != 0).then(|| format!("c{}", i % 5)))
        .collect();
    let zips: Int32Array = ids.iter().map(|i| Some((i * 37 % 1000) as i32)).collect();
    // The validity of a boolean array with NULLs where the struct is NULL.
    let valid: BooleanArray = ids.iter().map(|i| (i % 11 != 0).then_some(true)).collect();
    let parent = StructArray::try_new(
        fields,
        vec![Arc::new(cities) as ArrayRef, Arc::new(zips)],
        valid.nulls().cloned(),
    )?;
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from(ids.to_vec())), Arc::new(parent)],
    )?;
    let files =
        ops_core::write::write_data_files(table, futures::stream::iter([Ok(batch)])).await?;
    AppendBuilder::new(handle, table.identifier().clone())
        .with_files(files)
        .await?;
    Ok(())
}

async fn verdicts(m: &DataMigrator) -> anyhow::Result<Vec<(VerifyMethod, bool)>> {
    let mut out = Vec::new();
    for method in [
        VerifyMethod::RowCount,
        VerifyMethod::PartitionHash,
        VerifyMethod::Sample,
    ] {
        out.push((method, m.verify(method, 7).await?.matches));
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn struct_field_partitions_verify_through_a_renamed_parent() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let handle = open(
        "lake",
        &props(&[
            ("type", "sql"),
            (
                "uri",
                &format!("sqlite:///{}/catalog.db", dir.path().display()),
            ),
            ("warehouse", &format!("file://{}/wh", dir.path().display())),
        ]),
    )
    .await?;
    let src = people(&handle, "src", "address", false).await?;
    append(&handle, &src, &(0..300).collect::<Vec<_>>()).await?;
    let dst = people(&handle, "dst", "home", true).await?;
    let ident = |ns: &str| TableIdent::from_strs([ns, "people"]);
    let mut m = DataMigrator::new(&handle, ident("src")?, &handle, ident("dst")?)
        .schema_reconciler(SchemaReconciler::new().rename("address", "home"))
        .copy_mode(CopyMode::Rewrite);
    let result = m.run().await?;
    assert_eq!(result.rows_moved, 300);
    let all = |b: bool| {
        vec![
            (VerifyMethod::RowCount, b),
            (VerifyMethod::PartitionHash, b),
            (VerifyMethod::Sample, b),
        ]
    };
    assert_eq!(verdicts(&m).await?, all(true), "the copy");

    // Rows duplicated: no method matches. Row 46 is in city c1; row 44's struct is NULL (its
    // city child holds "c4" under the NULL), so its partition is city=null.
    append(&handle, &dst, &[46, 44]).await?;
    assert_eq!(verdicts(&m).await?, all(false), "duplicated rows");
    let v = m.verify(VerifyMethod::PartitionHash, 7).await?;
    let mut labels = v.mismatched_partitions.clone();
    labels.sort();
    assert_eq!(labels.len(), 2, "{v:?}");
    assert!(labels[0].starts_with("city=c1/zip_bucket="), "{v:?}");
    assert!(labels[1].starts_with("city=null/zip_bucket="), "{v:?}");

    // Rows 43 (city c3) and 45 gone: the counts agree again (300), the contents do not.
    DeleteBuilder::new(&handle, ident("dst")?)
        .with_filter_text("id = 43 OR id = 45")
        .execute_with_report()
        .await?;
    let got = verdicts(&m).await?;
    assert_eq!(
        got,
        vec![
            (VerifyMethod::RowCount, true),
            (VerifyMethod::PartitionHash, false),
            (VerifyMethod::Sample, false),
        ],
        "two rows duplicated, two missing"
    );
    let v = m.verify(VerifyMethod::Sample, 7).await?;
    assert_eq!((v.source_count, v.dest_count), (Some(300), Some(300)));
    Ok(())
}
