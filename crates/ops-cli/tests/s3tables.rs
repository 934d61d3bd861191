//! `iceberg-ops s3tables ...` as an operator runs it: against the S3 Tables emulator over HTTPS
//! (a CA made for the test, trusted through `AWS_CA_BUNDLE`), every request SigV4-signed and
//! verified, migrating a Glue table in moto through start, watch, review, approve and complete.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use ops_tests::s3tables::{EmulatorServer, ROLE, glue_orders_table, moto_for_migration};
use ops_tests::servers::{AWS_KEY, AWS_REGION, AWS_SECRET, Moto};

struct Run<'a> {
    home: &'a Path,
    endpoint: &'a str,
    moto: &'a str,
    ca: &'a Path,
}

impl Run<'_> {
    fn s3tables(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
        cmd.arg("s3tables")
            .args(args)
            .args(["--endpoint", self.endpoint, "--aws-endpoint", self.moto])
            .args(["--region", AWS_REGION])
            .current_dir(self.home)
            .env("HOME", self.home)
            .env("AWS_ACCESS_KEY_ID", AWS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
            .env("AWS_CA_BUNDLE", self.ca)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("PYICEBERG_HOME");
        for (k, _) in std::env::vars() {
            if k.starts_with("PYICEBERG_") {
                cmd.env_remove(k);
            }
        }
        for (k, v) in env {
            if v.is_empty() {
                cmd.env_remove(k);
            } else {
                cmd.env(k, v);
            }
        }
        cmd.output().expect("run iceberg-ops")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.s3tables(args, &[]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        stdout
    }
}

impl Run<'_> {
    /// `start` of the Glue table `db.orders` into `mig.orders` of `bucket_arn`: the migration id.
    fn start(&self, bucket_arn: &str) -> String {
        let started = self.ok(&[
            "start",
            "--catalog-id",
            "123456789012",
            "--source-database",
            "db",
            "--source-table",
            "orders",
            "--table-bucket-arn",
            bucket_arn,
            "--namespace",
            "mig",
            "--name",
            "orders",
            "--role-arn",
            ROLE,
            "--report-bucket",
            "reports",
            "--output",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_str(started.trim()).unwrap();
        v["migrationId"].as_str().unwrap().to_string()
    }

    /// `watch` of migration `id` until it waits for the operator or ends, polling every second.
    fn watch(&self, id: &str) -> String {
        self.ok(&[
            "watch",
            id,
            "--planning-interval",
            "1",
            "--migrating-interval",
            "1",
        ])
    }
}

/// A `.pyiceberg.yaml` with one S3 Tables catalog `name` on moto.
fn s3tables_yaml(name: &str, bucket_arn: &str, moto_url: &str, secret: &str) -> String {
    format!(
        "catalog:\n  {name}:\n    type: s3tables\n    s3tables.table-bucket-arn: \"{bucket_arn}\"\n    \
         s3tables.endpoint: {moto_url}\n    client.region: {AWS_REGION}\n    \
         client.access-key-id: {AWS_KEY}\n    client.secret-access-key: {secret}\n    \
         s3.endpoint: {moto_url}\n    s3.region: {AWS_REGION}\n    \
         s3.access-key-id: {AWS_KEY}\n    s3.secret-access-key: {secret}\n    \
         s3.path-style-access: \"true\"\n"
    )
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn the_runbook_over_https_with_verified_signatures() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let moto = Moto::start();
    let bucket_arn = moto_for_migration(&moto);
    glue_orders_table(&moto, "orders", true);
    let emulator = rt.block_on(EmulatorServer::start(&moto, Duration::from_millis(20)));
    let home = tempfile::tempdir().unwrap();
    let moto_url = moto.endpoint();
    std::fs::write(
        home.path().join(".pyiceberg.yaml"),
        s3tables_yaml("dest", &bucket_arn, &moto_url, AWS_SECRET),
    )
    .unwrap();
    let run = Run {
        home: home.path(),
        endpoint: &emulator.endpoint,
        moto: &moto_url,
        ca: &emulator.ca_path,
    };

    let id = run.start(&bucket_arn);
    let planned = run.watch(&id);
    assert!(planned.contains("state=pendingReview"), "{planned}");
    let review = run.ok(&["review", &id]);
    assert!(
        review.contains("code") && review.contains("Converted"),
        "{review}"
    );
    assert!(
        review.contains("verdict: approve only with --confirm-converted code"),
        "{review}"
    );

    // Approval without naming the converted column is refused.
    let out = run.s3tables(&["approve", &id], &[]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("--confirm-converted code"), "{stderr}");
    let approved = run.ok(&["approve", &id, "--confirm-converted", "code"]);
    assert!(approved.contains("queued"), "{approved}");
    let done = run.watch(&id);
    assert!(done.contains("state=succeeded"), "{done}");

    // A wrong secret is refused by the emulator's signature check; without the test CA the
    // certificate is not trusted.
    let listing = [
        "list",
        "--table-bucket-arn",
        bucket_arn.as_str(),
        "--output",
        "json",
    ];
    let out = run.s3tables(&listing, &[("AWS_SECRET_ACCESS_KEY", "wrong")]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("signature refused"), "{stderr}");
    let out = run.s3tables(&listing, &[("AWS_CA_BUNDLE", "")]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("request to https://127.0.0.1"), "{stderr}");
    let listed = run.ok(&listing);
    assert!(listed.contains(&id), "{listed}");

    // A table of the same name and rows in another table bucket: parity through a catalog
    // over that bucket must not pass for this migration.
    let other_arn = moto.create_table_bucket("other");
    moto.create_namespace(&other_arn, "mig");
    let config = std::fs::read_to_string(home.path().join(".pyiceberg.yaml")).unwrap();
    let wrong = config
        .replacen("  dest:", "  wrong:", 1)
        .replace(&bucket_arn, &other_arn)
        .replacen("catalog:\n", "", 1);
    std::fs::write(
        home.path().join(".pyiceberg.yaml"),
        format!("{config}{wrong}"),
    )
    .unwrap();
    let other_id = run.start(&other_arn);
    run.watch(&other_id);
    run.ok(&["approve", &other_id, "--confirm-converted", "code"]);
    let other_done = run.watch(&other_id);
    assert!(other_done.contains("state=succeeded"), "{other_done}");
    let out = run.s3tables(&["complete", &id, "--catalog", "wrong"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("parity would count another table") && stderr.contains(&bucket_arn),
        "{stderr}"
    );

    let completed = run.ok(&["complete", &id, "--catalog", "dest"]);
    assert!(
        completed.contains("completed") && completed.contains("6 rows"),
        "{completed}"
    );
    let status = run.ok(&["status", &id]);
    assert!(status.contains("state=succeeded"), "{status}");
    drop(emulator);
    drop(rt);
}

/// The S3 Tables commands trust exactly what the AWS CLI and ops-core's AWS clients trust:
/// `AWS_CA_BUNDLE`, else the profile's `ca_bundle`, each in place of the platform's roots (not
/// added to them), and the credential chain's own calls (here container credentials over HTTPS)
/// trust the same bundle.
#[test]
fn the_s3tables_commands_and_their_credential_chain_trust_what_the_aws_cli_trusts() {
    use ops_tests::proxy::{Fault, FaultProxy};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let moto = Moto::start();
    let bucket_arn = moto_for_migration(&moto);
    let emulator = rt.block_on(EmulatorServer::start(&moto, Duration::from_millis(20)));
    let home = tempfile::tempdir().unwrap();
    let moto_url = moto.endpoint();
    let ca = emulator.ca_path.display().to_string();
    let run = Run {
        home: home.path(),
        endpoint: &emulator.endpoint,
        moto: &moto_url,
        ca: &emulator.ca_path,
    };
    let listing = [
        "list",
        "--table-bucket-arn",
        bucket_arn.as_str(),
        "--output",
        "json",
    ];
    let refused = |out: &Output, what: &str| {
        let (stdout, stderr) = text(out);
        assert!(
            !out.status.success(),
            "{what}: accepted\n{stdout}\n{stderr}"
        );
        stderr
    };
    let accepted = |out: &Output, what: &str| {
        let (stdout, stderr) = text(out);
        assert!(out.status.success(), "{what}: refused\n{stdout}\n{stderr}");
    };

    // AWS_CA_BUNDLE holds the emulator's CA.
    accepted(&run.s3tables(&listing, &[]), "AWS_CA_BUNDLE");
    // Without it, the default roots do not know the test CA ...
    refused(
        &run.s3tables(&listing, &[("AWS_CA_BUNDLE", "")]),
        "no bundle",
    );
    // ... but the profile's ca_bundle does, as for the AWS CLI.
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    let config = home.path().join(".aws/config");
    std::fs::write(&config, format!("[default]\nca_bundle = {ca}\n")).unwrap();
    accepted(
        &run.s3tables(&listing, &[("AWS_CA_BUNDLE", "")]),
        "the profile's ca_bundle",
    );
    std::fs::remove_file(&config).unwrap();

    // The bundle replaces the platform's roots: with the emulator's CA in the platform's store
    // (SSL_CERT_FILE) and another CA in AWS_CA_BUNDLE, the emulator is not trusted.
    accepted(
        &run.s3tables(&listing, &[("AWS_CA_BUNDLE", ""), ("SSL_CERT_FILE", &ca)]),
        "the platform's store",
    );
    let other_dir = tempfile::tempdir().unwrap();
    let other = ops_tests::servers::TestCa::new().write(other_dir.path());
    let stderr = refused(
        &run.s3tables(
            &listing,
            &[
                ("AWS_CA_BUNDLE", &other.display().to_string()),
                ("SSL_CERT_FILE", &ca),
            ],
        ),
        "AWS_CA_BUNDLE added to the platform's roots",
    );
    assert!(stderr.contains("request to https://127.0.0.1"), "{stderr}");

    // Container credentials served over HTTPS with a certificate of the same CA: the chain
    // reaches them through AWS_CA_BUNDLE, and cannot without it.
    let cert = emulator.ca.server_cert();
    let files = ops_tests::tls::CertFiles {
        cert: other_dir.path().join("creds.pem"),
        key: other_dir.path().join("creds.key"),
    };
    std::fs::write(&files.cert, &cert.cert_pem).unwrap();
    std::fs::write(&files.key, &cert.key_pem).unwrap();
    let creds = FaultProxy::start_tls(9, &files);
    creds.add(
        "GET",
        "/credentials",
        Fault::RespondJson(
            serde_json::json!({
                "AccessKeyId": ops_tests::servers::AWS_KEY,
                "SecretAccessKey": ops_tests::servers::AWS_SECRET,
                "Token": "container-session-token",
                "Expiration": "2099-01-01T00:00:00Z",
            })
            .to_string(),
        ),
        100,
    );
    let container = format!("{}/credentials", creds.url());
    let chain = [
        ("AWS_ACCESS_KEY_ID", ""),
        ("AWS_SECRET_ACCESS_KEY", ""),
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", container.as_str()),
    ];
    accepted(
        &run.s3tables(&listing, &chain),
        "container credentials through AWS_CA_BUNDLE",
    );
    assert!(
        creds.seen().iter().any(|s| s.path == "/credentials"),
        "the chain did not ask the container endpoint"
    );
    let mut untrusted = chain.to_vec();
    untrusted.push(("AWS_CA_BUNDLE", ""));
    let stderr = refused(
        &run.s3tables(&listing, &untrusted),
        "container credentials without the bundle",
    );
    assert!(stderr.to_lowercase().contains("credentials"), "{stderr}");
}

/// `quickstart --reset` on an S3 Tables catalog purges the sample tables (the service supports
/// no plain drop) and recreates them; at `-vv` the secret key never reaches the log (the
/// request signers would print it at DEBUG).
#[test]
fn quickstart_resets_on_s3tables_and_debug_logs_keep_the_secret() {
    // moto checks no signature: a secret no other text contains shows any leak.
    const SECRET: &str = "qs-secret-never-logged";
    let moto = Moto::start();
    let bucket_arn = moto.create_table_bucket("quickstart-bucket");
    let home = tempfile::tempdir().unwrap();
    let moto_url = moto.endpoint();
    std::fs::write(
        home.path().join(".pyiceberg.yaml"),
        s3tables_yaml("st", &bucket_arn, &moto_url, SECRET),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"))
            .args(args)
            .current_dir(home.path())
            .env("HOME", home.path())
            .env("PYICEBERG_HOME", home.path())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("RUST_LOG")
            .output()
            .expect("run iceberg-ops");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        (stdout, stderr)
    };
    run(&["quickstart", "--catalog", "st", "--rows", "20"]);
    let (stdout, stderr) = run(&[
        "-vv",
        "quickstart",
        "--catalog",
        "st",
        "--reset",
        "--rows",
        "5",
    ]);
    assert!(stdout.contains("dropped (--reset)"), "{stdout}");
    assert!(
        !stderr.contains(SECRET) && !stdout.contains(SECRET),
        "the secret key was logged:\n{stderr}"
    );
}
