/**
 * Authenticated tokens: `<prefix>.<base64url payload>.<base64url mac>`, the
 * payload RFC 8785 JSON, the MAC HMAC-SHA-256 over a per-kind domain, a zero
 * byte and the payload. Incremental cursors (`ic1`) and rebuild
 * continuations (`rb1`) have distinct domains, so neither verifies as the
 * other. Keys live in synchro.token_keys; `verify_only` keys still verify.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClientBase } from 'pg';
import { canonicalJson } from '../../../harness/codec/index.ts';

export type TokenPurpose = 'incremental_cursor' | 'rebuild_cursor';

const FORMS: Record<TokenPurpose, { prefix: string; domain: Buffer }> = {
  incremental_cursor: { prefix: 'ic1', domain: Buffer.from('synchro-ref:v3:incremental-cursor:v1\u0000', 'utf8') },
  rebuild_cursor: { prefix: 'rb1', domain: Buffer.from('synchro-ref:v3:rebuild-cursor:v1\u0000', 'utf8') },
};

function mac(purpose: TokenPurpose, secret: Buffer, payload: Buffer): Buffer {
  return createHmac('sha256', secret).update(FORMS[purpose].domain).update(payload).digest();
}

/** The active signing key of a purpose, created on first use. */
async function signingKey(db: ClientBase, purpose: TokenPurpose): Promise<{ keyId: string; secret: Buffer }> {
  const read = async () =>
    (await db.query<{ key_id: string; secret: Buffer }>("SELECT key_id, secret FROM synchro.token_keys WHERE purpose = $1 AND state = 'active'", [purpose])).rows[0];
  let key = await read();
  if (key === undefined) {
    await db.query(
      "INSERT INTO synchro.token_keys (key_id, purpose, secret, state) VALUES ($1, $2, $3, 'active') ON CONFLICT DO NOTHING",
      [`k${randomBytes(8).toString('hex')}`, purpose, randomBytes(64)],
    );
    key = await read();
  }
  if (key === undefined) throw new Error('no signing key');
  return { keyId: key.key_id, secret: key.secret };
}

/** Signs a payload; `key_id` is set from the signing key. */
export async function signToken(db: ClientBase, purpose: TokenPurpose, payload: Record<string, unknown>): Promise<string> {
  const key = await signingKey(db, purpose);
  const bytes = Buffer.from(canonicalJson({ ...payload, key_id: key.keyId }), 'utf8');
  return `${FORMS[purpose].prefix}.${bytes.toString('base64url')}.${mac(purpose, key.secret, bytes).toString('base64url')}`;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The authenticated payload, or undefined for anything malformed, of the
 * other kind, under an unknown or retired key, or with a wrong MAC. Callers
 * answer every undefined the same way, so no hint tells which check failed.
 */
export async function verifyToken(db: ClientBase, purpose: TokenPurpose, token: string): Promise<Record<string, unknown> | undefined> {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== FORMS[purpose].prefix) return undefined;
  const [, p64, m64] = parts as [string, string, string];
  if (!B64URL.test(p64) || !B64URL.test(m64)) return undefined;
  const payload = Buffer.from(p64, 'base64url');
  const given = Buffer.from(m64, 'base64url');
  // Only the one canonical spelling of each part is accepted.
  if (payload.toString('base64url') !== p64 || given.toString('base64url') !== m64 || given.length !== 32) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (canonicalJson(value) !== payload.toString('utf8')) return undefined;
  const keyId = (value as Record<string, unknown>).key_id;
  if (typeof keyId !== 'string') return undefined;
  const { rows } = await db.query<{ secret: Buffer }>(
    "SELECT secret FROM synchro.token_keys WHERE key_id = $1 AND purpose = $2 AND state IN ('active', 'verify_only')",
    [keyId, purpose],
  );
  const secret = rows[0]?.secret;
  if (secret === undefined) return undefined;
  if (!timingSafeEqual(mac(purpose, secret, payload), given)) return undefined;
  return value as Record<string, unknown>;
}
