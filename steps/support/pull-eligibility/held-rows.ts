/**
 * The rows a harness client holds per scope, replayed from what the proxy
 * delivered to it: a rebuild that reached its last page replaces the scope's
 * rows with its records, a pull change upserts or deletes one row, and a
 * scope the server removed is dropped. The harness's own client stores no
 * rows, so this replay is the only account of what it was given.
 */
import { deliveredBody, requestOf, wireText } from '../integrity/oracle.ts';
import { exchangesOf } from '../exchanges.ts';
import type { ScopeRow } from '../rebuild-runs/digests.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

/** Scope id -> (table and key as sent) -> the row last delivered for it. */
export type HeldRows = Map<string, Map<string, ScopeRow>>;

const rowKey = (message: Obj) => `${String(message.table)}\u0000${wireText(message.pk)}`;
const rowOf = (message: Obj): ScopeRow => ({ table: String(message.table), pk: message.pk, row: message.row, serverVersion: String(message.server_version) });

export async function heldRows(world: SyncWorld, name: string): Promise<HeldRows> {
  const held: HeldRows = new Map();
  // Records of a rebuild in progress, by rebuild id, until its last page arrives.
  const pending = new Map<string, Map<string, ScopeRow>>();
  for (const exchange of await exchangesOf(world, name, { endpoints: ['rebuild', 'pull'] })) {
    const body = deliveredBody(exchange);
    if (body === undefined) continue;
    if (exchange.endpoint === 'rebuild') {
      const request = requestOf(exchange);
      const id = `${String(request.scope)}\u0000${String(request.rebuild_id)}`;
      const rows = pending.get(id) ?? new Map<string, ScopeRow>();
      for (const record of (body.records ?? []) as Obj[]) rows.set(rowKey(record), rowOf(record));
      pending.set(id, rows);
      if (body.has_more !== true) {
        held.set(String(request.scope), rows);
        pending.delete(id);
      }
      continue;
    }
    for (const change of (body.changes ?? []) as Obj[]) {
      const scope = String(change.scope);
      const rows = held.get(scope) ?? new Map<string, ScopeRow>();
      if (change.op === 'delete') rows.delete(rowKey(change));
      else rows.set(rowKey(change), rowOf(change));
      held.set(scope, rows);
    }
    for (const removed of ((body.scope_updates as Obj | undefined)?.remove ?? []) as string[]) held.delete(removed);
  }
  return held;
}
