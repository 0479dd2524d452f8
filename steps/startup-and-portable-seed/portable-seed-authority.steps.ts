/**
 * SYNC-SEED-002 Portable Seed Authority
 * (features/startup-and-portable-seed/portable-seed-authority.feature):
 * the steps only this requirement uses. An artifact is read with SQLite on
 * its own (steps/support/seed-snapshots/artifact-contents.ts); the export
 * manifest is the one the export reported (`SeedArtifactResult.exportManifest`).
 */
import { Given, Then } from '@cucumber/cucumber';
import { currentManifest } from '../support/integrity/context.ts';
import { sourceSql } from '../support/scopes/roles.ts';
import { artifactKeys, artifactRows, declaredScopes, provenanceScopes, rowProvenance } from '../support/seed-snapshots/artifact-contents.ts';
import { artifactState } from '../support/seeds/artifacts.ts';
import type { SyncWorld } from '../support/world.ts';

Given('table {string} places each row in one scope for each comma-separated scope ID in {string}', function (this: SyncWorld, name: string, column: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already installed: declare its placements before the first server step`);
  if (!table.columns.some((c) => c.name === column)) throw new Error(`table "${name}" has no column "${column}"`);
  table.eachListed = [...(table.eachListed ?? []), { template: '{id}', column }];
});

async function declarePortability(world: SyncWorld, scope: string, portable: boolean): Promise<void> {
  const server = await world.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.registerSharedScope(scope, portable);
}

Given('shared scope {string} is registered as not portable', async function (this: SyncWorld, scope: string) {
  await declarePortability(this, scope, false);
});

Given(/^the operator registers shared scope "([^"]+)" as (portable|not portable)$/, async function (this: SyncWorld, scope: string, portability: string) {
  await declarePortability(this, scope, portability === 'portable');
});

/** The export manifest of the last export, which had to be published. */
function lastExportManifest(world: SyncWorld): Record<string, unknown> {
  const last = artifactState(world).last;
  if (last === undefined) throw new Error('no portable seed export ran in this scenario');
  world.assert.ok(last.result.ok, `the export was published: ${JSON.stringify(last.result).slice(0, 400)}`);
  const manifest = last.result.ok ? last.result.exportManifest : undefined;
  if (manifest === undefined) throw new Error('the export reported no export manifest (SeedArtifactResult.exportManifest)');
  return manifest;
}

function listedScopes(world: SyncWorld, member: string): string[] {
  const entries = lastExportManifest(world)[member];
  world.assert.ok(Array.isArray(entries), `the export manifest's "${member}" is a list: ${JSON.stringify(entries)}`);
  return ((Array.isArray(entries) ? entries : []) as { id?: unknown }[]).map((e) => String(e.id));
}

Then(/^the export manifest lists in "([^"]+)" exactly the scope IDs (\[.*\])$/, function (this: SyncWorld, member: string, json: string) {
  const expected = (JSON.parse(json) as string[]).sort();
  this.assert.equal([...listedScopes(this, member)].sort(), expected, `the scope IDs of the export manifest's "${member}"`);
});

Then('the export manifest does not list scope {string}', function (this: SyncWorld, scope: string) {
  const listed = listedScopes(this, 'portable_scopes');
  this.assert.ok(!listed.includes(scope), `the export manifest lists ${JSON.stringify(listed)}, which must not include ${scope}`);
});

Then('the seed artifact {string} holds exactly these rows:', function (this: SyncWorld, file: string, table: { hashes(): Record<string, string>[] }) {
  const expected = table
    .hashes()
    .map((r) => `${r.table}/${r.id}`)
    .sort();
  this.assert.equal(artifactRows(this, file), expected, `the rows ${file} holds, over the scenario's tables`);
});

Then('the seed artifact {string} holds provenance only for scope {string}', function (this: SyncWorld, file: string, scope: string) {
  this.assert.equal(provenanceScopes(this, file), [scope], `the scope IDs ${file} records (row provenance, seed receipts, scope records)`);
});

Then('the seed artifact {string} holds no provenance for scope {string}', function (this: SyncWorld, file: string, scope: string) {
  const scopes = provenanceScopes(this, file);
  this.assert.ok(!scopes.includes(scope), `${file} records the scopes ${JSON.stringify(scopes)}, which must not include ${scope}`);
});

Then('the export used no user credential and the proxy recorded no sync request during it', async function (this: SyncWorld) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no portable seed export ran in this scenario');
  const during = (await this.proxy()).exchanges.slice(last.proxyWindow.from, last.proxyWindow.to);
  this.assert.equal(
    during.map((e) => `${e.endpoint} ${e.requestHeaders.authorization === undefined ? 'without' : 'with'} a credential`),
    [],
    'requests the proxy recorded while the export ran',
  );
});

Then('the seed artifact {string} holds row {string} of {string}', function (this: SyncWorld, file: string, id: string, table: string) {
  this.assert.ok(artifactKeys(this, file, table).includes(id), `${file} holds row ${id} of ${table}`);
});

Then('the seed artifact {string} does not hold row {string} of {string}', function (this: SyncWorld, file: string, id: string, table: string) {
  this.assert.ok(!artifactKeys(this, file, table).includes(id), `${file} must not hold row ${id} of ${table}`);
});

Then('the seed artifact {string} holds no row of {string} or {string}', function (this: SyncWorld, file: string, first: string, second: string) {
  this.assert.equal([...artifactKeys(this, file, first), ...artifactKeys(this, file, second)], [], `rows of ${first} and ${second} in ${file}`);
});

Then(/^the seed artifact "([^"]+)" holds row "([^"]+)" of "([^"]+)" with provenance exactly (\[.*\])$/, async function (this: SyncWorld, file: string, id: string, table: string, json: string) {
  const manifest = await currentManifest(this);
  const tableId = manifest.tables.find((t) => t.name === table)?.table_id;
  if (tableId === undefined) throw new Error(`the published manifest has no table "${table}"`);
  this.assert.ok(artifactKeys(this, file, table).includes(id), `${file} holds row ${id} of ${table}`);
  this.assert.equal(rowProvenance(this, file, tableId, id), (JSON.parse(json) as string[]).sort(), `the scopes ${file} records for row ${id} of ${table}`);
});

Then('the seed artifact {string} holds no row whose only scope is {string}', async function (this: SyncWorld, file: string, scope: string) {
  const sql = await sourceSql(this);
  const alone: string[] = [];
  for (const table of this.model.tables.values()) {
    const key = this.model.keyColumn(table.name).name;
    const rows = await sql.query<{ r: Record<string, unknown> }>(`SELECT to_jsonb(t) AS r FROM public."${table.name.replaceAll('"', '""')}" t`);
    for (const { r } of rows) {
      const scopes = declaredScopes(table, r);
      if (scopes.size === 1 && scopes.has(scope)) alone.push(`${table.name}/${String(r[key])}`);
    }
  }
  // The scenario's data must give the check something to find, or it would pass on any artifact.
  if (alone.length === 0) throw new Error(`no source row of the scenario lies in ${scope} alone`);
  const held = new Set(artifactRows(this, file));
  this.assert.equal(
    alone.filter((row) => held.has(row)),
    [],
    `rows of ${scope} alone (${alone.join(', ')}) that ${file} holds`,
  );
});
