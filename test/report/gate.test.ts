import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, mock, test } from 'node:test';
import { InputError, UsageError } from '../../harness/errors.ts';
import { main } from '../../harness/report/gate.ts';
import { REPORT_FILES, writeReports } from '../../harness/report/write.ts';
import { fixtureRecords } from './fixtures/run-fixtures.ts';
import { fixtureRun, tempDir } from './helpers.ts';

let reportFile: string;

before(async () => {
  const fixture = await fixtureRun();
  const outDir = tempDir();
  writeReports({
    messagesFile: fixture.messagesFile,
    records: fixtureRecords(),
    catalogFile: fixture.catalogFile,
    implementation: { server: { id: 'reference', description: '' }, client: { id: 'reference', description: '' } },
    outDir,
  });
  reportFile = join(outDir, REPORT_FILES.json);
});

/** Runs the gate and returns its exit status and what it printed on stdout. */
async function gate(args: string[]): Promise<{ status: number; out: string }> {
  const lines: string[] = [];
  const log = mock.method(console, 'log', (line: string) => lines.push(line));
  const error = mock.method(console, 'error', () => {});
  try {
    return { status: await main(['--report', reportFile, ...args]), out: lines.join('\n') };
  } finally {
    log.mock.restore();
    error.mock.restore();
  }
}

async function rejectsInput(args: string[], problem: RegExp): Promise<void> {
  await assert.rejects(gate(args), (error: unknown) => {
    assert.ok(error instanceof InputError, String(error));
    assert.match(error.problem, problem);
    return true;
  });
}

describe('gate', () => {
  test('blocks a profile with any requirement not passed and lists each blocker with status and reason', async () => {
    const { status, out } = await gate(['--profile', 'server']);
    assert.equal(status, 1);
    assert.match(out, /^gate blocked: 6 of 8 requirements of profile server did not pass$/m);
    assert.match(out, /SYNC-FIX-002 {2}Passes Without Checking\n {6}undetermined: 1 of 2 scenarios undetermined/);
    assert.match(out, /SYNC-FIX-007 {2}Needs A Capability\n {6}not-applicable: adapter lacks capability sourceSql/);
    assert.match(out, /SYNC-FIX-010 {2}A Hook Fails\n {6}failed: /);
    assert.match(out, /SYNC-FIX-009 {2}Never Written\n {6}undetermined: no scenario ran/);
    assert.doesNotMatch(out, /SYNC-FIX-001|SYNC-FIX-011|SYNC-FIX-003/, 'passed and client-only requirements are not blockers of the server profile');
  });

  test('selects only the requirements of the profile', async () => {
    const { status, out } = await gate(['--profile', 'client']);
    assert.equal(status, 1);
    assert.match(out, /3 of 3 requirements of profile client/);
    assert.doesNotMatch(out, /SYNC-FIX-00[1256790]|SYNC-FIX-01/);
  });

  test('opens when every selected requirement passed', async () => {
    const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001, SYNC-FIX-011']);
    assert.equal(status, 0);
    assert.match(out, /gate passed: all 2 requirements of profile full, ids SYNC-FIX-001, SYNC-FIX-011 passed/);
  });

  test('narrows by section', async () => {
    const { status, out } = await gate(['--profile', 'full', '--section', 'Server Change Capture Invariants']);
    assert.equal(status, 1);
    assert.match(out, /2 of 2 requirements of profile full, section "Server Change Capture Invariants"/);
  });

  test('refuses an unknown id, an unknown section and a selection that matches nothing', async () => {
    await rejectsInput(['--profile', 'server', '--ids', 'SYNC-FIX-001,SYNC-NOPE-001'], /no requirement SYNC-NOPE-001 in the report/);
    await rejectsInput(['--profile', 'server', '--section', 'Nowhere'], /no section "Nowhere"/);
    await rejectsInput(['--profile', 'client', '--ids', 'SYNC-FIX-001'], /no requirement of profile client matches/);
  });

  test('refuses a bad command line', async () => {
    await assert.rejects(gate([]), UsageError);
    await assert.rejects(gate(['--profile', 'everything']), UsageError);
    await assert.rejects(gate(['--profile', 'server', '--verbose']), UsageError);
  });

  test('refuses a report that is missing, not JSON, or not a conformance report', async () => {
    const dir = tempDir();
    const missing = join(dir, 'absent.json');
    await assert.rejects(main(['--profile', 'server', '--report', missing]), (e: unknown) => e instanceof InputError && e.file === missing);

    const notJson = join(dir, 'broken.json');
    writeFileSync(notJson, '{\n  "format": "synchro-conformance-report/1",\n  oops\n}\n');
    await assert.rejects(main(['--profile', 'server', '--report', notJson]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.equal(e.line, 3);
      assert.match(e.problem, /not valid JSON/);
      return true;
    });

    const truncated = join(dir, 'truncated.json');
    writeFileSync(truncated, readFileSync(reportFile, 'utf8').slice(0, 200));
    await assert.rejects(main(['--profile', 'server', '--report', truncated]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.equal(e.line, readFileSync(truncated, 'utf8').split('\n').length);
      return true;
    });

    const tampered = join(dir, 'tampered.json');
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { requirements: { status: string }[] };
    for (const r of report.requirements) r.status = 'passed';
    writeFileSync(tampered, JSON.stringify(report));
    await assert.rejects(main(['--profile', 'server', '--report', tampered]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.match(e.problem, /not a conformance report: \/requirements\/\d+\/reason/);
      return true;
    });
  });
});
