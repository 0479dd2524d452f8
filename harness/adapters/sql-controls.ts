/**
 * The SQL-backed capability groups (provision, sourceSql, scopes, schema,
 * inspect), shared by the reference adapter and the generic HTTP adapter with
 * a PostgreSQL DSN. They call the server's `synchro` SQL API; nothing here
 * knows the implementation's tables.
 */
import pg from 'pg';
import type { DatabaseRole, InspectControl, ProvisionControl, RoleStatementOutcome, Row, SchemaControl, ScopesControl, SourceSqlControl, SourceSqlSession, TableRegistration } from './server.ts';

/** Parameter names of `synchro.synchro_register_table`, as the 004 sheet gives them. */
const REGISTER_TABLE_PARAMETERS: Record<keyof TableRegistration, string> = {
  relation: 'relation',
  membershipFunction: 'membership_fn',
  composition: 'composition',
  pkColumn: 'pk_column',
  updatedAtColumn: 'updated_at_col',
  deletedAtColumn: 'deleted_at_col',
  pushPolicy: 'push_policy',
  excludeColumns: 'exclude_columns',
  syncColumns: 'sync_columns',
  maxScopeFanout: 'max_scope_fanout',
};

export class SqlControls {
  readonly #url: string;
  #client: pg.Client | undefined;
  #connecting: Promise<pg.Client> | undefined;

  /** A DSN per role, of a login that belongs to that role only (`asRole`). */
  readonly #roleUrls: Partial<Record<DatabaseRole, string>>;

  constructor(databaseUrl: string, roleUrls: Partial<Record<DatabaseRole, string>> = {}) {
    this.#url = databaseUrl;
    this.#roleUrls = roleUrls;
    const roles = Object.keys(roleUrls) as DatabaseRole[];
    this.sourceSql = {
      query: (sql, params) => this.query(sql, params),
      session: () => this.#session(),
      ...(roles.length === 0 ? {} : { asRole: (role: DatabaseRole, sql: string) => this.#asRole(role, sql), roles }),
    };
  }

  /** Runs `sql` on a connection of its own as the role's login; a refusal is an answer, not an error. */
  async #asRole(role: DatabaseRole, sql: string): Promise<RoleStatementOutcome> {
    const url = this.#roleUrls[role];
    if (url === undefined) throw new Error(`the adapter has no login for role "${role}"`);
    return statementAsLogin(url, sql);
  }

  // One connection per scenario, opened on first use: scenarios that never touch SQL pay nothing.
  async #connection(): Promise<pg.Client> {
    if (this.#client) return this.#client;
    this.#connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.#url });
      // A session ended from the server side (a reset, a dropped database) must not crash the harness;
      // the query in flight fails with the reason, and the next one opens a new session (the database may have restarted).
      const forget = () => {
        if (this.#client !== client) return;
        this.#client = undefined;
        this.#connecting = undefined;
      };
      client.on('error', forget);
      client.on('end', forget);
      await client.connect();
      this.#client = client;
      return client;
    })();
    return this.#connecting;
  }

  async query<R extends Row = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    const client = await this.#connection();
    const result = await client.query(sql, params as unknown[]);
    return result.rows as R[];
  }

  async #scalar(sql: string, params: readonly unknown[] = []): Promise<unknown> {
    const [row] = await this.query(sql, params);
    return row === undefined ? undefined : Object.values(row)[0];
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#connecting = undefined;
    const sessions = [...this.#sessions];
    this.#sessions.clear();
    await Promise.all(sessions.map((s) => s.end().catch(() => undefined)));
    await client?.end();
  }

  /** Further connections a scenario opened; ended with the scenario's server. */
  readonly #sessions = new Set<pg.Client>();

  async #session(): Promise<SourceSqlSession> {
    const client = new pg.Client({ connectionString: this.#url });
    await client.connect();
    // A session whose peer ends it while a query waits must fail that query, not the process.
    client.on('error', () => undefined);
    this.#sessions.add(client);
    return {
      query: async <R extends Row = Row>(sql: string, params: readonly unknown[] = []) => (await client.query(sql, params as unknown[])).rows as R[],
      close: async () => {
        if (!this.#sessions.delete(client)) return;
        await client.end();
      },
    };
  }

  // Built in the constructor: whether it offers `asRole` depends on the role logins given.
  readonly sourceSql: SourceSqlControl;

  readonly provision: ProvisionControl = {
    exec: async (sql) => {
      await this.query(sql);
    },
    registerTable: async (registration) => {
      // Named notation: only the options given are passed, the rest keep their SQL defaults.
      const names: string[] = [];
      const values: unknown[] = [];
      for (const [key, parameter] of Object.entries(REGISTER_TABLE_PARAMETERS) as [keyof TableRegistration, string][]) {
        const value = registration[key];
        if (value === undefined) continue;
        values.push(value);
        names.push(`${parameter} => $${values.length}`);
      }
      await this.query(`SELECT synchro.synchro_register_table(${names.join(', ')})`, values);
    },
    reconfigureMembership: async (relation, membershipFunction) => {
      await this.query('SELECT synchro.synchro_reconfigure_membership($1, $2)', [relation, membershipFunction]);
    },
    reconfigureComposition: async (relation, composition) => {
      await this.query('SELECT synchro.synchro_reconfigure_composition($1, $2)', [relation, composition]);
    },
    rebindRelation: async (relation, renamed) => {
      // The rename and the rebinding commit together: capture never sees the registered name gone (drift, which blocks it).
      const [, name] = renamed.split('.');
      const session = await this.#session();
      try {
        await session.query('BEGIN');
        await session.query(`ALTER TABLE ${relation} RENAME TO ${pg.escapeIdentifier(name ?? '')}`);
        await session.query('SELECT synchro.synchro_rebind_relation($1, $2)', [relation, renamed]);
        await session.query('COMMIT');
      } catch (error) {
        await session.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        await session.close();
      }
    },
    bindRelation: async (registered, relation) => {
      await this.query('SELECT synchro.synchro_rebind_relation($1, $2)', [registered, relation]);
    },
    membershipBackfill: async (relation, membershipFunction, batchSize) => {
      const id = await this.#scalar('SELECT synchro.synchro_begin_membership_backfill($1, $2, $3)::text', [relation, membershipFunction, batchSize]);
      return {
        runBatch: async () => Number(await this.#scalar('SELECT synchro.synchro_membership_backfill_batch($1::bigint)', [id])),
        activate: async () => {
          await this.query('SELECT synchro.synchro_activate_membership_backfill($1::bigint)', [id]);
        },
      };
    },
  };

  readonly scopes: ScopesControl = {
    grantUserScope: async (userId, scopeId) => {
      await this.query('SELECT synchro.synchro_grant_user_scope($1, $2)', [userId, scopeId]);
    },
    revokeUserScope: async (userId, scopeId) => {
      await this.query('SELECT synchro.synchro_revoke_user_scope($1, $2)', [userId, scopeId]);
    },
    registerSharedScope: async (scopeId, enabled) => {
      if (enabled === undefined) await this.query('SELECT synchro.synchro_register_shared_scope($1)', [scopeId]);
      else await this.query('SELECT synchro.synchro_register_shared_scope($1, $2)', [scopeId, enabled]);
    },
    unregisterSharedScope: async (scopeId) => {
      await this.query('SELECT synchro.synchro_unregister_shared_scope($1)', [scopeId]);
    },
    registerAssignmentFunction: (name, maxScopes) =>
      maxScopes === undefined
        ? this.#scalar('SELECT synchro.synchro_register_assignment_function($1::text)', [name])
        : this.#scalar('SELECT synchro.synchro_register_assignment_function($1::text, $2::integer)', [name, maxScopes]),
    unregisterAssignmentFunction: async () => {
      await this.query('SELECT synchro.synchro_unregister_assignment_function()');
    },
    resetRetentionLineage: async (scopeId) => {
      await this.query('SELECT synchro.synchro_reset_retention_lineage($1)', [scopeId]);
    },
  };

  readonly schema: SchemaControl = {
    manifest: () => this.#scalar('SELECT synchro.synchro_schema_manifest()'),
    tables: () => this.#scalar('SELECT synchro.synchro_tables()'),
  };

  readonly inspect: InspectControl = {
    readiness: () => this.#scalar('SELECT synchro.synchro_readiness()'),
    healthDetail: () => this.#scalar('SELECT synchro.synchro_health_detail()'),
    query: (sql, params) => this.query(sql, params),
  };
}

/**
 * Runs `sql` on a connection of its own to `url` and reports the login it ran
 * as; a refusal is an answer (its SQLSTATE), not an error. Several statements
 * answer one result each: the last one is the statement's answer.
 */
export async function statementAsLogin(url: string, sql: string): Promise<RoleStatementOutcome> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const login = String((await client.query<{ login: string }>('SELECT session_user AS login')).rows[0]?.login);
    try {
      const result = (await client.query(sql)) as pg.QueryResult | pg.QueryResult[];
      const last = Array.isArray(result) ? result[result.length - 1] : result;
      return { ok: true, login, rows: (last?.rows ?? []) as Row[] };
    } catch (error) {
      const { code, message } = error as { code?: string; message: string };
      return { ok: false, login, sqlstate: code ?? '', message };
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
