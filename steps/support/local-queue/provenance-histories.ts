/**
 * Generated membership histories for the provenance property: each step
 * changes the server (a row's scope list, a deleted row, a granted or revoked
 * scope), capture catches up, the client under test syncs, and the harness
 * records what the client then reports (provenance and rows) beside what the
 * server's state says it should be: for each source row, the team scopes its
 * list names that the user is assigned.
 */
import fc from 'fast-check';
import type { SyncWorld } from '../world.ts';
import { edgeLine, localKeys, namedProvenance } from './provenance.ts';

const TEAMS = ['t_1', 't_2', 't_3'] as const;
const TABLES = ['notes', 'links'] as const;

export type HistoryStep =
  | { kind: 'set'; table: (typeof TABLES)[number]; row: 'k1' | 'k2' | 'new'; teams: string[] }
  | { kind: 'delete'; pick: number }
  | { kind: 'assignment'; action: 'grant' | 'revoke'; team: (typeof TEAMS)[number] };

const step: fc.Arbitrary<HistoryStep> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('set' as const), table: fc.constantFrom(...TABLES), row: fc.constantFrom('k1' as const, 'k2' as const, 'new' as const), teams: fc.subarray([...TEAMS]) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat({ max: 1000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('assignment' as const), action: fc.constantFrom('grant' as const, 'revoke' as const), team: fc.constantFrom(...TEAMS) }) },
);

export const histories = fc.array(step, { minLength: 1, maxLength: 12 });

/** What the client reported after one step, and what the server state called for. */
export interface Observation {
  history: number;
  step: number;
  did: string;
  reported: string[];
  expected: string[];
  /** Rows the client holds, as `table key`. */
  held: string[];
}

interface SourceRow {
  table: string;
  id: string;
  teams: string[];
}

async function sourceRows(world: SyncWorld): Promise<SourceRow[]> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  const out: SourceRow[] = [];
  for (const table of TABLES) {
    const rows = (await server.sourceSql.query(`SELECT id, team_ids FROM public.${table}`)) as { id: string; team_ids: string }[];
    for (const r of rows) out.push({ table, id: r.id, teams: r.team_ids.split(',').filter((t) => t !== '') });
  }
  return out;
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Applies one step on the server; returns what it did, in words. */
async function apply(world: SyncWorld, user: string, assigned: Set<string>, s: HistoryStep, fresh: () => string, deleted: Set<string>): Promise<string> {
  const server = await world.readyServer();
  if (!server.sourceSql || !server.scopes) throw new Error(`server adapter "${server.id}" lacks the sourceSql or scopes capability`);
  if (s.kind === 'assignment') {
    const scope = `team:${s.team}`;
    if (s.action === 'grant') {
      await server.scopes.grantUserScope(user, scope);
      assigned.add(scope);
    } else {
      await server.scopes.revokeUserScope(user, scope);
      assigned.delete(scope);
    }
    return `${s.action} ${scope}`;
  }
  if (s.kind === 'delete') {
    const rows = (await sourceRows(world)).sort((a, b) => `${a.table} ${a.id}`.localeCompare(`${b.table} ${b.id}`));
    const victim = rows[s.pick % Math.max(rows.length, 1)];
    if (victim === undefined) return 'delete (no row left)';
    await server.sourceSql.query(`DELETE FROM public.${victim.table} WHERE id = ${quote(victim.id)}`);
    deleted.add(`${victim.table} ${victim.id}`);
    return `delete ${victim.table} ${victim.id}`;
  }
  // A deleted row identity is never revived (the server refuses it): the step then writes a new row.
  const id = s.row === 'new' || deleted.has(`${s.table} ${s.row}`) ? fresh() : s.row;
  const list = s.teams.join(',');
  const other = s.table === 'notes' ? 'body' : 'url';
  await server.sourceSql.query(`INSERT INTO public.${s.table} (id, team_ids, ${other}) VALUES (${quote(id)}, ${quote(list)}, ${quote(`generated ${id}`)}) ON CONFLICT (id) DO UPDATE SET team_ids = EXCLUDED.team_ids`);
  return `set ${s.table} ${id} team_ids "${list}"`;
}

/**
 * Runs the histories one after another on client `name` of `user`, who starts
 * assigned `assigned`; returns one observation per step.
 */
export async function runHistories(world: SyncWorld, name: string, user: string, assigned: Set<string>, drawn: HistoryStep[][]): Promise<Observation[]> {
  const observations: Observation[] = [];
  let counter = 0;
  const deleted = new Set<string>();
  const fresh = () => {
    counter += 1;
    return `g${counter}`;
  };
  for (const [h, history] of drawn.entries()) {
    for (const [i, s] of history.entries()) {
      const did = await apply(world, user, assigned, s, fresh, deleted);
      await (await world.readyServer()).capture?.awaitMaterialized(world.deadlineMs);
      const result = await world.syncProcess(name);
      if ('error' in result) throw new Error(`client "${name}" could not sync after "${did}" (history ${h}, step ${i}): ${result.error.message}`);
      if (result.completion !== 'idle') throw new Error(`client "${name}" ended its sync after "${did}" (history ${h}, step ${i}) "${result.completion}" in state ${result.status}, not idle`);
      const expected = (await sourceRows(world))
        .flatMap((r) => r.teams.filter((t) => assigned.has(`team:${t}`)).map((t) => edgeLine({ scope: `team:${t}`, table: r.table, record: r.id })))
        .sort();
      const reported = (await namedProvenance(world, name)).map(edgeLine).sort();
      const held = (await Promise.all(TABLES.map(async (t) => (await localKeys(world, name, t)).map((k) => `${t} ${k}`)))).flat().sort();
      observations.push({ history: h, step: i, did, reported, expected, held });
    }
  }
  return observations;
}
