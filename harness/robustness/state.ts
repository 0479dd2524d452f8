/**
 * Reading the server's durable state so the profile can tell that refused
 * requests changed nothing, and whether the server is still ready. With the
 * `inspect` capability the picture is every permanent user table of the database, row
 * by row or by digest (after capture caught up, so background
 * materialization of earlier work is not taken for a change); tables only a
 * heartbeat writes are left out. Without it the state is read
 * back over the wire as a client would see it: A's continuing connect and a
 * pull from A's cursor, without the members that carry the time or a freshly
 * issued cursor.
 */
import type { ServerAdapter } from '../adapters/server.ts';
import { type Fixture, postJson } from './fixture.ts';

/** Tables the reference's capture worker writes on a timer, whatever the requests. */
const TIME_ONLY_TABLES = new Set(['synchro.wal_worker_state', 'synchro.wal_progress']);

export interface StateReader {
  method: 'inspect' | 'protocol';
  picture(): Promise<Map<string, string>>;
}

function inspectReader(server: ServerAdapter, deadlineMs: number, quotedRows: number): StateReader {
  const inspect = server.inspect as NonNullable<ServerAdapter['inspect']>;
  let tables: string[] | undefined;
  return {
    method: 'inspect',
    async picture() {
      // A capture that cannot catch up leaves its quarantine in the tables read below; the profile reports readiness itself.
      await server.capture?.awaitMaterialized(deadlineMs).catch(() => undefined);
      tables ??= (
        await inspect.query<{ name: string }>(
          // Permanent tables only: an UNLOGGED one is not durable (a crash empties it), such as the reference's record of entry point calls.
          `SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND c.relpersistence = 'p' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1`,
        )
      )
        .map((row) => row.name)
        .filter((name) => !TIME_ONLY_TABLES.has(name));
      const picture = new Map<string, string>();
      for (const name of tables) picture.set(name, await tablePicture(inspect, name, quotedRows));
      return picture;
    },
  };
}

/** Up to this many rows a table is pictured row by row, so a finding can quote them; a larger one by its digest. */
export const QUOTED_ROWS = 50;

/**
 * One table's picture: its rows when it is small, else its row count and an
 * order-independent digest (the sum of a 64-bit hash of each row's JSON).
 * Sorting and shipping every row of a table that accepted requests keep
 * growing (the push ledger under a long generated run) cost minutes per run;
 * the digest reads each row once and sorts nothing.
 */
async function tablePicture(inspect: NonNullable<ServerAdapter['inspect']>, name: string, quotedRows: number): Promise<string> {
  const [digest] = await inspect.query<{ n: string; h: string }>(`SELECT count(*)::text AS n, coalesce(sum(hashtextextended(to_jsonb(t)::text, 0)), 0)::text AS h FROM ${name} t`);
  const rows = Number(digest?.n ?? 0);
  if (rows > quotedRows) return `${rows} rows, digest ${digest?.h}`;
  const [quoted] = await inspect.query<{ r: string }>(`SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY to_jsonb(t)::text), '[]')::text AS r FROM ${name} t`);
  return quoted?.r ?? '[]';
}

/** Drops what changes with every read (time, freshly issued cursor text) and keeps what state decides. */
function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(value)) {
    if (name === 'server_time') continue;
    out[name] = name === 'scope_cursors' || name === 'scope_cursor_updates' ? Object.keys(member as object).sort() : stable(member);
  }
  return out;
}

function protocolReader(server: ServerAdapter, fixture: Fixture): StateReader {
  return {
    method: 'protocol',
    async picture() {
      await server.capture?.awaitMaterialized(30_000).catch(() => undefined);
      const connect = await postJson(server.baseUrl, '/sync/connect', fixture.a.token, fixture.bases.connect);
      const pull = await postJson(server.baseUrl, '/sync/pull', fixture.a.token, fixture.bases.pull);
      return new Map([
        ['connect of A', JSON.stringify([connect.status, stable(connect.json)])],
        ['pull of A from its cursor', JSON.stringify([pull.status, stable(pull.json)])],
      ]);
    },
  };
}

export function stateReader(server: ServerAdapter, fixture: Fixture, deadlineMs: number, quotedRows = QUOTED_ROWS): StateReader {
  return server.inspect !== undefined ? inspectReader(server, deadlineMs, quotedRows) : protocolReader(server, fixture);
}

/** What differs between two pictures: each changed table or reading, with a short excerpt of both sides. */
export function stateDifferences(before: Map<string, string>, after: Map<string, string>): string[] {
  const names = [...new Set([...before.keys(), ...after.keys()])].sort();
  return names.filter((name) => before.get(name) !== after.get(name)).map((name) => `${name}: before ${(before.get(name) ?? '(absent)').slice(0, 240)} / after ${(after.get(name) ?? '(absent)').slice(0, 240)}`);
}

/** Whether the server still serves: GET /ready is 200 and, where the adapter waits for capture, capture catches up. */
export async function readiness(server: ServerAdapter, deadlineMs: number): Promise<{ ready: boolean; detail: string }> {
  const status = await fetch(`${server.baseUrl}/ready`, { signal: AbortSignal.timeout(deadlineMs) }).then(
    (r) => r.status,
    (error: Error) => error.message,
  );
  const capture = await (server.capture?.awaitMaterialized(deadlineMs) ?? Promise.resolve()).then(
    () => undefined,
    (error: Error) => error.message,
  );
  const detail = `GET /ready answered ${status}${capture === undefined ? '' : `; capture did not catch up: ${capture}`}`;
  return { ready: status === 200 && capture === undefined, detail };
}
