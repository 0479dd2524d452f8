import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffCatalogs, formatDiff } from '../../harness/catalog/diff.ts';
import { parseCatalog } from '../../harness/catalog/parse.ts';
import type { RequirementRecord } from '../../harness/catalog/types.ts';
import { catalogText, RECORDS } from './project-fixture.ts';

const records: RequirementRecord[] = RECORDS.map((r) => ({
  id: r.id,
  title: r.title,
  anchor: r.anchor,
  section: r.section,
  summary: 'x'.repeat(12),
  applies_to: ['server'],
  profiles: ['server', 'full'],
  feature: `features/${r.anchor}.feature`,
  references: [{ type: 'normative', anchor: r.anchor }],
}));

const diff = (edit: (text: string) => string) => diffCatalogs(parseCatalog(catalogText(), 'old.md'), parseCatalog(edit(catalogText()), 'new.md'), records);

test('identical catalogs have no changes', () => {
  const result = diff((t) => t);
  assert.deepEqual(result.changes, []);
  assert.match(formatDiff(result), /no invariant added/);
});

test('a new title over the same body is a rename, with the affected record', () => {
  const result = diff((t) => t.replace('### Second Rule', '### Second Rule Renamed'));
  assert.deepEqual(result.changes.map((c) => [c.kind, c.oldTitle, c.title, c.affects.map((a) => a.id)]), [['renamed', 'Second Rule', 'Second Rule Renamed', ['SYNC-ALPHA-002']]]);
});

test('a new body under the same heading is a change', () => {
  const result = diff((t) => t.replace('Everyone MUST do the third thing.', 'Everyone MUST do the third thing twice.'));
  assert.deepEqual(result.changes.map((c) => [c.kind, c.anchor, c.affects[0]?.feature]), [['changed', 'third-rule', 'features/third-rule.feature']]);
  assert.notEqual(result.changes[0]?.oldSha256, result.changes[0]?.newSha256);
});

test('added, removed and moved invariants are listed', () => {
  const result = diff((t) => `${t.replace(/### First Rule\n\nServers MUST do the first thing.\n/, '')}\n### Fourth Rule\n\nA new rule.\n`);
  assert.deepEqual(result.changes.map((c) => [c.kind, c.title]).sort(), [['added', 'Fourth Rule'], ['removed', 'First Rule']]);
  const moved = diff((t) => t.replace('## Beta Invariants\n', '').replace('### Second Rule', '## Beta Invariants\n\n### Second Rule'));
  assert.deepEqual(moved.changes.map((c) => [c.kind, c.title, c.oldSection, c.section]), [['moved', 'Second Rule', 'Alpha Invariants', 'Beta Invariants']]);
  assert.match(formatDiff(moved), /0 added, 0 removed, 0 renamed, 0 changed, 1 moved/);
});
