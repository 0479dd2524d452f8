/**
 * Requests the harness sends as a named protocol client with one member
 * altered on purpose: the body the client would send next, edited by JSON
 * pointer, and sent with the exact spelling of the new value (`1e3`, `10.0`
 * or `9007199254740993` reach the server as written). A request the proxy
 * would find invalid is marked as invalid on purpose, so only the server's
 * answer is judged.
 */
import { randomUUID } from 'node:crypto';
import { RawJson, removePointer, serializeJson, setPointer, readJsonText } from '../../../harness/proxy/rewrite.ts';
import { checkBytes, type WireKind } from '../../../harness/wire/index.ts';
import type { Reply } from '../reply.ts';
import { namedNumber } from '../values.ts';
import { type Json, microsecondNow, type WireClient } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

/** The mutation each client put in its last fixed-batch push, for "that mutation". */
export const lastMutation = new WeakMap<SyncWorld, string>();

export type RequestEndpoint = 'connect' | 'push' | 'pull' | 'rebuild';

/** One edit of a request body: set a member to a value, or remove it. */
export type Edit = { pointer: string; value: unknown } | { pointer: string; remove: true };

/** A step's value text as what goes on the wire: strings and literals as such, numbers verbatim, V + 1 resolved. */
export function stepValue(world: SyncWorld, text: string): unknown {
  const named = namedNumber(text, world.noted);
  if (named !== undefined) return named;
  const { value, trimmed } = readJsonText(text);
  if (typeof value === 'number') return new RawJson(trimmed);
  // Objects and arrays are re-serialized by serializeJson; their own numbers are plain JSON.
  return value;
}

/** A value that fits each column of the table, for an insert nobody cares about beyond its validity. */
function fillerValue(type: string, column: string, userId: string): unknown {
  if (column === 'owner_id' || column === 'owner') return userId;
  switch (type) {
    case 'int':
      return 1;
    case 'int64':
      return '1';
    case 'float':
      return 1.5;
    case 'decimal':
      return '1';
    case 'bool':
    case 'boolean':
      return true;
    case 'datetime':
      return microsecondNow();
    case 'date':
      return '2024-02-29';
    case 'json':
      return '{}';
    case 'bytes':
      return '';
    default:
      return `filler-${column}`;
  }
}

/** A valid insert of a fresh row (key `pk`, or a new one) into the scenario's first declared table. */
export function fillerInsert(world: SyncWorld, client: WireClient, pk?: string): Json {
  const table = [...world.model.tables.values()][0];
  if (table === undefined) throw new Error('the scenario declared no table to insert into');
  const key = world.model.keyColumn(table.name);
  const text = pk ?? `w-${randomUUID().slice(0, 8)}`;
  const pkValue = key.type === 'int' ? Number.parseInt(text.replace(/\D/g, '') || '1', 10) : text;
  const columns: Record<string, unknown> = {};
  const fields = client.tableSchema(table.name).fields;
  for (const column of table.columns) {
    // Only what the manifest lets a client author goes in (the key and a deletion mark may be server-owned).
    if (fields.find((f) => f.name === column.name)?.writable === false) continue;
    columns[column.name] = column.key ? pkValue : column.nullable ? null : fillerValue(column.type, column.name, client.userId);
  }
  return client.mutation({ op: 'insert', table: table.name, pk: pkValue, columns });
}

/** The body client `client` would send next to `endpoint`. */
export function nextBody(world: SyncWorld, client: WireClient, endpoint: RequestEndpoint, scope?: string): Json {
  switch (endpoint) {
    case 'connect':
      return client.connectBody();
    case 'pull':
      return client.pullBody();
    case 'push':
      return client.pushBody([fillerInsert(world, client)]);
    case 'rebuild': {
      const target = scope ?? [...client.cursors.keys()][0];
      if (target === undefined) throw new Error(`client "${client.name}" has no assigned scope to rebuild`);
      return client.rebuildBody(target, randomUUID(), null, 1000);
    }
  }
}

export function applyEdits(body: Json, edits: readonly Edit[]): Json {
  let out: unknown = body;
  for (const edit of edits) out = 'remove' in edit ? removePointer(out, edit.pointer) : setPointer(out, edit.pointer, edit.value);
  return out as Json;
}

/** Sends `body` as client `client` to `endpoint` exactly as serialized, marked invalid on purpose when the proxy would object to it. */
export async function sendExact(client: WireClient, endpoint: RequestEndpoint, body: Json): Promise<Reply> {
  const text = serializeJson(body);
  const kind = `${endpoint}-request` as WireKind;
  const invalid = !checkBytes(kind, new TextEncoder().encode(text)).ok;
  return client.post(`/sync/${endpoint}`, undefined, { raw: text, invalid, endpoint });
}

/** The next request of `endpoint` with `edits` applied, sent as client `name`. */
export async function sendEdited(world: SyncWorld, name: string, endpoint: RequestEndpoint, edits: readonly Edit[], scope?: string): Promise<Reply> {
  await world.readyServer();
  const client = world.wire(name);
  return sendExact(client, endpoint, applyEdits(nextBody(world, client, endpoint, scope), edits));
}
