//! Vended S3 credentials renewed before they expire.
//!
//! A REST catalog that vends storage credentials (Polaris, Lakekeeper, Glue's and S3 Tables'
//! endpoints) hands out STS session credentials with an expiry,
//! `s3.session-token-expires-at-ms`, in a table's `config` or `storage-credentials`. Passed to
//! OpenDAL as static keys they would be used until S3 refuses them, so a migration or a scan that
//! outlives them fails halfway. Java's `VendedCredentialsProvider` asks the catalog again before
//! they run out; this does the same: the table is loaded again (every REST catalog serves that,
//! and answers with fresh credentials) a margin ahead of the expiry, and OpenDAL's signer, which
//! caches what it is given until two minutes before its expiry, asks this provider again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iceberg::TableIdent;
use iceberg_catalog_rest::LoadTableResult;
use iceberg_storage_opendal::{AwsCredential, CustomAwsCredentialLoader, ProvideCredential};
use reqsign_core::time::Timestamp;
use reqwest::{Method, StatusCode};
use tokio::sync::Mutex;

use super::client::RestClient;

/// The key under which REST catalogs give the expiry of vended S3 credentials (epoch millis).
pub(crate) const EXPIRES_AT_MS: &str = "s3.session-token-expires-at-ms";
const ACCESS_KEY_ID: &str = "s3.access-key-id";
const SECRET_ACCESS_KEY: &str = "s3.secret-access-key";
const SESSION_TOKEN: &str = "s3.session-token";

/// Vended credentials as the FileIO properties hold them.
#[derive(Clone)]
struct Vended {
    credential: AwsCredential,
    expires_at: SystemTime,
    /// When they were received: the lifetime sets the renewal margin.
    received: SystemTime,
}

impl Vended {
    /// The expiring S3 credentials in `props`, if there are any.
    fn from_props(props: &BTreeMap<String, String>) -> Option<Vended> {
        let expires_ms: u64 = props.get(EXPIRES_AT_MS)?.trim().parse().ok()?;
        let credential = AwsCredential {
            access_key_id: props.get(ACCESS_KEY_ID)?.clone(),
            secret_access_key: props.get(SECRET_ACCESS_KEY)?.clone(),
            session_token: props.get(SESSION_TOKEN).cloned(),
            expires_in: Timestamp::from_millisecond(i64::try_from(expires_ms).ok()?).ok(),
        };
        Some(Vended {
            credential,
            expires_at: UNIX_EPOCH + Duration::from_millis(expires_ms),
            received: SystemTime::now(),
        })
    }

    /// Whether it is time to ask for new ones: a fifth of their lifetime ahead of the expiry,
    /// at most two minutes (OpenDAL's signer stops caching credentials two minutes ahead) and
    /// at least fifteen seconds (its SigV4 signer refuses credentials with less than ten
    /// seconds left).
    fn due(&self, now: SystemTime) -> bool {
        let lifetime = self
            .expires_at
            .duration_since(self.received)
            .unwrap_or_default();
        let margin = (lifetime / 5).clamp(Duration::from_secs(15), Duration::from_secs(120));
        now + margin >= self.expires_at
    }
}

/// Supplies a table's vended S3 credentials to OpenDAL, loading the table again when they are
/// about to expire.
pub(crate) struct VendedS3Credentials {
    client: Arc<RestClient>,
    table: TableIdent,
    /// How the FileIO properties are put together from a load result (the catalog's rule).
    merge: fn(&RestClient, LoadTableResult) -> BTreeMap<String, String>,
    current: Mutex<Vended>,
}

impl std::fmt::Debug for VendedS3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials themselves.
        f.debug_struct("VendedS3Credentials")
            .field("catalog", &self.client.catalog())
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl VendedS3Credentials {
    /// A loader for `table` when `props` (its FileIO properties) hold expiring S3 credentials;
    /// `None` for static keys or none at all, which need no renewal.
    pub(crate) fn loader(
        client: Arc<RestClient>,
        table: TableIdent,
        props: &BTreeMap<String, String>,
        merge: fn(&RestClient, LoadTableResult) -> BTreeMap<String, String>,
    ) -> Option<CustomAwsCredentialLoader> {
        let current = Vended::from_props(props)?;
        Some(CustomAwsCredentialLoader::new(VendedS3Credentials {
            client,
            table,
            merge,
            current: Mutex::new(current),
        }))
    }

    async fn reload(&self) -> Result<Vended, String> {
        let reply = self
            .client
            .call(Method::GET, &self.client.table_url(&self.table), &[], None)
            .await
            .map_err(|e| e.to_string())?;
        if reply.status != StatusCode::OK {
            return Err(self.client.unexpected(&reply).to_string());
        }
        let result: LoadTableResult = self.client.parse(&reply).map_err(|e| e.to_string())?;
        let props = (self.merge)(&self.client, result);
        Vended::from_props(&props).ok_or_else(|| {
            format!(
                "catalog '{}': loading table {} again returned no expiring S3 credentials \
                 (`{ACCESS_KEY_ID}`, `{SECRET_ACCESS_KEY}`, `{EXPIRES_AT_MS}`)",
                self.client.catalog(),
                self.table
            )
        })
    }
}

impl ProvideCredential for VendedS3Credentials {
    type Credential = AwsCredential;

    async fn provide_credential(
        &self,
        _ctx: &reqsign_core::Context,
    ) -> reqsign_core::Result<Option<AwsCredential>> {
        let mut current = self.current.lock().await;
        let now = SystemTime::now();
        if !current.due(now) {
            return Ok(Some(current.credential.clone()));
        }
        tracing::debug!(
            catalog = %self.client.catalog(),
            table = %self.table,
            "vended S3 credentials expire soon: loading the table for new ones"
        );
        match self.reload().await {
            Ok(fresh) => {
                *current = fresh;
                Ok(Some(current.credential.clone()))
            }
            // Renewing ahead of time may fail while the current ones still work.
            Err(message) if now < current.expires_at => {
                tracing::warn!(
                    catalog = %self.client.catalog(),
                    table = %self.table,
                    error = %message,
                    "renewing vended S3 credentials failed; using the current ones until they expire"
                );
                Ok(Some(current.credential.clone()))
            }
            Err(message) => Err(reqsign_core::Error::credential_invalid(format!(
                "the vended S3 credentials of table {} expired and could not be renewed: {message}",
                self.table
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(expires_in: Duration) -> BTreeMap<String, String> {
        let at = SystemTime::now() + expires_in;
        let ms = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        BTreeMap::from([
            (ACCESS_KEY_ID.to_string(), "AKID".to_string()),
            (SECRET_ACCESS_KEY.to_string(), "secret".to_string()),
            (SESSION_TOKEN.to_string(), "token".to_string()),
            (EXPIRES_AT_MS.to_string(), ms.to_string()),
        ])
    }

    #[test]
    fn only_expiring_credentials_are_renewed() {
        let mut p = props(Duration::from_secs(3600));
        assert!(Vended::from_props(&p).is_some());
        p.remove(EXPIRES_AT_MS);
        assert!(
            Vended::from_props(&p).is_none(),
            "static keys need no renewal"
        );
        let mut p = props(Duration::from_secs(3600));
        p.remove(SECRET_ACCESS_KEY);
        assert!(Vended::from_props(&p).is_none());
    }

    #[test]
    fn renewal_is_due_a_margin_ahead_of_expiry() {
        let now = SystemTime::now();
        let hour = Vended::from_props(&props(Duration::from_secs(3600))).expect("complete");
        assert!(!hour.due(now));
        assert!(!hour.due(now + Duration::from_secs(3600 - 121)));
        assert!(hour.due(now + Duration::from_secs(3600 - 119)));
        let short = Vended::from_props(&props(Duration::from_secs(60))).expect("complete");
        assert!(!short.due(now + Duration::from_secs(44)));
        assert!(short.due(now + Duration::from_secs(46)));
    }
}
