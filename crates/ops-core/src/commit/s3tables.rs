//! S3 Tables: `UpdateTableMetadataLocation` with the table's `versionToken`.

use iceberg::TableIdent;

use super::Swap;
use super::aws::{aws_message, sdk_config};
use crate::catalog::CatalogSettings;
use crate::{Error, Result};

#[derive(Debug)]
pub(super) struct S3TablesPointer {
    client: aws_sdk_s3tables::Client,
    bucket_arn: String,
    catalog: String,
}

impl S3TablesPointer {
    pub(super) async fn connect(settings: &CatalogSettings) -> Result<Self> {
        let config = sdk_config(settings, settings.iceberg_property("endpoint_url")).await?;
        let bucket_arn = settings
            .iceberg_property("table_bucket_arn")
            .ok_or_else(|| Error::Catalog {
                catalog: settings.name().to_string(),
                message: "no table bucket ARN".into(),
            })?
            .to_string();
        Ok(Self {
            client: aws_sdk_s3tables::Client::new(&config),
            bucket_arn,
            catalog: settings.name().to_string(),
        })
    }

    pub(super) async fn swap(&self, ident: &TableIdent, base: &str, new: &str) -> Result<Swap> {
        let err = |message: String| Error::Catalog {
            catalog: self.catalog.clone(),
            message,
        };
        let namespace = ident.namespace().join(".");
        let current = self
            .client
            .get_table_metadata_location()
            .table_bucket_arn(&self.bucket_arn)
            .namespace(&namespace)
            .name(ident.name())
            .send()
            .await
            .map_err(|e| {
                err(format!(
                    "GetTableMetadataLocation {ident}: {}",
                    aws_message(&e)
                ))
            })?;
        let pointer = current.metadata_location().unwrap_or_default();
        if pointer != base {
            return Ok(Swap::Conflict(format!(
                "{ident} now points at {pointer}: another writer committed first"
            )));
        }
        let token = current.version_token();
        tracing::debug!(table = %ident, version_token = token, "s3tables UpdateTableMetadataLocation");
        match self
            .client
            .update_table_metadata_location()
            .table_bucket_arn(&self.bucket_arn)
            .namespace(&namespace)
            .name(ident.name())
            .version_token(token)
            .metadata_location(new)
            .send()
            .await
        {
            Ok(_) => Ok(Swap::Done),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conflict_exception()) =>
            {
                Ok(Swap::Conflict(format!(
                    "S3 Tables refused the update of {ident} (version token {token}): {}",
                    aws_message(&e)
                )))
            }
            Err(e) => Err(err(format!(
                "UpdateTableMetadataLocation {ident}: {}",
                aws_message(&e)
            ))),
        }
    }
}
