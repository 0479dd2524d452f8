/**
 * Membership that reads rows other than the row itself, as the dependency
 * scenarios declare it, turned into what a server is given: the membership
 * function over projections, the impact functions that name the rows a
 * dependency change can move, and variants of an impact function that fail
 * in one chosen way. The same rules also serve as the harness's own oracle:
 * `evaluate` computes, from plain source rows, the scopes a from-scratch
 * evaluation must give.
 */
import { type ColumnSpec, sqlType, type TableSpec } from '../model.ts';

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** `schema.table` split into its two parts; the projection view carries the table's name. */
export function relationParts(relation: string): { schema: string; table: string } {
  const [schema, table, extra] = relation.split('.');
  if (!schema || !table || extra !== undefined) throw new Error(`"${relation}" is not a schema-qualified relation`);
  return { schema, table };
}

const projection = (table: string) => `synchro_projection.${ident(table)}`;

/**
 * Where a row of a target table belongs:
 * - `parent`: in `template`, filled from the row of `relation` whose `key` equals the target row's `reference`;
 * - `root`: in `template`, filled from the root of the row's chain of `parent` links within its own table.
 */
export type Placement =
  | { kind: 'parent'; template: string; relation: string; key: string; reference: string }
  | { kind: 'root'; template: string; parent: string };

/** The rows a dependency change names for re-evaluation. */
export type Impact =
  | { kind: 'referencing'; relation: string; reference: string; key: string; maxImpactRows?: number }
  | { kind: 'children'; parent: string; maxImpactRows?: number };

/** Placeholders of a scope template (`team:{team}` → `team`). */
export function templateColumns(template: string): string[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
}

/** The template as a SQL text expression over the row aliased `alias`. */
function templateSql(template: string, alias: string): string {
  const parts = template.split(/(\{[^}]+\})/).filter((part) => part !== '');
  return parts.map((part) => (part.startsWith('{') ? `${alias}.${ident(part.slice(1, -1))}::text` : literal(part))).join(' || ');
}

/** A row whose template columns are null belongs nowhere: a null scope ID would be an evaluation failure. */
function filledSql(template: string, alias: string): string {
  return templateColumns(template)
    .map((c) => ` AND ${alias}.${ident(c)} IS NOT NULL`)
    .join('');
}

export const membershipFunctionName = (target: string) => `public.${target}_dependent_scopes`;

export const impactFunctionName = (target: string, dependency: string) => `public.${target}_impact_of_${relationParts(dependency).table}`;

/** The portable key type as a row reference spells it. */
export function pkType(key: ColumnSpec): string {
  if (key.type === 'string' || key.type === 'int' || key.type === 'int64') return key.type;
  throw new Error(`a row reference has no pk_type for a "${key.type}" key`);
}

/** The membership function of `target`, reading only projections (the transaction's final state). */
export function membershipSql(target: TableSpec, key: ColumnSpec, placement: Placement): string {
  const own = projection(target.name);
  const head = `CREATE FUNCTION ${membershipFunctionName(target.name)}(p_key ${sqlType(key.type)}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC`;
  if (placement.kind === 'parent') {
    const parent = projection(relationParts(placement.relation).table);
    return `${head}
  SELECT ${templateSql(placement.template, 'd')} FROM ${own} r JOIN ${parent} d ON d.${ident(placement.key)}::text = r.${ident(placement.reference)}::text
   WHERE r.${ident(key.name)} = p_key${filledSql(placement.template, 'd')};
END;`;
  }
  // Walks up the parent links; the depth bound ends a cycle, which then has no root and no scope.
  return `${head}
  WITH RECURSIVE chain (id, parent, depth) AS (
    SELECT r.${ident(key.name)}, r.${ident(placement.parent)}, 0 FROM ${own} r WHERE r.${ident(key.name)} = p_key
    UNION ALL
    SELECT p.${ident(key.name)}, p.${ident(placement.parent)}, c.depth + 1 FROM chain c JOIN ${own} p ON p.${ident(key.name)} = c.parent WHERE c.depth < 1000
  )
  SELECT ${templateSql(placement.template, 'x')} FROM chain c JOIN ${own} x ON x.${ident(key.name)} = c.id
   WHERE c.parent IS NULL${filledSql(placement.template, 'x')};
END;`;
}

/** How a variant of an impact function goes wrong; `conforming` is the declared one. */
export type ImpactVariant = 'conforming' | 'raises' | 'wrong-pk-type' | 'wrong-table' | 'every-row';

/** The rows `impact` names, as SQL conditions on the target projection `t` over the images `p_old` and `p_new`. */
function impactCondition(impact: Impact, key: ColumnSpec): string {
  // Referencing rows point at the changed row's key; children point at it through their parent column.
  const [column, pointed] = impact.kind === 'referencing' ? [impact.reference, impact.key] : [impact.parent, key.name];
  return `t.${ident(column)}::text IN (p_old ->> ${literal(pointed)}, p_new ->> ${literal(pointed)})`;
}

/**
 * The impact function of `target`'s dependency, or a variant of it. A
 * variant changes one thing: it raises (a division by zero on either
 * image, so deletes raise too), names a wrong key type or another table, or
 * names every target row whatever changed.
 */
export function impactSql(target: TableSpec, key: ColumnSpec, tableId: string, dependency: string, impact: Impact, variant: ImpactVariant, verb: 'CREATE' | 'CREATE OR REPLACE' = 'CREATE'): string {
  const type = variant === 'wrong-pk-type' ? (pkType(key) === 'string' ? 'int' : 'string') : pkType(key);
  const table = variant === 'wrong-table' ? 'tbl_other' : tableId;
  const value = variant === 'raises' ? `(length(coalesce(p_new, p_old)::text) / 0)::text` : `t.${ident(key.name)}::text`;
  const where = variant === 'every-row' ? '' : ` WHERE ${impactCondition(impact, key)}`;
  return `${verb} FUNCTION ${impactFunctionName(target.name, dependency)}(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT ROW(${literal(table)}, ${literal(type)}, ${value})::synchro.synchro_row_ref FROM ${projection(target.name)} t${where};
END;`;
}

export type SourceRow = Record<string, unknown>;

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));

function fill(template: string, row: SourceRow): string | null {
  let out = template;
  for (const column of templateColumns(template)) {
    const value = text(row[column]);
    if (value === null) return null;
    out = out.replaceAll(`{${column}}`, value);
  }
  return out;
}

/**
 * The harness's own evaluation of a placement: `pk>scope` for every row of
 * `rows` (the target table), given the rows of the dependency relation.
 */
export function evaluate(placement: Placement, key: string, rows: SourceRow[], dependencyRows: SourceRow[]): string[] {
  const out: string[] = [];
  const byKey = new Map(rows.map((r) => [text(r[key]), r]));
  for (const row of rows) {
    let source: SourceRow | undefined;
    if (placement.kind === 'parent') {
      source = dependencyRows.find((d) => text(d[placement.key]) === text(row[placement.reference]));
    } else {
      source = row;
      for (let depth = 0; source !== undefined && text(source[placement.parent]) !== null; depth++) source = depth < 1000 ? byKey.get(text(source[placement.parent])) : undefined;
    }
    const scope = source === undefined ? null : fill(placement.template, source);
    if (scope !== null) out.push(`${text(row[key])}>${scope}`);
  }
  return out.sort();
}
