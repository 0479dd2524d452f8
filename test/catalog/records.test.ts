import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadRecords, parseRecords } from '../../harness/catalog/records.ts';
import { InputError } from '../../harness/errors.ts';
import { RECORDS, recordsYaml } from './project-fixture.ts';

const fails = (text: string, line: number, pattern: RegExp) =>
  assert.throws(
    () => parseRecords(text, 'invariants.yaml'),
    (error: unknown) => error instanceof InputError && error.file === 'invariants.yaml' && error.line === line && pattern.test(error.message) && /Fix: /.test(error.message),
  );

test('valid records load with the catalog path resolved against the file', () => {
  const parsed = parseRecords(recordsYaml(RECORDS, 'catalog.md'), '/project/invariants.yaml');
  assert.equal(parsed.catalog, '/project/catalog.md');
  assert.deepEqual(parsed.records.map((r) => r.record.id), ['SYNC-ALPHA-001', 'SYNC-ALPHA-002', 'SYNC-BETA-001']);
});

test('YAML syntax errors name the line', () => {
  fails(recordsYaml(RECORDS).replace('    summary: A summary', '    summary: [A summary'), 8, /not valid YAML/);
});

test('duplicate keys are refused', () => {
  fails(recordsYaml(RECORDS).replace('    section: Alpha Invariants\n', '    section: Alpha Invariants\n    section: Beta Invariants\n'), 7, /not valid YAML/);
});

test('schema violations name the offending value line', () => {
  fails(recordsYaml(RECORDS).replace('id: SYNC-ALPHA-002', 'id: alpha-2'), 14, /\/requirements\/1\/id must match pattern/);
  fails(recordsYaml(RECORDS).replace('    applies_to: [server]\n', '    applies_to: [everyone]\n'), 8, /applies_to\/0 must be one of/);
  fails(recordsYaml(RECORDS).replace('    summary: A summary sentence written for the test.\n', ''), 3, /missing required member "summary"/);
  fails(recordsYaml(RECORDS).replace('    feature: features/third-rule.feature', '    feature: features/third-rule.feature\n    colour: blue'), 25, /unknown member "colour"/);
});

test('an empty file is refused', () => {
  fails('', 1, /the document/);
});

test("the project's own invariants.yaml satisfies its schema, with unique ids and profiles that follow applies_to", () => {
  const file = new URL('../../invariants.yaml', import.meta.url).pathname;
  const { records } = loadRecords(file);
  assert.ok(records.length > 0);
  assert.equal(new Set(records.map((r) => r.record.id)).size, records.length);
  for (const { record } of records) {
    assert.deepEqual([...record.profiles].sort(), [...record.applies_to, 'full'].sort(), `${record.id} profiles`);
    assert.equal(record.references.filter((r) => r.type === 'normative').length, 1, `${record.id} normative references`);
  }
});
