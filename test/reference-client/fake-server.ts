/**
 * A small scriptable protocol-3 server for client tests: node:http on a free
 * loopback port, an in-memory row store with opaque versions, a change log
 * for incremental pull, snapshot rebuilds, exact push replay, and per-endpoint
 * scripted replies (an injected status, a dropped response, a corrupt body).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checksumObject, digestRow, encodeRowIdentity, fromHex, readTableShape, scopeDigest, type TableShape, toHex } from '../../harness/codec/index.ts';
import type { SchemaManifest, TableSchema } from '../../harness/wire/generated.ts';
import { validate } from '../../harness/wire/validate.ts';

type Row = Record<string, unknown>;
interface Stored {
  row: Row;
  version: string;
}
export interface Reply {
  status: number;
  body: unknown;
  retryAfter?: string;
  /** Send these exact bytes instead of JSON of `body`. */
  raw?: Buffer;
}
/** A scripted step: a reply, 'drop' (handle normally, then cut the connection), or a function of the default reply. */
export type Script = Reply | 'drop' | ((request: unknown, normal: () => Reply) => Reply | 'drop');

interface ClientRecord {
  generation: number;
  assigned: string[];
  known: string[];
  setVersion: number;
}

const now = () => new Date().toISOString().replace('Z', '000Z');

export class FakeServer {
  manifest: SchemaManifest;
  readonly shapes = new Map<string, TableShape>();
  readonly tables = new Map<string, TableSchema>();
  readonly rows = new Map<string, Map<string, Stored>>();
  readonly log: { seq: number; table: string; key: string; before: string[]; after: string[] }[] = [];
  readonly clients = new Map<string, ClientRecord>();
  readonly batches = new Map<string, { bytes: string; response: string }>();
  readonly snapshots = new Map<string, { scope: string; records: unknown[]; head: number; digest: string }>();
  readonly requests: { path: string; body: Buffer; at: number }[] = [];
  readonly scripts = new Map<string, Script[]>();
  scopesOf: (table: string, row: Row) => string[] = () => ['all'];
  defaultScopes = ['all'];
  reject: ((mutation: Record<string, unknown>) => string | undefined) | undefined;
  #version = 0;
  #server: Server | undefined;
  url = '';

  constructor(manifest: SchemaManifest) {
    this.manifest = manifest;
    this.#index();
  }

  #index(): void {
    for (const t of this.manifest.tables) {
      this.shapes.set(t.table_id, readTableShape(t));
      this.tables.set(t.table_id, t);
      if (!this.rows.has(t.table_id)) this.rows.set(t.table_id, new Map());
    }
  }

  setManifest(manifest: SchemaManifest): void {
    this.manifest = manifest;
    this.#index();
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  /** Queues a scripted step for the next request to `path`. */
  script(path: string, step: Script): void {
    const list = this.scripts.get(path) ?? [];
    list.push(step);
    this.scripts.set(path, list);
  }

  count(path: string): number {
    return this.requests.filter((r) => r.path === path).length;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = req.url ?? '';
    this.requests.push({ path, body, at: Date.now() });
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    const normal = () => this.#dispatch(path, parsed, body);
    const step = this.scripts.get(path)?.shift();
    let reply: Reply | 'drop';
    if (step === undefined) reply = normal();
    else if (typeof step === 'function') reply = step(parsed, normal);
    else if (step === 'drop') reply = 'drop';
    else reply = step;
    if (reply === 'drop') {
      normal();
      req.socket.destroy();
      return;
    }
    const out = reply.raw ?? Buffer.from(JSON.stringify(reply.body));
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (reply.retryAfter !== undefined) headers['retry-after'] = reply.retryAfter;
    res.writeHead(reply.status, headers).end(out);
  }

  #dispatch(path: string, body: unknown, bytes: Buffer): Reply {
    switch (path) {
      case '/sync/connect':
        return this.connect(body as Record<string, unknown>);
      case '/sync/push':
        return this.push(body as Record<string, unknown>, bytes);
      case '/sync/pull':
        return this.pull(body as Record<string, unknown>);
      case '/sync/rebuild':
        return this.rebuild(body as Record<string, unknown>);
      default:
        return { status: 404, body: { error: { code: 'invalid_request', message: 'no such endpoint', retryable: false } } };
    }
  }

  // --- state helpers ---------------------------------------------------------

  nextVersion(): string {
    this.#version++;
    return `v${this.#version}.${randomUUID().slice(0, 8)}`;
  }

  head(): number {
    return this.log.length === 0 ? 0 : (this.log[this.log.length - 1] as { seq: number }).seq;
  }

  rowDigest(table: string, row: Row, version: string) {
    return digestRow({ schemaHash: this.manifest.schema_hash, table: this.shapes.get(table) as TableShape, row, serverVersion: version });
  }

  /** Writes a row as another writer would (no client involved); returns its new version. */
  putRow(table: string, row: Row): string {
    const t = this.rows.get(table) as Map<string, Stored>;
    const key = String(row[(this.tables.get(table) as TableSchema).primary_key_field_id]);
    const before = t.get(key);
    const version = this.nextVersion();
    t.set(key, { row, version });
    this.#logChange(table, key, before?.row, row);
    return version;
  }

  removeRow(table: string, key: string): void {
    const t = this.rows.get(table) as Map<string, Stored>;
    const before = t.get(key);
    t.delete(key);
    this.#logChange(table, key, before?.row, undefined);
  }

  #logChange(table: string, key: string, before: Row | undefined, after: Row | undefined): void {
    this.log.push({ seq: this.head() + 1, table, key, before: before === undefined ? [] : this.scopesOf(table, before), after: after === undefined ? [] : this.scopesOf(table, after) });
  }

  scopeRows(scope: string): { table: string; key: string; stored: Stored }[] {
    const out: { table: string; key: string; stored: Stored }[] = [];
    for (const [table, rows] of this.rows) for (const [key, stored] of rows) if (this.scopesOf(table, stored.row).includes(scope)) out.push({ table, key, stored });
    return out;
  }

  scopeChecksum(scope: string) {
    const entries = this.scopeRows(scope).map(({ table, stored }) => {
      const d = this.rowDigest(table, stored.row, stored.version);
      return { identity: d.identity, digest: d.digest };
    });
    return checksumObject(scopeDigest(fromHex(this.manifest.schema_hash), scope, entries));
  }

  #client(id: string): ClientRecord {
    let c = this.clients.get(id);
    if (c === undefined) {
      c = { generation: 1, assigned: [...this.defaultScopes], known: [], setVersion: 1 };
      this.clients.set(id, c);
    }
    return c;
  }

  assign(clientId: string, scopes: string[]): void {
    const c = this.#client(clientId);
    c.assigned = [...scopes];
    c.setVersion++;
  }

  expireGeneration(clientId: string): void {
    this.#client(clientId).generation++;
  }

  #error(status: number, code: string, extra: Record<string, unknown> = {}, retryAfter?: string): Reply {
    const reply: Reply = { status, body: { error: { code, message: code.replaceAll('_', ' '), retryable: status === 429 || status === 503, ...extra } } };
    if (retryAfter !== undefined) reply.retryAfter = retryAfter;
    return reply;
  }

  #delta(c: ClientRecord): { add: { id: string; cursor: null }[]; remove: string[] } {
    const add = c.assigned.filter((s) => !c.known.includes(s)).map((id) => ({ id, cursor: null }));
    const remove = c.known.filter((s) => !c.assigned.includes(s));
    c.known = [...c.assigned];
    return { add, remove };
  }

  // --- endpoints -------------------------------------------------------------

  connect(req: Record<string, unknown>): Reply {
    const v = validate('connect-request', req);
    if (!v.ok) return this.#error(400, 'invalid_request');
    const c = this.#client(String(req.client_id));
    if (req.client_generation === undefined) c.generation = Math.max(c.generation, 1);
    const schema = req.schema as { version: number; hash: string };
    const reset = req.schema_reset === true;
    const replace = schema.hash !== this.manifest.schema_hash || reset;
    c.known = Object.keys(req.known_scopes as object);
    const scopes = this.#delta(c);
    const action = reset && c.assigned.length > 0 ? 'rebuild_local' : replace ? 'replace' : 'none';
    const body: Record<string, unknown> = {
      server_time: now(),
      protocol_version: 3,
      client_generation: c.generation,
      scope_set_version: c.setVersion,
      schema: { version: this.manifest.schema_version, hash: this.manifest.schema_hash, action },
      scopes,
      scope_cursor_updates: {},
    };
    if (replace) body.schema_definition = this.manifest;
    if (action === 'rebuild_local') body.affected_scopes = [...c.assigned].sort();
    return { status: 200, body };
  }

  push(req: Record<string, unknown>, bytes: Buffer): Reply {
    if (!validate('push-request', req).ok) return this.#error(400, 'invalid_request');
    const c = this.#client(String(req.client_id));
    const batchId = String(req.batch_id);
    const previous = this.batches.get(batchId);
    if (previous !== undefined) {
      if (previous.bytes !== bytes.toString('utf8')) return this.#error(409, 'idempotency_conflict');
      return { status: 200, body: JSON.parse(previous.response) };
    }
    if (req.client_generation !== c.generation) return this.#error(409, 'client_generation_expired', { current_client_generation: c.generation });
    const schema = req.schema as { version: number; hash: string };
    if (schema.hash !== this.manifest.schema_hash) {
      return this.#error(422, 'schema_mismatch', { current_schema: { version: this.manifest.schema_version, hash: this.manifest.schema_hash }, received_schema: schema });
    }
    const atomic = req.atomic === true;
    const mutations = req.mutations as Record<string, unknown>[];
    const saved = new Map([...this.rows].map(([t, m]) => [t, new Map(m)]));
    const savedLog = this.log.length;
    const savedVersion = this.#version;
    const outcomes: Record<string, unknown>[] = [];
    let failedAt = -1;
    for (const [k, m] of mutations.entries()) {
      if (atomic && failedAt >= 0) break;
      const o = this.#apply(m);
      outcomes.push(o);
      if (o.status !== 'applied' && failedAt < 0) failedAt = k;
    }
    if (atomic && failedAt >= 0) {
      for (const [t, m] of saved) this.rows.set(t, m);
      this.log.length = savedLog;
      this.#version = savedVersion;
      const failed = outcomes[failedAt] as Record<string, unknown>;
      outcomes.length = 0;
      for (const [k, m] of mutations.entries()) {
        outcomes.push(
          k === failedAt
            ? failed
            : { ...this.#ref(m), status: 'rejected_terminal', code: 'atomic_batch_rejected', message: 'atomic batch rejected' },
        );
      }
    }
    const response = {
      batch_id: batchId,
      server_time: now(),
      accepted: outcomes.filter((o) => o.status === 'applied'),
      rejected: outcomes.filter((o) => o.status !== 'applied'),
    };
    this.batches.set(batchId, { bytes: bytes.toString('utf8'), response: JSON.stringify(response) });
    return { status: 200, body: response };
  }

  #ref(m: Record<string, unknown>): Record<string, unknown> {
    return { mutation_id: m.mutation_id, table: m.table, pk: m.pk, outcome_schema: { version: this.manifest.schema_version, hash: this.manifest.schema_hash } };
  }

  #withRow(table: string, stored: Stored): Record<string, unknown> {
    return { server_row: stored.row, row_checksum: checksumObject(this.rowDigest(table, stored.row, stored.version).digest), server_version: stored.version };
  }

  #apply(m: Record<string, unknown>): Record<string, unknown> {
    const tableId = String(m.table);
    const schema = this.tables.get(tableId);
    const ref = this.#ref(m);
    if (schema === undefined) return { ...ref, status: 'rejected_terminal', code: 'table_not_synced', message: 'table not synced' };
    const code = this.reject?.(m);
    if (code !== undefined) return { ...ref, status: 'rejected_terminal', code, message: code.replaceAll('_', ' ') };
    const rows = this.rows.get(tableId) as Map<string, Stored>;
    const pkValue = Object.values(m.pk as object)[0];
    const key = String(pkValue);
    const current = rows.get(key);
    const deletedField = schema.lifecycle.deleted_at_field_id;
    const isDeleted = current !== undefined && deletedField !== null && current.row[deletedField] !== null;
    const columns = (m.columns ?? {}) as Row;
    for (const f of Object.keys(columns)) {
      if (!schema.fields.some((x) => x.field_id === f)) return { ...ref, status: 'rejected_terminal', code: 'validation_failed', message: `unknown field ${f}` };
    }
    const stamp = (row: Row) => {
      if (schema.lifecycle.updated_at_field_id !== null) row[schema.lifecycle.updated_at_field_id] = now();
      return row;
    };
    if (m.op === 'insert') {
      if (current !== undefined) return { ...ref, status: 'conflict', code: 'row_already_exists', message: 'row already exists', ...this.#withRow(tableId, current) };
      const row: Row = {};
      for (const f of schema.fields) row[f.field_id] = null;
      Object.assign(row, columns);
      row[schema.primary_key_field_id] = pkValue;
      if (schema.lifecycle.created_at_field_id !== null) row[schema.lifecycle.created_at_field_id] = now();
      this.putRow(tableId, stamp(row));
      return { ...ref, status: 'applied', ...this.#withRow(tableId, rows.get(key) as Stored) };
    }
    if (current === undefined) return { ...ref, status: 'conflict', code: 'row_not_found', message: 'row not found' };
    if (isDeleted) return { ...ref, status: 'conflict', code: 'row_deleted', message: 'row deleted', ...this.#withRow(tableId, current) };
    if (m.base_version !== current.version) return { ...ref, status: 'conflict', code: 'version_conflict', message: 'version conflict', ...this.#withRow(tableId, current) };
    if (m.op === 'update') {
      this.putRow(tableId, stamp({ ...current.row, ...columns }));
      return { ...ref, status: 'applied', ...this.#withRow(tableId, rows.get(key) as Stored) };
    }
    if (deletedField !== null) {
      this.putRow(tableId, stamp({ ...current.row, [deletedField]: now() }));
      return { ...ref, status: 'applied', ...this.#withRow(tableId, rows.get(key) as Stored) };
    }
    this.removeRow(tableId, key);
    return { ...ref, status: 'applied', server_version: this.nextVersion() };
  }

  pull(req: Record<string, unknown>): Reply {
    if (!validate('pull-request', req).ok) return this.#error(400, 'invalid_request');
    const c = this.#client(String(req.client_id));
    if (req.client_generation !== c.generation) return this.#error(409, 'client_generation_expired', { current_client_generation: c.generation });
    const limit = Number(req.limit);
    const presented = req.scopes as Record<string, { cursor: string | null }>;
    const delta = this.#delta(c);
    const head = this.head();
    const candidates: { seq: number; change: Record<string, unknown> }[] = [];
    for (const [scope, { cursor }] of Object.entries(presented)) {
      if (!c.assigned.includes(scope) || cursor === null) continue;
      const from = Number(cursor.slice(1));
      const latest = new Map<string, (typeof this.log)[number]>();
      for (const e of this.log) if (e.seq > from && (e.before.includes(scope) || e.after.includes(scope))) latest.set(`${e.table}\u0000${e.key}`, e);
      for (const e of latest.values()) {
        const stored = this.rows.get(e.table)?.get(e.key);
        const pkField = (this.tables.get(e.table) as TableSchema).primary_key_field_id;
        if (stored !== undefined && this.scopesOf(e.table, stored.row).includes(scope)) {
          const d = this.rowDigest(e.table, stored.row, stored.version);
          candidates.push({ seq: e.seq, change: { scope, table: e.table, op: 'upsert', pk: { [pkField]: stored.row[pkField] }, row: stored.row, row_checksum: checksumObject(d.digest), server_version: stored.version } });
        } else {
          const shape = this.shapes.get(e.table) as TableShape;
          const pk = shape.pkType === 'int' ? Number(e.key) : e.key;
          candidates.push({ seq: e.seq, change: { scope, table: e.table, op: 'delete', pk: { [pkField]: pk }, server_version: this.nextVersion() } });
        }
      }
    }
    candidates.sort((a, b) => a.seq - b.seq);
    const page = candidates.slice(0, limit);
    const hasMore = candidates.length > limit;
    const cursors: Record<string, string> = {};
    for (const scope of Object.keys(presented)) {
      if (!c.assigned.includes(scope)) continue;
      const mine = page.filter((p) => p.change.scope === scope);
      const rest = candidates.slice(limit).some((p) => p.change.scope === scope);
      cursors[scope] = `c${rest ? (mine[mine.length - 1]?.seq ?? Number(presented[scope]?.cursor?.slice(1) ?? 0)) : head}`;
    }
    const body: Record<string, unknown> = {
      changes: page.map((p) => p.change),
      scope_set_version: c.setVersion,
      scope_cursors: cursors,
      scope_updates: delta,
      rebuild: delta.add.map((a) => a.id),
      has_more: hasMore,
    };
    if (!hasMore) body.checksums = Object.fromEntries(c.assigned.map((s) => [s, this.scopeChecksum(s)]));
    return { status: 200, body };
  }

  rebuild(req: Record<string, unknown>): Reply {
    if (!validate('rebuild-request', req).ok) return this.#error(400, 'invalid_request');
    const c = this.#client(String(req.client_id));
    if (req.client_generation !== c.generation) return this.#error(409, 'client_generation_expired', { current_client_generation: c.generation });
    const id = String(req.rebuild_id);
    const scope = String(req.scope);
    let snap = this.snapshots.get(id);
    if (snap === undefined) {
      const records = this.scopeRows(scope)
        .map(({ table, stored }) => {
          const shape = this.shapes.get(table) as TableShape;
          const d = this.rowDigest(table, stored.row, stored.version);
          return { id: toHex(encodeRowIdentity(table, shape.pkFieldId, readKey(shape, stored.row))), record: { table, pk: { [shape.pkFieldId]: stored.row[shape.pkFieldId] }, row: stored.row, row_checksum: checksumObject(d.digest), server_version: stored.version } };
        })
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((x) => x.record);
      snap = { scope, records, head: this.head(), digest: this.scopeChecksum(scope).digest };
      this.snapshots.set(id, snap);
    }
    const offset = req.cursor === null ? 0 : Number(String(req.cursor).slice(2));
    const limit = Number(req.limit);
    const records = snap.records.slice(offset, offset + limit);
    const more = offset + limit < snap.records.length;
    const body: Record<string, unknown> = { scope, records, cursor: more ? `rb${offset + limit}` : null, has_more: more };
    if (!more) {
      body.final_scope_cursor = `c${snap.head}`;
      body.checksum = { algorithm: 'sha256', version: 1, encoding: 'hex', digest: snap.digest };
    }
    return { status: 200, body };
  }
}

function readKey(shape: TableShape, row: Row) {
  const v = row[shape.pkFieldId];
  if (shape.pkType === 'int') return { type: 'int' as const, value: Number(v) };
  if (shape.pkType === 'int64') return { type: 'int64' as const, value: BigInt(String(v)) };
  return { type: 'string' as const, value: String(v) };
}
