//! ops-s3tables end to end: the emulator (HTTPS, SigV4 verified, requests validated against the
//! service model) migrates a partitioned Glue/Parquet table in moto into moto S3 Tables, driven
//! by the guard (the runbook), and the result is read back through iceberg-catalog-s3tables.

use std::time::Duration;

use aws_credential_types::Credentials;
use iceberg::{NamespaceIdent, TableIdent};
use ops_s3tables::aws::AwsRest;
use ops_s3tables::guard::{Confirmation, GuardError, MigrationGuard, WaitPolicy};
use ops_s3tables::model::*;
use ops_s3tables::review::TransformationClass;
use ops_s3tables::{Error, S3TablesClient, Signer};
use ops_tests::s3tables::{
    ACCOUNT, EmulatorServer, REFUSED_ROLE, REGIONS, ROLE, glue_orders_table, moto_for_migration,
    orders_parquet, signer,
};
use ops_tests::servers::{AWS_KEY, AWS_REGION, Moto};
use serde_json::{Value, json};

use crate::common::{aws_props, init_tracing, open, scan_json};

type TestResult = anyhow::Result<()>;

struct Env {
    moto: Moto,
    aws: AwsRest,
    guard: MigrationGuard,
    emulator: EmulatorServer,
    bucket_arn: String,
}

/// moto with bucket `lake` (source), `reports`, table bucket `tables` with namespace `mig`, and
/// the emulator in front of it over HTTPS.
async fn env() -> anyhow::Result<Env> {
    env_stepping(Duration::from_millis(20)).await
}

async fn env_stepping(step: Duration) -> anyhow::Result<Env> {
    init_tracing();
    let moto = Moto::start();
    let bucket_arn = moto_for_migration(&moto);
    let endpoint = moto.endpoint();
    let aws = AwsRest::new(&signer(), &endpoint, &endpoint)?;
    let emulator = EmulatorServer::start(&moto, step).await;
    let guard = MigrationGuard::new(emulator.client(signer()), aws.clone()).with_wait(WaitPolicy {
        planning_interval: Duration::from_millis(50),
        migrating_interval: Duration::from_millis(50),
        stuck_after: Duration::from_secs(60),
        copy_bytes_per_sec: 1024 * 1024,
    });
    Ok(Env {
        moto,
        aws,
        guard,
        emulator,
        bucket_arn,
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

fn sync_request(table_arn: &str) -> SyncTableMigrationRequest {
    SyncTableMigrationRequest {
        role_arn: ROLE.into(),
        table_arn: table_arn.into(),
        review_migration_plan: None,
        migration_output: output(),
    }
}

/// The confirmation the orders table's plan needs: `code` (char(3)) converts.
fn converted_code() -> Confirmation {
    Confirmation {
        data_loss: vec![],
        converted: vec!["code".into()],
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
    glue_orders_table(&env.moto, "orders", true);
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
    // The service fills in the settings' defaults.
    let compaction = planned
        .data_migration
        .maintenance_settings
        .iceberg_compaction
        .clone()
        .unwrap_or_default();
    assert_eq!(compaction.target_file_size_mb, Some(512));

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

    // The converted column must be confirmed by name.
    let unconfirmed = env
        .guard
        .approve(&started.migration_id, &Confirmation::default())
        .await;
    assert!(
        matches!(unconfirmed, Err(GuardError::NotConfirmed { .. })),
        "{unconfirmed:?}"
    );
    let (_, approved) = env
        .guard
        .approve(&started.migration_id, &converted_code())
        .await?;
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
    // GetTableMetadataLocation, whose signed path carries the bucket ARN in one segment
    // (encoded on the wire, encoded again in the canonical request), passes the emulator's
    // signature check and names the table GetTable does.
    let location = env
        .guard
        .client()
        .get_table_metadata_location(&env.bucket_arn, "mig", "orders")
        .await?;
    assert!(location.metadata_location.is_some());
    assert_eq!(location.metadata_location, t.metadata_location);

    // Sync after appending one object migrates only that object; its statistics cover the
    // whole table (the three objects migrated before count).
    env.moto.put_object(
        "lake",
        "orders/region=eu/part-1.parquet",
        &orders_parquet(&[99], &[7], &["new"], &[999]),
    );
    // What Hive hides is not part of the table.
    env.moto.put_object(
        "lake",
        "orders/region=eu/.hive-staging_hive_1/-ext-10000/part-9.parquet",
        &orders_parquet(&[98], &[7], &["new"], &[998]),
    );
    let sync = env.guard.sync(sync_request(&table_arn)).await?;
    assert_ne!(sync.migration_id, started.migration_id);
    let sync_planned = env.guard.wait(&sync.migration_id, false).await?;
    assert_eq!(sync_planned.state, MigrationState::PendingReview);
    assert_eq!(
        sync_planned
            .planning_stats
            .clone()
            .and_then(|p| p.objects_planned),
        Some(4)
    );
    assert_eq!(
        sync_planned
            .migration_stats
            .clone()
            .and_then(|s| s.objects_pending_migration),
        Some(1)
    );
    env.guard
        .approve(&sync.migration_id, &converted_code())
        .await?;
    let synced = env.guard.wait(&sync.migration_id, true).await?;
    let stats = synced.migration_stats.clone().unwrap_or_default();
    assert_eq!(stats.objects_migrated, Some(4));
    assert_eq!(stats.objects_pending_migration, Some(0));

    let (rows, data) = destination_rows(&env, "orders").await?;
    assert_eq!(data, expected_rows(&[(99, "eu", 999)]));
    // Complete names the first migration; the table's latest (the sync) succeeded.
    let outcome = env.guard.complete(&started.migration_id, rows).await?;
    assert!(outcome.completed_now);
    assert_eq!(outcome.rows, 7);
    // A second complete is "already done" (the table is no longer managed), and a sync after
    // complete is refused (400).
    let again = env.guard.complete(&sync.migration_id, rows).await?;
    assert!(!again.completed_now);
    let err = env.guard.sync(sync_request(&table_arn)).await;
    assert!(
        matches!(err, Err(GuardError::Client(Error::BadRequest { .. }))),
        "{err:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn set_null_needs_named_confirmation_and_a_missing_report_stops() -> TestResult {
    let env = env().await?;
    glue_orders_table(&env.moto, "narrow", true);
    let field = |id: i32, name: &str, ty: &str| SchemaV2Field {
        id,
        name: name.into(),
        r#type: json!(ty),
        required: false,
        doc: None,
    };
    let schema = IcebergSchemaV2 {
        r#type: SchemaV2FieldType::Struct,
        fields: vec![
            field(1, "id", "long"),
            field(2, "qty", "int"),
            field(3, "code", "string"),
            field(4, "amount", "int"),
            field(5, "region", "string"),
        ],
        schema_id: Some(0),
        identifier_field_ids: None,
    };
    let policies = MigrationPolicies {
        unmatched_source_fields_policy: None,
        incompatible_values_policy: Some(IncompatibleValuesPolicy::SetNull),
    };
    // Without review nobody would confirm the loss: refused before anything is sent.
    let mut unreviewed = start_request(
        &env,
        "narrow",
        "narrow",
        Some(policies.clone()),
        Some(schema.clone()),
    );
    unreviewed.review_migration_plan = Some(false);
    let refused = env.guard.start(unreviewed).await;
    assert!(
        matches!(refused, Err(GuardError::ReviewRequired { .. })),
        "{refused:?}"
    );

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
    for confirm in [
        converted_code(),
        Confirmation {
            data_loss: vec!["amount".into(), "qty".into()],
            converted: vec!["code".into()],
        },
    ] {
        match env.guard.approve(&started.migration_id, &confirm).await {
            Err(e @ GuardError::NotConfirmed { .. }) => {
                assert!(e.to_string().contains("--confirm-data-loss amount"), "{e}")
            }
            other => anyhow::bail!("expected NotConfirmed, got {other:?}"),
        }
    }
    // Still pendingReview: nothing was approved.
    let m = env
        .guard
        .client()
        .get_table_migration(Some(&started.migration_id), None)
        .await?;
    assert_eq!(m.state, MigrationState::PendingReview);

    // With the report gone the guard cannot verify and stops, confirmation or not.
    let key = m
        .migration_output
        .table_compatibility_report
        .key
        .clone()
        .unwrap_or_default();
    env.aws.delete_object("reports", &key).await?;
    let all = Confirmation {
        data_loss: vec!["amount".into()],
        converted: vec!["code".into()],
    };
    let err = env.guard.approve(&started.migration_id, &all).await;
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
    let (code, advice) = failure_of(&env, start_request(&env, "late", "a", None, None)).await?;
    assert_eq!(code, MigrationFailureCode::ResourceNotFound);
    assert!(advice.contains("start a new migration"), "{advice}");
    // Planning failed before creating the table: once the cause is fixed, the same destination
    // can be started afresh.
    glue_orders_table(&env.moto, "late", true);
    let fresh = env
        .guard
        .start(start_request(&env, "late", "a", None, None))
        .await?;
    let planned = env.guard.wait(&fresh.migration_id, false).await?;
    assert_eq!(planned.state, MigrationState::PendingReview);

    glue_orders_table(&env.moto, "empty", false);
    let (code, advice) = failure_of(&env, start_request(&env, "empty", "b", None, None)).await?;
    assert_eq!(code, MigrationFailureCode::SourceNotSupported);
    assert!(advice.contains("EMPTY_TABLE"), "{advice}");

    glue_orders_table(&env.moto, "src", true);
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

    // Sync is refused while a migration into the table is pending review; a cancel goes
    // through cancelling, keeps the table, and the advice is to resume with sync.
    let pending = env
        .guard
        .start(start_request(&env, "src", "e", None, None))
        .await?;
    let at_review = env.guard.wait(&pending.migration_id, false).await?;
    let refused = env
        .guard
        .sync(sync_request(
            &at_review.table_arn.clone().unwrap_or_default(),
        ))
        .await;
    assert!(
        matches!(refused, Err(GuardError::WrongState { .. })),
        "{refused:?}"
    );
    let cancelled = env.guard.cancel(&pending.migration_id).await?;
    assert_eq!(cancelled.state, MigrationState::Cancelling);
    match env.guard.wait(&pending.migration_id, true).await {
        Err(GuardError::Ended { advice, state, .. }) => {
            assert_eq!(state, MigrationState::Cancelled);
            assert!(advice.contains("resume with sync"), "{advice}")
        }
        other => anyhow::bail!("expected cancelled, got {other:?}"),
    }

    // An object overwritten in place before a sync fails the sync, and then the first
    // migration, though it succeeded, cannot be completed: the table's latest failed.
    let started = env
        .guard
        .start(start_request(&env, "src", "d", None, None))
        .await?;
    env.guard.wait(&started.migration_id, false).await?;
    env.guard
        .approve(&started.migration_id, &converted_code())
        .await?;
    let done = env.guard.wait(&started.migration_id, true).await?;
    env.moto.put_object(
        "lake",
        "src/region=us/part-0.parquet",
        &orders_parquet(&[5, 6], &[5, 6], &["zzz", "yyy"], &[5, 6]),
    );
    let sync = env
        .guard
        .sync(sync_request(&done.table_arn.clone().unwrap_or_default()))
        .await?;
    match env.guard.wait(&sync.migration_id, true).await {
        Err(GuardError::Ended { code, advice, .. }) => {
            assert_eq!(code, Some(MigrationFailureCode::ObjectCompatibilityReport));
            assert!(advice.contains("objectModified"), "{advice}");
        }
        other => anyhow::bail!("expected objectCompatibilityReport, got {other:?}"),
    }
    let (rows, _) = destination_rows(&env, "d").await?;
    match env.guard.complete(&started.migration_id, rows).await {
        Err(GuardError::WrongState { migration_id, .. }) => {
            assert_eq!(migration_id, sync.migration_id)
        }
        other => anyhow::bail!("expected WrongState for the failed sync, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_finishes_the_object_in_progress_and_keeps_what_was_committed() -> TestResult {
    let env = env_stepping(Duration::from_millis(400)).await?;
    glue_orders_table(&env.moto, "slow", true);
    let started = env
        .guard
        .start(start_request(&env, "slow", "slow", None, None))
        .await?;
    env.guard.wait(&started.migration_id, false).await?;
    env.guard
        .approve(&started.migration_id, &converted_code())
        .await?;
    let client = env.guard.client();
    let migrated = |m: &GetTableMigrationResponse| {
        m.migration_stats
            .as_ref()
            .and_then(|s| s.objects_migrated)
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let m = client
            .get_table_migration(Some(&started.migration_id), None)
            .await?;
        if m.state == MigrationState::Migrating && migrated(&m) >= 1 {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline && !m.state.is_terminal(),
            "never saw an object migrate: {m:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = env.guard.cancel(&started.migration_id).await?;
    assert_eq!(cancelled.state, MigrationState::Cancelling);
    let seen = client
        .get_table_migration(Some(&started.migration_id), None)
        .await?;
    assert_eq!(seen.state, MigrationState::Cancelling);
    match env.guard.wait(&started.migration_id, true).await {
        Err(GuardError::Ended { state, .. }) => assert_eq!(state, MigrationState::Cancelled),
        other => anyhow::bail!("expected cancelled, got {other:?}"),
    }
    let end = client
        .get_table_migration(Some(&started.migration_id), None)
        .await?;
    let k = migrated(&end);
    assert!((1..3).contains(&k), "{end:?}");
    assert_eq!(
        end.migration_stats
            .and_then(|s| s.objects_pending_migration),
        Some(3 - k)
    );
    // What migrated before the cancel stays committed; the rest did not arrive.
    let (rows, _) = destination_rows(&env, "slow").await?;
    assert_eq!(rows, 2 * k);
    Ok(())
}

/// A signed request to the emulator with a body the test writes by hand.
async fn raw(env: &Env, method: &str, path: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
    let url = format!("{}{path}", env.emulator.endpoint);
    let host = url
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let payload = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let mut headers = vec![("host", host.as_str())];
    if !payload.is_empty() {
        headers.push(("content-type", "application/json"));
    }
    let signed = signer().sign(method, &url, &headers, &payload).await?;
    let http = env.guard.client().http().clone();
    let mut req = http.request(method.parse()?, &url).body(payload);
    for (k, v) in headers.iter().filter(|(k, _)| *k != "host") {
        req = req.header(*k, *v);
    }
    for (k, v) in signed {
        req = req.header(k, v);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let text = resp.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(json!(text))))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_emulator_refuses_what_the_service_would() -> TestResult {
    let env = env().await?;
    glue_orders_table(&env.moto, "orders", true);
    // A caller signing with the wrong secret, or an unknown key.
    for creds in [
        Credentials::new(AWS_KEY, "not-the-secret", None, None, "test"),
        Credentials::new("AKIAUNKNOWN", "testing", None, None, "test"),
    ] {
        let stranger = env
            .emulator
            .client(Signer::new(creds, AWS_REGION, "s3tables"));
        let err = stranger.get_table_migration(Some("m"), None).await;
        assert!(matches!(err, Err(Error::Signature { .. })), "{err:?}");
    }
    // Plain HTTP to the HTTPS port gets no answer.
    let plain = S3TablesClient::new(
        env.emulator.endpoint.replace("https://", "http://"),
        signer(),
    )
    .with_retry(ops_s3tables::RetryPolicy {
        max_attempts: 1,
        ..Default::default()
    });
    assert!(plain.get_table_migration(Some("m"), None).await.is_err());

    // A sort order whose members are spelled camelCase, as the service model does not spell
    // them: `order-id`, `source-id`, `null-order`.
    let mut body = serde_json::to_value(start_request(&env, "orders", "o1", None, None))?;
    body["destinationTable"]["schema"] = json!({"type": "struct",
        "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    body["destinationTable"]["icebergSortOrder"] = json!({"orderId": 1, "fields": [
        {"sourceId": 1, "transform": "identity", "direction": "asc", "nullOrder": "nulls-first"}]});
    let (status, v) = raw(&env, "POST", "/start-table-migration", &body).await?;
    assert_eq!(status, 400, "{v}");
    assert!(v["message"].to_string().contains("orderId"), "{v}");
    // Spelled as the model says, it is accepted (and a sort field must name a schema column).
    body["destinationTable"]["icebergSortOrder"] = json!({"order-id": 1, "fields": [
        {"source-id": 9, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]});
    let (status, v) = raw(&env, "POST", "/start-table-migration", &body).await?;
    assert_eq!(status, 400, "{v}");
    assert!(v["message"].to_string().contains("names no column"), "{v}");
    body["destinationTable"]["icebergSortOrder"]["fields"][0]["source-id"] = json!(1);
    let (status, v) = raw(&env, "POST", "/start-table-migration", &body).await?;
    assert_eq!(status, 202, "{v}");
    let id = v["migrationId"].as_str().unwrap_or_default().to_string();

    // Enum values are exact: QUEUED is not queued.
    let (status, v) = raw(
        &env,
        "POST",
        &format!("/update-table-migration?migrationId={id}"),
        &json!({"requestedState": "QUEUED"}),
    )
    .await?;
    assert_eq!(status, 400, "{v}");
    assert!(
        v["message"]
            .to_string()
            .contains("enum value set: [queued, cancelled]"),
        "{v}"
    );
    // A required member missing, an unknown member, a value out of range.
    let mut no_role = serde_json::to_value(start_request(&env, "orders", "o2", None, None))?;
    if let Some(o) = no_role.as_object_mut() {
        o.remove("roleARN");
    }
    let (status, v) = raw(&env, "POST", "/start-table-migration", &no_role).await?;
    assert_eq!(status, 400, "{v}");
    let mut extra = serde_json::to_value(start_request(&env, "orders", "o3", None, None))?;
    extra["migrationId"] = json!("mine");
    let (status, v) = raw(&env, "POST", "/start-table-migration", &extra).await?;
    assert_eq!(status, 400, "{v}");
    let (status, v) = raw(
        &env,
        "GET",
        &format!(
            "/list-table-migrations?tableBucketARN={}&maxResults=5000",
            {
                let mut s = String::new();
                for b in env.bucket_arn.bytes() {
                    if b.is_ascii_alphanumeric() {
                        s.push(b as char);
                    } else {
                        s.push_str(&format!("%{b:02X}"));
                    }
                }
                s
            }
        ),
        &Value::Null,
    )
    .await?;
    assert_eq!(status, 400, "{v}");
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
    assert!(matches!(bare, Err(Error::BadRequest { .. })), "{bare:?}");
    Ok(())
}

/// The client's signature of GetTableMetadataLocation (the bucket ARN inside a path segment,
/// so the canonical URI encodes it twice) equals botocore's SigV4Auth over the same request.
#[tokio::test]
async fn metadata_location_signature_matches_botocore() -> TestResult {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use ops_s3tables::http_server::{Request, Response, serve};

    let seen: Arc<Mutex<Vec<Request>>> = Arc::default();
    let log = seen.clone();
    let (addr, _task) = serve(([127, 0, 0, 1], 0).into(), move |req| {
        log.lock().unwrap_or_else(|e| e.into_inner()).push(req);
        async {
            Response::json(
                200,
                &json!({"versionToken": "v", "warehouseLocation": "s3://w",
                        "metadataLocation": "s3://w/metadata/1.metadata.json"}),
            )
        }
    })
    .await?;
    let client = S3TablesClient::new(format!("http://{addr}"), signer());
    let arn = format!("arn:aws:s3tables:{AWS_REGION}:{ACCOUNT}:bucket/tables");
    client
        .get_table_metadata_location(&arn, "mig", "orders")
        .await?;
    let req = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .ok_or_else(|| anyhow::anyhow!("no request"))?;
    let auth = req.header("authorization").unwrap_or_default().to_string();
    let field = |name: &str| {
        auth.split([' ', ','])
            .find_map(|p| p.trim().strip_prefix(name))
            .unwrap_or_default()
            .to_string()
    };
    let signed_headers = field("SignedHeaders=");
    let headers: serde_json::Map<String, Value> = signed_headers
        .split(';')
        .map(|h| (h.to_string(), json!(req.header(h).unwrap_or_default())))
        .collect();
    assert!(
        req.target.contains("arn%3Aaws%3As3tables"),
        "the ARN is one encoded segment: {}",
        req.target
    );
    let input = json!({
        "url": format!("http://{addr}{}", req.target),
        "headers": headers,
        "key": AWS_KEY,
        "secret": ops_tests::servers::AWS_SECRET,
        "region": AWS_REGION,
    });
    let code = r#"
import json, sys
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
i = json.load(sys.stdin)
req = AWSRequest(method="GET", url=i["url"], headers=i["headers"])
req.context["timestamp"] = i["headers"]["x-amz-date"]
auth = SigV4Auth(Credentials(i["key"], i["secret"]), "s3tables", i["region"])
cr = auth.canonical_request(req)
print(auth.signature(auth.string_to_sign(req, cr), req))
print(cr.split("\n")[1])
"#;
    let mut child = std::process::Command::new(ops_tests::tools::python())
        .args(["-c", code])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("stdin"))?
        .write_all(input.to_string().as_bytes())?;
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "botocore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let botocore = lines.next().unwrap_or_default();
    let canonical_uri = lines.next().unwrap_or_default();
    assert!(
        canonical_uri.contains("arn%253Aaws%253As3tables"),
        "botocore's canonical URI double-encodes: {canonical_uri}"
    );
    assert_eq!(
        field("Signature="),
        botocore,
        "canonical URI {canonical_uri}"
    );
    Ok(())
}
