/**
 * A drain: the pages one harness client pulled, one after another, until a
 * page said `has_more: false` (or was not a 200). The changes of its pages
 * concatenated are what a client applies, in the order it applies them.
 */
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

const drains = new WeakMap<SyncWorld, Reply[]>();

export async function drain(world: SyncWorld, name: string, limit: number): Promise<Reply[]> {
  const pages = await world.wire(name).pullAll({ limit });
  drains.set(world, pages);
  return pages;
}

/** The pages of the scenario's last drain, each of which must have been answered 200. */
export function lastDrain(world: SyncWorld): Reply[] {
  const pages = drains.get(world);
  if (pages === undefined) throw new Error('no client pulled until "has_more" was false in this scenario');
  for (const page of pages) world.assert.equal(page.status, 200, `a page of the drain was answered ${page.status}: ${page.text.slice(0, 500)}`);
  world.assert.equal(pages.at(-1)?.json.has_more, false, 'the drain ended on a page with "has_more" false');
  return pages;
}

export function drainChanges(pages: readonly Reply[]): Obj[] {
  return pages.flatMap((page) => (page.json?.changes ?? []) as Obj[]);
}
