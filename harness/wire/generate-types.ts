/**
 * Produces the TypeScript types of every wire message from `schemas/` with
 * json-schema-to-typescript. One synthetic root schema points at every kind so
 * that shared definitions (SchemaRef, ChecksumObject, ...) are emitted once.
 * Output is deterministic: the same schemas always give the same text.
 */
import { compile } from 'json-schema-to-typescript';
import { loadWireSchemas, schemaIdOf, WIRE_KINDS, WIRE_SCHEMA_BASE } from './schema-files.ts';

export const GENERATED_TYPES_PATH = new URL('./generated.ts', import.meta.url);

/** The header of every file generated from the schemas. */
export const GENERATED_BANNER = [
  '/**',
  ' * Generated from schemas/*.schema.json by scripts/generate-wire-types.ts.',
  ' * Do not edit by hand: change the schema and run `npm run generate`.',
  ' */',
].join('\n');

export async function generateWireTypes(): Promise<string> {
  const files = new Map(loadWireSchemas().map(({ name, schema }) => [schemaIdOf(name), schema]));
  const root = {
    title: 'WireMessages',
    description: 'Every wire message kind, keyed by kind name.',
    type: 'object',
    additionalProperties: false,
    required: [...WIRE_KINDS],
    properties: Object.fromEntries(WIRE_KINDS.map((kind) => [kind, { $ref: schemaIdOf(kind) }])),
  };
  const text = await compile(root as never, 'WireMessages', {
    bannerComment: GENERATED_BANNER,
    additionalProperties: false,
    strictIndexSignatures: true,
    unknownAny: true,
    format: true,
    style: { singleQuote: true, printWidth: 100 },
    $refOptions: {
      resolve: {
        // Schemas refer to each other by $id; read them from disk, never from the network.
        http: false,
        synchro: {
          order: 1,
          canRead: (file: { url: string }) => file.url.startsWith(WIRE_SCHEMA_BASE),
          read: (file: { url: string }) => {
            const schema = files.get(file.url.split('#')[0] ?? '');
            if (schema === undefined) throw new Error(`no wire schema with $id ${file.url}`);
            return JSON.stringify(schema);
          },
        },
      },
    } as never,
  });
  return text;
}
