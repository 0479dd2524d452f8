/**
 * Assertions on the last answer a harness-driven request got, on noted
 * values, and on the server's durable state.
 */
import { Given, Then } from '@cucumber/cucumber';
import { member } from '../support/reply.ts';
import { snapshotServerState, stateDifferences } from '../support/server-state.ts';
import type { SyncWorld } from '../support/world.ts';
import { expectedValue } from './values.ts';

Then('the response status is {int}', function (this: SyncWorld, status: number) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, status, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then('the response status is {int} with error code {string}', function (this: SyncWorld, status: number, code: string) {
  const reply = this.lastReply();
  this.assert.equal({ status: reply.status, code: reply.json?.error?.code }, { status, code }, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then(/^the response member "([^"]*)" equals (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const reply = this.lastReply();
  const actual = member(reply.json, pointer);
  this.assert.equal(actual, expectedValue(expected, this.noted), `member ${pointer} of the ${reply.endpoint} response ${reply.text.slice(0, 500)}`);
});

Then('the response has no member {string}', function (this: SyncWorld, pointer: string) {
  const reply = this.lastReply();
  this.assert.equal(member(reply.json, pointer), undefined, `the ${reply.endpoint} response has member ${pointer}: ${reply.text.slice(0, 500)}`);
});

Then('the response has no member {string} and no member {string}', function (this: SyncWorld, first: string, second: string) {
  const reply = this.lastReply();
  this.assert.equal([member(reply.json, first), member(reply.json, second)], [undefined, undefined], `the ${reply.endpoint} response ${reply.text.slice(0, 500)}`);
});

Given('the harness notes the scope_set_version of client {string} as {word}', async function (this: SyncWorld, name: string, label: string) {
  if (!/^[A-Z]$/.test(label)) throw new Error(`a noted value is named by one capital letter, not "${label}"`);
  let version: number;
  if (this.hasWire(name)) version = this.wire(name).scopeSetVersion;
  else {
    const client = await this.process(name);
    version = (await client.call<{ scopeSetVersion: number }>('inspectScopes')).scopeSetVersion;
  }
  this.noted.set(label, version);
});

Then('no durable state changed on the server', async function (this: SyncWorld) {
  if (!this.serverSnapshot) throw new Error('no server state was captured before the first action of this scenario');
  const now = await snapshotServerState(await this.readyServer(), this.deadlineMs);
  this.assert.equal(stateDifferences(this.serverSnapshot, now), [], 'durable server state changed');
});
