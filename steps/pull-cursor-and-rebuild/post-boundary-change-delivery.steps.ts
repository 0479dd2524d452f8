/**
 * Steps only SYNC-PULL-012 Post Boundary Change Delivery uses: what the
 * rebuild pages left out, the order in which the pull after the final cursor
 * delivers a scope's later changes, and the terminal checksum that pull gives.
 */
import { type DataTable, Then } from '@cucumber/cucumber';
import { parseStrict } from '../support/integrity/oracle.ts';
import { codecScopeDigest, presentedSchemaHash, scopeRowKey, scopeRowOf } from '../support/rebuild-runs/digests.ts';
import { lastRebuildPages, strictRecords } from '../support/rebuild-runs/paged.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/** Which scope the last rebuild covered. */
function rebuiltScope(world: SyncWorld): string {
  const pages = [...world.replies].filter((r) => r.endpoint === 'rebuild' && r.status === 200);
  const scope = pages.at(-1)?.json.scope;
  if (typeof scope !== 'string') throw new Error('no rebuild page was answered in this scenario');
  return scope;
}

Then('no rebuild page holds a record for {string}', function (this: SyncWorld, pk: string) {
  const scope = rebuiltScope(this);
  const pages = lastRebuildPages(this, scope);
  const records = pages.flatMap((page) => (page.status === 200 ? ((page.json.records ?? []) as Obj[]) : []));
  this.assert.ok(records.length > 0, `the rebuild of ${scope} delivered records`);
  const found = records.filter((record) => keyValue(record.pk) === pk);
  this.assert.equal(found, [], `records for "${pk}" in the rebuild pages of ${scope}`);
});

Then('the pull response lists these changes for scope {string}, in order:', async function (this: SyncWorld, scope: string, table: DataTable) {
  const reply = lastPull(this);
  const changes = changesOf(reply).filter((change) => change.scope === scope);
  const tables = new Map<string, Awaited<ReturnType<typeof tableNamed>>>();
  const titleOf = async (change: Obj): Promise<string> => {
    if (change.op !== 'upsert') return '';
    const tableId = String(change.table);
    if (!tables.has(tableId)) tables.set(tableId, await tableNamed(this, tableId));
    const shape = tables.get(tableId);
    const field = shape?.fields.find((f) => f.name === 'title')?.field_id ?? 'title';
    return String((change.row as Obj | undefined)?.[field] ?? '');
  };
  const actual: string[] = [];
  for (const change of changes) actual.push(`${String(change.op)} ${String(keyValue(change.pk))} ${await titleOf(change)}`);
  const expected = table.hashes().map((row) => `${row.op} ${row.pk} ${row.title ?? ''}`);
  this.assert.equal(actual, expected, `changes of ${scope} in the pull response, in order: ${reply.text.slice(0, 2000)}`);
});

Then('the value of {string} equals the scope digest the harness computes from the final rebuild records with those changes applied', async function (this: SyncWorld, pointer: string) {
  const scope = pointer.replace(/^\/checksums\//, '');
  if (scope === pointer) throw new Error(`"${pointer}" does not name a scope's terminal checksum (/checksums/<scope>)`);
  const pages = lastRebuildPages(this, scope);
  const reply = lastPull(this);
  // The client's view of the scope: the rebuild's records, then the pull's changes of that scope in order.
  const rows = new Map(strictRecords(pages).map((record) => [scopeRowKey(record), scopeRowOf(record)]));
  const body = parseStrict(Buffer.from(reply.text, 'utf8')) as unknown as Obj;
  for (const change of ((body.changes ?? []) as Obj[]).filter((c) => c.scope === scope)) {
    if (change.op === 'upsert') rows.set(scopeRowKey(change), scopeRowOf(change));
    else rows.delete(scopeRowKey(change));
  }
  const expected = await codecScopeDigest(this, scope, presentedSchemaHash(reply.requestText), [...rows.values()]);
  const actual = (reply.json.checksums as Obj | undefined)?.[scope];
  this.assert.equal(actual, { algorithm: 'sha256', version: 1, encoding: 'hex', digest: expected }, `the terminal checksum of ${scope}, against the ${rows.size} rows the rebuild and this pull leave`);
});
