/**
 * Command line seed artifact builder:
 *
 *   node reference/seed-artifact/main.ts --database-url URL --out PATH [--page-limit N] [--fault NAME]... [--pause-at STAGE]...
 *
 * Exports every portable scope from the database in one transaction, checks
 * it, builds and verifies the SQLite file and publishes it at PATH. Prints one
 * JSON line: the build result (its `sha256` is the release evidence for the
 * published bytes). A refused build prints `{"error":{"check":...,"message":...}}`
 * and exits with status 3, leaving PATH as it was; bad arguments exit 2.
 * Faults (for tests) come from --fault or SYNCHRO_SEED_FAULT.
 *
 * The build runs in a child process that this one supervises: if the build
 * is killed (SIGKILL included) the supervisor removes the temporary file it
 * left, reports the refusal `verification not finished` and exits 3, so a
 * killed build leaves the destination directory as it found it.
 *
 * `--pause-at STAGE` (`exported`, `written`, `verifying`, `hashed`; see
 * `BuildPauses` in build.ts) makes the build stop at that point: it prints
 * `{"paused":STAGE,"pid":...,"temp":...}` (at `exported` also `"export"`,
 * the export as read) and waits for one line on standard input,
 * `{"resume":true}`, at `exported` optionally with the `"export"` to go on
 * with. Whoever drives it may meanwhile change the file at `temp`, or kill
 * process `pid`.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { removeTempsOf } from './temp-files.ts';

const USAGE = 'usage: seed-artifact/main.ts --database-url URL --out PATH [--page-limit N] [--fault NAME]... [--pause-at STAGE]...\n';
const STAGES = ['exported', 'written', 'verifying', 'hashed'] as const;
const OPTIONS = {
  'database-url': { type: 'string' },
  out: { type: 'string' },
  'page-limit': { type: 'string' },
  fault: { type: 'string', multiple: true },
  'pause-at': { type: 'string', multiple: true },
} as const;
/** Marks the child process that does the build. */
const WORKER_FLAG = '--build-worker';

/**
 * The build hooks for the stages asked for: each prints where the build
 * stands and waits for the line that lets it go on.
 */
async function linePauses(stages: ReadonlySet<string>, close: (done: () => void) => void) {
  const { SeedArtifactError } = await import('./errors.ts');
  const reader = createInterface({ input: process.stdin });
  close(() => reader.close());
  const lines = reader[Symbol.asyncIterator]();
  const pause = async (stage: string, detail: Record<string, unknown>): Promise<Record<string, unknown>> => {
    process.stdout.write(`${JSON.stringify({ paused: stage, pid: process.pid, ...detail })}\n`);
    const next = await lines.next();
    if (next.done === true) throw new SeedArtifactError('input', `standard input closed while the build was paused at ${stage}`);
    let answer: unknown;
    try {
      answer = JSON.parse(String(next.value));
    } catch {
      answer = undefined;
    }
    if (typeof answer !== 'object' || answer === null || (answer as { resume?: unknown }).resume !== true) {
      throw new SeedArtifactError('input', `the answer at ${stage} is not {"resume":true,...}: ${String(next.value).slice(0, 200)}`);
    }
    return answer as Record<string, unknown>;
  };
  type Pauses = import('./build.ts').BuildPauses;
  type Run = import('./export-run.ts').ExportRun;
  const pauses: Pauses = {};
  if (stages.has('exported')) {
    pauses.exported = async (run: Run) => {
      const answer = await pause('exported', { export: run });
      return answer.export === undefined ? run : (answer.export as Run);
    };
  }
  if (stages.has('written')) pauses.written = async (temp) => void (await pause('written', { temp }));
  if (stages.has('verifying')) pauses.verifying = async (temp) => void (await pause('verifying', { temp }));
  if (stages.has('hashed')) pauses.hashed = async (temp, sha256) => void (await pause('hashed', { temp, sha256 }));
  return pauses;
}

/** The build itself (the child process). */
export async function main(args: string[]): Promise<number> {
  let values: { 'database-url'?: string; out?: string; 'page-limit'?: string; fault?: string[]; 'pause-at'?: string[] };
  try {
    values = parseArgs({ args, options: OPTIONS }).values;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const url = values['database-url'];
  const out = values.out;
  const limit = values['page-limit'] === undefined ? undefined : Number(values['page-limit']);
  const stages = new Set(values['pause-at'] ?? []);
  if (url === undefined || out === undefined || (limit !== undefined && !Number.isInteger(limit)) || [...stages].some((s) => !(STAGES as readonly string[]).includes(s))) {
    process.stderr.write(USAGE);
    return 2;
  }
  const [{ default: pg }, { SeedRequestError }, { buildSeedArtifact }, { SeedArtifactError }] = await Promise.all([
    import('pg'),
    import('../server/seed/errors.ts'),
    import('./build.ts'),
    import('./errors.ts'),
  ]);
  const closers: (() => void)[] = [];
  const pauses = stages.size === 0 ? {} : await linePauses(stages, (done) => closers.push(done));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const result = await buildSeedArtifact(db, { out, ...(limit === undefined ? {} : { pageLimit: limit }), faults: values.fault ?? [], pauses });
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
    for (const close of closers) close();
    await db.end();
  }
}

/**
 * Runs the build in a child process sharing this one's standard streams, and
 * answers for it when it dies by a signal: nothing was published (the rename
 * is the build's last act before it prints its result), so the temporary
 * files it left are removed and the refusal is reported.
 */
export async function supervise(args: string[]): Promise<number> {
  const out = parseArgs({ args, options: OPTIONS, strict: false }).values.out;
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), WORKER_FLAG, ...args], { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onTerm = forward('SIGTERM');
  const onInt = forward('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve([c, s]));
    });
    if (signal === null) return code ?? 1;
    if (typeof out === 'string' && child.pid !== undefined) removeTempsOf(out, child.pid);
    const message = `the build process ${child.pid} was killed by ${signal} before it finished verifying and publishing; nothing was published and its temporary file is removed`;
    process.stdout.write(`${JSON.stringify({ error: { check: 'verification not finished', message } })}\n`);
    return 3;
  } finally {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  process.exitCode = args[0] === WORKER_FLAG ? await main(args.slice(1)) : await supervise(args);
}
