/**
 * SYNC-MUT-009 Exact Batch Replay
 * (features/mutation-and-data-correctness/exact-batch-replay.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { editedBatch, reorderedAndRespaced } from '../support/push-ledger/batch-edits.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { ledgerState, type Obj, outcomeInLastPush, sentBatch } from '../support/push-ledger/state.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { fieldId, tableNamed } from '../support/wire-values/recorded.ts';
import { sendExact } from '../support/wire-values/requests.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

Then('the accepted outcome of mutation {string} has server_version {string} and server_row body {string}', async function (this: SyncWorld, mutationId: string, label: string, body: string) {
  const outcome = outcomeInLastPush(this, mutationId);
  this.assert.equal(outcome.status, 'applied', `status of ${mutationId}: ${JSON.stringify(outcome)}`);
  this.assert.equal(outcome.server_version, labelledVersion(this, label), `server_version of ${mutationId} (${label})`);
  const table = await tableNamed(this, String(outcome.table));
  this.assert.equal((outcome.server_row as Obj | undefined)?.[fieldId(table, 'body')], body, `server_row body of ${mutationId}: ${JSON.stringify(outcome.server_row)}`);
});

Then('the rejected outcome of mutation {string} has status {string}, code {string} and server_version {string}', function (this: SyncWorld, mutationId: string, status: string, code: string, label: string) {
  const outcome = outcomeInLastPush(this, mutationId);
  this.assert.equal(
    { status: outcome.status, code: outcome.code, server_version: outcome.server_version },
    { status, code, server_version: labelledVersion(this, label) },
    `outcome of ${mutationId} (${label})`,
  );
});

When("client {string} resends batch {string} with every object's members in reverse order and two spaces after each separator", async function (this: SyncWorld, name: string, batchId: string) {
  const batch = sentBatch(this, batchId);
  await this.wire(name).post('/sync/push', undefined, { raw: reorderedAndRespaced(batch.requestText), endpoint: 'push' });
});

When(/^client "([^"]+)" resends batch "([^"]+)" with (?!every object's members)(.+)$/, async function (this: SyncWorld, name: string, batchId: string, change: string) {
  const client = this.wire(name);
  await sendExact(client, 'push', editedBatch(client, sentBatch(this, batchId).requestText, change));
});

When('client {string} sends batch {string} {int} times concurrently with:', async function (this: SyncWorld, name: string, batchId: string, times: number, table: DataTable) {
  const client = this.wire(name);
  const text = JSON.stringify(client.pushBody(mutationsFromTable(this, client, table), batchId));
  // All requests are on the wire before any answer is read: the server sees them at once.
  const replies = await Promise.all(Array.from({ length: times }, () => client.post('/sync/push', undefined, { raw: text, endpoint: 'push' })));
  ledgerState(this).group = replies;
});

function group(world: SyncWorld) {
  const replies = ledgerState(world).group;
  if (replies.length === 0) throw new Error('no group of concurrent requests was sent in this scenario');
  return replies;
}

Then('every response is either status 200 with one identical body or status 503 with error code "temporary_unavailable" and a Retry-After header', function (this: SyncWorld) {
  const replies = group(this);
  const bodies = new Set(replies.filter((r) => r.status === 200).map((r) => r.text));
  this.assert.ok(bodies.size <= 1, `the 200 answers carry ${bodies.size} different bodies:\n${[...bodies].map((b) => b.slice(0, 600)).join('\n')}`);
  for (const r of replies.filter((x) => x.status !== 200)) {
    this.assert.equal({ status: r.status, code: r.json?.error?.code }, { status: 503, code: 'temporary_unavailable' }, `a concurrent answer: ${r.text.slice(0, 300)}`);
    this.assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, `Retry-After of a 503 answer: ${r.text.slice(0, 200)}`);
  }
});

Then('no response has status {int}', function (this: SyncWorld, status: number) {
  const replies = group(this);
  this.assert.equal(replies.filter((r) => r.status === status).map((r) => r.text.slice(0, 300)), [], `answers with status ${status}`);
});

Then('at least one response has status {int}', function (this: SyncWorld, status: number) {
  const replies = group(this);
  this.assert.ok(replies.some((r) => r.status === status), `no answer has status ${status}: ${replies.map((r) => r.status).join(', ')}`);
});

const COUNTER = 'conformance_trigger_seen';

async function sourceSql(world: SyncWorld) {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  return server.sourceSql;
}

async function triggerCount(world: SyncWorld): Promise<number> {
  const rows = await (await sourceSql(world)).query<{ n: string }>(`SELECT count(*)::text AS n FROM public.${COUNTER}`);
  return Number(rows[0]?.n);
}

Given('table {string} has a source trigger that counts every row it sees inserted or updated', async function (this: SyncWorld, table: string) {
  const sql = await sourceSql(this);
  // An application trigger with a side effect of its own: one counter row per row it saw written.
  await sql.query(`
    CREATE TABLE public.${COUNTER} (seen_at timestamptz NOT NULL DEFAULT clock_timestamp(), op text NOT NULL);
    CREATE FUNCTION public.${COUNTER}_count() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    BEGIN INSERT INTO public.${COUNTER} (op) VALUES (TG_OP); RETURN NULL; END $$;
    CREATE TRIGGER ${COUNTER} AFTER INSERT OR UPDATE ON public."${table.replaceAll('"', '""')}" FOR EACH ROW EXECUTE FUNCTION public.${COUNTER}_count();`);
});

Given('the source trigger count is remembered', async function (this: SyncWorld) {
  ledgerState(this).counts.set('trigger', await triggerCount(this));
});

Then('the source trigger count is unchanged', async function (this: SyncWorld) {
  const before = ledgerState(this).counts.get('trigger');
  if (before === undefined) throw new Error('no source trigger count was remembered earlier in this scenario');
  this.assert.ok(before > 0, 'the trigger counted the first execution, so it can see a second one');
  this.assert.equal(await triggerCount(this), before, 'rows the source trigger saw written since the count was remembered');
});

const rebuildKey = (name: string, scope: string) => `${name}/${scope}`;

Given('client {string} has received rebuild page 1 of scope {string} with limit {int} and has_more true', async function (this: SyncWorld, name: string, scope: string, limit: number) {
  // Pushed rows are served once capture made them visible.
  await awaitCapture(this);
  const rebuildId = randomUUID();
  const reply = await this.wire(name).rebuildPage(scope, rebuildId, null, limit);
  if (reply.status !== 200 || reply.json?.has_more !== true || typeof reply.json?.cursor !== 'string') {
    throw new Error(`the first rebuild page of ${scope} with limit ${limit} did not leave a continuation: ${reply.status} ${reply.text.slice(0, 400)}`);
  }
  generationsState(this).openRebuilds.set(rebuildKey(name, scope), { rebuildId, cursor: reply.json.cursor, limit });
});

When('client {string} requests the next rebuild page of scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const open = generationsState(this).openRebuilds.get(rebuildKey(name, scope));
  if (open === undefined) throw new Error(`client "${name}" holds no open rebuild of scope "${scope}"`);
  await this.wire(name).rebuildPage(scope, open.rebuildId, open.cursor, open.limit);
});
