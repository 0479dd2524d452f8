/**
 * Push batches built to sit exactly on, or one octet or item past, a push
 * limit of the protocol (ADR 002): the mutation count (1..1000), the decoded
 * body (1,048,576 octets) and the RFC 8785 form of one normalized mutation
 * (65,536 octets). Every mutation is an otherwise valid insert into the
 * scenario's first table, so a refusal can only come from the limit. The
 * body is sent as the exact text built here (padding included).
 */
import { randomUUID } from 'node:crypto';
import { normalizedMutationOctets } from '../../../harness/codec/index.ts';
import { checkBytes } from '../../../harness/wire/index.ts';
import type { Reply } from '../reply.ts';
import type { Json, WireClient } from '../wire-client.ts';
import { fillerInsert } from '../wire-values/requests.ts';
import type { SyncWorld } from '../world.ts';

export const MAX_BODY_OCTETS = 1_048_576;
export const MAX_MUTATION_OCTETS = 65_536;

/** `count` valid inserts of fresh rows. */
export function validInserts(world: SyncWorld, client: WireClient, count: number): Json[] {
  return Array.from({ length: count }, () => fillerInsert(world, client));
}

/** A valid insert whose normalized mutation measures exactly `octets` in RFC 8785 form (its string column made longer). */
export function insertOfNormalizedSize(world: SyncWorld, client: WireClient, octets: number): Json {
  const mutation = fillerInsert(world, client);
  const columns = mutation.columns as Record<string, unknown>;
  const table = [...world.model.tables.values()][0];
  const stretched = table?.columns.find((c) => !c.key && c.type === 'string' && c.name !== 'owner_id');
  if (!stretched) throw new Error('the first declared table has no string column besides the key and owner to stretch');
  const field = client.fieldId(table?.name ?? '', stretched.name);
  columns[field] = '';
  // ASCII letters count one octet each in the canonical form, so the length is set in one step.
  columns[field] = 'x'.repeat(octets - normalizedMutationOctets(mutation));
  const measured = normalizedMutationOctets(mutation);
  if (measured !== octets) throw new Error(`the built mutation measures ${measured} octets, not ${octets}`);
  return mutation;
}

/** The push body text of `mutations`, with spaces before its closing brace so it is exactly `octets` long (when given). */
export function pushText(client: WireClient, mutations: Json[], batchId: string, octets?: number): string {
  const text = JSON.stringify(client.pushBody(mutations, batchId));
  if (octets === undefined) return text;
  const length = Buffer.byteLength(text, 'utf8');
  if (length > octets) throw new Error(`the batch is already ${length} octets, more than the ${octets} it should be padded to`);
  return `${text.slice(0, -1)}${' '.repeat(octets - length)}}`;
}

/** Enough valid inserts that the unpadded body stays below `octets`, then padded with insignificant whitespace to exactly `octets`. */
export function paddedText(world: SyncWorld, client: WireClient, count: number, batchId: string, octets: number): string {
  return pushText(client, validInserts(world, client, count), batchId, octets);
}

const octetsOf = (text: string | undefined) => Number((text ?? '').replaceAll(',', ''));

/** The text of a batch described by a feature's words, for batch `batchId`. */
export function batchText(world: SyncWorld, client: WireClient, description: string, batchId: string): string {
  if (description === 'an empty "mutations" array') return pushText(client, [], batchId);
  const count = /^(\d+) valid inserts$/.exec(description);
  if (count) return pushText(client, validInserts(world, client, Number(count[1])), batchId);
  const padded = /^(?:(\d+) )?valid inserts padded with insignificant whitespace to exactly ([\d,]+) octets$/.exec(description);
  if (padded) return paddedText(world, client, Number(padded[1] ?? 20), batchId, octetsOf(padded[2]));
  const sized = /^one insert whose normalized mutation in RFC 8785 form is ([\d,]+) octets$/.exec(description);
  if (sized) return pushText(client, [insertOfNormalizedSize(world, client, octetsOf(sized[1]))], batchId);
  throw new Error(`no batch builder for "${description}"`);
}

/** Posts `text` as a push of `client`, marked invalid on purpose when the proxy's checks would object to it. */
export async function sendPushText(client: WireClient, text: string): Promise<Reply> {
  const invalid = !checkBytes('push-request', new TextEncoder().encode(text)).ok;
  return client.post('/sync/push', undefined, { raw: text, invalid, endpoint: 'push' });
}

export function freshBatchId(): string {
  return randomUUID();
}
