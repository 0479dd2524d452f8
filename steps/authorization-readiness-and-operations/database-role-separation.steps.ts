/**
 * SYNC-OPS-002 Database Role Separation: the group roles' attributes and
 * memberships read in the catalog, and their function privileges tried as a
 * login of each (the may/may-not call step of SYNC-OPS-001). The worker
 * login is the adapter's login for `synchro_worker` (`sourceSql.asRole`);
 * without one its scenarios are undetermined (decision 205).
 */
import { Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import type { WorkerConnectionOutcome } from '../../harness/adapters/server.ts';
import { clusterOfItsOwnPhrase } from '../support/database-crash/index.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { lastRoleOutcome, rememberOutcome, runAsRole } from '../support/database-roles/as-role.ts';
import type { SyncWorld } from '../support/world.ts';

const SYNCHRO_GROUPS = ['synchro_owner', 'synchro_adapter', 'synchro_seed', 'synchro_monitor', 'synchro_operator', 'synchro_worker'];
const RUNTIME_GROUPS = SYNCHRO_GROUPS.filter((g) => g !== 'synchro_owner');

function listOf(text: string): string[] {
  return text.split(',').map((item) => item.trim()).filter((item) => item !== '');
}

Then(
  'server inspection shows role {string} with rolcanlogin, rolreplication, rolsuper, rolcreatedb, rolcreaterole and rolbypassrls all false',
  async function (this: SyncWorld, role: string) {
    const [row] = await inspectRows<Record<string, boolean>>(
      this,
      'SELECT rolcanlogin, rolreplication, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = $1',
      [role],
    );
    if (row === undefined) throw new Error(`server inspection shows no role "${role}"`);
    this.assert.equal(row, { rolcanlogin: false, rolreplication: false, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false }, `attributes of group role "${role}"`);
  },
);

/** Every (member, group) pair, direct or through other roles, among roles that reach a Synchro group. */
const MEMBERSHIP_CLOSURE = `WITH RECURSIVE reach(member, grp) AS (
    SELECT m.member, m.roleid FROM pg_auth_members m
    UNION SELECT r.member, m.roleid FROM reach r JOIN pg_auth_members m ON m.member = r.grp)
  SELECT mr.rolname AS member, mr.rolcanlogin AS login, mr.rolsuper AS superuser, gr.rolname AS grp
    FROM reach JOIN pg_roles mr ON mr.oid = reach.member JOIN pg_roles gr ON gr.oid = reach.grp
   WHERE gr.rolname = ANY ($1::text[])`;

interface Membership {
  member: string;
  login: boolean;
  superuser: boolean;
  grp: string;
}

async function memberships(world: SyncWorld): Promise<Membership[]> {
  return inspectRows<Membership & Record<string, unknown>>(world, MEMBERSHIP_CLOSURE, [SYNCHRO_GROUPS]);
}

Then('server inspection shows no runtime group and no login that belongs to a runtime group among the members of {string}', async function (this: SyncWorld, owner: string) {
  const all = await memberships(this);
  const runtimeLogins = new Set(all.filter((m) => m.login && RUNTIME_GROUPS.includes(m.grp)).map((m) => m.member));
  const offending = all.filter((m) => m.grp === owner && (RUNTIME_GROUPS.includes(m.member) || runtimeLogins.has(m.member))).map((m) => m.member);
  this.assert.equal(offending, [], `runtime groups and runtime logins among the members of "${owner}"`);
});

Then('server inspection shows every runtime login is a member of exactly one of {string}', async function (this: SyncWorld, groups: string) {
  const runtime = listOf(groups);
  const all = (await memberships(this)).filter((m) => m.login && !m.superuser && runtime.includes(m.grp));
  const byLogin = new Map<string, string[]>();
  for (const m of all) byLogin.set(m.member, [...(byLogin.get(m.member) ?? []), m.grp]);
  this.assert.ok(byLogin.size > 0, `server inspection shows no login in any of ${groups}`);
  this.assert.equal(
    [...byLogin].filter(([, inGroups]) => inGroups.length !== 1).map(([login, inGroups]) => `${login}: ${inGroups.sort().join(', ')}`),
    [],
    `runtime logins (${byLogin.size}) in more than one of ${groups}`,
  );
});

Then('server inspection shows no runtime group is a member of another Synchro group', async function (this: SyncWorld) {
  const nested = (await memberships(this)).filter((m) => SYNCHRO_GROUPS.includes(m.member)).map((m) => `${m.member} in ${m.grp}`);
  this.assert.equal(nested, [], 'Synchro groups that are members of another Synchro group');
});

Then(
  'server inspection shows, for each of {string}, that it can execute fewer functions in schema {string} than the schema holds',
  async function (this: SyncWorld, groups: string, schema: string) {
    const rows = await inspectRows<{ role: string; executable: string; total: string }>(
      this,
      `SELECT r AS role, count(*) FILTER (WHERE has_function_privilege(r, p.oid, 'EXECUTE')) AS executable, count(*) AS total
         FROM unnest($1::text[]) r CROSS JOIN pg_proc p WHERE p.pronamespace = $2::regnamespace GROUP BY r ORDER BY r`,
      [listOf(groups), schema],
    );
    this.assert.equal(rows.length, listOf(groups).length, `server inspection found functions in schema "${schema}" for ${groups}`);
    this.assert.equal(
      rows.filter((r) => Number(r.executable) >= Number(r.total)).map((r) => `${r.role}: ${r.executable} of ${r.total}`),
      [],
      `groups that can execute every function of schema "${schema}"`,
    );
  },
);

/** The adapter's worker login, or 'skipped' when it offers none (decision 205). */
async function workerLogin(world: SyncWorld): Promise<string | 'skipped'> {
  const outcome = await runAsRole(world, 'synchro_worker', 'SELECT session_user AS login');
  if (outcome === 'skipped') return 'skipped';
  if (!outcome.ok) throw new Error(`the worker login could not connect: ${outcome.sqlstate} ${outcome.message}`);
  return outcome.login;
}

async function workerRoleRow(world: SyncWorld): Promise<Record<string, unknown> | 'skipped'> {
  const login = await workerLogin(world);
  if (login === 'skipped') return 'skipped';
  const [row] = await inspectRows(world, 'SELECT rolname, rolcanlogin, rolreplication, rolinherit, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = $1', [login]);
  if (row === undefined) throw new Error(`server inspection shows no role "${login}"`);
  return row;
}

Then('server inspection shows the configured worker login with rolcanlogin true, rolreplication true and rolinherit false', async function (this: SyncWorld) {
  const row = await workerRoleRow(this);
  if (row === 'skipped') return 'skipped';
  this.assert.equal({ rolcanlogin: row.rolcanlogin, rolreplication: row.rolreplication, rolinherit: row.rolinherit }, { rolcanlogin: true, rolreplication: true, rolinherit: false }, `attributes of worker login ${row.rolname}`);
  return undefined;
});

Then('server inspection shows the worker login with superuser, createdb, createrole and bypassrls all false', async function (this: SyncWorld) {
  const row = await workerRoleRow(this);
  if (row === 'skipped') return 'skipped';
  this.assert.equal([row.rolsuper, row.rolcreatedb, row.rolcreaterole, row.rolbypassrls], [false, false, false, false], `superuser, createdb, createrole, bypassrls of worker login ${row.rolname}`);
  return undefined;
});

Then('server inspection shows exactly one membership of the worker login, in {string}', async function (this: SyncWorld, group: string) {
  const login = await workerLogin(this);
  if (login === 'skipped') return 'skipped';
  const rows = await inspectRows<{ grp: string }>(this, 'SELECT g.rolname AS grp FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = $1)', [login]);
  this.assert.equal(rows.map((r) => r.grp), [group], `memberships of worker login ${login}`);
  return undefined;
});

/**
 * Replication-capable logins besides `login`. A login that ANOTHER database
 * of the cluster configures as its own worker login (the 005 sheet's setting
 * `synchro.worker_login`, set per database) is that database's principal:
 * a cluster shared by several configured databases (the harness's run
 * cluster, one database per scenario) holds one such login each. With one
 * configured database this is every other non-superuser replication login.
 */
const OTHER_REPLICATION_LOGINS = `SELECT o.rolname FROM pg_roles o
  WHERE o.rolcanlogin AND o.rolreplication AND NOT o.rolsuper AND o.rolname <> $1
    AND NOT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
                     WHERE s.setrole = 0 AND d.datname <> current_database() AND ('synchro.worker_login=' || o.rolname) = ANY (s.setconfig))
  ORDER BY 1`;

Then('server inspection shows no other non-superuser login with rolreplication true', async function (this: SyncWorld) {
  const login = await workerLogin(this);
  if (login === 'skipped') return 'skipped';
  const rows = await inspectRows<{ rolname: string }>(this, OTHER_REPLICATION_LOGINS, [login]);
  this.assert.equal(rows.map((r) => r.rolname), [], `non-superuser replication logins other than the worker login ${login}`);
  return undefined;
});

When(/^the worker login runs(, without SET ROLE)?:$/, async function (this: SyncWorld, _withoutSetRole: string | undefined, sql: string) {
  const outcome = await runAsRole(this, 'synchro_worker', sql);
  if (outcome === 'skipped') return 'skipped';
  rememberOutcome(this, outcome);
  return undefined;
});

Then('the statement run as the worker login succeeds', function (this: SyncWorld) {
  const outcome = lastRoleOutcome(this);
  this.assert.ok(outcome.ok, `the statement run as login "${outcome.login}" failed${outcome.ok ? '' : `: ${outcome.sqlstate} ${outcome.message}`}`);
});

/** The scenario's source database as the operator (superuser SQL through the adapter's `sourceSql`). */
async function operatorSql(world: SyncWorld): Promise<NonNullable<Awaited<ReturnType<SyncWorld['readyServer']>>['sourceSql']>> {
  const server = await world.readyServer();
  if (server.sourceSql === undefined) throw new Error(`server adapter "${server.id}" has no sourceSql capability to change database roles`);
  return server.sourceSql;
}

const quoteRole = (name: string) => `"${name.replaceAll('"', '""')}"`;

// A LOGIN REPLICATION role is cluster-wide: made in the run's shared cluster it would be a second
// principal of every concurrent scenario's database. The scenario gets a cluster of its own.
clusterOfItsOwnPhrase(/^the operator creates a login "[^"]+" with LOGIN REPLICATION$/);

When('the operator creates a login {string} with LOGIN REPLICATION', async function (this: SyncWorld, login: string) {
  await (await operatorSql(this)).query(`CREATE ROLE ${quoteRole(login)} LOGIN REPLICATION`);
});

When('the operator drops login {string}', async function (this: SyncWorld, login: string) {
  await (await operatorSql(this)).query(`DROP ROLE ${quoteRole(login)}`);
});

/** What each defect of the feature's worker-login outline does to the login, as an operator would. */
const WORKER_LOGIN_DEFECTS: Array<[RegExp, (login: string, match: RegExpMatchArray) => string]> = [
  [/^inherits privileges$/, (login) => `ALTER ROLE ${quoteRole(login)} INHERIT`],
  [/^is also a member of "([a-z_]+)"$/, (login, match) => `GRANT ${quoteRole(match[1] as string)} TO ${quoteRole(login)}`],
  [/^loses its REPLICATION attribute$/, (login) => `ALTER ROLE ${quoteRole(login)} NOREPLICATION`],
];

When(/^the operator changes the worker login so that it (.+)$/, async function (this: SyncWorld, defect: string) {
  const login = await workerLogin(this);
  if (login === 'skipped') return 'skipped';
  for (const [pattern, statement] of WORKER_LOGIN_DEFECTS) {
    const match = defect.match(pattern);
    if (match !== null) {
      await (await operatorSql(this)).query(statement(login, match));
      return undefined;
    }
  }
  throw new Error(`no known change of the worker login makes it "${defect}" (known: ${WORKER_LOGIN_DEFECTS.map(([p]) => p.source).join(', ')})`);
});

/** The outcome of the last external connection a scenario tried under the worker login. */
const lastConnection = new WeakMap<SyncWorld, WorkerConnectionOutcome>();

When(
  /^the harness opens a (SQL|replication) connection as the worker login (with a wrong password|with the managed password|without a password) (to the configured database|to database "[^"]+"|over the local socket)$/,
  async function (this: SyncWorld, kind: string, secret: string, target: string) {
    const database = target.match(/^to database "([^"]+)"$/)?.[1];
    const server = await this.readyServer();
    if (server.workerConnections === undefined) {
      return undeterminedWithout(this, `server adapter "${server.id}" cannot open external connections under its worker login (optional workerConnections, docs/adapters.md)`);
    }
    const outcome = await server.workerConnections.attempt({
      kind: kind === 'SQL' ? 'sql' : 'replication',
      secret: secret === 'with the managed password' ? 'managed' : secret === 'with a wrong password' ? 'wrong' : 'none',
      database: database === undefined ? 'configured' : { name: database },
      transport: target === 'over the local socket' ? 'local-socket' : 'tcp',
    });
    lastConnection.set(this, outcome);
    return undefined;
  },
);

function connectionOutcome(world: SyncWorld): WorkerConnectionOutcome {
  const outcome = lastConnection.get(world);
  if (outcome === undefined) throw new Error('no connection was tried as the worker login in this scenario');
  return outcome;
}

Then('the connection is refused by authentication', function (this: SyncWorld) {
  const outcome = connectionOutcome(this);
  // Class 28: the server's HBA rules or its authentication turned the connection away (not a network failure).
  this.assert.equal(outcome.connected ? 'connected' : (outcome.sqlstate ?? `no SQLSTATE: ${outcome.message}`).slice(0, 2), '28', `the worker-login connection${outcome.connected ? ' got in' : `: ${outcome.sqlstate} ${outcome.message}`}`);
});

Then('the connection succeeds', function (this: SyncWorld) {
  const outcome = connectionOutcome(this);
  this.assert.ok(outcome.connected, `the worker-login connection was refused${outcome.connected ? '' : `: ${outcome.sqlstate} ${outcome.message}`}`);
});
