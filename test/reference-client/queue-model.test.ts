/**
 * Model-based test of the queue: random sequences of local writes, syncs,
 * lost responses, retryable failures and restarts, checked against a model
 * of what must hold throughout (no mutation lost, none applied twice, sealed
 * bytes never change, terminal states stay terminal) and at the end (local
 * rows equal the model and the server, nothing left to send).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { SynchroClient } from '../../reference/client/client.ts';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient, tempDb } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

type Cmd =
  | { kind: 'insert' | 'update' | 'delete'; key: number; body: string }
  | { kind: 'sync' | 'drop' | 'unavailable' | 'restart' };

const command: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constantFrom('insert' as const, 'update' as const, 'delete' as const), key: fc.integer({ min: 0, max: 7 }), body: fc.string({ maxLength: 8 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'sync' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'drop' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'unavailable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

const TERMINAL = new Set(['accepted', 'server_rejected', 'superseded_before_send', 'cancelled_before_send', 'exceeds_push_limit']);
let run = 0;

test('queue lifecycle model: random writes, syncs, lost responses and restarts', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (cmds) => {
      run++;
      const clientId = `model-${run}`;
      const path = tempDb();
      const base = run * 100;
      let c: SynchroClient = openClient(server, clientId, { path, pushBatchSize: 2, bundledManifest: manifest() });
      const model = new Map<number, string>();
      const used = new Set<number>();
      const seenStatus = new Map<string, string>();
      const sealedBytes = new Map<string, string>();
      const check = () => {
        const ms = c.inspectMutations();
        const ids = new Set(ms.map((m) => m.mutationId));
        for (const [id, status] of seenStatus) {
          assert.ok(ids.has(id), `mutation ${id} was lost`);
          if (TERMINAL.has(status)) assert.equal(ms.find((m) => m.mutationId === id)?.status, status, `terminal ${status} changed`);
        }
        for (const m of ms) seenStatus.set(m.mutationId, m.status);
        for (const b of c.inspectBatches()) {
          const known = sealedBytes.get(b.batchId);
          if (known !== undefined) assert.equal(b.requestBytes, known, 'sealed bytes changed');
          sealedBytes.set(b.batchId, b.requestBytes);
        }
      };
      for (const cmd of cmds) {
        const key = base + ('key' in cmd ? cmd.key : 0);
        switch (cmd.kind) {
          case 'insert':
            // A key is never reused: writing a row after its unsent delete is blocked by design (see queue.test.ts).
            if (used.has(key)) continue;
            used.add(key);
            c.execute('INSERT INTO notes(id, body) VALUES (?, ?)', [key, cmd.body]);
            model.set(key, cmd.body);
            break;
          case 'update':
            if (!model.has(key)) continue;
            c.execute('UPDATE notes SET body = ? WHERE id = ?', [cmd.body, key]);
            model.set(key, cmd.body);
            break;
          case 'delete':
            if (!model.has(key)) continue;
            c.execute('DELETE FROM notes WHERE id = ?', [key]);
            model.delete(key);
            break;
          case 'sync':
            await c.syncNow();
            break;
          case 'drop':
            server.script('/sync/push', 'drop');
            await c.syncNow();
            server.scripts.delete('/sync/push');
            break;
          case 'unavailable':
            server.script('/sync/push', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'busy', retryable: true } }, retryAfter: '1' });
            await c.syncNow();
            server.scripts.delete('/sync/push');
            break;
          case 'restart':
            c.close();
            c = openClient(server, clientId, { path, pushBatchSize: 2, bundledManifest: manifest() });
            break;
        }
        check();
      }
      // Settle: a few clean runs must send everything.
      for (let i = 0; i < 3 && (await c.syncNow()).completion !== 'idle'; i++);
      check();
      const leftover = c.inspectMutations().filter((m) => !TERMINAL.has(m.status));
      assert.deepEqual(leftover, [], 'nothing left to send');
      assert.ok(c.inspectMutations().every((m) => m.status !== 'server_rejected'), 'a single writer never conflicts');
      const local = c.query('SELECT id, body FROM notes WHERE id >= ? AND id < ? ORDER BY id', [base, base + 100]) as { id: number; body: string }[];
      assert.deepEqual(local, [...model].sort(([a], [b]) => a - b).map(([id, body]) => ({ id, body })));
      const remote = [...(server.rows.get('tbl_notes') ?? new Map())].filter(([k]) => Number(k) >= base && Number(k) < base + 100).map(([, s]) => ({ id: s.row.fld_notes_id, body: s.row.fld_notes_body })).sort((a, b) => Number(a.id) - Number(b.id));
      assert.deepEqual(remote, local);
      // Each mutation was applied by the server at most once across all its batches.
      const applied = [...server.batches.values()].flatMap((b) => (JSON.parse(b.response) as { accepted: { mutation_id: string }[] }).accepted.map((a) => a.mutation_id));
      assert.equal(new Set(applied).size, applied.length);
      c.close();
    }),
    { numRuns: Number(process.env.SYNCHRO_MODEL_RUNS ?? 30) },
  );
});
