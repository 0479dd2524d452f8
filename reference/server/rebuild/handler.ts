/**
 * POST /sync/rebuild. The first request of an attempt stages the scope's
 * complete contents at boundary B as an immutable, ordered snapshot with its
 * digest; every page reads only that stage, and each page's exact bytes are
 * stored so a replay is byte-identical. Continuation tokens bind the session
 * and expire 24 hours after staging (server clock); an accepted write by the
 * client since staging makes every page answer 409 rebuild_restart_required.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { canonicalJson, checksumObject } from '../../../harness/codec/index.ts';
import type { RebuildRequest } from '../../../harness/wire/index.ts';
import { validate } from '../../../harness/wire/index.ts';
import { acknowledgeEveryScopeAt } from '../core/acknowledgement-faults.ts';
import type { Admit } from '../core/admission.ts';
import { acknowledge } from '../core/checkpoints.ts';
import { digestOf, scopeRows } from '../core/checksums.ts';
import { serverClock, serverTime } from '../core/clock.ts';
import { type Bindings, issueCursor, readLineage } from '../core/cursor.ts';
import { signToken, verifyToken } from '../core/cursor-tokens.ts';
import { type CanonicalResult, commitThroughEntryPoint } from '../core/entry-points.ts';
import { invalidRequest, SyncError } from '../core/errors.ts';
import { acknowledgeSnapshotBoundary, liveScopePage, refreshAssignmentInPlace } from '../core/fault-behaviour.ts';
import { fault } from '../core/faults.ts';
import { type ClientState, gateCapture, gateClient } from '../core/gates.ts';
import { checkRebuildText } from '../core/input-limits.ts';
import { formatLsn, parseLsn } from '../core/lsn.ts';
import type { Catalog, ManifestStore } from '../core/manifests.ts';
import { type Position, positionJson, readPosition } from '../core/position.ts';
import { readBoundary, withClientSnapshot } from '../core/snapshot.ts';
import { type ChangeSource, wireChange } from '../core/wire-change.ts';

const LIFETIME_MS = 24 * 60 * 60 * 1000;

interface Session {
  sessionId: string;
  rebuildId: string;
  scope: string;
  clientGeneration: number;
  schemaHash: string;
  membershipGeneration: number;
  retentionGeneration: number;
  streamGeneration: string;
  boundary: Position;
  epoch: number;
  pageLimit: number;
  rowCount: number;
  digest: Buffer;
  expiresAt: Date;
}

const restart = (scope: string) => new SyncError('rebuild_restart_required', 'the rebuild must restart with a new attempt', { scope_id: scope });

async function loadSession(db: PoolClient, where: string, values: unknown[]): Promise<Session | undefined> {
  const { rows } = await db.query(
    `SELECT session_id::text, rebuild_id::text, scope_id, client_generation, schema_hash, membership_generation, retention_generation,
            stream_generation, boundary_lsn::text, accepted_write_epoch, page_limit, row_count, snapshot_digest, expires_at
       FROM synchro.rebuild_sessions WHERE ${where}`,
    values,
  );
  const r = rows[0];
  if (r === undefined) return undefined;
  return {
    sessionId: r.session_id,
    rebuildId: r.rebuild_id,
    scope: r.scope_id,
    clientGeneration: Number(r.client_generation),
    schemaHash: r.schema_hash,
    membershipGeneration: Number(r.membership_generation),
    retentionGeneration: Number(r.retention_generation),
    streamGeneration: r.stream_generation,
    boundary: r.boundary_lsn === null ? { kind: 'generation_start' } : { kind: 'transaction_end', lsn: parseLsn(r.boundary_lsn) },
    epoch: Number(r.accepted_write_epoch),
    pageLimit: r.page_limit,
    rowCount: r.row_count,
    digest: r.snapshot_digest,
    expiresAt: r.expires_at,
  };
}

/** Everything a session binds must still be current, or the attempt restarts. */
async function checkCurrent(db: PoolClient, s: Session, client: ClientState, catalog: Catalog, streamGeneration: string, userId: string, clientId: string): Promise<void> {
  if (fault('pull014-session-ignores-epoch')) s.epoch = client.acceptedWriteEpoch; // fault: server:pull014-session-ignores-epoch
  const lineage = (await readLineage(db, [s.scope])).get(s.scope);
  const assigned = await db.query('SELECT 1 FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2 AND scope_id = $3 AND assigned', [userId, clientId, s.scope]);
  if (
    serverClock.now().getTime() >= s.expiresAt.getTime() ||
    s.epoch !== client.acceptedWriteEpoch ||
    s.clientGeneration !== client.clientGeneration ||
    s.schemaHash !== catalog.current.hash ||
    s.streamGeneration !== streamGeneration ||
    lineage === undefined ||
    s.membershipGeneration !== lineage.membershipGeneration ||
    s.retentionGeneration !== lineage.retentionGeneration ||
    assigned.rowCount === 0
  ) {
    throw restart(s.scope);
  }
}

const TOKEN_MEMBERS = [
  'accepted_write_epoch',
  'client_binding',
  'client_generation',
  'expires_at',
  'issued_at',
  'key_id',
  'kind',
  'membership_generation',
  'next_row_ordinal',
  'page_limit',
  'rebuild_id',
  'retention_generation',
  'schema_hash',
  'scope_id',
  'session_id',
  'snapshot_boundary',
  'stream_generation',
  'token_version',
  'user_binding',
].join(',');

function tokenPayload(s: Session, userId: string, clientId: string, next: number): Record<string, unknown> {
  return {
    kind: 'rebuild',
    token_version: 1,
    stream_generation: s.streamGeneration,
    user_binding: userId,
    client_binding: clientId,
    client_generation: s.clientGeneration,
    scope_id: s.scope,
    schema_hash: s.schemaHash,
    membership_generation: s.membershipGeneration,
    retention_generation: s.retentionGeneration,
    session_id: s.sessionId,
    rebuild_id: s.rebuildId,
    snapshot_boundary: positionJson(s.boundary),
    next_row_ordinal: next,
    page_limit: s.pageLimit,
    accepted_write_epoch: s.epoch,
    expires_at: serverTime(s.expiresAt),
  };
}

/** Builds (or reads back) the page starting at `start`. */
async function page(db: PoolClient, s: Session, catalog: Catalog, userId: string, clientId: string, start: number): Promise<string> {
  if (fault('pull013-replay-renders-page-again')) await db.query('DELETE FROM synchro.rebuild_pages WHERE session_id = $1 AND start_ordinal = $2', [s.sessionId, start]); // fault: server:pull013-replay-renders-page-again
  const stored = await db.query<{ body: string }>('SELECT body FROM synchro.rebuild_pages WHERE session_id = $1 AND start_ordinal = $2', [s.sessionId, start]);
  if (stored.rows[0] !== undefined && fault('pull013-replay-touches-checkpoint')) await acknowledgeSnapshotBoundary(db, { userId, clientId, scope: s.scope, streamGeneration: s.streamGeneration }, s.boundary); // fault: server:pull013-replay-touches-checkpoint
  if (stored.rows[0] !== undefined) return stored.rows[0].body;
  const { rows } = await db.query<{ table_id: string; pk_text: string; row_wire: Record<string, unknown>; server_version: string }>(
    'SELECT table_id, pk_text, row_wire, server_version FROM synchro.rebuild_rows WHERE session_id = $1 AND ordinal >= $2 AND ordinal < $3 ORDER BY ordinal',
    [s.sessionId, start, start + s.pageLimit],
  );
  if (fault('rebuild-pages-read-live')) rows.splice(0, rows.length, ...(await liveScopePage(db, s.scope, start, s.pageLimit))); // fault: server:rebuild-pages-read-live
  const records = rows.map((r) => {
    const c: ChangeSource = { scope: s.scope, tableId: r.table_id, pkText: r.pk_text, op: 'upsert', serverVersion: r.server_version, row: r.row_wire };
    const { scope: _scope, op: _op, ...record } = wireChange(c, catalog.tables, s.schemaHash);
    return record;
  });
  const next = start + s.pageLimit;
  const body: Record<string, unknown> = { scope: s.scope, records };
  if (next < s.rowCount) {
    body.cursor = await signToken(db, 'rebuild_cursor', { ...tokenPayload(s, userId, clientId, next), issued_at: serverTime() });
    body.has_more = true;
  } else {
    const bindings: Bindings = { userId, clientId, clientGeneration: s.clientGeneration, schemaHash: s.schemaHash, streamGeneration: s.streamGeneration };
    const lineage = { membershipGeneration: s.membershipGeneration, retentionGeneration: s.retentionGeneration, floor: { kind: 'generation_start' } as Position };
    body.cursor = null;
    body.has_more = false;
    body.final_scope_cursor = await issueCursor(db, bindings, s.scope, lineage, s.boundary);
    if (fault('final-cursor-at-serve-time')) body.final_scope_cursor = await issueCursor(db, bindings, s.scope, lineage, (await readBoundary(db)).boundary); // fault: server:final-cursor-at-serve-time
    if (fault('rebuild-final-page-acknowledges')) await acknowledge(db, { userId, clientId, streamGeneration: s.streamGeneration, positions: new Map([[s.scope, s.boundary]]) }); // fault: server:rebuild-final-page-acknowledges
    if (fault('rebuild-acknowledges-every-scope')) await acknowledgeEveryScopeAt(db, userId, clientId, s.streamGeneration, s.boundary); // fault: server:rebuild-acknowledges-every-scope
    body.checksum = checksumObject(s.digest);
  }
  const text = canonicalJson(body);
  await db.query('INSERT INTO synchro.rebuild_pages (session_id, start_ordinal, body) VALUES ($1, $2, $3)', [s.sessionId, start, text]);
  return text;
}

/** Stages the scope's materialized contents at B as one immutable session. */
async function stage(db: PoolClient, request: RebuildRequest, userId: string, client: ClientState, catalog: Catalog, boundary: Position, streamGeneration: string): Promise<Session> {
  if (fault('stage-boundary-not-b')) boundary = { kind: 'generation_start' }; // fault: server:stage-boundary-not-b
  const lineage = (await readLineage(db, [request.scope])).get(request.scope);
  if (lineage === undefined) throw invalidRequest();
  const rows = await scopeRows(db, request.scope);
  const digest = Buffer.from(digestOf(rows, catalog.tables, catalog.current.hash, request.scope));
  if (fault('stage-text-key-order')) rows.sort((a, b) => a.tableId.localeCompare(b.tableId) || a.pkText.localeCompare(b.pkText)); // fault: server:stage-text-key-order
  const created = serverClock.now();
  const s: Session = {
    sessionId: randomUUID(),
    rebuildId: request.rebuild_id,
    scope: request.scope,
    clientGeneration: client.clientGeneration,
    schemaHash: catalog.current.hash,
    membershipGeneration: lineage.membershipGeneration,
    retentionGeneration: lineage.retentionGeneration,
    streamGeneration,
    boundary,
    epoch: client.acceptedWriteEpoch,
    pageLimit: request.limit,
    rowCount: rows.length,
    digest,
    expiresAt: new Date(created.getTime() + LIFETIME_MS),
  };
  await db.query(
    `INSERT INTO synchro.rebuild_sessions (session_id, user_id, client_id, rebuild_id, client_generation, scope_id, schema_hash, membership_generation,
       retention_generation, stream_generation, boundary_lsn, accepted_write_epoch, page_limit, row_count, snapshot_digest, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    [s.sessionId, userId, request.client_id, s.rebuildId, s.clientGeneration, s.scope, s.schemaHash, s.membershipGeneration, s.retentionGeneration,
      streamGeneration, boundary.kind === 'transaction_end' ? formatLsn(boundary.lsn) : null, s.epoch, s.pageLimit, s.rowCount, digest, created, s.expiresAt],
  );
  await db.query(
    `INSERT INTO synchro.rebuild_rows (session_id, ordinal, table_id, pk_text, row_wire, server_version)
     SELECT $1, (r.o - 1)::int, r.t, r.k, r.w, r.v FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS r(t, k, w, v, o)`,
    [s.sessionId, rows.map((r) => r.tableId), rows.map((r) => r.pkText), rows.map((r) => JSON.stringify(r.row)), rows.map((r) => r.serverVersion)],
  );
  return s;
}

export async function handleRebuild(pool: Pool, manifests: ManifestStore, userId: string, value: unknown, admit: Admit = () => {}): Promise<CanonicalResult> {
  const parsed = validate('rebuild-request', value);
  if (!parsed.ok) throw invalidRequest();
  const request: RebuildRequest = parsed.value;
  checkRebuildText(request);
  const catalog = await manifests.catalog();
  return await withClientSnapshot(pool, JSON.stringify(['pull', userId, request.client_id]), async (db) => {
    const { boundary, streamGeneration } = await readBoundary(db);
    const client = await gateClient(db, userId, request, catalog);
    if (fault('rebuild-reconciles-assignment')) await refreshAssignmentInPlace(db, userId, request.client_id, client.scopeSetVersion); // fault: server:rebuild-reconciles-assignment
    if (request.cursor === null) {
      const existing = fault('restage-repeated-first-request') ? undefined : await loadSession(db, 'user_id = $1 AND client_id = $2 AND rebuild_id = $3', [userId, request.client_id, request.rebuild_id]); // fault: server:restage-repeated-first-request
      if (existing !== undefined) {
        if (existing.scope !== request.scope || existing.pageLimit !== request.limit) throw invalidRequest();
        if (fault('pull013-first-replay-skips-checks')) return await page(db, existing, catalog, userId, request.client_id, 0); // fault: server:pull013-first-replay-skips-checks
        await checkCurrent(db, existing, client, catalog, streamGeneration, userId, request.client_id);
        admit();
        await gateCapture(db, userId, request.client_id);
        return await page(db, existing, catalog, userId, request.client_id, 0);
      }
      const assigned = await db.query('SELECT 1 FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2 AND scope_id = $3 AND assigned', [userId, request.client_id, request.scope]);
      if (assigned.rowCount === 0 && !fault('bound005-rebuild-serves-named-scope')) throw invalidRequest('the scope is not assigned to this client'); // fault: server:bound005-rebuild-serves-named-scope
      admit();
      await gateCapture(db, userId, request.client_id);
      const s = await stage(db, request, userId, client, catalog, boundary, streamGeneration);
      return await page(db, s, catalog, userId, request.client_id, 0);
    }
    const p = await verifyToken(db, 'rebuild_cursor', request.cursor);
    if (p === undefined || Object.keys(p).sort().join(',') !== TOKEN_MEMBERS || p.kind !== 'rebuild' || p.token_version !== 1) throw invalidRequest();
    if (fault('pull011-context-from-token')) Object.assign(request, { scope: p.scope_id, rebuild_id: p.rebuild_id }); // fault: server:pull011-context-from-token
    if (fault('pull011-limit-from-token')) request.limit = p.page_limit as number; // fault: server:pull011-limit-from-token
    if (p.user_binding !== userId || p.client_binding !== request.client_id || p.scope_id !== request.scope || p.rebuild_id !== request.rebuild_id || p.page_limit !== request.limit) {
      throw invalidRequest();
    }
    const s = typeof p.session_id === 'string' ? await loadSession(db, 'session_id::text = $1 AND user_id = $2 AND client_id = $3', [p.session_id, userId, request.client_id]) : undefined;
    const next = p.next_row_ordinal;
    if (s === undefined || typeof next !== 'number' || !Number.isSafeInteger(next) || next <= 0 || next >= s.rowCount || next % s.pageLimit !== 0) throw invalidRequest();
    // Every bound field must equal the session it names.
    const expected = tokenPayload(s, userId, request.client_id, next);
    const boundaryGiven = readPosition(p.snapshot_boundary);
    for (const [k, v] of Object.entries(expected)) {
      if (k === 'snapshot_boundary') {
        if (boundaryGiven === undefined || canonicalJson(positionJson(boundaryGiven)) !== canonicalJson(v)) throw invalidRequest();
      } else if (p[k] !== v) {
        throw invalidRequest();
      }
    }
    await checkCurrent(db, s, client, catalog, streamGeneration, userId, request.client_id);
    if (fault('pull011-sliding-expiry')) await db.query('UPDATE synchro.rebuild_sessions SET expires_at = $2 WHERE session_id::text = $1', [s.sessionId, Object.assign(s, { expiresAt: new Date(serverClock.now().getTime() + LIFETIME_MS) }).expiresAt]); // fault: server:pull011-sliding-expiry
    admit();
    await gateCapture(db, userId, request.client_id);
    return await page(db, s, catalog, userId, request.client_id, next);
  }, (db, body) => commitThroughEntryPoint(db, 'rebuild', userId, body));
}
