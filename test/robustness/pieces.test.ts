/**
 * The parts of the robustness profile on their own: the generators break a
 * request the way they say they do, the oracle judges answers by the
 * envelope rules, bodies and outputs are written as intended.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { readJsonBody } from '../../harness/codec/index.ts';
import { BodyWriter, readableBody, withDuplicateMember } from '../../harness/robustness/body.ts';
import { buildCase, type CaseSpec, caseArbitrary, caseContext } from '../../harness/robustness/cases.ts';
import type { Fixture } from '../../harness/robustness/fixture.ts';
import { badIntegerTokens, incompressible } from '../../harness/robustness/hostile.ts';
import { judge } from '../../harness/robustness/judge.ts';
import { generate } from '../../harness/robustness/profile.ts';
import { fromRunArgs } from '../../harness/robustness/run-args.ts';
import { pointerOf, slotsOf } from '../../harness/robustness/slots.ts';
import { ENDPOINTS, type Outcome } from '../../harness/robustness/types.ts';
import { validate } from '../../harness/wire/index.ts';

const schema = { version: 3, hash: 'a'.repeat(64) };

/** A fixture as the set-up would leave it, without a server. */
function fixture(): Fixture {
  const a = { userId: 'robustness-a', token: 'token-a', clientId: 'client-a', generation: 2, scopeSetVersion: 1, scope: 'user:robustness-a', cursor: 'ic1.cursor.mac' };
  const b = { ...a, userId: 'robustness-b', token: 'token-b', clientId: 'client-b', scope: 'user:robustness-b' };
  const mutation = (op: string, extra: object) => ({ mutation_id: randomUUID(), table: 't1', pk: { t1f1: `k-${op}` }, authored_schema: schema, op, client_version: '2026-01-01T00:00:00.000000Z', ...extra });
  return {
    schema,
    a,
    b,
    table: { tableId: 't1', pkField: 't1f1', pkType: 'string', writable: [{ id: 't1f2', type: 'string' }], rows: [], known: true },
    notes: [],
    bases: {
      connect: { client_id: a.clientId, client_generation: 2, platform: 'p', app_version: '1.0.0', protocol_version: 3, schema, scope_set_version: 1, known_scopes: { [a.scope]: { cursor: a.cursor } } },
      push: { client_id: a.clientId, client_generation: 2, batch_id: randomUUID(), schema, mutations: [mutation('insert', { columns: { t1f2: 'x' } }), mutation('update', { base_version: 'v1', columns: { t1f2: 'y' } }), mutation('delete', { base_version: 'v2' })] },
      pull: { client_id: a.clientId, client_generation: 2, schema, scope_set_version: 1, scopes: { [a.scope]: { cursor: a.cursor } }, limit: 100 },
      rebuild: { client_id: a.clientId, client_generation: 2, schema, scope: a.scope, rebuild_id: randomUUID(), cursor: null, limit: 100 },
    },
  };
}

test('the valid requests of the fixture are valid, and the slots read from the schemas cover every member of them', () => {
  const f = fixture();
  for (const endpoint of ENDPOINTS) {
    const kind = `${endpoint}-request` as const;
    assert.equal(validate(kind, f.bases[endpoint]).ok, true, endpoint);
    const pointers = slotsOf(kind, f.bases[endpoint]).map(pointerOf);
    for (const member of Object.keys(f.bases[endpoint])) assert.ok(pointers.includes(`/${member}`), `${endpoint} /${member}`);
  }
  const push = slotsOf('push-request', f.bases.push).map(pointerOf);
  for (const pointer of ['/mutations/1/base_version', '/mutations/0/pk/t1f1#name', '/mutations/0/columns/t1f2', '/schema/hash']) assert.ok(push.includes(pointer), pointer);
  const limit = slotsOf('pull-request', f.bases.pull).find((s) => pointerOf(s) === '/limit');
  assert.deepEqual(limit?.integer, { minimum: 1, maximum: 1000 });
});

test('every case that breaks the body on purpose is expected to be refused, and its bytes really are malformed', () => {
  const f = fixture();
  const contexts = Object.fromEntries(ENDPOINTS.map((e) => [e, caseContext(e, f)]));
  const malformedKinds = new Set<CaseSpec['kind']>(['remove', 'extra', 'retype', 'integer', 'nest', 'oversize', 'duplicate', 'raw']);
  fc.assert(
    fc.property(fc.constantFrom(...ENDPOINTS), caseArbitrary(), (endpoint, spec) => {
      const request = buildCase(contexts[endpoint] as ReturnType<typeof caseContext>, spec);
      // A count one or two past the schema's limit must be refused; at the limit the request is valid.
      if (spec.kind === 'count' && request.label.includes(' with ')) {
        const read = readJsonBody(request.body);
        assert.equal(read.ok && validate(`${endpoint}-request`, read.value).ok, spec.past === 0, request.label);
        if (spec.past > 0) assert.equal(request.expect.kind, 'refuse', request.label);
      }
      if (!malformedKinds.has(spec.kind)) return;
      assert.equal(request.expect.kind, 'refuse', `${endpoint}: ${request.label}`);
      const read = readJsonBody(request.body);
      const malformed = !read.ok || read.nonCanonicalNumbers.length > 0 || !validate(`${endpoint}-request`, read.value).ok || read.bodyOctets > 1_048_576;
      assert.ok(malformed, `${endpoint}: ${request.label} is a valid request`);
    }),
    { seed: 5, numRuns: 1_500 },
  );
});

test('generation is reproduced from the seed', () => {
  assert.deepEqual(generate(99, 50), generate(99, 50));
  assert.notDeepEqual(generate(99, 50), generate(100, 50));
});

test('bad integer tokens are never an integer of the range', () => {
  fc.assert(
    fc.property(fc.integer({ min: -1000, max: 1000 }), fc.nat({ max: 2000 }), (minimum, span) => {
      for (const token of badIntegerTokens(minimum, minimum + span)) {
        const value = Number(token);
        const valid = /^-?(0|[1-9][0-9]*)$/.test(token) && token !== '-0' && value >= minimum && value <= minimum + span;
        assert.equal(valid, false, token);
      }
    }),
  );
  assert.ok(!badIntegerTokens(undefined, undefined, 3).includes('3'));
  assert.ok(badIntegerTokens(undefined, undefined, 3).includes('3.0'));
});

test('bodies: exact number tokens and octets, a member twice, shortened for reading', () => {
  const writer = new BodyWriter();
  const body = writer.render({ a: writer.json('1e3'), b: `x${writer.octets(Buffer.from([0xff]))}y` });
  assert.deepEqual([...body], [...Buffer.from('{"a":1e3,"b":"x'), 0xff, ...Buffer.from('y"}')]);
  assert.equal(withDuplicateMember({ a: 1, b: 2 }), '{"a":1,"a":1,"b":2}');
  const long = readableBody(Buffer.from(JSON.stringify({ s: incompressible(5_000, 1), n: '\u0000' })));
  assert.match(long, /<5000 characters>/);
  assert.match(long, /\\u0000/);
  assert.equal(incompressible(40, 9), incompressible(40, 9));
  assert.notEqual(incompressible(40, 9), incompressible(40, 10));
});

const answer = (status: number, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Outcome => ({ kind: 'answer', answer: { status, headers, body: Buffer.from(body), ms: 1 } });
const envelope = (code: string) => JSON.stringify({ error: { code, message: 'm', retryable: code === 'retry_later' } });
const refuse = { kind: 'refuse' as const, codes: ['invalid_request', 'retry_later'] };

test('the oracle: the envelope with a code the request may get passes; anything else is a finding of its kind', () => {
  assert.equal(judge(refuse, answer(400, envelope('invalid_request'))).finding, undefined);
  assert.equal(judge(refuse, answer(405, envelope('invalid_request'))).finding, undefined, 'a wrong method is 405 with invalid_request');
  assert.equal(judge(refuse, answer(404, envelope('invalid_request'))).finding?.class, 'bad-envelope', 'invalid_request is sent with 400 (E3)');
  assert.equal(judge(refuse, answer(429, envelope('retry_later'))).finding?.class, 'bad-envelope', 'a 429 needs Retry-After (E4)');
  assert.equal(judge(refuse, answer(429, envelope('retry_later'), { 'content-type': 'application/json', 'retry-after': '5' })).finding, undefined);
  assert.equal(judge(refuse, answer(400, envelope('invalid_request'), { 'content-type': 'text/plain' })).finding?.class, 'bad-envelope');
  assert.equal(judge(refuse, answer(431, '')).finding?.class, 'bad-envelope');
  assert.equal(judge(refuse, answer(401, envelope('auth_required'))).finding?.class, 'unexpected-code');
  assert.equal(judge(refuse, answer(200, '{}')).finding?.class, 'accepted');
  assert.equal(judge({ kind: 'survive', codes: [] }, answer(200, '{}')).finding, undefined);
  assert.equal(judge(refuse, answer(500, envelope('sync_integrity_failure'))).finding?.class, 'server-error');
  assert.equal(judge(refuse, answer(503, envelope('temporary_unavailable'))).finding?.class, 'server-error');
  assert.equal(judge(refuse, { kind: 'hang', ms: 10 }).finding?.class, 'hang');
  assert.equal(judge(refuse, { kind: 'closed', ms: 10, error: 'ECONNRESET' }).finding?.class, 'no-answer');
  assert.equal(judge(refuse, answer(400, envelope('invalid_request'))).tally, '400 invalid_request');
});

test('run --profile robustness hands the rest of its arguments to the fuzz command', () => {
  assert.deepEqual(fromRunArgs(['--profile', 'robustness', '--runs', '10']), ['--runs', '10']);
  assert.deepEqual(fromRunArgs(['--server', 'x.json', '--profile=robustness']), ['--server', 'x.json']);
  assert.equal(fromRunArgs(['--profile', 'server']), undefined);
});
