/**
 * SYNC-OPS-003 Capture Health Readiness: GET /ready is derived from the
 * extension's canonical result for the configured database and is exactly
 * {"ready":true} or {"ready":false}; the detail map never goes public.
 * The harness replaces the extension's answer on the server's database and
 * compares what /ready then says, byte for byte.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { openOtherDatabase, otherDatabase, workerRunsOn } from '../support/capture-readiness/other-database.ts';
import { type ForcedState, forceChecks, healthDetail, REQUIRED_CHECKS, requestReady } from '../support/capture-readiness/readiness.ts';
import { generatedSeed } from '../support/generated-seed.ts';
import type { SyncWorld } from '../support/world.ts';

/** PL/pgSQL bodies standing in for the extension's readiness function, by the feature's wording. */
function replacementBody(result: string): string {
  if (result === 'returns SQL NULL') return 'RETURN NULL;';
  if (result === 'raises an error') return "RAISE EXCEPTION 'readiness unavailable';";
  // Far beyond any sensible probe timeout; the server cancels it or the harness's deadline fails the scenario.
  if (result === "sleeps past the adapter's query timeout") return `PERFORM pg_sleep(300); RETURN '{"ready":true}'::jsonb;`;
  const returned = /^returns (.+)$/.exec(result)?.[1];
  if (returned === undefined) throw new Error(`no replacement readiness function "${result}" is known to the harness`);
  JSON.parse(returned);
  return `RETURN '${returned.replaceAll("'", "''")}'::jsonb;`;
}

Given(/^the extension's readiness function for the configured database is replaced by one that (.+)$/, async function (this: SyncWorld, result: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to replace a function`);
  // CREATE OR REPLACE keeps the function's owner and its EXECUTE grants: only the answer changes.
  await server.sourceSql.query(`CREATE OR REPLACE FUNCTION synchro.synchro_readiness() RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$ BEGIN ${replacementBody(result)} END $$`);
});

Given('a second database {string} in the same cluster with a healthy capture setup', async function (this: SyncWorld, label: string) {
  if ((await openOtherDatabase(this, label)) === 'skipped') return 'skipped';
  await workerRunsOn(this, otherDatabase(this, label));
  return undefined;
});

/** Killed: its state record still says running, so only this database's own sessions tell that no worker serves it. */
When("the configured database's capture worker is stopped", async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.killWorker) throw new Error(`server adapter "${server.id}" offers no capture.killWorker()`);
  await server.capture.killWorker();
});

Then('the response header {string} is {string}', function (this: SyncWorld, name: string, value: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.headers.get(name), value, `header ${name} of the ${reply.endpoint} answer`);
});

When(/^the harness requests GET \/ready with query "([^"]*)" and header "([^"]+)"$/, async function (this: SyncWorld, query: string, header: string) {
  const colon = header.indexOf(':');
  if (colon < 1) throw new Error(`header "${header}" is not written "Name: value"`);
  await this.readyServer();
  await requestReady(this, { query, headers: { [header.slice(0, colon).trim()]: header.slice(colon + 1).trim() } });
});

Then(/^the response body is exactly one of \{"ready":true\} or \{"ready":false\}$/, function (this: SyncWorld) {
  const reply = this.lastReply();
  this.assert.ok(['{"ready":true}', '{"ready":false}'].includes(reply.text), `GET /ready body: ${reply.text.slice(0, 500)}`);
});

/** Reason codes of the health detail (001 sheet) that must never reach the public body. */
const REASONS = ['ok', 'unknown', 'failed', 'invalid_limit', 'publication_mismatch', 'capture_triggers_invalid', 'replication_slot_invalid', 'blocking_poison', 'stream_reset_incomplete', 'slot_acknowledgement_invalid', 'worker_state_invalid', 'heartbeat_stale', 'wal_lag_exceeded', 'health_query_unavailable'];

Then('the response body contains no check name, reason code, LSN, number or database name', async function (this: SyncWorld) {
  const text = this.lastReply().text;
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to name its database`);
  const [db] = await server.inspect.query<{ name: string }>('SELECT current_database() AS name');
  const leaked = [...REQUIRED_CHECKS, ...REASONS, db?.name ?? ''].filter((word) => word !== '' && text.includes(word));
  this.assert.equal(leaked, [], `check names, reason codes or the database name in the public body: ${text}`);
  this.assert.ok(!/[0-9A-F]+\/[0-9A-F]+/i.test(text), `an LSN in the public body: ${text}`);
  this.assert.ok(!/\d/.test(text), `a number in the public body: ${text}`);
});

/** Damage to the state readiness is computed from, by the feature's wording; each leaves everything else as it was. */
const HEALTH_STATE_DEFECTS: Record<string, string[]> = {
  'absent, by deleting the worker heartbeat record': ['DELETE FROM synchro.wal_worker_state'],
  'absent, by removing the capture progress record': ['DELETE FROM synchro.wal_progress'],
  // The table refuses this state, so its check goes first. Both boundaries move past anything the worker would reach,
  // so it never writes over them while the scenario looks.
  'inconsistent, with an acknowledged boundary beyond the processed boundary': [
    `DO $$ DECLARE c text; BEGIN
       FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'synchro.wal_progress'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%acknowledged_end_lsn <= processed_end_lsn%' LOOP
         EXECUTE format('ALTER TABLE synchro.wal_progress DROP CONSTRAINT %I', c);
       END LOOP; END $$`,
    'UPDATE synchro.wal_progress SET processed_end_lsn = processed_end_lsn + 1073741824, acknowledged_end_lsn = processed_end_lsn + 2147483648',
  ],
  // The health functions run as the schema owner: without its own read of the limits the health query errors.
  'unavailable, because the health query fails': ['REVOKE SELECT ON synchro.capture_limits FROM synchro_owner'],
};

When(/^the harness makes the health state (.+)$/, async function (this: SyncWorld, defect: string) {
  const statements = HEALTH_STATE_DEFECTS[defect];
  if (statements === undefined) throw new Error(`no way to make the health state "${defect}" is known to the harness`);
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to change its health state`);
  for (const statement of statements) await server.sourceSql.query(statement);
});

/** Every required check "ok" but `check`, which is in `state`. */
function allOkBut(check: string, state: ForcedState): Record<string, ForcedState> {
  const states: Record<string, ForcedState> = Object.fromEntries(REQUIRED_CHECKS.map((name) => [name, 'ok']));
  if (!(check in states)) throw new Error(`"${check}" is not a required readiness check`);
  states[check] = state;
  return states;
}

Given(/^the harness forces capture check "([^"]+)" to state "(ok|failed|unknown)" and leaves every other check "ok"$/, async function (this: SyncWorld, check: string, state: ForcedState) {
  await forceChecks(this, allOkBut(check, state));
});

Then('server inspection reports overall ready false in the health detail', async function (this: SyncWorld) {
  const detail = await healthDetail(this);
  this.assert.equal(detail.ready, false, `health detail "ready" with checks ${JSON.stringify(detail.checks)}`);
});

interface Combination {
  states: Record<string, ForcedState>;
  status: number;
  body: string;
}
const combinations = new WeakMap<SyncWorld, { seed: number; answers: Combination[] }>();

When(/^the harness forces many generated combinations of the required checks, each drawn from "ok", "failed", "unknown" and absent$/, async function (this: SyncWorld) {
  const seed = generatedSeed();
  this.attach(`fast-check seed ${seed} (replay with SYNCHRO_SEED=${seed})`, 'text/plain');
  const state = fc.constantFrom<ForcedState>('ok', 'failed', 'unknown', 'absent');
  // Mostly healthy maps, so each check is often the only one wrong; the all-ok map is always among them.
  const map = fc.tuple(...REQUIRED_CHECKS.map(() => fc.oneof({ weight: 3, arbitrary: fc.constant<ForcedState>('ok') }, { weight: 1, arbitrary: state })));
  const drawn = fc.sample(map, { seed, numRuns: 40 });
  const answers: Combination[] = [];
  for (const states of [REQUIRED_CHECKS.map((): ForcedState => 'ok'), ...drawn]) {
    const forced = Object.fromEntries(REQUIRED_CHECKS.map((name, i) => [name, states[i] as ForcedState]));
    await forceChecks(this, forced);
    const reply = await requestReady(this);
    answers.push({ states: forced, status: reply.status, body: reply.text });
  }
  combinations.set(this, { seed, answers });
});

function combinationsOf(world: SyncWorld): { seed: number; answers: Combination[] } {
  const found = combinations.get(world);
  if (found === undefined) throw new Error('no generated check combinations were forced in this scenario');
  return found;
}
const allOk = (c: Combination) => Object.values(c.states).every((s) => s === 'ok');

Then(/^GET \/ready answers 200 \{"ready":true\} for exactly the combinations where every required check is "ok"$/, function (this: SyncWorld) {
  const { seed, answers } = combinationsOf(this);
  const healthy = answers.filter(allOk);
  this.assert.ok(healthy.length > 0, `seed ${seed}: the all-ok combination was among those forced`);
  const ready = answers.filter((c) => c.status === 200 && c.body === '{"ready":true}');
  this.assert.equal(ready.map((c) => c.states), healthy.map((c) => c.states), `seed ${seed}: the combinations GET /ready answered 200 {"ready":true}`);
});

Then(/^answers 503 \{"ready":false\} for every other combination$/, function (this: SyncWorld) {
  const { seed, answers } = combinationsOf(this);
  const others = answers.filter((c) => !allOk(c));
  this.assert.ok(others.length > 0, `seed ${seed}: some combination with a check not "ok" was forced`);
  const wrong = others.filter((c) => c.status !== 503 || c.body !== '{"ready":false}');
  this.assert.equal(wrong.map((c) => ({ states: c.states, status: c.status, body: c.body })), [], `seed ${seed}: combinations with a check not "ok" that were not answered 503 {"ready":false}`);
});
