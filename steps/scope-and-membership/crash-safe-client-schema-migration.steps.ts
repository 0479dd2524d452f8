/**
 * Steps of SYNC-SCOPE-007 Crash Safe Client Schema Migration: the client
 * process is killed at its migration crash points, restarted with every
 * request refused and recovery deferred, its stored journal damaged between
 * runs, and read through the adapter (journal, physical columns, queue,
 * local-only rows, status) and the proxy log.
 */
import { cpSync } from 'node:fs';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { canonicalJson, schemaManifestHashUnchecked } from '../../harness/codec/index.ts';
import { armCrashPoint } from '../support/client-lifecycle/crash-points.ts';
import {
  type Journal,
  optionalControl,
  orUndetermined,
  keptNow,
  manifestColumns,
  migrationOf,
  migrationState,
  physicalColumns,
  recordedKept,
  refuseRequestsOf,
  restartDeferred,
  sourceManifest,
} from '../support/client-migration/journal.ts';
import { processPhrase } from '../support/client-mode.ts';
import { exchangesOf } from '../support/exchanges.ts';
import { queueState } from '../support/mutations/state.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:has a local-only table "[^"]+" holding rows|has \d+ queued mutations on table|arms crash point|terminates at crash point|is restarted with the proxy refusing|is paused before recovery|recovers its migration|reports no error)/);
processPhrase(/^the harness records the queued mutations and local-only rows client "([^"]+)"/);

Given('client {string} has a local-only table {string} holding rows {string}', async function (this: SyncWorld, name: string, table: string, list: string) {
  const client = await this.process(name);
  const ids = list.split(',').map((id) => id.trim());
  const rows = ids.map((id) => ({ sql: `INSERT INTO "${table}" (id, body) VALUES (?, ?)`, params: [id, `local draft ${id}`] }));
  await client.call('transaction', { statements: [{ sql: `CREATE TABLE "${table}" (id TEXT PRIMARY KEY, body TEXT NOT NULL)` }, ...rows] });
  migrationState(this).localTable.set(name, table);
});

Given('client {string} has {int} queued mutations on table {string} that are not yet sent', async function (this: SyncWorld, name: string, count: number, table: string) {
  const client = await this.process(name);
  const owner = this.userOf(name);
  for (let i = 1; i <= count; i += 1) {
    await client.call('execute', { sql: `INSERT INTO "${table}" (id, owner_id, title) VALUES (?, ?, ?)`, params: [`queued-${i}`, owner, `queued before the migration ${i}`] });
  }
  const { mutations } = await client.call<{ mutations: { table: string; status: string }[] }>('inspectMutations');
  const pending = mutations.filter((m) => m.table === table && m.status === 'pending');
  if (pending.length !== count) throw new Error(`client "${name}" shows ${pending.length} pending mutations on ${table}, not ${count}`);
  // The application closes and reopens: the next sync starts with a connect, so the migration begins before anything is sealed or sent.
  await client.process.restart();
});

Given('the harness records the queued mutations and local-only rows client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  const state = migrationState(this);
  state.kept.set(`${name}\u0000${label}`, await keptNow(this, name));
  // The manifest served now is the one the client holds: the source of the migration the next publication starts.
  const manifest = await currentManifest(this);
  const { schema: activeSchema } = await (await this.process(name)).call<{ schema: { version: number; hash: string } | null }>('inspectScopes');
  if (activeSchema?.hash !== manifest.schema_hash) throw new Error(`client "${name}" holds schema ${JSON.stringify(activeSchema)}, not the served manifest ${manifest.schema_version}/${manifest.schema_hash}`);
  state.source.set(name, manifest);
});

Given('client {string} arms crash point {string}', async function (this: SyncWorld, name: string, point: string) {
  return await armCrashPoint(this, name, point);
});

Then('client {string} terminates at crash point {string}', async function (this: SyncWorld, name: string, point: string) {
  const client = await this.process(name);
  const exit = client.process.alive ? await client.process.awaitExit() : 'already gone';
  this.assert.equal(client.process.alive, false, `client "${name}" is still running (${exit}) after its armed crash point "${point}"`);
  const sync = this.lastSync.get(name);
  this.assert.ok(sync !== undefined && 'error' in sync, `the sync of client "${name}" returned ${JSON.stringify(sync)} instead of dying at "${point}"`);
});

When('client {string} is restarted with the proxy refusing every request', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await refuseRequestsOf(this, name, client.clientId);
  await restartDeferred(this, client, client.userId);
  migrationState(this).restartMark.set(name, (await this.proxy()).exchanges.length);
});

When('client {string} is paused before recovery', async function (this: SyncWorld, name: string) {
  const { status } = await (await this.process(name)).call<{ status: string }>('getStatus');
  // An adapter that ignores deferRecovery has already acted on what the crash left: nothing can be read before recovery.
  if (status !== 'uninitialized') return undeterminedWithout(this, `client "${name}" is in state "${status}" after opening with deferRecovery: the adapter does not defer recovery`);
  return undefined;
});

When('client {string} recovers its migration', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  return await orUndetermined(this, () => optionalControl(client.call, 'recover'));
});

async function journalOf(world: SyncWorld, name: string): Promise<Journal> {
  const { journal } = await migrationOf((await world.process(name)).call);
  world.assert.ok(journal !== null, `client "${name}" reports no migration journal`);
  return journal as Journal;
}

/** True when some string anywhere in `value` reads as SQL text. */
function holdsSql(value: unknown): boolean {
  if (typeof value === 'string') return /\b(?:CREATE|ALTER|DROP|INSERT|UPDATE|DELETE|PRAGMA|ATTACH)\b/i.test(value);
  if (Array.isArray(value)) return value.some(holdsSql);
  return typeof value === 'object' && value !== null && Object.values(value).some(holdsSql);
}

Then('the migration journal client {string} inspects holds:', async function (this: SyncWorld, name: string, table: DataTable) {
  return await orUndetermined(this, async () => {
    const journal = await journalOf(this, name);
    const source = sourceManifest(this, name);
    const target = await currentManifest(this);
    this.assert.notEqual(target.schema_hash, source.schema_hash, 'the server publishes a manifest other than the source');
    for (const { member, value } of table.hashes() as { member: string; value: string }[]) {
      const what = `the journal's ${member} on client "${name}"`;
      switch (member) {
        case 'source reference':
          this.assert.equal(journal.sourceSchema, { version: source.schema_version, hash: source.schema_hash }, what);
          break;
        case 'target reference':
          this.assert.equal(journal.targetSchema, { version: target.schema_version, hash: target.schema_hash }, what);
          break;
        case 'target manifest': {
          const body = journal.targetManifest as { schema_hash?: unknown } | null;
          this.assert.ok(body !== null && typeof body === 'object', `${what}: ${JSON.stringify(body)?.slice(0, 200)}`);
          this.assert.equal(schemaManifestHashUnchecked(body).hash, target.schema_hash, `${what}: the schema_hash recomputed from the stored body`);
          this.assert.equal(canonicalJson(body), canonicalJson(target), `${what} against the manifest the server published`);
          break;
        }
        case 'action':
          this.assert.equal(journal.action, value, what);
          break;
        case 'affected scopes':
          this.assert.equal(journal.affectedScopes, value.split(',').map((s) => s.trim()), what);
          break;
        case 'plan format':
          this.assert.ok(typeof journal.planFormat === 'string' && /^[a-z][\w.-]*[/@-]v?\d+(?:\.\d+)*$/i.test(journal.planFormat), `${what} names a format and its version: ${JSON.stringify(journal.planFormat)}`);
          break;
        case 'plan': {
          const plan = journal.plan as { steps?: unknown } | null;
          const steps = plan?.steps;
          this.assert.ok(Array.isArray(steps) && steps.length > 0, `${what} has a step list: ${JSON.stringify(plan)?.slice(0, 300)}`);
          const untyped = (steps as unknown[]).filter((s) => typeof (s as { kind?: unknown })?.kind !== 'string' || holdsSql(s));
          this.assert.equal(untyped, [], `${what}: steps without a kind or holding SQL text`);
          const text = JSON.stringify(plan);
          this.assert.ok(text.includes(source.schema_hash) && text.includes(target.schema_hash), `${what} names both manifest hashes`);
          this.assert.ok(typeof journal.planHash === 'string' && journal.planHash.length > 0, `${what} is stored with its hash: ${JSON.stringify(journal.planHash)}`);
          break;
        }
        case 'phase':
          this.assert.equal(journal.phase, 'prepared', what);
          break;
        default:
          throw new Error(`no check is written for journal member "${member}"`);
      }
    }
  });
});

Then(/^the physical columns of synced table "([^"]+)" on client "([^"]+)" match the (source|target) manifest$/, async function (this: SyncWorld, table: string, name: string, which: string) {
  const manifest = which === 'source' ? sourceManifest(this, name) : await currentManifest(this);
  if (which === 'target') this.assert.notEqual(manifest.schema_hash, sourceManifest(this, name).schema_hash, 'the server publishes a manifest other than the source');
  const client = await this.process(name);
  this.assert.equal(await physicalColumns(client.call, table), manifestColumns(manifest, table), `columns of ${table} in the SQLite file of client "${name}" against the ${which} manifest ${manifest.schema_version}`);
});

Given('a second client {string} of user {string} in the same source state as client {string}', async function (this: SyncWorld, second: string, user: string, first: string) {
  const original = await this.process(first);
  if (user !== original.userId) throw new Error(`client "${first}" belongs to ${original.userId}, not ${user}`);
  // A byte copy of the first client's files, taken while it is down: the same source schema, rows, queue and identity.
  await original.process.kill();
  const copy = this.startClient(second);
  cpSync(original.dataDir, copy.dataDir, { recursive: true });
  await copy.process.call('open', { ...(await this.openParams(copy, user)), clientId: original.clientId });
  original.process.start();
  await original.process.call('open', await this.openParams(original, user));
  migrationState(this).copies.set(second, copy);
});

When(
  'client {string} and client {string} each prepare the migration to the new manifest and stop at crash point {string}',
  async function (this: SyncWorld, first: string, second: string, point: string) {
  return await orUndetermined(this, async () => {
      const original = await this.process(first);
      const copy = migrationState(this).copies.get(second);
      if (copy === undefined) throw new Error(`client "${second}" was not opened as a copy of another client`);
      for (const client of [original, copy]) {
        const { points } = await client.process.call<{ points: string[] }>('crashPoints');
        if (!points.includes(point)) return undeterminedWithout(this, `client "${client.name}" offers no crash point "${point}"`);
        await client.process.call('armCrash', { point });
        await client.process.call('syncNow').then(
          (result) => {
            throw new Error(`client "${client.name}" finished its sync (${JSON.stringify(result)}) instead of stopping at "${point}"`);
          },
          () => undefined,
        );
        await client.process.awaitExit();
        await restartDeferred(this, client, original.userId, { clientId: original.clientId });
        const { journal } = await migrationOf((method, params) => client.process.call(method, params));
        migrationState(this).plans.set(client.name, { plan: journal?.plan ?? null, planHash: journal?.planHash ?? null });
      }
      queueState(this).crashArmed.delete(first);
      return undefined;
  });
  },
);

Then('the plans in the two journals are byte-identical', function (this: SyncWorld) {
  const plans = [...migrationState(this).plans.entries()];
  this.assert.equal(plans.length, 2, `journals read: ${plans.map(([name]) => name).join(', ')}`);
  const [[firstName, first], [secondName, second]] = plans as [[string, { plan: unknown; planHash: unknown }], [string, { plan: unknown; planHash: unknown }]];
  this.assert.ok(first.plan !== null && typeof first.plan === 'object', `client "${firstName}" journalled a plan: ${JSON.stringify(first.plan)}`);
  this.assert.equal(JSON.stringify(second.plan), JSON.stringify(first.plan), `the plan of client "${secondName}" against that of client "${firstName}"`);
  this.assert.equal(second.planHash, first.planHash, `the plan hash of client "${secondName}" against that of client "${firstName}"`);
});

Then('the proxy recorded {int} requests from client {string} before the journal reached the applied phase', async function (this: SyncWorld, count: number, name: string) {
  return await orUndetermined(this, async () => {
    const journal = await journalOf(this, name);
    const applied = journal.phaseHistory.find((entry) => entry.phase === 'applied');
    this.assert.ok(applied !== undefined, `the journal of client "${name}" never reached the applied phase: ${JSON.stringify(journal.phaseHistory)}`);
    const from = migrationState(this).restartMark.get(name);
    const before = (await exchangesOf(this, name, { from, unfinished: true })).filter((e) => (e.receivedAt ?? 0) <= (applied?.atMs ?? 0));
    this.assert.equal(before.length, count, `requests of client "${name}" since the restart, before ${applied?.atMs}: ${before.map((e) => e.endpoint).join(', ')}`);
  });
});

Then('the event log of client {string} shows the migration DDL committed exactly once', async function (this: SyncWorld, name: string) {
  return await orUndetermined(this, async () => {
    const journal = await journalOf(this, name);
    const commits = journal.phaseHistory.filter((entry) => entry.phase === 'ddl_applied');
    this.assert.equal(commits.length, 1, `DDL commits in the durable phase history of client "${name}": ${JSON.stringify(journal.phaseHistory)}`);
  });
});

Then('client {string} reports no error', async function (this: SyncWorld, name: string) {
  const status = await (await this.process(name)).call<{ status: string; failure?: unknown }>('getStatus');
  this.assert.equal({ status: status.status, failure: status.failure }, { status: 'local_ready', failure: undefined }, `the status client "${name}" reports after recovery`);
});

When('the proxy forwards requests again', async function (this: SyncWorld) {
  const state = migrationState(this);
  state.refusing.clear();
  const mark = (await this.proxy()).exchanges.length;
  for (const name of state.refusalInstalled) state.forwardMark.set(name, mark);
});

Then('client {string} pushes its queued mutations before it rebuilds scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const kept = recordedKept(this, name, 'kept').mutations.map((m) => (m as { id: string }).id);
  const log = await exchangesOf(this, name, { from: migrationState(this).forwardMark.get(name) });
  const bodyOf = (e: (typeof log)[number]) => JSON.parse(e.requestBody.toString('utf8')) as { mutations?: { mutation_id: string }[]; scope?: string };
  const pushedAt = new Map<string, number>();
  log.forEach((e, k) => {
    if (e.endpoint === 'push') for (const m of bodyOf(e).mutations ?? []) if (!pushedAt.has(m.mutation_id)) pushedAt.set(m.mutation_id, k);
  });
  const rebuildAt = log.findIndex((e) => e.endpoint === 'rebuild' && bodyOf(e).scope === scope);
  this.assert.equal(kept.filter((id) => !pushedAt.has(id)), [], `queued mutations of client "${name}" never pushed; requests: ${log.map((e) => e.endpoint).join(', ')}`);
  this.assert.ok(rebuildAt >= 0, `client "${name}" sent no rebuild of ${scope}; requests: ${log.map((e) => e.endpoint).join(', ')}`);
  this.assert.ok(Math.max(...kept.map((id) => pushedAt.get(id) ?? Number.POSITIVE_INFINITY)) < rebuildAt, `client "${name}" pushed at ${JSON.stringify([...pushedAt.values()])}, rebuilt ${scope} at ${rebuildAt}`);
});

Then('the migration journal client {string} inspects reaches the completed phase', async function (this: SyncWorld, name: string) {
  return await orUndetermined(this, async () => {
    const journal = await journalOf(this, name);
    this.assert.equal(journal.phase, 'completed', `the journal phase of client "${name}" (history ${JSON.stringify(journal.phaseHistory)})`);
  });
});

const TAMPERS: [RegExp, (m: RegExpExecArray) => Record<string, unknown>][] = [
  [/^changes one byte of the stored target manifest body$/, () => ({ defect: 'target_body_byte' })],
  [/^changes one step of the stored plan$/, () => ({ defect: 'plan_step_changed' })],
  [/^changes the stored source reference to version (\d+)$/, (m) => ({ defect: 'source_version', sourceVersion: Number(m[1]) })],
  [/^sets the stored phase to an unknown value$/, () => ({ defect: 'unknown_phase' })],
  [/^removes the stored target manifest$/, () => ({ defect: 'target_removed' })],
  [/^appends a plan step holding raw SQL text "([^"]+)"$/, (m) => ({ defect: 'raw_sql_step', sql: m[1] })],
  [/^adds column "([^"]+)" of type (\w+) to the synced table "([^"]+)" in the SQLite file$/, (m) => ({ defect: 'physical_column', column: m[1], sqlType: m[2], table: m[3] })],
];

When(/^the harness (.+) while client "([^"]+)" is down$/, async function (this: SyncWorld, tamper: string, name: string) {
  const client = await this.process(name);
  const found = TAMPERS.map(([pattern, params]) => {
    const m = pattern.exec(tamper);
    return m === null ? undefined : params(m);
  }).find((p) => p !== undefined);
  if (found === undefined) throw new Error(`no tamper is written for "${tamper}"`);
  if (client.process.alive) throw new Error(`client "${name}" is still running: its files are changed only while it is down`);
  queueState(this).crashArmed.delete(name);
  // The adapter process runs without an open client to change the stored state, then opens it (recovery deferred) to read the columns left.
  client.process.start();
  const tampered = await orUndetermined(this, () => optionalControl((method, params) => client.process.call(method, params), 'tamperMigration', { dataDir: client.dataDir, ...found }));
  if (tampered === 'skipped') return tampered;
  await client.process.call('open', { ...(await this.openParams(client, client.userId)), deferRecovery: true });
  migrationState(this).columnsBeforeRestart.set(name, await physicalColumns(client.call, 'tasks'));
  return undefined;
});

Then('the physical columns of synced table {string} on client {string} are those found before the restart', async function (this: SyncWorld, table: string, name: string) {
  const before = migrationState(this).columnsBeforeRestart.get(name);
  this.assert.ok(before !== undefined, `the harness read no columns of client "${name}" before its restart`);
  this.assert.equal(await physicalColumns((await this.process(name)).call, table), before, `columns of ${table} in the SQLite file of client "${name}"`);
});

Then('the queued mutations and local-only rows client {string} inspects equal {string} byte for byte', async function (this: SyncWorld, name: string, label: string) {
  const kept = recordedKept(this, name, label);
  const now = await keptNow(this, name);
  this.assert.ok(kept.mutations.length > 0 && kept.localRows.length > 0, `the harness recorded ${kept.mutations.length} mutations and ${kept.localRows.length} local-only rows as "${label}"`);
  this.assert.equal(canonicalJson(now.mutations), canonicalJson(kept.mutations), `queued mutations of client "${name}" against "${label}"`);
  this.assert.equal(canonicalJson(now.localRows), canonicalJson(kept.localRows), `local-only rows of client "${name}" against "${label}"`);
});

Then('the migration journal client {string} inspects does not claim the completed phase', async function (this: SyncWorld, name: string) {
  return await orUndetermined(this, async () => {
    const journal = await journalOf(this, name);
    this.assert.notEqual(journal.phase, 'completed', `the journal phase of client "${name}" (history ${JSON.stringify(journal.phaseHistory)})`);
  });
});

Then('the active schema client {string} inspects is the {string} manifest reference', async function (this: SyncWorld, name: string, label: string) {
  return await orUndetermined(this, async () => {
    if (label !== 'before') throw new Error(`the harness records the source manifest as "before", not "${label}"`);
    const source = sourceManifest(this, name);
    const { activeSchema } = await migrationOf((await this.process(name)).call);
    this.assert.equal(activeSchema, { version: source.schema_version, hash: source.schema_hash }, `the active schema client "${name}" reports`);
  });
});

Then('scope {string} on client {string} is marked rebuild-required with a null cursor', async function (this: SyncWorld, scope: string, name: string) {
  const { scopes } = await (await this.process(name)).call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes');
  const found = scopes.find((s) => s.scopeId === scope);
  this.assert.equal(found === undefined ? undefined : { cursor: found.cursor, rebuildRequired: found.rebuildRequired }, { cursor: null, rebuildRequired: true }, `scope ${scope} on client "${name}"`);
});
