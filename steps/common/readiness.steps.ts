/**
 * Shared steps (used by several requirements).
 * GET /ready as a load balancer asks it, and the readiness detail server
 * inspection reads (the checks behind the public answer).
 */
import { Then, When } from '@cucumber/cucumber';
import { healthDetail, healthSettled, readinessSettledAt, requestReady, stateOf } from '../support/capture-readiness/readiness.ts';
import type { SyncWorld } from '../support/world.ts';

/** For a failure message: the checks the health detail reports not "ok", when the server can be inspected. */
async function unhealthyChecks(world: SyncWorld): Promise<string> {
  const server = await world.readyServer();
  if (!server.inspect) return '';
  const detail = await healthDetail(world).catch((error: Error) => ({ error: error.message }) as const);
  if ('error' in detail) return ` (health detail unavailable: ${detail.error})`;
  const failing = Object.entries(detail.checks ?? {}).filter(([, check]) => check.state !== 'ok');
  return ` (checks not ok: ${JSON.stringify(Object.fromEntries(failing))}; observations ${JSON.stringify(detail.observations)})`;
}

When(/^the harness requests GET \/ready$/, async function (this: SyncWorld) {
  await this.readyServer();
  await requestReady(this);
});

// A repair is seen when the server next looks: GET /ready is asked until it says ready or the wait ends.
Then('the readiness response is 200 with body exactly:', async function (this: SyncWorld, body: string) {
  const reply = await readinessSettledAt(this, 200);
  this.assert.equal({ status: reply.status, body: reply.text }, { status: 200, body }, `GET /ready${reply.status === 200 ? '' : await unhealthyChecks(this)}`);
});

Then('server inspection reports the capture check {string} as not {string}', async function (this: SyncWorld, check: string, state: string) {
  const detail = await healthSettled(this, (d) => stateOf(d, check) !== state);
  this.assert.ok(detail.checks?.[check] !== undefined, `the health detail has a check "${check}": ${JSON.stringify(detail.checks)}`);
  this.assert.notEqual(stateOf(detail, check), state, `health detail check "${check}": ${JSON.stringify(detail.checks?.[check])}`);
});
