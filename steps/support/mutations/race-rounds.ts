/**
 * Unordered races: several harness clients push a mutation of the same row
 * from the same base at the same moment, with nothing ordering them but the
 * server. Rounds are drawn with fast-check (the seed is kept for every
 * failure message); each round races on a row of its own, created for it.
 */
import fc from 'fast-check';
import type { Reply } from '../reply.ts';
import { labelRange } from '../seeds/artifacts.ts';
import { cellValue } from '../values.ts';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';
import { generatedSeed } from '../generated-seed.ts';

export type RaceOp = 'update' | 'delete' | 'insert';

export interface RacePlan {
  table: string;
  pk: string;
  /** The version every update and delete is sent from; inserts send none. */
  base: string | undefined;
  ops: { client: string; op: RaceOp }[];
}

export interface RacedPush {
  client: string;
  op: RaceOp;
  mutation: Json;
  reply: Reply;
  /** The outcome the answer gave this push's mutation, when it gave one. */
  outcome: Json | undefined;
}

export interface Round {
  table: string;
  pk: string;
  base: string | undefined;
  pushes: RacedPush[];
}

interface RoundsState {
  rounds: Round[];
  seed: number | undefined;
}

const states = new WeakMap<SyncWorld, RoundsState>();

export function roundsState(world: SyncWorld): RoundsState {
  let state = states.get(world);
  if (state === undefined) {
    state = { rounds: [], seed: undefined };
    states.set(world, state);
  }
  return state;
}

/** `"W1"` to `"W8"`: the client names W1..W8. */
export function clientRange(first: string, last: string): string[] {
  return labelRange(first, last);
}

/** Connects each named harness client of `user` that has not connected yet, all at once. */
export async function connectClients(world: SyncWorld, names: readonly string[], user: string): Promise<void> {
  await world.readyServer();
  await Promise.all(
    names.map(async (name) => {
      const client = world.wire(name, user);
      if (client.userId !== user) throw new Error(`client "${name}" already belongs to user ${client.userId}`);
      if (client.manifest !== undefined) return;
      const reply = await client.connect();
      if (reply.status !== 200) throw new Error(`client "${name}" could not connect: ${reply.status} ${reply.text.slice(0, 300)}`);
    }),
  );
}

/** The value each client writes: its own name in the body column. */
function bodyOf(client: string): Record<string, unknown> {
  return { body: client };
}

/** Every client of the plan sends its push at once; resolves when all are answered. */
export async function runRace(world: SyncWorld, plan: RacePlan, columnsFor: (client: string) => Record<string, unknown> = bodyOf, whileInFlight?: () => Promise<void>): Promise<Round> {
  const pkValue = cellValue(world.model.keyColumn(plan.table), plan.pk);
  const sends = plan.ops.map(({ client, op }) => {
    const wire = world.wire(client);
    const mutation = wire.mutation({
      op,
      table: plan.table,
      pk: pkValue,
      ...(op === 'delete' ? {} : { columns: columnsFor(client) }),
      ...(op === 'insert' || plan.base === undefined ? {} : { base_version: plan.base }),
    });
    return { client, op, mutation, body: wire.pushBody([mutation]) };
  });
  // Bodies first, then every request in the same tick: nothing but the server orders them.
  const answering = Promise.all(sends.map((s) => world.wire(s.client).post('/sync/push', s.body, { endpoint: 'push' })));
  // A caller that lines the pushes up (all waiting on one row lock) releases them here, while they are in flight.
  if (whileInFlight !== undefined) await whileInFlight();
  const replies = await answering;
  const pushes = sends.map((s, k) => {
    const reply = replies[k] as Reply;
    const all = reply.status === 200 ? [...((reply.json?.accepted ?? []) as Json[]), ...((reply.json?.rejected ?? []) as Json[])] : [];
    return { client: s.client, op: s.op, mutation: s.mutation, reply, outcome: all.find((o) => o.mutation_id === s.mutation.mutation_id) };
  });
  return { table: plan.table, pk: plan.pk, base: plan.base, pushes };
}

/** The push of a round whose outcome is applied (the first, if a broken server gave more than one). */
export function winnerOf(round: Round): RacedPush | undefined {
  return round.pushes.find((p) => p.outcome?.status === 'applied');
}

export interface RoundsOptions {
  rounds: number;
  table: string;
  fewest: number;
  most: number;
  user: string;
}

/**
 * Runs `rounds` races of `fewest` to `most` clients of `user`, each on a
 * fresh row of `table` created for the round, every client pushing an update
 * or a delete drawn by fast-check from the row's version at the round's start.
 */
export async function runRounds(world: SyncWorld, options: RoundsOptions): Promise<void> {
  const state = roundsState(world);
  const seed = generatedSeed();
  state.seed = seed;
  const plans = fc.sample(fc.array(fc.constantFrom<'update' | 'delete'>('update', 'delete'), { minLength: options.fewest, maxLength: options.most }), { numRuns: options.rounds, seed });
  const clients = Array.from({ length: options.most }, (_, k) => `racer-${k + 1}`);
  await connectClients(world, clients, options.user);
  const rows = await freshRows(world, options.table, options.user, options.rounds, clients[0] as string);
  for (const [k, ops] of plans.entries()) {
    const row = rows[k] as { pk: string; version: string };
    state.rounds.push(await runRace(world, { table: options.table, pk: row.pk, base: row.version, ops: ops.map((op, c) => ({ client: clients[c] as string, op })) }));
  }
}

/** Inserts `count` rows of `user` in one push of `writer` and returns their keys and versions. */
async function freshRows(world: SyncWorld, table: string, user: string, count: number, writer: string): Promise<{ pk: string; version: string }[]> {
  const client = world.wire(writer);
  const key = world.model.keyColumn(table);
  const keys = Array.from({ length: count }, (_, k) => `race-row-${k + 1}`);
  const mutations = keys.map((pk) => client.mutation({ op: 'insert', table, pk: cellValue(key, pk), columns: { owner_id: user, body: 'start' } }));
  const reply = await client.push(mutations);
  const accepted = reply.status === 200 ? ((reply.json?.accepted ?? []) as Json[]) : [];
  if (accepted.length !== count) throw new Error(`the ${count} fresh rows of the rounds were not all created: ${reply.status} ${reply.text.slice(0, 500)}`);
  const versions = new Map(accepted.map((o) => [o.mutation_id, o.server_version]));
  return keys.map((pk, k) => ({ pk, version: String(versions.get((mutations[k] as Json).mutation_id)) }));
}
