/**
 * Installs the synchro schema into one database: the cluster-wide roles
 * first (a role is not a database object, so no extension can own one), then
 * the extension `synchro_pg` at its current version (./extension.ts packages
 * the SQL files listed here), which creates the schema owned by synchro_owner
 * with every object created under that role and default-deny grants last,
 * then the capture publication. Installing twice is a no-op.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { EXTENSION_NAME, type ExtensionPackage, writeExtensionPackage } from './extension.ts';

const SQL_DIR = new URL('../sql/', import.meta.url);
const ROLE_FILE = '001-roles.sql';
// 052 closes default privileges over everything created before it, so it stays last.
const SCHEMA_FILES = ['002-tables.sql', '003-fences.sql', '004-registry.sql', '005-scopes.sql', '006-readiness.sql', '007-grants.sql', '008-capture.sql', '009-pull.sql', '020-client-runtime.sql', '021-table-reconfigure.sql', '022-seed.sql', '023-scope-history.sql', '024-membership-reconfigure.sql', '025-dependencies.sql', '026-scope-function-contract.sql', '027-capture-performance.sql', '028-push-guard.sql', '029-wal-events.sql', '031-checkpoint-inspection.sql', '044-membership-backfill.sql', '045-retention-lineage-reset.sql', '048-scope-high-watermark.sql', '050-compaction-batches.sql', '054-readiness-clock-and-progress.sql', '055-readiness-limits.sql', '056-capture-decode-limit.sql', '061-resumable-stream-reset.sql', '064-fence-correlation.sql', '067-registry-generation-snapshots.sql', '070-comments.sql', '073-composition-reconfigure.sql', '079-relation-rebind-after-drift.sql', '075-capture-store-integrity.sql', '076-worker-schema-usage.sql', '088-projection-bootstrap.sql', '085-adapter-entry-points.sql', '077-reset-staged-snapshot.sql', '083-worker-table-privileges.sql', '090-worker-projection-statistics.sql', '091-row-version-check.sql', '084-worker-principal-readiness.sql', '081-reset-fence-coverage.sql', '089-scope-content-links.sql', '052-default-deny.sql'];

const CLOSING_FILE = '052-default-deny.sql';

async function sql(file: string): Promise<string> {
  return await readFile(new URL(file, SQL_DIR), 'utf8');
}

const packaged = new Map<string, Promise<ExtensionPackage>>();

/**
 * The extension package of the SQL files listed here, written once per
 * process. `faults` are sensitivity-run switches of the packaging (the
 * harness passes a scenario's); a faulty package lands in a directory of its own.
 */
export function extensionPackage(faults: readonly string[] = []): Promise<ExtensionPackage> {
  const key = [...faults].sort().join(',');
  let pkg = packaged.get(key);
  if (pkg === undefined) {
    pkg = writeExtensionPackage(SQL_DIR, SCHEMA_FILES, CLOSING_FILE, { faults });
    packaged.set(key, pkg);
  }
  return pkg;
}

/** The `extension_control_path` value that finds the package before the server's own extensions. */
export function extensionControlPath(pkg: ExtensionPackage): string {
  return `$system:${pkg.controlPath}`;
}

/**
 * The statement that creates the six cluster-wide group roles, which CREATE
 * EXTENSION expects to exist; a no-op once they do. Roles belong to the
 * cluster, so any superuser session of it may run it.
 */
export async function groupRolesSql(): Promise<string> {
  return await sql(ROLE_FILE);
}

/** Whether the database already holds the synchro schema (then `installSchema` would change nothing). */
export async function schemaInstalled(db: pg.Pool | pg.ClientBase): Promise<boolean> {
  return ((await db.query("SELECT 1 FROM pg_namespace WHERE nspname = 'synchro'")).rowCount ?? 0) > 0;
}

export async function installSchema(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(await sql(ROLE_FILE));
    await client.query('BEGIN');
    // One installer at a time per database; the second finds the schema present.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('synchro.install'))");
    if (await schemaInstalled(client)) {
      await client.query('ROLLBACK');
      return false;
    }
    // The server must read the package from this machine: an embedded cluster was started with the
    // path already; for any other server it is set for this session (a superuser setting).
    await client.query("SELECT set_config('extension_control_path', $1, true)", [extensionControlPath(await extensionPackage())]);
    await client.query(`CREATE EXTENSION ${EXTENSION_NAME}`);
    // The capture publication starts empty; registration adds each relation to it. A partitioned
    // relation's rows are published as the registered relation's, not as its partitions'.
    // A publication cannot be an extension member, so it stays outside, created by the installer.
    await client.query('CREATE PUBLICATION synchro_capture WITH (publish_via_partition_root = true)');
    await client.query('COMMIT');
    return true;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    await client.end();
  }
}

/** One change a sensitivity-run fault makes to the installed SQL. */
export type SqlAmendment =
  /** Replace `from`, which must occur exactly once, by `to` in the definition of `fn` (a regprocedure) and reinstall it. */
  | { fn: string; from: string; to: string }
  /** Run a statement as the installer (a grant, for instance). */
  | { statement: string };

/**
 * Sensitivity-run faults only: applies each amendment to the installed schema.
 * A function is read back with pg_get_functiondef, edited and installed again
 * with CREATE OR REPLACE, so its owner and grants stay. A clause that is not
 * found exactly once is an error, so a fault cannot silently change nothing
 * after the SQL changes; an edit already applied (a server started again on
 * the same database) is left as it is.
 */
export async function amendInstalledSql(databaseUrl: string, amendments: readonly SqlAmendment[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const amendment of amendments) {
      if ('statement' in amendment) {
        await client.query(amendment.statement);
        continue;
      }
      const { rows } = await client.query<{ def: string }>('SELECT pg_get_functiondef($1::regprocedure) AS def', [amendment.fn]);
      const def = rows[0]?.def ?? '';
      if (!def.includes(amendment.from) && def.includes(amendment.to)) continue;
      if (def.split(amendment.from).length !== 2) throw new Error(`fault amendment: ${amendment.fn} does not contain exactly one "${amendment.from}"`);
      await client.query(def.replace(amendment.from, amendment.to));
    }
  } finally {
    await client.end();
  }
}
