/**
 * A terminal checksum tampered in flight: the proxy flips one hex digit of a
 * member of the next pull answer to a client that carries that member, so
 * exactly the scope it names fails verification and needs repair.
 */
import { clientIdOf } from '../exchanges.ts';
import { member, setMember } from '../reply.ts';
import type { SyncWorld } from '../world.ts';
import { repairState } from './state.ts';

/** The same hex text with its first digit changed (0 becomes 1, anything else 0). */
export function flipFirstHexDigit(text: string): string {
  if (!/^[0-9a-f]+$/.test(text)) throw new Error(`"${text}" is not lowercase hex`);
  return (text[0] === '0' ? '1' : '0') + text.slice(1);
}

export async function armPullMemberFlip(world: SyncWorld, name: string, pointer: string): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  repairState(world).armedAt.set(name, proxy.exchanges.length);
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId,
    fault: {
      kind: 'rewrite',
      describe: `one hex digit of ${pointer} flipped`,
      // An answer without the member (a page with more to come) is passed on unchanged and the flip waits for the next.
      transform: (json) => {
        const value = member(json, pointer);
        if (typeof value !== 'string') return undefined;
        setMember(json, pointer, flipFirstHexDigit(value));
        return json;
      },
    },
  });
}
