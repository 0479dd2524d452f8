/**
 * SYNC-OPS-005 Operational Data Redaction: canaries planted in every
 * identifying and payload position, the server driven through successful and
 * failing paths, and every operational output the adapter exposes searched
 * for them (steps/support/redaction/canaries.ts).
 */
import { type DataTable, Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { capturedLogs, findForbidden, forbiddenTexts, plantCanaries, plantedCanaries } from '../support/redaction/canaries.ts';
import { type MetricSample, parseExposition } from '../support/redaction/exposition.ts';
import { literal } from '../support/scopes/roles.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { WireClient } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';

When('the harness uses these canaries:', function (this: SyncWorld, table: DataTable) {
  plantCanaries(this, table.hashes() as { position: string; canary: string }[]);
});

/** The client the workload's later steps ("the same client") go on with. */
const workloadClient = new WeakMap<SyncWorld, { client: WireClient; row: string; version: string }>();

function sameClient(world: SyncWorld) {
  const known = workloadClient.get(world);
  if (known === undefined) throw new Error('no client ran the workload yet in this scenario');
  return known;
}

When(
  'client {string} of user {string} connects, rebuilds every assigned scope, pushes an insert of row {string} with title {string} as mutation {string} and pulls until {string} is false',
  async function (this: SyncWorld, clientId: string, user: string, row: string, title: string, mutationId: string, _member: string) {
    await this.readyServer();
    const client = this.wire(clientId, user);
    // The client id on the wire is the canary itself.
    client.clientId = clientId;
    await client.connectAndRebuild();
    const reply = await client.push([client.mutation({ op: 'insert', table: 'tasks', pk: row, columns: { owner_id: user, title }, mutation_id: mutationId })]);
    const version = reply.json?.accepted?.[0]?.server_version;
    if (reply.status !== 200 || typeof version !== 'string') throw new Error(`the insert of ${row} was not applied: ${reply.status} ${reply.text.slice(0, 300)}`);
    await awaitCapture(this);
    await client.pullAll();
    workloadClient.set(this, { client, row, version });
  },
);

When('the same client pushes an update of row {string} with a stale base version, producing a conflict', async function (this: SyncWorld, row: string) {
  const { client, version } = sameClient(this);
  // Another writer moves the row first; the client's version is then stale.
  const fresher = await client.push([client.mutation({ op: 'update', table: 'tasks', pk: row, columns: { title: 'moved on' }, base_version: version })]);
  if (fresher.status !== 200 || fresher.json?.accepted?.length !== 1) throw new Error(`the first update of ${row} was not applied: ${fresher.status} ${fresher.text.slice(0, 300)}`);
  const reply = await client.push([client.mutation({ op: 'update', table: 'tasks', pk: row, columns: { title: 'stale write' }, base_version: version })]);
  if (reply.json?.rejected?.[0]?.status !== 'conflict') throw new Error(`the stale update of ${row} did not conflict: ${reply.status} ${reply.text.slice(0, 300)}`);
  workloadClient.set(this, { ...sameClient(this), version: String(fresher.json.accepted[0].server_version) });
});

When('the same client pushes an update whose title has the wrong type, producing a validation failure', async function (this: SyncWorld) {
  const { client, row, version } = sameClient(this);
  // Wrong on purpose: the proxy must not hold it against the harness.
  const reply = await client.push([client.mutation({ op: 'update', table: 'tasks', pk: row, columns: { title: 93_001 }, base_version: version })], undefined, { invalid: true });
  // A server may refuse the one mutation (validation_failed) or the whole request (400 invalid_request); both are the failing path.
  const refused = reply.json?.rejected?.[0]?.code === 'validation_failed' || (reply.status === 400 && reply.json?.error?.code === 'invalid_request');
  if (!refused) throw new Error(`the wrongly typed update was not refused: ${reply.status} ${reply.text.slice(0, 300)}`);
});

When('the same client pulls with a cursor that has one byte flipped', async function (this: SyncWorld) {
  const { client } = sameClient(this);
  const [scope, cursor] = [...client.cursors].find(([, held]) => typeof held === 'string') ?? [];
  if (scope === undefined || typeof cursor !== 'string') throw new Error(`client "${client.name}" holds no cursor to flip`);
  const middle = Math.floor(cursor.length / 2);
  const flipped = `${cursor.slice(0, middle)}${cursor[middle] === 'A' ? 'B' : 'A'}${cursor.slice(middle + 1)}`;
  await client.pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}/cursor`]: flipped }, { invalid: true });
});

Then('none of the canaries appears in the captured adapter and database logs', async function (this: SyncWorld) {
  const logs = await capturedLogs(await this.readyServer());
  const forbidden = await forbiddenTexts(this);
  this.assert.equal(findForbidden(logs, forbidden), [], `prohibited values in the server's log window (${logs.length} characters, ${forbidden.length} values searched)`);
});

/** The server's exported metrics (`logs.metrics`), or 'skipped' when the adapter offers none. */
async function exportedMetrics(world: SyncWorld): Promise<MetricSample[] | 'skipped'> {
  const server = await world.readyServer();
  if (server.logs?.metrics === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no metrics output (optional control logs.metrics, docs/control-protocol.md)`);
  const text = await server.logs.metrics();
  const samples = parseExposition(text);
  world.assert.ok(samples.every((s) => !('error' in s)), `every line of the metrics output is a comment or a sample: ${samples.filter((s) => 'error' in s).map((s) => ('error' in s ? s.error : '')).join('; ')}`);
  return samples.filter((s): s is MetricSample => !('error' in s));
}

Then('none of the canaries appears in any metric name, label name or label value', async function (this: SyncWorld) {
  const samples = await exportedMetrics(this);
  if (samples === 'skipped') return 'skipped';
  const searched = samples.map((s) => [s.name, ...Object.entries(s.labels).flat()].join(' ')).join('\n');
  this.assert.equal(findForbidden(searched, await forbiddenTexts(this)), [], `prohibited values in the names and labels of ${samples.length} metric samples`);
  return undefined;
});

Then('none of the canaries appears in any captured trace span name or attribute', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (server.logs?.spans === undefined) return undeterminedWithout(this, `server adapter "${server.id}" offers no trace spans (optional control logs.spans, docs/control-protocol.md)`);
  const spans = await server.logs.spans();
  this.assert.equal(findForbidden(JSON.stringify(spans), await forbiddenTexts(this)), [], `prohibited values in the names and attributes of ${spans.length} exported trace spans`);
  return undefined;
});

Then('no metric label takes more than {int} distinct values during the run', async function (this: SyncWorld, limit: number) {
  const samples = await exportedMetrics(this);
  if (samples === 'skipped') return 'skipped';
  const values = new Map<string, Set<string>>();
  for (const sample of samples) {
    for (const [label, value] of Object.entries(sample.labels)) {
      const key = `${sample.name}{${label}}`;
      values.set(key, (values.get(key) ?? new Set()).add(value));
    }
  }
  this.assert.equal(
    [...values].filter(([, seen]) => seen.size > limit).map(([key, seen]) => `${key}: ${seen.size} values`),
    [],
    `metric labels over ${limit} distinct values (${values.size} labels, ${samples.length} samples)`,
  );
  return undefined;
});

Then('none of the canaries appears in any readiness response body', async function (this: SyncWorld) {
  const bodies = (await this.proxy()).exchanges.filter((e) => e.path === '/ready').flatMap((e) => e.upstream.map((r) => r.body.toString('utf8')));
  this.assert.ok(bodies.length > 0, 'the scenario requested GET /ready at least once');
  const forbidden = await forbiddenTexts(this);
  this.assert.equal(findForbidden(bodies.join('\n'), forbidden), [], `prohibited values in ${bodies.length} readiness bodies`);
});

Then('none of the canaries appears in the health detail that server inspection reads', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  const detail = JSON.stringify(await server.inspect.healthDetail());
  this.assert.equal(findForbidden(detail, await forbiddenTexts(this)), [], `prohibited values in the health detail ${detail.slice(0, 200)}`);
});

Then('none of the canaries appears in any quarantine record', async function (this: SyncWorld) {
  const records = await inspectRows(this, 'SELECT * FROM synchro.wal_poison');
  this.assert.ok(records.length > 0, 'the workload left a quarantine record to search (the failing source transaction)');
  this.assert.equal(findForbidden(JSON.stringify(records), await forbiddenTexts(this)), [], `prohibited values in ${records.length} quarantine records`);
});

Then(
  'no captured operational output contains a cursor, rebuild token, seed page token prefix {string} or seed receipt prefix {string} issued during the run',
  async function (this: SyncWorld, pagePrefix: string, receiptPrefix: string) {
    const server = await this.readyServer();
    const issued = (await forbiddenTexts(this)).filter((f) => !plantedCanaries(this).includes(f.text));
    this.assert.ok(issued.some((f) => f.label.startsWith('a cursor')), 'the run issued cursors to search for');
    const outputs = [await capturedLogs(server), server.inspect ? JSON.stringify(await server.inspect.healthDetail()) : '', JSON.stringify(await inspectRows(this, 'SELECT * FROM synchro.wal_poison'))].join('\n');
    this.assert.equal(findForbidden(outputs, issued), [], 'issued tokens in the logs, health detail and quarantine records');
    const prefixed = [pagePrefix, receiptPrefix].filter((prefix) => new RegExp(`${prefix.replaceAll('.', '\\.')}[A-Za-z0-9_-]{8,}`).test(outputs));
    this.assert.equal(prefixed, [], 'seed token prefixes followed by token text in the operational outputs');
  },
);

/**
 * The doc string gives the request's shape with its canary; the client it
 * names is connected first, and its generation, schema and scope set version
 * are the connected client's, so the server gets past its client gate and
 * judges the canary's member itself.
 */
When(/^the harness sends a raw pull request with a canary in (.+):$/, async function (this: SyncWorld, _where: string, body: string) {
  await this.readyServer();
  const [user] = plantedCanaries(this).filter((c) => c.startsWith('cnry-user-'));
  if (user === undefined) throw new Error('the canary table plants no user ID');
  const request = JSON.parse(body) as Record<string, unknown>;
  if (typeof request.client_id !== 'string') throw new Error('the raw pull request names no client_id');
  const client = this.wire(request.client_id, user);
  client.clientId = request.client_id;
  const connected = await client.connect();
  if (connected.status !== 200) throw new Error(`client ${request.client_id} could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
  const sent = { ...request, client_generation: client.generation, schema: { ...client.schema }, scope_set_version: client.scopeSetVersion };
  await client.post('/sync/pull', undefined, { raw: JSON.stringify(sent), endpoint: 'pull', invalid: true });
});

Then('the response body contains none of the canaries', async function (this: SyncWorld) {
  const reply = this.lastReply();
  const echoed = plantedCanaries(this).filter((canary) => reply.text.includes(canary));
  this.assert.equal(echoed, [], `canaries in the ${reply.endpoint} answer ${reply.status} ${reply.text.slice(0, 300)}`);
});

When('the membership function of table {string} is replaced by one that raises an error whose message is {int} copies of {string}', async function (this: SyncWorld, table: string, copies: number, text: string) {
  const server = await this.readyServer();
  const [fn] = await inspectRows<{ name: string; args: string }>(
    this,
    `SELECT r.membership_function AS name, pg_get_function_arguments(p.oid) AS args
       FROM synchro.relations r JOIN pg_proc p ON p.oid = r.membership_function::regproc
      WHERE r.active AND r.physical_relation = $1`,
    [table],
  );
  if (fn === undefined) throw new Error(`table "${table}" has no registered membership function to replace`);
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  // A cast that fails quotes its whole input in the error message: an unbounded downstream error.
  await server.provision.exec(`CREATE OR REPLACE FUNCTION ${fn.name}(${fn.args}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT repeat(${literal(text)}, ${copies})::integer::text; END;`);
});

Then('every text member of the quarantine record is at most {int} bytes long', async function (this: SyncWorld, limit: number) {
  const [record] = await inspectRows<Record<string, unknown>>(this, "SELECT * FROM synchro.wal_poison WHERE lifecycle = 'active'");
  if (record === undefined) throw new Error('server inspection shows no active quarantine record');
  const long = Object.entries(record)
    .filter(([, value]) => typeof value === 'string' && Buffer.byteLength(value, 'utf8') > limit)
    .map(([member, value]) => `${member}: ${Buffer.byteLength(value as string, 'utf8')} bytes`);
  this.assert.equal(long, [], `text members of the quarantine record over ${limit} bytes`);
});

Then('no quarantine record contains {string}', async function (this: SyncWorld, text: string) {
  const records = await inspectRows(this, 'SELECT * FROM synchro.wal_poison');
  this.assert.ok(records.length > 0, 'server inspection shows a quarantine record to search');
  this.assert.equal(records.filter((record) => JSON.stringify(record).includes(text)).length, 0, `quarantine records (of ${records.length}) holding "${text}": the downstream error was stored, not classified`);
});

Then('no captured log line contains {string}', async function (this: SyncWorld, text: string) {
  const lines = (await capturedLogs(await this.readyServer())).split('\n');
  this.assert.equal(lines.filter((line) => line.includes(text)).length, 0, `log lines (of ${lines.length}) containing "${text}"`);
});

Then('no captured log line is longer than {int} bytes', async function (this: SyncWorld, limit: number) {
  const lines = (await capturedLogs(await this.readyServer())).split('\n');
  const long = lines.map((line) => Buffer.byteLength(line, 'utf8')).filter((bytes) => bytes > limit);
  this.assert.equal(long, [], `lengths of log lines (of ${lines.length}) over ${limit} bytes`);
});

When('{int} clients of {int} distinct users each connect and pull once', async function (this: SyncWorld, clients: number, users: number) {
  if (clients !== users) throw new Error('this step gives each client a user of its own');
  await this.readyServer();
  for (let i = 0; i < clients; i += 1) {
    const client = this.wire(`cardinality-${i}`, `cnry-many-${i}`);
    const connected = await client.connect();
    if (connected.status !== 200) throw new Error(`client ${i} could not connect: ${connected.status} ${connected.text.slice(0, 200)}`);
    await client.pull();
  }
});
