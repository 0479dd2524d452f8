/**
 * Named fault injection points, one per row of the verified-artifact fault
 * table. Each breaks one thing on the way to the file (the export as read,
 * the SQLite build, the bytes on disk or the evidence) so a test can show the
 * matching check refuses. Armed by SYNCHRO_SEED_FAULT (comma-separated names)
 * or by the builder's `faults` option; unarmed, the builder is unaffected.
 */
export const SEED_FAULTS = [
  'drop-row',
  'alter-value',
  'drop-server-version',
  'alter-server-version',
  'alter-row-checksum',
  'skip-second-page',
  'repeat-first-page',
  'alter-receipt-cardinality',
  'earlier-receipt',
  'pending-mutation-row',
  'omit-provenance-row',
  'write-cursor',
  'corrupt-page',
  'leave-wal',
  'alter-manifest-body',
  'hash-other-bytes',
  'kill-during-verify',
] as const;

import { SeedArtifactError } from './errors.ts';

export type SeedFault = (typeof SEED_FAULTS)[number];

export type FaultSwitch = (name: SeedFault) => boolean;

export function faultSwitch(armed: readonly string[] = (process.env.SYNCHRO_SEED_FAULT ?? '').split(',')): FaultSwitch {
  const set = new Set(armed.map((s) => s.trim()).filter(Boolean));
  for (const name of set) {
    if (!(SEED_FAULTS as readonly string[]).includes(name)) throw new SeedArtifactError('input', `unknown seed artifact fault ${JSON.stringify(name)}; known: ${SEED_FAULTS.join(', ')}`);
  }
  return (name) => set.has(name);
}
