/**
 * The reference's SQL packaged as the PostgreSQL extension `synchro_pg`
 * (SYNC-OPS-007): a control file, a full install script for the 0.3.1
 * baseline and for the current version, and one update script per step of
 * the chain from 0.3.1 to the current version.
 *
 * The authored source stays `reference/server/sql/NNN-*.sql`, applied in the
 * order install.ts lists them. A published version is a frozen, named list of
 * the files it added; every listed file that no published version names
 * belongs to the unpublished development version after the last one, so a
 * new file needs no work here. Each script is the concatenation of its files
 * run as `synchro_owner`, followed by the closing file (default deny, which
 * must see every object) and the marking of new tables for pg_dump. An update
 * script runs the files its version added and then the closing file again,
 * so a file that only composes when applied before the closing file (or in
 * a fresh database) makes the updated catalog differ from a clean install's,
 * which is what SYNC-OPS-007 compares.
 *
 * The package is generated into a directory named after its content (a
 * different SQL source gives a different directory), which a PostgreSQL 18
 * server reaches through `extension_control_path`; the embedded server's own
 * share directory belongs to the installed binaries and is not written.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const EXTENSION_NAME = 'synchro_pg';
/** The schema the extension lives in; fixed, since the extension is not relocatable. */
export const EXTENSION_SCHEMA = 'synchro';

interface Release {
  readonly version: string;
  /** The files this version added, frozen once the version is published. */
  readonly files: readonly string[];
}

/**
 * Published versions, oldest first. 0.3.1 is the first Protocol 3 release and
 * the oldest an update may start from: the reference's SQL as it stood when it
 * was first packaged (decision 280). Never edit a published entry, and never
 * change what an object of a published file does in that file: add a file to
 * install.ts's list (CREATE OR REPLACE, ALTER) and it joins the next version.
 */
const RELEASES: readonly Release[] = [
  {
    version: '0.3.1',
    files: [
      '002-tables.sql',
      '003-fences.sql',
      '004-registry.sql',
      '005-scopes.sql',
      '006-readiness.sql',
      '007-grants.sql',
      '008-capture.sql',
      '009-pull.sql',
      '020-client-runtime.sql',
      '021-table-reconfigure.sql',
      '022-seed.sql',
      '023-scope-history.sql',
      '024-membership-reconfigure.sql',
      '025-dependencies.sql',
      '026-scope-function-contract.sql',
      '027-capture-performance.sql',
      '028-push-guard.sql',
      '029-wal-events.sql',
      '031-checkpoint-inspection.sql',
      '044-membership-backfill.sql',
      '045-retention-lineage-reset.sql',
      '048-scope-high-watermark.sql',
      '050-compaction-batches.sql',
      '054-readiness-clock-and-progress.sql',
      '055-readiness-limits.sql',
      '056-capture-decode-limit.sql',
    ],
  },
];

/** Suffix of the unpublished version that holds files no published version names. */
const DEVELOPMENT_SUFFIX = '-dev';

export interface PackageVersion {
  version: string;
  files: string[];
}

export interface ExtensionPackage {
  /** The directory to name in `extension_control_path`; the files are in its `extension/` folder. */
  controlPath: string;
  /** Where the control file and scripts are. */
  directory: string;
  /** Every packaged version, oldest first; the last is the default. */
  versions: PackageVersion[];
  defaultVersion: string;
}

/** The versions of the chain for this ordered file list, the closing file excluded. */
export function packageVersions(schemaFiles: readonly string[], closingFile: string): PackageVersion[] {
  const listed = schemaFiles.filter((file) => file !== closingFile);
  const released = new Set<string>();
  const versions: PackageVersion[] = [];
  for (const release of RELEASES) {
    for (const file of release.files) {
      if (!listed.includes(file)) throw new Error(`extension ${EXTENSION_NAME} ${release.version} names ${file}, which install.ts does not list: a published version cannot lose a file`);
      released.add(file);
    }
    versions.push({ version: release.version, files: [...release.files] });
  }
  const unreleased = listed.filter((file) => !released.has(file));
  if (unreleased.length > 0) versions.push({ version: nextPatch(RELEASES[RELEASES.length - 1]?.version ?? '0.3.1') + DEVELOPMENT_SUFFIX, files: unreleased });
  return versions;
}

function nextPatch(version: string): string {
  const [major, minor, patch] = version.split('.').map(Number);
  return `${major}.${minor}.${Number(patch) + 1}`;
}

const GUARD = `\\echo Use "CREATE EXTENSION ${EXTENSION_NAME}" to load this file. \\quit`;

/**
 * Marks every member table and sequence not yet marked for pg_dump, so a dump
 * carries the deployment's state. A table the scripts seed (a singleton row)
 * is left unmarked: its seeded row would collide with the one CREATE EXTENSION
 * writes on restore. An update marks the tables it created the same way a
 * clean install does, so the two agree.
 */
const MARK_FOR_DUMP = `DO $mark$
DECLARE
  member regclass;
  has_rows boolean;
BEGIN
  FOR member IN
    SELECT c.oid::regclass FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
    JOIN pg_extension e ON e.oid = d.refobjid
    WHERE e.extname = '${EXTENSION_NAME}' AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
      AND d.deptype = 'e' AND c.relkind IN ('r', 'p', 'S') AND NOT c.oid = ANY (coalesce(e.extconfig, '{}'))
    ORDER BY c.oid
  LOOP
    has_rows := false;
    IF (SELECT relkind FROM pg_class WHERE oid = member) <> 'S' THEN
      EXECUTE format('SELECT EXISTS (SELECT FROM %s)', member) INTO has_rows;
    END IF;
    IF NOT has_rows THEN
      PERFORM pg_extension_config_dump(member, '');
    END IF;
  END LOOP;
END
$mark$;`;

/**
 * Every object belongs to synchro_owner, so the files run as that role. A
 * SET LOCAL made by an extension script outlives the script when CREATE or
 * ALTER EXTENSION runs inside a transaction block, so the caller's role is
 * kept first and given back at the end.
 */
const AS_OWNER = "SELECT set_config('synchro_pg.caller_role', current_setting('role'), true);\nSET LOCAL ROLE synchro_owner;";
const AS_CALLER = "SELECT set_config('role', current_setting('synchro_pg.caller_role'), true);";

async function sqlOf(sqlDir: URL, files: readonly string[]): Promise<string> {
  const parts: string[] = [];
  for (const file of files) parts.push(`-- ${file}\n${await readFile(new URL(file, sqlDir), 'utf8')}`);
  return parts.join('\n');
}

/**
 * The part every script shares: `files` and then the closing file run as
 * synchro_owner, new tables marked for pg_dump, the caller's role given back.
 */
async function filesAsOwner(sqlDir: URL, files: readonly string[], closingFile: string): Promise<string> {
  return [AS_OWNER, await sqlOf(sqlDir, [...files, closingFile]), MARK_FOR_DUMP, AS_CALLER, ''].join('\n');
}

/** A full install: the schema given to synchro_owner, every file of `files` as synchro_owner, then the closing file. */
async function installScript(sqlDir: URL, version: string, files: readonly string[], closingFile: string, schemaLeftToInstaller = false): Promise<string> {
  return [
    GUARD,
    `-- ${EXTENSION_NAME} ${version}, full install (generated from reference/server/sql by reference/server/db/extension.ts).`,
    // CREATE EXTENSION creates the control file's schema as the caller; the protocol gives it to synchro_owner.
    schemaLeftToInstaller ? 'GRANT USAGE, CREATE ON SCHEMA @extschema@ TO synchro_owner;' : 'ALTER SCHEMA @extschema@ OWNER TO synchro_owner;', // fault: server:ops007-schema-left-to-installer
    'CREATE SCHEMA synchro_projection AUTHORIZATION synchro_owner;',
    await filesAsOwner(sqlDir, files, closingFile),
  ].join('\n');
}

/** One step of the chain: the files `to` added, then the closing file again over everything. */
async function updateScript(sqlDir: URL, from: string, to: string, files: readonly string[], closingFile: string): Promise<string> {
  return [
    GUARD,
    `-- ${EXTENSION_NAME} update ${from} -> ${to} (generated from reference/server/sql by reference/server/db/extension.ts).`,
    await filesAsOwner(sqlDir, files, closingFile),
  ].join('\n');
}

/** The package's files by name: control file, the baseline's and the current version's full scripts, and the update chain. */
export async function packageFiles(sqlDir: URL, schemaFiles: readonly string[], closingFile: string, faults: readonly string[] = []): Promise<{ files: Map<string, string>; versions: PackageVersion[] }> {
  const on = (name: string) => faults.includes(name) || faults.includes(`server:${name}`);
  const versions = packageVersions(schemaFiles, closingFile);
  const baseline = versions[0] as PackageVersion;
  const current = versions[versions.length - 1] as PackageVersion;
  const files = new Map<string, string>();
  files.set(
    `${EXTENSION_NAME}.control`,
    [
      `# ${EXTENSION_NAME}: the Synchro reference server's SQL (generated by reference/server/db/extension.ts)`,
      "comment = 'Synchro protocol 3 reference server schema'",
      `default_version = '${current.version}'`,
      'relocatable = false',
      `schema = ${EXTENSION_SCHEMA}`,
      'superuser = true',
      '',
    ].join('\n'),
  );
  files.set(`${EXTENSION_NAME}--${baseline.version}.sql`, await installScript(sqlDir, baseline.version, baseline.files, closingFile, on('ops007-schema-left-to-installer')));
  if (current !== baseline) {
    // The current version's clean install applies the files in install.ts's order, not version by version.
    const currentFiles = schemaFiles.filter((file) => file !== closingFile);
    files.set(`${EXTENSION_NAME}--${current.version}.sql`, await installScript(sqlDir, current.version, currentFiles, closingFile, on('ops007-schema-left-to-installer')));
  }
  for (let i = 1; i < versions.length; i += 1) {
    const from = (versions[i - 1] as PackageVersion).version;
    const to = versions[i] as PackageVersion;
    let added = to.files;
    if (on('ops007-update-forgets-a-file')) added = added.slice(0, -1); // fault: server:ops007-update-forgets-a-file
    let script = await updateScript(sqlDir, from, to.version, added, closingFile);
    if (on('ops007-update-if-not-exists')) script = script.replace(AS_OWNER, `CREATE SCHEMA IF NOT EXISTS synchro_projection AUTHORIZATION synchro_owner;\n${AS_OWNER}`); // fault: server:ops007-update-if-not-exists
    const source = on('ops007-update-from-unpublished') ? '0.3.0' : from; // fault: server:ops007-update-from-unpublished
    files.set(`${EXTENSION_NAME}--${source}--${to.version}.sql`, script);
  }
  if (on('ops007-legacy-update-paths')) for (const [from, to] of [['unpackaged', baseline.version], ['0.3.0', baseline.version], ['0.2.0', '0.3.0']]) files.set(`${EXTENSION_NAME}--${from}--${to}.sql`, `${GUARD}\nSELECT 1;\n`); // fault: server:ops007-legacy-update-paths
  return { files, versions };
}

/**
 * Writes the package where a PostgreSQL server on this machine can read it
 * (the server may run as another user) and returns where it is. The directory
 * is named after the content, so processes that package the same SQL share
 * it, and one writer's files are never seen half-written by another.
 */
export async function writeExtensionPackage(sqlDir: URL, schemaFiles: readonly string[], closingFile: string, options: { parent?: string; faults?: readonly string[] } = {}): Promise<ExtensionPackage> {
  const parent = options.parent ?? tmpdir();
  const { files, versions } = await packageFiles(sqlDir, schemaFiles, closingFile, options.faults ?? []);
  const hash = createHash('sha256');
  for (const [name, text] of [...files].sort(([a], [b]) => a.localeCompare(b))) hash.update(`${name}\0${text}\0`);
  const controlPath = join(parent, `synchro-pg-extension-${hash.digest('hex').slice(0, 16)}`);
  const directory = join(controlPath, 'extension');
  const current = versions[versions.length - 1] as PackageVersion;
  const result = { controlPath, directory, versions, defaultVersion: current.version };
  if (existsSync(join(directory, `${EXTENSION_NAME}.control`))) return result;
  const staging = await mkdtemp(join(parent, 'synchro-pg-extension-staging-'));
  try {
    await mkdir(join(staging, 'extension'));
    for (const [name, text] of files) await writeFile(join(staging, 'extension', name), text, { mode: 0o644 });
    await chmod(staging, 0o755);
    await chmod(join(staging, 'extension'), 0o755);
    await rename(staging, controlPath);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another process packaged the same content first; its files are the same.
    if (!existsSync(join(directory, `${EXTENSION_NAME}.control`))) throw error;
  }
  return result;
}
