import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CaptureFailure, rowEvents, type SourceTransaction } from '../../reference/server/capture/transaction.ts';

const noTables = { byOid: () => undefined };

/** A source transaction holding one transactional fence message with `content`. */
function withFence(content: string): SourceTransaction {
  return {
    xid: 1,
    commitLsn: 10n,
    endLsn: 11n,
    messages: [{ tag: 'message', transactional: true, lsn: 9n, prefix: 'synchro_fence', content: Buffer.from(content, 'utf8') }],
    contentHash: Buffer.alloc(32),
  };
}

function failureOf(tx: SourceTransaction): CaptureFailure {
  try {
    rowEvents(tx, noTables, new Map());
  } catch (error) {
    if (error instanceof CaptureFailure) return error;
    throw error;
  }
  throw new Error('the transaction was decoded without a failure');
}

test('a fence message that names its table but lacks a member fails decoding against that table', () => {
  const failure = failureOf(withFence(JSON.stringify({ t: 't1', k: 'row-1' })));
  assert.deepEqual({ failureClass: failure.failureClass, tableId: failure.tableId }, { failureClass: 'decode_failed', tableId: 't1' });
});

test('a fence message that is not JSON, or names no table, fails decoding without a table', () => {
  for (const content of ['not json', JSON.stringify({ k: 'row-1', v: '1', s: 'live' }), 'null']) {
    const failure = failureOf(withFence(content));
    assert.deepEqual({ failureClass: failure.failureClass, tableId: failure.tableId }, { failureClass: 'decode_failed', tableId: null }, content);
  }
});
