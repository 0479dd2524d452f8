/**
 * The reference's answers to hostile input (issue #20): text limits and
 * U+0000 refused before the database with 400 and the limit named, a value
 * at the limit accepted; a key over the limit refused whole, so a batch never
 * sticks on a 500; user ids that are not exact text, tokens without `exp` or
 * issued in the future refused with 401; content codings refused; what
 * Node's HTTP parser refuses answered with the envelope; a stalled body cut
 * off by the body timeout; connections past the cap closed; and the nothing
 * of this changing durable state.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import net from 'node:net';
import { test } from 'node:test';
import { checkBytes } from '../../harness/wire/index.ts';
import { TEXT_LIMITS } from '../../reference/server/core/input-limits.ts';
import { connect, freshServer, type Harness, insertNote, NOTES_SQL, pushBody, SECRET, snapshot, useEnv } from './helpers.ts';

const env = useEnv();

async function withServer(fn: (h: Harness) => Promise<void>, start = {}): Promise<void> {
  const h = await freshServer(env(), NOTES_SQL, { start });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const fresh = (clientId: string) => ({ client_id: clientId, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });

/** A letter and digit string of `n` characters that does not compress (so an index entry cannot hide its length). */
function random(n: number, seed = 7): string {
  let x = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out += 'abcdefghijklmnopqrstuvwxyz0123456789'[x % 36];
  }
  return out;
}

function assertEnvelope(status: number, headers: Headers | Record<string, string>, text: string, code: string): void {
  const get = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name]) ?? undefined;
  assert.match(String(get('content-type')), /^application\/json/);
  const checked = checkBytes('error-response', Buffer.from(text), { status, headers: headers instanceof Headers ? Object.fromEntries(headers) : headers });
  assert.deepEqual([...checked.schemaErrors, ...checked.violations], [], text);
  assert.equal(JSON.parse(text).error.code, code);
}

test('U+0000 in any identifier is 400 invalid_request and changes nothing', async () => {
  await withServer(async (h) => {
    const s = await connect(h);
    const before = await snapshot(h);
    const cases: [string, unknown][] = [
      ['/sync/connect', fresh('c\u0000')],
      ['/sync/connect', { ...fresh('c-nul-platform'), platform: 'i\u0000s' }],
      ['/sync/connect', { ...fresh('c1'), client_generation: 1, schema: s.schema, scope_set_version: 1, known_scopes: { 'user:\u0000': { cursor: null } } }],
      ['/sync/push', pushBody(s, [{ ...insertNote(s, 'n\u0000') }])],
      ['/sync/push', pushBody(s, [{ ...insertNote(s, 'n1'), table: 't\u0000' }])],
      ['/sync/push', pushBody(s, [{ ...insertNote(s, 'n1'), columns: { 'f\u0000': 'x' } }])],
      ['/sync/pull', { client_id: 'x\u0000', client_generation: 1, schema: s.schema, scope_set_version: 0, scopes: {}, limit: 10 }],
      ['/sync/pull', { client_id: s.clientId, client_generation: s.generation, schema: s.schema, scope_set_version: 1, scopes: { 'user:u1\u0000': { cursor: null } }, limit: 10 }],
      ['/sync/rebuild', { client_id: s.clientId, client_generation: s.generation, schema: s.schema, scope: 'user:\u0000', rebuild_id: '11e5568c-faac-4e81-ada3-a6ca19b57f22', cursor: null, limit: 10 }],
    ];
    for (const [path, body] of cases) {
      const res = await h.post(path, body);
      assert.equal(res.status, 400, `${path} ${res.text}`);
      assert.equal(res.json.error.code, 'invalid_request');
      assert.match(res.json.error.message, /contains U\+0000/);
    }
    assert.equal(await snapshot(h), before);
  });
});

test('identifiers longer than their limit are refused with the limit, one at the limit is accepted, and a sealed batch with an over-long key is refused whole on every retry', async () => {
  await withServer(async (h) => {
    const atLimit = await h.post('/sync/connect', fresh(random(TEXT_LIMITS.clientId)));
    assert.equal(atLimit.status, 200, atLimit.text);
    for (const length of [TEXT_LIMITS.clientId + 1, 2_800, 8_000]) {
      const res = await h.post('/sync/connect', fresh(random(length)));
      assert.equal(res.status, 400, res.text);
      assert.deepEqual({ field: res.json.error.field, minimum: res.json.error.minimum, maximum: res.json.error.maximum }, { field: 'client_id', minimum: 1, maximum: TEXT_LIMITS.clientId });
    }
    // Multi-octet text counts octets, not characters.
    const wide = await h.post('/sync/connect', fresh('é'.repeat(TEXT_LIMITS.clientId / 2 + 1)));
    assert.equal(wide.status, 400);
    const s = await connect(h);
    const before = await snapshot(h);
    const batch = pushBody(s, [insertNote(s, 'ok-1', { body: 'kept' }), insertNote(s, random(2_800))]);
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await h.post('/sync/push', batch);
      assert.equal(res.status, 400, res.text);
      assert.deepEqual({ field: res.json.error.field, maximum: res.json.error.maximum }, { field: 'pk', maximum: TEXT_LIMITS.keyValue });
    }
    assert.equal(await snapshot(h), before, 'the refused batch wrote nothing, not even its valid mutation');
    const atKeyLimit = await h.post('/sync/push', pushBody(s, [insertNote(s, random(TEXT_LIMITS.keyValue, 3))]));
    assert.equal(atKeyLimit.status, 200, atKeyLimit.text);
    assert.equal(atKeyLimit.json.accepted.length, 1);
  });
});

const b64 = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/** An HS256 token over exactly these payload octets. */
function token(payload: string | Buffer, secret = SECRET): string {
  const head = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(payload)}`;
  return `${head}.${b64(createHmac('sha256', secret).update(head).digest())}`;
}

const now = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown>) => JSON.stringify({ sub: 'token-user', iat: now(), exp: now() + 3600, ...extra });

async function connectWith(h: Harness, bearer: string, clientId: string) {
  const res = await fetch(`${h.server.url}/sync/connect`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(fresh(clientId)) });
  return { status: res.status, text: await res.text() };
}

test('a token must bound its life and name exactly one user: exp required, iat not ahead, exact UTF-8 user ids', async () => {
  await withServer(async (h) => {
    const refused: [string, string][] = [
      ['no exp', token(JSON.stringify({ sub: 'token-user', iat: now() }))],
      ['iat a year ahead', token(claims({ iat: now() + 365 * 86_400, exp: now() + 2 * 365 * 86_400 }))],
      ['a lone high surrogate', token(claims({ sub: 'X\ud800' }))],
      ['a lone low surrogate', token(claims({ sub: 'X\udfff' }))],
      ['an octet that is not UTF-8', token(Buffer.concat([Buffer.from('{"sub":"X'), Buffer.from([0xff]), Buffer.from(`","iat":${now()},"exp":${now() + 3600}}`)]))],
      ['U+0000', token(claims({ sub: 'a\u0000b' }))],
      ['a user id over the limit', token(claims({ sub: random(TEXT_LIMITS.userId + 1) }))],
    ];
    const before = await snapshot(h);
    for (const [what, bearer] of refused) {
      const res = await connectWith(h, bearer, `c-${what}`);
      assert.equal(res.status, 401, `${what}: ${res.text}`);
      assert.equal(JSON.parse(res.text).error.code, 'auth_required');
    }
    assert.equal(await snapshot(h), before);
    // The real user X\uFFFD keeps a client nobody else can reach through a replacement character.
    assert.equal((await connectWith(h, token(claims({ sub: 'X\ufffd' })), 'shared')).status, 200);
    const skewed = await connectWith(h, token(claims({ iat: now() + 30 })), 'c-skew');
    assert.equal(skewed.status, 200, 'an iat within the allowed clock skew is accepted');
    assert.equal((await connectWith(h, token(claims({ sub: random(TEXT_LIMITS.userId) })), 'c-long-user')).status, 200);
  });
});

test('a body with a content coding is refused; identity is not a coding', async () => {
  await withServer(async (h) => {
    for (const coding of ['gzip', 'deflate', 'br', 'x-custom', 'identity, gzip']) {
      const res = await h.post('/sync/connect', fresh(`c-${coding}`), { headers: { 'content-encoding': coding } });
      assert.equal(res.status, 400, `${coding}: ${res.text}`);
      assertEnvelope(res.status, res.headers, res.text, 'invalid_request');
    }
    assert.equal((await h.post('/sync/connect', fresh('c-identity'), { headers: { 'content-encoding': 'identity' } })).status, 200);
  });
});

/** Writes raw octets on a new connection; resolves with what came back and whether the server closed it. */
function raw(url: string, octets: string, waitMs = 5_000): Promise<{ text: string; closed: boolean; ms: number }> {
  const { port, hostname } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(octets, 'latin1'));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false, ms: performance.now() - started });
    }, waitMs);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, ms: performance.now() - started });
    });
  });
}

function parse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const [line = '', ...rest] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(rest.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 1).trim()]));
  return { status: Number(line.split(' ')[1]), headers, body: text.slice(end + 4) };
}

test("what Node's HTTP parser refuses gets the error envelope and a closed connection", async () => {
  await withServer(async (h) => {
    const bearer = await h.token();
    const probes = [
      'GARBAGE\r\n\r\n',
      'POST /sync/connect HTTP/9.9\r\nHost: x\r\n\r\n',
      'POST /sync/connect HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      `POST /sync/connect HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`,
      `POST /sync/connect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
    ];
    for (const probe of probes) {
      const got = await raw(h.server.url, probe);
      const response = parse(got.text);
      assert.equal(response.status, 400, `${probe.slice(0, 60)}: ${got.text.slice(0, 300)}`);
      assertEnvelope(response.status, response.headers, response.body, 'invalid_request');
      assert.equal(got.closed, true, 'the connection is closed after a framing error');
    }
  });
});

test('a stalled body is answered 400 after the body timeout and the connection closed; connections past the cap are closed unanswered', async () => {
  await withServer(
    async (h) => {
      const bearer = await h.token();
      const body = JSON.stringify(fresh('c-slow'));
      const stalled = await raw(h.server.url, `POST /sync/connect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`, 10_000);
      const response = parse(stalled.text);
      assert.equal(response.status, 400, stalled.text);
      assertEnvelope(response.status, response.headers, response.body, 'invalid_request');
      assert.equal(stalled.closed, true);
      assert.ok(stalled.ms >= 1_000 && stalled.ms < 5_000, `answered after ${stalled.ms} ms with a 1 s body timeout`);
      // Two idle connections fill the cap of two; a third is closed before it is read.
      const { port, hostname } = new URL(h.server.url);
      const held = await Promise.all([0, 1].map(() => new Promise<net.Socket>((resolve) => {
        const socket = net.connect(Number(port), hostname, () => resolve(socket));
      })));
      const third = await raw(h.server.url, 'GET /ready HTTP/1.1\r\nHost: x\r\n\r\n', 5_000);
      assert.equal(third.text, '');
      assert.equal(third.closed, true);
      for (const socket of held) socket.destroy();
    },
    { connectionLimits: { bodyTimeoutMs: 1_000, headersTimeoutMs: 2_000, maxConnections: 2 } },
  );
});
