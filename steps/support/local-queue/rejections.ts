/**
 * SYNC-LOCAL-004 helpers: what a client under test shows about one rejected
 * mutation (its rejection record and the mutation record itself), remembered
 * when a step first sees it so later steps can compare after restarts, syncs,
 * a schema reset and a rebuild; and a client taken off the network and back.
 */
import { canonicalJson } from '../../../harness/codec/index.ts';
import { bodyOf, clientIdOf } from '../exchanges.ts';
import type { QueueRecord } from '../mutations/state.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export interface Rejection {
  mutationId: string;
  status: string;
  code: string;
  [member: string]: unknown;
}

/** One rejected mutation as the client showed it: its rejection record and its mutation record. */
export interface RejectionPicture {
  client: string;
  rejection: Rejection;
  mutation: QueueRecord | undefined;
}

const remembered = new WeakMap<SyncWorld, RejectionPicture>();

export async function rejectionsOf(world: SyncWorld, name: string): Promise<Rejection[]> {
  return (await (await world.process(name)).call<{ rejections: Rejection[] }>('inspectRejections')).rejections;
}

/** The rejection and the mutation record client `name` shows for `mutationId` now. */
export async function pictureOf(world: SyncWorld, name: string, mutationId: string): Promise<{ rejection: Rejection | undefined; mutation: QueueRecord | undefined }> {
  const client = await world.process(name);
  const rejection = (await rejectionsOf(world, name)).find((r) => r.mutationId === mutationId);
  const { mutations } = await client.call<{ mutations: QueueRecord[] }>('inspectMutations');
  return { rejection, mutation: mutations.find((m) => m.id === mutationId) };
}

export function remember(world: SyncWorld, picture: RejectionPicture): void {
  remembered.set(world, picture);
}

export function rememberedRejection(world: SyncWorld): RejectionPicture {
  const picture = remembered.get(world);
  if (picture === undefined) throw new Error('no step of this scenario has seen the rejection yet');
  return picture;
}

/** The members the features name, read from a picture: the rejection's own, and the two records as canonical JSON. */
export function member(picture: { rejection: Rejection | undefined; mutation: QueueRecord | undefined }, name: string): unknown {
  switch (name) {
    case 'mutationID':
      return picture.rejection?.mutationId;
    case 'mutationJSON':
      return picture.mutation === undefined ? '(no mutation record)' : canonicalJson(picture.mutation);
    case 'rejectionJSON':
      return picture.rejection === undefined ? '(no rejection record)' : canonicalJson(picture.rejection);
    default:
      return picture.rejection?.[name];
  }
}

const offline = new WeakMap<SyncWorld, Set<string>>();

/**
 * Takes client `name` off the network: the proxy answers every request that
 * carries its client id with 503 until `goOnline`. The rule stays installed
 * and consults the flag, so going online removes nothing else the proxy does.
 */
export async function goOffline(world: SyncWorld, name: string): Promise<void> {
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  const names = offline.get(world) ?? new Set<string>();
  if (!offline.has(world)) {
    offline.set(world, names);
    proxy.inject({ times: Number.POSITIVE_INFINITY, when: (request) => names.has(name) && (request as Obj | undefined)?.client_id === clientId, fault: { kind: 'status', status: 503, retryAfter: '60' } });
  }
  names.add(name);
}

export function goOnline(world: SyncWorld, name: string): void {
  const names = offline.get(world);
  if (names?.has(name) !== true) throw new Error(`client "${name}" was not taken offline in this scenario`);
  names.delete(name);
}

/** The field id the first manifest that had `column` gave it (a removed field keeps its id in the older manifests). */
export async function fieldIdEverPublished(world: SyncWorld, table: string, column: string): Promise<string> {
  for (const e of (await world.proxy()).exchanges) {
    if (e.endpoint !== 'connect' || !e.done) continue;
    const answer = e.upstream.find((a) => a.status === 200);
    const body = answer === undefined ? undefined : (bodyOf(answer.body) as Obj | undefined);
    const tables = ((body?.schema_definition as Obj | undefined)?.tables ?? []) as { name: string; fields: { field_id: string; name: string }[] }[];
    const field = tables.find((t) => t.name === table)?.fields.find((f) => f.name === column);
    if (field !== undefined) return field.field_id;
  }
  throw new Error(`no manifest the server published in this scenario has field "${column}" in table "${table}"`);
}
