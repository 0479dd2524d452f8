/** Wire faults made for the recipes of the Mutation And Data Correctness Invariants section (what each breaks is said in invariants.yaml). */
import { randomUUID } from 'node:crypto';
import type { Exchange } from '../../proxy/records.ts';
import { parseLoosely } from '../../proxy/validation.ts';
import { type FaultDefinition, wire } from './define.ts';

// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
type Body = any;

export const MUTATION_WIRE_FAULTS: readonly FaultDefinition[] = [
  // replay and outcomes
  wire('replayed-batch-reexecuted', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'answer a batch sent again as if it ran again: a fresh server_time and a fresh server_version for each applied outcome', transform: reexecutedReplay } },
  ]),
  wire('push-outcome-dropped', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'leave the last rejected outcome out of each push answer', transform: lastRejectedDropped } },
  ]),
  wire('conflict-row-omitted', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'strip server_row and row_checksum from every conflict outcome', transform: conflictRowsOmitted } },
  ]),
  wire('conflict-cross-listed', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'list each conflict outcome in accepted as well as in rejected', transform: conflictsCrossListed } },
  ]),
  wire('conflict-marked-retryable', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'mark every conflict outcome "retryable": true', transform: conflictsRetryable } },
  ]),
  wire('applied-version-is-base', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'report as server_version of each applied update or delete the base_version it was sent from', transform: appliedVersionIsBase } },
  ]),
  wire('terminal-outcome-unbound', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'leave outcome_schema out of every rejected_terminal outcome', transform: terminalOutcomesUnbound } },
  ]),
  wire('carried-mutation-reclassified', [
    { endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'classify a mutation carried into a new batch again against the current row instead of returning its stored outcome', transform: reclassifiedCarriedMutations } },
  ]),
  // client queue
  wire('pull-tombstone-for-scope-exit', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'give each rowless delete the row the same key carries elsewhere in the page, as an invented tombstone', transform: inventTombstones } },
  ]),
];

// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
type Loose = any;

function requestOf(exchange: Exchange): Loose {
  return parseLoosely(exchange.requestBody);
}

const freshVersion = () => `v${randomUUID().replaceAll('-', '')}`;

const microsecondNow = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/**
 * Batches already answered once, by client and batch: the proxy serves
 * every scenario of a run, and client IDs are new in each, so one scenario
 * never sees another's batches.
 */
const answeredBatches = new Set<string>();

/** A second answer to the same batch looks like a new execution: new time, new versions. */
function reexecutedReplay(json: Loose, exchange: Exchange): unknown {
  const request = requestOf(exchange);
  const key = `${String(request?.client_id)}\u0000${String(request?.batch_id)}`;
  if (!answeredBatches.has(key)) {
    answeredBatches.add(key);
    return undefined;
  }
  json.server_time = microsecondNow();
  for (const outcome of Array.isArray(json?.accepted) ? json.accepted : []) if (typeof outcome?.server_version === 'string') outcome.server_version = freshVersion();
  return json;
}

/** Mutations already answered, by client and mutation ID, with the batch that first carried them. */
const answeredMutations = new Map<string, string>();

/** What running the same operation again against the row it created or changed gives. */
const RECLASSIFIED: Record<string, string> = { insert: 'row_already_exists', update: 'version_conflict', delete: 'row_deleted' };

/** A mutation carried from an earlier batch is evaluated again: its stored outcome becomes the conflict a second run meets. */
function reclassifiedCarriedMutations(json: Loose, exchange: Exchange): unknown {
  const request = requestOf(exchange);
  const ops = new Map<string, string>();
  const carried = new Set<string>();
  for (const m of Array.isArray(request?.mutations) ? request.mutations : []) {
    const key = `${String(request?.client_id)}\u0000${String(m?.mutation_id)}`;
    ops.set(String(m?.mutation_id), String(m?.op));
    const first = answeredMutations.get(key);
    if (first === undefined) answeredMutations.set(key, String(request?.batch_id));
    else if (first !== request?.batch_id) carried.add(String(m?.mutation_id));
  }
  if (carried.size === 0) return undefined;
  const accepted: Loose[] = [];
  const all = [...(Array.isArray(json?.accepted) ? json.accepted : []), ...(Array.isArray(json?.rejected) ? json.rejected : [])];
  for (const outcome of all) {
    if (!carried.has(String(outcome?.mutation_id))) continue;
    outcome.status = 'conflict';
    outcome.code = RECLASSIFIED[ops.get(String(outcome.mutation_id)) ?? ''] ?? 'version_conflict';
    outcome.message = 'row changed since the mutation was written';
  }
  const order = new Map([...ops.keys()].map((id, k) => [id, k]));
  const byOrder = (a: Loose, b: Loose) => (order.get(String(a.mutation_id)) ?? 0) - (order.get(String(b.mutation_id)) ?? 0);
  for (const outcome of all) if (outcome.status === 'applied') accepted.push(outcome);
  json.accepted = accepted.sort(byOrder);
  json.rejected = all.filter((o) => o.status !== 'applied').sort(byOrder);
  return json;
}

const listOf = (json: Loose, name: 'accepted' | 'rejected'): Loose[] => (Array.isArray(json?.[name]) ? json[name] : []);

/** One outcome goes missing: the answer no longer accounts for every mutation of the request. */
function lastRejectedDropped(json: Loose): unknown {
  const rejected = listOf(json, 'rejected');
  if (rejected.length === 0) return undefined;
  json.rejected = rejected.slice(0, -1);
  return json;
}

/** A conflict reported without the live row or tombstone the outcome table requires. */
function conflictRowsOmitted(json: Loose): unknown {
  let edited = false;
  for (const outcome of listOf(json, 'rejected')) {
    if (outcome?.status !== 'conflict' || !('server_row' in outcome)) continue;
    delete outcome.server_row;
    delete outcome.row_checksum;
    edited = true;
  }
  return edited ? json : undefined;
}

/** A conflict placed in both lists. */
function conflictsCrossListed(json: Loose): unknown {
  const conflicts = listOf(json, 'rejected').filter((o) => o?.status === 'conflict');
  if (conflicts.length === 0) return undefined;
  json.accepted = [...listOf(json, 'accepted'), ...conflicts.map((o) => ({ ...o }))];
  return json;
}

/** A per-mutation outcome that tells the client it may retry. */
function conflictsRetryable(json: Loose): unknown {
  const conflicts = listOf(json, 'rejected').filter((o) => o?.status === 'conflict');
  for (const outcome of conflicts) outcome.retryable = true;
  return conflicts.length === 0 ? undefined : json;
}

/** An accepted write that reports the version it was compared against, as if the row kept its version. */
function appliedVersionIsBase(json: Loose, exchange: Exchange): unknown {
  const bases = new Map<string, string>();
  for (const m of Array.isArray(requestOf(exchange)?.mutations) ? requestOf(exchange).mutations : []) if (typeof m?.base_version === 'string') bases.set(String(m.mutation_id), m.base_version);
  let edited = false;
  for (const outcome of listOf(json, 'accepted')) {
    const base = bases.get(String(outcome?.mutation_id));
    if (base === undefined) continue;
    outcome.server_version = base;
    edited = true;
  }
  return edited ? json : undefined;
}

/** A terminal rejection that names no schema, as if it had none to bind because it carries no row. */
function terminalOutcomesUnbound(json: Loose): unknown {
  const terminal = listOf(json, 'rejected').filter((o) => o?.status === 'rejected_terminal' && 'outcome_schema' in o);
  for (const outcome of terminal) delete outcome.outcome_schema;
  return terminal.length === 0 ? undefined : json;
}

/**
 * A server that invents a tombstone where a row only left a scope: each
 * rowless delete of the page takes the row, checksum and version that an
 * upsert of the same table and key carries in another scope of the page. A
 * page with no such pair is left alone.
 */
function inventTombstones(json: Body): unknown {
  const changes: Body[] = Array.isArray(json?.changes) ? json.changes : [];
  let edited = false;
  for (const change of changes) {
    if (change.op !== 'delete' || change.row !== undefined) continue;
    const twin = changes.find((c) => c.op === 'upsert' && c.table === change.table && JSON.stringify(c.pk) === JSON.stringify(change.pk));
    if (twin === undefined) continue;
    change.row = twin.row;
    change.row_checksum = twin.row_checksum;
    change.server_version = twin.server_version;
    edited = true;
  }
  return edited ? json : undefined;
}
