//! Plan review: parse the table compatibility report (CSV at
//! `migrationOutput.tableCompatibilityReport.key`), classify each column's type change, collect
//! invalid findings by category, every column-wide data loss (`setNull`, `dropped`) and every
//! converted column, and decide whether the plan may be approved. What the review does not
//! recognise (a new `schemaTransformation.*` class, finding type or outcome) fails closed: the
//! plan cannot be verified.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::GetTableMigrationResponse;

/// The type-change class of `schemaTransformation.<class>`, matched case-insensitively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransformationClass {
    /// Type and every value unchanged.
    Lossless,
    /// Larger type of the same kind.
    Widened,
    /// Preserved except where the conversion loses precision.
    Converted,
    /// The destination cannot hold every value.
    Incompatible,
    /// No Iceberg type.
    Unsupported,
}

impl TransformationClass {
    /// Parses `lossless`, `Widened`, ... (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "lossless" => Some(Self::Lossless),
            "widened" => Some(Self::Widened),
            "converted" => Some(Self::Converted),
            "incompatible" => Some(Self::Incompatible),
            "unsupported" => Some(Self::Unsupported),
            _ => None,
        }
    }

    /// Display label.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Lossless => "Lossless",
            Self::Widened => "Widened",
            Self::Converted => "Converted",
            Self::Incompatible => "Incompatible",
            Self::Unsupported => "Unsupported",
        }
    }
}

/// One row of the table compatibility report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// `invalid` (blocks) or `informational`.
    pub finding_type: String,
    /// `access`, `metadata`, `data`, `internal`.
    pub finding_category: String,
    /// e.g. `schemaTransformation.widened`.
    pub finding_subcategory: String,
    /// The `details` JSON.
    pub details: serde_json::Value,
}

impl Finding {
    /// Whether the finding blocks the migration.
    pub fn is_invalid(&self) -> bool {
        self.finding_type.eq_ignore_ascii_case("invalid")
    }

    /// The type-change class, for `schemaTransformation.*` rows.
    pub fn class(&self) -> Option<TransformationClass> {
        let (head, tail) = self.finding_subcategory.split_once('.')?;
        if !head.eq_ignore_ascii_case("schemaTransformation") {
            return None;
        }
        TransformationClass::parse(tail)
    }

    /// `details.fieldPath`.
    pub fn field_path(&self) -> Option<&str> {
        self.details["fieldPath"].as_str()
    }

    /// `details.outcome`.
    pub fn outcome(&self) -> Option<&str> {
        self.details["outcome"].as_str()
    }

    /// Whether the outcome loses the whole column (`setNull` or `dropped`).
    pub fn loses_column(&self) -> bool {
        self.outcome()
            .is_some_and(|o| o.eq_ignore_ascii_case("setNull") || o.eq_ignore_ascii_case("dropped"))
    }

    /// What about this row the review cannot interpret: a `schemaTransformation.*` class, a
    /// finding type or an outcome outside the known ones.
    pub fn unrecognised(&self) -> Option<String> {
        let what = self.field_path().unwrap_or("the table");
        if let Some((head, tail)) = self.finding_subcategory.split_once('.')
            && head.eq_ignore_ascii_case("schemaTransformation")
            && TransformationClass::parse(tail).is_none()
        {
            return Some(format!(
                "unknown type-change class {} on {what}",
                self.finding_subcategory
            ));
        }
        let known_type = ["invalid", "informational"]
            .iter()
            .any(|t| self.finding_type.eq_ignore_ascii_case(t));
        if !known_type {
            return Some(format!(
                "unknown finding type '{}' ({}) on {what}",
                self.finding_type, self.finding_subcategory
            ));
        }
        if let Some(o) = self.outcome()
            && !KNOWN_OUTCOMES.iter().any(|k| o.eq_ignore_ascii_case(k))
        {
            return Some(format!("unknown outcome '{o}' on {what}"));
        }
        None
    }
}

/// Outcomes a finding's `details.outcome` may have: migrated as is, written null column-wide,
/// left out, or failing the migration.
const KNOWN_OUTCOMES: [&str; 4] = ["migrated", "setNull", "dropped", "failed"];

/// Parses the CSV report (header `finding_type,finding_category,finding_subcategory,details`,
/// RFC 4180 quoting).
pub fn parse_report(csv: &str) -> Result<Vec<Finding>, String> {
    let rows = parse_csv(csv);
    let mut rows = rows.into_iter();
    let header = rows.next().ok_or("the report is empty")?;
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or(format!("the report has no '{name}' column"))
    };
    let (t, c, s, d) = (
        col("finding_type")?,
        col("finding_category")?,
        col("finding_subcategory")?,
        col("details")?,
    );
    let mut out = Vec::new();
    for row in rows {
        if row.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let get = |i: usize| row.get(i).cloned().unwrap_or_default();
        let details = get(d);
        out.push(Finding {
            finding_type: get(t),
            finding_category: get(c),
            finding_subcategory: get(s),
            details: serde_json::from_str(&details).unwrap_or(serde_json::Value::String(details)),
        });
    }
    Ok(out)
}

fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if quoted {
            match ch {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                _ => field.push(ch),
            }
            continue;
        }
        match ch {
            '"' => quoted = true,
            ',' => row.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            _ => field.push(ch),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Quotes a CSV field when needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The review of one plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReview {
    /// The migration reviewed.
    pub migration_id: String,
    /// Column → class.
    pub columns: BTreeMap<String, TransformationClass>,
    /// Invalid findings of both compatibility reports, by category.
    pub invalid_by_category: BTreeMap<String, i64>,
    /// Invalid rows of the table report.
    pub invalid_findings: Vec<Finding>,
    /// Columns whose outcome is `setNull` or `dropped`, with the outcome.
    pub data_loss: Vec<(String, String)>,
    /// Columns converted (not lossless; accept consciously).
    pub converted: Vec<String>,
    /// Findings the review does not recognise.
    pub unrecognised: Vec<String>,
}

/// What the review allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Safe to approve.
    Approvable,
    /// Approvable only when the operator confirms these columns by name.
    NeedsConfirmation {
        /// Column-wide losses (`setNull`, `dropped`), described.
        data_loss: Vec<String>,
        /// Converted columns, described.
        converted: Vec<String>,
    },
    /// Blocked: cancel the migration.
    Cancel(Vec<String>),
    /// Findings the review cannot interpret: stop, never approve.
    CannotVerify(Vec<String>),
}

impl PlanReview {
    /// Builds the review from the record and the parsed table report.
    pub fn new(record: &GetTableMigrationResponse, findings: Vec<Finding>) -> Self {
        let mut invalid_by_category = BTreeMap::new();
        for r in [
            &record.migration_output.table_compatibility_report,
            &record.migration_output.object_compatibility_report,
        ] {
            for (k, v) in r.invalid_findings.iter().flatten() {
                if *v > 0 {
                    *invalid_by_category.entry(k.to_string()).or_insert(0) += v;
                }
            }
        }
        let mut columns = BTreeMap::new();
        let mut data_loss = Vec::new();
        let mut converted = Vec::new();
        let mut invalid = Vec::new();
        let mut unrecognised = Vec::new();
        for (row, f) in findings.into_iter().enumerate() {
            if let Some(u) = f.unrecognised() {
                unrecognised.push(u);
            }
            // A row without fieldPath keeps its own entry: rows must not merge into one.
            let field = f
                .field_path()
                .map(str::to_string)
                .unwrap_or_else(|| format!("(report row {}, no fieldPath)", row + 1));
            if let Some(class) = f.class() {
                // A column reported more than once keeps its most severe class (the enum's
                // order), so a later lossless row cannot hide an incompatible one.
                let kept = columns.entry(field.clone()).or_insert(class);
                *kept = (*kept).max(class);
                if class == TransformationClass::Converted && !converted.contains(&field) {
                    converted.push(field.clone());
                }
            }
            if f.loses_column() {
                data_loss.push((field.clone(), f.outcome().unwrap_or_default().to_string()));
            }
            if f.is_invalid() {
                invalid.push(f);
            }
        }
        PlanReview {
            migration_id: record.migration_id.clone(),
            columns,
            invalid_by_category,
            invalid_findings: invalid,
            data_loss,
            converted,
            unrecognised,
        }
    }

    /// The decision: unrecognised findings → cannot verify; invalid findings or
    /// unsupported/incompatible changes kept → cancel; `setNull`/`dropped` or converted
    /// columns → confirmation by name; otherwise approvable.
    pub fn verdict(&self) -> Verdict {
        if !self.unrecognised.is_empty() {
            return Verdict::CannotVerify(self.unrecognised.clone());
        }
        let mut blocking: Vec<String> = self
            .invalid_by_category
            .iter()
            .map(|(c, n)| format!("{n} invalid {c} finding(s)"))
            .collect();
        for f in &self.invalid_findings {
            blocking.push(format!(
                "invalid {} finding {} on {}",
                f.finding_category,
                f.finding_subcategory,
                f.field_path().unwrap_or("the table")
            ));
        }
        let lost: Vec<&str> = self.data_loss.iter().map(|(c, _)| c.as_str()).collect();
        for (col, class) in &self.columns {
            let kept = !lost.contains(&col.as_str());
            if kept
                && matches!(
                    class,
                    TransformationClass::Unsupported | TransformationClass::Incompatible
                )
            {
                blocking.push(format!("{} change on column {col}", class.label()));
            }
        }
        if !blocking.is_empty() {
            return Verdict::Cancel(blocking);
        }
        if !self.data_loss.is_empty() || !self.converted.is_empty() {
            return Verdict::NeedsConfirmation {
                data_loss: self
                    .data_loss
                    .iter()
                    .map(|(c, o)| format!("column {c}: {o} (the whole column)"))
                    .collect(),
                converted: self
                    .converted
                    .iter()
                    .map(|c| format!("column {c}: converted (values may change)"))
                    .collect(),
            };
        }
        Verdict::Approvable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "finding_type,finding_category,finding_subcategory,details\n\
informational,metadata,schemaTransformation.LOSSLESS,\"{\"\"fieldPath\"\":\"\"id\"\",\"\"outcome\"\":\"\"migrated\"\"}\"\n\
informational,metadata,schemaTransformation.widened,\"{\"\"fieldPath\"\":\"\"qty\"\",\"\"outcome\"\":\"\"migrated\"\"}\"\n\
informational,metadata,schemaTransformation.Converted,\"{\"\"fieldPath\"\":\"\"code\"\",\"\"outcome\"\":\"\"migrated\"\"}\"\n";

    #[test]
    fn classes_are_matched_case_insensitively() -> Result<(), String> {
        let f = parse_report(REPORT)?;
        assert_eq!(f.len(), 3);
        assert_eq!(f[0].class(), Some(TransformationClass::Lossless));
        assert_eq!(f[1].class(), Some(TransformationClass::Widened));
        assert_eq!(f[2].class(), Some(TransformationClass::Converted));
        assert_eq!(f[2].field_path(), Some("code"));
        Ok(())
    }

    #[test]
    fn set_null_and_dropped_are_column_wide_loss() -> Result<(), String> {
        let csv = format!(
            "{REPORT}informational,data,schemaTransformation.incompatible,\"{{\"\"fieldPath\"\":\"\"big\"\",\"\"outcome\"\":\"\"setNull\"\"}}\"\n"
        );
        let f = parse_report(&csv)?;
        assert!(f[3].loses_column());
        assert!(!f[0].loses_column());
        Ok(())
    }

    fn record() -> GetTableMigrationResponse {
        let v = serde_json::json!({
            "migrationId": "m-1", "tableBucketARN": "arn:b", "namespace": "ns", "name": "t",
            "type": "start", "state": "pendingReview", "roleARN": "arn:r",
            "reviewMigrationPlan": true, "hasValidPlan": true,
            "createdAt": "2026-11-04T00:00:00Z", "stateUpdatedAt": "2026-11-04T00:00:00Z",
            "sourceType": "glueTable",
            "source": {"glueTable": {"catalogId": "1", "databaseName": "db", "tableName": "s"}},
            "dataMigration": {"maintenanceSettings": {}, "migrationPolicies": {}},
            "migrationOutput": {"bucket": "arn:aws:s3:::r", "tableCompatibilityReport": {},
                "objectCompatibilityReport": {}, "objectMigrationReport": {}}
        });
        match serde_json::from_value(v) {
            Ok(r) => r,
            Err(e) => panic!("record: {e}"),
        }
    }

    fn row(class: &str, field: &str, outcome: &str) -> String {
        format!(
            "informational,metadata,schemaTransformation.{class},\"{{\"\"fieldPath\"\":\"\"{field}\"\",\"\"outcome\"\":\"\"{outcome}\"\"}}\"\n"
        )
    }

    #[test]
    fn a_column_reported_twice_keeps_its_most_severe_class() -> Result<(), String> {
        let r = review(&[
            row("incompatible", "big", "migrated"),
            row("lossless", "big", "migrated"),
        ])?;
        assert_eq!(
            r.columns.get("big"),
            Some(&TransformationClass::Incompatible)
        );
        assert!(
            matches!(r.verdict(), Verdict::Cancel(_)),
            "{:?}",
            r.verdict()
        );
        Ok(())
    }

    #[test]
    fn rows_without_field_path_stay_apart() -> Result<(), String> {
        let pathless = |class: &str| {
            format!(
                "informational,metadata,schemaTransformation.{class},\"{{\"\"outcome\"\":\"\"migrated\"\"}}\"\n"
            )
        };
        let r = review(&[pathless("incompatible"), pathless("lossless")])?;
        assert_eq!(r.columns.len(), 2, "{:?}", r.columns);
        assert!(
            r.columns
                .values()
                .any(|c| *c == TransformationClass::Incompatible)
        );
        assert!(
            matches!(r.verdict(), Verdict::Cancel(_)),
            "{:?}",
            r.verdict()
        );
        Ok(())
    }

    fn review(rows: &[String]) -> Result<PlanReview, String> {
        let csv = format!(
            "finding_type,finding_category,finding_subcategory,details\n{}",
            rows.concat()
        );
        Ok(PlanReview::new(&record(), parse_report(&csv)?))
    }

    #[test]
    fn converted_columns_need_confirmation_like_data_loss() -> Result<(), String> {
        let r = review(&[
            row("lossless", "id", "migrated"),
            row("converted", "code", "migrated"),
        ])?;
        assert_eq!(
            r.verdict(),
            Verdict::NeedsConfirmation {
                data_loss: vec![],
                converted: vec!["column code: converted (values may change)".into()],
            }
        );
        let r = review(&[row("widened", "qty", "migrated")])?;
        assert_eq!(r.verdict(), Verdict::Approvable);
        Ok(())
    }

    #[test]
    fn unrecognised_classes_types_and_outcomes_fail_closed() -> Result<(), String> {
        for rows in [
            vec![row("truncated", "ts", "migrated")],
            vec![row("lossless", "id", "rounded")],
            vec![
                "blocking,metadata,schemaTransformation.lossless,\"{\"\"fieldPath\"\":\"\"id\"\"}\"\n"
                    .to_string(),
            ],
        ] {
            let r = review(&rows)?;
            match r.verdict() {
                Verdict::CannotVerify(what) => assert_eq!(what.len(), 1, "{what:?}"),
                other => return Err(format!("{rows:?}: expected CannotVerify, got {other:?}")),
            }
        }
        Ok(())
    }

    #[test]
    fn csv_quoting_round_trips() {
        let s = r#"{"a":"x,y"}"#;
        let line = format!("a,b,c,{}\n", csv_field(s));
        let rows = parse_csv(&line);
        assert_eq!(rows[0][3], s);
    }
}
