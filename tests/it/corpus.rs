//! The real-world corpus (issue 15): every table of `../shared/corpus/make_corpus.py` through
//! every path that reads, copies, filters, deletes, upserts, overwrites or verifies rows, with
//! PyIceberg 0.12 deciding what the right answer is.
//!
//! One test per (table, path), named `corpus::<table>::<path>`:
//!
//! | path | ours | the expected result (PyIceberg) |
//! |---|---|---|
//! | `copy_auto` | `DataMigrator` into a new table (`create_dest`), `CopyMode::Auto` | a scan of the source |
//! | `copy_rewrite` | the same with `CopyMode::Rewrite` | a scan of the source |
//! | `copy_filter` | the same, `Auto`, with the table's row filter | the source scanned with that filter |
//! | `verify_{auto,rewrite,filter}` | the copy, then `verify` with every method on it, on a clone with one row removed, on a clone with one row duplicated | the copy's verdict above; the clones never match |
//! | `delete` | `DeleteBuilder` with the table's delete filter on `mine.T` | `Table.delete` on `twin.T` |
//! | `upsert` | `WriteMode::Upsert` from `changes.T` into `mine.T` (the composite key for `keys`, `id` elsewhere) | `Table.upsert` on `twin.T` |
//! | `overwrite_partition` | `WriteMode::OverwritePartition` from `incoming.T` into `mine.T` (partitioned tables) | `dynamic_partition_overwrite` (identity specs) or `overwrite` with the partition filter on `twin.T` |
//!
//! The corpus is generated once per test binary (`--rows 3000`, batches of 700 rows or fewer, so
//! every path crosses several batches and files) into `$CARGO_TARGET_TMPDIR/corpus/run-<pid>`,
//! with `tests/py/corpus_oracle.py::prepare` adding, per table, two clones of it (`mine.T`,
//! `twin.T`: the same metadata registered under new names, so both start from the source's exact
//! state) and the upsert and overwrite sources (`changes.T`, `incoming.T`). Each test copies
//! the catalog database into a directory of its own, so tests run in parallel and the corpus's
//! tables are never modified: every write goes to a clone, a twin or a new table. Values are
//! compared in Python, column by column (see `corpus_oracle.compare_arrow`).
//!
//! The script: `ICEBERG_OPS_CORPUS_SCRIPT`, else `tests/corpus/make_corpus.py` (a copy of
//! `../shared/corpus/make_corpus.py`, kept identical by `corpus_copy_matches_shared`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, bail};
use iceberg::TableIdent;
use ops_core::CatalogHandle;
use ops_core::ops::delete::DeleteBuilder;
use ops_datamig::{CopyMode, DataMigrator, MigrationResult, VerifyMethod, WriteMode};
use serde_json::{Value, json};

use crate::common::*;

/// Rows per corpus table (the script's larger tables; some hold a tenth or a quarter).
const ROWS: usize = 3000;
/// Rows per batch for copies: several batches per table and per file.
const COPY_BATCH: usize = 700;
/// Rows per upsert chunk: the upsert sources hold about 500 rows.
const UPSERT_BATCH: usize = 150;
/// Rows per overwrite batch.
const OVERWRITE_BATCH: usize = 250;
/// `verify --method sample` size: smaller than every table.
const SAMPLE: usize = 100;
/// The catalog name the corpus script writes its SQLite rows under.
const CATALOG: &str = "corpus";

/// How one corpus table goes through the matrix.
struct Spec {
    table: &'static str,
    /// Upsert key, and the key rows are paired by when reporting a difference.
    key: &'static [&'static str],
    /// `copy_filter`: a real filter for this table's shape.
    copy_filter: &'static str,
    /// `delete`: the rows to delete.
    delete_filter: &'static str,
    /// Columns `changes.T` alters in its changed rows.
    mutate: &'static [&'static str],
    overwrite: Option<Overwrite>,
}

/// `incoming.T` for `overwrite_partition`: the source's rows in the partitions `filter`
/// selects, some changed in `mutate` (outside the partition columns), one in ten dropped, one
/// in ten repeated under a new id.
struct Overwrite {
    filter: &'static str,
    mutate: &'static [&'static str],
    /// Drop one row in ten from `incoming.T`: only where every such row shares its partition
    /// with rows that stay (else the partition is not replaced and the row rightly survives).
    drop: bool,
    /// PyIceberg's `dynamic_partition_overwrite` (identity transforms only); else `overwrite`
    /// with `filter`.
    dynamic: bool,
}

const SPECS: &[Spec] = &[
    Spec {
        table: "all_types",
        key: &["id"],
        // Integer literals on decimal(9,2) and decimal(38,10); a NOT over a comparison on a
        // double holding NaN (NaN < 1.0 is false, so NOT keeps the row).
        copy_filter: "(dec_small < -485 OR dec_big > 400) AND NOT (d < 1.0)",
        // NaN, +/-inf and -0.0 in `d` and `f`, NULL in `l`, '' among the strings, a
        // timestamptz before the epoch.
        delete_filter: "d >= 500.0 OR s = 'plain' OR f IS NAN OR NOT (l > 0) \
                        OR tstz < '1969-12-31T23:30:00+00:00'",
        mutate: &["s", "d", "dec_big"],
        overwrite: None,
    },
    Spec {
        table: "nested",
        key: &["id"],
        // The partition source, a field inside a struct.
        copy_filter: "address.city = 'c1'",
        delete_filter: "address.city IN ('c2', 'c3') OR address.geo.lat > 25.0",
        mutate: &["tags", "address", "attrs"],
        overwrite: Some(Overwrite {
            filter: "address.city = 'c1' OR address.city IS NULL",
            mutate: &["tags", "items"],
            // PyIceberg's dynamic overwrite names a struct field by its leaf name only.
            dynamic: false,
            drop: true,
        }),
    },
    Spec {
        table: "evolved",
        key: &["id"],
        // `qty` was int in the first files, long after.
        copy_filter: "qty >= 10",
        // `score` widened float -> double (NaN in the last files), `customer` renamed from `name`.
        delete_filter: "score > 300.0 OR customer LIKE 'n1%'",
        mutate: &["customer", "qty", "price"],
        overwrite: Some(Overwrite {
            filter: "region = 'eu'",
            mutate: &["customer", "qty"],
            // The current spec has bucket[8](id) beside identity(region).
            dynamic: false,
            drop: true,
        }),
    },
    Spec {
        table: "transforms",
        key: &["id"],
        // Sources of truncate[10] on decimal(10,2) (an integer literal) and of year(ts).
        copy_filter: "amount < -450 OR ts >= '2030-01-01T00:00:00'",
        // Sources of month(d) and truncate[4](s).
        delete_filter: "d < '1975-01-01' OR s = 'ab'",
        mutate: &["s", "amount"],
        overwrite: Some(Overwrite {
            filter: "flag = true OR flag IS NULL",
            // Every other column is a partition source.
            mutate: &["id"],
            dynamic: false,
            // Eight transforms: most rows are alone in their partition.
            drop: false,
        }),
    },
    Spec {
        table: "keys",
        key: &["tenant", "id", "day"],
        copy_filter: "tenant = 't3' AND day >= '2026-01-02'",
        delete_filter: "id < 50 AND day = '2026-01-01'",
        mutate: &["v", "amount"],
        overwrite: None,
    },
    Spec {
        table: "deleted",
        key: &["id"],
        copy_filter: "region = 'eu' AND qty > 50",
        delete_filter: "qty IS NULL OR id < 0",
        mutate: &["v", "qty"],
        overwrite: Some(Overwrite {
            filter: "region = 'eu' OR region IS NULL",
            mutate: &["v", "qty"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "no_field_ids",
        key: &["id"],
        copy_filter: "amount > 100.0 AND name IS NOT NULL",
        delete_filter: "day < '2025-07-01'",
        mutate: &["name", "amount"],
        overwrite: None,
    },
    Spec {
        table: "wide",
        key: &["id"],
        copy_filter: "c002 > 10.0 AND c150 < 50000",
        delete_filter: "c003 = true",
        mutate: &["c002", "c006", "c010"],
        overwrite: None,
    },
    // Shapes of our own (tests/py/corpus_extra.py).
    Spec {
        table: "reused_names",
        key: &["id"],
        // `legacy` (long, field 5) replaced a string `legacy` (field 2); `b` (string, field 4,
        // renamed from `v`) replaced an int `b` (field 3): old files hold both old columns.
        copy_filter: "legacy > 4500 OR b = 'x'",
        delete_filter: "b IS NULL OR legacy < 5000",
        mutate: &["b", "legacy"],
        overwrite: Some(Overwrite {
            filter: "b = 'x' OR b IS NULL",
            mutate: &["legacy"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "v1_evolved",
        key: &["id"],
        copy_filter: "added >= '2024-06-01' OR amount < -400.0",
        delete_filter: "name LIKE 'm1%' OR region IS NULL",
        mutate: &["name", "amount", "added"],
        overwrite: Some(Overwrite {
            filter: "region = 'eu'",
            mutate: &["amount", "added"],
            dynamic: false,
            drop: true,
        }),
    },
    Spec {
        table: "paged",
        key: &["id"],
        copy_filter: "x > 500.0 AND text IS NOT NULL",
        // PyIceberg 0.12 refuses a decimal literal of another scale (`0.5` on decimal(18,4)).
        delete_filter: "cat = 'c3' OR amount < 0.5000",
        mutate: &["text", "x", "amount"],
        overwrite: None,
    },
    Spec {
        table: "odd_names",
        key: &["id"],
        copy_filter: "\"Order Total\" > 100.0 AND \"größe\" < 20",
        delete_filter: "\"CustomerName\" = 'Çelik' OR lower = 'X'",
        mutate: &["Order Total", "dotted.name", "CustomerName"],
        overwrite: Some(Overwrite {
            // truncate[1]: 'Ada' is the only name under 'A'.
            filter: "\"CustomerName\" = 'Ada' OR \"CustomerName\" IS NULL",
            mutate: &["Order Total", "größe"],
            dynamic: false,
            drop: true,
        }),
    },
    Spec {
        table: "identity_types",
        key: &["id"],
        // An integer literal on an identity-partitioned decimal(6,2); a timestamp before 1970.
        copy_filter: "dec < 0 OR ts < '1970-01-01T00:00:00'",
        delete_filter: "day = '2024-02-29' AND flag = false",
        mutate: &["v", "uid"],
        overwrite: Some(Overwrite {
            filter: "flag = true OR flag IS NULL",
            mutate: &["v", "uid"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "maps",
        key: &["id"],
        copy_filter: "region = 'eu' AND id > 100",
        delete_filter: "id < 300 OR region IS NULL",
        mutate: &["props", "scores", "nested"],
        overwrite: Some(Overwrite {
            filter: "region = 'eu' OR region IS NULL",
            mutate: &["props", "scores"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "widened_partition",
        key: &["id"],
        // Identity partitions on columns widened int->long and float->double: the older
        // files' partition values are int and float, the same partitions' newer ones long and
        // double.
        copy_filter: "qty >= 0 AND score < 1.0",
        delete_filter: "qty = 1 OR score IS NULL",
        mutate: &["note", "qty", "score"],
        overwrite: Some(Overwrite {
            filter: "qty = 0 OR qty IS NULL",
            mutate: &["note"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "escaped_paths",
        key: &["id"],
        // Partition values with `/`, `#`, `%`, `..`, NULL and the string "null".
        copy_filter: "p IN ('a/b', '#?&', '..', 'null') OR p IS NULL",
        delete_filter: "p = '../../../../outside' OR q = '.' AND id < 100",
        mutate: &["v"],
        overwrite: Some(Overwrite {
            filter: "p = 'a/b' OR p IS NULL OR p = '50%'",
            mutate: &["v"],
            dynamic: true,
            drop: true,
        }),
    },
    Spec {
        table: "nested_evolved",
        key: &["id"],
        // A field moved inside a struct and one of a Hive file read through the name mapping.
        copy_filter: "s.a LIKE 'a1%' OR s.z = 'z4' OR region IS NULL",
        delete_filter: "s.z IN ('z2', 'z101', 'z202') OR s.a IS NULL OR id < 20",
        mutate: &["s", "l", "m"],
        overwrite: Some(Overwrite {
            filter: "region = 'eu' OR region IS NULL",
            mutate: &["s", "f"],
            dynamic: true,
            drop: true,
        }),
    },
];

fn spec(table: &str) -> anyhow::Result<&'static Spec> {
    SPECS
        .iter()
        .find(|s| s.table == table)
        .with_context(|| format!("no corpus spec for table '{table}'"))
}

/// The key rows of corpus table `table` are paired by (for other modules' verdicts).
pub(crate) fn key_of(table: &str) -> anyhow::Result<&'static [&'static str]> {
    Ok(spec(table)?.key)
}

fn specs_json() -> Value {
    Value::Array(
        SPECS
            .iter()
            .map(|s| {
                json!({
                    "table": s.table,
                    "key": s.key,
                    "mutate": s.mutate,
                    "overwrite": s.overwrite.as_ref().map(|o| json!({
                        "filter": o.filter,
                        "mutate": o.mutate,
                        "drop": o.drop,
                    })),
                })
            })
            .collect(),
    )
}

// ------------------------------------------------------------------------------ the corpus

/// `make_corpus.py`: `ICEBERG_OPS_CORPUS_SCRIPT`, else the repository's copy in `tests/corpus/`.
///
/// The script's home is `../shared/corpus/` beside the repository, but CI runs on a clean clone
/// that may have nothing beside it, so the repository carries a copy;
/// [`corpus_copy_matches_shared`] keeps the two identical wherever both exist.
pub(crate) fn corpus_script() -> anyhow::Result<PathBuf> {
    let path = match std::env::var_os("ICEBERG_OPS_CORPUS_SCRIPT") {
        Some(p) => PathBuf::from(p),
        None => vendored_script(),
    };
    if !path.is_file() {
        bail!(
            "the corpus script is not at {} (set ICEBERG_OPS_CORPUS_SCRIPT to the path of \
             make_corpus.py)",
            path.display()
        );
    }
    Ok(path)
}

/// CARGO_MANIFEST_DIR is <repo>/tests.
fn vendored_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/make_corpus.py")
}

/// The repository's copies of the corpus script and of the benchmark table's generator
/// (`tests/corpus/gen_source.py`, used by the cluster's tests) are the shared ones, byte for
/// byte, where the shared ones are present (a workstation beside `../shared`); a clean clone
/// without them has only the copies, which are then what the tests run.
#[test]
fn corpus_copy_matches_shared() -> TestResult {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (ours, shared) in [
        (
            "corpus/make_corpus.py",
            "../../shared/corpus/make_corpus.py",
        ),
        ("corpus/gen_source.py", "../../shared/bench/gen_source.py"),
    ] {
        let shared = here.join(shared);
        if !shared.is_file() {
            continue;
        }
        let mine = std::fs::read(here.join(ours)).with_context(|| format!("read tests/{ours}"))?;
        let theirs =
            std::fs::read(&shared).with_context(|| format!("read {}", shared.display()))?;
        anyhow::ensure!(
            mine == theirs,
            "tests/{ours} differs from {}: copy the shared script over it",
            shared.display()
        );
    }
    Ok(())
}

fn sql_props(dir: &Path, warehouse: &Path) -> BTreeMap<String, String> {
    props(&[
        ("type", "sql"),
        ("uri", &format!("sqlite:///{}/catalog.db", dir.display())),
        ("warehouse", &format!("file://{}", warehouse.display())),
    ])
}

/// Set in a case's own process (see [`isolated`]) to the corpus its parent generated.
const CHILD_ENV: &str = "ICEBERG_OPS_CORPUS_CHILD_DIR";

/// The corpus of this test binary: generated on first use, then shared (read-only).
fn corpus() -> anyhow::Result<&'static Path> {
    static CORPUS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CORPUS
        .get_or_init(|| match std::env::var_os(CHILD_ENV) {
            Some(dir) => Ok(PathBuf::from(dir)),
            None => generate().map_err(|e| format!("{e:#}")),
        })
        .as_deref()
        .map_err(|e| anyhow::anyhow!("generating the corpus failed: {e}"))
}

fn generate() -> anyhow::Result<PathBuf> {
    let script = corpus_script()?;
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus");
    remove_stale_runs(&root);
    let dir = root.join(format!("run-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let started = std::time::Instant::now();
    write_corpus(&script, &dir, ROWS)?;
    let p = sql_props(&dir, &dir.join("warehouse"));
    let code = format!(
        "import corpus_oracle as co\nemit(co.prepare(catalog, json.loads({})))",
        py_str(&specs_json().to_string())?
    );
    let prepared = ops_tests::oracle::pyiceberg(CATALOG, &p, &code)?;
    eprintln!(
        "corpus generated in {:.1}s at {}: {prepared}",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(dir)
}

/// Writes every corpus table (`make_corpus.py`, then our own `corpus_extra.py`) with `rows`
/// rows into the SQLite catalog `<dir>/catalog.db`, warehouse `<dir>/warehouse`.
fn write_corpus(script: &Path, dir: &Path, rows: usize) -> TestResult {
    let extra = ops_tests::tools::py_script("corpus_extra.py");
    for script in [script, extra.as_path()] {
        let out = std::process::Command::new(ops_tests::tools::python())
            .arg(script)
            .arg("--warehouse")
            .arg(dir)
            .arg("--rows")
            .arg(rows.to_string())
            .output()
            .with_context(|| format!("run {}", script.display()))?;
        if !out.status.success() {
            bail!(
                "{} failed ({}):\n{}\n{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    Ok(())
}

/// A corpus of the caller's own in `dir` (for tests that change its tables in place, which the
/// shared one must never see), `rows` rows per table: its catalog's properties and the
/// identifiers of its tables (namespace `corpus`), sorted.
pub(crate) async fn private_corpus(
    dir: &Path,
    rows: usize,
) -> anyhow::Result<(BTreeMap<String, String>, CatalogHandle, Vec<TableIdent>)> {
    write_corpus(&corpus_script()?, dir, rows)?;
    let p = sql_props(dir, &dir.join("warehouse"));
    let handle = open(CATALOG, &p).await?;
    let ns = iceberg::NamespaceIdent::new("corpus".into());
    let mut tables = handle.catalog().list_tables(&ns).await?;
    tables.sort_by(|a, b| a.name().cmp(b.name()));
    anyhow::ensure!(
        tables.len() >= SPECS.len(),
        "the corpus has {} tables, the matrix {}: {tables:?}",
        tables.len(),
        SPECS.len()
    );
    Ok((p, handle, tables))
}

/// Removes corpus directories of earlier test runs whose process is gone.
fn remove_stale_runs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("run-")) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A Python string literal (JSON's escapes are Python's).
pub(crate) fn py_str(s: &str) -> anyhow::Result<String> {
    Ok(serde_json::to_string(s)?)
}

pub(crate) fn py_list(items: &[&str]) -> anyhow::Result<String> {
    Ok(serde_json::to_string(items)?)
}

/// One test's catalog: a copy of the corpus's catalog database (the corpus tables, their
/// clones and the prepared sources), new tables in a warehouse of its own.
struct Env {
    _dir: tempfile::TempDir,
    props: BTreeMap<String, String>,
    handle: CatalogHandle,
}

impl Env {
    async fn new() -> anyhow::Result<Self> {
        init_tracing();
        let corpus = corpus()?;
        let dir = tempfile::tempdir()?;
        std::fs::copy(corpus.join("catalog.db"), dir.path().join("catalog.db"))?;
        let props = sql_props(dir.path(), &dir.path().join("wh"));
        let handle = open(CATALOG, &props).await?;
        Ok(Self {
            _dir: dir,
            props,
            handle,
        })
    }

    fn oracle(&self, code: &str) -> anyhow::Result<Value> {
        ops_tests::oracle::pyiceberg(
            CATALOG,
            &self.props,
            &format!("import corpus_oracle as co\n{code}"),
        )
    }
}

fn ident(ns: &str, table: &str) -> anyhow::Result<TableIdent> {
    Ok(TableIdent::from_strs([ns, table])?)
}

/// Fails with PyIceberg's problems unless its verdict is `equal`.
pub(crate) fn expect_equal(what: &str, verdict: &Value, ours: &str) -> TestResult {
    if verdict["equal"] == json!(true) {
        return Ok(());
    }
    let lines: Vec<String> = verdict["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(verdict["notes"].as_array().into_iter().flatten())
        .map(|p| format!("  - {}", p.as_str().unwrap_or_default()))
        .collect();
    bail!(
        "{what}: the result differs from PyIceberg's ({} rows expected, {} read)\n{}\nours: {ours}\n{}",
        verdict["expected_rows"],
        verdict["actual_rows"],
        lines.join("\n"),
        verdict
            .get("pyiceberg")
            .map(|p| format!("pyiceberg: {p}"))
            .unwrap_or_default()
    )
}

fn describe(r: &MigrationResult) -> String {
    format!(
        "rows_moved={} batches={} files copied/rewritten/skipped={}/{}/{} rows_inserted={:?} rows_updated={:?}",
        r.rows_moved,
        r.batches_committed,
        r.files_copied,
        r.files_rewritten,
        r.files
            .iter()
            .filter(|f| f.route == ops_datamig::FileRoute::Skip)
            .count(),
        r.rows_inserted,
        r.rows_updated
    )
}

// ------------------------------------------------------------------------------ the paths

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyPath {
    Auto,
    Rewrite,
    Filter,
}

impl CopyPath {
    fn filter(self, spec: &Spec) -> Option<&'static str> {
        (self == CopyPath::Filter).then_some(spec.copy_filter)
    }
}

fn copy_migrator(
    env: &Env,
    spec: &Spec,
    how: CopyPath,
    dest: &str,
) -> anyhow::Result<DataMigrator> {
    let mut m = DataMigrator::new(
        &env.handle,
        ident("corpus", spec.table)?,
        &env.handle,
        ident("dst", dest)?,
    )
    .create_dest(true)
    .batch_rows(COPY_BATCH)
    .copy_mode(if how == CopyPath::Rewrite {
        CopyMode::Rewrite
    } else {
        CopyMode::Auto
    });
    if let Some(f) = how.filter(spec) {
        m = m.row_filter(f);
    }
    Ok(m)
}

async fn run_copy(env: &Env, spec: &Spec, how: CopyPath) -> anyhow::Result<(DataMigrator, String)> {
    let mut m = copy_migrator(env, spec, how, spec.table)?;
    let result = m
        .run()
        .await
        .with_context(|| format!("{} copy {how:?}: migrate-data failed", spec.table))?;
    Ok((m, describe(&result)))
}

fn copy_verdict(env: &Env, spec: &Spec, how: CopyPath) -> anyhow::Result<Value> {
    let filter = match how.filter(spec) {
        Some(f) => py_str(f)?,
        None => "None".into(),
    };
    env.oracle(&format!(
        "emit(co.copy_verdict(catalog, 'corpus.{t}', 'dst.{t}', {filter}, {key}))",
        t = spec.table,
        key = py_list(spec.key)?
    ))
}

async fn copy(table: &str, how: CopyPath) -> TestResult {
    let spec = spec(table)?;
    let env = Env::new().await?;
    let (_, ours) = run_copy(&env, spec, how).await?;
    let verdict = copy_verdict(&env, spec, how)?;
    expect_equal(&format!("{table} copy {how:?}"), &verdict, &ours)
}

/// A destination to verify, what it is, and the `matches` each method must report.
type VerifyCase<'a> = (&'a DataMigrator, String, Vec<(VerifyMethod, bool)>);

/// Every verify method on the copy (it must agree with PyIceberg's verdict on it), on a clone
/// with one row removed and on one with a row duplicated (neither may match).
async fn verify(table: &str, how: CopyPath) -> TestResult {
    let spec = spec(table)?;
    let env = Env::new().await?;
    let (m, ours) = run_copy(&env, spec, how)
        .await
        .context("the copy failed, so verify was not reached")?;
    let out = env.oracle(&format!(
        "v = co.copy_verdict(catalog, 'corpus.{t}', 'dst.{t}', {filter}, {key})\n\
         f = co.verify_fixtures(catalog, 'dst.{t}', {key}, {column})\n\
         emit({{'verdict': v, 'fixtures': f}})",
        t = spec.table,
        filter = match how.filter(spec) {
            Some(f) => py_str(f)?,
            None => "None".into(),
        },
        key = py_list(spec.key)?,
        column = py_str(spec.mutate[0])?
    ))?;
    let copy_equal = out["verdict"]["equal"] == json!(true);
    let removed = &out["fixtures"]["removed"];
    let changed = &out["fixtures"]["changed"];
    let minus = copy_migrator(&env, spec, how, &format!("{table}_minus"))?;
    let plus = copy_migrator(&env, spec, how, &format!("{table}_plus"))?;
    let edited = copy_migrator(&env, spec, how, &format!("{table}_changed"))?;
    use VerifyMethod::{PartitionHash, RowCount, Sample};
    let all = |want: bool| vec![(RowCount, want), (PartitionHash, want), (Sample, want)];
    let cases: [VerifyCase; 4] = [
        (
            &m,
            format!(
                "the copy (PyIceberg: {})",
                if copy_equal { "equal" } else { "differs" }
            ),
            all(copy_equal),
        ),
        (
            &minus,
            format!("the copy less the row {removed}"),
            all(false),
        ),
        (
            &plus,
            format!("the copy plus a second row {removed}"),
            all(false),
        ),
        // Same row count: row_count matches by design, a sample may miss the row; the
        // per-partition digest must not.
        (
            &edited,
            format!("the copy with one value changed {changed}"),
            if copy_equal {
                vec![(RowCount, true), (PartitionHash, false)]
            } else {
                vec![(PartitionHash, false)]
            },
        ),
    ];
    let mut problems = Vec::new();
    for (migrator, what, expected) in cases {
        for (method, want) in expected {
            match migrator.verify(method, SAMPLE).await {
                Ok(v) if v.matches == want => {}
                Ok(v) => problems.push(format!(
                    "{what}: {method} says matches={} (source {:?}, dest {:?}, details {:?})",
                    v.matches, v.source_count, v.dest_count, v.details
                )),
                Err(e) => problems.push(format!("{what}: {method} failed: {e}")),
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "{table} verify after copy {how:?} ({ours}):\n  - {}",
            problems.join("\n  - ")
        );
    }
    Ok(())
}

async fn delete(table: &str) -> TestResult {
    let spec = spec(table)?;
    let env = Env::new().await?;
    let (_, metrics, preview) = DeleteBuilder::new(&env.handle, ident("mine", table)?)
        .with_filter_text(spec.delete_filter)
        .execute_with_report()
        .await
        .with_context(|| format!("{table} delete {:?} failed", spec.delete_filter))?;
    let verdict = env.oracle(&format!(
        "emit(co.twin_delete(catalog, 'twin.{table}', {filter}, {key}))",
        filter = py_str(spec.delete_filter)?,
        key = py_list(spec.key)?
    ))?;
    expect_equal(
        &format!("{table} delete {:?}", spec.delete_filter),
        &verdict,
        &format!(
            "deleted_rows={} snapshot={}",
            preview.deleted_rows, metrics.snapshot_id
        ),
    )
}

async fn upsert(table: &str) -> TestResult {
    let spec = spec(table)?;
    let env = Env::new().await?;
    let result = DataMigrator::new(
        &env.handle,
        ident("changes", table)?,
        &env.handle,
        ident("mine", table)?,
    )
    .write_mode(WriteMode::Upsert)
    .upsert_keys(spec.key.iter().copied())
    .batch_rows(UPSERT_BATCH)
    .run()
    .await
    .with_context(|| format!("{table} upsert on {:?} failed", spec.key))?;
    let verdict = env.oracle(&format!(
        "emit(co.twin_upsert(catalog, '{table}', {key}))",
        key = py_list(spec.key)?
    ))?;
    expect_equal(
        &format!("{table} upsert on {:?}", spec.key),
        &verdict,
        &describe(&result),
    )
}

async fn overwrite_partition(table: &str) -> TestResult {
    let spec = spec(table)?;
    let ow = spec
        .overwrite
        .as_ref()
        .with_context(|| format!("{table} has no overwrite spec"))?;
    let env = Env::new().await?;
    let result = DataMigrator::new(
        &env.handle,
        ident("incoming", table)?,
        &env.handle,
        ident("mine", table)?,
    )
    .write_mode(WriteMode::OverwritePartition)
    .batch_rows(OVERWRITE_BATCH)
    .run()
    .await
    .with_context(|| format!("{table} overwrite_partition failed"))?;
    let verdict = env.oracle(&format!(
        "emit(co.twin_overwrite(catalog, '{table}', {filter}, {dynamic}, {key}))",
        filter = py_str(ow.filter)?,
        dynamic = if ow.dynamic { "True" } else { "False" },
        key = py_list(spec.key)?
    ))?;
    expect_equal(
        &format!("{table} overwrite_partition of {:?}", ow.filter),
        &verdict,
        &describe(&result),
    )
}

async fn run(table: &str, path: &str) -> TestResult {
    match path {
        "copy_auto" => copy(table, CopyPath::Auto).await,
        "copy_rewrite" => copy(table, CopyPath::Rewrite).await,
        "copy_filter" => copy(table, CopyPath::Filter).await,
        "verify_auto" => verify(table, CopyPath::Auto).await,
        "verify_rewrite" => verify(table, CopyPath::Rewrite).await,
        "verify_filter" => verify(table, CopyPath::Filter).await,
        "delete" => delete(table).await,
        "upsert" => upsert(table).await,
        "overwrite_partition" => overwrite_partition(table).await,
        other => bail!("unknown corpus path '{other}'"),
    }
}

/// Runs one case in a process of its own (this test binary, filtered to the case), so a
/// stack overflow — a composite-key upsert of 150 keys overflows today, issue 15 item 4 —
/// fails that case instead of aborting every test of the binary.
async fn isolated(table: &str, path: &str) -> TestResult {
    if std::env::var_os(CHILD_ENV).is_some() {
        return run(table, path).await;
    }
    let dir = corpus()?;
    let name = format!("corpus::{table}::{path}");
    let out = tokio::process::Command::new(std::env::current_exe()?)
        .args([name.as_str(), "--exact", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        // The case's error, not anyhow's backtrace of where it was made.
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .await
        .with_context(|| format!("start {name} in a process of its own"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.contains("1 passed") {
        return Ok(());
    }
    // libtest's report of the one test: its error, or the panic and the abort on stderr.
    let report = stdout
        .split_once(&format!("---- {name} stdout ----"))
        .map_or(stdout.as_ref(), |(_, r)| r)
        .split("\nfailures:\n")
        .next()
        .unwrap_or_default()
        .trim();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr.trim();
    let start = (stderr.len().saturating_sub(4000)..stderr.len())
        .find(|&i| stderr.is_char_boundary(i))
        .unwrap_or(0);
    let tail = &stderr[start..];
    bail!("{name} failed ({}):\n{report}\n{tail}", out.status)
}

/// `table: [path, ...];` → `corpus::table::path` tests.
/// `table: [path, ...]`; a path may carry attributes, e.g. `#[ignore = "why"]` for a case that
/// still fails on main (listed in docs/testing.md and the issue; `--ignored` runs them).
macro_rules! matrix {
    ($($table:ident: [$($(#[$attr:meta])* $path:ident),* $(,)?];)*) => {
        $(mod $table {
            $($(#[$attr])* #[tokio::test(flavor = "multi_thread")]
            async fn $path() -> crate::common::TestResult {
                super::isolated(stringify!($table), stringify!($path)).await
            })*
        })*
    };
}

matrix! {
    all_types: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
    ];
    nested: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    evolved: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    transforms: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    keys: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
    ];
    deleted: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    no_field_ids: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
    ];
    wide: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
    ];
    reused_names: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    v1_evolved: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    paged: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
    ];
    odd_names: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    identity_types: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    maps: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    widened_partition: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    escaped_paths: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
    nested_evolved: [
        copy_auto,
        copy_rewrite,
        copy_filter,
        verify_auto,
        verify_rewrite,
        verify_filter,
        delete,
        upsert,
        overwrite_partition,
    ];
}
