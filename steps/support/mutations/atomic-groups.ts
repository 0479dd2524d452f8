/**
 * Atomic push requests the harness builds on purpose: the malformed atomic
 * envelopes of SYNC-MUT-014 ("atomic": false, "atomic": "true", a row
 * addressed twice, a mutation already completed in an earlier batch).
 */
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

/** A valid insert of `pk` into "notes" for client `name`'s user, as the feature's Background table has it. */
function noteInsert(world: SyncWorld, name: string, pk: string): Json {
  const client = world.wire(name);
  return client.mutation({ op: 'insert', table: 'notes', pk, columns: { owner_id: client.userId, body: 'eggs' } });
}

/**
 * A mutation client `name` sent in an earlier batch that the server answered
 * with `applied`, exactly as it was sent (same ID, same content), so reusing
 * it is an equal-fingerprint reuse rather than an idempotency conflict.
 */
function completedMutation(world: SyncWorld, name: string): Json {
  const clientId = world.wire(name).clientId;
  for (const reply of world.replies) {
    if (reply.endpoint !== 'push' || reply.status !== 200) continue;
    const request = JSON.parse(reply.requestText) as Obj;
    if (request.client_id !== clientId) continue;
    const applied = new Set(((reply.json?.accepted ?? []) as Obj[]).map((o) => o.mutation_id));
    const mutation = ((request.mutations ?? []) as Json[]).find((m) => applied.has(m.mutation_id));
    if (mutation !== undefined) return mutation;
  }
  throw new Error(`client "${name}" has no applied mutation from an earlier batch in this scenario`);
}

/** The push body a defect phrase of the feature describes. */
export function atomicEnvelopeDefect(world: SyncWorld, name: string, defect: string): Json {
  const client = world.wire(name);
  let match = /^"atomic": (false|"true") and one valid insert of row "([^"]+)"$/.exec(defect);
  if (match) return { ...client.pushBody([noteInsert(world, name, match[2] as string)]), atomic: JSON.parse(match[1] as string) };
  match = /^"atomic": true, an insert of row "([^"]+)" and an update of row "\1"$/.exec(defect);
  if (match) {
    const pk = match[1] as string;
    const update = client.mutation({ op: 'update', table: 'notes', pk, columns: { body: 'kefir' }, base_version: 'sv-any' });
    return { ...client.pushBody([noteInsert(world, name, pk), update]), atomic: true };
  }
  match = /^"atomic": true and a mutation_id already completed in an earlier batch of client "([^"]+)"$/.exec(defect);
  if (match) return { ...client.pushBody([completedMutation(world, match[1] as string), noteInsert(world, name, 'n-10')]), atomic: true };
  throw new Error(`no push envelope is known for the defect: ${defect}`);
}
