/**
 * Shared steps (used by several requirements).
 * What the server holds for a row, read the way any client reads it (a fresh
 * reader rebuilds the row's scopes, see ../support/server-rows.ts): the value
 * of one column and, when the step names one, the server_version it is at.
 */
import { Then } from '@cucumber/cucumber';
import { ledgerState, notedOutcome, outcomesIn } from '../support/push-ledger/state.ts';
import { servedRow } from '../support/server-rows.ts';
import { labelledVersion, writerVersion } from '../support/version-labels.ts';
import { outcomeAnywhere } from '../support/wire-values/outcomes.ts';
import type { SyncWorld } from '../support/world.ts';

/**
 * The version a "server holds" step names: a label, the version a harness
 * writer's own write got, the one server_version of a group's 200 answers, a
 * mutation's returned version, or a remembered outcome's.
 */
function expectedVersion(world: SyncWorld, phrase: string, table: string, row: string): string {
  let match = /^version "([^"]+)"$/.exec(phrase);
  if (match) return labelledVersion(world, match[1] as string);
  match = /^the version of client "([^"]+)"'s update$/.exec(phrase);
  if (match) return writerVersion(world, match[1] as string, row, table);
  if (phrase === 'the server_version given in the 200 responses') {
    const versions = new Set(ledgerState(world).group.filter((r) => r.status === 200).flatMap((r) => outcomesIn(r).map((o) => o.server_version)));
    world.assert.equal(versions.size, 1, `the 200 answers of the group give one server_version: ${[...versions].join(', ')}`);
    return String([...versions][0]);
  }
  match = /^the version returned for mutation "([^"]+)"$/.exec(phrase);
  if (match) {
    const outcome = outcomeAnywhere(world, match[1] as string);
    world.assert.ok(typeof outcome?.server_version === 'string', `a push answer returned a server_version for mutation ${match[1]}: ${JSON.stringify(outcome)}`);
    return String(outcome?.server_version);
  }
  match = /^the server_version of "([^"]+)"$/.exec(phrase);
  if (match) return String(notedOutcome(world, match[1] as string).server_version);
  throw new Error(`no version is known as "${phrase}"`);
}

Then(/^the server holds row "([^"]+)" of table "([^"]+)" with (\w+) "([^"]*)"(?: at (.+))?$/, async function (this: SyncWorld, row: string, table: string, column: string, value: string, at: string | undefined) {
  const served = await servedRow(this, table, row);
  this.assert.ok(served !== undefined, `the server serves no row ${row} of ${table}`);
  this.assert.ok(served !== undefined && Object.hasOwn(served.row, column), `the row ${row} of ${table} the server serves has a column ${column}: ${JSON.stringify(served?.row)}`);
  // The feature writes every value as text: a number as 4, a boolean as true.
  this.assert.equal(String(served?.row[column]), value, `${column} of ${table} ${row} on the server (${JSON.stringify(served?.row)})`);
  if (typeof at === 'string') this.assert.equal(served?.serverVersion, expectedVersion(this, at, table, row), `server_version of ${table} ${row} on the server (${at})`);
});
