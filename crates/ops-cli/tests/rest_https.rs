//! The operator's commands against a REST catalog as production runs it: HTTPS with a private
//! CA, OAuth2 client credentials with short-lived tokens, a secret API-key header.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use ops_tests::issuer::{Issuer, IssuerOptions};
use ops_tests::servers::Rustberg;
use ops_tests::tls::TestCa;

fn iceberg_ops(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env_remove("PYICEBERG_HOME");
    for (k, _) in std::env::vars() {
        if k.starts_with("PYICEBERG_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run iceberg-ops")
}

fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn catalog_table_migrate_and_migrate_data_over_https_with_oauth2() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let ca = TestCa::new(cwd, "cli");
    // Short-lived tokens; each command fetches its own.
    let issuer = Issuer::start(IssuerOptions {
        lifetime: Duration::from_secs(6),
        tls: Some(ca.server("issuer")),
        ..Default::default()
    });
    let rustberg = Rustberg::start();
    let gateway = issuer.gateway(rustberg.server.port, &ca.server("gateway"), "rustberg");
    std::fs::write(
        cwd.join(".pyiceberg.yaml"),
        format!(
            "catalog:\n  prod:\n    uri: {}\n    credential: {}\n    oauth2-server-uri: {}\n    \
             header.X-Api-Key: api-key-SECRET-123\n    ssl:\n      cabundle: {}\n",
            gateway.uri(),
            issuer.credential(),
            issuer.token_url(),
            ca.ca_pem.display()
        ),
    )
    .unwrap();

    // Every header value is masked, the name kept as written; the credential too.
    let listed = ok(&iceberg_ops(cwd, &["catalog", "list"], &[]), "catalog list");
    assert!(listed.contains("header.X-Api-Key = ***"), "{listed}");
    assert!(listed.contains("ssl.cabundle = "), "{listed}");
    assert!(!listed.contains("api-key-SECRET-123"), "{listed}");
    assert!(!listed.contains("s3cr3t"), "{listed}");

    let checked = ok(
        &iceberg_ops(cwd, &["catalog", "check", "prod"], &[]),
        "catalog check",
    );
    assert!(checked.contains("catalog 'prod' (rest"), "{checked}");

    // A sample table (its schema migrations included), then the table commands.
    ok(
        &iceberg_ops(
            cwd,
            &["quickstart", "--catalog", "prod", "--rows", "3000"],
            &[],
        ),
        "quickstart",
    );
    let snaps = ok(
        &iceberg_ops(
            cwd,
            &[
                "table",
                "snapshots",
                "quickstart.orders",
                "--catalog",
                "prod",
                "--output",
                "json",
            ],
            &[],
        ),
        "table snapshots",
    );
    let snaps: serde_json::Value = serde_json::from_str(&snaps).unwrap();
    assert!(!snaps.as_array().unwrap().is_empty(), "{snaps}");
    let schema = ok(
        &iceberg_ops(
            cwd,
            &["table", "schema", "quickstart.orders", "--catalog", "prod"],
            &[],
        ),
        "table schema",
    );
    assert!(schema.contains("id: long required"), "{schema}");

    // Versioned schema migrations.
    let migrations = cwd.join("migrations");
    std::fs::create_dir_all(&migrations).unwrap();
    std::fs::write(
        migrations.join("0001_create_events.toml"),
        "[[upgrade]]\nop = \"create_table\"\ntable = \"events\"\ncolumns = [{name = \"id\", \
         type = \"long\", required = true}, {name = \"kind\", type = \"string\"}]\n",
    )
    .unwrap();
    std::fs::write(
        migrations.join("0002_add_note.toml"),
        "[[upgrade]]\nop = \"add_column\"\ntable = \"events\"\ncolumn = \"note\"\ntype = \
         \"string\"\n",
    )
    .unwrap();
    let dir_arg = migrations.display().to_string();
    let migrated = ok(
        &iceberg_ops(
            cwd,
            &[
                "migrate",
                "--catalog",
                "prod",
                "--namespace",
                "ops",
                "--migrations-dir",
                &dir_arg,
            ],
            &[],
        ),
        "migrate",
    );
    assert!(migrated.contains("0002"), "{migrated}");
    let status = ok(
        &iceberg_ops(
            cwd,
            &[
                "status",
                "--catalog",
                "prod",
                "--namespace",
                "ops",
                "--migrations-dir",
                &dir_arg,
            ],
            &[],
        ),
        "status",
    );
    assert!(!status.contains("pending"), "{status}");

    // A data migration within the catalog, then its verification.
    let copied = ok(
        &iceberg_ops(
            cwd,
            &[
                "migrate-data",
                "--source",
                "quickstart.orders",
                "--dest",
                "copies.orders",
                "--source-catalog",
                "prod",
                "--create-dest",
                "--batch-rows",
                "1000",
            ],
            &[],
        ),
        "migrate-data",
    );
    assert!(copied.contains("3000"), "{copied}");
    ok(
        &iceberg_ops(
            cwd,
            &[
                "verify",
                "--source",
                "quickstart.orders",
                "--dest",
                "copies.orders",
                "--source-catalog",
                "prod",
            ],
            &[],
        ),
        "verify",
    );
    assert!(gateway.refused().is_empty(), "{:?}", gateway.refused());
    assert!(issuer.tokens_issued() >= 1);
}

#[test]
fn trust_comes_from_ssl_cert_file_and_a_wrong_ca_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let ca = TestCa::new(cwd, "env");
    let rustberg = Rustberg::start_with(ops_tests::servers::RustbergOptions { tls: Some(&ca) });
    std::fs::write(
        cwd.join(".pyiceberg.yaml"),
        format!("catalog:\n  prod:\n    uri: {}\n", rustberg.uri()),
    )
    .unwrap();
    let ca_path = ca.ca_pem.display().to_string();

    // The platform's store does not know the test CA ...
    let out = iceberg_ops(cwd, &["catalog", "check", "prod"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("catalog 'prod'"), "{stderr}");
    assert!(stderr.contains(&rustberg.uri()), "{stderr}");
    assert!(stderr.contains("ssl.cabundle"), "{stderr}");

    // ... SSL_CERT_FILE replaces it.
    ok(
        &iceberg_ops(
            cwd,
            &["catalog", "check", "prod"],
            &[("SSL_CERT_FILE", &ca_path)],
        ),
        "check with SSL_CERT_FILE",
    );

    // ssl.cabundle: false reaches it, with a warning.
    std::fs::write(
        cwd.join(".pyiceberg.yaml"),
        format!(
            "catalog:\n  prod:\n    uri: {}\n    ssl:\n      cabundle: false\n",
            rustberg.uri()
        ),
    )
    .unwrap();
    let out = iceberg_ops(cwd, &["catalog", "check", "prod"], &[]);
    ok(&out, "check with verification off");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("verification is disabled"), "{stderr}");
}

#[test]
fn aws_ca_bundle_is_the_trust_of_the_aws_clients() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let ca = TestCa::new(cwd, "aws");
    let moto = ops_tests::servers::Moto::start();
    let arn = moto.create_table_bucket("tls-bucket");
    // S3 Tables over HTTPS: a TLS terminator with the test CA's certificate in front of moto.
    let tls = ops_tests::proxy::FaultProxy::start_tls(moto.server.port, &ca.server("aws"));
    std::fs::write(
        cwd.join(".pyiceberg.yaml"),
        format!(
            "catalog:\n  tables:\n    type: s3tables\n    s3tables.table-bucket-arn: {arn}\n    \
             s3tables.endpoint: {}\n    client.region: us-east-1\n    client.access-key-id: \
             testing\n    client.secret-access-key: testing\n",
            tls.url()
        ),
    )
    .unwrap();
    let ca_path = ca.ca_pem.display().to_string();
    let check = |bundle: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_iceberg-ops"));
        cmd.args(["catalog", "check", "tables"])
            .current_dir(cwd)
            .env("HOME", cwd)
            .env_remove("AWS_CA_BUNDLE")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_CONFIG_FILE");
        if let Some(b) = bundle {
            cmd.env("AWS_CA_BUNDLE", b);
        }
        cmd.output().unwrap()
    };
    // The AWS SDK's own trust store does not know the test CA ...
    let out = check(None);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // ... AWS_CA_BUNDLE, as the AWS CLI reads it, does.
    ok(&check(Some(&ca_path)), "check with AWS_CA_BUNDLE");
    // So does the profile's ca_bundle.
    std::fs::create_dir_all(cwd.join(".aws")).unwrap();
    std::fs::write(
        cwd.join(".aws/config"),
        format!("[default]\nca_bundle = {ca_path}\n"),
    )
    .unwrap();
    ok(&check(None), "check with the profile's ca_bundle");
}

/// A wrong CA file and a rejected token: the error names the file (not "set ssl.cabundle" to
/// someone who did), and every cause is printed once, without iceberg's `Unexpected =>`.
#[test]
fn a_wrong_ca_file_and_a_rejected_token_are_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let ca = TestCa::new(cwd, "right");
    let wrong = TestCa::new(cwd, "wrong");
    let issuer = Issuer::start(IssuerOptions {
        tls: Some(ca.server("issuer")),
        ..Default::default()
    });
    let rustberg = Rustberg::start();
    let gateway = issuer.gateway(rustberg.server.port, &ca.server("gateway"), "rustberg");
    let config = |cabundle: &Path, auth: &str| {
        std::fs::write(
            cwd.join(".pyiceberg.yaml"),
            format!(
                "catalog:\n  prod:\n    uri: {}\n{auth}    ssl:\n      cabundle: {}\n",
                gateway.uri(),
                cabundle.display()
            ),
        )
        .unwrap();
    };

    config(
        &wrong.ca_pem,
        &format!(
            "    credential: {}\n    oauth2-server-uri: {}\n",
            issuer.credential(),
            issuer.token_url()
        ),
    );
    let out = iceberg_ops(cwd, &["catalog", "check", "prod"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let wrong_name = wrong.ca_pem.display().to_string();
    assert!(
        stderr.contains(&format!(
            "CA bundle {wrong_name} (`ssl.cabundle`) does not hold"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("set `ssl.cabundle`"), "{stderr}");
    assert!(!stderr.contains("Unexpected =>"), "{stderr}");
    assert_eq!(
        stderr.matches("TLS handshake failed").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("could not be opened").count(), 1, "{stderr}");

    config(&ca.ca_pem, "    token: not-a-token-the-issuer-signed\n");
    let out = iceberg_ops(cwd, &["catalog", "check", "prod"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("401 Unauthorized"), "{stderr}");
    assert!(!stderr.contains("Unexpected =>"), "{stderr}");
    // The status, not digits of the server's port (`127.0.0.1:40115` holds "401" too).
    assert_eq!(stderr.matches("401 Unauthorized").count(), 1, "{stderr}");
}
