/**
 * Rebuilds a scenario runs side by side under labels ("ra", "rb"): each is
 * the paged attempt of one client and scope (rebuild-runs/paged.ts), fetched
 * a page at a time so two attempts can interleave.
 */
import type { Reply } from '../reply.ts';
import { finishPagedRebuild, type PagedRebuild, pagedRebuild, startPagedRebuild } from '../rebuild-runs/paged.ts';
import type { SyncWorld } from '../world.ts';

const labelled = new WeakMap<SyncWorld, Map<string, { client: string; scope: string }>>();

export async function startLabelled(world: SyncWorld, label: string, client: string, scope: string, limit: number, rebuildId: string): Promise<void> {
  const labels = labelled.get(world) ?? new Map<string, { client: string; scope: string }>();
  if (labels.has(label)) throw new Error(`a rebuild was already started as "${label}" in this scenario`);
  if ([...labels.values()].some((r) => r.client === client && r.scope === scope)) throw new Error(`client "${client}" already runs a labelled rebuild of ${scope}`);
  labels.set(label, { client, scope });
  labelled.set(world, labels);
  await startPagedRebuild(world, client, scope, limit, rebuildId);
}

export function attemptOf(world: SyncWorld, label: string): PagedRebuild {
  const found = labelled.get(world)?.get(label);
  if (found === undefined) throw new Error(`no rebuild was started as "${label}" earlier in this scenario`);
  return pagedRebuild(world, found.client, found.scope);
}

/** Fetches the page after the last one the attempt received; that page must have promised more. */
export async function nextPage(world: SyncWorld, label: string): Promise<Reply> {
  const attempt = attemptOf(world, label);
  const last = attempt.pages[attempt.pages.length - 1] as Reply;
  if (last.status !== 200 || last.json.has_more !== true) throw new Error(`rebuild "${label}" has no next page: its last page was ${last.status} ${last.text.slice(0, 300)}`);
  const reply = await world.wire(attempt.client).rebuildPage(attempt.scope, attempt.rebuildId, last.json.cursor, attempt.limit);
  attempt.pages.push(reply);
  return reply;
}

export async function finishLabelled(world: SyncWorld, label: string): Promise<Reply> {
  const attempt = attemptOf(world, label);
  return await finishPagedRebuild(world, attempt.client, attempt.scope);
}
