/**
 * The capability table of docs/adapters.md is generated from the feature
 * tags (scripts/capability-table.ts): this test fails as soon as a feature's
 * `@cap:` tags, a requirement's scenarios or the controls that earn a
 * capability change without the table being regenerated.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ALL_CAPABILITIES } from '../../harness/adapters/capabilities.ts';
import { capabilityTable, TABLE_END, TABLE_START, withTable } from '../../scripts/capability-table.ts';

const root = new URL('../../', import.meta.url).pathname;

test('docs/adapters.md holds the capability table generated from the features', () => {
  const doc = readFileSync(`${root}docs/adapters.md`, 'utf8');
  const table = capabilityTable(root);
  assert.equal(withTable(doc, table), doc, 'the table is out of date: run node scripts/capability-table.ts --write');
});

test('the table has a row per capability and counts what the tags say', () => {
  const table = capabilityTable(root);
  for (const capability of ALL_CAPABILITIES) assert.match(table, new RegExp(`^\\| \`${capability}\` \\|`, 'm'), capability);
  // SYNC-OPS-005 (operational data redaction) is the requirement whose scenarios read the server's logs.
  assert.match(table, /^\| `logs` \| controls `logs.mark`, `logs.since`; optional: `logs.metrics`, `logs.spans` \| \d+ \| [^|]*SYNC-OPS-005 \(\d+\/\d+\)/m);
});

test('a table edited by hand or a changed tag is caught', () => {
  const doc = readFileSync(`${root}docs/adapters.md`, 'utf8');
  const table = capabilityTable(root);
  const edited = withTable(doc, table.replace('| `clock` |', '| `clock (edited)` |'));
  assert.notEqual(withTable(edited, table), edited, 'regenerating an edited table changes it');
  assert.throws(() => withTable(doc.replace(TABLE_START, '').replace(TABLE_END, ''), table), /has no .* section/);
});
