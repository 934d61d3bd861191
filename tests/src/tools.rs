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

/// The directory holding PostgreSQL's server tools (`initdb`, `postgres`, `pg_ctl`, `pg_isready`,
/// `createdb`): `ICEBERG_OPS_PG_BIN`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian
/// and Ubuntu keep them there, off PATH), else the directory of an `initdb` on PATH.
pub fn pg_bin() -> PathBuf {
    const INSTALL: &str = "install PostgreSQL (Debian/Ubuntu: apt-get install postgresql; \
                           scripts/test does this) or set ICEBERG_OPS_PG_BIN to the directory \
                           holding initdb, postgres and pg_ctl";
    if let Some(dir) = std::env::var_os("ICEBERG_OPS_PG_BIN").map(PathBuf::from) {
        assert!(
            dir.join("initdb").is_file(),
            "ICEBERG_OPS_PG_BIN={} holds no initdb; {INSTALL}",
            dir.display()
        );
        return dir;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .find(|dir| dir.join("initdb").is_file())
        .unwrap_or_else(|| panic!("PostgreSQL's initdb was not found; {INSTALL}"))
}

/// The account PostgreSQL runs as when the tests run as root (it refuses root):
/// `ICEBERG_OPS_PG_USER`, default `iceberg-ops-pg`, which scripts/test creates.
pub fn pg_user() -> String {
    std::env::var("ICEBERG_OPS_PG_USER").unwrap_or_else(|_| "iceberg-ops-pg".into())
}
