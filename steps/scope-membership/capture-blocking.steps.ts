/**
 * Capture that stops instead of guessing: the worker given time to process
 * what was committed, the quarantine record server inspection shows, the
 * public answer a blocked server gives, and the wire history proving no
 * client was ever told to delete a row.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { CaptureCrashPoint } from '../../harness/adapters/server.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import type { SyncWorld } from '../support/world.ts';
import { exchangesOf, keyValue, type Obj, parsed, upstreamOf } from '../wire-values/recorded.ts';

/**
 * Gives the worker `polls` chances to process what was committed. Each wait
 * ends once capture caught up or stopped on a quarantined transaction; a
 * refusal is expected when it is blocked, so it is kept, not thrown: the
 * steps that follow check what the worker did.
 */
When('the capture worker completes {int} polls', async function (this: SyncWorld, polls: number) {
  const server = await this.readyServer();
  const capture = server.capture;
  if (!capture) throw new Error(`server adapter "${server.id}" has no capture capability to let the worker poll`);
  for (let poll = 0; poll < polls; poll += 1) {
    try {
      await capture.awaitMaterialized(this.deadlineMs);
    } catch (error) {
      this.attach(`wait ${poll + 1} for capture ended with: ${(error as Error).message}`, 'text/plain');
    }
  }
});

Then('server inspection shows one active quarantine record with failure class {string}', async function (this: SyncWorld, failureClass: string) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  const rows = await server.inspect.query<{ failure_class: string }>("SELECT failure_class FROM synchro.wal_poison WHERE lifecycle = 'active' ORDER BY id");
  this.assert.equal(
    rows.map((row) => row.failure_class),
    [failureClass],
    'failure classes of the active quarantine records',
  );
});

Then(/^the error body has "retryable" (true|false) and "reason" "([^"]+)"$/, function (this: SyncWorld, flag: string, reason: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Obj;
  this.assert.equal({ retryable: error.retryable, reason: error.reason }, { retryable: flag === 'true', reason }, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

/** Every pull change the server answered client `name` during the scenario. */
Then(/^no response to client "([^"]+)" ever lists a "delete" of row "([^"]+)"$/, async function (this: SyncWorld, name: string, key: string) {
  const deletes: string[] = [];
  let answered = 0;
  for (const exchange of await exchangesOf(this, name, ['pull'])) {
    const answer = upstreamOf(exchange);
    if (answer === undefined) continue;
    answered += 1;
    const changes = ((parsed(answer.body) as Obj | undefined)?.changes ?? []) as Obj[];
    for (const change of changes) if (change.op === 'delete' && String(keyValue(change.pk)) === key) deletes.push(`#${exchange.seq}: ${JSON.stringify(change)}`);
  }
  // With no answer at all the check would hold for a client that never asked.
  this.assert.ok(answered > 0, `client "${name}" got no pull answer in this scenario`);
  this.assert.equal(deletes, [], `deletes of row ${key} sent to client "${name}"`);
});

/**
 * A crash at an exact point of the worker's cycle. The harness has no
 * portable control for it yet: the server adapter would need a capture
 * control arming a kill at a named point (the reference worker has none), so
 * the step fails saying so rather than simulate the crash some other way.
 */
const CRASH_POINTS: Record<string, CaptureCrashPoint> = {
  'after its materialization commit and before the slot advance': 'after-materialization-commit',
  'after the slot advance and before recording the acknowledgement': 'after-slot-advance',
};

Given(/^the capture worker is set to be killed (.+)$/, async function (this: SyncWorld, wording: string) {
  const server = await this.readyServer();
  const point = CRASH_POINTS[wording];
  // An immediate database shutdown would take down a cluster other scenarios share; no adapter control offers it.
  if (point === undefined) return undeterminedWithout(this, `no capture control kills the worker ${wording}; the controls know: ${Object.keys(CRASH_POINTS).join('; ')}`);
  if (!server.capture?.killWorkerAt) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.killWorkerAt() to kill the worker ${wording}`);
  await server.capture.killWorkerAt(point);
  return undefined;
});
