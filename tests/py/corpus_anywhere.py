"""The corpus scripts (make_corpus.py, corpus_extra.py) and the benchmark table's generator
(gen_source.py) run unchanged against any catalog PyIceberg can load, for tests/it/cluster.rs.

The scripts open a SQLite catalog with a local warehouse themselves; the cluster's tests need the
same tables in an S3 warehouse (moto), where an executor can reach nothing on the client's disk.
So each script is imported and its `main` run with its catalog constructor replaced by the
oracle's catalog. One shape needs more: `no_field_ids` writes its Hive-style files with plain
pyarrow into a local folder and `add_files` them; those files are uploaded next to the table's
data first and added from there, so the table holds only files in the warehouse.
"""
import importlib.util
import os
import sys
import tempfile


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _UploadingTable:
    """A table whose `add_files` first copies local (`file://`) files under the table's location."""

    def __init__(self, table):
        self._table = table

    def __getattr__(self, name):
        return getattr(self._table, name)

    def add_files(self, file_paths, **kwargs):
        moved = []
        for path in file_paths:
            if not path.startswith("file://"):
                moved.append(path)
                continue
            local = path[len("file://"):]
            target = f"{self._table.location().rstrip('/')}/external/{os.path.basename(local)}"
            with open(local, "rb") as src, self._table.io.new_output(target).create(overwrite=True) as out:
                out.write(src.read())
            moved.append(target)
        return self._table.add_files(moved, **kwargs)


class _Catalog:
    """`catalog` for a script: tables it creates upload what they add from local files."""

    def __init__(self, catalog):
        self._catalog = catalog

    def __getattr__(self, name):
        return getattr(self._catalog, name)

    def create_table(self, *args, **kwargs):
        return _UploadingTable(self._catalog.create_table(*args, **kwargs))


def _run_main(module, argv):
    saved = sys.argv
    sys.argv = [module.__file__] + argv
    try:
        module.main()
    finally:
        sys.argv = saved


def corpus(catalog, scripts, rows):
    """Runs each corpus script (make_corpus.py's interface) into `catalog`, namespace `corpus`;
    returns the names of the tables written, in the scripts' order."""
    names = []
    with tempfile.TemporaryDirectory() as scratch:  # the scripts' own local files; removed after
        for i, path in enumerate(scripts):
            module = _module(path, f"corpus_script_{i}")
            module.SqlCatalog = lambda *_args, **_kwargs: _Catalog(catalog)
            _run_main(module, ["--warehouse", os.path.join(scratch, str(i)), "--rows", str(rows)])
            names += module.TABLES
    return names


def bench(catalog, script, rows, files):
    """gen_source.py's `bench.orders` (`rows` rows in `files` appends) in `catalog`."""
    module = _module(script, "gen_source")
    module.catalog = lambda _warehouse: catalog
    _run_main(module, ["--warehouse", "unused", "--rows", str(rows), "--files", str(files)])
    return "bench.orders"
