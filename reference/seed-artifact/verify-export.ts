/**
 * Checks 1 to 7 of seed verification, over what the export delivered and
 * before anything is written: the schema manifest and the export manifest
 * hash, the exact portable scope set, the binding and sequence of every
 * page, every record (table, fields, key, version, row digest), strictly
 * increasing row identities, each scope's cardinality and streaming digest,
 * and each receipt's members. Receipt MACs are the server's business (the
 * builder holds no key); their members must still match the manifest.
 */
import { canonicalJson, compareBytes, digestRow, fromHex, readChecksumObject, SortedScopeDigest, toHex } from '../../harness/codec/index.ts';
import type { SchemaManifest } from '../../harness/wire/generated.ts';
import { ClientError } from '../client/errors.ts';
import { type LocalSchema, type LocalTable, localSchema, verifyManifest } from '../client/local/manifest.ts';
import { recordIdOf } from '../client/local/values.ts';
import { exportManifestHash, type ScopeEntry, scopeBinding } from '../server/seed/manifest.ts';
import { SeedArtifactError } from './errors.ts';
import type { ExportRun } from './export-run.ts';

export interface VerifiedRecord {
  table: LocalTable;
  recordId: string;
  row: Record<string, unknown>;
  serverVersion: string;
  identity: Uint8Array;
  digest: Uint8Array;
}

export interface VerifiedScope {
  entry: ScopeEntry;
  records: VerifiedRecord[];
}

export interface VerifiedExport {
  manifest: SchemaManifest;
  schema: LocalSchema;
  exportId: string;
  scopes: VerifiedScope[];
}

/** The payload of a signed `prefix.` token, decoded without its MAC; undefined when it does not decode. */
export function decodePayload(prefix: string, token: unknown): Record<string, unknown> | undefined {
  if (typeof token !== 'string') return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== prefix) return undefined;
  try {
    const value = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function sameMembers(payload: Record<string, unknown>, expected: Record<string, unknown>): string | undefined {
  for (const [k, v] of Object.entries(expected)) if (canonicalJson(payload[k] ?? null) !== canonicalJson(v)) return k;
  return undefined;
}

function checkSchema(run: ExportRun): { manifest: SchemaManifest; schema: LocalSchema } {
  let manifest: SchemaManifest;
  try {
    manifest = verifyManifest(run.schemaManifest);
  } catch (e) {
    throw new SeedArtifactError('manifest hash', e instanceof ClientError ? e.message : String(e));
  }
  const m = run.manifest;
  if (manifest.schema_version !== m.schema_version || manifest.schema_hash !== m.schema_hash) throw new SeedArtifactError('manifest hash', 'the schema manifest is not the one the export names');
  const { export_manifest_hash: stated, ...rest } = m;
  if (exportManifestHash(rest) !== stated) throw new SeedArtifactError('manifest hash', 'the export manifest does not hash to its export_manifest_hash');
  return { manifest, schema: localSchema(manifest) };
}

function checkScopeSet(run: ExportRun): void {
  const ids = run.manifest.portable_scopes.map((s) => s.id);
  if (new Set(ids).size !== ids.length) throw new SeedArtifactError('portable scope set', 'a scope appears twice in the manifest');
  if (canonicalJson([...ids].sort()) !== canonicalJson([...run.declaredScopes].sort())) {
    throw new SeedArtifactError('portable scope set', `the manifest lists ${JSON.stringify(ids)}, the server declares ${JSON.stringify(run.declaredScopes)}`);
  }
  if (canonicalJson(Object.keys(run.pages).sort()) !== canonicalJson([...ids].sort())) throw new SeedArtifactError('portable scope set', 'pages were delivered for another set of scopes');
}

/** Check 3: each page fetched by the token the previous one returned, at the next ordinal, bound to this export and scope. */
function checkPages(run: ExportRun, entry: ScopeEntry): void {
  const m = run.manifest;
  const list = run.pages[entry.id] ?? [];
  if (list.length === 0) throw new SeedArtifactError('page sequence', `scope ${entry.id} has no page`);
  let expectedToken: string | null = entry.page_token;
  list.forEach((p, k) => {
    const ordinal = k * m.page_limit;
    if (p.token !== expectedToken || p.ordinal !== ordinal) throw new SeedArtifactError('page sequence', `page ${k} of ${entry.id} is not the one that follows page ${k - 1}`);
    const payload = decodePayload('sp1', p.token);
    const bad =
      payload === undefined
        ? 'token'
        : sameMembers(payload, {
            kind: 'portable_seed_page',
            version: 1,
            ...scopeBinding(m, entry),
            next_row_ordinal: String(ordinal),
            page_limit: String(m.page_limit),
          });
    if (bad !== undefined) throw new SeedArtifactError('page sequence', `page ${k} of ${entry.id} is not bound to this export (${bad})`);
    const last = k === list.length - 1;
    if (p.page.scope !== entry.id) throw new SeedArtifactError('page sequence', `page ${k} of ${entry.id} names scope ${p.page.scope}`);
    if (p.page.has_more === last || (p.page.page_token === null) !== last) throw new SeedArtifactError('page sequence', `page ${k} of ${entry.id} says has_more ${p.page.has_more} out of sequence`);
    if (!last && p.page.records.length !== m.page_limit) throw new SeedArtifactError('page sequence', `page ${k} of ${entry.id} is short, leaving an ordinal gap`);
    expectedToken = p.page.page_token;
  });
}

/** Checks 4 to 6 for one scope: every record, their order, and the count and digest the manifest states. */
function checkRecords(run: ExportRun, schema: LocalSchema, entry: ScopeEntry): VerifiedRecord[] {
  const out: VerifiedRecord[] = [];
  const digest = new SortedScopeDigest(fromHex(schema.hash), entry.id, entry.cardinality);
  let previous: Uint8Array | undefined;
  const records = (run.pages[entry.id] ?? []).flatMap((p) => p.page.records);
  for (const [k, r] of records.entries()) {
    const where = `record ${k} of ${entry.id}`;
    const table = schema.byId.get(r.table);
    if (table === undefined) throw new SeedArtifactError('row digest', `${where} names table ${r.table}, which the schema does not have`);
    if (typeof r.server_version !== 'string' || r.server_version === '') throw new SeedArtifactError('row version', `${where} has no server_version to serve as a CAS base`);
    const pkMembers = Object.keys(r.pk ?? {});
    if (pkMembers.length !== 1 || pkMembers[0] !== table.pk.fieldId) throw new SeedArtifactError('row digest', `${where} has a key that is not ${table.pk.fieldId}`);
    let computed: { identity: Uint8Array; digest: Uint8Array };
    let claimed: Uint8Array;
    try {
      computed = digestRow({ schemaHash: schema.hash, table: table.shape, row: r.row, pk: r.pk[table.pk.fieldId], serverVersion: r.server_version });
      claimed = readChecksumObject(r.row_checksum);
    } catch (e) {
      throw new SeedArtifactError('row digest', `${where}: ${(e as Error).message}`);
    }
    if (compareBytes(computed.digest, claimed) !== 0) throw new SeedArtifactError('row digest', `${where} does not hash to its row_checksum`);
    if (previous !== undefined && compareBytes(previous, computed.identity) >= 0) throw new SeedArtifactError('row identity order', `${where} does not follow the previous row in identity order`);
    previous = computed.identity;
    try {
      digest.add(computed.identity, computed.digest);
    } catch (e) {
      throw new SeedArtifactError('cardinality and digest', `${where}: ${(e as Error).message}`);
    }
    out.push({ table, recordId: recordIdOf(table.pk.type, r.pk[table.pk.fieldId]), row: r.row, serverVersion: r.server_version, identity: computed.identity, digest: computed.digest });
  }
  let total: string;
  try {
    total = toHex(digest.finish());
  } catch (e) {
    throw new SeedArtifactError('cardinality and digest', `scope ${entry.id}: ${(e as Error).message}`);
  }
  if (total !== entry.checksum.digest) throw new SeedArtifactError('cardinality and digest', `scope ${entry.id} digests to ${total}, the manifest states ${entry.checksum.digest}`);
  return out;
}

/** Check 7: the receipt describes exactly this export's scope. */
function checkReceipt(run: ExportRun, entry: ScopeEntry): void {
  const m = run.manifest;
  const payload = decodePayload('sc1', entry.continuation);
  const bad =
    payload === undefined
      ? 'form'
      : sameMembers(payload, {
          kind: 'portable_seed_continuation',
          version: 1,
          ...scopeBinding(m, entry),
          cardinality: String(entry.cardinality),
          checksum: entry.checksum,
        });
  if (bad !== undefined) throw new SeedArtifactError('receipt', `the receipt of ${entry.id} does not match the manifest (${bad})`);
}

export function verifyExport(run: ExportRun): VerifiedExport {
  const { manifest, schema } = checkSchema(run);
  checkScopeSet(run);
  const scopes: VerifiedScope[] = [];
  for (const entry of run.manifest.portable_scopes) {
    checkPages(run, entry);
    const records = checkRecords(run, schema, entry);
    checkReceipt(run, entry);
    scopes.push({ entry, records });
  }
  return { manifest, schema, exportId: run.manifest.export_id, scopes };
}
