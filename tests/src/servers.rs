//! Real servers on 127.0.0.1, started per test and killed by PID when dropped.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
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
        command: Command,
        port: u16,
        dir: tempfile::TempDir,
        ready_path: &str,
        https_ca: Option<PathBuf>,
    ) -> Self {
        let mut server = Server::spawn(name, command, port, dir);
        server.https_ca = https_ca;
        server.wait_ready(ready_path, Duration::from_secs(60));
        server
    }

    /// Starts `command` with its output in `<dir>/<name>.log`, without waiting for it.
    fn spawn(name: &'static str, mut command: Command, port: u16, dir: tempfile::TempDir) -> Self {
        let log_path = dir.path().join(format!("{name}.log"));
        let log = File::create(&log_path).expect("create server log");
        let err = log.try_clone().expect("clone server log handle");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Server {
            name,
            child,
            port,
            log_path,
            dir,
            https_ca: None,
        }
    }

    fn wait_ready(&mut self, path: &str, timeout: Duration) {
        let port = self.port;
        let ca = self.https_ca.clone();
        self.wait_until(&format!("answer GET {path}"), timeout, || {
            let status = match &ca {
                None => http::request(port, "GET", path, &[], b"").map(|(s, _)| s),
                Some(ca) => tls::https_status(port, ca, path),
            };
            matches!(status, Ok(status) if status < 500)
        });
    }

    /// Polls `ready` until it holds; panics with the log if the server exits or `timeout` passes.
    fn wait_until(&mut self, what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited with {status} before it was ready; its log:\n{}",
                    self.name,
                    self.log()
                );
            }
            if ready() {
                return;
            }
            if started.elapsed() > timeout {
                panic!(
                    "{} did not {what} on port {} within {timeout:?}; its log:\n{}",
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

    /// The keys of bucket `bucket` under `prefix` (the first 1,000: enough for a test).
    pub fn list_objects(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let auth = Self::signed_as("s3");
        let (status, body) = http::request(
            self.server.port,
            "GET",
            &format!("/{bucket}?list-type=2&max-keys=1000&prefix={prefix}"),
            &[("Authorization", &auth)],
            b"",
        )
        .expect("list objects request");
        assert_eq!(status, 200, "list {bucket}/{prefix}: {body}");
        body.split("<Key>")
            .skip(1)
            .filter_map(|k| k.split_once("</Key>").map(|(k, _)| k.to_string()))
            .collect()
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

/// The superuser [`Postgres`] is initialised with.
pub const PG_USER: &str = "postgres";
/// Its password; TCP connections must give it (scram-sha-256, as production servers ask). It
/// holds `/` and `@` so that every URI that carries it has to percent-encode it.
pub const PG_PASSWORD: &str = "ice/berg@pg";
/// [`PG_PASSWORD`] percent-encoded, as it appears in URIs.
pub const PG_PASSWORD_IN_URI: &str = "ice%2Fberg%40pg";

/// PostgreSQL initialised by `initdb` into a temporary directory and listening on a free
/// 127.0.0.1 port, with its unix socket inside that directory. Tests create a database of their
/// own with [`Postgres::create_database`]. When the tests run as root (as CI does) the server
/// runs as [`tools::pg_user`], since PostgreSQL refuses root. Stopped when dropped (an immediate
/// shutdown, which leaves no shared memory behind as a SIGKILL would).
pub struct Postgres {
    /// The running postmaster.
    pub server: Server,
    tools: PgTools,
    ca: Option<PathBuf>,
}

/// How to run PostgreSQL's programs: where they are and as whom.
struct PgTools {
    bin: PathBuf,
    /// (uid, gid) to switch to when running as root.
    run_as: Option<(u32, u32)>,
    /// Where the server programs start (the user they run as may not reach the caller's).
    cwd: PathBuf,
}

impl PgTools {
    fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(name));
        cmd.current_dir(&self.cwd);
        if let Some((uid, gid)) = self.run_as {
            // std drops the supplementary groups too when switching away from root.
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    fn give(&self, path: &Path) {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("chown {} to {uid}:{gid}: {e}", path.display()));
        }
    }
}

impl Postgres {
    /// Starts a server that accepts TCP connections with the password, without TLS.
    pub fn start() -> Self {
        Self::launch(false)
    }

    /// Starts a server that accepts TCP connections only over TLS, with a certificate for
    /// 127.0.0.1 and localhost signed by a CA generated for it ([`Postgres::ca_cert`]).
    pub fn start_tls() -> Self {
        Self::launch(true)
    }

    fn launch(tls: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let tools = PgTools {
            bin: tools::pg_bin(),
            run_as: pg_run_as(),
            cwd: dir.path().to_path_buf(),
        };
        let data = dir.path().join("data");
        let socket = dir.path().join("socket");
        std::fs::create_dir(&socket).expect("mkdir socket dir");
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, PG_PASSWORD).expect("write pwfile");
        for path in [dir.path(), &socket, &pwfile] {
            tools.give(path);
        }
        let out = tools
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", PG_USER, "--pwfile"])
            .arg(&pwfile)
            .args([
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--no-locale",
                // A test cluster need not survive a power cut.
                "--no-sync",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}/initdb: {e}", tools.bin.display()));
        assert!(
            out.status.success(),
            "initdb failed ({}){}:\n{}{}",
            out.status,
            match tools.run_as {
                Some(_) => format!(
                    " as user {} (it must be able to reach {})",
                    tools::pg_user(),
                    dir.path().display()
                ),
                None => String::new(),
            },
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(&pwfile);

        let port = free_port();
        let mut cmd = tools.command("postgres");
        cmd.arg("-D")
            .arg(&data)
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(&socket)
            // Durability is not under test; commit semantics are unchanged.
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "synchronous_commit=off"]);
        let mut ca = None;
        if tls {
            let tls_dir = dir.path().join("tls");
            let (ca_cert, cert, key) = tls_files(&tls_dir);
            for path in [&tls_dir, &cert, &key] {
                tools.give(path);
            }
            // Only TLS connections over TCP: a client that silently fell back to plain text
            // is refused rather than passing the test.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .expect("write pg_hba.conf");
            cmd.args(["-c", "ssl=on"])
                .arg("-c")
                .arg(format!("ssl_cert_file={}", cert.display()))
                .arg("-c")
                .arg(format!("ssl_key_file={}", key.display()));
            ca = Some(ca_cert);
        }
        let mut server = Server::spawn("postgres", cmd, port, dir);
        let isready = tools.bin.join("pg_isready");
        server.wait_until("accept connections", Duration::from_secs(60), || {
            Command::new(&isready)
                .arg("-h")
                .arg(&socket)
                .args([
                    "-p",
                    &port.to_string(),
                    "-U",
                    PG_USER,
                    "-d",
                    "postgres",
                    "-q",
                ])
                .status()
                .is_ok_and(|s| s.success())
        });
        Postgres { server, tools, ca }
    }

    /// Creates database `name` and returns its SQLAlchemy URI (what PyIceberg's `SqlCatalog`
    /// and our `sql` catalog both take), with the password percent-encoded.
    pub fn create_database(&self, name: &str) -> String {
        let out = Command::new(self.tools.bin.join("createdb"))
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.server.port.to_string(), "-U", PG_USER, name])
            .output()
            .expect("run createdb");
        assert!(
            out.status.success(),
            "createdb {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.uri(name)
    }

    /// `postgresql+psycopg2://postgres:<password>@127.0.0.1:<port>/<database>`.
    pub fn uri(&self, database: &str) -> String {
        format!(
            "postgresql+psycopg2://{PG_USER}:{PG_PASSWORD_IN_URI}@127.0.0.1:{}/{database}",
            self.server.port
        )
    }

    /// The CA that signed the server's certificate ([`Postgres::start_tls`] only).
    pub fn ca_cert(&self) -> Option<&Path> {
        self.ca.as_deref()
    }

    fn socket_dir(&self) -> PathBuf {
        self.server.dir.path().join("socket")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // `pg_ctl stop -m immediate` is SIGQUIT: the server and its backends exit at once and
        // release their shared memory. Server's own drop then reaps it and prints the log.
        let _ = self
            .tools
            .command("pg_ctl")
            .arg("stop")
            .arg("-D")
            .arg(self.server.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "-t", "20"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The user to run PostgreSQL as: `None` unless we are root.
fn pg_run_as() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id(&["-u"]).expect("run `id -u`") != 0 {
        return None;
    }
    let user = tools::pg_user();
    match (id(&["-u", &user]), id(&["-g", &user])) {
        (Some(uid), Some(gid)) if uid != 0 => Some((uid, gid)),
        _ => panic!(
            "PostgreSQL refuses to run as root and the tests run as root, but user '{user}' \
             does not exist (or is root): create it with `useradd --system --user-group \
             --no-create-home {user}` (scripts/test does) or set ICEBERG_OPS_PG_USER to another \
             non-root user"
        ),
    }
}

/// A CA and a server certificate for 127.0.0.1/localhost it signed, made with `openssl` in
/// `dir`: (CA certificate, server certificate, server key).
fn tls_files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).expect("mkdir tls");
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write server.ext");
    // Run in `dir`, so every file is named relative to it.
    let openssl = |args: &str| {
        let out = Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run openssl ({e}); install it (Debian: apt-get install openssl)")
            });
        assert!(
            out.status.success(),
            "openssl {args} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let p256 = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    openssl(&format!(
        "req -x509 -days 2 {p256} -subj /CN=iceberg-ops-test-CA -keyout ca.key -out ca.crt"
    ));
    openssl(&format!(
        "req {p256} -subj /CN=127.0.0.1 -keyout server.key -out server.csr"
    ));
    openssl(
        "x509 -req -days 2 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
         -extfile server.ext -out server.crt",
    );
    let key = dir.join("server.key");
    // PostgreSQL refuses a key others can read.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod key");
    (dir.join("ca.crt"), dir.join("server.crt"), key)
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

/// PyIceberg-style properties for an AWS catalog on `moto`, plus `extra`.
pub fn aws_props(
    moto: &Moto,
    extra: &[(&str, &str)],
) -> std::collections::BTreeMap<String, String> {
    let endpoint = moto.endpoint();
    [
        ("client.region", AWS_REGION),
        ("client.access-key-id", AWS_KEY),
        ("client.secret-access-key", AWS_SECRET),
        ("s3.endpoint", &endpoint),
        ("s3.region", AWS_REGION),
        ("s3.access-key-id", AWS_KEY),
        ("s3.secret-access-key", AWS_SECRET),
        // moto on 127.0.0.1 has no virtual-host bucket names.
        ("s3.path-style-access", "true"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// moto with an S3 bucket `lake` and Glue properties for a warehouse in it (keep the Moto alive).
pub fn glue_on_moto() -> (Moto, std::collections::BTreeMap<String, String>) {
    let moto = Moto::start();
    moto.create_bucket("lake");
    let endpoint = moto.endpoint();
    let p = aws_props(
        &moto,
        &[
            ("type", "glue"),
            ("glue.endpoint", &endpoint),
            ("warehouse", "s3://lake/warehouse"),
        ],
    );
    (moto, p)
}
