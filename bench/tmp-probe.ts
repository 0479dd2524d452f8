import { benchCluster, drain, insertRows, pullBody, startBench } from './pull/setup.ts';
const cluster = await benchCluster(false);
const b = await startBench(cluster, 'probe');
await insertRows(b.sql, 1, Number(process.argv[2] ?? 10000));
await b.server.capture?.catchUp(600000);
const cursors = { ...b.cursors };
await drain(b, cursors, 10000);
for (let i = 0; i < 8; i++) {
  await b.sql.query('INSERT INTO public.items (id, grp, label) VALUES ($1, $2, $3)', [`q${i}`, i % 4, 'x']);
  let t = performance.now();
  await b.server.capture?.catchUp(10000);
  const cap = performance.now() - t;
  t = performance.now();
  const r = await b.post('/sync/pull', pullBody(b, cursors, 1000));
  Object.assign(cursors, r.json.scope_cursors);
  const p1 = performance.now() - t;
  t = performance.now();
  const r2 = await b.post('/sync/pull', pullBody(b, cursors, 1000));
  Object.assign(cursors, r2.json.scope_cursors);
  const p2 = performance.now() - t;
  console.log(`catchUp ${cap.toFixed(1)} ms, pull with change ${p1.toFixed(1)} ms (${(r.json.changes as unknown[]).length}), steady pull ${p2.toFixed(1)} ms`);
}
await b.close();
await cluster.stop();
