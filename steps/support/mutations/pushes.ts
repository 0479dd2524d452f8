/**
 * The push requests a client sent, as the proxy recorded them: exact bytes,
 * batch identity, mutations, and what the client was answered. Rows are
 * named the way the features name them (table name, key text) and matched to
 * the wire's table ids through the manifests the server published.
 */
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { Exchange, RecordedResponse } from '../../../harness/proxy/records.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../exchanges.ts';
import { outcomesOf } from '../wire-values/outcomes.ts';
import { keyValue, type Obj, tableNamed } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export interface SentPush {
  exchange: Exchange;
  bytes: Buffer;
  batchId: string;
  generation: unknown;
  schema: Obj | undefined;
  mutations: Obj[];
  /** What the client was given, when it got an answer. */
  answer: RecordedResponse | undefined;
  answerBody: Obj | undefined;
}

export async function pushesOf(world: SyncWorld, name: string, from = 0): Promise<SentPush[]> {
  return (await exchangesOf(world, name, { endpoints: ['push'], from })).map((exchange) => {
    const body = bodyOf(exchange.requestBody) as Obj | undefined;
    const answer = deliveredOf(exchange);
    return {
      exchange,
      bytes: exchange.requestBody,
      batchId: String(body?.batch_id),
      generation: body?.client_generation,
      schema: body?.schema as Obj | undefined,
      mutations: (Array.isArray(body?.mutations) ? body.mutations : []) as Obj[],
      answer,
      answerBody: answer?.status === 200 ? (bodyOf(answer.body) as Obj | undefined) : undefined,
    };
  });
}

/** Every outcome a 200 push answer gave the client, by mutation ID, in answer order. */
export function outcomesGiven(pushes: readonly SentPush[]): Map<string, Obj[]> {
  const out = new Map<string, Obj[]>();
  for (const push of pushes) {
    for (const outcome of outcomesOf(push.answerBody)) {
      const id = String(outcome.mutation_id);
      out.set(id, [...(out.get(id) ?? []), outcome]);
    }
  }
  return out;
}

/** Every outcome the proxy delivered to client `name` for `mutationId`, oldest first. */
export async function deliveredOutcomes(world: SyncWorld, name: string, mutationId: string): Promise<Obj[]> {
  return outcomesGiven(await pushesOf(world, name)).get(mutationId) ?? [];
}

/** Every outcome the server itself gave for mutation `id` (both answers of a request delivered twice), whatever the client was handed. */
export function serverOutcomes(pushes: readonly SentPush[], id: string): Obj[] {
  return pushes.flatMap((push) =>
    push.exchange.upstream.filter((answer) => answer.status === 200).flatMap((answer) => outcomesOf(bodyOf(answer.body) as Obj | undefined).filter((o) => o.mutation_id === id)),
  );
}

/** Identifies a row on the wire: the table id the server published for `table` and the key text. */
export async function rowMatcher(world: SyncWorld, table: string, row: string): Promise<(m: Obj) => boolean> {
  const tableId = (await tableNamed(world, table)).table_id;
  return (m) => m.table === tableId && String(keyValue(m.pk)) === row;
}

/** The mutations of the pushes that touch one row, each with the push that carried it, in send order. */
export function ofWireRow(pushes: readonly SentPush[], matches: (m: Obj) => boolean): { mutation: Obj; push: SentPush }[] {
  return pushes.flatMap((push) => push.mutations.filter(matches).map((mutation) => ({ mutation, push })));
}

/** The RFC 8785 form of a wire mutation: what "byte-identical content" compares. */
export function canonicalMutation(mutation: Obj): string {
  return canonicalJson(mutation as never);
}

/** A column of a wire mutation by its column name. */
export async function wireColumn(world: SyncWorld, table: string, mutation: Obj, column: string): Promise<unknown> {
  const shape = await tableNamed(world, table);
  const field = shape.fields.find((f) => f.name === column || f.field_id === column);
  return (mutation.columns as Obj | undefined)?.[field?.field_id ?? column];
}

/** A wire mutation's columns keyed by column name. */
export async function namedColumns(world: SyncWorld, table: string, mutation: Obj): Promise<Obj> {
  const shape = await tableNamed(world, table);
  return Object.fromEntries(Object.entries((mutation.columns ?? {}) as Obj).map(([id, value]) => [shape.fields.find((f) => f.field_id === id)?.name ?? id, value]));
}
