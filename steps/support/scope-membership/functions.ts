/**
 * Membership functions the determinism scenarios install: one that returns
 * every listed placement as is, repeats included, so the server is the one
 * that has to merge duplicates; and variants of it that give a bad answer for
 * one row only (NULL, an empty or blank string, a run-time error, too many
 * scopes) while every other row keeps its placements. All of them follow the
 * scope function contract: SQL-standard body, STABLE, reading only the
 * table's projection.
 */
import type { ColumnSpec, TableSpec } from '../model.ts';
import { ident, literal, sourceSql } from '../scopes/roles.ts';
import type { SyncWorld } from '../world.ts';

/** `team:{team}` as text built from the projected row `r`. */
function templateSql(template: string): string {
  const pieces = template.split(/(\{[^}]+\})/).filter((piece) => piece.length > 0);
  return pieces.map((piece) => (/^\{[^}]+\}$/.test(piece) ? `r.${ident(piece.slice(1, -1))}::text` : literal(piece))).join(' || ');
}

/** One SELECT per item, each reading the row `p_key` from the projection, optionally narrowed by `extra`. */
function selects(table: TableSpec, key: ColumnSpec, items: readonly string[], extra = ''): string[] {
  const from = `FROM synchro_projection.${ident(table.name)} r WHERE r.${ident(key.name)} = p_key${extra}`;
  return items.map((item) => `SELECT ${item} ${from}`);
}

/** What a failing variant answers for its one row, as SQL expressions over `r`. */
export function badAnswer(failure: string, key: ColumnSpec): string[] {
  if (failure === 'returns NULL') return ['NULL::text'];
  if (failure === 'raises an error') {
    // A division by zero the planner cannot fold away: it depends on the row, so it fails only when evaluated.
    const width = `length(r.${ident(key.name)}::text)`;
    return [`(1 / (${width} - ${width}))::text`];
  }
  const quoted = /^returns (?:the empty string|"(.*)")$/.exec(failure);
  if (quoted) return [literal(quoted[1] ?? '')];
  const over = /^returns more distinct scopes than its max_scope_fanout of (\d+)$/.exec(failure);
  if (over) return Array.from({ length: Number(over[1]) + 1 }, (_, n) => literal(`overflow:${n + 1}`));
  throw new Error(`the harness has no membership function that ${failure}`);
}

/** The fanout bound a failing variant needs registered first, when it names one. */
export function fanoutOf(failure: string): number | undefined {
  const over = /max_scope_fanout of (\d+)$/.exec(failure);
  return over ? Number(over[1]) : undefined;
}

/**
 * CREATE OR REPLACE of a function placing each row in every listed
 * placement with UNION ALL (repeats kept); with `bad`, row `row` gets that
 * answer instead.
 */
export function listedFunctionSql(name: string, table: TableSpec, key: ColumnSpec, bad?: { row: string; answer: string[] }): string {
  const placements = table.placements.map(templateSql);
  const branches = bad
    ? [...selects(table, key, placements, ` AND p_key <> ${literal(bad.row)}`), ...selects(table, key, bad.answer, ` AND p_key = ${literal(bad.row)}`)]
    : selects(table, key, placements);
  if (table.conditional.length > 0) throw new Error(`table "${table.name}" has conditional placements, which listed membership functions do not cover`);
  return `CREATE OR REPLACE FUNCTION ${name}(p_key ${sqlKeyType(key)}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  ${branches.join('\n  UNION ALL ')};
END;`;
}

// The portable key types membership functions take, as the model creates them.
const KEY_TYPES: Record<string, string> = { string: 'text', int: 'integer', int64: 'bigint' };

function sqlKeyType(key: ColumnSpec): string {
  const type = KEY_TYPES[key.type];
  if (type === undefined) throw new Error(`key column ${key.name} has type ${key.type}, not a key type (string, int, int64)`);
  return type;
}

/** Registers `fn` for `relation` the controlled way, with an optional fanout bound. */
export async function reconfigure(world: SyncWorld, relation: string, fn: string, fanout?: number): Promise<void> {
  const sql = await sourceSql(world);
  if (fanout === undefined) await sql.query('SELECT synchro.synchro_reconfigure_membership($1, $2)', [relation, fn]);
  else await sql.query('SELECT synchro.synchro_reconfigure_membership($1, $2, $3)', [relation, fn, fanout]);
}
