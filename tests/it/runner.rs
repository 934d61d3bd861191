//! ops-runner on the embedded SQLite catalog: file migrations, history semantics of the seed,
//! concurrency, and PyIceberg reading the history table and the migrated schemas. The file
//! migrations and the concurrency cases run on PostgreSQL too (`*_on_postgres`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use iceberg::{NamespaceIdent, TableIdent};
use ops_core::CatalogHandle;
use ops_runner::{
    Migration, MigrationContext, MigrationRunner, RollbackTo, RunnerError, State, Status,
    StepError, ValidationIssue,
};
use ops_tests::oracle::pyiceberg;
use serde_json::Value;
use tokio::sync::Barrier;

use crate::common::*;

const CREATE: &str = r#"
description = "create orders"

[[upgrade]]
op = "create_table"
table = "orders"
identifier_fields = ["id"]
columns = [
  { name = "id", type = "long", required = true },
  { name = "amount", type = "decimal(10,2)" },
  { name = "qty", type = "int" },
  { name = "region", type = "string" },
  { name = "address", type = "struct<street: string, city: string>" },
]
partition = [{ column = "region" }]
sort_order = [{ column = "id" }]
properties = { "write.parquet.compression-codec" = "zstd", "commit.retry.num-retries" = 5 }
"#;

const RENAME: &str = r#"
[[upgrade]]
op = "rename_column"
table = "orders"
column = "amount"
to = "total"

[[upgrade]]
op = "add_column"
table = "orders"
column = "note"
type = "string"

[[upgrade]]
op = "set_properties"
table = "orders"
properties = { owner = "sales" }
"#;

const WIDEN: &str = r#"
version = 3

[[upgrade]]
op = "widen_column"
table = "orders"
column = "qty"
type = "long"
"#;

pub(crate) struct Env {
    pub(crate) props: BTreeMap<String, String>,
    pub(crate) handle: CatalogHandle,
    /// Scratch directory: the migration files, and a SQL catalog's database and warehouse.
    pub(crate) dir: std::path::PathBuf,
    /// The SQL catalog's database (and PostgreSQL server), when the environment runs on one.
    _db: Option<SqlCatalog>,
    /// The REST catalog server and the scratch directory, when it runs on one (killed on drop).
    _rest: Option<(tempfile::TempDir, ops_tests::servers::Rustberg)>,
}

impl Env {
    /// The embedded SQLite catalog.
    pub(crate) async fn new() -> anyhow::Result<Self> {
        Self::on(SqlCatalog::sqlite()?).await
    }

    /// A SQL catalog: SQLite or PostgreSQL.
    pub(crate) async fn on(db: SqlCatalog) -> anyhow::Result<Self> {
        let props = db.props.clone();
        let handle = open("mig", &props).await?;
        let dir = db.dir.path().to_path_buf();
        std::fs::create_dir_all(dir.join("migrations"))?;
        Ok(Self {
            props,
            handle,
            dir,
            _db: Some(db),
            _rest: None,
        })
    }

    /// A rustberg REST catalog.
    pub(crate) async fn rest() -> anyhow::Result<Self> {
        init_tracing();
        let tmp = tempfile::tempdir()?;
        let rustberg = ops_tests::servers::Rustberg::start();
        let props = props(&[("type", "rest"), ("uri", &rustberg.uri())]);
        let handle = open("mig", &props).await?;
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("migrations"))?;
        Ok(Self {
            props,
            handle,
            dir,
            _db: None,
            _rest: Some((tmp, rustberg)),
        })
    }

    pub(crate) async fn table(
        &self,
        ns: &str,
        table: &str,
    ) -> anyhow::Result<iceberg::table::Table> {
        Ok(self
            .handle
            .catalog()
            .load_table(&TableIdent::from_strs([ns, table])?)
            .await?)
    }

    pub(crate) async fn exists(&self, ns: &str, table: &str) -> anyhow::Result<bool> {
        Ok(self
            .handle
            .catalog()
            .table_exists(&TableIdent::from_strs([ns, table])?)
            .await?)
    }

    /// Appends rows with these ids (`id` column; every other column NULL).
    pub(crate) async fn append_ids(
        &self,
        ns: &str,
        table: &str,
        ids: &[i64],
    ) -> anyhow::Result<()> {
        let t = self.table(ns, table).await?;
        let schema = ops_core::write::table_arrow_schema(&t)?;
        let columns: Vec<arrow_array::ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| -> arrow_array::ArrayRef {
                if f.name() == "id" {
                    Arc::new(arrow_array::Int64Array::from(ids.to_vec()))
                } else {
                    arrow_array::new_null_array(f.data_type(), ids.len())
                }
            })
            .collect();
        let batch = arrow_array::RecordBatch::try_new(schema, columns)?;
        ops_core::append::append(
            &self.handle,
            &t,
            futures::stream::iter([Ok(batch)]),
            Default::default(),
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn properties(
        &self,
        ns: &str,
        table: &str,
    ) -> anyhow::Result<BTreeMap<String, String>> {
        Ok(self
            .table(ns, table)
            .await?
            .metadata()
            .properties()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    pub(crate) fn migrations(&self) -> std::path::PathBuf {
        self.dir.join("migrations")
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> anyhow::Result<()> {
        let path = self.migrations().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
        Ok(())
    }

    pub(crate) fn runner(&self, ns: &str) -> MigrationRunner {
        MigrationRunner::new(&self.handle, ns).migrations_dir(Some(self.migrations()))
    }

    pub(crate) async fn meta_exists(&self) -> anyhow::Result<bool> {
        Ok(self
            .handle
            .catalog()
            .namespace_exists(&NamespaceIdent::new("_iceberg_ops".into()))
            .await?)
    }

    pub(crate) async fn history_snapshot(&self) -> anyhow::Result<Option<i64>> {
        let t = self
            .handle
            .catalog()
            .load_table(&TableIdent::from_strs([
                "_iceberg_ops",
                "migration_history",
            ])?)
            .await?;
        Ok(t.metadata().current_snapshot_id())
    }

    pub(crate) async fn columns(
        &self,
        ns: &str,
        table: &str,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let t = self
            .handle
            .catalog()
            .load_table(&TableIdent::from_strs([ns, table])?)
            .await?;
        Ok(t.metadata()
            .current_schema()
            .as_struct()
            .fields()
            .iter()
            .map(|f| (f.name.clone(), ops_runner::types::type_name(&f.field_type)))
            .collect())
    }
}

pub(crate) fn names(cols: &[(String, String)]) -> Vec<&str> {
    cols.iter().map(|(n, _)| n.as_str()).collect()
}

fn states(entries: &[ops_runner::StatusEntry]) -> Vec<(String, State)> {
    entries
        .iter()
        .map(|e| (e.version.clone(), e.state))
        .collect()
}

pub(crate) fn v(s: &str) -> String {
    s.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn file_migrations_migrate_roll_back_and_pyiceberg_reads_them() -> TestResult {
    file_migrations(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn file_migrations_migrate_roll_back_and_pyiceberg_reads_them_on_postgres() -> TestResult {
    file_migrations(Env::on(SqlCatalog::postgres()?).await?).await
}

async fn file_migrations(env: Env) -> TestResult {
    env.write("0001_create_orders.toml", CREATE)?;
    env.write("0002_rename_amount.toml", RENAME)?;
    env.write("0003_widen_qty.toml", WIDEN)?;
    let runner = env.runner("sales");
    env.handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("sales".into()), Default::default())
        .await?;

    // status and plan write nothing, not even the history table.
    let status = runner.status().await?;
    assert_eq!(
        states(&status),
        vec![
            (v("0001"), State::Pending),
            (v("0002"), State::Pending),
            (v("0003"), State::Pending)
        ]
    );
    assert_eq!(status[0].to_string(), "[pending]     0001  create orders");
    assert_eq!(status[1].description, "rename amount");
    let plan = runner.plan(Some("2".into())).await?;
    assert_eq!(plan.len(), 2);
    assert!(
        plan[1].changes.contains(
            &"sales.orders: new schema renames column amount to total (field id kept)".to_string()
        ),
        "{plan:?}"
    );
    assert!(!env.meta_exists().await?, "plan created the meta namespace");

    // Up to 0002 ("2" and 2 are the same target).
    assert_eq!(
        runner.migrate(Some(2.into())).await?,
        vec![v("0001"), v("0002")]
    );
    let cols = env.columns("sales", "orders").await?;
    assert_eq!(
        names(&cols),
        vec!["id", "total", "qty", "region", "address", "note"]
    );
    assert_eq!(cols[1].1, "decimal(10,2)");
    let t = env
        .handle
        .catalog()
        .load_table(&TableIdent::from_strs(["sales", "orders"])?)
        .await?;
    assert_eq!(
        t.metadata().properties().get("owner").map(String::as_str),
        Some("sales")
    );
    assert_eq!(
        t.metadata()
            .properties()
            .get("commit.retry.num-retries")
            .map(String::as_str),
        Some("5")
    );
    assert_eq!(t.metadata().default_partition_spec().fields().len(), 1);
    assert_eq!(t.metadata().default_sort_order().fields.len(), 1);
    assert_eq!(
        t.metadata()
            .current_schema()
            .identifier_field_ids()
            .collect::<Vec<_>>(),
        vec![1]
    );
    let history_table = env
        .handle
        .catalog()
        .load_table(&TableIdent::from_strs([
            "_iceberg_ops",
            "migration_history",
        ])?)
        .await?;
    assert_eq!(
        history_table
            .metadata()
            .properties()
            .get("commit.retry.num-retries")
            .map(String::as_str),
        Some("20")
    );

    // The derived downgrade of 0002: rename back, drop the added column, remove the property.
    let plan = runner.plan_rollback(RollbackTo::Steps(1)).await?;
    assert_eq!(plan[0].version, "0002");
    assert_eq!(
        runner.rollback(RollbackTo::Steps(1)).await?,
        vec![v("0002")]
    );
    let cols = env.columns("sales", "orders").await?;
    assert_eq!(
        names(&cols),
        vec!["id", "amount", "qty", "region", "address"]
    );
    let status = runner.status().await?;
    assert_eq!(status[1].state, State::RolledBack);
    assert_eq!(status[1].to_string(), "[rolled_back] 0002  rename amount");

    assert_eq!(runner.migrate(None).await?, vec![v("0002"), v("0003")]);
    let cols = env.columns("sales", "orders").await?;
    assert_eq!(cols[2], (v("qty"), v("long")));

    // 0003 (widen) has no inverse: the rollback refuses before any downgrade runs.
    let before = env.history_snapshot().await?;
    let err = runner
        .rollback(RollbackTo::Target("1".into()))
        .await
        .expect_err("widening cannot be undone");
    assert!(
        matches!(&err, RunnerError::NotImplemented { version, .. } if version == "0003"),
        "{err}"
    );
    assert!(err.to_string().contains("[[downgrade]]"), "{err}");
    assert_eq!(env.history_snapshot().await?, before);
    assert_eq!(names(&env.columns("sales", "orders").await?)[1], "total");

    // History: one row per version, readable by PyIceberg, and earlier states by time travel.
    let rows = runner.history().await?;
    assert_eq!(
        rows.iter()
            .map(|r| (r.version.as_str(), r.status))
            .collect::<Vec<_>>(),
        vec![
            ("0001", Status::Applied),
            ("0002", Status::Applied),
            ("0003", Status::Applied)
        ]
    );
    assert!(
        rows.iter()
            .all(|r| r.checksum.as_ref().is_some_and(|c| c.len() == 64))
    );
    let out = pyiceberg(
        "mig",
        &env.props,
        "t = catalog.load_table('_iceberg_ops.migration_history')\n\
         snaps = sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)\n\
         first = rows(t, snaps[1].snapshot_id)\n\
         o = catalog.load_table('sales.orders')\n\
         emit({'rows': rows(t), 'schema': [[f.name, str(f.field_type), f.required] for f in t.schema().fields], \
               'first': first, 'orders': describe(o)['schema'], 'snapshots': len(snaps)})",
    )?;
    let py_rows = out["rows"].as_array().cloned().unwrap_or_default();
    let got: Vec<(String, String, String)> = py_rows
        .iter()
        .map(|r| {
            (
                r["version"].as_str().unwrap_or_default().to_string(),
                r["namespace"].as_str().unwrap_or_default().to_string(),
                r["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (v("0001"), v("sales"), v("applied")),
            (v("0002"), v("sales"), v("applied")),
            (v("0003"), v("sales"), v("applied"))
        ]
    );
    // `details` came by schema evolution when 0002's set_properties recorded the earlier values.
    let schema: Vec<Value> = out["schema"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        schema,
        serde_json::from_str::<Vec<Value>>(
            r#"[["version","string",true],["namespace","string",true],["description","string",false],
                ["applied_at","string",true],["status","string",true],["error","string",false],
                ["checksum","string",false],["details","string",false]]"#
        )?
    );
    // Time travel: after the second write only 0001 and 0002 were there.
    assert_eq!(out["first"].as_array().map(Vec::len), Some(2), "{out}");
    // applied 0001, 0002; rolled back 0002; applied 0002, 0003.
    assert_eq!(out["snapshots"], 5, "one snapshot per history write");
    let orders: Vec<(String, String)> = out["orders"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or_default().to_string(),
                f["type"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(orders[1], (v("total"), v("decimal(10, 2)")));
    assert_eq!(orders[2], (v("qty"), v("long")));
    assert_eq!(orders[5], (v("note"), v("string")));

    // validate: a changed file and a missing one.
    assert!(runner.validate().await?.is_empty());
    env.write("0002_rename_amount.toml", &format!("{RENAME}\n# edited\n"))?;
    std::fs::remove_file(env.migrations().join("0003_widen_qty.toml"))?;
    let issues = runner.validate().await?;
    assert!(
        matches!(&issues[..], [ValidationIssue::Changed { version: a, .. }, ValidationIssue::Missing { version: b, .. }] if a == "0002" && b == "0003"),
        "{issues:?}"
    );
    let status = runner.status().await?;
    assert!(status[2].file_missing);
    assert!(status[2].to_string().ends_with("(migration file missing)"));
    // A missing file to undo is found before any downgrade runs.
    let err = runner
        .rollback(RollbackTo::Steps(2))
        .await
        .expect_err("0003's file is gone");
    assert!(matches!(err, RunnerError::MissingMigration { .. }), "{err}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_is_recorded_and_stops_the_run_and_stamp_replaces_it() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", CREATE)?;
    env.write(
        "0002_bad.toml",
        "[[upgrade]]\nop = \"rename_column\"\ntable = \"orders\"\ncolumn = \"nope\"\nto = \"x\"\n",
    )?;
    env.write("0003_widen_qty.toml", WIDEN)?;
    env.handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("sales".into()), Default::default())
        .await?;
    let runner = env.runner("sales");
    let err = runner.migrate(None).await.expect_err("0002 fails");
    let RunnerError::MigrationFailed {
        version, message, ..
    } = &err
    else {
        anyhow::bail!("unexpected {err}");
    };
    assert_eq!(version, "0002");
    assert!(message.starts_with("InvalidInput: "), "{message}");
    let rows = runner.history().await?;
    assert_eq!(rows.len(), 2, "0003 must not run after the failure");
    assert_eq!(rows[1].status, Status::Failed);
    assert_eq!(rows[1].error.as_deref(), Some(message.as_str()));
    let status = runner.status().await?;
    assert!(
        status[1].to_string().starts_with("[FAILED]"),
        "{}",
        status[1]
    );
    assert_eq!(status[2].state, State::Pending);

    // stamp marks the failed and pending versions applied without running them.
    assert_eq!(runner.stamp(None).await?, vec![v("0002"), v("0003")]);
    assert_eq!(
        env.columns("sales", "orders").await?[2],
        (v("qty"), v("int"))
    );
    let rows = runner.history().await?;
    assert!(
        rows.iter()
            .all(|r| r.status == Status::Applied && r.error.is_none())
    );
    assert_eq!(rows.len(), 3, "stamp replaces the failed row");
    // Idempotent.
    let before = env.history_snapshot().await?;
    assert!(runner.stamp(None).await?.is_empty());
    assert_eq!(env.history_snapshot().await?, before);
    assert!(runner.migrate(None).await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_a_clear_error_and_writes_nothing() -> TestResult {
    let env = Env::new().await?;
    // Missing directory.
    let runner =
        MigrationRunner::new(&env.handle, "sales").migrations_dir(Some(env.dir.join("nowhere")));
    assert!(matches!(
        runner.status().await,
        Err(RunnerError::DirectoryNotFound(_))
    ));

    env.write("0001_create_orders.toml", CREATE)?;
    let runner = env.runner("sales");
    for bad in ["5", "12345", "x"] {
        let err = runner
            .migrate(Some(bad.into()))
            .await
            .expect_err("bad target");
        assert!(
            matches!(
                err,
                RunnerError::UnknownTarget { .. } | RunnerError::InvalidVersion { .. }
            ),
            "{err}"
        );
    }
    assert!(runner.plan(Some("7".into())).await.is_err());
    assert!(runner.stamp(Some("0002".into())).await.is_err());
    assert!(matches!(
        runner.rollback(RollbackTo::Steps(0)).await,
        Err(RunnerError::InvalidArgument(_))
    ));
    assert!(matches!(
        runner.rollback(RollbackTo::Target("9".into())).await,
        Err(RunnerError::UnknownTarget { .. })
    ));

    // A malformed file names the file, line and field.
    env.write(
        "0002_bad.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"c\"\ntype = \"decimal(12)\"\n",
    )?;
    let err = runner.migrate(None).await.expect_err("malformed");
    let text = err.to_string();
    assert!(
        text.contains("0002_bad.toml") && text.contains("line 5") && text.contains("'type'"),
        "{text}"
    );
    // Version prefix and declared version must agree; duplicates are refused.
    env.write(
        "0002_bad.toml",
        "version = \"0007\"\n[[upgrade]]\nop = \"drop_table\"\ntable = \"x\"\nallow = 1\n",
    )?;
    assert!(runner.status().await.is_err());
    env.write(
        "0002_bad.toml",
        "version = \"0007\"\n[[upgrade]]\nop = \"rename_table\"\ntable = \"a\"\nto = \"b\"\n",
    )?;
    let err = runner.status().await.expect_err("version mismatch");
    assert!(err.to_string().contains("prefix is 0002"), "{err}");
    std::fs::remove_file(env.migrations().join("0002_bad.toml"))?;
    let dup = env.runner("sales").register(Arc::new(Gate::new("1", None)));
    assert!(matches!(
        dup.status().await,
        Err(RunnerError::DuplicateVersion { .. })
    ));
    // A destructive operation is refused unless the file allows it.
    env.write(
        "0002_drop.toml",
        "[[upgrade]]\nop = \"drop_column\"\ntable = \"orders\"\ncolumn = \"qty\"\n",
    )?;
    let err = runner.plan(None).await.expect_err("destructive");
    assert!(err.to_string().contains("allow_destructive"), "{err}");
    assert!(!env.meta_exists().await?, "an error wrote history");

    // The namespace-scoped subdirectory wins when it exists.
    env.write(
        "finance/0001_invoices.toml",
        &CREATE.replace("orders", "invoices"),
    )?;
    let plan = env.runner("finance").plan(None).await?;
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].description, "create invoices");
    Ok(())
}

/// A code migration whose upgrade waits until every runner has reached it, so their history
/// writes race.
struct Gate {
    version: String,
    barrier: Option<Arc<Barrier>>,
}

impl Gate {
    fn new(version: &str, barrier: Option<Arc<Barrier>>) -> Self {
        Self {
            version: version.to_string(),
            barrier,
        }
    }
}

#[async_trait]
impl Migration for Gate {
    fn version(&self) -> &str {
        &self.version
    }

    fn description(&self) -> &str {
        "gate"
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        // Idempotent, as the seed asks of upgrades that may run twice.
        if !ctx.catalog().namespace_exists(ctx.namespace()).await? {
            let _ = ctx
                .catalog()
                .create_namespace(ctx.namespace(), Default::default())
                .await;
        }
        if let Some(b) = &self.barrier {
            b.wait().await;
        }
        Ok(())
    }
}

fn gated(env: &Env, ns: &str, barrier: &Arc<Barrier>) -> MigrationRunner {
    MigrationRunner::new(&env.handle, ns)
        .migrations_dir(None::<&Path>)
        .register(Arc::new(Gate::new("1", Some(barrier.clone()))))
        .register(Arc::new(Gate::new("2", None)))
}

#[tokio::test(flavor = "multi_thread")]
async fn two_runners_on_one_namespace_keep_one_row_per_version() -> TestResult {
    two_runners_on_one_namespace(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_runners_on_one_namespace_keep_one_row_per_version_on_postgres() -> TestResult {
    two_runners_on_one_namespace(Env::on(SqlCatalog::postgres()?).await?).await
}

async fn two_runners_on_one_namespace(env: Env) -> TestResult {
    let barrier = Arc::new(Barrier::new(2));
    let (a, b) = (
        gated(&env, "sales", &barrier),
        gated(&env, "sales", &barrier),
    );
    let (ra, rb) = tokio::join!(a.migrate(None), b.migrate(None));
    let (won, lost) = match (ra, rb) {
        (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
        (ra, rb) => anyhow::bail!("expected one winner: {ra:?} / {rb:?}"),
    };
    assert_eq!(won, vec![v("0001"), v("0002")]);
    assert!(matches!(lost, RunnerError::Concurrent(_)), "{lost}");
    let rows = a.history().await?;
    assert_eq!(
        rows.iter()
            .map(|r| (r.version.as_str(), r.status))
            .collect::<Vec<_>>(),
        vec![("0001", Status::Applied), ("0002", Status::Applied)]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn runners_on_two_namespaces_share_the_history_table() -> TestResult {
    runners_on_two_namespaces(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn runners_on_two_namespaces_share_the_history_table_on_postgres() -> TestResult {
    runners_on_two_namespaces(Env::on(SqlCatalog::postgres()?).await?).await
}

async fn runners_on_two_namespaces(env: Env) -> TestResult {
    // Four namespaces whose history writes race: each lost race is rebased and retried.
    let names = ["sales", "finance", "crm", "ops"];
    let barrier = Arc::new(Barrier::new(names.len()));
    let runners: Vec<MigrationRunner> = names.iter().map(|n| gated(&env, n, &barrier)).collect();
    let results = futures::future::join_all(runners.iter().map(|r| r.migrate(None))).await;
    for r in results {
        assert_eq!(r?, vec![v("0001"), v("0002")]);
    }
    for r in &runners {
        let rows = r.history().await?;
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|row| row.namespace == r.namespace()));
    }
    let out = pyiceberg(
        "mig",
        &env.props,
        "emit(rows(catalog.load_table('_iceberg_ops.migration_history')))",
    )?;
    assert_eq!(out.as_array().map(Vec::len), Some(8), "{out}");
    Ok(())
}

/// Records each hook it runs; fails its upgrade with a long message when asked.
struct Hooks {
    version: String,
    log: Arc<std::sync::Mutex<Vec<String>>>,
    fail: bool,
}

#[async_trait]
impl Migration for Hooks {
    fn version(&self) -> &str {
        &self.version
    }

    fn description(&self) -> &str {
        "hooks"
    }

    async fn pre_upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("pre {}", self.version));
        Ok(())
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        self.log.lock().unwrap().push(format!(
            "up {} in {}",
            self.version,
            ctx.namespace().to_url_string()
        ));
        if self.fail {
            return Err(StepError::Invalid("x".repeat(5000)));
        }
        Ok(())
    }

    async fn post_upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("post {}", self.version));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn code_migrations_run_their_hooks_and_have_no_default_downgrade() -> TestResult {
    let env = Env::new().await?;
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hooks = |version: &str, fail| {
        Arc::new(Hooks {
            version: version.to_string(),
            log: log.clone(),
            fail,
        })
    };
    let runner = MigrationRunner::new(&env.handle, "crm")
        .meta_namespace("_meta")
        .migrations_dir(None::<&Path>)
        .register(hooks("1", false))
        .register(hooks("2", true));
    let err = runner.migrate(None).await.expect_err("0002 fails");
    assert!(matches!(err, RunnerError::MigrationFailed { .. }), "{err}");
    assert_eq!(
        *log.lock().unwrap(),
        vec!["pre 1", "up 1 in crm", "post 1", "pre 2", "up 2 in crm"]
    );
    let rows = runner.history().await?;
    let error = rows[1].error.clone().unwrap_or_default();
    assert!(error.starts_with("InvalidMigration: xxx"), "{error}");
    assert_eq!(error.chars().count(), ops_runner::MAX_ERROR_CHARS);
    assert!(
        env.handle
            .catalog()
            .table_exists(&TableIdent::from_strs(["_meta", "migration_history"])?)
            .await?
    );

    // A code migration without a downgrade: NotImplemented, and nothing is recorded.
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("no downgrade");
    assert!(matches!(err, RunnerError::NotImplemented { .. }), "{err}");
    assert_eq!(runner.history().await?[0].status, Status::Applied);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn new_from_a_desired_definition_generates_what_gets_there() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", CREATE)?;
    env.handle
        .catalog()
        .create_namespace(&NamespaceIdent::new("sales".into()), Default::default())
        .await?;
    let runner = env.runner("sales");
    runner.migrate(None).await?;
    let desired = r#"
table = "orders"
identifier_fields = ["id"]
columns = [
  { name = "id", type = "long", required = true },
  { name = "amount", type = "decimal(12,2)", doc = "in EUR" },
  { name = "qty", type = "long" },
  { name = "region", type = "string" },
  { name = "email", type = "string" },
]
partition = [{ column = "id", transform = "bucket[4]" }]
sort_order = [{ column = "id" }]
properties = { owner = "sales" }
"#;
    let ns = NamespaceIdent::new("sales".into());
    let generated = ops_runner::autogen::diff_against_live(
        &env.handle,
        &ns,
        desired,
        Path::new("desired.toml"),
        "0002",
        "to desired",
    )
    .await?;
    let ops: Vec<&str> = generated.upgrade.iter().map(|o| o.name()).collect();
    assert_eq!(
        ops,
        vec![
            "widen_column",
            "set_doc",
            "widen_column",
            "add_column",
            "remove_partition_field",
            "add_partition_field",
            "drop_column",
            "set_properties"
        ]
    );
    assert_eq!(
        generated.destructive.len(),
        1,
        "{:?}",
        generated.destructive
    );
    // The generated file refuses to load until the drop is reviewed; allowed, it gets there.
    env.write("0002_to_desired.toml", &generated.text)?;
    assert!(runner.plan(None).await.is_err());
    env.write(
        "0002_to_desired.toml",
        &generated
            .text
            .replace("allow_destructive = false", "allow_destructive = true"),
    )?;
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    let again = ops_runner::autogen::diff_against_live(
        &env.handle,
        &ns,
        desired,
        Path::new("desired.toml"),
        "0003",
        "noop",
    )
    .await?;
    assert!(again.upgrade.is_empty(), "{:?}", again.upgrade);
    assert!(again.text.contains("already matches"));
    Ok(())
}

/// A code migration whose upgrade simulates another process: it records history itself, or
/// fails as a commit that lost a race.
struct Intruder {
    version: String,
    history: Option<ops_runner::MigrationHistory>,
}

#[async_trait]
impl Migration for Intruder {
    fn version(&self) -> &str {
        &self.version
    }

    fn description(&self) -> &str {
        "intruder"
    }

    async fn upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        match &self.history {
            Some(h) => {
                h.record_applied("0009", "sales", "someone else", None)
                    .await
                    .map_err(|e| StepError::Other(Box::new(e)))?;
                Ok(())
            }
            None => Err(StepError::Core(ops_core::Error::CommitConflict {
                table: "sales.orders".into(),
                detail: "simulated".into(),
            })),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_runners_history_or_a_conflicting_commit_is_a_concurrent_migration_error()
-> TestResult {
    another_runners_history(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn another_runners_history_or_a_conflicting_commit_is_a_concurrent_migration_error_on_postgres()
-> TestResult {
    another_runners_history(Env::on(SqlCatalog::postgres()?).await?).await
}

async fn another_runners_history(env: Env) -> TestResult {
    let other = ops_runner::MigrationHistory::new(&env.handle, "_iceberg_ops");
    let runner = MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(Gate::new("1", None)))
        .register(Arc::new(Intruder {
            version: "2".into(),
            history: Some(other),
        }));
    let err = runner
        .migrate(None)
        .await
        .expect_err("another runner wrote");
    assert!(matches!(err, RunnerError::Concurrent(_)), "{err}");
    assert!(err.to_string().contains("0009"), "{err}");
    // This run's version stays recorded as applied.
    let rows = runner.history().await?;
    assert_eq!(
        rows.iter()
            .map(|r| (r.version.as_str(), r.status))
            .collect::<Vec<_>>(),
        vec![
            ("0001", Status::Applied),
            ("0002", Status::Applied),
            ("0009", Status::Applied)
        ]
    );

    // A migration whose own commit conflicts: ConcurrentMigrationError, nothing recorded.
    let runner = MigrationRunner::new(&env.handle, "finance")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(Intruder {
            version: "1".into(),
            history: None,
        }));
    let err = runner.migrate(None).await.expect_err("conflict");
    assert!(matches!(err, RunnerError::Concurrent(_)), "{err}");
    assert!(runner.history().await?.is_empty());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Rollback undoes what was applied; autogen orders its operations; races, partial upgrades,
// history reads and Python-written rows (issue 15).

/// `create_table <name> (id long not null, v string)`.
pub(crate) fn create_file(table: &str) -> String {
    format!(
        "[[upgrade]]\nop = \"create_table\"\ntable = \"{table}\"\ncolumns = [\n  \
         {{ name = \"id\", type = \"long\", required = true }},\n  {{ name = \"v\", type = \"string\" }},\n]\n"
    )
}

async fn rollback_refuses_a_file_changed_since_it_was_applied(env: Env) -> TestResult {
    env.write("0001_create_orders.toml", &create_file("orders"))?;
    env.write("0002_create_orders_v2.toml", &create_file("orders_v2"))?;
    let runner = env.runner("sales");
    assert_eq!(runner.migrate(None).await?, vec![v("0001"), v("0002")]);
    env.append_ids("sales", "orders", &[1, 2, 3]).await?;
    let applied = runner.history().await?[1]
        .checksum
        .clone()
        .unwrap_or_default();
    assert_eq!(
        applied,
        ops_runner::file::checksum(create_file("orders_v2").as_bytes())
    );

    // 0002 edited after it was applied: it now creates `orders`. Its derived downgrade would
    // drop 0001's table; the rollback refuses, naming the version and both checksums.
    env.write("0002_create_orders_v2.toml", &create_file("orders"))?;
    let current = ops_runner::file::checksum(create_file("orders").as_bytes());
    let before = env.history_snapshot().await?;
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("0002 changed since it was applied");
    let text = err.to_string();
    assert!(
        text.contains("0002") && text.contains(&applied) && text.contains(&current),
        "{text}"
    );
    assert!(
        runner.plan_rollback(RollbackTo::Steps(1)).await.is_err(),
        "the dry run refuses too"
    );
    assert!(env.exists("sales", "orders").await? && env.exists("sales", "orders_v2").await?);
    assert_eq!(env.history_snapshot().await?, before, "nothing recorded");

    // Restored, the rollback undoes what was applied: orders_v2 goes, orders keeps its rows.
    env.write("0002_create_orders_v2.toml", &create_file("orders_v2"))?;
    assert_eq!(
        runner.rollback(RollbackTo::Steps(1)).await?,
        vec![v("0002")]
    );
    assert!(!env.exists("sales", "orders_v2").await?);

    // A derived drop_table of a table that holds rows needs consent on the command.
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    env.append_ids("sales", "orders_v2", &[7]).await?;
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("orders_v2 holds a row");
    let text = err.to_string();
    assert!(
        text.contains("orders_v2") && text.contains("allow-destructive"),
        "{text}"
    );
    assert!(env.exists("sales", "orders_v2").await?);
    assert_eq!(runner.history().await?[1].status, Status::Applied);

    let out = pyiceberg(
        "mig",
        &env.props,
        "emit([len(catalog.load_table('sales.orders').scan().to_arrow()), \
               len(catalog.load_table('sales.orders_v2').scan().to_arrow())])",
    )?;
    assert_eq!(out, serde_json::json!([3, 1]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_refuses_a_file_changed_since_it_was_applied_on_sqlite() -> TestResult {
    rollback_refuses_a_file_changed_since_it_was_applied(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_refuses_a_file_changed_since_it_was_applied_on_rest() -> TestResult {
    rollback_refuses_a_file_changed_since_it_was_applied(Env::rest().await?).await
}

const EVENTS: &str = r#"
[[upgrade]]
op = "create_table"
table = "events"
identifier_fields = ["id", "k"]
columns = [
  { name = "id", type = "long", required = true },
  { name = "old", type = "string" },
  { name = "region", type = "string" },
  { name = "k", type = "long", required = true },
  { name = "note", type = "string" },
]
partition = [{ column = "old" }]
sort_order = [{ column = "k" }]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn new_from_orders_its_operations_and_keeps_what_the_definition_leaves_out() -> TestResult {
    new_from_orders_its_operations(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn new_from_orders_its_operations_and_keeps_what_the_definition_leaves_out_on_rest()
-> TestResult {
    new_from_orders_its_operations(Env::rest().await?).await
}

async fn new_from_orders_its_operations(env: Env) -> TestResult {
    env.write("0001_create_events.toml", EVENTS)?;
    let runner = env.runner("sales");
    runner.migrate(None).await?;
    let ns = NamespaceIdent::new("sales".into());
    // No `old` (a partition source) and no `k` (identifier and sort source); partitioned by
    // region, explicitly unsorted.
    let desired = r#"
table = "events"
identifier_fields = ["id"]
columns = [
  { name = "id", type = "long", required = true },
  { name = "region", type = "string" },
  { name = "note", type = "string" },
]
partition = [{ column = "region" }]
sort_order = []
"#;
    let generated = ops_runner::autogen::diff_against_live(
        &env.handle,
        &ns,
        desired,
        Path::new("desired.toml"),
        "0002",
        "to desired",
    )
    .await?;
    let ops: Vec<&str> = generated.upgrade.iter().map(|o| o.name()).collect();
    assert_eq!(
        ops,
        vec![
            "set_identifier_fields",
            "remove_partition_field",
            "add_partition_field",
            "replace_sort_order",
            "drop_column"
        ],
        "{}",
        generated.text
    );
    assert!(
        generated.upgrade.iter().all(
            |o| !matches!(o, ops_runner::Operation::DropColumn { column, .. } if column == "old")
        ),
        "{}",
        generated.text
    );
    // The file says why `old` stays.
    assert!(
        generated
            .text
            .lines()
            .any(|l| l.starts_with('#') && l.contains("'old'") && l.contains("spec 0")),
        "{}",
        generated.text
    );
    env.write(
        "0002_to_desired.toml",
        &generated
            .text
            .replace("allow_destructive = false", "allow_destructive = true"),
    )?;
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    let t = env.table("sales", "events").await?;
    let md = t.metadata();
    assert_eq!(
        names(&env.columns("sales", "events").await?),
        vec!["id", "old", "region", "note"]
    );
    assert_eq!(
        md.current_schema()
            .identifier_field_ids()
            .collect::<Vec<_>>(),
        vec![1]
    );
    assert!(md.default_sort_order().fields.is_empty());

    // Without `partition`, `sort_order` and `identifier_fields` the live ones are kept, and
    // the file says so.
    let desired = r#"
table = "events"
columns = [
  { name = "id", type = "long", required = true },
  { name = "old", type = "string" },
  { name = "region", type = "string" },
  { name = "note", type = "string" },
]
"#;
    let generated = ops_runner::autogen::diff_against_live(
        &env.handle,
        &ns,
        desired,
        Path::new("desired.toml"),
        "0003",
        "keep",
    )
    .await?;
    assert!(generated.upgrade.is_empty(), "{}", generated.text);
    assert!(
        generated.text.contains("no `partition`")
            && generated.text.contains("no `identifier_fields`"),
        "{}",
        generated.text
    );

    let out = pyiceberg(
        "mig",
        &env.props,
        "t = catalog.load_table('sales.events')\nd = describe(t)\n\
         emit({'spec': [[f['name'], f['transform']] for f in d['spec']], \
               'schema': [f['name'] for f in d['schema']], \
               'ids': sorted(t.schema().identifier_field_ids)})",
    )?;
    assert_eq!(
        out,
        serde_json::json!({"spec": [["region", "identity"]], "schema": ["id", "old", "region", "note"], "ids": [1]})
    );
    Ok(())
}

/// Turn-taking between two racing runners.
#[derive(Default)]
struct RaceSignals {
    renamed: tokio::sync::Notify,
    proceed: tokio::sync::Notify,
}

/// Renames `orders.amount` to `total` (a real ops-core commit). `wait_before`: wait until the
/// other runner has renamed; `wait_after`: after the rename, wait for `proceed` before
/// returning (and so before this runner writes history).
struct RacingRename {
    signals: Arc<RaceSignals>,
    wait_before: bool,
    wait_after: bool,
}

#[async_trait]
impl Migration for RacingRename {
    fn version(&self) -> &str {
        "1"
    }

    fn description(&self) -> &str {
        "rename amount"
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        if self.wait_before {
            self.signals.renamed.notified().await;
        }
        let result = ops_core::ops::evolve_schema::EvolveSchemaBuilder::new(
            ctx.handle(),
            ctx.table("orders"),
        )
        .rename_column("amount", "total")
        .await;
        if !self.wait_before {
            self.signals.renamed.notify_one();
        }
        if self.wait_after {
            self.signals.proceed.notified().await;
        }
        result?;
        Ok(())
    }
}

fn racing(
    env: &Env,
    signals: &Arc<RaceSignals>,
    wait_before: bool,
    wait_after: bool,
) -> MigrationRunner {
    MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(RacingRename {
            signals: signals.clone(),
            wait_before,
            wait_after,
        }))
}

async fn race_state(env: &Env) -> anyhow::Result<Vec<(String, Status)>> {
    Ok(MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .history()
        .await?
        .into_iter()
        .map(|r| (r.version, r.status))
        .collect())
}

/// The loser's rename fails (the winner already made it) and the winner records `applied`
/// before the loser writes history: the loser reports a ConcurrentMigrationError and records
/// nothing.
async fn a_runner_whose_upgrade_lost_the_race(env: Env) -> TestResult {
    create_orders(&env.handle, "sales").await?;
    let signals = Arc::new(RaceSignals::default());
    let winner = racing(&env, &signals, false, false);
    let loser = racing(&env, &signals, true, true);
    let lost = tokio::spawn(async move { loser.migrate(None).await });
    assert_eq!(winner.migrate(None).await?, vec![v("0001")]);
    signals.proceed.notify_one();
    let lost = lost.await?.expect_err("the loser's rename failed");
    assert!(matches!(lost, RunnerError::Concurrent(_)), "{lost}");
    assert_eq!(race_state(&env).await?, vec![(v("0001"), Status::Applied)]);
    assert!(
        racing(&env, &signals, false, false)
            .migrate(None)
            .await?
            .is_empty()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_whose_upgrade_lost_the_race_reports_a_concurrent_migration_error() -> TestResult {
    a_runner_whose_upgrade_lost_the_race(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_whose_upgrade_lost_the_race_reports_a_concurrent_migration_error_on_rest()
-> TestResult {
    a_runner_whose_upgrade_lost_the_race(Env::rest().await?).await
}

/// The loser records `failed` before the winner writes history: the winner's upgrade landed, so
/// history ends `applied` and a later `migrate` has nothing to do.
#[tokio::test(flavor = "multi_thread")]
async fn a_failure_recorded_by_the_losing_runner_does_not_hide_the_winners_upgrade() -> TestResult {
    let env = Env::new().await?;
    create_orders(&env.handle, "sales").await?;
    let signals = Arc::new(RaceSignals::default());
    let winner = racing(&env, &signals, false, true);
    let loser = racing(&env, &signals, true, false);
    let won = tokio::spawn(async move { winner.migrate(None).await });
    let lost = loser
        .migrate(None)
        .await
        .expect_err("the loser's rename failed");
    assert!(
        matches!(lost, RunnerError::MigrationFailed { .. }),
        "{lost}"
    );
    signals.proceed.notify_one();
    let won = won
        .await?
        .expect_err("another runner wrote this version's row");
    assert!(matches!(won, RunnerError::Concurrent(_)), "{won}");
    assert_eq!(race_state(&env).await?, vec![(v("0001"), Status::Applied)]);
    assert!(
        racing(&env, &signals, false, false)
            .migrate(None)
            .await?
            .is_empty()
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "region", "total"]
    );
    let out = pyiceberg(
        "mig",
        &env.props,
        "emit([[r['version'], r['status'], r['error']] for r in \
               rows(catalog.load_table('_iceberg_ops.migration_history'))])",
    )?;
    assert_eq!(out, serde_json::json!([["0001", "applied", null]]));
    Ok(())
}

pub(crate) const PARTIAL_CREATE: &str = r#"
[[upgrade]]
op = "create_table"
table = "orders"
columns = [
  { name = "id", type = "long", required = true },
  { name = "amount", type = "int" },
]
properties = { owner = "a" }
"#;

/// Three commits: a column, properties, then a rename of `rename_from` (fails for `nope`).
pub(crate) fn partial(first_column: &str, rename_from: &str) -> String {
    format!(
        r#"
[[upgrade]]
op = "add_column"
table = "orders"
column = "{first_column}"
type = "string"

[[upgrade]]
op = "set_properties"
table = "orders"
properties = {{ owner = "b", stage = "x" }}

[[upgrade]]
op = "rename_column"
table = "orders"
column = "{rename_from}"
to = "z"
"#
    )
}

async fn an_upgrade_that_failed_halfway_resumes(env: Env) -> TestResult {
    env.write("0001_create_orders.toml", PARTIAL_CREATE)?;
    env.write("0002_evolve.toml", &partial("note", "nope"))?;
    let runner = env.runner("sales");
    let err = runner
        .migrate(None)
        .await
        .expect_err("rename of nope fails");
    assert!(
        matches!(&err, RunnerError::MigrationFailed { version, .. } if version == "0002"),
        "{err}"
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "amount", "note"]
    );
    assert_eq!(runner.history().await?[1].status, Status::Failed);

    // The operations that landed changed in the file: no guessing where to resume.
    env.write("0002_evolve.toml", &partial("notes", "amount"))?;
    let err = runner
        .migrate(None)
        .await
        .expect_err("landed operations changed");
    assert!(err.to_string().contains("0002"), "{err}");
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "amount", "note"]
    );

    // Only the failed operation fixed: migrate resumes after the two that landed.
    env.write("0002_evolve.toml", &partial("note", "amount"))?;
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "z", "note"]
    );
    let props = env.properties("sales", "orders").await?;
    assert_eq!(props.get("owner").map(String::as_str), Some("b"));
    assert_eq!(props.get("stage").map(String::as_str), Some("x"));
    assert_eq!(runner.history().await?[1].status, Status::Applied);

    // Its derived downgrade restores what was there, including the property values recorded
    // by the first, failed attempt.
    assert_eq!(
        runner.rollback(RollbackTo::Steps(1)).await?,
        vec![v("0002")]
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "amount"]
    );
    let props = env.properties("sales", "orders").await?;
    assert_eq!(props.get("owner").map(String::as_str), Some("a"));
    assert_eq!(props.get("stage"), None);

    let out = pyiceberg(
        "mig",
        &env.props,
        "t = catalog.load_table('_iceberg_ops.migration_history')\n\
         emit([[r['version'], r['status']] for r in rows(t)])",
    )?;
    assert_eq!(
        out,
        serde_json::json!([["0001", "applied"], ["0002", "rolled_back"]])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_that_failed_halfway_resumes_after_the_operations_that_landed() -> TestResult {
    an_upgrade_that_failed_halfway_resumes(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_that_failed_halfway_resumes_after_the_operations_that_landed_on_rest()
-> TestResult {
    an_upgrade_that_failed_halfway_resumes(Env::rest().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_undoes_the_operations_a_failed_upgrade_landed() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", PARTIAL_CREATE)?;
    env.write("0002_evolve.toml", &partial("note", "nope"))?;
    let runner = env.runner("sales");
    runner
        .migrate(None)
        .await
        .expect_err("rename of nope fails");
    let plan = runner.plan_rollback(RollbackTo::Steps(1)).await?;
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].version, "0002");
    assert_eq!(
        runner.rollback(RollbackTo::Steps(1)).await?,
        vec![v("0002")]
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "amount"]
    );
    let props = env.properties("sales", "orders").await?;
    assert_eq!(props.get("owner").map(String::as_str), Some("a"));
    assert_eq!(props.get("stage"), None);
    let rows = runner.history().await?;
    assert_eq!(
        rows.iter()
            .map(|r| (r.version.as_str(), r.status))
            .collect::<Vec<_>>(),
        vec![("0001", Status::Applied), ("0002", Status::RolledBack)]
    );
    // Fixed, it applies from the start.
    env.write("0002_evolve.toml", &partial("note", "amount"))?;
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "z", "note"]
    );
    Ok(())
}

/// Writes history for version 0009 as another runner would, the first time it is asked to
/// (from inside a synchronous trait method: the moment the runner has read history and not yet
/// written).
struct Meddler {
    version: String,
    history: ops_runner::MigrationHistory,
    done: std::sync::atomic::AtomicBool,
}

impl Meddler {
    fn new(env: &Env, version: &str) -> Self {
        Self {
            version: version.to_string(),
            history: ops_runner::MigrationHistory::new(&env.handle, "_iceberg_ops"),
            done: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn meddle(&self) {
        if self.done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let history = self.history.clone();
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async move {
                history
                    .record_applied("0009", "sales", "someone else", None)
                    .await
            })
        })
        .unwrap_or_else(|e| panic!("meddling failed: {e}"));
    }
}

#[async_trait]
impl Migration for Meddler {
    fn version(&self) -> &str {
        &self.version
    }

    fn description(&self) -> &str {
        "meddler"
    }

    fn checksum(&self) -> Option<String> {
        if self.version == "2" {
            self.meddle();
        }
        None
    }

    fn describe_downgrade(&self, _ctx: &MigrationContext) -> Result<Vec<String>, StepError> {
        self.meddle();
        Ok(vec!["nothing".into()])
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        if !ctx.catalog().namespace_exists(ctx.namespace()).await? {
            let _ = ctx
                .catalog()
                .create_namespace(ctx.namespace(), Default::default())
                .await;
        }
        Ok(())
    }

    async fn downgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_decides_and_checks_from_one_history_read() -> TestResult {
    let env = Env::new().await?;
    let runner = MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(Meddler::new(&env, "1")));
    assert_eq!(runner.migrate(None).await?, vec![v("0001")]);
    // Another runner records 0009 after this rollback read history.
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("another runner wrote");
    assert!(matches!(err, RunnerError::Concurrent(_)), "{err}");
    assert!(err.to_string().contains("0009"), "{err}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn stamp_rereads_history_after_each_record() -> TestResult {
    let env = Env::new().await?;
    let runner = MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(Meddler::new(&env, "1")))
        .register(Arc::new(Meddler::new(&env, "2")));
    let err = runner.stamp(None).await.expect_err("another runner wrote");
    assert!(matches!(err, RunnerError::Concurrent(_)), "{err}");
    assert!(err.to_string().contains("0009"), "{err}");
    Ok(())
}

/// Lets the first caller through; the others wait for `release`. Both wait at `barrier` first,
/// so both runners have read history before either writes.
struct FirstThrough {
    barrier: Arc<Barrier>,
    calls: std::sync::atomic::AtomicUsize,
    release: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl Migration for FirstThrough {
    fn version(&self) -> &str {
        "1"
    }

    fn description(&self) -> &str {
        "first through"
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> Result<(), StepError> {
        if !ctx.catalog().namespace_exists(ctx.namespace()).await? {
            let _ = ctx
                .catalog()
                .create_namespace(ctx.namespace(), Default::default())
                .await;
        }
        self.barrier.wait().await;
        if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            self.release.notified().await;
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn runner_clones_do_not_share_their_history_snapshot() -> TestResult {
    let env = Env::new().await?;
    let release = Arc::new(tokio::sync::Notify::new());
    let a = MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(None::<&Path>)
        .register(Arc::new(FirstThrough {
            barrier: Arc::new(Barrier::new(2)),
            calls: Default::default(),
            release: release.clone(),
        }));
    let b = a.clone();
    let mut ta = tokio::spawn(async move { a.migrate(None).await });
    let mut tb = tokio::spawn(async move { b.migrate(None).await });
    // The first runner finishes (records 0001); then the second records over a read that no
    // longer holds.
    let (first, second) = tokio::select! {
        r = &mut ta => (r?, { release.notify_one(); tb.await? }),
        r = &mut tb => (r?, { release.notify_one(); ta.await? }),
    };
    assert_eq!(first?, vec![v("0001")]);
    let err = second.expect_err("the second runner's read is stale");
    assert!(matches!(err, RunnerError::Concurrent(_)), "{err}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rolling_back_set_properties_restores_the_earlier_values() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", PARTIAL_CREATE)?;
    env.write(
        "0002_owner.toml",
        "[[upgrade]]\nop = \"set_properties\"\ntable = \"orders\"\nproperties = { owner = \"b\", extra = \"x\" }\n",
    )?;
    let runner = env.runner("sales");
    runner.migrate(None).await?;
    let props = env.properties("sales", "orders").await?;
    assert_eq!(props.get("owner").map(String::as_str), Some("b"));
    runner.rollback(RollbackTo::Steps(1)).await?;
    let props = env.properties("sales", "orders").await?;
    assert_eq!(props.get("owner").map(String::as_str), Some("a"));
    assert_eq!(props.get("extra"), None);
    Ok(())
}

/// The Python iceberg-ops: its history table (six large_string columns, unpartitioned) and its
/// way of writing a row.
pub(crate) const PYTHON_TOOL: &str = r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, StringType, LongType
from pyiceberg.expressions import And, EqualTo
SCHEMA = pa.schema([
    pa.field('version', pa.large_string(), nullable=False),
    pa.field('namespace', pa.large_string(), nullable=False),
    pa.field('description', pa.large_string()),
    pa.field('applied_at', pa.large_string(), nullable=False),
    pa.field('status', pa.large_string(), nullable=False),
    pa.field('error', pa.large_string()),
])
def history():
    try:
        return catalog.load_table('_iceberg_ops.migration_history')
    except Exception:
        catalog.create_namespace('_iceberg_ops')
        schema = Schema(
            NestedField(1, 'version', StringType(), required=True),
            NestedField(2, 'namespace', StringType(), required=True),
            NestedField(3, 'description', StringType(), required=False),
            NestedField(4, 'applied_at', StringType(), required=True),
            NestedField(5, 'status', StringType(), required=True),
            NestedField(6, 'error', StringType(), required=False),
        )
        return catalog.create_table('_iceberg_ops.migration_history', schema=schema)
def record(version, status, description):
    df = pa.Table.from_pylist([{'version': version, 'namespace': 'sales',
        'description': description, 'applied_at': '2024-01-01T00:00:00+00:00',
        'status': status, 'error': None}], schema=SCHEMA)
    history().overwrite(df, overwrite_filter=And(EqualTo('version', version), EqualTo('namespace', 'sales')))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn history_rows_of_the_python_tool_neither_show_as_missing_nor_block_rollback() -> TestResult
{
    let env = Env::new().await?;
    // The Python tool applied 0001 (a .py migration) and recorded it, without a checksum.
    pyiceberg(
        "mig",
        &env.props,
        &format!(
            "{PYTHON_TOOL}\ncatalog.create_namespace('sales')\n\
             catalog.create_table('sales.orders', schema=Schema(\
               NestedField(1, 'id', LongType(), required=True), NestedField(2, 'amount', LongType())))\n\
             record('0001', 'applied', 'create orders')\nemit(True)"
        ),
    )?;
    env.write("0001_create_orders.py", "def upgrade(catalog, ns): ...\n")?;
    env.write(
        "0002_add_note.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"note\"\ntype = \"string\"\n",
    )?;
    env.write(
        "0003_owner.toml",
        "[[upgrade]]\nop = \"set_properties\"\ntable = \"orders\"\nproperties = { owner = \"sales\" }\n",
    )?;
    let runner = env.runner("sales");
    let status = runner.status().await?;
    assert_eq!(status[0].state, State::Applied);
    assert!(!status[0].file_missing, "{}", status[0]);
    assert!(
        status[0].to_string().contains("0001_create_orders.py"),
        "{}",
        status[0]
    );
    assert_eq!(runner.migrate(None).await?, vec![v("0002"), v("0003")]);
    assert!(runner.validate().await?.is_empty());

    // A row without a checksum (the Python tool writes none) for a version that has a file
    // does not block its rollback.
    runner
        .history_store()
        .record_applied("0002", "sales", "add note", None)
        .await?;
    assert_eq!(
        runner.rollback(RollbackTo::Steps(2)).await?,
        vec![v("0003"), v("0002")]
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "amount"]
    );
    // 0001 is the Python tool's to undo.
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("a Python migration");
    assert!(err.to_string().contains("0001_create_orders.py"), "{err}");

    // The Python tool still writes and reads the table after iceberg-ops wrote to it.
    let out = pyiceberg(
        "mig",
        &env.props,
        &format!(
            "{PYTHON_TOOL}\nrecord('0001', 'applied', 'create orders again')\n\
             emit(sorted([[r['version'], r['status'], r['description']] for r in rows(history())]))"
        ),
    )?;
    assert_eq!(
        out,
        serde_json::json!([
            ["0001", "applied", "create orders again"],
            ["0002", "rolled_back", "add note"],
            ["0003", "rolled_back", "owner"]
        ])
    );
    let rows = runner.history().await?;
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].description.as_deref(), Some("create orders again"));
    Ok(())
}
