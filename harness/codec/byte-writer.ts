/**
 * A growable octet buffer for the canonical grammar, so that a row's identity,
 * body and digest preimage are written in place instead of being assembled
 * from many small buffers. It writes the same octets as the primitives in
 * bytes.ts (big-endian numbers, u64be lengths before blobs); callers validate
 * values first, this class only lays them out.
 */
/** Strings up to this many UTF-16 units are tried as ASCII first. */
const SHORT_TEXT = 64;
/** Octet arrays up to this long are copied in a loop. */
const SHORT_COPY = 48;

/** The 6-bit value of the base64url character at s[k] (the caller has checked the alphabet). */
function sextet(s: string, k: number): number {
  const c = s.charCodeAt(k);
  if (c >= 0x61) return c - 0x61 + 26;
  if (c >= 0x41) return c === 0x5f ? 63 : c - 0x41;
  return c >= 0x30 ? c - 0x30 + 52 : 62;
}

export class ByteWriter {
  #buf: Buffer;
  /** The same octets as #buf, for number writes without Buffer's argument checks. */
  #data: DataView;
  /** Octets written so far. */
  length = 0;

  constructor(initialCapacity = 1024) {
    // Its own memory (never a slice of Buffer's shared pool), so the view below covers exactly this buffer.
    this.#buf = Buffer.allocUnsafeSlow(initialCapacity);
    this.#data = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.byteLength);
  }

  reset(): void {
    this.length = 0;
  }

  #room(n: number): void {
    const need = this.length + n;
    if (need <= this.#buf.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(need, this.#buf.length * 2));
    this.#buf.copy(grown, 0, 0, this.length);
    this.#buf = grown;
    this.#data = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  u8(x: number): void {
    this.#room(1);
    this.#buf[this.length++] = x & 0xff;
  }

  u32(x: number): void {
    this.#room(4);
    this.#data.setUint32(this.length, x);
    this.length += 4;
  }

  /** A u64be count; counts here are buffer lengths, so always safe integers. */
  u64(n: number): void {
    this.#room(8);
    this.#putU64(this.length, n);
    this.length += 8;
  }

  #putU64(at: number, n: number): void {
    this.#data.setUint32(at, Math.floor(n / 0x100000000));
    this.#data.setUint32(at + 4, n >>> 0);
  }

  i32(x: number): void {
    this.#room(4);
    this.#data.setInt32(this.length, x);
    this.length += 4;
  }

  i64(x: bigint): void {
    this.#room(8);
    this.#data.setBigInt64(this.length, x);
    this.length += 8;
  }

  /** The same octets as i64(BigInt(x)) for a safe integer x, without making the BigInt. */
  i64FromSafeInteger(x: number): void {
    this.#room(8);
    // Exact for |x| < 2^53: the high word is floor(x / 2^32) (negative for x < 0), the low word x mod 2^32.
    this.#data.setInt32(this.length, Math.floor(x / 0x100000000));
    this.#data.setUint32(this.length + 4, x >>> 0);
    this.length += 8;
  }

  f64(x: number): void {
    this.#room(8);
    this.#data.setFloat64(this.length, x);
    this.length += 8;
  }

  bytes(b: Uint8Array): void {
    this.#room(b.length);
    if (b.length <= SHORT_COPY) {
      // A field header or a hash: a loop costs less than the call into TypedArray.prototype.set.
      const buf = this.#buf;
      const at = this.length;
      for (let k = 0; k < b.length; k++) buf[at + k] = b[k] as number;
    } else {
      this.#buf.set(b, this.length);
    }
    this.length += b.length;
  }

  /** u64be(length) || octets. */
  blob(b: Uint8Array): void {
    this.u64(b.length);
    this.bytes(b);
  }

  /** A blob of the string's UTF-8 (the caller has refused lone surrogates). */
  utf8Blob(s: string): void {
    this.#room(8 + s.length * 3);
    const start = this.length + 8;
    // Short text is encoded in a loop: cheaper than a call into the encoder. Long text, or a lone surrogate, goes to the encoder.
    const short = s.length <= SHORT_TEXT ? this.#putUtf8(s, start) : -1;
    const n = short >= 0 ? short : this.#buf.write(s, start, 'utf8');
    this.#putU64(this.length, n);
    this.length += 8 + n;
  }

  /**
   * Writes the UTF-8 of s at `at` and returns its length, the octets
   * Buffer.write(s, 'utf8') writes; -1 (with garbage written) at a lone
   * surrogate, which the encoder then handles as it always has.
   */
  #putUtf8(s: string, at: number): number {
    const buf = this.#buf;
    let o = at;
    for (let k = 0; k < s.length; k++) {
      const c = s.charCodeAt(k);
      if (c < 0x80) {
        buf[o++] = c;
      } else if (c < 0x800) {
        buf[o++] = 0xc0 | (c >> 6);
        buf[o++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        buf[o++] = 0xe0 | (c >> 12);
        buf[o++] = 0x80 | ((c >> 6) & 0x3f);
        buf[o++] = 0x80 | (c & 0x3f);
      } else {
        const low = c <= 0xdbff ? s.charCodeAt(k + 1) : Number.NaN;
        if (!(low >= 0xdc00 && low <= 0xdfff)) return -1;
        const cp = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
        buf[o++] = 0xf0 | (cp >> 18);
        buf[o++] = 0x80 | ((cp >> 12) & 0x3f);
        buf[o++] = 0x80 | ((cp >> 6) & 0x3f);
        buf[o++] = 0x80 | (cp & 0x3f);
        k++;
      }
    }
    return o - at;
  }

  /** A blob of one octet per UTF-16 unit, as Buffer.from(s, 'ascii') encodes it. */
  latin1Blob(s: string): void {
    this.#room(8 + s.length);
    const start = this.length + 8;
    const n = s.length <= SHORT_TEXT && this.#putAscii(s, start) ? s.length : this.#buf.write(s, start, 'latin1');
    this.#putU64(this.length, n);
    this.length += 8 + n;
  }

  /** Writes s at `at` when every unit is ASCII (where UTF-8 and Latin-1 agree); false (with garbage written) otherwise. */
  #putAscii(s: string, at: number): boolean {
    const buf = this.#buf;
    for (let k = 0; k < s.length; k++) {
      const c = s.charCodeAt(k);
      if (c >= 0x80) return false;
      buf[at + k] = c;
    }
    return true;
  }

  /** A blob of the octets that base64url text spells (the caller has checked it is canonical unpadded base64url). */
  base64urlBlob(v: string): void {
    this.#room(8 + Math.ceil((v.length * 3) / 4));
    // Short text is decoded in a loop: cheaper than a call into the decoder.
    const n = v.length <= SHORT_TEXT ? this.#putBase64url(v, this.length + 8) : this.#buf.write(v, this.length + 8, 'base64url');
    this.#putU64(this.length, n);
    this.length += 8 + n;
  }

  /**
   * Decodes canonical unpadded base64url at `at` and returns the octet count:
   * each four characters give three octets, a final two or three give one or
   * two (their unused low bits are zero in canonical text).
   */
  #putBase64url(v: string, at: number): number {
    const buf = this.#buf;
    let o = at;
    let k = 0;
    for (; k + 4 <= v.length; k += 4) {
      const x = (sextet(v, k) << 18) | (sextet(v, k + 1) << 12) | (sextet(v, k + 2) << 6) | sextet(v, k + 3);
      buf[o++] = x >> 16;
      buf[o++] = (x >> 8) & 0xff;
      buf[o++] = x & 0xff;
    }
    const left = v.length - k;
    if (left >= 2) {
      const x = (sextet(v, k) << 18) | (sextet(v, k + 1) << 12) | (left === 3 ? sextet(v, k + 2) << 6 : 0);
      buf[o++] = x >> 16;
      if (left === 3) buf[o++] = (x >> 8) & 0xff;
    }
    return o - at;
  }

  /** Reserves `n` octets to be written later with the put methods; their content is undefined until then. */
  skip(n: number): void {
    this.#room(n);
    this.length += n;
  }

  /** Writes octets at `at`, inside what is already written or reserved. */
  putBytesAt(at: number, b: Uint8Array): void {
    this.#buf.set(b, at);
  }

  /** Copies written octets [start, end) to `target` within this writer (the ranges may overlap). */
  copyWithin(target: number, start: number, end: number): void {
    this.#buf.copyWithin(target, start, end);
  }

  /** Moves octets [from, length) by `delta` (either way), so that the writer ends `delta` octets later. */
  shiftTail(from: number, delta: number): void {
    if (delta > 0) this.#room(delta);
    this.#buf.copyWithin(from + delta, from, this.length);
    this.length += delta;
  }

  /** Overwrites a u64be count written earlier at `at` (a placeholder reserved with u64(0)). */
  patchU64(at: number, n: number): void {
    this.#putU64(at, n);
  }

  /** Appends octets [start, end) another writer has written, without making a view of them first. */
  append(from: ByteWriter, start = 0, end = from.length): void {
    this.#room(end - start);
    from.#buf.copy(this.#buf, this.length, start, end);
    this.length += end - start;
  }

  /** Copies octets [start, end) written here into `target` at `at`. */
  copyTo(target: Uint8Array, at: number, start = 0, end = this.length): void {
    this.#buf.copy(target, at, start, end);
  }

  /** Whether the octets written here equal octets [start, end) of another writer. */
  equalsRange(other: ByteWriter, start: number, end: number): boolean {
    return end - start === this.length && this.#buf.compare(other.#buf, start, end, 0, this.length) === 0;
  }

  /** A view of written octets; valid until the next write or reset. */
  view(start = 0, end = this.length): Buffer {
    return this.#buf.subarray(start, end);
  }

  /** A plain Uint8Array view of written octets (cheaper to make than a Buffer view); valid until the next write or reset. */
  octets(start = 0, end = this.length): Uint8Array {
    return new Uint8Array(this.#buf.buffer, this.#buf.byteOffset + start, end - start);
  }

  /** A copy of written octets that the caller owns. */
  copy(start = 0, end = this.length): Buffer {
    return Buffer.copyBytesFrom(this.#buf, start, end - start);
  }
}
