/**
 * The mutations a feature's batch table describes (one row per mutation:
 * mutation_id, operation, table, pk, base_version and column cells), built
 * for the harness's own protocol client `name`.
 */
import type { DataTable } from '@cucumber/cucumber';
import { cellValue } from './values.ts';
import { SyncWorld } from './world.ts';

export function batchMutations(world: SyncWorld, name: string, table: DataTable): Record<string, unknown>[] {
  const client = world.wire(name);
  return table.hashes().map((row) => {
    const { mutation_id, operation, table: tableName, pk, base_version, ...columns } = row;
    if (!operation || !tableName || pk === undefined) throw new Error('every mutation row needs operation, table and pk');
    const model = world.model.table(tableName);
    const key = world.model.keyColumn(tableName);
    const tableId = client.tableId(tableName);
    const pkValue = cellValue(key, pk);
    // "current" stands for the version the client holds for that row.
    let base = base_version;
    if (base === 'current') {
      base = world.heldVersions.get(SyncWorld.rowKey(tableId, pkValue));
      if (base === undefined) throw new Error(`client "${name}" holds no server version for ${tableName} row ${pk}`);
    }
    const values: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(columns)) if (text !== '') values[column] = cellValue(model.columns.find((c) => c.name === column), text);
    return client.mutation({
      op: operation as 'insert' | 'update' | 'delete',
      table: tableName,
      pk: pkValue,
      ...(operation === 'delete' ? {} : { columns: values }),
      ...(base === undefined || base === '' ? {} : { base_version: base }),
      ...(mutation_id ? { mutation_id } : {}),
    });
  });
}
