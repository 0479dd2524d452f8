/**
 * The operator changes the membership scenarios apply to a registered table,
 * one at a time: a new membership function, a new dependency on a
 * capture-only table that the new rule reads, a composition change and a
 * controlled rebinding to a renamed relation. Each goes through the server's
 * controlled entry points, never by editing a registered function in place.
 */
import type { ProvisionControl, ServerAdapter } from '../../../harness/adapters/server.ts';
import { currentManifest } from '../integrity/context.ts';
import { sqlType } from '../model.ts';
import { awaitCapture } from '../source-schema.ts';
import type { SyncWorld } from '../world.ts';

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

const quoteText = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** `team:{team}` as SQL text over the projected row `p`: literal parts and column values joined. */
export function templateSql(template: string): string {
  const pieces: string[] = [];
  let rest = template;
  while (rest !== '') {
    const open = rest.indexOf('{');
    if (open === -1) {
      pieces.push(quoteText(rest));
      break;
    }
    const close = rest.indexOf('}', open);
    if (close === -1) throw new Error(`scope template "${template}" has an unclosed "{"`);
    if (open > 0) pieces.push(quoteText(rest.slice(0, open)));
    pieces.push(`p.${quoteIdent(rest.slice(open + 1, close))}::text`);
    rest = rest.slice(close + 1);
  }
  return pieces.join(' || ');
}

let functionCounter = 0;

/** A fresh schema-qualified function name for table `table`, unique in the scenario's database. */
function freshName(table: string, purpose: string): string {
  functionCounter += 1;
  return `public.${table}_${purpose}_${functionCounter}`;
}

async function provisioned(world: SyncWorld): Promise<ServerAdapter & { provision: NonNullable<ServerAdapter['provision']> }> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  return server as ServerAdapter & { provision: NonNullable<ServerAdapter['provision']> };
}

/** Replaces the membership function of `table` by one placing each row in the single scope `template`. */
export async function applyNewRule(world: SyncWorld, table: string, template: string): Promise<void> {
  const server = await provisioned(world);
  const key = world.model.keyColumn(table);
  const name = freshName(table, 'rule');
  await server.provision.exec(`CREATE FUNCTION ${name}(p_key ${sqlType(key.type)}) RETURNS SETOF text LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT ${templateSql(template)} FROM synchro_projection.${quoteIdent(table)} AS p WHERE p.${quoteIdent(key.name)} = p_key;
END;`);
  await server.provision.reconfigureMembership(`public.${table}`, name);
}

/**
 * Makes the membership of `table` depend on the capture-only table
 * `dependency` (created here with rows `red` archived and `blue` active):
 * each row stays in the scope of its `owner_id` unless its `team` is
 * archived. A dependency changes a scope only through the rule that reads
 * it, so the new rule and the dependency declaration are one transaction,
 * which is also what the scope function contract requires of a rule reading
 * another relation's projection.
 */
export async function applyNewDependency(world: SyncWorld, table: string, dependency: string): Promise<void> {
  for (const column of ['owner_id', 'team']) {
    if (!world.model.table(table).columns.some((c) => c.name === column)) throw new Error(`the dependency rule reads column "${column}", which table "${table}" lacks`);
  }
  const server = await provisioned(world);
  const [schema, relation, extra] = dependency.split('.');
  if (schema === undefined || relation === undefined || extra !== undefined) throw new Error(`"${dependency}" is not a schema-qualified relation name`);
  const qualified = `${quoteIdent(schema)}.${quoteIdent(relation)}`;
  await server.provision.exec(`CREATE TABLE ${qualified} (id text PRIMARY KEY, archived boolean NOT NULL);
SELECT synchro.synchro_register_capture_dependency(${quoteText(dependency)});`);
  await server.provision.exec(`INSERT INTO ${qualified} (id, archived) VALUES ('red', true), ('blue', false);`);
  // The new rule reads the dependency's projection: it has to hold these rows first.
  await awaitCapture(world);

  const key = world.model.keyColumn(table);
  const tableId = (await currentManifest(world)).tables.find((t) => t.name === table)?.table_id;
  if (tableId === undefined) throw new Error(`the published manifest has no table "${table}"`);
  const rule = freshName(table, 'rule');
  const impact = freshName(relation, 'impact');
  const projected = `synchro_projection.${quoteIdent(table)}`;
  await server.provision.exec(`CREATE FUNCTION ${rule}(p_key ${sqlType(key.type)}) RETURNS SETOF text LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT 'user:' || p.owner_id::text FROM ${projected} AS p
   WHERE p.${quoteIdent(key.name)} = p_key
     AND NOT EXISTS (SELECT 1 FROM synchro_projection.${quoteIdent(relation)} AS d WHERE d.id = p.team AND d.archived);
END;
CREATE FUNCTION ${impact}(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT ROW(${quoteText(tableId)}, 'string', p.${quoteIdent(key.name)}::text)::synchro.synchro_row_ref FROM ${projected} AS p
   WHERE p.team IN (p_old ->> 'id', p_new ->> 'id');
END;
SELECT synchro.synchro_reconfigure_membership(${quoteText(`public.${table}`)}, ${quoteText(rule)});
SELECT synchro.synchro_register_membership_dependency(${quoteText(`public.${table}`)}, ${quoteText(dependency)}, ${quoteText(impact)}, 1000);`);
}

/**
 * Controlled registry changes the adapter contract does not name yet: the
 * sheets require them to mint generations but give them no SQL entry point.
 * An adapter offering them as these provision members gets them driven; for
 * any other adapter the example is undetermined, with the missing member
 * named, before anything changes: never passed on a stand-in change.
 */
interface ControlledRelationChanges {
  /** Moves a registered table to another composition (`single_scope`, `multi_scope`). */
  reconfigureComposition(relation: string, composition: string): Promise<void>;
  /** Binds a registered table to its relation under a new name, after the rename. */
  rebindRelation(relation: string, renamed: string): Promise<void>;
}

/** The adapter's operation, or the reason the example cannot be driven without it. */
function controlled<K extends keyof ControlledRelationChanges>(server: ServerAdapter, member: K, what: string): ControlledRelationChanges[K] | string {
  const provision = server.provision as (ProvisionControl & Partial<ControlledRelationChanges>) | undefined;
  const operation = provision?.[member];
  if (typeof operation !== 'function') return `server adapter "${server.id}" offers no ${what} (provision.${member}), so this change cannot be applied`;
  return operation.bind(provision) as ControlledRelationChanges[K];
}

/** Resolves to the reason when the adapter cannot apply the change, else undefined once applied. */
export async function applyCompositionChange(world: SyncWorld, table: string, from: string, to: string): Promise<string | undefined> {
  const server = await provisioned(world);
  const change = controlled(server, 'reconfigureComposition', 'controlled composition change');
  if (typeof change === 'string') return change;
  const declared = world.model.table(table).conditional.length > 0 || world.model.table(table).placements.length > 1 ? 'multi_scope' : 'single_scope';
  if (declared !== from) throw new Error(`table "${table}" was registered as ${declared}, not ${from}`);
  await change(`public.${table}`, to);
  return undefined;
}

/** Has the server rename the table's relation and bind the registration to the new name in one change (a rename alone would block capture as drift). */
export async function applyRelationRebinding(world: SyncWorld, table: string, renamed: string): Promise<string | undefined> {
  const server = await provisioned(world);
  const rebind = controlled(server, 'rebindRelation', 'controlled rebinding of a registered table to a renamed relation');
  if (typeof rebind === 'string') return rebind;
  const [schema, relation, extra] = renamed.split('.');
  if (schema !== 'public' || relation === undefined || extra !== undefined) throw new Error(`"${renamed}" is not a relation of schema public`);
  await rebind(`public.${table}`, renamed);
  return undefined;
}
