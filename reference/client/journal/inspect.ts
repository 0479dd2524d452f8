/**
 * Read-only view of the migration journal and the active schema reference,
 * as stored: members that do not parse are shown as the stored text, so a
 * damaged journal is reported, never repaired, by looking at it.
 */
import type Database from 'better-sqlite3';
import { getMeta } from '../local/metadata.ts';

function stored(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function inspectMigration(db: Database.Database) {
  return db.transaction(() => {
    const version = Number(getMeta(db, 'schema_version') ?? 0);
    const activeSchema = version === 0 ? null : { version, hash: getMeta(db, 'schema_hash') ?? '' };
    const row = db.prepare('SELECT * FROM _synchro_migration_journal WHERE id = 1').get() as Record<string, string | number | null> | undefined;
    if (row === undefined) return { activeSchema, journal: null };
    const history = stored(row.phase_history_json as string | null);
    return {
      activeSchema,
      journal: {
        sourceSchema: { version: row.source_version, hash: row.source_hash },
        targetSchema: { version: row.target_version, hash: row.target_hash },
        targetManifest: stored(row.target_manifest_json as string | null),
        action: row.action,
        affectedScopes: stored(row.affected_scopes_json as string | null),
        planFormat: row.plan_format,
        plan: stored(row.plan_json as string | null),
        planHash: row.plan_hash,
        phase: row.phase,
        phaseHistory: Array.isArray(history) ? history : [],
      },
    };
  })();
}
