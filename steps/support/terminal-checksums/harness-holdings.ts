/**
 * What a harness protocol client holds per scope, rebuilt from what the
 * proxy recorded it being given: the records of its last rebuild attempt of
 * each scope (an attempt starts with cursor null and replaces the scope), then
 * every pull change in the order it arrived (an upsert sets the row and its
 * version, a delete removes it). The digest of that set is computed with the
 * harness codec, so a terminal checksum is compared against rows the client
 * actually received rather than against the server's own account.
 */
import { clientIdOf, exchangesIn } from '../exchanges.ts';
import { currentManifest } from '../integrity/context.ts';
import { deliveredBody, type Obj, requestOf, scopeDigestHex, wireText } from '../integrity/oracle.ts';
import type { SyncWorld } from '../world.ts';

interface HeldRow {
  table: string;
  row: unknown;
  serverVersion: string;
}

/** Scope → (table and key as sent) → row, as harness client `name` holds them now. */
async function holdings(world: SyncWorld, name: string): Promise<Map<string, Map<string, HeldRow>>> {
  const proxy = await world.proxy();
  const scopes = new Map<string, Map<string, HeldRow>>();
  const scopeRows = (scope: string) => {
    const rows = scopes.get(scope) ?? new Map<string, HeldRow>();
    scopes.set(scope, rows);
    return rows;
  };
  for (const exchange of exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), endpoints: ['pull', 'rebuild'] })) {
    const body = deliveredBody(exchange);
    if (body === undefined) continue;
    if (exchange.endpoint === 'rebuild') {
      const request = requestOf(exchange);
      const scope = String(request.scope);
      if (request.cursor === null) scopes.set(scope, new Map());
      for (const record of (Array.isArray(body.records) ? body.records : []) as Obj[]) {
        scopeRows(scope).set(`${record.table} ${wireText(record.pk)}`, { table: String(record.table), row: record.row, serverVersion: String(record.server_version) });
      }
      continue;
    }
    for (const change of (Array.isArray(body.changes) ? body.changes : []) as Obj[]) {
      const key = `${change.table} ${wireText(change.pk)}`;
      if (change.op === 'delete') scopeRows(String(change.scope)).delete(key);
      else scopeRows(String(change.scope)).set(key, { table: String(change.table), row: change.row, serverVersion: String(change.server_version) });
    }
  }
  return scopes;
}

/** The codec's digest (lowercase hex) of `scope` over the rows harness client `name` holds, and how many rows that is. */
export async function heldScopeDigest(world: SyncWorld, name: string, scope: string): Promise<{ digest: string; rows: number }> {
  if (world.isProcess(name)) throw new Error(`client "${name}" is a client process here; its rows are read through inspection, not from the proxy's records`);
  const rows = [...((await holdings(world, name)).get(scope)?.values() ?? [])];
  return { digest: scopeDigestHex(await currentManifest(world), scope, rows), rows: rows.length };
}
