/**
 * The valid starting point every fuzzed request is made from, set up through
 * the adapter and the wire like any client would: two users (A and B) with a
 * connected client each, a table with two of A's rows when the adapter can
 * provision one (else the first table the manifest lists, else a table id
 * the server does not know), A's scope rebuilt and pulled once so an
 * incremental cursor and row versions exist. From it come one valid request
 * per endpoint, which the profile then breaks one way at a time.
 *
 * Every row of the provisioned table is in A's scope whatever its values: a
 * rule that read a column clients write would let a fuzzed value name any
 * text as a scope, which a server must quarantine at capture (the
 * membership contract), and the profile is about what the server does with
 * requests, not with the rules an application registers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerAdapter } from '../adapters/server.ts';
import type { Endpoint } from './types.ts';

export const USER_A = 'robustness-a';
export const USER_B = 'robustness-b';
const TABLE = 'robustness_notes';
const CLIENT_VERSION = '2026-01-01T00:00:00.000000Z';

type Json = Record<string, unknown>;

export interface SchemaRef {
  version: number;
  hash: string;
}

export interface ClientState {
  userId: string;
  token: string;
  clientId: string;
  generation: number;
  scopeSetVersion: number;
  scope: string;
  /** An incremental cursor of `scope`, when the fixture could get one. */
  cursor: string | null;
}

export interface TableInfo {
  tableId: string;
  pkField: string;
  pkType: string;
  /** Writable field ids with their types. */
  writable: { id: string; type: string }[];
  /** Keys and versions of existing rows (for update and delete), when the fixture could read them. */
  rows: { pk: unknown; version: string }[];
  /** Whether the server registered this table (otherwise it is an id the server does not know). */
  known: boolean;
}

export interface Fixture {
  schema: SchemaRef;
  a: ClientState;
  b: ClientState;
  table: TableInfo;
  /** Valid requests, one per endpoint; every fuzzed request starts as a copy of one of these. */
  bases: Record<Endpoint, Json>;
  /** What the set-up could not do, said once in the output. */
  notes: string[];
}

/** The profile cannot start: the server did not let a client set up the valid starting point. */
export class FixtureError extends Error {}

/** A JSON POST with a bearer token; returns status and parsed body (undefined when not JSON). */
export async function postJson(baseUrl: string, path: string, token: string, body: unknown): Promise<{ status: number; json: Json | undefined }> {
  const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  let json: Json | undefined;
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = undefined;
  }
  return { status: response.status, json };
}

const describe = (what: string, r: { status: number; json: Json | undefined }) => `${what} answered ${r.status} ${JSON.stringify(r.json ?? null).slice(0, 200)}`;

async function provisionTable(server: ServerAdapter, notes: string[]): Promise<void> {
  if (!server.provision) {
    notes.push('no table provisioned: the adapter has no provision capability (push is fuzzed against the tables the manifest lists)');
    return;
  }
  try {
    await server.provision.exec(`
CREATE TABLE public.${TABLE} (id text PRIMARY KEY, body text NOT NULL DEFAULT '', n integer,
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
CREATE FUNCTION public.${TABLE}_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:${USER_A}'; END;
SELECT synchro.synchro_register_table('public.${TABLE}', membership_fn => 'public.${TABLE}_scopes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
INSERT INTO public.${TABLE} (id, body, n) VALUES ('r-1', 'first', 1), ('r-2', 'second', 2);`);
    await server.capture?.awaitMaterialized(30_000);
  } catch (error) {
    notes.push(`no table provisioned (${(error as Error).message.split('\n')[0]}); push is fuzzed against the tables the manifest lists`);
  }
}

interface ManifestTable {
  table_id: string;
  name: string;
  primary_key_field_id: string;
  fields: { field_id: string; type: string; writable: boolean }[];
}

function tableFrom(manifest: Json | undefined): TableInfo {
  const tables = ((manifest?.tables as ManifestTable[] | undefined) ?? []).filter((t) => t.fields.some((f) => f.field_id === t.primary_key_field_id));
  const chosen = tables.find((t) => t.name === TABLE) ?? tables[0];
  if (chosen === undefined) return { tableId: 'robustness_missing', pkField: 'id', pkType: 'string', writable: [{ id: 'body', type: 'string' }], rows: [], known: false };
  const pk = chosen.fields.find((f) => f.field_id === chosen.primary_key_field_id);
  return {
    tableId: chosen.table_id,
    pkField: chosen.primary_key_field_id,
    pkType: pk?.type ?? 'string',
    writable: chosen.fields.filter((f) => f.writable).map((f) => ({ id: f.field_id, type: f.type })),
    rows: [],
    known: true,
  };
}

async function connectFresh(baseUrl: string, userId: string, token: string, notes: string[]): Promise<{ state: ClientState; schema: SchemaRef; manifest: Json | undefined }> {
  const clientId = `robustness-client-${userId.slice(-1)}-${randomBytes(4).toString('hex')}`;
  const body = { client_id: clientId, platform: 'robustness', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} };
  const r = await postJson(baseUrl, '/sync/connect', token, body);
  if (r.status !== 200 || r.json === undefined) throw new FixtureError(`a fresh client could not connect: ${describe('connect', r)}`);
  const schema = r.json.schema as SchemaRef;
  const added = ((r.json.scopes as { add?: { id: string }[] } | undefined)?.add ?? []).map((s) => s.id);
  const scope = added.find((s) => s === `user:${userId}`) ?? added[0] ?? `user:${userId}`;
  if (added.length === 0) notes.push(`connect assigned ${userId} no scope; pull and rebuild are fuzzed with ${scope}`);
  return {
    state: { userId, token, clientId, generation: Number(r.json.client_generation), scopeSetVersion: Number(r.json.scope_set_version), scope, cursor: null },
    schema: { version: schema.version, hash: schema.hash },
    manifest: r.json.schema_definition as Json | undefined,
  };
}

/** Rebuilds the client's scope to get an incremental cursor and the rows' versions; then pulls once from it. */
async function rebuildAndPull(baseUrl: string, state: ClientState, schema: SchemaRef, table: TableInfo, notes: string[]): Promise<void> {
  const common = { client_id: state.clientId, client_generation: state.generation, schema };
  const rebuildId = randomUUID();
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const r = await postJson(baseUrl, '/sync/rebuild', state.token, { ...common, scope: state.scope, rebuild_id: rebuildId, cursor, limit: 1000 });
    if (r.status !== 200 || r.json === undefined) {
      notes.push(`${describe('the fixture rebuild', r)}; pull is fuzzed from a null cursor`);
      return;
    }
    for (const record of (r.json.records as { table: string; pk: Json; server_version: string }[] | undefined) ?? []) {
      if (record.table === table.tableId) table.rows.push({ pk: Object.values(record.pk)[0], version: record.server_version });
    }
    if (r.json.has_more !== true) {
      state.cursor = typeof r.json.final_scope_cursor === 'string' ? r.json.final_scope_cursor : null;
      break;
    }
    cursor = r.json.cursor as string;
  }
  const pull = await postJson(baseUrl, '/sync/pull', state.token, { ...common, scope_set_version: state.scopeSetVersion, scopes: { [state.scope]: { cursor: state.cursor } }, limit: 1000 });
  if (pull.status !== 200 || pull.json === undefined) {
    notes.push(describe('the fixture pull', pull));
    return;
  }
  const issued = (pull.json.scope_cursors as Record<string, string> | undefined)?.[state.scope];
  if (typeof issued === 'string') state.cursor = issued;
  state.scopeSetVersion = Number(pull.json.scope_set_version);
}

function keyValue(table: TableInfo, n: number): unknown {
  if (table.pkType === 'int') return 2_000_000_000 + n;
  if (table.pkType === 'int64') return String(9_000_000_000_000 + n);
  return `robustness-new-${n}`;
}

function sampleValue(type: string): unknown {
  const samples: Record<string, unknown> = { string: 'x', int: 1, int64: '1', decimal: '1.5', float: 1.5, boolean: true, datetime: CLIENT_VERSION, date: '2026-01-01', time: '00:00:00.000000', json: '{}', bytes: 'AQ' };
  return samples[type] ?? null;
}

function pushBase(f: { a: ClientState; schema: SchemaRef; table: TableInfo }): Json {
  const { table, schema } = f;
  const field = table.writable[0];
  const columns = field === undefined ? {} : { [field.id]: sampleValue(field.type) };
  const mutation = (op: string, pk: unknown, extra: Json) => ({ mutation_id: randomUUID(), table: table.tableId, pk: { [table.pkField]: pk }, authored_schema: schema, op, client_version: CLIENT_VERSION, ...extra });
  const [first, second] = table.rows;
  return {
    client_id: f.a.clientId,
    client_generation: f.a.generation,
    batch_id: randomUUID(),
    schema,
    mutations: [
      mutation('insert', keyValue(table, 1), { columns }),
      mutation('update', first?.pk ?? keyValue(table, 2), { base_version: first?.version ?? 'robustness-v1', columns: field === undefined ? { [table.pkField]: keyValue(table, 2) } : columns }),
      mutation('delete', second?.pk ?? keyValue(table, 3), { base_version: second?.version ?? 'robustness-v2' }),
    ],
  };
}

export async function setUpFixture(server: ServerAdapter): Promise<Fixture> {
  try {
    return await setUp(server);
  } catch (error) {
    if (error instanceof FixtureError) throw error;
    throw new FixtureError(`setting up the fixture failed: ${(error as Error).message}`);
  }
}

async function setUp(server: ServerAdapter): Promise<Fixture> {
  const notes: string[] = [];
  await provisionTable(server, notes);
  const [tokenA, tokenB] = await Promise.all([server.token(USER_A), server.token(USER_B)]);
  const first = await connectFresh(server.baseUrl, USER_A, tokenA, notes);
  const second = await connectFresh(server.baseUrl, USER_B, tokenB, notes);
  const manifest = first.manifest ?? ((await fetch(`${server.baseUrl}/sync/schema`).then((r) => r.json()).catch(() => undefined)) as { manifest?: Json } | undefined)?.manifest;
  const table = tableFrom(manifest);
  if (!table.known) notes.push('the manifest lists no table: push is fuzzed against a table id the server does not know');
  const schema = first.schema;
  const a = first.state;
  const b = second.state;
  await rebuildAndPull(server.baseUrl, a, schema, table, notes);
  const common = { client_id: a.clientId, client_generation: a.generation, schema };
  const bases: Record<Endpoint, Json> = {
    connect: { client_id: a.clientId, client_generation: a.generation, platform: 'robustness', app_version: '1.0.0', protocol_version: 3, schema, scope_set_version: a.scopeSetVersion, known_scopes: { [a.scope]: { cursor: a.cursor } } },
    push: pushBase({ a, schema, table }),
    pull: { ...common, scope_set_version: a.scopeSetVersion, scopes: { [a.scope]: { cursor: a.cursor } }, limit: 100 },
    rebuild: { ...common, scope: a.scope, rebuild_id: randomUUID(), cursor: null, limit: 100 },
  };
  return { schema, a, b, table, bases, notes };
}
