/**
 * The canonical extension entry points of SYNC-BOUND-001 (the 005 sheet's
 * grant map: `synchro.synchro_connect`, `synchro_push`, `synchro_pull`,
 * `synchro_rebuild`, each `(text, jsonb)`, executable by `synchro_adapter`)
 * and the calls of them a server records, read through `inspect`.
 *
 * The record is the reference's `synchro.adapter_entry_calls` (sql/085): one
 * row per call with the caller's active role, the result's status and error
 * code and the SHA-256 of its body (docs/decisions.md 360). A server without
 * that record is reported missing the optional `inspect.entry-calls`
 * observation, so its scenarios stay undetermined.
 */
import { createHash } from 'node:crypto';
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

export type EntryEndpoint = 'connect' | 'push' | 'pull' | 'rebuild';

/** The adapter's runtime role (005 sheet). */
export const ADAPTER_ROLE = 'synchro_adapter';

export function entryPointOf(endpoint: string): string {
  if (!['connect', 'push', 'pull', 'rebuild'].includes(endpoint)) throw new Error(`"${endpoint}" is not a sync endpoint with a canonical entry point`);
  return `synchro.synchro_${endpoint}(text, jsonb)`;
}

/** One recorded call of an entry point: who made it and what it returned. */
export interface EntryCall {
  callId: string;
  entryPoint: string;
  callerRole: string;
  status: number;
  errorCode: string | null;
  bodySha256: string;
}

/** Every call the server recorded, in call order; undefined when it keeps no such record. */
export async function recordedCalls(server: ServerAdapter): Promise<EntryCall[] | undefined> {
  if (!server.inspect) return undefined;
  const present = await server.inspect.query<{ t: string | null }>("SELECT to_regclass('synchro.adapter_entry_calls')::text AS t");
  if (present[0]?.t == null) return undefined;
  const rows = await server.inspect.query<{ call_id: string; entry_point: string; caller_role: string; status: number; error_code: string | null; digest: string }>(
    "SELECT call_id::text, entry_point, caller_role, status, error_code, encode(body_sha256, 'hex') AS digest FROM synchro.adapter_entry_calls ORDER BY call_id",
  );
  return rows.map((r) => ({ callId: r.call_id, entryPoint: r.entry_point, callerRole: r.caller_role, status: r.status, errorCode: r.error_code, bodySha256: r.digest }));
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Every answer the server itself gave to requests of `endpoint` in this scenario, in the order they reached it. */
export async function servedAnswers(world: SyncWorld, endpoint: EntryEndpoint): Promise<{ status: number; body: string }[]> {
  const exchanges = (await world.proxy()).exchanges.filter((e) => e.endpoint === endpoint);
  return exchanges.flatMap((e) => e.upstream.map((r) => ({ status: r.status, body: r.body.toString('utf8') })));
}

/** What the entry point scenarios remember between steps. */
export interface EntryPointState {
  /** The call that answered the scenario's last request, once a step has found it. */
  call: EntryCall | undefined;
  /** The entry point whose EXECUTE the scenario revoked from the adapter's role. */
  revoked: string | undefined;
}

const states = new WeakMap<SyncWorld, EntryPointState>();

export function entryPointState(world: SyncWorld): EntryPointState {
  let state = states.get(world);
  if (state === undefined) {
    state = { call: undefined, revoked: undefined };
    states.set(world, state);
  }
  return state;
}
