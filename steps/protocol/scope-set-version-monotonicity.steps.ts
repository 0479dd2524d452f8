/**
 * SYNC-PROTO-009 Scope Set Version Monotonicity
 * (features/protocol/scope-set-version-monotonicity.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import type { ScopesControl } from '../../harness/adapters/server.ts';
import { member, type Reply } from '../support/reply.ts';
import { byteSorted } from '../support/scopes/exchanges.ts';
import { historyProblems, problemsOfKind } from '../support/scopes/history.ts';
import { type History, scopesState } from '../support/scopes/state.ts';
import { expectedValue, namedNumber } from '../support/values.ts';
import type { SyncWorld } from '../support/world.ts';

Then('the response member {string} has a non-null entry for {string}', function (this: SyncWorld, pointer: string, key: string) {
  const reply = this.lastReply();
  const value = member(reply.json, pointer) as Record<string, unknown> | undefined;
  this.assert.ok(value !== undefined && typeof value[key] === 'string' && value[key] !== '', `${pointer} has no non-null entry for ${key}: ${reply.text.slice(0, 500)}`);
});

When('client {string} pulls presenting the final rebuild cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const rebuilt = [...this.replies].reverse().find((r) => r.endpoint === 'rebuild' && r.status === 200 && JSON.parse(r.requestText).scope === scope && r.json.has_more === false);
  const final = rebuilt?.json.final_scope_cursor;
  if (typeof final !== 'string') throw new Error(`client "${name}" has no completed rebuild of ${scope} with a final cursor`);
  await this.wire(name).pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`]: { cursor: final } });
});

async function scopes(world: SyncWorld): Promise<ScopesControl> {
  const server = await world.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  return server.scopes;
}

/** The assignment changes a scripted table may name, phrased as the core's Given steps. */
const CHANGES: [RegExp, (control: ScopesControl, m: RegExpExecArray) => Promise<void>][] = [
  [/^user "([^"]+)" is assigned scope "([^"]+)"$/, (c, m) => c.grantUserScope(m[1] as string, m[2] as string)],
  [/^scope "([^"]+)" is revoked from user "([^"]+)"$/, (c, m) => c.revokeUserScope(m[2] as string, m[1] as string)],
  [/^a registered shared scope "([^"]+)"$/, (c, m) => c.registerSharedScope(m[1] as string)],
  [/^the default scope of user "([^"]+)" is revoked$/, (c, m) => c.revokeUserScope(m[1] as string, `user:${m[1]}`)],
  [/^no change$/, async () => {}],
];

async function applyChange(world: SyncWorld, change: string): Promise<void> {
  for (const [pattern, apply] of CHANGES) {
    const m = pattern.exec(change);
    if (m) return apply(await scopes(world), m);
  }
  throw new Error(`unknown assignment change "${change}"`);
}

const listed = (cell: string) => byteSorted(cell.split(',').map((s) => s.trim()).filter((s) => s !== ''));

When('the following assignment steps happen, each followed by a pull of client {string}:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  const history: History = { start: { set: byteSorted(client.cursors.keys()), version: client.scopeSetVersion }, steps: [] };
  for (const row of table.hashes()) {
    const change = row.change ?? '';
    await applyChange(this, change);
    const reply = await client.pull();
    const version = namedNumber(row.version ?? '', this.noted);
    if (version === undefined) throw new Error(`version cell "${row.version}" is not like V or V + 1`);
    history.steps.push({ label: change, expected: listed(row['set after the pull'] ?? ''), observed: byteSorted(client.cursors.keys()), version: reply.json?.scope_set_version, status: reply.status, listedVersion: version });
  }
  scopesState(this).histories.push(history);
});

function histories(world: SyncWorld): History[] {
  const found = scopesState(world).histories;
  if (found.length === 0) throw new Error('no assignment history was walked in this scenario');
  return found;
}

Then('every pull response had status {int}', function (this: SyncWorld, status: number) {
  for (const history of histories(this)) this.assert.equal(history.steps.map((s) => s.status), history.steps.map(() => status), 'statuses of the pulls after each step');
});

Then('after each step the scope set of client {string} and the reported {string} are as listed', function (this: SyncWorld, _name: string, _pointer: string) {
  for (const history of histories(this)) {
    const actual = history.steps.map((s) => ({ step: s.label, set: s.observed, version: s.version }));
    const expected = history.steps.map((s) => ({ step: s.label, set: s.expected, version: s.listedVersion }));
    this.assert.equal(actual, expected, 'set and version after each step');
    this.assert.equal(historyProblems(history), [], 'version rules over the walked history');
  }
});

/** Replies of harness client `name` (by its current client id), in order. */
function repliesOf(world: SyncWorld, name: string): Reply[] {
  const clientId = world.wire(name).clientId;
  return world.replies.filter((r) => r.requestText !== '' && JSON.parse(r.requestText).client_id === clientId);
}

Then('the versions reported to client {string} rose by exactly one between its connect and its pull', function (this: SyncWorld, name: string) {
  const replies = repliesOf(this, name).filter((r) => r.status === 200);
  const connect = replies.find((r) => r.endpoint === 'connect');
  const pull = [...replies].reverse().find((r) => r.endpoint === 'pull');
  if (!connect || !pull) throw new Error(`client "${name}" has no successful connect and pull`);
  this.assert.equal(pull.json.scope_set_version, connect.json.scope_set_version + 1, `versions of client "${name}": connect ${connect.json.scope_set_version}, pull ${pull.json.scope_set_version}`);
});

Then('the versions reported to client {string} never decreased', function (this: SyncWorld, name: string) {
  const versions = repliesOf(this, name)
    .filter((r) => r.status === 200 && (r.endpoint === 'connect' || r.endpoint === 'pull'))
    .map((r) => r.json.scope_set_version as number);
  this.assert.ok(versions.length >= 2, `client "${name}" got fewer than two versions`);
  this.assert.equal(
    versions.filter((v, i) => i > 0 && v < (versions[i - 1] as number)),
    [],
    `versions reported to client "${name}": ${versions.join(', ')}`,
  );
});

function theseResponses(world: SyncWorld): Reply[] {
  const from = world.repliesBeforeAction;
  if (from === undefined) throw new Error('the scenario has not reached an action step');
  const replies = world.replies.slice(from);
  if (replies.length === 0) throw new Error('no response was recorded since the first action');
  return replies;
}

Then(/^every one of these responses reported "([^"]+)" equal to (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const replies = theseResponses(this);
  const want = expectedValue(expected, this.noted);
  this.assert.equal(
    replies.map((r) => ({ endpoint: r.endpoint, status: r.status, value: member(r.json, pointer) })),
    replies.map((r) => ({ endpoint: r.endpoint, status: 200, value: want })),
    `${pointer} of every response since the first action`,
  );
});

Then(/^the connect response has "([^"]+)" equal to (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const connects = theseResponses(this).filter((r) => r.endpoint === 'connect');
  if (connects.length !== 1) throw new Error(`expected one connect response since the first action, found ${connects.length}`);
  const reply = connects[0] as Reply;
  this.assert.equal(member(reply.json, pointer), expectedValue(expected, this.noted), `${pointer} of ${reply.text.slice(0, 500)}`);
});

// The property: random histories of grant/revoke/default-scope steps, a pull after each.
type Action = { kind: 'grant' | 'revoke'; scope: string } | { kind: 'revoke-default' | 'restore-default' | 'none' };

When(
  /^the harness runs (\d+) generated histories of up to (\d+) steps, each step drawn from granting or revoking one of "([^"]+)" and "([^"]+)", revoking or restoring the default scope, or no change, with a pull of client "([^"]+)" after each step and a fresh client "\5" for each history$/,
  async function (this: SyncWorld, runs: string, maxSteps: string, first: string, second: string, name: string) {
    const control = await scopes(this);
    const user = this.userOf(name);
    const defaultScope = `user:${user}`;
    const action = fc.oneof(
      fc.record({ kind: fc.constantFrom('grant' as const, 'revoke' as const), scope: fc.constantFrom(first, second) }),
      fc.record({ kind: fc.constantFrom('revoke-default' as const, 'restore-default' as const, 'none' as const) }),
    ) as fc.Arbitrary<Action>;
    const state = scopesState(this);
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: Number(maxSteps) }), async (actions) => {
        // Every history starts from the same assignment: the default scope only.
        await control.revokeUserScope(user, first);
        await control.revokeUserScope(user, second);
        await control.grantUserScope(user, defaultScope);
        const granted = new Set<string>();
        let withDefault = true;
        const client = this.newWire(name, user);
        const connected = await client.connect();
        if (connected.status !== 200) throw new Error(`fresh connect answered ${connected.status}: ${connected.text}`);
        const history: History = { start: { set: [], version: 0 }, steps: [] };
        // The connect itself is the first step: from the empty set a fresh client declares.
        history.steps.push({ label: 'fresh connect', expected: [defaultScope], observed: byteSorted(client.cursors.keys()), version: client.scopeSetVersion, status: connected.status });
        for (const step of actions) {
          if (step.kind === 'grant') {
            await control.grantUserScope(user, step.scope);
            granted.add(step.scope);
          } else if (step.kind === 'revoke') {
            await control.revokeUserScope(user, step.scope);
            granted.delete(step.scope);
          } else if (step.kind === 'revoke-default') {
            await control.revokeUserScope(user, defaultScope);
            withDefault = false;
          } else if (step.kind === 'restore-default') {
            await control.grantUserScope(user, defaultScope);
            withDefault = true;
          }
          const reply = await client.pull();
          const expected = byteSorted([...granted, ...(withDefault ? [defaultScope] : [])]);
          history.steps.push({ label: 'scope' in step ? `${step.kind} ${step.scope}` : step.kind, expected, observed: byteSorted(client.cursors.keys()), version: reply.json?.scope_set_version, status: reply.status });
        }
        state.histories.push(history);
        const problems = historyProblems(history);
        if (problems.length > 0) throw new Error(problems.join('\n'));
      }),
      { numRuns: Number(runs), endOnFailure: true },
    );
  },
);

Then('in every history the reported version rose by exactly one after each step that changed the set and stayed equal after every other step', function (this: SyncWorld) {
  for (const history of histories(this)) this.assert.equal(problemsOfKind(history, 'step'), [], 'version steps of a generated history');
});

Then('in every history no version value was reported with two different sets', function (this: SyncWorld) {
  for (const history of histories(this)) this.assert.equal(problemsOfKind(history, 'reuse'), [], 'versions reused for another set');
});

Then('in every history no reported version was lower than an earlier one', function (this: SyncWorld) {
  for (const history of histories(this)) this.assert.equal(problemsOfKind(history, 'backward'), [], 'versions moving backward');
});
