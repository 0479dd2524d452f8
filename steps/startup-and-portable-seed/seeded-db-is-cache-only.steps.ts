/**
 * SYNC-SEED-001 Seeded DB Is Cache Only
 * (features/startup-and-portable-seed/seeded-db-is-cache-only.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { currentManifest } from '../support/integrity/context.ts';
import { type Manifest, scopeDigestHex } from '../support/integrity/oracle.ts';
import { ident } from '../support/schema-and-versions/manifests.ts';
import { artifactState, publishedResult } from '../support/seeds/artifacts.ts';
import { assertNoPullNamesScope } from '../support/seeds/pull-scopes.ts';
import { openOnSeed } from '../support/seeds/seeded-client.ts';
import { addedScopes, answerOf, connectOf, focus, type Obj } from '../support/seeds/seeded-sync.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';
import { exchangesOf, objectBodyOf } from '../support/exchanges.ts';

Given('client {string} of user {string} is opened on a copy of seed artifact {string} with an invalid credential', async function (this: SyncWorld, name: string, user: string, file: string) {
  await openOnSeed(this, name, user, file, { token: `invalid-credential-${this.scenarioName}` });
});

Then('client {string} inspection shows no cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const { scopes } = await (await this.process(name)).call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  const cursor = scopes.find((s) => s.scopeId === scope)?.cursor ?? null;
  this.assert.equal(cursor, null, `cursor of ${scope} on client "${name}"`);
});

// Only phrases that observe the client itself make it an adapter process; phrases about proxy records work for either form.
processPhrase(/^client "([^"]+)" has row "/);

processPhrase(/^client "([^"]+)" no longer has rows /);

Then('the first request the proxy recorded from client {string} is {string} with an {string} header of the form {string}', async function (this: SyncWorld, name: string, request: string, header: string, form: string) {
  focus.set(this, name);
  const first = (await exchangesOf(this, name, { orUserCredential: true }))[0];
  this.assert.ok(first !== undefined, `the proxy recorded a request from client "${name}"`);
  if (first === undefined) return;
  this.assert.equal(`${first.method} ${first.path.split('?')[0]}`, request, `the first request of client "${name}"`);
  const value = first.requestHeaders[header.toLowerCase()];
  const prefix = form.replace(/<[^>]+>$/, '');
  this.assert.ok(typeof value === 'string' && value.startsWith(prefix) && value.length > prefix.length, `the ${header} header of that request has the form ${form} (it is ${JSON.stringify(value)})`);
});

Then('that connect carries the seed\'s schema reference, no {string} and a {string} member with exactly the key {string}', async function (this: SyncWorld, absent: string, member: string, scope: string) {
  const { request } = await connectOf(this);
  const seeded = publishedResult(this, [...artifactState(this).published.keys()].at(-1) as string);
  this.assert.equal(request.schema, seeded.schema, "the connect's schema reference against the seed's schema");
  this.assert.ok(!(absent in request), `the connect has no "${absent}" member`);
  const receipts = request[member] as Obj | undefined;
  this.assert.equal(Object.keys(receipts ?? {}), [scope], `the keys of "${member}"`);
  this.assert.ok(typeof receipts?.[scope] === 'string' && receipts[scope] !== '', `the receipt of ${scope} is a nonempty string`);
});

Then('the connect response lists {string} in {string} with a nonempty cursor', async function (this: SyncWorld, scope: string, _where: string) {
  const { status, response } = await connectOf(this);
  this.assert.equal(status, 200, 'the status of the connect');
  const cursor = addedScopes(response).find((s) => s.id === scope)?.cursor;
  this.assert.ok(typeof cursor === 'string' && cursor !== '', `the connect lists ${scope} in scopes.add with a nonempty cursor (found ${JSON.stringify(cursor)})`);
});

Then('the connect response does not list {string} in {string}', async function (this: SyncWorld, scope: string, _where: string) {
  const { status, response } = await connectOf(this);
  this.assert.equal(status, 200, 'the status of the connect');
  this.assert.ok(!addedScopes(response).some((s) => s.id === scope), `scopes.add of the connect does not list ${scope}: ${JSON.stringify(addedScopes(response))}`);
});

Then('the response status of that connect is {int}', async function (this: SyncWorld, status: number) {
  this.assert.equal((await connectOf(this)).status, status, 'the status of the connect');
});

Then('the next pull of client {string} presents, for {string}, exactly the cursor the connect returned', async function (this: SyncWorld, name: string, scope: string) {
  const all = await exchangesOf(this, name, { orUserCredential: true });
  const { exchange, response } = await connectOf(this, name);
  const returned = addedScopes(response).find((s) => s.id === scope)?.cursor;
  const pull = all.find((e) => e.seq > exchange.seq && e.endpoint === 'pull');
  this.assert.ok(pull !== undefined, `client "${name}" pulled after its connect`);
  const pullBody = pull === undefined ? undefined : objectBodyOf(pull.requestBody);
  const presented = (pullBody?.scopes as Obj | undefined)?.[scope] as Obj | undefined;
  this.assert.ok(typeof returned === 'string', `the connect returned a cursor for ${scope}`);
  this.assert.equal(presented?.cursor, returned, `the cursor of ${scope} in the first pull after the connect`);
});

Then('client {string} rebuilt scope {string} from cursor null', async function (this: SyncWorld, name: string, scope: string) {
  const rebuilds = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'rebuild' && objectBodyOf(e.requestBody)?.scope === scope);
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent a rebuild request for ${scope}`);
  this.assert.equal(objectBodyOf(rebuilds[0]?.requestBody ?? Buffer.from(''))?.cursor, null, `the cursor of the first rebuild request for ${scope}`);
  const last = rebuilds.at(-1);
  this.assert.equal(last === undefined ? undefined : answerOf(last)?.body?.has_more, false, `the last rebuild page of ${scope} was final`);
});

/** The codec's scope digest over the rows of `scope` that client `name` holds (provenance, versions, values). */
async function heldDigest(world: SyncWorld, name: string, scope: string): Promise<{ digest: string; count: number }> {
  const manifest = (await currentManifest(world)) as Manifest & { tables: { table_id: string; name?: string; primary_key_field_id: string; fields: { field_id: string; name?: string }[] }[] };
  const client = await world.process(name);
  const { provenance } = await client.call<{ provenance: { scopeId: string; table: string; recordId: string }[] }>('inspectProvenance');
  const { versions } = await client.call<{ versions: { table: string; recordId: string; serverVersion: string }[] }>('inspectRowVersions');
  const versionOf = new Map(versions.map((v) => [`${v.table}\u0000${v.recordId}`, v.serverVersion]));
  const rows: { table: string; row: unknown; serverVersion: string }[] = [];
  for (const tableId of new Set(provenance.filter((p) => p.scopeId === scope).map((p) => p.table))) {
    const shape = manifest.tables.find((t) => t.table_id === tableId || t.name === tableId);
    if (shape === undefined) throw new Error(`the manifest has no table ${tableId}`);
    const pkName = shape.fields.find((f) => f.field_id === shape.primary_key_field_id)?.name ?? shape.primary_key_field_id;
    const inScope = new Set(provenance.filter((p) => p.scopeId === scope && p.table === tableId).map((p) => p.recordId));
    const { rows: held } = await client.call<{ rows: Obj[] }>('query', { sql: `SELECT ${shape.fields.map((f) => ident(f.name ?? f.field_id)).join(', ')} FROM ${ident(shape.name ?? tableId)}` });
    for (const r of held) {
      const id = String(r[pkName]);
      if (!inScope.has(id)) continue;
      rows.push({ table: shape.table_id, row: Object.fromEntries(shape.fields.map((f) => [f.field_id, r[f.name ?? f.field_id]])), serverVersion: String(versionOf.get(`${tableId}\u0000${id}`)) });
    }
  }
  return { digest: scopeDigestHex(manifest, scope, rows), count: rows.length };
}

async function installedChecksum(world: SyncWorld, name: string, scope: string): Promise<unknown> {
  const { scopes } = await (await world.process(name)).call<{ scopes: { scopeId: string; checksum: unknown }[] }>('inspectScopes');
  return scopes.find((s) => s.scopeId === scope)?.checksum;
}

Then('client {string} installed for {string} the checksum of a terminal pull page, equal to the scope digest the harness codec computes over the seeded rows', async function (this: SyncWorld, name: string, scope: string) {
  const pulls = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'pull');
  const terminal = pulls
    .map((e) => answerOf(e)?.body)
    .reverse()
    .find((b) => b?.has_more === false);
  const claimed = ((terminal?.checksums as Obj | undefined)?.[scope] as Obj | undefined)?.digest;
  this.assert.ok(typeof claimed === 'string', `a terminal pull page of client "${name}" carried a checksum for ${scope}`);
  this.assert.equal(await installedChecksum(this, name, scope), claimed, `the checksum client "${name}" installed for ${scope}`);
  const held = await heldDigest(this, name, scope);
  this.assert.ok(held.count > 0, `client "${name}" holds rows of ${scope}`);
  this.assert.equal(held.digest, claimed, `the codec's digest over the ${held.count} rows of ${scope} client "${name}" holds`);
  const entry = publishedResult(this, [...artifactState(this).published.keys()].at(-1) as string).scopes.find((s) => s.id === scope);
  this.assert.equal(claimed, entry?.checksum, `the terminal checksum of ${scope} against the seed's`);
});

Then('client {string} installed for {string} the checksum of the final rebuild page', async function (this: SyncWorld, name: string, scope: string) {
  const rebuilds = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'rebuild' && objectBodyOf(e.requestBody)?.scope === scope);
  const final = rebuilds.map((e) => answerOf(e)?.body).findLast((b) => b?.has_more === false);
  const claimed = (final?.checksum as Obj | undefined)?.digest;
  this.assert.ok(typeof claimed === 'string', `a final rebuild page of ${scope} sent to client "${name}" carried a checksum`);
  this.assert.equal(await installedChecksum(this, name, scope), claimed, `the checksum client "${name}" installed for ${scope}`);
  const held = await heldDigest(this, name, scope);
  this.assert.equal(held.digest, claimed, `the codec's digest over the ${held.count} rows of ${scope} client "${name}" holds`);
});

Then('the proxy recorded no rebuild request for {string} from client {string}', async function (this: SyncWorld, scope: string, name: string) {
  const rebuilds = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'rebuild' && objectBodyOf(e.requestBody)?.scope === scope);
  this.assert.equal(rebuilds.length, 0, `rebuild requests for ${scope} from client "${name}"`);
});

Then('client {string} has row {string} of {string} with {string} {int}', async function (this: SyncWorld, name: string, id: string, table: string, column: string, value: number) {
  const key = this.model.keyColumn(table).name;
  const { rows } = await (await this.process(name)).call<{ rows: Obj[] }>('query', { sql: `SELECT ${ident(column)} AS v FROM ${ident(table)} WHERE ${ident(key)} = ?`, params: [id] });
  this.assert.equal(rows.map((r) => r.v), [value], `${column} of ${table} ${id} on client "${name}"`);
});

Then('every request the proxy recorded from client {string} is one of {string}, {string}, {string} and {string}', async function (this: SyncWorld, name: string, a: string, b: string, c: string, d: string) {
  const allowed = [a, b, c, d];
  const sent = await exchangesOf(this, name, { orUserCredential: true });
  this.assert.ok(sent.length > 0, `the proxy recorded requests from client "${name}"`);
  this.assert.equal(
    sent.map((e) => `${e.method} ${e.path.split('?')[0]}`).filter((r) => !allowed.includes(r)),
    [],
    `requests outside ${allowed.join(', ')}`,
  );
  focus.set(this, name);
});

Then('every one of those requests carries an {string} header', async function (this: SyncWorld, header: string) {
  const name = focus.get(this) ?? 'S';
  for (const e of await exchangesOf(this, name, { orUserCredential: true })) {
    const value = e.requestHeaders[header.toLowerCase()];
    this.assert.ok(typeof value === 'string' && value !== '', `request #${e.seq} ${e.path} of client "${name}" carries ${header}`);
  }
});

Then('every one of those requests matches the JSON schema of its endpoint', async function (this: SyncWorld) {
  const name = focus.get(this) ?? 'S';
  for (const e of await exchangesOf(this, name, { orUserCredential: true })) {
    const problems = e.violations.filter((v) => v.side === 'request');
    this.assert.equal(problems, [], `schema violations of request #${e.seq} ${e.path} of client "${name}"`);
  }
});

Then('the connect of client {string} was answered {int} with error code {string}', async function (this: SyncWorld, name: string, status: number, code: string) {
  const { status: got, response } = await connectOf(this, name);
  this.assert.equal({ status: got, code: (response?.error as Obj | undefined)?.code }, { status, code }, `the answer to the connect of client "${name}"`);
});

Then('the proxy recorded no {string}, {string} or {string} request from client {string}', async function (this: SyncWorld, a: string, b: string, c: string, name: string) {
  const sent = (await exchangesOf(this, name, { orUserCredential: true })).map((e) => e.endpoint);
  this.assert.ok(sent.length > 0, `the proxy recorded the connect of client "${name}"`);
  this.assert.equal(
    sent.filter((e) => [a, b, c].includes(e)),
    [],
    `${a}, ${b} or ${c} requests from client "${name}"`,
  );
});

Then('no pull of client {string} names scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const pulls = (await exchangesOf(this, name, { orUserCredential: true }))
    .filter((e) => e.endpoint === 'pull')
    .map((e) => ({ seq: e.seq, scopes: Object.keys((objectBodyOf(e.requestBody)?.scopes ?? {}) as Obj) }));
  assertNoPullNamesScope(this.assert, pulls, scope, name);
});

Then('client {string} no longer has rows {string}, {string} and {string} of {string}', async function (this: SyncWorld, name: string, a: string, b: string, c: string, table: string) {
  const key = this.model.keyColumn(table).name;
  const { rows } = await (await this.process(name)).call<{ rows: Obj[] }>('query', { sql: `SELECT ${ident(key)} AS id FROM ${ident(table)} WHERE ${ident(key)} IN (?, ?, ?)`, params: [a, b, c] });
  this.assert.equal(rows, [], `rows ${a}, ${b}, ${c} of ${table} on client "${name}"`);
});

Then('the push of client {string} carries an update of {string} with {string} equal to version {string}', async function (this: SyncWorld, name: string, id: string, member: string, label: string) {
  focus.set(this, name);
  const pushes = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'push');
  const mutations = pushes.flatMap((e) => ((objectBodyOf(e.requestBody)?.mutations ?? []) as Obj[]).filter((m) => m.op === 'update' && Object.values((m.pk as Obj | undefined) ?? {})[0] === id));
  this.assert.equal(mutations.length, 1, `updates of ${id} pushed by client "${name}"`);
  this.assert.equal(mutations[0]?.[member], labelledVersion(this, label), `"${member}" of the update of ${id} (${label})`);
});

Given('the write policy of table {string} denies every write by user {string}', async function (this: SyncWorld, table: string, _user: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  // A source table trigger that swallows every write is the application's own policy; after this step only the
  // scenario's user writes, so denying every write denies exactly that user's.
  const fn = `public.${table}_deny_writes`;
  await server.provision.exec(
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
     CREATE TRIGGER ${ident(`${table}_deny_writes`)} BEFORE INSERT OR UPDATE OR DELETE ON public.${ident(table)} FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
  );
});

Then('the server holds row {string} of table {string} with {string} {int} at version {string}', async function (this: SyncWorld, id: string, table: string, column: string, value: number, label: string) {
  // A fresh reader of its own rebuilds what the server serves: the row as the server holds it now.
  const mark = this.replies.length;
  const reader = this.newWire('seed-reader', 'seed-reader');
  await reader.connectAndRebuild();
  const tableId = reader.tableId(table);
  const pkField = reader.tableSchema(table).primary_key_field_id;
  const records = this.replies
    .slice(mark)
    .filter((r) => r.endpoint === 'rebuild' && r.status === 200)
    .flatMap((r) => ((r.json?.records ?? []) as Obj[]).filter((x) => x.table === tableId && (x.pk as Obj | undefined)?.[pkField] === id));
  this.assert.ok(records.length > 0, `the server serves ${table} ${id}`);
  const record = records.at(-1) as Obj;
  this.assert.equal((record.row as Obj)[reader.fieldId(table, column)], value, `${column} of ${table} ${id} on the server`);
  this.assert.equal(record.server_version, labelledVersion(this, label), `server version of ${table} ${id} (${label})`);
});
