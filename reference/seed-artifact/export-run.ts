/**
 * Reads everything an artifact is built from in one export transaction: the
 * seed manifest, every page of every portable scope (remembering which token
 * fetched each page and at which ordinal), the portable scope set the server
 * declares and the published schema manifest the export names. The builder
 * checks these; nothing here is trusted yet.
 */
import type { ClientBase } from 'pg';
import { EXPORT_TRANSACTION } from '../server/seed/export-session.ts';
import { MAX_PAGE_LIMIT, type SeedManifest, seedManifest } from '../server/seed/manifest.ts';
import { type SeedPage, seedPage } from '../server/seed/pages.ts';
import { declaredPortableScopes } from '../server/seed/portable-scopes.ts';
import { SeedArtifactError } from './errors.ts';
import type { FaultSwitch } from './faults.ts';

export interface FetchedPage {
  /** The token presented for this page and the ordinal it was asked for. */
  token: string;
  ordinal: number;
  page: SeedPage;
}

export interface ExportRun {
  manifest: SeedManifest;
  pages: Record<string, FetchedPage[]>;
  /** The portable shared scopes the server declares, read in the same snapshot. */
  declaredScopes: string[];
  /** The published schema manifest document at the export's schema version. */
  schemaManifest: unknown;
}

async function manifestOnly(db: ClientBase, limit: number): Promise<SeedManifest> {
  await db.query(EXPORT_TRANSACTION);
  try {
    return await seedManifest(db, limit);
  } finally {
    await db.query('ROLLBACK');
  }
}

export async function runExport(db: ClientBase, pageLimit: number = MAX_PAGE_LIMIT, fault: FaultSwitch = () => false): Promise<ExportRun> {
  // Only for the fault: a receipt of an export taken just before this one, as a stale bundle would carry.
  const earlier = fault('earlier-receipt') ? await manifestOnly(db, pageLimit) : undefined;
  await db.query(EXPORT_TRANSACTION);
  try {
    const manifest = await seedManifest(db, pageLimit);
    const pages: Record<string, FetchedPage[]> = {};
    for (const entry of manifest.portable_scopes) {
      const list: FetchedPage[] = [];
      let token: string | null = entry.page_token;
      for (let ordinal = 0; token !== null; ordinal += pageLimit) {
        const page: SeedPage = await seedPage(db, entry.id, token, null, ordinal, pageLimit);
        list.push({ token, ordinal, page });
        token = page.page_token;
      }
      pages[entry.id] = list;
    }
    const declared = await declaredPortableScopes(db);
    const doc = await db.query<{ body_text: string }>('SELECT body_text FROM synchro.manifests WHERE schema_version = $1 AND schema_hash = $2', [manifest.schema_version, manifest.schema_hash]);
    const text = doc.rows[0]?.body_text;
    if (text === undefined) throw new SeedArtifactError('manifest hash', `no published schema manifest ${manifest.schema_version}/${manifest.schema_hash}`);
    const first = manifest.portable_scopes[0];
    const stale = earlier?.portable_scopes.find((s) => s.id === first?.id);
    if (first !== undefined && stale !== undefined) first.continuation = stale.continuation; // fault: seed:earlier-receipt
    return { manifest, pages, declaredScopes: declared, schemaManifest: JSON.parse(text) };
  } finally {
    await db.query('ROLLBACK');
  }
}
