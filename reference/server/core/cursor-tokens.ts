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
import { named } from './named-statements.ts';
import { macMatches, open, seal } from './signed-token.ts';
import { snapshotRead } from './snapshot.ts';

export type TokenPurpose = 'incremental_cursor' | 'rebuild_cursor';

const FORMS: Record<TokenPurpose, { prefix: string; domain: string }> = {
  incremental_cursor: { prefix: 'ic1', domain: 'synchro-ref:v3:incremental-cursor:v1' },
  rebuild_cursor: { prefix: 'rb1', domain: 'synchro-ref:v3:rebuild-cursor:v1' },
};

interface UsableKey {
  key_id: string;
  secret: Buffer;
  state: 'active' | 'verify_only';
}

/**
 * Every key of a purpose that signs or verifies, read once per snapshot: a
 * pull verifies the cursors it is given and signs the ones it issues, and
 * one read serves both. A set without an active key is not remembered, since
 * signing then creates one.
 */
async function usableKeys(db: ClientBase, purpose: TokenPurpose): Promise<UsableKey[]> {
  let fresh: UsableKey[] | undefined;
  const remembered = await snapshotRead(db, `usable-keys:${purpose}`, async () => {
    fresh = (await db.query<UsableKey>(named("SELECT key_id, secret, state FROM synchro.token_keys WHERE purpose = $1 AND state IN ('active', 'verify_only')", [purpose]))).rows;
    return fresh.some((k) => k.state === 'active') ? fresh : undefined;
  });
  return remembered ?? fresh ?? [];
}

/** The active signing key of a purpose, created on first use. */
async function signingKey(db: ClientBase, purpose: TokenPurpose): Promise<{ keyId: string; secret: Buffer }> {
  const read = async () => (await usableKeys(db, purpose)).find((k) => k.state === 'active');
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
  const secret = (await usableKeys(db, purpose)).find((k) => k.key_id === keyId)?.secret;
  if (secret === undefined) return undefined;
  if (!macMatches(FORMS[purpose].domain, { secret }, opened) && !fault('skip-token-mac')) return undefined; // fault: server:skip-token-mac
  return value;
}
