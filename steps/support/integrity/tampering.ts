/**
 * Tampered server answers, to see whether a client verifies row and scope
 * digests before it applies rows, reconciles outcomes or moves cursors. The
 * proxy edits the next matching 200 answer to the named client (the server's
 * own answer stays on record); each step arms one rewrite.
 */
import type { FaultRule } from '../../../harness/proxy/faults.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';
import { markArmed } from './context.ts';
import { type Manifest, manifestsSeen, type Obj, plainKey, tableById } from './oracle.ts';
import { applyEdit, recomputeLeniently, type Target } from './tamper.ts';
import { bodyOf, deliveredOf } from '../exchanges.ts';

/** The client ID the named client will present, known even before its process is opened. */
export function expectedClientId(world: SyncWorld, name: string): () => string {
  if (!world.isProcess(name)) {
    const id = world.wire(name).clientId;
    return () => id;
  }
  // The process client ID is fixed by the World when it opens the process.
  return () => `${world.scenarioName}-${name}`;
}

export async function arm(world: SyncWorld, name: string, endpoint: FaultRule['endpoint'], describe: string, transform: (json: Obj, exchange: Exchange) => unknown): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = expectedClientId(world, name);
  if (world.clientUsers.has(name)) await markArmed(world, name);
  proxy.inject({
    endpoint,
    when: (request) => (request as Obj | undefined)?.client_id === clientId(),
    fault: { kind: 'rewrite', describe, transform: (json: Obj, exchange: Exchange) => transform(json, exchange) },
  });
}

export function keyOf(message: Obj): string {
  return String(plainKey(message.pk));
}

/** Row versions and digests the client was given earlier (pull changes and rebuild records it received). */
function heldBefore(exchanges: readonly Exchange[], clientId: string): { versions: Map<string, string>; digests: Map<string, Obj> } {
  const versions = new Map<string, string>();
  const digests = new Map<string, Obj>();
  for (const e of exchanges) {
    if (!e.done || (e.endpoint !== 'pull' && e.endpoint !== 'rebuild')) continue;
    if ((bodyOf(e.requestBody) as Obj | undefined)?.client_id !== clientId) continue;
    const answer = deliveredOf(e);
    if (answer === undefined || answer.status !== 200) continue;
    const body = bodyOf(answer.body) as Obj | undefined;
    const items = ((e.endpoint === 'pull' ? body?.changes : body?.records) ?? []) as Obj[];
    for (const item of items) {
      if (typeof item.server_version === 'string') versions.set(keyOf(item), item.server_version);
      if (item.row_checksum !== undefined) digests.set(keyOf(item), item.row_checksum as Obj);
    }
  }
  return { versions, digests };
}

export function requestHash(exchange: Exchange): string {
  return String(((bodyOf(exchange.requestBody) as Obj | undefined)?.schema as Obj | undefined)?.hash);
}

export async function armRowEdit(world: SyncWorld, name: string, endpoint: 'pull' | 'rebuild', edit: string, key: string, mode: 'keep' | 'lenient' | 'none'): Promise<void> {
  const proxy = await world.proxy();
  const clientId = expectedClientId(world, name);
  await arm(world, name, endpoint, `${edit} on row ${key}`, (json, exchange) => {
    const list = ((endpoint === 'pull' ? json.changes : json.records) ?? []) as Obj[];
    const message = list.find((m) => keyOf(m) === key);
    if (message === undefined) return undefined;
    const hash = requestHash(exchange);
    const manifest = manifestsSeen(proxy.exchanges).get(hash) as Manifest;
    const held = heldBefore(proxy.exchanges.filter((e) => e !== exchange), clientId());
    const target: Target = { message, rowMember: 'row', table: tableById(manifest, String(message.table)), manifest, siblings: list, heldVersions: held.versions, verifiedDigests: held.digests };
    const before = JSON.stringify(message.row_checksum);
    applyEdit(target, edit);
    if (mode === 'lenient') recomputeLeniently(target, hash);
    if (mode === 'keep' && JSON.stringify(message.row_checksum) !== before && !/row_checksum/.test(edit)) throw new Error(`the edit "${edit}" changed the row checksum`);
    return json;
  });
}
