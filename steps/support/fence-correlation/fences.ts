/**
 * SYNC-CAP-012: the fences server inspection shows for the harness's last
 * source commit (the WAL window `commitAndRecord` kept), and fence messages
 * the harness forges to break correlation on purpose. A fence is read back
 * from the worker's durable event records (`synchro.wal_events`: the event,
 * the fence ID, registered-DML ordinal, registration kind and the decoded
 * fence message it was paired with).
 */
import { randomUUID } from 'node:crypto';
import { inspectRows, tableIdOf } from '../capture/inspection.ts';
import { lastCommitWindow } from '../seed-snapshots/source-commits.ts';
import type { SyncWorld } from '../world.ts';

export interface InspectedFence {
  tableId: string;
  pkText: string;
  eventOrdinal: number;
  operation: string;
  version: string;
  fenceId: string | null;
  dmlOrdinal: number | null;
  kind: string | null;
  message: Record<string, unknown> | null;
}

/** Every event record, with its paired fence, of the harness's last source commit, in event order. */
export async function fencesOfLastCommit(world: SyncWorld): Promise<InspectedFence[]> {
  const { before, after } = lastCommitWindow(world);
  const rows = await inspectRows<{ table_id: string; pk_text: string; o: string; operation: string; server_version: string; fence_id: string | null; d: string | null; registration_kind: string | null; fence_message: Record<string, unknown> | null }>(
    world,
    `SELECT e.table_id, e.pk_text, e.event_ordinal::text AS o, e.operation, e.server_version, e.fence_id::text AS fence_id,
            e.dml_ordinal::text AS d, e.registration_kind, e.fence_message
       FROM synchro.wal_events e
      WHERE e.commit_lsn > $1::pg_lsn AND e.commit_lsn <= $2::pg_lsn
        AND e.stream_generation = (SELECT stream_generation FROM synchro.wal_progress)
      ORDER BY e.commit_lsn, e.event_ordinal`,
    [before, after],
  );
  return rows.map((r) => ({
    tableId: r.table_id,
    pkText: r.pk_text,
    eventOrdinal: Number(r.o),
    operation: r.operation,
    version: r.server_version,
    fenceId: r.fence_id,
    dmlOrdinal: r.d === null ? null : Number(r.d),
    kind: r.registration_kind,
    message: r.fence_message,
  }));
}

/** The registration of a relation as server inspection shows it. */
export async function registrationOf(world: SyncWorld, schema: string, relation: string): Promise<{ relationId: string; tableId: string; oid: number; kind: string }> {
  const [row] = await inspectRows<{ relation_id: string; table_id: string; oid: string; kind: string }>(
    world,
    'SELECT relation_id, table_id, physical_relation_oid::int8::text AS oid, kind FROM synchro.relations WHERE active AND physical_schema = $1 AND physical_relation = $2',
    [schema, relation],
  );
  if (row === undefined) throw new Error(`server inspection shows no active registration of ${schema}.${relation}`);
  return { relationId: row.relation_id, tableId: row.table_id, oid: Number(row.oid), kind: row.kind };
}

/** The fence records of one row of a table in the last commit. */
export async function fencesOfRow(world: SyncWorld, table: string, key: string): Promise<InspectedFence[]> {
  const tableId = await tableIdOf(world, table);
  return (await fencesOfLastCommit(world)).filter((f) => f.tableId === tableId && f.pkText === key);
}

/** The versions of a row that event records of commits before the last one hold. */
export async function earlierVersions(world: SyncWorld, tableId: string, key: string): Promise<string[]> {
  const { before } = lastCommitWindow(world);
  const rows = await inspectRows<{ v: string }>(world, 'SELECT server_version AS v FROM synchro.wal_events WHERE table_id = $1 AND pk_text = $2 AND commit_lsn <= $3::pg_lsn ORDER BY commit_lsn, event_ordinal', [tableId, key, before]);
  return rows.map((r) => r.v);
}

/** A SQL string literal. */
export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The ways the feature tampers with the fence message of an update of one row. */
export type Tamper = 'duplicated' | 'reused-id' | 'foreign-version' | 'wrong-operation' | 'lower-ordinal' | 'invalid-json';

export const TAMPERS: Record<string, Tamper> = {
  'duplicated with the same fence ID': 'duplicated',
  'given the fence ID of an already materialized fence': 'reused-id',
  'emitted with the version of another row': 'foreign-version',
  'emitted with operation "delete" instead of "update"': 'wrong-operation',
  'emitted with a registered-DML ordinal lower than the previous fence of the row': 'lower-ordinal',
  'truncated to invalid JSON': 'invalid-json',
};

/**
 * The source script of an update of `key` whose fence the harness writes
 * itself: triggers are off for the update (session_replication_role replica,
 * as a superuser could), and the harness emits a fence message in the fact
 * sheet's shape that is correct but for the tamper. Everything else a real
 * fence would carry is right, so only the tamper can make the worker refuse it.
 */
export async function tamperedUpdateScript(world: SyncWorld, table: string, keyColumn: string, key: string, tamper: Tamper): Promise<string> {
  const reg = await registrationOf(world, 'public', table);
  const [materialized] = await inspectRows<{ fence_id: string }>(world, 'SELECT fence_id::text AS fence_id FROM synchro.wal_events WHERE fence_id IS NOT NULL ORDER BY commit_lsn DESC LIMIT 1');
  const [other] = await inspectRows<{ server_version: string }>(world, 'SELECT server_version FROM synchro.row_versions WHERE table_id = $1 AND pk_text <> $2 AND state = $3 LIMIT 1', [reg.tableId, key, 'live']);
  if (tamper === 'reused-id' && materialized === undefined) throw new Error('server inspection shows no materialized fence whose ID could be reused');
  if (tamper === 'foreign-version' && other === undefined) throw new Error(`server inspection shows no other live row of ${table} whose version could be borrowed`);
  const fence = (ordinal: number) => ({
    fence_id: tamper === 'reused-id' ? (materialized as { fence_id: string }).fence_id : randomUUID(),
    dml_ordinal: ordinal,
    registration_kind: 'synced',
    relation_id: reg.relationId,
    physical_schema: 'public',
    physical_relation: table,
    physical_relation_oid: reg.oid,
    operation: tamper === 'wrong-operation' ? 'delete' : 'update',
    row_version: tamper === 'foreign-version' ? (other as { server_version: string }).server_version : `v${randomUUID().replaceAll('-', '')}`,
    row_state: tamper === 'wrong-operation' ? 'deleted' : 'live',
    table_id: reg.tableId,
    old_record_id: key,
    new_record_id: tamper === 'wrong-operation' ? null : key,
  });
  const emit = (text: string) => `SELECT pg_logical_emit_message(true, 'synchro_fence', ${literal(text)});`;
  const update = `UPDATE public.${table} SET title = 'tampered' WHERE ${keyColumn} = ${literal(key)};`;
  const unfenced = "SELECT set_config('session_replication_role', 'replica', true);";
  if (tamper === 'lower-ordinal') {
    // A real fenced update first (its ordinal raised to 6), then an unfenced one whose forged fence has ordinal 3.
    return [
      "SELECT set_config('synchro.dml_ordinal', '5', true);",
      `UPDATE public.${table} SET title = 'fenced' WHERE ${keyColumn} = ${literal(key)};`,
      unfenced,
      update,
      emit(JSON.stringify(fence(3))),
    ].join('\n');
  }
  const text = JSON.stringify(fence(1));
  const messages = tamper === 'duplicated' ? [emit(text), emit(text)] : tamper === 'invalid-json' ? [emit(text.slice(0, Math.floor(text.length / 2)))] : [emit(text)];
  return [unfenced, update, ...messages].join('\n');
}
