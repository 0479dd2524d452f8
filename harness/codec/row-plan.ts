/**
 * The per-table work of a row digest done once: each field's encoded name,
 * the identity prefix (domain, table ID, key field ID), the pointer paths used
 * in errors, and which column specs are already known to be valid. A table
 * shape is read once and then digests many rows, so this is kept per shape
 * object (shapes are not changed after readTableShape builds them).
 *
 * A shape that readTableShape would refuse (a body field without a spec, a
 * nullable or non-key key field, an ID with a lone surrogate) gets no plan:
 * the digest then takes the general path, which reports such defects exactly
 * as it always has.
 */
import { ByteWriter } from './byte-writer.ts';
import { pointer } from './errors.ts';
import { isKeyType, type PortableType, TYPE_TAGS } from './portable-types.ts';
import { ROW_ID_DOMAIN } from './row-identity.ts';
import type { TableShape } from './table-shape.ts';
import { WIRE_VALUE_WRITERS, type WireValueWriter } from './typed-value.ts';
import { isWellFormedText } from './unicode.ts';
import { type ColumnSpec, checkColumnSpec } from './wire-values.ts';

export interface RowPlan {
  /** Column specs in body order. */
  specs: readonly (ColumnSpec & { nullable: boolean })[];
  /** Whether each spec passes checkColumnSpec (a failing one is checked again per row, to report it in order). */
  specChecked: readonly boolean[];
  /** Each field's value writer (by its type), in body order. */
  writers: readonly WireValueWriter[];
  /** text(field_id) || type tag, in body order: the octets before each field's presence octet. */
  fieldHeaders: readonly Uint8Array[];
  /** JSON pointer of each field in a row read at the root. */
  rootPaths: readonly string[];
  /** Index of the key field in body order. */
  pkIndex: number;
  /** The spec a separate wire key is read with: the key's type, never null. */
  pkSpec: ColumnSpec;
  /** ROW_ID_DOMAIN || text(table_id) || text(pk_field_id). */
  identityPrefix: Uint8Array;
}

const plans = new WeakMap<TableShape, RowPlan | null>();

function fieldHeader(fieldId: string, type: PortableType): Uint8Array {
  const w = new ByteWriter(9 + fieldId.length * 3);
  w.utf8Blob(fieldId);
  w.u8(TYPE_TAGS[type]);
  return w.copy();
}

function buildPlan(shape: TableShape): RowPlan | null {
  const ids = [shape.tableId, shape.pkFieldId, ...shape.bodyOrder];
  if (ids.some((id) => id.length === 0 || !isWellFormedText(id))) return null;
  const specs: (ColumnSpec & { nullable: boolean })[] = [];
  for (const id of shape.bodyOrder) {
    const spec = shape.fields.get(id);
    if (spec === undefined) return null;
    specs.push(spec);
  }
  const pkIndex = shape.bodyOrder.indexOf(shape.pkFieldId);
  const pkSpec = specs[pkIndex];
  if (pkSpec === undefined || !isKeyType(pkSpec.type) || pkSpec.nullable !== false) return null;
  const specChecked = specs.map((spec) => {
    try {
      checkColumnSpec(spec);
      return true;
    } catch {
      return false;
    }
  });
  const prefix = new ByteWriter(64);
  prefix.bytes(ROW_ID_DOMAIN);
  prefix.utf8Blob(shape.tableId);
  prefix.utf8Blob(shape.pkFieldId);
  return {
    specs,
    specChecked,
    writers: specs.map((spec) => WIRE_VALUE_WRITERS[spec.type]),
    fieldHeaders: specs.map((spec, k) => fieldHeader(shape.bodyOrder[k] as string, spec.type)),
    rootPaths: shape.bodyOrder.map((id) => pointer('', id)),
    pkIndex,
    pkSpec: { type: shape.pkType, nullable: false },
    identityPrefix: prefix.copy(),
  };
}

// The last shape asked for and its plan: rows of one table arrive in long runs.
let lastShape: TableShape | undefined;
let lastPlan: RowPlan | null = null;

/** The shape's plan, or undefined when the shape needs the general path. */
export function rowPlan(shape: TableShape): RowPlan | undefined {
  if (shape === lastShape) return lastPlan ?? undefined;
  let plan = plans.get(shape);
  if (plan === undefined) {
    plan = buildPlan(shape);
    plans.set(shape, plan);
  }
  lastShape = shape;
  lastPlan = plan;
  return plan ?? undefined;
}
