/**
 * Statements a request runs every time, sent as named prepared statements:
 * each pooled session parses a text once, and after a few executions the
 * database may keep one generic plan instead of planning on every call. The
 * capture gate, for one, costs more to plan (about 0.45 ms) than to execute
 * (about 0.08 ms). Only fixed texts (no values spliced in, identifiers or
 * literals chosen by a fault switch aside) belong here: every distinct text
 * stays prepared in each session that ran it, for the session's life.
 */
import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

const names = new Map<string, string>();

/** The query `text` with `values` as a statement named after the text, so equal texts share one preparation per session. */
export function named(text: string, values: unknown[] = []): QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `synchro-${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    names.set(text, name);
  }
  return { name, text, values };
}
