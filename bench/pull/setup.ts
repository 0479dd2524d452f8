/**
 * Shared setup of the pull and capture benchmarks: an embedded database with
 * one registered table whose rows fall into four scopes (the client's own and
 * three shared ones, by the row's `grp`), a server with the capture worker,
 * and a connected client holding a cursor for every scope.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type RunningServer, startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

export const SCOPES = ['s1', 's2', 's3', 'user:bench'];

export interface Bench {
  cluster: Cluster;
  server: RunningServer;
  sql: pg.Client;
  post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }>;
  envelope: { client_id: string; client_generation: number; schema: { version: number; hash: string } };
  cursors: Record<string, string>;
  close(): Promise<void>;
}

export async function startBench(name: string): Promise<Bench> {
  const cluster = await startCluster();
  await cluster.createTemplate(name);
  const url = cluster.urlFor(name);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  await sql.query(`CREATE TABLE public.items (id text PRIMARY KEY, grp integer NOT NULL, label text NOT NULL, qty integer);
    SELECT synchro.synchro_prepare_projection_view('public.items');
    CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
      SELECT CASE WHEN grp = 0 THEN 'user:bench' ELSE 's' || grp END FROM synchro_projection.items WHERE id = p_id;
    END;
    SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes');
    SELECT synchro.synchro_register_shared_scope(s) FROM unnest(ARRAY['s1', 's2', 's3']) s;`);
  const server = await startServer({ databaseUrl: url, jwtSecret: 'bench', log: () => undefined, capture: true });
  const headers = { authorization: `Bearer ${await mintToken('bench', secretKey('bench'))}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const c = await post('/sync/connect', { client_id: 'bench', platform: 'bench', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });
  if (c.status !== 200) throw new Error(`connect failed: ${JSON.stringify(c.json)}`);
  const schema = c.json.schema as { version: number; hash: string };
  const envelope = { client_id: 'bench', client_generation: c.json.client_generation as number, schema: { version: schema.version, hash: schema.hash } };
  await server.capture?.catchUp(60_000);
  // Each scope starts empty; its rebuild's final cursor is where incremental pulls begin.
  const cursors: Record<string, string> = {};
  for (const scope of SCOPES) {
    const r = await post('/sync/rebuild', { ...envelope, scope, rebuild_id: randomUUID(), cursor: null, limit: 1000 });
    if (r.status !== 200) throw new Error(`rebuild failed: ${JSON.stringify(r.json)}`);
    cursors[scope] = r.json.final_scope_cursor as string;
  }
  return {
    cluster,
    server,
    sql,
    post,
    envelope,
    cursors,
    async close() {
      await server.close();
      await sql.end();
      await cluster.stop();
    },
  };
}

export function pullBody(b: Bench, cursors: Record<string, string>, limit: number) {
  return { ...b.envelope, scope_set_version: 1, scopes: Object.fromEntries(Object.entries(cursors).map(([k, v]) => [k, { cursor: v }])), limit };
}
