/**
 * SYNC-STATE-002 Non-Retryable Failures Are Explicit
 * (features/failure-state-and-version/non-retryable-failures-are-explicit.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import type { StageEndpoint } from '../../harness/proxy/fault-stage.ts';
import type { Exchange } from '../../harness/proxy/records.ts';
import { deliveredStatus, failedExchange, lastFailure, lifecycle, quoted, stageOf, statusOf } from '../support/client-lifecycle/observe.ts';
import { answerOf, checkRestart, rebuildsOf } from '../support/client-lifecycle/rebuild.ts';
import { errorOf } from '../support/client-lifecycle/server-errors.ts';
import { processPhrase } from '../support/client-mode.ts';
import { sqlType } from '../support/model.ts';
import { ident, publishChange } from '../support/schema-and-versions/manifests.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, exchangesIn } from '../support/exchanges.ts';

processPhrase(/^the proxy will apply .+ to the next \w+ response to client "([^"]+)"$/);

processPhrase(/^client "([^"]+)" is in state "error" with a failure/);

processPhrase(/^client "([^"]+)" sent no (?:pull or rebuild|further push) request/);

processPhrase(/^client "([^"]+)" still reports the sealed batch/);

processPhrase(/^when the next \w+ request of client "([^"]+)" reaches the proxy, the server will first/);

processPhrase(/^the request client "([^"]+)" sent right after that/);

type Body = Record<string, unknown> & { [key: string]: unknown };

type Defect = (body: Body, exchange: Exchange) => Body | undefined;

/** Flips one hex digit of a digest, keeping its length and alphabet. */
function flipHex(text: string): string {
  const at = text.search(/[0-9a-f]/);
  if (at < 0) throw new Error(`"${text}" has no hex digit to flip`);
  const digit = text[at] as string;
  return `${text.slice(0, at)}${digit === '0' ? '1' : '0'}${text.slice(at + 1)}`;
}

function changeOf(body: Body, row: string): Record<string, unknown> | undefined {
  return ((body.changes ?? []) as { pk: Record<string, unknown> }[]).find((c) => Object.values(c.pk ?? {}).map(String).includes(row));
}

/** Each defect edits a valid answer into one that breaks the contract; undefined means "not this answer, wait for the next". */
function defectFor(text: string): Defect {
  let m = /^removing the outcome of the mutation for row "([^"]+)" from "accepted"$/.exec(text);
  if (m) {
    const row = m[1] as string;
    return (body, exchange) => {
      const sent = (bodyOf(exchange.requestBody)?.mutations ?? []) as { mutation_id: string; pk: Record<string, unknown> }[];
      const id = sent.find((s) => Object.values(s.pk ?? {}).map(String).includes(row))?.mutation_id;
      const accepted = (body.accepted ?? []) as { mutation_id: string }[];
      if (id === undefined || !accepted.some((a) => a.mutation_id === id)) return undefined;
      body.accepted = accepted.filter((a) => a.mutation_id !== id);
      return body;
    };
  }
  m = /^setting "(\/[a-z_]+)" to "([^"]*)"$/.exec(text);
  if (m) {
    const [member, value] = [(m[1] as string).slice(1), m[2] as string];
    return (body) => {
      body[member] = value;
      return body;
    };
  }
  if (text === 'removing the member "checksums" from the terminal page') {
    return (body) => {
      if (body.has_more !== false) return undefined;
      delete body.checksums;
      return body;
    };
  }
  if (text === 'adding "checksums" {} to a page with "has_more" true') {
    return (body) => {
      body.has_more = true;
      body.checksums = {};
      return body;
    };
  }
  m = /^adding a change for scope "([^"]+)"$/.exec(text);
  if (m) {
    const scope = m[1] as string;
    return (body) => {
      const changes = (body.changes ?? []) as Record<string, unknown>[];
      const first = changes[0];
      if (first === undefined) return undefined;
      changes.push({ ...first, scope });
      return body;
    };
  }
  m = /^flipping one hex digit of the "row_checksum" digest of the change for "([^"]+)"$/.exec(text);
  if (m) {
    const row = m[1] as string;
    return (body) => {
      const change = changeOf(body, row) as { row_checksum?: unknown } | undefined;
      if (change?.row_checksum === undefined) return undefined;
      const checksum = change.row_checksum as { digest?: string } | string;
      if (typeof checksum === 'string') change.row_checksum = flipHex(checksum);
      else checksum.digest = flipHex(String(checksum.digest));
      return body;
    };
  }
  m = /^adding the unknown top-level member "([a-z_]+)" with value (\d+)$/.exec(text);
  if (m) {
    const [member, value] = [m[1] as string, Number(m[2])];
    return (body) => {
      body[member] = value;
      return body;
    };
  }
  throw new Error(`unknown response defect "${text}"`);
}

When(/^the proxy will apply (.+) to the next (connect|push|pull|rebuild) response to client "([^"]+)"$/, async function (this: SyncWorld, defect: string, endpoint: 'connect' | 'push' | 'pull' | 'rebuild', name: string) {
  const edit = defectFor(defect);
  const client = await this.process(name);
  const proxy = await this.proxy();
  proxy.inject({
    endpoint,
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId,
    fault: { kind: 'rewrite', describe: defect, transform: (body, exchange) => edit(body as Body, exchange) },
  });
  lifecycle(this).failures.push({ client: name, clientId: client.clientId, endpoint, nth: 1, mark: proxy.exchanges.length, description: defect, arrangedAt: Date.now() });
});

Then(
  /^client "([^"]+)" is in state "error" with a failure whose operation is "([a-z_]+)"(?:, code is "([a-z_]+)")? and retryable is false$/,
  async function (this: SyncWorld, name: string, operation: string, code: string | undefined) {
    const status = await statusOf(await this.process(name));
    this.assert.equal(status.status, 'error', `state of client "${name}"`);
    this.assert.ok(status.failure !== undefined, `client "${name}" reports no typed failure in error`);
    this.assert.equal(status.failure.operation, operation, `operation of the failure of client "${name}"`);
    if (typeof code === 'string') this.assert.equal(status.failure.code, code, `code of the failure of client "${name}"`);
    this.assert.equal(status.failure.retryable, false, `retryable of the failure of client "${name}"`);
  },
);

/** The arranged failure's exchange and everything the client sent after it. */
async function afterRefusal(world: SyncWorld, name: string): Promise<{ refused: Exchange; after: Exchange[] }> {
  const failure = lastFailure(world, name);
  const proxy = await world.proxy();
  const refused = exchangesIn(proxy.exchanges, { clientId: failure.clientId, endpoints: [failure.endpoint], from: failure.mark, unfinished: true })[0];
  if (!refused) throw new Error(`the ${failure.endpoint} request to be refused was never sent`);
  return { refused, after: exchangesIn(proxy.exchanges, { clientId: failure.clientId, from: refused.seq, unfinished: true }) };
}

Then('client {string} sent no pull or rebuild request after the refused push', async function (this: SyncWorld, name: string) {
  const { refused, after } = await afterRefusal(this, name);
  this.assert.ok(deliveredStatus(refused) !== 200, 'the push to be refused was answered 200');
  this.assert.equal(
    after.filter((e) => e.endpoint === 'pull' || e.endpoint === 'rebuild').map((e) => e.endpoint),
    [],
    `requests of client "${name}" after the refused push`,
  );
});

Then('client {string} sent no further push request', async function (this: SyncWorld, name: string) {
  const { after } = await afterRefusal(this, name);
  this.assert.equal(
    after.filter((e) => e.endpoint === 'push').length,
    0,
    `push requests of client "${name}" after the refused one`,
  );
});

Then('client {string} still reports the sealed batch of the refused push with its exact request bytes', async function (this: SyncWorld, name: string) {
  const { refused } = await afterRefusal(this, name);
  const { batches } = await (await this.process(name)).call<{ batches: { batchId: string; requestBytes: string }[] }>('inspectBatches');
  const batch = batches.find((b) => b.batchId === bodyOf(refused.requestBody)?.batch_id);
  this.assert.ok(batch !== undefined, `client "${name}" no longer reports the refused batch`);
  this.assert.equal(Buffer.from(batch.requestBytes, 'base64').toString('utf8'), refused.requestBody.toString('utf8'), 'stored bytes of the refused batch');
});

Given(/^when the next (push|pull) request of client "([^"]+)" reaches the proxy, the server will first (.+)$/, async function (this: SyncWorld, endpoint: StageEndpoint, name: string, action: string) {
  const client = await this.process(name);
  const server = await this.readyServer();
  let before: () => Promise<void>;
  const m = /^expire client "([^"]+)"$/.exec(action);
  const publish = /^publish a class 2 manifest that adds a nullable column "([^"]+)" of type "([^"]+)" to table "([^"]+)"$/.exec(action);
  if (m) {
    if (m[1] !== name) throw new Error('the expired client is the one whose request waits');
    if (!server.clients) throw new Error(`server adapter "${server.id}" offers no clients control to expire a client`);
    const clients = server.clients;
    before = () => clients.expire(client.userId, client.clientId);
  } else if (publish) {
    const [column, type, table] = [publish[1] as string, publish[2] as string, publish[3] as string];
    before = async () => {
      await publishChange(this, table, `ALTER TABLE public.${ident(table)} ADD COLUMN ${ident(column)} ${sqlType(type)};`, 'class_2');
      this.model.table(table).columns.push({ name: column, type, key: false, nullable: true });
    };
  } else throw new Error(`unknown server action "${action}"`);
  const stage = await stageOf(this);
  const proxy = await this.proxy();
  const rule = { endpoint, clientId: client.clientId, nth: 1, action: { kind: 'forward' as const }, before };
  stage.arm(rule);
  lifecycle(this).failures.push({ client: name, clientId: client.clientId, endpoint, nth: 1, mark: proxy.exchanges.length, description: action, arrangedAt: Date.now(), rule });
});

async function answered(world: SyncWorld, name: string, endpoint: string, status: number): Promise<{ exchange: Exchange; after: Exchange[] }> {
  const client = await world.process(name);
  const all = exchangesIn((await world.proxy()).exchanges, { clientId: client.clientId, unfinished: true });
  const exchange = all.find((e) => e.endpoint === endpoint && deliveredStatus(e) === status);
  if (!exchange) throw new Error(`no ${endpoint} request of client "${name}" was answered ${status}`);
  return { exchange, after: all.filter((e) => e.seq > exchange.seq) };
}

Then(/^the request client "([^"]+)" sent right after that (push|pull) is a connect request$/, async function (this: SyncWorld, name: string, endpoint: string) {
  const status = endpoint === 'push' ? 409 : 422;
  const { after } = await answered(this, name, endpoint, status);
  this.assert.equal(after[0]?.endpoint, 'connect', `the request client "${name}" sent after the refused ${endpoint}`);
});

Then(/^client "([^"]+)" sent no pull or rebuild request between that (push|pull) and that connect$/, async function (this: SyncWorld, name: string, endpoint: string) {
  const status = endpoint === 'push' ? 409 : 422;
  const { after } = await answered(this, name, endpoint, status);
  const connect = after.findIndex((e) => e.endpoint === 'connect');
  this.assert.ok(connect >= 0, `client "${name}" never reconnected after the refused ${endpoint}`);
  this.assert.equal(
    after.slice(0, connect).map((e) => e.endpoint),
    [],
    `requests between the refused ${endpoint} and the reconnect`,
  );
});

processPhrase(/^the (?:connect|push|pull|rebuild) request of client "([^"]+)" was answered/);

Then(/^the (connect|push|pull|rebuild) request of client "([^"]+)" was answered (\d{3}) with error code "([a-z_]+)"$/, async function (this: SyncWorld, endpoint: string, name: string, status: string, code: string) {
  const client = await this.process(name);
  const answered = exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, endpoints: [endpoint as Exchange['endpoint']], unfinished: true }).filter((e) => deliveredStatus(e) === Number(status));
  this.assert.ok(answered.length > 0, `no ${endpoint} request of client "${name}" was answered ${status}`);
  const first = answered[0]?.delivered as { body: Buffer } | undefined;
  const body = first === undefined ? undefined : bodyOf(first.body);
  this.assert.equal(body?.error?.code, code, `error code of the ${status} answer`);
});

processPhrase(/^the next rebuild request client "([^"]+)" sent for scope /);

processPhrase(/^client "([^"]+)" did not install any cursor for scope /);

Then(/^the next rebuild request client "([^"]+)" sent for scope "([^"]+)" has "\/cursor" null and a "\/rebuild_id" different from the failed attempt's$/, async function (this: SyncWorld, name: string, scope: string) {
  await checkRestart(this, name, scope);
});

Then('client {string} did not install any cursor for scope {string} from the failed attempt', async function (this: SyncWorld, name: string, scope: string) {
  const failure = lastFailure(this, name);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, 'the refused rebuild request was never sent');
  const failedId = bodyOf(failed.requestBody).rebuild_id;
  // Cursors of the failed attempt: every continuation and final cursor its pages returned.
  const tokens = new Set<string>();
  for (const e of rebuildsOf(exchangesIn(proxy.exchanges, { clientId: failure.clientId, unfinished: true }), scope)) {
    if (bodyOf(e.requestBody).rebuild_id !== failedId) continue;
    const page = answerOf(e);
    if (typeof page?.cursor === 'string') tokens.add(page.cursor);
    if (typeof page?.final_scope_cursor === 'string') tokens.add(page.final_scope_cursor);
  }
  const client = await this.process(name);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  const cursor = scopes.find((s) => s.scopeId === scope)?.cursor ?? null;
  this.assert.ok(cursor === null || !tokens.has(cursor), `client "${name}" installed a cursor of the failed attempt for ${scope}`);
  const later = exchangesIn(proxy.exchanges, { clientId: failure.clientId, endpoints: ['pull'], from: failed.seq, unfinished: true }).map((e) => bodyOf(e.requestBody)?.scopes?.[scope]?.cursor);
  this.assert.equal(
    later.filter((c) => typeof c === 'string' && tokens.has(c)),
    [],
    `pulls of client "${name}" presenting a cursor of the failed attempt`,
  );
});

When('client {string} pulls without an Authorization header', async function (this: SyncWorld, name: string) {
  const wire = this.wire(name);
  await wire.post('/sync/pull', wire.pullBody(), { user: null, endpoint: 'pull' });
});

When('client {string} pushes a second batch reusing the last batch_id with different content', async function (this: SyncWorld, name: string) {
  const wire = this.wire(name);
  const table = this.model.tables.values().next().value;
  if (!table) throw new Error('no table is registered in this scenario');
  const batchId = randomUUID();
  const row = (id: string) =>
    wire.mutation({ op: 'insert', table: table.name, pk: id, columns: Object.fromEntries(table.columns.filter((c) => !c.key).map((c) => [c.name, c.name === 'owner_id' ? wire.userId : `${c.name}-${id}`])) });
  const first = await wire.push([row(`reuse-${batchId.slice(0, 8)}-1`)], { batch_id: batchId });
  if (first.status !== 200) throw new Error(`the first batch was not accepted: ${first.status} ${first.text}`);
  await wire.push([row(`reuse-${batchId.slice(0, 8)}-2`)], { batch_id: batchId });
});

const BASE = ['code', 'message', 'retryable'];

Then(/^the error body carries exactly the extra members (.+)$/, function (this: SyncWorld, extras: string) {
  const error = errorOf(this);
  const extra = Object.keys(error)
    .filter((k) => !BASE.includes(k))
    .sort();
  if (extras === 'none') {
    this.assert.equal(extra, [], `extra members of the error body ${JSON.stringify(error)}`);
    return;
  }
  const optional = /^none beyond an optional complete set of (.+)$/.exec(extras);
  if (optional) {
    const set = quoted(optional[1] as string).sort();
    this.assert.ok(extra.length === 0 || JSON.stringify(extra) === JSON.stringify(set), `extra members ${extra.join(', ')} are neither none nor exactly ${set.join(', ')}`);
    return;
  }
  this.assert.equal(extra, quoted(extras).sort(), `extra members of the error body ${JSON.stringify(error)}`);
});

processPhrase(/^the states client "([^"]+)" went through/);

Then(/^the states client "([^"]+)" went through continue with (.+)$/, async function (this: SyncWorld, name: string, sequence: string) {
  const expected = quoted(sequence);
  const { statusLog } = await statusOf(await this.process(name));
  const from = lifecycle(this).logMarks.get(name);
  this.assert.ok(from !== undefined, `nothing marked where the states of client "${name}" should continue`);
  this.assert.equal(statusLog.slice(from, from + expected.length), expected, `states ${statusLog.join(' -> ')} from entry ${from}`);
});
