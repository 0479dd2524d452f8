import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import type { ConformanceReport } from '../../harness/report/conformance-json.ts';
import { validateReport } from '../../harness/report/conformance-json.ts';
import { escapeXml } from '../../harness/report/junit.ts';
import { catalogSha256, formatSummary, REPORT_FILES, writeAllOrNothing, writeReports } from '../../harness/report/write.ts';
import { fixtureRecords } from './fixtures/run-fixtures.ts';
import { type FixtureRun, fixtureRun, tempDir } from './helpers.ts';

let fixture: FixtureRun;
let outDir: string;
let report: ConformanceReport;

before(async () => {
  fixture = await fixtureRun();
  outDir = tempDir();
  report = writeReports({
    messagesFile: fixture.messagesFile,
    records: fixtureRecords(),
    catalogFile: fixture.catalogFile,
    implementation: { server: { id: 'reference', description: 'reference server' }, client: null },
    vectorSetHash: 'f'.repeat(64),
    outDir,
    generatedAt: new Date('2026-01-02T03:04:05Z'),
  });
});

describe('conformance.json', () => {
  test('is written, matches its schema and equals the returned report', () => {
    const written = JSON.parse(readFileSync(join(outDir, REPORT_FILES.json), 'utf8')) as unknown;
    assert.deepEqual(validateReport(written), []);
    assert.deepEqual(written, JSON.parse(JSON.stringify(report)));
  });

  test('carries the header facts', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
    assert.deepEqual(report.harness, { name: pkg.name, version: pkg.version });
    assert.equal(report.catalog.sha256, catalogSha256(fixture.catalogFile));
    assert.match(report.catalog.sha256, /^[0-9a-f]{64}$/);
    assert.equal(report.vector_set_hash, 'f'.repeat(64));
    assert.equal(report.generated_at, '2026-01-02T03:04:05.000Z');
    assert.deepEqual(report.implementation, { server: { id: 'reference', description: 'reference server' }, client: null });
    assert.equal(report.run.cucumber_version, fixture.index.meta?.implementation.version);
    assert.ok(report.run.started_at !== null && report.run.finished_at !== null && report.run.duration_ms !== null);
    assert.equal(report.run.success, false);
  });

  test('counts statuses overall, per section and per profile', () => {
    assert.deepEqual(report.summary.overall, { total: 11, passed: 2, failed: 2, undetermined: 6, 'not-applicable': 1 });
    assert.deepEqual(
      report.summary.by_section.map((s) => [s.section, s.counts.total]),
      [
        ['Protocol Invariants', 6],
        ['Local Metadata Invariants', 3],
        ['Server Change Capture Invariants', 2],
      ],
    );
    assert.deepEqual(report.summary.by_profile.client, { total: 3, passed: 0, failed: 1, undetermined: 2, 'not-applicable': 0 });
    assert.equal(report.summary.by_profile.full.total, 11);
  });

  test('a value that breaks the schema is named by its location', () => {
    const broken = JSON.parse(JSON.stringify(report)) as { requirements: { status: string; reason: unknown }[] };
    const first = broken.requirements[0];
    assert.ok(first);
    first.status = 'green';
    assert.ok(validateReport(broken).some((p) => p.startsWith('/requirements/0/status')));
    first.status = 'failed';
    first.reason = null;
    assert.ok(validateReport(broken).some((p) => p.startsWith('/requirements/0/reason')), 'a failed requirement must give a reason');
  });
});

describe('junit.xml', () => {
  const junit = () => readFileSync(join(outDir, REPORT_FILES.junit), 'utf8');

  test('has one testsuite per section and one testcase per requirement', () => {
    const xml = junit();
    assert.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
    assert.equal(xml.match(/<testsuite /g)?.length, 3);
    assert.equal(xml.match(/<testcase /g)?.length, 11);
    assert.match(xml, /<testsuites [^>]*tests="11" failures="2" errors="0" skipped="7"/);
  });

  test('failed requirements are failures, the others not passed are skipped with their reason, all escaped', () => {
    const xml = junit();
    assert.equal(xml.match(/<failure /g)?.length, 2);
    assert.equal(xml.match(/<skipped /g)?.length, 7);
    assert.match(xml, /expected 42, got 41 &lt;not &amp; &quot;escaped&quot;&gt;/);
    assert.doesNotMatch(xml, /<not &/);
    assert.match(xml, /<skipped message="undetermined: no scenario ran"\/>/);
    assert.match(xml, /<skipped message="not applicable: adapter lacks capability sourceSql/);
  });

  test('XML escaping replaces characters XML 1.0 cannot carry', () => {
    assert.equal(escapeXml('a\u0000b\u001b<&>"\'\tok'), 'a\uFFFDb\uFFFD&lt;&amp;&gt;&quot;&apos;\tok');
  });
});

describe('conformance.html', () => {
  test('is self-contained: no external resource and a policy that forbids fetching one', () => {
    const html = readFileSync(join(outDir, REPORT_FILES.html), 'utf8');
    assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
    assert.doesNotMatch(html, /<(link|img|iframe)\b|\bsrc=|https?:\/\//);
  });

  test('escapes what it takes from the input, also inside the embedded JSON', () => {
    const hostile = '</script><script>alert(1)</script>&amp;';
    const records = fixtureRecords().map((r) => (r.id === 'SYNC-FIX-003' ? { ...r, title: hostile, section: `${r.section} <b>` } : r));
    const dir = tempDir();
    writeReports({
      messagesFile: fixture.messagesFile,
      records,
      catalogFile: fixture.catalogFile,
      implementation: { server: null, client: { id: '<client>', description: '"quoted" & <tagged>' } },
      outDir: dir,
    });
    const html = readFileSync(join(dir, REPORT_FILES.html), 'utf8');
    assert.equal(html.match(/<script/g)?.length, 2, 'only the data and the filter script');
    assert.doesNotMatch(html, /alert\(1\)<\/script>/);
    assert.match(html, /&lt;\/script&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;&amp;amp;/);
    assert.match(html, /<code>&lt;client&gt;<\/code> &quot;quoted&quot; &amp; &lt;tagged&gt;/);
    const data = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)?.[1] ?? '';
    const embedded = JSON.parse(data) as ConformanceReport;
    assert.equal(embedded.requirements.find((r) => r.id === 'SYNC-FIX-003')?.title, hostile);
  });
});

describe('writing all three files', () => {
  test('nothing is replaced and no temporary file is left when the report is invalid', () => {
    const dir = tempDir();
    writeFileSync(join(dir, REPORT_FILES.json), 'previous');
    const records = fixtureRecords().map((r, i) => (i === 0 ? { ...r, id: 'not-an-id' } : r));
    assert.throws(
      () => writeReports({ messagesFile: fixture.messagesFile, records, catalogFile: fixture.catalogFile, implementation: { server: null, client: null }, outDir: dir }),
      /does not match its schema/,
    );
    assert.deepEqual(readdirSync(dir), [REPORT_FILES.json]);
    assert.equal(readFileSync(join(dir, REPORT_FILES.json), 'utf8'), 'previous');
  });

  test('a write that fails half-way removes what it wrote and renames nothing', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.txt'), 'old a');
    assert.throws(() =>
      writeAllOrNothing(dir, [
        ['a.txt', 'new a'],
        ['missing-folder/b.txt', 'new b'],
      ]),
    );
    assert.deepEqual(readdirSync(dir), ['a.txt']);
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'old a');
  });
});

describe('the summary printed after a run', () => {
  test('gives the counts per status, a row per section, the problems and the report paths', () => {
    const text = formatSummary(report);
    const lines = text.split('\n');
    assert.equal(lines[0], 'Requirements: 11 (2 passed, 2 failed, 6 undetermined, 1 not-applicable)');
    assert.match(text, /^Section +total +passed +failed +undetermined +not-applicable$/m);
    assert.match(text, /^Protocol Invariants +6 +2 +1 +3 +0$/m);
    assert.match(text, /^Server Change Capture Invariants +2 +0 +0 +1 +1$/m);
    assert.match(text, /^problem: features\/unknown-id\.feature:3: 1 scenario tagged @SYNC-ZZZ-999/m);
    for (const file of Object.values(REPORT_FILES)) assert.ok(lines.includes(`  ${join(outDir, file)}`), file);
  });
});
