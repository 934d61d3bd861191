//! A deliberately small HTTP/1.1 server on tokio (one request per connection, `Connection:
//! close`) for the emulator and the client's tests, over plain TCP or TLS (rustls); enough for
//! reqwest and the AWS CLI.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A received request; path and query are percent-decoded.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request-target exactly as received (encoded path and query), for signatures.
    pub target: String,
    /// Decoded path segments joined by `/`, leading `/` kept.
    pub path: String,
    /// Raw (encoded) path segments, decoded one by one (an ARN may contain `/`).
    pub segments: Vec<String>,
    /// Decoded query pairs.
    pub query: Vec<(String, String)>,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl Request {
    /// First query value for `key`.
    pub fn query(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// First header value for lowercase `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    /// An empty response.
    pub fn empty(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A rest-json error: `x-amzn-errortype` plus `{"message": ...}`.
    pub fn error(status: u16, error_type: &str, message: &str) -> Self {
        let mut r = Self::json(status, &serde_json::json!({ "message": message }));
        r.headers
            .push(("x-amzn-errortype".into(), error_type.into()));
        r
    }
}

/// Decodes `%XX` escapes (and `+` as space in query strings when `plus` is set).
pub fn percent_decode(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Binds `addr` and serves `handler` over plain HTTP until the task is dropped; returns the
/// bound address and the serving task.
pub async fn serve<F, Fut>(
    addr: SocketAddr,
    handler: F,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    serve_on(addr, None, handler).await
}

/// Binds `addr` and serves `handler` over HTTPS with `tls` until the task is dropped.
pub async fn serve_tls<F, Fut>(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    handler: F,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    serve_on(addr, Some(tokio_rustls::TlsAcceptor::from(tls)), handler).await
}

async fn serve_on<F, Fut>(
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    handler: F,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let handler = Arc::new(handler);
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let handler = handler.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let result = match tls {
                    Some(acceptor) => match acceptor.accept(stream).await {
                        Ok(stream) => connection(stream, handler.as_ref()).await,
                        Err(e) => Err(e),
                    },
                    None => connection(stream, handler.as_ref()).await,
                };
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
    });
    Ok((local, task))
}

/// A TLS server configuration from a PEM certificate chain and a PEM private key, with the
/// workspace's one crypto provider (ops-core's aws-lc-rs, installed as the process default).
pub fn tls_config(cert_chain_pem: &[u8], key_pem: &[u8]) -> Result<rustls::ServerConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("TLS certificate: {e}"))?;
    if certs.is_empty() {
        return Err("TLS certificate: no CERTIFICATE in the PEM".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("TLS key: {e}"))?;
    ops_core::http::install_crypto_provider();
    rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS configuration: {e}"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("TLS certificate and key: {e}"))
}

async fn connection<S, F, Fut>(mut stream: S, handler: &F) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > 1 << 20 {
            return Err(std::io::Error::other("request head too large"));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        // Refused before reading: a client cannot make the server buffer what it claims.
        let refusal = Response::error(
            413,
            "RequestEntityTooLargeException",
            &format!("request body of {length} bytes exceeds {MAX_BODY}"),
        );
        return write_response(&mut stream, &refusal).await;
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    let (raw_path, raw_query) = target.split_once('?').unwrap_or((&target, ""));
    let segments: Vec<String> = raw_path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode(s, false))
        .collect();
    let query = raw_query
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect();
    let request = Request {
        method,
        target: target.clone(),
        path: format!("/{}", segments.join("/")),
        segments,
        query,
        headers,
        body,
    };
    let response = handler(request).await;
    write_response(&mut stream, &response).await
}

/// The largest request body served (the model's largest request, a start with a full schema,
/// is far smaller).
const MAX_BODY: usize = 16 << 20;

async fn write_response<S: AsyncWrite + Unpin>(
    stream: &mut S,
    response: &Response,
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        response.status,
        reason(response.status),
        response.body.len()
    );
    for (k, v) in &response.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    stream.write_all(out.as_bytes()).await?;
    stream.write_all(&response.body).await?;
    stream.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        413 => "Content Too Large",
        503 => "Service Unavailable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_larger_than_the_cap_is_refused_unread() -> anyhow::Result<()> {
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), |_req| async {
            Response::json(200, &serde_json::json!({}))
        })
        .await?;
        let mut conn = tokio::net::TcpStream::connect(addr).await?;
        conn.write_all(
            b"POST /start-table-migration HTTP/1.1\r\nhost: x\r\ncontent-length: 99999999999\r\n\r\n{",
        )
        .await?;
        let mut answer = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            conn.read_to_end(&mut answer),
        )
        .await
        .map_err(|_| anyhow::anyhow!("the server waited for the claimed body"))??;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
        Ok(())
    }
}
