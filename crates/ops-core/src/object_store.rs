//! Object stores iceberg's FileIO cannot list: an OpenDAL operator built from a table's FileIO
//! properties. Orphan cleanup lists a table location with it, and imports list their sources.

use std::collections::HashMap;

use iceberg::io::{
    CLIENT_REGION, S3_ACCESS_KEY_ID, S3_ALLOW_ANONYMOUS, S3_ASSUME_ROLE_ARN,
    S3_ASSUME_ROLE_EXTERNAL_ID, S3_ASSUME_ROLE_SESSION_NAME, S3_DISABLE_CONFIG_LOAD,
    S3_DISABLE_EC2_METADATA, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
};
use opendal::services::S3Config;
use opendal::{Configurator, Operator};

/// The schemes that name S3 (Java takes `s3a` and `s3n` for it too).
pub const S3_SCHEMES: [&str; 3] = ["s3", "s3a", "s3n"];

/// An OpenDAL S3 operator for `bucket` from the table's FileIO properties, read as the iceberg
/// crate's S3 storage reads them (its parser is private to that crate, and iceberg's `Storage`
/// has no listing): virtual-host addressing unless `s3.path-style-access`, as Java.
pub fn s3_operator(props: &HashMap<String, String>, bucket: &str) -> opendal::Result<Operator> {
    let get = |key: &str| props.get(key).cloned();
    let truthy = |key: &str| {
        props.get(key).is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "true" | "t" | "1" | "on"
            )
        })
    };
    let mut cfg = S3Config::default();
    cfg.bucket = bucket.to_string();
    cfg.endpoint = get(S3_ENDPOINT);
    cfg.access_key_id = get(S3_ACCESS_KEY_ID);
    cfg.secret_access_key = get(S3_SECRET_ACCESS_KEY);
    cfg.session_token = get(S3_SESSION_TOKEN);
    cfg.region = get(CLIENT_REGION).or_else(|| get(S3_REGION));
    cfg.enable_virtual_host_style = !truthy(S3_PATH_STYLE_ACCESS);
    cfg.role_arn = get(S3_ASSUME_ROLE_ARN);
    cfg.external_id = get(S3_ASSUME_ROLE_EXTERNAL_ID);
    cfg.role_session_name = get(S3_ASSUME_ROLE_SESSION_NAME);
    cfg.skip_signature = truthy(S3_ALLOW_ANONYMOUS);
    cfg.disable_ec2_metadata = truthy(S3_DISABLE_EC2_METADATA);
    cfg.disable_config_load = truthy(S3_DISABLE_CONFIG_LOAD);
    Ok(Operator::new(cfg.into_builder())?.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_operator_reads_the_fileio_properties() -> std::result::Result<(), opendal::Error> {
        let props: HashMap<String, String> = [
            (S3_ENDPOINT, "http://127.0.0.1:9000"),
            (S3_REGION, "eu-west-1"),
            (S3_PATH_STYLE_ACCESS, "true"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let op = s3_operator(&props, "lake")?;
        assert_eq!(op.info().name(), "lake");
        // The endpoint and path-style addressing reach the requests it signs.
        let debug = format!("{op:?}");
        assert!(debug.contains("127.0.0.1:9000"), "{debug}");
        Ok(())
    }
}
