/**
 * SYNC-PULL-008 helpers: a genuine incremental cursor altered or carried into
 * another context, presented in one pull of a harness client, and the
 * operator changes that make genuine cursors stale (a membership rule that
 * drops rows by title). The harness never decodes a token: it alters
 * characters and moves whole tokens.
 */
import { randomUUID } from 'node:crypto';
import { recordedCursor } from '../cursor-acknowledgement/checkpoints.ts';
import { alteredBase64url } from '../opaque-tokens/alteration.ts';
import { continuationState } from '../rebuild-continuations/continuation.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

/** A JSON pointer step for a scope id ("list:a" holds no "/" or "~", but a scope id may). */
const scopePointer = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;

/** A rebuild continuation the server issued to harness client `holder` for `scope`: the cursor of a first page with more to come. */
async function continuationIssued(world: SyncWorld, holder: string, scope: string): Promise<string> {
  const reply = await world.wire(holder).rebuildPage(scope, randomUUID(), null, 1);
  const cursor = reply.json?.cursor;
  if (reply.status !== 200 || reply.json?.has_more !== true || typeof cursor !== 'string') throw new Error(`the rebuild of ${scope} by client "${holder}" with limit 1 gave no continuation: ${reply.status} ${reply.text.slice(0, 300)}`);
  return cursor;
}

/** The recorded cursor `label` of `scope` altered as a feature's Examples name it. */
export async function alteredCursor(world: SyncWorld, label: string, scope: string, alteration: string): Promise<string> {
  const token = recordedCursor(world, label, scope);
  const altered = alteredBase64url(token, alteration);
  if (altered !== undefined) return altered;
  const continuation = /^replaced by a rebuild continuation of "([^"]+)" issued to "([^"]+)"$/.exec(alteration);
  if (continuation !== null) return await continuationIssued(world, continuation[2] as string, continuation[1] as string);
  const other = /^replaced by the "([^"]+)" cursor for scope "([^"]+)"$/.exec(alteration);
  if (other !== null) return recordedCursor(world, other[1] as string, other[2] as string);
  throw new Error(`"${alteration}" is no alteration of a cursor these steps know`);
}

/**
 * One pull of harness client `name` presenting `cursor` for `scope` and, for
 * every other scope, the cursor recorded under `othersLabel` (or the one it
 * holds); the token is kept for the checks on what a refusal repeats.
 */
export async function pullPresenting(world: SyncWorld, name: string, scope: string, cursor: string, limit: number, othersLabel?: string): Promise<Reply> {
  continuationState(world).presented = cursor;
  const client = world.wire(name);
  const patch: Record<string, unknown> = { [scopePointer(scope)]: { cursor } };
  if (othersLabel !== undefined) for (const other of client.cursors.keys()) if (other !== scope) patch[scopePointer(other)] = { cursor: recordedCursor(world, othersLabel, other) };
  // A pull refused on purpose is announced to the proxy, which then does not count it as a protocol error of the harness.
  return await client.pull(patch, { limit, invalid: true });
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
let ruleCounter = 0;

/**
 * Replaces the membership function of a table placed by one scope template
 * with one that leaves out rows whose "title" is `title`: every scope that
 * held such a row is affected and gets a new membership generation.
 */
export async function excludeTitled(world: SyncWorld, tableName: string, title: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  const table = world.model.table(tableName);
  const [template] = table.placements;
  if (template === undefined || table.placements.length !== 1) throw new Error(`table "${tableName}" is not placed by one scope template`);
  const key = world.model.keyColumn(tableName).name;
  const scope = template
    .split(/(\{[^}]+\})/)
    .filter((part) => part !== '')
    .map((part) => (part.startsWith('{') ? `r.${ident(part.slice(1, -1))}::text` : `'${part.replaceAll("'", "''")}'`))
    .join(' || ');
  ruleCounter += 1;
  const fn = `public.${tableName}_without_titled_${ruleCounter}_${process.pid}`;
  await server.provision.exec(
    `CREATE FUNCTION ${fn}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
       SELECT ${scope} FROM synchro_projection.${ident(tableName)} r WHERE r.${ident(key)} = p_key AND r.title <> '${title.replaceAll("'", "''")}';
     END;`,
  );
  await server.provision.reconfigureMembership(`public.${tableName}`, fn);
}
