//! ops-runner's recovery commands and rollback options: `rollback --force` and
//! `--allow-destructive`, Flyway's `repair` and `baseline`, pending Python migrations.

use ops_runner::{RollbackOptions, RollbackTo, RunnerError, State, Status, ValidationIssue};
use ops_tests::oracle::pyiceberg;

use crate::common::*;
use crate::runner::{Env, PARTIAL_CREATE, PYTHON_TOOL, create_file, names, partial, v};

async fn force_and_allow_destructive(env: Env) -> TestResult {
    env.write("0001_create_orders.toml", &create_file("orders"))?;
    env.write("0002_create_orders_v2.toml", &create_file("orders_v2"))?;
    let runner = env.runner("sales");
    runner.migrate(None).await?;
    env.append_ids("sales", "orders", &[1, 2, 3]).await?;
    env.append_ids("sales", "orders_v2", &[9]).await?;

    // The file as applied: its derived downgrade drops orders_v2, which holds a row.
    let allow = RollbackOptions {
        allow_destructive: true,
        ..Default::default()
    };
    let err = runner
        .plan_rollback(RollbackTo::Steps(1))
        .await
        .expect_err("orders_v2 holds a row");
    assert!(
        matches!(&err, RunnerError::DestructiveRollback { table, rows: 1, .. } if table == "sales.orders_v2"),
        "{err}"
    );
    let plan = runner
        .plan_rollback_with(RollbackTo::Steps(1), allow)
        .await?;
    assert_eq!(
        plan[0].changes,
        vec!["drop table sales.orders_v2 (its data is no longer listed)"]
    );

    // Edited to create `orders`: --force runs today's file, whose derived downgrade would drop
    // 0001's table with its rows: that still needs --allow-destructive.
    env.write("0002_create_orders_v2.toml", &create_file("orders"))?;
    let force = RollbackOptions {
        force: true,
        ..Default::default()
    };
    let err = runner
        .rollback_with(RollbackTo::Steps(1), force)
        .await
        .expect_err("orders holds rows");
    assert!(
        matches!(&err, RunnerError::DestructiveRollback { table, rows: 3, .. } if table == "sales.orders"),
        "{err}"
    );
    assert!(env.exists("sales", "orders").await?);

    // Restored, --allow-destructive drops orders_v2 and only it.
    env.write("0002_create_orders_v2.toml", &create_file("orders_v2"))?;
    assert_eq!(
        runner.rollback_with(RollbackTo::Steps(1), allow).await?,
        vec![v("0002")]
    );
    assert!(!env.exists("sales", "orders_v2").await?);
    let out = pyiceberg(
        "mig",
        &env.props,
        "emit([len(catalog.load_table('sales.orders').scan().to_arrow()), \
               catalog.table_exists('sales.orders_v2')])",
    )?;
    assert_eq!(out, serde_json::json!([3, false]));

    // --force with both: today's file is what runs.
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    env.write("0002_create_orders_v2.toml", &create_file("orders"))?;
    let both = RollbackOptions {
        force: true,
        allow_destructive: true,
    };
    assert_eq!(
        runner.rollback_with(RollbackTo::Steps(1), both).await?,
        vec![v("0002")]
    );
    assert!(!env.exists("sales", "orders").await?);
    assert!(env.exists("sales", "orders_v2").await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_force_runs_todays_file_and_allow_destructive_drops_tables_with_rows() -> TestResult
{
    force_and_allow_destructive(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_force_runs_todays_file_and_allow_destructive_drops_tables_with_rows_on_rest()
-> TestResult {
    force_and_allow_destructive(Env::rest().await?).await
}

async fn repair(env: Env) -> TestResult {
    env.write("0001_create_orders.toml", PARTIAL_CREATE)?;
    env.write("0002_evolve.toml", &partial("note", "nope"))?;
    let runner = env.runner("sales");
    runner.migrate(None).await.expect_err("0002 fails");
    let applied_at = runner.history().await?[0].applied_at.clone();

    // Edited after it was applied: validate reports it and the failure.
    env.write(
        "0001_create_orders.toml",
        &format!("{PARTIAL_CREATE}\n# reviewed\n"),
    )?;
    let issues = runner.validate().await?;
    assert!(
        matches!(&issues[..], [
            ValidationIssue::Changed { version: a, .. },
            ValidationIssue::Failed { version: b, operations_landed: 2, .. },
        ] if a == "0001" && b == "0002"),
        "{issues:?}"
    );
    assert!(
        issues[1].to_string().contains("2 operation(s) landed"),
        "{}",
        issues[1]
    );

    let report = runner.repair().await?;
    assert_eq!(report.cleared.len(), 1);
    assert_eq!(report.cleared[0].version, "0002");
    assert_eq!(report.cleared[0].operations_landed, 2);
    assert_eq!(report.realigned.len(), 1);
    assert_eq!(report.realigned[0].version, "0001");
    assert_eq!(
        report.realigned[0].current,
        ops_runner::file::checksum(format!("{PARTIAL_CREATE}\n# reviewed\n").as_bytes())
    );
    assert!(runner.validate().await?.is_empty());
    let rows = runner.history().await?;
    assert_eq!(rows.len(), 1, "the failed row is gone");
    assert_eq!(
        rows[0].applied_at, applied_at,
        "repair keeps when it was applied"
    );
    let status = runner.status().await?;
    assert_eq!(status[1].state, State::Pending);
    // Nothing left to repair.
    let again = runner.repair().await?;
    assert!(again.cleared.is_empty() && again.realigned.is_empty());

    // The operations the failed attempt landed stayed; the cleared version runs from its
    // first operation, so undo them (here: write the migration without them).
    env.write(
        "0002_evolve.toml",
        "[[upgrade]]\nop = \"rename_column\"\ntable = \"orders\"\ncolumn = \"amount\"\nto = \"z\"\n",
    )?;
    assert_eq!(runner.migrate(None).await?, vec![v("0002")]);
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "z", "note"]
    );

    // A row without a checksum (the Python tool writes none) gets today's.
    runner
        .history_store()
        .record_applied("0002", "sales", "evolve", None)
        .await?;
    let report = runner.repair().await?;
    assert_eq!(report.realigned.len(), 1);
    assert_eq!(report.realigned[0].recorded, None);
    assert!(
        runner.history().await?[1].checksum.is_some(),
        "the checksum is recorded"
    );

    let out = pyiceberg(
        "mig",
        &env.props,
        "emit([[r['version'], r['status']] for r in rows(catalog.load_table('_iceberg_ops.migration_history'))])",
    )?;
    assert_eq!(
        out,
        serde_json::json!([["0001", "applied"], ["0002", "applied"]])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn repair_clears_failed_attempts_and_realigns_checksums() -> TestResult {
    repair(Env::new().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn repair_clears_failed_attempts_and_realigns_checksums_on_rest() -> TestResult {
    repair(Env::rest().await?).await
}

#[tokio::test(flavor = "multi_thread")]
async fn baseline_adopts_existing_tables() -> TestResult {
    let env = Env::new().await?;
    // The tables exist already (created out of band): 0001 and 0002 describe them.
    create_orders(&env.handle, "sales").await?;
    env.write(
        "0001_create_orders.toml",
        "[[upgrade]]\nop = \"create_table\"\ntable = \"orders\"\ncolumns = [{ name = \"id\", type = \"long\", required = true }]\n",
    )?;
    env.write(
        "0002_add_region.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"region\"\ntype = \"string\"\n",
    )?;
    env.write(
        "0003_add_note.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"note\"\ntype = \"string\"\n",
    )?;
    let runner = env.runner("sales");
    assert!(runner.baseline(Some("2".into()), None).await?);
    assert!(
        !runner.baseline(Some("2".into()), None).await?,
        "the same baseline again is a no-op"
    );
    let err = runner
        .baseline(Some("3".into()), None)
        .await
        .expect_err("history has a row");
    assert!(err.to_string().contains("already has rows"), "{err}");

    let status = runner.status().await?;
    assert_eq!(
        status.iter().map(|e| e.state).collect::<Vec<_>>(),
        vec![State::BelowBaseline, State::Baseline, State::Pending]
    );
    assert!(
        status[1].to_string().starts_with("[baseline]"),
        "{}",
        status[1]
    );
    assert_eq!(runner.plan(None).await?.len(), 1);
    assert_eq!(runner.migrate(None).await?, vec![v("0003")]);
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "region", "amount", "note"]
    );
    assert!(runner.validate().await?.is_empty());
    assert!(
        runner.stamp(None).await?.is_empty(),
        "nothing below the baseline is stamped"
    );

    // Nothing at or below the baseline rolls back.
    for to in [
        RollbackTo::Steps(2),
        RollbackTo::Target("0".into()),
        RollbackTo::Target("1".into()),
    ] {
        let err = runner.rollback(to).await.expect_err("below the baseline");
        assert!(err.to_string().contains("baseline 0002"), "{err}");
    }
    assert_eq!(
        runner.rollback(RollbackTo::Target("2".into())).await?,
        vec![v("0003")]
    );

    let out = pyiceberg(
        "mig",
        &env.props,
        "emit([[r['version'], r['status'], r['description']] for r in rows(catalog.load_table('_iceberg_ops.migration_history'))])",
    )?;
    assert_eq!(
        out,
        serde_json::json!([
            ["0002", "applied", "<< iceberg-ops baseline >>"],
            ["0003", "rolled_back", "add note"]
        ])
    );
    let rows = runner.history().await?;
    assert!(rows[0].is_baseline() && rows[0].status == Status::Applied);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn migrate_does_not_run_past_a_pending_python_migration() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", &create_file("orders"))?;
    env.write("0002_backfill.py", "def upgrade(catalog, ns): ...\n")?;
    env.write(
        "0003_add_note.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"note\"\ntype = \"string\"\n",
    )?;
    let runner = env.runner("sales");
    let err = runner.migrate(None).await.expect_err("0002 is Python's");
    assert!(
        matches!(&err, RunnerError::PythonMigration { version, .. } if version == "0002"),
        "{err}"
    );
    assert!(err.to_string().contains("0002_backfill.py"), "{err}");
    assert!(runner.history().await?.is_empty(), "nothing ran");
    // Up to 0001 is fine; so is everything once the Python tool has applied 0002.
    assert_eq!(runner.migrate(Some("1".into())).await?, vec![v("0001")]);
    pyiceberg(
        "mig",
        &env.props,
        &format!("{PYTHON_TOOL}\nrecord('0002', 'applied', 'backfill')\nemit(True)"),
    )?;
    assert_eq!(runner.migrate(None).await?, vec![v("0003")]);
    let status = runner.status().await?;
    assert_eq!(status[1].state, State::Applied);
    assert_eq!(status[1].python_file.as_deref(), Some("0002_backfill.py"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_derived_drop_column_of_a_column_holding_values_needs_consent() -> TestResult {
    let env = Env::new().await?;
    env.write("0001_create_orders.toml", &create_file("orders"))?;
    env.write(
        "0002_add_note.toml",
        "[[upgrade]]\nop = \"add_column\"\ntable = \"orders\"\ncolumn = \"note\"\ntype = \"string\"\n",
    )?;
    let runner = env.runner("sales");
    runner.migrate(None).await?;
    // Rows before the column existed and rows with NULL notes: nothing would be lost.
    env.append_ids("sales", "orders", &[1, 2]).await?;
    assert_eq!(runner.plan_rollback(RollbackTo::Steps(1)).await?.len(), 1);
    // PyIceberg writes a note.
    pyiceberg(
        "mig",
        &env.props,
        "t = catalog.load_table('sales.orders')\n\
         t.append(pa.Table.from_pylist([{'id': 3, 'v': None, 'note': 'x'}], schema=t.schema().as_arrow()))\n\
         emit(True)",
    )?;
    let err = runner
        .rollback(RollbackTo::Steps(1))
        .await
        .expect_err("note holds a value");
    assert!(
        matches!(&err, RunnerError::DestructiveColumnRollback { column, values: Some(1), .. } if column == "note"),
        "{err}"
    );
    assert!(err.to_string().contains("--allow-destructive"), "{err}");
    let allow = RollbackOptions {
        allow_destructive: true,
        ..Default::default()
    };
    assert_eq!(
        runner.rollback_with(RollbackTo::Steps(1), allow).await?,
        vec![v("0002")]
    );
    assert_eq!(
        names(&env.columns("sales", "orders").await?),
        vec!["id", "v"]
    );
    Ok(())
}
