/**
 * Where the wire JSON Schemas live and which message kind each file describes.
 * A kind name is the file name without `.schema.json`, so `push-request`
 * is `schemas/push-request.schema.json`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const WIRE_SCHEMA_DIR = fileURLToPath(new URL('../../schemas/', import.meta.url));
export const WIRE_SCHEMA_BASE = 'https://synchro.dev/schemas/v3/';

export const WIRE_KINDS = [
  'connect-request',
  'connect-response',
  'push-request',
  'push-response',
  'pull-request',
  'pull-response',
  'rebuild-request',
  'rebuild-response',
  'error-response',
  'ready-response',
  'schema-response',
  'tables-response',
  'schema-manifest',
] as const;

export type WireKind = (typeof WIRE_KINDS)[number];

/** Definition-only files: referenced by the message schemas, never a kind of their own. */
export const DEFINITION_FILES = ['common'] as const;

export function isWireKind(name: string): name is WireKind {
  return (WIRE_KINDS as readonly string[]).includes(name);
}

export function schemaIdOf(name: string): string {
  return `${WIRE_SCHEMA_BASE}${name}.schema.json`;
}

/** Every wire schema file (definitions first), parsed. */
export function loadWireSchemas(): Array<{ name: string; schema: Record<string, unknown> }> {
  return [...DEFINITION_FILES, ...WIRE_KINDS].map((name) => ({
    name,
    schema: JSON.parse(readFileSync(`${WIRE_SCHEMA_DIR}${name}.schema.json`, 'utf8')) as Record<string, unknown>,
  }));
}
