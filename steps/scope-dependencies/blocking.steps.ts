/**
 * Impact evaluation that fails: the declared impact function is replaced in
 * place by one that goes wrong in one way. Also the re-connect of a client
 * already known to the scenario.
 */
import { Given } from '@cucumber/cucumber';
import { connectedAndRebuilt } from '../common/protocol-client.steps.ts';
import type { SyncWorld } from '../support/world.ts';
import { rawSql } from './registration.steps.ts';
import { type ImpactVariant, impactSql } from './rules.ts';
import { declaredOf } from './state.ts';

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

// Polls, the quarantine record and the blocked answer are shared with the scope membership steps (steps/scope-membership/).

Given('client {string} has connected and rebuilt every assigned scope', async function (this: SyncWorld, name: string) {
  await connectedAndRebuilt(this, name, this.userOf(name));
});
