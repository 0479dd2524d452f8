/**
 * The server versions a scenario refers to by name: a feature label given to
 * a version the server issued (V1, T1, P1; set by the steps that create rows
 * or remember an outcome), and the version a harness writer's own last write
 * of a row got ("the version of client "W"'s update"). One map per scenario
 * holds both, so every step that names a version reads the same record.
 */
import type { SyncWorld } from './world.ts';

const labels = new WeakMap<SyncWorld, Map<string, string>>();

/** Label → the server version it stands for, in this scenario. */
export function versionLabels(world: SyncWorld): Map<string, string> {
  let map = labels.get(world);
  if (map === undefined) {
    map = new Map();
    labels.set(world, map);
  }
  return map;
}

/** The server version a label (V1, P1, or a writer's label) stands for; an error when none was given that label. */
export function labelledVersion(world: SyncWorld, label: string): string {
  const version = versionLabels(world).get(label);
  if (version === undefined) throw new Error(`no server version was labelled ${label} earlier in this scenario`);
  return version;
}

/** The label under which the version of harness writer `writer`'s last write of a row is kept. */
export function writerVersionLabel(writer: string, table: string, row: string): string {
  return `client "${writer}"'s write of ${table} ${row}`;
}

/**
 * The version harness writer `writer`'s last write of row `row` got, when the
 * step names the row but not its table: the writer must have written exactly
 * one table's row under that key.
 */
export function writerVersion(world: SyncWorld, writer: string, row: string, table?: string): string {
  if (table !== undefined) return labelledVersion(world, writerVersionLabel(writer, table, row));
  const prefix = `client "${writer}"'s write of `;
  const found = [...versionLabels(world).entries()].filter(([label]) => label.startsWith(prefix) && label.endsWith(` ${row}`));
  if (found.length !== 1) throw new Error(`client "${writer}" wrote ${found.length} rows keyed ${row} in this scenario, not one`);
  return (found[0] as [string, string])[1];
}
