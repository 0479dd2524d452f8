/**
 * Portable seeds from the server side: declaring a shared scope portable,
 * running one export transaction through the adapter's `seed` capability,
 * and checking what it returned against the harness codec (row digests of
 * the records, cardinality and scope digest of the manifest entry).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { readChecksumObject, toHex } from '../../harness/codec/index.ts';
import { type Obj, scopeDigestHex, verifyRowMessage } from '../integrity/oracle.ts';
import type { SyncWorld } from '../support/world.ts';
import { entryOf, exportSchema, lastExport, pagesOf, recordsOf, remember, seedControl } from './exports.ts';

Given('a registered shared scope {string} declared portable', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.registerSharedScope(scope, true);
});

async function exportScope(world: SyncWorld, scope: string, pageLimit: number | undefined): Promise<void> {
  const seed = await seedControl(world);
  const result = await seed.export({ scopes: [scope], ...(pageLimit === undefined ? {} : { pageLimit }) });
  remember(world, { scope, pageLimit, result });
}

When('the harness exports the portable seed pages of scope {string} in one seed export transaction', async function (this: SyncWorld, scope: string) {
  await exportScope(this, scope, undefined);
});

When('the harness exports the portable seed pages of scope {string} in one seed export transaction with page limit {int}', async function (this: SyncWorld, scope: string, limit: number) {
  await exportScope(this, scope, limit);
});

Then('every seed record has a "server_version" and a "row_checksum" whose digest equals the harness codec digest under the export\'s schema hash', async function (this: SyncWorld) {
  const done = lastExport(this);
  const manifest = await exportSchema(this, done);
  this.assert.ok(manifest !== undefined, "the export's schema hash names a manifest the server published");
  if (manifest === undefined) return;
  const records = recordsOf(done, done.scope);
  this.assert.ok(records.length > 0, `the export of ${done.scope} returned records`);
  const known = new Map([[manifest.schema_hash, manifest]]);
  for (const r of records) {
    const what = `seed record ${JSON.stringify(r.pk)} of table ${String(r.table)}`;
    this.assert.ok(typeof r.server_version === 'string' && r.server_version !== '', `${what} has a server_version`);
    const verdict = verifyRowMessage(known, { kind: 'record', schemaHash: manifest.schema_hash, table: String(r.table), pk: r.pk, row: r.row, serverVersion: r.server_version, checksum: r.row_checksum, raw: r });
    this.assert.ok(verdict.ok, `${what}: ${verdict.problem ?? ''}`);
  }
});

Then('the seed manifest entry of scope {string} has {string} {int}', function (this: SyncWorld, scope: string, member: string, value: number) {
  const entry = entryOf(lastExport(this), scope);
  this.assert.ok(entry !== undefined, `the seed manifest lists scope ${scope}`);
  this.assert.equal(entry?.[member], value, `"${member}" of the seed manifest entry of ${scope}`);
});

Then('its "checksum" equals the harness codec scope digest over the exported records under the export\'s schema hash', async function (this: SyncWorld) {
  const done = lastExport(this);
  const entry = entryOf(done, done.scope) as Obj;
  const manifest = await exportSchema(this, done);
  this.assert.ok(manifest !== undefined, "the export's schema hash names a manifest the server published");
  if (manifest === undefined) return;
  const records = recordsOf(done, done.scope);
  const pages = pagesOf(done, done.scope);
  // The digest is only evidence for the records when they are all of them: every page fetched, the last one final.
  this.assert.equal(records.length, entry.cardinality, `records exported for ${done.scope} against the manifest cardinality`);
  this.assert.equal(pages.at(-1)?.has_more, false, `the last seed page of ${done.scope} says it is the last`);
  let claimed: string | undefined;
  try {
    claimed = toHex(readChecksumObject(entry.checksum));
  } catch (error) {
    this.assert.ok(false, `the manifest "checksum" of ${done.scope} is a checksum object: ${(error as Error).message}`);
  }
  const rows = records.map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) }));
  this.assert.equal(claimed, scopeDigestHex(manifest, done.scope, rows), `the seed manifest checksum of ${done.scope}`);
});
