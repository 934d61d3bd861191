//! SigV4-signed HTTP requests with the `aws-sigv4` crate, credentials and region from the
//! standard AWS chain (aws-config). Used for S3 Tables and, by the emulator, for S3 and Glue.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::{Error, Result};

/// Where credentials and region come from, and the service to sign for.
#[derive(Debug, Clone)]
pub struct Signer {
    credentials: SharedCredentialsProvider,
    region: String,
    service: String,
}

impl Signer {
    /// A signer with fixed credentials.
    pub fn new(credentials: Credentials, region: impl Into<String>, service: &str) -> Self {
        Signer {
            credentials: SharedCredentialsProvider::new(credentials),
            region: region.into(),
            service: service.to_string(),
        }
    }

    /// A signer from the standard AWS chain (environment, profile, IMDS, ...); `region`
    /// overrides the chain's region.
    pub async fn from_env(region: Option<String>, service: &str) -> Result<Self> {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(r) = region.clone() {
            loader = loader.region(aws_config::Region::new(r));
        }
        let config = loader.load().await;
        let credentials = config.credentials_provider().ok_or_else(|| {
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
            credentials,
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
        let creds = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| Error::Config(format!("cannot load AWS credentials: {e}")))?;
        let identity: Identity = creds.into();
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
