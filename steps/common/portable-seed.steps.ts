/**
 * Shared steps (used by several requirements).
 * Portable seeds as the operator and the harness handle them: portable shared
 * scopes, the rows a seed holds, seed exports, and clients opened on a seed
 * artifact.
 */
import { type DataTable, Given, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { goOffline } from '../support/local-queue/rejections.ts';
import { artifactReceipts, artifactState, buildArtifact, withoutArtifactBuilder } from '../support/seeds/artifacts.ts';
import { callManifest, callPage, keptToken, pageLimitOf, scopeEntry, seedConnection, servedValue } from '../support/seeds/seed-sessions.ts';
import { openOnSeed } from '../support/seeds/seeded-client.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { cellValue } from '../support/values.ts';
import { versionLabels } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

Given('shared scope {string} is registered as portable', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.registerSharedScope(scope, true);
});

Given('the server holds these {string} rows, created by client {string}:', async function (this: SyncWorld, table: string, name: string, rows: DataTable) {
  await this.readyServer();
  // The writer is a user of its own: the scenario's users see the rows only through the scopes they are served.
  const writer = this.wire(name, `writer-${name.toLowerCase()}`);
  // A table registered after the writer connected is not in its manifest yet: it connects again to learn it.
  if (writer.manifest === undefined || !writer.manifest.tables.some((t) => t.name === table)) await writer.connectAndRebuild();
  const model = this.model.table(table);
  const key = this.model.keyColumn(table);
  const labels = new Map<string, string>();
  const mutations = rows.hashes().map((row) => {
    const { version, ...cells } = row;
    const pk = cellValue(key, String(cells[key.name]));
    const columns: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(cells)) if (column !== key.name) columns[column] = cellValue(model.columns.find((c) => c.name === column), text);
    const mutation = writer.mutation({ op: 'insert', table, pk, columns });
    if (version !== undefined && version !== '') labels.set(String(mutation.mutation_id), version);
    return mutation;
  });
  const reply = await writer.push(mutations);
  if (reply.status !== 200) throw new Error(`client "${name}" could not create the rows: ${reply.status} ${reply.text}`);
  const accepted = (reply.json.accepted ?? []) as { mutation_id: string; server_version?: string }[];
  if (accepted.length !== mutations.length) throw new Error(`client "${name}" got ${accepted.length} of ${mutations.length} inserts accepted: ${reply.text}`);
  const versions = versionLabels(this);
  for (const outcome of accepted) {
    const label = labels.get(outcome.mutation_id);
    if (label !== undefined && typeof outcome.server_version === 'string') versions.set(label, outcome.server_version);
  }
  // An export reads what capture has made visible; the rows are "held" once they are.
  await awaitCapture(this);
});

When('the operator exports a portable seed to {string} with page limit {int}', async function (this: SyncWorld, file: string, limit: number) {
  const without = await withoutArtifactBuilder(this);
  if (without !== undefined) return without;
  await buildArtifact(this, file, limit);
});

Given('the operator has exported a portable seed to {string} with page limit {int}', async function (this: SyncWorld, file: string, limit: number) {
  const without = await withoutArtifactBuilder(this);
  if (without !== undefined) return without;
  const result = await buildArtifact(this, file, limit);
  if (!result.ok) throw new Error(`the portable seed export to ${file} was refused by the ${result.check} check: ${result.message}`);
});

Given('a registered shared scope {string} declared portable', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.registerSharedScope(scope, true);
});

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened on a copy of seed artifact /);

Given('client {string} of user {string} is opened on a copy of seed artifact {string}', async function (this: SyncWorld, name: string, user: string, file: string) {
  await openOnSeed(this, name, user, file);
});

Given('client {string} of user {string} is opened on a copy of seed artifact {string} with the network blocked', async function (this: SyncWorld, name: string, user: string, file: string) {
  await openOnSeed(this, name, user, file);
  // Opening reads only the artifact; every request the client makes later is answered 503 until the network is restored.
  await goOffline(this, name);
});

Given('the harness has read the receipt for {string} from seed artifact {string}', function (this: SyncWorld, scope: string, file: string) {
  const receipt = artifactReceipts(this, file)[scope];
  if (receipt === undefined) throw new Error(`${file} stores no receipt for ${scope}`);
  artifactState(this).receipts.set(scope, receipt);
});

// Seed connections: the connection an exporter makes its seed calls on (the server's seed sessions).

Given('seed connection {string} runs {string}', async function (this: SyncWorld, name: string, statement: string) {
  const connection = await seedConnection(this, name);
  if (connection === 'skipped') return connection;
  servedValue(await connection.session.statement(statement), `"${statement}" on seed connection "${name}"`);
});

Given('seed connection {string} has called the portable seed manifest function with page limit {int}', async function (this: SyncWorld, name: string, limit: number) {
  const connection = await seedConnection(this, name);
  if (connection === 'skipped') return connection;
  await callManifest(connection, limit);
});

Given(
  'seed connection {string} has called the portable seed manifest function with page limit {int} and kept the page token of {string} as {string}',
  async function (this: SyncWorld, name: string, limit: number, scope: string, label: string) {
    const connection = await seedConnection(this, name);
    if (connection === 'skipped') return connection;
    await callManifest(connection, limit);
    const token = scopeEntry(connection, scope).page_token;
    if (typeof token !== 'string') throw new Error(`the seed manifest gives "${scope}" no page token: ${JSON.stringify(token)}`);
    connection.tokens.set(label, token);
  },
);

Given(
  'seed connection {string} has called the seed scope function with {string} for {string} at ordinal {int} and kept the next token as {string}',
  async function (this: SyncWorld, name: string, from: string, scope: string, ordinal: number, label: string) {
    const connection = await seedConnection(this, name);
    if (connection === 'skipped') return connection;
    const call = await callPage(this, connection, scope, keptToken(connection, from), ordinal, pageLimitOf(connection));
    const next = servedValue(call.answer, `the seed page of ${scope} at ordinal ${ordinal}`).page_token;
    if (typeof next !== 'string') throw new Error(`the seed page of ${scope} at ordinal ${ordinal} gave no next token`);
    connection.tokens.set(label, next);
  },
);
