/**
 * Shared vocabulary of the cross-field rules: what a violation looks like and
 * what a caller may tell a rule about the exchange around one message.
 */
import { type JsonReadOk, utf8Order } from '../../codec/index.ts';
import type { PrimaryKey, Row, SchemaManifest, SchemaRef } from '../generated.ts';

export interface Violation {
  /** Rule id, e.g. `LR3` (numbering of wire-protocol.md section 6) or a named extra rule. */
  rule: string;
  pointer: string;
  message: string;
}

/** Recomputes a row digest (64 lowercase hex) under a manifest; supplied by the caller, e.g. from harness/codec. */
export type RowDigestFn = (input: {
  manifest: SchemaManifest;
  table: string;
  pk: PrimaryKey;
  row: Row;
  serverVersion: string;
}) => string;

/**
 * Facts outside the message. Every member is optional: a rule whose facts are
 * missing is reported as skipped, never as passed.
 */
export interface RuleContext {
  /** The request this response answers (checked against its own schema first). */
  request?: unknown;
  /** Manifests the rows may be bound to; looked up by version and hash. */
  manifests?: readonly SchemaManifest[];
  /** The client's active assigned scopes before this response. */
  activeScopes?: readonly string[];
  /** Every scope ever assigned to this client generation (pull request scope keys). */
  everAssignedScopes?: readonly string[];
  /** The server's stored scope_set_version before this exchange. */
  serverScopeSetVersion?: number;
  /** Scopes whose seed receipts the server validated in this connect. */
  validatedSeedScopes?: readonly string[];
  /** True when this push response is a first execution (not a replay). */
  firstExecution?: boolean;
  /** HTTP status and headers of the response. */
  status?: number;
  headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Reader output for the message bytes (body size, number token spelling). */
  read?: JsonReadOk;
  /** The exact bytes of this message. */
  bytes?: Uint8Array;
  /** An earlier send of the same sealed push batch (P8). */
  previousRequest?: unknown;
  /** The earlier response this one replays: its status and bytes (PR10, BR5). */
  replayOf?: { status: number; bytes: Uint8Array };
  /** Rebuild: the previous page exchange of the attempt, or null for the first request. */
  previousExchange?: { request: unknown; response: unknown } | null;
  rowDigest?: RowDigestFn;
}

export function violation(rule: string, pointer: string, message: string): Violation {
  return { rule, pointer, message };
}

export function sameRef(a: SchemaRef, b: SchemaRef): boolean {
  return a.version === b.version && a.hash === b.hash;
}

export function findManifest(ctx: RuleContext, ref: SchemaRef): SchemaManifest | undefined {
  return ctx.manifests?.find((m) => m.schema_version === ref.version && m.schema_hash === ref.hash);
}

/** Indexes of entries not strictly after their predecessor in unsigned UTF-8 octet order (the order IDs and names are listed in). */
export function notStrictlyIncreasing(values: readonly string[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < values.length; i++) {
    if (utf8Order(values[i - 1] ?? '', values[i] ?? '') >= 0) out.push(i);
  }
  return out;
}

/** Pointers of duplicate entries in a list (every occurrence after the first). */
export function duplicates(values: readonly string[]): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  values.forEach((v, i) => {
    if (seen.has(v)) out.push(i);
    seen.add(v);
  });
  return out;
}
