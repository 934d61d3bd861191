//! The few S3 and Glue calls the guard (parity, reports) and the emulator need, signed with the
//! same [`Signer`] (path-style S3; Glue over JSON 1.1). Not a general AWS client.

use serde_json::{Value, json};

use crate::client::{HttpSettings, encode, http_client};
use crate::sign::Signer;
use crate::{Error, Result};

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Object {
    /// Key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag without quotes; changes when the object is overwritten.
    pub etag: String,
}

/// Path-style S3 and Glue JSON calls against one endpoint (AWS or moto).
#[derive(Debug, Clone)]
pub struct AwsRest {
    http: reqwest::Client,
    s3_endpoint: String,
    glue_endpoint: String,
    s3: Signer,
    glue: Signer,
}

fn err(what: String) -> impl FnOnce(reqwest::Error) -> Error {
    move |e| Error::Config(format!("{what}: {e}"))
}

impl AwsRest {
    /// Calls S3 at `s3_endpoint` and Glue at `glue_endpoint`, signing with `signer`'s
    /// credentials and region, over a client with [`HttpSettings::from_env`] (the AWS CLI's CA
    /// bundle). A bundle that cannot be used is an error naming it: falling back to another
    /// client would trust other CAs than the ones configured.
    pub fn new(signer: &Signer, s3_endpoint: &str, glue_endpoint: &str) -> Result<Self> {
        Self::with_settings(
            &HttpSettings::from_env(),
            signer,
            s3_endpoint,
            glue_endpoint,
        )
    }

    /// The same over a client built from `settings`.
    pub fn with_settings(
        settings: &HttpSettings,
        signer: &Signer,
        s3_endpoint: &str,
        glue_endpoint: &str,
    ) -> Result<Self> {
        Ok(Self::with_http(
            http_client(settings)?,
            signer,
            s3_endpoint,
            glue_endpoint,
        ))
    }

    /// The same over a given HTTP client (e.g. [`crate::S3TablesClient::http`], to share its
    /// trust and timeouts).
    pub fn with_http(
        http: reqwest::Client,
        signer: &Signer,
        s3_endpoint: &str,
        glue_endpoint: &str,
    ) -> Self {
        AwsRest {
            http,
            s3_endpoint: s3_endpoint.trim_end_matches('/').to_string(),
            glue_endpoint: glue_endpoint.trim_end_matches('/').to_string(),
            s3: signer.for_service("s3"),
            glue: signer.for_service("glue"),
        }
    }

    /// Regional AWS endpoints for `signer`'s region.
    pub fn regional(signer: &Signer) -> Result<Self> {
        let r = signer.region().to_string();
        Self::new(
            signer,
            &format!("https://s3.{r}.amazonaws.com"),
            &format!("https://glue.{r}.amazonaws.com"),
        )
    }

    /// Regional AWS endpoints over a given HTTP client.
    pub fn regional_with_http(http: reqwest::Client, signer: &Signer) -> Self {
        let r = signer.region().to_string();
        Self::with_http(
            http,
            signer,
            &format!("https://s3.{r}.amazonaws.com"),
            &format!("https://glue.{r}.amazonaws.com"),
        )
    }

    async fn s3_call(
        &self,
        method: &str,
        bucket: &str,
        key: &str,
        query: &str,
        body: Vec<u8>,
    ) -> Result<(u16, bytes::Bytes)> {
        self.s3_call_with(method, bucket, key, query, body, None)
            .await
    }

    async fn s3_call_with(
        &self,
        method: &str,
        bucket: &str,
        key: &str,
        query: &str,
        body: Vec<u8>,
        range: Option<&str>,
    ) -> Result<(u16, bytes::Bytes)> {
        let path: Vec<String> = key.split('/').map(encode).collect();
        let mut url = format!("{}/{}", self.s3_endpoint, encode(bucket));
        if !key.is_empty() {
            url.push('/');
            url.push_str(&path.join("/"));
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        let host = host_of(&url)?;
        let headers = [("host", host.as_str())];
        let signed = self.s3.sign(method, &url, &headers, &body).await?;
        let m = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| Error::Config(format!("method {method}: {e}")))?;
        let mut req = self.http.request(m, &url).body(body);
        for (k, v) in &signed {
            req = req.header(k, v);
        }
        if let Some(r) = range {
            req = req.header("range", r);
        }
        let what = format!("S3 {method} s3://{bucket}/{key}");
        let resp = req.send().await.map_err(err(what.clone()))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(err(what))?;
        Ok((status, bytes))
    }

    /// Reads an object; `Ok(None)` when it does not exist.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Option<bytes::Bytes>> {
        let (status, bytes) = self.s3_call("GET", bucket, key, "", Vec::new()).await?;
        match status {
            200 => Ok(Some(bytes)),
            404 => Ok(None),
            s => Err(Error::Report {
                bucket: bucket.into(),
                key: key.into(),
                message: format!("HTTP {s}: {}", String::from_utf8_lossy(&bytes)),
            }),
        }
    }

    /// Reads a byte range of an object (`bytes=<first>-<last>`, inclusive); `Ok(None)` when
    /// it does not exist.
    pub async fn get_range(
        &self,
        bucket: &str,
        key: &str,
        first: u64,
        last: u64,
    ) -> Result<Option<bytes::Bytes>> {
        let range = format!("bytes={first}-{last}");
        let (status, bytes) = self
            .s3_call_with("GET", bucket, key, "", Vec::new(), Some(&range))
            .await?;
        let want = last.saturating_sub(first) + 1;
        match status {
            206 if bytes.len() as u64 == want => Ok(Some(bytes)),
            // A server that ignores Range sends the whole object: take the range from it.
            200 if bytes.len() as u64 > last => {
                Ok(Some(bytes.slice(first as usize..=last as usize)))
            }
            404 => Ok(None),
            s => Err(Error::Config(format!(
                "S3 GET s3://{bucket}/{key} {range}: HTTP {s}, {} bytes",
                bytes.len()
            ))),
        }
    }

    /// Writes an object.
    pub async fn put_object(&self, bucket: &str, key: &str, body: Vec<u8>) -> Result<()> {
        let (status, bytes) = self.s3_call("PUT", bucket, key, "", body).await?;
        if status == 200 {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "S3 PUT s3://{bucket}/{key}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            )))
        }
    }

    /// Deletes an object.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let (status, bytes) = self.s3_call("DELETE", bucket, key, "", Vec::new()).await?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "S3 DELETE s3://{bucket}/{key}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            )))
        }
    }

    /// Lists every object under `prefix` (ListObjectsV2, following continuation tokens).
    pub async fn list_objects(&self, bucket: &str, prefix: &str) -> Result<Vec<S3Object>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut q = format!("list-type=2&prefix={}", encode(prefix));
            if let Some(t) = &token {
                q.push_str(&format!("&continuation-token={}", encode(t)));
            }
            let (status, bytes) = self.s3_call("GET", bucket, "", &q, Vec::new()).await?;
            let xml = String::from_utf8_lossy(&bytes).into_owned();
            if status != 200 {
                return Err(Error::Config(format!(
                    "S3 list s3://{bucket}/{prefix}: HTTP {status}: {xml}"
                )));
            }
            for c in elements(&xml, "Contents") {
                let key = element(c, "Key").unwrap_or_default();
                out.push(S3Object {
                    key: unescape(&key),
                    size: element(c, "Size").and_then(|s| s.parse().ok()).unwrap_or(0),
                    etag: unescape(&element(c, "ETag").unwrap_or_default())
                        .trim_matches('"')
                        .to_string(),
                });
            }
            let truncated = element(&xml, "IsTruncated").as_deref() == Some("true");
            token = element(&xml, "NextContinuationToken").map(|t| unescape(&t));
            if !truncated || token.is_none() {
                return Ok(out);
            }
        }
    }

    /// A Glue JSON 1.1 call (`AWSGlue.<action>`); returns the status and the JSON body.
    pub async fn glue(&self, action: &str, body: &Value) -> Result<(u16, Value)> {
        let url = format!("{}/", self.glue_endpoint);
        let host = host_of(&url)?;
        let target = format!("AWSGlue.{action}");
        let payload = body.to_string().into_bytes();
        let headers = [
            ("host", host.as_str()),
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amz-target", target.as_str()),
        ];
        let signed = self.glue.sign("POST", &url, &headers, &payload).await?;
        let mut req = self
            .http
            .post(&url)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", &target)
            .body(payload);
        for (k, v) in &signed {
            req = req.header(k, v);
        }
        let what = format!("Glue {action}");
        let resp = req.send().await.map_err(err(what.clone()))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(err(what))?;
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status, v))
    }

    /// Glue GetTable: `Ok(None)` when the database or table does not exist.
    pub async fn glue_table(&self, database: &str, table: &str) -> Result<Option<Value>> {
        let (status, v) = self
            .glue(
                "GetTable",
                &json!({"DatabaseName": database, "Name": table}),
            )
            .await?;
        match status {
            200 => Ok(Some(v["Table"].clone())),
            400 | 404 if is_not_found(&v) => Ok(None),
            s => Err(Error::Config(format!(
                "Glue GetTable {database}.{table}: HTTP {s}: {v}"
            ))),
        }
    }

    /// Glue GetPartitions, every page.
    pub async fn glue_partitions(&self, database: &str, table: &str) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut body = json!({"DatabaseName": database, "TableName": table});
            if let Some(t) = &token {
                body["NextToken"] = json!(t);
            }
            let (status, v) = self.glue("GetPartitions", &body).await?;
            if status != 200 {
                return Err(Error::Config(format!(
                    "Glue GetPartitions {database}.{table}: HTTP {status}: {v}"
                )));
            }
            if let Some(parts) = v["Partitions"].as_array() {
                out.extend(parts.iter().cloned());
            }
            token = v["NextToken"].as_str().map(str::to_string);
            if token.is_none() {
                return Ok(out);
            }
        }
    }
}

fn is_not_found(v: &Value) -> bool {
    v["__type"]
        .as_str()
        .is_some_and(|t| t.contains("EntityNotFound"))
}

fn host_of(url: &str) -> Result<String> {
    let u = reqwest::Url::parse(url).map_err(|e| Error::Config(format!("URL '{url}': {e}")))?;
    let host = u
        .host_str()
        .ok_or_else(|| Error::Config(format!("URL '{url}' has no host")))?;
    Ok(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

/// The ARN partition of a region (`aws-cn` for `cn-*`, `aws-us-gov` for `us-gov-*`, else
/// `aws`), for the ARN of a bucket given by name.
pub fn partition_of_region(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// Splits `s3://bucket/key` (or `s3a://`, `arn:<partition>:s3:::bucket` in any AWS partition:
/// `aws`, `aws-cn`, `aws-us-gov`, ...) into bucket and key.
pub fn split_s3_uri(uri: &str) -> Option<(String, String)> {
    if let Some(rest) = uri.strip_prefix("arn:") {
        let (partition, rest) = rest.split_once(':')?;
        if !partition.starts_with("aws") {
            return None;
        }
        let bucket = rest.strip_prefix("s3:::")?;
        return Some((bucket.trim_end_matches('/').to_string(), String::new()));
    }
    let rest = uri
        .strip_prefix("s3://")
        .or_else(|| uri.strip_prefix("s3a://"))?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    Some((bucket.to_string(), key.to_string()))
}

fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        out.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    out
}

fn element(xml: &str, tag: &str) -> Option<String> {
    elements(xml, tag).first().map(|s| s.to_string())
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&#34;", "\"")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA bundle that cannot be used is an error naming it, never a fallback client that
    /// trusts other CAs than the configured ones.
    #[test]
    fn an_unusable_ca_bundle_is_an_error_not_a_wider_trust() {
        let signer = Signer::new(
            aws_credential_types::Credentials::for_tests(),
            "us-east-1",
            "s3",
        );
        let missing = std::path::PathBuf::from("/nonexistent/iceberg-ops-ca.pem");
        let settings = HttpSettings {
            ca_bundle: Some(missing.clone()),
            ..HttpSettings::default()
        };
        let err = AwsRest::with_settings(&settings, &signer, "https://s3", "https://glue")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(&missing.display().to_string()), "{err}");
    }

    #[test]
    fn listing_xml_is_parsed() {
        let xml = "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a/b=1/x.parquet</Key>\
                   <ETag>&quot;abc&quot;</ETag><Size>12</Size></Contents></ListBucketResult>";
        let c = elements(xml, "Contents");
        assert_eq!(c.len(), 1);
        assert_eq!(element(c[0], "Key").as_deref(), Some("a/b=1/x.parquet"));
        assert_eq!(
            unescape(&element(c[0], "ETag").unwrap_or_default()),
            "\"abc\""
        );
    }

    #[test]
    fn s3_uris_split() {
        assert_eq!(
            split_s3_uri("s3://lake/t/x"),
            Some(("lake".into(), "t/x".into()))
        );
        assert_eq!(
            split_s3_uri("arn:aws:s3:::reports"),
            Some(("reports".into(), String::new()))
        );
        assert_eq!(split_s3_uri("/local"), None);
        for arn in ["arn:aws-cn:s3:::reports", "arn:aws-us-gov:s3:::reports"] {
            assert_eq!(
                split_s3_uri(arn),
                Some(("reports".to_string(), String::new())),
                "{arn}"
            );
        }
        assert_eq!(split_s3_uri("arn:aws:s3tables:us-east-1:1:bucket/b"), None);
        assert_eq!(partition_of_region("cn-north-1"), "aws-cn");
        assert_eq!(partition_of_region("us-gov-west-1"), "aws-us-gov");
        assert_eq!(partition_of_region("eu-west-1"), "aws");
    }
}
