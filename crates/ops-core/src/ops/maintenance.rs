//! What every maintenance operation (snapshot expiry, orphan cleanup) checks before it touches a
//! table, and the marker a running migration leaves on its destination.
//!
//! - **S3 Tables** maintains its tables itself (compaction, snapshot management, unreferenced
//!   file removal) and restricts object access in table buckets: refused, naming the table's
//!   maintenance configuration.
//! - **`gc.enabled=false`** (set by `migrate-data --copy-mode reference`, as Spark's `snapshot`
//!   procedure does): the table may share files with another table, so no file is deleted —
//!   Java's "deleting files may corrupt other tables". Expiry may still drop metadata when asked
//!   to keep the files.
//! - **A running migration** (the [`MIGRATION_JOB_PROPERTY`] marker): its resume relies on the
//!   batch tags in the destination's history and its uncommitted outputs wait as files under the
//!   table location, so maintenance refuses unless forced.

use std::collections::HashMap;

use iceberg::TableIdent;
use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};

use crate::commit::TableChange;
use crate::{CatalogHandle, CatalogKind, Error, Result};

/// Table property naming the migration job that is writing to the table and has not finished.
/// Set in the job's first commit, removed in the commit that completes it (see [`mark_running`]
/// and [`clear_running`]).
pub const MIGRATION_JOB_PROPERTY: &str = "iceberg-ops.migration.running-job";

/// Java's `gc.enabled`.
pub const GC_ENABLED: &str = "gc.enabled";

/// How many deletes run at once.
const DELETE_CONCURRENCY: usize = 8;

/// Deletes `paths`, several at once, after a cleanup decided they are garbage: returns the
/// paths deleted and those that could not be (each logged as `what`), both sorted. A failure
/// is not an error: the commit that made the files garbage has landed, and a later orphan
/// cleanup collects what stayed.
pub(crate) async fn delete_files(
    io: &iceberg::io::FileIO,
    paths: impl IntoIterator<Item = String>,
    what: &'static str,
) -> (Vec<String>, Vec<String>) {
    use futures::StreamExt;
    let results: Vec<(String, bool)> = futures::stream::iter(paths)
        .map(|p| {
            let io = io.clone();
            async move {
                let ok = match io.delete(&p).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(path = %p, error = %e, "could not delete {what}");
                        false
                    }
                };
                (p, ok)
            }
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .collect()
        .await;
    let (mut deleted, mut failed): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for (p, ok) in results {
        if ok { deleted.push(p) } else { failed.push(p) }
    }
    deleted.sort();
    failed.sort();
    (deleted, failed)
}

/// The update that marks `metadata`'s table as the destination of the unfinished `job_id`, or
/// `None` when it already is. Append it to the job's first commit (the same commit as its first
/// batch, so the marker and the first landed data appear atomically).
pub fn mark_running(metadata: &TableMetadata, job_id: &str) -> Option<TableUpdate> {
    (metadata
        .properties()
        .get(MIGRATION_JOB_PROPERTY)
        .map(String::as_str)
        != Some(job_id))
    .then(|| TableUpdate::SetProperties {
        updates: HashMap::from([(MIGRATION_JOB_PROPERTY.to_string(), job_id.to_string())]),
    })
}

/// The update that removes `job_id`'s marker, or `None` when the table carries no marker of
/// that job (another job's marker is left alone). Append it to the commit that completes the job.
pub fn clear_running(metadata: &TableMetadata, job_id: &str) -> Option<TableUpdate> {
    (metadata
        .properties()
        .get(MIGRATION_JOB_PROPERTY)
        .map(String::as_str)
        == Some(job_id))
    .then(|| TableUpdate::RemoveProperties {
        removals: vec![MIGRATION_JOB_PROPERTY.to_string()],
    })
}

/// A standalone commit that removes `job_id`'s marker (for a job that completes without a data
/// commit of its own, or that an operator abandons).
pub async fn clear_running_marker(
    handle: &CatalogHandle,
    ident: &TableIdent,
    job_id: &str,
) -> Result<Table> {
    crate::commit::commit_metadata_change(handle, ident, |md| {
        Ok(clear_running(md, job_id).map(|update| TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates: vec![update],
            ..Default::default()
        }))
    })
    .await
}

/// The unfinished migration job writing to the table, if any.
pub fn running_migration(metadata: &TableMetadata) -> Option<&str> {
    metadata
        .properties()
        .get(MIGRATION_JOB_PROPERTY)
        .map(String::as_str)
        .filter(|j| !j.trim().is_empty())
}

/// Whether the table's files may be deleted (`gc.enabled`, default true as in Java).
pub fn gc_enabled(metadata: &TableMetadata) -> bool {
    metadata
        .properties()
        .get(GC_ENABLED)
        .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
}

/// Refuses maintenance on an S3 Tables catalog, naming the table's maintenance configuration.
pub(crate) async fn refuse_self_maintained(
    handle: &CatalogHandle,
    ident: &TableIdent,
    action: &str,
) -> Result<()> {
    if handle.settings().kind() != CatalogKind::S3Tables {
        return Ok(());
    }
    let settings = handle.settings();
    let arn = settings
        .iceberg_property("table_bucket_arn")
        .unwrap_or("<table-bucket-arn>")
        .to_string();
    let namespace = ident.namespace().join(".");
    let configured = s3tables_maintenance(handle, &arn, &namespace, ident.name()).await;
    Err(Error::InvalidInput(format!(
        "{ident} is an S3 Tables table: S3 Tables runs {action} itself (compaction, snapshot \
         management, unreferenced file removal) and restricts object access in table buckets, \
         so iceberg-ops does not. {configured}Change it with `aws s3tables \
         put-table-maintenance-configuration --table-bucket-arn {arn} --namespace {namespace} \
         --name {}` (see `get-table-maintenance-configuration`)",
        ident.name()
    )))
}

/// The table's maintenance configuration as one sentence, or the command that shows it.
async fn s3tables_maintenance(
    handle: &CatalogHandle,
    arn: &str,
    namespace: &str,
    name: &str,
) -> String {
    let settings = handle.settings();
    let fetched = async {
        let config =
            crate::commit::aws_sdk_config(settings, settings.iceberg_property("endpoint_url"))
                .await?;
        let client = aws_sdk_s3tables::Client::new(&config);
        client
            .get_table_maintenance_configuration()
            .table_bucket_arn(arn)
            .namespace(namespace)
            .name(name)
            .send()
            .await
            .map_err(|e| Error::InvalidInput(format!("{e:?}")))
    }
    .await;
    match fetched {
        Ok(out) => {
            let mut parts: Vec<String> = out
                .configuration()
                .iter()
                .map(|(kind, value)| {
                    let status = value
                        .status()
                        .map_or("unset".to_string(), |s| s.as_str().to_lowercase());
                    let settings = value
                        .settings()
                        .map(|s| format!(" {s:?}"))
                        .unwrap_or_default();
                    format!("{}: {status}{settings}", kind.as_str())
                })
                .collect();
            parts.sort();
            format!("Its maintenance configuration: {}. ", parts.join("; "))
        }
        Err(e) => {
            tracing::debug!(error = %e, "GetTableMaintenanceConfiguration failed");
            format!(
                "Its maintenance configuration: `aws s3tables get-table-maintenance-configuration \
                 --table-bucket-arn {arn} --namespace {namespace} --name {name}`. "
            )
        }
    }
}

/// Refuses a table an unfinished migration is writing to, unless `force`.
pub(crate) fn refuse_running_migration(
    ident: &TableIdent,
    metadata: &TableMetadata,
    force: bool,
    action: &str,
) -> Result<()> {
    match running_migration(metadata) {
        Some(job) if !force => Err(Error::InvalidInput(format!(
            "{ident} is the destination of migration job '{job}', which has not finished \
             (table property {MIGRATION_JOB_PROPERTY}); {action} now could break its resume \
             (batch tags in the snapshot history) or delete its uncommitted files. Finish or \
             resume the job first, or pass --force if the job is abandoned"
        ))),
        _ => Ok(()),
    }
}

/// The refusal for deleting files of a `gc.enabled=false` table.
pub(crate) fn gc_disabled_error(ident: &TableIdent, action: &str, keep_files_hint: bool) -> Error {
    let hint = if keep_files_hint {
        " Pass --keep-files to expire the snapshots from the metadata only."
    } else {
        ""
    };
    Error::InvalidInput(format!(
        "{ident} has gc.enabled=false: it may share files with another table (e.g. a \
         `migrate-data --copy-mode reference` copy), and deleting files may corrupt other \
         tables, so {action} deletes nothing.{hint} If the table owns all its files, set \
         gc.enabled=true first"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(props: &[(&str, &str)]) -> TableMetadata {
        use iceberg::spec::{
            NestedField, PrimitiveType, Schema, SortOrder, TableMetadataBuilder, Type,
            UnboundPartitionSpec,
        };
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        TableMetadataBuilder::new(
            schema,
            UnboundPartitionSpec::builder().build(),
            SortOrder::unsorted_order(),
            "file:///tmp/t".to_string(),
            iceberg::spec::FormatVersion::V2,
            props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .and_then(|b| b.build())
        .unwrap_or_else(|e| panic!("{e}"))
        .metadata
    }

    #[test]
    fn marker_is_set_once_and_cleared_only_by_its_job() {
        let clean = md(&[]);
        assert!(running_migration(&clean).is_none());
        assert!(mark_running(&clean, "job-1").is_some());
        assert!(clear_running(&clean, "job-1").is_none());
        let marked = md(&[(MIGRATION_JOB_PROPERTY, "job-1")]);
        assert_eq!(running_migration(&marked), Some("job-1"));
        assert!(mark_running(&marked, "job-1").is_none());
        assert!(clear_running(&marked, "job-2").is_none());
        assert!(matches!(
            clear_running(&marked, "job-1"),
            Some(TableUpdate::RemoveProperties { .. })
        ));
        let ident = TableIdent::from_strs(["a", "t"]).unwrap_or_else(|e| panic!("{e}"));
        let err = refuse_running_migration(&ident, &marked, false, "expiring snapshots");
        assert!(format!("{err:?}").contains("job-1"), "{err:?}");
        assert!(refuse_running_migration(&ident, &marked, true, "x").is_ok());
    }

    #[test]
    fn gc_enabled_defaults_to_true() {
        assert!(gc_enabled(&md(&[])));
        assert!(gc_enabled(&md(&[(GC_ENABLED, "true")])));
        assert!(!gc_enabled(&md(&[(GC_ENABLED, "FALSE")])));
    }
}
