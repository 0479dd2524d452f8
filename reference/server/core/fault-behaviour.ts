/**
 * Behaviour that only a sensitivity-run fault switch reaches: what a server
 * that gets a clause wrong would do, written out here so the modules a reader
 * follows keep only the correct behaviour and a one-line switch.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, type ClientBase, type ClientConfig, type Pool, type PoolClient } from 'pg';
import { computeAssignment, reconcile } from './assignment.ts';
import { scopeRows } from './checksums.ts';
import { type Position, triple } from './position.ts';
import { withClientSnapshot } from './snapshot.ts';
import { quoteIdent, type TableDef } from './tables.ts';
import type { ChangeSource } from './wire-change.ts';

/**
 * Sensitivity-run fault only: reconciles the named client in a transaction
 * of its own before the request is checked, as a server that reconciles
 * assignment in front of its request handling would.
 */
export async function reconcileAhead(pool: Pool, userId: string, body: unknown): Promise<void> {
  const clientId = (body as { client_id?: unknown } | null)?.client_id;
  if (typeof clientId !== 'string') return;
  await withClientSnapshot(pool, JSON.stringify(['pull', userId, clientId]), async (db) => {
    const { rows } = await db.query<{ scope_set_version: string }>('SELECT scope_set_version FROM synchro.clients WHERE user_id = $1 AND client_id = $2', [userId, clientId]);
    if (rows[0] !== undefined) await reconcile(db, userId, clientId, Number(rows[0].scope_set_version));
  });
}

/**
 * Sensitivity-run fault only: evaluates the assignment and stores it as the
 * client's assigned scopes in place, without a version step or a recorded
 * set, as a rebuild that refreshes assignment on its own would.
 */
export async function refreshAssignmentInPlace(db: PoolClient, userId: string, clientId: string, storedVersion: number): Promise<void> {
  const assigned = await computeAssignment(db, userId);
  await db.query('UPDATE synchro.client_scopes SET assigned = (scope_id = ANY($3::text[])) WHERE user_id = $1 AND client_id = $2', [userId, clientId, assigned]);
  await db.query(
    `INSERT INTO synchro.client_scopes (user_id, client_id, scope_id, assigned, changed_at_version) SELECT $1, $2, s, true, $4 FROM unnest($3::text[]) AS s
     ON CONFLICT (user_id, client_id, scope_id) DO NOTHING`,
    [userId, clientId, assigned, storedVersion],
  );
}

/**
 * Sensitivity-run fault only: one rebuild page read from the scope's live
 * materialized rows by position, as a server that pages over the current
 * scope contents instead of its staged snapshot would.
 */
export async function liveScopePage(db: PoolClient, scope: string, start: number, limit: number): Promise<{ table_id: string; pk_text: string; row_wire: Record<string, unknown>; server_version: string }[]> {
  const rows = await scopeRows(db, scope);
  return rows.slice(start, start + limit).map((r) => ({ table_id: r.tableId, pk_text: r.pkText, row_wire: r.row, server_version: r.serverVersion }));
}

/**
 * Sensitivity-run fault only: a seed scope's rows in row-identity order, read
 * on a connection of its own (so in a snapshot of its own), as a seed page
 * function that takes a pooled connection instead of the caller's export
 * transaction would read them.
 */
export async function scopeRowsOnOwnConnection(db: ClientBase, scope: string): Promise<Awaited<ReturnType<typeof scopeRows>>> {
  const own = new Client((db as unknown as { connectionParameters: ClientConfig }).connectionParameters);
  await own.connect();
  try {
    return (await scopeRows(own, scope)).sort((a, b) => Buffer.compare(a.pkBytes, b.pkBytes));
  } finally {
    await own.end();
  }
}

/** What the merge-level duplicate checks of the fault switches compare. */
interface MergedCandidate {
  scope: string;
  tableId: string;
  pkText: string;
  pkBytes: Buffer;
}

/**
 * Sensitivity-run fault only: true when a candidate of the same table and key
 * was already picked for the page in any scope, as a server that deduplicates
 * the merged page by (table, key) without the scope would find.
 */
export function pickedInAnyScope(picked: readonly MergedCandidate[], head: MergedCandidate): boolean {
  return picked.some((c) => c.tableId === head.tableId && c.pkBytes.equals(head.pkBytes));
}

/**
 * Sensitivity-run fault only: true when a candidate of the scope was already
 * picked whose table and key, joined into one string with numeric-looking
 * keys read as floating-point numbers, spell the same, as a server keyed by
 * such a string would find.
 */
export function pickedUnderJoinedKey(picked: readonly MergedCandidate[], head: MergedCandidate): boolean {
  const joined = (c: MergedCandidate) => {
    const text = c.pkText.replace(/^"(.*)"$/, '$1');
    return `${c.tableId}:${/^-?[0-9]+$/.test(text) ? String(Number(text)) : text}`;
  };
  return picked.some((c) => c.scope === head.scope && joined(c) === joined(head));
}

let syncService: Promise<string> | undefined;

/**
 * Sensitivity-run fault only: a separate "sync service" on a loopback port of
 * its own, as a deployment that runs part of its sync logic beside the
 * database would call. Started once per process; it answers every request
 * with a decision to proceed.
 */
function syncServiceUrl(): Promise<string> {
  syncService ??= new Promise((resolve, reject) => {
    const service = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"decision":"proceed"}');
      });
    });
    service.unref();
    service.once('error', reject);
    service.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(service.address() as AddressInfo).port}`));
  });
  return syncService;
}

/**
 * Sensitivity-run fault only: sends the sync request to the separate sync
 * service and waits for its answer before serving it, ignoring a failure, as
 * an adapter that mirrors its core calls to another service would.
 */
export async function mirrorToSyncService(path: string, body: unknown): Promise<void> {
  try {
    const response = await fetch(`${await syncServiceUrl()}${path}`, { method: 'POST', body: JSON.stringify(body) });
    await response.arrayBuffer();
  } catch {
    // A mirror that cannot be reached is ignored: the request is served as usual.
  }
}

/**
 * Sensitivity-run fault only: asks the separate sync service for its decision
 * on the request and fails the request when the service cannot be reached, as
 * a server whose core semantics depend on an outbound RPC would.
 */
export async function decisionFromSyncService(path: string): Promise<void> {
  const response = await fetch(`${await syncServiceUrl()}${path}`, { method: 'POST', body: '{}' });
  if (!response.ok) throw new Error(`the sync service answered ${response.status}`);
  await response.json();
}

/**
 * Sensitivity-run fault only: records the snapshot boundary of a rebuild
 * session as the client's checkpoint for the scope (and stamps it now), as a
 * server that takes a replayed rebuild page for proof of the client's
 * progress would.
 */
export async function acknowledgeSnapshotBoundary(db: PoolClient, ids: { userId: string; clientId: string; scope: string; streamGeneration: string }, boundary: Position): Promise<void> {
  const [lsn, event, effect] = triple(boundary);
  await db.query(
    `INSERT INTO synchro.checkpoints (user_id, client_id, scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal)
     VALUES ($1, $2, $3, $4, $5::pg_lsn, $6::int8, $7)
     ON CONFLICT (user_id, client_id, scope_id) DO UPDATE SET commit_lsn = excluded.commit_lsn, event_ordinal = excluded.event_ordinal,
       effect_ordinal = excluded.effect_ordinal, acknowledged_at = clock_timestamp()`,
    [ids.userId, ids.clientId, ids.scope, ids.streamGeneration, lsn, event, effect],
  );
}

/**
 * Sensitivity-run fault only: gives each upsert of a pull page the row the
 * source table holds now instead of the one capture stored for the effect
 * (and drops the stored digest, so the checksum covers the live row), as a
 * server that builds outcomes from the live source row would.
 */
export async function withLiveSourceRows(db: PoolClient, tables: Map<string, TableDef>, candidates: ChangeSource[]): Promise<void> {
  for (const c of candidates) {
    const table = tables.get(c.tableId);
    if (c.op !== 'upsert' || table === undefined) continue;
    const keyType = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
    const { rows } = await db.query<Record<string, unknown>>(`SELECT ${table.selectList} FROM ${table.qualified} WHERE ${quoteIdent(table.pkColumn)} = $1::${keyType}`, [c.pkText]);
    if (rows[0] === undefined) continue;
    c.row = rows[0];
    c.stored = null;
  }
}
