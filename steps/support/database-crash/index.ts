/**
 * Which scenarios crash their source database: those with a step whose text
 * a step file registered here at load time. The World asks before it opens
 * the scenario's server (the background steps start it before the crash
 * step runs), so that only these scenarios pay for a cluster of their own.
 */
import type { DatabaseCrashControl } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

const crashPhrases: RegExp[] = [];

export function databaseCrashPhrase(pattern: RegExp): void {
  crashPhrases.push(pattern);
}

/**
 * A scenario that changes something cluster-wide (a replication login, say)
 * needs a cluster of its own for the same reason a crash does: no concurrent
 * scenario may see the change. Such step texts are registered the same way.
 */
export const clusterOfItsOwnPhrase = databaseCrashPhrase;

/** True when some step text of the scenario crashes the source database. */
export function crashesDatabase(stepTexts: readonly string[]): boolean {
  return stepTexts.some((text) => crashPhrases.some((pattern) => pattern.test(text)));
}

/**
 * Shuts the scenario's source database down immediately and starts it again,
 * or makes the scenario undetermined when the adapter offers no such control
 * (it is optional: docs/adapters.md, `database.restartImmediately`).
 */
export async function restartDatabaseImmediately(world: SyncWorld, why: string): Promise<'skipped' | undefined> {
  const server = await world.readyServer();
  const control: DatabaseCrashControl | undefined = server.database;
  if (control === undefined) return undeterminedWithout(world, `server adapter "${server.id}" offers no database.restartImmediately() to ${why}`);
  await control.restartImmediately();
  return undefined;
}

/**
 * A database crash armed to follow a worker kill at a named point: the step
 * that observes the kill performs it, before anything else touches the
 * database, so the crash finds the state the worker left at that point.
 */
const armed = new WeakSet<SyncWorld>();

export function armCrashAfterWorkerKill(world: SyncWorld): void {
  armed.add(world);
}

/** Performs the armed crash, if any; undefined when none was armed or it was done. */
export async function crashIfArmed(world: SyncWorld): Promise<'skipped' | undefined> {
  if (!armed.delete(world)) return undefined;
  return await restartDatabaseImmediately(world, 'shut the source database down immediately right after the worker stopped');
}
