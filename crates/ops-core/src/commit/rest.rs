//! REST catalogs: POST the commit to the table endpoint; the server applies it atomically.
//!
//! The request goes through the catalog's own client ([`crate::catalog::rest`]), so a commit
//! is sent with the trust, credentials, signing, timeouts and retries its reads had. A commit
//! is sent again only after the connection was refused or the catalog answered 429 or 503; one
//! whose connection failed after it was sent is reported as unknown, never sent twice.
//!
//! A 503 is not proof that nothing happened: a gateway whose upstream connection broke after
//! forwarding answers 503 for a commit the catalog applied, and the repeat is then refused with
//! 409 because the first attempt moved the table. So when the final answer to a repeated
//! commit is not a success (and for 500/502/504), the table is reloaded: if the snapshots the
//! commit adds are there it landed and is reported as done; otherwise its outcome is unknown
//! ([`Error::CommitStateUnknown`]) and the files it wrote are kept — never deleted as a refused
//! commit's, and never committed again by a conflict retry (Java turns such a 409 into
//! `CommitStateUnknownException`, apache/iceberg#12818).
//!
//! A format-version-1 table's tags and branches are kept in its metadata's `refs`, as Java and
//! PyIceberg write them; a server built on iceberg-rust 0.10.1 (rustberg 0.3 is one) reads v1
//! metadata without them and so writes every next version without them, and its expiry would
//! then delete their data. So a commit to a v1 table first compares the refs of the metadata
//! file the server names with those it returned, and refuses (naming them) when the server
//! left some out; and after a commit, the refs the server's base file held that the change did
//! not remove must still be there — restored with one more commit if they are not, or reported.

use std::collections::{BTreeMap, HashSet};

use iceberg::spec::{FormatVersion, SnapshotReference, SnapshotRetention, TableMetadata};
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};
use iceberg_catalog_rest::{CommitTableRequest, CommitTableResponse};
use reqwest::{Method, StatusCode};

use super::TableChange;
use super::metadata_json::refs_of;
use crate::catalog::CatalogHandle;
use crate::catalog::rest::{RestClient, added_snapshots, server_message};
use crate::{Error, Result};

pub(super) async fn commit(
    client: &RestClient,
    handle: &CatalogHandle,
    base: &Table,
    change: TableChange,
) -> Result<Table> {
    let ident = base.identifier().clone();
    let adds = added_snapshots(&change.updates);
    let v1 = base.metadata().format_version() == FormatVersion::V1;
    if v1 {
        refuse_refs_the_server_left_out(client, base).await?;
    }
    let ours = RefChanges::of(&change.updates);
    let request = CommitTableRequest {
        identifier: Some(ident.clone()),
        requirements: change.requirements,
        updates: change.updates,
    };
    let reply = client
        .call_json(Method::POST, &client.table_url(&ident), &request)
        .await?;
    let status = reply.status;
    if status.is_success() {
        let loaded: CommitTableResponse = client.parse(&reply)?;
        let table = Table::builder()
            .identifier(ident)
            .metadata(loaded.metadata)
            .metadata_location(loaded.metadata_location)
            .file_io(base.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?;
        if v1 {
            return keep_refs(client, base, &ours, table).await;
        }
        return Ok(table);
    }
    let server = server_message(&reply.body);
    let maybe_applied = reply.retried
        || matches!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR
                | StatusCode::BAD_GATEWAY
                | StatusCode::GATEWAY_TIMEOUT
        );
    if maybe_applied {
        let why = if reply.retried {
            format!(
                "it was sent again after a failed attempt that may have been applied, and the \
                 repeat was answered {status}: {server}"
            )
        } else {
            format!("the catalog answered {status}: {server}")
        };
        return match landed(handle, &ident, &adds).await {
            Some(table) => {
                tracing::info!(table = %ident, %status, "the commit was answered with an error but it landed");
                Ok(table)
            }
            None => Err(Error::CommitStateUnknown {
                table: ident.to_string(),
                detail: format!("{}: {why}", client.catalog()),
            }),
        };
    }
    match status {
        StatusCode::CONFLICT => Err(Error::CommitConflict {
            table: ident.to_string(),
            detail: format!("the REST catalog refused a stale commit: {server}"),
        }),
        s => Err(Error::Catalog {
            catalog: client.catalog().to_string(),
            message: format!("commit to {ident} answered {s}: {server}"),
        }),
    }
}

/// The table as it is now, if it holds every snapshot in `adds` (so the commit landed); `None`
/// when it does not, when the change adds no snapshot to look for, or when it cannot be loaded.
async fn landed(
    handle: &CatalogHandle,
    ident: &iceberg::TableIdent,
    adds: &[i64],
) -> Option<Table> {
    if adds.is_empty() {
        return None;
    }
    match handle.catalog().load_table(ident).await {
        Ok(t)
            if adds
                .iter()
                .all(|id| t.metadata().snapshot_by_id(*id).is_some()) =>
        {
            Some(t)
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(table = %ident, error = %e, "could not reload the table to see whether the commit landed");
            None
        }
    }
}

/// Names and snapshot ids of `refs`, for messages: `audit (tag at 123), b1 (branch at 456)`.
fn describe(refs: &BTreeMap<String, SnapshotReference>) -> String {
    refs.iter()
        .map(|(name, r)| {
            let kind = match r.retention {
                SnapshotRetention::Tag { .. } => "tag",
                SnapshotRetention::Branch { .. } => "branch",
            };
            format!("{name} ({kind} at snapshot {})", r.snapshot_id)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The refs of the metadata file at `location`, or `None` (logged) when it cannot be read.
async fn refs_on_file(base: &Table, location: &str) -> Option<BTreeMap<String, SnapshotReference>> {
    let read = TableMetadata::read_from(base.file_io(), location)
        .await
        .map_err(Error::from)
        .and_then(|md| refs_of(&md));
    match read {
        Ok(refs) => Some(refs.into_iter().collect()),
        Err(e) => {
            tracing::warn!(
                table = %base.identifier(), %location, error = %e,
                "could not read the metadata file to check that the server keeps the table's refs"
            );
            None
        }
    }
}

/// Refuses a commit to `base` (a v1 table) when its metadata file holds refs the server did
/// not return: the server cannot read them, so its next metadata would drop them.
async fn refuse_refs_the_server_left_out(client: &RestClient, base: &Table) -> Result<()> {
    let Some(location) = base.metadata_location() else {
        return Ok(());
    };
    let Some(on_file) = refs_on_file(base, location).await else {
        return Ok(());
    };
    let served = refs_of(base.metadata())?;
    let missing: BTreeMap<String, SnapshotReference> = on_file
        .into_iter()
        .filter(|(name, r)| served.get(name) != Some(r))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "{} is a format-version 1 table whose metadata ({location}) holds the refs {}, but the \
         REST catalog {} returned it without them: the server does not read the refs of v1 \
         metadata, so any commit through it would drop them (and a later snapshot expiry would \
         delete the data only they reach). Nothing was committed. Commit through a catalog \
         that keeps v1 refs (the table's SQL or Glue catalog, or a server built on Java or \
         PyIceberg), or upgrade the server",
        base.identifier(),
        describe(&missing),
        client.catalog(),
    )))
}

/// What a change does to refs itself: refs it sets or removes, snapshots it removes.
struct RefChanges {
    touched: HashSet<String>,
    removed_snapshots: HashSet<i64>,
}

impl RefChanges {
    fn of(updates: &[TableUpdate]) -> Self {
        let mut out = RefChanges {
            touched: HashSet::new(),
            removed_snapshots: HashSet::new(),
        };
        for u in updates {
            match u {
                TableUpdate::SetSnapshotRef { ref_name, .. }
                | TableUpdate::RemoveSnapshotRef { ref_name } => {
                    out.touched.insert(ref_name.clone());
                }
                TableUpdate::RemoveSnapshots { snapshot_ids } => {
                    out.removed_snapshots.extend(snapshot_ids);
                }
                _ => {}
            }
        }
        out
    }
}

/// The refs of `before` (the metadata the server applied the change to) that `after` lacks or
/// moved, though the change neither set nor removed them nor removed their snapshot.
fn dropped_refs(
    before: &BTreeMap<String, SnapshotReference>,
    after: &BTreeMap<String, SnapshotReference>,
    ours: &RefChanges,
) -> BTreeMap<String, SnapshotReference> {
    before
        .iter()
        .filter(|(name, r)| {
            !ours.touched.contains(*name)
                && !ours.removed_snapshots.contains(&r.snapshot_id)
                && after.get(*name) != Some(*r)
        })
        .map(|(n, r)| (n.clone(), r.clone()))
        .collect()
}

/// After a commit to a v1 table landed as `committed`: every ref of the metadata the server
/// applied it to (the last entry of the new metadata's log) that the change left alone must
/// still be there. A dropped one is set again with one more commit; if the server drops it
/// again, the error names each ref and its snapshot.
async fn keep_refs(
    client: &RestClient,
    base: &Table,
    ours: &RefChanges,
    committed: Table,
) -> Result<Table> {
    let Some(previous) = committed
        .metadata()
        .metadata_log()
        .last()
        .map(|l| l.metadata_file.clone())
    else {
        return Ok(committed);
    };
    let Some(before) = refs_on_file(base, &previous).await else {
        return Ok(committed);
    };
    let after: BTreeMap<_, _> = refs_of(committed.metadata())?.into_iter().collect();
    let dropped = dropped_refs(&before, &after, ours);
    if dropped.is_empty() {
        return Ok(committed);
    }
    let ident = committed.identifier().clone();
    tracing::warn!(table = %ident, refs = %describe(&dropped), "the REST catalog dropped refs of a v1 table; setting them again");
    // Only refs whose snapshot the table still has can be set again.
    let restorable: Vec<(&String, &SnapshotReference)> = dropped
        .iter()
        .filter(|(_, r)| committed.metadata().snapshot_by_id(r.snapshot_id).is_some())
        .collect();
    let mut requirements = vec![TableRequirement::UuidMatch {
        uuid: committed.metadata().uuid(),
    }];
    let mut updates = Vec::new();
    for (name, r) in &restorable {
        requirements.push(TableRequirement::RefSnapshotIdMatch {
            r#ref: (*name).clone(),
            snapshot_id: after.get(*name).map(|a| a.snapshot_id),
        });
        updates.push(TableUpdate::SetSnapshotRef {
            ref_name: (*name).clone(),
            reference: (*r).clone(),
        });
    }
    let mut restored = committed.clone();
    if !updates.is_empty() {
        let request = CommitTableRequest {
            identifier: Some(ident.clone()),
            requirements,
            updates,
        };
        let reply = client
            .call_json(Method::POST, &client.table_url(&ident), &request)
            .await?;
        if reply.status.is_success() {
            let loaded: CommitTableResponse = client.parse(&reply)?;
            restored = Table::builder()
                .identifier(ident.clone())
                .metadata(loaded.metadata)
                .metadata_location(loaded.metadata_location)
                .file_io(base.file_io().clone())
                .runtime(iceberg::Runtime::try_current()?)
                .build()?;
        }
    }
    let now: BTreeMap<_, _> = refs_of(restored.metadata())?.into_iter().collect();
    let still: BTreeMap<String, SnapshotReference> = dropped
        .into_iter()
        .filter(|(name, r)| now.get(name) != Some(r))
        .collect();
    if still.is_empty() {
        tracing::info!(table = %ident, "the dropped refs were set again");
        return Ok(restored);
    }
    Err(Error::Catalog {
        catalog: client.catalog().to_string(),
        message: format!(
            "the commit to {ident} landed, but the server dropped the refs {} of this format-version \
             1 table and did not keep them when they were set again: it does not keep v1 refs. \
             Recreate them through a catalog that keeps v1 refs before any snapshot expiry, which \
             would otherwise delete the data only they reach",
            describe(&still)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(id: i64) -> SnapshotReference {
        SnapshotReference::new(
            id,
            SnapshotRetention::Tag {
                max_ref_age_ms: None,
            },
        )
    }

    fn branch(id: i64) -> SnapshotReference {
        SnapshotReference::new(id, SnapshotRetention::branch(None, None, None))
    }

    /// A ref the change left alone must survive; refs it set or removed, and refs of snapshots
    /// it expired, may change.
    #[test]
    fn only_refs_the_change_left_alone_must_survive() {
        let before = BTreeMap::from([
            ("main".to_string(), branch(3)),
            ("audit".to_string(), tag(1)),
            ("old".to_string(), tag(0)),
            ("gone".to_string(), tag(2)),
            ("b".to_string(), branch(2)),
        ]);
        let after = BTreeMap::from([("main".to_string(), branch(4))]);
        let ours = RefChanges::of(&[
            TableUpdate::SetSnapshotRef {
                ref_name: "main".to_string(),
                reference: branch(4),
            },
            TableUpdate::RemoveSnapshotRef {
                ref_name: "gone".to_string(),
            },
            TableUpdate::RemoveSnapshots {
                snapshot_ids: vec![0],
            },
        ]);
        let dropped = dropped_refs(&before, &after, &ours);
        assert_eq!(
            dropped.keys().collect::<Vec<_>>(),
            vec!["audit", "b"],
            "{dropped:?}"
        );
        assert_eq!(
            describe(&dropped),
            "audit (tag at snapshot 1), b (branch at snapshot 2)"
        );
        // A moved ref counts as dropped: the server applied the change to `before` (another
        // writer's moves are in it already), and the change did not move it.
        let moved = BTreeMap::from([
            ("main".to_string(), branch(4)),
            ("audit".to_string(), tag(1)),
            ("b".to_string(), branch(3)),
        ]);
        assert_eq!(
            dropped_refs(&before, &moved, &ours)
                .keys()
                .collect::<Vec<_>>(),
            vec!["b"]
        );
    }
}
