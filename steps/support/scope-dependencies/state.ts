/**
 * What the dependency steps remember within one scenario: the capture-only
 * relations they created, where each dependent table's rows belong, the
 * impact declared for it, and the source transactions committed under a
 * label (their WAL bounds and the source rows right after them).
 */
import type { SyncWorld } from '../world.ts';
import type { Impact, Placement, SourceRow } from './rules.ts';

export interface CaptureOnly {
  relation: string;
  key: string;
  fields: string[];
}

export interface Declared {
  dependency: string;
  impact: Impact;
  /** The target's table ID, known once it is registered. */
  tableId: string;
}

/** A labelled source transaction: every effect it caused carries a commit position in (before, after]. */
export interface Position {
  before: string;
  after: string;
  /** Rows of every table the dependent placements read, as committed by this transaction. */
  rows: Map<string, SourceRow[]>;
}

export interface DependencyState {
  captureOnly: Map<string, CaptureOnly>;
  placements: Map<string, Placement>;
  /** Dependent tables the model leaves alone, not installed yet: their dependency declaration installs them. */
  claimed: Set<string>;
  declared: Map<string, Declared>;
  positions: Map<string, Position>;
}

const states = new WeakMap<SyncWorld, DependencyState>();

export function dependencyState(world: SyncWorld): DependencyState {
  let state = states.get(world);
  if (!state) {
    state = { captureOnly: new Map(), placements: new Map(), claimed: new Set(), declared: new Map(), positions: new Map() };
    states.set(world, state);
  }
  return state;
}

export function placementOf(world: SyncWorld, target: string): Placement {
  const placement = dependencyState(world).placements.get(target);
  if (!placement) throw new Error(`table "${target}" has no placement that reads other rows: a step "table ${JSON.stringify(target)} places each row in ..." must come first`);
  return placement;
}

export function declaredOf(world: SyncWorld, target: string, dependency: string): Declared {
  const declared = dependencyState(world).declared.get(target);
  if (!declared || declared.dependency !== dependency) throw new Error(`no dependency of "${target}" on "${dependency}" was declared in this scenario`);
  return declared;
}

export function positionOf(world: SyncWorld, label: string): Position {
  const position = dependencyState(world).positions.get(label);
  if (!position) throw new Error(`no source transaction was recorded as "${label}"`);
  return position;
}
