/**
 * The control protocol's per-scenario reset, on the database side: returns
 * one database to what a fresh install leaves, in place, so a server started
 * by hand can be certified scenario after scenario without a new database.
 * Every other session of the database is ended first (as DROP DATABASE WITH
 * FORCE would), then the capture slots, the publications and every
 * non-system schema go, and `public` is created again as PostgreSQL creates
 * it. Cluster-wide objects (roles) stay, as they do when a database is
 * cloned from a template. The caller installs the synchro schema afterwards.
 */
import pg from 'pg';

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function wipeDatabase(databaseUrl: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    // A slot whose walsender is still going away is active for a moment: ending the sessions above ends it.
    const slots = await db.query<{ slot_name: string }>('SELECT slot_name FROM pg_replication_slots WHERE database = current_database()');
    for (const { slot_name } of slots.rows) await dropSlot(db, slot_name);
    const publications = await db.query<{ pubname: string }>('SELECT pubname FROM pg_publication');
    for (const { pubname } of publications.rows) await db.query(`DROP PUBLICATION ${quoteIdent(pubname)}`);
    const triggers = await db.query<{ evtname: string }>('SELECT evtname FROM pg_event_trigger');
    for (const { evtname } of triggers.rows) await db.query(`DROP EVENT TRIGGER ${quoteIdent(evtname)}`);
    const schemas = await db.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'");
    // Extensions installed in those schemas go first, each with every object it created (its other schemas among them).
    const extensions = await db.query<{ extname: string }>(
      "SELECT e.extname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'",
    );
    await db.query('BEGIN');
    for (const { extname } of extensions.rows) await db.query(`DROP EXTENSION IF EXISTS ${quoteIdent(extname)} CASCADE`);
    for (const { nspname } of schemas.rows) await db.query(`DROP SCHEMA IF EXISTS ${quoteIdent(nspname)} CASCADE`);
    // As CREATE DATABASE leaves it (PostgreSQL 15 and later).
    await db.query('CREATE SCHEMA public AUTHORIZATION pg_database_owner');
    await db.query('GRANT USAGE ON SCHEMA public TO PUBLIC');
    await db.query("COMMENT ON SCHEMA public IS 'standard public schema'");
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    await db.end();
  }
}

/** Drops a slot, waiting (bounded) for a terminated session to let go of it. */
async function dropSlot(db: pg.Client, slot: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await db.query<{ active_pid: number | null }>('SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1', [slot]);
    const pid = rows[0]?.active_pid;
    if (rows.length === 0) return;
    if (pid === null || pid === undefined) {
      await db.query('SELECT pg_drop_replication_slot($1)', [slot]);
      return;
    }
    if (Date.now() > deadline) throw new Error(`capture slot ${slot} is still held by process ${pid}`);
    await db.query('SELECT pg_terminate_backend($1), pg_sleep(0.05)', [pid]);
  }
}
