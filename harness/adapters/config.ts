/**
 * Adapter configuration files: how a third-party server or client is
 * described to the harness (schemas/adapter-config.schema.json). A malformed
 * file, an unknown capability or a missing member is an InputError naming the
 * file, the line and the fix, raised before any scenario runs.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CodecError, isJsonObject, type JsonValue, lineAt, parseJson, toPlain } from '../codec/index.ts';
import { InputError } from '../errors.ts';
import { describeErrors, SCHEMA_DIR } from '../json-schema.ts';
import type { ClientCapability, ServerCapability } from './capabilities.ts';
import { CLIENT_CAPABILITIES, SERVER_CAPABILITIES } from './capabilities.ts';
import type { ClientForm, ServerForm } from './forms.ts';
import type { DatabaseRole, SeedArtifactInterceptPoint } from './server.ts';
import type { AuthConfig } from './token.ts';

export interface HttpServerConfig {
  role: 'server';
  kind: 'http';
  id: string;
  description?: string;
  baseUrl: string;
  auth: AuthConfig;
  databaseUrl?: string;
  /** Optional: a DSN per database role (a Synchro group or `public`), of a login in that role only; backs `sourceSql.asRole`. */
  roleDatabaseUrls?: Partial<Record<DatabaseRole, string>>;
  /** Base URL of the server's control protocol (docs/control-protocol.md); its capabilities document is at `<controlUrl>/capabilities`. */
  controlUrl?: string;
  resetCommand?: string[];
  /** A seed artifact builder command backing `seed.exportArtifact` (docs/adapters.md, "A seed artifact builder command"). */
  seedArtifact?: { command: string[]; intercepts?: SeedArtifactInterceptPoint[] };
  capabilities?: ServerCapability[];
  /** What the server is built as (harness/adapters/forms.ts). */
  forms?: ServerForm[];
}

/** A TypeScript adapter module named in a config (docs/adapters.md, Writing a TypeScript adapter). */
export interface ModuleServerConfig {
  role: 'server';
  kind: 'module';
  id: string;
  description?: string;
  /** Path of the module, relative to the config file. */
  module: string;
  options?: Record<string, unknown>;
  capabilities: ServerCapability[];
  forms?: ServerForm[];
}

export interface ProcessClientConfig {
  role: 'client';
  kind: 'process';
  id: string;
  description?: string;
  command: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** How long the first start may take before the adapter is refused (default CLIENT_STARTUP_DEADLINE_MS). */
  startupDeadlineMs?: number;
  capabilities?: ClientCapability[];
  /** What the client is built as (harness/adapters/forms.ts). */
  forms?: ClientForm[];
}

export type AdapterConfig = HttpServerConfig | ModuleServerConfig | ProcessClientConfig;

const SCHEMA_ID = 'https://synchro.dev/schemas/v3/adapter-config.schema.json';
/** The schema definition a config is checked against: by role, and for a server by its kind. */
function definitionName(role: 'server' | 'client', kind: unknown): string {
  if (role === 'client') return 'processClient';
  return kind === 'module' ? 'moduleServer' : 'httpServer';
}
let ajv: Ajv2020 | undefined;

function definition(name: string) {
  if (!ajv) {
    ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
    ajv.addSchema(JSON.parse(readFileSync(`${SCHEMA_DIR}adapter-config.schema.json`, 'utf8')) as object);
  }
  const validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/${name}`);
  if (!validate) throw new Error(`adapter-config schema has no definition ${name}`);
  return validate;
}

/** Line of the innermost object or array on the way to `pointer`. */
function lineOf(text: string, root: JsonValue, positions: WeakMap<object, number>, pointer: string): number | undefined {
  let node: JsonValue | undefined = root;
  let offset = typeof root === 'object' && root !== null ? positions.get(root) : undefined;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    const parentIsObject = isJsonObject(node);
    node = Array.isArray(node) ? node[Number(key)] : isJsonObject(node) ? node[key] : undefined;
    if (isJsonObject(node) || Array.isArray(node)) offset = positions.get(node) ?? offset;
    else if (parentIsObject && offset !== undefined) {
      // Only objects and arrays carry positions: a scalar member is found by its key after its object's start.
      const member = new RegExp(`${JSON.stringify(key).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*:`, 'g');
      member.lastIndex = offset;
      offset = member.exec(text)?.index ?? offset;
    }
  }
  return offset === undefined ? undefined : lineAt(text, offset);
}

/** Validates a parsed config of the expected role; `file` and `text` locate errors. */
export function checkAdapterConfig(role: 'server' | 'client', value: JsonValue, file: string, text: string, positions: WeakMap<object, number>): AdapterConfig {
  const plain = toPlain(value);
  if (!isJsonObject(value)) throw new InputError(file, 1, `an adapter config must be a JSON object`, `write an object such as {"role": "${role}", ...} (see docs/adapters.md)`);
  const declaredRole = (plain as Record<string, unknown>).role;
  if (declaredRole !== role) {
    throw new InputError(file, lineOf(text, value, positions, ''), `this config has role ${JSON.stringify(declaredRole)} but was given as the ${role} adapter`, `set "role": "${role}" or pass the file to --${declaredRole === 'client' ? 'client' : 'server'}`);
  }
  const capabilities = (plain as Record<string, unknown>).capabilities;
  const known: readonly string[] = role === 'server' ? SERVER_CAPABILITIES : CLIENT_CAPABILITIES;
  if (Array.isArray(capabilities)) {
    capabilities.forEach((name, index) => {
      if (typeof name === 'string' && !known.includes(name)) {
        throw new InputError(file, lineOf(text, value, positions, `/capabilities/${index}`), `unknown ${role} capability "${name}"`, `use only ${known.join(', ')}`);
      }
    });
  }
  const validate = definition(definitionName(role, (plain as Record<string, unknown>).kind));
  if (!validate(plain)) {
    const [first, ...rest] = describeErrors(validate.errors ?? []);
    const where = first?.pointer ?? '';
    const more = rest.length > 0 ? ` (and ${rest.length} more: ${rest.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')})` : '';
    throw new InputError(file, lineOf(text, value, positions, where), `${where || 'the config'} ${first?.message ?? 'is invalid'}${more}`, 'follow schemas/adapter-config.schema.json (docs/adapters.md has examples)');
  }
  return plain as AdapterConfig;
}

/** Reads and checks an adapter config file. */
export function loadAdapterConfig(role: 'server' | 'client', file: string): AdapterConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the adapter config (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, `give --${role} an adapter id such as "reference" or the path of an existing JSON config`);
  }
  const positions = new WeakMap<object, number>();
  let value: JsonValue;
  try {
    value = parseJson(text, { positions });
  } catch (error) {
    const offset = error instanceof CodecError ? error.offset : undefined;
    throw new InputError(file, offset === undefined ? undefined : lineAt(text, offset), `not valid JSON: ${(error as Error).message}`, 'fix the JSON syntax (one object, no duplicate member names, no trailing commas)');
  }
  return checkAdapterConfig(role, value, file, text, positions);
}
