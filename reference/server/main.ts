/**
 * Starts the reference server. Without --database-url it runs its own
 * embedded PostgreSQL 18 and stops it on exit. Prints one JSON line on stdout
 * when listening; everything else goes to stderr.
 *
 *   node reference/server/main.ts [--host 127.0.0.1] [--port 0] [--database-url <url>]
 *     [--jwt-secret <secret>] [--test-controls] [--demo]
 *     [--stale-client-interval 30d] [--max-in-flight <n | endpoint=n,...>] [--capture]
 *     [--resettable]
 *
 * --test-controls serves the control protocol (docs/control-protocol.md)
 * under /__control/ to loopback peers only. It is refused with a
 * non-loopback --host and in a production environment (NODE_ENV or
 * SYNCHRO_ENV set to "production"). --resettable (with --test-controls) adds
 * the protocol's per-scenario `reset`, which wipes the database in place.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startServer } from './app.ts';
import { mintToken, secretKey } from './auth.ts';
import { isLoopback, isProductionEnvironment } from './controls/routes.ts';
import { DEFAULT_STALE_CLIENT_INTERVAL, parseStaleInterval } from './controls/stale-interval.ts';
import { parseAdmissionLimits } from './core/admission.ts';
import { type Cluster, startCluster } from './db/cluster.ts';
import { installSchema } from './db/install.ts';
import { installDemo } from './demo.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      'database-url': { type: 'string' },
      'jwt-secret': { type: 'string' },
      'test-controls': { type: 'boolean', default: false },
      demo: { type: 'boolean', default: false },
      'stale-client-interval': { type: 'string', default: DEFAULT_STALE_CLIENT_INTERVAL },
      'max-in-flight': { type: 'string' },
      // WAL capture (pull and rebuild need it); always on for the embedded database this process owns.
      capture: { type: 'boolean', default: false },
      resettable: { type: 'boolean', default: false },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, not ${values.port}`);
  // Settings are checked before any database work, so a bad value stops the server at once.
  const staleClientIntervalMs = parseStaleInterval(values['stale-client-interval']);
  const admissionLimits = values['max-in-flight'] === undefined ? undefined : parseAdmissionLimits(values['max-in-flight']);
  const testControls = values['test-controls'];
  if (testControls && !isLoopback(values.host === 'localhost' ? '127.0.0.1' : values.host)) {
    throw new Error(`--test-controls needs a loopback --host (127.0.0.1, ::1 or localhost), not ${values.host}`);
  }
  if (testControls && isProductionEnvironment(process.env)) throw new Error('--test-controls is refused in a production environment (NODE_ENV or SYNCHRO_ENV is "production")');
  if (values.resettable && !testControls) throw new Error('--resettable needs --test-controls: the reset is a control of the control protocol');
  // `npm run reference:server` with no arguments is the person-facing demo.
  const demo = values.demo || (values['database-url'] === undefined && process.argv.length <= 2);
  let cluster: Cluster | undefined;
  let databaseUrl = values['database-url'];
  if (databaseUrl === undefined) {
    cluster = await startCluster({ ...process.env, DATABASE_URL: '' });
    await cluster.createTemplate('synchro');
    databaseUrl = cluster.urlFor('synchro');
  } else {
    await installSchema(databaseUrl);
  }
  if (demo) await installDemo(databaseUrl);
  const jwtSecret = values['jwt-secret'] ?? randomBytes(24).toString('base64url');
  const server = await startServer({
    databaseUrl,
    jwtSecret,
    host: values.host,
    port,
    log,
    testControls,
    staleClientIntervalMs,
    capture: values.capture || cluster !== undefined,
    resettable: values.resettable,
    ...(admissionLimits !== undefined ? { admissionLimits } : {}),
  });
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: server.url, database_url: databaseUrl })}\n`);
  if (demo || values['jwt-secret'] === undefined) {
    log(`jwt secret: ${jwtSecret}`);
    log(`demo token (user demo-user): ${await mintToken('demo-user', secretKey(jwtSecret))}`);
    log(`try: curl -s ${server.url}/sync/schema`);
  }
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await server.close().catch(() => undefined);
    await cluster?.stop().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
}

main().catch((e: unknown) => {
  log(`reference server failed to start: ${(e as Error).message}`);
  process.exit(1);
});
