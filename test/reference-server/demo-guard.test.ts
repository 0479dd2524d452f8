/**
 * `npm run reference:server -- --demo` runs its own embedded PostgreSQL. Killing the
 * server with SIGKILL (no exit handler runs) must not leave that database
 * running or its files behind: the guard process stops it and removes its
 * directory. The start-up output says how to keep data instead.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import pg from 'pg';
import { alive } from '../../reference/server/demo.ts';

const MAIN = new URL('../../reference/server/main.ts', import.meta.url).pathname;


async function until(what: string, condition: () => boolean, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a SIGKILLed demo server takes its embedded database and its files with it', async () => {
  // The demo prints the database URL with its password; a deployment (no --demo) does not.
  const server = spawn(process.execPath, [MAIN, '--demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  try {
    const listening = await new Promise<{ database_url: string }>((resolve, reject) => {
      createInterface({ input: server.stdout }).on('line', (line) => {
        const event = JSON.parse(line) as { event?: string; database_url: string };
        if (event.event === 'listening') resolve(event);
      });
      server.once('exit', (code) => reject(new Error(`the demo server exited (${code}) before listening:\n${stderr}`)));
    });
    // The start-up lines say how to keep data instead.
    await until('the hint about --database-url', () => stderr.includes('--database-url'), 10_000);
    const client = new pg.Client({ connectionString: listening.database_url });
    await client.connect();
    const dataDir = String((await client.query('SHOW data_directory')).rows[0].data_directory);
    await client.end();
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    assert.ok(alive(postmaster));
    server.kill('SIGKILL');
    await until('the embedded PostgreSQL stopping', () => !alive(postmaster), 30_000);
    await until('the database directory being removed', () => !existsSync(dirname(dataDir)), 30_000);
  } finally {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  }
});
