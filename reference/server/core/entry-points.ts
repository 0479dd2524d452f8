/**
 * The canonical entry points of the adapter (`synchro.synchro_connect`,
 * `synchro_push`, `synchro_pull`, `synchro_rebuild`; sql/085): every request
 * the core serves ends in exactly one call of its endpoint's entry point, made
 * as `synchro_adapter`, and the HTTP layer answers with the status and body
 * of that call's result, never with text of its own.
 *
 * The core does the semantic work in TypeScript (decision 1); the call is the
 * last statement of the request's transaction and carries the core's outcome
 * (decision 360 says where this approximates an in-process extension). A
 * successful answer commits only through the call, so without EXECUTE on the
 * entry point the request fails and nothing it did persists.
 *
 * Cost: the call rides in the same round trip as the COMMIT it replaces (one
 * simple-protocol query: role, call, commit), so the number of round trips per
 * request is unchanged; the body crosses the socket twice more (as a text
 * constant, unescaped) and is hashed once (sha256) by the database for the
 * call record.
 */
import type { Pool, PoolClient } from 'pg';
import { fault } from './faults.ts';

export type SyncEndpoint = 'connect' | 'push' | 'pull' | 'rebuild';

/** What the adapter sends: the HTTP status and the exact body text. */
export interface CanonicalResult {
  status: number;
  body: string;
}

const ENTRY_POINTS: Readonly<Record<SyncEndpoint, string>> = {
  connect: 'synchro.synchro_connect',
  push: 'synchro.synchro_push',
  pull: 'synchro.synchro_pull',
  rebuild: 'synchro.synchro_rebuild',
};

/**
 * A string constant for a simple-protocol query, dollar-quoted with a tag the
 * text does not contain: nothing in the text is escaped, so a page of a few
 * hundred kilobytes costs one search instead of a copy character by character.
 */
function dollarQuoted(text: string): string {
  let tag = '$synchro$';
  // The closing tag must be the first occurrence of the tag after the opening one: the text must not
  // hold the tag, nor end in a start of it (text ending in "$synchro" would end the constant early).
  // Only the text's last characters can meet the closing tag, so they are all that is joined to it.
  const endsInTag = (t: string) => {
    const tail = text.slice(Math.max(0, text.length - (t.length - 1)));
    return `${tail}${t}`.indexOf(t) !== tail.length;
  };
  for (let n = 0; text.includes(tag) || endsInTag(tag); n++) tag = `$synchro${n}$`;
  return `${tag}${text}${tag}`;
}

/** The statements that make the call as synchro_adapter and read its result, for a simple-protocol query. */
function callStatements(endpoint: SyncEndpoint, userId: string, outcome: CanonicalResult): string {
  // The outcome {"status", "body"} is built by the database from the status and the body as a text
  // constant: the same jsonb value as parsing its JSON text, without escaping a page of JSON inside a
  // JSON string here and unescaping it there (a few milliseconds per 1,000-change page on each side).
  if (!Number.isSafeInteger(outcome.status)) throw new Error(`the ${endpoint} outcome has no integer status`);
  const outcomeValue = `jsonb_build_object('status', ${outcome.status}, 'body', ${dollarQuoted(outcome.body)}::text)`;
  const call = `${ENTRY_POINTS[endpoint]}(${dollarQuoted(userId)}, ${outcomeValue})`;
  const role = fault('bound001-entry-call-as-login') ? 'RESET ROLE' : 'SET LOCAL ROLE synchro_adapter'; // fault: server:bound001-entry-call-as-login
  return `${role}; SELECT (r.c ->> 'status')::integer AS status, r.c ->> 'body' AS body FROM ${call} AS r(c)`;
}

/** The entry point's result among the results of a multi-statement query. */
function resultOf(results: unknown, endpoint: SyncEndpoint): CanonicalResult {
  const list = (Array.isArray(results) ? results : [results]) as { command?: string; rows?: { status: unknown; body: unknown }[] }[];
  const row = list.find((r) => r.command === 'SELECT')?.rows?.[0];
  if (row === undefined || typeof row.status !== 'number' || typeof row.body !== 'string') throw new Error(`the ${endpoint} entry point returned no canonical result`);
  return { status: row.status, body: row.body };
}

/**
 * Ends the request's open transaction on `db` with the one call of the
 * endpoint's entry point: the core's work commits with it (`keepWork`), or is
 * rolled back first and the call is committed alone (an answer the core
 * found without changing anything, such as a push replay). A failed call
 * (no EXECUTE, a refused outcome) throws with the transaction aborted: the
 * caller rolls back.
 */
export async function commitThroughEntryPoint(db: PoolClient, endpoint: SyncEndpoint, userId: string, body: string, keepWork = true): Promise<CanonicalResult> {
  if (fault('bound001-pull-answers-without-entry-call') && endpoint === 'pull') return await commitWithoutCall(db, body, keepWork); // fault: server:bound001-pull-answers-without-entry-call
  if (fault('bound001-fallback-on-revoked-entry') && !(await db.query<{ ok: boolean }>(`SELECT has_function_privilege('synchro_adapter', '${ENTRY_POINTS[endpoint]}(text, jsonb)', 'EXECUTE') AS ok`)).rows[0]?.ok) return await commitWithoutCall(db, body, keepWork); // fault: server:bound001-fallback-on-revoked-entry
  const discard = keepWork ? '' : 'ROLLBACK; BEGIN; ';
  return resultOf(await db.query(`${discard}${callStatements(endpoint, userId, { status: 200, body })}; COMMIT`), endpoint);
}

/**
 * The call for a request the core refused (its error envelope): a transaction
 * of its own, since the core's transaction was rolled back with the refusal.
 */
export async function refusalThroughEntryPoint(pool: Pool, endpoint: SyncEndpoint, userId: string, refusal: CanonicalResult): Promise<CanonicalResult> {
  const db = await pool.connect();
  try {
    return resultOf(await db.query(`BEGIN; ${callStatements(endpoint, userId, refusal)}; COMMIT`), endpoint);
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}

/** What an adapter that answers on its own would do (used only by fault switches): commit or drop the core's work and answer its text. */
async function commitWithoutCall(db: PoolClient, body: string, keepWork: boolean): Promise<CanonicalResult> {
  await db.query(keepWork ? 'COMMIT' : 'ROLLBACK');
  return { status: 200, body };
}
