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

struct Env {
    props: BTreeMap<String, String>,
    handle: CatalogHandle,
    db: SqlCatalog,
}

impl Env {
    /// On the SQLite catalog.
    async fn new() -> anyhow::Result<Self> {
        Self::on(SqlCatalog::sqlite()?).await
    }

    async fn on(db: SqlCatalog) -> anyhow::Result<Self> {
        let props = db.props.clone();
        let handle = open("mig", &props).await?;
        std::fs::create_dir_all(db.dir.path().join("migrations"))?;
        Ok(Self { props, handle, db })
    }

    fn migrations(&self) -> std::path::PathBuf {
        self.db.dir.path().join("migrations")
    }

    fn write(&self, name: &str, text: &str) -> anyhow::Result<()> {
        let path = self.migrations().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
        Ok(())
    }

    fn runner(&self, ns: &str) -> MigrationRunner {
        MigrationRunner::new(&self.handle, ns).migrations_dir(Some(self.migrations()))
    }

    async fn meta_exists(&self) -> anyhow::Result<bool> {
        Ok(self
            .handle
            .catalog()
            .namespace_exists(&NamespaceIdent::new("_iceberg_ops".into()))
            .await?)
    }

    async fn history_snapshot(&self) -> anyhow::Result<Option<i64>> {
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

    async fn columns(&self, ns: &str, table: &str) -> anyhow::Result<Vec<(String, String)>> {
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

fn names(cols: &[(String, String)]) -> Vec<&str> {
    cols.iter().map(|(n, _)| n.as_str()).collect()
}

fn states(entries: &[ops_runner::StatusEntry]) -> Vec<(String, State)> {
    entries
        .iter()
        .map(|e| (e.version.clone(), e.state))
        .collect()
}

fn v(s: &str) -> String {
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
    let schema: Vec<Value> = out["schema"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        schema,
        serde_json::from_str::<Vec<Value>>(
            r#"[["version","string",true],["namespace","string",true],["description","string",false],
                ["applied_at","string",true],["status","string",true],["error","string",false],
                ["checksum","string",false]]"#
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
    let runner = MigrationRunner::new(&env.handle, "sales")
        .migrations_dir(Some(env.db.dir.path().join("nowhere")));
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
            "drop_column",
            "remove_partition_field",
            "add_partition_field",
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
