//! A Glue endpoint whose answers the test controls (moto's Glue ignores `VersionId`).
//!
//! `GetTable` answers with the given metadata location and `VersionId`; `UpdateTable` is
//! recorded and refused with `ConcurrentModificationException`, as Glue does when the table
//! changed since that `VersionId` was read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A running fake; it stops when the test process ends.
pub struct FakeGlue {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Bodies of every `UpdateTable` request received.
    pub updates: Arc<Mutex<Vec<String>>>,
}

impl FakeGlue {
    /// Serves `database.table` pointing at `metadata_location` with `version_id` (none when
    /// empty).
    pub fn start(database: &str, table: &str, metadata_location: &str, version_id: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake glue");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let updates = Arc::new(Mutex::new(Vec::new()));
        let recorded = updates.clone();
        let mut get_table = serde_json::json!({
            "Table": {
                "Name": table,
                "DatabaseName": database,
                "VersionId": version_id,
                "TableType": "EXTERNAL_TABLE",
                "Parameters": {"metadata_location": metadata_location, "table_type": "ICEBERG"},
            }
        });
        // An empty version id means a Glue-like endpoint that returns none.
        if version_id.is_empty()
            && let Some(t) = get_table["Table"].as_object_mut()
        {
            t.remove("VersionId");
        }
        let get_table = get_table.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
                let (mut target, mut length) = (String::new(), 0usize);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("x-amz-target:") {
                        target = v.trim().to_string();
                    } else if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let body = String::from_utf8_lossy(&body).to_string();
                let (status, extra, payload) = if target.ends_with("gettable") {
                    ("200 OK", String::new(), get_table.clone())
                } else if target.ends_with("updatetable") {
                    recorded.lock().expect("lock").push(body);
                    (
                        "400 Bad Request",
                        "x-amzn-ErrorType: ConcurrentModificationException\r\n".to_string(),
                        r#"{"__type":"ConcurrentModificationException","Message":"Update table failed due to concurrent modifications."}"#.to_string(),
                    )
                } else {
                    (
                        "400 Bad Request",
                        String::new(),
                        format!(
                            r#"{{"__type":"InvalidInputException","Message":"fake glue does not serve {target}"}}"#
                        ),
                    )
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.1\r\n{extra}\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                    payload.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        FakeGlue { url, updates }
    }
}
