//! What the AWS-backed pointers (Glue, S3 Tables) share: SDK configuration from a catalog's
//! settings, and error messages that keep the SDK's source chain.

use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig};

use crate::catalog::CatalogSettings;

/// The AWS configuration loader every AWS client of ops-core starts from.
pub(crate) fn config_loader() -> ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest())
}

/// The AWS SDK configuration a catalog's settings describe (as the catalog crates build it).
pub(super) async fn sdk_config(settings: &CatalogSettings, endpoint: Option<&str>) -> SdkConfig {
    let mut loader = config_loader();
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
    loader.load().await
}

pub(super) fn aws_message<E: std::error::Error>(e: &E) -> String {
    // DisplayErrorContext walks the source chain, which the plain Display hides.
    aws_smithy_types::error::display::DisplayErrorContext(e).to_string()
}
