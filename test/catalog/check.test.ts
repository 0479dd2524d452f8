import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkMapping, type FindingCode } from '../../harness/catalog/check.ts';
import { listFeatureFiles, readFeature } from '../../harness/catalog/features.ts';
import { parseCatalog } from '../../harness/catalog/parse.ts';
import { loadRecords } from '../../harness/catalog/records.ts';
import { catalogText, featureText, makeProject, RECORDS, recordsYaml } from './project-fixture.ts';

function check(root: string, catalog = catalogText()) {
  const recordsFile = join(root, 'invariants.yaml');
  const features = new Map(listFeatureFiles(root).map((path) => [path, readFeature(root, path)]));
  return checkMapping({ catalog: parseCatalog(catalog, 'catalog.md'), recordsFile, records: loadRecords(recordsFile).records, root, features });
}

const codes = (result: ReturnType<typeof check>): FindingCode[] => result.findings.map((f) => f.code).sort();

test('a complete mapping has no findings and counts are derived', () => {
  const result = check(makeProject());
  assert.deepEqual(result.findings, []);
  assert.deepEqual([result.mapped, result.headings, result.records, result.features], [3, 3, 3, 3]);
});

test('removing a heading from the catalog makes its record non-invariant and the counts differ', () => {
  const result = check(makeProject(), catalogText().replace('### Second Rule', 'Second Rule is prose now'));
  assert.deepEqual(codes(result), ['count-mismatch', 'non-invariant']);
  assert.equal(result.findings.find((f) => f.code === 'non-invariant')?.line, 14);
  assert.equal(result.mapped, 2);
});

test('a heading with no record is orphaned, reported at its catalog line', () => {
  // Dropping the record but keeping its feature also leaves a feature whose id tag names no record.
  const result = check(makeProject({ records: RECORDS.slice(0, 2) }));
  assert.deepEqual(codes(result), ['count-mismatch', 'feature-unknown-id', 'feature-without-record', 'orphaned-heading']);
  const root = makeProject({ records: RECORDS.slice(0, 2), features: Object.fromEntries(RECORDS.slice(0, 2).map((r) => [`features/${r.anchor}.feature`, featureText(r.id, r.title)])) });
  const orphan = check(root).findings;
  assert.deepEqual(orphan.map((f) => [f.code, f.file, f.line]), [['orphaned-heading', 'catalog.md', 19], ['count-mismatch', join(root, 'invariants.yaml'), undefined]]);
});

test('two records for one heading are a duplicate', () => {
  const extra = { ...RECORDS[0], id: 'SYNC-ALPHA-009', feature: 'features/first-rule-again.feature' } as (typeof RECORDS)[number];
  const features = Object.fromEntries([...RECORDS, extra].map((r) => [r.feature ?? `features/${r.anchor}.feature`, featureText(r.id, r.title)]));
  const result = check(makeProject({ records: [...RECORDS, extra], features }));
  assert.deepEqual(codes(result), ['count-mismatch', 'duplicate-record']);
  assert.equal(result.findings.find((f) => f.code === 'duplicate-record')?.line, 36);
});

test('a record pointing at a level-two heading is non-invariant', () => {
  const records = RECORDS.map((r, i) => (i === 2 ? { ...r, anchor: 'beta-invariants', normative: ['beta-invariants'] } : r));
  const result = check(makeProject({ records }));
  assert.ok(codes(result).includes('non-invariant'));
  assert.match(result.findings.find((f) => f.code === 'non-invariant')?.message ?? '', /level-2 heading/);
});

test('zero or several normative references, or one naming another anchor, are errors', () => {
  const none = RECORDS.map((r, i) => (i === 0 ? { ...r, normative: [] } : r));
  assert.deepEqual(codes(check(makeProject({ records: none }))), ['normative-reference-count']);
  const two = RECORDS.map((r, i) => (i === 0 ? { ...r, normative: ['first-rule', 'second-rule'] } : r));
  assert.deepEqual(codes(check(makeProject({ records: two }))), ['normative-reference-count']);
  const other = RECORDS.map((r, i) => (i === 0 ? { ...r, normative: ['second-rule'] } : r));
  assert.deepEqual(codes(check(makeProject({ records: other }))), ['normative-reference-mismatch']);
});

test('a title or section that differs from the catalog is reported', () => {
  const records = RECORDS.map((r, i) => (i === 1 ? { ...r, title: 'Second rule', section: 'Beta Invariants' } : r));
  assert.deepEqual(codes(check(makeProject({ records }))), ['section-mismatch', 'title-mismatch']);
});

test('a missing feature file is reported against its record', () => {
  const records = RECORDS.map((r, i) => (i === 0 ? { ...r, feature: 'features/nowhere.feature' } : r));
  assert.deepEqual(codes(check(makeProject({ records }))), ['feature-without-record', 'missing-feature']);
});

test('a feature must carry exactly its record id tag; unknown ids are reported', () => {
  const root = makeProject();
  writeFileSync(join(root, 'features/first-rule.feature'), featureText('SYNC-ALPHA-001 @SYNC-ALPHA-002', 'First Rule'));
  assert.deepEqual(codes(check(root)), ['feature-id-tag']);
  writeFileSync(join(root, 'features/first-rule.feature'), featureText('SYNC-ZETA-001', 'First Rule'));
  assert.deepEqual(codes(check(root)), ['feature-id-tag', 'feature-unknown-id']);
  writeFileSync(join(root, 'features/first-rule.feature'), '@server\nFeature: First Rule\n');
  assert.deepEqual(codes(check(root)), ['feature-id-tag']);
});

test('feature applicability tags must agree with the record', () => {
  const root = makeProject();
  writeFileSync(join(root, 'features/first-rule.feature'), featureText('SYNC-ALPHA-001', 'First Rule', '@client'));
  assert.deepEqual(codes(check(root)), ['feature-applicability-tags']);
});

test('an unparsable feature is reported with its line', () => {
  const root = makeProject();
  writeFileSync(join(root, 'features/first-rule.feature'), '@SYNC-ALPHA-001 @server\nFeature: First Rule\n  Scenario: x\n    Given y\n  this is not gherkin\n');
  const result = check(root);
  assert.deepEqual(result.findings.map((f) => [f.code, f.line]), [['unparsable-feature', 5]]);
});

test('the fixture records file round-trips through the loader with record lines', () => {
  const root = makeProject({ yaml: recordsYaml(RECORDS) });
  assert.deepEqual(loadRecords(join(root, 'invariants.yaml')).records.map((r) => r.line), [3, 14, 25]);
});
