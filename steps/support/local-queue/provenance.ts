/**
 * What a client under test records as provenance (which active scope
 * justifies which local row), named the way the features name rows (table
 * name, key), and the server-side moves the provenance steps make: a pull
 * block the proxy holds until lifted, and a membership rule change that
 * mints a new membership generation for one scope.
 */
import { sqlType, type TableSpec } from '../model.ts';
import { provenanceOf } from '../scope-repair/provenance.ts';
import { manifestTables } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

/** One provenance edge as `scope table record`, with the table's name. */
export interface NamedEdge {
  scope: string;
  table: string;
  record: string;
}

export const edgeLine = (e: NamedEdge) => `${e.scope} ${e.table} ${e.record}`;

export async function namedProvenance(world: SyncWorld, name: string): Promise<NamedEdge[]> {
  const tables = await manifestTables(world);
  return (await provenanceOf(world, name)).map((e) => ({ scope: e.scopeId, table: tables.get(e.table)?.name ?? e.table, record: e.recordId })).sort((a, b) => edgeLine(a).localeCompare(edgeLine(b)));
}

/** The scopes client `name` records for one row, sorted. */
export async function scopesOfRow(world: SyncWorld, name: string, table: string, record: string): Promise<string[]> {
  return (await namedProvenance(world, name)).filter((e) => e.table === table && e.record === record).map((e) => e.scope);
}

/** Keys of the rows of `table` client `name` holds, sorted. */
export async function localKeys(world: SyncWorld, name: string, table: string): Promise<string[]> {
  const key = world.model.keyColumn(table).name;
  const { rows } = await (await world.process(name)).call<{ rows: { k: string }[] }>('query', { sql: `SELECT CAST("${key}" AS TEXT) AS k FROM "${table}" ORDER BY 1`, params: [] });
  return rows.map((r) => r.k).sort();
}

const blocked = new WeakMap<SyncWorld, Set<string>>();

/** Refuses every pull of client `name` (503, as an unreachable server) until `unblockPulls`. */
export async function blockPulls(world: SyncWorld, name: string): Promise<void> {
  const client = await world.process(name);
  const proxy = await world.proxy();
  const names = blocked.get(world) ?? new Set<string>();
  if (!blocked.has(world)) {
    blocked.set(world, names);
  }
  if (names.has(name)) throw new Error(`pulls of client "${name}" are already blocked`);
  names.add(name);
  proxy.inject({
    endpoint: 'pull',
    times: Number.POSITIVE_INFINITY,
    when: (request) => names.has(name) && (request as { client_id?: unknown } | undefined)?.client_id === client.clientId,
    fault: { kind: 'status', status: 503, retryAfter: '1' },
  });
}

export function unblockPulls(world: SyncWorld, name: string): void {
  if (blocked.get(world)?.delete(name) !== true) throw new Error(`pulls of client "${name}" are not blocked`);
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

let ruleCounter = 0;

/** A membership function placing each row in one scope per listed item, leaving out `without` when given. */
function listedRuleSql(table: TableSpec, keyName: string, keyType: string, without?: string): { name: string; sql: string } {
  const rules = table.eachListed ?? [];
  if (rules.length + table.placements.length === 0 || table.conditional.length + table.whenSet.length > 0) throw new Error(`table "${table.name}" is not placed by scope templates or comma-separated lists alone; its rule cannot be rewritten here`);
  ruleCounter += 1;
  const name = `public.${table.name}_listed_rule_${ruleCounter}_${process.pid}`;
  const selects = rules.map((rule) => {
    const [prefix, suffix] = rule.template.split(/\{[^}]+\}/);
    const scope = `${literal(prefix ?? '')} || e.item${suffix ? ` || ${literal(suffix)}` : ''}`;
    const exclusion = without === undefined ? '' : ` AND ${scope} <> ${literal(without)}`;
    return `SELECT ${scope} FROM synchro_projection.${ident(table.name)} r CROSS JOIN LATERAL unnest(string_to_array(r.${ident(rule.column)}::text, ',')) AS e(item) WHERE r.${ident(keyName)} = p_key AND e.item <> ''${exclusion}`;
  });
  // A plain template ("team:{team_id}") places each row in one scope built from its columns.
  for (const template of table.placements) {
    const scope = template
      .split(/(\{[^}]+\})/)
      .filter((part) => part !== '')
      .map((part) => (part.startsWith('{') ? `r.${ident(part.slice(1, -1))}::text` : literal(part)))
      .join(' || ');
    const exclusion = without === undefined ? '' : ` AND ${scope} <> ${literal(without)}`;
    selects.push(`SELECT ${scope} FROM synchro_projection.${ident(table.name)} r WHERE r.${ident(keyName)} = p_key${exclusion}`);
  }
  return { name, sql: `CREATE FUNCTION ${name}(p_key ${sqlType(keyType)}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC\n  ${selects.join('\n  UNION ')};\nEND;` };
}

/**
 * Gives `scope` a new membership generation through the server's controlled
 * reconfiguration: first a rule that leaves `scope` out (its contents change),
 * then the table's declared rule again (they change back). Every other scope
 * ends where it was; `scope` ends with its old contents under a newer generation.
 */
export async function mintGeneration(world: SyncWorld, tableName: string, scope: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  const table = world.model.table(tableName);
  const key = world.model.keyColumn(tableName);
  for (const without of [scope, undefined]) {
    const rule = listedRuleSql(table, key.name, key.type, without);
    await server.provision.exec(rule.sql);
    await server.provision.reconfigureMembership(`public.${tableName}`, rule.name);
  }
}
