/**
 * Where a push's time goes: the push bench's table and batches (100 inserts
 * each, the capture worker running), with every database statement of the
 * process timed by its text, literals and parameters folded so the same
 * statement counts as one, and kept apart by session (the server's pool, the
 * capture worker). A diagnostic, not a goal: it prints no RESULT line.
 *
 *   node bench/push/trace.ts [--batches 10] [--top 25]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import { startCluster } from '../../reference/server/db/index.ts';
import { positiveInteger } from '../lib/report.ts';
import { printTrace, traceStatements } from '../lib/statement-trace.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '10' }, top: { type: 'string', default: '25' } } });
  const batches = positiveInteger('batches', values.batches, 1000);
  const top = positiveInteger('top', values.top, 1000);
  const { seen, on } = traceStatements();
  const cluster = await startCluster(process.env, 'disposable');
  try {
    await cluster.createTemplate('bench_push_trace');
    const url = cluster.urlFor('bench_push_trace');
    const sql = new pg.Client({ connectionString: url, application_name: 'bench' });
    await sql.connect();
    await sql.query(`CREATE TABLE public.items (id text PRIMARY KEY, label text NOT NULL, qty integer);
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
    const pushBatch = (b: number) => ({
      client_id: 'bench',
      client_generation: c.client_generation,
      batch_id: randomUUID(),
      schema,
      mutations: Array.from({ length: 100 }, (_, k) => ({
        mutation_id: randomUUID(),
        table: table.table_id,
        pk: { [fid('id')]: `b${b}-${k}` },
        authored_schema: schema,
        op: 'insert',
        client_version: '2026-09-01T08:00:00.000000Z',
        columns: { [fid('label')]: `item ${k}`, [fid('qty')]: k },
      })),
    });
    await fetch(`${server.url}/sync/push`, { method: 'POST', headers: auth, body: JSON.stringify(pushBatch(-1)) });
    await server.capture?.catchUp(60_000);
    on.value = true;
    const wall: number[] = [];
    for (let b = 0; b < batches; b++) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/sync/push`, { method: 'POST', headers: auth, body: JSON.stringify(pushBatch(b)) });
      await res.text();
      if (res.status !== 200) throw new Error(`push answered ${res.status}`);
      wall.push(performance.now() - t0);
    }
    await server.capture?.catchUp(60_000);
    on.value = false;
    const total = wall.reduce((a, b) => a + b, 0);
    console.log(`${batches} pushes of 100 inserts: ${(total / batches).toFixed(1)} ms per push (wall)`);
    printTrace(seen, batches, 'push', top);
    await server.close();
    await sql.end();
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`trace failed: ${(e as Error).message}\n`);
  process.exit(1);
});
