//! One catalog's HTTP transport: the `/v1/config` handshake, authentication, SigV4 signing,
//! retries, and errors that name the catalog, the URL and the key to change.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use iceberg::{Error as IcebergError, ErrorKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::auth::{Auth, Bearer};
use super::sigv4::Signer;
use super::{RestOptions, decode, encode};
use crate::http::{self, RetryPolicy, SendFailure};

/// The REST spec version this client speaks (as iceberg-catalog-rest 0.10.1 announces it).
const SPEC_VERSION: &str = "0.14.1";

/// A response read to the end.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: Bytes,
    /// `METHOD url`, for messages.
    pub what: String,
    /// An earlier attempt of this request was answered (429/503) or failed and was sent again.
    /// A gateway may answer 503 after the catalog acted, so for a commit this reply may be the
    /// answer to a change that already landed (a 409 then means "you already did this").
    pub retried: bool,
}

/// The `Location` of a 3xx answer (304 Not Modified aside), which is never followed: a redirect
/// would take the credentials, `header.*` values and (307/308) a token request's client secret
/// to wherever it points.
fn redirect_target(response: &reqwest::Response) -> Option<String> {
    let status = response.status();
    if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
        return None;
    }
    Some(
        response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
            .unwrap_or_else(|| "no Location".into()),
    )
}

#[derive(Deserialize)]
struct ConfigResponse {
    #[serde(default)]
    defaults: BTreeMap<String, String>,
    #[serde(default)]
    overrides: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorModel,
}

#[derive(Deserialize)]
struct ErrorModel {
    #[serde(default)]
    message: String,
    #[serde(default, rename = "type")]
    kind: String,
}

/// A REST catalog's client, shared by its reads and commits.
pub(crate) struct RestClient {
    catalog: String,
    /// Base URI after the server's `uri` override, no trailing slash.
    uri: String,
    /// `{uri}/v1` or `{uri}/v1/{prefix}`.
    base: String,
    /// PyIceberg's merge: server defaults < configured properties < server overrides.
    props: BTreeMap<String, String>,
    http: reqwest::Client,
    headers: HeaderMap,
    auth: Auth,
    signer: Option<Signer>,
    retry: RetryPolicy,
    separator: String,
    /// The configured TLS settings, named when a handshake fails.
    tls: http::TlsOptions,
}

impl std::fmt::Debug for RestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestClient")
            .field("catalog", &self.catalog)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl RestClient {
    /// Builds the client and reads `/v1/config`. TLS files were checked by the caller
    /// ([`crate::http::rustls_config`] errors become configuration errors there).
    pub(crate) async fn connect(
        opts: RestOptions,
        http: reqwest::Client,
    ) -> iceberg::Result<RestClient> {
        let headers = base_headers(&opts)?;
        let signer = if opts.sigv4_enabled() {
            Some(Signer::from_options(&opts).await?)
        } else {
            None
        };
        let auth = Auth::from_options(&opts);
        let mut client = RestClient {
            catalog: opts.catalog.clone(),
            uri: opts.uri.clone(),
            base: format!("{}/v1", opts.uri),
            props: opts.props.clone(),
            http,
            headers,
            auth,
            signer,
            retry: opts.retry,
            separator: "\u{1f}".into(),
            tls: opts.tls.clone(),
        };
        let mut query = Vec::new();
        if let Some(w) = opts.get("warehouse") {
            query.push(("warehouse", w.to_string()));
        }
        let url = format!("{}/v1/config", client.uri);
        let reply = client.call(Method::GET, &url, &query, None).await?;
        if reply.status != StatusCode::OK {
            return Err(client.unexpected(&reply));
        }
        let config: ConfigResponse = client.parse(&reply)?;
        let props = merge_config(config.defaults, &opts.props, config.overrides);
        if let Some(uri) = props.get("uri").filter(|u| !u.trim().is_empty()) {
            let uri = uri.trim().trim_end_matches('/').to_string();
            client.check_server_override("uri", &opts.uri, &uri, true)?;
            client.uri = uri;
        }
        // The token endpoint before and after the merge (the default one follows `uri`).
        let token_endpoint = |p: &BTreeMap<String, String>, uri: &str| {
            p.get("oauth2-server-uri")
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .map_or_else(|| format!("{uri}/v1/oauth/tokens"), str::to_string)
        };
        // Only a client secret goes to the token endpoint: without a `credential` nothing is
        // sent there, so an http one is no risk (and the user could not override it).
        let sends_secret = props
            .get("credential")
            .is_some_and(|c| !c.trim().is_empty());
        client.check_server_override(
            "oauth2-server-uri",
            &token_endpoint(&opts.props, &opts.uri),
            &token_endpoint(&props, &client.uri),
            sends_secret,
        )?;
        // PyIceberg 0.12 (RestCatalog.__init__: _fetch_config, then _create_session) reads
        // /v1/config with a session made from the configured properties, then makes the
        // session every later request uses from the merged ones: `header.*`, `token`,
        // `credential`, `scope`/`audience`/`resource`, `oauth2-server-uri` (a server override
        // wins; the default token endpoint follows an overridden `uri`) and the SigV4 keys all
        // come from the merge. TLS (`ssl.*`) stays as configured: PyIceberg reads it from the
        // nested `ssl` mapping, which a config response (string values) cannot replace.
        let merged = RestOptions {
            uri: client.uri.clone(),
            props: props.clone(),
            ..opts.clone()
        };
        client.headers = base_headers(&merged)?;
        let auth = Auth::from_options(&merged);
        // A new token only when what fetches it changed (PyIceberg's new auth manager fetches
        // one either way; the one in hand is as good when nothing differs).
        if !auth.same_source(&client.auth) {
            client.auth = auth;
        }
        client.signer = if merged.sigv4_enabled() {
            Some(Signer::from_options(&merged).await?)
        } else {
            None
        };
        client.base = match props
            .get("prefix")
            .map(|p| p.trim().trim_matches('/'))
            .filter(|p| !p.is_empty())
        {
            Some(prefix) => format!("{}/v1/{prefix}", client.uri),
            None => format!("{}/v1", client.uri),
        };
        if let Some(sep) = props.get("namespace-separator") {
            let sep = decode(sep);
            if sep.is_empty() {
                return Err(client.error(
                    ErrorKind::DataInvalid,
                    "`namespace-separator` is empty; remove it or set a separator".into(),
                ));
            }
            client.separator = sep;
        }
        client.props = props;
        tracing::debug!(catalog = %client.catalog, base = %client.base, "REST catalog configured");
        Ok(client)
    }

    /// A value of `key` (`uri` or `oauth2-server-uri`) the server's `/v1/config` changed from
    /// `old` to `new`: every later request (or token request, with the client secret) goes
    /// there, so the change is logged, and one from https to http — which would send the
    /// credentials in clear when `sends_secrets` — is refused. A password written into either
    /// address (`https://id:secret@host`, which reqwest sends as Basic auth) is masked.
    fn check_server_override(
        &self,
        key: &str,
        old: &str,
        new: &str,
        sends_secrets: bool,
    ) -> iceberg::Result<()> {
        if old == new {
            return Ok(());
        }
        let (old_shown, new_shown) = (
            crate::catalog::redact::redact_uri_password(old),
            crate::catalog::redact::redact_uri_password(new),
        );
        let scheme = |u: &str| {
            reqwest::Url::parse(u)
                .map(|u| u.scheme().to_ascii_lowercase())
                .unwrap_or_default()
        };
        if sends_secrets && scheme(old) == "https" && scheme(new) != "https" {
            return Err(self.error(
                ErrorKind::DataInvalid,
                format!(
                    "the server's /v1/config changes `{key}` from {old_shown} to {new_shown}, \
                     from https to an unencrypted address; refused, since credentials and tokens \
                     would be sent in clear there. A server override wins over what you \
                     configure, so the catalog's operator must change its /v1/config (or serve \
                     that address over https)"
                ),
            ));
        }
        tracing::info!(
            catalog = %self.catalog,
            key,
            old = %old_shown,
            new = %new_shown,
            "the server's /v1/config changes where requests go"
        );
        Ok(())
    }

    /// The catalog's name.
    pub(crate) fn catalog(&self) -> &str {
        &self.catalog
    }

    /// Catalog properties after the `/v1/config` merge.
    pub(crate) fn props(&self) -> &BTreeMap<String, String> {
        &self.props
    }

    /// `{base}/namespaces`.
    pub(crate) fn namespaces_url(&self) -> String {
        format!("{}/namespaces", self.base)
    }

    /// The path segment of a namespace: each level encoded, joined by the separator.
    pub(crate) fn namespace_segment(&self, ns: &iceberg::NamespaceIdent) -> String {
        ns.iter()
            .map(|p| encode(p))
            .collect::<Vec<_>>()
            .join(&encode(&self.separator))
    }

    /// The namespace joined with the separator, unencoded (for a `parent=` query value).
    pub(crate) fn namespace_param(&self, ns: &iceberg::NamespaceIdent) -> String {
        ns.join(&self.separator)
    }

    /// `{base}/namespaces/{ns}`.
    pub(crate) fn namespace_url(&self, ns: &iceberg::NamespaceIdent) -> String {
        format!("{}/namespaces/{}", self.base, self.namespace_segment(ns))
    }

    /// `{base}/namespaces/{ns}/tables/{name}`.
    pub(crate) fn table_url(&self, table: &iceberg::TableIdent) -> String {
        format!(
            "{}/tables/{}",
            self.namespace_url(table.namespace()),
            encode(table.name())
        )
    }

    /// `{base}/{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    /// An error about this catalog.
    pub(crate) fn error(&self, kind: ErrorKind, message: String) -> IcebergError {
        IcebergError::new(kind, format!("catalog '{}': {message}", self.catalog))
    }

    /// Parses a JSON reply.
    pub(crate) fn parse<T: DeserializeOwned>(&self, reply: &Reply) -> iceberg::Result<T> {
        serde_json::from_slice(&reply.body).map_err(|e| {
            self.error(
                ErrorKind::Unexpected,
                format!(
                    "{} answered {} with a body that is not the expected JSON ({e}): {}",
                    reply.what,
                    reply.status,
                    brief(&reply.body)
                ),
            )
        })
    }

    /// A status the caller has no meaning for.
    pub(crate) fn unexpected(&self, reply: &Reply) -> IcebergError {
        let detail = server_message(&reply.body);
        let hint = match reply.status {
            StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => " (retried; the service is failing)",
            _ => "",
        };
        self.error(
            ErrorKind::Unexpected,
            format!("{} answered {}{hint}: {detail}", reply.what, reply.status),
        )
    }

    /// Sends one request with authentication, signing and retries, and reads the reply.
    ///
    /// Retried: a request that never left (connection refused or reset while connecting), a
    /// 429 or 503 (`Retry-After` honoured), and for GET and HEAD also timeouts, resets and
    /// 502/504. A 401 refreshes an OAuth2 token once. A POST whose connection failed after it
    /// may have reached the server is never repeated: its outcome is reported as unknown. A 503
    /// normally means the catalog did not act, but a gateway can answer 503 after forwarding,
    /// so [`Reply::retried`] tells a commit that its answer may be about a repeat.
    pub(crate) async fn call(
        &self,
        method: Method,
        url: &str,
        query: &[(&str, String)],
        body: Option<Vec<u8>>,
    ) -> iceberg::Result<Reply> {
        let idempotent = matches!(method, Method::GET | Method::HEAD);
        let mut url = reqwest::Url::parse(url).map_err(|e| {
            self.error(
                ErrorKind::DataInvalid,
                format!("'{url}' is not a valid URL ({e}); check `uri`"),
            )
        })?;
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        let what = format!("{method} {}", strip_query(&url));
        let mut retries = 0u32;
        let mut refreshed = false;
        loop {
            let bearer = self.auth.bearer(self).await?;
            let request = self
                .build(&method, &url, body.as_deref(), bearer.as_ref())
                .await?;
            tracing::debug!(catalog = %self.catalog, request = %what, "REST request");
            let response = match self.http.execute(request).await {
                Ok(r) => r,
                Err(e) => {
                    let retriable = match http::classify(&e) {
                        SendFailure::NotSent => true,
                        SendFailure::Tls => false,
                        SendFailure::MaybeSent => idempotent,
                    };
                    if retriable && retries < self.retry.max_retries {
                        retries += 1;
                        self.pause(retries, None, &what, &http::chain_message(&e))
                            .await;
                        continue;
                    }
                    return Err(self.transport_error(&what, &e, idempotent));
                }
            };
            let status = response.status();
            if let Some(location) = redirect_target(&response) {
                return Err(self.error(
                    ErrorKind::Unexpected,
                    format!(
                        "{what} answered {status}, redirecting to {location}; redirects are not \
                         followed (they would carry the credentials there): if that is the \
                         catalog's address, set `uri` to it"
                    ),
                ));
            }
            if matches!(status.as_u16(), 401 | 419) && !refreshed && self.auth.can_refresh() {
                refreshed = true;
                if let Some(b) = &bearer {
                    self.auth.invalidate(b.generation).await;
                }
                tracing::debug!(catalog = %self.catalog, request = %what, "401: refreshing the token once");
                continue;
            }
            let transient = matches!(status.as_u16(), 429 | 503)
                || (idempotent && matches!(status.as_u16(), 502 | 504));
            if transient && retries < self.retry.max_retries {
                retries += 1;
                let after = http::retry_after(response.headers());
                self.pause(retries, after, &what, status.as_str()).await;
                continue;
            }
            let body = match response.bytes().await {
                Ok(b) => b,
                Err(e) => {
                    if idempotent && retries < self.retry.max_retries {
                        retries += 1;
                        self.pause(retries, None, &what, &http::chain_message(&e))
                            .await;
                        continue;
                    }
                    // The status arrived, so the request reached the catalog whatever the error
                    // (even a TLS alert): never a refused handshake with its advice.
                    let mut message = format!(
                        "{what} answered {status}, but reading its answer failed: {}",
                        http::chain_message(&e)
                    );
                    if !idempotent {
                        message.push_str(
                            "; the request reached the catalog, so its outcome is unknown (it \
                             was not repeated)",
                        );
                    }
                    return Err(self.error(ErrorKind::Unexpected, message));
                }
            };
            let reply = Reply {
                status,
                body,
                what,
                retried: retries > 0,
            };
            return match status.as_u16() {
                401 | 419 => Err(self.unauthorized(&reply, refreshed)),
                403 => Err(self.error(
                    ErrorKind::Unexpected,
                    format!(
                        "{} answered 403 Forbidden: the credentials were accepted but may not do \
                         this ({}); check the principal's grants, or `scope`",
                        reply.what,
                        server_message(&reply.body)
                    ),
                )),
                _ => Ok(reply),
            };
        }
    }

    /// Serialises `value` and sends it.
    pub(crate) async fn call_json<T: serde::Serialize>(
        &self,
        method: Method,
        url: &str,
        value: &T,
    ) -> iceberg::Result<Reply> {
        let body = serde_json::to_vec(value).map_err(|e| {
            self.error(
                ErrorKind::Unexpected,
                format!("cannot serialise the request: {e}"),
            )
        })?;
        self.call(method, url, &[], Some(body)).await
    }

    async fn pause(&self, retry: u32, after: Option<Duration>, what: &str, cause: &str) {
        let wait = self.retry.backoff(retry, after);
        tracing::info!(
            catalog = %self.catalog,
            request = %what,
            cause,
            retry,
            max = self.retry.max_retries,
            wait_ms = wait.as_millis() as u64,
            "retrying a REST request"
        );
        tokio::time::sleep(wait).await;
    }

    async fn build(
        &self,
        method: &Method,
        url: &reqwest::Url,
        body: Option<&[u8]>,
        bearer: Option<&Bearer>,
    ) -> iceberg::Result<reqwest::Request> {
        let mut headers = self.headers.clone();
        if let Some(b) = bearer {
            let value = bearer_value(&b.token).ok_or_else(|| {
                self.error(
                    ErrorKind::DataInvalid,
                    "the OAuth2 token is not a valid header value; check `token`".into(),
                )
            })?;
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let body = body.unwrap_or_default();
        if let Some(signer) = &self.signer {
            signer.sign(self, method, url, &mut headers, body).await?;
        }
        let mut request = reqwest::Request::new(method.clone(), url.clone());
        *request.headers_mut() = headers;
        if !body.is_empty() {
            *request.body_mut() = Some(reqwest::Body::from(body.to_vec()));
        }
        Ok(request)
    }

    /// POSTs a form to the token endpoint (no bearer, no signing), with retries as a read.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let mut retries = 0;
        let what = format!("POST {url}");
        // `header.*` values are the catalog's (often an API key): sent to the catalog's own
        // token endpoint, as PyIceberg 0.12's LegacyOAuth2AuthManager sends its session's
        // headers there, but never to another origin (an external identity provider), to
        // which PyIceberg's current OAuth2AuthManager sends none either.
        let same_origin = match (reqwest::Url::parse(url), reqwest::Url::parse(&self.uri)) {
            (Ok(a), Ok(b)) => a.origin() == b.origin(),
            _ => false,
        };
        let base = if same_origin {
            self.headers.clone()
        } else {
            let mut h = HeaderMap::new();
            if let Some(agent) = self.headers.get(reqwest::header::USER_AGENT) {
                h.insert(reqwest::header::USER_AGENT, agent.clone());
            }
            h
        };
        loop {
            let mut headers = base.clone();
            headers.insert(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
            let result = self.http.post(url).headers(headers).form(form).send().await;
            match result {
                Err(e) => {
                    if http::classify(&e) != SendFailure::Tls && retries < self.retry.max_retries {
                        retries += 1;
                        self.pause(retries, None, &what, &http::chain_message(&e))
                            .await;
                        continue;
                    }
                    return Err(self.describe_transport(&e));
                }
                Ok(response) => {
                    let status = response.status();
                    if let Some(location) = redirect_target(&response) {
                        return Err(format!(
                            "answered {status}, redirecting to {location}; redirects are not \
                             followed (the client secret would be sent there): if that is the \
                             token endpoint, set `oauth2-server-uri` to it"
                        ));
                    }
                    if matches!(status.as_u16(), 429 | 502 | 503 | 504)
                        && retries < self.retry.max_retries
                    {
                        retries += 1;
                        let after = http::retry_after(response.headers());
                        self.pause(retries, after, &what, status.as_str()).await;
                        continue;
                    }
                    let body = response
                        .bytes()
                        .await
                        .map_err(|e| self.describe_transport(&e))?;
                    return Ok(Reply {
                        status,
                        body,
                        what,
                        retried: retries > 0,
                    });
                }
            }
        }
    }

    fn describe_transport(&self, e: &reqwest::Error) -> String {
        let chain = http::chain_message(e);
        if let Some(tls) = http::tls_cause(e)
            && http::classify(e) == SendFailure::Tls
        {
            // rustls-native-certs reads SSL_CERT_FILE in place of the platform's store.
            let env_file = std::env::var_os("SSL_CERT_FILE")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from);
            return format!(
                "the TLS handshake failed ({tls}); {}",
                http::tls_advice(tls, &self.tls, env_file.as_deref())
            );
        }
        if let Some(tls) = http::tls_cause(e) {
            // After the handshake: the connection broke while the request was out.
            return format!("the TLS connection failed after the request was sent ({tls})");
        }
        if e.is_timeout() || chain.contains("timed out") {
            // Connecting (TCP and the TLS handshake) has a limit of its own.
            let key = if e.is_connect() {
                "rest.client.connection-timeout-ms"
            } else {
                "rest.client.socket-timeout-ms"
            };
            return format!(
                "timed out ({chain}); check `uri`, or raise `{key}` if the service is slow"
            );
        }
        if chain.contains("invalid HTTP version") {
            // The answer was not HTTP at all: most often a TLS server asked in plain http.
            let hint = if self.uri.starts_with("http://") {
                "; the server may speak TLS: use an https:// `uri`"
            } else {
                ""
            };
            return format!("the server's answer is not HTTP ({chain}){hint}");
        }
        if e.is_connect() {
            return format!("cannot connect ({chain}); check `uri` and that the service is up");
        }
        chain
    }

    fn transport_error(&self, what: &str, e: &reqwest::Error, idempotent: bool) -> IcebergError {
        let mut message = format!("{what} failed: {}", self.describe_transport(e));
        if !idempotent && http::classify(e) == SendFailure::MaybeSent {
            message.push_str(
                "; the request may have reached the catalog, so its outcome is unknown (it was \
                 not repeated)",
            );
        }
        self.error(ErrorKind::Unexpected, message)
    }

    fn unauthorized(&self, reply: &Reply, refreshed: bool) -> IcebergError {
        let server = server_message(&reply.body);
        let advice = self.auth.advice_on_401(refreshed);
        self.error(
            ErrorKind::Unexpected,
            format!(
                "{} answered {}: {advice} (server: {server})",
                reply.what, reply.status
            ),
        )
    }
}

/// `Content-Type`, `User-Agent`, `X-Client-Version` and every `header.<name>` (names as
/// written; values validated).
fn base_headers(opts: &RestOptions) -> iceberg::Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    for (key, value) in &opts.props {
        let Some(name) = key
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("header."))
            .map(|_| &key[7..])
        else {
            continue;
        };
        let bad = |what: &str| {
            IcebergError::new(
                ErrorKind::DataInvalid,
                format!(
                    "catalog '{}': `{key}` is not a valid HTTP header {what}",
                    opts.catalog
                ),
            )
        };
        let name = HeaderName::try_from(name).map_err(|_| bad("name"))?;
        // The value may be a secret: the error never repeats it.
        let mut value = HeaderValue::try_from(value.as_str()).map_err(|_| bad("value"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    // Set after `header.*`, so these win over a header of the same name, as PyIceberg 0.12's
    // `_config_headers` sets them after its `session.headers.update(header properties)`.
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        HeaderName::from_static("x-client-version"),
        HeaderValue::from_static(SPEC_VERSION),
    );
    headers.insert(
        reqwest::header::USER_AGENT,
        HeaderValue::from_static(concat!("iceberg-ops/", env!("CARGO_PKG_VERSION"))),
    );
    // PyIceberg asks for vended credentials unless a header says otherwise (`setdefault`).
    headers
        .entry(HeaderName::from_static("x-iceberg-access-delegation"))
        .or_insert(HeaderValue::from_static("vended-credentials"));
    Ok(headers)
}

/// `Authorization: Bearer <token>`, marked sensitive so it never shows in a `Debug` of the
/// request or its headers (reqwest and hyper log those at debug/trace level).
fn bearer_value(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::try_from(format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The name of a `header.<name>` key (the prefix in any case, as [`base_headers`] reads it).
fn header_key(key: &str) -> Option<&str> {
    key.get(..7)
        .filter(|p| p.eq_ignore_ascii_case("header."))
        .and_then(|_| key.get(7..))
}

/// PyIceberg's merge of `/v1/config`: server defaults, then the configured properties, then
/// server overrides, each later one winning. HTTP header names are case-insensitive, so a
/// `header.<name>` replaces every earlier `header.*` key naming the same header in any case
/// (otherwise the sorted map would let whichever spelling sorts last win, whatever its source).
fn merge_config(
    defaults: BTreeMap<String, String>,
    configured: &BTreeMap<String, String>,
    overrides: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut props = BTreeMap::new();
    let layers = [defaults, configured.clone(), overrides];
    for layer in layers {
        for (key, value) in layer {
            if let Some(name) = header_key(&key) {
                props.retain(|k: &String, _| {
                    header_key(k).is_none_or(|n| !n.eq_ignore_ascii_case(name))
                });
            }
            props.insert(key, value);
        }
    }
    props
}

fn strip_query(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.to_string()
}

/// The server's error message (`{"error": {"message", "type"}}`), else the start of the body.
pub(crate) fn server_message(body: &[u8]) -> String {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(e) if !e.error.kind.is_empty() => format!("{}: {}", e.error.kind, e.error.message),
        Ok(e) => e.error.message,
        Err(_) if body.is_empty() => "no body".into(),
        Err(_) => brief(body),
    }
}

fn brief(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Header names differ only in case across the sources: the later source wins (defaults <
    /// configured < overrides), whichever spelling sorts last.
    #[test]
    fn header_keys_merge_case_insensitively_by_source() {
        let merged = merge_config(
            map(&[("header.x-tenant", "default"), ("header.X-Only", "d")]),
            &map(&[
                ("header.X-Tenant", "configured"),
                ("header.x-key", "configured"),
            ]),
            map(&[("header.X-Key", "override")]),
        );
        let opts = RestOptions {
            catalog: "c".into(),
            uri: "http://x".into(),
            props: merged,
            tls: Default::default(),
            timeouts: Default::default(),
            retry: Default::default(),
        };
        let headers = base_headers(&opts).map_err(|e| e.to_string());
        let headers = headers.as_ref().map_err(|e| e.as_str());
        let get = |n: &str| {
            headers
                .ok()
                .and_then(|h| h.get(n))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        assert_eq!(get("x-tenant").as_deref(), Some("configured"));
        assert_eq!(get("x-key").as_deref(), Some("override"));
        assert_eq!(get("x-only").as_deref(), Some("d"));
    }

    /// PyIceberg sets Content-Type, User-Agent and X-Client-Version after the `header.*`
    /// values (they win); X-Iceberg-Access-Delegation only when no header set it.
    #[test]
    fn client_headers_win_over_header_properties_as_in_pyiceberg() {
        let opts = RestOptions {
            catalog: "c".into(),
            uri: "http://x".into(),
            props: map(&[
                ("header.content-type", "text/plain"),
                ("header.User-Agent", "mine"),
                ("header.X-Iceberg-Access-Delegation", "remote-signing"),
            ]),
            tls: Default::default(),
            timeouts: Default::default(),
            retry: Default::default(),
        };
        let headers = base_headers(&opts).ok();
        let get = |n: &str| {
            headers
                .as_ref()
                .and_then(|h| h.get(n))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        assert_eq!(get("content-type").as_deref(), Some("application/json"));
        assert!(
            get("user-agent").is_some_and(|a| a.starts_with("iceberg-ops/")),
            "{:?}",
            get("user-agent")
        );
        assert_eq!(
            get("x-iceberg-access-delegation").as_deref(),
            Some("remote-signing")
        );
    }

    #[test]
    fn the_bearer_header_is_sensitive() {
        let value = bearer_value("s3cr3t");
        assert!(value.as_ref().is_some_and(HeaderValue::is_sensitive));
        assert!(!format!("{value:?}").contains("s3cr3t"), "{value:?}");
        assert!(bearer_value("bad\ntoken").is_none());
    }
}
