/**
 * The generated part of the profile: a fast-check arbitrary of case
 * descriptions per endpoint, and the request each description makes from the
 * endpoint's valid request. A description holds only small integers and
 * choices (which slot, which hostile value, how long, how deep), so cases are
 * reproduced from the seed and shrink towards the first slot, the first
 * variant and the shortest length that still fails.
 *
 * Whether a case must be refused is decided from the bytes it sends, never
 * assumed: a body the strict reader refuses, that breaks the endpoint's
 * schema or a cross-field rule of the wire layer, or that puts hostile text
 * where the protocol gives the value a meaning the server must check (an
 * unbound client id, a scope never assigned, a forged cursor) must be
 * refused. Any other case (long or odd but legal text where the protocol
 * puts no bound) must only be survived.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { checkBytes } from '../wire/index.ts';
import { BodyWriter, withDuplicateMember } from './body.ts';
import type { Fixture } from './fixture.ts';
import { badIntegerTokens, EXTRA_NAMES, hostileTexts, incompressible, LENGTHS, MAX_LENGTH, rawBodies, TYPED_VALUES } from './hostile.ts';
import { REFUSAL_CODES } from './judge.ts';
import { pointerOf, type Slot, slotsOf } from './slots.ts';
import type { Endpoint, Expectation, FuzzRequest } from './types.ts';

type Json = Record<string, unknown>;

export type CaseSpec =
  | { kind: 'remove'; slot: number }
  | { kind: 'extra'; slot: number; name: number; value: number }
  | { kind: 'retype'; slot: number; value: number }
  | { kind: 'integer'; slot: number; token: number }
  | { kind: 'text'; slot: number; text: number }
  | { kind: 'long'; slot: number; length: number; wide: boolean; seed: number }
  | { kind: 'nest'; slot: number; depth: number }
  | { kind: 'oversize'; extra: number }
  | { kind: 'count'; slot: number; past: number }
  | { kind: 'duplicate'; slot: number }
  | { kind: 'raw'; body: number }
  | { kind: 'header'; variant: number }
  | { kind: 'semantic'; variant: number };

const index = fc.nat({ max: 10_000 });

/**
 * A text length: mostly one of the lengths around likely limits (give or
 * take two), which shrinks to the shortest of them that still fails, else
 * any length up to MAX_LENGTH, which shrinks to the exact first one.
 */
const lengthArbitrary = fc.oneof(
  fc.tuple(fc.nat({ max: LENGTHS.length - 1 }), fc.integer({ min: -2, max: 2 })).map(([at, delta]) => Math.max(1, (LENGTHS[at] as number) + delta)),
  fc.integer({ min: 1, max: MAX_LENGTH }),
);

/** The arbitrary of one endpoint's cases; the same for every server, so a seed names the same cases everywhere. */
export function caseArbitrary(): fc.Arbitrary<CaseSpec> {
  return fc.oneof(
    { weight: 22, arbitrary: fc.record({ kind: fc.constant('text' as const), slot: index, text: index }) },
    { weight: 12, arbitrary: fc.record({ kind: fc.constant('long' as const), slot: index, length: lengthArbitrary, wide: fc.boolean(), seed: fc.integer() }) },
    { weight: 14, arbitrary: fc.record({ kind: fc.constant('retype' as const), slot: index, value: index }) },
    { weight: 10, arbitrary: fc.record({ kind: fc.constant('remove' as const), slot: index }) },
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('extra' as const), slot: index, name: index, value: index }) },
    { weight: 10, arbitrary: fc.record({ kind: fc.constant('integer' as const), slot: index, token: index }) },
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('semantic' as const), variant: index }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('header' as const), variant: index }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('raw' as const), body: index }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('duplicate' as const), slot: index }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('nest' as const), slot: index, depth: fc.integer({ min: 2, max: 5_000 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('oversize' as const), extra: fc.integer({ min: 1, max: 65_536 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('count' as const), slot: index, past: fc.integer({ min: 0, max: 2 }) }) },
  );
}

const PATHS: Record<Endpoint, string> = { connect: '/sync/connect', push: '/sync/push', pull: '/sync/pull', rebuild: '/sync/rebuild' };
const KINDS = { connect: 'connect-request', push: 'push-request', pull: 'pull-request', rebuild: 'rebuild-request' } as const;
/** Octets of a push body the protocol allows (wire-protocol.md 1.5); the oversize case goes past it. */
const BODY_LIMIT = 1_048_576;

/**
 * Slots where a hostile but schema-valid value still has a meaning the
 * server must check, so it must be refused: a client id no client of the
 * user has, a scope never assigned, a cursor or continuation never issued,
 * a key member that does not name the table's key field.
 */
function refusalCertain(endpoint: Endpoint, slot: Slot, fixture: Fixture): boolean {
  const pointer = pointerOf(slot);
  if (pointer === '/client_id') return endpoint !== 'connect';
  if (endpoint === 'pull') return /^\/scopes\/[^/]+(#name|\/cursor)$/.test(pointer);
  if (endpoint === 'rebuild') return pointer === '/scope' || pointer === '/cursor';
  if (endpoint === 'push') return fixture.table.known && /^\/mutations\/\d+\/pk\/[^/]+#name$/.test(pointer);
  return false;
}

interface Variant {
  label: string;
  codes: readonly string[];
  /** Changes a copy of the valid body; headers come from `headers` when given. */
  change?: (body: Json, fixture: Fixture) => void;
  headers?: (valid: Buffer, token: string) => { headers: [string, string][]; body: Buffer };
  /** Whether the fixture lets this variant make a request that must be refused. */
  applies?: (fixture: Fixture) => boolean;
}

const OTHER_HASH = 'f'.repeat(64);

function clientVariants(): Variant[] {
  return [
    { label: 'client_generation one ahead of the current one', codes: ['client_generation_expired'], change: (b) => { b.client_generation = Number(b.client_generation) + 1; } },
    { label: 'schema that is no manifest of the server', codes: ['schema_mismatch'], change: (b) => { b.schema = { version: Number((b.schema as Json).version) + 1, hash: OTHER_HASH }; } },
    { label: 'client_id of no client', codes: ['auth_required'], change: (b) => { b.client_id = 'robustness-no-such-client'; } },
    { label: "client_id of user B's client", codes: ['auth_required'], change: (b, f) => { b.client_id = f.b.clientId; } },
  ];
}

function flipLast(token: string): string {
  const last = token.at(-1) === 'A' ? 'B' : 'A';
  return `${token.slice(0, -1)}${last}`;
}

const SEMANTIC: Record<Endpoint, Variant[]> = {
  connect: [
    { label: 'the fresh sentinel for a known client', codes: ['invalid_schema_reference'], change: (b) => Object.assign(b, { schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }, { client_generation: undefined }) },
    { label: 'the fresh sentinel with a client_generation', codes: ['invalid_schema_reference'], change: (b) => { b.schema = { version: 0, hash: '' }; } },
    { label: 'schema_reset with the fresh sentinel', codes: ['invalid_schema_reference'], change: (b) => Object.assign(b, { schema: { version: 0, hash: '' }, schema_reset: true }) },
    { label: 'a continuing client without its client_generation', codes: ['invalid_schema_reference'], change: (b) => { delete b.client_generation; } },
    { label: 'a schema reference of version 0 with a hash', codes: ['invalid_schema_reference'], change: (b) => { b.schema = { version: 0, hash: OTHER_HASH }; } },
    { label: 'protocol_version 2', codes: ['upgrade_required'], change: (b) => { b.protocol_version = 2; } },
    { label: 'protocol_version 4', codes: ['upgrade_required'], change: (b) => { b.protocol_version = 4; } },
  ],
  push: [
    ...clientVariants(),
    { label: 'atomic batch addressing one row twice', codes: ['invalid_request'], change: (b) => { const m = (b.mutations as Json[])[0] as Json; b.mutations = [m, { ...m, mutation_id: '00000000-0000-4000-8000-000000000001' }]; b.atomic = true; } },
    { label: 'one mutation_id twice', codes: ['invalid_request'], change: (b) => { const [m0, m1] = b.mutations as Json[]; (m1 as Json).mutation_id = (m0 as Json).mutation_id; } },
    { label: 'pk naming a field that is not the key field', codes: ['invalid_request'], applies: (f) => f.table.known, change: (b, f) => { ((b.mutations as Json[])[0] as Json).pk = { [`${f.table.pkField}_not`]: 'x' }; } },
  ],
  pull: [
    ...clientVariants(),
    { label: 'scope_set_version ahead of the server', codes: ['invalid_request'], change: (b) => { b.scope_set_version = Number(b.scope_set_version) + 1; } },
    { label: 'a scope never assigned (user B)', codes: ['invalid_request'], change: (b, f) => { (b.scopes as Json)[f.b.scope] = { cursor: null }; } },
    { label: 'a forged cursor', codes: ['invalid_request'], change: (b, f) => { (b.scopes as Json)[f.a.scope] = { cursor: f.a.cursor === null ? 'forged' : flipLast(f.a.cursor) }; } },
  ],
  rebuild: [
    ...clientVariants(),
    { label: 'a scope not assigned to the client (user B)', codes: ['invalid_request'], change: (b, f) => { b.scope = f.b.scope; } },
    { label: 'a continuation on the first request of an attempt', codes: ['invalid_request'], change: (b) => { b.cursor = 'rb.forged.continuation'; } },
    { label: 'an incremental cursor as the continuation', codes: ['invalid_request'], change: (b, f) => { b.cursor = f.a.cursor ?? 'ic.forged'; } },
  ],
};

const json = 'application/json';
const HEADERS: Variant[] = [
  ...[
    ['no Content-Type', undefined],
    ['Content-Type text/plain', 'text/plain'],
    ['Content-Type application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
    ['Content-Type multipart/form-data', 'multipart/form-data; boundary=x'],
    ['Content-Type application/jsonx', 'application/jsonx'],
    ['an empty Content-Type', ''],
  ].map(([label, type]): Variant => ({ label: label as string, codes: ['invalid_request'], headers: (valid, token) => ({ headers: [['Authorization', `Bearer ${token}`], ...(type === undefined ? [] : [['Content-Type', type] as [string, string]])], body: valid }) })),
  { label: 'Content-Type twice', codes: ['invalid_request'], headers: (valid, token) => ({ headers: [['Authorization', `Bearer ${token}`], ['Content-Type', json], ['Content-Type', json]], body: valid }) },
  ...[
    ['Content-Encoding gzip on a plain body', 'gzip', false],
    ['Content-Encoding gzip on a gzip body', 'gzip', true],
    ['Content-Encoding deflate', 'deflate', false],
    ['Content-Encoding br', 'br', false],
    ['Content-Encoding x-robustness', 'x-robustness', false],
    ['Content-Encoding "identity, gzip"', 'identity, gzip', false],
  ].map(([label, coding, compress]): Variant => ({ label: label as string, codes: ['invalid_request'], headers: (valid, token) => ({ headers: [['Authorization', `Bearer ${token}`], ['Content-Type', json], ['Content-Encoding', coding as string]], body: compress ? gzipSync(valid) : valid }) })),
];

export interface CaseContext {
  endpoint: Endpoint;
  fixture: Fixture;
  slots: Slot[];
}

export function caseContext(endpoint: Endpoint, fixture: Fixture): CaseContext {
  return { endpoint, fixture, slots: slotsOf(KINDS[endpoint], fixture.bases[endpoint]) };
}

function pick<T>(list: readonly T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

/** Sets an own member, also one named `__proto__` (which plain assignment would turn into the prototype). */
function setMember(object: Record<string | number, unknown>, name: string | number, value: unknown): void {
  Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
}

/** Replaces (or, with `undefined`, removes) the value at `path`, or renames the member there. */
function edit(root: Json, slot: Slot, replacement: unknown): void {
  if (slot.path.length === 0) return;
  const parent = slot.path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], root) as Record<string | number, unknown>;
  const key = slot.path.at(-1) as string | number;
  if (slot.target === 'name') {
    const entries = Object.entries(parent).map(([name, value]) => (name === String(key) ? [replacement as string, value] : [name, value]));
    for (const name of Object.keys(parent)) delete parent[name];
    for (const [name, value] of entries) setMember(parent, name as string, value);
    return;
  }
  if (replacement === undefined && !Array.isArray(parent)) delete parent[key];
  else setMember(parent, key, replacement);
}

/**
 * Each push case gets its own batch and mutation ids (derived from the case,
 * so a replayed case sends the same ones): once one case is accepted, later
 * cases would otherwise stop at the replay lookup as idempotency conflicts
 * and never reach the code they are meant to reach.
 */
function freshIds(body: Json, spec: CaseSpec): void {
  body.batch_id = caseUuid(spec, 0);
  (body.mutations as Json[]).forEach((m, n) => {
    m.mutation_id = caseUuid(spec, n + 1);
  });
}

/** The n-th UUID of a case: derived from the case description, so replaying the case sends the same ones. */
function caseUuid(spec: CaseSpec, n: number): string {
  const hex = createHash('sha256').update(`${JSON.stringify(spec)}:${n}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const valueAt = (root: Json, slot: Slot): unknown => slot.path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)?.[key], root);

function standardHeaders(token: string): [string, string][] {
  return [
    ['Authorization', `Bearer ${token}`],
    ['Content-Type', json],
  ];
}

/** The request a case makes, with what its answer must be. */
export function buildCase(ctx: CaseContext, spec: CaseSpec): FuzzRequest {
  const { endpoint, fixture, slots } = ctx;
  const base = fixture.bases[endpoint];
  const token = fixture.a.token;
  const body = structuredClone(base) as Json;
  if (endpoint === 'push') freshIds(body, spec);
  const writer = new BodyWriter();
  const request = (label: string, bytes: Buffer, expect: Expectation, headers = standardHeaders(token)): FuzzRequest => ({ part: endpoint, method: 'POST', path: PATHS[endpoint], headers, body: bytes, label, expect });
  const refuse = (codes: readonly string[] = REFUSAL_CODES[endpoint]): Expectation => ({ kind: 'refuse', codes });
  /** Refused when the bytes break the reader, the schema or a wire rule, or when `slot` carries meaning; survived otherwise. */
  const judged = (label: string, bytes: Buffer, slot?: Slot): FuzzRequest => {
    const check = checkBytes(KINDS[endpoint], bytes);
    const certain = !check.ok || (slot !== undefined && refusalCertain(endpoint, slot, fixture));
    return request(label, bytes, certain ? refuse() : { kind: 'survive', codes: REFUSAL_CODES[endpoint] });
  };
  const valueSlots = slots.filter((s) => s.target === 'value' && s.path.length > 0);
  const valid = writer.render(base);
  switch (spec.kind) {
    case 'remove': {
      const slot = pick(valueSlots.filter((s) => s.required), spec.slot);
      if (slot === undefined) break;
      edit(body, slot, undefined);
      return judged(`without ${pointerOf(slot)}`, writer.render(body));
    }
    case 'extra': {
      const slot = pick(slots.filter((s) => s.target === 'value' && s.closed !== undefined), spec.slot) as Slot;
      const name = pick(EXTRA_NAMES, spec.name) as string;
      const typed = pick(TYPED_VALUES, spec.value) as (typeof TYPED_VALUES)[number];
      const target = valueAt(body, slot) as Json;
      // A map's extra member gets a value its schema never allows, so the request stays malformed.
      setMember(target, name, writer.json(slot.closed ? typed.json : '[[]]'));
      return judged(`extra member ${JSON.stringify(name)} in ${pointerOf(slot)}`, writer.render(body));
    }
    case 'retype': {
      const slot = pick(valueSlots, spec.slot) as Slot;
      const allowed = (t: string) => slot.types.has(t as never) || (t === 'integer' && slot.types.has('number'));
      const typed = pick(TYPED_VALUES.filter((v) => !allowed(v.type)), spec.value);
      if (typed === undefined) break;
      edit(body, slot, writer.json(typed.json));
      return judged(`${pointerOf(slot)} = ${typed.json}`, writer.render(body), slot);
    }
    case 'integer': {
      const slot = pick(valueSlots.filter((s) => s.integer !== undefined), spec.slot);
      if (slot === undefined) break;
      const token = pick(badIntegerTokens(slot.integer?.minimum, slot.integer?.maximum, slot.integer?.only), spec.token) as string;
      edit(body, slot, writer.json(token));
      return judged(`${pointerOf(slot)} = ${token}`, writer.render(body), slot);
    }
    case 'text':
    case 'long': {
      const slot = pick(
        slots.filter((s) => s.target === 'name' || (s.path.length > 0 && s.types.has('string') && typeof valueAt(base, s) !== 'object') || (s.types.has('string') && valueAt(base, s) === null)),
        spec.slot,
      ) as Slot;
      const current = slot.target === 'name' ? String(slot.path.at(-1)) : String(valueAt(base, slot) ?? '');
      let text: string;
      let label: string;
      if (spec.kind === 'long') {
        text = incompressible(spec.length, spec.seed, spec.wide);
        label = `${spec.length} ${spec.wide ? 'multi-octet' : 'random'} characters`;
      } else {
        const hostile = pick(hostileTexts(current), spec.text) as ReturnType<typeof hostileTexts>[number];
        text = 'raw' in hostile ? writer.octets(hostile.raw.octets) : hostile.text;
        label = hostile.label;
      }
      edit(body, slot, text);
      return judged(`${pointerOf(slot)} = ${label}`, writer.render(body), slot);
    }
    case 'nest': {
      const slot = pick(valueSlots, spec.slot) as Slot;
      edit(body, slot, writer.json(`${'['.repeat(spec.depth)}${']'.repeat(spec.depth)}`));
      return judged(`${pointerOf(slot)} = arrays nested ${spec.depth} deep`, writer.render(body), slot);
    }
    case 'oversize': {
      body.robustness_padding = 'x'.repeat(Math.max(0, BODY_LIMIT - valid.length) + spec.extra);
      return judged(`body ${spec.extra} octets past 1 MiB (in an extra member)`, writer.render(body));
    }
    case 'count': {
      // At the schema's count limit (valid, so only survived) and one or two past it (refused).
      const slot = pick(valueSlots.filter((s) => s.maxCount !== undefined), spec.slot);
      if (slot === undefined) break;
      const target = valueAt(body, slot) as unknown[] | Json;
      const count = (slot.maxCount as number) + spec.past;
      if (Array.isArray(target)) {
        const first = target[0] as Json;
        const copies = Array.from({ length: count - target.length }, (_, n) => ({ ...first, ...('mutation_id' in first ? { mutation_id: caseUuid(spec, 1_000 + n) } : {}) }));
        target.push(...copies);
      } else {
        const [name, value] = Object.entries(target)[0] ?? ['member', null];
        for (let n = Object.keys(target).length; n < count; n++) setMember(target, `${name}_${n}`, value);
      }
      return judged(`${pointerOf(slot)} with ${count} ${Array.isArray(target) ? 'items' : 'members'} (the schema allows ${slot.maxCount})`, writer.render(body), slot);
    }
    case 'duplicate': {
      const slot = pick(slots.filter((s) => s.target === 'value' && s.closed !== undefined && Object.keys((valueAt(base, s) as Json) ?? {}).length > 0), spec.slot) as Slot;
      const text = withDuplicateMember(valueAt(base, slot) as Json) as string;
      if (slot.path.length === 0) return request('the first member written twice in /', Buffer.from(text), refuse());
      edit(body, slot, writer.json(text));
      return request(`the first member written twice in ${pointerOf(slot)}`, writer.render(body), refuse());
    }
    case 'raw': {
      const raw = pick(rawBodies(valid), spec.body) as ReturnType<typeof rawBodies>[number];
      return request(raw.label, raw.body, refuse());
    }
    case 'header': {
      const variant = pick(HEADERS, spec.variant) as Variant;
      const made = variant.headers?.(valid, token) ?? { headers: standardHeaders(token), body: valid };
      return request(variant.label, made.body, refuse(variant.codes), made.headers);
    }
    case 'semantic': {
      const variant = pick(SEMANTIC[endpoint].filter((v) => v.applies?.(fixture) ?? true), spec.variant) as Variant;
      variant.change?.(body, fixture);
      for (const [name, value] of Object.entries(body)) if (value === undefined) delete body[name];
      return request(variant.label, writer.render(body), refuse(variant.codes));
    }
  }
  // A kind with no slot to work on in this request (none today): the valid request with a header it must refuse.
  return request('Content-Type text/plain', valid, refuse(['invalid_request']), [['Authorization', `Bearer ${token}`], ['Content-Type', 'text/plain']]);
}
