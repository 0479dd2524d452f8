/**
 * The seed artifact half of the reference adapter's `seed` capability (the
 * export itself goes through the control protocol's `seed.export`): the
 * reference's artifact builder (`reference/seed-artifact/main.ts`), a program
 * of its own over the scenario database, run as a builder command with the
 * scenario's server fault switches.
 */
import { join } from 'node:path';
import { artifactByCommand } from './seed-artifact-command.ts';
import type { SeedControl } from './server.ts';

export const REFERENCE_SEED_ARTIFACT_ENTRY = 'reference/seed-artifact/main.ts';

/** The builder command that runs the reference's artifact builder over one database. */
export function referenceSeedArtifactCommand(root: string, databaseUrl: string): string[] {
  return [process.execPath, join(root, REFERENCE_SEED_ARTIFACT_ENTRY), '--database-url', databaseUrl];
}

/** The artifact half of the reference's `seed` capability; the export itself is the control protocol's `seed.export`. */
export function referenceSeedArtifact(options: { root: string; databaseUrl: string; faults: readonly string[]; deadlineMs: number }): Pick<SeedControl, 'artifactIntercepts' | 'exportArtifact'> {
  const env = { ...process.env };
  if (options.faults.length > 0) env.SYNCHRO_FAULTS = options.faults.join(',');
  else delete env.SYNCHRO_FAULTS;
  // Only the faults the step arms reach the builder, never an ambient setting.
  delete env.SYNCHRO_SEED_FAULT;
  return artifactByCommand({ command: referenceSeedArtifactCommand(options.root, options.databaseUrl), cwd: options.root, env, deadlineMs: options.deadlineMs });
}
