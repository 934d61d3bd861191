//! A certificate authority made per test (rcgen), and the server and client certificates it
//! signs, written as PEM files; plus a minimal TLS client for readiness checks.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// PEM files of one server (or client) certificate and its key.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
}

/// A CA whose certificate is in `ca.pem`, able to sign server and client certificates.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    dir: PathBuf,
    /// The CA certificate (PEM): what `ssl.cabundle` points at.
    pub ca_pem: PathBuf,
}

impl TestCa {
    /// A new CA named `name`, its files under `dir`.
    pub fn new(dir: &Path, name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("iceberg-ops test CA {name}"));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("self-signed CA");
        let ca_pem = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&ca_pem, issuer.pem()).expect("write CA");
        TestCa {
            issuer,
            dir: dir.to_path_buf(),
            ca_pem,
        }
    }

    fn issue(&self, file: &str, names: &[&str], usage: ExtendedKeyUsagePurpose) -> CertFiles {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("cert params");
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().cloned().unwrap_or_default(),
        );
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        let files = CertFiles {
            cert: self.dir.join(format!("{file}.pem")),
            key: self.dir.join(format!("{file}.key")),
        };
        std::fs::write(&files.cert, cert.pem()).expect("write cert");
        std::fs::write(&files.key, key.serialize_pem()).expect("write key");
        files
    }

    /// A server certificate for 127.0.0.1 and localhost.
    pub fn server(&self, file: &str) -> CertFiles {
        self.issue(
            file,
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A server certificate for `names` only (to test a host-name mismatch).
    pub fn server_for(&self, file: &str, names: &[&str]) -> CertFiles {
        self.issue(file, names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate (for mutual TLS).
    pub fn client(&self, file: &str) -> CertFiles {
        self.issue(
            file,
            &["iceberg-ops-client"],
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }
}

/// Installs the crypto provider ops-core uses, for the harness' own rustls users.
pub fn install_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn roots(ca_pem: &Path) -> rustls::RootCertStore {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem).expect("read CA") {
        roots.add(cert.expect("CA PEM")).expect("add CA");
    }
    roots
}

/// A rustls server config for `cert`, optionally requiring client certificates signed by
/// `client_ca`.
pub fn server_config(cert: &CertFiles, client_ca: Option<&Path>) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    install_provider();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert.cert)
        .expect("read cert")
        .collect::<Result<_, _>>()
        .expect("cert PEM");
    let key = PrivateKeyDer::from_pem_file(&cert.key).expect("key PEM");
    let builder = rustls::ServerConfig::builder();
    let builder = match client_ca {
        Some(ca) => builder.with_client_cert_verifier(
            rustls::server::WebPkiClientVerifier::builder(Arc::new(roots(ca)))
                .build()
                .expect("client verifier"),
        ),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key).expect("server config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// One HTTPS request to 127.0.0.1:`port` trusting `ca_pem`; returns the status. For readiness
/// checks only.
pub fn https_status(port: u16, ca_pem: &Path, path: &str) -> std::io::Result<u16> {
    install_provider();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots(ca_pem))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1")
        .map_err(std::io::Error::other)?
        .to_owned();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)?;
    let sock = TcpStream::connect(("127.0.0.1", port))?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    let mut raw = Vec::new();
    // A server closing without close_notify is still an answer for a readiness check.
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {text:.200}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PyIceberg verifies with OpenSSL: the chain must hold for it too, not only for rustls.
    #[test]
    fn openssl_accepts_the_chain() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::new(dir.path(), "check");
        let server = ca.server("server");
        let out = std::process::Command::new("openssl")
            .arg("verify")
            .arg("-CAfile")
            .arg(&ca.ca_pem)
            .arg(&server.cert)
            .output();
        let Ok(out) = out else {
            // No openssl binary: the PyIceberg tests will tell.
            return;
        };
        assert!(
            out.status.success(),
            "{}{}\nCA:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&ca.ca_pem).unwrap_or_default()
        );
    }
}
