/**
 * The profile's checks can fail: pointed at a server with one chosen fault,
 * it reports that fault with the kind of finding it is and the smallest
 * request that shows it. The server here is a fake (fake-server.ts), so each
 * fault is exactly what the test says and nothing else is needed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runProfile } from '../../harness/robustness/profile.ts';
import type { FindingClass, Part, ProfileReport } from '../../harness/robustness/types.ts';
import { type Misbehaviour, startFakeServer } from './fake-server.ts';

async function profileAgainst(misbehave: Misbehaviour, part: Part, extra: { hangMs?: number; shrinkMs?: number } = {}): Promise<ProfileReport> {
  const fake = await startFakeServer(misbehave);
  try {
    return await runProfile(fake.adapter, { runs: 200, seed: 11, hangMs: extra.hangMs ?? 5_000, slowClients: 0, shrinkMs: extra.shrinkMs ?? 5_000, parts: [part] });
  } finally {
    await fake.close();
  }
}

function finding(report: ProfileReport, part: Part, kind: FindingClass) {
  const found = report.parts.find((p) => p.part === part)?.findings.find((f) => f.class === kind);
  assert.ok(found, `expected a ${kind} finding in ${part}; found ${JSON.stringify(report.parts.map((p) => p.findings.map((f) => `${f.class} in ${f.part}`)))}`);
  return found;
}

/** Every string and member name of a value, breadth first (the profile nests arrays thousands deep). */
function texts(value: unknown): string[] {
  const out: string[] = [];
  const queue: unknown[] = [value];
  while (queue.length > 0) {
    const next = queue.shift();
    if (typeof next === 'string') out.push(next);
    else if (typeof next === 'object' && next !== null)
      for (const [name, member] of Object.entries(next)) {
        if (!Array.isArray(next)) out.push(name);
        queue.push(member);
      }
  }
  return out;
}

const hasNul = (value: unknown): boolean => texts(value).some((t) => t.includes('\u0000'));

test('a 5xx is found, with the request that shows it and its answer', async () => {
  const report = await profileAgainst((r) => (hasNul(r.json) ? { status: 500, body: '{"error":{"code":"sync_integrity_failure","message":"failed","retryable":false}}' } : undefined), 'connect');
  const found = finding(report, 'connect', 'server-error');
  assert.match(found.minimal.request, /U\+0000|\\u0000/);
  assert.match(found.minimal.answer, /^500 /);
  assert.match(found.shrinking, /^shrunk \d+ times/);
});

test('a refusal without the envelope is found', async () => {
  const report = await profileAgainst((r) => (r.json === undefined ? { status: 400, body: '', type: 'text/plain' } : undefined), 'pull');
  const found = finding(report, 'pull', 'bad-envelope');
  assert.match(found.minimal.detail, /empty body/);
});

test('a request that changes the state while it is refused is found and named', async () => {
  const members = new Set(['client_id', 'client_generation', 'batch_id', 'schema', 'mutations', 'atomic']);
  // This server refuses a push with an unknown member, but only after storing something.
  const report = await profileAgainst((r, state) => {
    if (typeof r.json === 'object' && r.json !== null && !Array.isArray(r.json) && Object.keys(r.json).some((name) => !members.has(name))) state.counter += 1;
    return undefined;
  }, 'push');
  const found = finding(report, 'push', 'state-change');
  assert.match(found.minimal.request, /extra member .* in \/\)|past 1 MiB/);
  assert.match(found.minimal.detail, /fake\.counter: before \d+ \/ after \d+/);
  assert.equal(report.state.method, 'inspect');
  assert.ok(report.state.comparisons > 0);
});

test('a request left unanswered is a hang, bounded by the hang bound', async () => {
  const started = performance.now();
  const report = await profileAgainst((r) => (r.body.includes('[[[[[[') ? 'hang' : undefined), 'rebuild', { hangMs: 500, shrinkMs: 1_500 });
  const found = finding(report, 'rebuild', 'hang');
  assert.match(found.minimal.answer, /no answer within \d+ ms/);
  assert.match(found.minimal.request, /nested/);
  assert.ok(performance.now() - started < 60_000);
});

test('a request the protocol requires to be refused but the server accepts is found', async () => {
  const report = await profileAgainst((r) => (r.headers['content-encoding'] !== undefined ? { status: 200, body: '{}' } : undefined), 'connect');
  const found = finding(report, 'connect', 'accepted');
  assert.match(found.minimal.request, /Content-Encoding/);
});

/** The most characters (code points) in any string or member name of a value. */
const longest = (value: unknown): number => Math.max(0, ...texts(value).map((t) => [...t].length));

test('shrinking brings an over-long value down towards the length where the server starts failing', async () => {
  // The oversize case (a 1 MiB extra member) is left alone: this server fails on long values, not on large bodies.
  const report = await profileAgainst((r) => (longest(r.json) > 300 && !Object.hasOwn((r.json ?? {}) as object, 'robustness_padding') ? { status: 500, body: '{"error":{"code":"sync_integrity_failure","message":"failed","retryable":false}}' } : undefined), 'pull');
  const found = finding(report, 'pull', 'server-error');
  const length = Number(/= (\d+) (random|multi-octet) characters/.exec(found.minimal.request)?.[1]);
  assert.ok(length > 300 && length <= 513, `shrunk to ${length} characters: ${found.minimal.request}`);
  assert.match(found.shrinking, /^shrunk [1-9]\d* times/);
});
