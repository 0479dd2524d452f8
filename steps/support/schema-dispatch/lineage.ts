/**
 * The fixed schema lineage a SYNC-SCHEMA-002 scenario declares in its
 * Background ("the schema lineage used below is:"), published step by step
 * on demand. Each row's change is DDL on the source relation plus the
 * server's controlled reconfiguration (publishChange), so every manifest the
 * steps compare against is one the server itself published and hashed; the
 * harness only remembers which {version, hash} each lineage row became.
 */
import type { DataTable } from '@cucumber/cucumber';
import { sqlType, templateValues } from '../model.ts';
import { currentManifest, ident, literal, publishChange } from '../schema-and-versions/manifests.ts';
import { awaitCapture } from '../source-schema.ts';
import type { SyncWorld } from '../world.ts';

export interface Reference {
  version: number;
  hash: string;
}

type Change =
  | { kind: 'initial' }
  | { kind: 'add_nullable'; table: string; column: string; type: string }
  | { kind: 'add_with_history'; table: string; column: string; type: string; scopes: string[] }
  | { kind: 'remove'; table: string; column: string };

interface LineageRow {
  version: number;
  transitionClass: string;
  change: Change;
}

interface LineageState {
  rows: LineageRow[];
  published: Map<number, Reference>;
}

const states = new WeakMap<SyncWorld, LineageState>();

function stateOf(world: SyncWorld): LineageState {
  const state = states.get(world);
  if (state === undefined) throw new Error('this scenario declared no schema lineage ("the schema lineage used below is:")');
  return state;
}

function parseChange(text: string, transitionClass: string, scopes: string[]): Change {
  let m = /^tables (?:"[^"]+"(?:, | and )?)+$/.exec(text);
  if (m && transitionClass === 'initial') return { kind: 'initial' };
  m = /^adds nullable column "([^"]+)" of type "([^"]+)" to "([^"]+)"$/.exec(text);
  if (m && transitionClass === 'class_2') return { kind: 'add_nullable', column: m[1] as string, type: m[2] as string, table: m[3] as string };
  m = /^adds column "([^"]+)" of type "([^"]+)" with historical values to "([^"]+)"$/.exec(text);
  if (m && transitionClass === 'class_3' && scopes.length > 0) return { kind: 'add_with_history', column: m[1] as string, type: m[2] as string, table: m[3] as string, scopes };
  m = /^removes column "([^"]+)" from "([^"]+)"$/.exec(text);
  if (m && transitionClass === 'class_4') return { kind: 'remove', column: m[1] as string, table: m[2] as string };
  throw new Error(`lineage change "${text}" (${transitionClass}) is not one the harness knows how to publish`);
}

export function declareLineage(world: SyncWorld, table: DataTable): void {
  const rows = table.hashes().map((row, i): LineageRow => {
    const version = Number(row.version);
    if (version !== i + 1) throw new Error(`lineage row ${i + 1} has version ${row.version}; versions must run 1, 2, 3...`);
    const transitionClass = String(row.class);
    const scopes = String(row['affected scopes'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    return { version, transitionClass, change: parseChange(String(row.change), transitionClass, scopes) };
  });
  if (rows[0]?.change.kind !== 'initial') throw new Error('the lineage must start with its initial manifest');
  states.set(world, { rows, published: new Map() });
}

/** Column values that place a new row of `table` in `scope`, read from the table's placement template. */
function placingValues(world: SyncWorld, table: string, scope: string): Record<string, string> {
  for (const template of world.model.table(table).placements) {
    const values = templateValues(template, scope);
    if (values !== undefined) return values;
  }
  throw new Error(`no placement of table "${table}" puts a row in scope "${scope}"`);
}

async function apply(world: SyncWorld, row: LineageRow): Promise<Reference> {
  const change = row.change;
  if (change.kind === 'initial') {
    const manifest = await currentManifest(world);
    // The scenario's tables are installed together, so the server's first manifest is lineage version 1.
    world.assert.equal(
      { version: manifest.schema_version, transition_class: manifest.transition_class },
      { version: 1, transition_class: 'initial' },
      'the manifest the server published for the installed tables',
    );
    return { version: manifest.schema_version, hash: manifest.schema_hash };
  }
  const spec = world.model.table(change.table);
  if (change.kind === 'add_nullable') {
    const m = await publishChange(world, change.table, `ALTER TABLE public.${ident(change.table)} ADD COLUMN ${ident(change.column)} ${sqlType(change.type)};`, 'class_2');
    spec.columns.push({ name: change.column, type: change.type, key: false, nullable: true });
    return { version: m.schema_version, hash: m.schema_hash };
  }
  if (change.kind === 'remove') {
    const m = await publishChange(world, change.table, `ALTER TABLE public.${ident(change.table)} DROP COLUMN ${ident(change.column)};`, 'class_4');
    spec.columns = spec.columns.filter((c) => c.name !== change.column);
    return { version: m.schema_version, hash: m.schema_hash };
  }
  // Historical values exist only where rows exist: one row in each affected scope gets a value, nothing else does.
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to seed table ${change.table}`);
  const conditions: string[] = [];
  for (const scope of change.scopes) {
    const placed = placingValues(world, change.table, scope);
    const values = spec.columns.map((c) => (c.key ? literal(`${change.table}-${scope}`) : literal(placed[c.name] ?? `seed ${c.name}`)));
    await server.sourceSql.query(`INSERT INTO public.${ident(change.table)} (${spec.columns.map((c) => ident(c.name)).join(', ')}) VALUES (${values.join(', ')})`);
    conditions.push(`(${Object.entries(placed).map(([c, v]) => `${ident(c)}::text = ${literal(v)}`).join(' AND ')})`);
  }
  await awaitCapture(world);
  const m = await publishChange(
    world,
    change.table,
    `ALTER TABLE public.${ident(change.table)} ADD COLUMN ${ident(change.column)} ${sqlType(change.type)};\nUPDATE public.${ident(change.table)} SET ${ident(change.column)} = 7 WHERE ${conditions.join(' OR ')};`,
    'class_3',
  );
  spec.columns.push({ name: change.column, type: change.type, key: false, nullable: true });
  return { version: m.schema_version, hash: m.schema_hash };
}

/** Publishes every lineage row up to `version` that is not published yet. */
export async function publishUpTo(world: SyncWorld, version: number): Promise<void> {
  const state = stateOf(world);
  const top = Math.max(0, ...state.published.keys());
  if (version < top) throw new Error(`lineage version ${top} is already published; a lineage never goes back to ${version}`);
  for (const row of state.rows) {
    if (row.version <= top || row.version > version) continue;
    const reference = await apply(world, row);
    world.assert.equal(reference.version, row.version, `the version the server gave lineage row ${row.version}`);
    state.published.set(row.version, reference);
  }
  if (version > state.rows.length) throw new Error(`the lineage declares no version ${version}`);
}

/** The {version, hash} lineage version `version` became on the server. */
export function lineageReference(world: SyncWorld, version: number): Reference {
  const reference = stateOf(world).published.get(version);
  if (reference === undefined) throw new Error(`lineage version ${version} has not been published in this scenario`);
  return reference;
}

export function publishedTop(world: SyncWorld): number {
  return Math.max(0, ...stateOf(world).published.keys());
}

/** Which lineage version a reference names, or undefined when it names none. */
export function lineageVersionOf(world: SyncWorld, reference: Reference): number | undefined {
  for (const [version, r] of stateOf(world).published) if (r.version === reference.version && r.hash === reference.hash) return version;
  return undefined;
}
