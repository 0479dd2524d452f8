/**
 * Scope digests of the materialized scope contents at the current boundary, under one schema.
 *
 * Four things keep a terminal pull's checksums cheap without ever skipping one:
 * - the capture worker stores each row's digest beside the row (storedDigest), tagged with the
 *   schema hash and table shape it was computed under; a reader takes it only under the same tag;
 * - a scope's digest entries over stored digests are aggregated in the database, in identity order;
 * - every statement that changes a scope's rows gives the scope a new content version
 *   (027-capture-performance.sql), and a computed checksum is cached by scope and version;
 *   a version is computed once even when several readers reach it together, and once capture
 *   catches up, the new versions of scopes asked for lately are computed before anyone asks;
 * - that statement also records which identities it wrote (089-scope-content-links.sql), so the
 *   entries of a scope's next version are built from the last ones by re-reading only those.
 * Anything else (a row without a stored digest, a changed schema) is computed here row by row,
 * exactly as before.
 */
import { createHash } from 'node:crypto';
import type { ClientBase, Pool } from 'pg';
import { type ChecksumObject, canonicalJson, checksumObject, fromHex, rowDigest, SCOPE_DOMAIN, ScopeDigestBuilder, text, toHex } from '../../../harness/codec/index.ts';
import { integrityFailure } from './errors.ts';
import { fault } from './faults.ts';
import { named } from './named-statements.ts';
import { ScopeEntries } from './scope-entries.ts';
import { manifestTable, type TableDef } from './tables.ts';

export interface ScopeRow {
  tableId: string;
  pkText: string;
  pkBytes: Buffer;
  row: Record<string, unknown>;
  serverVersion: string;
}

/** The scope's rows in unsigned canonical (table_id, typed key) order. */
export async function scopeRows(db: ClientBase, scope: string): Promise<ScopeRow[]> {
  const { rows } = await db.query<{ table_id: string; pk_text: string; pk_bytes: Buffer; row_wire: Record<string, unknown>; server_version: string }>(
    'SELECT table_id, pk_text, pk_bytes, row_wire, server_version FROM synchro.scope_rows WHERE scope_id = $1 ORDER BY table_id COLLATE "C", pk_bytes',
    [scope],
  );
  return rows.map((r) => ({ tableId: r.table_id, pkText: r.pk_text, pkBytes: r.pk_bytes, row: r.row_wire, serverVersion: r.server_version }));
}

/** A scope row's digest; a row of no known table, or one that no longer fits its shape, is an integrity failure. */
function scopeRowDigest(tables: Map<string, TableDef>, schemaHash: string, r: ScopeRow): Uint8Array {
  const table = tables.get(r.tableId);
  if (table === undefined) throw integrityFailure();
  try {
    return rowDigest({ schemaHash, table: table.shape, row: r.row, serverVersion: r.serverVersion });
  } catch {
    throw integrityFailure();
  }
}

export function digestOf(rows: ScopeRow[], tables: Map<string, TableDef>, schemaHash: string, scope: string): Uint8Array {
  if (fault('xor-scope-digest')) return rows.reduce((acc, r) => acc.map((b, k) => b ^ (scopeRowDigest(tables, schemaHash, r)[k] ?? 0)), new Uint8Array(32)); // fault: server:xor-scope-digest
  const b = new ScopeDigestBuilder(fromHex(schemaHash), scope);
  for (const r of rows) b.add(r.pkBytes, scopeRowDigest(tables, schemaHash, r));
  return b.finish();
}

export async function scopeChecksum(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string): Promise<ChecksumObject> {
  return (await scopeChecksums(db, tables, schemaHash, [scope]))[scope] as ChecksumObject;
}

const shapeTags = new WeakMap<TableDef, string>();

/**
 * What a row digest depends on besides the row and its version: the schema hash and the
 * table's shape (its manifest entry; the display name aside, which two loaders may differ on).
 */
export function digestTag(table: TableDef, schemaHash: string): string {
  let shape = shapeTags.get(table);
  if (shape === undefined) {
    const { name: _name, ...entry } = manifestTable(table);
    shape = createHash('sha256').update(canonicalJson(entry)).digest('hex').slice(0, 32);
    shapeTags.set(table, shape);
  }
  return `${schemaHash}:${shape}`;
}

export interface StoredDigest {
  /** Hex of the 32-octet row digest. */
  digest: string;
  tag: string;
}

/** A row digest to store beside the row, or null when the row does not fit the shape (readers then fail as before). */
export function storedDigest(table: TableDef, schemaHash: string, row: Record<string, unknown>, serverVersion: string): StoredDigest | null {
  try {
    return { digest: toHex(rowDigest({ schemaHash, table: table.shape, row, serverVersion })), tag: digestTag(table, schemaHash) };
  } catch {
    return null;
  }
}

/**
 * What this server knows of one catalog's checksums: those computed, by schema hash, scope and
 * content version; those being computed now (so a second reader of the same version waits for the
 * first instead of computing it again); and when each scope's checksum was last asked for.
 */
interface ChecksumCache {
  done: Map<string, ChecksumObject>;
  computing: Map<string, Promise<ChecksumObject>>;
  askedAt: Map<string, number>;
  /** The digest entries of the last version computed of each scope, to build the next one from. */
  entries: Map<string, KnownEntries>;
  /** Octets of all entries kept. */
  entryOctets: number;
}

interface KnownEntries {
  schemaHash: string;
  version: string;
  entries: ScopeEntries;
}
const cached = new WeakMap<Map<string, TableDef>, ChecksumCache>();
const CACHE_LIMIT = 10_000;

function cacheOf(tables: Map<string, TableDef>): ChecksumCache {
  let c = cached.get(tables);
  if (c === undefined) {
    c = { done: new Map(), computing: new Map(), askedAt: new Map(), entries: new Map(), entryOctets: 0 };
    cached.set(tables, c);
  }
  return c;
}

/** What the scope digest hashes before the entry count: its domain, the schema hash and the scope ID. */
function scopeHeader(schemaHash: string, scope: string): Buffer {
  return Buffer.concat([SCOPE_DOMAIN, fromHex(schemaHash), text(scope)]);
}

/**
 * Each table's expected digest tag as a CASE over parameters appended to `values`: a row's lookup is
 * a text comparison, where a jsonb object of tags cost a key search per row (about a tenth of the
 * statement over 25,000 rows). A table the catalog does not know expects no tag (NULL).
 */
function expectedTagSql(tables: Map<string, TableDef>, schemaHash: string, values: unknown[]): string {
  const arms = [...tables.values()].map((t) => `WHEN $${values.push(t.tableId)} THEN $${values.push(digestTag(t, schemaHash))}`);
  return arms.length === 0 ? 'NULL::text' : `CASE table_id ${arms.join(' ')} END`;
}

/**
 * The scope's digest entries from stored row digests, aggregated in the database in identity order
 * (bytea order is unsigned bytewise order, and an index gives it without a sort), or null when any
 * row lacks a 32-octet digest under the tags this catalog expects.
 */
async function storedScopeEntries(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string): Promise<ScopeEntries | null> {
  const values: unknown[] = [scope];
  const expected = expectedTagSql(tables, schemaHash, values);
  // Not a named statement: it runs once per scope the server has no entries for, and a generic plan
  // chosen for one scope's size would serve every other scope's.
  const { rows } = await db.query<{ complete: boolean; body: Buffer }>(
    `SELECT bool_and(row_digest IS NOT NULL AND octet_length(row_digest) = 32 AND digest_tag = ${expected}) IS NOT FALSE AS complete,
            coalesce(string_agg(int8send(octet_length(pk_bytes)) || pk_bytes || row_digest, ''::bytea ORDER BY pk_bytes), ''::bytea) AS body
       FROM synchro.scope_rows WHERE scope_id = $1`,
    values,
  );
  const r = rows[0];
  if (r === undefined || !r.complete) return null;
  return ScopeEntries.parse(r.body);
}

/** Identities a link walk may name before re-reading them costs more than the scope read whole. */
const LINKED_IDENTITIES_MAX = 5_000;
/** Links read per walk; a walk longer than this reads the scope whole. */
const LINKS_MAX = 1_000;

/**
 * The entries of `version` built from those of an earlier version the server holds (decision 428):
 * the links recorded since `known` are walked back from `version`, and the rows of the identities
 * they name are read again. Null when the walk does not reach `known` (a truncation, a pruned or
 * missing link), when it names too many identities, or when a named row lacks a digest under the
 * expected tag: the caller then reads the scope whole.
 */
async function linkedScopeEntries(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string, known: KnownEntries, version: string): Promise<ScopeEntries | null> {
  const { rows: links } = await db.query<{ version: string; prior_version: string; identities: Buffer[] }>(
    named('SELECT version::text, prior_version::text, identities FROM synchro.scope_content_links WHERE scope_id = $1 AND version > $2::bigint ORDER BY version LIMIT $3', [
      scope,
      known.version,
      LINKS_MAX,
    ]),
  );
  const byVersion = new Map(links.map((l) => [l.version, l]));
  const identities = new Map<string, Buffer>();
  let at = version;
  for (let steps = 0; at !== known.version; steps++) {
    const link = byVersion.get(at);
    if (link === undefined || steps >= links.length) return null;
    for (const identity of link.identities) identities.set(identity.toString('hex'), identity);
    if (identities.size > LINKED_IDENTITIES_MAX) return null;
    at = link.prior_version;
  }
  const { rows } = await db.query<{ table_id: string; pk_bytes: Buffer; row_digest: Buffer | null; digest_tag: string | null }>(
    named('SELECT table_id, pk_bytes, row_digest, digest_tag FROM synchro.scope_rows WHERE scope_id = $1 AND pk_bytes = ANY ($2::bytea[])', [scope, [...identities.values()]]),
  );
  // A named identity without a row now left the scope.
  const digests = new Map<string, Buffer>();
  for (const r of rows) {
    const table = tables.get(r.table_id);
    const key = r.pk_bytes.toString('hex');
    if (table === undefined || r.row_digest?.length !== 32 || r.digest_tag !== digestTag(table, schemaHash) || digests.has(key)) return null;
    digests.set(key, r.row_digest);
  }
  return known.entries.withChanges([...identities].map(([key, identity]) => ({ identity, digest: digests.get(key) ?? null })));
}

/** Checksums of several scopes at the snapshot `db` reads, each exact, each computed at most once per content version. */
export async function scopeChecksums(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scopes: string[]): Promise<Record<string, ChecksumObject>> {
  const { askedAt } = cacheOf(tables);
  const now = Date.now();
  for (const scope of scopes) {
    // Deleted first so the map stays in the order of asking, oldest first.
    askedAt.delete(scope);
    askedAt.set(scope, now);
  }
  if (askedAt.size > CACHE_LIMIT) askedAt.delete(askedAt.keys().next().value as string);
  return await checksumsAtSnapshot(db, tables, schemaHash, scopes);
}

async function checksumsAtSnapshot(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scopes: string[]): Promise<Record<string, ChecksumObject>> {
  const out: Record<string, ChecksumObject> = {};
  if (scopes.length === 0) return out;
  const { rows } = await db.query<{ scope_id: string; version: string }>(
    named('SELECT scope_id, version::text FROM synchro.scope_content_versions WHERE scope_id = ANY ($1::text[])', [scopes]),
  );
  const versions = new Map(rows.map((r) => [r.scope_id, r.version]));
  const cache = cacheOf(tables);
  for (const scope of scopes) {
    // A scope that never had a row has no version; its (empty) contents are version 0.
    const key = `${schemaHash}\u0000${scope}\u0000${versions.get(scope) ?? '0'}`;
    let checksum = cache.done.get(key);
    if (checksum === undefined) {
      // Every snapshot that reads this version reads the same contents, so another reader's result
      // is this one's; should that reader fail (its session ended, say), this one computes its own.
      const other = cache.computing.get(key);
      checksum = other === undefined ? undefined : await other.catch(() => undefined);
    }
    if (checksum === undefined) {
      const mine = computeChecksum(db, tables, schemaHash, scope, versions.get(scope) ?? '0');
      cache.computing.set(key, mine);
      try {
        checksum = await mine;
      } finally {
        if (cache.computing.get(key) === mine) cache.computing.delete(key);
      }
      if (cache.done.size >= CACHE_LIMIT) cache.done.delete(cache.done.keys().next().value as string);
      cache.done.set(key, checksum);
    }
    out[scope] = checksum;
  }
  return out;
}

async function computeChecksum(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string, version: string): Promise<ChecksumObject> {
  // The fault switch must keep computing its broken digest, so it never takes the stored paths.
  const entries = fault('xor-scope-digest') ? null : await storedEntriesAt(db, tables, schemaHash, scope, version);
  if (entries === null) return checksumObject(digestOf(await scopeRows(db, scope), tables, schemaHash, scope));
  return checksumObject(new Uint8Array(entries.digest(scopeHeader(schemaHash, scope))));
}

/**
 * The scope's digest entries at `version` from stored row digests: built from the entries kept of an
 * earlier version when its links allow, aggregated whole otherwise, and kept for the next version;
 * null when the stored digests cannot give them (the caller computes row by row).
 */
async function storedEntriesAt(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string, version: string): Promise<ScopeEntries | null> {
  const cache = cacheOf(tables);
  const known = cache.entries.get(scope);
  let entries: ScopeEntries | null = null;
  if (known !== undefined && known.schemaHash === schemaHash) {
    entries = known.version === version ? known.entries : await linkedScopeEntries(db, tables, schemaHash, scope, known, version);
  }
  entries ??= await storedScopeEntries(db, tables, schemaHash, scope);
  if (entries !== null) keepEntries(cache, scope, { schemaHash, version, entries });
  return entries;
}

/** Octets of entries kept per catalog; past it the scopes used longest ago are dropped. */
const ENTRY_OCTETS_LIMIT = 64 * 1024 * 1024;

function keepEntries(cache: ChecksumCache, scope: string, kept: KnownEntries): void {
  const before = cache.entries.get(scope);
  if (before !== undefined) cache.entryOctets -= before.entries.octets;
  // Deleted first so the map stays in the order of use, oldest first.
  cache.entries.delete(scope);
  cache.entries.set(scope, kept);
  cache.entryOctets += kept.entries.octets;
  for (const [oldest, k] of cache.entries) {
    if (cache.entryOctets <= ENTRY_OCTETS_LIMIT || oldest === scope) break;
    cache.entries.delete(oldest);
    cache.entryOctets -= k.entries.octets;
  }
}

/** How long after a scope's checksum was last asked for a new version of it is still computed ahead of the asking. */
const PRECOMPUTE_WINDOW_MS = 60_000;

/** The scopes whose checksum was asked for within the last minute, oldest first; older askings are forgotten here. */
function recentlyAsked(tables: Map<string, TableDef>): string[] {
  const cache = cacheOf(tables);
  const since = Date.now() - PRECOMPUTE_WINDOW_MS;
  for (const [scope, at] of cache.askedAt) if (at < since) cache.askedAt.delete(scope);
  return [...cache.askedAt.keys()];
}

/**
 * What the server calls when capture has caught up after materializing something: one
 * precomputation at a time on a pooled connection in a snapshot of its own, and a call during
 * one runs another after it. Failures are dropped: the pull that asks computes for itself.
 */
export function checksumPrecomputer(pool: Pool, catalog: () => { tables: Map<string, TableDef>; current: { hash: string } } | undefined): () => void {
  let running = false;
  let again = false;
  const once = async () => {
    const c = catalog();
    if (c === undefined) return;
    // Scopes nobody asked for lately are left to the pull that asks: with none, no session is taken.
    const scopes = recentlyAsked(c.tables);
    if (scopes.length === 0) return;
    // A snapshot as a pull's, without the per-client lock: nothing here is a client's, and runs never overlap.
    const db = await pool.connect();
    try {
      await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL ROLE synchro_owner');
      // At this snapshot, each scope's checksum of its content version, unless computed already: the
      // same object a pull would compute and cache, so the terminal pull after a materialization finds
      // it computed or under way instead of starting it.
      await checksumsAtSnapshot(db, c.tables, c.current.hash, scopes);
    } finally {
      await db.query('ROLLBACK').catch(() => undefined);
      db.release();
    }
  };
  return () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    void (async () => {
      do {
        again = false;
        await once().catch(() => undefined);
      } while (again);
      running = false;
    })();
  };
}
