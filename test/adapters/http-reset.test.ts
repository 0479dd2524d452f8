/**
 * An external server whose scenarios create tables must be reset between
 * them: the generic adapter proves the reset before any scenario (a table
 * written after one reset is gone after the next) and refuses a config
 * without one, naming the file. Runs against a real embedded PostgreSQL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { InputError } from '../../harness/errors.ts';
import { openSession, workersFor } from '../../harness/run/session.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';
import { type StubServer, startStubServer } from './fixtures/stub-server.ts';

const root = new URL('../../', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'synchro-http-reset-test-'));
let cluster: Cluster;
let stub: StubServer;
let databaseUrl: string;

before(async () => {
  cluster = await startCluster({});
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE reset_probe_app');
  await admin.end();
  databaseUrl = cluster.urlFor('reset_probe_app');
  stub = await startStubServer();
});
after(async () => {
  await stub?.close();
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

let files = 0;
function config(extra: object): string {
  files += 1;
  const file = join(scratch, `server-${files}.json`);
  writeFileSync(file, JSON.stringify({ role: 'server', kind: 'http', id: 'external', baseUrl: stub.url, auth: { jwt: { secret: 's3cret' } }, databaseUrl, capabilities: ['provision', 'sourceSql'], ...extra }, null, 2));
  return file;
}

/** A reset command that empties the public schema, as a real reset would (among other things). */
function emptyingReset(): string[] {
  const script = join(scratch, 'reset.mjs');
  writeFileSync(script, `import pg from ${JSON.stringify(new URL('../../node_modules/pg/lib/index.js', import.meta.url).href)};\nconst c = new pg.Client({ connectionString: process.argv[2] });\nawait c.connect();\nawait c.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');\nawait c.end();\n`);
  return [process.execPath, script, databaseUrl];
}

const inputError = (pattern: RegExp) => (error: unknown) => {
  assert.ok(error instanceof InputError, String(error));
  assert.match(error.message, pattern);
  assert.match(error.message, /server-\d+\.json/);
  return true;
};

test('SQL capabilities without a reset command are refused before any scenario', async () => {
  await assert.rejects(openSession({ server: config({}), client: 'reference', root }), inputError(/need a per-scenario reset/));
});

test('a reset command that leaves tables behind is refused, and its probe table is cleaned up', async () => {
  await assert.rejects(openSession({ server: config({ resetCommand: [process.execPath, '-e', '0'] }), client: 'reference', root }), inputError(/does not reset the database/));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query("SELECT to_regclass('synchro_conformance_reset_probe') AS t");
  await client.end();
  assert.equal(rows[0].t, null);
});

test('a reset that empties the database is accepted, and the run uses one worker for it', async () => {
  const session = await openSession({ server: config({ resetCommand: emptyingReset() }), client: 'reference', root });
  try {
    assert.deepEqual(session.server.capabilities, ['provision', 'sourceSql']);
    const workers = workersFor(session.server, 2);
    assert.equal(workers.parallel, 1);
    assert.match(workers.note ?? '', /one at a time/);
  } finally {
    await session.close();
  }
});
