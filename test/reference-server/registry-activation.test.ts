/**
 * SYNC-CAP-008 at the decoder: each row event is read under the registry
 * generation whose activation message precedes it in its transaction (or the
 * one in force at the transaction's start), for every interleaving of writes
 * and activation messages.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CaptureFailure } from '../../reference/server/capture/capture-failure.ts';
import type { PgOutputMessage } from '../../reference/server/capture/pgoutput.ts';
import { RegistryTimeline } from '../../reference/server/capture/registry-generations.ts';
import { type GenerationLookup, type RegistrySwitch, rowEvents, type SourceTransaction } from '../../reference/server/capture/transaction.ts';

const OID = 100;
const COLUMNS = ['id', 'title', 'c1'];

/** Generation n syncs id, title and, from generation 2 on, c1. */
function generation(n: number): GenerationLookup {
  const columns = new Set(n >= 2 ? COLUMNS : COLUMNS.slice(0, 2));
  return {
    generation: n,
    lookup: {
      byOid: (oid) => (oid === OID ? { tableId: 't1', pkColumn: 'id', jsonColumns: new Set(), columns, schema: 'public', name: 'tasks' } : undefined),
      registration: (tableId) => (tableId === 't1' ? { relationId: 'r1', kind: 'synced', tableId: 't1', pkColumn: 'id' } : undefined),
    },
  };
}

function registry(initial: number, messages: PgOutputMessage[]): RegistrySwitch {
  const activations = messages.filter((m) => m.tag === 'message' && m.prefix === 'synchro_registry').map((m) => Number((m as { content: Buffer }).content.toString()));
  return { initial: generation(initial), final: generation(activations.at(-1) ?? initial), activate: (content) => generation(Number(content.toString())) };
}

const relation: PgOutputMessage = { tag: 'relation', oid: OID, namespace: 'public', name: 'tasks', replicaIdentity: 'd', columns: COLUMNS.map((name) => ({ name, typeOid: 25, isKey: name === 'id' })) };
const text = (value: string) => ({ kind: 'text' as const, text: value });

/** The version fence of the `n`th registered write of the transaction, an update of row `key` (064 SQL's message). */
function fenceOf(key: string, n: number): Record<string, unknown> {
  return {
    fence_id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    dml_ordinal: n,
    registration_kind: 'synced',
    table_id: 't1',
    relation_id: 'r1',
    physical_schema: 'public',
    physical_relation: 'tasks',
    physical_relation_oid: OID,
    operation: 'update',
    row_version: `v${n}`,
    row_state: 'live',
    old_record_id: key,
    new_record_id: key,
  };
}

/** One update of row `key` and its fence. */
function write(key: string, n: number): PgOutputMessage[] {
  return [
    { tag: 'update', oid: OID, tuple: [text(key), text(`t${n}`), text(`c${n}`)] },
    { tag: 'message', transactional: true, lsn: 1n, prefix: 'synchro_fence', content: Buffer.from(JSON.stringify(fenceOf(key, n))) },
  ];
}
const activation = (n: number): PgOutputMessage => ({ tag: 'message', transactional: true, lsn: 1n, prefix: 'synchro_registry', content: Buffer.from(String(n)) });
const transaction = (messages: PgOutputMessage[]): SourceTransaction => ({ xid: 1, commitLsn: 10n, endLsn: 11n, messages: [relation, ...messages], contentHash: Buffer.alloc(32) });

test('events before an activation message keep the prior generation, events after it use the new one', () => {
  const messages = [...write('r', 1), activation(2), ...write('r', 2)];
  const events = rowEvents(transaction(messages), generation(1).lookup, new Map(), registry(1, messages));
  assert.deepEqual(
    events.map((e) => ({ generation: e.registryGeneration, image: e.image })),
    [
      { generation: 1, image: { id: 'r', title: 't1' } },
      { generation: 2, image: { id: 'r', title: 't2', c1: 'c2' } },
    ],
  );
});

test('for any interleaving of writes and activations, each event uses the latest activation before it', () => {
  const step = fc.oneof(fc.record({ kind: fc.constant('write' as const), key: fc.constantFrom('a', 'b', 'c') }), fc.record({ kind: fc.constant('activate' as const) }));
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 }), fc.array(step, { maxLength: 12 }), (initial, steps) => {
      const messages: PgOutputMessage[] = [];
      const expected: number[] = [];
      let inForce = initial;
      let n = 0;
      for (const s of steps) {
        n += 1;
        if (s.kind === 'activate') {
          inForce = initial + n;
          messages.push(activation(inForce));
        } else {
          messages.push(...write(s.key, n));
          expected.push(inForce);
        }
      }
      const events = rowEvents(transaction(messages), generation(initial).lookup, new Map(), registry(initial, messages));
      assert.deepEqual(
        events.map((e) => e.registryGeneration),
        expected,
      );
    }),
    { seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31), verbose: 1 },
  );
});

test('an activation of an unvalidated generation fails its transaction, naming the relation of the first registered row', async () => {
  const timeline = new RegistryTimeline(async () => ({ lookup: generation(1).lookup, tables: new Map() }));
  // Generation 1 is in force and validated; generation 2 is pending and was never validated.
  const db = {
    query: async (sql: string, params: unknown[] = []) => {
      if (sql.includes('capture_registry_state')) return { rows: [{ g: '1' }] };
      if (sql.includes('SELECT validated, snapshot')) return { rows: [{ validated: params[0] === 1, snapshot: {} }] };
      throw new Error(`unexpected query: ${sql}`);
    },
  };
  await timeline.start(db as never, 'stream-1');
  const tx: SourceTransaction = {
    xid: 7,
    commitLsn: 10n,
    endLsn: 11n,
    contentHash: Buffer.alloc(32),
    messages: [relation, { tag: 'insert', oid: OID, tuple: [text('k1'), text('t'), text('c')] }, { tag: 'message', transactional: true, lsn: 2n, prefix: 'synchro_registry', content: Buffer.from('2') }],
  };
  await assert.rejects(timeline.forTransaction(db as never, tx), (e: unknown) => e instanceof CaptureFailure && e.failureClass === 'validation_failed' && e.tableId === 't1');
});
