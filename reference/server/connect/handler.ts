/**
 * POST /sync/connect: registers or resumes a client, issues its generation,
 * reconciles its scope assignment and chooses the schema action.
 */
import type { Pool } from 'pg';
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { ConnectRequest } from '../../../harness/wire/index.ts';
import { validate } from '../../../harness/wire/index.ts';
import type { Admit } from '../core/admission.ts';
import { reconcile } from '../core/assignment.ts';
import { serverClock, serverTime } from '../core/clock.ts';
import { type CanonicalResult, commitThroughEntryPoint } from '../core/entry-points.ts';
import { integrityFailure, invalidRequest, SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import { checkConnectText } from '../core/input-limits.ts';
import type { ManifestStore } from '../core/manifests.ts';
import { deltaForPresented } from '../core/scope-history.ts';
import { bridgeCursors } from './bridge.ts';
import { dispatchSchema, type LineageStep } from './dispatch.ts';
import { runtimeGate } from './runtime.ts';
import { seedCursorUpdates } from './seed-receipts.ts';

function invalidReference(schema: { version: number; hash: string }, message = 'schema reference is invalid'): SyncError {
  return new SyncError('invalid_schema_reference', message, { received_schema: { version: schema.version, hash: schema.hash } });
}

function protocolGate(value: unknown): void {
  const v = value as Record<string, unknown>;
  if (fault('protocol-from-app-version') && typeof v.app_version === 'string') v.protocol_version = Number(v.app_version.split('.')[0]); // fault: server:protocol-from-app-version
  if (Object.hasOwn(v, 'protocol_version') && v.protocol_version !== 3 && typeof v.protocol_version === 'number' && Number.isSafeInteger(v.protocol_version)) {
    throw new SyncError('upgrade_required', 'protocol version 3 is required', {
      required_protocol_version: 3,
      received_protocol_version: v.protocol_version,
    });
  }
}

/** Protocol gate first, then structure; a malformed schema reference has its own code. */
export function validateConnect(value: unknown): ConnectRequest {
  protocolGate(value);
  const v = value as Record<string, unknown>;
  if (fault('semver-leading-v') && typeof v.app_version === 'string') v.app_version = v.app_version.replace(/^[vV]/, ''); // fault: server:semver-leading-v
  const result = validate('connect-request', value);
  if (result.ok) return result.value;
  const schema = v.schema as Record<string, unknown> | undefined;
  const echo = typeof schema === 'object' && schema !== null && Number.isSafeInteger(schema.version) && typeof schema.hash === 'string';
  const onlySchema = result.errors.every((e) => e.pointer === '/schema' || e.pointer.startsWith('/schema/'));
  if (echo && onlySchema && Object.keys(schema).length === 2) throw invalidReference(schema as { version: number; hash: string });
  throw invalidRequest();
}

const isSentinel = (s: { version: number; hash: string }) => s.version === 0 && s.hash === '';

export async function handleConnect(pool: Pool, manifests: ManifestStore, userId: string, value: unknown, admit: Admit = () => {}): Promise<CanonicalResult> {
  // Protocol, then client runtime (426), then structure (400).
  protocolGate(value);
  await runtimeGate(pool, value);
  const request = validateConnect(value);
  checkConnectText(request);
  const fresh = isSentinel(request.schema);
  if (fresh && (request.client_generation !== undefined || request.schema_reset === true || request.scope_set_version !== 0 || Object.keys(request.known_scopes).length > 0)) {
    throw invalidReference(request.schema, 'the fresh sentinel is only for a new client');
  }
  if (request.schema_reset === true && request.client_generation === undefined) throw invalidReference(request.schema, 'schema_reset needs a client generation');
  const catalog = await manifests.catalog();
  const db = await pool.connect();
  try {
    await db.query("BEGIN; SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
    const scope = [userId, request.client_id];
    const retired = await db.query('SELECT 1 FROM synchro.client_retirements WHERE user_id = $1 AND client_id = $2', scope);
    if (retired.rowCount !== 0 && !(fault('retired-id-reregisters') && request.client_generation === undefined)) throw new SyncError('client_retired', 'client has been retired'); // fault: server:retired-id-reregisters
    // Connect has no failing gate between retirement and admission: it renews an expired generation and dispatches the schema instead.
    admit();
    const existing = await db.query<{ client_generation: string; scope_set_version: string; expired: boolean }>(
      'SELECT client_generation, scope_set_version, expired FROM synchro.clients WHERE user_id = $1 AND client_id = $2 FOR UPDATE',
      scope,
    );
    let row = existing.rows[0];
    const continuing = row !== undefined;
    // Every cursor the client holds is bound to the generation that expired, so a renewal nulls them all.
    const renewed = row?.expired === true;
    if (row !== undefined && fresh) { if (!fault('sentinel-restarts-known-client')) throw invalidReference(request.schema, 'the fresh sentinel is only for a new client'); request.client_generation = Number(row.client_generation); } // fault: server:sentinel-restarts-known-client
    if (row !== undefined && request.client_generation === undefined) throw invalidReference(request.schema, 'a continuing client sends its generation');
    let generation: number;
    if (row === undefined) {
      // A client the server never saw; a presented generation is never handed out again.
      generation = (request.client_generation ?? 0) + 1;
      await db.query(
        `INSERT INTO synchro.clients (user_id, client_id, client_generation, platform, app_version, installed_schema_version, installed_schema_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        // created_at starts the stale-client interval, so it comes from the server clock that expiry reads.
        [...scope, generation, request.platform, request.app_version, fresh ? null : request.schema.version, fresh ? null : request.schema.hash, serverClock.now().toISOString()],
      );
      row = { client_generation: String(generation), scope_set_version: '0', expired: false };
    } else {
      generation = Number(row.client_generation) + (row.expired ? 1 : 0);
      if (fault('wrap-client-generation') && generation > Number.MAX_SAFE_INTEGER) generation = 1; // fault: server:wrap-client-generation
      await db.query(
        `UPDATE synchro.clients SET client_generation = $3, expired = false, platform = $4, app_version = $5,
            installed_schema_version = $6, installed_schema_hash = $7 WHERE user_id = $1 AND client_id = $2`,
        [...scope, generation, request.platform, request.app_version, request.schema.version, request.schema.hash],
      );
      if (fault('schema005-connect-counts-as-activity')) await db.query('UPDATE synchro.clients SET last_acknowledged_at = $3 WHERE user_id = $1 AND client_id = $2', [...scope, serverClock.now().toISOString()]); // fault: server:schema005-connect-counts-as-activity
    }
    // Allocation stops at the top of the portable range instead of handing out an integer a peer would round.
    if (generation > Number.MAX_SAFE_INTEGER) throw integrityFailure('client_generation cannot advance past the portable integer range');
    const assignment = await reconcile(db, userId, request.client_id, Number(row.scope_set_version));
    // A continuing client behind the stored version lost an earlier answer: it gets that change again.
    const delta = continuing
      ? await deltaForPresented(db, { userId, clientId: request.client_id }, { presented: request.scope_set_version, stored: Number(row.scope_set_version) }, assignment, Object.keys(request.known_scopes))
      : assignment;
    const history = new Map<number, LineageStep>();
    for (const m of catalog.history.values()) history.set(m.version, m);
    const current = catalog.current;
    const action = dispatchSchema({
      fresh,
      reset: request.schema_reset === true,
      reference: request.schema,
      current,
      history,
      assigned: assignment.assigned,
    });
    const kept = Object.keys(request.known_scopes).filter((s) => assignment.assigned.includes(s) && !delta.added.includes(s));
    // A schema-changing action bridges the cursors of unaffected kept scopes; a reset or fresh start rebuilds all.
    let cursorUpdates: Record<string, string | null> = {};
    if (action.action === 'replace' || action.action === 'rebuild_local') {
      const affected = new Set(action.action === 'rebuild_local' ? action.affectedScopes : []);
      cursorUpdates = fresh || request.schema_reset === true
        ? Object.fromEntries(kept.map((s) => [s, null]))
        : await bridgeCursors(db, { userId, clientId: request.client_id, clientGeneration: generation, fromHash: request.schema.hash, toHash: current.hash, kept, affected, presented: request.known_scopes });
    }
    if (renewed && !fault('schema005-renewal-keeps-cursors')) for (const s of kept) cursorUpdates[s] = null; // fault: server:schema005-renewal-keeps-cursors
    if (action.action === 'unsupported' && fault('schema003-bridge-unknown-lineage')) cursorUpdates = await bridgeCursors(db, { userId, clientId: request.client_id, clientGeneration: generation, fromHash: request.schema.hash, toHash: current.hash, kept, affected: new Set(), presented: request.known_scopes }); // fault: server:schema003-bridge-unknown-lineage
    // Receipts of an installed seed become cursors at its boundary: on the add entry of a newly assigned scope, else as a cursor update.
    const seeded =
      request.seed_receipts === undefined
        ? {}
        : await seedCursorUpdates(db, request.seed_receipts, { userId, clientId: request.client_id, clientGeneration: generation, schemaHash: current.hash }, new Set(assignment.assigned));
    for (const [scope, cursor] of Object.entries(seeded)) if (!delta.added.includes(scope)) cursorUpdates[scope] = cursor;
    const schema: Record<string, unknown> = { version: current.version, hash: current.hash, action: action.action };
    if (action.action === 'unsupported') schema.reason = action.reason;
    if (fault('unknown-lineage-answers-fetch') && action.action === 'unsupported' && action.reason === 'unknown_schema_lineage') schema.action = 'fetch'; // fault: server:unknown-lineage-answers-fetch
    const response: Record<string, unknown> = {
      server_time: serverTime(),
      protocol_version: 3,
      client_generation: generation,
      scope_set_version: assignment.scopeSetVersion,
      schema,
      scopes: { add: delta.added.map((id) => ({ id, cursor: seeded[id] ?? null })), remove: delta.removed },
      scope_cursor_updates: cursorUpdates,
    };
    if (action.action === 'replace' || action.action === 'rebuild_local') response.schema_definition = JSON.parse(current.text);
    if (action.action === 'rebuild_local') response.affected_scopes = action.affectedScopes;
    return await commitThroughEntryPoint(db, 'connect', userId, canonicalJson(response));
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}
