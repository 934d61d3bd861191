//! A local S3 Tables migration service: serves the six migration operations (plus GetTable and
//! GetTableMetadataLocation) on 127.0.0.1 over HTTPS and migrates for real against moto — reads
//! the Glue table, its partitions and Parquet objects, plans, writes the three reports to the
//! report bucket, creates the destination in moto S3 Tables, and writes Iceberg data into the
//! table's warehouse, committing as it goes.
//!
//! As strict as the service, so a test passes only where the service would let it:
//! - every request must carry a SigV4 signature (signing name `s3tables`) by one of the
//!   configured callers, verified with `aws-sigv4` ([`Verifier`]); otherwise 403;
//! - requests are routed, decoded and validated from the emulator's own reading of the service
//!   model ([`crate::service_model`]): wire names, locations, required members, enum values,
//!   lengths, ranges and patterns, and unknown members refused (400 `ValidationException`);
//!   responses are built from its own records and checked against the model's output shapes;
//! - states follow the service: new → planning → pendingReview → queued → migrating →
//!   succeeded | failed, and a cancel goes through cancelling (the work in progress finishes)
//!   to cancelled, or failed if an object failed;
//! - a migration commits each object's data as it migrates it, so a failed or cancelled one
//!   leaves what it committed in the table;
//! - a sync's statistics cover the whole table after the sync (objects migrated earlier count);
//! - a start whose planning failed before creating the table leaves the name free for a new
//!   start.
//!
//! Failure codes produced: resourceNotFound, sourceNotSupported (`EMPTY_TABLE`),
//! tableCompatibilityReport (destination exists, or invalid findings), objectCompatibilityReport
//! (an object overwritten in place before a sync), rolePermissions (a role in
//! [`EmulatorConfig::refuse_roles`]), objectMigrationReport (an object that fails to convert).

mod auth;
pub mod plan;
mod record;
mod run;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

pub use auth::{Refused, Verifier};
use record::{Kind, Record, Report, State};

use crate::aws::AwsRest;
use crate::client::encode;
use crate::http_server::{Request, Response, serve, serve_tls};
use crate::service_model::{Operation, RequestParts, ServiceModel};
use crate::sign::Signer;
use crate::source::SourceObject;

/// The operations the emulator serves.
const SERVED: [&str; 8] = [
    "StartTableMigration",
    "GetTableMigration",
    "ListTableMigrations",
    "UpdateTableMigration",
    "SyncTableMigration",
    "CompleteTableMigration",
    "GetTable",
    "GetTableMetadataLocation",
];

/// How the emulator reaches moto and behaves.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// moto's endpoint (S3, Glue and S3 Tables).
    pub moto_endpoint: String,
    /// Signing credentials and region for moto; the region is also the one callers must sign
    /// for.
    pub signer: Signer,
    /// Access key, secret and region for the destination catalog's FileIO.
    pub access_key_id: String,
    /// Secret.
    pub secret_access_key: String,
    /// Callers accepted, as (access key ID, secret): every request must be signed by one.
    pub callers: Vec<(String, String)>,
    /// Roles the emulated service refuses to assume (→ `rolePermissions`).
    pub refuse_roles: Vec<String>,
    /// Pause between state changes and between migrated objects, so pollers can watch each.
    pub step_delay: Duration,
}

/// One migration and the emulator's working state for it.
#[derive(Debug, Clone)]
pub(crate) struct Migration {
    pub(crate) record: Record,
    /// Destination table's bucket/namespace/name key.
    pub(crate) table_key: String,
    /// Objects to migrate.
    pub(crate) planned: Vec<SourceObject>,
    pub(crate) table_plan: plan::TablePlan,
    pub(crate) cancel_requested: bool,
    /// A planning or migrating task owns the migration.
    pub(crate) busy: bool,
}

/// What the emulator knows about a destination table.
#[derive(Debug, Clone, Default)]
pub(crate) struct TableState {
    /// Set once a migration created the table.
    pub(crate) table_arn: Option<String>,
    /// Source objects committed to the table: key → ETag.
    pub(crate) migrated: BTreeMap<String, String>,
    pub(crate) completed: bool,
    /// The start's decoded input (member names): source, settings, schema.
    pub(crate) start: Option<Value>,
    pub(crate) last_plan: Option<plan::TablePlan>,
}

#[derive(Debug, Default)]
pub(crate) struct EmulatorState {
    pub(crate) migrations: Vec<Migration>,
    pub(crate) tables: HashMap<String, TableState>,
}

/// The emulator's shared state and clients.
#[derive(Debug, Clone)]
pub struct Emulator {
    pub(crate) config: EmulatorConfig,
    pub(crate) aws: AwsRest,
    pub(crate) http: reqwest::Client,
    pub(crate) verifier: Verifier,
    pub(crate) state: Arc<Mutex<EmulatorState>>,
}

pub(crate) fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

pub(crate) fn table_key(bucket_arn: &str, namespace: &str, name: &str) -> String {
    format!("{bucket_arn}|{namespace}|{name}")
}

type Answer = Result<Value, Response>;

fn bad_request(message: impl AsRef<str>) -> Response {
    Response::error(400, "BadRequestException", message.as_ref())
}

fn conflict(message: impl AsRef<str>) -> Response {
    Response::error(409, "ConflictException", message.as_ref())
}

fn not_found(message: impl AsRef<str>) -> Response {
    Response::error(404, "NotFoundException", message.as_ref())
}

fn internal(message: impl AsRef<str>) -> Response {
    Response::error(500, "InternalServerErrorException", message.as_ref())
}

fn text<'a>(v: &'a Value, member: &str) -> Option<&'a str> {
    v.get(member).and_then(Value::as_str)
}

impl Emulator {
    /// An emulator over moto.
    pub fn new(config: EmulatorConfig) -> Self {
        let verifier = Verifier::new(
            config.callers.iter().cloned(),
            config.signer.region(),
            "s3tables",
        );
        let http = crate::client::http_client(&crate::client::HttpSettings::default())
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "falling back to reqwest's default client for moto");
                reqwest::Client::new()
            });
        let aws = AwsRest::with_http(
            http.clone(),
            &config.signer,
            &config.moto_endpoint,
            &config.moto_endpoint,
        );
        Emulator {
            config,
            aws,
            http,
            verifier,
            state: Arc::default(),
        }
    }

    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&mut EmulatorState) -> T) -> T {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// Serves HTTPS on `addr` (port 0 picks one) with `tls`; returns the bound address and the
    /// server task.
    pub async fn serve_tls(
        self,
        addr: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let this = Arc::new(self);
        serve_tls(addr, tls, move |req| {
            let this = this.clone();
            async move { this.handle(req).await }
        })
        .await
    }

    /// Serves plain HTTP on `addr` (for trials without a certificate; the service is HTTPS
    /// only).
    pub async fn serve(
        self,
        addr: SocketAddr,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let this = Arc::new(self);
        serve(addr, move |req| {
            let this = this.clone();
            async move { this.handle(req).await }
        })
        .await
    }

    async fn handle(&self, req: Request) -> Response {
        tracing::debug!(method = %req.method, path = %req.path, "request");
        if let Err(refused) = self.verifier.verify(&req, SystemTime::now()) {
            tracing::info!(error = refused.error_type, message = %refused.message, "refused");
            return Response::error(403, refused.error_type, &refused.message);
        }
        let model = match ServiceModel::get() {
            Ok(m) => m,
            Err(e) => return internal(e),
        };
        let Some(op) = model.route(&SERVED, &req.method, &req.segments) else {
            return Response::error(
                404,
                "UnknownOperationException",
                &format!("the emulator serves no {} {}", req.method, req.path),
            );
        };
        let parts = RequestParts {
            segments: &req.segments,
            query: &req.query,
            headers: &req.headers,
            body: &req.body,
        };
        let input = match model.decode_input(op, parts) {
            Ok(v) => v,
            Err(e) => return Response::error(400, "ValidationException", &e.0),
        };
        let answer = match op.name.as_str() {
            "StartTableMigration" => self.start(&input).await,
            "GetTableMigration" => self.get(&input),
            "ListTableMigrations" => self.list(&input),
            "UpdateTableMigration" => self.update(&input),
            "SyncTableMigration" => self.sync(&input),
            "CompleteTableMigration" => self.complete(&input),
            "GetTable" => self.get_table(&input).await,
            "GetTableMetadataLocation" => self.metadata_location(&input).await,
            other => Err(internal(format!("{other} is not served"))),
        };
        match answer {
            Err(resp) => resp,
            Ok(out) => respond(model, op, &out),
        }
    }

    async fn start(&self, input: &Value) -> Answer {
        let d = &input["destinationTable"];
        let (Some(bucket_arn), Some(namespace), Some(name)) = (
            text(d, "tableBucketARN"),
            text(d, "namespace"),
            text(d, "name"),
        ) else {
            return Err(bad_request("destinationTable is incomplete"));
        };
        if text(input, "sourceType") != Some("glueTable") || input["source"]["glueTable"].is_null()
        {
            return Err(bad_request(
                "sourceType must name the member set in source (glueTable)",
            ));
        }
        if !d["icebergSortOrder"].is_null() {
            check_sort_order(d)?;
        }
        if !d["schema"].is_null() {
            plan::check_schema_types(&d["schema"]).map_err(bad_request)?;
        }
        let key = table_key(bucket_arn, namespace, name);
        let id = uuid::Uuid::new_v4().to_string();
        let output = &input["migrationOutput"];
        let prefixes = &output["prefixes"];
        let report = |member: &str| Report {
            prefix: text(prefixes, member).map(str::to_string),
            ..Default::default()
        };
        let record = Record {
            id: id.clone(),
            table_bucket_arn: bucket_arn.into(),
            namespace: namespace.into(),
            name: name.into(),
            table_arn: None,
            kind: Kind::Start,
            state: State::New,
            role_arn: text(input, "roleARN").unwrap_or_default().into(),
            review: input["reviewMigrationPlan"].as_bool().unwrap_or(false),
            has_valid_plan: None,
            created_at: now(),
            state_updated_at: now(),
            failure: None,
            planning: None,
            stats: None,
            source: input["source"].clone(),
            data_migration: record::data_migration_overview(input.get("dataMigration")),
            bucket: text(output, "bucket").unwrap_or_default().into(),
            table_report: report("tableCompatibilityReport"),
            object_report: report("objectCompatibilityReport"),
            migration_report: report("objectMigrationReport"),
        };
        // The check and the insert under one lock: of two concurrent starts of one table,
        // exactly one is created and the other gets the 409.
        self.with_state(|s| {
            let created = s
                .tables
                .get(&key)
                .and_then(|t| t.table_arn.clone())
                .map(|_| {
                    format!("table {namespace}.{name} exists (an earlier migration created it)")
                });
            let running = s
                .migrations
                .iter()
                .find(|m| m.table_key == key && !m.record.state.terminal())
                .map(|m| {
                    format!(
                        "migration {} into {namespace}.{name} is {}",
                        m.record.id, m.record.state
                    )
                });
            if let Some(why) = created.or(running) {
                return Err(conflict(why));
            }
            s.migrations.push(Migration {
                record,
                table_key: key.clone(),
                planned: Vec::new(),
                table_plan: plan::TablePlan::default(),
                cancel_requested: false,
                busy: true,
            });
            // A start whose planning failed before creating the table left the name free; this
            // start's settings replace that one's.
            let t = s.tables.entry(key.clone()).or_default();
            t.start = Some(input.clone());
            t.last_plan = None;
            t.migrated.clear();
            Ok(())
        })?;
        let this = self.clone();
        let mid = id.clone();
        tokio::spawn(async move { this.plan(&mid).await });
        Ok(json!({"migrationId": id, "state": State::New.wire()}))
    }

    fn sync(&self, input: &Value) -> Answer {
        let table_arn = text(input, "tableARN").unwrap_or_default().to_string();
        let found = self.with_state(|s| {
            let (key, table) = s
                .tables
                .iter()
                .find(|(_, t)| t.table_arn.as_deref() == Some(table_arn.as_str()))?;
            let mine = s.migrations.iter().filter(|m| &m.table_key == key);
            let busy = mine
                .clone()
                .find(|m| !m.record.state.terminal())
                .map(|m| (m.record.id.clone(), m.record.state));
            let valid = mine.clone().any(|m| m.record.has_valid_plan == Some(true));
            Some((
                key.clone(),
                table.completed,
                busy,
                valid,
                table.start.clone(),
            ))
        });
        let Some((key, completed, busy, valid, Some(start))) = found else {
            return Err(not_found(format!("no migrated table {table_arn}")));
        };
        if completed {
            return Err(bad_request(
                "the table's migration is complete; it cannot be synced",
            ));
        }
        if let Some((m, state)) = busy {
            return Err(conflict(format!(
                "migration {m} on this table is {state}; a sync needs it to end first"
            )));
        }
        if !valid {
            return Err(conflict(
                "no start or sync of this table has a valid plan to sync from",
            ));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let d = &start["destinationTable"];
        let output = &input["migrationOutput"];
        let report = |member: &str| Report {
            prefix: text(&output["prefixes"], member).map(str::to_string),
            ..Default::default()
        };
        let record = Record {
            id: id.clone(),
            table_bucket_arn: text(d, "tableBucketARN").unwrap_or_default().into(),
            namespace: text(d, "namespace").unwrap_or_default().into(),
            name: text(d, "name").unwrap_or_default().into(),
            table_arn: Some(table_arn),
            kind: Kind::Sync,
            state: State::New,
            role_arn: text(input, "roleARN").unwrap_or_default().into(),
            review: input["reviewMigrationPlan"].as_bool().unwrap_or(false),
            has_valid_plan: None,
            created_at: now(),
            state_updated_at: now(),
            failure: None,
            planning: None,
            stats: None,
            source: start["source"].clone(),
            data_migration: record::data_migration_overview(start.get("dataMigration")),
            bucket: text(output, "bucket").unwrap_or_default().into(),
            table_report: report("tableCompatibilityReport"),
            object_report: report("objectCompatibilityReport"),
            migration_report: report("objectMigrationReport"),
        };
        // Checked again under the lock that inserts: of two concurrent syncs, exactly one is
        // created and the other gets the 409.
        self.with_state(|s| {
            if let Some(m) = s
                .migrations
                .iter()
                .find(|m| m.table_key == key && !m.record.state.terminal())
            {
                return Err(conflict(format!(
                    "migration {} on this table is {}; a sync needs it to end first",
                    m.record.id, m.record.state
                )));
            }
            s.migrations.push(Migration {
                record,
                table_key: key,
                planned: Vec::new(),
                table_plan: plan::TablePlan::default(),
                cancel_requested: false,
                busy: true,
            });
            Ok(())
        })?;
        let this = self.clone();
        let mid = id.clone();
        tokio::spawn(async move { this.plan(&mid).await });
        Ok(json!({"migrationId": id, "state": State::New.wire()}))
    }

    /// The migration a request names: by `migrationId`, or the most recent into `tableARN`
    /// (exactly one of the two).
    fn find(&self, input: &Value) -> Result<Record, Response> {
        let id = text(input, "migrationId");
        let arn = text(input, "tableARN");
        if id.is_some() == arn.is_some() {
            return Err(bad_request(
                "specify either migrationId or tableARN, not both",
            ));
        }
        self.with_state(|s| {
            s.migrations
                .iter()
                .rev()
                .find(|m| match (id, arn) {
                    (Some(i), _) => m.record.id == i,
                    (None, Some(a)) => m.record.table_arn.as_deref() == Some(a),
                    _ => false,
                })
                .map(|m| m.record.clone())
        })
        .ok_or_else(|| not_found("no migration with that migrationId or tableARN"))
    }

    fn get(&self, input: &Value) -> Answer {
        self.find(input).map(|r| r.to_value())
    }

    fn list(&self, input: &Value) -> Answer {
        let bucket = text(input, "tableBucketARN");
        let arn = text(input, "tableARN");
        let namespace = text(input, "namespace");
        let name = text(input, "name");
        if bucket.is_none() == arn.is_none() {
            return Err(bad_request("specify either tableBucketARN or tableARN"));
        }
        if namespace.is_some() && bucket.is_none() {
            return Err(bad_request("namespace requires tableBucketARN"));
        }
        if name.is_some() && namespace.is_none() {
            return Err(bad_request("name requires tableBucketARN and namespace"));
        }
        let state = text(input, "state").and_then(State::parse);
        let valid = input["hasValidPlan"].as_bool();
        let max = input["maxResults"].as_u64().unwrap_or(100).max(1) as usize;
        let start: usize = match text(input, "nextToken") {
            None => 0,
            Some(t) => t
                .parse()
                .map_err(|_| bad_request(format!("nextToken '{t}' is not valid")))?,
        };
        let all: Vec<Record> = self.with_state(|s| {
            s.migrations
                .iter()
                .rev()
                .map(|m| &m.record)
                .filter(|r| bucket.is_none_or(|b| r.table_bucket_arn == b))
                .filter(|r| namespace.is_none_or(|n| r.namespace == n))
                .filter(|r| name.is_none_or(|n| r.name == n))
                .filter(|r| arn.is_none_or(|a| r.table_arn.as_deref() == Some(a)))
                .cloned()
                .collect()
        });
        if start > all.len() {
            return Err(bad_request(format!(
                "nextToken '{start}' is not valid for this listing"
            )));
        }
        // Like the service, filters apply within a page of the scope, so a page can be empty
        // and still carry a nextToken; migrations still planning are not listed under a
        // hasValidPlan filter.
        let page: Vec<Value> = all
            .iter()
            .skip(start)
            .take(max)
            .filter(|r| state.is_none_or(|st| r.state == st))
            .filter(|r| valid.is_none_or(|v| r.has_valid_plan == Some(v)))
            .map(Record::summary)
            .collect();
        let mut out = json!({ "migrations": page });
        if let Some(next) = start.checked_add(max).filter(|n| *n < all.len()) {
            out["nextToken"] = json!(next.to_string());
        }
        Ok(out)
    }

    fn update(&self, input: &Value) -> Answer {
        let current = self.find(input)?;
        let id = current.id.clone();
        let requested = text(input, "requestedState").unwrap_or_default();
        let next = match (requested, current.state) {
            ("queued", State::PendingReview) => State::Queued,
            (
                "cancelled",
                State::New
                | State::Planning
                | State::PendingReview
                | State::Queued
                | State::Migrating,
            ) => State::Cancelling,
            (r, s) => {
                return Err(conflict(format!(
                    "migration {id} is {s}; cannot move it to {r}"
                )));
            }
        };
        let idle = self.with_state(|s| {
            let m = s.migrations.iter_mut().find(|m| m.record.id == id)?;
            if next == State::Cancelling {
                m.cancel_requested = true;
            } else {
                m.busy = true;
            }
            Some(!m.busy)
        });
        self.set_state(&id, next);
        match next {
            State::Queued => {
                let this = self.clone();
                let mid = id.clone();
                tokio::spawn(async move { this.migrate(&mid).await });
            }
            // No task owns a migration waiting for review: finish the cancel here.
            State::Cancelling if idle == Some(true) => {
                let this = self.clone();
                let mid = id.clone();
                tokio::spawn(async move {
                    this.step().await;
                    this.set_state(&mid, State::Cancelled);
                });
            }
            _ => {}
        }
        let mut out = json!({"migrationId": id, "state": next.wire()});
        if let Some(arn) = current.table_arn {
            out["tableARN"] = json!(arn);
        }
        Ok(out)
    }

    fn complete(&self, input: &Value) -> Answer {
        let arn = text(input, "tableARN").unwrap_or_default().to_string();
        self.with_state(|s| {
            let Some((key, table)) = s
                .tables
                .iter_mut()
                .find(|(_, t)| t.table_arn.as_deref() == Some(arn.as_str()))
            else {
                return Err(not_found(format!("no migrated table {arn}")));
            };
            if table.completed {
                return Err(conflict("the table's migration is already complete"));
            }
            let latest = s.migrations.iter().rev().find(|m| &m.table_key == key);
            if let Some(m) = latest.filter(|m| !m.record.state.terminal()) {
                return Err(conflict(format!(
                    "MIGRATION_IN_PROGRESS: migration {} is {}",
                    m.record.id, m.record.state
                )));
            }
            table.completed = true;
            Ok(json!({}))
        })
    }

    async fn get_table(&self, input: &Value) -> Answer {
        // moto cannot look a table up by ARN; the emulator knows the names of the tables it
        // created.
        let by_arn = text(input, "tableArn").map(|arn| {
            self.with_state(|s| {
                s.tables
                    .iter()
                    .find(|(_, t)| t.table_arn.as_deref() == Some(arn))
                    .map(|(k, _)| k.clone())
            })
        });
        let (bucket, namespace, name) = match by_arn {
            Some(Some(key)) => {
                let mut parts = key.splitn(3, '|').map(str::to_string);
                (
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                )
            }
            Some(None) => return Err(not_found("no table with that ARN")),
            None => match (
                text(input, "tableBucketARN"),
                text(input, "namespace"),
                text(input, "name"),
            ) {
                (Some(b), Some(n), Some(t)) => (b.into(), n.into(), t.into()),
                _ => {
                    return Err(bad_request(
                        "specify tableArn, or tableBucketARN, namespace and name",
                    ));
                }
            },
        };
        let mut t = self.moto_get_table(&bucket, &namespace, &name).await?;
        let arn = text(&t, "tableARN").unwrap_or_default().to_string();
        let managed = self.with_state(|s| {
            s.tables
                .values()
                .any(|st| st.table_arn.as_deref() == Some(arn.as_str()) && !st.completed)
        });
        if let Some(o) = t.as_object_mut() {
            if managed {
                o.insert(
                    "managedByService".into(),
                    json!("migration.s3tables.amazonaws.com"),
                );
            } else {
                o.remove("managedByService");
            }
        }
        Ok(t)
    }

    async fn metadata_location(&self, input: &Value) -> Answer {
        let path = format!(
            "/tables/{}/{}/{}/metadata-location",
            encode(text(input, "tableBucketARN").unwrap_or_default()),
            encode(text(input, "namespace").unwrap_or_default()),
            encode(text(input, "name").unwrap_or_default())
        );
        let (status, v) = self.moto_s3tables("GET", &path).await?;
        moto_answer(status, v, "GetTableMetadataLocationResponse")
    }

    /// GetTable from moto, checked against the model and keyed by member names.
    pub(crate) async fn moto_get_table(&self, bucket: &str, namespace: &str, name: &str) -> Answer {
        let path = format!(
            "/get-table?tableBucketARN={}&namespace={}&name={}",
            encode(bucket),
            encode(namespace),
            encode(name)
        );
        let (status, v) = self.moto_s3tables("GET", &path).await?;
        moto_answer(status, v, "GetTableResponse")
    }

    async fn moto_s3tables(
        &self,
        method: &str,
        path_and_query: &str,
    ) -> Result<(u16, Value), Response> {
        let url = format!(
            "{}{path_and_query}",
            self.config.moto_endpoint.trim_end_matches('/')
        );
        let host = reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(|h| (h.to_string(), u.port())))
            .map(|(h, p)| p.map_or(h.clone(), |p| format!("{h}:{p}")))
            .ok_or_else(|| internal(format!("bad moto endpoint {url}")))?;
        let signer = self.config.signer.for_service("s3tables");
        let signed = signer
            .sign(method, &url, &[("host", &host)], b"")
            .await
            .map_err(|e| internal(e.to_string()))?;
        let m =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| internal(e.to_string()))?;
        let mut req = self.http.request(m, &url);
        for (k, v) in signed {
            req = req.header(k, v);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| internal(format!("moto {method} {path_and_query}: {e}")))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| internal(format!("moto {method} {path_and_query}: {e}")))?;
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }

    /// Moves a migration to `state`. An ended migration stays ended, and a cancelling one
    /// ends (cancelled or failed) without passing through any other state.
    pub(crate) fn set_state(&self, id: &str, state: State) {
        self.with_state(|s| {
            if let Some(m) = s.migrations.iter_mut().find(|m| m.record.id == id)
                && m.record.state != state
                && !m.record.state.terminal()
                && (m.record.state != State::Cancelling
                    || matches!(state, State::Cancelled | State::Failed))
            {
                tracing::info!(migration_id = id, from = %m.record.state, to = %state, "state");
                m.record.state = state;
                m.record.state_updated_at = now();
            }
        });
    }

    pub(crate) fn update_record(&self, id: &str, f: impl FnOnce(&mut Migration)) {
        self.with_state(|s| {
            if let Some(m) = s.migrations.iter_mut().find(|m| m.record.id == id) {
                f(m);
            }
        });
    }

    pub(crate) fn fail(&self, id: &str, code: &'static str, detail: Option<&str>, valid: bool) {
        tracing::warn!(migration_id = id, code, ?detail, "migration failed");
        self.update_record(id, |m| {
            m.record.failure = Some((code, detail.map(str::to_string)));
            m.record.has_valid_plan = Some(valid);
        });
        self.set_state(id, State::Failed);
    }
}

/// Encodes an answer for the wire after checking it against the model's output shape: a
/// response the model does not allow is the emulator's bug, reported as a 500 rather than sent.
fn respond(model: &ServiceModel, op: &Operation, out: &Value) -> Response {
    match model.encode_output(op, out) {
        Ok(_) if op.output.is_none() => Response::empty(op.response_code),
        Ok(wire) => Response::json(op.response_code, &wire),
        Err(e) => {
            tracing::error!(operation = %op.name, error = %e, "response does not fit the model");
            internal(format!(
                "the emulator's {} response does not fit the service model: {e}",
                op.name
            ))
        }
    }
}

/// A moto answer for `shape`: errors passed on, success checked against the model.
fn moto_answer(status: u16, v: Value, shape: &str) -> Answer {
    match status {
        200 => ServiceModel::get()
            .map_err(internal)?
            .from_wire(shape, &v, shape)
            .map_err(|e| internal(format!("moto's {shape} does not fit the model: {e}"))),
        404 => Err(not_found(v["message"].as_str().unwrap_or("not found"))),
        409 => Err(conflict(v["message"].as_str().unwrap_or("conflict"))),
        400 => Err(bad_request(v["message"].as_str().unwrap_or("bad request"))),
        s => Err(internal(format!("moto answered {s}: {v}"))),
    }
}

/// StartTableMigration's checks of `icebergSortOrder`: it needs a schema, at most five fields,
/// each naming a column of the schema with a transform that fits the column's type.
fn check_sort_order(d: &Value) -> Result<(), Response> {
    let Some(fields) = d["schema"]["fields"].as_array() else {
        return Err(bad_request(
            "icebergSortOrder needs a destination schema (destinationTable.schema)",
        ));
    };
    let sort = d["icebergSortOrder"]["fields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if sort.len() > 5 {
        return Err(bad_request("a sort order can have up to five fields"));
    }
    for f in &sort {
        let id = f["sourceId"].as_i64();
        let Some(column) = fields.iter().find(|c| c["id"].as_i64() == id) else {
            return Err(bad_request(format!(
                "sort field sourceId {} names no column of the schema",
                id.unwrap_or_default()
            )));
        };
        let transform = f["transform"].as_str().unwrap_or_default();
        let ty = serde_json::from_value::<iceberg::spec::Type>(column["type"].clone()).ok();
        let fits = match (transform.parse::<iceberg::spec::Transform>(), ty) {
            (Ok(t), Some(iceberg::spec::Type::Primitive(p))) => {
                t.result_type(&iceberg::spec::Type::Primitive(p)).is_ok()
            }
            _ => false,
        };
        if !fits {
            return Err(bad_request(format!(
                "sort field transform '{transform}' does not fit column {}",
                column["name"].as_str().unwrap_or_default()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use aws_credential_types::Credentials;

    use super::*;

    /// An emulator whose moto is unreachable and whose steps take an hour: a start stays
    /// `new`, so the handlers' own checks are what the tests see.
    fn emulator() -> Emulator {
        Emulator::new(EmulatorConfig {
            moto_endpoint: "http://127.0.0.1:9".into(),
            signer: Signer::new(Credentials::for_tests(), "us-east-1", "s3tables"),
            access_key_id: "AKID".into(),
            secret_access_key: "secret".into(),
            callers: Vec::new(),
            refuse_roles: Vec::new(),
            step_delay: Duration::from_secs(3600),
        })
    }

    fn start_input(name: &str) -> Value {
        json!({
            "roleARN": "arn:aws:iam::123456789012:role/r",
            "destinationTable": {"tableBucketARN": "arn:aws:s3tables:us-east-1:123456789012:bucket/b",
                                 "namespace": "ns", "name": name},
            "sourceType": "glueTable",
            "source": {"glueTable": {"catalogId": "1", "databaseName": "db", "tableName": "s"}},
            "reviewMigrationPlan": true,
            "migrationOutput": {"bucket": "arn:aws:s3:::r"}
        })
    }

    #[tokio::test]
    async fn a_crafted_next_token_is_a_bad_request_not_a_panic() {
        let emu = emulator();
        for token in [usize::MAX.to_string(), "5".to_string()] {
            let got = emu.list(&json!({
                "tableBucketARN": "arn:aws:s3tables:us-east-1:123456789012:bucket/b",
                "nextToken": token,
                "maxResults": 10
            }));
            match got {
                Err(r) => assert_eq!(r.status, 400, "{token}"),
                Ok(v) => panic!("nextToken {token} answered {v}"),
            }
        }
    }

    /// Concurrent starts of one table: exactly one is created, the others get 409.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn of_concurrent_starts_of_one_table_exactly_one_wins() {
        let emu = emulator();
        for round in 0..40 {
            let name = format!("t{round}");
            let barrier = Arc::new(tokio::sync::Barrier::new(8));
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    let emu = emu.clone();
                    let barrier = barrier.clone();
                    let input = start_input(&name);
                    tokio::spawn(async move {
                        barrier.wait().await;
                        emu.start(&input).await
                    })
                })
                .collect();
            let mut won = 0;
            for t in tasks {
                match t.await {
                    Ok(Ok(_)) => won += 1,
                    Ok(Err(r)) => assert_eq!(r.status, 409),
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(won, 1, "table {name}: {won} starts created");
        }
    }
}
