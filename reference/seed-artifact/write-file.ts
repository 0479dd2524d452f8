/**
 * Check 8: the SQLite file, built through the reference client's own local
 * surface so a seeded client reads exactly what it would have written itself:
 * the schema installed through the migration journal (tables, capture
 * triggers, archived manifest), then in one server-apply transaction (capture
 * suppressed) every verified row, its server version and digest as the CAS
 * base, provenance per scope, the receipts and the completion marker. No
 * client identity, queue, scope cursor or rebuild state is written. The file
 * uses a rollback journal so it is complete without sidecar files.
 */
import Database from 'better-sqlite3';
import { addProvenance } from '../client/apply/scopes.ts';
import { storeVersion, type WireRow, writeRow } from '../client/apply/rows.ts';
import type { Ctx } from '../client/context.ts';
import { migrate } from '../client/journal/migration.ts';
import { installMetadata, serverApply, setMeta } from '../client/local/metadata.ts';
import { SNAPSHOT_COMPLETE } from '../client/local/seed.ts';
import type { FaultSwitch } from './faults.ts';
import type { VerifiedExport } from './verify-export.ts';

function refusingTransport(): never {
  throw new Error('a seed build never talks to a server');
}

/** Writes the seed file at `path`; returns the still-open handle only when a fault keeps it open (WAL left behind). */
export function writeSeedFile(path: string, v: VerifiedExport, fault: FaultSwitch): Database.Database | undefined {
  const db = new Database(path);
  try {
    db.pragma(fault('leave-wal') ? 'journal_mode = WAL' : 'journal_mode = DELETE'); // fault: seed:leave-wal
    db.pragma('synchronous = FULL');
    installMetadata(db);
    const ctx: Ctx = {
      db,
      schema: undefined,
      config: { clientId: '', appVersion: '0.0.0', platform: 'seed-artifact', pullLimit: 1, rebuildLimit: 1, pushBatchSize: 1 },
      clock: { now: () => Date.now(), sleep: async () => {} },
      transport: refusingTransport,
      crash: () => {},
      random: Math.random,
    };
    migrate(ctx, v.manifest);
    serverApply(db, () => {
      for (const scope of v.scopes) {
        scope.records.forEach((r, k) => {
          writeRow(ctx, r.table, r.row as WireRow);
          storeVersion(ctx, r.table, r.recordId, r.serverVersion, { identity: r.identity, digest: r.digest });
          if (!(fault('omit-provenance-row') && k === 0)) addProvenance(ctx, scope.entry.id, r.table.tableId, r.recordId, 0); // fault: seed:omit-provenance-row
        });
        db.prepare('INSERT INTO _synchro_seed_receipts(scope_id, receipt, schema_version, schema_hash, cardinality, checksum) VALUES (?, ?, ?, ?, ?, ?)').run(
          scope.entry.id,
          scope.entry.continuation,
          v.schema.version,
          v.schema.hash,
          scope.entry.cardinality,
          scope.entry.checksum.digest,
        );
        if (fault('write-cursor')) db.prepare('INSERT INTO _synchro_scopes(scope_id, cursor, rebuild_required) VALUES (?, ?, 0)').run(scope.entry.id, scope.entry.continuation); // fault: seed:write-cursor
      }
      setMeta(db, SNAPSHOT_COMPLETE, v.exportId);
    });
    if (fault('pending-mutation-row')) {
      // An application write outside server apply: capture queues it, as a build that forgot suppression would.
      const first = v.scopes[0]?.records[0];
      if (first !== undefined) {
        const col = first.table.columns.find((c) => c.authored && c.type === 'string');
        if (col !== undefined) db.prepare(`UPDATE "${first.table.name}" SET "${col.name}" = "${col.name}" || ' (local)' WHERE CAST("${first.table.pk.name}" AS TEXT) = ?`).run(first.recordId); // fault: seed:pending-mutation-row
      }
    }
    if (fault('leave-wal')) return db;
    db.close();
    return undefined;
  } catch (e) {
    if (db.open) db.close();
    throw e;
  }
}
