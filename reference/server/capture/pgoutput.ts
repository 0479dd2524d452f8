/**
 * Decoder for the binary pgoutput protocol (version 1, with messages), one
 * replication message at a time, as returned by
 * pg_logical_slot_peek_binary_changes. Only what capture needs: begin,
 * relation, insert, update, delete, truncate, logical message, commit.
 * Anything else is a decode failure, never skipped silently.
 */

/** One column of a tuple: null, an unchanged TOASTed value, or its text form. */
export type Cell = { kind: 'null' } | { kind: 'unchanged' } | { kind: 'text'; text: string };

export interface RelationColumn {
  name: string;
  typeOid: number;
  isKey: boolean;
}

export type PgOutputMessage =
  | { tag: 'begin'; finalLsn: bigint; xid: number }
  | { tag: 'commit'; commitLsn: bigint; endLsn: bigint }
  | { tag: 'relation'; oid: number; namespace: string; name: string; replicaIdentity: string; columns: RelationColumn[] }
  | { tag: 'insert'; oid: number; tuple: Cell[] }
  | { tag: 'update'; oid: number; tuple: Cell[] }
  | { tag: 'delete'; oid: number; key: Cell[] }
  | { tag: 'truncate'; oids: number[] }
  | { tag: 'message'; transactional: boolean; lsn: bigint; prefix: string; content: Buffer }
  | { tag: 'origin' }
  | { tag: 'type' };

export class DecodeError extends Error {}

class Reader {
  private offset = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  private need(n: number): void {
    if (this.offset + n > this.buf.length) throw new DecodeError('replication message ends early');
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.offset++);
  }
  i16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.offset);
    this.offset += 2;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.offset);
    if (end < 0) throw new DecodeError('unterminated string in replication message');
    const s = this.buf.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return s;
  }
  bytes(n: number): Buffer {
    if (n < 0) throw new DecodeError('negative length in replication message');
    this.need(n);
    const b = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return b;
  }
  done(): void {
    if (this.offset !== this.buf.length) throw new DecodeError('trailing bytes in replication message');
  }
}

function tuple(r: Reader): Cell[] {
  const n = r.i16();
  const cells: Cell[] = [];
  for (let i = 0; i < n; i++) {
    const kind = String.fromCharCode(r.u8());
    if (kind === 'n') cells.push({ kind: 'null' });
    else if (kind === 'u') cells.push({ kind: 'unchanged' });
    else if (kind === 't') cells.push({ kind: 'text', text: r.bytes(r.i32()).toString('utf8') });
    else throw new DecodeError('unknown tuple column kind');
  }
  return cells;
}

export function decodeMessage(buf: Buffer): PgOutputMessage {
  const r = new Reader(buf);
  const tag = String.fromCharCode(r.u8());
  let out: PgOutputMessage;
  switch (tag) {
    case 'B': {
      const finalLsn = r.u64();
      r.u64(); // commit timestamp
      out = { tag: 'begin', finalLsn, xid: r.u32() };
      break;
    }
    case 'C': {
      r.u8(); // flags (unused)
      const commitLsn = r.u64();
      const endLsn = r.u64();
      r.u64();
      out = { tag: 'commit', commitLsn, endLsn };
      break;
    }
    case 'R': {
      const oid = r.u32();
      const namespace = r.cstring();
      const name = r.cstring();
      const replicaIdentity = String.fromCharCode(r.u8());
      const n = r.i16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < n; i++) {
        const flags = r.u8();
        const colName = r.cstring();
        const typeOid = r.u32();
        r.i32(); // typmod
        columns.push({ name: colName, typeOid, isKey: (flags & 1) === 1 });
      }
      out = { tag: 'relation', oid, namespace, name, replicaIdentity, columns };
      break;
    }
    case 'I': {
      const oid = r.u32();
      if (String.fromCharCode(r.u8()) !== 'N') throw new DecodeError('insert without a new tuple');
      out = { tag: 'insert', oid, tuple: tuple(r) };
      break;
    }
    case 'U': {
      const oid = r.u32();
      let kind = String.fromCharCode(r.u8());
      if (kind === 'K' || kind === 'O') {
        tuple(r);
        kind = String.fromCharCode(r.u8());
      }
      if (kind !== 'N') throw new DecodeError('update without a new tuple');
      out = { tag: 'update', oid, tuple: tuple(r) };
      break;
    }
    case 'D': {
      const oid = r.u32();
      const kind = String.fromCharCode(r.u8());
      if (kind !== 'K' && kind !== 'O') throw new DecodeError('delete without a key tuple');
      out = { tag: 'delete', oid, key: tuple(r) };
      break;
    }
    case 'T': {
      const n = r.i32();
      r.u8(); // options
      const oids: number[] = [];
      for (let i = 0; i < n; i++) oids.push(r.u32());
      out = { tag: 'truncate', oids };
      break;
    }
    case 'M': {
      const transactional = r.u8() === 1;
      const lsn = r.u64();
      const prefix = r.cstring();
      out = { tag: 'message', transactional, lsn, prefix, content: Buffer.from(r.bytes(r.i32())) };
      break;
    }
    case 'O': {
      r.u64();
      r.cstring();
      out = { tag: 'origin' };
      break;
    }
    case 'Y': {
      r.u32();
      r.cstring();
      r.cstring();
      out = { tag: 'type' };
      break;
    }
    default:
      throw new DecodeError('unknown replication message type');
  }
  r.done();
  return out;
}
