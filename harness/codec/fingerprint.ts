/**
 * Push fingerprints: SHA-256 over a domain prefix and the RFC 8785 text of a
 * fixed-position normalized array. They decide exact replay versus
 * `idempotency_conflict`, so every member that carries meaning is included
 * and nothing else is (member order and whitespace of the request are not).
 *
 * The fingerprint functions refuse every request and mutation the protocol
 * refuses with a whole-request 400 (push-shape.ts, plus the octet limits
 * below), so no caller can obtain a fingerprint for a request that must never
 * reach the ledger.
 */
import { createHash } from 'node:crypto';
import { domain } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { checkIdentifier } from './identifiers.ts';
import { type Obj, readEnvelopeInteger, readObject, readSchemaRef } from './json-shape.ts';
import { checkMutationShape, checkPushRequestShape, PUSH_LIMITS } from './push-shape.ts';
import { canonicalJson } from './rfc8785.ts';
import { utf8Order } from './table-shape.ts';

export const BATCH_FINGERPRINT_DOMAIN = domain('synchro:v3:push-batch-fingerprint:v1');
export const MUTATION_FINGERPRINT_DOMAIN = domain('synchro:v3:push-mutation-fingerprint:v1');
/** Largest RFC 8785 form of one normalized mutation, in octets. */
export const MAX_NORMALIZED_MUTATION_OCTETS = PUSH_LIMITS.normalizedMutationOctets;

type Code = 'invalid_mutation' | 'invalid_batch';

function str(o: Obj, key: string, code: Code, path: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new CodecError(code, pointer(path, key), `${key} must be a string`);
  return v;
}

/**
 * Builds the normalized array without judging the mutation beyond what the
 * array needs. Shared by normalizeMutation (which checks first) and
 * normalizedMutationOctets (which only measures).
 */
function buildNormalizedMutation(mutation: unknown, path: string): unknown[] {
  const code: Code = 'invalid_mutation';
  const m = readObject(mutation, code, path, 'a mutation');
  const pk = readObject(m.pk, code, pointer(path, 'pk'), 'pk');
  const pkEntries = Object.entries(pk);
  const firstPk = pkEntries[0];
  if (pkEntries.length !== 1 || firstPk === undefined) throw new CodecError(code, pointer(path, 'pk'), 'pk has exactly one member');
  const base = Object.hasOwn(m, 'base_version') ? [1, m.base_version] : [0];
  let columns: unknown[] = [0];
  if (Object.hasOwn(m, 'columns')) {
    const cols = readObject(m.columns, code, pointer(path, 'columns'), 'columns');
    columns = [1, Object.entries(cols).sort(([a], [b]) => utf8Order(a, b))];
  }
  return [
    'mutation-v1',
    str(m, 'mutation_id', code, path),
    str(m, 'table', code, path),
    [firstPk[0], firstPk[1]],
    readSchemaRef(m.authored_schema, code, pointer(path, 'authored_schema')),
    str(m, 'op', code, path),
    base,
    str(m, 'client_version', code, path),
    columns,
  ];
}

/**
 * The fixed-position array both fingerprints embed. Refuses a mutation the
 * protocol refuses (push-shape.ts) and one whose RFC 8785 form exceeds
 * 65,536 octets.
 */
export function normalizeMutation(mutation: unknown, path = ''): unknown[] {
  return checkedNormalizedMutation(mutation, path).normalized;
}

/** normalizeMutation, answering the RFC 8785 text it measured as well. */
function checkedNormalizedMutation(mutation: unknown, path: string): { normalized: unknown[]; canonical: string } {
  checkMutationShape(mutation, path);
  const normalized = buildNormalizedMutation(mutation, path);
  const canonical = canonicalJson(normalized, path);
  const octets = Buffer.byteLength(canonical, 'utf8');
  if (octets > PUSH_LIMITS.normalizedMutationOctets) {
    throw new CodecError('mutation_too_large', path, `the normalized mutation is ${octets} octets, at most ${PUSH_LIMITS.normalizedMutationOctets} are allowed`);
  }
  return { normalized, canonical };
}

function digestOf(prefix: Uint8Array, canonical: string): { digest: Uint8Array; canonical: string } {
  const digest = createHash('sha256').update(prefix).update(Buffer.from(canonical, 'utf8')).digest();
  return { digest: new Uint8Array(digest), canonical };
}

/**
 * The RFC 8785 text of `head` followed by one member already in RFC 8785
 * form. An array's canonical form is its members' canonical forms between
 * brackets, separated by commas, so the last member is not written again.
 */
function canonicalArray(head: unknown[], canonicalLast: string): string {
  return `[${[...head.map((v) => canonicalJson(v)), canonicalLast].join(',')}]`;
}

/**
 * Octets of the RFC 8785 form of the normalized mutation: the quantity the
 * 65,536-octet limit counts. It measures and does not judge (a client sizing
 * its queue must learn that a mutation is too large, not fail), so it accepts
 * any mutation the array can be built from; normalizeMutation refuses.
 */
export function normalizedMutationOctets(mutation: unknown): number {
  return Buffer.byteLength(canonicalJson(buildNormalizedMutation(mutation, '')), 'utf8');
}

export function mutationFingerprint(userId: string, clientId: string, mutation: unknown): { digest: Uint8Array; canonical: string } {
  checkIdentifier(userId, '#user_id', 'the authenticated user ID');
  checkIdentifier(clientId, '#client_id', 'client_id');
  return mutationDigest(userId, clientId, checkedNormalizedMutation(mutation, '').canonical);
}

function mutationDigest(userId: string, clientId: string, canonicalMutation: string): { digest: Uint8Array; canonical: string } {
  return digestOf(MUTATION_FINGERPRINT_DOMAIN, canonicalArray(['mutation-scope-v1', userId, clientId], canonicalMutation));
}

/**
 * `request` is the push request body; `userId` comes from authentication,
 * never from the request. `atomic: true` changes only the leading tag.
 * Refuses every request the protocol answers with a whole-request 400 that
 * can be decided without server state, including the RFC 8785 size limit.
 */
export function batchFingerprint(userId: string, request: unknown): { digest: Uint8Array; canonical: string } {
  const { r, canonicalMutations } = checkedRequest(userId, request);
  return batchDigest(r, userId, canonicalMutations);
}

/** The request's checks and size limit, then each mutation's checks, normalization and RFC 8785 text. */
function checkedRequest(userId: string, request: unknown): { r: Obj; canonicalMutations: string[] } {
  checkIdentifier(userId, '#user_id', 'the authenticated user ID');
  checkPushRequestShape(request);
  const r = request as Obj;
  const requestOctets = Buffer.byteLength(canonicalJson(r), 'utf8');
  if (requestOctets > PUSH_LIMITS.canonicalRequestOctets) {
    throw new CodecError('request_too_large', '', `the RFC 8785 form of the request is ${requestOctets} octets, at most ${PUSH_LIMITS.canonicalRequestOctets} are allowed`);
  }
  return { r, canonicalMutations: (r.mutations as unknown[]).map((m: unknown, k: number) => checkedNormalizedMutation(m, pointer('/mutations', k)).canonical) };
}

function batchDigest(r: Obj, userId: string, canonicalMutations: string[]): { digest: Uint8Array; canonical: string } {
  const code: Code = 'invalid_batch';
  return digestOf(
    BATCH_FINGERPRINT_DOMAIN,
    canonicalArray(
      [
        r.atomic === true ? 'atomic-batch-v1' : 'batch-v1',
        userId,
        str(r, 'client_id', code, ''),
        readEnvelopeInteger(r.client_generation, 1, code, '/client_generation', 'client_generation'),
        str(r, 'batch_id', code, ''),
        readSchemaRef(r.schema, code, '/schema'),
      ],
      `[${canonicalMutations.join(',')}]`,
    ),
  );
}

/**
 * The batch fingerprint and every mutation's fingerprint of one request, the
 * digests batchFingerprint and mutationFingerprint answer, with the same
 * refusals in the same order; each mutation is checked, normalized and
 * written in RFC 8785 form once for both.
 */
export function pushFingerprints(userId: string, request: unknown): { batch: Uint8Array; mutations: Uint8Array[] } {
  const { r, canonicalMutations } = checkedRequest(userId, request);
  const batch = batchDigest(r, userId, canonicalMutations).digest;
  // checkPushRequestShape checked client_id as an identifier, which is all mutationFingerprint checks of it.
  const clientId = r.client_id as string;
  return { batch, mutations: canonicalMutations.map((c) => mutationDigest(userId, clientId, c).digest) };
}
