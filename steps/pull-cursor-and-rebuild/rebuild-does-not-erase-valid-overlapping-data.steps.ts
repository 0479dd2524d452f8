/**
 * Steps only SYNC-PULL-020 Rebuild Does Not Erase Valid Overlapping Data
 * uses: a pull answer that hides one scope's changes (so that scope's
 * terminal digest no longer matches and it must rebuild), and one provenance
 * edge looked up on the client.
 */
import { Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { clientIdOf } from '../support/exchanges.ts';
import { edgeText, provenanceOf } from '../support/scope-repair/provenance.ts';
import { tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the proxy will remove every change of scope "[^"]+" from the next pull response to client "([^"]+)"$/);

Given('the proxy will remove every change of scope {string} from the next pull response to client {string}', async function (this: SyncWorld, scope: string, name: string) {
  await this.readyServer();
  const proxy = await this.proxy();
  const clientId = await clientIdOf(this, name);
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId,
    fault: {
      kind: 'rewrite',
      describe: `every change of ${scope} removed`,
      // A membership change hidden in flight: the scope's cursor and terminal checksum still say it happened.
      transform: (body) => {
        const changes = (body.changes ?? []) as { scope?: unknown }[];
        if (!changes.some((change) => change.scope === scope)) return undefined;
        body.changes = changes.filter((change) => change.scope !== scope);
        return body;
      },
    },
  });
});

Then('client {string} inspection shows a provenance edge from scope {string} to row {string} of table {string}', async function (this: SyncWorld, name: string, scope: string, pk: string, table: string) {
  const wanted = edgeText(scope, (await tableNamed(this, table)).table_id, pk);
  const edges = (await provenanceOf(this, name)).map((edge) => edgeText(edge.scopeId, edge.table, edge.recordId));
  this.assert.ok(edges.includes(wanted), `client "${name}" reports no provenance edge "${wanted}"; it reports: ${edges.join('; ')}`);
});
