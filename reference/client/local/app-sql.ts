/**
 * The guard in front of application SQL. Applications use plain SQL on
 * synced tables, one statement per call; anything that could bypass capture
 * or corrupt bookkeeping is refused before it runs.
 */
import type { Ctx } from '../context.ts';
import { SqlRefused } from '../errors.ts';
import { fault } from '../faults.ts';
import { triggerDdl } from './triggers.ts';

export type StatementKind = 'read' | 'write' | 'ddl';

function leadingWords(sql: string): string[] {
  const stripped = sql.replace(/^(?:\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*/, '');
  return stripped.split(/[\s(]+/, 3).map((w) => w.toUpperCase());
}

function writeTarget(sql: string): string | undefined {
  const m = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_]*))/i.exec(sql);
  if (m === null) return undefined;
  return (m[1]?.replaceAll('""', '"') ?? m[2] ?? '').toLowerCase();
}

/** Classifies a statement and refuses it when the application may not run it. */
export function guardStatement(ctx: Ctx, sql: string): StatementKind {
  const [first = '', second = ''] = leadingWords(sql);
  if (['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE'].includes(first)) {
    throw new SqlRefused('transaction_control', `${first} is not allowed; use transaction() instead`);
  }
  if (first === 'SELECT' || first === 'WITH' || first === 'VALUES') return 'read';
  const touchesMetadata = /_synchro_/i.test(sql);
  if (first === 'INSERT' || first === 'UPDATE' || first === 'DELETE' || first === 'REPLACE') {
    if (touchesMetadata) throw new SqlRefused('metadata_write', 'Synchro metadata tables are not writable by the application');
    if (first === 'REPLACE' || (first !== 'DELETE' && second === 'OR') || /\bON\s+CONFLICT\b/i.test(sql)) {
      throw new SqlRefused('non_portable_write', 'INSERT OR ..., UPDATE OR ..., REPLACE and upserts are not portable synced writes');
    }
    const target = writeTarget(sql);
    const table = target === undefined ? undefined : ctx.schema?.byName.get(target);
    if (fault('synced-delete-needs-api') && first === 'DELETE' && table !== undefined) throw new SqlRefused('use_delete_api', `rows of ${table.name} are deleted through the client's delete API`); // fault: client:synced-delete-needs-api
    // Without a verified manifest the client cannot tell a synced table's identity: a write to anything but an existing local-only table waits for one.
    if (ctx.schema === undefined && target !== undefined && !localTableExists(ctx, target) && !fault('seed007-unverified-write-reaches-sqlite')) throw new SqlRefused('no_verified_manifest', `no verified schema manifest is installed yet; ${target} is not a local-only table, so writes to it wait for the first connect`); // fault: client:seed007-unverified-write-reaches-sqlite
    if (table !== undefined && !triggersIntact(ctx, table.name, triggerDdl(table))) {
      throw new SqlRefused('capture_triggers_missing', `capture triggers of ${table.name} are not the generated set; the write is refused`);
    }
    return 'write';
  }
  if (first === 'CREATE' || first === 'DROP' || first === 'ALTER') {
    if (second === 'TRIGGER' || touchesMetadata) throw new SqlRefused('forbidden_ddl', 'trigger DDL and metadata DDL are not allowed');
    for (const table of ctx.schema?.tables ?? []) {
      if (new RegExp(`(^|[^A-Za-z0-9_])"?${table.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"?([^A-Za-z0-9_]|$)`, 'i').test(sql)) {
        throw new SqlRefused('forbidden_ddl', `DDL on synced table ${table.name} is not allowed`);
      }
    }
    return 'ddl';
  }
  throw new SqlRefused('unsupported_statement', `statement kind ${first || '(empty)'} is not part of the application SQL surface`);
}

/** Whether the application's database already holds a table of that name (a local-only table, when no manifest is installed). */
function localTableExists(ctx: Ctx, name: string): boolean {
  return ctx.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND lower(name) = ?").get(name) !== undefined;
}

function normalize(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}

function triggersIntact(ctx: Ctx, tableName: string, expected: string[]): boolean {
  const rows = ctx.db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE`).all(tableName) as { sql: string }[];
  if (rows.length !== expected.length) return false;
  const have = new Set(rows.map((r) => normalize(r.sql)));
  return expected.every((sql) => have.has(normalize(sql)));
}
