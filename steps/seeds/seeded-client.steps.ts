/**
 * A client adapter process opened on a copy of a portable seed artifact
 * (`open` with `seedPath`), and what its inspection shows before it ever
 * connected: the seeded rows with their server versions and provenance, the
 * stored continuation receipts, no queue and no cursor.
 */
import { Given, Then } from '@cucumber/cucumber';
import { currentManifest } from '../integrity/context.ts';
import { type Manifest, scopeDigestHex } from '../integrity/oracle.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { artifactState, copyForClient, labelledVersion, labelRange, publishedResult } from './artifacts.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened on a copy of seed artifact /);
processPhrase(/^client "([^"]+)" inspection shows /);
processPhrase(/^the scope digest the harness codec computes over the rows client "([^"]+)" holds/);

interface RowVersion {
  table: string;
  recordId: string;
  serverVersion: string;
}

/** The manifest table `name` (by name or id). */
function manifestTable(manifest: Manifest, name: string): { table_id: string; name?: string; primary_key_field_id: string; fields: { field_id: string; name?: string; type: unknown }[] } {
  const tables = (manifest as unknown as { tables: { table_id: string; name?: string; primary_key_field_id: string; fields: { field_id: string; name?: string; type: unknown }[] }[] }).tables;
  const table = tables.find((t) => t.name === name || t.table_id === name);
  if (table === undefined) throw new Error(`the published manifest has no table "${name}"`);
  return table;
}

async function rowVersions(world: SyncWorld, name: string): Promise<RowVersion[]> {
  return (await (await world.process(name)).call<{ versions: RowVersion[] }>('inspectRowVersions')).versions;
}

async function openOnSeed(world: SyncWorld, name: string, user: string, file: string, extra: Record<string, unknown> = {}): Promise<void> {
  world.clientUsers.set(name, user);
  // The client gets its own copy, as an application copies the seed it ships; it then verifies and adopts it.
  await world.process(name, { seedPath: copyForClient(world, file, name), ...extra });
}

Given('client {string} of user {string} is opened on a copy of seed artifact {string}', async function (this: SyncWorld, name: string, user: string, file: string) {
  await openOnSeed(this, name, user, file);
});

Given('client {string} of user {string} is opened on a copy of seed artifact {string} with an invalid credential', async function (this: SyncWorld, name: string, user: string, file: string) {
  await openOnSeed(this, name, user, file, { token: `invalid-credential-${this.scenarioName}` });
});

Then('client {string} inspection shows rows {string} to {string} of {string} with server versions {string} to {string}', async function (this: SyncWorld, name: string, first: string, last: string, table: string, v1: string, v2: string) {
  const ids = labelRange(first, last);
  const labels = labelRange(v1, v2);
  this.assert.equal(ids.length, labels.length, 'as many rows as versions');
  const tableId = manifestTable(await currentManifest(this), table).table_id;
  const held = (await rowVersions(this, name)).filter((v) => v.table === tableId || v.table === table);
  this.assert.equal(held.map((v) => v.recordId).sort(), [...ids].sort(), `rows of ${table} with a server version on client "${name}"`);
  ids.forEach((id, k) => {
    this.assert.equal(held.find((v) => v.recordId === id)?.serverVersion, labelledVersion(this, labels[k] as string), `server version of ${table} ${id} on client "${name}" (${labels[k]})`);
  });
  const { rows } = await (await this.process(name)).call<{ rows: Record<string, unknown>[] }>('query', { sql: `SELECT * FROM "${table}"` });
  const key = this.model.keyColumn(table).name;
  this.assert.equal(rows.map((r) => String(r[key])).sort(), [...ids].sort(), `rows of ${table} the application reads on client "${name}"`);
});

Then('client {string} inspection shows provenance {string} for each of them', async function (this: SyncWorld, name: string, scope: string) {
  const client = await this.process(name);
  const { provenance } = await client.call<{ provenance: { scopeId: string; table: string; recordId: string }[] }>('inspectProvenance');
  const versions = await rowVersions(this, name);
  this.assert.ok(versions.length > 0, `client "${name}" holds seeded rows`);
  for (const v of versions) {
    this.assert.ok(
      provenance.some((p) => p.scopeId === scope && p.table === v.table && p.recordId === v.recordId),
      `row ${v.table} ${v.recordId} on client "${name}" has provenance ${scope}`,
    );
  }
});

async function assertNoMutation(world: SyncWorld, name: string): Promise<void> {
  const { mutations } = await (await world.process(name)).call<{ mutations: unknown[] }>('inspectMutations');
  world.assert.equal(mutations.length, 0, `mutations retained by client "${name}"`);
}

Then('client {string} inspection shows no mutation, no sealed batch and no cursor', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await assertNoMutation(this, name);
  const { batches } = await client.call<{ batches: unknown[] }>('inspectBatches');
  this.assert.equal(batches.length, 0, `sealed batches of client "${name}"`);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  this.assert.equal(
    scopes.filter((s) => s.cursor !== null),
    [],
    `scopes of client "${name}" holding a cursor`,
  );
});

Then('client {string} inspection shows no mutation', async function (this: SyncWorld, name: string) {
  await assertNoMutation(this, name);
});

Then('client {string} inspection shows no cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const { scopes } = await (await this.process(name)).call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  const cursor = scopes.find((s) => s.scopeId === scope)?.cursor ?? null;
  this.assert.equal(cursor, null, `cursor of ${scope} on client "${name}"`);
});

Then('client {string} inspection shows a stored receipt for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const { receipts } = await (await this.process(name)).call<{ receipts: { scopeId: string; receipt: string }[] }>('inspectSeedReceipts');
  this.assert.equal(receipts.map((r) => r.scopeId), [scope], `scopes of the receipts client "${name}" stores`);
});

Then('the scope digest the harness codec computes over the rows client {string} holds equals the {string} of {string} in the export manifest', async function (this: SyncWorld, name: string, member: string, scope: string) {
  const manifest = await currentManifest(this);
  const client = await this.process(name);
  const { provenance } = await client.call<{ provenance: { scopeId: string; table: string; recordId: string }[] }>('inspectProvenance');
  const versions = new Map((await rowVersions(this, name)).map((v) => [`${v.table}\u0000${v.recordId}`, v.serverVersion]));
  const rows: { table: string; row: unknown; serverVersion: string }[] = [];
  for (const tableId of new Set(provenance.filter((p) => p.scopeId === scope).map((p) => p.table))) {
    const shape = manifestTable(manifest, tableId);
    const names = shape.fields.map((f) => f.name ?? f.field_id);
    const pkName = shape.fields.find((f) => f.field_id === shape.primary_key_field_id)?.name ?? shape.primary_key_field_id;
    const { rows: held } = await client.call<{ rows: Record<string, unknown>[] }>('query', { sql: `SELECT ${names.map((n) => `"${n}"`).join(', ')} FROM "${shape.name ?? tableId}"` });
    const inScope = new Set(provenance.filter((p) => p.scopeId === scope && p.table === tableId).map((p) => p.recordId));
    for (const r of held) {
      const id = String(r[pkName]);
      if (!inScope.has(id)) continue;
      // The wire row keyed by field id; the scenario's columns are text and integers, which read back as such.
      const row = Object.fromEntries(shape.fields.map((f) => [f.field_id, r[f.name ?? f.field_id]]));
      rows.push({ table: shape.table_id, row, serverVersion: String(versions.get(`${tableId}\u0000${id}`)) });
    }
  }
  this.assert.ok(rows.length > 0, `client "${name}" holds rows of ${scope}`);
  const entry = publishedResult(this, lastPublished(this)).scopes.find((s) => s.id === scope) as Record<string, unknown> | undefined;
  this.assert.ok(entry !== undefined, `the export manifest lists ${scope}`);
  this.assert.equal(scopeDigestHex(manifest, scope, rows), entry?.[member], `the codec's scope digest over the ${rows.length} rows client "${name}" holds against the export's ${member}`);
});

/** The artifact the scenario's clients were opened on: the last one published. */
function lastPublished(world: SyncWorld): string {
  const last = [...artifactState(world).published.keys()].at(-1);
  if (last === undefined) throw new Error('no artifact was published in this scenario');
  return last;
}
