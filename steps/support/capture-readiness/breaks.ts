/**
 * Breaking one capture condition at a time on a healthy server, and putting
 * it back. Each break acts on the server's real state through the adapter
 * (source SQL on the server's database, the capture worker controls, the
 * clock), never on what the harness itself remembers; each one returns how
 * to undo exactly what it did, kept for "the harness restores what it broke".
 */
import type { ServerAdapter, SourceSqlControl, SourceSqlSession } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export type Restore = () => Promise<void>;

/** A break either returns its undo, or `skipped` when the adapter lacks an optional control it needs. */
type Break = (world: SyncWorld, server: ServerAdapter, sql: SourceSqlControl, args: string[]) => Promise<Restore | 'skipped'>;

const restores = new WeakMap<SyncWorld, Restore>();

/** Names a relation written `schema.name` as SQL. */
export function qualified(relation: string): string {
  return relation
    .split('.')
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join('.');
}

async function publicationName(sql: SourceSqlControl): Promise<string> {
  const rows = await sql.query<{ pubname: string }>("SELECT pubname FROM pg_publication WHERE pubname LIKE 'synchro%' ORDER BY pubname");
  if (rows.length !== 1) throw new Error(`expected the server's one capture publication, found ${JSON.stringify(rows.map((r) => r.pubname))}`);
  return (rows[0] as { pubname: string }).pubname;
}

export async function activeSlot(sql: SourceSqlControl): Promise<string> {
  const rows = await sql.query<{ slot_name: string }>('SELECT slot_name FROM synchro.wal_progress');
  if (rows.length !== 1) throw new Error('the server records no active replication slot');
  return (rows[0] as { slot_name: string }).slot_name;
}

/**
 * Drops the slot. The worker uses it only while it reads changes, so a drop
 * that meets it in use is asked again until the deadline.
 */
export async function dropSlot(world: SyncWorld, sql: SourceSqlControl, slot: string): Promise<void> {
  const deadline = Date.now() + world.deadlineMs;
  for (;;) {
    try {
      await sql.query('SELECT pg_drop_replication_slot($1)', [slot]);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || Date.now() > deadline) throw error;
    }
  }
}

/** A lost slot comes back only through the operator's stream reset (a new slot and a new baseline). */
async function resetStream(world: SyncWorld, server: ServerAdapter): Promise<Restore | 'skipped'> {
  if (!server.capture?.resetStream) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.resetStream() to recover from a lost replication slot`);
  const capture = server.capture;
  return async () => {
    await capture.resetStream?.();
  };
}

export function control<K extends 'stopWorker' | 'restartWorker' | 'injectPoison'>(server: ServerAdapter, name: K): () => Promise<void> {
  const capture = server.capture;
  const act = capture?.[name];
  if (capture === undefined || act === undefined) throw new Error(`server adapter "${server.id}" offers no capture.${name}()`);
  return () => act.call(capture);
}

/** Waits until the server records an active quarantine (the worker got to the poisoned transaction). */
export async function activeQuarantineAppears(world: SyncWorld, sql: SourceSqlControl): Promise<void> {
  const deadline = Date.now() + world.deadlineMs;
  while ((await sql.query("SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active'")).length === 0) {
    if (Date.now() > deadline) throw new Error('the capture worker recorded no quarantine for the poisoned transaction');
  }
}

/** One committed row of the scenario's "tasks" table (text columns, key "id"): a fresh key, "alice" everywhere else. */
let writeCounter = 0;
export async function writeOneTask(sql: SourceSqlControl, relation = 'public.tasks'): Promise<void> {
  writeCounter += 1;
  const [schema, name] = relation.split('.');
  const columns = (await sql.query<{ c: string }>('SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name <> $3 ORDER BY ordinal_position', [schema, name, 'id'])).map((r) => r.c);
  const names = ['id', ...columns].map((c) => qualified(c)).join(', ');
  const values = columns.map(() => "'alice'").join(', ');
  await sql.query(`INSERT INTO ${qualified(relation)} (${names}) VALUES ($1${values === '' ? '' : `, ${values}`})`, [`readiness-${process.pid}-${writeCounter}`]);
}

/**
 * Holds the worker inside a poll (state still "running"), just before the
 * commit of one fresh write, so it refreshes nothing until released;
 * `skipped` when the adapter offers no hold.
 */
export async function holdWorkerInPoll(world: SyncWorld, server: ServerAdapter, sql: SourceSqlControl, why: string): Promise<'skipped' | undefined> {
  const capture = server.capture;
  if (!capture?.holdBeforeCommit || !capture.awaitHold) return undeterminedWithout(world, `server adapter "${server.id}" offers no capture.holdBeforeCommit() ${why}`);
  await capture.holdBeforeCommit();
  // A worker left holding would never finish its poll, and the server could not stop: released at teardown at the latest.
  world.cleanups.push(control(server, 'restartWorker'));
  await writeOneTask(sql);
  await capture.awaitHold(world.deadlineMs);
  return undefined;
}

const BREAKS: Array<[RegExp, Break]> = [
  [
    /^stopping the capture worker$/,
    async (_world, server) => {
      await control(server, 'stopWorker')();
      return control(server, 'restartWorker');
    },
  ],
  [
    // The worker refreshes its heartbeat on every poll, so it is held inside one (state still "running") while its heartbeat is a day old.
    /^ageing the worker heartbeat by one day$/,
    async (world, server, sql) => {
      if ((await holdWorkerInPoll(world, server, sql, 'to keep the worker from refreshing its heartbeat')) === 'skipped') return 'skipped';
      await sql.query("UPDATE synchro.wal_worker_state SET heartbeat_at = heartbeat_at - interval '1 day'");
      return control(server, 'restartWorker');
    },
  ],
  [
    /^storing an unvalidated registry generation as the active one$/,
    async (_world, _server, sql) => {
      const [row] = await sql.query<{ generation: string }>(
        "INSERT INTO synchro.registry_generations (generation, state, validated) SELECT coalesce(max(generation), 0) + 1, 'active', false FROM synchro.registry_generations RETURNING generation::text",
      );
      return async () => {
        await sql.query('DELETE FROM synchro.registry_generations WHERE generation = $1::bigint', [row?.generation]);
      };
    },
  ],
  [
    /^disabling trigger "([^"]+)" on "([^"]+)"$/,
    async (_world, _server, sql, [trigger, relation]) => {
      await sql.query(`ALTER TABLE ${qualified(relation as string)} DISABLE TRIGGER ${qualified(trigger as string)}`);
      return async () => {
        await sql.query(`ALTER TABLE ${qualified(relation as string)} ENABLE TRIGGER ${qualified(trigger as string)}`);
      };
    },
  ],
  [
    /^dropping trigger "([^"]+)" on "([^"]+)"$/,
    async (_world, _server, sql, [trigger, relation]) => {
      const [row] = await sql.query<{ def: string }>('SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2', [relation, trigger]);
      if (row === undefined) throw new Error(`${relation} has no trigger "${trigger}" to drop`);
      await sql.query(`DROP TRIGGER ${qualified(trigger as string)} ON ${qualified(relation as string)}`);
      return async () => {
        await sql.query(row.def);
      };
    },
  ],
  [
    /^removing "([^"]+)" from the publication$/,
    async (_world, _server, sql, [relation]) => {
      const publication = await publicationName(sql);
      await sql.query(`ALTER PUBLICATION ${qualified(publication)} DROP TABLE ${qualified(relation as string)}`);
      return async () => {
        await sql.query(`ALTER PUBLICATION ${qualified(publication)} ADD TABLE ${qualified(relation as string)}`);
      };
    },
  ],
  [
    /^adding an unregistered table to the publication$/,
    async (_world, _server, sql) => {
      const publication = await publicationName(sql);
      await sql.query('CREATE TABLE public.readiness_unregistered (id text PRIMARY KEY)');
      await sql.query(`ALTER PUBLICATION ${qualified(publication)} ADD TABLE public.readiness_unregistered`);
      return async () => {
        await sql.query(`ALTER PUBLICATION ${qualified(publication)} DROP TABLE public.readiness_unregistered`);
        await sql.query('DROP TABLE public.readiness_unregistered');
      };
    },
  ],
  [
    /^adding a column list to the publication entry of "([^"]+)"$/,
    async (_world, _server, sql, [relation]) => republish(sql, relation as string, '(id, owner_id)'),
  ],
  [
    // The filter names only the key, which replica identity DEFAULT carries, so updates and deletes stay publishable.
    /^adding a row filter to the publication entry of "([^"]+)"$/,
    async (_world, _server, sql, [relation]) => republish(sql, relation as string, "WHERE (id <> '')"),
  ],
  [
    /^dropping the active replication slot$/,
    async (world, server, sql) => {
      const restore = await resetStream(world, server);
      if (restore === 'skipped') return restore;
      await dropSlot(world, sql, await activeSlot(sql));
      return restore;
    },
  ],
  [
    // A temporary slot lives as long as the session that made it: the harness keeps one open until the restore.
    /^replacing the active slot with a temporary slot of the same name$/,
    async (world, server, sql) => {
      const restore = await resetStream(world, server);
      if (restore === 'skipped') return restore;
      if (!sql.session) return undeterminedWithout(world, `server adapter "${server.id}" offers no sourceSql.session() to hold a temporary slot`);
      const slot = await activeSlot(sql);
      await dropSlot(world, sql, slot);
      const holder: SourceSqlSession = await sql.session();
      await holder.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)", [slot]);
      return async () => {
        await holder.close();
        await restore();
      };
    },
  ],
  [
    /^replacing the active slot with a "([^"]+)" slot of the same name$/,
    async (world, server, sql, [plugin]) => {
      const restore = await resetStream(world, server);
      if (restore === 'skipped') return restore;
      const slot = await activeSlot(sql);
      await dropSlot(world, sql, slot);
      await sql.query('SELECT pg_create_logical_replication_slot($1, $2)', [slot, plugin]);
      return restore;
    },
  ],
  [
    /^injecting a poison transaction$/,
    async (world, server, sql) => {
      await control(server, 'injectPoison')();
      await writeOneTask(sql);
      await activeQuarantineAppears(world, sql);
      // The operator's retry: the armed poison was spent on the first attempt, so the retry materializes it.
      return async () => {
        await sql.query('SELECT synchro.synchro_retry_wal_poison()');
      };
    },
  ],
  [
    /^holding a stream reset in phase "([^"]+)"$/,
    async (_world, _server, sql, [phase]) => {
      const [row] = await sql.query<{ reset_id: string }>(
        "INSERT INTO synchro.stream_resets (reset_id, candidate_slot_name, lifecycle) VALUES (gen_random_uuid(), 'readiness_held_reset', $1) RETURNING reset_id::text",
        [phase],
      );
      return async () => {
        await sql.query("UPDATE synchro.stream_resets SET lifecycle = 'aborted', finished_at = clock_timestamp() WHERE reset_id = $1::uuid", [row?.reset_id]);
      };
    },
  ],
  [
    /^clearing the recorded acknowledgement boundary$/,
    async (_world, _server, sql) => {
      const [row] = await sql.query<{ ack: string }>('UPDATE synchro.wal_progress p SET acknowledged_end_lsn = NULL FROM synchro.wal_progress old RETURNING old.acknowledged_end_lsn::text AS ack');
      if (row === undefined) throw new Error('the server records no capture progress to clear');
      return async () => {
        await sql.query('UPDATE synchro.wal_progress SET acknowledged_end_lsn = $1::pg_lsn', [row.ack]);
      };
    },
  ],
  [
    /^renaming "([^"]+)" to "([^"]+)"$/,
    async (_world, _server, sql, [from, to]) => {
      const [schema, name] = (to as string).split('.');
      if (schema === undefined || name === undefined) throw new Error(`"${to}" is not written schema.name`);
      await sql.query(`ALTER TABLE ${qualified(from as string)} RENAME TO ${qualified(name)}`);
      const original = (from as string).split('.')[1] as string;
      return async () => {
        await sql.query(`ALTER TABLE ${qualified(to as string)} RENAME TO ${qualified(original)}`);
      };
    },
  ],
  [
    /^pausing materialization until the oldest unmaterialized commit is (\d+) minutes old with a (\d+) second limit$/,
    async (world, server, sql, [minutes, limit]) => {
      const clock = server.clock;
      if (!clock) return undeterminedWithout(world, `server adapter "${server.id}" offers no clock control to let an unmaterialized commit grow old`);
      const [before] = await sql.query<{ seconds: number | null }>('SELECT max_wal_lag_seconds AS seconds FROM synchro.capture_limits');
      await sql.query('UPDATE synchro.capture_limits SET max_wal_lag_seconds = $1', [Number(limit)]);
      await control(server, 'stopWorker')();
      await writeOneTask(sql);
      await clock.advance(Number(minutes) * 60_000);
      return async () => {
        await clock.set(new Date().toISOString());
        await sql.query('UPDATE synchro.capture_limits SET max_wal_lag_seconds = $1', [before?.seconds ?? null]);
        await control(server, 'restartWorker')();
      };
    },
  ],
];

/** Replaces the publication entry of `relation` by one with `shape` (a column list or a row filter). */
async function republish(sql: SourceSqlControl, relation: string, shape: string): Promise<Restore> {
  const publication = await publicationName(sql);
  await sql.query(`BEGIN; ALTER PUBLICATION ${qualified(publication)} DROP TABLE ${qualified(relation)}; ALTER PUBLICATION ${qualified(publication)} ADD TABLE ${qualified(relation)} ${shape}; COMMIT`);
  return async () => {
    await sql.query(`BEGIN; ALTER PUBLICATION ${qualified(publication)} DROP TABLE ${qualified(relation)}; ALTER PUBLICATION ${qualified(publication)} ADD TABLE ${qualified(relation)}; COMMIT`);
  };
}

/** Breaks what `wording` names; `skipped` when the adapter lacks an optional control for it. */
export async function breakCapture(world: SyncWorld, wording: string): Promise<'skipped' | undefined> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to break capture with`);
  for (const [pattern, act] of BREAKS) {
    const match = pattern.exec(wording);
    if (match === null) continue;
    const restore = await act(world, server, server.sourceSql, match.slice(1));
    if (restore === 'skipped') return restore;
    restores.set(world, restore);
    return undefined;
  }
  throw new Error(`no way to break capture by "${wording}" is known to the harness`);
}

/** Undoes the scenario's break. */
export async function restoreCapture(world: SyncWorld): Promise<void> {
  const restore = restores.get(world);
  if (restore === undefined) throw new Error('the harness broke nothing in this scenario that it could restore');
  restores.delete(world);
  await restore();
}
