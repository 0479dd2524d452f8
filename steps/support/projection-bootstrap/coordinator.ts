/**
 * The Class 3 projection bootstrap as SYNC-SCOPE-006's steps drive and
 * inspect it: the optional `capture.bootstrap` control of the server adapter
 * (hold, release, resume, kill, activate) and the bootstrap records server
 * inspection shows. Per-scenario state lives in a WeakMap on the World.
 */
import type { BootstrapDriveOutcome, BootstrapProgressAnswer, ProjectionBootstrapControl, ResetHoldPhase } from '../../../harness/adapters/server.ts';
import { inspectRows } from '../capture/inspection.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export const BOOTSTRAP_PHASES: readonly ResetHoldPhase[] = ['preparing', 'baseline_staged', 'catching_up'];

export function bootstrapPhase(text: string): ResetHoldPhase {
  const phase = BOOTSTRAP_PHASES.find((p) => p === text);
  if (phase === undefined) throw new Error(`"${text}" is not a phase a bootstrap can be held at (${BOOTSTRAP_PHASES.join(', ')})`);
  return phase;
}

/** A bootstrap record as server inspection shows it. */
export interface BootstrapRecord {
  bootstrap_id: string;
  lifecycle: string;
  candidate_slot_name: string | null;
  slot_type: string | null;
  plugin: string | null;
  slot_temporary: boolean | null;
  in_this_database: boolean | null;
  exported_snapshot_name: string | null;
  consistent_point: string | null;
  snapshot_boundary: string | null;
  activation_barrier: string | null;
  last_refusal: string | null;
}

interface BootstrapState {
  /** The active slot pointer when the operator published the step. */
  pointerBefore?: { slot: string; generation: string };
  /** Every record as it stood when the coordinator was killed. */
  beforeKill?: BootstrapRecord[];
  /** The answer of the last activation request. */
  activation?: BootstrapDriveOutcome;
}

const states = new WeakMap<SyncWorld, BootstrapState>();

export function bootstrapState(world: SyncWorld): BootstrapState {
  let state = states.get(world);
  if (state === undefined) {
    state = {};
    states.set(world, state);
  }
  return state;
}

/** The bootstrap control, or 'skipped' (with evidence) when the server adapter offers none. */
export async function bootstrapControl(world: SyncWorld): Promise<ProjectionBootstrapControl | 'skipped'> {
  const server = await world.readyServer();
  const control = server.capture?.bootstrap;
  if (control === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.bootstrap (bootstrap.hold, release, resume, kill, activate) to drive the Class 3 projection bootstrap phase by phase`);
  return control;
}

/** The progress of a drive that must not be refused. */
export function progressOf(outcome: BootstrapDriveOutcome, what: string): BootstrapProgressAnswer {
  if (outcome.progress === undefined) throw new Error(`${what}: activation was refused (${outcome.refused})`);
  return outcome.progress;
}

const RECORD_COLUMNS = `bootstrap_id::text, lifecycle, candidate_slot_name, slot_type, plugin, slot_temporary, database_name = current_database() AS in_this_database,
  exported_snapshot_name, consistent_point::text, snapshot_boundary, activation_barrier::text, last_refusal`;

/** Every bootstrap record, oldest first. */
export async function bootstrapRecords(world: SyncWorld): Promise<BootstrapRecord[]> {
  return inspectRows<BootstrapRecord & Record<string, unknown>>(world, `SELECT ${RECORD_COLUMNS} FROM synchro.projection_bootstraps ORDER BY created_at`);
}

/** Candidate slots still present in PostgreSQL's slot catalog, by name. */
export async function presentSlots(world: SyncWorld, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await inspectRows<{ slot_name: string }>(world, 'SELECT slot_name FROM pg_replication_slots WHERE slot_name = ANY($1::text[])', [names]);
  return rows.map((r) => r.slot_name);
}

/** The durable active-slot pointer capture runs on. */
export async function activeSlotPointer(world: SyncWorld): Promise<{ slot: string; generation: string }> {
  const rows = await inspectRows<{ slot_name: string; stream_generation: string }>(world, 'SELECT slot_name, stream_generation FROM synchro.wal_progress');
  const row = rows[0];
  if (rows.length !== 1 || row === undefined) throw new Error(`server inspection shows ${rows.length} active-slot pointers, not one`);
  return { slot: row.slot_name, generation: row.stream_generation };
}
