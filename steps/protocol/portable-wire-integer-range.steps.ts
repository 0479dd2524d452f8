/**
 * SYNC-PROTO-002 Portable Wire Integer Range
 * (features/protocol/portable-wire-integer-range.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then, When } from '@cucumber/cucumber';
import { INTEGER_TOKEN } from '../support/wire-values/integers.ts';
import { serverRowField } from '../support/wire-values/outcomes.ts';
import { exchanges, type NumberTokenAt, numberTokens } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';
import { clientIdOf, upstreamOf } from '../support/exchanges.ts';

const SAFE_MAX = 9007199254740991n;

/** Number tokens of row values: inside a row, a server row or the authored columns of a mutation. */
const ROW_VALUE = /\/(?:row|server_row|columns)\//;

function envelopeTokens(body: Uint8Array): NumberTokenAt[] {
  return (numberTokens(body) ?? []).filter((t) => !ROW_VALUE.test(`${t.pointer}/`));
}

/** Envelope number tokens of every body recorded in either direction (the server's own answers, not rewrites). */
const recordedTokens = new WeakMap<SyncWorld, { where: string; token: NumberTokenAt }[]>();

Then('every JSON number the proxy recorded in an envelope member, in either direction, is an integer token without fraction or exponent', async function (this: SyncWorld) {
  const found: { where: string; token: NumberTokenAt }[] = [];
  for (const e of await exchanges(this)) {
    for (const token of envelopeTokens(e.requestBody)) found.push({ where: `${e.endpoint} request #${e.seq}`, token });
    const answer = upstreamOf(e);
    if (answer) for (const token of envelopeTokens(answer.body)) found.push({ where: `${e.endpoint} response #${e.seq}`, token });
  }
  this.assert.ok(found.length > 0, 'the proxy recorded no envelope number at all');
  const loose = found.filter(({ token }) => !INTEGER_TOKEN.test(token.text)).map(({ where, token }) => `${where} ${token.pointer} = ${token.text}`);
  this.assert.equal(loose, [], 'envelope numbers that are not integer tokens');
  recordedTokens.set(this, found);
});

Then(/^every such integer lies in (-?[0-9]+)\.\.(-?[0-9]+)$/, function (this: SyncWorld, low: string, high: string) {
  const found = recordedTokens.get(this);
  if (found === undefined) throw new Error('no earlier step collected the recorded integers');
  const outside = found.filter(({ token }) => BigInt(token.text) < BigInt(low) || BigInt(token.text) > BigInt(high)).map(({ where, token }) => `${where} ${token.pointer} = ${token.text}`);
  this.assert.equal(outside, [], `integers outside ${low}..${high}`);
});

Then('the response carries no integer above 9007199254740991 and no negative integer', function (this: SyncWorld) {
  const reply = this.lastReply();
  const tokens = envelopeTokens(Buffer.from(reply.text, 'utf8'));
  const bad = tokens.filter((t) => !INTEGER_TOKEN.test(t.text) || BigInt(t.text) > SAFE_MAX || BigInt(t.text) < 0n).map((t) => `${t.pointer} = ${t.text}`);
  this.assert.equal(bad, [], `numbers of the ${reply.endpoint} response`);
});

type Counter = 'client_generation' | 'scope_set_version';

async function counters(world: SyncWorld, name: string, set?: { clientGeneration?: number; scopeSetVersion?: number }) {
  const server = await world.readyServer();
  const control = server.clients?.counters;
  if (!control) throw new Error(`server adapter "${server.id}" offers no client-state control to read or set a client's counters`);
  return control(world.userOf(name), await clientIdOf(world, name), set);
}

When(/^the server's (client_generation|scope_set_version) of client "([^"]+)" is set to ([0-9]+)$/, async function (this: SyncWorld, counter: Counter, name: string, value: string) {
  const wanted = Number(value);
  const stored = await counters(this, name, counter === 'client_generation' ? { clientGeneration: wanted } : { scopeSetVersion: wanted });
  this.assert.equal(counter === 'client_generation' ? stored.clientGeneration : stored.scopeSetVersion, wanted, `the server's ${counter} of client "${name}" after setting it`);
});

Then(/^the server's (client_generation|scope_set_version) of client "([^"]+)" is still ([0-9]+)$/, async function (this: SyncWorld, counter: Counter, name: string, value: string) {
  const stored = await counters(this, name);
  this.assert.equal(counter === 'client_generation' ? stored.clientGeneration : stored.scopeSetVersion, Number(value), `the server's ${counter} of client "${name}"`);
});

Then('the server_row of that outcome has field {string} equal to the JSON string {string}', async function (this: SyncWorld, column: string, expected: string) {
  const value = await serverRowField(this, column);
  this.assert.equal(typeof value, 'string', `server_row ${column} must be a JSON string, not ${JSON.stringify(value)}`);
  this.assert.equal(value, expected, `server_row ${column}`);
});
