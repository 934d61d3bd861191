//! [`S3TablesClient`]: the migration operations (and GetTable, GetTableMetadataLocation) over
//! rest-json with SigV4 (signing name `s3tables`), typed errors, and ListTableMigrations paging
//! that follows `nextToken` through empty pages.
//!
//! Retries. Throttling (429) and a request that never left (connection refused) are retried
//! for every operation, with exponential backoff, full jitter and the server's `Retry-After`.
//! A 5xx or a lost response is retried as is only for operations that can run twice without
//! harm (Get, List, GetTable, GetTableMetadataLocation, Complete, whose second call the guard
//! recognises). Start, Sync and Update are not idempotent: after such an ambiguous failure the
//! client first looks the migration up by its table (a Start or Sync created after the attempt
//! began, an Update whose state change already happened) and returns what it finds; it resends
//! only when nothing shows the first attempt took effect. So a Start that succeeded behind a
//! 503 yields its migrationId instead of a 409 that loses it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::*;
use crate::sign::Signer;
use crate::{Error, Result};

/// Retry policy for throttling (429), server errors (5xx) and lost connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, at least 1.
    pub max_attempts: u32,
    /// Delay cap of the first retry; doubles each retry (the delay is drawn below the cap).
    pub base_delay: Duration,
    /// Longest backoff between attempts (a server's `Retry-After` is honoured beyond it).
    pub max_delay: Duration,
    /// The most time one operation may spend on its attempts and the waits between them: a
    /// retry whose wait (a `Retry-After` included) would end past it is not made.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(20),
            deadline: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (0-based): "full jitter" as the AWS SDKs do, a
    /// uniform draw below `min(max_delay, base_delay * 2^retry)`, so clients that failed
    /// together do not retry together. A server's `Retry-After` wins as it is (the deadline
    /// bounds it: see [`RetryPolicy::next_wait`]).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after;
        }
        let factor = 1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX);
        let cap = self.base_delay.saturating_mul(factor).min(self.max_delay);
        cap.mul_f64(fastrand::f64())
    }

    /// The wait before the next attempt of an operation that began at `began` after `attempt`
    /// attempts, or `None` when no attempt is left or the wait would end past the deadline.
    pub fn next_wait(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        began: std::time::Instant,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts.max(1) {
            return None;
        }
        let delay = self.delay(attempt.saturating_sub(1), retry_after);
        let ends = began.elapsed().checked_add(delay)?;
        (ends <= self.deadline).then_some(delay)
    }
}

/// Connection settings of the HTTP clients this crate builds (S3 Tables, and S3/Glue for
/// reports and parity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Most time to establish a connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// Most time to wait for any read of a response (a stalled server is a retryable failure,
    /// not a hang).
    pub read_timeout: Duration,
    /// Most time for a whole request, from sending it to the end of the response body (a
    /// server trickling bytes never trips the read timeout).
    pub request_timeout: Duration,
    /// The CA certificates (PEM) to trust, in place of the default roots, as the AWS CLI and
    /// SDKs use `AWS_CA_BUNDLE` or the profile's `ca_bundle`. `None`: the default roots
    /// (webpki's and the platform's, `SSL_CERT_FILE`/`SSL_CERT_DIR` honoured).
    pub ca_bundle: Option<PathBuf>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(300),
            ca_bundle: None,
        }
    }
}

impl HttpSettings {
    /// Defaults, with the CA bundle the AWS CLI would use: `AWS_CA_BUNDLE`, else `ca_bundle`
    /// of the active profile (`AWS_PROFILE`, else `default`) in `AWS_CONFIG_FILE` or
    /// `~/.aws/config` ([`ops_core::http::aws_ca_bundle`]).
    pub fn from_env() -> Self {
        HttpSettings {
            ca_bundle: ops_core::http::aws_ca_bundle(None),
            ..Self::default()
        }
    }
}

/// The one place this crate builds an HTTP client: ops-core's rustls configuration for AWS
/// endpoints ([`ops_core::http::aws_tls`]: exactly `settings.ca_bundle` when set, else the
/// default roots; the workspace's one crypto provider), with connect, read and request
/// timeouts. The trust is the same as that of ops-core's AWS SDK clients and of the
/// credential chain ([`crate::Signer::from_env_trusting`]).
pub fn http_client(settings: &HttpSettings) -> Result<reqwest::Client> {
    if let Some(path) = &settings.ca_bundle {
        // Names the file and the settings that point at it before anything connects.
        load_pem_certs(path)?;
    }
    let tls = ops_core::http::rustls_config(&ops_core::http::aws_tls(
        settings.ca_bundle.as_deref(),
    ))
    .map_err(|e| {
        Error::Config(format!(
            "{e} (set AWS_CA_BUNDLE, the profile's ca_bundle or --ca-bundle to a PEM file of CA \
             certificates)"
        ))
    })?;
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        // A redirect would carry the session token (reqwest drops only `Authorization`) and, on
        // a 307/308, the signed body to wherever it points: a 3xx is an error like any other
        // unexpected status.
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(settings.connect_timeout)
        .read_timeout(settings.read_timeout)
        .timeout(settings.request_timeout)
        .build()
        .map_err(|e| Error::Config(format!("HTTP client: {e}")))
}

/// The certificates of a PEM file; a file without any is an error naming it.
pub(crate) fn load_pem_certs(
    path: &std::path::Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let bad = |e: &dyn std::fmt::Display| {
        Error::Config(format!(
            "CA bundle {}: {e} (set AWS_CA_BUNDLE, the profile's ca_bundle or --ca-bundle to a \
             PEM file of CA certificates)",
            path.display()
        ))
    };
    let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no CERTIFICATE in the file"));
    }
    Ok(certs)
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

/// Whether an operation may simply be sent again after a 5xx or a lost response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Idempotency {
    /// A second call does no harm.
    Idempotent,
    /// A second call may act twice: look first.
    LookFirst,
}

/// One operation's route, from the service model.
struct Route {
    name: &'static str,
    method: &'static str,
    success: u16,
    idempotency: Idempotency,
}

const START: Route = Route {
    name: "StartTableMigration",
    method: "POST",
    success: 202,
    idempotency: Idempotency::LookFirst,
};
const GET: Route = Route {
    name: "GetTableMigration",
    method: "GET",
    success: 200,
    idempotency: Idempotency::Idempotent,
};
const LIST: Route = Route {
    name: "ListTableMigrations",
    method: "GET",
    success: 200,
    idempotency: Idempotency::Idempotent,
};
const UPDATE: Route = Route {
    name: "UpdateTableMigration",
    method: "POST",
    success: 200,
    idempotency: Idempotency::LookFirst,
};
const SYNC: Route = Route {
    name: "SyncTableMigration",
    method: "POST",
    success: 202,
    idempotency: Idempotency::LookFirst,
};
const COMPLETE: Route = Route {
    name: "CompleteTableMigration",
    method: "POST",
    success: 204,
    // A repeated complete answers 409/400, which the guard confirms through GetTable.
    idempotency: Idempotency::Idempotent,
};
const GET_TABLE: Route = Route {
    name: "GetTable",
    method: "GET",
    success: 200,
    idempotency: Idempotency::Idempotent,
};
const GET_METADATA_LOCATION: Route = Route {
    name: "GetTableMetadataLocation",
    method: "GET",
    success: 200,
    idempotency: Idempotency::Idempotent,
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

impl From<&TableRef> for GetTableRequest {
    fn from(t: &TableRef) -> Self {
        match t {
            TableRef::Arn(arn) => GetTableRequest {
                table_arn: Some(arn.clone()),
                ..Default::default()
            },
            TableRef::Name {
                table_bucket_arn,
                namespace,
                name,
            } => GetTableRequest {
                table_bucket_arn: Some(table_bucket_arn.clone()),
                namespace: Some(namespace.clone()),
                name: Some(name.clone()),
                table_arn: None,
            },
        }
    }
}

/// The outcome of one attempt.
enum Attempt {
    /// A response (any status).
    Response {
        status: u16,
        error_type: Option<String>,
        retry_after: Option<Duration>,
        body: Vec<u8>,
    },
    /// No response. `sent` is false when the request provably never reached the server.
    Lost { sent: bool, error: Error },
}

impl S3TablesClient {
    /// A client from the standard AWS chain (credentials through its identity cache); `endpoint`
    /// overrides the regional endpoint (for the emulator), `region` the chain's region.
    /// The CA bundle is the AWS CLI's (`AWS_CA_BUNDLE`, else the profile's `ca_bundle`; see
    /// [`HttpSettings::from_env`]), for the S3 Tables endpoint and the credential chain alike.
    pub async fn from_env(endpoint: Option<String>, region: Option<String>) -> Result<Self> {
        Self::from_env_with(endpoint, region, &HttpSettings::from_env()).await
    }

    /// [`S3TablesClient::from_env`] with explicit connection settings.
    pub async fn from_env_with(
        endpoint: Option<String>,
        region: Option<String>,
        settings: &HttpSettings,
    ) -> Result<Self> {
        let signer =
            Signer::from_env_trusting(region, "s3tables", settings.ca_bundle.as_deref()).await?;
        let endpoint = endpoint.unwrap_or_else(|| default_endpoint(signer.region()));
        Self::with_http(endpoint, signer, settings)
    }

    /// A client for `endpoint` signing with `signer`, with the default [`HttpSettings`].
    pub fn new(endpoint: impl Into<String>, signer: Signer) -> Self {
        let http = http_client(&HttpSettings::default()).unwrap_or_else(|e| {
            // The defaults carry no file to read; only a broken platform store gets here.
            tracing::warn!(error = %e, "falling back to reqwest's default client");
            reqwest::Client::new()
        });
        Self::from_parts(endpoint, signer, http)
    }

    /// A client for `endpoint` signing with `signer` over a client built from `settings`.
    pub fn with_http(
        endpoint: impl Into<String>,
        signer: Signer,
        settings: &HttpSettings,
    ) -> Result<Self> {
        Ok(Self::from_parts(endpoint, signer, http_client(settings)?))
    }

    fn from_parts(endpoint: impl Into<String>, signer: Signer, http: reqwest::Client) -> Self {
        S3TablesClient {
            http,
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

    /// The HTTP client (for S3 and Glue calls with the same trust and timeouts).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// StartTableMigration (`POST /start-table-migration`, 202). The destination's migrations
    /// are listed before the first attempt; after an ambiguous failure they are listed again
    /// and a start of the same source and role that was not there before is returned rather
    /// than started again (an older start, even a recent one, is never taken for this one).
    pub async fn start_table_migration(
        &self,
        request: &StartTableMigrationRequest,
    ) -> Result<StartTableMigrationResponse> {
        let body = encode_body(&START, request)?;
        let before = baseline(self.start_scope_ids(request).await);
        let lookup = async || match &before {
            Some(before) => self.find_start(request, before).await,
            None => Ok(None),
        };
        self.non_idempotent(&START, "/start-table-migration", &[], body, lookup)
            .await
    }

    /// GetTableMigration (`GET /get-table-migration`, 200) by migration ID or table ARN.
    pub async fn get_table_migration(
        &self,
        migration_id: Option<&str>,
        table_arn: Option<&str>,
    ) -> Result<GetTableMigrationResponse> {
        self.get_table_migration_request(&GetTableMigrationRequest {
            migration_id: migration_id.map(str::to_string),
            table_arn: table_arn.map(str::to_string),
        })
        .await
    }

    /// GetTableMigration from a request.
    pub async fn get_table_migration_request(
        &self,
        request: &GetTableMigrationRequest,
    ) -> Result<GetTableMigrationResponse> {
        let mut q = Vec::new();
        push(&mut q, "migrationId", request.migration_id.as_deref());
        push(&mut q, "tableARN", request.table_arn.as_deref());
        let bytes = self.send(&GET, "/get-table-migration", &q, None).await?;
        decode(&GET, &bytes)
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
        push(&mut q, "state", request.state.as_ref().map(|s| s.as_str()));
        let valid = request.has_valid_plan.map(|b| b.to_string());
        push(&mut q, "hasValidPlan", valid.as_deref());
        let max = request.max_results.map(|n| n.to_string());
        push(&mut q, "maxResults", max.as_deref());
        push(&mut q, "nextToken", request.next_token.as_deref());
        let bytes = self.send(&LIST, "/list-table-migrations", &q, None).await?;
        decode(&LIST, &bytes)
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

    /// UpdateTableMigration (`POST /update-table-migration`, 200). After an ambiguous failure
    /// the migration is read first: a state change that already happened is returned rather
    /// than requested again.
    pub async fn update_table_migration(
        &self,
        request: &UpdateTableMigrationRequest,
    ) -> Result<UpdateTableMigrationResponse> {
        let mut q = Vec::new();
        push(&mut q, "tableARN", request.table_arn.as_deref());
        push(&mut q, "migrationId", request.migration_id.as_deref());
        let body = encode_body(&UPDATE, request)?;
        let lookup = async || self.find_update(request).await;
        self.non_idempotent(&UPDATE, "/update-table-migration", &q, body, lookup)
            .await
    }

    /// SyncTableMigration (`POST /sync-table-migration`, 202). The table's migrations are
    /// listed before the first attempt; after an ambiguous failure a sync with this request's
    /// role and report output that was not there before is returned rather than started again
    /// (an earlier sync, even a recent one, is never taken for this one).
    pub async fn sync_table_migration(
        &self,
        request: &SyncTableMigrationRequest,
    ) -> Result<SyncTableMigrationResponse> {
        let body = encode_body(&SYNC, request)?;
        let before = baseline(self.sync_scope_ids(request).await);
        let lookup = async || match &before {
            Some(before) => self.find_sync(request, before).await,
            None => Ok(None),
        };
        self.non_idempotent(&SYNC, "/sync-table-migration", &[], body, lookup)
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
        self.get_table_request(&table.into()).await
    }

    /// GetTable from a request.
    pub async fn get_table_request(&self, request: &GetTableRequest) -> Result<GetTableResponse> {
        let mut q = Vec::new();
        push(
            &mut q,
            "tableBucketARN",
            request.table_bucket_arn.as_deref(),
        );
        push(&mut q, "namespace", request.namespace.as_deref());
        push(&mut q, "name", request.name.as_deref());
        push(&mut q, "tableArn", request.table_arn.as_deref());
        let bytes = self.send(&GET_TABLE, "/get-table", &q, None).await?;
        decode(&GET_TABLE, &bytes)
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
        let bytes = self.send(&GET_METADATA_LOCATION, &path, &[], None).await?;
        decode(&GET_METADATA_LOCATION, &bytes)
    }

    /// The migrations into `request`'s destination, listed before the first attempt so that
    /// a lookup after an ambiguous failure only considers migrations created since.
    async fn start_scope_ids(
        &self,
        request: &StartTableMigrationRequest,
    ) -> Result<std::collections::HashSet<String>> {
        self.scope_ids(&start_scope(request)).await
    }

    /// The migrations of `request`'s table before the first attempt (see
    /// [`Self::start_scope_ids`]).
    async fn sync_scope_ids(
        &self,
        request: &SyncTableMigrationRequest,
    ) -> Result<std::collections::HashSet<String>> {
        self.scope_ids(&sync_scope(request)).await
    }

    async fn scope_ids(
        &self,
        scope: &ListTableMigrationsRequest,
    ) -> Result<std::collections::HashSet<String>> {
        Ok(self
            .list_all_table_migrations(scope)
            .await?
            .into_iter()
            .map(|m| m.migration_id)
            .collect())
    }

    /// A start of `request`'s source into its destination, with its role, that is not in
    /// `before`.
    async fn find_start(
        &self,
        request: &StartTableMigrationRequest,
        before: &std::collections::HashSet<String>,
    ) -> Result<Option<StartTableMigrationResponse>> {
        let found = self
            .find_new(&start_scope(request), &MigrationType::Start, before, |m| {
                m.source == request.source
                    && m.role_arn == request.role_arn
                    && same_output(&request.migration_output, &m.migration_output)
            })
            .await?;
        Ok(found.map(|m| {
            tracing::info!(migration_id = %m.migration_id, "the start had taken effect");
            StartTableMigrationResponse {
                migration_id: m.migration_id,
                state: m.state,
            }
        }))
    }

    /// A sync of `request`'s table, with its role and report bucket, that is not in `before`.
    async fn find_sync(
        &self,
        request: &SyncTableMigrationRequest,
        before: &std::collections::HashSet<String>,
    ) -> Result<Option<SyncTableMigrationResponse>> {
        let found = self
            .find_new(&sync_scope(request), &MigrationType::Sync, before, |m| {
                m.role_arn == request.role_arn
                    && same_output(&request.migration_output, &m.migration_output)
            })
            .await?;
        Ok(found.map(|m| {
            tracing::info!(migration_id = %m.migration_id, "the sync had taken effect");
            SyncTableMigrationResponse {
                migration_id: m.migration_id,
                state: m.state,
            }
        }))
    }

    /// The first migration of `kind` listed in `scope`, not in `before`, that `matches`: the
    /// one lookup behind [`Self::find_start`] and [`Self::find_sync`].
    async fn find_new(
        &self,
        scope: &ListTableMigrationsRequest,
        kind: &MigrationType,
        before: &std::collections::HashSet<String>,
        matches: impl Fn(&GetTableMigrationResponse) -> bool,
    ) -> Result<Option<GetTableMigrationResponse>> {
        for s in self.list_all_table_migrations(scope).await? {
            if &s.r#type != kind || before.contains(&s.migration_id) {
                continue;
            }
            let m = self
                .get_table_migration(Some(&s.migration_id), None)
                .await?;
            if matches(&m) {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    /// The migration, when its state shows the requested change already happened.
    async fn find_update(
        &self,
        request: &UpdateTableMigrationRequest,
    ) -> Result<Option<UpdateTableMigrationResponse>> {
        let m = self
            .get_table_migration(
                request.migration_id.as_deref(),
                request.table_arn.as_deref(),
            )
            .await?;
        use MigrationState as S;
        let done = match request.requested_state {
            MigrationRequestedState::Queued => !matches!(
                m.state,
                S::New | S::Planning | S::PendingReview | S::Unknown(_)
            ),
            MigrationRequestedState::Cancelled => {
                matches!(m.state, S::Cancelling | S::Cancelled)
            }
            MigrationRequestedState::Unknown(_) => false,
        };
        Ok(done.then(|| {
            tracing::info!(migration_id = %m.migration_id, state = %m.state, "the update had taken effect");
            UpdateTableMigrationResponse {
                migration_id: m.migration_id,
                state: m.state,
                table_arn: m.table_arn,
            }
        }))
    }

    /// Sends a non-idempotent operation: 429 and unsent requests are retried; after a 5xx or a
    /// lost response `lookup` decides whether the first attempt took effect, and the request
    /// is sent again only when it did not. A 409 after such a resend is looked up once more
    /// (the first attempt may have landed after the lookup).
    async fn non_idempotent<T: DeserializeOwned>(
        &self,
        route: &Route,
        path: &str,
        query: &[(&'static str, String)],
        body: Vec<u8>,
        lookup: impl AsyncFn() -> Result<Option<T>>,
    ) -> Result<T> {
        let url = self.url(path, query);
        let began = std::time::Instant::now();
        let mut attempt = 0u32;
        let mut ambiguous = false;
        loop {
            attempt += 1;
            let outcome = self.attempt(route, &url, &body).await?;
            let (retry_after, failure) = match outcome {
                Attempt::Response {
                    status,
                    body: bytes,
                    ..
                } if status == route.success => return decode(route, &bytes),
                Attempt::Response {
                    status: 409,
                    error_type,
                    body: bytes,
                    ..
                } if ambiguous => {
                    if let Some(found) = lookup().await? {
                        return Ok(found);
                    }
                    return Err(service_error(route.name, 409, error_type, &bytes, attempt));
                }
                Attempt::Response {
                    status,
                    error_type,
                    retry_after,
                    body: bytes,
                } if status == 429 => (
                    retry_after,
                    service_error(route.name, status, error_type, &bytes, attempt),
                ),
                Attempt::Response {
                    status,
                    error_type,
                    retry_after,
                    body: bytes,
                } if status >= 500 => {
                    ambiguous = true;
                    if let Some(found) = lookup().await? {
                        return Ok(found);
                    }
                    (
                        retry_after,
                        service_error(route.name, status, error_type, &bytes, attempt),
                    )
                }
                Attempt::Response {
                    status,
                    error_type,
                    body: bytes,
                    ..
                } => {
                    return Err(service_error(
                        route.name, status, error_type, &bytes, attempt,
                    ));
                }
                Attempt::Lost { sent: false, error } => (None, error),
                Attempt::Lost { sent: true, error } => {
                    ambiguous = true;
                    if let Some(found) = lookup().await? {
                        return Ok(found);
                    }
                    (None, error)
                }
            };
            let Some(delay) = self.retry.next_wait(attempt, retry_after, began) else {
                return Err(failure);
            };
            tracing::debug!(operation = route.name, attempt, ?delay, error = %failure, "retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// Sends an idempotent operation, retrying 429, 5xx and lost responses.
    async fn send(
        &self,
        route: &Route,
        path: &str,
        query: &[(&'static str, String)],
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        debug_assert!(route.idempotency == Idempotency::Idempotent);
        let url = self.url(path, query);
        let body = body.unwrap_or_default();
        let began = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (retry_after, failure) = match self.attempt(route, &url, &body).await? {
                Attempt::Response {
                    status,
                    body: bytes,
                    ..
                } if status == route.success => return Ok(bytes),
                Attempt::Response {
                    status,
                    error_type,
                    retry_after,
                    body: bytes,
                } if status == 429 || status >= 500 => (
                    retry_after,
                    service_error(route.name, status, error_type, &bytes, attempt),
                ),
                Attempt::Response {
                    status,
                    error_type,
                    body: bytes,
                    ..
                } => {
                    return Err(service_error(
                        route.name, status, error_type, &bytes, attempt,
                    ));
                }
                Attempt::Lost { error, .. } => (None, error),
            };
            let Some(delay) = self.retry.next_wait(attempt, retry_after, began) else {
                return Err(failure);
            };
            tracing::debug!(operation = route.name, attempt, ?delay, error = %failure, "retrying");
            tokio::time::sleep(delay).await;
        }
    }

    fn url(&self, path: &str, query: &[(&'static str, String)]) -> String {
        let mut url = format!("{}{}", self.endpoint, path);
        if !query.is_empty() {
            let qs: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{k}={}", encode(v)))
                .collect();
            url.push('?');
            url.push_str(&qs.join("&"));
        }
        url
    }

    /// One attempt. Local failures (signing, a bad URL) are errors; a transport failure is an
    /// [`Attempt::Lost`].
    async fn attempt(&self, route: &Route, url: &str, body: &[u8]) -> Result<Attempt> {
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
        let transport = |source: reqwest::Error| Error::Transport {
            operation: route.name,
            endpoint: self.endpoint.clone(),
            source,
        };
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                // Only a failure to connect proves the request never reached the server.
                let sent = !(e.is_connect() || e.is_builder());
                return Ok(Attempt::Lost {
                    sent,
                    error: transport(e),
                });
            }
        };
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let error_type = header("x-amzn-errortype");
        let retry_after = header("retry-after").and_then(|v| parse_retry_after(&v));
        match resp.bytes().await {
            Ok(bytes) => Ok(Attempt::Response {
                status,
                error_type,
                retry_after,
                body: bytes.to_vec(),
            }),
            Err(e) => Ok(Attempt::Lost {
                sent: true,
                error: transport(e),
            }),
        }
    }
}

/// The migration ids listed before a non-idempotent call. When they cannot be listed the call
/// still goes out, but an ambiguous failure is then never matched to an existing migration
/// (it could be an older one): the request is resent, and the service's 409 stops a second
/// start or sync of the table.
fn baseline(
    listed: Result<std::collections::HashSet<String>>,
) -> Option<std::collections::HashSet<String>> {
    listed
        .inspect_err(|e| {
            tracing::warn!(error = %e, "cannot list the table's migrations before the call; \
                           an ambiguous failure will not be looked up")
        })
        .ok()
}

/// What a start's lookup lists: the migrations into its destination.
fn start_scope(request: &StartTableMigrationRequest) -> ListTableMigrationsRequest {
    let d = &request.destination_table;
    ListTableMigrationsRequest {
        table_bucket_arn: Some(d.table_bucket_arn.clone()),
        namespace: Some(d.namespace.clone()),
        name: Some(d.name.clone()),
        ..Default::default()
    }
}

/// What a sync's lookup lists: the migrations of its table.
fn sync_scope(request: &SyncTableMigrationRequest) -> ListTableMigrationsRequest {
    ListTableMigrationsRequest {
        table_arn: Some(request.table_arn.clone()),
        ..Default::default()
    }
}

/// Whether a migration's reports go where `request` asked (bucket and each prefix).
fn same_output(request: &MigrationOutputConfiguration, got: &MigrationOutputOverview) -> bool {
    let p = request.prefixes.as_ref();
    request.bucket == got.bucket
        && p.and_then(|p| p.table_compatibility_report.as_deref())
            == got.table_compatibility_report.prefix.as_deref()
        && p.and_then(|p| p.object_compatibility_report.as_deref())
            == got.object_compatibility_report.prefix.as_deref()
        && p.and_then(|p| p.object_migration_report.as_deref())
            == got.object_migration_report.prefix.as_deref()
}

/// `Retry-After`: delay-seconds or an HTTP date.
fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

fn encode_body<B: Serialize>(route: &Route, body: &B) -> Result<Vec<u8>> {
    serde_json::to_vec(body).map_err(|e| Error::Validation {
        message: format!("{}: cannot encode request: {e}", route.name),
    })
}

fn decode<T: DeserializeOwned>(route: &Route, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| Error::Decode {
        operation: route.name,
        body: String::from_utf8_lossy(bytes).into_owned(),
        source,
    })
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
        403 if name.contains("Signature")
            || name.contains("UnrecognizedClient")
            || name.contains("MissingAuthenticationToken") =>
        {
            Error::Signature {
                operation,
                error_type: name,
                message,
            }
        }
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
                deadline: Duration::from_secs(60),
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
        // (The destination's migrations are listed first, for a lookup after a failure.)
        let reqs: Vec<Request> = requests(&log)
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
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

    /// A server answering by path; the handler also gets how many requests to that path came
    /// before. Records every request.
    async fn routed(
        handler: impl Fn(&Request, usize) -> Response + Send + Sync + 'static,
    ) -> anyhow::Result<(S3TablesClient, Log)> {
        let log: Log = Arc::default();
        let seen = log.clone();
        let handler = Arc::new(handler);
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |req| {
            let mut log = seen.lock().unwrap_or_else(|e| e.into_inner());
            let n = log.iter().filter(|r| r.path == req.path).count();
            let resp = handler(&req, n);
            log.push(req);
            async move { resp }
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let client =
            S3TablesClient::new(format!("http://{addr}"), signer).with_retry(RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
                deadline: Duration::from_secs(60),
            });
        Ok((client, log))
    }

    fn posts(log: &Log, path: &str) -> usize {
        requests(log)
            .iter()
            .filter(|r| r.method == "POST" && r.path == path)
            .count()
    }

    fn record(id: &str, state: &str, kind: &str) -> serde_json::Value {
        json!({"migrationId": id, "tableBucketARN": "arn:aws:s3tables:us-east-1:123456789012:bucket/b",
               "namespace": "ns", "name": "t", "type": kind, "state": state,
               "tableARN": "arn:aws:s3tables:us-east-1:123456789012:bucket/b/table/t",
               "roleARN": "arn:aws:iam::123456789012:role/mig", "reviewMigrationPlan": true,
               "createdAt": chrono::Utc::now().to_rfc3339(), "stateUpdatedAt": chrono::Utc::now().to_rfc3339(),
               "sourceType": "glueTable",
               "source": {"glueTable": {"catalogId": "123456789012", "databaseName": "db", "tableName": "src"}},
               "dataMigration": {"maintenanceSettings": {}, "migrationPolicies": {}},
               "migrationOutput": {"bucket": "arn:aws:s3:::reports", "tableCompatibilityReport": {},
                   "objectCompatibilityReport": {}, "objectMigrationReport": {}}})
    }

    fn summaries(records: &[serde_json::Value]) -> serde_json::Value {
        let keys = [
            "migrationId",
            "tableBucketARN",
            "namespace",
            "tableARN",
            "name",
            "type",
            "state",
            "createdAt",
            "stateUpdatedAt",
        ];
        let list: Vec<serde_json::Value> = records
            .iter()
            .map(|r| {
                keys.iter()
                    .map(|k| (k.to_string(), r[*k].clone()))
                    .collect()
            })
            .collect();
        json!({ "migrations": list })
    }

    #[tokio::test]
    async fn a_start_that_took_effect_behind_a_server_error_is_found_not_resent()
    -> anyhow::Result<()> {
        let (client, log) = routed(|req, n| match req.path.as_str() {
            "/start-table-migration" => {
                Response::error(503, "InternalServerErrorException", "busy")
            }
            "/list-table-migrations" if n == 0 => Response::json(200, &json!({"migrations": []})),
            "/list-table-migrations" => {
                Response::json(200, &summaries(&[record("m-7", "planning", "start")]))
            }
            _ => Response::json(200, &record("m-7", "planning", "start")),
        })
        .await?;
        let r = client.start_table_migration(&start_request()).await?;
        assert_eq!(r.migration_id, "m-7");
        assert_eq!(r.state, MigrationState::Planning);
        assert_eq!(posts(&log, "/start-table-migration"), 1, "not sent again");
        Ok(())
    }

    #[tokio::test]
    async fn a_start_that_did_not_take_effect_is_resent_and_a_late_conflict_looked_up()
    -> anyhow::Result<()> {
        // Nothing was created: the start is sent again.
        let (client, log) = routed(|req, n| match (req.path.as_str(), n) {
            ("/start-table-migration", 0) => {
                Response::error(500, "InternalServerErrorException", "oops")
            }
            ("/start-table-migration", _) => {
                Response::json(202, &json!({"migrationId": "m-8", "state": "new"}))
            }
            _ => Response::json(200, &json!({"migrations": []})),
        })
        .await?;
        assert_eq!(
            client
                .start_table_migration(&start_request())
                .await?
                .migration_id,
            "m-8"
        );
        assert_eq!(posts(&log, "/start-table-migration"), 2);

        // The first attempt landed after the lookup: the resend conflicts, and a second lookup
        // finds it.
        let (client, log) = routed(|req, n| match (req.path.as_str(), n) {
            ("/start-table-migration", 0) => {
                Response::error(502, "InternalServerErrorException", "gateway")
            }
            ("/start-table-migration", _) => {
                Response::error(409, "ConflictException", "table exists")
            }
            ("/list-table-migrations", 0 | 1) => Response::json(200, &json!({"migrations": []})),
            ("/list-table-migrations", _) => {
                Response::json(200, &summaries(&[record("m-9", "new", "start")]))
            }
            _ => Response::json(200, &record("m-9", "new", "start")),
        })
        .await?;
        assert_eq!(
            client
                .start_table_migration(&start_request())
                .await?
                .migration_id,
            "m-9"
        );
        assert_eq!(posts(&log, "/start-table-migration"), 2);
        Ok(())
    }

    #[tokio::test]
    async fn update_and_sync_after_an_ambiguous_failure_are_looked_up_first() -> anyhow::Result<()>
    {
        let (client, log) = routed(|req, n| match req.path.as_str() {
            "/update-table-migration" | "/sync-table-migration" => {
                Response::error(500, "InternalServerErrorException", "lost")
            }
            // Before the sync, only the start; after it, the sync too.
            "/list-table-migrations" if n == 0 => {
                Response::json(200, &summaries(&[record("m-1", "succeeded", "start")]))
            }
            "/list-table-migrations" => Response::json(
                200,
                &summaries(&[
                    record("s-1", "planning", "sync"),
                    record("m-1", "succeeded", "start"),
                ]),
            ),
            _ => match req.query("migrationId") {
                Some("s-1") => Response::json(200, &record("s-1", "planning", "sync")),
                _ => Response::json(200, &record("m-1", "queued", "start")),
            },
        })
        .await?;
        let r = client
            .update_table_migration(&UpdateTableMigrationRequest {
                table_arn: None,
                migration_id: Some("m-1".into()),
                requested_state: MigrationRequestedState::Queued,
                update_description: None,
            })
            .await?;
        assert_eq!(r.state, MigrationState::Queued);
        assert_eq!(posts(&log, "/update-table-migration"), 1);
        let r = client
            .sync_table_migration(&SyncTableMigrationRequest {
                role_arn: "arn:aws:iam::123456789012:role/mig".into(),
                table_arn: "arn:aws:s3tables:us-east-1:123456789012:bucket/b/table/t".into(),
                review_migration_plan: Some(true),
                migration_output: MigrationOutputConfiguration {
                    bucket: "arn:aws:s3:::reports".into(),
                    prefixes: None,
                },
            })
            .await?;
        assert_eq!(r.migration_id, "s-1");
        assert_eq!(posts(&log, "/sync-table-migration"), 1);
        Ok(())
    }

    fn sync_request() -> SyncTableMigrationRequest {
        SyncTableMigrationRequest {
            role_arn: "arn:aws:iam::123456789012:role/mig".into(),
            table_arn: "arn:aws:s3tables:us-east-1:123456789012:bucket/b/table/t".into(),
            review_migration_plan: Some(true),
            migration_output: MigrationOutputConfiguration {
                bucket: "arn:aws:s3:::reports".into(),
                prefixes: None,
            },
        }
    }

    /// A migration that existed before the call is never taken for it, however recent and
    /// whatever its state: a second sync whose response is lost is sent again, not answered
    /// with the first (already succeeded) sync; a start restarted after a failed one is not
    /// given the failed id.
    #[tokio::test]
    async fn an_older_migration_is_not_taken_for_a_lost_start_or_sync() -> anyhow::Result<()> {
        let (client, log) = routed(|req, n| match (req.path.as_str(), n) {
            ("/sync-table-migration", 0) => {
                Response::error(500, "InternalServerErrorException", "lost")
            }
            ("/sync-table-migration", _) => {
                Response::json(202, &json!({"migrationId": "s-new", "state": "new"}))
            }
            ("/list-table-migrations", _) => Response::json(
                200,
                &summaries(&[
                    record("s-old", "succeeded", "sync"),
                    record("m-1", "succeeded", "start"),
                ]),
            ),
            _ => Response::json(200, &record("s-old", "succeeded", "sync")),
        })
        .await?;
        let r = client.sync_table_migration(&sync_request()).await?;
        assert_eq!(r.migration_id, "s-new");
        assert_eq!(posts(&log, "/sync-table-migration"), 2);

        let (client, log) = routed(|req, n| match (req.path.as_str(), n) {
            ("/start-table-migration", 0) => {
                Response::error(503, "InternalServerErrorException", "busy")
            }
            ("/start-table-migration", _) => {
                Response::json(202, &json!({"migrationId": "m-new", "state": "new"}))
            }
            ("/list-table-migrations", _) => {
                Response::json(200, &summaries(&[record("m-old", "failed", "start")]))
            }
            _ => Response::json(200, &record("m-old", "failed", "start")),
        })
        .await?;
        let r = client.start_table_migration(&start_request()).await?;
        assert_eq!(r.migration_id, "m-new");
        assert_eq!(posts(&log, "/start-table-migration"), 2);
        Ok(())
    }

    /// A new sync of the table by another role or into other reports is not this request's.
    #[tokio::test]
    async fn a_lost_sync_matches_only_its_role_and_reports() -> anyhow::Result<()> {
        let (client, log) = routed(|req, n| match (req.path.as_str(), n) {
            ("/sync-table-migration", 0) => {
                Response::error(500, "InternalServerErrorException", "lost")
            }
            ("/sync-table-migration", _) => {
                Response::json(202, &json!({"migrationId": "s-mine", "state": "new"}))
            }
            ("/list-table-migrations", 0) => Response::json(200, &json!({"migrations": []})),
            ("/list-table-migrations", _) => {
                Response::json(200, &summaries(&[record("s-theirs", "planning", "sync")]))
            }
            _ => {
                let mut r = record("s-theirs", "planning", "sync");
                r["roleARN"] = json!("arn:aws:iam::123456789012:role/other");
                Response::json(200, &r)
            }
        })
        .await?;
        let r = client.sync_table_migration(&sync_request()).await?;
        assert_eq!(r.migration_id, "s-mine");
        assert_eq!(posts(&log, "/sync-table-migration"), 2);
        Ok(())
    }

    #[tokio::test]
    async fn retry_after_is_honoured() -> anyhow::Result<()> {
        let (client, _log) = routed(|_, n| {
            if n == 0 {
                let mut r = Response::error(429, "TooManyRequestsException", "slow down");
                r.headers.push(("retry-after".into(), "1".into()));
                r
            } else {
                Response::json(200, &json!({"migrations": []}))
            }
        })
        .await?;
        // Honoured beyond max_delay (the backoff cap), within the deadline.
        let client = client.with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(100),
            deadline: Duration::from_secs(60),
        });
        let began = std::time::Instant::now();
        client
            .list_table_migrations(&ListTableMigrationsRequest::default())
            .await?;
        assert!(
            began.elapsed() >= Duration::from_millis(950),
            "{:?}",
            began.elapsed()
        );
        Ok(())
    }

    #[test]
    fn delays_are_jittered_below_the_doubling_cap() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            deadline: Duration::from_secs(30),
        };
        let draws: Vec<Duration> = (0..64).map(|_| p.delay(2, None)).collect();
        assert!(
            draws.iter().all(|d| *d <= Duration::from_millis(400)),
            "{draws:?}"
        );
        let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
        assert!(distinct.len() > 32, "{draws:?}");
        assert!((0..64).all(|_| p.delay(9, None) <= Duration::from_secs(1)));
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(20))),
            Duration::from_secs(20),
            "Retry-After is honoured beyond max_delay"
        );
        let now = std::time::Instant::now();
        assert_eq!(
            p.next_wait(1, Some(Duration::from_secs(20)), now),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            p.next_wait(1, Some(Duration::from_secs(60)), now),
            None,
            "a wait past the deadline is not made"
        );
        assert_eq!(p.next_wait(5, None, now), None, "no attempt left");
    }

    #[tokio::test]
    async fn a_whole_request_is_bounded_by_the_request_timeout() -> anyhow::Result<()> {
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), |_req| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Response::empty(200)
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let settings = HttpSettings {
            read_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_millis(300),
            ..HttpSettings::default()
        };
        let client = S3TablesClient::with_http(format!("http://{addr}"), signer, &settings)?
            .with_retry(RetryPolicy {
                max_attempts: 1,
                ..RetryPolicy::default()
            });
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            client.list_table_migrations(&ListTableMigrationsRequest::default()),
        )
        .await;
        assert!(matches!(r, Ok(Err(_))), "{r:?}");
        Ok(())
    }

    #[tokio::test]
    async fn a_server_that_stops_answering_times_out() -> anyhow::Result<()> {
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), |_req| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Response::empty(200)
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let settings = HttpSettings {
            read_timeout: Duration::from_millis(200),
            ..HttpSettings::default()
        };
        let client = S3TablesClient::with_http(format!("http://{addr}"), signer, &settings)?
            .with_retry(RetryPolicy {
                max_attempts: 2,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
                deadline: Duration::from_secs(60),
            });
        let began = std::time::Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            client.get_table_migration(Some("m"), None),
        )
        .await;
        match r {
            Ok(Err(Error::Transport { source, .. })) => assert!(source.is_timeout(), "{source}"),
            other => anyhow::bail!("expected a timeout, got {other:?}"),
        }
        assert!(began.elapsed() < Duration::from_secs(5));
        Ok(())
    }

    #[tokio::test]
    async fn https_is_spoken_and_trusts_the_given_ca_only() -> anyhow::Result<()> {
        let dir = tempfile_dir()?;
        let ca = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])?;
        let cert_pem = ca.cert.pem();
        let key_pem = ca.signing_key.serialize_pem();
        let tls = crate::http_server::tls_config(cert_pem.as_bytes(), key_pem.as_bytes())
            .map_err(anyhow::Error::msg)?;
        let (addr, _task) = crate::http_server::serve_tls(
            ([127, 0, 0, 1], 0).into(),
            Arc::new(tls),
            |_req| async { Response::json(200, &json!({"migrations": []})) },
        )
        .await?;
        let ca_path = dir.join("ca.pem");
        std::fs::write(&ca_path, &cert_pem)?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let trusting = S3TablesClient::with_http(
            format!("https://{addr}"),
            signer.clone(),
            &HttpSettings {
                ca_bundle: Some(ca_path),
                ..HttpSettings::default()
            },
        )?;
        trusting
            .list_table_migrations(&ListTableMigrationsRequest::default())
            .await?;
        let untrusting =
            S3TablesClient::with_http(format!("https://{addr}"), signer, &HttpSettings::default())?
                .with_retry(RetryPolicy {
                    max_attempts: 1,
                    ..RetryPolicy::default()
                });
        let err = untrusting
            .list_table_migrations(&ListTableMigrationsRequest::default())
            .await;
        assert!(matches!(err, Err(Error::Transport { .. })), "{err:?}");
        Ok(())
    }

    fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
        let dir = std::env::temp_dir().join(format!("ops-s3tables-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
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
