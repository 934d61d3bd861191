//! SigV4-signed HTTP requests with the `aws-sigv4` crate, credentials and region from the
//! standard AWS chain (aws-config). Used for S3 Tables and, by the guard and the emulator, for
//! S3 and Glue.
//!
//! Credentials go through aws-config's identity cache (the lazy cache the SDK clients use), so
//! a chain that assumes a role, reads a profile's SSO token or asks IMDS is asked once and again
//! only shortly before the credentials expire, not once per request.

use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_async::rt::sleep::{SharedAsyncSleep, default_async_sleep};
use aws_smithy_async::time::SharedTimeSource;
use aws_smithy_runtime::client::auth::no_auth::NoAuthScheme;
use aws_smithy_runtime::client::identity::IdentityCache;
use aws_smithy_runtime::client::orchestrator::endpoints::StaticUriEndpointResolver;
use aws_smithy_runtime::client::retries::strategy::NeverRetryStrategy;
use aws_smithy_runtime_api::client::auth::AuthSchemeId;
use aws_smithy_runtime_api::client::auth::static_resolver::StaticAuthSchemeOptionResolver;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_runtime_api::client::identity::{
    ResolveCachedIdentity, SharedIdentityCache, SharedIdentityResolver,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use crate::{Error, Result};

/// The SigV4 scheme the cached identity is resolved for.
const SIGV4: AuthSchemeId = AuthSchemeId::new("sigv4");

/// Credentials behind aws-config's identity cache.
#[derive(Clone)]
struct CachedCredentials {
    provider: SharedCredentialsProvider,
    /// `None` only where no async sleep exists to run the cache (not with tokio): then the
    /// provider is asked directly.
    cache: Option<Cache>,
}

#[derive(Clone)]
struct Cache {
    /// One resolver for the signer's life: the cache is partitioned by resolver.
    resolver: SharedIdentityResolver,
    cache: SharedIdentityCache,
    /// What the cache needs to run: a time source and a sleep (the rest is inert).
    components: Arc<RuntimeComponents>,
}

impl std::fmt::Debug for CachedCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedCredentials")
            .field("cached", &self.cache.is_some())
            .finish()
    }
}

impl CachedCredentials {
    fn new(
        provider: SharedCredentialsProvider,
        cache: Option<SharedIdentityCache>,
        time: Option<SharedTimeSource>,
        sleep: Option<SharedAsyncSleep>,
    ) -> Self {
        let cache = Self::cache(&provider, cache, time, sleep)
            .map_err(|e| tracing::warn!(error = %e, "no credentials cache; asking the provider each time"))
            .ok();
        CachedCredentials { provider, cache }
    }

    fn cache(
        provider: &SharedCredentialsProvider,
        cache: Option<SharedIdentityCache>,
        time: Option<SharedTimeSource>,
        sleep: Option<SharedAsyncSleep>,
    ) -> Result<Cache> {
        let sleep = sleep.or_else(default_async_sleep).ok_or_else(|| {
            Error::Config("no async sleep implementation for the credentials cache".into())
        })?;
        let cache = cache.unwrap_or_else(|| IdentityCache::lazy().build());
        let resolver = SharedIdentityResolver::new(provider.clone());
        let components = RuntimeComponents::builder("ops-s3tables credentials cache")
            .with_time_source(Some(time.unwrap_or_default()))
            .with_sleep_impl(Some(sleep))
            .with_identity_cache(Some(cache.clone()))
            .with_identity_resolver(SIGV4, resolver.clone())
            .with_auth_scheme(NoAuthScheme::new())
            .with_auth_scheme_option_resolver(Some(StaticAuthSchemeOptionResolver::new(vec![
                SIGV4,
            ])))
            .with_endpoint_resolver(Some(StaticUriEndpointResolver::uri("http://unused")))
            .with_retry_strategy(Some(NeverRetryStrategy::new()))
            .build()
            .map_err(|e| Error::Config(format!("credentials cache: {e}")))?;
        Ok(Cache {
            resolver,
            cache,
            components: Arc::new(components),
        })
    }

    async fn credentials(&self) -> Result<Credentials> {
        let load =
            |e: &dyn std::fmt::Display| Error::Config(format!("cannot load AWS credentials: {e}"));
        let Some(c) = &self.cache else {
            return self
                .provider
                .provide_credentials()
                .await
                .map_err(|e| load(&e));
        };
        let bag = ConfigBag::base();
        let identity = c
            .cache
            .resolve_cached_identity(c.resolver.clone(), &c.components, &bag)
            .await
            .map_err(|e| load(&e))?;
        identity.data::<Credentials>().cloned().ok_or_else(|| {
            Error::Config("the credentials cache returned no AWS credentials".into())
        })
    }
}

/// Where credentials and region come from, and the service to sign for.
#[derive(Debug, Clone)]
pub struct Signer {
    credentials: CachedCredentials,
    region: String,
    service: String,
}

impl Signer {
    /// A signer with fixed credentials.
    pub fn new(credentials: Credentials, region: impl Into<String>, service: &str) -> Self {
        Self::with_provider(SharedCredentialsProvider::new(credentials), region, service)
    }

    /// A signer over any credentials provider, cached by aws-config's lazy identity cache.
    pub fn with_provider(
        provider: impl ProvideCredentials + 'static,
        region: impl Into<String>,
        service: &str,
    ) -> Self {
        Signer {
            credentials: CachedCredentials::new(
                SharedCredentialsProvider::new(provider),
                None,
                None,
                None,
            ),
            region: region.into(),
            service: service.to_string(),
        }
    }

    /// A signer from the standard AWS chain (environment, profile, SSO, IMDS, ...) behind the
    /// chain's identity cache; `region` overrides the chain's region. The chain's own calls
    /// (STS, SSO, IMDS, container credentials) trust what the AWS CLI would:
    /// `AWS_CA_BUNDLE`, else the profile's `ca_bundle`, else the default roots.
    pub async fn from_env(region: Option<String>, service: &str) -> Result<Self> {
        let bundle = ops_core::http::aws_ca_bundle(None);
        Self::from_env_trusting(region, service, bundle.as_deref()).await
    }

    /// [`Signer::from_env`] with the credential chain's calls trusting exactly the CA
    /// certificates in `ca_bundle` (the default roots when `None`), as every other client of
    /// the S3 Tables commands does.
    pub async fn from_env_trusting(
        region: Option<String>,
        service: &str,
        ca_bundle: Option<&std::path::Path>,
    ) -> Result<Self> {
        let mut loader = ops_core::http::aws_config_loader(ca_bundle)
            .map_err(|e| Error::Config(e.to_string()))?;
        if let Some(r) = region.clone() {
            loader = loader.region(aws_config::Region::new(r));
        }
        let config = loader.load().await;
        let provider = config.credentials_provider().ok_or_else(|| {
            Error::Config(
                "no AWS credentials provider found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY \
                 or AWS_PROFILE"
                    .into(),
            )
        })?;
        let region = config.region().map(|r| r.to_string()).ok_or_else(|| {
            Error::Config("no AWS region; set AWS_REGION or pass --region".into())
        })?;
        Ok(Signer {
            credentials: CachedCredentials::new(
                provider,
                config.identity_cache(),
                config.time_source(),
                config.sleep_impl(),
            ),
            region,
            service: service.to_string(),
        })
    }

    /// The same credentials and region, signing for another service (e.g. `s3`, `glue`).
    pub fn for_service(&self, service: &str) -> Self {
        Signer {
            service: service.to_string(),
            ..self.clone()
        }
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// Signs a request and returns the headers to add (`authorization`, `x-amz-date`, ...).
    /// `url` must be already percent-encoded exactly as it will be sent.
    pub async fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>> {
        let identity: Identity = self.credentials.credentials().await?.into();
        let mut settings = SigningSettings::default();
        if self.service == "s3" {
            // S3 signs the path as sent (single encoding, no normalisation) and wants the
            // payload hash header.
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| Error::Config(format!("signing parameters: {e}")))?
            .into();
        let signable = SignableRequest::new(
            method,
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| Error::Config(format!("cannot sign {method} {url}: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| Error::Config(format!("cannot sign {method} {url}: {e}")))?
            .into_parts();
        let (headers, _) = instructions.into_parts();
        Ok(headers
            .into_iter()
            .map(|h| (h.name().to_string(), h.value().to_string()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use aws_credential_types::provider::future;

    use super::*;

    /// A provider that counts how often it is asked.
    #[derive(Debug)]
    struct Counting(Arc<AtomicUsize>);

    impl ProvideCredentials for Counting {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            self.0.fetch_add(1, Ordering::SeqCst);
            future::ProvideCredentials::ready(Ok(Credentials::new(
                "AKID",
                "secret",
                Some("token".into()),
                Some(SystemTime::now() + Duration::from_secs(3600)),
                "counting",
            )))
        }
    }

    #[tokio::test]
    async fn credentials_come_from_the_identity_cache_not_per_request() -> anyhow::Result<()> {
        let calls = Arc::new(AtomicUsize::new(0));
        let signer = Signer::with_provider(Counting(calls.clone()), "us-east-1", "s3tables");
        let url = "https://s3tables.us-east-1.amazonaws.com/get-table-migration?migrationId=m";
        let host = [("host", "s3tables.us-east-1.amazonaws.com")];
        for _ in 0..5 {
            let headers = signer.sign("GET", url, &host, b"").await?;
            assert!(
                headers
                    .iter()
                    .any(|(k, v)| k == "x-amz-security-token" && v == "token"),
                "{headers:?}"
            );
        }
        // Signing for S3 and Glue with the same signer shares the cache.
        signer
            .for_service("s3")
            .sign("GET", url, &host, b"")
            .await?;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        Ok(())
    }
}
