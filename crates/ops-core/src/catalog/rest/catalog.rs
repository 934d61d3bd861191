//! [`iceberg::Catalog`] over [`RestClient`]: the REST spec's endpoints, with the status codes
//! mapped to [`ErrorKind`]s exactly as iceberg-catalog-rest 0.10.1 maps them, and each table's
//! FileIO configured as PyIceberg configures it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use iceberg::io::{FileIO, FileIOBuilder, StorageFactory};
use iceberg::table::Table;
use iceberg::{
    Catalog, Error as IcebergError, ErrorKind, Namespace, NamespaceIdent, TableCommit,
    TableCreation, TableIdent,
};
use iceberg_catalog_rest::{
    CommitTableRequest, CommitTableResponse, CreateNamespaceRequest, CreateTableRequest,
    ListNamespaceResponse, ListTablesResponse, LoadTableResult, NamespaceResponse,
    RegisterTableRequest, RenameTableRequest, StorageCredential, UpdateNamespacePropertiesRequest,
};
use reqwest::{Method, StatusCode};

use super::client::{Reply, RestClient};
use super::vended::VendedS3Credentials;

/// A REST catalog reached through iceberg-ops' own client (see the module docs of
/// [`crate::catalog`]'s REST support).
pub struct RestCatalog {
    client: Arc<RestClient>,
    storage: Arc<dyn StorageFactory>,
    /// The FileIO of each table last loaded or created: a commit's answer carries no `config`
    /// or credentials, so the table it returns keeps the FileIO (vended credentials and their
    /// renewal) its caller committed with, as Java's and PyIceberg's tables do.
    file_ios: std::sync::Mutex<HashMap<TableIdent, FileIO>>,
}

impl std::fmt::Debug for RestCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestCatalog")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// Keys that configure the REST client, never the table's storage: kept out of FileIO
/// properties so a secret cannot surface through a FileIO's `Debug`.
fn is_client_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    matches!(
        k.as_str(),
        "uri" | "credential" | "token" | "oauth2-server-uri" | "scope" | "audience" | "resource"
    ) || k.starts_with("header.")
        || k.starts_with("ssl.")
        || k.starts_with("rest.")
}

impl RestCatalog {
    pub(crate) fn new(client: Arc<RestClient>, storage: Arc<dyn StorageFactory>) -> Self {
        RestCatalog {
            client,
            storage,
            file_ios: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The FileIO for a table as PyIceberg builds it (see [`file_io_props`]); expiring vended
    /// S3 credentials are renewed through the catalog before they run out.
    fn file_io(&self, table: &TableIdent, props: BTreeMap<String, String>) -> FileIO {
        let renewing =
            VendedS3Credentials::loader(self.client.clone(), table.clone(), &props, file_io_props);
        let storage: Arc<dyn StorageFactory> = match renewing {
            Some(loader) => Arc::new(crate::storage::LocalWritesStorageFactory::over(Arc::new(
                iceberg_storage_opendal::OpenDalResolvingStorageFactory::new()
                    .with_s3_credential_loader(loader),
            ))),
            None => self.storage.clone(),
        };
        FileIOBuilder::new(storage).with_props(props).build()
    }

    fn table_from(&self, ident: TableIdent, result: LoadTableResult) -> iceberg::Result<Table> {
        let metadata = result.metadata.clone();
        let metadata_location = result.metadata_location.clone();
        let file_io = self.file_io(&ident, file_io_props(&self.client, result));
        if let Ok(mut known) = self.file_ios.lock() {
            known.insert(ident.clone(), file_io.clone());
        }
        let mut builder = Table::builder()
            .identifier(ident)
            .file_io(file_io)
            .metadata(metadata)
            .runtime(iceberg::Runtime::try_current()?);
        if let Some(location) = metadata_location {
            builder = builder.metadata_location(location);
        }
        builder.build()
    }

    fn not_found(&self, kind: ErrorKind, message: &str, reply: &Reply) -> IcebergError {
        self.client.error(
            kind,
            format!(
                "{message} ({}: {})",
                reply.what,
                super::client::server_message(&reply.body)
            ),
        )
    }

    async fn list_namespace_page(
        &self,
        parent: Option<&NamespaceIdent>,
        token: Option<String>,
    ) -> iceberg::Result<ListNamespaceResponse> {
        let mut query = Vec::new();
        if let Some(p) = parent {
            query.push(("parent", self.client.namespace_param(p)));
        }
        if let Some(t) = token {
            query.push(("pageToken", t));
        }
        let reply = self
            .client
            .call(Method::GET, &self.client.namespaces_url(), &query, None)
            .await?;
        match reply.status {
            StatusCode::OK => self.client.parse(&reply),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::NamespaceNotFound,
                "the parent namespace does not exist",
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn delete_table(&self, table: &TableIdent, purge: bool) -> iceberg::Result<()> {
        let query: Vec<(&str, String)> = if purge {
            vec![("purgeRequested", "true".into())]
        } else {
            Vec::new()
        };
        let reply = self
            .client
            .call(Method::DELETE, &self.client.table_url(table), &query, None)
            .await?;
        if let Ok(mut known) = self.file_ios.lock() {
            known.remove(table);
        }
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::TableNotFound,
                &format!("table {table} does not exist"),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }
}

/// A table's FileIO properties as PyIceberg builds them: catalog properties, then the table's
/// properties, its `config`, and the longest-prefix `storage-credentials` entry for its metadata
/// location, later ones winning (vended credentials beat configured ones).
fn file_io_props(client: &RestClient, result: LoadTableResult) -> BTreeMap<String, String> {
    let mut props: BTreeMap<String, String> = client
        .props()
        .iter()
        .filter(|(k, _)| !is_client_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    props.extend(
        result
            .metadata
            .properties()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    props.extend(result.config);
    if let Some(best) = best_credential(
        result.storage_credentials.as_deref().unwrap_or_default(),
        result.metadata_location.as_deref(),
    ) {
        props.extend(best.config.clone());
    }
    props
}

/// The storage credential whose prefix is the longest prefix of `location` (Java's
/// `S3FileIO.clientForStoragePath`, PyIceberg's `_resolve_storage_credentials`).
fn best_credential<'a>(
    credentials: &'a [StorageCredential],
    location: Option<&str>,
) -> Option<&'a StorageCredential> {
    let location = location?;
    credentials
        .iter()
        .filter(|c| location.starts_with(&c.prefix))
        .max_by_key(|c| c.prefix.len())
}

#[async_trait]
impl Catalog for RestCatalog {
    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> iceberg::Result<Vec<NamespaceIdent>> {
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let page = self.list_namespace_page(parent, token).await?;
            out.extend(page.namespaces);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<Namespace> {
        let reply = self
            .client
            .call_json(
                Method::POST,
                &self.client.namespaces_url(),
                &CreateNamespaceRequest {
                    namespace: namespace.clone(),
                    properties,
                },
            )
            .await?;
        match reply.status {
            StatusCode::OK => Ok(self.client.parse::<NamespaceResponse>(&reply)?.into()),
            StatusCode::CONFLICT => Err(self.not_found(
                ErrorKind::NamespaceAlreadyExists,
                &format!("namespace {} already exists", namespace.join(".")),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn get_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<Namespace> {
        let reply = self
            .client
            .call(
                Method::GET,
                &self.client.namespace_url(namespace),
                &[],
                None,
            )
            .await?;
        match reply.status {
            StatusCode::OK => Ok(self.client.parse::<NamespaceResponse>(&reply)?.into()),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::NamespaceNotFound,
                &format!("namespace {} does not exist", namespace.join(".")),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> iceberg::Result<bool> {
        let reply = self
            .client
            .call(
                Method::HEAD,
                &self.client.namespace_url(namespace),
                &[],
                None,
            )
            .await?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<()> {
        // The trait passes the full set; the REST endpoint takes removals and updates.
        let current = self.get_namespace(namespace).await?;
        let removals: Vec<String> = current
            .properties()
            .keys()
            .filter(|k| !properties.contains_key(*k))
            .cloned()
            .collect();
        let url = format!("{}/properties", self.client.namespace_url(namespace));
        let reply = self
            .client
            .call_json(
                Method::POST,
                &url,
                &UpdateNamespacePropertiesRequest {
                    removals: (!removals.is_empty()).then_some(removals),
                    updates: properties,
                },
            )
            .await?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::NamespaceNotFound,
                &format!("namespace {} does not exist", namespace.join(".")),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<()> {
        let reply = self
            .client
            .call(
                Method::DELETE,
                &self.client.namespace_url(namespace),
                &[],
                None,
            )
            .await?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::NamespaceNotFound,
                &format!("namespace {} does not exist", namespace.join(".")),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn list_tables(&self, namespace: &NamespaceIdent) -> iceberg::Result<Vec<TableIdent>> {
        let url = format!("{}/tables", self.client.namespace_url(namespace));
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let query: Vec<(&str, String)> = token
                .take()
                .map(|t| vec![("pageToken", t)])
                .unwrap_or_default();
            let reply = self.client.call(Method::GET, &url, &query, None).await?;
            let page: ListTablesResponse = match reply.status {
                StatusCode::OK => self.client.parse(&reply)?,
                StatusCode::NOT_FOUND => {
                    return Err(self.not_found(
                        ErrorKind::NamespaceNotFound,
                        &format!("namespace {} does not exist", namespace.join(".")),
                        &reply,
                    ));
                }
                _ => return Err(self.client.unexpected(&reply)),
            };
            out.extend(page.identifiers);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> iceberg::Result<Table> {
        let ident = TableIdent::new(namespace.clone(), creation.name.clone());
        let url = format!("{}/tables", self.client.namespace_url(namespace));
        let reply = self
            .client
            .call_json(
                Method::POST,
                &url,
                &CreateTableRequest {
                    name: creation.name,
                    location: creation.location,
                    schema: creation.schema,
                    partition_spec: creation.partition_spec,
                    write_order: creation.sort_order,
                    stage_create: Some(false),
                    properties: creation.properties,
                },
            )
            .await?;
        let result: LoadTableResult = match reply.status {
            StatusCode::OK => self.client.parse(&reply)?,
            StatusCode::NOT_FOUND => {
                return Err(self.not_found(
                    ErrorKind::NamespaceNotFound,
                    &format!("namespace {} does not exist", namespace.join(".")),
                    &reply,
                ));
            }
            StatusCode::CONFLICT => {
                return Err(self.not_found(
                    ErrorKind::TableAlreadyExists,
                    &format!("table {ident} already exists"),
                    &reply,
                ));
            }
            _ => return Err(self.client.unexpected(&reply)),
        };
        if result.metadata_location.is_none() {
            return Err(self.client.error(
                ErrorKind::DataInvalid,
                format!("creating {ident} returned no metadata-location"),
            ));
        }
        self.table_from(ident, result)
    }

    async fn load_table(&self, table: &TableIdent) -> iceberg::Result<Table> {
        let reply = self
            .client
            .call(Method::GET, &self.client.table_url(table), &[], None)
            .await?;
        let result: LoadTableResult = match reply.status {
            StatusCode::OK | StatusCode::NOT_MODIFIED => self.client.parse(&reply)?,
            StatusCode::NOT_FOUND => {
                return Err(self.not_found(
                    ErrorKind::TableNotFound,
                    &format!("table {table} does not exist"),
                    &reply,
                ));
            }
            _ => return Err(self.client.unexpected(&reply)),
        };
        self.table_from(table.clone(), result)
    }

    async fn drop_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.delete_table(table, false).await
    }

    async fn purge_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.delete_table(table, true).await
    }

    async fn table_exists(&self, table: &TableIdent) -> iceberg::Result<bool> {
        let reply = self
            .client
            .call(Method::HEAD, &self.client.table_url(table), &[], None)
            .await?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> iceberg::Result<()> {
        let reply = self
            .client
            .call_json(
                Method::POST,
                &self.client.url("tables/rename"),
                &RenameTableRequest {
                    source: src.clone(),
                    destination: dest.clone(),
                },
            )
            .await?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            StatusCode::NOT_FOUND => Err(self.not_found(
                ErrorKind::TableNotFound,
                &format!("table {src} does not exist (is the namespace correct?)"),
                &reply,
            )),
            StatusCode::CONFLICT => Err(self.not_found(
                ErrorKind::TableAlreadyExists,
                &format!("table {dest} already exists"),
                &reply,
            )),
            _ => Err(self.client.unexpected(&reply)),
        }
    }

    async fn register_table(
        &self,
        table: &TableIdent,
        metadata_location: String,
    ) -> iceberg::Result<Table> {
        let url = format!("{}/register", self.client.namespace_url(table.namespace()));
        let reply = self
            .client
            .call_json(
                Method::POST,
                &url,
                &RegisterTableRequest {
                    name: table.name().to_string(),
                    metadata_location,
                    overwrite: Some(false),
                },
            )
            .await?;
        let result: LoadTableResult = match reply.status {
            StatusCode::OK => self.client.parse(&reply)?,
            StatusCode::NOT_FOUND => {
                return Err(self.not_found(
                    ErrorKind::NamespaceNotFound,
                    &format!("namespace {} does not exist", table.namespace().join(".")),
                    &reply,
                ));
            }
            StatusCode::CONFLICT => {
                return Err(self.not_found(
                    ErrorKind::TableAlreadyExists,
                    &format!("table {table} already exists"),
                    &reply,
                ));
            }
            _ => return Err(self.client.unexpected(&reply)),
        };
        self.table_from(table.clone(), result)
    }

    async fn update_table(&self, mut commit: TableCommit) -> iceberg::Result<Table> {
        let ident = commit.identifier().clone();
        let updates = commit.take_updates();
        let adds = super::added_snapshots(&updates);
        let reply = self
            .client
            .call_json(
                Method::POST,
                &self.client.table_url(&ident),
                &CommitTableRequest {
                    identifier: Some(ident.clone()),
                    requirements: commit.take_requirements(),
                    updates,
                },
            )
            .await?;
        if reply.retried && !reply.status.is_success() {
            // The request was sent again after an answer (a gateway's 503) that may have come
            // after the catalog applied it; a 409 then is the repeat hitting the first attempt's
            // result. Not retryable: a transaction retry would apply the change a second time.
            // See commit/rest.rs.
            if !adds.is_empty()
                && let Ok(table) = self.load_table(&ident).await
                && adds
                    .iter()
                    .all(|id| table.metadata().snapshot_by_id(*id).is_some())
            {
                return Ok(table);
            }
            return Err(self.client.error(
                ErrorKind::Unexpected,
                format!(
                    "{} answered {} to a repeated commit ({}): the commit state of {ident} is                      unknown, the first attempt may have landed; reload the table before trying                      again",
                    reply.what,
                    reply.status,
                    super::server_message(&reply.body)
                ),
            ));
        }
        let response: CommitTableResponse = match reply.status {
            StatusCode::OK => self.client.parse(&reply)?,
            StatusCode::NOT_FOUND => {
                return Err(self.not_found(
                    ErrorKind::TableNotFound,
                    &format!("table {ident} does not exist"),
                    &reply,
                ));
            }
            StatusCode::CONFLICT => {
                return Err(self
                    .not_found(
                        ErrorKind::CatalogCommitConflicts,
                        &format!("a requirement of the commit to {ident} failed"),
                        &reply,
                    )
                    .with_retryable(true));
            }
            StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::GATEWAY_TIMEOUT => {
                return Err(self.client.error(
                    ErrorKind::Unexpected,
                    format!(
                        "{} answered {}: the commit state of {ident} is unknown",
                        reply.what, reply.status
                    ),
                ));
            }
            _ => return Err(self.client.unexpected(&reply)),
        };
        let known = self
            .file_ios
            .lock()
            .ok()
            .and_then(|known| known.get(&ident).cloned());
        let Some(file_io) = known else {
            return self.table_from(
                ident,
                LoadTableResult {
                    metadata_location: Some(response.metadata_location),
                    metadata: response.metadata,
                    config: HashMap::new(),
                    storage_credentials: None,
                },
            );
        };
        Table::builder()
            .identifier(ident)
            .file_io(file_io)
            .metadata(response.metadata)
            .metadata_location(response.metadata_location)
            .runtime(iceberg::Runtime::try_current()?)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_storage_credential_prefix_wins() {
        let creds = vec![
            StorageCredential {
                prefix: "s3://b".into(),
                config: HashMap::from([("k".into(), "short".into())]),
            },
            StorageCredential {
                prefix: "s3://b/db/t".into(),
                config: HashMap::from([("k".into(), "long".into())]),
            },
            StorageCredential {
                prefix: "s3://other".into(),
                config: HashMap::new(),
            },
        ];
        let best = best_credential(&creds, Some("s3://b/db/t/metadata/1.json"));
        assert_eq!(best.map(|c| c.config["k"].as_str()), Some("long"));
        assert!(best_credential(&creds, Some("gs://x")).is_none());
        assert!(best_credential(&creds, None).is_none());
    }

    #[test]
    fn client_keys_stay_out_of_file_io() {
        for k in [
            "credential",
            "token",
            "header.X-Api-Key",
            "ssl.cabundle",
            "rest.sigv4-enabled",
        ] {
            assert!(is_client_key(k), "{k}");
        }
        for k in [
            "s3.endpoint",
            "s3.access-key-id",
            "warehouse",
            "client.region",
        ] {
            assert!(!is_client_key(k), "{k}");
        }
    }
}
