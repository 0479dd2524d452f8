/**
 * What the server holds for a row, read the way any client reads it: a fresh
 * reader of the row's user connects through the proxy and rebuilds every
 * scope it is assigned, once capture has made every committed write visible.
 * The rebuild records give the row as the server serves it and its current
 * server_version. The reader's answers do not become the scenario's "last
 * response" and do not change the versions the scenario's clients hold.
 */
import { randomUUID } from 'node:crypto';
import { awaitCapture } from '../source-schema.ts';
import { WireClient } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';
import type { Obj } from './state.ts';

export interface ServedRow {
  /** The row keyed by column name. */
  row: Record<string, unknown>;
  serverVersion: string;
}

/** The user whose scope the scenario's rows are placed in: the first user a scenario client belongs to. */
export function readerUser(world: SyncWorld): string {
  const user = [...world.clientUsers.values()].find((u) => !u.startsWith('writer-'));
  if (user === undefined) throw new Error('no client of a user was named before reading the server state');
  return user;
}

/** A harness client of its own whose answers stay out of the scenario's replies. */
export function quietReader(world: SyncWorld, user: string): WireClient {
  return new WireClient(`reader-${randomUUID().slice(0, 8)}`, user, {
    url: async () => (await world.proxy()).url,
    token: async (u) => (await world.server()).token(u),
    record: () => undefined,
    deadlineMs: world.deadlineMs,
  });
}

/** Every row of `table` the server serves to the reader, keyed by the key value's text. */
export async function servedRows(world: SyncWorld, table: string): Promise<Map<string, ServedRow>> {
  await awaitCapture(world);
  const reader = quietReader(world, readerUser(world));
  const connected = await reader.connect();
  if (connected.status !== 200) throw new Error(`a reader of user ${reader.userId} could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
  const tableId = reader.tableId(table);
  const pkField = reader.tableSchema(table).primary_key_field_id;
  const out = new Map<string, ServedRow>();
  for (const scope of [...reader.cursors.keys()]) {
    const run = await reader.rebuildAll(scope);
    const last = run.pages.at(-1);
    if (last?.status !== 200) throw new Error(`the reader's rebuild of ${scope} was answered ${last?.status}: ${last?.text.slice(0, 300)}`);
    for (const record of run.records as Obj[]) {
      if (record.table !== tableId) continue;
      const key = String((record.pk as Obj)[pkField]);
      out.set(key, { row: reader.namedRow(table, (record.row ?? {}) as Record<string, unknown>), serverVersion: String(record.server_version) });
    }
  }
  return out;
}

/** The row `pk` of `table` as the server serves it, or undefined when it serves none. */
export async function servedRow(world: SyncWorld, table: string, pk: string): Promise<ServedRow | undefined> {
  return (await servedRows(world, table)).get(pk);
}
