//! SQL catalogs: the compare-and-swap `UPDATE` iceberg-catalog-sql and PyIceberg use.

use iceberg::TableIdent;
use sqlx::AnyPool;
use sqlx::any::{AnyPoolOptions, install_default_drivers};

use super::Swap;
use crate::catalog::CatalogSettings;
use crate::{Error, Result};

#[derive(Debug)]
pub(super) struct SqlPointer {
    pool: AnyPool,
    dollar: bool,
}

impl SqlPointer {
    pub(super) async fn connect(settings: &CatalogSettings) -> Result<Self> {
        let uri = settings.iceberg_property("uri").ok_or_else(|| {
            Error::InvalidInput(format!("catalog '{}' has no SQL uri", settings.name()))
        })?;
        install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(2)
            .connect(uri)
            .await
            .map_err(|e| Error::Catalog {
                catalog: settings.name().to_string(),
                message: format!("cannot connect to the catalog database: {e}"),
            })?;
        Ok(Self {
            pool,
            dollar: settings.iceberg_property("sql_bind_style") == Some("DollarNumeric"),
        })
    }

    /// Where `ident` points now (`None`: no such table).
    pub(super) async fn current(
        &self,
        catalog: &str,
        ident: &TableIdent,
    ) -> Result<Option<String>> {
        let sql = if self.dollar {
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 \
             AND table_namespace = $2 AND table_name = $3"
        } else {
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? \
             AND table_namespace = ? AND table_name = ?"
        };
        let row: Option<(Option<String>,)> = sqlx::query_as(sql)
            .bind(catalog)
            .bind(ident.namespace().join("."))
            .bind(ident.name())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| Error::Catalog {
                catalog: catalog.to_string(),
                message: format!("reading the metadata pointer of {ident} failed: {e}"),
            })?;
        Ok(row.and_then(|(location,)| location))
    }

    /// Points `ident` at `new` if, and only if, it still points at `base`.
    pub(super) async fn swap(
        &self,
        catalog: &str,
        ident: &TableIdent,
        base: &str,
        new: &str,
    ) -> Result<Swap> {
        let sql = if self.dollar {
            "UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2 \
             WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 \
             AND metadata_location = $6"
        } else {
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? \
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? \
             AND metadata_location = ?"
        };
        let result = sqlx::query(sql)
            .bind(new)
            .bind(base)
            .bind(catalog)
            .bind(ident.namespace().join("."))
            .bind(ident.name())
            .bind(base)
            .execute(&self.pool)
            .await
            .map_err(|e| Error::Catalog {
                catalog: catalog.to_string(),
                message: format!("metadata pointer update failed: {e}"),
            })?;
        Ok(match result.rows_affected() {
            1 => Swap::Done,
            0 => Swap::Conflict(format!(
                "{ident} no longer points at {base}: another writer committed first"
            )),
            n => {
                return Err(Error::Catalog {
                    catalog: catalog.to_string(),
                    message: format!("pointer update touched {n} rows for {ident}"),
                });
            }
        })
    }
}
