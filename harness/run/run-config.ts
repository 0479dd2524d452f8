/**
 * synchro-conformance.config.json: the project's default choice of adapters
 * and run options, so `synchro-conformance run` needs no flags. Flags given on
 * the command line win over the file.
 *
 *   { "server": "reference" | "<config.json>" | { inline adapter config },
 *     "client": same, "profile": "full", "tags": "...", "parallel": 2 }
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { AdapterSpec } from '../adapters/prepare.ts';
import { CodecError, isJsonObject, lineAt, parseJson, toPlain } from '../codec/index.ts';
import { InputError } from '../errors.ts';

export const RUN_CONFIG_FILE = 'synchro-conformance.config.json';

export interface RunConfig {
  server: AdapterSpec;
  client: AdapterSpec;
  profile?: string;
  tags?: string;
  parallel?: number;
  /** Directory the config's relative paths are resolved from. */
  dir: string;
}

const MEMBERS = new Set(['$schema', 'server', 'client', 'profile', 'tags', 'parallel']);

function adapterSpec(file: string, text: string, role: 'server' | 'client', value: unknown, offset: number | undefined): AdapterSpec {
  if (value === undefined) return 'reference';
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { config: value, file };
  throw new InputError(file, offset === undefined ? undefined : lineAt(text, offset), `"${role}" must be an adapter id, a config file path or an inline adapter config object`, `write e.g. "${role}": "reference"`);
}

/** Reads the run config, or the defaults (the reference pair) when the file does not exist. */
export function loadRunConfig(file: string, required: boolean): RunConfig {
  const dir = dirname(resolve(file));
  if (!existsSync(file)) {
    if (required) throw new InputError(file, undefined, 'the run config does not exist', 'give --config an existing file or leave it out');
    return { server: 'reference', client: 'reference', dir };
  }
  const text = readFileSync(file, 'utf8');
  const positions = new WeakMap<object, number>();
  let parsed: ReturnType<typeof parseJson>;
  try {
    parsed = parseJson(text, { positions });
  } catch (error) {
    const offset = error instanceof CodecError ? error.offset : undefined;
    throw new InputError(file, offset === undefined ? undefined : lineAt(text, offset), `not valid JSON: ${(error as Error).message}`, 'fix the JSON syntax');
  }
  if (!isJsonObject(parsed)) throw new InputError(file, 1, 'the run config must be a JSON object', 'write {"server": "reference", "client": "reference"}');
  const offsetOf = (key: string) => {
    const member = parsed[key];
    return typeof member === 'object' && member !== null ? positions.get(member) : positions.get(parsed);
  };
  for (const key of Object.keys(parsed)) {
    if (!MEMBERS.has(key)) throw new InputError(file, lineAt(text, positions.get(parsed) ?? 0), `unknown member "${key}"`, `use only ${[...MEMBERS].join(', ')}`);
  }
  const plain = toPlain(parsed) as Record<string, unknown>;
  const config: RunConfig = {
    server: adapterSpec(file, text, 'server', plain.server, offsetOf('server')),
    client: adapterSpec(file, text, 'client', plain.client, offsetOf('client')),
    dir,
  };
  if (plain.profile !== undefined) {
    if (typeof plain.profile !== 'string') throw new InputError(file, undefined, '"profile" must be a string', 'use "server", "client" or "full"');
    config.profile = plain.profile;
  }
  if (plain.tags !== undefined) {
    if (typeof plain.tags !== 'string') throw new InputError(file, undefined, '"tags" must be a tag expression string', 'write e.g. "tags": "@server and not @slow"');
    config.tags = plain.tags;
  }
  if (plain.parallel !== undefined) {
    if (!Number.isInteger(plain.parallel) || (plain.parallel as number) < 1 || (plain.parallel as number) > 64) throw new InputError(file, undefined, '"parallel" must be a whole number from 1 to 64', 'write e.g. "parallel": 2');
    config.parallel = plain.parallel as number;
  }
  return config;
}
