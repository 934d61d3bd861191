//! PyIceberg 0.12 as an independent oracle.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::tools;

const MARKER: &str = "__ORACLE_RESULT__";

/// Runs `code` (see `tests/py/oracle.py` for what is in scope) against catalog `name` with
/// PyIceberg `properties`, and returns what it `emit`ted.
pub fn pyiceberg(
    name: &str,
    properties: &BTreeMap<String, String>,
    code: &str,
) -> anyhow::Result<serde_json::Value> {
    let request = serde_json::json!({ "catalog": name, "properties": properties, "code": code });
    let mut command = Command::new(tools::python());
    if properties.contains_key("ssl.cabundle") {
        // requests lets these variables override a session's `verify` (its issue 3829), which
        // would hide the `ssl.cabundle` the test configured.
        command
            .env_remove("REQUESTS_CA_BUNDLE")
            .env_remove("CURL_CA_BUNDLE");
    }
    let mut child = command
        .arg(tools::py_script("oracle.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("start the PyIceberg oracle")?;
    child
        .stdin
        .take()
        .context("oracle stdin")?
        .write_all(request.to_string().as_bytes())?;
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "PyIceberg oracle failed ({}):\n{stderr}\n{stdout}",
            out.status
        );
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(MARKER))
        .with_context(|| format!("the oracle emitted nothing:\n{stdout}\n{stderr}"))?;
    Ok(serde_json::from_str(line)?)
}
