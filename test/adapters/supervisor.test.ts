import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ClientGoneError, ClientProtocolError, ClientRpcError, ClientSupervisor } from '../../harness/adapters/client-process.ts';

const stub = new URL('./fixtures/stub-client.ts', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'synchro-supervisor-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let dirs = 0;
function supervisor(env: Record<string, string> = {}): { client: ClientSupervisor; open: Record<string, unknown> } {
  dirs += 1;
  const client = new ClientSupervisor({ command: [process.execPath, stub], cwd: scratch, env }, { callDeadlineMs: 10_000 });
  const open = { dataDir: join(scratch, `data-${dirs}`), serverUrl: 'http://127.0.0.1:9', token: 't', clientId: 'c1', appVersion: '1.0.0' };
  return { client, open };
}

test('calls go through, results are checked, stderr is captured', async () => {
  const { client, open } = supervisor();
  client.start();
  try {
    assert.deepEqual(await client.call('open', open), {});
    assert.deepEqual(await client.call('execute', { sql: 'INSERT a' }), { changes: 1 });
    assert.deepEqual(await client.call('query', { sql: 'SELECT' }), { rows: [{ value: 'a' }] });
    assert.match(client.stderr, /stub client opened/);
    assert.deepEqual(client.breaches, []);
  } finally {
    await client.close();
  }
});

test('a JSON-RPC error is a typed outcome, not a breach', async () => {
  const { client, open } = supervisor();
  client.start();
  try {
    await client.call('open', open);
    await assert.rejects(client.call('execute', { sql: 'DROP everything' }), (error: unknown) => error instanceof ClientRpcError && error.code === -32001 && (error.data as { sqlError: string }).sqlError.includes('DROP'));
    assert.deepEqual(client.breaches, []);
  } finally {
    await client.close();
  }
});

test('params the harness builds wrong are refused before they are sent', async () => {
  const { client } = supervisor();
  client.start();
  try {
    await assert.rejects(client.call('open', { dataDir: '' }), /harness built invalid open params/);
  } finally {
    await client.close();
  }
});

test('SIGKILL is real, and a restart on the same data directory finds the durable state', async () => {
  const { client, open } = supervisor();
  client.start();
  try {
    await client.call('open', open);
    await client.call('execute', { sql: 'INSERT kept' });
    const firstPid = client.pid;
    await client.kill();
    assert.equal(client.alive, false);
    assert.throws(() => process.kill(firstPid as number, 0), /ESRCH/);
    await client.restart();
    assert.notEqual(client.pid, firstPid);
    assert.deepEqual(await client.call('query', { sql: 'SELECT' }), { rows: [{ value: 'kept' }] });
    assert.deepEqual(client.breaches, [], 'a kill ordered by the harness is not a breach');
  } finally {
    await client.close();
  }
});

test('an armed crash point kills the process without a breach', async () => {
  const { client, open } = supervisor();
  client.start();
  try {
    await client.call('open', open);
    await client.call('armCrash', { point: 'before_write' });
    await assert.rejects(client.call('execute', { sql: 'INSERT lost' }), ClientGoneError);
    assert.match(await client.awaitExit(), /SIGKILL/);
    assert.deepEqual(client.breaches, []);
    await client.restart();
    assert.deepEqual(await client.call('query', { sql: 'SELECT' }), { rows: [] });
  } finally {
    await client.close();
  }
});

test('garbage on stdout is a breach that names the line and carries stderr', async () => {
  const { client, open } = supervisor({ STUB_MISBEHAVE: 'garbage' });
  client.start();
  try {
    await client.call('open', open);
    await assert.rejects(client.call('execute', { sql: 'INSERT x' }), (error: unknown) => error instanceof ClientProtocolError && /not JSON/.test(error.message) && /stub client opened/.test(error.message));
    assert.equal(client.breaches.length, 1);
    assert.match(client.breaches[0] ?? '', /this is not json-rpc/);
  } finally {
    await client.close();
  }
});

test('an early exit is a breach', async () => {
  const { client, open } = supervisor({ STUB_MISBEHAVE: 'exit-early' });
  client.start();
  try {
    await assert.rejects(client.call('open', open), ClientProtocolError);
    assert.match(client.breaches.join('\n'), /exited with status 3 unexpectedly/);
  } finally {
    await client.close();
  }
});

test('a result outside schemas/adapter is a breach naming the pointer and rule', async () => {
  const { client, open } = supervisor({ STUB_MISBEHAVE: 'bad-result' });
  client.start();
  try {
    await client.call('open', open);
    await assert.rejects(client.call('execute', { sql: 'INSERT x' }), /executeResult.*\/changes violates "minimum"/);
    assert.equal(client.breaches.length, 1);
  } finally {
    await client.close();
  }
});

test('fault switches reach the process through SYNCHRO_FAULTS', async () => {
  const { open } = supervisor();
  const client = new ClientSupervisor({ command: [process.execPath, stub], cwd: scratch }, { callDeadlineMs: 10_000, env: { SYNCHRO_FAULTS: 'lose-writes' } });
  client.start();
  try {
    await client.call('open', open);
    await client.call('execute', { sql: 'INSERT y' });
    assert.deepEqual(await client.call('query', { sql: 'SELECT' }), { rows: [] });
  } finally {
    await client.close();
  }
});
