/**
 * The harness as another writer of the scenario's rows (a protocol client
 * such as "W"): one mutation per push, which must be applied; the version it
 * got is kept per writer and row for later comparison.
 */
import { cellValue } from '../values.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';
import { queueState } from './state.ts';

export interface WriterMutation {
  op: 'insert' | 'update' | 'delete';
  table: string;
  row: string;
  base?: string;
  columns?: Obj;
}

export async function writerPush(world: SyncWorld, name: string, spec: WriterMutation): Promise<string> {
  const writer = world.wire(name);
  const key = world.model.keyColumn(spec.table);
  const mutation = writer.mutation({ op: spec.op, table: spec.table, pk: cellValue(key, spec.row), ...(spec.columns ? { columns: spec.columns } : {}), ...(spec.base ? { base_version: spec.base } : {}) });
  const reply = await writer.push([mutation]);
  const outcome = (reply.json?.accepted ?? [])[0] as Obj | undefined;
  if (reply.status !== 200 || outcome?.status !== 'applied') throw new Error(`the ${spec.op} of ${spec.table} ${spec.row} by client "${name}" was not applied: ${reply.status} ${reply.text}`);
  const version = String(outcome.server_version);
  queueState(world).writerVersions.set(`${name}/${spec.table}/${spec.row}`, version);
  return version;
}

/** A feature's cell for a column, as the column's portable type carries it. */
export function columnValue(world: SyncWorld, table: string, column: string, text: string): unknown {
  return cellValue(
    world.model.table(table).columns.find((c) => c.name === column),
    text,
  );
}
