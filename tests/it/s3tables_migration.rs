//! ops-s3tables end to end: the emulator migrates a partitioned Glue/Parquet table in moto into
//! moto S3 Tables, driven by the guard (the runbook), and the result is read back through
//! iceberg-catalog-s3tables.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int16Array, Int64Array, RecordBatch, StringArray};
use aws_credential_types::Credentials;
use iceberg::{NamespaceIdent, TableIdent};
use ops_s3tables::aws::AwsRest;
use ops_s3tables::emulator::{Emulator, EmulatorConfig};
use ops_s3tables::guard::{GuardError, MigrationGuard, WaitPolicy};
use ops_s3tables::model::*;
use ops_s3tables::review::TransformationClass;
use ops_s3tables::{S3TablesClient, Signer};
use ops_tests::servers::{AWS_KEY, AWS_REGION, AWS_SECRET, Moto};
use parquet::arrow::ArrowWriter;
use serde_json::{Value, json};

use crate::common::{aws_props, init_tracing, open, scan_json};

type TestResult = anyhow::Result<()>;

const ACCOUNT: &str = "123456789012";
const ROLE: &str = "arn:aws:iam::123456789012:role/migration";
const REFUSED_ROLE: &str = "arn:aws:iam::123456789012:role/untrusted";

struct Env {
    moto: Moto,
    aws: AwsRest,
    guard: MigrationGuard,
    bucket_arn: String,
    _server: tokio::task::JoinHandle<()>,
}

fn signer() -> Signer {
    Signer::new(
        Credentials::new(AWS_KEY, AWS_SECRET, None, None, "test"),
        AWS_REGION,
        "s3tables",
    )
}

/// moto with bucket `lake` (source), `reports`, table bucket `tables` with namespace `mig`, and the
/// emulator in front of it.
async fn env() -> anyhow::Result<Env> {
    init_tracing();
    let moto = Moto::start();
    moto.create_bucket("lake");
    moto.create_bucket("reports");
    let bucket_arn = moto.create_table_bucket("tables");
    let endpoint = moto.endpoint();
    let aws = AwsRest::new(&signer(), &endpoint, &endpoint);
    let dest = open("dest", &destination_props(&moto, &bucket_arn)).await?;
    dest.catalog()
        .create_namespace(&NamespaceIdent::new("mig".into()), Default::default())
        .await?;
    let (status, v) = aws
        .glue("CreateDatabase", &json!({"DatabaseInput": {"Name": "db"}}))
        .await?;
    anyhow::ensure!(status == 200, "CreateDatabase: {v}");
    let emulator = Emulator::new(EmulatorConfig {
        moto_endpoint: endpoint.clone(),
        signer: signer(),
        access_key_id: AWS_KEY.into(),
        secret_access_key: AWS_SECRET.into(),
        refuse_roles: vec![REFUSED_ROLE.into()],
        step_delay: Duration::from_millis(20),
    });
    let (addr, server) = emulator.serve(([127, 0, 0, 1], 0).into()).await?;
    let client = S3TablesClient::new(format!("http://{addr}"), signer());
    let guard = MigrationGuard::new(client, aws.clone()).with_wait(WaitPolicy {
        planning_interval: Duration::from_millis(50),
        migrating_interval: Duration::from_millis(50),
        stuck_after: Duration::from_secs(60),
    });
    Ok(Env {
        moto,
        aws,
        guard,
        bucket_arn,
        _server: server,
    })
}

fn destination_props(moto: &Moto, bucket_arn: &str) -> std::collections::BTreeMap<String, String> {
    let endpoint = moto.endpoint();
    aws_props(
        moto,
        &[
            ("type", "s3tables"),
            ("s3tables.table-bucket-arn", bucket_arn),
            ("s3tables.endpoint", &endpoint),
        ],
    )
}

fn parquet(ids: &[i64], qty: &[i16], code: &[&str], amount: &[i64]) -> anyhow::Result<Vec<u8>> {
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec())) as ArrayRef),
        ("qty", Arc::new(Int16Array::from(qty.to_vec())) as ArrayRef),
        (
            "code",
            Arc::new(StringArray::from(code.to_vec())) as ArrayRef,
        ),
        (
            "amount",
            Arc::new(Int64Array::from(amount.to_vec())) as ArrayRef,
        ),
    ])?;
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None)?;
    w.write(&batch)?;
    w.close()?;
    Ok(out)
}

const REGIONS: [&str; 3] = ["us", "eu", "apac"];

/// Glue table `db.<name>` over `s3://lake/<name>/region=<r>/`, one Parquet object per region
/// (when `with_data`); columns id bigint, qty smallint (widens), code char(3) (converts),
/// amount bigint; partition key region.
async fn glue_table(aws: &AwsRest, name: &str, with_data: bool) -> anyhow::Result<()> {
    let columns = json!([
        {"Name": "id", "Type": "bigint"},
        {"Name": "qty", "Type": "smallint"},
        {"Name": "code", "Type": "char(3)"},
        {"Name": "amount", "Type": "bigint"}
    ]);
    let sd = |loc: String| {
        json!({"Columns": columns, "Location": loc,
               "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
               "SerdeInfo": {"SerializationLibrary":
                   "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}})
    };
    let (status, v) = aws
        .glue(
            "CreateTable",
            &json!({"DatabaseName": "db", "TableInput": {
                "Name": name, "TableType": "EXTERNAL_TABLE",
                "StorageDescriptor": sd(format!("s3://lake/{name}/")),
                "PartitionKeys": [{"Name": "region", "Type": "string"}],
                "Parameters": {"classification": "parquet"}}}),
        )
        .await?;
    anyhow::ensure!(status == 200, "CreateTable: {v}");
    for (i, r) in REGIONS.iter().enumerate() {
        let loc = format!("s3://lake/{name}/region={r}/");
        let (status, v) = aws
            .glue(
                "CreatePartition",
                &json!({"DatabaseName": "db", "TableName": name,
                        "PartitionInput": {"Values": [r], "StorageDescriptor": sd(loc)}}),
            )
            .await?;
        anyhow::ensure!(status == 200, "CreatePartition: {v}");
        if with_data {
            let base = i as i64 * 10;
            let body = parquet(
                &[base + 1, base + 2],
                &[1, 2],
                &["abc", "de"],
                &[100 + base, 200 + base],
            )?;
            aws.put_object("lake", &format!("{name}/region={r}/part-0.parquet"), body)
                .await?;
        }
    }
    Ok(())
}

fn start_request(
    env: &Env,
    source: &str,
    dest: &str,
    policies: Option<MigrationPolicies>,
    schema: Option<IcebergSchemaV2>,
) -> StartTableMigrationRequest {
    StartTableMigrationRequest {
        role_arn: ROLE.into(),
        destination_table: DestinationTable {
            table_bucket_arn: env.bucket_arn.clone(),
            namespace: "mig".into(),
            name: dest.into(),
            encryption_configuration: None,
            storage_class_configuration: None,
            tags: None,
            properties: None,
            schema,
            iceberg_sort_order: None,
        },
        source_type: MigrationSourceType::GlueTable,
        source: SourceConfiguration {
            glue_table: Some(GlueTableSource {
                catalog_id: ACCOUNT.into(),
                database_name: "db".into(),
                table_name: source.into(),
            }),
        },
        data_migration: policies.map(|p| DataMigrationSettings {
            maintenance_settings: None,
            migration_policies: Some(p),
        }),
        review_migration_plan: None,
        migration_output: output(),
    }
}

fn output() -> MigrationOutputConfiguration {
    MigrationOutputConfiguration {
        bucket: "arn:aws:s3:::reports".into(),
        prefixes: Some(MigrationReportPrefixes {
            table_compatibility_report: Some("migration-api-reports".into()),
            object_compatibility_report: Some("migration-api-reports".into()),
            object_migration_report: Some("migration-api-reports".into()),
        }),
    }
}

async fn destination_rows(env: &Env, name: &str) -> anyhow::Result<(i64, Vec<Value>)> {
    let dest = open("dest", &destination_props(&env.moto, &env.bucket_arn)).await?;
    let table = dest
        .catalog()
        .load_table(&TableIdent::new(
            NamespaceIdent::new("mig".into()),
            name.into(),
        ))
        .await?;
    let rows = scan_json(&table).await?;
    Ok((rows.len() as i64, rows))
}

fn expected_rows(extra: &[(i64, &str, i64)]) -> Vec<Value> {
    let mut rows = Vec::new();
    for (i, r) in REGIONS.iter().enumerate() {
        let base = i as i64 * 10;
        for (k, code) in [(1, "abc"), (2, "de")] {
            rows.push(json!({"id": base + k, "qty": k, "code": code,
                             "amount": 100 * k + base, "region": r}));
        }
    }
    for (id, r, amount) in extra {
        rows.push(json!({"id": id, "qty": 7, "code": "new", "amount": amount, "region": r}));
    }
    crate::common::sort_rows(&mut rows);
    rows
}

#[tokio::test(flavor = "multi_thread")]
async fn start_review_approve_complete_and_sync() -> TestResult {
    let env = env().await?;
    glue_table(&env.aws, "orders", true).await?;
    let started = env
        .guard
        .start(start_request(&env, "orders", "orders", None, None))
        .await?;
    assert_eq!(started.state, MigrationState::New);
    let planned = env.guard.wait(&started.migration_id, false).await?;
    assert_eq!(planned.state, MigrationState::PendingReview);
    assert!(planned.review_migration_plan, "review is on by default");
    let stats = planned.planning_stats.clone().unwrap_or_default();
    assert_eq!(stats.objects_planned, Some(3));
    assert_eq!(stats.partition_count, Some(3));
    assert!(
        planned
            .migration_output
            .object_compatibility_report
            .key
            .is_some()
    );
    assert!(
        planned
            .migration_output
            .table_compatibility_report
            .checksum_crc64_nvme
            .is_some()
    );

    let (_, review) = env.guard.review(&started.migration_id).await?;
    assert_eq!(
        review.columns.get("qty"),
        Some(&TransformationClass::Widened)
    );
    assert_eq!(
        review.columns.get("code"),
        Some(&TransformationClass::Converted)
    );
    assert_eq!(
        review.columns.get("id"),
        Some(&TransformationClass::Lossless)
    );
    assert_eq!(
        review.columns.get("region"),
        Some(&TransformationClass::Lossless)
    );
    assert!(review.data_loss.is_empty());

    let (_, approved) = env.guard.approve(&started.migration_id, false).await?;
    assert_eq!(approved.state, MigrationState::Queued);
    let done = env.guard.wait(&started.migration_id, true).await?;
    assert_eq!(done.state, MigrationState::Succeeded);
    let table_arn = done.table_arn.clone().unwrap_or_default();
    assert!(done.migration_output.object_migration_report.key.is_some());

    // Before complete the migration owns the table.
    let t = env
        .guard
        .client()
        .get_table(&ops_s3tables::TableRef::Arn(table_arn.clone()))
        .await?;
    assert_eq!(
        t.managed_by_service.as_deref(),
        Some("migration.s3tables.amazonaws.com")
    );

    // Sync after appending one object moves only that object.
    env.aws
        .put_object(
            "lake",
            "orders/region=eu/part-1.parquet",
            parquet(&[99], &[7], &["new"], &[999])?,
        )
        .await?;
    let sync = env
        .guard
        .sync(SyncTableMigrationRequest {
            role_arn: ROLE.into(),
            table_arn: table_arn.clone(),
            review_migration_plan: None,
            migration_output: output(),
        })
        .await?;
    assert_ne!(sync.migration_id, started.migration_id);
    let sync_planned = env.guard.wait(&sync.migration_id, false).await?;
    assert_eq!(sync_planned.state, MigrationState::PendingReview);
    assert_eq!(
        sync_planned.planning_stats.and_then(|p| p.objects_planned),
        Some(1)
    );
    env.guard.approve(&sync.migration_id, false).await?;
    let synced = env.guard.wait(&sync.migration_id, true).await?;
    assert_eq!(
        synced.migration_stats.and_then(|s| s.objects_migrated),
        Some(1)
    );

    let (rows, data) = destination_rows(&env, "orders").await?;
    assert_eq!(data, expected_rows(&[(99, "eu", 999)]));
    let outcome = env.guard.complete(&sync.migration_id, rows).await?;
    assert!(outcome.completed_now);
    assert_eq!(outcome.rows, 7);
    // A second complete is "already done", and a sync after complete is refused (400).
    let again = env.guard.complete(&sync.migration_id, rows).await?;
    assert!(!again.completed_now);
    let err = env
        .guard
        .sync(SyncTableMigrationRequest {
            role_arn: ROLE.into(),
            table_arn,
            review_migration_plan: None,
            migration_output: output(),
        })
        .await;
    assert!(
        matches!(
            err,
            Err(GuardError::Client(ops_s3tables::Error::BadRequest { .. }))
        ),
        "{err:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn set_null_needs_confirmation_and_missing_report_stops() -> TestResult {
    let env = env().await?;
    glue_table(&env.aws, "narrow", true).await?;
    let field = |id: i32, name: &str, ty: &str| SchemaV2Field {
        id,
        name: name.into(),
        r#type: json!(ty),
        required: false,
        doc: None,
    };
    let schema = IcebergSchemaV2 {
        r#type: "struct".into(),
        fields: vec![
            field(1, "id", "long"),
            field(2, "qty", "int"),
            field(3, "code", "string"),
            field(4, "amount", "int"),
            field(5, "region", "string"),
        ],
        schema_id: None,
        identifier_field_ids: None,
    };
    let policies = MigrationPolicies {
        unmatched_source_fields_policy: None,
        incompatible_values_policy: Some(IncompatibleValuesPolicy::SetNull),
    };
    let started = env
        .guard
        .start(start_request(
            &env,
            "narrow",
            "narrow",
            Some(policies),
            Some(schema),
        ))
        .await?;
    let planned = env.guard.wait(&started.migration_id, false).await?;
    assert_eq!(planned.state, MigrationState::PendingReview);
    let err = env.guard.approve(&started.migration_id, false).await;
    match err {
        Err(GuardError::DataLossNotConfirmed { losses, .. }) => {
            assert!(losses.iter().any(|l| l.contains("amount")), "{losses:?}");
        }
        other => anyhow::bail!("expected DataLossNotConfirmed, got {other:?}"),
    }
    // Still pendingReview: nothing was approved.
    let m = env
        .guard
        .client()
        .get_table_migration(Some(&started.migration_id), None)
        .await?;
    assert_eq!(m.state, MigrationState::PendingReview);

    // With the report gone the guard cannot verify and stops.
    let key = m
        .migration_output
        .table_compatibility_report
        .key
        .clone()
        .unwrap_or_default();
    env.aws.delete_object("reports", &key).await?;
    let err = env.guard.approve(&started.migration_id, true).await;
    assert!(
        matches!(err, Err(GuardError::CannotVerify { .. })),
        "{err:?}"
    );
    Ok(())
}

async fn failure_of(
    env: &Env,
    req: StartTableMigrationRequest,
) -> anyhow::Result<(MigrationFailureCode, String)> {
    let started = env.guard.start(req).await?;
    match env.guard.wait(&started.migration_id, true).await {
        Err(GuardError::Ended {
            code: Some(code),
            advice,
            ..
        }) => Ok((code, advice)),
        other => anyhow::bail!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_codes_reach_the_operator_with_advice() -> TestResult {
    let env = env().await?;
    let (code, advice) = failure_of(&env, start_request(&env, "missing", "a", None, None)).await?;
    assert_eq!(code, MigrationFailureCode::ResourceNotFound);
    assert!(advice.contains("start a new migration"), "{advice}");

    glue_table(&env.aws, "empty", false).await?;
    let (code, advice) = failure_of(&env, start_request(&env, "empty", "b", None, None)).await?;
    assert_eq!(code, MigrationFailureCode::SourceNotSupported);
    assert!(advice.contains("EMPTY_TABLE"), "{advice}");

    glue_table(&env.aws, "src", true).await?;
    let mut refused = start_request(&env, "src", "c", None, None);
    refused.role_arn = REFUSED_ROLE.into();
    let (code, advice) = failure_of(&env, refused).await?;
    assert_eq!(code, MigrationFailureCode::RolePermissions);
    assert!(advice.contains("trust policy"), "{advice}");

    // A destination that already exists (created outside any migration).
    let dest = open("dest", &destination_props(&env.moto, &env.bucket_arn)).await?;
    let schema = iceberg::spec::Schema::builder()
        .with_fields(vec![
            iceberg::spec::NestedField::optional(
                1,
                "id",
                iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::Long),
            )
            .into(),
        ])
        .build()?;
    dest.catalog()
        .create_table(
            &NamespaceIdent::new("mig".into()),
            iceberg::TableCreation::builder()
                .name("taken".into())
                .schema(schema)
                .build(),
        )
        .await?;
    let (code, advice) = failure_of(&env, start_request(&env, "src", "taken", None, None)).await?;
    assert_eq!(code, MigrationFailureCode::TableCompatibilityReport);
    assert!(advice.contains("already exists"), "{advice}");

    // Sync is refused while a migration into the table is pending review; a cancel keeps
    // the table and the advice is to resume with sync.
    let pending = env
        .guard
        .start(start_request(&env, "src", "e", None, None))
        .await?;
    let at_review = env.guard.wait(&pending.migration_id, false).await?;
    let refused = env
        .guard
        .sync(SyncTableMigrationRequest {
            role_arn: ROLE.into(),
            table_arn: at_review.table_arn.clone().unwrap_or_default(),
            review_migration_plan: None,
            migration_output: output(),
        })
        .await;
    assert!(
        matches!(refused, Err(GuardError::WrongState { .. })),
        "{refused:?}"
    );
    let cancelled = env.guard.cancel(&pending.migration_id).await?;
    assert_eq!(cancelled.state, MigrationState::Cancelled);
    match env.guard.wait(&pending.migration_id, true).await {
        Err(GuardError::Ended { advice, .. }) => {
            assert!(advice.contains("resume with sync"), "{advice}")
        }
        other => anyhow::bail!("expected cancelled, got {other:?}"),
    }

    // An object overwritten in place before a sync.
    let started = env
        .guard
        .start(start_request(&env, "src", "d", None, None))
        .await?;
    env.guard.wait(&started.migration_id, false).await?;
    env.guard.approve(&started.migration_id, false).await?;
    let done = env.guard.wait(&started.migration_id, true).await?;
    env.aws
        .put_object(
            "lake",
            "src/region=us/part-0.parquet",
            parquet(&[5], &[5], &["zzz"], &[5])?,
        )
        .await?;
    let sync = env
        .guard
        .sync(SyncTableMigrationRequest {
            role_arn: ROLE.into(),
            table_arn: done.table_arn.clone().unwrap_or_default(),
            review_migration_plan: None,
            migration_output: output(),
        })
        .await?;
    match env.guard.wait(&sync.migration_id, true).await {
        Err(GuardError::Ended { code, advice, .. }) => {
            assert_eq!(code, Some(MigrationFailureCode::ObjectCompatibilityReport));
            assert!(advice.contains("objectModified"), "{advice}");
        }
        other => anyhow::bail!("expected objectCompatibilityReport, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_pages_through_empty_pages() -> TestResult {
    let env = env().await?;
    for i in 0..3 {
        env.guard
            .start(start_request(&env, "missing", &format!("t{i}"), None, None))
            .await?;
    }
    let all = env
        .guard
        .client()
        .list_all_table_migrations(&ListTableMigrationsRequest {
            table_bucket_arn: Some(env.bucket_arn.clone()),
            max_results: Some(1),
            ..Default::default()
        })
        .await?;
    assert_eq!(all.len(), 3);
    for m in &all {
        env.guard.wait(&m.migration_id, true).await.ok();
    }
    // Filtered per page of one: the pages between matches are empty but carry a nextToken.
    let failed = env
        .guard
        .client()
        .list_all_table_migrations(&ListTableMigrationsRequest {
            table_bucket_arn: Some(env.bucket_arn.clone()),
            state: Some(MigrationState::Failed),
            max_results: Some(1),
            ..Default::default()
        })
        .await?;
    assert_eq!(failed.len(), 3);
    let first = env
        .guard
        .client()
        .list_table_migrations(&ListTableMigrationsRequest {
            table_bucket_arn: Some(env.bucket_arn.clone()),
            state: Some(MigrationState::PendingReview),
            max_results: Some(1),
            ..Default::default()
        })
        .await?;
    assert!(first.migrations.is_empty());
    assert!(
        first.next_token.is_some(),
        "an empty page still carries a token"
    );
    // A bare list is rejected: it must be scoped.
    let bare = env
        .guard
        .client()
        .list_table_migrations(&ListTableMigrationsRequest::default())
        .await;
    assert!(
        matches!(bare, Err(ops_s3tables::Error::BadRequest { .. })),
        "{bare:?}"
    );
    Ok(())
}
