/**
 * SYNC-MUT-008 No Synthetic Cleanup Tombstones
 * (features/mutation-and-data-correctness/no-synthetic-cleanup-tombstones.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { lastPull } from '../support/wire-values/operations.ts';
import { keyValue, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

interface Provenance {
  scopeId: string;
  table: string;
  recordId: string;
}

async function provenanceOf(world: SyncWorld, name: string): Promise<Provenance[]> {
  return (await (await world.process(name)).call<{ provenance: Provenance[] }>('inspectProvenance')).provenance;
}

Then('client {string} has no provenance for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const provenance = await provenanceOf(this, name);
  this.assert.equal(provenance.filter((p) => p.scopeId === scope), [], `provenance client "${name}" keeps for ${scope}`);
});

Then('client {string} has provenance {string} for row {string} of table {string}', async function (this: SyncWorld, name: string, scope: string, row: string, table: string) {
  const tableId = (await tableNamed(this, table)).table_id;
  const provenance = await provenanceOf(this, name);
  this.assert.equal(
    provenance.filter((p) => p.table === tableId && p.recordId === row).map((p) => p.scopeId),
    [scope],
    `scopes that justify ${table} ${row} on client "${name}"`,
  );
});

Then('client {string} has no provenance for row {string} of table {string}', async function (this: SyncWorld, name: string, row: string, table: string) {
  const tableId = (await tableNamed(this, table)).table_id;
  const provenance = await provenanceOf(this, name);
  this.assert.equal(provenance.filter((p) => p.table === tableId && p.recordId === row), [], `provenance client "${name}" keeps for ${table} ${row}`);
});

/** `team:{team}` as the SQL that computes it from the projected row `r`. */
function scopeSql(template: string): string {
  return template
    .split(/(\{[^}]+\})/)
    .filter((part) => part !== '')
    .map((part) => (part.startsWith('{') ? `r."${part.slice(1, -1)}"::text` : `'${part.replaceAll("'", "''")}'`))
    .join(' || ');
}

Given(
  /^the operator changes the membership rule of table "([^"]+)" so that row "([^"]+)" belongs to no scope, which makes scope "([^"]+)" require a rebuild$/,
  async function (this: SyncWorld, table: string, row: string, _scope: string) {
    const server = await this.readyServer();
    if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
    const spec = this.model.table(table);
    const key = this.model.keyColumn(table);
    // A new registered function (a registered one is never edited in place): every placement, except for that row.
    const fn = `public.${table}_scopes_without_${row.replace(/\W/g, '_')}`;
    const branches = spec.placements.map((template) => `SELECT ${scopeSql(template)} FROM synchro_projection."${table}" r WHERE r."${key.name}" = p_key AND r."${key.name}"::text <> '${row.replaceAll("'", "''")}'`);
    await server.provision.exec(`CREATE FUNCTION ${fn}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC\n  ${branches.join('\n  UNION ')};\nEND;`);
    // The server decides which scopes the change sends to rebuild; the scenario's Then steps check the outcome on the client.
    await server.provision.reconfigureMembership(`public.${table}`, fn);
  },
);

Then(/^the pull response delivered to client "([^"]+)" holds a "(delete|upsert)" of row "([^"]+)" in scope "([^"]+)" carrying the tombstone row and its row_checksum$/, async function (this: SyncWorld, name: string, op: string, row: string, scope: string) {
  const changes = (await exchangesOf(this, name, { endpoints: ['pull'] }))
    .map((e) => deliveredOf(e))
    .filter((answer) => answer?.status === 200)
    .flatMap((answer) => ((bodyOf(answer?.body)?.changes ?? []) as Obj[]).filter((c) => c.op === op && c.scope === scope && String(keyValue(c.pk)) === row));
  this.assert.equal(changes.length, 1, `"${op}" changes of ${row} in ${scope} delivered to client "${name}"`);
  const change = changes[0] as Obj;
  this.assert.ok(typeof change.row === 'object' && change.row !== null, `the delete of ${row} carries no tombstone row: ${JSON.stringify(change)}`);
  this.assert.ok(typeof change.row_checksum === 'object' && change.row_checksum !== null, `the delete of ${row} carries no row_checksum: ${JSON.stringify(change)}`);
  const table = await tableNamed(this, String(change.table));
  const deletion = table.fields.find((f) => f.name === this.model.table(table.name).deletedAtColumn);
  this.assert.ok(deletion !== undefined && typeof (change.row as Obj)[deletion.field_id] === 'string', `the tombstone row of ${row} is not marked deleted: ${JSON.stringify(change.row)}`);
});

Then(/^the pull response has scope_updates\.remove (\[.*\])$/, function (this: SyncWorld, list: string) {
  const reply = lastPull(this);
  this.assert.equal(reply.json?.scope_updates?.remove, JSON.parse(list), `scope_updates.remove of the pull response: ${reply.text.slice(0, 400)}`);
});

Then('the pull response has no scope_cursors entry and no checksums entry for {string}', function (this: SyncWorld, scope: string) {
  const reply = lastPull(this);
  this.assert.ok(!Object.hasOwn(reply.json?.scope_cursors ?? {}, scope), `the pull response carries a cursor for ${scope}`);
  this.assert.ok(!Object.hasOwn(reply.json?.checksums ?? {}, scope), `the pull response carries a checksum for ${scope}`);
});

Then(/^the "(delete|upsert)" of row "([^"]+)" in scope "([^"]+)" carries no row and no row_checksum$/, function (this: SyncWorld, op: string, row: string, scope: string) {
  const reply = lastPull(this);
  const changes = ((reply.json?.changes ?? []) as Obj[]).filter((c) => c.op === op && c.scope === scope && String(keyValue(c.pk)) === row);
  this.assert.equal(changes.length, 1, `"${op}" changes of ${row} in ${scope} in the pull response`);
  const present = ['row', 'row_checksum'].filter((member) => Object.hasOwn(changes[0] as Obj, member));
  this.assert.equal(present, [], `the rowless ${op} of ${row} in ${scope} carries ${present.join(', ')}`);
});
