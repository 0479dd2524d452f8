/**
 * Putting rows into a scope through the protocol itself (a push by the
 * harness's own client), so a scenario can get a multi-page rebuild or a row
 * with a known server version without direct database access.
 */
import { templateValues } from '../model.ts';
import { awaitCapture } from '../source-schema.ts';
import type { WireClient } from '../wire-client.ts';
import { SyncWorld } from '../world.ts';

/** A table of the scenario whose placement template can produce `scope`, and the column values that put a row there. */
export function placementFor(world: SyncWorld, scope: string): { table: string; values: Record<string, string> } {
  for (const spec of world.model.tables.values()) {
    for (const template of spec.placements) {
      const values = templateValues(template, scope);
      if (values !== undefined) return { table: spec.name, values };
    }
  }
  throw new Error(`no registered table of this scenario places rows in scope "${scope}"`);
}

const FILLER: Record<string, unknown> = { string: 'x', int: 0, int64: '0', float: 0, bool: false, boolean: false, json: {}, datetime: '2026-01-01T00:00:00.000000Z', date: '2026-01-01' };

/** Column values of a new row `id` of `table` placed in `scope`, with `extra` on top. */
export function rowValues(world: SyncWorld, table: string, placement: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const column of world.model.table(table).columns) {
    // The key travels in `pk` only: it is not a writable column.
    if (column.key) continue;
    if (placement[column.name] !== undefined) values[column.name] = placement[column.name];
    else if (!column.nullable && FILLER[column.type] !== undefined) values[column.name] = FILLER[column.type];
  }
  return { ...values, ...extra };
}

/** Inserts rows through a push of `client`; every mutation must be applied. Returns the push outcomes. */
export async function pushInserts(client: WireClient, table: string, rows: { id: string; values: Record<string, unknown> }[]): Promise<Record<string, unknown>[]> {
  const mutations = rows.map((row) => client.mutation({ op: 'insert', table, pk: row.id, columns: row.values }));
  const reply = await client.push(mutations);
  if (reply.status !== 200) throw new Error(`the push of ${rows.map((r) => r.id).join(', ')} was answered ${reply.status}: ${reply.text}`);
  const accepted = (reply.json.accepted ?? []) as Record<string, unknown>[];
  if (accepted.length !== rows.length) throw new Error(`the push of ${rows.map((r) => r.id).join(', ')} was not applied whole: ${reply.text}`);
  return accepted;
}

/** Waits until every accepted write is visible to pull and rebuild. */
export const awaitCaptured = awaitCapture;

/** Key under which the world keeps the version a client holds for a row. */
export function heldKey(client: WireClient, table: string, id: string): string {
  return SyncWorld.rowKey(client.tableId(table), id);
}
