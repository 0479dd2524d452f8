/**
 * Request gates shared by pull and rebuild, in the wire protocol's order
 * after structure: retirement (409), a client of this user (401),
 * generation (409), schema (422). Also the capture gate (503).
 */
import type { ClientBase } from 'pg';
import { authRequired, SyncError } from './errors.ts';
import { fault } from './faults.ts';
import type { Catalog } from './manifests.ts';
import { named } from './named-statements.ts';
import { relationDriftedSql } from './relation-identity.ts';

export interface ClientState {
  clientGeneration: number;
  scopeSetVersion: number;
  acceptedWriteEpoch: number;
}

export async function gateClient(
  db: ClientBase,
  userId: string,
  request: { client_id: string; client_generation: number; schema: { version: number; hash: string } },
  catalog: Catalog,
): Promise<ClientState> {
  const scope = [userId, request.client_id];
  const retired = await db.query(named('SELECT 1 FROM synchro.client_retirements WHERE user_id = $1 AND client_id = $2', scope));
  if (retired.rowCount !== 0) throw new SyncError('client_retired', 'client has been retired');
  const { rows } = await db.query<{ client_generation: string; scope_set_version: string; accepted_write_epoch: string; expired: boolean }>(
    named('SELECT client_generation, scope_set_version, accepted_write_epoch, expired FROM synchro.clients WHERE user_id = $1 AND client_id = $2 FOR UPDATE', scope),
  );
  const row = rows[0];
  if (row === undefined) throw authRequired();
  if (row.expired || Number(row.client_generation) !== request.client_generation) {
    throw new SyncError('client_generation_expired', 'client generation has expired', { current_client_generation: Number(row.client_generation) });
  }
  const current = catalog.current;
  if (fault('schema-gate-accepts-class2-parent') && current.transitionClass === 'class_2' && current.parent?.hash === request.schema.hash) return { clientGeneration: Number(row.client_generation), scopeSetVersion: Number(row.scope_set_version), acceptedWriteEpoch: Number(row.accepted_write_epoch) }; // fault: server:schema-gate-accepts-class2-parent
  if (request.schema.version !== current.version || request.schema.hash !== current.hash) {
    throw new SyncError('schema_mismatch', 'schema is not current', {
      current_schema: { version: current.version, hash: current.hash },
      received_schema: { version: request.schema.version, hash: request.schema.hash },
    });
  }
  return { clientGeneration: Number(row.client_generation), scopeSetVersion: Number(row.scope_set_version), acceptedWriteEpoch: Number(row.accepted_write_epoch) };
}

/**
 * True while a write this client's push applied is not yet in the
 * materialized projection: its latest fence still names the client's
 * mutation and the projection does not hold that version.
 */
const CAPTURE_PENDING = `EXISTS (
       SELECT 1 FROM synchro.row_versions rv
         JOIN synchro.push_mutations pm ON pm.mutation_id = rv.mutation_id AND pm.user_id = $1 AND pm.client_id = $2
        WHERE rv.state <> 'reserved' AND NOT EXISTS (
          SELECT 1 FROM synchro.projections p WHERE p.table_id = rv.table_id AND p.pk_text = rv.pk_text AND p.server_version = rv.server_version)
     )`;

/**
 * The capture gate of pull and rebuild: nothing is served while capture is
 * blocked by a quarantined transaction (503 temporary_unavailable with
 * reason capture_blocked, nothing more about the cause), nor while one of the
 * client's own accepted writes is not materialized yet (503 capture_pending).
 */
export async function gateCapture(db: ClientBase, userId: string, clientId: string): Promise<void> {
  // The three facts in one round trip; they are judged in the gate's order below (the client's own pending writes first).
  const ignorePending = fault('ignore-capture-pending'); // fault: server:ignore-capture-pending
  const { rows } = await db.query<{ blocked: boolean; drifted: boolean; pending: boolean }>(
    named(
      `SELECT EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active') AS blocked, ${relationDriftedSql()} AS drifted,
              ${ignorePending ? 'false' : CAPTURE_PENDING} AS pending`,
      ignorePending ? [] : [userId, clientId],
    ),
  );
  // The client's own accepted writes that no materialization or activated reset baseline covers yet come first: the
  // client is owed capture_pending until they are covered, a quarantine included (SYNC-CAP-013, decision 340).
  if (rows[0]?.pending === true) throw new SyncError('capture_pending', 'accepted writes are not yet captured; retry later');
  // A quarantined transaction or a drifted registered relation: capture reads nothing more until an operator acts.
  if (rows[0]?.blocked === true || rows[0]?.drifted === true) throw new SyncError('temporary_unavailable', 'capture is blocked', { reason: 'capture_blocked' });
}
