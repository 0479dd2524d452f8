/**
 * SYNC-PROTO-001 Canonical Time Format
 * (features/protocol/canonical-time-format.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import type { Reply } from '../support/reply.ts';
import { focusChange } from '../support/wire-values/focus.ts';
import { serverRowField } from '../support/wire-values/outcomes.ts';
import { fieldId, keyValue, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';

processPhrase(/^client "([^"]+)" sent no push, pull or rebuild request after that connect$/);

Then(/^client "([^"]+)" sent no push, pull or rebuild request after that connect$/, async function (this: SyncWorld, name: string) {
  const mine = await exchangesOf(this, name);
  const connect = [...mine].reverse().find((e) => e.endpoint === 'connect' && e.rewritten !== undefined);
  this.assert.ok(connect, `no connect response to client "${name}" was rewritten by the proxy`);
  const later = mine.filter((e) => e.seq > connect.seq && ['push', 'pull', 'rebuild'].includes(e.endpoint)).map((e) => `${e.endpoint} #${e.seq}`);
  this.assert.equal(later, [], `requests of client "${name}" after the rewritten connect #${connect.seq}`);
});

Then('the server_row of that outcome has field {string} equal to {string}', async function (this: SyncWorld, column: string, expected: string) {
  this.assert.equal(await serverRowField(this, column), expected, `server_row ${column}`);
});

/**
 * Why `text` is not a real UTC instant (undefined when it is): it must end in
 * Z and name a calendar date and time that exist (no Feb 30, no hour 24, no
 * second 60).
 */
function utcInstantProblem(text: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?Z$/.exec(text);
  if (!m) return `${JSON.stringify(text)} is not a UTC date-time ending in Z`;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const same = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && date.getUTCHours() === h && date.getUTCMinutes() === mi && date.getUTCSeconds() === s;
  return same ? undefined : `${JSON.stringify(text)} names no existing instant`;
}

function lastReplyOf(world: SyncWorld, endpoint: string): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === endpoint);
  if (!reply) throw new Error(`no ${endpoint} response has been received in this scenario`);
  return reply;
}

function requestSchemaHash(reply: Reply): string | undefined {
  try {
    return (JSON.parse(reply.requestText) as { schema?: { hash?: string } }).schema?.hash;
  } catch {
    return undefined;
  }
}

Then('the pull response change for row {string} of table {string} has field {string} equal to {string}', async function (this: SyncWorld, pk: string, tableName: string, column: string, expected: string) {
  const reply = lastReplyOf(this, 'pull');
  this.assert.equal(reply.status, 200, `the last pull was answered ${reply.status}: ${reply.text}`);
  const table = await tableNamed(this, tableName);
  const changes = ((reply.json.changes ?? []) as Obj[]).filter((c) => c.table === table.table_id && String(keyValue(c.pk)) === pk);
  this.assert.equal(changes.length, 1, `the pull response carries ${changes.length} changes for ${tableName} row ${pk}: ${reply.text}`);
  const change = changes[0] as Obj;
  focusChange(this, { message: change, endpoint: 'pull', schemaHash: requestSchemaHash(reply) });
  const row = change.row as Obj | undefined;
  this.assert.ok(row, `the change for ${pk} carries no row: ${JSON.stringify(change)}`);
  this.assert.equal(row[fieldId(table, column)], expected, `${column} of row ${pk} as pulled`);
});

Then('the rebuild record for row {string} of table {string} has field {string} equal to {string}', async function (this: SyncWorld, pk: string, tableName: string, column: string, expected: string) {
  const table = await tableNamed(this, tableName);
  // The pages of the latest rebuild run, newest first: the record is on one of them.
  const pages = this.replies.filter((r) => r.endpoint === 'rebuild' && r.status === 200).reverse();
  this.assert.ok(pages.length > 0, 'no rebuild page was answered 200 in this scenario');
  const found = pages.flatMap((p) => ((p.json.records ?? []) as Obj[]).map((record) => ({ record, page: p }))).find(({ record }) => record.table === table.table_id && String(keyValue(record.pk)) === pk);
  this.assert.ok(found, `no rebuild record for ${tableName} row ${pk}`);
  focusChange(this, { message: found.record, endpoint: 'rebuild', schemaHash: requestSchemaHash(found.page) });
  const row = found.record.row as Obj | undefined;
  this.assert.ok(row, `the record for ${pk} carries no row: ${JSON.stringify(found.record)}`);
  this.assert.equal(row[fieldId(table, column)], expected, `${column} of row ${pk} as rebuilt`);
});

Then('the response member {string} matches {string} and names a valid UTC instant', function (this: SyncWorld, pointer: string, pattern: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the response was ${reply.status}: ${reply.text}`);
  const value = pointer.slice(1).split('/').reduce<unknown>((at, token) => (at as Obj | undefined)?.[token], reply.json);
  this.assert.equal(typeof value, 'string', `${pointer} must be a string, not ${JSON.stringify(value)}`);
  this.assert.match(value as string, new RegExp(pattern), `${pointer} of the ${reply.endpoint} response`);
  this.assert.equal(utcInstantProblem(value as string), undefined, `${pointer} of the ${reply.endpoint} response`);
});

/** Every mutation of every push request client `name` sent, in the order sent. */
async function pushedMutations(world: SyncWorld, name: string): Promise<Obj[]> {
  const pushes = await exchangesOf(world, name, { endpoints: ['push'] });
  return pushes.flatMap((e) => ((bodyOf(e.requestBody) as Obj | undefined)?.mutations ?? []) as Obj[]);
}

Then('every mutation in every push request client {string} sent has {string} matching {string} and naming a valid UTC instant', async function (this: SyncWorld, name: string, member: string, pattern: string) {
  const mutations = await pushedMutations(this, name);
  this.assert.ok(mutations.length > 0, `client "${name}" sent no mutation at all`);
  for (const m of mutations) {
    const value = m[member];
    this.assert.equal(typeof value, 'string', `${member} of mutation ${String(m.mutation_id)} must be a string, not ${JSON.stringify(value)}`);
    this.assert.match(value as string, new RegExp(pattern), `${member} of mutation ${String(m.mutation_id)}`);
    this.assert.equal(utcInstantProblem(value as string), undefined, `${member} of mutation ${String(m.mutation_id)}`);
  }
});

Then('the push request client {string} sent for row {string} has column {string} equal to {string}', async function (this: SyncWorld, name: string, pk: string, column: string, expected: string) {
  const mutations = (await pushedMutations(this, name)).filter((m) => String(keyValue(m.pk)) === pk && m.columns !== undefined);
  this.assert.ok(mutations.length > 0, `client "${name}" pushed no mutation with columns for row ${pk}`);
  for (const m of mutations) {
    const table = await tableNamed(this, String(m.table));
    this.assert.equal((m.columns as Obj)[fieldId(table, column)], expected, `${column} of mutation ${String(m.mutation_id)} for row ${pk}`);
  }
});
