/**
 * The real reference server with its demo tables, as a child process on the
 * embedded database, for end-to-end client tests.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { SignJWT } from 'jose';

export interface DemoServer {
  url: string;
  databaseUrl: string;
  token(user: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startDemoServer(secret: string, extraArgs: string[] = []): Promise<DemoServer> {
  const server = spawn(process.execPath, ['reference/server/main.ts', '--demo', '--jwt-secret', secret, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: server.stdout as NodeJS.ReadableStream }).once('line', resolve);
    server.once('exit', (code) => reject(new Error(`reference server exited (${code}): ${stderr}`)));
  });
  const { url, database_url: databaseUrl } = JSON.parse(line) as { url: string; database_url: string };
  const key = new TextEncoder().encode(secret);
  return {
    url,
    databaseUrl,
    token: (user) => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setIssuedAt().setExpirationTime('1h').sign(key),
    async stop() {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    },
  };
}
