/**
 * SYNC-SCHEMA-002 Deterministic Schema Class Dispatch
 * (features/schema-and-retention/deterministic-schema-class-dispatch.feature):
 * the steps only this requirement uses. The lineage of the Background is
 * published on demand by steps/support/schema-dispatch/lineage.ts; harness
 * clients ("H", "N") speak the protocol through the proxy, client "A" is the
 * client under test: its requests are read from the proxy's records, its
 * state through the client adapter's inspection calls. Helpers are in
 * steps/support/schema-dispatch/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { isResponse } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, clientIdOf, deliveredOf, exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { generatedSeed } from '../support/generated-seed.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { lastSyncs } from '../support/schema-and-versions/traffic.ts';
import { clientPicture, pictureState, type QueuePicture, sealedBatches, tasksMutations } from '../support/schema-dispatch/client-picture.ts';
import { type ConnectState, drawStates, type Expected, expectedFor } from '../support/schema-dispatch/generated-states.ts';
import { declareLineage, lineageReference, publishUpTo } from '../support/schema-dispatch/lineage.ts';
import { dispatchState, dotted, parseMemberList } from '../support/schema-dispatch/state.ts';
import { snapshotOf } from '../support/wire-values/client-state.ts';
import { setMemberRule } from '../support/wire-values/response-rewrite.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the schema lineage used below is:', function (this: SyncWorld, table: DataTable) {
  declareLineage(this, table);
});

Given('the operator has published the lineage up to version {int}', async function (this: SyncWorld, version: number) {
  await publishUpTo(this, version);
});

Given(
  /^the harness client "([^"]+)" of user "([^"]+)" has (connected|completed a sync) while lineage version (\d+) was current$/,
  async function (this: SyncWorld, name: string, user: string, how: string, version: string) {
    await publishUpTo(this, Number(version));
    const client = this.newWire(name, user);
    const reply = await client.connect();
    if (reply.status !== 200 || reply.json?.schema?.action !== 'replace') throw new Error(`the fresh connect of client "${name}" was answered ${reply.status} ${reply.text.slice(0, 300)}`);
    const expected = lineageReference(this, Number(version));
    if (client.schema.version !== expected.version || client.schema.hash !== expected.hash) throw new Error(`client "${name}" installed ${JSON.stringify(client.schema)}, not lineage version ${version}`);
    if (how === 'completed a sync') {
      await client.catchUp();
    }
  },
);

When(/^the harness client "([^"]+)" connects presenting schema (\{.*\})$/, async function (this: SyncWorld, name: string, json: string) {
  await this.wire(name).connect({ schema: JSON.parse(json) });
});

When(/^the harness client "([^"]+)" of user "([^"]+)" connects for the first time with schema (\{.*\})$/, async function (this: SyncWorld, name: string, user: string, json: string) {
  await this.newWire(name, user).connect({ schema: JSON.parse(json) });
});

Given('the harness client {string} has received schema action {string}', async function (this: SyncWorld, name: string, action: string) {
  const reply = await this.wire(name).connect();
  if (reply.status !== 200 || reply.json?.schema?.action !== action) throw new Error(`client "${name}" was answered ${reply.status} ${reply.text.slice(0, 300)}, not action ${action}`);
});

When('the operator changes the membership rule of {string} without publishing a manifest', async function (this: SyncWorld, table: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  const key = this.model.keyColumn(table);
  // The same placement written as a new function: a server-only (Class 1) change, nothing a client sees.
  const fn = `public."${table}_class_one_rule"`;
  await server.provision.exec(`CREATE FUNCTION ${fn}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || r.owner_id FROM synchro_projection."${table}" r WHERE r."${key.name}" = p_key AND r.owner_id IS NOT NULL;
END;`);
  await server.provision.reconfigureMembership(`public."${table}"`, fn);
});

Then(/^"schema\.version" is (\d+) and "schema\.hash" is the hash of lineage version (\d+)$/, function (this: SyncWorld, version: string, lineage: string) {
  const reply = this.lastReply();
  const expected = lineageReference(this, Number(lineage));
  this.assert.equal(
    { version: reply.json?.schema?.version, hash: reply.json?.schema?.hash },
    { version: Number(version), hash: expected.hash },
    `the schema member of the connect answer ${reply.text.slice(0, 400)}`,
  );
});

Then(/^"([a-z_.]+)" is (\d+)$/, function (this: SyncWorld, path: string, value: string) {
  const reply = this.lastReply();
  this.assert.equal(dotted(reply.json, path), Number(value), `member ${path} of the ${reply.endpoint} answer ${reply.text.slice(0, 400)}`);
});

const ACTION_TABLE: Record<string, { required: string[]; forbidden: string[] }> = {
  none: { required: [], forbidden: ['schema_definition', 'affected_scopes', 'schema.reason'] },
  replace: { required: ['schema_definition'], forbidden: ['affected_scopes', 'schema.reason'] },
  rebuild_local: { required: ['schema_definition', 'affected_scopes'], forbidden: ['schema.reason'] },
  unsupported: { required: ['schema.reason'], forbidden: ['schema_definition', 'affected_scopes'] },
};

Then('the connect response carries exactly the members the action table requires for {string}', async function (this: SyncWorld, action: string) {
  const rule = ACTION_TABLE[action];
  if (rule === undefined) throw new Error(`"${action}" is not a protocol 3 schema action`);
  const reply = this.lastReply();
  const body = reply.json as Record<string, unknown> | undefined;
  const has = (path: string) => dotted(body, path) !== undefined;
  this.assert.equal(
    { schema: ['version', 'hash', 'action'].filter((m) => !has(`schema.${m}`)), required: rule.required.filter((m) => !has(m)), forbidden: rule.forbidden.filter(has) },
    { schema: [], required: [], forbidden: [] },
    `members of the "${action}" connect answer ${reply.text.slice(0, 600)}`,
  );
  // The manifest that goes with replace or rebuild_local is the current immutable one, byte for byte as published.
  if (rule.required.includes('schema_definition')) {
    const current = await currentManifest(this);
    this.assert.equal(body?.schema_definition, current, 'schema_definition against the manifest the server serves as current');
  }
  if (rule.required.includes('affected_scopes')) {
    const affected = body?.affected_scopes as unknown[] | undefined;
    this.assert.ok(Array.isArray(affected) && affected.length > 0, `affected_scopes of a rebuild_local answer is a nonempty list: ${JSON.stringify(affected)}`);
  }
});

Then(/^member "([a-z_.]+)" is (absent|"[^"]*")$/, function (this: SyncWorld, path: string, expected: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
  this.assert.equal(dotted(reply.json, path), expected === 'absent' ? undefined : JSON.parse(expected), `member ${path} of the ${reply.endpoint} answer ${reply.text.slice(0, 400)}`);
});

Then('members {string} and {string} are absent', function (this: SyncWorld, first: string, second: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
  this.assert.equal([first, second].filter((m) => dotted(reply.json, m) !== undefined), [], `members present in the ${reply.endpoint} answer ${reply.text.slice(0, 400)}`);
});

Then('member {string} is an integer of at least {int}', function (this: SyncWorld, path: string, low: number) {
  const reply = this.lastReply();
  const value = dotted(reply.json, path);
  this.assert.ok(Number.isSafeInteger(value) && (value as number) >= low, `member ${path} of the ${reply.endpoint} answer is ${JSON.stringify(value)}`);
});

When(
  /^the harness sends a raw connect request as client "([^"]+)" of user "([^"]+)" with "protocol_version" (\d+), "schema" (\{.*?\}) and (its current "client_generation"|"schema_reset" true|no "client_generation")$/,
  async function (this: SyncWorld, name: string, user: string, protocol: string, schema: string, extra: string) {
    const known = this.hasWire(name);
    const client = known ? this.wire(name) : this.newWire(name, user);
    const body: Record<string, unknown> = { ...client.connectBody(), protocol_version: Number(protocol), schema: JSON.parse(schema) };
    if (extra === '"schema_reset" true') body.schema_reset = true;
    if (extra === 'no "client_generation"') delete body.client_generation;
    if (extra === 'its current "client_generation"' && client.generation === undefined) throw new Error(`client "${name}" has no generation to present`);
    // Sent as is, without installing anything from the answer: the request is wrong on purpose.
    await client.post('/sync/connect', body, { invalid: true, endpoint: 'connect' });
  },
);

Then(/^the error body carries exactly the members (.+)$/, function (this: SyncWorld, list: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Record<string, unknown>;
  const extra = Object.fromEntries(Object.entries(error).filter(([k]) => !['code', 'message', 'retryable'].includes(k)));
  this.assert.equal(extra, parseMemberList(list), `members of the error body beyond code, message and retryable: ${reply.text.slice(0, 400)}`);
});

When(/^the harness client "([^"]+)" sends a valid (push|pull|rebuild) request presenting schema version (\d+)$/, async function (this: SyncWorld, name: string, endpoint: string, version: string) {
  const client = this.wire(name);
  const schema = lineageReference(this, Number(version));
  if (endpoint === 'push') {
    const mutation = client.mutation({ op: 'insert', table: 'tasks', pk: 'stale-schema-task', columns: { owner_id: client.userId, title: 'written under an old schema' } });
    await client.push([{ ...mutation, authored_schema: schema }], { schema });
  } else if (endpoint === 'pull') {
    await client.pull({ schema });
  } else {
    const scope = [...client.cursors.keys()][0];
    if (scope === undefined) throw new Error(`client "${name}" holds no scope to rebuild`);
    await client.rebuildPage(scope, crypto.randomUUID(), null, 100, { schema });
  }
});

Then(/^the error body has "current_schema" equal to lineage version (\d+) and "received_schema" equal to lineage version (\d+)$/, function (this: SyncWorld, current: string, received: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Record<string, unknown>;
  this.assert.equal(
    { current_schema: error.current_schema, received_schema: error.received_schema },
    { current_schema: lineageReference(this, Number(current)), received_schema: lineageReference(this, Number(received)) },
    `the schema members of the error body ${reply.text.slice(0, 400)}`,
  );
});

When(/^the harness client "([^"]+)" pushes batch "([^"]+)" inserting task "([^"]+)" presenting schema version (\d+)$/, async function (this: SyncWorld, name: string, batch: string, task: string, version: string) {
  const client = this.wire(name);
  const state = dispatchState(this);
  const schema = lineageReference(this, Number(version));
  // The same batch and mutation IDs every time the scenario names them: a retry of the refused batch, not a new one.
  const batchId = state.labels.get(batch) ?? crypto.randomUUID();
  state.labels.set(batch, batchId);
  const label = `${task}-insert`;
  const mutationId = state.labels.get(label) ?? crypto.randomUUID();
  state.labels.set(label, mutationId);
  const authored = state.authored.get(label) ?? schema;
  state.authored.set(label, authored);
  const mutation = client.mutation({ op: 'insert', table: 'tasks', pk: task, mutation_id: mutationId, client_version: state.clientVersion(label), columns: { owner_id: client.userId, title: `task ${task}` } });
  await client.post('/sync/push', { ...client.pushBody([{ ...mutation, authored_schema: authored }], batchId), schema }, { endpoint: 'push' });
});

Then('the push response lists mutation {string} as {string}', function (this: SyncWorld, label: string, status: string) {
  const reply = this.lastReply();
  const id = dispatchState(this).labels.get(label);
  if (id === undefined) throw new Error(`no mutation "${label}" was pushed in this scenario`);
  const outcomes = [...((reply.json?.accepted ?? []) as Record<string, unknown>[]), ...((reply.json?.rejected ?? []) as Record<string, unknown>[])];
  this.assert.equal(outcomes.filter((o) => o.mutation_id === id).map((o) => o.status), [status], `outcomes of mutation ${label} (${id}) in ${reply.text.slice(0, 400)}`);
});

When(/^the harness client "([^"]+)" pulls presenting schema version (\d+)$/, async function (this: SyncWorld, name: string, version: string) {
  const client = this.wire(name);
  dispatchState(this).scopeSetVersionBefore.set(name, client.scopeSetVersion);
  await client.pull({ schema: lineageReference(this, Number(version)) });
});

Then('member "scope_set_version" is one more than before the refused pull', function (this: SyncWorld) {
  const reply = this.lastReply();
  const before = [...dispatchState(this).scopeSetVersionBefore.values()].at(-1);
  if (before === undefined) throw new Error('no refused pull was sent in this scenario');
  this.assert.equal(reply.json?.scope_set_version, before + 1, `scope_set_version of the ${reply.endpoint} answer ${reply.text.slice(0, 400)}`);
});

interface GeneratedCase {
  state: ConnectState;
  expected: Expected;
  status: number;
  body: Record<string, unknown> | undefined;
  text: string;
}

const generatedCases = new WeakMap<SyncWorld, { seed: number; cases: GeneratedCase[] }>();

When(
  /^for many generated client states the harness sends a connect, each state drawn from: installed reference among lineage versions 1 to 4, an unknown reference or the fresh sentinel; "schema_reset" absent, false or true; "client_generation" present or absent; and 0 to 3 assigned team scopes$/,
  async function (this: SyncWorld) {
    const server = await this.readyServer();
    if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability to assign team scopes`);
    const seed = generatedSeed();
    this.attach(`generated connect states: seed ${seed} (replay with SYNCHRO_SEED=${seed})`, 'text/plain');
    const cases: GeneratedCase[] = [];
    for (const [i, state] of drawStates(seed, 12).entries()) {
      const user = `gen${i}`;
      const teams = Array.from({ length: state.teams }, (_, t) => `team:t_${t + 1}`);
      for (const team of teams) await server.scopes.grantUserScope(user, team);
      const client = this.newWire(`G${i}`, user);
      // A state that names a generation or an installed schema belongs to an identity the server already knows.
      const known = state.reference !== 'sentinel' || state.generation;
      if (known) {
        const first = await client.connect();
        if (first.status !== 200) throw new Error(`seed ${seed}: the first connect of generated client ${i} was answered ${first.status} ${first.text.slice(0, 300)}`);
      }
      const reference =
        state.reference === 'sentinel' ? { version: 0, hash: '' } : state.reference === 'unknown' ? { version: 9, hash: '9'.repeat(64) } : lineageReference(this, Number(state.reference.slice(1)));
      const body: Record<string, unknown> = { ...client.connectBody(), schema: reference };
      if (!state.generation) delete body.client_generation;
      if (state.reset !== 'absent') body.schema_reset = state.reset === 'true';
      const reply = await client.post('/sync/connect', body, { endpoint: 'connect', invalid: true });
      const expected = expectedFor(state, [`user:${user}`, ...teams]);
      cases.push({ state, expected, status: reply.status, body: reply.json as Record<string, unknown> | undefined, text: reply.text });
    }
    generatedCases.set(this, { seed, cases });
  },
);

function generated(world: SyncWorld): { seed: number; cases: GeneratedCase[] } {
  const run = generatedCases.get(world);
  if (run === undefined) throw new Error('no generated connect states were sent in this scenario');
  return run;
}

Then('no response carries schema action {string}', function (this: SyncWorld, action: string) {
  const { seed, cases } = generated(this);
  const answered = cases.filter((c) => c.status === 200);
  this.assert.ok(answered.length > 0, `seed ${seed}: no generated connect was answered 200`);
  this.assert.equal(
    cases.filter((c) => (c.body?.schema as { action?: unknown } | undefined)?.action === action || c.text.includes(`"action":"${action}"`)).map((c) => JSON.stringify(c.state)),
    [],
    `seed ${seed}: generated states answered with action "${action}"`,
  );
});

Then(
  /^every 200 response has an action among "none", "replace", "rebuild_local" and "unsupported" that the dispatch table gives for that state$/,
  function (this: SyncWorld) {
    const { seed, cases } = generated(this);
    const seen = cases.map((c) => {
      const schema = c.body?.schema as { action?: string; reason?: string } | undefined;
      if (c.status !== 200) return { state: c.state, status: c.status };
      const affected = c.body?.affected_scopes as string[] | undefined;
      return { state: c.state, status: 200, action: schema?.action, ...(schema?.reason === undefined ? {} : { reason: schema.reason }), ...(affected === undefined ? {} : { affected }) };
    });
    this.assert.equal(seen, cases.map((c) => ({ state: c.state, ...c.expected })), `seed ${seed}: answers to the generated connect states against the dispatch table`);
  },
);

// --- Client "A", the client under test, carrying out a dispatched action or waiting for an explicit reset.

processPhrase(/^client "([^"]+)" (?:of user "[^"]+" has completed a sync while lineage|has a local-only table|has \d+ queued mutations|installed manifest|still has manifest)/);
processPhrase(/^the harness has recorded the mutations, batches and rejections client "([^"]+)" inspects$/);
processPhrase(/^the proxy rewrites the next connect response for client "([^"]+)"/);
processPhrase(/^no durable state changed on client "([^"]+)" other than/);

Given(/^client "([^"]+)" of user "([^"]+)" has completed a sync while lineage version (\d+) was current$/, async function (this: SyncWorld, name: string, user: string, version: string) {
  await publishUpTo(this, Number(version));
  this.clientUsers.set(name, user);
  await this.inSyncWindow(name, 'has synced', async () => {
    const result = await this.syncProcess(name);
    if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
    if (result.completion !== 'idle') throw new Error(`client "${name}" ended its sync "${result.completion}" in state ${result.status}, not idle`);
  });
});

Then(/^the proxy recorded no "push", "pull" or "rebuild" request from client "([^"]+)" after that connect$/, async function (this: SyncWorld, name: string) {
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, { from: sync?.from, unfinished: true });
  const index = sent.findIndex((e) => e.endpoint === 'connect' && (bodyOf(deliveredOf(e)?.body)?.schema as { action?: string } | undefined)?.action === 'unsupported');
  this.assert.ok(index >= 0, `client "${name}" received no "unsupported" connect answer during that sync`);
  this.assert.equal(
    sent.slice(index + 1).filter((e) => e.endpoint === 'push' || e.endpoint === 'pull' || e.endpoint === 'rebuild').map((e) => `${e.endpoint} #${e.seq}`),
    [],
    `requests client "${name}" sent after the connect answered "unsupported"`,
  );
});

Then(/^the proxy recorded no request from client "([^"]+)" during that sync$/, async function (this: SyncWorld, name: string) {
  const [sync] = lastSyncs(this, name);
  const proxy = await this.proxy();
  const clientId = await clientIdOf(this, name);
  // The sync ran with no other client talking: anything in its window, with or without a client id, came from this client.
  const window = proxy.exchanges.slice(sync?.from, sync?.to);
  this.assert.ok(sync !== undefined && sync.to !== undefined, `client "${name}" ran no finished sync step`);
  this.assert.equal(
    window.map((e) => `${e.method} ${e.path} ${objectBodyOf(e.requestBody)?.client_id === clientId ? '(its id)' : ''}`),
    [],
    `requests recorded during the last sync of client "${name}"`,
  );
});

Given('client {string} has a local-only table {string} holding {int} rows', async function (this: SyncWorld, name: string, table: string, count: number) {
  const client = await this.process(name);
  const rows = Array.from({ length: count }, (_, i) => ({ sql: `INSERT INTO "${table}" (id, body) VALUES (?, ?)`, params: [`${table}-${i + 1}`, `local draft ${i + 1}`] }));
  await client.call('transaction', { statements: [{ sql: `CREATE TABLE "${table}" (id TEXT PRIMARY KEY, body TEXT NOT NULL)` }, ...rows] });
  pictureState(this).localTables.set(table, (await client.call<{ rows: object[] }>('query', { sql: `SELECT * FROM "${table}" ORDER BY id` })).rows);
});

Given('client {string} has {int} queued mutations on {string} made while offline', async function (this: SyncWorld, name: string, count: number, table: string) {
  const client = await this.process(name);
  const owner = this.userOf(name);
  for (let i = 1; i <= count; i += 1) {
    await client.call('execute', { sql: `INSERT INTO "${table}" (id, owner_id, title) VALUES (?, ?, ?)`, params: [`offline-${i}`, owner, `written offline ${i}`] });
  }
  // The application syncs while the network is down: the client seals its batch and the push never reaches the server.
  const proxy = await this.proxy();
  const clientId = await clientIdOf(this, name);
  proxy.inject({ endpoint: 'push', times: 1, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId, fault: { kind: 'status', status: 503, retryAfter: '1' } });
  await this.inSyncWindow(name, 'has synced', () => this.syncProcess(name));
  const queued = await tasksMutations(this, name, table);
  const sealed = await sealedBatches(this, name);
  if (queued.length !== count || sealed.length === 0) throw new Error(`client "${name}" shows ${queued.length} queued mutations on ${table} and ${sealed.length} sealed batches after its offline sync, not ${count} and at least one`);
});

Given('the harness has recorded the mutations, batches and rejections client {string} inspects', async function (this: SyncWorld, name: string) {
  pictureState(this).before.set(name, await clientPicture(this, name));
  pictureState(this).mark.set(name, (await this.proxy()).exchanges.length);
});

function recorded(world: SyncWorld, name: string): QueuePicture {
  const picture = pictureState(world).before.get(name);
  if (picture === undefined) throw new Error(`the harness recorded no inspection of client "${name}" in this scenario`);
  return picture;
}

Then(/^the proxy recorded a connect from client "([^"]+)" with "schema_reset" true$/, async function (this: SyncWorld, name: string) {
  const from = pictureState(this).mark.get(name);
  const connects = (await exchangesOf(this, name, { from, unfinished: true })).filter((e) => e.endpoint === 'connect');
  this.assert.ok(
    connects.some((e) => objectBodyOf(e.requestBody)?.schema_reset === true),
    `connect requests of client "${name}" since the recording: ${connects.map((e) => JSON.stringify(objectBodyOf(e.requestBody)?.schema_reset)).join(', ') || 'none'}`,
  );
});

Then(
  /^client "([^"]+)" inspection shows the same (\d+) mutation IDs with unchanged authored fields, authored schema and local order$/,
  async function (this: SyncWorld, name: string, count: string) {
    const before = recorded(this, name).mutations;
    const now = (await clientPicture(this, name)).mutations;
    this.assert.equal(before.length, Number(count), `mutations recorded before the reset: ${JSON.stringify(before)}`);
    const keep = (m: Record<string, unknown>) => ({ id: m.id, table: m.table, op: m.op, columns: m.columns, authoredSchema: m.authoredSchema, clientVersion: m.clientVersion, localOrder: m.localOrder });
    this.assert.equal(
      now.filter((m) => before.some((b) => b.id === m.id)).map(keep),
      before.map(keep),
      `the mutations client "${name}" shows after the reset against the recorded ones`,
    );
  },
);

Then('the sealed batches of client {string} are byte-identical to the recorded ones', async function (this: SyncWorld, name: string) {
  const before = recorded(this, name).batches;
  const now = await sealedBatches(this, name);
  this.assert.equal(
    before.map((b) => now.find((n) => n.batchId === b.batchId)?.requestBytes),
    before.map((b) => b.requestBytes),
    `request bytes of the ${before.length} batches client "${name}" had sealed before the reset`,
  );
  // Outcomes recorded before the reset stay inspectable; a reset may add outcomes, never drop or rewrite one.
  const rejections = recorded(this, name).rejections as Record<string, unknown>[];
  const shown = (await clientPicture(this, name)).rejections as Record<string, unknown>[];
  this.assert.equal(rejections.map((r) => shown.find((s) => s.mutationId === r.mutationId)), rejections, `rejections client "${name}" shows against the recorded ones`);
});

Then('the local-only table {string} of client {string} still holds the same {int} rows', async function (this: SyncWorld, table: string, name: string, count: number) {
  const before = pictureState(this).localTables.get(table);
  const client = await this.process(name);
  const now = (await client.call<{ rows: object[] }>('query', { sql: `SELECT * FROM "${table}" ORDER BY id` })).rows;
  this.assert.equal(now.length, count, `rows of local-only table ${table} on client "${name}"`);
  this.assert.equal(now, before, `rows of local-only table ${table} on client "${name}" against those written`);
});

async function installedSchema(world: SyncWorld, name: string): Promise<{ version: number; hash: string } | null> {
  const client = await world.process(name);
  return (await client.call<{ schema: { version: number; hash: string } | null }>('inspectScopes')).schema;
}

Then(/^client "([^"]+)" (?:installed manifest version|still has manifest version) (\d+)(?: installed)?$/, async function (this: SyncWorld, name: string, version: string) {
  const schema = await installedSchema(this, name);
  const expected = lineageReference(this, Number(version));
  this.assert.equal(schema, { version: expected.version, hash: expected.hash }, `the schema client "${name}" reports installed`);
});

Then(/^client "([^"]+)" installed manifest version (\d+) and rebuilt scope "([^"]+)"$/, async function (this: SyncWorld, name: string, version: string, scope: string) {
  const schema = await installedSchema(this, name);
  const expected = lineageReference(this, Number(version));
  this.assert.equal(schema, { version: expected.version, hash: expected.hash }, `the schema client "${name}" reports installed`);
  const from = pictureState(this).mark.get(name);
  const finished = (await exchangesOf(this, name, { from, unfinished: true })).filter(
    (e) => e.endpoint === 'rebuild' && objectBodyOf(e.requestBody)?.scope === scope && isResponse(e.delivered) && e.delivered.status === 200 && bodyOf(deliveredOf(e)?.body)?.has_more === false,
  );
  this.assert.ok(finished.length > 0, `client "${name}" finished no rebuild of ${scope} after the reset`);
});

Then(/^the proxy recorded rebuild requests from client "([^"]+)" for scope "([^"]+)" only$/, async function (this: SyncWorld, name: string, scope: string) {
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, { from: sync?.from, to: sync?.to, unfinished: true });
  this.assert.equal([...new Set(sent.filter((e) => e.endpoint === 'rebuild').map((e) => String(objectBodyOf(e.requestBody)?.scope)))], [scope], `scopes client "${name}" sent rebuild requests for during that sync`);
});

Then(/^the next pull of client "([^"]+)" presents the replacement cursors for scopes "([^"]+)" and "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, { from: sync?.from, to: sync?.to, unfinished: true });
  const connect = sent.find((e) => e.endpoint === 'connect');
  const updates = ((connect === undefined ? undefined : bodyOf(deliveredOf(connect)?.body))?.scope_cursor_updates ?? {}) as Record<string, unknown>;
  const pull = sent.find((e) => e.endpoint === 'pull' && connect !== undefined && e.seq > connect.seq);
  this.assert.ok(pull !== undefined, `client "${name}" sent no pull after its connect during that sync`);
  const presented = (objectBodyOf(pull?.requestBody)?.scopes ?? {}) as Record<string, { cursor?: unknown }>;
  for (const scope of [first, second]) this.assert.ok(typeof updates[scope] === 'string', `the connect answer gave ${scope} a replacement cursor: ${JSON.stringify(updates)}`);
  this.assert.equal(
    { [first]: presented[first]?.cursor, [second]: presented[second]?.cursor },
    { [first]: updates[first], [second]: updates[second] },
    `cursors the first pull of client "${name}" presented against the replacements its connect answer gave`,
  );
});

Given(/^the proxy rewrites the next connect response for client "([^"]+)" to carry "affected_scopes": (\[.*\])$/, async function (this: SyncWorld, name: string, json: string) {
  const proxy = await this.proxy();
  // The picture of the client's durable state the outcome is compared with: taken right before the tampered answer.
  pictureState(this).digest.set(name, await snapshotOf(this, name));
  pictureState(this).metadata.set(name, await protocolMetadata(this, name));
  proxy.inject(setMemberRule(proxy, { endpoint: 'connect', clientId: await clientIdOf(this, name), pointer: '/affected_scopes', value: JSON.parse(json), recomputeChecksum: false }));
});

async function protocolMetadata(world: SyncWorld, name: string): Promise<unknown> {
  const inspected = await (await world.process(name)).call<Record<string, unknown>>('inspectScopes');
  return { schema: inspected.schema, clientGeneration: inspected.clientGeneration, scopeSetVersion: inspected.scopeSetVersion, scopes: inspected.scopes };
}

Then(/^no durable state changed on client "([^"]+)" other than its status and failure record$/, async function (this: SyncWorld, name: string) {
  const before = pictureState(this).digest.get(name);
  if (before === undefined) throw new Error(`no picture of client "${name}" was taken before the tampered answer`);
  const after = await snapshotOf(this, name);
  // Lifecycle status and the stored failure are outside the digest, and retry bookkeeping is excluded. The metadata
  // table also holds the reconnect flag the refused pull (422) set before the tampered connect, so its protocol
  // metadata (schema, generation, scope set, scopes and cursors) is compared through inspection instead.
  const changed = Object.keys({ ...before.sections, ...after.sections }).filter((section) => section !== '_synchro_meta' && before.sections[section] !== after.sections[section]);
  this.assert.equal(changed, [], `durable state of client "${name}" changed in: ${changed.join(', ')}`);
  this.assert.equal(await protocolMetadata(this, name), pictureState(this).metadata.get(name), `schema, generation, scope set and cursors client "${name}" reports against before the tampered answer`);
});
