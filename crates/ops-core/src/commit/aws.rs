//! What the AWS-backed pointers (Glue, S3 Tables) share: SDK configuration from a catalog's
//! settings, and error messages that keep the SDK's source chain.

use aws_config::{ConfigLoader, Region, SdkConfig};

use crate::catalog::CatalogSettings;
use crate::{Error, Result};

/// The AWS configuration loader of a catalog: [`crate::http::aws_config_loader`] with the
/// bundle the AWS CLI would trust for `profile` (`AWS_CA_BUNDLE`, else the profile's
/// `ca_bundle`); errors name the catalog.
pub(crate) fn config_loader(
    catalog: &str,
    profile: Option<&str>,
) -> std::result::Result<ConfigLoader, String> {
    let bundle = crate::http::aws_ca_bundle(profile);
    crate::http::aws_config_loader(bundle.as_deref())
        .map_err(|e| format!("catalog '{catalog}': {e}"))
}

/// The AWS SDK configuration a catalog's settings describe (as the catalog crates build it).
pub async fn sdk_config(settings: &CatalogSettings, endpoint: Option<&str>) -> Result<SdkConfig> {
    let mut loader = config_loader(settings.name(), settings.iceberg_property("profile_name"))
        .map_err(|message| Error::Catalog {
            catalog: settings.name().to_string(),
            message,
        })?;
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    if let (Some(key), Some(secret)) = (
        settings.iceberg_property("aws_access_key_id"),
        settings.iceberg_property("aws_secret_access_key"),
    ) {
        loader = loader.credentials_provider(aws_credential_types::Credentials::new(
            key,
            secret,
            settings
                .iceberg_property("aws_session_token")
                .map(str::to_string),
            None,
            "iceberg-ops",
        ));
    }
    if let Some(profile) = settings.iceberg_property("profile_name") {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = settings.iceberg_property("region_name") {
        loader = loader.region(Region::new(region.to_string()));
    }
    Ok(loader.load().await)
}

/// An AWS SDK error as a message with its whole source chain (its own `Display` says only
/// "service error").
pub fn aws_message<E: std::error::Error>(e: &E) -> String {
    // DisplayErrorContext walks the source chain, which the plain Display hides.
    aws_smithy_types::error::display::DisplayErrorContext(e).to_string()
}
