/**
 * Canaries for SYNC-OPS-005: unique strings the scenario plants in every
 * identifying and payload position, and the operational outputs searched for
 * them (the server's log window, readiness bodies, the health detail, the
 * quarantine records). Credentials and opaque tokens are not planted but
 * harvested: every bearer token the harness sent and every cursor, rebuild
 * cursor and seed token the server issued during the scenario.
 */
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import { bodyOf, upstreamOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

interface Canaries {
  /** Position (as the feature names it) -> the planted text. */
  planted: Map<string, string>;
  /** Users whose whole signed token is a canary. */
  tokenUsers: string[];
}

const canaries = new WeakMap<SyncWorld, Canaries>();

const TOKEN_OF = /^the full signed JWT of "([^"]+)"$/;
/** A canary written inside SQL comment markers is searched without them. */
const SQL_COMMENT = /^\/\*\s*(.+?)\s*\*\/$/;

export function plantCanaries(world: SyncWorld, rows: { position: string; canary: string }[]): void {
  const planted = new Map<string, string>();
  const tokenUsers: string[] = [];
  for (const { position, canary } of rows) {
    const token = TOKEN_OF.exec(canary);
    if (token?.[1] !== undefined) tokenUsers.push(token[1]);
    else planted.set(position, SQL_COMMENT.exec(canary)?.[1] ?? canary);
  }
  if (planted.size === 0) throw new Error('the canary table plants no canary');
  canaries.set(world, { planted, tokenUsers });
}

function canariesOf(world: SyncWorld): Canaries {
  const known = canaries.get(world);
  if (known === undefined) throw new Error('no canaries were set up in this scenario ("the harness uses these canaries:")');
  return known;
}

export function plantedCanaries(world: SyncWorld): string[] {
  return [...canariesOf(world).planted.values()];
}

/** The texts no operational output may contain: the planted canaries and what was issued or sent during the scenario. */
export async function forbiddenTexts(world: SyncWorld): Promise<{ label: string; text: string }[]> {
  const forbidden = plantedCanaries(world).map((text) => ({ label: `canary ${JSON.stringify(text)}`, text }));
  const server = await world.readyServer();
  for (const user of canariesOf(world).tokenUsers) forbidden.push({ label: `a signed token of user ${user}`, text: await server.token(user) });
  const proxy = await world.proxy();
  const seen = new Set<string>();
  for (const exchange of proxy.exchanges) {
    const authorization = exchange.requestHeaders.authorization;
    const bearer = typeof authorization === 'string' ? /^Bearer (.+)$/.exec(authorization)?.[1] : undefined;
    if (bearer !== undefined && !seen.has(bearer)) {
      seen.add(bearer);
      forbidden.push({ label: 'a bearer token the harness sent', text: bearer });
    }
    const answer = upstreamOf(exchange);
    for (const token of issuedTokens(answer === undefined ? undefined : bodyOf(answer.body))) {
      if (seen.has(token)) continue;
      seen.add(token);
      forbidden.push({ label: 'a cursor or token the server issued', text: token });
    }
  }
  return forbidden;
}

/** Members of a response that carry an opaque cursor or token: scope cursors, rebuild cursors, seed page tokens and receipts. */
const TOKEN_MEMBERS = new Set(['cursor', 'final_scope_cursor', 'next_cursor', 'page_token', 'next_page_token', 'receipt', 'continuation_receipt']);

function issuedTokens(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) issuedTokens(item, out);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      if (typeof member === 'string' && member.length >= 8 && (TOKEN_MEMBERS.has(key) || /^s[pc]1\./.test(member))) out.push(member);
      else issuedTokens(member, out);
    }
  }
  return out;
}

/** Which of `forbidden` occur in `output`, by label, with where. */
export function findForbidden(output: string, forbidden: { label: string; text: string }[]): string[] {
  return forbidden.filter(({ text }) => output.includes(text)).map(({ label, text }) => `${label} (${text.length > 40 ? `${text.slice(0, 40)}…` : text})`);
}

/** The server's log window for this scenario (the control protocol's logs.since). */
export async function capturedLogs(server: ServerAdapter): Promise<string> {
  if (!server.logs) throw new Error(`server adapter "${server.id}" has no logs capability`);
  return server.logs.text();
}
