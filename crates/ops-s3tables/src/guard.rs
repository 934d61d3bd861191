//! [`MigrationGuard`]: the operator runbook as code. Start with review on (off only where no
//! policy can lose data), wait with backoff and a stuck limit that grows with the table, review
//! the reports (never a built path; a missing report is "cannot verify"), approve only what the
//! review allows (data loss and converted columns confirmed by name), sync only when nothing is
//! running, complete only when the table's latest migration succeeded and its row counts
//! match, then confirm `managedByService` is cleared.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::Error;
use crate::aws::{AwsRest, split_s3_uri};
use crate::client::{S3TablesClient, TableRef};
use crate::model::*;
use crate::review::{PlanReview, Verdict, parse_report};
use crate::source::{source_objects, source_row_count};

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
    /// The plan loses data or converts columns and the operator has not confirmed exactly
    /// those columns.
    #[error(
        "migration {migration_id} {what}: {}; confirmed: [{}]. Review the plan, then approve \
         naming exactly these columns ({flag} {}), or cancel",
        details.join("; "),
        confirmed.join(","),
        columns.join(",")
    )]
    NotConfirmed {
        /// The migration.
        migration_id: String,
        /// `loses data column-wide` or `converts columns (values change)`.
        what: &'static str,
        /// The flag that confirms them.
        flag: &'static str,
        /// Each column and what happens to it.
        details: Vec<String>,
        /// The columns the plan needs confirmed.
        columns: Vec<String>,
        /// The columns the operator confirmed.
        confirmed: Vec<String>,
    },
    /// A plan must be reviewed: without review nobody confirms its converted or lost columns.
    #[error(
        "{what}: the plan must be reviewed (reviewMigrationPlan true) so that its converted \
         columns and column-wide losses are confirmed by name ({policies}); drop --no-review"
    )]
    ReviewRequired {
        /// The request refused.
        what: String,
        /// What the plan could do unconfirmed: the lossy policies, or conversions, which
        /// every policy allows.
        policies: String,
    },
    /// Complete was refused by the service and the table is not completed.
    #[error("complete of {table_arn} was refused ({reason}); the table is not completed. {advice}")]
    CompleteRefused {
        /// Table.
        table_arn: String,
        /// The service's answer.
        reason: String,
        /// What to do.
        advice: String,
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
    #[error("migration {migration_id} {state}{}: {advice}", code.as_ref().map(|c| format!(" ({c})")).unwrap_or_default())]
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
    /// No progress (state or object counts) for this long is an error on a modest table
    /// (runbook: ~30 min).
    pub stuck_after: Duration,
    /// The slowest rate a plain S3 copy of the source's bytes is assumed to reach: while
    /// queued or migrating, the stuck limit grows by the source's size at this rate, so a large
    /// table is not called stuck before a copy of it could have finished (runbook: "elapsed
    /// time well beyond a plain S3 copy of the same byte volume").
    pub copy_bytes_per_sec: u64,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        WaitPolicy {
            planning_interval: Duration::from_secs(45),
            migrating_interval: Duration::from_secs(30),
            stuck_after: Duration::from_secs(30 * 60),
            copy_bytes_per_sec: 10 * 1024 * 1024,
        }
    }
}

impl WaitPolicy {
    /// The stuck limit for a source of `bytes` (`None`: unknown, the base limit).
    pub fn stuck_limit(&self, bytes: Option<u64>) -> Duration {
        let copy = bytes
            .map(|b| {
                // A huge size at a slow rate is longer than a Duration: no limit then.
                Duration::try_from_secs_f64(b as f64 / self.copy_bytes_per_sec.max(1) as f64)
                    .unwrap_or(Duration::MAX)
            })
            .unwrap_or_default();
        self.stuck_after.saturating_add(copy)
    }
}

/// The columns an operator confirms by name at approval, as reviewed: a plan that changed
/// since (another column lost, or one no longer lost) does not match and is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confirmation {
    /// Columns whose column-wide loss (`setNull`, `dropped`) is accepted.
    pub data_loss: Vec<String>,
    /// Columns whose conversion (`schemaTransformation.converted`) is accepted.
    pub converted: Vec<String>,
}

fn column_set(v: &[String]) -> BTreeSet<String> {
    v.iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Whether a migration's policies can lose whole columns; names them.
fn lossy_policies(p: &MigrationPolicies) -> Option<String> {
    let mut lossy = Vec::new();
    if p.incompatible_values_policy == Some(IncompatibleValuesPolicy::SetNull) {
        lossy.push("incompatibleValuesPolicy setNull");
    }
    if p.unmatched_source_fields_policy == Some(UnmatchedSourceFieldsPolicy::Drop) {
        lossy.push("unmatchedSourceFieldsPolicy drop");
    }
    (!lossy.is_empty()).then(|| lossy.join(" and "))
}

/// What a plan without review could do that nobody confirmed.
fn unconfirmed(p: &MigrationPolicies) -> String {
    match lossy_policies(p) {
        Some(lossy) => format!("with {lossy} a whole column can be lost"),
        None => "every policy lets a plan convert columns".into(),
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

    /// StartTableMigration with review on. Turning review off is refused whatever the
    /// policies: the runbook always reviews, and even under the default `fail` policies a plan
    /// can convert columns, which must be confirmed by name (`--confirm-converted`).
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
        let review = *request.review_migration_plan.get_or_insert(true);
        if !review {
            let policies = request
                .data_migration
                .as_ref()
                .and_then(|d| d.migration_policies.clone())
                .unwrap_or_default();
            return Err(GuardError::ReviewRequired {
                what: format!(
                    "a start of {}.{} without review",
                    request.destination_table.namespace, request.destination_table.name
                ),
                policies: unconfirmed(&policies),
            });
        }
        Ok(self.client.start_table_migration(&request).await?)
    }

    /// Polls until the state leaves `new`/`planning` (and `queued`/`migrating`/`cancelling`
    /// when `through_migration`); a failed or cancelled end is an error with advice. A state
    /// this version does not know is waited on like a running one. No progress (neither state
    /// nor object counts change) for the stuck limit is an error; while the migration copies,
    /// the limit grows with the source's size ([`WaitPolicy::stuck_limit`]).
    pub async fn wait(
        &self,
        migration_id: &str,
        through_migration: bool,
    ) -> GResult<GetTableMigrationResponse> {
        let mut last: Option<(MigrationState, Option<MigrationStats>)> = None;
        let mut since = Instant::now();
        let mut polls = 0u32;
        let mut source_bytes: Option<Option<u64>> = None;
        loop {
            let m = self
                .client
                .get_table_migration(Some(migration_id), None)
                .await?;
            let progress = (m.state.clone(), m.migration_stats.clone());
            if last.as_ref() != Some(&progress) {
                if last.as_ref().map(|l| &l.0) != Some(&m.state) {
                    tracing::info!(migration_id, state = %m.state, "migration state");
                }
                last = Some(progress);
                since = Instant::now();
                polls = 0;
            }
            let copying = matches!(
                m.state,
                MigrationState::Queued | MigrationState::Migrating | MigrationState::Cancelling
            );
            let busy = match &m.state {
                MigrationState::New | MigrationState::Planning | MigrationState::Unknown(_) => true,
                _ if copying => through_migration,
                _ => false,
            };
            if !busy {
                if matches!(m.state, MigrationState::Failed | MigrationState::Cancelled) {
                    return Err(ended(&m));
                }
                return Ok(m);
            }
            if copying && source_bytes.is_none() {
                source_bytes = Some(self.source_bytes(&m).await);
            }
            let limit = self.wait.stuck_limit(source_bytes.flatten());
            if since.elapsed() >= limit {
                return Err(GuardError::Stuck {
                    migration_id: migration_id.into(),
                    state: m.state,
                    waited: since.elapsed(),
                });
            }
            let base = if copying {
                self.wait.migrating_interval
            } else {
                self.wait.planning_interval
            };
            // Back off gently while nothing changes, never past twice the base interval.
            let delay = base.saturating_mul(1 + polls.min(1)).min(limit);
            polls += 1;
            tokio::time::sleep(delay).await;
        }
    }

    /// Bytes of the migration's source objects (a listing, no reads); `None` when they cannot
    /// be listed (the base stuck limit applies).
    async fn source_bytes(&self, m: &GetTableMigrationResponse) -> Option<u64> {
        let glue = m.source.glue_table.as_ref()?;
        let listed = async {
            let t = self
                .aws
                .glue_table(&glue.database_name, &glue.table_name)
                .await?
                .ok_or_else(|| Error::Config("Glue table not found".into()))?;
            let parts = self
                .aws
                .glue_partitions(&glue.database_name, &glue.table_name)
                .await?;
            source_objects(&self.aws, &t, &parts).await
        };
        match listed.await {
            Ok(objects) => Some(objects.iter().map(|o| o.object.size).sum()),
            Err(e) => {
                tracing::warn!(migration_id = %m.migration_id, error = %e,
                    "cannot size the source; the stuck limit does not grow with it");
                None
            }
        }
    }

    /// Reviews a plan at `pendingReview`: reads the table compatibility report from the key
    /// the record names and checks the object compatibility report was written. A missing or
    /// unreadable report is "cannot verify", never clean.
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
        let cannot = |reason: String| GuardError::CannotVerify {
            migration_id: migration_id.into(),
            reason,
        };
        if m.has_valid_plan != Some(true) {
            return Err(cannot(format!(
                "hasValidPlan is {:?}, not true",
                m.has_valid_plan
            )));
        }
        let (bucket, _) = split_s3_uri(&m.migration_output.bucket)
            .unwrap_or((m.migration_output.bucket.clone(), String::new()));
        let read = async |report: &str, key: Option<&String>| -> GResult<bytes::Bytes> {
            let Some(key) = key else {
                return Err(cannot(format!("migrationOutput.{report}.key is absent")));
            };
            match self.aws.get_object(&bucket, key).await {
                Ok(Some(body)) => Ok(body),
                Ok(None) => Err(cannot(format!(
                    "the {report} s3://{bucket}/{key} does not exist"
                ))),
                Err(e) => Err(cannot(format!("the {report} cannot be read: {e}"))),
            }
        };
        let out = &m.migration_output;
        let body = read(
            "tableCompatibilityReport",
            out.table_compatibility_report.key.as_ref(),
        )
        .await?;
        // The object report's manifest must exist too: its invalidFindings count only what
        // was written, and an absent report says nothing about the objects.
        read(
            "objectCompatibilityReport",
            out.object_compatibility_report.key.as_ref(),
        )
        .await?;
        let findings = parse_report(&String::from_utf8_lossy(&body)).map_err(|reason| {
            cannot(format!(
                "the table compatibility report is unreadable: {reason}"
            ))
        })?;
        let review = PlanReview::new(&m, findings);
        Ok((m, review))
    }

    /// Reviews, then approves (`queued`) if the verdict allows: blocking findings are refused
    /// with advice to cancel, findings the guard does not recognise cannot be verified, and
    /// column-wide data loss or converted columns need `confirm` to name exactly those
    /// columns.
    pub async fn approve(
        &self,
        migration_id: &str,
        confirm: &Confirmation,
    ) -> GResult<(PlanReview, UpdateTableMigrationResponse)> {
        let (_, review) = self.review(migration_id).await?;
        let (loss, converted) = match review.verdict() {
            Verdict::Cancel(findings) => {
                return Err(GuardError::MustCancel {
                    migration_id: migration_id.into(),
                    findings,
                });
            }
            Verdict::CannotVerify(what) => {
                return Err(GuardError::CannotVerify {
                    migration_id: migration_id.into(),
                    reason: format!(
                        "the plan has findings this version does not recognise: {}",
                        what.join("; ")
                    ),
                });
            }
            Verdict::NeedsConfirmation {
                data_loss,
                converted,
            } => (data_loss, converted),
            Verdict::Approvable => (Vec::new(), Vec::new()),
        };
        let lost: Vec<String> = review.data_loss.iter().map(|(c, _)| c.clone()).collect();
        if column_set(&lost) != column_set(&confirm.data_loss) {
            return Err(GuardError::NotConfirmed {
                migration_id: migration_id.into(),
                what: "loses data column-wide",
                flag: "--confirm-data-loss",
                details: loss,
                columns: column_set(&lost).into_iter().collect(),
                confirmed: confirm.data_loss.clone(),
            });
        }
        if column_set(&review.converted) != column_set(&confirm.converted) {
            return Err(GuardError::NotConfirmed {
                migration_id: migration_id.into(),
                what: "converts columns (values may lose precision or padding)",
                flag: "--confirm-converted",
                details: converted,
                columns: column_set(&review.converted).into_iter().collect(),
                confirmed: confirm.converted.clone(),
            });
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
    /// is non-terminal, and without review when the table's policies can lose whole columns.
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
                state: m.state.clone(),
                what: "a sync needs every migration into the table to be terminal; approve, \
                       wait for or cancel it first"
                    .into(),
            });
        }
        let review = *request.review_migration_plan.get_or_insert(true);
        if !review {
            // A sync reuses the start's policies.
            let latest = self
                .client
                .get_table_migration(None, Some(&request.table_arn))
                .await?;
            return Err(GuardError::ReviewRequired {
                what: format!("a sync of {} without review", request.table_arn),
                policies: unconfirmed(&latest.data_migration.migration_policies),
            });
        }
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

    /// Completes the table of `migration_id` when the table's most recent migration (whatever
    /// id the caller holds) succeeded and row counts match (`destination_rows` counted by the
    /// caller from the destination table), then checks `managedByService` is cleared. A
    /// refused complete (409/400) counts as "already done" only when the table is no longer
    /// managed; `MIGRATION_IN_PROGRESS` never does.
    pub async fn complete(
        &self,
        migration_id: &str,
        destination_rows: i64,
    ) -> GResult<CompleteOutcome> {
        let given = self
            .client
            .get_table_migration(Some(migration_id), None)
            .await?;
        let table_arn = given
            .table_arn
            .clone()
            .ok_or_else(|| GuardError::WrongState {
                migration_id: migration_id.into(),
                state: given.state.clone(),
                what: "the migration created no table".into(),
            })?;
        // Completing publishes whatever the table holds: the latest migration decides, not the
        // one the caller names (a later sync that failed or still runs leaves other data).
        let m = self
            .client
            .get_table_migration(None, Some(&table_arn))
            .await?;
        if m.state != MigrationState::Succeeded {
            let which = if m.migration_id == migration_id {
                String::new()
            } else {
                format!(
                    "the table's latest migration is {} ({} {}), not {migration_id}; ",
                    m.migration_id, m.r#type, m.state
                )
            };
            return Err(GuardError::WrongState {
                migration_id: m.migration_id.clone(),
                state: m.state.clone(),
                what: format!(
                    "{which}complete only when the table's latest migration succeeded \
                     (completing now would publish a partial or stale table). {}",
                    recovery_advice(&m)
                ),
            });
        }
        let rows = self.parity(&m, destination_rows).await?;
        let completed_now = match self.client.complete_table_migration(&table_arn).await {
            Ok(()) => true,
            Err(e) if e.is_conflict_or_bad_request() => {
                let reason = e.to_string();
                if reason.contains("MIGRATION_IN_PROGRESS") {
                    return Err(GuardError::CompleteRefused {
                        table_arn,
                        reason,
                        advice: "A migration into the table is running: watch it, and complete \
                                 once the latest migration succeeded and parity holds."
                            .into(),
                    });
                }
                // A second complete answers 409/400 too: done only if the table is handed over.
                let table = self
                    .client
                    .get_table(&TableRef::Arn(table_arn.clone()))
                    .await?;
                if let Some(value) = table.managed_by_service {
                    return Err(GuardError::CompleteRefused {
                        table_arn,
                        reason,
                        advice: format!(
                            "The table is still managed by {value}: read the refusal, fix its \
                             cause and complete again."
                        ),
                    });
                }
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
        state: m.state.clone(),
        code: m.failure_reason.as_ref().map(|f| f.code.clone()),
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
    let cause = match m.failure_reason.as_ref().map(|f| &f.code) {
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
        Some(C::Unknown(code)) => format!(
            "Failure code {code}{detail} is not one this version knows: read failureReason and \
             the reports."
        ),
        None => String::new(),
    };
    let next = match (&m.state, m.has_valid_plan, m.table_arn.is_some()) {
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

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::http_server::{Request, Response, serve};
    use crate::sign::Signer;

    fn record(state: &str, valid: Option<bool>, code: Option<&str>, table: bool) -> Value {
        let mut v = json!({
            "migrationId": "m-1", "tableBucketARN": "arn:b", "namespace": "ns", "name": "t",
            "type": "start", "state": state, "roleARN": "arn:r", "reviewMigrationPlan": true,
            "createdAt": "2026-11-04T00:00:00Z", "stateUpdatedAt": "2026-11-04T00:00:00Z",
            "sourceType": "glueTable",
            "source": {"glueTable": {"catalogId": "1", "databaseName": "db", "tableName": "s"}},
            "dataMigration": {"maintenanceSettings": {}, "migrationPolicies": {}},
            "migrationOutput": {"bucket": "arn:aws:s3:::r", "tableCompatibilityReport": {},
                "objectCompatibilityReport": {}, "objectMigrationReport": {}}
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
        guard_with(move |_| Response::json(200, &v), wait).await
    }

    /// A guard whose S3 Tables, S3 and Glue calls all reach `handler`.
    async fn guard_with(
        handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
        wait: WaitPolicy,
    ) -> anyhow::Result<MigrationGuard> {
        let handler = Arc::new(handler);
        let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |req| {
            let r = handler(&req);
            async move { r }
        })
        .await?;
        let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
        let client = S3TablesClient::new(format!("http://{addr}"), signer.clone());
        let aws = AwsRest::new(
            &signer,
            &format!("http://{addr}"),
            &format!("http://{addr}"),
        )?;
        Ok(MigrationGuard::new(client, aws).with_wait(wait))
    }

    #[test]
    fn a_huge_source_at_a_slow_rate_does_not_overflow_the_stuck_limit() {
        let w = WaitPolicy {
            copy_bytes_per_sec: 1,
            ..WaitPolicy::default()
        };
        assert_eq!(w.stuck_limit(Some(u64::MAX)), Duration::MAX);
        assert!(w.stuck_limit(Some(1024)) > w.stuck_after);
    }

    #[tokio::test]
    async fn a_migration_without_state_change_is_reported_stuck() -> anyhow::Result<()> {
        let wait = WaitPolicy {
            planning_interval: Duration::from_millis(5),
            migrating_interval: Duration::from_millis(5),
            stuck_after: Duration::from_millis(60),
            copy_bytes_per_sec: 1,
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

    fn fast(stuck_after: Duration, copy_bytes_per_sec: u64) -> WaitPolicy {
        WaitPolicy {
            planning_interval: Duration::from_millis(10),
            migrating_interval: Duration::from_millis(10),
            stuck_after,
            copy_bytes_per_sec,
        }
    }

    fn table_json() -> Value {
        json!({"name": "t", "type": "customer", "tableARN": "arn:t", "namespace": ["ns"],
               "versionToken": "v", "warehouseLocation": "s3://w", "createdAt": "2026-11-04T00:00:00Z",
               "createdBy": "123456789012", "modifiedAt": "2026-11-04T00:00:00Z",
               "modifiedBy": "123456789012", "ownerAccountId": "123456789012", "format": "ICEBERG",
               "managedByService": "migration.s3tables.amazonaws.com"})
    }

    /// Glue's answer for a table with no objects (so parity counts 0 rows).
    fn empty_glue(req: &Request) -> Option<Response> {
        match req.header("x-amz-target")? {
            "AWSGlue.GetTable" => Some(Response::json(
                200,
                &json!({"Table": {"Name": "s", "StorageDescriptor": {}}}),
            )),
            _ => Some(Response::json(200, &json!({"Partitions": []}))),
        }
    }

    #[tokio::test]
    async fn complete_checks_the_tables_latest_migration_not_the_one_named() -> anyhow::Result<()> {
        let completes = Arc::new(AtomicUsize::new(0));
        let seen = completes.clone();
        let g = guard_with(
            move |req| {
                if let Some(r) = empty_glue(req) {
                    return r;
                }
                match req.segments.first().map(String::as_str) {
                    Some("get-table-migration") if req.query("tableARN").is_some() => {
                        let mut v = record(
                            "failed",
                            Some(false),
                            Some("objectCompatibilityReport"),
                            true,
                        );
                        v["migrationId"] = json!("m-2");
                        v["type"] = json!("sync");
                        Response::json(200, &v)
                    }
                    Some("get-table-migration") => {
                        Response::json(200, &record("succeeded", Some(true), None, true))
                    }
                    Some("complete-table-migration") => {
                        seen.fetch_add(1, Ordering::SeqCst);
                        Response::empty(204)
                    }
                    _ => Response::json(200, &table_json()),
                }
            },
            WaitPolicy::default(),
        )
        .await?;
        match g.complete("m-1", 0).await {
            Err(GuardError::WrongState {
                migration_id, what, ..
            }) => {
                assert_eq!(migration_id, "m-2");
                assert!(what.contains("latest migration is m-2"), "{what}");
            }
            other => anyhow::bail!("expected WrongState, got {other:?}"),
        }
        assert_eq!(completes.load(Ordering::SeqCst), 0, "nothing was completed");
        Ok(())
    }

    #[tokio::test]
    async fn a_complete_refused_as_in_progress_is_not_already_done() -> anyhow::Result<()> {
        let g = guard_with(
            |req| {
                if let Some(r) = empty_glue(req) {
                    return r;
                }
                match req.segments.first().map(String::as_str) {
                    Some("get-table-migration") => {
                        Response::json(200, &record("succeeded", Some(true), None, true))
                    }
                    Some("complete-table-migration") => Response::error(
                        409,
                        "ConflictException",
                        "MIGRATION_IN_PROGRESS: migration m-3 is queued",
                    ),
                    _ => Response::json(200, &table_json()),
                }
            },
            WaitPolicy::default(),
        )
        .await?;
        match g.complete("m-1", 0).await {
            Err(GuardError::CompleteRefused { reason, .. }) => {
                assert!(reason.contains("MIGRATION_IN_PROGRESS"), "{reason}")
            }
            other => anyhow::bail!("expected CompleteRefused, got {other:?}"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_larger_table_or_progress_is_not_stuck() -> anyhow::Result<()> {
        // 100 kB of source at 200 kB/s: the limit grows from 100 ms to 600 ms; the migration
        // takes 400 ms without any visible progress.
        let began = Instant::now();
        let g = guard_with(
            move |req| match req.header("x-amz-target") {
                Some("AWSGlue.GetTable") => Response::json(
                    200,
                    &json!({"Table": {"Name": "s",
                        "StorageDescriptor": {"Location": "s3://lake/s/"}}}),
                ),
                Some(_) => Response::json(200, &json!({"Partitions": []})),
                None if req.query("list-type").is_some() => {
                    let mut r = Response::empty(200);
                    r.body = b"<ListBucketResult><IsTruncated>false</IsTruncated><Contents>\
                        <Key>s/part-0.parquet</Key><ETag>e</ETag><Size>100000</Size>\
                        </Contents></ListBucketResult>"
                        .to_vec();
                    r
                }
                None => {
                    let state = if began.elapsed() < Duration::from_millis(400) {
                        "migrating"
                    } else {
                        "succeeded"
                    };
                    Response::json(200, &record(state, Some(true), None, true))
                }
            },
            fast(Duration::from_millis(100), 200_000),
        )
        .await?;
        assert_eq!(g.wait("m-1", true).await?.state, MigrationState::Succeeded);

        // Objects migrating every 60 ms is progress, though the state stays `migrating` longer
        // than the limit of 150 ms.
        let began = Instant::now();
        let g = guard_with(
            move |req| {
                if req.header("x-amz-target").is_some() {
                    return Response::error(400, "EntityNotFoundException", "no such table");
                }
                let t = began.elapsed().as_millis() as i64;
                let mut v = record(
                    if t < 500 { "migrating" } else { "succeeded" },
                    Some(true),
                    None,
                    true,
                );
                v["migrationStats"] = json!({"objectsMigrated": t / 60});
                Response::json(200, &v)
            },
            fast(Duration::from_millis(150), u64::MAX),
        )
        .await?;
        assert_eq!(g.wait("m-1", true).await?.state, MigrationState::Succeeded);
        Ok(())
    }

    #[tokio::test]
    async fn an_unknown_state_is_waited_on_not_taken_as_an_end() -> anyhow::Result<()> {
        let began = Instant::now();
        let g = guard_with(
            move |_| {
                let state = if began.elapsed() < Duration::from_millis(100) {
                    "validatingSource"
                } else {
                    "pendingReview"
                };
                Response::json(200, &record(state, Some(true), None, true))
            },
            fast(Duration::from_secs(10), 1),
        )
        .await?;
        assert_eq!(
            g.wait("m-1", false).await?.state,
            MigrationState::PendingReview
        );
        assert!(!MigrationState::Unknown("validatingSource".into()).is_terminal());
        Ok(())
    }

    #[tokio::test]
    async fn a_start_without_review_is_refused_when_a_policy_loses_columns() -> anyhow::Result<()> {
        let sent = Arc::new(AtomicUsize::new(0));
        let seen = sent.clone();
        let g = guard_with(
            move |req| {
                // Starts sent (the listing before a start is not one).
                if req.method == "POST" {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
                Response::json(202, &json!({"migrationId": "m-1", "state": "new"}))
            },
            WaitPolicy::default(),
        )
        .await?;
        let mut req: StartTableMigrationRequest = serde_json::from_value(json!({
            "roleARN": "arn:aws:iam::123456789012:role/r",
            "destinationTable": {"tableBucketARN": "arn:b", "namespace": "ns", "name": "t"},
            "sourceType": "glueTable",
            "source": {"glueTable": {"catalogId": "1", "databaseName": "db", "tableName": "s"}},
            "dataMigration": {"migrationPolicies": {"incompatibleValuesPolicy": "setNull"}},
            "reviewMigrationPlan": false,
            "migrationOutput": {"bucket": "arn:aws:s3:::r"}
        }))?;
        match g.start(req.clone()).await {
            Err(e @ GuardError::ReviewRequired { .. }) => {
                assert!(e.to_string().contains("setNull"), "{e}")
            }
            other => anyhow::bail!("expected ReviewRequired, got {other:?}"),
        }
        assert_eq!(sent.load(Ordering::SeqCst), 0);
        // Under the default fail policies too: a plan can still convert columns, which
        // nobody would confirm without review.
        let mut fail = req.clone();
        fail.data_migration = None;
        match g.start(fail).await {
            Err(e @ GuardError::ReviewRequired { .. }) => {
                assert!(e.to_string().contains("convert"), "{e}")
            }
            other => anyhow::bail!("expected ReviewRequired, got {other:?}"),
        }
        assert_eq!(sent.load(Ordering::SeqCst), 0);
        // With review on (the default) the same start goes out.
        req.review_migration_plan = None;
        g.start(req).await?;
        assert_eq!(sent.load(Ordering::SeqCst), 1);
        Ok(())
    }

    /// A migration at review whose table report loses `amount` (setNull) and converts `code`,
    /// with both reports present unless `object_report` is false; counts approvals.
    async fn at_review(object_report: bool) -> anyhow::Result<(MigrationGuard, Arc<AtomicUsize>)> {
        let approvals = Arc::new(AtomicUsize::new(0));
        let seen = approvals.clone();
        let report = "finding_type,finding_category,finding_subcategory,details\n\
            informational,metadata,schemaTransformation.lossless,\"{\"\"fieldPath\"\":\"\"id\"\",\"\"outcome\"\":\"\"migrated\"\"}\"\n\
            informational,metadata,schemaTransformation.converted,\"{\"\"fieldPath\"\":\"\"code\"\",\"\"outcome\"\":\"\"migrated\"\"}\"\n\
            informational,metadata,schemaTransformation.incompatible,\"{\"\"fieldPath\"\":\"\"amount\"\",\"\"outcome\"\":\"\"setNull\"\"}\"\n";
        let g = guard_with(
            move |req| match req.segments.first().map(String::as_str) {
                Some("get-table-migration") => {
                    let mut v = record("pendingReview", Some(true), None, true);
                    v["migrationOutput"]["tableCompatibilityReport"]["key"] = json!("p/table.csv");
                    if object_report {
                        v["migrationOutput"]["objectCompatibilityReport"]["key"] =
                            json!("p/manifest.json");
                    }
                    Response::json(200, &v)
                }
                Some("update-table-migration") => {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Response::json(200, &json!({"migrationId": "m-1", "state": "queued"}))
                }
                Some("r") if req.path == "/r/p/table.csv" => {
                    let mut r = Response::empty(200);
                    r.body = report.as_bytes().to_vec();
                    r
                }
                Some("r") if req.path == "/r/p/manifest.json" => Response::json(200, &json!({})),
                _ => Response::empty(404),
            },
            WaitPolicy::default(),
        )
        .await?;
        Ok((g, approvals))
    }

    #[tokio::test]
    async fn approval_names_exactly_the_columns_lost_and_converted() -> anyhow::Result<()> {
        let (g, approvals) = at_review(true).await?;
        let confirm = |loss: &[&str], conv: &[&str]| Confirmation {
            data_loss: loss.iter().map(|c| c.to_string()).collect(),
            converted: conv.iter().map(|c| c.to_string()).collect(),
        };
        for (c, flag) in [
            (confirm(&[], &[]), "--confirm-data-loss amount"),
            (
                confirm(&["amount", "qty"], &["code"]),
                "--confirm-data-loss amount",
            ),
            (confirm(&["amount"], &[]), "--confirm-converted code"),
        ] {
            match g.approve("m-1", &c).await {
                Err(e @ GuardError::NotConfirmed { .. }) => {
                    assert!(e.to_string().contains(flag), "{e}")
                }
                other => anyhow::bail!("{c:?}: expected NotConfirmed, got {other:?}"),
            }
        }
        assert_eq!(approvals.load(Ordering::SeqCst), 0);
        let (_, r) = g.approve("m-1", &confirm(&["amount"], &["code"])).await?;
        assert_eq!(r.state, MigrationState::Queued);
        assert_eq!(approvals.load(Ordering::SeqCst), 1);
        Ok(())
    }

    #[tokio::test]
    async fn a_missing_object_compatibility_report_cannot_be_verified() -> anyhow::Result<()> {
        let (g, approvals) = at_review(false).await?;
        let all = Confirmation {
            data_loss: vec!["amount".into()],
            converted: vec!["code".into()],
        };
        match g.approve("m-1", &all).await {
            Err(GuardError::CannotVerify { reason, .. }) => {
                assert!(reason.contains("objectCompatibilityReport"), "{reason}")
            }
            other => anyhow::bail!("expected CannotVerify, got {other:?}"),
        }
        assert_eq!(approvals.load(Ordering::SeqCst), 0);
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
