import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
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

/**
 * What each file of 0.3.1 held when the version was published (the first 16
 * hex digits of its SHA-256). An installation of 0.3.1 out in the field ran
 * exactly these files, so editing one silently changes the baseline every
 * update starts from: a change to a published object goes into a new file
 * (CREATE OR REPLACE, ALTER) that joins the next version instead.
 */
const PUBLISHED_0_3_1 = new Map<string, string>([
  ['002-tables.sql', 'cd7acb984a7fe2dd'],
  ['003-fences.sql', 'f4c2b0e90a79d5d1'],
  ['004-registry.sql', 'd379a8519c643af3'],
  ['005-scopes.sql', '8e0b346f235559c7'],
  ['006-readiness.sql', 'be4e70375260db89'],
  ['007-grants.sql', '8269682d3998866a'],
  ['008-capture.sql', '42866fdef3cd21f2'],
  ['009-pull.sql', '38b67f7cfa0d8976'],
  ['020-client-runtime.sql', '4ca238cd090bd5ca'],
  ['021-table-reconfigure.sql', '8de47ea5bd38f63a'],
  ['022-seed.sql', '1da50a2cbf862cd9'],
  ['023-scope-history.sql', '3c25e1ba3f04874a'],
  ['024-membership-reconfigure.sql', '0d79f672e17f1b77'],
  ['025-dependencies.sql', '4a3f3bd25d1bd696'],
  ['026-scope-function-contract.sql', 'f46a8b5b51475adc'],
  ['027-capture-performance.sql', 'a9e0d7ffcf0114df'],
  ['028-push-guard.sql', '54cecedcf02838ef'],
  ['029-wal-events.sql', '3ea59b84dcc7bfe4'],
  ['031-checkpoint-inspection.sql', '4a35cedc0dd1bdf3'],
  ['044-membership-backfill.sql', '7eb148af5c961f62'],
  ['045-retention-lineage-reset.sql', 'b0d8060744b230ec'],
  ['048-scope-high-watermark.sql', 'caba2c13e6de1bf6'],
  ['050-compaction-batches.sql', '479f63247e2d622b'],
  ['054-readiness-clock-and-progress.sql', '4d6b4266b26a470b'],
  ['055-readiness-limits.sql', '12c2bee304916d8d'],
  ['056-capture-decode-limit.sql', 'ef76368714092fa2'],
]);

test('the files of the published 0.3.1 are unchanged', async () => {
  assert.deepEqual([...PUBLISHED_0_3_1.keys()], BASELINE);
  for (const [file, published] of PUBLISHED_0_3_1) {
    const now = createHash('sha256').update(await readFile(new URL(file, SQL_DIR))).digest('hex').slice(0, 16);
    assert.equal(now, published, `reference/server/sql/${file} belongs to the published 0.3.1 and was edited: restore it and put the change in a new file listed in install.ts`);
  }
});
