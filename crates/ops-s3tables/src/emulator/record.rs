//! The emulator's own migration records and how it answers with them: values keyed by the
//! model's member names, which [`crate::service_model::ServiceModel::encode_output`] checks
//! against the output shape and renames for the wire. Nothing here uses the client's types, so
//! a name the client gets wrong cannot be hidden by the emulator getting it wrong the same way.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// `MigrationState`, as the emulator tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    New,
    Planning,
    PendingReview,
    Queued,
    Migrating,
    Succeeded,
    Failed,
    Cancelling,
    Cancelled,
}

impl State {
    pub(crate) fn wire(self) -> &'static str {
        match self {
            State::New => "new",
            State::Planning => "planning",
            State::PendingReview => "pendingReview",
            State::Queued => "queued",
            State::Migrating => "migrating",
            State::Succeeded => "succeeded",
            State::Failed => "failed",
            State::Cancelling => "cancelling",
            State::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<State> {
        [
            State::New,
            State::Planning,
            State::PendingReview,
            State::Queued,
            State::Migrating,
            State::Succeeded,
            State::Failed,
            State::Cancelling,
            State::Cancelled,
        ]
        .into_iter()
        .find(|st| st.wire() == s)
    }

    /// `succeeded`, `failed` or `cancelled`: the migration ended.
    pub(crate) fn terminal(self) -> bool {
        matches!(self, State::Succeeded | State::Failed | State::Cancelled)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.wire())
    }
}

/// `MigrationFailureCode` values the emulator produces.
pub(crate) mod code {
    pub(crate) const ROLE_PERMISSIONS: &str = "rolePermissions";
    pub(crate) const RESOURCE_NOT_FOUND: &str = "resourceNotFound";
    pub(crate) const SOURCE_NOT_SUPPORTED: &str = "sourceNotSupported";
    pub(crate) const OBJECT_MIGRATION_REPORT: &str = "objectMigrationReport";
    pub(crate) const OBJECT_COMPATIBILITY_REPORT: &str = "objectCompatibilityReport";
    pub(crate) const TABLE_COMPATIBILITY_REPORT: &str = "tableCompatibilityReport";
    pub(crate) const INTERNAL_ERROR: &str = "internalError";
}

/// `start` or `sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Start,
    Sync,
}

/// One `ReportOverview`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) prefix: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) checksum: Option<String>,
    /// `FindingCategory` → blocking findings.
    pub(crate) invalid: BTreeMap<&'static str, i64>,
}

impl Report {
    fn to_value(&self) -> Value {
        let mut o = Map::new();
        if let Some(p) = &self.prefix {
            o.insert("prefix".into(), json!(p));
        }
        if let Some(k) = &self.key {
            o.insert("key".into(), json!(k));
        }
        if let Some(c) = &self.checksum {
            o.insert("checksumCRC64NVME".into(), json!(c));
        }
        if !self.invalid.is_empty() {
            o.insert("invalidFindings".into(), json!(self.invalid));
        }
        Value::Object(o)
    }
}

/// `PlanningStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Planning {
    pub(crate) scanned: i64,
    pub(crate) planned: i64,
    pub(crate) partitions: i64,
}

/// `MigrationStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub(crate) migrated: i64,
    pub(crate) failed: i64,
    pub(crate) pending: i64,
}

/// One migration.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) id: String,
    pub(crate) table_bucket_arn: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) table_arn: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) state: State,
    pub(crate) role_arn: String,
    pub(crate) review: bool,
    pub(crate) has_valid_plan: Option<bool>,
    pub(crate) created_at: String,
    pub(crate) state_updated_at: String,
    /// Failure code and detail.
    pub(crate) failure: Option<(&'static str, Option<String>)>,
    pub(crate) planning: Option<Planning>,
    pub(crate) stats: Option<Stats>,
    /// `SourceConfiguration` as decoded (member names).
    pub(crate) source: Value,
    /// `DataMigrationOverview`: the start's settings with the service's defaults filled in.
    pub(crate) data_migration: Value,
    /// Report bucket ARN.
    pub(crate) bucket: String,
    pub(crate) table_report: Report,
    pub(crate) object_report: Report,
    pub(crate) migration_report: Report,
}

impl Record {
    /// `GetTableMigrationResponse`, member names.
    pub(crate) fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("migrationId".into(), json!(self.id));
        o.insert("tableBucketARN".into(), json!(self.table_bucket_arn));
        o.insert("namespace".into(), json!(self.namespace));
        if let Some(arn) = &self.table_arn {
            o.insert("tableARN".into(), json!(arn));
        }
        o.insert("name".into(), json!(self.name));
        o.insert("type".into(), json!(self.kind_wire()));
        o.insert("state".into(), json!(self.state.wire()));
        o.insert("roleARN".into(), json!(self.role_arn));
        o.insert("reviewMigrationPlan".into(), json!(self.review));
        if let Some(v) = self.has_valid_plan {
            o.insert("hasValidPlan".into(), json!(v));
        }
        o.insert("createdAt".into(), json!(self.created_at));
        o.insert("stateUpdatedAt".into(), json!(self.state_updated_at));
        // failureReason is returned only in the failed state.
        if let (Some((code, detail)), State::Failed) = (&self.failure, self.state) {
            let mut f = Map::new();
            f.insert("code".into(), json!(code));
            if let Some(d) = detail {
                f.insert("detail".into(), json!(d));
            }
            o.insert("failureReason".into(), Value::Object(f));
        }
        if let Some(p) = self.planning {
            o.insert(
                "planningStats".into(),
                json!({"objectsScanned": p.scanned, "objectsPlanned": p.planned,
                       "partitionCount": p.partitions}),
            );
        }
        if let Some(s) = self.stats {
            o.insert(
                "migrationStats".into(),
                json!({"objectsMigrated": s.migrated, "objectsFailedMigration": s.failed,
                       "objectsPendingMigration": s.pending}),
            );
        }
        o.insert("sourceType".into(), json!("glueTable"));
        o.insert("source".into(), self.source.clone());
        o.insert("dataMigration".into(), self.data_migration.clone());
        o.insert(
            "migrationOutput".into(),
            json!({
                "bucket": self.bucket,
                "tableCompatibilityReport": self.table_report.to_value(),
                "objectCompatibilityReport": self.object_report.to_value(),
                "objectMigrationReport": self.migration_report.to_value(),
            }),
        );
        Value::Object(o)
    }

    /// `MigrationSummary`, member names.
    pub(crate) fn summary(&self) -> Value {
        let mut o = Map::new();
        o.insert("migrationId".into(), json!(self.id));
        o.insert("tableBucketARN".into(), json!(self.table_bucket_arn));
        o.insert("namespace".into(), json!(self.namespace));
        if let Some(arn) = &self.table_arn {
            o.insert("tableARN".into(), json!(arn));
        }
        o.insert("name".into(), json!(self.name));
        o.insert("type".into(), json!(self.kind_wire()));
        o.insert("state".into(), json!(self.state.wire()));
        if let Some(v) = self.has_valid_plan {
            o.insert("hasValidPlan".into(), json!(v));
        }
        o.insert("createdAt".into(), json!(self.created_at));
        o.insert("stateUpdatedAt".into(), json!(self.state_updated_at));
        Value::Object(o)
    }

    fn kind_wire(&self) -> &'static str {
        match self.kind {
            Kind::Start => "start",
            Kind::Sync => "sync",
        }
    }
}

/// `DataMigrationOverview` from a request's `dataMigration` (member names): what was given,
/// and the service's defaults for the rest (512 MB binpack compaction, at least 3 snapshots
/// kept for 120 hours, both policies `fail`).
pub(crate) fn data_migration_overview(given: Option<&Value>) -> Value {
    let given = given.cloned().unwrap_or_else(|| json!({}));
    let pick = |v: &Value, default: Value| if v.is_null() { default } else { v.clone() };
    let m = &given["maintenanceSettings"];
    let p = &given["migrationPolicies"];
    json!({
        "maintenanceSettings": {
            "icebergCompaction": {
                "targetFileSizeMB": pick(&m["icebergCompaction"]["targetFileSizeMB"], json!(512)),
                "strategy": pick(&m["icebergCompaction"]["strategy"], json!("binpack")),
            },
            "icebergSnapshotManagement": {
                "minSnapshotsToKeep":
                    pick(&m["icebergSnapshotManagement"]["minSnapshotsToKeep"], json!(3)),
                "maxSnapshotAgeHours":
                    pick(&m["icebergSnapshotManagement"]["maxSnapshotAgeHours"], json!(120)),
            },
        },
        "migrationPolicies": {
            "unmatchedSourceFieldsPolicy":
                pick(&p["unmatchedSourceFieldsPolicy"], json!(super::plan::FAIL)),
            "incompatibleValuesPolicy":
                pick(&p["incompatibleValuesPolicy"], json!(super::plan::FAIL)),
        },
    })
}
