//! Real servers on 127.0.0.1, started per test and killed by PID when dropped.

use std::fs::File;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{http, tls, tools};

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

/// A child process serving HTTP on `port`, with its output in a log file.
pub struct Server {
    name: &'static str,
    child: Child,
    /// The port it listens on.
    pub port: u16,
    log_path: PathBuf,
    /// Keeps the server's scratch directory alive as long as the server.
    pub dir: tempfile::TempDir,
    /// The CA its HTTPS certificate chains to; `None`: plain HTTP.
    https_ca: Option<PathBuf>,
}

impl Server {
    fn start(
        name: &'static str,
        command: Command,
        port: u16,
        dir: tempfile::TempDir,
        ready_path: &str,
    ) -> Self {
        Self::start_with_ca(name, command, port, dir, ready_path, None)
    }

    fn start_with_ca(
        name: &'static str,
        mut command: Command,
        port: u16,
        dir: tempfile::TempDir,
        ready_path: &str,
        https_ca: Option<PathBuf>,
    ) -> Self {
        let log_path = dir.path().join(format!("{name}.log"));
        let log = File::create(&log_path).expect("create server log");
        let err = log.try_clone().expect("clone server log handle");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let mut server = Server {
            name,
            child,
            port,
            log_path,
            dir,
            https_ca,
        };
        server.wait_ready(ready_path, Duration::from_secs(60));
        server
    }

    fn wait_ready(&mut self, path: &str, timeout: Duration) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited with {status} before it was ready; its log:\n{}",
                    self.name,
                    self.log()
                );
            }
            let status = match &self.https_ca {
                None => http::request(self.port, "GET", path, &[], b"").map(|(s, _)| s),
                Some(ca) => tls::https_status(self.port, ca, path),
            };
            if let Ok(status) = status
                && status < 500
            {
                return;
            }
            if started.elapsed() > timeout {
                panic!(
                    "{} did not answer GET {path} on port {} within {timeout:?}; its log:\n{}",
                    self.name,
                    self.port,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Everything the server printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// `http://127.0.0.1:<port>`, or `https://` when it serves TLS.
    pub fn url(&self) -> String {
        let scheme = if self.https_ca.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // libtest shows a test's captured output only when the test fails (by a panic or by
        // returning Err), so the log appears exactly when it is needed.
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(200)..];
        eprintln!(
            "---- {} log (port {}, last {} lines) ----\n{}",
            self.name,
            self.port,
            tail.len(),
            tail.join("\n")
        );
    }
}

/// rustberg, an Iceberg REST catalog, with a fresh file-backed catalog and warehouse.
pub struct Rustberg {
    /// The running server.
    pub server: Server,
}

/// How to run rustberg: plain HTTP (the default) or HTTPS with a certificate from a test CA;
/// never with its own authentication (see [`crate::issuer`] for why, and for the OAuth2
/// resource server the tests put in front of it instead).
#[derive(Default, Clone, Copy)]
pub struct RustbergOptions<'a> {
    /// Serve HTTPS with a certificate this CA signs.
    pub tls: Option<&'a tls::TestCa>,
}

impl Rustberg {
    /// Starts rustberg (plain HTTP, no authentication) and waits until `/v1/config` answers.
    pub fn start() -> Self {
        Self::start_with(RustbergOptions::default())
    }

    /// Starts rustberg as `opts` says and waits until `/v1/config` answers.
    pub fn start_with(opts: RustbergOptions<'_>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // rustberg's file:// catalog is a single redb database file, not a directory.
        let catalog = dir.path().join("catalog.redb");
        let warehouse = dir.path().join("warehouse");
        std::fs::create_dir_all(&warehouse).expect("mkdir warehouse");
        let port = free_port();
        let mut cmd = Command::new(tools::rustberg());
        cmd.args(["--host", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--catalog-url")
            .arg(format!("file://{}", catalog.display()))
            .arg("--warehouse")
            .arg(format!("file://{}", warehouse.display()))
            .current_dir(dir.path());
        cmd.args(["--dev", "--no-auth"]);
        let https_ca = match opts.tls {
            None => {
                cmd.arg("--insecure-http");
                None
            }
            Some(ca) => {
                let cert = ca.server(&format!("rustberg-{port}"));
                cmd.arg("--tls-cert")
                    .arg(&cert.cert)
                    .arg("--tls-key")
                    .arg(&cert.key);
                Some(ca.ca_pem.clone())
            }
        };
        Rustberg {
            server: Server::start_with_ca("rustberg", cmd, port, dir, "/v1/config", https_ca),
        }
    }

    /// The catalog's base URI.
    pub fn uri(&self) -> String {
        self.server.url()
    }

    /// The warehouse directory (file:// URI) rustberg was started with.
    pub fn warehouse(&self) -> String {
        format!(
            "file://{}",
            self.server.dir.path().join("warehouse").display()
        )
    }
}

/// Credentials and region moto accepts (it does not check signatures).
pub const AWS_KEY: &str = "testing";
/// Secret paired with [`AWS_KEY`].
pub const AWS_SECRET: &str = "testing";
/// Region used throughout the tests.
pub const AWS_REGION: &str = "us-east-1";

/// moto_server for S3, Glue and S3 Tables.
pub struct Moto {
    /// The running server.
    pub server: Server,
}

impl Moto {
    /// Starts moto (with the S3 Tables response fixes) and waits until it answers.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let mut cmd = Command::new(tools::python());
        cmd.arg(tools::py_script("moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("AWS_ACCESS_KEY_ID", AWS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
            .env("AWS_DEFAULT_REGION", AWS_REGION)
            .current_dir(dir.path());
        Moto {
            server: Server::start("moto", cmd, port, dir, "/moto-api/"),
        }
    }

    /// The endpoint every AWS client points at.
    pub fn endpoint(&self) -> String {
        self.server.url()
    }

    /// Forgets every bucket, database and table (`POST /moto-api/reset`).
    pub fn reset(&self) {
        let (status, body) = http::request(self.server.port, "POST", "/moto-api/reset", &[], b"")
            .expect("moto reset request");
        assert_eq!(status, 200, "moto reset failed: {body}");
    }

    fn signed_as(service: &str) -> String {
        // moto routes unsigned-but-plausible requests by the credential scope's service name.
        format!(
            "AWS4-HMAC-SHA256 Credential={AWS_KEY}/20260101/{AWS_REGION}/{service}/aws4_request, \
             SignedHeaders=host, Signature=0"
        )
    }

    /// Creates an S3 bucket.
    pub fn create_bucket(&self, name: &str) {
        let auth = Self::signed_as("s3");
        let (status, body) = http::request(
            self.server.port,
            "PUT",
            &format!("/{name}"),
            &[("Authorization", &auth)],
            b"",
        )
        .expect("create bucket request");
        assert_eq!(status, 200, "create bucket {name}: {body}");
    }

    /// Writes an S3 object.
    pub fn put_object(&self, bucket: &str, key: &str, body: &[u8]) {
        let auth = Self::signed_as("s3");
        let (status, resp) = http::request(
            self.server.port,
            "PUT",
            &format!("/{bucket}/{key}"),
            &[("Authorization", &auth)],
            body,
        )
        .expect("put object request");
        assert_eq!(status, 200, "put s3://{bucket}/{key}: {resp}");
    }

    /// A Glue JSON 1.1 call (`AWSGlue.<action>`); panics unless it succeeds.
    pub fn glue(&self, action: &str, body: &serde_json::Value) -> serde_json::Value {
        let auth = Self::signed_as("glue");
        let target = format!("AWSGlue.{action}");
        let (status, resp) = http::request(
            self.server.port,
            "POST",
            "/",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/x-amz-json-1.1"),
                ("X-Amz-Target", &target),
            ],
            body.to_string().as_bytes(),
        )
        .expect("glue request");
        assert_eq!(status, 200, "Glue {action}: {resp}");
        serde_json::from_str(&resp).unwrap_or_default()
    }

    /// Creates a namespace in an S3 Tables table bucket.
    pub fn create_namespace(&self, table_bucket_arn: &str, namespace: &str) {
        let auth = Self::signed_as("s3tables");
        let body = serde_json::json!({ "namespace": [namespace] }).to_string();
        let arn: String = table_bucket_arn
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let (status, resp) = http::request(
            self.server.port,
            "PUT",
            &format!("/namespaces/{arn}"),
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .expect("create namespace request");
        assert_eq!(status, 200, "create namespace {namespace}: {resp}");
    }

    /// Creates an S3 Tables table bucket and returns its ARN.
    pub fn create_table_bucket(&self, name: &str) -> String {
        let auth = Self::signed_as("s3tables");
        let body = serde_json::json!({ "name": name }).to_string();
        let (status, resp) = http::request(
            self.server.port,
            "PUT",
            "/buckets",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .expect("create table bucket request");
        assert_eq!(status, 200, "create table bucket {name}: {resp}");
        let v: serde_json::Value = serde_json::from_str(&resp).expect("table bucket JSON");
        v["arn"].as_str().expect("arn in response").to_string()
    }
}

/// A certificate authority made for one test, and server certificates it issues, so servers can
/// speak TLS and clients trust exactly this CA (`AWS_CA_BUNDLE`, `ssl.cabundle`).
pub struct TestCa {
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
    /// The CA certificate (PEM), what clients trust.
    pub cert_pem: String,
}

/// A server certificate and its private key (PEM).
pub struct ServerCert {
    /// The certificate.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl TestCa {
    /// A new CA.
    pub fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "iceberg-ops test CA");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let key = rcgen::KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            cert_pem: cert.pem(),
            params,
            key,
        }
    }

    /// A certificate for 127.0.0.1 and localhost, signed by this CA.
    pub fn server_cert(&self) -> ServerCert {
        let params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        let key = rcgen::KeyPair::generate().expect("server key");
        let issuer = rcgen::Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).expect("server certificate");
        ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// Writes the CA certificate to `dir/ca.pem` and returns the path.
    pub fn write(&self, dir: &std::path::Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.cert_pem).expect("write CA certificate");
        path
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// A reverse proxy that checks each request's SigV4 signature with botocore
/// (`tests/py/sigv4_proxy.py`) before passing it to `upstream`; refused requests get 403.
pub struct SigV4Proxy {
    /// The running proxy.
    pub server: Server,
}

/// What a [`SigV4Proxy`] expects requests to be signed with.
#[derive(Debug, Clone)]
pub struct SigV4Expect<'a> {
    /// Signing name (`glue`, `s3tables`, `execute-api`).
    pub service: &'a str,
    /// Region.
    pub region: &'a str,
    /// Access key id.
    pub access_key: &'a str,
    /// Secret access key.
    pub secret_key: &'a str,
    /// Session token, when the credentials are temporary.
    pub session_token: Option<&'a str>,
}

impl SigV4Proxy {
    /// Starts the proxy in front of 127.0.0.1:`upstream`.
    pub fn start(upstream: u16, expect: &SigV4Expect<'_>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let mut cmd = Command::new(tools::python());
        cmd.arg(tools::py_script("sigv4_proxy.py"))
            .args(["--port", &port.to_string()])
            .args(["--upstream", &upstream.to_string()])
            .args(["--service", expect.service])
            .args(["--region", expect.region])
            .args(["--access-key", expect.access_key])
            .args(["--secret-key", expect.secret_key])
            .current_dir(dir.path());
        if let Some(t) = expect.session_token {
            cmd.args(["--session-token", t]);
        }
        SigV4Proxy {
            server: Server::start("sigv4-proxy", cmd, port, dir, "/__sigv4"),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// (requests whose signature botocore verified, reasons of the refused ones).
    pub fn stats(&self) -> (u64, Vec<String>) {
        let (status, body) = http::request(self.server.port, "GET", "/__sigv4", &[], b"")
            .expect("sigv4 proxy stats");
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("stats JSON");
        let refused = v["refused"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        (v["verified"].as_u64().unwrap_or(0), refused)
    }
}
