/**
 * SYNC-OPS-007 Extension Migration Baseline, for a server shipped as a
 * PostgreSQL extension (form `postgresql-extension`). Through the adapter's
 * `extension` control the steps get clean PostgreSQL 18 databases that reach
 * the packaged files, install versions there as the operator would (CREATE /
 * ALTER EXTENSION), read the update graph PostgreSQL itself derives from the
 * packaged scripts, and compare an updated installation with a clean install
 * of the current version from the catalogs.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { ExtensionControl } from '../../harness/adapters/server.ts';
import { databaseRole, MEMBERSHIPS_SQL } from '../support/database-roles/as-role.ts';
import { type CatalogFacet, type CatalogSnapshot, difference, snapshotExtension } from '../support/extension-migration/catalog.ts';
import { cleanDatabase, currentDatabase, databaseNamed, extensionOf, extensionScenario, packagedVersions, sortBySemVer } from '../support/extension-migration/databases.ts';
import { topLevelStatements } from '../support/extension-migration/statements.ts';
import type { SyncWorld } from '../support/world.ts';

const GROUP_ROLES = ['synchro_owner', 'synchro_adapter', 'synchro_seed', 'synchro_monitor', 'synchro_operator', 'synchro_worker'];
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

async function control(world: SyncWorld): Promise<ExtensionControl | 'skipped'> {
  return extensionOf(world);
}

// ---- Rule: 0.3.1 is the first supported baseline ----

Given('a clean PostgreSQL 18 database', async function (this: SyncWorld) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  await cleanDatabase(this, ext, 'clean');
});

Given('the six group roles and one worker login are provisioned', async function (this: SyncWorld) {
  const db = currentDatabase(this);
  const { workerLogin } = await db.provisionRoles();
  const groups = await db.query(`SELECT rolname FROM pg_roles WHERE rolname = ANY (ARRAY[${GROUP_ROLES.map(literal).join(', ')}]) AND NOT rolcanlogin`);
  if (groups.length !== GROUP_ROLES.length) throw new Error(`provisioning left ${groups.length} of the six group roles (${GROUP_ROLES.join(', ')}) as NOLOGIN roles`);
  const [worker] = await db.query(
    `SELECT r.rolcanlogin AND r.rolreplication AND NOT r.rolsuper AS fit,
            (SELECT array_agg(g.rolname::text ORDER BY g.rolname) FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) AS groups
       FROM pg_roles r WHERE r.rolname = ${literal(workerLogin)}`,
  );
  if (worker?.fit !== true || JSON.stringify(worker.groups) !== JSON.stringify(['synchro_worker'])) {
    throw new Error(`the worker login "${workerLogin}" is not a LOGIN REPLICATION non-superuser member of synchro_worker only: ${JSON.stringify(worker)}`);
  }
});

When('the operator runs:', async function (this: SyncWorld, sql: string) {
  await currentDatabase(this).query(sql);
});

Then('server inspection shows schema {string} owned by {string}', async function (this: SyncWorld, schema: string, owner: string) {
  const rows = await currentDatabase(this).query(`SELECT pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = ${literal(schema)}`);
  this.assert.equal(rows.map((row) => row.owner), [owner], `owner of schema "${schema}"`);
});

Then('server inspection shows extension {string} at version {string} with {string} false', async function (this: SyncWorld, name: string, version: string, column: string) {
  if (column !== 'extrelocatable') throw new Error(`this step reads pg_extension.extrelocatable, not "${column}"`);
  const rows = await currentDatabase(this).query(`SELECT extversion, extrelocatable, extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = ${literal(name)}`);
  this.assert.equal(rows, [{ extversion: version, extrelocatable: false, schema: 'synchro' }], `pg_extension row of "${name}"`);
});

Then('a login that is a member of {string} only can run {string}', async function (this: SyncWorld, role: string, sql: string) {
  const db = currentDatabase(this);
  const memberships = await db.asRole(databaseRole(role), MEMBERSHIPS_SQL);
  if (!memberships.ok) throw new Error(`the login of "${role}" could not read its memberships: ${memberships.message}`);
  this.assert.equal(memberships.rows[0]?.groups, [role], `Synchro groups of the login "${memberships.login}"`);
  const outcome = await db.asRole(databaseRole(role), sql);
  extensionScenario(this).logins.add(outcome.login);
  this.assert.ok(outcome.ok, `${sql} as "${outcome.login}" (member of ${role} only) failed: ${outcome.ok ? '' : `${outcome.sqlstate} ${outcome.message}`}`);
});

Then('none of those logins is a superuser', async function (this: SyncWorld) {
  const logins = [...extensionScenario(this).logins];
  this.assert.ok(logins.length > 0, 'no login ran a statement before this step');
  const rows = await currentDatabase(this).query(`SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = ANY (ARRAY[${logins.map(literal).join(', ')}]) ORDER BY rolname`);
  this.assert.equal(
    rows,
    logins.sort().map((rolname) => ({ rolname, rolsuper: false, rolbypassrls: false })),
    'superuser and bypassrls attributes of the logins that ran the statements',
  );
});

// ---- Rule: one chain of update scripts; Rule: no path from pre-0.3.1 states ----

Given('a clean PostgreSQL 18 database with the packaged extension files', async function (this: SyncWorld) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  const db = await cleanDatabase(this, ext, 'clean');
  const available = await db.query(`SELECT 1 FROM pg_available_extensions WHERE name = ${literal(ext.name)}`);
  if (available.length !== 1) throw new Error(`the clean database does not reach the packaged extension "${ext.name}"`);
});

When("the harness reads pg_extension_update_paths\\('synchro_pg')", async function (this: SyncWorld) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  const rows = await currentDatabase(this).query(`SELECT source, target, path FROM pg_extension_update_paths(${literal(ext.name)})`);
  extensionScenario(this).updatePaths = rows.map((row) => ({ source: String(row.source), target: String(row.target), path: row.path === null ? null : String(row.path) }));
  extensionScenario(this).files = await ext.files();
});

function updatePaths(world: SyncWorld) {
  const paths = extensionScenario(world).updatePaths;
  if (paths === undefined) throw new Error('the update paths were not read before this step');
  return paths;
}

async function chainFacts(world: SyncWorld): Promise<{ name: string; versions: string[]; current: string }> {
  const ext = await control(world);
  if (ext === 'skipped') throw new Error('no extension control');
  const { versions, current } = await packagedVersions(currentDatabase(world), ext.name);
  return { name: ext.name, versions, current };
}

Then('there is a path from {string} to the current version', async function (this: SyncWorld, from: string) {
  const { current } = await chainFacts(this);
  const path = updatePaths(this).find((p) => p.source === from && p.target === current)?.path ?? null;
  this.assert.ok(path !== null, `pg_extension_update_paths has no path from ${from} to the current version ${current}`);
});

Then('every version after {string} has exactly one update script leading into it, from the version just before it', async function (this: SyncWorld, baseline: string) {
  const { name, versions } = await chainFacts(this);
  const files = Object.keys(extensionScenario(this).files ?? {});
  const scripts = files.map((file) => new RegExp(`^${name}--(.+)--(.+)\\.sql$`).exec(file)).filter((m) => m !== null).map((m) => ({ from: m[1] as string, to: m[2] as string }));
  const after = versions.slice(versions.indexOf(baseline) + 1);
  this.assert.ok(versions.includes(baseline) && after.length > 0, `the packaged versions ${JSON.stringify(versions)} include ${baseline} and a later version`);
  const into = after.map((version) => ({ version, from: scripts.filter((s) => s.to === version).map((s) => s.from) }));
  const expected = after.map((version, i) => ({ version, from: [i === 0 ? baseline : (after[i - 1] as string)] }));
  this.assert.equal(into, expected, 'update scripts leading into each version after the baseline');
});

Then('the path from {string} to the current version visits every packaged version in SemVer order', async function (this: SyncWorld, from: string) {
  const { versions, current } = await chainFacts(this);
  const path = updatePaths(this).find((p) => p.source === from && p.target === current)?.path ?? null;
  const expected = versions.slice(versions.indexOf(from), versions.indexOf(current) + 1);
  this.assert.equal(path?.split('--') ?? null, sortBySemVer(expected), `update path from ${from} to ${current}`);
  this.assert.equal(current, versions[versions.length - 1], 'the current (default) version is the highest packaged version');
});

Then('there is no path from {string} to any version', async function (this: SyncWorld, from: string) {
  const paths = updatePaths(this).filter((p) => p.source === from && p.path !== null);
  const scripts = Object.keys(extensionScenario(this).files ?? {}).filter((file) => file.includes(`--${from}--`));
  this.assert.equal({ paths, scripts }, { paths: [], scripts: [] }, `update paths and scripts starting at ${from}`);
});

// ---- Rule: an updated 0.3.1 equals a clean install of the current version ----

Given("a clean PostgreSQL 18 database {string} where the operator ran CREATE EXTENSION synchro_pg VERSION '0.3.1'", async function (this: SyncWorld, label: string) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  const db = await cleanDatabase(this, ext, label);
  await db.provisionRoles();
  await db.query(`CREATE EXTENSION ${ext.name} VERSION '0.3.1'`);
});

Given('the operator ran ALTER EXTENSION synchro_pg UPDATE TO each later version in turn in {string}', async function (this: SyncWorld, label: string) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  const db = databaseNamed(this, label);
  const { versions } = await packagedVersions(db, ext.name);
  const [installed] = await db.query(`SELECT extversion FROM pg_extension WHERE extname = ${literal(ext.name)}`);
  const later = versions.slice(versions.indexOf(String(installed?.extversion)) + 1);
  if (later.length === 0) throw new Error(`no packaged version comes after ${String(installed?.extversion)}: there is nothing to update to`);
  for (const version of later) {
    await db.query(`ALTER EXTENSION ${ext.name} UPDATE TO ${literal(version)}`);
    const [now] = await db.query(`SELECT extversion FROM pg_extension WHERE extname = ${literal(ext.name)}`);
    if (now?.extversion !== version) throw new Error(`ALTER EXTENSION ${ext.name} UPDATE TO '${version}' left version ${String(now?.extversion)}`);
  }
});

Given("a clean PostgreSQL 18 database {string} where the operator ran CREATE EXTENSION synchro_pg at the current version", async function (this: SyncWorld, label: string) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  const db = await cleanDatabase(this, ext, label);
  await db.provisionRoles();
  const { current } = await packagedVersions(db, ext.name);
  await db.query(`CREATE EXTENSION ${ext.name} VERSION ${literal(current)}`);
});

const snapshots = new WeakMap<SyncWorld, [CatalogSnapshot, CatalogSnapshot, string, string]>();

When('the harness compares {string} with {string}', async function (this: SyncWorld, first: string, second: string) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  snapshots.set(this, [await snapshotExtension(databaseNamed(this, first), ext.name), await snapshotExtension(databaseNamed(this, second), ext.name), first, second]);
});

function sameFacet(world: SyncWorld, facet: CatalogFacet, what: string): void {
  const compared = snapshots.get(world);
  if (compared === undefined) throw new Error('the databases were not compared before this step');
  const [a, b, first, second] = compared;
  world.assert.ok(a[facet].length > 0, `"${first}" has no ${what} to compare`);
  const { onlyFirst, onlySecond } = difference(a[facet], b[facet]);
  world.assert.equal({ [`only in ${first}`]: onlyFirst, [`only in ${second}`]: onlySecond }, { [`only in ${first}`]: [], [`only in ${second}`]: [] }, `${what} of "${first}" and "${second}"`);
}

Then('both have the same extension members by pg_describe_object', function (this: SyncWorld) {
  sameFacet(this, 'members', 'extension members');
});

Then('both have the same function signatures, return types, volatility, security and search_path settings', function (this: SyncWorld) {
  sameFacet(this, 'functions', 'member functions');
});

Then('both have the same ACLs on the schema and every member object', function (this: SyncWorld) {
  sameFacet(this, 'acls', 'owners and ACLs');
});

Then('both have the same column definitions, constraints, indexes and triggers on every member table', function (this: SyncWorld) {
  sameFacet(this, 'tables', 'member relation definitions');
});

Then('both have the same comments on member objects', function (this: SyncWorld) {
  sameFacet(this, 'comments', 'comments on the schema and member objects');
});

// ---- Rule: IF NOT EXISTS is not migration logic ----

When('the harness reads every update script {string} in the packaged extension', async function (this: SyncWorld, pattern: string) {
  const ext = await control(this);
  if (ext === 'skipped') return ext;
  if (pattern !== `${ext.name}--<from>--<to>.sql`) throw new Error(`this step reads the update scripts of "${ext.name}", named ${ext.name}--<from>--<to>.sql, not "${pattern}"`);
  const files = await ext.files();
  extensionScenario(this).files = Object.fromEntries(Object.entries(files).filter(([file]) => new RegExp(`^${ext.name}--.+--.+\\.sql$`).test(file)));
});

Then('no statement in them contains {string}', function (this: SyncWorld, clause: string) {
  const files = extensionScenario(this).files ?? {};
  this.assert.ok(Object.keys(files).length > 0, 'the package has no update script to read');
  const offending: string[] = [];
  const words = new RegExp(`\\b${clause.split(/\s+/).join('\\s+')}\\b`, 'i');
  for (const [file, script] of Object.entries(files)) {
    // psql meta-commands (the \echo guard) are not statements; PostgreSQL drops them too.
    const sql = script.split('\n').filter((line) => !line.startsWith('\\')).join('\n');
    for (const statement of topLevelStatements(sql)) if (words.test(statement)) offending.push(`${file}: ${statement.slice(0, 120)}`);
  }
  this.assert.equal(offending, [], `statements of the update scripts containing "${clause}"`);
});
