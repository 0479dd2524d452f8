import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient, paths } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

test('a malformed app version is never announced: the run stops in error, not retryable, before any request', async () => {
  for (const [i, appVersion] of ['v2.4.0', '2.4', '02.4.0', '2.4.0 '].entries()) {
    const c = openClient(server, `bad-version-${i}`, { appVersion });
    const start = server.requests.length;
    const run = await c.syncNow();
    assert.equal(run.completion, 'error');
    assert.deepEqual(paths(server).slice(start), []);
    const failure = run.status.failure as { code: string; retryable: boolean; operation: string };
    assert.deepEqual([failure.operation, failure.code, failure.retryable], ['connecting', 'invalid_app_version', false]);
    c.close();
  }
});

test('a well-formed app version goes out verbatim with the integer protocol 3', async () => {
  const c = openClient(server, 'good-version', { appVersion: '4.0.0-rc.1+b.7' });
  const start = server.requests.length;
  assert.equal((await c.syncNow()).completion, 'idle');
  const connect = server.requests.slice(start).find((r) => r.path.endsWith('/connect'));
  const text = connect?.body.toString() ?? '';
  assert.match(text, /"app_version":"4\.0\.0-rc\.1\+b\.7"/);
  assert.match(text, /"protocol_version":3[,}]/);
  c.close();
});

test('a pull refused with schema_mismatch goes back to connect instead of failing the run', async () => {
  const c = openClient(server, 'reconnect-on-422');
  assert.equal((await c.syncNow()).completion, 'idle');
  server.script('/sync/pull', {
    status: 422,
    body: { error: { code: 'schema_mismatch', message: 'schema is not current', retryable: false, current_schema: { version: 1, hash: manifest().schema_hash }, received_schema: { version: 1, hash: manifest().schema_hash } } },
  });
  const start = server.requests.length;
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.deepEqual(paths(server).slice(start), ['pull', 'connect', 'pull']);
  c.close();
});
