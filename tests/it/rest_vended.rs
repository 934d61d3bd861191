//! Vended storage credentials: a REST catalog that hands out short-lived S3 session credentials
//! (as Polaris or Lakekeeper do) is asked again before they expire, and a commit keeps them.
//!
//! rustberg vends none, so the catalog here is a small REST server of the test's own that
//! answers `/v1/config`, loadTable and a commit, with new credentials on every load; the "S3"
//! records which access key signed each request, so the test sees what OpenDAL actually used.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iceberg::spec::{
    FormatVersion, NestedField, PartitionSpec, PrimitiveType, Schema, SortOrder,
    TableMetadataBuilder, Type,
};
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{NamespaceIdent, TableIdent};
use serde_json::{Value, json};

use crate::common::*;

/// One request: method, path, lower-cased headers.
type Request = (String, String, HashMap<String, String>);

/// What a test server answers: status and JSON body.
type Answer = dyn Fn(&Request, &[u8]) -> (u16, String) + Send + Sync;

/// Serves `answer` on 127.0.0.1 (one request per connection); stops with the process.
fn serve(answer: impl Fn(&Request, &[u8]) -> (u16, String) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || handle(stream, &*answer));
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn handle(stream: TcpStream, answer: &Answer) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    let (status, text) = answer(&(method, path, headers), &body);
    let reply = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = reader.get_mut().write_all(reply.as_bytes());
}

fn metadata() -> Value {
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
        ])
        .build()
        .expect("schema");
    let built = TableMetadataBuilder::new(
        schema,
        PartitionSpec::unpartition_spec(),
        SortOrder::unsorted_order(),
        "s3://vended-bucket/ns/t".into(),
        FormatVersion::V2,
        HashMap::new(),
    )
    .expect("builder")
    .build()
    .expect("metadata");
    serde_json::to_value(built.metadata).expect("json")
}

/// A REST catalog vending credentials that live `lifetime`, new ones (`AKID-<n>`) per load.
struct VendingCatalog {
    uri: String,
    loads: Arc<AtomicUsize>,
    delegation: Arc<Mutex<Vec<String>>>,
}

impl VendingCatalog {
    fn start(lifetime: Duration) -> VendingCatalog {
        let loads = Arc::new(AtomicUsize::new(0));
        let delegation = Arc::new(Mutex::new(Vec::new()));
        let metadata = metadata();
        let (l, d) = (loads.clone(), delegation.clone());
        let uri = serve(move |(method, path, headers), _body| {
            if let Some(v) = headers.get("x-iceberg-access-delegation") {
                d.lock().expect("lock").push(v.clone());
            }
            let location = "s3://vended-bucket/ns/t/metadata/00000-x.metadata.json";
            match (method.as_str(), path.split('?').next().unwrap_or_default()) {
                ("GET", "/v1/config") => {
                    (200, json!({"defaults": {}, "overrides": {}}).to_string())
                }
                ("GET", "/v1/namespaces/ns/tables/t") => {
                    let n = l.fetch_add(1, Ordering::SeqCst) + 1;
                    let expires = SystemTime::now() + lifetime;
                    let ms = expires
                        .duration_since(UNIX_EPOCH)
                        .expect("clock")
                        .as_millis();
                    let body = json!({
                        "metadata-location": location,
                        "metadata": metadata,
                        "config": {
                            "s3.access-key-id": format!("AKID-{n}"),
                            "s3.secret-access-key": format!("secret-{n}"),
                            "s3.session-token": format!("session-{n}"),
                            "s3.session-token-expires-at-ms": ms.to_string(),
                        },
                    });
                    (200, body.to_string())
                }
                ("POST", "/v1/namespaces/ns/tables/t") => {
                    let body = json!({"metadata-location": location, "metadata": metadata});
                    (200, body.to_string())
                }
                _ => (
                    404,
                    json!({"error": {"message": "no", "type": "NotFound", "code": 404}})
                        .to_string(),
                ),
            }
        });
        VendingCatalog {
            uri,
            loads,
            delegation,
        }
    }
}

/// An "S3" that answers 404 to everything and records the access key of each signature.
fn recording_s3() -> (String, Arc<Mutex<Vec<String>>>) {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let k = keys.clone();
    let uri = serve(move |(_, _, headers), _| {
        let key = headers
            .get("authorization")
            .and_then(|a| a.split("Credential=").nth(1))
            .and_then(|c| c.split('/').next())
            .unwrap_or("<unsigned>")
            .to_string();
        k.lock().expect("lock").push(key);
        (404, String::new())
    });
    (uri, keys)
}

fn last(keys: &Mutex<Vec<String>>) -> String {
    keys.lock()
        .expect("lock")
        .last()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn vended_credentials_are_renewed_before_they_expire_and_kept_by_a_commit() -> TestResult {
    init_tracing();
    // Renewed 15 s ahead (OpenDAL's signer wants 10 s left on a credential it signs with).
    let lifetime = Duration::from_secs(20);
    let catalog = VendingCatalog::start(lifetime);
    let (s3, keys) = recording_s3();
    let handle = open(
        "vending",
        &props(&[
            ("type", "rest"),
            ("uri", &catalog.uri),
            ("s3.endpoint", &s3),
            ("s3.region", "us-east-1"),
            ("s3.path-style-access", "true"),
        ]),
    )
    .await?;
    let ident = TableIdent::new(NamespaceIdent::new("ns".into()), "t".into());
    let table = handle.catalog().load_table(&ident).await?;
    let io = table.file_io().clone();
    let object = "s3://vended-bucket/ns/t/data/a.parquet";

    assert!(!io.exists(object).await?);
    assert_eq!(last(&keys), "AKID-1");
    assert_eq!(catalog.loads.load(Ordering::SeqCst), 1);

    // Near their expiry the same FileIO signs with new ones, fetched from the catalog.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(!io.exists(object).await?);
    assert_eq!(catalog.loads.load(Ordering::SeqCst), 2);
    assert_eq!(last(&keys), "AKID-2");

    // A commit's answer carries no credentials: the table it returns keeps the FileIO.
    let base = handle.catalog().load_table(&ident).await?;
    let tx = Transaction::new(&base);
    let tx = tx
        .update_table_properties()
        .set("owner".into(), "ops".into())
        .apply(tx)?;
    let committed = tx.commit(handle.catalog().as_ref()).await?;
    assert!(!committed.file_io().exists(object).await?);
    assert!(last(&keys).starts_with("AKID-"), "{:?}", keys.lock());

    // Vended credentials are asked for, as PyIceberg asks (unless a header.* says otherwise).
    let delegation = catalog.delegation.lock().expect("lock").clone();
    assert!(
        !delegation.is_empty() && delegation.iter().all(|v| v == "vended-credentials"),
        "{delegation:?}"
    );
    Ok(())
}
