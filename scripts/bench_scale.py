"""The Python half of scripts/bench-scale (issue 32): generates the many-file tables once and
measures iceberg-ops and PyIceberg 0.12 on them. Run it through scripts/bench-scale, which picks
the test venv's Python (PyIceberg 0.12) and the default binary."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

ROWS_PER_FILE = 10
FILES_PER_DIR = 1000
MANY_PER_MANIFEST = 100
CATALOG = "bench"
NS = "scale"
LAYOUTS = ("few", "many")
COMMANDS = ["plan-only", "dry-run", "verify", "compact-dry", "expire-dry",
            "orphans-dry", "health", "maintain-dry", "pyiceberg-plan", "copy"]

HELP_EPILOG = f"""
tables (cached under CACHE/bench-scale/, catalog '{CATALOG}', a SQLite file):
  {NS}.few_N   N data files in ONE manifest, one append snapshot (what one PyIceberg add_files
              commit writes)
  {NS}.many_N  the same N files' rows, one manifest per {MANY_PER_MANIFEST} files, one snapshot
  {NS}.hist_N  few_N's files (no links of its own) in one manifest, then a second snapshot
              deleting the first file (its manifest rewritten: 1 DELETED, N-1 EXISTING entries);
              generated when expire-dry is measured
  Schema: id long, region string, v double; unpartitioned; format v2; the property
  schema.name-mapping.default set, as add_files sets it (the files carry no field ids). Each
  table's data files are its own paths under its location (data/dNNNN/, {FILES_PER_DIR} a
  directory), hard links to one {ROWS_PER_FILE}-row Parquet file per directory (ext4 allows
  65,000 links an inode): every file holds the same {ROWS_PER_FILE} rows (ids 0..9), so the
  tables suit planning and memory benchmarks, not row-level checks. The DataFile statistics
  come once from that file's footer (data_file_statistics_from_parquet_metadata, as add_files
  computes them); the manifests and manifest list are written with pyiceberg.manifest's
  writers and the snapshot committed through a PyIceberg transaction (AddSnapshotUpdate +
  SetSnapshotRefUpdate, AssertRefSnapshotId(None) on main).

measurements (each on a fresh copy of the catalog whose warehouse is a temporary directory, so
nothing is written next to the cached tables; every iceberg-ops command runs with --output json
and its stdout goes to a file):
  generate        the generator itself, once per N when not cached (both tables; always runs
                  first, whatever --only says)
  plan-only       migrate-data --source T --dest T_dst --create-dest --plan-only (no
                  --checkpoint: a plan refuses one, `migrate-data commit` takes it)
  dry-run         migrate-data --source T --dest T_dst --create-dest --dry-run
  verify          verify --source T --dest T (row_count, the table against itself)
  compact-dry     table compact T --dry-run
  expire-dry      table expire-snapshots hist_N --dry-run --older-than <now, epoch ms>: expires
                  the first snapshot; its manifest (N files) goes, and the N-1 files the second
                  snapshot's manifest keeps are compared with it: 1 data file would be deleted
  orphans-dry     table remove-orphans T --dry-run --older-than 0s --force
  health          table health T --output json (metadata only: every manifest streamed once)
  maintain-dry    maintain T --dry-run --output json --state <run dir>/state.json (health, then
                  the due tasks planned: here compaction and orphan cleanup)
  pyiceberg-plan  PyIceberg 0.12: len(list(tbl.scan().plan_files())), seconds timed in Python
                  (load_table excluded), RSS of that whole process; stops (and skips larger N)
                  when a run exceeds --pyiceberg-budget
  copy            migrate-data --create-dest --copy-mode auto (a real copy into the temporary
                  warehouse, deleted after), for N <= --copy-max; the files carry no field ids,
                  so auto rewrites them
Seconds are wall time of the whole process (/usr/bin/time %e) except pyiceberg-plan's;
peak RSS is /usr/bin/time's %M. rss_vs_10k is the peak RSS over the same command's and
layout's at 10,000 files in the same run (include 10000 in --files); kib_per_file is
(RSS - RSS at 10k) / (N - 10,000).
"""


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/bench-scale", epilog=HELP_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Time and peak RSS of iceberg-ops and PyIceberg at "
                                            "10k-1M data files (issue 32).")
    p.add_argument("--cache", required=True, help=argparse.SUPPRESS)
    p.add_argument("--default-binary", required=True, help=argparse.SUPPRESS)
    p.add_argument("--files", default="10000,100000,1000000",
                   help="comma-separated file counts N (default 10000,100000,1000000)")
    p.add_argument("--binary", help="the iceberg-ops binary (default: CACHE/target/release/"
                                    "iceberg-ops if present, else CACHE/target/debug/iceberg-ops)")
    p.add_argument("--only", help="comma-separated subset of " + ",".join(COMMANDS))
    p.add_argument("--layouts", default="few,many", help="few, many or both (default)")
    p.add_argument("--copy-max", type=int, default=100_000,
                   help="run the real copy only up to this N (default 100000)")
    p.add_argument("--pyiceberg-budget", type=float, default=300,
                   help="seconds one PyIceberg plan_files may take; past it PyIceberg stops "
                        "(default 300)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds any one iceberg-ops command may take (default 3600)")
    p.add_argument("--json", action="store_true", help="JSON lines instead of text lines")
    p.add_argument("--generate-only", action="store_true",
                   help="generate (and check) the tables, measure nothing")
    a = p.parse_args()
    try:
        a.files = [int(x.replace("_", "")) for x in a.files.split(",") if x.strip()]
    except ValueError:
        p.error(f"--files {a.files!r}: expected comma-separated integers, e.g. 10000,100000")
    if not a.files or any(n < MANY_PER_MANIFEST for n in a.files):
        p.error(f"--files: every count must be at least {MANY_PER_MANIFEST}")
    a.layouts = [x for x in a.layouts.split(",") if x]
    if not a.layouts or set(a.layouts) - set(LAYOUTS):
        p.error(f"--layouts {','.join(a.layouts)!r}: choose from few,many")
    a.only = set(a.only.split(",")) if a.only else set(COMMANDS)
    if a.only - set(COMMANDS):
        p.error(f"--only: unknown {sorted(a.only - set(COMMANDS))}; choose from "
                + ",".join(COMMANDS))
    a.binary = os.path.abspath(a.binary or a.default_binary)
    if not a.generate_only and not os.access(a.binary, os.X_OK):
        p.error(f"no iceberg-ops binary at {a.binary}: build one (cargo build --release "
                "--bin iceberg-ops) or pass --binary PATH")
    return a


# ---------------------------------------------------------------- generator

def catalog(root, warehouse=None):
    from pyiceberg.catalog.sql import SqlCatalog
    return SqlCatalog(CATALOG, uri=f"sqlite:///{root}/catalog.db",
                      warehouse=f"file://{warehouse or os.path.join(root, 'warehouse')}")


def local_path(uri):
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if "://" in uri:
        raise SystemExit(f"bench-scale: table location {uri} is not a local path")
    return uri


def schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType
    return Schema(NestedField(1, "id", LongType(), required=False),
                  NestedField(2, "region", StringType(), required=False),
                  NestedField(3, "v", DoubleType(), required=False))


def template(root):
    """The one 10-row Parquet file every data file is a link to (no field ids, as files
    registered by add_files usually are)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = os.path.join(root, "template.parquet")
    if not os.path.exists(path):
        t = pa.table({"id": pa.array(range(ROWS_PER_FILE), pa.int64()),
                      "region": pa.array([("eu", "us", "apac")[i % 3]
                                          for i in range(ROWS_PER_FILE)], pa.string()),
                      "v": pa.array([i * 0.5 for i in range(ROWS_PER_FILE)], pa.float64())})
        pq.write_table(t, path + ".tmp")
        os.replace(path + ".tmp", path)
    return path


def write_table(cat, name, n, per_manifest, tmpl, files_of=None):
    """Creates `name` holding n links to tmpl, listed in manifests of per_manifest files, in one
    append snapshot committed through PyIceberg. With files_of (another table's location), its
    data files are listed instead of new links, and a second snapshot deletes the first file
    (its manifest rewritten: 1 DELETED entry, n-1 EXISTING), so the first snapshot has something
    for expiry to compare: its manifest goes, the n-1 files the second keeps stay."""
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (compute_statistics_plan,
                                      data_file_statistics_from_parquet_metadata,
                                      parquet_path_to_id_mapping)
    from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestEntry,
                                    ManifestEntryStatus, write_manifest, write_manifest_list)
    from pyiceberg.table import TableProperties
    from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary, update_snapshot_summaries
    from pyiceberg.table.update import (AddSnapshotUpdate, AssertRefSnapshotId,
                                        SetSnapshotRefUpdate)

    sch = schema()
    tbl = cat.create_table(name, schema=sch, properties={
        TableProperties.DEFAULT_NAME_MAPPING: sch.name_mapping.model_dump_json()})
    md = tbl.metadata
    loc = tbl.location().rstrip("/")
    data = os.path.join(local_path(loc), "data")

    # One footer read for all n files: they are the same bytes.
    footer = pq.read_metadata(tmpl)
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=footer,
        stats_columns=compute_statistics_plan(md.schema(), md.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(md.schema()))
    size = os.path.getsize(tmpl)
    common = dict(content=DataFileContent.DATA, file_format=FileFormat.PARQUET,
                  partition=stats.partition(md.spec(), md.schema()), file_size_in_bytes=size,
                  sort_order_id=None, spec_id=md.default_spec_id, equality_ids=None,
                  key_metadata=None, **stats.to_serialized_dict())

    def rel(i):
        return f"d{i // FILES_PER_DIR:04}/part-{i:07}.parquet"

    # Links first (a directory's first file is a copy: ext4 caps an inode at 65,000 links).
    first = None
    for i in range(n if files_of is None else 0):
        path = os.path.join(data, rel(i))
        if i % FILES_PER_DIR == 0:
            os.makedirs(os.path.dirname(path))
            shutil.copyfile(tmpl, path)
            first = path
        else:
            os.link(first, path)

    snapshot_id = md.new_snapshot_id()
    sequence_number = md.next_sequence_number()
    commit_uuid = uuid.uuid4()
    compression = md.properties.get(TableProperties.WRITE_AVRO_COMPRESSION,
                                    TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
    locations = tbl.location_provider()
    manifests = []
    for k, start in enumerate(range(0, n, per_manifest)):
        out = tbl.io.new_output(locations.new_metadata_location(f"{commit_uuid}-m{k}.avro"))
        with write_manifest(format_version=md.format_version, spec=md.spec(),
                            schema=md.schema(), output_file=out, snapshot_id=snapshot_id,
                            avro_compression=compression) as w:
            for i in range(start, min(n, start + per_manifest)):
                w.add(ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                    sequence_number=None, file_sequence_number=None,
                    data_file=DataFile.from_args(file_path=f"{files_of or loc}/data/{rel(i)}",
                                                 **common)))
        manifests.append(w.to_manifest_file())

    def commit(tbl, md, manifest_files, snapshot_id, parent_id, sequence_number, commit_uuid,
               summary):
        """Writes the manifest list and commits the snapshot to main, as PyIceberg's
        _SnapshotProducer._commit does."""
        list_path = locations.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
        with write_manifest_list(format_version=md.format_version,
                                 output_file=tbl.io.new_output(list_path),
                                 snapshot_id=snapshot_id, parent_snapshot_id=parent_id,
                                 sequence_number=sequence_number,
                                 avro_compression=compression) as w:
            w.add_manifests(manifest_files)
        snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent_id,
                            manifest_list=list_path, sequence_number=sequence_number,
                            summary=summary, schema_id=md.current_schema_id)
        tx = tbl.transaction()
        tx._apply((AddSnapshotUpdate(snapshot=snapshot),
                   SetSnapshotRefUpdate(snapshot_id=snapshot_id, parent_snapshot_id=parent_id,
                                        ref_name=MAIN_BRANCH, type=SnapshotRefType.BRANCH)),
                  (AssertRefSnapshotId(snapshot_id=parent_id, ref=MAIN_BRANCH),))
        tx.commit_transaction()

    commit(tbl, md, manifests, snapshot_id, None, sequence_number, commit_uuid,
           update_snapshot_summaries(Summary(operation=Operation.APPEND, **{
               "added-data-files": str(n), "added-records": str(n * ROWS_PER_FILE),
               "added-files-size": str(n * size)})))
    if files_of is None:
        return len(manifests)

    # The second snapshot: the first file deleted, one manifest rewritten.
    tbl = cat.load_table(name)
    md = tbl.metadata
    first_id, first_seq = snapshot_id, sequence_number
    snapshot_id = md.new_snapshot_id()
    sequence_number = md.next_sequence_number()
    commit_uuid = uuid.uuid4()
    out = tbl.io.new_output(locations.new_metadata_location(f"{commit_uuid}-m0.avro"))
    with write_manifest(format_version=md.format_version, spec=md.spec(), schema=md.schema(),
                        output_file=out, snapshot_id=snapshot_id,
                        avro_compression=compression) as w:
        for i in range(n):
            status = ManifestEntryStatus.DELETED if i == 0 else ManifestEntryStatus.EXISTING
            w.add_entry(ManifestEntry.from_args(
                status=status, snapshot_id=snapshot_id if i == 0 else first_id,
                sequence_number=first_seq, file_sequence_number=first_seq,
                data_file=DataFile.from_args(file_path=f"{files_of}/data/{rel(i)}", **common)))
    commit(tbl, md, [w.to_manifest_file()], snapshot_id, first_id, sequence_number, commit_uuid,
           update_snapshot_summaries(
               Summary(operation=Operation.DELETE, **{
                   "deleted-data-files": "1", "deleted-records": str(ROWS_PER_FILE),
                   "removed-files-size": str(size)}),
               previous_summary=md.snapshot_by_id(first_id).summary))
    return len(manifests) + 1


def check_table(cat, name, n, read_rows):
    """PyIceberg reads what was written: plan_files finds n files, and (small n) to_arrow n*10
    rows."""
    tbl = cat.load_table(name)
    planned = len(list(tbl.scan().plan_files()))
    if planned != n:
        raise SystemExit(f"bench-scale: {name}: PyIceberg plans {planned} files, expected {n}")
    if read_rows:
        rows = tbl.scan().to_arrow().num_rows
        if rows != n * ROWS_PER_FILE:
            raise SystemExit(f"bench-scale: {name}: PyIceberg reads {rows} rows, expected "
                             f"{n * ROWS_PER_FILE}")


def generate(root, n, emit):
    """Both tables for n files, unless cached (marker written last)."""
    marker = os.path.join(root, f".complete-{n}")
    if os.path.exists(marker):
        return
    os.makedirs(root, exist_ok=True)
    tmpl = template(root)
    cat = catalog(root)
    cat.create_namespace_if_not_exists(NS)
    for layout in LAYOUTS:
        name = f"{NS}.{layout}_{n}"
        if cat.table_exists(name):  # an interrupted generation: start this table again
            loc = local_path(cat.load_table(name).location())
            cat.drop_table(name)
            shutil.rmtree(loc, ignore_errors=True)
        t0 = time.perf_counter()
        manifests = write_table(cat, name, n, n if layout == "few" else MANY_PER_MANIFEST, tmpl)
        secs = time.perf_counter() - t0
        t1 = time.perf_counter()
        # PyIceberg must read what was written; planning a million files is the benchmark's
        # job, not the generator's.
        check = "PyIceberg plan_files" if n <= 100_000 else "none (N > 100,000)"
        if n <= 100_000:
            check_table(cat, name, n, read_rows=n <= 10_000)
            check += " and to_arrow" if n <= 10_000 else ""
        emit({"command": "generate", "files": n, "layout": layout, "seconds": round(secs, 2),
              "manifests": manifests, "check_seconds": round(time.perf_counter() - t1, 2),
              "check": check})
    open(marker, "w").close()


def generate_history(root, n, emit):
    """scale.hist_N (for expiry): few_N's files in one manifest, then a second snapshot deleting
    the first file; unless cached."""
    marker = os.path.join(root, f".complete-hist-{n}")
    if os.path.exists(marker):
        return
    cat = catalog(root)
    name = f"{NS}.hist_{n}"
    if cat.table_exists(name):
        loc = local_path(cat.load_table(name).location())
        cat.drop_table(name)
        shutil.rmtree(loc, ignore_errors=True)
    few = cat.load_table(f"{NS}.few_{n}").location().rstrip("/")
    t0 = time.perf_counter()
    manifests = write_table(cat, name, n, n, template(root), files_of=few)
    secs = time.perf_counter() - t0
    t1 = time.perf_counter()
    check = "none (N > 100,000)"
    if n <= 100_000:
        planned = len(list(cat.load_table(name).scan().plan_files()))
        if planned != n - 1:
            raise SystemExit(f"bench-scale: {name}: PyIceberg plans {planned} files, expected "
                             f"{n - 1}")
        check = "PyIceberg plan_files"
    emit({"command": "generate", "files": n, "layout": "hist", "seconds": round(secs, 2),
          "manifests": manifests, "check_seconds": round(time.perf_counter() - t1, 2),
          "check": check})
    open(marker, "w").close()


# ---------------------------------------------------------------- measurements

def fresh_catalog(root, run_dir):
    """A copy of the cached catalog whose warehouse (new tables) is run_dir."""
    os.makedirs(run_dir)
    shutil.copy(os.path.join(root, "catalog.db"), run_dir)
    cfg = os.path.join(run_dir, "catalog.yaml")
    with open(cfg, "w") as f:
        f.write(f"catalog:\n  {CATALOG}:\n    type: sql\n"
                f"    uri: sqlite:///{run_dir}/catalog.db\n"
                f"    warehouse: file://{run_dir}/warehouse\n")
    return cfg


def timed(cmd, cwd, timeout):
    """Runs cmd under /usr/bin/time; returns (seconds, peak RSS MiB, stdout path) or raises
    RuntimeError with the reason. stdout goes to a file: a plan's JSON grows with the files."""
    tf, out, err = (os.path.join(cwd, x) for x in ("time.out", "stdout", "stderr"))
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%e %M", "-o", tf, *cmd], cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"timed out after {timeout:.0f} s")
    if rc != 0:
        with open(err) as e:
            tail = e.read()[-1500:].strip().replace("\n", " | ")
        raise RuntimeError(f"exit {rc}: {tail}")
    with open(tf) as f:
        secs, kb = f.read().split()[-2:]
    return float(secs), int(kb) / 1024, out


PY_PLAN = """
import json, sys, time
from pyiceberg.catalog.sql import SqlCatalog
run, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("bench", uri=f"sqlite:///{run}/catalog.db", warehouse=f"file://{run}/warehouse")
tbl = cat.load_table(name)
t0 = time.perf_counter()
tasks = len(list(tbl.scan().plan_files()))
print(json.dumps({"seconds": time.perf_counter() - t0, "tasks": tasks}))
"""


def summarize(cmd, out_path):
    """A few facts from a command's JSON output, to show it did the work measured."""
    try:
        with open(out_path) as f:
            text = f.read()
        size = len(text)
        j = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    facts = {}
    if cmd == "plan-only":
        facts = {"tasks": len(j.get("tasks", [])), "plan_mib": round(size / 2**20, 1)}
    elif cmd in ("dry-run", "copy"):
        facts = {k: v for k, v in j.items()
                 if k in ("rows_moved", "files_copied", "files_rewritten", "dry_run")
                 or "cop" in k}
    elif cmd == "verify":
        facts = {k: v for k, v in j.items() if not isinstance(v, (dict, list))}
    elif cmd == "health":
        facts = {"files": j.get("data", {}).get("files"), "score": j.get("score", {}).get("score"),
                 "partitions": j.get("partition_count"),
                 "problems": [p.get("kind") for p in j.get("problems", [])]}
    elif cmd == "maintain-dry":
        facts = {t.get("table"): [(k.get("task"), k.get("status")) for k in t.get("tasks", [])]
                 for t in j.get("tables", [])}
    elif isinstance(j, dict):
        facts = {k: (len(v) if isinstance(v, list) else v) for k, v in j.items()
                 if not isinstance(v, dict)}
    return dict(list(facts.items())[:8])


def command(cmd, a, cfg, run_dir, name):
    base = [a.binary, "--config", cfg]
    dest = ["--dest", f"{name}_dst", "--source-catalog", CATALOG, "--source", name]
    if cmd == "plan-only":
        # No --checkpoint: a plan refuses one (the commit step takes it).
        return base + ["migrate-data", *dest, "--create-dest", "--plan-only", "--output", "json"]
    if cmd == "dry-run":
        return base + ["migrate-data", *dest, "--create-dest", "--dry-run", "--output", "json"]
    if cmd == "copy":
        return base + ["migrate-data", *dest, "--create-dest", "--copy-mode", "auto",
                       "--output", "json"]
    if cmd == "verify":
        return base + ["verify", "--source-catalog", CATALOG, "--source", name, "--dest", name,
                       "--output", "json"]
    table = base + ["table"]
    tail = [name, "--catalog", CATALOG, "--dry-run", "--output", "json"]
    if cmd == "compact-dry":
        return table + ["compact", *tail]
    if cmd == "expire-dry":
        return table + ["expire-snapshots", *tail, "--older-than", str(int(time.time() * 1000))]
    if cmd == "orphans-dry":
        return table + ["remove-orphans", *tail, "--older-than", "0s", "--force"]
    if cmd == "health":
        return table + ["health", name, "--catalog", CATALOG, "--output", "json"]
    if cmd == "maintain-dry":
        return base + ["maintain", name, "--catalog", CATALOG, "--dry-run", "--output", "json",
                       "--state", os.path.join(run_dir, "state.json")]
    raise ValueError(cmd)


def main():
    a = parse_args()
    root = os.path.join(a.cache, "bench-scale")
    base_rss = {}
    rows = []

    def emit(r):
        n = r["files"]
        key = (r["command"], r["layout"])
        if "rss_mib" in r:
            if n == 10_000:
                base_rss[key] = r["rss_mib"]
            if key in base_rss:
                r["rss_vs_10k"] = round(r["rss_mib"] / base_rss[key], 2)
                if n != 10_000:
                    r["kib_per_file"] = round((r["rss_mib"] - base_rss[key]) * 1024
                                              / (n - 10_000), 2)
        rows.append(r)
        if a.json:
            print(json.dumps(r), flush=True)
            return
        line = f"{r['command']:<15} files={n:<8} layout={r['layout']:<4}"
        if "seconds" in r:
            line += f" seconds={r['seconds']:<8}"
        if "rss_mib" in r:
            line += f" rss_mib={r['rss_mib']:<7}"
            line += f" rss_vs_10k={r.get('rss_vs_10k', '-'):<5}"
            line += f" kib_per_file={r.get('kib_per_file', '-')}"
        rest = {k: v for k, v in r.items() if k not in (
            "command", "files", "layout", "seconds", "rss_mib", "rss_vs_10k", "kib_per_file")}
        if rest:
            line += "  " + " ".join(f"{k}={json.dumps(v)}" for k, v in rest.items())
        print(line, flush=True)

    if not a.json:
        print(f"# binary {a.binary}; tables in {root}", flush=True)
    for n in a.files:
        generate(root, n, emit)
        if "expire-dry" in a.only or a.generate_only:
            generate_history(root, n, emit)
    if a.generate_only:
        return

    pyiceberg_stopped = None
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as work:
        for n in a.files:
            for layout in a.layouts:
                name = f"{NS}.{layout}_{n}"
                for cmd in COMMANDS:
                    if cmd not in a.only:
                        continue
                    layout_shown, table = layout, name
                    if cmd == "expire-dry":
                        # Expiry needs history: the hist table, once per N.
                        if layout != a.layouts[0]:
                            continue
                        layout_shown, table = "hist", f"{NS}.hist_{n}"
                    if cmd == "copy" and n > a.copy_max:
                        emit({"command": cmd, "files": n, "layout": layout_shown,
                              "note": f"skipped: above --copy-max {a.copy_max}"})
                        continue
                    if cmd == "pyiceberg-plan" and pyiceberg_stopped:
                        emit({"command": cmd, "files": n, "layout": layout_shown,
                              "note": f"stopped: {pyiceberg_stopped}"})
                        continue
                    run_dir = os.path.join(work, f"{cmd}-{layout_shown}-{n}")
                    cfg = fresh_catalog(root, run_dir)
                    r = {"command": cmd, "files": n, "layout": layout_shown}
                    try:
                        if cmd == "pyiceberg-plan":
                            _, mib, out = timed([sys.executable, "-c", PY_PLAN, run_dir, table],
                                                run_dir, a.pyiceberg_budget)
                            with open(out) as f:
                                j = json.load(f)
                            r.update(seconds=round(j["seconds"], 2), rss_mib=round(mib, 1),
                                     tasks=j["tasks"])
                            if j["seconds"] > a.pyiceberg_budget:
                                pyiceberg_stopped = (f"{j['seconds']:.0f} s at {n} files, over "
                                                     f"--pyiceberg-budget")
                        else:
                            secs, mib, out = timed(command(cmd, a, cfg, run_dir, table),
                                                   run_dir, a.timeout)
                            r.update(seconds=round(secs, 2), rss_mib=round(mib, 1),
                                     **summarize(cmd, out))
                    except RuntimeError as e:
                        r["failed"] = str(e)
                        if cmd == "pyiceberg-plan" and "timed out" in str(e):
                            pyiceberg_stopped = f"over --pyiceberg-budget at {n} files"
                    shutil.rmtree(run_dir, ignore_errors=True)
                    emit(r)


if __name__ == "__main__":
    main()
