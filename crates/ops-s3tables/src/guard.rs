//! [`MigrationGuard`]: the operator runbook as code. Start with review on, wait with backoff
//! and a stuck limit, review the reports (never a built path), approve only what the review
//! allows, sync only when nothing is running, complete only a `succeeded` migration whose row
//! counts match, then confirm `managedByService` is cleared.

use std::time::{Duration, Instant};

use crate::Error;
use crate::aws::{AwsRest, split_s3_uri};
use crate::client::{S3TablesClient, TableRef};
use crate::model::*;
use crate::review::{PlanReview, Verdict, parse_report};
use crate::source::source_row_count;

/// Why the guard stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// The service refused or could not be reached.
    #[error(transparent)]
    Client(#[from] Error),
    /// The plan cannot be verified; never treat it as clean.
    #[error(
        "migration {migration_id}: cannot verify the plan: {reason}. Re-pull the record; if it \
         stays so, open an AWS Support case with the migrationId and region before approving"
    )]
    CannotVerify {
        /// The migration.
        migration_id: String,
        /// What is missing.
        reason: String,
    },
    /// The migration is not in the state the step needs.
    #[error("migration {migration_id} is {state}; {what}")]
    WrongState {
        /// The migration.
        migration_id: String,
        /// Its state.
        state: MigrationState,
        /// What the step needs and what to do.
        what: String,
    },
    /// The plan loses data and the operator has not confirmed it.
    #[error(
        "migration {migration_id} loses data column-wide: {}; re-run with explicit confirmation \
         (--confirm-data-loss) if that is intended, or cancel",
        losses.join("; ")
    )]
    DataLossNotConfirmed {
        /// The migration.
        migration_id: String,
        /// The losses.
        losses: Vec<String>,
    },
    /// The plan has blocking findings: cancel it.
    #[error(
        "migration {migration_id} cannot be approved: {}. Cancel it (requestedState cancelled); \
         to change policies, schema or sort order delete the destination table and start again",
        findings.join("; ")
    )]
    MustCancel {
        /// The migration.
        migration_id: String,
        /// The blocking findings.
        findings: Vec<String>,
    },
    /// No state change within the limit.
    #[error(
        "migration {migration_id} stuck in {state} for {waited:?} without a state change; \
         capture the migrationId and open an AWS Support case"
    )]
    Stuck {
        /// The migration.
        migration_id: String,
        /// The state it is stuck in.
        state: MigrationState,
        /// How long.
        waited: Duration,
    },
    /// The migration failed or was cancelled.
    #[error("migration {migration_id} {state}{}: {advice}", code.map(|c| format!(" ({c})")).unwrap_or_default())]
    Ended {
        /// The migration.
        migration_id: String,
        /// `failed` or `cancelled`.
        state: MigrationState,
        /// Failure code.
        code: Option<MigrationFailureCode>,
        /// What to do.
        advice: String,
    },
    /// Source and destination row counts differ.
    #[error(
        "row-count parity failed for {table_arn}: source {source_rows} rows, destination \
         {destination_rows}; sync to reconcile before completing"
    )]
    Parity {
        /// Destination table.
        table_arn: String,
        /// Source rows (Parquet footers).
        source_rows: i64,
        /// Destination rows.
        destination_rows: i64,
    },
    /// Complete returned but the table is still managed.
    #[error("{table_arn} still has managedByService = {value} after complete")]
    StillManaged {
        /// Table.
        table_arn: String,
        /// The value seen.
        value: String,
    },
}

/// Polling intervals and the stuck limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Between polls while `new`/`planning` (runbook: 45–60 s).
    pub planning_interval: Duration,
    /// Between polls while `queued`/`migrating`/`cancelling` (runbook: 30–60 s).
    pub migrating_interval: Duration,
    /// No state change for this long is an error (runbook: ~30 min).
    pub stuck_after: Duration,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        WaitPolicy {
            planning_interval: Duration::from_secs(45),
            migrating_interval: Duration::from_secs(30),
            stuck_after: Duration::from_secs(30 * 60),
        }
    }
}

/// What [`MigrationGuard::complete`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CompleteOutcome {
    /// The table.
    pub table_arn: String,
    /// Rows on both sides.
    pub rows: i64,
    /// Whether this call completed it (false: it already was).
    pub completed_now: bool,
}

/// The runbook, automated.
#[derive(Debug, Clone)]
pub struct MigrationGuard {
    client: S3TablesClient,
    aws: AwsRest,
    wait: WaitPolicy,
}

type GResult<T> = Result<T, GuardError>;

impl MigrationGuard {
    /// A guard over `client`, reading reports and source objects through `aws`.
    pub fn new(client: S3TablesClient, aws: AwsRest) -> Self {
        MigrationGuard {
            client,
            aws,
            wait: WaitPolicy::default(),
        }
    }

    /// Replaces the wait policy.
    #[must_use]
    pub fn with_wait(mut self, wait: WaitPolicy) -> Self {
        self.wait = wait;
        self
    }

    /// The client.
    pub fn client(&self) -> &S3TablesClient {
        &self.client
    }

    /// StartTableMigration with review on unless the caller turned it off explicitly.
    pub async fn start(
        &self,
        mut request: StartTableMigrationRequest,
    ) -> GResult<StartTableMigrationResponse> {
        if request.migration_output.bucket.trim().is_empty() {
            return Err(Error::Validation {
                message: "migrationOutput.bucket is required (arn:aws:s3:::<bucket>)".into(),
            }
            .into());
        }
        request.review_migration_plan.get_or_insert(true);
        Ok(self.client.start_table_migration(&request).await?)
    }

    /// Polls until the state leaves `new`/`planning` (and `queued`/`migrating`/`cancelling`
    /// when `through_migration`); a failed or cancelled end is an error with advice.
    pub async fn wait(
        &self,
        migration_id: &str,
        through_migration: bool,
    ) -> GResult<GetTableMigrationResponse> {
        let mut last_state = None;
        let mut since = Instant::now();
        let mut polls = 0u32;
        loop {
            let m = self
                .client
                .get_table_migration(Some(migration_id), None)
                .await?;
            if last_state != Some(m.state) {
                tracing::info!(migration_id, state = %m.state, "migration state");
                last_state = Some(m.state);
                since = Instant::now();
                polls = 0;
            }
            let busy = match m.state {
                MigrationState::New | MigrationState::Planning => true,
                MigrationState::Queued | MigrationState::Migrating | MigrationState::Cancelling => {
                    through_migration
                }
                _ => false,
            };
            if !busy {
                if matches!(m.state, MigrationState::Failed | MigrationState::Cancelled) {
                    return Err(ended(&m));
                }
                return Ok(m);
            }
            if since.elapsed() >= self.wait.stuck_after {
                return Err(GuardError::Stuck {
                    migration_id: migration_id.into(),
                    state: m.state,
                    waited: since.elapsed(),
                });
            }
            let base = if matches!(m.state, MigrationState::New | MigrationState::Planning) {
                self.wait.planning_interval
            } else {
                self.wait.migrating_interval
            };
            // Back off gently while nothing changes, never past twice the base interval.
            let delay = base
                .saturating_mul(1 + polls.min(1))
                .min(self.wait.stuck_after);
            polls += 1;
            tokio::time::sleep(delay).await;
        }
    }

    /// Reviews a plan at `pendingReview`: reads the table compatibility report from the key
    /// the record names.
    pub async fn review(
        &self,
        migration_id: &str,
    ) -> GResult<(GetTableMigrationResponse, PlanReview)> {
        let m = self
            .client
            .get_table_migration(Some(migration_id), None)
            .await?;
        if matches!(m.state, MigrationState::Failed | MigrationState::Cancelled) {
            return Err(ended(&m));
        }
        if m.state != MigrationState::PendingReview {
            return Err(GuardError::WrongState {
                migration_id: migration_id.into(),
                state: m.state,
                what: "review needs pendingReview (wait for planning to finish)".into(),
            });
        }
        if m.has_valid_plan != Some(true) {
            return Err(GuardError::CannotVerify {
                migration_id: migration_id.into(),
                reason: format!("hasValidPlan is {:?}, not true", m.has_valid_plan),
            });
        }
        let Some(key) = m.migration_output.table_compatibility_report.key.clone() else {
            return Err(GuardError::CannotVerify {
                migration_id: migration_id.into(),
                reason: "migrationOutput.tableCompatibilityReport.key is absent".into(),
            });
        };
        let (bucket, _) = split_s3_uri(&m.migration_output.bucket)
            .unwrap_or((m.migration_output.bucket.clone(), String::new()));
        let body =
            self.aws
                .get_object(&bucket, &key)
                .await
                .map_err(|e| GuardError::CannotVerify {
                    migration_id: migration_id.into(),
                    reason: format!("the table compatibility report cannot be read: {e}"),
                })?;
        let Some(body) = body else {
            return Err(GuardError::CannotVerify {
                migration_id: migration_id.into(),
                reason: format!(
                    "the table compatibility report s3://{bucket}/{key} does not exist"
                ),
            });
        };
        let findings = parse_report(&String::from_utf8_lossy(&body)).map_err(|reason| {
            GuardError::CannotVerify {
                migration_id: migration_id.into(),
                reason: format!("the table compatibility report is unreadable: {reason}"),
            }
        })?;
        let review = PlanReview::new(&m, findings);
        Ok((m, review))
    }

    /// Reviews, then approves (`queued`) if the verdict allows; data loss needs
    /// `confirm_data_loss`, blocking findings are refused with advice to cancel.
    pub async fn approve(
        &self,
        migration_id: &str,
        confirm_data_loss: bool,
    ) -> GResult<(PlanReview, UpdateTableMigrationResponse)> {
        let (_, review) = self.review(migration_id).await?;
        match review.verdict() {
            Verdict::Cancel(findings) => {
                return Err(GuardError::MustCancel {
                    migration_id: migration_id.into(),
                    findings,
                });
            }
            Verdict::NeedsConfirmation(losses) if !confirm_data_loss => {
                return Err(GuardError::DataLossNotConfirmed {
                    migration_id: migration_id.into(),
                    losses,
                });
            }
            _ => {}
        }
        let resp = self
            .client
            .update_table_migration(&UpdateTableMigrationRequest {
                table_arn: None,
                migration_id: Some(migration_id.into()),
                requested_state: MigrationRequestedState::Queued,
                update_description: Some("approved after plan review by iceberg-ops".into()),
            })
            .await?;
        Ok((review, resp))
    }

    /// Cancels a migration.
    pub async fn cancel(&self, migration_id: &str) -> GResult<UpdateTableMigrationResponse> {
        Ok(self
            .client
            .update_table_migration(&UpdateTableMigrationRequest {
                table_arn: None,
                migration_id: Some(migration_id.into()),
                requested_state: MigrationRequestedState::Cancelled,
                update_description: None,
            })
            .await?)
    }

    /// SyncTableMigration (review on by default), refused while any migration into the table
    /// is non-terminal.
    pub async fn sync(
        &self,
        mut request: SyncTableMigrationRequest,
    ) -> GResult<SyncTableMigrationResponse> {
        let running = self
            .client
            .list_all_table_migrations(&ListTableMigrationsRequest {
                table_arn: Some(request.table_arn.clone()),
                ..Default::default()
            })
            .await?;
        if let Some(m) = running.iter().find(|m| !m.state.is_terminal()) {
            return Err(GuardError::WrongState {
                migration_id: m.migration_id.clone(),
                state: m.state,
                what: "a sync needs every migration into the table to be terminal; approve, \
                       wait for or cancel it first"
                    .into(),
            });
        }
        request.review_migration_plan.get_or_insert(true);
        Ok(self.client.sync_table_migration(&request).await?)
    }

    /// Row counts: source Parquet footers of the Glue table against `destination_rows`.
    pub async fn parity(
        &self,
        m: &GetTableMigrationResponse,
        destination_rows: i64,
    ) -> GResult<i64> {
        let glue = m
            .source
            .glue_table
            .as_ref()
            .ok_or_else(|| Error::Validation {
                message: format!("migration {} has no glueTable source", m.migration_id),
            })?;
        let source_rows =
            source_row_count(&self.aws, &glue.database_name, &glue.table_name).await?;
        if source_rows != destination_rows {
            return Err(GuardError::Parity {
                table_arn: m.table_arn.clone().unwrap_or_default(),
                source_rows,
                destination_rows,
            });
        }
        Ok(source_rows)
    }

    /// Completes a `succeeded` migration after parity (`destination_rows` counted by the
    /// caller from the destination table), then checks `managedByService` is cleared. A second
    /// complete (409/400) is reported as already done.
    pub async fn complete(
        &self,
        migration_id: &str,
        destination_rows: i64,
    ) -> GResult<CompleteOutcome> {
        let m = self
            .client
            .get_table_migration(Some(migration_id), None)
            .await?;
        let table_arn = m.table_arn.clone().ok_or_else(|| GuardError::WrongState {
            migration_id: migration_id.into(),
            state: m.state,
            what: "the migration created no table".into(),
        })?;
        if m.state != MigrationState::Succeeded {
            return Err(GuardError::WrongState {
                migration_id: migration_id.into(),
                state: m.state,
                what: format!(
                    "complete only a succeeded migration (completing would publish a partial \
                     table). {}",
                    recovery_advice(&m)
                ),
            });
        }
        let rows = self.parity(&m, destination_rows).await?;
        let completed_now = match self.client.complete_table_migration(&table_arn).await {
            Ok(()) => true,
            Err(e) if e.is_conflict_or_bad_request() => {
                tracing::info!(%table_arn, error = %e, "already completed");
                false
            }
            Err(e) => return Err(e.into()),
        };
        let table = self
            .client
            .get_table(&TableRef::Arn(table_arn.clone()))
            .await?;
        if let Some(value) = table.managed_by_service {
            return Err(GuardError::StillManaged { table_arn, value });
        }
        Ok(CompleteOutcome {
            table_arn,
            rows,
            completed_now,
        })
    }
}

fn ended(m: &GetTableMigrationResponse) -> GuardError {
    GuardError::Ended {
        migration_id: m.migration_id.clone(),
        state: m.state,
        code: m.failure_reason.as_ref().map(|f| f.code),
        advice: recovery_advice(m),
    }
}

/// What to do next, from state, `hasValidPlan` and `failureReason` (the runbook's Recovery).
pub fn recovery_advice(m: &GetTableMigrationResponse) -> String {
    use MigrationFailureCode as C;
    let detail = m
        .failure_reason
        .as_ref()
        .and_then(|f| f.detail.clone())
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let cause = match m.failure_reason.as_ref().map(|f| f.code) {
        Some(C::ResourceNotFound) => format!(
            "A named resource does not exist{detail}: check the Glue database/table, the table \
             bucket and namespace."
        ),
        Some(C::SourceNotSupported) => format!(
            "The source cannot be migrated{detail}: it must be an external Hive table over \
             Parquet with at least one object."
        ),
        Some(C::TableCompatibilityReport) => format!(
            "The table compatibility report has blocking findings{detail}: read it (for example \
             a destination table that already exists)."
        ),
        Some(C::ObjectCompatibilityReport) => format!(
            "The object compatibility report has blocking findings{detail}: an object overwritten \
             in place (data.objectModified) cannot be synced; re-migrate fresh."
        ),
        Some(C::RolePermissions) => format!(
            "The migration could not assume roleARN{detail}: fix its trust policy \
             (migration.s3tables.amazonaws.com, no sts:ExternalId) and iam:PassRole."
        ),
        Some(C::SourcePermissions) | Some(C::DestinationPermissions) => {
            format!("The role lacks a permission{detail}: grant it.")
        }
        Some(C::ObjectMigrationReport) => format!(
            "Objects failed to copy{detail}: read the object migration report for the key and \
             error_code."
        ),
        Some(C::ReportBucketNotSupported) => {
            format!(
                "The report bucket cannot be used{detail}: use a general purpose bucket in the same account and Region."
            )
        }
        Some(C::InternalError) => {
            format!("Service error{detail}: retry; contact AWS Support if it persists.")
        }
        None => String::new(),
    };
    let next = match (m.state, m.has_valid_plan, m.table_arn.is_some()) {
        (MigrationState::Succeeded, _, _) => {
            return "Check row-count parity, then complete.".into();
        }
        (MigrationState::Failed | MigrationState::Cancelled, _, false) => {
            "No destination table was created: fix the cause and start a new migration."
        }
        (MigrationState::Failed | MigrationState::Cancelled, Some(true), true) => {
            "hasValidPlan is true: if the fix is outside the migration settings, resume with \
             sync; if it changes policies, schema, sort order or the source, delete the \
             destination table (confirm first) and start again."
        }
        (MigrationState::Failed | MigrationState::Cancelled, _, true) => {
            "hasValidPlan is not true: delete the destination table (confirm first) and start \
             again."
        }
        _ => "Wait for the migration to reach a terminal state.",
    };
    format!("{cause} {next}").trim().to_string()
}

#[cfg(test)]
mod tests {
    use aws_credential_types::Credentials;
    use serde_json::{Value, json};

    use super::*;
    use crate::http_server::{Response, serve};
    use crate::sign::Signer;

    fn record(state: &str, valid: Option<bool>, code: Option<&str>, table: bool) -> Value {
        let mut v = json!({
            "migrationId": "m-1", "tableBucketARN": "arn:b", "namespace": "ns", "name": "t",
            "type": "start", "state": state, "roleARN": "arn:r", "reviewMigrationPlan": true,
            "createdAt": "2026-11-04T00:00:00Z", "stateUpdatedAt": "2026-11-04T00:00:00Z",
            "sourceType": "glueTable",
            "source": {"glueTable": {"catalogId": "1", "databaseName": "db", "tableName": "s"}},
            "dataMigration": {}, "migrationOutput": {"bucket": "arn:aws:s3:::r"}
        });
        if let Some(b) = valid {
            v["hasValidPlan"] = json!(b);
        }
        if let Some(c) = code {
            v["failureReason"] = json!({"code": c, "detail": "d"});
        }
        if table {
            v["tableARN"] = json!("arn:t");
        }
        v
    }

    async fn guard_answering(v: Value, wait: WaitPolicy) -> anyhow::Result<MigrationGuard> {
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |_| {
            let v = v.clone();
            async move { Response::json(200, &v) }
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let client = S3TablesClient::new(format!("http://{addr}"), signer.clone());
        let aws = AwsRest::new(
            &signer,
            &format!("http://{addr}"),
            &format!("http://{addr}"),
        );
        Ok(MigrationGuard::new(client, aws).with_wait(wait))
    }

    #[tokio::test]
    async fn a_migration_without_state_change_is_reported_stuck() -> anyhow::Result<()> {
        let wait = WaitPolicy {
            planning_interval: Duration::from_millis(5),
            migrating_interval: Duration::from_millis(5),
            stuck_after: Duration::from_millis(60),
        };
        let g = guard_answering(record("migrating", Some(true), None, true), wait).await?;
        let err = g.wait("m-1", true).await;
        match err {
            Err(e @ GuardError::Stuck { .. }) => assert!(e.to_string().contains("m-1"), "{e}"),
            other => anyhow::bail!("expected Stuck, got {other:?}"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn review_without_a_valid_plan_or_report_cannot_verify() -> anyhow::Result<()> {
        let g = guard_answering(
            record("pendingReview", None, None, true),
            WaitPolicy::default(),
        )
        .await?;
        assert!(matches!(
            g.review("m-1").await,
            Err(GuardError::CannotVerify { .. })
        ));
        // Valid plan, but no report key.
        let g = guard_answering(
            record("pendingReview", Some(true), None, true),
            WaitPolicy::default(),
        )
        .await?;
        match g.review("m-1").await {
            Err(GuardError::CannotVerify { reason, .. }) => {
                assert!(reason.contains("key is absent"), "{reason}")
            }
            other => anyhow::bail!("expected CannotVerify, got {other:?}"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn complete_refuses_anything_but_succeeded() -> anyhow::Result<()> {
        let g = guard_answering(
            record("failed", Some(true), Some("objectMigrationReport"), true),
            WaitPolicy::default(),
        )
        .await?;
        match g.complete("m-1", 0).await {
            Err(GuardError::WrongState { what, .. }) => assert!(what.contains("sync"), "{what}"),
            other => anyhow::bail!("expected WrongState, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn advice_follows_the_recovery_rules() -> anyhow::Result<()> {
        let m = |v| serde_json::from_value::<GetTableMigrationResponse>(v);
        let a = recovery_advice(&m(record(
            "failed",
            Some(false),
            Some("resourceNotFound"),
            false,
        ))?);
        assert!(a.contains("start a new migration"), "{a}");
        let a = recovery_advice(&m(record("cancelled", Some(true), None, true))?);
        assert!(a.contains("resume with sync"), "{a}");
        let a = recovery_advice(&m(record(
            "failed",
            Some(false),
            Some("tableCompatibilityReport"),
            true,
        ))?);
        assert!(a.contains("delete the destination table"), "{a}");
        let a = recovery_advice(&m(record("succeeded", Some(true), None, true))?);
        assert!(a.contains("parity"), "{a}");
        Ok(())
    }
}
