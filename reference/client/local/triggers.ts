/**
 * Capture triggers generated from the verified manifest. They are the only
 * path from an application write to the durable queue, so the row change,
 * the mutation record and its values always commit (or fail) together.
 *
 * Every trigger is silent while `_synchro_meta.sync_lock` is '1', which is
 * how server-originated writes avoid echoing back as mutations.
 */
import { fault } from '../faults.ts';
import type { LocalTable } from './manifest.ts';
import { quoteIdent as q, quoteText as t } from './manifest.ts';

const UNLOCKED = `(SELECT value FROM _synchro_meta WHERE key = 'sync_lock') = '0'`;
const NOW = `strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'`;
// Version 4 lowercase UUID built in SQL so capture needs no host function.
const UUID = `lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))`;
const SCHEMA_REQUIRED = `SELECT RAISE(ABORT, 'verified Synchro schema metadata is required for capture') WHERE NOT EXISTS (SELECT 1 FROM _synchro_schema_archives a WHERE a.schema_version > 0 AND a.schema_version = (SELECT CAST(value AS INTEGER) FROM _synchro_meta WHERE key = 'schema_version') AND a.schema_hash = (SELECT value FROM _synchro_meta WHERE key = 'schema_hash'));`;

export function triggerNames(table: LocalTable): string[] {
  return ['pk_guard', 'insert', 'update', 'delete'].map((kind) => `_synchro_cdc_${kind}_${table.name}`);
}

function captureInsert(table: LocalTable, op: string, row: 'NEW' | 'OLD'): string {
  const rec = `CAST(${row}.${q(table.pk.name)} AS TEXT)`;
  const unresolved = `FROM _synchro_pending_changes WHERE table_id = ${t(table.tableId)} AND record_id = ${rec} AND lifecycle_state IN ('pending', 'sealed', 'blocked_by_predecessor') ORDER BY local_order DESC LIMIT 1`;
  const pred = (col: string) => `(SELECT ${col} ${unresolved})`;
  const base =
    op === 'insert'
      ? 'NULL'
      : `CASE WHEN ${pred('mutation_id')} IS NULL THEN (SELECT server_version FROM _synchro_row_versions WHERE table_id = ${t(table.tableId)} AND record_id = ${rec}) ELSE NULL END`;
  let state = `CASE WHEN ${pred('operation')} = 'delete' OR ${pred('lifecycle_state')} = 'blocked_by_predecessor' THEN 'blocked_by_predecessor' ELSE 'pending' END`;
  if (fault('write-after-delete-pending')) state = `CASE WHEN ${pred('lifecycle_state')} = 'blocked_by_predecessor' THEN 'blocked_by_predecessor' ELSE 'pending' END`; // fault: client:write-after-delete-pending
  return `${SCHEMA_REQUIRED}
  INSERT INTO _synchro_pending_changes(mutation_id, table_id, table_name, record_id, pk_field_id, pk_logical_type, operation, authored_schema_version, authored_schema_hash, base_version, client_version, lifecycle_state, source_kind, depends_on_mutation_id, atomic_group_id, created_at)
  VALUES (${UUID}, ${t(table.tableId)}, ${t(table.name)}, ${rec}, ${t(table.pk.fieldId)}, ${t(table.pk.type)}, ${op}, (SELECT CAST(value AS INTEGER) FROM _synchro_meta WHERE key = 'schema_version'), (SELECT value FROM _synchro_meta WHERE key = 'schema_hash'), ${base}, ${NOW}, ${state}, 'captured', ${pred('mutation_id')}, (SELECT value FROM _synchro_meta WHERE key = 'atomic_group_id'), ${NOW});`;
}

function captureValues(table: LocalTable, onlyChanged: boolean): string {
  const authored = table.columns.filter((c) => c.authored);
  if (authored.length === 0) return '';
  const rows = authored
    .map((c) => `SELECT ${t(c.fieldId)} AS f, NEW.${q(c.name)} AS x, ${onlyChanged ? `OLD.${q(c.name)} IS NOT NEW.${q(c.name)}` : '1'} AS changed`)
    .join(' UNION ALL ');
  // last_insert_rowid() is the ledger row just inserted by this trigger; the values table has no rowid, so it stays put.
  return `INSERT INTO _synchro_mutation_values(mutation_id, field_id, value) SELECT p.mutation_id, v.f, v.x FROM _synchro_pending_changes p, (${rows}) v WHERE p.local_order = last_insert_rowid() AND p.operation <> 'delete' AND v.changed;`;
}

/** CREATE TRIGGER statements for one synced table, in a fixed order. */
export function triggerDdl(table: LocalTable): string[] {
  const [guard, ins, upd, del] = triggerNames(table);
  const T = q(table.name);
  const pk = q(table.pk.name);
  const authored = table.columns.filter((c) => c.authored);
  const changed = authored.map((c) => `OLD.${q(c.name)} IS NOT NEW.${q(c.name)}`);
  const soft = table.deletedAt === undefined ? undefined : q(table.deletedAt.name);
  if (soft !== undefined) changed.push(`(OLD.${soft} IS NULL AND NEW.${soft} IS NOT NULL)`);
  const updateOp = soft === undefined ? `'update'` : `CASE WHEN OLD.${soft} IS NULL AND NEW.${soft} IS NOT NULL THEN 'delete' ELSE 'update' END`;
  const out = [
    `CREATE TRIGGER ${q(guard as string)} BEFORE UPDATE OF ${pk} ON ${T} WHEN ${UNLOCKED} AND NEW.${pk} IS NOT OLD.${pk} BEGIN SELECT RAISE(ABORT, 'synced primary key cannot change'); END`,
    `CREATE TRIGGER ${q(ins as string)} AFTER INSERT ON ${T} WHEN ${UNLOCKED} BEGIN ${captureInsert(table, `'insert'`, 'NEW')} ${captureValues(table, false)} END`,
    `CREATE TRIGGER ${q(upd as string)} AFTER UPDATE ON ${T} WHEN ${UNLOCKED} AND (${changed.length === 0 ? '0' : changed.join(' OR ')}) BEGIN ${captureInsert(table, updateOp, 'NEW')} ${captureValues(table, true)} END`,
  ];
  if (soft === undefined) {
    if (fault('no-hard-delete-capture')) return out; // fault: client:no-hard-delete-capture
    out.push(`CREATE TRIGGER ${q(del as string)} AFTER DELETE ON ${T} WHEN ${UNLOCKED} BEGIN ${captureInsert(table, `'delete'`, 'OLD')} END`);
  } else {
    // A hard delete of a soft-delete table becomes a soft delete, which the update trigger captures.
    out.push(`CREATE TRIGGER ${q(del as string)} BEFORE DELETE ON ${T} WHEN ${UNLOCKED} BEGIN UPDATE ${T} SET ${soft} = ${NOW} WHERE ${pk} = OLD.${pk}; SELECT RAISE(IGNORE); END`);
  }
  return out;
}
