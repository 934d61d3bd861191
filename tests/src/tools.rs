//! Where the external tools are.

use std::path::{Path, PathBuf};

fn cache_dir() -> PathBuf {
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/iceberg-ops")
}

fn locate(var: &str, default: PathBuf) -> PathBuf {
    let path = std::env::var_os(var).map_or(default, PathBuf::from);
    assert!(
        path.is_file(),
        "{} not found (set {var} or run scripts/test, which installs it)",
        path.display()
    );
    path
}

/// The venv's Python with pyiceberg, pyarrow and moto.
pub fn python() -> PathBuf {
    locate("ICEBERG_OPS_PYTHON", cache_dir().join("venv/bin/python"))
}

/// The rustberg binary.
pub fn rustberg() -> PathBuf {
    locate(
        "ICEBERG_OPS_RUSTBERG",
        cache_dir().join("tools/bin/rustberg"),
    )
}

/// `tests/py/<name>` in this checkout.
pub fn py_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("py").join(name)
}
