use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema as ArrowSchema, SchemaRef};
use iceberg::arrow::{arrow_type_to_type, schema_to_arrow_schema, type_to_arrow_type};
use iceberg::spec::{Schema as IcebergSchema, Type};

use crate::cast::{CastKind, cast_kind};
use crate::{CastMode, ReconcileError, is_legal_promotion};

const FIELD_ID: &str = "PARQUET:field_id";

/// What to do with a destination column no source column maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// (absent for an auto-added column or nested field, which has no id until it is added).
    pub dest_field: FieldRef,
    /// What the cast may do to values: [`CastMode::Safe`] unless the reconciler allows lossy
    /// casts.
    pub cast_mode: CastMode,
}

/// The static description of how every source batch becomes a destination batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconciliationPlan {
    /// One entry per output column, in destination order (auto-added columns last).
    pub projections: Vec<ColumnProjection>,
    /// Top-level source columns the destination lacks, under `MissingInDest::AutoAdd`, in
    /// source order: add them (optional columns of these types; nested ids are placeholders the
    /// destination reassigns) before writing, then recompute the plan against the evolved
    /// destination so every field carries the destination's id.
    pub auto_add_columns: Vec<(String, Type)>,
    /// Nested source fields a destination struct lacks, under `MissingInDest::AutoAdd`, as
    /// (parent path in the destination, field name, type), in source order: add each as an
    /// optional field of that struct (`EvolveSchemaBuilder::add_nested_column`) before writing.
    /// A parent path names list elements and map values as `items.element` and `m.value`.
    pub auto_add_nested_columns: Vec<(String, String, Type)>,
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SchemaReconciler {
    /// Source name → destination name; one-to-one, and every key must name a source column.
    /// Unmapped columns match by exact name.
    pub column_mapping: BTreeMap<String, String>,
    /// Destination name → Iceberg type to cast to. For an existing column it must be its type
    /// or a legal promotion of it; it also types an auto-added column.
    pub type_coercions: BTreeMap<String, Type>,
    /// Policy for destination columns with no source.
    pub on_missing_in_source: MissingInSource,
    /// Policy for source columns, and nested source fields, with no destination.
    pub on_missing_in_dest: MissingInDest,
    /// Accept casts that change values (truncated fractions, rounded doubles and decimals,
    /// floored timestamps, dropped times of day). Off by default: such a value is an error
    /// naming the column and the value, as with pyarrow's safe cast.
    pub allow_lossy_casts: bool,
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
                iceberg: arrow_type_to_type(f.data_type())
                    .ok()
                    .or_else(|| iceberg_type_of(f.data_type()).ok()),
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

    /// Accepts (`true`) or refuses (`false`, the default) casts that change values; the plan
    /// warns for every lossy cast either way.
    #[must_use]
    pub fn allow_lossy_casts(mut self, allow: bool) -> Self {
        self.allow_lossy_casts = allow;
        self
    }

    fn cast_mode(&self) -> CastMode {
        if self.allow_lossy_casts {
            CastMode::AllowLossy
        } else {
            CastMode::Safe
        }
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

    /// Applies `on_missing_in_dest` to a nested source field the destination struct lacks.
    fn nested_missing(
        &self,
        extra: NestedExtra,
        auto_add: &mut Vec<(String, String, Type)>,
        problems: &mut Vec<String>,
    ) {
        let name = extra.field.name();
        match self.on_missing_in_dest {
            MissingInDest::Error => problems.push(format!(
                "source field '{}' has no destination field '{}.{name}'; add it to the \
                 destination struct '{}', or set on_missing_in_dest to auto_add",
                extra.source_path, extra.dest_parent, extra.dest_parent
            )),
            MissingInDest::AutoAdd => match iceberg_type_of(extra.field.data_type()) {
                Ok(ty) => auto_add.push((extra.dest_parent, name.to_string(), ty)),
                Err(e) => problems.push(format!(
                    "source field '{}' ({}) has no Iceberg equivalent to auto-add: {e}",
                    extra.source_path,
                    extra.field.data_type()
                )),
            },
        }
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
        let mode = self.cast_mode();
        let mut auto_add_nested_columns = Vec::new();
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
                    let mut extras = Vec::new();
                    let add = self.on_missing_in_dest == MissingInDest::AutoAdd;
                    let widened = extend_nested(
                        s.field.data_type(),
                        target.data_type(),
                        s.name(),
                        name,
                        add,
                        &mut extras,
                    );
                    let target = if &widened == target.data_type() {
                        target
                    } else {
                        Arc::new(target.as_ref().clone().with_data_type(widened))
                    };
                    for extra in extras {
                        self.nested_missing(extra, &mut auto_add_nested_columns, &mut problems);
                    }
                    check_cast(s, &target, mode, &mut problems, &mut warnings);
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
                        cast_mode: mode,
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
                            cast_mode: mode,
                        });
                    }
                    MissingInSource::Skip if upsert => problems.push(format!(
                        "destination column '{name}' has no source column and \
                         on_missing_in_source=skip cannot be used with upsert, which writes \
                         every destination column; use null or map a column to it"
                    )),
                    MissingInSource::Skip if !target.is_nullable() => problems.push(format!(
                        "destination column '{name}' is required and has no source column, so \
                         it cannot be skipped (its rows would read null); map a source column \
                         to it with column_mapping, or make it optional in the destination"
                    )),
                    MissingInSource::Skip => warnings.push(format!(
                        "destination column '{name}' is not in the source and is left out of \
                         the projected batches; the rows written read null in it"
                    )),
                },
            }
        }

        let mut auto_add_columns = Vec::new();
        // Source order, so the destination gains the columns in the order the source has them.
        for s in &src {
            let dest_name = self
                .column_mapping
                .get(s.name())
                .map(String::as_str)
                .unwrap_or(s.name());
            let first = landing.get(dest_name).and_then(|v| v.first());
            if dest_names.contains_key(dest_name) || !first.is_some_and(|f| std::ptr::eq(*f, s)) {
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
                    let ty = match self.type_coercions.get(dest_name).or(s.iceberg.as_ref()) {
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
                    // Added columns are optional: existing rows have no value for them. Their
                    // nested fields have no destination ids until added; the source's ids would
                    // be wrong (or collide) in the destination.
                    let target = Arc::new(Field::new(dest_name, strip_ids(&dt), true));
                    check_cast(s, &target, mode, &mut problems, &mut warnings);
                    auto_add_columns.push((dest_name.to_string(), ty));
                    projections.push(ColumnProjection {
                        dest_name: dest_name.to_string(),
                        source_name: Some(s.name().to_string()),
                        dest_arrow_type: target.data_type().clone(),
                        fill_with_null: false,
                        dest_field: target,
                        cast_mode: mode,
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
            auto_add_nested_columns,
            widen_columns,
            warnings,
            dest_arrow_schema,
        })
    }
}

/// Records an impossible cast as a problem, and a data-dependent or lossy one (at any depth)
/// as a warning.
fn check_cast(
    source: &Column,
    target: &FieldRef,
    mode: CastMode,
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
        return;
    }
    let mut leaves = Vec::new();
    leaf_casts(from, to, source.name(), target.name(), &mut leaves);
    for leaf in leaves {
        let (f, t) = (&leaf.from, &leaf.to);
        let head = format!(
            "source column '{}' ({f}) → '{}' ({t})",
            leaf.source_path, leaf.dest_path
        );
        match (cast_kind(f, t), mode) {
            (CastKind::Exact, _) => {}
            (CastKind::DataDependent(why), _) => warnings.push(format!("{head} {why}")),
            (CastKind::Lossy(why), CastMode::Safe) => warnings.push(format!(
                "{head} is lossy ({why}): a value the cast would change fails the batch; \
                 allow_lossy_casts(true) accepts the change"
            )),
            (CastKind::Lossy(why), CastMode::AllowLossy) => warnings.push(format!(
                "{head} is lossy ({why}) and allow_lossy_casts is on: changed values are \
                 written without error"
            )),
        }
    }
}

/// One primitive cast inside a (possibly nested) column cast.
struct LeafCast {
    source_path: String,
    dest_path: String,
    from: DataType,
    to: DataType,
}

/// The primitive casts `from → to` performs, struct children matched by name as
/// [`crate::project_batch`] matches them.
fn leaf_casts(from: &DataType, to: &DataType, sp: &str, dp: &str, out: &mut Vec<LeafCast>) {
    match (from, to) {
        (DataType::Struct(f), DataType::Struct(t)) => {
            for tf in t {
                if let Some(ff) = f.iter().find(|ff| ff.name() == tf.name()) {
                    leaf_casts(
                        ff.data_type(),
                        tf.data_type(),
                        &format!("{sp}.{}", ff.name()),
                        &format!("{dp}.{}", tf.name()),
                        out,
                    );
                }
            }
        }
        (DataType::Dictionary(_, v), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            leaf_casts(v, to, sp, dp, out)
        }
        (
            DataType::List(f) | DataType::LargeList(f),
            DataType::List(t) | DataType::LargeList(t),
        ) => leaf_casts(
            f.data_type(),
            t.data_type(),
            &format!("{sp}.element"),
            &format!("{dp}.element"),
            out,
        ),
        (DataType::Map(f, _), DataType::Map(t, _)) => {
            for (ff, tf, part) in map_entries(f, t).unwrap_or_default() {
                leaf_casts(
                    ff.data_type(),
                    tf.data_type(),
                    &format!("{sp}.{part}"),
                    &format!("{dp}.{part}"),
                    out,
                );
            }
        }
        _ if from != to => out.push(LeafCast {
            source_path: sp.to_string(),
            dest_path: dp.to_string(),
            from: from.clone(),
            to: to.clone(),
        }),
        _ => {}
    }
}

/// The (source, target, "key" | "value") field pairs of two maps' entries, matched by position
/// as [`crate::project_batch`] matches them; `None` unless both are (key, value) structs.
fn map_entries<'a>(
    from: &'a Field,
    to: &'a Field,
) -> Option<Vec<(&'a FieldRef, &'a FieldRef, &'static str)>> {
    match (from.data_type(), to.data_type()) {
        (DataType::Struct(f), DataType::Struct(t)) if f.len() == 2 && t.len() == 2 => Some(
            f.iter()
                .zip(t.iter())
                .zip(["key", "value"])
                .map(|((ff, tf), part)| (ff, tf, part))
                .collect(),
        ),
        _ => None,
    }
}

/// A nested source field a destination struct lacks.
struct NestedExtra {
    /// The destination path of the struct that lacks it.
    dest_parent: String,
    /// The source field's full path.
    source_path: String,
    field: FieldRef,
}

/// `to` with every nested source field it lacks recorded in `extras` and, when `add`, appended
/// to its struct (optional, without ids), so projection carries the values.
fn extend_nested(
    from: &DataType,
    to: &DataType,
    sp: &str,
    dp: &str,
    add: bool,
    extras: &mut Vec<NestedExtra>,
) -> DataType {
    match (from, to) {
        (DataType::Struct(f), DataType::Struct(t)) => {
            let mut children: Vec<FieldRef> = t
                .iter()
                .map(|tf| match f.iter().find(|ff| ff.name() == tf.name()) {
                    Some(ff) => {
                        let dt = extend_nested(
                            ff.data_type(),
                            tf.data_type(),
                            &format!("{sp}.{}", ff.name()),
                            &format!("{dp}.{}", tf.name()),
                            add,
                            extras,
                        );
                        if &dt == tf.data_type() {
                            tf.clone()
                        } else {
                            Arc::new(tf.as_ref().clone().with_data_type(dt))
                        }
                    }
                    None => tf.clone(),
                })
                .collect();
            for ff in f {
                if t.iter().any(|tf| tf.name() == ff.name()) {
                    continue;
                }
                extras.push(NestedExtra {
                    dest_parent: dp.to_string(),
                    source_path: format!("{sp}.{}", ff.name()),
                    field: ff.clone(),
                });
                if add {
                    children.push(Arc::new(Field::new(
                        ff.name(),
                        strip_ids(ff.data_type()),
                        true,
                    )));
                }
            }
            DataType::Struct(children.into())
        }
        (DataType::Dictionary(_, v), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            extend_nested(v, to, sp, dp, add, extras)
        }
        (
            DataType::List(f) | DataType::LargeList(f),
            DataType::List(t) | DataType::LargeList(t),
        ) => {
            let dt = extend_nested(
                f.data_type(),
                t.data_type(),
                &format!("{sp}.element"),
                &format!("{dp}.element"),
                add,
                extras,
            );
            let element = Arc::new(t.as_ref().clone().with_data_type(dt));
            match to {
                DataType::LargeList(_) => DataType::LargeList(element),
                _ => DataType::List(element),
            }
        }
        (DataType::Map(f, _), DataType::Map(t, sorted)) => {
            let (DataType::Struct(fe), DataType::Struct(te)) = (f.data_type(), t.data_type())
            else {
                return to.clone();
            };
            if fe.len() != 2 || te.len() != 2 {
                return to.clone();
            }
            // Map entries are matched by position (key, value), whatever a writer named them.
            let value = extend_nested(
                fe[1].data_type(),
                te[1].data_type(),
                &format!("{sp}.value"),
                &format!("{dp}.value"),
                add,
                extras,
            );
            let key = extend_nested(
                fe[0].data_type(),
                te[0].data_type(),
                &format!("{sp}.key"),
                &format!("{dp}.key"),
                add,
                extras,
            );
            let entries = DataType::Struct(
                vec![
                    Arc::new(te[0].as_ref().clone().with_data_type(key)),
                    Arc::new(te[1].as_ref().clone().with_data_type(value)),
                ]
                .into(),
            );
            DataType::Map(
                Arc::new(t.as_ref().clone().with_data_type(entries)),
                *sorted,
            )
        }
        _ => to.clone(),
    }
}

/// `dt` without Iceberg field ids on its nested fields.
fn strip_ids(dt: &DataType) -> DataType {
    let strip = |f: &FieldRef| -> FieldRef {
        let mut meta = f.metadata().clone();
        meta.remove(FIELD_ID);
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(strip_ids(f.data_type()))
                .with_metadata(meta),
        )
    };
    match dt {
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(strip).collect()),
        DataType::List(f) => DataType::List(strip(f)),
        DataType::LargeList(f) => DataType::LargeList(strip(f)),
        DataType::Map(f, sorted) => DataType::Map(strip(f), *sorted),
        other => other.clone(),
    }
}

/// The Iceberg type of an Arrow type whose nested fields may lack ids: placeholder ids are
/// given to them (the destination assigns real ones when the column is added).
fn iceberg_type_of(dt: &DataType) -> Result<Type, String> {
    fn with_ids(dt: &DataType, next: &mut i32) -> DataType {
        let give = |f: &FieldRef, next: &mut i32| -> FieldRef {
            let mut meta = f.metadata().clone();
            meta.insert(FIELD_ID.to_string(), next.to_string());
            *next += 1;
            Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(with_ids(f.data_type(), next))
                    .with_metadata(meta),
            )
        };
        match dt {
            DataType::Struct(fs) => DataType::Struct(fs.iter().map(|f| give(f, next)).collect()),
            DataType::List(f) => DataType::List(give(f, next)),
            DataType::LargeList(f) => DataType::LargeList(give(f, next)),
            DataType::Map(f, sorted) => DataType::Map(give(f, next), *sorted),
            other => other.clone(),
        }
    }
    arrow_type_to_type(&with_ids(dt, &mut 1)).map_err(|e| e.to_string())
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
        (DataType::Dictionary(_, v), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            castable(v, to)
        }
        (
            DataType::List(f) | DataType::LargeList(f),
            DataType::List(t) | DataType::LargeList(t),
        ) => castable(f.data_type(), t.data_type()),
        (DataType::Map(f, _), DataType::Map(t, _)) => match map_entries(f, t) {
            Some(pairs) => pairs
                .iter()
                .all(|(ff, tf, _)| castable(ff.data_type(), tf.data_type())),
            None => false,
        },
        _ => arrow_cast::can_cast_types(from, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Fields;
    use iceberg::spec::{ListType, NestedField, PrimitiveType, StructType};

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

    fn st(fields: Vec<NestedField>) -> Type {
        Type::Struct(StructType::new(fields.into_iter().map(Arc::new).collect()))
    }

    #[test]
    fn nested_field_missing_in_dest_is_an_error_by_default() {
        let src = ice(vec![NestedField::optional(
            1,
            "p",
            st(vec![
                NestedField::optional(2, "x", int()),
                NestedField::optional(3, "z", int()),
            ]),
        )]);
        let dst = ice(vec![NestedField::optional(
            1,
            "p",
            st(vec![NestedField::optional(2, "x", int())]),
        )]);
        let errs = problems(SchemaReconciler::new().compute_plan(&src, &dst));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("source field 'p.z'") && errs[0].contains("auto_add"),
            "{errs:?}"
        );
    }

    #[test]
    fn nested_field_in_a_list_element_is_found() {
        let elem = |fields| {
            Type::List(ListType::new(Arc::new(NestedField::list_element(
                10,
                st(fields),
                false,
            ))))
        };
        let src = ice(vec![NestedField::optional(
            1,
            "items",
            elem(vec![
                NestedField::optional(11, "a", int()),
                NestedField::optional(12, "b", long()),
            ]),
        )]);
        let dst = ice(vec![NestedField::optional(
            1,
            "items",
            elem(vec![NestedField::optional(11, "a", int())]),
        )]);
        let errs = problems(SchemaReconciler::new().compute_plan(&src, &dst));
        assert!(errs[0].contains("'items.element.b'"), "{errs:?}");
        let plan = SchemaReconciler::new()
            .on_missing_in_dest(MissingInDest::AutoAdd)
            .compute_plan(&src, &dst)
            .unwrap();
        assert_eq!(
            plan.auto_add_nested_columns,
            vec![("items.element".to_string(), "b".to_string(), long())]
        );
    }

    #[test]
    fn nested_field_missing_in_dest_is_auto_added_without_source_ids() {
        use arrow_array::cast::AsArray;
        use arrow_array::{Int32Array, RecordBatch, StructArray};
        let src = ice(vec![NestedField::optional(
            1,
            "p",
            st(vec![
                NestedField::optional(2, "x", int()),
                NestedField::optional(3, "z", st(vec![NestedField::optional(4, "w", int())])),
            ]),
        )]);
        let dst = ice(vec![NestedField::optional(
            1,
            "p",
            st(vec![NestedField::optional(2, "x", int())]),
        )]);
        let plan = SchemaReconciler::new()
            .on_missing_in_dest(MissingInDest::AutoAdd)
            .compute_plan(&src, &dst)
            .unwrap();
        assert!(plan.auto_add_columns.is_empty());
        let (parent, name, ty) = &plan.auto_add_nested_columns[0];
        assert_eq!((parent.as_str(), name.as_str()), ("p", "z"));
        assert!(matches!(ty, Type::Struct(_)), "{ty}");
        let DataType::Struct(children) = plan.dest_arrow_schema.field(0).data_type().clone() else {
            panic!("not a struct")
        };
        assert_eq!(children.len(), 2);
        assert_eq!(
            children[0].metadata().get(FIELD_ID).map(String::as_str),
            Some("2")
        );
        assert!(children[1].metadata().get(FIELD_ID).is_none());
        let DataType::Struct(z) = children[1].data_type().clone() else {
            panic!("not a struct")
        };
        assert!(
            z[0].metadata().get(FIELD_ID).is_none(),
            "source id 4 must not reach the destination"
        );

        // Projection carries the new field's values.
        let w = Fields::from(vec![Field::new("w", DataType::Int32, true)]);
        let xz = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("z", DataType::Struct(w.clone()), true),
        ]);
        let zs = StructArray::try_new(w, vec![Arc::new(Int32Array::from(vec![7]))], None).unwrap();
        let p = StructArray::try_new(
            xz.clone(),
            vec![Arc::new(Int32Array::from(vec![1])), Arc::new(zs)],
            None,
        )
        .unwrap();
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(vec![Field::new(
                "p",
                DataType::Struct(xz),
                true,
            )])),
            vec![Arc::new(p)],
        )
        .unwrap();
        let out = crate::project_batch(&batch, &plan).unwrap();
        let z = out
            .column(0)
            .as_struct()
            .column(1)
            .as_struct()
            .column(0)
            .clone();
        assert_eq!(
            z.as_primitive::<arrow_array::types::Int32Type>().value(0),
            7
        );
    }

    #[test]
    fn auto_added_columns_keep_source_order_and_drop_source_ids() {
        let src = ice(vec![
            NestedField::required(1, "id", long()),
            NestedField::optional(2, "zeta", int()),
            NestedField::optional(3, "alpha", int()),
            NestedField::optional(4, "mid", st(vec![NestedField::optional(5, "leaf", int())])),
        ]);
        let dst = ice(vec![NestedField::required(1, "id", long())]);
        let plan = SchemaReconciler::new()
            .on_missing_in_dest(MissingInDest::AutoAdd)
            .compute_plan(&src, &dst)
            .unwrap();
        let names: Vec<&str> = plan
            .auto_add_columns
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, vec!["zeta", "alpha", "mid"]);
        let out: Vec<&str> = plan
            .dest_arrow_schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(out, vec!["id", "zeta", "alpha", "mid"]);
        let DataType::Struct(mid) = plan.dest_arrow_schema.field(3).data_type().clone() else {
            panic!("not a struct")
        };
        assert!(mid[0].metadata().get(FIELD_ID).is_none());
    }

    #[test]
    fn an_arrow_struct_without_ids_can_be_auto_added() {
        let inner = Fields::from(vec![Field::new("a", DataType::Int32, true)]);
        let src = arrow(&[("id", DataType::Int64), ("s", DataType::Struct(inner))]);
        let dst = arrow(&[("id", DataType::Int64)]);
        let plan = SchemaReconciler::new()
            .on_missing_in_dest(MissingInDest::AutoAdd)
            .compute_plan(&src, &dst)
            .unwrap();
        assert_eq!(plan.auto_add_columns[0].0, "s");
        assert!(matches!(plan.auto_add_columns[0].1, Type::Struct(_)));
    }
}
