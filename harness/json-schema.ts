/**
 * Compiles one of the project's own JSON Schemas (invariants.yaml, reports,
 * vector packs, adapter configs) with the same strict ajv settings the wire
 * validators use, and turns its errors into located, readable messages.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { explainSchemaError } from './wire/validate.ts';

// ajv-formats is CommonJS; its default export arrives wrapped once under ESM.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export const SCHEMA_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));

export interface SchemaProblem {
  /** JSON pointer of the offending value. */
  pointer: string;
  message: string;
}

export type SchemaCheck = (value: unknown) => SchemaProblem[];

/** Loads `schemas/<name>` and returns a function listing every problem of a value. */
export function compileProjectSchema(name: string): SchemaCheck {
  const schema = JSON.parse(readFileSync(`${SCHEMA_DIR}${name}`, 'utf8')) as object;
  // allowUnionTypes: report fields such as a reason are "string or null".
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  return (value) => (validate(value) ? [] : describeErrors(validate.errors ?? []));
}

/** One message per failing location, preferring the most specific ajv error. */
export function describeErrors(errors: ErrorObject[]): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    // The oneOf summary repeats what its branches said; keep the branches.
    if (error.keyword === 'oneOf' || error.keyword === 'if') continue;
    const message = explainSchemaError(error);
    const key = `${error.instancePath} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ pointer: error.instancePath, message });
  }
  return problems;
}
