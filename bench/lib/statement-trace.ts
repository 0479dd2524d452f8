/**
 * Times every database statement of every pg client in this process while
 * switched on, keyed by session (application_name, "pool" when unset) and by
 * the statement's shape: quoted literals, dollar-quoted bodies and numbers
 * folded, so a statement that carries literals still counts as one.
 * Diagnostics only (the trace scripts); no bench goal uses it. The pull trace
 * keys statements by their whole text instead, to EXPLAIN each one afterwards.
 */
import pg from 'pg';
import { fmt } from './report.ts';

/** A statement's totals, with the parameters it last ran with (for an EXPLAIN afterwards). */
export type Seen = { count: number; ms: number; values: unknown[] | undefined };

/** How statements are told apart: by session and shape (the default), or by any other key. */
export type StatementKey = (session: string, text: string) => string;

const bySessionAndShape: StatementKey = (session, text) => `[${session}] ${statementShape(text)}`;

export function statementShape(text: string): string {
  return text
    .replace(/\$synchro\d*\$[\s\S]*?\$synchro\d*\$/g, '$q$')
    .replace(/'(?:[^']|'')*'/g, "'?'")
    .replace(/\b\d+\b/g, 'N')
    .replace(/\s+/g, ' ')
    .slice(0, 150);
}

export function traceStatements(keyOf: StatementKey = bySessionAndShape): { seen: Map<string, Seen>; on: { value: boolean } } {
  const seen = new Map<string, Seen>();
  const on = { value: false };
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: unknown }).query = function (this: pg.Client & { connectionParameters?: { application_name?: string } }, ...args: unknown[]) {
    const out = original.apply(this, args);
    if (!on.value || !(out instanceof Promise)) return out;
    const config = typeof args[0] === 'string' ? undefined : (args[0] as { text?: string; values?: unknown[] });
    const text = config === undefined ? (args[0] as string) : String(config.text);
    const key = keyOf(this.connectionParameters?.application_name || 'pool', text);
    // A named statement (a query config) carries its values in the config.
    const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : Array.isArray(config?.values) ? config.values : undefined;
    const t0 = performance.now();
    const record = () => {
      const s = seen.get(key) ?? { count: 0, ms: 0, values };
      s.count++;
      s.ms += performance.now() - t0;
      s.values = values;
      seen.set(key, s);
    };
    return out.then(
      (r) => {
        record();
        return r;
      },
      (e: unknown) => {
        record();
        throw e;
      },
    );
  };
  return { seen, on };
}

/** Per session totals, then the `top` statements by total time, each per `unit` (a push, a probe). */
export function printTrace(seen: Map<string, Seen>, units: number, unit: string, top: number): void {
  const rows = [...seen.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const bySession = new Map<string, Seen>();
  for (const [k, s] of rows) {
    const session = k.slice(0, k.indexOf(']') + 1);
    const t = bySession.get(session) ?? { count: 0, ms: 0, values: undefined };
    t.count += s.count;
    t.ms += s.ms;
    bySession.set(session, t);
  }
  for (const [session, s] of bySession) console.log(`${session} ${fmt(s.count)} statements, ${(s.count / units).toFixed(1)} per ${unit}, ${(s.ms / units).toFixed(2)} ms per ${unit}`);
  for (const [k, s] of rows.slice(0, top)) console.log(`${(s.ms / units).toFixed(2).padStart(8)} ms/${unit} ${(s.count / units).toFixed(2).padStart(7)}x ${(s.ms / s.count).toFixed(3)} ms  ${k}`);
}
