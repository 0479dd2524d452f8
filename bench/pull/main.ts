/**
 * Pull throughput of the reference server: a full incremental drain of
 * --rows rows (default 50,000) spread over four scopes, with pages of 1,000,
 * in rows per second, and its ratio to one indexed SELECT of the same rows
 * from the source table in the same run. Loopback only; bounded page count.
 *
 *   node bench/pull/main.ts [--rows 50000]
 */
import { parseArgs } from 'node:util';
import { pullBody, startBench } from './setup.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rows: { type: 'string', default: '50000' } } });
  const rows = Number(values.rows);
  if (!Number.isInteger(rows) || rows < 1 || rows > 200_000) throw new Error('--rows must be 1..200000');
  const b = await startBench('bench_pull');
  try {
    const load0 = performance.now();
    await b.sql.query(`INSERT INTO public.items (id, grp, label, qty) SELECT 'i' || lpad(g::text, 6, '0'), g % 4, 'item ' || g, g FROM generate_series(1, $1) g`, [rows]);
    await b.server.capture?.catchUp(1_800_000);
    const captureSeconds = (performance.now() - load0) / 1000;

    const cursors = { ...b.cursors };
    let delivered = 0;
    const t0 = performance.now();
    for (let page = 0; page < Math.ceil(rows / 1000) + 10; page++) {
      const r = await b.post('/sync/pull', pullBody(b, cursors, 1000));
      if (r.status !== 200) throw new Error(`pull failed: ${JSON.stringify(r.json)}`);
      delivered += (r.json.changes as unknown[]).length;
      Object.assign(cursors, r.json.scope_cursors);
      if (r.json.has_more !== true) break;
    }
    const pullSeconds = (performance.now() - t0) / 1000;
    if (delivered !== rows) throw new Error(`drain delivered ${delivered} of ${rows} rows`);

    const t1 = performance.now();
    const plain = await b.sql.query('SELECT id, grp, label, qty FROM public.items ORDER BY id');
    const selectSeconds = (performance.now() - t1) / 1000;
    if (plain.rows.length !== rows) throw new Error('the plain SELECT saw another row count');

    const pullRate = rows / pullSeconds;
    const selectRate = rows / selectSeconds;
    console.log(`capture: ${rows} rows materialized in ${captureSeconds.toFixed(1)} s (setup, not timed below)`);
    console.log(`pull drain: ${rows} rows across 4 scopes in ${pullSeconds.toFixed(2)} s = ${Math.round(pullRate)} rows/s`);
    console.log(`indexed SELECT of the same rows: ${selectSeconds.toFixed(3)} s = ${Math.round(selectRate)} rows/s`);
    console.log(`ratio pull / SELECT: ${(pullRate / selectRate).toFixed(4)}`);
  } finally {
    await b.close();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
