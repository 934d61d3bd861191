//! `s3tables-emulator`: the S3 Tables migration operations on 127.0.0.1, migrating for real
//! against moto (S3, Glue, S3 Tables). Prints `listening on http://127.0.0.1:<port>`.

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
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
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
        access_key_id: args.access_key_id,
        secret_access_key: args.secret_access_key,
        refuse_roles: args.refuse_roles,
        step_delay: Duration::from_millis(args.step_delay_ms),
    };
    match Emulator::new(config)
        .serve(([127, 0, 0, 1], args.port).into())
        .await
    {
        Ok((addr, task)) => {
            println!("listening on http://{addr}");
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
