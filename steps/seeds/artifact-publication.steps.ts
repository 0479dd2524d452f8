/**
 * Portable seed artifacts as the operator builds and ships them: the rows a
 * writer created on the server, one build through the adapter's
 * `seed.exportArtifact`, the published file checked as a file (sidecars,
 * SQLite integrity on a read-only open, SHA-256 against the release evidence)
 * and the destination after a build that an injected fault made fail.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import Database from 'better-sqlite3';
import { awaitCapture } from '../common/source-schema.steps.ts';
import { cellValue } from '../common/values.ts';
import type { SyncWorld } from '../support/world.ts';
import { artifactDir, artifactPath, artifactState, buildArtifact, fileSha256, publishedResult, sha256 } from './artifacts.ts';

/**
 * The fault table's rows as the exporter fault names of the adapter contract
 * (docs/adapters.md, `seed.exportArtifact`).
 */
const EXPORTER_FAULTS: Record<string, string> = {
  'one row dropped from a page': 'drop-row',
  'one field value altered in a record': 'alter-value',
  "one record's server_version removed": 'drop-server-version',
  "one record's server_version altered": 'alter-server-version',
  "one record's row_checksum altered": 'alter-row-checksum',
  'the second page skipped': 'skip-second-page',
  'the first page delivered twice': 'repeat-first-page',
  "the receipt's cardinality altered": 'alter-receipt-cardinality',
  'the receipt taken from an earlier export': 'earlier-receipt',
  'one pending mutation row written to the file': 'pending-mutation-row',
  'one provenance row omitted': 'omit-provenance-row',
  'a cursor written for "catalog_public"': 'write-cursor',
  'one page of the SQLite file corrupted on disk': 'corrupt-page',
  'the file left in WAL mode with a "-wal" file': 'leave-wal',
  'the manifest body altered after hashing': 'alter-manifest-body',
  'the final hash computed over other bytes': 'hash-other-bytes',
  'the exporter killed while verifying the file': 'kill-during-verify',
};

Given('shared scope {string} is registered as portable', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.registerSharedScope(scope, true);
});

Given('the server holds these {string} rows, created by client {string}:', async function (this: SyncWorld, table: string, name: string, rows: DataTable) {
  await this.readyServer();
  // The writer is a user of its own: the scenario's users see the rows only through the scopes they are served.
  const writer = this.wire(name, `writer-${name.toLowerCase()}`);
  if (writer.manifest === undefined) await writer.connectAndRebuild();
  const model = this.model.table(table);
  const key = this.model.keyColumn(table);
  const labels = new Map<string, string>();
  const mutations = rows.hashes().map((row) => {
    const { version, ...cells } = row;
    const pk = cellValue(key, String(cells[key.name]));
    const columns: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(cells)) if (column !== key.name) columns[column] = cellValue(model.columns.find((c) => c.name === column), text);
    const mutation = writer.mutation({ op: 'insert', table, pk, columns });
    if (version !== undefined && version !== '') labels.set(String(mutation.mutation_id), version);
    return mutation;
  });
  const reply = await writer.push(mutations);
  if (reply.status !== 200) throw new Error(`client "${name}" could not create the rows: ${reply.status} ${reply.text}`);
  const accepted = (reply.json.accepted ?? []) as { mutation_id: string; server_version?: string }[];
  if (accepted.length !== mutations.length) throw new Error(`client "${name}" got ${accepted.length} of ${mutations.length} inserts accepted: ${reply.text}`);
  const versions = artifactState(this).versions;
  for (const outcome of accepted) {
    const label = labels.get(outcome.mutation_id);
    if (label !== undefined && typeof outcome.server_version === 'string') versions.set(label, outcome.server_version);
  }
  // An export reads what capture has made visible; the rows are "held" once they are.
  await awaitCapture(this);
});

When('the operator exports a portable seed to {string} with page limit {int}', async function (this: SyncWorld, file: string, limit: number) {
  await buildArtifact(this, file, limit);
});

Given('the operator has exported a portable seed to {string} with page limit {int}', async function (this: SyncWorld, file: string, limit: number) {
  const result = await buildArtifact(this, file, limit);
  if (!result.ok) throw new Error(`the portable seed export to ${file} was refused by the ${result.check} check: ${result.message}`);
});

Then('the file {string} exists and no file {string}, {string} or {string} exists beside it', function (this: SyncWorld, file: string, wal: string, shm: string, journal: string) {
  const last = artifactState(this).last;
  this.assert.ok(last?.result.ok === true, `the export published the file: ${JSON.stringify(last?.result)}`);
  this.assert.ok(existsSync(artifactPath(this, file)), `${file} exists`);
  for (const sidecar of [wal, shm, journal]) this.assert.ok(!existsSync(artifactPath(this, sidecar)), `no ${sidecar} beside ${file}`);
});

Then('"PRAGMA integrity_check" on a read-only open of {string} returns exactly {string}', function (this: SyncWorld, file: string, expected: string) {
  const db = new Database(artifactPath(this, file), { readonly: true, fileMustExist: true });
  try {
    const rows = db.pragma('integrity_check') as Record<string, unknown>[];
    this.assert.equal(rows.map((r) => Object.values(r)[0]), [expected], `integrity_check of ${file}`);
  } finally {
    db.close();
  }
});

Then('the SHA-256 of the bytes of {string} equals the hash the export recorded as release evidence', function (this: SyncWorld, file: string) {
  this.assert.equal(fileSha256(artifactPath(this, file)), publishedResult(this, file).sha256, `SHA-256 of ${file} against the release evidence`);
});

Then('the seed artifact {string} marks the snapshot complete', function (this: SyncWorld, file: string) {
  // `_synchro_meta` is the client contract's metadata table; the completion marker is the seed's key there.
  const db = new Database(artifactPath(this, file), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare("SELECT value FROM _synchro_meta WHERE key = 'seed_snapshot_complete'").get() as { value: unknown } | undefined;
    this.assert.ok(typeof row?.value === 'string' && row.value !== '', `${file} carries a nonempty snapshot-complete marker (found ${JSON.stringify(row?.value)})`);
  } finally {
    db.close();
  }
});

Given('the destination {string} already holds an earlier artifact whose SHA-256 the harness recorded', async function (this: SyncWorld, file: string) {
  const result = await buildArtifact(this, file, undefined);
  if (!result.ok) throw new Error(`the earlier export to ${file} was refused by the ${result.check} check: ${result.message}`);
  const bytes = readFileSync(artifactPath(this, file));
  artifactState(this).earlier.set(file, { bytes, sha256: sha256(bytes) });
});

Given('the destination {string} does not exist', function (this: SyncWorld, file: string) {
  this.assert.ok(!existsSync(artifactPath(this, file)), `${file} does not exist yet`);
});

Given(/^the operator arms exporter fault "(.*)"$/, function (this: SyncWorld, prose: string) {
  const name = EXPORTER_FAULTS[prose];
  if (name === undefined) throw new Error(`no exporter fault is known for "${prose}"`);
  artifactState(this).armed.push(name);
});

Then('the export reports a failure', function (this: SyncWorld) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no export was run in this scenario');
  this.assert.ok(!last.result.ok, `the export reported a failure (it reported ${JSON.stringify(last.result)})`);
});

Then('{string} is byte-identical to the earlier artifact', function (this: SyncWorld, file: string) {
  const earlier = artifactState(this).earlier.get(file);
  if (earlier === undefined) throw new Error(`the harness recorded no earlier artifact at ${file}`);
  const path = artifactPath(this, file);
  this.assert.ok(existsSync(path), `${file} is still there`);
  if (!existsSync(path)) return;
  const now = readFileSync(path);
  this.assert.equal(sha256(now), earlier.sha256, `SHA-256 of ${file} against the earlier artifact`);
  this.assert.ok(now.equals(earlier.bytes), `${file} has the earlier artifact's bytes`);
});

Then('no temporary or sidecar file of the export remains in the destination directory', function (this: SyncWorld) {
  const last = artifactState(this).last;
  if (last === undefined) throw new Error('no export was run in this scenario');
  // Whatever name a builder gives its temporary file, the directory must list exactly what it did before.
  this.assert.equal(readdirSync(artifactDir(this)).sort(), last.before, 'the files of the destination directory after the failed export');
});

Then('no file {string} exists', function (this: SyncWorld, file: string) {
  this.assert.ok(!existsSync(artifactPath(this, file)), `no file ${file}`);
  this.assert.equal(readdirSync(artifactDir(this)).sort(), artifactState(this).last?.before ?? [], 'the files of the destination directory after the failed export');
});
