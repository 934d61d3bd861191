"""Fixtures of the Python package's tests, run by scripts/test against the installed wheel.

Every table is made and read back with PyIceberg 0.12, the independent oracle; iceberg_ops only
migrates, reconciles and verifies.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

REPO = Path(__file__).resolve().parents[3]
# The corpus generator and the exact comparison of tables/it/corpus.rs uses.
sys.path.insert(0, str(REPO / "tests" / "py"))


def sql_catalog(root: Path, name: str = "lake") -> SqlCatalog:
    root.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(
        name, uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    cat = sql_catalog(tmp_path / "lake")
    cat.create_namespace("s")
    return cat


CORPUS_ROWS = int(os.environ.get("ICEBERG_OPS_PY_CORPUS_ROWS", "2000"))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> SqlCatalog:
    """The eight corpus tables of tests/corpus/make_corpus.py, once per session."""
    root = tmp_path_factory.mktemp("corpus")
    subprocess.run(
        [sys.executable, str(REPO / "tests" / "corpus" / "make_corpus.py"),
         "--warehouse", str(root), "--rows", str(CORPUS_ROWS)],
        check=True, stdout=subprocess.DEVNULL,
    )
    return SqlCatalog("corpus", uri=f"sqlite:///{root}/catalog.db",
                      warehouse=f"file://{root}/warehouse")
