/**
 * SYNC-OPS-007: the clean databases a scenario installs the packaged
 * extension into (the adapter's optional `extension` control), by label, and
 * what the scenario read from them. Without the control the scenario is
 * undetermined; a server that does not declare the `postgresql-extension`
 * form never gets here (its scenarios are not-applicable).
 */
import type { ExtensionControl, ExtensionDatabase, Row } from '../../../harness/adapters/server.ts';
import { compareVersions, isSemVer } from '../../../harness/codec/semver.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

interface ExtensionScenario {
  databases: Map<string, ExtensionDatabase>;
  /** The database the unlabelled steps act on. */
  current?: ExtensionDatabase;
  /** Logins the "can run" steps ran as. */
  logins: Set<string>;
  updatePaths?: Array<{ source: string; target: string; path: string | null }>;
  files?: Record<string, string>;
  compared?: [string, string];
}

const scenarios = new WeakMap<SyncWorld, ExtensionScenario>();

export function extensionScenario(world: SyncWorld): ExtensionScenario {
  let state = scenarios.get(world);
  if (state === undefined) {
    state = { databases: new Map(), logins: new Set() };
    scenarios.set(world, state);
  }
  return state;
}

/** The adapter's extension control, or 'skipped' (undetermined) when it offers none. */
export async function extensionOf(world: SyncWorld): Promise<ExtensionControl | 'skipped'> {
  const server = await world.server();
  if (server.extension === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no packaged extension and clean databases to install it into (optional control "extension", docs/adapters.md)`);
  return server.extension;
}

/** A new clean PostgreSQL 18 database with nothing of the extension in it, checked before use. */
export async function cleanDatabase(world: SyncWorld, control: ExtensionControl, label: string): Promise<ExtensionDatabase> {
  const db = await control.cleanDatabase(label);
  const [facts] = await db.query(
    `SELECT current_setting('server_version_num')::int / 10000 AS major,
            EXISTS (SELECT FROM pg_extension WHERE extname = '${control.name}') AS installed,
            EXISTS (SELECT FROM pg_namespace WHERE nspname = 'synchro') AS has_schema`,
  );
  if (facts?.major !== 18) throw new Error(`the clean database "${label}" is on PostgreSQL ${String(facts?.major)}, not 18`);
  if (facts.installed === true || facts.has_schema === true) throw new Error(`the clean database "${label}" is not clean: it already has the extension or a "synchro" schema`);
  const state = extensionScenario(world);
  state.databases.set(label, db);
  state.current = db;
  return db;
}

export function databaseNamed(world: SyncWorld, label: string): ExtensionDatabase {
  const db = extensionScenario(world).databases.get(label);
  if (db === undefined) throw new Error(`the scenario has no clean database "${label}"`);
  return db;
}

export function currentDatabase(world: SyncWorld): ExtensionDatabase {
  const db = extensionScenario(world).current;
  if (db === undefined) throw new Error('no clean database was set up before this step');
  return db;
}

/** The packaged versions as the server lists them (pg_available_extension_versions), in SemVer order, and the default one. */
export async function packagedVersions(db: ExtensionDatabase, name: string): Promise<{ versions: string[]; current: string }> {
  const rows = await db.query(`SELECT version FROM pg_available_extension_versions WHERE name = '${name}'`);
  const [available] = await db.query(`SELECT default_version FROM pg_available_extensions WHERE name = '${name}'`);
  if (available === undefined) throw new Error(`the server lists no available extension "${name}"`);
  const versions = rows.map((row: Row) => String(row.version));
  return { versions: sortBySemVer(versions), current: String(available.default_version) };
}

/** Versions in SemVer precedence order; a version outside the SemVer grammar is an error. */
export function sortBySemVer(versions: readonly string[]): string[] {
  const malformed = versions.filter((version) => !isSemVer(version));
  if (malformed.length > 0) throw new Error(`packaged versions ${JSON.stringify(malformed)} are not SemVer versions`);
  return [...versions].sort(compareVersions);
}
