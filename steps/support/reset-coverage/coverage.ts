/**
 * SYNC-CAP-013: what the steps read about a stream reset's per-fence coverage.
 * A fence is named by the mutation whose push it carried: the server version
 * the push answered for it is the fence's row version, which server
 * inspection finds among the reset's coverage records (synchro.reset_fence_coverage),
 * the old stream's materialized events (synchro.wal_events) and the staged
 * baseline (synchro.reset_staged_rows).
 */
import { inspectRows } from '../capture/inspection.ts';
import { activatedRecord, type ResetRecord } from '../stream-reset/operator.ts';
import type { SyncWorld } from '../world.ts';

/** The accepted outcome of `mutationId` in the push response that carried it. */
export function pushedOutcome(world: SyncWorld, mutationId: string): { status: string; server_version?: string } {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push' && r.requestText.includes(mutationId));
  if (reply === undefined) throw new Error(`no push of mutation ${mutationId} was answered in this scenario`);
  const outcomes = [...(reply.json?.accepted ?? []), ...(reply.json?.rejected ?? [])] as { mutation_id: string; status: string; server_version?: string }[];
  const outcome = outcomes.find((o) => o.mutation_id === mutationId);
  if (outcome === undefined) throw new Error(`the push response has no outcome for mutation ${mutationId}: ${reply.text.slice(0, 300)}`);
  return outcome;
}

/** The server version the push of `mutationId` was applied with: the version its fence carries. */
export function fenceVersionOf(world: SyncWorld, mutationId: string): string {
  const outcome = pushedOutcome(world, mutationId);
  if (outcome.status !== 'applied' || typeof outcome.server_version !== 'string') throw new Error(`mutation ${mutationId} was not applied with a server version: ${JSON.stringify(outcome)}`);
  return outcome.server_version;
}

/** The mutation IDs the scenario's pushes carried, in the order they were sent. */
export function pushedMutations(world: SyncWorld): string[] {
  return world.replies
    .filter((r) => r.endpoint === 'push' && r.status === 200)
    .flatMap((r) => ((JSON.parse(r.requestText) as { mutations?: { mutation_id: string }[] }).mutations ?? []).map((m) => m.mutation_id));
}

export interface CoverageRecord {
  reset_id: string;
  fence_id: string;
  coverage: string;
  table_id: string;
  pk_text: string;
  server_version: string;
  row_state: string;
  source_xid: string;
  source_commit_lsn: string;
  candidate_slot_name: string;
  consistent_point: string;
  snapshot_boundary: string | null;
  target_generation: string | null;
  verified: boolean;
  visible_in_snapshot: boolean | null;
}

const COLUMNS = `reset_id::text, fence_id::text, coverage, table_id, pk_text, server_version, row_state, source_xid::text, source_commit_lsn::text, candidate_slot_name,
  consistent_point::text, snapshot_boundary, target_generation, verified_at IS NOT NULL AS verified,
  CASE WHEN snapshot_boundary IS NULL THEN NULL ELSE pg_visible_in_snapshot(source_xid::text::xid8, snapshot_boundary::pg_snapshot) END AS visible_in_snapshot`;

/** Every coverage record of a fence's version, over every reset. */
export async function coverageOfVersion(world: SyncWorld, version: string): Promise<CoverageRecord[]> {
  return inspectRows<CoverageRecord & Record<string, unknown>>(world, `SELECT ${COLUMNS} FROM synchro.reset_fence_coverage WHERE server_version = $1 ORDER BY reset_id`, [version]);
}

/** Every coverage record of one reset, optionally of one row. */
export async function coverageOfReset(world: SyncWorld, resetId: string, row?: { tableId: string; pk: string }): Promise<CoverageRecord[]> {
  const where = row === undefined ? '' : ' AND table_id = $2 AND pk_text = $3';
  return inspectRows<CoverageRecord & Record<string, unknown>>(
    world,
    `SELECT ${COLUMNS} FROM synchro.reset_fence_coverage WHERE reset_id = $1::uuid${where} ORDER BY source_commit_lsn, dml_ordinal`,
    row === undefined ? [resetId] : [resetId, row.tableId, row.pk],
  );
}

/** How many times the old stream materialized a fence of this version (its captured events). */
export async function materializedEvents(world: SyncWorld, version: string): Promise<number> {
  const rows = await inspectRows<{ n: number }>(world, 'SELECT count(*)::int AS n FROM synchro.wal_events WHERE server_version = $1', [version]);
  return rows[0]?.n ?? 0;
}

/** The reset that activated the stream generation capture runs on now; a step reading it before activation fails. */
export async function activatedReset(world: SyncWorld): Promise<ResetRecord> {
  const record = await activatedRecord(world);
  world.assert.ok(record, 'server inspection shows a stream reset that activated the current stream generation');
  return record as ResetRecord;
}

export interface StagedRow {
  pk_text: string;
  server_version: string;
  state: string;
  staged_from: string;
}

/** The staged baseline rows of a reset for the given keys of a table. */
export async function stagedRows(world: SyncWorld, resetId: string, tableId: string, keys: string[]): Promise<StagedRow[]> {
  return inspectRows<StagedRow & Record<string, unknown>>(
    world,
    'SELECT pk_text, server_version, state, staged_from FROM synchro.reset_staged_rows WHERE reset_id = $1::uuid AND table_id = $2 AND pk_text = ANY($3::text[]) ORDER BY pk_text',
    [resetId, tableId, keys],
  );
}

/** Per scenario: the fence a step named last ("that fence"). */
const lastFence = new WeakMap<SyncWorld, { mutationId: string; version: string }>();

export function noteFence(world: SyncWorld, mutationId: string, version: string): void {
  lastFence.set(world, { mutationId, version });
}

export function thatFence(world: SyncWorld): { mutationId: string; version: string } {
  const fence = lastFence.get(world);
  if (fence === undefined) throw new Error('no fence was named earlier in this scenario');
  return fence;
}

/** Keys listed as `"t-1, t-2"`. */
export function keyList(text: string): string[] {
  return text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
}
