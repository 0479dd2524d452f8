/**
 * A registered relation as the capture worker holds it while decoding: its
 * table definition, physical identity, membership function (run as its
 * owner) and the dependency rules that watch it. Materialization, impact
 * evaluation, the stream reset and the worker all name these shapes.
 */
import type { TableDef } from '../core/tables.ts';

export interface RegisteredTable {
  def: TableDef;
  oid: number;
  schema: string;
  name: string;
  membershipFunction: string | null;
  /** Role the membership function runs as: its owner (owner-role.ts). */
  membershipOwner?: string | null;
  /** What to call instead, already running as the owner: its forwarder when capture runs as the worker login (owner-calls.ts). */
  membershipCall?: string;
  maxScopeFanout: number;
  /** Dependencies that watch this relation: its changes re-evaluate their target rows (impact.ts). */
  impacts?: ImpactRule[];
}

/** One registered dependency, seen from the relation whose changes it watches. */
export interface ImpactRule {
  dependencyId: string;
  targetTableId: string;
  impactFunction: string;
  /** Role the impact function runs as: its owner (owner-role.ts). */
  impactOwner: string;
  /** What to call instead, already running as the owner: its forwarder when capture runs as the worker login (owner-calls.ts). */
  impactCall?: string;
  maxImpactRows: number;
}
