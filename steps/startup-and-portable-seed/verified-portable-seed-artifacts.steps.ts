/**
 * SYNC-SEED-006 Verified Portable Seed Artifacts
 * (features/startup-and-portable-seed/verified-portable-seed-artifacts.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Given, Then } from '@cucumber/cucumber';
import Database from 'better-sqlite3';
import { processPhrase } from '../support/client-mode.ts';
import { currentManifest } from '../support/integrity/context.ts';
import { type Manifest, scopeDigestHex } from '../support/integrity/oracle.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { artifactDir, artifactPath, artifactState, buildArtifact, fileSha256, labelRange, publishedResult, sha256, withoutArtifactBuilder } from '../support/seeds/artifacts.ts';
import { seedControl } from '../support/seeds/exports.ts';
import { INTERFERENCES } from '../support/seeds/interference.ts';
import { assertNoMutation } from '../support/seeds/seeded-client.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

Then('the file {string} exists and no file {string}, {string} or {string} exists beside it', function (this: SyncWorld, file: string, wal: string, shm: string, journal: string) {
  const last = artifactState(this).last;
  this.assert.ok(last?.result.ok === true, `the export published the file: ${JSON.stringify(last?.result)}`);
  this.assert.ok(existsSync(artifactPath(this, file)), `${file} exists`);
  for (const sidecar of [wal, shm, journal]) this.assert.ok(!existsSync(artifactPath(this, sidecar)), `no ${sidecar} beside ${file}`);
});

Then('"PRAGMA integrity_check" on a read-only open of {string} returns exactly {string}', function (this: SyncWorld, file: string, expected: string) {
  const db = new Database(artifactPath(this, file), { readonly: true, fileMustExist: true });
  try {
    const rows = db.pragma('integrity_check') as Record<string, unknown>[];
    this.assert.equal(rows.map((r) => Object.values(r)[0]), [expected], `integrity_check of ${file}`);
  } finally {
    db.close();
  }
});

Then('the SHA-256 of the bytes of {string} equals the hash the export recorded as release evidence', function (this: SyncWorld, file: string) {
  this.assert.equal(fileSha256(artifactPath(this, file)), publishedResult(this, file).sha256, `SHA-256 of ${file} against the release evidence`);
});

Then('the seed artifact {string} marks the snapshot complete', function (this: SyncWorld, file: string) {
  // `_synchro_meta` is the client contract's metadata table; the completion marker is the seed's key there.
  const db = new Database(artifactPath(this, file), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare("SELECT value FROM _synchro_meta WHERE key = 'seed_snapshot_complete'").get() as { value: unknown } | undefined;
    this.assert.ok(typeof row?.value === 'string' && row.value !== '', `${file} carries a nonempty snapshot-complete marker (found ${JSON.stringify(row?.value)})`);
  } finally {
    db.close();
  }
});

Given('the destination {string} already holds an earlier artifact whose SHA-256 the harness recorded', async function (this: SyncWorld, file: string) {
  const without = await withoutArtifactBuilder(this);
  if (without !== undefined) return without;
  const result = await buildArtifact(this, file, undefined);
  if (!result.ok) throw new Error(`the earlier export to ${file} was refused by the ${result.check} check: ${result.message}`);
  const bytes = readFileSync(artifactPath(this, file));
  artifactState(this).earlier.set(file, { bytes, sha256: sha256(bytes) });
});

Given('the destination {string} does not exist', function (this: SyncWorld, file: string) {
  this.assert.ok(!existsSync(artifactPath(this, file)), `${file} does not exist yet`);
});

Given(/^the harness arranges "(.*)" for the next export, from outside the exporter$/, async function (this: SyncWorld, prose: string) {
  const interference = INTERFERENCES[prose];
  if (interference === undefined) throw new Error(`the harness knows no interference "${prose}"; it knows ${Object.keys(INTERFERENCES).join('; ')}`);
  const seed = await seedControl(this);
  // Without that point the harness cannot reach into the export from outside: no verdict.
  if (!(seed.artifactIntercepts ?? []).includes(interference.point)) return undeterminedWithout(this, `the server adapter's seed.exportArtifact offers no "${interference.point}" intercept (seed.artifactIntercepts), which "${prose}" needs`);
  artifactState(this).arranged = { prose, interference };
  return undefined;
});

Then('the export reports a failure', function (this: SyncWorld) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no export was run in this scenario');
  this.assert.ok(!last.result.ok, `the export reported a failure (it reported ${JSON.stringify(last.result)})`);
});

// The check names of the fault table are compared without regard to case ("SQLite integrity" is the exporter's "sqlite integrity").
Then('the export is refused by the {string} check', function (this: SyncWorld, check: string) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no export was run in this scenario');
  const result = last.result;
  this.assert.ok(!result.ok, `the export refused to publish (it reported ${JSON.stringify(result)})`);
  if (result.ok) return;
  this.assert.equal(result.check.toLowerCase(), check.toLowerCase(), `the check that refused the export (${result.message})`);
  if (last.interference?.interference.point === 'verifying') {
    this.assert.equal(result.killed?.signal, 'SIGKILL', 'the build process was killed with SIGKILL while it verified, and ended before the exporter answered');
  }
});

Then('{string} is byte-identical to the earlier artifact', function (this: SyncWorld, file: string) {
  const earlier = artifactState(this).earlier.get(file);
  if (earlier === undefined) throw new Error(`the harness recorded no earlier artifact at ${file}`);
  const path = artifactPath(this, file);
  this.assert.ok(existsSync(path), `${file} is still there`);
  if (!existsSync(path)) return;
  const now = readFileSync(path);
  this.assert.equal(sha256(now), earlier.sha256, `SHA-256 of ${file} against the earlier artifact`);
  this.assert.ok(now.equals(earlier.bytes), `${file} has the earlier artifact's bytes`);
});

Then('no temporary or sidecar file of the export remains in the destination directory', function (this: SyncWorld) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no export was run in this scenario');
  // Whatever name a builder gives its temporary file, the directory must list exactly what it did before.
  this.assert.equal(readdirSync(artifactDir(this)).sort(), last.before, 'the files of the destination directory after the failed export');
});

Then('no file {string} exists', function (this: SyncWorld, file: string) {
  this.assert.ok(!existsSync(artifactPath(this, file)), `no file ${file}`);
  this.assert.equal(readdirSync(artifactDir(this)).sort(), artifactState(this).last?.before ?? [], 'the files of the destination directory after the failed export');
});

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
