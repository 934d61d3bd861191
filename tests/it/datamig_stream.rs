//! `MigrationPlan::commit_stream`: outputs committed as they arrive, in task order (what the
//! Ballista runner feeds it), stopping at the first task without an output and resumable.

use std::collections::BTreeMap;

use iceberg::TableIdent;
use ops_core::CatalogHandle;
use ops_datamig::{DataMigrator, MIGRATION_BATCH_PROPERTY, MigrationError, TaskOutput};

use crate::common::*;

fn sqlite(dir: &std::path::Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

/// src.orders in six appends of 10 rows (many small files), and the rows.
async fn source(
    handle: &CatalogHandle,
) -> anyhow::Result<Vec<(i64, Option<&'static str>, Option<i32>)>> {
    let mut table = create_orders(handle, "src").await?;
    let mut all = Vec::new();
    for chunk in 0..6i64 {
        let part: Vec<_> = (0..10i64)
            .map(|i| {
                let id = chunk * 10 + i;
                (
                    id,
                    Some(["us", "eu", "apac"][(id % 3) as usize]),
                    Some(id as i32),
                )
            })
            .collect();
        let batch = orders_batch(&table, &part)?;
        table = ops_core::append::append(
            handle,
            &table,
            futures::stream::iter([Ok(batch)]),
            Default::default(),
        )
        .await?
        .0;
        all.extend(part);
    }
    Ok(all)
}

fn committed_batches(desc: &serde_json::Value) -> Vec<u64> {
    desc["snapshots"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| {
                    s["summary"][MIGRATION_BATCH_PROPERTY]
                        .as_str()?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn outputs_commit_in_order_as_they_arrive_and_a_gap_stops_then_resumes() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("lake", &p).await?;
    let rows = source(&handle).await?;
    let plan = DataMigrator::new(
        &handle,
        TableIdent::from_strs(["src", "orders"])?,
        &handle,
        TableIdent::from_strs(["dst", "orders"])?,
    )
    .create_dest(true)
    .batch_rows(12)
    .plan()
    .await?;
    assert!(plan.tasks.len() >= 3, "{} tasks", plan.tasks.len());
    let mut outputs: Vec<TaskOutput> = Vec::new();
    for t in &plan.tasks {
        outputs.push(plan.execute_task(&handle, &handle, t.id).await?);
    }
    let checkpoint = dir.path().join("commit.json");

    // Out of order: refused before anything is committed.
    let swapped = vec![Ok(outputs[1].clone()), Ok(outputs[0].clone())];
    let err = plan
        .commit_stream(&handle, &handle, futures::stream::iter(swapped), None)
        .await
        .expect_err("outputs out of task order");
    assert!(err.to_string().contains("task order"), "{err}");
    let (_, desc) = pyiceberg_orders("lake", &p, "dst")?;
    assert!(committed_batches(&desc).is_empty());

    // A stream that ends early is an error, not a silent partial commit: task 0's batches
    // land, and the error says the rest is missing.
    let short = vec![Ok(outputs[0].clone())];
    let err = plan
        .commit_stream(&handle, &handle, futures::stream::iter(short), None)
        .await
        .expect_err("a stream missing tasks");
    assert!(err.to_string().contains("ended after 1 of"), "{err}");

    // Tasks 0 and 1 land, then the source of outputs fails: their batches stay committed and
    // checkpointed, the error names task 2's first batch.
    let gap = vec![
        Ok(outputs[0].clone()),
        Ok(outputs[1].clone()),
        Err(MigrationError::InvalidInput(
            "the cluster job failed".into(),
        )),
    ];
    let err = plan
        .commit_stream(
            &handle,
            &handle,
            futures::stream::iter(gap),
            Some(checkpoint.clone()),
        )
        .await
        .expect_err("a failed stream");
    let first_of_2 = plan.tasks[2].first_batch;
    match &err {
        MigrationError::Batch { batch, source, .. } => {
            assert_eq!(*batch, first_of_2, "{err}");
            assert!(source.to_string().contains("cluster job failed"), "{err}");
        }
        other => panic!("expected a batch error, got {other}"),
    }
    let (_, desc) = pyiceberg_orders("lake", &p, "dst")?;
    assert_eq!(
        committed_batches(&desc),
        (0..first_of_2).collect::<Vec<_>>()
    );

    // The same stream, complete, with the checkpoint: the rest is committed, nothing twice.
    let all = outputs.iter().cloned().map(Ok).collect::<Vec<_>>();
    let result = plan
        .commit_stream(
            &handle,
            &handle,
            futures::stream::iter(all),
            Some(checkpoint),
        )
        .await?;
    assert_eq!(result.batches_skipped, first_of_2);
    let (got, desc) = pyiceberg_orders("lake", &p, "dst")?;
    let last = plan.tasks.last().map_or(0, |t| t.batches().end);
    assert_eq!(committed_batches(&desc), (0..last).collect::<Vec<_>>());
    let mut want = orders_json(&rows);
    sort_rows(&mut want);
    assert_eq!(got, want);

    // The job is complete: a stream of it again, even a short one, commits nothing.
    let short = vec![Ok(outputs[0].clone())];
    let err = plan
        .commit_stream(&handle, &handle, futures::stream::iter(short), None)
        .await
        .expect_err("a completed job");
    assert!(
        matches!(err, MigrationError::AlreadyComplete { .. }),
        "{err}"
    );
    let (again, _) = pyiceberg_orders("lake", &p, "dst")?;
    assert_eq!(again, got);
    Ok(())
}
