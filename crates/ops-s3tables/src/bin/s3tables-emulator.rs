//! `s3tables-emulator`: the S3 Tables migration operations on 127.0.0.1 over HTTPS, migrating
//! for real against moto (S3, Glue, S3 Tables). Requests must be SigV4-signed with the access key
//! and secret it is given. Prints `listening on https://127.0.0.1:<port>`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::Credentials;
use clap::Parser;
use ops_s3tables::Signer;
use ops_s3tables::emulator::{Emulator, EmulatorConfig};

/// Local S3 Tables migration service over moto.
#[derive(Debug, Parser)]
struct Args {
    /// moto's endpoint, e.g. http://127.0.0.1:5000.
    #[arg(long, env = "MOTO_ENDPOINT")]
    moto_endpoint: String,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Region.
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    region: String,
    /// Access key for moto.
    #[arg(long, env = "AWS_ACCESS_KEY_ID", default_value = "testing")]
    access_key_id: String,
    /// Secret for moto.
    #[arg(
        long,
        env = "AWS_SECRET_ACCESS_KEY",
        default_value = "testing",
        hide_env_values = true
    )]
    secret_access_key: String,
    /// A role ARN the emulated service refuses to assume (repeatable) → rolePermissions.
    #[arg(long = "refuse-role")]
    refuse_roles: Vec<String>,
    /// Pause between state changes, in milliseconds.
    #[arg(long, default_value_t = 200)]
    step_delay_ms: u64,
    /// The server's certificate chain (PEM). Clients trust its CA with AWS_CA_BUNDLE.
    #[arg(long, required_unless_present = "insecure_http", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The server's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve plain HTTP instead (the service itself is HTTPS only).
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    insecure_http: bool,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // rustls is built with more than one crypto provider in this workspace (sqlx brings ring):
    // install the workspace's one (aws-lc-rs) before anything builds a TLS configuration.
    ops_core::http::install_crypto_provider();
    let args = Args::parse();
    let creds = Credentials::new(
        &args.access_key_id,
        &args.secret_access_key,
        None,
        None,
        "s3tables-emulator",
    );
    let config = EmulatorConfig {
        moto_endpoint: args.moto_endpoint,
        signer: Signer::new(creds, args.region, "s3tables"),
        callers: vec![(args.access_key_id.clone(), args.secret_access_key.clone())],
        access_key_id: args.access_key_id,
        secret_access_key: args.secret_access_key,
        refuse_roles: args.refuse_roles,
        step_delay: Duration::from_millis(args.step_delay_ms),
    };
    let emulator = Emulator::new(config);
    let addr = ([127, 0, 0, 1], args.port).into();
    let (served, scheme) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let read = |p: &PathBuf| {
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            };
            let tls = read(cert)
                .and_then(|c| read(key).map(|k| (c, k)))
                .and_then(|(c, k)| ops_s3tables::http_server::tls_config(&c, &k));
            match tls {
                Ok(tls) => (emulator.serve_tls(addr, Arc::new(tls)).await, "https"),
                Err(e) => {
                    eprintln!("s3tables-emulator: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            }
        }
        _ => (emulator.serve(addr).await, "http"),
    };
    match served {
        Ok((addr, task)) => {
            println!("listening on {scheme}://{addr}");
            let _ = task.await;
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "s3tables-emulator: cannot listen on 127.0.0.1:{}: {e}",
                args.port
            );
            std::process::ExitCode::FAILURE
        }
    }
}
