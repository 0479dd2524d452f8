/**
 * Membership and impact functions run as their owner (ADR 004, Function
 * restrictions): never with the capture worker's or synchro_owner's rights,
 * so whatever they could read indirectly is limited to what the owner may
 * read, and an owner who loses SELECT on a projection makes evaluation fail.
 *
 * Approximation: PostgreSQL offers no SQL-level security-restricted
 * operation. `SET LOCAL ROLE` is the nearest: a function body could still
 * change the role back, but registration only takes SQL-standard bodies
 * (026-scope-function-contract.sql), which cannot run SET.
 */
import type { ClientBase } from 'pg';
import { quoteIdent } from '../core/tables.ts';

const sessionRoles = new WeakMap<ClientBase, string>();

async function sessionRole(db: ClientBase): Promise<string> {
  let role = sessionRoles.get(db);
  if (role === undefined) {
    role = (await db.query<{ r: string }>('SELECT current_user AS r')).rows[0]?.r ?? '';
    sessionRoles.set(db, role);
  }
  return role;
}

/**
 * Runs `call` as `owner` inside the caller's open transaction, then returns
 * to the session's role. A failure leaves the role switched, but it also
 * aborts the transaction, whose rollback undoes the SET LOCAL.
 */
export async function asFunctionOwner<T>(db: ClientBase, owner: string, call: () => Promise<T>): Promise<T> {
  const self = await sessionRole(db);
  if (owner === self) return await call();
  await db.query(`SET LOCAL ROLE ${quoteIdent(owner)}`);
  const out = await call();
  await db.query(`SET LOCAL ROLE ${quoteIdent(self)}`);
  return out;
}
