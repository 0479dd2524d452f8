/**
 * Shared setup of the server benches: one registered table whose rows fall
 * into four scopes (the client's own and three shared ones, by the row's
 * `grp`), a server with the capture worker, and a connected client holding
 * a cursor for every scope. Several benches can share one cluster, each on
 * its own database.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type RunningServer, startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import { type Cluster, type ClusterMode, startCluster } from '../../reference/server/db/index.ts';

export const SCOPES = ['s1', 's2', 's3', 'user:bench'];

/** What a pull of one client carries besides its cursors. */
export type Envelope = { client_id: string; client_generation: number; schema: { version: number; hash: string } };

/** A connected client whose scopes are rebuilt: its envelope and the cursor of every scope. */
export interface BenchClient {
  envelope: Envelope;
  cursors: Record<string, string>;
}

export interface Bench extends BenchClient {
  server: RunningServer;
  sql: pg.Client;
  post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }>;
  /** Another client of the bench user, connected and rebuilt at the rows present now. */
  connectClient(clientId: string): Promise<BenchClient>;
  close(): Promise<void>;
}

/** The cluster every bench of one process shares: disposable unless --durable was given. */
export async function benchCluster(durable: boolean): Promise<Cluster> {
  return await startCluster(process.env, durable ? ('durable' satisfies ClusterMode) : 'disposable');
}

export async function startBench(cluster: Cluster, name: string): Promise<Bench> {
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
  const connectClient = async (clientId: string): Promise<BenchClient> => {
    const c = await post('/sync/connect', { client_id: clientId, platform: 'bench', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });
    if (c.status !== 200) throw new Error(`connect failed: ${JSON.stringify(c.json)}`);
    const schema = c.json.schema as { version: number; hash: string };
    const envelope = { client_id: clientId, client_generation: c.json.client_generation as number, schema: { version: schema.version, hash: schema.hash } };
    await server.capture?.catchUp(60_000);
    // A rebuild's final cursor is where the scope's incremental pulls begin.
    const cursors: Record<string, string> = {};
    for (const scope of SCOPES) {
      const r = await post('/sync/rebuild', { ...envelope, scope, rebuild_id: randomUUID(), cursor: null, limit: 1000 });
      if (r.status !== 200) throw new Error(`rebuild failed: ${JSON.stringify(r.json)}`);
      // A client is connected before the rows are loaded, so its start cursor is the end of one page.
      if (r.json.has_more === true) throw new Error(`the rebuild of ${scope} for ${clientId} needed more than one page: connect the bench's clients before loading rows`);
      cursors[scope] = r.json.final_scope_cursor as string;
    }
    return { envelope, cursors };
  };
  const { envelope, cursors } = await connectClient('bench');
  return {
    server,
    sql,
    post,
    envelope,
    cursors,
    connectClient,
    async close() {
      await server.close();
      await sql.end();
    },
  };
}

export function pullBody(b: Bench, cursors: Record<string, string>, limit: number, envelope: Envelope = b.envelope) {
  return { ...envelope, scope_set_version: 1, scopes: Object.fromEntries(Object.entries(cursors).map(([k, v]) => [k, { cursor: v }])), limit };
}

/** Rows `from`..`to` (inclusive) of the bench table, as one multi-row INSERT per `chunk` rows, each its own transaction. */
export async function insertRows(sql: pg.Client, from: number, to: number, chunk = 1000): Promise<void> {
  for (let at = from; at <= to; at += chunk) {
    await sql.query(
      `INSERT INTO public.items (id, grp, label, qty) SELECT 'i' || lpad(g::text, 7, '0'), g % 4, 'item ' || g, g FROM generate_series($1::int, $2::int) g`,
      [at, Math.min(to, at + chunk - 1)],
    );
  }
}

/** Pulls until every scope is at the boundary (as the bench's client unless another is given); returns the number of changes delivered. */
export async function drain(b: Bench, cursors: Record<string, string>, maxPages: number, limit = 1000, envelope: Envelope = b.envelope): Promise<number> {
  let delivered = 0;
  for (let page = 0; page < maxPages; page++) {
    const r = await b.post('/sync/pull', pullBody(b, cursors, limit, envelope));
    if (r.status !== 200) throw new Error(`pull failed: ${JSON.stringify(r.json)}`);
    delivered += (r.json.changes as unknown[]).length;
    Object.assign(cursors, r.json.scope_cursors);
    if (r.json.has_more !== true) return delivered;
  }
  throw new Error(`the drain did not finish in ${maxPages} pages`);
}

/**
 * Commits probe row `i` on the source table and pulls in pages of 1,000
 * until a change of it comes back (at most 10 s): the commit-to-pull-visible
 * time in milliseconds and how many pulls it took.
 */
export async function probePullVisible(b: Bench, cursors: Record<string, string>, i: number): Promise<{ ms: number; pulls: number }> {
  const id = `p${String(i).padStart(6, '0')}`;
  await b.sql.query('INSERT INTO public.items (id, grp, label) VALUES ($1, $2, $3)', [id, i % 4, 'latency probe']);
  const t0 = performance.now();
  const deadline = t0 + 10_000;
  for (let pulls = 1; ; pulls++) {
    const r = await b.post('/sync/pull', pullBody(b, cursors, 1000));
    if (r.status !== 200) throw new Error(`pull failed: ${JSON.stringify(r.json)}`);
    Object.assign(cursors, r.json.scope_cursors);
    if ((r.json.changes as Array<{ pk: Record<string, string> }>).some((c) => Object.values(c.pk)[0] === id)) return { ms: performance.now() - t0, pulls };
    if (performance.now() > deadline) throw new Error(`row ${id} was not pull-visible within 10 s`);
  }
}
