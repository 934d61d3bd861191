//! REST catalogs: POST the commit to the table endpoint; the server applies it atomically.

use std::collections::HashMap;

use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use iceberg_catalog_rest::CommitTableRequest;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

use super::TableChange;
use crate::catalog::CatalogSettings;
use crate::{Error, Result};

#[derive(Debug)]
pub(super) struct RestPointer {
    client: reqwest::Client,
    /// `{uri}/v1` or `{uri}/v1/{prefix}`.
    base_url: String,
    catalog: String,
}

#[derive(Deserialize)]
struct ConfigResponse {
    #[serde(default)]
    defaults: HashMap<String, String>,
    #[serde(default)]
    overrides: HashMap<String, String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
}

#[derive(Deserialize)]
struct LoadTableResult {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<String>,
    metadata: TableMetadata,
}

impl RestPointer {
    pub(super) async fn connect(settings: &CatalogSettings) -> Result<Self> {
        let catalog = settings.name().to_string();
        let err = |message: String| Error::Catalog {
            catalog: catalog.clone(),
            message,
        };
        let uri = settings
            .iceberg_property("uri")
            .ok_or_else(|| err("no uri".into()))?
            .trim_end_matches('/')
            .to_string();
        let mut headers = HeaderMap::new();
        for (k, v) in settings.iceberg_properties() {
            if let Some(name) = k.strip_prefix("header.") {
                let name = HeaderName::try_from(name)
                    .map_err(|e| err(format!("header.{name} is not a valid header: {e}")))?;
                let value = HeaderValue::try_from(v.as_str())
                    .map_err(|e| err(format!("header.{name} has an invalid value: {e}")))?;
                headers.insert(name, value);
            }
        }
        let client = reqwest::Client::new();
        let token = match (
            settings.iceberg_property("token"),
            settings.iceberg_property("credential"),
        ) {
            (Some(token), _) => Some(token.to_string()),
            (None, Some(credential)) => Some(
                fetch_token(&client, &uri, settings, credential)
                    .await
                    .map_err(|m| err(format!("OAuth2 token request failed: {m}")))?,
            ),
            (None, None) => None,
        };
        if let Some(token) = token {
            let value = HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| err("the token is not a valid header value".into()))?;
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .map_err(|e| err(e.to_string()))?;

        let mut config_url = format!("{uri}/v1/config");
        if let Some(warehouse) = settings.iceberg_property("warehouse") {
            config_url = format!("{config_url}?warehouse={}", urlencode(warehouse));
        }
        let config: ConfigResponse = client
            .get(&config_url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| err(format!("GET /v1/config failed: {e}")))?
            .json()
            .await
            .map_err(|e| err(format!("GET /v1/config: unexpected response: {e}")))?;
        // Precedence as in iceberg's REST client: server overrides > client > server defaults.
        let prefix = config
            .overrides
            .get("prefix")
            .or(settings.iceberg_properties().get("prefix"))
            .or(config.defaults.get("prefix"))
            .filter(|p| !p.is_empty());
        let base_url = match prefix {
            Some(p) => format!("{uri}/v1/{}", p.trim_matches('/')),
            None => format!("{uri}/v1"),
        };
        Ok(Self {
            client,
            base_url,
            catalog,
        })
    }

    pub(super) async fn commit(&self, base: &Table, change: TableChange) -> Result<Table> {
        let ident = base.identifier().clone();
        let url = format!(
            "{}/namespaces/{}/tables/{}",
            self.base_url,
            ident.namespace().to_url_string(),
            urlencode(ident.name())
        );
        let request = CommitTableRequest {
            identifier: Some(ident.clone()),
            requirements: change.requirements,
            updates: change.updates,
        };
        let err = |message: String| Error::Catalog {
            catalog: self.catalog.clone(),
            message,
        };
        let response = self
            .client
            .post(&url)
            .json(&request)
            .send()
            .await
            .map_err(|e| err(format!("commit to {ident} failed: {e}")))?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        match status {
            s if s.is_success() => {
                let loaded: LoadTableResult = serde_json::from_str(&body)
                    .map_err(|e| err(format!("commit response for {ident} unreadable: {e}")))?;
                let mut builder = Table::builder()
                    .identifier(ident)
                    .metadata(loaded.metadata)
                    .file_io(base.file_io().clone())
                    .runtime(iceberg::Runtime::try_current()?);
                if let Some(location) = loaded.metadata_location {
                    builder = builder.metadata_location(location);
                }
                Ok(builder.build()?)
            }
            StatusCode::CONFLICT => Err(Error::CommitConflict {
                table: ident.to_string(),
                detail: format!("the REST catalog refused a stale commit: {}", brief(&body)),
            }),
            s => Err(err(format!(
                "commit to {ident} answered {s}: {}",
                brief(&body)
            ))),
        }
    }
}

async fn fetch_token(
    client: &reqwest::Client,
    uri: &str,
    settings: &CatalogSettings,
    credential: &str,
) -> std::result::Result<String, String> {
    let (id, secret) = match credential.split_once(':') {
        Some((id, secret)) => (Some(id), secret),
        None => (None, credential),
    };
    let endpoint = settings
        .iceberg_property("oauth2-server-uri")
        .map(str::to_string)
        .unwrap_or_else(|| format!("{uri}/v1/oauth/tokens"));
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_secret", secret),
        (
            "scope",
            settings.iceberg_property("scope").unwrap_or("catalog"),
        ),
    ];
    if let Some(id) = id {
        form.push(("client_id", id));
    }
    let response = client
        .post(&endpoint)
        .form(&form)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        // The body may echo the request; do not repeat it.
        return Err(format!("{endpoint} answered {status}"));
    }
    response
        .json::<TokenResponse>()
        .await
        .map(|t| t.access_token)
        .map_err(|e| e.to_string())
}

fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn brief(body: &str) -> String {
    body.chars().take(500).collect()
}
