//! Fixtures for the S3 Tables migration tests: a partitioned Glue Hive/Parquet table in moto,
//! and the S3 Tables emulator over HTTPS in front of it, trusting a CA made for the test.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int16Array, Int64Array, RecordBatch, StringArray};
use aws_credential_types::Credentials;
use ops_s3tables::emulator::{Emulator, EmulatorConfig};
use ops_s3tables::{HttpSettings, S3TablesClient, Signer};
use parquet::arrow::ArrowWriter;
use serde_json::json;

use crate::servers::{AWS_KEY, AWS_REGION, AWS_SECRET, Moto, TestCa};

/// The account of the test's ARNs.
pub const ACCOUNT: &str = "123456789012";
/// The migration role.
pub const ROLE: &str = "arn:aws:iam::123456789012:role/migration";
/// A role the emulator refuses to assume.
pub const REFUSED_ROLE: &str = "arn:aws:iam::123456789012:role/untrusted";
/// The partitions of [`glue_orders_table`].
pub const REGIONS: [&str; 3] = ["us", "eu", "apac"];

/// Credentials the tests sign with (moto's, and the emulator's caller).
pub fn signer() -> Signer {
    Signer::new(
        Credentials::new(AWS_KEY, AWS_SECRET, None, None, "test"),
        AWS_REGION,
        "s3tables",
    )
}

/// One Parquet object with columns id bigint, qty smallint, code string, amount bigint.
pub fn orders_parquet(ids: &[i64], qty: &[i16], code: &[&str], amount: &[i64]) -> Vec<u8> {
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
    ])
    .expect("orders batch");
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None).expect("parquet writer");
    w.write(&batch).expect("write parquet");
    w.close().expect("close parquet");
    out
}

/// Glue table `db.<name>` over `s3://lake/<name>/region=<r>/`, one Parquet object of two rows
/// per region (when `with_data`); columns id bigint, qty smallint (widens), code char(3)
/// (converts), amount bigint; partition key region. Database `db` must exist.
pub fn glue_orders_table(moto: &Moto, name: &str, with_data: bool) {
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
    moto.glue(
        "CreateTable",
        &json!({"DatabaseName": "db", "TableInput": {
            "Name": name, "TableType": "EXTERNAL_TABLE",
            "StorageDescriptor": sd(format!("s3://lake/{name}/")),
            "PartitionKeys": [{"Name": "region", "Type": "string"}],
            "Parameters": {"classification": "parquet"}}}),
    );
    for (i, r) in REGIONS.iter().enumerate() {
        let loc = format!("s3://lake/{name}/region={r}/");
        moto.glue(
            "CreatePartition",
            &json!({"DatabaseName": "db", "TableName": name,
                    "PartitionInput": {"Values": [r], "StorageDescriptor": sd(loc)}}),
        );
        if with_data {
            let base = i as i64 * 10;
            let body = orders_parquet(
                &[base + 1, base + 2],
                &[1, 2],
                &["abc", "de"],
                &[100 + base, 200 + base],
            );
            moto.put_object("lake", &format!("{name}/region={r}/part-0.parquet"), &body);
        }
    }
}

/// moto with buckets `lake` and `reports`, table bucket `tables` with namespace `mig`, and Glue
/// database `db`; returns the table bucket's ARN.
pub fn moto_for_migration(moto: &Moto) -> String {
    moto.create_bucket("lake");
    moto.create_bucket("reports");
    let arn = moto.create_table_bucket("tables");
    moto.create_namespace(&arn, "mig");
    moto.glue("CreateDatabase", &json!({"DatabaseInput": {"Name": "db"}}));
    arn
}

/// The emulator serving HTTPS on 127.0.0.1 in front of `moto`, accepting requests signed with
/// the test's credentials.
pub struct EmulatorServer {
    /// `https://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The CA that issued its certificate (trusted through `ca_path`).
    pub ca: TestCa,
    /// The CA certificate's file, for `AWS_CA_BUNDLE`.
    pub ca_path: PathBuf,
    _dir: tempfile::TempDir,
    _task: tokio::task::JoinHandle<()>,
}

impl EmulatorServer {
    /// Starts the emulator on the current tokio runtime.
    pub async fn start(moto: &Moto, step_delay: Duration) -> Self {
        // rustls is built with two crypto providers in this workspace: install the one the
        // product installs (ops-core's aws-lc-rs), so whichever server starts first, ops-core
        // runs with its own provider as in production.
        crate::tls::install_provider();
        let ca = TestCa::new();
        let cert = ca.server_cert();
        let dir = tempfile::tempdir().expect("tempdir");
        let ca_path = ca.write(dir.path());
        let emulator = Emulator::new(EmulatorConfig {
            moto_endpoint: moto.endpoint(),
            signer: signer(),
            access_key_id: AWS_KEY.into(),
            secret_access_key: AWS_SECRET.into(),
            callers: vec![(AWS_KEY.into(), AWS_SECRET.into())],
            refuse_roles: vec![REFUSED_ROLE.into()],
            step_delay,
        });
        let tls = ops_s3tables::http_server::tls_config(
            cert.cert_pem.as_bytes(),
            cert.key_pem.as_bytes(),
        )
        .expect("emulator TLS configuration");
        let (addr, task) = emulator
            .serve_tls(([127, 0, 0, 1], 0).into(), Arc::new(tls))
            .await
            .expect("emulator listens");
        EmulatorServer {
            endpoint: format!("https://{addr}"),
            ca,
            ca_path,
            _dir: dir,
            _task: task,
        }
    }

    /// A client for the emulator signing with `signer` and trusting the test CA.
    pub fn client(&self, signer: Signer) -> S3TablesClient {
        S3TablesClient::with_http(
            self.endpoint.clone(),
            signer,
            &HttpSettings {
                ca_bundle: Some(self.ca_path.clone()),
                ..HttpSettings::default()
            },
        )
        .expect("client")
    }
}
