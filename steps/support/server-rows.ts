/**
 * What the server holds for a row, read the way any client reads it: a fresh
 * reader of the row's user connects through the proxy and rebuilds every
 * scope it is assigned, once capture has made every committed write visible.
 * The rebuild records give the row as the server serves it and its current
 * server_version. The reader's answers do not become the scenario's "last
 * response" and do not change the versions the scenario's clients hold.
 * A tracking reader follows the server from a point on, so it also sees
 * deletions (a fresh rebuild serves no deleted row).
 */
import { randomUUID } from 'node:crypto';
import { awaitCapture } from './source-schema.ts';
import { WireClient } from './wire-client.ts';
import type { Obj } from './wire-values/recorded.ts';
import type { SyncWorld } from './world.ts';

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

/** Every row of `table` the server serves to a fresh reader of `user`, keyed by the key value's text. */
export async function servedRows(world: SyncWorld, table: string, user = readerUser(world)): Promise<Map<string, ServedRow>> {
  await awaitCapture(world);
  const reader = quietReader(world, user);
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

/**
 * The row `pk` of `table` as the server serves it to a fresh reader of `user`
 * (the scenario's reader user by default), or undefined when it serves none.
 * When that user no longer sees the row (its scope was revoked) and the server
 * can assign scopes, a reader user of its own is assigned every scope the
 * scenario's steps name and asked instead.
 */
export async function servedRow(world: SyncWorld, table: string, pk: string, user = readerUser(world)): Promise<ServedRow | undefined> {
  const served = (await servedRows(world, table, user)).get(pk);
  const server = await world.readyServer();
  if (served !== undefined || server.scopes === undefined) return served;
  const reader = `row-reader-${randomUUID().slice(0, 8)}`;
  const named = new Set(world.stepTexts.flatMap((text) => [...text.matchAll(/scope "([^"{}]+)"/g)].map((m) => m[1] as string)));
  if (named.size === 0) return undefined;
  for (const scope of named) await server.scopes.grantUserScope(reader, scope);
  return (await servedRows(world, table, reader)).get(pk);
}

/** A row as a tracking reader last heard of it. */
export interface TrackedRow {
  state: 'live' | 'tombstone' | 'deleted';
  /** The row keyed by column name (a tombstone's too); undefined for a rowless delete. */
  row: Record<string, unknown> | undefined;
  serverVersion: string;
}

interface Tracker {
  reader: WireClient;
  rows: Map<string, TrackedRow>;
}

const trackers = new WeakMap<SyncWorld, Tracker>();

const trackedKey = (tableId: string, pk: unknown) => `${tableId}\u0000${String(pk)}`;

/** Applies pulled changes or rebuilt records to what the tracker knows. */
function absorb(tracker: Tracker, items: Obj[], fromRebuild: boolean): void {
  for (const item of items) {
    const table = tracker.reader.manifest?.tables.find((t) => t.table_id === item.table);
    if (table === undefined) continue;
    const pk = (item.pk as Obj)[table.primary_key_field_id];
    const row = item.row === undefined || item.row === null ? undefined : tracker.reader.namedRow(table.name, item.row as Record<string, unknown>);
    const state = fromRebuild || item.op === 'upsert' ? 'live' : row === undefined ? 'deleted' : 'tombstone';
    tracker.rows.set(trackedKey(String(item.table), pk), { state, row, serverVersion: String(item.server_version) });
  }
}

/**
 * Starts a reader that follows the server's changes from now on: it rebuilds
 * every scope once, then each look pulls what changed. Unlike a fresh
 * rebuild, it also sees deletions: a tombstone (a delete carrying the row) or
 * a rowless delete of a row it knew.
 */
export async function startTracking(world: SyncWorld): Promise<void> {
  if (trackers.has(world)) return;
  await awaitCapture(world);
  const reader = quietReader(world, readerUser(world));
  const tracker: Tracker = { reader, rows: new Map() };
  const connected = await reader.connect();
  if (connected.status !== 200) throw new Error(`a tracking reader could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
  for (const scope of [...reader.cursors.keys()]) {
    const run = await reader.rebuildAll(scope);
    if (run.pages.at(-1)?.status !== 200) throw new Error(`the tracking reader could not rebuild ${scope}: ${run.pages.at(-1)?.text.slice(0, 300)}`);
    absorb(tracker, run.records as Obj[], true);
  }
  trackers.set(world, tracker);
}

/** True once a tracking reader follows the server in this scenario. */
export function isTracking(world: SyncWorld): boolean {
  return trackers.has(world);
}

/** What the tracking reader now knows of row `pk` of `table`, after pulling every committed change. */
export async function trackedRow(world: SyncWorld, table: string, pk: string): Promise<TrackedRow | undefined> {
  const tracker = trackers.get(world);
  if (tracker === undefined) throw new Error('no reader was following the server since before the scenario changed the row');
  await awaitCapture(world);
  for (const page of await tracker.reader.pullAll()) {
    if (page.status !== 200) throw new Error(`the tracking reader's pull was answered ${page.status}: ${page.text.slice(0, 300)}`);
    absorb(tracker, (page.json?.changes ?? []) as Obj[], false);
  }
  return tracker.rows.get(trackedKey(tracker.reader.tableId(table), pk));
}
