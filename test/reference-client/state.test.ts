import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { Ctx } from '../../reference/client/context.ts';
import { ClientError } from '../../reference/client/errors.ts';
import { Lifecycle } from '../../reference/client/lifecycle.ts';
import { installMetadata } from '../../reference/client/local/metadata.ts';
import { assertTransition, isLegalTransition, isLegalTransitionFrom, legalPairs, STATES } from '../../reference/client/state.ts';
import { instantClock } from './fixtures.ts';

test('exactly 50 of the 121 ordered state pairs are legal', () => {
  assert.equal(STATES.length, 11);
  let legal = 0;
  for (const from of STATES) for (const to of STATES) if (isLegalTransition(from, to)) legal++;
  assert.equal(legal, 50);
  assert.equal(legalPairs().length, 50);
});

test('named illegal pairs and unknown names are refused with a typed non-retryable error', () => {
  for (const [from, to] of [
    ['stopped', 'pulling'],
    ['error', 'ready'],
    ['local_ready', 'backoff'],
    ['backoff', 'ready'],
    ['pushing', 'rebuilding'],
    ['ready', 'bogus'],
    ['bogus', 'ready'],
  ]) {
    assert.equal(isLegalTransition(from, to), false, `${from} -> ${to}`);
    assert.throws(
      () => assertTransition(from, to),
      (e: unknown) => e instanceof ClientError && e.code === 'invalid_state_transition' && e.retryable === false,
    );
  }
  assert.equal(isLegalTransition('backoff', 'pushing'), true);
  assert.equal(isLegalTransition('error', 'local_ready'), true);
});

test('an illegal transition changes no durable state', () => {
  const db = new Database(':memory:');
  installMetadata(db);
  const ctx = { db, clock: instantClock() } as unknown as Ctx;
  const life = new Lifecycle(ctx);
  life.go('local_ready');
  const snapshot = () => JSON.stringify([db.prepare('SELECT * FROM _synchro_client_state').all(), db.prepare('SELECT from_state, to_state FROM _synchro_status_log').all()]);
  const before = snapshot();
  assert.throws(() => life.go('backoff'), ClientError);
  assert.equal(snapshot(), before);
  assert.equal(life.state, 'local_ready');
  life.go('connecting');
  assert.deepEqual(life.log, ['uninitialized', 'local_ready', 'connecting']);
});

test('backoff resumes only the operation it interrupted, or reconnects', () => {
  for (const op of ['pushing', 'pulling', 'rebuilding']) {
    for (const to of ['pushing', 'pulling', 'rebuilding']) assert.equal(isLegalTransitionFrom('backoff', to, op), to === op, `${op}: backoff -> ${to}`);
    assert.equal(isLegalTransitionFrom('backoff', 'connecting', op), true);
  }
  // Without a record of what was interrupted nothing can be resumed, but reconnecting stays allowed.
  assert.equal(isLegalTransitionFrom('backoff', 'pulling', undefined), false);
  assert.equal(isLegalTransitionFrom('backoff', 'connecting', undefined), true);
  // Outside backoff the interrupted operation plays no part, and the map still decides.
  assert.equal(isLegalTransitionFrom('ready', 'pulling', 'pushing'), true);
  assert.equal(isLegalTransitionFrom('stopped', 'pulling', 'pulling'), false);
});
