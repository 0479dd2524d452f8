/**
 * A comparable picture of everything durable on the server: every row of the
 * application tables and of the server's own metadata, read through the
 * `inspect` capability. "No durable state changed" compares two pictures.
 * Unlogged tables are not durable and are left out. Tables that only a
 * background heartbeat writes are left out too, since they
 * move with time rather than with requests. A server that captures changes
 * asynchronously is first let catch up with everything committed, so a
 * picture never shows capture half way (before: work of the set-up still
 * being materialized; after: a change the action made not yet visible).
 */
import type { ServerAdapter } from '../../harness/adapters/server.ts';

const TIME_ONLY_TABLES = new Set(['synchro.wal_worker_state', 'synchro.wal_progress']);

export async function snapshotServerState(server: ServerAdapter, deadlineMs: number): Promise<Map<string, string>> {
  const inspect = server.inspect;
  if (!inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read its durable state`);
  await server.capture?.awaitMaterialized(deadlineMs);
  // An UNLOGGED table is not durable by definition (a crash empties it): the reference's record of entry point calls is one.
  const tables = await inspect.query<{ name: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND c.relpersistence = 'p' AND n.nspname IN ('public', 'synchro', 'synchro_projection') ORDER BY 1`,
  );
  const picture = new Map<string, string>();
  for (const { name } of tables) {
    if (TIME_ONLY_TABLES.has(name)) continue;
    const rows = await inspect.query<{ r: string }>(`SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY to_jsonb(t)::text), '[]')::text AS r FROM ${name} t`);
    picture.set(name, rows[0]?.r ?? '[]');
  }
  return picture;
}

/** Names of the tables whose rows differ between two pictures, with a short excerpt of each. */
export function stateDifferences(before: Map<string, string>, after: Map<string, string>): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  const changed: string[] = [];
  for (const name of [...names].sort()) {
    const a = before.get(name);
    const b = after.get(name);
    if (a !== b) changed.push(`${name}: before ${(a ?? '(absent)').slice(0, 300)} / after ${(b ?? '(absent)').slice(0, 300)}`);
  }
  return changed;
}
