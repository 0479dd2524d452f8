/**
 * The one text form of every authenticated token the server issues (pull
 * cursors, rebuild continuations, seed page tokens, seed export state):
 * `<prefix>.<base64url payload>.<base64url mac>`, the payload RFC 8785 JSON,
 * the MAC HMAC-SHA-256 over an ASCII domain, one zero octet and the payload.
 * Opening checks the form strictly (one spelling of each part, canonical
 * JSON, a full 32-octet MAC) before any key is looked up.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../../../harness/codec/index.ts';

export interface TokenKey {
  secret: Buffer;
}

export interface OpenedToken {
  value: Record<string, unknown>;
  payload: Buffer;
  mac: Buffer;
}

function tokenMac(domain: string, key: TokenKey, payload: Buffer): Buffer {
  return createHmac('sha256', key.secret).update(Buffer.from(domain, 'ascii')).update(Buffer.from([0])).update(payload).digest();
}

export function seal(prefix: string, domain: string, key: TokenKey, value: Record<string, unknown>): string {
  const payload = Buffer.from(canonicalJson(value), 'utf8');
  return `${prefix}.${payload.toString('base64url')}.${tokenMac(domain, key, payload).toString('base64url')}`;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/** The token's parts when its form is exact, else undefined. The MAC is not checked yet. */
export function open(prefix: string, token: unknown): OpenedToken | undefined {
  if (typeof token !== 'string') return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== prefix) return undefined;
  const [, p64, m64] = parts as [string, string, string];
  if (!B64URL.test(p64) || !B64URL.test(m64)) return undefined;
  const payload = Buffer.from(p64, 'base64url');
  const given = Buffer.from(m64, 'base64url');
  if (payload.toString('base64url') !== p64 || given.toString('base64url') !== m64 || given.length !== 32) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  // A MAC over a non-canonical spelling is still refused: there is one byte form per payload.
  if (canonicalJson(value) !== payload.toString('utf8')) return undefined;
  return { value: value as Record<string, unknown>, payload, mac: given };
}

/** Constant-time comparison of the token's MAC with the one `key` gives. */
export function macMatches(domain: string, key: TokenKey, opened: OpenedToken): boolean {
  return timingSafeEqual(tokenMac(domain, key, opened.payload), opened.mac);
}
