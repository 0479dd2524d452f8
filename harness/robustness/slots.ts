/**
 * Where a request can be broken, read from the wire JSON Schemas: the schema
 * of an endpoint is walked alongside a valid request of it, and every member
 * value and every member name becomes a slot that knows what its schema
 * allows there (JSON types, integer range or constant, whether the text is
 * constrained by a pattern, whether the member is required and whether its
 * object refuses unknown members). The profile's generators pick slots by
 * index, so a generated case shrinks towards the first slot.
 */
import { loadWireSchemas, schemaIdOf } from '../wire/schema-files.ts';

type Schema = Record<string, unknown>;
export type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

export interface Slot {
  /** Member names and array indexes from the request root to the value (or to the member, for a name slot). */
  path: (string | number)[];
  /** `value`: the value at `path`; `name`: the name of the member at `path` (its value stays). */
  target: 'value' | 'name';
  /** JSON types the schema allows at this place. */
  types: ReadonlySet<JsonType>;
  /** Integer bounds or the one integer allowed (`const`), for integer slots. */
  integer?: { minimum?: number; maximum?: number; only?: number };
  /** Whether the text must match a pattern, constant or list (so almost any change breaks it). */
  constrainedText: boolean;
  /** Whether removing this member breaks the schema. */
  required: boolean;
  /** For object values: whether unknown members are refused (otherwise it is a map of some value schema). */
  closed?: boolean;
  /** For arrays and maps: the most items or members the schema allows. */
  maxCount?: number;
}

let schemasById: Map<string, Schema> | undefined;

function byId(): Map<string, Schema> {
  schemasById ??= new Map(loadWireSchemas().map(({ schema }) => [String(schema.$id), schema]));
  return schemasById;
}

interface Located {
  schema: Schema;
  /** The `$id` of the document it came from, for resolving relative references. */
  base: string;
}

function deref(located: Located): Located {
  let current = located;
  for (let hops = 0; typeof current.schema.$ref === 'string' && hops < 20; hops++) {
    const ref = current.schema.$ref as string;
    const [file, fragment = ''] = ref.split('#');
    const base = file === '' || file === undefined ? current.base : file;
    let target: unknown = byId().get(base);
    for (const part of fragment.split('/').filter((p) => p !== '')) target = (target as Schema | undefined)?.[part];
    if (target === undefined) throw new Error(`the wire schemas have no ${ref} (from ${current.base})`);
    current = { schema: target as Schema, base };
  }
  return current;
}

function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

function typesOf(located: Located): Set<JsonType> {
  const { schema } = deref(located);
  const here = deref(located);
  if (schema.const !== undefined) return new Set([jsonTypeOf(schema.const)]);
  if (Array.isArray(schema.enum)) return new Set((schema.enum as unknown[]).map(jsonTypeOf));
  if (Array.isArray(schema.oneOf)) return new Set((schema.oneOf as Schema[]).flatMap((branch) => [...typesOf({ schema: branch, base: here.base })]));
  const declared = schema.type;
  if (typeof declared === 'string') return new Set([declared as JsonType]);
  if (Array.isArray(declared)) return new Set(declared as JsonType[]);
  if (Array.isArray(schema.allOf)) return typesOf({ schema: (schema.allOf as Schema[])[0] as Schema, base: here.base });
  return new Set(['null', 'boolean', 'integer', 'number', 'string', 'array', 'object']);
}

/** The `oneOf` branch the (valid) value takes: by JSON type, then by a constant member such as `op`. */
function branchFor(located: Located, value: unknown): Located {
  const here = deref(located);
  const branches = here.schema.oneOf;
  if (!Array.isArray(branches)) return here;
  const candidates = (branches as Schema[]).map((branch) => deref({ schema: branch, base: here.base })).filter((b) => typesOf(b).has(jsonTypeOf(value)) || (jsonTypeOf(value) === 'integer' && typesOf(b).has('number')));
  const byConstant = candidates.find((b) => {
    const properties = b.schema.properties as Record<string, Schema> | undefined;
    if (properties === undefined || typeof value !== 'object' || value === null) return false;
    return Object.entries(properties).every(([name, p]) => p.const === undefined || (value as Record<string, unknown>)[name] === p.const);
  });
  return byConstant ?? candidates[0] ?? here;
}

/** The schema of a member `name` of an object: its declared property, else the additional-members schema. */
function memberSchema(located: Located, name: string): Located | undefined {
  const here = deref(located);
  const all = [here, ...((here.schema.allOf as Schema[] | undefined) ?? []).map((s) => deref({ schema: s, base: here.base }))];
  for (const part of all) {
    const property = (part.schema.properties as Record<string, Schema> | undefined)?.[name];
    if (property !== undefined) return { schema: property, base: part.base };
  }
  for (const part of all) {
    const extra = part.schema.additionalProperties;
    if (typeof extra === 'object' && extra !== null) return { schema: extra as Schema, base: part.base };
  }
  return undefined;
}

function requiredOf(located: Located): Set<string> {
  const here = deref(located);
  const all = [here, ...((here.schema.allOf as Schema[] | undefined) ?? []).map((s) => deref({ schema: s, base: here.base }))];
  return new Set(all.flatMap((part) => (part.schema.required as string[] | undefined) ?? []));
}

function isClosed(located: Located): boolean {
  const here = deref(located);
  return here.schema.additionalProperties === false || ((here.schema.allOf as Schema[] | undefined) ?? []).some((s) => deref({ schema: s, base: here.base }).schema.additionalProperties === false);
}

function integerInfo(located: Located): Slot['integer'] {
  const { schema } = deref(located);
  if (typeof schema.const === 'number') return { only: schema.const };
  const bounds: NonNullable<Slot['integer']> = {};
  if (typeof schema.minimum === 'number') bounds.minimum = schema.minimum;
  if (typeof schema.maximum === 'number') bounds.maximum = schema.maximum;
  return bounds;
}

function maxCountOf(located: Located, keyword: 'maxItems' | 'maxProperties'): number | undefined {
  const here = deref(located);
  const all = [here, ...((here.schema.allOf as Schema[] | undefined) ?? []).map((s) => deref({ schema: s, base: here.base }))];
  const bounds = all.map((part) => part.schema[keyword]).filter((n): n is number => typeof n === 'number');
  return bounds.length === 0 ? undefined : Math.min(...bounds);
}

function textConstrained(located: Located): boolean {
  const { schema } = deref(located);
  return typeof schema.pattern === 'string' || schema.const !== undefined || Array.isArray(schema.enum) || typeof schema.format === 'string';
}

function walk(value: unknown, located: Located, path: (string | number)[], required: boolean, out: Slot[]): void {
  const here = branchFor(located, value);
  const type = jsonTypeOf(value);
  const slot: Slot = { path, target: 'value', types: typesOf(located), constrainedText: type === 'string' && textConstrained(here), required };
  if (type === 'integer') slot.integer = integerInfo(here);
  if (type === 'object') slot.closed = isClosed(here);
  const maxCount = type === 'array' ? maxCountOf(here, 'maxItems') : type === 'object' ? maxCountOf(here, 'maxProperties') : undefined;
  if (maxCount !== undefined) slot.maxCount = maxCount;
  out.push(slot);
  if (type === 'array') {
    const items = here.schema.items as Schema | undefined;
    (value as unknown[]).forEach((item, index) => {
      if (items !== undefined) walk(item, { schema: items, base: here.base }, [...path, index], false, out);
    });
  }
  if (type === 'object') {
    const requiredNames = requiredOf(here);
    for (const [name, member] of Object.entries(value as Record<string, unknown>)) {
      const child = memberSchema(here, name);
      if (child === undefined) continue;
      // A member of a map has a name the server gave meaning to (a scope, a field, a key field): break it too.
      if (!slot.closed) out.push({ path: [...path, name], target: 'name', types: new Set(['string']), constrainedText: false, required: false });
      walk(member, child, [...path, name], requiredNames.has(name), out);
    }
  }
}

/** Every slot of a valid request of the endpoint's message kind, root first. */
export function slotsOf(kind: 'connect-request' | 'push-request' | 'pull-request' | 'rebuild-request', request: unknown): Slot[] {
  const root = byId().get(schemaIdOf(kind));
  if (root === undefined) throw new Error(`no wire schema for ${kind}`);
  const out: Slot[] = [];
  walk(request, { schema: root, base: schemaIdOf(kind) }, [], true, out);
  return out;
}

/** JSON pointer of a slot, with `#name` for a member-name slot. */
export function pointerOf(slot: Slot): string {
  const pointer = slot.path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
  return slot.target === 'name' ? `${pointer}#name` : pointer || '/';
}
