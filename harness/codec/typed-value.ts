/**
 * Canonical typed value octets: tag || presence || payload.
 */
import { ByteWriter } from './byte-writer.ts';
import { CodecError } from './errors.ts';
import { type PortableType, TYPE_TAGS } from './portable-types.ts';
import { isWellFormedText } from './unicode.ts';
import {
  type ColumnSpec,
  checkBytesText,
  checkColumnSpec,
  type PortableValue,
  readBoolean,
  readDate,
  readDatetime,
  readDecimal,
  readFloat,
  readInt,
  readInt64,
  readJson,
  readPortable,
  readString,
  readTime,
  shortInt64,
} from './wire-values.ts';

export const PRESENCE_NULL = 0x00;
export const PRESENCE_VALUE = 0x01;

/** UTF-8 text as a blob; a lone surrogate has no UTF-8 form and is refused, as bytes.ts `text` does. */
function writeText(w: ByteWriter, s: string): void {
  if (!isWellFormedText(s)) throw new CodecError('invalid_string', '', 'text contains a lone surrogate');
  w.utf8Blob(s);
}

function writePayload(w: ByteWriter, v: PortableValue): void {
  switch (v.type) {
    case 'string':
      writeText(w, v.value ?? '');
      return;
    case 'int':
      w.i32(v.value ?? 0);
      return;
    case 'int64':
      w.i64(v.value ?? 0n);
      return;
    case 'float':
      // -0 and +0 are one value on the wire; only the +0 bit pattern is canonical.
      w.f64(v.value === 0 ? 0 : (v.value ?? 0));
      return;
    case 'boolean':
      w.u8(v.value ? 1 : 0);
      return;
    case 'decimal':
    case 'datetime':
    case 'date':
    case 'time':
      w.latin1Blob(v.value ?? '');
      return;
    case 'json':
      writeText(w, v.value ?? '');
      return;
    case 'bytes':
      w.blob(v.value ?? new Uint8Array());
      return;
  }
}

/** Appends an already validated value's octets to a writer. */
export function writeTypedValue(w: ByteWriter, v: PortableValue): void {
  w.u8(TYPE_TAGS[v.type]);
  if (v.value === null) {
    w.u8(PRESENCE_NULL);
    return;
  }
  w.u8(PRESENCE_VALUE);
  writePayload(w, v);
}

/**
 * Validates one wire value of a column and appends its typed octets: the
 * same octets and the same refusals as writeTypedValue(w, readPortable(spec,
 * v, path)), without building the intermediate value. `specChecked` says the
 * spec is known to pass checkColumnSpec (a table shape's specs are checked
 * once).
 */
export function writeWireValue(w: ByteWriter, spec: ColumnSpec, v: unknown, path: string, specChecked: boolean): void {
  if (!specChecked) checkColumnSpec(spec, path);
  w.u8(TYPE_TAGS[spec.type]);
  writeWireValueAfterTag(w, spec, v, path);
}

/**
 * writeWireValue after its type tag: validates the value, then appends its
 * presence octet and payload. A row body writes each field's tag together
 * with the field's name (both fixed per table), then this. Octets already
 * written when a value is refused are of no use to anyone (the writer is
 * scratch), so only the refusal itself, and its order, matter.
 */
export function writeWireValueAfterTag(w: ByteWriter, spec: ColumnSpec, v: unknown, path: string): void {
  WIRE_VALUE_WRITERS[spec.type](w, spec, v, path);
}

/** Writes one column's presence octet and payload after its tag (see writeWireValueAfterTag). */
export type WireValueWriter = (w: ByteWriter, spec: ColumnSpec, v: unknown, path: string) => void;

function writeNull(w: ByteWriter, spec: ColumnSpec, path: string): void {
  if (spec.nullable === false) throw new CodecError('null_not_allowed', path, `null is not allowed for this ${spec.type} field`);
  w.u8(PRESENCE_NULL);
}

/** The writer of a type whose canonical text is ASCII (decimal and the time types): presence, then the text read by `read`. */
function latin1TextWriter(read: (v: unknown, spec: ColumnSpec, path: string) => string): WireValueWriter {
  return (w, spec, v, path) => {
    if (v === null) return writeNull(w, spec, path);
    const t = read(v, spec, path);
    w.u8(PRESENCE_VALUE);
    w.latin1Blob(t);
  };
}

/**
 * One writer per portable type, so that a table's row plan can pick each
 * field's writer once (row-plan.ts) and each call stays small and of one
 * type, instead of one function switching over all eleven for every value.
 */
export const WIRE_VALUE_WRITERS: Readonly<Record<PortableType, WireValueWriter>> = {
  string(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const s = readString(v, path);
    w.u8(PRESENCE_VALUE);
    // readString has refused lone surrogates, so the text has a UTF-8 form.
    w.utf8Blob(s);
  },
  int(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const n = readInt(v, path);
    w.u8(PRESENCE_VALUE);
    w.i32(n);
  },
  int64(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    // Most keys are short: those skip the BigInt. Anything else is read, or refused, before a byte is written, as always.
    const short = shortInt64(v);
    const long = short === undefined ? readInt64(v, path) : 0n;
    w.u8(PRESENCE_VALUE);
    if (short !== undefined) w.i64FromSafeInteger(short);
    else w.i64(long);
  },
  float(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const n = readFloat(v, path);
    w.u8(PRESENCE_VALUE);
    w.f64(n === 0 ? 0 : n);
  },
  boolean(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const b = readBoolean(v, path);
    w.u8(PRESENCE_VALUE);
    w.u8(b ? 1 : 0);
  },
  decimal: latin1TextWriter((v, spec, path) => readDecimal(v, spec, path)),
  datetime: latin1TextWriter((v, _spec, path) => readDatetime(v, path)),
  date: latin1TextWriter((v, _spec, path) => readDate(v, path)),
  time: latin1TextWriter((v, _spec, path) => readTime(v, path)),
  json(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const t = readJson(v, path);
    w.u8(PRESENCE_VALUE);
    // Accepted json text is I-JSON: its strings hold no lone surrogate, and outside strings it is ASCII.
    w.utf8Blob(t);
  },
  bytes(w, spec, v, path) {
    if (v === null) return writeNull(w, spec, path);
    const t = checkBytesText(v, path);
    w.u8(PRESENCE_VALUE);
    w.base64urlBlob(t);
  },
};

const scratch = new ByteWriter(256);

/** Encodes an already validated value. */
export function encodeTypedValue(v: PortableValue): Uint8Array {
  scratch.reset();
  writeTypedValue(scratch, v);
  return scratch.copy();
}

/** Validates a wire value against its column and returns its canonical typed octets. */
export function typedValueFromWire(spec: ColumnSpec, wire: unknown, path = ''): Uint8Array {
  return encodeTypedValue(readPortable(spec, wire, path));
}
