/**
 * SYNC-LOCAL-004 Rejection Inspectability
 * (features/local-metadata/rejection-inspectability.feature): the steps only
 * this requirement uses. A rejection is read through the client's inspection
 * calls when it first appears and compared, field by field, after restarts,
 * syncs, a schema reset and a rebuild; the proxy's records say whether the
 * client sent the rejected mutation again. Helpers are in
 * steps/support/local-queue/rejections.ts.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { fieldIdEverPublished, goOffline, goOnline, member, pictureOf, rejectionsOf, remember, rememberedRejection } from '../support/local-queue/rejections.ts';
import { deliveredOutcomes, pushesOf } from '../support/mutations/pushes.ts';
import { lastWrite, thatMutationOf } from '../support/mutations/writes.ts';
import { ident, publishChange } from '../support/schema-and-versions/manifests.ts';
import { cellValue } from '../support/values.ts';
import { labelledVersion } from '../support/version-labels.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import { tableNamed } from '../support/wire-values/recorded.ts';
import { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:stops and starts again|is offline|is online|resets its schema and starts|has synced and reports state )/);

processPhrase(/^the application of client "([^"]+)" clears rejections/);

Given(/^client "([^"]+)" has pushed an? (update|delete) of task "([^"]+)"(?: setting "([^"]+)" to "([^"]*)")?$/, async function (this: SyncWorld, name: string, op: 'update' | 'delete', key: string, column?: string, value?: string) {
  const client = this.wire(name);
  const pk = cellValue(this.model.keyColumn('tasks'), key);
  const base = this.heldVersions.get(SyncWorld.rowKey(client.tableId('tasks'), pk));
  if (base === undefined) throw new Error(`client "${name}" holds no version of task ${key} to base its ${op} on`);
  const columns = op === 'update' && column !== undefined ? { [column]: value } : undefined;
  const reply = await client.push([client.mutation({ op, table: 'tasks', pk, base_version: base, ...(columns === undefined ? {} : { columns }) })]);
  const applied = ((reply.json?.accepted ?? []) as { status?: string }[]).filter((o) => o.status === 'applied').length;
  if (reply.status !== 200 || applied !== 1) throw new Error(`the ${op} of task ${key} by client "${name}" was not applied: ${reply.status} ${reply.text.slice(0, 500)}`);
});

Given('the server write policy rejects titles longer than {int} characters for {string}', async function (this: SyncWorld, limit: number, table: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  // The application's own policy on its source table: a trigger that swallows the write, which the server reports as policy_rejected.
  const fn = `public."${table}_title_limit"`;
  await server.provision.exec(
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF length(NEW.title) > ${limit} THEN RETURN NULL; END IF; RETURN NEW; END $$;
     CREATE TRIGGER "${table}_title_limit" BEFORE INSERT OR UPDATE ON public."${table}" FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
  );
});

Then('client {string} inspection shows a rejection of that mutation with status {string} and code {string}', async function (this: SyncWorld, name: string, status: string, code: string) {
  const id = thatMutationOf(this, name);
  const picture = await pictureOf(this, name, id);
  this.assert.equal({ status: picture.rejection?.status, code: picture.rejection?.code }, { status, code }, `the rejection client "${name}" shows for mutation ${id}: ${JSON.stringify(picture.rejection)}`);
  this.assert.ok(picture.mutation !== undefined, `client "${name}" no longer shows the rejected mutation ${id}`);
  if (picture.rejection !== undefined) remember(this, { client: name, rejection: picture.rejection, mutation: picture.mutation });
});

Then(
  /^client "([^"]+)" inspection shows the same rejection with the same ((?:"[^"]+"(?:, | and )?)+)$/,
  async function (this: SyncWorld, name: string, list: string) {
    const before = rememberedRejection(this);
    const now = await pictureOf(this, name, before.rejection.mutationId);
    const members = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    this.assert.equal(
      Object.fromEntries(members.map((m) => [m, member(now, m)])),
      Object.fromEntries(members.map((m) => [m, member(before, m)])),
      `the rejection of mutation ${before.rejection.mutationId} on client "${name}" against what it showed when it first appeared`,
    );
  },
);

/** Pushes of client `name` carrying `id`, and the index of the first whose answer held its final outcome. */
async function pushesCarrying(world: SyncWorld, name: string, id: string) {
  const pushes = (await pushesOf(world, name)).filter((p) => p.mutations.some((m) => m.mutation_id === id));
  const answered = pushes.findIndex((p) => outcomesOf(p.answerBody).some((o) => o.mutation_id === id));
  return { pushes, answered };
}

Then('the proxy recorded no later push carrying that {string}', async function (this: SyncWorld, what: string) {
  if (what !== 'mutationID') throw new Error(`"${what}" is not what a push carries of a rejection (mutationID)`);
  const id = rememberedRejection(this).rejection.mutationId;
  const name = rememberedRejection(this).client;
  const { pushes, answered } = await pushesCarrying(this, name, id);
  this.assert.ok(answered >= 0, `no push of client "${name}" was answered with an outcome of mutation ${id}`);
  this.assert.equal(
    pushes.slice(answered + 1).map((p) => p.batchId),
    [],
    `pushes of client "${name}" that carried mutation ${id} again after its rejection`,
  );
});

Then('the proxy recorded exactly one push answered with an outcome for that {string}, and no push carrying it after that one', async function (this: SyncWorld, what: string) {
  if (what !== 'mutationID') throw new Error(`"${what}" is not what a push carries of a rejection (mutationID)`);
  const { client: name, rejection } = rememberedRejection(this);
  const id = rejection.mutationId;
  // A push refused as a whole (a schema mismatch) decides nothing about its mutations: the client sends them again in a successor batch.
  const { pushes, answered } = await pushesCarrying(this, name, id);
  const decided = pushes.filter((p) => outcomesOf(p.answerBody).some((o) => o.mutation_id === id));
  this.assert.equal(decided.length, 1, `pushes of client "${name}" answered with an outcome of mutation ${id}: ${decided.map((p) => p.batchId).join(', ')}`);
  this.assert.equal(pushes.slice(answered + 1).map((p) => p.batchId), [], `pushes of client "${name}" that carried mutation ${id} after its outcome`);
});

Then(/^client "([^"]+)" inspection shows (\d+) rejections?$/, async function (this: SyncWorld, name: string, count: string) {
  const rejections = await rejectionsOf(this, name);
  this.assert.equal(rejections.length, Number(count), `rejections client "${name}" shows: ${JSON.stringify(rejections)}`);
});

Then('client {string} inspection shows no rejection', async function (this: SyncWorld, name: string) {
  const rejections = await rejectionsOf(this, name);
  this.assert.equal(rejections, [], `rejections client "${name}" still shows`);
});

When('client {string} stops and starts again', async function (this: SyncWorld, name: string) {
  // The application's own stop and start, not a crash: a clean shutdown must not clear anything either.
  const client = await this.process(name);
  await client.call('stop');
  await client.call('start');
});

When('the application of client {string} clears rejections through the policy call', async function (this: SyncWorld, name: string) {
  await (await this.process(name)).call('clearRejections');
});

Given('client {string} is offline', async function (this: SyncWorld, name: string) {
  await this.process(name);
  await goOffline(this, name);
});

Given('client {string} is online', function (this: SyncWorld, name: string) {
  goOnline(this, name);
});

Given('client {string} has synced and reports state {string} with recovery action {string}', async function (this: SyncWorld, name: string, state: string, action: string) {
  await this.inSyncWindow(name, 'has synced', () => this.syncProcess(name));
  const status = await (await this.process(name)).call<{ status: string; failure?: { recoveryAction?: string; code?: string } }>('getStatus');
  if (status.status !== state || status.failure?.recoveryAction !== action) throw new Error(`client "${name}" reports ${status.status} with ${JSON.stringify(status.failure)}, not ${state} with recovery action ${action}`);
});

When('client {string} resets its schema and starts', async function (this: SyncWorld, name: string) {
  const result = await (await this.process(name)).call<{ status: string }>('resetSchemaAndStart');
  this.lastSync.set(name, { completion: result.status, status: result.status });
});

Then(
  'the push outcome of that mutation is {string} with code {string} and {string} holding the field ID of {string}',
  async function (this: SyncWorld, status: string, code: string, list: string, column: string) {
    const { name } = lastWrite(this);
    const id = thatMutationOf(this, name);
    const outcome = (await deliveredOutcomes(this, name, id)).at(-1);
    const field = await fieldIdEverPublished(this, 'tasks', column);
    this.assert.equal({ status: outcome?.status, code: outcome?.code, [list]: outcome?.[list] }, { status, code, [list]: [field] }, `the last outcome client "${name}" was given for mutation ${id}: ${JSON.stringify(outcome)}`);
  },
);

Then(
  /^client "([^"]+)" inspection shows the rejection with code "([^"]+)" and the mutation with its original "authoredSchema", "baseVersion" "([^"]+)", "clientVersion" and authored field "([^"]+)" value (\d+)$/,
  async function (this: SyncWorld, name: string, code: string, baseLabel: string, column: string, value: string) {
    const id = thatMutationOf(this, name);
    const picture = await pictureOf(this, name, id);
    // What the mutation carried on the wire when it was first sent: the authored intent, before any reset.
    const first = (await pushesOf(this, name)).flatMap((p) => p.mutations).find((m) => m.mutation_id === id);
    this.assert.ok(first !== undefined, `client "${name}" never pushed mutation ${id}`);
    this.assert.equal(picture.rejection?.code, code, `the rejection client "${name}" shows for mutation ${id}: ${JSON.stringify(picture.rejection)}`);
    this.assert.equal(
      { authoredSchema: picture.mutation?.authoredSchema, baseVersion: picture.mutation?.baseVersion, clientVersion: picture.mutation?.clientVersion, [column]: picture.mutation?.columns?.[column] },
      { authoredSchema: first?.authored_schema, baseVersion: labelledVersion(this, baseLabel), clientVersion: first?.client_version, [column]: Number(value) },
      `the mutation record client "${name}" shows for ${id}: ${JSON.stringify(picture.mutation)}`,
    );
    if (picture.rejection !== undefined) remember(this, { client: name, rejection: picture.rejection, mutation: picture.mutation });
  },
);

Then('client {string} inspection still shows that rejection with code {string} and the unchanged mutation', async function (this: SyncWorld, name: string, code: string) {
  const before = rememberedRejection(this);
  const now = await pictureOf(this, name, before.rejection.mutationId);
  this.assert.equal(now.rejection?.code, code, `the rejection client "${name}" shows for ${before.rejection.mutationId}`);
  this.assert.equal({ rejection: member(now, 'rejectionJSON'), mutation: member(now, 'mutationJSON') }, { rejection: member(before, 'rejectionJSON'), mutation: member(before, 'mutationJSON') }, `the rejection and mutation client "${name}" shows against before`);
});

Given(/^the operator publishes a "class_4" manifest that removes column "([^"]+)" from table "([^"]+)"$/, async function (this: SyncWorld, column: string, table: string) {
  await this.readyServer();
  // Removing a field is an incompatible transition: a client on the old schema must reset.
  await publishChange(this, table, `ALTER TABLE public.${ident(table)} DROP COLUMN ${ident(column)};`, 'class_4');
  const spec = this.model.table(table);
  spec.columns = spec.columns.filter((c) => c.name !== column);
});

Then('client {string} inspection shows the rejection with code {string} unchanged', async function (this: SyncWorld, name: string, code: string) {
  // Unchanged against what the client was given and what it sent: the delivered outcome and the mutation as first pushed.
  const id = thatMutationOf(this, name);
  const now = await pictureOf(this, name, id);
  const outcome = (await deliveredOutcomes(this, name, id)).at(-1);
  const sent = (await pushesOf(this, name)).flatMap((p) => p.mutations).find((m) => m.mutation_id === id);
  this.assert.ok(outcome !== undefined && sent !== undefined, `client "${name}" never pushed mutation ${id} or was never given its outcome`);
  this.assert.equal(
    { status: now.rejection?.status, code: now.rejection?.code, serverVersion: now.rejection?.serverVersion ?? null },
    { status: outcome?.status, code, serverVersion: outcome?.server_version ?? null },
    `the rejection client "${name}" shows for ${id} against the outcome it was given: ${JSON.stringify(now.rejection)}`,
  );
  const table = await tableNamed(this, String(sent?.table));
  const authored = Object.fromEntries(Object.entries((sent?.columns ?? {}) as Record<string, unknown>).map(([field, value]) => [table.fields.find((f) => f.field_id === field)?.name ?? field, value]));
  this.assert.equal(
    { op: now.mutation?.op, baseVersion: now.mutation?.baseVersion, clientVersion: now.mutation?.clientVersion, authoredSchema: now.mutation?.authoredSchema, columns: now.mutation?.columns },
    { op: sent?.op, baseVersion: sent?.base_version, clientVersion: sent?.client_version, authoredSchema: sent?.authored_schema, columns: authored },
    `the mutation record client "${name}" shows for ${id} against the mutation it pushed`,
  );
});
