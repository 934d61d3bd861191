//! `iceberg-ops s3tables ...`: the S3 Tables table-migration runbook (ops-s3tables' guard).

use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use ops_s3tables::aws::AwsRest;
use ops_s3tables::guard::Confirmation;
use ops_s3tables::model::*;
use ops_s3tables::review::Verdict;
use ops_s3tables::{HttpSettings, MigrationGuard, S3TablesClient, WaitPolicy, recovery_advice};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Lines for people.
    Human,
    /// One JSON document.
    Json,
}

/// Connection options shared by every subcommand.
#[derive(Debug, Args)]
pub struct Common {
    /// S3 Tables endpoint (e.g. the emulator's https://127.0.0.1:PORT); default: the region's.
    #[arg(long, global = true, env = "ICEBERG_OPS_S3TABLES_ENDPOINT")]
    endpoint: Option<String>,
    /// The CA certificates (PEM) to trust for the S3 Tables, S3 and Glue endpoints and the AWS
    /// credential chain, in place of the default roots, as the AWS CLI reads AWS_CA_BUNDLE
    /// (default: AWS_CA_BUNDLE, else the AWS profile's `ca_bundle`).
    #[arg(long, global = true, env = "AWS_CA_BUNDLE")]
    ca_bundle: Option<std::path::PathBuf>,
    /// Region (default: the AWS chain's).
    #[arg(long, global = true)]
    region: Option<String>,
    /// S3 and Glue endpoint for reading reports and source objects (default: the region's).
    #[arg(long, global = true)]
    aws_endpoint: Option<String>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Output::Human)]
    output: Output,
}

/// Report location options.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report bucket (name, or its ARN arn:<partition>:s3:::name).
    #[arg(long)]
    report_bucket: String,
    /// One key prefix for all three reports.
    #[arg(long, default_value = "migration-api-reports")]
    report_prefix: String,
}

impl ReportArgs {
    /// The output configuration; a bucket given by name gets the ARN of `region`'s partition.
    fn output(&self, region: &str) -> MigrationOutputConfiguration {
        let bucket = if self.report_bucket.starts_with("arn:") {
            self.report_bucket.clone()
        } else {
            format!(
                "arn:{}:s3:::{}",
                ops_s3tables::aws::partition_of_region(region),
                self.report_bucket
            )
        };
        let p = Some(self.report_prefix.clone());
        MigrationOutputConfiguration {
            bucket,
            prefixes: Some(MigrationReportPrefixes {
                table_compatibility_report: p.clone(),
                object_compatibility_report: p.clone(),
                object_migration_report: p,
            }),
        }
    }
}

/// `s3tables` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start migrating a Glue table into a table bucket (review on unless --no-review).
    Start {
        /// Glue Data Catalog ID (your account ID).
        #[arg(long)]
        catalog_id: String,
        /// Glue database.
        #[arg(long)]
        source_database: String,
        /// Glue table.
        #[arg(long)]
        source_table: String,
        /// Destination table bucket ARN.
        #[arg(long)]
        table_bucket_arn: String,
        /// Destination namespace (must exist).
        #[arg(long)]
        namespace: String,
        /// Destination table name (must not exist).
        #[arg(long)]
        name: String,
        /// Role the migration assumes.
        #[arg(long)]
        role_arn: String,
        /// Policy for source columns the destination lacks: fail or drop.
        #[arg(long)]
        unmatched_source_fields: Option<String>,
        /// Policy for values the destination cannot hold: fail or setNull.
        #[arg(long)]
        incompatible_values: Option<String>,
        /// Do not pause at pendingReview (not recommended).
        #[arg(long)]
        no_review: bool,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Show a migration with recovery advice.
    Status {
        /// Migration ID.
        migration_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Review a plan at pendingReview.
    Review {
        /// Migration ID.
        migration_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Approve a reviewed plan (requestedState queued).
    Approve {
        /// Accept the column-wide data loss (setNull, dropped) of exactly these columns, as
        /// `review` listed them (comma-separated). A plan that loses other columns is refused.
        #[arg(long, value_delimiter = ',', num_args = 1..)]
        confirm_data_loss: Vec<String>,
        /// Accept the conversion of exactly these columns (comma-separated), as `review`
        /// listed them.
        #[arg(long, value_delimiter = ',', num_args = 1..)]
        confirm_converted: Vec<String>,
        /// Migration ID.
        migration_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Cancel a migration (requestedState cancelled).
    Cancel {
        /// Migration ID.
        migration_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Migrate what changed since the last plan (refused while anything runs).
    Sync {
        /// The migrated table's ARN.
        #[arg(long)]
        table_arn: String,
        /// Role the migration assumes.
        #[arg(long)]
        role_arn: String,
        /// Do not pause at pendingReview (not recommended).
        #[arg(long)]
        no_review: bool,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Check row-count parity and complete a succeeded migration.
    Complete {
        /// Migration ID (its table is completed).
        migration_id: String,
        /// Configured s3tables catalog over the destination table bucket, to count its rows.
        #[arg(long)]
        catalog: String,
        #[command(flatten)]
        common: Common,
    },
    /// List migrations into a table bucket or table (every page).
    List {
        /// Table bucket ARN.
        #[arg(long, conflicts_with = "table_arn")]
        table_bucket_arn: Option<String>,
        /// Table ARN.
        #[arg(long)]
        table_arn: Option<String>,
        /// Filter by state (exact spelling, e.g. pendingReview).
        #[arg(long)]
        state: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Poll until the migration leaves planning and migrating.
    Watch {
        /// Migration ID.
        migration_id: String,
        /// Seconds between polls while planning.
        #[arg(long, default_value_t = 45)]
        planning_interval: u64,
        /// Seconds between polls while migrating.
        #[arg(long, default_value_t = 30)]
        migrating_interval: u64,
        /// Minutes without progress before reporting a modest table stuck.
        #[arg(long, default_value_t = 30)]
        stuck_after_minutes: u64,
        /// The slowest plain S3 copy rate assumed, in MiB/s: the stuck limit grows by the
        /// source's size at this rate while the migration copies.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
        copy_mib_per_sec: u64,
        #[command(flatten)]
        common: Common,
    },
}

async fn guard(c: &Common) -> anyhow::Result<MigrationGuard> {
    // `--ca-bundle` (or AWS_CA_BUNDLE, through clap), else the profile's `ca_bundle`: what the
    // AWS CLI would trust, for every endpoint and the credential chain alike.
    let settings = HttpSettings {
        ca_bundle: c
            .ca_bundle
            .clone()
            .or_else(|| ops_core::http::aws_ca_bundle(None)),
        ..HttpSettings::default()
    };
    let client =
        S3TablesClient::from_env_with(c.endpoint.clone(), c.region.clone(), &settings).await?;
    // S3 and Glue (reports, parity) with the same trust and timeouts.
    let http = client.http().clone();
    let aws = match &c.aws_endpoint {
        Some(e) => AwsRest::with_http(http, client.signer(), e, e),
        None => AwsRest::regional_with_http(http, client.signer()),
    };
    Ok(MigrationGuard::new(client, aws))
}

fn print(output: Output, json: serde_json::Value, human: String) {
    match output {
        Output::Json => println!("{json}"),
        Output::Human => println!("{human}"),
    }
}

/// Runs a subcommand.
pub async fn run(factory: &ops_core::CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Start {
            catalog_id,
            source_database,
            source_table,
            table_bucket_arn,
            namespace,
            name,
            role_arn,
            unmatched_source_fields,
            incompatible_values,
            no_review,
            report,
            common,
        } => {
            let g = guard(&common).await?;
            let policies = MigrationPolicies {
                unmatched_source_fields_policy: unmatched_source_fields
                    .map(|s| s.parse())
                    .transpose()?,
                incompatible_values_policy: incompatible_values.map(|s| s.parse()).transpose()?,
            };
            let req = StartTableMigrationRequest {
                role_arn,
                destination_table: DestinationTable {
                    table_bucket_arn,
                    namespace,
                    name,
                    encryption_configuration: None,
                    storage_class_configuration: None,
                    tags: None,
                    properties: None,
                    schema: None,
                    iceberg_sort_order: None,
                },
                source_type: MigrationSourceType::GlueTable,
                source: SourceConfiguration {
                    glue_table: Some(GlueTableSource {
                        catalog_id,
                        database_name: source_database,
                        table_name: source_table,
                    }),
                },
                data_migration: (policies != MigrationPolicies::default()).then_some(
                    DataMigrationSettings {
                        maintenance_settings: None,
                        migration_policies: Some(policies),
                    },
                ),
                review_migration_plan: Some(!no_review),
                migration_output: report.output(g.client().signer().region()),
            };
            let r = g.start(req).await?;
            print(
                common.output,
                serde_json::to_value(&r)?,
                format!("started migration {} ({})", r.migration_id, r.state),
            );
        }
        Command::Status {
            migration_id,
            common,
        } => {
            let g = guard(&common).await?;
            let m = g
                .client()
                .get_table_migration(Some(&migration_id), None)
                .await?;
            let advice = recovery_advice(&m);
            let mut v = serde_json::to_value(&m)?;
            v["advice"] = advice.clone().into();
            print(common.output, v, human_status(&m, &advice));
        }
        Command::Review {
            migration_id,
            common,
        } => {
            let (_, review) = guard(&common).await?.review(&migration_id).await?;
            let verdict = review.verdict();
            let mut lines = vec![format!("plan of {migration_id}:")];
            for (col, class) in &review.columns {
                lines.push(format!("  {col:<24} {}", class.label()));
            }
            for (c, n) in &review.invalid_by_category {
                lines.push(format!("  invalid {c}: {n}"));
            }
            for (col, outcome) in &review.data_loss {
                lines.push(format!("  DATA LOSS {col}: {outcome} (whole column)"));
            }
            for u in &review.unrecognised {
                lines.push(format!("  UNRECOGNISED {u}"));
            }
            let cols = |v: Vec<String>| v.join(",");
            lines.push(match &verdict {
                Verdict::Approvable => "verdict: approvable".to_string(),
                Verdict::NeedsConfirmation { .. } => {
                    let mut flags = Vec::new();
                    if !review.data_loss.is_empty() {
                        flags.push(format!(
                            "--confirm-data-loss {}",
                            cols(review.data_loss.iter().map(|(c, _)| c.clone()).collect())
                        ));
                    }
                    if !review.converted.is_empty() {
                        flags.push(format!(
                            "--confirm-converted {}",
                            cols(review.converted.clone())
                        ));
                    }
                    format!("verdict: approve only with {}", flags.join(" "))
                }
                Verdict::Cancel(l) => format!("verdict: cancel ({})", l.join("; ")),
                Verdict::CannotVerify(l) => {
                    format!("verdict: cannot verify, do not approve ({})", l.join("; "))
                }
            });
            let v = serde_json::json!({"review": review, "verdict": verdict});
            print(common.output, v, lines.join("\n"));
        }
        Command::Approve {
            migration_id,
            confirm_data_loss,
            confirm_converted,
            common,
        } => {
            let confirm = Confirmation {
                data_loss: confirm_data_loss,
                converted: confirm_converted,
            };
            let (_, r) = guard(&common)
                .await?
                .approve(&migration_id, &confirm)
                .await?;
            print(
                common.output,
                serde_json::to_value(&r)?,
                format!("approved {} ({})", r.migration_id, r.state),
            );
        }
        Command::Cancel {
            migration_id,
            common,
        } => {
            let r = guard(&common).await?.cancel(&migration_id).await?;
            print(
                common.output,
                serde_json::to_value(&r)?,
                format!("cancelling {} ({})", r.migration_id, r.state),
            );
        }
        Command::Sync {
            table_arn,
            role_arn,
            no_review,
            report,
            common,
        } => {
            let g = guard(&common).await?;
            let migration_output = report.output(g.client().signer().region());
            let r = g
                .sync(SyncTableMigrationRequest {
                    role_arn,
                    table_arn,
                    review_migration_plan: Some(!no_review),
                    migration_output,
                })
                .await?;
            print(
                common.output,
                serde_json::to_value(&r)?,
                format!("started sync {} ({})", r.migration_id, r.state),
            );
        }
        Command::Complete {
            migration_id,
            catalog,
            common,
        } => {
            let g = guard(&common).await?;
            let m = g
                .client()
                .get_table_migration(Some(&migration_id), None)
                .await?;
            // Parity must count the migration's own table: the catalog could name another
            // bucket holding a table of the same name, so the table it loads must be the one
            // the service reports for the migration's table bucket.
            let expected = g
                .client()
                .get_table_metadata_location(&m.table_bucket_arn, &m.namespace, &m.name)
                .await?
                .metadata_location;
            let rows = destination_rows(
                factory,
                &catalog,
                &m.table_bucket_arn,
                &m.namespace,
                &m.name,
                expected.as_deref(),
            )
            .await?;
            let out = g.complete(&migration_id, rows).await?;
            let human = if out.completed_now {
                format!(
                    "completed {} ({} rows, parity ok, managedByService cleared)",
                    out.table_arn, out.rows
                )
            } else {
                format!("{} was already complete ({} rows)", out.table_arn, out.rows)
            };
            print(common.output, serde_json::to_value(&out)?, human);
        }
        Command::List {
            table_bucket_arn,
            table_arn,
            state,
            common,
        } => {
            anyhow::ensure!(
                table_bucket_arn.is_some() || table_arn.is_some(),
                "list needs --table-bucket-arn or --table-arn (the API is not account-wide)"
            );
            let state = state.map(|s| s.parse::<MigrationState>()).transpose()?;
            let g = guard(&common).await?;
            let all = g
                .client()
                .list_all_table_migrations(&ListTableMigrationsRequest {
                    table_bucket_arn,
                    table_arn,
                    state,
                    ..Default::default()
                })
                .await?;
            let human = all
                .iter()
                .map(|m| {
                    format!(
                        "{}  {:<6} {:<13} {}.{}  valid={}",
                        m.migration_id,
                        m.r#type,
                        m.state,
                        m.namespace,
                        m.name,
                        m.has_valid_plan
                            .map(|b| b.to_string())
                            .unwrap_or("-".into())
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            print(common.output, serde_json::to_value(&all)?, human);
        }
        Command::Watch {
            migration_id,
            planning_interval,
            migrating_interval,
            stuck_after_minutes,
            copy_mib_per_sec,
            common,
        } => {
            let g = guard(&common).await?.with_wait(WaitPolicy {
                planning_interval: Duration::from_secs(planning_interval),
                migrating_interval: Duration::from_secs(migrating_interval),
                stuck_after: Duration::from_secs(stuck_after_minutes.saturating_mul(60)),
                copy_bytes_per_sec: copy_mib_per_sec.saturating_mul(1024 * 1024),
            });
            let m = g.wait(&migration_id, true).await?;
            let advice = recovery_advice(&m);
            print(
                common.output,
                serde_json::to_value(&m)?,
                human_status(&m, &advice),
            );
        }
    }
    Ok(())
}

fn human_status(m: &GetTableMigrationResponse, advice: &str) -> String {
    let mut s = format!(
        "{} {} {}.{} state={} hasValidPlan={}",
        m.migration_id,
        m.r#type,
        m.namespace,
        m.name,
        m.state,
        m.has_valid_plan
            .map(|b| b.to_string())
            .unwrap_or("-".into())
    );
    if let Some(f) = &m.failure_reason {
        s.push_str(&format!(
            "\nfailure: {} {}",
            f.code,
            f.detail.clone().unwrap_or_default()
        ));
    }
    if let Some(st) = &m.migration_stats {
        s.push_str(&format!(
            "\nobjects: migrated={} failed={} pending={}",
            st.objects_migrated.unwrap_or(0),
            st.objects_failed_migration.unwrap_or(0),
            st.objects_pending_migration.unwrap_or(0)
        ));
    }
    if !advice.is_empty() {
        s.push_str(&format!("\nnext: {advice}"));
    }
    s
}

/// Rows in the destination table's current snapshot (`total-records`), after checking that the
/// table `catalog` loads is the migration's: its metadata location must be the one S3 Tables
/// reports for the migration's table bucket (`expected`).
async fn destination_rows(
    factory: &ops_core::CatalogFactory,
    catalog: &str,
    table_bucket_arn: &str,
    namespace: &str,
    name: &str,
    expected: Option<&str>,
) -> anyhow::Result<i64> {
    let handle = factory.open(catalog).await?;
    let ident = iceberg::TableIdent::new(
        iceberg::NamespaceIdent::new(namespace.to_string()),
        name.to_string(),
    );
    let table = handle.catalog().load_table(&ident).await?;
    check_same_table(
        catalog,
        table_bucket_arn,
        namespace,
        name,
        expected,
        table.metadata_location(),
    )?;
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(0);
    };
    snapshot
        .summary()
        .additional_properties
        .get("total-records")
        .context("the destination snapshot has no total-records summary")?
        .parse()
        .context("total-records is not a number")
}

/// Refuses a table whose metadata location is not the migration table's.
fn check_same_table(
    catalog: &str,
    table_bucket_arn: &str,
    namespace: &str,
    name: &str,
    expected: Option<&str>,
    loaded: Option<&str>,
) -> anyhow::Result<()> {
    match (expected, loaded) {
        (Some(e), Some(l)) if e == l => Ok(()),
        (e, l) => anyhow::bail!(
            "catalog '{catalog}' loaded {namespace}.{name} at metadata location {}, but the \
             migration's table in {table_bucket_arn} is at {}: parity would count another \
             table; point --catalog at the table bucket {table_bucket_arn}",
            l.unwrap_or("(none)"),
            e.unwrap_or("(none: the table has no metadata yet)")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_buckets_by_name_take_the_regions_partition() {
        let r = ReportArgs {
            report_bucket: "reports".into(),
            report_prefix: "p".into(),
        };
        assert_eq!(r.output("cn-north-1").bucket, "arn:aws-cn:s3:::reports");
        assert_eq!(
            r.output("us-gov-west-1").bucket,
            "arn:aws-us-gov:s3:::reports"
        );
        assert_eq!(r.output("us-east-1").bucket, "arn:aws:s3:::reports");
    }

    #[test]
    fn a_zero_copy_rate_is_refused() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(subcommand)]
            cmd: Command,
        }
        let parsed = |rate: &str| {
            Cli::try_parse_from(["s3tables", "watch", "m-1", "--copy-mib-per-sec", rate])
        };
        assert!(parsed("0").is_err());
        assert!(parsed("1").is_ok());
    }

    #[test]
    fn parity_refuses_a_table_other_than_the_migrations() {
        let bucket = "arn:aws:s3tables:us-east-1:123456789012:bucket/tables";
        let mine = Some("s3://mine/metadata/00001.metadata.json");
        let other = Some("s3://other/metadata/00001.metadata.json");
        assert!(check_same_table("dest", bucket, "mig", "t", mine, mine).is_ok());
        let e = check_same_table("wrong", bucket, "mig", "t", mine, other)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("s3://mine/") && e.contains("s3://other/") && e.contains(bucket),
            "{e}"
        );
        assert!(check_same_table("dest", bucket, "mig", "t", None, other).is_err());
        assert!(check_same_table("dest", bucket, "mig", "t", None, None).is_err());
    }
}
