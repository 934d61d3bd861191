"""Runs a snippet against a catalog with PyIceberg, the tests' independent oracle.

stdin: {"catalog": NAME, "properties": {...PyIceberg catalog properties...}, "code": "..."}
The snippet runs with `catalog`, `pa` (pyarrow), `json` and these helpers in scope:
  rows(table, snapshot_id=None) -> list of row dicts, sorted
  describe(table) -> {"schema": [...], "spec": [...], "snapshots": [...], "current": id}
  emit(obj) -> the result handed back to the test (call once)
"""

import json
import sys

import pyarrow as pa
from pyiceberg.catalog import load_catalog

MARKER = "__ORACLE_RESULT__"


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def rows(table, snapshot_id=None):
    scan = table.scan(snapshot_id=snapshot_id) if snapshot_id is not None else table.scan()
    out = [_jsonable(r) for r in scan.to_arrow().to_pylist()]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def describe(table):
    md = table.metadata
    return {
        "schema": [
            {"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
            for f in table.schema().fields
        ],
        "spec": [
            {"source_id": f.source_id, "name": f.name, "transform": str(f.transform)}
            for f in table.spec().fields
        ],
        "snapshots": [
            {
                "id": s.snapshot_id,
                "parent": s.parent_snapshot_id,
                "sequence_number": s.sequence_number,
                "operation": str(s.summary.operation) if s.summary else None,
                "summary": _jsonable(dict(s.summary.additional_properties)) if s.summary else {},
            }
            for s in md.snapshots
        ],
        "current": md.current_snapshot_id,
    }


def emit(obj):
    print(MARKER + json.dumps(_jsonable(obj)))
    sys.stdout.flush()


def _nest_ssl(properties):
    # PyIceberg reads `ssl` as a nested mapping (ssl: {cabundle, client: {cert, key}}), as
    # .pyiceberg.yaml writes it; the tests pass the flat keys iceberg-ops reads.
    out = {}
    for key, value in properties.items():
        if key.startswith("ssl."):
            node = out.setdefault("ssl", {})
            parts = key.split(".")[1:]
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = False if value == "false" else value
        else:
            out[key] = value
    return out


def main():
    request = json.load(sys.stdin)
    catalog = load_catalog(request["catalog"], **_nest_ssl(request["properties"]))
    scope = {
        "catalog": catalog,
        "pa": pa,
        "json": json,
        "rows": rows,
        "describe": describe,
        "emit": emit,
    }
    exec(compile(request["code"], "<oracle snippet>", "exec"), scope)


if __name__ == "__main__":
    main()
