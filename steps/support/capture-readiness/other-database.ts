/**
 * A second database in the same PostgreSQL cluster as the scenario's server,
 * with a capture setup of its own: another server of the same adapter, whose
 * worker captures that database. Readiness of the configured database must
 * not borrow from it. An adapter whose second server lands in the same
 * database or another cluster cannot show this, and the scenario is
 * undetermined with that reason.
 */
import { openServer } from '../../../harness/adapters/open.ts';
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

const others = new WeakMap<SyncWorld, Map<string, ServerAdapter>>();

interface Placement {
  database: string;
  cluster: string;
}

/** A cluster is its system identifier and port: clusters started from one copy of initdb's files share the identifier (decision 417). */
async function placement(server: ServerAdapter): Promise<Placement> {
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to tell its database`);
  const [row] = await server.inspect.query<{ database: string; cluster: string }>("SELECT current_database() AS database, (SELECT system_identifier::text FROM pg_control_system()) || ':' || current_setting('port') AS cluster");
  if (row === undefined) throw new Error(`server adapter "${server.id}" did not tell its database`);
  return row;
}

/** Opens the second server as `label`; `skipped` when it would not be another database of the same cluster. */
export async function openOtherDatabase(world: SyncWorld, label: string): Promise<'skipped' | undefined> {
  const configured = await world.readyServer();
  const other = await openServer(world.serverSetup, { name: `${world.scenarioName}_${label}`, faults: [], deadlineMs: world.deadlineMs, ownProcess: false });
  world.cleanups.push(() => other.close());
  const [here, there] = [await placement(configured), await placement(other)];
  if (here.database === there.database || here.cluster !== there.cluster) {
    return undeterminedWithout(world, `a second server of adapter "${other.id}" is on database ${there.database} of cluster ${there.cluster}, not on another database of the cluster of ${here.database}`);
  }
  const byLabel = others.get(world) ?? new Map<string, ServerAdapter>();
  others.set(world, byLabel);
  byLabel.set(label, other);
  return undefined;
}

export function otherDatabase(world: SyncWorld, label: string): ServerAdapter {
  const other = others.get(world)?.get(label);
  if (other === undefined) throw new Error(`no second database "${label}" was set up in this scenario`);
  return other;
}

/** Waits until the health detail of `server` reports its worker "ok": a worker runs against that database. */
export async function workerRunsOn(world: SyncWorld, server: ServerAdapter): Promise<void> {
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read its health detail`);
  const deadline = Date.now() + world.deadlineMs;
  for (;;) {
    const detail = (await server.inspect.healthDetail()) as { checks?: Record<string, { state?: unknown }> };
    if (detail.checks?.worker?.state === 'ok') return;
    if (Date.now() > deadline) throw new Error(`the capture worker of the second database never reported "ok": ${JSON.stringify(detail.checks?.worker)}`);
  }
}
