/**
 * Installs the synchro schema into one database: the cluster-wide roles
 * first, then the schema owned by synchro_owner with every object created
 * under that role, then default-deny grants. Installing twice is a no-op.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';

const SQL_DIR = new URL('../sql/', import.meta.url);
const ROLE_FILE = '001-roles.sql';
const SCHEMA_FILES = ['002-tables.sql', '003-fences.sql', '004-registry.sql', '005-scopes.sql', '006-readiness.sql', '007-grants.sql', '008-capture.sql', '009-pull.sql', '020-client-runtime.sql', '021-table-reconfigure.sql', '022-seed.sql', '023-scope-history.sql', '024-membership-reconfigure.sql', '025-dependencies.sql', '026-scope-function-contract.sql'];

async function sql(file: string): Promise<string> {
  return await readFile(new URL(file, SQL_DIR), 'utf8');
}

export async function installSchema(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(await sql(ROLE_FILE));
    await client.query('BEGIN');
    // One installer at a time per database; the second finds the schema present.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('synchro.install'))");
    const { rowCount } = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'synchro'");
    if (rowCount !== 0) {
      await client.query('ROLLBACK');
      return false;
    }
    await client.query('CREATE SCHEMA synchro AUTHORIZATION synchro_owner');
    await client.query('CREATE SCHEMA synchro_projection AUTHORIZATION synchro_owner');
    await client.query('SET LOCAL ROLE synchro_owner');
    for (const file of SCHEMA_FILES) await client.query(await sql(file));
    // The capture publication starts empty; registration adds each relation to it.
    await client.query('RESET ROLE');
    await client.query('CREATE PUBLICATION synchro_capture');
    await client.query('COMMIT');
    return true;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    await client.end();
  }
}

/**
 * Sensitivity-run fault only: registration stops checking the scope function
 * contract (language, volatility, rights, forbidden calls), so a conformance
 * suite can show it notices a server that takes any function.
 */
export async function waiveScopeFunctionContract(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CREATE OR REPLACE FUNCTION synchro.scope_function_contract(p_proc regprocedure) RETURNS void LANGUAGE sql AS $$ SELECT $$');
  } finally {
    await client.end();
  }
}

/**
 * Sensitivity-run faults only: rewrites one installed function of this
 * database by replacing text in its stored definition, so a fault switch can
 * break one clause whose behaviour lives in SQL. An edit whose replacement is
 * already there is skipped (a server restarted on the same database); one
 * whose text is missing throws, so a fault never silently stops applying
 * after the SQL changes.
 */
export async function alterInstalledFunction(databaseUrl: string, signature: string, edits: ReadonlyArray<readonly [string, string]>): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ def: string }>('SELECT pg_get_functiondef($1::regprocedure) AS def', [signature]);
    let definition = rows[0]?.def ?? '';
    for (const [from, to] of edits) {
      if (definition.includes(to)) continue;
      if (!definition.includes(from)) throw new Error(`fault switch: the definition of ${signature} has no text ${JSON.stringify(from)} to replace`);
      definition = definition.replace(from, to);
    }
    await client.query(definition);
  } finally {
    await client.end();
  }
}
