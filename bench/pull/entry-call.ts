/**
 * The entry-point call that ends every pull (core/entry-points.ts), on its
 * own: a pull page of --changes changes in canonical JSON is handed to
 * synchro.synchro_pull in its transaction, as the server hands it, against
 * the form the call had before decision 412 (the outcome as the JSON text of
 * {"status", "body"}, the body escaped inside it), measured in the same run:
 * --calls calls of each form, interleaved, on one database; every answer must
 * be the body byte for byte. A diagnostic with no goal of its own: it prints
 * the ratio, no RESULT line.
 *
 *   node bench/pull/entry-call.ts [--changes 1000] [--calls 100] [--durable]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { canonicalJson } from '../../harness/codec/index.ts';
import { commitThroughEntryPoint } from '../../reference/server/core/entry-points.ts';
import { durabilityLine, fmt, median, positiveInteger } from '../lib/report.ts';
import { benchCluster } from './setup.ts';

/** The call as it was made before decision 412: the outcome's JSON text, dollar-quoted with the former tag search. */
function formerCall(userId: string, body: string): string {
  const quoted = (text: string) => {
    let tag = '$synchro$';
    for (let n = 0; `${text}${tag}`.indexOf(tag) !== text.length; n++) tag = `$synchro${n}$`;
    return `${tag}${text}${tag}`;
  };
  return `SET LOCAL ROLE synchro_adapter; SELECT (r.c ->> 'status')::integer AS status, r.c ->> 'body' AS body FROM synchro.synchro_pull(${quoted(userId)}, ${quoted(JSON.stringify({ status: 200, body }))}::jsonb) AS r(c); COMMIT`;
}

/** A pull page of `n` changes shaped like the pull bench's (four scopes, one table). */
function pageBody(n: number): string {
  const changes = Array.from({ length: n }, (_, i) => {
    const id = `i${String(i).padStart(7, '0')}`;
    return { scope: i % 4 === 0 ? 'user:bench' : `s${i % 4}`, table: 'items', op: 'upsert', pk: { id }, server_version: String(100_000 + i), row: { id, grp: i % 4, label: `item ${i}`, qty: i }, row_checksum: { v: 1, a: 'sha256', d: (i % 256).toString(16).padStart(2, '0').repeat(32) } };
  });
  return canonicalJson({ changes, has_more: true, rebuild: [], scope_cursors: {}, scope_set_version: 1, scope_updates: { add: [], remove: [] } });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { changes: { type: 'string', default: '1000' }, calls: { type: 'string', default: '100' }, durable: { type: 'boolean', default: false } } });
  const changes = positiveInteger('changes', values.changes, 1000);
  const calls = positiveInteger('calls', values.calls, 10_000);
  console.log(durabilityLine(values.durable));
  const body = pageBody(changes);
  const cluster = await benchCluster(values.durable);
  try {
    await cluster.createTemplate('bench_entry_call');
    const db = new pg.Client({ connectionString: cluster.urlFor('bench_entry_call') });
    await db.connect();
    try {
      const current = async () => {
        await db.query('BEGIN');
        const t0 = performance.now();
        const r = await commitThroughEntryPoint(db as unknown as pg.PoolClient, 'pull', 'bench', body);
        const ms = performance.now() - t0;
        if (r.body !== body) throw new Error('the entry point answered another body');
        return ms;
      };
      const former = async () => {
        await db.query('BEGIN');
        const t0 = performance.now();
        const results = (await db.query(formerCall('bench', body))) as unknown as pg.QueryResult<{ body: string }>[];
        const ms = performance.now() - t0;
        if (results.find((r) => r.command === 'SELECT')?.rows[0]?.body !== body) throw new Error('the former call answered another body');
        return ms;
      };
      for (let i = 0; i < 10; i++) {
        await current();
        await former();
      }
      const ours: number[] = [];
      const theirs: number[] = [];
      // Alternating which form goes first, so drift in the machine's load falls on both alike.
      for (let i = 0; i < calls; i++) {
        if (i % 2 === 0) {
          ours.push(await current());
          theirs.push(await former());
        } else {
          theirs.push(await former());
          ours.push(await current());
        }
      }
      console.log(
        `entry-point call with a ${fmt(body.length)}-character pull body, median of ${calls} interleaved calls each: built outcome ${median(ours).toFixed(2)} ms, JSON-text outcome ${median(theirs).toFixed(2)} ms, ratio ${(median(ours) / median(theirs)).toFixed(2)}`,
      );
    } finally {
      await db.end();
    }
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
