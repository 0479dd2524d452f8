#!/usr/bin/env python3
"""Second, independent computation of every valid vector's expected value.

This script shares no code with harness/codec: it rebuilds typed values, row
identities, row bodies, row and scope digests, schema manifest hashes and push
fingerprints from the byte layouts of the protocol fact sheets, using only the
Python standard library. It checks each valid vector in vectors/*.json (both
pack formats; for upstream-format packs also every vector hash and the
aggregate) and exits non-zero on any mismatch.

    python3 vectors/independent/check.py            # check every pack
    python3 vectors/independent/check.py --fill     # replace "@fill" placeholders

`--fill` is how expected values that the fact sheets do not state were first
written into the packs; the sheet-stated values were typed in by hand and are
only checked here.
"""
import base64
import hashlib
import json
import pathlib
import re
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAGS = {"string": 1, "int": 2, "int64": 3, "decimal": 4, "float": 5, "boolean": 6,
        "datetime": 7, "date": 8, "time": 9, "json": 10, "bytes": 11}


class Num:
    """A JSON number with its source text kept."""
    def __init__(self, raw):
        self.raw = raw

    def value(self):
        return int(self.raw) if re.fullmatch(r"-?[0-9]+", self.raw) else float(self.raw)


def load(text):
    return json.loads(text, parse_int=Num, parse_float=Num)


def plain(v):
    if isinstance(v, Num):
        return v.value()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def u64(n):
    return struct.pack(">Q", n)


def blob(b):
    return u64(len(b)) + b


def text(s):
    return blob(s.encode("utf-8"))


def dom(name):
    return name.encode("ascii") + b"\x00"


def typed(t, v):
    tag = bytes([TAGS[t]])
    if v is None:
        return tag + b"\x00"
    if t == "string":
        p = text(v)
    elif t == "int":
        p = struct.pack(">i", int(v.raw))
    elif t == "int64":
        p = struct.pack(">q", int(v))
    elif t in ("decimal", "datetime", "date", "time"):
        p = blob(v.encode("ascii"))
    elif t == "float":
        p = struct.pack(">d", float(v.raw) + 0.0)
    elif t == "boolean":
        p = b"\x01" if v else b"\x00"
    elif t == "json":
        p = text(v)
    elif t == "bytes":
        p = blob(base64.urlsafe_b64decode(v + "=" * (-len(v) % 4)))
    else:
        raise ValueError(t)
    return tag + b"\x01" + p


def canon(v):
    # Good enough for the packs' data: ASCII member names, integers and short decimals only.
    return json.dumps(plain(v), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_parts(inp):
    table = inp["table"]
    fields = {f["field_id"]: f["type"] for f in table["fields"]}
    row = inp["row"]
    pkf = table["primary_key_field_id"]
    identity = dom("synchro:v3:row-identity:v1") + text(table["table_id"]) + text(pkf) + typed(fields[pkf], row[pkf])
    order = sorted(fields, key=lambda f: f.encode("utf-8"))
    body = struct.pack(">I", len(order)) + b"".join(text(f) + typed(fields[f], row[f]) for f in order)
    pre = (dom("synchro:v3:row-digest:v1") + bytes.fromhex(inp["schema_hash"]) + blob(identity) + blob(body)
           + text(inp["server_version"]))
    return identity, body, hashlib.sha256(pre).digest()


def scope(inp):
    entries = sorted(((bytes.fromhex(e["identity_hex"]), bytes.fromhex(e["digest_hex"])) for e in inp["entries"]),
                     key=lambda e: e[0])
    pre = dom("synchro:v3:scope-digest:v1") + bytes.fromhex(inp["schema_hash"]) + text(inp["scope_id"]) + u64(len(entries))
    for ident, dig in entries:
        pre += blob(ident) + dig
    return hashlib.sha256(pre).hexdigest(), len(entries)


def manifest(inp):
    body = {k: v for k, v in plain(inp["manifest"]).items() if k != "schema_hash"}
    key = lambda name: (lambda x: x[name].encode("utf-8"))
    body["tables"] = sorted(body["tables"], key=key("table_id"))
    for t in body["tables"]:
        t["fields"] = sorted(t["fields"], key=key("field_id"))
        if "indexes" in t:
            t["indexes"] = sorted(t["indexes"], key=key("index_id"))
    c = canon(body)
    return hashlib.sha256(dom("synchro:v3:schema-manifest:v1") + c.encode("utf-8")).hexdigest(), c


def norm_mutation(m):
    (pkf, pkv), = m["pk"].items()
    base = [1, m["base_version"]] if "base_version" in m else [0]
    cols = [1, [[k, m["columns"][k]] for k in sorted(m["columns"], key=lambda s: s.encode("utf-8"))]] if "columns" in m else [0]
    sref = [m["authored_schema"]["version"].raw, m["authored_schema"]["hash"]]
    return ["mutation-v1", m["mutation_id"], m["table"], [pkf, pkv], sref, m["op"], base, m["client_version"], cols]


def fp(domain_name, arr):
    c = canon(arr)
    return hashlib.sha256(dom(domain_name) + c.encode("utf-8")).hexdigest(), c


def as_value(v):
    """A project-format input given as JSON text (a request body, a mutation) is read like any other."""
    return load(v) if isinstance(v, str) else v


def expected_for(v):
    k, inp = v["kind"], v["input"]
    if k == "typed_value":
        b = typed(inp["type"], inp["value"])
        return {"bytes_hex": b.hex(), "sha256": hashlib.sha256(b).hexdigest()}
    if k == "row_identity":
        b = dom("synchro:v3:row-identity:v1") + text(inp["table_id"]) + text(inp["pk_field_id"]) + typed(inp["pk_type"], inp["pk"])
        return {"bytes_hex": b.hex(), "sha256": hashlib.sha256(b).hexdigest()}
    if k == "row_digest":
        ident, body, dig = row_parts(inp)
        return {"identity_hex": ident.hex(), "body_hex": body.hex(), "sha256": dig.hex()}
    if k == "scope_digest":
        d, n = scope(inp)
        return {"sha256": d, "cardinality": n}
    if k == "schema_manifest":
        d, c = manifest(inp)
        return {"sha256": d, "canonical_json": c}
    if k == "mutation_fingerprint":
        return dict(zip(("sha256", "canonical_json"), fp("synchro:v3:push-mutation-fingerprint:v1",
                        ["mutation-scope-v1", inp["user_id"], inp["client_id"], norm_mutation(as_value(inp["mutation"]))])))
    if k == "batch_fingerprint":
        r = as_value(inp["request"])
        arr = ["atomic-batch-v1" if r.get("atomic") is True else "batch-v1", inp["user_id"], r["client_id"],
               r["client_generation"].raw, r["batch_id"], [r["schema"]["version"].raw, r["schema"]["hash"]],
               [norm_mutation(m) for m in r["mutations"]]]
        return dict(zip(("sha256", "canonical_json"), fp("synchro:v3:push-batch-fingerprint:v1", arr)))
    raise ValueError(k)


# ---- upstream format: inputs as JSON text in the normalized field-ID representation ----

AGGREGATE_DOMAIN = "synchro:v3:vector-set-aggregate:v1"


def sha(b):
    return hashlib.sha256(b).hexdigest()


def norm_field_id_mutation(m):
    base = [1, m["base_version"]] if "base_version" in m else [0]
    if "columns" in m:
        cols = [1, [[c["field_id"], c["value"]] for c in sorted(m["columns"], key=lambda c: c["field_id"].encode("utf-8"))]]
    else:
        cols = [0]
    ref = m["authored_schema"]
    return ["mutation-v1", m["mutation_id"], m["table_id"], [m["pk"]["field_id"], m["pk"]["value"]],
            [ref["version"].raw, ref["hash"]], m["operation"], base, m["client_version"], cols]


def upstream_octets(v):
    """(canonical octets, domain prefix) of a valid upstream vector."""
    k, inp = v["kind"], v["input"]
    if k == "typed_value":
        return typed(inp["type"], load(inp["raw_json"])), b""
    if k == "row_identity":
        pk = load(inp["pk_json"])
        return (dom("synchro:v3:row-identity:v1") + text(inp["table_id"]) + text(pk["field_id"])
                + typed(inp["pk_type"], pk["value"])), b""
    if k == "row_digest":
        ident, body, _ = row_parts({"table": inp["table"], "row": load(inp["row_json"]),
                                    "schema_hash": inp["schema_hash"], "server_version": inp["server_version"]})
        octets = bytes.fromhex(inp["schema_hash"]) + blob(ident) + blob(body) + text(inp["server_version"])
        return octets, dom("synchro:v3:row-digest:v1")
    if k == "scope_digest":
        entries = [(bytes.fromhex(e["identity_hex"]), bytes.fromhex(e["digest_hex"])) for e in inp["entries"]]
        if "cardinality" not in inp:
            entries.sort(key=lambda e: e[0])
        octets = bytes.fromhex(inp["schema_hash"]) + text(inp["scope_id"]) + u64(len(entries))
        for ident, dig in entries:
            octets += blob(ident) + dig
        return octets, dom("synchro:v3:scope-digest:v1")
    if k == "schema_manifest":
        _, c = manifest({"manifest": load(inp["manifest_json"])})
        return c.encode("utf-8"), dom("synchro:v3:schema-manifest:v1")
    if k == "mutation_fingerprint":
        arr = ["mutation-scope-v1", inp["authenticated_user_id"], inp["client_id"], norm_field_id_mutation(load(inp["mutation_json"]))]
        return canon(arr).encode("utf-8"), dom("synchro:v3:push-mutation-fingerprint:v1")
    if k == "batch_fingerprint":
        b = load(inp["batch_json"])
        arr = ["atomic-batch-v1" if b.get("atomic") is True else "batch-v1", inp["authenticated_user_id"], b["client_id"],
               b["client_generation"].raw, b["batch_id"], [b["request_schema"]["version"].raw, b["request_schema"]["hash"]],
               [norm_field_id_mutation(m) for m in b["mutations"]]]
        return canon(arr).encode("utf-8"), dom("synchro:v3:push-batch-fingerprint:v1")
    raise ValueError(k)


def upstream_expected(v):
    octets, prefix = upstream_octets(v)
    return {"canonical_bytes_hex": octets.hex(), "expected_bytes_sha256": sha(octets), "expected_sha256": sha(prefix + octets)}


def aggregate_for(vectors):
    """vector_hashes[i] = SHA-256 of vectors[i] in RFC 8785 form; sha256 over the aggregate without it."""
    agg = {"algorithm": "sha256", "vector_count": len(vectors), "vector_hashes": [sha(canon(v).encode("utf-8")) for v in vectors]}
    agg["sha256"] = sha(dom(AGGREGATE_DOMAIN) + canon(agg).encode("utf-8"))
    return agg


def check_upstream(path, pack):
    failures = 0
    for v in pack["vectors"]:
        if not v["valid"]:
            continue
        want = upstream_expected(v)
        for key, value in want.items():
            if v["expected"].get(key) != value:
                print(f"FAIL {path.name} {v['vector_id']} {key}: independent {value[:24]}... != pack {str(v['expected'].get(key))[:24]}...")
                failures += 1
    agg = aggregate_for(pack["vectors"])
    for key, value in agg.items():
        if plain(pack["aggregate"].get(key)) != value:
            print(f"FAIL {path.name} aggregate {key}: independent and pack differ")
            failures += 1
    return failures


def sheet_r3_preimage():
    """Vector R3 assembled from the literal hex fragments printed in the 005 fact sheet."""
    identity = ("73796e6368726f3a76333a726f772d6964656e746974793a763100" "000000000000000c" "74626c5f636f756e74657273"
                "0000000000000005" "666c645f6e" "02" "01" "00000007")
    body = ("00000002" "0000000000000009" "666c645f6c6162656c" "0101" "0000000000000005" "736576656e"
            "0000000000000005" "666c645f6e" "0201" "00000007")
    pre = ("73796e6368726f3a76333a726f772d6469676573743a763100" + bytes(range(32)).hex()
           + "0000000000000042" + identity + "0000000000000037" + body + "0000000000000001" "31")
    got = hashlib.sha256(bytes.fromhex(pre)).hexdigest()
    want = "aca227bbc32c4d004ee861c6ae7ce07cd38ff0127f17d9beb74ce479922885cb"
    return got == want


def main():
    fill = "--fill" in sys.argv
    failures = 0
    if not sheet_r3_preimage():
        print("FAIL sheet R3 preimage does not hash to the printed digest")
        failures += 1
    for path in sorted(ROOT.glob("*.json")):
        raw = path.read_text(encoding="utf-8")
        pack = load(raw)
        if "aggregate" in pack:
            failures += check_upstream(path, pack)
            continue
        for v in pack["vectors"]:
            if not v["valid"]:
                continue
            want = expected_for(v)
            for key, value in v["expected"].items():
                if key in ("note",):
                    continue
                if value == "@fill" and fill:
                    raw = raw.replace('"@fill"', json.dumps(want[key]), 1)
                    continue
                got = want.get(key)
                expected_value = plain(value)
                if got != expected_value:
                    print(f"FAIL {path.name} {v['vector_id']} {key}: independent {got!r} != pack {expected_value!r}")
                    failures += 1
        if fill:
            path.write_text(raw, encoding="utf-8")
    print(f"independent check: {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
