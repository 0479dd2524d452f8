/**
 * Rebuild apply throughput of the reference client: 50,000 rows delivered in
 * rebuild pages of 1,000, each row's checksum verified, written with its
 * version, provenance and page receipt, then finality with the scope digest.
 * In the same run the same rows are inserted with one prepared statement in
 * one transaction, and the ratio of the two rates is printed.
 *
 * Durability: both databases are files in the temporary directory with
 * journal_mode WAL and synchronous FULL, the reference client's settings.
 *
 * Run: node bench/client/rebuild.ts [rows]
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { checksumObject, digestRow, fromHex, scopeDigest, toHex } from '../../harness/codec/index.ts';
import type { RebuildResponse } from '../../harness/wire/generated.ts';
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

const client = SynchroClient.open({
  path: join(dir, 'client.db'),
  clientId: 'bench',
  transport: async () => {
    throw new Error('the benchmark applies pages directly');
  },
  bundledManifest: m,
  rebuildLimit: pageSize,
});
serverApply(client.ctx.db, () => addScope(client.ctx, 'all', null));
client.ctx.db.prepare(`INSERT INTO _synchro_meta(key, value) VALUES ('client_generation', '1') ON CONFLICT(key) DO UPDATE SET value = '1'`).run();

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

const started = performance.now();
let attempt = startAttempt(client.ctx, 'all');
for (const { page, body } of pages) {
  applyRebuildPage(client.ctx, attempt, rebuildRequest(client.ctx, attempt), page, body);
  attempt = client.ctx.db.prepare('SELECT * FROM _synchro_rebuild_attempts WHERE scope_id = ?').get('all') as typeof attempt;
}
if (!finishRebuild(client.ctx, 'all')) throw new Error('final scope checksum did not match');
const rebuildSeconds = (performance.now() - started) / 1000;
client.close();

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
printResult(atLeast(`client rebuild apply, ${fmt(rows)} rows`, `${fmt(rebuildRate)} rows/s`, `${fmt(baselineRate)} rows/s`, rebuildRate / baselineRate, 0.25));
