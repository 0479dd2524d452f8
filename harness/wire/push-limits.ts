/**
 * Octet and count limits of one push request, measured the way the protocol
 * measures them: the decoded body as received (reported by the codec's body
 * reader), the RFC 8785 form of the parsed request, and for each mutation the
 * RFC 8785 form of its normalized fingerprint array. The codec owns that array
 * and its 65,536-octet limit, so the fingerprint and the limit can never count
 * different things.
 */
import { canonicalJsonBytes, normalizedMutationOctets } from '../codec/index.ts';
import type { PushRequest } from './generated.ts';

export const PUSH_BODY_MAX_OCTETS = 1_048_576;
export const PUSH_CANONICAL_MAX_OCTETS = 1_048_576;
export const PUSH_MUTATIONS_MAX = 1000;
export const MUTATION_COLUMNS_MAX = 256;

export interface PushSizes {
  canonicalRequestOctets: number;
  mutations: Array<{ index: number; mutationId: string; normalizedOctets: number; columnCount: number }>;
}

/** Sizes of a schema-valid push request. */
export function pushSizes(request: PushRequest): PushSizes {
  return {
    canonicalRequestOctets: canonicalJsonBytes(request).length,
    mutations: request.mutations.map((mutation, index) => ({
      index,
      mutationId: mutation.mutation_id,
      normalizedOctets: normalizedMutationOctets(mutation),
      columnCount: 'columns' in mutation ? Object.keys(mutation.columns).length : 0,
    })),
  };
}
