/**
 * SYNC-MUT-006 No Silent Server Apply Echo Loop
 * (features/mutation-and-data-correctness/no-silent-server-apply-echo-loop.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then } from '@cucumber/cucumber';
import { pushesOf } from '../support/mutations/pushes.ts';
import { recordNamed, queueOf } from '../support/mutations/queue.ts';
import { type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

Then(/^client "([^"]+)" query "(.*)" returns the (\w+) of the accepted outcome's server_row$/, async function (this: SyncWorld, name: string, sql: string, column: string) {
  const client = await this.process(name);
  const { rows } = await client.call<{ rows: Record<string, unknown>[] }>('query', { sql, params: [] });
  // The accepted outcome of the scenario's one update: its server_row is what the client must now show.
  const record = (await queueOf(this, name)).find((r) => r.status === 'accepted');
  if (record === undefined) throw new Error(`client "${name}" shows no accepted mutation`);
  const outcome = (await pushesOf(this, name)).flatMap((p) => (p.answerBody?.accepted ?? []) as Obj[]).find((o) => o.mutation_id === record.id);
  this.assert.ok(outcome?.server_row !== undefined, `the accepted outcome of ${record.id} carries no server_row`);
  const table = await tableNamed(this, record.table);
  const fieldId = table.fields.find((f) => f.name === column)?.field_id ?? column;
  const expected = (outcome.server_row as Obj)[fieldId];
  this.assert.ok(typeof expected === 'string', `the server_row of ${record.id} has no ${column}`);
  this.assert.equal(rows.map((row) => row[column]), [expected], `${column} client "${name}" shows after applying the outcome`);
});

Then('the proxy recorded exactly one push from client {string}', async function (this: SyncWorld, name: string) {
  const pushes = await pushesOf(this, name);
  this.assert.equal(pushes.length, 1, `push requests of client "${name}": ${pushes.map((p) => p.mutations.map((m) => `${String(m.op)} ${JSON.stringify(m.pk)}`).join(', ')).join(' | ')}`);
  const record = recordNamed(await queueOf(this, name), 'the update of row "n-1"');
  this.assert.equal(pushes[0]?.mutations.map((m) => m.mutation_id), [record?.id], `the one push of client "${name}" carries its one update`);
});
