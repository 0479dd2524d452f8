/**
 * Push throughput of the reference server, with its capture worker running
 * (as in production, it decodes and materializes what push commits while
 * push goes on): accepted mutations per second for batches of 100 inserts
 * over HTTP, against inserting the same rows with plain parameterized SQL,
 * one single-row INSERT at a time, 100 per transaction, measured in the same
 * run on the same embedded database. Loopback only; bounded batch counts.
 *
 *   node bench/push/main.ts [--batches 30] [--durable]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startServer } from '../../reference/server/app.ts';
import { mintToken, secretKey } from '../../reference/server/auth.ts';
import { startCluster } from '../../reference/server/db/index.ts';
import { atLeast, durabilityLine, fmt, printResult } from '../lib/report.ts';

const BATCH = 100;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '30' }, durable: { type: 'boolean', default: false } } });
  const batches = Number(values.batches);
  if (!Number.isInteger(batches) || batches < 1 || batches > 1000) throw new Error('--batches must be 1..1000');
  console.log(durabilityLine(values.durable));
  const cluster = await startCluster(process.env, values.durable ? 'durable' : 'disposable');
  try {
    await cluster.createTemplate('bench_push');
    const url = cluster.urlFor('bench_push');
    const sql = new pg.Client({ connectionString: url });
    await sql.connect();
    await sql.query(`CREATE TABLE public.items (id text PRIMARY KEY, label text NOT NULL, qty integer);
      CREATE TABLE public.plain_items (id text PRIMARY KEY, label text NOT NULL, qty integer);
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
      mutations: Array.from({ length: BATCH }, (_, k) => ({
        mutation_id: randomUUID(),
        table: table.table_id,
        pk: { [fid('id')]: `b${b}-${k}` },
        authored_schema: schema,
        op: 'insert',
        client_version: '2026-09-01T08:00:00.000000Z',
        columns: { [fid('label')]: `item ${k}`, [fid('qty')]: k },
      })),
    });

    // Warm up both paths once so connection setup and plan caching do not count.
    await fetch(`${server.url}/sync/push`, { method: 'POST', headers: auth, body: JSON.stringify(pushBatch(-1)) });
    const t0 = performance.now();
    let accepted = 0;
    for (let b = 0; b < batches; b++) {
      const res = await fetch(`${server.url}/sync/push`, { method: 'POST', headers: auth, body: JSON.stringify(pushBatch(b)) });
      const body = (await res.json()) as { accepted?: unknown[] };
      if (res.status !== 200 || body.accepted === undefined) throw new Error(`push answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      accepted += body.accepted.length;
    }
    const pushSeconds = (performance.now() - t0) / 1000;

    const plainBatch = async (b: number) => {
      await sql.query('BEGIN');
      for (let k = 0; k < BATCH; k++) await sql.query('INSERT INTO public.plain_items (id, label, qty) VALUES ($1, $2, $3)', [`b${b}-${k}`, `item ${k}`, k]);
      await sql.query('COMMIT');
    };
    await plainBatch(-1);
    const t1 = performance.now();
    for (let b = 0; b < batches; b++) await plainBatch(b);
    const plainSeconds = (performance.now() - t1) / 1000;

    const pushRate = accepted / pushSeconds;
    const plainRate = (batches * BATCH) / plainSeconds;
    // Capture catches up on what push committed (not timed above; it ran alongside).
    const c0 = performance.now();
    await server.capture?.catchUp(600_000);
    console.log(`push: ${accepted} mutations in ${batches} batches of ${BATCH}: ${fmt(pushRate)} mutations/s; capture finished ${((performance.now() - c0) / 1000).toFixed(2)} s after the last push`);
    console.log(`single-row INSERT loop, ${BATCH} per transaction: ${fmt(plainRate)} rows/s`);
    printResult(atLeast('push with capture running', `${fmt(pushRate)} mutations/s`, `${fmt(plainRate)} rows/s`, pushRate / plainRate, 0.25));
    await server.close();
    await sql.end();
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).message}\n`);
  process.exit(1);
});
