//! `iceberg-ops table ...`: inspect a table and undo a bad change.

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use iceberg::TableIdent;
use iceberg::spec::{NestedField, Type};
use iceberg::table::Table;
use ops_core::CatalogFactory;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::rollback::RollbackBuilder;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Target {
    /// Table as NAMESPACE.TABLE (nested namespaces: a.b.TABLE).
    table: String,
    /// Catalog holding it.
    #[arg(long, default_value = ops_core::catalog::EMBEDDED_DEFAULT)]
    catalog: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List snapshots: id, parent, sequence number, time, operation and summary; `*` marks main.
    Snapshots {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Show the current schema with field ids, and the partition spec.
    Schema {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Delete the rows where a filter is TRUE (copy-on-write, one commit). Rows where it is
    /// NULL are kept, as in SQL.
    Delete {
        #[command(flatten)]
        target: Target,
        /// The rows to delete, e.g. "region = 'eu' AND qty > 5".
        #[arg(long = "where", value_name = "EXPR")]
        filter: String,
        /// Plan and print what would be deleted, without writing anything.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Move main back to an ancestor snapshot (one commit; nothing is deleted).
    Rollback {
        #[command(flatten)]
        target: Target,
        /// The snapshot to return to; must be an ancestor of the current one.
        #[arg(long = "to", value_name = "SNAPSHOT_ID")]
        to: i64,
    },
}

pub fn parse_ident(s: &str) -> anyhow::Result<TableIdent> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        bail!("'{s}' is not NAMESPACE.TABLE (e.g. sales.orders)");
    }
    Ok(TableIdent::from_strs(parts)?)
}

async fn load(
    factory: &CatalogFactory,
    target: &Target,
) -> anyhow::Result<(ops_core::CatalogHandle, Table)> {
    let ident = parse_ident(&target.table)?;
    let handle = factory.open(&target.catalog).await?;
    let table = handle.catalog().load_table(&ident).await.with_context(|| {
        format!(
            "cannot load {} from catalog '{}'",
            target.table, target.catalog
        )
    })?;
    Ok((handle, table))
}

pub async fn run(factory: &CatalogFactory, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Snapshots { target, output } => {
            let (_, table) = load(factory, &target).await?;
            show(&snapshots_json(&table), output, print_snapshots)?;
        }
        Command::Schema { target, output } => {
            let (_, table) = load(factory, &target).await?;
            show(&schema_json(&table), output, print_schema)?;
        }
        Command::Delete {
            target,
            filter,
            dry_run,
            output,
        } => {
            let (handle, table) = load(factory, &target).await?;
            let builder = DeleteBuilder::new(&handle, table.identifier().clone())
                .with_filter_text(filter.clone());
            let (snapshot, preview) = if dry_run {
                (None, builder.dry_run().await?)
            } else {
                let (_, m, preview) = builder.execute_with_report().await?;
                ((m.snapshot_id != 0).then_some(m.snapshot_id), preview)
            };
            let value = json!({
                "table": target.table,
                "filter": filter,
                "dry_run": dry_run,
                "snapshot_id": snapshot,
                "deleted_rows": preview.deleted_rows,
                "dropped_files": preview.dropped_files,
                "rewritten_files": preview.rewritten_files,
            });
            show(&value, output, print_delete)?;
        }
        Command::Rollback { target, to } => {
            let (handle, table) = load(factory, &target).await?;
            let (_, m) =
                RollbackBuilder::to_snapshot(&handle, table.identifier().clone(), to).await?;
            match m.from {
                Some(from) if from == to => println!("{}: main is already at {to}", target.table),
                from => println!(
                    "{}: main moved from {} to {to}",
                    target.table,
                    from.map_or("(none)".to_string(), |f| f.to_string())
                ),
            }
        }
    }
    Ok(())
}

fn print_delete(v: &Value) {
    let verb = if v["dry_run"] == json!(true) {
        "would delete"
    } else {
        "deleted"
    };
    println!(
        "{}: {verb} {} row(s) where {}",
        v["table"].as_str().unwrap_or_default(),
        v["deleted_rows"],
        v["filter"].as_str().unwrap_or_default()
    );
    for (label, key) in [
        ("dropped", "dropped_files"),
        ("rewritten", "rewritten_files"),
    ] {
        for f in v[key].as_array().into_iter().flatten() {
            println!("  {label:<9} {}", f.as_str().unwrap_or_default());
        }
    }
    match v["snapshot_id"].as_i64() {
        Some(id) => println!("  snapshot {id}"),
        None if v["dry_run"] == json!(true) => println!("  (dry run: nothing written)"),
        None => println!("  nothing matched: no commit"),
    }
}

/// Prints `value` as pretty JSON, or as text through `text`.
fn show(value: &Value, output: Output, text: fn(&Value)) -> anyhow::Result<()> {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value)?),
        Output::Text => text(value),
    }
    Ok(())
}

fn snapshots_json(table: &Table) -> Value {
    let md = table.metadata();
    let current = md.current_snapshot_id();
    let mut snaps: Vec<_> = md.snapshots().collect();
    snaps.sort_by_key(|s| (s.sequence_number(), s.timestamp_ms()));
    Value::Array(
        snaps
            .iter()
            .map(|s| {
                let summary: serde_json::Map<String, Value> = s
                    .summary()
                    .additional_properties
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                json!({
                    "snapshot_id": s.snapshot_id(),
                    "parent_id": s.parent_snapshot_id(),
                    "sequence_number": s.sequence_number(),
                    "timestamp_ms": s.timestamp_ms(),
                    "timestamp": s.timestamp().map(|t| t.to_rfc3339()).unwrap_or_default(),
                    "operation": s.summary().operation.as_str(),
                    "current": Some(s.snapshot_id()) == current,
                    "summary": summary,
                })
            })
            .collect(),
    )
}

fn print_snapshots(snapshots: &Value) {
    let list = snapshots.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        println!("no snapshots");
        return;
    }
    for s in list {
        let mark = if s["current"] == json!(true) {
            "*"
        } else {
            " "
        };
        println!(
            "{mark} {}  parent {}  seq {}  {}  {}",
            s["snapshot_id"],
            s["parent_id"],
            s["sequence_number"],
            s["timestamp"].as_str().unwrap_or_default(),
            s["operation"].as_str().unwrap_or_default()
        );
        if let Some(summary) = s["summary"].as_object() {
            let mut keys: Vec<&String> = summary.keys().collect();
            keys.sort();
            let line: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", summary[*k].as_str().unwrap_or_default()))
                .collect();
            println!("      {}", line.join(" "));
        }
    }
}

fn field_json(f: &NestedField) -> Value {
    let children: Vec<Value> = match f.field_type.as_ref() {
        Type::Struct(s) => s.fields().iter().map(|c| field_json(c)).collect(),
        Type::List(l) => vec![field_json(&l.element_field)],
        Type::Map(m) => vec![field_json(&m.key_field), field_json(&m.value_field)],
        Type::Primitive(_) => Vec::new(),
    };
    let mut v = json!({
        "id": f.id,
        "name": f.name,
        "type": f.field_type.to_string(),
        "required": f.required,
    });
    if let Some(doc) = &f.doc {
        v["doc"] = json!(doc);
    }
    if !children.is_empty() {
        v["fields"] = Value::Array(children);
    }
    v
}

fn schema_json(table: &Table) -> Value {
    let md = table.metadata();
    let schema = md.current_schema();
    let spec = md.default_partition_spec();
    json!({
        "schema_id": schema.schema_id(),
        "identifier_field_ids": schema.identifier_field_ids().collect::<Vec<_>>(),
        "fields": schema.as_struct().fields().iter().map(|f| field_json(f)).collect::<Vec<_>>(),
        "partition_spec": {
            "spec_id": spec.spec_id(),
            "fields": spec.fields().iter().map(|f| json!({
                "field_id": f.field_id,
                "source_id": f.source_id,
                "name": f.name,
                "transform": f.transform.to_string(),
            })).collect::<Vec<_>>(),
        },
    })
}

fn print_fields(fields: &[Value], depth: usize) {
    for f in fields {
        let required = if f["required"] == json!(true) {
            " required"
        } else {
            ""
        };
        let doc = f["doc"]
            .as_str()
            .map(|d| format!("  -- {d}"))
            .unwrap_or_default();
        println!(
            "{:indent$}{:>4}  {}: {}{required}{doc}",
            "",
            f["id"].as_i64().unwrap_or_default(),
            f["name"].as_str().unwrap_or_default(),
            f["type"].as_str().unwrap_or_default(),
            indent = depth * 2
        );
        if let Some(children) = f["fields"].as_array() {
            print_fields(children, depth + 1);
        }
    }
}

fn print_schema(schema: &Value) {
    println!("schema {} (field id, name: type)", schema["schema_id"]);
    print_fields(
        schema["fields"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        1,
    );
    let ids = schema["identifier_field_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !ids.is_empty() {
        println!("identifier fields: {}", Value::Array(ids));
    }
    let spec = &schema["partition_spec"];
    let fields = spec["fields"].as_array().cloned().unwrap_or_default();
    if fields.is_empty() {
        println!("partition spec {}: unpartitioned", spec["spec_id"]);
    } else {
        println!("partition spec {}:", spec["spec_id"]);
        for f in fields {
            println!(
                "  {:>4}  {} = {}(source {})",
                f["field_id"].as_i64().unwrap_or_default(),
                f["name"].as_str().unwrap_or_default(),
                f["transform"].as_str().unwrap_or_default(),
                f["source_id"]
            );
        }
    }
}
