/** The keys of the seed export's tokens (page tokens and export state; continuation receipts); their form is `signed-token.ts`. */
import type { ClientBase } from 'pg';
import type { TokenKey } from './signed-token.ts';

/** The seed-page key: the secret of the shared token form, and the ID tokens name it by. */
export interface SeedKey extends TokenKey {
  keyId: string;
}

/** Page tokens and receipts never share a key: a receipt is checked long after its export, by connect. */
export type SeedKeyPurpose = 'seed_page' | 'seed_continuation';

/** The active key of `purpose`, or the (still verifying) key of that purpose named `keyId`. */
export async function seedKey(db: ClientBase, keyId?: string, purpose: SeedKeyPurpose = 'seed_page'): Promise<SeedKey | undefined> {
  const { rows } = await db.query<{ key_id: string; secret: Buffer }>(
    keyId === undefined
      ? "SELECT key_id, secret FROM synchro.token_keys WHERE purpose = $1 AND state = 'active'"
      : "SELECT key_id, secret FROM synchro.token_keys WHERE purpose = $1 AND key_id = $2 AND state IN ('active', 'verify_only')",
    keyId === undefined ? [purpose] : [purpose, keyId],
  );
  const r = rows[0];
  return r === undefined ? undefined : { keyId: r.key_id, secret: r.secret };
}
