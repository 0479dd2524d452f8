/**
 * Octet and count limits of one push request, measured the way the protocol
 * measures them: the decoded body as received, the RFC 8785 form of the parsed
 * request, and for each mutation the RFC 8785 form of its normalised
 * fingerprint array (the form native clients use to decide whether a queued
 * mutation can be sent at all).
 */
import canonicalize from 'canonicalize';
import type { DeleteMutation, InsertMutation, PushRequest, UpdateMutation } from './generated.ts';

export const PUSH_BODY_MAX_OCTETS = 1_048_576;
export const PUSH_CANONICAL_MAX_OCTETS = 1_048_576;
export const MUTATION_NORMALIZED_MAX_OCTETS = 65_536;
export const PUSH_MUTATIONS_MAX = 1000;
export const MUTATION_COLUMNS_MAX = 256;

type Mutation = InsertMutation | UpdateMutation | DeleteMutation;

export interface PushSizes {
  canonicalRequestOctets: number;
  mutations: Array<{ index: number; mutationId: string; normalizedOctets: number; columnCount: number }>;
}

export function pushSizes(request: PushRequest): PushSizes {
  return {
    canonicalRequestOctets: octets(canonicalize(request)),
    mutations: request.mutations.map((mutation, index) => ({
      index,
      mutationId: mutation.mutation_id,
      normalizedOctets: octets(canonicalize(normalizedMutation(mutation))),
      columnCount: 'columns' in mutation ? Object.keys(mutation.columns).length : 0,
    })),
  };
}

/**
 * The fixed-position array a mutation fingerprint is computed over: absence
 * and presence stay distinct (`[0]` versus `[1, ...]`), columns become pairs
 * sorted by the unsigned UTF-8 octets of their field IDs.
 */
export function normalizedMutation(mutation: Mutation): unknown[] {
  const [pkField = '', pkValue = null] = Object.entries(mutation.pk)[0] ?? [];
  const columns =
    'columns' in mutation
      ? [1, Object.entries(mutation.columns).sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))]
      : [0];
  return [
    'mutation-v1',
    mutation.mutation_id,
    mutation.table,
    [pkField, pkValue],
    [String(mutation.authored_schema.version), mutation.authored_schema.hash],
    mutation.op,
    'base_version' in mutation ? [1, mutation.base_version] : [0],
    mutation.client_version,
    columns,
  ];
}

function octets(text: string | undefined): number {
  return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
}
