/**
 * The aggregate of an upstream-format pack: one SHA-256 per vector and one
 * over the list, so that no vector can be altered, dropped, added or reordered
 * without the pack saying so.
 *
 *   vector_hashes[i] = SHA-256(RFC8785_UTF8(vectors[i]))
 *   sha256           = SHA-256(ASCII("synchro:v3:vector-set-aggregate:v1") || 0x00 ||
 *                              RFC8785_UTF8(aggregate without sha256))
 *
 * (docs/decisions.md, "Upstream vector packs", records why these readings.)
 */
import { createHash } from 'node:crypto';
import { canonicalJsonBytes, domain, type JsonObject, type JsonValue, lineAt, RawNumber } from '../codec/index.ts';
import { InputError } from '../errors.ts';

export const AGGREGATE_DOMAIN = domain('synchro:v3:vector-set-aggregate:v1');

const sha256 = (...parts: Uint8Array[]): string => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

export function vectorHash(vector: JsonValue): string {
  return sha256(canonicalJsonBytes(vector));
}

/** The aggregate hash over every member of `aggregate` except `sha256`. */
export function aggregateHash(aggregate: JsonObject): string {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(aggregate)) if (k !== 'sha256') body[k] = v;
  return sha256(AGGREGATE_DOMAIN, canonicalJsonBytes(body));
}

/** A fresh aggregate for the given vectors (used by tests and pack writers). */
export function buildAggregate(vectors: readonly JsonValue[]): JsonObject {
  const aggregate: JsonObject = { algorithm: 'sha256', vector_count: new RawNumber(String(vectors.length)), vector_hashes: vectors.map(vectorHash) };
  aggregate.sha256 = aggregateHash(aggregate);
  return aggregate;
}

const RESTORE_OR_RECOMPUTE =
  'restore the pack as published; if the change is intended, recompute vector_hashes, vector_count and sha256 as described in vectors/README.md ("Upstream format")';

/**
 * Verifies the aggregate of a schema-valid upstream pack and returns its
 * sha256. Any disagreement is an InputError naming the file, the line of the
 * offending vector or of the aggregate, and the fix.
 */
export function verifyAggregate(file: string, text: string, positions: WeakMap<object, number>, pack: JsonObject): string {
  const vectors = pack.vectors as JsonObject[];
  const aggregate = pack.aggregate as JsonObject;
  const aggregateLine = lineAt(text, positions.get(aggregate) ?? 0);
  const count = Number((aggregate.vector_count as RawNumber).raw);
  if (count !== vectors.length) {
    throw new InputError(file, aggregateLine, `aggregate.vector_count is ${count} but the pack has ${vectors.length} vectors`, RESTORE_OR_RECOMPUTE);
  }
  const hashes = aggregate.vector_hashes as string[];
  if (hashes.length !== vectors.length) {
    throw new InputError(file, aggregateLine, `aggregate.vector_hashes lists ${hashes.length} hashes for ${vectors.length} vectors`, RESTORE_OR_RECOMPUTE);
  }
  vectors.forEach((vector, k) => {
    const actual = vectorHash(vector);
    if (actual !== hashes[k]) {
      throw new InputError(
        file,
        lineAt(text, positions.get(vector) ?? 0),
        `vector ${String(vector.vector_id)} (vectors[${k}]) hashes to ${actual}, but aggregate.vector_hashes[${k}] is ${hashes[k]}: the vector differs from the one the aggregate covers`,
        RESTORE_OR_RECOMPUTE,
      );
    }
  });
  const recomputed = aggregateHash(aggregate);
  if (recomputed !== aggregate.sha256) {
    throw new InputError(file, aggregateLine, `aggregate.sha256 is ${String(aggregate.sha256)}, but the aggregate hashes to ${recomputed}`, RESTORE_OR_RECOMPUTE);
  }
  return recomputed;
}
