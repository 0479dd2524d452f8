/**
 * SYNC-CAP-009 Qualified Registered Relation Identity
 * (features/server-change-capture/qualified-registered-relation-identity.feature):
 * the steps only this requirement uses. Tables live in schemas "a" and "b"
 * and are registered by qualified name (steps/support/capture-order/relation-identity.ts);
 * registration outcomes go where the shared registration checks read them
 * (steps/support/scopes/function-contract.ts).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import { assertNoNewGeneration, rememberGenerationBefore } from '../support/capture-order/registry-generations.ts';
import { bindRegistration, createSchemas, prepareProjection, qualified, register, templateFunction } from '../support/capture-order/relation-identity.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { attemptAsOwner, contractState } from '../support/scopes/function-contract.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

Given('the source database has schemas {string} and {string} each with a table {string}:', async function (this: SyncWorld, first: string, second: string, table: string, script: string) {
  await createSchemas(this, [first, second], script);
  // A membership function body (SQL-standard) can only name a projection that exists: the first schema's table gets one.
  await prepareProjection(this, `${first}.${table}`);
});

When('the operator registers table {string} with primary key {string}', async function (this: SyncWorld, relation: string, key: string) {
  await rememberGenerationBefore(this);
  contractState(this).outcome = await attemptAsOwner(this, 'SELECT synchro.synchro_register_table(relation => $1, pk_column => $2)', [relation, key]);
});

Then('no new active registry generation exists', async function (this: SyncWorld) {
  await assertNoNewGeneration(this);
});

Given('the operator has registered table {string} with primary key {string} and membership scope {string}', async function (this: SyncWorld, relation: string, key: string, template: string) {
  await register(this, relation, key, await templateFunction(this, relation, key, template));
});

Given('the operator has registered table {string} with primary key {string} and membership function {string}', async function (this: SyncWorld, relation: string, key: string, fn: string) {
  await register(this, relation, key, fn);
});

When('the harness adds relation {string} to the publication that captures {string}', async function (this: SyncWorld, relation: string, registered: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to alter a publication`);
  const [schema, name] = registered.split('.');
  const publications = await inspectRows<{ pubname: string }>(this, 'SELECT pubname FROM pg_publication_tables WHERE schemaname = $1 AND tablename = $2', [schema, name]);
  if (publications.length !== 1) throw new Error(`expected one publication of ${registered}, found ${JSON.stringify(publications.map((p) => p.pubname))}`);
  await server.provision.exec(`ALTER PUBLICATION ${qualified(publications[0]?.pubname as string)} ADD TABLE ${qualified(relation)}`);
});

Then('server inspection reports the capture check {string} as {string}', async function (this: SyncWorld, check: string, state: string) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the health detail`);
  const detail = (await server.inspect.healthDetail()) as { checks?: Record<string, { state?: string; reason?: string }> };
  this.assert.equal(detail.checks?.[check]?.state, state, `health detail check "${check}": ${JSON.stringify(detail.checks?.[check])}`);
});

/** The last connect answer the scenario received. */
function lastConnect(world: SyncWorld) {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'connect');
  if (reply === undefined) throw new Error('no connect response was received in this scenario');
  return reply;
}

Then('the manifest in the connect response has a table with a {string} and fields with {string} values', function (this: SyncWorld, tableMember: string, fieldMember: string) {
  const reply = lastConnect(this);
  this.assert.equal(reply.status, 200, `connect answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const tables = ((reply.json?.schema_definition?.tables ?? []) as Obj[]).filter((t) => typeof t[tableMember] === 'string' && t[tableMember] !== '');
  this.assert.ok(tables.length > 0, `the connect response carries a manifest table with a "${tableMember}": ${reply.text.slice(0, 500)}`);
  for (const table of tables) {
    const fields = (table.fields ?? []) as Obj[];
    this.assert.ok(fields.length > 0 && fields.every((f) => typeof f[fieldMember] === 'string' && f[fieldMember] !== ''), `every field of table ${String(table[tableMember])} has a "${fieldMember}"`);
  }
});

/** Every string anywhere in a JSON value, object keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  return [];
}

Then('no string in the connect response equals {string}, {string} or the OID of {string}', async function (this: SyncWorld, schema: string, relation: string, oidOf: string) {
  const reply = lastConnect(this);
  const [row] = await inspectRows<{ oid: string }>(this, 'SELECT $1::regclass::oid::text AS oid', [oidOf]);
  const forbidden = new Set([schema, relation, row?.oid as string]);
  const found = strings(reply.json).filter((s) => forbidden.has(s));
  this.assert.equal(found, [], `strings of the connect response naming the physical relation (${[...forbidden].join(', ')}): ${reply.text.slice(0, 500)}`);
});

Then('the response body contains none of {string}, {string}, {string}', function (this: SyncWorld, first: string, second: string, third: string) {
  const reply = this.lastReply();
  const found = [first, second, third].filter((name) => reply.text.includes(name));
  this.assert.equal(found, [], `physical names in the ${reply.endpoint} answer: ${reply.text.slice(0, 500)}`);
});

Then('no response to client {string} ever lists row {string}', function (this: SyncWorld, name: string, key: string) {
  const clientId = this.wire(name).clientId;
  const answers = this.replies.filter((r) => (r.endpoint === 'pull' || r.endpoint === 'rebuild') && r.requestText.includes(`"client_id":"${clientId}"`));
  this.assert.ok(answers.length > 0, `client "${name}" pulled or rebuilt in this scenario`);
  const listing = answers.filter((r) => [...((r.json?.changes ?? []) as Obj[]), ...((r.json?.records ?? []) as Obj[])].some((c) => String(keyValue(c.pk)) === key));
  this.assert.equal(listing.map((r) => `${r.endpoint} ${r.status}`), [], `answers to client "${name}" listing row ${key}`);
});

When('the operator performs a controlled reconfiguration that binds table {string} to relation {string}', async function (this: SyncWorld, table: string, relation: string) {
  const missing = await bindRegistration(this, table, relation);
  if (missing !== undefined) return undeterminedWithout(this, missing);
});

const recordedIds = new WeakMap<SyncWorld, Map<string, { tableId: string; fieldIds: string[] }>>();

Given('the harness records the {string} and every {string} of table {string} in the manifest as {string}', function (this: SyncWorld, tableMember: string, fieldMember: string, table: string, label: string) {
  if (tableMember !== 'table_id' || fieldMember !== 'field_id') throw new Error(`a manifest table is identified by "table_id" and "field_id", not "${tableMember}" and "${fieldMember}"`);
  const shape = this.wire('A').tableSchema(table);
  const ids = recordedIds.get(this) ?? new Map();
  ids.set(label, { tableId: shape.table_id, fieldIds: shape.fields.map((f) => f.field_id).sort() });
  recordedIds.set(this, ids);
});

Then('the manifest in the connect response keeps the {string} and field IDs recorded as {string}', function (this: SyncWorld, tableMember: string, label: string) {
  if (tableMember !== 'table_id') throw new Error(`a manifest table is identified by "table_id", not "${tableMember}"`);
  const before = recordedIds.get(this)?.get(label);
  if (before === undefined) throw new Error(`no manifest identities were recorded as "${label}" in this scenario`);
  const reply = lastConnect(this);
  this.assert.equal(reply.status, 200, `connect answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const manifest = (reply.json?.schema_definition ?? this.wire('A').manifest) as { tables?: Array<{ table_id: string; fields: Array<{ field_id: string }> }> } | undefined;
  const table = manifest?.tables?.find((t) => t.table_id === before.tableId);
  this.assert.equal(
    { tableId: table?.table_id, fieldIds: table?.fields.map((f) => f.field_id).sort() },
    { tableId: before.tableId, fieldIds: before.fieldIds },
    `the manifest table and field IDs after the reconfiguration: ${JSON.stringify(manifest?.tables?.map((t) => t.table_id))}`,
  );
});
