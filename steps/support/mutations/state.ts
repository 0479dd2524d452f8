/**
 * What the mutation-queue steps keep per scenario beside the World: every
 * mutation record a client ever showed (so a later step can tell whether one
 * went missing), every application write per client with the mutations it
 * captured, names given to mutation IDs, requests and responses the proxy
 * holds, armed crash points and the batches a client had stored when it came
 * back from a crash.
 */
import type { SyncWorld } from '../world.ts';

/** One record of `inspectMutations` (docs/client-adapter-protocol.md). */
export interface QueueRecord {
  id: string;
  table: string;
  tableId?: string;
  recordId?: string;
  op: 'insert' | 'update' | 'delete';
  status: string;
  sourceKind?: string;
  localOrder?: number;
  links?: { dependsOnMutationId?: string | null; normalizedMutationId?: string | null };
  batchId?: string | null;
  ordinal?: number | null;
  columns?: Record<string, unknown>;
  baseVersion?: string | null;
  clientVersion?: string | null;
  groupId?: string | null;
  authoredSchema?: { version: number; hash: string };
}

/** One record of `inspectBatches`. */
export interface StoredBatch {
  batchId: string;
  state: string;
  /** base64 of the exact sealed request body. */
  requestBytes: string;
  members: string[];
}

/** An application statement (or script) a client ran, and what came of it. */
export interface Statement {
  sql: string;
  /** When the harness ran it (epoch ms). */
  at: number;
  /** Rows changed, when the client reports it (a single statement). */
  changes?: number;
  error?: Error;
  /** Mutation IDs the client showed right before it ran. */
  before: Set<string>;
  /** Mutation IDs the client showed after it ran that it did not show before, in the client's order (none when it failed). */
  captured: string[];
}

/** A request or response the proxy keeps back until a step lets it go. */
export interface Hold {
  client: string;
  what: 'request' | 'response';
  /** The endpoint whose request or answer is held. */
  endpoint: 'push' | 'pull' | 'rebuild';
  /** Resolves once the held message has reached the proxy. */
  engaged: Promise<void>;
  release(): void;
  released: boolean;
  /** The request bytes, for a held request, once it arrived. */
  bytes?: Buffer;
}

export interface QueueState {
  seen: Map<string, Map<string, QueueRecord>>;
  /** Every application write of each client, in the order they ran. */
  writes: Map<string, Statement[]>;
  /** Proxy log length right after each client's last write. */
  writeMarks: Map<string, number>;
  labels: Map<string, string>;
  holds: Hold[];
  crashArmed: Map<string, string>;
  batchesAtRestart: Map<string, StoredBatch[]>;
  /** Proxy log length when a client was last restarted. */
  restartMarks: Map<string, number>;
  recordCount: Map<string, { count: number; mark: number }>;
}

const states = new WeakMap<SyncWorld, QueueState>();

export function queueState(world: SyncWorld): QueueState {
  let state = states.get(world);
  if (!state) {
    state = {
      seen: new Map(),
      writes: new Map(),
      writeMarks: new Map(),
      labels: new Map(),
      holds: [],
      crashArmed: new Map(),
      batchesAtRestart: new Map(),
      restartMarks: new Map(),
      recordCount: new Map(),
    };
    states.set(world, state);
  }
  return state;
}

export function labelled(world: SyncWorld, label: string): string {
  const id = queueState(world).labels.get(label);
  if (id === undefined) throw new Error(`no mutation ID was remembered as "${label}" earlier in this scenario`);
  return id;
}
