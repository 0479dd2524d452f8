/** The shapes of the requirement chain: catalog headings and invariants.yaml records. */

export type Applicability = 'server' | 'client';
export type Profile = 'server' | 'client' | 'full';

/** A reference from a record to its sources. Exactly one is normative: the catalog anchor. */
export type Reference =
  | { type: 'normative'; anchor: string }
  | { type: 'supplemental'; source: string; section: string };

/**
 * A way to break one clause of an invariant on purpose, so the sensitivity
 * run can prove that a Then step of that clause's Rule notices.
 */
export interface FaultRecipe {
  /** Name in the fault registry, e.g. `wire:drop-push-response` or `server:offset-datetime`. */
  name: string;
  /** The title of the feature's `Rule:` whose clause the fault breaks, exactly as written there. */
  rule: string;
  /** What the fault does to the implementation, in one sentence (the only place this is said). */
  description: string;
}

/** One record of invariants.yaml: the binding of one catalog heading to one feature. */
export interface RequirementRecord {
  id: string;
  title: string;
  anchor: string;
  section: string;
  summary: string;
  applies_to: Applicability[];
  internal?: boolean;
  profiles: Profile[];
  feature: string;
  references: Reference[];
  faults?: FaultRecipe[];
}

/** A record together with the line of invariants.yaml where it starts (for error messages). */
export interface LocatedRecord {
  record: RequirementRecord;
  line: number;
}
