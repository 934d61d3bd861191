"""`import add-files` against PyIceberg's `Table.add_files` (see scripts/bench-import)."""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

PER_DIR = 1000

PY_ADD = r"""
import json, os, sys, time, resource
from pyiceberg.catalog import load_catalog
catalog = load_catalog("bench", **{"type": "sql", "uri": sys.argv[1], "warehouse": sys.argv[2],
                                   **json.loads(os.environ.get("BENCH_PROPS", "{}"))})
paths = [l.strip() for l in open(sys.argv[3]) if l.strip()]
t = catalog.load_table("bench.pyiceberg")
start = time.monotonic()
t.add_files(paths)
print("SECONDS", time.monotonic() - start)
"""

PY_SETUP = r"""
import sys
import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
import json, os
catalog = load_catalog("bench", **{"type": "sql", "uri": sys.argv[1], "warehouse": sys.argv[2],
                                   **json.loads(os.environ.get("BENCH_PROPS", "{}"))})
catalog.create_namespace("bench")
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "region", StringType(), required=False),
                NestedField(3, "v", LongType(), required=False))
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
for name in ("pyiceberg", "ours"):
    catalog.create_table(f"bench.{name}", schema=schema, partition_spec=spec)
"""

PY_SUMMARY = r"""
import sys, json, os
from pyiceberg.catalog import load_catalog
catalog = load_catalog("bench", **{"type": "sql", "uri": sys.argv[1], "warehouse": sys.argv[2],
                                   **json.loads(os.environ.get("BENCH_PROPS", "{}"))})
out = {}
for name in ("pyiceberg", "ours"):
    s = catalog.load_table(f"bench.{name}").current_snapshot()
    out[name] = None if s is None else {
        "files": s.summary.get("total-data-files"), "records": s.summary.get("total-records")}
print(json.dumps(out))
"""


def generate(py, root, files):
    """The tree: region=rNNNN/ folders of PER_DIR hard links to one 10-row file each."""
    if os.path.isdir(root) and sum(len(fs) for _, _, fs in os.walk(root)) >= files:
        return
    shutil.rmtree(root, ignore_errors=True)
    code = r"""
import os, sys
import pyarrow as pa, pyarrow.parquet as pq
root, files, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range((files + per - 1) // per):
    region = f"r{d:04d}"
    folder = os.path.join(root, f"region={region}")
    os.makedirs(folder)
    first = os.path.join(folder, "part-000000.parquet")
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()),
                             "region": [region] * 10,
                             "v": pa.array(range(10), pa.int64())}), first)
    for i in range(1, min(per, files - d * per)):
        os.link(first, os.path.join(folder, f"part-{i:06d}.parquet"))
"""
    subprocess.run([py, "-c", code, root, str(files), str(PER_DIR)], check=True)


def timed(cmd, env=None, watch=None):
    """(seconds, peak RSS MiB, stdout, first) of `cmd` under /usr/bin/time -v; `first` is the
    seconds until the glob `watch` first matched a file (None: never, or no `watch`)."""
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    first = [None]

    def poll():
        while p.poll() is None and first[0] is None:
            if glob.glob(watch, recursive=True):
                first[0] = time.monotonic() - start
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=poll) if watch else None
    if watcher:
        watcher.start()
    out, err = p.communicate()
    seconds = time.monotonic() - start
    if watcher:
        watcher.join()
        if first[0] is None and glob.glob(watch, recursive=True):
            first[0] = seconds
    if p.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out}\n{err}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    return seconds, (int(rss.group(1)) / 1024 if rss else float("nan")), out, first[0]


def moto(py, work, root):
    """moto_server (tests/py/moto_server.py) on a free port with bucket `bench` holding the tree
    under `src/`: (process, S3 properties, the tree's URI, the files' URIs)."""
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    here = os.path.dirname(os.path.abspath(__file__))
    log = open(os.path.join(work, "moto.log"), "w")
    proc = subprocess.Popen([py, os.path.join(here, "..", "tests", "py", "moto_server.py"),
                             "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(endpoint, timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    props = {"s3.endpoint": endpoint, "s3.access-key-id": "testing",
             "s3.secret-access-key": "testing", "s3.region": "us-east-1",
             "s3.path-style-access": "true"}
    code = r"""
import os, sys
import pyarrow.fs as pafs
endpoint, root = sys.argv[1], sys.argv[2]
fs = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing",
                       region="us-east-1", scheme="http", allow_bucket_creation=True)
fs.create_dir("bench")
pafs.copy_files(root, "bench/src", source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=fs, use_threads=True)
"""
    subprocess.run([py, "-c", code, endpoint, root], check=True)
    uris = []
    for d, _, fs in sorted(os.walk(root)):
        for name in sorted(fs):
            rel = os.path.relpath(os.path.join(d, name), root)
            uris.append(f"s3://bench/src/{rel}")
    return proc, props, "s3://bench/src", uris


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--default-binary", required=True)
    ap.add_argument("--binary")
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--pyiceberg-budget", type=int, default=1800,
                    help="seconds PyIceberg may take before it is stopped (say so)")
    ap.add_argument("--batch-files", type=int,
                    help="pass --batch-files N to iceberg-ops (commits every N files)")
    ap.add_argument("--no-pyiceberg", action="store_true",
                    help="time iceberg-ops only (e.g. at 1M files, where PyIceberg takes long)")
    ap.add_argument("--s3", action="store_true",
                    help="the tree on moto S3 (uploaded first; no target: moto limits both sides)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = args.binary or args.default_binary
    py = sys.executable
    root = os.path.join(args.cache, "bench-import", str(args.files), "src")
    generate(py, root, args.files)

    work = tempfile.mkdtemp(prefix="bench-import-")
    server = None
    try:
        uri = f"sqlite:///{work}/catalog.db"
        warehouse = f"file://{work}/wh"
        s3_props, source, uris = {}, root, None
        if args.s3:
            server, s3_props, source, uris = moto(py, work, root)
        env = dict(os.environ, BENCH_PROPS=json.dumps(s3_props))
        subprocess.run([py, "-c", PY_SETUP, uri, warehouse], check=True, env=env)
        config = os.path.join(work, ".pyiceberg.yaml")
        with open(config, "w") as f:
            f.write(f"catalog:\n  bench:\n    type: sql\n    uri: {uri}\n    warehouse: {warehouse}\n")
            for k, v in s3_props.items():
                f.write(f"    {k}: \"{v}\"\n")
        paths = os.path.join(work, "paths.txt")
        with open(paths, "w") as f:
            if uris is not None:
                f.write("\n".join(uris) + "\n")
            else:
                for d, _, fs in sorted(os.walk(root)):
                    for name in sorted(fs):
                        f.write(os.path.join(d, name) + "\n")

        batch = ["--batch-files", str(args.batch_files)] if args.batch_files else []
        # The manifest list is written just before the commit: its first one marks the
        # first commit (with --batch-files, long before the last).
        ours_s, ours_rss, _, first_commit = timed(
            [binary, "--config", config, "import", "add-files", "--catalog", "bench",
             "--table", "bench.ours", "--from", source] + batch,
            watch=os.path.join(work, "wh", "**", "ours", "metadata", "snap-*.avro"))
        py_script = os.path.join(work, "py_add.py")
        with open(py_script, "w") as f:
            f.write(PY_ADD)
        try:
            if args.no_pyiceberg:
                raise SystemExit("not run")
            py_s, py_rss, out, _ = timed(["timeout", str(args.pyiceberg_budget), py,
                                          py_script, uri, warehouse, paths], env=env)
            m = re.search(r"SECONDS ([0-9.]+)", out)
            py_add = float(m.group(1)) if m else py_s
            stopped = False
        except SystemExit:
            py_s, py_rss, py_add, stopped = float("nan"), float("nan"), float("nan"), True
        summary = json.loads(subprocess.run([py, "-c", PY_SUMMARY, uri, warehouse],
                                            check=True, capture_output=True, text=True,
                                            env=env).stdout)
        result = {
            "files": args.files,
            "iceberg_ops_seconds": round(ours_s, 2),
            "iceberg_ops_peak_rss_mib": round(ours_rss, 1),
            "iceberg_ops_first_commit_seconds": None if first_commit is None
            else round(first_commit, 2),
            "batch_files": args.batch_files,
            "pyiceberg_seconds_whole_process": None if stopped else round(py_s, 2),
            "pyiceberg_add_files_seconds": None if stopped else round(py_add, 2),
            "pyiceberg_peak_rss_mib": None if stopped else round(py_rss, 1),
            "pyiceberg_stopped_at_budget": stopped,
            "speedup_vs_pyiceberg_add_files": None if stopped else round(py_add / ours_s, 2),
            "summaries": summary,
            "binary": binary,
        }
        expected = {"files": str(args.files), "records": str(10 * args.files)}
        if summary["ours"] != expected:
            raise SystemExit(f"iceberg-ops's table is not the {args.files} files: {summary}")
        if not stopped and summary["ours"] != summary["pyiceberg"]:
            raise SystemExit(f"the two tables differ: {summary}")
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"files: {args.files}" + (" (on moto S3)" if args.s3 else ""))
            print(f"iceberg-ops import add-files: {result['iceberg_ops_seconds']} s, "
                  f"peak RSS {result['iceberg_ops_peak_rss_mib']} MiB (whole process)"
                  + (f", --batch-files {args.batch_files}" if args.batch_files else ""))
            print(f"  first commit after {result['iceberg_ops_first_commit_seconds']} s")
            if args.no_pyiceberg:
                print("PyIceberg add_files: not run (--no-pyiceberg)")
            elif stopped:
                print(f"PyIceberg add_files: stopped at its budget of {args.pyiceberg_budget} s")
            else:
                print(f"PyIceberg add_files: {result['pyiceberg_add_files_seconds']} s "
                      f"(process {result['pyiceberg_seconds_whole_process']} s, peak RSS "
                      f"{result['pyiceberg_peak_rss_mib']} MiB)")
                print(f"speed-up: {result['speedup_vs_pyiceberg_add_files']}x")
            print(f"tables: {summary}")
    finally:
        if server is not None:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
