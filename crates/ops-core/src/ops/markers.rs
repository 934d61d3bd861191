//! The table properties that tell maintenance to keep off a table, and the marker functions a
//! migration calls: what ops-core writes and reads itself, while the maintenance operations that
//! honour them (compaction, snapshot expiry, orphan cleanup) live in the `ops-maintenance` crate.
//!
//! - **`gc.enabled=false`** ([`GC_ENABLED`], set by `migrate-data --copy-mode reference`, as
//!   Spark's `snapshot` procedure does): the table may share files with another table, so no
//!   file is deleted — Java's "deleting files may corrupt other tables".
//! - **A running migration** (the [`MIGRATION_JOB_PROPERTY`] marker): its resume relies on the
//!   batch tags in the destination's history and its uncommitted outputs wait as files under the
//!   table location, so maintenance refuses unless forced. A job sets its marker before its first
//!   write ([`mark_running_marker`]) and replaces it with a completion record when its last batch
//!   lands ([`complete_running_marker`]).

use std::collections::HashMap;

use iceberg::TableIdent;
use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};

use crate::commit::TableChange;
use crate::{CatalogHandle, Result};

/// Prefix of the table properties that mark unfinished migration jobs writing to the table:
/// one key per job, `iceberg-ops.migration.running-job.<job id>`, valued with the time the job
/// started (RFC 3339). A job sets its key before its first write and removes it when it
/// completes (see [`mark_running`] and [`clear_running`]). One key per job rather than one key
/// holding a list: two jobs writing to one table each set and remove their own key, so no
/// read-modify-write of a shared value can be lost to a catalog that applies property updates
/// blindly (REST).
pub const MIGRATION_JOB_PROPERTY: &str = "iceberg-ops.migration.running-job";

/// The marker key of `job_id` (see [`MIGRATION_JOB_PROPERTY`]).
pub fn running_job_key(job_id: &str) -> String {
    format!("{MIGRATION_JOB_PROPERTY}.{job_id}")
}

/// Prefix of the table properties recording completed migration jobs:
/// `iceberg-ops.migration.completed-job.<job id>`, valued with the time the job completed (RFC
/// 3339), set in the same commit that removes the job's running marker. The positive record is
/// what lets a repeated commit of the job's outputs tell a completed job (report it, commit
/// nothing) from an abandoned one (refuse) after every snapshot of the job was expired; a
/// missing marker alone says neither. Only the newest [`COMPLETED_JOBS_KEPT`] are kept, so the
/// metadata does not grow with every job a table ever received.
pub const MIGRATION_COMPLETED_PROPERTY: &str = "iceberg-ops.migration.completed-job";

/// How many completion records a table keeps (see [`MIGRATION_COMPLETED_PROPERTY`]).
pub const COMPLETED_JOBS_KEPT: usize = 32;

/// The completion record key of `job_id` (see [`MIGRATION_COMPLETED_PROPERTY`]).
pub fn completed_job_key(job_id: &str) -> String {
    format!("{MIGRATION_COMPLETED_PROPERTY}.{job_id}")
}

/// When `job_id` completed on this table, if its completion record is there.
pub fn completed_at<'a>(metadata: &'a TableMetadata, job_id: &str) -> Option<&'a str> {
    metadata
        .properties()
        .get(&completed_job_key(job_id))
        .map(String::as_str)
}

/// Java's `gc.enabled`.
pub const GC_ENABLED: &str = "gc.enabled";

/// The update that marks `metadata`'s table as a destination of the unfinished `job_id`, or
/// `None` when it already is.
pub fn mark_running(metadata: &TableMetadata, job_id: &str) -> Option<TableUpdate> {
    let key = running_job_key(job_id);
    (!metadata.properties().contains_key(&key)).then(|| TableUpdate::SetProperties {
        updates: HashMap::from([(key, chrono::Utc::now().to_rfc3339())]),
    })
}

/// The update that removes `job_id`'s marker, or `None` when the table carries no marker of
/// that job (other jobs' markers are left alone).
pub fn clear_running(metadata: &TableMetadata, job_id: &str) -> Option<TableUpdate> {
    let key = running_job_key(job_id);
    metadata
        .properties()
        .contains_key(&key)
        .then(|| TableUpdate::RemoveProperties {
            removals: vec![key],
        })
}

/// The updates that record `job_id` as completed: its running marker removed, its completion
/// record set, and the oldest records beyond [`COMPLETED_JOBS_KEPT`] removed. Empty when the
/// record is there and the marker is not (a repeated completion).
pub fn complete_running(metadata: &TableMetadata, job_id: &str) -> Vec<TableUpdate> {
    let props = metadata.properties();
    let running = running_job_key(job_id);
    let done = completed_job_key(job_id);
    let mut removals = Vec::new();
    if props.contains_key(&running) {
        removals.push(running);
    }
    let mut updates = Vec::new();
    if !props.contains_key(&done) {
        // The other records, newest first (RFC 3339 UTC times sort as text); this one takes
        // the place of the oldest kept.
        let prefix = format!("{MIGRATION_COMPLETED_PROPERTY}.");
        let mut others: Vec<(&String, &String)> = props
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .collect();
        others.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        removals.extend(
            others
                .into_iter()
                .skip(COMPLETED_JOBS_KEPT.saturating_sub(1))
                .map(|(k, _)| k.clone()),
        );
        updates.push(TableUpdate::SetProperties {
            updates: HashMap::from([(done, chrono::Utc::now().to_rfc3339())]),
        });
    }
    if !removals.is_empty() {
        updates.insert(0, TableUpdate::RemoveProperties { removals });
    }
    updates
}

/// A commit that marks the table as a destination of the unfinished `job_id`; returns the
/// table, unchanged when the marker was already there (a resumed job).
pub async fn mark_running_marker(
    handle: &CatalogHandle,
    ident: &TableIdent,
    job_id: &str,
) -> Result<Table> {
    marker_commit(handle, ident, |md| mark_running(md, job_id)).await
}

/// A commit that removes `job_id`'s marker (the job completed, or an operator abandons it).
pub async fn clear_running_marker(
    handle: &CatalogHandle,
    ident: &TableIdent,
    job_id: &str,
) -> Result<Table> {
    marker_commit(handle, ident, |md| clear_running(md, job_id)).await
}

/// A commit that records `job_id` as completed (see [`complete_running`]): the job's last
/// batch landed. An abandoned job's marker is removed with [`clear_running_marker`] instead,
/// which records nothing.
pub async fn complete_running_marker(
    handle: &CatalogHandle,
    ident: &TableIdent,
    job_id: &str,
) -> Result<Table> {
    marker_commit(handle, ident, |md| complete_running(md, job_id)).await
}

async fn marker_commit<U>(
    handle: &CatalogHandle,
    ident: &TableIdent,
    update: impl Fn(&TableMetadata) -> U,
) -> Result<Table>
where
    U: IntoIterator<Item = TableUpdate>,
{
    crate::commit::commit_metadata_change(handle, ident, |md| {
        let updates: Vec<TableUpdate> = update(md).into_iter().collect();
        Ok((!updates.is_empty()).then(|| TableChange {
            requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
            updates,
            ..Default::default()
        }))
    })
    .await
}

/// The unfinished migration jobs writing to the table, as (job id, when it started), sorted.
pub fn running_migrations(metadata: &TableMetadata) -> Vec<(&str, &str)> {
    let prefix = format!("{MIGRATION_JOB_PROPERTY}.");
    let mut jobs: Vec<(&str, &str)> = metadata
        .properties()
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(&prefix)
                .filter(|job| !job.trim().is_empty())
                .map(|job| (job, v.as_str()))
        })
        .collect();
    jobs.sort();
    jobs
}

/// Whether the table's files may be deleted: `gc.enabled` read as Java's
/// `PropertyUtil.propertyAsBoolean(props, "gc.enabled", true)` does — absent is true, and a value
/// is true only when it is `true` in any case (`Boolean.parseBoolean`), so a value a user meant
/// as "no" (`no`, `0`, `off`) never lets a delete through.
pub fn gc_enabled(metadata: &TableMetadata) -> bool {
    metadata
        .properties()
        .get(GC_ENABLED)
        .is_none_or(|v| v.eq_ignore_ascii_case("true"))
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
        assert!(running_migrations(&clean).is_empty());
        assert!(mark_running(&clean, "job-1").is_some());
        assert!(clear_running(&clean, "job-1").is_none());
        let key1 = running_job_key("job-1");
        let key2 = running_job_key("job-2");
        let marked = md(&[(&key1, "2026-12-02T08:00:00+00:00")]);
        assert_eq!(
            running_migrations(&marked),
            vec![("job-1", "2026-12-02T08:00:00+00:00")]
        );
        assert!(mark_running(&marked, "job-1").is_none());
        assert!(clear_running(&marked, "job-2").is_none());
        assert!(matches!(
            clear_running(&marked, "job-1"),
            Some(TableUpdate::RemoveProperties { removals }) if removals == vec![key1.clone()]
        ));
        // A second job gets its own key; clearing one leaves the other.
        assert!(matches!(
            mark_running(&marked, "job-2"),
            Some(TableUpdate::SetProperties { updates }) if updates.contains_key(&key2)
        ));
        let both = md(&[(&key1, "t1"), (&key2, "t2")]);
        assert_eq!(
            running_migrations(&both),
            vec![("job-1", "t1"), ("job-2", "t2")]
        );
    }

    #[test]
    fn completion_replaces_the_marker_and_keeps_the_newest_records() {
        let key1 = running_job_key("job-1");
        let marked = md(&[(&key1, "2026-12-02T08:00:00+00:00")]);
        let updates = complete_running(&marked, "job-1");
        assert!(
            matches!(&updates[..], [
                TableUpdate::RemoveProperties { removals },
                TableUpdate::SetProperties { updates },
            ] if removals == &vec![key1.clone()] && updates.contains_key(&completed_job_key("job-1"))),
            "{updates:?}"
        );
        // Completed already, marker gone: nothing to do.
        let done = md(&[(&completed_job_key("job-1"), "2026-12-02T09:00:00+00:00")]);
        assert!(complete_running(&done, "job-1").is_empty());
        assert_eq!(
            completed_at(&done, "job-1"),
            Some("2026-12-02T09:00:00+00:00")
        );
        assert_eq!(completed_at(&done, "job-2"), None);
        // A table holding the full count of records: the oldest one makes room.
        let keys: Vec<(String, String)> = (0..COMPLETED_JOBS_KEPT)
            .map(|i| {
                (
                    completed_job_key(&format!("old-{i:02}")),
                    format!("2026-11-{:02}T00:00:00+00:00", i + 1),
                )
            })
            .collect();
        let full = md(&keys
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>());
        let updates = complete_running(&full, "new");
        assert!(
            matches!(&updates[..], [
                TableUpdate::RemoveProperties { removals },
                TableUpdate::SetProperties { .. },
            ] if removals == &vec![completed_job_key("old-00")]),
            "{updates:?}"
        );
    }

    #[test]
    fn gc_enabled_defaults_to_true() {
        assert!(gc_enabled(&md(&[])));
        assert!(gc_enabled(&md(&[(GC_ENABLED, "true")])));
        assert!(gc_enabled(&md(&[(GC_ENABLED, "TRUE")])));
        assert!(!gc_enabled(&md(&[(GC_ENABLED, "FALSE")])));
        // Java's Boolean.parseBoolean: anything but "true" disables deletes.
        for v in ["no", "0", "off", " true", ""] {
            assert!(!gc_enabled(&md(&[(GC_ENABLED, v)])), "{v:?}");
        }
    }
}
