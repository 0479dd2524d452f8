/**
 * Reads a vector pack: strict JSON (exact number text, no duplicate members),
 * then the pack JSON Schema, then, for an upstream-format pack, its aggregate
 * hash. Any problem becomes an InputError naming the file, the line of the
 * offending vector when it can be found, and a fix.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { CodecError, isJsonObject, type JsonObject, type JsonValue, lineAt, parseJson, toPlain } from '../codec/index.ts';
import { InputError } from '../errors.ts';
import { verifyAggregate } from './aggregate.ts';

export const PACK_SCHEMA_URL = new URL('../../schemas/vector-pack.schema.json', import.meta.url);

export interface PackVector {
  vector: JsonObject;
  /** 1-based line where the vector's object starts. */
  line: number;
}

/** `synchro`: this project's format; `upstream`: the upstream canonical format (inputs as JSON text, an aggregate hash). */
export type PackFormat = 'synchro' | 'upstream';

export interface LoadedPack {
  /** The path as given (used in messages). */
  file: string;
  bytes: Uint8Array;
  /** SHA-256 of the file's bytes, lowercase hex. */
  sha256: string;
  vectorSetId: string;
  format: PackFormat;
  /** Upstream packs: the verified aggregate sha256. */
  aggregate?: string;
  vectors: PackVector[];
}

let validator: ReturnType<Ajv2020['compile']> | undefined;

function packValidator(): ReturnType<Ajv2020['compile']> {
  if (validator === undefined) {
    const schema = JSON.parse(readFileSync(PACK_SCHEMA_URL, 'utf8')) as object;
    validator = new Ajv2020({ strict: true, allErrors: false }).compile(schema);
  }
  return validator;
}

/** Follows a JSON pointer and returns the line of the deepest object or array on the way. */
function lineOfPointer(text: string, root: JsonValue, positions: WeakMap<object, number>, instancePath: string): number | undefined {
  const segments = instancePath === '' ? [] : instancePath.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  let node: JsonValue | undefined = root;
  let offset = typeof root === 'object' && root !== null ? positions.get(root) : undefined;
  // Report the vector's own line when the problem is inside one vector.
  const stopAt = segments[0] === 'vectors' && segments.length >= 2 ? 2 : segments.length;
  for (const seg of segments.slice(0, stopAt)) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (isJsonObject(node)) node = node[seg];
    else break;
    if (typeof node === 'object' && node !== null) offset = positions.get(node) ?? offset;
  }
  return offset === undefined ? undefined : lineAt(text, offset);
}

function describeSchemaError(e: ErrorObject): string {
  const where = e.instancePath === '' ? 'the pack' : e.instancePath;
  return `${where} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length > 0 ? ` (${JSON.stringify(e.params)})` : ''}`;
}

export function loadPack(file: string): LoadedPack {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new InputError(file, undefined, `cannot read the vector pack (${(e as Error).message})`, 'pass the path of an existing vector pack JSON file');
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InputError(file, undefined, 'the file is not valid UTF-8', 'save the pack as UTF-8 JSON');
  }
  const positions = new WeakMap<object, number>();
  let tree: JsonValue;
  try {
    tree = parseJson(text, { positions, maxDepth: 512, maxValues: Number.MAX_SAFE_INTEGER });
  } catch (e) {
    if (e instanceof CodecError) {
      const line = e.offset === undefined ? undefined : lineAt(text, e.offset);
      throw new InputError(file, line, `not strict JSON: ${e.message}`, 'write one JSON object with unique member names and no trailing data');
    }
    throw e;
  }
  const validate = packValidator();
  if (!validate(toPlain(tree))) {
    const first = validate.errors?.[0];
    const line = first === undefined ? undefined : lineOfPointer(text, tree, positions, first.instancePath);
    throw new InputError(
      file,
      line,
      `does not match schemas/vector-pack.schema.json: ${first === undefined ? 'invalid' : describeSchemaError(first)}`,
      'correct the vector so it has the members its kind requires (see schemas/vector-pack.schema.json and vectors/README.md)',
    );
  }
  const pack = tree as JsonObject;
  const format: PackFormat = Object.hasOwn(pack, 'aggregate') ? 'upstream' : 'synchro';
  const list = pack.vectors as JsonObject[];
  const seen = new Map<string, number>();
  const vectors = list.map((vector) => {
    const line = lineAt(text, positions.get(vector) ?? 0);
    const id = vector.vector_id as string;
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      throw new InputError(file, line, `vector_id ${id} is used twice (first on line ${earlier})`, 'give every vector in a pack its own vector_id');
    }
    seen.set(id, line);
    return { vector, line };
  });
  const loaded: LoadedPack = {
    file,
    bytes,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    vectorSetId: pack.vector_set_id as string,
    format,
    vectors,
  };
  if (format === 'upstream') loaded.aggregate = verifyAggregate(file, text, positions, pack);
  return loaded;
}
