//! SigV4 verification as the service does it: the emulator recomputes each request's signature
//! with `aws-sigv4` from the secret of the access key the request names, over exactly the
//! headers the request says it signed, and refuses (403) an unknown key, a scope for another
//! region or service, a stale date, or a signature that does not match.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::http_server::Request;

/// How far a request's `x-amz-date` may be from the emulator's clock (the service's limit).
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// Why a request was refused: the error type and message the service would send (403).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `MissingAuthenticationTokenException`, `UnrecognizedClientException`,
    /// `InvalidSignatureException`.
    pub error_type: &'static str,
    /// The message.
    pub message: String,
}

fn refuse(error_type: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        error_type,
        message: message.into(),
    }
}

/// The callers the emulator knows: access key ID → secret, the region and the signing name.
#[derive(Debug, Clone)]
pub struct Verifier {
    keys: BTreeMap<String, String>,
    region: String,
    service: String,
}

struct Authorization<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse_authorization(v: &str) -> Option<Authorization<'_>> {
    let rest = v.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (k, val) = part.trim().split_once('=')?;
        match k {
            "Credential" => credential = Some(val),
            "SignedHeaders" => signed = Some(val),
            "Signature" => signature = Some(val),
            _ => {}
        }
    }
    let mut scope = credential?.split('/');
    let auth = Authorization {
        access_key: scope.next()?,
        date: scope.next()?,
        region: scope.next()?,
        service: scope.next()?,
        signed_headers: signed?.split(';').collect(),
        signature: signature?,
    };
    (scope.next()? == "aws4_request").then_some(auth)
}

fn parse_amz_date(v: &str) -> Option<SystemTime> {
    let t = chrono::NaiveDateTime::parse_from_str(v, "%Y%m%dT%H%M%SZ").ok()?;
    let secs = u64::try_from(t.and_utc().timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

impl Verifier {
    /// Accepts requests signed with any of `keys` (access key ID, secret) for `region` and
    /// `service`.
    pub fn new(
        keys: impl IntoIterator<Item = (String, String)>,
        region: impl Into<String>,
        service: impl Into<String>,
    ) -> Self {
        Verifier {
            keys: keys.into_iter().collect(),
            region: region.into(),
            service: service.into(),
        }
    }

    /// Checks `req`'s signature at `now`.
    pub fn verify(&self, req: &Request, now: SystemTime) -> Result<(), Refused> {
        let Some(header) = req.header("authorization") else {
            return Err(refuse(
                "MissingAuthenticationTokenException",
                "Missing Authentication Token",
            ));
        };
        let auth = parse_authorization(header).ok_or_else(|| {
            refuse(
                "IncompleteSignatureException",
                // The value is never echoed (into the answer or the logs): it can carry a
                // credential of another scheme.
                "Authorization header is not a SigV4 signature (AWS4-HMAC-SHA256 Credential=..., \
                 SignedHeaders=..., Signature=...)",
            )
        })?;
        let Some(secret) = self.keys.get(auth.access_key) else {
            return Err(refuse(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            ));
        };
        if auth.region != self.region || auth.service != self.service {
            return Err(refuse(
                "InvalidSignatureException",
                format!(
                    "Credential should be scoped to a valid region and service: expected {}/{}, \
                     got {}/{}",
                    self.region, self.service, auth.region, auth.service
                ),
            ));
        }
        let amz_date = req.header("x-amz-date").unwrap_or_default();
        let Some(time) = parse_amz_date(amz_date) else {
            return Err(refuse(
                "IncompleteSignatureException",
                "the request has no valid x-amz-date",
            ));
        };
        if !amz_date.starts_with(auth.date) {
            return Err(refuse(
                "InvalidSignatureException",
                "Credential should be scoped to the date of x-amz-date",
            ));
        }
        let skew = now.duration_since(time).unwrap_or_else(|e| e.duration());
        if skew > MAX_SKEW {
            return Err(refuse(
                "InvalidSignatureException",
                format!("Signature expired: {amz_date} is more than 15 minutes from now"),
            ));
        }
        if !auth.signed_headers.contains(&"host") {
            return Err(refuse(
                "InvalidSignatureException",
                "the host header must be signed",
            ));
        }
        let token = req.header("x-amz-security-token").map(str::to_string);
        let identity: Identity =
            Credentials::new(auth.access_key, secret, token, None, "emulator").into();
        let mut headers = Vec::new();
        for name in &auth.signed_headers {
            let Some(value) = req.header(name) else {
                return Err(refuse(
                    "InvalidSignatureException",
                    format!("signed header {name} is missing from the request"),
                ));
            };
            headers.push((*name, value));
        }
        let mut settings = SigningSettings::default();
        // Sign exactly what the caller says it signed.
        settings.excluded_headers = Some(Vec::new());
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| refuse("InvalidSignatureException", e.to_string()))?
            .into();
        let signable = SignableRequest::new(
            &req.method,
            req.target.as_str(),
            headers.iter().copied(),
            SignableBody::Bytes(&req.body),
        )
        .map_err(|e| refuse("InvalidSignatureException", e.to_string()))?;
        let (instructions, expected) = sign(signable, &params)
            .map_err(|e| refuse("InvalidSignatureException", e.to_string()))?
            .into_parts();
        let (computed_headers, _) = instructions.into_parts();
        let computed_signed = computed_headers
            .iter()
            .find(|h| h.name().eq_ignore_ascii_case("authorization"))
            .and_then(|h| parse_authorization(h.value()).map(|a| a.signed_headers.join(";")));
        let matches = constant_time_eq(expected.as_bytes(), auth.signature.as_bytes())
            && computed_signed.as_deref() == Some(auth.signed_headers.join(";").as_str());
        if !matches {
            return Err(refuse(
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided. \
                 Check your AWS Secret Access Key and signing method.",
            ));
        }
        Ok(())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Signer;

    async fn signed(
        secret: &str,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> anyhow::Result<Request> {
        let signer = Signer::new(
            Credentials::new("AKID", secret, None, None, "test"),
            "us-east-1",
            "s3tables",
        );
        let url = format!("https://127.0.0.1:7000{target}");
        let mut headers = vec![("host".to_string(), "127.0.0.1:7000".to_string())];
        if !body.is_empty() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (k, v) in signer.sign(method, &url, &pairs, body).await? {
            headers.push((k.to_ascii_lowercase(), v));
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Ok(Request {
            method: method.into(),
            target: target.into(),
            path: path.into(),
            segments: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| crate::http_server::percent_decode(s, false))
                .collect(),
            query: query
                .split('&')
                .filter(|p| !p.is_empty())
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.to_string(), crate::http_server::percent_decode(v, true)))
                .collect(),
            headers,
            body: body.to_vec(),
        })
    }

    fn verifier() -> Verifier {
        Verifier::new(
            [("AKID".to_string(), "secret".to_string())],
            "us-east-1",
            "s3tables",
        )
    }

    #[tokio::test]
    async fn a_malformed_authorization_header_is_not_echoed() -> anyhow::Result<()> {
        let mut req = signed("secret", "GET", "/get-table-migration?migrationId=m", b"").await?;
        for (k, v) in &mut req.headers {
            if k.as_str() == "authorization" {
                *v = "Bearer sekrit-token-123".into();
            }
        }
        match verifier().verify(&req, SystemTime::now()) {
            Err(refused) => {
                assert_eq!(refused.error_type, "IncompleteSignatureException");
                assert!(!refused.message.contains("sekrit"), "{}", refused.message);
            }
            Ok(()) => anyhow::bail!("a Bearer header was accepted"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_request_signed_with_the_known_secret_passes() -> anyhow::Result<()> {
        let target = "/get-table-migration?tableARN=arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb%2Ftable%2Ft";
        let req = signed("secret", "GET", target, b"").await?;
        verifier()
            .verify(&req, SystemTime::now())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let req = signed("secret", "POST", "/start-table-migration", br#"{"a":1}"#).await?;
        verifier()
            .verify(&req, SystemTime::now())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let req = signed(
            "secret",
            "GET",
            "/tables/arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb/ns/t/metadata-location",
            b"",
        )
        .await?;
        verifier()
            .verify(&req, SystemTime::now())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        Ok(())
    }

    #[tokio::test]
    async fn wrong_secret_tampering_staleness_and_unknown_keys_are_refused() -> anyhow::Result<()> {
        let v = verifier();
        let wrong = signed(
            "not-the-secret",
            "GET",
            "/get-table-migration?migrationId=m",
            b"",
        )
        .await?;
        assert_eq!(
            v.verify(&wrong, SystemTime::now())
                .map_err(|e| e.error_type),
            Err("InvalidSignatureException")
        );
        let mut tampered =
            signed("secret", "POST", "/start-table-migration", br#"{"a":1}"#).await?;
        tampered.body = br#"{"a":2}"#.to_vec();
        assert!(v.verify(&tampered, SystemTime::now()).is_err());
        let mut query = signed("secret", "GET", "/get-table-migration?migrationId=m", b"").await?;
        query.target = "/get-table-migration?migrationId=other".into();
        assert!(v.verify(&query, SystemTime::now()).is_err());
        let ok = signed("secret", "GET", "/get-table-migration?migrationId=m", b"").await?;
        let later = SystemTime::now() + Duration::from_secs(16 * 60);
        assert_eq!(
            v.verify(&ok, later).map_err(|e| e.error_type),
            Err("InvalidSignatureException")
        );
        let other = Verifier::new(
            [("OTHER".to_string(), "secret".to_string())],
            "us-east-1",
            "s3tables",
        );
        assert_eq!(
            other
                .verify(&ok, SystemTime::now())
                .map_err(|e| e.error_type),
            Err("UnrecognizedClientException")
        );
        let mut unsigned = ok.clone();
        unsigned.headers.retain(|(k, _)| k != "authorization");
        assert_eq!(
            v.verify(&unsigned, SystemTime::now())
                .map_err(|e| e.error_type),
            Err("MissingAuthenticationTokenException")
        );
        let glue = Verifier::new(
            [("AKID".to_string(), "secret".to_string())],
            "us-east-1",
            "glue",
        );
        assert!(glue.verify(&ok, SystemTime::now()).is_err());
        Ok(())
    }
}
