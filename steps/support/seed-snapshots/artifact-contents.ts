/**
 * What a portable seed artifact holds, read with SQLite on its own: the rows
 * of each application table (by the scenario's table names and key values)
 * and the provenance the client contract keeps beside them (which scope each
 * row came from, the seed receipts and scope records, all by scope ID). And
 * the harness's own account of which scopes each source row belongs to, from
 * the placements the scenario declared, to pick the rows a scope alone holds.
 */
import Database from 'better-sqlite3';
import type { TableSpec } from '../model.ts';
import { artifactPath } from '../seeds/artifacts.ts';
import type { SyncWorld } from '../world.ts';

type Row = Record<string, unknown>;

function withArtifact<T>(world: SyncWorld, file: string, read: (db: Database.Database) => T): T {
  const db = new Database(artifactPath(world, file), { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

function hasTable(db: Database.Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** The key values of table `table` the artifact holds (none when it has no such table). */
export function artifactKeys(world: SyncWorld, file: string, table: string): string[] {
  const key = world.model.keyColumn(table).name;
  return withArtifact(world, file, (db) => {
    if (!hasTable(db, table)) return [];
    return (db.prepare(`SELECT ${quoted(key)} AS k FROM ${quoted(table)} ORDER BY 1`).all() as { k: unknown }[]).map((r) => String(r.k));
  });
}

/** Every (table, key) the artifact holds, over the scenario's tables, sorted. */
export function artifactRows(world: SyncWorld, file: string): string[] {
  return [...world.model.tables.keys()].flatMap((table) => artifactKeys(world, file, table).map((id) => `${table}/${id}`)).sort();
}

/** The scope IDs the artifact records per row (`_synchro_scope_rows`) for the row `id` of the table with ID `tableId`. */
export function rowProvenance(world: SyncWorld, file: string, tableId: string, id: string): string[] {
  return withArtifact(world, file, (db) =>
    (db.prepare('SELECT scope_id FROM _synchro_scope_rows WHERE table_id = ? AND record_id = ? ORDER BY scope_id').all(tableId, id) as { scope_id: string }[]).map((r) => r.scope_id),
  );
}

/** Every scope ID the artifact names anywhere it records scopes: row provenance, seed receipts, scope records. */
export function provenanceScopes(world: SyncWorld, file: string): string[] {
  return withArtifact(world, file, (db) => {
    const ids = new Set<string>();
    for (const table of ['_synchro_scope_rows', '_synchro_seed_receipts', '_synchro_scopes']) {
      if (!hasTable(db, table)) continue;
      for (const r of db.prepare(`SELECT DISTINCT scope_id FROM ${table}`).all() as { scope_id: string }[]) ids.add(r.scope_id);
    }
    return [...ids].sort();
  });
}

/** The scopes the scenario's placements put a source row of `table` in. */
export function declaredScopes(table: TableSpec, row: Row): Set<string> {
  const text = (column: string) => (row[column] === null || row[column] === undefined ? null : String(row[column]));
  const fill = (template: string) => template.replace(/\{([^}]+)\}/g, (_, column: string) => text(column) ?? '');
  const scopes = new Set<string>(table.placements.map(fill));
  for (const rule of table.conditional) if (text(rule.column) === rule.value) scopes.add(rule.scope);
  for (const rule of table.whenSet) if (text(rule.column) !== null) scopes.add(fill(rule.template));
  for (const rule of table.eachListed ?? [])
    for (const item of (text(rule.column) ?? '').split(',')) if (item.trim() !== '') scopes.add(rule.template.replace(/\{[^}]+\}/, item.trim()));
  return scopes;
}
