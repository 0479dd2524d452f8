/**
 * SYNC-PROTO-005 Scope Assignment Authority
 * (features/protocol/scope-assignment-authority.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { member } from '../support/reply.ts';
import { reportedScopes } from '../support/scopes/client-sync.ts';
import { assignedSet, byteSorted, exchangeSummaries, type Loose, presentedScopes } from '../support/scopes/exchanges.ts';
import { addedIds } from '../support/scopes/scope-sets.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^every scope key in every connect and pull request client "([^"]+)" sent/);

Then(
  /^every scope key in every connect and pull request client "([^"]+)" sent was assigned to client "\1" in an earlier response's "scopes\.add" or "scope_updates\.add"$/,
  async function (this: SyncWorld, name: string) {
    const exchanges = exchangeSummaries(await this.proxy(), (await this.process(name)).clientId);
    const unassigned: string[] = [];
    let requests = 0;
    exchanges.forEach((exchange, index) => {
      if (exchange.endpoint !== 'connect' && exchange.endpoint !== 'pull') return;
      requests += 1;
      const held = assignedSet(exchanges.slice(0, index));
      for (const scope of presentedScopes(exchange)) if (!held.has(scope)) unassigned.push(`${exchange.endpoint} #${exchange.seq}: ${scope}`);
    });
    this.assert.ok(requests > 0, `client "${name}" sent no connect or pull`);
    this.assert.equal(unassigned, [], `scopes client "${name}" presented without an assignment`);
  },
);

Then('client {string} reports exactly the scopes the server assigned to it', async function (this: SyncWorld, name: string) {
  const exchanges = exchangeSummaries(await this.proxy(), (await this.process(name)).clientId);
  const assigned = byteSorted(assignedSet(exchanges));
  this.assert.ok(assigned.length > 0, `the server assigned no scope to client "${name}"`);
  this.assert.equal(byteSorted((await reportedScopes(this, name)).map((s) => s.scopeId)), assigned, `scopes client "${name}" reports`);
});

Then('no response recorded for client {string} contains row {string}', async function (this: SyncWorld, name: string, row: string) {
  const exchanges = exchangeSummaries(await this.proxy(), this.wire(name).clientId);
  this.assert.ok(exchanges.length > 0, `no exchange of client "${name}" was recorded`);
  const leaking = exchanges.filter((e) => JSON.stringify(e.response ?? null).includes(JSON.stringify(row)));
  this.assert.equal(
    leaking.map((e: Loose) => `${e.endpoint} #${e.seq}`),
    [],
    `responses to client "${name}" carrying row ${row}`,
  );
});

Then('the scopes added in the response are exactly the scopes client {string} holds', function (this: SyncWorld, name: string) {
  const reply = this.lastReply();
  const held = byteSorted(this.wire(name).cursors.keys());
  this.assert.ok(held.length > 0, `client "${name}" holds no scope to compare with`);
  this.assert.equal(addedIds(this, reply), held, `scopes added by ${reply.text.slice(0, 500)}`);
});

Then('the response member {string} lists exactly these scopes, each with cursor null:', function (this: SyncWorld, pointer: string, table: DataTable) {
  const reply = this.lastReply();
  const expected = byteSorted(table.hashes().map((row) => row.scope ?? '')).map((id) => ({ id, cursor: null }));
  this.assert.equal(member(reply.json, pointer), expected, `member ${pointer} of ${reply.text.slice(0, 800)}`);
});
