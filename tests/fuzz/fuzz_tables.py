#!/usr/bin/env python3
"""The differential table fuzzer: PyIceberg writes a table from a seed, iceberg-ops runs 2-3 of
its paths on it, PyIceberg judges the outcome.

    fuzz_tables.py --binary PATH (--seed S [--cases N] [--minutes M] | --seeds-file F | --replay FILE)
                   [--paths p1,p2] [--work DIR] [--keep] [--no-shrink] [--report FILE] [--jobs N]

Case i of a run uses seed S+i and is reproducible from that seed alone (gen.py). A failing path
is shrunk (shrink.py: history ops, columns, spec fields, properties and rows are dropped while the
same failure remains) and written as a replay file, printed with the one command that reruns it.
Exit status: 0 when no path failed, 1 otherwise (no-oracle and refused runs are not failures).
See docs/testing.md, "The table fuzzer".
"""

import argparse
import concurrent.futures
import copy
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.setrecursionlimit(100_000)
warnings.filterwarnings("ignore")

import build  # noqa: E402
import gen  # noqa: E402
import paths  # noqa: E402
import shrink  # noqa: E402

STATUSES = ["pass", "fail", "refused", "no-oracle", "skip", "error"]


class Outcome:
    def __init__(self, case):
        self.seed = case["seed"]
        self.case = case
        self.results = []
        self.build_notes = []
        self.secs = 0.0
        self.root = None

    @property
    def failed(self):
        return [r for r in self.results if r.status in ("fail", "error")]


def run_case(case, binary, work, only=None, keep=False):
    """Builds the case's table and runs its paths (or `only`); returns an Outcome."""
    out = Outcome(case)
    t0 = time.time()
    root = tempfile.mkdtemp(prefix=f"case-{case['seed']}-", dir=work)
    out.root = root
    try:
        env = paths.Env(root, binary)
        try:
            build.build(env.catalog, "src.t", case, out.build_notes)
        except Exception as e:  # noqa: BLE001 - PyIceberg refuses the table itself
            for p in only or case["paths"]:
                out.results.append(paths.Result(p).set(
                    "no-oracle", f"PyIceberg cannot create the table: {type(e).__name__}: {str(e)[:300]}"))
            return out
        for p in sorted(only or case["paths"], key=paths.ORDER.index):
            try:
                res = paths.run_path(env, case, p)
            except Exception as e:  # noqa: BLE001 - the harness itself broke: reported apart
                res = paths.Result(p)
                res.status = "error"
                res.kind = "harness:" + type(e).__name__
                res.problems.append(traceback.format_exc()[-2500:])
            res.commands = [r.shown() for r in env.runs]
            env.runs = []
            out.results.append(res)
    finally:
        out.secs = time.time() - t0
        if not keep and not out.failed:
            shutil.rmtree(root, ignore_errors=True)
    return out


def signature_of(res):
    return f"{res.path}:{res.kind}"


def line(o):
    parts = []
    for r in o.results:
        tag = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}.get(r.status, r.status)
        parts.append(f"{r.path} {tag}" + (f"({r.kind})" if r.kind else ""))
    return f"seed {o.seed}: " + ", ".join(parts) + f"  [{o.secs:.1f}s]"


def rerun_command(seed, replay=None, path=None, generator=gen.VERSION):
    cmd = f"scripts/fuzz-tables --seed {seed} --cases 1"
    if generator != gen.VERSION:
        cmd += f" --generator {generator}"
    if replay:
        cmd += f" --replay {replay}"
    elif path:
        cmd += f" --paths {path}"
    return cmd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True, help="the iceberg-ops binary")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock, printed)")
    ap.add_argument("--cases", type=int, default=None, help="number of cases (seeds S, S+1, ...)")
    ap.add_argument("--minutes", type=float, default=None, help="stop starting cases after this long")
    ap.add_argument("--seeds-file", help="run these seeds (one per line, # comments; its '# generator N' line "
                                         "says which generator version makes their cases)")
    ap.add_argument("--generator", type=int, default=gen.VERSION,
                    help=f"the generator version that makes the cases of --seed (default {gen.VERSION}; "
                         f"one of {', '.join(map(str, gen.SUPPORTED))})")
    ap.add_argument("--replay", help="run this case file (a shrunk failure) instead of generating one")
    ap.add_argument("--paths", help="only these paths (comma-separated)")
    ap.add_argument("--work", help="directory for case tables (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep every case's directory")
    ap.add_argument("--no-shrink", action="store_true", help="report failures without shrinking them")
    ap.add_argument("--shrink-seconds", type=float, default=300, help="time budget per shrink (default 300)")
    ap.add_argument("--report", help="write every case's outcome as JSON here")
    ap.add_argument("--failures", help="directory for replay files (default: <work>/failures)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    ap.add_argument("--quiet", action="store_true", help="print failing cases only")
    a = ap.parse_args(argv)

    if not os.access(a.binary, os.X_OK):
        print(f"iceberg-ops binary not found or not executable: {a.binary}", file=sys.stderr)
        return 2
    work = a.work or tempfile.mkdtemp(prefix="fuzz-tables-")
    os.makedirs(work, exist_ok=True)
    fail_dir = a.failures or os.path.join(work, "failures")
    only = a.paths.split(",") if a.paths else None
    if only:
        unknown = [p for p in only if p not in paths.RUNNERS]
        if unknown:
            print(f"unknown paths {unknown}; known: {', '.join(paths.ORDER)}", file=sys.stderr)
            return 2

    generator = a.generator
    if generator not in gen.SUPPORTED:
        print(f"--generator {generator}: gen.py generates versions {', '.join(map(str, gen.SUPPORTED))}",
              file=sys.stderr)
        return 2
    if a.replay:
        with open(a.replay) as f:
            cases = [json.load(f)]
        generator = cases[0].get("generator", 1)
        seeds = [cases[0]["seed"]]
    elif a.seeds_file:
        seeds = []
        version = None
        with open(a.seeds_file) as f:
            for ln in f:
                m = re.match(r"#\s*generator\s+(\d+)", ln)
                if m:
                    version = int(m.group(1))
                ln = ln.split("#", 1)[0].strip()
                if ln:
                    seeds.append(int(ln))
        if version not in gen.SUPPORTED:
            # A seed names a case only for the generator it was picked with.
            print(f"{a.seeds_file} was picked with generator version {version}, gen.py generates versions "
                  f"{', '.join(map(str, gen.SUPPORTED))}: pick the seeds again (docs/testing.md, The table "
                  f"fuzzer) and update its '# generator N' line", file=sys.stderr)
            return 2
        generator = version
        cases = None
    else:
        start = a.seed if a.seed is not None else int(time.time()) % 1_000_000
        n = a.cases if a.cases is not None else (10 ** 9 if a.minutes else 1)
        seeds = range(start, start + n)
        cases = None
        print(f"fuzz-tables: seeds from {start}, work directory {work}", flush=True)

    deadline = time.time() + a.minutes * 60 if a.minutes else None
    outcomes = []
    t0 = time.time()

    def case_for(i, seed):
        if cases is not None:
            c = cases[i]
            c.setdefault("params", {})
            return c
        c = gen.generate(seed, generator)
        if only:
            c["paths"] = list(only)
        return c

    def handle(o):
        outcomes.append(o)
        if not a.quiet or o.failed:
            print(line(o), flush=True)
            for r in o.results:
                if r.status == "refused" or (r.status == "no-oracle" and not a.quiet):
                    print(f"    {r.path} {r.status}: {r.message}", flush=True)
                for p in r.problems[:6] if r.status in ("fail", "error") else []:
                    print("    " + p.replace("\n", "\n      ")[:3000], flush=True)

    it = iter(enumerate(seeds))
    if a.jobs <= 1:
        for i, seed in it:
            if deadline and time.time() > deadline:
                break
            handle(run_case(case_for(i, seed), a.binary, work, keep=a.keep))
    else:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            # Cases run in threads of one process: PyIceberg and the CLI subprocesses release the
            # GIL for their I/O. Each case has its own directory and catalog.
            running = set()
            for i, seed in it:
                if deadline and time.time() > deadline:
                    break
                running.add(pool.submit(run_case, case_for(i, seed), a.binary, work, None, a.keep))
                if len(running) >= a.jobs:
                    done, running = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
                    for d in done:
                        handle(d.result())
            for d in concurrent.futures.as_completed(running):
                handle(d.result())

    # Shrink each distinct failure once (the first seed showing it).
    findings = []
    seen = {}
    for o in outcomes:
        for r in o.failed:
            sig = signature_of(r)
            if sig in seen:
                seen[sig]["seeds"].append(o.seed)
                continue
            entry = {"signature": sig, "seeds": [o.seed], "path": r.path, "problems": r.problems[:4],
                     "commands": getattr(r, "commands", [])[-3:], "replay": None, "shrunk": None,
                     "build_notes": o.build_notes}
            seen[sig] = entry
            findings.append(entry)
            case = copy.deepcopy(o.case)
            case["paths"] = [r.path]
            os.makedirs(fail_dir, exist_ok=True)
            if not a.no_shrink and r.status == "fail":
                print(f"shrinking seed {o.seed} ({sig}) ...", flush=True)
                small, stats = shrink.shrink(case, r.path, sig, lambda c: run_case(c, a.binary, work, [r.path]),
                                             budget=a.shrink_seconds)
                entry["shrunk"] = stats
                case = small
            path = os.path.join(fail_dir, f"seed-{o.seed}-{r.path}.json")
            with open(path, "w") as f:
                json.dump(case, f, indent=1, ensure_ascii=False)
            entry["replay"] = path
            entry["case_summary"] = shrink.summary(case)

    # Summary.
    per_path = defaultdict(Counter)
    overall = Counter()
    for o in outcomes:
        for r in o.results:
            per_path[r.path][r.status] += 1
            overall[r.status] += 1
    runs = sum(overall.values())
    print()
    print(f"fuzz-tables: {len(outcomes)} cases, {runs} path runs in {time.time() - t0:.0f}s")
    print("  " + ", ".join(f"{s} {overall[s]}" for s in STATUSES if overall[s]) +
          (f"  (no-oracle {100 * overall['no-oracle'] / runs:.1f}%, refused {100 * overall['refused'] / runs:.1f}%)"
           if runs else ""))
    for p in paths.ORDER:
        if per_path[p]:
            print(f"  {p:20} " + ", ".join(f"{s} {per_path[p][s]}" for s in STATUSES if per_path[p][s]))
    if findings:
        print(f"\n{len(findings)} distinct failure(s):")
        for e in findings:
            print(f"- {e['signature']}  seeds {', '.join(map(str, e['seeds'][:12]))}"
                  + (f" (+{len(e['seeds']) - 12})" if len(e["seeds"]) > 12 else ""))
            print(f"    {e['problems'][0][:600]}" if e["problems"] else "")
            if e.get("case_summary"):
                print(f"    case: {e['case_summary']}")
            print(f"    rerun: {rerun_command(e['seeds'][0], e['replay'], generator=generator)}")
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"generator": generator, "cases": [{"seed": o.seed, "secs": round(o.secs, 2), "paths": [r.to_json() for r in o.results],
                                  "build_notes": o.build_notes[:5]} for o in outcomes],
                       "findings": findings, "totals": dict(overall)}, f, indent=1, ensure_ascii=False, default=str)
    if not a.work and not a.keep and not findings:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
