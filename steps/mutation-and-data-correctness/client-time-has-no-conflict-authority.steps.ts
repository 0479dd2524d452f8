/**
 * SYNC-MUT-019 Client Time Has No Conflict Authority
 * (features/mutation-and-data-correctness/client-time-has-no-conflict-authority.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';
import { writesOf } from '../support/mutations/writes.ts';
import { NOW_PHRASE } from '../support/push-ledger/mutation-table.ts';
import { lastPush, type Obj } from '../support/push-ledger/state.ts';
import type { Reply } from '../support/reply.ts';
import { fieldId, tableNamed } from '../support/wire-values/recorded.ts';
import { sendExact, stepValue } from '../support/wire-values/requests.ts';
import type { Json } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" runs with time zone /);
processPhrase(/^every client_version the proxy recorded from client "([^"]+)"/);

// --- the form a client writes ------------------------------------------------------------------

Given('client {string} of user {string} runs with time zone {string}', function (this: SyncWorld, name: string, user: string, zone: string) {
  this.clientUsers.set(name, user);
  // The process starts with this zone as its local time; it is started by the next step that drives it.
  this.clientEnv.set(name, { ...this.clientEnv.get(name), TZ: zone });
});

/** Every client_version in the push requests client `name` sent, with the mutation it belongs to. */
async function sentClientVersions(world: SyncWorld, name: string): Promise<{ id: string; value: unknown }[]> {
  const pushes = await exchangesOf(world, name, { endpoints: ['push'] });
  const found = pushes.flatMap((e) => (((bodyOf(e.requestBody) as Obj | undefined)?.mutations ?? []) as Obj[]).map((m) => ({ id: String(m.mutation_id), value: m.client_version })));
  world.assert.ok(found.length > 0, `client "${name}" pushed a mutation`);
  return found;
}

Then(/^every client_version the proxy recorded from client "([^"]+)" matches (.+)$/, async function (this: SyncWorld, name: string, pattern: string) {
  const shape = new RegExp(pattern);
  const wrong = (await sentClientVersions(this, name)).filter((v) => typeof v.value !== 'string' || !shape.test(v.value));
  this.assert.equal(wrong, [], `client_version values of client "${name}" outside ${pattern}`);
});

Then(/^every client_version the proxy recorded from client "([^"]+)" lies within (\d+) minutes of the harness's UTC clock at the moment of the write$/, async function (this: SyncWorld, name: string, minutes: string) {
  const writes = writesOf(this, name);
  if (writes.length === 0) throw new Error(`client "${name}" executed no statement in this scenario`);
  const slack = Number(minutes) * 60_000;
  for (const { id, value } of await sentClientVersions(this, name)) {
    // The statement that captured this mutation (or, for a normalized one, the last statement before the push).
    const at = (writes.find((w) => w.captured.includes(id)) ?? writes.at(-1))?.at as number;
    const instant = Date.parse(String(value));
    this.assert.ok(Math.abs(instant - at) <= slack, `client_version ${String(value)} of ${id} lies ${Math.round((instant - at) / 1000)} s from the write at ${new Date(at).toISOString()}`);
  }
});

// --- what the server accepts -------------------------------------------------------------------

When(/^client "([^"]+)" sends a push request whose only mutation is an insert of row "([^"]+)" of table "([^"]+)" with columns (\{.*\}) and client_version (.+)$/, async function (this: SyncWorld, name: string, pk: string, table: string, columns: string, value: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation: Json = client.mutation({ op: 'insert', table, pk, columns: JSON.parse(columns) as Record<string, unknown> });
  if (value === 'absent') delete mutation.client_version;
  else mutation.client_version = stepValue(this, value);
  await sendExact(client, 'push', client.pushBody([mutation]));
});

/** The applied outcome of the last push, with the client_version its mutation carried. */
function acceptedWithClientVersion(world: SyncWorld): { outcome: Obj; clientVersion: string; reply: Reply } {
  const reply = lastPush(world);
  const accepted = (reply.json?.accepted ?? []) as Obj[];
  world.assert.equal(accepted.length, 1, `one accepted outcome: ${reply.text.slice(0, 500)}`);
  const outcome = accepted[0] as Obj;
  const sent = ((JSON.parse(reply.requestText) as Json).mutations as Json[]).find((m) => m.mutation_id === outcome.mutation_id);
  return { outcome, clientVersion: String(sent?.client_version), reply };
}

/** The client_version a step names: the text itself, or the one sent for "the harness's current UTC time". */
const named = (text: string, sent: string) => (text === NOW_PHRASE ? sent : text);

Then(/^the accepted server_row has updated_at within (\d+) seconds of the response's server_time and different from "([^"]*)"$/, async function (this: SyncWorld, seconds: string, text: string) {
  const { outcome, clientVersion, reply } = acceptedWithClientVersion(this);
  const table = await tableNamed(this, String(outcome.table));
  const updatedAt = (outcome.server_row as Obj | undefined)?.[fieldId(table, 'updated_at')];
  this.assert.ok(typeof updatedAt === 'string', `the accepted server_row carries updated_at: ${JSON.stringify(outcome.server_row)}`);
  const gap = Math.abs(Date.parse(String(updatedAt)) - Date.parse(String(reply.json?.server_time)));
  this.assert.ok(gap <= Number(seconds) * 1000, `updated_at ${String(updatedAt)} lies ${gap} ms from server_time ${String(reply.json?.server_time)}`);
  this.assert.notEqual(updatedAt, named(text, clientVersion), 'updated_at of the accepted row against the client_version');
});

Then(/^the accepted server_version neither equals nor contains "([^"]*)"$/, function (this: SyncWorld, text: string) {
  const { outcome, clientVersion } = acceptedWithClientVersion(this);
  const version = String(outcome.server_version);
  const value = named(text, clientVersion);
  this.assert.ok(!version.includes(value), `server_version ${version} holds ${value}`);
  this.assert.ok(!version.includes(value.replace(/\D/g, '')), `server_version ${version} holds the digits of ${value}`);
});

// --- generated pairs ---------------------------------------------------------------------------

interface Trial {
  state: 'absent' | 'live' | 'deleted';
  op: 'insert' | 'update' | 'delete';
  base: 'current' | 'stale' | 'absent';
  times: [string, string];
  answers: [Reply, Reply] | undefined;
}

const trials = new WeakMap<SyncWorld, { seed: number; runs: Trial[] }>();

/** Epoch milliseconds of 0001-01-01T00:00:00Z (Date.UTC would read year 1 as 1901). */
const YEAR_ONE = new Date(0).setUTCFullYear(1, 0, 1);

/** An instant from 0001-01-01 to 9999-12-31 in the canonical microsecond form. */
const instant = fc
  .tuple(fc.integer({ min: YEAR_ONE, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }), fc.integer({ min: 0, max: 999 }))
  .map(([ms, micro]) => `${new Date(ms).toISOString().slice(0, -1)}${String(micro).padStart(3, '0')}Z`);

When(
  /^the harness runs (\d+) generated trials, each on two fresh rows in identical states, pushing the same generated insert, update or delete with a current, stale or absent base to both rows with two client_version values drawn from \S+ to \S+$/,
  async function (this: SyncWorld, count: string) {
    const client = this.wire('W');
    const table = 'notes';
    const seed = generatedSeed();
    const draw = fc.record({
      state: fc.constantFrom('absent' as const, 'live' as const, 'deleted' as const),
      op: fc.constantFrom('insert' as const, 'update' as const, 'delete' as const),
      base: fc.constantFrom('current' as const, 'stale' as const, 'absent' as const),
      times: fc.tuple(instant, instant),
    });
    const runs: Trial[] = fc.sample(draw, { numRuns: Number(count), seed }).map((d) => ({ ...d, answers: undefined }));
    trials.set(this, { seed, runs });
    for (const [k, trial] of runs.entries()) {
      const keys = [`p-${k}-a`, `p-${k}-b`];
      const versions = new Map<string, string>();
      // The two rows are brought to the same state, each by its own writes.
      if (trial.state !== 'absent') {
        const made = await client.push(keys.map((pk) => client.mutation({ op: 'insert', table, pk, columns: { owner_id: client.userId, body: 'same' } })));
        for (const o of (made.json?.accepted ?? []) as Obj[]) versions.set(String(Object.values(o.pk as Obj)[0]), String(o.server_version));
        if (trial.state === 'deleted') {
          const gone = await client.push(keys.map((pk) => client.mutation({ op: 'delete', table, pk, base_version: versions.get(pk) as string })));
          for (const o of (gone.json?.accepted ?? []) as Obj[]) versions.set(String(Object.values(o.pk as Obj)[0]), String(o.server_version));
        }
      }
      const answers = [];
      for (const [i, pk] of keys.entries()) {
        const base = trial.base === 'current' ? (versions.get(pk) ?? 'sv-never-issued') : trial.base === 'stale' ? 'sv-stale' : undefined;
        const mutation = client.mutation({
          op: trial.op,
          table,
          pk,
          client_version: trial.times[i] as string,
          ...(trial.op === 'delete' ? {} : { columns: trial.op === 'insert' ? { owner_id: client.userId, body: 'written' } : { body: 'written' } }),
          ...(base === undefined ? {} : { base_version: base }),
        });
        // Some generated pushes are invalid on purpose (an update without a base): both rows must get the same answer then too.
        answers.push(await sendExact(client, 'push', client.pushBody([mutation])));
      }
      trial.answers = answers as [Reply, Reply];
    }
  },
);

function trialRuns(world: SyncWorld) {
  const run = trials.get(world);
  if (run === undefined) throw new Error('no generated trials were run in this scenario');
  return run;
}

const verdict = (r: Reply) => {
  const o = [...((r.json?.accepted ?? []) as Obj[]), ...((r.json?.rejected ?? []) as Obj[])][0];
  return { http: r.status, error: r.json?.error?.code, status: o?.status, code: o?.code };
};

Then('in every trial both outcomes have the same status and code', function (this: SyncWorld) {
  const { seed, runs } = trialRuns(this);
  const differing = runs.filter((t) => JSON.stringify(verdict(t.answers?.[0] as Reply)) !== JSON.stringify(verdict(t.answers?.[1] as Reply)));
  this.assert.equal(
    differing.map((t) => `${t.op} on ${t.state} from ${t.base} base at ${t.times.join(' / ')}: ${JSON.stringify(verdict(t.answers?.[0] as Reply))} vs ${JSON.stringify(verdict(t.answers?.[1] as Reply))}`),
    [],
    `trials whose two outcomes differ (fast-check seed ${seed})`,
  );
});

Then('in every trial the two resulting rows are equal in every field except the key and server-owned time fields', async function (this: SyncWorld) {
  const { seed, runs } = trialRuns(this);
  const shape = await tableNamed(this, 'notes');
  const skip = new Set([shape.primary_key_field_id, fieldId(shape, 'updated_at'), fieldId(shape, 'deleted_at')]);
  const rowOf = (r: Reply) => {
    const o = [...((r.json?.accepted ?? []) as Obj[]), ...((r.json?.rejected ?? []) as Obj[])][0];
    const row = o?.server_row as Obj | undefined;
    if (row === undefined) return null;
    // A deletion time is server-owned; whether it is set is not.
    return { ...Object.fromEntries(Object.entries(row).filter(([k]) => !skip.has(k))), deleted: row[fieldId(shape, 'deleted_at')] !== null };
  };
  this.assert.ok(runs.some((t) => rowOf(t.answers?.[0] as Reply) !== null), 'some trial left a row to compare');
  const differing = runs.filter((t) => JSON.stringify(rowOf(t.answers?.[0] as Reply)) !== JSON.stringify(rowOf(t.answers?.[1] as Reply)));
  this.assert.equal(differing.map((t) => `${t.op} on ${t.state} at ${t.times.join(' / ')}`), [], `trials whose resulting rows differ (fast-check seed ${seed})`);
});
