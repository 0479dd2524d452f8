/**
 * Same-named relations in two schemas, registered by their exact qualified
 * name, for SYNC-CAP-009. The scenario model installs tables in `public`
 * only, so these are created and registered here, the way an operator would:
 * the relation, its projection (so a function body can name it), a
 * membership function reading that projection, then the registration.
 */
import { OPERATOR, prepareOperator } from '../scopes/function-contract.ts';
import { ident, literal } from '../scopes/roles.ts';
import type { SyncWorld } from '../world.ts';

/** `a.items` → ["a", "items"]; a bare name has no schema. */
export function qualifiedParts(relation: string): { schema: string | undefined; name: string } {
  const parts = relation.split('.');
  return parts.length === 2 ? { schema: parts[0], name: parts[1] as string } : { schema: undefined, name: relation };
}

export const qualified = (relation: string) =>
  relation
    .split('.')
    .map((part) => ident(part))
    .join('.');

/** Creates both schemas and runs the table script; the operator login may create functions in both, and the first schema's table has its projection ready. */
export async function createSchemas(world: SyncWorld, schemas: string[], script: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to create schemas`);
  await server.provision.exec(`${schemas.map((s) => `CREATE SCHEMA ${ident(s)};`).join('\n')}\n${script}`);
  await prepareOperator(world);
  await server.provision.exec(schemas.map((s) => `GRANT USAGE, CREATE ON SCHEMA ${ident(s)} TO ${ident(OPERATOR)};`).join('\n'));
}

/** A projection of `relation` that function bodies can name before registration. */
export async function prepareProjection(world: SyncWorld, relation: string): Promise<void> {
  const server = await world.readyServer();
  await server.provision?.exec(`SELECT synchro.synchro_prepare_projection_view(${literal(relation)})`);
}

/** `user:{owner_id}` as SQL over the projected row `r`. */
function scopeExpression(template: string): string {
  return template
    .split(/(\{[^}]+\})/)
    .filter((part) => part !== '')
    .map((part) => (part.startsWith('{') ? `r.${ident(part.slice(1, -1))}::text` : literal(part)))
    .join(' || ');
}

/** Creates `<schema>.<name>_scopes` placing each row in the template's scope, read from the relation's projection. */
export async function templateFunction(world: SyncWorld, relation: string, key: string, template: string): Promise<string> {
  const { schema, name } = qualifiedParts(relation);
  if (schema === undefined) throw new Error(`give the schema-qualified name of "${relation}"`);
  await prepareProjection(world, relation);
  const fn = `${schema}.${name}_scopes`;
  const server = await world.readyServer();
  await server.provision?.exec(
    `CREATE FUNCTION ${qualified(fn)}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
       SELECT ${scopeExpression(template)} FROM synchro_projection.${ident(name)} r WHERE r.${ident(key)} = p_key;
     END;`,
  );
  return fn;
}

/** The qualified name each table of a scenario was registered under, by table name. */
const registeredNames = new WeakMap<SyncWorld, Map<string, string>>();

export async function register(world: SyncWorld, relation: string, key: string, membershipFunction: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to register "${relation}"`);
  await server.provision.registerTable({ relation, pkColumn: key, membershipFunction, composition: 'single_scope' });
  const names = registeredNames.get(world) ?? new Map<string, string>();
  names.set(qualifiedParts(relation).name, relation);
  registeredNames.set(world, names);
}

/**
 * Has the operator bind table `table`'s registration to `relation` (the
 * registered object, renamed or moved after registration) through the
 * adapter's controlled rebinding. Resolves to the reason when the adapter
 * offers none (the scenario is then undetermined), else undefined once bound.
 */
export async function bindRegistration(world: SyncWorld, table: string, relation: string): Promise<string | undefined> {
  const registered = registeredNames.get(world)?.get(table);
  if (registered === undefined) throw new Error(`table "${table}" was not registered in this scenario`);
  if (qualifiedParts(relation).schema === undefined) throw new Error(`give the schema-qualified name of "${relation}"`);
  const server = await world.readyServer();
  const bind = server.provision?.bindRelation;
  if (bind === undefined) return `server adapter "${server.id}" offers no controlled rebinding of a registration to its renamed or moved relation (provision.bindRelation)`;
  await bind.call(server.provision, registered, relation);
  return undefined;
}
