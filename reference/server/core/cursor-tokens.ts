/**
 * The signing keys of pull cursors and rebuild continuations, tokens of the
 * one signed form (signed-token.ts): `<prefix>.<base64url payload>.<base64url
 * mac>`, the payload RFC 8785 JSON, the MAC HMAC-SHA-256 over a per-kind
 * domain, a zero byte and the payload. Incremental cursors (`ic1`) and rebuild
 * continuations (`rb1`) have distinct domains, so neither verifies as the
 * other. Keys live in synchro.token_keys; `verify_only` keys still verify.
 * Inside one pull or rebuild snapshot each key is read once (snapshotRead).
 */
import { randomBytes } from 'node:crypto';
import type { ClientBase } from 'pg';
import { fault } from './faults.ts';
import { macMatches, open, seal } from './signed-token.ts';
import { snapshotRead } from './snapshot.ts';

export type TokenPurpose = 'incremental_cursor' | 'rebuild_cursor';

const FORMS: Record<TokenPurpose, { prefix: string; domain: string }> = {
  incremental_cursor: { prefix: 'ic1', domain: 'synchro-ref:v3:incremental-cursor:v1' },
  rebuild_cursor: { prefix: 'rb1', domain: 'synchro-ref:v3:rebuild-cursor:v1' },
};

/** The active signing key of a purpose, created on first use. */
async function signingKey(db: ClientBase, purpose: TokenPurpose): Promise<{ keyId: string; secret: Buffer }> {
  const read = () =>
    snapshotRead(db, `signing-key:${purpose}`, async () => (await db.query<{ key_id: string; secret: Buffer }>("SELECT key_id, secret FROM synchro.token_keys WHERE purpose = $1 AND state = 'active'", [purpose])).rows[0]);
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
  return seal(FORMS[purpose].prefix, FORMS[purpose].domain, key, { ...payload, key_id: key.keyId });
}

/**
 * The authenticated payload, or undefined for anything malformed, of the
 * other kind, under an unknown or retired key, or with a wrong MAC. Callers
 * answer every undefined the same way, so no hint tells which check failed.
 */
export async function verifyToken(db: ClientBase, purpose: TokenPurpose, token: string): Promise<Record<string, unknown> | undefined> {
  const opened = open(FORMS[purpose].prefix, token);
  if (opened === undefined) return undefined;
  const value = opened.value;
  const keyId = (value as Record<string, unknown>).key_id;
  if (typeof keyId !== 'string') return undefined;
  const secret = await snapshotRead(db, `verify-key:${purpose}:${keyId}`, async () =>
    (await db.query<{ secret: Buffer }>("SELECT secret FROM synchro.token_keys WHERE key_id = $1 AND purpose = $2 AND state IN ('active', 'verify_only')", [keyId, purpose])).rows[0]?.secret,
  );
  if (secret === undefined) return undefined;
  if (!macMatches(FORMS[purpose].domain, { secret }, opened) && !fault('skip-token-mac')) return undefined; // fault: server:skip-token-mac
  return value;
}
