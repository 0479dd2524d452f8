/**
 * SYNC-MUT-013 Complete Mutation Outcome Partition
 * (features/mutation-and-data-correctness/complete-mutation-outcome-partition.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { checkBytes, type WireKind } from '../../harness/wire/index.ts';
import { bodyOf, deliveredOf } from '../support/exchanges.ts';
import { manifests } from '../support/integrity/context.ts';
import { rowMessages, verifyRowMessage } from '../support/integrity/oracle.ts';
import { lastPush, ledgerState, type Obj, thatMutation, thatOutcomeOf } from '../support/push-ledger/state.ts';
import type { Reply } from '../support/reply.ts';
import type { Json } from '../support/wire-client.ts';
import { labelledVersion, versionLabels } from '../support/version-labels.ts';
import { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

Then('the response body matches schema {string}', function (this: SyncWorld, kind: string) {
  const reply = this.lastReply();
  const request = JSON.parse(reply.requestText) as unknown;
  const result = checkBytes(kind as WireKind, Buffer.from(reply.text, 'utf8'), { request });
  const problems = [...result.schemaErrors.map((e) => `${e.pointer} ${e.message}`), ...result.violations.map((v) => `${v.rule} ${v.pointer} ${v.message}`)];
  this.assert.equal(problems, [], `the ${reply.endpoint} answer against "${kind}": ${reply.text.slice(0, 800)}`);
});

Then('the response batch_id is {string}', function (this: SyncWorld, batchId: string) {
  this.assert.equal(this.lastReply().json?.batch_id, batchId, `batch_id of ${this.lastReply().text.slice(0, 300)}`);
});

/** Problems with one push answer's partition of its request: IDs missing, repeated or foreign. */
function partitionProblems(reply: Reply): string[] {
  const requested = ((JSON.parse(reply.requestText) as Json).mutations as Json[]).map((m) => String(m.mutation_id));
  const listed = [...((reply.json?.accepted ?? []) as Obj[]), ...((reply.json?.rejected ?? []) as Obj[])].map((o) => String(o.mutation_id));
  const problems: string[] = [];
  for (const id of requested) {
    const times = listed.filter((x) => x === id).length;
    if (times !== 1) problems.push(`${id} is listed ${times} times`);
  }
  for (const id of listed) if (!requested.includes(id)) problems.push(`${id} was not requested`);
  return problems;
}

/** Problems with the order of each list against the request order. */
function orderProblems(reply: Reply): string[] {
  const position = new Map(((JSON.parse(reply.requestText) as Json).mutations as Json[]).map((m, k) => [String(m.mutation_id), k]));
  const problems: string[] = [];
  for (const list of ['accepted', 'rejected']) {
    const at = ((reply.json?.[list] ?? []) as Obj[]).map((o) => position.get(String(o.mutation_id)) ?? -1);
    if (at.some((p, k) => k > 0 && p <= (at[k - 1] as number))) problems.push(`"${list}" is in request positions ${at.join(', ')}`);
  }
  return problems;
}

Then("the mutation_ids of accepted and rejected together are exactly the request's mutation_ids, each once", function (this: SyncWorld) {
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.equal(partitionProblems(reply), [], `the partition of ${reply.text.slice(0, 1500)}`);
});

// --- generated batches ------------------------------------------------------------------------

const seeds = new WeakMap<SyncWorld, number>();

/** One generated mutation before it meets the rows: what to do, to which key, from which kind of base. */
interface Draw {
  op: 'insert' | 'update' | 'delete';
  key: number;
  base: 'current' | 'stale' | 'absent';
}

When(
  /^client "([^"]+)" pushes (\d+) generated batches, each of (\d+) to (\d+) mutations drawn from insert, update and delete on the keys n-(\d+) to n-(\d+) of table "([^"]+)", with base_version drawn from the current version, a stale version and absence as the operation allows$/,
  async function (this: SyncWorld, name: string, count: string, least: string, most: string, low: string, high: string, table: string) {
    const client = this.wire(name);
    const seed = generatedSeed();
    seeds.set(this, seed);
    const draw: fc.Arbitrary<Draw> = fc.record({
      op: fc.constantFrom('insert' as const, 'update' as const, 'delete' as const),
      key: fc.integer({ min: Number(low), max: Number(high) }),
      base: fc.constantFrom('current' as const, 'stale' as const, 'absent' as const),
    });
    const batches = fc.sample(fc.array(draw, { minLength: Number(least), maxLength: Number(most) }), { numRuns: Number(count), seed });
    const replies: Reply[] = [];
    for (const batch of batches) {
      // Each base is read when its batch is built, from the versions the earlier answers gave.
      const mutations = batch.map((d) => {
        const pk = `n-${d.key}`;
        const held = this.heldVersions.get(SyncWorld.rowKey(client.tableId(table), pk));
        const base = d.op === 'insert' ? undefined : d.base === 'current' ? (held ?? 'sv-never-issued') : d.base === 'stale' ? 'sv-stale' : undefined;
        // An update or delete always carries a base (absence is only an insert's), so "absent" means the current one there.
        const baseVersion = d.op !== 'insert' && base === undefined ? (held ?? 'sv-never-issued') : base;
        return client.mutation({
          op: d.op,
          table,
          pk,
          ...(d.op === 'delete' ? {} : { columns: d.op === 'insert' ? { owner_id: client.userId, body: `gen-${pk}` } : { body: `upd-${randomUUID().slice(0, 8)}` } }),
          ...(baseVersion === undefined ? {} : { base_version: baseVersion }),
        });
      });
      replies.push(await client.post('/sync/push', client.pushBody(mutations), { endpoint: 'push' }));
    }
    ledgerState(this).group = replies;
  },
);

function generated(world: SyncWorld): Reply[] {
  const replies = ledgerState(world).group;
  if (replies.length === 0) throw new Error('no generated batches were pushed in this scenario');
  return replies;
}

const seedNote = (world: SyncWorld) => `(fast-check seed ${seeds.get(world)})`;

Then('every response has status {int}', function (this: SyncWorld, status: number) {
  const replies = generated(this);
  this.assert.equal(
    replies.filter((r) => r.status !== status).map((r) => `${r.status} ${r.text.slice(0, 200)}`),
    [],
    `answers other than ${status} ${seedNote(this)}`,
  );
});

Then("in every response the mutation_ids of accepted and rejected together are exactly the request's mutation_ids, each once", function (this: SyncWorld) {
  const problems = generated(this).flatMap((r, k) => partitionProblems(r).map((p) => `batch ${k + 1}: ${p}`));
  this.assert.equal(problems, [], `partitions of the generated batches ${seedNote(this)}`);
});

Then('in every response each of accepted and rejected is a subsequence of the request order', function (this: SyncWorld) {
  const problems = generated(this).flatMap((r, k) => orderProblems(r).map((p) => `batch ${k + 1}: ${p}`));
  this.assert.equal(problems, [], `list orders of the generated batches ${seedNote(this)}`);
});

const outcomesOfGroup = (world: SyncWorld) => generated(world).flatMap((r) => [...((r.json?.accepted ?? []) as Obj[]), ...((r.json?.rejected ?? []) as Obj[])]);

Then(/^no outcome in any response has status ((?:"[a-z_]+"(?:, | or )?)+)$/, function (this: SyncWorld, list: string) {
  const forbidden = [...list.matchAll(/"([a-z_]+)"/g)].map((m) => m[1] as string);
  const outcomes = outcomesOfGroup(this);
  this.assert.ok(outcomes.length > 0, 'the generated batches got outcomes');
  this.assert.equal(outcomes.filter((o) => forbidden.includes(String(o.status))).map((o) => JSON.stringify(o)), [], `outcomes with status ${forbidden.join(', ')} ${seedNote(this)}`);
});

Then('no outcome in any response has code {string}', function (this: SyncWorld, code: string) {
  const outcomes = outcomesOfGroup(this);
  this.assert.ok(outcomes.length > 0, 'the generated batches got outcomes');
  this.assert.equal(outcomes.filter((o) => o.code === code).map((o) => JSON.stringify(o)), [], `outcomes with code ${code} ${seedNote(this)}`);
});

Then('no outcome in any response carries "retryable" unless its code is "schema_incompatible", where it is false', function (this: SyncWorld) {
  const outcomes = outcomesOfGroup(this);
  this.assert.ok(outcomes.length > 0, 'the generated batches got outcomes');
  const wrong = outcomes.filter((o) => Object.hasOwn(o, 'retryable') && !(o.code === 'schema_incompatible' && o.retryable === false));
  this.assert.equal(wrong.map((o) => JSON.stringify(o)), [], `outcomes carrying "retryable" ${seedNote(this)}`);
});

Then('no response answers a row conflict with status 409', function (this: SyncWorld) {
  const replies = generated(this);
  this.assert.equal(replies.filter((r) => r.status === 409).map((r) => r.text.slice(0, 300)), [], `409 answers to the generated batches ${seedNote(this)}`);
});

// --- the members of one outcome ---------------------------------------------------------------

Then("that outcome has members mutation_id, table, pk and outcome_schema equal to the request's values and schema", function (this: SyncWorld) {
  const outcome = thatOutcomeOf(this);
  const mutation = thatMutation(this).mutation;
  const request = JSON.parse(lastPush(this).requestText) as Json;
  this.assert.equal(
    { mutation_id: outcome.mutation_id, table: outcome.table, pk: outcome.pk, outcome_schema: outcome.outcome_schema },
    { mutation_id: mutation.mutation_id, table: mutation.table, pk: mutation.pk, outcome_schema: request.schema },
    'the echoed members of that outcome',
  );
});

function versionProblem(world: SyncWorld, outcome: Obj, expected: string): string | undefined {
  const version = outcome.server_version;
  const present = Object.hasOwn(outcome, 'server_version');
  if (expected === 'absent') return present ? `it carries server_version ${JSON.stringify(version)}` : undefined;
  if (!present || typeof version !== 'string') return 'it carries no server_version';
  const that = thatMutation(world);
  if (expected === 'present and new') {
    const earlier = new Set([...versionLabels(world).values(), ...(that.heldBefore === undefined ? [] : [that.heldBefore])]);
    if (that.mutation.base_version !== undefined) earlier.add(String(that.mutation.base_version));
    return earlier.has(version) ? `server_version ${version} is one the row had before` : undefined;
  }
  if (expected === 'present and current') {
    if (that.heldBefore === undefined) throw new Error('the client held no version of the row before the push, so "current" names nothing');
    return version === that.heldBefore ? undefined : `server_version ${version} is not the row's current ${that.heldBefore}`;
  }
  const label = /^present, equal to (\w+)$/.exec(expected);
  if (label) return version === labelledVersion(world, label[1] as string) ? undefined : `server_version ${version} is not ${label[1]}`;
  throw new Error(`no server_version expectation reads "${expected}"`);
}

Then(/^that outcome has server_version (absent|present and new|present and current|present, equal to \w+), server_row (present|absent) and row_checksum (present|absent)$/, function (this: SyncWorld, version: string, row: string, checksum: string) {
  const outcome = thatOutcomeOf(this);
  this.assert.equal(versionProblem(this, outcome, version) ?? 'as expected', 'as expected', `server_version of ${JSON.stringify(outcome)}`);
  this.assert.equal(Object.hasOwn(outcome, 'server_row') ? 'present' : 'absent', row, `server_row of ${JSON.stringify(outcome)}`);
  this.assert.equal(Object.hasOwn(outcome, 'row_checksum') ? 'present' : 'absent', checksum, `row_checksum of ${JSON.stringify(outcome)}`);
});

Then(/^that outcome has message (present|absent) and no member "retryable"$/, function (this: SyncWorld, message: string) {
  const outcome = thatOutcomeOf(this);
  if (message === 'present') this.assert.ok(typeof outcome.message === 'string' && outcome.message.length > 0, `that outcome has a nonempty message: ${JSON.stringify(outcome)}`);
  else this.assert.ok(!Object.hasOwn(outcome, 'message'), `that outcome has no message: ${JSON.stringify(outcome)}`);
  this.assert.ok(!Object.hasOwn(outcome, 'retryable'), `that outcome has no "retryable": ${JSON.stringify(outcome)}`);
});

// --- row checksums ----------------------------------------------------------------------------

Then('every outcome that carries server_row also carries row_checksum, and no other outcome carries either', function (this: SyncWorld) {
  const reply = lastPush(this);
  const outcomes = [...((reply.json?.accepted ?? []) as Obj[]), ...((reply.json?.rejected ?? []) as Obj[])];
  this.assert.ok(outcomes.some((o) => Object.hasOwn(o, 'server_row')), `some outcome carries a row: ${reply.text.slice(0, 500)}`);
  const unpaired = outcomes.filter((o) => Object.hasOwn(o, 'server_row') !== Object.hasOwn(o, 'row_checksum'));
  this.assert.equal(unpaired.map((o) => JSON.stringify(o)), [], 'outcomes with server_row but no row_checksum, or the reverse');
});

Then('every row_checksum equals the ADR 005 row digest of its server_row under its outcome_schema and server_version', async function (this: SyncWorld) {
  const push = (await this.proxy()).exchanges.filter((e) => e.endpoint === 'push' && e.done).at(-1);
  if (push === undefined) throw new Error('the proxy recorded no push');
  // What the client was given, after anything the wire did to it.
  const messages = rowMessages([push], (e) => bodyOf(deliveredOf(e)?.body) as Obj | undefined);
  this.assert.ok(messages.length > 0, 'the last push answer carries rows');
  const known = await manifests(this);
  for (const message of messages) {
    const verdict = verifyRowMessage(known, message);
    this.assert.ok(verdict.ok, `row_checksum of the outcome ${JSON.stringify(message.raw)}: ${verdict.problem ?? ''}`);
  }
});
