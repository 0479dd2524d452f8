/**
 * Atomic write groups on the client under test: running a group through the
 * client's atomic write call, what the call answered, which records it
 * captured, and the sizes the features name ("a mutation of 65,537 normalized
 * octets"), computed from the protocol's normalized mutation form.
 */

import { ClientRpcError } from '../../../harness/adapters/client-process.ts';
import { normalizedMutationOctets } from '../../../harness/codec/index.ts';
import { fieldId, tableNamed } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';
import { queueOf } from './queue.ts';
import type { QueueRecord } from './state.ts';

export interface AtomicOutcome {
  ok: boolean;
  errorCode?: string;
  reason?: string;
  /** The SQL or client error the call raised, when a statement itself failed. */
  error?: string;
  /** Records the write added, as the client shows them right after it. */
  captured: QueueRecord[];
}

const outcomes = new WeakMap<SyncWorld, AtomicOutcome[]>();

export function atomicOutcomes(world: SyncWorld): AtomicOutcome[] {
  const list = outcomes.get(world) ?? [];
  outcomes.set(world, list);
  return list;
}

export function lastAtomic(world: SyncWorld): AtomicOutcome {
  const last = atomicOutcomes(world).at(-1);
  if (last === undefined) throw new Error('no atomic write ran in this scenario');
  return last;
}

/** Runs `statements` as one atomic write group of client `name`; a refused group is an outcome, not a step failure. */
export async function atomicWrite(world: SyncWorld, name: string, statements: string[]): Promise<AtomicOutcome> {
  const client = await world.process(name);
  const before = new Set((await queueOf(world, name)).map((r) => r.id));
  let outcome: AtomicOutcome;
  try {
    const answer = await client.call<{ ok: boolean; errorCode?: string; reason?: string }>('atomicWrite', { statements: statements.map((sql) => ({ sql })) });
    outcome = { ...answer, captured: [] };
  } catch (error) {
    if (!(error instanceof ClientRpcError)) throw error;
    outcome = { ok: false, error: error.message, captured: [] };
  }
  outcome.captured = (await queueOf(world, name)).filter((r) => !before.has(r.id));
  atomicOutcomes(world).push(outcome);
  return outcome;
}

/** Row keys `first` to `last` ("g-0001" to "g-1001"): the numeric suffix counts up, keeping its width. */
export function rowRange(first: string, last: string): string[] {
  const a = /^(.*?)(\d+)$/.exec(first);
  const b = /^(.*?)(\d+)$/.exec(last);
  if (!a || !b || a[1] !== b[1]) throw new Error(`rows "${first}" to "${last}" do not name a numbered range`);
  const width = (a[2] as string).length;
  const out: string[] = [];
  for (let n = Number(a[2]); n <= Number(b[2]); n++) out.push(`${a[1]}${String(n).padStart(width, '0')}`);
  return out;
}

export const insertSql = (table: string, id: string, owner: string, body: string) =>
  `INSERT INTO ${table} (id, owner_id, body) VALUES ('${id}', '${owner}', '${body.replaceAll("'", "''")}')`;

/**
 * The body length that makes the insert of row `id` (owner `owner`) a
 * normalized mutation of exactly `octets` octets. The insert's mutation, as
 * the protocol shapes it, carries every authored column (the key, lifecycle
 * and server-set columns are not authored; an authored column the statement
 * leaves out is null), a 36-character mutation ID and the fixed-width
 * microsecond client_version; the installed schema names the manifest.
 */
export async function bodyLengthFor(world: SyncWorld, name: string, table: string, id: string, owner: string, octets: number): Promise<number> {
  const spec = world.model.table(table);
  const manifest = await tableNamed(world, table);
  const { schema } = await (await world.process(name)).call<{ schema: { version: number; hash: string } | null }>('inspectScopes');
  if (schema === null) throw new Error(`client "${name}" has no installed schema to author a mutation under`);
  const columns: Record<string, unknown> = {};
  for (const c of spec.columns) {
    if (c.key || c.name === spec.deletedAtColumn || c.name === spec.updatedAtColumn) continue;
    columns[fieldId(manifest, c.name)] = c.name === 'owner_id' ? owner : c.name === 'body' ? '' : null;
  }
  const base = normalizedMutationOctets({
    mutation_id: '00000000-0000-4000-8000-000000000000',
    table: manifest.table_id,
    pk: { [manifest.primary_key_field_id]: id },
    authored_schema: schema,
    op: 'insert',
    client_version: '2000-01-01T00:00:00.000000Z',
    columns,
  });
  return octets - base;
}
