/**
 * Keeping a client's push in flight: the proxy holds the server's answer
 * (the server has committed, the client waits), or the fault stage holds the
 * request before the server sees it. A sync started in the background runs
 * until the held message is let go, while the application keeps writing.
 * Nothing is held past the scenario's deadline.
 */
import { withDeadline } from '../../../harness/adapters/child.ts';
import { stageOf } from '../client-lifecycle/observe.ts';
import { exchangesOf } from '../exchanges.ts';
import { scopesState } from '../scopes/state.ts';
import type { SyncResult, SyncWorld } from '../world.ts';
import { type Hold, queueState } from './state.ts';

function openGate(deadlineMs: number): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
    // A hold never outlives the scenario: at the deadline the gate opens by itself.
    setTimeout(resolve, deadlineMs).unref();
  });
  return { opened, open };
}

/** The proxy keeps the server's answer to the next push of client `name` until released. */
export async function holdPushResponse(world: SyncWorld, name: string): Promise<Hold> {
  const client = await world.process(name);
  const proxy = await world.proxy();
  proxy.inject({ endpoint: 'push', when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId, fault: { kind: 'pause' } });
  const hold: Hold = {
    client: name,
    what: 'response',
    engaged: proxy.whenHeld(world.deadlineMs),
    release: () => {
      hold.released = true;
      proxy.release();
    },
    released: false,
  };
  // The engagement is awaited by the step that needs it; an unused hold must not reject unobserved.
  hold.engaged.catch(() => undefined);
  queueState(world).holds.push(hold);
  return hold;
}

/** The fault stage keeps the next push request of client `name` from the server until released. */
export async function holdPushRequest(world: SyncWorld, name: string): Promise<Hold> {
  const client = await world.process(name);
  const stage = await stageOf(world);
  const gate = openGate(world.deadlineMs);
  let engage: () => void = () => undefined;
  const engaged = new Promise<void>((resolve) => {
    engage = resolve;
  });
  const hold: Hold = {
    client: name,
    what: 'request',
    engaged: withDeadline(engaged, world.deadlineMs, () => `no push request of client "${name}" reached the proxy within ${world.deadlineMs} ms`),
    release: () => {
      hold.released = true;
      gate.open();
    },
    released: false,
  };
  hold.engaged.catch(() => undefined);
  stage.arm({
    endpoint: 'push',
    clientId: client.clientId,
    nth: 1,
    action: { kind: 'forward' },
    before: async () => {
      const held = (await exchangesOf(world, name, { endpoints: ['push'], unfinished: true })).filter((e) => !e.done).at(-1);
      hold.bytes = held?.requestBody;
      engage();
      await gate.opened;
    },
  });
  queueState(world).holds.push(hold);
  return hold;
}

/**
 * Starts a sync of client `name` without waiting for it to end; returns once
 * every message held for that client has reached the proxy, so the push is
 * in flight when the next step runs.
 */
export async function syncInBackground(world: SyncWorld, name: string): Promise<void> {
  await world.process(name);
  const window = await world.openSyncWindow(name, 'syncs');
  const running: Promise<SyncResult> = world.syncProcess(name).then(async (result) => {
    await world.closeSyncWindow(window);
    return result;
  });
  scopesState(world).started.set(name, running);
  const pending = queueState(world).holds.filter((h) => h.client === name && !h.released);
  await Promise.all(pending.map((h) => h.engaged));
}

/** Lets every held message of `what` go and waits for the background syncs to end. */
export async function releaseHeld(world: SyncWorld, what: Hold['what']): Promise<void> {
  const holds = queueState(world).holds.filter((h) => h.what === what && !h.released);
  if (holds.length === 0) throw new Error(`no ${what} is held by the proxy in this scenario`);
  for (const hold of holds) hold.release();
  const started = scopesState(world).started;
  await withDeadline(Promise.all(started.values()), world.deadlineMs, () => `a started sync did not end within ${world.deadlineMs} ms`);
  started.clear();
}

/** Waits for a death already under way at an armed crash point, then starts the client again on its data. */
export async function restartAfterCrash(world: SyncWorld, name: string): Promise<void> {
  const client = await world.process(name);
  const state = queueState(world);
  if (state.crashArmed.has(name)) {
    // The crash must really have happened at the armed point: a process that is still alive never reached it.
    if (client.process.alive) throw new Error(`client "${name}" never reached the armed crash point "${state.crashArmed.get(name)}": its process is still running`);
    await client.process.awaitExit();
    state.crashArmed.delete(name);
  }
  await client.process.restart();
  state.restartMarks.set(name, (await world.proxy()).exchanges.length);
}
