//! An HTTP proxy in front of a server that misbehaves on cue: it answers 503, drops the
//! connection after reading a request, or stalls, for the requests a rule picks — so retries,
//! timeouts and "outcome unknown" reports can be tested against a real catalog behind it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to do with a request a rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer `503 Service Unavailable` with `Retry-After: 0`.
    Unavailable,
    /// Close the connection without answering (after reading the request).
    Drop,
    /// Wait this long, then forward it.
    Stall(Duration),
    /// Forward it (the server acts on it), then answer `503` instead of the server's reply, as
    /// a gateway whose upstream connection broke after the request was handled.
    ForwardThenUnavailable,
    /// Answer `200 OK` with this JSON body without forwarding (a server's `/v1/config`, a
    /// credentials endpoint).
    RespondJson(String),
    /// Answer this 3xx status with this `Location` without forwarding.
    Redirect(u16, String),
    /// Forward it (the server acts on it), then, instead of the answer, write a TLS record that
    /// cannot be decrypted onto the connection: the TLS session breaks after the request was
    /// sent (only meaningful on a proxy serving TLS).
    ForwardThenCorruptTls,
    /// Forward it, then answer with the server's JSON object without this top-level key (a
    /// server that leaves out an optional field, e.g. a table load's `metadata-location`).
    ForwardWithoutKey(String),
}

/// The TCP connection under a stream, to write bytes past the TLS layer.
trait RawSocket {
    fn raw(&mut self) -> &mut TcpStream;
}

impl RawSocket for TcpStream {
    fn raw(&mut self) -> &mut TcpStream {
        self
    }
}

impl RawSocket for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn raw(&mut self) -> &mut TcpStream {
        &mut self.sock
    }
}

/// Applies `fault` to the next `times` requests whose method is `method` and whose path
/// contains `path` — or, for a `path` of the form `x-amz-target:NAME`, whose `X-Amz-Target`
/// header is `NAME` (AWS's JSON APIs, Glue's among them, post every call to `/`).
#[derive(Debug, Clone)]
pub struct Rule {
    /// HTTP method.
    pub method: &'static str,
    /// A substring of the path (query included).
    pub path: String,
    /// What to do.
    pub fault: Fault,
    /// How many matching requests still get it.
    pub times: usize,
}

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The fault applied, if any.
    pub fault: Option<Fault>,
    /// Its headers, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    upstream: u16,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    stop: AtomicBool,
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    shared: Arc<Shared>,
    /// The port it listens on.
    pub port: u16,
    https: bool,
}

impl FaultProxy {
    /// Proxies 127.0.0.1:`port` → 127.0.0.1:`upstream`.
    pub fn start(upstream: u16) -> FaultProxy {
        Self::start_inner(upstream, None)
    }

    /// The same, serving HTTPS with `cert` (a TLS terminator in front of a plain server).
    pub fn start_tls(upstream: u16, cert: &crate::tls::CertFiles) -> FaultProxy {
        Self::start_inner(upstream, Some(crate::tls::server_config(cert, None)))
    }

    /// The same, requiring a client certificate issued by the CA in `client_ca` (mutual TLS).
    pub fn start_mtls(
        upstream: u16,
        cert: &crate::tls::CertFiles,
        client_ca: &std::path::Path,
    ) -> FaultProxy {
        Self::start_inner(
            upstream,
            Some(crate::tls::server_config(cert, Some(client_ca))),
        )
    }

    fn start_inner(upstream: u16, tls: Option<Arc<rustls::ServerConfig>>) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            upstream,
            rules: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let tls_used = tls.is_some();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                let s = s.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => handle(stream, &s),
                    Some(config) => {
                        if let Ok(conn) = rustls::ServerConnection::new(config) {
                            handle(rustls::StreamOwned::new(conn, stream), &s);
                        }
                    }
                });
            }
        });
        FaultProxy {
            shared,
            port,
            https: tls_used,
        }
    }

    /// `http://127.0.0.1:<port>` (`https://` when it serves TLS).
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Adds a rule (rules are tried in the order added).
    pub fn add(&self, method: &'static str, path: &str, fault: Fault, times: usize) {
        self.shared.rules.lock().expect("rules").push(Rule {
            method,
            path: path.to_string(),
            fault,
            times,
        });
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().expect("seen").clone()
    }

    /// Forgets what was seen.
    pub fn clear_seen(&self) {
        self.shared.seen.lock().expect("seen").clear();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One request as read: the request line and headers to forward (with `Connection: close`),
/// method, path, headers and body.
struct Request {
    head: String,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Reads one request.
fn read_request<S: Read>(reader: &mut BufReader<S>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut head = line.clone();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let trimmed = header.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let name = trimmed.split(':').next().unwrap_or_default().trim();
        if let Some((k, v)) = trimmed.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        if name.eq_ignore_ascii_case("connection") {
            continue;
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = trimmed
                .split_once(':')
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
        }
        head.push_str(&header);
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        head,
        method,
        path,
        headers,
        body,
    })
}

fn handle<S: Read + Write + RawSocket>(stream: S, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    // One request per connection: the proxy answers with `Connection: close`.
    let Some(Request {
        head,
        method,
        path,
        headers,
        body,
    }) = read_request(&mut reader)
    else {
        return;
    };
    let fault = {
        let mut rules = shared.rules.lock().expect("rules");
        rules
            .iter_mut()
            .find(|r| {
                let hit = match r.path.strip_prefix("x-amz-target:") {
                    Some(target) => headers
                        .iter()
                        .any(|(k, v)| k == "x-amz-target" && v.trim() == target),
                    None => path.contains(&r.path),
                };
                r.times > 0 && r.method == method && hit
            })
            .map(|r| {
                r.times -= 1;
                r.fault.clone()
            })
    };
    shared.seen.lock().expect("seen").push(Seen {
        method: method.clone(),
        path: path.clone(),
        fault: fault.clone(),
        headers,
    });
    let mut client = reader.into_inner();
    match &fault {
        Some(Fault::RespondJson(body)) => {
            let _ = write!(
                client,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client.flush();
            return;
        }
        Some(Fault::Unavailable) => {
            let body =
                r#"{"error":{"message":"try again","type":"ServiceUnavailable","code":503}}"#;
            let _ = write!(
                client,
                "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: \
                 application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
        Some(Fault::Redirect(status, location)) => {
            let _ = write!(
                client,
                "HTTP/1.1 {status} Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            );
            let _ = client.flush();
            return;
        }
        // Dropping the stream closes the connection without an answer.
        Some(Fault::Drop) => return,
        Some(Fault::Stall(d)) => std::thread::sleep(*d),
        Some(Fault::ForwardThenUnavailable)
        | Some(Fault::ForwardThenCorruptTls)
        | Some(Fault::ForwardWithoutKey(_))
        | None => {}
    }
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", shared.upstream)) else {
        return;
    };
    // An answer to edit must come uncompressed.
    let head = match &fault {
        Some(Fault::ForwardWithoutKey(_)) => head
            .split_inclusive("\r\n")
            .filter(|l| {
                !l.to_ascii_lowercase()
                    .trim_start()
                    .starts_with("accept-encoding:")
            })
            .collect(),
        _ => head,
    };
    if upstream.write_all(head.as_bytes()).is_err() || upstream.write_all(&body).is_err() {
        return;
    }
    let mut response = Vec::new();
    let _ = upstream.read_to_end(&mut response);
    if let Some(Fault::ForwardWithoutKey(key)) = &fault {
        response = without_key(&response, key);
    }
    if fault == Some(Fault::ForwardThenCorruptTls) {
        // An application-data record (TLS 1.2/1.3 framing) of 32 bytes no key decrypts.
        let mut record = vec![0x17, 0x03, 0x03, 0x00, 0x20];
        record.extend([0x5a; 32]);
        let raw = client.raw();
        let _ = raw.write_all(&record);
        let _ = raw.flush();
        std::thread::sleep(Duration::from_millis(200));
        return;
    }
    if fault == Some(Fault::ForwardThenUnavailable) {
        let body =
            r#"{"error":{"message":"upstream reset","type":"ServiceUnavailable","code":503}}"#;
        let _ = write!(
            client,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \
             {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let _ = client.write_all(&response);
    let _ = client.flush();
}

/// `response` (a whole HTTP/1.1 answer) with `key` removed from its JSON object body, sent with
/// a `Content-Length` (a chunked body is decoded first); unchanged when it is not JSON.
fn without_key(response: &[u8], key: &str) -> Vec<u8> {
    let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return response.to_vec();
    };
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let raw = &response[split + 4..];
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return response.to_vec();
    };
    if let Some(obj) = json.as_object_mut() {
        obj.remove(key);
    }
    let body = json.to_string();
    let mut out = String::new();
    for line in head.split("\r\n") {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") || lower.starts_with("content-length:") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    out.push_str(&body);
    out.into_bytes()
}

/// A chunked transfer-encoded body, decoded.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&raw[..end]);
        let size = size.split(';').next().unwrap_or_default().trim();
        let Ok(n) = usize::from_str_radix(size, 16) else {
            break;
        };
        if n == 0 || raw.len() < end + 2 + n {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + n]);
        raw = &raw[(end + 4 + n).min(raw.len())..];
    }
    out
}
