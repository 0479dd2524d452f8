/**
 * The client side of opaque cursors: what a client presents, read from the
 * proxy records. Aliases (through the alias relay) give the client cursors
 * built to trip parsing, ordering, trimming and normalisation; the checks
 * then compare what it sent back with what it was given, octet for octet.
 */
import type { SyncWorld } from '../world.ts';
import { exchangesOf } from '../exchanges.ts';
import { withRequests } from './tokens.ts';

/** A table cell or step argument holding a JSON string literal. */
export function literal(text: string): string {
  const value = JSON.parse(text.trim()) as unknown;
  if (typeof value !== 'string') throw new Error(`${text} is not a JSON string literal`);
  return value;
}

/** The cursor client `name` presented for `scope` in its last pull request (undefined when absent or null). */
export async function lastPresented(world: SyncWorld, name: string, scope: string): Promise<{ value: unknown; seq: number }> {
  const pulls = withRequests(await exchangesOf(world, name, { endpoints: ['pull'] }));
  const last = pulls[pulls.length - 1];
  if (!last) throw new Error(`client "${name}" sent no pull request`);
  return { value: last.request?.scopes?.[scope]?.cursor, seq: last.exchange.seq };
}
