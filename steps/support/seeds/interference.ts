/**
 * What the harness does to a portable seed artifact export from outside the
 * exporter, one entry per row of the verified-artifact fault table: it edits
 * the export in transit (the pages, receipts and schema manifest the exporter
 * received, before its checks), edits the written file on disk before the
 * exporter verifies it or after it recorded the release hash, or kills the
 * build while it verifies. The exporter is never asked to break itself, so
 * an exporter that refuses everything it is told to fake cannot pass.
 *
 * Each edit checks that it changed something: a damage that finds nothing to
 * damage fails the export step instead of testing nothing.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { DeliveredSeedExport, DeliveredSeedRecord, SeedArtifactIntercept, SeedArtifactInterceptPoint } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';
import { seedControl } from './exports.ts';

/** An interference ready for one export: the intercept to pass, and what to release once the export ended. */
export interface ArmedInterference {
  intercept: SeedArtifactIntercept;
  /** Releases what the interference still holds (a database handle on the temporary file). */
  settle(): void;
}

export interface Interference {
  /** The exporter point the harness must be able to reach. */
  point: SeedArtifactInterceptPoint;
  arm(world: SyncWorld): Promise<ArmedInterference>;
}

type Delivered = DeliveredSeedExport;

function firstScope(delivered: Delivered) {
  const entry = delivered.manifest.portable_scopes[0];
  if (entry === undefined) throw new Error('the export the exporter received has no portable scope to damage');
  const pages = delivered.pages[entry.id] ?? [];
  if (pages.length === 0) throw new Error(`the export the exporter received has no page of ${entry.id} to damage`);
  return { entry, pages };
}

function firstRecord(delivered: Delivered): DeliveredSeedRecord {
  const record = firstScope(delivered).pages[0]?.page.records[0];
  if (record === undefined) throw new Error('the first page the exporter received holds no record to damage');
  return record;
}

/** The payload of an `sc1.` receipt edited in place; the MAC is kept, as a transfer that damaged the payload would leave it. */
function recodeReceipt(receipt: string, edit: (payload: Record<string, unknown>) => void): string {
  const [prefix, payload, mac] = receipt.split('.');
  if (prefix !== 'sc1' || payload === undefined || mac === undefined) throw new Error(`the receipt ${receipt.slice(0, 40)}... is not an sc1. token`);
  const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  edit(decoded);
  return `${prefix}.${Buffer.from(JSON.stringify(decoded), 'utf8').toString('base64url')}.${mac}`;
}

/** An edit of the export in transit, made ready by `prepare` before the export starts. */
const inTransitPrepared = (prepare: (world: SyncWorld) => Promise<(delivered: Delivered) => void>): Interference => ({
  point: 'exported',
  arm: async (world) => {
    const edit = await prepare(world);
    return {
      intercept: {
        exported: (delivered) => {
          const before = JSON.stringify(delivered);
          edit(delivered);
          if (JSON.stringify(delivered) === before) throw new Error('the damage left the export unchanged');
          return delivered;
        },
      },
      settle: () => undefined,
    };
  },
});

/** An edit of the export in transit. */
const inTransit = (edit: (delivered: Delivered) => void): Interference => inTransitPrepared(async () => edit);

/** An edit of the written file on disk, before the exporter verifies it; `keepOpen` keeps the harness's handle until the export ended. */
const onDisk = (edit: (db: Database.Database) => void, keepOpen = false): Interference => ({
  point: 'written',
  arm: async () => {
    let held: Database.Database | undefined;
    return {
      intercept: {
        written: (path) => {
          const before = readFileSync(path);
          const db = new Database(path, { fileMustExist: true });
          try {
            edit(db);
          } finally {
            if (keepOpen) held = db;
            else db.close();
          }
          if (!keepOpen && readFileSync(path).equals(before)) throw new Error('the damage left the written file unchanged');
        },
      },
      settle: () => {
        if (held?.open === true) held.close();
        held = undefined;
      },
    };
  },
});

/** An edit of the file's bytes (not through SQLite). */
const bytesOnDisk = (point: 'written' | 'hashed', edit: (path: string) => void): Interference => ({
  point,
  arm: async () => {
    const run = (path: string) => {
      const before = readFileSync(path);
      edit(path);
      if (readFileSync(path).equals(before)) throw new Error('the damage left the file unchanged');
    };
    return { intercept: point === 'written' ? { written: run } : { hashed: run }, settle: () => undefined };
  },
});

function changedRows(db: Database.Database, sql: string, ...params: unknown[]): void {
  const { changes } = db.prepare(sql).run(...params);
  if (changes === 0) throw new Error(`the damage changed no row of the written file: ${sql}`);
}

/** The fault table's rows, by their prose. */
export const INTERFERENCES: Record<string, Interference> = {
  'one row dropped from a page': inTransit((d) => {
    const last = firstScope(d).pages.at(-1)?.page;
    if (last === undefined || last.records.length === 0) throw new Error('the last page holds no record to drop');
    last.records.pop();
  }),
  'one field value altered in a record': inTransit((d) => {
    const record = firstRecord(d);
    const keys = new Set(Object.keys(record.pk));
    const field = Object.keys(record.row).find((f) => !keys.has(f) && typeof record.row[f] === 'string');
    if (field === undefined) throw new Error('the first record has no text field to alter');
    record.row[field] = `${String(record.row[field])} (altered)`;
  }),
  "one record's server_version removed": inTransit((d) => {
    delete firstRecord(d).server_version;
  }),
  "one record's server_version altered": inTransit((d) => {
    const record = firstRecord(d);
    record.server_version = `${record.server_version}0`;
  }),
  "one record's row_checksum altered": inTransit((d) => {
    const record = firstRecord(d);
    const checksum = record.row_checksum as { digest?: unknown };
    if (typeof checksum?.digest !== 'string' || checksum.digest === '') throw new Error('the first record carries no row_checksum digest to alter');
    record.row_checksum = { ...checksum, digest: `${checksum.digest[0] === '0' ? '1' : '0'}${checksum.digest.slice(1)}` };
  }),
  'the second page skipped': inTransit((d) => {
    const { pages } = firstScope(d);
    if (pages.length < 2) throw new Error('the export has a single page, so none can be skipped');
    pages.splice(1, 1);
  }),
  'the first page delivered twice': inTransit((d) => {
    const { pages } = firstScope(d);
    pages.splice(1, 0, structuredClone(pages[0] as (typeof pages)[number]));
  }),
  "the receipt's cardinality altered": inTransit((d) => {
    const { entry } = firstScope(d);
    entry.continuation = recodeReceipt(entry.continuation, (payload) => {
      payload.cardinality = String(Number(payload.cardinality) + 1);
    });
  }),
  // An export taken just before the one under test, as a stale bundle would carry its receipt.
  'the receipt taken from an earlier export': inTransitPrepared(async (world) => {
    const earlier = (await (await seedControl(world)).export()).manifest as { portable_scopes?: { id: string; continuation?: unknown }[] };
    return (d) => {
      const { entry } = firstScope(d);
      const stale = earlier.portable_scopes?.find((s) => s.id === entry.id)?.continuation;
      if (typeof stale !== 'string') throw new Error(`the earlier export carries no receipt for ${entry.id}`);
      entry.continuation = stale;
    };
  }),
  // An application write outside server apply: the file's own capture triggers queue it.
  'one pending mutation row written to the file': onDisk((db) => {
    const row = db.prepare('SELECT table_id, record_id FROM _synchro_scope_rows ORDER BY table_id, record_id LIMIT 1').get() as { table_id: string; record_id: string } | undefined;
    if (row === undefined) throw new Error('the written file has no seeded row to write to');
    const archived = db.prepare("SELECT manifest_json FROM _synchro_schema_archives WHERE schema_hash = (SELECT value FROM _synchro_meta WHERE key = 'schema_hash')").get() as { manifest_json: string } | undefined;
    const table = (JSON.parse(archived?.manifest_json ?? '{}') as { tables?: { table_id: string; name: string; primary_key_field_id: string; fields: { field_id: string; name: string; type: unknown }[] }[] }).tables?.find((t) => t.table_id === row.table_id);
    const key = table?.fields.find((f) => f.field_id === table.primary_key_field_id)?.name;
    const text = table?.fields.find((f) => f.field_id !== table.primary_key_field_id && JSON.stringify(f.type).includes('string'))?.name;
    if (table === undefined || key === undefined || text === undefined) throw new Error(`the written file's schema has no text column of table ${row.table_id} to write`);
    changedRows(db, `UPDATE "${table.name}" SET "${text}" = "${text}" || ' (local)' WHERE CAST("${key}" AS TEXT) = ?`, row.record_id);
    const queued = (db.prepare('SELECT count(*) AS n FROM _synchro_pending_changes').get() as { n: number }).n;
    if (queued === 0) throw new Error('the write to the written file queued no mutation');
  }),
  'one provenance row omitted': onDisk((db) =>
    changedRows(db, 'DELETE FROM _synchro_scope_rows WHERE (scope_id, table_id, record_id) = (SELECT scope_id, table_id, record_id FROM _synchro_scope_rows ORDER BY scope_id, table_id, record_id LIMIT 1)'),
  ),
  'a cursor written for "catalog_public"': onDisk((db) =>
    changedRows(db, "INSERT INTO _synchro_scopes(scope_id, cursor, rebuild_required) SELECT scope_id, receipt, 0 FROM _synchro_seed_receipts WHERE scope_id = 'catalog_public'"),
  ),
  // The second page's first 64 bytes overwritten, as a failing disk would leave them.
  'one page of the SQLite file corrupted on disk': bytesOnDisk('written', (path) => {
    const bytes = readFileSync(path);
    const declared = bytes.readUInt16BE(16);
    const pageSize = declared === 1 ? 65536 : declared;
    if (bytes.length < 2 * pageSize) throw new Error('the written file has a single page');
    bytes.fill(0xff, pageSize, pageSize + 64);
    writeFileSync(path, bytes);
  }),
  // The harness's connection switches the file to WAL and writes, so a -wal file holds the write while the exporter verifies.
  'the file left in WAL mode with a "-wal" file': onDisk((db) => {
    db.pragma('journal_mode = WAL');
    db.prepare("UPDATE _synchro_meta SET value = value WHERE key = 'sync_lock'").run();
  }, true),
  // The bytes change after the exporter hashed them, so the recorded hash is over other bytes than those it would publish.
  'the final hash computed over other bytes': bytesOnDisk('hashed', (path) => appendFileSync(path, Buffer.from([0]))),
  'the manifest body altered after hashing': inTransit((d) => {
    const tables = (d.schemaManifest as { tables?: { name: string }[] } | undefined)?.tables;
    const first = tables?.[0];
    if (first === undefined) throw new Error('the schema manifest the exporter received has no table');
    first.name = `${first.name}_altered`;
  }),
  'the exporter killed while verifying the file': {
    point: 'verifying',
    arm: async () => ({ intercept: { killWhileVerifying: true }, settle: () => undefined }),
  },
};
