/**
 * Membership and impact functions run as their owner (owner-role.ts). On the
 * server's own session that is a `SET LOCAL ROLE <owner>`; the worker login
 * cannot do that, since it belongs to synchro_worker alone (SYNC-OPS-002). So
 * when capture runs as the worker login, each registered function it calls
 * gets a forwarder in schema `synchro_calls`: a SECURITY DEFINER
 * function owned by the function's owner that only calls it, executable by
 * synchro_worker and nobody else. The call then runs with the owner's rights,
 * as before, and the worker gains no right of the owner's but that one call
 * (decision 351). Forwarders, and their schema (owned by synchro_owner, used
 * by synchro_worker alone), are made by the server's own session, which holds
 * the installer's authority; they are not extension members, like the
 * publication. A forwarder is named after what it forwards (function, key
 * type, owner), so a changed owner or signature gets a new one.
 */
import { createHash } from 'node:crypto';
import type { ClientBase } from 'pg';
import { quoteIdent } from '../core/tables.ts';

export const FORWARDER_SCHEMA = 'synchro_calls';

/** One registered function capture calls: a membership function (with its key's SQL type) or an impact function. */
export type OwnerCall = { kind: 'membership'; fn: string; keyType: string; owner: string } | { kind: 'impact'; fn: string; owner: string };

function forwarderName(call: OwnerCall): string {
  const identity = call.kind === 'membership' ? [call.kind, call.fn, call.keyType, call.owner] : [call.kind, call.fn, call.owner];
  return `${call.kind === 'membership' ? 'm' : 'i'}_${createHash('sha256').update(identity.join('\u0000')).digest('hex').slice(0, 40)}`;
}

/** The qualified name capture calls instead of `call.fn`. */
export function forwarderOf(call: OwnerCall): string {
  return `${FORWARDER_SCHEMA}.${quoteIdent(forwarderName(call))}`;
}

/**
 * Creates the forwarders of `calls` that do not exist yet, in one
 * transaction on `admin` (a session with the installer's authority). The
 * registered names are called exactly as capture calls them on its own
 * session; the membership contract (026) makes them STABLE, an impact
 * function may be anything, so its forwarder is VOLATILE.
 */
export async function ensureForwarders(admin: ClientBase, calls: readonly OwnerCall[]): Promise<void> {
  const wanted = new Map(calls.map((call) => [forwarderName(call), call]));
  if (wanted.size === 0) return;
  const { rows } = await admin.query<{ proname: string }>('SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = ANY ($2::text[])', [FORWARDER_SCHEMA, [...wanted.keys()]]);
  for (const { proname } of rows) wanted.delete(proname);
  if (wanted.size === 0) return;
  await admin.query('BEGIN');
  try {
    if ((await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [FORWARDER_SCHEMA])).rowCount === 0) {
      await admin.query(`CREATE SCHEMA ${FORWARDER_SCHEMA} AUTHORIZATION synchro_owner`);
      await admin.query(`REVOKE ALL ON SCHEMA ${FORWARDER_SCHEMA} FROM PUBLIC`);
      await admin.query(`GRANT USAGE ON SCHEMA ${FORWARDER_SCHEMA} TO synchro_worker`);
    }
    for (const call of wanted.values()) {
      // Registered names are always schema-qualified; only a fault recipe (SYNC-CAP-009's bare-name
      // lookup) hands over an unqualified one, which is then looked up when called, by the calling
      // session's search_path, as the registered name itself would be on the server's own session.
      const byCallerPath = !call.fn.includes('.');
      if (byCallerPath) await admin.query('SET LOCAL check_function_bodies = off');
      const name = forwarderOf(call);
      const signature =
        call.kind === 'membership'
          ? `${name}(k ${call.keyType}) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER ${byCallerPath ? '' : 'SET search_path = pg_catalog '}AS $forward$ SELECT s::text FROM ${call.fn}(k) AS s $forward$`
          : `${name}(old_image jsonb, new_image jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $forward$ SELECT r.table_id, r.pk_type, r.pk_value FROM ${call.fn}(old_image, new_image) AS r $forward$`;
      await admin.query(`CREATE FUNCTION ${signature}`);
      const regprocedure = call.kind === 'membership' ? `${name}(${call.keyType})` : `${name}(jsonb, jsonb)`;
      await admin.query(`ALTER FUNCTION ${regprocedure} OWNER TO ${quoteIdent(call.owner)}`);
      await admin.query(`REVOKE EXECUTE ON FUNCTION ${regprocedure} FROM PUBLIC`);
      await admin.query(`GRANT EXECUTE ON FUNCTION ${regprocedure} TO synchro_worker`);
    }
    await admin.query('COMMIT');
  } catch (error) {
    await admin.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
