/**
 * General rules on keys and rows (G3-G5) and on number spelling. They apply
 * to every message that carries typed keys or rows; the manifest each row is
 * bound to comes from the context. Values are judged by the codec's portable
 * value readers, the same ones the reference uses at its boundaries.
 */
import {
  CodecError,
  pointer as childPointer,
  PROTOCOL_JSON_LIMITS,
  readKeyValue,
  readPortable,
  readTableShape,
  type TableShape,
} from '../../codec/index.ts';
import type {
  ChecksumObject,
  PrimaryKey,
  PullRequest,
  PullResponse,
  PushRequest,
  PushResponse,
  RebuildRequest,
  RebuildResponse,
  Row,
  SchemaManifest,
  TableSchema,
} from '../generated.ts';
import { validate } from '../validate.ts';
import { findManifest, type RuleContext, type Violation, violation } from './context.ts';

/** One key (and perhaps row) found in a message, with the manifest it is bound to. */
export interface KeyedItem {
  pointer: string;
  table: string;
  pk: PrimaryKey;
  row: Row | undefined;
  rowMember: string;
  checksum: ChecksumObject | undefined;
  serverVersion: string | undefined;
  manifest: SchemaManifest | undefined;
  /** Push requests may name tables the current schema no longer has; that is an outcome, not a wire error. */
  tableMayBeUnknown: boolean;
}

/** The manifest a pull or rebuild page is bound to: the request's schema, or the only manifest given. */
function pageManifest(ctx: RuleContext, requestKind: 'pull-request' | 'rebuild-request'): SchemaManifest | undefined {
  const request = ctx.request === undefined ? undefined : validate(requestKind, ctx.request);
  if (request?.ok) return findManifest(ctx, (request.value as PullRequest | RebuildRequest).schema);
  return ctx.manifests?.length === 1 ? ctx.manifests[0] : undefined;
}

export function keyedItems(kind: string, value: unknown, ctx: RuleContext): KeyedItem[] {
  switch (kind) {
    case 'push-request': {
      const request = value as PushRequest;
      const manifest = findManifest(ctx, request.schema);
      return request.mutations.map((m, i) => ({
        pointer: `/mutations/${i}`, table: m.table, pk: m.pk, row: undefined, rowMember: 'columns',
        checksum: undefined, serverVersion: undefined, manifest, tableMayBeUnknown: true,
      }));
    }
    case 'push-response': {
      const response = value as PushResponse;
      const accepted = response.accepted.map((o, i) => ({ o, pointer: `/accepted/${i}` }));
      const rejected = response.rejected.map((o, i) => ({ o, pointer: `/rejected/${i}` }));
      return [...accepted, ...rejected]
        .filter(({ o }) => o.status !== 'rejected_terminal')
        .map(({ o, pointer }) => {
          const rowBearing = o as { server_row?: Row; row_checksum?: ChecksumObject; server_version?: string };
          return {
            pointer, table: o.table, pk: o.pk, row: rowBearing.server_row, rowMember: 'server_row',
            checksum: rowBearing.row_checksum, serverVersion: rowBearing.server_version,
            manifest: findManifest(ctx, o.outcome_schema), tableMayBeUnknown: false,
          };
        });
    }
    case 'pull-response': {
      const manifest = pageManifest(ctx, 'pull-request');
      return (value as PullResponse).changes.map((c, i) => ({
        pointer: `/changes/${i}`, table: c.table, pk: c.pk, row: c.row, rowMember: 'row',
        checksum: c.row_checksum, serverVersion: c.server_version, manifest, tableMayBeUnknown: false,
      }));
    }
    case 'rebuild-response': {
      const manifest = pageManifest(ctx, 'rebuild-request');
      return (value as RebuildResponse).records.map((r, i) => ({
        pointer: `/records/${i}`, table: r.table, pk: r.pk, row: r.row, rowMember: 'row',
        checksum: r.row_checksum, serverVersion: r.server_version, manifest, tableMayBeUnknown: false,
      }));
    }
    default:
      return [];
  }
}

/** Why the codec refuses what `read` reads, or undefined when it accepts it. */
function refusal(read: () => unknown): string | undefined {
  try {
    read();
    return undefined;
  } catch (e) {
    if (e instanceof CodecError) return e.message;
    throw e;
  }
}

const shapes = new WeakMap<TableSchema, TableShape | CodecError>();

/** The codec's reading of a manifest table (field types, nullability, decimal parameters), once per table object. */
function shapeOf(table: TableSchema): TableShape | CodecError {
  let shape = shapes.get(table);
  if (shape === undefined) {
    try {
      shape = readTableShape(table);
    } catch (e) {
      if (!(e instanceof CodecError)) throw e;
      shape = e;
    }
    shapes.set(table, shape);
  }
  return shape;
}

/** G3: the key has exactly the table's key field, with a value of the key's type. */
export function primaryKeyMatchesManifest(items: KeyedItem[], ctx: RuleContext): Violation[] | undefined {
  if (ctx.manifests === undefined) return undefined;
  const out: Violation[] = [];
  for (const item of items) {
    if (item.manifest === undefined) continue;
    const table = item.manifest.tables.find((t) => t.table_id === item.table);
    if (table === undefined) {
      if (!item.tableMayBeUnknown) out.push(violation('G3', `${item.pointer}/table`, 'table is not in the bound manifest'));
      continue;
    }
    const entries = Object.entries(item.pk);
    const [name, value] = entries[0] ?? [];
    const keyField = table.fields.find((f) => f.field_id === table.primary_key_field_id);
    if (entries.length !== 1 || name !== table.primary_key_field_id || keyField === undefined) {
      out.push(violation('G3', `${item.pointer}/pk`, `pk must have exactly the member "${table.primary_key_field_id}"`));
      continue;
    }
    const at = childPointer(`${item.pointer}/pk`, name);
    const problem = refusal(() => readKeyValue(keyField.type, value, at));
    if (problem !== undefined) out.push(violation('G3', at, problem));
  }
  return out;
}

/** G4: a row has every field of its table once, each value valid for its type, and its key equals pk. */
export function rowMatchesManifest(items: KeyedItem[], ctx: RuleContext): Violation[] | undefined {
  if (ctx.manifests === undefined) return undefined;
  const out: Violation[] = [];
  for (const item of items) {
    const table = item.manifest?.tables.find((t) => t.table_id === item.table);
    if (item.row === undefined || table === undefined) continue;
    const at = `${item.pointer}/${item.rowMember}`;
    const shape = shapeOf(table);
    if (shape instanceof CodecError) {
      out.push(violation('G4', at, `the row cannot be judged: its manifest table is invalid (${shape.message})`));
      continue;
    }
    const { fields } = shape;
    for (const [id, value] of Object.entries(item.row)) {
      const spec = fields.get(id);
      const where = childPointer(at, id);
      if (spec === undefined) {
        out.push(violation('G4', where, 'row member is not a field of the table'));
        continue;
      }
      // Upstream's nesting and size bounds for json values are Impl facts, so they are not held against a row here.
      const problem = refusal(() => readPortable(spec, value, where, PROTOCOL_JSON_LIMITS));
      if (problem !== undefined) out.push(violation('G4', where, problem));
    }
    for (const id of fields.keys()) {
      if (!Object.hasOwn(item.row, id)) out.push(violation('G4', at, `row lacks field "${id}"`));
    }
    const keyName = table.primary_key_field_id;
    if (Object.hasOwn(item.row, keyName) && item.row[keyName] !== item.pk[keyName]) {
      out.push(violation('G4', childPointer(at, keyName), 'row key differs from pk'));
    }
  }
  return out;
}

/** G5: each row digest equals the digest recomputed under its manifest and server_version. */
export function rowChecksumVerifies(items: KeyedItem[], ctx: RuleContext): Violation[] | undefined {
  const digest = ctx.rowDigest;
  if (digest === undefined || ctx.manifests === undefined) return undefined;
  const out: Violation[] = [];
  for (const item of items) {
    if (item.row === undefined || item.checksum === undefined || item.serverVersion === undefined || item.manifest === undefined) continue;
    const expected = digest({ manifest: item.manifest, table: item.table, pk: item.pk, row: item.row, serverVersion: item.serverVersion });
    if (expected !== item.checksum.digest) out.push(violation('G5', `${item.pointer}/row_checksum/digest`, 'row digest does not match the row'));
  }
  return out;
}

/**
 * N1: every number token is spelled as the RFC 8785 text of its value. For
 * envelope integers this forbids fractions and exponents (`1.0`, `1e0`); for
 * float values it is the canonical float form; `-0` is never valid.
 */
export function numberTokensCanonical(ctx: RuleContext): Violation[] | undefined {
  if (ctx.read === undefined) return undefined;
  return ctx.read.nonCanonicalNumbers.map((n) =>
    violation('N1', n.pointer, `number ${n.text} is not written in its canonical form ${String(Number(n.text))}`),
  );
}
