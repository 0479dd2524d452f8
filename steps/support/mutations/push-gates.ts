/**
 * Ordering concurrent pushes from outside the server: a gate in the source
 * database and pushes started in the background.
 *
 * The gate is a BEFORE row trigger on a source table that takes a shared
 * advisory lock while the harness's own SQL session holds the same lock
 * exclusively. A push whose write reaches the trigger waits there, inside its
 * transaction, holding whatever row locks it took before the write; opening
 * the gate (the harness lets its lock go) lets it go on. The harness's own
 * writes pass (its main session holds the lock, its further sessions set
 * PASS_SETTING), so only pushes wait.
 * Advisory locks are shared by every database of the cluster, so each gate
 * draws a key of its own.
 *
 * Whether a push is held, or a second push waits for a row lock, is read from
 * pg_stat_activity of the scenario's database: what PostgreSQL says a backend
 * waits for, not what the server says it does.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { withDeadline } from '../../../harness/adapters/child.ts';
import type { SourceSqlControl } from '../../../harness/adapters/server.ts';
import type { Reply } from '../reply.ts';
import type { Json, MutationSpec } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

/** A harness session sets this to on: its own writes pass every gate. */
export const PASS_SETTING = 'synchro_harness.gate_pass';

/** First half of every gate's advisory key: the harness's own class of locks. */
const GATE_CLASS = 0x53_59_4e; // "SYN"

export interface PushGate {
  table: string;
  /** The key value of the one row the gate holds; every row when absent. */
  row?: string;
  /** Second half of the advisory key. */
  key: number;
  open: boolean;
  /** Closed again once the pushes it let through were answered ("holds each push write"). */
  reclose: boolean;
}

/** A push started and not yet awaited: its mutations, and the answer once it came. */
export interface StartedPush {
  client: string;
  mutations: Json[];
  startedAt: number;
  answer: Promise<Reply>;
  reply?: Reply;
  answeredAt?: number;
}

interface RaceState {
  gates: PushGate[];
  pushes: StartedPush[];
  /** When the harness last opened the gates. */
  openedAt?: number;
}

const states = new WeakMap<SyncWorld, RaceState>();

export function raceState(world: SyncWorld): RaceState {
  let state = states.get(world);
  if (state === undefined) {
    state = { gates: [], pushes: [] };
    states.set(world, state);
  }
  return state;
}

/** The scenario's SQL session on the source database (the one that holds the gates' locks). */
export async function sourceSql(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to install a gate trigger`);
  return server.sourceSql;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Installs a closed gate on `table` (for row `row` only, when given). */
export async function installGate(world: SyncWorld, table: string, row?: string): Promise<PushGate> {
  const sql = await sourceSql(world);
  const keyColumn = world.model.keyColumn(table).name;
  const gate: PushGate = { table, ...(row === undefined ? {} : { row }), key: randomInt(1, 2 ** 31 - 1), open: false, reclose: false };
  const name = `harness_gate_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  // Closed before the trigger exists, so no write can slip through in between.
  await sql.query('SELECT pg_advisory_lock($1, $2)', [GATE_CLASS, gate.key]);
  const applies = row === undefined ? 'true' : `k = ${quoteLiteral(row)}`;
  await sql.query(`
    CREATE FUNCTION public.${name}() RETURNS trigger LANGUAGE plpgsql AS $gate$
    DECLARE k text;
    BEGIN
      IF TG_OP = 'DELETE' THEN k := to_jsonb(OLD) ->> ${quoteLiteral(keyColumn)}; ELSE k := to_jsonb(NEW) ->> ${quoteLiteral(keyColumn)}; END IF;
      IF ${applies} AND current_setting('${PASS_SETTING}', true) IS DISTINCT FROM 'on' THEN PERFORM pg_advisory_xact_lock_shared(${GATE_CLASS}, ${gate.key}); END IF;
      IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
      RETURN NEW;
    END
    $gate$;
    CREATE TRIGGER ${name} BEFORE INSERT OR UPDATE OR DELETE ON public.${quoteIdent(table)} FOR EACH ROW EXECUTE FUNCTION public.${name}();`);
  raceState(world).gates.push(gate);
  return gate;
}

/** Opens every closed gate of the scenario. */
export async function openGates(world: SyncWorld): Promise<void> {
  const closed = raceState(world).gates.filter((g) => !g.open);
  if (closed.length === 0) throw new Error('no gate of this scenario is closed');
  const sql = await sourceSql(world);
  for (const gate of closed) {
    await sql.query('SELECT pg_advisory_unlock($1, $2)', [GATE_CLASS, gate.key]);
    gate.open = true;
  }
  raceState(world).openedAt = Date.now();
}

/** Closes an opened gate again, so the next push write waits at it. */
export async function closeGate(world: SyncWorld, gate: PushGate): Promise<void> {
  if (!gate.open) return;
  const sql = await sourceSql(world);
  await sql.query('SELECT pg_advisory_lock($1, $2)', [GATE_CLASS, gate.key]);
  gate.open = false;
}

/** Backends of the scenario's database waiting for a lock, by what they wait for (advisory, transactionid, tuple, relation...). */
export async function lockWaits(world: SyncWorld): Promise<Map<string, number>> {
  const sql = await sourceSql(world);
  const rows = await sql.query<{ wait_event: string; n: number }>(
    `SELECT wait_event, count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' GROUP BY wait_event`,
  );
  return new Map(rows.map((r) => [r.wait_event, r.n]));
}

/** Polls `probe` until it returns a value, or fails with `what` at the scenario's deadline. */
export async function waitFor<T>(world: SyncWorld, what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + world.deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`${what} (waited ${world.deadlineMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

/** Waits until `count` pushes wait at a gate; fails if a started push was answered instead. */
export async function awaitHeldAtGate(world: SyncWorld, count = 1): Promise<void> {
  await waitFor(world, `no push write waited at the gate`, async () => {
    const answered = raceState(world).pushes.find((p) => p.reply !== undefined);
    if (answered) throw new Error(`the push of client "${answered.client}" was answered ${answered.reply?.status} before any write waited at the gate: ${answered.reply?.text.slice(0, 500)}`);
    return ((await lockWaits(world)).get('advisory') ?? 0) >= count ? true : undefined;
  });
}

/** Waits until a push waits for a row lock (a transaction or tuple lock), or has been answered already. */
export async function awaitRowLockWaitOrAnswer(world: SyncWorld, push: StartedPush): Promise<void> {
  await waitFor(world, `the push of client "${push.client}" neither waited for a row lock nor was answered`, async () => {
    if (push.reply !== undefined) return true;
    const waits = await lockWaits(world);
    return (waits.get('transactionid') ?? 0) + (waits.get('tuple') ?? 0) > 0 ? true : undefined;
  });
}

/** Sends one push of `mutations` as client `name` without waiting for the answer. */
export function startPush(world: SyncWorld, name: string, mutations: Json[]): StartedPush {
  const client = world.wire(name);
  const started: StartedPush = { client: name, mutations, startedAt: Date.now(), answer: undefined as unknown as Promise<Reply> };
  started.answer = client.post('/sync/push', client.pushBody(mutations), { endpoint: 'push' }).then((reply) => {
    started.reply = reply;
    started.answeredAt = Date.now();
    return reply;
  });
  // Awaited by the step that needs the answer; an unawaited failure must not go unobserved.
  started.answer.catch(() => undefined);
  raceState(world).pushes.push(started);
  return started;
}

/** Starts a one-mutation push of client `name`. */
export function startOne(world: SyncWorld, name: string, spec: MutationSpec): StartedPush {
  return startPush(world, name, [world.wire(name).mutation(spec)]);
}

/** Waits for every started push to be answered. */
export async function awaitAnswers(world: SyncWorld): Promise<StartedPush[]> {
  const pushes = raceState(world).pushes;
  await withDeadline(Promise.all(pushes.map((p) => p.answer)), world.deadlineMs, () => `a started push was not answered within ${world.deadlineMs} ms`);
  return pushes;
}

/** The started push of client `name` (the last one it started), answered. */
export async function answeredPushOf(world: SyncWorld, name: string): Promise<StartedPush & { reply: Reply }> {
  const push = raceState(world).pushes.filter((p) => p.client === name).at(-1);
  if (push === undefined) throw new Error(`client "${name}" started no push in this scenario`);
  await withDeadline(push.answer, world.deadlineMs, () => `the push of client "${name}" was not answered within ${world.deadlineMs} ms`);
  return push as StartedPush & { reply: Reply };
}

/** Every outcome of a 200 push answer, with the list that carried it. */
export function outcomesOf(reply: Reply): { list: 'accepted' | 'rejected'; outcome: Json }[] {
  if (reply.status !== 200) return [];
  return (['accepted', 'rejected'] as const).flatMap((list) => ((reply.json?.[list] ?? []) as Json[]).map((outcome) => ({ list, outcome })));
}

/** The one outcome a one-mutation push was given, asserting there is exactly one and it names the mutation. */
export function onlyOutcome(world: SyncWorld, push: StartedPush & { reply: Reply }): { list: 'accepted' | 'rejected'; outcome: Json } {
  world.assert.equal(push.reply.status, 200, `the push of client "${push.client}" was answered ${push.reply.status}: ${push.reply.text.slice(0, 500)}`);
  const all = outcomesOf(push.reply);
  const id = push.mutations[0]?.mutation_id;
  world.assert.equal(
    all.map((o) => o.outcome.mutation_id),
    [id],
    `the answer to client "${push.client}" holds exactly one outcome, for its mutation ${String(id)}: ${push.reply.text.slice(0, 1000)}`,
  );
  return all[0] as { list: 'accepted' | 'rejected'; outcome: Json };
}
