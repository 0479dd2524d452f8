/**
 * What the reference server prints when it starts. A deployment's output is
 * collected and kept by log systems read by more people than the database
 * (SYNC-OPS-005), so outside the demo it never holds a credential: no JWT
 * secret, no token, no database password. The demo (`--demo`) is for a
 * person at a terminal and prints what they need to try it.
 */

/** `url` with its password replaced, so the line still says which database and login are used. */
export function redactedDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL (a key=value DSN, say): nothing of it is printed rather than a secret by mistake.
    return '(not shown)';
  }
  if (parsed.password !== '') parsed.password = 'redacted';
  parsed.search = ''; // query parameters may carry sslpassword, passfile, …
  return parsed.toString();
}

export interface StartupFacts {
  url: string;
  databaseUrl: string;
  demo: boolean;
  jwtSecret: string;
  /** Where the secret came from: a flag or environment value the operator holds, or generated here. */
  secretSource: 'flag' | 'environment' | 'generated';
  demoToken?: string;
  embedded: boolean;
}

/** The one JSON line on stdout, and the lines for stderr. */
export function startupOutput(facts: StartupFacts): { stdout: string; stderr: string[] } {
  const databaseUrl = facts.demo ? facts.databaseUrl : redactedDatabaseUrl(facts.databaseUrl);
  const stdout = JSON.stringify({ event: 'listening', url: facts.url, database_url: databaseUrl });
  const stderr: string[] = [];
  if (facts.demo) {
    stderr.push(`jwt secret: ${facts.jwtSecret}`);
    if (facts.demoToken !== undefined) stderr.push(`demo token (user demo-user): ${facts.demoToken}`);
    stderr.push(`try: curl -s ${facts.url}/sync/schema`);
  } else if (facts.secretSource === 'generated') {
    stderr.push('no JWT secret was given (--jwt-secret or SYNCHRO_JWT_SECRET): a random one is in use and is not shown, so no token can be issued for this server');
  }
  if (facts.embedded) {
    stderr.push('the embedded database is removed when this server stops, even when it is killed; to keep data and tokens across restarts,');
    stderr.push('run against your own PostgreSQL 18 (wal_level=logical) with a fixed secret: node reference/server/main.ts --database-url postgres://... --jwt-secret <secret> --capture');
  }
  return { stdout, stderr };
}
