import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { CodecError, schemaManifestHash, schemaManifestHashUnchecked, verifySchemaManifest } from '../../harness/codec/index.ts';

const manifest = () => ({
  schema_version: 2,
  schema_hash: 'f'.repeat(64),
  parent_schema: { version: 1, hash: 'a'.repeat(64) },
  transition_class: 'class_2',
  compatibility_floor: 1,
  tables: [
    {
      table_id: 't_b',
      relation_id: 'r_b',
      name: 'b',
      primary_key_field_id: 'id',
      lifecycle: { created_at_field_id: null, updated_at_field_id: null, deleted_at_field_id: null },
      composition: 'single_scope',
      fields: [
        { field_id: 'z', name: 'z', type: 'string', nullable: true, writable: true },
        { field_id: 'id', name: 'id', type: 'int', nullable: false, writable: false },
      ],
      indexes: [
        { index_id: 'i2', name: 'n2', field_ids: ['z', 'id'], unique: false },
        { index_id: 'i1', name: 'n1', field_ids: ['id'], unique: true },
      ],
    },
    {
      table_id: 't_a',
      relation_id: 'r_a',
      name: 'a',
      primary_key_field_id: 'id',
      lifecycle: { created_at_field_id: null, updated_at_field_id: null, deleted_at_field_id: null },
      composition: 'multi_scope',
      fields: [{ field_id: 'id', name: 'id', type: 'string', nullable: false, writable: false }],
      indexes: [],
    },
  ],
});

// Written out by hand: schema_hash removed, tables/fields/indexes sorted by ID, members sorted, no whitespace.
const CANONICAL =
  '{"compatibility_floor":1,"parent_schema":{"hash":"' + 'a'.repeat(64) + '","version":1},"schema_version":2,"tables":[' +
  '{"composition":"multi_scope","fields":[{"field_id":"id","name":"id","nullable":false,"type":"string","writable":false}],"indexes":[],' +
  '"lifecycle":{"created_at_field_id":null,"deleted_at_field_id":null,"updated_at_field_id":null},"name":"a","primary_key_field_id":"id","relation_id":"r_a","table_id":"t_a"},' +
  '{"composition":"single_scope","fields":[{"field_id":"id","name":"id","nullable":false,"type":"int","writable":false},{"field_id":"z","name":"z","nullable":true,"type":"string","writable":true}],' +
  '"indexes":[{"field_ids":["id"],"index_id":"i1","name":"n1","unique":true},{"field_ids":["z","id"],"index_id":"i2","name":"n2","unique":false}],' +
  '"lifecycle":{"created_at_field_id":null,"deleted_at_field_id":null,"updated_at_field_id":null},"name":"b","primary_key_field_id":"id","relation_id":"r_b","table_id":"t_b"}],' +
  '"transition_class":"class_2"}';

test('the hashed body drops schema_hash and sorts unordered lists by ID, keeping index column order', () => {
  const r = schemaManifestHash(manifest());
  assert.equal(r.canonicalBody, CANONICAL);
  const want = createHash('sha256').update('synchro:v3:schema-manifest:v1\u0000').update(CANONICAL).digest('hex');
  assert.equal(r.hash, want);
});

test('the hash ignores the claimed schema_hash and list order, but not content', () => {
  const a = schemaManifestHash(manifest()).hash;
  const m = manifest();
  m.schema_hash = '0'.repeat(64);
  m.tables.reverse();
  assert.equal(schemaManifestHash(m).hash, a);
  const changed = manifest();
  changed.compatibility_floor = 2;
  assert.notEqual(schemaManifestHash(changed).hash, a);
  const reordered = manifest();
  reordered.tables[0]?.indexes[0]?.field_ids.reverse();
  assert.notEqual(schemaManifestHash(reordered).hash, a);
});

test('verification accepts the right claim and refuses a wrong, uppercase or missing one', () => {
  const m = manifest();
  m.schema_hash = schemaManifestHash(m).hash;
  assert.equal(verifySchemaManifest(m), m.schema_hash);
  for (const claim of ['0'.repeat(64), m.schema_hash.toUpperCase(), m.schema_hash.slice(1), `${m.schema_hash}0`, undefined]) {
    const x = manifest() as Record<string, unknown>;
    if (claim === undefined) delete x.schema_hash;
    else x.schema_hash = claim;
    assert.throws(() => verifySchemaManifest(x), (e: unknown) => e instanceof CodecError && e.code === 'invalid_schema_hash');
  }
});

test('a manifest without tables, or with a repeated ID, is refused', () => {
  const noTables = manifest() as Record<string, unknown>;
  delete noTables.tables;
  assert.throws(() => schemaManifestHash(noTables), (e: unknown) => e instanceof CodecError && e.code === 'invalid_manifest');
  const dup = manifest();
  dup.tables[1]?.fields.push({ field_id: 'id', name: 'x', type: 'int', nullable: false, writable: false });
  assert.throws(() => schemaManifestHash(dup), (e: unknown) => e instanceof CodecError && e.code === 'invalid_manifest');
  assert.throws(() => schemaManifestHash([]), (e: unknown) => e instanceof CodecError && e.code === 'invalid_manifest');
});

/** A valid manifest after `change`; every entry breaks one rule the protocol holds manifests to. */
const manifestBreaks: [string, string, (m: ReturnType<typeof manifest>) => void][] = [
  ['key field writable (M5, 002)', 'protected_field_writable', (m) => { setField(m, 1, 'id', { writable: true }); }],
  ['key field nullable (M5)', 'invalid_pk_type', (m) => { setField(m, 1, 'id', { nullable: true }); }],
  ['key field float (M5)', 'invalid_pk_type', (m) => { setField(m, 1, 'id', { type: 'float' }); }],
  ['key names no field (M5)', 'unknown_field', (m) => { (m.tables[1] as Record<string, unknown>).primary_key_field_id = 'gone'; }],
  ['type alias', 'unknown_type', (m) => { setField(m, 0, 'z', { type: 'text' }); }],
  ['lifecycle field writable (M6)', 'protected_field_writable', (m) => { withLifecycle(m, { type: 'datetime', writable: true }); }],
  ['lifecycle field not datetime (M6)', 'invalid_manifest', (m) => { withLifecycle(m, { type: 'string', writable: false }); }],
  ['decimal without precision (M7)', 'invalid_manifest', (m) => { setField(m, 0, 'z', { type: 'decimal' }); }],
  ['scale over precision (M7)', 'invalid_manifest', (m) => { setField(m, 0, 'z', { type: 'decimal', precision: 2, scale: 3 }); }],
  ['precision on a string (M7)', 'invalid_manifest', (m) => { setField(m, 0, 'z', { precision: 2, scale: 0 }); }],
  ['index over a missing field (M8)', 'unknown_field', (m) => { (m.tables[0]?.indexes[0] as { field_ids: string[] }).field_ids = ['gone']; }],
  ['index name twice (M8)', 'invalid_manifest', (m) => { (m.tables[0]?.indexes[1] as { name: string }).name = 'n2'; }],
  ['field name twice (M4)', 'invalid_manifest', (m) => { setField(m, 0, 'z', { name: 'id' }); }],
  ['relation_id twice (M4)', 'invalid_manifest', (m) => { (m.tables[1] as Record<string, unknown>).relation_id = 'r_b'; }],
  ['initial with a parent (M1)', 'invalid_manifest', (m) => { m.transition_class = 'initial'; }],
  ['parent not older (M2)', 'invalid_manifest', (m) => { m.parent_schema.version = 2; }],
  ['floor above version (M3)', 'invalid_manifest', (m) => { m.compatibility_floor = 3; }],
  ['floor below version outside class_2 (M3)', 'invalid_manifest', (m) => { m.transition_class = 'class_3'; }],
  ['unknown member', 'invalid_manifest', (m) => { (m as Record<string, unknown>).generated_at = 'now'; }],
  ['table without indexes', 'invalid_manifest', (m) => { delete (m.tables[1] as Record<string, unknown>).indexes; }],
  ['empty table_id', 'invalid_identifier', (m) => { (m.tables[1] as Record<string, unknown>).table_id = ''; }],
  ['schema_version as text', 'invalid_manifest', (m) => { (m as Record<string, unknown>).schema_version = '2'; }],
];

function setField(m: ReturnType<typeof manifest>, table: number, fieldId: string, change: Record<string, unknown>): void {
  const f = m.tables[table]?.fields.find((x) => x.field_id === fieldId);
  if (f === undefined) throw new Error(`no field ${fieldId}`);
  Object.assign(f, change);
}

function withLifecycle(m: ReturnType<typeof manifest>, field: { type: string; writable: boolean }): void {
  const t = m.tables[0] as unknown as { fields: Record<string, unknown>[]; lifecycle: Record<string, unknown> };
  t.fields.push({ field_id: 'u', name: 'updated_at', nullable: false, ...field });
  t.lifecycle.updated_at_field_id = 'u';
}

test('schemaManifestHash and verifySchemaManifest refuse every manifest rule break with its code', () => {
  for (const [label, code, change] of manifestBreaks) {
    const m = manifest();
    change(m);
    assert.throws(() => schemaManifestHash(m), (e: unknown) => e instanceof CodecError && e.code === code, label);
    m.schema_hash = schemaManifestHashUnchecked(m).hash;
    assert.throws(() => verifySchemaManifest(m), (e: unknown) => e instanceof CodecError && e.code === code, `${label} (with a matching claim)`);
  }
});

test('the unchecked hash is the same formula, so a forged manifest can carry a consistent hash', () => {
  assert.deepEqual(schemaManifestHashUnchecked(manifest()), schemaManifestHash(manifest()));
  const forged = manifest();
  setField(forged, 0, 'z', { type: 'text' });
  assert.match(schemaManifestHashUnchecked(forged).hash, /^[0-9a-f]{64}$/);
});
