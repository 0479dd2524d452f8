/**
 * A loopback relay placed between the harness proxy and the server under test
 * that renames opaque tokens as a client sees them.
 *
 * The proxy keeps recording what the client sent and received (it now talks
 * to this relay instead of the server); the relay replaces the incremental
 * cursors and row versions the server issues with scripted aliases, maps an
 * alias back to the real token when the client presents it under the same
 * scope (cursor) or the same row (base_version), and keeps every row and scope
 * checksum consistent with the versions the client is shown. A client that
 * treats tokens as opaque cannot tell the difference; one that parses, orders,
 * trims or re-encodes them presents something the relay does not know, and
 * the server refuses it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { canonicalJson, checksumObject, digestRow, readChecksumObject, readTableShape, rowDigest, rowDigestFromParts, rowIdentityFromWire, schemaHashRaw, scopeDigest, type TableShape, toHex } from '../codec/index.ts';
import type { RecordedResponse } from './records.ts';
import { LoopbackRelay, sendAnswer, withoutHeaders } from './relay.ts';
import { parseLoosely as parse } from './validation.ts';

/** One request that crossed the relay, both as the client sent it and as the server got it. */
export interface RelayRecord {
  path: string;
  clientId: string | undefined;
  fromClient: Buffer;
  toServer: Buffer;
  status?: number;
  fromServer?: Buffer;
  toClient?: Buffer;
  /** Cursors the relay mapped back from an alias to the real token, per scope. */
  translatedCursors: { scope: string; alias: string; real: string }[];
  /** Cursors the relay replaced by an alias in the response, per scope. */
  aliasedCursors: { scope: string; real: string; alias: string }[];
}

interface RowEntry {
  identity: Uint8Array;
  body: Uint8Array;
  version: string;
  key: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Name of a row across messages: table ID plus the canonical JSON of its key object. */
export function rowKey(table: string, pk: unknown): string {
  return `${table}\u0000${canonicalJson(pk)}`;
}

/** Aliases handed out in issue order, remembered both ways. */
class AliasBook {
  readonly #plans = new Map<string, string[]>();
  readonly #toAlias = new Map<string, Map<string, string>>();
  readonly #toReal = new Map<string, Map<string, string>>();

  plan(context: string, aliases: readonly string[]): void {
    this.#plans.set(context, [...aliases]);
  }

  /** The alias of a real token in its context: the known one, else the next planned one, else the token itself. */
  alias(context: string, real: string): string {
    const known = this.#toAlias.get(context)?.get(real);
    if (known !== undefined) return known;
    const next = this.#plans.get(context)?.shift();
    if (next === undefined) return real;
    this.remember(context, real, next);
    return next;
  }

  remember(context: string, real: string, alias: string): void {
    if (!this.#toAlias.has(context)) this.#toAlias.set(context, new Map());
    if (!this.#toReal.has(context)) this.#toReal.set(context, new Map());
    this.#toAlias.get(context)?.set(real, alias);
    this.#toReal.get(context)?.set(alias, real);
  }

  real(context: string, presented: string): string | undefined {
    return this.#toReal.get(context)?.get(presented);
  }

  aliasOf(context: string, real: string): string {
    return this.#toAlias.get(context)?.get(real) ?? real;
  }

  /** Every (real, alias) pair handed out in a context. */
  pairs(context: string): [string, string][] {
    return [...(this.#toAlias.get(context) ?? new Map<string, string>()).entries()];
  }
}

/** Headers the relay sets itself on a forwarded request, or that describe only the hop. */
const REQUEST_DROPPED = new Set(['host', 'content-length', 'connection']);
/** Headers of the server's answer that do not describe the bytes the relay sends on. */
const ANSWER_DROPPED = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive']);

export class AliasRelay extends LoopbackRelay {
  readonly records: RelayRecord[] = [];
  readonly #cursors = new AliasBook();
  readonly #versions = new AliasBook();
  /** Client ID → alias given to every cursor of its next pull response. */
  readonly #everyCursor = new Map<string, string>();
  /** Client ID → scope → row key (hex identity) → row as the server holds it. */
  readonly #mirror = new Map<string, Map<string, Map<string, RowEntry>>>();
  /** Client ID → scope → rows staged by a rebuild in progress. */
  readonly #staging = new Map<string, Map<string, Map<string, RowEntry>>>();
  readonly #manifest: () => Promise<unknown>;
  #shapes: { hash: string; tables: Map<string, TableShape> } | undefined;
  /** Problems found while aliasing (a checksum the relay could not keep consistent). */
  readonly notes: string[] = [];

  constructor(target: string, manifest: () => Promise<unknown>) {
    super('the alias relay', target);
    this.#manifest = manifest;
  }

  /** The next cursors issued to `clientId` for `scope` get these aliases, one each, in order. */
  aliasCursors(clientId: string, scope: string, aliases: readonly string[]): void {
    this.#cursors.plan(`${clientId}\u0000${scope}`, aliases);
  }

  /** Every cursor of the next pull response to `clientId` gets the same alias. */
  aliasEveryCursorOnce(clientId: string, alias: string): void {
    this.#everyCursor.set(clientId, alias);
  }

  /** The next versions of one row sent to `clientId` get these aliases, one per distinct version, in order. */
  aliasVersions(clientId: string, table: string, pk: unknown, aliases: readonly string[]): void {
    this.#versions.plan(`${clientId}\u0000${rowKey(table, pk)}`, aliases);
  }

  /** The real token behind what a client presented for a scope, if it was an alias. */
  realCursor(clientId: string, scope: string, presented: string): string | undefined {
    return this.#cursors.real(`${clientId}\u0000${scope}`, presented);
  }

  /** Every (real, alias) cursor pair handed to a client for a scope. */
  cursorPairs(clientId: string, scope: string): [string, string][] {
    return this.#cursors.pairs(`${clientId}\u0000${scope}`);
  }

  /**
   * Feeds what a client received before the relay was in place, so the
   * mirror of its scopes (needed to recompute scope checksums) is complete.
   */
  async replayHistory(history: readonly { path: string; request: Buffer; status: number; response: Buffer }[]): Promise<void> {
    for (const h of history) {
      if (h.status !== 200) continue;
      const request = parse(h.request);
      const response = parse(h.response);
      if (isObject(request) && isObject(response)) await this.#observe(h.path, request, response);
    }
  }

  protected override async handle(req: IncomingMessage, fromClient: Buffer, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const request = parse(fromClient);
    const clientId = isObject(request) && typeof request.client_id === 'string' ? request.client_id : undefined;
    const record: RelayRecord = { path, clientId, fromClient, toServer: fromClient, translatedCursors: [], aliasedCursors: [] };
    this.records.push(record);
    if (isObject(request) && clientId !== undefined && this.#translateRequest(path, clientId, request, record)) record.toServer = Buffer.from(JSON.stringify(request), 'utf8');
    let upstream: RecordedResponse;
    try {
      upstream = await this.forward(req.method ?? 'GET', req.url ?? '/', withoutHeaders(req.headers, REQUEST_DROPPED), record.toServer);
    } catch {
      res.socket?.destroy();
      return;
    }
    record.status = upstream.status;
    record.fromServer = upstream.body;
    let body = upstream.body;
    const response = parse(upstream.body);
    if (upstream.status === 200 && isObject(request) && isObject(response) && clientId !== undefined) {
      try {
        await this.#observe(path, request, response);
        if (await this.#aliasResponse(path, clientId, request, response, record)) body = Buffer.from(JSON.stringify(response), 'utf8');
      } catch (error) {
        this.notes.push(`the relay could not alias a ${path} response: ${(error as Error).message}`);
      }
    }
    record.toClient = body;
    sendAnswer(res, upstream.status, withoutHeaders(upstream.headers, ANSWER_DROPPED), body);
  }

  /** Maps presented aliases back to real tokens; true when the body changed. */
  #translateRequest(path: string, clientId: string, request: Json, record: RelayRecord): boolean {
    let changed = false;
    const cursorMap = path === '/sync/pull' ? request.scopes : path === '/sync/connect' ? request.known_scopes : undefined;
    if (isObject(cursorMap)) {
      for (const [scope, ref] of Object.entries(cursorMap)) {
        if (!isObject(ref) || typeof ref.cursor !== 'string') continue;
        const real = this.realCursor(clientId, scope, ref.cursor);
        if (real === undefined) continue;
        record.translatedCursors.push({ scope, alias: ref.cursor, real });
        ref.cursor = real;
        changed = true;
      }
    }
    if (path === '/sync/push' && Array.isArray(request.mutations)) {
      for (const m of request.mutations) {
        if (!isObject(m) || typeof m.base_version !== 'string' || typeof m.table !== 'string') continue;
        const real = this.#versions.real(`${clientId}\u0000${rowKey(m.table, m.pk)}`, m.base_version);
        if (real === undefined) continue;
        m.base_version = real;
        changed = true;
      }
    }
    return changed;
  }

  /** Replaces issued cursors and row versions by their aliases; true when the body changed. */
  async #aliasResponse(path: string, clientId: string, request: Json, response: Json, record: RelayRecord): Promise<boolean> {
    let changed = false;
    const cursor = (scope: string, real: string, once?: string): string => {
      const context = `${clientId}\u0000${scope}`;
      let alias: string;
      if (once !== undefined) {
        this.#cursors.remember(context, real, once);
        alias = once;
      } else {
        alias = this.#cursors.alias(context, real);
      }
      if (alias !== real) {
        record.aliasedCursors.push({ scope, real, alias });
        changed = true;
      }
      return alias;
    };
    if (path === '/sync/pull' && isObject(response.scope_cursors)) {
      const once = this.#everyCursor.get(clientId);
      if (once !== undefined && Object.keys(response.scope_cursors).length > 0) this.#everyCursor.delete(clientId);
      for (const [scope, real] of Object.entries(response.scope_cursors)) if (typeof real === 'string') response.scope_cursors[scope] = cursor(scope, real, once);
    }
    if (path === '/sync/connect') {
      if (isObject(response.scope_cursor_updates)) {
        for (const [scope, real] of Object.entries(response.scope_cursor_updates)) if (typeof real === 'string') response.scope_cursor_updates[scope] = cursor(scope, real);
      }
      const scopes = isObject(response.scopes) ? response.scopes.add : undefined;
      if (Array.isArray(scopes)) for (const a of scopes) if (isObject(a) && typeof a.id === 'string' && typeof a.cursor === 'string') a.cursor = cursor(a.id, a.cursor);
    }
    if (path === '/sync/rebuild' && typeof response.final_scope_cursor === 'string' && typeof response.scope === 'string') {
      response.final_scope_cursor = cursor(response.scope, response.final_scope_cursor);
    }

    // Row versions, with the row checksums that cover them.
    const hash = schemaHashOf(request);
    const rows: Json[] = [];
    if (path === '/sync/pull' && Array.isArray(response.changes)) rows.push(...response.changes.filter(isObject));
    if (path === '/sync/rebuild' && Array.isArray(response.records)) rows.push(...response.records.filter(isObject));
    if (path === '/sync/push') for (const list of [response.accepted, response.rejected]) if (Array.isArray(list)) rows.push(...list.filter(isObject));
    for (const row of rows) {
      if (typeof row.server_version !== 'string' || typeof row.table !== 'string') continue;
      const real = row.server_version;
      const alias = this.#versions.alias(`${clientId}\u0000${rowKey(row.table, row.pk)}`, real);
      if (alias === real) continue;
      row.server_version = alias;
      changed = true;
      const content = row.row ?? row.server_row;
      if (content === undefined || row.row_checksum === undefined) continue;
      const rowHash = path === '/sync/push' && isObject(row.outcome_schema) && typeof row.outcome_schema.hash === 'string' ? row.outcome_schema.hash : hash;
      const shape = rowHash === undefined ? undefined : await this.#shape(rowHash, row.table);
      if (shape === undefined || rowHash === undefined) {
        this.notes.push(`no table shape for ${row.table}: its row checksum was left as issued`);
        continue;
      }
      row.row_checksum = checksumObject(rowDigest({ schemaHash: rowHash, table: shape, row: content, pk: keyValue(shape, row.pk), serverVersion: alias }));
    }

    // Scope checksums: recomputed over the mirrored scope with the aliases the client holds.
    if (hash !== undefined) {
      if (path === '/sync/pull' && isObject(response.checksums)) {
        for (const [scope, claimed] of Object.entries(response.checksums)) {
          const rows = this.#mirror.get(clientId)?.get(scope);
          const replaced = rows === undefined ? undefined : this.#scopeChecksum(clientId, hash, scope, rows, claimed);
          if (replaced !== undefined) {
            response.checksums[scope] = replaced;
            changed = true;
          }
        }
      }
      if (path === '/sync/rebuild' && typeof response.scope === 'string' && response.checksum !== undefined) {
        const rows = this.#mirror.get(clientId)?.get(response.scope);
        const replaced = rows === undefined ? undefined : this.#scopeChecksum(clientId, hash, response.scope, rows, response.checksum);
        if (replaced !== undefined) {
          response.checksum = replaced;
          changed = true;
        }
      }
    }
    return changed;
  }

  /** A checksum over the client's view of the scope, or undefined when nothing needs to change or the mirror disagrees with the server. */
  #scopeChecksum(clientId: string, hash: string, scope: string, rows: Map<string, RowEntry>, claimed: unknown): unknown {
    const raw = schemaHashRaw(hash);
    const digestWith = (version: (e: RowEntry) => string) =>
      toHex(scopeDigest(raw, scope, [...rows.values()].map((e) => ({ identity: e.identity, digest: rowDigestFromParts(raw, e.identity, e.body, version(e)) }))));
    const real = digestWith((e) => e.version);
    const aliased = digestWith((e) => this.#versions.aliasOf(`${clientId}\u0000${e.key}`, e.version));
    if (aliased === real) return undefined;
    if (toHex(readChecksumObject(claimed)) !== real) {
      this.notes.push(`the relay's copy of scope ${scope} does not match the server's checksum: left as issued`);
      return undefined;
    }
    return checksumObject(Buffer.from(aliased, 'hex'));
  }

  /** Follows the rows of each scope as the server reports them to the client (real versions). */
  async #observe(path: string, request: Json, response: Json): Promise<void> {
    const clientId = typeof request.client_id === 'string' ? request.client_id : undefined;
    const hash = schemaHashOf(request);
    if (clientId === undefined || hash === undefined) return;
    if (!this.#mirror.has(clientId)) this.#mirror.set(clientId, new Map());
    if (!this.#staging.has(clientId)) this.#staging.set(clientId, new Map());
    const mirror = this.#mirror.get(clientId) as Map<string, Map<string, RowEntry>>;
    const staging = this.#staging.get(clientId) as Map<string, Map<string, RowEntry>>;
    const entry = async (table: unknown, pk: unknown, row: unknown, version: unknown): Promise<RowEntry | undefined> => {
      if (typeof table !== 'string' || typeof version !== 'string') return undefined;
      const shape = await this.#shape(hash, table);
      if (shape === undefined) return undefined;
      const { identity, body } = digestRow({ schemaHash: hash, table: shape, row, pk: keyValue(shape, pk), serverVersion: version });
      return { identity, body, version, key: rowKey(table, pk) };
    };
    if (path === '/sync/rebuild' && typeof response.scope === 'string' && Array.isArray(response.records)) {
      if (request.cursor === null || !staging.has(response.scope)) staging.set(response.scope, new Map());
      const stage = staging.get(response.scope) as Map<string, RowEntry>;
      for (const r of response.records.filter(isObject)) {
        const e = await entry(r.table, r.pk, r.row, r.server_version);
        if (e !== undefined) stage.set(toHex(e.identity), e);
      }
      if (response.has_more === false) mirror.set(response.scope, stage);
    }
    if (path === '/sync/pull' && Array.isArray(response.changes)) {
      const updates = isObject(response.scope_updates) ? response.scope_updates : {};
      for (const s of Array.isArray(updates.remove) ? updates.remove : []) if (typeof s === 'string') mirror.delete(s);
      for (const a of Array.isArray(updates.add) ? updates.add : []) if (isObject(a) && typeof a.id === 'string') mirror.set(a.id, new Map());
      for (const c of response.changes.filter(isObject)) {
        if (typeof c.scope !== 'string') continue;
        if (!mirror.has(c.scope)) mirror.set(c.scope, new Map());
        const rows = mirror.get(c.scope) as Map<string, RowEntry>;
        if (c.op === 'delete') {
          const shape = typeof c.table === 'string' ? await this.#shape(hash, c.table) : undefined;
          if (shape !== undefined) {
            rows.delete(toHex(rowIdentityFromWire(shape.tableId, shape.pkFieldId, shape.pkType, keyValue(shape, c.pk))));
          }
        } else {
          const e = await entry(c.table, c.pk, c.row, c.server_version);
          if (e !== undefined) rows.set(toHex(e.identity), e);
        }
      }
    }
  }

  async #shape(hash: string, tableId: string): Promise<TableShape | undefined> {
    if (this.#shapes?.hash !== hash) {
      const manifest = await this.#manifest();
      if (!isObject(manifest) || manifest.schema_hash !== hash || !Array.isArray(manifest.tables)) return undefined;
      const tables = new Map<string, TableShape>();
      for (const t of manifest.tables) {
        const shape = readTableShape(t);
        tables.set(shape.tableId, shape);
      }
      this.#shapes = { hash, tables };
    }
    return this.#shapes.tables.get(tableId);
  }
}

/** The key value inside a wire key object `{<pk field id>: value}`. */
function keyValue(shape: TableShape, pk: unknown): unknown {
  return isObject(pk) ? pk[shape.pkFieldId] : undefined;
}

function schemaHashOf(request: Json): string | undefined {
  const schema = request.schema;
  return isObject(schema) && typeof schema.hash === 'string' ? schema.hash : undefined;
}
