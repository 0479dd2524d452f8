/**
 * Seed sessions: a database connection of its own on which the harness runs
 * the seed export's calls one at a time, as an exporter would on its
 * connection (`seed.session.open`, `seed.session.call`, `seed.session.close`).
 * A SQL implementation offers the same through its seed SQL functions; the
 * reference's seed functions are TypeScript over a connection, so the
 * control holds the connection and makes each call on it. Between calls the
 * connection keeps whatever transaction the caller began, so a page token
 * can be presented in the transaction it was issued in, after it ended, or
 * in the next one. Only transaction control statements run as statements:
 * the session is not a general SQL channel.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';

/** What one call answered: the function's value, its protocol refusal, or an SQL-level failure. */
export type SeedCallAnswer = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } } | { ok: false; sql_error: { sqlstate: string; message: string } };

/** The seed functions of the server, on one connection. A refusal throws; the caller classifies it. */
export interface SeedSessionCalls {
  manifest(db: PoolClient, pageLimit: number | undefined): Promise<unknown>;
  page(db: PoolClient, call: { scope: string; pageToken: string; continuationReceipt: string | null; expectedRowOrdinal: number; limit: number | undefined }): Promise<unknown>;
  /** The protocol refusal a thrown error stands for, or undefined when it is not one. */
  refusal(error: unknown): { code: string; message: string } | undefined;
}

/** Transaction control only: BEGIN / START TRANSACTION with its characteristics, COMMIT, ROLLBACK. */
const TRANSACTION_STATEMENT = /^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|ABORT)(\s+[A-Za-z ,]*)?;?\s*$/i;

/** At most this many sessions at once: each holds a connection of the pool. */
const MAX_SESSIONS = 8;

export class SeedSessions {
  readonly #sessions = new Map<string, PoolClient>();
  readonly #calls: SeedSessionCalls;

  constructor(calls: SeedSessionCalls) {
    this.#calls = calls;
  }

  async open(pool: Pool): Promise<string> {
    if (this.#sessions.size >= MAX_SESSIONS) throw new Error(`${MAX_SESSIONS} seed sessions are open already; close one first`);
    const db = await pool.connect();
    const id = randomUUID();
    this.#sessions.set(id, db);
    return id;
  }

  has(id: string): boolean {
    return this.#sessions.has(id);
  }

  /** Runs one call; undefined `statement`, `manifest` and `page` are checked by the caller. */
  async call(id: string, call: { statement?: string; manifest?: { pageLimit?: number }; page?: Parameters<SeedSessionCalls['page']>[1] }): Promise<SeedCallAnswer> {
    const db = this.#sessions.get(id);
    if (db === undefined) throw new Error(`no seed session ${id} is open`);
    try {
      if (call.statement !== undefined) {
        if (!TRANSACTION_STATEMENT.test(call.statement)) return { ok: false, sql_error: { sqlstate: '42601', message: 'a seed session runs transaction control statements only' } };
        await db.query(call.statement);
        return { ok: true, value: null };
      }
      if (call.manifest !== undefined) return { ok: true, value: await this.#calls.manifest(db, call.manifest.pageLimit) };
      if (call.page !== undefined) return { ok: true, value: await this.#calls.page(db, call.page) };
      throw new Error('a seed session call names a statement, a manifest or a page');
    } catch (error) {
      const refusal = this.#calls.refusal(error);
      if (refusal !== undefined) return { ok: false, error: refusal };
      const sqlstate = (error as { code?: unknown }).code;
      if (typeof sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(sqlstate)) return { ok: false, sql_error: { sqlstate, message: (error as Error).message } };
      // A seed function refusing the transaction it runs in is an SQL-level failure in a SQL implementation.
      if ((error as Error).name === 'SeedTransactionError') return { ok: false, sql_error: { sqlstate: '25000', message: (error as Error).message } };
      throw error;
    }
  }

  /** Ends the session: its connection is destroyed, so an open transaction rolls back with it. */
  close(id: string): boolean {
    const db = this.#sessions.get(id);
    if (db === undefined) return false;
    this.#sessions.delete(id);
    db.release(true);
    return true;
  }

  closeAll(): void {
    for (const id of [...this.#sessions.keys()]) this.close(id);
  }
}
