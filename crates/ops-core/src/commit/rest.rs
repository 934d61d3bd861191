//! REST catalogs: POST the commit to the table endpoint; the server applies it atomically.
//!
//! The request goes through the catalog's own client ([`crate::catalog::rest`]), so a commit
//! is sent with the trust, credentials, signing, timeouts and retries its reads had. A commit
//! is repeated only when the catalog cannot have acted on it (the connection was refused, or it
//! answered 429 or 503); one whose response was lost is reported, never sent twice.

use iceberg::table::Table;
use iceberg_catalog_rest::{CommitTableRequest, CommitTableResponse};
use reqwest::{Method, StatusCode};

use super::TableChange;
use crate::catalog::rest::RestClient;
use crate::{Error, Result};

pub(super) async fn commit(
    client: &RestClient,
    base: &Table,
    change: TableChange,
) -> Result<Table> {
    let ident = base.identifier().clone();
    let request = CommitTableRequest {
        identifier: Some(ident.clone()),
        requirements: change.requirements,
        updates: change.updates,
    };
    let err = |message: String| Error::Catalog {
        catalog: client.catalog().to_string(),
        message,
    };
    let reply = client
        .call_json(Method::POST, &client.table_url(&ident), &request)
        .await?;
    match reply.status {
        s if s.is_success() => {
            let loaded: CommitTableResponse = client.parse(&reply)?;
            Ok(Table::builder()
                .identifier(ident)
                .metadata(loaded.metadata)
                .metadata_location(loaded.metadata_location)
                .file_io(base.file_io().clone())
                .runtime(iceberg::Runtime::try_current()?)
                .build()?)
        }
        StatusCode::CONFLICT => Err(Error::CommitConflict {
            table: ident.to_string(),
            detail: format!(
                "the REST catalog refused a stale commit: {}",
                crate::catalog::rest::server_message(&reply.body)
            ),
        }),
        StatusCode::INTERNAL_SERVER_ERROR
        | StatusCode::BAD_GATEWAY
        | StatusCode::GATEWAY_TIMEOUT => Err(err(format!(
            "commit to {ident} answered {}: its outcome is unknown ({}); reload the table \
                 before trying again",
            reply.status,
            crate::catalog::rest::server_message(&reply.body)
        ))),
        s => Err(err(format!(
            "commit to {ident} answered {s}: {}",
            crate::catalog::rest::server_message(&reply.body)
        ))),
    }
}
