//! A new table's first metadata with the field ids the caller chose.
//!
//! iceberg's `TableMetadataBuilder::new` (which every catalog's `create_table` goes through)
//! renumbers a schema's field ids from 1 in its own order, and the partition spec's with them.
//! A copy of another table needs the source's ids: its Parquet files are read by field id, so a
//! destination with other ids cannot share them. Where ops-core swaps the metadata pointer itself
//! (SQL, Glue), the table just created is given a second metadata file whose schema and spec are
//! the caller's, ids and all; REST and S3 Tables build table metadata on the server, so there
//! the ids stay as the server assigned them and the caller is told (`Ok(None)`).

use std::str::FromStr;

use iceberg::MetadataLocation;
use iceberg::spec::{Schema, TableMetadata, UnboundPartitionSpec};
use iceberg::table::Table;
use serde_json::{Value, json};

use super::{Pointer, Swap, commits_supported, glue, remember_committed, sql};
use crate::catalog::{CatalogHandle, CatalogKind};
use crate::{Error, Result};

/// Gives `table` — just created, with no snapshot — `schema` and `spec` with their field ids as
/// given (`spec`'s partition field ids too, where set), and a `last-column-id` of at least
/// `min_last_column_id` (a copy's source may have assigned, then dropped, higher ids).
///
/// Returns the table at its new metadata, or `None` when the catalog assigns ids on the server
/// (REST, S3 Tables) and they cannot be chosen.
pub async fn keep_field_ids(
    handle: &CatalogHandle,
    table: &Table,
    schema: &Schema,
    spec: &UnboundPartitionSpec,
    min_last_column_id: i32,
) -> Result<Option<Table>> {
    let settings = handle.settings();
    let ident = table.identifier().clone();
    let committer = handle.committer();
    let pointer = match settings.kind() {
        CatalogKind::Sql if commits_supported(settings) => Pointer::Sql(
            committer
                .sql
                .get_or_try_init(|| sql::SqlPointer::connect(settings))
                .await?,
        ),
        CatalogKind::Glue => Pointer::Glue(
            committer
                .glue
                .get_or_try_init(|| glue::GluePointer::connect(settings))
                .await?,
        ),
        _ => return Ok(None),
    };
    let base = table.metadata();
    if base.current_snapshot_id().is_some() || base.snapshots().next().is_some() {
        return Err(Error::InvalidInput(format!(
            "{ident} already holds snapshots; field ids are chosen only for a table just created"
        )));
    }
    let base_location = table.metadata_location_result()?.to_string();
    let metadata = with_ids(base, &base_location, schema, spec, min_last_column_id)?;
    let location = MetadataLocation::from_str(&base_location)?
        .with_next_version()
        .with_new_metadata(&metadata);
    metadata.write_to(table.file_io(), &location).await?;
    let new_location = location.to_string();
    let swap = match pointer {
        Pointer::Sql(p) => {
            p.swap(settings.name(), &ident, &base_location, &new_location)
                .await?
        }
        Pointer::Glue(p) => p.swap(&ident, &base_location, &new_location).await?,
        Pointer::S3Tables(p) => p.swap(&ident, &base_location, &new_location).await?,
    };
    if let Swap::Conflict(detail) = swap {
        let _ = table.file_io().delete(&new_location).await;
        return Err(Error::CommitConflict {
            table: ident.to_string(),
            detail: format!("the table changed while its first field ids were set: {detail}"),
        });
    }
    let committed = Table::builder()
        .identifier(ident.clone())
        .metadata(metadata)
        .metadata_location(new_location.clone())
        .file_io(table.file_io().clone())
        .runtime(iceberg::Runtime::try_current()?)
        .build()?;
    if settings.kind() == CatalogKind::Sql {
        remember_committed(settings, committed.clone());
    }
    tracing::debug!(table = %ident, location = %new_location, "first metadata keeps the given field ids");
    Ok(Some(committed))
}

/// `base` (a table with no snapshot) with `schema` as its only schema and `spec` as its only
/// partition spec, ids as given; the rest (uuid, location, properties, sort order) unchanged.
fn with_ids(
    base: &TableMetadata,
    base_location: &str,
    schema: &Schema,
    spec: &UnboundPartitionSpec,
    min_last_column_id: i32,
) -> Result<TableMetadata> {
    let schema = schema.clone().into_builder().with_schema_id(0).build()?;
    // The source's spec as it is (`rebind`): one PyIceberg made with `year(d)` and `month(d)`
    // is copied, not refused as redundant (Java reads such a spec without that check).
    let bound = spec.clone().with_spec_id(0).rebind(schema.clone())?;
    // Unsorted is the only order create_dest gives; a sort order would name renumbered ids.
    if !base.default_sort_order().fields.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{base_location}: a table created with a sort order cannot have its field ids chosen"
        )));
    }
    let last_partition_id = bound
        .fields()
        .iter()
        .map(|f| f.field_id)
        .max()
        .unwrap_or(999)
        .max(999);
    let schema_json = serde_json::to_value(&schema).map_err(json_error)?;
    let spec_json = serde_json::to_value(&bound).map_err(json_error)?;
    let mut doc = serde_json::to_value(base).map_err(json_error)?;
    let Some(obj) = doc.as_object_mut() else {
        return Err(Error::InvalidInput(format!(
            "{base_location}: table metadata did not serialise to an object"
        )));
    };
    let last_column_id = schema.highest_field_id().max(min_last_column_id);
    obj.insert("schemas".into(), json!([schema_json.clone()]));
    obj.insert("current-schema-id".into(), json!(0));
    obj.insert("last-column-id".into(), json!(last_column_id));
    obj.insert("partition-specs".into(), json!([spec_json.clone()]));
    obj.insert("default-spec-id".into(), json!(0));
    obj.insert("last-partition-id".into(), json!(last_partition_id));
    // v1 documents repeat the current schema and spec in their own fields.
    if obj.contains_key("schema") {
        obj.insert("schema".into(), schema_json);
    }
    if obj.contains_key("partition-spec") {
        obj.insert("partition-spec".into(), spec_json["fields"].clone());
    }
    let now = chrono_like_now_ms();
    let mut log = obj
        .get("metadata-log")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    log.push(json!({"metadata-file": base_location, "timestamp-ms": base.last_updated_ms()}));
    obj.insert("metadata-log".into(), Value::Array(log));
    obj.insert(
        "last-updated-ms".into(),
        json!(now.max(base.last_updated_ms())),
    );
    serde_json::from_value(doc).map_err(json_error)
}

fn chrono_like_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn json_error(e: serde_json::Error) -> Error {
    Error::InvalidInput(format!("table metadata could not be rebuilt: {e}"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use iceberg::spec::{
        FormatVersion, NestedField, PrimitiveType, SortOrder, TableMetadataBuilder, Transform,
        Type, UnboundPartitionField,
    };

    use super::*;

    #[test]
    fn the_given_ids_survive_where_new_metadata_renumbers_them() {
        // The source's order: `note` (id 8) moved first, `id` is 1, `region` 2.
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(8, "note", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .unwrap();
        let spec = UnboundPartitionSpec::builder()
            .add_partition_fields([UnboundPartitionField {
                source_id: 2,
                field_id: Some(1000),
                name: "region".into(),
                transform: Transform::Identity,
            }])
            .unwrap()
            .build();
        for version in [FormatVersion::V1, FormatVersion::V2] {
            let created = TableMetadataBuilder::new(
                schema.clone(),
                spec.clone(),
                SortOrder::unsorted_order(),
                "file:///wh/t".into(),
                version,
                HashMap::new(),
            )
            .unwrap()
            .build()
            .unwrap()
            .metadata;
            assert_eq!(
                created.current_schema().field_by_name("note").unwrap().id,
                1,
                "iceberg renumbers"
            );
            let md = with_ids(
                &created,
                "file:///wh/t/metadata/00000-x.metadata.json",
                &schema,
                &spec,
                9,
            )
            .unwrap();
            let s = md.current_schema();
            assert_eq!(s.field_by_name("note").unwrap().id, 8);
            assert_eq!(s.field_by_name("id").unwrap().id, 1);
            assert_eq!(s.field_by_name("region").unwrap().id, 2);
            assert_eq!(md.last_column_id(), 9);
            let pf = &md.default_partition_spec().fields()[0];
            assert_eq!((pf.source_id, pf.field_id), (2, 1000));
            assert_eq!(md.uuid(), created.uuid());
            assert_eq!(md.format_version(), version);
            assert_eq!(md.metadata_log().len(), 1);
        }
    }
}
