/**
 * Cursors per scope as a client holds them and as the server handed them
 * out: what a client (the process under test, or the harness's own client)
 * inspects, the snapshot a scenario recorded under a label (the one store of
 * recorded cursors), a harness client's pull presenting such a snapshot, and
 * the cursors each answer the proxy delivered to the client issued, in log
 * order.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { exchangesOf } from '../exchanges.ts';
import { deliveredBody, requestOf } from '../integrity/oracle.ts';
import type { Reply } from '../reply.ts';
import { generationsState } from '../scope-generations/state.ts';
import { reportedScopes } from '../scopes/client-sync.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

export type Cursors = Map<string, string | null>;

/** The cursor of each scope client `name` holds now. */
export async function inspectedCursors(world: SyncWorld, name: string): Promise<Cursors> {
  if (!world.isProcess(name)) return new Map(world.wire(name).cursors);
  return new Map((await reportedScopes(world, name)).map((s) => [s.scopeId, s.cursor]));
}

const lastRecorded = new WeakMap<SyncWorld, Map<string, string>>();

export async function recordCursors(world: SyncWorld, name: string, label: string): Promise<void> {
  const cursors = generationsState(world).cursors;
  if (cursors.has(label)) throw new Error(`cursors were already recorded as "${label}" in this scenario`);
  const held = await inspectedCursors(world, name);
  // A recording of no cursor at all would make every later "unchanged" comparison pass for nothing.
  if (![...held.values()].some((c) => typeof c === 'string')) throw new Error(`client "${name}" holds no cursor to record as "${label}": ${JSON.stringify([...held])}`);
  cursors.set(label, held);
  const labels = lastRecorded.get(world) ?? new Map<string, string>();
  labels.set(name, label);
  lastRecorded.set(world, labels);
}

export function recordedCursors(world: SyncWorld, label: string): Cursors {
  const found = generationsState(world).cursors.get(label);
  if (found === undefined) throw new Error(`no cursors were recorded as "${label}" earlier in this scenario`);
  return found;
}

/** One pull page of harness client `name` with `limit`, presenting for every scope exactly the cursor recorded under `label` (null where none was). */
export async function pullPresentingRecorded(world: SyncWorld, name: string, label: string, limit?: number): Promise<Reply> {
  const scopes = Object.fromEntries([...recordedCursors(world, label)].map(([scope, cursor]) => [scope, { cursor }]));
  return world.wire(name).pull({ '/scopes': scopes }, limit === undefined ? {} : { limit });
}

/** The cursors last recorded for client `name`, with their label. */
export function lastRecordedCursors(world: SyncWorld, name: string): { label: string; cursors: Cursors } {
  const label = lastRecorded.get(world)?.get(name);
  if (label === undefined) throw new Error(`no cursors of client "${name}" were recorded earlier in this scenario`);
  return { label, cursors: recordedCursors(world, label) };
}

/** What one delivered answer says a scope's cursor is now: issued cursors, and null for a scope sent to rebuild. */
export function issuedBy(exchange: Exchange): Cursors {
  const issued: Cursors = new Map();
  const body = deliveredBody(exchange);
  if (body === undefined) return issued;
  if (exchange.endpoint === 'connect') {
    for (const added of ((body.scopes as Obj | undefined)?.add ?? []) as Obj[]) issued.set(String(added.id), (added.cursor ?? null) as string | null);
    for (const [scope, cursor] of Object.entries((body.scope_cursor_updates ?? {}) as Obj)) issued.set(scope, cursor as string | null);
  } else if (exchange.endpoint === 'rebuild') {
    if (body.has_more === false && typeof body.final_scope_cursor === 'string') issued.set(String(requestOf(exchange).scope), body.final_scope_cursor);
  } else if (exchange.endpoint === 'pull') {
    for (const added of ((body.scope_updates as Obj | undefined)?.add ?? []) as Obj[]) issued.set(String(added.id), null);
    for (const [scope, cursor] of Object.entries((body.scope_cursors ?? {}) as Obj)) issued.set(scope, cursor as string);
    for (const scope of (body.rebuild ?? []) as string[]) issued.set(scope, null);
  }
  return issued;
}

/** The last cursor every scope was given in the answers delivered to client `name`. */
export async function lastIssued(world: SyncWorld, name: string): Promise<Cursors> {
  const last: Cursors = new Map();
  for (const exchange of await exchangesOf(world, name, { endpoints: ['connect', 'rebuild', 'pull'] })) for (const [scope, cursor] of issuedBy(exchange)) last.set(scope, cursor);
  return last;
}
