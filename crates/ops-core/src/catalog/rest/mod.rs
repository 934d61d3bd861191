//! The REST catalog client: one HTTP client per catalog, used for reads (the [`iceberg::Catalog`]
//! implementation) and for ops-core's commits alike, so both see the same trust, timeouts,
//! retries and credentials.
//!
//! iceberg-catalog-rest 0.10.1 cannot do what production catalogs need — it has no request
//! hook (so no SigV4 for AWS Glue's and S3 Tables' REST endpoints), no retries, and it parses
//! a token's `expires_in` but never refreshes — so iceberg-ops speaks the REST protocol itself,
//! with iceberg-catalog-rest's request and response types and its mapping of status codes to
//! [`iceberg::ErrorKind`]s. Keys and their meaning are PyIceberg 0.12's:
//!
//! | key | meaning |
//! |---|---|
//! | `uri`, `warehouse`, `prefix` | as in the REST spec; `/v1/config` defaults and overrides merge as PyIceberg merges them |
//! | `token` | a bearer token, sent as is |
//! | `credential` | `client_id:client_secret` for OAuth2 client credentials at `oauth2-server-uri` (default `{uri}/v1/oauth/tokens`), with `scope` (default `catalog`), `audience`, `resource`; refreshed before it expires and once on a 401 |
//! | `header.<Name>` | an extra header on every request |
//! | `rest.sigv4-enabled`, `rest.signing-name`, `rest.signing-region` | SigV4 signing (AWS Glue: `glue`, S3 Tables: `s3tables`) with `client.*` keys or the standard AWS chain |
//! | `ssl.cabundle`, `ssl.client.cert`, `ssl.client.key` | see [`crate::http`] |
//! | `rest.client.connection-timeout-ms`, `rest.client.socket-timeout-ms`, `rest.client.max-retries` | Java's names for the connect and read timeouts, and retries |

mod auth;
mod catalog;
mod client;
mod sigv4;
mod vended;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use catalog::RestCatalog;
pub(crate) use client::{RestClient, server_message};

use crate::catalog::{CatalogSettings, ConfigError};
use crate::http::{RetryPolicy, Timeouts, TlsOptions, Trust};

/// Keys whose value is a PyIceberg boolean.
fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Checks the REST-specific keys of a definition (`ssl.*`, timeouts, SigV4) before anything
/// connects; `invalid(key, reason)` builds the error.
pub(crate) fn validate(
    props: &BTreeMap<String, String>,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let get = |k: &str| props.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    if get("ssl.client.key").is_some() && get("ssl.client.cert").is_none() {
        return Err(invalid(
            "ssl.client.key",
            "is set without `ssl.client.cert`; set both (or only `ssl.client.cert` to a PEM \
             file holding the certificate and its key)"
                .into(),
        ));
    }
    for key in [
        "rest.client.connection-timeout-ms",
        "rest.client.socket-timeout-ms",
        "rest.client.max-retries",
    ] {
        if let Some(v) = get(key)
            && v.parse::<u64>().is_err()
        {
            return Err(invalid(key, format!("'{v}' is not a whole number")));
        }
    }
    if let Some(v) = get("rest.sigv4-enabled")
        && parse_bool(v).is_none()
    {
        return Err(invalid(
            "rest.sigv4-enabled",
            format!("'{v}' is not true or false"),
        ));
    }
    if let Some(cred) = props.get("credential")
        && cred.trim().is_empty()
    {
        return Err(invalid(
            "credential",
            "expected client_id:client_secret".into(),
        ));
    }
    Ok(())
}

/// Everything the client needs, read from a catalog's properties.
#[derive(Clone)]
pub(crate) struct RestOptions {
    pub catalog: String,
    pub uri: String,
    pub props: BTreeMap<String, String>,
    pub tls: TlsOptions,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
}

impl RestOptions {
    pub(crate) fn from_settings(settings: &CatalogSettings) -> Self {
        let props = settings.iceberg_properties().clone();
        let get = |k: &str| {
            props
                .get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let trust = match get("ssl.cabundle") {
            None => Trust::Default,
            Some(v) => match parse_bool(&v) {
                Some(false) => Trust::Disabled,
                Some(true) => Trust::Default,
                None => Trust::CaBundle(PathBuf::from(v)),
            },
        };
        let cert = get("ssl.client.cert").map(PathBuf::from);
        let key = get("ssl.client.key").map(PathBuf::from);
        let ms = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
        let mut timeouts = Timeouts::default();
        if let Some(v) = ms("rest.client.connection-timeout-ms") {
            timeouts.connect = Duration::from_millis(v);
        }
        if let Some(v) = ms("rest.client.socket-timeout-ms") {
            timeouts.read = Duration::from_millis(v);
        }
        let mut retry = RetryPolicy::default();
        if let Some(v) = ms("rest.client.max-retries") {
            retry.max_retries = u32::try_from(v).unwrap_or(u32::MAX);
        }
        RestOptions {
            catalog: settings.name().to_string(),
            uri: get("uri")
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string(),
            props,
            tls: TlsOptions {
                trust,
                client_cert: cert,
                client_key: key,
            },
            timeouts,
            retry,
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.props
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    fn sigv4_enabled(&self) -> bool {
        self.get("rest.sigv4-enabled")
            .and_then(parse_bool)
            .unwrap_or(false)
    }
}

/// Percent-encodes one path segment or query value (RFC 3986 unreserved characters kept), as
/// PyIceberg's `quote(part, safe="")` does.
/// The ids of the snapshots a commit adds: what shows whether a commit whose answer was lost
/// or ambiguous landed.
pub(crate) fn added_snapshots(updates: &[iceberg::TableUpdate]) -> Vec<i64> {
    updates
        .iter()
        .filter_map(|u| match u {
            iceberg::TableUpdate::AddSnapshot { snapshot } => Some(snapshot.snapshot_id()),
            _ => None,
        })
        .collect()
}

pub(crate) fn encode(s: &str) -> String {
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

/// Decodes `%XX` escapes (for a `namespace-separator` given URL-encoded, as PyIceberg reads it).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(encode("\u{1f}"), "%1F");
        assert_eq!(decode("%1F"), "\u{1f}");
        assert_eq!(decode("a%2"), "a%2");
        assert_eq!(decode("."), ".");
    }
}
