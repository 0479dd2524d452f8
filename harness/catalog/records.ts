/**
 * Loads invariants.yaml: the requirement records, each binding one catalog
 * heading to one feature file.
 *
 * The file must be valid YAML without duplicate keys and match
 * schemas/invariants.schema.json. Every problem is reported with the line of
 * the offending value, so a person can fix the file without hunting.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type Document, isMap, isSeq, LineCounter, parseDocument } from 'yaml';
import { InputError } from '../errors.ts';
import { compileProjectSchema } from '../json-schema.ts';
import type { LocatedRecord, RequirementRecord } from './types.ts';

export interface RecordsFile {
  file: string;
  /** Catalog path as written in the file, resolved against the file's folder. */
  catalog: string;
  records: LocatedRecord[];
}

let checkSchema: ReturnType<typeof compileProjectSchema> | undefined;

/** Line (1-based) of the YAML node at a JSON pointer, or of the nearest parent that exists. */
function lineOf(doc: Document, counter: LineCounter, pointer: string): number {
  const path = pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  for (let length = path.length; length >= 0; length -= 1) {
    const node = doc.getIn(path.slice(0, length), true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return counter.linePos(node.range[0]).line;
  }
  return 1;
}

export function parseRecords(text: string, file: string): RecordsFile {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: true, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line ?? counter.linePos(yamlError.pos[0]).line;
    throw new InputError(file, line, `not valid YAML: ${yamlError.message.split('\n')[0]}`, 'correct the YAML syntax at that line (duplicate keys are not allowed)');
  }
  const value = doc.toJS() as unknown;
  checkSchema ??= compileProjectSchema('invariants.schema.json');
  const problem = checkSchema(value)[0];
  if (problem) {
    throw new InputError(file, lineOf(doc, counter, problem.pointer), `${problem.pointer || 'the document'} ${problem.message}`, 'make the record match schemas/invariants.schema.json');
  }
  const data = value as { catalog: string; requirements: RequirementRecord[] };
  const sequence = doc.get('requirements', true);
  const records = data.requirements.map((record, index) => {
    const node = isSeq(sequence) ? sequence.items[index] : undefined;
    const start = isMap(node) && node.range ? node.range[0] : 0;
    return { record, line: counter.linePos(start).line };
  });
  return { file, catalog: resolve(dirname(file), data.catalog), records };
}

export function loadRecords(file: string): RecordsFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the requirement records (${(error as Error).message})`, 'run from the project folder or pass --records <path of invariants.yaml>');
  }
  return parseRecords(text, file);
}
