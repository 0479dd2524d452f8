import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, mock, test } from 'node:test';
import { stringify } from 'yaml';
import { InputError, UsageError } from '../../harness/errors.ts';
import { main } from '../../harness/report/command.ts';
import type { ConformanceReport } from '../../harness/report/conformance-json.ts';
import { REPORT_FILES } from '../../harness/report/write.ts';
import { fixtureRecords } from './fixtures/run-fixtures.ts';
import { type FixtureRun, fixtureRun, tempDir } from './helpers.ts';

let fixture: FixtureRun;
let recordsFile: string;

before(async () => {
  fixture = await fixtureRun();
  recordsFile = join(fixture.dir, 'invariants.yaml');
  writeFileSync(recordsFile, stringify({ catalog: 'catalog.md', requirements: fixtureRecords() }));
});

async function report(args: string[]): Promise<{ status: number; out: string }> {
  const lines: string[] = [];
  const log = mock.method(console, 'log', (line: string) => lines.push(line));
  try {
    return { status: await main(args), out: lines.join('\n') };
  } finally {
    log.mock.restore();
  }
}

describe('report command', () => {
  test('renders the three reports from a saved message stream, with the catalog named by invariants.yaml', async () => {
    const out = tempDir();
    const sensitivity = join(out, 'sensitivity.json');
    writeFileSync(
      sensitivity,
      JSON.stringify({
        total: { detected: 1, total: 2 },
        perSection: { 'Protocol Invariants': { detected: 1, total: 2 } },
        perRequirement: { 'SYNC-FIX-001': { detected: 1, total: 1 }, 'SYNC-FIX-011': { detected: 0, total: 1 } },
        rules: [
          { id: 'SYNC-FIX-001', rule: 'responses survive loss', line: 4, recipes: 1, detected: true },
          { id: 'SYNC-FIX-011', rule: 'checks are enforced', line: 4, recipes: 1, detected: false },
        ],
        results: [
          { id: 'SYNC-FIX-001', rule: 'responses survive loss', fault: 'wire:drop-response', outcome: 'detected', detected: true, detail: 'Then step failed' },
          { id: 'SYNC-FIX-011', rule: 'checks are enforced', fault: 'server:skip-check', outcome: 'missed', detected: false, detail: 'every scenario of the rule still passed under the fault' },
        ],
      }),
    );
    const result = await report([
      '--messages', fixture.messagesFile,
      '--records', recordsFile,
      '--out', out,
      '--server', 'reference', '--server-description', 'reference server',
      '--vector-set-hash', 'abc123',
      '--sensitivity', sensitivity,
    ]);
    assert.equal(result.status, 0);
    assert.match(result.out, /^Requirements: 11 \(2 passed, 2 failed, 6 undetermined, 1 not-applicable\)/);
    assert.ok(result.out.includes(join(out, REPORT_FILES.html)));
    const written = JSON.parse(readFileSync(join(out, REPORT_FILES.json), 'utf8')) as ConformanceReport;
    assert.equal(written.catalog.path, fixture.catalogFile);
    assert.deepEqual(written.implementation, { server: { id: 'reference', description: 'reference server' }, client: null });
    assert.equal(written.vector_set_hash, 'abc123');
    assert.equal(written.sensitivity?.total.detected, 1);
    assert.match(readFileSync(join(out, REPORT_FILES.html), 'utf8'), /Rules detected <strong>1 of 2<\/strong>/);
    assert.match(readFileSync(join(out, REPORT_FILES.junit), 'utf8'), /<testsuites /);
  });

  test('refuses a malformed sensitivity file as input, writing nothing', async () => {
    const out = tempDir();
    const sensitivity = join(out, 'sensitivity.json');
    writeFileSync(sensitivity, JSON.stringify({ total: { detected: 1 } }));
    await assert.rejects(report(['--messages', fixture.messagesFile, '--records', recordsFile, '--out', out, '--sensitivity', sensitivity]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.equal(e.file, sensitivity);
      return true;
    });
    assert.throws(() => readFileSync(join(out, REPORT_FILES.json)));
  });

  test('needs --messages and refuses unknown options', async () => {
    await assert.rejects(report(['--records', recordsFile]), UsageError);
    await assert.rejects(report(['--messages', fixture.messagesFile, '--colour']), UsageError);
    await assert.rejects(report(['--messages', fixture.messagesFile, '--client-description', 'x']), UsageError);
  });

  test('a missing message file is an input error naming it', async () => {
    const absent = join(tempDir(), 'absent.ndjson');
    await assert.rejects(report(['--messages', absent, '--records', recordsFile, '--out', tempDir()]), (e: unknown) => e instanceof InputError && e.file === absent);
  });
});
