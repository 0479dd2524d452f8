/**
 * SYNC-CAP-002 Wal Is The Only Pull Visible Capture Path
 * (features/server-change-capture/wal-is-the-only-pull-visible-capture-path.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/capture/.
 */
import { Then, When } from '@cucumber/cucumber';
import { edgesOfRow, effectsOfRow, fencesOfMutation, tableIdOf, traceChange } from '../support/capture/inspection.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

When('the capture worker holds that transaction before its materialization commit', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.awaitHold) throw new Error(`server adapter "${server.id}" offers holdBeforeCommit() but no capture.awaitHold() to wait for the hold`);
  await server.capture.awaitHold(this.deadlineMs);
});

Then('server inspection shows the write fence of mutation {string} with coverage {string}', async function (this: SyncWorld, mutationId: string, coverage: string) {
  const fences = await fencesOfMutation(this, mutationId);
  this.assert.ok(fences.length > 0, `server inspection shows no write fence of mutation ${mutationId}`);
  this.assert.equal(
    fences.map((f) => `${f.tableId}/${f.pkText}: ${f.coverage}`),
    fences.map((f) => `${f.tableId}/${f.pkText}: ${coverage}`),
    `coverage of the write fences of mutation ${mutationId}`,
  );
});

Then('server inspection shows no pull effect for row {string} of table {string}', async function (this: SyncWorld, pk: string, table: string) {
  const effects = await effectsOfRow(this, await tableIdOf(this, table), pk);
  this.assert.equal(effects, [], `pull effects stored for row ${pk} of ${table}`);
});

Then('server inspection shows no membership edge for row {string} of table {string}', async function (this: SyncWorld, pk: string, table: string) {
  const edges = await edgesOfRow(this, await tableIdOf(this, table), pk);
  this.assert.equal(edges, [], `membership edges stored for row ${pk} of ${table}`);
});

Then(
  'every change in the pull response maps, through server inspection, to a pull effect whose stream generation, commit position and event ordinal name a durable transaction record and event record',
  async function (this: SyncWorld) {
    const changes = changesOf(lastPull(this));
    this.assert.ok(changes.length > 0, 'the pull response lists changes to trace');
    const traces = [];
    for (const c of changes) {
      traces.push(
        await traceChange(this, { scope: String(c.scope), table: String(c.table), pkText: String(keyValue(c.pk)), serverVersion: String(c.server_version), op: String(c.op) }),
      );
    }
    const untraced = traces.filter((t) => t.effect === null || !t.transactionRecord || !t.eventRecord);
    this.assert.equal(
      untraced.map((t) => `${t.change}: ${t.effect === null ? 'no pull effect' : `effect at ${t.effect.generation} ${t.effect.commit}#${t.effect.ordinal} ${t.transactionRecord ? '' : 'without transaction record '}${t.eventRecord ? '' : 'without event record'}`}`),
      [],
      'pulled changes whose effect does not name a durable transaction and event record',
    );
  },
);
