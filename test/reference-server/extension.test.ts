import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXTENSION_NAME, packageFiles, packageVersions, writeExtensionPackage } from '../../reference/server/db/extension.ts';

const SQL_DIR = new URL('../../reference/server/sql/', import.meta.url);
const CLOSING = '052-default-deny.sql';
const BASELINE = ['002-tables.sql', '003-fences.sql', '004-registry.sql', '005-scopes.sql', '006-readiness.sql', '007-grants.sql', '008-capture.sql', '009-pull.sql', '020-client-runtime.sql', '021-table-reconfigure.sql', '022-seed.sql', '023-scope-history.sql', '024-membership-reconfigure.sql', '025-dependencies.sql', '026-scope-function-contract.sql', '027-capture-performance.sql', '028-push-guard.sql', '029-wal-events.sql', '031-checkpoint-inspection.sql', '044-membership-backfill.sql', '045-retention-lineage-reset.sql', '048-scope-high-watermark.sql', '050-compaction-batches.sql', '054-readiness-clock-and-progress.sql', '055-readiness-limits.sql', '056-capture-decode-limit.sql'];

test('a listed file no published version names joins the development version after 0.3.1', () => {
  assert.deepEqual(packageVersions([...BASELINE, CLOSING], CLOSING), [{ version: '0.3.1', files: BASELINE }]);
  const versions = packageVersions([...BASELINE, '070-comments.sql', '071-new.sql', CLOSING], CLOSING);
  assert.deepEqual(versions.map((v) => v.version), ['0.3.1', '0.3.2-dev']);
  assert.deepEqual(versions[1]?.files, ['070-comments.sql', '071-new.sql']);
});

test('a published version cannot lose a file', () => {
  assert.throws(() => packageVersions(BASELINE.slice(1), CLOSING), /published version cannot lose a file/);
});

test('the package has the control file, the baseline and current install scripts and one update script per step', async () => {
  const { files } = await packageFiles(SQL_DIR, [...BASELINE, '070-comments.sql', CLOSING], CLOSING);
  assert.deepEqual([...files.keys()].sort(), [`${EXTENSION_NAME}--0.3.1--0.3.2-dev.sql`, `${EXTENSION_NAME}--0.3.1.sql`, `${EXTENSION_NAME}--0.3.2-dev.sql`, `${EXTENSION_NAME}.control`]);
  const control = files.get(`${EXTENSION_NAME}.control`) ?? '';
  assert.match(control, /^default_version = '0\.3\.2-dev'$/m);
  assert.match(control, /^relocatable = false$/m);
  assert.match(control, /^schema = synchro$/m);
  const update = files.get(`${EXTENSION_NAME}--0.3.1--0.3.2-dev.sql`) ?? '';
  // The update applies only what the version added, then default deny again.
  assert.ok(update.includes('-- 070-comments.sql') && update.includes(`-- ${CLOSING}`) && !update.includes('-- 002-tables.sql'));
  const full = files.get(`${EXTENSION_NAME}--0.3.2-dev.sql`) ?? '';
  assert.ok(full.indexOf('-- 070-comments.sql') < full.indexOf(`-- ${CLOSING}`));
});

test('the package is written once per content, readable by another user', async () => {
  const parent = await mkdtemp(join(tmpdir(), 'synchro-ext-test-'));
  try {
    const first = await writeExtensionPackage(SQL_DIR, [...BASELINE, CLOSING], CLOSING, { parent });
    const again = await writeExtensionPackage(SQL_DIR, [...BASELINE, CLOSING], CLOSING, { parent });
    assert.equal(again.directory, first.directory);
    const faulty = await writeExtensionPackage(SQL_DIR, [...BASELINE, CLOSING], CLOSING, { parent, faults: ['ops007-schema-left-to-installer'] });
    assert.notEqual(faulty.directory, first.directory);
    assert.deepEqual((await readdir(parent)).filter((name) => name.includes('staging')), []);
    assert.deepEqual(await readdir(first.directory), [`${EXTENSION_NAME}--0.3.1.sql`, `${EXTENSION_NAME}.control`]);
    // The server may run as another user: directories traversable, files readable by all.
    assert.equal((await stat(first.controlPath)).mode & 0o755, 0o755);
    assert.equal((await stat(first.directory)).mode & 0o755, 0o755);
    assert.equal((await stat(join(first.directory, `${EXTENSION_NAME}.control`))).mode & 0o444, 0o444);
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
});
