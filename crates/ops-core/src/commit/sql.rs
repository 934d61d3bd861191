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
    /// PostgreSQL numbers its placeholders (`$1`); SQLite takes `?`. sqlx's `Any` driver passes
    /// the SQL through untouched, so the statements must be written for the backend.
    numbered: bool,
}

/// Where `ident` points now.
const CURRENT: &str = "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? \
                       AND table_namespace = ? AND table_name = ?";
/// The compare-and-swap: PyIceberg's and iceberg-catalog-sql's `UPDATE ... WHERE
/// metadata_location = <base>`.
const SWAP: &str = "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? \
                    WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? \
                    AND metadata_location = ?";

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
        // Ask the connection which database it reached rather than trusting a property: the
        // placeholders must match the server the statements actually go to.
        let backend = pool
            .acquire()
            .await
            .map_err(|e| Error::Catalog {
                catalog: settings.name().to_string(),
                message: format!("cannot connect to the catalog database: {e}"),
            })?
            .backend_name()
            .to_string();
        let numbered = match backend.as_str() {
            "PostgreSQL" => true,
            "SQLite" => false,
            other => {
                return Err(Error::Catalog {
                    catalog: settings.name().to_string(),
                    message: format!(
                        "commits to a {other} catalog database are not supported; use SQLite or \
                         PostgreSQL"
                    ),
                });
            }
        };
        Ok(Self { pool, numbered })
    }

    /// `sql` with its `?` placeholders as the backend wants them.
    fn statement(&self, sql: &str) -> String {
        if self.numbered {
            numbered_placeholders(sql)
        } else {
            sql.to_string()
        }
    }

    /// Where `ident` points now (`None`: no such table).
    pub(super) async fn current(
        &self,
        catalog: &str,
        ident: &TableIdent,
    ) -> Result<Option<String>> {
        let sql = self.statement(CURRENT);
        let row: Option<(Option<String>,)> = sqlx::query_as(&sql)
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
        let sql = self.statement(SWAP);
        let result = sqlx::query(&sql)
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

/// `?` → `$1`, `$2`, ... in order (the statements here hold no `?` inside literals).
fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_statements_number_every_placeholder_in_bind_order() {
        assert_eq!(
            numbered_placeholders(SWAP),
            "UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2 \
             WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 \
             AND metadata_location = $6"
        );
        assert_eq!(
            numbered_placeholders(CURRENT),
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 \
             AND table_namespace = $2 AND table_name = $3"
        );
    }
}
