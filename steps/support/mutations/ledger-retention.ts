/**
 * Helpers of the idempotency ledger retention steps (SYNC-MUT-011): the
 * operator events a ledger must outlive (server time, compaction of a
 * scope's change history), each checked to have really happened, and the
 * server's own account of a client's ledger rows and retirement marker
 * (implementation-internal inspection).
 */
import type { CompactionControl, InspectControl, ServerAdapter } from '../../../harness/adapters/server.ts';
import { awaitCapture } from '../source-schema.ts';
import type { SyncWorld } from '../world.ts';

export const DAY_MS = 86_400_000;

export function inspectOf(server: ServerAdapter): InspectControl {
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read its ledger`);
  return server.inspect;
}

export function compactionOf(server: ServerAdapter): CompactionControl {
  if (!server.compaction) throw new Error(`server adapter "${server.id}" has no compaction capability`);
  return server.compaction;
}

/** Moves the server clock forward by `ms` and checks that the server now reads a time at least that far ahead. */
export async function advanceClock(world: SyncWorld, ms: number): Promise<void> {
  const server = await world.readyServer();
  if (!server.clock) throw new Error(`server adapter "${server.id}" has no clock capability`);
  const before = Date.parse(await server.clock.now());
  await server.clock.advance(ms);
  const after = Date.parse(await server.clock.now());
  if (!(after - before >= ms)) throw new Error(`the server clock moved ${after - before} ms, not the ${ms} ms asked for`);
}

/** The change-history entries the server holds for `scope` (reference inspection: its scope effects). */
async function historyEntries(world: SyncWorld, scope: string): Promise<number> {
  const rows = await inspectOf(await world.readyServer()).query<{ n: string }>('SELECT count(*)::text AS n FROM synchro.scope_effects WHERE scope_id = $1', [scope]);
  return Number(rows[0]?.n);
}

/**
 * Runs the operator's compaction and checks it removed the scope's whole
 * change history up to now. Retention never moves a scope's floor past a
 * position no current reader has acknowledged, so a reader of the scope's
 * user first reads the scope to its head; `name` is that reader's harness
 * client.
 */
export async function compactScopeToHead(world: SyncWorld, scope: string, name: string): Promise<void> {
  const server = await world.readyServer();
  // Every accepted write so far is part of the history first.
  await awaitCapture(world);
  const user = /^user:(.+)$/.exec(scope)?.[1];
  if (user === undefined) throw new Error(`scope "${scope}" is not a user scope whose reader the harness could name`);
  const reader = world.newWire(name, user);
  await reader.connectAndRebuild();
  const pages = await reader.pullAll();
  const last = pages.at(-1);
  if (last?.status !== 200) throw new Error(`the reader of ${scope} could not pull to the head: ${last?.status} ${last?.text.slice(0, 300)}`);
  const before = await historyEntries(world, scope);
  if (before === 0) throw new Error(`scope ${scope} has no change history to compact`);
  await compactionOf(server).compact();
  const after = await historyEntries(world, scope);
  if (after !== 0) throw new Error(`compaction left ${after} of ${before} change-history entries of ${scope}`);
}

export interface LedgerRows {
  batches: string[];
  mutations: string[];
}

/** Every batch and mutation ledger row of a client, each as one line of its identifying and stored members. */
export async function ledgerRows(world: SyncWorld, userId: string, clientId: string): Promise<LedgerRows> {
  const inspect = inspectOf(await world.readyServer());
  const batches = await inspect.query<{ line: string }>(
    `SELECT concat_ws(' ', batch_id, state, encode(fp, 'hex'), http_status, md5(coalesce(response_body, ''))) AS line
       FROM synchro.push_batches WHERE user_id = $1 AND client_id = $2 ORDER BY batch_id`,
    [userId, clientId],
  );
  const mutations = await inspect.query<{ line: string }>(
    `SELECT concat_ws(' ', mutation_id, first_batch_id, encode(fp, 'hex'), status, md5(outcome)) AS line
       FROM synchro.push_mutations WHERE user_id = $1 AND client_id = $2 ORDER BY mutation_id`,
    [userId, clientId],
  );
  return { batches: batches.map((r) => r.line), mutations: mutations.map((r) => r.line) };
}

export interface RetirementMarker {
  retirement_id: string;
  retired_at: string;
}

export async function retirementMarkers(world: SyncWorld, userId: string, clientId: string): Promise<RetirementMarker[]> {
  return inspectOf(await world.readyServer()).query<RetirementMarker & Record<string, unknown>>(
    'SELECT retirement_id::text AS retirement_id, retired_at::text AS retired_at FROM synchro.client_retirements WHERE user_id = $1 AND client_id = $2',
    [userId, clientId],
  );
}

const counted = new WeakMap<SyncWorld, Map<string, LedgerRows>>();

export function noteLedger(world: SyncWorld, name: string, rows: LedgerRows): void {
  const map = counted.get(world) ?? new Map<string, LedgerRows>();
  map.set(name, rows);
  counted.set(world, map);
}

export function notedLedger(world: SyncWorld, name: string): LedgerRows {
  const rows = counted.get(world)?.get(name);
  if (rows === undefined) throw new Error(`the ledger rows of client "${name}" were not counted earlier in this scenario`);
  return rows;
}
