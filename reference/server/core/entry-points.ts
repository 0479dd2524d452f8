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
 * Cost: a body of up to LARGE_BODY characters rides in the same round trip as
 * the COMMIT it replaces (one simple-protocol query: role, call, commit), so
 * the number of round trips per request is unchanged; the body crosses the
 * socket twice more (as a text constant, unescaped, and back in the result)
 * and is hashed once (sha256) by the database for the call record. A larger
 * body (a pull or rebuild page) goes as a bound parameter in a call of its
 * own between the role and the commit (decision 418): the database's lexer
 * then never scans it, and the result's body comes back only if it differs
 * from the body sent, compared by the database octet for octet.
 */
import type { Pool, PoolClient } from 'pg';
import { fault } from './faults.ts';
import { named } from './named-statements.ts';

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

/** The statement that makes the entry point's caller synchro_adapter for the rest of the transaction. */
function roleStatement(): string {
  return fault('bound001-entry-call-as-login') ? 'RESET ROLE' : 'SET LOCAL ROLE synchro_adapter'; // fault: server:bound001-entry-call-as-login
}

/** The statements that make the call as synchro_adapter and read its result, for a simple-protocol query. */
function callStatements(endpoint: SyncEndpoint, userId: string, outcome: CanonicalResult): string {
  // The outcome {"status", "body"} is built by the database from the status and the body as a text
  // constant: the same jsonb value as parsing its JSON text, without escaping a page of JSON inside a
  // JSON string here and unescaping it there (a few milliseconds per 1,000-change page on each side).
  if (!Number.isSafeInteger(outcome.status)) throw new Error(`the ${endpoint} outcome has no integer status`);
  const outcomeValue = `jsonb_build_object('status', ${outcome.status}, 'body', ${dollarQuoted(outcome.body)}::text)`;
  const call = `${ENTRY_POINTS[endpoint]}(${dollarQuoted(userId)}, ${outcomeValue})`;
  return `${roleStatement()}; SELECT (r.c ->> 'status')::integer AS status, r.c ->> 'body' AS body FROM ${call} AS r(c)`;
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
  if (body.length > LARGE_BODY) return await commitLargeBody(db, endpoint, userId, body, discard);
  return resultOf(await db.query(`${discard}${callStatements(endpoint, userId, { status: 200, body })}; COMMIT`), endpoint);
}

/**
 * A body longer than this many characters goes as a bound parameter (three round trips) rather than as
 * a text constant (one). Measured on the embedded cluster (decision 418): the two cost the same at about
 * 32,000 characters; the constant is about 0.5 ms cheaper at 1,000 and about 3.5 ms dearer at 256,000.
 */
const LARGE_BODY = 32_768;

/**
 * The call with the body as a bound parameter: the role, then the call (a prepared statement per entry
 * point and session), then the commit. The database answers whether the result's body is the body
 * sent, octet for octet (text equality under the database's deterministic collation is byte
 * equality), and sends the result's body back only when it is not: the answer is the result's body
 * either way, without the page crossing the socket a third time.
 */
async function commitLargeBody(db: PoolClient, endpoint: SyncEndpoint, userId: string, body: string, discard: string): Promise<CanonicalResult> {
  await db.query(`${discard}${roleStatement()}`);
  const { rows } = await db.query<{ status: unknown; echoed: unknown; body: unknown }>(
    named(
      `SELECT (r.c ->> 'status')::integer AS status, (r.c ->> 'body') IS NOT DISTINCT FROM $3::text AS echoed,
              CASE WHEN (r.c ->> 'body') IS DISTINCT FROM $3::text THEN r.c ->> 'body' END AS body
         FROM ${ENTRY_POINTS[endpoint]}($1::text, jsonb_build_object('status', $2::integer, 'body', $3::text)) AS r(c)`,
      [userId, 200, body],
    ),
  );
  await db.query('COMMIT');
  const row = rows[0];
  const answered = row?.echoed === true ? body : row?.body;
  if (row === undefined || typeof row.status !== 'number' || typeof answered !== 'string') throw new Error(`the ${endpoint} entry point returned no canonical result`);
  return { status: row.status, body: answered };
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
