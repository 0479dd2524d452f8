/**
 * Bearer credentials for test users: an HS256 JWT minted from a shared secret
 * (the `sub` claim, or another configured claim, carries the user id), or the
 * output of a command the implementer supplies for any other scheme.
 */
import { execFile } from 'node:child_process';
import { SignJWT } from 'jose';

export interface JwtAuth {
  secret: string;
  /** Extra claims every token carries (issuer, audience, ...). */
  claims?: Record<string, unknown>;
  /** Claim holding the user id; `sub` by default. */
  userClaim?: string;
  expiresInSeconds?: number;
}

export interface CommandAuth {
  /** Program and arguments; `{user}` in an argument is replaced by the user id. */
  command: string[];
}

export type AuthConfig = { jwt: JwtAuth } | CommandAuth;

export async function mintJwt(auth: JwtAuth, userId: string): Promise<string> {
  const claims = { ...(auth.claims ?? {}), [auth.userClaim ?? 'sub']: userId };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(`${auth.expiresInSeconds ?? 3600}s`)
    .sign(new TextEncoder().encode(auth.secret));
}

export function tokenFromCommand(auth: CommandAuth, userId: string, cwd: string, deadlineMs = 10_000): Promise<string> {
  const [program, ...args] = auth.command.map((part) => part.replaceAll('{user}', userId));
  if (program === undefined) return Promise.reject(new Error('the token command is empty'));
  return new Promise((resolve, reject) => {
    execFile(program, args, { cwd, timeout: deadlineMs, env: { ...process.env, SYNCHRO_USER_ID: userId } }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`token command ${JSON.stringify(auth.command)} failed for user "${userId}": ${error.message}${stderr ? `\n${stderr}` : ''}`));
      const token = stdout.trim();
      if (token === '' || /\s/.test(token)) return reject(new Error(`token command ${JSON.stringify(auth.command)} printed ${token === '' ? 'nothing' : 'more than one word'}; it must print exactly one token`));
      resolve(token);
    });
  });
}

export function tokenFor(auth: AuthConfig, userId: string, cwd: string): Promise<string> {
  return 'jwt' in auth ? mintJwt(auth.jwt, userId) : tokenFromCommand(auth, userId, cwd);
}
