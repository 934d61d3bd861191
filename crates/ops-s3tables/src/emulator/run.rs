//! The emulated migration job: planning (reports, destination table) and migrating (Parquet
//! objects → Iceberg data files, each object committed as it migrates).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, new_null_array};
use arrow_schema::DataType;
use iceberg::spec::{NestedField, Schema, Transform, UnboundPartitionSpec};
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::catalog::{CatalogConfig, CatalogDefinition};
use ops_core::{CatalogFactory, CatalogHandle};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::json;

use super::plan::{FAIL, TablePlan, plan_table};
use super::record::{Kind, Planning, Record, State, Stats, code};
use super::{Emulator, now};
use crate::aws::split_s3_uri;
use crate::source::{SourceObject, read_object, source_objects};

type Fallible<T> = Result<T, String>;

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Where one report goes: `<prefix>/<migrationId>/v1/<kind>/<file>`.
fn report_key(prefix: Option<&str>, id: &str, kind: &str, file: &str) -> String {
    let p = prefix.unwrap_or("").trim_matches('/');
    if p.is_empty() {
        format!("{id}/v1/{kind}/{file}")
    } else {
        format!("{p}/{id}/v1/{kind}/{file}")
    }
}

/// How planning ended when it did not fail unexpectedly.
enum Planned {
    /// Waiting for review, or a sync with nothing to migrate (succeeded).
    Done,
    /// No review asked for: migrate now.
    Queue,
    /// The migration failed (already recorded) or was cancelled.
    Stopped,
}

impl Emulator {
    /// A catalog over the destination table bucket in moto.
    pub(crate) async fn destination(&self, table_bucket_arn: &str) -> Fallible<CatalogHandle> {
        let e = &self.config.moto_endpoint;
        let region = self.config.signer.region().to_string();
        let (k, sct) = (&self.config.access_key_id, &self.config.secret_access_key);
        let props: Vec<(&str, &str)> = vec![
            ("type", "s3tables"),
            ("s3tables.table-bucket-arn", table_bucket_arn),
            ("s3tables.endpoint", e),
            ("client.region", &region),
            ("client.access-key-id", k),
            ("client.secret-access-key", sct),
            ("s3.endpoint", e),
            ("s3.region", &region),
            ("s3.access-key-id", k),
            ("s3.secret-access-key", sct),
            ("s3.path-style-access", "true"),
        ];
        let mut config = CatalogConfig::empty();
        config.insert(CatalogDefinition::inline(
            "s3tables-emulator-destination",
            props,
        ));
        CatalogFactory::new(config)
            .open("s3tables-emulator-destination")
            .await
            .map_err(s)
    }

    /// Writes a report object; returns its Base64 CRC64NVME checksum.
    async fn put_report(&self, bucket_arn: &str, key: &str, body: String) -> Fallible<String> {
        let (bucket, _) =
            split_s3_uri(bucket_arn).unwrap_or((bucket_arn.to_string(), String::new()));
        let checksum = crc64nvme_base64(body.as_bytes());
        self.aws
            .put_object(&bucket, key, body.into_bytes())
            .await
            .map_err(s)?;
        Ok(checksum)
    }

    /// Writes a report made of one data file and a manifest (which lists each file's
    /// checksum); returns the manifest key and checksum.
    async fn put_manifested(
        &self,
        m: &Record,
        prefix: Option<&str>,
        kind: &str,
        csv: String,
    ) -> Fallible<(String, String)> {
        let data = report_key(prefix, &m.id, kind, "data/part-00000.csv");
        let data_sum = self.put_report(&m.bucket, &data, csv).await?;
        let manifest_key = report_key(prefix, &m.id, kind, "manifest.json");
        let manifest = json!({"migrationId": m.id,
            "files": [{"key": data, "format": "csv", "checksumCRC64NVME": data_sum}]});
        let sum = self
            .put_report(&m.bucket, &manifest_key, manifest.to_string())
            .await?;
        Ok((manifest_key, sum))
    }

    pub(crate) async fn step(&self) {
        tokio::time::sleep(self.config.step_delay).await;
    }

    fn cancel_requested(&self, id: &str) -> bool {
        self.with_state(|st| {
            st.migrations
                .iter()
                .find(|m| m.record.id == id)
                .is_none_or(|m| m.cancel_requested)
        })
    }

    /// Ends a task's ownership of the migration; a cancel it saw ends in `cancelled` (unless
    /// the migration already failed).
    fn release(&self, id: &str) {
        let cancelling = self.with_state(|st| {
            let m = st.migrations.iter_mut().find(|m| m.record.id == id)?;
            m.busy = false;
            Some(m.record.state == State::Cancelling)
        });
        if cancelling == Some(true) {
            self.set_state(id, State::Cancelled);
        }
    }

    /// Planning; any unexpected error fails the migration with `internalError`.
    pub(crate) async fn plan(&self, id: &str) {
        self.step().await;
        let mut queue = false;
        if !self.cancel_requested(id) {
            self.set_state(id, State::Planning);
            self.step().await;
            match self.plan_inner(id).await {
                Ok(Planned::Queue) => queue = true,
                Ok(Planned::Done | Planned::Stopped) => {}
                Err(e) => {
                    tracing::warn!(migration_id = id, error = %e, "planning failed");
                    self.fail(id, code::INTERNAL_ERROR, None, false);
                }
            }
        }
        if queue {
            // The migrating task takes the migration over (it stays busy).
            self.set_state(id, State::Queued);
            let this = self.clone();
            let mid = id.to_string();
            tokio::spawn(async move { this.migrate(&mid).await });
        } else {
            self.release(id);
        }
    }

    async fn plan_inner(&self, id: &str) -> Fallible<Planned> {
        let Some((m, key)) = self.with_state(|st| {
            st.migrations
                .iter()
                .find(|x| x.record.id == id)
                .map(|x| (x.record.clone(), x.table_key.clone()))
        }) else {
            return Ok(Planned::Stopped);
        };
        if self.config.refuse_roles.contains(&m.role_arn) {
            self.fail(id, code::ROLE_PERMISSIONS, Some(m.role_arn.as_str()), false);
            return Ok(Planned::Stopped);
        }
        let glue = &m.source["glueTable"];
        let (db, tbl) = (
            glue["databaseName"].as_str().unwrap_or_default(),
            glue["tableName"].as_str().unwrap_or_default(),
        );
        let Some(table) = self.aws.glue_table(db, tbl).await.map_err(s)? else {
            self.fail(
                id,
                code::RESOURCE_NOT_FOUND,
                Some(format!("{db}.{tbl}").as_str()),
                false,
            );
            return Ok(Planned::Stopped);
        };
        let partitions = self.aws.glue_partitions(db, tbl).await.map_err(s)?;
        let objects = source_objects(&self.aws, &table, &partitions)
            .await
            .map_err(s)?;
        if objects.is_empty() {
            self.fail(id, code::SOURCE_NOT_SUPPORTED, Some("EMPTY_TABLE"), false);
            return Ok(Planned::Stopped);
        }
        let cols = |v: &serde_json::Value| -> Vec<(String, String)> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            (
                                c["Name"].as_str().unwrap_or_default().to_string(),
                                c["Type"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let columns = cols(&table["StorageDescriptor"]["Columns"]);
        let partition_keys = cols(&table["PartitionKeys"]);
        let (start, migrated, last_plan) = self.with_state(|st| {
            let t = st.tables.get(&key).cloned().unwrap_or_default();
            (t.start, t.migrated, t.last_plan)
        });
        let start = start.ok_or("no start request recorded")?;
        let policies = &m.data_migration["migrationPolicies"];
        let unmatched = policies["unmatchedSourceFieldsPolicy"]
            .as_str()
            .unwrap_or(FAIL);
        let incompatible = policies["incompatibleValuesPolicy"]
            .as_str()
            .unwrap_or(FAIL);
        let handle = self.destination(&m.table_bucket_arn).await?;
        let ident = TableIdent::new(NamespaceIdent::new(m.namespace.clone()), m.name.clone());
        let sync = m.kind == Kind::Sync;
        let tc_prefix = m.table_report.prefix.clone();
        let oc_prefix = m.object_report.prefix.clone();

        let plan = if sync {
            last_plan.ok_or("no earlier plan to sync from")?
        } else {
            if !handle
                .catalog()
                .namespace_exists(ident.namespace())
                .await
                .map_err(s)?
            {
                self.fail(
                    id,
                    code::RESOURCE_NOT_FOUND,
                    Some(m.namespace.as_str()),
                    false,
                );
                return Ok(Planned::Stopped);
            }
            if handle.catalog().table_exists(&ident).await.map_err(s)? {
                let mut p = TablePlan::default();
                p.rows.push(super::plan::Row {
                    finding_type: "invalid",
                    category: "metadata",
                    subcategory: "destinationTableExists".into(),
                    details: json!({"fieldPath": null, "table": format!("{}.{}", m.namespace, m.name)}),
                });
                let k = report_key(
                    tc_prefix.as_deref(),
                    id,
                    "table-compatibility",
                    "report.csv",
                );
                let sum = self.put_report(&m.bucket, &k, p.csv()).await?;
                self.update_record(id, |x| {
                    let r = &mut x.record.table_report;
                    r.key = Some(k);
                    r.checksum = Some(sum);
                    r.invalid = [("metadata", 1)].into();
                });
                self.fail(id, code::TABLE_COMPATIBILITY_REPORT, None, false);
                return Ok(Planned::Stopped);
            }
            plan_table(
                &columns,
                &partition_keys,
                start["destinationTable"].get("schema"),
                unmatched,
                incompatible,
            )
        };

        // Object compatibility: a sync refuses objects overwritten in place since they migrated.
        let mut planned = Vec::new();
        let mut object_rows = String::from("key,size,etag,included,finding_type,finding\n");
        let mut modified = 0i64;
        let mut already = 0i64;
        for o in &objects {
            let (included, finding_type, finding) = match migrated.get(&o.object.key) {
                Some(etag) if etag != &o.object.etag => {
                    modified += 1;
                    (false, "invalid", "data.objectModified")
                }
                Some(_) => {
                    already += 1;
                    (false, "informational", "alreadyMigrated")
                }
                None => {
                    planned.push(o.clone());
                    (true, "informational", "")
                }
            };
            object_rows.push_str(&format!(
                "s3://{}/{},{},{},{included},{finding_type},{finding}\n",
                o.bucket, o.object.key, o.object.size, o.object.etag
            ));
        }
        let k = report_key(
            tc_prefix.as_deref(),
            id,
            "table-compatibility",
            "report.csv",
        );
        let table_sum = self.put_report(&m.bucket, &k, plan.csv()).await?;
        let (manifest, manifest_sum) = self
            .put_manifested(
                &m,
                oc_prefix.as_deref(),
                "object-compatibility",
                object_rows,
            )
            .await?;
        let invalid = plan.invalid() as i64;
        let partition_count = if partition_keys.is_empty() {
            0
        } else {
            objects
                .iter()
                .map(|o| o.partition.clone())
                .collect::<BTreeSet<_>>()
                .len() as i64
        };
        let planned_n = planned.len() as i64;
        self.update_record(id, |x| {
            let r = &mut x.record;
            r.table_report.key = Some(k);
            r.table_report.checksum = Some(table_sum);
            if invalid > 0 {
                r.table_report.invalid = [("metadata", invalid)].into();
            }
            r.object_report.key = Some(manifest);
            r.object_report.checksum = Some(manifest_sum);
            if modified > 0 {
                r.object_report.invalid = [("data", modified)].into();
            }
            // For a sync, the planned objects are all the table's data files after it,
            // including those earlier migrations migrated; they count as migrated already.
            r.planning = Some(Planning {
                scanned: objects.len() as i64,
                planned: planned_n + already,
                partitions: partition_count,
            });
            r.stats = Some(Stats {
                migrated: already,
                failed: 0,
                pending: planned_n,
            });
            x.planned = planned.clone();
            x.table_plan = plan.clone();
        });
        if modified > 0 {
            self.fail(id, code::OBJECT_COMPATIBILITY_REPORT, None, false);
            return Ok(Planned::Stopped);
        }
        if invalid > 0 {
            self.fail(id, code::TABLE_COMPATIBILITY_REPORT, None, false);
            return Ok(Planned::Stopped);
        }
        if !sync {
            self.create_destination(&handle, &ident, &plan).await?;
            let t = self
                .moto_get_table(&m.table_bucket_arn, &m.namespace, &m.name)
                .await
                .map_err(|r| String::from_utf8_lossy(&r.body).into_owned())?;
            let arn = t["tableARN"].as_str().unwrap_or_default().to_string();
            self.with_state(|st| {
                if let Some(t) = st.tables.get_mut(&key) {
                    t.table_arn = Some(arn.clone());
                    t.last_plan = Some(plan.clone());
                }
            });
            self.update_record(id, |x| x.record.table_arn = Some(arn));
        }
        self.update_record(id, |x| x.record.has_valid_plan = Some(true));
        if self.cancel_requested(id) {
            return Ok(Planned::Stopped);
        }
        if sync && planned_n == 0 {
            self.set_state(id, State::Succeeded);
            return Ok(Planned::Done);
        }
        if m.review {
            self.set_state(id, State::PendingReview);
            Ok(Planned::Done)
        } else {
            Ok(Planned::Queue)
        }
    }

    async fn create_destination(
        &self,
        handle: &CatalogHandle,
        ident: &TableIdent,
        plan: &TablePlan,
    ) -> Fallible<()> {
        let fields = plan.columns.iter().map(|c| {
            Arc::new(NestedField::new(
                c.id,
                c.name.clone(),
                c.ty.clone(),
                c.required,
            ))
        });
        let schema = Schema::builder().with_fields(fields).build().map_err(s)?;
        let mut spec = UnboundPartitionSpec::builder();
        for c in plan.columns.iter().filter(|c| c.partition) {
            spec = spec
                .add_partition_field(c.id, c.name.clone(), Transform::Identity)
                .map_err(s)?;
        }
        let creation = TableCreation::builder()
            .name(ident.name().to_string())
            .schema(schema)
            .partition_spec(spec.build())
            .properties(HashMap::from([(
                "write.parquet.compression-codec".to_string(),
                "zstd".to_string(),
            )]))
            .build();
        handle
            .catalog()
            .create_table(ident.namespace(), creation)
            .await
            .map_err(s)?;
        Ok(())
    }

    /// Migrating: each planned object is converted, written and committed before the next, so
    /// what migrated stays committed when a later object fails or the migration is cancelled.
    pub(crate) async fn migrate(&self, id: &str) {
        self.step().await;
        if !self.cancel_requested(id) {
            self.set_state(id, State::Migrating);
            self.step().await;
            if let Err(e) = self.migrate_inner(id).await {
                self.fail(id, code::OBJECT_MIGRATION_REPORT, None, true);
                tracing::warn!(migration_id = id, error = %e, "migration failed");
            }
        }
        self.release(id);
    }

    async fn migrate_inner(&self, id: &str) -> Fallible<()> {
        let Some((m, key, planned, plan)) = self.with_state(|st| {
            st.migrations.iter().find(|x| x.record.id == id).map(|x| {
                (
                    x.record.clone(),
                    x.table_key.clone(),
                    x.planned.clone(),
                    x.table_plan.clone(),
                )
            })
        }) else {
            return Ok(());
        };
        let handle = self.destination(&m.table_bucket_arn).await?;
        let ident = TableIdent::new(NamespaceIdent::new(m.namespace.clone()), m.name.clone());
        let table = handle.catalog().load_table(&ident).await.map_err(s)?;
        let target = ops_core::write::table_arrow_schema(&table).map_err(s)?;
        let mut report = String::from("key,etag,status,records,transformations,error_code\n");
        let mut rows_total = 0u64;
        let mut failure = None;
        let nulls: Vec<&str> = plan
            .columns
            .iter()
            .filter(|c| c.set_null)
            .map(|c| c.name.as_str())
            .collect();
        for (i, o) in planned.iter().enumerate() {
            // A cancel lets the object in progress finish, then stops.
            if i > 0 {
                self.step().await;
                if self.cancel_requested(id) {
                    break;
                }
            }
            let migrated = self
                .migrate_object(&handle, &ident, &table, &target, o, &plan, id)
                .await;
            let rows = match migrated {
                Ok(rows) => rows,
                Err(e) => {
                    report.push_str(&format!(
                        "s3://{}/{},{},failed,0,,{}\n",
                        o.bucket,
                        o.object.key,
                        o.object.etag,
                        crate::review::csv_field(&e)
                    ));
                    self.update_record(id, |x| {
                        if let Some(st) = x.record.stats.as_mut() {
                            st.failed += 1;
                            st.pending -= 1;
                        }
                        x.record.migration_report.invalid = [("data", 1)].into();
                    });
                    failure = Some(format!("s3://{}/{}: {e}", o.bucket, o.object.key));
                    break;
                }
            };
            rows_total += rows;
            report.push_str(&format!(
                "s3://{}/{},{},migrated,{rows},{},\n",
                o.bucket,
                o.object.key,
                o.object.etag,
                crate::review::csv_field(&if nulls.is_empty() {
                    String::new()
                } else {
                    format!("setNull:{}", nulls.join("|"))
                })
            ));
            self.with_state(|st| {
                if let Some(t) = st.tables.get_mut(&key) {
                    t.migrated
                        .insert(o.object.key.clone(), o.object.etag.clone());
                }
            });
            self.update_record(id, |x| {
                if let Some(st) = x.record.stats.as_mut() {
                    st.migrated += 1;
                    st.pending -= 1;
                }
            });
        }
        // The object migration report is written once, when the migration ends.
        let (manifest, manifest_sum) = self
            .put_manifested(
                &m,
                m.migration_report.prefix.as_deref(),
                "object-migration",
                report,
            )
            .await?;
        self.update_record(id, |x| {
            let r = &mut x.record.migration_report;
            r.key = Some(manifest);
            r.checksum = Some(manifest_sum);
        });
        if let Some(e) = failure {
            return Err(e);
        }
        tracing::info!(migration_id = id, rows = rows_total, at = %now(), "migrated");
        if !self.cancel_requested(id) {
            self.set_state(id, State::Succeeded);
        }
        Ok(())
    }

    /// Converts, writes and commits one object; returns its rows.
    #[allow(clippy::too_many_arguments)]
    async fn migrate_object(
        &self,
        handle: &CatalogHandle,
        ident: &TableIdent,
        table: &iceberg::table::Table,
        target: &arrow_schema::SchemaRef,
        o: &SourceObject,
        plan: &TablePlan,
        id: &str,
    ) -> Fallible<u64> {
        let batches = self.convert_object(o, plan, target).await?;
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        if rows == 0 {
            return Ok(0);
        }
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        let written = ops_core::write::write_files(table, stream)
            .await
            .map_err(s)?;
        ops_core::ops::append::AppendBuilder::new(handle, ident.clone())
            .add_written(written)
            .with_properties(HashMap::from([
                ("s3tables.migration-id".to_string(), id.to_string()),
                (
                    "s3tables.source-object".to_string(),
                    format!("s3://{}/{}", o.bucket, o.object.key),
                ),
            ]))
            .await
            .map_err(s)?;
        Ok(rows)
    }

    /// Reads one Parquet object and gives its rows the destination schema: partition columns
    /// from the partition values, `setNull` columns null, others cast.
    async fn convert_object(
        &self,
        o: &SourceObject,
        plan: &TablePlan,
        target: &arrow_schema::SchemaRef,
    ) -> Fallible<Vec<RecordBatch>> {
        let bytes = read_object(&self.aws, o).await.map_err(s)?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .map_err(s)?
            .build()
            .map_err(s)?;
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.map_err(s)?;
            let n = batch.num_rows();
            let mut arrays: Vec<ArrayRef> = Vec::new();
            for (col, field) in plan.columns.iter().zip(target.fields()) {
                let ty: &DataType = field.data_type();
                let array = if col.set_null {
                    new_null_array(ty, n)
                } else if col.partition {
                    let v = o
                        .partition
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(&col.name))
                        .map(|(_, v)| v.clone());
                    let strings: ArrayRef = Arc::new(StringArray::from(vec![v; n]));
                    strict_cast(&strings, ty, &col.name)?
                } else {
                    let idx = batch
                        .schema()
                        .fields()
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(&col.name));
                    match idx {
                        Some(i) => strict_cast(batch.column(i), ty, &col.name)?,
                        None => new_null_array(ty, n),
                    }
                };
                arrays.push(array);
            }
            out.push(RecordBatch::try_new(target.clone(), arrays).map_err(s)?);
        }
        Ok(out)
    }
}

/// Casts a column to its destination type, failing on a value the type cannot hold (pyarrow's
/// safe cast; arrow's `safe: true` would turn it into a null, silently losing it): the object
/// then fails and is listed in the objectMigrationReport, as the service does.
fn strict_cast(array: &ArrayRef, ty: &DataType, column: &str) -> Fallible<ArrayRef> {
    let options = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(array, ty, &options)
        .map_err(|e| format!("column {column}: a value cannot be cast to {ty}: {e}"))
}

/// CRC-64/NVME (reflected polynomial 0x9A6C9329AC4BC9B5, init and xorout all ones), as S3's
/// `checksumCRC64NVME`: Base64 of the big-endian value.
pub(crate) fn crc64nvme_base64(data: &[u8]) -> String {
    use base64::Engine;
    const POLY: u64 = 0x9A6C_9329_AC4B_C9B5;
    let mut crc = u64::MAX;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    base64::engine::general_purpose::STANDARD.encode((!crc).to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_destination_cannot_hold_fails_the_cast() {
        let strings: ArrayRef = Arc::new(StringArray::from(vec![Some("12"), Some("abc")]));
        let err = strict_cast(&strings, &DataType::Int32, "code").err();
        assert!(
            err.as_deref().is_some_and(|e| e.contains("column code")),
            "{err:?}"
        );
        let wide: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1, i64::MAX]));
        assert!(strict_cast(&wide, &DataType::Int32, "n").is_err());
        let ok: ArrayRef = Arc::new(StringArray::from(vec![Some("12"), None]));
        assert!(strict_cast(&ok, &DataType::Int32, "n").is_ok());
    }

    #[test]
    fn crc64nvme_matches_the_check_value() {
        use base64::Engine;
        // The CRC-64/NVME check value of "123456789" is 0xAE8B14860A799888.
        let expected = base64::engine::general_purpose::STANDARD
            .encode(0xAE8B_1486_0A79_9888u64.to_be_bytes());
        assert_eq!(crc64nvme_base64(b"123456789"), expected);
    }
}
