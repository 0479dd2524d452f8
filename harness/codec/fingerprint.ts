/**
 * Push fingerprints: SHA-256 over a domain prefix and the RFC 8785 text of a
 * fixed-position normalized array. They decide exact replay versus
 * `idempotency_conflict`, so every member that carries meaning is included
 * and nothing else is (member order and whitespace of the request are not).
 */
import { createHash } from 'node:crypto';
import { domain } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { canonicalJson } from './rfc8785.ts';
import { RawNumber } from './strict-json.ts';
import { utf8Order } from './table-shape.ts';

export const BATCH_FINGERPRINT_DOMAIN = domain('synchro:v3:push-batch-fingerprint:v1');
export const MUTATION_FINGERPRINT_DOMAIN = domain('synchro:v3:push-mutation-fingerprint:v1');
/** Largest RFC 8785 form of one normalized mutation, in octets. */
export const MAX_NORMALIZED_MUTATION_OCTETS = 65_536;

type Obj = Record<string, unknown>;
type Code = 'invalid_mutation' | 'invalid_batch';

function obj(v: unknown, code: Code, path: string, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof RawNumber) throw new CodecError(code, path, `${what} must be an object`);
  return v as Obj;
}

function str(o: Obj, key: string, code: Code, path: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new CodecError(code, pointer(path, key), `${key} must be a string`);
  return v;
}

/** Envelope counters become canonical unsigned base-10 text. */
function positiveDecimal(v: unknown, code: Code, path: string): string {
  const text = v instanceof RawNumber ? v.raw : typeof v === 'number' ? String(v) : undefined;
  if (text === undefined || !/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new CodecError(code, path, 'expected a positive safe integer');
  }
  return text;
}

function schemaRef(v: unknown, code: Code, path: string): [string, string] {
  const ref = obj(v, code, path, 'a schema reference');
  return [positiveDecimal(ref.version, code, pointer(path, 'version')), str(ref, 'hash', code, path)];
}

/** The fixed-position array that both fingerprints embed. */
export function normalizeMutation(mutation: unknown, path = ''): unknown[] {
  const code: Code = 'invalid_mutation';
  const m = obj(mutation, code, path, 'a mutation');
  const pk = obj(m.pk, code, pointer(path, 'pk'), 'pk');
  const pkEntries = Object.entries(pk);
  const firstPk = pkEntries[0];
  if (pkEntries.length !== 1 || firstPk === undefined) throw new CodecError(code, pointer(path, 'pk'), 'pk has exactly one member');
  const base = Object.hasOwn(m, 'base_version') ? [1, m.base_version] : [0];
  let columns: unknown[] = [0];
  if (Object.hasOwn(m, 'columns')) {
    const cols = obj(m.columns, code, pointer(path, 'columns'), 'columns');
    columns = [1, Object.entries(cols).sort(([a], [b]) => utf8Order(a, b))];
  }
  return [
    'mutation-v1',
    str(m, 'mutation_id', code, path),
    str(m, 'table', code, path),
    [firstPk[0], firstPk[1]],
    schemaRef(m.authored_schema, code, pointer(path, 'authored_schema')),
    str(m, 'op', code, path),
    base,
    str(m, 'client_version', code, path),
    columns,
  ];
}

function fingerprint(prefix: Uint8Array, normalized: unknown[], path: string): { digest: Uint8Array; canonical: string } {
  const canonical = canonicalJson(normalized, path);
  const digest = createHash('sha256').update(prefix).update(Buffer.from(canonical, 'utf8')).digest();
  return { digest: new Uint8Array(digest), canonical };
}

/** Octets of the RFC 8785 form of the normalized mutation (the 65,536-octet limit counts these). */
export function normalizedMutationOctets(mutation: unknown): number {
  return Buffer.byteLength(canonicalJson(normalizeMutation(mutation)), 'utf8');
}

export function mutationFingerprint(userId: string, clientId: string, mutation: unknown): { digest: Uint8Array; canonical: string } {
  return fingerprint(MUTATION_FINGERPRINT_DOMAIN, ['mutation-scope-v1', userId, clientId, normalizeMutation(mutation)], '');
}

/**
 * `request` is the push request body; `userId` comes from authentication,
 * never from the request. `atomic: true` changes only the leading tag.
 */
export function batchFingerprint(userId: string, request: unknown): { digest: Uint8Array; canonical: string } {
  const code: Code = 'invalid_batch';
  const r = obj(request, code, '', 'a push request');
  let tag = 'batch-v1';
  if (Object.hasOwn(r, 'atomic')) {
    if (r.atomic !== true) throw new CodecError(code, '/atomic', 'atomic is either absent or true');
    tag = 'atomic-batch-v1';
  }
  if (!Array.isArray(r.mutations)) throw new CodecError(code, '/mutations', 'mutations must be an array');
  const mutations = r.mutations.map((m: unknown, k: number) => normalizeMutation(m, pointer('/mutations', k)));
  return fingerprint(
    BATCH_FINGERPRINT_DOMAIN,
    [
      tag,
      userId,
      str(r, 'client_id', code, ''),
      positiveDecimal(r.client_generation, code, '/client_generation'),
      str(r, 'batch_id', code, ''),
      schemaRef(r.schema, code, '/schema'),
      mutations,
    ],
    '',
  );
}
