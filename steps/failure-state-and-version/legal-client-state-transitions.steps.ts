/**
 * SYNC-STATE-004 Legal Client State Transitions
 * (features/failure-state-and-version/legal-client-state-transitions.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { isLegalPair, lifecycle, pairsOf, parsePairs, quoted, snapshotDifference, snapshotOf, statusOf, waitUntil } from '../support/client-lifecycle/observe.ts';
import { exchangesIn } from '../support/exchanges.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the transition validator of client "([^"]+)"/);

processPhrase(/^the harness snapshots the durable sync state of client "([^"]+)"$/);

processPhrase(/^the durable sync state of client "([^"]+)" equals the snapshot$/);

processPhrase(/^the application (?:stops|starts|asks) client "([^"]+)"/);

processPhrase(/^every consecutive pair of states in the status log of client "([^"]+)"/);

processPhrase(/^the status log of client "([^"]+)"/);

processPhrase(/^the state client "([^"]+)" entered right after/);

processPhrase(/^client "([^"]+)" sent no request after it was stopped$/);

interface Verdict {
  legal: boolean;
  error?: { type: string; retryable: boolean };
}

/** Operations a backoff can resume; a pair leaving backoff for one is judged as resuming that very operation unless a row names another. */
const RESUMABLE = ['pushing', 'pulling', 'rebuilding'];

/** Verdicts of a table of pairs, each asked separately; failures list every pair that got the wrong one. */
const tableVerdicts = new WeakMap<SyncWorld, { from: string; to: string; expected?: string; verdict: Verdict }[]>();

async function askEach(world: SyncWorld, name: string, rows: { from: string; to: string; interrupted?: string; expected?: string }[]): Promise<void> {
  const client = await world.process(name);
  const out: { from: string; to: string; expected?: string; verdict: Verdict }[] = [];
  for (const row of rows) {
    const interrupted = row.interrupted ?? (row.from === 'backoff' && RESUMABLE.includes(row.to) ? row.to : undefined);
    const verdict = await client.call<Verdict>('validateTransition', { from: row.from, to: row.to, ...(interrupted === undefined ? {} : { interrupted }) });
    out.push({ from: row.from, to: row.to, ...(row.expected === undefined ? {} : { expected: row.expected }), verdict });
  }
  tableVerdicts.set(world, out);
}

function tabled(world: SyncWorld): { from: string; to: string; expected?: string; verdict: Verdict }[] {
  const found = tableVerdicts.get(world);
  if (!found) throw new Error('the transition validator was not asked about a table of pairs in this scenario');
  return found;
}

When(/^the transition validator of client "([^"]+)" is asked about each of these (\d+) pairs:$/, async function (this: SyncWorld, name: string, count: string, table: DataTable) {
  const rows = table.hashes() as { from: string; to: string }[];
  if (rows.length !== Number(count)) throw new Error(`the table lists ${rows.length} pairs, not ${count}`);
  if (new Set(rows.map((r) => `${r.from}>${r.to}`)).size !== rows.length) throw new Error('the table lists a pair twice');
  await askEach(this, name, rows);
});

When(
  'the transition validator of client {string} is asked to leave {string} for each of these targets with the persisted interrupted operation:',
  async function (this: SyncWorld, name: string, from: string, table: DataTable) {
    const rows = (table.hashes() as { interrupted: string; to: string; verdict: string }[]).map((r) => ({ from, to: r.to, interrupted: r.interrupted, expected: r.verdict }));
    await askEach(this, name, rows);
  },
);

Then('the validator accepts each of them', function (this: SyncWorld) {
  const verdicts = tabled(this);
  this.assert.equal(
    verdicts.filter((v) => v.verdict.legal !== true).map((v) => `${v.from} -> ${v.to}`),
    [],
    'listed transitions the validator refused',
  );
});

function refusedAs(verdict: Verdict, type: string): boolean {
  return verdict.legal === false && verdict.error?.type === type && verdict.error.retryable === false;
}

Then('the validator refuses each of them with the non-retryable local contract error {string}', function (this: SyncWorld, type: string) {
  const verdicts = tabled(this);
  this.assert.equal(
    verdicts.filter((v) => !refusedAs(v.verdict, type)).map((v) => `${v.from} -> ${v.to}: ${JSON.stringify(v.verdict)}`),
    [],
    `transitions not refused with the non-retryable error ${type}`,
  );
});

Then('the validator gives each of them its verdict', function (this: SyncWorld) {
  const wrong = tabled(this).filter((v) => {
    if (v.expected === 'accepts the transition') return v.verdict.legal !== true;
    const refusal = /^refuses it with the non-retryable local contract error "([a-z_]+)"$/.exec(v.expected ?? '');
    if (!refusal) throw new Error(`unknown verdict "${v.expected}"`);
    return !refusedAs(v.verdict, refusal[1] as string);
  });
  this.assert.equal(
    wrong.map((v) => `${v.from} -> ${v.to}: expected "${v.expected}", got ${JSON.stringify(v.verdict)}`),
    [],
    'verdicts on leaving backoff',
  );
});

Given('the harness snapshots the durable sync state of client {string}', async function (this: SyncWorld, name: string) {
  lifecycle(this).snapshot = await snapshotOf(await this.process(name));
});

Then('the durable sync state of client {string} equals the snapshot', async function (this: SyncWorld, name: string) {
  const before = lifecycle(this).snapshot;
  if (!before) throw new Error('no snapshot was taken earlier in this scenario');
  const after = await snapshotOf(await this.process(name));
  this.assert.equal(after.digest, before.digest, `durable sync state of client "${name}" changed (${snapshotDifference(before, after)})`);
});

When('the application stops client {string}', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await client.call('stop');
  lifecycle(this).stoppedAt.set(name, (await this.proxy()).exchanges.length);
});

When('the application starts client {string}', async function (this: SyncWorld, name: string) {
  await (await this.process(name)).call('start');
});

When(/^(\d+) seconds pass$/, async function (this: SyncWorld, seconds: string) {
  // Time passing is the stimulus here (timers must not leave error), not a wait for work to finish.
  await waitUntil(Date.now() + Number(seconds) * 1000, this.deadlineMs, `${seconds} seconds`);
});

Then('every consecutive pair of states in the status log of client {string} is one of the 50 legal pairs', async function (this: SyncWorld, name: string) {
  const { statusLog } = await statusOf(await this.process(name));
  const illegal = pairsOf(statusLog).filter(([from, to]) => !isLegalPair(from, to));
  this.assert.ok(statusLog.length > 1, `client "${name}" reported no transition at all`);
  this.assert.equal(illegal, [], `illegal pairs in the status log ${statusLog.join(' -> ')}`);
});

Then(/^the status log of client "([^"]+)" contains the pairs (.+)$/, async function (this: SyncWorld, name: string, list: string) {
  const { statusLog } = await statusOf(await this.process(name));
  const seen = new Set(pairsOf(statusLog).map(([a, b]) => `${a} -> ${b}`));
  const wanted = parsePairs(list).map(([a, b]) => `${a} -> ${b}`);
  this.assert.ok(wanted.length > 0, `no pair could be read from: ${list}`);
  this.assert.equal(
    wanted.filter((pair) => !seen.has(pair)),
    [],
    `pairs missing from the status log ${statusLog.join(' -> ')}`,
  );
});

Then(/^the status log of client "([^"]+)" has no pair "([a-z_]+)" -> "([a-z_]+)"$/, async function (this: SyncWorld, name: string, from: string, to: string) {
  const { statusLog } = await statusOf(await this.process(name));
  this.assert.ok(statusLog.length > 0, `client "${name}" reports an empty status log`);
  this.assert.equal(
    pairsOf(statusLog).filter(([a, b]) => a === from && b === to).length,
    0,
    `status log ${statusLog.join(' -> ')}`,
  );
});

Then(/^the status log of client "([^"]+)" has no pair leaving "([a-z_]+)" other than "([a-z_]+)" -> "([a-z_]+)"$/, async function (this: SyncWorld, name: string, from: string, _same: string, allowed: string) {
  const { statusLog } = await statusOf(await this.process(name));
  const leaving = pairsOf(statusLog).filter(([a, b]) => a === from && b !== allowed);
  this.assert.ok(statusLog.includes(from), `client "${name}" never entered ${from}`);
  this.assert.equal(leaving, [], `status log ${statusLog.join(' -> ')}`);
});

Then(/^the status log of client "([^"]+)" continues with (.+)$/, async function (this: SyncWorld, name: string, sequence: string) {
  const expected = quoted(sequence);
  const { statusLog } = await statusOf(await this.process(name));
  const from = lifecycle(this).logMarks.get(name);
  this.assert.ok(from !== undefined, `nothing marked where the status log of client "${name}" should continue`);
  this.assert.equal(statusLog.slice(from, from + expected.length), expected, `status log ${statusLog.join(' -> ')} from entry ${from}`);
});

Then(/^the state client "([^"]+)" entered right after "([a-z_]+)" is "([a-z_]+)" or "([a-z_]+)"$/, async function (this: SyncWorld, name: string, after: string, first: string, second: string) {
  const { statusLog } = await statusOf(await this.process(name));
  const next = pairsOf(statusLog)
    .filter(([a]) => a === after)
    .map(([, b]) => b);
  this.assert.ok(next.length > 0, `client "${name}" never left ${after}: ${statusLog.join(' -> ')}`);
  this.assert.equal(
    next.filter((state) => state !== first && state !== second),
    [],
    `states entered right after ${after}: ${statusLog.join(' -> ')}`,
  );
});

Then('client {string} sent no request after it was stopped', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const mark = lifecycle(this).stoppedAt.get(name);
  this.assert.ok(mark !== undefined, `client "${name}" was not stopped in this scenario`);
  const after = exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, from: mark, unfinished: true });
  this.assert.equal(
    after.map((e) => e.endpoint),
    [],
    `requests of client "${name}" after it was stopped`,
  );
});

Then(/^the status log of client "([^"]+)" after the restart begins (.+)$/, async function (this: SyncWorld, name: string, sequence: string) {
  const expected = quoted(sequence);
  this.assert.ok(lifecycle(this).restarted.has(name), `client "${name}" was not restarted in this scenario`);
  const { statusLog } = await statusOf(await this.process(name));
  this.assert.equal(statusLog.slice(0, expected.length), expected, `status log after the restart: ${statusLog.join(' -> ')}`);
});

Then('the connect request was sent no earlier than the stored retry time', async function (this: SyncWorld) {
  const state = lifecycle(this);
  const [name, restart] = [...state.restarted.entries()][0] ?? [];
  if (name === undefined || restart === undefined) throw new Error('no client was restarted in this scenario');
  const client = await this.process(name);
  const failure = state.failures.filter((f) => f.client === name).pop();
  if (!failure?.retryAfterSeconds) throw new Error('no failure with Retry-After was arranged before the restart');
  const { statusLog, statusTimes } = await statusOf(client);
  const connects = exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, endpoints: ['connect'], from: restart.mark, unfinished: true });
  this.assert.ok(connects.length > 0, `client "${name}" sent no connect request after the restart`);
  this.assert.ok(Array.isArray(statusTimes) && statusTimes.length === statusLog.length, `client "${name}" reports no time for each state`);
  // The connect goes out in "connecting"; that state must not be entered before the retry time the failure fixed.
  const at = statusTimes[statusLog.indexOf('connecting')] ?? 0;
  const earliest = (state.stage?.hits.find((h) => h.rule === failure.rule)?.at ?? failure.arrangedAt) + failure.retryAfterSeconds * 1000;
  this.assert.ok(at >= earliest, `client "${name}" entered connecting at ${new Date(at).toISOString()}, before the retry time ${new Date(earliest).toISOString()}`);
});
