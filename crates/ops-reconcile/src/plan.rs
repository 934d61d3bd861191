use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema as ArrowSchema, SchemaRef};
use iceberg::arrow::{arrow_type_to_type, schema_to_arrow_schema, type_to_arrow_type};
use iceberg::spec::{Schema as IcebergSchema, Type};

use crate::{ReconcileError, is_legal_promotion};

/// What to do with a destination column no source column maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingInSource {
    /// Fail at plan time (default).
    #[default]
    Error,
    /// Leave the column out of the projected batches; the writer must accept a partial schema.
    Skip,
    /// Emit a column of nulls in the destination type.
    Null,
}

/// What to do with a source column that has no destination column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingInDest {
    /// Fail at plan time (default).
    #[default]
    Error,
    /// Record it in [`ReconciliationPlan::auto_add_columns`]; the caller adds it to the
    /// destination table before writing.
    AutoAdd,
}

/// A schema given to [`SchemaReconciler::compute_plan`]: Arrow or Iceberg.
#[derive(Debug, Clone, Copy)]
pub enum SchemaInput<'a> {
    /// An Arrow schema (field ids read from `PARQUET:field_id` metadata when present).
    Arrow(&'a ArrowSchema),
    /// An Iceberg schema.
    Iceberg(&'a IcebergSchema),
}

impl<'a> From<&'a ArrowSchema> for SchemaInput<'a> {
    fn from(s: &'a ArrowSchema) -> Self {
        SchemaInput::Arrow(s)
    }
}
impl<'a> From<&'a SchemaRef> for SchemaInput<'a> {
    fn from(s: &'a SchemaRef) -> Self {
        SchemaInput::Arrow(s.as_ref())
    }
}
impl<'a> From<&'a IcebergSchema> for SchemaInput<'a> {
    fn from(s: &'a IcebergSchema) -> Self {
        SchemaInput::Iceberg(s)
    }
}
impl<'a> From<&'a iceberg::spec::SchemaRef> for SchemaInput<'a> {
    fn from(s: &'a iceberg::spec::SchemaRef) -> Self {
        SchemaInput::Iceberg(s.as_ref())
    }
}

/// How one destination column is derived from a source batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProjection {
    /// Column name in the destination.
    pub dest_name: String,
    /// Column name in the source; `None` for a null-filled column.
    pub source_name: Option<String>,
    /// Cast target (the destination type, or its coercion).
    pub dest_arrow_type: DataType,
    /// True when the column is missing from the source and filled with nulls.
    pub fill_with_null: bool,
    /// The output field: name, type, nullability and the Iceberg field id in its metadata
    /// (absent for an auto-added column, which has no id until it is added).
    pub dest_field: FieldRef,
}

/// The static description of how every source batch becomes a destination batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconciliationPlan {
    /// One entry per output column, in destination order (auto-added columns last).
    pub projections: Vec<ColumnProjection>,
    /// Source columns the destination lacks, under `MissingInDest::AutoAdd`: add them (optional
    /// columns of these types) before writing.
    pub auto_add_columns: Vec<(String, Type)>,
    /// Destination columns whose `type_coercions` entry is a legal promotion of their current
    /// type: widen them (from, to) before writing.
    pub widen_columns: Vec<(String, Type, Type)>,
    /// Non-fatal findings: doc-only differences, null-fill, lossy or data-dependent casts,
    /// upsert null-overwrites.
    pub warnings: Vec<String>,
    /// The schema of projected batches (destination order, after auto-adds, without skipped
    /// columns).
    pub dest_arrow_schema: SchemaRef,
}

/// Declarative source → destination reconciliation policy; a plan factory without per-batch
/// state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaReconciler {
    /// Source name → destination name; one-to-one, and every key must name a source column.
    /// Unmapped columns match by exact name.
    pub column_mapping: BTreeMap<String, String>,
    /// Destination name → Iceberg type to cast to. For an existing column it must be its type
    /// or a legal promotion of it; it also types an auto-added column.
    pub type_coercions: BTreeMap<String, Type>,
    /// Policy for destination columns with no source.
    pub on_missing_in_source: MissingInSource,
    /// Policy for source columns with no destination.
    pub on_missing_in_dest: MissingInDest,
}

/// A top-level column of either kind of schema.
struct Column {
    field: FieldRef,
    iceberg: Option<Type>,
    doc: Option<String>,
}

impl Column {
    fn name(&self) -> &str {
        self.field.name()
    }
}

fn columns(input: SchemaInput<'_>) -> Result<Vec<Column>, ReconcileError> {
    match input {
        SchemaInput::Arrow(s) => Ok(s
            .fields()
            .iter()
            .map(|f| Column {
                field: f.clone(),
                iceberg: arrow_type_to_type(f.data_type()).ok(),
                doc: f.metadata().get("doc").cloned(),
            })
            .collect()),
        SchemaInput::Iceberg(s) => {
            let arrow =
                schema_to_arrow_schema(s).map_err(|e| ReconcileError::Schema(e.to_string()))?;
            Ok(arrow
                .fields()
                .iter()
                .zip(s.as_struct().fields())
                .map(|(f, nf)| Column {
                    field: f.clone(),
                    iceberg: Some((*nf.field_type).clone()),
                    doc: nf.doc.clone(),
                })
                .collect())
        }
    }
}

impl SchemaReconciler {
    /// The identity reconciler: same names, same types, errors on any mismatch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps source column `source` to destination column `dest`.
    #[must_use]
    pub fn rename(mut self, source: impl Into<String>, dest: impl Into<String>) -> Self {
        self.column_mapping.insert(source.into(), dest.into());
        self
    }

    /// Casts destination column `dest` to `ty`.
    #[must_use]
    pub fn coerce(mut self, dest: impl Into<String>, ty: Type) -> Self {
        self.type_coercions.insert(dest.into(), ty);
        self
    }

    /// Sets the policy for destination columns with no source.
    #[must_use]
    pub fn on_missing_in_source(mut self, policy: MissingInSource) -> Self {
        self.on_missing_in_source = policy;
        self
    }

    /// Sets the policy for source columns with no destination.
    #[must_use]
    pub fn on_missing_in_dest(mut self, policy: MissingInDest) -> Self {
        self.on_missing_in_dest = policy;
        self
    }

    /// Computes the plan that turns `source` batches into `dest` batches, or every problem found.
    pub fn compute_plan<'a, 'b>(
        &self,
        source: impl Into<SchemaInput<'a>>,
        dest: impl Into<SchemaInput<'b>>,
    ) -> Result<ReconciliationPlan, ReconcileError> {
        self.plan(source.into(), dest.into(), false)
    }

    /// As [`compute_plan`](Self::compute_plan), for an upsert: `Skip` is refused (an upsert
    /// writes every destination column) and `Null` warns that it overwrites existing values.
    pub fn compute_upsert_plan<'a, 'b>(
        &self,
        source: impl Into<SchemaInput<'a>>,
        dest: impl Into<SchemaInput<'b>>,
    ) -> Result<ReconciliationPlan, ReconcileError> {
        self.plan(source.into(), dest.into(), true)
    }

    fn plan(
        &self,
        source: SchemaInput<'_>,
        dest: SchemaInput<'_>,
        upsert: bool,
    ) -> Result<ReconciliationPlan, ReconcileError> {
        let src = columns(source)?;
        let dst = columns(dest)?;
        let mut problems = Vec::new();
        let mut warnings = Vec::new();

        let source_names: Vec<&str> = src.iter().map(Column::name).collect();
        for key in self.column_mapping.keys() {
            if !source_names.contains(&key.as_str()) {
                problems.push(format!(
                    "column_mapping key '{key}' names no source column (source columns: {})",
                    source_names.join(", ")
                ));
            }
        }

        // Which source column lands in each destination name.
        let mut landing: BTreeMap<&str, Vec<&Column>> = BTreeMap::new();
        for c in &src {
            let dest_name = self
                .column_mapping
                .get(c.name())
                .map(String::as_str)
                .unwrap_or(c.name());
            landing.entry(dest_name).or_default().push(c);
        }
        for (dest_name, sources) in &landing {
            if sources.len() > 1 {
                let names: Vec<&str> = sources.iter().map(|c| c.name()).collect();
                problems.push(format!(
                    "source columns {} would all land in destination column '{dest_name}'; \
                     column_mapping must be one-to-one",
                    names.join(", ")
                ));
            }
        }

        let dest_names: HashMap<&str, &Column> = dst.iter().map(|c| (c.name(), c)).collect();
        let mut projections = Vec::new();
        let mut widen_columns = Vec::new();
        for d in &dst {
            let name = d.name();
            let target = match self.type_coercions.get(name) {
                None => d.field.clone(),
                Some(coerced) => match &d.iceberg {
                    Some(current) if !is_legal_promotion(current, coerced) => {
                        problems.push(format!(
                            "type_coercions['{name}'] = {coerced} is neither the destination \
                             type ({current}) nor a legal Iceberg promotion of it (int→long, \
                             float→double, decimal precision up with the same scale)"
                        ));
                        continue;
                    }
                    current => {
                        if let Some(current) = current
                            && current != coerced
                        {
                            widen_columns.push((
                                name.to_string(),
                                current.clone(),
                                coerced.clone(),
                            ));
                        }
                        match type_to_arrow_type(coerced) {
                            Ok(dt) => Arc::new(
                                Field::new(name, dt, d.field.is_nullable())
                                    .with_metadata(d.field.metadata().clone()),
                            ),
                            Err(e) => {
                                problems.push(format!("type_coercions['{name}']: {e}"));
                                continue;
                            }
                        }
                    }
                },
            };
            match landing.get(name).and_then(|v| v.first()) {
                Some(s) => {
                    check_cast(s, &target, &mut problems, &mut warnings);
                    if s.field.is_nullable() && !target.is_nullable() {
                        warnings.push(format!(
                            "source column '{}' is optional but destination column '{name}' is \
                             required; a batch with a null in it will fail",
                            s.name()
                        ));
                    }
                    if let (Some(sd), Some(dd)) = (&s.doc, &d.doc)
                        && sd != dd
                    {
                        warnings.push(format!(
                            "column '{name}': only the doc differs (source: \"{sd}\", \
                             destination: \"{dd}\"); the destination's is kept"
                        ));
                    }
                    projections.push(ColumnProjection {
                        dest_name: name.to_string(),
                        source_name: Some(s.name().to_string()),
                        dest_arrow_type: target.data_type().clone(),
                        fill_with_null: false,
                        dest_field: target,
                    });
                }
                None => match self.on_missing_in_source {
                    MissingInSource::Error => problems.push(format!(
                        "destination column '{name}' has no source column; map one to it with \
                         column_mapping, or set on_missing_in_source to null or skip"
                    )),
                    MissingInSource::Null if !target.is_nullable() => problems.push(format!(
                        "destination column '{name}' is required and has no source column, so \
                         it cannot be filled with nulls; map a source column to it"
                    )),
                    MissingInSource::Null => {
                        warnings.push(format!(
                            "destination column '{name}' is not in the source; it is filled \
                             with nulls"
                        ));
                        if upsert {
                            warnings.push(format!(
                                "upsert with on_missing_in_source=null overwrites the existing \
                                 values of '{name}' with null for every matched key"
                            ));
                        }
                        projections.push(ColumnProjection {
                            dest_name: name.to_string(),
                            source_name: None,
                            dest_arrow_type: target.data_type().clone(),
                            fill_with_null: true,
                            dest_field: target,
                        });
                    }
                    MissingInSource::Skip if upsert => problems.push(format!(
                        "destination column '{name}' has no source column and \
                         on_missing_in_source=skip cannot be used with upsert, which writes \
                         every destination column; use null or map a column to it"
                    )),
                    MissingInSource::Skip if !target.is_nullable() => problems.push(format!(
                        "destination column '{name}' is required and has no source column, so \
                         it cannot be skipped; map a source column to it"
                    )),
                    MissingInSource::Skip => warnings.push(format!(
                        "destination column '{name}' is not in the source and is left out of \
                         the projected batches"
                    )),
                },
            }
        }

        let mut auto_add_columns = Vec::new();
        for (dest_name, sources) in &landing {
            let Some(s) = sources.first() else { continue };
            if dest_names.contains_key(dest_name) {
                continue;
            }
            match self.on_missing_in_dest {
                MissingInDest::Error => problems.push(format!(
                    "source column '{}' has no destination column '{dest_name}'; add it to the \
                     destination, map it with column_mapping, or set on_missing_in_dest to \
                     auto_add",
                    s.name()
                )),
                MissingInDest::AutoAdd => {
                    let ty = match self.type_coercions.get(*dest_name).or(s.iceberg.as_ref()) {
                        Some(t) => t.clone(),
                        None => {
                            problems.push(format!(
                                "source column '{}' ({}) has no Iceberg equivalent to auto-add; \
                                 give it a type in type_coercions",
                                s.name(),
                                s.field.data_type()
                            ));
                            continue;
                        }
                    };
                    let dt = match type_to_arrow_type(&ty) {
                        Ok(dt) => dt,
                        Err(e) => {
                            problems.push(format!("auto-added column '{dest_name}': {e}"));
                            continue;
                        }
                    };
                    // Added columns are optional: existing rows have no value for them.
                    let target = Arc::new(Field::new(*dest_name, dt, true));
                    check_cast(s, &target, &mut problems, &mut warnings);
                    auto_add_columns.push((dest_name.to_string(), ty));
                    projections.push(ColumnProjection {
                        dest_name: dest_name.to_string(),
                        source_name: Some(s.name().to_string()),
                        dest_arrow_type: target.data_type().clone(),
                        fill_with_null: false,
                        dest_field: target,
                    });
                }
            }
        }

        for key in self.type_coercions.keys() {
            let known = dest_names.contains_key(key.as_str())
                || auto_add_columns.iter().any(|(n, _)| n == key);
            let planned_add = landing.contains_key(key.as_str())
                && self.on_missing_in_dest == MissingInDest::AutoAdd;
            if !known && !planned_add {
                problems.push(format!(
                    "type_coercions key '{key}' names no destination column (keys are \
                     destination names, after column_mapping)"
                ));
            }
        }

        if !problems.is_empty() {
            return Err(ReconcileError::Plan { problems });
        }
        let dest_arrow_schema = Arc::new(ArrowSchema::new(
            projections
                .iter()
                .map(|p| p.dest_field.clone())
                .collect::<Vec<_>>(),
        ));
        Ok(ReconciliationPlan {
            projections,
            auto_add_columns,
            widen_columns,
            warnings,
            dest_arrow_schema,
        })
    }
}

/// Records an impossible cast as a problem and a lossy or data-dependent one as a warning.
fn check_cast(
    source: &Column,
    target: &FieldRef,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    let (from, to) = (source.field.data_type(), target.data_type());
    if !castable(from, to) {
        problems.push(format!(
            "source column '{}' ({from}) cannot be cast to destination column '{}' ({to}); \
             choose a compatible type_coercions entry or transform the column first",
            source.name(),
            target.name()
        ));
    } else if let Some(why) = lossy(from, to) {
        warnings.push(format!(
            "source column '{}' ({from}) → '{}' ({to}) {why}",
            source.name(),
            target.name()
        ));
    }
}

/// Like arrow's `can_cast_types`, but nested types are compared child by child by name, as
/// [`crate::project_batch`] converts them.
fn castable(from: &DataType, to: &DataType) -> bool {
    match (from, to) {
        (DataType::Struct(f), DataType::Struct(t)) => {
            t.iter()
                .all(|tf| match f.iter().find(|ff| ff.name() == tf.name()) {
                    Some(ff) => castable(ff.data_type(), tf.data_type()),
                    None => tf.is_nullable(),
                })
        }
        (DataType::List(f), DataType::List(t)) | (DataType::Map(f, _), DataType::Map(t, _)) => {
            castable(f.data_type(), t.data_type())
        }
        _ => arrow_cast::can_cast_types(from, to),
    }
}

/// Why a cast may lose information or fail on some values, if it may.
fn lossy(from: &DataType, to: &DataType) -> Option<&'static str> {
    use DataType::*;
    if from == to {
        return None;
    }
    let int_width = |t: &DataType| match t {
        Int8 | UInt8 => Some(8),
        Int16 | UInt16 => Some(16),
        Int32 | UInt32 => Some(32),
        Int64 | UInt64 => Some(64),
        _ => None,
    };
    match (from, to) {
        (Utf8 | LargeUtf8 | Utf8View, t) if !matches!(t, Utf8 | LargeUtf8 | Utf8View) => {
            Some("is data-dependent: values that do not parse fail the batch")
        }
        (f, t) if int_width(f).is_some() && int_width(t).is_some() => {
            (int_width(f) > int_width(t)).then_some("narrows: out-of-range values fail the batch")
        }
        (Float64, Float32) => Some("narrows: precision is lost"),
        (Float32 | Float64, t) if int_width(t).is_some() => {
            Some("truncates fractions; out-of-range values fail the batch")
        }
        (Int64 | UInt64, Float64) | (Int32 | UInt32 | Int64 | UInt64, Float32) => {
            Some("may round large integers")
        }
        (Decimal128(p1, s1), Decimal128(p2, s2)) if p2 < p1 || s2 < s1 => {
            Some("reduces precision or scale: values may fail or be rounded")
        }
        (Timestamp(u1, _), Timestamp(u2, _)) if unit_rank(u2) < unit_rank(u1) => {
            Some("coarsens the timestamp unit: sub-unit precision is lost")
        }
        _ => None,
    }
}

fn unit_rank(u: &arrow_schema::TimeUnit) -> u8 {
    match u {
        arrow_schema::TimeUnit::Second => 0,
        arrow_schema::TimeUnit::Millisecond => 1,
        arrow_schema::TimeUnit::Microsecond => 2,
        arrow_schema::TimeUnit::Nanosecond => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{NestedField, PrimitiveType};

    fn long() -> Type {
        Type::Primitive(PrimitiveType::Long)
    }
    fn int() -> Type {
        Type::Primitive(PrimitiveType::Int)
    }

    fn ice(fields: Vec<NestedField>) -> IcebergSchema {
        IcebergSchema::builder()
            .with_fields(fields.into_iter().map(Arc::new))
            .build()
            .unwrap()
    }

    fn arrow(fields: &[(&str, DataType)]) -> ArrowSchema {
        ArrowSchema::new(
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), true))
                .collect::<Vec<_>>(),
        )
    }

    fn problems(r: Result<ReconciliationPlan, ReconcileError>) -> Vec<String> {
        match r {
            Err(ReconcileError::Plan { problems }) => problems,
            other => panic!("expected plan problems, got {other:?}"),
        }
    }

    #[test]
    fn identity_plan_keeps_field_ids() {
        let s = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "qty", int()),
        ]);
        let plan = SchemaReconciler::new().compute_plan(&s, &s).unwrap();
        assert_eq!(plan.projections.len(), 2);
        assert!(plan.warnings.is_empty() && plan.auto_add_columns.is_empty());
        let id_meta = plan
            .dest_arrow_schema
            .field(1)
            .metadata()
            .get("PARQUET:field_id");
        assert_eq!(id_meta.map(String::as_str), Some("2"));
    }

    #[test]
    fn rename_coerce_and_null_fill() {
        let src = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "order_total", int()),
            NestedField::optional(3, "qty", int()),
        ]);
        let dst = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "total_amount", int()),
            NestedField::optional(3, "qty", int()),
            NestedField::optional(4, "note", Type::Primitive(PrimitiveType::String)),
        ]);
        let plan = SchemaReconciler::new()
            .rename("order_total", "total_amount")
            .coerce("qty", long())
            .on_missing_in_source(MissingInSource::Null)
            .compute_plan(&src, &dst)
            .unwrap();
        let p = &plan.projections;
        assert_eq!(p[1].source_name.as_deref(), Some("order_total"));
        assert_eq!(p[2].dest_arrow_type, DataType::Int64);
        assert!(p[3].fill_with_null && p[3].source_name.is_none());
        assert_eq!(plan.widen_columns, vec![("qty".to_string(), int(), long())]);
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("'note'") && w.contains("nulls"))
        );
    }

    #[test]
    fn all_problems_are_reported_together() {
        let src = arrow(&[
            ("a", DataType::Int32),
            ("b", DataType::Int32),
            ("x", DataType::Int32),
        ]);
        let dst = arrow(&[("b", DataType::Int32), ("y", DataType::Int32)]);
        let errs = problems(
            SchemaReconciler::new()
                .rename("a", "b")
                .rename("nope", "z")
                .coerce("ghost", long())
                .compute_plan(&src, &dst),
        );
        let all = errs.join("\n");
        assert!(all.contains("'nope' names no source column"), "{all}");
        assert!(all.contains("one-to-one"), "{all}");
        assert!(
            all.contains("destination column 'y' has no source"),
            "{all}"
        );
        assert!(
            all.contains("source column 'x' has no destination"),
            "{all}"
        );
        assert!(all.contains("type_coercions key 'ghost'"), "{all}");
        assert_eq!(errs.len(), 5, "{all}");
    }

    #[test]
    fn illegal_coercion_is_reported_at_plan_time() {
        let s = ice(vec![NestedField::optional(1, "qty", long())]);
        let errs = problems(
            SchemaReconciler::new()
                .coerce("qty", int())
                .compute_plan(&s, &s),
        );
        assert!(errs[0].contains("neither the destination type"), "{errs:?}");
    }

    #[test]
    fn impossible_cast_is_reported_at_plan_time() {
        let src = arrow(&[("a", DataType::Binary)]);
        let dst = arrow(&[("a", DataType::Date32)]);
        let errs = problems(SchemaReconciler::new().compute_plan(&src, &dst));
        assert!(errs[0].contains("cannot be cast"), "{errs:?}");
    }

    #[test]
    fn auto_add_with_and_without_coercion() {
        let src = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "extra", int()),
            NestedField::optional(3, "more", int()),
        ]);
        let dst = ice(vec![NestedField::required(1, "id", long())]);
        let plan = SchemaReconciler::new()
            .on_missing_in_dest(MissingInDest::AutoAdd)
            .coerce("more", long())
            .compute_plan(&src, &dst)
            .unwrap();
        assert_eq!(
            plan.auto_add_columns,
            vec![("extra".to_string(), int()), ("more".to_string(), long())]
        );
        assert_eq!(plan.dest_arrow_schema.fields().len(), 3);
        assert!(plan.dest_arrow_schema.field(2).is_nullable());
        assert_eq!(
            plan.dest_arrow_schema.field(2).data_type(),
            &DataType::Int64
        );
    }

    #[test]
    fn null_policy_cannot_fill_a_required_column() {
        let src = ice(vec![NestedField::required(1, "id", long())]);
        let dst = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::required(2, "must", long()),
        ]);
        let errs = problems(
            SchemaReconciler::new()
                .on_missing_in_source(MissingInSource::Null)
                .compute_plan(&src, &dst),
        );
        assert!(errs[0].contains("required"), "{errs:?}");
    }

    #[test]
    fn skip_drops_the_column_but_not_for_upserts() {
        let src = ice(vec![NestedField::required(1, "id", long())]);
        let dst = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "note", long()),
        ]);
        let r = SchemaReconciler::new().on_missing_in_source(MissingInSource::Skip);
        let plan = r.compute_plan(&src, &dst).unwrap();
        assert_eq!(plan.dest_arrow_schema.fields().len(), 1);
        let errs = problems(r.compute_upsert_plan(&src, &dst));
        assert!(errs[0].contains("upsert"), "{errs:?}");
    }

    #[test]
    fn upsert_null_fill_warns_about_overwrites() {
        let src = ice(vec![NestedField::required(1, "id", long())]);
        let dst = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "note", long()),
        ]);
        let plan = SchemaReconciler::new()
            .on_missing_in_source(MissingInSource::Null)
            .compute_upsert_plan(&src, &dst)
            .unwrap();
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("overwrites the existing values"))
        );
    }

    #[test]
    fn doc_only_difference_and_lossy_casts_warn() {
        let src = ice(vec![
            NestedField::optional(1, "a", long()).with_doc("old"),
            NestedField::optional(2, "b", long()),
        ]);
        let dst = ice(vec![
            NestedField::optional(1, "a", long()).with_doc("new"),
            NestedField::optional(2, "b", int()),
        ]);
        let plan = SchemaReconciler::new().compute_plan(&src, &dst).unwrap();
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("only the doc differs")),
            "{:?}",
            plan.warnings
        );
        assert!(
            plan.warnings.iter().any(|w| w.contains("narrows")),
            "{:?}",
            plan.warnings
        );
    }
}
