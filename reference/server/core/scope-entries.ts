/**
 * A scope's digest entries in the form the scope digest hashes them: for each row, in identity
 * order, the identity's length (8 octets, big-endian), the identity, and the row digest (32
 * octets). The database aggregates exactly these octets on the stored path (checksums.ts), so
 * the digest of a scope is SHA-256 over its header, the entry count (8 octets) and these octets.
 *
 * Keeping a version's entries lets the next version be built from the identities its links name
 * (decision 428). A version is held as a base (octets read from the database, never changed) and
 * an overlay of the entries changed since, in identity order; the digest feeds the hash the
 * base's unchanged runs and the overlay's entries in turn, so no version copies the base. On
 * this machine a fresh 1.5 MB buffer costs about 4 ms of page faults the first time it is
 * written, three times the hashing; once the overlay grows past OVERLAY_MAX entries the next
 * version is written out as a new base.
 */
import { createHash } from 'node:crypto';
import { blob, u64be } from '../../../harness/codec/index.ts';

const DIGEST_OCTETS = 32;
const LENGTH_OCTETS = 8;
/** Changed entries held beside a base before a version is written out whole. */
const OVERLAY_MAX = 256;

/** One identity whose entry changes: its new row digest, or null when the row left the scope. */
export interface EntryChange {
  identity: Buffer;
  digest: Buffer | null;
}

/** A changed entry, placed against the base: where it goes, and whether it takes a base entry's place. */
interface Overlaid {
  identity: Buffer;
  /** The entry's octets, or null when the identity left the scope. */
  entry: Buffer | null;
  /** The first base entry whose identity is not below this one. */
  index: number;
  /** Whether that base entry has this identity (and is replaced or dropped). */
  replaces: boolean;
}

/** Base octets with where each of their entries starts. */
interface Base {
  octets: Buffer;
  starts: Int32Array;
}

export class ScopeEntries {
  readonly #base: Base;
  /** In identity order, each identity once. */
  readonly #overlay: Overlaid[];
  readonly count: number;

  private constructor(base: Base, overlay: Overlaid[]) {
    this.#base = base;
    this.#overlay = overlay;
    let count = base.starts.length;
    for (const o of overlay) count += (o.entry === null ? 0 : 1) - (o.replaces ? 1 : 0);
    this.count = count;
  }

  /**
   * Entries from octets in the form above, or null when they are not in that form or their
   * identities are not strictly increasing (two tables sharing an identity, say): such a scope
   * is left to the computation from scratch.
   */
  static parse(octets: Buffer): ScopeEntries | null {
    const starts = entryStarts(octets);
    if (starts === null) return null;
    for (let k = 1; k < starts.length; k++) if (compareIdentities(octets, starts[k - 1] as number, octets, starts[k] as number) >= 0) return null;
    return new ScopeEntries({ octets, starts }, []);
  }

  /** Octets held: the base's (shared with other versions built on it) and the overlay's. */
  get octets(): number {
    return this.#base.octets.length + this.#overlay.reduce((n, o) => n + (o.entry?.length ?? 0), 0);
  }

  /** SHA-256 over the header, the entry count and the entries. */
  digest(header: Uint8Array): Buffer {
    const hash = createHash('sha256').update(header).update(u64be(this.count));
    this.#feed((piece) => hash.update(piece));
    return hash.digest();
  }

  /** The entries' octets as one buffer: what the database aggregates for the same rows. */
  contiguous(): Buffer {
    const pieces: Buffer[] = [];
    this.#feed((piece) => pieces.push(piece));
    return Buffer.concat(pieces);
  }

  /**
   * These entries with `changes` applied: an identity present is replaced or dropped, an
   * identity absent is added or (already absent) left out. Changes are taken in any order; an
   * identity named twice gives null, and so the computation from scratch.
   */
  withChanges(changes: EntryChange[]): ScopeEntries | null {
    const named = new Set<string>();
    const merged = new Map(this.#overlay.map((o) => [o.identity.toString('hex'), o]));
    for (const change of changes) {
      const key = change.identity.toString('hex');
      if (named.has(key)) return null;
      named.add(key);
      const index = lowerBound(this.#base, change.identity);
      const replaces = index < this.#base.starts.length && compareIdentityTo(this.#base.octets, this.#base.starts[index] as number, change.identity) === 0;
      merged.set(key, { identity: change.identity, entry: change.digest === null ? null : entry(change.identity, change.digest), index, replaces });
    }
    // A removal of an identity the base lacks changes nothing.
    const overlay = [...merged.values()].filter((o) => o.entry !== null || o.replaces).sort((a, b) => Buffer.compare(a.identity, b.identity));
    const next = new ScopeEntries(this.#base, overlay);
    if (overlay.length <= OVERLAY_MAX) return next;
    const octets = next.contiguous();
    const starts = entryStarts(octets);
    return starts === null ? null : new ScopeEntries({ octets, starts }, []);
  }

  /** Hands out the entries' octets in order: the base's unchanged runs and the overlay's entries. */
  #feed(take: (piece: Buffer) => void): void {
    const { octets, starts } = this.#base;
    const startOf = (index: number) => (index < starts.length ? (starts[index] as number) : octets.length);
    let from = 0;
    for (const o of this.#overlay) {
      const at = startOf(o.index);
      if (at > from) take(octets.subarray(from, at));
      if (o.entry !== null) take(o.entry);
      from = o.replaces ? startOf(o.index + 1) : at;
    }
    if (from < octets.length) take(octets.subarray(from));
  }
}

/** The first base entry whose identity is not below `identity`. */
function lowerBound(base: Base, identity: Buffer): number {
  let lo = 0;
  let hi = base.starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareIdentityTo(base.octets, base.starts[mid] as number, identity) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One entry: the identity as a blob (8-octet length, then the octets) and the row digest, as the codec's scope digest streams it. */
function entry(identity: Buffer, digest: Buffer): Buffer {
  if (digest.length !== DIGEST_OCTETS) throw new Error('a row digest is 32 octets');
  return Buffer.concat([blob(identity), digest]);
}

/** The identity length of the entry at `start`: an 8-octet big-endian length, whose high half is zero for any real identity. */
function identityLength(body: Buffer, start: number): number {
  const b = (k: number) => body[start + k] as number;
  if ((b(0) | b(1) | b(2) | b(3)) !== 0) return Number.POSITIVE_INFINITY;
  return ((b(4) << 24) | (b(5) << 16) | (b(6) << 8) | b(7)) >>> 0;
}

/** Where each entry starts, or null when the octets do not divide into whole entries. */
function entryStarts(body: Buffer): Int32Array | null {
  // No entry is shorter than its length and digest: enough room for every start.
  const starts = new Int32Array(Math.floor(body.length / (LENGTH_OCTETS + DIGEST_OCTETS)));
  let count = 0;
  let at = 0;
  while (at < body.length) {
    if (at + LENGTH_OCTETS > body.length) return null;
    const next = at + LENGTH_OCTETS + identityLength(body, at) + DIGEST_OCTETS;
    if (next > body.length) return null;
    starts[count++] = at;
    at = next;
  }
  return starts.slice(0, count);
}

/** Bytewise comparison of two entries' identities (shorter first on a common prefix), as bytea orders them. */
function compareIdentities(a: Buffer, aStart: number, b: Buffer, bStart: number): number {
  const aFrom = aStart + LENGTH_OCTETS;
  const bFrom = bStart + LENGTH_OCTETS;
  return a.compare(b, bFrom, bFrom + identityLength(b, bStart), aFrom, aFrom + identityLength(a, aStart));
}

function compareIdentityTo(body: Buffer, start: number, identity: Buffer): number {
  const from = start + LENGTH_OCTETS;
  return body.compare(identity, 0, identity.length, from, from + identityLength(body, start));
}
