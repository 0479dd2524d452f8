/**
 * A rebuild the harness's own client fetches page by page, with other work
 * (source commits, capture) between its pages: the attempt it started, every
 * page the server answered so far, and the whole run once the final page came.
 * The run is also handed to `generationsState(world).lastRebuild`, which the
 * shared rebuild-record checks read.
 */
import { isJsonObject } from '../../../harness/codec/index.ts';
import { parseStrict } from '../integrity/oracle.ts';
import type { Reply } from '../reply.ts';
import { generationsState } from '../scope-generations/state.ts';
import type { RebuildRun } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

export interface PagedRebuild {
  client: string;
  scope: string;
  rebuildId: string;
  limit: number;
  pages: Reply[];
}

const attempts = new WeakMap<SyncWorld, Map<string, PagedRebuild>>();

const keyOf = (client: string, scope: string) => `${client}\u0000${scope}`;

/** Per scenario: the attempt each client started last, whatever its scope ("that rebuild"). */
const latest = new WeakMap<SyncWorld, Map<string, PagedRebuild>>();

function remember(world: SyncWorld, attempt: PagedRebuild): void {
  attemptsOf(world).set(keyOf(attempt.client, attempt.scope), attempt);
  const map = latest.get(world) ?? new Map<string, PagedRebuild>();
  map.set(attempt.client, attempt);
  latest.set(world, map);
}

/** The clients that started a paged rebuild in this scenario. */
export function clientsWithPagedRebuilds(world: SyncWorld): string[] {
  return [...(latest.get(world)?.keys() ?? [])];
}

/** The rebuild attempt client `client` started last in this scenario ("that rebuild"). */
export function latestPagedRebuild(world: SyncWorld, client: string): PagedRebuild {
  const attempt = latest.get(world)?.get(client);
  if (attempt === undefined) throw new Error(`client "${client}" has not requested page 1 of a rebuild in this scenario`);
  return attempt;
}

function attemptsOf(world: SyncWorld): Map<string, PagedRebuild> {
  let map = attempts.get(world);
  if (map === undefined) {
    map = new Map();
    attempts.set(world, map);
  }
  return map;
}

/** Sends the first page of a new attempt; a Given step requires the answer to be a 200 with more pages to come. */
export async function startPagedRebuild(world: SyncWorld, client: string, scope: string, limit: number, rebuildId: string): Promise<PagedRebuild> {
  const reply = await world.wire(client).rebuildPage(scope, rebuildId, null, limit);
  const attempt: PagedRebuild = { client, scope, rebuildId, limit, pages: [reply] };
  remember(world, attempt);
  return attempt;
}

/**
 * Takes a first page fetched some other way (for example one of two racing
 * first requests) as the start of the attempt, so its remaining pages can be
 * followed from it.
 */
export function adoptPagedRebuild(world: SyncWorld, client: string, scope: string, limit: number, rebuildId: string, first: Reply): PagedRebuild {
  const attempt: PagedRebuild = { client, scope, rebuildId, limit, pages: [first] };
  remember(world, attempt);
  return attempt;
}

/** Makes the pages fetched so far the scenario's last rebuild, for the checks that read it before the final page came. */
export function showPagesSoFar(world: SyncWorld, attempt: PagedRebuild): void {
  generationsState(world).lastRebuild = { scope: attempt.scope, run: runOf(attempt) };
}

export function pagedRebuild(world: SyncWorld, client: string, scope: string): PagedRebuild {
  const attempt = attemptsOf(world).get(keyOf(client, scope));
  if (attempt === undefined) throw new Error(`client "${client}" has not requested page 1 of a rebuild of "${scope}" in this scenario`);
  return attempt;
}

/**
 * Follows the continuation cursors of the attempt to its final page, or to
 * the first answer that is not a 200. On a final page the client installs
 * the final scope cursor, as a client that applied the rebuild would.
 */
export async function finishPagedRebuild(world: SyncWorld, client: string, scope: string): Promise<Reply> {
  const attempt = pagedRebuild(world, client, scope);
  const wire = world.wire(client);
  for (let page = 0; page < 10_000; page += 1) {
    const last = attempt.pages[attempt.pages.length - 1] as Reply;
    if (last.status !== 200 || last.json.has_more !== true) break;
    attempt.pages.push(await wire.rebuildPage(scope, attempt.rebuildId, last.json.cursor, attempt.limit));
  }
  const final = attempt.pages[attempt.pages.length - 1] as Reply;
  generationsState(world).lastRebuild = { scope, run: runOf(attempt) };
  if (final.status === 200 && wire.cursors.has(scope)) wire.cursors.set(scope, final.json.final_scope_cursor);
  return final;
}

function runOf(attempt: PagedRebuild): RebuildRun {
  const final = attempt.pages[attempt.pages.length - 1] as Reply;
  const ok = final.status === 200 && final.json.has_more === false;
  return {
    pages: attempt.pages,
    records: attempt.pages.flatMap((p) => (p.status === 200 ? (p.json.records ?? []) : [])),
    finalCursor: ok ? final.json.final_scope_cursor : undefined,
    checksum: ok ? final.json.checksum : undefined,
  };
}

/** The records of every page, parsed strictly so number text stays as the server wrote it. */
export function strictRecords(pages: readonly Reply[]): Obj[] {
  return pages.flatMap((page) => {
    const body = parseStrict(Buffer.from(page.text, 'utf8'));
    if (page.status !== 200 || !isJsonObject(body)) return [];
    const records = (body as unknown as Obj).records;
    return Array.isArray(records) ? (records as Obj[]) : [];
  });
}

/** The pages of the last rebuild of `scope` fetched to its end in this scenario (paged or whole). */
export function lastRebuildPages(world: SyncWorld, scope: string): Reply[] {
  const last = generationsState(world).lastRebuild;
  if (last === undefined || last.scope !== scope) throw new Error(`no rebuild of "${scope}" was fetched to its end in this scenario (the last one was of ${last?.scope ?? 'no scope'})`);
  return last.run.pages;
}

/** The final page of those, which must have been answered 200 with has_more false. */
export function finalPage(world: SyncWorld, scope: string, pages: readonly Reply[]): Reply {
  const final = pages[pages.length - 1] as Reply;
  world.assert.equal(final.status, 200, `the last rebuild page of ${scope} was answered ${final.status}: ${final.text.slice(0, 500)}`);
  world.assert.equal(final.json.has_more, false, `the last rebuild page of ${scope} is final`);
  return final;
}
