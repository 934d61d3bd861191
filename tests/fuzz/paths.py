"""The iceberg-ops paths a case runs, each judged with PyIceberg as the oracle.

Every path gets the case's built source table `src.t` in a catalog of its own (a SQLite
PyIceberg SqlCatalog with a local warehouse, which the `iceberg-ops` CLI reads through the
case's `.pyiceberg.yaml`). Paths that write into a table work on clones (`mine.t`, `twin.t`:
the source's metadata registered under new names, so both start from its exact state); the
maintenance paths that delete files (orphan cleanup, expiry) run on the source itself, last.

A path ends as one of:
- pass: iceberg-ops did what PyIceberg says is right;
- fail: a crash or panic, wrong rows, a lost ref, a live file deleted, a file outside the table's
  data location, an error on a shape iceberg-ops does not document as unsupported;
- refused: iceberg-ops declined with a clear error on a shape it documents as unsupported
  (REFUSALS below, each with where the docs say so);
- no-oracle: PyIceberg could not judge (it refused the table or the operation, or could not
  read the source);
- skip: the path does not apply to this table (nothing to judge).
"""

import datetime as dt
import decimal
import json
import os
import random
import re
import subprocess
import time

import pyarrow as pa

import build
import gen
import judge
from judge import NoOracle

# ---------------------------------------------------------------- refusals iceberg-ops documents

# (pattern on the error, where iceberg-ops documents the shape as unsupported)
REFUSALS = [
    (r"NULL key|NaN key|a NULL .*key|key .*is NULL|key .*is NaN",
     "docs/datamig.md, Write modes: upsert refuses a NULL or NaN key"),
    (r"holds .*more than once|duplicate rows|more than one row",
     "docs/datamig.md, Write modes: upsert refuses a key the destination holds in more than one row"),
    (r"--copy-mode (files|reference)|cannot be copied|copy-mode files|no file can be copied",
     "docs/datamig.md, Copy modes: files/reference refuse tables that do not allow a copy"),
    (r"is unpartitioned, so overwrite_partition would replace the whole table",
     "seed 000 (DataMigrator): overwrite_partition needs a partitioned (identity) destination; "
     "docs/datamig.md does not say it of unpartitioned tables"),
    (r"widened.*delete files|delete files.*widened",
     "docs/datamig.md, Not yet: a source whose partition column was widened, with delete files"),
    (r"gc\.enabled",
     "docs/maintenance.md, What they refuse: gc.enabled=false"),
    (r"format version 3|v3 ",
     "docs/operations.md: v3 tables are refused"),
]


def refusal(message):
    for pat, doc in REFUSALS:
        if re.search(pat, message, re.IGNORECASE):
            return doc
    return None


# ---------------------------------------------------------------- the environment


class Cli:
    """One iceberg-ops run."""

    def __init__(self, args, rc, out, err, secs):
        self.args, self.rc, self.out, self.err, self.secs = args, rc, out, err, secs

    @property
    def message(self):
        lines = [ln for ln in self.err.splitlines() if ln.startswith("iceberg-ops: ")]
        if lines:
            return lines[-1][len("iceberg-ops: "):]
        tail = [ln for ln in self.err.splitlines() if ln.strip()]
        return tail[-1] if tail else f"exit {self.rc}"

    @property
    def panic(self):
        """`message (at file:line)` of a panic, or None."""
        lines = self.err.splitlines()
        for i, ln in enumerate(lines):
            if "panicked at" in ln:
                where = ln.split("panicked at", 1)[1].strip().rstrip(":")
                where = re.sub(r"^.*?/(crates|src|registry/src/[^/]+)/", r"\1/", where)
                msg = lines[i + 1].strip() if i + 1 < len(lines) else ""
                return f"{msg} (at {where})"
        return None

    @property
    def crashed(self):
        return self.rc < 0 or "panicked at" in self.err or self.rc not in (0, 1, 2)

    def json(self):
        try:
            return json.loads(self.out)
        except ValueError:
            return None

    def shown(self):
        return "iceberg-ops " + " ".join(_sh(a) for a in self.args)


def _sh(a):
    return a if re.fullmatch(r"[\w./:=,@%+-]+", a) else "'" + a.replace("'", "'\\''") + "'"


class Env:
    """A case's directory: catalog.db, warehouse/, .pyiceberg.yaml for iceberg-ops."""

    def __init__(self, root, binary):
        from pyiceberg.catalog.sql import SqlCatalog
        self.root = os.path.abspath(root)
        self.binary = binary
        os.makedirs(os.path.join(self.root, "warehouse"), exist_ok=True)
        uri = f"sqlite:///{self.root}/catalog.db"
        wh = f"file://{self.root}/warehouse"
        self.catalog = SqlCatalog("fuzz", uri=uri, warehouse=wh)
        for ns in ("src", "mine", "twin", "ch", "inc", "dst"):
            self.catalog.create_namespace_if_not_exists(ns)
        self.config = os.path.join(self.root, ".pyiceberg.yaml")
        with open(self.config, "w") as f:
            f.write(f"catalog:\n  fuzz:\n    type: sql\n    uri: {uri}\n    warehouse: {wh}\n")
        self.runs = []

    def cli(self, *args, timeout=300):
        args = list(args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_") and k != "RUST_LOG"}
        env["HOME"] = self.root
        # The panic's message and location are what a report needs; the backtrace is long.
        env["RUST_BACKTRACE"] = "0"
        t0 = time.time()
        try:
            p = subprocess.run([self.binary, "--config", self.config] + args, cwd=self.root, env=env,
                               capture_output=True, text=True, timeout=timeout)
            r = Cli(args, p.returncode, p.stdout, p.stderr, time.time() - t0)
        except subprocess.TimeoutExpired as e:
            r = Cli(args, -999, e.stdout or "", (e.stderr or "") + f"\n(timed out after {timeout}s)",
                    time.time() - t0)
        self.runs.append(r)
        return r

    def load(self, ident):
        return self.catalog.load_table(ident)

    def clone(self, ident, source="src.t"):
        src = self.load(source)
        try:
            self.catalog.drop_table(ident)
        except Exception:  # noqa: BLE001 - not there
            pass
        return self.catalog.register_table(ident, src.metadata_location)


# ---------------------------------------------------------------- results


class Result:
    def __init__(self, path):
        self.path = path
        self.status = "pass"
        self.problems = []
        self.kind = None
        self.notes = []
        self.message = None

    def fail(self, kind, problem):
        if self.status != "fail":
            self.status = "fail"
            self.kind = kind
        self.problems.append(problem)
        return self

    def set(self, status, message):
        if self.status == "fail":
            # A failure already found stands; what came after is only noted.
            self.notes.append(f"then {status}: {message}")
            return self
        self.status = status
        self.message = message
        return self

    @property
    def signature(self):
        return f"{self.path}:{self.kind}" if self.status == "fail" else None

    def to_json(self):
        return {"path": self.path, "status": self.status, "kind": self.kind, "problems": self.problems[:8],
                "notes": self.notes[:8], "message": self.message}


def normalise(message):
    """An error message with its specifics (quoted names, numbers, paths) masked, for grouping."""
    m = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "?", message)
    m = re.sub(r"(file:|s3:)?/[^\s,;:)]+", "<path>", m)
    m = re.sub(r"\d+", "N", m)
    return m[:90]


def cli_outcome(res, r):
    """Classifies a non-zero iceberg-ops run; returns False when the path should stop."""
    if r.crashed:
        panic = r.panic
        if panic:
            msg, _, where = panic.rpartition(" (at ")
            res.fail("panic:" + normalise(msg) + " @" + os.path.basename(where.split(":")[0]),
                     f"{r.shown()} panicked: {panic}")
        else:
            res.fail("crash", f"{r.shown()} crashed (exit {r.rc}):\n{r.err[-2000:]}")
        return False
    if r.rc == 0:
        return True
    doc = refusal(r.message)
    if doc:
        res.set("refused", f"{r.message}  [{doc}]")
        return False
    if r.rc == 2:
        res.fail("usage:" + normalise(r.message), f"{r.shown()}: usage error: {r.message}")
        return False
    res.fail("error:" + normalise(r.message), f"{r.shown()} failed (exit {r.rc}): {r.message}")
    return False


# ---------------------------------------------------------------- helpers


def key_of(case, schema):
    k = case.get("key")
    return [k] if k and any(f.name == k for f in schema.fields) else []


def read_or_no_oracle(table, what, **kw):
    try:
        return judge.read(table, **kw)
    except Exception as e:  # noqa: BLE001 - PyIceberg cannot read it: it cannot judge
        raise NoOracle(f"PyIceberg cannot read {what}: {type(e).__name__}: {str(e)[:300]}") from e


def read_ours(res, table, what, **kw):
    """PyIceberg's read of a table iceberg-ops wrote: failing to read it is a failure."""
    try:
        return judge.read(table, **kw)
    except Exception as e:  # noqa: BLE001
        res.fail("unreadable", f"PyIceberg cannot read {what}: {type(e).__name__}: {str(e)[:400]}")
        return None


def check_refs(res, before, table, moved=("main",)):
    after = judge.refs_of(table)
    for name, (sid, kind) in before.items():
        if name in moved:
            continue
        if name not in after:
            res.fail("ref-lost", f"ref '{name}' ({kind} at {sid}) is gone after the command; refs now: {sorted(after)}")
        elif after[name][0] != sid:
            res.fail("ref-moved", f"ref '{name}' moved from {sid} to {after[name][0]}")


def check_new_files(res, table, before_files, exempt=False):
    if exempt:
        return
    new = judge.all_data_files(table) - before_files
    for p in judge.outside_problems(table, new):
        res.fail("outside" if "outside" in p else "bad-path", p)


def snapshot_reads(table, ids):
    """{snapshot id: Counter of rows} for the snapshots PyIceberg can read (others left out)."""
    out = {}
    for sid in ids:
        try:
            out[sid] = judge.rows_of(judge.read(table, snapshot_id=sid))
        except Exception:  # noqa: BLE001 - PyIceberg cannot time-travel there: not judged
            pass
    return out


def rng_for(case, path):
    return random.Random(f"{case['seed']}:{path}")


def model_of(schema):
    """gen.py's field model of a PyIceberg schema (to draw new rows in its current shape)."""
    from pyiceberg.types import ListType, MapType, StructType

    def t_of(t):
        if isinstance(t, StructType):
            return {"struct": [f_of(f) for f in t.fields]}
        if isinstance(t, ListType):
            return {"list": t_of(t.element_type), "element_required": t.element_required}
        if isinstance(t, MapType):
            return {"map": [t_of(t.key_type), t_of(t.value_type)], "value_required": t.value_required}
        s = str(t)
        if s.startswith("decimal"):
            return s.replace(" ", "")
        if s.startswith("fixed"):
            return s
        return s

    def f_of(f):
        return {"name": f.name, "type": t_of(f.field_type), "required": f.required}

    return [f_of(f) for f in schema.fields]


def filter_cols_and_values(table, arrow):
    """Filterable columns [(path, gen type)] of the table and the values its rows hold."""
    fields = model_of(table.schema())
    cols = [(p, t) for p, t in gen.walk_prims(fields) if gen.filterable(t)]
    values = {}
    rows = arrow.to_pylist()
    for p, t in cols:
        vs = []
        for r in rows:
            v = judge._get(r, p)
            if v is not None and gen.prim_kind(t) == "uuid" and isinstance(v, bytes):
                v = judge._uuid(v)
            if v is not None:
                vs.append(v)
        values[p] = vs[:30]
    return cols, values


def pyiceberg_rows(table, arrow):
    """Rows of a PyIceberg read as plain dicts fit for gen.enc (uuids as UUID objects)."""
    from pyiceberg.types import UUIDType
    uuid_cols = [f.name for f in table.schema().fields if isinstance(f.field_type, UUIDType)]
    out = []
    for r in arrow.to_pylist():
        for c in uuid_cols:
            if isinstance(r.get(c), bytes):
                r[c] = judge._uuid(r[c])
        out.append(r)
    return out


def new_key_rows(case, table, rng, n, start):
    """n rows in the table's current shape with keys nobody holds yet."""
    fields = model_of(table.schema())
    key = case.get("key")
    kf = next((f for f in fields if f["name"] == key), None)
    prof = gen.Profile(rng)
    rows = []
    for i in range(n):
        r = {f["name"]: gen.gen_value(rng, prof, f["type"], f["required"], (f["name"],)) for f in fields}
        if kf is not None:
            r[key] = gen.key_value(_key_type(kf["type"]), start + i)
        rows.append(r)
    return rows


def _key_type(t):
    k = gen.prim_kind(t)
    return t if k in ("int", "long", "string", "decimal", "uuid", "date") else "long"


def mutate_row(rng, case, table, row, avoid=()):
    fields = model_of(table.schema())
    cands = [f for f in fields if f["name"] != case.get("key") and f["name"] not in avoid]
    if not cands:
        return dict(row)
    f = rng.choice(cands)
    prof = gen.Profile(rng)
    r = dict(row)
    for _ in range(5):
        v = gen.gen_value(rng, prof, f["type"], f["required"], (f["name"],))
        if repr(v) != repr(row.get(f["name"])):
            r[f["name"]] = v
            break
    return r


# ---------------------------------------------------------------- params (drawn once per case)


def make_params(env, case, path):
    """What `path` needs that is drawn from the built table; stored in the case and replayed."""
    rng = rng_for(case, path)
    src = env.load("src.t")
    p = {"batch_rows": rng.choice([1, 3, 7, 50, 100000]), "workers": rng.choice([1, 2])}
    try:
        arrow = judge.read(src)
    except Exception:  # noqa: BLE001 - paths will find out
        arrow = None
    if path in ("copy_filter", "delete", "verify", "py_filter"):
        if arrow is not None:
            cols, values = filter_cols_and_values(src, arrow)
            p["filter"] = gen.gen_filter(rng, cols, values)
        if path == "copy_filter":
            p["mode"] = rng.choice(["auto", "rewrite"])
        if path == "verify":
            if rng.random() < 0.5:
                p.pop("filter", None)
            p["mode"] = rng.choice(["auto", "rewrite"])
            p["sample_size"] = rng.choice([1, 2, 5, 100000])
    elif path in ("upsert", "overwrite_partition") and arrow is not None:
        rows = pyiceberg_rows(src, arrow)
        rng.shuffle(rows)
        start = 100000 + rng.randint(0, 1000)
        if path == "upsert":
            picked = rows[: rng.randint(0, 6)]
            out = [mutate_row(rng, case, src, r) if i % 2 == 0 else r for i, r in enumerate(picked)]
            out += new_key_rows(case, src, rng, rng.randint(0, 4), start)
        else:
            spec_sources = {build.path_of_id(src.schema(), pf.source_id)[0] for pf in src.spec().fields
                            if build.path_of_id(src.schema(), pf.source_id)}
            picked = rows[: rng.randint(0, 5)]
            out = [mutate_row(rng, case, src, r, avoid=spec_sources) for r in picked]
            # New keys in the partitions touched, and a couple of rows of new partitions.
            fresh = new_key_rows(case, src, rng, rng.randint(0, 3), start)
            for i, r in enumerate(fresh):
                if picked and i % 2 == 0:
                    base = rng.choice(picked)
                    for s in spec_sources:
                        r[s] = base.get(s)
            out += fresh
        p["rows"] = [gen.enc_row(r) for r in out]
    elif path == "compact":
        p["target"] = rng.choice([None, 1, 2000, 10 ** 9])
        p["min_input_files"] = rng.choice([1, 2, 5])
        p["to_current_spec"] = rng.random() < 0.3
        if arrow is not None and rng.random() < 0.25:
            # --sort-by takes bare names (a space ends the term): simple names only.
            prims = [(pp, t) for pp, t in gen.walk_prims(model_of(src.schema()))
                     if len(pp) == 1 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", pp[0])]
            if prims:
                p["sort_by"] = rng.choice(prims)[0][0]
    elif path == "expire":
        p["retain_last"] = rng.choice([1, 1, 2, 3])
    elif path == "maintain":
        p["target"] = rng.choice([None, 1, 2000, 10 ** 9])
        p["min_input_files"] = rng.choice([1, 2, 5])
        p["max_snapshot_age"] = rng.choice([None, None, "1s"])
        p["rewrite_old_spec_files"] = rng.random() < 0.3
    elif path == "import" and arrow is not None:
        p.update(import_params(rng, src, arrow))
    elif path == "orphans":
        p["junk"] = rng.sample(["data/junk-orphan.parquet", "metadata/junk-orphan.avro",
                                "data/p=x/junk.parquet", "junk-top.txt", "data/.hidden-junk",
                                "metadata/snap-junk.avro"], rng.randint(1, 4))
    return p


# ---------------------------------------------------------------- copy


def copy_cmd(env, case, dest, mode, params, row_filter_text=None):
    args = ["migrate-data", "--source-catalog", "fuzz", "--source", "src.t", "--dest", dest, "--create-dest",
            "--copy-mode", mode, "--batch-rows", str(params["batch_rows"]), "--workers", str(params["workers"]),
            "--output", "json"]
    if row_filter_text is not None:
        args += ["--row-filter", row_filter_text]
    return env.cli(*args)


def run_copy(env, case, path, params):
    res = Result(path)
    mode = path.split("_", 1)[1] if path != "copy_filter" else params.get("mode", "auto")
    src = env.load("src.t")
    try:
        everything = read_or_no_oracle(src, "the source")
        ast = params.get("filter") if path == "copy_filter" else None
        if path == "copy_filter" and ast is None:
            return res.set("skip", "no filter (the source could not be read when params were drawn)")
        text = judge.sql_text(ast, src.schema()) if ast is not None else None
        if ast is not None:
            expected, _ = judge.filter_arrow(everything, ast, src.schema())
            res.notes += pyiceberg_filter_agreement(src, ast, expected)
        else:
            expected = everything
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    dest = f"dst.{path}"
    r = copy_cmd(env, case, dest, mode, params, text)
    if not cli_outcome(res, r):
        return res
    d = env.load(dest)
    actual = read_ours(res, d, f"the destination {dest}")
    if actual is None:
        return res
    key = key_of(case, src.schema())
    for p in judge.same_rows(expected, actual, key):
        res.fail("rows", p)
    for p in judge.schema_problems(src.schema(), d.schema()):
        res.fail("schema", p)
    shared = judge.all_data_files(d) & judge.all_data_files(src)
    check_new_files(res, d, shared)
    # A copy's own files belong to the destination: none may land in the source's locations.
    src_roots = [os.path.normpath(judge.local(r)) for r in judge.data_locations(src)]
    dst_root = os.path.normpath(judge.local(d.metadata.location))
    for p in sorted(judge.all_data_files(d) - shared):
        n = os.path.normpath(judge.local(p))
        if any(n.startswith(r + "/") for r in src_roots) and not n.startswith(dst_root + "/"):
            res.fail("writes-into-source", f"the copy wrote {p} into the source's data location {src_roots}")
    if shared and d.properties.get("gc.enabled") != "false":
        res.fail("reference-gc", f"the copy references {len(shared)} of the source's files but leaves "
                 f"gc.enabled={d.properties.get('gc.enabled')!r}, not 'false' (docs/datamig.md, Copy modes)")
    if shared and mode != "reference":
        res.fail("shares-files", f"a {mode} copy references {len(shared)} of the source's files instead of copies")
    return res


def pyiceberg_filter_agreement(table, ast, expected):
    """A note where PyIceberg's own filtered scan differs from SQL's three-valued logic (its
    documented departures: NOT IN and != with NULLs, -0.0 in IN lists) or cannot run."""
    try:
        theirs = judge.read(table, row_filter=build.py_filter(ast))
    except Exception as e:  # noqa: BLE001
        return [f"PyIceberg's filtered scan cannot run ({type(e).__name__}: {str(e)[:120]}); SQL evaluation decides"]
    diff = judge.same_rows(expected, theirs)
    if diff:
        return ["PyIceberg's filtered scan departs from SQL three-valued logic (SQL decides): " + diff[0][:300]]
    return []


# ---------------------------------------------------------------- verify


def run_verify(env, case, path, params):
    res = Result(path)
    src = env.load("src.t")
    ast = params.get("filter")
    try:
        everything = read_or_no_oracle(src, "the source")
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    text = judge.sql_text(ast, src.schema()) if ast is not None else None
    expected = judge.filter_arrow(everything, ast, src.schema())[0] if ast is not None else everything
    dest = "dst.verify"
    r = copy_cmd(env, case, dest, params.get("mode", "auto"), params, text)
    if not cli_outcome(res, r):
        return res
    d = env.load(dest)
    actual = read_ours(res, d, "the copy")
    if actual is None:
        return res
    copy_problems = judge.same_rows(expected, actual, key_of(case, src.schema()))
    if copy_problems:
        for p in copy_problems:
            res.fail("copy-rows", p)
        return res
    n = expected.num_rows
    sample = params.get("sample_size", 100)

    def verify(target, method, size):
        args = ["verify", "--source-catalog", "fuzz", "--source", "src.t", "--dest", target, "--method", method,
                "--output", "json"]
        if method == "sample":
            args += ["--sample-size", str(size)]
        if text is not None:
            args += ["--row-filter", text]
        return env.cli(*args)

    def verdict(r, what):
        """The run's `matches` (verify exits 1 on a mismatch, with its JSON report), or None
        when it has none (then the run is judged as any other)."""
        if r.crashed:
            cli_outcome(res, r)
            return None
        v = r.json()
        matches = _find_matches(v) if v is not None else None
        if matches is None:
            if r.rc == 0:
                res.fail("verify-output", f"{r.shown()} ({what}): no verdict in its output: {r.out[:300]}")
            else:
                cli_outcome(res, r)
        return matches

    methods = ["row_count", "partition_hash", "sample"]
    for m in methods:
        r = verify(dest, m, sample)
        ok = verdict(r, f"{m} on the exact copy")
        if ok is False:
            res.fail(f"false-mismatch:{m}", f"verify --method {m} (sample size {sample}) reports a mismatch on "
                     f"an exact copy ({n} rows): {r.out[:600]}")
    if res.status == "fail" or n == 0:
        if n == 0:
            res.notes.append("empty copy: no clone to alter")
        return res
    # Clones of the copy, each altered by PyIceberg: one row removed, one duplicated, one changed.
    try:
        clones = make_clones(env, case, d, actual)
    except NoOracle as e:
        res.notes.append(str(e))
        return res
    for what, ident in clones.items():
        for m in methods:
            r = verify(ident, m, sample)
            ok = verdict(r, f"{m} on the copy with one row {what}")
            if ok is None:
                continue
            must = m == "partition_hash" or (m == "row_count" and what != "changed") or m == "sample"
            rule = ("the seed: a sample covering the whole table is exact" if m == "sample" and sample >= n + 1
                    else "docs/datamig.md: sample compares counts and the sum of all row hashes"
                    if m == "sample" else "the seed")
            if must and ok:
                res.fail(f"missed:{m}:{what}", f"verify --method {m} (sample size {sample}) reports a match "
                         f"on the copy with one row {what} ({n} rows; rule: {rule})")
    return res


def _find_matches(v):
    if isinstance(v, dict):
        if "matches" in v and isinstance(v["matches"], bool):
            return v["matches"]
        for x in v.values():
            r = _find_matches(x)
            if r is not None:
                return r
    if isinstance(v, list):
        for x in v:
            r = _find_matches(x)
            if r is not None:
                return r
    return None


def make_clones(env, case, d, actual):
    """dst.verify_removed / _duplicated / _changed: clones of the copy altered by PyIceberg
    (overwrite of the whole table with the altered rows, so any column type works)."""
    rows = pyiceberg_rows(d, actual)
    rng = rng_for(case, "verify-clones")
    i = rng.randrange(len(rows))
    out = {}
    try:
        for what in ("removed", "duplicated", "changed"):
            ident = f"dst.verify_{what}"
            t = env.clone(ident, "dst.verify")
            if what == "removed":
                new = rows[:i] + rows[i + 1:]
                t.overwrite(build.arrow_rows(t, new))
            elif what == "duplicated":
                t.append(build.arrow_rows(t, [rows[i]]))
            else:
                changed = mutate_row(rng, case, t, rows[i])
                if repr(changed) == repr(rows[i]):
                    kf = next((f for f in model_of(t.schema()) if f["name"] == case.get("key")), None)
                    if kf is not None:
                        changed[kf["name"]] = gen.key_value(_key_type(kf["type"]), 999999)
                new = rows[:i] + [changed] + rows[i + 1:]
                t.overwrite(build.arrow_rows(t, new))
                check = judge.rows_of(judge.read(env.load(ident)))
                if check == judge.rows_of(actual):
                    raise NoOracle("the changed clone reads as the copy (the change did not take)")
            out[what] = ident
    except NoOracle:
        raise
    except Exception as e:  # noqa: BLE001 - PyIceberg cannot alter the copy
        raise NoOracle(f"PyIceberg cannot make the altered clones: {type(e).__name__}: {str(e)[:200]}") from e
    return out


# ---------------------------------------------------------------- delete


def run_delete(env, case, path, params):
    res = Result(path)
    ast = params.get("filter")
    if ast is None:
        return res.set("skip", "no filter")
    mine = env.clone("mine.t")
    twin = env.clone("twin.t")
    try:
        everything = read_or_no_oracle(mine, "the source")
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    _, expected = judge.filter_arrow(everything, ast, mine.schema())
    try:
        twin.delete(build.py_filter(ast))
        theirs = judge.read(env.load("twin.t"))
        diff = judge.same_rows(expected, theirs)
        if diff:
            res.notes.append("PyIceberg's Table.delete departs from SQL three-valued logic (SQL decides): " + diff[0][:300])
    except Exception as e:  # noqa: BLE001
        res.notes.append(f"PyIceberg's Table.delete cannot run ({type(e).__name__}: {str(e)[:120]}); SQL evaluation decides")
    refs = judge.refs_of(mine)
    files = judge.all_data_files(mine)
    r = env.cli("table", "delete", "mine.t", "--catalog", "fuzz", "--where", judge.sql_text(ast, mine.schema()),
                "--output", "json")
    if not cli_outcome(res, r):
        return res
    after = env.load("mine.t")
    actual = read_ours(res, after, "the table after the delete")
    if actual is None:
        return res
    for p in judge.same_rows(expected, actual, key_of(case, mine.schema())):
        res.fail("rows", p)
    check_refs(res, refs, after)
    check_new_files(res, after, files)
    return res


# ---------------------------------------------------------------- upsert, overwrite_partition


def source_table(env, ident, like, rows):
    """An unpartitioned table with `like`'s schema (PyIceberg assigns fresh ids) holding rows."""
    try:
        env.catalog.drop_table(ident)
    except Exception:  # noqa: BLE001
        pass
    t = env.catalog.create_table(ident, schema=like.schema())
    if rows:
        t.append(build.arrow_rows(t, rows))
    return env.load(ident)


def run_upsert(env, case, path, params):
    res = Result(path)
    if "rows" not in params:
        return res.set("skip", "no rows drawn")
    mine = env.clone("mine.t")
    twin = env.clone("twin.t")
    key = key_of(case, mine.schema())
    if not key:
        return res.set("skip", "the key column is gone")
    rows = [gen.dec_row(r) for r in params["rows"]]
    try:
        ch = source_table(env, "ch.t", mine, rows)
        data = judge.read(ch)
    except Exception as e:  # noqa: BLE001
        return res.set("no-oracle", f"PyIceberg cannot write the upsert source: {type(e).__name__}: {str(e)[:200]}")
    try:
        twin.upsert(build.arrow_rows(twin, pyiceberg_rows(ch, data)), join_cols=key)
        expected = judge.read(env.load("twin.t"))
    except Exception as e:  # noqa: BLE001
        return res.set("no-oracle", f"PyIceberg's upsert cannot run: {type(e).__name__}: {str(e)[:200]}")
    held = [json.dumps(r, sort_keys=True, default=str) for r in expected.select(key).to_pylist()]
    if len(set(held)) < len(held):
        # The generator's keys are unique, so an upsert leaves each key once. PyIceberg's can
        # leave one twice: seed 20239, a key within W of the int minimum under truncate[W]
        # (where Java's arithmetic wraps), whose stored row its key filter does not find, so it
        # inserts the row again. No answer to judge by.
        dup = next(k for k in held if held.count(k) > 1)
        return res.set("no-oracle", f"PyIceberg's upsert left the key {dup[:100]} twice")
    refs = judge.refs_of(mine)
    files = judge.all_data_files(mine)
    r = env.cli("migrate-data", "--source-catalog", "fuzz", "--source", "ch.t", "--dest", "mine.t",
                "--write-mode", "upsert", "--upsert-keys", ",".join(key), "--batch-rows", str(params["batch_rows"]),
                "--output", "json")
    if not cli_outcome(res, r):
        return res
    after = env.load("mine.t")
    actual = read_ours(res, after, "the table after the upsert")
    if actual is None:
        return res
    problems = judge.same_rows(expected, actual, key)
    if problems and judge.same_rows_but_zero_sign(expected, actual):
        # PyIceberg's upsert finds an incoming -0.0 equal to a stored 0.0 (pyarrow's ==) and
        # leaves the row alone; iceberg-ops writes the incoming value, as Spark's MERGE INTO
        # ... UPDATE SET * would. Not a wrong answer: noted, not judged.
        res.notes.append("differs from PyIceberg's upsert only in the sign of a zero: " + problems[0][:200])
        problems = []
    for p in problems:
        res.fail("rows", p)
    check_refs(res, refs, after)
    check_new_files(res, after, files)
    return res


def run_overwrite_partition(env, case, path, params):
    res = Result(path)
    if "rows" not in params:
        return res.set("skip", "no rows drawn")
    mine = env.clone("mine.t")
    twin = env.clone("twin.t")
    rows = [gen.dec_row(r) for r in params["rows"]]
    try:
        everything = read_or_no_oracle(mine, "the destination")
        inc = source_table(env, "inc.t", mine, rows)
        incoming = judge.read(inc)
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    except Exception as e:  # noqa: BLE001
        return res.set("no-oracle", f"PyIceberg cannot write the incoming rows: {type(e).__name__}: {str(e)[:200]}")
    schema, spec = mine.schema(), mine.spec()
    # The partitions the incoming rows touch are replaced, row by row under the current spec
    # (files of older specs are rewritten keeping their other rows: ops-datamig's committer):
    # the expected table, from PyIceberg's transforms applied to its reads.
    touched = {judge.partition_tuple(r, schema, spec) for r in incoming.to_pylist()}
    keep = [i for i, r in enumerate(everything.to_pylist()) if judge.partition_tuple(r, schema, spec) not in touched]
    kept = everything.take(pa.array(keep, pa.int64()))
    try:
        expected = pa.concat_tables([kept, _as(incoming, everything)]) if incoming.num_rows else kept
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        return res.set("no-oracle", f"cannot assemble the expected rows in Arrow: {type(e).__name__}: {str(e)[:200]}")
    identity_only = all(str(pf.transform) in ("identity", "void") for pf in spec.fields)
    if identity_only and spec.fields:
        try:
            twin.dynamic_partition_overwrite(build.arrow_rows(twin, pyiceberg_rows(inc, incoming)))
            theirs = judge.read(env.load("twin.t"))
            diff = judge.same_rows(theirs, expected)
            if diff:
                res.notes.append("PyIceberg's dynamic_partition_overwrite disagrees with the transform model: "
                                 + diff[0][:300])
                expected_alt = theirs
            else:
                expected_alt = None
        except Exception as e:  # noqa: BLE001
            res.notes.append(f"PyIceberg's dynamic_partition_overwrite cannot run: {type(e).__name__}: {str(e)[:150]}")
            expected_alt = None
    else:
        expected_alt = None
    refs = judge.refs_of(mine)
    files = judge.all_data_files(mine)
    r = env.cli("migrate-data", "--source-catalog", "fuzz", "--source", "inc.t", "--dest", "mine.t",
                "--write-mode", "overwrite_partition", "--batch-rows", str(params["batch_rows"]), "--output", "json")
    if not cli_outcome(res, r):
        return res
    after = env.load("mine.t")
    actual = read_ours(res, after, "the table after overwrite_partition")
    if actual is None:
        return res
    key = key_of(case, schema)
    problems = judge.same_rows(expected, actual, key)
    if problems and expected_alt is not None and not judge.same_rows(expected_alt, actual, key):
        return res.set("no-oracle", "PyIceberg's dynamic_partition_overwrite and the transform model disagree; "
                       "iceberg-ops agrees with PyIceberg")
    for p in problems:
        res.fail("rows", p)
    check_refs(res, refs, after)
    check_new_files(res, after, files)
    return res


def _as(t, like):
    """`t` with `like`'s column order and types (both PyIceberg reads of one schema)."""
    cols = [t.column(n) if n in t.column_names else pa.nulls(t.num_rows, like.schema.field(n).type)
            for n in like.column_names]
    try:
        return pa.Table.from_arrays(cols, schema=like.schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.Table.from_pylist(t.to_pylist(), schema=like.schema)


# ---------------------------------------------------------------- compaction


def run_compact(env, case, path, params):
    res = Result(path)
    mine = env.clone("mine.t")
    ids = [s.snapshot_id for s in mine.metadata.snapshots]
    before = snapshot_reads(mine, ids)
    try:
        current = judge.rows_of(read_or_no_oracle(mine, "the table"))
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    refs = judge.refs_of(mine)
    files = judge.all_data_files(mine)
    live = judge.live_data_files(mine)
    args = ["table", "compact", "mine.t", "--catalog", "fuzz", "--min-input-files", str(params["min_input_files"]),
            "--output", "json"]
    if params.get("target"):
        args += ["--target-file-size", str(params["target"])]
    if params.get("to_current_spec"):
        args.append("--to-current-spec")
    if params.get("sort_by") and any(f.name == params["sort_by"] for f in mine.schema().fields):
        args += ["--sort-by", params["sort_by"]]
    r = env.cli(*args)
    if not cli_outcome(res, r):
        return res
    after = env.load("mine.t")
    a = read_ours(res, after, "the compacted table")
    if a is None:
        return res
    if judge.rows_of(a) != current:
        for p in judge.same_rows(judge.read(mine), a, key_of(case, mine.schema())):
            res.fail("rows", "current rows changed: " + p)
    for sid, rows in before.items():
        try:
            now = judge.rows_of(judge.read(after, snapshot_id=sid))
        except Exception as e:  # noqa: BLE001
            res.fail("time-travel", f"snapshot {sid} no longer reads after compaction: {type(e).__name__}: {str(e)[:200]}")
            continue
        if now != rows:
            res.fail("time-travel", f"snapshot {sid} reads {sum(now.values())} rows after compaction, "
                     f"{sum(rows.values())} before (or other values)")
    check_refs(res, refs, after)
    check_new_files(res, after, files)
    for p in live:
        if not os.path.exists(judge.local(p)):
            res.fail("file-deleted", f"compaction deleted a file it replaced (expiry's job): {p}")
    return res


# ---------------------------------------------------------------- expiry


def run_expire(env, case, path, params):
    res = Result(path)
    t = env.load("src.t")
    if not t.metadata.snapshots:
        return res.set("skip", "no snapshot")
    ids = [s.snapshot_id for s in t.metadata.snapshots]
    before = snapshot_reads(t, ids)
    refs = judge.refs_of(t)
    r = env.cli("table", "expire-snapshots", "src.t", "--catalog", "fuzz", "--older-than", "2099-01-01",
                "--retain-last", str(params["retain_last"]), "--output", "json")
    if not cli_outcome(res, r):
        return res
    after = env.load("src.t")
    check_refs(res, refs, after, moved=())
    remaining = {s.snapshot_id for s in after.metadata.snapshots}
    for name, (sid, kind) in refs.items():
        if sid not in remaining:
            res.fail("ref-snapshot-expired", f"{kind} '{name}' points at {sid}, which expiry removed")
    for sid in remaining:
        if sid not in before:
            continue
        try:
            now = judge.rows_of(judge.read(after, snapshot_id=sid))
        except Exception as e:  # noqa: BLE001
            res.fail("unreadable", f"snapshot {sid} (kept) no longer reads: {type(e).__name__}: {str(e)[:300]}")
            continue
        if now != before[sid]:
            res.fail("rows", f"snapshot {sid} (kept) reads other rows after expiry")
    for p, kind in judge.live_files(after).items():
        if not os.path.exists(judge.local(p)):
            res.fail("live-file-deleted", f"expiry deleted a {kind} file a kept snapshot needs: {p}")
    return res


# ---------------------------------------------------------------- orphan cleanup


def run_orphans(env, case, path, params):
    res = Result(path)
    t = env.load("src.t")
    loc = judge.local(t.metadata.location)
    planted = []
    old = time.time() - 7200
    for rel in params.get("junk", []):
        p = os.path.join(loc, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("junk")
        os.utime(p, (old, old))
        planted.append(p)
    outside = loc + "_backup/keep-me.txt"
    os.makedirs(os.path.dirname(outside), exist_ok=True)
    with open(outside, "w") as f:
        f.write("not this table's")
    os.utime(outside, (old, old))
    refs = judge.refs_of(t)
    ids = [s.snapshot_id for s in t.metadata.snapshots]
    before = snapshot_reads(t, ids)
    referenced = set(judge.referenced_files(t))
    referenced.add(t.metadata_location)
    for entry in t.metadata.metadata_log:
        referenced.add(entry.metadata_file)
    r = env.cli("table", "remove-orphans", "src.t", "--catalog", "fuzz", "--older-than", "0s", "--force",
                "--output", "json")
    if not cli_outcome(res, r):
        return res
    after = env.load("src.t")
    for p in sorted(referenced):
        if not os.path.exists(judge.local(p)):
            res.fail("live-file-deleted", f"orphan cleanup deleted a referenced file: {p}")
    if not os.path.exists(outside):
        res.fail("outside-deleted", f"orphan cleanup deleted a file outside the table location: {outside}")
    for p in planted:
        hidden = any(seg.startswith((".", "_")) for seg in os.path.relpath(p, loc).split("/"))
        if not hidden and os.path.exists(p):
            res.fail("orphan-kept", f"an unreferenced file older than the threshold was kept: {p}")
    check_refs(res, refs, after, moved=())
    for sid, rows in before.items():
        try:
            now = judge.rows_of(judge.read(after, snapshot_id=sid))
        except Exception as e:  # noqa: BLE001
            res.fail("unreadable", f"snapshot {sid} no longer reads after orphan cleanup: {type(e).__name__}: {str(e)[:300]}")
            continue
        if now != rows:
            res.fail("rows", f"snapshot {sid} reads other rows after orphan cleanup")
    return res


# ---------------------------------------------------------------- health and maintain


def pyiceberg_counts(table):
    """What health counts, as PyIceberg's manifest reader sees the current snapshot."""
    out = {"files": 0, "bytes": 0, "records": 0, "pos_files": 0, "pos_records": 0, "eq_files": 0,
           "eq_records": 0, "data_manifests": 0, "delete_manifests": 0}
    snap = table.current_snapshot()
    if snap is None:
        return out
    for m in snap.manifests(table.io):
        out["data_manifests" if int(m.content) == 0 else "delete_manifests"] += 1
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            d = e.data_file
            c = int(d.content)
            if c == 0:
                out["files"] += 1
                out["bytes"] += d.file_size_in_bytes
                out["records"] += d.record_count
            elif c == 1:
                out["pos_files"] += 1
                out["pos_records"] += d.record_count
            else:
                out["eq_files"] += 1
                out["eq_records"] += d.record_count
    return out


def run_health(env, case, path, params):
    res = Result(path)
    t = env.load("src.t")
    r = env.cli("table", "health", "src.t", "--catalog", "fuzz", "--output", "json")
    if not cli_outcome(res, r):
        return res
    try:
        h = json.loads(r.out)
    except ValueError as e:
        return res.fail("json", f"table health printed no JSON: {e}: {r.out[:300]}")
    try:
        want = pyiceberg_counts(t)
    except Exception as e:  # noqa: BLE001
        return res.set("no-oracle", f"PyIceberg cannot read the manifests: {type(e).__name__}: {str(e)[:300]}")
    got = {"files": h["data"]["files"], "bytes": h["data"]["bytes"], "records": h["data"]["records"],
           "pos_files": h["deletes"]["position"]["files"], "pos_records": h["deletes"]["position"]["records"],
           "eq_files": h["deletes"]["equality"]["files"], "eq_records": h["deletes"]["equality"]["records"],
           "data_manifests": h["manifests"]["data"], "delete_manifests": h["manifests"]["delete"]}
    for k in want:
        if got[k] != want[k]:
            res.fail("health-" + k, f"health counts {k} = {got[k]}, PyIceberg {want[k]}")
    d = h["data"]
    classes = d["fragments"]["files"] + d["undersized"]["files"] + d["well_sized"]["files"]
    if classes != d["files"]:
        res.fail("health-classes", f"size classes hold {classes} files of {d['files']}")
    if sum(b["files"] for b in h["size_histogram"]) != d["files"]:
        res.fail("health-histogram", "the histogram does not hold every data file")
    if sum(p["data_files"] for p in h["partitions"]) != d["files"]:
        res.fail("health-partitions", "the partitions do not hold every data file")
    if h["snapshots"]["count"] != len(t.metadata.snapshots):
        res.fail("health-snapshots", f"{h['snapshots']['count']} snapshots, PyIceberg {len(t.metadata.snapshots)}")
    s = h["score"]
    if not (0 <= s["score"] <= 100 and s["score"] == s["small_files"] + s["equality_deletes"] + s["position_deletes"]):
        res.fail("health-score", f"score {s}")
    for p in h["problems"]:
        if not p["fix"].startswith("iceberg-ops table ") and p["kind"] != "unfinished-migration":
            res.fail("health-fix", f"problem without a command: {p}")
    return res


def run_maintain(env, case, path, params):
    res = Result(path)
    # The source itself, not a clone: a clone shares the source's files, which maintain's
    # expiry and orphan cleanup may delete. It runs last (ORDER).
    mine = env.load("src.t")
    ids = [s.snapshot_id for s in mine.metadata.snapshots]
    try:
        # The rows as read before: maintain's expiry may delete the manifest list `mine`'s
        # snapshot names, so `mine` cannot be read again afterwards.
        before = read_or_no_oracle(mine, "the table")
        current = judge.rows_of(before)
    except NoOracle as e:
        return res.set("no-oracle", str(e))
    refs = judge.refs_of(mine)
    files = judge.all_data_files(mine)
    policy = os.path.join(env.root, "policy.toml")
    with open(policy, "w") as f:
        f.write("[defaults]\n")
        f.write(f"min-input-files = {params['min_input_files']}\n")
        if params.get("target"):
            f.write(f"target-file-size-bytes = {params['target']}\n")
        if params.get("max_snapshot_age"):
            f.write(f'max-snapshot-age = "{params["max_snapshot_age"]}"\n')
        if params.get("rewrite_old_spec_files"):
            f.write("rewrite-old-spec-files = true\n")
    if params.get("max_snapshot_age"):
        time.sleep(1.1)
    state = os.path.join(env.root, "maintain-state.json")
    args = ["maintain", "src.t", "--catalog", "fuzz", "--policy", policy, "--state", state, "--output", "json"]
    r = env.cli(*args)
    try:
        report = json.loads(r.out)
    except ValueError:
        report = None
    if report is not None and r.rc == 1 and not r.crashed:
        # One table: its failure's reason is the refusal or the error.
        reasons = [t.get("reason") or "" for t in report.get("tables", [])]
        details = [k.get("detail") or "" for t in report.get("tables", []) for k in t.get("tasks", [])
                   if k.get("status") == "failed"]
        message = "; ".join(details) or "; ".join(reasons)
        doc = refusal(message)
        if doc:
            return res.set("refused", f"{message}  [{doc}]")
        return res.fail("error:" + normalise(message), f"maintain failed: {message}")
    if not cli_outcome(res, r):
        return res
    if report is None:
        return res.fail("json", f"maintain printed no JSON: {r.out[:300]}")
    after = env.load("src.t")
    a = read_ours(res, after, "the maintained table")
    if a is None:
        return res
    if judge.rows_of(a) != current:
        for p in judge.same_rows(before, a, key_of(case, mine.schema())):
            res.fail("rows", "current rows changed: " + p)
    kept = {s.snapshot_id for s in after.metadata.snapshots}
    for name, (sid, kind) in refs.items():
        if name != "main" and sid not in kept:
            res.fail("ref-snapshot-expired", f"{kind} '{name}' points at {sid}, which maintain expired")
    check_refs(res, refs, after)
    check_new_files(res, after, files)
    for p, kind in judge.live_files(after).items():
        if not os.path.exists(judge.local(p)):
            res.fail("live-file-deleted", f"maintain deleted a {kind} file the table needs: {p}")
    for sid in ids:
        if sid in kept:
            try:
                judge.read(after, snapshot_id=sid)
            except Exception as e:  # noqa: BLE001
                res.fail("time-travel", f"snapshot {sid} (kept) no longer reads: {type(e).__name__}: {str(e)[:200]}")
    # A second run right after: nothing due, nothing committed.
    head = after.metadata.current_snapshot_id
    count = len(after.metadata.snapshots)
    again = env.cli(*args)
    if not cli_outcome(res, again):
        return res
    final = env.load("src.t")
    if final.metadata.current_snapshot_id != head or len(final.metadata.snapshots) != count:
        res.fail("second-run", f"a second maintain run committed: {again.out[:600]}")
    return res


# ---------------------------------------------------------------- import

# Hive's FileUtils.escapePathName (Spark's ExternalCatalogUtils.escapePathName): these ASCII
# characters become %XX (upper-case hex); every other character stays as it is.
_HIVE_ESCAPE = {chr(c) for c in range(0, 0x20)} | set('"#%\'*/:=?\\\x7f{[]^')
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Partition column types whose folder text Hive and Spark write as below (hive_text).
IMPORT_KINDS = ("string", "int", "long", "date", "boolean", "decimal", "timestamp", "timestamptz")


def hive_escape(text):
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE else c for c in text)


def hive_text(v, style):
    """A partition value as Hive or Spark writes its folder (NULL as Hive's default partition),
    in one of the spellings they use, drawn from `style` (a random stream)."""
    if v is None:
        return HIVE_NULL
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            # A zoned value at some offset, written with it (docs/import.md: a timestamptz
            # folder needs its offset; Spark writes its session zone's local time without one,
            # which the import refuses). A value the offset would move past year 1 or 9999
            # stays in UTC.
            minutes = style.choice([0, 330, -480, 60, -150])
            try:
                v = v.astimezone(dt.timezone(dt.timedelta(minutes=minutes)))
            except OverflowError:
                pass
        text = v.isoformat(sep=" ")
        if v.microsecond and style.random() < 0.5:
            # Spark 3 trims the fraction's trailing zeros.
            head, _, rest = text.partition(".")
            digits = rest[:6].rstrip("0")
            text = f"{head}.{digits}{rest[6:]}"
        elif not v.microsecond and style.random() < 0.3:
            # java.sql.Timestamp.toString writes `.0` for whole seconds (Hive).
            head, sep, zone = text[:19], "", text[19:]
            text = f"{head}.0{zone}"
        return hive_escape(text)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal) and style.random() < 0.4:
        # Hive normalises a decimal's trailing zeros (HiveDecimal: `1.5` for 1.50).
        text = format(v.normalize(), "f") if v != 0 else "0"
        return hive_escape(text)
    # A decimal as Java's BigDecimal.toString writes it: its scale's digits, `1E-7` below 1e-6.
    return hive_escape(str(v))


def widened_text(t):
    """An Iceberg type as `import snapshot` types a file column of it: int as long, float as
    double, at any depth; field ids and optionality left out."""
    from pyiceberg.types import FloatType, IntegerType, ListType, MapType, StructType
    if isinstance(t, StructType):
        return "struct<" + ", ".join(f"{f.name}: {widened_text(f.field_type)}" for f in t.fields) + ">"
    if isinstance(t, ListType):
        return f"list<{widened_text(t.element_type)}>"
    if isinstance(t, MapType):
        return f"map<{widened_text(t.key_type)}, {widened_text(t.value_type)}>"
    if isinstance(t, IntegerType):
        return "long"
    if isinstance(t, FloatType):
        return "double"
    return str(t)


def partition_value(v):
    """A row's value as PyIceberg holds it in a partition tuple (days, microseconds)."""
    if isinstance(v, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=v.tzinfo and dt.timezone.utc)
        d = v - epoch
        return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    return v


def import_params(rng, table, arrow):
    """The import path's Hive tree: 0-2 identity partition columns (top-level, of a kind whose
    folder text round-trips: no '' string, which Hive writes as its NULL folder; no name a
    listing takes for hidden; folder names a file system can hold), which of them the files
    leave out (optional ones only: PyIceberg 0.12 cannot read a file lacking a required column),
    and how many files each partition's rows are split into."""
    rows = arrow.to_pylist()
    cands = []
    for f in table.schema().fields:
        kind = gen.prim_kind(str(f.field_type).replace(" ", ""))
        if kind not in IMPORT_KINDS or f.name.startswith("."):
            continue
        values = [r.get(f.name) for r in rows]
        if any(v == "" for v in values):
            continue
        if any(len((hive_escape(f.name) + "=" + hive_text(v, random.Random(0))).encode()) > 200 for v in values):
            continue
        if len({repr(v) for v in values}) > 12:
            continue
        cands.append(f)
    picked = rng.sample(cands, min(len(cands), rng.choice([0, 1, 1, 2])))
    # `import snapshot` makes the table from the files (a column they leave out would be typed
    # from its folders' text, as Spark infers it): they keep every column there.
    how = rng.choice(["add-files", "add-files", "snapshot"])
    return {"how": how, "partition": [f.name for f in picked],
            "leave_out": [f.name for f in picked if how == "add-files" and not f.required and rng.random() < 0.8],
            "files": rng.choice([1, 2])}


def run_import(env, case, path, params):
    """The case's rows (PyIceberg's read of the source) written as plain Parquet files (no field
    ids) in a Hive tree — `col=value` folders escaped as Hive escapes them, NULL as its default
    partition, the partition columns left out of the files as Spark's `partitionBy` leaves them —
    then `import add-files` into a new table of the source's schema, identity-partitioned on
    those columns, or `import snapshot` making a table over them (its schema the files', ints
    and floats widened, every column optional). PyIceberg must read the source's rows back,
    every file once with its folder's partition values."""
    import pyarrow.parquet as pq
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    res = Result(path)
    if "partition" not in params:
        return res.set("skip", "the source could not be read when params were drawn")
    src = env.load("src.t")
    everything = read_or_no_oracle(src, "the source")
    if everything.num_rows == 0:
        return res.set("skip", "the source has no rows (nothing to write as files)")
    schema = src.schema()
    names = params["partition"]
    fields = [schema.find_field(n) for n in names]
    spec = PartitionSpec(*[PartitionField(source_id=f.field_id, field_id=1000 + i, transform=IdentityTransform(),
                                          name=f.name) for i, f in enumerate(fields)])
    snapshot = params.get("how") == "snapshot"
    try:
        env.catalog.drop_table("dst.import")
    except Exception:  # noqa: BLE001 - not there
        pass
    if not snapshot:
        try:
            env.catalog.create_table("dst.import", schema=schema, partition_spec=spec,
                                     properties={"format-version": str(src.format_version)})
        except Exception as e:  # noqa: BLE001 - PyIceberg cannot make the table to import into
            raise NoOracle(f"PyIceberg cannot create the destination: {type(e).__name__}: {str(e)[:300]}") from e
    # The files' schema: the read's without field ids (a file another engine wrote).
    plain = pa.schema([pa.field(f.name, build.strip_ids(f.type), f.nullable) for f in everything.schema])
    try:
        data = everything.cast(plain)
    except pa.ArrowInvalid as e:
        # PyIceberg reads a struct column added after a file was written as NULL structs whose
        # required fields hold NULL, which pyarrow neither casts nor writes.
        raise NoOracle(f"pyarrow cannot write the source's rows as files: {str(e)[:200]}") from e
    rows = data.to_pylist()
    groups = {}
    for i, r in enumerate(rows):
        groups.setdefault(tuple(repr(r[n]) for n in names), []).append(i)
    root = os.path.join(env.root, "hive", "t")
    keep = [c for c in data.column_names if c not in set(params["leave_out"])]
    expected_partition = {}
    style = rng_for(case, "import-folders")
    for n_group, indices in enumerate(groups.values()):
        values = [rows[indices[0]][n] for n in names]
        folder = os.path.join(root, *[f"{hive_escape(n)}={hive_text(v, style)}" for n, v in zip(names, values)])
        os.makedirs(folder, exist_ok=True)
        parts = [indices] if params["files"] == 1 or len(indices) < 2 else \
            [indices[: len(indices) // 2], indices[len(indices) // 2:]]
        for k, part in enumerate(parts):
            f = os.path.join(folder, f"part-{n_group}-{k}.parquet")
            pq.write_table(data.take(part).select(keep), f)
            expected_partition[os.path.realpath(f)] = values
    if snapshot:
        r = env.cli("import", "snapshot", "--dest", "dst.import", "--catalog", "fuzz", "--source-path", root,
                    "--output", "json")
    else:
        r = env.cli("import", "add-files", "--table", "dst.import", "--catalog", "fuzz", "--from", root,
                    "--output", "json")
    if not cli_outcome(res, r):
        return res
    d = env.load("dst.import")
    actual = read_ours(res, d, "the table the files were imported into")
    if actual is None:
        return res
    expected = everything
    if snapshot:
        # The source's rows in the types the snapshot gave each column (widened ints and
        # floats; a cast that fails is a type the snapshot should not have chosen).
        want = [(f.name, widened_text(f.field_type)) for f in schema.fields]
        got = [(f.name, widened_text(f.field_type)) for f in d.schema().fields]
        if got != want:
            return res.fail("schema", f"the snapshot's columns are {got}; the files' (ints and floats widened) "
                                      f"{want}")
        try:
            expected = data.cast(pa.schema([pa.field(f.name, actual.schema.field(f.name).type, True)
                                            for f in data.schema]))
        except pa.ArrowInvalid as e:  # a NULL struct's required fields, as above
            raise NoOracle(f"pyarrow cannot cast the source's rows to the snapshot's types: {str(e)[:200]}") from e
        if d.properties.get("gc.enabled") != "false":
            res.fail("snapshot-gc", f"the snapshot leaves gc.enabled={d.properties.get('gc.enabled')!r}")
        want_spec = [f.name for f in fields]
        got_spec = [pf.name for pf in d.spec().fields]
        if got_spec != want_spec:
            res.fail("partition", f"the snapshot's partition fields are {got_spec}, the folders name {want_spec}")
            return res
    for p in judge.same_rows(expected, actual, key_of(case, schema)):
        res.fail("rows", p)
    seen = {}
    for task in d.scan().plan_files():
        # The path as it is, not percent-decoded: a Hive folder's %XX is part of its name, and
        # PyIceberg opens it so.
        p = os.path.realpath(judge.local(task.file.file_path))
        seen[p] = seen.get(p, 0) + 1
        want = expected_partition.get(p)
        if want is None:
            res.fail("files", f"the table lists {task.file.file_path}, which is none of the files written")
            continue
        got = [task.file.partition[i] for i in range(len(names))]
        want = [partition_value(v) for v in want]
        if got != want:
            res.fail("partition", f"{task.file.file_path} is listed in partition {got}, its folders say {want}")
    for p in sorted(set(expected_partition) - set(seen)):
        res.fail("files", f"{p} was written under the folder imported but the table does not list it")
    for p, n in seen.items():
        if n > 1:
            res.fail("files", f"{p} is listed {n} times")
    return res


# ---------------------------------------------------------------- the Python package's filters


def run_py_filter(env, case, path, params):
    """A filtered copy through the Python package as a PyIceberg user makes it:
    `DataMigrator(src, (catalog, "dst.py_filter"), row_filter=<PyIceberg expression>,
    create_dest=True).run()` with the installed `iceberg_ops` wheel (the same Rust core, its
    filter given as PyIceberg's expression and turned into the core's syntax by the package).
    docs/python.md: the rows PyIceberg's `source.scan(row_filter=...)` selects, whose logic is
    SQL's three-valued one but for pyarrow's `isin` (false for NULL: NOT IN keeps NULL rows) —
    judged on PyIceberg's full read (`judge.sql_eval(pyarrow_isin=True)`). PyIceberg's own
    filtered scan is run too; where it departs (its documented departures, or its pruning) that
    is noted, not judged."""
    res = Result(path)
    ast = params.get("filter")
    if ast is None:
        return res.set("skip", "no filter (the source could not be read when params were drawn)")
    try:
        from iceberg_ops.data_migration import DataMigrator
    except ImportError as e:
        return res.set("skip", f"the iceberg_ops package is not installed in this venv ({e}): "
                               "pip install ./crates/ops-py")
    src = env.load("src.t")
    expr = build.py_filter(ast)
    everything = read_or_no_oracle(src, "the source")
    expected = judge.filter_arrow(everything, ast, src.schema(), pyarrow_isin=True)[0]
    try:
        theirs = judge.read(src, row_filter=expr)
        if judge.same_rows(expected, theirs):
            res.notes.append("PyIceberg's filtered scan departs from its row logic on the full read "
                             "(a column older files lack, -0.0 in isin, or its pruning); the full read decides")
    except Exception as e:  # noqa: BLE001
        res.notes.append(f"PyIceberg's filtered scan cannot run ({type(e).__name__}: {str(e)[:120]})")
    dest = "dst.py_filter"
    shown = f"DataMigrator(src.t, dst.py_filter, row_filter={expr!r}, batch_rows={params['batch_rows']})"
    try:
        DataMigrator(src, (env.catalog, dest), row_filter=expr, batch_rows=params["batch_rows"],
                     create_dest=True).run()
    except Exception as e:  # noqa: BLE001 - judged below
        msg = f"{type(e).__name__}: {e}"
        doc = refusal(msg) or python_refusal(str(e))
        if doc:
            return res.set("refused", f"{msg[:400]}  [{doc}]")
        return res.fail("error:" + normalise(msg), f"{shown} raised {msg[:1500]}")
    actual = read_ours(res, env.load(dest), f"the destination {dest}")
    if actual is None:
        return res
    for p in judge.same_rows(expected, actual, key_of(case, src.schema())):
        res.fail("rows", f"{shown}: {p}")
    return res


# What the Python package refuses in a PyIceberg filter, as docs/python.md says (its message).
PY_REFUSALS = [
    (r"^row_filter: the literal .* cannot be written", "docs/python.md: a NaN or infinite literal (use IsNaN)"),
    (r"^row_filter: the prefix .* ends in a backslash", "crates/ops-py: a StartsWith prefix ending in a backslash"),
]


def python_refusal(message):
    for pat, doc in PY_REFUSALS:
        if re.search(pat, message):
            return doc
    return None


RUNNERS = {"copy_auto": run_copy, "copy_rewrite": run_copy, "copy_files": run_copy, "copy_reference": run_copy,
           "copy_filter": run_copy, "verify": run_verify, "delete": run_delete, "upsert": run_upsert,
           "overwrite_partition": run_overwrite_partition, "compact": run_compact, "orphans": run_orphans,
           "expire": run_expire, "health": run_health, "maintain": run_maintain, "import": run_import,
           "py_filter": run_py_filter}
# Paths that only add files run first; those deleting files from the source's location, last.
ORDER = ["copy_auto", "copy_rewrite", "copy_files", "copy_reference", "copy_filter", "py_filter", "verify", "import",
         "health", "delete", "upsert", "overwrite_partition", "compact", "orphans", "expire", "maintain"]


def run_path(env, case, path):
    params = case["params"].get(path)
    if params is None:
        params = make_params(env, case, path)
        case["params"][path] = params
    try:
        return RUNNERS[path](env, case, path, params)
    except NoOracle as e:
        return Result(path).set("no-oracle", str(e))
