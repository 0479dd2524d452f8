/**
 * The codec as oracle for integrity checks: every manifest the server showed
 * during the scenario (connect responses, GET /sync/schema) indexed by its
 * hash, every row-bearing message the proxy recorded, and the row and scope
 * digests the harness codec computes for them. Nothing here trusts a value
 * the implementation computed; it only reads what crossed the wire.
 */
import { checksumObject, compareBytes, digestRow, fromHex, isJsonObject, type JsonValue, parseJsonBytes, RawNumber, readChecksumObject, readTableShape, ScopeDigestBuilder, type TableShape, toHex } from '../../../harness/codec/index.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, deliveredOf, upstreamOf } from '../exchanges.ts';

export type Obj = Record<string, unknown>;

/** A manifest table as the wire carries it (only the members the checks read). */
export interface ManifestTable {
  table_id: string;
  name: string;
  primary_key_field_id: string;
  fields: { field_id: string; name: string; type: string; nullable?: boolean; precision?: number; scale?: number }[];
}

export interface Manifest {
  schema_version: number;
  schema_hash: string;
  tables: ManifestTable[];
}

/** Strict parse keeping number text (RawNumber), or undefined for a body that is not JSON. */
export function parseStrict(body: Uint8Array): JsonValue | undefined {
  try {
    return parseJsonBytes(body);
  } catch {
    return undefined;
  }
}

function asManifest(value: unknown): Manifest | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Obj;
  if (typeof m.schema_hash !== 'string' || !Array.isArray(m.tables)) return undefined;
  return m as unknown as Manifest;
}

/** Every manifest the server sent in this scenario, by schema hash. */
export function manifestsSeen(exchanges: readonly Exchange[]): Map<string, Manifest> {
  const out = new Map<string, Manifest>();
  for (const e of exchanges) {
    const answer = upstreamOf(e);
    if (answer === undefined || answer.status !== 200) continue;
    const body = bodyOf(answer.body) as Obj | undefined;
    if (body === undefined) continue;
    const candidate = e.endpoint === 'connect' ? asManifest(body.schema_definition) : e.endpoint === 'schema' ? asManifest(body.manifest) : undefined;
    if (candidate !== undefined) out.set(candidate.schema_hash, candidate);
  }
  return out;
}

export function tableById(manifest: Manifest, tableId: string): ManifestTable {
  const table = manifest.tables.find((t) => t.table_id === tableId);
  if (table === undefined) throw new Error(`manifest ${manifest.schema_hash} has no table ${tableId}`);
  return table;
}

export function tableByName(manifest: Manifest, name: string): ManifestTable {
  const table = manifest.tables.find((t) => t.name === name);
  if (table === undefined) throw new Error(`manifest ${manifest.schema_hash} has no table named ${name}`);
  return table;
}

export function fieldIdOf(table: ManifestTable, column: string): string {
  const field = table.fields.find((f) => f.name === column);
  if (field === undefined) throw new Error(`table ${table.name} has no field named ${column}`);
  return field.field_id;
}

export function shapeOf(manifest: Manifest, tableId: string): TableShape {
  return readTableShape(tableById(manifest, tableId));
}

/** A row-bearing message, whichever kind carries it. */
export interface RowMessage {
  kind: 'outcome' | 'change' | 'record';
  schemaHash: string;
  table: string;
  pk: unknown;
  row: unknown;
  serverVersion: unknown;
  checksum: unknown;
  /** The whole message object, for reporting. */
  raw: Obj;
}

export interface RowVerdict {
  ok: boolean;
  /** The digest the codec computes (hex), when the row could be encoded. */
  expected?: string;
  claimed?: string;
  problem?: string;
}

/** Recomputes the message's row digest under its manifest and compares it with the claimed checksum object. */
export function verifyRowMessage(manifests: ReadonlyMap<string, Manifest>, m: RowMessage): RowVerdict {
  const manifest = manifests.get(m.schemaHash);
  if (manifest === undefined) return { ok: false, problem: `no manifest with hash ${m.schemaHash} was seen on the wire` };
  let claimed: string;
  try {
    claimed = toHex(readChecksumObject(m.checksum));
  } catch (error) {
    return { ok: false, problem: `row_checksum is not a valid checksum object: ${(error as Error).message}` };
  }
  try {
    const { digest } = digestRow({ schemaHash: m.schemaHash, table: shapeOf(manifest, m.table), row: m.row, pk: plainKey(m.pk), serverVersion: String(m.serverVersion) });
    const expected = toHex(digest);
    return expected === claimed ? { ok: true, expected, claimed } : { ok: false, expected, claimed, problem: `claimed ${claimed}, the codec computes ${expected}` };
  } catch (error) {
    return { ok: false, claimed, problem: `the codec refuses the row: ${(error as Error).message}` };
  }
}

/** The single key value of a wire `pk` object. */
export function plainKey(pk: unknown): unknown {
  if (typeof pk !== 'object' || pk === null) return pk;
  const values = Object.values(pk as Obj);
  return values.length === 1 ? values[0] : pk;
}

/** Identity and digest the codec derives for one row. */
export function entryOf(manifest: Manifest, tableId: string, row: unknown, serverVersion: string): { identity: Uint8Array; digest: Uint8Array } {
  const { identity, digest } = digestRow({ schemaHash: manifest.schema_hash, table: shapeOf(manifest, tableId), row, serverVersion });
  return { identity, digest };
}

/** The codec's scope digest (hex) over rows given as (table, row, version). */
export function scopeDigestHex(manifest: Manifest, scopeId: string, rows: readonly { table: string; row: unknown; serverVersion: string }[]): string {
  const builder = new ScopeDigestBuilder(fromHex(manifest.schema_hash), scopeId);
  for (const r of rows) {
    const e = entryOf(manifest, r.table, r.row, r.serverVersion);
    builder.add(e.identity, e.digest);
  }
  return toHex(builder.finish());
}

export function sortEntries<T extends { identity: Uint8Array }>(entries: readonly T[]): T[] {
  return [...entries].sort((a, b) => compareBytes(a.identity, b.identity));
}

export function hexChecksum(digest: Uint8Array): ReturnType<typeof checksumObject> {
  return checksumObject(digest);
}

/** Request body of the exchange, plain-parsed. */
export function requestOf(e: Exchange): Obj {
  return (bodyOf(e.requestBody) ?? {}) as Obj;
}

/** A 200 body the server sent, strict-parsed (number text kept), or undefined. */
export function serverBody(e: Exchange): Obj | undefined {
  const answer = upstreamOf(e);
  if (answer === undefined || answer.status !== 200) return undefined;
  const value = parseStrict(answer.body);
  return isJsonObject(value) ? (value as unknown as Obj) : undefined;
}

/** A 200 body as the client was given it (after any proxy rewrite), strict-parsed, or undefined. */
export function deliveredBody(e: Exchange): Obj | undefined {
  const answer = deliveredOf(e);
  if (answer === undefined || answer.status !== 200) return undefined;
  const value = parseStrict(answer.body);
  return isJsonObject(value) ? (value as unknown as Obj) : undefined;
}

/**
 * Every row-bearing message in the recorded exchanges, with the schema hash
 * each is bound to: as the server sent it, or with `deliveredBody` as the
 * client received it.
 */
export function rowMessages(exchanges: readonly Exchange[], bodyOfAnswer: (e: Exchange) => Obj | undefined = serverBody): RowMessage[] {
  const out: RowMessage[] = [];
  for (const e of exchanges) {
    const body = bodyOfAnswer(e);
    if (body === undefined) continue;
    const request = requestOf(e);
    const requestHash = (request.schema as Obj | undefined)?.hash;
    if (e.endpoint === 'push') {
      for (const list of [body.accepted, body.rejected]) {
        for (const o of (Array.isArray(list) ? list : []) as Obj[]) {
          if (o.server_row === undefined && o.row_checksum === undefined) continue;
          out.push({ kind: 'outcome', schemaHash: String((o.outcome_schema as Obj | undefined)?.hash), table: String(o.table), pk: o.pk, row: o.server_row, serverVersion: o.server_version, checksum: o.row_checksum, raw: o });
        }
      }
    } else if (e.endpoint === 'pull') {
      for (const c of (Array.isArray(body.changes) ? body.changes : []) as Obj[]) {
        if (c.row === undefined && c.row_checksum === undefined) continue;
        out.push({ kind: 'change', schemaHash: String(requestHash), table: String(c.table), pk: c.pk, row: c.row, serverVersion: c.server_version, checksum: c.row_checksum, raw: c });
      }
    } else if (e.endpoint === 'rebuild') {
      for (const r of (Array.isArray(body.records) ? body.records : []) as Obj[]) {
        out.push({ kind: 'record', schemaHash: String(requestHash), table: String(r.table), pk: r.pk, row: r.row, serverVersion: r.server_version, checksum: r.row_checksum, raw: r });
      }
    }
  }
  return out;
}

/** Text of a JSON value with number text as sent, for comparing wire forms exactly. */
export function wireText(value: unknown): string {
  if (value instanceof RawNumber) return value.raw;
  if (Array.isArray(value)) return `[${value.map(wireText).join(',')}]`;
  if (typeof value === 'object' && value !== null) return `{${Object.entries(value as Obj).map(([k, v]) => `${JSON.stringify(k)}:${wireText(v)}`).join(',')}}`;
  return JSON.stringify(value);
}
