/**
 * The harness as another writer of the scenario's rows (a protocol client
 * such as "W"): one mutation per push, which must be applied. The version it
 * got is kept under the writer's label for that row (../version-labels.ts),
 * and the step returns once capture has made the write visible, so what a
 * client meets next, in its push and in its pulls, includes it.
 */
import { awaitCapture } from '../source-schema.ts';
import { cellValue } from '../values.ts';
import { versionLabels, writerVersionLabel } from '../version-labels.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export interface WriterMutation {
  op: 'insert' | 'update' | 'delete';
  table: string;
  /** The key of the row, as the feature writes it. */
  row: string;
  base?: string;
  columns?: Obj;
}

/** Pushes `spec` as harness client `name`, requires it applied and returns the server_version it got. */
export async function writerPush(world: SyncWorld, name: string, spec: WriterMutation): Promise<string> {
  const writer = world.wire(name);
  const key = world.model.keyColumn(spec.table);
  const mutation = writer.mutation({ op: spec.op, table: spec.table, pk: cellValue(key, spec.row), ...(spec.columns ? { columns: spec.columns } : {}), ...(spec.base ? { base_version: spec.base } : {}) });
  const reply = await writer.push([mutation]);
  const outcome = (reply.json?.accepted ?? [])[0] as Obj | undefined;
  if (reply.status !== 200 || outcome?.status !== 'applied') throw new Error(`the ${spec.op} of ${spec.table} ${spec.row} by client "${name}" was not applied: ${reply.status} ${reply.text.slice(0, 500)}`);
  const version = String(outcome.server_version);
  versionLabels(world).set(writerVersionLabel(name, spec.table, spec.row), version);
  await awaitCapture(world);
  return version;
}

/** A feature's cell for a column, as the column's portable type carries it. */
export function columnValue(world: SyncWorld, table: string, column: string, text: string): unknown {
  return cellValue(
    world.model.table(table).columns.find((c) => c.name === column),
    text,
  );
}
