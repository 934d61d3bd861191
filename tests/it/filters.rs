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

fn sqlite(dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}/wh", dir.display())),
    ])
}

/// For each filter (columns named as the table has them now), the sorted ids
/// `scan_filtered` keeps.
async fn scanned_ids(
    table: &iceberg::table::Table,
    filters: &[&str],
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut out = serde_json::Map::new();
    for text in filters {
        let predicate = ops_core::filter::parse_filter(text, table.metadata().current_schema())?;
        let batches: Vec<arrow_array::RecordBatch> =
            ops_core::scan::scan_filtered(table, None, Some(predicate))
                .await?
                .try_collect()
                .await?;
        let mut ids: Vec<i64> = Vec::new();
        for b in &batches {
            let col = b
                .column_by_name("id")
                .and_then(|c| c.as_any().downcast_ref::<arrow_array::Int64Array>())
                .ok_or_else(|| anyhow::anyhow!("no long id column"))?;
            ids.extend(col.values().iter().copied());
        }
        ids.sort_unstable();
        out.insert(text.to_string(), json!(ids));
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_select_the_rows_pyiceberg_selects() -> TestResult {
    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("filters", &p).await?;
    let table = write_and_read_back(&handle, "flt").await?;
    let ours = scanned_ids(&table, FILTERS).await?;

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

/// After a rename with no data commit since (a rename makes no snapshot, so the current
/// snapshot's schema still has the old names), a filter naming columns as the table has them
/// now selects what PyIceberg's scan selects — in `scan_filtered` (ops-core's planning, which
/// binds to the snapshot's schema) and in `table delete` given a predicate (its twin deleted
/// by PyIceberg). Once "field not found" in both.
#[tokio::test(flavor = "multi_thread")]
async fn a_filter_naming_renamed_columns_at_the_head_matches_pyiceberg() -> TestResult {
    use iceberg::expr::Reference;
    use iceberg::spec::Datum;
    use ops_core::ops::delete::DeleteBuilder;
    use ops_core::ops::evolve_schema::EvolveSchemaBuilder;

    init_tracing();
    let dir = tempfile::tempdir()?;
    let p = sqlite(dir.path());
    let handle = open("filters", &p).await?;
    for ns in ["ours", "twin"] {
        let table = write_and_read_back(&handle, ns).await?;
        EvolveSchemaBuilder::new(&handle, table.identifier().clone())
            .rename_column("region", "area")
            .rename_column("amount", "total")
            .await?;
    }
    let table = handle
        .catalog()
        .load_table(&iceberg::TableIdent::from_strs(["ours", "orders"])?)
        .await?;
    const RENAMED: &[&str] = &[
        "area = 'us'",
        "total > 15",
        "area IN ('eu', 'apac') OR total IS NULL",
        "NOT (area = 'us') AND total < 45",
    ];
    let ours = scanned_ids(&table, RENAMED).await?;
    // The library's predicate API, as a user builds it from the names they see.
    DeleteBuilder::new(&handle, table.identifier().clone())
        .with_filter(
            Reference::new("area")
                .equal_to(Datum::string("us"))
                .or(Reference::new("total").greater_than(Datum::int(35))),
        )
        .await?;
    let code = format!(
        "twin = catalog.load_table('twin.orders')\n\
         out = {{}}\n\
         for f in {filters}:\n    \
             out[f] = sorted(r['id'] for r in twin.scan(row_filter=f).to_arrow().to_pylist())\n\
         twin.delete(\"area = 'us' OR total > 35\")\n\
         out['deleted'] = {{'ours': rows(catalog.load_table('ours.orders')), 'twin': rows(catalog.load_table('twin.orders'))}}\n\
         emit(out)",
        filters = serde_json::to_string(RENAMED)?
    );
    let theirs = ops_tests::oracle::pyiceberg("filters", &p, &code)?;
    // PyIceberg scanned the twin (the same rows, renamed the same way) before its delete.
    for text in RENAMED {
        assert_eq!(
            ours.get(*text),
            theirs.get(*text),
            "filter {text:?}: ours (left) vs PyIceberg (right)"
        );
    }
    assert_eq!(theirs["deleted"]["ours"], theirs["deleted"]["twin"]);
    assert_eq!(
        theirs["deleted"]["ours"].as_array().map(Vec::len),
        Some(1),
        "{theirs}"
    );
    Ok(())
}
