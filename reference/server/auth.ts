/**
 * Bearer JWT (HS256 with a configured secret). The `sub` claim is the user;
 * nothing in a request body can name or override it.
 */
import type { IncomingMessage } from 'node:http';
import { jwtVerify, SignJWT } from 'jose';
import { authRequired } from './core/errors.ts';

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

export async function authenticate(req: IncomingMessage, key: Uint8Array): Promise<string> {
  const values = req.headersDistinct.authorization ?? [];
  const header = values[0];
  if (values.length !== 1 || header === undefined || !header.startsWith('Bearer ')) throw authRequired();
  try {
    const { payload } = await jwtVerify(header.slice('Bearer '.length), key, { algorithms: ['HS256'] });
    if (typeof payload.sub !== 'string' || payload.sub === '') throw authRequired();
    return payload.sub;
  } catch {
    throw authRequired();
  }
}

export async function mintToken(userId: string, key: Uint8Array, ttl = '12h'): Promise<string> {
  return await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(userId).setIssuedAt().setExpirationTime(ttl).sign(key);
}
