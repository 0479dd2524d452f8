/**
 * The operator's phased stream reset as the steps drive it (the optional
 * `capture.reset` control of the server adapter), and what server inspection
 * shows about it: the reset record, the durable active-slot pointer, the
 * candidate slot in PostgreSQL's slot catalog, and the quarantine that blocks
 * the old stream. Per-scenario state lives in a WeakMap on the World.
 */
import type { PhasedResetControl, ResetDriveOutcome, ResetHoldPhase } from '../../../harness/adapters/server.ts';
import { inspectRows } from '../capture/inspection.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export const HOLD_PHASES: readonly ResetHoldPhase[] = ['preparing', 'baseline_staged', 'catching_up'];

export function holdPhase(text: string): ResetHoldPhase {
  const phase = HOLD_PHASES.find((p) => p === text);
  if (phase === undefined) throw new Error(`"${text}" is not a phase a reset can be held at (${HOLD_PHASES.join(', ')})`);
  return phase;
}

/** The durable active-slot pointer: the slot and stream generation capture runs on. */
export interface SlotPointer {
  slot: string;
  generation: string;
}

export interface ResetRecord {
  reset_id: string;
  candidate_slot_name: string;
  database_name: string | null;
  plugin: string;
  consistent_point: string | null;
  exported_snapshot_name: string | null;
  snapshot_boundary: string | null;
  slot_created_by: string | null;
  activation_barrier: string | null;
  target_generation: string | null;
  lifecycle: string;
}

interface ResetState {
  /** The pointer read just before the scenario's first reset started. */
  pointerBefore?: SlotPointer;
  /** The reset the scenario started (the latest one). */
  resetId?: string;
  /** The outcome of the last drive of the reset. */
  last?: ResetDriveOutcome;
  records: Map<string, ResetRecord>;
  pointers: Map<string, SlotPointer>;
}

const states = new WeakMap<SyncWorld, ResetState>();

export function resetState(world: SyncWorld): ResetState {
  let state = states.get(world);
  if (state === undefined) {
    state = { records: new Map(), pointers: new Map() };
    states.set(world, state);
  }
  return state;
}

/** The phased reset control, or 'skipped' (with evidence) when the server adapter offers none. */
export async function phasedReset(world: SyncWorld): Promise<PhasedResetControl | 'skipped'> {
  const server = await world.readyServer();
  const control = server.capture?.reset;
  if (control === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.reset (reset-start, reset-continue, reset-abort, reset-kill-operator) to drive the operator's stream reset phase by phase`);
  return control;
}

export async function activePointer(world: SyncWorld): Promise<SlotPointer> {
  const rows = await inspectRows<{ slot_name: string; stream_generation: string }>(world, 'SELECT slot_name, stream_generation FROM synchro.wal_progress');
  const row = rows[0];
  if (rows.length !== 1 || row === undefined) throw new Error(`server inspection shows ${rows.length} active-slot pointers, not one`);
  return { slot: row.slot_name, generation: row.stream_generation };
}

const RECORD_COLUMNS = `reset_id::text, candidate_slot_name, database_name, plugin, consistent_point::text, exported_snapshot_name, snapshot_boundary, slot_created_by,
  activation_barrier::text, target_generation, lifecycle`;

export async function resetRecord(world: SyncWorld, resetId: string): Promise<ResetRecord> {
  const rows = await inspectRows<ResetRecord & Record<string, unknown>>(world, `SELECT ${RECORD_COLUMNS} FROM synchro.stream_resets WHERE reset_id = $1::uuid`, [resetId]);
  const row = rows[0];
  if (row === undefined) throw new Error(`server inspection shows no reset record ${resetId}`);
  return row;
}

/** The record of the reset whose generation the pointer names now, if a reset activated it. */
export async function activatedRecord(world: SyncWorld): Promise<ResetRecord | undefined> {
  const rows = await inspectRows<ResetRecord & Record<string, unknown>>(
    world,
    `SELECT ${RECORD_COLUMNS} FROM synchro.stream_resets WHERE lifecycle = 'activated' AND target_generation = (SELECT stream_generation FROM synchro.wal_progress)`,
  );
  return rows[0];
}

/** The reset this scenario started; a step that reads it before any was started is a scenario defect. */
export function startedResetId(world: SyncWorld): string {
  const id = resetState(world).resetId;
  if (id === undefined) throw new Error('no stream reset was started in this scenario');
  return id;
}

/** Records a drive's outcome and the reset it concerns. */
export function noteOutcome(world: SyncWorld, outcome: ResetDriveOutcome): ResetDriveOutcome {
  const state = resetState(world);
  state.last = outcome;
  if (outcome.progress !== undefined) state.resetId = outcome.progress.reset_id;
  return outcome;
}

/** Starts a reset held at `phase`, after recording the pointer it must leave alone until activation. */
export async function startHeld(world: SyncWorld, phase: ResetHoldPhase): Promise<'skipped' | undefined> {
  const control = await phasedReset(world);
  if (control === 'skipped') return control;
  resetState(world).pointerBefore = await activePointer(world);
  const outcome = noteOutcome(world, await control.start(phase));
  if (outcome.progress?.lifecycle !== phase) throw new Error(`the operator's reset did not stop at phase "${phase}": ${JSON.stringify(outcome)}`);
  return undefined;
}

/** Waits until `probe` holds, polling until the World's deadline. */
export async function waitUntil(world: SyncWorld, what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + world.deadlineMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
