/**
 * SYNC-SCOPE-003 Dependency Driven Membership Propagation
 * (features/scope-and-membership/dependency-driven-membership-propagation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import type { InspectControl, SourceSqlControl } from '../../harness/adapters/server.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { installDependent } from '../support/scope-dependencies/install.ts';
import { claim } from '../support/scope-dependencies/registration.ts';
import { evaluate, ident, impactSql, type ImpactVariant, relationParts } from '../support/scope-dependencies/rules.ts';
import { declaredOf, dependencyState, placementOf, positionOf } from '../support/scope-dependencies/state.ts';
import type { SyncWorld } from '../support/world.ts';

async function replaceImpact(world: SyncWorld, target: string, dependency: string, variant: ImpactVariant): Promise<void> {
  const declared = declaredOf(world, target, dependency);
  const sql = await rawSql(world);
  await sql.query(impactSql(world.model.table(target), world.model.keyColumn(target), declared.tableId, dependency, declared.impact, variant, 'CREATE OR REPLACE'));
}

const VARIANTS: Record<string, ImpactVariant> = {
  'raises an error': 'raises',
  'returns a row reference to table "tbl_other"': 'wrong-table',
};

Given(
  /^the impact function of the dependency of "([^"]+)" on "([^"]+)" is replaced by one that (raises an error|returns a row reference to table "tbl_other")$/,
  async function (this: SyncWorld, target: string, dependency: string, fails: string) {
    await replaceImpact(this, target, dependency, VARIANTS[fails] as ImpactVariant);
  },
);

Given(
  'the impact function of the dependency of {string} on {string} is replaced by one that returns a row reference with pk_type {string} for a string key',
  async function (this: SyncWorld, target: string, dependency: string, type: string) {
    if (this.model.keyColumn(target).type !== 'string' || type !== 'int') throw new Error(`the harness builds this variant for a string key named as "int" only, not "${type}"`);
    await replaceImpact(this, target, dependency, 'wrong-pk-type');
  },
);

Given(
  'the impact function of the dependency of {string} on {string} is replaced by one that returns more rows than its max_impact_rows of {int}',
  async function (this: SyncWorld, target: string, dependency: string, bound: number) {
    const declared = declaredOf(this, target, dependency);
    if (declared.impact.maxImpactRows !== bound) throw new Error(`the dependency was declared with max_impact_rows ${declared.impact.maxImpactRows ?? 'default'}, not ${bound}`);
    // The variant names every target row; there must be more of them than the bound.
    const [row] = await (await rawSql(this)).query<{ n: number }>(`SELECT count(*)::int AS n FROM public."${target.replaceAll('"', '""')}"`);
    if ((row?.n ?? 0) <= bound) throw new Error(`table ${target} holds ${row?.n ?? 0} rows, not more than ${bound}`);
    await replaceImpact(this, target, dependency, 'every-row');
  },
);

async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect;
}

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

/** The scenario's SQL connection, without installing the declared tables (a dependent table installs itself). */
async function rawSql(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.server();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  return server.sourceSql;
}

Given(
  'a capture-only dependency registration for table {string} with key column {string} and captured fields {string}',
  async function (this: SyncWorld, relation: string, key: string, fields: string) {
    const { schema, table } = relationParts(relation);
    const captured = fields.split(',').map((f) => f.trim()).filter((f) => f !== '');
    const sql = await rawSql(this);
    const columns = [`${ident(key)} text PRIMARY KEY`, ...captured.map((f) => `${ident(f)} text`)];
    await sql.query(`CREATE TABLE ${ident(schema)}.${ident(table)} (${columns.join(', ')})`);
    await sql.query('SELECT synchro.synchro_register_capture_dependency($1, $2)', [relation, key]);
    dependencyState(this).captureOnly.set(relation, { relation, key, fields: captured });
  },
);

Given('table {string} places each row in scope {string} of its root task, found through {string}', function (this: SyncWorld, target: string, template: string, parent: string) {
  claim(this, target);
  dependencyState(this).placements.set(target, { kind: 'root', template, parent });
});

Given(
  'the dependency of {string} on {string} has an impact function returning the comments whose {string} equals the old or new project {string}, with max_impact_rows {int}',
  async function (this: SyncWorld, target: string, dependency: string, reference: string, key: string, bound: number) {
    await installDependent(this, await rawSql(this), target, dependency, { kind: 'referencing', relation: dependency, reference, key, maxImpactRows: bound });
  },
);

Given('the dependency of {string} on itself has a self-impact function returning the children of the old and new row', async function (this: SyncWorld, target: string) {
  const placement = placementOf(this, target);
  if (placement.kind !== 'root') throw new Error(`the rows of "${target}" do not follow a parent column, so they have no children to name`);
  await installDependent(this, await rawSql(this), target, `public.${target}`, { kind: 'children', parent: placement.parent });
});
