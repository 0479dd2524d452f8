// The catalog commands as a user runs them: exit status and messages.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURE_CATALOG, makeProject, RECORDS, recordsYaml } from './project-fixture.ts';

const cli = new URL('../../harness/cli.ts', import.meta.url).pathname;

function run(args: string[], cwd: string) {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd, encoding: 'utf8' });
  return { status: result.status, out: result.stdout, err: result.stderr };
}

test('catalog check exits 0 on a complete mapping and prints the derived counts', () => {
  const result = run(['catalog', 'check'], makeProject());
  assert.equal(result.status, 0, result.err);
  assert.match(result.out, /^3 of 3 invariants mapped \(3 records, 3 feature files\); 0 problems$/m);
});

test('catalog check exits 1 and names file, line and fix for each finding', () => {
  const root = makeProject({ records: RECORDS.slice(0, 2) });
  const result = run(['catalog', 'check'], root);
  assert.equal(result.status, 1);
  assert.match(result.out, new RegExp(`${FIXTURE_CATALOG.replaceAll('/', '\\/')}:19: \\[orphaned-heading\\] heading "Third Rule" .*\\. Fix: add a record`));
});

test('a malformed invariants.yaml exits 2 with file and line, and nothing is written', () => {
  const root = makeProject({ yaml: recordsYaml(RECORDS).replace('    anchor: second-rule', '    anchor: [second-rule') });
  const before = readFileSync(join(root, 'invariants.yaml'), 'utf8');
  const result = run(['catalog', 'check'], root);
  assert.equal(result.status, 2);
  // The parser notices the unclosed sequence on the line after it opens.
  assert.match(result.err, /invariants\.yaml:17: not valid YAML: Flow sequence .* Fix: /);
  assert.equal(readFileSync(join(root, 'invariants.yaml'), 'utf8'), before);
});

test('an explicit catalog argument overrides the one invariants.yaml names', () => {
  const root = makeProject();
  const other = join(root, 'other.md');
  writeFileSync(other, readFileSync(FIXTURE_CATALOG, 'utf8').replace('### Third Rule', '### Third Rule Renamed'));
  const result = run(['catalog', 'check', other], root);
  assert.equal(result.status, 1);
  assert.match(result.out, /\[non-invariant\] record SYNC-BETA-001 maps anchor "third-rule"/);
  assert.match(result.out, /\[orphaned-heading\] heading "Third Rule Renamed"/);
});

test('catalog diff reports changes for people and for machines', () => {
  const root = makeProject();
  const changed = join(root, 'changed.md');
  writeFileSync(changed, readFileSync(FIXTURE_CATALOG, 'utf8').replace('### Second Rule', '### Second Rule Renamed'));
  const text = run(['catalog', 'diff', FIXTURE_CATALOG, changed], root);
  assert.equal(text.status, 0, text.err);
  assert.match(text.out, /renamed\s+"Second Rule" -> "Second Rule Renamed"\s+affects: SYNC-ALPHA-002 \(features\/second-rule\.feature\)/);
  const json = JSON.parse(run(['catalog', 'diff', FIXTURE_CATALOG, changed, '--json'], root).out) as { changes: { kind: string }[] };
  assert.deepEqual(json.changes.map((c) => c.kind), ['renamed']);
});

test('unknown commands and bad usage exit 2 with the usage text', () => {
  const root = makeProject();
  assert.equal(run([], root).status, 2);
  const unknown = run(['frobnicate'], root);
  assert.equal(unknown.status, 2);
  assert.match(unknown.err, /unknown command "frobnicate"/);
  const diff = run(['catalog', 'diff', FIXTURE_CATALOG], root);
  assert.equal(diff.status, 2);
  assert.match(diff.err, /exactly two catalog paths/);
  assert.equal(run(['catalog', 'check', '--bogus'], root).status, 2);
});
