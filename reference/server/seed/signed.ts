/** The key of the seed export's tokens (page tokens and export state); their form is `../signed-token.ts`. */
import type { ClientBase } from 'pg';
import type { TokenKey } from '../signed-token.ts';

/** The seed-page key: the secret of the shared token form, and the ID tokens name it by. */
export interface SeedKey extends TokenKey {
  keyId: string;
}

/** The active seed-page key, or the (still verifying) key named `keyId`. */
export async function seedKey(db: ClientBase, keyId?: string): Promise<SeedKey | undefined> {
  const { rows } = await db.query<{ key_id: string; secret: Buffer }>(
    keyId === undefined
      ? "SELECT key_id, secret FROM synchro.token_keys WHERE purpose = 'seed_page' AND state = 'active'"
      : "SELECT key_id, secret FROM synchro.token_keys WHERE purpose = 'seed_page' AND key_id = $1 AND state IN ('active', 'verify_only')",
    keyId === undefined ? [] : [keyId],
  );
  const r = rows[0];
  return r === undefined ? undefined : { keyId: r.key_id, secret: r.secret };
}
