/**
 * Rewriting one member of a server answer before a client sees it, by JSON
 * pointer. Inside a row (`/changes/0/row/due_at`) a column may be named by
 * its column name; it is turned into the field id of the message's table.
 * Optionally the row checksum of the edited message is recomputed over the
 * edited row, so that the edited value is the only defect of the message: a
 * value the codec would refuse (a datetime with an offset) is encoded as the
 * text it is, the way a decoder that took it as valid would encode it.
 */
import { checksumObject, encodeRowBody, encodeRowIdentity, type PortableValue, readKeyValue, readPortable, readTableShape, rowDigestFromParts, schemaHashRaw } from '../../../harness/codec/index.ts';
import type { FaultRule } from '../../../harness/proxy/faults.ts';
import type { WireProxy } from '../../../harness/proxy/proxy.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import { getPointer, pointerTokens, RawJson, setPointer } from '../../../harness/proxy/rewrite.ts';
import type { Endpoint } from '../../../harness/proxy/routes.ts';
import { bodyOf } from '../exchanges.ts';
import { type ManifestTable, type Obj, publishedTables } from './recorded.ts';

const ROW_MEMBERS = new Set(['row', 'server_row']);

const TEXT_TYPES = new Set(['string', 'decimal', 'datetime', 'date', 'time', 'json']);

/** Where a pointer lands inside a row-bearing message: the message's pointer and the row member. */
function rowSite(tokens: readonly string[]): { messageTokens: string[]; rowMember: string } | undefined {
  const at = tokens.findIndex((token) => ROW_MEMBERS.has(token));
  return at > 0 ? { messageTokens: tokens.slice(0, at), rowMember: tokens[at] as string } : undefined;
}

const toPointer = (tokens: readonly string[]) => tokens.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** The pointer with a column name inside a row replaced by its field id, when the row has no member of that name. */
function resolveColumn(json: unknown, pointer: string, tables: ReadonlyMap<string, ManifestTable>): string {
  const tokens = pointerTokens(pointer);
  const site = rowSite(tokens);
  if (site === undefined || tokens.length !== site.messageTokens.length + 2) return pointer;
  const message = getPointer(json, toPointer(site.messageTokens)) as Obj | undefined;
  const row = message?.[site.rowMember] as Obj | undefined;
  const column = tokens[tokens.length - 1] as string;
  if (row === undefined || Object.hasOwn(row, column)) return pointer;
  const field = tables.get(String(message?.table))?.fields.find((f) => f.name === column);
  return field === undefined ? pointer : toPointer([...site.messageTokens, site.rowMember, field.field_id]);
}

/** A row value as encoded for the digest; a text value the codec refuses is taken as the text it is. */
function digestValue(spec: Parameters<typeof readPortable>[0], value: unknown): PortableValue {
  try {
    return readPortable(spec, value);
  } catch (error) {
    if (typeof value === 'string' && TEXT_TYPES.has(spec.type)) return { type: spec.type, value } as PortableValue;
    throw error;
  }
}

/** Recomputes `row_checksum` of the message at `messagePointer` over its (edited) row. */
export function recomputeRowChecksum(json: unknown, messagePointer: string, rowMember: string, schemaHash: string, tables: ReadonlyMap<string, ManifestTable>): void {
  const message = getPointer(json, messagePointer) as Obj | undefined;
  if (message === undefined) throw new Error(`${messagePointer}: no such message`);
  const table = tables.get(String(message.table));
  if (table === undefined) throw new Error(`${messagePointer}: table ${String(message.table)} is in no manifest the server published`);
  const shape = readTableShape(table);
  const row = message[rowMember] as Obj;
  const values = new Map<string, PortableValue>();
  for (const [id, spec] of shape.fields) values.set(id, digestValue(spec, row[id] instanceof RawJson ? JSON.parse((row[id] as RawJson).text) : row[id]));
  const key = readKeyValue(shape.pkType, row[shape.pkFieldId]);
  const identity = encodeRowIdentity(shape.tableId, shape.pkFieldId, key);
  const digest = rowDigestFromParts(schemaHashRaw(schemaHash), identity, encodeRowBody(shape, values), String(message.server_version));
  message.row_checksum = checksumObject(digest);
}

/** The schema hash a message's row checksum is bound to: its outcome_schema, else the request's schema. */
function boundSchemaHash(message: Obj, exchange: Exchange): string {
  const outcomeSchema = message.outcome_schema as { hash?: string } | undefined;
  if (typeof outcomeSchema?.hash === 'string') return outcomeSchema.hash;
  const request = bodyOf(exchange.requestBody) as { schema?: { hash?: string } } | undefined;
  if (typeof request?.schema?.hash !== 'string') throw new Error('the request carries no schema hash to bind the row checksum to');
  return request.schema.hash;
}

export interface SetMemberRewrite {
  endpoint: Exclude<Endpoint, 'ready' | 'schema' | 'tables'>;
  clientId: string;
  pointer: string;
  value: unknown;
  recomputeChecksum: boolean;
}

/**
 * A proxy rule setting one member of the next matching 200 answer to
 * `clientId`. An answer whose body lacks the member's container (an empty
 * page) is passed on untouched and the rule waits for the next one.
 */
export function setMemberRule(proxy: WireProxy, spec: SetMemberRewrite): FaultRule {
  const describe = `set ${spec.pointer} to ${spec.value instanceof RawJson ? spec.value.text : JSON.stringify(spec.value)}${spec.recomputeChecksum ? ', row checksum recomputed' : ''}`;
  return {
    endpoint: spec.endpoint,
    when: (request) => (request as Obj | undefined)?.client_id === spec.clientId,
    fault: {
      kind: 'rewrite',
      describe,
      transform: (json: unknown, exchange: Exchange) => {
        const tables = publishedTables(proxy.exchanges);
        const pointer = resolveColumn(json, spec.pointer, tables);
        const tokens = pointerTokens(pointer);
        if (tokens.length > 0 && getPointer(json, toPointer(tokens.slice(0, -1))) === undefined) return undefined;
        const next = setPointer(json, pointer, spec.value);
        if (spec.recomputeChecksum) {
          const site = rowSite(tokens);
          if (site === undefined) throw new Error(`${spec.pointer} is not inside a row, so there is no row checksum to recompute`);
          const messagePointer = toPointer(site.messageTokens);
          recomputeRowChecksum(next, messagePointer, site.rowMember, boundSchemaHash(getPointer(next, messagePointer) as Obj, exchange), tables);
        }
        return next;
      },
    },
  };
}
