/**
 * Forged, expired, misbound and cross-user credentials. Each credential
 * probe goes to all four endpoints with an otherwise valid body: on connect
 * the body registers a new client, so a token the server wrongly accepts
 * shows as a 200 and a new client; on push, pull and rebuild it is A's
 * request. Every probe must be refused with `401 auth_required`, except a
 * long user claim, which the protocol does not bound (it must only not break
 * the server). Misbound and cross-user probes use B's real token with A's
 * client, scopes and cursors.
 *
 * Tokens are JWTs the profile writes itself (header, payload octets, HMAC),
 * so it can write what a JWT library would not: `alg: none`, a payload that
 * is not UTF-8, a user id with a lone surrogate. Probes that need the
 * signing secret run only when the adapter config gives it (an `auth.jwt`
 * secret, or the reference); the others edit a token the adapter issued.
 */
import { createHmac } from 'node:crypto';
import { incompressible } from './hostile.ts';
import type { Fixture } from './fixture.ts';
import type { Endpoint, FuzzRequest } from './types.ts';
import { ENDPOINTS } from './types.ts';

/** What signing a token for the server takes: an HS256 secret, claims every token carries, the claim naming the user. */
export interface TokenMaterial {
  secret: string;
  claims: Record<string, unknown>;
  userClaim: string;
}

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url');

function signed(secret: string, header: Record<string, unknown>, payload: Buffer, hash = 'sha256'): string {
  const head = `${b64(JSON.stringify(header))}.${b64(payload)}`;
  return `${head}.${b64(createHmac(hash, secret).update(head).digest())}`;
}

interface Claims {
  user?: unknown;
  exp?: unknown;
  iat?: unknown;
  nbf?: unknown;
  omit?: string[];
}

/** Payload octets: the configured claims, the user claim and the time claims, with `omit` left out. */
function payload(material: TokenMaterial, claims: Claims): Buffer {
  const now = Math.floor(Date.now() / 1000);
  const all: Record<string, unknown> = { ...material.claims, [material.userClaim]: 'user' in claims ? claims.user : PROBE_USER, iat: claims.iat ?? now, exp: claims.exp ?? now + 3600 };
  if (claims.nbf !== undefined) all.nbf = claims.nbf;
  for (const name of claims.omit ?? []) delete all[name];
  return Buffer.from(JSON.stringify(all), 'utf8');
}

/** The user of a forged token: one no fixture client belongs to. */
const PROBE_USER = 'robustness-token-user';

interface Probe {
  label: string;
  /** What making it takes: the signing secret, or a token of the adapter that is a JWT to edit. */
  needs?: 'secret' | 'jwt';
  /** Authorization header values to send (none, one or several). */
  authorization: (ctx: { material: TokenMaterial; valid: string }) => string[];
  /** The protocol lets the server accept this credential: only surviving it is required. */
  mayAccept?: boolean;
}

const HS256 = { alg: 'HS256', typ: 'JWT' };

function withSecret(make: (material: TokenMaterial) => string): Pick<Probe, 'needs' | 'authorization'> {
  return { needs: 'secret', authorization: ({ material }) => [`Bearer ${make(material)}`] };
}

/** Whether a token is a compact JWS whose payload is a JSON object (so it can be edited). */
function isJwt(token: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  try {
    const claims = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) as unknown;
    return typeof claims === 'object' && claims !== null && !Array.isArray(claims);
  } catch {
    return false;
  }
}

function editedPayload(valid: string, edit: (claims: Record<string, unknown>) => void): string {
  const [header, body, signature] = valid.split('.');
  const claims = JSON.parse(Buffer.from(body ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  edit(claims);
  return `${header}.${b64(JSON.stringify(claims))}.${signature}`;
}

const PROBES: Probe[] = [
  { label: 'no Authorization header', authorization: () => [] },
  { label: 'Basic credentials', authorization: () => ['Basic cm9idXN0bmVzczpyb2J1c3RuZXNz'] },
  { label: 'Bearer with no token', authorization: () => ['Bearer '] },
  { label: 'two Authorization headers', authorization: ({ valid }) => [`Bearer ${valid}`, `Bearer ${valid}`] },
  { label: 'a token that is not a JWT', authorization: () => ['Bearer not-a-token'] },
  { label: 'a five-part token', authorization: ({ valid }) => [`Bearer ${valid}.e30.e30`] },
  { label: 'alg none', needs: 'jwt', authorization: ({ valid }) => [`Bearer ${b64(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${valid.split('.')[1]}.`] },
  { label: 'alg NONE', needs: 'jwt', authorization: ({ valid }) => [`Bearer ${b64(JSON.stringify({ alg: 'NONE' }))}.${valid.split('.')[1]}.`] },
  { label: 'signature cut short', authorization: ({ valid }) => [`Bearer ${valid.slice(0, -6)}`] },
  { label: 'payload changed under its signature', needs: 'jwt', authorization: ({ valid, material }) => [`Bearer ${editedPayload(valid, (c) => { c[material.userClaim] = PROBE_USER; })}`] },
  { label: 'signed with another secret', ...withSecret((m) => signed(`${m.secret}-not`, HS256, payload(m, {}))) },
  { label: 'HS512 with the right secret', ...withSecret((m) => signed(m.secret, { alg: 'HS512', typ: 'JWT' }, payload(m, {}), 'sha512')) },
  { label: 'expired an hour ago', ...withSecret((m) => signed(m.secret, HS256, payload(m, { iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }))) },
  { label: 'not valid before an hour from now', ...withSecret((m) => signed(m.secret, HS256, payload(m, { nbf: Math.floor(Date.now() / 1000) + 3600 }))) },
  { label: 'no exp', ...withSecret((m) => signed(m.secret, HS256, payload(m, { omit: ['exp'] }))) },
  { label: 'iat a year ahead', ...withSecret((m) => signed(m.secret, HS256, payload(m, { iat: Math.floor(Date.now() / 1000) + 365 * 86_400, exp: Math.floor(Date.now() / 1000) + 2 * 365 * 86_400 }))) },
  { label: 'exp written as a string', ...withSecret((m) => signed(m.secret, HS256, payload(m, { exp: '2999-01-01' }))) },
  { label: 'no user claim', ...withSecret((m) => signed(m.secret, HS256, payload(m, { omit: [m.userClaim] }))) },
  { label: 'an empty user claim', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: '' }))) },
  { label: 'a numeric user claim', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: 42 }))) },
  { label: 'a null user claim', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: null }))) },
  { label: 'a user claim holding U+0000', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: 'robustness\u0000a' }))) },
  { label: 'a user claim X + lone high surrogate', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: 'X\ud800' }))) },
  { label: 'a user claim X + lone low surrogate', ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: 'X\udfff' }))) },
  {
    label: 'a user claim X + octet FF (not UTF-8)',
    ...withSecret((m) => {
      const text = payload(m, { user: 'X\ue000' }).toString('utf8');
      const [before, after] = text.split('\ue000');
      return signed(m.secret, HS256, Buffer.concat([Buffer.from(before ?? ''), Buffer.from([0xff]), Buffer.from(after ?? '')]));
    }),
  },
  { label: 'an unknown critical header', ...withSecret((m) => signed(m.secret, { ...HS256, crit: ['robustness'], robustness: true }, payload(m, {}))) },
  { label: 'a user claim of 300 octets', mayAccept: true, ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: incompressible(300, 1) }))) },
  { label: 'a user claim of 2,800 random characters', mayAccept: true, ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: incompressible(2800, 2) }))) },
  { label: 'a user claim of 9,000 random characters', mayAccept: true, ...withSecret((m) => signed(m.secret, HS256, payload(m, { user: incompressible(9000, 3) }))) },
];

/**
 * A user id with a lone surrogate has no UTF-8 form; a server that stores it
 * anyway stores U+FFFD in its place, and so lets `X\ud800` act as the real
 * user `X\uFFFD`. The real user registers a client first (that must work);
 * then the lone-surrogate token continues that client, which must be refused.
 */
function collision(fixture: Fixture, material: TokenMaterial): FuzzRequest[] {
  const clientId = 'robustness-collision-client';
  const token = (user: string) => signed(material.secret, HS256, payload(material, { user }));
  const connect = (user: string, body: Record<string, unknown>, label: string, expect: FuzzRequest['expect']): FuzzRequest => ({
    part: 'tokens',
    method: 'POST',
    path: '/sync/connect',
    headers: [
      ['Authorization', `Bearer ${token(user)}`],
      ['Content-Type', 'application/json'],
    ],
    body: json(body),
    label,
    expect,
  });
  const common = { client_id: clientId, platform: 'robustness', app_version: '1.0.0', protocol_version: 3 };
  return [
    connect('X\ufffd', { ...common, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }, 'connect: the user X + U+FFFD registers a client', { kind: 'survive', codes: ['auth_required'] }),
    connect('X\ud800', { ...common, client_generation: 1, schema: fixture.schema, scope_set_version: 0, known_scopes: {} }, "connect: a user claim X + lone high surrogate continues the client of user X + U+FFFD", { kind: 'refuse', codes: ['auth_required'] }),
  ];
}

const PATHS: Record<Endpoint, string> = { connect: '/sync/connect', push: '/sync/push', pull: '/sync/pull', rebuild: '/sync/rebuild' };

const json = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');

/** Every credential, misbound and cross-user probe, and the probes this adapter cannot make. */
export function tokenProbes(fixture: Fixture, material: TokenMaterial | undefined): { requests: FuzzRequest[]; notRun: string[] } {
  const requests: FuzzRequest[] = [];
  const notRun: string[] = [];
  const valid = fixture.a.token;
  PROBES.forEach((probe, n) => {
    if (probe.needs === 'secret' && material === undefined) {
      notRun.push(`${probe.label} (needs the JWT secret: give "auth": {"jwt": ...} in the adapter config)`);
      return;
    }
    if (probe.needs === 'jwt' && !isJwt(valid)) {
      notRun.push(`${probe.label} (the adapter's tokens are not JWTs to edit)`);
      return;
    }
    const values = probe.authorization({ valid, material: material ?? { secret: '', claims: {}, userClaim: 'sub' } });
    for (const endpoint of ENDPOINTS) {
      const body =
        endpoint === 'connect'
          ? { client_id: `robustness-token-client-${n}`, platform: 'robustness', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }
          : fixture.bases[endpoint];
      requests.push({
        part: 'tokens',
        method: 'POST',
        path: PATHS[endpoint],
        headers: [...values.map((value): [string, string] => ['Authorization', value]), ['Content-Type', 'application/json']],
        body: json(body),
        label: `${endpoint}: ${probe.label}`,
        // On push, pull and rebuild even an accepted long user id owns no client: those are refused either way.
        expect: probe.mayAccept === true && endpoint === 'connect' ? { kind: 'survive', codes: ['auth_required'] } : { kind: 'refuse', codes: ['auth_required'] },
      });
    }
  });
  const asB = (endpoint: Endpoint, label: string, body: unknown, codes: string[]): FuzzRequest => ({
    part: 'tokens',
    method: 'POST',
    path: PATHS[endpoint],
    headers: [
      ['Authorization', `Bearer ${fixture.b.token}`],
      ['Content-Type', 'application/json'],
    ],
    body: json(body),
    label: `${endpoint}: ${label}`,
    expect: { kind: 'refuse', codes },
  });
  const { a, b, schema } = fixture;
  if (material !== undefined) requests.push(...collision(fixture, material));
  const bCommon = { client_id: b.clientId, client_generation: b.generation, schema };
  for (const endpoint of ['push', 'pull', 'rebuild'] as const) requests.push(asB(endpoint, "user B's token with user A's client", fixture.bases[endpoint], ['auth_required']));
  requests.push(asB('pull', "user B pulls user A's scope with A's cursor", { ...bCommon, scope_set_version: b.scopeSetVersion, scopes: { [a.scope]: { cursor: a.cursor } }, limit: 100 }, ['invalid_request']));
  requests.push(asB('rebuild', "user B rebuilds user A's scope", { ...bCommon, scope: a.scope, rebuild_id: '00000000-0000-4000-8000-00000000000b', cursor: null, limit: 100 }, ['invalid_request']));
  if (a.cursor !== null) requests.push(asB('pull', "user B presents user A's cursor for its own scope", { ...bCommon, scope_set_version: b.scopeSetVersion, scopes: { [b.scope]: { cursor: a.cursor } }, limit: 100 }, ['invalid_request']));
  return { requests, notRun };
}
