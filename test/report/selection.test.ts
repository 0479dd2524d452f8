/**
 * A run narrowed by --tags or --profile reports only what it selected: the
 * requirements it left out are listed as not selected (never undetermined,
 * never counted), and a gate that names one of them is blocked.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, mock, test } from 'node:test';
import { main as gate } from '../../harness/report/gate.ts';
import { formatSummary, REPORT_FILES, writeReports } from '../../harness/report/write.ts';
import type { ConformanceReport } from '../../harness/report/conformance-json.ts';
import { fixtureRecords, runFixtures } from './fixtures/run-fixtures.ts';
import { tempDir } from './helpers.ts';

let report: ConformanceReport;
let reportFile: string;

before(async () => {
  const dir = tempDir('report-selection-');
  const messagesFile = await runFixtures(dir, '@SYNC-FIX-001 or @SYNC-FIX-003');
  writeFileSync(join(dir, 'catalog.md'), '# Catalog\n');
  const outDir = tempDir();
  report = writeReports({
    messagesFile,
    records: fixtureRecords(),
    catalogFile: join(dir, 'catalog.md'),
    implementation: { server: { id: 'reference', description: '' }, client: { id: 'reference', description: '' } },
    outDir,
  });
  reportFile = join(outDir, REPORT_FILES.json);
});

async function gateSays(args: string[]): Promise<{ status: number; out: string }> {
  const lines: string[] = [];
  const log = mock.method(console, 'log', (line: string) => lines.push(line));
  try {
    return { status: await gate(['--report', reportFile, ...args]), out: lines.join('\n') };
  } finally {
    log.mock.restore();
  }
}

test('only the selected requirements get a verdict; the feature-less one stays undetermined', () => {
  const verdicts = new Map(report.requirements.map((r) => [r.id, r.status]));
  assert.equal(verdicts.get('SYNC-FIX-001'), 'passed');
  assert.equal(verdicts.get('SYNC-FIX-003'), 'failed');
  // No scenario exists for it, so no selection could have left it out.
  assert.equal(verdicts.get('SYNC-FIX-009'), 'undetermined');
  assert.equal(report.requirements.length, 3);
});

test('the others are listed as not selected and left out of every count', () => {
  const left = (report.not_selected ?? []).map((r) => r.id).sort();
  assert.deepEqual(left, ['SYNC-FIX-002', 'SYNC-FIX-004', 'SYNC-FIX-005', 'SYNC-FIX-006', 'SYNC-FIX-007', 'SYNC-FIX-008', 'SYNC-FIX-010', 'SYNC-FIX-011']);
  assert.equal(report.summary.overall.total, 3);
  assert.match(formatSummary(report), /^Requirements: 3 selected; 8 not selected by --tags or --profile \(1 passed, 1 failed, 1 undetermined, 0 not-applicable\)/);
});

test('a gate on a selected requirement judges it as usual', async () => {
  const { status, out } = await gateSays(['--profile', 'full', '--ids', 'SYNC-FIX-001', '--allow-run-problems']);
  assert.equal(status, 0, out);
});

test('a gate naming a requirement the run left out is blocked and says why', async () => {
  const { status, out } = await gateSays(['--profile', 'full', '--ids', 'SYNC-FIX-001,SYNC-FIX-002']);
  assert.equal(status, 1);
  assert.match(out, /gate blocked: 1 of 2 requirements/);
  assert.match(out, /SYNC-FIX-002 .*\n\s+not selected: the run's --tags or --profile left it out/);
});

test('a whole-profile gate on a narrowed run is blocked by what was left out', async () => {
  const { status, out } = await gateSays(['--profile', 'server', '--allow-run-problems']);
  assert.equal(status, 1);
  assert.match(out, /not selected/);
});
