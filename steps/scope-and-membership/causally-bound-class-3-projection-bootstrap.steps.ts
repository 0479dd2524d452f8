/**
 * SYNC-SCOPE-006: a Class 3 step whose added field already holds values is
 * bootstrapped from one permanent candidate slot and its exported snapshot,
 * caught up to a barrier the main worker made durable, and activated in one
 * step. The steps drive the bootstrap through the optional
 * `capture.bootstrap` control and check its record through inspection, the
 * connect answers and the rebuilt rows.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { fromHex, readChecksumObject, toHex } from '../../harness/codec/index.ts';
import { inspectRows } from '../support/capture/inspection.ts';
import { type Manifest, scopeDigestHex } from '../support/integrity/oracle.ts';
import {
  activeSlotPointer,
  bootstrapControl,
  bootstrapPhase,
  bootstrapRecords,
  bootstrapState,
  presentSlots,
  progressOf,
} from '../support/projection-bootstrap/coordinator.ts';
import { ident } from '../support/schema-and-versions/manifests.ts';
import { contractState, recorded } from '../support/scopes/function-contract.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { recordedStream, currentStreamOf } from '../support/stream-generations/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

Given(/^the source table "public\.([^"]+)" also has column "([^"]+)" of SQL type "([^"]+)" that is not synced$/, async function (this: SyncWorld, table: string, column: string, sqlType: string) {
  // The registration is made from the model first, so the column stays outside it until the operator publishes it.
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to add a source column`);
  if (!/^[a-z][a-z0-9 ]*$/.test(sqlType)) throw new Error(`"${sqlType}" is not a plain SQL type name`);
  await server.sourceSql.query(`ALTER TABLE public.${ident(table)} ADD COLUMN ${ident(column)} ${sqlType}`);
});

// The column already exists with values in the source rows: registering it is the Class 3 step; its manifest waits for the bootstrap.
When(
  /^the operator publishes a "class_3" manifest that registers the existing column "([^"]+)" of type "([^"]+)" with its historical values in table "([^"]+)", affecting scope "([^"]+)"$/,
  async function (this: SyncWorld, column: string, type: string, tableName: string, scope: string) {
    const table = this.model.table(tableName);
    if (!table.placements.some((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '.+')}$`).test(scope))) throw new Error(`no placement of table "${tableName}" puts a row in scope "${scope}"`);
    const server = await this.readyServer();
    if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to reconfigure a table`);
    if ((await bootstrapControl(this)) === 'skipped') return 'skipped';
    await awaitCapture(this);
    bootstrapState(this).pointerBefore = await activeSlotPointer(this);
    await server.provision.exec(`SELECT synchro.synchro_reconfigure_table('public.${ident(tableName)}');`);
    await awaitCapture(this);
    table.columns.push({ name: column, type, key: false, nullable: true });
  },
);

When('the bootstrap runs to activation', async function (this: SyncWorld) {
  const control = await bootstrapControl(this);
  if (control === 'skipped') return 'skipped';
  const progress = progressOf(await control.release(), 'the bootstrap');
  if (progress.lifecycle !== 'activated') throw new Error(`the bootstrap ended ${progress.lifecycle}${progress.reason === undefined ? '' : `: ${progress.reason}`}`);
});

When('the harness releases the bootstrap and it runs to activation', async function (this: SyncWorld) {
  const control = await bootstrapControl(this);
  if (control === 'skipped') return 'skipped';
  await awaitCapture(this);
  const progress = progressOf(await control.release(), 'the released bootstrap');
  if (progress.lifecycle !== 'activated') throw new Error(`the released bootstrap ended ${progress.lifecycle}${progress.reason === undefined ? '' : `: ${progress.reason}`}`);
});

When('the bootstrap is resumed or restarted and runs to activation', async function (this: SyncWorld) {
  const control = await bootstrapControl(this);
  if (control === 'skipped') return 'skipped';
  const progress = progressOf(await control.resume(), 'the resumed bootstrap');
  if (progress.lifecycle !== 'activated') throw new Error(`the resumed bootstrap ended ${progress.lifecycle}${progress.reason === undefined ? '' : `: ${progress.reason}`}`);
});

async function holdAt(world: SyncWorld, phaseText: string, options: { pastDurableBarrier?: boolean } = {}): Promise<'skipped' | undefined> {
  const control = await bootstrapControl(world);
  if (control === 'skipped') return 'skipped';
  const phase = bootstrapPhase(phaseText);
  const progress = progressOf(await control.hold(phase, options), `holding the bootstrap at ${phase}`);
  if (progress.lifecycle !== phase) throw new Error(`the bootstrap held at ${phase} is ${progress.lifecycle}`);
  return undefined;
}

When('the harness holds the bootstrap at phase {string}', async function (this: SyncWorld, phase: string) {
  return holdAt(this, phase);
});

When('the harness holds the bootstrap after its candidate slot is created', async function (this: SyncWorld) {
  return holdAt(this, 'preparing');
});

When('the harness holds the bootstrap after its baseline is staged', async function (this: SyncWorld) {
  return holdAt(this, 'baseline_staged');
});

When("the harness holds the bootstrap in phase \"catching_up\" with a barrier past the main worker's durable processed boundary", async function (this: SyncWorld) {
  const skipped = await holdAt(this, 'catching_up', { pastDurableBarrier: true });
  if (skipped !== undefined) return skipped;
  // The held catch-up must really be past what the (paused) main worker made durable, or the scenario shows nothing.
  const row = (await bootstrapRecords(this)).find((r) => r.lifecycle === 'catching_up');
  if (row === undefined) throw new Error('no bootstrap is held at catching_up');
  const [past] = await inspectRows<{ past: boolean }>(
    this,
    'SELECT b.caught_up_end_lsn > p.processed_end_lsn AS past FROM synchro.projection_bootstraps b, synchro.wal_progress p WHERE b.bootstrap_id = $1::uuid',
    [row.bootstrap_id],
  );
  if (past?.past !== true) throw new Error("the held bootstrap's catch-up is not past the main worker's durable processed end");
  return undefined;
});

When('the bootstrap coordinator is killed', async function (this: SyncWorld) {
  const control = await bootstrapControl(this);
  if (control === 'skipped') return 'skipped';
  bootstrapState(this).beforeKill = await bootstrapRecords(this);
  const terminated = await control.kill();
  if (terminated < 1) throw new Error('no session of the bootstrap coordinator was terminated');
});

When('the operator asks the bootstrap to activate', async function (this: SyncWorld) {
  const control = await bootstrapControl(this);
  if (control === 'skipped') return 'skipped';
  bootstrapState(this).activation = await control.activate();
});

When('client {string} connects presenting the {string} schema reference', async function (this: SyncWorld, name: string, label: string) {
  const reference = recorded(contractState(this).manifests, label, 'manifest reference');
  await this.wire(name).connect({ schema: { version: reference.version, hash: reference.hash } });
});

Then(
  'server inspection shows one projection bootstrap record whose candidate slot was logical, {string}, not temporary and in the configured database, with an exported snapshot name and a consistent point',
  async function (this: SyncWorld, plugin: string) {
    const records = await bootstrapRecords(this);
    this.assert.equal(records.length, 1, `projection bootstrap records: ${JSON.stringify(records)}`);
    const r = records[0];
    this.assert.equal(
      { lifecycle: r?.lifecycle, slot_type: r?.slot_type, plugin: r?.plugin, temporary: r?.slot_temporary, in_this_database: r?.in_this_database },
      { lifecycle: 'activated', slot_type: 'logical', plugin, temporary: false, in_this_database: true },
      `the bootstrap record ${JSON.stringify(r)}`,
    );
    this.assert.ok(typeof r?.exported_snapshot_name === 'string' && r.exported_snapshot_name.length > 0, `the record names its exported snapshot: ${JSON.stringify(r)}`);
    this.assert.ok(typeof r?.consistent_point === 'string' && /^[0-9A-F]+\/[0-9A-F]+$/.test(r.consistent_point), `the record names its consistent point: ${JSON.stringify(r)}`);
  },
);

Then('server inspection shows a stream generation equal to {string}', async function (this: SyncWorld, label: string) {
  const before = recordedStream(this, label);
  const now = await currentStreamOf(this);
  this.assert.equal(now.generation, before.generation, `the stream generation server inspection reports, recorded before as "${label}"`);
});

Then('server inspection shows the active slot pointer unchanged by the bootstrap', async function (this: SyncWorld) {
  const before = bootstrapState(this).pointerBefore;
  if (before === undefined) throw new Error('the active slot pointer was not recorded when the step was published');
  this.assert.equal(await activeSlotPointer(this), before, 'the active slot pointer after activation');
});

Then('the connect response lists {string} exactly as {string}', function (this: SyncWorld, member: string, list: string) {
  const reply = [...this.replies].reverse().find((r) => r.endpoint === 'connect');
  this.assert.ok(reply !== undefined, 'no connect was answered in this scenario');
  const expected = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  this.assert.equal(reply?.json?.[member], expected, `"${member}" of the connect answer ${reply?.text.slice(0, 400)}`);
});

/** The rows of the last rebuild by key, with the value of `column` of table `tableName` as the client's manifest names it. */
function rebuiltValues(world: SyncWorld, tableName: string, column: string): Map<string, unknown> {
  const last = generationsState(world).lastRebuild;
  if (last === undefined) throw new Error('no rebuild ran to its final page in this scenario');
  const manifest = [...world.replies].reverse().find((r) => r.endpoint === 'connect' && r.json?.schema_definition !== undefined)?.json?.schema_definition as Obj | undefined;
  const table = (manifest?.tables as Obj[] | undefined)?.find((t) => t.name === tableName);
  const field = (table?.fields as Obj[] | undefined)?.find((f) => f.name === column);
  world.assert.ok(field !== undefined, `the manifest the client was given has field "${column}" in table "${tableName}"`);
  const out = new Map<string, unknown>();
  for (const r of last.run.records as Obj[]) {
    if (r.table !== table?.table_id) continue;
    out.set(String(Object.values((r.pk ?? {}) as Obj)[0]), ((r.row ?? {}) as Obj)[String(field?.field_id)]);
  }
  return out;
}

function assertRebuilt(world: SyncWorld, tableName: string, column: string, expected: Record<string, number>): void {
  const values = rebuiltValues(world, tableName, column);
  const shown = Object.fromEntries(Object.keys(expected).map((k) => [k, values.get(k)]));
  world.assert.equal(shown, expected, `"${column}" of the rebuilt rows of "${tableName}": ${JSON.stringify(Object.fromEntries(values))}`);
}

Then(/^the rebuild pages hold row "([^"]+)" of table "([^"]+)" with (\w+) (-?\d+) and row "([^"]+)" with \3 (-?\d+)$/, function (this: SyncWorld, k1: string, tableName: string, column: string, v1: string, k2: string, v2: string) {
  assertRebuilt(this, tableName, column, { [k1]: Number(v1), [k2]: Number(v2) });
});

Then(/^the rebuild pages hold rows "([^"]+)" with (\w+) (-?\d+), "([^"]+)" with \2 (-?\d+) and "([^"]+)" with \2 (-?\d+) of table "([^"]+)"$/, function (this: SyncWorld, k1: string, column: string, v1: string, k2: string, v2: string, k3: string, v3: string, tableName: string) {
  assertRebuilt(this, tableName, column, { [k1]: Number(v1), [k2]: Number(v2), [k3]: Number(v3) });
});

Then(/^the rebuild pages hold row "([^"]+)" of table "([^"]+)" with (\w+) (-?\d+)$/, function (this: SyncWorld, key: string, tableName: string, column: string, value: string) {
  assertRebuilt(this, tableName, column, { [key]: Number(value) });
});

Then('the final scope checksum of {string} verifies against the rebuilt rows', function (this: SyncWorld, scope: string) {
  const last = generationsState(this).lastRebuild;
  if (last === undefined || last.scope !== scope) throw new Error(`no rebuild of scope "${scope}" ran to its final page in this scenario`);
  const manifest = [...this.replies].reverse().find((r) => r.endpoint === 'connect' && r.json?.schema_definition !== undefined)?.json?.schema_definition as Manifest | undefined;
  this.assert.ok(manifest !== undefined, 'a connect answer carried the manifest the rebuild was served under');
  const rows = (last.run.records as Obj[]).map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) }));
  const computed = scopeDigestHex(manifest as Manifest, scope, rows);
  const claimed = toHex(readChecksumObject(last.run.checksum));
  this.assert.equal(claimed, computed, `the final checksum of "${scope}" against the codec's digest of ${rows.length} rebuilt rows`);
  this.assert.ok(fromHex(claimed).length > 0, 'the final checksum is not empty');
});

Then('server inspection shows the bootstrap activation barrier equal to a durable {string} of the main worker', async function (this: SyncWorld, kind: string) {
  this.assert.equal(kind, 'transaction_end', 'the barrier kind this step checks');
  const activated = (await bootstrapRecords(this)).filter((r) => r.lifecycle === 'activated');
  this.assert.equal(activated.length, 1, `activated bootstrap records: ${JSON.stringify(activated)}`);
  const barrier = activated[0]?.activation_barrier ?? null;
  // A transaction the main worker materialized in the current stream ends exactly at the barrier, and none it made durable before activation lies between the barrier and its processed end.
  const [check] = await inspectRows<{ is_end: boolean; within: boolean }>(
    this,
    `SELECT EXISTS (SELECT 1 FROM synchro.wal_transactions t WHERE t.stream_generation = p.stream_generation AND t.end_lsn = $1::pg_lsn) AS is_end,
            $1::pg_lsn <= p.processed_end_lsn AS within
       FROM synchro.wal_progress p`,
    [barrier],
  );
  this.assert.equal({ barrier_is_a_transaction_end: check?.is_end, durable: check?.within }, { barrier_is_a_transaction_end: true, durable: true }, `the activation barrier ${barrier}`);
});

Then('the activated bootstrap used either the candidate slot and consistent point recorded before the kill or a new candidate slot whose record is complete', async function (this: SyncWorld) {
  const before = bootstrapState(this).beforeKill;
  if (before === undefined) throw new Error('the bootstrap records were not read before the kill');
  const records = await bootstrapRecords(this);
  const activated = records.filter((r) => r.lifecycle === 'activated');
  this.assert.equal(activated.length, 1, `activated bootstrap records: ${JSON.stringify(records)}`);
  const a = activated[0];
  const old = before.find((r) => r.bootstrap_id === a?.bootstrap_id);
  if (old !== undefined) {
    this.assert.equal({ slot: a?.candidate_slot_name, consistent_point: a?.consistent_point }, { slot: old.candidate_slot_name, consistent_point: old.consistent_point }, 'the resumed bootstrap kept its candidate slot and consistent point');
  } else {
    this.assert.ok(!before.some((r) => r.candidate_slot_name === a?.candidate_slot_name), `the new bootstrap has a slot of its own: ${JSON.stringify(a)}`);
    this.assert.equal(
      { slot_type: a?.slot_type, plugin: a?.plugin, temporary: a?.slot_temporary, in_this_database: a?.in_this_database, snapshot: typeof a?.exported_snapshot_name, consistent_point: typeof a?.consistent_point },
      { slot_type: 'logical', plugin: 'pgoutput', temporary: false, in_this_database: true, snapshot: 'string', consistent_point: 'string' },
      `the record of the new bootstrap ${JSON.stringify(a)}`,
    );
  }
});

Then('no candidate slot marked aborted was read after the kill', async function (this: SyncWorld) {
  const records = await bootstrapRecords(this);
  const aborted = records.filter((r) => r.lifecycle === 'aborted').map((r) => r.candidate_slot_name).filter((s): s is string => s !== null);
  const activated = records.find((r) => r.lifecycle === 'activated');
  this.assert.ok(activated !== undefined, `an activated bootstrap: ${JSON.stringify(records)}`);
  this.assert.ok(!aborted.includes(activated?.candidate_slot_name ?? ''), `the activated bootstrap's slot ${activated?.candidate_slot_name} is not one marked aborted (${aborted.join(', ')})`);
  this.assert.equal(await presentSlots(this, aborted), [], 'candidate slots marked aborted still present in pg_replication_slots');
});

Then('the activation waits or is refused', async function (this: SyncWorld) {
  const answer = bootstrapState(this).activation;
  if (answer === undefined) throw new Error('the operator did not ask the bootstrap to activate');
  this.assert.ok(answer.refused !== undefined, `the activation answer: ${JSON.stringify(answer)}`);
  const records = await bootstrapRecords(this);
  this.assert.equal(records.filter((r) => r.lifecycle === 'activated').length, 0, `no bootstrap activated: ${JSON.stringify(records)}`);
  this.assert.ok(records.some((r) => r.lifecycle === 'catching_up' && typeof r.last_refusal === 'string'), `the bootstrap in flight records the refusal: ${JSON.stringify(records)}`);
});
