/**
 * SYNC-LOCAL-002 helpers: a client's rebuild of one scope split at its
 * restart (what it asked for before the kill and after it), the records each
 * page delivered, the rows and provenance the client holds, and the proxy
 * rules the scenarios put in front of a rebuild (a truncated page, a network
 * cut and restored).
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, clientIdOf, exchangesIn } from '../exchanges.ts';
import { queueState } from '../mutations/state.ts';
import { deliveredBody, type RebuildAttempt, rebuildAttempts } from '../rebuild-attempts/attempts.ts';
import { keyValue } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export function attemptsOf(world: SyncWorld, name: string, scope: string): Promise<RebuildAttempt[]> {
  return rebuildAttempts(world, name, scope);
}

/** The one rebuild attempt of `scope` (a restart that continues it adds none); asserted, since Then steps rely on it. */
export async function onlyAttempt(world: SyncWorld, name: string, scope: string): Promise<RebuildAttempt> {
  const attempts = await rebuildAttempts(world, name, scope);
  world.assert.equal(attempts.length, 1, `rebuild attempts of ${scope} by client "${name}" (a second one starts over with cursor null)`);
  return attempts[0] as RebuildAttempt;
}

/**
 * Asserts the client installed what the final page of `attempt` gave: its
 * checksum as the scope's checksum, and its final cursor, which the client
 * presents in its next pull; a pull answered after that may have moved the
 * cursor on, so the cursor inspected now is the last one issued for the scope.
 */
export async function assertFinalInstalled(world: SyncWorld, name: string, scope: string, attempt: RebuildAttempt | undefined): Promise<void> {
  const finalExchange = attempt?.exchanges.filter((e) => deliveredBody(e)?.has_more === false).at(-1);
  const final = finalExchange === undefined ? undefined : deliveredBody(finalExchange);
  world.assert.ok(finalExchange !== undefined && final !== undefined, `client "${name}" was never given the final rebuild page of ${scope}`);
  if (finalExchange === undefined || final === undefined) return;
  const log = (await world.proxy()).exchanges;
  const later = exchangesIn(log, { clientId: await clientIdOf(world, name), endpoints: ['pull'] }).filter((e) => log.indexOf(e) > log.indexOf(finalExchange));
  const issued = [final.final_scope_cursor, ...later.map((e) => ((deliveredBody(e)?.scope_cursors ?? {}) as Record<string, unknown>)[scope]).filter((c) => c !== undefined)];
  const state = (await (await world.process(name)).call<{ scopes: { scopeId: string; cursor: unknown; checksum: unknown; rebuildRequired: boolean }[] }>('inspectScopes')).scopes.find((s) => s.scopeId === scope);
  world.assert.equal(
    { checksum: state?.checksum, rebuildRequired: state?.rebuildRequired, cursor: state?.cursor },
    { checksum: (final.checksum as { digest?: unknown } | undefined)?.digest, rebuildRequired: false, cursor: issued.at(-1) },
    `scope ${scope} as client "${name}" reports it, against the final rebuild page (and the pulls answered after it)`,
  );
  if (later[0] !== undefined) {
    const presented = ((bodyOf(later[0].requestBody)?.scopes ?? {}) as Record<string, { cursor?: unknown }>)[scope]?.cursor;
    world.assert.equal(presented, final.final_scope_cursor, `the cursor client "${name}" presented for ${scope} in its first pull after the final rebuild page`);
  }
}

/** The keys of the records the client was given in answer to one rebuild request. */
export function recordKeys(exchange: Exchange): string[] {
  const records = (deliveredBody(exchange)?.records ?? []) as { pk?: unknown }[];
  return records.map((r) => String(keyValue(r.pk)));
}

/**
 * The rebuild requests of the restarted client for the scope whose rebuild
 * the kill interrupted (the last one it asked for before the kill, unless
 * named), before and after the restart, and its pulls after the restart.
 */
export async function rebuildsAfterRestart(world: SyncWorld, name?: string, scope?: string): Promise<{ name: string; scope: string; before: Exchange[]; after: Exchange[]; pulls: Exchange[] }> {
  const marks = queueState(world).restartMarks;
  const client = name ?? (marks.size === 1 ? [...marks.keys()][0] : undefined);
  if (client === undefined) throw new Error(`the step names no client and ${marks.size} clients were restarted`);
  const mark = marks.get(client);
  if (mark === undefined) throw new Error(`client "${client}" was not restarted in this scenario`);
  const log = (await world.proxy()).exchanges;
  const mine = exchangesIn(log, { clientId: await clientIdOf(world, client), endpoints: ['rebuild', 'pull'] });
  const index = (e: Exchange) => log.indexOf(e);
  const rebuilds = mine.filter((e) => e.endpoint === 'rebuild');
  const target = scope ?? (bodyOf(rebuilds.filter((e) => index(e) < mark).at(-1)?.requestBody)?.scope as string | undefined);
  if (target === undefined) throw new Error(`client "${client}" sent no rebuild request before its restart`);
  const ofScope = rebuilds.filter((e) => bodyOf(e.requestBody)?.scope === target);
  return {
    name: client,
    scope: target,
    before: ofScope.filter((e) => index(e) < mark),
    after: ofScope.filter((e) => index(e) >= mark),
    pulls: mine.filter((e) => e.endpoint === 'pull' && index(e) >= mark),
  };
}

function onlyTable(world: SyncWorld): string {
  const names = [...world.model.tables.keys()];
  if (names.length !== 1) throw new Error(`the scenario declares ${names.length} tables; the step names none`);
  return names[0] as string;
}

/** The keys of the rows client `name` holds in the scenario's one table, sorted. */
export async function heldRows(world: SyncWorld, name: string): Promise<string[]> {
  const table = onlyTable(world);
  const key = world.model.keyColumn(table).name;
  const { rows } = await (await world.process(name)).call<{ rows: { id: string }[] }>('query', { sql: `SELECT CAST("${key}" AS TEXT) AS id FROM "${table}" ORDER BY 1` });
  return rows.map((r) => r.id);
}

/** The keys client `name` shows with a provenance edge from `scope`, sorted. */
export async function provenanceOf(world: SyncWorld, name: string, scope: string): Promise<string[]> {
  const { provenance } = await (await world.process(name)).call<{ provenance: { scopeId: string; recordId: string }[] }>('inspectProvenance');
  return provenance
    .filter((p) => p.scopeId === scope)
    .map((p) => String(p.recordId))
    .sort();
}

/** The response to the client's second rebuild request of `scope` (its first continuation) arrives cut short. */
export async function truncateSecondPage(world: SyncWorld, name: string, scope: string): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  proxy.inject({
    endpoint: 'rebuild',
    times: 1,
    when: (request) => {
      const body = request as { client_id?: unknown; scope?: unknown; cursor?: unknown } | undefined;
      return body?.client_id === clientId && body.scope === scope && body.cursor !== null;
    },
    fault: { kind: 'truncate' },
  });
}

/**
 * Ends every proxy rule a step put in front of the client (its network cut
 * at the restart included) and puts back the fault of the run, if it is a
 * wire fault: the proxy is as it was when the scenario began.
 */
export async function restoreNetwork(world: SyncWorld, name: string): Promise<void> {
  await clientIdOf(world, name);
  const proxy = await world.proxy();
  proxy.clearFaults();
  for (const rule of world.fault?.kind === 'wire' ? (world.fault.rules ?? []) : []) proxy.inject(rule);
}
