/**
 * The next push request of a client kept by the fault stage, never to reach
 * the server: the client has sent it and waits for an answer that will not
 * come. The stage records the exact bytes when the request arrives; letting
 * the hold go closes the connection (the server still never sees the
 * request). What a durable queue must do with such a request after the
 * client dies is send the same bytes again.
 */
import { withDeadline } from '../../../harness/adapters/child.ts';
import { stageOf } from '../client-lifecycle/observe.ts';
import { exchangesOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

export interface HeldPush {
  client: string;
  /** Resolves with the request bytes once the request has reached the stage. */
  arrived: Promise<Buffer>;
  drop(): void;
}

const held = new WeakMap<SyncWorld, HeldPush>();

export async function holdNextPush(world: SyncWorld, name: string): Promise<HeldPush> {
  const client = await world.process(name);
  const stage = await stageOf(world);
  let open: () => void = () => undefined;
  // A hold never outlives the scenario: at the deadline the gate opens by itself.
  const gate = new Promise<void>((resolve) => {
    open = resolve;
    setTimeout(resolve, world.deadlineMs).unref();
  });
  let arrive: (bytes: Buffer) => void = () => undefined;
  const arrival = new Promise<Buffer>((resolve) => {
    arrive = resolve;
  });
  stage.arm({
    endpoint: 'push',
    clientId: client.clientId,
    nth: 1,
    // Closing the connection keeps the request away from the server even after the gate opens.
    action: { kind: 'cut' },
    before: async () => {
      const exchange = (await exchangesOf(world, name, { endpoints: ['push'], unfinished: true })).filter((e) => !e.done).at(-1);
      if (exchange !== undefined) arrive(exchange.requestBody);
      await gate;
    },
  });
  const hold: HeldPush = {
    client: name,
    arrived: withDeadline(arrival, world.deadlineMs, () => `no push request of client "${name}" reached the proxy within ${world.deadlineMs} ms`),
    drop: open,
  };
  hold.arrived.catch(() => undefined);
  held.set(world, hold);
  return hold;
}

export function heldPush(world: SyncWorld): HeldPush {
  const hold = held.get(world);
  if (hold === undefined) throw new Error('the proxy holds no push request in this scenario');
  return hold;
}
