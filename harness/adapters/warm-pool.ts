/**
 * Things that are slow to start (a server process on a fresh database, a
 * client adapter process) prepared one step ahead of need.
 *
 * A scenario takes a ready item, and the pool starts preparing the next one
 * right away, so the start-up overlaps the scenario that is running instead
 * of adding to the next one. Every item is used by exactly one taker and is
 * as fresh as one started on demand: the pool only moves the start earlier.
 *
 * Pools are kept per key (what the item is started with, such as the fault
 * switches of the run), and only keys that were asked for once are prepared
 * ahead. `drainWarmPools` disposes of every item still waiting and of every
 * cleanup handed to `afterScenario`, so nothing outlives the run.
 */

interface Slot<T> {
  item: Promise<T>;
}

/**
 * Whether a take prepares the next item. A run whose next scenario will
 * mostly not run (a sensitivity fault run stops at its first detection) turns
 * it off, so nothing is started only to be disposed of when the run ends.
 */
let preparingAhead = true;

export function prepareAhead(on: boolean): void {
  preparingAhead = on;
}

class WarmPool<T> {
  readonly #create: () => Promise<T>;
  readonly #dispose: (item: T) => Promise<void>;
  #ready: Slot<T> | undefined;
  #closed = false;

  constructor(create: () => Promise<T>, dispose: (item: T) => Promise<void>) {
    this.#create = create;
    this.#dispose = dispose;
  }

  /**
   * A prepared item when one is waiting (or still starting) and still
   * `usable`, else a new one; then the next is prepared.
   */
  async take(usable: (item: T) => boolean = () => true): Promise<T> {
    if (this.#closed) throw new Error('the warm pool was drained: no more items are handed out');
    const slot = this.#ready;
    this.#ready = undefined;
    if (preparingAhead) this.#prepare();
    if (slot !== undefined) {
      let item: T | undefined;
      try {
        item = await slot.item;
      } catch {
        // A start that failed in the background is tried once more in the
        // foreground, so its error (if it fails again) belongs to this taker.
      }
      if (item !== undefined && usable(item)) return item;
      // One that died while waiting (its process was lost meanwhile) is disposed of, never handed out.
      if (item !== undefined) await this.#dispose(item).catch(() => undefined);
    }
    return this.#create();
  }

  #prepare(): void {
    const item = this.#create();
    // Failures surface to the taker; an unclaimed failure must not crash the run.
    item.catch(() => undefined);
    this.#ready = { item };
  }

  async drain(): Promise<void> {
    this.#closed = true;
    const slot = this.#ready;
    this.#ready = undefined;
    if (slot === undefined) return;
    const item = await slot.item.catch(() => undefined);
    if (item !== undefined) await this.#dispose(item);
  }
}

/** A started process the pool can hand out while it is still running, and kill when it is not needed. */
export interface WarmProcess {
  readonly alive: boolean;
  kill(): Promise<unknown>;
}

const pools = new Map<string, WarmPool<unknown>>();
const waitingProcesses = new Map<string, WarmProcess>();
const cleanups = new Set<Promise<void>>();
const cleanupErrors: string[] = [];

/**
 * Takes an item from the pool for `key`, creating the pool on first use.
 * `create` must start a fresh, fully isolated item each time it is called;
 * a prepared item that is no longer `usable` is disposed of and replaced.
 */
export function takeWarm<T>(key: string, create: () => Promise<T>, dispose: (item: T) => Promise<void>, usable?: (item: T) => boolean): Promise<T> {
  let pool = pools.get(key) as WarmPool<T> | undefined;
  if (pool === undefined) {
    pool = new WarmPool(create, dispose);
    pools.set(key, pool as WarmPool<unknown>);
  }
  return pool.take(usable);
}

/**
 * A process for `key`: the one spawned ahead when it is still running, else
 * a new one; either way the next one for `key` is spawned once the caller is
 * served (unless preparing ahead is off). Spawning is synchronous, so unlike
 * `takeWarm` this never waits.
 */
export function takeWarmProcess<P extends WarmProcess>(key: string, spawn: () => P): P {
  const waiting = waitingProcesses.get(key) as P | undefined;
  waitingProcesses.delete(key);
  const process = waiting?.alive ? waiting : spawn();
  if (waiting !== undefined && waiting !== process) void waiting.kill();
  if (preparingAhead) {
    setImmediate(() => {
      if (!waitingProcesses.has(key) && !drained) waitingProcesses.set(key, spawn());
    });
  }
  return process;
}

let drained = false;
const drainHooks: (() => Promise<void>)[] = [];

/** Work `drainWarmPools` does last, once every item and cleanup is done (closing the processes items lived in). */
export function onDrain(hook: () => Promise<void>): void {
  drainHooks.push(hook);
}

/**
 * Runs a cleanup (stopping a process, dropping a database) without making the
 * scenario wait for it; `drainWarmPools` waits for all of them and reports
 * the ones that failed.
 */
export function afterScenario(what: string, cleanup: () => Promise<void>): void {
  const running = cleanup().catch((error: unknown) => {
    cleanupErrors.push(`${what}: ${(error as Error).message}`);
  });
  cleanups.add(running);
  void running.finally(() => cleanups.delete(running));
}

/** Disposes of every prepared item and waits for every cleanup; returns what failed. */
export async function drainWarmPools(): Promise<string[]> {
  drained = true;
  const draining: Promise<unknown>[] = [...pools.values()].map((pool) => pool.drain());
  pools.clear();
  for (const process of waitingProcesses.values()) draining.push(process.kill());
  waitingProcesses.clear();
  await Promise.all(draining);
  while (cleanups.size > 0) await Promise.all([...cleanups]);
  for (const hook of drainHooks) {
    await hook().catch((error: unknown) => {
      cleanupErrors.push(`closing after the scenarios: ${(error as Error).message}`);
    });
  }
  drained = false;
  return cleanupErrors.splice(0);
}
