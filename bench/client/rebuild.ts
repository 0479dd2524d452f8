/**
 * Rebuild apply throughput of the reference client: 50,000 rows delivered in
 * rebuild pages of 1,000, each row's checksum verified, written with its
 * version, provenance and page receipt, then finality with the scope digest.
 * In the same run the same rows are inserted with one prepared statement in
 * one transaction, and the ratio of the two rates is printed.
 *
 * Durability: both databases are files in the temporary directory with
 * journal_mode WAL and synchronous FULL, the reference client's settings.
 * A line of the output splits the apply's time per row into the parts it is
 * made of, each measured apart in the same run (one of them by applying the
 * same pages again with synchronous OFF, a run that is not the measured one).
 *
 * Run: node bench/client/rebuild.ts [rows]
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { checksumObject, digestRow, fromHex, scopeDigest, toHex } from '../../harness/codec/index.ts';
import type { RebuildResponse } from '../../harness/wire/generated.ts';
import { verifyRow } from '../../reference/client/apply/rows.ts';
import { addScope } from '../../reference/client/apply/scopes.ts';
import { SynchroClient } from '../../reference/client/client.ts';
import { serverApply } from '../../reference/client/local/metadata.ts';
import { applyRebuildPage, finishRebuild, rebuildRequest, startAttempt } from '../../reference/client/rebuild/rebuild.ts';
import { manifest } from '../../test/reference-client/fixtures.ts';
import { scratchDir } from '../../test/support/scratch-dir.ts';
import { atLeast, fmt, printResult } from '../lib/report.ts';

const rows = Number(process.argv[2] ?? 50_000);
const pageSize = 1000;
const m = manifest();
const shape = m.tables.find((t) => t.table_id === 'tbl_notes');
if (shape === undefined) throw new Error('fixture manifest lacks notes');
// Both databases live in one scratch folder, removed when the process exits.
const dir = scratchDir('synchro-bench-');

// Server side, prepared before timing: pages with real row digests and the final scope digest.
const { readTableShape } = await import('../../harness/codec/index.ts');
const tableShape = readTableShape(shape);
const records: RebuildResponse['records'] = [];
const entries: { identity: Uint8Array; digest: Uint8Array }[] = [];
for (let i = 0; i < rows; i++) {
  const row = { fld_notes_id: i + 1, fld_notes_body: `row ${i + 1} body text` };
  const version = `v${i + 1}`;
  const d = digestRow({ schemaHash: m.schema_hash, table: tableShape, row, serverVersion: version });
  entries.push({ identity: d.identity, digest: d.digest });
  records.push({ table: 'tbl_notes', pk: { fld_notes_id: i + 1 }, row, row_checksum: checksumObject(d.digest), server_version: version });
}
const scopeChecksum = toHex(scopeDigest(fromHex(m.schema_hash), 'all', entries));

// The pages as the server sends them: each parsed page with the octets it arrived as, which its receipt keeps.
const pages: { page: RebuildResponse; body: Uint8Array }[] = [];
for (let at = 0; at < rows; at += pageSize) {
  const last = at + pageSize >= rows;
  const page: RebuildResponse = { scope: 'all', records: records.slice(at, at + pageSize), cursor: last ? null : `rb${at + pageSize}`, has_more: !last };
  if (last) {
    page.final_scope_cursor = 'c-final';
    page.checksum = { algorithm: 'sha256', version: 1, encoding: 'hex', digest: scopeChecksum };
  }
  pages.push({ page, body: Buffer.from(JSON.stringify(page), 'utf8') });
}

/** A reference client on a fresh database file with the fixture manifest installed; it never sends a request. */
function openClient(file: string): SynchroClient {
  return SynchroClient.open({
    path: join(dir, file),
    clientId: 'bench',
    transport: async () => {
      throw new Error('the benchmark applies pages directly');
    },
    bundledManifest: m,
    rebuildLimit: pageSize,
  });
}

/**
 * Every page applied to a fresh client database, then finality; seconds for
 * the whole and for finality alone. `synchronous` overrides the client's
 * setting (FULL) for the breakdown below, never for the measured rate.
 */
function applyAll(file: string, synchronous?: 'OFF'): { seconds: number; finalitySeconds: number } {
  const client = openClient(file);
  serverApply(client.ctx.db, () => addScope(client.ctx, 'all', null));
  client.ctx.db.prepare(`INSERT INTO _synchro_meta(key, value) VALUES ('client_generation', '1') ON CONFLICT(key) DO UPDATE SET value = '1'`).run();
  if (synchronous !== undefined) client.ctx.db.pragma(`synchronous = ${synchronous}`);
  const started = performance.now();
  let attempt = startAttempt(client.ctx, 'all');
  for (const { page, body } of pages) {
    applyRebuildPage(client.ctx, attempt, rebuildRequest(client.ctx, attempt), page, body);
    attempt = client.ctx.db.prepare('SELECT * FROM _synchro_rebuild_attempts WHERE scope_id = ?').get('all') as typeof attempt;
  }
  const finality = performance.now();
  if (!finishRebuild(client.ctx, 'all')) throw new Error('final scope checksum did not match');
  const ended = performance.now();
  client.close();
  return { seconds: (ended - started) / 1000, finalitySeconds: (ended - finality) / 1000 };
}

const measured = applyAll('client.db');
const rebuildSeconds = measured.seconds;

const baseline = new Database(join(dir, 'baseline.db'));
baseline.pragma('journal_mode = WAL');
baseline.pragma('synchronous = FULL');
baseline.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY NOT NULL, body TEXT)');
const insert = baseline.prepare('INSERT INTO notes(id, body) VALUES (?, ?)');
const baseStart = performance.now();
baseline.transaction(() => {
  for (const r of records) insert.run(r.row.fld_notes_id as number, r.row.fld_notes_body as string);
})();
const baselineSeconds = (performance.now() - baseStart) / 1000;
baseline.close();

const rebuildRate = rows / rebuildSeconds;
const baselineRate = rows / baselineSeconds;
console.log('durability: SQLite files on disk, journal_mode WAL, synchronous FULL, both sides');
console.log(`rebuild apply: ${fmt(rows)} rows in pages of ${pageSize} in ${rebuildSeconds.toFixed(3)} s = ${fmt(rebuildRate)} rows/s; prepared insert loop ${fmt(baselineRate)} rows/s`);
printBreakdown();
printResult(atLeast(`client rebuild apply, ${fmt(rows)} rows`, `${fmt(rebuildRate)} rows/s`, `${fmt(baselineRate)} rows/s`, rebuildRate / baselineRate, 0.25));

/**
 * Where the apply's time went, per row, measured apart in this run: the row
 * verification the apply does (verifyRow over every record), finality (the
 * scope digest over the stored rows and the install), and the syncs of the
 * per-page commits (the same apply with synchronous OFF on a fresh
 * database); the rest is writing the rows and their bookkeeping.
 */
function printBreakdown(): void {
  const verifier = openClient('verify.db');
  const table = verifier.ctx.schema?.byId.get('tbl_notes');
  if (table === undefined) throw new Error('the client schema lacks notes');
  const v0 = performance.now();
  for (const r of records) verifyRow('rebuilding', m.schema_hash, table, r.row, r.pk.fld_notes_id, r.server_version, r.row_checksum);
  const verifySeconds = (performance.now() - v0) / 1000;
  verifier.close();
  const unsynced = applyAll('unsynced.db', 'OFF');
  const us = (seconds: number) => `${((seconds * 1e6) / rows).toFixed(1)} µs`;
  const syncs = Math.max(0, rebuildSeconds - unsynced.seconds);
  const rest = Math.max(0, rebuildSeconds - verifySeconds - measured.finalitySeconds - syncs);
  console.log(
    `per row: the apply ${us(rebuildSeconds)} = verifying row digests ${us(verifySeconds)} + finality ${us(measured.finalitySeconds)} + the per-page commits' syncs ${us(syncs)} + writing rows and bookkeeping ${us(rest)}; the prepared insert loop ${us(baselineSeconds)}`,
  );
}
