//! `CatalogFactory.build(name)` and `normalize_version`: catalogs resolved by name exactly as
//! the CLI resolves them (`.pyiceberg.yaml`, `PYICEBERG_CATALOG__*`, the embedded `sqlite`
//! default), handed to PyIceberg to open.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;

/// The definition of catalog `name`: its kind and its properties under PyIceberg's names
/// (defaults filled in, the embedded default's directories created), for
/// `pyiceberg.catalog.load_catalog(name, **properties)`.
#[pyfunction]
pub fn resolve_catalog(name: &str) -> PyResult<(String, Vec<(String, String)>)> {
    let factory = ops_core::CatalogFactory::from_process(None).map_err(errors::core)?;
    let settings = factory
        .resolve(name)
        .map_err(|e| errors::core(ops_core::Error::from(e)))?;
    ops_core::catalog::prepare_embedded(&settings).map_err(errors::core)?;
    let properties = settings
        .properties()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok((settings.kind().to_string(), properties))
}

/// Checks a catalog as [`crate::migrate::open`] will open it (kind, required keys, values),
/// without connecting: a bad one is a `ValueError` at construction, not at `run()`.
#[pyfunction]
pub fn check_catalog(spec: &str) -> PyResult<()> {
    crate::migrate::CatalogSpec::parse(spec)?
        .settings()
        .map(drop)
        .map_err(errors::core)
}

/// `"2"`, `2` or `"0002"` as `"0002"`.
#[pyfunction]
pub fn normalize_version(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = if let Ok(i) = value.extract::<i64>() {
        if value.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyValueError::new_err(format!(
                "invalid migration version {value}: expected 1-4 decimal digits such as 2 or 0002"
            )));
        }
        i.to_string()
    } else if let Ok(s) = value.extract::<String>() {
        s
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a migration version is a str or an int, not {}",
            value.get_type().name()?
        )));
    };
    ops_runner::normalize_version(text.trim()).map_err(errors::runner)
}

/// The version of the SQLite library the extension's catalogs run on: the process's one, which
/// Python's `sqlite3` module loads too (two copies in one process break each other's locks).
#[pyfunction]
pub fn sqlite_library_version(py: Python<'_>) -> PyResult<String> {
    use sqlx::Connection;
    let interrupt = crate::runtime::Interrupt::default();
    crate::runtime::block_on_detached(py, &interrupt, || async {
        let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
        let version: (String,) = sqlx::query_as("select sqlite_version()")
            .fetch_one(&mut conn)
            .await?;
        Ok::<_, sqlx::Error>(version.0)
    })?
    .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("SQLite: {e}")))
}
