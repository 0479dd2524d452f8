/**
 * The reference pair driven through adapters only: the reference server
 * adapter (shared cluster, fresh database, own process), the proxy, and the
 * reference client as an adapter process. Its first sync must cross the
 * proxy with schema-valid messages and no protocol breach.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ClientSupervisor } from '../../harness/adapters/client-process.ts';
import { openServer } from '../../harness/adapters/open.ts';
import { WireProxy } from '../../harness/proxy/proxy.ts';
import { openSession, type RunSession } from '../../harness/run/session.ts';

const root = new URL('../../', import.meta.url).pathname;
let session: RunSession;
before(async () => {
  session = await openSession({ server: 'reference', client: 'reference', root });
});
after(() => session?.close());

test('a reference client syncs with the reference server through the proxy', async () => {
  // Both references are built now: an unavailable one is a defect, not a reason to skip.
  assert.ok(session.server.available, `the reference server is unavailable: ${session.server.reason}`);
  assert.ok(session.client.kind === 'process', `the reference client is unavailable: ${session.client.reason}`);
  const server = await openServer(session.server, { name: 'pair_smoke', faults: [], deadlineMs: 30_000 });
  const proxy = new WireProxy(server.baseUrl);
  await proxy.start();
  const client = new ClientSupervisor(session.client.spec, { callDeadlineMs: 30_000 });
  const dataDir = mkdtempSync(join(tmpdir(), 'synchro-pair-'));
  try {
    client.start();
    await client.call('open', { dataDir, serverUrl: proxy.url, token: await server.token('alice'), clientId: 'pair-a', appVersion: '1.0.0' });
    await client.call('syncNow');
    const connect = proxy.exchanges.find((exchange) => exchange.endpoint === 'connect');
    assert.equal(connect?.upstream[0]?.status, 200, connect?.upstream[0]?.body.toString());
    assert.deepEqual(proxy.problems(), []);
    assert.deepEqual(client.breaches, []);
  } finally {
    await client.close();
    await proxy.stop();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
