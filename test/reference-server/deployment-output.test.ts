/**
 * A deployment of the reference server (`npm run reference:server`, no
 * --demo) prints no credential: not the JWT secret, not a token, not the
 * database password (SYNC-OPS-005). The demo still prints what a person needs
 * to try it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { redactedDatabaseUrl, type StartupFacts, startupOutput } from '../../reference/server/startup-output.ts';

const MAIN = new URL('../../reference/server/main.ts', import.meta.url).pathname;
const SECRET = 'cnry-jwt-secret-6d0b1f';
const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vLXVzZXIifQ.c2lnbmF0dXJl';
const DATABASE_PASSWORD = 'cnry-db-password-2a9e';
const FACTS: StartupFacts = {
  url: 'http://127.0.0.1:8080',
  databaseUrl: `postgres://postgres:${DATABASE_PASSWORD}@127.0.0.1:5432/synchro?sslpassword=${DATABASE_PASSWORD}`,
  demo: false,
  jwtSecret: SECRET,
  secretSource: 'environment',
  embedded: true,
};

function printed(facts: StartupFacts): string {
  const output = startupOutput(facts);
  return [output.stdout, ...output.stderr].join('\n');
}

test('a deployment prints no secret, no token and no database password, whatever the secret came from', () => {
  for (const secretSource of ['flag', 'environment', 'generated'] as const) {
    for (const embedded of [true, false]) {
      const text = printed({ ...FACTS, secretSource, embedded, demoToken: TOKEN });
      for (const credential of [SECRET, TOKEN, DATABASE_PASSWORD]) assert.ok(!text.includes(credential), `${secretSource}/${embedded}: ${credential} printed in\n${text}`);
    }
  }
  const listening = JSON.parse(startupOutput(FACTS).stdout) as { event: string; url: string; database_url: string };
  assert.deepEqual(listening, { event: 'listening', url: FACTS.url, database_url: 'postgres://postgres:redacted@127.0.0.1:5432/synchro' });
});

test('a deployment without a secret says that none is shown', () => {
  const text = printed({ ...FACTS, secretSource: 'generated' });
  assert.match(text, /is not shown/);
});

test('the demo prints the secret, its token and the database URL to try it with', () => {
  const text = printed({ ...FACTS, demo: true, demoToken: TOKEN });
  for (const credential of [SECRET, TOKEN, DATABASE_PASSWORD]) assert.ok(text.includes(credential), `${credential} missing from the demo's output`);
});

test('a database URL keeps its host, login and database but loses its password and parameters', () => {
  assert.equal(redactedDatabaseUrl('postgres://app:s3cret@db.example:5433/app'), 'postgres://app:redacted@db.example:5433/app');
  assert.equal(redactedDatabaseUrl('postgres://app@db.example/app'), 'postgres://app@db.example/app');
  assert.equal(redactedDatabaseUrl('host=db password=s3cret'), '(not shown)');
});

test('npm run reference:server (no flags) starts as a deployment and prints no credential', { timeout: 120_000 }, async () => {
  const server = spawn(process.execPath, [MAIN], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SYNCHRO_JWT_SECRET: SECRET } });
  let output = '';
  server.stderr.on('data', (chunk) => {
    output += String(chunk);
  });
  try {
    const listening = await new Promise<{ url: string; database_url: string }>((resolve, reject) => {
      createInterface({ input: server.stdout }).on('line', (line) => {
        output += `${line}\n`;
        const event = JSON.parse(line) as { event?: string; url: string; database_url: string };
        if (event.event === 'listening') resolve(event);
      });
      server.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${output}`)));
    });
    // The start-up lines are written right after the listening line; the last one names --database-url.
    const deadline = Date.now() + 10_000;
    while (!output.includes('--database-url')) {
      if (Date.now() > deadline) throw new Error(`the start-up lines did not finish:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The server works: the secret from the environment is in use, and nothing of it was printed.
    const ready = await fetch(`${listening.url}/ready`);
    assert.ok([200, 503].includes(ready.status));
    await ready.arrayBuffer();
    assert.ok(!output.includes(SECRET), `the JWT secret was printed:\n${output}`);
    assert.ok(!/eyJ[\w-]+\.[\w-]+\.[\w-]+/.test(output), `a token was printed:\n${output}`);
    assert.ok(!output.includes(':synchro@'), `the embedded database's password was printed:\n${output}`);
    assert.match(listening.database_url, /^postgres:\/\/postgres:redacted@/);
  } finally {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
    await new Promise((resolve) => (server.exitCode !== null || server.signalCode !== null ? resolve(undefined) : server.once('exit', resolve)));
  }
});
