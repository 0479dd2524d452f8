/**
 * Membership generations seen through server inspection, and the operator
 * changes that should mint new ones: a new membership rule, a new
 * dependency, a composition change and a controlled rebinding to a renamed
 * relation. The generations are recorded under a label before the change
 * and compared scope by scope after it.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { undeterminedWithout } from '../support/optional-controls.ts';
import type { SyncWorld } from '../support/world.ts';
import { applyCompositionChange, applyNewDependency, applyNewRule, applyRelationRebinding } from './rule-changes.ts';
import { generationOf, generationsState, labelled, membershipGenerations, scopeList } from './state.ts';

Given('the harness records the membership generation of every scope as {string}', async function (this: SyncWorld, label: string) {
  generationsState(this).generations.set(label, await membershipGenerations(this));
});

When('the operator applies a new membership function for {string} that places each row in scope {string}', async function (this: SyncWorld, table: string, template: string) {
  await applyNewRule(this, table, template);
});

When('the operator applies a new dependency of {string} on a capture-only table {string}', async function (this: SyncWorld, table: string, dependency: string) {
  await applyNewDependency(this, table, dependency);
});

When('the operator applies a composition change of {string} from {string} to {string}', async function (this: SyncWorld, table: string, from: string, to: string) {
  const missing = await applyCompositionChange(this, table, from, to);
  if (missing !== undefined) return undeterminedWithout(this, missing);
  return undefined;
});

When('the operator applies a controlled reconfiguration that binds {string} to a renamed relation {string}', async function (this: SyncWorld, table: string, renamed: string) {
  const missing = await applyRelationRebinding(this, table, renamed);
  if (missing !== undefined) return undeterminedWithout(this, missing);
  return undefined;
});

Then('server inspection shows the membership generation of scopes {string} greater than in {string}', async function (this: SyncWorld, scopes: string, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  const notGreater = scopeList(scopes)
    .filter((scope) => !(generationOf(now, scope) > generationOf(before, scope)))
    .map((scope) => `${scope}: ${generationOf(before, scope)} → ${generationOf(now, scope)}`);
  this.assert.equal(notGreater, [], `membership generations that did not advance past "${label}"`);
});

Then('server inspection shows the membership generation of scope {string} equal to {string}', async function (this: SyncWorld, scope: string, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  this.assert.equal(generationOf(now, scope), generationOf(before, scope), `membership generation of scope "${scope}" against "${label}"`);
});

Then('server inspection shows the membership generation of every scope equal to {string}', async function (this: SyncWorld, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  const scopes = [...new Set([...before.keys(), ...now.keys()])].sort();
  const moved = scopes.filter((scope) => generationOf(now, scope) !== generationOf(before, scope)).map((scope) => `${scope}: ${generationOf(before, scope)} → ${generationOf(now, scope)}`);
  this.assert.equal(moved, [], `membership generations that changed since "${label}"`);
});
