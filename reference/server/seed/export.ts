/**
 * A whole portable seed export on one connection in one transaction: the
 * manifest, then every page of the chosen portable scopes (all of them by
 * default), following each page's token. The transaction is read only, so
 * it ends with a rollback; nothing it did outlives it, the state included.
 */
import type { ClientBase } from 'pg';
import { SeedRequestError } from './errors.ts';
import { EXPORT_TRANSACTION } from './export-session.ts';
import { MAX_PAGE_LIMIT, type SeedManifest, seedManifest } from './manifest.ts';
import { type SeedPage, seedPage } from './pages.ts';

export interface SeedExport {
  manifest: SeedManifest;
  pages: Record<string, SeedPage[]>;
}

export async function exportSeed(db: ClientBase, options: { pageLimit?: number; scopes?: readonly string[] } = {}): Promise<SeedExport> {
  const limit = options.pageLimit ?? MAX_PAGE_LIMIT;
  await db.query(EXPORT_TRANSACTION);
  try {
    const manifest = await seedManifest(db, limit);
    const wanted = options.scopes ?? manifest.portable_scopes.map((s) => s.id);
    const pages: Record<string, SeedPage[]> = {};
    for (const scope of wanted) {
      const entry = manifest.portable_scopes.find((s) => s.id === scope);
      if (entry === undefined) throw new SeedRequestError(`scope ${JSON.stringify(scope)} is not a portable scope of this export`);
      const list: SeedPage[] = [];
      let token: string | null = entry.page_token;
      for (let ordinal = 0; token !== null; ordinal += limit) {
        const page: SeedPage = await seedPage(db, scope, token, null, ordinal, limit);
        list.push(page);
        token = page.page_token;
      }
      pages[scope] = list;
    }
    return { manifest, pages };
  } finally {
    await db.query('ROLLBACK');
  }
}
