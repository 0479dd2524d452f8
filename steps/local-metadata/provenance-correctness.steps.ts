/**
 * Steps of SYNC-LOCAL-005 Provenance Correctness: the provenance edges (scope,
 * table, record) the client under test reports after rows move between
 * scopes, scopes are granted and revoked and a scope is rebuilt, compared
 * with what the server's membership calls for, and the rows it keeps.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { generatedSeed } from '../support/generated-seed.ts';
import { blockPulls, edgeLine, localKeys, mintGeneration, namedProvenance, scopesOfRow, unblockPulls } from '../support/local-queue/provenance.ts';
import { histories, type Observation, runHistories } from '../support/local-queue/provenance-histories.ts';
import { keyValue, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import { DEFAULT_DEADLINE_MS, type SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:provenance |still has row |no longer has row |rebuilt scope )/);
processPhrase(/^the proxy (?:blocks|unblocks) pull requests from client "([^"]+)"$/);
processPhrase(/^for many generated histories the harness applies, with a sync of client "([^"]+)"/);
processPhrase(/^after every step client "([^"]+)" /);
processPhrase(/^the pull responses to client "([^"]+)" held /);

Given('table {string} places each row in one scope {string} for each comma-separated id in {string}', function (this: SyncWorld, name: string, template: string, column: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already installed: declare its placements before the first server step`);
  if (!table.columns.some((c) => c.name === column)) throw new Error(`table "${name}" has no column "${column}"`);
  if (!/\{[^}]+\}/.test(template)) throw new Error(`scope template "${template}" has no {...} part for the listed id`);
  table.eachListed = [...(table.eachListed ?? []), { template, column }];
});

Then('client {string} provenance is exactly:', async function (this: SyncWorld, name: string, table: DataTable) {
  const expected = table.hashes().map((row) => edgeLine({ scope: row.scope ?? '', table: row.table ?? '', record: row.record ?? '' }));
  const reported = (await namedProvenance(this, name)).map(edgeLine);
  this.assert.equal(reported.sort(), expected.sort(), `provenance edges client "${name}" reports`);
});

Then(/^client "([^"]+)" provenance for row "([^"]+)" of "([^"]+)" is exactly (\[.*\])$/, async function (this: SyncWorld, name: string, record: string, table: string, list: string) {
  const expected = (JSON.parse(list) as string[]).sort();
  this.assert.equal(await scopesOfRow(this, name, table, record), expected, `scopes client "${name}" records for row ${record} of ${table}`);
});

Then('client {string} provenance for row {string} of {string} does not contain {string}', async function (this: SyncWorld, name: string, record: string, table: string, scope: string) {
  const scopes = await scopesOfRow(this, name, table, record);
  this.assert.ok(!scopes.includes(scope), `client "${name}" records ${scope} for row ${record} of ${table}: ${scopes.join(', ')}`);
});

async function assertHeld(world: SyncWorld, name: string, rows: [string, string][], held: boolean): Promise<void> {
  for (const [record, table] of rows) {
    const keys = await localKeys(world, name, table);
    world.assert.equal(keys.includes(record), held, `client "${name}" ${held ? 'holds' : 'still holds'} row ${record} of ${table} (it holds ${keys.join(', ') || 'none'})`);
  }
}

Then('client {string} still has row {string} of {string}', async function (this: SyncWorld, name: string, record: string, table: string) {
  await assertHeld(this, name, [[record, table]], true);
});

Then('client {string} still has row {string} of {string} and row {string} of {string}', async function (this: SyncWorld, name: string, first: string, firstTable: string, second: string, secondTable: string) {
  await assertHeld(this, name, [[first, firstTable], [second, secondTable]], true);
});

Then('client {string} no longer has row {string} of {string}', async function (this: SyncWorld, name: string, record: string, table: string) {
  await assertHeld(this, name, [[record, table]], false);
});

Then('the pull responses to client {string} held a delete of {string} in scope {string}', async function (this: SyncWorld, name: string, record: string, scope: string) {
  const deletes: string[] = [];
  for (const exchange of await exchangesOf(this, name, { endpoints: ['pull'] })) {
    const answer = deliveredOf(exchange);
    if (answer?.status !== 200) continue;
    for (const change of ((bodyOf(answer.body) as Obj | undefined)?.changes ?? []) as Obj[]) {
      if (change.op === 'delete') deletes.push(`${String(change.scope)} ${String(keyValue(change.pk))}`);
    }
  }
  this.assert.ok(deletes.includes(`${scope} ${record}`), `the pull answers client "${name}" was given hold no delete of ${record} in ${scope} (deletes: ${deletes.join(', ') || 'none'})`);
});

Given('the proxy blocks pull requests from client {string}', async function (this: SyncWorld, name: string) {
  await blockPulls(this, name);
});

When('the proxy unblocks pull requests from client {string}', function (this: SyncWorld, name: string) {
  unblockPulls(this, name);
});

When('the operator changes the membership rule of {string} so that it mints a new membership generation for scope {string}', async function (this: SyncWorld, table: string, scope: string) {
  await mintGeneration(this, table, scope);
});

Then('client {string} rebuilt scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const window = this.syncWindows.filter((w) => w.client === name).at(-1);
  if (window === undefined) throw new Error(`client "${name}" did not sync in this scenario`);
  const rebuilds = (await exchangesOf(this, name, { endpoints: ['rebuild'], from: window.from, to: window.to })).map((e) => ({ request: bodyOf(e.requestBody) as Obj, answer: deliveredOf(e) }));
  const ofScope = rebuilds.filter((r) => r.request?.scope === scope);
  this.assert.ok(ofScope[0]?.request.cursor === null, `the last sync of client "${name}" started a rebuild of ${scope} from cursor null (rebuilds of: ${rebuilds.map((r) => String(r.request?.scope)).join(', ') || 'none'})`);
  const last = ofScope.at(-1)?.answer;
  this.assert.ok(last?.status === 200 && (bodyOf(last.body) as Obj).has_more === false, `the rebuild of ${scope} by client "${name}" reached its final page`);
});

const drawn = new WeakMap<SyncWorld, { seed: number; observations: Observation[] }>();

When(
  /^for many generated histories the harness applies, with a sync of client "([^"]+)" after each step, a random sequence of 1 to 12 steps drawn from: .+ for user "([^"]+)"$/,
  { timeout: 20 * DEFAULT_DEADLINE_MS },
  async function (this: SyncWorld, name: string, user: string) {
    const seed = generatedSeed();
    const cases = fc.sample(histories, { numRuns: 6, seed });
    // The drawn histories are attached, so a failing run can be read and replayed with its seed.
    this.attach(JSON.stringify({ seed, cases }), 'application/json');
    const assigned = new Set(this.stepTexts.flatMap((text) => [...text.matchAll(new RegExp(`^user "${user}" is assigned scope "([^"]+)"$`, 'g'))].map((m) => m[1] as string)));
    await tableNamed(this, 'notes');
    drawn.set(this, { seed, observations: await runHistories(this, name, user, assigned, cases) });
  },
);

function observationsOf(world: SyncWorld): { seed: number; observations: Observation[] } {
  const run = drawn.get(world);
  if (run === undefined) throw new Error('no generated histories ran in this scenario');
  return run;
}

Then(/^after every step client "([^"]+)" provenance equals, for each row the server materializes, the set of scopes (\w+) is assigned that contain that row$/, function (this: SyncWorld, name: string, _user: string) {
  const { seed, observations } = observationsOf(this);
  this.assert.ok(observations.length > 0, `no history step ran (seed ${seed})`);
  const wrong = observations.filter((o) => JSON.stringify(o.reported) !== JSON.stringify(o.expected));
  const first = wrong[0];
  this.assert.equal(
    wrong.map((o) => `history ${o.history} step ${o.step} (${o.did})`),
    [],
    `steps after which client "${name}" reported provenance other than the server's membership (seed ${seed}; SYNCHRO_SEED=${seed} replays)${first ? `; first: reported [${first.reported.join('; ')}], expected [${first.expected.join('; ')}]` : ''}`,
  );
});

Then(/^after every step client "([^"]+)" holds exactly the rows with nonempty provenance$/, function (this: SyncWorld, name: string) {
  const { seed, observations } = observationsOf(this);
  this.assert.ok(observations.length > 0, `no history step ran (seed ${seed})`);
  const justified = (o: Observation) => [...new Set(o.reported.map((line) => line.split(' ').slice(1).join(' ')))].sort();
  const wrong = observations.filter((o) => JSON.stringify(o.held) !== JSON.stringify(justified(o)));
  const first = wrong[0];
  this.assert.equal(
    wrong.map((o) => `history ${o.history} step ${o.step} (${o.did})`),
    [],
    `steps after which client "${name}" held rows other than those with provenance (seed ${seed})${first ? `; first: held [${first.held.join('; ')}], with provenance [${justified(first).join('; ')}]` : ''}`,
  );
});
