/**
 * The client's fault switches (SYNCHRO_FAULTS) really break the rule they
 * are named after, so a sensitivity run that enables them measures something.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { scratchDir } from '../support/scratch-dir.ts';
import { DriverProcess } from './driver-process.ts';
import { FakeServer } from './fake-server.ts';
import { manifest } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

let n = 0;
async function driver(faults: string): Promise<DriverProcess> {
  const d = new DriverProcess(faults === '' ? {} : { SYNCHRO_FAULTS: faults });
  n++;
  await d.call('open', { dataDir: scratchDir('synchro-fault-'), serverUrl: server.url, token: 't', clientId: `fault-${n}`, appVersion: '1.0.0' });
  await d.call('syncNow');
  return d;
}

for (const faults of ['', 'client:skip-row-checksum']) {
  test(`a corrupt row checksum ${faults === '' ? 'fails the page' : `goes unnoticed with ${faults}`}`, async () => {
    const d = await driver(faults);
    server.putRow('tbl_notes', { fld_notes_id: 40_000 + n, fld_notes_body: 'x' });
    server.script('/sync/pull', (_req, normal) => {
      const reply = normal();
      const first = (reply.body as { changes: { row_checksum: { digest: string } }[] }).changes[0];
      if (first) first.row_checksum.digest = '0'.repeat(64);
      return reply;
    });
    const result = await d.call<{ completion: string }>('syncNow');
    assert.equal(result.completion === 'error', faults === '');
    await d.close();
  });
}

for (const faults of ['', 'client:abandon-sealed-batch']) {
  test(`a sealed batch whose response was lost is ${faults === '' ? 'resent' : `abandoned with ${faults}`}`, async () => {
    const d = await driver(faults);
    await d.call('execute', { sql: `INSERT INTO orders(id) VALUES ('fault-${n}')` });
    server.script('/sync/push', 'drop');
    await d.call('syncNow');
    await d.call('syncNow');
    const { mutations } = await d.call<{ mutations: { status: string }[] }>('inspectMutations');
    assert.equal(mutations[0]?.status, faults === '' ? 'accepted' : 'sealed');
    await d.close();
  });
}

for (const faults of ['', 'client:trim-cursor']) {
  test(`a cursor with surrounding spaces is presented ${faults === '' ? 'byte for byte' : `trimmed with ${faults}`}`, async () => {
    const d = await driver(faults);
    server.script('/sync/pull', (_req, normal) => {
      const reply = normal();
      const cursors = (reply.body as { scope_cursors: Record<string, string> }).scope_cursors;
      for (const scope of Object.keys(cursors)) cursors[scope] = `  ${cursors[scope]}  `;
      return reply;
    });
    await d.call('syncNow');
    // The next pull shows what the client kept; its answer does not matter.
    server.script('/sync/pull', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'x', retryable: true } }, retryAfter: '1' });
    await d.call('syncNow');
    const pulls = server.requests.filter((r) => r.path === '/sync/pull');
    const presented = Object.values((JSON.parse(pulls[pulls.length - 1]?.body.toString('utf8') ?? '{}') as { scopes: Record<string, { cursor: string | null }> }).scopes).map((s) => s.cursor);
    assert.ok(presented.length > 0);
    assert.equal(presented.every((c) => typeof c === 'string' && c.startsWith('  ') && c.endsWith('  ')), faults === '');
    await d.close();
  });
}
