/**
 * One row of the last rebuild a step fetched to its final page, read by table
 * and key: its title and the server version the rebuild served it with.
 */
import { generationsState } from './scope-generations/state.ts';
import { keyValue } from './wire-values/recorded.ts';
import type { SyncWorld } from './world.ts';

/** The rebuild record of `pk` of `table` in the last rebuild fetched to its final page. */
export async function rebuiltRecord(world: SyncWorld, table: string, pk: string): Promise<{ title: unknown; version: unknown }> {
  const last = generationsState(world).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched to its final page in this scenario');
  const final = last.run.pages.at(-1);
  world.assert.equal(final?.status, 200, `a rebuild page of ${last.scope} was answered ${final?.status}: ${final?.text.slice(0, 300)}`);
  const client = [...world.clientUsers.keys()].find((name) => world.hasWire(name) && world.wire(name).manifest !== undefined);
  if (client === undefined) throw new Error('no harness client holds a manifest to name the fields of rebuild records');
  const wire = world.wire(client);
  const tableId = wire.tableId(table);
  const found = last.run.records.filter((r) => r.table === tableId && String(keyValue(r.pk)) === pk);
  world.assert.equal(found.length, 1, `records of ${table} row ${pk} in the rebuild of ${last.scope}`);
  return { title: found[0]?.row?.[wire.fieldId(table, 'title')], version: found[0]?.server_version };
}

