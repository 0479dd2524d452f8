/**
 * Small readers for the JSON shapes that protocol objects are built from:
 * exact member sets, envelope integers, SchemaRefs. Values may come from the
 * strict reader (numbers as RawNumber, spelling kept) or be plain JS values
 * (numbers already binary64, so only their value can be judged).
 */
import { CodecError, type CodecErrorCode, pointer } from './errors.ts';
import { isJsonObject, RawNumber } from './strict-json.ts';

export type Obj = Record<string, unknown>;

export function readObject(v: unknown, code: CodecErrorCode, path: string, what: string): Obj {
  if (!isJsonObject(v)) throw new CodecError(code, path, `${what} must be a JSON object`);
  return v as Obj;
}

/** Refuses a missing required member and any member that is neither required nor optional. */
export function exactMembers(o: Obj, required: readonly string[], optional: readonly string[], code: CodecErrorCode, path: string, what: string): void {
  for (const key of Object.keys(o)) {
    if (!required.includes(key) && !optional.includes(key)) throw new CodecError(code, pointer(path, key), `${what} has no member ${JSON.stringify(key)}`);
  }
  for (const key of required) {
    if (!Object.hasOwn(o, key)) throw new CodecError(code, pointer(path, key), `${what} lacks its required member ${key}`);
  }
}

const INTEGER_TOKEN = /^(?:0|-?[1-9][0-9]*)$/;

/**
 * An envelope integer: a JSON integer token (no fraction, exponent or `-0`)
 * between `minimum` and 2^53-1. Returns its canonical base-10 text.
 */
export function readEnvelopeInteger(v: unknown, minimum: number, code: CodecErrorCode, path: string, what: string): string {
  let text: string | undefined;
  if (v instanceof RawNumber) text = INTEGER_TOKEN.test(v.raw) ? v.raw : undefined;
  else if (typeof v === 'number' && Number.isInteger(v) && !Object.is(v, -0)) text = String(v);
  const n = text === undefined ? Number.NaN : Number(text);
  if (text === undefined || !Number.isSafeInteger(n) || n < minimum) {
    const shown = v instanceof RawNumber ? v.raw : JSON.stringify(v) ?? String(v);
    throw new CodecError(code, path, `${what} must be an integer token from ${minimum} to 9007199254740991, got ${shown}`);
  }
  return text;
}

const HASH_HEX = /^[0-9a-f]{64}$/;

/** SchemaRef `{version: 1..2^53-1, hash: 64 lowercase hex}`, exactly; returns `[version text, hash]`. */
export function readSchemaRef(v: unknown, code: CodecErrorCode, path: string): [string, string] {
  const ref = readObject(v, code, path, 'a schema reference');
  exactMembers(ref, ['version', 'hash'], [], code, path, 'a schema reference');
  const version = readEnvelopeInteger(ref.version, 1, code, pointer(path, 'version'), 'a schema version');
  if (typeof ref.hash !== 'string' || !HASH_HEX.test(ref.hash)) {
    throw new CodecError('invalid_schema_hash', pointer(path, 'hash'), 'schema hash must be 64 lowercase hex characters');
  }
  return [version, ref.hash];
}
