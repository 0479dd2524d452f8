#!/usr/bin/env python3
"""Writes the upstream-format packs and the push-body pack from the fact sheets.

    python3 vectors/independent/write_upstream_packs.py

Outputs (overwritten):
  vectors/upstream-canonical.json    upstream format: every kind, valid and invalid
  vectors/upstream-push-limits.json  upstream format: the mutation-count and request-size limits (large inputs)
  vectors/push-bodies.json           project format: requests given as body text (octet limit, strict reading)

Inputs are the facts of the 002 and 005 sheets and of wire-protocol.md; the
typed values, rows and scopes of the project's own packs are carried over
into the upstream format. Every expected value and the aggregate come from
check.py, the Python implementation that shares no code with harness/codec,
and the values the sheets print are asserted here before anything is written.
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check  # noqa: E402  (the independent implementation next to this file)

ROOT = check.ROOT
H6 = "96e4fedd1c5372f38dddc418faa064e141bf15a85f8c138a3d213f1114c82a35"
H7 = "4e5592258c571fefd6f54e83feb362ca7075094600b9e6c2fd456404b212fadd"
RAW32 = bytes(range(32)).hex()
M1 = "48f0759e-7a22-43d4-b71b-926079b203df"
M2 = "057e64dc-602a-46bd-94dc-6b4e70f795e5"
M3 = "7b3b26db-9576-441c-96ca-1ad455504492"
BATCH = "11e5568c-faac-4e81-ada3-a6ca19b57f22"
LIMIT_BODY = 1_048_576
LIMIT_CANONICAL = 1_048_576
LIMIT_NORMALIZED = 65_536


def dump(v):
    """JSON text of a value read by check.load, keeping every number's spelling."""
    if isinstance(v, check.Num):
        return v.raw
    if isinstance(v, str):
        try:
            v.encode("utf-8")
            return json.dumps(v, ensure_ascii=False)
        except UnicodeEncodeError:  # a lone surrogate: only its escape can be written
            return json.dumps(v)
    if isinstance(v, list):
        return "[" + ",".join(dump(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dump(x) for k, x in v.items()) + "}"
    return json.dumps(v)


def compact(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def vector(vector_id, kind, valid, inp, error=None, note=None, source="fact-sheet"):
    v = {"vector_id": vector_id, "kind": kind, "valid": valid, "source": source}
    if note:
        v["note"] = note
    v["input"] = inp
    if valid:
        v["expected"] = check.upstream_expected(json.loads(json.dumps(v), parse_int=check.Num, parse_float=check.Num))
    else:
        v["expected"] = {"error": error} if error else {}
    return v


# ---------------------------------------------------------------- carried over from the project packs

def own_pack(name):
    return check.load((ROOT / name).read_text(encoding="utf-8"))["vectors"]


def carried(v, inp):
    kept = {"vector_id": v["vector_id"], "kind": v["kind"], "valid": v["valid"], "source": v.get("source", "fact-sheet")}
    note = v.get("note")
    return vector(kept["vector_id"], kept["kind"], kept["valid"], inp, v["expected"].get("error"), note, kept["source"])


def typed_values():
    out = []
    for v in own_pack("typed-values.json"):
        inp = {k: check.plain(x) for k, x in v["input"].items() if k != "value"}
        inp["raw_json"] = dump(v["input"]["value"])
        out.append(carried(v, inp))
    return out


def key_json(field_id, value):
    return "{" + '"field_id":' + json.dumps(field_id, ensure_ascii=False) + ',"value":' + dump(value) + "}"


def rows_and_scopes():
    out = []
    for v in own_pack("rows-and-scopes.json"):
        i = v["input"]
        if v["kind"] == "row_identity":
            inp = {"table_id": i["table_id"], "pk_type": i["pk_type"], "pk_json": key_json(i["pk_field_id"], i["pk"])}
        elif v["kind"] == "row_digest":
            inp = {"schema_hash": i["schema_hash"], "table": check.plain(i["table"]),
                   "row_json": i["row"] if isinstance(i["row"], str) else dump(i["row"]), "server_version": i["server_version"]}
            if "pk" in i:
                inp["pk_json"] = key_json(i["table"]["primary_key_field_id"], i["pk"])
        else:
            inp = check.plain(i)
        out.append(carried(v, inp))
    return out


# ---------------------------------------------------------------- sheet values the packs must reproduce

SHEET_TYPED = {
    "VEC-TYPED-BOOLEAN-FALSE-001": "060100", "VEC-TYPED-BOOLEAN-TRUE-001": "060101",
    "VEC-TYPED-INT-ZERO-001": "020100000000", "VEC-TYPED-INT-MAX-001": "02017fffffff", "VEC-TYPED-INT-MIN-001": "020180000000",
    "VEC-TYPED-INT64-MAX-001": "03017fffffffffffffff", "VEC-TYPED-INT64-MIN-001": "03018000000000000000",
    "VEC-TYPED-INT64-SAFE-001": "0301001fffffffffffff", "VEC-TYPED-DECIMAL-ZERO-001": "0401000000000000000130",
    "VEC-TYPED-FLOAT-VALUE-001": "05013fb999999999999a", "VEC-TYPED-FLOAT-MAX-001": "05017fefffffffffffff",
    "VEC-TYPED-FLOAT-MIN-001": "05010000000000000001", "VEC-TYPED-STRING-EMPTY-001": "01010000000000000000",
    "VEC-TYPED-STRING-NFC-001": "01010000000000000002c3a9", "VEC-TYPED-STRING-NFD-001": "0101000000000000000365cc81",
    "VEC-TYPED-BYTES-EMPTY-001": "0b010000000000000000", "VEC-TYPED-DATE-LEAP-001": "0801000000000000000a323032342d30322d3239",
    "VEC-TYPED-DATETIME-UTC-001": "0701000000000000001b323032342d30322d32395431323a33343a35362e3132333435365a",
    "VEC-TYPED-NULL-STRING-001": "0100", "VEC-TYPED-NULL-INT-001": "0200", "VEC-TYPED-NULL-BOOLEAN-001": "0600",
    "VEC-TYPED-NULL-JSON-001": "0a00", "VEC-TYPED-NULL-BYTES-001": "0b00",
}
SHEET_DIGESTS = {
    "VEC-ROW-DIGEST-R3-001": "aca227bbc32c4d004ee861c6ae7ce07cd38ff0127f17d9beb74ce479922885cb",
    "VEC-ROW-DIGEST-R1-001": "3823aa62cb812db3845afcd542e67bd9f38ea013949568752fc00c6694387a1f",
    "VEC-ROW-DIGEST-R1-VERSION-001": "4e8cca6ec3ab2f152495dd66377fa31619e5539dd16d7746a9e83c1a60c7b9b0",
    "VEC-ROW-DIGEST-R2-001": "e29c68a3d7f6dd88ca9fd01f62904225781b80ff2cae21b2fd85c5bd4831bfcd",
    "VEC-SCOPE-EMPTY-001": "09a66150dd7030e96b929ec07cf93400a36b602968c5b611c0646654ceb07e4c",
    "VEC-SCOPE-NONEMPTY-SORTED-001": "3fbe6807b60254ddb00cf0c3bf46a19cf40d3b643cc1f21faf70bc4a6500ff36",
}


def assert_sheet_values(vectors):
    by_id = {v["vector_id"]: v for v in vectors}
    for vid, octets in SHEET_TYPED.items():
        got = by_id[vid]["expected"]["canonical_bytes_hex"]
        assert got == octets, f"{vid}: {got} != sheet {octets}"
    for vid, digest in SHEET_DIGESTS.items():
        got = by_id[vid]["expected"]["expected_sha256"]
        assert got == digest, f"{vid}: {got} != sheet {digest}"
    false = by_id["VEC-TYPED-BOOLEAN-FALSE-001"]["expected"]["expected_bytes_sha256"]
    assert false == "91fb6f2810bd43ad1dcfe0c56bd7de151992cb8b980d2a8bfe5cd4210c1f952c", false


# ---------------------------------------------------------------- malformed and duplicated texts of the value kinds

def text_vectors():
    v = []
    t = lambda vid, typ, raw, err, note, **extra: v.append(vector(vid, "typed_value", False, {"type": typ, "raw_json": raw, **extra}, err, note))
    t("VEC-TYPED-TEXT-EMPTY-001", "int", "", "json_syntax", "raw_json holds no JSON value")
    t("VEC-TYPED-TEXT-TRAILING-001", "int", "42,", "json_syntax", "trailing data after the value")
    t("VEC-TYPED-TEXT-TWO-VALUES-001", "int", "1 2", "json_syntax", "two JSON values")
    t("VEC-TYPED-TEXT-UNTERMINATED-001", "string", '"abc', "json_syntax", "unterminated string")
    t("VEC-TYPED-TEXT-HEX-001", "int", "0x10", "json_syntax", "not a JSON number")
    t("VEC-TYPED-TEXT-LEADING-ZERO-001", "int", "007", "json_syntax", "JSON forbids a leading zero")
    t("VEC-TYPED-TEXT-SINGLE-QUOTES-001", "string", "'a'", "json_syntax", "single quotes are not JSON")
    t("VEC-TYPED-TEXT-OBJECT-001", "string", '{"a":1}', "wrong_json_type", "no portable type travels as a JSON object")
    t("VEC-TYPED-TEXT-JSON-DEEP-DUPLICATE-001", "json", json.dumps('{"a":{"b":1,"b":1}}'), "json_duplicate_member",
      "json value repeating a member one level down, even with the same value")
    t("VEC-TYPED-TEXT-JSON-TOO-DEEP-001", "json", json.dumps("[" * 128 + "]" * 128), "json_too_deep", "128 nested arrays: nesting stays below 128")
    ok = lambda vid, typ, raw, note: v.append(vector(vid, "typed_value", True, {"type": typ, "raw_json": raw}, note=note))
    ok("VEC-TYPED-TEXT-WHITESPACE-001", "int", " \n42\t", "whitespace around the value text is not part of the value")
    ok("VEC-TYPED-TEXT-ESCAPED-001", "string", '"h\\u00e9llo"', "an escape decodes to the same string as the raw character")
    ok("VEC-TYPED-TEXT-JSON-DEPTH-127-001", "json", json.dumps("[" * 127 + "]" * 127), "127 nested arrays are allowed")
    return v


def key_text_vectors():
    v = []
    rid = lambda vid, valid, pk_json, err, note, pk_type="int": v.append(
        vector(vid, "row_identity", valid, {"table_id": "tbl_counters", "pk_type": pk_type, "pk_json": pk_json}, err, note))
    rid("VEC-ROW-IDENTITY-TEXT-MALFORMED-001", False, '{"field_id":"fld_n","value":7', "json_syntax", "pk_json is cut short")
    rid("VEC-ROW-IDENTITY-TEXT-DUPLICATE-001", False, '{"field_id":"fld_n","value":7,"value":8}', "json_duplicate_member", "pk_json repeats value")
    rid("VEC-ROW-IDENTITY-TEXT-NO-VALUE-001", False, '{"field_id":"fld_n"}', "wrong_json_type", "a key is {field_id, value}")
    rid("VEC-ROW-IDENTITY-TEXT-EXTRA-001", False, '{"field_id":"fld_n","value":7,"type":"int"}', "wrong_json_type", "a key has no other member")
    rid("VEC-ROW-IDENTITY-INT-SPELLING-001", False, '{"field_id":"fld_n","value":7.0}', "invalid_int", "an int key spelled 7.0")
    rid("VEC-ROW-IDENTITY-INT-RANGE-001", False, '{"field_id":"fld_n","value":2147483648}', "int_out_of_range", "an int key beyond int32")
    rid("VEC-ROW-IDENTITY-INT64-LEADING-ZERO-001", False, '{"field_id":"fld_n","value":"007"}', "invalid_int64", "an int64 key with a leading zero", "int64")
    rid("VEC-ROW-IDENTITY-EMPTY-FIELD-001", False, '{"field_id":"","value":7}', "invalid_identifier", "an empty key field ID")
    rid("VEC-ROW-IDENTITY-TEXT-SPACED-001", True, ' { "value" : 7 , "field_id" : "fld_n" } ', None, "member order and whitespace of pk_json do not matter")
    r3 = {"table_id": "tbl_counters", "primary_key_field_id": "fld_n",
          "fields": [{"field_id": "fld_n", "type": "int"}, {"field_id": "fld_label", "type": "string", "nullable": True}]}
    row = lambda vid, valid, row_json, err, note, **extra: v.append(vector(vid, "row_digest", valid, {
        "schema_hash": RAW32, "table": extra.get("table", r3), "row_json": row_json,
        "server_version": extra.get("server_version", "1"), **({"pk_json": extra["pk_json"]} if "pk_json" in extra else {})}, err, note))
    row("VEC-ROW-DIGEST-TEXT-MALFORMED-001", False, '{"fld_n":7,"fld_label":"seven"', "json_syntax", "row_json is cut short")
    row("VEC-ROW-DIGEST-TEXT-TRAILING-001", False, '{"fld_n":7,"fld_label":"seven"}x', "json_syntax", "trailing data after the row")
    row("VEC-ROW-DIGEST-TEXT-DUPLICATE-SAME-001", False, '{"fld_n":7,"fld_label":"seven","fld_label":"seven"}', "duplicate_field",
        "a field repeated with the same value is still repeated")
    row("VEC-ROW-DIGEST-PK-FIELD-MISMATCH-001", False, '{"fld_n":7,"fld_label":"seven"}', "pk_mismatch", "pk_json names another field",
        pk_json='{"field_id":"fld_label","value":7}')
    row("VEC-ROW-DIGEST-PK-JSON-001", True, '{"fld_n":7,"fld_label":"seven"}', None, "R3 with the separate key {fld_n, 7}: same digest as R3",
        pk_json='{"field_id":"fld_n","value":7}')
    row("VEC-ROW-DIGEST-VERSION-CONTROL-001", False, '{"fld_n":7,"fld_label":"seven"}', "invalid_server_version",
        "server_version holding a control character", server_version="v\u0001")
    row("VEC-ROW-DIGEST-VERSION-BACKSLASH-001", False, '{"fld_n":7,"fld_label":"seven"}', "invalid_server_version",
        "server_version holding a backslash", server_version="v\\1")
    row("VEC-ROW-DIGEST-VERSION-64-001", True, '{"fld_n":7,"fld_label":"seven"}', None, "a 64-octet server_version is the longest allowed",
        server_version="~" * 64)
    writable = {**r3, "fields": [{"field_id": "fld_n", "type": "int", "writable": True}, {"field_id": "fld_label", "type": "string", "nullable": True}]}
    row("VEC-ROW-DIGEST-WRITABLE-KEY-001", False, '{"fld_n":7,"fld_label":"seven"}', "protected_field_writable",
        "a table whose key field is declared writable has no valid manifest", table=writable)
    row("VEC-ROW-DIGEST-LONE-SURROGATE-001", False, '{"fld_n":7,"fld_label":"\\ud800"}', "invalid_string", "a string value with a lone surrogate")
    r3_identity = check.dom("synchro:v3:row-identity:v1") + check.text("tbl_counters") + check.text("fld_n") + bytes.fromhex("020100000007")
    r3_digest = SHEET_DIGESTS["VEC-ROW-DIGEST-R3-001"]
    scope = lambda vid, entries, err, note, scope_id="scope-a": v.append(vector(vid, "scope_digest", False, {
        "schema_hash": RAW32, "scope_id": scope_id, "entries": [{"identity_hex": i.hex(), "digest_hex": d} for i, d in entries]}, err, note))
    scope("VEC-SCOPE-EMPTY-SCOPE-ID-001", [], "invalid_identifier", "an empty scope_id", scope_id="")
    scope("VEC-SCOPE-KEY-PRESENCE-NULL-001", [(r3_identity[:-5] + bytes.fromhex("0000000007"), r3_digest)], "invalid_row_identity",
          "an identity whose key presence octet is 0x00")
    scope("VEC-SCOPE-KEY-PRESENCE-TWO-001", [(r3_identity[:-5] + bytes.fromhex("0200000007"), r3_digest)], "invalid_row_identity",
          "an identity whose key presence octet is 0x02")
    scope("VEC-SCOPE-EMPTY-TABLE-IN-IDENTITY-001", [(check.dom("synchro:v3:row-identity:v1") + check.text("") + check.text("fld_n")
                                                      + bytes.fromhex("020100000007"), r3_digest)], "invalid_row_identity",
          "an identity whose table ID is empty")
    scope("VEC-SCOPE-DIGEST-LONG-001", [(r3_identity, r3_digest + "00")], "invalid_digest", "a 33-octet row digest")
    return v


# ---------------------------------------------------------------- manifests

def example_table():
    return {
        "table_id": "tbl_notes", "relation_id": "rel_notes", "name": "notes", "primary_key_field_id": "fld_notes_id",
        "lifecycle": {"created_at_field_id": None, "updated_at_field_id": "fld_notes_updated_at", "deleted_at_field_id": "fld_notes_deleted_at"},
        "composition": "multi_scope",
        "fields": [
            {"field_id": "fld_notes_body", "name": "body", "type": "string", "nullable": False, "writable": True},
            {"field_id": "fld_notes_deleted_at", "name": "deleted_at", "type": "datetime", "nullable": True, "writable": False},
            {"field_id": "fld_notes_id", "name": "id", "type": "string", "nullable": False, "writable": False},
            {"field_id": "fld_notes_price", "name": "price", "type": "decimal", "nullable": True, "writable": True, "precision": 10, "scale": 2},
            {"field_id": "fld_notes_updated_at", "name": "updated_at", "type": "datetime", "nullable": False, "writable": False},
        ],
        "indexes": [{"index_id": "idx_notes_updated", "name": "notes_updated_at_idx", "field_ids": ["fld_notes_updated_at"], "unique": False}],
    }


def example_manifest():
    return {"schema_version": 6, "parent_schema": {"version": 5, "hash": H7}, "transition_class": "class_3",
            "compatibility_floor": 6, "tables": [example_table()]}


def field(m, field_id):
    return next(f for f in m["tables"][0]["fields"] if f["field_id"] == field_id)


def manifest_vectors():
    v = []
    add = lambda vid, valid, text, err, note: v.append(vector(vid, "schema_manifest", valid, {"manifest_json": text}, err, note))
    base = example_manifest()
    add("VEC-SCHEMA-MANIFEST-EXAMPLE-001", True, compact(base), None, "the wire sheet's example manifest body, without schema_hash")
    body_hash = check.manifest({"manifest": check.load(compact(base))})[0]
    add("VEC-SCHEMA-MANIFEST-WITH-HASH-001", True, compact({**base, "schema_hash": body_hash}), None, "the example with its recomputed schema_hash")
    spaced = json.dumps({**base, "tables": [{**example_table(), "fields": list(reversed(example_table()["fields"]))}]}, indent=2)
    add("VEC-SCHEMA-MANIFEST-UNORDERED-TEXT-001", True, spaced, None, "whitespace and field order of the text do not change the hash")
    add("VEC-SCHEMA-MANIFEST-PRINTED-HASH-001", False, compact({**base, "schema_hash": H6}), "invalid_schema_hash",
        "the hash printed in the wire sheet is not the hash of the example body")
    add("VEC-SCHEMA-MANIFEST-UPPERCASE-HASH-001", False, compact({**base, "schema_hash": body_hash.upper()}), "invalid_schema_hash", "uppercase hex")
    add("VEC-SCHEMA-MANIFEST-SHORT-HASH-001", False, compact({**base, "schema_hash": body_hash[:63]}), "invalid_schema_hash", "63 hex characters")
    add("VEC-SCHEMA-MANIFEST-LONG-HASH-001", False, compact({**base, "schema_hash": body_hash + "0"}), "invalid_schema_hash", "65 hex characters")
    with_claim = {**base, "schema_hash": "0" * 64}
    self_hash = check.sha(check.dom("synchro:v3:schema-manifest:v1") + check.canon(with_claim).encode("utf-8"))
    add("VEC-SCHEMA-MANIFEST-HASH-OVER-HASH-001", False, compact({**base, "schema_hash": self_hash}), "invalid_schema_hash",
        "a hash computed over a body that still contains schema_hash")

    def broken(vid, err, note, change):
        m = example_manifest()
        change(m)
        add(vid, False, compact(m), err, note)

    broken("VEC-SCHEMA-MANIFEST-WRITABLE-KEY-001", "protected_field_writable", "the primary-key field is writable (M5; 002: a key is never writable)",
           lambda m: field(m, "fld_notes_id").update(writable=True))
    broken("VEC-SCHEMA-MANIFEST-WRITABLE-UPDATED-AT-001", "protected_field_writable", "the update-time lifecycle field is writable (M6)",
           lambda m: field(m, "fld_notes_updated_at").update(writable=True))
    broken("VEC-SCHEMA-MANIFEST-WRITABLE-DELETED-AT-001", "protected_field_writable", "the deletion-time lifecycle field is writable (M6)",
           lambda m: field(m, "fld_notes_deleted_at").update(writable=True))
    broken("VEC-SCHEMA-MANIFEST-NULLABLE-KEY-001", "invalid_pk_type", "a nullable key (M5)", lambda m: field(m, "fld_notes_id").update(nullable=True))
    broken("VEC-SCHEMA-MANIFEST-FLOAT-KEY-001", "invalid_pk_type", "a float key (005: string, int or int64 only)",
           lambda m: field(m, "fld_notes_id").update(type="float"))
    broken("VEC-SCHEMA-MANIFEST-KEY-MISSING-001", "unknown_field", "primary_key_field_id names no field",
           lambda m: m["tables"][0].update(primary_key_field_id="fld_notes_gone"))
    broken("VEC-SCHEMA-MANIFEST-TYPE-ALIAS-001", "unknown_type", "a PostgreSQL type name", lambda m: field(m, "fld_notes_body").update(type="text"))
    broken("VEC-SCHEMA-MANIFEST-TYPE-CASE-001", "unknown_type", "another casing", lambda m: field(m, "fld_notes_body").update(type="String"))
    broken("VEC-SCHEMA-MANIFEST-DECIMAL-NO-PRECISION-001", "invalid_manifest", "a decimal without precision and scale (M7)",
           lambda m: [field(m, "fld_notes_price").pop(k) for k in ("precision", "scale")])
    broken("VEC-SCHEMA-MANIFEST-SCALE-OVER-PRECISION-001", "invalid_manifest", "scale 11 > precision 10 (M7)",
           lambda m: field(m, "fld_notes_price").update(scale=11))
    broken("VEC-SCHEMA-MANIFEST-PRECISION-ZERO-001", "invalid_manifest", "precision 0 (M7)", lambda m: field(m, "fld_notes_price").update(precision=0))
    broken("VEC-SCHEMA-MANIFEST-PRECISION-ON-STRING-001", "invalid_manifest", "precision on a non-decimal field (M7)",
           lambda m: field(m, "fld_notes_body").update(precision=4, scale=0))
    broken("VEC-SCHEMA-MANIFEST-LIFECYCLE-TYPE-001", "invalid_manifest", "updated_at_field_id names a string field (M6)",
           lambda m: m["tables"][0]["lifecycle"].update(updated_at_field_id="fld_notes_body"))
    broken("VEC-SCHEMA-MANIFEST-LIFECYCLE-MISSING-001", "unknown_field", "deleted_at_field_id names no field (M6)",
           lambda m: m["tables"][0]["lifecycle"].update(deleted_at_field_id="fld_notes_gone"))
    broken("VEC-SCHEMA-MANIFEST-DUPLICATE-FIELD-001", "invalid_manifest", "field_id listed twice (M4)",
           lambda m: m["tables"][0]["fields"].append(dict(field(m, "fld_notes_body"), name="body2")))
    broken("VEC-SCHEMA-MANIFEST-DUPLICATE-FIELD-NAME-001", "invalid_manifest", "field name listed twice (M4)",
           lambda m: field(m, "fld_notes_price").update(name="body"))
    broken("VEC-SCHEMA-MANIFEST-DUPLICATE-TABLE-001", "invalid_manifest", "table_id listed twice (M4)",
           lambda m: m["tables"].append(dict(example_table(), relation_id="rel_other", name="other")))
    broken("VEC-SCHEMA-MANIFEST-INDEX-UNKNOWN-FIELD-001", "unknown_field", "an index over a field the table lacks (M8)",
           lambda m: m["tables"][0]["indexes"][0].update(field_ids=["fld_notes_gone"]))
    broken("VEC-SCHEMA-MANIFEST-INDEX-EMPTY-001", "invalid_manifest", "an index over no field (M8)",
           lambda m: m["tables"][0]["indexes"][0].update(field_ids=[]))
    broken("VEC-SCHEMA-MANIFEST-INITIAL-WITH-PARENT-001", "invalid_manifest", "transition_class initial with a parent (M1)",
           lambda m: m.update(transition_class="initial"))
    broken("VEC-SCHEMA-MANIFEST-PARENT-NOT-OLDER-001", "invalid_manifest", "parent version 6 for schema_version 6 (M2)",
           lambda m: m["parent_schema"].update(version=6))
    broken("VEC-SCHEMA-MANIFEST-FLOOR-001", "invalid_manifest", "a class_3 manifest with compatibility_floor below schema_version (M3)",
           lambda m: m.update(compatibility_floor=5))
    broken("VEC-SCHEMA-MANIFEST-UNKNOWN-MEMBER-001", "invalid_manifest", "an unknown top-level member", lambda m: m.update(generated_at="2026-01-01"))
    broken("VEC-SCHEMA-MANIFEST-UNKNOWN-FIELD-MEMBER-001", "invalid_manifest", "an unknown field member",
           lambda m: field(m, "fld_notes_body").update(default=""))
    broken("VEC-SCHEMA-MANIFEST-NO-INDEXES-001", "invalid_manifest", "a table without its indexes member", lambda m: m["tables"][0].pop("indexes"))
    broken("VEC-SCHEMA-MANIFEST-NO-TABLES-001", "invalid_manifest", "no tables member", lambda m: m.pop("tables"))
    broken("VEC-SCHEMA-MANIFEST-EMPTY-TABLE-ID-001", "invalid_identifier", "an empty table_id", lambda m: m["tables"][0].update(table_id=""))
    broken("VEC-SCHEMA-MANIFEST-VERSION-STRING-001", "invalid_manifest", "schema_version as a string", lambda m: m.update(schema_version="6"))
    text = compact(base)
    add("VEC-SCHEMA-MANIFEST-TEXT-VERSION-SPELLING-001", False, text.replace('"schema_version":6', '"schema_version":6.0'), "invalid_manifest",
        "schema_version spelled 6.0")
    add("VEC-SCHEMA-MANIFEST-TEXT-MALFORMED-001", False, text[:-1], "json_syntax", "manifest_json is cut short")
    add("VEC-SCHEMA-MANIFEST-TEXT-DUPLICATE-001", False, text.replace('"schema_version":6', '"schema_version":6,"schema_version":6'),
        "json_duplicate_member", "a repeated top-level member")
    add("VEC-SCHEMA-MANIFEST-TEXT-DEEP-DUPLICATE-001", False, text.replace('"name":"body",', '"name":"body","name":"body",'),
        "json_duplicate_member", "a repeated member inside a field")
    return v


# ---------------------------------------------------------------- push mutations and batches (field-ID form)

def insert(**over):
    m = {"mutation_id": M1, "table_id": "tbl_notes", "pk": {"field_id": "fld_notes_id", "value": "n-0002"},
         "authored_schema": {"version": 6, "hash": H6}, "operation": "insert", "client_version": "2026-09-01T08:21:10.000000Z",
         "columns": [{"field_id": "fld_notes_price", "value": "80"}, {"field_id": "fld_notes_body", "value": "Call plumber"}]}
    m.update(over)
    return m


def update(**over):
    m = {"mutation_id": M2, "table_id": "tbl_notes", "pk": {"field_id": "fld_notes_id", "value": "n-0001"},
         "authored_schema": {"version": 6, "hash": H6}, "operation": "update", "base_version": "sv:n-0001:17",
         "client_version": "2026-09-01T08:21:11.500000Z", "columns": [{"field_id": "fld_notes_body", "value": "Buy oat milk and bread"}]}
    m.update(over)
    return m


def delete(**over):
    m = {"mutation_id": M3, "table_id": "tbl_notes", "pk": {"field_id": "fld_notes_id", "value": "n-0003"},
         "authored_schema": {"version": 6, "hash": H6}, "operation": "delete", "base_version": "sv:n-0003:4",
         "client_version": "2026-09-01T08:21:12.000000Z"}
    m.update(over)
    return m


def without(m, *keys):
    return {k: x for k, x in m.items() if k not in keys}


def normalized_octets(m):
    """Octets of the RFC 8785 form of the normalized mutation of a field-ID-form mutation."""
    return len(check.canon(check.norm_field_id_mutation(check.load(compact(m)))).encode("utf-8"))


def padded_insert(octets):
    """An insert whose normalized form has exactly `octets` octets (ASCII padding in fld_notes_body)."""
    m = insert(columns=[{"field_id": "fld_notes_body", "value": ""}])
    m["columns"][0]["value"] = "x" * (octets - normalized_octets(m))
    assert normalized_octets(m) == octets
    return m


def mutation_vectors():
    v = []
    add = lambda vid, valid, text, err, note: v.append(vector(vid, "mutation_fingerprint", valid, {
        "authenticated_user_id": "user:u_42", "client_id": "pixel-7a-4410", "mutation_json": text}, err, note))
    ok = lambda vid, m, note: add(vid, True, compact(m), None, note)
    bad = lambda vid, m, err, note: add(vid, False, compact(m), err, note)
    ok("VEC-FP-MUTATION-INSERT-001", insert(), "the wire sheet's example insert; columns listed out of field order")
    ok("VEC-FP-MUTATION-UPDATE-001", update(), "the wire sheet's example update")
    ok("VEC-FP-MUTATION-DELETE-001", delete(), "the wire sheet's example delete: [0] for columns")
    ok("VEC-FP-MUTATION-INSERT-EMPTY-001", insert(columns=[]), "an insert with an empty column set: [1,[]], not [0]")
    ok("VEC-FP-MUTATION-UPDATE-NULL-001", update(columns=[{"field_id": "fld_notes_price", "value": None}]), "setting a field to null: [field, null]")
    ok("VEC-FP-MUTATION-INT-KEY-001", insert(table_id="tbl_counters", pk={"field_id": "fld_n", "value": 7},
                                             columns=[{"field_id": "fld_label", "value": "seven"}]), "an int key")
    ok("VEC-FP-MUTATION-INT64-KEY-001", insert(table_id="tbl_tags", pk={"field_id": "fld_tags_id", "value": "9007199254740993"}, columns=[
        {"field_id": "fld_tags_ok", "value": True}, {"field_id": "fld_tags_json", "value": '{"a":[1,2]}'},
        {"field_id": "fld_tags_float", "value": 0.5}, {"field_id": "fld_tags_int", "value": -3}]), "an int64 key and portable values of several types")
    ok("VEC-FP-MUTATION-UNICODE-FIELD-ORDER-001", insert(columns=[{"field_id": "\u00e9", "value": 2}, {"field_id": "Z", "value": 3},
                                                                 {"field_id": "a", "value": None}]),
       "columns sort by the UTF-8 octets of their field IDs: Z, a, \u00e9")
    ok("VEC-FP-MUTATION-256-COLUMNS-001", insert(columns=[{"field_id": f"f{k:03d}", "value": k} for k in range(256)]), "256 columns is the limit")
    ok("VEC-FP-MUTATION-65536-OCTETS-001", padded_insert(LIMIT_NORMALIZED), "a normalized mutation of exactly 65,536 octets")
    ok("VEC-FP-MUTATION-BASE-64-001", update(base_version="~" * 64), "a 64-octet base_version")
    add("VEC-FP-MUTATION-TEXT-SPACED-001", True, json.dumps(update(), indent=1), None, "whitespace and member order of the text do not matter")

    bad("VEC-FP-MUTATION-ID-UPPERCASE-001", insert(mutation_id=M1.upper()), "invalid_uuid", "mutation_id in uppercase hex")
    bad("VEC-FP-MUTATION-ID-BRACED-001", insert(mutation_id="{" + M1 + "}"), "invalid_uuid", "a braced UUID")
    bad("VEC-FP-MUTATION-ID-UNHYPHENATED-001", insert(mutation_id=M1.replace("-", "")), "invalid_uuid", "an unhyphenated UUID")
    bad("VEC-FP-MUTATION-ID-NIL-001", insert(mutation_id="00000000-0000-0000-0000-000000000000"), "invalid_uuid", "the nil UUID")
    bad("VEC-FP-MUTATION-CLIENT-VERSION-SECONDS-001", insert(client_version="2026-09-01T08:21:10Z"), "invalid_datetime", "client_version without microseconds")
    bad("VEC-FP-MUTATION-CLIENT-VERSION-MILLIS-001", insert(client_version="2026-09-01T08:21:10.000Z"), "invalid_datetime", "client_version with milliseconds")
    bad("VEC-FP-MUTATION-CLIENT-VERSION-OFFSET-001", insert(client_version="2026-09-01T08:21:10.000000+00:00"), "invalid_datetime",
        "client_version with an offset instead of Z")
    bad("VEC-FP-MUTATION-CLIENT-VERSION-DATE-001", insert(client_version="2026-02-30T08:21:10.000000Z"), "invalid_datetime",
        "client_version on a day that does not exist")
    for name, op in (("CREATE", "create"), ("UPSERT", "upsert"), ("CASE", "Insert"), ("EMPTY", "")):
        bad(f"VEC-FP-MUTATION-OP-{name}-001", insert(operation=op), "invalid_op", f"operation {op!r} is not in the push vocabulary")
    bad("VEC-FP-MUTATION-OP-NULL-001", insert(operation=None), "invalid_op", "operation null")
    bad("VEC-FP-MUTATION-OP-MISSING-001", without(insert(), "operation"), "invalid_mutation", "no operation member")
    bad("VEC-FP-MUTATION-INSERT-BASE-001", insert(base_version="sv:n-0002:1"), "invalid_op_shape", "an insert carrying base_version")
    bad("VEC-FP-MUTATION-INSERT-BASE-NULL-001", insert(base_version=None), "invalid_op_shape", "an insert carrying base_version null")
    bad("VEC-FP-MUTATION-INSERT-NO-COLUMNS-001", without(insert(), "columns"), "invalid_op_shape", "an insert without columns")
    bad("VEC-FP-MUTATION-INSERT-COLUMNS-NULL-001", insert(columns=None), "invalid_op_shape", "an insert with columns null")
    bad("VEC-FP-MUTATION-UPDATE-EMPTY-001", update(columns=[]), "invalid_op_shape", "an update with an empty patch")
    bad("VEC-FP-MUTATION-UPDATE-NO-BASE-001", without(update(), "base_version"), "invalid_op_shape", "an update without base_version")
    bad("VEC-FP-MUTATION-UPDATE-BASE-NULL-001", update(base_version=None), "invalid_op_shape",
        "an update whose required base_version is present as null")
    bad("VEC-FP-MUTATION-DELETE-BASE-NULL-001", delete(base_version=None), "invalid_op_shape",
        "a delete whose required base_version is present as null")
    bad("VEC-FP-MUTATION-UPDATE-BASE-EMPTY-001", update(base_version=""), "invalid_server_version", "an empty base_version")
    bad("VEC-FP-MUTATION-BASE-65-001", update(base_version="~" * 65), "invalid_server_version", "a 65-octet base_version")
    bad("VEC-FP-MUTATION-BASE-QUOTE-001", update(base_version='sv"1'), "invalid_server_version", "a base_version holding a quote")
    bad("VEC-FP-MUTATION-BASE-BACKSLASH-001", update(base_version="sv\\1"), "invalid_server_version", "a base_version holding a backslash")
    bad("VEC-FP-MUTATION-BASE-CONTROL-001", update(base_version="sv\n1"), "invalid_server_version", "a base_version holding a control character")
    bad("VEC-FP-MUTATION-DELETE-COLUMNS-001", delete(columns=[]), "invalid_op_shape", "a delete carrying columns, even empty")
    bad("VEC-FP-MUTATION-DELETE-NO-BASE-001", without(delete(), "base_version"), "invalid_op_shape", "a delete without base_version")
    bad("VEC-FP-MUTATION-257-COLUMNS-001", insert(columns=[{"field_id": f"f{k:03d}", "value": k} for k in range(257)]), "too_many_columns",
        "257 columns")
    bad("VEC-FP-MUTATION-65537-OCTETS-001", padded_insert(LIMIT_NORMALIZED + 1), "mutation_too_large", "a normalized mutation of 65,537 octets")
    bad("VEC-FP-MUTATION-DUPLICATE-COLUMN-001", insert(columns=[{"field_id": "fld_notes_body", "value": "a"}, {"field_id": "fld_notes_body", "value": "a"}]),
        "duplicate_field", "a field ID listed twice in columns")
    bad("VEC-FP-MUTATION-EMPTY-FIELD-ID-001", insert(columns=[{"field_id": "", "value": "a"}]), "invalid_identifier", "an empty column field ID")
    bad("VEC-FP-MUTATION-COLUMN-OBJECT-001", insert(columns=[{"field_id": "fld_notes_body", "value": {"a": 1}}]), "wrong_json_type",
        "a column value that is a JSON object")
    bad("VEC-FP-MUTATION-COLUMN-ARRAY-001", insert(columns=[{"field_id": "fld_notes_body", "value": [1]}]), "wrong_json_type",
        "a column value that is a JSON array")
    bad("VEC-FP-MUTATION-PK-NULL-001", insert(pk={"field_id": "fld_notes_id", "value": None}), "null_not_allowed", "a null key value")
    bad("VEC-FP-MUTATION-PK-BOOLEAN-001", insert(pk={"field_id": "fld_notes_id", "value": True}), "invalid_pk_type", "a boolean key value")
    bad("VEC-FP-MUTATION-PK-FLOAT-001", insert(pk={"field_id": "fld_notes_id", "value": 1.5}), "invalid_int", "a fractional key value")
    bad("VEC-FP-MUTATION-PK-RANGE-001", insert(pk={"field_id": "fld_notes_id", "value": 2147483648}), "int_out_of_range", "an integer key beyond int32")
    bad("VEC-FP-MUTATION-PK-EMPTY-FIELD-001", insert(pk={"field_id": "", "value": "n-0002"}), "invalid_identifier", "an empty key field ID")
    bad("VEC-FP-MUTATION-PK-SHAPE-001", insert(pk={"fld_notes_id": "n-0002"}), "invalid_mutation", "a wire-form pk where {field_id, value} belongs")
    bad("VEC-FP-MUTATION-TABLE-EMPTY-001", insert(table_id=""), "invalid_identifier", "an empty table_id")
    bad("VEC-FP-MUTATION-SCHEMA-ZERO-001", insert(authored_schema={"version": 0, "hash": ""}), "invalid_mutation",
        "the connect sentinel is not an authored schema")
    bad("VEC-FP-MUTATION-SCHEMA-HASH-UPPERCASE-001", insert(authored_schema={"version": 6, "hash": H6.upper()}), "invalid_schema_hash",
        "an uppercase authored schema hash")
    bad("VEC-FP-MUTATION-SCHEMA-EXTRA-001", insert(authored_schema={"version": 6, "hash": H6, "name": "v6"}), "invalid_mutation",
        "a SchemaRef has no other member")
    bad("VEC-FP-MUTATION-UNKNOWN-MEMBER-001", insert(depends_on_mutation_id=M2), "invalid_mutation", "a local-only member on the wire")
    text = compact(insert())
    add("VEC-FP-MUTATION-TEXT-MALFORMED-001", False, text[:-1], "json_syntax", "mutation_json is cut short")
    add("VEC-FP-MUTATION-TEXT-DUPLICATE-001", False, text.replace('"operation":"insert"', '"operation":"insert","operation":"insert"'),
        "json_duplicate_member", "a repeated member, even with the same value")
    add("VEC-FP-MUTATION-TEXT-DUPLICATE-IN-COLUMN-001", False, text.replace('"value":"80"', '"value":"80","value":"81"'),
        "json_duplicate_member", "a repeated member inside a column")
    add("VEC-FP-MUTATION-TEXT-NUMBER-SPELLING-001", False, compact(insert(columns=[{"field_id": "fld_n", "value": 1}])).replace('"value":1', '"value":1.0'),
        "noncanonical_number", "a column value spelled 1.0: RFC 8785 would merge it with 1")
    add("VEC-FP-MUTATION-TEXT-LONE-SURROGATE-001", False, text.replace("Call plumber", "\\ud800"), "invalid_string",
        "a column value with a lone surrogate has no UTF-8 form")
    v.append(vector("VEC-FP-MUTATION-CLIENT-ID-EMPTY-001", "mutation_fingerprint", False,
                    {"authenticated_user_id": "user:u_42", "client_id": "", "mutation_json": text}, "invalid_identifier", "an empty client_id"))
    return v


def request(mutations, **over):
    r = {"client_id": "pixel-7a-4410", "client_generation": 2, "batch_id": BATCH, "request_schema": {"version": 6, "hash": H6}, "mutations": mutations}
    r.update(over)
    return r


def batch_vector(vid, valid, r, err, note, text=None):
    return vector(vid, "batch_fingerprint", valid, {"authenticated_user_id": "user:u_42", "batch_json": text if text is not None else compact(r)}, err, note)


def batch_vectors():
    v = []
    ok = lambda vid, r, note: v.append(batch_vector(vid, True, r, None, note))
    bad = lambda vid, r, err, note: v.append(batch_vector(vid, False, r, err, note))
    three = [insert(), update(), delete()]
    ok("VEC-FP-BATCH-001", request(three), "the wire sheet's example request")
    ok("VEC-FP-BATCH-ATOMIC-001", request(three, atomic=True), "the same request with atomic: true; only the leading tag changes")
    ok("VEC-FP-BATCH-REORDERED-001", request([delete(), update(), insert()]), "mutation order is part of the fingerprint")
    ok("VEC-FP-BATCH-ONE-001", request([insert()]), "one mutation")
    ok("VEC-FP-BATCH-MAX-GENERATION-001", request([insert()], client_generation=9007199254740991), "the largest client_generation")
    bad("VEC-FP-BATCH-ATOMIC-SAME-ROW-001", request([insert(), update(mutation_id=M2, pk={"field_id": "fld_notes_id", "value": "n-0002"})], atomic=True),
        "duplicate_row", "an atomic batch naming one row twice")
    bad("VEC-FP-BATCH-REPEATED-MUTATION-001", request([insert(), insert()]), "duplicate_mutation_id", "a batch repeating a mutation")
    bad("VEC-FP-BATCH-REPEATED-ID-001", request([insert(), update(mutation_id=M1)]), "duplicate_mutation_id", "two mutations sharing one mutation_id")
    bad("VEC-FP-BATCH-EMPTY-001", request([]), "invalid_mutation_count", "no mutations")
    bad("VEC-FP-BATCH-ATOMIC-FALSE-001", request(three, atomic=False), "invalid_batch", "atomic: false")
    bad("VEC-FP-BATCH-ATOMIC-STRING-001", request(three, atomic="true"), "invalid_batch", 'atomic: "true"')
    bad("VEC-FP-BATCH-ATOMIC-NULL-001", request(three, atomic=None), "invalid_batch", "atomic: null never stands for absence")
    for name, gen in (("ZERO", 0), ("NEGATIVE", -1), ("FRACTION", 1.5), ("STRING", "2"), ("UNSAFE", 9007199254740992)):
        bad(f"VEC-FP-BATCH-GENERATION-{name}-001", request(three, client_generation=gen), "invalid_batch", f"client_generation {gen!r}")
    bad("VEC-FP-BATCH-ID-UPPERCASE-001", request(three, batch_id=BATCH.upper()), "invalid_uuid", "batch_id in uppercase hex")
    bad("VEC-FP-BATCH-ID-NIL-001", request(three, batch_id="00000000-0000-0000-0000-000000000000"), "invalid_uuid", "the nil batch_id")
    bad("VEC-FP-BATCH-SCHEMA-SENTINEL-001", request(three, request_schema={"version": 0, "hash": ""}), "invalid_batch",
        "the connect sentinel is not a push schema")
    bad("VEC-FP-BATCH-CLIENT-ID-EMPTY-001", request(three, client_id=""), "invalid_identifier", "an empty client_id")
    bad("VEC-FP-BATCH-NO-SCHEMA-001", without(request(three), "request_schema"), "invalid_batch", "no request_schema")
    bad("VEC-FP-BATCH-UNKNOWN-MEMBER-001", request(three, limit=10), "invalid_batch", "an unknown envelope member")
    bad("VEC-FP-BATCH-BAD-MUTATION-001", request([insert(), update(client_version="2026-09-01T08:21:11.5Z")]), "invalid_datetime",
        "one mutation with a client_version outside the microsecond form")
    text = compact(request(three))
    v.append(batch_vector("VEC-FP-BATCH-TEXT-MALFORMED-001", False, None, "json_syntax", "batch_json is cut short", text[:-2]))
    v.append(batch_vector("VEC-FP-BATCH-TEXT-DUPLICATE-001", False, None, "json_duplicate_member", "a repeated envelope member",
                          text.replace('"client_generation":2', '"client_generation":2,"client_generation":2')))
    v.append(batch_vector("VEC-FP-BATCH-TEXT-DEEP-DUPLICATE-001", False, None, "json_duplicate_member", "a repeated member inside a mutation's key",
                          text.replace('"value":"n-0002"', '"value":"n-0002","value":"n-0002"')))
    v.append(batch_vector("VEC-FP-BATCH-TEXT-GENERATION-SPELLING-001", False, None, "invalid_batch", "client_generation spelled 2.0",
                          text.replace('"client_generation":2', '"client_generation":2.0')))
    v.append(batch_vector("VEC-FP-BATCH-TEXT-SPACED-001", True, None, None, "whitespace and member order of the text do not matter",
                          json.dumps(dict(reversed(list(request(three).items()))), indent=2)))
    return v


def small_delete(k):
    return {"mutation_id": f"00000000-0000-4000-8000-{k:012x}", "table_id": "t", "pk": {"field_id": "k", "value": k},
            "authored_schema": {"version": 1, "hash": H6}, "operation": "delete", "base_version": "v", "client_version": "2026-01-01T00:00:00.000000Z"}


def wire_request_octets(r):
    """Octets of the RFC 8785 form of the wire request a field-ID-form request stands for."""
    def wire(m):
        w = {"mutation_id": m["mutation_id"], "table": m["table_id"], "pk": {m["pk"]["field_id"]: m["pk"]["value"]},
             "authored_schema": m["authored_schema"], "op": m["operation"], "client_version": m["client_version"]}
        if "base_version" in m:
            w["base_version"] = m["base_version"]
        if "columns" in m:
            w["columns"] = {c["field_id"]: c["value"] for c in m["columns"]}
        return w
    body = {"client_id": r["client_id"], "client_generation": r["client_generation"], "batch_id": r["batch_id"],
            "schema": r["request_schema"], "mutations": [wire(m) for m in r["mutations"]]}
    return len(check.canon(body).encode("utf-8"))


def oversized_request():
    """A request whose RFC 8785 form is 1,048,577 octets while every mutation stays within its own limit."""
    mutations = [padded_insert(64_000) for _ in range(17)]
    for k, m in enumerate(mutations):
        m["mutation_id"] = f"00000000-0000-4000-8000-{k + 1:012x}"
        m["pk"] = {"field_id": "fld_notes_id", "value": f"n-{k + 1}"}
    r = request(mutations)
    last = mutations[-1]["columns"][0]
    last["value"] = last["value"][: len(last["value"]) - (wire_request_octets(r) - (LIMIT_CANONICAL + 1))]
    assert wire_request_octets(r) == LIMIT_CANONICAL + 1
    assert all(normalized_octets(m) <= LIMIT_NORMALIZED for m in mutations)
    return r


def limit_vectors():
    return [
        batch_vector("VEC-FP-BATCH-1001-MUTATIONS-001", False, request([small_delete(k) for k in range(1, 1002)]), "invalid_mutation_count",
                     "1,001 mutations"),
        batch_vector("VEC-FP-BATCH-CANONICAL-OVER-LIMIT-001", False, oversized_request(), "request_too_large",
                     "the RFC 8785 form of the request is 1,048,577 octets; each normalized mutation fits"),
    ]


# ---------------------------------------------------------------- project-format pack: requests as body text

def wire_request(mutations):
    return {"client_id": "pixel-7a-4410", "client_generation": 2, "batch_id": BATCH, "schema": {"version": 6, "hash": H6}, "mutations": mutations}


WIRE_INSERT = {"mutation_id": M1, "table": "tbl_notes", "pk": {"fld_notes_id": "n-0002"}, "authored_schema": {"version": 6, "hash": H6},
               "op": "insert", "client_version": "2026-09-01T08:21:10.000000Z", "columns": {"fld_notes_body": "Call plumber", "fld_notes_price": "80"}}


def body_vector(vid, valid, body, error, note):
    v = {"vector_id": vid, "kind": "batch_fingerprint", "valid": valid, "source": "independent" if valid else "fact-sheet", "note": note,
         "input": {"user_id": "user:u_42", "request": body}}
    if valid:
        want = check.expected_for(json.loads(json.dumps(v), parse_int=check.Num, parse_float=check.Num))
        v["expected"] = {"sha256": want["sha256"], "canonical_json": want["canonical_json"]}
    else:
        v["expected"] = {"error": error}
    return v


def body_pack():
    body = compact(wire_request([WIRE_INSERT]))
    over = body[:-1] + " " * (LIMIT_BODY + 1 - len(body.encode("utf-8"))) + "}"
    assert len(over.encode("utf-8")) == LIMIT_BODY + 1
    vectors = [
        body_vector("VEC-BODY-SPACED-001", True, json.dumps(wire_request([WIRE_INSERT]), indent=2),
                    None, "the body text is read strictly; whitespace is not part of the request"),
        body_vector("VEC-BODY-OVER-LIMIT-001", False, over, "request_too_large",
                    "a body of 1,048,577 octets (whitespace padding), although its RFC 8785 form fits"),
        body_vector("VEC-BODY-MALFORMED-001", False, body[:-1], "json_syntax", "a body cut short"),
        body_vector("VEC-BODY-TRAILING-001", False, body + "{}", "json_syntax", "a second JSON value after the request"),
        body_vector("VEC-BODY-DUPLICATE-001", False, body.replace('"batch_id"', '"batch_id":"x","batch_id"', 1), "json_duplicate_member",
                    "a repeated envelope member"),
        body_vector("VEC-BODY-LONE-SURROGATE-001", False, body.replace("Call plumber", "\\ud800"), "invalid_string",
                    "a string escape with no UTF-8 form"),
        body_vector("VEC-BODY-NUMBER-SPELLING-001", False, body.replace('"version":6,', '"version":6.0,', 1), "invalid_batch",
                    "the request schema version spelled 6.0"),
        {"vector_id": "VEC-MUTATION-TEXT-DUPLICATE-001", "kind": "mutation_fingerprint", "valid": False, "source": "fact-sheet",
         "note": "a mutation given as JSON text repeating a member", "input": {"user_id": "user:u_42", "client_id": "pixel-7a-4410",
                                                                               "mutation": compact(WIRE_INSERT).replace('"op":"insert"', '"op":"insert","op":"insert"')},
         "expected": {"error": "json_duplicate_member"}},
    ]
    return {"vector_set_id": "synchro-v3-push-bodies",
            "description": "Push requests given as body text: the octet limit of the decoded body and strict reading. Written by vectors/independent/write_upstream_packs.py.",
            "vectors": vectors}


# ---------------------------------------------------------------- writing

def write_upstream(name, set_id, description, vectors):
    ids = [v["vector_id"] for v in vectors]
    assert len(ids) == len(set(ids)), "repeated vector_id"
    pack = {"vector_set_id": set_id, "description": description, "vectors": vectors, "aggregate": check.aggregate_for(vectors)}
    write(name, pack)


def write(name, pack):
    lines = ["{"]
    for key, value in pack.items():
        if key == "vectors":
            body = ",\n".join("    " + json.dumps(v, ensure_ascii=False) for v in value)
            lines.append(f'  "vectors": [\n{body}\n  ],')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    (ROOT / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def main():
    canonical = typed_values() + text_vectors() + rows_and_scopes() + key_text_vectors() + manifest_vectors() + mutation_vectors() + batch_vectors()
    assert_sheet_values(canonical)
    write_upstream("upstream-canonical.json", "synchro-v3-upstream-canonical",
                   "Every vector kind in the upstream format, valid and invalid, from the 002 and 005 fact sheets and wire-protocol.md. "
                   "Written by vectors/independent/write_upstream_packs.py; expected values and the aggregate by vectors/independent/check.py.",
                   canonical)
    write_upstream("upstream-push-limits.json", "synchro-v3-upstream-push-limits",
                   "The push request limits that need large inputs: 1,001 mutations, and an RFC 8785 form of 1,048,577 octets "
                   "(the accepted boundaries, 1,000 mutations and 1,048,576 octets, are unit tests in test/codec/push-refusals.test.ts). "
                   "Written by vectors/independent/write_upstream_packs.py.",
                   limit_vectors())
    write("push-bodies.json", body_pack())
    print(f"wrote {len(canonical)} + {len(limit_vectors())} upstream vectors and {len(body_pack()['vectors'])} body vectors")


if __name__ == "__main__":
    main()
