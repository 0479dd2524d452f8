/**
 * Keeping a client's sync in flight: the proxy holds the server's answer to
 * its next push (the server has committed, the client waits) or pull (the
 * push answer has been applied, the client waits for the pull), or the fault
 * stage holds the push request before the server sees it. A sync started in
 * the background runs until the held message is let go, while the
 * application keeps writing. Nothing is held past the scenario's deadline.
 */
import { withDeadline } from '../../../harness/adapters/child.ts';
import { stageOf } from '../client-lifecycle/observe.ts';
import { exchangesOf } from '../exchanges.ts';
import { scopesState } from '../scopes/state.ts';
import type { SyncResult, SyncWindow, SyncWorld } from '../world.ts';
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

/** The proxy keeps the server's answer to the next `endpoint` request of client `name` until released. */
export async function holdResponse(world: SyncWorld, name: string, endpoint: Hold['endpoint']): Promise<Hold> {
  const client = await world.process(name);
  const proxy = await world.proxy();
  proxy.inject({ endpoint, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId, fault: { kind: 'pause' } });
  const hold: Hold = {
    client: name,
    what: 'response',
    endpoint,
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
  return await holdRequest(world, name, 'push');
}

/** The fault stage keeps the next `endpoint` request of client `name` from the server until released. */
export async function holdRequest(world: SyncWorld, name: string, endpoint: 'push' | 'rebuild'): Promise<Hold> {
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
    endpoint,
    engaged: withDeadline(engaged, world.deadlineMs, () => `no ${endpoint} request of client "${name}" reached the proxy within ${world.deadlineMs} ms`),
    release: () => {
      hold.released = true;
      gate.open();
    },
    released: false,
  };
  hold.engaged.catch(() => undefined);
  stage.arm({
    endpoint,
    clientId: client.clientId,
    nth: 1,
    action: { kind: 'forward' },
    before: async () => {
      const held = (await exchangesOf(world, name, { endpoints: [endpoint], unfinished: true })).filter((e) => !e.done).at(-1);
      hold.bytes = held?.requestBody;
      engage();
      await gate.opened;
    },
  });
  queueState(world).holds.push(hold);
  return hold;
}

/** Starts a sync of client `name` in a sync window of its own, without waiting for it to end. */
export async function startSync(world: SyncWorld, name: string): Promise<{ window: SyncWindow; running: Promise<SyncResult> }> {
  await world.process(name);
  const window = await world.openSyncWindow(name, 'syncs');
  const running = world.syncProcess(name).then(async (result) => {
    await world.closeSyncWindow(window);
    return result;
  });
  return { window, running };
}

/**
 * Starts a sync of client `name` without waiting for it to end; returns once
 * every message held for that client has reached the proxy: with a push
 * answer held the batch is sealed and sent, so what the client writes next is
 * later intent; with a pull answer held the push answer has been applied.
 */
export async function syncInBackground(world: SyncWorld, name: string): Promise<void> {
  const { running } = await startSync(world, name);
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
