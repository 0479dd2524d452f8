/**
 * SYNC-PULL-001 Per Scope Pull Eligibility: the terminal checksums of a
 * drained pull against the rows the harness client was actually given.
 */
import { Then } from '@cucumber/cucumber';
import { heldRows } from '../support/pull-eligibility/held-rows.ts';
import { codecScopeDigest, presentedSchemaHash } from '../support/rebuild-runs/digests.ts';
import type { SyncWorld } from '../support/world.ts';

Then(
  'each value of {string} in the last response equals the scope digest the harness computes from the rows {string} now holds for that scope',
  async function (this: SyncWorld, pointer: string, name: string) {
    if (pointer !== '/checksums') throw new Error(`terminal scope digests are in "/checksums", not "${pointer}"`);
    const reply = this.lastReply();
    this.assert.equal(`${reply.endpoint} ${reply.status} has_more=${reply.json?.has_more}`, 'pull 200 has_more=false', `the last response: ${reply.text.slice(0, 500)}`);
    const checksums = (reply.json?.checksums ?? {}) as Record<string, unknown>;
    // Every scope the client holds is checked, so a map that leaves a scope out cannot pass by omission.
    const client = this.wire(name);
    this.assert.equal(Object.keys(checksums).sort(), [...client.cursors.keys()].sort(), 'the scopes of "/checksums" in the last response');
    const held = await heldRows(this, name);
    const schemaHash = presentedSchemaHash(reply.requestText);
    for (const [scope, checksum] of Object.entries(checksums)) {
      const rows = [...(held.get(scope)?.values() ?? [])];
      const digest = await codecScopeDigest(this, scope, schemaHash, rows);
      this.assert.equal(checksum, { algorithm: 'sha256', version: 1, encoding: 'hex', digest }, `"/checksums/${scope}" over the ${rows.length} rows client "${name}" holds for it`);
    }
  },
);
