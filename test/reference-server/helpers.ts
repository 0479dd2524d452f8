/**
 * Shared setup for the reference server tests: one embedded cluster per test
 * file, a fresh database per test cloned from a template, the server started
 * in-process on that database, and small request helpers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import pg from 'pg';
import { type RunningServer, type StartOptions, startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

export const SECRET = 'reference-server-test-secret';
const TEMPLATE = 'tpl_reference_server';

export interface Env {
  cluster: Cluster;
}

export async function startEnv(): Promise<Env> {
  const cluster = await startCluster({});
  await cluster.createTemplate(TEMPLATE);
  return { cluster };
}

/** Starts the file's cluster before its tests and stops it after them; the getter reads it inside a test. */
export function useEnv(): () => Env {
  let env: Env | undefined;
  before(async () => {
    env = await startEnv();
  });
  after(async () => {
    await env?.cluster.stop();
  });
  return () => {
    if (env === undefined) throw new Error('the test cluster has not started');
    return env;
  };
}

/** Notes whose rows belong to `user:<owner>`, placed by a registered membership function over the projection. */
export const OWNED_NOTES_SQL = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
`;

/** Runs `fn` against a fresh database set up by `setupSql` and a server on it that runs the capture worker, and closes both. */
export async function withCaptureServer(env: Env, setupSql: string, fn: (h: Harness) => Promise<void>, start: Partial<StartOptions> = {}): Promise<void> {
  const h = await freshServer(env, setupSql, { capture: true, start });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** Waits until everything committed so far is materialized (the in-process worker's own wait). */
export const catchUp = (h: Harness, timeoutMs = 15_000) => (h.server.capture as NonNullable<RunningServer['capture']>).catchUp(timeoutMs);

/** Tests read response members freely; the wire schemas are checked separately. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected member by member in assertions
type Loose = any;

export interface Reply {
  status: number;
  text: string;
  json: Loose;
  headers: Headers;
}

export interface Harness {
  /** Connection URL of this test's database. */
  url: string;
  server: RunningServer;
  sql: pg.Client;
  token(user?: string): Promise<string>;
  /** POST with a bearer token for `user` (default u1); `user: ''` sends no Authorization header. */
  post(path: string, body: unknown, opts?: { user?: string; raw?: string; headers?: Record<string, string> }): Promise<Reply>;
  get(path: string): Promise<Reply>;
  /** POST to a test control endpoint (no credentials: the controls answer loopback peers only). */
  control(path: string, body: unknown): Promise<Reply>;
  close(): Promise<void>;
}

/** Reads a response into a Reply; a body that is not JSON leaves `json` undefined. */
export async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

let counter = 0;

/** A fresh database with the given setup SQL, and a running server on it (with extra start options if given). */
export async function freshServer(env: Env, setupSql: string, options: { capture?: boolean; start?: Partial<StartOptions> } = {}): Promise<Harness> {
  const name = `t_${process.pid}_${++counter}`;
  await env.cluster.cloneDatabase(TEMPLATE, name);
  const url = env.cluster.urlFor(name);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  await sql.query(setupSql);
  // SYNCHRO_TEST_LOG=1 shows the server's log lines (codes only) while debugging a test.
  const log = process.env.SYNCHRO_TEST_LOG === '1' ? (line: string) => process.stderr.write(`${line}\n`) : () => undefined;
  // SYNCHRO_TEST_WORKER_LOGIN=1 runs capture as the database's own worker login (decision 350).
  const worker = process.env.SYNCHRO_TEST_WORKER_LOGIN === '1' && options.capture === true ? { workerDatabaseUrl: await workerLoginUrl(env.cluster, name) } : {};
  const server = await startServer({ databaseUrl: url, jwtSecret: SECRET, log, capture: options.capture === true, ...worker, ...options.start });
  const token = (user = 'u1') => mintToken(user, secretKey(SECRET));
  const h: Harness = {
    url,
    server,
    sql,
    token,
    async post(path, body, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
      if (opts.user !== '') headers.authorization = `Bearer ${await token(opts.user)}`;
      return reply(await fetch(`${h.server.url}${path}`, { method: 'POST', headers, body: opts.raw ?? JSON.stringify(body) }));
    },
    get: async (path) => reply(await fetch(`${h.server.url}${path}`)),
    control: async (path, body) =>
      reply(await fetch(`${h.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })),
    async close() {
      // A test may have replaced the server (a restart); close whichever runs now.
      await h.server.close();
      await sql.end();
      await env.cluster.dropDatabase(name);
    },
  };
  return h;
}

/** A worker login for `database` (LOGIN REPLICATION NOINHERIT, in synchro_worker only), as a URL to it; dropped with the database. */
export async function workerLoginUrl(cluster: Cluster, database: string): Promise<string> {
  const { workerLogin } = await cluster.provisionRoles(database);
  const url = new URL(cluster.urlFor(database));
  url.username = workerLogin;
  return url.toString();
}

export const NOTES_SQL = `
CREATE TABLE public.notes (id text PRIMARY KEY, body text NOT NULL DEFAULT '', n integer CHECK (n IS NULL OR n >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
CREATE TABLE public.tags (id bigint PRIMARY KEY, label text NOT NULL);
SELECT synchro.synchro_register_table('public.notes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
SELECT synchro.synchro_register_table('public.tags');
`;

export interface Session {
  clientId: string;
  generation: number;
  schema: { version: number; hash: string };
  manifest: Loose;
  field(table: string, column: string): string;
  tableId(table: string): string;
}

export async function connect(h: Harness, user = 'u1', clientId = `c-${randomUUID()}`): Promise<Session> {
  const res = await h.post(
    '/sync/connect',
    { client_id: clientId, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} },
    { user },
  );
  if (res.status !== 200) throw new Error(`connect failed: ${res.text}`);
  const manifest = res.json.schema_definition;
  const tableOf = (name: string) => manifest.tables.find((t: { name: string }) => t.name === name);
  return {
    clientId,
    generation: res.json.client_generation,
    schema: { version: res.json.schema.version, hash: res.json.schema.hash },
    manifest,
    tableId: (name) => tableOf(name).table_id,
    field: (name, column) => tableOf(name).fields.find((f: { name: string }) => f.name === column).field_id,
  };
}

export const NOW = '2026-09-01T08:00:00.000000Z';

export function pushBody(s: Session, mutations: unknown[], extra: Record<string, unknown> = {}) {
  return { client_id: s.clientId, client_generation: s.generation, batch_id: randomUUID(), schema: s.schema, mutations, ...extra };
}

export function insertNote(s: Session, id: string, columns: Record<string, unknown> = {}) {
  return {
    mutation_id: randomUUID(),
    table: s.tableId('notes'),
    pk: { [s.field('notes', 'id')]: id },
    authored_schema: s.schema,
    op: 'insert',
    client_version: NOW,
    columns: Object.fromEntries(Object.entries(columns).map(([k, v]) => [s.field('notes', k), v])),
  };
}

export function updateNote(s: Session, id: string, base: string, columns: Record<string, unknown>) {
  return {
    mutation_id: randomUUID(),
    table: s.tableId('notes'),
    pk: { [s.field('notes', 'id')]: id },
    authored_schema: s.schema,
    op: 'update',
    client_version: NOW,
    base_version: base,
    columns: Object.fromEntries(Object.entries(columns).map(([k, v]) => [s.field('notes', k), v])),
  };
}

export function deleteRow(s: Session, table: 'notes' | 'tags', id: string | number, base: string) {
  return {
    mutation_id: randomUUID(),
    table: s.tableId(table),
    pk: { [s.field(table, 'id')]: typeof id === 'number' ? String(id) : id },
    authored_schema: s.schema,
    op: 'delete',
    client_version: NOW,
    base_version: base,
  };
}

/** Everything a push can change, as one comparable snapshot. */
export async function snapshot(h: Harness): Promise<string> {
  const q = async (sql: string) => JSON.stringify((await h.sql.query(sql)).rows);
  return [
    await q('SELECT * FROM synchro.push_batches ORDER BY batch_id'),
    await q('SELECT * FROM synchro.push_mutations ORDER BY mutation_id'),
    await q('SELECT table_id, pk_text, state, server_version FROM synchro.row_versions ORDER BY 1, 2'),
    await q('SELECT user_id, client_id, client_generation, accepted_write_epoch, scope_set_version FROM synchro.clients ORDER BY 1, 2'),
    await q('SELECT * FROM public.notes ORDER BY id'),
    await q('SELECT * FROM public.tags ORDER BY id'),
  ].join('\n');
}

/** A test control call that must succeed: POST `/__control/<path>`, its JSON answer. */
export async function controlOk(h: Harness, path: string, body: unknown = {}): Promise<Record<string, unknown>> {
  const res = await h.control(`/__control/${path}`, body);
  assert.equal(res.status, 200, res.text);
  return res.json as Record<string, unknown>;
}
