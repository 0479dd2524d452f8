/**
 * Pull and rebuild helpers for the reference server tests: every 200 body is
 * checked against the wire schema and its cross-field rules (rows and
 * checksums recomputed independently from the published manifest).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { digestRow, readTableShape, toHex } from '../../harness/codec/index.ts';
import { checkMessage, type RowDigestFn, type SchemaManifest } from '../../harness/wire/index.ts';
import type { Harness, Reply, Session } from './helpers.ts';

const rowDigest: RowDigestFn = ({ manifest, table, pk, row, serverVersion }) =>
  toHex(
    digestRow({ schemaHash: manifest.schema_hash, table: readTableShape(manifest.tables.find((t) => t.table_id === table)), row, pk: Object.values(pk)[0], serverVersion })
      .digest,
  );

export async function manifests(h: Harness): Promise<SchemaManifest[]> {
  const { rows } = await h.sql.query<{ body_text: string }>('SELECT body_text FROM synchro.manifests');
  return rows.map((r) => JSON.parse(r.body_text) as SchemaManifest);
}

async function assertValid(h: Harness, kind: 'pull-response' | 'rebuild-response', request: unknown, reply: Reply, extra: Record<string, unknown> = {}) {
  const result = checkMessage(kind, reply.json, { request, manifests: await manifests(h), rowDigest, status: reply.status, ...extra });
  assert.deepEqual(result.schemaErrors, [], reply.text);
  assert.deepEqual(result.violations, [], reply.text);
}

export function pullBody(s: Session, scopes: Record<string, string | null>, limit = 1000, scopeSetVersion = 1) {
  return {
    client_id: s.clientId,
    client_generation: s.generation,
    schema: s.schema,
    scope_set_version: scopeSetVersion,
    scopes: Object.fromEntries(Object.entries(scopes).map(([k, v]) => [k, { cursor: v }])),
    limit,
  };
}

/** One pull; a 200 is validated (with the client's active scopes when given). */
export async function pull(h: Harness, s: Session, scopes: Record<string, string | null>, opts: { limit?: number; user?: string; active?: string[]; version?: number } = {}): Promise<Reply> {
  const body = pullBody(s, scopes, opts.limit ?? 1000, opts.version ?? 1);
  const reply = await h.post('/sync/pull', body, opts.user === undefined ? {} : { user: opts.user });
  if (reply.status === 200) await assertValid(h, 'pull-response', body, reply, opts.active === undefined ? {} : { activeScopes: opts.active });
  return reply;
}

export function rebuildBody(s: Session, scope: string, rebuildId: string, cursor: string | null, limit: number) {
  return { client_id: s.clientId, client_generation: s.generation, schema: s.schema, scope, rebuild_id: rebuildId, cursor, limit };
}

export async function rebuildPage(h: Harness, s: Session, scope: string, rebuildId: string, cursor: string | null, limit: number, user?: string): Promise<Reply> {
  const body = rebuildBody(s, scope, rebuildId, cursor, limit);
  const reply = await h.post('/sync/rebuild', body, user === undefined ? {} : { user });
  if (reply.status === 200) await assertValid(h, 'rebuild-response', body, reply);
  return reply;
}

export interface Rebuilt {
  records: Array<{ table: string; pk: Record<string, unknown>; row: Record<string, unknown>; server_version: string }>;
  finalCursor: string;
  checksum: string;
  pages: Reply[];
}

/** A whole rebuild attempt, page by page. */
export async function rebuildAll(h: Harness, s: Session, scope: string, limit = 1000): Promise<Rebuilt> {
  const id = randomUUID();
  const pages: Reply[] = [];
  let cursor: string | null = null;
  for (;;) {
    const reply = await rebuildPage(h, s, scope, id, cursor, limit);
    assert.equal(reply.status, 200, reply.text);
    pages.push(reply);
    if (!reply.json.has_more) break;
    cursor = reply.json.cursor;
  }
  const last = pages[pages.length - 1] as Reply;
  return { records: pages.flatMap((p) => p.json.records), finalCursor: last.json.final_scope_cursor, checksum: last.json.checksum.digest, pages };
}
