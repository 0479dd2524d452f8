/**
 * What the push bench and the push trace share: a database with the
 * registered table `public.items` (and any extra SQL), the reference server
 * on it with its capture worker running, a connected bench client, and
 * batches of fresh inserts in the client's manifest.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type RunningServer, startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import type { Cluster } from '../../reference/server/db/index.ts';

export interface PushBench {
  server: RunningServer;
  /** A plain session on the bench database. */
  sql: pg.Client;
  /** POST /sync/push of batch `b` (`size` inserts with keys of their own), answered and checked for 200. */
  push(b: number, size: number): Promise<{ accepted: number }>;
  close(): Promise<void>;
}

export async function startPushBench(cluster: Cluster, database: string, extraSql = ''): Promise<PushBench> {
  await cluster.createTemplate(database);
  const url = cluster.urlFor(database);
  const sql = new pg.Client({ connectionString: url, application_name: 'bench' });
  await sql.connect();
  await sql.query(`CREATE TABLE public.items (id text PRIMARY KEY, label text NOT NULL, qty integer);
    ${extraSql}
    SELECT synchro.synchro_register_table('public.items');`);
  const server = await startServer({ databaseUrl: url, jwtSecret: 'bench', log: () => undefined, capture: true });
  const auth = { authorization: `Bearer ${await mintToken('bench-user', secretKey('bench'))}`, 'content-type': 'application/json' };
  const connect = await fetch(`${server.url}/sync/connect`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ client_id: 'bench', platform: 'bench', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }),
  });
  const c = (await connect.json()) as { client_generation: number; schema: { version: number; hash: string }; schema_definition: { tables: Array<{ table_id: string; fields: Array<{ field_id: string; name: string }> }> } };
  const table = c.schema_definition.tables[0];
  if (table === undefined) throw new Error('no table in the manifest');
  const fid = (name: string) => table.fields.find((f) => f.name === name)?.field_id as string;
  const schema = { version: c.schema.version, hash: c.schema.hash };
  const batch = (b: number, size: number) => ({
    client_id: 'bench',
    client_generation: c.client_generation,
    batch_id: randomUUID(),
    schema,
    mutations: Array.from({ length: size }, (_, k) => ({
      mutation_id: randomUUID(),
      table: table.table_id,
      pk: { [fid('id')]: `b${b}-${k}` },
      authored_schema: schema,
      op: 'insert',
      client_version: '2026-09-01T08:00:00.000000Z',
      columns: { [fid('label')]: `item ${k}`, [fid('qty')]: k },
    })),
  });
  return {
    server,
    sql,
    async push(b, size) {
      const res = await fetch(`${server.url}/sync/push`, { method: 'POST', headers: auth, body: JSON.stringify(batch(b, size)) });
      const body = (await res.json()) as { accepted?: unknown[] };
      if (res.status !== 200 || body.accepted === undefined) throw new Error(`push answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return { accepted: body.accepted.length };
    },
    async close() {
      await server.close();
      await sql.end();
    },
  };
}
