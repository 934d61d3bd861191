//! AWS Glue: `UpdateTable` guarded by the table's `VersionId`, as Glue catalogs do.

use aws_sdk_glue::types::TableInput;
use iceberg::TableIdent;

use super::Swap;
use super::aws::aws_message;
use crate::catalog::CatalogSettings;
use crate::{Error, Result};

#[derive(Debug)]
pub(super) struct GluePointer {
    client: aws_sdk_glue::Client,
    catalog_id: Option<String>,
    catalog: String,
}

impl GluePointer {
    pub(super) async fn connect(settings: &CatalogSettings) -> Result<Self> {
        let config = super::aws::sdk_config(settings, settings.iceberg_property("uri")).await?;
        Ok(Self {
            client: aws_sdk_glue::Client::new(&config),
            catalog_id: settings.iceberg_property("catalog_id").map(str::to_string),
            catalog: settings.name().to_string(),
        })
    }

    pub(super) async fn swap(&self, ident: &TableIdent, base: &str, new: &str) -> Result<Swap> {
        let err = |message: String| Error::Catalog {
            catalog: self.catalog.clone(),
            message,
        };
        let database = single_level(ident).map_err(err)?;
        let current = self
            .client
            .get_table()
            .set_catalog_id(self.catalog_id.clone())
            .database_name(&database)
            .name(ident.name())
            .send()
            .await
            .map_err(|e| err(format!("GetTable {ident}: {}", aws_message(&e))))?;
        let table = current
            .table()
            .ok_or_else(|| err(format!("GetTable {ident} returned no table")))?;
        let mut parameters = table.parameters().cloned().unwrap_or_default();
        let pointer = parameters
            .get("metadata_location")
            .cloned()
            .unwrap_or_default();
        if pointer != base {
            return Ok(Swap::Conflict(format!(
                "{ident} now points at {pointer}: another writer committed first"
            )));
        }
        parameters.insert("metadata_location".into(), new.to_string());
        parameters.insert("previous_metadata_location".into(), base.to_string());
        let input = TableInput::builder()
            .name(ident.name())
            .set_description(table.description().map(str::to_string))
            .set_table_type(table.table_type().map(str::to_string))
            .set_storage_descriptor(table.storage_descriptor().cloned())
            .set_parameters(Some(parameters))
            .build()
            .map_err(|e| err(format!("UpdateTable input for {ident}: {e}")))?;
        let mut request = self
            .client
            .update_table()
            .set_catalog_id(self.catalog_id.clone())
            .database_name(&database)
            .table_input(input)
            // PyIceberg's default (glue.skip-archive): no table version per commit.
            .skip_archive(true);
        // Glue rejects the update if the table changed since this VersionId was read.
        // Without a VersionId the swap would be unguarded: a concurrent writer's commit could
        // be overwritten silently. Refuse instead.
        let Some(version) = table.version_id() else {
            return Err(err(format!(
                "Glue returned no VersionId for {ident}, so the metadata swap cannot be guarded \
                 against a concurrent writer; refusing to commit (is this a Glue-compatible \
                 endpoint that supports table versions?)"
            )));
        };
        request = request.version_id(version);
        tracing::debug!(table = %ident, version_id = ?table.version_id(), "glue UpdateTable");
        match request.send().await {
            Ok(_) => Ok(Swap::Done),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_concurrent_modification_exception()) =>
            {
                Ok(Swap::Conflict(format!(
                    "Glue refused the update of {ident} (VersionId {}): {}",
                    table.version_id().unwrap_or("?"),
                    aws_message(&e)
                )))
            }
            Err(e) => Err(err(format!("UpdateTable {ident}: {}", aws_message(&e)))),
        }
    }
}

fn single_level(ident: &TableIdent) -> std::result::Result<String, String> {
    match ident.namespace().as_ref().as_slice() {
        [db] => Ok(db.clone()),
        _ => Err(format!(
            "Glue databases are one level deep; '{}' is not",
            ident.namespace().join(".")
        )),
    }
}
