/**
 * What the server holds for a row, read through the protocol: a fresh
 * protocol client of the row's user connects and rebuilds every scope it is
 * assigned, and the row is what those rebuilds serve. Its requests are not
 * the scenario's "last response": the World's reply record is put back.
 */
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

let readers = 0;

export interface ServedRow {
  /** Column values keyed by column name. */
  row: Obj;
  serverVersion: string;
}

/**
 * The live row `id` of `table` as a fresh client of `user` is served it, or
 * undefined when no rebuild serves it. When that user no longer sees the row
 * (its scope was revoked) and the server can assign scopes, a reader user of
 * its own is assigned every scope the scenario names and asked instead.
 */
export async function servedRow(world: SyncWorld, user: string, table: string, id: string): Promise<ServedRow | undefined> {
  const served = await readAs(world, user, table, id);
  const server = await world.readyServer();
  if (served !== undefined || server.scopes === undefined) return served;
  const reader = `row-reader-${readers + 1}`;
  const named = new Set(world.stepTexts.flatMap((text) => [...text.matchAll(/scope "([^"{}]+)"/g)].map((m) => m[1] as string)));
  for (const scope of named) await server.scopes.grantUserScope(reader, scope);
  return readAs(world, reader, table, id);
}

async function readAs(world: SyncWorld, user: string, table: string, id: string): Promise<ServedRow | undefined> {
  await world.readyServer();
  const saved = { reply: world.reply, count: world.replies.length };
  readers += 1;
  const name = `server-reader-${readers}`;
  try {
    const reader = world.newWire(name, user);
    await reader.connectAndRebuild();
    const tableId = reader.tableId(table);
    const pkField = reader.tableSchema(table).primary_key_field_id;
    const records = world.replies
      .slice(saved.count)
      .filter((r) => r.endpoint === 'rebuild' && r.status === 200)
      .flatMap((r) => ((r.json?.records ?? []) as Obj[]).filter((x) => x.table === tableId && String((x.pk as Obj | undefined)?.[pkField]) === id));
    const record = records.at(-1);
    return record === undefined ? undefined : { row: reader.namedRow(table, record.row as Obj), serverVersion: String(record.server_version) };
  } finally {
    world.reply = saved.reply;
    world.replies.splice(saved.count);
  }
}
