/**
 * Command line export of a portable seed, for operators and for the harness
 * adapter (which runs it as its own process so the server's fault switches
 * in SYNCHRO_FAULTS apply to it as they do to the server):
 *
 *   node reference/server/seed/main.ts --database-url URL [--page-limit N] [--scope ID]...
 *
 * Prints one JSON line: `{"manifest":...,"pages":{...}}`, or the protocol
 * error body `{"error":{...}}` with exit status 3 when the export is refused.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SeedRequestError, SeedTransactionError } from './errors.ts';
import { exportSeed } from './export.ts';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { 'database-url': { type: 'string' }, 'page-limit': { type: 'string' }, scope: { type: 'string', multiple: true } },
  });
  const url = values['database-url'];
  if (url === undefined) {
    process.stderr.write('usage: seed/main.ts --database-url URL [--page-limit N] [--scope ID]...\n');
    return 2;
  }
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const limit = values['page-limit'] === undefined ? undefined : Number(values['page-limit']);
    const result = await exportSeed(db, { ...(limit === undefined ? {} : { pageLimit: limit }), ...(values.scope === undefined ? {} : { scopes: values.scope }) });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof SeedRequestError) {
      process.stdout.write(`${JSON.stringify(error.body())}\n`);
      return 3;
    }
    if (error instanceof SeedTransactionError) process.stderr.write(`${error.message}\n`);
    else throw error;
    return 1;
  } finally {
    await db.end();
  }
}

process.exitCode = await main();
