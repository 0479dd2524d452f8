/**
 * What SYNC-LOCAL-003's steps compare: the cursors and checksums a client
 * under test reported at a labelled moment, the rows it holds, and the pull
 * page it was given, read from what the proxy delivered.
 */
import { bodyOf, clientIdOf, deliveredOf, exchangesIn } from '../exchanges.ts';
import { currentManifest, scopeStates } from '../integrity/context.ts';
import { flipFirstHexDigit } from '../scope-repair/tamper.ts';
import type { SyncWorld } from '../world.ts';

export interface ScopePicture {
  cursor: string | null;
  checksum: string | null;
}

const recorded = new WeakMap<SyncWorld, Map<string, Map<string, ScopePicture>>>();

export async function recordScopes(world: SyncWorld, name: string, label: string): Promise<void> {
  const pictures = new Map((await scopeStates(world, name)).map((s) => [s.scopeId, { cursor: s.cursor, checksum: s.checksum }]));
  const byLabel = recorded.get(world) ?? new Map<string, Map<string, ScopePicture>>();
  byLabel.set(label, pictures);
  recorded.set(world, byLabel);
}

export function recordedScopes(world: SyncWorld, label: string): Map<string, ScopePicture> {
  const pictures = recorded.get(world)?.get(label);
  if (pictures === undefined) throw new Error(`no cursors and checksums were recorded as "${label}" in this scenario`);
  return pictures;
}

/** The scopes' cursors and checksums the client reports now, for the scopes of a recording. */
export async function scopesNow(world: SyncWorld, name: string, scopes: Iterable<string>): Promise<Record<string, ScopePicture | undefined>> {
  const states = await scopeStates(world, name);
  return Object.fromEntries(
    [...scopes].map((scope) => {
      const s = states.find((state) => state.scopeId === scope);
      return [scope, s === undefined ? undefined : { cursor: s.cursor, checksum: s.checksum }];
    }),
  );
}

/** How many local rows of any registered table have this key, by table. */
export async function heldCopies(world: SyncWorld, name: string, key: string): Promise<number> {
  const manifest = await currentManifest(world);
  const client = await world.process(name);
  let copies = 0;
  for (const table of manifest.tables) {
    const keyField = table.fields.find((f) => f.field_id === table.primary_key_field_id);
    if (keyField === undefined) continue;
    const { rows } = await client.call<{ rows: unknown[] }>('query', { sql: `SELECT 1 FROM "${table.name}" WHERE CAST("${keyField.name}" AS TEXT) = ?`, params: [key] });
    copies += rows.length;
  }
  return copies;
}

/** The last pull page client `name` was given with status 200 (after any proxy rewrite). */
// biome-ignore lint/suspicious/noExplicitAny: a pull page is read member by member
export async function lastPullPage(world: SyncWorld, name: string): Promise<any> {
  const proxy = await world.proxy();
  const pages = exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), endpoints: ['pull'] })
    .map((e) => deliveredOf(e))
    .filter((answer) => answer?.status === 200)
    .map((answer) => bodyOf(answer?.body));
  const last = pages[pages.length - 1];
  if (last === undefined) throw new Error(`client "${name}" was given no pull page`);
  return last;
}

/** The cursors client `name` presented in each pull request sent from log index `from` on. */
export async function presentedFrom(world: SyncWorld, name: string, from: number): Promise<Record<string, unknown>[]> {
  const proxy = await world.proxy();
  return exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), endpoints: ['pull'], from, unfinished: true }).map((e) => {
    const scopes = (bodyOf(e.requestBody)?.scopes ?? {}) as Record<string, { cursor?: unknown }>;
    return Object.fromEntries(Object.entries(scopes).map(([scope, entry]) => [scope, entry?.cursor]));
  });
}

/** Arms a rewrite of the next pull page to the client that holds what `edit` looks for; other pages pass and the rule waits. */
export async function armPullEdit(world: SyncWorld, name: string, describe: string, edit: (json: Record<string, unknown>) => boolean): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId,
    fault: { kind: 'rewrite', describe, transform: (json) => (edit(json) ? json : undefined) },
  });
}

/** Flips one hex digit of a checksum object's digest; false when there is none. */
export function flipDigest(checksum: unknown): boolean {
  const object = checksum as { digest?: unknown } | undefined;
  if (typeof object?.digest !== 'string') return false;
  object.digest = flipFirstHexDigit(object.digest);
  return true;
}
