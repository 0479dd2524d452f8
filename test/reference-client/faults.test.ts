/**
 * The client's fault switches (SYNCHRO_FAULTS) really break the rule they
 * are named after, so a sensitivity run that enables them measures something.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
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
  await d.call('open', { dataDir: mkdtempSync(join(tmpdir(), 'synchro-fault-')), serverUrl: server.url, token: 't', clientId: `fault-${n}`, appVersion: '1.0.0' });
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
