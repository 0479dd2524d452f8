/**
 * SYNC-MUT-007 Accepted Writes Advance Canonical Row Version
 * (features/mutation-and-data-correctness/accepted-writes-advance-canonical-row-version.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { type Obj, outcomesIn, thatMutation, thatOutcomeOf } from '../support/push-ledger/state.ts';
import type { Reply } from '../support/reply.ts';
import { fieldId, keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { Json } from '../support/wire-client.ts';
import { labelledVersion } from '../support/version-labels.ts';
import { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

/** What a walk of one row sent and got: each mutation with its outcome, in order. */
const walks = new WeakMap<SyncWorld, { mutation: Json; outcome: Obj | undefined }[]>();
const seeds = new WeakMap<SyncWorld, number>();

/** The push answers of the scenario's actions (set-up pushes before them are not counted). */
function actionPushes(world: SyncWorld): Reply[] {
  return world.replies.slice(world.repliesBeforeAction ?? 0).filter((r) => r.endpoint === 'push');
}

function actionOutcomes(world: SyncWorld): Obj[] {
  const outcomes = actionPushes(world).flatMap((r) => (r.status === 200 ? outcomesIn(r) : []));
  world.assert.ok(outcomes.length > 0, 'the scenario pushed and got outcomes');
  return outcomes;
}

const seedNote = (world: SyncWorld) => (seeds.has(world) ? ` (fast-check seed ${seeds.get(world)})` : '');

When(
  /^client "([^"]+)" pushes, one batch after another and each from the version returned before, an insert, an update setting (\w+) "([^"]*)", an update setting \w+ "([^"]*)" and a delete of row "([^"]+)" of table "([^"]+)"$/,
  async function (this: SyncWorld, name: string, field: string, first: string, second: string, pk: string, table: string) {
    const client = this.wire(name);
    const walk: { mutation: Json; outcome: Obj | undefined }[] = [];
    walks.set(this, walk);
    const steps: { op: 'insert' | 'update' | 'delete'; columns?: Record<string, unknown> }[] = [
      { op: 'insert', columns: { owner_id: client.userId, [field]: 'start' } },
      { op: 'update', columns: { [field]: first } },
      { op: 'update', columns: { [field]: second } },
      { op: 'delete' },
    ];
    let version: string | undefined;
    for (const step of steps) {
      const mutation = client.mutation({ op: step.op, table, pk, ...(step.columns === undefined ? {} : { columns: step.columns }), ...(version === undefined ? {} : { base_version: version }) });
      const reply = await client.push([mutation]);
      const outcome = reply.status === 200 ? outcomesIn(reply)[0] : undefined;
      walk.push({ mutation, outcome });
      // The next write goes out from the version this one returned; a missing one ends the walk early.
      if (typeof outcome?.server_version !== 'string') break;
      version = outcome.server_version;
    }
  },
);

function walkOf(world: SyncWorld) {
  const walk = walks.get(world);
  if (walk === undefined) throw new Error('no row was walked through its transitions in this scenario');
  return walk;
}

Then('every outcome is {string}', function (this: SyncWorld, status: string) {
  const walk = walkOf(this);
  this.assert.equal(walk.length, 4, 'the walk reached all four writes');
  this.assert.equal(walk.map((w) => w.outcome?.status), walk.map(() => status), `outcomes of the walk: ${JSON.stringify(walk.map((w) => w.outcome))}`);
});

Then(/^every server_version matches (.+)$/, function (this: SyncWorld, pattern: string) {
  const shape = new RegExp(pattern);
  const versions = actionOutcomes(this).filter((o) => Object.hasOwn(o, 'server_version')).map((o) => o.server_version);
  this.assert.ok(versions.length > 0, 'some outcome carries a server_version');
  this.assert.equal(versions.filter((v) => typeof v !== 'string' || !shape.test(v)), [], `server_versions outside ${pattern}${seedNote(this)}`);
});

Then('the four server_versions are pairwise different', function (this: SyncWorld) {
  const versions = walkOf(this).map((w) => w.outcome?.server_version);
  this.assert.equal(versions.length, 4, 'four writes were answered');
  this.assert.equal(new Set(versions).size, 4, `the versions of the walk: ${JSON.stringify(versions)}`);
});

Then("each update's and the delete's server_version differs from its base_version", function (this: SyncWorld) {
  const based = walkOf(this).filter((w) => w.mutation.op !== 'insert');
  this.assert.equal(based.length, 3, 'two updates and a delete were sent');
  for (const { mutation, outcome } of based) this.assert.notEqual(outcome?.server_version, mutation.base_version, `the ${String(mutation.op)} from ${String(mutation.base_version)}`);
});

Then('that outcome has a server_version different from {string}', function (this: SyncWorld, label: string) {
  const outcome = thatOutcomeOf(this);
  this.assert.ok(typeof outcome.server_version === 'string', `that outcome carries a server_version: ${JSON.stringify(outcome)}`);
  this.assert.notEqual(outcome.server_version, labelledVersion(this, label), `server_version of that outcome against ${label}`);
});

When(
  /^client "([^"]+)" pushes (\d+) generated batches of inserts, updates and deletes over the keys n-(\d+) to n-(\d+) of table "([^"]+)" and t-(\d+) to t-(\d+) of table "([^"]+)", each update or delete based on the latest version the harness saw for its row$/,
  async function (this: SyncWorld, name: string, count: string, nLow: string, nHigh: string, notes: string, tLow: string, tHigh: string, tasks: string) {
    const client = this.wire(name);
    const seed = generatedSeed();
    seeds.set(this, seed);
    const key = fc.oneof(
      fc.integer({ min: Number(nLow), max: Number(nHigh) }).map((k) => ({ table: notes, pk: `n-${k}`, field: 'body' })),
      fc.integer({ min: Number(tLow), max: Number(tHigh) }).map((k) => ({ table: tasks, pk: `t-${k}`, field: 'title' })),
    );
    const draw = fc.record({ op: fc.constantFrom('insert' as const, 'update' as const, 'update' as const, 'delete' as const), key, text: fc.string({ minLength: 1, maxLength: 8 }) });
    const batches = fc.sample(fc.array(draw, { minLength: 1, maxLength: 5 }), { numRuns: Number(count), seed });
    for (const batch of batches) {
      const mutations = batch.map(({ op, key: k, text }) => {
        const held = this.heldVersions.get(SyncWorld.rowKey(client.tableId(k.table), k.pk));
        const columns = op === 'insert' ? { owner_id: client.userId, [k.field]: text } : op === 'update' ? { [k.field]: text } : undefined;
        return client.mutation({ op, table: k.table, pk: k.pk, ...(columns === undefined ? {} : { columns }), ...(op === 'insert' ? {} : { base_version: held ?? 'sv-never-issued' }) });
      });
      await client.push(mutations);
    }
  },
);

Then('for every row, the server_versions of its applied outcomes are pairwise different', function (this: SyncWorld) {
  const byRow = new Map<string, string[]>();
  for (const o of actionOutcomes(this)) {
    if (o.status !== 'applied') continue;
    const key = `${String(o.table)}/${String(keyValue(o.pk))}`;
    byRow.set(key, [...(byRow.get(key) ?? []), String(o.server_version)]);
  }
  this.assert.ok(byRow.size > 0, `some write was applied${seedNote(this)}`);
  const repeated = [...byRow].filter(([, versions]) => new Set(versions).size !== versions.length).map(([row, versions]) => `${row}: ${versions.join(', ')}`);
  this.assert.equal(repeated, [], `rows that saw one version twice${seedNote(this)}`);
});

Then("that outcome's server_version neither equals nor contains {string}", function (this: SyncWorld, text: string) {
  const version = thatOutcomeOf(this).server_version;
  this.assert.ok(typeof version === 'string', `that outcome carries a server_version: ${String(version)}`);
  this.assert.ok(!String(version).includes(text), `server_version ${String(version)} holds ${text}`);
  // The instant in other spellings a server might derive from it: its digits alone.
  this.assert.ok(!String(version).includes(text.replace(/\D/g, '')), `server_version ${String(version)} holds the digits of ${text}`);
});

Then(
  /^that outcome's server_row updated_at is not "([^"]*)" and lies between the moments the harness sent the request and received the response, with a tolerance of (\d+) seconds for clock skew$/,
  async function (this: SyncWorld, clientVersion: string, seconds: string) {
    const outcome = thatOutcomeOf(this);
    const that = thatMutation(this);
    const table = await tableNamed(this, String(outcome.table));
    const value = (outcome.server_row as Obj | undefined)?.[fieldId(table, 'updated_at')];
    this.assert.ok(typeof value === 'string', `the server_row carries updated_at: ${JSON.stringify(outcome.server_row)}`);
    this.assert.notEqual(value, clientVersion, 'updated_at of the server_row');
    const at = Date.parse(String(value));
    const slack = Number(seconds) * 1000;
    this.assert.ok(at >= that.sentAt - slack && at <= that.answeredAt + slack, `updated_at ${String(value)} lies outside ${new Date(that.sentAt).toISOString()} .. ${new Date(that.answeredAt).toISOString()} ± ${seconds} s`);
  },
);

Then('the two applied outcomes have different server_versions', function (this: SyncWorld) {
  const applied = actionOutcomes(this).filter((o) => o.status === 'applied');
  this.assert.equal(applied.length, 2, `two writes were applied: ${JSON.stringify(applied)}`);
  this.assert.notEqual(applied[0]?.server_version, applied[1]?.server_version, 'the versions of the two applied writes');
});
