/**
 * A proxy rule that removes one member of the next pull answer to a client,
 * optionally recomputing the row checksum of the edited change as a sender
 * that took the removed column for null would, so that the missing column
 * is the only defect the client can find.
 */
import { checksumObject, encodeRowBody, encodeRowIdentity, type PortableValue, readKeyValue, readPortable, readTableShape, rowDigestFromParts, schemaHashRaw } from '../../../harness/codec/index.ts';
import type { FaultRule } from '../../../harness/proxy/faults.ts';
import type { WireProxy } from '../../../harness/proxy/proxy.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import { getPointer, pointerTokens, removePointer } from '../../../harness/proxy/rewrite.ts';
import { bodyOf } from '../exchanges.ts';
import { type Obj, publishedTables } from '../wire-values/recorded.ts';

const toPointer = (tokens: readonly string[]) => tokens.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

export function removeMemberRule(proxy: WireProxy, clientId: string, pointer: string, recompute: boolean): FaultRule {
  return {
    endpoint: 'pull',
    when: (request) => (request as Obj | undefined)?.client_id === clientId,
    fault: {
      kind: 'rewrite',
      describe: `remove ${pointer}${recompute ? ', row checksum recomputed with the column as null' : ''}`,
      transform: (json: unknown, exchange: Exchange) => {
        const tables = publishedTables(proxy.exchanges);
        let tokens = pointerTokens(pointer);
        const at = tokens.indexOf('row');
        const message = at > 0 ? (getPointer(json, toPointer(tokens.slice(0, at))) as Obj | undefined) : undefined;
        const table = message === undefined ? undefined : tables.get(String(message.table));
        // Inside a row a column may be named by its name; the wire row is keyed by field id.
        if (at > 0 && tokens.length === at + 2 && table !== undefined) {
          const field = table.fields.find((f) => f.name === tokens[at + 1]);
          if (field !== undefined) tokens = [...tokens.slice(0, at + 1), field.field_id];
        }
        // A page without the member (an empty page) passes untouched; the rule waits for the next one.
        if (getPointer(json, toPointer(tokens)) === undefined) return undefined;
        removePointer(json, toPointer(tokens));
        if (recompute) {
          if (message === undefined || table === undefined) throw new Error(`${pointer} is not inside a row, so there is no row checksum to recompute`);
          const hash = (bodyOf(exchange.requestBody) as { schema?: { hash?: string } } | undefined)?.schema?.hash;
          if (typeof hash !== 'string') throw new Error('the pull request carries no schema hash to bind the row checksum to');
          const shape = readTableShape(table);
          const row = message.row as Obj;
          const values = new Map<string, PortableValue>();
          for (const [id, spec] of shape.fields) values.set(id, row[id] === undefined ? ({ type: spec.type, value: null } as PortableValue) : readPortable(spec, row[id]));
          const identity = encodeRowIdentity(shape.tableId, shape.pkFieldId, readKeyValue(shape.pkType, row[shape.pkFieldId]));
          message.row_checksum = checksumObject(rowDigestFromParts(schemaHashRaw(hash), identity, encodeRowBody(shape, values), String(message.server_version)));
        }
        return json;
      },
    },
  };
}
