//! A local S3 Tables migration service: serves the six migration operations (plus GetTable and
//! GetTableMetadataLocation) on 127.0.0.1 and migrates for real against moto — reads the Glue
//! table, its partitions and Parquet objects, plans, writes the three reports to the report
//! bucket, creates the destination in moto S3 Tables, writes Iceberg data and metadata into the
//! table's warehouse and commits it (UpdateTableMetadataLocation).
//!
//! States follow the service: new → planning → pendingReview → queued → migrating →
//! succeeded | failed, and cancelling → cancelled. Failure codes produced: resourceNotFound,
//! sourceNotSupported (`EMPTY_TABLE`), tableCompatibilityReport (destination exists, or invalid
//! findings), objectCompatibilityReport (an object overwritten in place before a sync),
//! rolePermissions (a role in [`EmulatorConfig::refuse_roles`]).

pub mod plan;
mod run;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::aws::AwsRest;
use crate::client::{S3TablesClient, TableRef};
use crate::http_server::{Request, Response, serve};
use crate::model::*;
use crate::sign::Signer;

/// How the emulator reaches moto and behaves.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// moto's endpoint (S3, Glue and S3 Tables).
    pub moto_endpoint: String,
    /// Signing credentials and region for moto.
    pub signer: Signer,
    /// Access key, secret and region for the destination catalog's FileIO.
    pub access_key_id: String,
    /// Secret.
    pub secret_access_key: String,
    /// Roles the emulated service refuses to assume (→ `rolePermissions`).
    pub refuse_roles: Vec<String>,
    /// Pause between state changes, so pollers can watch each state.
    pub step_delay: Duration,
}

/// One migration record.
#[derive(Debug, Clone)]
pub(crate) struct Migration {
    pub(crate) record: GetTableMigrationResponse,
    /// Destination table's ARN bucket/namespace/name key.
    pub(crate) table_key: String,
    /// Objects planned: key → etag.
    pub(crate) planned: Vec<crate::source::SourceObject>,
    pub(crate) table_plan: plan::TablePlan,
    pub(crate) cancel_requested: bool,
}

/// What the emulator knows about a destination table it created.
#[derive(Debug, Clone, Default)]
pub(crate) struct TableState {
    pub(crate) table_arn: Option<String>,
    pub(crate) migrated: BTreeMap<String, String>,
    pub(crate) completed: bool,
    pub(crate) start: Option<StartTableMigrationRequest>,
    pub(crate) last_plan: Option<plan::TablePlan>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) migrations: Vec<Migration>,
    pub(crate) tables: HashMap<String, TableState>,
}

/// The emulator's shared state and clients.
#[derive(Debug, Clone)]
pub struct Emulator {
    pub(crate) config: EmulatorConfig,
    pub(crate) aws: AwsRest,
    pub(crate) moto_s3tables: S3TablesClient,
    pub(crate) state: Arc<Mutex<State>>,
}

pub(crate) fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

pub(crate) fn table_key(bucket_arn: &str, namespace: &str, name: &str) -> String {
    format!("{bucket_arn}|{namespace}|{name}")
}

impl Emulator {
    /// An emulator over moto.
    pub fn new(config: EmulatorConfig) -> Self {
        let aws = AwsRest::new(&config.signer, &config.moto_endpoint, &config.moto_endpoint);
        let moto_s3tables =
            S3TablesClient::new(config.moto_endpoint.clone(), config.signer.clone());
        Emulator {
            config,
            aws,
            moto_s3tables,
            state: Arc::default(),
        }
    }

    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// Serves on `addr` (port 0 picks one); returns the bound address and the server task.
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
        let route = (
            req.method.as_str(),
            req.segments.first().map(String::as_str),
        );
        match route {
            ("POST", Some("start-table-migration")) => self.start(&req).await,
            ("GET", Some("get-table-migration")) => self.get(&req),
            ("GET", Some("list-table-migrations")) => self.list(&req),
            ("POST", Some("update-table-migration")) => self.update(&req),
            ("POST", Some("sync-table-migration")) => self.sync(&req).await,
            ("POST", Some("complete-table-migration")) => self.complete(&req),
            ("GET", Some("get-table")) => self.get_table(&req).await,
            ("GET", Some("tables")) if req.segments.len() == 5 => {
                match self
                    .moto_s3tables
                    .get_table_metadata_location(
                        &req.segments[1],
                        &req.segments[2],
                        &req.segments[3],
                    )
                    .await
                {
                    Ok(r) => Response::json(200, &json!(r)),
                    Err(e) => client_error(&e),
                }
            }
            _ => Response::error(
                404,
                "NotFoundException",
                &format!("no route for {} {}", req.method, req.path),
            ),
        }
    }

    async fn start(&self, req: &Request) -> Response {
        let body: StartTableMigrationRequest = match serde_json::from_slice(&req.body) {
            Ok(b) => b,
            Err(e) => return validation(&format!("StartTableMigration body: {e}")),
        };
        let Some(glue) = body.source.glue_table.clone() else {
            return Response::error(400, "BadRequestException", "source.glueTable is required");
        };
        if body.migration_output.bucket.is_empty() {
            return Response::error(
                400,
                "BadRequestException",
                "migrationOutput.bucket is required",
            );
        }
        let d = &body.destination_table;
        let key = table_key(&d.table_bucket_arn, &d.namespace, &d.name);
        // A table an earlier migration created keeps its name taken until it is deleted.
        let taken = self.with_state(|s| s.tables.contains_key(&key));
        if taken {
            return Response::error(
                409,
                "ConflictException",
                &format!(
                    "table {}.{} already exists from an earlier migration",
                    d.namespace, d.name
                ),
            );
        }
        let id = uuid::Uuid::new_v4().to_string();
        let record = GetTableMigrationResponse {
            migration_id: id.clone(),
            table_bucket_arn: d.table_bucket_arn.clone(),
            namespace: d.namespace.clone(),
            table_arn: None,
            name: d.name.clone(),
            r#type: MigrationType::Start,
            state: MigrationState::New,
            role_arn: body.role_arn.clone(),
            review_migration_plan: body.review_migration_plan.unwrap_or(false),
            has_valid_plan: None,
            created_at: now(),
            state_updated_at: now(),
            failure_reason: None,
            planning_stats: None,
            migration_stats: None,
            source_type: MigrationSourceType::GlueTable,
            source: SourceConfiguration {
                glue_table: Some(glue),
            },
            data_migration: body.data_migration.clone().unwrap_or_default(),
            migration_output: output_overview(&body.migration_output),
        };
        self.with_state(|s| {
            s.migrations.push(Migration {
                record,
                table_key: key.clone(),
                planned: Vec::new(),
                table_plan: plan::TablePlan::default(),
                cancel_requested: false,
            });
            s.tables.entry(key.clone()).or_default().start = Some(body.clone());
        });
        let this = self.clone();
        let mid = id.clone();
        tokio::spawn(async move { this.plan(&mid, &body.migration_output).await });
        Response::json(202, &json!({"migrationId": id, "state": "new"}))
    }

    async fn sync(&self, req: &Request) -> Response {
        let body: SyncTableMigrationRequest = match serde_json::from_slice(&req.body) {
            Ok(b) => b,
            Err(e) => return validation(&format!("SyncTableMigration body: {e}")),
        };
        let found = self.with_state(|s| {
            let (key, table) = s
                .tables
                .iter()
                .find(|(_, t)| t.table_arn.as_deref() == Some(body.table_arn.as_str()))?;
            let busy = s
                .migrations
                .iter()
                .find(|m| &m.table_key == key && !m.record.state.is_terminal())
                .map(|m| m.record.migration_id.clone());
            Some((key.clone(), table.completed, busy, table.start.clone()))
        });
        let Some((key, completed, busy, Some(start))) = found else {
            return Response::error(
                404,
                "NotFoundException",
                &format!("no migrated table {}", body.table_arn),
            );
        };
        if completed {
            return Response::error(
                400,
                "BadRequestException",
                "the table's migration is complete; it cannot be synced",
            );
        }
        if let Some(m) = busy {
            return Response::error(
                409,
                "ConflictException",
                &format!("migration {m} on this table is still in progress"),
            );
        }
        let id = uuid::Uuid::new_v4().to_string();
        let d = &start.destination_table;
        let record = GetTableMigrationResponse {
            migration_id: id.clone(),
            table_bucket_arn: d.table_bucket_arn.clone(),
            namespace: d.namespace.clone(),
            table_arn: Some(body.table_arn.clone()),
            name: d.name.clone(),
            r#type: MigrationType::Sync,
            state: MigrationState::New,
            role_arn: body.role_arn.clone(),
            review_migration_plan: body.review_migration_plan.unwrap_or(false),
            has_valid_plan: None,
            created_at: now(),
            state_updated_at: now(),
            failure_reason: None,
            planning_stats: None,
            migration_stats: None,
            source_type: MigrationSourceType::GlueTable,
            source: start.source.clone(),
            data_migration: start.data_migration.clone().unwrap_or_default(),
            migration_output: output_overview(&body.migration_output),
        };
        self.with_state(|s| {
            s.migrations.push(Migration {
                record,
                table_key: key,
                planned: Vec::new(),
                table_plan: plan::TablePlan::default(),
                cancel_requested: false,
            })
        });
        let this = self.clone();
        let mid = id.clone();
        let output = body.migration_output.clone();
        tokio::spawn(async move { this.plan(&mid, &output).await });
        Response::json(202, &json!({"migrationId": id, "state": "new"}))
    }

    fn find(&self, req: &Request) -> Result<GetTableMigrationResponse, Response> {
        let id = req.query("migrationId");
        let arn = req.query("tableARN");
        self.with_state(|s| {
            s.migrations
                .iter()
                .rev()
                .find(|m| {
                    id.is_some_and(|i| m.record.migration_id == i)
                        || (id.is_none() && arn.is_some() && m.record.table_arn.as_deref() == arn)
                })
                .map(|m| m.record.clone())
        })
        .ok_or_else(|| {
            Response::error(
                404,
                "NotFoundException",
                "no migration with that migrationId or tableARN",
            )
        })
    }

    fn get(&self, req: &Request) -> Response {
        match self.find(req) {
            Ok(r) => Response::json(200, &json!(r)),
            Err(e) => e,
        }
    }

    fn list(&self, req: &Request) -> Response {
        let bucket = req.query("tableBucketARN");
        let arn = req.query("tableARN");
        if bucket.is_none() == arn.is_none() {
            return Response::error(
                400,
                "BadRequestException",
                "specify either tableBucketARN or tableARN",
            );
        }
        let state = match req.query("state").map(str::parse::<MigrationState>) {
            Some(Err(e)) => return validation(&e.to_string()),
            Some(Ok(s)) => Some(s),
            None => None,
        };
        let valid = req.query("hasValidPlan").map(|v| v == "true");
        let max: usize = req
            .query("maxResults")
            .and_then(|m| m.parse().ok())
            .unwrap_or(100);
        let start: usize = req
            .query("nextToken")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let all: Vec<MigrationSummary> = self.with_state(|s| {
            s.migrations
                .iter()
                .rev()
                .map(|m| &m.record)
                .filter(|r| bucket.is_none_or(|b| r.table_bucket_arn == b))
                .filter(|r| req.query("namespace").is_none_or(|n| r.namespace == n))
                .filter(|r| req.query("name").is_none_or(|n| r.name == n))
                .filter(|r| arn.is_none_or(|a| r.table_arn.as_deref() == Some(a)))
                .map(|r| MigrationSummary {
                    migration_id: r.migration_id.clone(),
                    table_bucket_arn: r.table_bucket_arn.clone(),
                    namespace: r.namespace.clone(),
                    table_arn: r.table_arn.clone(),
                    name: r.name.clone(),
                    r#type: r.r#type,
                    state: r.state,
                    has_valid_plan: r.has_valid_plan,
                    created_at: r.created_at.clone(),
                    state_updated_at: r.state_updated_at.clone(),
                })
                .collect()
        });
        // Like the service, filters apply within a page of the scope, so a page can be empty
        // and still carry a nextToken.
        let page: Vec<_> = all
            .iter()
            .skip(start)
            .take(max.max(1))
            .filter(|r| state.is_none_or(|st| r.state == st))
            .filter(|r| valid.is_none_or(|v| r.has_valid_plan == Some(v)))
            .cloned()
            .collect();
        let next = (start + max.max(1) < all.len()).then(|| (start + max.max(1)).to_string());
        Response::json(
            200,
            &json!(ListTableMigrationsResponse {
                migrations: page,
                next_token: next
            }),
        )
    }

    fn update(&self, req: &Request) -> Response {
        let body: UpdateTableMigrationRequest = match serde_json::from_slice(&req.body) {
            Ok(b) => b,
            Err(_) => {
                return validation(&format!(
                    "1 validation error detected: Value at 'requestedState' failed to satisfy \
                     constraint: Member must satisfy enum value set: [{}]",
                    MigrationRequestedState::values().join(", ")
                ));
            }
        };
        let current = match self.find(req) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let id = current.migration_id.clone();
        let next = match (body.requested_state, current.state) {
            (MigrationRequestedState::Queued, MigrationState::PendingReview) => {
                MigrationState::Queued
            }
            (MigrationRequestedState::Cancelled, MigrationState::Migrating) => {
                MigrationState::Cancelling
            }
            (MigrationRequestedState::Cancelled, s)
                if !s.is_terminal() && s != MigrationState::Cancelling =>
            {
                MigrationState::Cancelled
            }
            (r, s) => {
                return Response::error(
                    409,
                    "ConflictException",
                    &format!("migration {id} is {s}; cannot move it to {r}"),
                );
            }
        };
        self.set_state(&id, next);
        self.with_state(|s| {
            if let Some(m) = s
                .migrations
                .iter_mut()
                .find(|m| m.record.migration_id == id)
            {
                m.cancel_requested = body.requested_state == MigrationRequestedState::Cancelled;
            }
        });
        if next == MigrationState::Queued {
            let this = self.clone();
            let mid = id.clone();
            tokio::spawn(async move { this.migrate(&mid).await });
        }
        Response::json(
            200,
            &json!(UpdateTableMigrationResponse {
                migration_id: id,
                state: next,
                table_arn: current.table_arn
            }),
        )
    }

    fn complete(&self, req: &Request) -> Response {
        let Some(arn) = req.query("tableARN") else {
            return Response::error(400, "BadRequestException", "tableARN is required");
        };
        self.with_state(|s| {
            let Some((key, table)) = s
                .tables
                .iter_mut()
                .find(|(_, t)| t.table_arn.as_deref() == Some(arn))
            else {
                return Response::error(
                    404,
                    "NotFoundException",
                    &format!("no migrated table {arn}"),
                );
            };
            if table.completed {
                return Response::error(
                    409,
                    "ConflictException",
                    "the table's migration is already complete",
                );
            }
            let latest = s.migrations.iter().rev().find(|m| &m.table_key == key);
            if let Some(m) = latest.filter(|m| !m.record.state.is_terminal()) {
                return Response::error(
                    409,
                    "ConflictException",
                    &format!(
                        "MIGRATION_IN_PROGRESS: migration {} is {}",
                        m.record.migration_id, m.record.state
                    ),
                );
            }
            table.completed = true;
            Response::empty(204)
        })
    }

    async fn get_table(&self, req: &Request) -> Response {
        let table = match (req.query("tableArn"), req.query("tableBucketARN")) {
            // moto's GetTable cannot look a table up by ARN; the emulator knows the names.
            (Some(arn), _) => {
                let key = self.with_state(|s| {
                    s.tables
                        .iter()
                        .find(|(_, t)| t.table_arn.as_deref() == Some(arn))
                        .map(|(k, _)| k.clone())
                });
                let parts = key.as_deref().map(|k| k.splitn(3, '|').collect::<Vec<_>>());
                match parts.as_deref() {
                    Some([b, n, t]) => TableRef::Name {
                        table_bucket_arn: b.to_string(),
                        namespace: n.to_string(),
                        name: t.to_string(),
                    },
                    _ => TableRef::Arn(arn.into()),
                }
            }
            (None, Some(b)) => TableRef::Name {
                table_bucket_arn: b.into(),
                namespace: req.query("namespace").unwrap_or_default().into(),
                name: req.query("name").unwrap_or_default().into(),
            },
            _ => {
                return Response::error(
                    400,
                    "BadRequestException",
                    "tableArn or tableBucketARN is required",
                );
            }
        };
        match self.moto_s3tables.get_table(&table).await {
            Ok(mut t) => {
                let managed = self.with_state(|s| {
                    s.tables.values().any(|st| {
                        st.table_arn.as_deref() == Some(t.table_arn.as_str()) && !st.completed
                    })
                });
                t.managed_by_service =
                    managed.then(|| "migration.s3tables.amazonaws.com".to_string());
                Response::json(200, &json!(t))
            }
            Err(e) => client_error(&e),
        }
    }

    pub(crate) fn set_state(&self, id: &str, state: MigrationState) {
        self.with_state(|s| {
            if let Some(m) = s
                .migrations
                .iter_mut()
                .find(|m| m.record.migration_id == id)
                && m.record.state != state
            {
                tracing::info!(migration_id = id, from = %m.record.state, to = %state, "state");
                m.record.state = state;
                m.record.state_updated_at = now();
            }
        });
    }

    pub(crate) fn update_record(&self, id: &str, f: impl FnOnce(&mut Migration)) {
        self.with_state(|s| {
            if let Some(m) = s
                .migrations
                .iter_mut()
                .find(|m| m.record.migration_id == id)
            {
                f(m);
            }
        });
    }

    pub(crate) fn fail(&self, id: &str, code: MigrationFailureCode, detail: &str, valid: bool) {
        tracing::warn!(migration_id = id, %code, detail, "migration failed");
        self.update_record(id, |m| {
            m.record.failure_reason = Some(MigrationFailureReason {
                code,
                detail: Some(detail.to_string()),
            });
            m.record.has_valid_plan = Some(valid);
        });
        self.set_state(id, MigrationState::Failed);
    }
}

fn output_overview(o: &MigrationOutputConfiguration) -> MigrationOutputOverview {
    let p = o.prefixes.clone().unwrap_or_default();
    let r = |prefix: Option<String>| ReportOverview {
        prefix,
        ..Default::default()
    };
    MigrationOutputOverview {
        bucket: o.bucket.clone(),
        table_compatibility_report: r(p.table_compatibility_report),
        object_compatibility_report: r(p.object_compatibility_report),
        object_migration_report: r(p.object_migration_report),
    }
}

fn validation(message: &str) -> Response {
    Response::error(400, "ValidationException", message)
}

fn client_error(e: &crate::Error) -> Response {
    use crate::Error as E;
    match e {
        E::NotFound { message, .. } => Response::error(404, "NotFoundException", message),
        E::Conflict { message, .. } => Response::error(409, "ConflictException", message),
        E::BadRequest { message, .. } => Response::error(400, "BadRequestException", message),
        other => Response::error(500, "InternalServerErrorException", &other.to_string()),
    }
}
