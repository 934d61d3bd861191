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

use iceberg::table::Table;
use iceberg_catalog_rest::{CommitTableRequest, CommitTableResponse};
use reqwest::{Method, StatusCode};

use super::TableChange;
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
        return Ok(Table::builder()
            .identifier(ident)
            .metadata(loaded.metadata)
            .metadata_location(loaded.metadata_location)
            .file_io(base.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?);
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
