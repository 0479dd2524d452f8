/**
 * A deletion lost in transit: the proxy drops the change for one row of one
 * scope from the next pull answer that carries it, so the client keeps a row
 * the server deleted and only the rebuild its checksum triggers can remove it.
 */
import { clientIdOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

/** Per scenario: the proxy log index at which the drop was armed, by client name. */
const armedAt = new WeakMap<SyncWorld, Map<string, { mark: number; scope: string }>>();

export async function armDroppedChange(world: SyncWorld, name: string, scope: string, key: string): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId,
    times: 1,
    fault: {
      kind: 'rewrite',
      describe: `the change for row ${key} of ${scope} dropped from the pull response`,
      // An answer without that change passes unchanged and the rule waits for one that carries it.
      transform: (json) => {
        const changes = json?.changes;
        if (!Array.isArray(changes)) return undefined;
        const kept = changes.filter((change: { scope?: unknown; pk?: Record<string, unknown> }) => !(change.scope === scope && Object.values(change.pk ?? {}).includes(key)));
        if (kept.length === changes.length) return undefined;
        json.changes = kept;
        return json;
      },
    },
  });
  const map = armedAt.get(world) ?? new Map<string, { mark: number; scope: string }>();
  map.set(name, { mark: proxy.exchanges.length, scope });
  armedAt.set(world, map);
}

/** The log index from which the dropped change's consequences (the rebuild) are looked for, and the change's scope. */
export function droppedChangeMark(world: SyncWorld, name: string): { mark: number; scope: string } {
  const mark = armedAt.get(world)?.get(name);
  if (mark === undefined) throw new Error(`no change to client "${name}" was dropped in this scenario`);
  return mark;
}

/** The one client whose pull lost a change in this scenario. */
export function droppedChangeClient(world: SyncWorld): string {
  const names = [...(armedAt.get(world)?.keys() ?? [])];
  if (names.length !== 1) throw new Error(`"that attempt" needs exactly one client whose pull lost a change, not ${names.length}`);
  return names[0] as string;
}
