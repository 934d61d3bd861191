"""The seeded case generator of the differential table fuzzer (tests/fuzz/fuzz_tables.py).

A case is a plain, JSON-serialisable description, made from its seed alone by
`random.Random(seed)`:

    {"seed": S, "version": 1|2, "schema": [field, ...], "spec": [pfield, ...],
     "props": {...}, "ops": [op, ...], "paths": [...], "params": {...}}

- field:  {"name": str, "type": T, "required": bool}; T is a primitive's name ("long",
  "decimal(38,10)", "fixed[7]") or {"struct": [field, ...]}, {"list": T, "element_required": b},
  {"map": [K, V], "value_required": b}.
- pfield: {"source": [name, ...], "transform": "bucket[4]", "name": str or None}.
- op:     one history step PyIceberg applies (build.py): append, delete, overwrite, the schema
  changes, spec changes, properties, tags and branches, an imported file. Rows in ops are dicts
  by column name, values encoded by `enc` (NaN, decimals, dates, bytes survive JSON).
- paths:  the 2-3 iceberg-ops paths this case runs (paths.py); `params` holds what they need
  that is drawn from the built table (filters, upsert rows), added on first run and replayed
  as is.

Nothing here touches PyIceberg: the generator keeps its own model of the schema and spec as the
history changes them, so appends after a rename use the new name, a widened column gets wider
values, and a spec change names an eligible column. When a shrunk case drops an op that a later
one relied on, the builder skips or conforms what no longer fits.
"""

import copy
import datetime as dt
import decimal
import math
import random
import struct
import uuid

# decimal(38, s) values need 38 significant digits; the default context rounds to 28.
decimal.getcontext().prec = 100
decimal.DefaultContext.prec = 100

# What a seed means depends on this generator: bump VERSION whenever a change makes a seed
# generate another case, and pick tests/fuzz/seeds.txt again (docs/testing.md) — or, where the
# change only adds to a case from streams of its own, keep generating the older versions
# (SUPPORTED), so a seeds file picked with one keeps its cases. Version 2 adds merge-on-read
# position and equality deletes; version 3 the `import` path (the case's rows written as a Hive
# tree of plain Parquet files and imported with `import add-files`) and the `py_filter` path (a
# filtered copy through the Python package).
VERSION = 3
SUPPORTED = (1, 2, 3)

# ---------------------------------------------------------------- types

PRIMITIVES = ["boolean", "int", "long", "float", "double", "decimal", "date", "time", "timestamp",
              "timestamptz", "string", "uuid", "fixed", "binary"]

# Names with dots, spaces, upper case, non-ASCII letters, and characters a path must escape.
NAMES = ["a", "b", "c", "qty", "price", "Value", "UPPER", "MixedCase", "naïve", "Größe", "日付",
         "città", "Ωmega", "ñ", "with space", "dot.name", "e.f.g", "sp ace.dot", "x_1", "col-dash",
         "p", "q", "s", "region", "day", "sl/ash", "per%cent", "q?mark", "hash#", "plus+eq=",
         "ÅNGSTRÖM", "tab\tname", "..", "é.b"]
# A key named with a dot, or of type uuid, is rarer: PyIceberg's upsert cannot join on either
# (pyarrow splits the name; it cannot hash the uuid extension type), so no oracle.
KEY_NAMES = ["id", "ID", "Kéy", "row id", "pk", "id", "Kéy", "row id", "pk", "key.id"]
PFIELD_NAMES = ["part", "P.art", "p art", "p/q", "ü_part", "p%25", "Ünï"]


def prim_kind(t):
    """The primitive's family: 'decimal(38,2)' -> 'decimal', 'fixed[3]' -> 'fixed'."""
    if isinstance(t, dict):
        return None
    if t.startswith("decimal"):
        return "decimal"
    if t.startswith("fixed"):
        return "fixed"
    return t


def decimal_ps(t):
    p, s = t[len("decimal("):-1].split(",")
    return int(p), int(s)


def fixed_len(t):
    return int(t[len("fixed["):-1])


def is_struct(t):
    return isinstance(t, dict) and "struct" in t


def is_list(t):
    return isinstance(t, dict) and "list" in t


def is_map(t):
    return isinstance(t, dict) and "map" in t


# ---------------------------------------------------------------- values

EPOCH = dt.date(1970, 1, 1)
UTC = dt.timezone.utc
STRING_SPECIALS = ["", "a/b", "#", "?", "%", "+", "=", "..", ".", "../..", "../../../../outside",
                   "sp ace", "%2F", "a%2Fb", "ü", "日本語", "🧊", "x" * 200, "a=b", "q?x#y", "50%",
                   "*~", "\\", "'", '"', "tab\t", "new\nline", " lead", "trail ", "null", "NaN",
                   "#?&", "/", "a b+c", "Ω/..", "%25"]
F32_MAX = 3.4028234663852886e38
F32_MIN_SUB = 1.401298464324817e-45


def f32(x):
    """x rounded to the nearest float32 (as a Python float)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def specials(t):
    k = prim_kind(t)
    if k == "boolean":
        return [True, False]
    if k == "int":
        return [-(2 ** 31), 2 ** 31 - 1, 0, -1, 1]
    if k == "long":
        return [-(2 ** 63), 2 ** 63 - 1, 0, -1, 2 ** 53 + 1]
    if k == "float":
        return [math.nan, -0.0, 0.0, math.inf, -math.inf, F32_MAX, F32_MIN_SUB, -1.5]
    if k == "double":
        return [math.nan, -0.0, 0.0, math.inf, -math.inf, 1.7976931348623157e308, 5e-324, 0.1]
    if k == "decimal":
        p, s = decimal_ps(t)
        big = decimal.Decimal(10 ** p - 1).scaleb(-s)
        tiny = decimal.Decimal(1).scaleb(-s)
        return [big, -big, decimal.Decimal(0).scaleb(-s), tiny, -tiny]
    if k == "date":
        return [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), EPOCH,
                dt.date(1582, 10, 4), dt.date(2000, 2, 29)]
    if k == "time":
        return [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0, 0, 1)]
    if k in ("timestamp", "timestamptz"):
        tz = UTC if k == "timestamptz" else None
        return [dt.datetime(1, 1, 1, tzinfo=tz), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=tz),
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=tz), dt.datetime(1970, 1, 1, tzinfo=tz),
                dt.datetime(1582, 10, 4, 12, 0, tzinfo=tz), dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=tz)]
    if k == "string":
        return STRING_SPECIALS
    if k == "uuid":
        return [uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), uuid.UUID("12345678-1234-5678-1234-567812345678")]
    if k == "fixed":
        n = fixed_len(t)
        return [bytes(n), b"\xff" * n, bytes(range(n))]
    if k == "binary":
        return [b"", b"\x00", b"\xff\xfe", b"a/b", "ü".encode()]
    raise ValueError(t)


def random_value(rng, t):
    k = prim_kind(t)
    if k == "boolean":
        return rng.random() < 0.5
    if k == "int":
        return rng.choice([rng.randint(-1000, 1000), rng.randint(-(2 ** 31), 2 ** 31 - 1)])
    if k == "long":
        return rng.choice([rng.randint(-100000, 100000), rng.randint(-(2 ** 63), 2 ** 63 - 1)])
    if k == "float":
        return f32(rng.choice([rng.randint(-400, 400) / 4, rng.uniform(-1e6, 1e6)]))
    if k == "double":
        return rng.choice([rng.randint(-4000, 4000) / 8, rng.gauss(0, 1e9)])
    if k == "decimal":
        p, s = decimal_ps(t)
        digits = rng.randint(1, p)
        return decimal.Decimal(rng.randint(-(10 ** digits - 1), 10 ** digits - 1)).scaleb(-s)
    if k == "date":
        if rng.random() < 0.6:
            return EPOCH + dt.timedelta(days=rng.randint(-3000, 25000))
        return dt.date.fromordinal(rng.randint(1, dt.date(9999, 12, 31).toordinal()))
    if k == "time":
        us = rng.randint(0, 86400 * 10 ** 6 - 1)
        return dt.time(us // 3600_000_000, us // 60_000_000 % 60, us // 1_000_000 % 60, us % 1_000_000)
    if k in ("timestamp", "timestamptz"):
        tz = UTC if k == "timestamptz" else None
        d = random_value(rng, "date")
        us = rng.choice([0, rng.randint(0, 86400 * 10 ** 6 - 1)])
        return dt.datetime(d.year, d.month, d.day, tzinfo=tz) + dt.timedelta(microseconds=us)
    if k == "string":
        alphabet = "abcXYZ019 _-/.%#?+=üß日本Ω"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
    if k == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if k == "fixed":
        return bytes(rng.getrandbits(8) for _ in range(fixed_len(t)))
    if k == "binary":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))
    raise ValueError(t)


class Profile:
    """How a case draws values: NULL and special shares, and per-column domains so partitions
    and filters see repeated values."""

    def __init__(self, rng):
        self.null_p = rng.choice([0.0, 0.1, 0.25])
        self.special_p = rng.choice([0.15, 0.35, 0.6])
        self.domains = {}

    def domain(self, rng, key, t):
        if key not in self.domains:
            n = rng.randint(2, 6)
            sp = specials(t)
            self.domains[key] = [rng.choice(sp) if rng.random() < self.special_p else random_value(rng, t)
                                 for _ in range(n)]
        return self.domains[key]


def gen_value(rng, prof, t, required, key):
    if not required and rng.random() < prof.null_p:
        return None
    if is_struct(t):
        return {f["name"]: gen_value(rng, prof, f["type"], f["required"], key + (f["name"],)) for f in t["struct"]}
    if is_list(t):
        return [gen_value(rng, prof, t["list"], t["element_required"], key + ("element",))
                for _ in range(rng.randint(0, 3))]
    if is_map(t):
        kt, vt = t["map"]
        out = {}
        for _ in range(rng.randint(0, 3)):
            k = gen_value(rng, prof, kt, True, key + ("key",))
            if isinstance(k, float) and math.isnan(k):
                continue
            ck = repr(k)
            if ck not in out:
                out[ck] = (k, gen_value(rng, prof, vt, t["value_required"], key + ("value",)))
        return list(out.values())
    if rng.random() < 0.75:
        return rng.choice(prof.domain(rng, key, t))
    if rng.random() < prof.special_p:
        return rng.choice(specials(t))
    return random_value(rng, t)


# ---------------------------------------------------------------- JSON encoding of values


def enc(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return {"f": "nan"}
        if math.isinf(v):
            return {"f": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(v, decimal.Decimal):
        return {"dec": str(v)}
    if isinstance(v, dt.datetime):
        return {"tstz" if v.tzinfo else "ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"time": v.isoformat()}
    if isinstance(v, (bytes, bytearray)):
        return {"b": bytes(v).hex()}
    if isinstance(v, uuid.UUID):
        return {"uuid": str(v)}
    if isinstance(v, dict):
        return {"s": {k: enc(x) for k, x in v.items()}}
    if isinstance(v, list):
        if v and isinstance(v[0], tuple):
            return {"m": [[enc(k), enc(x)] for k, x in v]}
        return [enc(x) for x in v]
    if isinstance(v, tuple):
        return {"m": [[enc(k), enc(x)] for k, x in v]}
    raise TypeError(f"cannot encode {v!r}")


def dec(v):
    if v is None or isinstance(v, (bool, int, str, float)):
        return v
    if isinstance(v, list):
        return [dec(x) for x in v]
    (tag, x), = v.items()
    if tag == "f":
        return float(x)
    if tag == "dec":
        return decimal.Decimal(x)
    if tag == "ts":
        return dt.datetime.fromisoformat(x)
    if tag == "tstz":
        return dt.datetime.fromisoformat(x).astimezone(UTC)
    if tag == "date":
        return dt.date.fromisoformat(x)
    if tag == "time":
        return dt.time.fromisoformat(x)
    if tag == "b":
        return bytes.fromhex(x)
    if tag == "uuid":
        return uuid.UUID(x)
    if tag == "s":
        return {k: dec(y) for k, y in x.items()}
    if tag == "m":
        return [(dec(k), dec(y)) for k, y in x]
    raise ValueError(f"cannot decode {v!r}")


def enc_row(row):
    return {k: enc(v) for k, v in row.items()}


def dec_row(row):
    return {k: dec(v) for k, v in row.items()}


# ---------------------------------------------------------------- the schema model


def full_names(fields, prefix=()):
    """Every dotted full name PyIceberg indexes (list/map hops as element/key/value)."""
    out = set()
    for f in fields:
        p = prefix + (f["name"],)
        out.add(".".join(p))
        out |= _type_names(f["type"], p)
    return out


def _type_names(t, p):
    out = set()
    if is_struct(t):
        out |= full_names(t["struct"], p)
    elif is_list(t):
        out.add(".".join(p + ("element",)))
        out |= _type_names(t["list"], p + ("element",))
    elif is_map(t):
        out.add(".".join(p + ("key",)))
        out.add(".".join(p + ("value",)))
        out |= _type_names(t["map"][1], p + ("value",))
    return out


def fresh_name(rng, taken_here, all_names, prefix, pool=NAMES):
    """A name not used at this level whose full dotted name clashes with no other (PyIceberg
    indexes fields by full dotted name, so `a.b` beside struct `a` with field `b` is ambiguous),
    and no case-only twin of a sibling."""
    lower = {n.lower() for n in taken_here}
    for _ in range(50):
        n = rng.choice(pool)
        if rng.random() < 0.3:
            n = f"{n}{rng.randint(2, 99)}"
        full = ".".join(prefix + (n,))
        if n.lower() in lower or full in all_names or any(a.startswith(full + ".") for a in all_names):
            continue
        return n
    return f"c{rng.getrandbits(32):x}"


def gen_prim(rng, kinds=PRIMITIVES):
    k = rng.choice(kinds)
    if k == "decimal":
        p = rng.choice([1, 9, 18, 19, 38, 38, rng.randint(2, 38)])
        return f"decimal({p},{rng.randint(0, min(p, 12))})"
    if k == "fixed":
        return f"fixed[{rng.choice([1, 3, 16])}]"
    return k


def gen_type(rng, depth, all_names, prefix):
    if depth < 3 and rng.random() < 0.22:
        kind = rng.choice(["struct", "struct", "list", "map"])
        if kind == "struct":
            fields = []
            for _ in range(rng.randint(1, 3)):
                n = fresh_name(rng, [f["name"] for f in fields], all_names, prefix)
                all_names.add(".".join(prefix + (n,)))
                fields.append({"name": n, "type": gen_type(rng, depth + 1, all_names, prefix + (n,)),
                               "required": rng.random() < 0.2})
            return {"struct": fields}
        if kind == "list":
            all_names.add(".".join(prefix + ("element",)))
            return {"list": gen_type(rng, depth + 1, all_names, prefix + ("element",)),
                    "element_required": rng.random() < 0.3}
        all_names.add(".".join(prefix + ("key",)))
        all_names.add(".".join(prefix + ("value",)))
        # No uuid keys: pyarrow cannot hash its extension type, so PyIceberg cannot write them.
        key = gen_prim(rng, ["int", "long", "string", "date", "decimal"])
        return {"map": [key, gen_type(rng, depth + 1, all_names, prefix + ("value",))],
                "value_required": rng.random() < 0.3}
    # No uuid below the top level: pyarrow cannot build a nested uuid array from Python values,
    # so PyIceberg could write no row of the table.
    return gen_prim(rng, PRIMITIVES if depth == 0 else [k for k in PRIMITIVES if k != "uuid"])


KEY_TYPES = ["long", "long", "int", "string", "decimal(38,0)", "decimal(12,3)", "date", "long", "int",
             "string", "decimal(38,0)", "decimal(12,3)", "date", "uuid"]


def key_value(t, n):
    """The n-th distinct key of type t (keys are unique and never NULL or NaN)."""
    k = prim_kind(t)
    if k in ("int", "long"):
        return n * 7 - 20 if n % 5 else -(2 ** 31) + n if k == "int" else -(2 ** 63) + n
    if k == "string":
        return ["k", "k/", "k#", "k..", "kü", "k%"][n % 6] + str(n)
    if k == "decimal":
        p, s = decimal_ps(t)
        return decimal.Decimal(n * 3 - 10).scaleb(-s) if n % 7 else decimal.Decimal(10 ** p - 1 - n).scaleb(-s)
    if k == "uuid":
        return uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % (1 << 128))
    if k == "date":
        return dt.date.fromordinal(1 + n * 997 % 3652058)
    raise ValueError(t)


# ---------------------------------------------------------------- paths into the model


def walk_prims(fields, prefix=(), with_required=False, parents_required=True):
    """(path, type) of every primitive reachable through structs only (with a third item when
    asked: True if required, False if optional, None if required under an optional struct)."""
    out = []
    for f in fields:
        p = prefix + (f["name"],)
        t = f["type"]
        if is_struct(t):
            out += walk_prims(t["struct"], p, with_required, parents_required and f["required"])
        elif not isinstance(t, dict):
            req = f["required"] if parents_required or not f["required"] else None
            out.append((p, t, req) if with_required else (p, t))
    return out


def find_field(fields, path):
    """The field dict at `path` (element/value hops through lists and maps), or None."""
    cur = fields
    f = None
    i = 0
    while i < len(path):
        f = next((x for x in cur if x["name"] == path[i]), None)
        if f is None:
            return None
        i += 1
        t = f["type"]
        while i < len(path) and isinstance(t, dict) and not is_struct(t):
            hop = path[i]
            if is_list(t) and hop == "element":
                t = t["list"]
            elif is_map(t) and hop == "value":
                t = t["map"][1]
            else:
                return None
            i += 1
        if i < len(path):
            if not is_struct(t):
                return None
            cur = t["struct"]
    return f


def struct_fields_at(fields, path):
    """The list of fields of the struct `path` names (through list elements / map values)."""
    if not path:
        return fields
    f = find_field(fields, path)
    if f is None:
        return None
    t = f["type"]
    while isinstance(t, dict) and not is_struct(t):
        t = t["list"] if is_list(t) else t["map"][1]
    return t["struct"] if is_struct(t) else None


def struct_paths(fields, prefix=()):
    """Paths of every struct (the root as ()), through list elements and map values."""
    out = [prefix]
    for f in fields:
        p = prefix + (f["name"],)
        t = f["type"]
        hops = ()
        while isinstance(t, dict) and not is_struct(t):
            hops += ("element",) if is_list(t) else ("value",)
            t = t["list"] if is_list(t) else t["map"][1]
        if is_struct(t):
            # PyIceberg adds into a list's element / map's value struct given the list's path.
            out += [q for q in struct_paths(t["struct"], p + hops)]
    return out


def all_field_paths(fields, prefix=()):
    out = []
    for f in fields:
        p = prefix + (f["name"],)
        out.append((p, f))
        t = f["type"]
        hops = ()
        while isinstance(t, dict) and not is_struct(t):
            hops += ("element",) if is_list(t) else ("value",)
            t = t["list"] if is_list(t) else t["map"][1]
        if is_struct(t):
            out += all_field_paths(t["struct"], p + hops)
    return out


# ---------------------------------------------------------------- transforms


def eligible_transforms(t, required):
    """The transforms PyIceberg 0.12 can write on a column of type t. It cannot: identity or
    void on uuid (pyarrow cannot group by its extension type), identity on float/double (a NaN
    partition matches no row when it splits the table: ZeroDivisionError), void on a required
    column (its manifest writer writes the NULL as a required value), bucket on time, truncate on binary."""
    k = prim_kind(t)
    if k == "uuid":
        # Any transform: pyarrow cannot group or build empty arrays of the extension type.
        return []
    out = [] if k in ("float", "double") else ["identity"]
    if not required and k != "uuid":
        out.append("void")
    if k in ("int", "long", "decimal", "date", "timestamp", "timestamptz", "string", "uuid", "fixed", "binary"):
        out.append("bucket")
    if k in ("int", "long", "decimal", "string"):
        out.append("truncate")
    if k in ("date", "timestamp", "timestamptz"):
        out += ["year", "month", "day"]
    if k in ("timestamp", "timestamptz"):
        out.append("hour")
    return out


def partition_sources(fields):
    """Columns PyIceberg 0.12 can partition by: primitives through structs, no name holding a
    dot on the way (pyarrow's FieldRef splits dotted names), with a transform it can write."""
    # A required field under an optional struct is NULL when the struct is: PyIceberg writes
    # that NULL as a required partition value and fails.
    return [(p, t, r) for p, t, r in walk_prims(fields, with_required=True)
            if r is not None and not any("." in n for n in p) and eligible_transforms(t, r)]


def same_named_avro_type(t, spec, fields):
    """Whether a spec field over a fixed or decimal column of type t would be the second one:
    PyIceberg 0.12 then writes two Avro named types of one name (`fixed_3`) into its manifests,
    which Avro readers refuse ("Two named schema defined for same fullname"), Java's too."""
    if prim_kind(t) not in ("fixed", "decimal"):
        return False
    for s in spec:
        f = find_field(fields, tuple(s["source"]))
        if f is not None and f["type"] == t:
            return True
    return False


def pfield_name(rng, source, n):
    """A partition field name: PyIceberg's default (None) or one of ours. A name Avro does not
    allow (non-ASCII letters, dots, spaces, dashes: PyIceberg writes them into its manifests,
    non-ASCII raw and the others as _xHH) makes every read by iceberg 0.10.1 fail the same way,
    hiding other failures: so mostly a plain name then."""
    import re
    if not re.fullmatch(r"[A-Za-z0-9_]+", ".".join(source)) and rng.random() < 0.9:
        return f"part_{n}"
    if rng.random() < 0.03:
        return rng.choice(PFIELD_NAMES) + str(n)
    return None


def gen_transform(rng, t, required):
    tr = rng.choice(eligible_transforms(t, required))
    if tr == "bucket":
        return f"bucket[{rng.choice([1, 2, 3, 16, 1000])}]"
    if tr == "truncate":
        return f"truncate[{rng.choice([1, 2, 3, 10])}]"
    return tr


# ---------------------------------------------------------------- filters

CMP = ["=", "!=", "<", "<=", ">", ">="]


def filterable(t):
    return prim_kind(t) in ("boolean", "int", "long", "float", "double", "decimal", "date", "time",
                            "timestamp", "timestamptz", "string", "uuid")


def literal_ok(v, t):
    """A literal both filter languages can spell for a column of type t."""
    k = prim_kind(t)
    if v is None:
        return False
    if k in ("float", "double"):
        return isinstance(v, float) and math.isfinite(v) and (v == 0.0 and math.copysign(1, v) > 0 or
                                                                abs(v) > 1e-30 and abs(v) < 1e30)
    if k == "string":
        return "\\" not in v
    return True


def gen_filter(rng, cols, values, depth=0):
    """A random filter AST over `cols` [(path, type)], literals drawn from `values`
    {path: [seen values]} so filters select some rows.

    AST: ["cmp", path, op, lit] | ["in", path, [lits], negated] | ["null", path, negated]
    | ["nan", path, negated] | ["starts", path, prefix, negated] | ["and", a, b] | ["or", a, b]
    | ["not", a] | ["true"] | ["false"]; literals encoded with `enc`.
    """
    if depth < 2 and rng.random() < 0.45:
        kind = rng.choice(["and", "or", "not"])
        if kind == "not":
            return ["not", gen_filter(rng, cols, values, depth + 1)]
        return [kind, gen_filter(rng, cols, values, depth + 1), gen_filter(rng, cols, values, depth + 1)]
    if not cols or rng.random() < 0.03:
        return [rng.choice(["true", "false"])]
    path, t = rng.choice(cols)
    k = prim_kind(t)
    seen = [v for v in values.get(tuple(path), []) if literal_ok(v, t)]

    def lit():
        if seen and rng.random() < 0.8:
            return rng.choice(seen)
        for _ in range(20):
            v = rng.choice(specials(t)) if rng.random() < 0.5 else random_value(rng, t)
            if literal_ok(v, t):
                return v
        return {"int": 0, "long": 0, "float": 1.0, "double": 1.0, "boolean": True}.get(k, seen[0] if seen else None)

    r = rng.random()
    if r < 0.12:
        return ["null", list(path), rng.random() < 0.5]
    if k in ("float", "double") and r < 0.25:
        return ["nan", list(path), rng.random() < 0.5]
    if k == "string" and r < 0.32:
        v = lit()
        if v is not None:
            pre = v[: rng.randint(0, min(3, len(v)))]
            if "%" not in pre and "_" not in pre and "\\" not in pre:
                return ["starts", list(path), pre, rng.random() < 0.3]
    if r < 0.5:
        lits = [lit() for _ in range(rng.randint(1, 3))]
        lits = [x for x in lits if x is not None]
        if lits:
            return ["in", list(path), [enc(x) for x in lits], rng.random() < 0.4]
    v = lit()
    if v is None:
        return ["null", list(path), False]
    ops = ["=", "!="] if k in ("boolean", "uuid") else CMP
    return ["cmp", list(path), rng.choice(ops), enc(v)]


def filter_columns(ast):
    if ast[0] in ("and", "or"):
        return filter_columns(ast[1]) | filter_columns(ast[2])
    if ast[0] == "not":
        return filter_columns(ast[1])
    if ast[0] in ("true", "false"):
        return set()
    return {tuple(ast[1])}


# ---------------------------------------------------------------- the case

PATHS = ["copy_auto", "copy_rewrite", "copy_files", "copy_reference", "copy_filter", "upsert",
         "overwrite_partition", "delete", "compact", "expire", "orphans", "verify"]
PATH_WEIGHTS = [6, 6, 3, 3, 8, 7, 6, 8, 7, 6, 5, 7]
# Added to a case's paths with these shares, from their own random stream (see generate).
MAINTENANCE_PATHS = [("health", 0.35), ("maintain", 0.3)]
# Generator 3's shares of cases that also run the `import` and `py_filter` paths (streams of
# their own).
IMPORT_SHARE = 0.35
PY_FILTER_SHARE = 0.3

# The share of v2 cases whose history gets position delete files (generate's `mor` stream),
# and equality delete files (its `eq` stream).
MOR_SHARE = 0.4
EQ_SHARE = 0.3


class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self.prof = Profile(self.rng)
        self.next_key = 0
        self.values = {}
        self.has_snapshot = False
        self.refs = []
        self.branches = []

    def take_key(self):
        self.next_key += 1
        return self.next_key

    def row(self, fields, key_name, key_type):
        r = {}
        for f in fields:
            if f["name"] == key_name:
                r[f["name"]] = key_value(key_type, self.take_key())
            else:
                r[f["name"]] = gen_value(self.rng, self.prof, f["type"], f["required"], (f["name"],))
        return r

    def remember(self, fields, rows):
        for path, t in walk_prims(fields):
            bucket = self.values.setdefault(path, [])
            for r in rows:
                v = r
                for name in path:
                    v = v.get(name) if isinstance(v, dict) else None
                if v is not None and len(bucket) < 40:
                    bucket.append(v)


def generate(seed, version_of_generator=VERSION):
    """The case of `seed` as generator `version_of_generator` (one of SUPPORTED) made it."""
    if version_of_generator not in SUPPORTED:
        raise ValueError(f"generator version {version_of_generator} is not one of {SUPPORTED}")
    g = Gen(seed)
    rng = g.rng
    version = rng.choice([1, 2])
    all_names = set()
    key_name = rng.choice(KEY_NAMES)
    key_type = rng.choice(KEY_TYPES)
    all_names.add(key_name)
    fields = [{"name": key_name, "type": key_type, "required": rng.random() < 0.6}]
    # Every primitive shows up across cases; a few per case keep a case cheap.
    for _ in range(rng.randint(2, 8)):
        n = fresh_name(rng, [f["name"] for f in fields], all_names, ())
        all_names.add(n)
        fields.append({"name": n, "type": gen_type(rng, 0, all_names, (n,)), "required": rng.random() < 0.2})
    if rng.random() < 0.5:
        fields.insert(rng.randint(0, len(fields)), fields.pop(0))
    schema = copy.deepcopy(fields)

    # The spec: none, or 1-3 fields on eligible columns (inside structs too).
    spec = []
    prims = partition_sources(fields)
    if prims and rng.random() < 0.75:
        used = set()
        for _ in range(rng.randint(1, 3)):
            p, t, req = rng.choice(prims)
            tr = gen_transform(rng, t, req)
            # PyIceberg 0.12 writes no spec with two fields of one source ("redundant").
            if p in used or same_named_avro_type(t, spec, fields):
                continue
            used.add(p)
            name = pfield_name(rng, p, len(spec))
            spec.append({"source": list(p), "transform": tr, "name": name})
    spec_model = [dict(s) for s in spec]

    props = {}
    if rng.random() < 0.2:
        props["write.object-storage.enabled"] = "true"
        if rng.random() < 0.4:
            props["write.object-storage.partitioned-paths"] = "false"
    if rng.random() < 0.15:
        props["write.target-file-size-bytes"] = str(rng.choice([1, 200, 2000]))

    ops = []
    n_ops = rng.randint(1, 10)
    for _ in range(n_ops):
        op = gen_op(g, version, fields, spec_model, key_name, key_type, all_names)
        if op is not None:
            ops.append(op)
            if op["op"] == "rename" and tuple(op["path"]) == (key_name,):
                key_name = op["new"]
    if not any(o["op"] in ("append", "overwrite", "import") for o in ops) or rng.random() < 0.5:
        rows = [g.row(fields, key_name, key_type) for _ in range(rng.randint(1, 8))]
        g.remember(fields, rows)
        ops.append({"op": "append", "rows": [enc_row(r) for r in rows]})

    # Merge-on-read position deletes, as Spark and Flink write them into v2 tables (PyIceberg 0.12
    # reads them but writes none): drawn from a stream of their own and inserted into the history,
    # so the other ops of earlier seeds' cases stay as they were. Which rows of which live files
    # is decided when the table is built, from the op's own seed (build.position_delete).
    mor = random.Random(f"position-deletes:{seed}")
    if version_of_generator >= 2 and version == 2 and mor.random() < MOR_SHARE:
        for _ in range(mor.randint(1, 3)):
            ops.insert(mor.randint(1, len(ops)), {
                "op": "pos_delete", "seed": mor.randrange(2 ** 31),
                "share": mor.choice([0.1, 0.3, 0.5, 1.0]), "files": mor.randint(1, 3),
                "bounds": mor.random() < 0.75, "branch": mor.random() < 0.25})

    # Equality deletes, as Flink's upserts write them (PyIceberg 0.12 neither writes nor reads
    # them: judge.read applies them itself), from a stream of their own as above.
    eq = random.Random(f"equality-deletes:{seed}")
    if version_of_generator >= 2 and version == 2 and eq.random() < EQ_SHARE:
        for _ in range(eq.randint(1, 2)):
            ops.insert(eq.randint(1, len(ops)), {
                "op": "eq_delete", "seed": eq.randrange(2 ** 31), "columns": eq.randint(1, 2),
                "keys": eq.randint(1, 4), "null": eq.random() < 0.3, "global": eq.random() < 0.3,
                "branch": eq.random() < 0.25})

    k = rng.choices([2, 3], [0.6, 0.4])[0]
    paths = []
    while len(paths) < k:
        p = rng.choices(PATHS, PATH_WEIGHTS)[0]
        if p not in paths:
            paths.append(p)
    # Health and maintain (issue 35) are drawn from a stream of their own: the cases earlier
    # seeds made, kept seeds above all, stay as they were.
    extra = random.Random(f"maintenance:{seed}")
    for p, share in MAINTENANCE_PATHS:
        if extra.random() < share:
            paths.append(p)
    # The import path (generator 3), from a stream of its own as above.
    if version_of_generator >= 3 and random.Random(f"import:{seed}").random() < IMPORT_SHARE:
        paths.append("import")
    if version_of_generator >= 3 and random.Random(f"py-filter:{seed}").random() < PY_FILTER_SHARE:
        paths.append("py_filter")
    return {"seed": seed, "generator": version_of_generator, "version": version, "schema": schema, "spec": spec, "props": props,
            "ops": ops, "paths": paths, "key": key_name, "params": {},
            "filter_values": {".".join(map(_esc, p)): [enc(v) for v in vs[:12]] for p, vs in g.values.items()}}


def _esc(name):
    return name.replace("\\", "\\\\").replace(".", "\\.")


def split_path(s):
    """Inverse of '.'.join(map(_esc, path))."""
    out, cur, i = [], "", 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur += s[i + 1]
            i += 2
            continue
        if c == ".":
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    out.append(cur)
    return tuple(out)


def gen_op(g, version, fields, spec_model, key_name, key_type, all_names):
    """One history step, applied to the model (fields, spec_model) as PyIceberg will apply it."""
    rng = g.rng
    kinds = ["append", "delete", "overwrite", "schema", "spec", "props", "ref", "import"]
    weights = [35, 9, 6, 16, 8, 6, 9, 3]
    kind = rng.choices(kinds, weights)[0]
    if kind == "append":
        rows = [g.row(fields, key_name, key_type) for _ in range(rng.randint(0, 8))]
        g.remember(fields, rows)
        g.has_snapshot = g.has_snapshot or bool(rows)
        op = {"op": "append", "rows": [enc_row(r) for r in rows]}
        if g.branches and rng.random() < 0.25:
            op["branch"] = rng.choice(g.branches)
        return op
    # PyIceberg 0.12 evaluates a delete's filter with pyarrow, whose FieldRef splits dotted names.
    # PyIceberg 0.12's delete often cannot find a nested field ("might be nested or missing"),
    # nor compare uuids (pyarrow has no kernel for the extension type).
    cols = [(p, t) for p, t in walk_prims(fields) if filterable(t) and not any("." in n for n in p)
            and len(p) == 1 and prim_kind(t) != "uuid"]
    if kind in ("delete", "overwrite"):
        if not g.has_snapshot:
            return None
        vals = {p: v for p, v in g.values.items()}
        f = gen_filter(rng, cols, vals)
        if kind == "delete":
            return {"op": "delete", "filter": f}
        rows = [g.row(fields, key_name, key_type) for _ in range(rng.randint(0, 5))]
        g.remember(fields, rows)
        return {"op": "overwrite", "filter": f, "rows": [enc_row(r) for r in rows]}
    if kind == "schema":
        return gen_schema_op(g, fields, spec_model, key_name, all_names)
    if kind == "spec":
        prims = partition_sources(fields)
        live = [s for s in spec_model if s.get("transform") != "void"]
        if version == 1:
            # v1 keeps a removed field as void, which PyIceberg cannot write for a required source.
            req = {p for p, _, r in walk_prims(fields, with_required=True) if r is not False}
            live = [s for s in live if tuple(s["source"]) not in req]
        if live and (rng.random() < 0.45 or len(live) >= 3):
            s = rng.choice(live)
            op = {"op": "spec_remove", "name": s.get("name"), "source": list(s["source"]), "transform": s["transform"]}
            if version == 1:
                # v1 keeps a removed field as void under its name.
                s["transform"] = "void"
            else:
                spec_model.remove(s)
            return op
        if not prims:
            return None
        p, t, req = rng.choice(prims)
        tr = gen_transform(rng, t, req)
        if any(tuple(s["source"]) == p for s in spec_model) or tr == "void" or \
                same_named_avro_type(t, spec_model, fields):
            return None
        name = pfield_name(rng, p, rng.randint(10, 99))
        s = {"source": list(p), "transform": tr, "name": name}
        spec_model.append(s)
        return {"op": "spec_add", **s}
    if kind == "props":
        choice = rng.choice(["object", "data_inside", "data_sibling", "target", "unset"])
        if choice == "object":
            return {"op": "props", "set": {"write.object-storage.enabled": rng.choice(["true", "false"])}}
        if choice == "data_inside":
            return {"op": "props", "data_path": "inside", "sub": rng.choice(["custom-data", "d a t a", "dé/ep"])}
        if choice == "data_sibling":
            return {"op": "props", "data_path": "sibling", "sub": rng.choice(["_files", "-data", "_backup"])}
        if choice == "target":
            return {"op": "props", "set": {"write.target-file-size-bytes": str(rng.choice([1, 300, 5000]))}}
        return {"op": "props", "remove": [rng.choice(["write.data.path", "write.object-storage.enabled",
                                                      "write.target-file-size-bytes"])]}
    if kind == "ref":
        if not g.has_snapshot:
            return None
        if rng.random() < 0.6:
            name = rng.choice(["audit", "v1.0", "tag with space", "täg", "t/1"]) + str(len(g.refs))
            g.refs.append(name)
            return {"op": "tag", "name": name}
        name = rng.choice(["dev", "b.x", "brånch", "feature/x"]) + str(len(g.refs))
        g.refs.append(name)
        g.branches.append(name)
        return {"op": "branch", "name": name}
    if kind == "import":
        # A Parquet file written without field ids and without its identity partition columns,
        # registered with its partition values (as Spark's add_files/migrate leave Hive files).
        idents = [s for s in spec_model if s["transform"] == "identity" and len(s["source"]) == 1]
        if not idents or len(idents) != len([s for s in spec_model if s["transform"] != "void"]):
            return None
        rows = [g.row(fields, key_name, key_type) for _ in range(rng.randint(1, 4))]
        for s in idents:
            v = rows[0].get(s["source"][0])
            for r in rows:
                r[s["source"][0]] = v
        g.remember(fields, rows)
        g.has_snapshot = True
        # Only optional columns are left out: PyIceberg 0.12 refuses to read a file lacking a
        # required one ("Field is required, and could not be found"), even an identity source.
        optional = {f["name"] for f in fields if not f["required"]}
        return {"op": "import", "rows": [enc_row(r) for r in rows],
                "drop": [s["source"][0] for s in idents if s["source"][0] in optional and rng.random() < 0.8]}
    return None


WIDEN = {"int": "long", "float": "double"}


def gen_schema_op(g, fields, spec_model, key_name, all_names):
    rng = g.rng
    what = rng.choice(["add", "add", "rename", "drop", "widen", "optional", "move"])
    paths = all_field_paths(fields)
    sources = {tuple(s["source"]) for s in spec_model}
    if what == "add":
        parent = rng.choice(struct_paths(fields))
        here = struct_fields_at(fields, parent)
        if here is None:
            return None
        n = fresh_name(rng, [f["name"] for f in here], all_names, parent)
        all_names.add(".".join(parent + (n,)))
        t = gen_type(rng, len(parent), all_names, parent + (n,))
        here.append({"name": n, "type": t, "required": False})
        return {"op": "add_column", "path": list(parent) + [n], "type": t}
    if what == "rename":
        if not paths:
            return None
        p, f = rng.choice(paths)
        parent = p[:-1]
        here = struct_fields_at(fields, parent)
        n = fresh_name(rng, [x["name"] for x in here], all_names, parent)
        old = ".".join(p)
        all_names.add(".".join(parent + (n,)))
        all_names.discard(old)
        f["name"] = n
        for s in spec_model:
            if tuple(s["source"][: len(p)]) == p:
                s["source"] = list(parent + (n,)) + s["source"][len(p):]
        for vp in list(g.values):
            if vp[: len(p)] == p:
                g.values[parent + (n,) + vp[len(p):]] = g.values.pop(vp)
        return {"op": "rename", "path": list(p), "new": n}
    if what == "drop":
        cands = [(p, f) for p, f in paths if p != (key_name,) and
                 not any(s[: len(p)] == p for s in sources) and
                 len(struct_fields_at(fields, p[:-1]) or []) > 1]
        if not cands:
            return None
        p, f = rng.choice(cands)
        here = struct_fields_at(fields, p[:-1])
        here.remove(f)
        return {"op": "drop", "path": list(p)}
    if what == "widen":
        cands = []
        for p, f in paths:
            t = f["type"]
            if isinstance(t, str) and (t in WIDEN or t.startswith("decimal(") and decimal_ps(t)[0] < 38):
                cands.append((p, f))
        if not cands:
            return None
        p, f = rng.choice(cands)
        t = f["type"]
        if t in WIDEN:
            new = WIDEN[t]
        else:
            pr, s = decimal_ps(t)
            new = f"decimal({rng.randint(pr + 1, 38)},{s})"
        f["type"] = new
        return {"op": "widen", "path": list(p), "to": new}
    if what == "optional":
        cands = [(p, f) for p, f in paths if f["required"]]
        if not cands:
            return None
        p, f = rng.choice(cands)
        f["required"] = False
        return {"op": "optional", "path": list(p)}
    # move: within its struct
    cands = [(p, f) for p, f in paths if len(struct_fields_at(fields, p[:-1]) or []) > 1]
    if not cands:
        return None
    p, f = rng.choice(cands)
    here = struct_fields_at(fields, p[:-1])
    if rng.random() < 0.4:
        here.remove(f)
        here.insert(0, f)
        return {"op": "move_first", "path": list(p)}
    other = rng.choice([x for x in here if x is not f])
    here.remove(f)
    here.insert(here.index(other) + 1, f)
    return {"op": "move_after", "path": list(p), "after": list(p[:-1]) + [other["name"]]}
