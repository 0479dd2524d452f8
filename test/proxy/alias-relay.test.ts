/**
 * The alias relay of the opaque-token steps against a scripted upstream:
 * issued cursors are renamed per scope, a presented alias goes back to the
 * server as the real token of its own scope, anything else passes unchanged.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { AliasRelay } from '../../harness/proxy/alias-relay.ts';
import { alterToken } from '../../steps/support/opaque-tokens/alteration.ts';

const HASH = 'a'.repeat(64);
const received: unknown[] = [];
let upstream: Server;
let relay: AliasRelay;
let issued = 0;

before(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { scopes: Record<string, unknown> };
      received.push(body);
      issued += 1;
      const cursors = Object.fromEntries(Object.keys(body.scopes).map((s) => [s, `real-${s}-${issued}`]));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ changes: [], scope_set_version: 1, scope_cursors: cursors, scope_updates: { add: [], remove: [] }, rebuild: [], has_more: true }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  relay = new AliasRelay(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, async () => undefined);
  await relay.start();
});

after(async () => {
  await relay.stop();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

async function pull(scopes: Record<string, string | null>): Promise<{ scope_cursors: Record<string, string> }> {
  const body = { client_id: 'c1', schema: { version: 1, hash: HASH }, scopes: Object.fromEntries(Object.entries(scopes).map(([s, c]) => [s, { cursor: c }])) };
  const response = await fetch(`${relay.url}/sync/pull`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as { scope_cursors: Record<string, string> };
}

const lastReceived = () => received[received.length - 1] as { scopes: Record<string, { cursor: string | null }> };

test('issued cursors get the planned aliases in order, then pass through', async () => {
  relay.aliasCursors('c1', 'user:a', ['  padded  ', 'cafe\u0301']);
  const first = await pull({ 'user:a': null });
  assert.equal(first.scope_cursors['user:a'], '  padded  ');
  const second = await pull({ 'user:a': '  padded  ' });
  assert.match(String(lastReceived().scopes['user:a']?.cursor), /^real-user:a-\d+$/);
  assert.equal(second.scope_cursors['user:a'], 'cafe\u0301');
  const third = await pull({ 'user:a': 'cafe\u0301' });
  assert.match(String(third.scope_cursors['user:a']), /^real-user:a-\d+$/);
});

test('an altered alias reaches the server as the client wrote it', async () => {
  relay.aliasCursors('c1', 'user:b', ['  spaced  ']);
  await pull({ 'user:b': null });
  await pull({ 'user:b': 'spaced' });
  assert.equal(lastReceived().scopes['user:b']?.cursor, 'spaced');
});

test('one alias text for two scopes maps back to each scope its own token', async () => {
  relay.aliasEveryCursorOnce('c1', 'same');
  const page = await pull({ 'x:1': null, 'x:2': null });
  assert.deepEqual(page.scope_cursors, { 'x:1': 'same', 'x:2': 'same' });
  await pull({ 'x:1': 'same', 'x:2': 'same' });
  const sent = lastReceived().scopes;
  assert.notEqual(sent['x:1']?.cursor, sent['x:2']?.cursor);
  assert.match(String(sent['x:1']?.cursor), /^real-x:1-/);
  assert.match(String(sent['x:2']?.cursor), /^real-x:2-/);
});

test('token alterations change the token as the features describe', () => {
  const token = 'ic1.abcdefghij.klmnopqrstuvwxyz';
  assert.notEqual(alterToken(token, 'with the character at its middle position replaced').value, token);
  assert.equal(alterToken(token, 'with the character at its middle position replaced').value.length, token.length);
  assert.equal(alterToken(token, 'with its last character removed').value, token.slice(0, -1));
  assert.equal(alterToken(token, 'with ".x" appended').value, `${token}.x`);
  assert.deepEqual(alterToken(token, 'replaced by the empty string ""'), { value: '', invalid: true });
  assert.deepEqual(alterToken(token, 'replaced by the JSON string "null"'), { value: 'null', invalid: false });
  assert.throws(() => alterToken(token, 'rotated'));
});
