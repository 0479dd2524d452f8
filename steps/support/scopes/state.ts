/**
 * What the scope steps remember within one scenario, beside the World: the
 * outcome of the last SQL run as a role, catalog rows read, started syncs,
 * assignment snapshots and the histories the version steps walked.
 */
import type { SyncResult, SyncWorld } from '../world.ts';
import type { SqlOutcome } from './roles.ts';

export interface HistoryStep {
  label: string;
  /** The set the harness expects after the step (from the assignment it made). */
  expected: string[];
  /** The set the client holds after applying the pull, and the version the pull reported. */
  observed: string[];
  version: number;
  status: number;
  /** The version a scripted table lists for the step, when it lists one. */
  listedVersion?: number;
}

export interface History {
  start: { set: string[]; version: number };
  steps: HistoryStep[];
}

export interface ScopesState {
  lastSql: SqlOutcome | undefined;
  catalogRows: Record<string, unknown>[] | undefined;
  started: Map<string, Promise<SyncResult>>;
  assignmentSnapshot: Map<string, string> | undefined;
  histories: History[];
  /** The two clients whose sets a step compared, for the step that names both sets. */
  comparedSets: { puller: string; connector: string } | undefined;
}

const states = new WeakMap<SyncWorld, ScopesState>();

export function scopesState(world: SyncWorld): ScopesState {
  let state = states.get(world);
  if (!state) {
    state = { lastSql: undefined, catalogRows: undefined, started: new Map(), assignmentSnapshot: undefined, histories: [], comparedSets: undefined };
    states.set(world, state);
  }
  return state;
}
