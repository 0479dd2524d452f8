/**
 * Operator endpoint rules: GET /sync/schema repeats its manifest's version and
 * hash; GET /sync/tables lists tables sorted by name.
 */
import type { SchemaResponse, TablesResponse } from '../generated.ts';
import { notStrictlyIncreasing, type Violation, violation } from './context.ts';

/** SCHEMA1: the top-level version and hash are the manifest's own. */
export function schemaEnvelopeMatchesManifest(response: SchemaResponse): Violation[] {
  const out: Violation[] = [];
  if (response.schema_version !== response.manifest.schema_version) out.push(violation('SCHEMA1', '/schema_version', 'differs from manifest.schema_version'));
  if (response.schema_hash !== response.manifest.schema_hash) out.push(violation('SCHEMA1', '/schema_hash', 'differs from manifest.schema_hash'));
  return out;
}

/** TABLES1: table metadata is sorted by table_name, each name once. */
export function tablesSortedByName(response: TablesResponse): Violation[] {
  return notStrictlyIncreasing(response.tables.map((t) => t.table_name)).map((i) =>
    violation('TABLES1', `/tables/${i}/table_name`, 'tables must be strictly sorted by table_name'),
  );
}
