/**
 * What a scenario declared about the source schema before it ran: tables with
 * portable column types, where their rows belong (scope placement), and the
 * lifecycle columns. Declarations are collected first and installed on the
 * server in one go right before the first step that needs the server, because
 * a registration carries its membership function and deletion column.
 */
import type { ServerAdapter } from '../../harness/adapters/server.ts';

export interface ColumnSpec {
  name: string;
  /** Portable type name as the features spell it (string, int, int64, datetime, ...). */
  type: string;
  /** Declared precision and scale of a decimal column. */
  precision?: number;
  scale?: number;
  key: boolean;
  nullable: boolean;
}

export interface TableSpec {
  name: string;
  columns: ColumnSpec[];
  /** Scope templates such as `user:{owner_id}`: every row is placed in each. */
  placements: string[];
  /** Extra placements for rows whose `column` holds `value`. */
  conditional: { column: string; value: string; scope: string }[];
  /** Extra placements made only for rows whose `column` is not null (the template usually names it). */
  whenSet: { template: string; column: string }[];
  /** Placements in one scope per comma-separated item of `column` (blanks trimmed), the item standing for the template's `{...}` part (`{id}`: the item is the scope ID). */
  eachListed?: { template: string; column: string }[];
  deletedAtColumn?: string;
  /** The update-time column the server sets on every accepted write (registered as the table's updated_at). */
  updatedAtColumn?: string;
  /** The registration's max_scope_fanout, when a scenario sets one (the server's default otherwise). */
  maxScopeFanout?: number;
  /** When set, the source relation is range-partitioned by its key column into these partitions. */
  partitions?: RangePartition[];
  installed: boolean;
}

/** One range partition of a source relation: the keys below `below` not held by an earlier partition (the rest, without a bound). */
export interface RangePartition {
  name: string;
  below?: string;
  /** Columns with a unique index of this partition's own (not of the partitioned relation). */
  uniqueColumns: string[];
}

const SQL_TYPES: Record<string, string> = {
  string: 'text',
  int: 'integer',
  int64: 'bigint',
  float: 'double precision',
  decimal: 'numeric',
  bool: 'boolean',
  boolean: 'boolean',
  datetime: 'timestamptz',
  date: 'date',
  time: 'time',
  json: 'jsonb',
  bytes: 'bytea',
  uuid: 'uuid',
};

/**
 * The column values a placement template (`team:{team_id}`) needs for a row
 * to land in `scope`, or undefined when the template cannot produce it.
 */
export function templateValues(template: string, scope: string): Record<string, string> | undefined {
  const names: string[] = [];
  const pattern = template.replace(/\{([^}]+)\}|[^{]+/g, (part, name: string | undefined) => {
    if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    names.push(name);
    return '(.+)';
  });
  const match = new RegExp(`^${pattern}$`).exec(scope);
  return match === null ? undefined : Object.fromEntries(names.map((name, k) => [name, match[k + 1] as string]));
}

export function sqlType(portable: string): string {
  const type = SQL_TYPES[portable];
  if (type === undefined) throw new Error(`unknown portable type "${portable}" (known: ${Object.keys(SQL_TYPES).join(', ')})`);
  return type;
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** `user:{owner_id}` as a SQL expression over the projected row `r`. */
function scopeExpression(template: string): string {
  const parts = template.split(/(\{[^}]+\})/).filter((part) => part !== '');
  return parts.map((part) => (part.startsWith('{') ? `r.${ident(part.slice(1, -1))}::text` : literal(part))).join(' || ');
}

/** `team:{id}` with the `{...}` part taken from the list item `e.item`. */
function listedScopeExpression(template: string): string {
  const [prefix, suffix] = template.split(/\{[^}]+\}/);
  if (suffix === undefined) throw new Error(`scope template "${template}" has no {...} part for the list item`);
  return [literal(prefix ?? ''), 'btrim(e.item)', ...(suffix === '' ? [] : [literal(suffix)])].join(' || ');
}

// A table name may hold characters an unquoted function name cannot ("doc:x"): the function's name replaces them.
/** The registered relation's name, quoted only where a plain identifier cannot spell it ("doc:x"). */
const relationName = (table: TableSpec) => `public.${/^[a-z_][a-z0-9_]*$/.test(table.name) ? table.name : ident(table.name)}`;

const membershipFunctionName = (table: TableSpec) => `public.${table.name.replace(/[^A-Za-z0-9_]/g, '_')}_scopes`;

/** Creates the table's projection ahead of registration, so a function body can name it; repeating it changes nothing. */
const prepareProjectionSql = (table: TableSpec) => `SELECT synchro.synchro_prepare_projection_view(${literal(`public.${ident(table.name)}`)});`;

/**
 * The membership function of a table: the scopes of each of its placements,
 * read from the capture's projection of the row (the transaction's final
 * state), never from the live source table. The body is SQL-standard
 * (BEGIN ATOMIC), as the scope function contract asks, so the projection it
 * names must exist before the function is created.
 */
function membershipFunctionSql(table: TableSpec, key: ColumnSpec, verb: 'CREATE' | 'CREATE OR REPLACE', name = membershipFunctionName(table)): string {
  const source = `synchro_projection.${ident(table.name)}`;
  const branches = [
    ...table.placements.map((template) => `SELECT ${scopeExpression(template)} FROM ${source} r WHERE r.${ident(key.name)} = p_key`),
    ...table.conditional.map((rule) => `SELECT ${literal(rule.scope)} FROM ${source} r WHERE r.${ident(key.name)} = p_key AND r.${ident(rule.column)}::text = ${literal(rule.value)}`),
    ...table.whenSet.map((rule) => `SELECT ${scopeExpression(rule.template)} FROM ${source} r WHERE r.${ident(key.name)} = p_key AND r.${ident(rule.column)} IS NOT NULL`),
    ...(table.eachListed ?? []).map((rule) => `SELECT ${listedScopeExpression(rule.template)} FROM ${source} r CROSS JOIN LATERAL unnest(string_to_array(r.${ident(rule.column)}::text, ',')) AS e(item) WHERE r.${ident(key.name)} = p_key AND btrim(e.item) <> ''`),
  ];
  return `${verb} FUNCTION ${name}(p_key ${sqlType(key.type)}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  ${branches.join('\n  UNION ')};
END;`;
}

/** The partitions of a range-partitioned table and their own unique indexes, in key order. */
function partitionsSql(table: TableSpec, key: ColumnSpec): string {
  const bound = (value: string | undefined) => (value === undefined ? 'MAXVALUE' : `${literal(value)}::${sqlType(key.type)}`);
  const partitions = table.partitions ?? [];
  return partitions
    .flatMap((partition, i) => [
      `CREATE TABLE public.${ident(partition.name)} PARTITION OF public.${ident(table.name)} FOR VALUES FROM (${i === 0 ? 'MINVALUE' : bound(partitions[i - 1]?.below)}) TO (${bound(partition.below)});`,
      ...partition.uniqueColumns.map((column) => `CREATE UNIQUE INDEX ${ident(`${partition.name}_${column}_key`)} ON public.${ident(partition.name)} (${ident(column)});`),
    ])
    .join('\n');
}

export class ScenarioModel {
  readonly tables = new Map<string, TableSpec>();

  declareTable(name: string, columns: ColumnSpec[]): TableSpec {
    if (this.tables.has(name)) throw new Error(`table "${name}" is declared twice in this scenario`);
    if (columns.filter((c) => c.key).length !== 1) throw new Error(`table "${name}" needs exactly one key column`);
    const table: TableSpec = { name, columns, placements: [], conditional: [], whenSet: [], installed: false };
    this.tables.set(name, table);
    return table;
  }

  table(name: string): TableSpec {
    const table = this.tables.get(name);
    if (!table) throw new Error(`table "${name}" was not declared by a "a registered table" step`);
    return table;
  }

  keyColumn(name: string): ColumnSpec {
    return this.table(name).columns.find((c) => c.key) as ColumnSpec;
  }

  get pending(): boolean {
    return [...this.tables.values()].some((t) => !t.installed);
  }

  /** Creates and registers every declared table not yet installed. */
  async install(server: ServerAdapter): Promise<void> {
    const provision = server.provision;
    for (const table of this.tables.values()) {
      if (table.installed) continue;
      if (!provision) throw new Error(`server adapter "${server.id}" has no provision capability to create table "${table.name}"`);
      const key = this.keyColumn(table.name);
      const columns = table.columns.map((c) => `${ident(c.name)} ${sqlType(c.type)}${c.precision === undefined ? '' : `(${c.precision}, ${c.scale ?? 0})`}${c.key ? ' PRIMARY KEY' : c.nullable ? '' : ' NOT NULL'}`);
      let sql = `CREATE TABLE public.${ident(table.name)} (${columns.join(', ')})${table.partitions === undefined ? '' : ` PARTITION BY RANGE (${ident(key.name)})`};`;
      if (table.partitions !== undefined) sql += `\n${partitionsSql(table, key)}`;
      const listed = (table.eachListed ?? []).length > 0;
      const placed = table.placements.length > 0 || table.conditional.length > 0 || table.whenSet.length > 0 || listed;
      const membershipFunction = placed ? membershipFunctionName(table) : null;
      if (placed) sql += `\n${prepareProjectionSql(table)}\n${membershipFunctionSql(table, key, 'CREATE')}`;
      await provision.exec(sql);
      await provision.registerTable({
        relation: relationName(table),
        membershipFunction,
        composition: table.conditional.length > 0 || table.whenSet.length > 0 || table.placements.length > 1 || listed ? 'multi_scope' : 'single_scope',
        ...(table.deletedAtColumn ? { deletedAtColumn: table.deletedAtColumn } : {}),
        ...(table.updatedAtColumn ? { updatedAtColumn: table.updatedAtColumn } : {}),
        ...(table.maxScopeFanout === undefined ? {} : { maxScopeFanout: table.maxScopeFanout }),
      });
      table.installed = true;
    }
  }

  /**
   * Makes an installed table's rows follow its current placements through the
   * registry: a new function covering every placement (a registered function
   * is never edited in place), then the server's membership reconfiguration,
   * which re-places the rows already captured and sends only the scopes whose
   * contents change to rebuild. The name counts the placements, so each
   * change gets a function of its own.
   */
  async replacePlacements(server: ServerAdapter, name: string): Promise<void> {
    const table = this.table(name);
    if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change where rows of "${name}" belong`);
    if (table.placements.length + table.conditional.length === 1) throw new Error(`table "${name}" was installed without a membership function; it cannot gain a placement afterwards`);
    const next = `${membershipFunctionName(table)}_${table.placements.length}_${table.conditional.length}`;
    await server.provision.exec(membershipFunctionSql(table, this.keyColumn(name), 'CREATE', next));
    await server.provision.reconfigureMembership(relationName(table), next);
  }
}
