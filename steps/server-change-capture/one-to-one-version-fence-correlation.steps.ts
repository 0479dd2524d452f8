/**
 * SYNC-CAP-012 One To One Version Fence Correlation
 * (features/server-change-capture/one-to-one-version-fence-correlation.feature):
 * the steps only this requirement uses. Fences are read back from the
 * worker's durable event records through the `inspect` capability
 * (steps/support/fence-correlation/fences.ts); statements that must fail at
 * the source run through `sourceSql` and keep their outcome here.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { inspectRows, tableIdOf } from '../support/capture/inspection.ts';
import { clientIdOf } from '../support/exchanges.ts';
import { earlierVersions, fencesOfLastCommit, fencesOfRow, registrationOf, TAMPERS, tamperedUpdateScript } from '../support/fence-correlation/fences.ts';
import { commitAndRecord } from '../support/seed-snapshots/source-commits.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function sourceSqlOf(world: SyncWorld) {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to run source statements`);
  return server.sourceSql;
}

async function titleOf(world: SyncWorld, key: string): Promise<string | undefined> {
  const rows = await (await sourceSqlOf(world)).query<{ title: string }>('SELECT title FROM public.tasks WHERE id = $1', [key]);
  return rows[0]?.title;
}

Then(/^server inspection shows (\d+) fence\(s\) for that transaction with strictly increasing registered-DML ordinals starting at (\d+)$/, async function (this: SyncWorld, countText: string, firstText: string) {
  const [count, first] = [Number(countText), Number(firstText)];
  const fences = await fencesOfLastCommit(this);
  this.assert.equal(
    fences.map((f) => f.dmlOrdinal),
    Array.from({ length: count }, (_, i) => first + i),
    'registered-DML ordinals of the fences paired with the events of that transaction, in event order',
  );
  this.assert.ok(
    fences.every((f) => f.fenceId !== null && UUID.test(f.fenceId)),
    `every fence of that transaction has a fence ID: ${fences.map((f) => f.fenceId).join(', ')}`,
  );
});

Then(/^server inspection shows (\d+) new row version\(s\) for row "([^"]+)" of table "([^"]+)"$/, async function (this: SyncWorld, countText: string, key: string, table: string) {
  const count = Number(countText);
  const tableId = await tableIdOf(this, table);
  const versions = (await fencesOfRow(this, table, key)).map((f) => f.version);
  const earlier = await earlierVersions(this, tableId, key);
  this.assert.equal(new Set(versions).size, count, `distinct versions of row ${key} in that transaction: ${versions.join(', ')}`);
  this.assert.equal(versions.filter((v) => earlier.includes(v)), [], `versions of row ${key} in that transaction that an earlier transaction already held`);
  // The row's current version is the last one its events carried (or, with none, the one before).
  const [current] = await inspectRows<{ v: string }>(this, 'SELECT server_version AS v FROM synchro.row_versions WHERE table_id = $1 AND pk_text = $2', [tableId, key]);
  this.assert.equal(current?.v, [...earlier, ...versions].at(-1), `the version server inspection holds for row ${key}`);
});

Then('the pulled row {string} has title {string}', function (this: SyncWorld, key: string, title: string) {
  const reply = lastPull(this);
  const client = [...this.clientUsers.keys()].find((name) => this.hasWire(name) && this.wire(name).manifest !== undefined);
  if (client === undefined) throw new Error('no harness client holds a manifest to name the fields of the pulled row');
  const titleField = this.wire(client).fieldId('tasks', 'title');
  const rows = changesOf(reply).filter((c) => keyValue(c.pk) === key);
  this.assert.equal(
    rows.map((c) => (c.row as Record<string, unknown> | undefined)?.[titleField]),
    [title],
    `the title of row ${key} in the pull response`,
  );
});

Then('server inspection pairs the events and fences of that transaction as:', async function (this: SyncWorld, table: DataTable) {
  const fences = await fencesOfLastCommit(this);
  const rows = new Map<string, typeof fences>();
  for (const f of fences) rows.set(f.pkText, [...(rows.get(f.pkText) ?? []), f]);
  const actual: string[] = [];
  for (const [key, row] of rows) {
    const ordinals = row.map((f) => f.dmlOrdinal ?? Number.NaN);
    const ranked = [...ordinals].sort((a, b) => a - b);
    row.forEach((f, i) => {
      actual.push(`${key} ${f.operation} event ${i + 1} fence ${ranked.indexOf(ordinals[i] as number) + 1}`);
    });
  }
  const expected = table.hashes().map((r) => `${r.row} ${r.operation} event ${r['event rank in row']} fence ${r['fence ordinal rank in row']}`);
  this.assert.equal(actual.sort(), expected.sort(), 'per row: each event, its rank in the row and the ordinal rank of the fence paired with it');
});

Then(/^every pair agrees on registration kind "([^"]+)", fence ID, relation identity, operation, keys and transition version$/, async function (this: SyncWorld, kind: string) {
  const fences = await fencesOfLastCommit(this);
  if (fences.length === 0) throw new Error('server inspection shows no event of that transaction');
  const reg = await registrationOf(this, 'public', 'tasks');
  const seen = fences.map((f) => {
    const m = f.message ?? {};
    return {
      kind: f.kind === m.registration_kind ? f.kind : `${f.kind}/${String(m.registration_kind)}`,
      fenceId: f.fenceId === m.fence_id && f.fenceId !== null,
      relation: m.relation_id === reg.relationId && m.physical_relation_oid === reg.oid && m.table_id === f.tableId,
      operation: m.operation === f.operation,
      keys: (f.operation === 'insert' || m.old_record_id === f.pkText) && (f.operation === 'delete' || m.new_record_id === f.pkText),
      version: m.row_version === f.version,
    };
  });
  this.assert.equal(seen, fences.map(() => ({ kind, fenceId: true, relation: true, operation: true, keys: true, version: true })), 'agreement of each event with its paired fence');
  // The transition version each row ended with is the one its source fence recorded.
  for (const key of new Set(fences.map((f) => f.pkText))) {
    const last = fences.filter((f) => f.pkText === key).at(-1);
    const [rv] = await inspectRows<{ v: string }>(this, 'SELECT server_version AS v FROM synchro.row_versions WHERE table_id = $1 AND pk_text = $2', [reg.tableId, key]);
    this.assert.equal(rv?.v, last?.version, `the version of row ${key} after that transaction`);
  }
});

Then('every fence ID of that transaction is unique and never seen before', async function (this: SyncWorld) {
  const fences = await fencesOfLastCommit(this);
  const ids = fences.map((f) => f.fenceId);
  this.assert.ok(ids.length > 0 && ids.every((id) => id !== null), `every event of that transaction has a fence ID: ${ids.join(', ')}`);
  this.assert.equal(new Set(ids).size, ids.length, `fence IDs of that transaction: ${ids.join(', ')}`);
  const [before] = await inspectRows<{ n: string }>(this, 'SELECT count(*)::text AS n FROM synchro.wal_events WHERE fence_id = ANY ($1::uuid[]) AND NOT (event_ordinal = ANY ($2::int8[]) AND commit_lsn = $3::pg_lsn)', [
    ids,
    fences.map((f) => f.eventOrdinal),
    (await inspectRows<{ c: string }>(this, 'SELECT commit_lsn::text AS c FROM synchro.wal_events WHERE fence_id = $1::uuid', [ids[0]]))[0]?.c,
  ]);
  this.assert.equal(Number(before?.n), 0, 'event records of other transactions that carry a fence ID of that transaction');
});

Then(
  /^server inspection shows the fence of row "([^"]+)" with registration kind "([^"]+)", the table ID of "([^"]+)" and old and new record ID "([^"]+)"$/,
  async function (this: SyncWorld, key: string, kind: string, table: string, recordId: string) {
    const [fence] = (await fencesOfRow(this, table, key)).map((f) => f.message ?? {});
    this.assert.equal(
      { kind: fence?.registration_kind, tableId: fence?.table_id, old: fence?.old_record_id, new: fence?.new_record_id },
      { kind, tableId: await tableIdOf(this, table), old: recordId, new: recordId },
      `the fence paired with the update of row ${key}`,
    );
  },
);

Then(/^server inspection shows the fence of owner "([^"]+)" with registration kind "([^"]+)", no table ID and capture key (\{.*\})$/, async function (this: SyncWorld, key: string, kind: string, captureKey: string) {
  const reg = await registrationOf(this, 'public', 'owners');
  const [fence] = (await fencesOfLastCommit(this)).filter((f) => f.tableId === reg.tableId && f.pkText === key).map((f) => f.message ?? {});
  this.assert.equal(
    { kind: fence?.registration_kind, hasTableId: fence === undefined || Object.hasOwn(fence, 'table_id'), relation: fence?.relation_id, captureKey: fence?.new_capture_key },
    { kind, hasTableId: false, relation: reg.relationId, captureKey: JSON.parse(captureKey) },
    `the fence paired with the insert of owner ${key}`,
  );
});

Given(
  /^the source table "public\.tasks" has an AFTER UPDATE row trigger "([a-z_]+)" guarded by "([^"]+)" that sets title = title \|\| '!' on the same row$/,
  async function (this: SyncWorld, name: string, guard: string) {
    const server = await this.readyServer();
    if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to add a source trigger`);
    // The guard is tested in the trigger's body, where pg_trigger_depth() counts the firing trigger;
    // in a WHEN clause it would be read when the row event is queued (depth 0 for the outer update).
    await server.provision.exec(`
CREATE FUNCTION public.${name}_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF ${guard} THEN
    UPDATE public.tasks SET title = title || '!' WHERE id = NEW.id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER ${name} AFTER UPDATE ON public.tasks FOR EACH ROW EXECUTE FUNCTION public.${name}_fn();`);
  },
);

/** The outcome of the statement the harness ran with "the harness runs the nested update on the source database". */
const outcomes = new WeakMap<SyncWorld, { ok: true } | { ok: false; code: string | undefined; message: string }>();

When('the harness runs the nested update on the source database:', async function (this: SyncWorld, sql: string) {
  try {
    await commitAndRecord(this, await sourceSqlOf(this), sql);
    outcomes.set(this, { ok: true });
  } catch (error) {
    const e = error as { code?: string; message: string };
    outcomes.set(this, { ok: false, code: e.code, message: e.message });
  }
});

function outcomeOf(world: SyncWorld) {
  const outcome = outcomes.get(world);
  if (outcome === undefined) throw new Error('the harness ran no nested update in this scenario');
  return outcome;
}

Then('the statement fails with SQLSTATE {string} and row {string} still has title {string}', async function (this: SyncWorld, sqlstate: string, key: string, title: string) {
  const outcome = outcomeOf(this);
  this.assert.equal(outcome.ok ? 'succeeded' : outcome.code, sqlstate, `the nested update's outcome${outcome.ok ? '' : `: ${outcome.message}`}`);
  this.assert.equal(await titleOf(this, key), title, `the title of source row ${key}`);
});

Then(
  'the statement succeeds and, once materialized, server inspection shows {int} ordered fences and {int} new row versions for row {string}',
  async function (this: SyncWorld, fenceCount: number, versionCount: number, key: string) {
    const outcome = outcomeOf(this);
    this.assert.equal(outcome.ok ? 'succeeded' : outcome.code, 'succeeded', `the nested update's outcome${outcome.ok ? '' : `: ${outcome.message}`}`);
    await awaitCapture(this);
    const fences = await fencesOfRow(this, 'tasks', key);
    this.assert.equal(fences.map((f) => f.dmlOrdinal), Array.from({ length: fenceCount }, (_, i) => i + 1), `ordinals of the fences of row ${key}, in event order`);
    this.assert.equal(new Set(fences.map((f) => f.version)).size, versionCount, `distinct versions of row ${key} in that transaction`);
  },
);

Then('the source table {string} still holds rows {string}', async function (this: SyncWorld, relation: string, list: string) {
  const [schema, name] = relation.split('.');
  if (schema !== 'public' || name === undefined) throw new Error(`"${relation}" is not a public relation`);
  const key = this.model.keyColumn(name).name;
  const rows = await (await sourceSqlOf(this)).query<{ k: string }>(`SELECT "${key}"::text AS k FROM public."${name}" ORDER BY 1`);
  this.assert.equal(rows.map((r) => r.k), list.split(',').map((k) => k.trim()).sort(), `rows of ${relation}`);
});

When(/^the harness commits an update of row "([^"]+)" whose fence message is (.+)$/, async function (this: SyncWorld, key: string, wording: string) {
  const tamper = TAMPERS[wording];
  if (tamper === undefined) throw new Error(`no tamper is known as "${wording}"; known: ${Object.keys(TAMPERS).join('; ')}`);
  const script = await tamperedUpdateScript(this, 'tasks', this.model.keyColumn('tasks').name, key, tamper);
  await commitAndRecord(this, await sourceSqlOf(this), script);
});

Then(/^the error body has "retryable" true and no member "changes", "scope_cursors" or "checksums"$/, function (this: SyncWorld) {
  const body = this.lastReply().json as Record<string, unknown> | null;
  const error = body?.error as Record<string, unknown> | undefined;
  this.assert.equal(error?.retryable, true, `"retryable" of the error body ${this.lastReply().text}`);
  this.assert.equal(
    ['changes', 'scope_cursors', 'checksums'].filter((m) => body !== null && Object.hasOwn(body, m)),
    [],
    `success members in the error answer ${this.lastReply().text}`,
  );
});

/**
 * The client's rebuild of its Background is stored as a session too, so the
 * check is about the last rebuild request it sent: no session holds its rebuild ID.
 */
Then('server inspection shows no rebuild session for client {string}', async function (this: SyncWorld, name: string) {
  const clientId = await clientIdOf(this, name);
  const request = [...this.replies]
    .reverse()
    .filter((r) => r.endpoint === 'rebuild')
    .map((r) => JSON.parse(r.requestText) as { client_id?: string; rebuild_id?: string })
    .find((body) => body.client_id === clientId);
  if (request?.rebuild_id === undefined) throw new Error(`client "${name}" sent no rebuild request with a rebuild ID in this scenario`);
  const rows = await inspectRows<{ scope_id: string }>(this, 'SELECT scope_id FROM synchro.rebuild_sessions WHERE client_id = $1 AND rebuild_id = $2::uuid', [clientId, request.rebuild_id]);
  this.assert.equal(rows.map((r) => r.scope_id), [], `rebuild sessions of client ${name} for its last rebuild request ${request.rebuild_id}`);
});
