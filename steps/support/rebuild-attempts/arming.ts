/**
 * What the proxy is armed to do to a client's rebuild: edit one member of
 * the next final rebuild page of a scope, or kill the client under test at
 * the moment its second attempt of a scope is under way.
 */

import { clientIdOf } from '../exchanges.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import { setMember } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

/** Per scenario: the scope whose final rebuild page was tampered with, by client name. */
const tampered = new WeakMap<SyncWorld, Map<string, string>>();

/**
 * Rewrites `pointer` of the next final page (has_more false) of `scope`
 * the client is given; `edit` returns the new value, undefined to remove the
 * member. Intermediate pages pass unchanged and the rule waits for the final one.
 */
export async function armFinalRebuildEdit(world: SyncWorld, name: string, scope: string, describe: string, edit: (json: unknown) => unknown, pointer: string): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  proxy.inject({
    endpoint: 'rebuild',
    when: (request) => (request as { client_id?: unknown; scope?: unknown } | undefined)?.client_id === clientId && (request as { scope?: unknown }).scope === scope,
    times: 1,
    fault: {
      kind: 'rewrite',
      describe: `${describe} in the final rebuild page of ${scope}`,
      transform: (json) => {
        if (json?.scope !== scope || json?.has_more !== false) return undefined;
        setMember(json, pointer, edit(json));
        return json;
      },
    },
  });
  const map = tampered.get(world) ?? new Map<string, string>();
  map.set(name, scope);
  tampered.set(world, map);
}

export function tamperedScope(world: SyncWorld, name: string): string {
  const scope = tampered.get(world)?.get(name);
  if (scope === undefined) throw new Error(`no final rebuild page to client "${name}" was tampered with in this scenario`);
  return scope;
}

/** The one client whose final rebuild page was tampered with in this scenario. */
export function tamperedClient(world: SyncWorld): string {
  const names = [...(tampered.get(world)?.keys() ?? [])];
  if (names.length !== 1) throw new Error(`"the first pull request presenting a cursor" needs exactly one client whose final rebuild page was tampered with, not ${names.length}`);
  return names[0] as string;
}

/**
 * A real SIGKILL of the client under test right after it committed its second
 * attempt of `scope` and before it received anything for it. The adapter
 * protocol arms a crash point for its next arrival only, and the first attempt
 * passes the same point, so the harness kills the process itself when the
 * second attempt's first request (cursor null) is answered: the client is then
 * waiting on the network with that attempt committed and nothing after it.
 * The adapter must list the point, so the state it names is one it has.
 */
export async function armKillAtSecondAttempt(world: SyncWorld, name: string, point: string, scope: string): Promise<'skipped' | undefined> {
  if (point !== 'after_rebuild_attempt_commit') throw new Error(`a kill on the second rebuild attempt is made at "after_rebuild_attempt_commit", not "${point}"`);
  const client = await world.process(name);
  const { points } = await client.call<{ points: string[] }>('crashPoints');
  if (!points.includes(point)) return undeterminedWithout(world, `client "${name}" offers no crash point "${point}" (it lists ${points.join(', ') || 'none'})`);
  const proxy = await world.proxy();
  const clientId = client.clientId;
  proxy.inject({
    endpoint: 'rebuild',
    nth: 2,
    when: (request) => {
      const body = request as { client_id?: unknown; scope?: unknown; cursor?: unknown } | undefined;
      return body?.client_id === clientId && body.scope === scope && body.cursor === null;
    },
    fault: {
      kind: 'rewrite',
      describe: `client killed while the first page of its second rebuild attempt of ${scope} is on its way`,
      transform: (json) => {
        // The SIGKILL is sent before this answer is delivered, so the client never reads it.
        void client.process.kill();
        return json;
      },
    },
  });
  return undefined;
}
