/**
 * The `extension` control of a server shipped as a PostgreSQL extension, over
 * a cluster that can create databases reaching the package. The reference
 * adapter builds it on the reference's cluster module; the databases are
 * named after the scenario and dropped when the adapter closes.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { DatabaseRole, ExtensionControl, ExtensionDatabase, Row } from './server.ts';
import { statementAsLogin } from './sql-controls.ts';

/** What the control needs of a cluster (the reference cluster module offers it). */
export interface ExtensionCluster {
  urlFor(database: string): string;
  createExtensionDatabase(name: string, faults?: readonly string[]): Promise<void>;
  provisionRoles(database: string): Promise<{ workerLogin: string }>;
  extensionPackage(faults?: readonly string[]): Promise<{ name: string; directory: string }>;
  dropDatabase(name: string): Promise<void>;
}

async function run(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const result = (await client.query(sql)) as pg.QueryResult | pg.QueryResult[];
    const last = Array.isArray(result) ? result[result.length - 1] : result;
    return (last?.rows ?? []) as Row[];
  } finally {
    await client.end().catch(() => undefined);
  }
}


/**
 * `prefix` names the scenario's databases (`<prefix>_<label>`); `faults`
 * are the scenario's fault switches, which the package is built with; `roleUrl`
 * turns a database URL into one of a login of a role, or undefined when the
 * adapter has no login for it.
 */
export function extensionControl(cluster: ExtensionCluster, name: string, prefix: string, faults: readonly string[], roleUrl: (url: string, role: DatabaseRole) => string | undefined): ExtensionControl & { close(): Promise<void> } {
  const created: string[] = [];
  return {
    name,
    async files() {
      const { directory } = await cluster.extensionPackage(faults);
      const files: Record<string, string> = {};
      for (const file of (await readdir(directory)).sort()) {
        if (file === `${name}.control` || (file.startsWith(`${name}--`) && file.endsWith('.sql'))) files[file] = await readFile(join(directory, file), 'utf8');
      }
      return files;
    },
    async cleanDatabase(label) {
      if (!/^[a-z0-9_]+$/.test(label)) throw new Error(`database label ${JSON.stringify(label)} must be lower-case letters, digits and underscores`);
      const database = `${prefix}_${label}`.slice(0, 50);
      if (created.includes(database)) throw new Error(`the scenario already has a clean database "${label}"`);
      await cluster.createExtensionDatabase(database, faults);
      created.push(database);
      const url = cluster.urlFor(database);
      const handle: ExtensionDatabase = {
        label,
        query: (sql) => run(url, sql),
        provisionRoles: () => cluster.provisionRoles(database),
        async asRole(role, sql) {
          const login = roleUrl(url, role);
          if (login === undefined) throw new Error(`the adapter has no login for role "${role}"`);
          return await statementAsLogin(login, sql);
        },
      };
      return handle;
    },
    async close() {
      for (const database of created.splice(0)) await cluster.dropDatabase(database).catch(() => undefined);
    },
  };
}
