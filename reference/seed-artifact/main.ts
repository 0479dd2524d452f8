/**
 * Command line seed artifact builder:
 *
 *   node reference/seed-artifact/main.ts --database-url URL --out PATH [--page-limit N] [--fault NAME]...
 *
 * Exports every portable scope from the database in one transaction, checks
 * it, builds and verifies the SQLite file and publishes it at PATH. Prints one
 * JSON line: the build result (its `sha256` is the release evidence for the
 * published bytes). A refused build prints `{"error":{"check":...,"message":...}}`
 * and exits with status 3, leaving PATH as it was; bad arguments exit 2.
 * Faults (for tests) come from --fault or SYNCHRO_SEED_FAULT.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SeedRequestError } from '../server/seed/errors.ts';
import { buildSeedArtifact } from './build.ts';
import { SeedArtifactError } from './errors.ts';

const USAGE = 'usage: seed-artifact/main.ts --database-url URL --out PATH [--page-limit N] [--fault NAME]...\n';

export async function main(args: string[]): Promise<number> {
  let values: { 'database-url'?: string; out?: string; 'page-limit'?: string; fault?: string[] };
  try {
    values = parseArgs({ args, options: { 'database-url': { type: 'string' }, out: { type: 'string' }, 'page-limit': { type: 'string' }, fault: { type: 'string', multiple: true } } }).values;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const url = values['database-url'];
  const out = values.out;
  const limit = values['page-limit'] === undefined ? undefined : Number(values['page-limit']);
  if (url === undefined || out === undefined || (limit !== undefined && !Number.isInteger(limit))) {
    process.stderr.write(USAGE);
    return 2;
  }
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const result = await buildSeedArtifact(db, { out, ...(limit === undefined ? {} : { pageLimit: limit }), faults: values.fault ?? [] });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof SeedArtifactError) {
      process.stdout.write(`${JSON.stringify({ error: { check: e.check, message: e.message } })}\n`);
      return e.check === 'input' ? 2 : 3;
    }
    if (e instanceof SeedRequestError) {
      process.stdout.write(`${JSON.stringify({ error: { check: 'export', ...e.body().error } })}\n`);
      return 3;
    }
    throw e;
  } finally {
    await db.end();
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
