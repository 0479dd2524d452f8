/**
 * Determinism seen through rebuilds: generated row sets committed one source
 * transaction each, then every assigned scope rebuilt twice from the same
 * state; both rebuilds must agree on records, row checksums and the final
 * scope checksum.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { sourceSql } from '../scopes/roles.ts';
import type { RebuildRun } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';

/** How many generated sets "many" stands for: one source transaction each. */
const GENERATED_SETS = 12;
/** A small page, so each rebuild walks several pages to its final one. */
const PAGE_LIMIT = 7;

const rebuilds = new WeakMap<SyncWorld, Map<string, RebuildRun[]>>();

const names = (list: string) => list.split(',').map((name) => name.trim());

Given(
  'the harness commits many generated sets of {int} to {int} rows of table {string} with owners from {string} and teams from {string}',
  async function (this: SyncWorld, min: number, max: number, table: string, owners: string, teams: string) {
    const spec = this.model.table(table);
    for (const column of ['id', 'owner_id', 'team', 'title']) {
      if (!spec.columns.some((c) => c.name === column)) throw new Error(`table "${table}" has no column ${column}, which generated rows fill`);
    }
    const row = fc.record({ owner: fc.constantFrom(...names(owners)), team: fc.constantFrom(...names(teams)), title: fc.string({ unit: 'grapheme', maxLength: 16 }).filter((text) => !text.includes('\u0000')) });
    const seed = Date.now() | 0;
    this.attach(`generated row sets: fast-check seed ${seed}`, 'text/plain');
    const sets = fc.sample(fc.array(row, { minLength: min, maxLength: max }), { numRuns: GENERATED_SETS, seed });
    const sql = await sourceSql(this);
    for (const [n, set] of sets.entries()) {
      const values = set.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`);
      const params = set.flatMap((r, i) => [`gen-${n + 1}-${i + 1}`, r.owner, r.team, r.title]);
      // One statement per set: one source transaction per generated set.
      await sql.query(`INSERT INTO public."${table}" (id, owner_id, team, title) VALUES ${values.join(', ')}`, params);
    }
  },
);

When('client {string} rebuilds every assigned scope to its final page twice', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const runs = new Map<string, RebuildRun[]>();
  for (const scope of client.cursors.keys()) {
    runs.set(scope, [await client.rebuildAll(scope, PAGE_LIMIT), await client.rebuildAll(scope, PAGE_LIMIT)]);
  }
  if (runs.size === 0) throw new Error(`client "${name}" has no assigned scope to rebuild`);
  rebuilds.set(this, runs);
});

Then('both rebuilds of each scope hold the same records with the same row checksums and the same final scope checksum', function (this: SyncWorld) {
  const runs = rebuilds.get(this);
  if (!runs) throw new Error('no scope was rebuilt twice in this scenario');
  for (const [scope, [first, second]] of runs) {
    for (const run of [first, second]) {
      const last = run?.pages[run.pages.length - 1];
      this.assert.equal(last?.status, 200, `a rebuild of ${scope} ended with ${last?.status}: ${last?.text.slice(0, 500)}`);
    }
    // Records carry their row checksum, so equal records mean equal checksums too.
    this.assert.ok((first?.records.length ?? 0) > 0, `the rebuild of ${scope} holds no record, so there is nothing to compare`);
    this.assert.equal(second?.records, first?.records, `records of the two rebuilds of ${scope}`);
    this.assert.equal(second?.checksum, first?.checksum, `final scope checksum of the two rebuilds of ${scope}`);
  }
});
