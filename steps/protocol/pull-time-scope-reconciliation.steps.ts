/**
 * SYNC-PROTO-006 Pull-Time Scope Reconciliation
 * (features/protocol/pull-time-scope-reconciliation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { member, type Reply } from '../support/reply.ts';
import { provisioned } from '../support/scopes/assignment-sources.ts';
import { byteSorted, type Loose, quotedList } from '../support/scopes/exchanges.ts';
import { literal } from '../support/scopes/roles.ts';
import { addedIds } from '../support/scopes/scope-sets.ts';
import { scopesState } from '../support/scopes/state.ts';
import { expectedValue } from '../support/values.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the registered assignment function reads table {string}', async function (this: SyncWorld, relation: string) {
  if (relation !== 'public.team_members') throw new Error(`the harness knows how to build an assignment function over public.team_members only, not ${relation}`);
  const { exec, scopes } = await provisioned(this);
  await exec(`CREATE TABLE public.team_members (user_id text NOT NULL, team_id text NOT NULL, PRIMARY KEY (user_id, team_id));
CREATE FUNCTION public.harness_team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
  SET search_path = pg_catalog, synchro
  BEGIN ATOMIC
    SELECT 'team:' || m.team_id FROM public.team_members AS m WHERE m.user_id = p_user_id;
  END;
REVOKE ALL ON FUNCTION public.harness_team_scopes(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.harness_team_scopes(text) TO synchro_owner;`);
  await scopes.registerAssignmentFunction('public.harness_team_scopes', 100);
});

// Both grants commit together, so no request can observe one without the other.
Given('user {string} is assigned scopes {string} and {string} in one operator transaction', async function (this: SyncWorld, user: string, first: string, second: string) {
  const { exec } = await provisioned(this);
  await exec(`BEGIN;
SELECT synchro.synchro_grant_user_scope(${literal(user)}, ${literal(first)});
SELECT synchro.synchro_grant_user_scope(${literal(user)}, ${literal(second)});
COMMIT;`);
});

Then('every scope in {string} is listed in {string}', function (this: SyncWorld, from: string, to: string) {
  const reply = this.lastReply();
  const added = ((member(reply.json, from) ?? []) as Loose[]).map((entry) => (typeof entry === 'string' ? entry : entry.id));
  const listed = (member(reply.json, to) ?? []) as string[];
  this.assert.equal(
    added.filter((scope) => !listed.includes(scope)),
    [],
    `scopes of ${from} missing from ${to} in ${reply.text.slice(0, 500)}`,
  );
});

Then('when {string} is false the keys of {string} include every added scope and no removed scope', function (this: SyncWorld, flag: string, pointer: string) {
  const reply = this.lastReply();
  if (member(reply.json, flag) !== false) {
    this.assert.ok(member(reply.json, pointer) === undefined, `an intermediate page carries ${pointer}`);
    return;
  }
  const keys = Object.keys((member(reply.json, pointer) ?? {}) as object);
  const added = ((member(reply.json, '/scope_updates/add') ?? []) as Loose[]).map((entry) => entry.id as string);
  const removed = (member(reply.json, '/scope_updates/remove') ?? []) as string[];
  this.assert.equal(
    { missing: added.filter((s) => !keys.includes(s)), stale: removed.filter((s) => keys.includes(s)) },
    { missing: [], stale: [] },
    `keys of ${pointer}: ${keys.join(', ')}`,
  );
});

/** The last answered request of harness client `name` to `endpoint`. */
function lastReplyOf(world: SyncWorld, name: string, endpoint: string): Reply {
  const clientId = world.wire(name).clientId;
  const found = [...world.replies].reverse().find((r) => r.endpoint === endpoint && JSON.parse(r.requestText || '{}').client_id === clientId);
  if (!found) throw new Error(`no ${endpoint} of client "${name}" was answered`);
  return found;
}

Then('the scopes client {string} holds after applying the pull\'s scope_updates equal the scopes the connect of client {string} added', function (this: SyncWorld, puller: string, connector: string) {
  const pulled = lastReplyOf(this, puller, 'pull');
  this.assert.equal(pulled.status, 200, `the pull of client "${puller}" answered ${pulled.status}: ${pulled.text.slice(0, 300)}`);
  const added = addedIds(this, lastReplyOf(this, connector, 'connect'));
  this.assert.equal(byteSorted(this.wire(puller).cursors.keys()), added, `set of client "${puller}" against the connect of client "${connector}"`);
  scopesState(this).comparedSets = { puller, connector };
});

Then(/^both sets are exactly ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, list: string) {
  const pair = scopesState(this).comparedSets;
  if (!pair) throw new Error('no two sets were compared before this step');
  const expected = byteSorted(quotedList(list));
  this.assert.equal(byteSorted(this.wire(pair.puller).cursors.keys()), expected, `set held by client "${pair.puller}"`);
  this.assert.equal(addedIds(this, lastReplyOf(this, pair.connector, 'connect')), expected, `set added by the connect of client "${pair.connector}"`);
});

/** The last two replies, which the "both responses" steps compare. */
function lastTwo(world: SyncWorld): [Reply, Reply] {
  const [a, b] = world.replies.slice(-2);
  if (!a || !b) throw new Error('fewer than two responses were recorded');
  return [a, b];
}

Then(/^both responses have "([^"]+)" equal to (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const want = expectedValue(expected, this.noted);
  for (const reply of lastTwo(this)) {
    this.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
    this.assert.equal(member(reply.json, pointer), want, `${pointer} of ${reply.text.slice(0, 500)}`);
  }
});

Then('every rebuild response has status {int}', function (this: SyncWorld, status: number) {
  const rebuilds = this.replies.filter((r) => r.endpoint === 'rebuild');
  this.assert.ok(rebuilds.length > 0, 'no rebuild response was recorded');
  this.assert.equal(
    rebuilds.map((r) => r.status),
    rebuilds.map(() => status),
    'statuses of the rebuild responses',
  );
});

// The pull a client makes after a rebuild and before any other pull: nothing assigned changes, only the cursor is installed.
Given('client {string} has pulled and rebuilt every assigned scope', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
  for (const [scope, cursor] of [...client.cursors]) {
    if (cursor !== null) continue;
    const run = await client.rebuildAll(scope);
    const page = run.pages[run.pages.length - 1];
    if (page?.status !== 200) throw new Error(`client "${name}" could not rebuild ${scope}: ${page?.status} ${page?.text}`);
  }
});

// Server inspection of the stored assignment: the scope rows of the client
// with their write witness (xmin, the writing transaction) and the client
// row's scope columns. An unchanged picture means nothing was written.
async function assignmentPicture(world: SyncWorld, name: string): Promise<Map<string, string>> {
  const server = await world.readyServer();
  const inspect = server.inspect;
  if (!inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  const client = world.wire(name);
  const tables = await inspect.query<{ name: string; table_name: string }>(
    `SELECT format('%I.%I', c.table_schema, c.table_name) AS name, c.table_name FROM information_schema.columns c
      WHERE c.table_schema = 'synchro' AND c.column_name = 'client_id'
        AND EXISTS (SELECT 1 FROM information_schema.columns u WHERE u.table_schema = c.table_schema AND u.table_name = c.table_name AND u.column_name = 'user_id')
        AND (c.table_name LIKE '%scope%' OR c.table_name = 'clients') ORDER BY 1`,
  );
  if (!tables.some((t) => t.table_name.includes('scope'))) throw new Error('server inspection shows no table of per-client scope assignment');
  const picture = new Map<string, string>();
  for (const { name: table, table_name } of tables) {
    const projection =
      table_name === 'clients'
        ? `(SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(t)) WHERE key LIKE '%scope%')`
        : `to_jsonb(t) || jsonb_build_object('written_by_transaction', t.xmin::text)`;
    const rows = await inspect.query<{ r: string }>(
      `SELECT coalesce(jsonb_agg(${projection} ORDER BY to_jsonb(t)::text), '[]')::text AS r FROM ${table} t WHERE t.user_id = $1 AND t.client_id = $2`,
      [client.userId, client.clientId],
    );
    picture.set(table, rows[0]?.r ?? '[]');
  }
  return picture;
}

Given('server inspection records the assignment state of client {string}', async function (this: SyncWorld, name: string) {
  scopesState(this).assignmentSnapshot = await assignmentPicture(this, name);
});

Then('server inspection shows the assignment state of client {string} unchanged, including its history and its write timestamps', async function (this: SyncWorld, name: string) {
  const before = scopesState(this).assignmentSnapshot;
  if (!before) throw new Error('the assignment state was not recorded earlier in this scenario');
  const after = await assignmentPicture(this, name);
  this.assert.equal(Object.fromEntries(after), Object.fromEntries(before), `assignment state of client "${name}"`);
});
