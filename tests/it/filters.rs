//! Row-filter strings select the same rows here as in PyIceberg.

use futures::TryStreamExt;
use serde_json::json;

use crate::common::*;

/// Filters in PyIceberg's grammar, over SAMPLE (ids 1–5; region us, eu, us, apac, null;
/// amount 10, 20, null, 40, 50).
const FILTERS: &[&str] = &[
    "region = 'us'",
    "'us' = region",
    "amount > 15",
    "15 < amount",
    "amount BETWEEN 10 AND 40",
    "region IN ('eu', 'apac')",
    "region NOT IN ('eu')",
    "region IS NULL",
    "amount IS NOT NULL",
    "region LIKE 'u%'",
    "region NOT LIKE 'u%'",
    "region LIKE 'eu'",
    "NOT (region = 'us' OR amount IS NULL)",
    "id >= 2 AND id <= 4 OR region IS NULL",
    "\"id\" != 3",
    "true",
    "false",
];

#[tokio::test(flavor = "multi_thread")]
async fn filters_select_the_rows_pyiceberg_selects() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = props(&[
        ("type", "sql"),
        (
            "uri",
            &format!("sqlite:///{}/catalog.db", dir.path().display()),
        ),
        ("warehouse", &format!("file://{}/wh", dir.path().display())),
    ]);
    let handle = open("filters", &p).await?;
    let table = write_and_read_back(&handle, "flt").await?;

    let mut ours = serde_json::Map::new();
    for text in FILTERS {
        let predicate = ops_core::filter::parse_filter(text, table.metadata().current_schema())?;
        let batches: Vec<arrow_array::RecordBatch> =
            ops_core::scan::scan_filtered(&table, None, Some(predicate))
                .await?
                .try_collect()
                .await?;
        let mut ids: Vec<i64> = Vec::new();
        for b in &batches {
            let col = b
                .column_by_name("id")
                .ok_or_else(|| anyhow::anyhow!("no id column"))?;
            let col = col
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .ok_or_else(|| anyhow::anyhow!("id is not long"))?;
            ids.extend(col.values().iter().copied());
        }
        ids.sort_unstable();
        ours.insert(text.to_string(), json!(ids));
    }

    let code = format!(
        "t = catalog.load_table('flt.orders')\n\
         out = {{}}\n\
         for f in {filters}:\n    \
             out[f] = sorted(r['id'] for r in t.scan(row_filter=f).to_arrow().to_pylist())\n\
         emit(out)",
        filters = serde_json::to_string(FILTERS)?
    );
    let theirs = ops_tests::oracle::pyiceberg("filters", &p, &code)?;
    for text in FILTERS {
        assert_eq!(
            ours.get(*text),
            theirs.get(*text),
            "filter {text:?}: ours (left) vs PyIceberg (right)"
        );
    }
    Ok(())
}
