/**
 * The sample client adapter in Python speaks the protocol: the supervisor
 * drives it, validates its answers, kills it and restarts it on the same data
 * directory, and its committed rows are still there.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { ClientRpcError, ClientSupervisor } from '../../harness/adapters/client-process.ts';
import { loadAdapterConfig, type ProcessClientConfig } from '../../harness/adapters/config.ts';

const configFile = new URL('../../examples/python-client/adapter.json', import.meta.url).pathname;
const python = spawnSync('python3', ['--version']).status === 0;

test('the Python sample client is driven through the adapter protocol', { skip: !python && 'python3 is not installed' }, async () => {
  const config = loadAdapterConfig('client', configFile) as ProcessClientConfig;
  const dataDir = mkdtempSync(join(tmpdir(), 'synchro-python-sample-'));
  const client = new ClientSupervisor({ command: config.command, cwd: dirname(configFile) }, { callDeadlineMs: 10_000 });
  client.start();
  try {
    await client.call('open', { dataDir, serverUrl: 'http://127.0.0.1:9', token: 't', clientId: 'py-1', appVersion: '1.0.0' });
    await client.call('execute', { sql: 'CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT)' });
    await client.call('transaction', { statements: [{ sql: 'INSERT INTO notes VALUES (?, ?)', params: ['n1', 'hello'] }] });
    await client.restart();
    assert.deepEqual(await client.call('query', { sql: 'SELECT id, body FROM notes' }), { rows: [{ id: 'n1', body: 'hello' }] });
    await assert.rejects(client.call('syncNow'), (error: unknown) => error instanceof ClientRpcError && error.code === -32601);
    assert.deepEqual((await client.call<{ status: string }>('getStatus')).status, 'local_ready');
    assert.deepEqual(client.breaches, []);
    assert.match(client.stderr, /python sample opened/);
  } finally {
    await client.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
