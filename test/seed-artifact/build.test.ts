/**
 * The seed artifact builder on a real export: a clean build publishes a
 * verified, self-contained file; every armed fault is refused by the check
 * meant to catch it, with no artifact, the earlier file untouched and no
 * temporary or sidecar file left behind.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { digestRow, fromHex, readTableShape, ScopeDigestBuilder, toHex } from '../../harness/codec/index.ts';
import { verifySeedFile } from '../../reference/client/local/seed.ts';
import { buildSeedArtifact, leftoverTemps } from '../../reference/seed-artifact/build.ts';
import { SeedArtifactError, type SeedCheck } from '../../reference/seed-artifact/errors.ts';
import { SEED_FAULTS, type SeedFault } from '../../reference/seed-artifact/faults.ts';
import { useEnv } from '../reference-server/helpers.ts';
import { withExportDb } from './fixtures.ts';

const env = useEnv();

const EXPECTED: Record<SeedFault, SeedCheck> = {
  'drop-row': 'cardinality and digest',
  'alter-value': 'row digest',
  'drop-server-version': 'row version',
  'alter-server-version': 'row digest',
  'alter-row-checksum': 'row digest',
  'skip-second-page': 'page sequence',
  'repeat-first-page': 'page sequence',
  'alter-receipt-cardinality': 'receipt',
  'earlier-receipt': 'receipt',
  'pending-mutation-row': 'queue and provenance',
  'omit-provenance-row': 'queue and provenance',
  'write-cursor': 'queue and provenance',
  'corrupt-page': 'sqlite integrity',
  'leave-wal': 'sidecar',
  'alter-manifest-body': 'manifest hash',
  'hash-other-bytes': 'artifact hash',
  'kill-during-verify': 'verification not finished',
};

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function assertNoLeftovers(dir: string, out: string): void {
  assert.deepEqual(leftoverTemps(out), []);
  for (const f of readdirSync(dir)) assert.ok(!/-(wal|shm|journal)$/.test(f) && !f.includes('seed-tmp'), `unexpected file ${f}`);
}

test('a clean build publishes a verified file with no sidecar, matching its evidence, holding the seed and nothing else', async () => {
  await withExportDb(env(), async (h, db, dir) => {
    const out = join(dir, 'seed-1.sqlite');
    const result = await buildSeedArtifact(db, { out, pageLimit: 2 });
    assert.ok(existsSync(out));
    assertNoLeftovers(dir, out);
    assert.equal(result.sha256, sha(out), 'the evidence is the SHA-256 of the published bytes');
    const file = new Database(out, { readonly: true, fileMustExist: true });
    try {
      assert.deepEqual(file.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
      assert.equal(file.pragma('journal_mode', { simple: true }), 'delete');
      const meta = Object.fromEntries((file.prepare('SELECT key, value FROM _synchro_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
      assert.equal(meta.seed_snapshot_complete, result.exportId);
      assert.equal(meta.client_id, undefined, 'a seed binds no client');
      for (const t of ['_synchro_pending_changes', '_synchro_mutation_values', '_synchro_push_batches', '_synchro_scopes', '_synchro_rebuild_attempts']) {
        assert.equal((file.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n, 0, `${t} is empty`);
      }
      const rows = file.prepare('SELECT id, title FROM items ORDER BY id').all();
      assert.deepEqual(rows, ['c1', 'c2', 'c3', 'c4', 'c5'].map((id, k) => ({ id, title: ['one', 'two', 'three', 'four', 'five'][k] })));
      const provenance = file.prepare("SELECT record_id FROM _synchro_scope_rows WHERE scope_id = 'catalog' ORDER BY record_id").all() as { record_id: string }[];
      assert.deepEqual(provenance.map((r) => r.record_id), ['c1', 'c2', 'c3', 'c4', 'c5']);
      const receipts = file.prepare('SELECT scope_id, receipt, cardinality FROM _synchro_seed_receipts').all() as { scope_id: string; receipt: string; cardinality: number }[];
      assert.deepEqual(receipts.map((r) => [r.scope_id, r.cardinality, r.receipt.startsWith('sc1.')]), [['catalog', 5, true]]);
      // The codec's digest over the file's rows and versions is the manifest's checksum.
      const manifest = (await h.get('/sync/schema')).json.manifest;
      const builder = new ScopeDigestBuilder(fromHex(manifest.schema_hash), 'catalog');
      const versions = file.prepare('SELECT record_id, server_version FROM _synchro_row_versions').all() as { record_id: string; server_version: string }[];
      for (const v of versions) {
        const row = file.prepare('SELECT * FROM items WHERE id = ?').get(v.record_id) as Record<string, unknown>;
        const table = manifest.tables[0];
        const wire = Object.fromEntries(table.fields.map((f: { field_id: string; name: string }) => [f.field_id, row[f.name]]));
        const { identity, digest } = digestRow({ schemaHash: manifest.schema_hash, table: readTableShape(table), row: wire, serverVersion: v.server_version });
        builder.add(identity, digest);
      }
      assert.equal(toHex(builder.finish()), result.scopes[0]?.checksum);
      // The export manifest comes back without the page tokens, which were valid only in the export's transaction.
      const entry = (result.exportManifest.portable_scopes as Record<string, unknown>[])[0];
      assert.equal(result.exportManifest.export_id, result.exportId);
      assert.deepEqual([entry?.id, entry?.cardinality, 'page_token' in (entry ?? {})], ['catalog', 5, false]);
      assert.equal((entry?.checksum as { digest?: unknown } | undefined)?.digest, result.scopes[0]?.checksum);
    } finally {
      file.close();
    }
    assert.equal(verifySeedFile(out).exportId, result.exportId);
  });
});

test('every armed fault is refused by its check: no artifact, the earlier file unchanged, nothing left behind', async () => {
  await withExportDb(env(), async (_h, db, dir) => {
    const out = join(dir, 'seed-1.sqlite');
    await buildSeedArtifact(db, { out, pageLimit: 2 });
    const before = sha(out);
    for (const name of SEED_FAULTS) {
      const error = await buildSeedArtifact(db, { out, pageLimit: 2, faults: [name] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof SeedArtifactError, `${name}: expected a refusal, got ${String(error)}`);
      assert.equal(error.check, EXPECTED[name], `${name}: ${error.message}`);
      assert.equal(sha(out), before, `${name}: the earlier artifact is untouched`);
      assertNoLeftovers(dir, out);
    }
  });
});

test('a failed build into an empty destination leaves no file; an unknown fault name is an input error', async () => {
  await withExportDb(env(), async (_h, db, dir) => {
    const out = join(dir, 'seed-2.sqlite');
    await assert.rejects(buildSeedArtifact(db, { out, pageLimit: 2, faults: ['alter-value'] }), SeedArtifactError);
    assert.deepEqual(readdirSync(dir), []);
    await assert.rejects(buildSeedArtifact(db, { out, faults: ['no-such-fault'] }), (e: unknown) => e instanceof SeedArtifactError && e.check === 'input');
    await assert.rejects(buildSeedArtifact(db, { out, pageLimit: 0 }), (e: unknown) => e instanceof SeedArtifactError && e.check === 'input');
    assert.deepEqual(readdirSync(dir), []);
  });
});

function runCli(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['reference/seed-artifact/main.ts', ...args], { env: { ...process.env, ...extraEnv } }, (error, stdout) => {
      resolve({ code: error === null ? 0 : Number(error.code), stdout });
    });
  });
}

test('the command line publishes with evidence, and refuses an armed fault with exit status 3', async () => {
  await withExportDb(env(), async (h, _db, dir) => {
    const out = join(dir, 'seed.sqlite');
    const clean = await runCli(['--database-url', h.url, '--out', out, '--page-limit', '2']);
    assert.equal(clean.code, 0, clean.stdout);
    assert.equal(JSON.parse(clean.stdout).sha256, sha(out));
    const before = sha(out);
    const refused = await runCli(['--database-url', h.url, '--out', out, '--page-limit', '2'], { SYNCHRO_SEED_FAULT: 'drop-row' });
    assert.equal(refused.code, 3);
    assert.equal(JSON.parse(refused.stdout).error.check, 'cardinality and digest');
    assert.equal(sha(out), before);
    assert.equal((await runCli(['--out', out])).code, 2);
  });
});

/** Runs the command line with the `--pause-at` stages in `args` and hands each pause to `act`, which resumes the build or kills it. */
function runPaused(args: string[], act: (pause: { pid: number; temp: string }, resume: () => void) => void): Promise<{ code: number | null; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['reference/seed-artifact/main.ts', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    child.stdin.on('error', () => undefined);
    const lines: string[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      const message = JSON.parse(line) as { paused?: string; pid: number; temp: string };
      if (message.paused !== undefined) act(message, () => child.stdin.write('{"resume":true}\n'));
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, lines }));
  });
}

test('a build killed with SIGKILL while it verifies publishes nothing, leaves nothing behind and is reported by its supervisor', async () => {
  await withExportDb(env(), async (h, _db, dir) => {
    const out = join(dir, 'seed.sqlite');
    const clean = await runCli(['--database-url', h.url, '--out', out, '--page-limit', '2']);
    assert.equal(clean.code, 0, clean.stdout);
    const before = sha(out);
    let killed: number | undefined;
    const run = await runPaused(['--database-url', h.url, '--out', out, '--page-limit', '2', '--pause-at', 'verifying'], (pause) => {
      assert.ok(existsSync(pause.temp), 'the file under verification exists while the build waits');
      killed = pause.pid;
      process.kill(pause.pid, 'SIGKILL');
    });
    assert.ok(killed !== undefined, 'the build paused while verifying');
    assert.equal(run.code, 3);
    assert.equal(JSON.parse(run.lines.at(-1) ?? '{}').error.check, 'verification not finished');
    assert.throws(() => process.kill(killed as number, 0), /ESRCH/, 'the killed build process is gone');
    assert.equal(sha(out), before, 'the earlier artifact is untouched');
    assertNoLeftovers(dir, out);
  });
});

test('a file changed on disk after its hash was recorded is refused by the artifact hash check', async () => {
  await withExportDb(env(), async (h, _db, dir) => {
    const out = join(dir, 'seed.sqlite');
    const run = await runPaused(['--database-url', h.url, '--out', out, '--page-limit', '2', '--pause-at', 'hashed'], (pause, resume) => {
      appendFileSync(pause.temp, Buffer.from([0]));
      resume();
    });
    assert.equal(run.code, 3);
    assert.equal(JSON.parse(run.lines.at(-1) ?? '{}').error.check, 'artifact hash');
    assert.ok(!existsSync(out));
    assertNoLeftovers(dir, out);
  });
});
