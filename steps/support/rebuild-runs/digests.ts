/**
 * The scope digest the harness codec computes over rows that crossed the
 * wire, under the manifest the server published for the schema hash the
 * request presented. Only the codec decides what the digest should be; the
 * implementation's own checksum is what gets compared with it.
 */
import { type Manifest, manifestsSeen, scopeDigestHex } from '../integrity/oracle.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

/** A wire row of a scope: a rebuild record or a pull upsert (table id, pk, row, server_version). */
export interface ScopeRow {
  table: string;
  pk: unknown;
  row: unknown;
  serverVersion: string;
}

export function scopeRowOf(message: Obj): ScopeRow {
  return { table: String(message.table), pk: message.pk, row: message.row, serverVersion: String(message.server_version) };
}

/** Identity of a row within one scope: the table and the key exactly as sent. */
export const scopeRowKey = (row: Obj) => `${String(row.table)}\u0000${JSON.stringify(row.pk)}`;

async function manifestFor(world: SyncWorld, schemaHash: string): Promise<Manifest> {
  const manifest = manifestsSeen((await world.proxy()).exchanges).get(schemaHash);
  if (manifest === undefined) throw new Error(`the server published no manifest with schema hash ${schemaHash} in this scenario`);
  return manifest;
}

/** The codec's digest (lowercase hex) of `scope` holding exactly `rows`. */
export async function codecScopeDigest(world: SyncWorld, scope: string, schemaHash: string, rows: readonly ScopeRow[]): Promise<string> {
  return scopeDigestHex(await manifestFor(world, schemaHash), scope, rows);
}

/** The schema hash a recorded request presented. */
export function presentedSchemaHash(requestText: string): string {
  const hash = (JSON.parse(requestText) as { schema?: { hash?: unknown } }).schema?.hash;
  if (typeof hash !== 'string') throw new Error(`the request presented no schema hash: ${requestText.slice(0, 300)}`);
  return hash;
}
