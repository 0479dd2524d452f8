/**
 * SYNC-OPS-007: an extension's objects read from a database's catalogs, one
 * facet per comparison the feature names, each a sorted list of lines that
 * name the object by pg_describe_object (or its signature), so two databases
 * compare line by line whatever their OIDs.
 */
import type { ExtensionDatabase } from '../../../harness/adapters/server.ts';

export type CatalogFacet = 'members' | 'functions' | 'acls' | 'tables' | 'comments';

/** Member objects of the extension (deptype 'e'), as pg_describe_object names them. */
const MEMBERS = (name: string) => `WITH ext AS (SELECT oid FROM pg_extension WHERE extname = '${name}'),
  members AS (SELECT d.classid, d.objid FROM pg_depend d, ext WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')`;

const QUERIES: Record<CatalogFacet, (name: string) => string> = {
  members: (name) => `${MEMBERS(name)}
    SELECT pg_describe_object(classid, objid, 0) AS line FROM members`,
  functions: (name) => `${MEMBERS(name)}
    SELECT concat_ws(' | ', p.oid::regprocedure::text, 'returns ' || pg_get_function_result(p.oid), 'kind ' || p.prokind::text,
             'volatility ' || p.provolatile::text, 'security ' || CASE WHEN p.prosecdef THEN 'definer' ELSE 'invoker' END,
             'strict ' || p.proisstrict::text, 'parallel ' || p.proparallel::text, 'leakproof ' || p.proleakproof::text,
             'config ' || coalesce(array_to_string(p.proconfig, ';'), '-'), 'owner ' || pg_get_userbyid(p.proowner),
             'body md5 ' || md5(p.prosrc)) AS line
      FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid`,
  acls: (name) => `${MEMBERS(name)},
    objects AS (
      SELECT 'pg_namespace'::regclass AS classid, n.oid AS objid, 0 AS subid, n.nspacl AS acl, n.nspowner AS owner
        FROM pg_namespace n WHERE n.oid = (SELECT extnamespace FROM pg_extension WHERE extname = '${name}')
      UNION ALL SELECT m.classid, n.oid, 0, n.nspacl, n.nspowner FROM members m JOIN pg_namespace n ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
      UNION ALL SELECT m.classid, c.oid, 0, c.relacl, c.relowner FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
      UNION ALL SELECT m.classid, a.attrelid, a.attnum, a.attacl, c.relowner FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attacl IS NOT NULL
      UNION ALL SELECT m.classid, p.oid, 0, p.proacl, p.proowner FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
      UNION ALL SELECT m.classid, t.oid, 0, t.typacl, t.typowner FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid)
    SELECT concat_ws(' | ', pg_describe_object(classid, objid, subid), 'owner ' || pg_get_userbyid(owner),
             'acl ' || coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(acl) x), 'default')) AS line
      FROM objects`,
  tables: (name) => `${MEMBERS(name)},
    relations AS (SELECT c.oid, c.relkind FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid)
    SELECT concat_ws(' | ', r.oid::regclass::text, 'kind ' || r.relkind::text) AS line FROM relations r
    UNION ALL SELECT concat_ws(' | ', r.oid::regclass::text, 'column ' || a.attnum || ' ' || quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
             CASE WHEN a.attnotnull THEN 'not null' ELSE 'null' END, 'identity ' || a.attidentity::text, 'generated ' || a.attgenerated::text,
             'default ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-'), 'collation ' || a.attcollation::regcollation::text)
      FROM relations r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
    UNION ALL SELECT concat_ws(' | ', r.oid::regclass::text, 'constraint ' || quote_ident(co.conname), pg_get_constraintdef(co.oid))
      FROM relations r JOIN pg_constraint co ON co.conrelid = r.oid
    UNION ALL SELECT concat_ws(' | ', r.oid::regclass::text, 'index ' || pg_get_indexdef(i.indexrelid))
      FROM relations r JOIN pg_index i ON i.indrelid = r.oid
    UNION ALL SELECT concat_ws(' | ', r.oid::regclass::text, 'trigger ' || pg_get_triggerdef(t.oid), 'enabled ' || t.tgenabled::text)
      FROM relations r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
    UNION ALL SELECT concat_ws(' | ', r.oid::regclass::text, 'view ' || pg_get_viewdef(r.oid))
      FROM relations r WHERE r.relkind IN ('v', 'm')`,
  comments: (name) => `${MEMBERS(name)}
    SELECT concat_ws(' | ', pg_describe_object(d.classoid, d.objoid, d.objsubid), 'comment ' || d.description) AS line
      FROM pg_description d JOIN members m ON m.classid = d.classoid AND m.objid = d.objoid
    UNION ALL SELECT concat_ws(' | ', 'schema ' || n.nspname, 'comment ' || d.description)
      FROM pg_description d JOIN pg_namespace n ON d.classoid = 'pg_namespace'::regclass AND d.objoid = n.oid
     WHERE n.oid = (SELECT extnamespace FROM pg_extension WHERE extname = '${name}')`,
};

export type CatalogSnapshot = Record<CatalogFacet, string[]>;

/** Every facet of the extension `name` in `db`, each sorted. */
export async function snapshotExtension(db: ExtensionDatabase, name: string): Promise<CatalogSnapshot> {
  const snapshot = {} as CatalogSnapshot;
  for (const facet of Object.keys(QUERIES) as CatalogFacet[]) {
    const rows = await db.query(QUERIES[facet](name));
    snapshot[facet] = rows.map((row) => String(row.line)).sort();
  }
  return snapshot;
}

/** Lines of `a` missing from `b` and of `b` missing from `a`, each list capped for a readable message. */
export function difference(a: readonly string[], b: readonly string[], cap = 10): { onlyFirst: string[]; onlySecond: string[] } {
  const inB = new Set(b);
  const inA = new Set(a);
  return { onlyFirst: a.filter((line) => !inB.has(line)).slice(0, cap), onlySecond: b.filter((line) => !inA.has(line)).slice(0, cap) };
}
