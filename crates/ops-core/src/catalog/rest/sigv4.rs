//! SigV4 signing of REST catalog requests (AWS Glue's Iceberg REST endpoint, `glue`; S3
//! Tables', `s3tables`), as PyIceberg's `SigV4Adapter` does it: `rest.signing-name` (default
//! `execute-api`), `rest.signing-region` (else `client.region`, else the AWS chain's), the
//! identity from `client.access-key-id` / `client.secret-access-key` / `client.session-token`,
//! `client.profile-name`, or the standard AWS credential chain. An empty body is signed with an
//! explicit `x-amz-content-sha256` header, and a bearer token the request already carries moves
//! to `Original-Authorization`, as PyIceberg moves it.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use iceberg::{Error as IcebergError, ErrorKind};
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Mutex;

use super::RestOptions;
use super::client::RestClient;

/// SHA-256 of the empty string.
const EMPTY_BODY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

pub(crate) struct Signer {
    service: String,
    region: String,
    provider: SharedCredentialsProvider,
    /// Credentials until shortly before they expire (the chain's providers do not all cache).
    cached: Mutex<Option<Credentials>>,
}

impl Signer {
    pub(crate) async fn from_options(opts: &RestOptions) -> iceberg::Result<Signer> {
        let err = |message: String| {
            IcebergError::new(
                ErrorKind::DataInvalid,
                format!("catalog '{}': {message}", opts.catalog),
            )
        };
        // These may come from the server's /v1/config: checked before they reach the
        // credential scope of every Authorization header.
        for key in ["rest.signing-name", "rest.signing-region", "client.region"] {
            if let Some(v) = opts.get(key) {
                check_signing_part(key, v).map_err(err)?;
            }
        }
        let profile = opts.get("client.profile-name");
        let mut loader = crate::commit::aws_config_loader(&opts.catalog, profile)
            .map_err(|m| IcebergError::new(ErrorKind::DataInvalid, m))?;
        if let Some(profile) = profile {
            loader = loader.profile_name(profile);
        }
        let static_keys = match (
            opts.get("client.access-key-id"),
            opts.get("client.secret-access-key"),
        ) {
            (Some(id), Some(secret)) => Some(Credentials::new(
                id,
                secret,
                opts.get("client.session-token").map(str::to_string),
                None,
                "iceberg-ops catalog properties",
            )),
            (None, None) => None,
            (Some(_), None) => {
                return Err(err(
                    "`client.access-key-id` is set without `client.secret-access-key`".into(),
                ));
            }
            (None, Some(_)) => {
                return Err(err(
                    "`client.secret-access-key` is set without `client.access-key-id`".into(),
                ));
            }
        };
        if let Some(creds) = static_keys.clone() {
            loader = loader.credentials_provider(creds);
        }
        let region_key = opts
            .get("rest.signing-region")
            .or_else(|| opts.get("client.region"));
        if let Some(region) = region_key {
            loader = loader.region(aws_config::Region::new(region.to_string()));
        }
        let config = loader.load().await;
        let region = config.region().map(|r| r.to_string()).ok_or_else(|| {
            err(
                "`rest.sigv4-enabled` needs a region: set `rest.signing-region` (or \
                 `client.region`, or AWS_REGION)"
                    .into(),
            )
        })?;
        let provider = config.credentials_provider().ok_or_else(|| {
            err(
                "`rest.sigv4-enabled` found no AWS credentials provider: set \
                 `client.access-key-id` and `client.secret-access-key`, `client.profile-name`, \
                 or the standard AWS variables"
                    .into(),
            )
        })?;
        Ok(Signer {
            service: opts
                .get("rest.signing-name")
                .unwrap_or("execute-api")
                .to_string(),
            region,
            provider,
            cached: Mutex::new(None),
        })
    }

    async fn credentials(&self, client: &RestClient) -> iceberg::Result<Credentials> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && c.expiry()
                .is_none_or(|at| SystemTime::now() + Duration::from_secs(300) < at)
        {
            return Ok(c.clone());
        }
        let fresh = self.provider.provide_credentials().await.map_err(|e| {
            client.error(
                ErrorKind::Unexpected,
                format!(
                    "cannot load AWS credentials to sign with ({}); set `client.access-key-id` \
                     and `client.secret-access-key`, `client.profile-name`, or the standard AWS \
                     variables",
                    crate::http::chain_message(&e)
                ),
            )
        })?;
        *cached = Some(fresh.clone());
        Ok(fresh)
    }

    /// Adds the SigV4 headers to `headers` for this request.
    pub(crate) async fn sign(
        &self,
        client: &RestClient,
        method: &Method,
        url: &reqwest::Url,
        headers: &mut HeaderMap,
        body: &[u8],
    ) -> iceberg::Result<()> {
        let fail = |e: &dyn std::fmt::Display| {
            client.error(
                ErrorKind::Unexpected,
                format!("cannot sign {method} {url}: {e}"),
            )
        };
        if let Some(bearer) = headers.remove(reqwest::header::AUTHORIZATION) {
            headers.insert(HeaderName::from_static("original-authorization"), bearer);
        }
        if body.is_empty() {
            headers.insert(
                HeaderName::from_static("x-amz-content-sha256"),
                HeaderValue::from_static(EMPTY_BODY_SHA256),
            );
        }
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(fail(&"the URL has no host")),
        };
        headers.insert(
            reqwest::header::HOST,
            HeaderValue::try_from(host).map_err(|e| fail(&e))?,
        );
        let identity: Identity = self.credentials(client).await?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(signing_settings())
            .build()
            .map_err(|e| fail(&e))?
            .into();
        let signed = signable_headers(headers).map_err(|e| fail(&e))?;
        let signable = SignableRequest::new(
            method.as_str(),
            url.as_str(),
            signed.into_iter(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| fail(&e))?;
        let (instructions, _) = sign(signable, &params).map_err(|e| fail(&e))?.into_parts();
        let (new_headers, _) = instructions.into_parts();
        for header in new_headers {
            let name = HeaderName::try_from(header.name()).map_err(|e| fail(&e))?;
            let mut value = HeaderValue::try_from(header.value()).map_err(|e| fail(&e))?;
            value.set_sensitive(header.sensitive());
            headers.insert(name, value);
        }
        Ok(())
    }
}

/// The headers to sign: all but the bearer moved aside (PyIceberg adds it back after signing).
/// A value SigV4 cannot sign (not visible ASCII, e.g. a `header.*` value with UTF-8 in it) is an
/// error naming the header, never silently left unsigned; the value itself is not repeated.
fn signable_headers(headers: &HeaderMap) -> Result<Vec<(&str, &str)>, String> {
    headers
        .iter()
        .filter(|(name, _)| name.as_str() != "original-authorization")
        .map(|(name, value)| {
            value.to_str().map(|v| (name.as_str(), v)).map_err(|_| {
                format!(
                    "the value of header `{name}` is not plain ASCII, which SigV4 cannot sign; \
                     check the `header.{name}` property"
                )
            })
        })
        .collect()
}

/// A signing name or region: what AWS names are made of (`glue`, `s3tables`, `eu-west-1`).
/// Anything else would corrupt the credential scope (a `/`) or the header (a line break).
fn check_signing_part(key: &str, value: &str) -> Result<(), String> {
    if value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Ok(())
    } else {
        Err(format!(
            "`{key}` is {value:?}; an AWS service name or region holds only letters, digits, \
             '-', '_' and '.'"
        ))
    }
}

/// The settings botocore's `SigV4Auth` signs with for a non-S3 service: the path
/// double-encoded and normalised, no payload-hash header added.
fn signing_settings() -> SigningSettings {
    SigningSettings::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsignable_header_values_are_errors_naming_the_header() {
        let mut headers = HeaderMap::new();
        headers.insert("x-ok", HeaderValue::from_static("fine"));
        assert_eq!(signable_headers(&headers).map(|h| h.len()), Ok(1));
        let mut value = HeaderValue::from_bytes("caf\u{e9}-secret".as_bytes())
            .unwrap_or(HeaderValue::from_static("x"));
        value.set_sensitive(true);
        headers.insert("x-tenant", value);
        let err = signable_headers(&headers).err().unwrap_or_default();
        assert!(err.contains("`x-tenant`"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn signing_names_are_checked() {
        assert!(check_signing_part("rest.signing-name", "s3tables").is_ok());
        assert!(check_signing_part("rest.signing-region", "eu-west-1").is_ok());
        for bad in ["glue/x", "glue\nX-Evil: 1", "eu west"] {
            let err = check_signing_part("rest.signing-region", bad)
                .err()
                .unwrap_or_default();
            assert!(err.contains("`rest.signing-region`"), "{bad}: {err}");
        }
    }
}
