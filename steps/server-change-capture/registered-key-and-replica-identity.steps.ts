/**
 * SYNC-CAP-010 Registered Key And Replica Identity
 * (features/server-change-capture/registered-key-and-replica-identity.feature):
 * the steps only this requirement uses. Tables of each key shape are created
 * directly and registered the way an operator does; registration outcomes
 * go where the shared registration checks read them
 * (steps/support/scopes/function-contract.ts), and "no new active registry
 * generation" compares with the generation read right before the attempt
 * (steps/support/capture-order/registry-generations.ts).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { fencesOfMutation, inspectRows } from '../support/capture/inspection.ts';
import { rememberGenerationBefore } from '../support/capture-order/registry-generations.ts';
import { attemptAsOwner, contractState, outcome } from '../support/scopes/function-contract.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { literal } from '../support/scopes/roles.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the source database has a table:', async function (this: SyncWorld, ddl: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to create a table`);
  await server.provision.exec(ddl);
});

When('the operator registers table {string} with primary key {string} and push policy {string}', async function (this: SyncWorld, relation: string, key: string, policy: string) {
  await rememberGenerationBefore(this);
  contractState(this).outcome = await attemptAsOwner(this, 'SELECT synchro.synchro_register_table(relation => $1, pk_column => $2, push_policy => $3)', [relation, key, policy]);
});

Then('the manifest key field of table {string} has type {string}', async function (this: SyncWorld, name: string, type: string) {
  // The server publishes a manifest when a request first sees the new registry generation: ask for it.
  const manifest = (await currentManifest(this)) as unknown as { tables?: Array<{ name: string; primary_key_field_id: string; fields: Array<{ field_id: string; type: string }> }> };
  const table = manifest.tables?.find((t) => t.name === name);
  this.assert.ok(table !== undefined, `the published manifest has a table "${name}": ${JSON.stringify(manifest.tables?.map((t) => t.name))}`);
  const key = table?.fields.find((f) => f.field_id === table.primary_key_field_id);
  this.assert.equal(key?.type, type, `type of the key field ${table?.primary_key_field_id} of table ${name}`);
});

/** The members a registration error may carry (004 sheet): never a row value. */
const ERROR_MEMBERS = new Set(['code', 'reason', 'relation_id', 'field_id']);

Then('the error carries no row values', function (this: SyncWorld) {
  const result = outcome(this);
  this.assert.ok(!result.ok, 'the registration was refused');
  if (result.ok) return;
  let error: Record<string, unknown> | undefined;
  try {
    error = (JSON.parse(result.message) as { error?: Record<string, unknown> }).error;
  } catch {
    error = undefined;
  }
  this.assert.ok(error !== undefined, `the refusal is the registration error object: ${result.message}`);
  const extra = Object.keys(error ?? {}).filter((member) => !ERROR_MEMBERS.has(member));
  this.assert.equal(extra, [], `members of the registration error beyond ${[...ERROR_MEMBERS].join(', ')}: ${result.message}`);
});

Then('server inspection shows no write fence for mutation {string}', async function (this: SyncWorld, mutationId: string) {
  this.assert.equal(await fencesOfMutation(this, mutationId), [], `write fences left by mutation ${mutationId}`);
});

Then('the source row {string} of table {string} still has title {string}', async function (this: SyncWorld, id: string, table: string, title: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read source rows`);
  const rows = await server.sourceSql.query<{ title: string }>(`SELECT title FROM public."${table.replaceAll('"', '""')}" WHERE id = $1`, [id]);
  this.assert.equal(rows.map((r) => r.title), [title], `title of source row ${id} of ${table}`);
});

Given('the source table {string} is a plain table', async function (this: SyncWorld, relation: string) {
  const [row] = await inspectRows<{ kind: string }>(this, 'SELECT relkind::text AS kind FROM pg_class WHERE oid = $1::regclass', [relation]);
  if (row?.kind !== 'r') throw new Error(`${relation} is not a plain table (relkind ${row?.kind})`);
});

Given('the source table {string} has a BEFORE UPDATE row trigger {string} that sets NEW.id to {string}', async function (this: SyncWorld, relation: string, trigger: string, key: string) {
  const server = await this.readyServer();
  const fn = `public.${trigger}_fn`;
  // Named to sort after every trigger the registration installed, so it runs after the capture's key guard.
  await server.provision?.exec(
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.id := ${literal(key)}; RETURN NEW; END $$;
     CREATE TRIGGER "${trigger}" BEFORE UPDATE ON ${relation} FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
  );
});

// A declaration, like the table's own (steps/support/hooks.ts): the partitions are created with the table, before it is registered.
Given(
  /^the source relation of "([^"]+)" is range-partitioned by (\w+) into "([^"]+)" for \w+ below '([^']*)' and "([^"]+)" for the rest$/,
  function (this: SyncWorld, name: string, column: string, low: string, bound: string, high: string) {
    const table = this.model.table(name);
    if (table.installed) throw new Error(`table "${name}" was already created; declare its partitions before the first step that needs the server`);
    // PostgreSQL requires a partitioned relation's primary key to contain the partition key.
    if (this.model.keyColumn(name).name !== column) throw new Error(`table "${name}" can only be partitioned by its key column ${this.model.keyColumn(name).name}, not ${column}`);
    table.partitions = [
      { name: low, below: bound, uniqueColumns: [] },
      { name: high, uniqueColumns: [] },
    ];
  },
);

const statements = new WeakMap<SyncWorld, { ok: true } | { ok: false; code: string | undefined; message: string }>();

When('the harness runs on the source database:', async function (this: SyncWorld, sql: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to run source statements`);
  try {
    await server.sourceSql.query(sql);
    statements.set(this, { ok: true });
  } catch (error) {
    const e = error as { code?: string; message: string };
    statements.set(this, { ok: false, code: e.code, message: e.message });
  }
});

Then('the statement fails with SQLSTATE {string}', function (this: SyncWorld, sqlstate: string) {
  const result = statements.get(this);
  if (result === undefined) throw new Error('the harness ran no source statement in this scenario');
  this.assert.equal(result.ok ? 'succeeded' : result.code, sqlstate, `the source statement's outcome${result.ok ? '' : `: ${result.message}`}`);
});

Then('server inspection shows no event, row version or pull effect for a key other than {string} in table {string}', async function (this: SyncWorld, key: string, table: string) {
  // The records below count once capture caught up; a capture the statement blocked is an effect of it too.
  const capture = await awaitCapture(this).then(
    () => 'caught up',
    (error: Error) => `blocked: ${error.message}`,
  );
  this.assert.equal(capture, 'caught up', 'capture after the statement');
  const [registered] = await inspectRows<{ table_id: string }>(this, "SELECT table_id FROM synchro.relations WHERE physical_schema = 'public' AND physical_relation = $1 AND active", [table]);
  if (registered === undefined) throw new Error(`server inspection shows no active registration of public.${table}`);
  const [seen] = await inspectRows<{ events: string[]; versions: string[]; effects: string[]; projections: string[] }>(
    this,
    `SELECT ARRAY(SELECT pk_text FROM synchro.wal_events WHERE table_id = $1 AND pk_text <> $2) AS events,
            ARRAY(SELECT pk_text FROM synchro.row_versions WHERE table_id = $1 AND pk_text <> $2 AND state <> 'reserved') AS versions,
            ARRAY(SELECT pk_text FROM synchro.scope_effects WHERE table_id = $1 AND pk_text <> $2) AS effects,
            ARRAY(SELECT pk_text FROM synchro.projections WHERE table_id = $1 AND pk_text <> $2) AS projections`,
    [registered.table_id, key],
  );
  this.assert.equal(seen, { events: [], versions: [], effects: [], projections: [] }, `records of table ${table} for keys other than ${key}`);
  const [kept] = await inspectRows<{ n: string }>(this, 'SELECT count(*)::text AS n FROM synchro.projections WHERE table_id = $1 AND pk_text = $2', [registered.table_id, key]);
  this.assert.equal(kept?.n, '1', `the projection of ${key} is still there`);
});
