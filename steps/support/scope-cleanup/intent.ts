/**
 * SYNC-LOCAL-006 helpers: unresolved local intent seen through the client's
 * inspection calls while cleanup paths run (assignment loss, seed cleanup,
 * rebuild reset and pruning), pushes kept from the server by the proxy, a
 * write policy that rejects a client's updates, and a row moved to another
 * team on the source database.
 */

import { clientIdOf } from '../exchanges.ts';
import { pushesOf, serverOutcomes } from '../mutations/pushes.ts';
import { queueOf, written } from '../mutations/queue.ts';
import type { QueueRecord } from '../mutations/state.ts';
import { awaitCapture } from '../source-schema.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

/** Statuses of intent that has no outcome yet: captured, or sealed into a batch the server never answered. */
export const UNSENT = new Set(['pending', 'sealed']);

const blockedPushes = new WeakMap<SyncWorld, Set<string>>();

/**
 * Answers every push of client `name` with 503 in place of the server, which
 * never sees it: the client's intent stays without an outcome. The rule reads
 * the flag, so it can be installed once per client.
 */
export async function blockPushes(world: SyncWorld, name: string): Promise<void> {
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  const names = blockedPushes.get(world) ?? new Set<string>();
  blockedPushes.set(world, names);
  if (names.has(name)) return;
  names.add(name);
  proxy.inject({
    endpoint: 'push',
    times: Number.POSITIVE_INFINITY,
    when: (request) => names.has(name) && (request as Obj | undefined)?.client_id === clientId,
    fault: { kind: 'status', status: 503, retryAfter: '60' },
  });
}

/** The written records client `name` shows, each with whether the server ever gave it an outcome. */
export async function unresolvedView(world: SyncWorld, name: string): Promise<{ records: QueueRecord[]; answered: Set<string> }> {
  const records = written(await queueOf(world, name));
  const pushes = await pushesOf(world, name);
  const answered = new Set(records.map((r) => r.id).filter((id) => serverOutcomes(pushes, id).length > 0));
  return { records, answered };
}

/** One line per record for messages: operation, row, status and whether the server answered it. */
export function describeIntent(records: readonly QueueRecord[], answered: ReadonlySet<string>): string {
  return records.map((r) => `${r.op} ${r.recordId} ${r.status}${answered.has(r.id) ? ' (answered by the server)' : ''}`).join('; ') || '(no records)';
}

/**
 * An application write policy on the source table: an update arriving through
 * a client push (the server marks the push transaction with its mutation ID)
 * is swallowed, which the server reports as `policy_rejected`. Only one
 * user's clients push in the scenarios that use it; source commits by the
 * harness stay allowed.
 */
export async function rejectPushedUpdates(world: SyncWorld, table: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to install a write policy`);
  const fn = `public."${table}_local006_reject_pushed_updates"`;
  await server.provision.exec(
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF coalesce(current_setting('synchro.mutation_id', true), '') <> '' THEN RETURN NULL; END IF; RETURN NEW; END $$;
     CREATE TRIGGER "${table}_local006_reject_pushed_updates" BEFORE UPDATE ON public."${table}" FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
  );
}

/** Moves a row of a team-placed table to another team on the source database and waits for capture. */
export async function moveToTeam(world: SyncWorld, table: string, row: string, team: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to move a row`);
  const key = world.model.keyColumn(table).name;
  await server.sourceSql.query(`UPDATE public."${table}" SET team_id = $1 WHERE "${key}"::text = $2`, [team, row]);
  await awaitCapture(world);
}
