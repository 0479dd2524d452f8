/**
 * Membership per source transaction. The harness labels the transactions it
 * commits with their WAL bounds: every effect a transaction causes carries a
 * commit position after the bound read before it and at or before the bound
 * read once it committed (the harness is the only writer of source rows).
 * The server's edges at a position are its effect log replayed up to there:
 * for each row and scope, the last effect decides whether the row is in.
 * The expected edges come from the harness evaluating the declared placement
 * on the source rows it read right after that transaction committed.
 */
import { Then, When } from '@cucumber/cucumber';
import type { InspectControl } from '../../harness/adapters/server.ts';
import { currentManifest } from '../schema-and-versions/manifests.ts';
import type { SyncWorld } from '../support/world.ts';
import { evaluate, ident, relationParts, type SourceRow } from './rules.ts';
import { dependencyState, placementOf, positionOf } from './state.ts';

async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect;
}

/** Every relation a dependent placement of the scenario reads: its target tables and their dependencies. */
function placementRelations(world: SyncWorld): string[] {
  const relations = new Set<string>();
  for (const [target, placement] of dependencyState(world).placements) {
    relations.add(`public.${target}`);
    if (placement.kind === 'parent') relations.add(placement.relation);
  }
  return [...relations].sort();
}

When('the harness commits on the source database and records the commit position as {string}:', async function (this: SyncWorld, label: string, script: string) {
  const state = dependencyState(this);
  if (state.positions.has(label)) throw new Error(`a source transaction was already recorded as "${label}"`);
  const server = await this.readyServer();
  const sql = server.sourceSql;
  if (!sql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  const lsn = async () => ((await sql.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0] as { lsn: string }).lsn;
  const before = await lsn();
  await sql.query(script);
  const after = await lsn();
  const rows = new Map<string, SourceRow[]>();
  for (const relation of placementRelations(this)) {
    const { schema, table } = relationParts(relation);
    const read = await sql.query<{ r: SourceRow }>(`SELECT to_jsonb(t) AS r FROM ${ident(schema)}.${ident(table)} t`);
    rows.set(relation, read.map((x) => x.r));
  }
  state.positions.set(label, { before, after, rows });
});

async function tableIdOf(world: SyncWorld, name: string): Promise<string> {
  const table = (await currentManifest(world)).tables.find((t) => t.name === name);
  if (!table) throw new Error(`the published manifest has no table "${name}"`);
  return table.table_id;
}

/** `pk>scope` of every row of `tableId` the effect log places in a scope at commit position `at`. */
async function edgesAt(world: SyncWorld, tableId: string, at: string, pk?: string): Promise<string[]> {
  const rows = await (await inspection(world)).query<{ pk_text: string; scope_id: string; op: string }>(
    `SELECT DISTINCT ON (scope_id, pk_text) scope_id, pk_text, op FROM synchro.scope_effects
      WHERE table_id = $1 AND commit_lsn <= $2::pg_lsn AND ($3::text IS NULL OR pk_text = $3)
      ORDER BY scope_id, pk_text, commit_lsn DESC, event_ordinal DESC, effect_ordinal DESC`,
    [tableId, at, pk ?? null],
  );
  return rows
    .filter((r) => r.op === 'upsert')
    .map((r) => `${r.pk_text}>${r.scope_id}`)
    .sort();
}

Then(
  "after each of those transactions server inspection shows membership edges equal to a fresh evaluation of every comment against that transaction's projected state",
  async function (this: SyncWorld) {
    const target = 'comments';
    const placement = placementOf(this, target);
    const key = this.model.keyColumn(target).name;
    const tableId = await tableIdOf(this, target);
    const positions = [...dependencyState(this).positions.entries()];
    if (positions.length === 0) throw new Error('no source transaction was recorded with its commit position');
    for (const [label, position] of positions) {
      const rows = position.rows.get(`public.${target}`) ?? [];
      const dependencyRows = placement.kind === 'parent' ? (position.rows.get(placement.relation) ?? []) : rows;
      this.assert.equal(await edgesAt(this, tableId, position.after), evaluate(placement, key, rows, dependencyRows), `membership edges of ${target} after transaction ${label}`);
    }
    // Nothing was committed after the last of them: the live edges are those of its position.
    const last = positions[positions.length - 1]?.[1] as { after: string };
    const live = await (await inspection(this)).query<{ e: string }>("SELECT pk_text || '>' || scope_id AS e FROM synchro.membership_edges WHERE table_id = $1", [tableId]);
    this.assert.equal(live.map((r) => r.e).sort(), await edgesAt(this, tableId, last.after), `live membership edges of ${target} against the effect log`);
  },
);

Then(
  'server inspection shows the membership edges of row {string} of table {string} at position {string} exactly as {string}',
  async function (this: SyncWorld, pk: string, table: string, label: string, scopes: string) {
    const expected = scopes
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map((s) => `${pk}>${s}`)
      .sort();
    const edges = await edgesAt(this, await tableIdOf(this, table), positionOf(this, label).after, pk);
    this.assert.equal(edges, expected, `membership edges of ${table} row ${pk} at position ${label}`);
  },
);

Then(
  'server inspection shows, at position {string}, a delete effect for {string} in {string} and an upsert effect in {string}',
  async function (this: SyncWorld, label: string, pk: string, left: string, entered: string) {
    const position = positionOf(this, label);
    // The phrase names the row only: it is a row of one of the scenario's dependent tables.
    const tableIds = [...dependencyState(this).declared.values()].map((d) => d.tableId);
    const rows = await (await inspection(this)).query<{ e: string }>(
      `SELECT op || ' ' || scope_id AS e FROM synchro.scope_effects
        WHERE table_id = ANY ($1::text[]) AND pk_text = $2 AND commit_lsn > $3::pg_lsn AND commit_lsn <= $4::pg_lsn`,
      [tableIds, pk, position.before, position.after],
    );
    this.assert.equal(rows.map((r) => r.e).sort(), [`delete ${left}`, `upsert ${entered}`], `effects of row ${pk} in transaction ${label}`);
  },
);
