/**
 * General rules on keys and rows (G3-G5) and on number spelling. They apply
 * to every message that carries typed keys or rows; the manifest each row is
 * bound to comes from the context.
 */
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
} from '../generated.ts';
import { keyValueProblem, portableValueProblem } from '../portable-values.ts';
import { childPointer } from '../json-reader.ts';
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
    const problem = keyValueProblem(keyField.type, value);
    if (problem !== undefined) out.push(violation('G3', childPointer(`${item.pointer}/pk`, name), problem));
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
    const fields = new Map(table.fields.map((f) => [f.field_id, f]));
    for (const [id, value] of Object.entries(item.row)) {
      const field = fields.get(id);
      if (field === undefined) {
        out.push(violation('G4', childPointer(at, id), 'row member is not a field of the table'));
        continue;
      }
      const problem = portableValueProblem(field, value);
      if (problem !== undefined) out.push(violation('G4', childPointer(at, id), problem));
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
