"""The table fuzzer's fixed seeds of its `py_filter` path (tests/fuzz/seeds-python.txt): for each
seed PyIceberg writes a random table, the installed package copies it with a random row filter
given as a PyIceberg expression, and the rows are judged on PyIceberg's full read (docs/testing.md,
The table fuzzer). Here rather than in tests/it/fuzz.rs because the path needs the wheel."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_the_python_filter_seeds_pass(tmp_path):
    report = tmp_path / "report.json"
    # The path runs no iceberg-ops command: the driver's --binary is never called.
    out = subprocess.run(
        [sys.executable, str(REPO / "tests" / "fuzz" / "fuzz_tables.py"), "--binary", "/bin/false",
         "--seeds-file", str(REPO / "tests" / "fuzz" / "seeds-python.txt"), "--paths", "py_filter",
         "--no-shrink", "--quiet", "--work", str(tmp_path / "work"), "--report", str(report)],
        capture_output=True, text=True,
    )
    assert report.exists(), out.stdout + out.stderr
    cases = json.loads(report.read_text())["cases"]
    statuses = [(c["seed"], p["status"], p.get("problems") or p.get("message"))
                for c in cases for p in c["paths"]]
    assert len(statuses) == 15, statuses
    bad = [s for s in statuses if s[1] not in ("pass", "refused", "no-oracle")]
    assert not bad, bad
    # Most seeds are judged (a skip would mean the package was not imported), the regression
    # seeds every one.
    assert sum(s[1] == "pass" for s in statuses) >= 10, statuses
    regressions = {600070, 600095, 600111, 600119}
    assert all(s[1] == "pass" for s in statuses if s[0] in regressions), statuses
    assert out.returncode == 0, out.stdout + out.stderr
