/**
 * SYNC-SEED-003 Seed Resume Correctness
 * (features/startup-and-portable-seed/seed-resume-correctness.feature): the
 * steps only this requirement uses. The continuation metadata a seed carries,
 * compared with the export manifest and the harness codec; receipts that
 * convert, that no longer hold, or that are missing; and a seeded client that
 * must not resume without a converted receipt.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { arrangeFailure } from '../support/client-lifecycle/arranged-failures.ts';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';
import { currentManifest } from '../support/integrity/context.ts';
import { scopeDigestHex } from '../support/integrity/oracle.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { artifactReceipts } from '../support/seeds/artifacts.ts';
import type { Obj } from '../support/seeds/receipt-conversion.ts';
import { connectPresenting, copyWithoutReceipt, editedReceipt, exportEntry, exportManifest } from '../support/seeds/resume.ts';
import { openOnSeed } from '../support/seeds/seeded-client.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

const UNSIGNED_DECIMAL = /^(0|[1-9][0-9]*)$/;

/** The artifact the feature's clients are opened on (its Background exports it). */
const SEED_FILE = 'seed-1.sqlite';

interface ReceiptRecord {
  scopeId: string;
  receipt: string;
}

async function storedReceipts(world: SyncWorld, name: string): Promise<ReceiptRecord[]> {
  return (await (await world.process(name)).call<{ receipts: ReceiptRecord[] }>('inspectSeedReceipts')).receipts;
}

async function cursorOf(world: SyncWorld, name: string, scope: string): Promise<string | null> {
  const { scopes } = await (await world.process(name)).call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  return scopes.find((s) => s.scopeId === scope)?.cursor ?? null;
}

// Rule 1: the continuation metadata of the seed.

Then('client {string} inspection shows a stored receipt for scope {string} and no cursor for it', async function (this: SyncWorld, name: string, scope: string) {
  const stored = (await storedReceipts(this, name)).find((r) => r.scopeId === scope)?.receipt;
  this.assert.equal(stored, artifactReceipts(this, SEED_FILE)[scope], `the receipt of ${scope} client "${name}" stores, against the one the artifact carries`);
  this.assert.equal(await cursorOf(this, name, scope), null, `cursor of ${scope} on client "${name}"`);
});

Then('the schema version and hash client {string} inspects equal {string} and {string} of the export manifest', async function (this: SyncWorld, name: string, version: string, hash: string) {
  const { schema } = await (await this.process(name)).call<{ schema: { version: number; hash: string } | null }>('inspectScopes');
  const manifest = exportManifest(this);
  this.assert.equal([schema?.version, schema?.hash], [manifest[version], manifest[hash]], `schema client "${name}" holds against the export manifest's ${version} and ${hash}`);
});

Then(
  'the export manifest gives {string} a {string} of {string} and registry, membership and retention generations as unsigned decimal strings',
  function (this: SyncWorld, scope: string, member: string, value: string) {
    const entry = exportEntry(this, scope);
    this.assert.equal(String(entry[member]), value, `"${member}" of ${scope} in the export manifest`);
    const generations = ['registry_generation', 'membership_generation', 'retention_generation'].map((g) => [g, entry[g]]);
    this.assert.ok(
      generations.every(([, g]) => typeof g === 'string' && UNSIGNED_DECIMAL.test(g)),
      `generations of ${scope} in the export manifest are unsigned decimal strings: ${JSON.stringify(Object.fromEntries(generations))}`,
    );
  },
);

Then('the export manifest gives a {string} whose {string} is {string} or {string}', function (this: SyncWorld, member: string, kind: string, a: string, b: string) {
  const boundary = exportManifest(this)[member] as Obj | undefined;
  this.assert.ok([a, b].includes(String(boundary?.[kind])), `"${kind}" of the export manifest's ${member}: ${JSON.stringify(boundary)}`);
  if (boundary?.[kind] === 'transaction_end') this.assert.ok(typeof boundary.commit_lsn === 'string' && boundary.commit_lsn !== '', `a transaction_end boundary names its commit_lsn: ${JSON.stringify(boundary)}`);
});

Then(
  'the {string} of {string} in the export manifest equals the scope digest the harness codec computes over rows {string}, {string} and {string} at versions {string}, {string} and {string}',
  async function (this: SyncWorld, member: string, scope: string, r1: string, r2: string, r3: string, v1: string, v2: string, v3: string) {
    const manifest = await currentManifest(this);
    const server = await this.readyServer();
    if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read the source rows`);
    const table = manifest.tables.find((t) => t.name === 'products');
    if (table === undefined) throw new Error('the published manifest has no table "products"');
    const ids = [r1, r2, r3];
    const labels = [v1, v2, v3];
    const source = await server.sourceSql.query<Record<string, unknown>>('SELECT * FROM public.products WHERE id = ANY ($1::text[])', [ids]);
    const rows = ids.map((id, i) => {
      const row = source.find((r) => r.id === id);
      if (row === undefined) throw new Error(`the source table holds no product "${id}"`);
      return { table: table.table_id, row: Object.fromEntries(table.fields.map((f) => [f.field_id, row[f.name]])), serverVersion: labelledVersion(this, labels[i] ?? '') };
    });
    const checksum = exportEntry(this, scope)[member] as Obj | undefined;
    this.assert.equal(checksum?.digest, scopeDigestHex(manifest, scope, rows), `digest of the export manifest's ${member} of ${scope} against the codec over ${ids.join(', ')}`);
  },
);

Given('client {string} has pushed an insert of product {string} named {string} priced {int}', async function (this: SyncWorld, name: string, id: string, title: string, price: number) {
  const writer = this.wire(name);
  const reply = await writer.push([writer.mutation({ op: 'insert', table: 'products', pk: id, columns: { name: title, price_cents: price } })]);
  const accepted = (reply.json?.accepted ?? []) as unknown[];
  if (reply.status !== 200 || accepted.length !== 1) throw new Error(`the insert of ${id} by client "${name}" was not accepted: ${reply.status} ${reply.text}`);
  await awaitCapture(this);
});

function lastConnect(world: SyncWorld): Obj {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'connect');
  if (reply === undefined) throw new Error('no connect was answered in this scenario');
  world.assert.equal(reply.status, 200, `the connect was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
  return (reply.json ?? {}) as Obj;
}

function addedEntry(world: SyncWorld, member: string, scope: string): { id: string; cursor: unknown } | undefined {
  if (member !== 'scopes.add') throw new Error(`this step reads "scopes.add", not "${member}"`);
  const added = ((lastConnect(world).scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
  return added.find((s) => s.id === scope);
}

Then('member {string} lists {string} with a nonempty cursor', function (this: SyncWorld, member: string, scope: string) {
  const cursor = addedEntry(this, member, scope)?.cursor;
  this.assert.ok(typeof cursor === 'string' && cursor !== '', `"${member}" lists ${scope} with a nonempty cursor (found ${JSON.stringify(cursor)})`);
});

Then('member {string} lists {string} with cursor null', function (this: SyncWorld, member: string, scope: string) {
  const entry = addedEntry(this, member, scope);
  this.assert.ok(entry !== undefined, `"${member}" lists ${scope}`);
  this.assert.equal(entry?.cursor, null, `cursor of ${scope} in "${member}"`);
});

When('the harness client {string} pulls presenting that cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const cursor = addedEntry(this, 'scopes.add', scope)?.cursor;
  if (typeof cursor !== 'string') throw new Error(`the connect gave no cursor for ${scope}`);
  const client = this.wire(name);
  const body = client.pullBody();
  (body.scopes as Obj)[scope] = { cursor };
  await client.post('/sync/pull', body, { endpoint: 'pull' });
});

Then('the changes for {string} are exactly the upsert of {string} with {string} {int} and the upsert of {string}', async function (this: SyncWorld, scope: string, first: string, column: string, value: number, second: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the pull was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
  const manifest = await currentManifest(this);
  const table = manifest.tables.find((t) => t.name === 'products');
  const pkField = table?.primary_key_field_id ?? '';
  const columnField = table?.fields.find((f) => f.name === column)?.field_id ?? '';
  const changes = ((reply.json?.changes ?? []) as Obj[]).filter((c) => c.scope === scope);
  const described = changes.map((c) => {
    const pk = String((c.pk as Obj | undefined)?.[pkField]);
    return pk === first ? `${c.op} ${pk} ${column}=${String((c.row as Obj | undefined)?.[columnField])}` : `${c.op} ${pk}`;
  });
  this.assert.equal(described, [`upsert ${first} ${column}=${value}`, `upsert ${second}`], `changes of ${scope} after the seed boundary`);
});

Given('nothing else changed', function (this: SyncWorld) {
  // The example's binding is changed in the receipt itself; the server state stays as exported.
});

When(
  'the harness client {string} of user {string} connects for the first time presenting the schema of {string} and its receipts with one character of the {string} receipt payload altered',
  async function (this: SyncWorld, name: string, user: string, file: string, scope: string) {
    const receipts = artifactReceipts(this, file);
    const receipt = receipts[scope];
    if (receipt === undefined) throw new Error(`the artifact ${file} carries no receipt for ${scope}`);
    // The cardinality is one digit here: the altered payload claims one row more than the seed holds.
    receipts[scope] = editedReceipt(receipt, 'cardinality', (n) => String(Number(n) + 1));
    await connectPresenting(this, name, user, file, receipts);
  },
);

When('the harness client {string} of user {string} connects for the first time presenting the schema of {string} and no receipt for {string}', async function (this: SyncWorld, name: string, user: string, file: string, scope: string) {
  const receipts = artifactReceipts(this, file);
  if (!(scope in receipts)) throw new Error(`the artifact ${file} carries no receipt for ${scope}`);
  delete receipts[scope];
  await connectPresenting(this, name, user, file, receipts);
});

Given('the operator changes the membership rule of {string} for scope {string}', async function (this: SyncWorld, table: string, scope: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  const key = this.model.keyColumn(table);
  // The scope keeps only the products priced under 2000: its contents change, so its membership generation must.
  const fn = `public.${table}_resume_rule`;
  await server.provision.exec(`CREATE FUNCTION ${fn}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT '${scope.replaceAll("'", "''")}' FROM synchro_projection."${table}" AS p WHERE p."${key.name}" = p_key AND p.price_cents < 2000;
END;`);
  await server.provision.reconfigureMembership(`public.${table}`, fn);
});

Given('the operator resets the retention lineage of scope {string}', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (server.scopes?.resetRetentionLineage === undefined) return undeterminedWithout(this, `server adapter "${server.id}" offers no scopes.resetRetentionLineage control to reset a retention lineage`);
  await server.scopes.resetRetentionLineage(scope);
});

// Rule 2: a client never resumes a seeded scope without a converted receipt.

Given('a copy of seed artifact {string} with the receipt of {string} removed, saved as {string}', function (this: SyncWorld, file: string, scope: string, saved: string) {
  copyWithoutReceipt(this, file, scope, saved);
});

const refusals = new WeakMap<SyncWorld, Map<string, { code: unknown; message: string }>>();

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened on "/);

When('client {string} of user {string} is opened on {string}', async function (this: SyncWorld, name: string, user: string, file: string) {
  // A client process that refuses an artifact cannot be reopened under the same name, so a probe of the
  // same client implementation tries the artifact first. On a typed refusal the application starts on an
  // empty database instead, as an application whose bundled seed is refused would; otherwise it opens the seed.
  const probe = `${name}-seed-probe`;
  try {
    await openOnSeed(this, probe, user, file);
  } catch (error) {
    const type = ((error as { data?: unknown }).data as { type?: unknown } | undefined)?.type;
    if (typeof type !== 'string' || type === '') throw error;
    const map = refusals.get(this) ?? new Map<string, { code: unknown; message: string }>();
    refusals.set(this, map);
    map.set(name, { code: type, message: (error as Error).message });
    this.clientUsers.set(name, user);
    await this.process(name);
    return;
  }
  await openOnSeed(this, name, user, file);
});

Then('client {string} either refused the artifact with a typed error or sent no {string} entry for {string}', async function (this: SyncWorld, name: string, member: string, scope: string) {
  // A refusal was recorded with its type when the client was opened; the client then synced without the seed.
  const refusal = refusals.get(this)?.get(name);
  if (refusal !== undefined) {
    this.attach(`client "${name}" refused the artifact: ${refusal.message}`, 'text/plain');
    this.assert.match(String(refusal.code), /^[a-z][a-z0-9_]*$/, `the refusal of the artifact by client "${name}" carries a typed error code`);
  }
  const connects = await exchangesOf(this, name, { endpoints: ['connect'] });
  this.assert.ok(connects.length > 0, `client "${name}" connected`);
  for (const c of connects) {
    const receipts = (bodyOf(c.requestBody) as Obj | undefined)?.[member] as Obj | undefined;
    this.assert.ok(receipts === undefined || !(scope in receipts), `a connect of client "${name}" sent a "${member}" entry for ${scope}: ${JSON.stringify(receipts)}`);
  }
});

Then(
  'no pull of client {string} presented a non-null cursor for {string} before client {string} completed a rebuild of it from cursor null',
  async function (this: SyncWorld, name: string, scope: string, _again: string) {
    let rebuilt = false;
    let attempt: unknown;
    const violations: string[] = [];
    for (const e of await exchangesOf(this, name, { endpoints: ['pull', 'rebuild'] })) {
      const body = (bodyOf(e.requestBody) ?? {}) as Obj;
      const answer = e.delivered !== undefined && 'status' in e.delivered ? e.delivered : undefined;
      if (e.endpoint === 'rebuild' && body.scope === scope) {
        if (body.cursor === null) attempt = body.rebuild_id;
        const page = answer?.status === 200 ? (bodyOf(answer.body) as Obj | undefined) : undefined;
        if (body.rebuild_id === attempt && page?.has_more === false) rebuilt = true;
      }
      const cursor = ((body.scopes as Obj | undefined)?.[scope] as Obj | undefined)?.cursor;
      if (e.endpoint === 'pull' && cursor !== undefined && cursor !== null && !rebuilt) violations.push(`pull #${e.seq} presented a cursor for ${scope} before a completed rebuild`);
    }
    this.assert.equal(violations, [], `pulls of client "${name}" resuming ${scope} without a converted receipt or a rebuild`);
    this.assert.ok(rebuilt, `client "${name}" completed a rebuild of ${scope} from cursor null`);
  },
);

Given(/^the proxy answers the next (\d+) connect requests of client "([^"]+)" with (\d{3}) "([a-z_]+)" and "Retry-After: (\d+)"$/, async function (this: SyncWorld, count: string, name: string, status: string, code: string, seconds: string) {
  for (let nth = 1; nth <= Number(count); nth += 1) await arrangeFailure(this, name, 'connect', nth, `status ${status}, code "${code}" and Retry-After "${seconds}"`);
});

Then('the proxy recorded no pull or rebuild request from client {string}', async function (this: SyncWorld, name: string) {
  const sent = await exchangesOf(this, name, { endpoints: ['pull', 'rebuild'], unfinished: true });
  const connects = await exchangesOf(this, name, { endpoints: ['connect'] });
  this.assert.ok(connects.length > 0, `client "${name}" tried to connect`);
  this.assert.equal(
    sent.map((e) => `${e.endpoint} #${e.seq}`),
    [],
    `pull and rebuild requests of client "${name}" while no connect succeeded`,
  );
});

Then('client {string} inspection shows no cursor for {string} and the stored receipt unchanged', async function (this: SyncWorld, name: string, scope: string) {
  this.assert.equal(await cursorOf(this, name, scope), null, `cursor of ${scope} on client "${name}"`);
  const stored = (await storedReceipts(this, name)).find((r) => r.scopeId === scope)?.receipt;
  this.assert.equal(stored, artifactReceipts(this, SEED_FILE)[scope], `the receipt of ${scope} client "${name}" stores`);
});
