/**
 * Pull responses a scenario keeps under a label to compare later, and the
 * exact wire text of one of their members (number tokens as sent), so two
 * answers can be compared for byte equality of that member.
 */
import { parseStrict, wireText } from '../integrity/oracle.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

const recorded = new WeakMap<SyncWorld, Map<string, Reply>>();

/** Keeps the scenario's last answer, which must be a 200 pull, under `label`. */
export function recordLastPull(world: SyncWorld, label: string): Reply {
  const reply = world.lastReply();
  if (reply.endpoint !== 'pull' || reply.status !== 200) throw new Error(`the last answer is a ${reply.status} ${reply.endpoint} response, not a pull page to record as "${label}": ${reply.text.slice(0, 300)}`);
  const labels = recorded.get(world) ?? new Map<string, Reply>();
  if (labels.has(label)) throw new Error(`a response was already recorded as "${label}" in this scenario`);
  labels.set(label, reply);
  recorded.set(world, labels);
  return reply;
}

export function recordedPull(world: SyncWorld, label: string): Reply {
  const reply = recorded.get(world)?.get(label);
  if (reply === undefined) throw new Error(`no response was recorded as "${label}" earlier in this scenario`);
  return reply;
}

/** The member of a response body as the exact JSON text the server wrote; undefined when absent. */
export function memberText(reply: Reply, name: string): string | undefined {
  const body = parseStrict(Buffer.from(reply.text, 'utf8')) as unknown as Record<string, unknown> | undefined;
  const value = body?.[name];
  return value === undefined ? undefined : wireText(value);
}
