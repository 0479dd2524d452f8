/**
 * Bearer JWT (HS256 with a configured secret). The `sub` claim is the user;
 * nothing in a request body can name or override it.
 *
 * A token is accepted only when it bounds its own life and names exactly one
 * user: `exp` is required, an `iat` more than a minute ahead of this
 * server's clock is refused (such a token was minted by a wrong clock or
 * forged to outlive a key rotation), and the user id must be the exact text
 * the signed octets spell. The payload is read as strict UTF-8 (a decoder
 * that replaces bad octets with U+FFFD would let `X<FF>` log in as the user
 * `X\uFFFD`), a `sub` holding a lone surrogate (`X\ud800`, which has no
 * UTF-8 form and is stored as `X\uFFFD`) is refused, and so are a U+0000 and
 * a user id longer than the stored limit (core/input-limits.ts). Every
 * refusal is `401 auth_required`, decided before the database sees the id.
 */
import type { IncomingMessage } from 'node:http';
import { type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { isWellFormedText } from '../../harness/codec/index.ts';
import { authRequired } from './core/errors.ts';
import { fault } from './core/faults.ts';
import { TEXT_LIMITS, textProblem } from './core/input-limits.ts';

/** How far ahead of this server's clock a token's `iat` may be (clock skew between issuer and server). */
export const ISSUED_AT_SKEW_SECONDS = 60;

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The user id exactly as signed: the payload is strict UTF-8 and its `sub` is well-formed text. */
function exactUserId(token: string, sub: string): boolean {
  const payload = token.split('.')[1] ?? '';
  try {
    strictUtf8.decode(Buffer.from(payload, 'base64url'));
  } catch {
    return false;
  }
  return isWellFormedText(sub);
}

/** The token states when it ends and was not issued in this server's future. */
function lifetimeBounded(payload: JWTPayload): boolean {
  if (typeof payload.exp !== 'number') return false;
  return payload.iat === undefined || payload.iat <= Date.now() / 1000 + ISSUED_AT_SKEW_SECONDS;
}

export async function authenticate(req: IncomingMessage, key: Uint8Array): Promise<string> {
  const values = req.headersDistinct.authorization ?? [];
  const header = values[0];
  if (values.length !== 1 || header === undefined || !header.startsWith('Bearer ')) throw authRequired();
  const token = header.slice('Bearer '.length);
  try {
    // jose checks the signature, the algorithm, and `exp`, `nbf` and `iat` where present.
    const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'] });
    if (!fault('lax-token-claims') && !lifetimeBounded(payload)) throw authRequired(); // fault: server:lax-token-claims
    if (typeof payload.sub !== 'string' || payload.sub === '') throw authRequired();
    if (!fault('accept-lone-surrogate-sub') && !exactUserId(token, payload.sub)) throw authRequired(); // fault: server:accept-lone-surrogate-sub
    if (textProblem(payload.sub, TEXT_LIMITS.userId) !== undefined) throw authRequired();
    return payload.sub;
  } catch {
    throw authRequired();
  }
}

export async function mintToken(userId: string, key: Uint8Array, ttl = '12h'): Promise<string> {
  return await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(userId).setIssuedAt().setExpirationTime(ttl).sign(key);
}
