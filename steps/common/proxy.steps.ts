/**
 * Shared steps (used by several requirements).
 * The validating proxy: faults and rewrites armed for the next answer to a
 * client, aliased tokens, held responses, and what the proxy recorded a
 * client sending.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { StageEndpoint } from '../../harness/proxy/fault-stage.ts';
import { arrangeFailure, ORDINALS } from '../support/client-lifecycle/arranged-failures.ts';
import { processPhrase } from '../support/client-mode.ts';
import { currentManifest } from '../support/integrity/context.ts';
import type { Manifest } from '../support/integrity/oracle.ts';
import { armRowEdit } from '../support/integrity/tampering.ts';
import { armPullMemberFlip } from '../support/scope-repair/tamper.ts';
import { lastPresented, literal } from '../support/opaque-tokens/cursor-presentation.ts';
import { aliasRelay } from '../support/opaque-tokens/tokens.ts';
import { scopesState } from '../support/scopes/state.ts';
import { answerOf, type Obj } from '../support/seeds/seeded-sync.ts';
import { stepValue } from '../support/wire-values/requests.ts';
import { setMemberRule } from '../support/wire-values/response-rewrite.ts';
import type { SyncWorld } from '../support/world.ts';
import { clientIdOf, exchangesOf, objectBodyOf } from '../support/exchanges.ts';

processPhrase(/^the proxy will answer the \w+ \w+ request of client "([^"]+)" with/);

Given(/^the proxy will answer the (next|second|third) (connect|push|pull|rebuild) request of client "([^"]+)" with (.+)$/, async function (this: SyncWorld, ordinal: string, endpoint: StageEndpoint, name: string, failure: string) {
  await arrangeFailure(this, name, endpoint, ORDINALS[ordinal] ?? 1, failure);
});

Given(
  /^the proxy will apply (.+) to the change for row "([^"]+)" in the next pull response to client "([^"]+)"(, keeping its row checksum|, recomputing its row checksum as a lenient decoder would read the row)?$/,
  async function (this: SyncWorld, edit: string, key: string, name: string, how: string | undefined) {
    await armRowEdit(this, name, 'pull', edit, key, how == null ? "none" : how.includes('keeping') ? 'keep' : 'lenient');
  },
);

Given('the proxy aliases the cursors issued to client {string} for scope {string} in issue order:', async function (this: SyncWorld, name: string, scope: string, table: DataTable) {
  const aliases = table.hashes().map((row) => literal(row.alias ?? ''));
  const relay = await aliasRelay(this);
  relay.aliasCursors(await clientIdOf(this, name), scope, aliases);
});

Then(/^client "([^"]+)" presented the cursor (".*") for scope "([^"]+)" in its last pull request$/, async function (this: SyncWorld, name: string, text: string, scope: string) {
  const expected = literal(text);
  const { value } = await lastPresented(this, name, scope);
  this.assert.equal(value, expected, `the cursor client "${name}" presented for ${scope} in its last pull request`);
});

// Releasing lets the started cycle run on; the step returns once it ended (or at the deadline).
When('the proxy releases the held response', async function (this: SyncWorld) {
  (await this.proxy()).release();
  const started = scopesState(this).started;
  const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`a started sync did not end within ${this.deadlineMs} ms`)), this.deadlineMs).unref());
  await Promise.race([Promise.all(started.values()), deadline]);
  started.clear();
});

Then('the pulls of client {string} delivered for {string} exactly the upsert of {string} with {string} {int}', async function (this: SyncWorld, name: string, scope: string, id: string, column: string, value: number) {
  const manifest = (await currentManifest(this)) as Manifest & { tables: { table_id: string; name?: string; primary_key_field_id: string; fields: { field_id: string; name?: string }[] }[] };
  const table = manifest.tables.find((t) => t.name === 'products' || t.table_id === 'products');
  const fieldId = table?.fields.find((f) => f.name === column || f.field_id === column)?.field_id ?? column;
  const pkField = table?.primary_key_field_id ?? 'id';
  const changes = (await exchangesOf(this, name, { orUserCredential: true }))
    .filter((e) => e.endpoint === 'pull')
    .flatMap((e) => ((answerOf(e)?.body?.changes ?? []) as Obj[]).filter((c) => c.scope === scope));
  this.assert.equal(
    changes.map((c) => ({ op: c.op, pk: (c.pk as Obj | undefined)?.[pkField], value: (c.row as Obj | undefined)?.[fieldId] })),
    [{ op: 'upsert', pk: id, value }],
    `the changes of ${scope} the pulls of client "${name}" delivered`,
  );
});

Then('the proxy recorded a rebuild of scope {string} from client {string} starting with {string} null', async function (this: SyncWorld, scope: string, name: string, member: string) {
  const rebuilds = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'rebuild' && objectBodyOf(e.requestBody)?.scope === scope);
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent a rebuild request for ${scope}`);
  const first = objectBodyOf(rebuilds[0]?.requestBody ?? Buffer.from(''));
  this.assert.ok(first !== undefined && member in first && first[member] === null, `the first rebuild request for ${scope} has "${member}" null: ${JSON.stringify(first)}`);
});

Given(
  /^the proxy will set "([^"]+)" to (null|true|false|-?[0-9][^ ]*|"(?:[^"\\]|\\.)*"|\{.*\}|\[.*\]|[A-Z](?: [+-] [0-9]+)?) in the next (connect|push|pull|rebuild) response to client "([^"]+)"( and recompute its row checksum)?$/,
  async function (this: SyncWorld, pointer: string, value: string, endpoint: 'connect' | 'push' | 'pull' | 'rebuild', name: string, recompute: string | undefined) {
    await this.readyServer();
    const proxy = await this.proxy();
    proxy.inject(setMemberRule(proxy, { endpoint, clientId: await clientIdOf(this, name), pointer, value: stepValue(this, value), recomputeChecksum: Boolean(recompute) }));
  },
);

Given('the proxy will flip one hex digit of {string} in the next pull response to client {string}', async function (this: SyncWorld, pointer: string, name: string) {
  await armPullMemberFlip(this, name, pointer);
});
