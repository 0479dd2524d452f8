/**
 * One test per cross-field rule: a message that satisfies it and one that
 * breaks it. A final test proves no registered rule went untested.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isValidRetryAfter } from '../../harness/wire/rules/errors.ts';
import { checkBytes, checkMessage, RULE_COVERAGE, RULES, type RuleContext } from '../../harness/wire/rules.ts';
import type { WireKind } from '../../harness/wire/validate.ts';
import { edit, edits, example, type Json } from './helpers.ts';

const manifest = example('schema-manifest');
const manifests = [manifest] as unknown as RuleContext['manifests'];
const tested = new Set<string>();

function found(id: string, kind: WireKind, value: Json, ctx: RuleContext): boolean {
  const result = checkMessage(kind, value, ctx);
  assert.deepEqual(result.schemaErrors, [], `${id}: example must be schema-valid`);
  assert.ok(!result.skipped.includes(id), `${id} was skipped; its context is missing`);
  return result.violations.some((v) => v.rule === id);
}

/** Registers a rule test: `good` must satisfy rule `id`, every entry of `bad` must violate it. */
function ruleTest(id: string, kind: WireKind, good: Json, bad: Json[], ctx: RuleContext = {}, badCtx: RuleContext = ctx): void {
  tested.add(id);
  test(`${id} (${kind})`, () => {
    assert.equal(found(id, kind, good, ctx), false, `${id} flagged a valid message`);
    for (const value of bad) assert.equal(found(id, kind, value, badCtx), true, `${id} missed a violation`);
  });
}

const enc = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

test('N1 (number tokens are canonical) and G1 (no duplicate members), from bytes', () => {
  tested.add('N1');
  const push = JSON.stringify(example('push-request'));
  assert.ok(checkBytes('push-request', new TextEncoder().encode(push)).ok);
  for (const spelled of ['5.0', '5e0', '0.5e1']) {
    const result = checkBytes('push-request', new TextEncoder().encode(push.replace('"client_generation":5', `"client_generation":${spelled}`)));
    assert.ok(result.violations.some((v) => v.rule === 'N1' && v.pointer === '/client_generation'), spelled);
  }
  const float = push.replace('"fld_tasks_done":false}', '"fld_tasks_done":false,"fld_tasks_weight":-0}');
  assert.ok(checkBytes('push-request', new TextEncoder().encode(float)).violations.some((v) => v.rule === 'N1'));
  const duplicated = push.replace('"client_generation":5', '"client_generation":5,"client_generation":5');
  const result = checkBytes('push-request', new TextEncoder().encode(duplicated));
  assert.deepEqual(result.violations.map((v) => [v.rule, v.pointer]), [['G1', '/client_generation']]);
});

const push = example('push-request');
const pushResponse = example('push-response');
const pull = example('pull-response');
const pullRequest = example('pull-request');

ruleTest('G3', 'push-request', push, [
  edit(push, '/mutations/0/pk', { fld_tasks_id: 7 }),
  edit(push, '/mutations/0/pk', { id: 't-1' }),
  edit(push, '/mutations/2/pk', { fld_labels_id: '12' }),
], { manifests });

ruleTest('G4', 'pull-response', pull, [
  edit(pull, '/changes/0/row/fld_tasks_title', undefined),
  edit(pull, '/changes/0/row/fld_tasks_colour', 'red'),
  edit(pull, '/changes/0/row/fld_tasks_updated_at', '2027-03-14T09:26:53Z'),
  edit(pull, '/changes/0/row/fld_tasks_estimate', '1.50'),
  edit(pull, '/changes/0/row/fld_tasks_done', null),
  edit(pull, '/changes/0/row/fld_tasks_id', 't-99'),
], { manifests, request: pullRequest });

const oneChange = edit(pull, '/changes', [(pull.changes as Json[])[0] ?? null]);
ruleTest('G5', 'pull-response', oneChange, [edit(oneChange, '/changes/0/row_checksum/digest', 'd'.repeat(64))], {
  manifests,
  rowDigest: ({ row }) => (row.fld_tasks_id === 't-3' ? 'c'.repeat(64) : '0'.repeat(64)),
});

test("G4 holds json values to the protocol's rules, not to upstream's nesting bound", () => {
  const withJson = edit(manifest, '/tables/1/fields/7', { field_id: 'fld_tasks_meta', name: 'meta', type: 'json', nullable: true, writable: true });
  const ctx: RuleContext = { manifests: [withJson] as unknown as RuleContext['manifests'], request: pullRequest };
  const g4 = (meta: Json) =>
    checkMessage('pull-response', edit(oneChange, '/changes/0/row/fld_tasks_meta', meta), ctx).violations.filter((v) => v.rule === 'G4').map((v) => v.pointer);
  assert.deepEqual(g4(`${'['.repeat(200)}${']'.repeat(200)}`), []);
  assert.deepEqual(g4('{"a":1.0}'), ['/changes/0/row/fld_tasks_meta']);
  assert.deepEqual(g4('"\ud800"'), ['/changes/0/row/fld_tasks_meta']);
});

const fresh = example('connect-request-fresh');
ruleTest('C2', 'connect-request', fresh, [
  edit(fresh, '/client_generation', 2),
  edit(fresh, '/schema_reset', true),
  edit(fresh, '/scope_set_version', 1),
  edit(fresh, '/known_scopes', { 'user:u_9': { cursor: null } }),
]);

const connect = example('connect-request');
ruleTest('C3', 'connect-request', edit(connect, '/schema_reset', true), [
  edits(connect, [['/schema_reset', true], ['/client_generation', undefined]]),
]);

const rebuildLocal = example('connect-response');
const none = example('connect-response-none');
ruleTest('CR1', 'connect-response', rebuildLocal, [
  edit(none, '/schema_definition', manifest),
  edit(rebuildLocal, '/schema_definition', undefined),
]);
ruleTest('CR2', 'connect-response', rebuildLocal, [
  edit(rebuildLocal, '/affected_scopes', ['user:u_9', 'project:p_2']),
  edit(rebuildLocal, '/affected_scopes', undefined),
  edit(none, '/affected_scopes', ['user:u_9']),
]);
ruleTest('CR4', 'connect-response', rebuildLocal, [edit(rebuildLocal, '/schema/version', 5), edit(rebuildLocal, '/schema/hash', 'e'.repeat(64))]);
ruleTest('CR5', 'connect-response', rebuildLocal, [
  edit(rebuildLocal, '/scopes/remove', ['project:p_2']),
  edit(rebuildLocal, '/scopes/add/1', { id: 'project:p_2', cursor: null }),
]);
ruleTest('CR6', 'connect-response', rebuildLocal, [edit(rebuildLocal, '/scope_cursor_updates/project:p_2', null)]);
const seeded = edit(rebuildLocal, '/scopes/add/0/cursor', 'c.p2.seed');
ruleTest('CR7', 'connect-response', seeded, [seeded], { request: edit(connect, '/seed_receipts', { 'project:p_2': 'sc1.a.b' }) }, { request: connect });
ruleTest('CR8', 'connect-response', rebuildLocal, [rebuildLocal, edit(none, '/scope_set_version', 13)], { serverScopeSetVersion: 11 }, { serverScopeSetVersion: 12 });

const manifestBreaks: Record<string, Json[]> = {
  M1: [edit(manifest, '/transition_class', 'initial'), edits(manifest, [['/parent_schema', null]])],
  M2: [edit(manifest, '/parent_schema/version', 4)],
  M3: [edit(manifest, '/compatibility_floor', 5), edits(manifest, [['/transition_class', 'class_3']])],
  M4: [
    edit(manifest, '/tables', [...((manifest.tables as Json[]).slice().reverse())]),
    edit(manifest, '/tables/1/fields/4/name', 'done'),
    edit(manifest, '/tables/1/relation_id', 'rel_labels'),
  ],
  M5: [edit(manifest, '/tables/1/fields/3/nullable', true), edit(manifest, '/tables/1/primary_key_field_id', 'fld_tasks_weight')],
  M6: [edit(manifest, '/tables/1/lifecycle/created_at_field_id', 'fld_tasks_title'), edit(manifest, '/tables/1/lifecycle/updated_at_field_id', 'fld_tasks_gone')],
  M7: [edit(manifest, '/tables/1/fields/2/scale', undefined), edit(manifest, '/tables/1/fields/2/scale', 9), edit(manifest, '/tables/1/fields/4/precision', 3)],
  M8: [edit(manifest, '/tables/1/indexes/0/field_ids/1', 'fld_tasks_gone'), edit(manifest, '/tables/1/indexes/1', { index_id: 'idx_tasks_done', name: 'x', field_ids: ['fld_tasks_id'], unique: true })],
  // A repeated field ID leaves the body without a canonical order, so no claimed hash can match it.
  M9: [edit(manifest, '/schema_hash', 'f'.repeat(64)), edit(manifest, '/tables/1/fields/1/field_id', 'fld_tasks_deleted_at')],
};
for (const [id, bad] of Object.entries(manifestBreaks)) ruleTest(id, 'schema-manifest', manifest, bad);

ruleTest('P1', 'push-request', push, [edit(push, '/mutations/1/mutation_id', 'a1b2c3d4-0000-4000-8000-000000000001')]);
const atomic = edit(push, '/atomic', true);
ruleTest('P6', 'push-request', atomic, [edit(atomic, '/mutations/1/pk', { fld_tasks_id: 't-1' })]);
ruleTest('P7', 'push-request', push, [edit(push, '/mutations/0/columns/fld_tasks_title', 'x'.repeat(65_536))]);
test('P7 also counts the received body octets', () => {
  const read = { ok: true as const, value: null, bodyOctets: 1_048_577, maxDepth: 4, nonCanonicalNumbers: [] };
  assert.ok(checkMessage('push-request', push, { read }).violations.some((v) => v.rule === 'P7'));
  assert.ok(!checkMessage('push-request', push, { read: { ...read, bodyOctets: 1_048_576 } }).violations.some((v) => v.rule === 'P7'));
});
const reordered = Object.fromEntries(Object.entries(push).reverse()) as Record<string, Json>;
ruleTest('P8', 'push-request', push, [push], { previousRequest: reordered }, { previousRequest: edit(push, '/mutations/1/columns/fld_tasks_done', false) });

ruleTest('PR1', 'push-response', pushResponse, [edit(pushResponse, '/batch_id', 'b0b0b0b0-1111-4222-8333-444455556667')], { request: push });
ruleTest('PR2', 'push-response', pushResponse, [
  edit(pushResponse, '/rejected', []),
  edit(pushResponse, '/accepted', [...((pushResponse.accepted as Json[]).slice().reverse())]),
  edit(pushResponse, '/rejected/0/pk', { fld_tasks_id: 't-9' }),
  edit(pushResponse, '/rejected/0/table', 'tbl_labels'),
  edit(pushResponse, '/rejected/1', (pushResponse.rejected as Json[])[0] ?? null),
], { request: push });
const incompatible = edit(pushResponse, '/rejected/0', {
  mutation_id: 'a1b2c3d4-0000-4000-8000-000000000002', table: 'tbl_tasks', pk: { fld_tasks_id: 't-2' },
  outcome_schema: push.schema ?? null, status: 'rejected_terminal', code: 'schema_incompatible', message: 'cannot be represented',
  retryable: false, authored_schema: { version: 2, hash: '2'.repeat(64) }, current_schema: push.schema ?? null,
  incompatible_field_ids: ['fld_tasks_colour', 'fld_tasks_size'],
});
ruleTest('PR6', 'push-response', incompatible, [edit(incompatible, '/rejected/0/incompatible_field_ids', ['fld_tasks_size', 'fld_tasks_colour'])]);

const atomicRequest = edits(push, [['/atomic', true], ['/mutations/2', undefined]]);
const failedGroup: Json = {
  batch_id: push.batch_id ?? null, server_time: '2027-03-14T09:29:05.000000Z', accepted: [],
  rejected: [
    { mutation_id: 'a1b2c3d4-0000-4000-8000-000000000001', table: 'tbl_tasks', pk: { fld_tasks_id: 't-1' }, outcome_schema: push.schema ?? null, status: 'rejected_terminal', code: 'atomic_batch_rejected', message: 'atomic batch rejected' },
    { mutation_id: 'a1b2c3d4-0000-4000-8000-000000000002', table: 'tbl_tasks', pk: { fld_tasks_id: 't-2' }, outcome_schema: push.schema ?? null, status: 'conflict', code: 'row_not_found', message: 'no such row' },
  ],
};
ruleTest('PR7', 'push-response', failedGroup, [
  edit(failedGroup, '/rejected/1', { mutation_id: 'a1b2c3d4-0000-4000-8000-000000000002', table: 'tbl_tasks', pk: { fld_tasks_id: 't-2' }, outcome_schema: push.schema ?? null, status: 'rejected_terminal', code: 'atomic_batch_rejected', message: 'atomic batch rejected' }),
  edit(failedGroup, '/rejected/0/outcome_schema', { version: 3, hash: '3'.repeat(64) }),
  edits(failedGroup, [['/rejected/0', undefined], ['/accepted', [(pushResponse.accepted as Json[])[0] ?? null]]]),
], { request: atomicRequest });
ruleTest('PR8', 'push-response', failedGroup, [failedGroup], { request: atomicRequest }, { request: edit(atomicRequest, '/atomic', undefined) });
ruleTest('PR9', 'push-response', pushResponse, [edit(pushResponse, '/accepted/1/outcome_schema', { version: 3, hash: '3'.repeat(64) })], { request: push, firstExecution: true });
ruleTest('PR10', 'push-response', pushResponse, [pushResponse], { status: 200, bytes: enc(pushResponse), replayOf: { status: 200, bytes: enc(pushResponse) } }, {
  status: 200, bytes: enc(pushResponse), replayOf: { status: 200, bytes: enc(edit(pushResponse, '/server_time', '2027-03-14T09:29:06.000000Z')) },
});

ruleTest('L2', 'pull-request', pullRequest, [pullRequest], { serverScopeSetVersion: 12 }, { serverScopeSetVersion: 11 });
ruleTest('L3', 'pull-request', pullRequest, [pullRequest], { everAssignedScopes: ['project:p_2', 'user:u_9', 'project:p_1'] }, { everAssignedScopes: ['user:u_9'] });

const more = example('pull-response-more');
ruleTest('LR1', 'pull-response', more, [edit(more, '/checksums', {})]);
ruleTest('LR2', 'pull-response', pull, [edit(pull, '/checksums', undefined)]);
const active = { activeScopes: ['project:p_2', 'user:u_9'] };
ruleTest('LR3', 'pull-response', pull, [
  edit(pull, '/checksums/team:k_1', undefined),
  edit(pull, '/checksums/project:p_1', (pull.checksums as Record<string, Json>)['user:u_9'] ?? null),
  edits(pull, [['/scope_updates/remove', ['project:p_2']], ['/rebuild', ['team:k_1']]]),
], active);
ruleTest('LR4', 'pull-response', pull, [edit(pull, '/rebuild', ['project:p_2']), edit(pull, '/scope_updates/add/0/cursor', 'c.k1')]);
ruleTest('LR5', 'pull-response', pull, [
  edit(pull, '/scope_updates/remove', ['project:p_2']),
  edit(pull, '/scope_updates/add/1', { id: 'team:k_1', cursor: null }),
]);
ruleTest('LR6', 'pull-response', pull, [edit(pull, '/scope_cursors/project:p_2', 'c.p2')]);
ruleTest('LR7', 'pull-response', pull, [edit(pull, '/changes/0/scope', 'project:p_2'), edit(pull, '/changes/0/scope', 'team:zz')], active);
ruleTest('LR8', 'pull-response', pull, [edit(pull, '/changes/1/row/fld_tasks_deleted_at', null)], { manifests, request: pullRequest });
ruleTest('LR9', 'pull-response', pull, [edit(pull, '/scope_cursors', {})], active);
ruleTest('LR10', 'pull-response', pull, [edit(pull, '/scope_set_version', 12), edit(pull, '/scope_set_version', 11)], { request: pullRequest });
test('LR10 with server state: the version steps by exactly one on change', () => {
  assert.ok(!checkMessage('pull-response', pull, { serverScopeSetVersion: 12 }).violations.some((v) => v.rule === 'LR10'));
  assert.ok(checkMessage('pull-response', pull, { serverScopeSetVersion: 11 }).violations.some((v) => v.rule === 'LR10'));
  assert.ok(checkMessage('pull-response', more, { serverScopeSetVersion: 11 }).violations.some((v) => v.rule === 'LR10'));
});

const rebuildRequest = example('rebuild-request');
const intermediate = example('rebuild-response-intermediate');
const final = example('rebuild-response-final');
const continuation = edit(rebuildRequest, '/cursor', 'rb.p2.page2');
const afterFirst = { previousExchange: { request: rebuildRequest, response: intermediate } };
ruleTest('B1', 'rebuild-request', rebuildRequest, [continuation], { previousExchange: null });
test('B1: a continuation never sends null', () => {
  assert.ok(checkMessage('rebuild-request', rebuildRequest, afterFirst).violations.some((v) => v.rule === 'B1'));
  assert.ok(!checkMessage('rebuild-request', continuation, afterFirst).violations.some((v) => v.rule === 'B1'));
});
ruleTest('B2', 'rebuild-request', continuation, [
  edit(continuation, '/limit', 3),
  edit(continuation, '/rebuild_id', 'cafe0000-1234-4abc-9def-0123456789ac'),
  edit(continuation, '/scope', 'user:u_9'),
  edit(continuation, '/cursor', 'rb.p2.page3'),
], afterFirst);

ruleTest('BR1', 'rebuild-response', intermediate, [edit(intermediate, '/scope', 'user:u_9')], { request: rebuildRequest });
ruleTest('BR2', 'rebuild-response', intermediate, [
  edit(intermediate, '/cursor', null),
  edit(intermediate, '/checksum', final.checksum ?? null),
  edit(intermediate, '/final_scope_cursor', 'c.x'),
]);
ruleTest('BR3', 'rebuild-response', final, [edit(final, '/cursor', 'rb.more'), edit(final, '/checksum', undefined), edit(final, '/final_scope_cursor', undefined)]);
ruleTest('BR5', 'rebuild-response', final, [final], { status: 200, bytes: enc(final), replayOf: { status: 200, bytes: enc(final) } }, {
  status: 200, bytes: enc(final), replayOf: { status: 409, bytes: enc(final) },
});

const limitError: Json = { error: { code: 'invalid_request', message: 'limit out of range', retryable: false, field: 'limit', minimum: 1, maximum: 1000 } };
ruleTest('E2b', 'error-response', limitError, [edits(limitError, [['/error/minimum', 10], ['/error/maximum', 5]])]);
const mismatch = example('error-response');
ruleTest('E3', 'error-response', mismatch, [mismatch], { status: 422 }, { status: 409 });
test('E3: a wrong-method 405 may carry invalid_request', () => {
  assert.ok(!checkMessage('error-response', limitError, { status: 405 }).violations.some((v) => v.rule === 'E3'));
});
const busy: Json = { error: { code: 'retry_later', message: 'slow down', retryable: true } };
ruleTest('E4', 'error-response', busy, [busy], { status: 429, headers: { 'Retry-After': '5' } }, { status: 429, headers: {} });
test('E4 rejects malformed or repeated Retry-After values on 429/503 bodies', () => {
  for (const value of ['-1', '1.5', '05', '1e3', ' 5', ['5', '5']]) {
    assert.ok(checkMessage('error-response', busy, { status: 429, headers: { 'retry-after': value } }).violations.some((v) => v.rule === 'E4'), String(value));
  }
  assert.ok(checkMessage('ready-response', { ready: false }, { status: 503, headers: {} }).violations.some((v) => v.rule === 'E4'));
  assert.ok(!checkMessage('ready-response', { ready: false }, { status: 503, headers: { 'retry-after': 'Sun, 06 Nov 1994 08:49:37 GMT' } }).violations.some((v) => v.rule === 'E4'));
});
test('Retry-After: senders write seconds or IMF-fixdate; receivers also accept a fraction', () => {
  assert.ok(isValidRetryAfter('0', 'sender'));
  assert.ok(!isValidRetryAfter('2.5', 'sender'));
  assert.ok(isValidRetryAfter(' 2.5 ', 'receiver'));
  for (const bad of ['+1', '1e2', '01', '.5', '5.', '']) assert.ok(!isValidRetryAfter(bad, 'receiver'), bad);
  assert.ok(!isValidRetryAfter('Mon, 06 Nov 1994 08:49:37 GMT', 'sender'), 'wrong weekday');
  assert.ok(!isValidRetryAfter('Sun, 31 Nov 1994 08:49:37 GMT', 'sender'), 'no such day');
});
ruleTest('READY', 'ready-response', { ready: true }, [{ ready: true }], { status: 200 }, { status: 503 });

const schemaResponse = example('schema-response');
ruleTest('SCHEMA1', 'schema-response', schemaResponse, [edit(schemaResponse, '/schema_version', 5), edit(schemaResponse, '/schema_hash', 'e'.repeat(64))]);
const tables = example('tables-response');
ruleTest('TABLES1', 'tables-response', tables, [edit(tables, '/tables', [...((tables.tables as Json[]).slice().reverse())])]);

test('every registered rule has its own test', () => {
  assert.deepEqual([...new Set(RULES.map((r) => r.id))].filter((id) => !tested.has(id)), []);
});

test('every section-6 rule enforced in code is registered', () => {
  const registered = new Set(RULES.map((r) => r.id));
  // E2's code part is the limit-range ordering rule E2b.
  const inCode = Object.entries(RULE_COVERAGE)
    .filter(([, where]) => where === 'rule' || where === 'schema+rule')
    .map(([id]) => (id === 'E2' ? 'E2b' : id));
  assert.deepEqual(inCode.filter((id) => !registered.has(id)), []);
});
