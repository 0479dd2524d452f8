/**
 * What the client-expiry scenarios (SYNC-SCHEMA-005) remember beside the
 * World: client generations under a label ("g1", "g2"), and each batch a
 * harness client sent under a label ("b1") with its batch_id, mutations,
 * exact request text and first answer.
 */
import { randomUUID } from 'node:crypto';
import type { Reply } from '../reply.ts';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

export const DAY_MS = 86_400_000;

export interface LabelledBatch {
  batchId: string;
  mutations: Json[];
  /** The first request sent under the label, byte for byte, and its answer. */
  requestText?: string;
  first?: Reply;
}

interface ExpiryState {
  generations: Map<string, number>;
  batches: Map<string, LabelledBatch>;
  /** Answers recorded under a label ("r1"). */
  responses: Map<string, Reply>;
  /** The client under test whose successor batch the proxy checks read. */
  successorClient: string | undefined;
}

const states = new WeakMap<SyncWorld, ExpiryState>();

export function expiryState(world: SyncWorld): ExpiryState {
  let state = states.get(world);
  if (state === undefined) {
    state = { generations: new Map(), batches: new Map(), responses: new Map(), successorClient: undefined };
    states.set(world, state);
  }
  return state;
}

export function noteGeneration(world: SyncWorld, label: string, generation: unknown): void {
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) throw new Error(`client generation ${String(generation)} is not a positive integer to note as "${label}"`);
  const generations = expiryState(world).generations;
  if (generations.has(label)) throw new Error(`a client generation was already noted as "${label}"`);
  generations.set(label, generation);
}

export function generationNoted(world: SyncWorld, label: string): number {
  const generation = expiryState(world).generations.get(label);
  if (generation === undefined) throw new Error(`no client generation was noted as "${label}" earlier in this scenario`);
  return generation;
}

/** The batch labelled `label`, made on first use: a fresh batch_id and one insert of task `task` owned by the client's user. */
export function taskBatch(world: SyncWorld, name: string, label: string, task: string): LabelledBatch {
  const batches = expiryState(world).batches;
  const known = batches.get(label);
  if (known !== undefined) return known;
  const client = world.wire(name);
  const batch: LabelledBatch = {
    batchId: randomUUID(),
    mutations: [client.mutation({ op: 'insert', table: 'tasks', pk: task, columns: { owner_id: client.userId, title: `task ${task}` } })],
  };
  batches.set(label, batch);
  return batch;
}

export function batchLabelled(world: SyncWorld, label: string): LabelledBatch {
  const batch = expiryState(world).batches.get(label);
  if (batch === undefined) throw new Error(`no batch was sent as "${label}" earlier in this scenario`);
  return batch;
}

/** Sends the labelled batch under `generation` (the client's own when absent); the first sending is kept byte for byte. */
export async function sendBatch(world: SyncWorld, name: string, batch: LabelledBatch, generation?: number): Promise<Reply> {
  const client = world.wire(name);
  const body = { ...client.pushBody(batch.mutations, batch.batchId), ...(generation === undefined ? {} : { client_generation: generation }) };
  const reply = await client.post('/sync/push', body, { endpoint: 'push' });
  if (batch.requestText === undefined) {
    batch.requestText = reply.requestText;
    batch.first = reply;
  }
  return reply;
}

/**
 * The exact text of each element of the top-level array member `member` of a
 * JSON object text, so two requests can be compared element by element byte
 * for byte. Undefined when the text is not an object holding such an array.
 */
export function rawArrayElements(text: string, member: string): string[] | undefined {
  let depth = 0;
  let inString = false;
  let key: string | undefined;
  let stringStart = -1;
  let arrayStart = -1;
  const elements: string[] = [];
  let elementStart = -1;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i += 1;
      else if (ch === '"') {
        inString = false;
        if (depth === 1 && arrayStart < 0) key = JSON.parse(text.slice(stringStart, i + 1)) as string;
      }
      continue;
    }
    if (ch === '"') {
      inString = true;
      stringStart = i;
      if (depth === 2 && arrayStart >= 0 && elementStart < 0) elementStart = i;
      continue;
    }
    if (ch === '{' || ch === '[') {
      if (depth === 1 && ch === '[' && key === member) arrayStart = i;
      else if (depth === 2 && arrayStart >= 0 && elementStart < 0) elementStart = i;
      depth += 1;
      continue;
    }
    if (ch === '}' || ch === ']') {
      depth -= 1;
      if (depth === 1 && arrayStart >= 0) {
        if (elementStart >= 0) elements.push(text.slice(elementStart, i).trim());
        return elements;
      }
      continue;
    }
    if (depth === 2 && arrayStart >= 0) {
      if (ch === ',') {
        elements.push(text.slice(elementStart, i).trim());
        elementStart = -1;
      } else if (elementStart < 0 && ch !== undefined && !/\s/.test(ch)) elementStart = i;
    }
  }
  return undefined;
}
