/**
 * The first row lock of an update or soft delete, chosen as PostgreSQL
 * chooses the lock of the statement itself: FOR UPDATE when the updated
 * columns (the assigned ones and each stored generated column computed from
 * them) reach a key column of the partition holding the row, FOR NO KEY
 * UPDATE otherwise. A key column belongs to a live unique index without
 * predicate or expressions.
 *
 * The catalog is read for every push, not taken from the cached table
 * definitions: an index built after the manifest was loaded changes the lock.
 * ROW EXCLUSIVE is taken on the registered relation first (it reaches every
 * partition), as the statement would, so a plain index build or drop cannot
 * change the answer before the write, and taking that lock accepts pending
 * catalog invalidations. An index built or dropped CONCURRENTLY after this
 * point can still make the write take another lock, as it can for a native
 * statement; PostgreSQL's relation cache itself is not reachable from SQL, so
 * this reads the same facts from the system catalogs.
 */
import type { PoolClient } from 'pg';
import { fault } from '../core/faults.ts';
import type { TableDef } from '../core/tables.ts';
import { keyPredicate } from './row-state.ts';

export async function touchesKeyColumn(db: PoolClient, table: TableDef, pk: string, assigned: readonly string[]): Promise<boolean> {
  if (assigned.length === 0) return false;
  await db.query(`LOCK TABLE ${table.qualified} IN ROW EXCLUSIVE MODE`);
  // The relation holding the row: a partition's own indexes decide, not the registered relation's nor its siblings'.
  let holder = `SELECT tableoid FROM ${table.qualified} WHERE ${keyPredicate(table, 1)}`;
  if (fault('registered-relation-key-columns')) holder = `SELECT '${table.qualified.replaceAll("'", "''")}'::regclass::oid AS tableoid FROM ${table.qualified} WHERE ${keyPredicate(table, 1)}`; // fault: server:registered-relation-key-columns
  if (fault('every-partition-key-columns')) holder += ` UNION SELECT inhrelid FROM pg_inherits WHERE inhparent = '${table.qualified.replaceAll("'", "''")}'::regclass`; // fault: server:every-partition-key-columns
  const { rows } = await db.query<{ touched: boolean }>(
    `WITH partition AS (${holder}),
          updated AS (
            SELECT a.attnum FROM pg_attribute a, partition p
             WHERE a.attrelid = p.tableoid AND a.attname = ANY ($2::text[]) AND NOT a.attisdropped
            UNION
            SELECT g.attnum FROM pg_attribute g, partition p
             WHERE g.attrelid = p.tableoid AND g.attgenerated = 's' AND NOT g.attisdropped
               -- The expression's column references, recorded on the column or on its default entry.
               AND EXISTS (SELECT 1 FROM pg_depend d JOIN pg_attribute b ON b.attrelid = d.refobjid AND b.attnum = d.refobjsubid
                            WHERE d.refclassid = 'pg_class'::regclass AND b.attname = ANY ($2::text[])
                              AND ((d.classid = 'pg_class'::regclass AND d.objid = g.attrelid AND d.objsubid = g.attnum)
                                OR (d.classid = 'pg_attrdef'::regclass AND d.objid IN (SELECT ad.oid FROM pg_attrdef ad WHERE ad.adrelid = g.attrelid AND ad.adnum = g.attnum)))))
     SELECT EXISTS (
       SELECT 1 FROM pg_index i, partition p
        WHERE i.indrelid = p.tableoid AND i.indisunique AND i.indislive AND i.indpred IS NULL AND i.indexprs IS NULL
          AND (i.indkey::int2[])[0:i.indnkeyatts - 1] && ARRAY(SELECT attnum FROM updated)
     ) AS touched`,
    [pk, [...assigned]],
  );
  return rows[0]?.touched === true;
}
