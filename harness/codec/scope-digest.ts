/**
 * Scope digest = SHA-256(SCOPE_DOMAIN || schema_hash_raw || text(scope_id) ||
 *   u64be(cardinality) || for each entry in identity order:
 *   blob(row_identity) || row_digest).
 *
 * Two builders share one hashing routine:
 * - SortedScopeDigest streams entries that already arrive in identity order
 *   (e.g. `ORDER BY row_identity` from a database) with a known cardinality;
 * - ScopeDigestBuilder takes entries in any order, sorts them, and then streams.
 * Both refuse duplicates and malformed identities or digests: those are errors,
 * never digests.
 */
import { createHash, type Hash } from 'node:crypto';
import { ByteWriter } from './byte-writer.ts';
import { compareBytes, domain, text, u64be } from './bytes.ts';
import { CodecError } from './errors.ts';
import { checkRowIdentity } from './row-identity.ts';

export const SCOPE_DOMAIN = domain('synchro:v3:scope-digest:v1');

/** Entries are hashed in chunks of about this many octets rather than two hash updates each. */
const CHUNK = 64 * 1024;

function checkEntry(identity: Uint8Array, digest: Uint8Array, at: number): void {
  checkRowIdentity(identity, `/entries/${at}`);
  if (digest.length !== 32) throw new CodecError('invalid_digest', `/entries/${at}`, `a row digest is 32 octets, got ${digest.length}`);
}

export class SortedScopeDigest {
  readonly #hash: Hash;
  readonly #cardinality: number;
  #count = 0;
  #last: Uint8Array | undefined;
  readonly #pending = new ByteWriter(4096);

  constructor(schemaHash: Uint8Array, scopeId: string, cardinality: number) {
    if (schemaHash.length !== 32) throw new CodecError('invalid_schema_hash', '', 'schema hash must be 32 octets');
    if (scopeId.length === 0) throw new CodecError('invalid_identifier', '', 'scope ID is nonempty');
    if (!Number.isSafeInteger(cardinality) || cardinality < 0) throw new CodecError('cardinality_mismatch', '', 'cardinality must be a nonnegative integer');
    this.#cardinality = cardinality;
    this.#hash = createHash('sha256');
    this.#hash.update(SCOPE_DOMAIN);
    this.#hash.update(schemaHash);
    this.#hash.update(text(scopeId));
    this.#hash.update(u64be(cardinality));
  }

  add(identity: Uint8Array, digest: Uint8Array): void {
    checkEntry(identity, digest, this.#count);
    if (this.#last !== undefined) {
      const order = compareBytes(this.#last, identity);
      if (order === 0) throw new CodecError('duplicate_identity', `/entries/${this.#count}`, 'the same row identity appears twice in the scope');
      if (order > 0) throw new CodecError('unsorted_identity', `/entries/${this.#count}`, 'row identities must arrive in increasing bytewise order');
    }
    if (this.#count >= this.#cardinality) {
      throw new CodecError('cardinality_mismatch', `/entries/${this.#count}`, `more entries than the stated cardinality ${this.#cardinality}`);
    }
    // The same octets as update(blob(identity)) then update(digest), gathered so the hash sees few large updates.
    this.#pending.blob(identity);
    this.#pending.bytes(digest);
    if (this.#pending.length >= CHUNK) this.#flush();
    this.#last = identity;
    this.#count++;
  }

  #flush(): void {
    this.#hash.update(this.#pending.view());
    this.#pending.reset();
  }

  finish(): Uint8Array {
    this.#flush();
    if (this.#count !== this.#cardinality) {
      throw new CodecError('cardinality_mismatch', '', `stated cardinality ${this.#cardinality}, got ${this.#count} entries`);
    }
    return new Uint8Array(this.#hash.digest());
  }
}

export class ScopeDigestBuilder {
  readonly #schemaHash: Uint8Array;
  readonly #scopeId: string;
  readonly #entries: { identity: Uint8Array; digest: Uint8Array; at: number }[] = [];

  constructor(schemaHash: Uint8Array, scopeId: string) {
    if (schemaHash.length !== 32) throw new CodecError('invalid_schema_hash', '', 'schema hash must be 32 octets');
    if (scopeId.length === 0) throw new CodecError('invalid_identifier', '', 'scope ID is nonempty');
    this.#schemaHash = schemaHash;
    this.#scopeId = scopeId;
  }

  /** Adds one (row identity, row digest) pair; order does not matter. */
  add(identity: Uint8Array, digest: Uint8Array): this {
    const at = this.#entries.length;
    checkEntry(identity, digest, at);
    this.#entries.push({ identity: Uint8Array.from(identity), digest: Uint8Array.from(digest), at });
    return this;
  }

  get size(): number {
    return this.#entries.length;
  }

  finish(): Uint8Array {
    const sorted = [...this.#entries].sort((a, b) => compareBytes(a.identity, b.identity));
    for (let k = 1; k < sorted.length; k++) {
      const prev = sorted[k - 1];
      const cur = sorted[k];
      if (prev !== undefined && cur !== undefined && compareBytes(prev.identity, cur.identity) === 0) {
        throw new CodecError('duplicate_identity', `/entries/${cur.at}`, 'the same row identity appears twice in the scope');
      }
    }
    const out = new SortedScopeDigest(this.#schemaHash, this.#scopeId, sorted.length);
    for (const e of sorted) out.add(e.identity, e.digest);
    return out.finish();
  }
}

/** One-call form for a complete set of entries. */
export function scopeDigest(schemaHash: Uint8Array, scopeId: string, entries: Iterable<{ identity: Uint8Array; digest: Uint8Array }>): Uint8Array {
  const b = new ScopeDigestBuilder(schemaHash, scopeId);
  for (const e of entries) b.add(e.identity, e.digest);
  return b.finish();
}
