/**
 * SYNC-SCHEMA-001 Immutable Schema Manifest
 * (features/schema-and-retention/immutable-schema-manifest.feature): the steps
 * only this requirement uses. Harness client "A" speaks the protocol through
 * the proxy; every manifest it is given lands in a ledger keyed by version and
 * by hash (steps/support/schema-dispatch/manifest-ledger.ts), and the hash is
 * recomputed from the body with the fact sheet's construction.
 */
import { createHash } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { canonicalJson, schemaManifestHash } from '../../harness/codec/index.ts';
import { sqlType } from '../support/model.ts';
import type { Reply } from '../support/reply.ts';
import { currentManifest, ident, literal } from '../support/schema-and-versions/manifests.ts';
import { ledgerOf, manifestText, schemaEndpointManifest } from '../support/schema-dispatch/manifest-ledger.ts';
import { dotted } from '../support/schema-dispatch/state.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

When(/^client "([^"]+)" of user "([^"]+)" connects with schema (\{.*\})$/, async function (this: SyncWorld, name: string, user: string, json: string) {
  const reply = await this.newWire(name, user).connect({ schema: JSON.parse(json) });
  ledgerOf(this).noteReply(reply);
});

function lastSchema(world: SyncWorld): { reply: Reply; body: Obj | undefined; definition: Obj | undefined } {
  const reply = world.lastReply();
  const body = reply.json as Obj | undefined;
  return { reply, body, definition: body?.schema_definition as Obj | undefined };
}

Then(/^"schema_definition\.schema_version" equals "schema\.version" and is at least (\d+)$/, function (this: SyncWorld, low: string) {
  const { reply, body, definition } = lastSchema(this);
  const version = definition?.schema_version;
  this.assert.equal(version, dotted(body, 'schema.version'), `schema_definition.schema_version against schema.version in ${reply.text.slice(0, 300)}`);
  this.assert.ok(Number.isSafeInteger(version) && (version as number) >= Number(low), `schema_definition.schema_version is ${JSON.stringify(version)}`);
});

Then(/^"schema_definition\.schema_hash" equals "schema\.hash" and is 64 lowercase hex characters$/, function (this: SyncWorld) {
  const { reply, body, definition } = lastSchema(this);
  this.assert.equal(definition?.schema_hash, dotted(body, 'schema.hash'), `schema_definition.schema_hash against schema.hash in ${reply.text.slice(0, 300)}`);
  this.assert.ok(/^[0-9a-f]{64}$/.test(String(definition?.schema_hash)), `schema_definition.schema_hash is ${JSON.stringify(definition?.schema_hash)}`);
});

Then(/^"schema_definition\.transition_class" is "initial" and "schema_definition\.parent_schema" is null$/, function (this: SyncWorld) {
  const { reply, definition } = lastSchema(this);
  this.assert.equal(
    { transition_class: definition?.transition_class, parent_schema: definition?.parent_schema },
    { transition_class: 'initial', parent_schema: null },
    `the initial manifest in ${reply.text.slice(0, 300)}`,
  );
});

Then(/^"schema_definition\.compatibility_floor" equals "schema_definition\.schema_version"$/, function (this: SyncWorld) {
  const { definition } = lastSchema(this);
  this.assert.ok(definition !== undefined, 'the answer carries a schema_definition');
  this.assert.equal(definition?.compatibility_floor, definition?.schema_version, 'compatibility_floor of the initial manifest');
});

Then(
  /^every table in "schema_definition\.tables" has a nonempty "table_id", a "composition" of "single_scope" or "multi_scope" and a nonempty "field_id" on every field$/,
  function (this: SyncWorld) {
    const { definition } = lastSchema(this);
    const tables = (definition?.tables ?? []) as Obj[];
    this.assert.ok(tables.length > 0, `the manifest lists no table: ${JSON.stringify(definition).slice(0, 300)}`);
    const defects = tables.flatMap((t) => {
      const out: string[] = [];
      if (typeof t.table_id !== 'string' || t.table_id === '') out.push(`table ${JSON.stringify(t.name)} has table_id ${JSON.stringify(t.table_id)}`);
      if (t.composition !== 'single_scope' && t.composition !== 'multi_scope') out.push(`table ${JSON.stringify(t.name)} has composition ${JSON.stringify(t.composition)}`);
      const fields = (t.fields ?? []) as Obj[];
      if (fields.length === 0) out.push(`table ${JSON.stringify(t.name)} has no field`);
      for (const f of fields) if (typeof f.field_id !== 'string' || f.field_id === '') out.push(`field ${JSON.stringify(f.name)} of ${JSON.stringify(t.name)} has field_id ${JSON.stringify(f.field_id)}`);
      return out;
    });
    this.assert.equal(defects, [], 'identity members of the manifest tables');
  },
);

Then(
  /^SHA-256 over "([^"]+)", one 0x00 octet and the RFC 8785 form of "schema_definition" without "schema_hash" equals "schema\.hash"$/,
  function (this: SyncWorld, domain: string) {
    const { reply, body, definition } = lastSchema(this);
    this.assert.ok(definition !== undefined, `the answer carries no schema_definition: ${reply.text.slice(0, 300)}`);
    const { schema_hash: _omitted, ...rest } = definition ?? {};
    // The construction written out from the fact sheet, independent of the codec's hash helper.
    const digest = createHash('sha256').update(Buffer.concat([Buffer.from(domain, 'utf8'), Buffer.from([0]), Buffer.from(canonicalJson(rest), 'utf8')])).digest('hex');
    this.assert.equal(digest, dotted(body, 'schema.hash'), 'the hash recomputed over the served body against schema.hash');
  },
);

When(
  /^the operator publishes a "(class_2)" manifest that adds nullable column "([^"]+)" of type "([^"]+)" to table "([^"]+)" while (\d+) fresh clients of user "([^"]+)" connect concurrently$/,
  async function (this: SyncWorld, transition: string, column: string, type: string, tableName: string, count: string, user: string) {
    const ledger = ledgerOf(this);
    const before = await currentManifest(this);
    ledger.noteManifest(before);
    ledger.labels.set('before-publication', before as unknown as Obj);
    const server = await this.readyServer();
    if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change table ${tableName}`);
    // Capture is caught up first (as publishChange does), so the race is between the publication and the connects only.
    await awaitCapture(this);
    const clients = Array.from({ length: Number(count) }, (_, i) => this.newWire(`race-${i}`, user));
    // The reconfiguration and the connects start together; none waits for another. The server publishes the
    // manifest when a request first sees the new registry generation, so the connects race the publisher too.
    const ddl = `BEGIN;\nALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${sqlType(type)};\nSELECT synchro.synchro_reconfigure_table(${literal(`public.${ident(tableName)}`)});\nCOMMIT;`;
    const [replies] = await Promise.all([Promise.all(clients.map((c) => c.connect())), server.provision.exec(ddl)]);
    this.model.table(tableName).columns.push({ name: column, type, key: false, nullable: true });
    await awaitCapture(this);
    const after = await currentManifest(this);
    ledger.noteManifest(after);
    if (after.schema_version !== before.schema_version + 1 || after.transition_class !== transition) {
      throw new Error(`the publication made version ${after.schema_version} (${after.transition_class}), not ${before.schema_version + 1} (${transition})`);
    }
    for (const r of replies) ledger.noteReply(r);
    ledger.race = replies;
  },
);

function raced(world: SyncWorld, count: string): Reply[] {
  const race = ledgerOf(world).race;
  if (race === undefined) throw new Error('no concurrent connects were sent in this scenario');
  if (race.length !== Number(count)) throw new Error(`${race.length} concurrent connects were sent, not ${count}`);
  return race;
}

Then(/^every one of the (\d+) connect responses has a "schema_definition" whose recomputed hash equals its "schema\.hash"$/, function (this: SyncWorld, count: string) {
  const replies = raced(this, count);
  this.assert.equal(
    replies.map((r) => (r.status === 200 && r.json?.schema_definition !== undefined ? schemaManifestHash(r.json.schema_definition).hash === r.json.schema.hash : `${r.status} ${r.text.slice(0, 200)}`)),
    replies.map(() => true),
    'each concurrent connect answer: does the recomputed hash of its schema_definition equal its schema.hash',
  );
});

Then(
  /^every one of the (\d+) connect responses carries either the version 1 body recorded before the publication or one version 2 body, the same for all responses naming version 2$/,
  function (this: SyncWorld, count: string) {
    const replies = raced(this, count);
    const v1 = canonicalJson(ledgerOf(this).labels.get('before-publication'));
    const bodies = replies.map((r) => ({ version: r.json?.schema?.version, text: r.json?.schema_definition === undefined ? undefined : canonicalJson(r.json.schema_definition) }));
    this.assert.equal(bodies.filter((b) => b.version === 1 && b.text !== v1).length, 0, 'answers naming version 1 with a body other than the one recorded before the publication');
    this.assert.equal(bodies.filter((b) => b.version !== 1 && b.version !== 2).map((b) => b.version), [], 'answers naming a version other than 1 or 2');
    this.assert.ok(
      new Set(bodies.filter((b) => b.version === 2).map((b) => b.text)).size <= 1,
      'the answers naming version 2 carry more than one body',
    );
  },
);

Given(/^the harness has recorded the manifest served by "GET \/sync\/schema"$/, async function (this: SyncWorld) {
  const ledger = ledgerOf(this);
  const served = await schemaEndpointManifest(this);
  ledger.noteManifest(served.manifest);
  ledger.labels.set('served', served.manifest);
});

Then(/^the connect response has schema action "([a-z_]+)" with the same "schema\.version" and "schema\.hash" as before$/, function (this: SyncWorld, action: string) {
  const recorded = ledgerOf(this).labels.get('served');
  if (recorded === undefined) throw new Error('no manifest was recorded from GET /sync/schema in this scenario');
  const { reply, body } = lastSchema(this);
  ledgerOf(this).noteReply(reply);
  this.assert.equal(
    { status: reply.status, action: dotted(body, 'schema.action'), version: dotted(body, 'schema.version'), hash: dotted(body, 'schema.hash') },
    { status: 200, action, version: recorded.schema_version, hash: recorded.schema_hash },
    `the connect answer ${reply.text.slice(0, 300)}`,
  );
});

Then(/^"GET \/sync\/schema" serves a "manifest" byte-identical to (the recorded one|the version 1 body recorded at the first connect)$/, async function (this: SyncWorld, which: string) {
  const label = which === 'the recorded one' ? 'served' : 'first-connect';
  const recorded = ledgerOf(this).labels.get(label);
  if (recorded === undefined) throw new Error(`no manifest was recorded as ${label} in this scenario`);
  const served = await schemaEndpointManifest(this);
  ledgerOf(this).noteManifest(served.manifest);
  // The member is compared as the bytes the server wrote: the manifest text it stores and sends is its RFC 8785 form.
  this.assert.equal(served.text, manifestText(recorded), `the manifest GET /sync/schema serves against ${which}`);
});

Given(/^the harness client "([^"]+)" of user "([^"]+)" has completed its first sync under manifest version (\d+)$/, async function (this: SyncWorld, name: string, user: string, version: string) {
  await this.readyServer();
  const client = this.newWire(name, user);
  const reply = await client.connect();
  if (reply.status !== 200 || reply.json?.schema?.version !== Number(version)) throw new Error(`the first connect of client "${name}" was answered ${reply.status} ${reply.text.slice(0, 300)}`);
  ledgerOf(this).noteReply(reply);
  ledgerOf(this).labels.set('first-connect', reply.json.schema_definition as Obj);
  await client.catchUp();
});

Given(/^the harness has recorded the version (\d+) manifest as "([^"]+)"$/, async function (this: SyncWorld, version: string, label: string) {
  const manifest = await currentManifest(this);
  if (manifest.schema_version !== Number(version)) throw new Error(`the current manifest is version ${manifest.schema_version}, not ${version}`);
  ledgerOf(this).noteManifest(manifest);
  ledgerOf(this).labels.set(label, manifest as unknown as Obj);
});

function labelled(world: SyncWorld, label: string): Obj {
  const manifest = ledgerOf(world).labels.get(label);
  if (manifest === undefined) throw new Error(`no manifest was recorded as "${label}" in this scenario`);
  return manifest;
}

Then(/^"schema\.version" is (\d+) and "schema\.hash" differs from the hash of "([^"]+)"$/, function (this: SyncWorld, version: string, label: string) {
  const { reply, body } = lastSchema(this);
  ledgerOf(this).noteReply(reply);
  this.assert.equal(dotted(body, 'schema.version'), Number(version), `schema.version of ${reply.text.slice(0, 300)}`);
  this.assert.ok(typeof dotted(body, 'schema.hash') === 'string' && dotted(body, 'schema.hash') !== labelled(this, label).schema_hash, `schema.hash equals the hash of "${label}"`);
});

Then(/^"schema_definition\.parent_schema" equals the version and hash of "([^"]+)"$/, function (this: SyncWorld, label: string) {
  const { definition } = lastSchema(this);
  const parent = labelled(this, label);
  this.assert.equal(definition?.parent_schema, { version: parent.schema_version, hash: parent.schema_hash }, 'parent_schema of the served manifest');
});

Then(/^"([a-z_.]+)" is "([^"]*)"$/, function (this: SyncWorld, path: string, value: string) {
  const { reply, body } = lastSchema(this);
  this.assert.equal(dotted(body, path), value, `member ${path} of the ${reply.endpoint} answer ${reply.text.slice(0, 300)}`);
});

Then(
  /^the "table_id" of "([^"]+)" and the "field_id" of each of ((?:"[^"]+"(?:, | and )?)+) are the same as in "([^"]+)"$/,
  function (this: SyncWorld, table: string, list: string, label: string) {
    const columns = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    const ids = (manifest: Obj | undefined) => {
      const t = ((manifest?.tables ?? []) as Obj[]).find((x) => x.name === table);
      const fields = (t?.fields ?? []) as Obj[];
      return { table_id: t?.table_id, fields: Object.fromEntries(columns.map((c) => [c, fields.find((f) => f.name === c)?.field_id])) };
    };
    const before = ids(labelled(this, label));
    this.assert.ok(typeof before.table_id === 'string', `"${label}" has no table ${table}`);
    this.assert.equal(ids(lastSchema(this).definition), before, `table and field IDs of ${table} against "${label}"`);
  },
);

Then('the harness manifest ledger maps no version and no hash to two different bodies', function (this: SyncWorld) {
  const ledger = ledgerOf(this);
  this.assert.ok(ledger.size() >= 2, `the ledger holds ${ledger.size()} manifests; the scenario should have seen at least two versions`);
  this.assert.equal(ledger.conflicts(), [], 'versions or hashes the server served with two different bodies');
});

When(/^the operator tries to (update the body of|change the hash of|change the class of|lower the floor of|delete) the stored manifest of version (\d+)$/, async function (this: SyncWorld, operation: string, version: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to reach the stored manifests`);
  const v = Number(version);
  const sql: Record<string, string> = {
    'update the body of': `UPDATE synchro.manifests SET body_text = replace(body_text, '"tasks"', '"tasks_renamed"') WHERE schema_version = ${v}`,
    'change the hash of': `UPDATE synchro.manifests SET schema_hash = repeat('0', 64) WHERE schema_version = ${v}`,
    'change the class of': `UPDATE synchro.manifests SET transition_class = 'class_2' WHERE schema_version = ${v}`,
    // Version 1's floor is 1, the lowest the positive range allows: the attempt writes the floor it may hold, so only immutability can refuse it.
    'lower the floor of': `UPDATE synchro.manifests SET compatibility_floor = greatest(compatibility_floor - 1, 1) WHERE schema_version = ${v}`,
    delete: `DELETE FROM synchro.manifests WHERE schema_version = ${v}`,
  };
  try {
    await server.provision.exec(`${sql[operation]};`);
    ledgerOf(this).attempt = { failed: false, message: 'the statement succeeded' };
  } catch (error) {
    ledgerOf(this).attempt = { failed: true, message: (error as Error).message };
  }
});

Then('the attempt fails', function (this: SyncWorld) {
  const attempt = ledgerOf(this).attempt;
  if (attempt === undefined) throw new Error('no attempt to change a stored manifest was made in this scenario');
  this.assert.ok(attempt.failed, `the change to a stored manifest: ${attempt.message}`);
});
