/**
 * SYNC-PULL-007 Client Presented Cursor Acknowledgement: a response kept
 * with the cursor it issued and then thrown away as if lost, and pull
 * requests the server must refuse after checking part of them. The checkpoint
 * checks and the compaction are shared (steps/common/checkpoints.steps.ts).
 */
import { When } from '@cucumber/cucumber';
import { recordCursor, recordedCursor } from '../support/cursor-acknowledgement/checkpoints.ts';
import { alterToken } from '../support/opaque-tokens/alteration.ts';
import { recordedPull, recordLastPull } from '../support/pull-eligibility/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const pointerOf = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;

When('the harness records that response as {string} and the cursor it issued for scope {string} as {string}', function (this: SyncWorld, label: string, scope: string, cursorLabel: string) {
  const reply = recordLastPull(this, label);
  const cursor = reply.json?.scope_cursors?.[scope];
  if (typeof cursor !== 'string') throw new Error(`response "${label}" issued no cursor for ${scope} to record: ${reply.text.slice(0, 500)}`);
  recordCursor(this, cursorLabel, scope, cursor);
});

// A lost response is one the client never applied: it goes on with the cursors and scope set version it presented in that request.
When('the harness discards response {string} without using any other part of it', function (this: SyncWorld, label: string) {
  const reply = recordedPull(this, label);
  const request = JSON.parse(reply.requestText) as { client_id: string; scope_set_version: number; scopes: Record<string, { cursor: string | null }> };
  const name = [...this.clientUsers.keys()].find((n) => this.hasWire(n) && this.wire(n).clientId === request.client_id);
  const client = name === undefined ? undefined : this.wire(name);
  if (client === undefined) throw new Error(`no harness client sent the request of response "${label}"`);
  client.cursors.clear();
  for (const [scope, { cursor }] of Object.entries(request.scopes)) client.cursors.set(scope, cursor);
  client.scopeSetVersion = request.scope_set_version;
});

/** The request change a defect phrase of the feature names, as a patch of the pull body. */
function defectPatch(world: SyncWorld, name: string, defect: string): { patch: Record<string, unknown>; invalid: boolean } {
  const client = world.wire(name);
  let m = /^an added scope "([^"]+)" with cursor null$/.exec(defect);
  if (m) return { patch: { [pointerOf(m[1] as string)]: { cursor: null } }, invalid: false };
  m = /^its cursor for scope "([^"]+)" with its middle character replaced$/.exec(defect);
  if (m) {
    const held = client.cursors.get(m[1] as string);
    if (typeof held !== 'string') throw new Error(`client "${name}" holds no cursor for ${m[1]} to alter`);
    return { patch: { [pointerOf(m[1] as string)]: { cursor: alterToken(held, 'with the character at its middle position replaced').value } }, invalid: false };
  }
  m = /^member "limit" set to (\d+)$/.exec(defect);
  if (m) return { patch: { '/limit': Number(m[1]) }, invalid: true };
  if (defect === 'member "scope_set_version" set to its current value plus 1') return { patch: { '/scope_set_version': client.scopeSetVersion + 1 }, invalid: false };
  throw new Error(`unknown request defect: ${defect}`);
}

When(
  /^the harness client "([^"]+)" sends a pull request presenting cursor "([^"]+)" for scope "([^"]+)" with (.+)$/,
  async function (this: SyncWorld, name: string, label: string, scope: string, defect: string) {
    const cursor = recordedCursor(this, label, scope);
    const { patch, invalid } = defectPatch(this, name, defect);
    await this.wire(name).pull({ [pointerOf(scope)]: { cursor }, ...patch }, { invalid });
  },
);
