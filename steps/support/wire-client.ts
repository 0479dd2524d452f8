/**
 * The harness acting as a protocol client over HTTP, through the scenario's
 * proxy (so every exchange is schema-checked and recorded). It keeps the
 * state a client would: identity, generation, installed schema and manifest,
 * scope set version and one cursor per assigned scope. Requests are built from
 * that state; a step may patch any member to send something else on purpose.
 */
import { randomUUID } from 'node:crypto';
import { INTENT_HEADER } from '../../harness/proxy/proxy.ts';
import type { SchemaManifest, TableSchema } from '../../harness/wire/index.ts';
import { readReply, type Reply, setMember } from './reply.ts';

export type Json = Record<string, unknown>;

export interface WireClientContext {
  /** Base URL of the proxy in front of the scenario's server. */
  url(): Promise<string>;
  token(userId: string): Promise<string>;
  /** Called with every answer, so the scenario's "last response" follows this client too. */
  record(reply: Reply): void;
  deadlineMs: number;
}

export interface RebuildRun {
  pages: Reply[];
  // biome-ignore lint/suspicious/noExplicitAny: rebuild records are inspected member by member
  records: any[];
  finalCursor: string | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: the checksum object is compared as the server sent it
  checksum: any;
}

/** A mutation described by names (table, columns) that the client turns into field ids. */
export interface MutationSpec {
  op: 'insert' | 'update' | 'delete';
  table: string;
  pk: unknown;
  columns?: Record<string, unknown>;
  base_version?: string;
  mutation_id?: string;
  client_version?: string;
}

/** Applies `patch` members (JSON pointers or top-level names) to `body`; `undefined` removes a member. */
export function applyPatch(body: Json, patch: Json | undefined): Json {
  if (!patch) return body;
  for (const [key, value] of Object.entries(patch)) setMember(body, key.startsWith('/') ? key : `/${key}`, value);
  return body;
}

export class WireClient {
  readonly name: string;
  readonly userId: string;
  clientId: string;
  generation: number | undefined;
  schema: { version: number; hash: string } = { version: 0, hash: '' };
  manifest: SchemaManifest | undefined;
  scopeSetVersion = 0;
  readonly cursors = new Map<string, string | null>();
  appVersion = '1.0.0';
  readonly #context: WireClientContext;

  constructor(name: string, userId: string, context: WireClientContext, clientId?: string) {
    this.name = name;
    this.userId = userId;
    this.clientId = clientId ?? `wire-${name}-${randomUUID().slice(0, 8)}`;
    this.#context = context;
  }

  /** Forgets everything but the user: the next connect is a fresh client's. */
  reset(clientId?: string): void {
    this.clientId = clientId ?? `wire-${this.name}-${randomUUID().slice(0, 8)}`;
    this.generation = undefined;
    this.schema = { version: 0, hash: '' };
    this.manifest = undefined;
    this.scopeSetVersion = 0;
    this.cursors.clear();
  }

  /** POSTs `body` (or `raw` text) as this client's user; `invalid` tells the proxy the request is wrong on purpose. */
  async post(path: string, body: unknown, options: { raw?: string; invalid?: boolean; user?: string | null; endpoint?: string } = {}): Promise<Reply> {
    const text = options.raw ?? JSON.stringify(body);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const user = options.user === undefined ? this.userId : options.user;
    if (user !== null) headers.authorization = `Bearer ${await this.#context.token(user)}`;
    if (options.invalid) headers[INTENT_HEADER] = 'invalid-request';
    const response = await fetch(`${await this.#context.url()}${path}`, { method: 'POST', headers, body: text, signal: AbortSignal.timeout(this.#context.deadlineMs) });
    const reply = await readReply(options.endpoint ?? path.split('/').pop() ?? path, response, text);
    this.#context.record(reply);
    return reply;
  }

  connectBody(): Json {
    const known: Json = {};
    for (const [scope, cursor] of this.cursors) known[scope] = { cursor };
    return {
      client_id: this.clientId,
      ...(this.generation === undefined ? {} : { client_generation: this.generation }),
      platform: 'conformance-harness',
      app_version: this.appVersion,
      protocol_version: 3,
      schema: { ...this.schema },
      scope_set_version: this.scopeSetVersion,
      known_scopes: known,
    };
  }

  async connect(patch?: Json, options: { invalid?: boolean } = {}): Promise<Reply> {
    const reply = await this.post('/sync/connect', applyPatch(this.connectBody(), patch), { ...options, endpoint: 'connect' });
    if (reply.status === 200) this.#applyConnect(reply.json);
    return reply;
  }

  #applyConnect(body: Json): void {
    this.generation = body.client_generation as number;
    const schema = body.schema as { version: number; hash: string; action: string };
    if (body.schema_definition) this.manifest = body.schema_definition as SchemaManifest;
    if (schema.action !== 'unsupported') this.schema = { version: schema.version, hash: schema.hash };
    this.#applyScopes(body.scopes as { add: { id: string; cursor: string | null }[]; remove: string[] });
    for (const [scope, cursor] of Object.entries((body.scope_cursor_updates ?? {}) as Record<string, string | null>)) if (this.cursors.has(scope)) this.cursors.set(scope, cursor);
    this.scopeSetVersion = body.scope_set_version as number;
  }

  #applyScopes(delta: { add: { id: string; cursor: string | null }[]; remove: string[] } | undefined): void {
    for (const scope of delta?.remove ?? []) this.cursors.delete(scope);
    for (const added of delta?.add ?? []) this.cursors.set(added.id, added.cursor);
  }

  pullBody(limit = 1000): Json {
    const scopes: Json = {};
    for (const [scope, cursor] of this.cursors) scopes[scope] = { cursor };
    return { client_id: this.clientId, client_generation: this.generation, schema: { ...this.schema }, scope_set_version: this.scopeSetVersion, scopes, limit };
  }

  /** One pull page; a 200 installs the returned cursors and scope changes as a client would after applying it. */
  async pull(patch?: Json, options: { invalid?: boolean; limit?: number } = {}): Promise<Reply> {
    const reply = await this.post('/sync/pull', applyPatch(this.pullBody(options.limit), patch), { ...options, endpoint: 'pull' });
    if (reply.status === 200) {
      const body = reply.json as Json;
      this.#applyScopes(body.scope_updates as never);
      for (const [scope, cursor] of Object.entries((body.scope_cursors ?? {}) as Record<string, string>)) if (this.cursors.has(scope)) this.cursors.set(scope, cursor);
      for (const scope of (body.rebuild ?? []) as string[]) if (this.cursors.has(scope)) this.cursors.set(scope, null);
      this.scopeSetVersion = body.scope_set_version as number;
    }
    return reply;
  }

  /** Pulls until `has_more` is false or a non-200 answer; returns every page. */
  async pullAll(options: { limit?: number } = {}): Promise<Reply[]> {
    const pages: Reply[] = [];
    for (let page = 0; page < 1000; page += 1) {
      const reply = await this.pull(undefined, options);
      pages.push(reply);
      if (reply.status !== 200 || reply.json.has_more !== true) return pages;
    }
    throw new Error(`client "${this.name}": pull still had more after 1000 pages`);
  }

  pushBody(mutations: unknown[], batchId: string = randomUUID()): Json {
    return { client_id: this.clientId, client_generation: this.generation, batch_id: batchId, schema: { ...this.schema }, mutations };
  }

  async push(mutations: unknown[], patch?: Json, options: { invalid?: boolean } = {}): Promise<Reply> {
    return this.post('/sync/push', applyPatch(this.pushBody(mutations), patch), { ...options, endpoint: 'push' });
  }

  rebuildBody(scope: string, rebuildId: string, cursor: string | null, limit: number): Json {
    return { client_id: this.clientId, client_generation: this.generation, schema: { ...this.schema }, scope, rebuild_id: rebuildId, cursor, limit };
  }

  async rebuildPage(scope: string, rebuildId: string, cursor: string | null, limit = 1000, patch?: Json, options: { invalid?: boolean } = {}): Promise<Reply> {
    return this.post('/sync/rebuild', applyPatch(this.rebuildBody(scope, rebuildId, cursor, limit), patch), { ...options, endpoint: 'rebuild' });
  }

  /** A whole rebuild of `scope`; on success installs its final cursor. Stops at the first non-200 page. */
  async rebuildAll(scope: string, limit = 1000): Promise<RebuildRun> {
    const rebuildId = randomUUID();
    const pages: Reply[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10_000; page += 1) {
      const reply = await this.rebuildPage(scope, rebuildId, cursor, limit);
      pages.push(reply);
      if (reply.status !== 200) return { pages, records: pages.flatMap((p) => p.json?.records ?? []), finalCursor: undefined, checksum: undefined };
      if (reply.json.has_more !== true) {
        if (this.cursors.has(scope)) this.cursors.set(scope, reply.json.final_scope_cursor);
        return { pages, records: pages.flatMap((p) => p.json.records), finalCursor: reply.json.final_scope_cursor, checksum: reply.json.checksum };
      }
      cursor = reply.json.cursor;
    }
    throw new Error(`client "${this.name}": rebuild of ${scope} still had more after 10000 pages`);
  }

  /** Connects, then rebuilds every assigned scope that has no cursor. */
  async connectAndRebuild(): Promise<void> {
    const reply = await this.connect();
    if (reply.status !== 200) throw new Error(`client "${this.name}" could not connect: ${reply.status} ${reply.text}`);
    await this.rebuildScopesWithoutCursor();
  }

  /** Rebuilds every scope the client holds no cursor for; throws when a rebuild is refused. */
  async rebuildScopesWithoutCursor(): Promise<void> {
    for (const [scope, cursor] of this.cursors) {
      if (cursor !== null) continue;
      const run = await this.rebuildAll(scope);
      const last = run.pages[run.pages.length - 1];
      if (last?.status !== 200) throw new Error(`client "${this.name}" could not rebuild ${scope}: ${last?.status} ${last?.text}`);
    }
  }

  /** After a connect: rebuilds the scopes without a cursor, then pulls to the end; throws when a request is refused. */
  async catchUp(): Promise<void> {
    await this.rebuildScopesWithoutCursor();
    const last = (await this.pullAll()).at(-1);
    if (last?.status !== 200) throw new Error(`client "${this.name}" could not pull: ${last?.status} ${last?.text.slice(0, 300)}`);
  }

  tableSchema(name: string): TableSchema {
    const table = this.manifest?.tables.find((t) => t.name === name || t.table_id === name);
    if (!table) throw new Error(`client "${this.name}" has no manifest table "${name}" (connect first)`);
    return table;
  }

  tableId(name: string): string {
    return this.tableSchema(name).table_id;
  }

  fieldId(table: string, column: string): string {
    const field = this.tableSchema(table).fields.find((f) => f.name === column || f.field_id === column);
    if (!field) throw new Error(`table "${table}" has no field "${column}" in the manifest of client "${this.name}"`);
    return field.field_id;
  }

  fieldName(table: string, fieldId: string): string {
    return this.tableSchema(table).fields.find((f) => f.field_id === fieldId)?.name ?? fieldId;
  }

  /** A row keyed by field ids, read back keyed by column names. */
  namedRow(table: string, row: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(row).map(([id, value]) => [this.fieldName(table, id), value]));
  }

  pk(table: string, value: unknown): Json {
    const shape = this.tableSchema(table);
    return { [shape.primary_key_field_id]: value };
  }

  mutation(spec: MutationSpec): Json {
    const shape = this.tableSchema(spec.table);
    const columns = spec.columns === undefined ? undefined : Object.fromEntries(Object.entries(spec.columns).map(([name, value]) => [this.fieldId(spec.table, name), value]));
    return {
      mutation_id: spec.mutation_id ?? randomUUID(),
      table: shape.table_id,
      pk: { [shape.primary_key_field_id]: spec.pk },
      authored_schema: { ...this.schema },
      op: spec.op,
      client_version: spec.client_version ?? microsecondNow(),
      ...(spec.base_version === undefined ? {} : { base_version: spec.base_version }),
      ...(spec.op === 'delete' || columns === undefined ? {} : { columns }),
    };
  }
}

/** The current instant in the canonical wire form (UTC, six fraction digits). */
export function microsecondNow(): string {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
