//! `SchemaReconciler.compute_plan()` and `project_batch()`: schemas in as PyIceberg's JSON or
//! any Arrow schema, batches in and out through the Arrow PyCapsule interface.

use arrow_array::RecordBatch;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::Schema as ArrowSchema;
use ops_reconcile::{ReconciliationPlan, SchemaReconciler};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors;

/// A computed plan: the Rust [`ReconciliationPlan`] behind the Python `ReconciliationPlan`,
/// which reads its fields once and hands it back to [`project_batch`].
#[pyclass(frozen, module = "iceberg_ops._native")]
pub struct NativePlan {
    plan: ReconciliationPlan,
}

impl From<ReconciliationPlan> for NativePlan {
    fn from(plan: ReconciliationPlan) -> Self {
        Self { plan }
    }
}

/// One projection as Python sees it: `(dest_name, source_name, dest_arrow_type,
/// fill_with_null)`.
type Projection<'py> = (String, Option<String>, Bound<'py, PyAny>, bool);

#[pymethods]
impl NativePlan {
    /// `(dest_name, source_name, dest_arrow_type, fill_with_null)` per output column.
    fn projections<'py>(&self, py: Python<'py>) -> PyResult<Vec<Projection<'py>>> {
        self.plan
            .projections
            .iter()
            .map(|p| {
                Ok((
                    p.dest_name.clone(),
                    p.source_name.clone(),
                    p.dest_arrow_type.to_pyarrow(py)?,
                    p.fill_with_null,
                ))
            })
            .collect()
    }

    /// `(name, Iceberg type as JSON)` per column to auto-add.
    fn auto_add_columns(&self) -> PyResult<Vec<(String, String)>> {
        self.plan
            .auto_add_columns
            .iter()
            .map(|(name, ty)| {
                let json = serde_json::to_string(ty).map_err(|e| {
                    PyValueError::new_err(format!("type of column {name} does not serialize: {e}"))
                })?;
                Ok((name.clone(), json))
            })
            .collect()
    }

    /// The plan's warnings.
    fn warnings(&self) -> Vec<String> {
        self.plan.warnings.clone()
    }

    /// The schema projected batches have.
    fn dest_arrow_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.plan.dest_arrow_schema.as_ref().to_pyarrow(py)
    }
}

/// A schema as either kind: PyIceberg's JSON of an Iceberg schema (a `str`), or an object
/// with `__arrow_c_schema__` (a `pyarrow.Schema`, or any Arrow producer's).
enum Input {
    Iceberg(Box<iceberg::spec::Schema>),
    Arrow(ArrowSchema),
}

fn of(i: &Input) -> ops_reconcile::SchemaInput<'_> {
    match i {
        Input::Iceberg(s) => ops_reconcile::SchemaInput::Iceberg(s),
        Input::Arrow(s) => ops_reconcile::SchemaInput::Arrow(s),
    }
}

fn input(value: &Bound<'_, PyAny>, argument: &str) -> PyResult<Input> {
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_str()?;
        return serde_json::from_str(text)
            .map(|s| Input::Iceberg(Box::new(s)))
            .map_err(|e| {
                PyValueError::new_err(format!("{argument} is not an Iceberg schema's JSON: {e}"))
            });
    }
    if value.hasattr("__arrow_c_schema__")? {
        return ArrowSchema::from_pyarrow_bound(value).map(Input::Arrow);
    }
    Err(PyTypeError::new_err(format!(
        "{argument} must be a pyiceberg.schema.Schema or a pyarrow.Schema, not {}",
        value.get_type().name()?
    )))
}

/// Computes the plan of `reconciler` (its JSON) from `source_schema` onto `dest_schema`;
/// `upsert` computes an upsert's plan (a `skip` policy refused, keys kept).
#[pyfunction]
#[pyo3(signature = (reconciler, source_schema, dest_schema, upsert=false))]
pub fn compute_plan(
    py: Python<'_>,
    reconciler: &str,
    source_schema: &Bound<'_, PyAny>,
    dest_schema: &Bound<'_, PyAny>,
    upsert: bool,
) -> PyResult<NativePlan> {
    let reconciler: SchemaReconciler = serde_json::from_str(reconciler)
        .map_err(|e| PyValueError::new_err(format!("not a SchemaReconciler: {e}")))?;
    let source = input(source_schema, "source_schema")?;
    let dest = input(dest_schema, "dest_schema")?;
    py.detach(|| {
        if upsert {
            reconciler.compute_upsert_plan(of(&source), of(&dest))
        } else {
            reconciler.compute_plan(of(&source), of(&dest))
        }
    })
    .map(NativePlan::from)
    .map_err(errors::reconcile)
}

/// Projects one batch (any object with `__arrow_c_array__`) through `plan`; returns a
/// `pyarrow.RecordBatch` in `plan`'s destination schema.
#[pyfunction]
pub fn project_batch<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    plan: &NativePlan,
) -> PyResult<Bound<'py, PyAny>> {
    if !batch.hasattr("__arrow_c_array__")? {
        return Err(PyTypeError::new_err(format!(
            "batch must be a pyarrow.RecordBatch (or another object with __arrow_c_array__), \
             not {}",
            batch.get_type().name()?
        )));
    }
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let out = py
        .detach(|| ops_reconcile::project_batch(&batch, &plan.plan))
        .map_err(errors::reconcile)?;
    out.to_pyarrow(py)
}
