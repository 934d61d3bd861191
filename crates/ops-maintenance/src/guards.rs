//! What every maintenance operation checks before it touches a table, and how it deletes the
//! files it made garbage.
//!
//! - **S3 Tables** maintains its tables itself (compaction, snapshot management, unreferenced
//!   file removal) and restricts object access in table buckets: refused, naming the table's
//!   maintenance configuration.
//! - **`gc.enabled=false`** (see [`ops_core::ops::markers::gc_enabled`]): no file is deleted.
//!   Expiry may still drop metadata when asked to keep the files.
//! - **A running migration** (see [`ops_core::ops::markers::MIGRATION_JOB_PROPERTY`]):
//!   maintenance refuses unless forced.

use iceberg::TableIdent;
use iceberg::spec::TableMetadata;
use ops_core::ops::markers::{MIGRATION_JOB_PROPERTY, running_migrations};
use ops_core::{CatalogHandle, CatalogKind, Error, Result};

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
            ops_core::commit::aws_sdk_config(settings, settings.iceberg_property("endpoint_url"))
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

/// Refuses a table an unfinished migration is writing to, unless `force` (`Some(true)`);
/// `None` for an action that no flag may force past the marker.
pub(crate) fn refuse_running_migration(
    ident: &TableIdent,
    metadata: &TableMetadata,
    force: Option<bool>,
    action: &str,
) -> Result<()> {
    let jobs = running_migrations(metadata);
    if jobs.is_empty() || force == Some(true) {
        return Ok(());
    }
    let listed: Vec<String> = jobs
        .iter()
        .map(|(job, started)| format!("'{job}' (started {started})"))
        .collect();
    Err(Error::InvalidInput(format!(
        "{ident} is the destination of unfinished migration job(s) {} (table properties \
         {MIGRATION_JOB_PROPERTY}.<job id>); {action} now could break a resume (it finds landed \
         batches by their tags in the snapshot history) or delete files waiting to be \
         committed. Finish or resume the job first (the same `migrate-data` command with its \
         --checkpoint, or `migrate-data commit` for a plan). For a job that is abandoned (one \
         run without --checkpoint cannot resume once its process is gone), `iceberg-ops table \
         abandon-migration {ident} --job {}` removes its marker{}",
        listed.join(", "),
        match jobs.as_slice() {
            [(job, _)] => job,
            _ => "<job id>",
        },
        if force.is_some() {
            " (or pass --force)"
        } else {
            ""
        }
    )))
}

/// The refusal for deleting files of a `gc.enabled=false` table.
pub(crate) fn gc_disabled_error(ident: &TableIdent, action: &str, keep_files_hint: bool) -> Error {
    let hint = if keep_files_hint {
        " Pass --keep-files to expire the snapshots from the metadata only."
    } else {
        ""
    };
    Error::InvalidInput(format!(
        "{ident} has gc.enabled=false: it may share files with another table (a \
         `migrate-data --copy-mode reference` copy, the source of an `import snapshot`, or the \
         Hive backup an `import migrate` keeps), and deleting files may corrupt other tables, \
         so {action} deletes nothing.{hint} If the table owns all its files, set \
         gc.enabled=true first (for a migrated table, `import migrate --drop-backup` drops \
         the backup and does so)"
    ))
}

#[cfg(test)]
mod tests {
    use ops_core::ops::markers::running_job_key;

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
    fn a_running_migration_refuses_unless_forced_and_names_every_job() {
        let clean = md(&[]);
        let key1 = running_job_key("job-1");
        let key2 = running_job_key("job-2");
        let both = md(&[(&key1, "t1"), (&key2, "t2")]);
        let ident = TableIdent::from_strs(["a", "t"]).unwrap_or_else(|e| panic!("{e}"));
        let err = refuse_running_migration(&ident, &both, Some(false), "expiring snapshots");
        assert!(
            format!("{err:?}").contains("'job-1' (started t1), 'job-2'"),
            "{err:?}"
        );
        assert!(refuse_running_migration(&ident, &both, Some(true), "x").is_ok());
        assert!(refuse_running_migration(&ident, &clean, None, "x").is_ok());
        // Orphan cleanup has no override: its --force is about the age threshold only.
        let err = refuse_running_migration(&ident, &both, None, "removing orphans");
        assert!(!format!("{err:?}").contains("--force"), "{err:?}");
    }
}
