/**
 * The demo table set for `npm run reference:server`: a notes table with a
 * soft-delete column and a tags table with a hard delete, registered through
 * the same SQL entry point an operator uses. Every demo row belongs to the
 * shared scope `catalog_public`, so every demo user sees every row. Also the
 * guard that stops an embedded database when its server is killed.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const DEMO_SQL = `
CREATE SCHEMA IF NOT EXISTS demo;
CREATE TABLE IF NOT EXISTS demo.notes (
  id text PRIMARY KEY,
  body text NOT NULL DEFAULT '',
  price numeric(10, 2),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE TABLE IF NOT EXISTS demo.tags (
  id bigint PRIMARY KEY,
  label text NOT NULL
);
CREATE OR REPLACE FUNCTION demo.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'catalog_public'; END;
CREATE OR REPLACE FUNCTION demo.tag_scopes(p_id bigint) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'catalog_public'; END;`;

export async function installDemo(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(DEMO_SQL);
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int n FROM synchro.relations WHERE physical_schema = 'demo'");
    if ((rows[0]?.n ?? 0) > 0) return;
    await client.query(
      "SELECT synchro.synchro_register_table('demo.notes', membership_fn => 'demo.note_scopes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at')",
    );
    await client.query("SELECT synchro.synchro_register_table('demo.tags', membership_fn => 'demo.tag_scopes')");
    await client.query("SELECT synchro.synchro_register_shared_scope('catalog_public')");
  } finally {
    await client.end();
  }
}

/**
 * An embedded database must not outlive the server that started it, however
 * the server ends: a clean stop already stops it, but a SIGKILL (or a crash
 * that skips every exit handler) left the PostgreSQL processes running and
 * their files behind. So the server starts a guard: a small process in a
 * session of its own, holding the read end of a pipe from the server. When
 * the server is gone for any reason the pipe closes, and the guard stops the
 * database (fast shutdown, then SIGKILL past a deadline) and removes its
 * directory. After a clean stop the directory is already gone and the guard
 * just exits.
 */
export async function guardEmbeddedDatabase(adminUrl: string, log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  let dataDir: string;
  try {
    dataDir = String((await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]?.data_directory);
  } finally {
    await client.end();
  }
  const pid = postmasterPid(dataDir);
  if (pid === undefined) throw new Error(`the embedded database at ${dataDir} has no postmaster.pid`);
  const guard = spawn(process.execPath, [fileURLToPath(import.meta.url), '--guard', String(pid), dataDir], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  guard.on('error', (error) => log(`the embedded database guard did not start: ${error.message}`));
  // Neither the guard nor its pipe keeps this process alive; the pipe only has to stay open while it runs.
  guard.unref();
  (guard.stdin as unknown as { unref(): void }).unref();
}

const GUARD_STOP_DEADLINE_MS = 15_000;
const GUARD_POLL_MS = 100;
/** The directory the cluster module creates for an embedded cluster; nothing else is ever removed. */
const EMBEDDED_ROOT_PREFIX = 'synchro-pg-';

function postmasterPid(dataDir: string): number | undefined {
  try {
    const first = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '';
    return /^[1-9][0-9]*$/.test(first) ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` exists (EPERM: it does, owned by someone else). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitUntilGone(pid: number, deadlineMs: number): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, GUARD_POLL_MS));
  }
  return true;
}

/** The guard process: waits for the server's pipe to close, then stops the database it was given. */
async function runGuard(pid: number, dataDir: string): Promise<void> {
  await new Promise<void>((resolve) => {
    process.stdin.on('data', () => undefined);
    process.stdin.once('close', resolve);
    process.stdin.once('end', resolve);
    process.stdin.once('error', () => resolve());
  });
  // Only the postmaster this guard was started for, and only while it still owns the directory.
  if (postmasterPid(dataDir) === pid && alive(pid)) {
    process.kill(pid, 'SIGINT');
    if (!(await waitUntilGone(pid, GUARD_STOP_DEADLINE_MS))) {
      process.kill(pid, 'SIGKILL');
      await waitUntilGone(pid, GUARD_STOP_DEADLINE_MS);
    }
  }
  const root = dirname(dataDir);
  if (basename(root).startsWith(EMBEDDED_ROOT_PREFIX)) rmSync(root, { recursive: true, force: true });
}

if (import.meta.main && process.argv[2] === '--guard') {
  await runGuard(Number(process.argv[3]), String(process.argv[4]));
}
