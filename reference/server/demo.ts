/**
 * The demo table set for `npm run reference:server`: a notes table with a
 * soft-delete column and a tags table with a hard delete, registered through
 * the same SQL entry point an operator uses. Every demo row belongs to the
 * shared scope `catalog_public`, so every demo user sees every row.
 */
import pg from 'pg';

const DEMO_SQL = `
CREATE SCHEMA IF NOT EXISTS demo;
CREATE TABLE IF NOT EXISTS demo.notes (
  id text PRIMARY KEY,
  body text NOT NULL DEFAULT '',
  price numeric(10, 2),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE TABLE IF NOT EXISTS demo.tags (
  id bigint PRIMARY KEY,
  label text NOT NULL
);
CREATE OR REPLACE FUNCTION demo.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'catalog_public'; END;
CREATE OR REPLACE FUNCTION demo.tag_scopes(p_id bigint) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'catalog_public'; END;`;

export async function installDemo(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(DEMO_SQL);
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int n FROM synchro.relations WHERE physical_schema = 'demo'");
    if ((rows[0]?.n ?? 0) > 0) return;
    await client.query(
      "SELECT synchro.synchro_register_table('demo.notes', membership_fn => 'demo.note_scopes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at')",
    );
    await client.query("SELECT synchro.synchro_register_table('demo.tags', membership_fn => 'demo.tag_scopes')");
    await client.query("SELECT synchro.synchro_register_shared_scope('catalog_public')");
  } finally {
    await client.end();
  }
}
