/**
 * Shared steps (used by several requirements).
 * Membership function registration as the operator does it: the source
 * functions, the registration and its outcome, and the active registry
 * generation.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { activeGeneration, assertRefused, attemptAsOwner, contractState, describe, outcome, recorded, relationOf } from '../support/scopes/function-contract.ts';
import type { SyncWorld } from '../support/world.ts';

/** The registration error a refusal carries in its message, as the registry raises it. */
function registrationError(failure: { message: string }): { code?: unknown; reason?: unknown } {
  try {
    const parsed = JSON.parse(failure.message) as { error?: { code?: unknown; reason?: unknown } };
    return parsed.error ?? {};
  } catch {
    return {};
  }
}

Given('the harness records the active registry generation as {string}', async function (this: SyncWorld, label: string) {
  contractState(this).generations.set(label, await activeGeneration(this));
});

Then('server inspection shows the active registry generation equal to {string}', async function (this: SyncWorld, label: string) {
  this.assert.equal(await activeGeneration(this), recorded(contractState(this).generations, label, 'registry generation'), 'active registry generation');
});

When('the operator registers {string} as the membership function of table {string} with max_scope_fanout {int}', async function (this: SyncWorld, fn: string, table: string, fanout: number) {
  contractState(this).outcome = await attemptAsOwner(this, 'SELECT synchro.synchro_reconfigure_membership($1, $2, $3)', [relationOf(table), fn, fanout]);
});

Then('the registration succeeds', function (this: SyncWorld) {
  const result = outcome(this);
  this.assert.ok(result.ok, `the registration failed: ${describe(result)}`);
});

Then('the registration fails with error code {string}', function (this: SyncWorld, code: string) {
  const failure = assertRefused(this);
  this.assert.equal({ sqlstate: failure.code, code: registrationError(failure).code }, { sqlstate: '22023', code }, describe(failure));
});

Then('the registration fails with error code {string} and reason {string}', function (this: SyncWorld, code: string, reason: string) {
  const failure = assertRefused(this);
  const error = registrationError(failure);
  this.assert.equal({ sqlstate: failure.code, code: error.code, reason: error.reason }, { sqlstate: '22023', code, reason }, describe(failure));
});
