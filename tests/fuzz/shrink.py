"""Shrinks a failing case: drops history ops, columns, spec fields, properties and rows (and the
path's own rows and filter branches) while the same failure (path and kind) remains.

Greedy, in passes: each candidate is the current case with one thing removed; the first one that
still fails the same way becomes the current case. Chunks before single items (ops and rows are
halved first). Stops when a pass removes nothing, or the time budget is spent.
"""

import copy
import json
import time


def _still_fails(run, case, signature):
    o = run(case)
    return any(f"{r.path}:{r.kind}" == signature for r in o.results if r.status == "fail")


def _chunks(n):
    size = n // 2
    while size >= 1:
        for start in range(0, n, size):
            yield start, min(n, start + size)
        size //= 2


def _candidates(case, path):
    """Smaller variants of `case`, roughly biggest cut first."""
    ops = case["ops"]
    # History ops, in chunks.
    for a, b in _chunks(len(ops)):
        c = copy.deepcopy(case)
        del c["ops"][a:b]
        yield f"drop ops {a}..{b - 1}", c
    # Top-level columns other than the key (ops touching them are skipped by the builder).
    for i, f in enumerate(case["schema"]):
        if f["name"] == case.get("key"):
            continue
        c = copy.deepcopy(case)
        del c["schema"][i]
        c["spec"] = [s for s in c["spec"] if s["source"][0] != f["name"]]
        yield f"drop column {f['name']!r}", c
    for i in range(len(case["spec"])):
        c = copy.deepcopy(case)
        del c["spec"][i]
        yield f"drop spec field {i}", c
    for k in list(case.get("props", {})):
        c = copy.deepcopy(case)
        del c["props"][k]
        yield f"drop property {k}", c
    # Rows of each op, halves then single rows.
    for i, op in enumerate(ops):
        rows = op.get("rows") or []
        for a, b in _chunks(len(rows)):
            if b - a == len(rows) and op["op"] != "overwrite":
                continue
            c = copy.deepcopy(case)
            del c["ops"][i]["rows"][a:b]
            yield f"drop rows {a}..{b - 1} of op {i}", c
    # The path's own rows and filter.
    params = case.get("params", {}).get(path, {})
    rows = params.get("rows") or []
    for a, b in _chunks(len(rows)):
        c = copy.deepcopy(case)
        del c["params"][path]["rows"][a:b]
        yield f"drop path rows {a}..{b - 1}", c
    f = params.get("filter")
    if f and f[0] in ("and", "or", "not"):
        for sub in f[1:]:
            c = copy.deepcopy(case)
            c["params"][path]["filter"] = sub
            yield "simplify the filter", c
    if params.get("batch_rows", 0) not in (0, 100000):
        c = copy.deepcopy(case)
        c["params"][path]["batch_rows"] = 100000
        yield "one batch", c
    if params.get("workers", 1) != 1:
        c = copy.deepcopy(case)
        c["params"][path]["workers"] = 1
        yield "one worker", c
    # Plain names: a partition field's own name, then a column's, so the repro shows whether a
    # name matters.
    for i, sf in enumerate(case["spec"]):
        if sf.get("name") not in (None, f"part_{i}"):
            c = copy.deepcopy(case)
            c["spec"][i]["name"] = f"part_{i}"
            yield f"plain name for spec field {i}", c
    for i, op in enumerate(ops):
        if op["op"] == "spec_add" and op.get("name") not in (None, f"part_op{i}"):
            c = copy.deepcopy(case)
            c["ops"][i]["name"] = f"part_op{i}"
            yield f"plain name for the partition field op {i} adds", c
    for i, fld in enumerate(case["schema"]):
        plain = f"c{i}"
        if fld["name"] != plain and not _plain(fld["name"]) and not any(f["name"] == plain for f in case["schema"]):
            yield f"rename column {fld['name']!r} to {plain}", rename_top(case, fld["name"], plain)
    if case["version"] == 1:
        c = copy.deepcopy(case)
        c["version"] = 2
        yield "format version 2", c
    # A required column can become optional.
    for i, fld in enumerate(case["schema"]):
        if fld["required"] and fld["name"] != case.get("key"):
            c = copy.deepcopy(case)
            c["schema"][i]["required"] = False
            yield f"make {fld['name']!r} optional", c


def _plain(name):
    return name.isascii() and name.replace("_", "").isalnum() and not name[0].isdigit()


def rename_top(case, old, new):
    """`case` with top-level column `old` called `new` wherever the case names it: the schema,
    spec sources, op paths, filters, row keys, the key."""
    c = copy.deepcopy(case)

    def fix_path(p):
        return [new] + list(p[1:]) if p and p[0] == old else p

    def fix_filter(f):
        if not isinstance(f, list) or not f:
            return f
        if f[0] in ("and", "or"):
            return [f[0], fix_filter(f[1]), fix_filter(f[2])]
        if f[0] == "not":
            return ["not", fix_filter(f[1])]
        if f[0] in ("true", "false"):
            return f
        return [f[0], fix_path(f[1])] + f[2:]

    def fix_rows(rows):
        return [{(new if k == old else k): v for k, v in r.items()} for r in rows]

    for f in c["schema"]:
        if f["name"] == old:
            f["name"] = new
    for s in c["spec"]:
        s["source"] = fix_path(s["source"])
    for op in c["ops"]:
        for k in ("path", "after", "source"):
            if k in op:
                op[k] = fix_path(op[k])
        if "filter" in op:
            op["filter"] = fix_filter(op["filter"])
        if "rows" in op:
            op["rows"] = fix_rows(op["rows"])
        if "drop" in op:
            op["drop"] = [new if d == old else d for d in op["drop"]]
    for p in c.get("params", {}).values():
        if isinstance(p, dict):
            if "rows" in p:
                p["rows"] = fix_rows(p["rows"])
            if "filter" in p:
                p["filter"] = fix_filter(p["filter"])
            if p.get("sort_by") == old:
                p["sort_by"] = new
    if c.get("key") == old:
        c["key"] = new
    return c


def shrink(case, path, signature, run, budget=300.0, max_tries=400):
    """The smallest variant of `case` found that still fails with `signature`, and stats."""
    t0 = time.time()
    cur = copy.deepcopy(case)
    tries = accepted = 0
    size0 = size(cur)
    progress = True
    while progress and time.time() - t0 < budget and tries < max_tries:
        progress = False
        for what, cand in _candidates(cur, path):
            if time.time() - t0 >= budget or tries >= max_tries:
                break
            tries += 1
            if _still_fails(run, cand, signature):
                cur = cand
                accepted += 1
                progress = True
                break
    prune(cur)
    return cur, {"tries": tries, "accepted": accepted, "secs": round(time.time() - t0, 1),
                 "from": size0, "to": size(cur)}


def prune(case):
    """Drops row values of columns the case no longer has (at any point of its history), so
    the replay file shows only what matters."""
    names = {f["name"] for f in case["schema"]}
    for op in case["ops"]:
        if op["op"] == "add_column" and len(op["path"]) == 1:
            names.add(op["path"][0])
        if op["op"] == "rename" and len(op["path"]) == 1:
            names.add(op["new"])
    for op in case["ops"]:
        if "rows" in op:
            op["rows"] = [{k: v for k, v in r.items() if k in names} for r in op["rows"]]
    for p in case.get("params", {}).values():
        if isinstance(p, dict) and "rows" in p:
            p["rows"] = [{k: v for k, v in r.items() if k in names} for r in p["rows"]]


def size(case):
    rows = sum(len(op.get("rows") or []) for op in case["ops"])
    return {"ops": len(case["ops"]), "columns": len(case["schema"]), "spec_fields": len(case["spec"]), "rows": rows}


def summary(case):
    """One line describing a (shrunk) case."""
    cols = ", ".join(f"{f['name']}:{_t(f['type'])}{'' if f['required'] else '?'}" for f in case["schema"])
    spec = ", ".join(f"{s['transform']}({'.'.join(s['source'])})" + (f" as {s['name']!r}" if s.get("name") else "")
                     for s in case["spec"]) or "unpartitioned"
    ops = ", ".join(_op(o) for o in case["ops"])
    props = f" props {json.dumps(case['props'], ensure_ascii=False)}" if case.get("props") else ""
    extra = ""
    for path, p in case.get("params", {}).items():
        if isinstance(p, dict) and path in case.get("paths", []):
            bits = [f"{len(p['rows'])} rows"] if "rows" in p else []
            if p.get("filter"):
                bits.append("filter " + json.dumps(p["filter"], ensure_ascii=False)[:200])
            extra += f"; {path}: " + (", ".join(bits) or "defaults")
    return f"v{case['version']} [{cols}] spec [{spec}]{props}; history: {ops or 'none'}{extra}"


def _t(t):
    if isinstance(t, str):
        return t
    if "struct" in t:
        return "struct<" + ", ".join(f"{f['name']}:{_t(f['type'])}" for f in t["struct"]) + ">"
    if "list" in t:
        return f"list<{_t(t['list'])}>"
    return f"map<{_t(t['map'][0])}, {_t(t['map'][1])}>"


def _op(o):
    k = o["op"]
    if k in ("append", "import"):
        return f"{k}({len(o['rows'])} rows{', branch ' + o['branch'] if o.get('branch') else ''})"
    if k == "overwrite":
        return f"overwrite({len(o['rows'])} rows)"
    if k in ("rename",):
        return f"rename {'.'.join(o['path'])} -> {o['new']}"
    if k in ("drop", "widen", "optional", "move_first", "move_after", "add_column"):
        return f"{k} {'.'.join(o['path'])}" + (f" to {o['to']}" if k == "widen" else "")
    if k == "spec_add":
        return f"spec add {o['transform']}({'.'.join(o['source'])})" + (f" as {o['name']!r}" if o.get("name") else "")
    if k == "spec_remove":
        return f"spec remove {o['transform']}({'.'.join(o['source'])})"
    if k in ("tag", "branch"):
        return f"{k} {o['name']}"
    if k == "props":
        return "props " + json.dumps({x: o[x] for x in o if x != "op"}, ensure_ascii=False)
    return k
