//! A small OAuth2 authorisation server for the tests: the client-credentials grant at
//! `/token` issuing RS256 JWTs, the key set at `/jwks`, and OpenID discovery — what rustberg's
//! JWT authentication needs from an identity provider. Tokens are short-lived on request, so a
//! client's refresh is exercised, and the issuer can hand out tokens the catalog will refuse
//! (already expired) to exercise the refresh-once-on-401 path.
//!
//! JWKS and discovery are served over plain HTTP; the token endpoint is served over HTTPS too
//! when a certificate is given, as a real identity provider serves it.
//!
//! rustberg 0.3.0 cannot check these tokens itself: it is built with jsonwebtoken 11 and no
//! crypto backend for it, so its JWT authentication panics on the first token ("Could not
//! automatically determine the process-level CryptoProvider from jsonwebtoken crate
//! features"). [`Issuer::gateway`] therefore puts a resource server in front of it: HTTPS with
//! a test CA's certificate, each request's bearer token checked against this issuer's key
//! (RS256 signature, `iss`, `aud`, `exp` with no leeway), 401 with an Iceberg error body when it
//! fails, and the request passed on to rustberg when it holds.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_SHA256};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::tls::CertFiles;

/// How the issuer behaves.
#[derive(Debug, Clone)]
pub struct IssuerOptions {
    /// The one client it knows.
    pub client_id: String,
    /// That client's secret.
    pub client_secret: String,
    /// `expires_in` of issued tokens (and their `exp`).
    pub lifetime: Duration,
    /// `aud` when the request names no `audience`.
    pub default_audience: String,
    /// Serve the token endpoint over HTTPS with this certificate as well.
    pub tls: Option<CertFiles>,
    /// The first this many tokens are already expired although `expires_in` says otherwise
    /// (a revoked token, as the catalog sees it).
    pub stale_first: usize,
    /// Announce this `expires_in` instead of the lifetime (the token's `exp` still follows the
    /// lifetime), as a server that answers a nonsense value.
    pub announced_expires_in: Option<u64>,
}

impl Default for IssuerOptions {
    fn default() -> Self {
        IssuerOptions {
            client_id: "ops-client".into(),
            client_secret: "s3cr3t-ops".into(),
            lifetime: Duration::from_secs(3600),
            default_audience: "rustberg".into(),
            tls: None,
            stale_first: 0,
            announced_expires_in: None,
        }
    }
}

struct Shared {
    opts: IssuerOptions,
    key: KeyPair,
    /// PKCS#1 DER of the public key, what RS256 verification takes.
    public_der: Vec<u8>,
    jwk: serde_json::Value,
    issuer: String,
    issued: AtomicUsize,
    /// Form parameters of each token request, secrets removed.
    requests: Mutex<Vec<HashMap<String, String>>>,
    /// Headers of each token request (names in lower case).
    request_headers: Mutex<Vec<Vec<(String, String)>>>,
    stop: AtomicBool,
}

/// A running issuer; stops when dropped.
pub struct Issuer {
    shared: Arc<Shared>,
    http_port: u16,
    https_port: Option<u16>,
}

impl Issuer {
    /// Starts the issuer on free ports.
    pub fn start(opts: IssuerOptions) -> Issuer {
        crate::tls::install_provider();
        let key = KeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let (n, e) = rsa_components(key.public_key().as_ref());
        let jwk = serde_json::json!({
            "kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
            "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode(e),
        });
        let http = TcpListener::bind("127.0.0.1:0").expect("bind issuer");
        let http_port = http.local_addr().expect("addr").port();
        let tls = opts.tls.clone();
        let public_der = key.public_key().as_ref().to_vec();
        let shared = Arc::new(Shared {
            issuer: format!("http://127.0.0.1:{http_port}"),
            opts,
            public_der,
            key,
            jwk,
            issued: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
            request_headers: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        spawn_listener(http, shared.clone(), None);
        let https_port = tls.map(|cert| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind issuer tls");
            let port = listener.local_addr().expect("addr").port();
            spawn_listener(
                listener,
                shared.clone(),
                Some(crate::tls::server_config(&cert, None)),
            );
            port
        });
        Issuer {
            shared,
            http_port,
            https_port,
        }
    }

    /// The `iss` of its tokens (also where discovery lives).
    pub fn issuer_url(&self) -> String {
        self.shared.issuer.clone()
    }

    /// The key set (plain HTTP).
    pub fn jwks_url(&self) -> String {
        format!("http://127.0.0.1:{}/jwks", self.http_port)
    }

    /// The token endpoint: HTTPS when a certificate was given.
    pub fn token_url(&self) -> String {
        match self.https_port {
            Some(p) => format!("https://127.0.0.1:{p}/token"),
            None => format!("http://127.0.0.1:{}/token", self.http_port),
        }
    }

    /// `client_id:client_secret`, as the `credential` key wants it.
    pub fn credential(&self) -> String {
        format!(
            "{}:{}",
            self.shared.opts.client_id, self.shared.opts.client_secret
        )
    }

    /// Tokens issued so far.
    pub fn tokens_issued(&self) -> usize {
        self.shared.issued.load(Ordering::SeqCst)
    }

    /// The headers of each token request so far (names in lower case).
    pub fn request_headers(&self) -> Vec<Vec<(String, String)>> {
        self.shared
            .request_headers
            .lock()
            .expect("request headers")
            .clone()
    }

    /// The form parameters of every token request so far (`client_secret` removed).
    pub fn requests(&self) -> Vec<HashMap<String, String>> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// A token for the default audience expiring `valid_for_secs` from now (negative: already
    /// expired), for `token`-key tests.
    pub fn mint(&self, valid_for_secs: i64) -> String {
        let aud = self.shared.opts.default_audience.clone();
        self.shared.jwt(&aud, valid_for_secs)
    }

    /// A resource server on a free port in front of 127.0.0.1:`upstream`: HTTPS with `tls`,
    /// every request's bearer token checked against this issuer, for audience `audience`.
    pub fn gateway(&self, upstream: u16, tls: &CertFiles, audience: &str) -> Gateway {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind gateway");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(GatewayState {
            issuer: self.shared.clone(),
            upstream,
            audience: audience.to_string(),
            refused: Mutex::new(Vec::new()),
            passed: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let config = crate::tls::server_config(tls, None);
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if st.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let st = st.clone();
                let config = config.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    st.handle(rustls::StreamOwned::new(conn, stream));
                });
            }
        });
        Gateway { state, port }
    }
}

struct GatewayState {
    issuer: Arc<Shared>,
    upstream: u16,
    audience: String,
    refused: Mutex<Vec<String>>,
    passed: AtomicUsize,
    stop: AtomicBool,
}

/// A running resource server (see [`Issuer::gateway`]); stops when dropped.
pub struct Gateway {
    state: Arc<GatewayState>,
    port: u16,
}

impl Gateway {
    /// `https://127.0.0.1:<port>`: the catalog URI clients use.
    pub fn uri(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// Why each refused request was refused.
    pub fn refused(&self) -> Vec<String> {
        self.state.refused.lock().expect("refused").clone()
    }

    /// Requests whose token held.
    pub fn passed(&self) -> usize {
        self.state.passed.load(Ordering::SeqCst)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl GatewayState {
    /// Why `authorization` does not carry a token this issuer vouches for, if it does not.
    fn check(&self, authorization: Option<&str>) -> Option<String> {
        let Some(token) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return Some("no bearer token".into());
        };
        let parts: Vec<&str> = token.split('.').collect();
        let [header, claims, signature] = parts.as_slice() else {
            return Some("not a JWT".into());
        };
        let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).ok();
        let (Some(header), Some(claims), Some(signature)) =
            (decode(header), decode(claims), decode(signature))
        else {
            return Some("not base64url".into());
        };
        let header: serde_json::Value = serde_json::from_slice(&header).unwrap_or_default();
        if header["alg"] != "RS256" {
            return Some(format!("alg {} is not RS256", header["alg"]));
        }
        let signed = &token[..token.rfind('.').unwrap_or(0)];
        let key = aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
            &self.issuer.public_der,
        );
        if key.verify(signed.as_bytes(), &signature).is_err() {
            return Some("bad signature".into());
        }
        let claims: serde_json::Value = serde_json::from_slice(&claims).unwrap_or_default();
        if claims["iss"] != self.issuer.issuer.as_str() {
            return Some(format!("iss {}", claims["iss"]));
        }
        if claims["aud"] != self.audience.as_str() {
            return Some(format!("aud {}", claims["aud"]));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        match claims["exp"].as_i64() {
            Some(exp) if exp > now => None,
            Some(exp) => Some(format!("expired {}s ago", now - exp)),
            None => Some("no exp".into()),
        }
    }

    fn handle<S: Read + Write>(&self, stream: S) {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut head = line.clone();
        let mut length = 0usize;
        let mut authorization = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let trimmed = header.trim_end();
            if trimmed.is_empty() {
                break;
            }
            let (name, value) = trimmed.split_once(':').unwrap_or((trimmed, ""));
            let name = name.trim();
            if name.eq_ignore_ascii_case("connection") {
                continue;
            }
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
            head.push_str(&header);
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut client = reader.into_inner();
        if let Some(reason) = self.check(authorization.as_deref()) {
            let what = line.trim().to_string();
            self.refused
                .lock()
                .expect("refused")
                .push(format!("{what}: {reason}"));
            let text = serde_json::json!({"error": {
                "message": format!("not authorized: {reason}"),
                "type": "NotAuthorizedException", "code": 401}})
            .to_string();
            let _ = write!(
                client,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = client.flush();
            return;
        }
        self.passed.fetch_add(1, Ordering::SeqCst);
        let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", self.upstream)) else {
            return;
        };
        if upstream.write_all(head.as_bytes()).is_err() || upstream.write_all(&body).is_err() {
            return;
        }
        let mut response = Vec::new();
        let _ = upstream.read_to_end(&mut response);
        let _ = client.write_all(&response);
        let _ = client.flush();
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loops so their threads end.
        let _ = TcpStream::connect(("127.0.0.1", self.http_port));
        if let Some(p) = self.https_port {
            let _ = TcpStream::connect(("127.0.0.1", p));
        }
    }
}

impl Shared {
    fn jwt(&self, audience: &str, valid_for_secs: i64) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": "k1"});
        let claims = serde_json::json!({
            "iss": self.issuer, "sub": self.opts.client_id, "aud": audience,
            "iat": now, "exp": now + valid_for_secs,
            "tenant_id": "default", "roles": ["admin"],
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut sig = vec![0u8; self.key.public_modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                signing_input.as_bytes(),
                &mut sig,
            )
            .expect("sign JWT");
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig))
    }

    fn respond(
        &self,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: &[u8],
    ) -> (u16, String) {
        match (method, path.split('?').next().unwrap_or_default()) {
            ("GET", "/jwks") => (200, serde_json::json!({"keys": [self.jwk]}).to_string()),
            ("GET", "/.well-known/openid-configuration") => (
                200,
                serde_json::json!({
                    "issuer": self.issuer,
                    "jwks_uri": format!("{}/jwks", self.issuer),
                    "token_endpoint": format!("{}/token", self.issuer),
                })
                .to_string(),
            ),
            ("POST", "/token") => {
                self.request_headers
                    .lock()
                    .expect("request headers")
                    .push(headers);
                self.token(body)
            }
            _ => (404, r#"{"error":"not_found"}"#.into()),
        }
    }

    fn token(&self, body: &[u8]) -> (u16, String) {
        let mut form: HashMap<String, String> = url_decode_form(&String::from_utf8_lossy(body));
        let secret = form.remove("client_secret");
        self.requests.lock().expect("requests").push(form.clone());
        if form.get("grant_type").map(String::as_str) != Some("client_credentials") {
            return (400, r#"{"error":"unsupported_grant_type"}"#.into());
        }
        if form.get("client_id") != Some(&self.opts.client_id)
            || secret.as_ref() != Some(&self.opts.client_secret)
        {
            return (
                401,
                r#"{"error":"invalid_client","error_description":"unknown client or wrong secret"}"#
                    .into(),
            );
        }
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let lifetime = self.opts.lifetime.as_secs() as i64;
        let audience = form
            .get("audience")
            .cloned()
            .unwrap_or_else(|| self.opts.default_audience.clone());
        // Well past the catalog's clock-skew leeway (jsonwebtoken's 60 s).
        let valid_for = if n < self.opts.stale_first {
            -600
        } else {
            lifetime
        };
        let token = self.jwt(&audience, valid_for);
        let expires_in = self
            .opts
            .announced_expires_in
            .unwrap_or(self.opts.lifetime.as_secs());
        (
            200,
            serde_json::json!({
                "access_token": token, "token_type": "bearer", "expires_in": expires_in,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            })
            .to_string(),
        )
    }
}

fn spawn_listener(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let shared = shared.clone();
            let tls = tls.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                match tls {
                    None => serve(stream, &shared),
                    Some(config) => {
                        let Ok(conn) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(conn, stream), &shared);
                    }
                }
            });
        }
    });
}

/// Answers one request per connection (`Connection: close`).
fn serve<S: Read + Write>(stream: S, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, text) = shared.respond(&method, &path, headers, &body);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        _ => "Not Found",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{text}",
        text.len()
    );
    let mut stream = reader.into_inner();
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
}

fn url_decode_form(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// (n, e) of a PKCS#1 `RSAPublicKey` (DER: SEQUENCE { INTEGER n, INTEGER e }), without
/// leading zero bytes.
fn rsa_components(der: &[u8]) -> (Vec<u8>, Vec<u8>) {
    fn read_len(d: &[u8], i: &mut usize) -> usize {
        let first = d[*i];
        *i += 1;
        if first < 0x80 {
            return first as usize;
        }
        let count = (first & 0x7f) as usize;
        let mut len = 0usize;
        for _ in 0..count {
            len = (len << 8) | d[*i] as usize;
            *i += 1;
        }
        len
    }
    fn read_int(d: &[u8], i: &mut usize) -> Vec<u8> {
        assert_eq!(d[*i], 0x02, "INTEGER expected");
        *i += 1;
        let len = read_len(d, i);
        let v = d[*i..*i + len].to_vec();
        *i += len;
        let start = v.iter().position(|b| *b != 0).unwrap_or(v.len() - 1);
        v[start..].to_vec()
    }
    let mut i = 0;
    assert_eq!(der[i], 0x30, "SEQUENCE expected");
    i += 1;
    let _ = read_len(der, &mut i);
    let n = read_int(der, &mut i);
    let e = read_int(der, &mut i);
    (n, e)
}
