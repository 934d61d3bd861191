//! Harness for iceberg-ops' integration tests: real servers on 127.0.0.1 and PyIceberg as an
//! independent oracle.
//!
//! - [`servers::Rustberg`] — an Iceberg REST catalog (rustberg 0.3.0) with its own temporary
//!   catalog and warehouse directories.
//! - [`servers::Moto`] — moto_server for S3, Glue and S3 Tables (through `tests/py/moto_server.py`,
//!   which corrects two S3 Tables responses), with [`servers::Moto::reset`].
//! - [`servers::Postgres`] — PostgreSQL from `initdb` in a temporary directory (a database per
//!   test through [`servers::Postgres::create_database`]; as a dedicated user when run as root;
//!   [`servers::Postgres::start_tls`] for a TLS-only server with a generated CA).
//! - [`oracle::pyiceberg`] — runs a PyIceberg snippet against a catalog and returns its JSON.
//! - [`servers::TestCa`] — a CA made for the test and server certificates it issues, for TLS.
//! - [`hive`] — a Glue Hive table of Parquet files in moto as Spark leaves them (imports).
//! - [`s3tables`] — a Glue Hive/Parquet source in moto and the S3 Tables emulator over HTTPS.
//! - [`tls::TestCa`] — a certificate authority made per test, for rustberg over HTTPS
//!   ([`servers::RustbergOptions`]) and `ssl.*` keys.
//! - [`issuer::Issuer`] — an OAuth2 token endpoint and JWKS (RS256, short-lived tokens on
//!   request) for rustberg's JWT authentication.
//! - [`proxy::FaultProxy`] — an HTTP proxy that answers 503, drops or stalls chosen requests.
//! - [`fake_glue::FakeGlue`] — a Glue endpoint whose answers the test controls (moto's Glue
//!   ignores `VersionId`), recording the `UpdateTable` requests it refuses.
//!
//! Servers bind free ports, are waited on until they answer and are killed by PID when dropped.
//! On drop they print the tail of their log, which libtest shows only for a failing test (a
//! panic or an `Err`). A server that cannot start panics with its log: nothing is skipped.
//! Tools are found through `ICEBERG_OPS_PYTHON` and `ICEBERG_OPS_RUSTBERG`, else under
//! `~/.cache/iceberg-ops/` where `scripts/test` installs them; PostgreSQL through
//! `ICEBERG_OPS_PG_BIN`, else the newest `/usr/lib/postgresql/<version>/bin`, else PATH.

pub mod fake_glue;
pub mod hive;
pub mod http;
pub mod issuer;
pub mod oracle;
pub mod proxy;
pub mod s3tables;
pub mod servers;
pub mod tls;
pub mod tools;
