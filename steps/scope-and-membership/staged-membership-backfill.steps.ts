/**
 * Steps of SYNC-SCOPE-005 Staged Membership Backfill: the operator starts a
 * rule change as a staged backfill, the harness holds it between batches
 * while clients pull and rebuild, then releases it; server inspection reads
 * the live and staged edges and the activation record.
 */
import { Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { generatedSeed } from '../support/generated-seed.ts';
import {
  backfillServer,
  backfillState,
  expectedKeys,
  fillTemplate,
  holdAfter,
  liveEdges,
  rebuiltKeys,
  release,
  sourceRows,
  startBackfill,
  templateList,
} from '../support/scope-backfill/backfill.ts';
import { listed } from '../support/scope-generations/invalidation.ts';
import type { SyncWorld } from '../support/world.ts';

const ORDINALS: Record<string, number> = { first: 1, second: 2 };

When('the operator starts a membership reconfiguration of {string} to scopes {string} with backfill batch size {int}', async function (this: SyncWorld, table: string, templates: string, batchSize: number) {
  const server = await backfillServer(this);
  if (server === 'skipped') return server;
  await startBackfill(this, server, table, templateList(templates), batchSize);
});

When(/^the harness holds the backfill after its (first|second) batch$/, async function (this: SyncWorld, ordinal: string) {
  await holdAfter(this, ORDINALS[ordinal] ?? 0);
});

When('the harness releases the backfill and the reconfiguration activates', async function (this: SyncWorld) {
  await release(this);
});

When('the operator runs a membership reconfiguration of {string} to scopes {string} to activation', async function (this: SyncWorld, table: string, templates: string) {
  const server = await backfillServer(this);
  if (server === 'skipped') return server;
  await startBackfill(this, server, table, templateList(templates), 2);
  await release(this);
});

Then('the pull response lists no scope in {string}', function (this: SyncWorld, member: string) {
  this.assert.equal(listed(this, member), [], `"${member}" of the pull response`);
});

When('the harness records the live membership edges as {string}', async function (this: SyncWorld, label: string) {
  backfillState(this).edges.set(label, await liveEdges(this));
});

Then('server inspection shows the live membership edges equal to {string}', async function (this: SyncWorld, label: string) {
  const before = backfillState(this).edges.get(label);
  if (before === undefined) throw new Error(`no live membership edges were recorded as "${label}" earlier in this scenario`);
  this.assert.equal(await liveEdges(this), before, `live membership edges while the backfill is held, against "${label}"`);
});

Then('server inspection shows the staged edges held apart from the live ones', async function (this: SyncWorld) {
  const open = backfillState(this).open;
  if (open === undefined) throw new Error('no membership backfill is held in this scenario');
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read staged edges`);
  const staged = await server.inspect.query<{ pk_text: string; scope_id: string | null }>(
    `SELECT e.pk_text, e.scope_id FROM synchro.membership_backfill_edges e
       JOIN synchro.membership_backfills b ON b.backfill_id = e.backfill_id WHERE b.state = 'staging'`,
  );
  const keys = await server.inspect.query<{ pk_text: string }>(
    `SELECT k.pk_text FROM synchro.membership_backfill_keys k JOIN synchro.membership_backfills b ON b.backfill_id = k.backfill_id WHERE b.state = 'staging'`,
  );
  const stagedKeys = keys.map((k) => k.pk_text).sort();
  // The backfill stages in key order, one batch at a time: exactly the first rows are staged so far.
  const keyColumn = this.model.keyColumn(open.table).name;
  const rows = (await sourceRows(this, open.table)).sort((a, b) => (String(a[keyColumn]) < String(b[keyColumn]) ? -1 : 1));
  this.assert.equal(stagedKeys.length > 0, true, `rows staged by the held backfill after ${open.batches} batches: ${JSON.stringify(stagedKeys)}`);
  const expected = rows
    .filter((row) => stagedKeys.includes(String(row[keyColumn])))
    .flatMap((row) => open.templates.map((t) => `${String(row[keyColumn])} ${fillTemplate(t, row)}`))
    .sort();
  const actual = staged.map((e) => `${e.pk_text} ${e.scope_id}`).sort();
  this.assert.equal(actual, expected, 'staged edges of the rows the held backfill evaluated, against the new rule applied to those rows');
  const live = new Set(await liveEdges(this));
  this.assert.ok(
    actual.some((edge) => !live.has(edge)),
    `the staged edges ${JSON.stringify(actual)} include a change of membership that the live edges do not show yet (live: ${JSON.stringify([...live])})`,
  );
});

Then(
  "server inspection shows the activation boundary of the new membership generation is a {string} position at or before the main worker's durable processed boundary",
  async function (this: SyncWorld, kind: string) {
    const server = await this.readyServer();
    if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the activation record`);
    const [activation] = await server.inspect.query<{ kind: string | null; boundary: string | null }>(
      `SELECT activation_position_kind AS kind, activation_boundary::text AS boundary FROM synchro.membership_backfills WHERE state = 'activated' ORDER BY backfill_id DESC LIMIT 1`,
    );
    this.assert.ok(activation !== undefined, 'the server recorded an activated membership backfill');
    this.assert.equal(activation?.kind, kind, 'position kind of the activation boundary');
    const [worker] = await server.inspect.query<{ processed: string; at_or_before: boolean; transaction_end: boolean }>(
      `SELECT w.processed_end_lsn::text AS processed, $1::pg_lsn <= w.processed_end_lsn AS at_or_before,
              EXISTS (SELECT 1 FROM synchro.wal_transactions t WHERE t.stream_generation = w.stream_generation AND t.commit_lsn = $1::pg_lsn) AS transaction_end
         FROM synchro.wal_progress w`,
      [activation?.boundary],
    );
    this.assert.equal(worker?.at_or_before, true, `activation boundary ${activation?.boundary} at or before the main worker's processed boundary ${worker?.processed}`);
    this.assert.equal(worker?.transaction_end, true, `activation boundary ${activation?.boundary} is the commit of a source transaction the main worker materialized`);
  },
);

Then('server inspection shows the registry generation and the membership generations activated in the same transaction', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the activation record`);
  const [activation] = await server.inspect.query<{ table_id: string; registry_generation: string; generations: Record<string, number>; xid: string }>(
    `SELECT table_id, registry_generation::text, membership_generations AS generations, activation_xid AS xid
       FROM synchro.membership_backfills WHERE state = 'activated' ORDER BY backfill_id DESC LIMIT 1`,
  );
  if (activation === undefined) throw new Error('the server recorded no activated membership backfill');
  const [relation] = await server.inspect.query<{ registry_generation: string; xmin: string; registry_xmin: string | null }>(
    `SELECT r.registry_generation::text, r.xmin::text,
            (SELECT g.xmin::text FROM synchro.registry_generations g WHERE g.generation = r.registry_generation) AS registry_xmin
       FROM synchro.relations r WHERE r.table_id = $1`,
    [activation.table_id],
  );
  this.assert.equal(relation?.registry_generation, activation.registry_generation, 'registry generation of the table after activation');
  this.assert.equal([relation?.xmin, relation?.registry_xmin], [activation.xid, activation.xid], 'transaction that wrote the registry generation and the table registration');
  const scopes = Object.keys(activation.generations);
  this.assert.ok(scopes.length > 0, `the activation minted a membership generation for the affected scopes: ${JSON.stringify(activation.generations)}`);
  const states = await server.inspect.query<{ scope_id: string; membership_generation: string; xmin: string }>(
    'SELECT scope_id, membership_generation::text, xmin::text FROM synchro.scope_state WHERE scope_id = ANY ($1::text[]) ORDER BY scope_id',
    [scopes],
  );
  this.assert.equal(
    states.map((s) => `${s.scope_id} ${s.membership_generation} ${s.xmin}`),
    scopes.sort().map((scope) => `${scope} ${activation.generations[scope]} ${activation.xid}`),
    'membership generations of the affected scopes and the transaction that wrote them',
  );
});

When(
  'the harness runs the reconfiguration of {string} to scopes {string} many times, holding the backfill after a generated batch number from {int} to {int} and rebuilding scope {string} and {string} while held and after activation',
  async function (this: SyncWorld, table: string, templates: string, low: number, high: number, first: string, second: string) {
    const server = await backfillServer(this);
    if (server === 'skipped') return server;
    const state = backfillState(this);
    const seed = generatedSeed();
    state.seed = seed;
    this.attach(`fast-check seed ${seed} (replay with SYNCHRO_SEED=${seed})`, 'text/plain');
    const newRule = templateList(templates);
    const holdPoints = fc.sample(fc.integer({ min: low, max: high }), { seed, numRuns: 4 });
    // Each run starts again from the registered rule: a plain controlled reconfiguration back to it.
    if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the registered membership function`);
    const [registered] = await server.inspect.query<{ fn: string }>('SELECT membership_function AS fn FROM synchro.relations WHERE physical_relation = $1 AND active', [table]);
    if (registered === undefined) throw new Error(`the server reports no membership function of "${table}"`);
    const wire = this.wire([...this.clientUsers.keys()][0] ?? 'A');
    for (const holdPoint of holdPoints) {
      await startBackfill(this, server, table, newRule, 1);
      await holdAfter(this, holdPoint);
      for (const scope of [first, second]) {
        const run = await wire.rebuildAll(scope);
        state.observed.push({ holdPoint, scope, phase: 'held', status: run.pages.at(-1)?.status ?? 0, keys: rebuiltKeys(run) });
      }
      await release(this);
      for (const scope of [first, second]) {
        const run = await wire.rebuildAll(scope);
        state.observed.push({ holdPoint, scope, phase: 'activated', status: run.pages.at(-1)?.status ?? 0, keys: rebuiltKeys(run) });
      }
      await server.provision.reconfigureMembership(`public.${table}`, registered.fn);
    }
    state.property = { table, templates: newRule };
  },
);

async function checkObserved(world: SyncWorld, phase: 'held' | 'activated'): Promise<void> {
  const state = backfillState(world);
  const property = state.property;
  if (property === undefined || state.observed.length === 0) throw new Error('no generated reconfiguration runs were recorded in this scenario');
  const table = property.table;
  const rows = await sourceRows(world, table);
  const keyColumn = world.model.keyColumn(table).name;
  const oldRule = world.model.table(table).placements;
  const rule = phase === 'held' ? oldRule : property.templates;
  const observed = state.observed.filter((o) => o.phase === phase);
  world.assert.equal(
    observed.map((o) => `hold ${o.holdPoint} ${o.scope}: ${o.status} ${o.keys.join(',')}`),
    observed.map((o) => `hold ${o.holdPoint} ${o.scope}: 200 ${expectedKeys(rows, keyColumn, rule, o.scope).join(',')}`),
    `rebuilds taken ${phase === 'held' ? 'while the backfill was held' : 'after activation'} (seed ${state.seed}, replay with SYNCHRO_SEED=${state.seed})`,
  );
}

Then('every rebuild taken while held equals the old-generation contents of its scope', async function (this: SyncWorld) {
  await checkObserved(this, 'held');
});

Then('every rebuild taken after activation equals the new-generation contents of its scope', async function (this: SyncWorld) {
  await checkObserved(this, 'activated');
});
