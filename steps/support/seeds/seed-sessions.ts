/**
 * Seed connections: the connection an exporter makes its seed calls on, as
 * the server's `seed` capability offers it (`SeedControl.session`). A
 * scenario names each one ("S1"); the helpers keep the page tokens it kept,
 * the pages it fetched and the answer of its last page call, and alter a
 * page token one binding at a time the way an attacker or a confused
 * exporter would (payload member changed with the MAC kept, MAC bit flipped).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { SeedCallResult, SeedSession } from '../../../harness/adapters/server.ts';
import { canonicalJson } from '../../../harness/codec/index.ts';
import { currentManifest } from '../integrity/context.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

/** One page call: what was asked and what the server answered. */
export interface PageCall {
  scope: string;
  ordinal: number;
  limit: number;
  token: string;
  answer: SeedCallResult;
}

export interface SeedConnection {
  session: SeedSession;
  /** The value of the last manifest call on this connection. */
  manifest: Record<string, unknown> | undefined;
  tokens: Map<string, string>;
}

interface SessionsState {
  connections: Map<string, SeedConnection>;
  /** The pages of the last "pages through" step, in order. */
  paged: PageCall[];
  lastCall: PageCall | undefined;
  /** Every page call of the scenario, in order. */
  calls: PageCall[];
}

const states = new WeakMap<SyncWorld, SessionsState>();

export function seedSessionsState(world: SyncWorld): SessionsState {
  let state = states.get(world);
  if (!state) {
    state = { connections: new Map(), paged: [], lastCall: undefined, calls: [] };
    states.set(world, state);
  }
  return state;
}

/** The named seed connection, opened on first use; 'skipped' when the server offers no seed sessions. */
export async function seedConnection(world: SyncWorld, name: string): Promise<SeedConnection | 'skipped'> {
  const state = seedSessionsState(world);
  const known = state.connections.get(name);
  if (known !== undefined) return known;
  const server = await world.readyServer();
  if (server.seed?.session === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no seed session (seed.session.open) to make seed calls on a connection of the harness's choosing`);
  // The export binds the published manifest; asking for the current schema lets a server that publishes on demand do so first.
  await currentManifest(world);
  const connection: SeedConnection = { session: await server.seed.session(), manifest: undefined, tokens: new Map() };
  state.connections.set(name, connection);
  return connection;
}

export function describe(answer: SeedCallResult): string {
  return JSON.stringify(answer).slice(0, 600);
}

/** The value of a call that had to succeed (a Given or When step); a refusal is a broken setup. */
export function servedValue(answer: SeedCallResult, what: string): Record<string, unknown> {
  if (!answer.ok) throw new Error(`${what} failed: ${describe(answer)}`);
  return answer.value as Record<string, unknown>;
}

export async function callManifest(connection: SeedConnection, pageLimit: number): Promise<Record<string, unknown>> {
  const manifest = servedValue(await connection.session.manifest(pageLimit), `the seed manifest call with page limit ${pageLimit}`);
  connection.manifest = manifest;
  return manifest;
}

export function scopeEntry(connection: SeedConnection, scope: string): Record<string, unknown> {
  const entries = (connection.manifest?.portable_scopes ?? []) as Record<string, unknown>[];
  const entry = entries.find((e) => e.id === scope);
  if (entry === undefined) throw new Error(`the seed manifest of this connection has no portable scope "${scope}": ${JSON.stringify(entries.map((e) => e.id))}`);
  return entry;
}

export function pageLimitOf(connection: SeedConnection): number {
  const limit = connection.manifest?.page_limit;
  if (typeof limit !== 'number') throw new Error('no seed manifest with a page limit was fetched on this connection');
  return limit;
}

export function keptToken(connection: SeedConnection, label: string): string {
  const token = connection.tokens.get(label);
  if (token === undefined) throw new Error(`no page token was kept as "${label}" on this seed connection`);
  return token;
}

export async function callPage(world: SyncWorld, connection: SeedConnection, scope: string, token: string, ordinal: number, limit: number): Promise<PageCall> {
  const answer = await connection.session.page({ scope, pageToken: token, continuationReceipt: null, expectedRowOrdinal: ordinal, limit });
  const call = { scope, ordinal, limit, token, answer };
  const state = seedSessionsState(world);
  state.lastCall = call;
  state.calls.push(call);
  return call;
}

/** The three dot-separated parts of a token: prefix, payload, MAC. */
function parts(token: string): [string, string, string] {
  const [prefix, payload, mac, ...rest] = token.split('.');
  if (prefix === undefined || payload === undefined || mac === undefined || rest.length > 0) throw new Error(`"${token.slice(0, 40)}..." is not a three-part page token`);
  return [prefix, payload, mac];
}

/**
 * `token` with one alteration, as the feature words it: `one bit of its MAC
 * flipped`, `"member" changed to "value" and the MAC kept`, `"member"
 * replaced by a new UUID and the MAC kept`, `"member" replaced and the MAC
 * kept`. The payload is re-encoded canonically, so only the named member differs.
 */
export function alterToken(token: string, alteration: string): string {
  const [prefix, payloadText, mac] = parts(token);
  if (alteration === 'one bit of its MAC flipped') {
    const bytes = Buffer.from(mac, 'base64url');
    bytes[0] = (bytes[0] ?? 0) ^ 0x01;
    return `${prefix}.${payloadText}.${bytes.toString('base64url')}`;
  }
  const payload = JSON.parse(Buffer.from(payloadText, 'base64url').toString('utf8')) as Record<string, unknown>;
  const changed = /^"([^"]+)" changed to "([^"]*)" and the MAC kept$/.exec(alteration);
  const uuid = /^"([^"]+)" replaced by a new UUID and the MAC kept$/.exec(alteration);
  const replaced = /^"([^"]+)" replaced and the MAC kept$/.exec(alteration);
  const member = changed?.[1] ?? uuid?.[1] ?? replaced?.[1];
  if (member === undefined) throw new Error(`unknown page token alteration "${alteration}"`);
  if (!(member in payload)) throw new Error(`the page token payload has no member "${member}": ${Object.keys(payload).join(', ')}`);
  if (changed) payload[member] = changed[2];
  else if (uuid) payload[member] = randomUUID();
  else payload[member] = replacement(member, payload[member]);
  if (canonicalJson(payload) === Buffer.from(payloadText, 'base64url').toString('utf8')) throw new Error(`the alteration "${alteration}" left the payload as it was`);
  return `${prefix}.${Buffer.from(canonicalJson(payload), 'utf8').toString('base64url')}.${mac}`;
}

/** A well-formed value of `member` that differs from `current`. */
function replacement(member: string, current: unknown): unknown {
  if (member === 'transaction_nonce') return randomBytes(32).toString('base64url');
  if (member === 'snapshot_boundary') {
    const kind = (current as { position_kind?: unknown } | null)?.position_kind;
    return kind === 'generation_start' ? { position_kind: 'transaction_end', commit_lsn: '0/1' } : { position_kind: 'generation_start' };
  }
  throw new Error(`the harness knows no replacement for page token member "${member}"`);
}
