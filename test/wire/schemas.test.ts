/**
 * Every wire schema accepts its example and rejects unknown members, missing
 * members, wrong types, out-of-range integers, malformed identifiers, hashes,
 * versions and timestamps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileAll } from '../../harness/wire/generate-validators.ts';
import { validate, WIRE_KINDS, type WireKind } from '../../harness/wire/validate.ts';
import { edit, edits, example, type Json } from './helpers.ts';

const EXAMPLES: Record<WireKind, string[]> = {
  'connect-request': ['connect-request', 'connect-request-fresh'],
  'connect-response': ['connect-response', 'connect-response-none'],
  'push-request': ['push-request'],
  'push-response': ['push-response'],
  'pull-request': ['pull-request'],
  'pull-response': ['pull-response', 'pull-response-more'],
  'rebuild-request': ['rebuild-request'],
  'rebuild-response': ['rebuild-response-intermediate', 'rebuild-response-final'],
  'error-response': ['error-response'],
  'ready-response': ['ready-response'],
  'schema-response': ['schema-response'],
  'tables-response': ['tables-response'],
  'schema-manifest': ['schema-manifest'],
};

function rejects(kind: WireKind, value: Json, pointer: string, rule?: string): void {
  const result = validate(kind, value);
  assert.equal(result.ok, false, `${kind} accepted an invalid value at ${pointer}`);
  if (result.ok) return;
  // The failure is reported at the pointer or inside the value it names.
  const inside = (e: { pointer: string }) => e.pointer === pointer || e.pointer.startsWith(`${pointer}/`);
  const hit = result.errors.find((e) => inside(e) && (rule === undefined || e.rule === rule));
  assert.ok(hit, `expected a ${rule ?? 'schema'} error at ${pointer}, got ${JSON.stringify(result.errors)}`);
}

function accepts(kind: WireKind, value: Json): void {
  const result = validate(kind, value);
  assert.ok(result.ok, `${kind} rejected a valid value: ${JSON.stringify(result.ok ? [] : result.errors)}`);
}

test('every kind compiles under ajv strict mode', () => {
  compileAll(WIRE_KINDS);
});

describe('examples and generic breakage, per kind', () => {
  for (const kind of WIRE_KINDS) {
    for (const name of EXAMPLES[kind]) {
      test(`${name} is a valid ${kind}`, () => accepts(kind, example(name)));
    }
    const base = example(EXAMPLES[kind][0] ?? kind);
    const first = Object.keys(base)[0] ?? '';
    test(`${kind}: unknown top-level member`, () => rejects(kind, edit(base, '/unexpected', 1), '', 'additionalProperties'));
    test(`${kind}: missing required member ${first}`, () => rejects(kind, edit(base, `/${first}`, undefined), '', 'required'));
    test(`${kind}: top level is not an object`, () => rejects(kind, [base], '', 'type'));
    test(`${kind}: null never stands for absence`, () => {
      assert.equal(validate(kind, edit(base, `/${first}`, null)).ok, false);
    });
  }
});

const MAX = 9007199254740991;

describe('envelope integers', () => {
  const push = example('push-request');
  test('positive: 1 and 2^53-1 accepted; 0, -1, 2^53, fraction and string rejected', () => {
    accepts('push-request', edit(push, '/client_generation', 1));
    accepts('push-request', edit(push, '/client_generation', MAX));
    for (const bad of [0, -1, MAX + 1, 1.5, '2']) rejects('push-request', edit(push, '/client_generation', bad), '/client_generation');
  });
  const pull = example('pull-request');
  test('nonnegative: 0 and 2^53-1 accepted; -1 and 2^53 rejected', () => {
    accepts('pull-request', edit(pull, '/scope_set_version', 0));
    accepts('pull-request', edit(pull, '/scope_set_version', MAX));
    rejects('pull-request', edit(pull, '/scope_set_version', -1), '/scope_set_version', 'minimum');
    rejects('pull-request', edit(pull, '/scope_set_version', MAX + 1), '/scope_set_version', 'maximum');
  });
  const upgrade: Json = { error: { code: 'upgrade_required', message: 'protocol 3 only', retryable: false, required_protocol_version: 3, received_protocol_version: 2 } };
  test('signed safe range: ±(2^53-1) accepted, ±2^53 rejected', () => {
    accepts('error-response', edit(upgrade, '/error/received_protocol_version', MAX));
    accepts('error-response', edit(upgrade, '/error/received_protocol_version', -MAX));
    assert.equal(validate('error-response', edit(upgrade, '/error/received_protocol_version', MAX + 1)).ok, false);
    assert.equal(validate('error-response', edit(upgrade, '/error/received_protocol_version', -MAX - 1)).ok, false);
  });
  test('page limit: 1 and 1000 accepted; 0, 1001, 1.5, "10" rejected', () => {
    accepts('pull-request', edit(pull, '/limit', 1));
    accepts('pull-request', edit(pull, '/limit', 1000));
    for (const bad of [0, 1001, 1.5, '10']) rejects('pull-request', edit(pull, '/limit', bad), '/limit');
  });
  test('protocol_version is exactly 3', () => {
    rejects('connect-request', edit(example('connect-request'), '/protocol_version', 2), '/protocol_version', 'const');
  });
});

describe('identifiers, hashes and opaque versions', () => {
  const push = example('push-request');
  test('UUIDs must be canonical lowercase hyphenated and not nil', () => {
    for (const bad of [
      'B0B0B0B0-1111-4222-8333-444455556666',
      '{b0b0b0b0-1111-4222-8333-444455556666}',
      'b0b0b0b011114222833344445555666',
      'b0b0b0b0-1111-4222-8333-44445555666',
      '00000000-0000-0000-0000-000000000000',
    ]) rejects('push-request', edit(push, '/batch_id', bad), '/batch_id');
    rejects('push-request', edit(push, '/mutations/0/mutation_id', 'A1B2C3D4-0000-4000-8000-000000000001'), '/mutations/0/mutation_id');
  });
  test('schema hashes are 64 lowercase hex digits', () => {
    const hash = 'ab'.repeat(32);
    accepts('push-request', edit(push, '/schema/hash', hash));
    for (const bad of [hash.toUpperCase(), hash.slice(1), `${hash}0`, 'g'.repeat(64)]) rejects('push-request', edit(push, '/schema/hash', bad), '/schema/hash', 'pattern');
  });
  test('checksum objects are exact: sha256, version 1, hex, lowercase digest', () => {
    const pull = example('pull-response');
    rejects('pull-response', edit(pull, '/checksums/user:u_9/digest', 'A'.repeat(64)), '/checksums/user:u_9/digest');
    rejects('pull-response', edit(pull, '/checksums/user:u_9/version', 2), '/checksums/user:u_9/version');
    rejects('pull-response', edit(pull, '/checksums/user:u_9/algorithm', 'sha-256'), '/checksums/user:u_9/algorithm');
    rejects('pull-response', edit(pull, '/checksums/user:u_9/extra', 1), '/checksums/user:u_9');
  });
  const at = '/mutations/1/base_version';
  test('server_version: 1..64 printable ASCII without quote or backslash', () => {
    accepts('push-request', edit(push, at, 'x'));
    accepts('push-request', edit(push, at, ' ~!#[]'));
    accepts('push-request', edit(push, at, 'v'.repeat(64)));
    for (const bad of ['', 'v'.repeat(65), 'a"b', 'a\\b', 'a\u007fb', 'a\u001fb', 'caf\u00e9']) rejects('push-request', edit(push, at, bad), at, 'pattern');
  });
  test('server_version in outcomes, changes and records follows the same rule', () => {
    rejects('push-response', edit(example('push-response'), '/accepted/0/server_version', 'a"b'), '/accepted/0/server_version');
    rejects('pull-response', edit(example('pull-response'), '/changes/0/server_version', ''), '/changes/0/server_version');
    rejects('rebuild-response', edit(example('rebuild-response-intermediate'), '/records/0/server_version', 'v'.repeat(65)), '/records/0/server_version');
  });
});

describe('timestamps', () => {
  const push = example('push-request');
  const at = '/mutations/0/client_version';
  test('client_version is the microsecond Z form on a real date', () => {
    accepts('push-request', edit(push, at, '2028-02-29T23:59:59.999999Z'));
    for (const bad of [
      '2027-03-14T09:29:00Z',
      '2027-03-14T09:29:00.000Z',
      '2027-03-14T09:29:00.0000000Z',
      '2027-03-14T09:29:00.000000+00:00',
      '2027-03-14T09:29:00.000000z',
      '2027-03-14 09:29:00.000000Z',
      '2027-02-29T00:00:00.000000Z',
      '2027-03-14T23:59:60.000000Z',
      '2027-03-14T24:00:00.000000Z',
    ]) rejects('push-request', edit(push, at, bad), at);
  });
  test('connect and push server_time use the microsecond form', () => {
    rejects('connect-response', edit(example('connect-response'), '/server_time', '2027-03-14T09:30:00.123Z'), '/server_time');
    rejects('push-response', edit(example('push-response'), '/server_time', '2027-03-14T09:30:00+01:00'), '/server_time');
  });
  test('schema and tables server_time use the millisecond form', () => {
    rejects('schema-response', edit(example('schema-response'), '/server_time', '2027-03-14T09:00:00.000000Z'), '/server_time');
    rejects('tables-response', edit(example('tables-response'), '/server_time', '2027-13-14T09:00:00.000Z'), '/server_time');
  });
});

describe('connect shapes', () => {
  const request = example('connect-request');
  test('schema is a normal reference or the exact sentinel', () => {
    for (const bad of [{ version: 0, hash: 'x' }, { version: 5, hash: '' }, { version: 0, hash: '0'.repeat(64) }]) rejects('connect-request', edit(request, '/schema', bad), '/schema');
  });
  test('app_version is SemVer 2.0.0 without a leading v', () => {
    accepts('connect-request', edit(request, '/app_version', '10.0.1-rc.1+sha.5114f85'));
    for (const bad of ['v1.2.3', '1.2', '01.2.3', '1.2.3-', '1.2.3-01']) rejects('connect-request', edit(request, '/app_version', bad), '/app_version', 'pattern');
  });
  test('seed_receipts, when present, is a nonempty map of nonempty strings', () => {
    accepts('connect-request', edit(request, '/seed_receipts', { 'user:u_9': 'sc1.x.y' }));
    rejects('connect-request', edit(request, '/seed_receipts', {}), '/seed_receipts', 'minProperties');
    rejects('connect-request', edit(request, '/seed_receipts', { 'user:u_9': '' }), '/seed_receipts/user:u_9');
  });
  test('known scope values are exactly {cursor}', () => {
    for (const bad of [{}, { cursor: 5 }, { cursor: 'x', extra: 1 }, { cursor: '' }] as Json[]) rejects('connect-request', edit(request, '/known_scopes/user:u_9', bad), '/known_scopes/user:u_9');
  });
  test('unsupported needs a reason and other actions forbid it; fetch does not exist', () => {
    const none = example('connect-response-none');
    accepts('connect-response', edit(none, '/schema', { version: 4, hash: 'a'.repeat(64), action: 'unsupported', reason: 'unknown_schema_lineage' }));
    assert.equal(validate('connect-response', edit(none, '/schema/action', 'unsupported')).ok, false);
    assert.equal(validate('connect-response', edit(none, '/schema/reason', 'unknown_schema_lineage')).ok, false);
    assert.equal(validate('connect-response', edit(none, '/schema/action', 'fetch')).ok, false);
  });
});

describe('push shapes by operation and outcome', () => {
  const push = example('push-request');
  test('insert: no base_version (not even null), columns required and may be empty', () => {
    accepts('push-request', edit(push, '/mutations/0/columns', {}));
    assert.equal(validate('push-request', edit(push, '/mutations/0/base_version', 'v:1')).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/0/base_version', null)).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/0/columns', undefined)).ok, false);
  });
  test('update: base_version and a nonempty patch required', () => {
    assert.equal(validate('push-request', edit(push, '/mutations/1/columns', {})).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/1/base_version', undefined)).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/1/base_version', '')).ok, false);
  });
  test('delete: base_version required, columns absent (not even {})', () => {
    assert.equal(validate('push-request', edit(push, '/mutations/2/columns', {})).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/2/base_version', undefined)).ok, false);
  });
  test('op vocabulary is insert, update, delete only', () => {
    for (const op of ['create', 'upsert', 'Insert', '', null]) assert.equal(validate('push-request', edit(push, '/mutations/0/op', op)).ok, false);
  });
  test('1..1000 mutations; atomic only true; at most 256 columns; pk has exactly one member', () => {
    assert.equal(validate('push-request', edit(push, '/mutations', [])).ok, false);
    const many = Array.from({ length: 1001 }, () => (push.mutations as Json[])[0] ?? null);
    rejects('push-request', edit(push, '/mutations', many), '/mutations', 'maxItems');
    accepts('push-request', edit(push, '/atomic', true));
    rejects('push-request', edit(push, '/atomic', false), '/atomic', 'const');
    rejects('push-request', edit(push, '/atomic', 'true'), '/atomic', 'const');
    const columns = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
    accepts('push-request', edit(push, '/mutations/0/columns', columns(256)));
    assert.equal(validate('push-request', edit(push, '/mutations/0/columns', columns(257))).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/0/pk', {})).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/0/pk', { a: '1', b: '2' })).ok, false);
    assert.equal(validate('push-request', edit(push, '/mutations/0/pk', { a: null })).ok, false);
  });
  const response = example('push-response');
  test('applied: no code or message; row and checksum together', () => {
    assert.equal(validate('push-response', edit(response, '/accepted/0/code', 'version_conflict')).ok, false);
    rejects('push-response', edit(response, '/accepted/0/row_checksum', undefined), '/accepted/0', 'dependentRequired');
    assert.equal(validate('push-response', edit(response, '/accepted/0/status', 'rejected_retryable')).ok, false);
  });
  test('conflict: conflict code, row requires version, no schema_incompatible members', () => {
    assert.equal(validate('push-response', edit(response, '/rejected/0/code', 'policy_rejected')).ok, false);
    assert.equal(validate('push-response', edit(response, '/rejected/0/server_version', undefined)).ok, false);
    assert.equal(validate('push-response', edit(response, '/rejected/0/retryable', false)).ok, false);
    accepts('push-response', edits(response, [['/rejected/0/server_row', undefined], ['/rejected/0/row_checksum', undefined]]));
  });
  const terminal = (code: string, extra: Record<string, Json> = {}): Json =>
    edit(response, '/rejected/0', {
      mutation_id: 'a1b2c3d4-0000-4000-8000-000000000002', table: 'tbl_tasks', pk: { fld_tasks_id: 't-2' },
      outcome_schema: { version: 4, hash: 'a'.repeat(64) }, status: 'rejected_terminal', code, message: 'denied', ...extra,
    });
  test('rejected_terminal: no row, checksum or version; atomic message fixed; schema_incompatible members required', () => {
    accepts('push-response', terminal('policy_rejected'));
    assert.equal(validate('push-response', terminal('validation_failed', { server_version: 'v:1' })).ok, false);
    assert.equal(validate('push-response', terminal('atomic_batch_rejected')).ok, false);
    accepts('push-response', terminal('atomic_batch_rejected', { message: 'atomic batch rejected' }));
    const incompatible = { retryable: false, authored_schema: { version: 2, hash: 'b'.repeat(64) }, current_schema: { version: 4, hash: 'a'.repeat(64) }, incompatible_field_ids: ['f1'] };
    accepts('push-response', terminal('schema_incompatible', incompatible));
    assert.equal(validate('push-response', terminal('schema_incompatible', { ...incompatible, retryable: true })).ok, false);
    assert.equal(validate('push-response', terminal('schema_incompatible', { ...incompatible, current_schema: undefined as unknown as Json })).ok, false);
    assert.equal(validate('push-response', terminal('validation_failed', incompatible)).ok, false);
  });
});

describe('pull and rebuild shapes', () => {
  const pull = example('pull-response');
  test('upsert needs row and checksum; delete has both or neither; no other op', () => {
    assert.equal(validate('pull-response', edit(pull, '/changes/0/row', undefined)).ok, false);
    assert.equal(validate('pull-response', edit(pull, '/changes/1/row_checksum', undefined)).ok, false);
    assert.equal(validate('pull-response', edit(pull, '/changes/0/op', 'insert')).ok, false);
  });
  test('scope_updates arrays are always present; scope_cursors values nonempty', () => {
    assert.equal(validate('pull-response', edit(pull, '/scope_updates/remove', undefined)).ok, false);
    assert.equal(validate('pull-response', edit(pull, '/scope_cursors/user:u_9', '')).ok, false);
    assert.equal(validate('pull-response', edit(pull, '/rebuild', ['a', 'a'])).ok, false);
  });
  test('rebuild request cursor is a nonempty string or null; records need all five members', () => {
    assert.equal(validate('rebuild-request', edit(example('rebuild-request'), '/cursor', '')).ok, false);
    assert.equal(validate('rebuild-request', edit(example('rebuild-request'), '/cursor', undefined)).ok, false);
    assert.equal(validate('rebuild-response', edit(example('rebuild-response-intermediate'), '/records/0/row_checksum', undefined)).ok, false);
  });
});

describe('error envelope: exact members per code', () => {
  const err = (body: Record<string, Json>): Json => ({ error: { message: 'something failed', ...body } });
  test('retryable is true exactly for retry_later, capture_pending, temporary_unavailable', () => {
    for (const code of ['retry_later', 'capture_pending', 'temporary_unavailable']) {
      accepts('error-response', err({ code, retryable: true }));
      assert.equal(validate('error-response', err({ code, retryable: false })).ok, false);
    }
    for (const code of ['invalid_request', 'auth_required', 'idempotency_conflict', 'client_retired', 'sync_integrity_failure']) {
      accepts('error-response', err({ code, retryable: false }));
      assert.equal(validate('error-response', err({ code, retryable: true })).ok, false);
    }
  });
  test('context members are required for their code and forbidden elsewhere', () => {
    const ref = { version: 4, hash: 'a'.repeat(64) };
    accepts('error-response', err({ code: 'schema_mismatch', retryable: false, current_schema: ref, received_schema: ref }));
    assert.equal(validate('error-response', err({ code: 'schema_mismatch', retryable: false, current_schema: ref })).ok, false);
    accepts('error-response', err({ code: 'client_generation_expired', retryable: false, current_client_generation: 3 }));
    assert.equal(validate('error-response', err({ code: 'client_generation_expired', retryable: false, current_client_generation: '3' })).ok, false);
    assert.equal(validate('error-response', err({ code: 'client_retired', retryable: false, current_client_generation: 3 })).ok, false);
    accepts('error-response', err({ code: 'rebuild_restart_required', retryable: false, scope_id: 'team:k_1' }));
    assert.equal(validate('error-response', err({ code: 'rebuild_restart_required', retryable: false })).ok, false);
    accepts('error-response', err({ code: 'invalid_schema_reference', retryable: false, received_schema: { version: 0, hash: 'x' } }));
    accepts('error-response', err({ code: 'temporary_unavailable', retryable: true, reason: 'capture_blocked' }));
    assert.equal(validate('error-response', err({ code: 'temporary_unavailable', retryable: true, reason: 'other' })).ok, false);
  });
  test('upgrade_required carries exactly one of its two pairs', () => {
    const protocol = { required_protocol_version: 3, received_protocol_version: 2 };
    const runtime = { minimum_client_version: '2.0.0', received_client_version: '1.9.9' };
    accepts('error-response', err({ code: 'upgrade_required', retryable: false, ...protocol }));
    accepts('error-response', err({ code: 'upgrade_required', retryable: false, ...runtime }));
    assert.equal(validate('error-response', err({ code: 'upgrade_required', retryable: false })).ok, false);
    assert.equal(validate('error-response', err({ code: 'upgrade_required', retryable: false, ...protocol, ...runtime })).ok, false);
    assert.equal(validate('error-response', err({ code: 'upgrade_required', retryable: false, ...protocol, minimum_client_version: '2.0.0' })).ok, false);
  });
  test('invalid_request limit context comes as all three members or none', () => {
    accepts('error-response', err({ code: 'invalid_request', retryable: false, field: 'limit', minimum: 1, maximum: 1000 }));
    assert.equal(validate('error-response', err({ code: 'invalid_request', retryable: false, field: 'limit' })).ok, false);
  });
  test('unknown codes, empty messages and success members are rejected', () => {
    assert.equal(validate('error-response', err({ code: 'rejected_retryable', retryable: true })).ok, false);
    assert.equal(validate('error-response', { error: { code: 'auth_required', message: '', retryable: false } }).ok, false);
    assert.equal(validate('error-response', { ...(err({ code: 'auth_required', retryable: false }) as object), accepted: [] }).ok, false);
  });
});

describe('manifest shapes', () => {
  const manifest = example('schema-manifest');
  test('portable types are exact lowercase names; aliases are rejected', () => {
    for (const alias of ['uuid', 'text', 'integer', 'timestamp', 'String']) {
      rejects('schema-manifest', edit(manifest, '/tables/1/fields/0/type', alias), '/tables/1/fields/0/type', 'enum');
    }
  });
  test('lifecycle members are required and each a field ID or null', () => {
    assert.equal(validate('schema-manifest', edit(manifest, '/tables/0/lifecycle/created_at_field_id', undefined)).ok, false);
    assert.equal(validate('schema-manifest', edit(manifest, '/tables/0/lifecycle/created_at_field_id', '')).ok, false);
  });
  test('transition_class and composition are closed sets', () => {
    rejects('schema-manifest', edit(manifest, '/transition_class', 'class_1'), '/transition_class', 'enum');
    rejects('schema-manifest', edit(manifest, '/tables/0/composition', 'shared'), '/tables/0/composition', 'enum');
  });
});
