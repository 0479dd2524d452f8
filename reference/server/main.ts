/**
 * Starts the reference server. Without --database-url it runs its own
 * embedded PostgreSQL 18 and stops it on exit. Prints one JSON line on stdout
 * when listening; everything else goes to stderr.
 *
 *   node reference/server/main.ts [--host 127.0.0.1] [--port 0] [--database-url <url>]
 *     [--jwt-secret <secret>] [--test-controls] [--demo]
 *     [--stale-client-interval 30d] [--max-in-flight <n | endpoint=n,...>] [--capture]
 *     [--body-timeout 10s] [--max-connections 256] [--resettable]
 *
 * --test-controls serves the control protocol (docs/control-protocol.md)
 * under /__control/ to loopback peers only. It is refused with a
 * non-loopback --host and in a production environment (NODE_ENV or
 * SYNCHRO_ENV set to "production"). --resettable (with --test-controls) adds
 * the protocol's per-scenario `reset`, which wipes the database in place.
 *
 * Without --demo it runs as a deployment: it prints no credential (no JWT
 * secret, no token, no database password; startup-output.ts). The secret is
 * --jwt-secret or the SYNCHRO_JWT_SECRET environment variable; --demo adds
 * the demo tables and prints a secret and a token to try them with.
 *
 * The embedded database lives only as long as this process: a guard process
 * stops it and removes its files even when this one is killed (demo.ts). To
 * keep data and tokens across restarts, run against a database of your own
 * with a fixed secret (--database-url, --jwt-secret), as the start-up lines
 * say.
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
import { guardEmbeddedDatabase, installDemo } from './demo.ts';
import { DEFAULT_CONNECTION_LIMITS } from './http-limits.ts';
import { startupOutput } from './startup-output.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

/** `--body-timeout`: a positive duration such as 10s or 1500ms. */
function parseDuration(flag: string, text: string): number {
  try {
    return parseStaleInterval(text);
  } catch {
    throw new Error(`${flag} must be a positive whole number followed by ms, s, m, h or d (e.g. 10s), not ${JSON.stringify(text)}`);
  }
}

function parseCount(flag: string, text: string): number {
  if (!/^[1-9][0-9]{0,6}$/.test(text)) throw new Error(`${flag} must be a whole number from 1 to 9999999, not ${JSON.stringify(text)}`);
  return Number(text);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      'database-url': { type: 'string' },
      // The capture worker's own login to the same database (LOGIN REPLICATION NOINHERIT, in synchro_worker only).
      'worker-database-url': { type: 'string' },
      'jwt-secret': { type: 'string' },
      'test-controls': { type: 'boolean', default: false },
      demo: { type: 'boolean', default: false },
      'stale-client-interval': { type: 'string', default: DEFAULT_STALE_CLIENT_INTERVAL },
      'max-in-flight': { type: 'string' },
      // WAL capture (pull and rebuild need it); always on for the embedded database this process owns.
      capture: { type: 'boolean', default: false },
      'body-timeout': { type: 'string', default: `${DEFAULT_CONNECTION_LIMITS.bodyTimeoutMs}ms` },
      'max-connections': { type: 'string', default: String(DEFAULT_CONNECTION_LIMITS.maxConnections) },
      resettable: { type: 'boolean', default: false },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, not ${values.port}`);
  // Settings are checked before any database work, so a bad value stops the server at once.
  const staleClientIntervalMs = parseStaleInterval(values['stale-client-interval']);
  const admissionLimits = values['max-in-flight'] === undefined ? undefined : parseAdmissionLimits(values['max-in-flight']);
  const connectionLimits = { bodyTimeoutMs: parseDuration('--body-timeout', values['body-timeout']), maxConnections: parseCount('--max-connections', values['max-connections']) };
  const testControls = values['test-controls'];
  if (testControls && !isLoopback(values.host === 'localhost' ? '127.0.0.1' : values.host)) {
    throw new Error(`--test-controls needs a loopback --host (127.0.0.1, ::1 or localhost), not ${values.host}`);
  }
  if (testControls && isProductionEnvironment(process.env)) throw new Error('--test-controls is refused in a production environment (NODE_ENV or SYNCHRO_ENV is "production")');
  if (values.resettable && !testControls) throw new Error('--resettable needs --test-controls: the reset is a control of the control protocol');
  // Only an explicit --demo prints credentials: `npm run reference:server` is a deployment (SYNC-OPS-005).
  const demo = values.demo;
  let cluster: Cluster | undefined;
  let databaseUrl = values['database-url'];
  if (databaseUrl === undefined) {
    // The server's own database outlives a crash: durable settings, unlike the disposable test clusters.
    cluster = await startCluster({ ...process.env, DATABASE_URL: '' }, 'durable');
    await guardEmbeddedDatabase(cluster.adminUrl, log);
    await cluster.createTemplate('synchro');
    databaseUrl = cluster.urlFor('synchro');
  } else {
    await installSchema(databaseUrl);
  }
  if (demo) await installDemo(databaseUrl);
  const environmentSecret = process.env.SYNCHRO_JWT_SECRET === '' ? undefined : process.env.SYNCHRO_JWT_SECRET;
  const secretSource = values['jwt-secret'] !== undefined ? 'flag' : environmentSecret !== undefined ? 'environment' : 'generated';
  const jwtSecret = values['jwt-secret'] ?? environmentSecret ?? randomBytes(24).toString('base64url');
  const server = await startServer({
    databaseUrl,
    jwtSecret,
    host: values.host,
    port,
    log,
    testControls,
    staleClientIntervalMs,
    capture: values.capture || cluster !== undefined,
    connectionLimits,
    resettable: values.resettable,
    ...(values['worker-database-url'] !== undefined ? { workerDatabaseUrl: values['worker-database-url'] } : {}),
    ...(admissionLimits !== undefined ? { admissionLimits } : {}),
  });
  const output = startupOutput({
    url: server.url,
    databaseUrl,
    demo,
    jwtSecret,
    secretSource,
    embedded: cluster !== undefined,
    ...(demo ? { demoToken: await mintToken('demo-user', secretKey(jwtSecret)) } : {}),
  });
  process.stdout.write(`${output.stdout}\n`);
  for (const line of output.stderr) log(line);
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
