//! [`S3TablesClient`]: the migration operations (and GetTable, GetTableMetadataLocation) over
//! rest-json with SigV4 (signing name `s3tables`), typed errors, retries for 429 and 5xx with
//! exponential backoff, and ListTableMigrations paging that follows `nextToken` through empty
//! pages.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::*;
use crate::sign::Signer;
use crate::{Error, Result};

/// Retry policy for throttling (429) and server errors (5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, at least 1.
    pub max_attempts: u32,
    /// Delay before the first retry; doubles each retry.
    pub base_delay: Duration,
    /// Longest delay between attempts.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// The S3 Tables endpoint for a region.
pub fn default_endpoint(region: &str) -> String {
    format!("https://s3tables.{region}.amazonaws.com")
}

/// Client for the S3 Tables table-migration API.
#[derive(Debug, Clone)]
pub struct S3TablesClient {
    http: reqwest::Client,
    endpoint: String,
    signer: Signer,
    retry: RetryPolicy,
}

/// One operation's route, from the service model.
struct Route {
    name: &'static str,
    method: &'static str,
    success: u16,
}

const START: Route = Route {
    name: "StartTableMigration",
    method: "POST",
    success: 202,
};
const GET: Route = Route {
    name: "GetTableMigration",
    method: "GET",
    success: 200,
};
const LIST: Route = Route {
    name: "ListTableMigrations",
    method: "GET",
    success: 200,
};
const UPDATE: Route = Route {
    name: "UpdateTableMigration",
    method: "POST",
    success: 200,
};
const SYNC: Route = Route {
    name: "SyncTableMigration",
    method: "POST",
    success: 202,
};
const COMPLETE: Route = Route {
    name: "CompleteTableMigration",
    method: "POST",
    success: 204,
};
const GET_TABLE: Route = Route {
    name: "GetTable",
    method: "GET",
    success: 200,
};
const GET_METADATA_LOCATION: Route = Route {
    name: "GetTableMetadataLocation",
    method: "GET",
    success: 200,
};

/// How a table is named in GetTable: by ARN, or by bucket, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableRef {
    /// `tableArn`.
    Arn(String),
    /// `tableBucketARN`, `namespace`, `name`.
    Name {
        /// Table bucket ARN.
        table_bucket_arn: String,
        /// Namespace.
        namespace: String,
        /// Table name.
        name: String,
    },
}

impl S3TablesClient {
    /// A client from the standard AWS chain; `endpoint` overrides the regional endpoint (for the
    /// emulator), `region` the chain's region.
    pub async fn from_env(endpoint: Option<String>, region: Option<String>) -> Result<Self> {
        let signer = Signer::from_env(region, "s3tables").await?;
        let endpoint = endpoint.unwrap_or_else(|| default_endpoint(signer.region()));
        Ok(Self::new(endpoint, signer))
    }

    /// A client for `endpoint` signing with `signer`.
    pub fn new(endpoint: impl Into<String>, signer: Signer) -> Self {
        S3TablesClient {
            http: reqwest::Client::new(),
            endpoint: endpoint.into().trim_end_matches('/').to_string(),
            signer,
            retry: RetryPolicy::default(),
        }
    }

    /// Replaces the retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The signer (its credentials and region serve other services too).
    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// StartTableMigration (`POST /start-table-migration`, 202).
    pub async fn start_table_migration(
        &self,
        request: &StartTableMigrationRequest,
    ) -> Result<StartTableMigrationResponse> {
        self.json(&START, "/start-table-migration", &[], Some(request))
            .await
    }

    /// GetTableMigration (`GET /get-table-migration`, 200) by migration ID or table ARN.
    pub async fn get_table_migration(
        &self,
        migration_id: Option<&str>,
        table_arn: Option<&str>,
    ) -> Result<GetTableMigrationResponse> {
        let mut q = Vec::new();
        push(&mut q, "migrationId", migration_id);
        push(&mut q, "tableARN", table_arn);
        self.json::<(), _>(&GET, "/get-table-migration", &q, None)
            .await
    }

    /// One page of ListTableMigrations (`GET /list-table-migrations`, 200).
    pub async fn list_table_migrations(
        &self,
        request: &ListTableMigrationsRequest,
    ) -> Result<ListTableMigrationsResponse> {
        let mut q = Vec::new();
        push(
            &mut q,
            "tableBucketARN",
            request.table_bucket_arn.as_deref(),
        );
        push(&mut q, "namespace", request.namespace.as_deref());
        push(&mut q, "name", request.name.as_deref());
        push(&mut q, "tableARN", request.table_arn.as_deref());
        push(&mut q, "state", request.state.map(|s| s.as_str()));
        let valid = request.has_valid_plan.map(|b| b.to_string());
        push(&mut q, "hasValidPlan", valid.as_deref());
        let max = request.max_results.map(|n| n.to_string());
        push(&mut q, "maxResults", max.as_deref());
        push(&mut q, "nextToken", request.next_token.as_deref());
        self.json::<(), _>(&LIST, "/list-table-migrations", &q, None)
            .await
    }

    /// Every page of ListTableMigrations: follows `nextToken` until a response has none, also
    /// through pages that are empty but carry a token.
    pub async fn list_all_table_migrations(
        &self,
        request: &ListTableMigrationsRequest,
    ) -> Result<Vec<MigrationSummary>> {
        let mut request = request.clone();
        let mut all = Vec::new();
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.list_table_migrations(&request).await?;
            all.extend(page.migrations);
            match page.next_token {
                Some(token) => {
                    if !seen.insert(token.clone()) {
                        return Err(Error::Unexpected {
                            operation: LIST.name,
                            status: 200,
                            body: format!("nextToken '{token}' repeated; stopping to avoid a loop"),
                        });
                    }
                    request.next_token = Some(token);
                }
                None => return Ok(all),
            }
        }
    }

    /// UpdateTableMigration (`POST /update-table-migration`, 200).
    pub async fn update_table_migration(
        &self,
        request: &UpdateTableMigrationRequest,
    ) -> Result<UpdateTableMigrationResponse> {
        let mut q = Vec::new();
        push(&mut q, "tableARN", request.table_arn.as_deref());
        push(&mut q, "migrationId", request.migration_id.as_deref());
        self.json(&UPDATE, "/update-table-migration", &q, Some(request))
            .await
    }

    /// SyncTableMigration (`POST /sync-table-migration`, 202).
    pub async fn sync_table_migration(
        &self,
        request: &SyncTableMigrationRequest,
    ) -> Result<SyncTableMigrationResponse> {
        self.json(&SYNC, "/sync-table-migration", &[], Some(request))
            .await
    }

    /// CompleteTableMigration (`POST /complete-table-migration?tableARN=`, 204, empty body).
    pub async fn complete_table_migration(&self, table_arn: &str) -> Result<()> {
        let q = vec![("tableARN", table_arn.to_string())];
        self.send(&COMPLETE, "/complete-table-migration", &q, None)
            .await
            .map(|_| ())
    }

    /// GetTable (`GET /get-table`, 200).
    pub async fn get_table(&self, table: &TableRef) -> Result<GetTableResponse> {
        let q = match table {
            TableRef::Arn(arn) => vec![("tableArn", arn.clone())],
            TableRef::Name {
                table_bucket_arn,
                namespace,
                name,
            } => vec![
                ("tableBucketARN", table_bucket_arn.clone()),
                ("namespace", namespace.clone()),
                ("name", name.clone()),
            ],
        };
        self.json::<(), _>(&GET_TABLE, "/get-table", &q, None).await
    }

    /// GetTableMetadataLocation (`GET /tables/{tableBucketARN}/{namespace}/{name}/metadata-location`).
    pub async fn get_table_metadata_location(
        &self,
        table_bucket_arn: &str,
        namespace: &str,
        name: &str,
    ) -> Result<GetTableMetadataLocationResponse> {
        let path = format!(
            "/tables/{}/{}/{}/metadata-location",
            encode(table_bucket_arn),
            encode(namespace),
            encode(name)
        );
        self.json::<(), _>(&GET_METADATA_LOCATION, &path, &[], None)
            .await
    }

    async fn json<B: Serialize, T: DeserializeOwned>(
        &self,
        route: &Route,
        path: &str,
        query: &[(&'static str, String)],
        body: Option<&B>,
    ) -> Result<T> {
        let body = match body {
            Some(b) => Some(serde_json::to_vec(b).map_err(|e| Error::Validation {
                message: format!("{}: cannot encode request: {e}", route.name),
            })?),
            None => None,
        };
        let bytes = self.send(route, path, query, body).await?;
        serde_json::from_slice(&bytes).map_err(|source| Error::Decode {
            operation: route.name,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            source,
        })
    }

    async fn send(
        &self,
        route: &Route,
        path: &str,
        query: &[(&'static str, String)],
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let mut url = format!("{}{}", self.endpoint, path);
        if !query.is_empty() {
            let qs: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{k}={}", encode(v)))
                .collect();
            url.push('?');
            url.push_str(&qs.join("&"));
        }
        let body = body.unwrap_or_default();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let outcome = self.attempt(route, &url, &body).await;
            let retryable = match &outcome {
                Ok((status, _)) => *status == 429 || *status >= 500,
                Err(Error::Transport { source, .. }) => source.is_connect() || source.is_timeout(),
                Err(_) => false,
            };
            if retryable && attempt < self.retry.max_attempts.max(1) {
                let delay = self.retry.delay(attempt - 1);
                tracing::debug!(operation = route.name, attempt, ?delay, "retrying");
                tokio::time::sleep(delay).await;
                continue;
            }
            let (status, headers_type, bytes) = match outcome {
                Ok((status, (t, b))) => (status, t, b),
                Err(e) => return Err(e),
            };
            if status == route.success {
                return Ok(bytes);
            }
            return Err(service_error(
                route.name,
                status,
                headers_type,
                &bytes,
                attempt,
            ));
        }
    }

    async fn attempt(
        &self,
        route: &Route,
        url: &str,
        body: &[u8],
    ) -> Result<(u16, (Option<String>, Vec<u8>))> {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| (h.to_string(), u.port()))
                    .map(|(h, p)| p.map(|p| format!("{h}:{p}")).unwrap_or(h))
            })
            .ok_or_else(|| Error::Config(format!("invalid endpoint URL '{url}'")))?;
        let mut headers: Vec<(&str, &str)> = vec![("host", &host)];
        if !body.is_empty() {
            headers.push(("content-type", "application/json"));
        }
        let signed = self.signer.sign(route.method, url, &headers, body).await?;
        let method = reqwest::Method::from_bytes(route.method.as_bytes())
            .map_err(|e| Error::Config(format!("method {}: {e}", route.method)))?;
        let mut req = self.http.request(method, url);
        for (k, v) in headers.iter().filter(|(k, _)| *k != "host") {
            req = req.header(*k, *v);
        }
        for (k, v) in &signed {
            req = req.header(k, v);
        }
        if !body.is_empty() {
            req = req.body(body.to_vec());
        }
        let transport = |source| Error::Transport {
            operation: route.name,
            endpoint: self.endpoint.clone(),
            source,
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let error_type = resp
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await.map_err(transport)?.to_vec();
        Ok((status, (error_type, bytes)))
    }
}

fn push(q: &mut Vec<(&'static str, String)>, key: &'static str, value: Option<&str>) {
    if let Some(v) = value {
        q.push((key, v.to_string()));
    }
}

/// Percent-encodes everything but the RFC 3986 unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn service_error(
    operation: &'static str,
    status: u16,
    header_type: Option<String>,
    body: &[u8],
    attempts: u32,
) -> Error {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| json.get(*k).and_then(|v| v.as_str()))
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let error_type = header_type
        .or_else(|| {
            ["__type", "code", "Code"]
                .iter()
                .find_map(|k| json.get(*k).and_then(|v| v.as_str()).map(str::to_string))
        })
        .unwrap_or_default();
    // `x-amzn-errortype` may carry `Name:namespace-uri` and `__type` `namespace#Name`.
    let name = error_type
        .split(':')
        .next()
        .unwrap_or_default()
        .rsplit('#')
        .next()
        .unwrap_or_default()
        .to_string();
    match status {
        409 => Error::Conflict { operation, message },
        400 if name.contains("Validation") => Error::Validation { message },
        400 => Error::BadRequest { operation, message },
        404 => Error::NotFound { operation, message },
        403 if name.contains("Forbidden") => Error::Forbidden { operation, message },
        403 => Error::AccessDenied { operation, message },
        429 => Error::TooManyRequests {
            operation,
            attempts,
            message,
        },
        s if s >= 500 => Error::Internal {
            operation,
            status,
            attempts,
            message,
        },
        _ => Error::Unexpected {
            operation,
            status,
            body: String::from_utf8_lossy(body).into_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use aws_credential_types::Credentials;
    use serde_json::json;

    use super::*;
    use crate::http_server::{Request, Response, serve};

    type Log = Arc<Mutex<Vec<Request>>>;

    /// Serves scripted responses in order (the last repeats) and records every request.
    async fn server(script: Vec<Response>) -> anyhow::Result<(S3TablesClient, Log)> {
        let log: Log = Arc::default();
        let script = Arc::new(Mutex::new(script));
        let seen = log.clone();
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |req| {
            let seen = seen.clone();
            let script = script.clone();
            async move {
                let mut s = script.lock().unwrap_or_else(|e| e.into_inner());
                let resp = if s.len() > 1 {
                    s.remove(0)
                } else {
                    s[0].clone()
                };
                seen.lock().unwrap_or_else(|e| e.into_inner()).push(req);
                resp
            }
        })
        .await?;
        let signer = Signer::new(
            Credentials::for_tests(),
            "us-east-1".to_string(),
            "s3tables",
        );
        let client =
            S3TablesClient::new(format!("http://{addr}"), signer).with_retry(RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
            });
        Ok((client, log))
    }

    fn requests(log: &Log) -> Vec<Request> {
        log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn start_request() -> StartTableMigrationRequest {
        StartTableMigrationRequest {
            role_arn: "arn:aws:iam::123456789012:role/mig".into(),
            destination_table: DestinationTable {
                table_bucket_arn: "arn:aws:s3tables:us-east-1:123456789012:bucket/b".into(),
                namespace: "ns".into(),
                name: "t".into(),
                encryption_configuration: None,
                storage_class_configuration: None,
                tags: None,
                properties: None,
                schema: None,
                iceberg_sort_order: None,
            },
            source_type: MigrationSourceType::GlueTable,
            source: SourceConfiguration {
                glue_table: Some(GlueTableSource {
                    catalog_id: "123456789012".into(),
                    database_name: "db".into(),
                    table_name: "src".into(),
                }),
            },
            data_migration: None,
            review_migration_plan: Some(true),
            migration_output: MigrationOutputConfiguration {
                bucket: "arn:aws:s3:::reports".into(),
                prefixes: None,
            },
        }
    }

    #[tokio::test]
    async fn start_posts_the_model_route_signed_for_s3tables() -> anyhow::Result<()> {
        let (client, log) = server(vec![Response::json(
            202,
            &json!({"migrationId": "m-1", "state": "new"}),
        )])
        .await?;
        let resp = client.start_table_migration(&start_request()).await?;
        assert_eq!(resp.migration_id, "m-1");
        assert_eq!(resp.state, MigrationState::New);
        let reqs = requests(&log);
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].path, "/start-table-migration");
        let auth = reqs[0].header("authorization").unwrap_or_default();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 "), "{auth}");
        assert!(auth.contains("/us-east-1/s3tables/aws4_request"), "{auth}");
        let body: serde_json::Value = serde_json::from_slice(&reqs[0].body)?;
        assert_eq!(body["reviewMigrationPlan"], true);
        assert_eq!(body["sourceType"], "glueTable");
        Ok(())
    }

    #[tokio::test]
    async fn a_success_code_other_than_the_models_is_an_error() -> anyhow::Result<()> {
        let (client, _) = server(vec![Response::json(
            200,
            &json!({"migrationId": "m-1", "state": "new"}),
        )])
        .await?;
        let err = client.start_table_migration(&start_request()).await;
        assert!(
            matches!(err, Err(Error::Unexpected { status: 200, .. })),
            "{err:?}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn update_sends_ids_in_the_query_and_lowercase_state() -> anyhow::Result<()> {
        let (client, log) = server(vec![Response::json(
            200,
            &json!({"migrationId": "m-1", "state": "queued"}),
        )])
        .await?;
        let resp = client
            .update_table_migration(&UpdateTableMigrationRequest {
                table_arn: None,
                migration_id: Some("m-1".into()),
                requested_state: MigrationRequestedState::Queued,
                update_description: None,
            })
            .await?;
        assert_eq!(resp.state, MigrationState::Queued);
        let reqs = requests(&log);
        assert_eq!(reqs[0].path, "/update-table-migration");
        assert_eq!(reqs[0].query("migrationId"), Some("m-1"));
        let body: serde_json::Value = serde_json::from_slice(&reqs[0].body)?;
        assert_eq!(body, json!({"requestedState": "queued"}));
        Ok(())
    }

    #[tokio::test]
    async fn complete_is_204_with_the_arn_in_the_query() -> anyhow::Result<()> {
        let (client, log) = server(vec![Response::empty(204)]).await?;
        let arn = "arn:aws:s3tables:us-east-1:1:bucket/b/table/abc";
        client.complete_table_migration(arn).await?;
        let reqs = requests(&log);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].path, "/complete-table-migration");
        assert_eq!(reqs[0].query("tableARN"), Some(arn));
        Ok(())
    }

    #[tokio::test]
    async fn metadata_location_puts_the_bucket_arn_in_one_path_segment() -> anyhow::Result<()> {
        let (client, log) = server(vec![Response::json(
            200,
            &json!({"versionToken": "v", "warehouseLocation": "s3://w"}),
        )])
        .await?;
        let arn = "arn:aws:s3tables:us-east-1:1:bucket/b";
        let resp = client.get_table_metadata_location(arn, "ns", "t").await?;
        assert_eq!(resp.warehouse_location, "s3://w");
        let reqs = requests(&log);
        assert_eq!(
            reqs[0].segments,
            vec!["tables", arn, "ns", "t", "metadata-location"]
        );
        Ok(())
    }

    #[tokio::test]
    async fn list_pages_through_empty_pages_until_no_token() -> anyhow::Result<()> {
        let summary = |id: &str| {
            json!({"migrationId": id, "tableBucketARN": "arn:b", "namespace": "ns", "name": "t",
                   "type": "start", "state": "succeeded", "hasValidPlan": true,
                   "createdAt": "2026-11-04T00:00:00Z", "stateUpdatedAt": "2026-11-04T00:00:00Z"})
        };
        let (client, log) = server(vec![
            Response::json(
                200,
                &json!({"migrations": [summary("a")], "nextToken": "t1"}),
            ),
            Response::json(200, &json!({"migrations": [], "nextToken": "t2"})),
            Response::json(200, &json!({"migrations": [], "nextToken": "t3"})),
            Response::json(200, &json!({"migrations": [summary("b")]})),
        ])
        .await?;
        let all = client
            .list_all_table_migrations(&ListTableMigrationsRequest {
                table_bucket_arn: Some("arn:b".into()),
                state: Some(MigrationState::PendingReview),
                ..Default::default()
            })
            .await?;
        let ids: Vec<_> = all.iter().map(|m| m.migration_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let reqs = requests(&log);
        assert_eq!(reqs.len(), 4);
        assert_eq!(reqs[0].query("nextToken"), None);
        assert_eq!(reqs[0].query("state"), Some("pendingReview"));
        assert_eq!(reqs[2].query("nextToken"), Some("t2"));
        assert_eq!(reqs[3].query("nextToken"), Some("t3"));
        Ok(())
    }

    #[tokio::test]
    async fn throttling_and_server_errors_are_retried() -> anyhow::Result<()> {
        let (client, log) = server(vec![
            Response::error(429, "TooManyRequestsException", "slow down"),
            Response::error(503, "InternalServerErrorException", "busy"),
            Response::json(200, &json!({"migrations": []})),
        ])
        .await?;
        client
            .list_table_migrations(&ListTableMigrationsRequest::default())
            .await?;
        assert_eq!(requests(&log).len(), 3);

        let (client, log) = server(vec![Response::error(
            500,
            "InternalServerErrorException",
            "down",
        )])
        .await?;
        let err = client.get_table_migration(Some("m"), None).await;
        assert!(
            matches!(err, Err(Error::Internal { attempts: 3, .. })),
            "{err:?}"
        );
        assert_eq!(requests(&log).len(), 3);
        Ok(())
    }

    #[tokio::test]
    async fn service_errors_are_typed_and_not_retried() -> anyhow::Result<()> {
        type Check = fn(&Error) -> bool;
        let cases: Vec<(Response, Check)> = vec![
            (Response::error(409, "ConflictException", "exists"), |e| {
                matches!(e, Error::Conflict { .. })
            }),
            (Response::error(400, "BadRequestException", "bad"), |e| {
                matches!(e, Error::BadRequest { .. })
            }),
            (
                Response::error(
                    400,
                    "ValidationException",
                    "Member must satisfy enum value set: [cancelled, queued]",
                ),
                |e| matches!(e, Error::Validation { .. }),
            ),
            (Response::error(404, "NotFoundException", "gone"), |e| {
                matches!(e, Error::NotFound { .. })
            }),
            (Response::error(403, "AccessDeniedException", "no"), |e| {
                matches!(e, Error::AccessDenied { .. })
            }),
            (Response::error(403, "ForbiddenException", "no"), |e| {
                matches!(e, Error::Forbidden { .. })
            }),
        ];
        for (resp, check) in cases {
            let (client, log) = server(vec![resp]).await?;
            let err = client.get_table_migration(Some("m"), None).await;
            match err {
                Err(e) => assert!(check(&e), "{e:?}"),
                Ok(r) => anyhow::bail!("expected an error, got {r:?}"),
            }
            assert_eq!(requests(&log).len(), 1);
        }
        Ok(())
    }
}
