/**
 * Shared steps (used by several requirements).
 * The proxy and its fault stage around one client's next push: holding the
 * request or the answer (or the answer to its next pull), answering in the server's place, losing the answer
 * after the server committed, cutting the connection, and delivering the
 * request twice.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { arrangeFailure } from '../support/client-lifecycle/arranged-failures.ts';
import { processPhrase } from '../support/client-mode.ts';
import { holdPushRequest, holdResponse, releaseHeld } from '../support/mutations/holds.ts';
import { pushesOf } from '../support/mutations/pushes.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the proxy (?:holds the next (?:push|pull) response to|holds the next push request of|answers the next push of|drops the response to the next push of|closes the connection of the next push of|delivers the next push of) client "([^"]+)"/);

// A held pull answer stops the sync right after the push answer was applied: what the client then shows is the push reconciliation alone.
Given(/^the proxy holds the next (push|pull) response to client "([^"]+)"$/, async function (this: SyncWorld, endpoint: 'push' | 'pull', name: string) {
  await holdResponse(this, name, endpoint);
});

Given('the proxy holds the next push request of client {string} before forwarding it', async function (this: SyncWorld, name: string) {
  await holdPushRequest(this, name);
});

When('the proxy forwards the held request', async function (this: SyncWorld) {
  await releaseHeld(this, 'request');
});

Given(/^the proxy answers the next push of client "([^"]+)" with (status \d{3}, code "[a-z_]+" and Retry-After "\d+")$/, async function (this: SyncWorld, name: string, failure: string) {
  await arrangeFailure(this, name, 'push', 1, failure);
});

Given(/^the proxy answers the next push of client "([^"]+)" with status (\d{3}) and error code "([a-z_]+)"$/, async function (this: SyncWorld, name: string, status: string, code: string) {
  // A non-retryable refusal in the server's place: the server never sees the request.
  await arrangeFailure(this, name, 'push', 1, `status ${status} and the error body ${JSON.stringify({ error: { code, message: `injected ${code}`, retryable: false } })}`);
});

Given('the proxy drops the response to the next push of client {string} after the server committed it', async function (this: SyncWorld, name: string) {
  await arrangeFailure(this, name, 'push', 1, 'a transport error after the server committed the push');
});

Given('the proxy closes the connection of the next push of client {string} without answering', async function (this: SyncWorld, name: string) {
  await arrangeFailure(this, name, 'push', 1, 'a transport error before the request reaches the server');
});

Given('the proxy delivers the next push of client {string} to the server twice and hands the client the second, replayed answer', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  (await this.proxy()).inject({ endpoint: 'push', when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId, fault: { kind: 'duplicate' } });
});

Then('the first push request of client {string} was answered {int} with error code {string}', async function (this: SyncWorld, name: string, status: number, code: string) {
  const first = (await pushesOf(this, name))[0];
  this.assert.ok(first !== undefined, `client "${name}" sent no push`);
  this.assert.equal(first.answer?.status, status, `status of the answer to the first push of client "${name}"`);
  const body = JSON.parse(first.answer?.body.toString('utf8') ?? '{}') as { error?: { code?: string } };
  this.assert.equal(body.error?.code, code, `error code of the answer to the first push of client "${name}"`);
});
