/**
 * Wires a database and a secret into a listening server. Used by main.ts and
 * by the tests, which start it in-process on a fresh database.
 */
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { secretKey } from './auth.ts';
import { installSchema } from './db/install.ts';
import { createSyncServer } from './http/server.ts';
import { ManifestStore } from './registry/manifests.ts';

// int8 stays text: int64 values are strings on the wire and must not pass through binary64.
pg.types.setTypeParser(20, (v: string) => v);

export interface RunningServer {
  url: string;
  pool: pg.Pool;
  close(): Promise<void>;
}

export async function startServer(options: { databaseUrl: string; jwtSecret: string; host?: string; port?: number; log?: (line: string) => void }): Promise<RunningServer> {
  await installSchema(options.databaseUrl);
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 20 });
  pool.on('error', () => undefined);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const server = createSyncServer({ pool, manifests: new ManifestStore(pool), jwtKey: secretKey(options.jwtSecret), log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    pool,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.end();
    },
  };
}
