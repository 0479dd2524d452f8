/**
 * Row identity: ROW_ID_DOMAIN || text(table_id) || text(pk_field_id) || typed_value(pk).
 * Also a structural reader, so a receiver can refuse truncated, padded or
 * otherwise malformed identity octets before they enter a scope digest.
 */
import { domain, text } from './bytes.ts';
import { CodecError } from './errors.ts';
import { isKeyType, type KeyType, typeOfTag } from './portable-types.ts';
import { encodeTypedValue, PRESENCE_VALUE } from './typed-value.ts';
import { decodeUtf8 } from './unicode.ts';
import { type PortableValue, readKeyValue } from './wire-values.ts';

export const ROW_ID_DOMAIN = domain('synchro:v3:row-identity:v1');

export function encodeRowIdentity(tableId: string, pkFieldId: string, pk: PortableValue, path = ''): Uint8Array {
  if (tableId.length === 0 || pkFieldId.length === 0) throw new CodecError('invalid_identifier', path, 'table and key field IDs are nonempty');
  if (!isKeyType(pk.type)) throw new CodecError('invalid_pk_type', path, `a key must be string, int or int64, not ${pk.type}`);
  if (pk.value === null) throw new CodecError('null_not_allowed', path, 'a key value is never null');
  return Buffer.concat([ROW_ID_DOMAIN, text(tableId, path), text(pkFieldId, path), encodeTypedValue(pk)]);
}

/** Validates a wire key value of the given type and encodes the identity. */
export function rowIdentityFromWire(tableId: string, pkFieldId: string, pkType: KeyType, pkWire: unknown, path = ''): Uint8Array {
  const pk = readKeyValue(pkType, pkWire, path);
  return encodeRowIdentity(tableId, pkFieldId, pk, path);
}

export interface DecodedRowIdentity {
  tableId: string;
  pkFieldId: string;
  pkType: KeyType;
  pk: string | number | bigint;
}

/** Parses identity octets, requiring every octet to be accounted for. */
export function decodeRowIdentity(bytes: Uint8Array, path = ''): DecodedRowIdentity {
  const bad = (why: string): never => {
    throw new CodecError('invalid_row_identity', path, why);
  };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < ROW_ID_DOMAIN.length || Buffer.compare(buf.subarray(0, ROW_ID_DOMAIN.length), ROW_ID_DOMAIN) !== 0) {
    bad('identity does not start with the row-identity domain');
  }
  let at = ROW_ID_DOMAIN.length;
  const readText = (what: string): string => {
    if (at + 8 > buf.length) bad(`truncated length of ${what}`);
    const len = buf.readBigUInt64BE(at);
    at += 8;
    if (len === 0n) bad(`${what} is empty`);
    if (BigInt(at) + len > BigInt(buf.length)) bad(`truncated ${what}`);
    const end = at + Number(len);
    const s = decodeUtf8(buf.subarray(at, end)) ?? bad(`${what} is not valid UTF-8`);
    at = end;
    return s;
  };
  const tableId = readText('table ID');
  const pkFieldId = readText('key field ID');
  if (at + 2 > buf.length) bad('truncated key value');
  const type = typeOfTag(buf[at] ?? -1);
  if (type === undefined || !isKeyType(type)) bad(`tag 0x${(buf[at] ?? 0).toString(16)} is not a key type`);
  const pkType = type as KeyType;
  if (buf[at + 1] !== PRESENCE_VALUE) bad('key presence must be 0x01');
  at += 2;
  let pk: string | number | bigint = 0;
  if (pkType === 'int') {
    if (at + 4 > buf.length) bad('truncated int key');
    pk = buf.readInt32BE(at);
    at += 4;
  } else if (pkType === 'int64') {
    if (at + 8 > buf.length) bad('truncated int64 key');
    pk = buf.readBigInt64BE(at);
    at += 8;
  } else {
    if (at + 8 > buf.length) bad('truncated string key length');
    const len = buf.readBigUInt64BE(at);
    at += 8;
    if (BigInt(at) + len > BigInt(buf.length)) bad('truncated string key');
    const end = at + Number(len);
    pk = decodeUtf8(buf.subarray(at, end)) ?? bad('string key is not valid UTF-8');
    at = end;
  }
  if (at !== buf.length) bad(`${buf.length - at} trailing octets after the key value`);
  return { tableId, pkFieldId, pkType, pk };
}

/**
 * The identity octets up to the key value (domain, table ID, key field ID,
 * tag) of the last identity checkRowIdentity read in full, and its key type.
 * A scope's identities mostly share it, so only their key parts need reading.
 */
let knownHead: Uint8Array | undefined;
let knownHeadType: KeyType = 'int';

function startsWithKnownHead(bytes: Uint8Array, head: Uint8Array): boolean {
  if (bytes.length <= head.length) return false;
  for (let k = 0; k < head.length; k++) if (bytes[k] !== head[k]) return false;
  return true;
}

function isAscii(bytes: Uint8Array, from: number): boolean {
  for (let k = from; k < bytes.length; k++) if ((bytes[k] as number) >= 0x80) return false;
  return true;
}

/** Whether the octets after a known head are one well-formed key value of its type and nothing more. */
function keyPartIsWellFormed(bytes: Uint8Array, at: number, type: KeyType): boolean {
  if (bytes[at] !== PRESENCE_VALUE) return false;
  const value = at + 1;
  if (type === 'int') return bytes.length === value + 4;
  if (type === 'int64') return bytes.length === value + 8;
  if (bytes.length < value + 8) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(value) * 0x100000000 + view.getUint32(value + 4);
  if (bytes.length !== value + 8 + len) return false;
  return isAscii(bytes, value + 8) || decodeUtf8(bytes.subarray(value + 8)) !== undefined;
}

/**
 * Refuses malformed identity octets exactly as decodeRowIdentity does, without
 * decoding the parts already seen in the previous identity read in full.
 * Anything that does not fit the known head is read in full (and reported by
 * decodeRowIdentity when malformed).
 */
export function checkRowIdentity(bytes: Uint8Array, path = ''): void {
  const head = knownHead;
  if (head !== undefined && startsWithKnownHead(bytes, head) && keyPartIsWellFormed(bytes, head.length, knownHeadType)) return;
  const decoded = decodeRowIdentity(bytes, path);
  const headLength = ROW_ID_DOMAIN.length + 8 + Buffer.byteLength(decoded.tableId, 'utf8') + 8 + Buffer.byteLength(decoded.pkFieldId, 'utf8') + 1;
  knownHead = Uint8Array.prototype.slice.call(bytes, 0, headLength);
  knownHeadType = decoded.pkType;
}
