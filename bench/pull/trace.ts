/**
 * Where a steady pull's time goes: on a fresh database of --rows rows (the
 * pull bench's table and scopes), times every database statement of --pulls
 * steady pulls by its text, then EXPLAIN ANALYZEs each single statement once
 * with the parameters it last ran with, inside a rolled-back repeatable-read
 * transaction as the pull runs it. A diagnostic, not a goal: it prints no
 * RESULT line. Run it at two sizes and compare the plans' row counts.
 *
 *   node bench/pull/trace.ts [--rows 1000] [--pulls 50] [--rounds 1] [--no-explain]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { fmt, median, positiveInteger } from '../lib/report.ts';
import { traceStatements } from '../lib/statement-trace.ts';
import { benchCluster, drain, insertRows, pullBody, startBench } from './setup.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ allowNegative: true, options: { rows: { type: 'string', default: '1000' }, pulls: { type: 'string', default: '50' }, rounds: { type: 'string', default: '1' }, explain: { type: 'boolean', default: true } } });
  const rows = positiveInteger('rows', values.rows, 1_000_000);
  const pulls = positiveInteger('pulls', values.pulls, 10_000);
  const rounds = positiveInteger('rounds', values.rounds, 100);
  // Keyed by the whole statement text, which the EXPLAIN below runs again.
  const { seen, on } = traceStatements((_session, text) => text);
  const cluster = await benchCluster(false);
  try {
    const name = `bench_trace_${rows}`;
    const b = await startBench(cluster, name);
    try {
      await insertRows(b.sql, 1, rows);
      await b.server.capture?.catchUp(1_800_000);
      const cursors = { ...b.cursors };
      await drain(b, cursors, Math.ceil(rows / 1000) + 10);
      for (let i = 0; i < 20; i++) await b.post('/sync/pull', pullBody(b, cursors, 1000));
      await b.server.capture?.catchUp(60_000);
      // Rounds of steady pulls and GET /ready, with the cluster's background work beside each: a
      // figure that falls from round to round is the setup's aftermath, not the pull.
      for (let round = 0; round < rounds; round++) {
        const activity = await b.sql.query<{ what: string }>(
          "SELECT coalesce(string_agg(left(query, 70), ' | '), 'none') AS what FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
        );
        const wall: number[] = [];
        const ready: number[] = [];
        const queryMs0 = [...seen.values()].reduce((a, s) => a + s.ms, 0);
        on.value = true;
        for (let i = 0; i < pulls; i++) {
          const t0 = performance.now();
          const r = await b.post('/sync/pull', pullBody(b, cursors, 1000));
          wall.push(performance.now() - t0);
          if (r.status !== 200 || (r.json.changes as unknown[]).length !== 0) throw new Error(`not a steady pull: ${r.status}`);
        }
        on.value = false;
        const queryMs = ([...seen.values()].reduce((a, s) => a + s.ms, 0) - queryMs0) / pulls;
        for (let i = 0; i < pulls; i++) {
          const t0 = performance.now();
          await (await fetch(`${b.server.url}/ready`)).text();
          ready.push(performance.now() - t0);
        }
        console.log(`${new Date().toISOString()} round ${round}: steady pull median ${median(wall).toFixed(2)} ms (statements ${queryMs.toFixed(2)} ms of it on average), GET /ready median ${median(ready).toFixed(2)} ms; autovacuum at the start: ${activity.rows[0]?.what}`);
      }
      const totalPulls = pulls * rounds;
      const maintained = await b.sql.query<{ relname: string; vacuumed: string | null; analyzed: string | null }>(
        "SELECT schemaname || '.' || relname AS relname, last_autovacuum::text AS vacuumed, last_autoanalyze::text AS analyzed FROM pg_stat_all_tables WHERE (last_autovacuum IS NOT NULL OR last_autoanalyze IS NOT NULL) AND schemaname NOT IN ('pg_catalog', 'pg_toast') ORDER BY greatest(last_autovacuum, last_autoanalyze)",
      );
      for (const m of maintained.rows) console.log(`autovacuum of ${m.relname}: vacuumed ${m.vacuumed ?? '-'}, analyzed ${m.analyzed ?? '-'}`);
      console.log(`now ${new Date().toISOString()}`);
      const ordered = [...seen].sort((x, y) => y[1].ms - x[1].ms);
      const total = ordered.reduce((a, [, s]) => a + s.count, 0);
      console.log(`${fmt(rows)} rows: ${(total / totalPulls).toFixed(1)} statements per steady pull (all clients of this process, the capture worker's included)`);
      for (const [text, s] of ordered) console.log(`${(s.ms / s.count).toFixed(3)} ms x ${(s.count / totalPulls).toFixed(2)}/pull  ${text.replace(/\s+/g, ' ').slice(0, 150)}`);
      const explainer = new pg.Client({ connectionString: cluster.urlFor(name) });
      explainer.on('error', () => undefined);
      await explainer.connect();
      try {
        for (const [text, s] of values.explain ? ordered : []) {
          if (!/^\s*(SELECT|WITH|INSERT|UPDATE|DELETE)/i.test(text) || text.includes(';')) continue;
          await explainer.query("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL ROLE synchro_owner");
          try {
            const plan = await explainer.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, s.values);
            console.log(`\n--- ${text.replace(/\s+/g, ' ').slice(0, 150)}`);
            for (const line of plan.rows) console.log(line['QUERY PLAN']);
          } catch (e) {
            console.log(`\n--- (not explained: ${(e as Error).message}) ${text.replace(/\s+/g, ' ').slice(0, 100)}`);
          } finally {
            await explainer.query('ROLLBACK');
          }
        }
      } finally {
        await explainer.end();
      }
    } finally {
      await b.close();
    }
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
