/**
 * SYNC-CAP-003 Commit Safe WAL Order
 * (features/server-change-capture/commit-safe-wal-order.feature): the steps
 * only this requirement uses. Interleaved source transactions run on source
 * connections of their own (`sourceSql.session()`), so their commit order can
 * differ from their start order; stream points (the durable boundary, event
 * ordinals, the positions inside issued cursors) are read through the
 * `inspect` capability (steps/support/capture-order/stream-points.ts).
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { SourceSqlSession } from '../../harness/adapters/server.ts';
import { inspectRows, tableIdOf } from '../support/capture/inspection.ts';
import { currentStream, type DecodedToken, decodedTokensOf, decodeToken, effectHeld, type StreamPoint, streamPoint, transactionRecorded } from '../support/capture-order/stream-points.ts';
import { openSession } from '../support/mutations/source-sessions.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { drain, drainChanges, lastDrain } from '../support/pull-drains/drain.ts';
import { dependencyState } from '../support/scope-dependencies/state.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/** The named source connections of a scenario; each keeps its own open transaction between steps. */
const connections = new WeakMap<SyncWorld, Map<string, SourceSqlSession>>();

When('source connection {string} runs:', async function (this: SyncWorld, name: string, sql: string) {
  const open = connections.get(this) ?? new Map<string, SourceSqlSession>();
  connections.set(this, open);
  let session = open.get(name);
  if (session === undefined) {
    const opened = await openSession(this);
    if (opened === 'skipped') return 'skipped';
    session = opened;
    open.set(name, session);
  }
  await session.query(sql);
  return undefined;
});

Given('a capture-only dependency registration for table {string} with key column {string}', async function (this: SyncWorld, relation: string, key: string) {
  const server = await this.readyServer();
  if (!server.provision || !server.sourceSql) throw new Error(`server adapter "${server.id}" has no provision and sourceSql capabilities to register a capture-only dependency`);
  const quoted = relation.split('.').map((part) => `"${part.replaceAll('"', '""')}"`).join('.');
  await server.provision.exec(`CREATE TABLE ${quoted} ("${key.replaceAll('"', '""')}" text PRIMARY KEY, display text)`);
  await server.sourceSql.query('SELECT synchro.synchro_register_capture_dependency($1, $2)', [relation, key]);
});

/** Event ordinals of the durable event records of one row (any transaction of the current generation). */
async function eventOrdinals(world: SyncWorld, tableId: string, key: string): Promise<number[]> {
  const { generation } = await currentStream(world);
  const rows = await inspectRows<{ o: string }>(
    world,
    'SELECT event_ordinal::text AS o FROM synchro.wal_events WHERE stream_generation = $1 AND table_id = $2 AND pk_text = $3 ORDER BY commit_lsn, event_ordinal',
    [generation, tableId, key],
  );
  return rows.map((r) => Number(r.o));
}

Then('server inspection shows the event of row {string} of table {string} with event ordinal {int}', async function (this: SyncWorld, key: string, table: string, ordinal: number) {
  this.assert.equal(await eventOrdinals(this, await tableIdOf(this, table), key), [ordinal], `event ordinals of row ${key} of table ${table}`);
});

Then('server inspection shows the event of row {string} of relation {string} with event ordinal {int}', async function (this: SyncWorld, key: string, relation: string, ordinal: number) {
  const [schema, name] = relation.split('.');
  const [registered] = await inspectRows<{ table_id: string }>(this, 'SELECT table_id FROM synchro.relations WHERE physical_schema = $1 AND physical_relation = $2 AND active', [schema, name]);
  if (registered === undefined) throw new Error(`server inspection shows no active registration of ${relation}`);
  this.assert.equal(await eventOrdinals(this, registered.table_id, key), [ordinal], `event ordinals of row ${key} of relation ${relation}`);
});

Given('no source transaction has touched a registered table since installation', async function (this: SyncWorld) {
  await this.readyServer();
  const touched = await inspectRows<{ n: string }>(this, 'SELECT (SELECT count(*) FROM synchro.wal_events) + (SELECT count(*) FROM synchro.scope_effects) AS n');
  if (Number(touched[0]?.n) !== 0) throw new Error(`server inspection already shows ${touched[0]?.n} row events or pull effects: a source transaction touched a registered table`);
});

Then('server inspection shows the durable pull boundary at position kind {string}', async function (this: SyncWorld, kind: string) {
  const stream = await currentStream(this);
  const shown = stream.materializedCommit === null ? 'generation_start' : 'transaction_end';
  this.assert.equal(shown, kind, `the durable pull boundary of generation ${stream.generation} (last materialized commit ${stream.materializedCommit ?? 'none'})`);
  if (stream.materializedCommit !== null) {
    this.assert.ok(await transactionRecorded(this, stream.generation, stream.materializedCommit), `the boundary's transaction ${stream.materializedCommit} has a completed record`);
  }
});

When('the operator resets the capture stream to a new generation', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.resetStream) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.resetStream() to start a new stream generation`);
  await server.capture.resetStream();
  return undefined;
});

Then('server inspection decodes that {string} to position kind {string} of the current stream generation', async function (this: SyncWorld, member: string, kind: string) {
  const last = generationsState(this).lastRebuild;
  const token = last?.run.pages.at(-1)?.json?.[member];
  if (typeof token !== 'string') throw new Error(`the last rebuild of this scenario gave no "${member}" to decode`);
  const payload = await decodeToken(this, token);
  this.assert.ok(payload !== undefined, `the "${member}" of the rebuild of ${last?.scope} verifies under one of the server's own keys`);
  const point = streamPoint(payload?.position);
  this.assert.equal(point?.kind, kind, `the position inside the "${member}" of the rebuild of ${last?.scope}: ${JSON.stringify(payload?.position)}`);
  this.assert.equal(payload?.stream_generation, (await currentStream(this)).generation, `the stream generation inside the "${member}"`);
});

/** The WAL range a labelled harness commit was recorded in (the shared commit-and-record step). */
function recordedCommit(world: SyncWorld, label: string): { before: string; after: string } {
  const position = dependencyState(world).positions.get(label);
  if (position === undefined) throw new Error(`no source transaction was recorded as "${label}" in this scenario`);
  return position;
}

Then(
  'server inspection shows either a completed transaction record with {int} events for transaction {string} or a processed boundary at or after its end',
  async function (this: SyncWorld, events: number, label: string) {
    const { before, after } = recordedCommit(this, label);
    const { generation } = await currentStream(this);
    const [seen] = await inspectRows<{ records: string[]; processed: string; covered: boolean }>(
      this,
      `SELECT ARRAY(SELECT commit_lsn::text || ' events=' || event_count FROM synchro.wal_transactions
                     WHERE stream_generation = $1 AND commit_lsn > $2::pg_lsn AND commit_lsn <= $3::pg_lsn AND event_count = $4 ORDER BY commit_lsn) AS records,
              processed_end_lsn::text AS processed, processed_end_lsn >= $3::pg_lsn AS covered
         FROM synchro.wal_progress`,
      [generation, before, after, events],
    );
    const recorded = (seen?.records ?? []).length === 1;
    this.assert.ok(
      recorded || seen?.covered === true,
      `transaction "${label}" (committed between ${before} and ${after}) has neither one completed record with ${events} events (found: ${JSON.stringify(seen?.records)}) nor a processed boundary at or after its end (processed ${seen?.processed})`,
    );
  },
);

Then('server inspection shows the slot acknowledgement at or after the end of transaction {string}', async function (this: SyncWorld, label: string) {
  const { after } = recordedCommit(this, label);
  const [positions] = await inspectRows<{ ack: string; confirmed: string | null; ack_ok: boolean; slot_ok: boolean }>(
    this,
    `SELECT w.acknowledged_end_lsn::text AS ack, s.confirmed_flush_lsn::text AS confirmed,
            w.acknowledged_end_lsn >= $1::pg_lsn AS ack_ok, s.confirmed_flush_lsn >= $1::pg_lsn AS slot_ok
       FROM synchro.wal_progress w LEFT JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
    [after],
  );
  this.assert.equal({ recorded: positions?.ack_ok, slot: positions?.slot_ok }, { recorded: true, slot: true }, `acknowledged ${positions?.ack}, slot ${positions?.confirmed}, transaction "${label}" ended by ${after}`);
});

When('client {string} pulls pages with limit {int} until {string} is false', async function (this: SyncWorld, name: string, limit: number, member: string) {
  if (member !== 'has_more') throw new Error(`paging follows "has_more", not "${member}"`);
  await drain(this, name, limit);
});

Then('the concatenated pages list exactly these changes:', async function (this: SyncWorld, table: DataTable) {
  const actual: string[] = [];
  for (const change of drainChanges(lastDrain(this)) as Obj[]) actual.push([change.scope, (await tableNamed(this, String(change.table))).name, change.op, keyValue(change.pk)].map(String).join(' '));
  const expected = table.hashes().map((row) => [row.scope?.trim(), row.table?.trim(), row.op?.trim(), row.pk?.trim()].join(' '));
  this.assert.equal(actual, expected, 'the changes of the pages, concatenated in the order they were delivered');
});

/**
 * Unlike the shared "lists exactly these changes" (a set comparison: the
 * merge order belongs to the pull requirements), this one is about the order:
 * the order the pull response gives its changes is the stream order.
 */
Then('the pull response lists exactly these changes in this order:', async function (this: SyncWorld, table: DataTable) {
  const reply = lastPull(this);
  const actual: string[] = [];
  for (const change of changesOf(reply)) actual.push([change.scope, (await tableNamed(this, String(change.table))).name, change.op, keyValue(change.pk)].map(String).join(' '));
  const expected = table.hashes().map((row) => [row.scope?.trim(), row.table?.trim(), row.op?.trim(), row.pk?.trim()].join(' '));
  this.assert.equal(actual, expected, `the changes of the pull response, in the order given: ${reply.text.slice(0, 1000)}`);
});

Then('every page but the last has {string} true', function (this: SyncWorld, member: string) {
  const pages = lastDrain(this);
  const flags = pages.map((page) => page.json?.[member]);
  this.assert.equal(flags, pages.map((_, index) => index < pages.length - 1), `"${member}" of each page, in order`);
});

/** The tokens the last decoding step read, for the checks that follow it. */
const decodedTokens = new WeakMap<SyncWorld, DecodedToken[]>();

function describePoint(point: StreamPoint): string {
  return point.kind === 'effect' ? `effect ${point.commit}/${point.event}/${point.effect}` : point.kind === 'transaction_end' ? `transaction_end ${point.commit}` : 'generation_start';
}

Then(
  'server inspection decodes every cursor issued to client {string} to position kind {string}, {string} or {string} of the current stream generation',
  async function (this: SyncWorld, name: string, first: string, second: string, third: string) {
    const kinds = [first, second, third];
    const tokens = await decodedTokensOf(this, name);
    decodedTokens.set(this, tokens);
    this.assert.ok(tokens.length > 0, `client "${name}" was issued cursors in this scenario`);
    const { generation } = await currentStream(this);
    for (const token of tokens) {
      const point = streamPoint(token.position);
      this.assert.ok(point !== undefined, `the token in ${token.where} decodes, under the server's own keys, to a stream position: ${JSON.stringify(token.position)}`);
      if (point === undefined) continue;
      this.assert.ok(kinds.includes(point.kind), `the token in ${token.where} names a ${point.kind} position`);
      this.assert.equal(token.streamGeneration, generation, `stream generation of the token in ${token.where}`);
      // A transaction_end point is defined only by a transaction the stream completed.
      if (point.kind === 'transaction_end') this.assert.ok(await transactionRecorded(this, generation, point.commit), `the token in ${token.where} names ${describePoint(point)}, a completed transaction of generation ${generation}`);
    }
  },
);

Then('no decoded {string} position names an effect that server inspection does not hold', async function (this: SyncWorld, kind: string) {
  if (kind !== 'effect') throw new Error(`only "effect" positions name an effect, not "${kind}"`);
  const { generation } = await currentStream(this);
  const tokens = decodedTokens.get(this);
  if (tokens === undefined) throw new Error('no cursor issued in this scenario was decoded by server inspection yet');
  const effects = tokens.flatMap((token) => {
    const point = streamPoint(token.position);
    return point?.kind === 'effect' ? [{ where: token.where, point }] : [];
  });
  this.assert.ok(effects.length > 0, 'the cursors issued in this scenario include at least one effect position to check');
  for (const { where, point } of effects) this.assert.ok(await effectHeld(this, generation, point), `the token in ${where} names ${describePoint(point)}, which server inspection holds`);
});
