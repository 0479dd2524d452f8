/**
 * Edits the proxy applies to one row-bearing message before the client sees
 * it, described in the words the features use ("setting "title" to
 * "dishonest"", "removing the member "note"", ...). Each edit changes exactly
 * one thing; the checksum is then kept as the server sent it, recomputed the
 * way a lenient decoder would read the edited row (so the malformation is the
 * only defect), or edited itself.
 */
import { canonicalJson, digestRow, readTableShape, toHex } from '../../../harness/codec/index.ts';
import { jsonLiteral, RawJson, serializeJson } from '../../../harness/proxy/rewrite.ts';
import { type Manifest, type ManifestTable, plainKey } from './oracle.ts';

export type Obj = Record<string, unknown>;

/** A row-bearing message being edited, with what it needs to resolve names. */
export interface Target {
  message: Obj;
  /** Member holding the row: `row` for changes and records, `server_row` for outcomes. */
  rowMember: 'row' | 'server_row';
  table: ManifestTable;
  /** Tables of the manifest, to resolve a table name to its ID. */
  manifest: Manifest;
  /** Other messages of the same body, for exchanges with another row's members. */
  siblings: Obj[];
  /** Versions the client already holds, by row key, for "the version client X holds". */
  heldVersions: ReadonlyMap<string, string>;
  /** Last digest the server sent and the client verified, by row key. */
  verifiedDigests: ReadonlyMap<string, Obj>;
}

const MESSAGE_MEMBERS = new Set(['server_version', 'table', 'op', 'scope', 'pk', 'row_checksum', 'row', 'server_row']);

function fieldId(table: ManifestTable, column: string): string {
  const field = table.fields.find((f) => f.name === column || f.field_id === column);
  if (field === undefined) throw new Error(`table ${table.name} has no field "${column}"`);
  return field.field_id;
}

function rowOf(t: Target): Obj {
  const row = t.message[t.rowMember];
  if (typeof row !== 'object' || row === null) throw new Error('the message carries no row to edit');
  return row as Obj;
}

function keyOf(message: Obj): string {
  return String(plainKey(message.pk));
}

/** Applies one described edit in place. Throws on a description it does not know. */
export function applyEdit(t: Target, description: string): void {
  const d = description.trim();
  let m: RegExpExecArray | null;
  m = /^setting the pk and the row's "([^"]+)" to (.+)$/.exec(d);
  if (m) {
    const value = jsonLiteral(m[2] as string);
    t.message.pk = { [t.table.primary_key_field_id]: value };
    rowOf(t)[fieldId(t.table, m[1] as string)] = value;
    return;
  }
  m = /^setting the pk to (\{.*\})$/.exec(d);
  if (m) {
    const given = JSON.parse(m[1] as string) as Obj;
    t.message.pk = Object.fromEntries(Object.entries(given).map(([name, value]) => [fieldId(t.table, name), value]));
    return;
  }
  m = /^setting "server_version" to the version client "[^"]+" holds for it$/.exec(d);
  if (m) {
    const held = t.heldVersions.get(keyOf(t.message));
    if (held === undefined) throw new Error(`the client holds no version of row ${keyOf(t.message)} yet`);
    t.message.server_version = held;
    return;
  }
  m = /^setting the "row_checksum" member "([^"]+)" to (.+)$/.exec(d);
  if (m) {
    (t.message.row_checksum as Obj)[m[1] as string] = jsonLiteral(m[2] as string);
    return;
  }
  if (/^setting the "row_checksum" digest to upper case$/.test(d)) {
    const checksum = t.message.row_checksum as Obj;
    checksum.digest = String(checksum.digest).toUpperCase();
    return;
  }
  if (/^flipping one hex digit of its "row_checksum" digest$/.test(d)) {
    flipDigest(t.message.row_checksum as Obj);
    return;
  }
  m = /^exchanging its "row_checksum" with the one of row "([^"]+)"$/.exec(d);
  if (m) {
    const other = t.siblings.find((s) => s !== t.message && keyOf(s) === m?.[1]);
    if (other === undefined) throw new Error(`row ${m[1]} is not in the same response`);
    [t.message.row_checksum, other.row_checksum] = [other.row_checksum, t.message.row_checksum];
    return;
  }
  m = /^adding a "row_checksum" copied from the last verified digest of row "([^"]+)"$/.exec(d);
  if (m) {
    const verified = t.verifiedDigests.get(m[1] as string);
    if (verified === undefined) throw new Error(`no digest of row ${m[1]} was verified before`);
    t.message.row_checksum = { ...verified };
    return;
  }
  m = /^removing the members "row" and "row_checksum" while keeping "op" as "([^"]+)"$/.exec(d);
  if (m) {
    delete t.message.row;
    delete t.message.row_checksum;
    t.message.op = m[1];
    return;
  }
  m = /^removing the member "([^"]+)"$/.exec(d);
  if (m) {
    const name = m[1] as string;
    if (MESSAGE_MEMBERS.has(name)) delete t.message[name];
    else delete rowOf(t)[fieldId(t.table, name)];
    return;
  }
  m = /^adding the member "([^"]+)" with value (.+)$/.exec(d);
  if (m) {
    rowOf(t)[m[1] as string] = jsonLiteral(m[2] as string);
    return;
  }
  m = /^writing the member "([^"]+)" twice$/.exec(d);
  if (m) {
    const id = fieldId(t.table, m[1] as string);
    const row = rowOf(t);
    // The same member twice, the second time with another value: a lenient reader keeps the last one.
    const members = Object.entries(row).map(([k, v]) => `${JSON.stringify(k)}:${serializeJson(v)}`);
    members.push(`${JSON.stringify(id)}:${JSON.stringify('written twice')}`);
    t.message[t.rowMember] = new RawJson(`{${members.join(',')}}`);
    return;
  }
  m = /^setting "([^"]+)" to (.+)$/.exec(d);
  if (m) {
    const name = m[1] as string;
    const value = jsonLiteral(m[2] as string);
    if (name === 'table') {
      const table = t.manifest.tables.find((x) => x.name === value || x.table_id === value);
      if (table === undefined) throw new Error(`no table "${String(value)}" in the manifest`);
      t.message.table = table.table_id;
    } else if (MESSAGE_MEMBERS.has(name)) t.message[name] = value;
    else rowOf(t)[fieldId(t.table, name)] = value;
    return;
  }
  throw new Error(`unknown edit "${description}"`);
}

export function flipDigest(checksum: Obj): void {
  const digest = String(checksum.digest);
  const first = digest[0] ?? '0';
  checksum.digest = (first === '0' ? '1' : '0') + digest.slice(1);
}

/** What a lenient decoder would make of one wire value: coerced to the field's type, canonicalized. */
function lenientValue(type: string, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  const v = value instanceof RawJson ? JSON.parse(value.text) : value;
  switch (type) {
    case 'int':
    case 'float':
      return Number(v);
    case 'int64':
      return BigInt(typeof v === 'number' ? Math.trunc(v) : String(v)).toString();
    case 'boolean':
      return v === true || v === 1 || v === 'true';
    case 'decimal': {
      let text = String(v);
      if (text.includes('.')) text = text.replace(/0+$/, '').replace(/\.$/, '');
      return /^-?0$/.test(text) ? '0' : text;
    }
    case 'json':
      return canonicalJson(typeof v === 'string' ? JSON.parse(v) : v);
    case 'bytes':
      return Buffer.from(String(v), 'base64').toString('base64url');
    default:
      return String(v);
  }
}

/**
 * Recomputes the row checksum over the edited row as a lenient decoder reads
 * it: unknown members ignored, a missing one read as null, a repeated one as
 * its last value, each value coerced to its type. The digest is the one such
 * a decoder would verify, so only the malformation remains for a strict one.
 */
export function recomputeLeniently(t: Target, schemaHash: string): void {
  const raw = t.message[t.rowMember];
  const row = (raw instanceof RawJson ? JSON.parse(raw.text) : raw) as Obj;
  const lenient: Obj = {};
  for (const f of t.table.fields) lenient[f.field_id] = lenientValue(f.type, row[f.field_id]);
  const { digest } = digestRow({ schemaHash, table: readTableShape(t.table), row: lenient, serverVersion: String(t.message.server_version) });
  (t.message.row_checksum as Obj).digest = toHex(digest);
}
