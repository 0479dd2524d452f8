import assert from 'node:assert/strict';
import { test } from 'node:test';
import { correlateFences, type Fence, readFence } from '../../reference/server/capture/fence-correlation.ts';
import { CaptureFailure, type RowEvent, rowEvents, type SourceTransaction } from '../../reference/server/capture/transaction.ts';

const noTables = { byOid: () => undefined, registration: () => undefined };

/** A source transaction holding one transactional fence message with `content`. */
function withFence(content: string | Buffer): SourceTransaction {
  return {
    xid: 1,
    commitLsn: 10n,
    endLsn: 11n,
    messages: [{ tag: 'message', transactional: true, lsn: 9n, prefix: 'synchro_fence', content: typeof content === 'string' ? Buffer.from(content, 'utf8') : content }],
    contentHash: Buffer.alloc(32),
  };
}

function failureOf(run: () => unknown): CaptureFailure {
  try {
    run();
  } catch (error) {
    if (error instanceof CaptureFailure) return error;
    throw error;
  }
  throw new Error('ran without a failure');
}

const classOf = (f: CaptureFailure) => ({ failureClass: f.failureClass, tableId: f.tableId });

test('a fence message whose bytes are not UTF-8 text fails decoding', () => {
  const failure = failureOf(() => rowEvents(withFence(Buffer.from([0xff, 0xfe, 0x7b])), noTables, new Map()));
  assert.deepEqual(classOf(failure), { failureClass: 'decode_failed', tableId: null });
});

test('a fence message that is not JSON, lacks a member or has the old shape is a correlation failure', () => {
  for (const content of ['{"fence_id":', 'null', JSON.stringify({ t: 't1', k: 'row-1', v: 'v1', s: 'live' })]) {
    const failure = failureOf(() => rowEvents(withFence(content), noTables, new Map()));
    assert.equal(failure.failureClass, 'fence_correlation_failed', content);
  }
});

const relation = { relationId: 'r1', kind: 'synced' as const, tableId: 't1', pkColumn: 'id' };

function fence(ordinal: number, key: string, op: Fence['operation'] = 'update', extra: Partial<Fence> = {}): Fence {
  return {
    fenceId: `00000000-0000-4000-8000-${String(ordinal).padStart(12, '0')}`,
    ordinal,
    kind: 'synced',
    relationId: 'r1',
    relationOid: 42,
    schema: 'public',
    relation: 'tasks',
    operation: op,
    version: `v-${ordinal}`,
    state: op === 'delete' ? 'deleted' : 'live',
    tableId: 't1',
    oldKey: op === 'insert' ? null : key,
    newKey: op === 'delete' ? null : key,
    message: {},
    ...extra,
  };
}

function event(key: string, op: RowEvent['op'] = 'update'): RowEvent {
  return { ordinal: 0, relationOid: 42, tableId: 't1', op, pkText: key, image: op === 'delete' ? null : { id: key }, fence: { version: '', state: 'live' } };
}

test('events pair per row identity with the fences in ordinal order, rows may interleave', () => {
  const events = [event('a'), event('b'), event('a'), event('b', 'delete')];
  // Decoded in a different order across rows, each row's fences in its own order.
  correlateFences(events, [fence(2, 'b'), fence(1, 'a'), fence(3, 'a'), fence(4, 'b', 'delete')], () => relation);
  assert.deepEqual(
    events.map((e) => [e.pkText, e.fence.ordinal, e.fence.version]),
    [
      ['a', 1, 'v-1'],
      ['b', 2, 'v-2'],
      ['a', 3, 'v-3'],
      ['b', 4, 'v-4'],
    ],
  );
});

test('a missing, extra, duplicate, reordered or mismatched fence is a correlation failure', () => {
  const cases: Array<[string, RowEvent[], Fence[]]> = [
    ['missing', [event('a'), event('a')], [fence(1, 'a')]],
    ['extra', [event('a')], [fence(1, 'a'), fence(2, 'a')]],
    ['duplicate fence ID', [event('a'), event('b')], [fence(1, 'a'), fence(2, 'b', 'update', { fenceId: fence(1, 'a').fenceId })]],
    ['duplicate ordinal', [event('a'), event('b')], [fence(1, 'a'), fence(1, 'b', 'update', { fenceId: fence(2, 'b').fenceId, version: 'v-x' })]],
    ['reordered within a row', [event('a'), event('a')], [fence(2, 'a'), fence(1, 'a')]],
    ['operation', [event('a')], [fence(1, 'a', 'delete')]],
    ['kind', [event('a')], [fence(1, 'a', 'update', { kind: 'capture_dependency', tableId: null })]],
    ['version of another fence', [event('a'), event('b')], [fence(1, 'a'), fence(2, 'b', 'update', { version: 'v-1' })]],
  ];
  for (const [name, events, fences] of cases) {
    assert.equal(failureOf(() => correlateFences(events, fences, () => relation)).failureClass, 'fence_correlation_failed', name);
  }
});

test('a capture-dependency fence carries no table ID and its capture key', () => {
  const base = {
    fence_id: '00000000-0000-4000-8000-000000000001',
    dml_ordinal: 1,
    relation_id: 'r2',
    physical_schema: 'public',
    physical_relation: 'owners',
    physical_relation_oid: 43,
    operation: 'insert',
    row_version: 'v1',
    row_state: 'live',
  };
  const read = readFence(Buffer.from(JSON.stringify({ ...base, registration_kind: 'capture_dependency', old_capture_key: null, new_capture_key: { id: 'alice' } })), null);
  assert.deepEqual([read.kind, read.tableId, read.newKey], ['capture_dependency', null, 'alice']);
  const withTable = JSON.stringify({ ...base, registration_kind: 'capture_dependency', table_id: 't2', new_capture_key: { id: 'alice' } });
  assert.equal(failureOf(() => readFence(Buffer.from(withTable), null)).failureClass, 'fence_correlation_failed');
  const syncedWithout = JSON.stringify({ ...base, registration_kind: 'synced', new_record_id: 'alice' });
  assert.equal(failureOf(() => readFence(Buffer.from(syncedWithout), null)).failureClass, 'fence_correlation_failed');
});
