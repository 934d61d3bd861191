//! A Glue (Hive) table as an import source, named `glue:DATABASE.TABLE`: its columns and
//! partition keys (Hive types, [`crate::hive_type`]) and its files — under the table's
//! location when it is not partitioned, else under each partition's own location, which may
//! lie anywhere (Hive's `ALTER TABLE … ADD PARTITION … LOCATION`). A file's partition values
//! are its Glue partition's, whatever its path says: they are given to the rest of the import
//! as Hive-escaped `key=value` folders in front of the file's path below its location
//! ([`crate::source::SourceFile::relative`]), so the partition step reads them as it reads a
//! folder tree's.
//!
//! Refused, naming why: views, tables Glue already keeps as Iceberg tables, tables or
//! partitions whose files are not Parquet (their `InputFormat`/SerDe), and bucketed tables
//! (Hive's bucket hash is not Iceberg's `bucket` transform, so their files cannot be described
//! as Iceberg partitions; Java's `MigrateTableSparkAction` refuses them as well).

use std::collections::{HashMap, HashSet};

use arrow_schema::Field;
use aws_sdk_glue::Client;
use aws_sdk_glue::types::{Partition, StorageDescriptor, Table};
use ops_core::catalog::CatalogKind;
use ops_core::commit::aws_message;
use ops_core::{CatalogHandle, Error, Result};

use crate::hive_path::{HIVE_DEFAULT_PARTITION, escape};
use crate::source::{Expanded, SourceFile, expand_location};

/// The prefix of a source name that names a Glue table.
pub const GLUE_PREFIX: &str = "glue:";

/// Glue reached through a catalog's settings (region, endpoint, credentials, catalog id).
#[derive(Clone, Debug)]
pub struct GlueClient {
    client: Client,
    catalog_id: Option<String>,
    catalog: String,
}

impl GlueClient {
    /// The Glue of `handle`, a catalog of type `glue`.
    pub async fn of(handle: &CatalogHandle) -> Result<Self> {
        let settings = handle.settings();
        if settings.kind() != CatalogKind::Glue {
            return Err(Error::InvalidInput(format!(
                "catalog '{}' is a {:?} catalog, not a Glue catalog: a glue:DATABASE.TABLE \
                 source is read through a catalog of type glue (--source-catalog)",
                settings.name(),
                settings.kind()
            )));
        }
        let config =
            ops_core::commit::aws_sdk_config(settings, settings.iceberg_property("uri")).await?;
        Ok(Self {
            client: Client::new(&config),
            catalog_id: settings.iceberg_property("catalog_id").map(str::to_string),
            catalog: settings.name().to_string(),
        })
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The Glue catalog id the settings name (`None`: the account's).
    pub fn catalog_id(&self) -> Option<&str> {
        self.catalog_id.as_deref()
    }

    /// `database.table` as Glue holds it; `None` when there is no such table.
    pub async fn get_table(&self, database: &str, table: &str) -> Result<Option<Table>> {
        match self
            .client
            .get_table()
            .set_catalog_id(self.catalog_id.clone())
            .database_name(database)
            .name(table)
            .send()
            .await
        {
            Ok(got) => Ok(got.table().cloned()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_entity_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err((self.failed(format!("GetTable {database}.{table}")))(
                aws_message(&e),
            )),
        }
    }

    /// Every partition of `database.table`, as Glue holds them (paged through).
    pub async fn get_partitions(&self, database: &str, table: &str) -> Result<Vec<Partition>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .client
                .get_partitions()
                .set_catalog_id(self.catalog_id.clone())
                .database_name(database)
                .table_name(table)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| {
                    (self.failed(format!("GetPartitions {database}.{table}")))(aws_message(&e))
                })?;
            out.extend(page.partitions().iter().cloned());
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(out),
            }
        }
    }

    /// Reads `database.table` and every partition of it, refusing what cannot be imported in
    /// place (see the module docs).
    pub async fn read(&self, database: &str, table: &str) -> Result<GlueTable> {
        let name = format!("{database}.{table}");
        let Some(t) = self.get_table(database, table).await? else {
            return Err(Error::InvalidInput(format!(
                "glue:{name}: no such table in Glue catalog '{}'",
                self.catalog
            )));
        };
        GlueTable::of(&name, &t, self.get_partitions(database, table).await?)
    }

    /// An error of a Glue call about `what`.
    pub(crate) fn failed(&self, what: String) -> impl Fn(String) -> Error + '_ {
        move |message| Error::Catalog {
            catalog: self.catalog.clone(),
            message: format!("{what}: {message}"),
        }
    }
}

/// A Glue Hive table as [`GlueClient::read`] found it.
#[derive(Debug, Clone)]
pub struct GlueTable {
    /// Database.
    pub database: String,
    /// Table name.
    pub name: String,
    /// Its location (a URI).
    pub location: String,
    /// Its columns: name and Hive type.
    pub columns: Vec<(String, String)>,
    /// Its partition keys: name and Hive type.
    pub partition_keys: Vec<(String, String)>,
    /// Its partitions (none when it has no partition keys).
    pub partitions: Vec<GluePartition>,
    /// The table version read (Glue's `VersionId`).
    pub version_id: Option<String>,
    /// The table it is the backup of, when a migration made it (`iceberg-ops.backup-of`): the
    /// Iceberg table's `metadata/` then lies in its location, and is no file of it.
    pub backup_of: Option<String>,
}

/// One Glue partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GluePartition {
    /// Values, in partition-key order (`__HIVE_DEFAULT_PARTITION__` is NULL).
    pub values: Vec<String>,
    /// Where its files are.
    pub location: String,
}

impl GlueTable {
    /// The table `name` (`database.table`) that Glue describes as `t` with `partitions`,
    /// refused when it cannot be imported in place (see the module docs).
    pub fn of(name: &str, t: &Table, partitions: Vec<Partition>) -> Result<Self> {
        if t.table_type()
            .is_some_and(|k| k.eq_ignore_ascii_case("VIRTUAL_VIEW"))
        {
            return Err(Error::InvalidInput(format!(
                "glue:{name} is a view; only tables have files to import"
            )));
        }
        if is_iceberg(t) {
            return Err(Error::InvalidInput(format!(
                "glue:{name} is an Iceberg table already; open it through a Glue catalog \
                 instead of importing it"
            )));
        }
        let parameters = t.parameters().cloned().unwrap_or_default();
        let param = |k: &str| {
            parameters
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.trim().to_ascii_lowercase())
        };
        // Java's `validateSourceTable` allows the hive, parquet, avro and orc providers only:
        // Hudi and Delta tables keep several versions of their rows in their files.
        if let Some(provider) = param("spark.sql.sources.provider")
            .filter(|p| !matches!(p.as_str(), "hive" | "parquet"))
            .or_else(|| param("table_type").filter(|t| matches!(t.as_str(), "hudi" | "delta")))
        {
            let why = if matches!(provider.as_str(), "hudi" | "delta") {
                "its files hold more than its current rows"
            } else {
                "only Parquet files can be added in place"
            };
            return Err(Error::InvalidInput(format!(
                "glue:{name} is a {provider} table, not a Hive table of Parquet files: {why}. \
                 Read it with a {provider} reader and copy the rows"
            )));
        }
        if param("projection.enabled").as_deref() == Some("true") {
            return Err(Error::InvalidInput(format!(
                "glue:{name} uses Athena partition projection: its partitions are computed by \
                 Athena, not listed in Glue. Import its folder instead (--from / --source-path \
                 with the table's location)"
            )));
        }
        let sd = t.storage_descriptor().ok_or_else(|| {
            Error::InvalidInput(format!(
                "glue:{name} has no storage descriptor (no location)"
            ))
        })?;
        refuse_non_parquet(name, None, sd)?;
        if sd.number_of_buckets() > 0 && !sd.bucket_columns().is_empty() {
            return Err(Error::InvalidInput(format!(
                "glue:{name} is bucketed ({} buckets by {}): Hive's bucket hash is not Iceberg's \
                 bucket transform, so its files cannot be described as Iceberg partitions. \
                 Rewrite its rows into a table partitioned as you choose (Spark, Athena CTAS), \
                 then import that",
                sd.number_of_buckets(),
                sd.bucket_columns().join(", ")
            )));
        }
        let location = sd
            .location()
            .filter(|l| !l.trim().is_empty())
            .map(normalized_location)
            .ok_or_else(|| Error::InvalidInput(format!("glue:{name} has no location")))?;
        let columns = sd
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), c.r#type().unwrap_or("").to_string()))
            .collect();
        let partition_keys: Vec<(String, String)> = t
            .partition_keys()
            .iter()
            .map(|c| (c.name().to_string(), c.r#type().unwrap_or("").to_string()))
            .collect();
        let mut found = Vec::new();
        if !partition_keys.is_empty() {
            for p in partitions {
                let values: Vec<String> = p.values().to_vec();
                let Some(psd) = p.storage_descriptor() else {
                    return Err(Error::InvalidInput(format!(
                        "partition {values:?} of glue:{name} has no storage descriptor"
                    )));
                };
                refuse_non_parquet(name, Some(&values), psd)?;
                let Some(loc) = psd.location().filter(|l| !l.trim().is_empty()) else {
                    return Err(Error::InvalidInput(format!(
                        "partition {values:?} of glue:{name} has no location"
                    )));
                };
                if values.len() != partition_keys.len() {
                    return Err(Error::InvalidInput(format!(
                        "partition {values:?} of glue:{name} has {} values for {} partition keys",
                        values.len(),
                        partition_keys.len()
                    )));
                }
                found.push(GluePartition {
                    values,
                    location: normalized_location(loc),
                });
            }
        }
        let (database, table) = name.split_once('.').unwrap_or(("", name));
        Ok(Self {
            database: database.to_string(),
            name: table.to_string(),
            location,
            columns,
            partition_keys,
            partitions: found,
            version_id: t.version_id().map(str::to_string),
            backup_of: parameters.get(crate::migrate::BACKUP_OF).cloned(),
        })
    }

    /// The Arrow fields of the table: its columns, then its partition keys, every one
    /// optional (Hive columns are nullable).
    pub fn fields(&self) -> Result<Vec<Field>> {
        self.columns
            .iter()
            .chain(&self.partition_keys)
            .map(|(name, ty)| {
                crate::hive_type::arrow_type(name, ty).map(|t| Field::new(name, t, true))
            })
            .collect()
    }

    /// Its files: each partition's (or the table's) location expanded, hidden paths skipped,
    /// every file's partition values put in front of its path below the location as
    /// Hive-escaped `key=value` folders (see the module docs).
    pub async fn files(
        &self,
        underscored: &HashSet<String>,
        io_props: &HashMap<String, String>,
    ) -> Result<Expanded> {
        let mut out = Expanded::default();
        let locations: Vec<(&str, Option<&[String]>)> = if self.partition_keys.is_empty() {
            vec![(self.location.as_str(), None)]
        } else {
            self.partitions
                .iter()
                .map(|p| (p.location.as_str(), Some(p.values.as_slice())))
                .collect()
        };
        // 128-bit hashes of the paths, not the paths (see `ops_core::ops::streamed::path_hash`).
        let mut seen: HashSet<u128> = HashSet::new();
        for (location, values) in locations {
            let found = expand_location(location, underscored, io_props).await?;
            out.hidden += found.hidden;
            let folders: String = values
                .unwrap_or_default()
                .iter()
                .zip(&self.partition_keys)
                .map(|(v, (k, _))| {
                    // Hive stores an empty partition value as its default (NULL) partition.
                    let v = if v == HIVE_DEFAULT_PARTITION || v.is_empty() {
                        HIVE_DEFAULT_PARTITION.to_string()
                    } else {
                        escape(v)
                    };
                    format!("{}={v}/", escape(k))
                })
                .collect();
            let glue_values = crate::hive_path::segments(&format!("{folders}x"));
            let metadata = format!("{}/metadata/", self.location.trim_end_matches('/'));
            for f in found.files.into_iter() {
                let f = f?;
                if self.backup_of.is_some() && f.path.starts_with(&metadata) {
                    continue;
                }
                // A folder below the partition's location naming a partition key would decide
                // the value (the deepest folder does): refused where it disagrees with Glue's.
                let below = f.relative.get(f.below..).unwrap_or("");
                for (k, v) in crate::hive_path::segments(below) {
                    if let Some((_, glue)) = glue_values
                        .iter()
                        .find(|(gk, _)| gk.eq_ignore_ascii_case(&k))
                        && *glue != v
                    {
                        return Err(Error::InvalidInput(format!(
                            "{} lies in partition {k}={} of glue:{}.{}, but under a folder \
                             {k}={}: which value its rows have is ambiguous; move the file or \
                             fix the partition's location",
                            f.path,
                            glue.as_deref().unwrap_or("NULL"),
                            self.database,
                            self.name,
                            v.as_deref().unwrap_or("NULL")
                        )));
                    }
                }
                // Two partitions at one location (or one inside another) list a file twice:
                // its rows would be read twice.
                if !seen.insert(ops_core::ops::streamed::path_hash(&f.path)) {
                    return Err(Error::InvalidInput(format!(
                        "{} lies under the locations of two partitions of glue:{}.{}: its \
                         partition is ambiguous",
                        f.path, self.database, self.name
                    )));
                }
                let below = f.relative.get(f.below..).unwrap_or("").to_string();
                out.files.push(SourceFile {
                    below: folders.len(),
                    relative: format!("{folders}{below}"),
                    ..f
                })?;
            }
        }
        Ok(out)
    }
}

/// Whether Glue keeps `t` as an Iceberg table (`table_type=ICEBERG`).
pub fn is_iceberg(t: &Table) -> bool {
    t.parameters()
        .and_then(|p| p.get("table_type"))
        .is_some_and(|k| k.eq_ignore_ascii_case("ICEBERG"))
}

/// `glue:DATABASE.TABLE` as (database, table); `None` when `name` names no Glue table.
pub fn parse_name(name: &str) -> Option<Result<(String, String)>> {
    let rest = name.strip_prefix(GLUE_PREFIX)?;
    Some(match rest.split_once('.') {
        Some((db, t)) if !db.is_empty() && !t.is_empty() && !t.contains('.') => {
            Ok((db.to_string(), t.to_string()))
        }
        _ => Err(Error::InvalidInput(format!(
            "'{name}' is not glue:DATABASE.TABLE (Glue databases are one level deep)"
        ))),
    })
}

/// Hive's `file:/path` (one slash) as `file:///path`; other locations as they are.
fn normalized_location(location: &str) -> String {
    match location.strip_prefix("file:") {
        Some(rest) if !rest.starts_with("//") => format!("file://{rest}"),
        _ => location.to_string(),
    }
}

fn refuse_non_parquet(
    name: &str,
    partition: Option<&[String]>,
    sd: &StorageDescriptor,
) -> Result<()> {
    let input = sd.input_format().unwrap_or("");
    let serde = sd
        .serde_info()
        .and_then(|s| s.serialization_library())
        .unwrap_or("");
    if input.to_ascii_lowercase().contains("parquet")
        || serde.to_ascii_lowercase().contains("parquet")
    {
        return Ok(());
    }
    let what = match partition {
        Some(values) => format!("partition {values:?} of glue:{name}"),
        None => format!("glue:{name}"),
    };
    Err(Error::InvalidInput(format!(
        "{what} is not stored as Parquet (InputFormat {}, SerDe {}): only Parquet files can be \
         added to an Iceberg table (in place, or staged for a copy). Convert it to Parquet first \
         (Spark, Athena CTAS), which rewrites the \
         rows",
        if input.is_empty() { "none" } else { input },
        if serde.is_empty() { "none" } else { serde }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(parse_name("s3://x").is_none());
        assert!(matches!(parse_name("glue:db.t"), Some(Ok((d, t))) if d == "db" && t == "t"));
        for bad in ["glue:db", "glue:.t", "glue:a.b.c", "glue:db."] {
            assert!(matches!(parse_name(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn hive_file_locations() {
        assert_eq!(normalized_location("file:/tmp/x"), "file:///tmp/x");
        assert_eq!(normalized_location("file:///tmp/x"), "file:///tmp/x");
        assert_eq!(normalized_location("s3://b/k"), "s3://b/k");
    }
}
