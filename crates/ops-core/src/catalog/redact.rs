//! Keeps secrets out of errors, `Debug` output and logs.

use std::collections::BTreeMap;
use std::fmt;

const SECRET_MARKERS: [&str; 5] = ["secret", "token", "credential", "password", "session"];

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
