/**
 * SYNC-SEED-004 Snapshot Consistent Portable Seeds
 * (features/startup-and-portable-seed/snapshot-consistent-portable-seeds.feature):
 * the steps only this requirement uses. The seed connection steps it shares
 * with SYNC-SEED-005 are in steps/common/portable-seed.steps.ts, the page
 * call checks ("the page call fails ...") in that requirement's step file.
 */
import { Then, When } from '@cucumber/cucumber';
import Database from 'better-sqlite3';
import type { SeedCallResult } from '../../harness/adapters/server.ts';
import { digestRow, fromHex, readChecksumObject, ScopeDigestBuilder, toHex } from '../../harness/codec/index.ts';
import { currentManifest } from '../support/integrity/context.ts';
import { shapeOf } from '../support/integrity/oracle.ts';
import { lastCommitWindow, lsnValue } from '../support/seed-snapshots/source-commits.ts';
import { artifactPath, artifactState, publishedResult } from '../support/seeds/artifacts.ts';
import { callPage, describe, keptToken, pageLimitOf, type SeedConnection, scopeEntry, seedConnection, seedSessionsState, servedValue } from '../support/seeds/seed-sessions.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/** The manifest calls the last When step made: the page limit asked for and each answer. */
const manifestCalls = new WeakMap<SyncWorld, { limit: number; answers: SeedCallResult[] }>();

function lastManifestCalls(world: SyncWorld): SeedCallResult[] {
  const calls = manifestCalls.get(world);
  if (calls === undefined || calls.answers.length === 0) throw new Error('no seed manifest call was made by a When step in this scenario');
  return calls.answers;
}

async function callManifestTimes(world: SyncWorld, name: string, limit: number, times: number): Promise<undefined | 'skipped'> {
  const connection = await seedConnection(world, name);
  if (connection === 'skipped') return connection;
  const answers: SeedCallResult[] = [];
  for (let k = 0; k < times; k += 1) answers.push(await connection.session.manifest(limit));
  manifestCalls.set(world, { limit, answers });
  return undefined;
}

// Rule 1: one connection, one enforced SERIALIZABLE READ ONLY DEFERRABLE transaction.

When('seed connection {string} calls the portable seed manifest function with page limit {int}', async function (this: SyncWorld, name: string, limit: number) {
  return callManifestTimes(this, name, limit, 1);
});

// A connection that has begun no transaction runs each call in a transaction of its own: autocommit.
When('seed connection {string} calls the portable seed manifest function with page limit {int} in autocommit mode', async function (this: SyncWorld, name: string, limit: number) {
  return callManifestTimes(this, name, limit, 1);
});

When('seed connection {string} calls the portable seed manifest function with page limit {int} twice', async function (this: SyncWorld, name: string, limit: number) {
  return callManifestTimes(this, name, limit, 2);
});

Then('the call fails with an SQL error', function (this: SyncWorld) {
  const [answer] = lastManifestCalls(this);
  this.assert.ok(answer !== undefined && !answer.ok && 'sql_error' in answer, `the seed manifest call failed with an SQL error, not answered ${describe(answer as SeedCallResult)}`);
});

Then('seed connection {string} holds no export state', async function (this: SyncWorld, name: string) {
  const connection = await seedConnection(this, name);
  if (connection === 'skipped') return connection;
  // The refused transaction ends; an export begun next on the same connection must start from nothing:
  // another page limit than the refused call's is accepted and a fresh export is described.
  servedValue(await connection.session.statement('ROLLBACK'), `ROLLBACK on seed connection "${name}"`);
  servedValue(await connection.session.statement('BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE'), `BEGIN on seed connection "${name}"`);
  lastManifestCalls(this);
  const refusedLimit = manifestCalls.get(this)?.limit ?? 1;
  const fresh = await connection.session.manifest(refusedLimit + 1);
  servedValue(await connection.session.statement('ROLLBACK'), `ROLLBACK on seed connection "${name}"`);
  this.assert.ok(fresh.ok, `a new export transaction on seed connection "${name}" starts a fresh export: ${describe(fresh)}`);
  this.assert.equal((fresh.ok ? (fresh.value as Obj) : {}).page_limit, refusedLimit + 1, 'the page limit of the export begun after the refused call');
});

When(
  /^seed connection "([^"]+)" runs "([^"]+)" and calls the seed scope function with "([^"]+)" for "([^"]+)" at ordinal (\d+)$/,
  async function (this: SyncWorld, name: string, statement: string, label: string, scope: string, ordinal: string) {
    const holder = await tokenHolder(this, label);
    const connection = await seedConnection(this, name);
    if (holder === 'skipped' || connection === 'skipped') return 'skipped';
    servedValue(await connection.session.statement(statement), `"${statement}" on seed connection "${name}"`);
    await callPage(this, connection, scope, keptToken(holder, label), Number(ordinal), pageLimitOf(holder));
  },
);

When(
  /^seed connection "([^"]+)" runs "COMMIT", begins a new SERIALIZABLE READ ONLY DEFERRABLE transaction and calls the seed scope function with "([^"]+)" for "([^"]+)" at ordinal (\d+)$/,
  async function (this: SyncWorld, name: string, label: string, scope: string, ordinal: string) {
    const connection = await seedConnection(this, name);
    if (connection === 'skipped') return connection;
    servedValue(await connection.session.statement('COMMIT'), `COMMIT on seed connection "${name}"`);
    servedValue(await connection.session.statement('BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE'), `BEGIN on seed connection "${name}"`);
    await callPage(this, connection, scope, keptToken(connection, label), Number(ordinal), pageLimitOf(connection));
  },
);

When(
  /^seed connection "([^"]+)" runs "COMMIT" and calls the seed scope function with "([^"]+)" for "([^"]+)" at ordinal (\d+) in autocommit mode$/,
  async function (this: SyncWorld, name: string, label: string, scope: string, ordinal: string) {
    const connection = await seedConnection(this, name);
    if (connection === 'skipped') return connection;
    servedValue(await connection.session.statement('COMMIT'), `COMMIT on seed connection "${name}"`);
    await callPage(this, connection, scope, keptToken(connection, label), Number(ordinal), pageLimitOf(connection));
  },
);

/** The seed connection that kept the page token `label`. */
async function tokenHolder(world: SyncWorld, label: string): Promise<SeedConnection | 'skipped'> {
  for (const name of seedSessionsState(world).connections.keys()) {
    const connection = await seedConnection(world, name);
    if (connection !== 'skipped' && connection.tokens.has(label)) return connection;
  }
  throw new Error(`no seed connection kept a page token as "${label}"`);
}

Then('both calls return byte-identical results', function (this: SyncWorld) {
  const answers = lastManifestCalls(this);
  this.assert.equal(answers.length, 2, 'manifest calls made');
  this.assert.ok(answers.every((a) => a.ok), `both manifest calls were served: ${answers.map(describe).join(' / ')}`);
  this.assert.equal(JSON.stringify(answers[1]), JSON.stringify(answers[0]), 'the second manifest call against the first');
});

// Rule 2: the seed reads materialized projections through its boundary.

Then('the seed artifact {string} holds row {string} of {string} with {string} {int}', function (this: SyncWorld, file: string, id: string, table: string, column: string, value: number) {
  const key = this.model.keyColumn(table);
  const db = new Database(artifactPath(this, file), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare(`SELECT * FROM "${table.replaceAll('"', '""')}" WHERE "${key.name.replaceAll('"', '""')}" = ?`).get(id) as Obj | undefined;
    this.assert.ok(row !== undefined, `${file} holds row ${id} of ${table}`);
    this.assert.equal(Number(row?.[column]), value, `"${column}" of row ${id} of ${table} in ${file}`);
  } finally {
    db.close();
  }
});

Then('the export manifest {string} lies before the commit position of that update', function (this: SyncWorld, member: string) {
  const file = [...artifactState(this).published.keys()].at(-1);
  if (file === undefined) throw new Error('no seed artifact was published in this scenario');
  const manifest = publishedResult(this, file).exportManifest;
  this.assert.ok(manifest !== undefined, `the export of ${file} reported its export manifest`);
  const boundary = (manifest?.[member] ?? null) as Obj | null;
  const window = lastCommitWindow(this);
  if (boundary?.position_kind === 'generation_start') {
    this.assert.ok(true, 'a boundary at the start of the stream generation precedes every commit');
    return;
  }
  this.assert.equal(boundary?.position_kind, 'transaction_end', `the kind of the export's "${member}": ${JSON.stringify(boundary)}`);
  const at = lsnValue(String(boundary?.commit_lsn));
  // The update's commit record lies after the WAL insert position read just before it.
  this.assert.ok(at <= lsnValue(window.before), `"${member}" ${JSON.stringify(boundary)} lies at or before ${window.before}, where the WAL stood before the update committed`);
});

// Rule 3: commits after the snapshot never reach the running export.

When('seed connection {string} calls the seed scope function with {string} for {string} at ordinal {int}', async function (this: SyncWorld, name: string, label: string, scope: string, ordinal: number) {
  const connection = await seedConnection(this, name);
  if (connection === 'skipped') return connection;
  await callPage(this, connection, scope, keptToken(connection, label), ordinal, pageLimitOf(connection));
});

function pageValue(world: SyncWorld, answer: SeedCallResult, what: string): Obj {
  world.assert.ok(answer.ok, `${what} was served: ${describe(answer)}`);
  return (answer.ok ? answer.value : {}) as Obj;
}

Then('the page holds rows {string} with name {string} and {string}, with {string} false and {string} null', async function (this: SyncWorld, first: string, name: string, second: string, hasMore: string, token: string) {
  const call = seedSessionsState(this).lastCall;
  if (call === undefined) throw new Error('no seed page call was made in this scenario');
  const page = pageValue(this, call.answer, `the seed page at ordinal ${call.ordinal}`);
  // Seed records name their table and fields by ID; the published manifest maps the feature's names onto them.
  const manifest = await currentManifest(this);
  const table = manifest.tables.find((t) => t.name === 'products');
  if (table === undefined) throw new Error('the published manifest has no table "products"');
  const nameField = table.fields.find((f) => f.name === 'name')?.field_id;
  const records = ((page.records ?? []) as { table: string; pk: Obj; row: Obj }[]).filter((r) => r.table === table.table_id);
  this.assert.equal(
    records.map((r) => String(r.pk[table.primary_key_field_id])),
    [first, second],
    'the rows of the later page, in order',
  );
  this.assert.equal(records[0]?.row[String(nameField)], name, `"name" of row ${first} on the later page`);
  this.assert.equal([page[hasMore], page[token]], [false, null], `"${hasMore}" and "${token}" of the later page`);
});

Then(
  'the scope digest the harness codec computes over all records of both pages equals the {string} of {string} in the manifest result',
  async function (this: SyncWorld, member: string, scope: string) {
    const calls = seedSessionsState(this).calls.filter((c) => c.scope === scope);
    this.assert.equal(calls.length, 2, `seed page calls made for ${scope}`);
    const manifest = await currentManifest(this);
    const connection = [...seedSessionsState(this).connections.values()][0];
    if (connection === undefined) throw new Error('no seed connection is open');
    const seedManifest = connection.manifest as Obj;
    this.assert.equal(seedManifest.schema_hash, manifest.schema_hash, 'the schema hash the seed manifest names against the published manifest');
    const builder = new ScopeDigestBuilder(fromHex(manifest.schema_hash), scope);
    for (const call of calls) {
      const page = pageValue(this, call.answer, `the seed page at ordinal ${call.ordinal}`);
      for (const record of (page.records ?? []) as { table: string; row: Obj; server_version: string; row_checksum: unknown }[]) {
        // The digest is recomputed from the row and its version; the checksum the server sent is only compared.
        const { identity, digest } = digestRow({ schemaHash: manifest.schema_hash, table: shapeOf(manifest, record.table), row: record.row, serverVersion: String(record.server_version) });
        this.assert.equal(toHex(readChecksumObject(record.row_checksum)), toHex(digest), `row_checksum of a record of ${record.table}`);
        builder.add(identity, digest);
      }
    }
    this.assert.equal(toHex(builder.finish()), toHex(readChecksumObject(scopeEntry(connection, scope)[member])), `the codec's scope digest over both pages against the manifest "${member}" of ${scope}`);
  },
);

Then('the manifest result gives {string} a {string} of {string}', async function (this: SyncWorld, scope: string, member: string, value: string) {
  const connection = [...seedSessionsState(this).connections.values()][0];
  if (connection === undefined) throw new Error('no seed connection is open');
  this.assert.equal(String(scopeEntry(connection, scope)[member]), value, `"${member}" of ${scope} in the seed manifest`);
});
