/**
 * Steps only SYNC-PULL-005 Scope Inclusive Typed Deduplication uses: what
 * the two deliveries of one row through two scopes share, and the exact JSON
 * tokens of the keys (no numeric parse).
 */
import { type DataTable, Then } from '@cucumber/cucumber';
import { canonicalJson } from '../../harness/codec/index.ts';
import { parseStrict, wireText } from '../support/integrity/oracle.ts';
import { drainChanges, lastDrain } from '../support/pull-drains/drain.ts';
import type { Reply } from '../support/reply.ts';
import { lastPull } from '../support/wire-values/operations.ts';
import { tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/**
 * The "pk" member of every change of a pull answer, as the exact JSON text
 * the server wrote (number tokens untouched), with its field ID replaced by
 * the column's name as the feature writes it.
 */
async function rawKeys(world: SyncWorld, reply: Reply): Promise<string[]> {
  const body = parseStrict(Buffer.from(reply.text, 'utf8')) as unknown as Obj | undefined;
  const keys: string[] = [];
  for (const change of (body?.changes ?? []) as Obj[]) {
    const shape = await tableNamed(world, String(change.table));
    const named = Object.entries((change.pk ?? {}) as Obj).map(([fieldId, value]) => [shape.fields.find((f) => f.field_id === fieldId)?.name ?? fieldId, value]);
    keys.push(wireText(Object.fromEntries(named)));
  }
  return keys;
}

Then('both changes carry the same {string} and the same {string}', function (this: SyncWorld, first: string, second: string) {
  const changes = drainChanges(lastDrain(this));
  this.assert.equal(changes.length, 2, `the drain delivered ${changes.length} changes, not the two this compares`);
  const [a, b] = changes as [Obj, Obj];
  for (const member of [first, second]) {
    this.assert.ok(a[member] !== undefined, `the first change has no "${member}": ${JSON.stringify(a)}`);
    this.assert.equal(b[member], a[member], `"${member}" of the two changes`);
  }
});

Then('the "pk" members of the changes, compared as raw JSON tokens without numeric conversion, are exactly:', async function (this: SyncWorld, table: DataTable) {
  const reply = lastPull(this);
  const expected = table.hashes().map((row) => wireText(parseStrict(Buffer.from(row.pk ?? '', 'utf8'))));
  this.assert.equal((await rawKeys(this, reply)).sort(), expected.sort(), `the "pk" members of ${reply.text.slice(0, 2000)}`);
});

Then(/^the "pk" member of the only change, compared as raw JSON tokens without numeric conversion, is (\{.*\})$/, async function (this: SyncWorld, pk: string) {
  const reply = lastPull(this);
  const keys = await rawKeys(this, reply);
  this.assert.equal(keys.length, 1, `the pull response holds ${keys.length} changes: ${reply.text.slice(0, 2000)}`);
  const expected = parseStrict(Buffer.from(pk, 'utf8'));
  if (expected === undefined) throw new Error(`${pk} is not JSON`);
  this.assert.equal(keys[0], wireText(expected), `the "pk" member as sent (canonical form ${canonicalJson(JSON.parse(pk))})`);
});
