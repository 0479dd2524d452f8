/**
 * The two operation vocabularies: what pull changes say (upsert, delete),
 * what rebuild records leave out (any op), what a client pushes (insert,
 * update, delete), and that no push brings a deleted row back.
 */
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';
import type { Obj } from './recorded.ts';

export function lastPull(world: SyncWorld): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'pull');
  if (!reply) throw new Error('no pull response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the last pull was answered ${reply.status}: ${reply.text}`);
  return reply;
}

export const changesOf = (reply: Reply) => (reply.json.changes ?? []) as Obj[];
