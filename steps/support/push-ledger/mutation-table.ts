/**
 * A feature's table of mutations turned into wire mutations of a harness
 * client. Columns `mutation_id`, `operation`, `table`, `pk`, `base_version`
 * and `client_version` describe the mutation; every other non-empty cell is a
 * column value (an empty cell leaves the column out). A base_version cell is
 * empty or `absent` (no base), `current` (the version the client holds for
 * the row), `stale` (a version the row never had), a label noted earlier (V1, quoted or not) or any other text, sent
 * as written without its quotes ("sv-stale"). A client_version cell is empty
 * (now), "the harness's current UTC time" (now) or the exact text to send.
 */
import type { DataTable } from '@cucumber/cucumber';
import { cellValue } from '../values.ts';
import { type Json, microsecondNow, type WireClient } from '../wire-client.ts';
import { SyncWorld } from '../world.ts';
import { versionLabels } from '../version-labels.ts';
import { ledgerState } from './state.ts';

export const NOW_PHRASE = "the harness's current UTC time";

/** The base_version a cell names for a row of `tableName`, or undefined for no base. */
export function baseFromCell(world: SyncWorld, client: WireClient, tableName: string, pk: unknown, cell: string | undefined): string | undefined {
  const text = cell?.trim() ?? '';
  if (text === '' || text === 'absent') return undefined;
  // A version this row never had: any base that is not the current one is stale.
  if (text === 'stale') return 'sv-stale-base';
  if (text === 'current') {
    const held = world.heldVersions.get(SyncWorld.rowKey(client.tableId(tableName), pk));
    if (held === undefined) throw new Error(`client "${client.name}" holds no server version for ${tableName} row ${String(pk)}`);
    return held;
  }
  // A quoted cell is a label when one was noted under that name (V1), else the literal text ("sv-stale").
  const quoted = /^"(.*)"$/.exec(text);
  const name = quoted ? (quoted[1] as string) : text;
  return versionLabels(world).get(name) ?? name;
}

/** The client_version a cell names. */
export function clientVersionFromCell(cell: string | undefined): string {
  const text = cell?.trim() ?? '';
  return text === '' || text === NOW_PHRASE ? microsecondNow() : text;
}

/** Every mutation the scenario's fixed batches carried, by mutation ID, as first sent. */
export function sentMutations(world: SyncWorld): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const batch of ledgerState(world).batches.values()) {
    for (const m of (JSON.parse(batch.requestText) as Json).mutations as Json[]) if (!out.has(String(m.mutation_id))) out.set(String(m.mutation_id), m);
  }
  return out;
}

/**
 * The wire mutations of a feature table, in row order. A mutation ID sent
 * before in the scenario stands for the same stored local intent: unless the
 * table says otherwise it keeps the client_version and authored_schema it was
 * first sent with, as a client carrying it into a new batch does.
 */
export function mutationsFromTable(world: SyncWorld, client: WireClient, table: DataTable): Json[] {
  const earlier = sentMutations(world);
  return table.hashes().map((row) => {
    const { mutation_id, operation, table: tableName, pk, base_version, client_version, ...columns } = row;
    if (!operation || !tableName || pk === undefined) throw new Error('every mutation row needs operation, table and pk');
    const model = world.model.table(tableName);
    const pkValue = cellValue(world.model.keyColumn(tableName), pk);
    const base = baseFromCell(world, client, tableName, pkValue, base_version);
    const values: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(columns)) if (text !== '') values[column] = cellValue(model.columns.find((c) => c.name === column), text);
    const first = mutation_id ? earlier.get(mutation_id) : undefined;
    const mutation = client.mutation({
      op: operation as 'insert' | 'update' | 'delete',
      table: tableName,
      pk: pkValue,
      ...(operation === 'delete' ? {} : { columns: values }),
      ...(base === undefined ? {} : { base_version: base }),
      ...(mutation_id ? { mutation_id } : {}),
      ...(client_version === undefined ? (first === undefined ? {} : { client_version: first.client_version as string }) : { client_version: clientVersionFromCell(client_version) }),
    });
    if (first !== undefined) mutation.authored_schema = first.authored_schema;
    return mutation;
  });
}
