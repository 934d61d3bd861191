//! HTTP clients: rustls with one explicitly chosen crypto provider, the trust store and client
//! certificate of a catalog's `ssl.*` keys, connect and read timeouts, and the retry policy
//! every REST read and commit goes through.
//!
//! Trust follows PyIceberg, whose `requests` session this replaces:
//!
//! - by default the server certificate must chain to a root in webpki's bundle (Mozilla's) or in
//!   the platform's store, which `SSL_CERT_FILE` / `SSL_CERT_DIR` replace (OpenSSL's variables,
//!   read by rustls-native-certs);
//! - `ssl.cabundle: /path/ca.pem` trusts exactly the certificates in that file (`requests`'
//!   `verify=path`); `ssl.cabundle: false` turns verification off, with a warning;
//! - `ssl.client.cert` + `ssl.client.key` (or one PEM holding both in `ssl.client.cert`)
//!   present a client certificate (mutual TLS).
//!
//! The crypto provider is aws-lc-rs, which the AWS SDK clients already build; ring is never
//! asked for. [`install_crypto_provider`] makes it the process default, so any rustls user that
//! asks for the default (reqwest clients built without a preconfigured TLS config, opendal's
//! reqwest) gets the same one rather than a panic.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Installs aws-lc-rs as rustls' process-wide crypto provider, unless one is installed already.
///
/// Call it first thing in `main` (and in test servers); ops-core also calls it before building
/// any client, so library users need not. Idempotent and cheap.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another thread installing one is fine: either way a provider is
        // installed. Other crates may build rustls with ring too (sqlx, the S3 Tables client);
        // with two providers compiled in, rustls has no default until one is installed.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    install_crypto_provider();
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

/// Which certificates a client trusts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// webpki's roots plus the platform's (or `SSL_CERT_FILE` / `SSL_CERT_DIR`).
    #[default]
    Default,
    /// Exactly the certificates in this PEM file (`ssl.cabundle`).
    CaBundle(PathBuf),
    /// No verification at all (`ssl.cabundle: false`).
    Disabled,
}

/// TLS settings of one client.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsOptions {
    /// Server certificate trust.
    pub trust: Trust,
    /// Client certificate chain (PEM), for mutual TLS.
    pub client_cert: Option<PathBuf>,
    /// Its private key (PEM); `None` when the key is in `client_cert`'s file.
    pub client_key: Option<PathBuf>,
}

/// Why a TLS configuration could not be built; names the file and, through [`TlsError::key`],
/// the catalog key that pointed at it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A CA bundle could not be read or holds no certificate.
    #[error("CA bundle {}: {reason}", path.display())]
    CaBundle {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The client certificate or key could not be read or does not fit.
    #[error("client certificate {}: {reason}", path.display())]
    ClientCert {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl TlsError {
    /// The PyIceberg key that names the offending file.
    pub fn key(&self) -> &'static str {
        match self {
            TlsError::CaBundle { .. } => "ssl.cabundle",
            TlsError::ClientCert { .. } => "ssl.client.cert",
        }
    }
}

/// A rustls client configuration for `tls` (ALPN left to the HTTP client).
pub fn rustls_config(tls: &TlsOptions) -> Result<rustls::ClientConfig, TlsError> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::CaBundle {
            path: PathBuf::new(),
            reason: format!("the crypto provider supports no TLS version: {e}"),
        })?;
    let builder = match &tls.trust {
        Trust::Disabled => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider))),
        Trust::CaBundle(path) => builder.with_root_certificates(bundle_roots(path)?),
        Trust::Default => builder.with_root_certificates(default_roots()),
    };
    match &tls.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some(cert_path) => {
            let key_path = tls.client_key.as_deref().unwrap_or(cert_path);
            let client_err = |path: &Path, reason: String| TlsError::ClientCert {
                path: path.to_path_buf(),
                reason,
            };
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
                .map_err(|e| client_err(cert_path, e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| client_err(cert_path, e.to_string()))?;
            if chain.is_empty() {
                return Err(client_err(cert_path, "holds no PEM certificate".into()));
            }
            let key = PrivateKeyDer::from_pem_file(key_path)
                .map_err(|e| client_err(key_path, format!("no usable PEM private key ({e})")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| client_err(cert_path, e.to_string()))
        }
    }
}

fn bundle_roots(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let err = |reason: String| TlsError::CaBundle {
        path: path.to_path_buf(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(err(if ignored > 0 {
            format!("none of its {ignored} certificates could be parsed")
        } else {
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()
        }));
    }
    Ok(roots)
}

fn default_roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        // One unreadable file in /etc/ssl/certs must not take the others down.
        tracing::debug!(error = %e, "skipping part of the platform's certificate store");
    }
    let (_, ignored) = roots.add_parsable_certificates(native.certs);
    if ignored > 0 {
        tracing::debug!(
            ignored,
            "platform certificates rustls cannot parse were skipped"
        );
    }
    roots
}

/// `ssl.cabundle: false`: accept any certificate, but still check the handshake signatures
/// (so the connection is at least to whoever holds the key of the certificate it sent).
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Connect and read timeouts of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP connection and TLS session.
    pub connect: Duration,
    /// Longest wait for the next bytes of a response (not the whole response: a large
    /// metadata file may take longer, as long as it keeps coming).
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(60),
        }
    }
}

/// A reqwest client with `tls` and `timeouts`.
pub fn client(tls: &TlsOptions, timeouts: Timeouts) -> Result<reqwest::Client, TlsError> {
    let config = rustls_config(tls)?;
    if tls.trust == Trust::Disabled {
        tracing::warn!(
            "TLS certificate verification is disabled (ssl.cabundle: false): anyone on the \
             network path can read and change this traffic"
        );
    }
    reqwest::Client::builder()
        .use_preconfigured_tls(config)
        // A redirect would carry `header.*` values, the bearer token or a token request's
        // client secret (307/308 re-send the body) to wherever the Location points, possibly
        // another host or plain http: none is followed, and the caller reports the 3xx with
        // its Location so the user fixes `uri` or `oauth2-server-uri` instead.
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .build()
        .map_err(|e| TlsError::CaBundle {
            path: PathBuf::new(),
            reason: format!("the HTTP client could not be built: {e}"),
        })
}

/// The CA bundle AWS clients trust, as the AWS CLI finds it: `AWS_CA_BUNDLE`, else `ca_bundle`
/// of the active profile (`profile`, else `AWS_PROFILE`, else `default`) in `AWS_CONFIG_FILE`
/// (default `~/.aws/config`). aws-config reads neither, so ops-core passes it to the SDK
/// clients' TLS context (see [`aws_config_loader`]).
pub fn aws_ca_bundle(profile: Option<&str>) -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(path) = var("AWS_CA_BUNDLE") {
        return Some(PathBuf::from(path));
    }
    let file = var("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".aws/config")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let profile = profile
        .map(str::to_string)
        .or_else(|| std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty()))
        .unwrap_or_else(|| "default".to_string());
    profile_value(&text, &profile, "ca_bundle").map(PathBuf::from)
}

/// Why the AWS trust store could not be set up; names the bundle file.
#[derive(Debug, thiserror::Error)]
#[error(
    "the AWS CA bundle {} (AWS_CA_BUNDLE, or the profile's ca_bundle) {reason}; point it at a \
     PEM file of the CA certificates to trust",
    path.display()
)]
pub struct AwsTrustError {
    /// The bundle file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

/// The trust of every AWS client, as the AWS CLI and SDKs have it: with `bundle` (see
/// [`aws_ca_bundle`]) exactly the certificates in that file, which replace the platform's roots
/// (botocore's `verify=path`); without one, the default roots.
pub fn aws_tls(bundle: Option<&Path>) -> TlsOptions {
    TlsOptions {
        trust: bundle.map_or(Trust::Default, |b| Trust::CaBundle(b.to_path_buf())),
        ..TlsOptions::default()
    }
}

/// The AWS SDK configuration loader every AWS client of the workspace starts from (ops-core's
/// Glue and S3 Tables catalogs and SigV4 signing, ops-s3tables' migration client): the SDK
/// defaults, and with `bundle` (see [`aws_ca_bundle`]) an HTTP client whose trust store is
/// exactly that file, built with the workspace's one crypto provider (aws-lc-rs). aws-config
/// reads neither `AWS_CA_BUNDLE` nor `ca_bundle` itself; passing the trust through the HTTP
/// client covers the credential chain too (STS, SSO, IMDS, container credentials), which
/// loads through the same client.
pub fn aws_config_loader(bundle: Option<&Path>) -> Result<aws_config::ConfigLoader, AwsTrustError> {
    use aws_smithy_http_client::tls;
    let loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    let Some(bundle) = bundle else {
        return Ok(loader);
    };
    let err = |reason: String| AwsTrustError {
        path: bundle.to_path_buf(),
        reason,
    };
    let pem = std::fs::read(bundle).map_err(|e| err(format!("cannot be read: {e}")))?;
    // The SDK's TLS context takes any PEM; check it holds a certificate, so a wrong file is
    // named here rather than as an unexplained handshake failure later. And every one must
    // parse: the SDK adds each with `expect` when it builds a connection, so one corrupt block
    // beside good ones would panic there (the AWS CLI refuses such a bundle too).
    bundle_roots(bundle).map_err(|e| match e {
        TlsError::CaBundle { reason, .. } | TlsError::ClientCert { reason, .. } => err(reason),
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    let total = certs.len();
    let (_, ignored) = rustls::RootCertStore::empty().add_parsable_certificates(certs);
    if ignored > 0 {
        return Err(err(format!(
            "{ignored} of its {total} certificates cannot be parsed; remove them from the file"
        )));
    }
    let context = tls::TlsContext::builder()
        .with_trust_store(tls::TrustStore::empty().with_pem_certificate(pem))
        .build()
        .map_err(|e| err(format!("is not usable: {e}")))?;
    install_crypto_provider();
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .tls_context(context)
        .build_https();
    Ok(loader.http_client(http))
}

/// `key` in `[default]` / `[profile NAME]` of an AWS config file.
fn profile_value(text: &str, profile: &str, key: &str) -> Option<String> {
    let mut in_section = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            let name = section
                .strip_prefix("profile ")
                .map(str::trim)
                .unwrap_or(section);
            in_section = name == profile;
            continue;
        }
        if in_section
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == key
        {
            let v = v.trim();
            return (!v.is_empty()).then(|| v.to_string());
        }
    }
    None
}

/// Bounded retries with exponential backoff and jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: none).
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub initial_backoff: Duration,
    /// Longest wait between two attempts (also caps a server's `Retry-After`).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based): exponential with ±20% jitter, or the
    /// server's `Retry-After` when it gave one, capped at `max_backoff`.
    pub fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_backoff);
        }
        let exp = self
            .initial_backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        let capped = exp.min(self.max_backoff);
        // Jitter from the clock's sub-second noise: enough to spread clients that failed
        // together, without a random-number dependency.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let factor = 0.8 + f64::from(nanos % 1000) / 2500.0; // 0.8 ..= 1.2
        capped.mul_f64(factor).min(self.max_backoff)
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from APIs and ignored).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// What a failed send means for a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendFailure {
    /// The request never left (connection refused, DNS, reset during connect): safe to retry
    /// any request.
    NotSent,
    /// The server's certificate or the TLS handshake was refused: retrying cannot help.
    Tls,
    /// It may have reached the server (timeout, reset mid-response): retry only what is
    /// idempotent.
    MaybeSent,
}

/// Classifies a reqwest error.
///
/// A TLS error counts as a refused handshake ([`SendFailure::Tls`]) only while connecting, or
/// when it is the server refusing the client certificate (TLS 1.3 servers say so after the
/// client has finished its side of the handshake and may already have written the request, but
/// they reject it before reading any). A TLS error later on — a decryption failure, an alert,
/// a reset after the request went out — is a connection lost after sending
/// ([`SendFailure::MaybeSent`]): for a commit, its outcome is unknown.
pub fn classify(err: &reqwest::Error) -> SendFailure {
    match tls_cause(err) {
        Some(_) if err.is_connect() => SendFailure::Tls,
        Some(tls) if refuses_client_certificate(tls) => SendFailure::Tls,
        Some(_) => SendFailure::MaybeSent,
        None if err.is_connect() => SendFailure::NotSent,
        None => SendFailure::MaybeSent,
    }
}

/// True for the alerts with which a server refuses (or asks for) a client certificate: sent
/// during the handshake, before the server reads any request.
fn refuses_client_certificate(err: &rustls::Error) -> bool {
    use rustls::AlertDescription as Alert;
    matches!(
        err,
        rustls::Error::AlertReceived(
            Alert::CertificateRequired
                | Alert::BadCertificate
                | Alert::UnsupportedCertificate
                | Alert::CertificateRevoked
                | Alert::CertificateExpired
                | Alert::CertificateUnknown
                | Alert::UnknownCA
                | Alert::AccessDenied
                | Alert::HandshakeFailure
        )
    )
}

/// The rustls error behind a failed request, if the TLS handshake is what failed.
pub fn tls_cause<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        // An io::Error's `source()` skips the error it wraps (it returns that error's source),
        // and tokio-rustls wraps the rustls error in one: look inside instead.
        source = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// What to tell the operator when the server's certificate was refused, given the trust that
/// was configured: with no CA file, to configure one; with one (`ssl.cabundle`, or
/// `SSL_CERT_FILE` for the default trust), that this file does not hold the CA that signed the
/// server's certificate, because "set ssl.cabundle" is wrong advice to someone who did.
pub fn untrusted_advice(trust: &Trust, ssl_cert_file: Option<&Path>) -> String {
    match (trust, ssl_cert_file) {
        (Trust::CaBundle(path), _) => format!(
            "the server's certificate is not trusted: the CA bundle {} (`ssl.cabundle`) does not \
             hold the CA that signed it; point `ssl.cabundle` at the PEM file of that CA",
            path.display()
        ),
        (Trust::Default, Some(path)) => format!(
            "the server's certificate is not trusted: {} (SSL_CERT_FILE) does not hold the CA \
             that signed it; point SSL_CERT_FILE, or this catalog's `ssl.cabundle`, at the PEM \
             file of that CA",
            path.display()
        ),
        _ => "the server's certificate is not trusted: set `ssl.cabundle` to the PEM file of the \
              CA that signed it (or SSL_CERT_FILE for every client)"
            .to_string(),
    }
}

/// What to tell the operator about a failed TLS handshake (`err`), given the TLS settings in
/// use: which side refused what, and the key or file that fixes it. Only a server certificate
/// that does not chain to a trusted CA gets the `ssl.cabundle` advice ([`untrusted_advice`]):
/// a host-name mismatch, an expired certificate or a refused client certificate cannot be fixed
/// by trusting another CA.
pub fn tls_advice(err: &rustls::Error, tls: &TlsOptions, ssl_cert_file: Option<&Path>) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert};
    let client_cert = || tls.client_cert.as_deref().map(|p| p.display().to_string());
    match err {
        rustls::Error::InvalidCertificate(Cert::NotValidForName) => {
            "the server's certificate is not valid for the host name in `uri`: use a host name the \
             certificate lists in `uri` (not an IP address or alias it does not list), or have \
             the server's certificate reissued with this name"
                .to_string()
        }
        rustls::Error::InvalidCertificate(Cert::NotValidForNameContext {
            expected,
            presented,
        }) => {
            format!(
                "the server's certificate is not valid for the host name in `uri` ({}; it lists \
                 {}): use one of those names in `uri`, or have the server's certificate reissued \
                 with this name",
                expected.to_str(),
                if presented.is_empty() {
                    "no names".to_string()
                } else {
                    presented.join(", ")
                }
            )
        }
        rustls::Error::InvalidCertificate(
            Cert::Expired
            | Cert::ExpiredContext { .. }
            | Cert::NotValidYet
            | Cert::NotValidYetContext { .. },
        ) => format!(
            "the server's certificate is outside its validity period ({err}; or this machine's \
             clock is wrong): the server needs a current certificate"
        ),
        rustls::Error::InvalidCertificate(Cert::Revoked) => {
            "the server's certificate has been revoked: the server needs a new one".to_string()
        }
        // Only a chain that leads to no trusted CA (or one signed by another key than the
        // trusted CA's of that name) is fixed by trusting another CA.
        rustls::Error::InvalidCertificate(Cert::UnknownIssuer | Cert::BadSignature) => {
            untrusted_advice(&tls.trust, ssl_cert_file)
        }
        rustls::Error::InvalidCertificate(
            reason @ (Cert::InvalidPurpose | Cert::InvalidPurposeContext { .. }),
        ) => format!(
            "the server's certificate is not issued for TLS server use ({reason:?}: its extended \
             key usage lacks serverAuth): the server needs a certificate issued for a TLS server; \
             trusting another CA cannot fix this"
        ),
        rustls::Error::InvalidCertificate(_) => format!(
            "the server's certificate was refused ({err}): the server needs a certificate \
             without this problem; trusting another CA cannot fix it"
        ),
        rustls::Error::AlertReceived(Alert::CertificateRequired) => match client_cert() {
            None => "the server requires a client certificate (mutual TLS): set \
                     `ssl.client.cert` (and `ssl.client.key`) to a certificate and key issued \
                     by a CA the server trusts for clients"
                .to_string(),
            Some(path) => format!(
                "the server requires a client certificate and did not accept {path} \
                 (`ssl.client.cert`)"
            ),
        },
        rustls::Error::AlertReceived(
            alert @ (Alert::BadCertificate
            | Alert::UnsupportedCertificate
            | Alert::CertificateRevoked
            | Alert::CertificateExpired
            | Alert::CertificateUnknown
            | Alert::UnknownCA
            | Alert::AccessDenied),
        ) => match client_cert() {
            Some(path) => format!(
                "the server refused the client certificate {path} (`ssl.client.cert`; alert \
                 {alert:?}): it must be issued by a CA the server trusts for clients, be current, \
                 and match `ssl.client.key`"
            ),
            None => format!(
                "the server refused the handshake (alert {alert:?}); if it requires a client \
                 certificate (mutual TLS), set `ssl.client.cert` and `ssl.client.key`"
            ),
        },
        // TLS 1.2 has no certificate_required alert: a server that requires a client
        // certificate and got none answers handshake_failure, as does one that shares no
        // protocol version or cipher suite with the client.
        rustls::Error::AlertReceived(Alert::HandshakeFailure) => match client_cert() {
            None => "the server refused the handshake (alert HandshakeFailure): a TLS 1.2 \
                     server that requires a client certificate (mutual TLS) answers this when \
                     none is sent, so set `ssl.client.cert` (and `ssl.client.key`) if it does; \
                     otherwise the server accepts no TLS version or cipher suite this client \
                     offers (TLS 1.2 or 1.3 with current cipher suites)"
                .to_string(),
            Some(path) => format!(
                "the server refused the handshake (alert HandshakeFailure) with the client \
                 certificate {path} (`ssl.client.cert`): a TLS 1.2 server answers this to a \
                 client certificate it does not accept (issued by a CA it does not trust for \
                 clients, expired, or not matching `ssl.client.key`), or when it shares no TLS \
                 version or cipher suite with this client"
            ),
        },
        other => format!(
            "check that `uri` is the catalog's HTTPS endpoint and what the server requires \
             ({other})"
        ),
    }
}

/// The innermost message of an error chain (reqwest's own Display stops at "error sending
/// request"), joined with its outer ones.
pub fn chain_message(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(500),
        };
        let first = p.backoff(1, None);
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        let third = p.backoff(3, None);
        assert!(third >= Duration::from_millis(320) && third <= Duration::from_millis(480));
        assert!(p.backoff(10, None) <= Duration::from_millis(500));
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(60))),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn missing_or_empty_ca_bundle_names_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n")?;
        for path in [dir.path().join("missing.pem"), empty] {
            let err = rustls_config(&TlsOptions {
                trust: Trust::CaBundle(path.clone()),
                ..Default::default()
            })
            .err()
            .ok_or("expected an error")?;
            assert_eq!(err.key(), "ssl.cabundle");
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{err}"
            );
        }
        Ok(())
    }

    #[test]
    fn untrusted_advice_names_the_configured_ca_file() {
        let none = untrusted_advice(&Trust::Default, None);
        assert!(none.contains("set `ssl.cabundle`"), "{none}");
        let bundle = untrusted_advice(&Trust::CaBundle(PathBuf::from("/x/wrongca.pem")), None);
        assert!(bundle.contains("/x/wrongca.pem"), "{bundle}");
        assert!(bundle.contains("does not hold the CA"), "{bundle}");
        assert!(!bundle.contains("set `ssl.cabundle`"), "{bundle}");
        let env = untrusted_advice(&Trust::Default, Some(Path::new("/x/env.pem")));
        assert!(
            env.contains("/x/env.pem (SSL_CERT_FILE) does not hold"),
            "{env}"
        );
    }

    /// Only a certificate that chains to no trusted CA gets CA-bundle advice; every other
    /// refusal names its reason. A TLS 1.2 server wanting a client certificate answers
    /// handshake_failure, so that alert mentions mutual TLS when no certificate is configured.
    #[test]
    fn tls_advice_names_the_actual_reason() {
        use rustls::{AlertDescription as Alert, CertificateError as Cert};
        let bundle = TlsOptions {
            trust: Trust::CaBundle(PathBuf::from("/x/ca.pem")),
            ..Default::default()
        };
        let advice = |e: rustls::Error, tls: &TlsOptions| tls_advice(&e, tls, None);
        let unknown = advice(
            rustls::Error::InvalidCertificate(Cert::UnknownIssuer),
            &bundle,
        );
        assert!(unknown.contains("`ssl.cabundle`"), "{unknown}");
        for (cert, says) in [
            (Cert::InvalidPurpose, "not issued for TLS server use"),
            (Cert::BadEncoding, "refused"),
            (Cert::UnhandledCriticalExtension, "refused"),
            (Cert::UnknownRevocationStatus, "refused"),
            (Cert::Expired, "validity period"),
        ] {
            let text = advice(rustls::Error::InvalidCertificate(cert.clone()), &bundle);
            assert!(text.contains(says), "{cert:?}: {text}");
            assert!(!text.contains("ssl.cabundle"), "{cert:?}: {text}");
            assert!(!text.contains("/x/ca.pem"), "{cert:?}: {text}");
        }
        let expired = advice(
            rustls::Error::InvalidCertificate(Cert::ExpiredContext {
                time: rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(
                    2_000_000_000,
                )),
                not_after: rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(
                    1_000_000_000,
                )),
            }),
            &bundle,
        );
        assert!(expired.contains("expired"), "{expired}");

        let failure = rustls::Error::AlertReceived(Alert::HandshakeFailure);
        let none = advice(failure.clone(), &TlsOptions::default());
        assert!(none.contains("`ssl.client.cert`"), "{none}");
        assert!(none.contains("mutual TLS"), "{none}");
        let with_cert = advice(
            failure,
            &TlsOptions {
                client_cert: Some(PathBuf::from("/x/me.pem")),
                ..Default::default()
            },
        );
        assert!(with_cert.contains("/x/me.pem"), "{with_cert}");
    }

    #[test]
    fn tls_errors_are_found_inside_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let outer = std::io::Error::other(inner);
        assert!(tls_cause(&outer).is_some());
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(outer);
        assert!(tls_cause(boxed.as_ref()).is_some());
        assert!(tls_cause(&std::io::Error::other("plain")).is_none());
    }

    #[test]
    fn aws_profile_ca_bundle_is_read_like_the_cli() {
        let text = "# comment\n[default]\nregion = eu-west-1\nca_bundle = /etc/a.pem\n\n\
                    [profile corp]\nca_bundle=/etc/corp.pem\n[sso-session x]\nca_bundle = /no\n";
        assert_eq!(
            profile_value(text, "default", "ca_bundle").as_deref(),
            Some("/etc/a.pem")
        );
        assert_eq!(
            profile_value(text, "corp", "ca_bundle").as_deref(),
            Some("/etc/corp.pem")
        );
        assert_eq!(profile_value(text, "other", "ca_bundle"), None);
        assert_eq!(profile_value(text, "default", "output"), None);
    }

    /// A self-signed certificate (openssl, P-256, valid until 2126).
    const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBjDCCATOgAwIBAgIUPjYG2IihXzs4ylzTuJP1e6+YaHowCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQaWNlYmVyZy1vcHMtdGVzdDAgFw0yNjEyMDIwNjQ2MTNaGA8y
MTI2MTEwODA2NDYxM1owGzEZMBcGA1UEAwwQaWNlYmVyZy1vcHMtdGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABJq4lHurvu/N834jVPKKnCJLbjQOHzMe7nvD
DT/X9AKkJnHRWpK/cHfMSHaWOpCud6AkSXdj9Tt0dH5HwfxVWKyjUzBRMB0GA1Ud
DgQWBBQ0NjgSuEpNePWBwRdaDkkm7AJ5PjAfBgNVHSMEGDAWgBQ0NjgSuEpNePWB
wRdaDkkm7AJ5PjAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIE2T
VL5Stjz7OtqTS6g3DENUQtHsJ8bLQayTgYxnvi1KAiBy6QUzmiSMgxKqKnp/D2jM
DwJ8xHwP7o5PPfy59/oeTQ==
-----END CERTIFICATE-----
";

    /// An AWS bundle with a corrupt certificate beside a good one is refused when the clients
    /// are configured: the SDK would panic on it when it opens a connection.
    #[test]
    fn an_aws_bundle_with_a_corrupt_certificate_is_refused()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let good = dir.path().join("good.pem");
        std::fs::write(&good, TEST_CA)?;
        assert!(aws_config_loader(Some(&good)).is_ok());
        let mixed = dir.path().join("mixed.pem");
        std::fs::write(
            &mixed,
            format!("{TEST_CA}-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n"),
        )?;
        let err = aws_config_loader(Some(&mixed))
            .err()
            .ok_or("a bundle with a corrupt certificate was accepted")?;
        let text = err.to_string();
        assert!(
            text.contains("1 of its 2 certificates cannot be parsed"),
            "{text}"
        );
        assert!(text.contains(&mixed.display().to_string()), "{text}");
        Ok(())
    }

    #[test]
    fn default_trust_has_roots() -> Result<(), Box<dyn std::error::Error>> {
        // webpki's bundle alone is non-empty, whatever the machine's store holds.
        assert!(!default_roots().is_empty());
        rustls_config(&TlsOptions::default())?;
        Ok(())
    }
}
