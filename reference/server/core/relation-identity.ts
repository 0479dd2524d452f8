/**
 * Registered relation identity drift: an active registration whose stored
 * OID no longer names a table with the recorded schema, name and replica
 * identity DEFAULT (a rename, a schema move, a drop and re-create under the
 * same name, a replica identity change, a key that is no longer one
 * immediate primary-key column). Checked by OID first, never by
 * name, so a re-created same-named table is drift, never the registered one.
 * Drift blocks capture (the worker reads and acknowledges nothing) and the
 * pull and rebuild endpoints (503 capture_blocked) until an operator
 * reconfigures; readiness reports it as `relation_identity` (006-readiness.sql).
 */
import type { ClientBase } from 'pg';
import { fault } from './faults.ts';
import { named } from './named-statements.ts';

/** The relation behind an active registration, found by its stored OID. */
const BY_OID = 'c.oid = r.physical_relation_oid';

/** The registered key column is still the sole column of an immediate primary key (the replica identity DEFAULT uses). */
const SINGLE_IMMEDIATE_KEY = `EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = r.pk_column
                WHERE k.conrelid = c.oid AND k.contype = 'p' AND NOT k.condeferrable AND k.conkey = ARRAY[a.attnum])`;

/**
 * SQL for "some active registration drifted", to be read as one boolean
 * column; the capture gate asks it in the same round trip as its other facts.
 * `OFFSET 0` keeps the inner lookup a per-registration probe of pg_class by
 * OID (or by name) instead of an anti join that walks every table of the
 * catalog; it changes no answer.
 */
export function relationDriftedSql(): string {
  const found = fault('cap009-identity-by-name') ? 'n.nspname = r.physical_schema AND c.relname = r.physical_relation' : BY_OID; // fault: server:cap009-identity-by-name
  const keyShape = fault('cap010-drift-ignores-key-shape') ? 'true' : SINGLE_IMMEDIATE_KEY; // fault: server:cap010-drift-ignores-key-shape
  return `EXISTS (SELECT 1 FROM synchro.relations r
      WHERE r.active AND NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE ${found} AND n.nspname = r.physical_schema AND c.relname = r.physical_relation AND c.relreplident = 'd'
           AND ${keyShape}
        OFFSET 0))`;
}

export async function relationDrifted(db: ClientBase): Promise<boolean> {
  const { rows } = await db.query<{ drifted: boolean }>(named(`SELECT ${relationDriftedSql()} AS drifted`));
  return rows[0]?.drifted === true;
}
