/**
 * Row digests the server emits: every row-bearing push outcome, pull change
 * and rebuild record carries a server version and a checksum object whose
 * digest the harness codec recomputes from the manifest the message is
 * bound to. Also the "that change" steps shared with the typed encoding
 * feature.
 */
import type { SyncWorld } from '../world.ts';
import { clientExchanges, manifests } from './context.ts';
import { type Manifest, type Obj, plainKey, type RowMessage, serverBody, tableByName } from './oracle.ts';

/** The newest manifest seen (highest version). */
export async function latestManifest(world: SyncWorld): Promise<Manifest> {
  const all = [...(await manifests(world)).values()].sort((a, b) => b.schema_version - a.schema_version);
  const first = all[0];
  if (first === undefined) throw new Error('no manifest was seen on the wire');
  return first;
}

export function keyText(message: RowMessage | Obj): string {
  return String(plainKey((message as Obj).pk));
}

/** The newest pull change for `key` in `tableName` sent to client `name`. */
export async function lastPullChange(world: SyncWorld, name: string, key: string, tableName?: string): Promise<RowMessage & { op: string }> {
  const pulls = await clientExchanges(world, name, 'pull');
  const manifest = await latestManifest(world);
  const tableId = tableName === undefined ? undefined : tableByName(manifest, tableName).table_id;
  for (const e of [...pulls].reverse()) {
    const body = serverBody(e);
    const changes = (Array.isArray(body?.changes) ? body.changes : []) as Obj[];
    const found = [...changes].reverse().find((c) => keyText(c) === key && (tableId === undefined || c.table === tableId));
    if (found) {
      const schemaHash = String(((JSON.parse(e.requestBody.toString('utf8')) as Obj).schema as Obj).hash);
      return { kind: 'change', schemaHash, table: String(found.table), pk: found.pk, row: found.row, serverVersion: found.server_version, checksum: found.row_checksum, raw: found, op: String(found.op) };
    }
  }
  throw new Error(`no pull response to client "${name}" carried a change for row "${key}"${tableName ? ` of table "${tableName}"` : ''}`);
}

/** Outcomes (accepted and rejected) of every push the named client made, in order. */
export async function outcomesOf(world: SyncWorld, name: string): Promise<RowMessage[]> {
  const pushes = await clientExchanges(world, name, 'push');
  const out: RowMessage[] = [];
  for (const e of pushes) {
    const body = serverBody(e);
    for (const o of [...((body?.accepted as Obj[]) ?? []), ...((body?.rejected as Obj[]) ?? [])]) {
      out.push({ kind: 'outcome', schemaHash: String((o.outcome_schema as Obj | undefined)?.hash), table: String(o.table), pk: o.pk, row: o.server_row, serverVersion: o.server_version, checksum: o.row_checksum, raw: o });
    }
  }
  return out;
}

/** The client a push step used: the only named client of the scenario that pushed. */
export async function pushingClient(world: SyncWorld): Promise<string> {
  for (const name of world.clientUsers.keys()) if ((await clientExchanges(world, name, 'push')).length > 0) return name;
  throw new Error('no client of this scenario pushed');
}
