//! Keeps secrets out of errors, `Debug` output and logs.

use std::collections::BTreeMap;
use std::fmt;

/// Parts of property names that hold secrets. Beyond the obvious words these cover PyIceberg's
/// credential-bearing keys whose names say none of them (pyiceberg/io/__init__.py):
/// `adls.account-key`, `adls.connection-string` (it embeds `AccountKey=`), `hdfs.kerberos_ticket`; and the usual spellings of keys in headers and custom FileIO
/// properties (`api-key`, `private-key`, `passwd`).
const SECRET_MARKERS: [&str; 13] = [
    "secret",
    "token",
    "credential",
    "password",
    "passwd",
    "session",
    "account-key",
    "accountkey",
    "connection-string",
    "ticket",
    "api-key",
    "apikey",
    "private-key",
];

/// True when a property of this name holds a secret. Every `header.*` value counts: headers
/// carry API keys and tokens under names no list can anticipate (`X-Api-Key`, `X-Auth`, ...).
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.starts_with("header.") || SECRET_MARKERS.iter().any(|m| key.contains(m))
}

/// The value as it may be shown: secrets masked, a URI's password removed.
pub fn display_value(key: &str, value: &str) -> String {
    if is_secret_key(key) {
        return "***".to_string();
    }
    redact_uri_password(value)
}

/// `scheme://user:pass@host/..` → `scheme://user:***@host/..`; anything else unchanged.
pub fn redact_uri_password(value: &str) -> String {
    let Some(scheme_end) = value.find("://") else {
        return value.to_string();
    };
    let after = &value[scheme_end + 3..];
    let authority_end = after.find('/').unwrap_or(after.len());
    let authority = &after[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return value.to_string();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return value.to_string();
    };
    format!(
        "{}{}:***{}",
        &value[..scheme_end + 3],
        &userinfo[..colon],
        &after[at..]
    )
}

/// `Debug` for a property map with secrets masked.
pub struct Redacted<'a>(pub &'a BTreeMap<String, String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, display_value(k, v))))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked() {
        assert_eq!(display_value("s3.secret-access-key", "abc"), "***");
        assert_eq!(display_value("token", "abc"), "***");
        assert_eq!(display_value("credential", "id:secret"), "***");
        assert_eq!(display_value("s3.session-token", "x"), "***");
        assert_eq!(display_value("uri", "http://h:1"), "http://h:1");
        assert_eq!(display_value("header.X-Api-Key", "k-123"), "***");
        assert_eq!(display_value("header.x-tenant", "acme"), "***");
        assert_eq!(display_value("ssl.cabundle", "/etc/ca.pem"), "/etc/ca.pem");
    }

    /// Every credential-bearing key PyIceberg 0.12 defines (pyiceberg/io/__init__.py and the
    /// catalogs' modules) is masked; the non-secret neighbours are not.
    #[test]
    fn every_pyiceberg_credential_key_is_masked() {
        for key in [
            "s3.secret-access-key",
            "s3.session-token",
            "client.secret-access-key",
            "client.session-token",
            "glue.secret-access-key",
            "glue.session-token",
            "dynamodb.secret-access-key",
            "dynamodb.session-token",
            "adls.account-key",
            "adls.connection-string",
            "adls.sas-token",
            "adls.sas-token.myaccount.dfs.core.windows.net",
            "adls.credential",
            "adls.client-secret",
            "adls.token",
            "gcs.oauth2.token",
            "gcp.bigquery.credentials-info",
            "hf.token",
            "hdfs.kerberos_ticket",
            "token",
            "credential",
            "rest.signing-secret",
            "my.api-key",
            "ssl.client.private-key-password",
        ] {
            assert_eq!(display_value(key, "v4lue"), "***", "{key} was shown");
        }
        for key in [
            "adls.account-name",
            "adls.tenant-id",
            "s3.endpoint",
            "s3.region",
            "gcs.project-id",
            "hf.endpoint",
            "warehouse",
            "ssl.client.key",
        ] {
            assert_eq!(display_value(key, "v4lue"), "v4lue", "{key} was masked");
        }
    }

    #[test]
    fn uri_passwords_are_masked() {
        assert_eq!(
            redact_uri_password("postgresql://me:hunter2@db:5432/cat"),
            "postgresql://me:***@db:5432/cat"
        );
        assert_eq!(
            redact_uri_password("postgresql://me@db/cat"),
            "postgresql://me@db/cat"
        );
        assert_eq!(redact_uri_password("sqlite:///x.db"), "sqlite:///x.db");
    }
}
